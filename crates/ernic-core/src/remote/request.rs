//! The requester's half for connected QPs: a work request whose peer lives
//! on another node goes as one or more [`wire`] messages (at most
//! [`EngineConfig::max_piece`](crate::EngineConfig::max_piece) bytes each,
//! or larger pieces by reference to a peer that reads this process's
//! memory), after its local buffers were checked, and waits in the pending
//! table for its answers. No room toward the node leaves it at the head of
//! its send queue.

use std::time::Instant;

use super::state::Pending;
use super::{Outgoing, SendError};
use crate::datapath::{End, Outcome, Req, SegArray, Source, tx_counter};
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::qp::Dest;
use crate::types::{DeviceId, NodeId, Qpn};
use crate::wire::{self, HEADER_LEN, Op, Repr, flags};
use crate::wr::{Access, SendOp, Sge, WcStatus};

/// The request's operation as the peer sees it, for one piece.
fn piece_op(op: SendOp, last: bool) -> Op {
    match op {
        SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => Op::Send,
        SendOp::Write(_) => Op::Write,
        SendOp::WriteImm(..) if last => Op::WriteImm,
        SendOp::WriteImm(..) => Op::Write,
        SendOp::Read(_) => Op::ReadReq,
        SendOp::AtomicCas { .. } => Op::AtomicCas,
        _ => Op::AtomicFa,
    }
}

impl<M: DmaMemory> Engine<M> {
    /// Sends (the rest of) a connected QP's request to its peer on `node`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exec_remote(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        ctr: u32,
        req: &Req,
        sgl: &[Sge],
        src: Source<'_>,
        len: u64,
        node: NodeId,
        dest: &Dest,
        now: Instant,
    ) -> Outcome {
        let Ok(qp) = self.qp(dev, qpn) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        let (pd, incarnation, dma_key) = (qp.pd, qp.incarnation, self.dma_key(qp));
        let idx = qp.sq.index(ctr);
        let slot = &qp.sq.slots[idx];
        if let Some((st, n)) = slot.done {
            // An answer already ended it while pieces were still to go.
            return Outcome::Done(st, n);
        }
        let (mut sent, mut req_id) = (slot.sent, slot.req_id);

        let me = End {
            dev,
            qpn,
            pd,
            dma_key,
            access: Access::NONE,
        };
        if req_id == 0 {
            // First pass: the local buffers must hold before anything is sent.
            let check = match req.op {
                SendOp::Read(_) => {
                    let d = self.dev(dev).expect("QP exists");
                    let mut seg: SegArray<'_> = Default::default();
                    crate::datapath::resolve_sgl(d, dma_key, pd, sgl, Access::LOCAL_WRITE, &mut seg)
                        .map(|_| ())
                }
                SendOp::AtomicCas { .. } | SendOp::AtomicFa { .. } => {
                    self.check_atomic_target(me, sgl, len)
                }
                _ => self.resolve_source_checked(&src),
            };
            if let Err(st) = check {
                return Outcome::Done(st, 0);
            }
            if self.remote.carrier.is_none() {
                return Outcome::Done(WcStatus::RetryExcErr, 0);
            }
            req_id = self.next_req_id();
            self.remote.pending.insert(
                req_id,
                Pending {
                    dev,
                    qpn,
                    incarnation,
                    ctr,
                    node,
                    sent: 0,
                    answered: 0,
                    all_sent: false,
                    status: WcStatus::Success,
                    total: len as u32,
                    reads_out: 0,
                },
            );
            self.remote
                .push_deadline(now + self.cfg.request_timeout, req_id);
            self.qp_mut(dev, qpn).expect("QP exists").sq.slots[idx].req_id = req_id;
        }
        let sgid = self
            .dev(dev)
            .ok()
            .and_then(|d| d.gids.first().copied())
            .unwrap_or_default();
        let rnr_retry = self.qp(dev, qpn).ok().and_then(|q| q.rnr_retry);
        let Some(mut carrier) = self.remote.carrier.take() else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let max = u64::from(self.cfg.max_piece).clamp(1, wire::MAX_PAYLOAD as u64);
        // To a peer that reads this process's memory itself, a large payload
        // goes by reference (the runs that hold it, not the bytes), in
        // pieces that may be larger: they cost the socket nothing.
        let by_ref_ok = matches!(
            req.op,
            SendOp::Send
                | SendOp::SendImm(_)
                | SendOp::SendInv(_)
                | SendOp::Write(_)
                | SendOp::WriteImm(..)
        ) && self.cfg.send_by_ref
            && len - sent >= u64::from(self.cfg.by_ref_min)
            && carrier.reads_from_me(node);
        let max_ref = u64::from(self.cfg.max_ref_piece.max(1));
        let budget = self.cfg.read_reply_budget;
        // The runs of the piece going by reference (filled afresh for each).
        let mut refs = [(0u64, 0u64); wire::MAX_REF_RUNS];
        let result = loop {
            let skipped = match src {
                Source::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    ..
                } => Source::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    skip: sent,
                },
                Source::Bytes(b) => Source::Bytes(&b[sent as usize..]),
                Source::Peer { .. } => src,
            };
            let rest = len - sent;
            let by_ref = (by_ref_ok && rest >= u64::from(self.cfg.by_ref_min))
                .then(|| {
                    let mut seg: SegArray<'_> = Default::default();
                    let s = self.resolve_source(&skipped, &mut seg).ok()?;
                    crate::copy::host_runs(&self.mem, s, rest.min(max_ref), &mut refs)
                })
                .flatten();
            // A payload whose runs are too many for one reference carries
            // its bytes, in pieces a frame holds.
            let piece = if by_ref.is_some() {
                rest.min(max_ref)
            } else {
                rest.min(max)
            };
            let last = sent + piece == len;
            let op = piece_op(req.op, last);
            let mut hdr = Repr {
                flags: if last { flags::LAST } else { 0 }
                    | if req.flags.solicited {
                        flags::SOLICITED
                    } else {
                        0
                    },
                src_qpn: qpn,
                dst_qpn: dest.qpn,
                req_id,
                len: piece as u32,
                total: len as u32,
                offset: sent as u32,
                sgid,
                dgid: dest.gid,
                ..Repr::new(op)
            };
            match req.op {
                SendOp::SendImm(imm) | SendOp::WriteImm(_, imm) => {
                    hdr.flags |= flags::IMM;
                    hdr.imm = imm;
                }
                SendOp::SendInv(rkey) => {
                    hdr.flags |= flags::INVALIDATE;
                    hdr.imm = rkey.0;
                }
                _ => {}
            }
            match req.op {
                SendOp::Write(ra) | SendOp::WriteImm(ra, _) | SendOp::Read(ra) => {
                    hdr.rkey = ra.rkey.0;
                    hdr.addr = ra.addr.wrapping_add(sent);
                }
                SendOp::AtomicCas {
                    remote,
                    compare,
                    swap,
                } => {
                    hdr.rkey = remote.rkey.0;
                    hdr.addr = remote.addr;
                    hdr.operand0 = compare;
                    hdr.operand1 = swap;
                    hdr.len = 0;
                    hdr.total = 0;
                }
                SendOp::AtomicFa { remote, add } => {
                    hdr.rkey = remote.rkey.0;
                    hdr.addr = remote.addr;
                    hdr.operand0 = add;
                    hdr.len = 0;
                    hdr.total = 0;
                }
                _ => {}
            }
            hdr.set_rnr_retry(rnr_retry);
            if op == Op::ReadReq {
                let out = self.remote.reads_out.get(&node).copied().unwrap_or(0);
                if out > 0 && out + piece > budget {
                    break Err(crate::remote::SendError::Busy);
                }
            }
            if let Some(k) = by_ref {
                hdr.flags |= flags::BY_REF;
                hdr.operand0 = k as u64;
            }
            let payload_len = hdr.payload_len();
            let this = &*self;
            let mut fill = |buf: &mut [u8]| {
                hdr.emit(buf);
                if let Some(k) = by_ref {
                    wire::put_ref_runs(&mut buf[HEADER_LEN..], &refs[..k]);
                } else if payload_len > 0 {
                    let mut seg: SegArray<'_> = Default::default();
                    if let Ok(s) = this.resolve_source(&skipped, &mut seg) {
                        let _ = crate::copy::copy(
                            &this.mem,
                            crate::copy::Dst::Bytes(&mut buf[HEADER_LEN..]),
                            s,
                            piece,
                        );
                    }
                }
            };
            let r = carrier.send(
                node,
                Outgoing {
                    reply: false,
                    tag: incarnation,
                    len: HEADER_LEN + payload_len,
                    fill: &mut fill,
                },
            );
            if let Err(e) = r {
                break Err(e);
            }
            sent += piece;
            if by_ref.is_some() {
                self.remote.stats.sent_by_ref += 1;
            }
            let Some(p) = self.remote.pending.get_mut(&req_id) else {
                // Answered and ended (in error) while pieces were still going.
                break Ok(());
            };
            p.sent += 1;
            if op == Op::ReadReq {
                p.reads_out += piece;
                *self.remote.reads_out.entry(node).or_insert(0) += piece;
            }
            if last {
                p.all_sent = true;
                break Ok(());
            }
        };
        self.remote.carrier = Some(carrier);
        self.qp_mut(dev, qpn).expect("QP exists").sq.slots[idx].sent = sent;
        match result {
            Ok(()) => {
                self.count_tx(dev, qpn, tx_counter(req.op), len);
                Outcome::InFlight
            }
            Err(SendError::Busy) => Outcome::Blocked,
            Err(SendError::NoRoute) => {
                self.drop_pending(req_id);
                Outcome::Done(WcStatus::RetryExcErr, 0)
            }
        }
    }

    /// Checks that a request's local payload is readable, without copying.
    fn resolve_source_checked(&self, src: &Source<'_>) -> Result<(), WcStatus> {
        match *src {
            Source::Bytes(_) | Source::Peer { .. } => Ok(()),
            Source::Sgl {
                dev,
                pd,
                dma_key,
                sgl,
                ..
            } => {
                let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
                let mut seg: SegArray<'_> = Default::default();
                crate::datapath::resolve_sgl(d, dma_key, pd, sgl, Access::NONE, &mut seg)
                    .map(|_| ())
            }
        }
    }
}
