//! ernic's NCCL net plugin: `libnccl-net-ernic.so`.
//!
//! The library exports `ncclNetPlugin_v6`, `ncclNetPlugin_v5` and
//! `ncclNetPlugin_v4`, function tables laid out as NCCL's ext-net headers
//! of those versions define them (`include/nccl_net_ernic.h` is the C
//! header). A collective library `dlopen`s the file, finds a table by name
//! and calls through it; behind the table is `ernic-net`'s transport, over
//! the provider `ERNIC_NET_PROVIDER` names (`ernic`, the default, or
//! `libfabric`).
//!
//! `ERNIC_INJECT` and `ERNIC_STATS_FILE` arm faults on the transport and
//! write its counters to a stats file ([`ops`]).
//!
//! Host memory only: registering device memory fails with
//! `ncclInvalidArgument` and says why in the caller's log.

// The C ABI: every entry point reads and writes through the caller's
// pointers (each block says why that is sound).
#![allow(unsafe_code)]

pub mod abi;
mod logs;
pub mod ops;
pub mod plugin;
