//! Executing a send queue (seed 001, "Executing a Send Queue"): what can run
//! runs in order, each request's checks that need no memory first (its
//! opcode for the QP type, its length, its peer), then the opcode's own data
//! path; completions are retired in order and a failed request on a
//! connected QP takes the QP to ERROR. A request waits at the head on
//! receiver-not-ready (until the RNR timeout) or for room toward another
//! node.

use std::time::{Duration, Instant};

use super::count::tx_counter;
use super::resolve::sgl_len;
use super::{End, Incoming, Outcome, Req, Sink, Source};
use crate::counters::Counter;
use crate::engine::{AsyncEvent, Engine};
use crate::memory::DmaMemory;
use crate::qp::{QpState, QpType};
use crate::types::{DeviceId, Qpn, Route};
use crate::wr::{Access, SendOp, Sge, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// Executes what can run of a send queue, then emits completions in order.
    pub(crate) fn progress_sq(&mut self, dev: DeviceId, qpn: Qpn, now: Instant) {
        let enforce = self.cfg.enforce_qp_state;
        let mut fatal = false;
        let mut stalled = false;
        loop {
            let Ok(qp) = self.qp_mut(dev, qpn) else {
                return;
            };
            if qp.sq.exec == qp.sq.tail {
                break;
            }
            let runnable = if enforce {
                matches!(qp.state, QpState::Rts | QpState::Sqe)
            } else {
                qp.state != QpState::Err
            };
            if !runnable {
                break;
            }
            let ctr = qp.sq.exec;
            let idx = qp.sq.index(ctr);
            let retry = qp.rnr_since.is_some();
            if retry {
                self.count_one(dev, qpn, Counter::RnrRetries);
            }
            let qp = self.qp_mut(dev, qpn).expect("counting never destroys a QP");
            let slot = &mut qp.sq.slots[idx];
            let req = Req {
                op: slot.op,
                flags: slot.flags,
                ud: slot.ud,
                decode_error: slot.decode_error,
            };
            let sgl = std::mem::take(&mut slot.sgl);
            let inline = std::mem::take(&mut slot.inline);
            let outcome = self.execute(dev, qpn, ctr, &req, &sgl, &inline, now);
            let qp = self
                .qp_mut(dev, qpn)
                .expect("execution never destroys a QP");
            let slot = &mut qp.sq.slots[idx];
            slot.sgl = sgl;
            slot.inline = inline;
            let outcome = match outcome {
                // Still no receive at the peer, and its time is up.
                Outcome::Rnr if self.rnr_over(dev, qpn, now) => {
                    Outcome::Done(WcStatus::RnrRetryExcErr, 0)
                }
                o => o,
            };
            let qp = self
                .qp_mut(dev, qpn)
                .expect("execution never destroys a QP");
            match outcome {
                Outcome::Done(status, len) => {
                    qp.sq.slots[idx].done = Some((status, len));
                    qp.sq.exec = qp.sq.exec.wrapping_add(1);
                    qp.rnr_since = None;
                    if !status.is_ok() && qp.qp_type.is_connected() {
                        fatal = true;
                        break;
                    }
                }
                Outcome::InFlight => {
                    qp.sq.exec = qp.sq.exec.wrapping_add(1);
                    qp.rnr_since = None;
                }
                Outcome::Rnr => {
                    if qp.rnr_since.is_none() {
                        qp.rnr_since = Some(now);
                        self.count_one(dev, qpn, Counter::RnrWaits);
                    }
                    stalled = true;
                    break;
                }
                Outcome::Blocked => {
                    stalled = true;
                    break;
                }
            }
        }
        if stalled {
            if !self.stalled.contains(&(dev, qpn)) {
                self.stalled.push((dev, qpn));
            }
        } else {
            self.stalled.retain(|w| *w != (dev, qpn));
        }
        self.retire_sq(dev, qpn);
        if fatal {
            self.fail_qp(dev, qpn);
        }
    }

    /// How long a QP's head request may wait for a receive at its peer in
    /// this engine: its `rnr_retry` times the peer's `min_rnr_timer`
    /// ([`crate::rnr::budget`]); `None` without limit.
    pub(crate) fn local_rnr_budget(&self, dev: DeviceId, qpn: Qpn) -> Option<Duration> {
        let default = self.cfg.rnr_timeout;
        let Ok(qp) = self.qp(dev, qpn) else {
            return Some(default);
        };
        let code = match qp.dest {
            Some(d) => match d.route {
                Route::Local(pdev) => self.qp(pdev, d.qpn).map_or(0, |p| p.min_rnr_timer),
                Route::Remote(_) => 0,
            },
            None => 0,
        };
        crate::rnr::budget(qp.rnr_retry, code, default)
    }

    /// Whether a QP's head request, refused for want of a receive now, has
    /// waited as long as it may (since its first refusal; at once with
    /// `rnr_retry` 0).
    fn rnr_over(&self, dev: DeviceId, qpn: Qpn, now: Instant) -> bool {
        let since = self
            .qp(dev, qpn)
            .ok()
            .and_then(|q| q.rnr_since)
            .unwrap_or(now);
        self.local_rnr_budget(dev, qpn)
            .is_some_and(|b| now.saturating_duration_since(since) >= b)
    }

    /// Moves a QP to ERROR after a failed request and flushes it.
    pub(crate) fn fail_qp(&mut self, dev: DeviceId, qpn: Qpn) {
        if let Ok(qp) = self.qp_mut(dev, qpn) {
            qp.state = QpState::Err;
        }
        self.events.push(AsyncEvent::QpFatal { device: dev, qpn });
        self.flush_qp(dev, qpn);
    }

    #[allow(clippy::too_many_arguments)]
    fn execute(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        ctr: u32,
        req: &Req,
        sgl: &[Sge],
        inline: &[u8],
        now: Instant,
    ) -> Outcome {
        if let Some(status) = req.decode_error {
            return Outcome::Done(status, 0);
        }
        let Ok(qp) = self.qp(dev, qpn) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        let (qp_type, pd, dma_key) = (qp.qp_type, qp.pd, self.dma_key(qp));
        match req.op {
            SendOp::RegMr(r) => return self.exec_reg_mr(dev, pd, &r),
            SendOp::LocalInv(k) => return self.exec_local_inv(dev, pd, k),
            _ => {}
        }
        let allowed = match qp_type {
            QpType::Ud | QpType::Gsi => matches!(req.op, SendOp::Send | SendOp::SendImm(_)),
            QpType::Uc => !matches!(
                req.op,
                SendOp::Read(_) | SendOp::AtomicCas { .. } | SendOp::AtomicFa { .. }
            ),
            QpType::Rc => true,
        };
        if !allowed {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        }
        let len = if req.flags.inline {
            inline.len() as u64
        } else {
            sgl_len(sgl)
        };
        if len > self.cfg.max_msg_size {
            return Outcome::Done(WcStatus::LocLenErr, 0);
        }
        let src = if req.flags.inline {
            Source::Bytes(inline)
        } else {
            Source::Sgl {
                dev,
                pd,
                dma_key,
                sgl,
                skip: 0,
            }
        };
        if qp_type.is_datagram() {
            return self.exec_datagram(dev, qpn, req, src, len, now);
        }
        // A connected QP: find its peer.
        let Some(dest) = qp.dest else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let pdev = match dest.route {
            Route::Local(d) => d,
            Route::Remote(node) => {
                let out = self.exec_remote(dev, qpn, ctr, req, sgl, src, len, node, &dest, now);
                return out;
            }
        };
        let Ok(peer) = self.qp(pdev, dest.qpn) else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let enforce = self.cfg.enforce_qp_state;
        let connected_back = peer
            .dest
            .is_none_or(|d| d.qpn == qpn && d.route == Route::Local(dev));
        if peer.qp_type != qp_type || (enforce && (!peer.state.can_receive() || !connected_back)) {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        }
        let them = End {
            dev: pdev,
            qpn: dest.qpn,
            pd: peer.pd,
            dma_key: self.dma_key(peer),
            access: peer.access,
        };
        let out = match req.op {
            SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) | SendOp::WriteImm(..) => {
                let inc = Incoming {
                    unreliable: qp_type == QpType::Uc,
                    ..Incoming::whole(*req, src, len)
                };
                self.respond_receive(them, &inc)
            }
            SendOp::Write(ra) => Self::done(self.respond_write(them, ra, src, len)),
            SendOp::Read(ra) => Self::done(self.respond_read(
                them,
                ra,
                Sink::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    skip: 0,
                },
                len,
            )),
            SendOp::AtomicCas { remote, .. } | SendOp::AtomicFa { remote, .. } => {
                Self::done(self.local_atomic(
                    End {
                        dev,
                        qpn,
                        pd,
                        dma_key,
                        access: Access::NONE,
                    },
                    them,
                    sgl,
                    len,
                    remote,
                    req.op,
                ))
            }
            SendOp::RegMr(_) | SendOp::LocalInv(_) => unreachable!("handled above"),
        };
        if let Outcome::Done(WcStatus::Success, n) = out {
            self.count_tx(dev, qpn, tx_counter(req.op), u64::from(n));
        }
        out
    }

    fn done(r: Result<u32, WcStatus>) -> Outcome {
        match r {
            Ok(n) => Outcome::Done(WcStatus::Success, n),
            Err(s) => Outcome::Done(s, 0),
        }
    }
}
