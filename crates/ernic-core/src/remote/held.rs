//! Messages held for want of a receive: a SEND from a peer that finds none
//! posted waits on its QP, with every later message for that QP, and is
//! retried as receives arrive, for as long as the requester's `rnr_retry`
//! and this QP's `min_rnr_timer` allow ([`crate::rnr`]), and then answered
//! with RNR retry exceeded.

use std::time::{Duration, Instant};

use super::state::Msg;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::qp::Held;
use crate::rnr;
use crate::types::{DeviceId, NodeId, Qpn};
use crate::wire::{Op, Packet, Repr};
use crate::wr::WcStatus;

impl<M: DmaMemory> Engine<M> {
    pub(super) fn hold(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        from: NodeId,
        msg: Msg,
        r: &Repr,
        now: Instant,
    ) -> Option<Msg> {
        let (default, request_timeout) = (self.cfg.rnr_timeout, self.cfg.request_timeout);
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return Some(msg);
        };
        // Only a message that needs a receive has a budget of its own; one
        // held behind it waits as long as it does.
        // A wait "without limit" ends a tenth of the request timeout before
        // the requester's own would: a message must not land after its
        // sender gave up on it (both sides run with the same timeout).
        let budget = if matches!(r.op, Op::Send | Op::WriteImm) {
            Some(
                rnr::budget(r.rnr_retry(), qp.min_rnr_timer, default)
                    .unwrap_or(request_timeout - request_timeout / 10),
            )
        } else {
            None
        };
        if budget == Some(Duration::ZERO) && qp.held.is_empty() {
            // rnr_retry 0: the first refusal is the last.
            self.reply(from, r, Op::Ack, WcStatus::RnrRetryExcErr, 0);
            return Some(msg);
        }
        qp.held.push_back(Held {
            from,
            msg,
            since: now,
            budget,
        });
        if !self.remote.held_qps.contains(&(dev, qpn)) {
            self.remote.held_qps.push((dev, qpn));
        }
        None
    }

    /// Retries a QP's held messages in order; the ones past the RNR timeout
    /// (or all, with `give_up`) are answered with RNR retry exceeded.
    pub(crate) fn retry_held(&mut self, dev: DeviceId, qpn: Qpn, now: Instant, give_up: bool) {
        while let Ok(qp) = self.qp_mut(dev, qpn) {
            let Some(h) = qp.held.pop_front() else { break };
            let Ok(r) = Packet::new_checked(h.msg.bytes()).and_then(|p| Repr::parse(&p)) else {
                self.remote.released.push(h.msg.buf);
                continue;
            };
            if give_up {
                self.reply(h.from, &r, Op::Ack, WcStatus::RnrRetryExcErr, 0);
                self.remote.released.push(h.msg.buf);
                continue;
            }
            let (since, from) = (h.since, h.from);
            match self.serve(h.from, h.msg, &r, now, true) {
                Some(m) => self.remote.released.push(m.buf),
                None => {
                    let qp = self.qp_mut(dev, qpn).expect("held above");
                    let mut back = qp.held.pop_back().expect("just held");
                    if back
                        .budget
                        .is_some_and(|b| now.saturating_duration_since(since) >= b)
                    {
                        // Still no receive, and its time is up.
                        self.reply(from, &r, Op::Ack, WcStatus::RnrRetryExcErr, 0);
                        self.remote.released.push(back.msg.buf);
                        continue;
                    }
                    // Still no receive: it goes back to the front, with its age.
                    back.since = since;
                    qp.held.push_front(back);
                    break;
                }
            }
        }
        if self.qp(dev, qpn).map_or(true, |q| q.held.is_empty()) {
            self.remote.held_qps.retain(|x| *x != (dev, qpn));
        }
    }

    /// Gives up on every held message at once (the inbound queue is full and
    /// a receive thread has waited too long for room).
    pub fn expire_held(&mut self, now: Instant) {
        for (d, q) in self.remote.held_qps.clone() {
            self.retry_held(d, q, now, true);
        }
    }

    /// Drops a QP's held messages, answering them as a vanished QP would.
    pub(crate) fn drop_held(&mut self, dev: DeviceId, qpn: Qpn) {
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return;
        };
        let held: Vec<Held> = qp.held.drain(..).collect();
        for h in held {
            if let Ok(r) = Packet::new_checked(h.msg.bytes()).and_then(|p| Repr::parse(&p)) {
                self.reply(h.from, &r, Op::Ack, WcStatus::RetryExcErr, 0);
            }
            self.remote.released.push(h.msg.buf);
        }
        self.remote.held_qps.retain(|x| *x != (dev, qpn));
    }
}
