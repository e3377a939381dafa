//! ernic's SRQ commands: CREATE_SRQ, MODIFY_SRQ, QUERY_SRQ and
//! DESTROY_SRQ.

use ernic_core::PdId;
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_status as st};
use crate::limits::Owner;

use crate::bytes::le32;

use super::{RdmaDev, Ring, Srq};

impl RdmaDev {
    /// CREATE_SRQ: a ring (bounded, page table read once) and an id above
    /// the QP id range, answered in the CQE.
    pub(super) fn create_srq(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        let Ok(c) = fw::srq::create::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let ring = match Ring::described(
            dma,
            &self.ptes,
            c.dma_addr(),
            c.map_count(),
            c.page_size_log2(),
            c.depth_log2(),
            c.stride_log2(),
        ) {
            Ok(r) => r,
            Err(s) => return self.refuse(s, "the SRQ's ring"),
        };
        let id =
            (self.qp_count..self.qp_count.saturating_mul(2)).find(|i| !self.srqs.contains_key(i));
        let Some(id) = id else {
            return self.refuse(st::BAD_INDEX, "no SRQ id left");
        };
        let sges = ((ring.stride().saturating_sub(32)) / 16).clamp(1, ernic_core::MAX_SGE) as u32;
        let srq = ernic_core::SrqId(id - self.qp_count);
        if let Err(e) = self
            .engine
            .create_srq(self.dev, Some(srq), pd, ring.depth(), sges)
        {
            return self.refuse(st::BAD_ATTR, e);
        }
        if let Err(e) = self.engine.modify_srq(self.dev, srq, c.limit()) {
            let _ = self.engine.destroy_srq(self.dev, srq);
            return self.refuse(st::BAD_ATTR, e);
        }
        self.ptes.charge(Owner::Srq(id), ring.ptes);
        self.srqs.insert(id, Srq { ring, prod: 0 });
        self.result = [id, 0];
        st::OK
    }

    /// MODIFY_SRQ (the limit), QUERY_SRQ (limit and receives outstanding,
    /// in the CQE), DESTROY_SRQ.
    pub(super) fn srq_command(&mut self, op: u8, c: &[u8]) -> u32 {
        let id = le32(c, fw::srq::ID);
        if !self.srqs.contains_key(&id) {
            return self.refuse(st::BAD_INDEX, format_args!("no SRQ {id}"));
        }
        let srq = ernic_core::SrqId(id - self.qp_count);
        let r = match op {
            fw::srq_op::MODIFY_SRQ => {
                // At least `srq::MODIFY_LEN` bytes: `command` checked.
                let limit = fw::srq::modify::Packet::new_unchecked(c).limit();
                self.engine.modify_srq(self.dev, srq, limit)
            }
            fw::srq_op::QUERY_SRQ => self.engine.query_srq(self.dev, srq).map(|(limit, n)| {
                self.result = [limit, n];
            }),
            _ => self.engine.destroy_srq(self.dev, srq).map(|()| {
                self.ptes.release(Owner::Srq(id));
                self.srqs.remove(&id);
            }),
        };
        match r {
            Ok(()) => st::OK,
            Err(e) => self.refuse(st::BAD_STATE, e),
        }
    }
}
