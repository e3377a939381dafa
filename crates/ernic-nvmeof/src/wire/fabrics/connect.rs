//! The Fabrics Connect command (`struct nvmf_connect_command`), which binds
//! a queue to a controller, and the result its completion carries: the
//! controller ID on success, and on `NVME_SC_CONNECT_INVALID_PARAM` which
//! parameter was wrong ([`InvalidParam`], the IATTR/IPO layout Linux's target
//! fills with `IPO_IATTR_CONNECT_DATA`/`IPO_IATTR_CONNECT_SQE`). The command's
//! 1024 bytes of data are [`connect_data`](super::connect_data).
//!
//! After [`Packet::new_checked`] no accessor panics; [`Repr::parse`] also
//! checks the opcode and `fctype`.

use super::super::bits::{Field, array, get_le16, get_le32, set_bytes, view};
use super::super::sgl::{self, Descriptor};
use super::super::sqe::FLAGS_SGL_METABUF;
use super::{FabricsType, OPCODE, check};
use crate::Error;

/// A Connect command is an SQE: 64 bytes.
pub const LEN: usize = 64;

/// The fields of `struct nvmf_connect_command`, as byte ranges.
pub mod field {
    use super::Field;
    /// `opcode`.
    pub const OPCODE: usize = 0;
    /// `resv1` (the SQE's `flags`).
    pub const RESV1: usize = 1;
    /// `command_id`.
    pub const COMMAND_ID: Field = 2..4;
    /// `fctype`.
    pub const FCTYPE: usize = 4;
    /// `resv2[19]`.
    pub const RESV2: Field = 5..24;
    /// `dptr`: one SGL descriptor for the Connect data.
    pub const DPTR: Field = 24..40;
    /// `recfmt` (le16): record format, 0.
    pub const RECFMT: Field = 40..42;
    /// `qid` (le16): 0 for the admin queue.
    pub const QID: Field = 42..44;
    /// `sqsize` (le16), 0's based.
    pub const SQSIZE: Field = 44..46;
    /// `cattr`: connect attributes.
    pub const CATTR: usize = 46;
    /// `resv3`.
    pub const RESV3: usize = 47;
    /// `kato` (le32): keep alive timeout, milliseconds.
    pub const KATO: Field = 48..52;
    /// `resv4[12]`.
    pub const RESV4: Field = 52..64;
}

/// `NVME_CONNECT_DISABLE_SQFLOW`: the host asks for SQ flow control off
/// (the target then reports `sq_head` 0xffff).
pub const CATTR_DISABLE_SQFLOW: u8 = 1 << 2;

/// `NVME_CONNECT_AUTHREQ_ATR`: in a successful Connect's result, the
/// controller requires authentication.
pub const AUTHREQ_ATR: u32 = 1 << 17;
/// `NVME_CONNECT_AUTHREQ_ASCR`: in a successful Connect's result, the
/// controller requires secure channel concatenation.
pub const AUTHREQ_ASCR: u32 = 1 << 18;

/// `NVME_CNTLID_MIN`: the lowest controller ID a target hands out.
pub const CNTLID_MIN: u16 = 1;
/// `NVME_CNTLID_MAX`: the highest.
pub const CNTLID_MAX: u16 = 0xffef;
/// `NVME_CNTLID_DYNAMIC`: an admin Connect's data asks for any controller.
pub const CNTLID_DYNAMIC: u16 = 0xffff;

view!("NVMe Fabrics Connect command", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `command_id`.
    pub fn command_id(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::COMMAND_ID)
    }
    /// `dptr`, the 16 bytes.
    pub fn dptr(&self) -> [u8; sgl::LEN] {
        array(self.buffer.as_ref(), field::DPTR)
    }
    /// `recfmt`.
    pub fn recfmt(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::RECFMT)
    }
    /// `qid`.
    pub fn qid(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::QID)
    }
    /// `sqsize` (0's based: the queue holds `sqsize + 1` entries).
    pub fn sqsize(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::SQSIZE)
    }
    /// `cattr`.
    pub fn cattr(&self) -> u8 {
        self.buffer.as_ref()[field::CATTR]
    }
    /// `kato`, milliseconds.
    pub fn kato(&self) -> u32 {
        get_le32(self.buffer.as_ref(), field::KATO)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `command_id`.
    pub fn set_command_id(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::COMMAND_ID, &v.to_le_bytes());
    }
    /// Sets `dptr`.
    pub fn set_dptr(&mut self, v: &[u8; sgl::LEN]) {
        set_bytes(self.buffer.as_mut(), field::DPTR, v);
    }
    /// Sets `recfmt`.
    pub fn set_recfmt(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::RECFMT, &v.to_le_bytes());
    }
    /// Sets `qid`.
    pub fn set_qid(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::QID, &v.to_le_bytes());
    }
    /// Sets `sqsize`.
    pub fn set_sqsize(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::SQSIZE, &v.to_le_bytes());
    }
    /// Sets `cattr`.
    pub fn set_cattr(&mut self, v: u8) {
        self.buffer.as_mut()[field::CATTR] = v;
    }
    /// Sets `kato`.
    pub fn set_kato(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::KATO, &v.to_le_bytes());
    }
}

/// A Connect command. Reserved bytes are not kept; the values are as the
/// host sent them (a controller checks `recfmt`, `qid`, `sqsize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// `command_id`.
    pub command_id: u16,
    /// Where the 1024 bytes of Connect data are.
    pub sgl: Descriptor,
    /// `recfmt`.
    pub recfmt: u16,
    /// `qid`.
    pub qid: u16,
    /// `sqsize`, 0's based.
    pub sqsize: u16,
    /// `cattr`.
    pub cattr: u8,
    /// `kato`, milliseconds.
    pub kato: u32,
}

impl Repr {
    /// Reads a Connect command; fails on a short buffer, another opcode or
    /// another `fctype`.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        check(packet.buffer.as_ref(), FabricsType::Connect)?;
        Ok(Repr {
            command_id: packet.command_id(),
            sgl: Descriptor::from_dptr(&packet.dptr()),
            recfmt: packet.recfmt(),
            qid: packet.qid(),
            sqsize: packet.sqsize(),
            cattr: packet.cattr(),
            kato: packet.kato(),
        })
    }

    /// The bytes [`emit`](Self::emit) writes: [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes all 64 bytes, reserved ones 0 and `resv1` set to
    /// `NVME_CMD_SGL_METABUF` as Linux's RDMA host does for every command.
    /// Fails on a descriptor [`Descriptor::emit`] refuses, or a short buffer.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<(), Error> {
        packet.check_len()?;
        let mut dptr = [0u8; sgl::LEN];
        self.sgl
            .emit(&mut sgl::Packet::new_unchecked(&mut dptr[..]))?;
        packet.buffer.as_mut()[..LEN].fill(0);
        let b = packet.buffer.as_mut();
        b[field::OPCODE] = OPCODE;
        b[field::RESV1] = FLAGS_SGL_METABUF;
        b[field::FCTYPE] = u8::from(FabricsType::Connect);
        packet.set_command_id(self.command_id);
        packet.set_dptr(&dptr);
        packet.set_recfmt(self.recfmt);
        packet.set_qid(self.qid);
        packet.set_sqsize(self.sqsize);
        packet.set_cattr(self.cattr);
        packet.set_kato(self.kato);
        Ok(())
    }
}

/// A successful Connect's result dword 0: the controller ID in bits 0..16
/// and the `AUTHREQ` bits ([`AUTHREQ_ATR`], [`AUTHREQ_ASCR`]).
pub const fn success_result(cntlid: u16, authreq: u32) -> u32 {
    cntlid as u32 | (authreq & (AUTHREQ_ATR | AUTHREQ_ASCR))
}

/// The controller ID in a successful Connect's result dword 0.
pub const fn result_cntlid(dw0: u32) -> u16 {
    dw0 as u16
}

/// Which Connect parameter was invalid: the result dword 0 of a
/// `NVME_SC_CONNECT_INVALID_PARAM` completion. IATTR (bit 16) says whether
/// the offset is into the Connect data (1) or the command (0); IPO (bits
/// 0..16) is the byte offset of the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidParam {
    /// IATTR: the offset is into the Connect data, not the SQE.
    pub in_data: bool,
    /// IPO: the field's byte offset.
    pub offset: u16,
}

/// IATTR's bit in the result.
const IATTR: u32 = 1 << 16;

impl InvalidParam {
    /// A field of the Connect command (`IPO_IATTR_CONNECT_SQE`).
    pub const fn in_command(offset: u16) -> InvalidParam {
        InvalidParam {
            in_data: false,
            offset,
        }
    }
    /// A field of the Connect data (`IPO_IATTR_CONNECT_DATA`).
    pub const fn in_data(offset: u16) -> InvalidParam {
        InvalidParam {
            in_data: true,
            offset,
        }
    }
    /// `sqsize` is invalid (zero, or over CAP.MQES).
    pub const SQSIZE: InvalidParam = InvalidParam::in_command(field::SQSIZE.start as u16);
    /// `qid` is invalid.
    pub const QID: InvalidParam = InvalidParam::in_command(field::QID.start as u16);
    /// The data's `cntlid` is invalid.
    pub const CNTLID: InvalidParam =
        InvalidParam::in_data(super::connect_data::field::CNTLID.start as u16);
    /// The data's `subsysnqn` names no subsystem here.
    pub const SUBSYSNQN: InvalidParam =
        InvalidParam::in_data(super::connect_data::field::SUBSYSNQN.start as u16);
    /// The data's `hostnqn` is invalid.
    pub const HOSTNQN: InvalidParam =
        InvalidParam::in_data(super::connect_data::field::HOSTNQN.start as u16);

    /// The result dword 0.
    pub const fn to_result(self) -> u32 {
        let iattr = if self.in_data { IATTR } else { 0 };
        iattr | self.offset as u32
    }
    /// Reads a result dword 0 (bits above 16 ignored).
    pub const fn from_result(dw0: u32) -> InvalidParam {
        InvalidParam {
            in_data: dw0 & IATTR != 0,
            offset: dw0 as u16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An admin-queue Connect as Linux's host builds it
    /// (`nvmf_connect_cmd_prep` for qid 0: sqsize `NVME_AQ_DEPTH - 1` = 31,
    /// kato `ctrl->kato * 1000` = 5000 for the default 5 s;
    /// `nvme_rdma_map_data` sets `NVME_CMD_SGL_METABUF` and, for the admin
    /// queue, a keyed descriptor for the 1024 data bytes as
    /// `nvme_rdma_map_sg_single` writes it). Offsets from
    /// `struct nvmf_connect_command`.
    static ADMIN_CONNECT: [u8; 64] = [
        0x7f, 0x40, 0x1f, 0x00, // opcode, resv1 = SGL_METABUF, command_id 31
        0x01, 0, 0, 0, 0, 0, 0, 0, // fctype connect, resv2...
        0, 0, 0, 0, 0, 0, 0, 0, //
        0, 0, 0, 0, // ...resv2 (19 bytes in all)
        0x00, 0x10, 0x2a, 0x7b, 0x00, 0x00, 0x00, 0x00, // dptr addr 0x7b2a_1000
        0x00, 0x04, 0x00, // le24 length 1024
        0x44, 0x33, 0x22, 0x11, // key 0x11223344
        0x40, // keyed data block, address
        0x00, 0x00, // recfmt 0
        0x00, 0x00, // qid 0
        0x1f, 0x00, // sqsize 31
        0x00, 0x00, // cattr, resv3
        0x88, 0x13, 0x00, 0x00, // kato 5000
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // resv4
    ];

    #[test]
    fn layout_is_nvme_h() {
        assert_eq!(field::RESV2.len(), 19);
        assert_eq!(field::DPTR.start, 24);
        assert_eq!(field::RECFMT.start, 40);
        assert_eq!(field::QID.start, 42);
        assert_eq!(field::SQSIZE.start, 44);
        assert_eq!(field::CATTR, 46);
        assert_eq!(field::KATO.start, 48);
        assert_eq!(field::RESV4.len(), 12);
        assert_eq!(field::RESV4.end, LEN);
    }

    #[test]
    fn parse_linux_admin_connect() {
        let p = Packet::new_checked(&ADMIN_CONNECT[..]).unwrap();
        assert_eq!(p.recfmt(), 0);
        assert_eq!(p.qid(), 0);
        assert_eq!(p.sqsize(), 31);
        assert_eq!(p.kato(), 5000);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr {
                command_id: 31,
                sgl: Descriptor::Keyed {
                    addr: 0x7b2a_1000,
                    len: 1024,
                    key: 0x1122_3344,
                    invalidate: false
                },
                recfmt: 0,
                qid: 0,
                sqsize: 31,
                cattr: 0,
                kato: 5000,
            }
        );
        let mut out = [0xeeu8; 64];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, ADMIN_CONNECT);
    }

    #[test]
    fn io_connect_fields() {
        let mut b = ADMIN_CONNECT;
        let mut p = Packet::new_unchecked(&mut b[..]);
        p.set_qid(3);
        p.set_sqsize(127);
        p.set_kato(0);
        p.set_cattr(CATTR_DISABLE_SQFLOW);
        assert_eq!(&b[42..48], &[0x03, 0x00, 0x7f, 0x00, 0x04, 0x00]);
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!((r.qid, r.sqsize, r.cattr, r.kato), (3, 127, 0x04, 0));
    }

    #[test]
    fn parse_refuses_other_commands() {
        let mut b = ADMIN_CONNECT;
        b[4] = 0x04;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::FabricsType {
                expected: 1,
                found: 4
            })
        );
        b[0] = 0x06;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::NotFabrics { opcode: 6 })
        );
        assert!(Repr::parse(&Packet::new_unchecked(&ADMIN_CONNECT[..63])).is_err());
    }

    /// `nvmet_connect_result`: `(u32)ctrl->cntlid | NVME_CONNECT_AUTHREQ_ATR`
    /// when authentication is needed.
    #[test]
    fn success_results() {
        assert_eq!(success_result(1, 0), 1);
        assert_eq!(success_result(0x0102, AUTHREQ_ATR), 0x0002_0102);
        assert_eq!(success_result(7, AUTHREQ_ASCR | 1 << 20), 0x0004_0007);
        assert_eq!(result_cntlid(0x0002_0102), 0x0102);
    }

    /// `IPO_IATTR_CONNECT_DATA(x)` = `(1 << 16) | offsetof(struct
    /// nvmf_connect_data, x)`, `IPO_IATTR_CONNECT_SQE(x)` = `offsetof(struct
    /// nvmf_connect_command, x)` (drivers/nvme/target/nvmet.h), with the
    /// offsets of include/linux/nvme.h: data cntlid 16, subsysnqn 256,
    /// hostnqn 512; command qid 42, sqsize 44.
    #[test]
    fn invalid_param_results() {
        assert_eq!(InvalidParam::CNTLID.to_result(), 0x1_0010);
        assert_eq!(InvalidParam::SUBSYSNQN.to_result(), 0x1_0100);
        assert_eq!(InvalidParam::HOSTNQN.to_result(), 0x1_0200);
        assert_eq!(InvalidParam::QID.to_result(), 42);
        assert_eq!(InvalidParam::SQSIZE.to_result(), 44);
        assert_eq!(InvalidParam::from_result(0x1_0100), InvalidParam::SUBSYSNQN);
        assert_eq!(
            InvalidParam::from_result(0xfffe_002c),
            InvalidParam {
                in_data: false,
                offset: 44
            }
        );
    }

    #[test]
    fn cntlid_constants() {
        assert_eq!(
            (CNTLID_MIN, CNTLID_MAX, CNTLID_DYNAMIC),
            (1, 0xffef, 0xffff)
        );
    }
}
