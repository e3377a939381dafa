//! `struct ionic_v1_cqe` as an admin command's completion: the `admin` arm
//! of its union (the command's ring index and opcode), ernic's two result
//! words in its reserved bytes (what the SRQ commands answer, at
//! [`super::srq::CQE_RESULT`]), and the common status and
//! `qid_type_flags` words, the status being an admin status
//! (`super::admin_status`). The device writes these for each admin WQE it
//! runs; the driver waits for them. After [`Packet::new_checked`] no
//! accessor panics.

use super::cqe::{self, ERROR, QID_SHIFT, TYPE_ADMIN, TYPE_SHIFT};
use super::{Field, get_be16, get_be32, get_le32, set_bytes};

/// Bytes of an admin CQE (a CQE).
pub const LEN: usize = cqe::LEN;

/// The fields, as byte ranges of the CQE.
pub mod field {
    use super::Field;
    /// `admin.cmd_idx` (big-endian): the command's admin ring index.
    pub const CMD_IDX: Field = 0..2;
    /// `admin.cmd_op`.
    pub const CMD_OP: usize = 2;
    /// ernic's first result word (little-endian), in `admin.rsvd`.
    pub const RESULT0: Field = 4..8;
    /// ernic's second result word.
    pub const RESULT1: Field = 8..12;
}

view!("admin CQE", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `admin.cmd_idx`.
    pub fn cmd_idx(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::CMD_IDX)
    }

    /// `admin.cmd_op`.
    pub fn cmd_op(&self) -> u8 {
        self.buffer.as_ref()[field::CMD_OP]
    }

    /// ernic's two result words.
    pub fn result(&self) -> [u32; 2] {
        let b = self.buffer.as_ref();
        [get_le32(b, field::RESULT0), get_le32(b, field::RESULT1)]
    }

    /// The admin status (meaningful with [`failed`](Self::failed)).
    pub fn status(&self) -> u32 {
        get_be32(self.buffer.as_ref(), cqe::field::STATUS_LENGTH)
    }

    /// Whether the command failed (the CQE's error bit).
    pub fn failed(&self) -> bool {
        get_be32(self.buffer.as_ref(), cqe::field::QID_TYPE_FLAGS) & ERROR != 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `admin.cmd_idx`.
    pub fn set_cmd_idx(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::CMD_IDX, &v.to_be_bytes());
    }

    /// Sets `admin.cmd_op`.
    pub fn set_cmd_op(&mut self, v: u8) {
        self.buffer.as_mut()[field::CMD_OP] = v;
    }

    /// Sets ernic's two result words.
    pub fn set_result(&mut self, r: [u32; 2]) {
        let b = self.buffer.as_mut();
        set_bytes(b, field::RESULT0, &r[0].to_le_bytes());
        set_bytes(b, field::RESULT1, &r[1].to_le_bytes());
    }

    /// Sets the status word.
    pub fn set_status(&mut self, v: u32) {
        set_bytes(
            self.buffer.as_mut(),
            cqe::field::STATUS_LENGTH,
            &v.to_be_bytes(),
        );
    }
}

/// The `qid_type_flags` of an admin CQE for admin queue `aqid` (without
/// the color, which the ring's position gives).
pub fn qid_type_flags(aqid: u32, failed: bool) -> u32 {
    let qtf = aqid << QID_SHIFT | TYPE_ADMIN << TYPE_SHIFT;
    if failed { qtf | ERROR } else { qtf }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The admin CQE for command 7 (CREATE_QP, op 2) on admin queue 1,
    /// failed with BAD_ATTR (5), results 0x10 and 0x20, color set.
    static BYTES: [u8; 32] = [
        0, 7, // cmd_idx
        2, // cmd_op
        0, // rsvd
        0x10, 0, 0, 0, 0x20, 0, 0, 0, // ernic's results
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // rsvd
        0, 0, 0, 5, // status
        0, 0, 0x01, 0x03, // qid 1, TYPE_ADMIN, ERROR, COLOR
    ];

    #[test]
    fn an_admin_cqe_is_written_and_read_as_laid_out() {
        let mut b = [0u8; LEN];
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_cmd_idx(7);
        p.set_cmd_op(2);
        p.set_result([0x10, 0x20]);
        p.set_status(5);
        let mut c = cqe::Packet::new_unchecked(&mut b[..]);
        c.set_qid_type_flags(qid_type_flags(1, true) | cqe::COLOR);
        assert_eq!(b, BYTES);
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!((p.cmd_idx(), p.cmd_op(), p.status()), (7, 2, 5));
        assert_eq!(p.result(), [0x10, 0x20]);
        assert!(p.failed());
        assert!(Packet::new_checked(&BYTES[..31]).is_err());
    }
}
