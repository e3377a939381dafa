//! REP, the connection reply (IBTA vol. 1 Table 110 "REP Message
//! Contents"): the passive side's QP, its starting PSN and resources, and
//! 196 bytes of private data (NVMe/RDMA's
//! [`CmRep`](crate::private_data::nvme)).
//!
//! Offsets are `CM_REP_*` of Linux's `include/rdma/ibta_vol1_c12.h`
//! (torvalds/linux b7e1a1e9); the message is a whole 256-byte MAD, header
//! included. The ECE vendor id is split over three bytes (`VENDOR_ID_H`,
//! `_M`, `_L`). After [`Packet::new_checked`] no accessor panics.

use crate::Error;
use crate::bits::{
    Bits, Field, array, bit_fields, cm_bloc, cm_bytes, cm8, cm32, get_be64, set_bytes, view,
};
use crate::mad::{self, AttrId, MAD_LEN};
use crate::msg::{emit_header, parse_header};

/// `IB_CM_REP_PRIVATE_DATA_SIZE`.
pub const PRIVATE_DATA_LEN: usize = 196;

/// The fields, as `ibta_vol1_c12.h` places them (offsets from the start
/// of the MAD).
pub mod field {
    use super::*;
    /// `CM_REP_LOCAL_COMM_ID`.
    pub const LOCAL_COMM_ID: Bits = cm32(0, 32);
    /// `CM_REP_REMOTE_COMM_ID`.
    pub const REMOTE_COMM_ID: Bits = cm32(4, 32);
    /// `CM_REP_LOCAL_Q_KEY`.
    pub const LOCAL_Q_KEY: Bits = cm32(8, 32);
    /// `CM_REP_LOCAL_QPN`.
    pub const LOCAL_QPN: Bits = cm32(12, 24);
    /// `CM_REP_VENDOR_ID_H`.
    pub const VENDOR_ID_H: Bits = cm8(15, 8);
    /// `CM_REP_LOCAL_EE_CONTEXT_NUMBER`.
    pub const LOCAL_EECN: Bits = cm32(16, 24);
    /// `CM_REP_VENDOR_ID_M`.
    pub const VENDOR_ID_M: Bits = cm8(19, 8);
    /// `CM_REP_STARTING_PSN`.
    pub const STARTING_PSN: Bits = cm32(20, 24);
    /// `CM_REP_VENDOR_ID_L`.
    pub const VENDOR_ID_L: Bits = cm8(23, 8);
    /// `CM_REP_RESPONDER_RESOURCES`.
    pub const RESPONDER_RESOURCES: Bits = cm8(24, 8);
    /// `CM_REP_INITIATOR_DEPTH`.
    pub const INITIATOR_DEPTH: Bits = cm8(25, 8);
    /// `CM_REP_TARGET_ACK_DELAY`.
    pub const TARGET_ACK_DELAY: Bits = cm8(26, 5);
    /// `CM_REP_FAILOVER_ACCEPTED`.
    pub const FAILOVER_ACCEPTED: Bits = cm_bloc(26, 5, 2);
    /// `CM_REP_END_TO_END_FLOW_CONTROL`.
    pub const END_TO_END_FLOW_CONTROL: Bits = cm_bloc(26, 7, 1);
    /// `CM_REP_RNR_RETRY_COUNT`.
    pub const RNR_RETRY_COUNT: Bits = cm8(27, 3);
    /// `CM_REP_SRQ`.
    pub const SRQ: Bits = cm_bloc(27, 3, 1);
    /// `CM_REP_LOCAL_CA_GUID`.
    pub const LOCAL_CA_GUID: Field = cm_bytes(28, 36);
    /// `CM_REP_PRIVATE_DATA`.
    pub const PRIVATE_DATA: Field = cm_bytes(36, 232);
}

view!("CM REP", MAD_LEN);

bit_fields! {
    /// `CM_REP_LOCAL_COMM_ID`.
    local_comm_id / set_local_comm_id: u32 = field::LOCAL_COMM_ID;
    /// `CM_REP_REMOTE_COMM_ID`.
    remote_comm_id / set_remote_comm_id: u32 = field::REMOTE_COMM_ID;
    /// `CM_REP_LOCAL_Q_KEY`.
    local_qkey / set_local_qkey: u32 = field::LOCAL_Q_KEY;
    /// `CM_REP_LOCAL_QPN` (24 bits).
    local_qpn / set_local_qpn: u32 = field::LOCAL_QPN;
    /// `CM_REP_VENDOR_ID_H`.
    vendor_id_h / set_vendor_id_h: u8 = field::VENDOR_ID_H;
    /// `CM_REP_LOCAL_EE_CONTEXT_NUMBER` (24 bits).
    local_eecn / set_local_eecn: u32 = field::LOCAL_EECN;
    /// `CM_REP_VENDOR_ID_M`.
    vendor_id_m / set_vendor_id_m: u8 = field::VENDOR_ID_M;
    /// `CM_REP_STARTING_PSN` (24 bits).
    starting_psn / set_starting_psn: u32 = field::STARTING_PSN;
    /// `CM_REP_VENDOR_ID_L`.
    vendor_id_l / set_vendor_id_l: u8 = field::VENDOR_ID_L;
    /// `CM_REP_RESPONDER_RESOURCES`.
    responder_resources / set_responder_resources: u8 = field::RESPONDER_RESOURCES;
    /// `CM_REP_INITIATOR_DEPTH`.
    initiator_depth / set_initiator_depth: u8 = field::INITIATOR_DEPTH;
    /// `CM_REP_TARGET_ACK_DELAY` (5 bits).
    target_ack_delay / set_target_ack_delay: u8 = field::TARGET_ACK_DELAY;
    /// `CM_REP_FAILOVER_ACCEPTED` (2 bits).
    failover_accepted / set_failover_accepted: u8 = field::FAILOVER_ACCEPTED;
    /// `CM_REP_END_TO_END_FLOW_CONTROL`.
    end_to_end_flow_control / set_end_to_end_flow_control: bool = field::END_TO_END_FLOW_CONTROL;
    /// `CM_REP_RNR_RETRY_COUNT` (3 bits).
    rnr_retry_count / set_rnr_retry_count: u8 = field::RNR_RETRY_COUNT;
    /// `CM_REP_SRQ`.
    srq / set_srq: bool = field::SRQ;
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// `CM_REP_LOCAL_CA_GUID`.
    pub fn local_ca_guid(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::LOCAL_CA_GUID)
    }

    /// The ECE vendor id: `VENDOR_ID_H << 16 | VENDOR_ID_M << 8 | VENDOR_ID_L`
    /// (`cm_format_rep_event`).
    pub fn vendor_id(&self) -> u32 {
        u32::from(self.vendor_id_h()) << 16
            | u32::from(self.vendor_id_m()) << 8
            | u32::from(self.vendor_id_l())
    }

    /// `CM_REP_PRIVATE_DATA`.
    pub fn private_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PRIVATE_DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `CM_REP_LOCAL_CA_GUID`.
    pub fn set_local_ca_guid(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::LOCAL_CA_GUID, &v.to_be_bytes());
    }

    /// Sets the three bytes of the ECE vendor id (its low 24 bits).
    pub fn set_vendor_id(&mut self, v: u32) {
        let [_, h, m, l] = v.to_be_bytes();
        self.set_vendor_id_h(h);
        self.set_vendor_id_m(m);
        self.set_vendor_id_l(l);
    }

    /// `CM_REP_PRIVATE_DATA`, to write.
    pub fn private_data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PRIVATE_DATA]
    }
}

/// A REP. Values wider than their field are truncated by `emit`; reserved
/// bits are emitted as 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// The MAD's transaction id (the REQ's, as `cm.c` answers).
    pub tid: u64,
    /// The MAD's `attr_mod`: ECE options.
    pub attr_mod: u32,
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id (the REQ's local one).
    pub remote_comm_id: u32,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// Local QPN (24 bits).
    pub local_qpn: u32,
    /// ECE vendor id (24 bits).
    pub vendor_id: u32,
    /// Local EECN (24 bits).
    pub local_eecn: u32,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Target ACK delay (5 bits).
    pub target_ack_delay: u8,
    /// Failover accepted (2 bits: 0 accepted, 1 not supported, 2 rejected).
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// SRQ.
    pub srq: bool,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// The private data.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl Repr {
    /// Reads a REP: a CM MAD with the REP attribute.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check_len()?;
        let hdr = parse_header(p.buffer.as_ref(), "CM REP", AttrId::Rep)?;
        Ok(Repr {
            tid: hdr.tid,
            attr_mod: hdr.attr_mod,
            local_comm_id: p.local_comm_id(),
            remote_comm_id: p.remote_comm_id(),
            local_qkey: p.local_qkey(),
            local_qpn: p.local_qpn(),
            vendor_id: p.vendor_id(),
            local_eecn: p.local_eecn(),
            starting_psn: p.starting_psn(),
            responder_resources: p.responder_resources(),
            initiator_depth: p.initiator_depth(),
            target_ack_delay: p.target_ack_delay(),
            failover_accepted: p.failover_accepted(),
            end_to_end_flow_control: p.end_to_end_flow_control(),
            rnr_retry_count: p.rnr_retry_count(),
            srq: p.srq(),
            local_ca_guid: p.local_ca_guid(),
            private_data: array(p.buffer.as_ref(), field::PRIVATE_DATA),
        })
    }

    /// Bytes [`emit`](Self::emit) writes: a whole MAD.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Writes the whole MAD into a checked view, header and reserved bytes
    /// included.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[..MAD_LEN].fill(0);
        emit_header(b, mad::Repr::cm(AttrId::Rep, self.tid, self.attr_mod));
        p.set_local_comm_id(self.local_comm_id);
        p.set_remote_comm_id(self.remote_comm_id);
        p.set_local_qkey(self.local_qkey);
        p.set_local_qpn(self.local_qpn);
        p.set_vendor_id(self.vendor_id);
        p.set_local_eecn(self.local_eecn);
        p.set_starting_psn(self.starting_psn);
        p.set_responder_resources(self.responder_resources);
        p.set_initiator_depth(self.initiator_depth);
        p.set_target_ack_delay(self.target_ack_delay);
        p.set_failover_accepted(self.failover_accepted);
        p.set_end_to_end_flow_control(self.end_to_end_flow_control);
        p.set_rnr_retry_count(self.rnr_retry_count);
        p.set_srq(self.srq);
        p.set_local_ca_guid(self.local_ca_guid);
        p.private_data_mut().copy_from_slice(&self.private_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::testing::{TID, header, refuses_what_any_cm_message_refuses};

    /// A REP written by hand from Table 110 as `ibta_vol1_c12.h` lays it
    /// out (offsets from the end of the MAD header).
    fn bytes() -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0013, 0x0000_0002));
        let m = &mut b[24..];
        m[0..4].copy_from_slice(&[0xc0, 0xc1, 0xc2, 0xc3]); // local comm id
        m[4..8].copy_from_slice(&[0xd0, 0xd1, 0xd2, 0xd3]); // remote comm id
        m[8..12].copy_from_slice(&[0xb0, 0xb1, 0xb2, 0xb3]); // Q_Key
        m[12..16].copy_from_slice(&[0x12, 0x34, 0x56, 0x15]); // QPN, vendor id H
        m[16..20].copy_from_slice(&[0x00, 0xee, 0xc1, 0xb3]); // EECN, vendor id M
        m[20..24].copy_from_slice(&[0xab, 0xcd, 0xef, 0x5a]); // PSN, vendor id L
        m[24] = 0x10; // responder resources
        m[25] = 0x20; // initiator depth
        m[26] = 0x11 << 3 | 2 << 1 | 1; // target ACK delay 0x11, failover 2, flow control
        m[27] = 6 << 5 | 1 << 4; // RNR retry 6, SRQ
        m[28..36].copy_from_slice(&[0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7]);
        for i in 0..PRIVATE_DATA_LEN {
            m[36 + i] = !(i as u8);
        }
        b
    }

    fn repr() -> Repr {
        Repr {
            tid: TID,
            attr_mod: 2,
            local_comm_id: 0xc0c1_c2c3,
            remote_comm_id: 0xd0d1_d2d3,
            local_qkey: 0xb0b1_b2b3,
            local_qpn: 0x12_3456,
            vendor_id: 0x15_b35a,
            local_eecn: 0x00_eec1,
            starting_psn: 0xab_cdef,
            responder_resources: 0x10,
            initiator_depth: 0x20,
            target_ack_delay: 0x11,
            failover_accepted: 2,
            end_to_end_flow_control: true,
            rnr_retry_count: 6,
            srq: true,
            local_ca_guid: 0xa0a1_a2a3_a4a5_a6a7,
            private_data: core::array::from_fn(|i| !(i as u8)),
        }
    }

    #[test]
    fn a_rep_reads_and_writes_as_table_110_lays_it_out() {
        let b = bytes();
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.vendor_id_h(), p.vendor_id_m(), p.vendor_id_l()),
            (0x15, 0xb3, 0x5a)
        );
        assert_eq!(Repr::parse(&p).unwrap(), repr());
        let mut out = [0xffu8; MAD_LEN];
        repr().emit(&mut Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, b);
    }

    #[test]
    fn a_rep_is_refused_like_any_cm_message() {
        refuses_what_any_cm_message_refuses(&bytes(), "CM REP", 0x0013, |b| {
            Repr::parse(&Packet::new_checked(b)?).map(drop)
        });
    }
}
