//! Device commands (`ionic_if.h`): the 64-byte `union ionic_dev_cmd` a
//! driver writes into BAR 0's command registers (or posts on the Ethernet
//! admin queue, whose descriptors are the same commands) and the 16-byte
//! `union ionic_dev_cmd_comp` the device answers. [`Packet`] views a
//! command, [`Comp`] a completion; the fields are those of the commands
//! ernic serves (identify, port and LIF init, LIF attributes, queue
//! identify, init and control) and of the RDMA bootstrap's
//! `struct ionic_rdma_queue_cmd` (opcodes 50-53), with offsets from
//! [`crate::regs`] and [`crate::bootstrap::cmd`], which `tests/layout.rs`
//! checks against the header. The register addresses are
//! [`crate::regs::cmd`]. After `new_checked` no accessor panics.

use super::{Error, Field, get_le32, set_bytes};
use crate::bootstrap::cmd as rq;
use crate::regs::{init_cmd, lif_attr, q_control, q_identify, q_init};

/// Bytes of a command.
pub const LEN: usize = 64;
/// Bytes of a completion.
pub const COMP_LEN: usize = 16;

/// The command's fields, as byte ranges.
pub mod field {
    use super::*;
    /// `opcode`, in every command.
    pub const OPCODE: usize = 0;
    /// IDENTIFY's `ver`.
    pub const IDENTIFY_VER: usize = 1;
    /// PORT_INIT's and LIF_INIT's `info_pa`.
    pub const INFO_PA: Field = init_cmd::INFO_PA..init_cmd::INFO_PA + 8;
    /// LIF_INIT's `index`.
    pub const LIF_INDEX: Field = init_cmd::LIF_INDEX..init_cmd::LIF_INDEX + 2;
    /// LIF_SETATTR / LIF_GETATTR `attr`.
    pub const LIF_ATTR: usize = lif_attr::ATTR;
    /// LIF_SETATTR's MAC.
    pub const LIF_ATTR_MAC: Field = lif_attr::VALUE..lif_attr::VALUE + 6;
    /// Q_IDENTIFY's `type`.
    pub const Q_IDENTIFY_TYPE: usize = q_identify::TYPE;
    pub const Q_INIT_TYPE: usize = q_init::TYPE;
    pub const Q_INIT_INDEX: Field = q_init::INDEX..q_init::INDEX + 4;
    pub const Q_INIT_INTR_INDEX: Field = q_init::INTR_INDEX..q_init::INTR_INDEX + 2;
    pub const Q_INIT_FLAGS: Field = q_init::FLAGS..q_init::FLAGS + 2;
    pub const Q_INIT_RING_SIZE: usize = q_init::RING_SIZE;
    pub const Q_INIT_RING_BASE: Field = q_init::RING_BASE..q_init::RING_BASE + 8;
    pub const Q_INIT_CQ_RING_BASE: Field = q_init::CQ_RING_BASE..q_init::CQ_RING_BASE + 8;
    pub const Q_INIT_SG_RING_BASE: Field = q_init::SG_RING_BASE..q_init::SG_RING_BASE + 8;
    pub const Q_CONTROL_TYPE: usize = q_control::TYPE;
    pub const Q_CONTROL_INDEX: Field = q_control::INDEX..q_control::INDEX + 4;
    pub const Q_CONTROL_OPER: usize = q_control::OPER;
    /// `struct ionic_rdma_queue_cmd`.
    pub const RDMA_QID_VER: Field = rq::QID_VER..rq::QID_VER + 4;
    pub const RDMA_CID: Field = rq::CID..rq::CID + 4;
    pub const RDMA_DBID: Field = rq::DBID..rq::DBID + 2;
    pub const RDMA_DEPTH_LOG2: usize = rq::DEPTH_LOG2;
    pub const RDMA_STRIDE_LOG2: usize = rq::STRIDE_LOG2;
    pub const RDMA_DMA_ADDR: Field = rq::DMA_ADDR..rq::DMA_ADDR + 8;
}

/// The completion's fields, as byte ranges.
pub mod comp_field {
    use super::*;
    /// `status` (`crate::regs::status`), in every completion.
    pub const STATUS: usize = 0;
    /// IDENTIFY's and LIF_IDENTIFY's `ver`.
    pub const VER: usize = 1;
    /// LIF_INIT's `hw_index`.
    pub const LIF_HW_INDEX: Field = 2..4;
    /// Q_IDENTIFY's `ver`.
    pub const Q_IDENTIFY_VER: usize = q_identify::COMP_VER;
    /// Q_INIT's `hw_index` and `hw_type`.
    pub const Q_INIT_HW_INDEX: Field = q_init::COMP_HW_INDEX..q_init::COMP_HW_INDEX + 4;
    pub const Q_INIT_HW_TYPE: usize = q_init::COMP_HW_TYPE;
    /// LIF_GETATTR's MAC.
    pub const LIF_ATTR_MAC: Field = lif_attr::COMP_VALUE..lif_attr::COMP_VALUE + 6;
    /// RX_FILTER_ADD's `filter_id`.
    pub const FILTER_ID: Field = 4..8;
}

/// A view of a device command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fields! {
    /// `opcode` (`crate::regs::opcode`, or the bootstrap's 50-53).
    opcode / set_opcode: u8 = field::OPCODE;
    /// IDENTIFY's `ver`: the identity version asked for.
    identify_ver / set_identify_ver: u8 = field::IDENTIFY_VER;
    /// PORT_INIT's and LIF_INIT's `info_pa`.
    info_pa / set_info_pa: u64 = field::INFO_PA;
    /// LIF_INIT's `index`.
    lif_index / set_lif_index: u16 = field::LIF_INDEX;
    /// LIF_SETATTR / LIF_GETATTR `attr`.
    lif_attr / set_lif_attr: u8 = field::LIF_ATTR;
    /// Q_IDENTIFY's queue type.
    q_identify_type / set_q_identify_type: u8 = field::Q_IDENTIFY_TYPE;
    /// Q_INIT's queue type.
    q_init_type / set_q_init_type: u8 = field::Q_INIT_TYPE;
    /// Q_INIT's queue index.
    q_init_index / set_q_init_index: u32 = field::Q_INIT_INDEX;
    /// Q_INIT's interrupt.
    q_init_intr_index / set_q_init_intr_index: u16 = field::Q_INIT_INTR_INDEX;
    /// Q_INIT's flags (`q_init::F_*`).
    q_init_flags / set_q_init_flags: u16 = field::Q_INIT_FLAGS;
    /// Q_INIT's log2 ring size.
    q_init_ring_size / set_q_init_ring_size: u8 = field::Q_INIT_RING_SIZE;
    /// Q_INIT's descriptor ring.
    q_init_ring_base / set_q_init_ring_base: u64 = field::Q_INIT_RING_BASE;
    /// Q_INIT's completion ring.
    q_init_cq_ring_base / set_q_init_cq_ring_base: u64 = field::Q_INIT_CQ_RING_BASE;
    /// Q_INIT's SG ring.
    q_init_sg_ring_base / set_q_init_sg_ring_base: u64 = field::Q_INIT_SG_RING_BASE;
    /// Q_CONTROL's queue type.
    q_control_type / set_q_control_type: u8 = field::Q_CONTROL_TYPE;
    /// Q_CONTROL's queue index.
    q_control_index / set_q_control_index: u32 = field::Q_CONTROL_INDEX;
    /// Q_CONTROL's operation (`q_control::ENABLE` and the rest).
    q_control_oper / set_q_control_oper: u8 = field::Q_CONTROL_OPER;
    /// The bootstrap's `qid_ver`: qid | RDMA version << 24.
    rdma_qid_ver / set_rdma_qid_ver: u32 = field::RDMA_QID_VER;
    /// The bootstrap's `cid`.
    rdma_cid / set_rdma_cid: u32 = field::RDMA_CID;
    /// The bootstrap's `dbid`.
    rdma_dbid / set_rdma_dbid: u16 = field::RDMA_DBID;
    /// The bootstrap's `depth_log2`.
    rdma_depth_log2 / set_rdma_depth_log2: u8 = field::RDMA_DEPTH_LOG2;
    /// The bootstrap's `stride_log2`.
    rdma_stride_log2 / set_rdma_stride_log2: u8 = field::RDMA_STRIDE_LOG2;
    /// The bootstrap's `dma_addr`.
    rdma_dma_addr / set_rdma_dma_addr: u64 = field::RDMA_DMA_ADDR;
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view without a length check; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view of a buffer that holds a whole command.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let p = Packet::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Whether the buffer holds a whole command.
    pub fn check_len(&self) -> Result<(), Error> {
        check(self.buffer.as_ref().len(), LEN, "device command")
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// LIF_SETATTR's MAC.
    pub fn lif_attr_mac(&self) -> [u8; 6] {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::LIF_ATTR_MAC]);
        m
    }
}

/// A view of a device command's completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Comp<T> {
    /// A view without a length check; accessors may panic on a short buffer.
    pub const fn new_unchecked(buffer: T) -> Comp<T> {
        Comp { buffer }
    }

    /// A view of a buffer that holds a whole completion.
    pub fn new_checked(buffer: T) -> Result<Comp<T>, Error> {
        let c = Comp::new_unchecked(buffer);
        check(
            c.buffer.as_ref().len(),
            COMP_LEN,
            "device command completion",
        )?;
        Ok(c)
    }

    /// `status` (`crate::regs::status`).
    pub fn status(&self) -> u8 {
        self.buffer.as_ref()[comp_field::STATUS]
    }

    /// IDENTIFY's and LIF_IDENTIFY's `ver`.
    pub fn ver(&self) -> u8 {
        self.buffer.as_ref()[comp_field::VER]
    }

    /// Q_INIT's `hw_index`.
    pub fn q_init_hw_index(&self) -> u32 {
        get_le32(self.buffer.as_ref(), comp_field::Q_INIT_HW_INDEX)
    }

    /// Q_INIT's `hw_type`.
    pub fn q_init_hw_type(&self) -> u8 {
        self.buffer.as_ref()[comp_field::Q_INIT_HW_TYPE]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Comp<T> {
    /// Sets `status`.
    pub fn set_status(&mut self, v: u8) {
        self.buffer.as_mut()[comp_field::STATUS] = v;
    }

    /// Sets IDENTIFY's and LIF_IDENTIFY's `ver`.
    pub fn set_ver(&mut self, v: u8) {
        self.buffer.as_mut()[comp_field::VER] = v;
    }

    /// Sets LIF_INIT's `hw_index`.
    pub fn set_lif_hw_index(&mut self, v: u16) {
        set_bytes(
            self.buffer.as_mut(),
            comp_field::LIF_HW_INDEX,
            &v.to_le_bytes(),
        );
    }

    /// Sets Q_IDENTIFY's `ver`.
    pub fn set_q_identify_ver(&mut self, v: u8) {
        self.buffer.as_mut()[comp_field::Q_IDENTIFY_VER] = v;
    }

    /// Sets Q_INIT's `hw_index`.
    pub fn set_q_init_hw_index(&mut self, v: u32) {
        set_bytes(
            self.buffer.as_mut(),
            comp_field::Q_INIT_HW_INDEX,
            &v.to_le_bytes(),
        );
    }

    /// Sets Q_INIT's `hw_type`.
    pub fn set_q_init_hw_type(&mut self, v: u8) {
        self.buffer.as_mut()[comp_field::Q_INIT_HW_TYPE] = v;
    }

    /// Sets LIF_GETATTR's MAC.
    pub fn set_lif_attr_mac(&mut self, mac: [u8; 6]) {
        set_bytes(self.buffer.as_mut(), comp_field::LIF_ATTR_MAC, &mac);
    }

    /// Sets RX_FILTER_ADD's `filter_id`.
    pub fn set_filter_id(&mut self, v: u32) {
        set_bytes(
            self.buffer.as_mut(),
            comp_field::FILTER_ID,
            &v.to_le_bytes(),
        );
    }
}

fn check(len: usize, need: usize, format: &'static str) -> Result<(), Error> {
    if len < need {
        return Err(Error::Truncated { format, need, len });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q_INIT (opcode 40) of RX queue 3 on interrupt 5, IRQ and enabled,
    /// 2^10 descriptors, rings at 0x1000, 0x2000 and 0x3000, as
    /// `struct ionic_q_init_cmd` lays it out.
    static Q_INIT_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 40;
        b[4] = 2; // type
        b[8] = 3; // index
        b[14] = 5; // intr_index
        b[16] = 3; // flags: IRQ | ENA
        b[19] = 10; // ring_size
        b[21] = 0x10; // ring_base 0x1000
        b[29] = 0x20; // cq_ring_base
        b[37] = 0x30; // sg_ring_base
        b
    };

    #[test]
    fn a_q_init_command_is_written_and_read_as_laid_out() {
        let mut b = [0u8; LEN];
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_opcode(40);
        p.set_q_init_type(2);
        p.set_q_init_index(3);
        p.set_q_init_intr_index(5);
        p.set_q_init_flags(q_init::F_IRQ | q_init::F_ENA);
        p.set_q_init_ring_size(10);
        p.set_q_init_ring_base(0x1000);
        p.set_q_init_cq_ring_base(0x2000);
        p.set_q_init_sg_ring_base(0x3000);
        assert_eq!(b, Q_INIT_BYTES);
        let p = Packet::new_checked(&Q_INIT_BYTES[..]).unwrap();
        assert_eq!((p.opcode(), p.q_init_type(), p.q_init_index()), (40, 2, 3));
        assert_eq!((p.q_init_intr_index(), p.q_init_flags()), (5, 3));
        assert_eq!(
            (
                p.q_init_ring_base(),
                p.q_init_cq_ring_base(),
                p.q_init_sg_ring_base()
            ),
            (0x1000, 0x2000, 0x3000)
        );
    }

    #[test]
    fn an_rdma_queue_command_and_a_completion_sit_where_the_header_puts_them() {
        let mut b = [0u8; LEN];
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_opcode(52);
        p.set_rdma_qid_ver(1 << 24 | 7);
        p.set_rdma_cid(2);
        p.set_rdma_dbid(0x0304);
        p.set_rdma_depth_log2(6);
        p.set_rdma_stride_log2(5);
        p.set_rdma_dma_addr(0x0102_0304_0506_0708);
        assert_eq!(
            &b[..24],
            &[
                52, 0, 0, 0, 7, 0, 0, 1, 2, 0, 0, 0, 4, 3, 6, 5, 8, 7, 6, 5, 4, 3, 2, 1
            ]
        );
        let mut c = [0u8; COMP_LEN];
        let mut comp = Comp::new_checked(&mut c[..]).unwrap();
        comp.set_status(0);
        comp.set_q_init_hw_index(0x11);
        comp.set_q_init_hw_type(2);
        assert_eq!(&c[..9], &[0, 0, 0, 0, 0x11, 0, 0, 0, 2]);
        assert!(Packet::new_checked(&b[..63]).is_err());
        assert!(Comp::new_checked(&c[..15]).is_err());
    }
}
