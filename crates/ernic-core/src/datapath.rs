//! The data path: executing send queues, as seed 001's "Executing a Send
//! Queue" and "Datagrams" describe, and the responder's half of every
//! operation, shared by requests from this engine and from peers.
//!
//! A request runs in three phases so the borrow of the key tables never
//! overlaps a change to the queues:
//!
//! 1. checks that need no memory (types, destination, a receive to land in),
//!    and lending the destination receive's SGE list out of its slot;
//! 2. resolving every SGE and key against its MR (bounds, rights, PD) and
//!    copying, with the tables borrowed read-only;
//! 3. consuming the receive, posting the receive completion, counting.
//!
//! The responder's operations ([`Engine::respond_receive`],
//! [`Engine::respond_write`], [`Engine::respond_read`],
//! [`Engine::respond_atomic`]) take their payload as a [`Source`] and put
//! results into a [`Sink`]: the requester's own SGEs when both ends are in
//! this engine (copied directly, no bounce), or a message's bytes when the
//! requester is another node (see [`crate::remote`]).
//!
//! A request that fails a check in phase 2 consumes nothing at the peer
//! unless the failure is the peer's own (its receive buffer too small or
//! badly keyed), which completes that receive in error, as hardware does.
//! Every key failure maps to a status in [`local_status`] or
//! [`remote_status`] only.

use std::time::Instant;

use crate::copy::{self, CopyError, Dst, Src};
use crate::counters::Counter;
use crate::engine::{AsyncEvent, Device, Engine, MAX_SGE};
use crate::grh::{self, GRH_LEN};
use crate::memory::DmaMemory;
use crate::mr::{self, KeyError, MrKind, Run, Seg};
use crate::qp::{OpenRecv, QpState, QpType};
use crate::types::{DeviceId, Gid, Lkey, NodeId, PdId, Qpn, Route, SrqId};
use crate::wr::{
    Access, Completion, CqEvent, PageSource, RegMr, RemoteAddr, SendFlags, SendOp, Sge, UdDest,
    WcOpcode, WcStatus,
};

/// How executing one request ended, for now.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Outcome {
    /// Finished with this status, having moved this many bytes.
    Done(WcStatus, u32),
    /// The peer has no receive posted; try again later.
    Rnr,
    /// Sent to a peer node; its reply completes the request.
    InFlight,
    /// No room toward the peer node now; the queue stops here and retries.
    Blocked,
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
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub op: SendOp,
    pub flags: SendFlags,
    pub ud: Option<UdDest>,
    pub decode_error: Option<WcStatus>,
}

pub(crate) type SegArray<'a> = [Seg<'a>; MAX_SGE];

/// Resolves an SGE list against a device's MRs. Zero-length SGEs are skipped
/// without a key check. Key 0 names a bus address directly, and only where
/// `dma_key` says the QP may (a privileged QP's, see
/// [`Engine::set_qp_privileged`]); elsewhere it is a local protection error.
/// Returns the number of segments and the total length.
pub(crate) fn resolve_sgl<'a>(
    dev: &'a Device,
    dma_key: bool,
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
            if !dma_key {
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

/// [`resolve_sgl`] into `out`, less the list's first `skip` bytes: the
/// segments left.
pub(crate) fn resolve_sgl_after<'a, 's>(
    dev: &'a Device,
    dma_key: bool,
    pd: PdId,
    sgl: &[Sge],
    need: Access,
    skip: u64,
    out: &'s mut SegArray<'a>,
) -> Result<&'s [Seg<'a>], WcStatus> {
    let (n, _) = resolve_sgl(dev, dma_key, pd, sgl, need, out)?;
    let first = skip_prefix(&mut out[..n], skip);
    Ok(&out[first..n])
}

/// Sum of an SGE list's lengths, without checking keys.
pub(crate) fn sgl_len(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| u64::from(s.len)).sum()
}

/// Resolves an rkey named by a requester. Key 0 is refused: a peer may name
/// memory only through keys this device issued.
fn resolve_rkey<'a>(
    dev: &'a Device,
    pd: PdId,
    rkey: u32,
    addr: u64,
    len: u64,
    need: Access,
) -> Result<Seg<'a>, WcStatus> {
    if rkey == 0 {
        return Err(remote_status(KeyError::ReservedKey));
    }
    let mr = dev.mrs.get(rkey).map_err(remote_status)?;
    mr.check(pd, addr, len, need).map_err(remote_status)
}

/// Drops the first `n` bytes of a segment list, in place; returns the index
/// of the first segment left.
pub(crate) fn skip_prefix(segs: &mut [Seg<'_>], mut n: u64) -> usize {
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

/// One end of a request: a QP, its device, its protection domain, whether
/// its own SGEs may name key 0, and the remote rights it grants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub dev: DeviceId,
    pub qpn: Qpn,
    pub pd: PdId,
    pub dma_key: bool,
    pub access: Access,
}

/// Where a request's payload comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'r> {
    /// The SGEs of a QP on `dev` in `pd` (key 0 among them if `dma_key`),
    /// from byte `skip` on.
    Sgl {
        dev: DeviceId,
        pd: PdId,
        dma_key: bool,
        sgl: &'r [Sge],
        skip: u64,
    },
    /// Bytes in hand: an inline payload, or a message from a peer.
    Bytes(&'r [u8]),
    /// A by-reference payload from node `from` on this host: the runs of
    /// its memory that hold the bytes (see [`crate::wire::flags::BY_REF`]).
    Peer { from: NodeId, runs: &'r [u8] },
}

/// Where a request's result goes.
pub(crate) enum Sink<'r> {
    /// The SGEs of a QP on `dev` in `pd` (they need LOCAL_WRITE; key 0
    /// among them if `dma_key`), from byte `skip` on.
    Sgl {
        dev: DeviceId,
        pd: PdId,
        dma_key: bool,
        sgl: &'r [Sge],
        skip: u64,
    },
    /// A reply message's payload.
    Bytes(&'r mut [u8]),
}

/// Where a message consumes its receive from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RecvSource {
    Qp(DeviceId, Qpn),
    Srq(DeviceId, SrqId),
}

/// A message (or one piece of it) for a receive queue.
pub(crate) struct Incoming<'r> {
    /// SEND, SEND_IMM, SEND_INV or WRITE_IMM, and the solicited flag.
    pub req: Req,
    /// The payload of this piece.
    pub src: Source<'r>,
    /// Bytes in this piece.
    pub len: u64,
    /// Where this piece starts within the whole message.
    pub offset: u64,
    /// Length of the whole message.
    pub total: u64,
    /// Whether this piece ends the message.
    pub last: bool,
    /// The GRH a datagram lands with.
    pub grh: Option<&'r [u8; GRH_LEN]>,
    /// For datagrams: the sending QP.
    pub src_qpn: Option<Qpn>,
    /// UC: with no receive posted the message is dropped, not retried.
    pub unreliable: bool,
}

impl<'r> Incoming<'r> {
    /// A whole message in one piece, reliably delivered.
    pub fn whole(req: Req, src: Source<'r>, len: u64) -> Incoming<'r> {
        Incoming {
            req,
            src,
            len,
            offset: 0,
            total: len,
            last: true,
            grh: None,
            src_qpn: None,
            unreliable: false,
        }
    }
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

impl<M: DmaMemory> Engine<M> {
    /// Resolves a source into copyable segments.
    pub(crate) fn resolve_source<'a>(
        &'a self,
        s: &Source<'a>,
        segs: &'a mut SegArray<'a>,
    ) -> Result<Src<'a>, WcStatus> {
        match *s {
            Source::Bytes(b) => Ok(Src::Bytes(b)),
            Source::Peer { from, runs } => {
                let carrier = self.remote.carrier.as_deref().ok_or(WcStatus::LocProtErr)?;
                Ok(Src::Peer {
                    carrier,
                    from,
                    runs,
                })
            }
            Source::Sgl {
                dev,
                pd,
                dma_key,
                sgl,
                skip,
            } => {
                let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
                let segs = resolve_sgl_after(d, dma_key, pd, sgl, Access::NONE, skip, segs)?;
                Ok(Src::Segs(segs))
            }
        }
    }

    /// Executes what can run of a send queue, then emits completions in order.
    pub(crate) fn progress_sq(&mut self, dev: DeviceId, qpn: Qpn, now: Instant) {
        let enforce = self.cfg.enforce_qp_state;
        let rnr_timeout = self.cfg.rnr_timeout;
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
                let outcome = self.execute(dev, qpn, ctr, &req, &sgl, &inline, now);
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
                Outcome::InFlight => {
                    qp.sq.exec = qp.sq.exec.wrapping_add(1);
                    qp.rnr_since = None;
                }
                Outcome::Rnr => {
                    qp.rnr_since.get_or_insert(now);
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

    pub(crate) fn count_tx(&mut self, dev: DeviceId, qpn: Qpn, c: Counter, bytes: u64) {
        if let Ok(d) = self.dev_mut(dev) {
            d.counters.inc(c);
            d.counters.add(Counter::TxBytes, bytes);
            if let Some(q) = d.qps.get_mut(qpn.0) {
                q.counters.inc(c);
                q.counters.add(Counter::TxBytes, bytes);
            }
        }
    }

    pub(crate) fn count_rx(&mut self, dev: DeviceId, qpn: Qpn, c: Counter, bytes: u64) {
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
                let (wr_id, sgl) = self.take_recv(rs);
                (rs, wr_id, sgl)
            }
        };
        let result = self.deliver(at, inc, &rsgl);
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
                let counter = if matches!(inc.req.op, SendOp::WriteImm(..)) {
                    Counter::RxWriteRequests
                } else {
                    Counter::RdmaRecvs
                };
                self.count_rx(at.dev, at.qpn, counter, inc.total);
                self.push_recv_completion(at.dev, at.qpn, c);
                (true, false, Outcome::Done(WcStatus::Success, n))
            }
        };
        let continuing = inc.offset > 0;
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

    /// RDMA WRITE of `len` bytes from `src` to `(ra.rkey, ra.addr)` at QP `at`.
    pub(crate) fn respond_write(
        &mut self,
        at: End,
        ra: RemoteAddr,
        src: Source<'_>,
        len: u64,
    ) -> Result<u32, WcStatus> {
        let result = (|| {
            let mut sseg: SegArray<'_> = Default::default();
            let src = self.resolve_source(&src, &mut sseg)?;
            if len == 0 {
                return Ok(0);
            }
            if !at.access.contains(Access::REMOTE_WRITE) {
                return Err(WcStatus::RemAccessErr);
            }
            let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, len, Access::REMOTE_WRITE)?;
            copy::copy(&self.mem, Dst::Segs(&[seg]), src, len)
                .map_err(|e| e.status(WcStatus::RemAccessErr))?;
            Ok(len as u32)
        })();
        if let Ok(n) = result {
            self.count_rx(at.dev, at.qpn, Counter::RxWriteRequests, u64::from(n));
        }
        result
    }

    /// RDMA READ of `len` bytes at `(ra.rkey, ra.addr)` of QP `at` into `sink`.
    pub(crate) fn respond_read(
        &mut self,
        at: End,
        ra: RemoteAddr,
        sink: Sink<'_>,
        len: u64,
    ) -> Result<u32, WcStatus> {
        let result = (|| {
            let mut dseg: SegArray<'_> = Default::default();
            let dst = match sink {
                Sink::Bytes(b) => Dst::Bytes(b),
                Sink::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    skip,
                } => {
                    let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
                    let need = Access::LOCAL_WRITE;
                    let segs = resolve_sgl_after(d, dma_key, pd, sgl, need, skip, &mut dseg)?;
                    Dst::Segs(segs)
                }
            };
            if len == 0 {
                return Ok(0);
            }
            if !at.access.contains(Access::REMOTE_READ) {
                return Err(WcStatus::RemAccessErr);
            }
            let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, len, Access::REMOTE_READ)?;
            copy::copy(&self.mem, dst, Src::Segs(&[seg]), len)
                .map_err(|_| WcStatus::RemAccessErr)?;
            Ok(len as u32)
        })();
        if result.is_ok() {
            self.count_rx(at.dev, at.qpn, Counter::RxReadRequests, 0);
        }
        result
    }

    /// An 8-byte atomic at `(ra.rkey, ra.addr)` of QP `at`; returns the old value.
    pub(crate) fn respond_atomic(
        &mut self,
        at: End,
        ra: RemoteAddr,
        op: SendOp,
    ) -> Result<u64, WcStatus> {
        let result = (|| {
            if !at.access.contains(Access::REMOTE_ATOMIC) {
                return Err(WcStatus::RemAccessErr);
            }
            if ra.addr % 8 != 0 {
                return Err(WcStatus::RemInvReqErr);
            }
            let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, 8, Access::REMOTE_ATOMIC)?;
            copy::atomic(&self.mem, &seg, op).map_err(|e| match e {
                copy::AtomicError::Mem(_) => WcStatus::RemAccessErr,
                copy::AtomicError::Misaligned => WcStatus::RemInvReqErr,
            })
        })();
        if result.is_ok() {
            self.count_rx(at.dev, at.qpn, Counter::RxAtomicRequests, 0);
        }
        result
    }

    /// Checks that an atomic's local buffer is 8 writable bytes.
    pub(crate) fn check_atomic_target(
        &self,
        me: End,
        sgl: &[Sge],
        len: u64,
    ) -> Result<(), WcStatus> {
        if len != 8 {
            return Err(WcStatus::LocLenErr);
        }
        let d = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
        let mut dseg: SegArray<'_> = Default::default();
        resolve_sgl(d, me.dma_key, me.pd, sgl, Access::LOCAL_WRITE, &mut dseg)?;
        Ok(())
    }

    /// Writes an atomic's old value into its local buffer.
    pub(crate) fn put_atomic_result(&self, me: End, sgl: &[Sge], old: u64) -> Result<(), WcStatus> {
        let d = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
        let mut dseg: SegArray<'_> = Default::default();
        let (n, _) = resolve_sgl(d, me.dma_key, me.pd, sgl, Access::LOCAL_WRITE, &mut dseg)?;
        copy::copy(
            &self.mem,
            Dst::Segs(&dseg[..n]),
            Src::Bytes(&old.to_ne_bytes()),
            8,
        )
        .map_err(|_| WcStatus::LocProtErr)
    }

    fn local_atomic(
        &mut self,
        me: End,
        them: End,
        sgl: &[Sge],
        len: u64,
        ra: RemoteAddr,
        op: SendOp,
    ) -> Result<u32, WcStatus> {
        self.check_atomic_target(me, sgl, len)?;
        let old = self.respond_atomic(them, ra, op)?;
        self.put_atomic_result(me, sgl, old)?;
        Ok(8)
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
        now: Instant,
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
        // The sender's payload must be readable before anything goes anywhere.
        {
            let mut sseg: SegArray<'_> = Default::default();
            if let Err(st) = self.resolve_source(&src, &mut sseg) {
                return Outcome::Done(st, 0);
            }
        }
        let sgid = ah.sgid.unwrap_or_else(|| {
            self.dev(dev)
                .ok()
                .and_then(|d| d.gids.first().copied())
                .unwrap_or(Gid([0; 16]))
        });
        let header = grh::Repr {
            sgid,
            dgid: ah.dgid,
            payload_len: len as u16,
            hop_limit: 64,
        }
        .to_bytes();
        // An AH made before anyone owned its GID is looked up again: a
        // mesh peer's GIDs can become known after the handle was made.
        let route = ah.route.or_else(|| self.route_of(&ah.dgid));
        let pdev = match route {
            Some(Route::Remote(node)) => {
                return self.send_datagram(dev, qpn, req, src, len, node, ud, qkey, &header, now);
            }
            Some(Route::Local(d)) => d,
            None => dev,
        };
        let out = self.deliver_datagram(pdev, ud.remote_qpn, qkey, req, src, len, &header, qpn);
        if let Outcome::Done(WcStatus::Success, _) = out {
            self.count_tx(dev, qpn, Counter::RdmaSends, len);
        }
        out
    }

    /// Delivers a datagram to QP `pqpn` of device `pdev` after the datagram
    /// rules (UD/GSI destination, Q_Key). A datagram's sender never hears of
    /// the receiver's trouble: refused and undeliverable ones are dropped and
    /// counted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver_datagram(
        &mut self,
        pdev: DeviceId,
        pqpn: Qpn,
        qkey: u32,
        req: &Req,
        src: Source<'_>,
        len: u64,
        header: &[u8; GRH_LEN],
        src_qpn: Qpn,
    ) -> Outcome {
        let enforce = self.cfg.enforce_qp_state;
        let accepted = self.qp(pdev, pqpn).ok().filter(|p| {
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
        let at = End {
            dev: pdev,
            qpn: pqpn,
            pd: peer.pd,
            dma_key: self.dma_key(peer),
            access: peer.access,
        };
        let inc = Incoming {
            grh: Some(header),
            src_qpn: Some(src_qpn),
            unreliable: true,
            ..Incoming::whole(*req, src, len)
        };
        // The receiver's troubles stay with the receiver (the sender's own
        // buffers were checked before).
        self.respond_receive(at, &inc);
        Outcome::Done(WcStatus::Success, len as u32)
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
            let MrKind::FastReg { max_len, max_pages } = m.kind else {
                return Err(WcStatus::LocProtErr);
            };
            let too_many = matches!(r.pages, PageSource::Table { count, .. } if count > max_pages);
            if m.pd != pd || r.len > max_len || too_many {
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
                    // The list is read in pieces and ends at the first
                    // entry that cannot be read: the registration then
                    // fails (local protection, as an unreadable SGE does)
                    // instead of naming address 0. At most `max_pages`
                    // runs are ever kept (checked above).
                    let mut buf = [0u8; 512];
                    let (mut at, mut have, mut used) = (0u64, 0usize, 0usize);
                    let mut bad = false;
                    let entries = std::iter::from_fn(|| {
                        if at == u64::from(count) || bad {
                            return None;
                        }
                        if used == have {
                            let n = ((u64::from(count) - at) as usize).min(buf.len() / 8);
                            let read = table.checked_add(at * 8).is_some_and(|a| {
                                copy::copy(
                                    mem,
                                    Dst::Bytes(&mut buf[..n * 8]),
                                    Src::Segs(&[Seg::direct(a, n as u64 * 8)]),
                                    n as u64 * 8,
                                )
                                .is_ok()
                            });
                            if !read {
                                bad = true;
                                return None;
                            }
                            (have, used) = (n, 0);
                        }
                        let e = u64::from_le_bytes(
                            buf[used * 8..used * 8 + 8].try_into().expect("8 bytes"),
                        );
                        used += 1;
                        at += 1;
                        Some(e)
                    });
                    m.runs.clear();
                    m.runs.reserve_exact(count as usize);
                    let fits = mr::runs_from_pages(
                        entries,
                        page_shift,
                        u64::from(first_offset),
                        r.len,
                        &mut m.runs,
                    );
                    if fits.is_none() || bad {
                        m.runs.clear();
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

/// The counter a successful request bumps at its requester.
pub(crate) fn tx_counter(op: SendOp) -> Counter {
    match op {
        SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => Counter::RdmaSends,
        SendOp::Write(_) | SendOp::WriteImm(..) => Counter::RdmaWrites,
        SendOp::Read(_) => Counter::RdmaReads,
        _ => Counter::RdmaAtomics,
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
