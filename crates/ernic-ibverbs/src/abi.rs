//! rdma-core's public `<infiniband/verbs.h>`, as `#[repr(C)]` Rust.
//!
//! Every struct, union, enum and field is named as in C, so that the C
//! header and rdma-core's man pages document this module too; the layouts
//! are the ones a program compiled against rdma-core uses, and
//! `tests/layout.rs` checks each size, offset, field type and value against
//! the installed header (Debian bookworm's rdma-core 44) and, when there,
//! a newer one (sid's rdma-core 65).
//!
//! Where rdma-core added to a struct after v44 this mirrors the newer
//! layout (rdma-core 65, the v65 development head of the upstream tree),
//! and each such field says since when. Those additions never move a field
//! v44 has: structs grow at their end, and `struct verbs_context` grows at
//! its start (it is addressed from its `context` member, which stays last;
//! see [`verbs_context`]). So one layout serves programs built against
//! either version, as long as the library honours the size a caller passes
//! where an entry point takes one (`query_port`, `query_device_ex`,
//! `_ibv_query_gid_ex`, ...).
//!
//! C enums are `unsigned int` (or `int`, for the three with a negative
//! member): each is a type alias with its members as constants. C's
//! anonymous members (the unions inside `ibv_wc` and `ibv_send_wr`, the
//! structs inside `ibv_ops_wr`, ...) get a Rust name, said at each. A
//! function pointer is an `Option<unsafe extern "C" fn>`, so that NULL is
//! `None`.
//!
//! `missing_docs` is off here: fields carry C's names and meanings one for
//! one (their documentation is verbs.h's and the man pages'), and a doc line
//! on each of several hundred fields would only restate the name. Every
//! type and constant still has its one-line doc.
#![allow(missing_docs)]
// C's names, kept as they are so that verbs.h and the man pages apply.
#![allow(non_camel_case_types, non_snake_case)]

use libc::{c_char, c_int, c_uint, c_void, pthread_cond_t, pthread_mutex_t, timespec};

/// `union ibv_gid`: a GID. C's other member, `global`, is the same 16
/// bytes as two `__be64`: `subnet_prefix` (`raw[..8]`) and `interface_id`
/// (`raw[8..]`); this keeps the union's size and alignment with `raw`
/// alone, so that reading it needs no `unsafe`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ibv_gid {
    pub raw: [u8; 16],
}

/// `struct ibv_gid_entry`: one GID table entry (`ibv_query_gid_ex`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_gid_entry {
    pub gid: ibv_gid,
    pub gid_index: u32,
    pub port_num: u32,
    /// `enum ibv_gid_type`.
    pub gid_type: u32,
    pub ndev_ifindex: u32,
}

/// `__VERBS_ABI_IS_EXTENDED`: `ibv_context::abi_compat` of a context that
/// is the `context` member of a [`verbs_context`] (`(void *)UINTPTR_MAX`).
pub const __VERBS_ABI_IS_EXTENDED: *mut c_void = usize::MAX as *mut c_void;

/// `struct ibv_alloc_dm_attr`: `ibv_alloc_dm`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_alloc_dm_attr {
    pub length: usize,
    pub log_align_req: u32,
    pub comp_mask: u32,
}

/// `struct ibv_dm`: device memory.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_dm {
    pub context: *mut ibv_context,
    pub memcpy_to_dm: Option<
        unsafe extern "C" fn(
            dm: *mut ibv_dm,
            dm_offset: u64,
            host_addr: *const c_void,
            length: usize,
        ) -> c_int,
    >,
    pub memcpy_from_dm: Option<
        unsafe extern "C" fn(
            host_addr: *mut c_void,
            dm: *mut ibv_dm,
            dm_offset: u64,
            length: usize,
        ) -> c_int,
    >,
    pub comp_mask: u32,
    pub handle: u32,
}

/// `struct ibv_device_attr`: `ibv_query_device`'s answer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_device_attr {
    pub fw_ver: [c_char; 64],
    /// `__be64`.
    pub node_guid: u64,
    /// `__be64`.
    pub sys_image_guid: u64,
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub hw_ver: u32,
    pub max_qp: c_int,
    pub max_qp_wr: c_int,
    pub device_cap_flags: c_uint,
    pub max_sge: c_int,
    pub max_sge_rd: c_int,
    pub max_cq: c_int,
    pub max_cqe: c_int,
    pub max_mr: c_int,
    pub max_pd: c_int,
    pub max_qp_rd_atom: c_int,
    pub max_ee_rd_atom: c_int,
    pub max_res_rd_atom: c_int,
    pub max_qp_init_rd_atom: c_int,
    pub max_ee_init_rd_atom: c_int,
    pub atomic_cap: ibv_atomic_cap,
    pub max_ee: c_int,
    pub max_rdd: c_int,
    pub max_mw: c_int,
    pub max_raw_ipv6_qp: c_int,
    pub max_raw_ethy_qp: c_int,
    pub max_mcast_grp: c_int,
    pub max_mcast_qp_attach: c_int,
    pub max_total_mcast_qp_attach: c_int,
    pub max_ah: c_int,
    pub max_fmr: c_int,
    pub max_map_per_fmr: c_int,
    pub max_srq: c_int,
    pub max_srq_wr: c_int,
    pub max_srq_sge: c_int,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub phys_port_cnt: u8,
}

/// `struct ibv_query_device_ex_input`: `ibv_query_device_ex`'s input.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_query_device_ex_input {
    pub comp_mask: u32,
}

/// `struct ibv_odp_caps`: on-demand paging capabilities.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_odp_caps {
    pub general_caps: u64,
    pub per_transport_caps: ibv_odp_caps_per_transport_caps,
}

/// `struct ibv_odp_caps`'s `per_transport_caps` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_odp_caps_per_transport_caps {
    pub rc_odp_caps: u32,
    pub uc_odp_caps: u32,
    pub ud_odp_caps: u32,
}

/// `struct ibv_tso_caps`: TCP segmentation offload capabilities.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_tso_caps {
    pub max_tso: u32,
    pub supported_qpts: u32,
}

/// `struct ibv_rss_caps`: receive-side scaling capabilities.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_rss_caps {
    pub supported_qpts: u32,
    pub max_rwq_indirection_tables: u32,
    pub max_rwq_indirection_table_size: u32,
    /// `enum ibv_rx_hash_fields`.
    pub rx_hash_fields_mask: u64,
    /// `enum ibv_rx_hash_function_flags`.
    pub rx_hash_function: u8,
}

/// `struct ibv_packet_pacing_caps`: QP rate limit capabilities.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_packet_pacing_caps {
    pub qp_rate_limit_min: u32,
    /// In kbps.
    pub qp_rate_limit_max: u32,
    pub supported_qpts: u32,
}

/// `struct ibv_tm_caps`: tag matching capabilities.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_tm_caps {
    pub max_rndv_hdr_size: u32,
    pub max_num_tags: u32,
    /// `enum ibv_tm_cap_flags`.
    pub flags: u32,
    pub max_ops: u32,
    pub max_sge: u32,
}

/// `struct ibv_cq_moderation_caps`: CQ moderation limits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_cq_moderation_caps {
    pub max_cq_count: u16,
    /// In microseconds.
    pub max_cq_period: u16,
}

/// `struct ibv_pci_atomic_caps`: PCIe atomic operation sizes
/// (`enum ibv_pci_atomic_op_size` bits).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_pci_atomic_caps {
    pub fetch_add: u16,
    pub swap: u16,
    pub compare_swap: u16,
}

/// `struct ibv_device_attr_ex`: `ibv_query_device_ex`'s answer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_device_attr_ex {
    pub orig_attr: ibv_device_attr,
    pub comp_mask: u32,
    pub odp_caps: ibv_odp_caps,
    pub completion_timestamp_mask: u64,
    pub hca_core_clock: u64,
    pub device_cap_flags_ex: u64,
    pub tso_caps: ibv_tso_caps,
    pub rss_caps: ibv_rss_caps,
    pub max_wq_type_rq: u32,
    pub packet_pacing_caps: ibv_packet_pacing_caps,
    /// `enum ibv_raw_packet_caps`.
    pub raw_packet_caps: u32,
    pub tm_caps: ibv_tm_caps,
    pub cq_mod_caps: ibv_cq_moderation_caps,
    pub max_dm_size: u64,
    pub pci_atomic_caps: ibv_pci_atomic_caps,
    pub xrc_odp_caps: u32,
    pub phys_port_cnt_ex: u32,
}

/// `struct ibv_port_attr`: `ibv_query_port`'s answer (rdma-core 65's;
/// v44's ends before `active_speed_ex`, 4 bytes shorter).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_port_attr {
    pub state: ibv_port_state,
    pub max_mtu: ibv_mtu,
    pub active_mtu: ibv_mtu,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
    pub port_cap_flags2: u16,
    /// Since rdma-core v49.
    pub active_speed_ex: u32,
}

/// `struct ibv_async_event`: what `ibv_get_async_event` returns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_async_event {
    pub element: ibv_async_event_element,
    pub event_type: ibv_event_type,
}

/// `struct ibv_async_event`'s `element` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_async_event_element {
    pub cq: *mut ibv_cq,
    pub qp: *mut ibv_qp,
    pub srq: *mut ibv_srq,
    pub wq: *mut ibv_wq,
    pub port_num: c_int,
}

/// `struct ibv_wc`: a work completion (`ibv_poll_cq`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_wc {
    pub wr_id: u64,
    pub status: ibv_wc_status,
    pub opcode: ibv_wc_opcode,
    pub vendor_err: u32,
    pub byte_len: u32,
    /// C's anonymous union { `imm_data`, `invalidated_rkey` }.
    pub imm_data_invalidated_rkey: ibv_wc_imm,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: c_uint,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

/// `struct ibv_wc`'s anonymous union: the immediate data (network byte
/// order) with `IBV_WC_WITH_IMM`, the invalidated rkey with
/// `IBV_WC_WITH_INV`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_wc_imm {
    /// `__be32`.
    pub imm_data: u32,
    pub invalidated_rkey: u32,
}

/// `struct ibv_mw_bind_info`: what a memory window is bound to.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_mw_bind_info {
    pub mr: *mut ibv_mr,
    pub addr: u64,
    pub length: u64,
    /// `enum ibv_access_flags`.
    pub mw_access_flags: c_uint,
}

/// `struct ibv_dmah`: a DMA handle (since rdma-core v59).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_dmah {
    pub context: *mut ibv_context,
}

/// `struct ibv_buf`: a buffer from `ibv_alloc_buf` (opaque; since
/// rdma-core v64).
#[repr(C)]
pub struct ibv_buf {
    _opaque: [u8; 0],
}

/// `struct ibv_pd`: a protection domain.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_pd {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `struct ibv_td_init_attr`: `ibv_alloc_td`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_td_init_attr {
    pub comp_mask: u32,
}

/// `struct ibv_td`: a thread domain.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_td {
    pub context: *mut ibv_context,
}

/// `struct ibv_xrcd_init_attr`: `ibv_open_xrcd`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_xrcd_init_attr {
    pub comp_mask: u32,
    pub fd: c_int,
    pub oflags: c_int,
}

/// `struct ibv_xrcd`: an XRC domain.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_xrcd {
    pub context: *mut ibv_context,
}

/// `struct ibv_mr`: a memory region.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_mr {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub addr: *mut c_void,
    pub length: usize,
    pub handle: u32,
    pub lkey: u32,
    pub rkey: u32,
}

/// `struct ibv_mr_init_attr`: `ibv_reg_mr_ex`'s request (since rdma-core
/// v59).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_mr_init_attr {
    pub length: usize,
    pub access: c_int,
    /// `enum ibv_mr_init_attr_mask`.
    pub comp_mask: u64,
    pub iova: u64,
    pub addr: *mut c_void,
    pub fd: c_int,
    pub fd_offset: u64,
    pub dmah: *mut ibv_dmah,
    /// Since rdma-core v64.
    pub buf: *mut ibv_buf,
}

/// `struct ibv_mw`: a memory window.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_mw {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub rkey: u32,
    pub handle: u32,
    pub r#type: ibv_mw_type,
}

/// `struct ibv_global_route`: an address vector's GRH part.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_global_route {
    pub dgid: ibv_gid,
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
}

/// `struct ibv_grh`: a global route header, as received in a UD buffer.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_grh {
    /// `__be32`.
    pub version_tclass_flow: u32,
    /// `__be16`.
    pub paylen: u16,
    pub next_hdr: u8,
    pub hop_limit: u8,
    pub sgid: ibv_gid,
    pub dgid: ibv_gid,
}

/// `struct ibv_ah_attr`: an address vector.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_ah_attr {
    pub grh: ibv_global_route,
    pub dlid: u16,
    pub sl: u8,
    pub src_path_bits: u8,
    pub static_rate: u8,
    pub is_global: u8,
    pub port_num: u8,
}

/// `struct ibv_srq_attr`: an SRQ's size and limit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_srq_attr {
    pub max_wr: u32,
    pub max_sge: u32,
    pub srq_limit: u32,
}

/// `struct ibv_srq_init_attr`: `ibv_create_srq`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_srq_init_attr {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
}

/// `struct ibv_tm_cap`: a tag-matching SRQ's limits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_tm_cap {
    pub max_num_tags: u32,
    pub max_ops: u32,
}

/// `struct ibv_srq_init_attr_ex`: `ibv_create_srq_ex`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_srq_init_attr_ex {
    pub srq_context: *mut c_void,
    pub attr: ibv_srq_attr,
    /// `enum ibv_srq_init_attr_mask`.
    pub comp_mask: u32,
    pub srq_type: ibv_srq_type,
    pub pd: *mut ibv_pd,
    pub xrcd: *mut ibv_xrcd,
    pub cq: *mut ibv_cq,
    pub tm_cap: ibv_tm_cap,
}

/// `struct ibv_wq_init_attr`: `ibv_create_wq`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_wq_init_attr {
    pub wq_context: *mut c_void,
    pub wq_type: ibv_wq_type,
    pub max_wr: u32,
    pub max_sge: u32,
    pub pd: *mut ibv_pd,
    pub cq: *mut ibv_cq,
    /// `enum ibv_wq_init_attr_mask`.
    pub comp_mask: u32,
    /// `enum ibv_wq_flags`.
    pub create_flags: u32,
}

/// `struct ibv_wq_attr`: `ibv_modify_wq`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_wq_attr {
    /// `enum ibv_wq_attr_mask`.
    pub attr_mask: u32,
    pub wq_state: ibv_wq_state,
    pub curr_wq_state: ibv_wq_state,
    /// `enum ibv_wq_flags`.
    pub flags: u32,
    /// `enum ibv_wq_flags`.
    pub flags_mask: u32,
}

/// `struct ibv_rwq_ind_table`: a receive work queue indirection table.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_rwq_ind_table {
    pub context: *mut ibv_context,
    pub ind_tbl_handle: c_int,
    pub ind_tbl_num: c_int,
    pub comp_mask: u32,
}

/// `struct ibv_rwq_ind_table_init_attr`: `ibv_create_rwq_ind_table`'s
/// request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_rwq_ind_table_init_attr {
    pub log_ind_tbl_size: u32,
    pub ind_tbl: *mut *mut ibv_wq,
    pub comp_mask: u32,
}

/// `struct ibv_qp_cap`: a QP's queue sizes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_qp_cap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`: `ibv_create_qp`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_qp_init_attr {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: ibv_qp_type,
    pub sq_sig_all: c_int,
}

/// `struct ibv_rx_hash_conf`: an RSS QP's hash.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_rx_hash_conf {
    /// `enum ibv_rx_hash_function_flags`.
    pub rx_hash_function: u8,
    pub rx_hash_key_len: u8,
    pub rx_hash_key: *mut u8,
    /// `enum ibv_rx_hash_fields`.
    pub rx_hash_fields_mask: u64,
}

/// `struct ibv_qp_init_attr_ex`: `ibv_create_qp_ex`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_qp_init_attr_ex {
    pub qp_context: *mut c_void,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub cap: ibv_qp_cap,
    pub qp_type: ibv_qp_type,
    pub sq_sig_all: c_int,
    /// `enum ibv_qp_init_attr_mask`.
    pub comp_mask: u32,
    pub pd: *mut ibv_pd,
    pub xrcd: *mut ibv_xrcd,
    /// `enum ibv_qp_create_flags`.
    pub create_flags: u32,
    pub max_tso_header: u16,
    pub rwq_ind_tbl: *mut ibv_rwq_ind_table,
    pub rx_hash_conf: ibv_rx_hash_conf,
    pub source_qpn: u32,
    /// `enum ibv_qp_create_send_ops_flags`.
    pub send_ops_flags: u64,
}

/// `struct ibv_qp_open_attr`: `ibv_open_qp`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_qp_open_attr {
    /// `enum ibv_qp_open_attr_mask`.
    pub comp_mask: u32,
    pub qp_num: u32,
    pub xrcd: *mut ibv_xrcd,
    pub qp_context: *mut c_void,
    pub qp_type: ibv_qp_type,
}

/// `struct ibv_qp_attr`: `ibv_modify_qp`'s and `ibv_query_qp`'s attributes.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_qp_attr {
    pub qp_state: ibv_qp_state,
    pub cur_qp_state: ibv_qp_state,
    pub path_mtu: ibv_mtu,
    pub path_mig_state: ibv_mig_state,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    /// `enum ibv_access_flags`.
    pub qp_access_flags: c_uint,
    pub cap: ibv_qp_cap,
    pub ah_attr: ibv_ah_attr,
    pub alt_ah_attr: ibv_ah_attr,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub sq_draining: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    pub rate_limit: u32,
}

/// `struct ibv_qp_rate_limit_attr`: `ibv_modify_qp_rate_limit`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_qp_rate_limit_attr {
    /// In kbps.
    pub rate_limit: u32,
    /// Bytes.
    pub max_burst_sz: u32,
    /// Bytes.
    pub typical_pkt_sz: u16,
    pub comp_mask: u32,
}

/// `struct ibv_data_buf`: one piece of inline data (`wr_set_inline_data_list`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_data_buf {
    pub addr: *mut c_void,
    pub length: usize,
}

/// `struct ibv_sge`: a scatter/gather element.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ibv_sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// `struct ibv_fd_arr`: an array of file descriptors (since rdma-core v57).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_fd_arr {
    pub arr: *mut c_int,
    pub count: u32,
}

/// `struct ibv_send_wr`: a send work request (`ibv_post_send`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_send_wr {
    pub wr_id: u64,
    pub next: *mut ibv_send_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub opcode: ibv_wr_opcode,
    /// `enum ibv_send_flags`.
    pub send_flags: c_uint,
    /// C's anonymous union { `imm_data`, `invalidate_rkey` } (named as
    /// `ibv_wc`'s).
    pub imm_data_invalidated_rkey: ibv_send_wr_imm,
    pub wr: ibv_send_wr_wr,
    pub qp_type: ibv_send_wr_qp_type,
    /// C's anonymous union { `bind_mw`, `tso` }.
    pub bind_mw_tso: ibv_send_wr_bind_mw_tso,
}

/// `struct ibv_send_wr`'s first anonymous union: the immediate data
/// (network byte order) of a `*_WITH_IMM` opcode, the rkey to invalidate
/// of a `*_INV` one.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_imm {
    /// `__be32`.
    pub imm_data: u32,
    pub invalidate_rkey: u32,
}

/// `struct ibv_send_wr`'s `wr` (anonymous in C): the opcode's parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_wr {
    pub rdma: ibv_send_wr_rdma,
    pub atomic: ibv_send_wr_atomic,
    pub ud: ibv_send_wr_ud,
}

/// `struct ibv_send_wr`'s `wr.rdma` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_send_wr_rdma {
    pub remote_addr: u64,
    pub rkey: u32,
}

/// `struct ibv_send_wr`'s `wr.atomic` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_send_wr_atomic {
    pub remote_addr: u64,
    pub compare_add: u64,
    pub swap: u64,
    pub rkey: u32,
}

/// `struct ibv_send_wr`'s `wr.ud` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_send_wr_ud {
    pub ah: *mut ibv_ah,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

/// `struct ibv_send_wr`'s `qp_type` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_qp_type {
    pub xrc: ibv_send_wr_xrc,
}

/// `struct ibv_send_wr`'s `qp_type.xrc` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_send_wr_xrc {
    pub remote_srqn: u32,
}

/// `struct ibv_send_wr`'s last anonymous union: `IBV_WR_BIND_MW`'s or
/// `IBV_WR_TSO`'s parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub union ibv_send_wr_bind_mw_tso {
    pub bind_mw: ibv_send_wr_bind_mw,
    pub tso: ibv_send_wr_tso,
}

/// `struct ibv_send_wr`'s `bind_mw` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_send_wr_bind_mw {
    pub mw: *mut ibv_mw,
    pub rkey: u32,
    pub bind_info: ibv_mw_bind_info,
}

/// `struct ibv_send_wr`'s `tso` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_send_wr_tso {
    pub hdr: *mut c_void,
    pub hdr_sz: u16,
    pub mss: u16,
}

/// `struct ibv_recv_wr`: a receive work request (`ibv_post_recv`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_recv_wr {
    pub wr_id: u64,
    pub next: *mut ibv_recv_wr,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
}

/// `struct ibv_ops_wr`: a tag-matching SRQ operation (`ibv_post_srq_ops`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_ops_wr {
    pub wr_id: u64,
    pub next: *mut ibv_ops_wr,
    pub opcode: ibv_ops_wr_opcode,
    /// `enum ibv_ops_flags`.
    pub flags: c_int,
    pub tm: ibv_ops_wr_tm,
}

/// `struct ibv_ops_wr`'s `tm` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_ops_wr_tm {
    pub unexpected_cnt: u32,
    pub handle: u32,
    pub add: ibv_ops_wr_tm_add,
}

/// `struct ibv_ops_wr`'s `tm.add` (anonymous in C).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_ops_wr_tm_add {
    pub recv_wr_id: u64,
    pub sg_list: *mut ibv_sge,
    pub num_sge: c_int,
    pub tag: u64,
    pub mask: u64,
}

/// `struct ibv_mw_bind`: `ibv_bind_mw`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_mw_bind {
    pub wr_id: u64,
    /// `enum ibv_send_flags`.
    pub send_flags: c_uint,
    pub bind_info: ibv_mw_bind_info,
}

// The objects below embed a pthread mutex and condition variable that
// libibverbs' callers use in place (ibv_ack_cq_events, ibv_destroy_qp, ...):
// they are not Copy, since a copy of a live mutex is no mutex.

/// `struct ibv_srq`: a shared receive queue.
#[repr(C)]
pub struct ibv_srq {
    pub context: *mut ibv_context,
    pub srq_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub handle: u32,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
}

/// `struct ibv_wq`: a work queue.
#[repr(C)]
pub struct ibv_wq {
    pub context: *mut ibv_context,
    pub wq_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub cq: *mut ibv_cq,
    pub wq_num: u32,
    pub handle: u32,
    pub state: ibv_wq_state,
    pub wq_type: ibv_wq_type,
    pub post_recv: Option<
        unsafe extern "C" fn(
            current: *mut ibv_wq,
            recv_wr: *mut ibv_recv_wr,
            bad_recv_wr: *mut *mut ibv_recv_wr,
        ) -> c_int,
    >,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
    pub comp_mask: u32,
}

/// `struct ibv_qp`: a queue pair.
#[repr(C)]
pub struct ibv_qp {
    pub context: *mut ibv_context,
    pub qp_context: *mut c_void,
    pub pd: *mut ibv_pd,
    pub send_cq: *mut ibv_cq,
    pub recv_cq: *mut ibv_cq,
    pub srq: *mut ibv_srq,
    pub handle: u32,
    pub qp_num: u32,
    pub state: ibv_qp_state,
    pub qp_type: ibv_qp_type,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub events_completed: u32,
}

/// `struct ibv_qp_ex`: a QP with the work-request-builder interface
/// (`ibv_qp_to_qp_ex`, `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`); its `qp_base`
/// is the `struct ibv_qp`.
#[repr(C)]
pub struct ibv_qp_ex {
    pub qp_base: ibv_qp,
    pub comp_mask: u64,
    pub wr_id: u64,
    /// `enum ibv_send_flags`.
    pub wr_flags: c_uint,
    pub wr_atomic_cmp_swp: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp_ex,
            rkey: u32,
            remote_addr: u64,
            compare: u64,
            swap: u64,
        ),
    >,
    pub wr_atomic_fetch_add:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64, add: u64)>,
    pub wr_bind_mw: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp_ex,
            mw: *mut ibv_mw,
            rkey: u32,
            bind_info: *const ibv_mw_bind_info,
        ),
    >,
    pub wr_local_inv: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, invalidate_rkey: u32)>,
    pub wr_rdma_read: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64)>,
    pub wr_rdma_write:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64)>,
    /// `imm_data` is `__be32`.
    pub wr_rdma_write_imm: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp_ex, rkey: u32, remote_addr: u64, imm_data: u32),
    >,
    pub wr_send: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex)>,
    /// `imm_data` is `__be32`.
    pub wr_send_imm: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, imm_data: u32)>,
    pub wr_send_inv: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, invalidate_rkey: u32)>,
    pub wr_send_tso:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, hdr: *mut c_void, hdr_sz: u16, mss: u16)>,
    pub wr_set_ud_addr: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp_ex,
            ah: *mut ibv_ah,
            remote_qpn: u32,
            remote_qkey: u32,
        ),
    >,
    pub wr_set_xrc_srqn: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, remote_srqn: u32)>,
    pub wr_set_inline_data:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, addr: *mut c_void, length: usize)>,
    pub wr_set_inline_data_list: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp_ex, num_buf: usize, buf_list: *const ibv_data_buf),
    >,
    pub wr_set_sge:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, lkey: u32, addr: u64, length: u32)>,
    pub wr_set_sge_list:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex, num_sge: usize, sg_list: *const ibv_sge)>,
    pub wr_start: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex)>,
    pub wr_complete: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex) -> c_int>,
    pub wr_abort: Option<unsafe extern "C" fn(qp: *mut ibv_qp_ex)>,
    pub wr_atomic_write: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp_ex,
            rkey: u32,
            remote_addr: u64,
            atomic_wr: *const c_void,
        ),
    >,
    /// Since rdma-core v45.
    pub wr_flush: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp_ex,
            rkey: u32,
            remote_addr: u64,
            len: usize,
            r#type: u8,
            level: u8,
        ),
    >,
}

/// `struct ibv_ece`: enhanced connection establishment options.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_ece {
    pub vendor_id: u32,
    pub options: u32,
    pub comp_mask: u32,
}

/// `struct ibv_comp_channel`: a completion event channel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_comp_channel {
    pub context: *mut ibv_context,
    pub fd: c_int,
    pub refcnt: c_int,
}

/// `struct ibv_cq`: a completion queue.
#[repr(C)]
pub struct ibv_cq {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
}

/// `struct ibv_poll_cq_attr`: `ibv_start_poll`'s input.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_poll_cq_attr {
    pub comp_mask: u32,
}

/// `struct ibv_wc_tm_info`: a tag-matching completion's tag.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_wc_tm_info {
    pub tag: u64,
    pub r#priv: u32,
}

/// `struct ibv_cq_ex`: a CQ with the polling interface of
/// `ibv_create_cq_ex`; it begins as a `struct ibv_cq`.
#[repr(C)]
pub struct ibv_cq_ex {
    pub context: *mut ibv_context,
    pub channel: *mut ibv_comp_channel,
    pub cq_context: *mut c_void,
    pub handle: u32,
    pub cqe: c_int,
    pub mutex: pthread_mutex_t,
    pub cond: pthread_cond_t,
    pub comp_events_completed: u32,
    pub async_events_completed: u32,
    pub comp_mask: u32,
    pub status: ibv_wc_status,
    pub wr_id: u64,
    pub start_poll:
        Option<unsafe extern "C" fn(current: *mut ibv_cq_ex, attr: *mut ibv_poll_cq_attr) -> c_int>,
    pub next_poll: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> c_int>,
    pub end_poll: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex)>,
    pub read_opcode: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> ibv_wc_opcode>,
    pub read_vendor_err: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_byte_len: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    /// Returns `__be32`.
    pub read_imm_data: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_qp_num: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_src_qp: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_wc_flags: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> c_uint>,
    pub read_slid: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_sl: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u8>,
    pub read_dlid_path_bits: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u8>,
    pub read_completion_ts: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u64>,
    pub read_cvlan: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u16>,
    pub read_flow_tag: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u32>,
    pub read_tm_info:
        Option<unsafe extern "C" fn(current: *mut ibv_cq_ex, tm_info: *mut ibv_wc_tm_info)>,
    pub read_completion_wallclock_ns: Option<unsafe extern "C" fn(current: *mut ibv_cq_ex) -> u64>,
}

/// `struct ibv_moderate_cq`: CQ moderation.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_moderate_cq {
    pub cq_count: u16,
    /// In microseconds.
    pub cq_period: u16,
}

/// `struct ibv_modify_cq_attr`: `ibv_modify_cq`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_modify_cq_attr {
    /// `enum ibv_cq_attr_mask`.
    pub attr_mask: u32,
    pub moderate: ibv_moderate_cq,
}

/// `struct ibv_ah`: an address handle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_ah {
    pub context: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub handle: u32,
}

/// `struct ibv_flow_attr`: `ibv_create_flow`'s request, followed in memory
/// by `num_of_specs` flow specs (not mirrored here).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_flow_attr {
    pub comp_mask: u32,
    pub r#type: ibv_flow_attr_type,
    pub size: u16,
    pub priority: u16,
    pub num_of_specs: u8,
    pub port: u8,
    /// `enum ibv_flow_flags`.
    pub flags: u32,
}

/// `struct ibv_flow`: a steering rule.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_flow {
    pub comp_mask: u32,
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `struct ibv_flow_action`: a flow action.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_flow_action {
    pub context: *mut ibv_context,
}

/// `struct ibv_flow_action_esp` (`struct ib_uverbs_flow_action_esp`;
/// opaque here).
#[repr(C)]
pub struct ibv_flow_action_esp {
    _opaque: [u8; 0],
}

/// `struct ibv_flow_action_esp_encap` (`struct
/// ib_uverbs_flow_action_esp_encap`; opaque here).
#[repr(C)]
pub struct ibv_flow_action_esp_encap {
    _opaque: [u8; 0],
}

/// `struct ibv_flow_action_esp_attr`: an ESP flow action's request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_flow_action_esp_attr {
    pub esp_attr: *mut ibv_flow_action_esp,
    pub keymat_proto: ibv_flow_action_esp_keymat,
    pub keymat_len: u16,
    pub keymat_ptr: *mut c_void,
    pub replay_proto: ibv_flow_action_esp_replay,
    pub replay_len: u16,
    pub replay_ptr: *mut c_void,
    pub esp_encap: *mut ibv_flow_action_esp_encap,
    /// `enum ibv_flow_action_esp_mask`.
    pub comp_mask: u32,
    pub esn: u32,
}

/// `struct _ibv_device_ops`: obsolete, never used (two NULLs).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct _ibv_device_ops {
    pub _dummy1:
        Option<unsafe extern "C" fn(device: *mut ibv_device, cmd_fd: c_int) -> *mut ibv_context>,
    pub _dummy2: Option<unsafe extern "C" fn(context: *mut ibv_context)>,
}

/// `struct ibv_device`: an RDMA device (`ibv_get_device_list`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_device {
    pub _ops: _ibv_device_ops,
    pub node_type: ibv_node_type,
    pub transport_type: ibv_transport_type,
    /// The kernel's IB device name, e.g. "mthca0".
    pub name: [c_char; IBV_SYSFS_NAME_MAX as usize],
    /// The uverbs device's name, e.g. "uverbs0".
    pub dev_name: [c_char; IBV_SYSFS_NAME_MAX as usize],
    /// The infiniband_verbs class device's sysfs path.
    pub dev_path: [c_char; IBV_SYSFS_PATH_MAX as usize],
    /// The infiniband class device's sysfs path.
    pub ibdev_path: [c_char; IBV_SYSFS_PATH_MAX as usize],
}

/// `struct _compat_ibv_port_attr`: the port attributes the exported
/// `ibv_query_port` (IBVERBS_1.1) fills, [`ibv_port_attr`] before
/// `port_cap_flags2`. Opaque in verbs.h; this is libibverbs/verbs.c's
/// definition.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct _compat_ibv_port_attr {
    pub state: ibv_port_state,
    pub max_mtu: ibv_mtu,
    pub active_mtu: ibv_mtu,
    pub gid_tbl_len: c_int,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub max_vl_num: u8,
    pub sm_sl: u8,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub phys_state: u8,
    pub link_layer: u8,
    pub flags: u8,
}

/// How many bytes the exported `ibv_query_port` writes: the size of
/// [`_compat_ibv_port_attr`] (48), a prefix of [`ibv_port_attr`].
pub const COMPAT_PORT_ATTR_LEN: usize = size_of::<_compat_ibv_port_attr>();

/// `struct ibv_context_ops`: the ops in every `struct ibv_context`. The
/// inline `ibv_poll_cq`, `ibv_req_notify_cq`, `ibv_post_send`,
/// `ibv_post_recv`, `ibv_post_srq_recv`, `ibv_alloc_mw`, `ibv_dealloc_mw`
/// and `ibv_bind_mw` call through them; the `_compat_*` ones are unused
/// (libibverbs' own functions replaced them).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_context_ops {
    pub _compat_query_device: Option<
        unsafe extern "C" fn(context: *mut ibv_context, device_attr: *mut ibv_device_attr) -> c_int,
    >,
    pub _compat_query_port: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            port_num: u8,
            port_attr: *mut _compat_ibv_port_attr,
        ) -> c_int,
    >,
    pub _compat_alloc_pd: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_dealloc_pd: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_reg_mr: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_rereg_mr: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_dereg_mr: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub alloc_mw: Option<unsafe extern "C" fn(pd: *mut ibv_pd, r#type: ibv_mw_type) -> *mut ibv_mw>,
    pub bind_mw: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp, mw: *mut ibv_mw, mw_bind: *mut ibv_mw_bind) -> c_int,
    >,
    pub dealloc_mw: Option<unsafe extern "C" fn(mw: *mut ibv_mw) -> c_int>,
    pub _compat_create_cq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub poll_cq:
        Option<unsafe extern "C" fn(cq: *mut ibv_cq, num_entries: c_int, wc: *mut ibv_wc) -> c_int>,
    pub req_notify_cq:
        Option<unsafe extern "C" fn(cq: *mut ibv_cq, solicited_only: c_int) -> c_int>,
    pub _compat_cq_event: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_resize_cq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_destroy_cq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_create_srq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_modify_srq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_query_srq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_destroy_srq: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub post_srq_recv: Option<
        unsafe extern "C" fn(
            srq: *mut ibv_srq,
            recv_wr: *mut ibv_recv_wr,
            bad_recv_wr: *mut *mut ibv_recv_wr,
        ) -> c_int,
    >,
    pub _compat_create_qp: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_query_qp: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_modify_qp: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_destroy_qp: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub post_send: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp,
            wr: *mut ibv_send_wr,
            bad_wr: *mut *mut ibv_send_wr,
        ) -> c_int,
    >,
    pub post_recv: Option<
        unsafe extern "C" fn(
            qp: *mut ibv_qp,
            wr: *mut ibv_recv_wr,
            bad_wr: *mut *mut ibv_recv_wr,
        ) -> c_int,
    >,
    pub _compat_create_ah: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_destroy_ah: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_attach_mcast: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_detach_mcast: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub _compat_async_event: Option<unsafe extern "C" fn() -> *mut c_void>,
}

/// `struct ibv_context`: an open device (`ibv_open_device`). When
/// `abi_compat` is [`__VERBS_ABI_IS_EXTENDED`] it is the last member of a
/// [`verbs_context`].
#[repr(C)]
pub struct ibv_context {
    pub device: *mut ibv_device,
    pub ops: ibv_context_ops,
    pub cmd_fd: c_int,
    pub async_fd: c_int,
    pub num_comp_vectors: c_int,
    pub mutex: pthread_mutex_t,
    pub abi_compat: *mut c_void,
}

/// `struct ibv_cq_init_attr_ex`: `ibv_create_cq_ex`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_cq_init_attr_ex {
    pub cqe: u32,
    pub cq_context: *mut c_void,
    pub channel: *mut ibv_comp_channel,
    pub comp_vector: u32,
    /// `enum ibv_create_cq_wc_flags`.
    pub wc_flags: u64,
    /// `enum ibv_cq_init_attr_mask`.
    pub comp_mask: u32,
    /// `enum ibv_create_cq_attr_flags`.
    pub flags: u32,
    pub parent_domain: *mut ibv_pd,
}

/// `struct ibv_comp_cntr_caps`: completion counter capabilities (since
/// rdma-core v65).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_comp_cntr_caps {
    pub max_value: u64,
    pub max_counters: u32,
    /// `enum ibv_qp_attach_comp_cntr_op` bits.
    pub supported_qp_attach_ops: u32,
}

/// `struct ibv_comp_cntr`: a completion counter (since rdma-core v65).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_comp_cntr {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `struct ibv_comp_cntr_init_attr`: `ibv_create_comp_cntr`'s request
/// (since rdma-core v65).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_comp_cntr_init_attr {
    pub comp_mask: u32,
    pub r#type: ibv_comp_cntr_type,
    pub flags: u32,
}

/// `struct ibv_qp_attach_comp_cntr_attr`: `ibv_qp_attach_comp_cntr`'s
/// request (since rdma-core v65).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_qp_attach_comp_cntr_attr {
    pub comp_mask: u32,
    /// `enum ibv_qp_attach_comp_cntr_op` bits.
    pub op_mask: u32,
}

/// `IBV_ALLOCATOR_USE_DEFAULT`: what a parent domain's `alloc` returns to
/// have libibverbs allocate (`(void *)-1`).
pub const IBV_ALLOCATOR_USE_DEFAULT: *mut c_void = usize::MAX as *mut c_void;

/// `struct ibv_parent_domain_init_attr`: `ibv_alloc_parent_domain`'s
/// request.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_parent_domain_init_attr {
    pub pd: *mut ibv_pd,
    pub td: *mut ibv_td,
    /// `enum ibv_parent_domain_init_attr_mask`.
    pub comp_mask: u32,
    pub alloc: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            pd_context: *mut c_void,
            size: usize,
            alignment: usize,
            resource_type: u64,
        ) -> *mut c_void,
    >,
    pub free: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            pd_context: *mut c_void,
            ptr: *mut c_void,
            resource_type: u64,
        ),
    >,
    pub pd_context: *mut c_void,
}

/// `struct ibv_dmah_init_attr`: `ibv_alloc_dmah`'s request (since
/// rdma-core v59).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_dmah_init_attr {
    /// `enum ibv_dmah_init_attr_mask`.
    pub comp_mask: u32,
    pub cpu_id: u32,
    pub ph: u8,
    /// `enum ibv_tph_mem_type`.
    pub tph_mem_type: u8,
}

/// `struct ibv_counters_init_attr`: `ibv_create_counters`'s request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_counters_init_attr {
    pub comp_mask: u32,
}

/// `struct ibv_counters`: a counters object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_counters {
    pub context: *mut ibv_context,
}

/// `struct ibv_counter_attach_attr`: `ibv_attach_counters_point_flow`'s
/// request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ibv_counter_attach_attr {
    pub counter_desc: ibv_counter_description,
    pub index: u32,
    pub comp_mask: u32,
}

/// `struct ibv_values_ex`: `ibv_query_rt_values_ex`'s answer.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ibv_values_ex {
    /// `enum ibv_values_mask`.
    pub comp_mask: u32,
    pub raw_clock: timespec,
}

/// `struct verbs_ex_private`: libibverbs' private part of a context
/// (opaque in the public header).
#[repr(C)]
pub struct verbs_ex_private {
    _opaque: [u8; 0],
}

/// `struct verbs_context`: the extended context around a `struct
/// ibv_context`, which is its last member.
///
/// verbs.h reaches it from a context with `verbs_get_ctx`: when
/// `ctx->abi_compat == __VERBS_ABI_IS_EXTENDED`, `(char *)ctx -
/// offsetof(struct verbs_context, context)`; and `verbs_get_ctx_op(ctx,
/// op)` uses `op` only if `sz >= sizeof(struct verbs_context) -
/// offsetof(struct verbs_context, op)` and it is not NULL. So binaries
/// depend on each op's distance before `context`, not on its offset from
/// the start: rdma-core adds ops at the start ("grows up"), never moving an
/// old one relative to `context`, and `sz` says how far back this one
/// goes. Here it has rdma-core 65's ops; a library should set `sz` to
/// `size_of::<verbs_context>()`.
#[repr(C)]
pub struct verbs_context {
    /// Since rdma-core v64.
    pub free_buf: Option<unsafe extern "C" fn(buf: *mut ibv_buf)>,
    /// Since rdma-core v64.
    pub alloc_buf: Option<
        unsafe extern "C" fn(pd: *mut ibv_pd, size: usize, buf: *mut *mut ibv_buf) -> *mut c_void,
    >,
    /// Since rdma-core v62.
    pub dm_export_dmabuf_fd: Option<unsafe extern "C" fn(dm: *mut ibv_dm) -> c_int>,
    /// Since rdma-core v59.
    pub reg_mr_ex: Option<
        unsafe extern "C" fn(pd: *mut ibv_pd, mr_init_attr: *mut ibv_mr_init_attr) -> *mut ibv_mr,
    >,
    /// Since rdma-core v59.
    pub dealloc_dmah: Option<unsafe extern "C" fn(dmah: *mut ibv_dmah) -> c_int>,
    /// Since rdma-core v59.
    pub alloc_dmah: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            attr: *mut ibv_dmah_init_attr,
        ) -> *mut ibv_dmah,
    >,
    pub query_port: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            port_num: u8,
            port_attr: *mut ibv_port_attr,
            port_attr_len: usize,
        ) -> c_int,
    >,
    pub advise_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            advice: ibv_advise_mr_advice,
            flags: u32,
            sg_list: *mut ibv_sge,
            num_sges: u32,
        ) -> c_int,
    >,
    pub alloc_null_mr: Option<unsafe extern "C" fn(pd: *mut ibv_pd) -> *mut ibv_mr>,
    pub read_counters: Option<
        unsafe extern "C" fn(
            counters: *mut ibv_counters,
            counters_value: *mut u64,
            ncounters: u32,
            flags: u32,
        ) -> c_int,
    >,
    pub attach_counters_point_flow: Option<
        unsafe extern "C" fn(
            counters: *mut ibv_counters,
            attr: *mut ibv_counter_attach_attr,
            flow: *mut ibv_flow,
        ) -> c_int,
    >,
    pub create_counters: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            init_attr: *mut ibv_counters_init_attr,
        ) -> *mut ibv_counters,
    >,
    pub destroy_counters: Option<unsafe extern "C" fn(counters: *mut ibv_counters) -> c_int>,
    pub reg_dm_mr: Option<
        unsafe extern "C" fn(
            pd: *mut ibv_pd,
            dm: *mut ibv_dm,
            dm_offset: u64,
            length: usize,
            access: c_uint,
        ) -> *mut ibv_mr,
    >,
    pub alloc_dm: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            attr: *mut ibv_alloc_dm_attr,
        ) -> *mut ibv_dm,
    >,
    pub free_dm: Option<unsafe extern "C" fn(dm: *mut ibv_dm) -> c_int>,
    pub modify_flow_action_esp: Option<
        unsafe extern "C" fn(
            action: *mut ibv_flow_action,
            attr: *mut ibv_flow_action_esp_attr,
        ) -> c_int,
    >,
    pub destroy_flow_action: Option<unsafe extern "C" fn(action: *mut ibv_flow_action) -> c_int>,
    pub create_flow_action_esp: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            attr: *mut ibv_flow_action_esp_attr,
        ) -> *mut ibv_flow_action,
    >,
    pub modify_qp_rate_limit:
        Option<unsafe extern "C" fn(qp: *mut ibv_qp, attr: *mut ibv_qp_rate_limit_attr) -> c_int>,
    pub alloc_parent_domain: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            attr: *mut ibv_parent_domain_init_attr,
        ) -> *mut ibv_pd,
    >,
    pub dealloc_td: Option<unsafe extern "C" fn(td: *mut ibv_td) -> c_int>,
    pub alloc_td: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            init_attr: *mut ibv_td_init_attr,
        ) -> *mut ibv_td,
    >,
    pub modify_cq:
        Option<unsafe extern "C" fn(cq: *mut ibv_cq, attr: *mut ibv_modify_cq_attr) -> c_int>,
    pub post_srq_ops: Option<
        unsafe extern "C" fn(
            srq: *mut ibv_srq,
            op: *mut ibv_ops_wr,
            bad_op: *mut *mut ibv_ops_wr,
        ) -> c_int,
    >,
    pub destroy_rwq_ind_table:
        Option<unsafe extern "C" fn(rwq_ind_table: *mut ibv_rwq_ind_table) -> c_int>,
    pub create_rwq_ind_table: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            init_attr: *mut ibv_rwq_ind_table_init_attr,
        ) -> *mut ibv_rwq_ind_table,
    >,
    pub destroy_wq: Option<unsafe extern "C" fn(wq: *mut ibv_wq) -> c_int>,
    pub modify_wq:
        Option<unsafe extern "C" fn(wq: *mut ibv_wq, wq_attr: *mut ibv_wq_attr) -> c_int>,
    pub create_wq: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            wq_init_attr: *mut ibv_wq_init_attr,
        ) -> *mut ibv_wq,
    >,
    pub query_rt_values: Option<
        unsafe extern "C" fn(context: *mut ibv_context, values: *mut ibv_values_ex) -> c_int,
    >,
    pub create_cq_ex: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            init_attr: *mut ibv_cq_init_attr_ex,
        ) -> *mut ibv_cq_ex,
    >,
    pub r#priv: *mut verbs_ex_private,
    pub query_device_ex: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            input: *const ibv_query_device_ex_input,
            attr: *mut ibv_device_attr_ex,
            attr_size: usize,
        ) -> c_int,
    >,
    pub ibv_destroy_flow: Option<unsafe extern "C" fn(flow: *mut ibv_flow) -> c_int>,
    /// "DO NOT COPY THIS GARBAGE".
    pub ABI_placeholder2: Option<unsafe extern "C" fn()>,
    pub ibv_create_flow: Option<
        unsafe extern "C" fn(qp: *mut ibv_qp, flow_attr: *mut ibv_flow_attr) -> *mut ibv_flow,
    >,
    /// "DO NOT COPY THIS GARBAGE".
    pub ABI_placeholder1: Option<unsafe extern "C" fn()>,
    pub open_qp: Option<
        unsafe extern "C" fn(context: *mut ibv_context, attr: *mut ibv_qp_open_attr) -> *mut ibv_qp,
    >,
    pub create_qp_ex: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            qp_init_attr_ex: *mut ibv_qp_init_attr_ex,
        ) -> *mut ibv_qp,
    >,
    pub get_srq_num: Option<unsafe extern "C" fn(srq: *mut ibv_srq, srq_num: *mut u32) -> c_int>,
    pub create_srq_ex: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            srq_init_attr_ex: *mut ibv_srq_init_attr_ex,
        ) -> *mut ibv_srq,
    >,
    pub open_xrcd: Option<
        unsafe extern "C" fn(
            context: *mut ibv_context,
            xrcd_init_attr: *mut ibv_xrcd_init_attr,
        ) -> *mut ibv_xrcd,
    >,
    pub close_xrcd: Option<unsafe extern "C" fn(xrcd: *mut ibv_xrcd) -> c_int>,
    pub _ABI_placeholder3: u64,
    /// Must be immediately before `context`: this struct's size as the
    /// library built it (`size_of::<verbs_context>()`), so that a caller
    /// built against any header finds each op it knows within it (see
    /// above).
    pub sz: usize,
    /// Must be the last field.
    pub context: ibv_context,
}

// Type names verbs_api.h gives the kernel's (rdma/ib_user_ioctl_verbs.h)
// enums, and the constants it renames.

/// `enum ibv_advise_mr_advice` (`enum ib_uverbs_advise_mr_advice`).
pub type ibv_advise_mr_advice = u32;
/// `IBV_ADVISE_MR_ADVICE_PREFETCH`.
pub const IBV_ADVISE_MR_ADVICE_PREFETCH: ibv_advise_mr_advice = 0;
/// `IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE`.
pub const IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE: ibv_advise_mr_advice = 1;
/// `IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT`.
pub const IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT: ibv_advise_mr_advice = 2;
/// `IBV_ADVISE_MR_FLAG_FLUSH` (`enum ib_uverbs_advise_mr_flag`).
pub const IBV_ADVISE_MR_FLAG_FLUSH: u32 = 1 << 0;
/// `IBV_QPF_GRH_REQUIRED` (`enum ib_uverbs_query_port_flags`): `ibv_port_attr::flags`.
pub const IBV_QPF_GRH_REQUIRED: u32 = 1 << 0;
/// `IBV_ACCESS_OPTIONAL_FIRST`: the first access flag a kernel may ignore.
pub const IBV_ACCESS_OPTIONAL_FIRST: u32 = 1 << 20;
/// `IBV_ACCESS_OPTIONAL_RANGE`: the access flags a kernel may ignore
/// (bits 20 to 29).
pub const IBV_ACCESS_OPTIONAL_RANGE: u32 = 0x3ff0_0000;
/// `enum ibv_flow_action_esp_keymat` (`enum ib_uverbs_flow_action_esp_keymat`).
pub type ibv_flow_action_esp_keymat = u32;
/// `IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM`.
pub const IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM: ibv_flow_action_esp_keymat = 0;
/// `enum ibv_flow_action_esp_keymat_aes_gcm_iv_algo`.
pub type ibv_flow_action_esp_keymat_aes_gcm_iv_algo = u32;
/// `IBV_FLOW_ACTION_IV_ALGO_SEQ`.
pub const IBV_FLOW_ACTION_IV_ALGO_SEQ: ibv_flow_action_esp_keymat_aes_gcm_iv_algo = 0;
/// `enum ibv_flow_action_esp_replay` (`enum ib_uverbs_flow_action_esp_replay`).
pub type ibv_flow_action_esp_replay = u32;
/// `IBV_FLOW_ACTION_ESP_REPLAY_NONE`.
pub const IBV_FLOW_ACTION_ESP_REPLAY_NONE: ibv_flow_action_esp_replay = 0;
/// `IBV_FLOW_ACTION_ESP_REPLAY_BMP`.
pub const IBV_FLOW_ACTION_ESP_REPLAY_BMP: ibv_flow_action_esp_replay = 1;
/// `enum ibv_flow_action_esp_flags` (`enum ib_uverbs_flow_action_esp_flags`).
pub type ibv_flow_action_esp_flags = u32;
/// `IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO: ibv_flow_action_esp_flags = 0;
/// `IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD: ibv_flow_action_esp_flags = 1;
/// `IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL: ibv_flow_action_esp_flags = 0;
/// `IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT: ibv_flow_action_esp_flags = 1 << 1;
/// `IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT: ibv_flow_action_esp_flags = 0;
/// `IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT: ibv_flow_action_esp_flags = 1 << 2;
/// `IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW`.
pub const IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW: ibv_flow_action_esp_flags = 1 << 3;

// verbs.h's #defines.

/// `IBV_DEVICE_RAW_SCATTER_FCS`: a `device_cap_flags_ex` bit.
pub const IBV_DEVICE_RAW_SCATTER_FCS: u64 = 1 << 34;
/// `IBV_DEVICE_PCI_WRITE_END_PADDING`: a `device_cap_flags_ex` bit.
pub const IBV_DEVICE_PCI_WRITE_END_PADDING: u64 = 1 << 36;
/// `IBV_DEVICE_CC_DMA_BOUNCE`: a `device_cap_flags_ex` bit (since
/// rdma-core v64).
pub const IBV_DEVICE_CC_DMA_BOUNCE: u64 = 1 << 41;
/// `ETHERNET_LL_SIZE`: a MAC address's length (`ibv_resolve_eth_l2_from_gid`).
pub const ETHERNET_LL_SIZE: usize = 6;
/// `IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`: the lowest RoCE v2 UDP source port.
pub const IB_ROCE_UDP_ENCAP_VALID_PORT_MIN: u32 = 0xC000;
/// `IB_ROCE_UDP_ENCAP_VALID_PORT_MAX`: the highest RoCE v2 UDP source port.
pub const IB_ROCE_UDP_ENCAP_VALID_PORT_MAX: u32 = 0xFFFF;
/// `IB_GRH_FLOWLABEL_MASK`: a GRH flow label's bits.
pub const IB_GRH_FLOWLABEL_MASK: u32 = 0x000F_FFFF;

// verbs.h's enums: each a type (when named) and its members.

/// `enum ibv_gid_type` (`unsigned int` in C).
pub type ibv_gid_type = u32;
/// `IBV_GID_TYPE_IB`, of `enum ibv_gid_type`.
pub const IBV_GID_TYPE_IB: ibv_gid_type = 0;
/// `IBV_GID_TYPE_ROCE_V1`, of `enum ibv_gid_type`.
pub const IBV_GID_TYPE_ROCE_V1: ibv_gid_type = 1;
/// `IBV_GID_TYPE_ROCE_V2`, of `enum ibv_gid_type`.
pub const IBV_GID_TYPE_ROCE_V2: ibv_gid_type = 2;

/// `enum ibv_node_type` (`int` in C).
pub type ibv_node_type = i32;
/// `IBV_NODE_UNKNOWN`, of `enum ibv_node_type`.
pub const IBV_NODE_UNKNOWN: ibv_node_type = -1;
/// `IBV_NODE_CA`, of `enum ibv_node_type`.
pub const IBV_NODE_CA: ibv_node_type = 1;
/// `IBV_NODE_SWITCH`, of `enum ibv_node_type`.
pub const IBV_NODE_SWITCH: ibv_node_type = 2;
/// `IBV_NODE_ROUTER`, of `enum ibv_node_type`.
pub const IBV_NODE_ROUTER: ibv_node_type = 3;
/// `IBV_NODE_RNIC`, of `enum ibv_node_type`.
pub const IBV_NODE_RNIC: ibv_node_type = 4;
/// `IBV_NODE_USNIC`, of `enum ibv_node_type`.
pub const IBV_NODE_USNIC: ibv_node_type = 5;
/// `IBV_NODE_USNIC_UDP`, of `enum ibv_node_type`.
pub const IBV_NODE_USNIC_UDP: ibv_node_type = 6;
/// `IBV_NODE_UNSPECIFIED`, of `enum ibv_node_type`.
pub const IBV_NODE_UNSPECIFIED: ibv_node_type = 7;

/// `enum ibv_transport_type` (`int` in C).
pub type ibv_transport_type = i32;
/// `IBV_TRANSPORT_UNKNOWN`, of `enum ibv_transport_type`.
pub const IBV_TRANSPORT_UNKNOWN: ibv_transport_type = -1;
/// `IBV_TRANSPORT_IB`, of `enum ibv_transport_type`.
pub const IBV_TRANSPORT_IB: ibv_transport_type = 0;
/// `IBV_TRANSPORT_IWARP`, of `enum ibv_transport_type`.
pub const IBV_TRANSPORT_IWARP: ibv_transport_type = 1;
/// `IBV_TRANSPORT_USNIC`, of `enum ibv_transport_type`.
pub const IBV_TRANSPORT_USNIC: ibv_transport_type = 2;
/// `IBV_TRANSPORT_USNIC_UDP`, of `enum ibv_transport_type`.
pub const IBV_TRANSPORT_USNIC_UDP: ibv_transport_type = 3;
/// `IBV_TRANSPORT_UNSPECIFIED`, of `enum ibv_transport_type`.
pub const IBV_TRANSPORT_UNSPECIFIED: ibv_transport_type = 4;

/// `enum ibv_device_cap_flags` (`unsigned int` in C).
pub type ibv_device_cap_flags = u32;
/// `IBV_DEVICE_RESIZE_MAX_WR`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_RESIZE_MAX_WR: ibv_device_cap_flags = 1;
/// `IBV_DEVICE_BAD_PKEY_CNTR`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_BAD_PKEY_CNTR: ibv_device_cap_flags = 1 << 1;
/// `IBV_DEVICE_BAD_QKEY_CNTR`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_BAD_QKEY_CNTR: ibv_device_cap_flags = 1 << 2;
/// `IBV_DEVICE_RAW_MULTI`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_RAW_MULTI: ibv_device_cap_flags = 1 << 3;
/// `IBV_DEVICE_AUTO_PATH_MIG`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_AUTO_PATH_MIG: ibv_device_cap_flags = 1 << 4;
/// `IBV_DEVICE_CHANGE_PHY_PORT`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_CHANGE_PHY_PORT: ibv_device_cap_flags = 1 << 5;
/// `IBV_DEVICE_UD_AV_PORT_ENFORCE`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_UD_AV_PORT_ENFORCE: ibv_device_cap_flags = 1 << 6;
/// `IBV_DEVICE_CURR_QP_STATE_MOD`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_CURR_QP_STATE_MOD: ibv_device_cap_flags = 1 << 7;
/// `IBV_DEVICE_SHUTDOWN_PORT`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_SHUTDOWN_PORT: ibv_device_cap_flags = 1 << 8;
/// `IBV_DEVICE_INIT_TYPE`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_INIT_TYPE: ibv_device_cap_flags = 1 << 9;
/// `IBV_DEVICE_PORT_ACTIVE_EVENT`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_PORT_ACTIVE_EVENT: ibv_device_cap_flags = 1 << 10;
/// `IBV_DEVICE_SYS_IMAGE_GUID`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_SYS_IMAGE_GUID: ibv_device_cap_flags = 1 << 11;
/// `IBV_DEVICE_RC_RNR_NAK_GEN`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_RC_RNR_NAK_GEN: ibv_device_cap_flags = 1 << 12;
/// `IBV_DEVICE_SRQ_RESIZE`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_SRQ_RESIZE: ibv_device_cap_flags = 1 << 13;
/// `IBV_DEVICE_N_NOTIFY_CQ`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_N_NOTIFY_CQ: ibv_device_cap_flags = 1 << 14;
/// `IBV_DEVICE_MEM_WINDOW`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_MEM_WINDOW: ibv_device_cap_flags = 1 << 17;
/// `IBV_DEVICE_UD_IP_CSUM`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_UD_IP_CSUM: ibv_device_cap_flags = 1 << 18;
/// `IBV_DEVICE_XRC`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_XRC: ibv_device_cap_flags = 1 << 20;
/// `IBV_DEVICE_MEM_MGT_EXTENSIONS`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_MEM_MGT_EXTENSIONS: ibv_device_cap_flags = 1 << 21;
/// `IBV_DEVICE_MEM_WINDOW_TYPE_2A`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_MEM_WINDOW_TYPE_2A: ibv_device_cap_flags = 1 << 23;
/// `IBV_DEVICE_MEM_WINDOW_TYPE_2B`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_MEM_WINDOW_TYPE_2B: ibv_device_cap_flags = 1 << 24;
/// `IBV_DEVICE_RC_IP_CSUM`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_RC_IP_CSUM: ibv_device_cap_flags = 1 << 25;
/// `IBV_DEVICE_RAW_IP_CSUM`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_RAW_IP_CSUM: ibv_device_cap_flags = 1 << 26;
/// `IBV_DEVICE_MANAGED_FLOW_STEERING`, of `enum ibv_device_cap_flags`.
pub const IBV_DEVICE_MANAGED_FLOW_STEERING: ibv_device_cap_flags = 1 << 29;

/// `enum ibv_fork_status` (`unsigned int` in C).
pub type ibv_fork_status = u32;
/// `IBV_FORK_DISABLED`, of `enum ibv_fork_status`.
pub const IBV_FORK_DISABLED: ibv_fork_status = 0;
/// `IBV_FORK_ENABLED`, of `enum ibv_fork_status`.
pub const IBV_FORK_ENABLED: ibv_fork_status = 1;
/// `IBV_FORK_UNNEEDED`, of `enum ibv_fork_status`.
pub const IBV_FORK_UNNEEDED: ibv_fork_status = 2;

/// `enum ibv_atomic_cap` (`unsigned int` in C).
pub type ibv_atomic_cap = u32;
/// `IBV_ATOMIC_NONE`, of `enum ibv_atomic_cap`.
pub const IBV_ATOMIC_NONE: ibv_atomic_cap = 0;
/// `IBV_ATOMIC_HCA`, of `enum ibv_atomic_cap`.
pub const IBV_ATOMIC_HCA: ibv_atomic_cap = 1;
/// `IBV_ATOMIC_GLOB`, of `enum ibv_atomic_cap`.
pub const IBV_ATOMIC_GLOB: ibv_atomic_cap = 2;

/// `enum ibv_dm_mask` (`unsigned int` in C).
pub type ibv_dm_mask = u32;
/// `IBV_DM_MASK_HANDLE`, of `enum ibv_dm_mask`.
pub const IBV_DM_MASK_HANDLE: ibv_dm_mask = 1 << 0;

/// `enum ibv_odp_general_caps` (`unsigned int` in C).
pub type ibv_odp_general_caps = u32;
/// `IBV_ODP_SUPPORT`, of `enum ibv_odp_general_caps`.
pub const IBV_ODP_SUPPORT: ibv_odp_general_caps = 1 << 0;
/// `IBV_ODP_SUPPORT_IMPLICIT`, of `enum ibv_odp_general_caps`.
pub const IBV_ODP_SUPPORT_IMPLICIT: ibv_odp_general_caps = 1 << 1;

/// `enum ibv_odp_transport_cap_bits` (`unsigned int` in C).
pub type ibv_odp_transport_cap_bits = u32;
/// `IBV_ODP_SUPPORT_SEND`, of `enum ibv_odp_transport_cap_bits`.
pub const IBV_ODP_SUPPORT_SEND: ibv_odp_transport_cap_bits = 1 << 0;
/// `IBV_ODP_SUPPORT_RECV`, of `enum ibv_odp_transport_cap_bits`.
pub const IBV_ODP_SUPPORT_RECV: ibv_odp_transport_cap_bits = 1 << 1;
/// `IBV_ODP_SUPPORT_WRITE`, of `enum ibv_odp_transport_cap_bits`.
pub const IBV_ODP_SUPPORT_WRITE: ibv_odp_transport_cap_bits = 1 << 2;
/// `IBV_ODP_SUPPORT_READ`, of `enum ibv_odp_transport_cap_bits`.
pub const IBV_ODP_SUPPORT_READ: ibv_odp_transport_cap_bits = 1 << 3;
/// `IBV_ODP_SUPPORT_ATOMIC`, of `enum ibv_odp_transport_cap_bits`.
pub const IBV_ODP_SUPPORT_ATOMIC: ibv_odp_transport_cap_bits = 1 << 4;
/// `IBV_ODP_SUPPORT_SRQ_RECV`, of `enum ibv_odp_transport_cap_bits`.
pub const IBV_ODP_SUPPORT_SRQ_RECV: ibv_odp_transport_cap_bits = 1 << 5;
/// `IBV_ODP_SUPPORT_FLUSH`, of `enum ibv_odp_transport_cap_bits` (rdma-core v58.0).
pub const IBV_ODP_SUPPORT_FLUSH: ibv_odp_transport_cap_bits = 1 << 6;
/// `IBV_ODP_SUPPORT_ATOMIC_WRITE`, of `enum ibv_odp_transport_cap_bits` (rdma-core v58.0).
pub const IBV_ODP_SUPPORT_ATOMIC_WRITE: ibv_odp_transport_cap_bits = 1 << 7;

/// `enum ibv_rx_hash_function_flags` (`unsigned int` in C).
pub type ibv_rx_hash_function_flags = u32;
/// `IBV_RX_HASH_FUNC_TOEPLITZ`, of `enum ibv_rx_hash_function_flags`.
pub const IBV_RX_HASH_FUNC_TOEPLITZ: ibv_rx_hash_function_flags = 1 << 0;

/// `enum ibv_rx_hash_fields` (`unsigned int` in C).
pub type ibv_rx_hash_fields = u32;
/// `IBV_RX_HASH_SRC_IPV4`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_SRC_IPV4: ibv_rx_hash_fields = 1 << 0;
/// `IBV_RX_HASH_DST_IPV4`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_DST_IPV4: ibv_rx_hash_fields = 1 << 1;
/// `IBV_RX_HASH_SRC_IPV6`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_SRC_IPV6: ibv_rx_hash_fields = 1 << 2;
/// `IBV_RX_HASH_DST_IPV6`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_DST_IPV6: ibv_rx_hash_fields = 1 << 3;
/// `IBV_RX_HASH_SRC_PORT_TCP`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_SRC_PORT_TCP: ibv_rx_hash_fields = 1 << 4;
/// `IBV_RX_HASH_DST_PORT_TCP`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_DST_PORT_TCP: ibv_rx_hash_fields = 1 << 5;
/// `IBV_RX_HASH_SRC_PORT_UDP`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_SRC_PORT_UDP: ibv_rx_hash_fields = 1 << 6;
/// `IBV_RX_HASH_DST_PORT_UDP`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_DST_PORT_UDP: ibv_rx_hash_fields = 1 << 7;
/// `IBV_RX_HASH_IPSEC_SPI`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_IPSEC_SPI: ibv_rx_hash_fields = 1 << 8;
/// `IBV_RX_HASH_INNER`, of `enum ibv_rx_hash_fields`.
pub const IBV_RX_HASH_INNER: ibv_rx_hash_fields = 1 << 31;

/// `enum ibv_raw_packet_caps` (`unsigned int` in C).
pub type ibv_raw_packet_caps = u32;
/// `IBV_RAW_PACKET_CAP_CVLAN_STRIPPING`, of `enum ibv_raw_packet_caps`.
pub const IBV_RAW_PACKET_CAP_CVLAN_STRIPPING: ibv_raw_packet_caps = 1 << 0;
/// `IBV_RAW_PACKET_CAP_SCATTER_FCS`, of `enum ibv_raw_packet_caps`.
pub const IBV_RAW_PACKET_CAP_SCATTER_FCS: ibv_raw_packet_caps = 1 << 1;
/// `IBV_RAW_PACKET_CAP_IP_CSUM`, of `enum ibv_raw_packet_caps`.
pub const IBV_RAW_PACKET_CAP_IP_CSUM: ibv_raw_packet_caps = 1 << 2;
/// `IBV_RAW_PACKET_CAP_DELAY_DROP`, of `enum ibv_raw_packet_caps`.
pub const IBV_RAW_PACKET_CAP_DELAY_DROP: ibv_raw_packet_caps = 1 << 3;

/// `enum ibv_tm_cap_flags` (`unsigned int` in C).
pub type ibv_tm_cap_flags = u32;
/// `IBV_TM_CAP_RC`, of `enum ibv_tm_cap_flags`.
pub const IBV_TM_CAP_RC: ibv_tm_cap_flags = 1 << 0;

/// `enum ibv_pci_atomic_op_size` (`unsigned int` in C).
pub type ibv_pci_atomic_op_size = u32;
/// `IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP`, of `enum ibv_pci_atomic_op_size`.
pub const IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP: ibv_pci_atomic_op_size = 1 << 0;
/// `IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP`, of `enum ibv_pci_atomic_op_size`.
pub const IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP: ibv_pci_atomic_op_size = 1 << 1;
/// `IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP`, of `enum ibv_pci_atomic_op_size`.
pub const IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP: ibv_pci_atomic_op_size = 1 << 2;

/// `enum ibv_mtu` (`unsigned int` in C).
pub type ibv_mtu = u32;
/// `IBV_MTU_256`, of `enum ibv_mtu`.
pub const IBV_MTU_256: ibv_mtu = 1;
/// `IBV_MTU_512`, of `enum ibv_mtu`.
pub const IBV_MTU_512: ibv_mtu = 2;
/// `IBV_MTU_1024`, of `enum ibv_mtu`.
pub const IBV_MTU_1024: ibv_mtu = 3;
/// `IBV_MTU_2048`, of `enum ibv_mtu`.
pub const IBV_MTU_2048: ibv_mtu = 4;
/// `IBV_MTU_4096`, of `enum ibv_mtu`.
pub const IBV_MTU_4096: ibv_mtu = 5;

/// `enum ibv_port_state` (`unsigned int` in C).
pub type ibv_port_state = u32;
/// `IBV_PORT_NOP`, of `enum ibv_port_state`.
pub const IBV_PORT_NOP: ibv_port_state = 0;
/// `IBV_PORT_DOWN`, of `enum ibv_port_state`.
pub const IBV_PORT_DOWN: ibv_port_state = 1;
/// `IBV_PORT_INIT`, of `enum ibv_port_state`.
pub const IBV_PORT_INIT: ibv_port_state = 2;
/// `IBV_PORT_ARMED`, of `enum ibv_port_state`.
pub const IBV_PORT_ARMED: ibv_port_state = 3;
/// `IBV_PORT_ACTIVE`, of `enum ibv_port_state`.
pub const IBV_PORT_ACTIVE: ibv_port_state = 4;
/// `IBV_PORT_ACTIVE_DEFER`, of `enum ibv_port_state`.
pub const IBV_PORT_ACTIVE_DEFER: ibv_port_state = 5;

/// `IBV_LINK_LAYER_UNSPECIFIED`, of an anonymous enum.
pub const IBV_LINK_LAYER_UNSPECIFIED: u32 = 0;
/// `IBV_LINK_LAYER_INFINIBAND`, of an anonymous enum.
pub const IBV_LINK_LAYER_INFINIBAND: u32 = 1;
/// `IBV_LINK_LAYER_ETHERNET`, of an anonymous enum.
pub const IBV_LINK_LAYER_ETHERNET: u32 = 2;

/// `enum ibv_port_cap_flags` (`unsigned int` in C).
pub type ibv_port_cap_flags = u32;
/// `IBV_PORT_SM`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_SM: ibv_port_cap_flags = 1 << 1;
/// `IBV_PORT_NOTICE_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_NOTICE_SUP: ibv_port_cap_flags = 1 << 2;
/// `IBV_PORT_TRAP_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_TRAP_SUP: ibv_port_cap_flags = 1 << 3;
/// `IBV_PORT_OPT_IPD_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_OPT_IPD_SUP: ibv_port_cap_flags = 1 << 4;
/// `IBV_PORT_AUTO_MIGR_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_AUTO_MIGR_SUP: ibv_port_cap_flags = 1 << 5;
/// `IBV_PORT_SL_MAP_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_SL_MAP_SUP: ibv_port_cap_flags = 1 << 6;
/// `IBV_PORT_MKEY_NVRAM`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_MKEY_NVRAM: ibv_port_cap_flags = 1 << 7;
/// `IBV_PORT_PKEY_NVRAM`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_PKEY_NVRAM: ibv_port_cap_flags = 1 << 8;
/// `IBV_PORT_LED_INFO_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_LED_INFO_SUP: ibv_port_cap_flags = 1 << 9;
/// `IBV_PORT_SYS_IMAGE_GUID_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_SYS_IMAGE_GUID_SUP: ibv_port_cap_flags = 1 << 11;
/// `IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP: ibv_port_cap_flags = 1 << 12;
/// `IBV_PORT_EXTENDED_SPEEDS_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_EXTENDED_SPEEDS_SUP: ibv_port_cap_flags = 1 << 14;
/// `IBV_PORT_CAP_MASK2_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_CAP_MASK2_SUP: ibv_port_cap_flags = 1 << 15;
/// `IBV_PORT_CM_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_CM_SUP: ibv_port_cap_flags = 1 << 16;
/// `IBV_PORT_SNMP_TUNNEL_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_SNMP_TUNNEL_SUP: ibv_port_cap_flags = 1 << 17;
/// `IBV_PORT_REINIT_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_REINIT_SUP: ibv_port_cap_flags = 1 << 18;
/// `IBV_PORT_DEVICE_MGMT_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_DEVICE_MGMT_SUP: ibv_port_cap_flags = 1 << 19;
/// `IBV_PORT_VENDOR_CLASS_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_VENDOR_CLASS_SUP: ibv_port_cap_flags = 1 << 20;
/// `IBV_PORT_DR_NOTICE_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_DR_NOTICE_SUP: ibv_port_cap_flags = 1 << 21;
/// `IBV_PORT_CAP_MASK_NOTICE_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_CAP_MASK_NOTICE_SUP: ibv_port_cap_flags = 1 << 22;
/// `IBV_PORT_BOOT_MGMT_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_BOOT_MGMT_SUP: ibv_port_cap_flags = 1 << 23;
/// `IBV_PORT_LINK_LATENCY_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_LINK_LATENCY_SUP: ibv_port_cap_flags = 1 << 24;
/// `IBV_PORT_CLIENT_REG_SUP`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_CLIENT_REG_SUP: ibv_port_cap_flags = 1 << 25;
/// `IBV_PORT_IP_BASED_GIDS`, of `enum ibv_port_cap_flags`.
pub const IBV_PORT_IP_BASED_GIDS: ibv_port_cap_flags = 1 << 26;

/// `enum ibv_port_cap_flags2` (`unsigned int` in C).
pub type ibv_port_cap_flags2 = u32;
/// `IBV_PORT_SET_NODE_DESC_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_SET_NODE_DESC_SUP: ibv_port_cap_flags2 = 1 << 0;
/// `IBV_PORT_INFO_EXT_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_INFO_EXT_SUP: ibv_port_cap_flags2 = 1 << 1;
/// `IBV_PORT_VIRT_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_VIRT_SUP: ibv_port_cap_flags2 = 1 << 2;
/// `IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP: ibv_port_cap_flags2 = 1 << 3;
/// `IBV_PORT_LINK_WIDTH_2X_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_LINK_WIDTH_2X_SUP: ibv_port_cap_flags2 = 1 << 4;
/// `IBV_PORT_LINK_SPEED_HDR_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_LINK_SPEED_HDR_SUP: ibv_port_cap_flags2 = 1 << 5;
/// `IBV_PORT_LINK_SPEED_NDR_SUP`, of `enum ibv_port_cap_flags2`.
pub const IBV_PORT_LINK_SPEED_NDR_SUP: ibv_port_cap_flags2 = 1 << 10;
/// `IBV_PORT_LINK_SPEED_XDR_SUP`, of `enum ibv_port_cap_flags2` (rdma-core v49.0).
pub const IBV_PORT_LINK_SPEED_XDR_SUP: ibv_port_cap_flags2 = 1 << 12;

/// `enum ibv_event_type` (`unsigned int` in C).
pub type ibv_event_type = u32;
/// `IBV_EVENT_CQ_ERR`, of `enum ibv_event_type`.
pub const IBV_EVENT_CQ_ERR: ibv_event_type = 0;
/// `IBV_EVENT_QP_FATAL`, of `enum ibv_event_type`.
pub const IBV_EVENT_QP_FATAL: ibv_event_type = 1;
/// `IBV_EVENT_QP_REQ_ERR`, of `enum ibv_event_type`.
pub const IBV_EVENT_QP_REQ_ERR: ibv_event_type = 2;
/// `IBV_EVENT_QP_ACCESS_ERR`, of `enum ibv_event_type`.
pub const IBV_EVENT_QP_ACCESS_ERR: ibv_event_type = 3;
/// `IBV_EVENT_COMM_EST`, of `enum ibv_event_type`.
pub const IBV_EVENT_COMM_EST: ibv_event_type = 4;
/// `IBV_EVENT_SQ_DRAINED`, of `enum ibv_event_type`.
pub const IBV_EVENT_SQ_DRAINED: ibv_event_type = 5;
/// `IBV_EVENT_PATH_MIG`, of `enum ibv_event_type`.
pub const IBV_EVENT_PATH_MIG: ibv_event_type = 6;
/// `IBV_EVENT_PATH_MIG_ERR`, of `enum ibv_event_type`.
pub const IBV_EVENT_PATH_MIG_ERR: ibv_event_type = 7;
/// `IBV_EVENT_DEVICE_FATAL`, of `enum ibv_event_type`.
pub const IBV_EVENT_DEVICE_FATAL: ibv_event_type = 8;
/// `IBV_EVENT_PORT_ACTIVE`, of `enum ibv_event_type`.
pub const IBV_EVENT_PORT_ACTIVE: ibv_event_type = 9;
/// `IBV_EVENT_PORT_ERR`, of `enum ibv_event_type`.
pub const IBV_EVENT_PORT_ERR: ibv_event_type = 10;
/// `IBV_EVENT_LID_CHANGE`, of `enum ibv_event_type`.
pub const IBV_EVENT_LID_CHANGE: ibv_event_type = 11;
/// `IBV_EVENT_PKEY_CHANGE`, of `enum ibv_event_type`.
pub const IBV_EVENT_PKEY_CHANGE: ibv_event_type = 12;
/// `IBV_EVENT_SM_CHANGE`, of `enum ibv_event_type`.
pub const IBV_EVENT_SM_CHANGE: ibv_event_type = 13;
/// `IBV_EVENT_SRQ_ERR`, of `enum ibv_event_type`.
pub const IBV_EVENT_SRQ_ERR: ibv_event_type = 14;
/// `IBV_EVENT_SRQ_LIMIT_REACHED`, of `enum ibv_event_type`.
pub const IBV_EVENT_SRQ_LIMIT_REACHED: ibv_event_type = 15;
/// `IBV_EVENT_QP_LAST_WQE_REACHED`, of `enum ibv_event_type`.
pub const IBV_EVENT_QP_LAST_WQE_REACHED: ibv_event_type = 16;
/// `IBV_EVENT_CLIENT_REREGISTER`, of `enum ibv_event_type`.
pub const IBV_EVENT_CLIENT_REREGISTER: ibv_event_type = 17;
/// `IBV_EVENT_GID_CHANGE`, of `enum ibv_event_type`.
pub const IBV_EVENT_GID_CHANGE: ibv_event_type = 18;
/// `IBV_EVENT_WQ_FATAL`, of `enum ibv_event_type`.
pub const IBV_EVENT_WQ_FATAL: ibv_event_type = 19;
/// `IBV_EVENT_DEVICE_SPEED_CHANGE`, of `enum ibv_event_type` (rdma-core v62.0).
pub const IBV_EVENT_DEVICE_SPEED_CHANGE: ibv_event_type = 20;

/// `enum ibv_wc_status` (`unsigned int` in C).
pub type ibv_wc_status = u32;
/// `IBV_WC_SUCCESS`, of `enum ibv_wc_status`.
pub const IBV_WC_SUCCESS: ibv_wc_status = 0;
/// `IBV_WC_LOC_LEN_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_LOC_LEN_ERR: ibv_wc_status = 1;
/// `IBV_WC_LOC_QP_OP_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_LOC_QP_OP_ERR: ibv_wc_status = 2;
/// `IBV_WC_LOC_EEC_OP_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_LOC_EEC_OP_ERR: ibv_wc_status = 3;
/// `IBV_WC_LOC_PROT_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_LOC_PROT_ERR: ibv_wc_status = 4;
/// `IBV_WC_WR_FLUSH_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_WR_FLUSH_ERR: ibv_wc_status = 5;
/// `IBV_WC_MW_BIND_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_MW_BIND_ERR: ibv_wc_status = 6;
/// `IBV_WC_BAD_RESP_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_BAD_RESP_ERR: ibv_wc_status = 7;
/// `IBV_WC_LOC_ACCESS_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_LOC_ACCESS_ERR: ibv_wc_status = 8;
/// `IBV_WC_REM_INV_REQ_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_REM_INV_REQ_ERR: ibv_wc_status = 9;
/// `IBV_WC_REM_ACCESS_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_REM_ACCESS_ERR: ibv_wc_status = 10;
/// `IBV_WC_REM_OP_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_REM_OP_ERR: ibv_wc_status = 11;
/// `IBV_WC_RETRY_EXC_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_RETRY_EXC_ERR: ibv_wc_status = 12;
/// `IBV_WC_RNR_RETRY_EXC_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_RNR_RETRY_EXC_ERR: ibv_wc_status = 13;
/// `IBV_WC_LOC_RDD_VIOL_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_LOC_RDD_VIOL_ERR: ibv_wc_status = 14;
/// `IBV_WC_REM_INV_RD_REQ_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_REM_INV_RD_REQ_ERR: ibv_wc_status = 15;
/// `IBV_WC_REM_ABORT_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_REM_ABORT_ERR: ibv_wc_status = 16;
/// `IBV_WC_INV_EECN_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_INV_EECN_ERR: ibv_wc_status = 17;
/// `IBV_WC_INV_EEC_STATE_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_INV_EEC_STATE_ERR: ibv_wc_status = 18;
/// `IBV_WC_FATAL_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_FATAL_ERR: ibv_wc_status = 19;
/// `IBV_WC_RESP_TIMEOUT_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_RESP_TIMEOUT_ERR: ibv_wc_status = 20;
/// `IBV_WC_GENERAL_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_GENERAL_ERR: ibv_wc_status = 21;
/// `IBV_WC_TM_ERR`, of `enum ibv_wc_status`.
pub const IBV_WC_TM_ERR: ibv_wc_status = 22;
/// `IBV_WC_TM_RNDV_INCOMPLETE`, of `enum ibv_wc_status`.
pub const IBV_WC_TM_RNDV_INCOMPLETE: ibv_wc_status = 23;

/// `enum ibv_wc_opcode` (`unsigned int` in C).
pub type ibv_wc_opcode = u32;
/// `IBV_WC_SEND`, of `enum ibv_wc_opcode`.
pub const IBV_WC_SEND: ibv_wc_opcode = 0;
/// `IBV_WC_RDMA_WRITE`, of `enum ibv_wc_opcode`.
pub const IBV_WC_RDMA_WRITE: ibv_wc_opcode = 1;
/// `IBV_WC_RDMA_READ`, of `enum ibv_wc_opcode`.
pub const IBV_WC_RDMA_READ: ibv_wc_opcode = 2;
/// `IBV_WC_COMP_SWAP`, of `enum ibv_wc_opcode`.
pub const IBV_WC_COMP_SWAP: ibv_wc_opcode = 3;
/// `IBV_WC_FETCH_ADD`, of `enum ibv_wc_opcode`.
pub const IBV_WC_FETCH_ADD: ibv_wc_opcode = 4;
/// `IBV_WC_BIND_MW`, of `enum ibv_wc_opcode`.
pub const IBV_WC_BIND_MW: ibv_wc_opcode = 5;
/// `IBV_WC_LOCAL_INV`, of `enum ibv_wc_opcode`.
pub const IBV_WC_LOCAL_INV: ibv_wc_opcode = 6;
/// `IBV_WC_TSO`, of `enum ibv_wc_opcode`.
pub const IBV_WC_TSO: ibv_wc_opcode = 7;
/// `IBV_WC_FLUSH`, of `enum ibv_wc_opcode` (rdma-core v45.0).
pub const IBV_WC_FLUSH: ibv_wc_opcode = 8;
/// `IBV_WC_ATOMIC_WRITE`, of `enum ibv_wc_opcode`.
pub const IBV_WC_ATOMIC_WRITE: ibv_wc_opcode = 9;
/// `IBV_WC_RECV`, of `enum ibv_wc_opcode`.
pub const IBV_WC_RECV: ibv_wc_opcode = 1 << 7;
/// `IBV_WC_RECV_RDMA_WITH_IMM`, of `enum ibv_wc_opcode`.
pub const IBV_WC_RECV_RDMA_WITH_IMM: ibv_wc_opcode = 129;
/// `IBV_WC_TM_ADD`, of `enum ibv_wc_opcode`.
pub const IBV_WC_TM_ADD: ibv_wc_opcode = 130;
/// `IBV_WC_TM_DEL`, of `enum ibv_wc_opcode`.
pub const IBV_WC_TM_DEL: ibv_wc_opcode = 131;
/// `IBV_WC_TM_SYNC`, of `enum ibv_wc_opcode`.
pub const IBV_WC_TM_SYNC: ibv_wc_opcode = 132;
/// `IBV_WC_TM_RECV`, of `enum ibv_wc_opcode`.
pub const IBV_WC_TM_RECV: ibv_wc_opcode = 133;
/// `IBV_WC_TM_NO_TAG`, of `enum ibv_wc_opcode`.
pub const IBV_WC_TM_NO_TAG: ibv_wc_opcode = 134;
/// `IBV_WC_DRIVER1`, of `enum ibv_wc_opcode`.
pub const IBV_WC_DRIVER1: ibv_wc_opcode = 135;
/// `IBV_WC_DRIVER2`, of `enum ibv_wc_opcode`.
pub const IBV_WC_DRIVER2: ibv_wc_opcode = 136;
/// `IBV_WC_DRIVER3`, of `enum ibv_wc_opcode`.
pub const IBV_WC_DRIVER3: ibv_wc_opcode = 137;

/// `IBV_WC_IP_CSUM_OK_SHIFT`, of an anonymous enum.
pub const IBV_WC_IP_CSUM_OK_SHIFT: u32 = 2;

/// `enum ibv_create_cq_wc_flags` (`unsigned int` in C).
pub type ibv_create_cq_wc_flags = u32;
/// `IBV_WC_EX_WITH_BYTE_LEN`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_BYTE_LEN: ibv_create_cq_wc_flags = 1 << 0;
/// `IBV_WC_EX_WITH_IMM`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_IMM: ibv_create_cq_wc_flags = 1 << 1;
/// `IBV_WC_EX_WITH_QP_NUM`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_QP_NUM: ibv_create_cq_wc_flags = 1 << 2;
/// `IBV_WC_EX_WITH_SRC_QP`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_SRC_QP: ibv_create_cq_wc_flags = 1 << 3;
/// `IBV_WC_EX_WITH_SLID`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_SLID: ibv_create_cq_wc_flags = 1 << 4;
/// `IBV_WC_EX_WITH_SL`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_SL: ibv_create_cq_wc_flags = 1 << 5;
/// `IBV_WC_EX_WITH_DLID_PATH_BITS`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_DLID_PATH_BITS: ibv_create_cq_wc_flags = 1 << 6;
/// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP: ibv_create_cq_wc_flags = 1 << 7;
/// `IBV_WC_EX_WITH_CVLAN`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_CVLAN: ibv_create_cq_wc_flags = 1 << 8;
/// `IBV_WC_EX_WITH_FLOW_TAG`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_FLOW_TAG: ibv_create_cq_wc_flags = 1 << 9;
/// `IBV_WC_EX_WITH_TM_INFO`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_TM_INFO: ibv_create_cq_wc_flags = 1 << 10;
/// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK`, of `enum ibv_create_cq_wc_flags`.
pub const IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK: ibv_create_cq_wc_flags = 1 << 11;

/// `IBV_WC_STANDARD_FLAGS`, of an anonymous enum.
pub const IBV_WC_STANDARD_FLAGS: u32 = 0x7f;

/// `IBV_CREATE_CQ_SUP_WC_FLAGS`, of an anonymous enum.
pub const IBV_CREATE_CQ_SUP_WC_FLAGS: u32 = 0xfff;

/// `enum ibv_wc_flags` (`unsigned int` in C).
pub type ibv_wc_flags = u32;
/// `IBV_WC_GRH`, of `enum ibv_wc_flags`.
pub const IBV_WC_GRH: ibv_wc_flags = 1 << 0;
/// `IBV_WC_WITH_IMM`, of `enum ibv_wc_flags`.
pub const IBV_WC_WITH_IMM: ibv_wc_flags = 1 << 1;
/// `IBV_WC_IP_CSUM_OK`, of `enum ibv_wc_flags`.
pub const IBV_WC_IP_CSUM_OK: ibv_wc_flags = 1 << 2;
/// `IBV_WC_WITH_INV`, of `enum ibv_wc_flags`.
pub const IBV_WC_WITH_INV: ibv_wc_flags = 1 << 3;
/// `IBV_WC_TM_SYNC_REQ`, of `enum ibv_wc_flags`.
pub const IBV_WC_TM_SYNC_REQ: ibv_wc_flags = 1 << 4;
/// `IBV_WC_TM_MATCH`, of `enum ibv_wc_flags`.
pub const IBV_WC_TM_MATCH: ibv_wc_flags = 1 << 5;
/// `IBV_WC_TM_DATA_VALID`, of `enum ibv_wc_flags`.
pub const IBV_WC_TM_DATA_VALID: ibv_wc_flags = 1 << 6;

/// `enum ibv_access_flags` (`unsigned int` in C).
pub type ibv_access_flags = u32;
/// `IBV_ACCESS_LOCAL_WRITE`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_LOCAL_WRITE: ibv_access_flags = 1;
/// `IBV_ACCESS_REMOTE_WRITE`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_REMOTE_WRITE: ibv_access_flags = 1 << 1;
/// `IBV_ACCESS_REMOTE_READ`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_REMOTE_READ: ibv_access_flags = 1 << 2;
/// `IBV_ACCESS_REMOTE_ATOMIC`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_REMOTE_ATOMIC: ibv_access_flags = 1 << 3;
/// `IBV_ACCESS_MW_BIND`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_MW_BIND: ibv_access_flags = 1 << 4;
/// `IBV_ACCESS_ZERO_BASED`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_ZERO_BASED: ibv_access_flags = 1 << 5;
/// `IBV_ACCESS_ON_DEMAND`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_ON_DEMAND: ibv_access_flags = 1 << 6;
/// `IBV_ACCESS_HUGETLB`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_HUGETLB: ibv_access_flags = 1 << 7;
/// `IBV_ACCESS_FLUSH_GLOBAL`, of `enum ibv_access_flags` (rdma-core v45.0).
pub const IBV_ACCESS_FLUSH_GLOBAL: ibv_access_flags = 1 << 8;
/// `IBV_ACCESS_FLUSH_PERSISTENT`, of `enum ibv_access_flags` (rdma-core v45.0).
pub const IBV_ACCESS_FLUSH_PERSISTENT: ibv_access_flags = 1 << 9;
/// `IBV_ACCESS_RELAXED_ORDERING`, of `enum ibv_access_flags`.
pub const IBV_ACCESS_RELAXED_ORDERING: ibv_access_flags = 1 << 20;

/// `enum ibv_xrcd_init_attr_mask` (`unsigned int` in C).
pub type ibv_xrcd_init_attr_mask = u32;
/// `IBV_XRCD_INIT_ATTR_FD`, of `enum ibv_xrcd_init_attr_mask`.
pub const IBV_XRCD_INIT_ATTR_FD: ibv_xrcd_init_attr_mask = 1 << 0;
/// `IBV_XRCD_INIT_ATTR_OFLAGS`, of `enum ibv_xrcd_init_attr_mask`.
pub const IBV_XRCD_INIT_ATTR_OFLAGS: ibv_xrcd_init_attr_mask = 1 << 1;
/// `IBV_XRCD_INIT_ATTR_RESERVED`, of `enum ibv_xrcd_init_attr_mask`.
pub const IBV_XRCD_INIT_ATTR_RESERVED: ibv_xrcd_init_attr_mask = 1 << 2;

/// `enum ibv_rereg_mr_flags` (`unsigned int` in C).
pub type ibv_rereg_mr_flags = u32;
/// `IBV_REREG_MR_CHANGE_TRANSLATION`, of `enum ibv_rereg_mr_flags`.
pub const IBV_REREG_MR_CHANGE_TRANSLATION: ibv_rereg_mr_flags = 1 << 0;
/// `IBV_REREG_MR_CHANGE_PD`, of `enum ibv_rereg_mr_flags`.
pub const IBV_REREG_MR_CHANGE_PD: ibv_rereg_mr_flags = 1 << 1;
/// `IBV_REREG_MR_CHANGE_ACCESS`, of `enum ibv_rereg_mr_flags`.
pub const IBV_REREG_MR_CHANGE_ACCESS: ibv_rereg_mr_flags = 1 << 2;
/// `IBV_REREG_MR_FLAGS_SUPPORTED`, of `enum ibv_rereg_mr_flags`.
pub const IBV_REREG_MR_FLAGS_SUPPORTED: ibv_rereg_mr_flags = 0x7;

/// `enum ibv_mr_init_attr_mask` (`unsigned int` in C).
pub type ibv_mr_init_attr_mask = u32;
/// `IBV_REG_MR_MASK_IOVA`, of `enum ibv_mr_init_attr_mask` (rdma-core v59.0).
pub const IBV_REG_MR_MASK_IOVA: ibv_mr_init_attr_mask = 1 << 0;
/// `IBV_REG_MR_MASK_ADDR`, of `enum ibv_mr_init_attr_mask` (rdma-core v59.0).
pub const IBV_REG_MR_MASK_ADDR: ibv_mr_init_attr_mask = 1 << 1;
/// `IBV_REG_MR_MASK_FD`, of `enum ibv_mr_init_attr_mask` (rdma-core v59.0).
pub const IBV_REG_MR_MASK_FD: ibv_mr_init_attr_mask = 1 << 2;
/// `IBV_REG_MR_MASK_FD_OFFSET`, of `enum ibv_mr_init_attr_mask` (rdma-core v59.0).
pub const IBV_REG_MR_MASK_FD_OFFSET: ibv_mr_init_attr_mask = 1 << 3;
/// `IBV_REG_MR_MASK_DMAH`, of `enum ibv_mr_init_attr_mask` (rdma-core v59.0).
pub const IBV_REG_MR_MASK_DMAH: ibv_mr_init_attr_mask = 1 << 4;
/// `IBV_REG_MR_MASK_BUF`, of `enum ibv_mr_init_attr_mask` (rdma-core v64.0).
pub const IBV_REG_MR_MASK_BUF: ibv_mr_init_attr_mask = 1 << 5;

/// `enum ibv_mw_type` (`unsigned int` in C).
pub type ibv_mw_type = u32;
/// `IBV_MW_TYPE_1`, of `enum ibv_mw_type`.
pub const IBV_MW_TYPE_1: ibv_mw_type = 1;
/// `IBV_MW_TYPE_2`, of `enum ibv_mw_type`.
pub const IBV_MW_TYPE_2: ibv_mw_type = 2;

/// `enum ibv_rate` (`unsigned int` in C).
pub type ibv_rate = u32;
/// `IBV_RATE_MAX`, of `enum ibv_rate`.
pub const IBV_RATE_MAX: ibv_rate = 0;
/// `IBV_RATE_2_5_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_2_5_GBPS: ibv_rate = 2;
/// `IBV_RATE_5_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_5_GBPS: ibv_rate = 5;
/// `IBV_RATE_10_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_10_GBPS: ibv_rate = 3;
/// `IBV_RATE_20_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_20_GBPS: ibv_rate = 6;
/// `IBV_RATE_30_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_30_GBPS: ibv_rate = 4;
/// `IBV_RATE_40_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_40_GBPS: ibv_rate = 7;
/// `IBV_RATE_60_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_60_GBPS: ibv_rate = 8;
/// `IBV_RATE_80_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_80_GBPS: ibv_rate = 9;
/// `IBV_RATE_120_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_120_GBPS: ibv_rate = 10;
/// `IBV_RATE_14_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_14_GBPS: ibv_rate = 11;
/// `IBV_RATE_56_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_56_GBPS: ibv_rate = 12;
/// `IBV_RATE_112_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_112_GBPS: ibv_rate = 13;
/// `IBV_RATE_168_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_168_GBPS: ibv_rate = 14;
/// `IBV_RATE_25_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_25_GBPS: ibv_rate = 15;
/// `IBV_RATE_100_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_100_GBPS: ibv_rate = 16;
/// `IBV_RATE_200_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_200_GBPS: ibv_rate = 17;
/// `IBV_RATE_300_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_300_GBPS: ibv_rate = 18;
/// `IBV_RATE_28_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_28_GBPS: ibv_rate = 19;
/// `IBV_RATE_50_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_50_GBPS: ibv_rate = 20;
/// `IBV_RATE_400_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_400_GBPS: ibv_rate = 21;
/// `IBV_RATE_600_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_600_GBPS: ibv_rate = 22;
/// `IBV_RATE_800_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_800_GBPS: ibv_rate = 23;
/// `IBV_RATE_1200_GBPS`, of `enum ibv_rate`.
pub const IBV_RATE_1200_GBPS: ibv_rate = 24;

/// `enum ibv_srq_attr_mask` (`unsigned int` in C).
pub type ibv_srq_attr_mask = u32;
/// `IBV_SRQ_MAX_WR`, of `enum ibv_srq_attr_mask`.
pub const IBV_SRQ_MAX_WR: ibv_srq_attr_mask = 1 << 0;
/// `IBV_SRQ_LIMIT`, of `enum ibv_srq_attr_mask`.
pub const IBV_SRQ_LIMIT: ibv_srq_attr_mask = 1 << 1;

/// `enum ibv_srq_type` (`unsigned int` in C).
pub type ibv_srq_type = u32;
/// `IBV_SRQT_BASIC`, of `enum ibv_srq_type`.
pub const IBV_SRQT_BASIC: ibv_srq_type = 0;
/// `IBV_SRQT_XRC`, of `enum ibv_srq_type`.
pub const IBV_SRQT_XRC: ibv_srq_type = 1;
/// `IBV_SRQT_TM`, of `enum ibv_srq_type`.
pub const IBV_SRQT_TM: ibv_srq_type = 2;

/// `enum ibv_srq_init_attr_mask` (`unsigned int` in C).
pub type ibv_srq_init_attr_mask = u32;
/// `IBV_SRQ_INIT_ATTR_TYPE`, of `enum ibv_srq_init_attr_mask`.
pub const IBV_SRQ_INIT_ATTR_TYPE: ibv_srq_init_attr_mask = 1 << 0;
/// `IBV_SRQ_INIT_ATTR_PD`, of `enum ibv_srq_init_attr_mask`.
pub const IBV_SRQ_INIT_ATTR_PD: ibv_srq_init_attr_mask = 1 << 1;
/// `IBV_SRQ_INIT_ATTR_XRCD`, of `enum ibv_srq_init_attr_mask`.
pub const IBV_SRQ_INIT_ATTR_XRCD: ibv_srq_init_attr_mask = 1 << 2;
/// `IBV_SRQ_INIT_ATTR_CQ`, of `enum ibv_srq_init_attr_mask`.
pub const IBV_SRQ_INIT_ATTR_CQ: ibv_srq_init_attr_mask = 1 << 3;
/// `IBV_SRQ_INIT_ATTR_TM`, of `enum ibv_srq_init_attr_mask`.
pub const IBV_SRQ_INIT_ATTR_TM: ibv_srq_init_attr_mask = 1 << 4;
/// `IBV_SRQ_INIT_ATTR_RESERVED`, of `enum ibv_srq_init_attr_mask`.
pub const IBV_SRQ_INIT_ATTR_RESERVED: ibv_srq_init_attr_mask = 1 << 5;

/// `enum ibv_wq_type` (`unsigned int` in C).
pub type ibv_wq_type = u32;
/// `IBV_WQT_RQ`, of `enum ibv_wq_type`.
pub const IBV_WQT_RQ: ibv_wq_type = 0;

/// `enum ibv_wq_init_attr_mask` (`unsigned int` in C).
pub type ibv_wq_init_attr_mask = u32;
/// `IBV_WQ_INIT_ATTR_FLAGS`, of `enum ibv_wq_init_attr_mask`.
pub const IBV_WQ_INIT_ATTR_FLAGS: ibv_wq_init_attr_mask = 1 << 0;
/// `IBV_WQ_INIT_ATTR_RESERVED`, of `enum ibv_wq_init_attr_mask`.
pub const IBV_WQ_INIT_ATTR_RESERVED: ibv_wq_init_attr_mask = 1 << 1;

/// `enum ibv_wq_flags` (`unsigned int` in C).
pub type ibv_wq_flags = u32;
/// `IBV_WQ_FLAGS_CVLAN_STRIPPING`, of `enum ibv_wq_flags`.
pub const IBV_WQ_FLAGS_CVLAN_STRIPPING: ibv_wq_flags = 1 << 0;
/// `IBV_WQ_FLAGS_SCATTER_FCS`, of `enum ibv_wq_flags`.
pub const IBV_WQ_FLAGS_SCATTER_FCS: ibv_wq_flags = 1 << 1;
/// `IBV_WQ_FLAGS_DELAY_DROP`, of `enum ibv_wq_flags`.
pub const IBV_WQ_FLAGS_DELAY_DROP: ibv_wq_flags = 1 << 2;
/// `IBV_WQ_FLAGS_PCI_WRITE_END_PADDING`, of `enum ibv_wq_flags`.
pub const IBV_WQ_FLAGS_PCI_WRITE_END_PADDING: ibv_wq_flags = 1 << 3;
/// `IBV_WQ_FLAGS_RESERVED`, of `enum ibv_wq_flags`.
pub const IBV_WQ_FLAGS_RESERVED: ibv_wq_flags = 1 << 4;

/// `enum ibv_wq_state` (`unsigned int` in C).
pub type ibv_wq_state = u32;
/// `IBV_WQS_RESET`, of `enum ibv_wq_state`.
pub const IBV_WQS_RESET: ibv_wq_state = 0;
/// `IBV_WQS_RDY`, of `enum ibv_wq_state`.
pub const IBV_WQS_RDY: ibv_wq_state = 1;
/// `IBV_WQS_ERR`, of `enum ibv_wq_state`.
pub const IBV_WQS_ERR: ibv_wq_state = 2;
/// `IBV_WQS_UNKNOWN`, of `enum ibv_wq_state`.
pub const IBV_WQS_UNKNOWN: ibv_wq_state = 3;

/// `enum ibv_wq_attr_mask` (`unsigned int` in C).
pub type ibv_wq_attr_mask = u32;
/// `IBV_WQ_ATTR_STATE`, of `enum ibv_wq_attr_mask`.
pub const IBV_WQ_ATTR_STATE: ibv_wq_attr_mask = 1 << 0;
/// `IBV_WQ_ATTR_CURR_STATE`, of `enum ibv_wq_attr_mask`.
pub const IBV_WQ_ATTR_CURR_STATE: ibv_wq_attr_mask = 1 << 1;
/// `IBV_WQ_ATTR_FLAGS`, of `enum ibv_wq_attr_mask`.
pub const IBV_WQ_ATTR_FLAGS: ibv_wq_attr_mask = 1 << 2;
/// `IBV_WQ_ATTR_RESERVED`, of `enum ibv_wq_attr_mask`.
pub const IBV_WQ_ATTR_RESERVED: ibv_wq_attr_mask = 1 << 3;

/// `enum ibv_ind_table_init_attr_mask` (`unsigned int` in C).
pub type ibv_ind_table_init_attr_mask = u32;
/// `IBV_CREATE_IND_TABLE_RESERVED`, of `enum ibv_ind_table_init_attr_mask`.
pub const IBV_CREATE_IND_TABLE_RESERVED: ibv_ind_table_init_attr_mask = 1 << 0;

/// `enum ibv_qp_type` (`unsigned int` in C).
pub type ibv_qp_type = u32;
/// `IBV_QPT_RC`, of `enum ibv_qp_type`.
pub const IBV_QPT_RC: ibv_qp_type = 2;
/// `IBV_QPT_UC`, of `enum ibv_qp_type`.
pub const IBV_QPT_UC: ibv_qp_type = 3;
/// `IBV_QPT_UD`, of `enum ibv_qp_type`.
pub const IBV_QPT_UD: ibv_qp_type = 4;
/// `IBV_QPT_RAW_PACKET`, of `enum ibv_qp_type`.
pub const IBV_QPT_RAW_PACKET: ibv_qp_type = 8;
/// `IBV_QPT_XRC_SEND`, of `enum ibv_qp_type`.
pub const IBV_QPT_XRC_SEND: ibv_qp_type = 9;
/// `IBV_QPT_XRC_RECV`, of `enum ibv_qp_type`.
pub const IBV_QPT_XRC_RECV: ibv_qp_type = 10;
/// `IBV_QPT_DRIVER`, of `enum ibv_qp_type`.
pub const IBV_QPT_DRIVER: ibv_qp_type = 0xff;

/// `enum ibv_qp_init_attr_mask` (`unsigned int` in C).
pub type ibv_qp_init_attr_mask = u32;
/// `IBV_QP_INIT_ATTR_PD`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_PD: ibv_qp_init_attr_mask = 1 << 0;
/// `IBV_QP_INIT_ATTR_XRCD`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_XRCD: ibv_qp_init_attr_mask = 1 << 1;
/// `IBV_QP_INIT_ATTR_CREATE_FLAGS`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_CREATE_FLAGS: ibv_qp_init_attr_mask = 1 << 2;
/// `IBV_QP_INIT_ATTR_MAX_TSO_HEADER`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_MAX_TSO_HEADER: ibv_qp_init_attr_mask = 1 << 3;
/// `IBV_QP_INIT_ATTR_IND_TABLE`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_IND_TABLE: ibv_qp_init_attr_mask = 1 << 4;
/// `IBV_QP_INIT_ATTR_RX_HASH`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_RX_HASH: ibv_qp_init_attr_mask = 1 << 5;
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`, of `enum ibv_qp_init_attr_mask`.
pub const IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: ibv_qp_init_attr_mask = 1 << 6;

/// `enum ibv_qp_create_flags` (`unsigned int` in C).
pub type ibv_qp_create_flags = u32;
/// `IBV_QP_CREATE_BLOCK_SELF_MCAST_LB`, of `enum ibv_qp_create_flags`.
pub const IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: ibv_qp_create_flags = 1 << 1;
/// `IBV_QP_CREATE_SCATTER_FCS`, of `enum ibv_qp_create_flags`.
pub const IBV_QP_CREATE_SCATTER_FCS: ibv_qp_create_flags = 1 << 8;
/// `IBV_QP_CREATE_CVLAN_STRIPPING`, of `enum ibv_qp_create_flags`.
pub const IBV_QP_CREATE_CVLAN_STRIPPING: ibv_qp_create_flags = 1 << 9;
/// `IBV_QP_CREATE_SOURCE_QPN`, of `enum ibv_qp_create_flags`.
pub const IBV_QP_CREATE_SOURCE_QPN: ibv_qp_create_flags = 1 << 10;
/// `IBV_QP_CREATE_PCI_WRITE_END_PADDING`, of `enum ibv_qp_create_flags`.
pub const IBV_QP_CREATE_PCI_WRITE_END_PADDING: ibv_qp_create_flags = 1 << 11;

/// `enum ibv_qp_create_send_ops_flags` (`unsigned int` in C).
pub type ibv_qp_create_send_ops_flags = u32;
/// `IBV_QP_EX_WITH_RDMA_WRITE`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_RDMA_WRITE: ibv_qp_create_send_ops_flags = 1 << 0;
/// `IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM: ibv_qp_create_send_ops_flags = 1 << 1;
/// `IBV_QP_EX_WITH_SEND`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_SEND: ibv_qp_create_send_ops_flags = 1 << 2;
/// `IBV_QP_EX_WITH_SEND_WITH_IMM`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_SEND_WITH_IMM: ibv_qp_create_send_ops_flags = 1 << 3;
/// `IBV_QP_EX_WITH_RDMA_READ`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_RDMA_READ: ibv_qp_create_send_ops_flags = 1 << 4;
/// `IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP: ibv_qp_create_send_ops_flags = 1 << 5;
/// `IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD: ibv_qp_create_send_ops_flags = 1 << 6;
/// `IBV_QP_EX_WITH_LOCAL_INV`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_LOCAL_INV: ibv_qp_create_send_ops_flags = 1 << 7;
/// `IBV_QP_EX_WITH_BIND_MW`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_BIND_MW: ibv_qp_create_send_ops_flags = 1 << 8;
/// `IBV_QP_EX_WITH_SEND_WITH_INV`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_SEND_WITH_INV: ibv_qp_create_send_ops_flags = 1 << 9;
/// `IBV_QP_EX_WITH_TSO`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_TSO: ibv_qp_create_send_ops_flags = 1 << 10;
/// `IBV_QP_EX_WITH_FLUSH`, of `enum ibv_qp_create_send_ops_flags` (rdma-core v45.0).
pub const IBV_QP_EX_WITH_FLUSH: ibv_qp_create_send_ops_flags = 1 << 11;
/// `IBV_QP_EX_WITH_ATOMIC_WRITE`, of `enum ibv_qp_create_send_ops_flags`.
pub const IBV_QP_EX_WITH_ATOMIC_WRITE: ibv_qp_create_send_ops_flags = 1 << 12;

/// `enum ibv_qp_open_attr_mask` (`unsigned int` in C).
pub type ibv_qp_open_attr_mask = u32;
/// `IBV_QP_OPEN_ATTR_NUM`, of `enum ibv_qp_open_attr_mask`.
pub const IBV_QP_OPEN_ATTR_NUM: ibv_qp_open_attr_mask = 1 << 0;
/// `IBV_QP_OPEN_ATTR_XRCD`, of `enum ibv_qp_open_attr_mask`.
pub const IBV_QP_OPEN_ATTR_XRCD: ibv_qp_open_attr_mask = 1 << 1;
/// `IBV_QP_OPEN_ATTR_CONTEXT`, of `enum ibv_qp_open_attr_mask`.
pub const IBV_QP_OPEN_ATTR_CONTEXT: ibv_qp_open_attr_mask = 1 << 2;
/// `IBV_QP_OPEN_ATTR_TYPE`, of `enum ibv_qp_open_attr_mask`.
pub const IBV_QP_OPEN_ATTR_TYPE: ibv_qp_open_attr_mask = 1 << 3;
/// `IBV_QP_OPEN_ATTR_RESERVED`, of `enum ibv_qp_open_attr_mask`.
pub const IBV_QP_OPEN_ATTR_RESERVED: ibv_qp_open_attr_mask = 1 << 4;

/// `enum ibv_qp_attr_mask` (`unsigned int` in C).
pub type ibv_qp_attr_mask = u32;
/// `IBV_QP_STATE`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_STATE: ibv_qp_attr_mask = 1 << 0;
/// `IBV_QP_CUR_STATE`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_CUR_STATE: ibv_qp_attr_mask = 1 << 1;
/// `IBV_QP_EN_SQD_ASYNC_NOTIFY`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_EN_SQD_ASYNC_NOTIFY: ibv_qp_attr_mask = 1 << 2;
/// `IBV_QP_ACCESS_FLAGS`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_ACCESS_FLAGS: ibv_qp_attr_mask = 1 << 3;
/// `IBV_QP_PKEY_INDEX`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_PKEY_INDEX: ibv_qp_attr_mask = 1 << 4;
/// `IBV_QP_PORT`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_PORT: ibv_qp_attr_mask = 1 << 5;
/// `IBV_QP_QKEY`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_QKEY: ibv_qp_attr_mask = 1 << 6;
/// `IBV_QP_AV`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_AV: ibv_qp_attr_mask = 1 << 7;
/// `IBV_QP_PATH_MTU`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_PATH_MTU: ibv_qp_attr_mask = 1 << 8;
/// `IBV_QP_TIMEOUT`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_TIMEOUT: ibv_qp_attr_mask = 1 << 9;
/// `IBV_QP_RETRY_CNT`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_RETRY_CNT: ibv_qp_attr_mask = 1 << 10;
/// `IBV_QP_RNR_RETRY`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_RNR_RETRY: ibv_qp_attr_mask = 1 << 11;
/// `IBV_QP_RQ_PSN`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_RQ_PSN: ibv_qp_attr_mask = 1 << 12;
/// `IBV_QP_MAX_QP_RD_ATOMIC`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_MAX_QP_RD_ATOMIC: ibv_qp_attr_mask = 1 << 13;
/// `IBV_QP_ALT_PATH`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_ALT_PATH: ibv_qp_attr_mask = 1 << 14;
/// `IBV_QP_MIN_RNR_TIMER`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_MIN_RNR_TIMER: ibv_qp_attr_mask = 1 << 15;
/// `IBV_QP_SQ_PSN`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_SQ_PSN: ibv_qp_attr_mask = 1 << 16;
/// `IBV_QP_MAX_DEST_RD_ATOMIC`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_MAX_DEST_RD_ATOMIC: ibv_qp_attr_mask = 1 << 17;
/// `IBV_QP_PATH_MIG_STATE`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_PATH_MIG_STATE: ibv_qp_attr_mask = 1 << 18;
/// `IBV_QP_CAP`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_CAP: ibv_qp_attr_mask = 1 << 19;
/// `IBV_QP_DEST_QPN`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_DEST_QPN: ibv_qp_attr_mask = 1 << 20;
/// `IBV_QP_RATE_LIMIT`, of `enum ibv_qp_attr_mask`.
pub const IBV_QP_RATE_LIMIT: ibv_qp_attr_mask = 1 << 25;

/// `enum ibv_query_qp_data_in_order_flags` (`unsigned int` in C).
pub type ibv_query_qp_data_in_order_flags = u32;
/// `IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS`, of `enum ibv_query_qp_data_in_order_flags` (rdma-core v46.0).
pub const IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS: ibv_query_qp_data_in_order_flags = 1 << 0;
/// `IBV_QUERY_QP_DATA_IN_ORDER_DEVICE_ONLY`, of `enum ibv_query_qp_data_in_order_flags` (rdma-core v60.0).
pub const IBV_QUERY_QP_DATA_IN_ORDER_DEVICE_ONLY: ibv_query_qp_data_in_order_flags = 1 << 1;

/// `enum ibv_query_qp_data_in_order_caps` (`unsigned int` in C).
pub type ibv_query_qp_data_in_order_caps = u32;
/// `IBV_QUERY_QP_DATA_IN_ORDER_WHOLE_MSG`, of `enum ibv_query_qp_data_in_order_caps` (rdma-core v46.0).
pub const IBV_QUERY_QP_DATA_IN_ORDER_WHOLE_MSG: ibv_query_qp_data_in_order_caps = 1 << 0;
/// `IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES`, of `enum ibv_query_qp_data_in_order_caps` (rdma-core v46.0).
pub const IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES: ibv_query_qp_data_in_order_caps = 1 << 1;

/// `enum ibv_qp_state` (`unsigned int` in C).
pub type ibv_qp_state = u32;
/// `IBV_QPS_RESET`, of `enum ibv_qp_state`.
pub const IBV_QPS_RESET: ibv_qp_state = 0;
/// `IBV_QPS_INIT`, of `enum ibv_qp_state`.
pub const IBV_QPS_INIT: ibv_qp_state = 1;
/// `IBV_QPS_RTR`, of `enum ibv_qp_state`.
pub const IBV_QPS_RTR: ibv_qp_state = 2;
/// `IBV_QPS_RTS`, of `enum ibv_qp_state`.
pub const IBV_QPS_RTS: ibv_qp_state = 3;
/// `IBV_QPS_SQD`, of `enum ibv_qp_state`.
pub const IBV_QPS_SQD: ibv_qp_state = 4;
/// `IBV_QPS_SQE`, of `enum ibv_qp_state`.
pub const IBV_QPS_SQE: ibv_qp_state = 5;
/// `IBV_QPS_ERR`, of `enum ibv_qp_state`.
pub const IBV_QPS_ERR: ibv_qp_state = 6;
/// `IBV_QPS_UNKNOWN`, of `enum ibv_qp_state`.
pub const IBV_QPS_UNKNOWN: ibv_qp_state = 7;

/// `enum ibv_mig_state` (`unsigned int` in C).
pub type ibv_mig_state = u32;
/// `IBV_MIG_MIGRATED`, of `enum ibv_mig_state`.
pub const IBV_MIG_MIGRATED: ibv_mig_state = 0;
/// `IBV_MIG_REARM`, of `enum ibv_mig_state`.
pub const IBV_MIG_REARM: ibv_mig_state = 1;
/// `IBV_MIG_ARMED`, of `enum ibv_mig_state`.
pub const IBV_MIG_ARMED: ibv_mig_state = 2;

/// `enum ibv_wr_opcode` (`unsigned int` in C).
pub type ibv_wr_opcode = u32;
/// `IBV_WR_RDMA_WRITE`, of `enum ibv_wr_opcode`.
pub const IBV_WR_RDMA_WRITE: ibv_wr_opcode = 0;
/// `IBV_WR_RDMA_WRITE_WITH_IMM`, of `enum ibv_wr_opcode`.
pub const IBV_WR_RDMA_WRITE_WITH_IMM: ibv_wr_opcode = 1;
/// `IBV_WR_SEND`, of `enum ibv_wr_opcode`.
pub const IBV_WR_SEND: ibv_wr_opcode = 2;
/// `IBV_WR_SEND_WITH_IMM`, of `enum ibv_wr_opcode`.
pub const IBV_WR_SEND_WITH_IMM: ibv_wr_opcode = 3;
/// `IBV_WR_RDMA_READ`, of `enum ibv_wr_opcode`.
pub const IBV_WR_RDMA_READ: ibv_wr_opcode = 4;
/// `IBV_WR_ATOMIC_CMP_AND_SWP`, of `enum ibv_wr_opcode`.
pub const IBV_WR_ATOMIC_CMP_AND_SWP: ibv_wr_opcode = 5;
/// `IBV_WR_ATOMIC_FETCH_AND_ADD`, of `enum ibv_wr_opcode`.
pub const IBV_WR_ATOMIC_FETCH_AND_ADD: ibv_wr_opcode = 6;
/// `IBV_WR_LOCAL_INV`, of `enum ibv_wr_opcode`.
pub const IBV_WR_LOCAL_INV: ibv_wr_opcode = 7;
/// `IBV_WR_BIND_MW`, of `enum ibv_wr_opcode`.
pub const IBV_WR_BIND_MW: ibv_wr_opcode = 8;
/// `IBV_WR_SEND_WITH_INV`, of `enum ibv_wr_opcode`.
pub const IBV_WR_SEND_WITH_INV: ibv_wr_opcode = 9;
/// `IBV_WR_TSO`, of `enum ibv_wr_opcode`.
pub const IBV_WR_TSO: ibv_wr_opcode = 10;
/// `IBV_WR_DRIVER1`, of `enum ibv_wr_opcode`.
pub const IBV_WR_DRIVER1: ibv_wr_opcode = 11;
/// `IBV_WR_FLUSH`, of `enum ibv_wr_opcode` (rdma-core v45.0).
pub const IBV_WR_FLUSH: ibv_wr_opcode = 14;
/// `IBV_WR_ATOMIC_WRITE`, of `enum ibv_wr_opcode`.
pub const IBV_WR_ATOMIC_WRITE: ibv_wr_opcode = 15;

/// `enum ibv_send_flags` (`unsigned int` in C).
pub type ibv_send_flags = u32;
/// `IBV_SEND_FENCE`, of `enum ibv_send_flags`.
pub const IBV_SEND_FENCE: ibv_send_flags = 1 << 0;
/// `IBV_SEND_SIGNALED`, of `enum ibv_send_flags`.
pub const IBV_SEND_SIGNALED: ibv_send_flags = 1 << 1;
/// `IBV_SEND_SOLICITED`, of `enum ibv_send_flags`.
pub const IBV_SEND_SOLICITED: ibv_send_flags = 1 << 2;
/// `IBV_SEND_INLINE`, of `enum ibv_send_flags`.
pub const IBV_SEND_INLINE: ibv_send_flags = 1 << 3;
/// `IBV_SEND_IP_CSUM`, of `enum ibv_send_flags`.
pub const IBV_SEND_IP_CSUM: ibv_send_flags = 1 << 4;

/// `enum ibv_placement_type` (`unsigned int` in C).
pub type ibv_placement_type = u32;
/// `IBV_FLUSH_GLOBAL`, of `enum ibv_placement_type` (rdma-core v45.0).
pub const IBV_FLUSH_GLOBAL: ibv_placement_type = 1 << 0;
/// `IBV_FLUSH_PERSISTENT`, of `enum ibv_placement_type` (rdma-core v45.0).
pub const IBV_FLUSH_PERSISTENT: ibv_placement_type = 1 << 1;

/// `enum ibv_selectivity_level` (`unsigned int` in C).
pub type ibv_selectivity_level = u32;
/// `IBV_FLUSH_RANGE`, of `enum ibv_selectivity_level` (rdma-core v45.0).
pub const IBV_FLUSH_RANGE: ibv_selectivity_level = 0;
/// `IBV_FLUSH_MR`, of `enum ibv_selectivity_level` (rdma-core v45.0).
pub const IBV_FLUSH_MR: ibv_selectivity_level = 1;

/// `enum ibv_ops_wr_opcode` (`unsigned int` in C).
pub type ibv_ops_wr_opcode = u32;
/// `IBV_WR_TAG_ADD`, of `enum ibv_ops_wr_opcode`.
pub const IBV_WR_TAG_ADD: ibv_ops_wr_opcode = 0;
/// `IBV_WR_TAG_DEL`, of `enum ibv_ops_wr_opcode`.
pub const IBV_WR_TAG_DEL: ibv_ops_wr_opcode = 1;
/// `IBV_WR_TAG_SYNC`, of `enum ibv_ops_wr_opcode`.
pub const IBV_WR_TAG_SYNC: ibv_ops_wr_opcode = 2;

/// `enum ibv_ops_flags` (`unsigned int` in C).
pub type ibv_ops_flags = u32;
/// `IBV_OPS_SIGNALED`, of `enum ibv_ops_flags`.
pub const IBV_OPS_SIGNALED: ibv_ops_flags = 1 << 0;
/// `IBV_OPS_TM_SYNC`, of `enum ibv_ops_flags`.
pub const IBV_OPS_TM_SYNC: ibv_ops_flags = 1 << 1;

/// `enum ibv_cq_attr_mask` (`unsigned int` in C).
pub type ibv_cq_attr_mask = u32;
/// `IBV_CQ_ATTR_MODERATE`, of `enum ibv_cq_attr_mask`.
pub const IBV_CQ_ATTR_MODERATE: ibv_cq_attr_mask = 1 << 0;
/// `IBV_CQ_ATTR_RESERVED`, of `enum ibv_cq_attr_mask`.
pub const IBV_CQ_ATTR_RESERVED: ibv_cq_attr_mask = 1 << 1;

/// `enum ibv_flow_flags` (`unsigned int` in C).
pub type ibv_flow_flags = u32;
/// `IBV_FLOW_ATTR_FLAGS_DONT_TRAP`, of `enum ibv_flow_flags`.
pub const IBV_FLOW_ATTR_FLAGS_DONT_TRAP: ibv_flow_flags = 1 << 1;
/// `IBV_FLOW_ATTR_FLAGS_EGRESS`, of `enum ibv_flow_flags`.
pub const IBV_FLOW_ATTR_FLAGS_EGRESS: ibv_flow_flags = 1 << 2;

/// `enum ibv_flow_attr_type` (`unsigned int` in C).
pub type ibv_flow_attr_type = u32;
/// `IBV_FLOW_ATTR_NORMAL`, of `enum ibv_flow_attr_type`.
pub const IBV_FLOW_ATTR_NORMAL: ibv_flow_attr_type = 0x0;
/// `IBV_FLOW_ATTR_ALL_DEFAULT`, of `enum ibv_flow_attr_type`.
pub const IBV_FLOW_ATTR_ALL_DEFAULT: ibv_flow_attr_type = 0x1;
/// `IBV_FLOW_ATTR_MC_DEFAULT`, of `enum ibv_flow_attr_type`.
pub const IBV_FLOW_ATTR_MC_DEFAULT: ibv_flow_attr_type = 0x2;
/// `IBV_FLOW_ATTR_SNIFFER`, of `enum ibv_flow_attr_type`.
pub const IBV_FLOW_ATTR_SNIFFER: ibv_flow_attr_type = 0x3;

/// `enum ibv_flow_spec_type` (`unsigned int` in C).
pub type ibv_flow_spec_type = u32;
/// `IBV_FLOW_SPEC_ETH`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_ETH: ibv_flow_spec_type = 0x20;
/// `IBV_FLOW_SPEC_IPV4`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_IPV4: ibv_flow_spec_type = 0x30;
/// `IBV_FLOW_SPEC_IPV6`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_IPV6: ibv_flow_spec_type = 0x31;
/// `IBV_FLOW_SPEC_IPV4_EXT`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_IPV4_EXT: ibv_flow_spec_type = 0x32;
/// `IBV_FLOW_SPEC_ESP`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_ESP: ibv_flow_spec_type = 0x34;
/// `IBV_FLOW_SPEC_TCP`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_TCP: ibv_flow_spec_type = 0x40;
/// `IBV_FLOW_SPEC_UDP`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_UDP: ibv_flow_spec_type = 0x41;
/// `IBV_FLOW_SPEC_VXLAN_TUNNEL`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_VXLAN_TUNNEL: ibv_flow_spec_type = 0x50;
/// `IBV_FLOW_SPEC_GRE`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_GRE: ibv_flow_spec_type = 0x51;
/// `IBV_FLOW_SPEC_MPLS`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_MPLS: ibv_flow_spec_type = 0x60;
/// `IBV_FLOW_SPEC_INNER`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_INNER: ibv_flow_spec_type = 0x100;
/// `IBV_FLOW_SPEC_ACTION_TAG`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_ACTION_TAG: ibv_flow_spec_type = 0x1000;
/// `IBV_FLOW_SPEC_ACTION_DROP`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_ACTION_DROP: ibv_flow_spec_type = 0x1001;
/// `IBV_FLOW_SPEC_ACTION_HANDLE`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_ACTION_HANDLE: ibv_flow_spec_type = 0x1002;
/// `IBV_FLOW_SPEC_ACTION_COUNT`, of `enum ibv_flow_spec_type`.
pub const IBV_FLOW_SPEC_ACTION_COUNT: ibv_flow_spec_type = 0x1003;

/// `enum ibv_flow_action_esp_mask` (`unsigned int` in C).
pub type ibv_flow_action_esp_mask = u32;
/// `IBV_FLOW_ACTION_ESP_MASK_ESN`, of `enum ibv_flow_action_esp_mask`.
pub const IBV_FLOW_ACTION_ESP_MASK_ESN: ibv_flow_action_esp_mask = 1 << 0;

/// `IBV_SYSFS_NAME_MAX`, of an anonymous enum.
pub const IBV_SYSFS_NAME_MAX: u32 = 64;
/// `IBV_SYSFS_PATH_MAX`, of an anonymous enum.
pub const IBV_SYSFS_PATH_MAX: u32 = 256;

/// `enum ibv_cq_init_attr_mask` (`unsigned int` in C).
pub type ibv_cq_init_attr_mask = u32;
/// `IBV_CQ_INIT_ATTR_MASK_FLAGS`, of `enum ibv_cq_init_attr_mask`.
pub const IBV_CQ_INIT_ATTR_MASK_FLAGS: ibv_cq_init_attr_mask = 1 << 0;
/// `IBV_CQ_INIT_ATTR_MASK_PD`, of `enum ibv_cq_init_attr_mask`.
pub const IBV_CQ_INIT_ATTR_MASK_PD: ibv_cq_init_attr_mask = 1 << 1;

/// `enum ibv_create_cq_attr_flags` (`unsigned int` in C).
pub type ibv_create_cq_attr_flags = u32;
/// `IBV_CREATE_CQ_ATTR_SINGLE_THREADED`, of `enum ibv_create_cq_attr_flags`.
pub const IBV_CREATE_CQ_ATTR_SINGLE_THREADED: ibv_create_cq_attr_flags = 1 << 0;
/// `IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN`, of `enum ibv_create_cq_attr_flags`.
pub const IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: ibv_create_cq_attr_flags = 1 << 1;

/// `enum ibv_qp_attach_comp_cntr_op` (`unsigned int` in C).
pub type ibv_qp_attach_comp_cntr_op = u32;
/// `IBV_QP_ATTACH_COMP_CNTR_OP_SEND`, of `enum ibv_qp_attach_comp_cntr_op` (rdma-core v65.0).
pub const IBV_QP_ATTACH_COMP_CNTR_OP_SEND: ibv_qp_attach_comp_cntr_op = 1 << 0;
/// `IBV_QP_ATTACH_COMP_CNTR_OP_RECV`, of `enum ibv_qp_attach_comp_cntr_op` (rdma-core v65.0).
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RECV: ibv_qp_attach_comp_cntr_op = 1 << 1;
/// `IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ`, of `enum ibv_qp_attach_comp_cntr_op` (rdma-core v65.0).
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ: ibv_qp_attach_comp_cntr_op = 1 << 2;
/// `IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ`, of `enum ibv_qp_attach_comp_cntr_op` (rdma-core v65.0).
pub const IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ: ibv_qp_attach_comp_cntr_op = 1 << 3;
/// `IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE`, of `enum ibv_qp_attach_comp_cntr_op` (rdma-core v65.0).
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE: ibv_qp_attach_comp_cntr_op = 1 << 4;
/// `IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE`, of `enum ibv_qp_attach_comp_cntr_op` (rdma-core v65.0).
pub const IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE: ibv_qp_attach_comp_cntr_op = 1 << 5;

/// `enum ibv_comp_cntr_type` (`unsigned int` in C).
pub type ibv_comp_cntr_type = u32;
/// `IBV_COMP_CNTR_TYPE_WRS`, of `enum ibv_comp_cntr_type` (rdma-core v65.0).
pub const IBV_COMP_CNTR_TYPE_WRS: ibv_comp_cntr_type = 0;
/// `IBV_COMP_CNTR_TYPE_BYTES`, of `enum ibv_comp_cntr_type` (rdma-core v65.0).
pub const IBV_COMP_CNTR_TYPE_BYTES: ibv_comp_cntr_type = 1;

/// `enum ibv_parent_domain_init_attr_mask` (`unsigned int` in C).
pub type ibv_parent_domain_init_attr_mask = u32;
/// `IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS`, of `enum ibv_parent_domain_init_attr_mask`.
pub const IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS: ibv_parent_domain_init_attr_mask = 1 << 0;
/// `IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT`, of `enum ibv_parent_domain_init_attr_mask`.
pub const IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT: ibv_parent_domain_init_attr_mask = 1 << 1;
/// `IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC`, of `enum ibv_parent_domain_init_attr_mask` (rdma-core v64.0).
pub const IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC: ibv_parent_domain_init_attr_mask =
    1 << 2;

/// `enum ibv_tph_mem_type` (`unsigned int` in C).
pub type ibv_tph_mem_type = u32;
/// `IBV_TPH_MEM_TYPE_VM`, of `enum ibv_tph_mem_type` (rdma-core v59.0).
pub const IBV_TPH_MEM_TYPE_VM: ibv_tph_mem_type = 0;
/// `IBV_TPH_MEM_TYPE_PM`, of `enum ibv_tph_mem_type` (rdma-core v59.0).
pub const IBV_TPH_MEM_TYPE_PM: ibv_tph_mem_type = 1;

/// `enum ibv_dmah_init_attr_mask` (`unsigned int` in C).
pub type ibv_dmah_init_attr_mask = u32;
/// `IBV_DMAH_INIT_ATTR_MASK_CPU_ID`, of `enum ibv_dmah_init_attr_mask` (rdma-core v59.0).
pub const IBV_DMAH_INIT_ATTR_MASK_CPU_ID: ibv_dmah_init_attr_mask = 1 << 0;
/// `IBV_DMAH_INIT_ATTR_MASK_PH`, of `enum ibv_dmah_init_attr_mask` (rdma-core v59.0).
pub const IBV_DMAH_INIT_ATTR_MASK_PH: ibv_dmah_init_attr_mask = 1 << 1;
/// `IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE`, of `enum ibv_dmah_init_attr_mask` (rdma-core v59.0).
pub const IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE: ibv_dmah_init_attr_mask = 1 << 2;

/// `enum ibv_counter_description` (`unsigned int` in C).
pub type ibv_counter_description = u32;
/// `IBV_COUNTER_PACKETS`, of `enum ibv_counter_description`.
pub const IBV_COUNTER_PACKETS: ibv_counter_description = 0;
/// `IBV_COUNTER_BYTES`, of `enum ibv_counter_description`.
pub const IBV_COUNTER_BYTES: ibv_counter_description = 1;

/// `enum ibv_read_counters_flags` (`unsigned int` in C).
pub type ibv_read_counters_flags = u32;
/// `IBV_READ_COUNTERS_ATTR_PREFER_CACHED`, of `enum ibv_read_counters_flags`.
pub const IBV_READ_COUNTERS_ATTR_PREFER_CACHED: ibv_read_counters_flags = 1 << 0;

/// `enum ibv_values_mask` (`unsigned int` in C).
pub type ibv_values_mask = u32;
/// `IBV_VALUES_MASK_RAW_CLOCK`, of `enum ibv_values_mask`.
pub const IBV_VALUES_MASK_RAW_CLOCK: ibv_values_mask = 1 << 0;
/// `IBV_VALUES_MASK_RESERVED`, of `enum ibv_values_mask`.
pub const IBV_VALUES_MASK_RESERVED: ibv_values_mask = 1 << 1;

/// `enum ibv_rereg_mr_err_code` (`int` in C).
pub type ibv_rereg_mr_err_code = i32;
/// `IBV_REREG_MR_ERR_INPUT`, of `enum ibv_rereg_mr_err_code`.
pub const IBV_REREG_MR_ERR_INPUT: ibv_rereg_mr_err_code = -1;
/// `IBV_REREG_MR_ERR_DONT_FORK_NEW`, of `enum ibv_rereg_mr_err_code`.
pub const IBV_REREG_MR_ERR_DONT_FORK_NEW: ibv_rereg_mr_err_code = -2;
/// `IBV_REREG_MR_ERR_DO_FORK_OLD`, of `enum ibv_rereg_mr_err_code`.
pub const IBV_REREG_MR_ERR_DO_FORK_OLD: ibv_rereg_mr_err_code = -3;
/// `IBV_REREG_MR_ERR_CMD`, of `enum ibv_rereg_mr_err_code`.
pub const IBV_REREG_MR_ERR_CMD: ibv_rereg_mr_err_code = -4;
/// `IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW`, of `enum ibv_rereg_mr_err_code`.
pub const IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW: ibv_rereg_mr_err_code = -5;
