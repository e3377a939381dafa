//! Completion queues: CREATE_CQ and DESTROY_CQ.

use std::collections::VecDeque;

use ernic_ionic::fw::{self, admin_op};

use crate::{Cq, Driver, Error};

impl Driver {
    /// Creates a CQ of `2^depth_log2` entries.
    pub fn create_cq(&mut self, depth_log2: u8) -> Result<Cq, Error> {
        let ring = self.ring(depth_log2, 5)?;
        let id = self.next_cq;
        let mut b = [0u8; fw::create_cq::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = fw::create_cq::Packet::new_unchecked(&mut b);
        p.set_depth_log2(depth_log2);
        p.set_stride_log2(5);
        p.set_id_ver(id);
        p.set_map_count(1);
        p.set_dma_addr(ring.gpa());
        if let Err(e) = self.admin(admin_op::CREATE_CQ, &b) {
            self.free_ring(&ring);
            return Err(e);
        }
        self.next_cq += 1;
        Ok(Cq {
            id,
            ring,
            cons: 0,
            pending: VecDeque::new(),
        })
    }

    /// Destroys a CQ no QP uses.
    pub fn destroy_cq(&mut self, cq: Cq) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_CQ, &cq.id.to_le_bytes())?;
        self.free_ring(&cq.ring);
        Ok(())
    }
}
