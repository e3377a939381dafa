//! REQ, the connection request (IBTA vol. 1 Table 106 "REQ Message
//! Contents"): the active side's QP, its transport parameters, the primary
//! and alternate paths, and 92 bytes of private data (where rdma_cm puts
//! its [`cma`](crate::private_data::cma) header).
//!
//! Offsets, bit offsets and widths are `CM_REQ_*` of Linux's
//! `include/rdma/ibta_vol1_c12.h` (torvalds/linux b7e1a1e9), each written
//! here with the macro that header uses; the message is a whole 256-byte
//! MAD, header included. After [`Packet::new_checked`] no accessor panics.

use crate::Error;
use crate::bits::{
    Bits, Field, array, bit_fields, cm_bloc, cm_bytes, cm8, cm16, cm32, get_be64, set_bytes, view,
};
use crate::mad::{self, AttrId, MAD_LEN};
use crate::msg::{emit_header, parse_header};

/// `IB_CM_REQ_PRIVATE_DATA_SIZE`.
pub const PRIVATE_DATA_LEN: usize = 92;

/// The fields, as `ibta_vol1_c12.h` places them (offsets from the start
/// of the MAD).
pub mod field {
    use super::*;
    /// `CM_REQ_LOCAL_COMM_ID`.
    pub const LOCAL_COMM_ID: Bits = cm32(0, 32);
    /// `CM_REQ_VENDOR_ID` (ECE).
    pub const VENDOR_ID: Bits = cm32(5, 24);
    /// `CM_REQ_SERVICE_ID`.
    pub const SERVICE_ID: Field = cm_bytes(8, 16);
    /// `CM_REQ_LOCAL_CA_GUID`.
    pub const LOCAL_CA_GUID: Field = cm_bytes(16, 24);
    /// `CM_REQ_LOCAL_Q_KEY`.
    pub const LOCAL_Q_KEY: Bits = cm32(28, 32);
    /// `CM_REQ_LOCAL_QPN`.
    pub const LOCAL_QPN: Bits = cm32(32, 24);
    /// `CM_REQ_RESPONDER_RESOURCES`.
    pub const RESPONDER_RESOURCES: Bits = cm8(35, 8);
    /// `CM_REQ_LOCAL_EECN`.
    pub const LOCAL_EECN: Bits = cm32(36, 24);
    /// `CM_REQ_INITIATOR_DEPTH`.
    pub const INITIATOR_DEPTH: Bits = cm8(39, 8);
    /// `CM_REQ_REMOTE_EECN`.
    pub const REMOTE_EECN: Bits = cm32(40, 24);
    /// `CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT`.
    pub const REMOTE_CM_RESPONSE_TIMEOUT: Bits = cm8(43, 5);
    /// `CM_REQ_TRANSPORT_SERVICE_TYPE`.
    pub const TRANSPORT_SERVICE_TYPE: Bits = cm_bloc(43, 5, 2);
    /// `CM_REQ_END_TO_END_FLOW_CONTROL`.
    pub const END_TO_END_FLOW_CONTROL: Bits = cm_bloc(43, 7, 1);
    /// `CM_REQ_STARTING_PSN`.
    pub const STARTING_PSN: Bits = cm32(44, 24);
    /// `CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT`.
    pub const LOCAL_CM_RESPONSE_TIMEOUT: Bits = cm8(47, 5);
    /// `CM_REQ_RETRY_COUNT`.
    pub const RETRY_COUNT: Bits = cm_bloc(47, 5, 3);
    /// `CM_REQ_PARTITION_KEY`.
    pub const PARTITION_KEY: Bits = cm16(48, 16);
    /// `CM_REQ_PATH_PACKET_PAYLOAD_MTU`.
    pub const PATH_MTU: Bits = cm8(50, 4);
    /// `CM_REQ_RDC_EXISTS`.
    pub const RDC_EXISTS: Bits = cm_bloc(50, 4, 1);
    /// `CM_REQ_RNR_RETRY_COUNT`.
    pub const RNR_RETRY_COUNT: Bits = cm_bloc(50, 5, 3);
    /// `CM_REQ_MAX_CM_RETRIES`.
    pub const MAX_CM_RETRIES: Bits = cm8(51, 4);
    /// `CM_REQ_SRQ`.
    pub const SRQ: Bits = cm_bloc(51, 4, 1);
    /// `CM_REQ_EXTENDED_TRANSPORT_TYPE`.
    pub const EXTENDED_TRANSPORT_TYPE: Bits = cm_bloc(51, 5, 3);
    /// `CM_REQ_PRIMARY_*`.
    pub const PRIMARY: PathLayout = PathLayout {
        local_lid: cm_bytes(52, 54),
        remote_lid: cm_bytes(54, 56),
        local_gid: cm_bytes(56, 72),
        remote_gid: cm_bytes(72, 88),
        flow_label: cm32(88, 20),
        packet_rate: cm_bloc(91, 2, 6),
        traffic_class: cm8(92, 8),
        hop_limit: cm8(93, 8),
        sl: cm8(94, 4),
        subnet_local: cm_bloc(94, 4, 1),
        local_ack_timeout: cm8(95, 5),
    };
    /// `CM_REQ_ALTERNATE_*`.
    pub const ALTERNATE: PathLayout = PathLayout {
        local_lid: cm_bytes(96, 98),
        remote_lid: cm_bytes(98, 100),
        local_gid: cm_bytes(100, 116),
        remote_gid: cm_bytes(116, 132),
        flow_label: cm32(132, 20),
        packet_rate: cm_bloc(135, 2, 6),
        traffic_class: cm8(136, 8),
        hop_limit: cm8(137, 8),
        sl: cm8(138, 4),
        subnet_local: cm_bloc(138, 4, 1),
        local_ack_timeout: cm8(139, 5),
    };
    /// `CM_REQ_SAP_SUPPORTED`.
    pub const SAP_SUPPORTED: Bits = cm_bloc(139, 5, 1);
    /// `CM_REQ_PRIVATE_DATA`.
    pub const PRIVATE_DATA: Field = cm_bytes(140, 232);
}

/// Where one path's fields lie (the primary and alternate paths have the
/// same shape, 44 bytes apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathLayout {
    /// Local port LID (big-endian).
    pub local_lid: Field,
    /// Remote port LID.
    pub remote_lid: Field,
    /// Local port GID.
    pub local_gid: Field,
    /// Remote port GID.
    pub remote_gid: Field,
    /// Flow label, 20 bits.
    pub flow_label: Bits,
    /// Packet rate, 6 bits.
    pub packet_rate: Bits,
    /// Traffic class.
    pub traffic_class: Bits,
    /// Hop limit.
    pub hop_limit: Bits,
    /// Service level, 4 bits.
    pub sl: Bits,
    /// Subnet local, 1 bit.
    pub subnet_local: Bits,
    /// Local ACK timeout, 5 bits.
    pub local_ack_timeout: Bits,
}

/// One path of a REQ. Values wider than their field are truncated by
/// `emit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Path {
    /// Local port LID (0xffff, permissive, on RoCE).
    pub local_lid: u16,
    /// Remote port LID.
    pub remote_lid: u16,
    /// Local port GID.
    pub local_gid: [u8; 16],
    /// Remote port GID.
    pub remote_gid: [u8; 16],
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Packet rate (6 bits, IBTA rate encoding).
    pub packet_rate: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level (4 bits).
    pub sl: u8,
    /// Subnet local.
    pub subnet_local: bool,
    /// Local ACK timeout (5 bits, 4.096 us * 2^n).
    pub local_ack_timeout: u8,
}

/// The transport service type (2 bits); with [`Extended`](Self::Extended)
/// the extended transport type says which (1: XRC, as `cm.c` sets it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connected (0).
    Rc,
    /// Unreliable connected (1).
    Uc,
    /// Reliable datagram (2).
    Rd,
    /// See the extended transport type (3).
    Extended,
    /// Not a 2-bit value: only built by hand, emitted as its low 2 bits.
    Unknown(u8),
}

impl From<u8> for Transport {
    fn from(v: u8) -> Transport {
        match v {
            0 => Transport::Rc,
            1 => Transport::Uc,
            2 => Transport::Rd,
            3 => Transport::Extended,
            v => Transport::Unknown(v),
        }
    }
}

impl From<Transport> for u8 {
    fn from(t: Transport) -> u8 {
        match t {
            Transport::Rc => 0,
            Transport::Uc => 1,
            Transport::Rd => 2,
            Transport::Extended => 3,
            Transport::Unknown(v) => v,
        }
    }
}

view!("CM REQ", MAD_LEN);

bit_fields! {
    /// `CM_REQ_LOCAL_COMM_ID`.
    local_comm_id / set_local_comm_id: u32 = field::LOCAL_COMM_ID;
    /// `CM_REQ_VENDOR_ID` (24 bits, ECE).
    vendor_id / set_vendor_id: u32 = field::VENDOR_ID;
    /// `CM_REQ_LOCAL_Q_KEY`.
    local_qkey / set_local_qkey: u32 = field::LOCAL_Q_KEY;
    /// `CM_REQ_LOCAL_QPN` (24 bits).
    local_qpn / set_local_qpn: u32 = field::LOCAL_QPN;
    /// `CM_REQ_RESPONDER_RESOURCES`.
    responder_resources / set_responder_resources: u8 = field::RESPONDER_RESOURCES;
    /// `CM_REQ_LOCAL_EECN` (24 bits).
    local_eecn / set_local_eecn: u32 = field::LOCAL_EECN;
    /// `CM_REQ_INITIATOR_DEPTH`.
    initiator_depth / set_initiator_depth: u8 = field::INITIATOR_DEPTH;
    /// `CM_REQ_REMOTE_EECN` (24 bits).
    remote_eecn / set_remote_eecn: u32 = field::REMOTE_EECN;
    /// `CM_REQ_REMOTE_CM_RESPONSE_TIMEOUT` (5 bits).
    remote_cm_response_timeout / set_remote_cm_response_timeout: u8 =
        field::REMOTE_CM_RESPONSE_TIMEOUT;
    /// `CM_REQ_TRANSPORT_SERVICE_TYPE` (2 bits; see [`Transport`]).
    transport_service_type / set_transport_service_type: u8 = field::TRANSPORT_SERVICE_TYPE;
    /// `CM_REQ_END_TO_END_FLOW_CONTROL`.
    end_to_end_flow_control / set_end_to_end_flow_control: bool = field::END_TO_END_FLOW_CONTROL;
    /// `CM_REQ_STARTING_PSN` (24 bits).
    starting_psn / set_starting_psn: u32 = field::STARTING_PSN;
    /// `CM_REQ_LOCAL_CM_RESPONSE_TIMEOUT` (5 bits).
    local_cm_response_timeout / set_local_cm_response_timeout: u8 =
        field::LOCAL_CM_RESPONSE_TIMEOUT;
    /// `CM_REQ_RETRY_COUNT` (3 bits).
    retry_count / set_retry_count: u8 = field::RETRY_COUNT;
    /// `CM_REQ_PARTITION_KEY`.
    partition_key / set_partition_key: u16 = field::PARTITION_KEY;
    /// `CM_REQ_PATH_PACKET_PAYLOAD_MTU` (4 bits, IBTA MTU encoding).
    path_mtu / set_path_mtu: u8 = field::PATH_MTU;
    /// `CM_REQ_RDC_EXISTS`.
    rdc_exists / set_rdc_exists: bool = field::RDC_EXISTS;
    /// `CM_REQ_RNR_RETRY_COUNT` (3 bits).
    rnr_retry_count / set_rnr_retry_count: u8 = field::RNR_RETRY_COUNT;
    /// `CM_REQ_MAX_CM_RETRIES` (4 bits).
    max_cm_retries / set_max_cm_retries: u8 = field::MAX_CM_RETRIES;
    /// `CM_REQ_SRQ`.
    srq / set_srq: bool = field::SRQ;
    /// `CM_REQ_EXTENDED_TRANSPORT_TYPE` (3 bits).
    extended_transport_type / set_extended_transport_type: u8 = field::EXTENDED_TRANSPORT_TYPE;
    /// `CM_REQ_SAP_SUPPORTED`.
    sap_supported / set_sap_supported: bool = field::SAP_SUPPORTED;
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// `CM_REQ_SERVICE_ID`.
    pub fn service_id(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::SERVICE_ID)
    }

    /// `CM_REQ_LOCAL_CA_GUID`.
    pub fn local_ca_guid(&self) -> u64 {
        get_be64(self.buffer.as_ref(), field::LOCAL_CA_GUID)
    }

    /// The path laid out at `at` ([`field::PRIMARY`] or [`field::ALTERNATE`]).
    pub fn path(&self, at: &PathLayout) -> Path {
        let b = self.buffer.as_ref();
        Path {
            local_lid: u16::from_be_bytes(array(b, at.local_lid.clone())),
            remote_lid: u16::from_be_bytes(array(b, at.remote_lid.clone())),
            local_gid: array(b, at.local_gid.clone()),
            remote_gid: array(b, at.remote_gid.clone()),
            flow_label: at.flow_label.get(b),
            // The masks keep these inside a byte.
            packet_rate: at.packet_rate.get(b) as u8,
            traffic_class: at.traffic_class.get(b) as u8,
            hop_limit: at.hop_limit.get(b) as u8,
            sl: at.sl.get(b) as u8,
            subnet_local: at.subnet_local.get(b) != 0,
            local_ack_timeout: at.local_ack_timeout.get(b) as u8,
        }
    }

    /// `CM_REQ_PRIVATE_DATA`.
    pub fn private_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PRIVATE_DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `CM_REQ_SERVICE_ID`.
    pub fn set_service_id(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::SERVICE_ID, &v.to_be_bytes());
    }

    /// Sets `CM_REQ_LOCAL_CA_GUID`.
    pub fn set_local_ca_guid(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::LOCAL_CA_GUID, &v.to_be_bytes());
    }

    /// Writes the path laid out at `at`.
    pub fn set_path(&mut self, at: &PathLayout, p: &Path) {
        let b = self.buffer.as_mut();
        set_bytes(b, at.local_lid.clone(), &p.local_lid.to_be_bytes());
        set_bytes(b, at.remote_lid.clone(), &p.remote_lid.to_be_bytes());
        set_bytes(b, at.local_gid.clone(), &p.local_gid);
        set_bytes(b, at.remote_gid.clone(), &p.remote_gid);
        at.flow_label.set(b, p.flow_label);
        at.packet_rate.set(b, p.packet_rate.into());
        at.traffic_class.set(b, p.traffic_class.into());
        at.hop_limit.set(b, p.hop_limit.into());
        at.sl.set(b, p.sl.into());
        at.subnet_local.set(b, p.subnet_local.into());
        at.local_ack_timeout.set(b, p.local_ack_timeout.into());
    }

    /// `CM_REQ_PRIVATE_DATA`, to write.
    pub fn private_data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PRIVATE_DATA]
    }
}

/// A REQ. Values wider than their field are truncated by `emit`; reserved
/// bits are emitted as 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// The MAD's transaction id.
    pub tid: u64,
    /// The MAD's `attr_mod`: ECE options (`cm_format_mad_ece_hdr`).
    pub attr_mod: u32,
    /// Local communication id.
    pub local_comm_id: u32,
    /// ECE vendor id (24 bits).
    pub vendor_id: u32,
    /// Service id (rdma_cm: [`service_id`](crate::private_data::cma::service_id)).
    pub service_id: u64,
    /// Local CA GUID.
    pub local_ca_guid: u64,
    /// Local Q_Key.
    pub local_qkey: u32,
    /// Local QPN (24 bits).
    pub local_qpn: u32,
    /// Responder resources (RDMA READs the peer may have outstanding to us).
    pub responder_resources: u8,
    /// Local EECN (24 bits).
    pub local_eecn: u32,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Remote EECN (24 bits).
    pub remote_eecn: u32,
    /// Remote CM response timeout (5 bits).
    pub remote_cm_response_timeout: u8,
    /// Transport service type.
    pub transport: Transport,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// Starting PSN (24 bits).
    pub starting_psn: u32,
    /// Local CM response timeout (5 bits).
    pub local_cm_response_timeout: u8,
    /// Retry count (3 bits).
    pub retry_count: u8,
    /// Partition key.
    pub partition_key: u16,
    /// Path MTU (4 bits, IBTA MTU encoding: 1 = 256 ... 5 = 4096).
    pub path_mtu: u8,
    /// RDC exists.
    pub rdc_exists: bool,
    /// RNR retry count (3 bits).
    pub rnr_retry_count: u8,
    /// Max CM retries (4 bits).
    pub max_cm_retries: u8,
    /// SRQ.
    pub srq: bool,
    /// Extended transport type (3 bits).
    pub extended_transport_type: u8,
    /// The primary path.
    pub primary: Path,
    /// The alternate path (all zero when there is none).
    pub alternate: Path,
    /// SAP supported.
    pub sap_supported: bool,
    /// The private data.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl Repr {
    /// Reads a REQ: a CM MAD with the REQ attribute.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check_len()?;
        let hdr = parse_header(p.buffer.as_ref(), "CM REQ", AttrId::Req)?;
        Ok(Repr {
            tid: hdr.tid,
            attr_mod: hdr.attr_mod,
            local_comm_id: p.local_comm_id(),
            vendor_id: p.vendor_id(),
            service_id: p.service_id(),
            local_ca_guid: p.local_ca_guid(),
            local_qkey: p.local_qkey(),
            local_qpn: p.local_qpn(),
            responder_resources: p.responder_resources(),
            local_eecn: p.local_eecn(),
            initiator_depth: p.initiator_depth(),
            remote_eecn: p.remote_eecn(),
            remote_cm_response_timeout: p.remote_cm_response_timeout(),
            transport: p.transport_service_type().into(),
            end_to_end_flow_control: p.end_to_end_flow_control(),
            starting_psn: p.starting_psn(),
            local_cm_response_timeout: p.local_cm_response_timeout(),
            retry_count: p.retry_count(),
            partition_key: p.partition_key(),
            path_mtu: p.path_mtu(),
            rdc_exists: p.rdc_exists(),
            rnr_retry_count: p.rnr_retry_count(),
            max_cm_retries: p.max_cm_retries(),
            srq: p.srq(),
            extended_transport_type: p.extended_transport_type(),
            primary: p.path(&field::PRIMARY),
            alternate: p.path(&field::ALTERNATE),
            sap_supported: p.sap_supported(),
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
        emit_header(b, mad::Repr::cm(AttrId::Req, self.tid, self.attr_mod));
        p.set_local_comm_id(self.local_comm_id);
        p.set_vendor_id(self.vendor_id);
        p.set_service_id(self.service_id);
        p.set_local_ca_guid(self.local_ca_guid);
        p.set_local_qkey(self.local_qkey);
        p.set_local_qpn(self.local_qpn);
        p.set_responder_resources(self.responder_resources);
        p.set_local_eecn(self.local_eecn);
        p.set_initiator_depth(self.initiator_depth);
        p.set_remote_eecn(self.remote_eecn);
        p.set_remote_cm_response_timeout(self.remote_cm_response_timeout);
        p.set_transport_service_type(self.transport.into());
        p.set_end_to_end_flow_control(self.end_to_end_flow_control);
        p.set_starting_psn(self.starting_psn);
        p.set_local_cm_response_timeout(self.local_cm_response_timeout);
        p.set_retry_count(self.retry_count);
        p.set_partition_key(self.partition_key);
        p.set_path_mtu(self.path_mtu);
        p.set_rdc_exists(self.rdc_exists);
        p.set_rnr_retry_count(self.rnr_retry_count);
        p.set_max_cm_retries(self.max_cm_retries);
        p.set_srq(self.srq);
        p.set_extended_transport_type(self.extended_transport_type);
        p.set_path(&field::PRIMARY, &self.primary);
        p.set_path(&field::ALTERNATE, &self.alternate);
        p.set_sap_supported(self.sap_supported);
        p.private_data_mut().copy_from_slice(&self.private_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::testing::{TID, header, refuses_what_any_cm_message_refuses};

    /// A REQ written by hand from Table 106 as `ibta_vol1_c12.h` lays it
    /// out (offsets from the end of the MAD header), every field a distinct
    /// value so that a misplaced one shows.
    fn bytes() -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0010, 0x0000_0001));
        let m = &mut b[24..];
        m[0..4].copy_from_slice(&[0xc0, 0xc1, 0xc2, 0xc3]); // local comm id
        m[5..8].copy_from_slice(&[0x15, 0xb3, 0x5a]); // vendor id (m[4] reserved)
        m[8..16].copy_from_slice(&[0, 0, 0, 0, 0x01, 0x06, 0x11, 0x44]); // service id
        m[16..24].copy_from_slice(&[0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7]); // CA GUID
        m[28..32].copy_from_slice(&[0xb0, 0xb1, 0xb2, 0xb3]); // Q_Key
        m[32..36].copy_from_slice(&[0x12, 0x34, 0x56, 0x11]); // QPN, responder resources
        m[36..40].copy_from_slice(&[0x00, 0xee, 0xc1, 0x22]); // local EECN, initiator depth
        // remote EECN; remote CM response timeout 0x15, transport 2 (RD), flow control
        m[40..44].copy_from_slice(&[0x0a, 0x0b, 0x0c, 0x15 << 3 | 2 << 1 | 1]);
        // starting PSN; local CM response timeout 0x13, retry count 6
        m[44..48].copy_from_slice(&[0xab, 0xcd, 0xef, 0x13 << 3 | 6]);
        m[48..50].copy_from_slice(&[0xff, 0xfe]); // P_Key
        m[50] = 3 << 4 | 1 << 3 | 5; // MTU 3, RDC exists, RNR retry 5
        m[51] = 0xc << 4 | 1 << 3 | 1; // max CM retries 12, SRQ, extended type 1
        // Primary path.
        m[52..56].copy_from_slice(&[0x01, 0x02, 0x03, 0x04]); // local, remote LID
        for i in 0..16 {
            m[56 + i] = 0xf0 + i as u8; // local GID
            m[72 + i] = 0xe0 + i as u8; // remote GID
        }
        m[88..92].copy_from_slice(&[0x9a, 0xbc, 0xd0, 0x2b]); // flow label 0x9abcd, rate 0x2b
        m[92..96].copy_from_slice(&[0x5c, 0x40, 0xb << 4 | 1 << 3, 0x12 << 3]); // TC, hop, SL+subnet, ACK
        // Alternate path.
        m[96..100].copy_from_slice(&[0x05, 0x06, 0x07, 0x08]);
        for i in 0..16 {
            m[100 + i] = 0xd0 + i as u8;
            m[116 + i] = 0xc0 + i as u8;
        }
        m[132..136].copy_from_slice(&[0x12, 0x34, 0x50, 0x11]); // flow label 0x12345, rate 0x11
        // TC, hop, SL 3 (not subnet local), ACK 0x0e + SAP supported
        m[136..140].copy_from_slice(&[0x6d, 0x02, 0x3 << 4, 0x0e << 3 | 1 << 2]);
        for i in 0..PRIVATE_DATA_LEN {
            m[140 + i] = i as u8 ^ 0x5a;
        }
        b
    }

    fn repr() -> Repr {
        let mut private_data = [0u8; PRIVATE_DATA_LEN];
        for (i, d) in private_data.iter_mut().enumerate() {
            *d = i as u8 ^ 0x5a;
        }
        let gid = |base: u8| core::array::from_fn(|i| base + i as u8);
        Repr {
            tid: TID,
            attr_mod: 1,
            local_comm_id: 0xc0c1_c2c3,
            vendor_id: 0x15_b35a,
            service_id: 0x0106_1144,
            local_ca_guid: 0xa0a1_a2a3_a4a5_a6a7,
            local_qkey: 0xb0b1_b2b3,
            local_qpn: 0x12_3456,
            responder_resources: 0x11,
            local_eecn: 0x00_eec1,
            initiator_depth: 0x22,
            remote_eecn: 0x0a_0b0c,
            remote_cm_response_timeout: 0x15,
            transport: Transport::Rd,
            end_to_end_flow_control: true,
            starting_psn: 0xab_cdef,
            local_cm_response_timeout: 0x13,
            retry_count: 6,
            partition_key: 0xfffe,
            path_mtu: 3,
            rdc_exists: true,
            rnr_retry_count: 5,
            max_cm_retries: 12,
            srq: true,
            extended_transport_type: 1,
            primary: Path {
                local_lid: 0x0102,
                remote_lid: 0x0304,
                local_gid: gid(0xf0),
                remote_gid: gid(0xe0),
                flow_label: 0x9_abcd,
                packet_rate: 0x2b,
                traffic_class: 0x5c,
                hop_limit: 0x40,
                sl: 0xb,
                subnet_local: true,
                local_ack_timeout: 0x12,
            },
            alternate: Path {
                local_lid: 0x0506,
                remote_lid: 0x0708,
                local_gid: gid(0xd0),
                remote_gid: gid(0xc0),
                flow_label: 0x1_2345,
                packet_rate: 0x11,
                traffic_class: 0x6d,
                hop_limit: 0x02,
                sl: 3,
                subnet_local: false,
                local_ack_timeout: 0x0e,
            },
            sap_supported: true,
            private_data,
        }
    }

    #[test]
    fn a_req_reads_and_writes_as_table_106_lays_it_out() {
        let b = bytes();
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(p.local_qpn(), 0x12_3456);
        assert_eq!(p.transport_service_type(), 2);
        assert_eq!(p.private_data()[..2], [0x5a, 0x5b]);
        assert_eq!(Repr::parse(&p).unwrap(), repr());
        let mut out = [0xffu8; MAD_LEN];
        repr().emit(&mut Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, b);
        assert_eq!(repr().buffer_len(), MAD_LEN);
    }

    #[test]
    fn a_req_is_refused_like_any_cm_message() {
        refuses_what_any_cm_message_refuses(&bytes(), "CM REQ", 0x0010, |b| {
            Repr::parse(&Packet::new_checked(b)?).map(drop)
        });
    }

    #[test]
    fn setters_keep_the_fields_that_share_their_byte() {
        let mut b = bytes();
        let mut p = Packet::new_checked(&mut b[..]).unwrap();
        p.set_retry_count(0);
        p.set_rnr_retry_count(0);
        p.set_srq(false);
        p.set_path(
            &field::PRIMARY,
            &Path {
                sl: 0,
                ..repr().primary
            },
        );
        let r = Repr::parse(&p).unwrap();
        let want = Repr {
            retry_count: 0,
            rnr_retry_count: 0,
            srq: false,
            primary: Path {
                sl: 0,
                ..repr().primary
            },
            ..repr()
        };
        assert_eq!(r, want);
        assert_eq!(b[24 + 47], 0x13 << 3);
        assert_eq!(b[24 + 50], 3 << 4 | 1 << 3);
        assert_eq!(b[24 + 51], 0xc << 4 | 1);
        assert_eq!(b[24 + 94], 1 << 3);
    }

    #[test]
    fn transport_types_convert_both_ways() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(Transport::from(v)), v);
        }
        assert_eq!(Transport::from(0), Transport::Rc);
        assert_eq!(Transport::from(3), Transport::Extended);
    }
}
