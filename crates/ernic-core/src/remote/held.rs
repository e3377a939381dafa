//! Messages held for want of a receive: a SEND from a peer that finds none
//! posted waits on its QP, with every later message for that QP, and is
//! retried as receives arrive, for up to the RNR timeout (then answered
//! with RNR retry exceeded).

use std::time::Instant;

use super::state::Msg;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::qp::Held;
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
        now: Instant,
    ) -> Option<Msg> {
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return Some(msg);
        };
        qp.held.push_back(Held {
            from,
            msg,
            since: now,
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
            if give_up || now.saturating_duration_since(h.since) >= self.cfg.rnr_timeout {
                self.reply(h.from, &r, Op::Ack, WcStatus::RnrRetryExcErr, 0);
                self.remote.released.push(h.msg.buf);
                continue;
            }
            let since = h.since;
            match self.serve(h.from, h.msg, &r, now, true) {
                Some(m) => self.remote.released.push(m.buf),
                None => {
                    // Still no receive: it goes back to the front, with its age.
                    let qp = self.qp_mut(dev, qpn).expect("held above");
                    let mut back = qp.held.pop_back().expect("just held");
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
