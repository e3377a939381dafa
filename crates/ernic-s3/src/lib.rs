//! ernic's S3 store (seed 001, "S3 over RDMA"): an object store whose control
//! plane is the S3 REST API over HTTP and whose data plane is RDMA (a request
//! carrying `x-amz-rdma-token` moves the object by RDMA WRITE or READ).
//!
//! What it holds so far:
//! - [`sigv4`]: AWS Signature Version 4 verification as an S3 server checks
//!   it (the `Authorization` header, presigned URLs, and the aws-chunked
//!   streaming payload decoder);
//! - [`token`]: the RDMA tokens clients send (cuObject's text form and
//!   hipObject's binary form) and hipObject's reply;
//! - [`xml`]: the XML bodies S3 answers with, and the two request bodies it
//!   reads (CompleteMultipartUpload, Delete);
//! - [`http`]: the HTTP/1.1 server the S3 API runs on (framing, keep-alive,
//!   pipelining, `100 Continue`, HTTP dates);
//! - [`guest`]: the store as a host on an emulated guest's Ethernet segment
//!   (a smoltcp TCP/IP stack behind the guest's ionic device).
//!
//! Everything it parses comes from untrusted clients; nothing in it reads a
//! clock but the HTTP server's `Date` header. The RDMA data plane comes
//! next.

pub mod client;
pub mod guest;
pub mod http;
pub mod options;
pub mod rdma;
pub mod service;
pub mod sigv2;
pub mod sigv4;
pub mod store;
pub mod token;
pub mod xml;
