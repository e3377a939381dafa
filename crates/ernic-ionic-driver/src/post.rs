//! Posting work requests: each send or receive encoded as an
//! `fw::wqe` into its ring (through the same views the device decodes
//! with), and the doorbell that publishes it. No allocation per request.

use ernic_core::{Access, PageSource, Qpn, SendOp, SendWr, Sge};
use ernic_ionic::fw::{self, wqe};
use ernic_ionic::regs::qtype;

use crate::{Buf, Driver, Error, MAX_WQE, Qp, SendMeta, Srq};

impl Driver {
    /// Posts a send request: its WQE into the send ring, then the doorbell.
    /// Every operation of ernic's verbs is expressed: SGEs up to what the
    /// QP's WQEs hold, inline data, datagram destinations, fast
    /// registration of contiguous pages and invalidation.
    pub fn post_send(&mut self, qp: &mut Qp, wr: &SendWr<'_>) -> Result<(), Error> {
        let stride = qp.sq.stride();
        let connected = qp.qp_type.is_connected();
        let book = self
            .qps
            .get_mut(&qp.id)
            .ok_or(Error::Unsupported("no such QP"))?;
        if book.sq.len() as u32 >= qp.sq.depth() - 1 {
            return Err(Error::Full {
                depth: qp.sq.depth(),
            });
        }
        let mut buf = [0u8; MAX_WQE];
        // The QP's stride is at least a WQE's 64 bytes (`create_qp`).
        let mut w = wqe::Packet::new_checked(&mut buf[..stride])
            .map_err(|_| Error::Unsupported("a send stride shorter than a WQE"))?;
        let mut flags = 0u16;
        for (on, bit) in [
            (wr.flags.signaled, wqe::FLAG_SIG),
            (wr.flags.solicited, wqe::FLAG_SOL),
            (wr.flags.fence, wqe::FLAG_FENCE),
        ] {
            if on {
                flags |= bit;
            }
        }
        let mut remote = None;
        let mut key_word = 0u32;
        let mut sge_at = wqe::PLD;
        let mut max_sges = (stride - wqe::PLD) / wqe::SGE_LEN;
        let op = match wr.op {
            SendOp::Send => fw::op::SEND,
            SendOp::SendImm(i) => {
                key_word = i;
                fw::op::SEND_IMM
            }
            SendOp::SendInv(k) => {
                key_word = k.0;
                fw::op::SEND_INV
            }
            SendOp::Write(r) => {
                remote = Some(r);
                fw::op::RDMA_WRITE
            }
            SendOp::WriteImm(r, i) => {
                (remote, key_word) = (Some(r), i);
                fw::op::RDMA_WRITE_IMM
            }
            SendOp::Read(r) => {
                remote = Some(r);
                fw::op::RDMA_READ
            }
            SendOp::AtomicFa { remote: r, add } => {
                remote = Some(r);
                w.set_swap_add(add);
                (sge_at, max_sges) = (wqe::ATOMIC_SGE, 1);
                fw::op::ATOMIC_FA
            }
            SendOp::AtomicCas {
                remote: r,
                compare,
                swap,
            } => {
                remote = Some(r);
                w.set_swap_add(swap);
                w.set_compare(compare);
                (sge_at, max_sges) = (wqe::ATOMIC_SGE, 1);
                fw::op::ATOMIC_CS
            }
            SendOp::RegMr(r) => {
                // Contiguous pages, or a table of 64-bit page addresses as
                // the kernel driver builds one.
                let (dma, count, page_shift, first_offset) = match r.pages {
                    PageSource::Contiguous { dma } => (dma, 1, 12, 0),
                    PageSource::Table {
                        table,
                        count,
                        page_shift,
                        first_offset,
                    } => (table, count, page_shift, first_offset),
                };
                w.set_num_sge_key(r.key.0 as u8);
                w.set_imm_data_key(r.key.0);
                w.set_reg_va(r.iova);
                w.set_reg_length(r.len);
                w.set_reg_dma_addr(dma);
                w.set_reg_map_count(count);
                w.set_reg_offset(u64::from(first_offset));
                w.set_reg_flags(fw::mrf::from_access(r.access));
                w.set_reg_page_size_log2(page_shift);
                fw::op::REG_MR
            }
            SendOp::LocalInv(k) => {
                w.set_imm_data_key(k.0);
                fw::op::LOCAL_INV
            }
        };
        let local = matches!(wr.op, SendOp::RegMr(_) | SendOp::LocalInv(_));
        if let Some(r) = remote {
            if !connected {
                return Err(Error::Unsupported("RDMA and atomics on connected QPs only"));
            }
            w.set_remote_va(r.addr);
            w.set_remote_rkey(r.rkey.0);
        }
        if !connected && !local {
            let Some(ud) = wr.ud else {
                return Err(Error::Unsupported("a datagram send needs a destination"));
            };
            w.set_ah_id(ud.ah.0);
            w.set_dest_qpn(ud.remote_qpn.0);
            w.set_dest_qkey(ud.remote_qkey);
        }
        let mut byte_len = 0u32;
        if !local {
            if !matches!(wr.op, SendOp::AtomicFa { .. } | SendOp::AtomicCas { .. }) {
                w.set_imm_data_key(key_word);
            }
            if wr.flags.inline {
                let data = wr.inline_data;
                let Some(pld) = w.inline_data_mut(data.len()) else {
                    return Err(Error::Unsupported(
                        "more inline data than the QP's WQEs hold",
                    ));
                };
                flags |= wqe::FLAG_INL;
                pld.copy_from_slice(data);
                byte_len = data.len() as u32;
            } else {
                if wr.sgl.len() > max_sges {
                    return Err(Error::Unsupported("more SGEs than the QP's WQEs hold"));
                }
                w.set_num_sge_key(wr.sgl.len() as u8);
                for (i, s) in wr.sgl.iter().enumerate() {
                    // Inside the stride: `max_sges` was counted from it.
                    let fits = w.set_sge(sge_at, i, s);
                    debug_assert!(fits);
                    byte_len = byte_len.wrapping_add(s.len);
                }
            }
            if sge_at == wqe::PLD {
                w.set_length(byte_len);
            }
        }
        let idx = qp.sq_prod;
        w.set_wqe_id(u64::from(idx));
        w.set_op(op);
        w.set_flags(flags);
        let msn = (connected && !local).then(|| {
            book.msn_prod = book.msn_prod.wrapping_add(1);
            book.msn_prod
        });
        book.sq.push_back(SendMeta {
            idx,
            wr_id: wr.wr_id,
            opcode: wr.op.wc_opcode(),
            signaled: wr.flags.signaled,
            msn,
            byte_len,
        });
        self.mem.write(qp.sq.slot(idx), w.into_inner());
        qp.sq_prod = qp.sq_prod.wrapping_add(1);
        let index = qp.sq_prod & (qp.sq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_SQ, qp.id, 0, index)
    }

    /// Posts a datagram SEND of `sge` through `ah` to QP `dest` with
    /// `qkey`; it completes by WQE id.
    pub fn post_send_ud(
        &mut self,
        qp: &mut Qp,
        wr_id: u64,
        ah: u32,
        dest: Qpn,
        qkey: u32,
        sge: Sge,
    ) -> Result<(), Error> {
        let sgl = [sge];
        let mut wr = SendWr::new(wr_id, SendOp::Send).sgl(&sgl);
        wr.ud = Some(ernic_core::UdDest {
            ah: ernic_core::AhId(ah),
            remote_qpn: dest,
            remote_qkey: qkey,
        });
        self.post_send(qp, &wr)
    }

    /// Posts a fast registration: `mr` (from
    /// [`alloc_fast_mr`](Driver::alloc_fast_mr)) gets key byte `variant`
    /// and covers `len` bytes of `buf` at their device address, with every
    /// right. Answers the new key.
    pub fn post_reg_mr(
        &mut self,
        qp: &mut Qp,
        wr_id: u64,
        mr: u32,
        variant: u8,
        buf: &Buf,
        len: u64,
    ) -> Result<u32, Error> {
        let key = mr & !0xff | u32::from(variant);
        let op = SendOp::RegMr(ernic_core::RegMr {
            key: ernic_core::Lkey(key),
            iova: buf.addr(),
            len,
            access: Access::ALL,
            pages: PageSource::Contiguous { dma: buf.addr() },
        });
        self.post_send(qp, &SendWr::new(wr_id, op))?;
        Ok(key)
    }

    /// Posts a local invalidation of `key`.
    pub fn post_local_inv(&mut self, qp: &mut Qp, wr_id: u64, key: u32) -> Result<(), Error> {
        let op = SendOp::LocalInv(ernic_core::Lkey(key));
        self.post_send(qp, &SendWr::new(wr_id, op))
    }

    /// Posts a receive into `sge`.
    pub fn post_recv(&mut self, qp: &mut Qp, wr_id: u64, sge: Sge) -> Result<(), Error> {
        self.post_recv_sgl(qp, wr_id, &[sge])
    }

    /// Posts a receive into several SGEs (as many as the QP's receive WQEs
    /// hold).
    pub fn post_recv_sgl(&mut self, qp: &mut Qp, wr_id: u64, sgl: &[Sge]) -> Result<(), Error> {
        let Some(rq) = qp.rq else {
            return Err(Error::Unsupported("the QP's receives come from an SRQ"));
        };
        let book = self
            .qps
            .get_mut(&qp.id)
            .ok_or(Error::Unsupported("no such QP"))?;
        if book.rq.len() as u32 >= rq.depth() - 1 {
            return Err(Error::Full { depth: rq.depth() });
        }
        let mut buf = [0u8; MAX_WQE];
        let w = &mut buf[..rq.stride()];
        let idx = qp.rq_prod;
        if !recv_wqe(w, u64::from(idx), sgl) {
            return Err(Error::Unsupported(
                "more SGEs than the QP's receive WQEs hold",
            ));
        }
        book.rq.push_back((idx, wr_id));
        self.mem.write(rq.slot(idx), w);
        qp.rq_prod = qp.rq_prod.wrapping_add(1);
        let index = qp.rq_prod & (rq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_RQ, qp.id, 0, index)
    }

    /// Posts a receive on an SRQ; its completion names the QP that took it
    /// and carries `wr_id`.
    pub fn post_srq_recv(&mut self, srq: &mut Srq, wr_id: u64, sge: Sge) -> Result<(), Error> {
        self.post_srq_recv_sgl(srq, wr_id, &[sge])
    }

    /// As [`post_srq_recv`](Driver::post_srq_recv), into several SGEs (as
    /// many as fit the SRQ's 64-byte WQEs: two).
    pub fn post_srq_recv_sgl(
        &mut self,
        srq: &mut Srq,
        wr_id: u64,
        sgl: &[Sge],
    ) -> Result<(), Error> {
        let mut w = [0u8; 64];
        if !recv_wqe(&mut w, wr_id, sgl) {
            return Err(Error::Unsupported("more SGEs than the SRQ's WQEs hold"));
        }
        self.mem.write(srq.ring.slot(srq.prod), &w);
        srq.prod = srq.prod.wrapping_add(1);
        let index = srq.prod & (srq.ring.depth() - 1);
        self.ring_doorbell(srq.db, qtype::RDMA_RQ, srq.id, 0, index)
    }
}

/// Fills a receive WQE: its id and SGEs; `false` when they do not fit.
pub(crate) fn recv_wqe(w: &mut [u8], id: u64, sgl: &[Sge]) -> bool {
    let Ok(mut w) = wqe::Packet::new_checked(w) else {
        return false;
    };
    if !w.holds_sges(wqe::PLD, sgl.len()) {
        return false;
    }
    w.set_wqe_id(id);
    w.set_num_sge_key(sgl.len() as u8);
    for (i, s) in sgl.iter().enumerate() {
        w.set_sge(wqe::PLD, i, s);
    }
    true
}
