//! librdmacm over ernic (`librdmacm.so.1` is the same file as
//! `libibverbs.so.1`, so a process has one device and one CM): event
//! channels, ids, address and route resolution, connecting, listening,
//! accepting, rejecting and disconnecting RC QPs, over IB CM MADs on the
//! device's QP 1 (`ernic-cm`'s state machine).
//!
//! - [`addr`]: socket addresses, rdma_cm's header, PSNs.
//! - [`agent`]: QP 1, the CM, and the thread that drives them.
//! - [`id`]: ids, what each CM event becomes, and the connection steps.
//! - [`passive`]: a peer's REQ to a listener, and `rdma_accept`.
//! - [`ud`]: rdma_cm over UD (SIDR).
//! - [`api`]: the C entry points for ids.
//! - [`channel`]: event channels and their events.
//! - [`ep`]: synchronous endpoints and address lookup.
//! - [`qp`]: an id's QP and its transitions.
//! - [`misc`]: devices, event names, options, what is not offered.

mod addr;
mod agent;
mod api;
mod channel;
mod ep;
mod id;
mod misc;
mod passive;
mod qp;
mod ud;

/// Starts the process's CM (QP 1 and its thread), so this port answers
/// other processes' rdma_cm even if the program never uses rdma_cm.
pub(crate) fn serve() -> Result<(), &'static str> {
    agent::get().map(|_| ())
}
