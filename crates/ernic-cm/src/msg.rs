//! Any CM message, told apart by its MAD header's attribute id: what a GSI
//! QP's receive hands to the CM, decoded in one call. Also the header
//! handling every message shares: a CM message is a MAD whose header says
//! base version 1, class CM, class version 2, method SEND and its own
//! attribute.

use crate::mad::{self, AttrId, MAD_LEN};
use crate::{Error, drep, dreq, mra, rej, rep, req, rtu};

/// Reads and checks the CM header of a buffer that holds a whole MAD.
pub(crate) fn parse_header(
    b: &[u8],
    format: &'static str,
    attr: AttrId,
) -> Result<mad::Repr, Error> {
    let h = mad::Repr::parse(&mad::Packet::new_checked(b)?)?;
    h.check_cm(format, attr)?;
    Ok(h)
}

/// Writes `h` into a buffer that holds a whole MAD.
pub(crate) fn emit_header(b: &mut [u8], h: mad::Repr) {
    h.emit(&mut mad::Packet::new_unchecked(b));
}

/// One CM message of the kinds this crate decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmMessage {
    /// REQ.
    Req(req::Repr),
    /// REP.
    Rep(rep::Repr),
    /// RTU.
    Rtu(rtu::Repr),
    /// REJ.
    Rej(rej::Repr),
    /// MRA.
    Mra(mra::Repr),
    /// DREQ.
    Dreq(dreq::Repr),
    /// DREP.
    Drep(drep::Repr),
}

impl CmMessage {
    /// Decodes a MAD as the CM message its attribute id names.
    pub fn parse(b: &[u8]) -> Result<CmMessage, Error> {
        let h = mad::Repr::parse(&mad::Packet::new_checked(b)?)?;
        h.check_cm_class()?;
        Ok(match h.attr_id {
            AttrId::Req => CmMessage::Req(req::Repr::parse(&req::Packet::new_checked(b)?)?),
            AttrId::Rep => CmMessage::Rep(rep::Repr::parse(&rep::Packet::new_checked(b)?)?),
            AttrId::Rtu => CmMessage::Rtu(rtu::Repr::parse(&rtu::Packet::new_checked(b)?)?),
            AttrId::Rej => CmMessage::Rej(rej::Repr::parse(&rej::Packet::new_checked(b)?)?),
            AttrId::Mra => CmMessage::Mra(mra::Repr::parse(&mra::Packet::new_checked(b)?)?),
            AttrId::Dreq => CmMessage::Dreq(dreq::Repr::parse(&dreq::Packet::new_checked(b)?)?),
            AttrId::Drep => CmMessage::Drep(drep::Repr::parse(&drep::Packet::new_checked(b)?)?),
            other => return Err(Error::UnknownAttribute { got: other.into() }),
        })
    }

    /// The message's attribute id.
    pub fn attr_id(&self) -> AttrId {
        match self {
            CmMessage::Req(_) => AttrId::Req,
            CmMessage::Rep(_) => AttrId::Rep,
            CmMessage::Rtu(_) => AttrId::Rtu,
            CmMessage::Rej(_) => AttrId::Rej,
            CmMessage::Mra(_) => AttrId::Mra,
            CmMessage::Dreq(_) => AttrId::Dreq,
            CmMessage::Drep(_) => AttrId::Drep,
        }
    }

    /// Bytes [`emit`](Self::emit) writes: a whole MAD.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Writes the message as a whole MAD into the first [`MAD_LEN`] bytes
    /// of `b`.
    pub fn emit(&self, b: &mut [u8]) -> Result<(), Error> {
        match self {
            CmMessage::Req(r) => r.emit(&mut req::Packet::new_checked(b)?),
            CmMessage::Rep(r) => r.emit(&mut rep::Packet::new_checked(b)?),
            CmMessage::Rtu(r) => r.emit(&mut rtu::Packet::new_checked(b)?),
            CmMessage::Rej(r) => r.emit(&mut rej::Packet::new_checked(b)?),
            CmMessage::Mra(r) => r.emit(&mut mra::Packet::new_checked(b)?),
            CmMessage::Dreq(r) => r.emit(&mut dreq::Packet::new_checked(b)?),
            CmMessage::Drep(r) => r.emit(&mut drep::Packet::new_checked(b)?),
        }
        Ok(())
    }
}

/// Which message a REJ rejects or an MRA acknowledges (`enum
/// cm_msg_response`, `cm_msgs.h`): the 2-bit "Message REJected" and
/// "Message MRAed" fields, whose value 3 is reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgResponse {
    /// The REQ (0).
    Req,
    /// The REP (1).
    Rep,
    /// Another message: a LAP, for MRA (2).
    Other,
}

impl MsgResponse {
    /// Decodes the 2-bit field `field`; 3 is an error.
    pub(crate) fn from_bits(field: &'static str, v: u8) -> Result<MsgResponse, Error> {
        match v {
            0 => Ok(MsgResponse::Req),
            1 => Ok(MsgResponse::Rep),
            2 => Ok(MsgResponse::Other),
            value => Err(Error::ReservedMessage { field, value }),
        }
    }

    /// The field's value.
    pub fn bits(self) -> u8 {
        match self {
            MsgResponse::Req => 0,
            MsgResponse::Rep => 1,
            MsgResponse::Other => 2,
        }
    }
}

/// What every message's tests check the same way.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A CM MAD header written by hand (`struct ib_mad_hdr`): base version
    /// 1, class CM, version 2, SEND, status 0, tid 0x0102030405060708,
    /// attribute `attr`, `attr_mod`.
    pub fn header(attr: u16, attr_mod: u32) -> [u8; 24] {
        let [a0, a1] = attr.to_be_bytes();
        let [m0, m1, m2, m3] = attr_mod.to_be_bytes();
        [
            0x01, 0x07, 0x02, 0x03, // base, class, class version, method
            0x00, 0x00, 0x00, 0x00, // status, class_specific
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // tid
            a0, a1, 0x00, 0x00, // attr_id, resv
            m0, m1, m2, m3, // attr_mod
        ]
    }

    /// The tid [`header`] writes.
    pub const TID: u64 = 0x0102_0304_0506_0708;

    /// `parse` (a message's `Repr::parse` over `Packet::new_checked`) of
    /// good `bytes` of message `format` (attribute `attr`) succeeds, and
    /// fails, without panicking, on every truncation, on another
    /// attribute, class, class version or method; `CmMessage` decodes the
    /// bytes and emits them back.
    pub fn refuses_what_any_cm_message_refuses(
        bytes: &[u8; MAD_LEN],
        format: &'static str,
        attr: u16,
        parse: fn(&[u8]) -> Result<(), Error>,
    ) {
        parse(bytes).unwrap();
        for n in 0..MAD_LEN {
            assert_eq!(
                parse(&bytes[..n]).unwrap_err(),
                Error::Truncated {
                    format,
                    need: MAD_LEN,
                    len: n
                },
                "{format} cut to {n} bytes"
            );
            assert!(CmMessage::parse(&bytes[..n]).is_err());
        }
        let with = |at: usize, v: u8| {
            let mut b = *bytes;
            b[at] = v;
            parse(&b).unwrap_err()
        };
        assert_eq!(with(0, 2), Error::BaseVersion { got: 2 });
        assert_eq!(with(1, 0x04), Error::NotCm { got: 0x04 });
        assert_eq!(with(2, 1), Error::ClassVersion { got: 1 });
        assert_eq!(with(3, 0x81), Error::Method { got: 0x81 });
        let other = if attr == 0x0010 { 0x0013 } else { 0x0010 };
        assert_eq!(
            with(17, other as u8),
            Error::Attribute {
                format,
                expected: attr,
                got: other
            }
        );
        let m = CmMessage::parse(bytes).unwrap();
        assert_eq!(u16::from(m.attr_id()), attr);
        let mut out = [0xa5u8; MAD_LEN];
        m.emit(&mut out).unwrap();
        assert_eq!(out, *bytes);
        assert!(m.emit(&mut out[..MAD_LEN - 1]).is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::testing::header;
    use super::*;

    #[test]
    fn cm_attributes_this_crate_does_not_decode_are_named_errors() {
        for attr in [0x0017u16, 0x0018, 0x0019, 0x001a, 0x0001, 0x0042] {
            let mut b = [0u8; MAD_LEN];
            b[..24].copy_from_slice(&header(attr, 0));
            assert_eq!(
                CmMessage::parse(&b).unwrap_err(),
                Error::UnknownAttribute { got: attr }
            );
        }
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0014, 0));
        b[1] = 0x03; // an SA MAD
        assert_eq!(
            CmMessage::parse(&b).unwrap_err(),
            Error::NotCm { got: 0x03 }
        );
    }

    #[test]
    fn message_responses_are_two_bits_with_three_reserved() {
        for v in 0..3 {
            assert_eq!(MsgResponse::from_bits("f", v).unwrap().bits(), v);
        }
        assert_eq!(
            MsgResponse::from_bits("f", 3).unwrap_err(),
            Error::ReservedMessage {
                field: "f",
                value: 3
            }
        );
    }
}
