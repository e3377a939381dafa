//! librdmacm's public headers, as `#[repr(C)]` Rust: `<rdma/rdma_cma.h>`
//! (with `<rdma/rdma_verbs.h>`, which adds no types), what their structs
//! embed from `<infiniband/sa.h>` and `<infiniband/ib.h>`, and the
//! constants of `<rdma/rsocket.h>`.
//!
//! Names, layouts and conventions are those of [`crate::abi`]: every
//! struct, union, enum and field is named as in C; a C enum is a type alias
//! (`unsigned int`: none here has a negative member) with its members as
//! constants; a `#define` is a constant of the C type of its value.
//! `tests/cma_layout.rs` checks each size, offset, field type and value
//! against the installed headers (Debian bookworm's rdma-core 44) and,
//! when there, a newer set (sid's rdma-core 65).
//!
//! Between v44 and v65 librdmacm added (in v60) four event types, `arg` to
//! `rdma_cm_event`'s `param` union, and `RAI_SA` and `RAI_DNS`; this
//! mirrors the newer header, and each says since when. None moves or grows
//! anything: the enum gained members at its end, and `arg` (8 bytes) is
//! smaller than the union's `ud` member. So one layout serves programs
//! built against either version.
//!
//! C's anonymous members get a Rust name, said at each: `rdma_addr`'s two
//! socket address unions are [`rdma_addr::src`] and [`rdma_addr::dst`]
//! (C reaches `src_addr` or `src_sin6` directly in `struct rdma_addr`).
//! Socket addresses are libc's. `AF_IB` addresses (`struct sockaddr_ib`,
//! 48 bytes) have no member of their own in `rdma_addr`'s unions: they are
//! stored in `src_storage` / `dst_storage`.
//!
//! `<rdma/rdma_verbs.h>` is `static inline` wrappers, compiled into the
//! program, so what they read of a `struct rdma_cm_id` is ABI too:
//! `rdma_reg_msgs`/`_read`/`_write` call `ibv_reg_mr(id->pd, ..)`;
//! `rdma_post_recv(v)` calls `ibv_post_srq_recv(id->srq, ..)` when `srq`
//! is set, else `ibv_post_recv(id->qp, ..)`; the other `rdma_post_*` call
//! `ibv_post_send(id->qp, ..)`; `rdma_get_send_comp`/`_recv_comp` call
//! `ibv_poll_cq`, `ibv_req_notify_cq` and `ibv_ack_cq_events` on
//! `id->send_cq`/`recv_cq` and `ibv_get_cq_event` on
//! `id->send_cq_channel`/`recv_cq_channel` (and assert that the CQ's
//! context is `id`).
//!
//! `missing_docs` is off here, for fields only, as in [`crate::abi`]: they
//! carry C's names and meanings one for one (the man pages' and the
//! headers' documentation is theirs). Every type and constant still has its
//! one-line doc.
#![allow(missing_docs)]
// C's names, kept as they are so that the headers and man pages apply.
#![allow(non_camel_case_types, non_snake_case)]

use libc::{
    c_char, c_int, c_void, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage, socklen_t,
};

use crate::abi::{
    ibv_ah_attr, ibv_comp_channel, ibv_context, ibv_cq, ibv_gid, ibv_pd, ibv_qp, ibv_qp_type,
    ibv_srq,
};

// <infiniband/ib.h>: AF_IB socket addresses.

/// `AF_IB`: the InfiniBand address family (`struct sockaddr_ib`).
pub const AF_IB: c_int = 27;
/// `PF_IB`: the InfiniBand protocol family (`AF_IB`).
pub const PF_IB: c_int = AF_IB;

/// `struct ib_addr`: a 128-bit IB address (a GID), in network byte order.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ib_addr {
    pub ib_u: ib_addr_ib_u,
}

/// `struct ib_addr`'s `ib_u` (anonymous in C): the address as bytes or
/// big-endian words (ib.h's `sib_addr8` ... `sib_addr64`, `sib_raw`,
/// `sib_subnet_prefix`, `sib_interface_id` macros name these).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ib_addr_ib_u {
    pub uib_addr8: [u8; 16],
    /// `__be16[8]`.
    pub uib_addr16: [u16; 8],
    /// `__be32[4]`.
    pub uib_addr32: [u32; 4],
    /// `__be64[2]`.
    pub uib_addr64: [u64; 2],
}

/// `struct sockaddr_ib`: an `AF_IB` socket address (a GID and service ID).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sockaddr_ib {
    /// `AF_IB`.
    pub sib_family: u16,
    /// `__be16`.
    pub sib_pkey: u16,
    /// `__be32`.
    pub sib_flowinfo: u32,
    pub sib_addr: ib_addr,
    /// `__be64`.
    pub sib_sid: u64,
    /// `__be64`.
    pub sib_sid_mask: u64,
    pub sib_scope_id: u64,
}

// <infiniband/sa.h>: subnet administration records.

/// `struct ibv_sa_path_rec`: a path record (`rdma_route::path_rec`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_sa_path_rec {
    pub dgid: ibv_gid,
    pub sgid: ibv_gid,
    /// `__be16`.
    pub dlid: u16,
    /// `__be16`.
    pub slid: u16,
    pub raw_traffic: c_int,
    /// `__be32`.
    pub flow_label: u32,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub reversible: c_int,
    pub numb_path: u8,
    /// `__be16`.
    pub pkey: u16,
    pub sl: u8,
    pub mtu_selector: u8,
    /// `enum ibv_mtu`'s value.
    pub mtu: u8,
    pub rate_selector: u8,
    /// `enum ibv_rate`'s value.
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub preference: u8,
}

/// `struct ibv_sa_mcmember_rec`: a multicast member record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_sa_mcmember_rec {
    pub mgid: ibv_gid,
    pub port_gid: ibv_gid,
    pub qkey: u32,
    pub mlid: u16,
    pub mtu_selector: u8,
    pub mtu: u8,
    pub traffic_class: u8,
    pub pkey: u16,
    pub rate_selector: u8,
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub sl: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub scope: u8,
    pub join_state: u8,
    pub proxy_join: c_int,
}

/// `struct ibv_sa_service_rec`: a service record.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_sa_service_rec {
    pub id: u64,
    pub gid: ibv_gid,
    pub pkey: u16,
    pub lease: u32,
    pub key: [u8; 16],
    pub name: [u8; 64],
    pub data8: [u8; 16],
    pub data16: [u16; 8],
    pub data32: [u32; 4],
    pub data64: [u64; 2],
}

/// `IBV_PATH_RECORD_REVERSIBLE`: `ibv_path_record::reversible_numpath`'s
/// reversible bit.
pub const IBV_PATH_RECORD_REVERSIBLE: c_int = 0x80;

/// `struct ibv_path_record`: a path record in wire format (network byte
/// order, packed fields), as `RDMA_OPTION_IB_PATH` takes it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_path_record {
    /// `__be64`.
    pub service_id: u64,
    pub dgid: ibv_gid,
    pub sgid: ibv_gid,
    /// `__be16`.
    pub dlid: u16,
    /// `__be16`.
    pub slid: u16,
    /// `__be32`: reserved (31:28), flow label (27:8), hop limit (7:0).
    pub flowlabel_hoplimit: u32,
    pub tclass: u8,
    /// Reversible (7), number of paths (6:0).
    pub reversible_numpath: u8,
    /// `__be16`.
    pub pkey: u16,
    /// `__be16`: QoS class (15:4), SL (3:0).
    pub qosclass_sl: u16,
    /// MTU selector (7:6), MTU (5:0).
    pub mtu: u8,
    /// Rate selector (7:6), rate (5:0).
    pub rate: u8,
    /// Lifetime selector (7:6), lifetime (5:0).
    pub packetlifetime: u8,
    pub preference: u8,
    pub reserved: [u8; 6],
}

/// `IBV_PATH_FLAG_GMP`: an `ibv_path_data::flags` bit (a GMP path).
pub const IBV_PATH_FLAG_GMP: c_int = 1 << 0;
/// `IBV_PATH_FLAG_PRIMARY`: an `ibv_path_data::flags` bit.
pub const IBV_PATH_FLAG_PRIMARY: c_int = 1 << 1;
/// `IBV_PATH_FLAG_ALTERNATE`: an `ibv_path_data::flags` bit.
pub const IBV_PATH_FLAG_ALTERNATE: c_int = 1 << 2;
/// `IBV_PATH_FLAG_OUTBOUND`: an `ibv_path_data::flags` bit.
pub const IBV_PATH_FLAG_OUTBOUND: c_int = 1 << 3;
/// `IBV_PATH_FLAG_INBOUND`: an `ibv_path_data::flags` bit.
pub const IBV_PATH_FLAG_INBOUND: c_int = 1 << 4;
/// `IBV_PATH_FLAG_INBOUND_REVERSE`: an `ibv_path_data::flags` bit.
pub const IBV_PATH_FLAG_INBOUND_REVERSE: c_int = 1 << 5;
/// `IBV_PATH_FLAG_BIDIRECTIONAL`: `OUTBOUND | INBOUND_REVERSE`.
pub const IBV_PATH_FLAG_BIDIRECTIONAL: c_int =
    IBV_PATH_FLAG_OUTBOUND | IBV_PATH_FLAG_INBOUND_REVERSE;

/// `struct ibv_path_data`: a flagged path record (`RDMA_OPTION_IB_PATH`'s
/// array element).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_path_data {
    /// `IBV_PATH_FLAG_*`.
    pub flags: u32,
    pub reserved: u32,
    pub path: ibv_path_record,
}

// <rdma/rdma_cma.h>'s enums: each a type and its members.

/// `enum rdma_cm_event_type` (`unsigned int` in C).
pub type rdma_cm_event_type = u32;
/// `RDMA_CM_EVENT_ADDR_RESOLVED`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_ADDR_RESOLVED: rdma_cm_event_type = 0;
/// `RDMA_CM_EVENT_ADDR_ERROR`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_ADDR_ERROR: rdma_cm_event_type = 1;
/// `RDMA_CM_EVENT_ROUTE_RESOLVED`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_ROUTE_RESOLVED: rdma_cm_event_type = 2;
/// `RDMA_CM_EVENT_ROUTE_ERROR`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_ROUTE_ERROR: rdma_cm_event_type = 3;
/// `RDMA_CM_EVENT_CONNECT_REQUEST`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_CONNECT_REQUEST: rdma_cm_event_type = 4;
/// `RDMA_CM_EVENT_CONNECT_RESPONSE`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_CONNECT_RESPONSE: rdma_cm_event_type = 5;
/// `RDMA_CM_EVENT_CONNECT_ERROR`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_CONNECT_ERROR: rdma_cm_event_type = 6;
/// `RDMA_CM_EVENT_UNREACHABLE`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_UNREACHABLE: rdma_cm_event_type = 7;
/// `RDMA_CM_EVENT_REJECTED`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_REJECTED: rdma_cm_event_type = 8;
/// `RDMA_CM_EVENT_ESTABLISHED`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_ESTABLISHED: rdma_cm_event_type = 9;
/// `RDMA_CM_EVENT_DISCONNECTED`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_DISCONNECTED: rdma_cm_event_type = 10;
/// `RDMA_CM_EVENT_DEVICE_REMOVAL`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_DEVICE_REMOVAL: rdma_cm_event_type = 11;
/// `RDMA_CM_EVENT_MULTICAST_JOIN`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_MULTICAST_JOIN: rdma_cm_event_type = 12;
/// `RDMA_CM_EVENT_MULTICAST_ERROR`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_MULTICAST_ERROR: rdma_cm_event_type = 13;
/// `RDMA_CM_EVENT_ADDR_CHANGE`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_ADDR_CHANGE: rdma_cm_event_type = 14;
/// `RDMA_CM_EVENT_TIMEWAIT_EXIT`, of `enum rdma_cm_event_type`.
pub const RDMA_CM_EVENT_TIMEWAIT_EXIT: rdma_cm_event_type = 15;
/// `RDMA_CM_EVENT_ADDRINFO_RESOLVED`, of `enum rdma_cm_event_type` (rdma-core v60.0).
pub const RDMA_CM_EVENT_ADDRINFO_RESOLVED: rdma_cm_event_type = 16;
/// `RDMA_CM_EVENT_ADDRINFO_ERROR`, of `enum rdma_cm_event_type` (rdma-core v60.0).
pub const RDMA_CM_EVENT_ADDRINFO_ERROR: rdma_cm_event_type = 17;
/// `RDMA_CM_EVENT_USER`, of `enum rdma_cm_event_type` (rdma-core v60.0): the
/// one event a program may write (`rdma_write_cm_event`).
pub const RDMA_CM_EVENT_USER: rdma_cm_event_type = 18;
/// `RDMA_CM_EVENT_INTERNAL`, of `enum rdma_cm_event_type` (rdma-core v60.0):
/// librdmacm's own, never returned to a program.
pub const RDMA_CM_EVENT_INTERNAL: rdma_cm_event_type = 19;

/// `enum rdma_port_space` (`unsigned int` in C).
pub type rdma_port_space = u32;
/// `RDMA_PS_IPOIB`, of `enum rdma_port_space` (UD QPs).
pub const RDMA_PS_IPOIB: rdma_port_space = 0x0002;
/// `RDMA_PS_TCP`, of `enum rdma_port_space` (RC QPs).
pub const RDMA_PS_TCP: rdma_port_space = 0x0106;
/// `RDMA_PS_UDP`, of `enum rdma_port_space` (UD QPs).
pub const RDMA_PS_UDP: rdma_port_space = 0x0111;
/// `RDMA_PS_IB`, of `enum rdma_port_space` (any QP type).
pub const RDMA_PS_IB: rdma_port_space = 0x013F;

/// `enum rdma_cm_join_mc_attr_mask` (`unsigned int` in C).
pub type rdma_cm_join_mc_attr_mask = u32;
/// `RDMA_CM_JOIN_MC_ATTR_ADDRESS`, of `enum rdma_cm_join_mc_attr_mask`.
pub const RDMA_CM_JOIN_MC_ATTR_ADDRESS: rdma_cm_join_mc_attr_mask = 1 << 0;
/// `RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS`, of `enum rdma_cm_join_mc_attr_mask`.
pub const RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS: rdma_cm_join_mc_attr_mask = 1 << 1;
/// `RDMA_CM_JOIN_MC_ATTR_RESERVED`, of `enum rdma_cm_join_mc_attr_mask`.
pub const RDMA_CM_JOIN_MC_ATTR_RESERVED: rdma_cm_join_mc_attr_mask = 1 << 2;

/// `enum rdma_cm_mc_join_flags` (`unsigned int` in C).
pub type rdma_cm_mc_join_flags = u32;
/// `RDMA_MC_JOIN_FLAG_FULLMEMBER`, of `enum rdma_cm_mc_join_flags`.
pub const RDMA_MC_JOIN_FLAG_FULLMEMBER: rdma_cm_mc_join_flags = 0;
/// `RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER`, of `enum rdma_cm_mc_join_flags`.
pub const RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER: rdma_cm_mc_join_flags = 1;
/// `RDMA_MC_JOIN_FLAG_RESERVED`, of `enum rdma_cm_mc_join_flags`.
pub const RDMA_MC_JOIN_FLAG_RESERVED: rdma_cm_mc_join_flags = 2;

/// `RDMA_MAX_RESP_RES`, of an anonymous enum: `responder_resources` "as
/// many as the device allows".
pub const RDMA_MAX_RESP_RES: u32 = 0xFF;
/// `RDMA_MAX_INIT_DEPTH`, of an anonymous enum: `initiator_depth` "as many
/// as the device allows".
pub const RDMA_MAX_INIT_DEPTH: u32 = 0xFF;

/// `RDMA_OPTION_ID`, of an anonymous enum: `rdma_set_option`'s level for
/// the `rdma_cm_id` itself.
pub const RDMA_OPTION_ID: u32 = 0;
/// `RDMA_OPTION_IB`, of an anonymous enum: `rdma_set_option`'s IB level.
pub const RDMA_OPTION_IB: u32 = 1;

/// `RDMA_OPTION_ID_TOS`, of an anonymous enum: a `uint8_t` type of
/// service (RFC 2474).
pub const RDMA_OPTION_ID_TOS: u32 = 0;
/// `RDMA_OPTION_ID_REUSEADDR`, of an anonymous enum: an `int`, like
/// `SO_REUSEADDR`.
pub const RDMA_OPTION_ID_REUSEADDR: u32 = 1;
/// `RDMA_OPTION_ID_AFONLY`, of an anonymous enum: an `int`, like
/// `IPV6_V6ONLY`.
pub const RDMA_OPTION_ID_AFONLY: u32 = 2;
/// `RDMA_OPTION_ID_ACK_TIMEOUT`, of an anonymous enum: a `uint8_t` QP ACK
/// timeout (`ibv_qp_attr::timeout`).
pub const RDMA_OPTION_ID_ACK_TIMEOUT: u32 = 3;

/// `RDMA_OPTION_IB_PATH`, of an anonymous enum: a `struct ibv_path_data[]`
/// to use as the route.
pub const RDMA_OPTION_IB_PATH: u32 = 1;

// <rdma/rdma_cma.h>'s #defines.

/// `RDMA_IB_IP_PS_MASK`: an `AF_IB` service ID's port space bits.
pub const RDMA_IB_IP_PS_MASK: u64 = 0xFFFF_FFFF_FFFF_0000;
/// `RDMA_IB_IP_PORT_MASK`: an `AF_IB` service ID's port bits.
pub const RDMA_IB_IP_PORT_MASK: u64 = 0x0000_0000_0000_FFFF;
/// `RDMA_IB_IP_PS_TCP`: the service ID prefix of `RDMA_PS_TCP` ports.
pub const RDMA_IB_IP_PS_TCP: u64 = 0x0000_0000_0106_0000;
/// `RDMA_IB_IP_PS_UDP`: the service ID prefix of `RDMA_PS_UDP` ports.
pub const RDMA_IB_IP_PS_UDP: u64 = 0x0000_0000_0111_0000;
/// `RDMA_IB_PS_IB`: the service ID prefix of `RDMA_PS_IB` ports.
pub const RDMA_IB_PS_IB: u64 = 0x0000_0000_013F_0000;

/// `RDMA_UDP_QKEY`: the Q_Key of the RDMA CM's UD QPs and multicast
/// groups.
pub const RDMA_UDP_QKEY: c_int = 0x0123_4567;

/// `RAI_PASSIVE`: an `rdma_addrinfo::ai_flags` bit (a listening endpoint).
pub const RAI_PASSIVE: c_int = 0x0000_0001;
/// `RAI_NUMERICHOST`: an `ai_flags` bit (the node is a numeric address).
pub const RAI_NUMERICHOST: c_int = 0x0000_0002;
/// `RAI_NOROUTE`: an `ai_flags` bit (resolve no route).
pub const RAI_NOROUTE: c_int = 0x0000_0004;
/// `RAI_FAMILY`: an `ai_flags` bit (`ai_family` is the addresses' family).
pub const RAI_FAMILY: c_int = 0x0000_0008;
/// `RAI_SA`: an `ai_flags` bit (resolve through the SA; since rdma-core
/// v60).
pub const RAI_SA: c_int = 0x0000_0010;
/// `RAI_DNS`: an `ai_flags` bit (resolve through DNS, not with `RAI_SA`;
/// since rdma-core v60).
pub const RAI_DNS: c_int = 0x0000_0020;

// <rdma/rdma_cma.h>'s structs.

/// `struct rdma_ib_addr`: an `rdma_addr`'s RDMA addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rdma_ib_addr {
    pub sgid: ibv_gid,
    pub dgid: ibv_gid,
    /// `__be16`.
    pub pkey: u16,
}

/// `struct rdma_addr`: a CM ID's source and destination addresses.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_addr {
    /// C's anonymous union { `src_addr`, `src_sin`, `src_sin6`,
    /// `src_storage` }.
    pub src: rdma_addr_src,
    /// C's anonymous union { `dst_addr`, `dst_sin`, `dst_sin6`,
    /// `dst_storage` }.
    pub dst: rdma_addr_dst,
    pub addr: rdma_addr_addr,
}

/// `struct rdma_addr`'s first anonymous union: the source address
/// (`rdma_get_local_addr` returns `&src_addr`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_addr_src {
    pub src_addr: sockaddr,
    pub src_sin: sockaddr_in,
    pub src_sin6: sockaddr_in6,
    pub src_storage: sockaddr_storage,
}

/// `struct rdma_addr`'s second anonymous union: the destination address
/// (`rdma_get_peer_addr` returns `&dst_addr`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_addr_dst {
    pub dst_addr: sockaddr,
    pub dst_sin: sockaddr_in,
    pub dst_sin6: sockaddr_in6,
    pub dst_storage: sockaddr_storage,
}

/// `struct rdma_addr`'s `addr` (anonymous in C): the RDMA addresses.
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_addr_addr {
    pub ibaddr: rdma_ib_addr,
}

/// `struct rdma_route`: a CM ID's addresses and path records.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_route {
    pub addr: rdma_addr,
    /// `num_paths` records, owned by the library.
    pub path_rec: *mut ibv_sa_path_rec,
    pub num_paths: c_int,
}

/// `struct rdma_event_channel`: where a CM ID's events are reported.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rdma_event_channel {
    /// Readable when an event is pending; `O_NONBLOCK` on it makes
    /// `rdma_get_cm_event` fail with `EAGAIN` instead of waiting.
    pub fd: c_int,
}

/// `struct rdma_cm_id`: an RDMA CM identifier (librdmacm's socket).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_cm_id {
    /// The device, once bound to one.
    pub verbs: *mut ibv_context,
    pub channel: *mut rdma_event_channel,
    /// `rdma_create_id`'s `context`.
    pub context: *mut c_void,
    /// `rdma_create_qp`'s QP.
    pub qp: *mut ibv_qp,
    pub route: rdma_route,
    pub ps: rdma_port_space,
    pub port_num: u8,
    /// The last event of a synchronous ID (no channel of the caller's).
    pub event: *mut rdma_cm_event,
    pub send_cq_channel: *mut ibv_comp_channel,
    pub send_cq: *mut ibv_cq,
    pub recv_cq_channel: *mut ibv_comp_channel,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub pd: *mut ibv_pd,
    pub qp_type: ibv_qp_type,
}

/// `struct rdma_conn_param`: connection parameters (`rdma_connect`,
/// `rdma_accept`, and connected QPs' events).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rdma_conn_param {
    pub private_data: *const c_void,
    pub private_data_len: u8,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub flow_control: u8,
    /// Ignored when accepting.
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    /// This and `qp_num` are ignored if the ID has a QP.
    pub srq: u8,
    pub qp_num: u32,
}

/// `struct rdma_ud_param`: a UD QP's event parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_ud_param {
    pub private_data: *const c_void,
    pub private_data_len: u8,
    pub ah_attr: ibv_ah_attr,
    pub qp_num: u32,
    pub qkey: u32,
}

/// `struct rdma_cm_event`: a communication event (`rdma_get_cm_event`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rdma_cm_event {
    pub id: *mut rdma_cm_id,
    /// The listening ID, for `RDMA_CM_EVENT_CONNECT_REQUEST`.
    pub listen_id: *mut rdma_cm_id,
    pub event: rdma_cm_event_type,
    /// 0, a negative errno, or a transport's status (an IB CM reject
    /// reason for `RDMA_CM_EVENT_REJECTED`).
    pub status: c_int,
    pub param: rdma_cm_event_param,
}

/// `struct rdma_cm_event`'s `param` (anonymous in C): `conn` for connected
/// QPs' events, `ud` for UD QPs' and multicast events, `arg` for
/// `RDMA_CM_EVENT_USER`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union rdma_cm_event_param {
    pub conn: rdma_conn_param,
    pub ud: rdma_ud_param,
    /// Since rdma-core v60.
    pub arg: u64,
}

/// `struct rdma_addrinfo`: `rdma_getaddrinfo`'s hints and answers.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rdma_addrinfo {
    /// `RAI_*`.
    pub ai_flags: c_int,
    pub ai_family: c_int,
    /// `enum ibv_qp_type`'s value.
    pub ai_qp_type: c_int,
    /// `enum rdma_port_space`'s value.
    pub ai_port_space: c_int,
    pub ai_src_len: socklen_t,
    pub ai_dst_len: socklen_t,
    pub ai_src_addr: *mut sockaddr,
    pub ai_dst_addr: *mut sockaddr,
    pub ai_src_canonname: *mut c_char,
    pub ai_dst_canonname: *mut c_char,
    pub ai_route_len: usize,
    /// `ai_route_len` bytes of `struct ibv_path_data`.
    pub ai_route: *mut c_void,
    pub ai_connect_len: usize,
    /// `ai_connect_len` bytes of private data for `rdma_connect`.
    pub ai_connect: *mut c_void,
    pub ai_next: *mut rdma_addrinfo,
}

/// `struct rdma_cm_join_mc_attr_ex`: `rdma_join_multicast_ex`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rdma_cm_join_mc_attr_ex {
    /// `enum rdma_cm_join_mc_attr_mask` bits.
    pub comp_mask: u32,
    /// `enum rdma_cm_mc_join_flags`'s value.
    pub join_flags: u32,
    pub addr: *mut sockaddr,
}

// <rdma/rsocket.h>'s constants.

/// `SOL_RDMA`: `rsetsockopt`'s level for rsocket options.
pub const SOL_RDMA: c_int = 0x10000;
/// `RDMA_SQSIZE`, of an anonymous enum: the send queue's size.
pub const RDMA_SQSIZE: u32 = 0;
/// `RDMA_RQSIZE`, of an anonymous enum: the receive queue's size.
pub const RDMA_RQSIZE: u32 = 1;
/// `RDMA_INLINE`, of an anonymous enum: the inline data size.
pub const RDMA_INLINE: u32 = 2;
/// `RDMA_IOMAPSIZE`, of an anonymous enum: how many `riomap`s.
pub const RDMA_IOMAPSIZE: u32 = 3;
/// `RDMA_ROUTE`, of an anonymous enum: a `struct ibv_path_data[]` route.
pub const RDMA_ROUTE: u32 = 4;
