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
            .filter_map(|(d, q)| self.qp(*d, *q).ok()?.rnr_since)
            .map(|t| t + self.cfg.rnr_timeout)
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
