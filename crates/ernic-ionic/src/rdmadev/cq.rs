//! CREATE_CQ and DESTROY_CQ: a CQ's ring and its event queue.

use ernic_core::CqId;
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_status as st, cqe};
use crate::limits::Owner;

use super::{Cq, RdmaDev, Ring};

impl RdmaDev {
    pub(super) fn create_cq(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        let Ok(c) = fw::create_cq::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let id = c.id_ver();
        let eq = c.eq_id();
        if self.cqs.contains_key(&id) {
            return st::BAD_INDEX;
        }
        if !self.eqs.contains_key(&eq) {
            return st::BAD_ATTR;
        }
        if c.stride_log2() as usize != cqe::LEN.trailing_zeros() as usize {
            return st::BAD_ATTR;
        }
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
