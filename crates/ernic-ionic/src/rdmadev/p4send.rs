//! The send-queue hook of the P4 engine (seed 001, "The P4 Engine"):
//! every SEND, WRITE, READ and atomic WQE whose local memory checks pass
//! is shown to the installed [`SendFilter`] before the core runs it.
//!
//! The checks are the core's own, made here first: each SGE's lkey names
//! a valid MR of the QP's PD covering the range (key 0 only on a
//! privileged QP), with local write for a READ's or atomic's destination.
//! A WQE that fails them, that did not decode, or that is posted on a QP
//! in ERROR (which flushes it) goes to the core as it is and completes
//! with the core's status; the filter never sees it.
//! REG_MR and LOCAL_INV are not shown.
//!
//! The verdicts: `Pass` posts the WQE as it is. `Drop` completes it, in
//! order, with `LocProtErr` (`IONIC_V1_STS_LOCAL_PROT_ERR`): the local
//! device refused the request on a protection check, before any
//! responder saw it; as with every error completion of a connected QP, the
//! QP then goes to the error state. `Transform(op)` is only for an RDMA
//! WRITE (with or without immediate) whose destination is on this device:
//! a connected QP whose peer is a QP of this device, and an rkey (never 0)
//! naming a valid MR of that peer's PD that grants remote write over the
//! destination range, the peer QP granting remote write too. Anything else
//! is refused: key 0 or an rkey not resolvable in this device's MR table
//! (another node's, whatever its number) with `RemAccessErr`, as the
//! responder refuses a key; a transform of another opcode with
//! `LocQpOpErr`; a transform the filter fails with `RemOpErr`. An accepted
//! transform copies the WQE's bytes and the destination's into scratch
//! buffers this module keeps (guest memory is copied, never aliased), runs
//! the filter over them, writes the destination back, and then posts the
//! WRITE with no payload, so it completes (and a WRITE with immediate
//! consumes its receive) in order through the core as any other. Regions
//! over [`MAX_TRANSFORM`] bytes are refused with `LocLenErr`.
//!
//! A transform's bytes land when the WQE is taken from the ring, so ahead
//! of earlier WQEs of the same QP that the core still holds (a SEND
//! waiting for a receive, a request waiting on the mesh); its completion
//! keeps its place in order.

use std::collections::BTreeMap;

use ernic_core::mr::Seg;
use ernic_core::{
    Access, DeviceId, Engine, QpState, Qpn, RemoteAddr, Route, SendOp, SendWr, WcStatus,
};
use ernic_vfio::dma::Dma;

use super::{GuestMemory, Qp};
use crate::p4hook::{LocalRegion, SendFilter, SendVerdict, SendWqe, WqeOpcode};

/// The largest source or destination region a transform copies (16 MiB).
pub const MAX_TRANSFORM: u64 = 16 << 20;

/// What the send filter counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendFilterStats {
    /// WQEs the filter dropped.
    pub dropped: u64,
    /// WRITEs transformed.
    pub transformed: u64,
    /// Transforms refused (opcode, key, range, or the filter's failure).
    pub refused: u64,
}

/// The installed filter and its scratch buffers.
pub(super) struct P4Send {
    filter: Box<dyn SendFilter>,
    regions: Vec<LocalRegion>,
    src: Vec<u8>,
    dst: Vec<u8>,
    pub(super) stats: SendFilterStats,
}

impl P4Send {
    pub(super) fn new(filter: Box<dyn SendFilter>) -> P4Send {
        P4Send {
            filter,
            regions: Vec::new(),
            src: Vec::new(),
            dst: Vec::new(),
            stats: SendFilterStats::default(),
        }
    }
}

/// What becomes of a WQE after the filter.
pub(super) enum Verdict {
    /// Post it as decoded.
    Post,
    /// Complete it with this error, running nothing.
    Fail(WcStatus),
    /// The transform ran: post the WRITE with no payload.
    Transformed,
}

/// The device state the hook reads.
pub(super) struct View<'a> {
    pub engine: &'a Engine<GuestMemory>,
    pub dev: DeviceId,
    pub qps: &'a BTreeMap<u32, Qp>,
}

/// The filter's opcode, and the remote address, of an operation it sees.
fn classify(op: &SendOp) -> Option<(WqeOpcode, Option<RemoteAddr>, u32)> {
    use crate::fw::op;
    Some(match *op {
        SendOp::Send => (WqeOpcode::Send, None, 0),
        SendOp::SendImm(imm) => (WqeOpcode::SendImm, None, imm),
        SendOp::SendInv(_) => (WqeOpcode::Other(op::SEND_INV), None, 0),
        SendOp::Write(r) => (WqeOpcode::Write, Some(r), 0),
        SendOp::WriteImm(r, imm) => (WqeOpcode::WriteImm, Some(r), imm),
        SendOp::Read(r) => (WqeOpcode::Read, Some(r), 0),
        SendOp::AtomicCas { remote, .. } => (WqeOpcode::CmpSwap, Some(remote), 0),
        SendOp::AtomicFa { remote, .. } => (WqeOpcode::FetchAdd, Some(remote), 0),
        _ => return None,
    })
}

/// Copies segment `seg` of guest memory into `out` (its length).
fn copy_in(dma: &Dma, seg: &Seg<'_>, out: &mut [u8]) -> bool {
    let mut pos = 0u64;
    while pos < seg.len {
        let (at, n) = seg.dma_at(pos);
        let n = n.min(seg.len - pos);
        let (a, b) = (pos as usize, (pos + n) as usize);
        if n == 0 || dma.read(at, &mut out[a..b]).is_err() {
            return false;
        }
        pos += n;
    }
    true
}

/// Copies `data` (the segment's length) into segment `seg` of guest memory.
fn copy_out(dma: &mut Dma, seg: &Seg<'_>, data: &[u8]) -> bool {
    let mut pos = 0u64;
    while pos < seg.len {
        let (at, n) = seg.dma_at(pos);
        let n = n.min(seg.len - pos);
        let (a, b) = (pos as usize, (pos + n) as usize);
        if n == 0 || dma.write(at, &data[a..b]).is_err() {
            return false;
        }
        pos += n;
    }
    true
}

impl P4Send {
    /// Shows `wr`, posted on QP `qpn`, to the filter if its local memory
    /// checks pass; runs a transform it asks for.
    pub(super) fn judge(
        &mut self,
        v: &View<'_>,
        qpn: u32,
        wr: &SendWr<'_>,
        dma: &mut Dma,
    ) -> Verdict {
        let Some((opcode, remote, imm)) = classify(&wr.op) else {
            return Verdict::Post;
        };
        let Some(qp) = v.qps.get(&qpn) else {
            return Verdict::Post;
        };
        // A QP in ERROR flushes what is posted: nothing of it runs.
        let Ok(info) = v.engine.query_qp(v.dev, Qpn(qpn)) else {
            return Verdict::Post;
        };
        if wr.decode_error.is_some() || info.state == QpState::Err {
            return Verdict::Post;
        }
        // The local checks, as the core will make them.
        let need = match opcode {
            WqeOpcode::Read | WqeOpcode::CmpSwap | WqeOpcode::FetchAdd => Access::LOCAL_WRITE,
            _ => Access::NONE,
        };
        self.regions.clear();
        let mut length = 0u64;
        if wr.flags.inline {
            length = wr.inline_data.len() as u64;
        } else {
            for s in wr.sgl {
                let ok = if s.lkey.0 == 0 {
                    qp.privileged
                } else {
                    v.engine
                        .mr(v.dev, s.lkey.0)
                        .is_ok_and(|mr| mr.check(qp.pd, s.addr, u64::from(s.len), need).is_ok())
                };
                if !ok {
                    return Verdict::Post;
                }
                length += u64::from(s.len);
                self.regions.push(LocalRegion {
                    lkey: s.lkey.0,
                    addr: s.addr,
                    len: s.len,
                });
            }
        }
        let dest = info.dest;
        let dest_qpn = match (wr.ud, dest) {
            (Some(ud), _) => ud.remote_qpn.0,
            (None, Some(d)) => d.qpn.0,
            (None, None) => 0,
        };
        let peer = dest
            .filter(|d| d.route == Route::Local(v.dev) && wr.ud.is_none())
            .and_then(|d| v.qps.get(&d.qpn.0).map(|q| (d.qpn, q)));
        let remote_is_local = remote.is_some_and(|r| {
            r.rkey.0 != 0 && peer.is_some() && v.engine.mr(v.dev, r.rkey.0).is_ok()
        });
        let wqe = SendWqe {
            opcode,
            qpn,
            dest_qpn,
            length,
            sges: &self.regions,
            remote: remote.map(|r| (r.rkey.0, r.addr)),
            remote_is_local,
            imm,
        };
        match self.filter.on_send(&wqe) {
            SendVerdict::Pass => Verdict::Post,
            SendVerdict::Drop => {
                self.stats.dropped += 1;
                Verdict::Fail(WcStatus::LocProtErr)
            }
            SendVerdict::Transform(op) => {
                let r = self.transform(v, op, opcode, remote, peer, length, wr, dma);
                match r {
                    Ok(()) => {
                        self.stats.transformed += 1;
                        Verdict::Transformed
                    }
                    Err(s) => {
                        self.stats.refused += 1;
                        Verdict::Fail(s)
                    }
                }
            }
        }
    }

    /// Runs transform `op` of a WRITE into this device's memory; the
    /// error is the WQE's completion status.
    #[allow(clippy::too_many_arguments)]
    fn transform(
        &mut self,
        v: &View<'_>,
        op: u32,
        opcode: WqeOpcode,
        remote: Option<RemoteAddr>,
        peer: Option<(Qpn, &Qp)>,
        length: u64,
        wr: &SendWr<'_>,
        dma: &mut Dma,
    ) -> Result<(), WcStatus> {
        if !matches!(opcode, WqeOpcode::Write | WqeOpcode::WriteImm) {
            return Err(WcStatus::LocQpOpErr);
        }
        let (Some(r), Some((peer_qpn, peer))) = (remote, peer) else {
            return Err(WcStatus::RemAccessErr);
        };
        // Key 0 would name all of guest memory: never from a program.
        if r.rkey.0 == 0 {
            return Err(WcStatus::RemAccessErr);
        }
        let grants = v
            .engine
            .query_qp(v.dev, peer_qpn)
            .is_ok_and(|i| i.access.contains(Access::REMOTE_WRITE));
        if !grants {
            return Err(WcStatus::RemAccessErr);
        }
        let dst_len = self
            .filter
            .transform_dst_len(op, length)
            .ok_or(WcStatus::RemOpErr)?;
        if length > MAX_TRANSFORM || dst_len > MAX_TRANSFORM {
            return Err(WcStatus::LocLenErr);
        }
        let mr = v
            .engine
            .mr(v.dev, r.rkey.0)
            .map_err(|_| WcStatus::RemAccessErr)?;
        let dst_seg = mr
            .check(peer.pd, r.addr, dst_len, Access::REMOTE_WRITE)
            .map_err(|_| WcStatus::RemAccessErr)?;
        // The source, gathered (its checks passed in `judge`).
        self.src.clear();
        if wr.flags.inline {
            self.src.extend_from_slice(wr.inline_data);
        } else {
            self.src.resize(length as usize, 0);
            let mut at = 0usize;
            for s in wr.sgl {
                let seg = if s.lkey.0 == 0 {
                    Seg::direct(s.addr, u64::from(s.len))
                } else {
                    let mr = v
                        .engine
                        .mr(v.dev, s.lkey.0)
                        .map_err(|_| WcStatus::LocProtErr)?;
                    mr.check(mr.pd, s.addr, u64::from(s.len), Access::NONE)
                        .map_err(|_| WcStatus::LocProtErr)?
                };
                let end = at + s.len as usize;
                if !copy_in(dma, &seg, &mut self.src[at..end]) {
                    return Err(WcStatus::LocProtErr);
                }
                at = end;
            }
        }
        self.dst.clear();
        self.dst.resize(dst_len as usize, 0);
        if !copy_in(dma, &dst_seg, &mut self.dst) {
            return Err(WcStatus::RemAccessErr);
        }
        self.filter
            .transform(op, &self.src, &mut self.dst)
            .map_err(|_| WcStatus::RemOpErr)?;
        if !copy_out(dma, &dst_seg, &self.dst) {
            return Err(WcStatus::RemOpErr);
        }
        Ok(())
    }
}
