//! The receive side of SEND, SEND_IMM, SEND_INV and WRITE_IMM (and of
//! datagrams, which [`super::datagram`] hands here): a message or one piece
//! of it consumes the head receive of the QP or its SRQ on its first piece
//! and completes it on its last, in the three phases of [`super`]. No
//! receive posted is receiver-not-ready on RC, a drop on UC and datagrams.

use super::resolve::{resolve_rkey, resolve_sgl, skip_prefix};
use super::{End, Incoming, Outcome, RecvSource, Req, SegArray};
use crate::copy::{self, CopyError, Dst, Src};
use crate::counters::{Counter, error_counter};
use crate::engine::{AsyncEvent, Engine};
use crate::grh::{self, GRH_LEN};
use crate::inject::Event;
use crate::memory::DmaMemory;
use crate::mr::MrKind;
use crate::qp::OpenRecv;
use crate::types::{DeviceId, Qpn};
use crate::wr::{Access, Completion, CqEvent, SendOp, Sge, WcOpcode, WcStatus};

/// Result of the memory phase of a delivery into a receive.
enum Delivery {
    /// Delivered this many bytes.
    Ok(u32),
    /// The sender's own buffers failed.
    Local(WcStatus),
    /// The receive failed: its status, and the sender's.
    Recv { recv: WcStatus, req: WcStatus },
}

impl<M: DmaMemory> Engine<M> {
    /// The receive queue a message for this QP consumes from, and whether one is posted.
    pub(super) fn recv_source(&self, pdev: DeviceId, pqpn: Qpn) -> Option<(RecvSource, bool)> {
        let peer = self.qp(pdev, pqpn).ok()?;
        Some(match peer.srq {
            Some(s) => {
                let srq = self.dev(pdev).ok()?.srqs.get(s.0)?;
                (RecvSource::Srq(pdev, s), !srq.rq.is_empty())
            }
            None => (RecvSource::Qp(pdev, pqpn), !peer.rq.is_empty()),
        })
    }

    /// Lends out the head receive's SGE list (phase 1).
    pub(super) fn take_recv(&mut self, rs: RecvSource) -> (u64, Vec<Sge>) {
        let rq = match rs {
            RecvSource::Qp(d, q) => &mut self.qp_mut(d, q).expect("checked").rq,
            RecvSource::Srq(d, s) => &mut self.srq_mut(d, s).expect("checked").rq,
        };
        let i = rq.head_index().expect("checked non-empty");
        let slot = &mut rq.slots[i];
        (slot.wr_id, std::mem::take(&mut slot.sgl))
    }

    /// Returns the lent SGE list, and consumes the receive if `consume`.
    pub(super) fn return_recv(&mut self, rs: RecvSource, sgl: Vec<Sge>, consume: bool) {
        let (rq, srq) = match rs {
            RecvSource::Qp(d, q) => (&mut self.qp_mut(d, q).expect("checked").rq, None),
            RecvSource::Srq(d, s) => (&mut self.srq_mut(d, s).expect("checked").rq, Some((d, s))),
        };
        let i = rq.head_index().expect("checked non-empty");
        rq.slots[i].sgl = sgl;
        if consume {
            rq.pop();
            if let Some((d, s)) = srq {
                let srq = self.srq_mut(d, s).expect("checked");
                if srq.limit > 0 && srq.rq.outstanding() < srq.limit {
                    srq.limit = 0;
                    self.events
                        .push(AsyncEvent::SrqLimitReached { device: d, srq: s });
                }
            }
        }
    }

    pub(super) fn push_recv_completion(&mut self, pdev: DeviceId, pqpn: Qpn, c: Completion) {
        let Ok(d) = self.dev_mut(pdev) else { return };
        let Some(q) = d.qps.get_mut(pqpn.0) else {
            return;
        };
        if !c.status.is_ok() {
            q.counters.inc(Counter::RespCqeError);
            d.counters.inc(Counter::RespCqeError);
            if let Some(ec) = error_counter(c.status) {
                q.counters.inc(ec);
                d.counters.inc(ec);
            }
        } else {
            q.counters.inc(Counter::RespCqeSuccess);
            d.counters.inc(Counter::RespCqeSuccess);
        }
        let cq = q.recv_cq;
        self.outbox.push(CqEvent {
            device: pdev,
            cq,
            completion: c,
        });
    }

    /// A message (or piece of one) arriving at QP `at`'s receive queue:
    /// SEND, SEND_IMM, SEND_INV, WRITE_IMM, or a datagram. Consumes a receive
    /// on its first piece and completes it on its last.
    pub(crate) fn respond_receive(&mut self, at: End, inc: &Incoming<'_>) -> Outcome {
        // Checks that consume nothing.
        if let SendOp::WriteImm(ra, _) = inc.req.op {
            if inc.len > 0 {
                if !at.access.contains(Access::REMOTE_WRITE) {
                    return Outcome::Done(WcStatus::RemAccessErr, 0);
                }
                let Ok(d) = self.dev(at.dev) else {
                    return Outcome::Done(WcStatus::RetryExcErr, 0);
                };
                if let Err(s) =
                    resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, inc.len, Access::REMOTE_WRITE)
                {
                    return Outcome::Done(s, 0);
                }
            }
        }
        if let SendOp::SendInv(rkey) = inc.req.op {
            if inc.last {
                let ok = self
                    .dev(at.dev)
                    .ok()
                    .and_then(|d| d.mrs.get(rkey.0).ok())
                    .is_some_and(|m| m.pd == at.pd && matches!(m.kind, MrKind::FastReg { .. }));
                if !ok {
                    return Outcome::Done(WcStatus::RemInvReqErr, 0);
                }
            }
        }
        // The receive: one left open by an earlier piece, or the next posted.
        let open = self
            .qp_mut(at.dev, at.qpn)
            .ok()
            .and_then(|q| q.open_recv.take());
        let mut injected = None;
        // Whether the receive was left open by an earlier piece (else it is
        // the ring's head, taken for this piece: the first of a message, or
        // the last of a WRITE_IMM sent in pieces).
        let continuing = open.is_some() && inc.offset > 0;
        let (rs, wr_id, rsgl) = match open {
            Some(o) if inc.offset > 0 => (o.source, o.wr_id, o.sgl),
            Some(o) => {
                // A new message while one was open: the open one is lost.
                self.push_recv_completion(
                    at.dev,
                    at.qpn,
                    recv_completion(o.wr_id, WcStatus::RemOpErr, at.qpn, 0, &inc.req, None, None),
                );
                return self.respond_receive(at, inc);
            }
            // A WRITE_IMM split in pieces sends the earlier ones as plain
            // writes: only its last consumes a receive, fresh.
            None if inc.offset > 0 && !matches!(inc.req.op, SendOp::WriteImm(..)) => {
                return Outcome::Done(WcStatus::RemOpErr, 0);
            }
            None => {
                let Some((rs, posted)) = self.recv_source(at.dev, at.qpn) else {
                    return Outcome::Done(WcStatus::RetryExcErr, 0);
                };
                if !posted {
                    if inc.unreliable || inc.grh.is_some() {
                        // UC and datagrams have no RNR: the message is dropped.
                        if let Ok(d) = self.dev_mut(at.dev) {
                            d.counters.inc(Counter::OutOfBuffer);
                        }
                        return Outcome::Done(WcStatus::Success, inc.len as u32);
                    }
                    return Outcome::Rnr;
                }
                // An injected `recv_err`: the receive this message consumes
                // completes in error, and the sender sees what it would for
                // that error at the receiver.
                injected = self
                    .inject(Event::RecvError)
                    .map(|f| f.status_or(WcStatus::LocLenErr));
                let (wr_id, sgl) = self.take_recv(rs);
                (rs, wr_id, sgl)
            }
        };
        let result = match injected {
            Some(recv) => Delivery::Recv {
                recv,
                req: requester_status(recv),
            },
            None => self.deliver(at, inc, &rsgl),
        };
        let hdr = inc.grh.map_or(0, |_| GRH_LEN as u64);
        let (consume, keep_open, out) = match result {
            Delivery::Local(s) => (false, false, Outcome::Done(s, 0)),
            Delivery::Recv { recv, req } => {
                let c = recv_completion(wr_id, recv, at.qpn, 0, &inc.req, inc.src_qpn, inc.grh);
                self.push_recv_completion(at.dev, at.qpn, c);
                (true, false, Outcome::Done(req, 0))
            }
            Delivery::Ok(n) if !inc.last => (true, true, Outcome::Done(WcStatus::Success, n)),
            Delivery::Ok(n) => {
                let whole = (hdr + inc.total) as u32;
                let mut c = recv_completion(
                    wr_id,
                    WcStatus::Success,
                    at.qpn,
                    whole,
                    &inc.req,
                    inc.src_qpn,
                    inc.grh,
                );
                if let SendOp::SendInv(rkey) = inc.req.op {
                    if let Some(mr) = self
                        .dev_mut(at.dev)
                        .ok()
                        .and_then(|d| d.mrs.slot_mut(rkey.0))
                    {
                        mr.valid = false;
                    }
                    c.invalidated = Some(rkey);
                }
                // A WRITE_IMM's earlier pieces were plain writes, counted
                // as they came: this one adds its own bytes only.
                let (counter, bytes) = if matches!(inc.req.op, SendOp::WriteImm(..)) {
                    (Counter::RxWriteRequests, inc.len)
                } else {
                    (Counter::RdmaRecvs, inc.total)
                };
                self.count_rx(at.dev, at.qpn, counter, bytes);
                self.push_recv_completion(at.dev, at.qpn, c);
                (true, false, Outcome::Done(WcStatus::Success, n))
            }
        };
        if keep_open {
            let sgl = if continuing {
                rsgl
            } else {
                // The message goes on in later pieces: the receive leaves its
                // ring now and stays open on the QP.
                let copy = rsgl.clone();
                self.return_recv(rs, rsgl, true);
                copy
            };
            if let Ok(q) = self.qp_mut(at.dev, at.qpn) {
                q.open_recv = Some(OpenRecv {
                    source: rs,
                    wr_id,
                    sgl,
                });
            }
        } else if !continuing {
            self.return_recv(rs, rsgl, consume);
        } else if !consume {
            // A piece of an open message failed on the sender's side; the
            // receive stays open for the rest.
            if let Ok(q) = self.qp_mut(at.dev, at.qpn) {
                q.open_recv = Some(OpenRecv {
                    source: rs,
                    wr_id,
                    sgl: rsgl,
                });
            }
        }
        out
    }

    /// The memory phase of a delivery into a receive (phase 2): the sender's
    /// bytes, then the receive's buffers (or the WRITE_IMM target), then the
    /// copy. A datagram's receive gets the 40-byte GRH before the payload.
    fn deliver(&self, at: End, inc: &Incoming<'_>, rsgl: &[Sge]) -> Delivery {
        let Ok(pd_dev) = self.dev(at.dev) else {
            return Delivery::Local(WcStatus::GeneralErr);
        };
        let mut sseg: SegArray<'_> = Default::default();
        let src = match self.resolve_source(&inc.src, &mut sseg) {
            Ok(s) => s,
            Err(st) => return Delivery::Local(st),
        };
        let len = inc.len;
        if let SendOp::WriteImm(ra, _) = inc.req.op {
            if len == 0 {
                return Delivery::Ok(0);
            }
            let seg =
                match resolve_rkey(pd_dev, at.pd, ra.rkey.0, ra.addr, len, Access::REMOTE_WRITE) {
                    Ok(s) => s,
                    Err(st) => return Delivery::Local(st),
                };
            return match copy::copy(&self.mem, Dst::Segs(&[seg]), src, len) {
                Ok(()) => Delivery::Ok(len as u32),
                Err(e) => Delivery::Local(e.status(WcStatus::RemAccessErr)),
            };
        }
        let mut dseg: SegArray<'_> = Default::default();
        let bad_recv = Delivery::Recv {
            recv: WcStatus::LocProtErr,
            req: WcStatus::RemOpErr,
        };
        let Ok((dn, dlen)) = resolve_sgl(
            pd_dev,
            at.dma_key,
            at.pd,
            rsgl,
            Access::LOCAL_WRITE,
            &mut dseg,
        ) else {
            return bad_recv;
        };
        let hdr = inc.grh.map_or(0, |_| GRH_LEN as u64);
        if dlen < hdr + inc.total {
            return Delivery::Recv {
                recv: WcStatus::LocLenErr,
                req: WcStatus::RemInvReqErr,
            };
        }
        let dst = &mut dseg[..dn];
        if let Some(g) = inc.grh {
            if copy::copy(&self.mem, Dst::Segs(dst), Src::Bytes(g), hdr).is_err() {
                return bad_recv;
            }
        }
        let first = skip_prefix(dst, hdr + inc.offset);
        match copy::copy(&self.mem, Dst::Segs(&dst[first..]), src, len) {
            Ok(()) => Delivery::Ok(len as u32),
            // The sender's bytes could not be read: its own fault.
            Err(CopyError::Peer(_)) => Delivery::Local(WcStatus::LocProtErr),
            Err(CopyError::Mem(_)) => bad_recv,
        }
    }
}

/// What a requester's WQE completes with when its message's receive failed
/// with `recv` at the responder (as [`Engine::deliver`] pairs them).
fn requester_status(recv: WcStatus) -> WcStatus {
    match recv {
        WcStatus::LocLenErr => WcStatus::RemInvReqErr,
        _ => WcStatus::RemOpErr,
    }
}

/// A receive completion for a message `req` delivered to `qpn`.
pub(crate) fn recv_completion(
    wr_id: u64,
    status: WcStatus,
    qpn: Qpn,
    byte_len: u32,
    req: &Req,
    src_qpn: Option<Qpn>,
    header: Option<&[u8; GRH_LEN]>,
) -> Completion {
    // The RoCE v2 IPv4 form: both GIDs IPv4-mapped (what the GRH holds).
    let grh_ipv4 = header.is_some_and(|h| {
        grh::Repr::parse(&grh::Packet::new_unchecked(&h[..]))
            .is_ok_and(|r| r.sgid.to_ipv4().is_some() && r.dgid.to_ipv4().is_some())
    });
    let (opcode, imm) = match req.op {
        SendOp::WriteImm(_, imm) => (WcOpcode::RecvRdmaWithImm, Some(imm)),
        SendOp::SendImm(imm) => (WcOpcode::Recv, Some(imm)),
        _ => (WcOpcode::Recv, None),
    };
    Completion {
        wr_id,
        status,
        opcode,
        qpn,
        byte_len,
        imm: if status.is_ok() { imm } else { None },
        invalidated: None,
        src_qpn: src_qpn.unwrap_or_default(),
        grh: src_qpn.is_some(),
        grh_ipv4,
        signaled: true,
        sq_index: 0,
        solicited: req.flags.solicited,
    }
}
