//! BAR 2: doorbell pages of 4 KiB. Within a page the byte offset selects
//! the queue type (eight bytes per type); the 64-bit value carries the
//! producer index, the ring and the queue id (seed 001; `struct
//! ionic_doorbell` in `ionic_if.h`). Every page decodes the same way: the
//! kernel rings page 0, each user process its own page.

/// Bytes of BAR 2.
pub const BAR2_SIZE: u64 = 4 << 20;
/// Bytes of one doorbell page.
pub const PAGE: u64 = 4096;

/// A decoded doorbell write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doorbell {
    /// The page rung (a process's page; 0 for the kernel).
    pub page: u32,
    /// Queue type: 0-3 Ethernet (admin, notify, RX, TX), 5-9 RDMA (admin,
    /// SQ, RQ, CQ, EQ).
    pub qtype: u8,
    /// Queue id (bits 47:24).
    pub qid: u32,
    /// Ring: 0 new work, 1 arm a CQ, 2 arm a CQ for solicited events.
    pub ring: u8,
    /// Producer index, or a CQ's consumer index (bits 15:0).
    pub index: u16,
}

impl Doorbell {
    /// Decodes a write of `value` at `offset` in BAR 2; `None` when the
    /// offset is not an eight-byte slot of a page.
    pub fn decode(offset: u64, value: u64) -> Option<Doorbell> {
        if offset % 8 != 0 || offset >= BAR2_SIZE {
            return None;
        }
        Some(Doorbell {
            page: (offset / PAGE) as u32,
            qtype: ((offset % PAGE) / 8) as u8,
            qid: ((value >> 24) & 0xff_ffff) as u32,
            ring: ((value >> 16) & 0xff) as u8,
            index: value as u16,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // struct ionic_doorbell: p_index (16 bits), ring (8), qid_lo (8),
    // qid_hi (16): the qid's 24 bits start at bit 24.
    #[test]
    fn fields_come_from_the_offset_and_the_value() {
        let d = Doorbell::decode(3 * PAGE + 7 * 8, 0x0000_1234_5601_0042).unwrap();
        assert_eq!(
            d,
            Doorbell {
                page: 3,
                qtype: 7,
                qid: 0x12_3456,
                ring: 1,
                index: 0x42
            }
        );
        assert_eq!(Doorbell::decode(8 * 3 + 4, 1), None, "not a slot");
        assert_eq!(Doorbell::decode(BAR2_SIZE, 1), None, "past the BAR");
        assert_eq!(Doorbell::decode(0, u64::MAX).unwrap().qid, 0xff_ffff);
    }
}
