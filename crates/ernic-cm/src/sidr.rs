//! SIDR: service ID resolution, how a UD client learns the QP and Q_Key a
//! service answers on (IBTA vol. 1 Table 119 "SIDR_REQ Message Contents"
//! and Table 120 "SIDR_REP Message Contents"). rdma_cm's `RDMA_PS_UDP`
//! "connects" with it. One request, one reply; no connection state.
//!
//! Offsets are `CM_SIDR_*` of Linux's `include/rdma/ibta_vol1_c12.h` and
//! `drivers/infiniband/core/cm_msgs.h`; each message is a whole 256-byte
//! MAD, header included. After [`ReqPacket::new_checked`] (or
//! [`RepPacket::new_checked`]) no accessor panics.

use crate::Error;
use crate::bits::{Bits, Field, array, cm_bytes, cm8, cm32, get_be64, set_bytes};
use crate::mad::{self, AttrId, MAD_LEN};
use crate::msg::{emit_header, parse_header};

/// `CM_SIDR_REQ_PRIVATE_DATA_SIZE`.
pub const REQ_PRIVATE_DATA_LEN: usize = 216;
/// `IB_CM_SIDR_REP_PRIVATE_DATA_SIZE`.
pub const REP_PRIVATE_DATA_LEN: usize = 136;
/// `IB_CM_SIDR_REP_INFO_LENGTH`.
pub const REP_INFO_LEN: usize = 72;

/// The fields, as `ibta_vol1_c12.h` places them (offsets from the start
/// of the MAD).
pub mod field {
    use super::*;
    /// `CM_SIDR_REQ_REQUESTID`.
    pub const REQ_REQUEST_ID: Bits = cm32(0, 32);
    /// `CM_SIDR_REQ_PARTITION_KEY` (16 bits at byte 4).
    pub const REQ_PARTITION_KEY: Field = cm_bytes(4, 6);
    /// `CM_SIDR_REQ_SERVICEID`.
    pub const REQ_SERVICE_ID: Field = cm_bytes(8, 16);
    /// `CM_SIDR_REQ_PRIVATE_DATA`.
    pub const REQ_PRIVATE_DATA: Field = cm_bytes(16, 232);
    /// `CM_SIDR_REP_REQUESTID`.
    pub const REP_REQUEST_ID: Bits = cm32(0, 32);
    /// `CM_SIDR_REP_STATUS`.
    pub const REP_STATUS: Bits = cm8(4, 8);
    /// `CM_SIDR_REP_ADDITIONAL_INFORMATION_LENGTH`.
    pub const REP_INFO_LENGTH: Bits = cm8(5, 8);
    /// `CM_SIDR_REP_QPN` (24 bits at byte 8).
    pub const REP_QPN: Bits = cm32(8, 24);
    /// `CM_SIDR_REP_SERVICEID`.
    pub const REP_SERVICE_ID: Field = cm_bytes(12, 20);
    /// `CM_SIDR_REP_Q_KEY`.
    pub const REP_Q_KEY: Bits = cm32(20, 32);
    /// `CM_SIDR_REP_ADDITIONAL_INFORMATION`.
    pub const REP_INFO: Field = cm_bytes(24, 96);
    /// `CM_SIDR_REP_PRIVATE_DATA`.
    pub const REP_PRIVATE_DATA: Field = cm_bytes(96, 232);
}

/// `enum ib_cm_sidr_status`: how a SIDR_REP answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `IB_SIDR_SUCCESS` (0).
    Success,
    /// `IB_SIDR_UNSUPPORTED` (1): no one serves the service id here.
    Unsupported,
    /// `IB_SIDR_REJECT` (2).
    Reject,
    /// `IB_SIDR_NO_QP` (3).
    NoQp,
    /// `IB_SIDR_REDIRECT` (4).
    Redirect,
    /// `IB_SIDR_UNSUPPORTED_VERSION` (5).
    UnsupportedVersion,
    /// Any other value, kept.
    Other(u8),
}

impl From<u8> for Status {
    fn from(v: u8) -> Status {
        match v {
            0 => Status::Success,
            1 => Status::Unsupported,
            2 => Status::Reject,
            3 => Status::NoQp,
            4 => Status::Redirect,
            5 => Status::UnsupportedVersion,
            v => Status::Other(v),
        }
    }
}

impl From<Status> for u8 {
    fn from(s: Status) -> u8 {
        match s {
            Status::Success => 0,
            Status::Unsupported => 1,
            Status::Reject => 2,
            Status::NoQp => 3,
            Status::Redirect => 4,
            Status::UnsupportedVersion => 5,
            Status::Other(v) => v,
        }
    }
}

/// A SIDR_REQ. Reserved bytes and the MAD's `attr_mod` are emitted as 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    /// The MAD's transaction id.
    pub tid: u64,
    /// The requester's id for this request (the reply names it).
    pub request_id: u32,
    /// The partition key.
    pub partition_key: u16,
    /// The service asked for.
    pub service_id: u64,
    /// The private data (rdma_cm's header first).
    pub private_data: [u8; REQ_PRIVATE_DATA_LEN],
}

/// A SIDR_REP. Vendor id and the MAD's `attr_mod` are emitted as 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rep {
    /// The MAD's transaction id (the request's).
    pub tid: u64,
    /// The request's id.
    pub request_id: u32,
    /// The answer.
    pub status: Status,
    /// Bytes of `info` that mean something.
    pub info_length: u8,
    /// The QP serving the service (24 bits).
    pub qpn: u32,
    /// The service.
    pub service_id: u64,
    /// The QP's Q_Key.
    pub qkey: u32,
    /// Additional information (a redirect's or a rejection's).
    pub info: [u8; REP_INFO_LEN],
    /// The private data.
    pub private_data: [u8; REP_PRIVATE_DATA_LEN],
}

/// Checks that `b` holds a whole MAD.
fn whole(b: &[u8], format: &'static str) -> Result<(), Error> {
    if b.len() < MAD_LEN {
        return Err(Error::Truncated {
            format,
            need: MAD_LEN,
            len: b.len(),
        });
    }
    Ok(())
}

impl Req {
    /// Reads a SIDR_REQ: a CM MAD with the SIDR_REQ attribute.
    pub fn parse(b: &[u8]) -> Result<Req, Error> {
        whole(b, "CM SIDR_REQ")?;
        let hdr = parse_header(b, "CM SIDR_REQ", AttrId::SidrReq)?;
        Ok(Req {
            tid: hdr.tid,
            request_id: field::REQ_REQUEST_ID.get(b),
            partition_key: u16::from_be_bytes(array(b, field::REQ_PARTITION_KEY)),
            service_id: get_be64(b, field::REQ_SERVICE_ID),
            private_data: array(b, field::REQ_PRIVATE_DATA),
        })
    }

    /// The whole MAD.
    pub fn emit(&self) -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        emit_header(&mut b, mad::Repr::cm(AttrId::SidrReq, self.tid, 0));
        field::REQ_REQUEST_ID.set(&mut b, self.request_id);
        set_bytes(
            &mut b,
            field::REQ_PARTITION_KEY,
            &self.partition_key.to_be_bytes(),
        );
        set_bytes(
            &mut b,
            field::REQ_SERVICE_ID,
            &self.service_id.to_be_bytes(),
        );
        set_bytes(&mut b, field::REQ_PRIVATE_DATA, &self.private_data);
        b
    }
}

impl Rep {
    /// Reads a SIDR_REP: a CM MAD with the SIDR_REP attribute.
    pub fn parse(b: &[u8]) -> Result<Rep, Error> {
        whole(b, "CM SIDR_REP")?;
        let hdr = parse_header(b, "CM SIDR_REP", AttrId::SidrRep)?;
        Ok(Rep {
            tid: hdr.tid,
            request_id: field::REP_REQUEST_ID.get(b),
            status: Status::from(field::REP_STATUS.get(b) as u8),
            info_length: field::REP_INFO_LENGTH.get(b) as u8,
            qpn: field::REP_QPN.get(b),
            service_id: get_be64(b, field::REP_SERVICE_ID),
            qkey: field::REP_Q_KEY.get(b),
            info: array(b, field::REP_INFO),
            private_data: array(b, field::REP_PRIVATE_DATA),
        })
    }

    /// The whole MAD.
    pub fn emit(&self) -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        emit_header(&mut b, mad::Repr::cm(AttrId::SidrRep, self.tid, 0));
        field::REP_REQUEST_ID.set(&mut b, self.request_id);
        field::REP_STATUS.set(&mut b, u32::from(u8::from(self.status)));
        field::REP_INFO_LENGTH.set(&mut b, u32::from(self.info_length));
        field::REP_QPN.set(&mut b, self.qpn & 0xff_ffff);
        set_bytes(
            &mut b,
            field::REP_SERVICE_ID,
            &self.service_id.to_be_bytes(),
        );
        field::REP_Q_KEY.set(&mut b, self.qkey);
        set_bytes(&mut b, field::REP_INFO, &self.info);
        set_bytes(&mut b, field::REP_PRIVATE_DATA, &self.private_data);
        b
    }
}

/// The attribute of a CM MAD, if `b` is one (to tell SIDR from the
/// connection messages before decoding).
pub fn attr_of(b: &[u8]) -> Option<AttrId> {
    let h = mad::Repr::parse(&mad::Packet::new_checked(b).ok()?).ok()?;
    (h.mgmt_class == mad::CLASS_CM).then_some(h.attr_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::testing::{TID, header};

    /// A SIDR_REQ written by hand from Table 119 (offsets from the end of
    /// the MAD header).
    fn req_bytes() -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0017, 0));
        let m = &mut b[24..];
        m[0..4].copy_from_slice(&[0xa0, 0xa1, 0xa2, 0xa3]); // request id
        m[4..6].copy_from_slice(&[0xff, 0xff]); // partition key
        m[8..16].copy_from_slice(&[0, 0, 0, 0, 0x01, 0x11, 0x4e, 0x20]); // service id
        for i in 0..REQ_PRIVATE_DATA_LEN {
            m[16 + i] = i as u8 ^ 0x5a;
        }
        b
    }

    /// A SIDR_REP written by hand from Table 120.
    fn rep_bytes() -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0018, 0));
        let m = &mut b[24..];
        m[0..4].copy_from_slice(&[0xa0, 0xa1, 0xa2, 0xa3]); // request id
        m[4] = 0; // status: success
        m[5] = 0; // info length
        m[8..11].copy_from_slice(&[0x00, 0x12, 0x34]); // QPN (24 bits)
        m[12..20].copy_from_slice(&[0, 0, 0, 0, 0x01, 0x11, 0x4e, 0x20]); // service id
        m[20..24].copy_from_slice(&[0x01, 0x23, 0x45, 0x67]); // Q_Key
        for i in 0..REP_PRIVATE_DATA_LEN {
            m[96 + i] = i as u8 ^ 0xa5;
        }
        b
    }

    #[test]
    fn a_sidr_req_reads_and_writes_as_table_119_lays_it_out() {
        let b = req_bytes();
        let r = Req::parse(&b).unwrap();
        assert_eq!(
            (r.tid, r.request_id, r.partition_key, r.service_id),
            (TID, 0xa0a1_a2a3, 0xffff, 0x0111_4e20)
        );
        assert_eq!(r.private_data[3], 3 ^ 0x5a);
        assert_eq!(r.emit(), b);
        assert_eq!(attr_of(&b), Some(AttrId::SidrReq));
    }

    #[test]
    fn a_sidr_rep_reads_and_writes_as_table_120_lays_it_out() {
        let b = rep_bytes();
        let r = Rep::parse(&b).unwrap();
        assert_eq!(
            (r.request_id, r.status, r.qpn, r.service_id, r.qkey),
            (
                0xa0a1_a2a3,
                Status::Success,
                0x1234,
                0x0111_4e20,
                0x0123_4567
            )
        );
        assert_eq!(r.private_data[7], 7 ^ 0xa5);
        assert_eq!(r.emit(), b);
    }

    #[test]
    fn short_or_foreign_mads_are_refused() {
        assert!(Req::parse(&req_bytes()[..100]).is_err());
        assert!(Rep::parse(&req_bytes()).is_err(), "a REQ is no REP");
        assert!(Req::parse(&rep_bytes()).is_err(), "a REP is no REQ");
        assert_eq!(attr_of(&[0u8; 10]), None);
        for s in 0..=255u8 {
            assert_eq!(u8::from(Status::from(s)), s);
        }
    }
}
