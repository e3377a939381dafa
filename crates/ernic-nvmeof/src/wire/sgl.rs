//! The 16-byte NVMe SGL descriptor (`struct nvme_sgl_desc`,
//! `struct nvme_keyed_sgl_desc`, `union nvme_data_ptr`): the data pointer a
//! fabrics command carries in its `dptr`. Byte 15 identifies it: the
//! descriptor type in the high nibble, the subtype in the low one.
//!
//! The view reads both layouts over the same bytes (a plain descriptor's
//! le32 length at 8..12; a keyed one's le24 length at 8..11 and le32 key at
//! 11..15). [`Descriptor`] is the validated form the target acts on: a keyed
//! data block (the host's memory, reached by RDMA READ/WRITE), a data block
//! (in-capsule data at an offset, or an address), a transport data block,
//! and every other type/subtype pair as [`Descriptor::Other`], so that a
//! controller can answer `SGL_INVALID_TYPE` or `INVALID_FIELD` rather than
//! fail to decode. Decoding never fails on 16 bytes.

use super::bits::{Field, array, get_le32, get_le64, set_bytes, view};
use crate::Error;

/// `sizeof(struct nvme_sgl_desc)` = `sizeof(struct nvme_keyed_sgl_desc)`.
pub const LEN: usize = 16;

/// The fields of both descriptor layouts, as byte ranges.
pub mod field {
    use super::Field;
    /// `addr` (le64), both layouts.
    pub const ADDR: Field = 0..8;
    /// `nvme_sgl_desc.length` (le32).
    pub const LENGTH: Field = 8..12;
    /// `nvme_sgl_desc.rsvd[3]`.
    pub const RSVD: Field = 12..15;
    /// `nvme_keyed_sgl_desc.length[3]` (le24).
    pub const KEYED_LENGTH: Field = 8..11;
    /// `nvme_keyed_sgl_desc.key[4]` (le32).
    pub const KEY: Field = 11..15;
    /// `type`: descriptor type (bits 4-7) and subtype (bits 0-3).
    pub const TYPE: usize = 15;
}

/// `NVME_SGL_FMT_DATA_DESC`: data block.
pub const TYPE_DATA: u8 = 0x0;
/// `NVME_SGL_FMT_SEG_DESC`: segment.
pub const TYPE_SEGMENT: u8 = 0x2;
/// `NVME_SGL_FMT_LAST_SEG_DESC`: last segment.
pub const TYPE_LAST_SEGMENT: u8 = 0x3;
/// `NVME_KEY_SGL_FMT_DATA_DESC`: keyed data block.
pub const TYPE_KEYED_DATA: u8 = 0x4;
/// `NVME_TRANSPORT_SGL_DATA_DESC`: transport SGL data block.
pub const TYPE_TRANSPORT_DATA: u8 = 0x5;

/// `NVME_SGL_FMT_ADDRESS`: the address is absolute.
pub const SUBTYPE_ADDRESS: u8 = 0x0;
/// `NVME_SGL_FMT_OFFSET`: the address is an offset into in-capsule data.
pub const SUBTYPE_OFFSET: u8 = 0x1;
/// `NVME_SGL_FMT_TRANSPORT_A`: transport-defined format A.
pub const SUBTYPE_TRANSPORT_A: u8 = 0xa;
/// `NVME_SGL_FMT_INVALIDATE`: RDMA, invalidate the key when done.
pub const SUBTYPE_INVALIDATE: u8 = 0xf;

/// The largest length a keyed descriptor's 24-bit field holds.
pub const KEYED_LEN_MAX: u32 = 0x00ff_ffff;

view!("NVMe SGL descriptor", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `addr`.
    pub fn addr(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::ADDR)
    }
    /// `nvme_sgl_desc.length`.
    pub fn length(&self) -> u32 {
        get_le32(self.buffer.as_ref(), field::LENGTH)
    }
    /// `nvme_keyed_sgl_desc.length`, 24 bits.
    pub fn keyed_length(&self) -> u32 {
        let [a, b, c] = array(self.buffer.as_ref(), field::KEYED_LENGTH);
        u32::from_le_bytes([a, b, c, 0])
    }
    /// `nvme_keyed_sgl_desc.key`.
    pub fn key(&self) -> u32 {
        get_le32(self.buffer.as_ref(), field::KEY)
    }
    /// The `type` byte, raw.
    pub fn type_byte(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// The descriptor type (high nibble of `type`).
    pub fn ty(&self) -> u8 {
        self.type_byte() >> 4
    }
    /// The descriptor subtype (low nibble of `type`).
    pub fn subtype(&self) -> u8 {
        self.type_byte() & 0xf
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `addr`.
    pub fn set_addr(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::ADDR, &v.to_le_bytes());
    }
    /// Sets `nvme_sgl_desc.length` (overwrites a keyed length and the key's
    /// first byte).
    pub fn set_length(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::LENGTH, &v.to_le_bytes());
    }
    /// Sets `nvme_sgl_desc.rsvd`.
    pub fn set_rsvd(&mut self, v: [u8; 3]) {
        set_bytes(self.buffer.as_mut(), field::RSVD, &v);
    }
    /// Sets the keyed length's 24 bits; the top byte of `v` is not written.
    pub fn set_keyed_length(&mut self, v: u32) {
        let b = v.to_le_bytes();
        set_bytes(self.buffer.as_mut(), field::KEYED_LENGTH, &b[..3]);
    }
    /// Sets `nvme_keyed_sgl_desc.key`.
    pub fn set_key(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::KEY, &v.to_le_bytes());
    }
    /// Sets the `type` byte, raw.
    pub fn set_type_byte(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }
}

/// An SGL descriptor, decoded by type and subtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descriptor {
    /// Type `NVME_KEY_SGL_FMT_DATA_DESC`, subtype `NVME_SGL_FMT_ADDRESS` or
    /// `NVME_SGL_FMT_INVALIDATE`: `len` bytes of host memory at `addr`
    /// under the remote key `key`.
    Keyed {
        /// The host's address (or the MR's iova).
        addr: u64,
        /// Length in bytes, 24 bits (at most [`KEYED_LEN_MAX`]).
        len: u32,
        /// The remote key.
        key: u32,
        /// Whether the host asks for the key to be invalidated with the
        /// response (subtype `NVME_SGL_FMT_INVALIDATE`).
        invalidate: bool,
    },
    /// Type `NVME_SGL_FMT_DATA_DESC`, subtype `NVME_SGL_FMT_ADDRESS` or
    /// `NVME_SGL_FMT_OFFSET`.
    DataBlock {
        /// An address, or with `offset` an offset into the capsule's data.
        addr: u64,
        /// Length in bytes.
        len: u32,
        /// Subtype `NVME_SGL_FMT_OFFSET`: the data came in the capsule.
        offset: bool,
    },
    /// Type `NVME_TRANSPORT_SGL_DATA_DESC`, any subtype (the transport
    /// defines them).
    Transport {
        /// Address field.
        addr: u64,
        /// Length in bytes.
        len: u32,
        /// Subtype, 4 bits.
        subtype: u8,
    },
    /// Any other type, or a subtype the types above do not define: the
    /// spec's bit bucket (type 1), segments, last segments, reserved types.
    /// The other bytes are not kept.
    Other {
        /// Descriptor type, 4 bits.
        ty: u8,
        /// Descriptor subtype, 4 bits.
        subtype: u8,
    },
}

impl Descriptor {
    /// Reads a descriptor; fails only on a short buffer.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Descriptor, Error> {
        packet.check_len()?;
        Ok(Descriptor::decode(packet))
    }

    /// Reads the 16 bytes of an SQE's `dptr` (as
    /// [`sqe::Packet::dptr`](super::sqe::Packet::dptr) returns them).
    pub fn from_dptr(dptr: &[u8; LEN]) -> Descriptor {
        Descriptor::decode(&Packet::new_unchecked(&dptr[..]))
    }

    /// The decoding; the caller has checked that the buffer holds [`LEN`]
    /// bytes.
    fn decode<T: AsRef<[u8]>>(packet: &Packet<T>) -> Descriptor {
        let (ty, subtype) = (packet.ty(), packet.subtype());
        match (ty, subtype) {
            (TYPE_KEYED_DATA, SUBTYPE_ADDRESS | SUBTYPE_INVALIDATE) => Descriptor::Keyed {
                addr: packet.addr(),
                len: packet.keyed_length(),
                key: packet.key(),
                invalidate: subtype == SUBTYPE_INVALIDATE,
            },
            (TYPE_DATA, SUBTYPE_ADDRESS | SUBTYPE_OFFSET) => Descriptor::DataBlock {
                addr: packet.addr(),
                len: packet.length(),
                offset: subtype == SUBTYPE_OFFSET,
            },
            (TYPE_TRANSPORT_DATA, _) => Descriptor::Transport {
                addr: packet.addr(),
                len: packet.length(),
                subtype,
            },
            _ => Descriptor::Other { ty, subtype },
        }
    }

    /// The bytes [`emit`](Self::emit) writes: [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes all 16 bytes (reserved bytes 0). Fails, writing nothing, on a
    /// keyed length over 24 bits, a subtype or type over 4 bits, or an
    /// [`Other`](Descriptor::Other) whose type and subtype have a variant of
    /// their own.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<(), Error> {
        packet.check_len()?;
        match *self {
            Descriptor::Keyed {
                addr,
                len,
                key,
                invalidate,
            } => {
                fits("keyed SGL length", len.into(), KEYED_LEN_MAX.into())?;
                packet.set_addr(addr);
                packet.set_keyed_length(len);
                packet.set_key(key);
                let sub = if invalidate {
                    SUBTYPE_INVALIDATE
                } else {
                    SUBTYPE_ADDRESS
                };
                packet.set_type_byte(TYPE_KEYED_DATA << 4 | sub);
            }
            Descriptor::DataBlock { addr, len, offset } => {
                let sub = if offset {
                    SUBTYPE_OFFSET
                } else {
                    SUBTYPE_ADDRESS
                };
                emit_plain(packet, addr, len, TYPE_DATA << 4 | sub);
            }
            Descriptor::Transport { addr, len, subtype } => {
                fits("SGL subtype", subtype.into(), 0xf)?;
                emit_plain(packet, addr, len, TYPE_TRANSPORT_DATA << 4 | subtype);
            }
            Descriptor::Other { ty, subtype } => {
                fits("SGL type", ty.into(), 0xf)?;
                fits("SGL subtype", subtype.into(), 0xf)?;
                let byte = ty << 4 | subtype;
                let mut probe = [0u8; LEN];
                probe[field::TYPE] = byte;
                if Descriptor::from_dptr(&probe) != *self {
                    return Err(Error::SglNotOther { ty, subtype });
                }
                emit_plain(packet, 0, 0, byte);
            }
        }
        Ok(())
    }
}

fn fits(field: &'static str, value: u64, max: u64) -> Result<(), Error> {
    if value > max {
        return Err(Error::TooWide { field, value, max });
    }
    Ok(())
}

fn emit_plain<T: AsRef<[u8]> + AsMut<[u8]>>(packet: &mut Packet<T>, addr: u64, len: u32, ty: u8) {
    packet.set_addr(addr);
    packet.set_length(len);
    packet.set_rsvd([0; 3]);
    packet.set_type_byte(ty);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emitted(d: Descriptor) -> [u8; 16] {
        let mut buf = [0xa5u8; 16];
        d.emit(&mut Packet::new_unchecked(&mut buf[..])).unwrap();
        buf
    }

    /// `nvme_rdma_set_sg_null` (drivers/nvme/host/rdma.c): addr 0, le24
    /// length 0, key 0, type `NVME_KEY_SGL_FMT_DATA_DESC << 4` (0x40).
    #[test]
    fn linux_sg_null() {
        let mut bytes = [0u8; 16];
        bytes[15] = 0x40;
        let d = Descriptor::from_dptr(&bytes);
        assert_eq!(
            d,
            Descriptor::Keyed {
                addr: 0,
                len: 0,
                key: 0,
                invalidate: false
            }
        );
        assert_eq!(emitted(d), bytes);
    }

    /// `nvme_rdma_map_sg_inline`: `struct nvme_sgl_desc` with addr = icdoff
    /// (0 here), le32 length 4096, type `(NVME_SGL_FMT_DATA_DESC << 4) |
    /// NVME_SGL_FMT_OFFSET` (0x01).
    #[test]
    fn linux_map_sg_inline() {
        let bytes = [
            0, 0, 0, 0, 0, 0, 0, 0, // addr: icdoff 0
            0x00, 0x10, 0x00, 0x00, // length 4096 (le32)
            0, 0, 0,    // rsvd
            0x01, // type 0, subtype offset
        ];
        let d = Descriptor::from_dptr(&bytes);
        assert_eq!(
            d,
            Descriptor::DataBlock {
                addr: 0,
                len: 4096,
                offset: true
            }
        );
        assert_eq!(emitted(d), bytes);
    }

    /// `nvme_rdma_map_sg_single`: keyed, addr = the DMA address, le24 length,
    /// le32 key = the PD's global rkey, type 0x40.
    #[test]
    fn linux_map_sg_single() {
        let bytes = [
            0x00, 0x30, 0x21, 0x43, 0x65, 0x87, 0x00, 0x00, // addr 0x8765_4321_3000
            0x00, 0x04, 0x00, // length 1024 (le24)
            0x78, 0x56, 0x34, 0x12, // key 0x12345678
            0x40, // type 4, subtype address
        ];
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!((p.ty(), p.subtype()), (TYPE_KEYED_DATA, SUBTYPE_ADDRESS));
        assert_eq!(p.keyed_length(), 1024);
        assert_eq!(p.key(), 0x1234_5678);
        let d = Descriptor::parse(&p).unwrap();
        assert_eq!(
            d,
            Descriptor::Keyed {
                addr: 0x8765_4321_3000,
                len: 1024,
                key: 0x1234_5678,
                invalidate: false
            }
        );
        assert_eq!(emitted(d), bytes);
    }

    /// `nvme_rdma_map_sg_fr`: keyed, addr = the MR's iova, le24 length =
    /// the MR's length, key = its rkey, type `(NVME_KEY_SGL_FMT_DATA_DESC <<
    /// 4) | NVME_SGL_FMT_INVALIDATE` (0x4f).
    #[test]
    fn linux_map_sg_fr() {
        let bytes = [
            0x00, 0xf0, 0xff, 0xff, 0x0f, 0x00, 0x00, 0x00, // iova 0xf_ffff_f000
            0x00, 0x00, 0x02, // length 128 KiB (le24 0x020000)
            0x07, 0x01, 0x00, 0x00, // rkey 0x107
            0x4f, // type 4, subtype invalidate
        ];
        let d = Descriptor::from_dptr(&bytes);
        assert_eq!(
            d,
            Descriptor::Keyed {
                addr: 0xf_ffff_f000,
                len: 0x2_0000,
                key: 0x107,
                invalidate: true
            }
        );
        assert_eq!(emitted(d), bytes);
    }

    /// The largest keyed length (le24 0xffffff) reads back whole and more
    /// is refused, not truncated.
    #[test]
    fn keyed_length_is_24_bits() {
        let mut bytes = [0u8; 16];
        bytes[8..11].copy_from_slice(&[0xff, 0xff, 0xff]);
        bytes[11] = 0x11; // key's low byte, not length
        bytes[15] = 0x40;
        let Descriptor::Keyed { len, key, .. } = Descriptor::from_dptr(&bytes) else {
            panic!("not keyed");
        };
        assert_eq!((len, key), (KEYED_LEN_MAX, 0x11));
        let mut buf = [0u8; 16];
        let too_long = Descriptor::Keyed {
            addr: 0,
            len: KEYED_LEN_MAX + 1,
            key: 0,
            invalidate: false,
        };
        assert_eq!(
            too_long.emit(&mut Packet::new_unchecked(&mut buf[..])),
            Err(Error::TooWide {
                field: "keyed SGL length",
                value: 0x100_0000,
                max: 0xff_ffff
            })
        );
        assert_eq!(buf, [0u8; 16], "nothing written");
    }

    /// Types and subtypes without a variant decode as `Other`, whatever
    /// the other 15 bytes hold.
    #[test]
    fn other_types_and_subtypes() {
        let cases = [
            (0x10, 1, 0), // bit bucket
            (0x20, TYPE_SEGMENT, 0),
            (0x30, TYPE_LAST_SEGMENT, 0),
            (0x02, TYPE_DATA, 2),         // data block, reserved subtype
            (0x0a, TYPE_DATA, 0xa),       // data block, transport A
            (0x41, TYPE_KEYED_DATA, 1),   // keyed, offset: not defined
            (0x4e, TYPE_KEYED_DATA, 0xe), // keyed, reserved
            (0xf0, 0xf, 0),               // vendor specific
            (0x60, 6, 0),                 // reserved type
        ];
        for (byte, ty, subtype) in cases {
            let mut bytes = [0x5au8; 16];
            bytes[15] = byte;
            let d = Descriptor::from_dptr(&bytes);
            assert_eq!(
                d,
                Descriptor::Other { ty, subtype },
                "type byte {byte:#04x}"
            );
            let out = emitted(d);
            assert_eq!(out[15], byte);
            assert_eq!(&out[..15], &[0u8; 15]);
            assert_eq!(Descriptor::from_dptr(&out), d);
        }
    }

    #[test]
    fn transport_descriptor() {
        let bytes = [
            0, 0, 0, 0, 0, 0, 0, 0, // addr 0
            0x00, 0x20, 0x00, 0x00, // length 8192
            0, 0, 0,    // rsvd
            0x5a, // NVME_TRANSPORT_SGL_DATA_DESC, NVME_SGL_FMT_TRANSPORT_A
        ];
        let d = Descriptor::from_dptr(&bytes);
        assert_eq!(
            d,
            Descriptor::Transport {
                addr: 0,
                len: 8192,
                subtype: SUBTYPE_TRANSPORT_A
            }
        );
        assert_eq!(emitted(d), bytes);
    }

    #[test]
    fn emit_refuses_what_would_not_read_back() {
        let mut buf = [0u8; 16];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        assert_eq!(
            Descriptor::Other { ty: 4, subtype: 0 }.emit(&mut p),
            Err(Error::SglNotOther { ty: 4, subtype: 0 })
        );
        assert_eq!(
            Descriptor::Other { ty: 5, subtype: 3 }.emit(&mut p),
            Err(Error::SglNotOther { ty: 5, subtype: 3 })
        );
        assert!(matches!(
            Descriptor::Other {
                ty: 0x10,
                subtype: 0
            }
            .emit(&mut p),
            Err(Error::TooWide {
                field: "SGL type",
                ..
            })
        ));
        assert!(matches!(
            Descriptor::Transport {
                addr: 0,
                len: 0,
                subtype: 0x10
            }
            .emit(&mut p),
            Err(Error::TooWide {
                field: "SGL subtype",
                ..
            })
        ));
    }

    #[test]
    fn every_type_byte_round_trips() {
        for byte in 0..=u8::MAX {
            let mut bytes = [0u8; 16];
            bytes[..8].copy_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
            bytes[8..15].copy_from_slice(&[0x10, 0x20, 0x30, 0x40, 0, 0, 0]);
            bytes[15] = byte;
            let d = Descriptor::from_dptr(&bytes);
            let out = emitted(d);
            assert_eq!(Descriptor::from_dptr(&out), d, "type byte {byte:#04x}");
            assert_eq!(out[15], byte);
        }
    }

    #[test]
    fn short_buffer() {
        let bytes = [0u8; 15];
        assert_eq!(
            Descriptor::parse(&Packet::new_unchecked(&bytes[..])),
            Err(Error::Truncated {
                format: "NVMe SGL descriptor",
                need: 16,
                len: 15
            })
        );
        let mut small = [0u8; 8];
        assert!(
            Descriptor::DataBlock {
                addr: 0,
                len: 0,
                offset: true
            }
            .emit(&mut Packet::new_unchecked(&mut small[..]))
            .is_err()
        );
    }
}
