//! # ernic-net: the collective transport
//!
//! Seed 000's inter-node transport, the RDMA protocol of aws-ofi-nccl:
//! multi-rail RDMA WRITE with a 32-bit immediate, receiver-driven control
//! messages, eager sends, CQ-driven progress, over a provider shaped like
//! libfabric's RDM endpoints.
//!
//! This crate is being built in layers. Present now: the support structures
//! the protocol leans on for every request, each its own module with the
//! scenarios of aws-ofi-nccl's unit tests —
//! [`freelist`] (request pools that grow in blocks and never shrink),
//! [`idpool`] (bitmap ids, lowest free first), [`msgbuff`] (the sliding
//! window over sequence numbers), [`scheduler`] (rail striping),
//! [`mr_cache`] (page-aligned, reference-counted registrations), [`deque`]
//! (posts parked on EAGAIN) — and [`config`], the `OFI_NCCL_*` settings.

#[allow(unsafe_code)]
pub mod chaos;
pub mod config;
pub mod deque;
#[allow(unsafe_code)]
pub mod ernic;
pub mod freelist;
pub mod idpool;
pub mod mr_cache;
pub mod msgbuff;
#[allow(unsafe_code)]
pub mod provider;
#[allow(unsafe_code)]
mod rawbuf;
#[allow(unsafe_code)]
pub mod rdma;
pub mod scheduler;
