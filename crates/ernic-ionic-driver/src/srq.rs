//! Shared receive queues: ernic's CREATE_SRQ, MODIFY_SRQ, QUERY_SRQ and
//! DESTROY_SRQ admin commands.

use ernic_ionic::fw::{self};

use crate::{Driver, Error, Pd, Srq};

impl Driver {
    /// Creates a shared receive queue of `2^depth_log2` 64-byte WQEs with
    /// low watermark `limit`, in the driver's own PD.
    pub fn create_srq(&mut self, depth_log2: u8, limit: u32) -> Result<Srq, Error> {
        self.create_srq_in(self.pd, depth_log2, limit)
    }

    /// As [`create_srq`](Driver::create_srq), in `pd`: only QPs of `pd`
    /// may draw from it.
    pub fn create_srq_in(&mut self, pd: Pd, depth_log2: u8, limit: u32) -> Result<Srq, Error> {
        let ring = self.ring(depth_log2, 6)?;
        let mut b = [0u8; fw::srq::CREATE_LEN];
        // A whole command's array: no setter can run past it.
        let mut p = fw::srq::create::Packet::new_unchecked(&mut b);
        p.set_pd_id(pd.0);
        p.set_depth_log2(depth_log2);
        p.set_stride_log2(6);
        p.set_map_count(1);
        p.set_dma_addr(ring.gpa());
        p.set_limit(limit);
        let [id, _] = self.admin(fw::srq_op::CREATE_SRQ, &b)?;
        let db = self.take_page();
        Ok(Srq {
            id,
            pd,
            ring,
            prod: 0,
            db,
        })
    }

    /// Sets an SRQ's low watermark.
    pub fn modify_srq(&mut self, srq: &Srq, limit: u32) -> Result<(), Error> {
        let mut b = [0u8; fw::srq::MODIFY_LEN];
        // A whole command's array: no setter can run past it.
        let mut p = fw::srq::modify::Packet::new_unchecked(&mut b);
        p.set_id(srq.id);
        p.set_limit(limit);
        self.admin(fw::srq_op::MODIFY_SRQ, &b).map(|_| ())
    }

    /// An SRQ's (limit, receives outstanding).
    pub fn query_srq(&mut self, srq: &Srq) -> Result<(u32, u32), Error> {
        let [limit, n] = self.admin(fw::srq_op::QUERY_SRQ, &srq.id.to_le_bytes())?;
        Ok((limit, n))
    }

    /// Destroys an SRQ no QP uses.
    pub fn destroy_srq(&mut self, srq: Srq) -> Result<(), Error> {
        self.admin(fw::srq_op::DESTROY_SRQ, &srq.id.to_le_bytes())?;
        self.give_page(srq.db);
        self.free_ring(&srq.ring);
        Ok(())
    }
}
