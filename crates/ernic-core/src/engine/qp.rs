//! The QP lifecycle: creating a QP (in RESET, within the device's queue
//! budget), looking it up, its privilege over key 0, the verbs state
//! machine of `modify_qp` (with the flush on ERROR and the clean slate of
//! RESET), and destroying it. QP state itself is in [`crate::qp`]; what runs
//! on its queues is in [`crate::datapath`].

use std::time::Instant;

use super::{Engine, EngineError, GSI_QKEY};
use crate::counters::Counters;
use crate::memory::DmaMemory;
use crate::qp::{Dest, Qp, QpAttr, QpInfo, QpInit, QpState, QpType, RecvQueue, SendQueue};
use crate::types::{DeviceId, Qpn};
use crate::wr::Access;

impl<M: DmaMemory> Engine<M> {
    /// Creates a QP in the RESET state and returns its number.
    pub fn create_qp(&mut self, dev: DeviceId, init: &QpInit) -> Result<Qpn, EngineError> {
        self.check_pd(dev, init.pd)?;
        let c = &self.cfg;
        let caps = init.caps;
        self.check_size("send queue depth", caps.max_send_wr, c.max_qp_wr)?;
        self.check_size("send SGE count", caps.max_send_sge, c.max_sge)?;
        if caps.max_inline_data > c.max_inline {
            return Err(EngineError::BadSize {
                what: "inline data size",
                value: caps.max_inline_data.into(),
                max: c.max_inline.into(),
            });
        }
        let d = self.dev(dev)?;
        for cq in [init.send_cq, init.recv_cq] {
            d.cqs.get(cq.0).ok_or(EngineError::NoCq(cq))?;
        }
        let rq = match init.srq {
            Some(srq) => {
                let s = d.srqs.get(srq.0).ok_or(EngineError::NoSrq(srq))?;
                if s.pd != init.pd {
                    return Err(EngineError::InUse {
                        what: "SRQ of another protection domain",
                    });
                }
                RecvQueue::new(1, 0)
            }
            None => {
                self.check_size("receive queue depth", caps.max_recv_wr, c.max_qp_wr)?;
                self.check_size("receive SGE count", caps.max_recv_sge, c.max_sge)?;
                RecvQueue::new(caps.max_recv_wr, caps.max_recv_sge)
            }
        };
        let qpn = match (init.qp_type, init.qpn) {
            (QpType::Gsi, _) => Some(Qpn::GSI),
            (_, Some(q)) if q.0 < 2 => {
                return Err(EngineError::IdUnavailable {
                    what: "queue pair (0 and 1 are reserved)",
                    id: q.0,
                });
            }
            (_, q) => q,
        };
        let cost = caps.engine_bytes(init.srq.is_some());
        self.charge(dev, "a queue pair's queues", cost)?;
        self.incarnations += 1;
        let qp = Qp {
            qpn: Qpn(0),
            incarnation: self.incarnations,
            qp_type: init.qp_type,
            state: QpState::Reset,
            pd: init.pd,
            privileged: false,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            srq: init.srq,
            caps,
            sq_sig_all: init.sq_sig_all,
            access: Access::NONE,
            qkey: (init.qp_type == QpType::Gsi).then_some(GSI_QKEY),
            dest: None,
            path_mtu: 4096,
            rq_psn: 0,
            sq_psn: 0,
            sq: SendQueue::new(caps.max_send_wr, caps.max_send_sge, caps.max_inline_data),
            rq,
            counters: Counters::default(),
            rnr_since: None,
            rnr_retry: None,
            min_rnr_timer: 0,
            open_recv: None,
            held: Default::default(),
        };
        let d = self.dev_mut(dev)?;
        let made = match qpn {
            Some(q) => d.qps.insert_at(q.0, qp).map(|()| q),
            None => d.qps.insert(qp).map(Qpn),
        };
        let qpn = match made {
            Ok(q) => q,
            Err(e) => {
                d.queue_bytes -= cost;
                return Err(e);
            }
        };
        d.qps.get_mut(qpn.0).expect("just inserted").qpn = qpn;
        Ok(qpn)
    }

    pub(crate) fn qp(&self, dev: DeviceId, qpn: Qpn) -> Result<&Qp, EngineError> {
        self.dev(dev)?.qps.get(qpn.0).ok_or(EngineError::NoQp(qpn))
    }

    pub(crate) fn qp_mut(&mut self, dev: DeviceId, qpn: Qpn) -> Result<&mut Qp, EngineError> {
        self.dev_mut(dev)?
            .qps
            .get_mut(qpn.0)
            .ok_or(EngineError::NoQp(qpn))
    }

    /// A snapshot of the QP's attributes.
    pub fn query_qp(&self, dev: DeviceId, qpn: Qpn) -> Result<QpInfo, EngineError> {
        Ok(self.qp(dev, qpn)?.info())
    }

    /// Makes QP `qpn` privileged or not: whether its own SGEs (send,
    /// receive, an atomic's result, a READ's destination) may name key 0,
    /// the reserved DMA key, whose address is a bus address checked against
    /// no MR and no PD. A QP starts unprivileged; with
    /// [`EngineConfig::allow_reserved_lkey`] every QP may. (The ionic
    /// device's `IONIC_QPF_PRIVILEGED`, which Linux's driver sets on the QPs
    /// of kernel PDs only.)
    ///
    /// [`EngineConfig::allow_reserved_lkey`]: super::EngineConfig::allow_reserved_lkey
    pub fn set_qp_privileged(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        privileged: bool,
    ) -> Result<(), EngineError> {
        self.qp_mut(dev, qpn)?.privileged = privileged;
        Ok(())
    }

    /// Whether `qp`'s own SGEs may name key 0.
    pub(crate) fn dma_key(&self, qp: &Qp) -> bool {
        self.cfg.allow_reserved_lkey || qp.privileged
    }

    /// The QP's incarnation: a number unique to this creation of the QP, so a
    /// later QP with the same number is told apart.
    pub fn qp_incarnation(&self, dev: DeviceId, qpn: Qpn) -> Result<u64, EngineError> {
        Ok(self.qp(dev, qpn)?.incarnation)
    }

    /// Destroys a QP. Its outstanding work is dropped without completions;
    /// what it still has queued for other nodes goes out (a consumer may
    /// destroy a QP right after an unsignaled WRITE, counting on it), but
    /// answers to it are ignored.
    pub fn destroy_qp(&mut self, dev: DeviceId, qpn: Qpn) -> Result<(), EngineError> {
        self.qp(dev, qpn)?;
        self.drop_held(dev, qpn);
        self.forget_pending(dev, qpn);
        let d = self.dev_mut(dev)?;
        let qp = d.qps.remove(qpn.0).ok_or(EngineError::NoQp(qpn))?;
        d.queue_bytes -= qp.caps.engine_bytes(qp.srq.is_some());
        self.stalled.retain(|w| *w != (dev, qpn));
        Ok(())
    }

    /// Changes a QP's attributes and state. On failure nothing changes.
    pub fn modify_qp(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        attr: &QpAttr,
        now: Instant,
    ) -> Result<(), EngineError> {
        let enforce = self.cfg.enforce_qp_state;
        let qp = self.qp(dev, qpn)?;
        let from = qp.state;
        let to = attr.state.unwrap_or(from);
        if enforce && attr.state.is_some() && !from.can_move_to(to) {
            return Err(EngineError::BadTransition { qpn, from, to });
        }
        if let Some(a) = attr.access {
            if !a.is_consistent() {
                return Err(EngineError::BadAccess(a));
            }
        }
        let mut dest = qp.dest;
        if let Some((gid, dqpn)) = attr.dest {
            let route = self.route_of(&gid).ok_or(EngineError::NoRoute(gid))?;
            dest = Some(Dest {
                gid,
                qpn: dqpn,
                route,
            });
        }
        if enforce
            && to == QpState::Rtr
            && from != QpState::Rtr
            && qp.qp_type.is_connected()
            && dest.is_none()
        {
            return Err(EngineError::MissingAttr {
                qpn,
                to,
                attr: "a destination GID and QP number",
            });
        }
        if enforce
            && to == QpState::Init
            && from == QpState::Reset
            && qp.qp_type == QpType::Ud
            && attr.qkey.is_none()
        {
            return Err(EngineError::MissingAttr {
                qpn,
                to,
                attr: "a Q_Key",
            });
        }
        let is_gsi = qp.qp_type == QpType::Gsi;
        let qp = self.qp_mut(dev, qpn)?;
        qp.dest = dest;
        if let Some(a) = attr.access {
            qp.access = a;
        }
        if let Some(k) = attr.qkey {
            // The GSI QP's key is fixed.
            if !is_gsi {
                qp.qkey = Some(k);
            }
        }
        if let Some(m) = attr.path_mtu {
            qp.path_mtu = m;
        }
        if let Some(p) = attr.rq_psn {
            qp.rq_psn = p;
        }
        if let Some(p) = attr.sq_psn {
            qp.sq_psn = p;
        }
        if let Some(r) = attr.rnr_retry {
            qp.rnr_retry = Some(r.min(crate::rnr::RETRY_FOREVER));
        }
        if let Some(t) = attr.min_rnr_timer {
            qp.min_rnr_timer = t & 0x1f;
        }
        qp.state = to;
        match to {
            QpState::Err if from != QpState::Err => self.flush_qp(dev, qpn),
            QpState::Reset => {
                self.drop_held(dev, qpn);
                self.forget_pending(dev, qpn);
                let qp = self.qp_mut(dev, qpn)?;
                qp.sq.head = qp.sq.tail;
                qp.sq.exec = qp.sq.tail;
                qp.rq.head = qp.rq.tail;
                qp.rnr_since = None;
                qp.dest = None;
                qp.open_recv = None;
                self.stalled.retain(|w| *w != (dev, qpn));
            }
            QpState::Rts => self.progress_sq(dev, qpn, now),
            _ => {}
        }
        Ok(())
    }
}
