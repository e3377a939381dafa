//! The engine's timers: send queues stalled on receiver-not-ready (which
//! fail past [`EngineConfig::rnr_timeout`](super::EngineConfig::rnr_timeout))
//! or on room toward another node, and the inter-node timers of
//! [`crate::remote`]. Time is an argument: nothing here reads the clock, so
//! tests step time by hand.

use std::time::Instant;

use super::Engine;
use crate::memory::DmaMemory;

impl<M: DmaMemory> Engine<M> {
    /// Runs timers and retries: send queues stalled on RNR or on room toward
    /// another node go on (or fail, past the RNR timeout), requests to other
    /// nodes past their timeout fail, held messages are retried.
    pub fn poll(&mut self, now: Instant) {
        self.retry_rnr(now);
        self.poll_remote(now);
    }

    /// The next instant [`poll`](Engine::poll) has timed work to do, if any,
    /// as of `now`. Queues stalled for room toward another node want a poll
    /// as soon as room appears, which [`has_timers`](Engine::has_timers)
    /// reports: they are due at `now`.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        // A queue waiting for room toward a node (not for a receive) is
        // due at once: room appears without any message arriving, when the
        // connection drains into TCP.
        let blocked = self
            .stalled
            .iter()
            .any(|(d, q)| self.qp(*d, *q).is_ok_and(|qp| qp.rnr_since.is_none()));
        if blocked {
            return Some(now);
        }
        let rnr = self
            .stalled
            .iter()
            .filter_map(|(d, q)| {
                let since = self.qp(*d, *q).ok()?.rnr_since?;
                Some(since + self.local_rnr_budget(*d, *q)?)
            })
            .min();
        [rnr, self.next_remote_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether any work waits on a timer or a retry.
    pub fn has_timers(&self) -> bool {
        !self.stalled.is_empty() || self.pending_remote() > 0 || self.has_held()
    }

    pub(super) fn retry_rnr(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.stalled.len() {
            let (d, q) = self.stalled[i];
            self.progress_sq(d, q, now);
            // progress_sq removes the entry when the head stops waiting.
            if self.stalled.get(i) == Some(&(d, q)) {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::testing::{Bench, PEER_QPN, REQUEST, RNR};
    use crate::{Qpn, WcStatus};

    const NS: Duration = Duration::from_nanos(1);

    #[test]
    fn an_idle_engine_has_no_deadline() {
        let b = Bench::new();
        assert!(!b.e.has_timers());
        assert_eq!(b.e.next_deadline(b.t0), None);
    }

    #[test]
    fn an_rnr_wait_is_due_at_its_timeout_and_fails_there_not_before() {
        let mut b = Bench::new();
        // Two QPs of one device, connected to each other; no receive posted.
        let (qa, qb) = (Qpn(2), Qpn(3));
        let (gid, t0) = (b.gid, b.t0);
        assert_eq!(b.qp((gid, qb)), qa);
        assert_eq!(b.qp((gid, qa)), qb);
        b.send(qa, 1, t0);
        assert!(b.take(1).is_empty(), "waits for a receive");
        assert!(b.e.has_timers());
        // Whenever asked, the wait falls due one RNR timeout after it began.
        assert_eq!(b.e.next_deadline(t0), Some(t0 + RNR));
        assert_eq!(b.e.next_deadline(t0 + RNR / 2), Some(t0 + RNR));
        b.poll(t0 + RNR - NS);
        assert!(b.take(1).is_empty(), "not before the timeout");
        b.poll(t0 + RNR);
        let c = b.take(1);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, WcStatus::RnrRetryExcErr);
        assert_eq!(b.e.next_deadline(t0 + RNR), None, "nothing waits any more");
    }

    #[test]
    fn a_queue_stalled_for_room_is_due_at_the_now_it_is_asked_about() {
        let mut b = Bench::new();
        let (peer, t0) = (b.peer_gid, b.t0);
        let q = b.qp((peer, PEER_QPN));
        b.wire.lock().unwrap().busy = true;
        b.send(q, 1, t0);
        assert!(b.sent().is_empty(), "no room toward the peer");
        assert!(b.e.has_timers());
        let later = t0 + REQUEST / 2;
        assert_eq!(b.e.next_deadline(t0), Some(t0));
        assert_eq!(b.e.next_deadline(later), Some(later));
        // Room appears: the poll at `later` sends it. Its answer is due one
        // request timeout after the request was first tried.
        b.wire.lock().unwrap().busy = false;
        b.poll(later);
        assert_eq!(b.sent().len(), 1);
        assert!(b.take(1).is_empty(), "in flight");
        assert_eq!(b.e.next_deadline(later), Some(t0 + REQUEST));
    }
}
