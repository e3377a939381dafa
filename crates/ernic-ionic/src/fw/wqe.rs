//! `struct ionic_v1_wqe`: a send or receive queue's work request as the
//! driver writes it into a ring slot (one stride, at least
//! [`MIN_LEN`] bytes): the base header (id, operation, SGE count or key,
//! flags, immediate data or key), then the body by operation — common
//! (send and RDMA: destination or remote address, length, SGEs or inline
//! data), atomic (operands and one SGE), or fast registration — and, for
//! receives, the SGEs alone. The device decodes these; the driver's
//! provider encodes them.
//!
//! Multi-byte fields are big-endian except `wqe_id`, the driver's own
//! cookie (little-endian). After [`Packet::new_checked`] (a buffer of at
//! least [`MIN_LEN`]) no accessor panics: the fixed fields all lie in the
//! first 64 bytes, and the SGE and inline accessors answer `None` (or
//! `false`) for what runs past the buffer.

#![allow(missing_docs)]

use ernic_core::{Lkey, Sge};

use super::{Field, get_be16, get_be32, get_be64, get_le64, set_bytes};

pub const WQE_ID: usize = 0;
pub const OP: usize = 8;
pub const NUM_SGE_KEY: usize = 9;
pub const FLAGS_BE: usize = 10;
pub const IMM_DATA_KEY_BE: usize = 12;
// common body (send and RDMA)
pub const AH_ID_BE: usize = 16;
pub const DEST_QPN_BE: usize = 20;
pub const DEST_QKEY_BE: usize = 24;
pub const REMOTE_VA_HIGH_BE: usize = 16;
pub const REMOTE_VA_LOW_BE: usize = 20;
pub const REMOTE_RKEY_BE: usize = 24;
pub const LENGTH_BE: usize = 28;
/// The payload: SGEs, or inline data (common and receive bodies).
pub const PLD: usize = 32;
// atomic body
pub const SWAP_ADD_HIGH_BE: usize = 28;
pub const SWAP_ADD_LOW_BE: usize = 32;
pub const COMPARE_HIGH_BE: usize = 36;
pub const COMPARE_LOW_BE: usize = 40;
pub const ATOMIC_SGE: usize = 48;
// reg_mr body
pub const REG_VA_BE: usize = 16;
pub const REG_LENGTH_BE: usize = 24;
pub const REG_OFFSET_BE: usize = 32;
pub const REG_DMA_ADDR_BE: usize = 40;
pub const REG_MAP_COUNT_BE: usize = 48;
pub const REG_FLAGS_BE: usize = 52;
pub const REG_PAGE_SIZE_LOG2: usize = 55;
/// Bytes of `struct ionic_sge`: va (be64), len (be32), lkey (be32).
pub const SGE_LEN: usize = 16;
/// The smallest WQE (`sizeof(struct ionic_v1_wqe)`).
pub const MIN_LEN: usize = 64;
// flags
pub const FLAG_FENCE: u16 = 1 << 0;
pub const FLAG_SOL: u16 = 1 << 1;
pub const FLAG_INL: u16 = 1 << 2;
pub const FLAG_SIG: u16 = 1 << 3;
pub const FLAG_SPEC32: u16 = 1 << 12;
pub const FLAG_SPEC16: u16 = 2 << 12;
/// SGEs start here in the SPEC forms (`IONIC_V1_SPEC_FIRST_SGE`).
pub const SPEC_FIRST_SGE: usize = 2;

/// The fields, as byte ranges of the WQE.
pub mod field {
    use super::Field;
    pub const WQE_ID: Field = 0..8;
    pub const OP: usize = 8;
    pub const NUM_SGE_KEY: usize = 9;
    pub const FLAGS: Field = 10..12;
    pub const IMM_DATA_KEY: Field = 12..16;
    // common body, datagram form
    pub const AH_ID: Field = 16..20;
    pub const DEST_QPN: Field = 20..24;
    pub const DEST_QKEY: Field = 24..28;
    // common body, RDMA form
    pub const REMOTE_VA_HIGH: Field = 16..20;
    pub const REMOTE_VA_LOW: Field = 20..24;
    pub const REMOTE_RKEY: Field = 24..28;
    pub const LENGTH: Field = 28..32;
    // atomic body
    pub const SWAP_ADD_HIGH: Field = 28..32;
    pub const SWAP_ADD_LOW: Field = 32..36;
    pub const COMPARE_HIGH: Field = 36..40;
    pub const COMPARE_LOW: Field = 40..44;
    // reg_mr body
    pub const REG_VA: Field = 16..24;
    pub const REG_LENGTH: Field = 24..32;
    pub const REG_OFFSET: Field = 32..40;
    pub const REG_DMA_ADDR: Field = 40..48;
    pub const REG_MAP_COUNT: Field = 48..52;
    pub const REG_FLAGS: Field = 52..54;
    pub const REG_PAGE_SIZE_LOG2: usize = 55;
    // within one `struct ionic_sge`
    pub const SGE_VA: Field = 0..8;
    pub const SGE_LENGTH: Field = 8..12;
    pub const SGE_LKEY: Field = 12..16;
}

view!("WQE", MIN_LEN);

/// The byte range of SGE `i` of an SGE list starting at `at`, if it can
/// be named without overflow.
fn sge_range(at: usize, i: usize) -> Option<Field> {
    let start = i.checked_mul(SGE_LEN)?.checked_add(at)?;
    Some(start..start.checked_add(SGE_LEN)?)
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Bytes of the WQE (its stride).
    pub fn len(&self) -> usize {
        self.buffer.as_ref().len()
    }

    /// Whether the buffer is empty (never, after `new_checked`).
    pub fn is_empty(&self) -> bool {
        self.buffer.as_ref().is_empty()
    }

    /// `wqe_id`.
    pub fn wqe_id(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::WQE_ID)
    }

    /// `op` (`super::op`).
    pub fn op(&self) -> u8 {
        self.buffer.as_ref()[field::OP]
    }

    /// `num_sge_key`: the SGE count (or, for REG_MR, the key's low byte).
    pub fn num_sge_key(&self) -> u8 {
        self.buffer.as_ref()[field::NUM_SGE_KEY]
    }

    /// `flags` (`FLAG_*`).
    pub fn flags(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::FLAGS)
    }

    /// `imm_data_key`: immediate data, or the key to invalidate or register.
    pub fn imm_data_key(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::IMM_DATA_KEY)
    }

    /// `common.send.ah_id` (a datagram send).
    pub fn ah_id(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::AH_ID)
    }

    /// `common.send.dest_qpn`.
    pub fn dest_qpn(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::DEST_QPN)
    }

    /// `common.send.dest_qkey`.
    pub fn dest_qkey(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::DEST_QKEY)
    }

    /// `common.rdma.remote_va_high` and `_low`, as one address.
    pub fn remote_va(&self) -> u64 {
        let b = self.buffer.as_ref();
        u64::from(get_be32(b, field::REMOTE_VA_HIGH)) << 32
            | u64::from(get_be32(b, field::REMOTE_VA_LOW))
    }

    /// `common.rdma.remote_rkey`.
    pub fn remote_rkey(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::REMOTE_RKEY)
    }

    /// `common.length`: the payload's bytes.
    pub fn length(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::LENGTH)
    }

    /// `atomic.swap_add_high` and `_low`.
    pub fn swap_add(&self) -> u64 {
        let b = self.buffer.as_ref();
        u64::from(get_be32(b, field::SWAP_ADD_HIGH)) << 32
            | u64::from(get_be32(b, field::SWAP_ADD_LOW))
    }

    /// `atomic.compare_high` and `_low`.
    pub fn compare(&self) -> u64 {
        let b = self.buffer.as_ref();
        u64::from(get_be32(b, field::COMPARE_HIGH)) << 32
            | u64::from(get_be32(b, field::COMPARE_LOW))
    }

    /// `reg_mr.va`.
    pub fn reg_va(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::REG_VA)
    }

    /// `reg_mr.length`.
    pub fn reg_length(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::REG_LENGTH)
    }

    /// `reg_mr.offset`: the first page's offset.
    pub fn reg_offset(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::REG_OFFSET)
    }

    /// `reg_mr.dma_addr`: the page, or the page table.
    pub fn reg_dma_addr(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::REG_DMA_ADDR)
    }

    /// `reg_mr.map_count`.
    pub fn reg_map_count(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::REG_MAP_COUNT)
    }

    /// `reg_mr.flags` (`super::mrf`).
    pub fn reg_flags(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::REG_FLAGS)
    }

    /// `reg_mr.page_size_log2`.
    pub fn reg_page_size_log2(&self) -> u8 {
        self.buffer.as_ref()[field::REG_PAGE_SIZE_LOG2]
    }

    /// Whether `n` SGEs starting at byte `at` lie inside the WQE.
    pub fn holds_sges(&self, at: usize, n: usize) -> bool {
        n.checked_mul(SGE_LEN)
            .and_then(|b| b.checked_add(at))
            .is_some_and(|end| end <= self.len())
    }

    /// SGE `i` of the list starting at byte `at`; `None` past the WQE.
    pub fn sge(&self, at: usize, i: usize) -> Option<Sge> {
        let s = self.buffer.as_ref().get(sge_range(at, i)?)?;
        Some(Sge {
            addr: get_be64(s, field::SGE_VA),
            len: get_be32(s, field::SGE_LENGTH),
            lkey: Lkey(get_be32(s, field::SGE_LKEY)),
        })
    }
}

impl<'a> Packet<&'a [u8]> {
    /// The inline payload (`common.length` bytes at [`PLD`]); `None` when
    /// it runs past the WQE.
    pub fn inline_data(&self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.length()).ok()?;
        self.buffer.get(PLD..PLD.checked_add(len)?)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `wqe_id`.
    pub fn set_wqe_id(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::WQE_ID, &v.to_le_bytes());
    }

    /// Sets `op`.
    pub fn set_op(&mut self, v: u8) {
        self.buffer.as_mut()[field::OP] = v;
    }

    /// Sets `num_sge_key`.
    pub fn set_num_sge_key(&mut self, v: u8) {
        self.buffer.as_mut()[field::NUM_SGE_KEY] = v;
    }

    /// Sets `flags`.
    pub fn set_flags(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::FLAGS, &v.to_be_bytes());
    }

    /// Sets `imm_data_key`.
    pub fn set_imm_data_key(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::IMM_DATA_KEY, &v.to_be_bytes());
    }

    /// Sets `common.send.ah_id`.
    pub fn set_ah_id(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::AH_ID, &v.to_be_bytes());
    }

    /// Sets `common.send.dest_qpn`.
    pub fn set_dest_qpn(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::DEST_QPN, &v.to_be_bytes());
    }

    /// Sets `common.send.dest_qkey`.
    pub fn set_dest_qkey(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::DEST_QKEY, &v.to_be_bytes());
    }

    /// Sets `common.rdma.remote_va_high` and `_low`.
    pub fn set_remote_va(&mut self, v: u64) {
        let b = self.buffer.as_mut();
        set_bytes(b, field::REMOTE_VA_HIGH, &((v >> 32) as u32).to_be_bytes());
        set_bytes(b, field::REMOTE_VA_LOW, &(v as u32).to_be_bytes());
    }

    /// Sets `common.rdma.remote_rkey`.
    pub fn set_remote_rkey(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::REMOTE_RKEY, &v.to_be_bytes());
    }

    /// Sets `common.length`.
    pub fn set_length(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::LENGTH, &v.to_be_bytes());
    }

    /// Sets `atomic.swap_add_high` and `_low`.
    pub fn set_swap_add(&mut self, v: u64) {
        let b = self.buffer.as_mut();
        set_bytes(b, field::SWAP_ADD_HIGH, &((v >> 32) as u32).to_be_bytes());
        set_bytes(b, field::SWAP_ADD_LOW, &(v as u32).to_be_bytes());
    }

    /// Sets `atomic.compare_high` and `_low`.
    pub fn set_compare(&mut self, v: u64) {
        let b = self.buffer.as_mut();
        set_bytes(b, field::COMPARE_HIGH, &((v >> 32) as u32).to_be_bytes());
        set_bytes(b, field::COMPARE_LOW, &(v as u32).to_be_bytes());
    }

    /// Sets `reg_mr.va`.
    pub fn set_reg_va(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::REG_VA, &v.to_be_bytes());
    }

    /// Sets `reg_mr.length`.
    pub fn set_reg_length(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::REG_LENGTH, &v.to_be_bytes());
    }

    /// Sets `reg_mr.offset`.
    pub fn set_reg_offset(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::REG_OFFSET, &v.to_be_bytes());
    }

    /// Sets `reg_mr.dma_addr`.
    pub fn set_reg_dma_addr(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::REG_DMA_ADDR, &v.to_be_bytes());
    }

    /// Sets `reg_mr.map_count`.
    pub fn set_reg_map_count(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::REG_MAP_COUNT, &v.to_be_bytes());
    }

    /// Sets `reg_mr.flags`.
    pub fn set_reg_flags(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::REG_FLAGS, &v.to_be_bytes());
    }

    /// Sets `reg_mr.page_size_log2`.
    pub fn set_reg_page_size_log2(&mut self, v: u8) {
        self.buffer.as_mut()[field::REG_PAGE_SIZE_LOG2] = v;
    }

    /// Writes SGE `i` of the list starting at byte `at`; `false` (and
    /// nothing written) when it would run past the WQE.
    pub fn set_sge(&mut self, at: usize, i: usize, s: &Sge) -> bool {
        let Some(d) = sge_range(at, i).and_then(|r| self.buffer.as_mut().get_mut(r)) else {
            return false;
        };
        set_bytes(d, field::SGE_VA, &s.addr.to_be_bytes());
        set_bytes(d, field::SGE_LENGTH, &s.len.to_be_bytes());
        set_bytes(d, field::SGE_LKEY, &s.lkey.0.to_be_bytes());
        true
    }

    /// The `len` bytes of inline payload at [`PLD`], to fill; `None` when
    /// they would run past the WQE.
    pub fn inline_data_mut(&mut self, len: usize) -> Option<&mut [u8]> {
        self.buffer.as_mut().get_mut(PLD..PLD.checked_add(len)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RDMA WRITE WQE (id 7, signaled, immediate 0xaabbccdd) of 100
    /// bytes to 0x1122334455667788 rkey 0x99, from one SGE, as
    /// `ionic_fw.h` lays it out.
    static WRITE_BYTES: [u8; 64] = [
        7, 0, 0, 0, 0, 0, 0, 0, // wqe_id
        4, // op: RDMA_WRITE
        1, // num_sge_key
        0x00, 0x08, // flags: SIG
        0xaa, 0xbb, 0xcc, 0xdd, // imm_data_key
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // remote_va high, low
        0, 0, 0, 0x99, // remote_rkey
        0, 0, 0, 100, // length
        0, 0, 0, 0, 0, 0, 0x10, 0, // sge.va
        0, 0, 0, 100, // sge.len
        0, 0, 0, 3, // sge.lkey
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn an_rdma_write_wqe_is_written_and_read_as_laid_out() {
        let sge = Sge {
            addr: 0x1000,
            len: 100,
            lkey: Lkey(3),
        };
        let mut b = [0u8; MIN_LEN];
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_wqe_id(7);
        p.set_op(super::super::op::RDMA_WRITE);
        p.set_num_sge_key(1);
        p.set_flags(FLAG_SIG);
        p.set_imm_data_key(0xaabb_ccdd);
        p.set_remote_va(0x1122_3344_5566_7788);
        p.set_remote_rkey(0x99);
        p.set_length(100);
        assert!(p.set_sge(PLD, 0, &sge));
        assert!(!p.set_sge(PLD, 2, &sge), "a third SGE is past 64 bytes");
        assert_eq!(b, WRITE_BYTES);
        let p = Packet::new_checked(&WRITE_BYTES[..]).unwrap();
        assert_eq!((p.wqe_id(), p.op(), p.num_sge_key()), (7, 4, 1));
        assert_eq!((p.flags(), p.imm_data_key()), (FLAG_SIG, 0xaabb_ccdd));
        assert_eq!(
            (p.remote_va(), p.remote_rkey()),
            (0x1122_3344_5566_7788, 0x99)
        );
        assert_eq!(p.length(), 100);
        assert_eq!(p.sge(PLD, 0), Some(sge));
        assert!(p.holds_sges(PLD, 2) && !p.holds_sges(PLD, 3));
        assert_eq!(p.sge(PLD, 2), None);
        assert_eq!(p.sge(usize::MAX, 1), None);
        assert_eq!(p.inline_data(), None, "100 bytes do not fit after PLD");
    }

    #[test]
    fn atomic_and_reg_mr_bodies_sit_where_the_header_puts_them() {
        let mut b = [0u8; MIN_LEN];
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_swap_add(0x0102_0304_0506_0708);
        p.set_compare(0x1112_1314_1516_1718);
        assert_eq!(
            &b[28..44],
            &[
                1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18
            ]
        );
        let mut b = [0u8; MIN_LEN];
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_reg_va(1);
        p.set_reg_length(2);
        p.set_reg_offset(3);
        p.set_reg_dma_addr(4);
        p.set_reg_map_count(5);
        p.set_reg_flags(6);
        p.set_reg_page_size_log2(12);
        for (at, v) in [
            (23, 1),
            (31, 2),
            (39, 3),
            (47, 4),
            (51, 5),
            (53, 6),
            (55, 12),
        ] {
            assert_eq!(b[at], v, "byte {at}");
        }
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.reg_va(), p.reg_length(), p.reg_offset(), p.reg_dma_addr()),
            (1, 2, 3, 4)
        );
        assert_eq!(
            (p.reg_map_count(), p.reg_flags(), p.reg_page_size_log2()),
            (5, 6, 12)
        );
    }

    #[test]
    fn inline_data_is_bounded_by_the_stride() {
        let mut b = [0u8; MIN_LEN];
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        assert!(p.inline_data_mut(33).is_none());
        p.inline_data_mut(32).unwrap().fill(0xee);
        p.set_length(32);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.inline_data(), Some(&[0xee; 32][..]));
        assert!(Packet::new_checked(&b[..63]).is_err());
    }
}
