//! The pending table: request ids, ending a request (its send queue slot
//! completes, and a failure takes a connected QP to ERROR), forgetting a
//! QP's requests, and the inter-node timers (the request-timeout sweep and
//! the held messages' RNR timeout). Time is an argument.

use std::time::Instant;

use super::state::Pending;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::types::{DeviceId, Qpn};
use crate::wr::WcStatus;

impl<M: DmaMemory> Engine<M> {
    pub(super) fn next_req_id(&mut self) -> u64 {
        self.remote.next_req += 1;
        self.remote.next_req
    }

    pub(super) fn drop_pending(&mut self, req_id: u64) -> Option<Pending> {
        let p = self.remote.pending.remove(&req_id)?;
        if p.reads_out > 0 {
            if let Some(n) = self.remote.reads_out.get_mut(&p.node) {
                *n = n.saturating_sub(p.reads_out);
            }
        }
        Some(p)
    }

    /// Forgets every pending request of a QP (destroyed or flushed): answers
    /// that come later are ignored.
    pub(crate) fn forget_pending(&mut self, dev: DeviceId, qpn: Qpn) {
        let ids: Vec<u64> = self
            .remote
            .pending
            .iter()
            .filter(|(_, p)| p.dev == dev && p.qpn == qpn)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.drop_pending(id);
        }
    }

    /// Takes back what a flushed QP still has queued toward other nodes.
    pub(crate) fn cancel_queued(&mut self, incarnation: u64) {
        if let Some(c) = self.remote.carrier.as_mut() {
            c.cancel(incarnation);
        }
    }

    /// Ends a pending request: its send queue slot completes with `status`.
    pub(super) fn finish(&mut self, req_id: u64, status: WcStatus, now: Instant) {
        let Some(p) = self.drop_pending(req_id) else {
            return;
        };
        let Ok(qp) = self.qp_mut(p.dev, p.qpn) else {
            return;
        };
        if qp.incarnation != p.incarnation {
            return;
        }
        let idx = qp.sq.index(p.ctr);
        let n = if status.is_ok() { p.total } else { 0 };
        qp.sq.slots[idx].done = Some((status, n));
        let connected = qp.qp_type.is_connected();
        self.retire_sq(p.dev, p.qpn);
        if !status.is_ok() && connected {
            self.fail_qp(p.dev, p.qpn);
        } else {
            // Room freed toward the peer (or a READ budget) may unblock the queue.
            self.progress_sq(p.dev, p.qpn, now);
        }
    }

    /// Runs the inter-node timers: requests past their timeout complete with
    /// transport retry exceeded; held messages are retried or given up.
    pub(crate) fn poll_remote(&mut self, now: Instant) {
        while let Some(&(t, id)) = self.remote.deadlines.front() {
            if t > now {
                break;
            }
            self.remote.deadlines.pop_front();
            if self.remote.pending.contains_key(&id) {
                self.remote.stats.timeouts += 1;
                self.finish(id, WcStatus::RetryExcErr, now);
            }
        }
        for (d, q) in self.remote.held_qps.clone() {
            self.retry_held(d, q, now, false);
        }
    }

    /// The next instant an inter-node timer falls due.
    pub(crate) fn next_remote_deadline(&self) -> Option<Instant> {
        let held = self
            .remote
            .held_qps
            .iter()
            .filter_map(|(d, q)| {
                self.qp(*d, *q)
                    .ok()?
                    .held
                    .front()
                    .and_then(|h| Some(h.since + h.budget?))
            })
            .min();
        let req = self.remote.deadlines.front().map(|(t, _)| *t);
        [held, req].into_iter().flatten().min()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::WcStatus;
    use crate::testing::{Bench, PEER_QPN, REQUEST, RNR};
    use crate::wire::Op;

    const NS: Duration = Duration::from_nanos(1);

    #[test]
    fn an_unanswered_request_times_out_at_its_deadline_and_leaves_no_timer() {
        let mut b = Bench::new();
        let (peer, t0) = (b.peer_gid, b.t0);
        let q = b.qp((peer, PEER_QPN));
        b.send(q, 1, t0);
        assert_eq!(b.sent().len(), 1, "sent, and never answered");
        assert_eq!(b.e.pending_remote(), 1);
        assert_eq!(b.e.next_deadline(t0), Some(t0 + REQUEST));
        b.poll(t0 + REQUEST - NS);
        assert!(b.take(1).is_empty(), "not before the timeout");
        assert_eq!(b.e.pending_remote(), 1);
        b.poll(t0 + REQUEST);
        let c = b.take(1);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, WcStatus::RetryExcErr);
        assert_eq!(b.e.remote_stats().timeouts, 1);
        assert_eq!(b.e.pending_remote(), 0);
        assert_eq!(b.e.remote_timers_held(), 0);
    }

    #[test]
    fn a_held_send_is_answered_rnr_retry_exceeded_at_its_timeout_not_before() {
        let mut b = Bench::new();
        let (peer, t0) = (b.peer_gid, b.t0);
        let q = b.qp((peer, PEER_QPN));
        b.send_from_peer(q, t0);
        assert!(b.e.has_held(), "no receive posted: held");
        assert!(b.sent().is_empty(), "not answered yet");
        assert_eq!(b.e.next_deadline(t0 + RNR / 3), Some(t0 + RNR));
        b.poll(t0 + RNR - NS);
        assert!(b.e.has_held(), "still held before the timeout");
        assert!(b.sent().is_empty());
        b.poll(t0 + RNR);
        assert!(!b.e.has_held());
        let sent = b.sent();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].op, Op::Ack);
        assert_eq!(sent[0].status, WcStatus::RnrRetryExcErr);
        assert_eq!(sent[0].dst_qpn, q);
        assert_eq!(b.e.next_deadline(t0 + RNR), None);
    }
}
