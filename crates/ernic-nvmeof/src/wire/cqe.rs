//! The 16-byte NVMe completion queue entry (`struct nvme_completion`): the
//! command-specific result, the submission queue's head and identifier, the
//! command identifier, and the status word (phase tag in bit 0, the
//! [`Status`] field in bits 1..16). The view is lossless; the [`Repr`] keeps
//! the status as a [`Status`] and leaves the phase tag to the transport
//! (fabrics send 0). After [`Packet::new_checked`] no accessor panics.

use super::bits::{Field, get_le16, get_le64, set_bytes, view};
use super::status::Status;
use crate::Error;

/// `sizeof(struct nvme_completion)`: 16 bytes.
pub const LEN: usize = 16;

/// The fields of `struct nvme_completion`, as byte ranges.
pub mod field {
    use super::Field;
    /// `result` (`union nvme_result`: le16, le32 or le64; dword 0 is bytes
    /// 0..4, dword 1 bytes 4..8).
    pub const RESULT: Field = 0..8;
    /// `sq_head` (le16).
    pub const SQ_HEAD: Field = 8..10;
    /// `sq_id` (le16).
    pub const SQ_ID: Field = 10..12;
    /// `command_id` (`__u16`, little-endian on the wire as in the SQE).
    pub const COMMAND_ID: Field = 12..14;
    /// `status` (le16): phase tag bit 0, status field bits 1..16.
    pub const STATUS: Field = 14..16;
}

/// The phase tag: bit 0 of the `status` word.
pub const STATUS_PHASE: u16 = 1;

view!("NVMe completion queue entry", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `result`, all 64 bits.
    pub fn result(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::RESULT)
    }
    /// `result.u32`: dword 0, the low half of [`result`](Self::result).
    pub fn result_dw0(&self) -> u32 {
        self.result() as u32
    }
    /// Dword 1, the high half of [`result`](Self::result).
    pub fn result_dw1(&self) -> u32 {
        (self.result() >> 32) as u32
    }
    /// `sq_head`.
    pub fn sq_head(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::SQ_HEAD)
    }
    /// `sq_id`.
    pub fn sq_id(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::SQ_ID)
    }
    /// `command_id`.
    pub fn command_id(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::COMMAND_ID)
    }
    /// `status`, the whole word, raw.
    pub fn status_word(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::STATUS)
    }
    /// The phase tag (bit 0 of `status`).
    pub fn phase(&self) -> bool {
        self.status_word() & STATUS_PHASE != 0
    }
    /// The status field (bits 1..16 of `status`, shifted down: Linux's
    /// `le16_to_cpu(cqe->status) >> 1`).
    pub fn status_field(&self) -> u16 {
        self.status_word() >> 1
    }
    /// The status, decoded (CRD dropped, see [`Status`]).
    pub fn status(&self) -> Status {
        Status::from_field(self.status_field())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `result`.
    pub fn set_result(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::RESULT, &v.to_le_bytes());
    }
    /// Sets `sq_head`.
    pub fn set_sq_head(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::SQ_HEAD, &v.to_le_bytes());
    }
    /// Sets `sq_id`.
    pub fn set_sq_id(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::SQ_ID, &v.to_le_bytes());
    }
    /// Sets `command_id`.
    pub fn set_command_id(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::COMMAND_ID, &v.to_le_bytes());
    }
    /// Sets the whole `status` word, raw.
    pub fn set_status_word(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::STATUS, &v.to_le_bytes());
    }
    /// Sets the status field (bits 1..16) and the phase tag (bit 0).
    pub fn set_status(&mut self, status: Status, phase: bool) {
        self.set_status_word((status.to_field() << 1) | u16::from(phase));
    }
}

/// A completion entry as the target builds it: the phase tag is 0, as on
/// fabrics, and [`parse`](Repr::parse) ignores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// Dwords 0 and 1 (dword 0 in the low half).
    pub result: u64,
    /// `sq_head`.
    pub sq_head: u16,
    /// `sq_id`.
    pub sq_id: u16,
    /// `command_id`, as the host sent it.
    pub command_id: u16,
    /// The status.
    pub status: Status,
}

impl Repr {
    /// Reads a completion entry; fails only on a short buffer.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        Ok(Repr {
            result: packet.result(),
            sq_head: packet.sq_head(),
            sq_id: packet.sq_id(),
            command_id: packet.command_id(),
            status: packet.status(),
        })
    }

    /// The bytes [`emit`](Self::emit) writes: [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes every byte of the entry, phase tag 0.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_result(self.result);
        packet.set_sq_head(self.sq_head);
        packet.set_sq_id(self.sq_id);
        packet.set_command_id(self.command_id);
        packet.set_status(self.status, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written from `struct nvme_completion` in `include/linux/nvme.h`: a
    /// failed Connect (`NVME_SC_CONNECT_INVALID_PARAM | NVME_STATUS_DNR`,
    /// field 0x4182, word 0x8304) whose result is 0x0001_002c.
    static CQE_BYTES: [u8; 16] = [
        0x2c, 0x00, 0x01, 0x00, // result dword 0
        0x00, 0x00, 0x00, 0x00, // result dword 1
        0x05, 0x00, // sq_head 5
        0x00, 0x00, // sq_id 0
        0x34, 0x12, // command_id 0x1234
        0x04, 0x83, // status: (0x4182 << 1) | phase 0
    ];

    #[test]
    fn len_is_nvme_h() {
        assert_eq!(LEN, 16);
        assert_eq!(field::STATUS.end, LEN);
    }

    #[test]
    fn parse_fields() {
        let p = Packet::new_checked(&CQE_BYTES[..]).unwrap();
        assert_eq!(p.result(), 0x0001_002c);
        assert_eq!(p.result_dw0(), 0x0001_002c);
        assert_eq!(p.result_dw1(), 0);
        assert_eq!(p.sq_head(), 5);
        assert_eq!(p.sq_id(), 0);
        assert_eq!(p.command_id(), 0x1234);
        assert_eq!(p.status_word(), 0x8304);
        assert!(!p.phase());
        assert_eq!(p.status_field(), 0x4182);
        assert_eq!(p.status(), Status::CONNECT_INVALID_PARAM.with_dnr());
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr {
                result: 0x0001_002c,
                sq_head: 5,
                sq_id: 0,
                command_id: 0x1234,
                status: Status::CONNECT_INVALID_PARAM.with_dnr(),
            }
        );
    }

    #[test]
    fn emit_same_bytes() {
        let r = Repr::parse(&Packet::new_checked(&CQE_BYTES[..]).unwrap()).unwrap();
        let mut buf = [0xffu8; 16];
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, CQE_BYTES);
        assert_eq!(r.buffer_len(), 16);
    }

    #[test]
    fn result_halves_and_phase() {
        let mut buf = [0u8; 16];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_result(0x1122_3344_5566_7788);
        p.set_status(Status::SUCCESS, true);
        assert_eq!(p.result_dw0(), 0x5566_7788);
        assert_eq!(p.result_dw1(), 0x1122_3344);
        assert!(p.phase());
        assert_eq!(p.status_word(), 0x0001);
        assert_eq!(
            &buf[0..8],
            &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]
        );
        // Repr drops the phase tag: parsed, it is a plain success.
        let r = Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(r.status, Status::SUCCESS);
    }

    #[test]
    fn short_buffer() {
        assert_eq!(
            Packet::new_checked(&CQE_BYTES[..15]).unwrap_err(),
            Error::Truncated {
                format: "NVMe completion queue entry",
                need: 16,
                len: 15
            }
        );
        assert!(Repr::parse(&Packet::new_unchecked(&CQE_BYTES[..3])).is_err());
    }
}
