//! The engine's state for requests between nodes: a peer's message as it
//! arrived ([`Msg`]), a request waiting for its answers ([`Pending`]), the
//! pending table with its timeouts in due order ([`RemoteState`]), and the
//! inter-node counters ([`RemoteStats`]).
//!
//! Plain data (the one behaviour here is keeping the timeout queue bounded):
//! this file imports none of the engine's behaviour, so the QP state
//! ([`crate::qp`]) can hold messages without depending on it.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use super::carrier::Remote;
use crate::types::{DeviceId, NodeId, Qpn};
use crate::wr::WcStatus;

/// A message from a peer: its bytes start `start` bytes into `buf`.
#[derive(Debug)]
pub(crate) struct Msg {
    pub buf: Vec<u8>,
    pub start: usize,
}

impl Msg {
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or(&[])
    }
}

/// A request some of whose messages have gone to a peer node.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(super) dev: DeviceId,
    pub(super) qpn: Qpn,
    pub(super) incarnation: u64,
    /// The request's send queue counter.
    pub(super) ctr: u32,
    pub(super) node: NodeId,
    pub(super) sent: u32,
    pub(super) answered: u32,
    pub(super) all_sent: bool,
    pub(super) status: WcStatus,
    pub(super) total: u32,
    /// READ reply bytes asked for and not yet answered.
    pub(super) reads_out: u64,
}

/// The engine's state for requests between nodes.
#[derive(Default)]
pub(crate) struct RemoteState {
    pub carrier: Option<Box<dyn Remote>>,
    pub(super) pending: HashMap<u64, Pending>,
    /// Request ids in the order their timeouts fall due.
    pub(super) deadlines: VecDeque<(Instant, u64)>,
    pub(super) next_req: u64,
    /// READ reply bytes asked of each node and not yet answered.
    pub(super) reads_out: HashMap<NodeId, u64>,
    /// QPs with held messages.
    pub held_qps: Vec<(DeviceId, Qpn)>,
    /// Message buffers the engine is done with.
    pub released: Vec<Vec<u8>>,
    /// Counters of the inter-node path.
    pub stats: RemoteStats,
}

impl RemoteState {
    /// Queues a request's timeout. Every request has the same timeout, so
    /// the queue stays in deadline order; but an entry outlives its request
    /// (it is dropped only when it falls due), and at a million requests a
    /// second a 30 s timeout would hold 30 million of them. So the entries
    /// of requests that are done are swept out whenever they outnumber the
    /// live ones: the queue never holds more than twice the requests
    /// pending (which the send queues bound) when the last was posted, plus 64.
    pub(super) fn push_deadline(&mut self, at: Instant, req_id: u64) {
        if self.deadlines.len() >= 2 * self.pending.len() + 64 {
            let pending = &self.pending;
            self.deadlines.retain(|(_, id)| pending.contains_key(id));
        }
        self.deadlines.push_back((at, req_id));
    }
}

impl std::fmt::Debug for RemoteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteState")
            .field("pending", &self.pending.len())
            .field("held_qps", &self.held_qps)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Counters of the inter-node path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Messages from peers that did not parse, dropped.
    pub malformed: u64,
    /// Replies that found no room toward their requester, dropped.
    pub replies_dropped: u64,
    /// Requests that timed out waiting for their answer.
    pub timeouts: u64,
    /// Replies for requests no longer pending (flushed, timed out, or a QP
    /// that was destroyed), ignored.
    pub stale_replies: u64,
    /// Messages sent with their payload by reference, to peers on this host
    /// (SEND and WRITE pieces, and answers to READs).
    pub sent_by_ref: u64,
    /// Bytes read from peers' memory for by-reference payloads (a SEND's or
    /// WRITE's at the responder, a READ's answer at the requester).
    pub read_by_ref: u64,
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn pending() -> Pending {
        Pending {
            dev: DeviceId(0),
            qpn: Qpn(2),
            incarnation: 1,
            ctr: 0,
            node: NodeId(1),
            sent: 1,
            answered: 0,
            all_sent: true,
            status: WcStatus::Success,
            total: 1,
            reads_out: 0,
        }
    }

    fn ids(s: &RemoteState) -> Vec<u64> {
        s.deadlines.iter().map(|(_, id)| *id).collect()
    }

    #[test]
    fn the_timeout_queue_sweeps_out_finished_requests_and_keeps_live_ones() {
        let mut s = RemoteState::default();
        let t0 = Instant::now();
        let at = |i: u64| t0 + Duration::from_micros(i);
        // Request 7 is pending; 64 others were pushed and are done.
        s.pending.insert(7, pending());
        s.push_deadline(at(0), 7);
        for id in 100..164 {
            s.push_deadline(at(id), id);
        }
        // 65 entries, and the bound is 2 * 1 pending + 64 = 66.
        assert_eq!(s.deadlines.len(), 65);
        s.push_deadline(at(164), 164);
        assert_eq!(s.deadlines.len(), 66, "at the bound, not past it");
        s.push_deadline(at(165), 165);
        // The sweep left the live one (in its place) and the new one.
        assert_eq!(ids(&s), vec![7, 165]);
        assert_eq!(s.deadlines.front(), Some(&(at(0), 7)));
    }
}
