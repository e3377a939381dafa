//! REJ, the rejection (IBTA vol. 1 Table 108 "REJ Message Contents"): which
//! message is refused and why, up to 72 bytes of additional rejection
//! information (ARI), and 148 bytes of private data (NVMe/RDMA's
//! [`CmRej`](crate::private_data::nvme) with a consumer-defined reason).
//!
//! Offsets are `CM_REJ_*` of Linux's `include/rdma/ibta_vol1_c12.h`
//! (torvalds/linux b7e1a1e9), reasons `enum ib_cm_rej_reason` of
//! `include/rdma/ib_cm.h`; the message is a whole 256-byte MAD, header
//! included. After [`Packet::new_checked`] no accessor panics.

use crate::Error;
use crate::bits::{Bits, Field, array, bit_fields, cm_bytes, cm8, cm16, cm32, view};
use crate::mad::{self, AttrId, MAD_LEN};
use crate::msg::{MsgResponse, emit_header, parse_header};

/// `IB_CM_REJ_PRIVATE_DATA_SIZE`.
pub const PRIVATE_DATA_LEN: usize = 148;
/// `IB_CM_REJ_ARI_LENGTH`: the ARI field's size.
pub const ARI_LEN: usize = 72;

/// The fields, as `ibta_vol1_c12.h` places them (offsets from the start
/// of the MAD).
pub mod field {
    use super::*;
    /// `CM_REJ_LOCAL_COMM_ID`.
    pub const LOCAL_COMM_ID: Bits = cm32(0, 32);
    /// `CM_REJ_REMOTE_COMM_ID`.
    pub const REMOTE_COMM_ID: Bits = cm32(4, 32);
    /// `CM_REJ_MESSAGE_REJECTED`.
    pub const MESSAGE_REJECTED: Bits = cm8(8, 2);
    /// `CM_REJ_REJECTED_INFO_LENGTH`.
    pub const REJECTED_INFO_LENGTH: Bits = cm8(9, 7);
    /// `CM_REJ_REASON`.
    pub const REASON: Bits = cm16(10, 16);
    /// `CM_REJ_ARI`.
    pub const ARI: Field = cm_bytes(12, 84);
    /// `CM_REJ_PRIVATE_DATA`.
    pub const PRIVATE_DATA: Field = cm_bytes(84, 232);
}

/// A rejection reason (`enum ib_cm_rej_reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejReason {
    /// `IB_CM_REJ_NO_QP` (1).
    NoQp,
    /// `IB_CM_REJ_NO_EEC` (2).
    NoEec,
    /// `IB_CM_REJ_NO_RESOURCES` (3).
    NoResources,
    /// `IB_CM_REJ_TIMEOUT` (4).
    Timeout,
    /// `IB_CM_REJ_UNSUPPORTED` (5).
    Unsupported,
    /// `IB_CM_REJ_INVALID_COMM_ID` (6).
    InvalidCommId,
    /// `IB_CM_REJ_INVALID_COMM_INSTANCE` (7).
    InvalidCommInstance,
    /// `IB_CM_REJ_INVALID_SERVICE_ID` (8).
    InvalidServiceId,
    /// `IB_CM_REJ_INVALID_TRANSPORT_TYPE` (9).
    InvalidTransportType,
    /// `IB_CM_REJ_STALE_CONN` (10).
    StaleConn,
    /// `IB_CM_REJ_RDC_NOT_EXIST` (11).
    RdcNotExist,
    /// `IB_CM_REJ_INVALID_GID` (12).
    InvalidGid,
    /// `IB_CM_REJ_INVALID_LID` (13).
    InvalidLid,
    /// `IB_CM_REJ_INVALID_SL` (14).
    InvalidSl,
    /// `IB_CM_REJ_INVALID_TRAFFIC_CLASS` (15).
    InvalidTrafficClass,
    /// `IB_CM_REJ_INVALID_HOP_LIMIT` (16).
    InvalidHopLimit,
    /// `IB_CM_REJ_INVALID_PACKET_RATE` (17).
    InvalidPacketRate,
    /// `IB_CM_REJ_INVALID_ALT_GID` (18).
    InvalidAltGid,
    /// `IB_CM_REJ_INVALID_ALT_LID` (19).
    InvalidAltLid,
    /// `IB_CM_REJ_INVALID_ALT_SL` (20).
    InvalidAltSl,
    /// `IB_CM_REJ_INVALID_ALT_TRAFFIC_CLASS` (21).
    InvalidAltTrafficClass,
    /// `IB_CM_REJ_INVALID_ALT_HOP_LIMIT` (22).
    InvalidAltHopLimit,
    /// `IB_CM_REJ_INVALID_ALT_PACKET_RATE` (23).
    InvalidAltPacketRate,
    /// `IB_CM_REJ_PORT_CM_REDIRECT` (24).
    PortCmRedirect,
    /// `IB_CM_REJ_PORT_REDIRECT` (25).
    PortRedirect,
    /// `IB_CM_REJ_INVALID_MTU` (26).
    InvalidMtu,
    /// `IB_CM_REJ_INSUFFICIENT_RESP_RESOURCES` (27).
    InsufficientRespResources,
    /// `IB_CM_REJ_CONSUMER_DEFINED` (28).
    ConsumerDefined,
    /// `IB_CM_REJ_INVALID_RNR_RETRY` (29).
    InvalidRnrRetry,
    /// `IB_CM_REJ_DUPLICATE_LOCAL_COMM_ID` (30).
    DuplicateLocalCommId,
    /// `IB_CM_REJ_INVALID_CLASS_VERSION` (31).
    InvalidClassVersion,
    /// `IB_CM_REJ_INVALID_FLOW_LABEL` (32).
    InvalidFlowLabel,
    /// `IB_CM_REJ_INVALID_ALT_FLOW_LABEL` (33).
    InvalidAltFlowLabel,
    /// `IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED` (35).
    VendorOptionNotSupported,
    /// A reason this crate does not name.
    Unknown(u16),
}

impl From<u16> for RejReason {
    fn from(v: u16) -> RejReason {
        match v {
            1 => RejReason::NoQp,
            2 => RejReason::NoEec,
            3 => RejReason::NoResources,
            4 => RejReason::Timeout,
            5 => RejReason::Unsupported,
            6 => RejReason::InvalidCommId,
            7 => RejReason::InvalidCommInstance,
            8 => RejReason::InvalidServiceId,
            9 => RejReason::InvalidTransportType,
            10 => RejReason::StaleConn,
            11 => RejReason::RdcNotExist,
            12 => RejReason::InvalidGid,
            13 => RejReason::InvalidLid,
            14 => RejReason::InvalidSl,
            15 => RejReason::InvalidTrafficClass,
            16 => RejReason::InvalidHopLimit,
            17 => RejReason::InvalidPacketRate,
            18 => RejReason::InvalidAltGid,
            19 => RejReason::InvalidAltLid,
            20 => RejReason::InvalidAltSl,
            21 => RejReason::InvalidAltTrafficClass,
            22 => RejReason::InvalidAltHopLimit,
            23 => RejReason::InvalidAltPacketRate,
            24 => RejReason::PortCmRedirect,
            25 => RejReason::PortRedirect,
            26 => RejReason::InvalidMtu,
            27 => RejReason::InsufficientRespResources,
            28 => RejReason::ConsumerDefined,
            29 => RejReason::InvalidRnrRetry,
            30 => RejReason::DuplicateLocalCommId,
            31 => RejReason::InvalidClassVersion,
            32 => RejReason::InvalidFlowLabel,
            33 => RejReason::InvalidAltFlowLabel,
            35 => RejReason::VendorOptionNotSupported,
            v => RejReason::Unknown(v),
        }
    }
}

impl From<RejReason> for u16 {
    fn from(r: RejReason) -> u16 {
        match r {
            RejReason::NoQp => 1,
            RejReason::NoEec => 2,
            RejReason::NoResources => 3,
            RejReason::Timeout => 4,
            RejReason::Unsupported => 5,
            RejReason::InvalidCommId => 6,
            RejReason::InvalidCommInstance => 7,
            RejReason::InvalidServiceId => 8,
            RejReason::InvalidTransportType => 9,
            RejReason::StaleConn => 10,
            RejReason::RdcNotExist => 11,
            RejReason::InvalidGid => 12,
            RejReason::InvalidLid => 13,
            RejReason::InvalidSl => 14,
            RejReason::InvalidTrafficClass => 15,
            RejReason::InvalidHopLimit => 16,
            RejReason::InvalidPacketRate => 17,
            RejReason::InvalidAltGid => 18,
            RejReason::InvalidAltLid => 19,
            RejReason::InvalidAltSl => 20,
            RejReason::InvalidAltTrafficClass => 21,
            RejReason::InvalidAltHopLimit => 22,
            RejReason::InvalidAltPacketRate => 23,
            RejReason::PortCmRedirect => 24,
            RejReason::PortRedirect => 25,
            RejReason::InvalidMtu => 26,
            RejReason::InsufficientRespResources => 27,
            RejReason::ConsumerDefined => 28,
            RejReason::InvalidRnrRetry => 29,
            RejReason::DuplicateLocalCommId => 30,
            RejReason::InvalidClassVersion => 31,
            RejReason::InvalidFlowLabel => 32,
            RejReason::InvalidAltFlowLabel => 33,
            RejReason::VendorOptionNotSupported => 35,
            RejReason::Unknown(v) => v,
        }
    }
}

view!("CM REJ", MAD_LEN);

bit_fields! {
    /// `CM_REJ_LOCAL_COMM_ID`.
    local_comm_id / set_local_comm_id: u32 = field::LOCAL_COMM_ID;
    /// `CM_REJ_REMOTE_COMM_ID`.
    remote_comm_id / set_remote_comm_id: u32 = field::REMOTE_COMM_ID;
    /// `CM_REJ_MESSAGE_REJECTED` (2 bits; see [`MsgResponse`]).
    message_rejected / set_message_rejected: u8 = field::MESSAGE_REJECTED;
    /// `CM_REJ_REJECTED_INFO_LENGTH` (7 bits): bytes of the ARI in use.
    rejected_info_length / set_rejected_info_length: u8 = field::REJECTED_INFO_LENGTH;
    /// `CM_REJ_REASON` (see [`RejReason`]).
    reason / set_reason: u16 = field::REASON;
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// `CM_REJ_ARI`, all 72 bytes (the rejection info length says how many
    /// mean something).
    pub fn ari(&self) -> &[u8] {
        &self.buffer.as_ref()[field::ARI]
    }

    /// `CM_REJ_PRIVATE_DATA`.
    pub fn private_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PRIVATE_DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// `CM_REJ_ARI`, to write.
    pub fn ari_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::ARI]
    }

    /// `CM_REJ_PRIVATE_DATA`, to write.
    pub fn private_data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PRIVATE_DATA]
    }
}

/// A REJ. Reserved bits and the MAD's `attr_mod` are emitted as 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// The MAD's transaction id.
    pub tid: u64,
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id (0 when the REQ was refused before one was
    /// known, as `cm_issue_rej` may).
    pub remote_comm_id: u32,
    /// The message rejected.
    pub message_rejected: MsgResponse,
    /// Bytes of [`ari`](Self::ari) in use: at most [`ARI_LEN`].
    pub ari_len: u8,
    /// The reason.
    pub reason: RejReason,
    /// The ARI field, all of it (kept whole so that a message emits back
    /// to its bytes).
    pub ari: [u8; ARI_LEN],
    /// The private data.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl Repr {
    /// Reads a REJ: a CM MAD with the REJ attribute, whose "message
    /// REJected" is not the reserved 3 and whose rejection info fits the
    /// ARI field.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check_len()?;
        let hdr = parse_header(p.buffer.as_ref(), "CM REJ", AttrId::Rej)?;
        let ari_len = p.rejected_info_length();
        if usize::from(ari_len) > ARI_LEN {
            return Err(Error::AriLength {
                len: ari_len,
                max: ARI_LEN,
            });
        }
        Ok(Repr {
            tid: hdr.tid,
            local_comm_id: p.local_comm_id(),
            remote_comm_id: p.remote_comm_id(),
            message_rejected: MsgResponse::from_bits("REJ message rejected", p.message_rejected())?,
            ari_len,
            reason: p.reason().into(),
            ari: array(p.buffer.as_ref(), field::ARI),
            private_data: array(p.buffer.as_ref(), field::PRIVATE_DATA),
        })
    }

    /// The rejection info in use.
    pub fn ari_info(&self) -> &[u8] {
        &self.ari[..usize::from(self.ari_len).min(ARI_LEN)]
    }

    /// Bytes [`emit`](Self::emit) writes: a whole MAD.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Writes the whole MAD into a checked view, header and reserved bytes
    /// included; `ari_len` past [`ARI_LEN`] is written as [`ARI_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[..MAD_LEN].fill(0);
        emit_header(b, mad::Repr::cm(AttrId::Rej, self.tid, 0));
        p.set_local_comm_id(self.local_comm_id);
        p.set_remote_comm_id(self.remote_comm_id);
        p.set_message_rejected(self.message_rejected.bits());
        // ARI_LEN (72) fits a u8.
        p.set_rejected_info_length(self.ari_len.min(ARI_LEN as u8));
        p.set_reason(self.reason.into());
        p.ari_mut().copy_from_slice(&self.ari);
        p.private_data_mut().copy_from_slice(&self.private_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::testing::{TID, header, refuses_what_any_cm_message_refuses};

    /// A REJ written by hand from Table 108 as `ibta_vol1_c12.h` lays it
    /// out (offsets from the end of the MAD header): the REQ refused by the
    /// consumer (28), 5 bytes of ARI, NVMe/RDMA's reject record.
    fn bytes() -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0012, 0));
        let m = &mut b[24..];
        m[0..4].copy_from_slice(&[0xc0, 0xc1, 0xc2, 0xc3]); // local comm id
        m[4..8].copy_from_slice(&[0xd0, 0xd1, 0xd2, 0xd3]); // remote comm id
        m[8] = 0 << 6; // message rejected: REQ
        m[9] = 5 << 1; // rejected info length
        m[10..12].copy_from_slice(&[0x00, 28]); // reason: consumer defined
        m[12..17].copy_from_slice(&[1, 2, 3, 4, 5]); // ARI
        m[84..88].copy_from_slice(&[0x00, 0x00, 0x06, 0x00]); // NVMe: recfmt 0, NO_RSC
        b
    }

    fn repr() -> Repr {
        let mut ari = [0u8; ARI_LEN];
        ari[..5].copy_from_slice(&[1, 2, 3, 4, 5]);
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        private_data[2] = 6;
        Repr {
            tid: TID,
            local_comm_id: 0xc0c1_c2c3,
            remote_comm_id: 0xd0d1_d2d3,
            message_rejected: MsgResponse::Req,
            ari_len: 5,
            reason: RejReason::ConsumerDefined,
            ari,
            private_data,
        }
    }

    #[test]
    fn a_rej_reads_and_writes_as_table_108_lays_it_out() {
        let b = bytes();
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r, repr());
        assert_eq!(r.ari_info(), [1, 2, 3, 4, 5]);
        let mut out = [0xffu8; MAD_LEN];
        repr().emit(&mut Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, b);
    }

    #[test]
    fn a_rej_is_refused_like_any_cm_message() {
        refuses_what_any_cm_message_refuses(&bytes(), "CM REJ", 0x0012, |b| {
            Repr::parse(&Packet::new_checked(b)?).map(drop)
        });
    }

    #[test]
    fn a_rej_with_more_rejection_info_than_the_ari_holds_is_refused() {
        let mut b = bytes();
        b[24 + 9] = 72 << 1;
        assert!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()).is_ok());
        b[24 + 9] = 73 << 1;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::AriLength {
                len: 73,
                max: ARI_LEN
            }
        );
        b[24 + 9] = 5 << 1;
        b[24 + 8] = 3 << 6;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::ReservedMessage {
                field: "REJ message rejected",
                value: 3
            }
        );
    }

    #[test]
    fn reasons_convert_both_ways() {
        for v in 0..=64u16 {
            assert_eq!(u16::from(RejReason::from(v)), v);
        }
        assert_eq!(RejReason::from(1), RejReason::NoQp);
        assert_eq!(RejReason::from(35), RejReason::VendorOptionNotSupported);
        assert_eq!(RejReason::from(34), RejReason::Unknown(34));
    }
}
