//! ernic's S3 store (seed 001, "S3 over RDMA"): an object store whose control plane is
//! the S3 REST API over HTTP and whose data plane is RDMA (`x-amz-rdma-token`).
//!
//! What it holds so far: [`sigv4`], AWS Signature Version 4 verification as an S3 server
//! checks it (the `Authorization` header, presigned URLs, and the aws-chunked streaming
//! payload decoder). Everything it parses comes from untrusted clients; nothing in it reads
//! a clock.

pub mod sigv4;
