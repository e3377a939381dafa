//! The data path (seed 001, "The Data Path"): send and receive queue
//! doorbells walk the guest's rings, decode each WQE into the core's work
//! requests, and every completion the core produces is written back as a
//! 32-byte CQE in the QP's CQ: by message sequence number for RC and UC
//! requests that reach the peer, by SQ index (the WQE's id) otherwise.
//!
//! A WQE that cannot be decoded (a bad opcode, more SGEs or inline bytes
//! than its stride holds) still completes, in order, with an error status:
//! the core takes it with `decode_error` set.

use std::time::Instant;

use ernic_core::{
    AhId, Completion, Lkey, PageSource, Qpn, RecvWr, RegMr, RemoteAddr, Rkey, SendFlags, SendOp,
    SendWr, Sge, UdDest, WcOpcode, WcStatus,
};
use ernic_vfio::dma::Dma;

use super::{Qp, RdmaDev};
use crate::bootstrap::Bootstrap;
use crate::fw::{cqe, op, recv_op, status, wqe};

/// The largest WQE stride read (LIF_IDENTIFY's `max_stride`, 4 KiB).
const MAX_WQE: usize = 4096;
/// SGEs one WQE may carry (what a 4 KiB stride holds).
const MAX_SGES: usize = (MAX_WQE - wqe::PLD) / wqe::SGE_LEN;

/// Reads `n` SGEs from `w` at `at` into `out`; `None` if they run past the
/// WQE.
fn sges(w: &wqe::Packet<&[u8]>, at: usize, n: usize, out: &mut [Sge; MAX_SGES]) -> Option<usize> {
    if n > MAX_SGES || !w.holds_sges(at, n) {
        return None;
    }
    for (i, s) in out.iter_mut().take(n).enumerate() {
        *s = w.sge(at, i)?;
    }
    Some(n)
}

/// Where a WQE's SGEs start: after the SPEC length arrays when a SPEC
/// form is flagged.
fn sgl_at(flags: u16) -> usize {
    if flags & (wqe::FLAG_SPEC32 | wqe::FLAG_SPEC16) != 0 {
        wqe::PLD + wqe::SPEC_FIRST_SGE * wqe::SGE_LEN
    } else {
        wqe::PLD
    }
}

/// Decodes a send WQE `w` into a work request whose buffers are in `sgl`;
/// what cannot be decoded (a buffer shorter than the smallest WQE among
/// it) comes back with `decode_error` set.
pub fn decode_send<'a>(w: &'a [u8], sgl: &'a mut [Sge; MAX_SGES]) -> SendWr<'a> {
    let Ok(w) = wqe::Packet::new_checked(w) else {
        let mut wr = SendWr::new(0, SendOp::Send);
        wr.decode_error = Some(WcStatus::LocLenErr);
        return wr;
    };
    let wr_id = w.wqe_id();
    let flags = w.flags();
    let imm_key = w.imm_data_key();
    let remote = RemoteAddr {
        addr: w.remote_va(),
        rkey: Rkey(w.remote_rkey()),
    };
    let failed = |s: WcStatus| {
        let mut wr = SendWr::new(wr_id, SendOp::Send);
        wr.decode_error = Some(s);
        wr
    };
    let op = match w.op() {
        op::SEND => SendOp::Send,
        op::SEND_INV => SendOp::SendInv(Rkey(imm_key)),
        op::SEND_IMM => SendOp::SendImm(imm_key),
        op::RDMA_READ => SendOp::Read(remote),
        op::RDMA_WRITE => SendOp::Write(remote),
        op::RDMA_WRITE_IMM => SendOp::WriteImm(remote, imm_key),
        op::ATOMIC_CS | op::ATOMIC_FA => {
            let swap_add = w.swap_add();
            let compare = w.compare();
            let op = if w.op() == op::ATOMIC_CS {
                SendOp::AtomicCas {
                    remote,
                    compare,
                    swap: swap_add,
                }
            } else {
                SendOp::AtomicFa {
                    remote,
                    add: swap_add,
                }
            };
            let Some(n) = sges(&w, wqe::ATOMIC_SGE, 1, sgl) else {
                return failed(WcStatus::LocLenErr);
            };
            let mut wr = SendWr::new(wr_id, op).sgl(&sgl[..n]);
            wr.flags = send_flags(flags);
            return wr;
        }
        op::REG_MR => {
            let count = w.reg_map_count();
            let dma = w.reg_dma_addr();
            let pages = if count <= 1 {
                PageSource::Contiguous { dma }
            } else {
                let Ok(first_offset) = u32::try_from(w.reg_offset()) else {
                    return failed(WcStatus::LocQpOpErr);
                };
                PageSource::Table {
                    table: dma,
                    count,
                    page_shift: w.reg_page_size_log2(),
                    first_offset,
                }
            };
            let access = crate::fw::mrf::to_access(w.reg_flags());
            SendOp::RegMr(RegMr {
                key: Lkey(imm_key),
                iova: w.reg_va(),
                len: w.reg_length(),
                access,
                pages,
            })
        }
        op::LOCAL_INV => SendOp::LocalInv(Lkey(imm_key)),
        _ => return failed(WcStatus::LocQpOpErr),
    };
    let mut wr = SendWr::new(wr_id, op);
    wr.flags = send_flags(flags);
    if matches!(wr.op, SendOp::RegMr(_) | SendOp::LocalInv(_)) {
        return wr;
    }
    if flags & wqe::FLAG_INL != 0 {
        let Some(data) = w.inline_data() else {
            return failed(WcStatus::LocLenErr);
        };
        wr.inline_data = data;
    } else {
        let n = usize::from(w.num_sge_key());
        let Some(n) = sges(&w, sgl_at(flags), n, sgl) else {
            return failed(WcStatus::LocLenErr);
        };
        wr.sgl = &sgl[..n];
    }
    wr
}

fn send_flags(flags: u16) -> SendFlags {
    SendFlags {
        signaled: flags & wqe::FLAG_SIG != 0,
        solicited: flags & wqe::FLAG_SOL != 0,
        inline: flags & wqe::FLAG_INL != 0,
        fence: flags & wqe::FLAG_FENCE != 0,
    }
}

/// The destination of a UD or GSI send WQE (`None` for a buffer shorter
/// than a WQE).
fn ud_dest(w: &[u8]) -> Option<UdDest> {
    let w = wqe::Packet::new_checked(w).ok()?;
    Some(UdDest {
        ah: AhId(w.ah_id()),
        remote_qpn: Qpn(w.dest_qpn() & 0xff_ffff),
        remote_qkey: w.dest_qkey(),
    })
}

/// Decodes a receive WQE: its id and SGEs (`None` when they do not fit,
/// or the buffer is shorter than a WQE).
pub fn decode_recv(w: &[u8], sgl: &mut [Sge; MAX_SGES]) -> (u64, Option<usize>) {
    let Ok(w) = wqe::Packet::new_checked(w) else {
        return (0, None);
    };
    let n = usize::from(w.num_sge_key());
    (w.wqe_id(), sges(&w, sgl_at(w.flags()), n, sgl))
}

/// Walks a receive ring from `*prod` up to `p_index`, handing each
/// receive WQE to `post` (the core); stops at one it refuses, to be tried
/// again at the next doorbell.
fn walk_receives(
    ring: &super::Ring,
    prod: &mut u32,
    p_index: u16,
    dma: &Dma,
    mut post: impl FnMut(&RecvWr<'_>) -> bool,
) {
    let mut buf = [0u8; MAX_WQE];
    let mut sgl = [Sge::default(); MAX_SGES];
    let mask = ring.depth() - 1;
    let target = u32::from(p_index) & mask;
    let stride = ring.stride().min(MAX_WQE);
    let mut ran = 0;
    while *prod & mask != target && ran < ring.depth() {
        let w = &mut buf[..stride.max(wqe::MIN_LEN)];
        if dma.read(ring.slot(*prod), &mut w[..stride]).is_err() {
            break;
        }
        let (wr_id, n) = decode_recv(w, &mut sgl);
        // SGEs past the stride: a receive with none, which a message will
        // overrun (a length error, as on hardware).
        let wr = RecvWr {
            wr_id,
            sgl: &sgl[..n.unwrap_or(0)],
        };
        if !post(&wr) {
            break;
        }
        *prod = prod.wrapping_add(1);
        ran += 1;
    }
}

impl RdmaDev {
    /// A send queue doorbell: every WQE from the device's position up to
    /// `p_index` goes to the core; then the completions are written.
    pub fn sq_doorbell(
        &mut self,
        boot: &Bootstrap,
        dma: &mut Dma,
        qid: u32,
        p_index: u16,
        fire: &mut Vec<u16>,
    ) {
        self.sync(boot, dma);
        let now = Instant::now();
        let mut buf = [0u8; MAX_WQE];
        let mut sgl = [Sge::default(); MAX_SGES];
        if let Some(qp) = self.qps.get(&qid) {
            if let Some(ring) = &qp.sq {
                let mask = ring.depth() - 1;
                let target = u32::from(p_index) & mask;
                let (stride, datagram) = (ring.stride().min(MAX_WQE), qp.qp_type.is_datagram());
                let mut cons = qp.sq_cons;
                let mut ran = 0;
                while cons & mask != target && ran < ring.depth() {
                    let w = &mut buf[..stride.max(wqe::MIN_LEN)];
                    let read = dma.read(ring.slot(cons), &mut w[..stride]).is_ok();
                    let mut wr = if read {
                        let mut wr = decode_send(w, &mut sgl);
                        if datagram {
                            wr.ud = ud_dest(w);
                        }
                        // An injected `dma_fault`: reading the WQE's
                        // payload from guest memory failed; it completes
                        // with a local protection error.
                        let faulted = self.injector.as_ref().is_some_and(|i| {
                            i.check(ernic_core::inject::Event::DmaFault).is_some()
                        });
                        if faulted && wr.decode_error.is_none() {
                            wr.decode_error = Some(WcStatus::LocProtErr);
                        }
                        wr
                    } else {
                        let mut wr = SendWr::new(0, SendOp::Send);
                        wr.decode_error = Some(WcStatus::LocQpOpErr);
                        wr
                    };
                    if let Some(p4) = self.p4.as_mut() {
                        // A full queue is tried again at the next doorbell:
                        // judge (and transform) a WQE only once it is taken.
                        let full = self
                            .engine
                            .query_qp(self.dev, Qpn(qid))
                            .is_ok_and(|i| i.sq_outstanding >= i.caps.max_send_wr);
                        if full {
                            break;
                        }
                        let view = super::p4send::View {
                            engine: &self.engine,
                            dev: self.dev,
                            qps: &self.qps,
                        };
                        match p4.judge(&view, qid, &wr, dma) {
                            super::p4send::Verdict::Post => {}
                            super::p4send::Verdict::Fail(s) => {
                                let flags = wr.flags;
                                wr = SendWr::new(wr.wr_id, SendOp::Send);
                                wr.flags = flags;
                                wr.decode_error = Some(s);
                            }
                            // The destination holds the result: the WRITE
                            // runs with no payload, to complete in order.
                            super::p4send::Verdict::Transformed => {
                                wr.sgl = &[];
                                wr.inline_data = &[];
                                wr.flags.inline = false;
                            }
                        }
                    }
                    match self.engine.post_send(self.dev, Qpn(qid), &wr, now) {
                        Ok(()) => {}
                        Err(ernic_core::EngineError::QueueFull { .. }) => break,
                        Err(_) => {
                            // Refused as posted (too many SGEs for the
                            // QP, say): it still completes, with an error.
                            let mut bad = SendWr::new(wr.wr_id, SendOp::Send);
                            bad.decode_error = Some(WcStatus::LocQpOpErr);
                            if self
                                .engine
                                .post_send(self.dev, Qpn(qid), &bad, now)
                                .is_err()
                            {
                                break;
                            }
                        }
                    }
                    cons = cons.wrapping_add(1);
                    ran += 1;
                }
                if let Some(qp) = self.qps.get_mut(&qid) {
                    qp.sq_cons = cons;
                }
            }
        }
        self.complete(dma, fire);
    }

    /// A receive queue doorbell: the new receive WQEs go to the core (a
    /// SEND waiting for one runs now).
    pub fn rq_doorbell(
        &mut self,
        boot: &Bootstrap,
        dma: &mut Dma,
        qid: u32,
        p_index: u16,
        fire: &mut Vec<u16>,
    ) {
        self.sync(boot, dma);
        let now = Instant::now();
        let (engine, dev, qp_count) = (&mut self.engine, self.dev, self.qp_count);
        if let Some(srq) = self.srqs.get_mut(&qid) {
            // A shared receive queue (ids above the QP range).
            let core = ernic_core::SrqId(qid - qp_count);
            walk_receives(&srq.ring, &mut srq.prod, p_index, dma, |wr| {
                engine.post_srq_recv(dev, core, wr, now).is_ok()
            });
        } else if let Some(Qp {
            rq: Some(ring),
            rq_prod,
            ..
        }) = self.qps.get_mut(&qid)
        {
            walk_receives(ring, rq_prod, p_index, dma, |wr| {
                engine.post_recv(dev, Qpn(qid), wr, now).is_ok()
            });
        }
        self.complete(dma, fire);
    }

    /// Timers of the core (RNR waits, remote requests), when due.
    pub fn tick(&mut self, boot: &Bootstrap, dma: &mut Dma, fire: &mut Vec<u16>) {
        self.sync(boot, dma);
        self.engine.poll(Instant::now());
        self.complete(dma, fire);
    }

    /// When the core next wants [`tick`](RdmaDev::tick).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.engine.next_deadline(Instant::now())
    }

    /// Writes every completion the core has produced as a CQE.
    pub(super) fn complete(&mut self, dma: &mut Dma, fire: &mut Vec<u16>) {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.engine.drain_completions(|e| events.push(*e));
        for e in &events {
            self.write_completion(e.cq.0, &e.completion, dma, fire);
        }
        self.events = events;
    }

    fn write_completion(&mut self, cqid: u32, c: &Completion, dma: &mut Dma, fire: &mut Vec<u16>) {
        let qid = c.qpn.0;
        let Some(qp) = self.qps.get_mut(&qid) else {
            return;
        };
        let mut b = [0u8; cqe::LEN];
        let recv = matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm);
        let flushed = c.status == WcStatus::WrFlushErr;
        let st = status::from_wc(c.status);
        let mut qtf = qid << cqe::QID_SHIFT;
        if c.status != WcStatus::Success {
            qtf |= cqe::ERROR;
        }
        // One flush completion per queue tells the driver to flush the rest.
        if flushed {
            let done = if recv {
                &mut qp.rq_flushed
            } else {
                &mut qp.sq_flushed
            };
            if *done {
                return;
            }
            *done = true;
        }
        let status_length = if c.status == WcStatus::Success {
            c.byte_len
        } else {
            st
        };
        // A whole CQE's array: no setter can run past it.
        let mut p = cqe::Packet::new_unchecked(&mut b);
        p.set_status_length(status_length);
        if recv {
            qtf |= cqe::TYPE_RECV << cqe::TYPE_SHIFT;
            p.set_recv_wqe_id(c.wr_id);
            let (rop, word) = match (c.opcode, c.imm, c.invalidated) {
                (WcOpcode::RecvRdmaWithImm, imm, _) => (recv_op::RDMA_IMM, imm.unwrap_or(0)),
                (_, Some(imm), _) => (recv_op::SEND_IMM, imm),
                (_, None, Some(k)) => (recv_op::SEND_INV, k.0),
                _ => (recv_op::SEND, 0),
            };
            let src = c.src_qpn.0 & 0xff_ffff;
            let v4 = if c.grh_ipv4 { recv_op::IS_IPV4 } else { 0 };
            p.set_recv_src_qpn_op(rop << recv_op::SHIFT | src | v4);
            // A source MAC made from the sending QP (seed 001).
            p.set_recv_src_mac([0x02, 0, 0, (src >> 16) as u8, (src >> 8) as u8, src as u8]);
            p.set_recv_imm_data_rkey(word);
        } else {
            let local = matches!(c.opcode, WcOpcode::RegMr | WcOpcode::LocalInv);
            let by_msn = qp.qp_type.is_connected() && !local && !flushed;
            if !c.signaled && c.status == WcStatus::Success && by_msn {
                // No CQE for an unsignaled message request that succeeded,
                // as on the hardware: a later MSN covers it, and the
                // driver's CQ is sized for the signaled ones. A request
                // no MSN covers (REG_MR, LOCAL_INV, a datagram) has its
                // own NPG CQE signaled or not: Linux's `ionic_poll_send`
                // retires the send queue in order and waits at such a
                // WQE until its CQE names it (nvme-rdma's unsignaled
                // REG_MR before each capsule's SEND).
                qp.msn = qp.msn.wrapping_add(1);
                return;
            }
            if by_msn {
                qp.msn = qp.msn.wrapping_add(1);
                qtf |= cqe::TYPE_SEND_MSN << cqe::TYPE_SHIFT;
                p.set_send_msg_msn(qp.msn);
            } else {
                qtf |= cqe::TYPE_SEND_NPG << cqe::TYPE_SHIFT;
                p.set_send_npg_wqe_id(c.wr_id);
            }
        }
        self.post_cqe(cqid, &mut b, qtf, dma, fire);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::be16;
    use proptest::prelude::*;

    proptest! {
        // Any bytes as a send or receive WQE of any stride decode without
        // panicking; what does not fit the WQE is refused, never read past.
        #[test]
        fn any_wqe_decodes_or_is_refused(w in proptest::collection::vec(any::<u8>(), 64..=4096)) {
            let mut sgl = [Sge::default(); MAX_SGES];
            let wr = decode_send(&w, &mut sgl);
            prop_assert!(wr.sgl.len() <= MAX_SGES);
            prop_assert!(wr.inline_data.len() <= w.len());
            let n = usize::from(w[wqe::NUM_SGE_KEY]);
            let inline = be16(&w, wqe::FLAGS_BE) & wqe::FLAG_INL != 0;
            if wr.decode_error.is_none() && !inline && !matches!(wr.op, SendOp::RegMr(_) | SendOp::LocalInv(_)) {
                let atomic = matches!(wr.op, SendOp::AtomicCas { .. } | SendOp::AtomicFa { .. });
                prop_assert_eq!(wr.sgl.len(), if atomic { 1 } else { n });
            }
            let (_, got) = decode_recv(&w, &mut sgl);
            if let Some(k) = got {
                prop_assert!(sgl_at(be16(&w, wqe::FLAGS_BE)) + k * wqe::SGE_LEN <= w.len());
            }
        }
    }

    #[test]
    fn a_write_wqe_decodes_as_the_driver_wrote_it() {
        let mut w = [0u8; 128];
        w[..8].copy_from_slice(&7u64.to_le_bytes());
        w[wqe::OP] = op::RDMA_WRITE_IMM;
        w[wqe::NUM_SGE_KEY] = 3;
        w[wqe::FLAGS_BE..wqe::FLAGS_BE + 2]
            .copy_from_slice(&(wqe::FLAG_SIG | wqe::FLAG_SPEC32).to_be_bytes());
        w[wqe::IMM_DATA_KEY_BE..wqe::IMM_DATA_KEY_BE + 4].copy_from_slice(&0xabcdu32.to_be_bytes());
        w[16..20].copy_from_slice(&1u32.to_be_bytes());
        w[20..24].copy_from_slice(&0x2000u32.to_be_bytes());
        w[24..28].copy_from_slice(&0x305u32.to_be_bytes());
        // SPEC32: lengths first, SGEs from the third slot (byte 64) on; a
        // 128-byte stride has room for four: five are refused.
        let mut sgl = [Sge::default(); MAX_SGES];
        w[wqe::NUM_SGE_KEY] = 5;
        assert_eq!(
            decode_send(&w, &mut sgl).decode_error,
            Some(WcStatus::LocLenErr)
        );
        w[wqe::NUM_SGE_KEY] = 3;
        let mut big = [0u8; 256];
        big[..128].copy_from_slice(&w);
        for i in 0..3u64 {
            let o = 64 + 16 * i as usize;
            big[o..o + 8].copy_from_slice(&(0x1000 * (i + 1)).to_be_bytes());
            big[o + 8..o + 12].copy_from_slice(&100u32.to_be_bytes());
            big[o + 12..o + 16].copy_from_slice(&0x105u32.to_be_bytes());
        }
        let wr = decode_send(&big, &mut sgl);
        assert_eq!(wr.wr_id, 7);
        assert!(wr.flags.signaled && wr.decode_error.is_none());
        assert_eq!(
            wr.op,
            SendOp::WriteImm(
                RemoteAddr {
                    addr: 0x1_0000_2000,
                    rkey: Rkey(0x305)
                },
                0xabcd
            )
        );
        assert_eq!(wr.sgl.len(), 3);
        assert_eq!(
            (wr.sgl[2].addr, wr.sgl[2].len, wr.sgl[2].lkey),
            (0x3000, 100, Lkey(0x105))
        );
        // A bad opcode still completes, with an error.
        big[wqe::OP] = 40;
        assert_eq!(
            decode_send(&big, &mut sgl).decode_error,
            Some(WcStatus::LocQpOpErr)
        );
    }
}
