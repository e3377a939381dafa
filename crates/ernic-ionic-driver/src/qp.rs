//! Queue pairs: CREATE_QP (RC, UD, with an SRQ), MODIFY_QP and the
//! connection helpers built on it, QUERY_QP, the QP counters, and
//! DESTROY_QP.

use std::collections::VecDeque;

use ernic_core::{
    Access, Counter, Counters, Dest, DeviceId, Gid, QpAttr, QpCaps, QpInfo, QpState, QpType, Qpn,
    Route,
};
use ernic_ionic::bytes::be32;
use ernic_ionic::doorbell::PAGE;
use ernic_ionic::fw::{self, admin_op, wqe};

use crate::{Cq, Driver, Error, Pd, Qp, QpBook, QpSpec, Srq, ipv4_template};

impl Driver {
    /// Creates an RC QP on `cq` (sends and receives) with 64-byte WQEs, in
    /// the driver's own PD.
    pub fn create_qp(&mut self, cq: &Cq, depth_log2: u8) -> Result<Qp, Error> {
        self.create_qp_in(self.pd, cq, depth_log2)
    }

    /// As [`create_qp`](Driver::create_qp), in `pd`.
    pub fn create_qp_in(&mut self, pd: Pd, cq: &Cq, depth_log2: u8) -> Result<Qp, Error> {
        self.create_qp_with(&QpSpec {
            pd,
            qp_type: QpType::Rc,
            send_cq: cq,
            recv_cq: cq,
            srq: None,
            caps: caps_of_depth(depth_log2),
        })
    }

    /// Creates a datagram QP on `cq` in the driver's own PD: UD, or with
    /// `gsi` the GSI QP (QP 1), and makes it ready (INIT with `qkey`, RTR,
    /// RTS).
    pub fn create_ud_qp(
        &mut self,
        cq: &Cq,
        depth_log2: u8,
        gsi: bool,
        qkey: u32,
    ) -> Result<Qp, Error> {
        self.create_ud_qp_in(self.pd, cq, depth_log2, gsi, qkey)
    }

    /// As [`create_ud_qp`](Driver::create_ud_qp), in `pd`.
    pub fn create_ud_qp_in(
        &mut self,
        pd: Pd,
        cq: &Cq,
        depth_log2: u8,
        gsi: bool,
        qkey: u32,
    ) -> Result<Qp, Error> {
        let qp = self.create_qp_with(&QpSpec {
            pd,
            qp_type: if gsi { QpType::Gsi } else { QpType::Ud },
            send_cq: cq,
            recv_cq: cq,
            srq: None,
            caps: caps_of_depth(depth_log2),
        })?;
        for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
            self.modify_qp(
                &qp,
                &QpAttr {
                    state: Some(state),
                    qkey: (state == QpState::Init).then_some(qkey),
                    ..QpAttr::default()
                },
            )?;
        }
        Ok(qp)
    }

    /// As [`create_qp`](Driver::create_qp), its receives drawn from `srq`.
    pub fn create_qp_with_srq(&mut self, cq: &Cq, depth_log2: u8, srq: &Srq) -> Result<Qp, Error> {
        self.create_qp_with(&QpSpec {
            pd: srq.pd,
            qp_type: QpType::Rc,
            send_cq: cq,
            recv_cq: cq,
            srq: Some(srq),
            caps: caps_of_depth(depth_log2),
        })
    }

    /// Creates a QP in the RESET state as `spec` describes: rings sized
    /// for its caps (WQEs of 64 bytes, or larger for more SGEs or inline
    /// data), and a shared doorbell page of its own when one is left.
    pub fn create_qp_with(&mut self, spec: &QpSpec<'_>) -> Result<Qp, Error> {
        let c = spec.caps;
        let depth_log2 = |n: u32| -> Result<u8, Error> {
            let d = n.saturating_add(1).max(4).checked_next_power_of_two();
            match d {
                Some(d) if d <= 1 << 16 => Ok(d.trailing_zeros() as u8),
                _ => Err(Error::Unsupported("a queue deeper than 65536")),
            }
        };
        let stride_log2 = |body: usize| -> Result<u8, Error> {
            let s = (wqe::PLD + body).max(64).next_power_of_two();
            if s > 4096 {
                return Err(Error::Unsupported("WQEs over 4096 bytes"));
            }
            Ok(s.trailing_zeros() as u8)
        };
        let sq_body =
            (c.max_send_sge.max(1) as usize * wqe::SGE_LEN).max(c.max_inline_data as usize);
        let rq_body = c.max_recv_sge.max(1) as usize * wqe::SGE_LEN;
        let qpt = match spec.qp_type {
            QpType::Rc => fw::qpt::RC,
            QpType::Uc => fw::qpt::UC,
            QpType::Ud | QpType::Gsi => fw::qpt::UD,
        };
        let gsi = spec.qp_type == QpType::Gsi;
        let id = if gsi { fw::GSI_QPID } else { self.next_qp };
        if self.qps.contains_key(&id) {
            return Err(Error::Unsupported("the GSI QP exists already"));
        }
        let sq = self.ring(depth_log2(c.max_send_wr)?, stride_log2(sq_body)?)?;
        let rq = match spec.srq {
            Some(_) => None,
            None => match depth_log2(c.max_recv_wr).and_then(|d| Ok((d, stride_log2(rq_body)?))) {
                Ok((d, st)) => match self.ring(d, st) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        self.free_ring(&sq);
                        return Err(e);
                    }
                },
                Err(e) => {
                    self.free_ring(&sq);
                    return Err(e);
                }
            },
        };
        use fw::create_qp as f;
        let mut b = [0u8; f::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = f::Packet::new_unchecked(&mut b);
        p.set_pd_id(spec.pd.0);
        // As `ionic_create_qp_cmd`: privileged if its PD is.
        let privileged = self.is_privileged(spec.pd);
        let priv_flags = if privileged { fw::qpf::PRIVILEGED } else { 0 };
        p.set_priv_flags(u32::from(priv_flags));
        p.set_sq_cq_id(spec.send_cq.id);
        p.set_rq_cq_id(spec.recv_cq.id);
        p.set_sq_depth_log2(sq.depth_log2);
        p.set_sq_stride_log2(sq.stride_log2);
        p.set_sq_map_count(1);
        p.set_sq_dma_addr(sq.gpa());
        if let Some(r) = &rq {
            // (None: no RQ ring of its own.)
            p.set_rq_depth_log2(r.depth_log2);
            p.set_rq_stride_log2(r.stride_log2);
            p.set_rq_map_count(1);
            p.set_rq_dma_addr(r.gpa());
        }
        let srq_id = spec.srq.map_or(u32::MAX, |s| s.id);
        p.set_rq_tbl_index_srq_id(srq_id);
        p.set_id_ver(id);
        p.set_type_state(qpt);
        if let Err(e) = self.admin(admin_op::CREATE_QP, &b) {
            self.free_ring(&sq);
            if let Some(r) = &rq {
                self.free_ring(r);
            }
            return Err(e);
        }
        if !gsi {
            self.next_qp += 1;
        }
        // A doorbell page of its own in the shared area (one per QP, so no
        // two queues of a type share a word); trapped when none is left.
        let db = self.take_page();
        let caps = QpCaps {
            max_send_wr: sq.depth() - 1,
            max_recv_wr: rq.map_or(0, |r| r.depth() - 1),
            max_send_sge: ((sq.stride() - wqe::PLD) / wqe::SGE_LEN) as u32,
            max_recv_sge: rq.map_or(0, |r| ((r.stride() - wqe::PLD) / wqe::SGE_LEN) as u32),
            max_inline_data: (sq.stride() - wqe::PLD) as u32,
        };
        self.qps.insert(
            id,
            QpBook {
                sq: VecDeque::with_capacity(sq.depth() as usize),
                msn_prod: 0,
                rq: VecDeque::with_capacity(rq.map_or(0, |r| r.depth() as usize)),
                srq: spec.srq.is_some(),
                ud: qpt == fw::qpt::UD,
                privileged,
                caps,
                dest: None,
            },
        );
        Ok(Qp {
            id,
            qp_type: spec.qp_type,
            sq,
            rq,
            sq_prod: 0,
            rq_prod: 0,
            db,
        })
    }

    /// The sizes `qp` was created with (depths and SGE counts as the rings
    /// allow, which may exceed what was asked).
    pub fn qp_caps(&self, qp: &Qp) -> QpCaps {
        self.qps.get(&qp.id).map_or(QpCaps::default(), |b| b.caps)
    }

    /// Destroys a QP.
    pub fn destroy_qp(&mut self, qp: Qp) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_QP, &qp.id.to_le_bytes())?;
        self.qps.remove(&qp.id);
        self.give_page(qp.db);
        self.free_ring(&qp.sq);
        if let Some(r) = &qp.rq {
            self.free_ring(r);
        }
        Ok(())
    }

    /// The GID this driver's QPs are known by (an IPv4-mapped one;
    /// `::ffff:10.0.0.1` unless set). With the server on a mesh it must be
    /// one of the guest GIDs the server was given.
    pub fn set_gid(&mut self, gid: Gid) -> Result<(), Error> {
        if gid.to_ipv4().is_none() {
            return Err(Error::Unsupported("the driver's GID must be IPv4-mapped"));
        }
        self.gid = gid;
        Ok(())
    }

    /// Moves `qp` through INIT, RTR (to `peer` at this driver's GID) and
    /// RTS, granting the peer every remote right.
    pub fn connect(&mut self, qp: &Qp, peer: Qpn) -> Result<(), Error> {
        let gid = self.gid;
        self.connect_to(qp, gid, peer)
    }

    /// As [`connect`](Driver::connect), to QP `peer` at `peer_gid` (a QP of
    /// another server's guest, over the mesh).
    pub fn connect_to(&mut self, qp: &Qp, peer_gid: Gid, peer: Qpn) -> Result<(), Error> {
        let rights = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
        for (state, access, dest) in [
            (QpState::Init, Some(rights), None),
            (QpState::Rtr, None, Some((peer_gid, peer))),
            (QpState::Rts, None, None),
        ] {
            self.modify_qp(
                qp,
                &QpAttr {
                    state: Some(state),
                    access,
                    dest,
                    path_mtu: dest.map(|_| 4096),
                    ..QpAttr::default()
                },
            )?;
        }
        Ok(())
    }

    /// Changes `qp`'s attributes and state through MODIFY_QP, as the
    /// kernel's `ionic_modify_qp` does: a destination becomes a RoCE v2
    /// IPv4 header template from this driver's GID to it.
    pub fn modify_qp(&mut self, qp: &Qp, a: &QpAttr) -> Result<(), Error> {
        use fw::{attr, mod_qp as f};
        let mut b = [0u8; f::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = f::Packet::new_unchecked(&mut b);
        let mut mask = 0u32;
        if let Some(state) = a.state {
            mask |= attr::STATE;
            p.set_type_state(fw::qps::from_state(state));
        }
        // As `ionic_modify_qp_cmd`: the flags carry the QP's privilege
        // whatever the mask says.
        let mut flags = match self.qps.get(&qp.id) {
            Some(book) if book.privileged => fw::qpf::PRIVILEGED,
            _ => 0,
        };
        if let Some(access) = a.access {
            mask |= attr::ACCESS_FLAGS;
            flags |= fw::qpf::from_access(access);
        }
        p.set_access_flags(flags);
        if let Some(qkey) = a.qkey {
            mask |= attr::QKEY;
            p.set_qkey_dest_qpn(qkey);
        }
        if let Some(mtu) = a.path_mtu {
            if !mtu.is_power_of_two() || !(256..=4096).contains(&mtu) {
                return Err(Error::Unsupported(
                    "a path MTU of 256, 512, 1024, 2048 or 4096",
                ));
            }
            mask |= attr::PATH_MTU;
            p.set_pmtu(fw::pmtu::from_bytes(mtu));
        }
        if let Some(psn) = a.rq_psn {
            mask |= attr::RQ_PSN;
            p.set_rq_psn(psn);
        }
        if let Some(psn) = a.sq_psn {
            mask |= attr::SQ_PSN;
            p.set_sq_psn(psn);
        }
        let mut hdr = None;
        if let Some((gid, peer)) = a.dest {
            let (Some(src), Some(dst)) = (self.gid.to_ipv4(), gid.to_ipv4()) else {
                return Err(Error::Unsupported("IPv4-mapped GIDs only"));
            };
            let page = self.alloc(PAGE)?;
            let h = ipv4_template(src.octets(), dst.octets());
            self.write(&page, 0, &h);
            mask |= attr::AV | attr::DEST_QPN;
            p.set_qkey_dest_qpn(peer.0);
            p.set_ah_id_len(h.len() as u32);
            p.set_dma_addr(page.addr());
            hdr = Some(page);
        }
        p.set_attr_mask(mask);
        p.set_id_ver(qp.id);
        let r = self.admin(admin_op::MODIFY_QP, &b);
        // The device reads the template during the command.
        if let Some(page) = hdr {
            self.free(page);
        }
        r?;
        if let (Some(dest), Some(book)) = (a.dest, self.qps.get_mut(&qp.id)) {
            book.dest = Some(dest);
        }
        Ok(())
    }

    /// `qp`'s attributes: what QUERY_QP reports (state, rights, path MTU,
    /// PSNs, Q_Key or peer QP), with what the driver knows (type, caps,
    /// the peer's GID, requests and receives outstanding).
    pub fn query_qp(&mut self, qp: &Qp) -> Result<QpInfo, Error> {
        use fw::query_qp as f;
        let bufs = self.alloc(PAGE)?;
        let mut b = [0u8; f::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = f::Packet::new_unchecked(&mut b);
        p.set_sq_dma_addr(bufs.addr());
        p.set_rq_dma_addr(bufs.addr() + 64);
        p.set_id_ver(qp.id);
        let r = self.admin(admin_op::QUERY_QP, &b);
        use fw::query_qp::{rq as rq_answer, sq as sq_answer};
        let (mut sq, mut rq) = ([0u8; sq_answer::LEN], [0u8; rq_answer::LEN]);
        self.read(&bufs, 0, &mut sq);
        self.read(&bufs, 64, &mut rq);
        self.free(bufs);
        r?;
        let book = self
            .qps
            .get(&qp.id)
            .ok_or(Error::Unsupported("no such QP"))?;
        // Whole answers' arrays: the getters cannot run past them.
        let (sq, rq) = (
            sq_answer::Packet::new_unchecked(&sq),
            rq_answer::Packet::new_unchecked(&rq),
        );
        let state = fw::qps::to_state(rq.state_pmtu() >> 4).unwrap_or(QpState::Err);
        let access = fw::qpf::to_access(sq.access_perms_flags());
        let qkey_dest = sq.qkey_dest_qpn();
        let datagram = qp.qp_type.is_datagram();
        Ok(QpInfo {
            qpn: Qpn(qp.id),
            qp_type: qp.qp_type,
            state,
            access,
            qkey: datagram.then_some(qkey_dest),
            // The device says which QP; where it lives it does not say.
            dest: book
                .dest
                .filter(|_| !datagram && matches!(state, QpState::Rtr | QpState::Rts))
                .map(|(gid, qpn)| Dest {
                    gid,
                    qpn,
                    route: Route::Local(DeviceId(0)),
                }),
            path_mtu: fw::pmtu::to_bytes(rq.state_pmtu() & 0xf).unwrap_or(1024),
            rq_psn: sq.rq_psn(),
            sq_psn: rq.sq_psn(),
            caps: book.caps,
            sq_outstanding: book.sq.len() as u32,
            rq_outstanding: book.rq.len() as u32,
        })
    }

    /// The device's counters (STATS_HDRS and STATS_VALS), or with `qp`
    /// that QP's (QP_STATS_VALS), matched to ernic's by name.
    pub fn counters(&mut self, qp: Option<&Qp>) -> Result<Counters, Error> {
        use fw::{stat, stats_hdr as f};
        let n = Counter::ALL.len() + 1;
        let bufs = self.alloc((n * stat::LEN + n * 8) as u64)?;
        let vals_at = (n * stat::LEN) as u64;
        let cmd = |addr: u64, len: usize, id: u32| {
            let mut b = [0u8; f::LEN];
            // A whole command's array: no setter can run past it.
            let mut p = f::Packet::new_unchecked(&mut b);
            p.set_dma_addr(addr);
            p.set_length(len as u32);
            p.set_id_ver(id);
            b
        };
        let (hdrs_op, vals_op, id) = match qp {
            Some(q) => (admin_op::QP_STATS_HDRS, admin_op::QP_STATS_VALS, q.id),
            None => (admin_op::STATS_HDRS, admin_op::STATS_VALS, 0),
        };
        let r = self
            .admin(hdrs_op, &cmd(bufs.addr(), n * stat::LEN, id))
            .and_then(|_| self.admin(vals_op, &cmd(bufs.addr() + vals_at, n * 8, id)));
        let mut raw = vec![0u8; bufs.len as usize];
        self.read(&bufs, 0, &mut raw);
        self.free(bufs);
        r?;
        let mut out = Counters::default();
        for h in raw[..n * stat::LEN].chunks_exact(stat::LEN) {
            let type_off = be32(h, 0);
            if type_off >> stat::TYPE_SHIFT != stat::TYPE_LE64 {
                break;
            }
            let at = vals_at as usize + (type_off & 0xffff) as usize;
            let name = &h[stat::NAME..stat::NAME + stat::NAME_LEN];
            let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
            let (Some(k), Some(v)) = (
                Counter::ALL.iter().find(|k| k.name().as_bytes() == name),
                raw.get(at..at + 8),
            ) else {
                continue;
            };
            out.add(*k, u64::from_le_bytes(v.try_into().expect("8")));
        }
        Ok(out)
    }
}

/// Caps whose rings are `2^depth_log2` 64-byte WQEs deep.
pub(crate) fn caps_of_depth(depth_log2: u8) -> QpCaps {
    let n = (1u32 << depth_log2) - 1;
    QpCaps {
        max_send_wr: n,
        max_recv_wr: n,
        max_send_sge: 2,
        max_recv_sge: 2,
        max_inline_data: 0,
    }
}
