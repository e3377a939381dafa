//! ernic's S3 store (seed 001, "S3 over RDMA"): an object store whose control
//! plane is the S3 REST API over HTTP and whose data plane is RDMA (a request
//! carrying `x-amz-rdma-token` moves the object by RDMA WRITE or READ).
//!
//! What it holds so far: [`token`], the RDMA tokens clients send (cuObject's
//! text form and hipObject's binary form), and [`xml`], the XML bodies S3
//! answers with and the two request bodies it reads.

pub mod token;
pub mod xml;
