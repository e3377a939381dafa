//! Every struct, field, function pointer and constant of `abi.rs` against
//! rdma-core's own `<infiniband/verbs.h>`: a C probe built against the
//! header prints `sizeof`, `_Alignof`, `offsetof` and the constants'
//! values, and whether each field's type is compatible
//! (`__builtin_types_compatible_p`) with the C spelling of ours (so a
//! function pointer's every argument, a `const`, or an `int` where C has a
//! `uint32_t`, are checked too, not only where fields lie); each must equal
//! our value.
//!
//! Headers probed:
//! - /usr/include, always: the host's rdma-core (44 on Debian bookworm).
//!   Without its verbs.h the test prints one line and passes, unless
//!   ERNIC_REQUIRE_VERBS_HEADERS=1.
//! - /var/cache/ernic-vm/sid/usr/include when it has infiniband/verbs.h:
//!   the sid guest's rdma-core (65).
//! - each directory in ERNIC_VERBS_HEADERS (colon-separated), which must
//!   have infiniband/verbs.h: e.g. a copy of an rdma-core tree's headers.
//!
//! abi.rs has rdma-core 65's layout. A row for something rdma-core added
//! after v44 carries the header text that declares it (a field's
//! declarator, a constant's name), and is probed only against a header that
//! contains that text; a struct that grew is also checked, in every
//! header, to be no bigger there than ours. `struct verbs_context` grows at
//! its start, so its ops are checked as distances before its `context`
//! member, which is what compiled programs use (see abi.rs).

use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};

mod common;

use common::Row;
use ibverbs::abi::*;
use libc::{c_void, pthread_cond_t, pthread_mutex_t, timespec};

/// The C spelling of a Rust type, where C has a name for it (C's anonymous
/// structs and unions have none).
trait CType {
    fn c() -> Option<String>;
}

macro_rules! c_name {
    ($($t:ty => $c:expr),* $(,)?) => {
        $(impl CType for $t {
            fn c() -> Option<String> {
                Some(String::from($c))
            }
        })*
    };
}

c_name!(
    u8 => "uint8_t", u16 => "uint16_t", u32 => "uint32_t", u64 => "uint64_t",
    i32 => "int", i8 => "char", usize => "size_t", c_void => "void", () => "void",
    pthread_mutex_t => "pthread_mutex_t", pthread_cond_t => "pthread_cond_t",
    timespec => "struct timespec", ibv_gid => "union ibv_gid",
);

macro_rules! c_struct {
    ($($t:ident),* $(,)?) => {
        c_name!($($t => concat!("struct ", stringify!($t))),*);
    };
}

c_struct!(
    ibv_gid_entry,
    ibv_alloc_dm_attr,
    ibv_dm,
    ibv_device_attr,
    ibv_query_device_ex_input,
    ibv_odp_caps,
    ibv_tso_caps,
    ibv_rss_caps,
    ibv_packet_pacing_caps,
    ibv_tm_caps,
    ibv_cq_moderation_caps,
    ibv_pci_atomic_caps,
    ibv_device_attr_ex,
    ibv_port_attr,
    ibv_async_event,
    ibv_wc,
    ibv_mw_bind_info,
    ibv_dmah,
    ibv_buf,
    ibv_pd,
    ibv_td_init_attr,
    ibv_td,
    ibv_xrcd_init_attr,
    ibv_xrcd,
    ibv_mr,
    ibv_mr_init_attr,
    ibv_mw,
    ibv_global_route,
    ibv_grh,
    ibv_ah_attr,
    ibv_srq_attr,
    ibv_srq_init_attr,
    ibv_tm_cap,
    ibv_srq_init_attr_ex,
    ibv_wq_init_attr,
    ibv_wq_attr,
    ibv_rwq_ind_table,
    ibv_rwq_ind_table_init_attr,
    ibv_qp_cap,
    ibv_qp_init_attr,
    ibv_rx_hash_conf,
    ibv_qp_init_attr_ex,
    ibv_qp_open_attr,
    ibv_qp_attr,
    ibv_qp_rate_limit_attr,
    ibv_data_buf,
    ibv_sge,
    ibv_fd_arr,
    ibv_send_wr,
    ibv_recv_wr,
    ibv_ops_wr,
    ibv_mw_bind,
    ibv_srq,
    ibv_wq,
    ibv_qp,
    ibv_qp_ex,
    ibv_ece,
    ibv_comp_channel,
    ibv_cq,
    ibv_poll_cq_attr,
    ibv_wc_tm_info,
    ibv_cq_ex,
    ibv_moderate_cq,
    ibv_modify_cq_attr,
    ibv_ah,
    ibv_flow_attr,
    ibv_flow,
    ibv_flow_action,
    ibv_flow_action_esp,
    ibv_flow_action_esp_encap,
    ibv_flow_action_esp_attr,
    _ibv_device_ops,
    ibv_device,
    _compat_ibv_port_attr,
    ibv_context_ops,
    ibv_context,
    ibv_cq_init_attr_ex,
    ibv_comp_cntr_caps,
    ibv_comp_cntr,
    ibv_comp_cntr_init_attr,
    ibv_qp_attach_comp_cntr_attr,
    ibv_parent_domain_init_attr,
    ibv_dmah_init_attr,
    ibv_counters_init_attr,
    ibv_counters,
    ibv_counter_attach_attr,
    ibv_values_ex,
    verbs_ex_private,
    verbs_context,
);

/// Our names for C's anonymous members: no C type name to compare with.
macro_rules! c_anonymous {
    ($($t:ident),* $(,)?) => {
        $(impl CType for $t {
            fn c() -> Option<String> {
                None
            }
        })*
    };
}

c_anonymous!(
    ibv_odp_caps_per_transport_caps,
    ibv_async_event_element,
    ibv_wc_imm,
    ibv_send_wr_imm,
    ibv_send_wr_wr,
    ibv_send_wr_rdma,
    ibv_send_wr_atomic,
    ibv_send_wr_ud,
    ibv_send_wr_qp_type,
    ibv_send_wr_xrc,
    ibv_send_wr_bind_mw_tso,
    ibv_send_wr_bind_mw,
    ibv_send_wr_tso,
    ibv_ops_wr_tm,
    ibv_ops_wr_tm_add,
);

impl<T: CType> CType for *mut T {
    fn c() -> Option<String> {
        Some(format!("{} *", T::c()?))
    }
}

impl<T: CType> CType for *const T {
    fn c() -> Option<String> {
        Some(format!("const {} *", T::c()?))
    }
}

impl<T: CType, const N: usize> CType for [T; N] {
    fn c() -> Option<String> {
        Some(format!("{}[{N}]", T::c()?))
    }
}

macro_rules! c_fn {
    ($($a:ident),*) => {
        impl<R: CType, $($a: CType),*> CType for Option<unsafe extern "C" fn($($a),*) -> R> {
            fn c() -> Option<String> {
                let args: Vec<String> = vec![$($a::c()?),*];
                let args = if args.is_empty() { "void".to_string() } else { args.join(", ") };
                Some(format!("{} (*)({args})", R::c()?))
            }
        }
    };
}

c_fn!();
c_fn!(A);
c_fn!(A, B);
c_fn!(A, B, C);
c_fn!(A, B, C, D);
c_fn!(A, B, C, D, E);
c_fn!(A, B, C, D, E, F);
c_fn!(A, B, C, D, E, F, G);

/// A constant's value as the probe prints it: `(unsigned long long)` of
/// the C value (so a negative `int` is sign-extended).
trait Value {
    fn value(self) -> u64;
}

impl Value for u32 {
    fn value(self) -> u64 {
        self.into()
    }
}

impl Value for i32 {
    fn value(self) -> u64 {
        i64::from(self) as u64
    }
}

impl Value for u64 {
    fn value(self) -> u64 {
        self
    }
}

impl Value for usize {
    fn value(self) -> u64 {
        self as u64
    }
}

impl Value for *mut c_void {
    fn value(self) -> u64 {
        self as usize as u64
    }
}

/// Whether an enum's type is signed (C: `int`, else `unsigned int`).
trait Signed {
    const SIGNED: bool;
}

impl Signed for u32 {
    const SIGNED: bool = false;
}

impl Signed for i32 {
    const SIGNED: bool = true;
}

/// One C expression and our value for it; probed only against a header
/// containing `needs`, when set.
#[derive(Default)]
struct Rows {
    rows: Vec<Row>,
    /// What the rows being added need (inside `newer`).
    needs: Option<&'static str>,
}

impl Rows {
    fn push(&mut self, c: impl Into<String>, ours: u64) {
        self.rows.push(Row {
            c: c.into(),
            ours,
            needs: self.needs,
        });
    }

    /// Rows for something rdma-core added after v44, declared by `text`.
    fn newer(&mut self, text: &'static str, add: impl FnOnce(&mut Self)) {
        let outer = self.needs.replace(text);
        add(self);
        self.needs = outer;
    }

    fn size<T>(&mut self, tag: &str) {
        self.push(format!("sizeof({tag})"), size_of::<T>() as u64);
        self.push(format!("_Alignof({tag})"), align_of::<T>() as u64);
    }

    /// For a struct that grew after v44: no bigger in any header than ours.
    fn no_bigger<T>(&mut self, tag: &str) {
        self.push(format!("sizeof({tag}) <= {}", size_of::<T>()), 1);
    }

    fn offset(&mut self, tag: &str, path: &str, ours: usize) {
        self.push(format!("offsetof({tag}, {path})"), ours as u64);
    }

    /// Whether `tag`'s member `path` has the C type of our `F`.
    fn ty<S, F: CType>(&mut self, tag: &str, path: &str, _field: impl Fn(&S) -> *const F) {
        if let Some(c) = F::c() {
            self.push(
                format!("__builtin_types_compatible_p(__typeof__((({tag} *)0)->{path}), {c})"),
                1,
            );
        }
    }

    /// A `struct verbs_context` op: its distance before `context`, and its
    /// type.
    fn before_context<F: CType>(
        &mut self,
        op: &str,
        ours: usize,
        field: impl Fn(&verbs_context) -> *const F,
    ) {
        let c = "offsetof(struct verbs_context, context)";
        self.push(
            format!("{c} - offsetof(struct verbs_context, {op})"),
            (offset_of!(verbs_context, context) - ours) as u64,
        );
        self.ty("struct verbs_context", op, field);
    }

    /// Whether `tag`'s member `path` is of C type `c` (where our Rust
    /// type's spelling is not C's: `__be64` is `unsigned long long`,
    /// `uint64_t` `unsigned long`).
    fn ty_c(&mut self, tag: &str, path: &str, c: &str) {
        self.push(
            format!("__builtin_types_compatible_p(__typeof__((({tag} *)0)->{path}), {c})"),
            1,
        );
    }
}

/// C's `struct X` (or `union X`) for our type `X`.
fn tag(name: &str) -> String {
    if name == "ibv_gid" {
        format!("union {name}")
    } else {
        format!("struct {name}")
    }
}

/// A C member's name: ours without `r#`.
fn member(name: &str) -> &str {
    name.trim_start_matches("r#")
}

/// `sizeof` and `_Alignof` of each type.
macro_rules! sizes {
    ($r:ident; $($t:ident),* $(,)?) => {{
        $($r.size::<$t>(&tag(stringify!($t)));)*
    }};
}

/// Offset and type of each field, named as in C.
macro_rules! fields {
    ($r:ident; $t:ident { $($f:ident),* $(,)? }) => {{
        $(
            $r.offset(&tag(stringify!($t)), member(stringify!($f)), offset_of!($t, $f));
            $r.ty(&tag(stringify!($t)), member(stringify!($f)), |s: &$t| &raw const s.$f);
        )*
    }};
}

/// Offset and type of each field of one of our types for an anonymous C
/// member of `$outer` at `$base` in it: C reaches them as `$prefix f`.
macro_rules! anonymous {
    ($r:ident, $outer:literal, $prefix:literal, $base:expr; $t:ident { $($f:ident),* $(,)? }) => {{
        let base: usize = $base;
        $(
            let path = format!("{}{}", $prefix, member(stringify!($f)));
            $r.offset($outer, &path, base + offset_of!($t, $f));
            $r.ty($outer, &path, |s: &$t| &raw const s.$f);
        )*
    }};
}

/// Each constant's value.
macro_rules! values {
    ($r:ident; $($k:ident),* $(,)?) => {{
        $($r.push(stringify!($k), $k.value());)*
    }};
}

/// Each enum type's size and signedness.
macro_rules! enums {
    ($r:ident; $($t:ident),* $(,)?) => {{
        $(
            $r.push(concat!("sizeof(enum ", stringify!($t), ")"), size_of::<$t>() as u64);
            $r.push(
                concat!("((enum ", stringify!($t), ")-1 < 0)"),
                u64::from(<$t as Signed>::SIGNED),
            );
        )*
    }};
}

/// `struct verbs_context`'s ops, as distances before `context` (and types).
macro_rules! before_context {
    ($r:ident; $($f:ident),* $(,)?) => {{
        $(
            $r.before_context(
                member(stringify!($f)),
                offset_of!(verbs_context, $f),
                |s: &verbs_context| &raw const s.$f,
            );
        )*
    }};
}

fn rows() -> Vec<Row> {
    let mut r = Rows::default();
    structs(&mut r);
    verbs_context_rows(&mut r);
    constants(&mut r);
    r.rows
}

fn structs(r: &mut Rows) {
    sizes!(
        r;
        ibv_gid, ibv_gid_entry, ibv_alloc_dm_attr, ibv_dm, ibv_device_attr,
        ibv_query_device_ex_input, ibv_odp_caps, ibv_tso_caps, ibv_rss_caps, ibv_packet_pacing_caps,
        ibv_tm_caps, ibv_cq_moderation_caps, ibv_pci_atomic_caps, ibv_device_attr_ex,
        ibv_async_event, ibv_wc, ibv_mw_bind_info, ibv_pd, ibv_td_init_attr, ibv_td,
        ibv_xrcd_init_attr, ibv_xrcd, ibv_mr, ibv_mw, ibv_global_route, ibv_grh, ibv_ah_attr,
        ibv_srq_attr, ibv_srq_init_attr, ibv_tm_cap, ibv_srq_init_attr_ex, ibv_wq_init_attr,
        ibv_wq_attr, ibv_rwq_ind_table, ibv_rwq_ind_table_init_attr, ibv_qp_cap, ibv_qp_init_attr,
        ibv_rx_hash_conf, ibv_qp_init_attr_ex, ibv_qp_open_attr, ibv_qp_attr,
        ibv_qp_rate_limit_attr, ibv_data_buf, ibv_sge, ibv_send_wr, ibv_recv_wr, ibv_ops_wr,
        ibv_mw_bind, ibv_srq, ibv_wq, ibv_qp, ibv_ece, ibv_comp_channel, ibv_cq, ibv_poll_cq_attr,
        ibv_wc_tm_info, ibv_cq_ex, ibv_moderate_cq, ibv_modify_cq_attr, ibv_ah, ibv_flow_attr,
        ibv_flow, ibv_flow_action, ibv_flow_action_esp_attr, _ibv_device_ops, ibv_device,
        ibv_context_ops, ibv_context, ibv_cq_init_attr_ex, ibv_parent_domain_init_attr,
        ibv_counters_init_attr, ibv_counters, ibv_counter_attach_attr, ibv_values_ex,
    );
    // union ibv_gid: `raw` is all of ours; `global` is the same bytes.
    fields!(r; ibv_gid { raw });
    r.push("offsetof(union ibv_gid, global.subnet_prefix)", 0);
    r.push("offsetof(union ibv_gid, global.interface_id)", 8);
    r.push(
        "sizeof(((union ibv_gid *)0)->global)",
        size_of::<ibv_gid>() as u64,
    );
    fields!(r; ibv_gid_entry { gid, gid_index, port_num, gid_type, ndev_ifindex });
    fields!(r; ibv_alloc_dm_attr { length, log_align_req, comp_mask });
    fields!(r; ibv_dm { context, memcpy_to_dm, memcpy_from_dm, comp_mask, handle });
    fields!(r; ibv_device_attr {
        fw_ver, max_mr_size, page_size_cap, vendor_id, vendor_part_id, hw_ver, max_qp, max_qp_wr,
        device_cap_flags, max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom,
        max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap,
        max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp,
        max_mcast_qp_attach, max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq,
        max_srq_wr, max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt,
    });
    let dev = "struct ibv_device_attr";
    r.offset(dev, "node_guid", offset_of!(ibv_device_attr, node_guid));
    r.ty_c(dev, "node_guid", "__be64");
    r.offset(
        dev,
        "sys_image_guid",
        offset_of!(ibv_device_attr, sys_image_guid),
    );
    r.ty_c(dev, "sys_image_guid", "__be64");
    fields!(r; ibv_query_device_ex_input { comp_mask });
    fields!(r; ibv_odp_caps { general_caps, per_transport_caps });
    r.push(
        "sizeof(((struct ibv_odp_caps *)0)->per_transport_caps)",
        size_of::<ibv_odp_caps_per_transport_caps>() as u64,
    );
    let at = offset_of!(ibv_odp_caps, per_transport_caps);
    anonymous!(
        r, "struct ibv_odp_caps", "per_transport_caps.", at;
        ibv_odp_caps_per_transport_caps { rc_odp_caps, uc_odp_caps, ud_odp_caps }
    );
    fields!(r; ibv_tso_caps { max_tso, supported_qpts });
    fields!(r; ibv_rss_caps {
        supported_qpts, max_rwq_indirection_tables, max_rwq_indirection_table_size,
        rx_hash_fields_mask, rx_hash_function,
    });
    fields!(r; ibv_packet_pacing_caps { qp_rate_limit_min, qp_rate_limit_max, supported_qpts });
    fields!(r; ibv_tm_caps { max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge });
    fields!(r; ibv_cq_moderation_caps { max_cq_count, max_cq_period });
    fields!(r; ibv_pci_atomic_caps { fetch_add, swap, compare_swap });
    fields!(r; ibv_device_attr_ex {
        orig_attr, comp_mask, odp_caps, completion_timestamp_mask, hca_core_clock,
        device_cap_flags_ex, tso_caps, rss_caps, max_wq_type_rq, packet_pacing_caps,
        raw_packet_caps, tm_caps, cq_mod_caps, max_dm_size, pci_atomic_caps, xrc_odp_caps,
        phys_port_cnt_ex,
    });

    r.no_bigger::<ibv_port_attr>("struct ibv_port_attr");
    fields!(r; ibv_port_attr {
        state, max_mtu, active_mtu, gid_tbl_len, port_cap_flags, max_msg_sz, bad_pkey_cntr,
        qkey_viol_cntr, pkey_tbl_len, lid, sm_lid, lmc, max_vl_num, sm_sl, subnet_timeout,
        init_type_reply, active_width, active_speed, phys_state, link_layer, flags, port_cap_flags2,
    });
    r.newer("active_speed_ex;", |r| {
        sizes!(r; ibv_port_attr);
        fields!(r; ibv_port_attr { active_speed_ex });
    });
    // libibverbs' _compat_ibv_port_attr (verbs.c; opaque in verbs.h) is
    // ibv_port_attr before port_cap_flags2.
    r.push(
        "offsetof(struct ibv_port_attr, port_cap_flags2)",
        COMPAT_PORT_ATTR_LEN as u64,
    );
    anonymous!(
        r, "struct ibv_port_attr", "", 0;
        _compat_ibv_port_attr {
            state, max_mtu, active_mtu, gid_tbl_len, port_cap_flags, max_msg_sz, bad_pkey_cntr,
            qkey_viol_cntr, pkey_tbl_len, lid, sm_lid, lmc, max_vl_num, sm_sl, subnet_timeout,
            init_type_reply, active_width, active_speed, phys_state, link_layer, flags,
        }
    );

    fields!(r; ibv_async_event { element, event_type });
    r.push(
        "sizeof(((struct ibv_async_event *)0)->element)",
        size_of::<ibv_async_event_element>() as u64,
    );
    anonymous!(
        r, "struct ibv_async_event", "element.", offset_of!(ibv_async_event, element);
        ibv_async_event_element { cq, qp, srq, wq, port_num }
    );

    fields!(r; ibv_wc {
        wr_id, status, opcode, vendor_err, byte_len, qp_num, src_qp, wc_flags, pkey_index, slid, sl,
        dlid_path_bits,
    });
    r.push(
        "sizeof(((struct ibv_wc *)0)->imm_data)",
        size_of::<ibv_wc_imm>() as u64,
    );
    anonymous!(
        r, "struct ibv_wc", "", offset_of!(ibv_wc, imm_data_invalidated_rkey);
        ibv_wc_imm { imm_data, invalidated_rkey }
    );

    fields!(r; ibv_mw_bind_info { mr, addr, length, mw_access_flags });
    fields!(r; ibv_pd { context, handle });
    fields!(r; ibv_td_init_attr { comp_mask });
    fields!(r; ibv_td { context });
    fields!(r; ibv_xrcd_init_attr { comp_mask, fd, oflags });
    fields!(r; ibv_xrcd { context });
    fields!(r; ibv_mr { context, pd, addr, length, handle, lkey, rkey });
    fields!(r; ibv_mw { context, pd, rkey, handle, r#type });
    fields!(r; ibv_global_route { dgid, flow_label, sgid_index, hop_limit, traffic_class });
    fields!(r; ibv_grh { version_tclass_flow, paylen, next_hdr, hop_limit, sgid, dgid });
    fields!(r; ibv_ah_attr { grh, dlid, sl, src_path_bits, static_rate, is_global, port_num });
    fields!(r; ibv_srq_attr { max_wr, max_sge, srq_limit });
    fields!(r; ibv_srq_init_attr { srq_context, attr });
    fields!(r; ibv_tm_cap { max_num_tags, max_ops });
    fields!(r; ibv_srq_init_attr_ex {
        srq_context, attr, comp_mask, srq_type, pd, xrcd, cq, tm_cap,
    });
    fields!(r; ibv_wq_init_attr {
        wq_context, wq_type, max_wr, max_sge, pd, cq, comp_mask, create_flags,
    });
    fields!(r; ibv_wq_attr { attr_mask, wq_state, curr_wq_state, flags, flags_mask });
    fields!(r; ibv_rwq_ind_table { context, ind_tbl_handle, ind_tbl_num, comp_mask });
    fields!(r; ibv_rwq_ind_table_init_attr { log_ind_tbl_size, ind_tbl, comp_mask });
    fields!(r; ibv_qp_cap {
        max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data,
    });
    fields!(r; ibv_qp_init_attr { qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all });
    fields!(r; ibv_rx_hash_conf {
        rx_hash_function, rx_hash_key_len, rx_hash_key, rx_hash_fields_mask,
    });
    fields!(r; ibv_qp_init_attr_ex {
        qp_context, send_cq, recv_cq, srq, cap, qp_type, sq_sig_all, comp_mask, pd, xrcd,
        create_flags, max_tso_header, rwq_ind_tbl, rx_hash_conf, source_qpn, send_ops_flags,
    });
    fields!(r; ibv_qp_open_attr { comp_mask, qp_num, xrcd, qp_context, qp_type });
    fields!(r; ibv_qp_attr {
        qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn, dest_qp_num,
        qp_access_flags, cap, ah_attr, alt_ah_attr, pkey_index, alt_pkey_index, en_sqd_async_notify,
        sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt,
        rnr_retry, alt_port_num, alt_timeout, rate_limit,
    });
    fields!(r; ibv_qp_rate_limit_attr { rate_limit, max_burst_sz, typical_pkt_sz, comp_mask });
    fields!(r; ibv_data_buf { addr, length });
    fields!(r; ibv_sge { addr, length, lkey });

    fields!(r; ibv_send_wr { wr_id, next, sg_list, num_sge, opcode, send_flags, wr, qp_type });
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->imm_data)",
        size_of::<ibv_send_wr_imm>() as u64,
    );
    anonymous!(
        r, "struct ibv_send_wr", "", offset_of!(ibv_send_wr, imm_data_invalidated_rkey);
        ibv_send_wr_imm { imm_data, invalidate_rkey }
    );
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->wr)",
        size_of::<ibv_send_wr_wr>() as u64,
    );
    let at = offset_of!(ibv_send_wr, wr);
    anonymous!(r, "struct ibv_send_wr", "wr.", at; ibv_send_wr_wr { rdma, atomic, ud });
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->wr.rdma)",
        size_of::<ibv_send_wr_rdma>() as u64,
    );
    anonymous!(
        r, "struct ibv_send_wr", "wr.rdma.", at + offset_of!(ibv_send_wr_wr, rdma);
        ibv_send_wr_rdma { remote_addr, rkey }
    );
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->wr.atomic)",
        size_of::<ibv_send_wr_atomic>() as u64,
    );
    anonymous!(
        r, "struct ibv_send_wr", "wr.atomic.", at + offset_of!(ibv_send_wr_wr, atomic);
        ibv_send_wr_atomic { remote_addr, compare_add, swap, rkey }
    );
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->wr.ud)",
        size_of::<ibv_send_wr_ud>() as u64,
    );
    anonymous!(
        r, "struct ibv_send_wr", "wr.ud.", at + offset_of!(ibv_send_wr_wr, ud);
        ibv_send_wr_ud { ah, remote_qpn, remote_qkey }
    );
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->qp_type)",
        size_of::<ibv_send_wr_qp_type>() as u64,
    );
    let at = offset_of!(ibv_send_wr, qp_type);
    anonymous!(r, "struct ibv_send_wr", "qp_type.", at; ibv_send_wr_qp_type { xrc });
    anonymous!(
        r, "struct ibv_send_wr", "qp_type.xrc.", at + offset_of!(ibv_send_wr_qp_type, xrc);
        ibv_send_wr_xrc { remote_srqn }
    );
    // The last union runs to the struct's end.
    r.push(
        "sizeof(struct ibv_send_wr) - offsetof(struct ibv_send_wr, bind_mw)",
        size_of::<ibv_send_wr_bind_mw_tso>() as u64,
    );
    let at = offset_of!(ibv_send_wr, bind_mw_tso);
    anonymous!(r, "struct ibv_send_wr", "", at; ibv_send_wr_bind_mw_tso { bind_mw, tso });
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->bind_mw)",
        size_of::<ibv_send_wr_bind_mw>() as u64,
    );
    anonymous!(
        r, "struct ibv_send_wr", "bind_mw.", at + offset_of!(ibv_send_wr_bind_mw_tso, bind_mw);
        ibv_send_wr_bind_mw { mw, rkey, bind_info }
    );
    r.push(
        "sizeof(((struct ibv_send_wr *)0)->tso)",
        size_of::<ibv_send_wr_tso>() as u64,
    );
    anonymous!(
        r, "struct ibv_send_wr", "tso.", at + offset_of!(ibv_send_wr_bind_mw_tso, tso);
        ibv_send_wr_tso { hdr, hdr_sz, mss }
    );

    fields!(r; ibv_recv_wr { wr_id, next, sg_list, num_sge });
    fields!(r; ibv_ops_wr { wr_id, next, opcode, flags, tm });
    r.push(
        "sizeof(((struct ibv_ops_wr *)0)->tm)",
        size_of::<ibv_ops_wr_tm>() as u64,
    );
    let at = offset_of!(ibv_ops_wr, tm);
    anonymous!(r, "struct ibv_ops_wr", "tm.", at; ibv_ops_wr_tm { unexpected_cnt, handle, add });
    r.push(
        "sizeof(((struct ibv_ops_wr *)0)->tm.add)",
        size_of::<ibv_ops_wr_tm_add>() as u64,
    );
    anonymous!(
        r, "struct ibv_ops_wr", "tm.add.", at + offset_of!(ibv_ops_wr_tm, add);
        ibv_ops_wr_tm_add { recv_wr_id, sg_list, num_sge, tag, mask }
    );
    fields!(r; ibv_mw_bind { wr_id, send_flags, bind_info });
    fields!(r; ibv_srq { context, srq_context, pd, handle, mutex, cond, events_completed });
    fields!(r; ibv_wq {
        context, wq_context, pd, cq, wq_num, handle, state, wq_type, post_recv, mutex, cond,
        events_completed, comp_mask,
    });
    fields!(r; ibv_qp {
        context, qp_context, pd, send_cq, recv_cq, srq, handle, qp_num, state, qp_type, mutex, cond,
        events_completed,
    });

    r.no_bigger::<ibv_qp_ex>("struct ibv_qp_ex");
    fields!(r; ibv_qp_ex {
        qp_base, comp_mask, wr_id, wr_flags, wr_atomic_cmp_swp, wr_atomic_fetch_add, wr_bind_mw,
        wr_local_inv, wr_rdma_read, wr_rdma_write, wr_rdma_write_imm, wr_send, wr_send_imm,
        wr_send_inv, wr_send_tso, wr_set_ud_addr, wr_set_xrc_srqn, wr_set_inline_data,
        wr_set_inline_data_list, wr_set_sge, wr_set_sge_list, wr_start, wr_complete, wr_abort,
        wr_atomic_write,
    });
    r.newer("(*wr_flush)", |r| {
        sizes!(r; ibv_qp_ex);
        fields!(r; ibv_qp_ex { wr_flush });
    });

    fields!(r; ibv_ece { vendor_id, options, comp_mask });
    fields!(r; ibv_comp_channel { context, fd, refcnt });
    fields!(r; ibv_cq {
        context, channel, cq_context, handle, cqe, mutex, cond, comp_events_completed,
        async_events_completed,
    });
    fields!(r; ibv_poll_cq_attr { comp_mask });
    fields!(r; ibv_wc_tm_info { tag, r#priv });
    fields!(r; ibv_cq_ex {
        context, channel, cq_context, handle, cqe, mutex, cond, comp_events_completed,
        async_events_completed, comp_mask, status, wr_id, start_poll, next_poll, end_poll,
        read_opcode, read_vendor_err, read_byte_len, read_imm_data, read_qp_num, read_src_qp,
        read_wc_flags, read_slid, read_sl, read_dlid_path_bits, read_completion_ts, read_cvlan,
        read_flow_tag, read_tm_info, read_completion_wallclock_ns,
    });
    fields!(r; ibv_moderate_cq { cq_count, cq_period });
    fields!(r; ibv_modify_cq_attr { attr_mask, moderate });
    fields!(r; ibv_ah { context, pd, handle });
    fields!(r; ibv_flow_attr { comp_mask, r#type, size, priority, num_of_specs, port, flags });
    fields!(r; ibv_flow { comp_mask, context, handle });
    fields!(r; ibv_flow_action { context });
    fields!(r; ibv_flow_action_esp_attr {
        esp_attr, keymat_proto, keymat_len, keymat_ptr, replay_proto, replay_len, replay_ptr,
        esp_encap, comp_mask, esn,
    });
    fields!(r; _ibv_device_ops { _dummy1, _dummy2 });
    fields!(r; ibv_device {
        _ops, node_type, transport_type, name, dev_name, dev_path, ibdev_path,
    });
    fields!(r; ibv_context_ops {
        _compat_query_device, _compat_query_port, _compat_alloc_pd, _compat_dealloc_pd,
        _compat_reg_mr, _compat_rereg_mr, _compat_dereg_mr, alloc_mw, bind_mw, dealloc_mw,
        _compat_create_cq, poll_cq, req_notify_cq, _compat_cq_event, _compat_resize_cq,
        _compat_destroy_cq, _compat_create_srq, _compat_modify_srq, _compat_query_srq,
        _compat_destroy_srq, post_srq_recv, _compat_create_qp, _compat_query_qp, _compat_modify_qp,
        _compat_destroy_qp, post_send, post_recv, _compat_create_ah, _compat_destroy_ah,
        _compat_attach_mcast, _compat_detach_mcast, _compat_async_event,
    });
    fields!(r; ibv_context { device, ops, cmd_fd, async_fd, num_comp_vectors, mutex, abi_compat });
    fields!(r; ibv_cq_init_attr_ex {
        cqe, cq_context, channel, comp_vector, wc_flags, comp_mask, flags, parent_domain,
    });
    fields!(r; ibv_parent_domain_init_attr { pd, td, comp_mask, alloc, free, pd_context });
    fields!(r; ibv_counters_init_attr { comp_mask });
    fields!(r; ibv_counters { context });
    fields!(r; ibv_counter_attach_attr { counter_desc, index, comp_mask });
    fields!(r; ibv_values_ex { comp_mask, raw_clock });

    // Structs rdma-core added after v44.
    r.newer("struct ibv_dmah {", |r| {
        sizes!(r; ibv_dmah);
        fields!(r; ibv_dmah { context });
    });
    r.newer("struct ibv_dmah_init_attr {", |r| {
        sizes!(r; ibv_dmah_init_attr);
        fields!(r; ibv_dmah_init_attr { comp_mask, cpu_id, ph, tph_mem_type });
    });
    r.newer("struct ibv_mr_init_attr {", |r| {
        r.no_bigger::<ibv_mr_init_attr>("struct ibv_mr_init_attr");
        fields!(r; ibv_mr_init_attr {
            length, access, comp_mask, iova, addr, fd, fd_offset, dmah,
        });
    });
    r.newer("struct ibv_buf *buf;", |r| {
        sizes!(r; ibv_mr_init_attr);
        fields!(r; ibv_mr_init_attr { buf });
    });
    r.newer("struct ibv_fd_arr {", |r| {
        sizes!(r; ibv_fd_arr);
        fields!(r; ibv_fd_arr { arr, count });
    });
    r.newer("struct ibv_comp_cntr_caps {", |r| {
        sizes!(r; ibv_comp_cntr_caps);
        fields!(r; ibv_comp_cntr_caps { max_value, max_counters, supported_qp_attach_ops });
    });
    r.newer("struct ibv_comp_cntr {", |r| {
        sizes!(r; ibv_comp_cntr);
        fields!(r; ibv_comp_cntr { context, handle });
    });
    r.newer("struct ibv_comp_cntr_init_attr {", |r| {
        sizes!(r; ibv_comp_cntr_init_attr);
        fields!(r; ibv_comp_cntr_init_attr { comp_mask, r#type, flags });
    });
    r.newer("struct ibv_qp_attach_comp_cntr_attr {", |r| {
        sizes!(r; ibv_qp_attach_comp_cntr_attr);
        fields!(r; ibv_qp_attach_comp_cntr_attr { comp_mask, op_mask });
    });
}

fn verbs_context_rows(r: &mut Rows) {
    r.no_bigger::<verbs_context>("struct verbs_context");
    // `sz` and `context` last, as verbs_get_ctx and verbs_get_ctx_op use
    // them (`sz` is among the ops below).
    r.ty("struct verbs_context", "context", |s: &verbs_context| {
        &raw const s.context
    });
    r.push(
        "sizeof(struct verbs_context) - offsetof(struct verbs_context, context)",
        (size_of::<verbs_context>() - offset_of!(verbs_context, context)) as u64,
    );
    before_context!(
        r;
        query_port, advise_mr, alloc_null_mr, read_counters, attach_counters_point_flow,
        create_counters, destroy_counters, reg_dm_mr, alloc_dm, free_dm, modify_flow_action_esp,
        destroy_flow_action, create_flow_action_esp, modify_qp_rate_limit, alloc_parent_domain,
        dealloc_td, alloc_td, modify_cq, post_srq_ops, destroy_rwq_ind_table, create_rwq_ind_table,
        destroy_wq, modify_wq, create_wq, query_rt_values, create_cq_ex, r#priv, query_device_ex,
        ibv_destroy_flow, ABI_placeholder2, ibv_create_flow, ABI_placeholder1, open_qp,
        create_qp_ex, get_srq_num, create_srq_ex, open_xrcd, close_xrcd, _ABI_placeholder3, sz,
    );
    // The ops added since, newest first: each is checked against a header
    // that has it (its distance from `context` does not depend on the ones
    // before it). The size is ours only in a header with them all.
    r.newer("(*alloc_dmah)", |r| before_context!(r; alloc_dmah));
    r.newer("(*dealloc_dmah)", |r| before_context!(r; dealloc_dmah));
    r.newer("(*reg_mr_ex)", |r| before_context!(r; reg_mr_ex));
    r.newer(
        "(*dm_export_dmabuf_fd)",
        |r| before_context!(r; dm_export_dmabuf_fd),
    );
    r.newer("(*alloc_buf)", |r| before_context!(r; alloc_buf));
    r.newer("(*free_buf)", |r| {
        before_context!(r; free_buf);
        sizes!(r; verbs_context);
        r.offset("struct verbs_context", "free_buf", 0);
    });
}

fn constants(r: &mut Rows) {
    enums!(
        r;
        ibv_gid_type, ibv_node_type, ibv_transport_type, ibv_device_cap_flags, ibv_fork_status,
        ibv_atomic_cap, ibv_dm_mask, ibv_odp_general_caps, ibv_odp_transport_cap_bits,
        ibv_rx_hash_function_flags, ibv_rx_hash_fields, ibv_raw_packet_caps, ibv_tm_cap_flags,
        ibv_pci_atomic_op_size, ibv_mtu, ibv_port_state, ibv_port_cap_flags, ibv_port_cap_flags2,
        ibv_event_type, ibv_wc_status, ibv_wc_opcode, ibv_create_cq_wc_flags, ibv_wc_flags,
        ibv_access_flags, ibv_xrcd_init_attr_mask, ibv_rereg_mr_flags, ibv_mw_type, ibv_rate,
        ibv_srq_attr_mask, ibv_srq_type, ibv_srq_init_attr_mask, ibv_wq_type, ibv_wq_init_attr_mask,
        ibv_wq_flags, ibv_wq_state, ibv_wq_attr_mask, ibv_ind_table_init_attr_mask, ibv_qp_type,
        ibv_qp_init_attr_mask, ibv_qp_create_flags, ibv_qp_create_send_ops_flags,
        ibv_qp_open_attr_mask, ibv_qp_attr_mask, ibv_qp_state, ibv_mig_state, ibv_wr_opcode,
        ibv_send_flags, ibv_ops_wr_opcode, ibv_ops_flags, ibv_cq_attr_mask, ibv_flow_flags,
        ibv_flow_attr_type, ibv_flow_spec_type, ibv_flow_action_esp_mask, ibv_cq_init_attr_mask,
        ibv_create_cq_attr_flags, ibv_parent_domain_init_attr_mask, ibv_counter_description,
        ibv_read_counters_flags, ibv_values_mask, ibv_rereg_mr_err_code, ibv_advise_mr_advice,
        ibv_flow_action_esp_keymat, ibv_flow_action_esp_keymat_aes_gcm_iv_algo,
        ibv_flow_action_esp_replay, ibv_flow_action_esp_flags,
    );
    values!(
        r;
        IBV_GID_TYPE_IB, IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2, IBV_NODE_UNKNOWN, IBV_NODE_CA,
        IBV_NODE_SWITCH, IBV_NODE_ROUTER, IBV_NODE_RNIC, IBV_NODE_USNIC, IBV_NODE_USNIC_UDP,
        IBV_NODE_UNSPECIFIED, IBV_TRANSPORT_UNKNOWN, IBV_TRANSPORT_IB, IBV_TRANSPORT_IWARP,
        IBV_TRANSPORT_USNIC, IBV_TRANSPORT_USNIC_UDP, IBV_TRANSPORT_UNSPECIFIED,
        IBV_DEVICE_RESIZE_MAX_WR, IBV_DEVICE_BAD_PKEY_CNTR, IBV_DEVICE_BAD_QKEY_CNTR,
        IBV_DEVICE_RAW_MULTI, IBV_DEVICE_AUTO_PATH_MIG, IBV_DEVICE_CHANGE_PHY_PORT,
        IBV_DEVICE_UD_AV_PORT_ENFORCE, IBV_DEVICE_CURR_QP_STATE_MOD, IBV_DEVICE_SHUTDOWN_PORT,
        IBV_DEVICE_INIT_TYPE, IBV_DEVICE_PORT_ACTIVE_EVENT, IBV_DEVICE_SYS_IMAGE_GUID,
        IBV_DEVICE_RC_RNR_NAK_GEN, IBV_DEVICE_SRQ_RESIZE, IBV_DEVICE_N_NOTIFY_CQ,
        IBV_DEVICE_MEM_WINDOW, IBV_DEVICE_UD_IP_CSUM, IBV_DEVICE_XRC, IBV_DEVICE_MEM_MGT_EXTENSIONS,
        IBV_DEVICE_MEM_WINDOW_TYPE_2A, IBV_DEVICE_MEM_WINDOW_TYPE_2B, IBV_DEVICE_RC_IP_CSUM,
        IBV_DEVICE_RAW_IP_CSUM, IBV_DEVICE_MANAGED_FLOW_STEERING, IBV_FORK_DISABLED,
        IBV_FORK_ENABLED, IBV_FORK_UNNEEDED, IBV_ATOMIC_NONE, IBV_ATOMIC_HCA, IBV_ATOMIC_GLOB,
        IBV_DM_MASK_HANDLE, IBV_ODP_SUPPORT, IBV_ODP_SUPPORT_IMPLICIT, IBV_ODP_SUPPORT_SEND,
        IBV_ODP_SUPPORT_RECV, IBV_ODP_SUPPORT_WRITE, IBV_ODP_SUPPORT_READ, IBV_ODP_SUPPORT_ATOMIC,
        IBV_ODP_SUPPORT_SRQ_RECV, IBV_RX_HASH_FUNC_TOEPLITZ, IBV_RX_HASH_SRC_IPV4,
        IBV_RX_HASH_DST_IPV4, IBV_RX_HASH_SRC_IPV6, IBV_RX_HASH_DST_IPV6, IBV_RX_HASH_SRC_PORT_TCP,
        IBV_RX_HASH_DST_PORT_TCP, IBV_RX_HASH_SRC_PORT_UDP, IBV_RX_HASH_DST_PORT_UDP,
        IBV_RX_HASH_IPSEC_SPI, IBV_RX_HASH_INNER, IBV_RAW_PACKET_CAP_CVLAN_STRIPPING,
        IBV_RAW_PACKET_CAP_SCATTER_FCS, IBV_RAW_PACKET_CAP_IP_CSUM, IBV_RAW_PACKET_CAP_DELAY_DROP,
        IBV_TM_CAP_RC, IBV_PCI_ATOMIC_OPERATION_4_BYTE_SIZE_SUP,
        IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP, IBV_PCI_ATOMIC_OPERATION_16_BYTE_SIZE_SUP,
        IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096, IBV_PORT_NOP,
        IBV_PORT_DOWN, IBV_PORT_INIT, IBV_PORT_ARMED, IBV_PORT_ACTIVE, IBV_PORT_ACTIVE_DEFER,
        IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_ETHERNET, IBV_PORT_SM,
        IBV_PORT_NOTICE_SUP, IBV_PORT_TRAP_SUP, IBV_PORT_OPT_IPD_SUP, IBV_PORT_AUTO_MIGR_SUP,
        IBV_PORT_SL_MAP_SUP, IBV_PORT_MKEY_NVRAM, IBV_PORT_PKEY_NVRAM, IBV_PORT_LED_INFO_SUP,
        IBV_PORT_SYS_IMAGE_GUID_SUP, IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP,
        IBV_PORT_EXTENDED_SPEEDS_SUP, IBV_PORT_CAP_MASK2_SUP, IBV_PORT_CM_SUP,
        IBV_PORT_SNMP_TUNNEL_SUP, IBV_PORT_REINIT_SUP, IBV_PORT_DEVICE_MGMT_SUP,
        IBV_PORT_VENDOR_CLASS_SUP, IBV_PORT_DR_NOTICE_SUP, IBV_PORT_CAP_MASK_NOTICE_SUP,
        IBV_PORT_BOOT_MGMT_SUP, IBV_PORT_LINK_LATENCY_SUP, IBV_PORT_CLIENT_REG_SUP,
        IBV_PORT_IP_BASED_GIDS, IBV_PORT_SET_NODE_DESC_SUP, IBV_PORT_INFO_EXT_SUP,
        IBV_PORT_VIRT_SUP, IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP, IBV_PORT_LINK_WIDTH_2X_SUP,
        IBV_PORT_LINK_SPEED_HDR_SUP, IBV_PORT_LINK_SPEED_NDR_SUP, IBV_EVENT_CQ_ERR,
        IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR, IBV_EVENT_COMM_EST,
        IBV_EVENT_SQ_DRAINED, IBV_EVENT_PATH_MIG, IBV_EVENT_PATH_MIG_ERR, IBV_EVENT_DEVICE_FATAL,
        IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR, IBV_EVENT_LID_CHANGE, IBV_EVENT_PKEY_CHANGE,
        IBV_EVENT_SM_CHANGE, IBV_EVENT_SRQ_ERR, IBV_EVENT_SRQ_LIMIT_REACHED,
        IBV_EVENT_QP_LAST_WQE_REACHED, IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE,
        IBV_EVENT_WQ_FATAL, IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR,
        IBV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_MW_BIND_ERR,
        IBV_WC_BAD_RESP_ERR, IBV_WC_LOC_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR,
        IBV_WC_REM_OP_ERR, IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_LOC_RDD_VIOL_ERR,
        IBV_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_ABORT_ERR, IBV_WC_INV_EECN_ERR,
        IBV_WC_INV_EEC_STATE_ERR, IBV_WC_FATAL_ERR, IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_GENERAL_ERR,
        IBV_WC_TM_ERR, IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
        IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD, IBV_WC_BIND_MW, IBV_WC_LOCAL_INV, IBV_WC_TSO,
        IBV_WC_ATOMIC_WRITE, IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_TM_ADD, IBV_WC_TM_DEL,
        IBV_WC_TM_SYNC, IBV_WC_TM_RECV, IBV_WC_TM_NO_TAG, IBV_WC_DRIVER1, IBV_WC_DRIVER2,
        IBV_WC_DRIVER3, IBV_WC_IP_CSUM_OK_SHIFT, IBV_WC_EX_WITH_BYTE_LEN, IBV_WC_EX_WITH_IMM,
        IBV_WC_EX_WITH_QP_NUM, IBV_WC_EX_WITH_SRC_QP, IBV_WC_EX_WITH_SLID, IBV_WC_EX_WITH_SL,
        IBV_WC_EX_WITH_DLID_PATH_BITS, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, IBV_WC_EX_WITH_CVLAN,
        IBV_WC_EX_WITH_FLOW_TAG, IBV_WC_EX_WITH_TM_INFO,
        IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, IBV_WC_STANDARD_FLAGS,
        IBV_CREATE_CQ_SUP_WC_FLAGS, IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_IP_CSUM_OK, IBV_WC_WITH_INV,
        IBV_WC_TM_SYNC_REQ, IBV_WC_TM_MATCH, IBV_WC_TM_DATA_VALID, IBV_ACCESS_LOCAL_WRITE,
        IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC,
        IBV_ACCESS_MW_BIND, IBV_ACCESS_ZERO_BASED, IBV_ACCESS_ON_DEMAND, IBV_ACCESS_HUGETLB,
        IBV_ACCESS_RELAXED_ORDERING, IBV_XRCD_INIT_ATTR_FD, IBV_XRCD_INIT_ATTR_OFLAGS,
        IBV_XRCD_INIT_ATTR_RESERVED, IBV_REREG_MR_CHANGE_TRANSLATION, IBV_REREG_MR_CHANGE_PD,
        IBV_REREG_MR_CHANGE_ACCESS, IBV_REREG_MR_FLAGS_SUPPORTED, IBV_MW_TYPE_1, IBV_MW_TYPE_2,
        IBV_RATE_MAX, IBV_RATE_2_5_GBPS, IBV_RATE_5_GBPS, IBV_RATE_10_GBPS, IBV_RATE_20_GBPS,
        IBV_RATE_30_GBPS, IBV_RATE_40_GBPS, IBV_RATE_60_GBPS, IBV_RATE_80_GBPS, IBV_RATE_120_GBPS,
        IBV_RATE_14_GBPS, IBV_RATE_56_GBPS, IBV_RATE_112_GBPS, IBV_RATE_168_GBPS, IBV_RATE_25_GBPS,
        IBV_RATE_100_GBPS, IBV_RATE_200_GBPS, IBV_RATE_300_GBPS, IBV_RATE_28_GBPS, IBV_RATE_50_GBPS,
        IBV_RATE_400_GBPS, IBV_RATE_600_GBPS, IBV_RATE_800_GBPS, IBV_RATE_1200_GBPS, IBV_SRQ_MAX_WR,
        IBV_SRQ_LIMIT, IBV_SRQT_BASIC, IBV_SRQT_XRC, IBV_SRQT_TM, IBV_SRQ_INIT_ATTR_TYPE,
        IBV_SRQ_INIT_ATTR_PD, IBV_SRQ_INIT_ATTR_XRCD, IBV_SRQ_INIT_ATTR_CQ, IBV_SRQ_INIT_ATTR_TM,
        IBV_SRQ_INIT_ATTR_RESERVED, IBV_WQT_RQ, IBV_WQ_INIT_ATTR_FLAGS, IBV_WQ_INIT_ATTR_RESERVED,
        IBV_WQ_FLAGS_CVLAN_STRIPPING, IBV_WQ_FLAGS_SCATTER_FCS, IBV_WQ_FLAGS_DELAY_DROP,
        IBV_WQ_FLAGS_PCI_WRITE_END_PADDING, IBV_WQ_FLAGS_RESERVED, IBV_WQS_RESET, IBV_WQS_RDY,
        IBV_WQS_ERR, IBV_WQS_UNKNOWN, IBV_WQ_ATTR_STATE, IBV_WQ_ATTR_CURR_STATE, IBV_WQ_ATTR_FLAGS,
        IBV_WQ_ATTR_RESERVED, IBV_CREATE_IND_TABLE_RESERVED, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
        IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV, IBV_QPT_DRIVER, IBV_QP_INIT_ATTR_PD,
        IBV_QP_INIT_ATTR_XRCD, IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_INIT_ATTR_MAX_TSO_HEADER,
        IBV_QP_INIT_ATTR_IND_TABLE, IBV_QP_INIT_ATTR_RX_HASH, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, IBV_QP_CREATE_SCATTER_FCS, IBV_QP_CREATE_CVLAN_STRIPPING,
        IBV_QP_CREATE_SOURCE_QPN, IBV_QP_CREATE_PCI_WRITE_END_PADDING, IBV_QP_EX_WITH_RDMA_WRITE,
        IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_QP_EX_WITH_SEND, IBV_QP_EX_WITH_SEND_WITH_IMM,
        IBV_QP_EX_WITH_RDMA_READ, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
        IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_LOCAL_INV, IBV_QP_EX_WITH_BIND_MW,
        IBV_QP_EX_WITH_SEND_WITH_INV, IBV_QP_EX_WITH_TSO, IBV_QP_EX_WITH_ATOMIC_WRITE,
        IBV_QP_OPEN_ATTR_NUM, IBV_QP_OPEN_ATTR_XRCD, IBV_QP_OPEN_ATTR_CONTEXT,
        IBV_QP_OPEN_ATTR_TYPE, IBV_QP_OPEN_ATTR_RESERVED, IBV_QP_STATE, IBV_QP_CUR_STATE,
        IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_ACCESS_FLAGS, IBV_QP_PKEY_INDEX, IBV_QP_PORT,
        IBV_QP_QKEY, IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
        IBV_QP_RQ_PSN, IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_ALT_PATH, IBV_QP_MIN_RNR_TIMER,
        IBV_QP_SQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_PATH_MIG_STATE, IBV_QP_CAP,
        IBV_QP_DEST_QPN, IBV_QP_RATE_LIMIT, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
        IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR, IBV_QPS_UNKNOWN, IBV_MIG_MIGRATED, IBV_MIG_REARM,
        IBV_MIG_ARMED, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
        IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
        IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV,
        IBV_WR_TSO, IBV_WR_DRIVER1, IBV_WR_ATOMIC_WRITE, IBV_SEND_FENCE, IBV_SEND_SIGNALED,
        IBV_SEND_SOLICITED, IBV_SEND_INLINE, IBV_SEND_IP_CSUM, IBV_WR_TAG_ADD, IBV_WR_TAG_DEL,
        IBV_WR_TAG_SYNC, IBV_OPS_SIGNALED, IBV_OPS_TM_SYNC, IBV_CQ_ATTR_MODERATE,
        IBV_CQ_ATTR_RESERVED, IBV_FLOW_ATTR_FLAGS_DONT_TRAP, IBV_FLOW_ATTR_FLAGS_EGRESS,
        IBV_FLOW_ATTR_NORMAL, IBV_FLOW_ATTR_ALL_DEFAULT, IBV_FLOW_ATTR_MC_DEFAULT,
        IBV_FLOW_ATTR_SNIFFER, IBV_FLOW_SPEC_ETH, IBV_FLOW_SPEC_IPV4, IBV_FLOW_SPEC_IPV6,
        IBV_FLOW_SPEC_IPV4_EXT, IBV_FLOW_SPEC_ESP, IBV_FLOW_SPEC_TCP, IBV_FLOW_SPEC_UDP,
        IBV_FLOW_SPEC_VXLAN_TUNNEL, IBV_FLOW_SPEC_GRE, IBV_FLOW_SPEC_MPLS, IBV_FLOW_SPEC_INNER,
        IBV_FLOW_SPEC_ACTION_TAG, IBV_FLOW_SPEC_ACTION_DROP, IBV_FLOW_SPEC_ACTION_HANDLE,
        IBV_FLOW_SPEC_ACTION_COUNT, IBV_FLOW_ACTION_ESP_MASK_ESN, IBV_SYSFS_NAME_MAX,
        IBV_SYSFS_PATH_MAX, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CQ_INIT_ATTR_MASK_PD,
        IBV_CREATE_CQ_ATTR_SINGLE_THREADED, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
        IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS, IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
        IBV_COUNTER_PACKETS, IBV_COUNTER_BYTES, IBV_READ_COUNTERS_ATTR_PREFER_CACHED,
        IBV_VALUES_MASK_RAW_CLOCK, IBV_VALUES_MASK_RESERVED, IBV_REREG_MR_ERR_INPUT,
        IBV_REREG_MR_ERR_DONT_FORK_NEW, IBV_REREG_MR_ERR_DO_FORK_OLD, IBV_REREG_MR_ERR_CMD,
        IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW, IBV_DEVICE_RAW_SCATTER_FCS,
        IBV_DEVICE_PCI_WRITE_END_PADDING, ETHERNET_LL_SIZE, IB_ROCE_UDP_ENCAP_VALID_PORT_MIN,
        IB_ROCE_UDP_ENCAP_VALID_PORT_MAX, IB_GRH_FLOWLABEL_MASK, IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM,
        IBV_FLOW_ACTION_IV_ALGO_SEQ, IBV_FLOW_ACTION_ESP_REPLAY_NONE,
        IBV_FLOW_ACTION_ESP_REPLAY_BMP, IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO,
        IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD, IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL,
        IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT, IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT,
        IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT, IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW,
        IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
        IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, IBV_ADVISE_MR_FLAG_FLUSH, IBV_QPF_GRH_REQUIRED,
        IBV_ACCESS_OPTIONAL_RANGE, IBV_ACCESS_OPTIONAL_FIRST, __VERBS_ABI_IS_EXTENDED,
        IBV_ALLOCATOR_USE_DEFAULT,
    );
    // Enum types and constants added after v44, each probed where declared.
    r.newer("ibv_mr_init_attr_mask", |r| {
        enums!(r; ibv_mr_init_attr_mask);
    });
    r.newer("ibv_query_qp_data_in_order_flags", |r| {
        enums!(r; ibv_query_qp_data_in_order_flags);
    });
    r.newer("ibv_query_qp_data_in_order_caps", |r| {
        enums!(r; ibv_query_qp_data_in_order_caps);
    });
    r.newer("ibv_placement_type", |r| {
        enums!(r; ibv_placement_type);
    });
    r.newer("ibv_selectivity_level", |r| {
        enums!(r; ibv_selectivity_level);
    });
    r.newer("ibv_qp_attach_comp_cntr_op", |r| {
        enums!(r; ibv_qp_attach_comp_cntr_op);
    });
    r.newer("ibv_comp_cntr_type", |r| {
        enums!(r; ibv_comp_cntr_type);
    });
    r.newer("ibv_tph_mem_type", |r| {
        enums!(r; ibv_tph_mem_type);
    });
    r.newer("ibv_dmah_init_attr_mask", |r| {
        enums!(r; ibv_dmah_init_attr_mask);
    });
    r.newer(
        "IBV_ODP_SUPPORT_FLUSH",
        |r| values!(r; IBV_ODP_SUPPORT_FLUSH),
    );
    r.newer(
        "IBV_ODP_SUPPORT_ATOMIC_WRITE",
        |r| values!(r; IBV_ODP_SUPPORT_ATOMIC_WRITE),
    );
    r.newer(
        "IBV_PORT_LINK_SPEED_XDR_SUP",
        |r| values!(r; IBV_PORT_LINK_SPEED_XDR_SUP),
    );
    r.newer(
        "IBV_EVENT_DEVICE_SPEED_CHANGE",
        |r| values!(r; IBV_EVENT_DEVICE_SPEED_CHANGE),
    );
    r.newer("IBV_WC_FLUSH", |r| values!(r; IBV_WC_FLUSH));
    r.newer(
        "IBV_ACCESS_FLUSH_GLOBAL",
        |r| values!(r; IBV_ACCESS_FLUSH_GLOBAL),
    );
    r.newer(
        "IBV_ACCESS_FLUSH_PERSISTENT",
        |r| values!(r; IBV_ACCESS_FLUSH_PERSISTENT),
    );
    r.newer("IBV_REG_MR_MASK_IOVA", |r| values!(r; IBV_REG_MR_MASK_IOVA));
    r.newer("IBV_REG_MR_MASK_ADDR", |r| values!(r; IBV_REG_MR_MASK_ADDR));
    r.newer("IBV_REG_MR_MASK_FD", |r| values!(r; IBV_REG_MR_MASK_FD));
    r.newer(
        "IBV_REG_MR_MASK_FD_OFFSET",
        |r| values!(r; IBV_REG_MR_MASK_FD_OFFSET),
    );
    r.newer("IBV_REG_MR_MASK_DMAH", |r| values!(r; IBV_REG_MR_MASK_DMAH));
    r.newer("IBV_REG_MR_MASK_BUF", |r| values!(r; IBV_REG_MR_MASK_BUF));
    r.newer("IBV_QP_EX_WITH_FLUSH", |r| values!(r; IBV_QP_EX_WITH_FLUSH));
    r.newer(
        "IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS",
        |r| values!(r; IBV_QUERY_QP_DATA_IN_ORDER_RETURN_CAPS),
    );
    r.newer(
        "IBV_QUERY_QP_DATA_IN_ORDER_DEVICE_ONLY",
        |r| values!(r; IBV_QUERY_QP_DATA_IN_ORDER_DEVICE_ONLY),
    );
    r.newer(
        "IBV_QUERY_QP_DATA_IN_ORDER_WHOLE_MSG",
        |r| values!(r; IBV_QUERY_QP_DATA_IN_ORDER_WHOLE_MSG),
    );
    r.newer(
        "IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES",
        |r| values!(r; IBV_QUERY_QP_DATA_IN_ORDER_ALIGNED_128_BYTES),
    );
    r.newer("IBV_WR_FLUSH", |r| values!(r; IBV_WR_FLUSH));
    r.newer("IBV_FLUSH_GLOBAL", |r| values!(r; IBV_FLUSH_GLOBAL));
    r.newer("IBV_FLUSH_PERSISTENT", |r| values!(r; IBV_FLUSH_PERSISTENT));
    r.newer("IBV_FLUSH_RANGE", |r| values!(r; IBV_FLUSH_RANGE));
    r.newer("IBV_FLUSH_MR", |r| values!(r; IBV_FLUSH_MR));
    r.newer(
        "IBV_QP_ATTACH_COMP_CNTR_OP_SEND",
        |r| values!(r; IBV_QP_ATTACH_COMP_CNTR_OP_SEND),
    );
    r.newer(
        "IBV_QP_ATTACH_COMP_CNTR_OP_RECV",
        |r| values!(r; IBV_QP_ATTACH_COMP_CNTR_OP_RECV),
    );
    r.newer(
        "IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ",
        |r| values!(r; IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ),
    );
    r.newer(
        "IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ",
        |r| values!(r; IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ),
    );
    r.newer(
        "IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE",
        |r| values!(r; IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE),
    );
    r.newer(
        "IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE",
        |r| values!(r; IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE),
    );
    r.newer(
        "IBV_COMP_CNTR_TYPE_WRS",
        |r| values!(r; IBV_COMP_CNTR_TYPE_WRS),
    );
    r.newer(
        "IBV_COMP_CNTR_TYPE_BYTES",
        |r| values!(r; IBV_COMP_CNTR_TYPE_BYTES),
    );
    r.newer(
        "IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC",
        |r| values!(r; IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC),
    );
    r.newer("IBV_TPH_MEM_TYPE_VM", |r| values!(r; IBV_TPH_MEM_TYPE_VM));
    r.newer("IBV_TPH_MEM_TYPE_PM", |r| values!(r; IBV_TPH_MEM_TYPE_PM));
    r.newer(
        "IBV_DMAH_INIT_ATTR_MASK_CPU_ID",
        |r| values!(r; IBV_DMAH_INIT_ATTR_MASK_CPU_ID),
    );
    r.newer(
        "IBV_DMAH_INIT_ATTR_MASK_PH",
        |r| values!(r; IBV_DMAH_INIT_ATTR_MASK_PH),
    );
    r.newer(
        "IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE",
        |r| values!(r; IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE),
    );
    r.newer(
        "IBV_DEVICE_CC_DMA_BOUNCE",
        |r| values!(r; IBV_DEVICE_CC_DMA_BOUNCE),
    );
}

/// The text of the header files whose declarations the rows look for.
/// Probes every row against the headers under `root`.
fn probe(name: &str, root: &Path) {
    let headers = [
        "infiniband/verbs.h",
        "infiniband/verbs_api.h",
        "infiniband/ib_user_ioctl_verbs.h",
    ];
    common::probe(name, root, &headers, &["infiniband/verbs.h"], rows());
}

#[test]
fn layouts_are_the_hosts_rdma_core() {
    let root = Path::new("/usr/include");
    if !root.join("infiniband/verbs.h").exists() {
        assert_ne!(
            std::env::var("ERNIC_REQUIRE_VERBS_HEADERS").as_deref(),
            Ok("1"),
            "ERNIC_REQUIRE_VERBS_HEADERS=1 but there is no /usr/include/infiniband/verbs.h"
        );
        println!("skipped: no /usr/include/infiniband/verbs.h (apt-get install libibverbs-dev)");
        return;
    }
    probe("host", root);
}

#[test]
fn layouts_are_the_sid_guests_rdma_core() {
    let root = Path::new("/var/cache/ernic-vm/sid/usr/include");
    if !root.join("infiniband/verbs.h").exists() {
        assert_ne!(
            std::env::var("ERNIC_REQUIRE_SID_VERBS").as_deref(),
            Ok("1"),
            "ERNIC_REQUIRE_SID_VERBS=1 but {} has no infiniband/verbs.h (vm/verbs-tools.sh)",
            root.display()
        );
        println!(
            "skipped: no {}/infiniband/verbs.h (vm/verbs-tools.sh installs it)",
            root.display()
        );
        return;
    }
    probe("sid", root);
}

#[test]
fn layouts_are_those_of_ernic_verbs_headers() {
    let Some(dirs) = std::env::var_os("ERNIC_VERBS_HEADERS") else {
        return;
    };
    for (i, root) in std::env::split_paths(&dirs).enumerate() {
        let root: PathBuf = root;
        assert!(
            root.join("infiniband/verbs.h").exists(),
            "ERNIC_VERBS_HEADERS names {}, which has no infiniband/verbs.h",
            root.display()
        );
        probe(&format!("extra{i}"), &root);
    }
}

/// What verbs.h's `verbs_get_ctx` relies on, whatever the header.
#[test]
fn verbs_context_ends_with_sz_and_context() {
    let end = offset_of!(verbs_context, context);
    assert_eq!(end + size_of::<ibv_context>(), size_of::<verbs_context>());
    assert_eq!(offset_of!(verbs_context, sz) + size_of::<usize>(), end);
    assert_eq!(COMPAT_PORT_ATTR_LEN, 48);
}
