//! The 32-bit immediate every data post carries, the only word of a
//! message a peer's CQ reports: `seq | comm_id << 10 | nseg << 28` for the
//! RDMA protocol's segments, `seq | comm << 10 | index << 22 | last << 31`
//! for a SENDRECV chunk. Packing masks every field to its width; splitting
//! never fails (a peer's word is checked by whoever looks its fields up).

use super::SEQ_BITS;

/// The immediate of a SENDRECV chunk: `seq | comm << 10 | index << 22 |
/// last << 31` (12 bits of comm id hold every comm of an endpoint).
pub fn sr_imm(seq: u16, comm: u32, index: usize, last: bool) -> u32 {
    u32::from(seq) & 0x3ff
        | (comm & 0xfff) << 10
        | (index as u32 & 0x1ff) << 22
        | u32::from(last) << 31
}

/// The (seq, comm id, chunk index, last) of a SENDRECV immediate.
pub fn split_sr_imm(data: u32) -> (u16, u32, usize, bool) {
    (
        (data & 0x3ff) as u16,
        (data >> 10) & 0xfff,
        ((data >> 22) & 0x1ff) as usize,
        data >> 31 == 1,
    )
}

/// The immediate word of a message's segments.
pub fn imm(seq: u16, comm: u32, nseg: u8) -> u32 {
    u32::from(seq) & 0x3ff | (comm & 0x3ffff) << SEQ_BITS | u32::from(nseg & 0xf) << 28
}

/// The (seq, comm id, segment count) of an immediate word.
pub fn split_imm(data: u32) -> (u16, u32, u8) {
    (
        (data & 0x3ff) as u16,
        (data >> SEQ_BITS) & 0x3ffff,
        (data >> 28) as u8,
    )
}
