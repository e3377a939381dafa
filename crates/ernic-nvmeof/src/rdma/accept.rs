//! Connection requests: what nvmet-rdma checks before it takes a queue
//! (`nvmet_rdma_parse_cm_connect_req`), and the answer. A REQ must name
//! NVMe/RDMA's port through rdma_cm's service id, carry rdma_cm's header
//! and then an `nvme_rdma_cm_req` of record format 1.0 whose queue sizes
//! the target can honour; anything else is rejected with the IB CM reason
//! or the NVMe/RDMA status (`nvme_rdma_cm_rej`) that says why.

use std::time::Instant;

use ernic_cm::conn::{AcceptParams, ConnId, Peer};
use ernic_cm::private_data::{cma, nvme};
use ernic_cm::rej::RejReason;
use ernic_cm::req;
use ernic_verbs::{Gid, Qpn};

use super::queue::Queue;
use super::{MAX_QUEUES, QPN_BASE, RdmaError, RdmaTarget};

/// RDMA READs the target keeps outstanding to a host at once (its
/// initiator depth), as nvmet-rdma bounds it by the device's limit.
const MAX_READS: u8 = 16;

impl RdmaTarget {
    /// A REQ arrived: accept it as an NVMe queue, or reject it.
    pub(super) fn request(
        &mut self,
        now: Instant,
        id: ConnId,
        from: Peer,
        req: &req::Repr,
    ) -> Result<(), RdmaError> {
        match self.check(req) {
            Ok(nvme_req) => self.accept(now, id, from, req, nvme_req),
            Err(Refusal::Cm(reason)) => self.refuse(now, id, reason, &[]),
            Err(Refusal::Nvme(status)) => {
                let mut pd = [0u8; nvme::rej::LEN];
                nvme::rej::Repr { sts: status }
                    .emit(&mut nvme::rej::Packet::new_unchecked(&mut pd[..]));
                self.refuse(now, id, RejReason::ConsumerDefined, &pd)
            }
        }
    }

    fn refuse(
        &mut self,
        now: Instant,
        id: ConnId,
        reason: RejReason,
        private_data: &[u8],
    ) -> Result<(), RdmaError> {
        self.stats.rejected += 1;
        // A REQ the CM has already forgotten needs no answer.
        let _ = self.cm.reject(now, id, reason, &[], private_data);
        Ok(())
    }

    /// What nvmet-rdma checks of a REQ.
    fn check(&self, req: &req::Repr) -> Result<nvme::req::Repr, Refusal> {
        if cma::service_port(req.service_id, cma::RDMA_PS_TCP) != Some(self.cfg.port) {
            return Err(Refusal::Cm(RejReason::InvalidServiceId));
        }
        let pd = &req.private_data[cma::LEN..];
        let p = nvme::req::Packet::new_checked(pd)
            .map_err(|_| Refusal::Nvme(nvme::rej::Status::InvalidLen))?;
        let r = nvme::req::Repr::parse(&p)
            .map_err(|_| Refusal::Nvme(nvme::rej::Status::InvalidRecfmt))?;
        let entries = u32::from(r.hsqsize) + 1;
        if entries < 2 || entries > self.cfg.max_entries {
            return Err(Refusal::Nvme(nvme::rej::Status::InvalidHsqsize));
        }
        if r.hrqsize == 0 {
            return Err(Refusal::Nvme(nvme::rej::Status::InvalidHrqsize));
        }
        if self.queues.len() >= MAX_QUEUES {
            return Err(Refusal::Nvme(nvme::rej::Status::NoResources));
        }
        Ok(r)
    }

    fn accept(
        &mut self,
        now: Instant,
        id: ConnId,
        from: Peer,
        req: &req::Repr,
        r: nvme::req::Repr,
    ) -> Result<(), RdmaError> {
        let Some(slot) = (0..MAX_QUEUES as u32).find(|n| !self.qpns.contains_key(n)) else {
            return self.refuse(now, id, RejReason::NoResources, &[]);
        };
        let entries = u32::from(r.hsqsize) + 1;
        let state = self.target.new_queue();
        let q = Queue::new(
            &self.dev,
            &self.pd,
            Qpn(QPN_BASE + slot),
            entries,
            self.cfg.max_xfer,
            state,
        )?;
        // Our first PSN: any value serves; derive one from the QP number.
        let sq_psn = (QPN_BASE + slot).wrapping_mul(0x9e37) & 0xff_ffff;
        q.connect(Gid(from.gid), Qpn(req.local_qpn), req.starting_psn, sq_psn)?;
        let mut pd = [0u8; nvme::rep::LEN];
        nvme::rep::Repr {
            crqsize: entries as u16,
        }
        .emit(&mut nvme::rep::Packet::new_unchecked(&mut pd[..]));
        let accepted = self.cm.accept(
            now,
            id,
            &AcceptParams {
                local_qpn: q.qpn().0,
                starting_psn: sq_psn,
                responder_resources: 0,
                initiator_depth: req.responder_resources.min(MAX_READS),
                rnr_retry_count: 7,
                flow_control: true,
                srq: false,
                private_data: &pd,
            },
        );
        if accepted.is_err() {
            // The CM forgot the request meanwhile: the QP goes with it.
            return Ok(());
        }
        self.stats.accepted += 1;
        self.qpns.insert(slot, id);
        self.queues.insert(id, q);
        Ok(())
    }
}

/// Why a REQ is refused.
enum Refusal {
    /// An IB CM reason.
    Cm(RejReason),
    /// An NVMe/RDMA status, as consumer-defined private data.
    Nvme(nvme::rej::Status),
}
