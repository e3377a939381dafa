//! The data path: executing send queues, as seed 001's "Executing a Send
//! Queue" and "Datagrams" describe.
//!
//! Each request is executed in three phases so the borrow of the key tables
//! never overlaps a change to the queues:
//!
//! 1. checks that need no memory (types, destination, a receive to land in),
//!    and lending the destination receive's SGE list out of its slot;
//! 2. resolving every SGE and key against its MR (bounds, rights, PD) and
//!    copying, with the tables borrowed read-only;
//! 3. consuming the receive, posting the receive completion, counting.
//!
//! A request that fails a check in phase 2 consumes nothing at the peer
//! unless the failure is the peer's own (its receive buffer too small or
//! badly keyed), which completes that receive in error, as hardware does.
//! Every status a request can end with is chosen here, and every key failure
//! maps to a status in [`local_status`] or [`remote_status`] only.

use std::time::Instant;

use crate::copy::{self, Dst, Src};
use crate::counters::Counter;
use crate::engine::{AsyncEvent, Device, Engine, EngineConfig, MAX_SGE};
use crate::grh;
use crate::memory::DmaMemory;
use crate::mr::{self, KeyError, MrKind, Run, Seg};
use crate::qp::{QpState, QpType};
use crate::types::{DeviceId, Gid, Lkey, PdId, Qpn, Rkey, SrqId};
use crate::wr::{
    Access, Completion, CqEvent, PageSource, RegMr, SendFlags, SendOp, Sge, UdDest, WcOpcode,
    WcStatus,
};

/// How executing one request ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    /// Finished with this status, having moved this many bytes.
    Done(WcStatus, u32),
    /// The peer has no receive posted; try again later.
    Rnr,
}

/// A local key failure, as the requester's status.
fn local_status(_: KeyError) -> WcStatus {
    WcStatus::LocProtErr
}

/// A remote key failure, as the requester's status.
fn remote_status(_: KeyError) -> WcStatus {
    WcStatus::RemAccessErr
}

/// The counter an error status bumps, besides the per-side CQE error count.
pub(crate) fn error_counter(s: WcStatus) -> Option<Counter> {
    match s {
        WcStatus::RnrRetryExcErr => Some(Counter::RnrNakRetryErr),
        WcStatus::RetryExcErr => Some(Counter::LocalAckTimeoutErr),
        WcStatus::RemAccessErr => Some(Counter::ReqRemoteAccessErrors),
        WcStatus::RemInvReqErr => Some(Counter::ReqRemoteInvalidRequest),
        WcStatus::LocProtErr => Some(Counter::LocalProtectionErrors),
        WcStatus::LocLenErr => Some(Counter::RespLocalLengthError),
        _ => None,
    }
}

/// The pieces of a send slot that execution reads.
#[derive(Clone, Copy)]
struct Req {
    op: SendOp,
    flags: SendFlags,
    ud: Option<UdDest>,
    decode_error: Option<WcStatus>,
}

type SegArray<'a> = [Seg<'a>; MAX_SGE];

/// Resolves an SGE list against a device's MRs. Zero-length SGEs are skipped
/// without a key check. Returns the number of segments and the total length.
fn resolve_sgl<'a>(
    dev: &'a Device,
    cfg: &EngineConfig,
    pd: PdId,
    sgl: &[Sge],
    need: Access,
    out: &mut SegArray<'a>,
) -> Result<(usize, u64), WcStatus> {
    let mut n = 0;
    let mut total = 0u64;
    for sge in sgl.iter().filter(|s| s.len > 0) {
        let len = u64::from(sge.len);
        let seg = if sge.lkey.0 == 0 {
            if !cfg.allow_reserved_lkey {
                return Err(local_status(KeyError::ReservedKey));
            }
            sge.addr.checked_add(len).ok_or(WcStatus::LocProtErr)?;
            Seg::direct(sge.addr, len)
        } else {
            let mr = dev.mrs.get(sge.lkey.0).map_err(local_status)?;
            mr.check(pd, sge.addr, len, need).map_err(local_status)?
        };
        *out.get_mut(n).ok_or(WcStatus::LocLenErr)? = seg;
        n += 1;
        total += len;
    }
    if total > u64::from(u32::MAX) {
        return Err(WcStatus::LocLenErr);
    }
    Ok((n, total))
}

/// Sum of an SGE list's lengths, without checking keys.
fn sgl_len(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| u64::from(s.len)).sum()
}

/// Resolves an rkey named by a peer. Key 0 is refused: a peer may name
/// memory only through keys this device issued.
fn resolve_rkey<'a>(
    dev: &'a Device,
    pd: PdId,
    rkey: Rkey,
    addr: u64,
    len: u64,
    need: Access,
) -> Result<Seg<'a>, WcStatus> {
    if rkey.0 == 0 {
        return Err(remote_status(KeyError::ReservedKey));
    }
    let mr = dev.mrs.get(rkey.0).map_err(remote_status)?;
    mr.check(pd, addr, len, need).map_err(remote_status)
}

/// Drops the first `n` bytes of a segment list, in place; returns the index
/// of the first segment left.
fn skip_prefix(segs: &mut [Seg<'_>], mut n: u64) -> usize {
    let mut i = 0;
    while n > 0 && i < segs.len() {
        if segs[i].len <= n {
            n -= segs[i].len;
            i += 1;
        } else {
            segs[i].off += n;
            segs[i].len -= n;
            n = 0;
        }
    }
    i
}

/// Result of the memory phase of a delivery into a receive.
enum Delivery {
    /// Delivered this many bytes.
    Ok(u32),
    /// The sender's own buffers failed.
    Local(WcStatus),
    /// The receive failed: its status, and the sender's.
    Recv { recv: WcStatus, req: WcStatus },
}

/// One end of a request: a QP, its device and its protection domain.
#[derive(Clone, Copy, Debug)]
struct End {
    dev: DeviceId,
    qpn: Qpn,
    pd: PdId,
}

/// Where a message consumes its receive from.
#[derive(Clone, Copy)]
enum RecvSource {
    Qp(DeviceId, Qpn),
    Srq(DeviceId, SrqId),
}

impl<M: DmaMemory> Engine<M> {
    /// Executes what can run of a send queue, then emits completions in order.
    pub(crate) fn progress_sq(&mut self, dev: DeviceId, qpn: Qpn, now: Instant) {
        let enforce = self.cfg.enforce_qp_state;
        let rnr_timeout = self.cfg.rnr_timeout;
        let mut fatal = false;
        let mut waiting = false;
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
            let idx = qp.sq.index(qp.sq.exec);
            let outcome = if qp
                .rnr_since
                .is_some_and(|t| now.saturating_duration_since(t) >= rnr_timeout)
            {
                Outcome::Done(WcStatus::RnrRetryExcErr, 0)
            } else {
                let slot = &mut qp.sq.slots[idx];
                let req = Req {
                    op: slot.op,
                    flags: slot.flags,
                    ud: slot.ud,
                    decode_error: slot.decode_error,
                };
                let sgl = std::mem::take(&mut slot.sgl);
                let inline = std::mem::take(&mut slot.inline);
                let outcome = self.execute(dev, qpn, &req, &sgl, &inline);
                let qp = self
                    .qp_mut(dev, qpn)
                    .expect("execution never destroys a QP");
                let slot = &mut qp.sq.slots[idx];
                slot.sgl = sgl;
                slot.inline = inline;
                outcome
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
                Outcome::Rnr => {
                    qp.rnr_since.get_or_insert(now);
                    waiting = true;
                    break;
                }
            }
        }
        if waiting {
            if !self.rnr_waiters.contains(&(dev, qpn)) {
                self.rnr_waiters.push((dev, qpn));
            }
        } else {
            self.rnr_waiters.retain(|w| *w != (dev, qpn));
        }
        self.retire_sq(dev, qpn);
        if fatal {
            if let Ok(qp) = self.qp_mut(dev, qpn) {
                qp.state = QpState::Err;
            }
            self.events.push(AsyncEvent::QpFatal { device: dev, qpn });
            self.flush_qp(dev, qpn);
        }
    }

    fn execute(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        req: &Req,
        sgl: &[Sge],
        inline: &[u8],
    ) -> Outcome {
        if let Some(status) = req.decode_error {
            return Outcome::Done(status, 0);
        }
        let Ok(qp) = self.qp(dev, qpn) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        let (qp_type, pd) = (qp.qp_type, qp.pd);
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
        let src = Source {
            sgl,
            inline,
            inline_on: req.flags.inline,
        };
        if qp_type.is_datagram() {
            return self.exec_datagram(dev, qpn, req, src, len);
        }
        // A connected QP: find its peer.
        let Some(dest) = qp.dest else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let Ok(peer) = self.qp(dest.device, dest.qpn) else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let enforce = self.cfg.enforce_qp_state;
        let connected_back = peer.dest.is_none_or(|d| d.qpn == qpn && d.device == dev);
        if peer.qp_type != qp_type || (enforce && (!peer.state.can_receive() || !connected_back)) {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        }
        let (pdev, pqpn) = (dest.device, dest.qpn);
        let me = End { dev, qpn, pd };
        let them = End {
            dev: pdev,
            qpn: pqpn,
            pd: peer.pd,
        };
        let out = match req.op {
            SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) | SendOp::WriteImm(..) => {
                self.exec_to_receive(dev, qpn, req, src, len, pdev, pqpn)
            }
            SendOp::Write(ra) => self.exec_write(me, them, src, len, ra),
            SendOp::Read(ra) => self.exec_read(me, them, sgl, len, ra),
            SendOp::AtomicCas { remote, .. } | SendOp::AtomicFa { remote, .. } => {
                self.exec_atomic(me, them, sgl, len, remote, req.op)
            }
            SendOp::RegMr(_) | SendOp::LocalInv(_) => unreachable!("handled above"),
        };
        if let Outcome::Done(WcStatus::Success, n) = out {
            let c = match req.op {
                SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => Counter::RdmaSends,
                SendOp::Write(_) | SendOp::WriteImm(..) => Counter::RdmaWrites,
                SendOp::Read(_) => Counter::RdmaReads,
                _ => Counter::RdmaAtomics,
            };
            self.count_tx(dev, qpn, c, u64::from(n));
        }
        out
    }

    fn count_tx(&mut self, dev: DeviceId, qpn: Qpn, c: Counter, bytes: u64) {
        if let Ok(d) = self.dev_mut(dev) {
            d.counters.inc(c);
            d.counters.add(Counter::TxBytes, bytes);
            if let Some(q) = d.qps.get_mut(qpn.0) {
                q.counters.inc(c);
                q.counters.add(Counter::TxBytes, bytes);
            }
        }
    }

    fn count_rx(&mut self, dev: DeviceId, qpn: Qpn, c: Counter, bytes: u64) {
        if let Ok(d) = self.dev_mut(dev) {
            d.counters.inc(c);
            d.counters.add(Counter::RxBytes, bytes);
            if let Some(q) = d.qps.get_mut(qpn.0) {
                q.counters.inc(c);
                q.counters.add(Counter::RxBytes, bytes);
            }
        }
    }

    /// The receive queue a message for this QP consumes from, and whether one is posted.
    fn recv_source(&self, pdev: DeviceId, pqpn: Qpn) -> Option<(RecvSource, bool)> {
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
    fn take_recv(&mut self, rs: RecvSource) -> (u64, Vec<Sge>) {
        let rq = match rs {
            RecvSource::Qp(d, q) => &mut self.qp_mut(d, q).expect("checked").rq,
            RecvSource::Srq(d, s) => &mut self.srq_mut(d, s).expect("checked").rq,
        };
        let i = rq.head_index().expect("checked non-empty");
        let slot = &mut rq.slots[i];
        (slot.wr_id, std::mem::take(&mut slot.sgl))
    }

    /// Returns the lent SGE list, and consumes the receive if `consume`.
    fn return_recv(&mut self, rs: RecvSource, sgl: Vec<Sge>, consume: bool) {
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

    fn push_recv_completion(&mut self, pdev: DeviceId, pqpn: Qpn, c: Completion) {
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
        }
        let cq = q.recv_cq;
        self.outbox.push(CqEvent {
            device: pdev,
            cq,
            completion: c,
        });
    }

    /// SEND, SEND_IMM, SEND_INV and WRITE_IMM on a connected QP: all consume a
    /// receive at the peer.
    #[allow(clippy::too_many_arguments)]
    fn exec_to_receive(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        req: &Req,
        src: Source<'_>,
        len: u64,
        pdev: DeviceId,
        pqpn: Qpn,
    ) -> Outcome {
        let qp_type = self.qp(dev, qpn).map(|q| q.qp_type).unwrap_or(QpType::Rc);
        let peer_pd = self.qp(pdev, pqpn).map(|q| q.pd).unwrap_or_default();
        let peer_access = self.qp(pdev, pqpn).map(|q| q.access).unwrap_or_default();
        // Checks that consume nothing.
        if let SendOp::WriteImm(ra, _) = req.op {
            if len > 0 && !peer_access.contains(Access::REMOTE_WRITE) {
                return Outcome::Done(WcStatus::RemAccessErr, 0);
            }
            if len > 0 {
                let Ok(pd_dev) = self.dev(pdev) else {
                    return Outcome::Done(WcStatus::RetryExcErr, 0);
                };
                if let Err(s) =
                    resolve_rkey(pd_dev, peer_pd, ra.rkey, ra.addr, len, Access::REMOTE_WRITE)
                {
                    return Outcome::Done(s, 0);
                }
            }
        }
        if let SendOp::SendInv(rkey) = req.op {
            let ok = self
                .dev(pdev)
                .ok()
                .and_then(|d| d.mrs.get(rkey.0).ok())
                .is_some_and(|m| m.pd == peer_pd && matches!(m.kind, MrKind::FastReg { .. }));
            if !ok {
                return Outcome::Done(WcStatus::RemInvReqErr, 0);
            }
        }
        let Some((rs, posted)) = self.recv_source(pdev, pqpn) else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        if !posted {
            if qp_type == QpType::Uc {
                // UC has no RNR: the message is dropped and the sender never knows.
                if let Ok(d) = self.dev_mut(pdev) {
                    d.counters.inc(Counter::OutOfBuffer);
                }
                return Outcome::Done(WcStatus::Success, len as u32);
            }
            return Outcome::Rnr;
        }
        let (wr_id, rsgl) = self.take_recv(rs);
        let my_pd = self.qp(dev, qpn).map(|q| q.pd).unwrap_or_default();
        let result = self.deliver((dev, my_pd), req, src, len, pdev, peer_pd, &rsgl, None);
        let (consume, out) = match result {
            Delivery::Local(s) => (false, Outcome::Done(s, 0)),
            Delivery::Recv { recv, req: rstatus } => {
                self.push_recv_completion(
                    pdev,
                    pqpn,
                    recv_completion(wr_id, recv, pqpn, 0, req, None),
                );
                (true, Outcome::Done(rstatus, 0))
            }
            Delivery::Ok(n) => {
                let mut c = recv_completion(wr_id, WcStatus::Success, pqpn, n, req, None);
                if let SendOp::SendInv(rkey) = req.op {
                    if let Some(mr) = self.dev_mut(pdev).ok().and_then(|d| d.mrs.slot_mut(rkey.0)) {
                        mr.valid = false;
                    }
                    c.invalidated = Some(rkey);
                }
                let counter = if matches!(req.op, SendOp::WriteImm(..)) {
                    Counter::RxWriteRequests
                } else {
                    Counter::RdmaRecvs
                };
                self.count_rx(pdev, pqpn, counter, u64::from(n));
                self.push_recv_completion(pdev, pqpn, c);
                (true, Outcome::Done(WcStatus::Success, n))
            }
        };
        self.return_recv(rs, rsgl, consume);
        out
    }

    /// The memory phase of a delivery into a receive (phase 2): the sender's
    /// buffers, then the receive's (or the WRITE_IMM target), then the copy.
    /// With `grh`, the receive gets the 40-byte header before the payload.
    #[allow(clippy::too_many_arguments)]
    fn deliver(
        &self,
        (dev, my_pd): (DeviceId, PdId),
        req: &Req,
        src: Source<'_>,
        len: u64,
        pdev: DeviceId,
        peer_pd: PdId,
        rsgl: &[Sge],
        grh: Option<&[u8; grh::GRH_LEN]>,
    ) -> Delivery {
        let (Ok(sd), Ok(pd_dev)) = (self.dev(dev), self.dev(pdev)) else {
            return Delivery::Local(WcStatus::GeneralErr);
        };
        let mut sseg: SegArray<'_> = Default::default();
        let src = match src.resolve(sd, &self.cfg, my_pd, &mut sseg) {
            Ok(s) => s,
            Err(st) => return Delivery::Local(st),
        };
        if let SendOp::WriteImm(ra, _) = req.op {
            if len == 0 {
                return Delivery::Ok(0);
            }
            let seg =
                match resolve_rkey(pd_dev, peer_pd, ra.rkey, ra.addr, len, Access::REMOTE_WRITE) {
                    Ok(s) => s,
                    Err(st) => return Delivery::Local(st),
                };
            return match copy::copy(&self.mem, Dst::Segs(&[seg]), src, len) {
                Ok(()) => Delivery::Ok(len as u32),
                Err(_) => Delivery::Local(WcStatus::RemAccessErr),
            };
        }
        let mut dseg: SegArray<'_> = Default::default();
        let (dn, dlen) = match resolve_sgl(
            pd_dev,
            &self.cfg,
            peer_pd,
            rsgl,
            Access::LOCAL_WRITE,
            &mut dseg,
        ) {
            Ok(x) => x,
            Err(_) => {
                return Delivery::Recv {
                    recv: WcStatus::LocProtErr,
                    req: WcStatus::RemOpErr,
                };
            }
        };
        let hdr = grh.map_or(0, |g| g.len() as u64);
        if dlen < hdr + len {
            return Delivery::Recv {
                recv: WcStatus::LocLenErr,
                req: WcStatus::RemInvReqErr,
            };
        }
        let dst = &mut dseg[..dn];
        if let Some(g) = grh {
            if copy::copy(&self.mem, Dst::Segs(dst), Src::Bytes(g), hdr).is_err() {
                return Delivery::Recv {
                    recv: WcStatus::LocProtErr,
                    req: WcStatus::RemOpErr,
                };
            }
        }
        let first = skip_prefix(dst, hdr);
        match copy::copy(&self.mem, Dst::Segs(&dst[first..]), src, len) {
            Ok(()) => Delivery::Ok((hdr + len) as u32),
            Err(_) => Delivery::Recv {
                recv: WcStatus::LocProtErr,
                req: WcStatus::RemOpErr,
            },
        }
    }

    fn exec_write(
        &mut self,
        me: End,
        peer: End,
        src: Source<'_>,
        len: u64,
        ra: crate::wr::RemoteAddr,
    ) -> Outcome {
        let Ok(peer_access) = self.qp(peer.dev, peer.qpn).map(|q| q.access) else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let result = (|| {
            let sd = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
            let pdv = self.dev(peer.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let mut sseg: SegArray<'_> = Default::default();
            let src = src.resolve(sd, &self.cfg, me.pd, &mut sseg)?;
            if len == 0 {
                return Ok(0);
            }
            if !peer_access.contains(Access::REMOTE_WRITE) {
                return Err(WcStatus::RemAccessErr);
            }
            let seg = resolve_rkey(pdv, peer.pd, ra.rkey, ra.addr, len, Access::REMOTE_WRITE)?;
            copy::copy(&self.mem, Dst::Segs(&[seg]), src, len)
                .map_err(|_| WcStatus::RemAccessErr)?;
            Ok(len as u32)
        })();
        match result {
            Ok(n) => {
                self.count_rx(peer.dev, peer.qpn, Counter::RxWriteRequests, u64::from(n));
                Outcome::Done(WcStatus::Success, n)
            }
            Err(s) => Outcome::Done(s, 0),
        }
    }

    fn exec_read(
        &mut self,
        me: End,
        peer: End,
        sgl: &[Sge],
        len: u64,
        ra: crate::wr::RemoteAddr,
    ) -> Outcome {
        let Ok(peer_access) = self.qp(peer.dev, peer.qpn).map(|q| q.access) else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let result = (|| {
            let sd = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
            let pdv = self.dev(peer.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let mut dseg: SegArray<'_> = Default::default();
            let (dn, _) = resolve_sgl(sd, &self.cfg, me.pd, sgl, Access::LOCAL_WRITE, &mut dseg)?;
            if len == 0 {
                return Ok(0);
            }
            if !peer_access.contains(Access::REMOTE_READ) {
                return Err(WcStatus::RemAccessErr);
            }
            let seg = resolve_rkey(pdv, peer.pd, ra.rkey, ra.addr, len, Access::REMOTE_READ)?;
            copy::copy(&self.mem, Dst::Segs(&dseg[..dn]), Src::Segs(&[seg]), len)
                .map_err(|_| WcStatus::RemAccessErr)?;
            Ok(len as u32)
        })();
        match result {
            Ok(n) => {
                self.count_rx(peer.dev, peer.qpn, Counter::RxReadRequests, 0);
                Outcome::Done(WcStatus::Success, n)
            }
            Err(s) => Outcome::Done(s, 0),
        }
    }

    fn exec_atomic(
        &mut self,
        me: End,
        peer: End,
        sgl: &[Sge],
        len: u64,
        remote: crate::wr::RemoteAddr,
        op: SendOp,
    ) -> Outcome {
        let Ok(peer_access) = self.qp(peer.dev, peer.qpn).map(|q| q.access) else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let result = (|| {
            if len != 8 {
                return Err(WcStatus::LocLenErr);
            }
            let sd = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
            let pdv = self.dev(peer.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let mut dseg: SegArray<'_> = Default::default();
            let (dn, _) = resolve_sgl(sd, &self.cfg, me.pd, sgl, Access::LOCAL_WRITE, &mut dseg)?;
            if !peer_access.contains(Access::REMOTE_ATOMIC) {
                return Err(WcStatus::RemAccessErr);
            }
            if remote.addr % 8 != 0 {
                return Err(WcStatus::RemInvReqErr);
            }
            let seg = resolve_rkey(
                pdv,
                peer.pd,
                remote.rkey,
                remote.addr,
                8,
                Access::REMOTE_ATOMIC,
            )?;
            let old = copy::atomic(&self.mem, &seg, op).map_err(|e| match e {
                copy::AtomicError::Mem(_) => WcStatus::RemAccessErr,
                copy::AtomicError::Misaligned => WcStatus::RemInvReqErr,
            })?;
            copy::copy(
                &self.mem,
                Dst::Segs(&dseg[..dn]),
                Src::Bytes(&old.to_ne_bytes()),
                8,
            )
            .map_err(|_| WcStatus::LocProtErr)?;
            Ok(8)
        })();
        match result {
            Ok(n) => {
                self.count_rx(peer.dev, peer.qpn, Counter::RxAtomicRequests, 0);
                Outcome::Done(WcStatus::Success, n)
            }
            Err(s) => Outcome::Done(s, 0),
        }
    }

    /// A datagram send: delivered by QP number to the device the AH names (or
    /// the sender's own, for a GID no one owns), after the datagram rules.
    fn exec_datagram(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        req: &Req,
        src: Source<'_>,
        len: u64,
    ) -> Outcome {
        let Some(ud) = req.ud else {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        };
        let Ok(qp) = self.qp(dev, qpn) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        let (pd, own_qkey) = (qp.pd, qp.qkey);
        let Some(ah) = self.dev(dev).ok().and_then(|d| d.ahs.get(ud.ah.0)).copied() else {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        };
        if ah.pd != pd {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        }
        if len > u64::from(self.cfg.ud_mtu) {
            return Outcome::Done(WcStatus::LocLenErr, 0);
        }
        // A controlled Q_Key stands for the sending QP's own; a QP without one
        // can not send with a controlled key.
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            match own_qkey {
                Some(k) => k,
                None => return Outcome::Done(WcStatus::LocQpOpErr, 0),
            }
        } else {
            ud.remote_qkey
        };
        let pdev = ah.device.unwrap_or(dev);
        let enforce = self.cfg.enforce_qp_state;
        let accepted = self.qp(pdev, ud.remote_qpn).ok().filter(|p| {
            p.qp_type.is_datagram()
                && (!enforce || p.state.can_receive())
                && p.qkey.is_none_or(|k| k == qkey)
        });
        let Some(peer) = accepted else {
            if let Ok(d) = self.dev_mut(pdev) {
                d.counters.inc(Counter::RxDatagramsDropped);
            }
            return Outcome::Done(WcStatus::Success, len as u32);
        };
        let peer_pd = peer.pd;
        let pqpn = ud.remote_qpn;
        let Some((rs, posted)) = self.recv_source(pdev, pqpn) else {
            return Outcome::Done(WcStatus::Success, len as u32);
        };
        if !posted {
            if let Ok(d) = self.dev_mut(pdev) {
                d.counters.inc(Counter::OutOfBuffer);
            }
            return Outcome::Done(WcStatus::Success, len as u32);
        }
        let sgid = self
            .dev(dev)
            .ok()
            .and_then(|d| d.gids.first().copied())
            .unwrap_or(Gid([0; 16]));
        let header = grh::Repr {
            sgid,
            dgid: ah.dgid,
            payload_len: len as u16,
            hop_limit: 64,
        }
        .to_bytes();
        let (wr_id, rsgl) = self.take_recv(rs);
        let result = self.deliver(
            (dev, pd),
            req,
            src,
            len,
            pdev,
            peer_pd,
            &rsgl,
            Some(&header),
        );
        let (consume, out) = match result {
            Delivery::Local(s) => (false, Outcome::Done(s, 0)),
            Delivery::Recv { recv, .. } => {
                let c = recv_completion(wr_id, recv, pqpn, 0, req, Some(qpn));
                self.push_recv_completion(pdev, pqpn, c);
                // A datagram's sender never hears of the receiver's trouble.
                (true, Outcome::Done(WcStatus::Success, len as u32))
            }
            Delivery::Ok(n) => {
                let c = recv_completion(wr_id, WcStatus::Success, pqpn, n, req, Some(qpn));
                self.count_rx(pdev, pqpn, Counter::RdmaRecvs, len);
                self.push_recv_completion(pdev, pqpn, c);
                (true, Outcome::Done(WcStatus::Success, len as u32))
            }
        };
        self.return_recv(rs, rsgl, consume);
        if let Outcome::Done(WcStatus::Success, _) = out {
            self.count_tx(dev, qpn, Counter::RdmaSends, len);
        }
        out
    }

    fn exec_reg_mr(&mut self, dev: DeviceId, pd: PdId, r: &RegMr) -> Outcome {
        let status = (|| {
            if !r.access.is_consistent()
                || r.iova.checked_add(r.len).is_none()
                || !mr::check_page_source(&r.pages, r.len)
            {
                return Err(WcStatus::LocProtErr);
            }
            let d = self
                .devices
                .get_mut(dev.0 as usize)
                .ok_or(WcStatus::GeneralErr)?;
            let mem = &self.mem;
            let m = d.mrs.slot_mut(r.key.0).ok_or(WcStatus::LocProtErr)?;
            let MrKind::FastReg { max_len } = m.kind else {
                return Err(WcStatus::LocProtErr);
            };
            if m.pd != pd || r.len > max_len {
                return Err(WcStatus::LocProtErr);
            }
            // The old key stops working whatever happens next.
            m.valid = false;
            match r.pages {
                PageSource::Contiguous { dma } => {
                    m.runs.clear();
                    m.runs.push(Run {
                        off: 0,
                        dma,
                        len: r.len,
                    });
                }
                PageSource::Table {
                    table,
                    count,
                    page_shift,
                    first_offset,
                } => {
                    let mut bad = false;
                    let entries = (0..u64::from(count)).map(|i| {
                        let mut b = [0u8; 8];
                        let ok = table
                            .checked_add(i * 8)
                            .map(|a| {
                                copy::copy(
                                    mem,
                                    Dst::Bytes(&mut b),
                                    Src::Segs(&[Seg::direct(a, 8)]),
                                    8,
                                )
                                .is_ok()
                            })
                            .unwrap_or(false);
                        bad |= !ok;
                        u64::from_le_bytes(b)
                    });
                    let fits = mr::runs_from_pages(
                        entries,
                        page_shift,
                        u64::from(first_offset),
                        r.len,
                        &mut m.runs,
                    );
                    if fits.is_none() || bad {
                        return Err(WcStatus::LocProtErr);
                    }
                }
            }
            m.rebind(r.key.0, r.iova, r.len, r.access);
            Ok(())
        })();
        let st = status.err().unwrap_or(WcStatus::Success);
        if st.is_ok() {
            if let Ok(d) = self.dev_mut(dev) {
                d.counters.inc(Counter::LocalOps);
            }
        }
        Outcome::Done(st, 0)
    }

    fn exec_local_inv(&mut self, dev: DeviceId, pd: PdId, key: Lkey) -> Outcome {
        let Ok(d) = self.dev_mut(dev) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        match d.mrs.slot_mut(key.0) {
            Some(m)
                if m.key == key.0
                    && m.valid
                    && m.pd == pd
                    && matches!(m.kind, MrKind::FastReg { .. }) =>
            {
                m.valid = false;
                d.counters.inc(Counter::LocalOps);
                Outcome::Done(WcStatus::Success, 0)
            }
            _ => Outcome::Done(WcStatus::LocProtErr, 0),
        }
    }
}

/// A receive completion for a message `req` delivered to `qpn`.
fn recv_completion(
    wr_id: u64,
    status: WcStatus,
    qpn: Qpn,
    byte_len: u32,
    req: &Req,
    src_qpn: Option<Qpn>,
) -> Completion {
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
        signaled: true,
        sq_index: 0,
        solicited: req.flags.solicited,
    }
}

/// The payload source of a request: its SGEs, or its inline bytes.
#[derive(Clone, Copy)]
struct Source<'r> {
    sgl: &'r [Sge],
    inline: &'r [u8],
    inline_on: bool,
}

impl<'r> Source<'r> {
    fn resolve<'a>(
        &self,
        dev: &'a Device,
        cfg: &EngineConfig,
        pd: PdId,
        segs: &'a mut SegArray<'a>,
    ) -> Result<Src<'a>, WcStatus>
    where
        'r: 'a,
    {
        if self.inline_on {
            return Ok(Src::Bytes(self.inline));
        }
        let (n, _) = resolve_sgl(dev, cfg, pd, self.sgl, Access::NONE, segs)?;
        Ok(Src::Segs(&segs[..n]))
    }
}
