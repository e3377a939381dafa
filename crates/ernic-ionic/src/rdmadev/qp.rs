//! CREATE_QP, MODIFY_QP and QUERY_QP: a QP's rings, its PD and
//! privilege, its SRQ, and its state as the core keeps it.

use std::time::Instant;

use ernic_core::{Access, CqId, PdId, QpAttr, QpCaps, QpInit, QpState, QpType, Qpn};
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_status as st};
use crate::limits::Owner;

use super::{Qp, RdmaDev, Ring};

impl RdmaDev {
    pub(super) fn create_qp(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        let Ok(c) = fw::create_qp::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let id = c.id_ver();
        if self.qps.contains_key(&id) {
            return self.refuse(st::BAD_INDEX, format_args!("QP {id} exists"));
        }
        let qp_type = match (c.type_state() & 0xf, id) {
            (fw::qpt::UD, fw::GSI_QPID) => QpType::Gsi,
            (fw::qpt::UD, _) => QpType::Ud,
            (fw::qpt::RC, _) => QpType::Rc,
            (fw::qpt::UC, _) => QpType::Uc,
            _ => return st::BAD_TYPE,
        };
        let tables = &self.ptes;
        let ring = |dma: &Dma, dma_addr: u64, count: u32, page: u8, depth: u8, stride: u8| {
            if count == 0 && dma_addr == 0 {
                return Ok(None);
            }
            Ring::described(dma, tables, dma_addr, count, page, depth, stride).map(Some)
        };
        let sq = match ring(
            dma,
            c.sq_dma_addr(),
            c.sq_map_count(),
            c.sq_page_size_log2(),
            c.sq_depth_log2(),
            c.sq_stride_log2(),
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        let rq = match ring(
            dma,
            c.rq_dma_addr(),
            c.rq_map_count(),
            c.rq_page_size_log2(),
            c.rq_depth_log2(),
            c.rq_stride_log2(),
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        let (sq_cq, rq_cq) = (c.sq_cq_id(), c.rq_cq_id());
        // No RQ ring and an SRQ named: receives come from it.
        let srq_id = c.rq_tbl_index_srq_id();
        let srq = (rq.is_none() && self.srqs.contains_key(&srq_id))
            .then(|| ernic_core::SrqId(srq_id - self.qp_count));
        // A missing queue still names a CQ in the core; its own stands in.
        let send_cq = if sq.is_some() { sq_cq } else { rq_cq };
        let recv_cq = if rq.is_some() || srq.is_some() {
            rq_cq
        } else {
            sq_cq
        };
        for cq in [send_cq, recv_cq] {
            if !self.cqs.contains_key(&cq) || self.aqs.iter().any(|a| a.cq == cq) {
                return self.refuse(st::BAD_ATTR, format_args!("no CQ {cq} for a QP"));
            }
        }
        // WQE bodies carry SGEs from byte 32 (16 bytes each), or inline data.
        let sges = |r: &Option<Ring>| {
            r.as_ref().map_or(1, |r| {
                ((r.stride().saturating_sub(32)) / 16).clamp(1, ernic_core::MAX_SGE) as u32
            })
        };
        let caps = QpCaps {
            max_send_wr: sq.as_ref().map_or(1, Ring::depth),
            max_recv_wr: rq.as_ref().map_or(1, Ring::depth),
            max_send_sge: sges(&sq),
            max_recv_sge: sges(&rq),
            max_inline_data: sq
                .as_ref()
                .map_or(0, |r| r.stride().saturating_sub(32) as u32)
                .min(self.engine.config().max_inline),
        };
        let init = QpInit {
            qp_type,
            pd,
            send_cq: CqId(send_cq),
            recv_cq: CqId(recv_cq),
            srq,
            caps,
            // Each WQE says whether it is signaled (IONIC_V1_FLAG_SIG).
            sq_sig_all: false,
            qpn: Some(Qpn(id)),
        };
        // Each ring's table fitted alone; both must fit together.
        let ptes = [&sq, &rq]
            .iter()
            .map(|r| r.as_ref().map_or(0, |r| r.ptes))
            .sum::<u32>();
        if let Err(e) = self.ptes.check_free(ptes.into()) {
            return self.refuse(e.status(), e);
        }
        if let Err(e) = self.engine.create_qp(self.dev, &init) {
            return self.refuse(st::BAD_ATTR, e);
        }
        // Key 0 for the QPs the driver marks privileged only (module doc).
        let privileged = c.priv_flags() & u32::from(fw::qpf::PRIVILEGED) != 0;
        self.engine
            .set_qp_privileged(self.dev, Qpn(id), privileged)
            .expect("the QP was just made");
        self.ptes.charge(Owner::Qp(id), ptes);
        self.qps.insert(
            id,
            Qp {
                qp_type,
                pd,
                privileged,
                sq,
                rq,
                sq_cq: send_cq,
                rq_cq: recv_cq,
                sq_cons: 0,
                rq_prod: 0,
                msn: 0,
                sq_flushed: false,
                rq_flushed: false,
            },
        );
        st::OK
    }

    pub(super) fn modify_qp(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        use fw::attr;
        let Ok(c) = fw::mod_qp::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let id = c.id_ver();
        let Ok(info) = self.engine.query_qp(self.dev, Qpn(id)) else {
            return st::BAD_INDEX;
        };
        let mask = c.attr_mask();
        let mut a = QpAttr::default();
        if mask & attr::STATE != 0 {
            match fw::qps::to_state(c.type_state() & 0xf) {
                Some(s) => a.state = Some(s),
                None => return st::BAD_STATE,
            }
        }
        if mask & attr::ACCESS_FLAGS != 0 {
            let fl = c.access_flags();
            a.access = Some(Access::LOCAL_WRITE | fw::qpf::to_access(fl));
        }
        if info.qp_type.is_datagram() && mask & attr::QKEY != 0 {
            a.qkey = Some(c.qkey_dest_qpn());
        }
        if mask & attr::PATH_MTU != 0 {
            match fw::pmtu::to_bytes(c.pmtu()) {
                Some(mtu) => a.path_mtu = Some(mtu),
                None => return st::BAD_ATTR,
            }
        }
        if mask & attr::RQ_PSN != 0 {
            a.rq_psn = Some(c.rq_psn());
        }
        if mask & attr::SQ_PSN != 0 {
            a.sq_psn = Some(c.sq_psn());
        }
        if mask & attr::RNR_RETRY != 0 {
            a.rnr_retry = Some((c.retry() >> 4) & 7);
        }
        if mask & attr::MIN_RNR_TIMER != 0 {
            a.min_rnr_timer = Some(c.rnr_timer() & 0x1f);
        }
        if info.qp_type.is_connected() && mask & attr::AV != 0 {
            // The destination is in the packet header template.
            let Some((_, gid)) = self.template(dma, c.dma_addr(), c.ah_id_len()) else {
                return st::BAD_ATTR;
            };
            a.dest = Some((gid, Qpn(c.qkey_dest_qpn() & 0xff_ffff)));
        }
        match self.engine.modify_qp(self.dev, Qpn(id), &a, Instant::now()) {
            Err(e) => self.refuse(st::BAD_ATTR, e),
            Ok(()) => {
                if let (Some(q), Some(s)) = (self.qps.get_mut(&id), a.state) {
                    if s != QpState::Err {
                        (q.sq_flushed, q.rq_flushed) = (false, false);
                    }
                    if s == QpState::Reset {
                        (q.sq_cons, q.rq_prod, q.msn) = (0, 0, 0);
                    }
                }
                st::OK
            }
        }
    }

    /// QUERY_QP: the QP's state, MTU, PSNs, Q_Key or peer QP and rights
    /// into the driver's two buffers (`struct ionic_v1_admin_query_qp_sq`
    /// and `_rq`); one outstanding READ or atomic each way.
    pub(super) fn query_qp(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        let Ok(c) = fw::query_qp::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let id = c.id_ver();
        let info = match self.engine.query_qp(self.dev, Qpn(id)) {
            Ok(i) => i,
            Err(e) => return self.refuse(st::BAD_INDEX, e),
        };
        let state = fw::qps::from_state(info.state);
        let flags = fw::qpf::from_access(info.access);
        let qkey_dest = if info.qp_type.is_datagram() {
            info.qkey.unwrap_or(0)
        } else {
            info.dest.map_or(0, |d| d.qpn.0)
        };
        use fw::query_qp::{rq as rq_answer, sq as sq_answer};
        // Whole answers' arrays: no setter can run past them.
        let mut sq = [0u8; sq_answer::LEN];
        let mut p = sq_answer::Packet::new_unchecked(&mut sq);
        p.set_access_perms_flags(flags);
        p.set_qkey_dest_qpn(qkey_dest);
        p.set_rq_psn(info.rq_psn);
        let mut rq = [0u8; rq_answer::LEN];
        let mut p = rq_answer::Packet::new_unchecked(&mut rq);
        p.set_state_pmtu(state << 4 | fw::pmtu::from_bytes(info.path_mtu));
        p.set_rrq_depth(1);
        p.set_rsq_depth(1);
        p.set_sq_psn(info.sq_psn);
        p.set_access_perms_flags(flags);
        let ok = dma.write(c.sq_dma_addr(), &sq).is_ok() && dma.write(c.rq_dma_addr(), &rq).is_ok();
        if ok {
            st::OK
        } else {
            self.refuse(st::BAD_ATTR, "the query buffers are not in guest memory")
        }
    }
}
