//! `struct ionic_v1_eqe`: one big-endian word naming the queue an event is
//! for, its type and code, and the color of the pass round the EQ that
//! wrote it. ernic posts one kind, CQ notify (an armed CQ got an entry).
//! After [`Packet::new_checked`] no accessor panics.

#![allow(missing_docs)]

use super::{Field, get_be32, set_bytes};

pub const LEN: usize = 4;
pub const COLOR: u32 = 1 << 0;
pub const TYPE_SHIFT: u32 = 1;
pub const CODE_SHIFT: u32 = 4;
pub const QID_SHIFT: u32 = 8;
pub const TYPE_CQ: u32 = 0;
pub const CQ_NOTIFY: u32 = 0;

/// The fields, as byte ranges of the EQE.
pub mod field {
    use super::Field;
    /// `evt`: qid, code, type and color.
    pub const EVT: Field = 0..4;
}

view!("EQE", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// The whole `evt` word.
    pub fn evt(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::EVT)
    }

    /// The queue the event is for (a CQ id for CQ events).
    pub fn qid(&self) -> u32 {
        self.evt() >> QID_SHIFT
    }

    /// The event type (`TYPE_CQ`).
    pub fn event_type(&self) -> u32 {
        (self.evt() >> TYPE_SHIFT) & 7
    }

    /// The event code (`CQ_NOTIFY`).
    pub fn code(&self) -> u32 {
        (self.evt() >> CODE_SHIFT) & 0xf
    }

    /// The color bit.
    pub fn color(&self) -> bool {
        self.evt() & COLOR != 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the whole `evt` word.
    pub fn set_evt(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::EVT, &v.to_be_bytes());
    }

    /// Makes this a CQ-notify event for `cqid`, of color `color`.
    pub fn set_cq_notify(&mut self, cqid: u32, color: bool) {
        self.set_evt(
            cqid << QID_SHIFT
                | TYPE_CQ << TYPE_SHIFT
                | CQ_NOTIFY << CODE_SHIFT
                | if color { COLOR } else { 0 },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cq_notify_for_cq_0x123_is_its_id_above_the_color() {
        let mut b = [0u8; LEN];
        Packet::new_checked(&mut b[..])
            .unwrap()
            .set_cq_notify(0x123, true);
        assert_eq!(b, [0x00, 0x01, 0x23, 0x01]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.qid(), p.event_type(), p.code()),
            (0x123, TYPE_CQ, CQ_NOTIFY)
        );
        assert!(p.color());
        Packet::new_unchecked(&mut b[..]).set_cq_notify(0x123, false);
        assert_eq!(b, [0x00, 0x01, 0x23, 0x00]);
        assert!(Packet::new_checked(&b[..3]).is_err());
    }
}
