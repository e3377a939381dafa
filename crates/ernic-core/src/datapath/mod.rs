//! The data path: executing send queues, as seed 001's "Executing a Send
//! Queue" and "Datagrams" describe, and the responder's half of every
//! operation, shared by requests from this engine and from peers.
//!
//! A request runs in three phases so the borrow of the key tables never
//! overlaps a change to the queues:
//!
//! 1. checks that need no memory (types, destination, a receive to land in),
//!    and lending the destination receive's SGE list out of its slot;
//! 2. resolving every SGE and key against its MR (bounds, rights, PD) and
//!    copying, with the tables borrowed read-only;
//! 3. consuming the receive, posting the receive completion, counting.
//!
//! The responder's operations (`Engine::respond_receive` in [`recv`],
//! `respond_write` in [`write`](mod@write), `respond_read` in [`read`],
//! `respond_atomic` in [`atomic`]) take their payload as a [`Source`] and put
//! results into a [`Sink`]: the requester's own SGEs when both ends are in
//! this engine (copied directly, no bounce), or a message's bytes when the
//! requester is another node (see [`crate::remote`]).
//!
//! A request that fails a check in phase 2 consumes nothing at the peer
//! unless the failure is the peer's own (its receive buffer too small or
//! badly keyed), which completes that receive in error, as hardware does.
//! Every key failure maps to a status in one place, [`resolve`].
//!
//! One file per thing: [`request`] (the request, source and sink types),
//! [`resolve`] (SGEs and keys), [`execute`] (running a send queue), one file
//! per opcode family's data path ([`recv`] for SEND, SEND_IMM, SEND_INV and
//! WRITE_IMM at the receiver, [`write`](mod@write), [`read`], [`atomic`],
//! [`datagram`], [`fast_reg`] for REG_MR and LOCAL_INV), and [`count`].

mod atomic;
mod count;
mod datagram;
mod execute;
mod fast_reg;
mod read;
mod recv;
pub(crate) mod request;
mod resolve;
mod write;

pub(crate) use count::tx_counter;
pub(crate) use request::{End, Incoming, Outcome, RecvSource, Req, Sink, Source};
pub(crate) use resolve::{SegArray, resolve_sgl, resolve_sgl_after};
