//! The RDMA bootstrap (seed 001, "RDMA Bootstrap"): commands 50 to 53,
//! which `ionic_rdma.ko` sends over the Ethernet admin queue to create the
//! event queues and the RDMA admin queues with their completion queues.
//! This records them, bounded and checked; [`crate::rdmadev`] services the
//! queues they describe.
//!
//! `struct ionic_rdma_queue_cmd`: `qid_ver` (qid | RDMA version << 24),
//! `cid` (an interrupt for an EQ, an EQ for a CQ, a CQ for an admin
//! queue), `dbid`, `depth_log2`, `stride_log2`, `dma_addr`.

use crate::fw::dev_cmd;
use crate::regs::status;

/// Offsets in `struct ionic_rdma_queue_cmd`.
pub mod cmd {
    #![allow(missing_docs)]
    pub const QID_VER: usize = 4;
    pub const CID: usize = 8;
    pub const DBID: usize = 12;
    pub const DEPTH_LOG2: usize = 14;
    pub const STRIDE_LOG2: usize = 15;
    pub const DMA_ADDR: usize = 16;
}

/// The opcodes.
pub mod opcode {
    #![allow(missing_docs)]
    pub const RESET_LIF: u8 = 50;
    pub const CREATE_EQ: u8 = 51;
    pub const CREATE_CQ: u8 = 52;
    pub const CREATE_ADMINQ: u8 = 53;
}

/// The deepest ring accepted (2^16 entries).
pub const MAX_DEPTH_LOG2: u8 = 16;
/// Strides accepted: 4 bytes (an EQE) to 4 KiB.
pub const STRIDE_LOG2: std::ops::RangeInclusive<u8> = 2..=12;

/// A queue the bootstrap created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdmaQueue {
    /// Queue id.
    pub qid: u32,
    /// RDMA version the driver speaks.
    pub version: u8,
    /// Interrupt (EQ), EQ id (CQ) or CQ id (admin queue).
    pub cid: u32,
    /// Doorbell page.
    pub dbid: u16,
    /// log2 of the depth.
    pub depth_log2: u8,
    /// log2 of the entry size.
    pub stride_log2: u8,
    /// The ring in guest memory.
    pub dma_addr: u64,
}

/// The bootstrap's queues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bootstrap {
    /// Event queues.
    pub eqs: Vec<RdmaQueue>,
    /// Completion queues of admin queues.
    pub cqs: Vec<RdmaQueue>,
    /// RDMA admin queues.
    pub aqs: Vec<RdmaQueue>,
    /// How many times RESET_LIF (or a device reset) has forgotten them.
    pub epoch: u64,
}

/// The limits the device advertised (LIF_IDENTIFY's RDMA section).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Interrupt vectors.
    pub vectors: u32,
    /// Event queues.
    pub eqs: u32,
    /// Completion queues.
    pub cqs: u32,
    /// Admin queues.
    pub aqs: u32,
}

impl RdmaQueue {
    /// The queue a CREATE_EQ, CREATE_CQ or CREATE_ADMINQ command
    /// describes (unchecked: [`Bootstrap::run`] bounds it).
    pub fn parse<T: AsRef<[u8]>>(c: &dev_cmd::Packet<T>) -> RdmaQueue {
        let qid_ver = c.rdma_qid_ver();
        RdmaQueue {
            qid: qid_ver & 0xff_ffff,
            version: (qid_ver >> 24) as u8,
            cid: c.rdma_cid(),
            dbid: c.rdma_dbid(),
            depth_log2: c.rdma_depth_log2(),
            stride_log2: c.rdma_stride_log2(),
            dma_addr: c.rdma_dma_addr(),
        }
    }

    /// Writes this queue into command `c` (its opcode is the caller's).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, c: &mut dev_cmd::Packet<T>) {
        c.set_rdma_qid_ver(self.qid & 0xff_ffff | u32::from(self.version) << 24);
        c.set_rdma_cid(self.cid);
        c.set_rdma_dbid(self.dbid);
        c.set_rdma_depth_log2(self.depth_log2);
        c.set_rdma_stride_log2(self.stride_log2);
        c.set_rdma_dma_addr(self.dma_addr);
    }
}

impl Bootstrap {
    /// Forgets every queue.
    pub fn reset(&mut self) {
        *self = Bootstrap {
            epoch: self.epoch + 1,
            ..Bootstrap::default()
        };
    }

    /// Runs command `c` (opcode 50-53); answers an `ionic_status_code`.
    pub fn run(&mut self, c: &[u8; 64], limits: Limits) -> u8 {
        if c[0] == opcode::RESET_LIF {
            self.reset();
            return status::SUCCESS;
        }
        let q = RdmaQueue::parse(&dev_cmd::Packet::new_unchecked(c));
        // Bounded before anything shifts by them.
        if q.depth_log2 > MAX_DEPTH_LOG2 || !STRIDE_LOG2.contains(&q.stride_log2) {
            return status::EINVAL;
        }
        let (list, max, cid_ok) = match c[0] {
            opcode::CREATE_EQ => (&self.eqs, limits.eqs, q.cid < limits.vectors),
            opcode::CREATE_CQ => (
                &self.cqs,
                limits.cqs,
                self.eqs.iter().any(|e| e.qid == q.cid),
            ),
            opcode::CREATE_ADMINQ => (
                &self.aqs,
                limits.aqs,
                self.cqs.iter().any(|e| e.qid == q.cid) && !self.aqs.iter().any(|a| a.cid == q.cid),
            ),
            _ => return status::EOPCODE,
        };
        if q.qid >= max {
            return status::EQID;
        }
        if list.iter().any(|e| e.qid == q.qid) {
            return status::EEXIST;
        }
        if !cid_ok {
            return status::ENOENT;
        }
        match c[0] {
            opcode::CREATE_EQ => self.eqs.push(q),
            opcode::CREATE_CQ => self.cqs.push(q),
            _ => self.aqs.push(q),
        }
        status::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(op: u8, qid: u32, cid: u32, depth: u8, stride: u8) -> [u8; 64] {
        let mut c = [0u8; 64];
        c[0] = op;
        c[cmd::QID_VER..cmd::QID_VER + 4].copy_from_slice(&(qid | 2 << 24).to_le_bytes());
        c[cmd::CID..cmd::CID + 4].copy_from_slice(&cid.to_le_bytes());
        c[cmd::DEPTH_LOG2] = depth;
        c[cmd::STRIDE_LOG2] = stride;
        c[cmd::DMA_ADDR..cmd::DMA_ADDR + 8].copy_from_slice(&0x1000u64.to_le_bytes());
        c
    }

    #[test]
    fn a_queue_emits_the_bytes_it_parses_from() {
        let c = queue(52, 7, 3, 9, 5);
        let q = RdmaQueue::parse(&dev_cmd::Packet::new_checked(&c[..]).unwrap());
        assert_eq!(
            (
                q.qid,
                q.version,
                q.cid,
                q.depth_log2,
                q.stride_log2,
                q.dma_addr
            ),
            (7, 2, 3, 9, 5, 0x1000)
        );
        let mut b = [0u8; 64];
        b[0] = 52;
        q.emit(&mut dev_cmd::Packet::new_checked(&mut b[..]).unwrap());
        assert_eq!(b, c);
    }

    const L: Limits = Limits {
        vectors: 32,
        eqs: 4,
        cqs: 8,
        aqs: 2,
    };

    #[test]
    fn eqs_cqs_and_admin_queues_are_created_in_order_and_checked() {
        let mut b = Bootstrap::default();
        for eq in 0..4 {
            assert_eq!(b.run(&queue(51, eq, eq + 1, 9, 2), L), status::SUCCESS);
        }
        assert_eq!(b.eqs[1].version, 2);
        assert_eq!(
            b.run(&queue(51, 4, 1, 8, 4), L),
            status::EQID,
            "past the EQ count"
        );
        assert_eq!(b.run(&queue(51, 0, 1, 8, 4), L), status::EEXIST);
        assert_eq!(b.run(&queue(52, 0, 9, 8, 5), L), status::ENOENT, "no EQ 9");
        assert_eq!(b.run(&queue(52, 0, 1, 8, 5), L), status::SUCCESS);
        assert_eq!(b.run(&queue(53, 0, 3, 8, 6), L), status::ENOENT, "no CQ 3");
        assert_eq!(b.run(&queue(53, 0, 0, 8, 6), L), status::SUCCESS);
        assert_eq!(
            b.run(&queue(53, 1, 0, 8, 6), L),
            status::ENOENT,
            "CQ 0 is taken"
        );
        // Bounds before any shift.
        assert_eq!(b.run(&queue(52, 1, 1, 17, 5), L), status::EINVAL);
        assert_eq!(b.run(&queue(52, 1, 1, 8, 1), L), status::EINVAL);
        assert_eq!(b.run(&queue(52, 1, 1, 8, 13), L), status::EINVAL);
        // RESET_LIF forgets everything.
        assert_eq!(b.run(&queue(50, 0, 0, 0, 0), L), status::SUCCESS);
        assert!(b.eqs.is_empty() && b.cqs.is_empty() && b.aqs.is_empty());
        assert_eq!(b.epoch, 1);
        assert_eq!(
            b.run(&queue(51, 0, 32, 8, 4), L),
            status::ENOENT,
            "no vector 32"
        );
    }
}
