//! The RDMA protocol (seed 000, with DESIGN.md §5's corrections): a device
//! endpoint of N data rails and one to four control rails (a comm's control
//! messages take them in turn by sequence number); receiver-driven bulk
//! transfers as RDMA writes with a 32-bit immediate
//! `seq | comm_id << 10 | nseg << 28`, striped by the scheduler; eager sends
//! of small messages into posted rx buffers; progress only inside `test`
//! (and before posting).
//!
//! A message's life:
//! - the receiver's `irecv` takes the next sequence number and posts a
//!   CTRL (seq, the sender's comm id, buffer address, length, one key per
//!   data rail) on a control rail;
//! - the sender's `isend` takes the same number; a message up to the eager
//!   limit goes at once as a send with immediate on one data rail; a larger
//!   one waits for its CTRL, then is written in stripes, each a write with
//!   the same immediate;
//! - the receiver counts the completions carrying that immediate and
//!   finishes at `nseg`. Where the write completions' lengths cannot be
//!   trusted (libfabric's tcp providers report 0), a message shorter than
//!   the receive buffer also sends a SIZE message on a control rail,
//!   counted as one more segment, so the receive completes with the sent
//!   size.
//!
//! `OFI_NCCL_PROTOCOL=SENDRECV` is the simpler protocol the seed contrasts
//! with this one: no writes, every message goes as sends with immediate
//! through the receiver's rx buffers, in chunks of 128 KiB whose immediate
//! carries `seq | comm_id << 10 | index << 22 | last << 31`, copied into the
//! receive (so a message is at most 512 chunks, 64 MiB).
//!
//! In both, the sender starts a message only while it is fewer than 128 ahead of
//! the CTRLs it has seen, so eager messages never overrun the receiver's
//! window or rx buffers, and the 10-bit sequence space (window 256) never
//! holds two live messages with one number.
//!
//! What a peer sends is untrusted: a listen handle ([`decode_handle`]) and
//! every control message ([`decode_control`]) are decoded into bounded
//! values before anything acts on them, and the costs a peer can cause are
//! capped: [`MAX_COMMS`] comms, [`MAX_BACKLOG`] unaccepted connections per
//! listener, a reported size never larger than the receive. A `connect`
//! that no listener answers fails after
//! [`Config::connect_timeout`](crate::config::Config::connect_timeout) and
//! gives back what it held. Every [`reg`](Endpoint::reg) answers a handle of
//! its own (the MR cache shares the registration underneath), so each
//! holder's [`dereg`](Endpoint::dereg) drops only its own reference and a
//! second one is refused.
//!
//! By file: `immediate.rs` and `context.rs` are the two words every post
//! carries (the immediate a peer sees, the context our CQ gives back);
//! `handle.rs` and `control.rs` the bytes peers exchange (a listen handle;
//! CONN, CONN_RESP, CTRL and SIZE), decoded before anything acts on them;
//! `conn_state.rs` the connect/accept progression as a pure state machine
//! that is given the time, `connect.rs` the endpoint's side of it (listen,
//! connect, accept and the CONN/CONN_RESP handlers); `comm.rs` the comm
//! table; `post.rs` posting and the queue of posts parked on `EAGAIN`;
//! `progress.rs` CQ reading and dispatch; `send.rs` and `recv.rs` the data
//! paths of `isend` and `irecv`; `request.rs` the requests and `test`;
//! `mr.rs` registrations; `endpoint.rs` the endpoint itself; `error.rs`
//! what its calls answer when they fail.

mod comm;
mod conn_state;
mod connect;
mod context;
mod control;
mod endpoint;
mod error;
mod handle;
mod immediate;
mod mr;
mod post;
mod progress;
mod recv;
mod request;
mod send;

pub use comm::{CommKind, CommRef};
pub use connect::Connector;
pub use control::{Control, CtrlMsg, DecodeError, RailNames, decode_control};
pub use endpoint::Endpoint;
pub use error::{NetError, RequestError};
pub use handle::{Handle, HandleRef, decode_handle};
pub use immediate::{imm, split_imm, split_sr_imm, sr_imm};
pub use mr::MAX_MR_HANDLES;

use crate::config::MAX_RAILS;
use crate::freelist::Entry;

/// Bits of the sequence number in the immediate.
pub const SEQ_BITS: u32 = 10;
/// Bits of the comm id in the immediate.
pub const COMM_ID_BITS: u32 = 18;
/// Most requests in flight on one comm.
pub const MAX_INFLIGHT: usize = 128;
/// The sequence window.
pub const MSGBUFF_SIZE: u16 = 256;
/// Bytes of a listen handle.
pub const HANDLE_LEN: usize = 128;
/// The chunk of a SENDRECV message (and the size of its rx buffers).
pub const SENDRECV_CHUNK: usize = 128 << 10;
/// Chunks of one SENDRECV message, at most (9 bits of the immediate): the
/// largest SENDRECV message is 64 MiB.
pub const SENDRECV_MAX_CHUNKS: usize = 512;
/// Control rails an endpoint may have.
pub const MAX_CONTROL_RAILS: usize = 4;
/// Rail numbers from here on name control rails (`CTL + i`).
const CTL: usize = 1 << 20;
/// Comms one endpoint holds.
pub const MAX_COMMS: usize = 4096;
/// Connections a listener holds before `accept` takes them; a CONN beyond
/// this is dropped (its sender's connect times out).
pub const MAX_BACKLOG: usize = 256;
/// Segments of one message, at most: a write per data rail, and a SIZE.
pub const MAX_SEGMENTS: usize = MAX_RAILS + 1;

const CTL_SLOT: usize = 1024;
const CTL_RX: usize = 256;
const CTL_TX: usize = 256;
const DATA_RX: usize = 256;

/// A listening comm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenComm(u32);
/// The sending end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendComm(u32);
/// The receiving end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvComm(u32);
/// A request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    entry: Entry,
    generation: u32,
}
/// A registration of the caller's memory on every data rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MrHandle(u32);

// Raw forms, for callers that must carry these through a C ABI as opaque
// words. A raw value that was never given out is caught by the endpoint
// (unknown comm, stale request generation, unknown registration), never
// trusted.
macro_rules! raw_id {
    ($($t:ident),*) => {$(
        impl $t {
            /// The id as an opaque word.
            pub fn to_raw(self) -> u32 {
                self.0
            }
            /// An id from [`to_raw`](Self::to_raw); the endpoint checks it on use.
            pub fn from_raw(raw: u32) -> Self {
                $t(raw)
            }
        }
    )*};
}
raw_id!(ListenComm, SendComm, RecvComm, MrHandle);

impl Request {
    /// The request as an opaque word: its slot (low 32 bits) and generation.
    pub fn to_raw(self) -> u64 {
        u64::from(self.entry.0) | u64::from(self.generation) << 32
    }
    /// A request from [`to_raw`](Request::to_raw); `test` refuses one that
    /// is not live.
    pub fn from_raw(raw: u64) -> Request {
        Request {
            entry: Entry(raw as u32),
            generation: (raw >> 32) as u32,
        }
    }
}
