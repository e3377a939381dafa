//! The RDMA admin queue: its doorbell walks the ring (`fw::admin_wqe`,
//! commands of up to four strides), runs each command, and answers it
//! with an admin CQE (`fw::admin_cqe`); the command dispatch and the
//! statistics commands live here, the object commands in `cq.rs`,
//! `qp.rs`, `mr.rs`, `ah.rs` and `srq.rs`.

use ernic_core::{AhId, Qpn};
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_cqe, admin_op, admin_status as st, admin_wqe, cqe};

/// The status an injected admin fault completes with: BAD_STATE, what the
/// firmware answers a command it cannot serve in its present state.
pub const INJECTED_STATUS: u32 = st::BAD_STATE;
use crate::limits::Owner;

use crate::bootstrap::Bootstrap;
use crate::bytes::le32;

use super::{MAX_ADMIN_STRIDES, RdmaDev};

impl RdmaDev {
    /// An admin queue's doorbell: runs its commands up to `p_index`,
    /// writing a completion for each, then the event and interrupt its CQ
    /// is armed for. Vectors to signal go to `fire`.
    pub fn aq_doorbell(
        &mut self,
        boot: &Bootstrap,
        dma: &mut Dma,
        qid: u32,
        p_index: u16,
        fire: &mut Vec<u16>,
    ) {
        self.sync(boot, dma);
        let Some(at) = self.aqs.iter().position(|a| a.qid == qid) else {
            return;
        };
        let depth = self.aqs[at].ring.depth();
        let target = u32::from(p_index) & (depth - 1);
        let mut cmd = [0u8; MAX_ADMIN_STRIDES * admin_wqe::STRIDE];
        // At most one pass round the ring per doorbell.
        let mut ran = 0;
        while self.aqs[at].cons & (depth - 1) != target && ran < depth {
            let aq = &self.aqs[at];
            let index = aq.cons & (depth - 1);
            let mut first = [0u8; admin_wqe::STRIDE];
            if dma.read(aq.ring.slot(index), &mut first).is_err() {
                // An unreadable ring: stop; the driver times the command out.
                return;
            }
            // One whole stride's array: the header's getters cannot fail.
            let header = admin_wqe::Packet::new_unchecked(&first);
            let op = header.op();
            let len = usize::from(header.len());
            let strides = header.strides();
            let status = if strides > MAX_ADMIN_STRIDES || strides as u32 > depth - ran {
                st::MSG_TOO_BIG
            } else {
                // The command: the first stride after its header, then
                // whole strides.
                cmd.fill(0);
                cmd[..admin_wqe::STRIDE - admin_wqe::HDR_LEN].copy_from_slice(header.cmd());
                let mut ok = true;
                for s in 1..strides {
                    let from = admin_wqe::STRIDE - admin_wqe::HDR_LEN + (s - 1) * admin_wqe::STRIDE;
                    let slot = self.aqs[at].ring.slot(index + s as u32);
                    ok &= dma
                        .read(slot, &mut cmd[from..from + admin_wqe::STRIDE])
                        .is_ok();
                }
                if ok {
                    self.command(op, &cmd[..len.min(cmd.len())], dma)
                } else {
                    st::BAD_ATTR
                }
            };
            self.tally(op, status);
            if status != st::OK {
                tracing::debug!(
                    opcode = op,
                    status,
                    why = %self.why,
                    "RDMA admin command {op} refused with status {status}{}{}",
                    if self.why.is_empty() { "" } else { ": " },
                    self.why
                );
            }
            self.why.clear();
            let aq = &self.aqs[at];
            let (aqid, cqid) = (aq.qid, aq.cq);
            let mut c = [0u8; cqe::LEN];
            // A whole CQE's array: no setter can run past it.
            let mut p = admin_cqe::Packet::new_unchecked(&mut c);
            p.set_cmd_idx(index as u16);
            p.set_cmd_op(op);
            p.set_result(self.result);
            self.result = [0; 2];
            p.set_status(status);
            let qtf = admin_cqe::qid_type_flags(aqid, status != st::OK);
            self.post_cqe(cqid, &mut c, qtf, dma, fire);
            let strides = strides.min((depth - ran) as usize) as u32;
            self.aqs[at].cons = self.aqs[at].cons.wrapping_add(strides);
            ran += strides;
        }
    }

    /// Runs one admin command; answers its status.
    pub(super) fn command(&mut self, op: u8, c: &[u8], dma: &mut Dma) -> u32 {
        // Injected faults: `admin_err[=OPCODE]` fails any command (of that
        // opcode), `stats_vals` the two value reads; a failed command
        // changes nothing and the device goes on serving.
        if let Some(inj) = &self.injector {
            let stats = matches!(op, admin_op::STATS_VALS | admin_op::QP_STATS_VALS);
            if inj.check_admin(op).is_some()
                || (stats && inj.check(ernic_core::inject::Event::StatsVals).is_some())
            {
                self.why.push_str("an injected fault");
                return INJECTED_STATUS;
            }
        }
        let need = match op {
            admin_op::CREATE_CQ => fw::create_cq::LEN,
            admin_op::CREATE_QP => fw::create_qp::LEN,
            admin_op::MODIFY_QP => fw::mod_qp::LEN,
            admin_op::QUERY_QP => fw::query_qp::LEN,
            admin_op::CREATE_MR => fw::create_mr::LEN,
            admin_op::CREATE_AH => fw::create_ah::LEN,
            fw::srq_op::CREATE_SRQ => fw::srq::CREATE_LEN,
            fw::srq_op::MODIFY_SRQ => fw::srq::MODIFY_LEN,
            fw::srq_op::QUERY_SRQ | fw::srq_op::DESTROY_SRQ => 4,
            admin_op::STATS_HDRS
            | admin_op::STATS_VALS
            | admin_op::QP_STATS_HDRS
            | admin_op::QP_STATS_VALS => fw::stats_hdr::LEN,
            admin_op::DESTROY_CQ
            | admin_op::DESTROY_QP
            | admin_op::DESTROY_MR
            | admin_op::DESTROY_AH => 4,
            _ => 0,
        };
        if c.len() < need {
            return st::BAD_ATTR;
        }
        match op {
            admin_op::QUERY_QP => self.query_qp(c, dma),
            fw::srq_op::CREATE_SRQ => {
                // At least `srq::CREATE_LEN` bytes: checked above.
                let pd_id = fw::srq::create::Packet::new_unchecked(c).pd_id();
                self.in_pd(pd_id, |d, pd| d.create_srq(c, dma, pd))
            }
            fw::srq_op::MODIFY_SRQ | fw::srq_op::QUERY_SRQ | fw::srq_op::DESTROY_SRQ => {
                self.srq_command(op, c)
            }
            admin_op::STATS_HDRS | admin_op::QP_STATS_HDRS => self.stats(c, dma, false, op),
            admin_op::STATS_VALS | admin_op::QP_STATS_VALS => self.stats(c, dma, true, op),
            admin_op::NOOP | admin_op::DEBUG | admin_op::MODIFY_DCQCN | admin_op::QUERY_AH => {
                st::OK
            }
            admin_op::CREATE_CQ => self.create_cq(c, dma),
            admin_op::DESTROY_CQ => self.destroy_cq(le32(c, 0)),
            admin_op::CREATE_QP => {
                // At least `create_qp::LEN` bytes: checked above.
                let pd_id = fw::create_qp::Packet::new_unchecked(c).pd_id();
                self.in_pd(pd_id, |d, pd| d.create_qp(c, dma, pd))
            }
            admin_op::MODIFY_QP => self.modify_qp(c, dma),
            admin_op::DESTROY_QP => {
                let id = le32(c, 0);
                let r = self.engine.destroy_qp(self.dev, Qpn(id));
                self.destroyed(r, |d| {
                    d.ptes.release(Owner::Qp(id));
                    d.qps.remove(&id).is_some()
                })
            }
            admin_op::CREATE_MR => {
                // At least `create_mr::LEN` bytes: checked above.
                let pd_id = fw::create_mr::Packet::new_unchecked(c).pd_id();
                self.in_pd(pd_id, |d, pd| d.create_mr(c, dma, pd))
            }
            admin_op::DESTROY_MR => {
                let id = le32(c, 0);
                let r = self.engine.dereg_mr(self.dev, id);
                self.destroyed(r, |d| {
                    d.ptes.release(Owner::Mr(id >> 8));
                    d.mrs.remove(&id).is_some()
                })
            }
            admin_op::CREATE_AH => {
                // At least `create_ah::LEN` bytes: checked above.
                let pd_id = fw::create_ah::Packet::new_unchecked(c).pd_id();
                self.in_pd(pd_id, |d, pd| d.create_ah(c, dma, pd))
            }
            admin_op::DESTROY_AH => {
                let id = le32(c, 0);
                let r = self.engine.destroy_ah(self.dev, AhId(id));
                self.destroyed(r, |d| d.ahs.remove(&id).is_some())
            }
            _ => st::BAD_CMD,
        }
    }

    /// STATS_HDRS / QP_STATS_HDRS: the counters' names as `struct
    /// ionic_v1_stat` entries (type LE64, the value's offset; a NONE entry
    /// ends the list); STATS_VALS / QP_STATS_VALS: the values, 8 bytes
    /// each at those offsets. The device's counters, or QP `id_ver`'s
    /// (QP_STATS_VALS); at most `length` bytes are written.
    pub(super) fn stats(&mut self, c: &[u8], dma: &mut Dma, vals: bool, op: u8) -> u32 {
        use ernic_core::Counter;
        let Ok(c) = fw::stats_hdr::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        // The names are the same for every QP: only the values name one.
        let qp = op == admin_op::QP_STATS_VALS;
        let counters = if qp {
            let id = c.id_ver();
            match self.engine.qp_counters(self.dev, Qpn(id)) {
                Ok(k) => k.clone(),
                Err(e) => return self.refuse(st::BAD_INDEX, e),
            }
        } else {
            match self.engine.device_counters(self.dev) {
                Ok(k) => k.clone(),
                Err(e) => return self.refuse(st::BAD_INDEX, e),
            }
        };
        let len = (c.length() as usize).min(64 << 10);
        let mut out = Vec::with_capacity(len);
        if vals {
            for k in Counter::ALL {
                out.extend_from_slice(&counters.get(k).to_le_bytes());
            }
        } else {
            for (i, k) in Counter::ALL.iter().enumerate() {
                let type_off = fw::stat::TYPE_LE64 << fw::stat::TYPE_SHIFT | (8 * i) as u32;
                out.extend_from_slice(&type_off.to_be_bytes());
                let mut name = [0u8; fw::stat::NAME_LEN];
                let n = k.name().len().min(fw::stat::NAME_LEN - 1);
                name[..n].copy_from_slice(&k.name().as_bytes()[..n]);
                out.extend_from_slice(&name);
            }
            // The end: an entry of type NONE.
            out.extend_from_slice(&[0u8; 4 + fw::stat::NAME_LEN]);
        }
        out.truncate(len);
        if dma.write(c.dma_addr(), &out).is_err() {
            return self.refuse(st::BAD_ATTR, "the stats buffer is not in guest memory");
        }
        st::OK
    }
}
