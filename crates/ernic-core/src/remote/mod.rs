//! Requests between nodes (seed 001, "A Remote Request, Step by Step").
//!
//! The requester's half turns a work request whose peer lives on another
//! node into one or more [`wire`](crate::wire) messages (at most
//! [`EngineConfig::max_piece`](crate::EngineConfig::max_piece) bytes
//! each), records it in the pending table, and completes it when every
//! message has been answered, or with transport retry exceeded when no answer
//! comes within the request timeout. The responder's half applies a peer's
//! message to this engine's memory through the same responder operations the
//! local path uses, and answers. A SEND that finds no receive posted is held
//! (with every later message for its QP) and retried as receives arrive, for
//! up to the RNR timeout.
//!
//! The engine reaches other nodes only through the [`Remote`] trait: it asks
//! who owns a GID, queues a message (which may be refused for lack of room,
//! leaving the request at the head of its send queue), and takes back what a
//! flushed QP still has queued. It never waits for a peer.
//!
//! One file per thing: [`carrier`] (the [`Remote`] trait and what crosses
//! it), [`state`] (the pending table and counters), [`request`] (the
//! requester's half), [`datagram`], [`pending`] (ending requests, timers),
//! [`reply`] (answers), [`serve`] (the responder's half) and [`held`].

pub(crate) mod carrier;
mod datagram;
mod held;
mod pending;
mod reply;
mod request;
mod serve;
pub(crate) mod state;

pub use carrier::{Outgoing, PeerReadError, PeerRun, Remote, SendError};
pub use state::RemoteStats;

use crate::engine::Engine;
use crate::memory::DmaMemory;

impl<M: DmaMemory> Engine<M> {
    /// Connects the engine to other nodes.
    pub fn set_remote(&mut self, carrier: Box<dyn Remote>) {
        self.remote.carrier = Some(carrier);
    }

    /// Counters of the inter-node path.
    pub fn remote_stats(&self) -> RemoteStats {
        self.remote.stats
    }

    /// How many request timers the engine holds now: at most twice the
    /// inter-node requests pending at the last one posted, plus 64.
    pub fn remote_timers_held(&self) -> usize {
        self.remote.deadlines.len()
    }

    /// Hands every message buffer the engine is done with to `f` (to recycle
    /// it, and to count it out of the inbound budget).
    pub fn take_released(&mut self, mut f: impl FnMut(Vec<u8>)) {
        for b in self.remote.released.drain(..) {
            f(b);
        }
    }

    /// Whether messages from peers are held for want of a receive.
    pub fn has_held(&self) -> bool {
        !self.remote.held_qps.is_empty()
    }

    /// Requests waiting for an answer from another node.
    pub fn pending_remote(&self) -> usize {
        self.remote.pending.len()
    }
}
