//! `struct ionic_v1_admin_wqe`: an RDMA admin command as the driver
//! writes it into the admin queue — a 4-byte header (opcode, command
//! length), then the command, which continues into the following 64-byte
//! strides when it is longer than 60. The commands themselves are
//! [`super::admin_cmd`]. The device reads these; the driver writes them. After [`Packet::new_checked`] (one whole stride) no
//! header accessor panics.

#![allow(missing_docs)]

use super::{Field, get_le16, set_bytes};

pub const OP: usize = 0;
pub const LEN: usize = 2;
pub const CMD: usize = 4;
/// `ADMIN_WQE_STRIDE`.
pub const STRIDE: usize = 64;
/// `ADMIN_WQE_HDR_LEN`.
pub const HDR_LEN: usize = 4;

/// The header's fields, as byte ranges of the first stride.
pub mod field {
    use super::Field;
    pub const OP: usize = 0;
    pub const LEN: Field = 2..4;
    /// The first stride's part of the command.
    pub const CMD: Field = 4..64;
}

view!("admin WQE", STRIDE);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `op` (`super::admin_op`, or ernic's `super::srq_op`).
    pub fn op(&self) -> u8 {
        self.buffer.as_ref()[field::OP]
    }

    /// `len`: the command's bytes.
    pub fn len(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::LEN)
    }

    /// Whether the command is empty (`len` 0).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The strides the WQE takes (at least one).
    pub fn strides(&self) -> usize {
        strides(usize::from(self.len()))
    }

    /// The command's part in this stride.
    pub fn cmd(&self) -> &[u8] {
        &self.buffer.as_ref()[field::CMD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `op`.
    pub fn set_op(&mut self, v: u8) {
        self.buffer.as_mut()[field::OP] = v;
    }

    /// Sets `len`.
    pub fn set_len(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::LEN, &v.to_le_bytes());
    }
}

/// The strides an admin WQE with a `len`-byte command takes (at least one).
pub fn strides(len: usize) -> usize {
    len.saturating_add(HDR_LEN).div_ceil(STRIDE).max(1)
}

#[cfg(test)]
mod tests {
    use super::super::create_qp;
    use super::*;

    #[test]
    fn the_header_is_op_then_a_little_endian_length() {
        let mut b = [0u8; STRIDE];
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_op(super::super::admin_op::CREATE_QP);
        p.set_len(create_qp::LEN as u16);
        assert_eq!(&b[..4], &[2, 0, 64, 0]);
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.op(), p.len(), p.strides()), (2, 64, 2));
        assert_eq!(p.cmd().len(), 60);
        assert_eq!((strides(0), strides(60), strides(61)), (1, 1, 2));
        assert!(Packet::new_checked(&b[..63]).is_err());
    }
}
