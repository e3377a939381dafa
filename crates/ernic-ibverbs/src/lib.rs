//! # ernic-ibverbs: libibverbs over ernic
//!
//! A library with libibverbs' C ABI (SONAME `libibverbs.so.1`, the symbol
//! versions of rdma-core's `libibverbs.map`), so that a program built
//! against rdma-core runs over ernic's fabric unmodified: `LD_LIBRARY_PATH`
//! picks it up in place of the system's library (`ernic run` sets it).
//!
//! The process has one device, `ernic0`, with one RoCE v2 port; where it
//! reaches is what the environment says ([`runtime`]'s note). Each C
//! object (`struct ibv_pd`, `ibv_cq`, `ibv_qp`…) is the first member of a
//! Rust object holding the `ernic-verbs` handle behind it, so the pointer
//! a program holds is the object's. Entry points are defined as
//! `ernic_NAME` and exported as `NAME` with its symbol version (build.rs).
//!
//! Every function that takes a program's pointers trusts them as the C
//! API does (a freed QP passed to `ibv_post_send` is the program's bug, as
//! with rdma-core); NULL where an object is wanted is refused with EINVAL.

// The C ABI: every entry point reads and writes through the caller's
// pointers (each block says why that is sound).
#![allow(unsafe_code)]
// The exported functions are documented by verbs.h; each says what it
// does differently, if anything.
#![allow(missing_docs)]
#![allow(clippy::missing_safety_doc)]

pub mod abi;
mod cm;
pub mod cma_abi;
mod cq;
mod device;
mod errno;
mod events;
mod ex;
mod fd;
mod misc;
mod ops;
mod pd;
mod post;
mod private;
mod qp;
mod runtime;
