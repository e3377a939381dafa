//! CREATE_CQ and DESTROY_CQ: a CQ's ring and its event queue.

use ernic_core::CqId;
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_status as st, cqe};
use crate::limits::Owner;

use crate::bytes::{le32, le64};

use super::{Cq, RdmaDev, Ring};

impl RdmaDev {
    pub(super) fn create_cq(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        use fw::create_cq as f;
        let id = le32(c, f::ID_VER);
        let eq = le32(c, f::EQ_ID);
        if self.cqs.contains_key(&id) {
            return st::BAD_INDEX;
        }
        if !self.eqs.contains_key(&eq) {
            return st::BAD_ATTR;
        }
        if c[f::STRIDE_LOG2] as usize != cqe::LEN.trailing_zeros() as usize {
            return st::BAD_ATTR;
        }
        let ring = match Ring::described(
            dma,
            &self.ptes,
            le64(c, f::DMA_ADDR),
            le32(c, f::MAP_COUNT),
            c[f::PAGE_SIZE_LOG2],
            c[f::DEPTH_LOG2],
            c[f::STRIDE_LOG2],
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        if let Err(e) = self
            .engine
            .create_cq(self.dev, Some(CqId(id)), ring.depth())
        {
            return self.refuse(st::BAD_INDEX, e);
        }
        self.ptes.charge(Owner::Cq(id), ring.ptes);
        self.cqs.insert(
            id,
            Cq {
                ring,
                eq,
                prod: 0,
                guest_next: 0,
                armed: false,
                lost: 0,
            },
        );
        st::OK
    }

    pub(super) fn destroy_cq(&mut self, id: u32) -> u32 {
        if self.aqs.iter().any(|a| a.cq == id) {
            return st::BAD_STATE;
        }
        let r = self.engine.destroy_cq(self.dev, CqId(id));
        self.destroyed(r, |d| {
            d.ptes.release(Owner::Cq(id));
            d.cqs.remove(&id).is_some()
        })
    }
}
