//! `struct ionic_v1_cqe` (32 bytes) as a work-request completion: the
//! receive and send arms of its union, and the status and
//! `qid_type_flags` words every CQE ends with. The admin arm is
//! [`super::admin_cqe`]. The device writes these ([`Packet`] setters, then
//! the last word, with the color, after the rest); the driver reads them.
//!
//! Multi-byte fields are big-endian unless their name in `field` has no
//! `_BE` in the flat constants (`wqe_id` words are the driver's own cookie,
//! little-endian). After [`Packet::new_checked`] no accessor panics.

#![allow(missing_docs)]

use super::{Field, get_be32, get_le64, set_bytes};

pub const LEN: usize = 32;
pub const ADMIN_CMD_IDX_BE: usize = 0;
pub const ADMIN_CMD_OP: usize = 2;
pub const RECV_WQE_ID: usize = 0;
pub const RECV_SRC_QPN_OP_BE: usize = 8;
pub const RECV_SRC_MAC: usize = 12;
pub const RECV_IMM_DATA_RKEY_BE: usize = 20;
pub const SEND_MSG_MSN_BE: usize = 4;
pub const SEND_NPG_WQE_ID: usize = 16;
pub const STATUS_LENGTH_BE: usize = 24;
pub const QID_TYPE_FLAGS_BE: usize = 28;
// qid_type_flags bits.
pub const COLOR: u32 = 1 << 0;
pub const ERROR: u32 = 1 << 1;
pub const TYPE_SHIFT: u32 = 5;
pub const QID_SHIFT: u32 = 8;
pub const TYPE_ADMIN: u32 = 0;
pub const TYPE_RECV: u32 = 1;
pub const TYPE_SEND_MSN: u32 = 2;
pub const TYPE_SEND_NPG: u32 = 3;

/// Receive CQE operation codes (`src_qpn_op` bits 24 and up).
pub mod recv_op {
    pub const SEND: u32 = 0;
    pub const SEND_INV: u32 = 1;
    pub const SEND_IMM: u32 = 2;
    pub const RDMA_IMM: u32 = 3;
    pub const SHIFT: u32 = 24;
    /// `IONIC_V1_CQE_RECV_IS_IPV4`: the GRH holds an IPv4 header.
    pub const IS_IPV4: u32 = 1 << 31;
}

/// The fields, as byte ranges of the CQE.
pub mod field {
    use super::Field;
    pub const RECV_WQE_ID: Field = 0..8;
    pub const RECV_SRC_QPN_OP: Field = 8..12;
    pub const RECV_SRC_MAC: Field = 12..18;
    pub const RECV_IMM_DATA_RKEY: Field = 20..24;
    pub const SEND_MSG_MSN: Field = 4..8;
    pub const SEND_NPG_WQE_ID: Field = 16..24;
    pub const STATUS_LENGTH: Field = 24..28;
    pub const QID_TYPE_FLAGS: Field = 28..32;
    /// The word published last, with the color: `status_length` and
    /// `qid_type_flags`, the CQE's last aligned 8 bytes.
    pub const TAIL: Field = 24..32;
}

view!("CQE", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `qid_type_flags`: queue id, CQE type, error and color bits.
    pub fn qid_type_flags(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::QID_TYPE_FLAGS)
    }

    /// The queue (QP or admin queue) the CQE is for.
    pub fn qid(&self) -> u32 {
        self.qid_type_flags() >> QID_SHIFT
    }

    /// The CQE type (`TYPE_ADMIN`, `TYPE_RECV`, `TYPE_SEND_MSN`,
    /// `TYPE_SEND_NPG`; others are possible in foreign bytes).
    pub fn cqe_type(&self) -> u32 {
        (self.qid_type_flags() >> TYPE_SHIFT) & 7
    }

    /// The color bit: which pass round the ring wrote the CQE.
    pub fn color(&self) -> bool {
        self.qid_type_flags() & COLOR != 0
    }

    /// The error bit: `status_length` is a status, not a length.
    pub fn error(&self) -> bool {
        self.qid_type_flags() & ERROR != 0
    }

    /// `status_length`: the bytes received, or with [`error`](Self::error)
    /// an `ionic_status` (or, for an admin CQE, an admin status).
    pub fn status_length(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::STATUS_LENGTH)
    }

    /// `recv.wqe_id`: the id of the receive WQE completed.
    pub fn recv_wqe_id(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::RECV_WQE_ID)
    }

    /// `recv.src_qpn_op`: the source QP (low 24 bits), the receive
    /// operation (bits 24 and up, [`recv_op`]) and the IPv4 flag.
    pub fn recv_src_qpn_op(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::RECV_SRC_QPN_OP)
    }

    /// `recv.src_mac`.
    pub fn recv_src_mac(&self) -> [u8; 6] {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::RECV_SRC_MAC]);
        m
    }

    /// `recv.imm_data_rkey`: immediate data, or the rkey invalidated.
    pub fn recv_imm_data_rkey(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::RECV_IMM_DATA_RKEY)
    }

    /// `send.msg_msn`: every request up to this sequence number is done.
    pub fn send_msg_msn(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::SEND_MSG_MSN)
    }

    /// `send.npg_wqe_id`: the send WQE (by index) completed.
    pub fn send_npg_wqe_id(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::SEND_NPG_WQE_ID)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `qid_type_flags`.
    pub fn set_qid_type_flags(&mut self, v: u32) {
        set_bytes(
            self.buffer.as_mut(),
            field::QID_TYPE_FLAGS,
            &v.to_be_bytes(),
        );
    }

    /// Sets `status_length`.
    pub fn set_status_length(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::STATUS_LENGTH, &v.to_be_bytes());
    }

    /// Sets `recv.wqe_id`.
    pub fn set_recv_wqe_id(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::RECV_WQE_ID, &v.to_le_bytes());
    }

    /// Sets `recv.src_qpn_op`.
    pub fn set_recv_src_qpn_op(&mut self, v: u32) {
        set_bytes(
            self.buffer.as_mut(),
            field::RECV_SRC_QPN_OP,
            &v.to_be_bytes(),
        );
    }

    /// Sets `recv.src_mac`.
    pub fn set_recv_src_mac(&mut self, mac: [u8; 6]) {
        set_bytes(self.buffer.as_mut(), field::RECV_SRC_MAC, &mac);
    }

    /// Sets `recv.imm_data_rkey`.
    pub fn set_recv_imm_data_rkey(&mut self, v: u32) {
        set_bytes(
            self.buffer.as_mut(),
            field::RECV_IMM_DATA_RKEY,
            &v.to_be_bytes(),
        );
    }

    /// Sets `send.msg_msn`.
    pub fn set_send_msg_msn(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::SEND_MSG_MSN, &v.to_be_bytes());
    }

    /// Sets `send.npg_wqe_id`.
    pub fn set_send_npg_wqe_id(&mut self, v: u64) {
        set_bytes(
            self.buffer.as_mut(),
            field::SEND_NPG_WQE_ID,
            &v.to_le_bytes(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fw::Error;

    /// A receive CQE for QP 5 (immediate data 0x1234_5678 from QP 0x0a0b0c,
    /// 300 bytes, color set) as `ionic_fw.h` lays it out.
    static RECV_BYTES: [u8; 32] = [
        0x11, 0, 0, 0, 0, 0, 0, 0, // wqe_id (le64)
        0x02, 0x0a, 0x0b, 0x0c, // src_qpn_op: SEND_IMM, QP 0x0a0b0c
        0x02, 0, 0, 0x0a, 0x0b, 0x0c, // src_mac
        0, 0, // vlan_tag
        0x12, 0x34, 0x56, 0x78, // imm_data_rkey
        0, 0, 0x01, 0x2c, // status_length: 300
        0, 0, 0x05, 0x21, // qid 5, TYPE_RECV, COLOR
    ];

    #[test]
    fn a_receive_cqe_reads_as_laid_out() {
        let p = Packet::new_checked(&RECV_BYTES[..]).unwrap();
        assert_eq!(p.qid(), 5);
        assert_eq!(p.cqe_type(), TYPE_RECV);
        assert!(p.color());
        assert!(!p.error());
        assert_eq!(p.status_length(), 300);
        assert_eq!(p.recv_wqe_id(), 0x11);
        assert_eq!(p.recv_src_qpn_op() >> recv_op::SHIFT, recv_op::SEND_IMM);
        assert_eq!(p.recv_src_qpn_op() & 0xff_ffff, 0x0a0b0c);
        assert_eq!(p.recv_src_mac(), [0x02, 0, 0, 0x0a, 0x0b, 0x0c]);
        assert_eq!(p.recv_imm_data_rkey(), 0x1234_5678);
    }

    #[test]
    fn a_receive_cqe_is_written_as_laid_out() {
        let mut b = [0u8; LEN];
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_recv_wqe_id(0x11);
        p.set_recv_src_qpn_op(recv_op::SEND_IMM << recv_op::SHIFT | 0x0a0b0c);
        p.set_recv_src_mac([0x02, 0, 0, 0x0a, 0x0b, 0x0c]);
        p.set_recv_imm_data_rkey(0x1234_5678);
        p.set_status_length(300);
        p.set_qid_type_flags(5 << QID_SHIFT | TYPE_RECV << TYPE_SHIFT | COLOR);
        assert_eq!(b, RECV_BYTES);
    }

    #[test]
    fn a_send_cqe_round_trips_its_msn_and_wqe_id() {
        let mut b = [0u8; LEN];
        let mut p = Packet::new_unchecked(&mut b);
        p.set_send_msg_msn(0x0102_0304);
        p.set_send_npg_wqe_id(0x0506);
        p.set_status_length(4);
        p.set_qid_type_flags(9 << QID_SHIFT | TYPE_SEND_MSN << TYPE_SHIFT | ERROR);
        assert_eq!(&b[4..8], &[1, 2, 3, 4]);
        assert_eq!(&b[16..24], &[6, 5, 0, 0, 0, 0, 0, 0]);
        let p = Packet::new_unchecked(&b);
        assert_eq!(p.send_msg_msn(), 0x0102_0304);
        assert_eq!(p.send_npg_wqe_id(), 0x0506);
        assert_eq!((p.qid(), p.cqe_type(), p.error()), (9, TYPE_SEND_MSN, true));
    }

    #[test]
    fn a_short_buffer_is_refused() {
        assert_eq!(
            Packet::new_checked(&[0u8; 31][..]),
            Err(Error::Truncated {
                format: "CQE",
                need: 32,
                len: 31
            })
        );
    }
}
