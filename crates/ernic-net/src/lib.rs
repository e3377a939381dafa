//! # ernic-net: the collective transport
//!
//! Seed 000's inter-node transport, the RDMA protocol of aws-ofi-nccl:
//! multi-rail RDMA WRITE with a 32-bit immediate, receiver-driven control
//! messages, eager sends, CQ-driven progress, over a provider shaped like
//! libfabric's RDM endpoints.
//!
//! - [`provider`]: the provider contract (per rail an endpoint, address
//!   vector, registrations and a CQ; every post may answer `EAGAIN`).
//! - [`verbs_provider`]: the provider over ernic's own verbs
//!   ([`ErnicProvider`](verbs_provider::ErnicProvider)), in one process or
//!   across processes and hosts on the TCP mesh. Named for what it stands
//!   on, beside [`libfabric`], the provider over a real libfabric.
//! - [`chaos`]: a wrapper that injects `EAGAIN`, reorders completions and
//!   fails chosen writes, for tests and soak runs.
//! - [`inject`]: deterministic fault injection under any provider, driven
//!   by an [`ernic_core::Injector`] (`fi_eagain`, `fi_cq_err`).
//! - [`stats`]: the transport's counters, per comm and per process, as
//!   stats-file groups.
//! - [`rdma`]: the protocols (`OFI_NCCL_PROTOCOL=RDMA`, the default, and
//!   `SENDRECV`) and their API — [`Endpoint`](rdma::Endpoint)
//!   with `listen`, `connect`, `accept`, `reg`, `isend`, `irecv`, `test`,
//!   `close`.
//! - Support structures, each with aws-ofi-nccl's unit-test scenarios:
//!   [`freelist`], [`idpool`], [`msgbuff`], [`scheduler`], [`mr_cache`],
//!   [`deque`]; and [`config`], the `OFI_NCCL_*` settings.
//!
//! A message between two endpoints of one process (the example
//! `examples/two_process.rs` does the same between two processes over the
//! mesh: `cargo run --release -p ernic-net --example two_process`):
//!
//! ```
//! # #![allow(unsafe_code)]
//! use ernic_net::{config::Config, verbs_provider::ErnicProvider, rdma::{Connector, Endpoint}};
//!
//! let provider = ErnicProvider::new(ernic_verbs::Fabric::new());
//! let mut a = Endpoint::open(&provider, 2, Config::default()).unwrap();
//! let mut b = Endpoint::open(&provider, 2, Config::default()).unwrap();
//! let (listen, handle) = b.listen().unwrap();
//! let mut connector = Connector::new(handle);
//! let (mut send, mut recv) = (None, None);
//! while send.is_none() || recv.is_none() {
//!     if send.is_none() { send = a.connect(&mut connector).unwrap(); }
//!     if recv.is_none() { recv = b.accept(listen).unwrap(); }
//! }
//! let (send, recv) = (send.unwrap(), recv.unwrap());
//!
//! let mut src = b"hello over two rails".to_vec();
//! let mut dst = vec![0u8; 64];
//! // SAFETY: both buffers outlive their registrations and requests.
//! let (ms, md) = unsafe { (a.reg(src.as_mut_ptr(), src.len()).unwrap(), b.reg(dst.as_mut_ptr(), dst.len()).unwrap()) };
//! // SAFETY: the buffers are left alone until the requests complete.
//! let r = unsafe { b.irecv(recv, dst.as_mut_ptr(), dst.len(), md) }.unwrap().unwrap();
//! let s = unsafe { a.isend(send, src.as_ptr(), src.len(), ms) }.unwrap().unwrap();
//! let (mut sent, mut got) = (None, None);
//! while sent.is_none() || got.is_none() {
//!     if sent.is_none() { sent = a.test(s).unwrap(); }
//!     if got.is_none() { got = b.test(r).unwrap(); }
//! }
//! assert_eq!(got, Some(src.len()), "a larger receive completes with the sent size");
//! assert_eq!(&dst[..src.len()], &src[..]);
//! ```

#[allow(unsafe_code)]
pub mod chaos;
pub mod config;
pub mod deque;
pub mod freelist;
pub mod idpool;
#[allow(unsafe_code)]
pub mod inject;
#[allow(unsafe_code)]
pub mod libfabric;
pub mod mr_cache;
pub mod msgbuff;
#[allow(unsafe_code)]
pub mod provider;
#[allow(unsafe_code)]
mod rawbuf;
#[allow(unsafe_code)]
pub mod rdma;
pub mod scheduler;
pub mod stats;
#[allow(unsafe_code)]
pub mod verbs_provider;
