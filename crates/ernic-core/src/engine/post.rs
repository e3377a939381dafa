//! Posting work: a send request into a QP's send queue, a receive into a
//! QP's own receive queue or into an SRQ. A refused request changes
//! nothing; an accepted one runs at once as far as it can
//! ([`crate::datapath`]) and completes exactly once.

use std::time::Instant;

use super::{Engine, EngineError};
use crate::inject::Event;
use crate::memory::DmaMemory;
use crate::qp::QpState;
use crate::types::{DeviceId, Qpn, SrqId};
use crate::wr::{RecvWr, SendWr, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// Posts a send request. Refused requests (bad state, full queue, too many
    /// SGEs) change nothing; accepted ones complete exactly once.
    pub fn post_send(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        wr: &SendWr<'_>,
        now: Instant,
    ) -> Result<(), EngineError> {
        let enforce = self.cfg.enforce_qp_state;
        let qp = self.qp_mut(dev, qpn)?;
        if enforce && matches!(qp.state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(EngineError::NotPostable {
                qpn,
                state: qp.state,
                what: "sends",
            });
        }
        if qp.sq.is_full() {
            return Err(EngineError::QueueFull {
                qpn,
                what: "send queue",
                depth: qp.sq.depth(),
            });
        }
        if wr.decode_error.is_none() {
            if wr.flags.inline {
                if wr.inline_data.len() > qp.caps.max_inline_data as usize {
                    return Err(EngineError::InlineTooLong {
                        len: wr.inline_data.len(),
                        max: qp.caps.max_inline_data,
                    });
                }
            } else if wr.sgl.len() > qp.caps.max_send_sge as usize {
                return Err(EngineError::TooManySge {
                    n: wr.sgl.len(),
                    max: qp.caps.max_send_sge,
                });
            }
            if qp.qp_type.is_datagram() && wr.ud.is_none() {
                return Err(EngineError::BadRequest {
                    qpn,
                    why: "a datagram send needs an address handle and a destination QP",
                });
            }
        }
        // An injected `send_err`: the WQE completes with the fault's status
        // when it runs, and the QP reacts as to a real error of that status.
        let decode_error = match wr.decode_error {
            None => self
                .inject(Event::SendError)
                .map(|f| f.status_or(WcStatus::RemAccessErr)),
            e => e,
        };
        let qp = self.qp_mut(dev, qpn)?;
        let idx = qp.sq.index(qp.sq.tail);
        let slot = &mut qp.sq.slots[idx];
        slot.wr_id = wr.wr_id;
        slot.op = wr.op;
        slot.flags = wr.flags;
        slot.ud = wr.ud;
        slot.decode_error = decode_error;
        slot.done = None;
        slot.sent = 0;
        slot.req_id = 0;
        slot.sgl.clear();
        slot.inline.clear();
        if wr.decode_error.is_none() {
            if wr.flags.inline {
                slot.inline.extend_from_slice(wr.inline_data);
            } else {
                slot.sgl.extend_from_slice(wr.sgl);
            }
        }
        qp.sq.tail = qp.sq.tail.wrapping_add(1);
        if qp.state == QpState::Err {
            self.flush_qp(dev, qpn);
        } else {
            self.progress_sq(dev, qpn, now);
        }
        Ok(())
    }

    /// Posts a receive request on a QP's own receive queue.
    pub fn post_recv(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        wr: &RecvWr<'_>,
        now: Instant,
    ) -> Result<(), EngineError> {
        let enforce = self.cfg.enforce_qp_state;
        let qp = self.qp_mut(dev, qpn)?;
        if qp.srq.is_some() {
            return Err(EngineError::BadRequest {
                qpn,
                why: "the QP receives from a shared receive queue; post there",
            });
        }
        if enforce && qp.state == QpState::Reset {
            return Err(EngineError::NotPostable {
                qpn,
                state: qp.state,
                what: "receives",
            });
        }
        if wr.sgl.len() > qp.caps.max_recv_sge as usize {
            return Err(EngineError::TooManySge {
                n: wr.sgl.len(),
                max: qp.caps.max_recv_sge,
            });
        }
        if qp.rq.outstanding() >= qp.rq.depth() {
            return Err(EngineError::QueueFull {
                qpn,
                what: "receive queue",
                depth: qp.rq.depth(),
            });
        }
        qp.rq.push(wr.wr_id, wr.sgl);
        let has_held = !qp.held.is_empty();
        if qp.state == QpState::Err {
            self.flush_qp(dev, qpn);
        } else if has_held {
            self.retry_held(dev, qpn, now, false);
        }
        self.retry_rnr(now);
        Ok(())
    }

    /// Posts a receive request on a shared receive queue.
    pub fn post_srq_recv(
        &mut self,
        dev: DeviceId,
        srq: SrqId,
        wr: &RecvWr<'_>,
        now: Instant,
    ) -> Result<(), EngineError> {
        let s = self.srq_mut(dev, srq)?;
        if wr.sgl.len() > s.max_sge as usize {
            return Err(EngineError::TooManySge {
                n: wr.sgl.len(),
                max: s.max_sge,
            });
        }
        if s.rq.outstanding() >= s.rq.depth() {
            return Err(EngineError::QueueFull {
                qpn: Qpn(srq.0),
                what: "shared receive queue",
                depth: s.rq.depth(),
            });
        }
        s.rq.push(wr.wr_id, wr.sgl);
        for (d, q) in self.remote.held_qps.clone() {
            if d == dev && self.qp(d, q).is_ok_and(|qp| qp.srq == Some(srq)) {
                self.retry_held(d, q, now, false);
            }
        }
        self.retry_rnr(now);
        Ok(())
    }
}
