//! The common MAD header (`struct ib_mad_hdr`, `include/rdma/ib_mad.h`):
//! the first 24 bytes of every 256-byte management datagram a GSI QP
//! sends and receives, and the CM class's constants (class 0x07, class
//! version 2, method SEND, the attribute ids of `include/rdma/ib_cm.h`).
//!
//! [`Repr`] here is any MAD header, of any class; a CM message's `parse`
//! (through [`Repr::check_cm`]) is what insists on the CM class, version,
//! method and its own attribute. After [`Packet::new_checked`] no accessor
//! panics. All fields are big-endian.

use crate::Error;
use crate::bits::{Field, get_be16, get_be32, get_be64, set_bytes, view};

/// Bytes of a MAD (`IB_MGMT_MAD_SIZE`).
pub const MAD_LEN: usize = 256;
/// Bytes of the common header (`IB_MGMT_MAD_HDR`).
pub const HEADER_LEN: usize = 24;
/// Bytes after the header (`IB_MGMT_MAD_DATA`).
pub const DATA_LEN: usize = MAD_LEN - HEADER_LEN;

/// `IB_MGMT_BASE_VERSION`.
pub const BASE_VERSION: u8 = 1;
/// `IB_MGMT_CLASS_CM`.
pub const CLASS_CM: u8 = 0x07;
/// `IB_CM_CLASS_VERSION` (IBA 1.2), `drivers/infiniband/core/cm_msgs.h`.
pub const CM_CLASS_VERSION: u8 = 2;

/// The header's fields, as byte ranges.
pub mod field {
    use super::Field;
    /// `base_version`.
    pub const BASE_VERSION: usize = 0;
    /// `mgmt_class`.
    pub const MGMT_CLASS: usize = 1;
    /// `class_version`.
    pub const CLASS_VERSION: usize = 2;
    /// `method`.
    pub const METHOD: usize = 3;
    /// `status`.
    pub const STATUS: Field = 4..6;
    /// `class_specific`.
    pub const CLASS_SPECIFIC: Field = 6..8;
    /// `tid`: the transaction id.
    pub const TID: Field = 8..16;
    /// `attr_id`.
    pub const ATTR_ID: Field = 16..18;
    /// `resv`.
    pub const RESV: Field = 18..20;
    /// `attr_mod` (CM: the ECE options of a REQ/REP).
    pub const ATTR_MOD: Field = 20..24;
}

/// A MAD method (`IB_MGMT_METHOD_*`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Method {
    /// GET (0x01).
    Get,
    /// SET (0x02).
    Set,
    /// SEND (0x03): every CM message.
    Send,
    /// TRAP (0x05).
    Trap,
    /// REPORT (0x06).
    Report,
    /// TRAP_REPRESS (0x07).
    TrapRepress,
    /// GET_RESP (0x81).
    GetResp,
    /// REPORT_RESP (0x86).
    ReportResp,
    /// A method this crate does not name.
    Unknown(u8),
}

impl From<u8> for Method {
    fn from(v: u8) -> Method {
        match v {
            0x01 => Method::Get,
            0x02 => Method::Set,
            0x03 => Method::Send,
            0x05 => Method::Trap,
            0x06 => Method::Report,
            0x07 => Method::TrapRepress,
            0x81 => Method::GetResp,
            0x86 => Method::ReportResp,
            v => Method::Unknown(v),
        }
    }
}

impl From<Method> for u8 {
    fn from(m: Method) -> u8 {
        match m {
            Method::Get => 0x01,
            Method::Set => 0x02,
            Method::Send => 0x03,
            Method::Trap => 0x05,
            Method::Report => 0x06,
            Method::TrapRepress => 0x07,
            Method::GetResp => 0x81,
            Method::ReportResp => 0x86,
            Method::Unknown(v) => v,
        }
    }
}

/// A CM attribute id (`CM_*_ATTR_ID`, `include/rdma/ib_cm.h`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AttrId {
    /// ClassPortInfo (0x0001).
    ClassPortInfo,
    /// REQ (0x0010).
    Req,
    /// MRA (0x0011).
    Mra,
    /// REJ (0x0012).
    Rej,
    /// REP (0x0013).
    Rep,
    /// RTU (0x0014).
    Rtu,
    /// DREQ (0x0015).
    Dreq,
    /// DREP (0x0016).
    Drep,
    /// SIDR_REQ (0x0017); not decoded here.
    SidrReq,
    /// SIDR_REP (0x0018); not decoded here.
    SidrRep,
    /// LAP (0x0019); not decoded here.
    Lap,
    /// APR (0x001A); not decoded here.
    Apr,
    /// An attribute this crate does not name.
    Unknown(u16),
}

impl From<u16> for AttrId {
    fn from(v: u16) -> AttrId {
        match v {
            0x0001 => AttrId::ClassPortInfo,
            0x0010 => AttrId::Req,
            0x0011 => AttrId::Mra,
            0x0012 => AttrId::Rej,
            0x0013 => AttrId::Rep,
            0x0014 => AttrId::Rtu,
            0x0015 => AttrId::Dreq,
            0x0016 => AttrId::Drep,
            0x0017 => AttrId::SidrReq,
            0x0018 => AttrId::SidrRep,
            0x0019 => AttrId::Lap,
            0x001A => AttrId::Apr,
            v => AttrId::Unknown(v),
        }
    }
}

impl From<AttrId> for u16 {
    fn from(a: AttrId) -> u16 {
        match a {
            AttrId::ClassPortInfo => 0x0001,
            AttrId::Req => 0x0010,
            AttrId::Mra => 0x0011,
            AttrId::Rej => 0x0012,
            AttrId::Rep => 0x0013,
            AttrId::Rtu => 0x0014,
            AttrId::Dreq => 0x0015,
            AttrId::Drep => 0x0016,
            AttrId::SidrReq => 0x0017,
            AttrId::SidrRep => 0x0018,
            AttrId::Lap => 0x0019,
            AttrId::Apr => 0x001A,
            AttrId::Unknown(v) => v,
        }
    }
}

view!("MAD header", HEADER_LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `base_version`.
    pub fn base_version(&self) -> u8 {
        self.buffer.as_ref()[field::BASE_VERSION]
    }
    /// `mgmt_class`.
    pub fn mgmt_class(&self) -> u8 {
        self.buffer.as_ref()[field::MGMT_CLASS]
    }
    /// `class_version`.
    pub fn class_version(&self) -> u8 {
        self.buffer.as_ref()[field::CLASS_VERSION]
    }
    /// `method`.
    pub fn method(&self) -> Method {
        self.buffer.as_ref()[field::METHOD].into()
    }
    /// `status`.
    pub fn status(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::STATUS)
    }
    /// `class_specific`.
    pub fn class_specific(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::CLASS_SPECIFIC)
    }
    /// `tid`.
    pub fn tid(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::TID)
    }
    /// `attr_id`.
    pub fn attr_id(&self) -> AttrId {
        get_be16(self.buffer.as_ref(), field::ATTR_ID).into()
    }
    /// `resv`.
    pub fn resv(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::RESV)
    }
    /// `attr_mod`.
    pub fn attr_mod(&self) -> u32 {
        get_be32(self.buffer.as_ref(), field::ATTR_MOD)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `base_version`.
    pub fn set_base_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::BASE_VERSION] = v;
    }
    /// Sets `mgmt_class`.
    pub fn set_mgmt_class(&mut self, v: u8) {
        self.buffer.as_mut()[field::MGMT_CLASS] = v;
    }
    /// Sets `class_version`.
    pub fn set_class_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::CLASS_VERSION] = v;
    }
    /// Sets `method`.
    pub fn set_method(&mut self, v: Method) {
        self.buffer.as_mut()[field::METHOD] = v.into();
    }
    /// Sets `status`.
    pub fn set_status(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::STATUS, &v.to_be_bytes());
    }
    /// Sets `class_specific`.
    pub fn set_class_specific(&mut self, v: u16) {
        set_bytes(
            self.buffer.as_mut(),
            field::CLASS_SPECIFIC,
            &v.to_be_bytes(),
        );
    }
    /// Sets `tid`.
    pub fn set_tid(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::TID, &v.to_be_bytes());
    }
    /// Sets `attr_id`.
    pub fn set_attr_id(&mut self, v: AttrId) {
        set_bytes(
            self.buffer.as_mut(),
            field::ATTR_ID,
            &u16::from(v).to_be_bytes(),
        );
    }
    /// Sets `resv`.
    pub fn set_resv(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::RESV, &v.to_be_bytes());
    }
    /// Sets `attr_mod`.
    pub fn set_attr_mod(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::ATTR_MOD, &v.to_be_bytes());
    }
}

/// A MAD header, of any class. `resv` is not kept: it is emitted as 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Repr {
    /// `base_version`.
    pub base_version: u8,
    /// `mgmt_class`.
    pub mgmt_class: u8,
    /// `class_version`.
    pub class_version: u8,
    /// `method`.
    pub method: Method,
    /// `status`.
    pub status: u16,
    /// `class_specific`.
    pub class_specific: u16,
    /// `tid`.
    pub tid: u64,
    /// `attr_id`.
    pub attr_id: AttrId,
    /// `attr_mod`.
    pub attr_mod: u32,
}

impl Repr {
    /// The header Linux's CM writes (`cm_format_mad_hdr`, with
    /// `cm_format_mad_ece_hdr`'s `attr_mod`): base version 1, class CM,
    /// version 2, method SEND, status 0.
    pub fn cm(attr_id: AttrId, tid: u64, attr_mod: u32) -> Repr {
        Repr {
            base_version: BASE_VERSION,
            mgmt_class: CLASS_CM,
            class_version: CM_CLASS_VERSION,
            method: Method::Send,
            status: 0,
            class_specific: 0,
            tid,
            attr_id,
            attr_mod,
        }
    }

    /// Reads a header of any class.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check_len()?;
        Ok(Repr {
            base_version: p.base_version(),
            mgmt_class: p.mgmt_class(),
            class_version: p.class_version(),
            method: p.method(),
            status: p.status(),
            class_specific: p.class_specific(),
            tid: p.tid(),
            attr_id: p.attr_id(),
            attr_mod: p.attr_mod(),
        })
    }

    /// Whether this is a CM message (base version 1, class CM, version 2,
    /// method SEND) carrying attribute `attr` of the message `format`.
    pub fn check_cm(&self, format: &'static str, attr: AttrId) -> Result<(), Error> {
        self.check_cm_class()?;
        if self.attr_id != attr {
            return Err(Error::Attribute {
                format,
                expected: attr.into(),
                got: self.attr_id.into(),
            });
        }
        Ok(())
    }

    /// Whether this is a CM message of any attribute.
    pub fn check_cm_class(&self) -> Result<(), Error> {
        if self.base_version != BASE_VERSION {
            return Err(Error::BaseVersion {
                got: self.base_version,
            });
        }
        if self.mgmt_class != CLASS_CM {
            return Err(Error::NotCm {
                got: self.mgmt_class,
            });
        }
        if self.class_version != CM_CLASS_VERSION {
            return Err(Error::ClassVersion {
                got: self.class_version,
            });
        }
        if self.method != Method::Send {
            return Err(Error::Method {
                got: self.method.into(),
            });
        }
        Ok(())
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into a checked view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_base_version(self.base_version);
        p.set_mgmt_class(self.mgmt_class);
        p.set_class_version(self.class_version);
        p.set_method(self.method);
        p.set_status(self.status);
        p.set_class_specific(self.class_specific);
        p.set_tid(self.tid);
        p.set_attr_id(self.attr_id);
        p.set_resv(0);
        p.set_attr_mod(self.attr_mod);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CM DREQ header, field by field from `struct ib_mad_hdr`.
    static BYTES: [u8; HEADER_LEN] = [
        0x01, // base_version
        0x07, // mgmt_class: CM
        0x02, // class_version
        0x03, // method: SEND
        0x00, 0x1c, // status
        0xa1, 0xa2, // class_specific
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // tid
        0x00, 0x15, // attr_id: DREQ
        0x00, 0x00, // resv
        0xde, 0xad, 0xbe, 0xef, // attr_mod
    ];

    fn repr() -> Repr {
        Repr {
            status: 0x1c,
            class_specific: 0xa1a2,
            ..Repr::cm(AttrId::Dreq, 0x1122_3344_5566_7788, 0xdead_beef)
        }
    }

    #[test]
    fn the_header_reads_and_writes_as_laid_out() {
        let p = Packet::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.method(), Method::Send);
        assert_eq!(p.attr_id(), AttrId::Dreq);
        assert_eq!(p.tid(), 0x1122_3344_5566_7788);
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r, repr());
        r.check_cm("DREQ", AttrId::Dreq).unwrap();
        let mut b = [0xffu8; HEADER_LEN];
        r.emit(&mut Packet::new_checked(&mut b[..]).unwrap());
        assert_eq!(b, BYTES);
    }

    #[test]
    fn a_short_header_is_an_error() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                Packet::new_checked(&BYTES[..n]).unwrap_err(),
                Error::Truncated {
                    format: "MAD header",
                    need: HEADER_LEN,
                    len: n
                }
            );
            assert!(Repr::parse(&Packet::new_unchecked(&BYTES[..n])).is_err());
        }
    }

    #[test]
    fn check_cm_refuses_other_classes_versions_methods_and_attributes() {
        let ok = repr();
        let e = |r: Repr| r.check_cm("DREQ", AttrId::Dreq).unwrap_err();
        assert_eq!(
            e(Repr {
                base_version: 2,
                ..ok
            }),
            Error::BaseVersion { got: 2 }
        );
        assert_eq!(
            e(Repr {
                mgmt_class: 0x03,
                ..ok
            }),
            Error::NotCm { got: 0x03 }
        );
        assert_eq!(
            e(Repr {
                class_version: 1,
                ..ok
            }),
            Error::ClassVersion { got: 1 }
        );
        assert_eq!(
            e(Repr {
                method: Method::Get,
                ..ok
            }),
            Error::Method { got: 0x01 }
        );
        assert_eq!(
            e(Repr {
                attr_id: AttrId::Drep,
                ..ok
            }),
            Error::Attribute {
                format: "DREQ",
                expected: 0x15,
                got: 0x16
            }
        );
    }

    #[test]
    fn codes_convert_both_ways_and_keep_unknowns() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(Method::from(v)), v);
        }
        for v in 0..=0x100u16 {
            assert_eq!(u16::from(AttrId::from(v)), v);
        }
        assert_eq!(AttrId::from(0x0013), AttrId::Rep);
        assert_eq!(AttrId::from(0x0020), AttrId::Unknown(0x20));
        assert_eq!(Method::from(0x81), Method::GetResp);
    }
}
