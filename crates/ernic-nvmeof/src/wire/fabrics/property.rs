//! The Fabrics Property Get and Property Set commands
//! (`struct nvmf_property_get_command`, `struct nvmf_property_set_command`):
//! how a fabrics host reads and writes the controller's registers
//! ([`registers`](super::registers)). Both share one layout: `attrib` at byte
//! 40 (bit 0: the property is 8 bytes wide, else 4), the property's offset
//! (le32) at 44..48, and for Set the value (le64) at 48..56. A Property Get's
//! value comes back in the completion's result.
//!
//! After [`Packet::new_checked`] no accessor panics; [`Repr::parse`] also
//! checks the opcode and `fctype`.

use super::super::bits::{Field, get_le16, get_le32, get_le64, set_bytes, view};
use super::super::sgl::{self, Descriptor};
use super::super::sqe::FLAGS_SGL_METABUF;
use super::{FabricsType, OPCODE, check};
use crate::Error;

/// A property command is an SQE: 64 bytes.
pub const LEN: usize = 64;

/// The fields of the two property commands, as byte ranges.
pub mod field {
    use super::Field;
    /// `command_id`.
    pub const COMMAND_ID: Field = 2..4;
    /// `fctype`.
    pub const FCTYPE: usize = 4;
    /// `resv2[35]`: bytes 5..40, where other SQEs hold `nsid`..`dptr`.
    pub const RESV2: Field = 5..40;
    /// Where the SQE's `dptr` is, inside `resv2` (Linux's RDMA host puts a
    /// null keyed descriptor there).
    pub const DPTR: Field = 24..40;
    /// `attrib`.
    pub const ATTRIB: usize = 40;
    /// `resv3[3]`.
    pub const RESV3: Field = 41..44;
    /// `offset` (le32): the property's offset (`NVME_REG_*`).
    pub const OFFSET: Field = 44..48;
    /// `value` (le64), Property Set only.
    pub const VALUE: Field = 48..56;
    /// `resv4`: 8 bytes in Set, 16 (from 48) in Get.
    pub const RESV4: Field = 56..64;
}

/// `attrib` bit 0: the property is 8 bytes wide.
pub const ATTRIB_SIZE_8: u8 = 1;

view!("NVMe Fabrics property command", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `command_id`.
    pub fn command_id(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::COMMAND_ID)
    }
    /// `attrib`, raw.
    pub fn attrib(&self) -> u8 {
        self.buffer.as_ref()[field::ATTRIB]
    }
    /// The width `attrib` names.
    pub fn size(&self) -> Size {
        if self.attrib() & ATTRIB_SIZE_8 != 0 {
            Size::Eight
        } else {
            Size::Four
        }
    }
    /// `offset`.
    pub fn offset(&self) -> u32 {
        get_le32(self.buffer.as_ref(), field::OFFSET)
    }
    /// `value` (meaningful in Property Set).
    pub fn value(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::VALUE)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `command_id`.
    pub fn set_command_id(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::COMMAND_ID, &v.to_le_bytes());
    }
    /// Sets `attrib`.
    pub fn set_attrib(&mut self, v: u8) {
        self.buffer.as_mut()[field::ATTRIB] = v;
    }
    /// Sets `offset`.
    pub fn set_offset(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::OFFSET, &v.to_le_bytes());
    }
    /// Sets `value`.
    pub fn set_value(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::VALUE, &v.to_le_bytes());
    }
}

/// A property's width, from `attrib` bit 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// 4 bytes (bit 0 clear).
    Four,
    /// 8 bytes (bit 0 set).
    Eight,
}

/// A Property Get or Set. Reserved bits of `attrib` and reserved bytes are
/// not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr {
    /// `nvme_fabrics_type_property_get`.
    Get {
        /// `command_id`.
        command_id: u16,
        /// The width asked for.
        size: Size,
        /// The property's offset.
        offset: u32,
    },
    /// `nvme_fabrics_type_property_set`.
    Set {
        /// `command_id`.
        command_id: u16,
        /// The width written.
        size: Size,
        /// The property's offset.
        offset: u32,
        /// The value, all 64 bits as sent (a 4-byte property uses the low
        /// half).
        value: u64,
    },
}

impl Repr {
    /// Reads a Property Get or Set; fails on a short buffer, another
    /// opcode, or another `fctype` (reported against Property Get).
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        let b = packet.buffer.as_ref();
        if check(b, FabricsType::PropertySet).is_ok() {
            return Ok(Repr::Set {
                command_id: packet.command_id(),
                size: packet.size(),
                offset: packet.offset(),
                value: packet.value(),
            });
        }
        check(b, FabricsType::PropertyGet)?;
        Ok(Repr::Get {
            command_id: packet.command_id(),
            size: packet.size(),
            offset: packet.offset(),
        })
    }

    /// The bytes [`emit`](Self::emit) writes: [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes all 64 bytes as Linux's RDMA host does (`nvmf_reg_read32`/
    /// `_read64`/`_write32` with `nvme_rdma_map_data`): `resv1` =
    /// `NVME_CMD_SGL_METABUF`, a null keyed descriptor in the `dptr` bytes,
    /// reserved bytes 0.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<(), Error> {
        packet.check_len()?;
        let (fctype, command_id, size, offset, value) = match *self {
            Repr::Get {
                command_id,
                size,
                offset,
            } => (FabricsType::PropertyGet, command_id, size, offset, 0),
            Repr::Set {
                command_id,
                size,
                offset,
                value,
            } => (FabricsType::PropertySet, command_id, size, offset, value),
        };
        let mut dptr = [0u8; sgl::LEN];
        let null = Descriptor::Keyed {
            addr: 0,
            len: 0,
            key: 0,
            invalidate: false,
        };
        null.emit(&mut sgl::Packet::new_unchecked(&mut dptr[..]))?;
        let b = packet.buffer.as_mut();
        b[..LEN].fill(0);
        b[0] = OPCODE;
        b[1] = FLAGS_SGL_METABUF;
        b[field::FCTYPE] = u8::from(fctype);
        set_bytes(b, field::DPTR, &dptr);
        packet.set_command_id(command_id);
        packet.set_attrib(match size {
            Size::Four => 0,
            Size::Eight => ATTRIB_SIZE_8,
        });
        packet.set_offset(offset);
        packet.set_value(value);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::registers::{REG_CAP, REG_CC};
    use super::*;

    /// A Property Get of CAP as Linux's `nvmf_reg_read64` builds it (fctype
    /// property get, attrib 1, offset `NVME_REG_CAP`), sent by the RDMA host
    /// with `NVME_CMD_SGL_METABUF` and `nvme_rdma_set_sg_null`'s descriptor.
    /// Offsets from `struct nvmf_property_get_command`.
    static GET_CAP: [u8; 64] = [
        0x7f, 0x40, 0x02, 0x00, // opcode, resv1, command_id 2
        0x04, 0, 0, 0, 0, 0, 0, 0, // fctype property get, resv2...
        0, 0, 0, 0, 0, 0, 0, 0, //
        0, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 0, 0, // (dptr) addr 0
        0, 0, 0, 0, 0, 0, 0, 0x40, // len 0, key 0, keyed data block
        0x01, 0, 0, 0, // attrib: 8 bytes, resv3
        0x00, 0x00, 0x00, 0x00, // offset NVME_REG_CAP
        0, 0, 0, 0, 0, 0, 0, 0, // resv4[16]
        0, 0, 0, 0, 0, 0, 0, 0, //
    ];

    #[test]
    fn layout_is_nvme_h() {
        assert_eq!(field::RESV2.len(), 35);
        assert_eq!(field::ATTRIB, 40);
        assert_eq!(field::OFFSET.start, 44);
        assert_eq!(field::VALUE, 48..56);
        assert_eq!(field::RESV4.end, LEN);
    }

    #[test]
    fn get_cap() {
        let p = Packet::new_checked(&GET_CAP[..]).unwrap();
        assert_eq!(p.size(), Size::Eight);
        assert_eq!(p.offset(), REG_CAP);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            Repr::Get {
                command_id: 2,
                size: Size::Eight,
                offset: 0
            }
        );
        let mut out = [0x99u8; 64];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, GET_CAP);
    }

    /// `nvmf_reg_write32` of CC: fctype property set (0x00), attrib 0,
    /// offset `NVME_REG_CC` (0x14), value le64 at 48.
    #[test]
    fn set_cc() {
        let mut b = GET_CAP;
        b[4] = 0x00;
        b[40] = 0x00;
        b[44..48].copy_from_slice(&[0x14, 0, 0, 0]);
        b[48..56].copy_from_slice(&[0x01, 0x00, 0x46, 0x00, 0, 0, 0, 0]);
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            Repr::Set {
                command_id: 2,
                size: Size::Four,
                offset: REG_CC,
                value: 0x0046_0001
            }
        );
        let mut out = [0u8; 64];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, b);
    }

    #[test]
    fn attrib_reserved_bits_ignored() {
        let mut b = GET_CAP;
        b[40] = 0xfe;
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            Repr::Get {
                command_id: 2,
                size: Size::Four,
                offset: 0
            }
        );
    }

    #[test]
    fn other_commands_refused() {
        let mut b = GET_CAP;
        b[4] = 0x01;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::FabricsType {
                expected: 0x04,
                found: 0x01
            })
        );
        b[0] = 0x02;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])),
            Err(Error::NotFabrics { opcode: 0x02 })
        );
        assert!(Repr::parse(&Packet::new_unchecked(&GET_CAP[..56])).is_err());
    }
}
