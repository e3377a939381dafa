//! Every struct, field and constant of `cma_abi.rs` against librdmacm's
//! own headers (`<rdma/rdma_cma.h>`, `<rdma/rdma_verbs.h>`,
//! `<rdma/rsocket.h>`, `<infiniband/sa.h>`, `<infiniband/ib.h>`), as
//! `tests/layout.rs` does for `abi.rs`: a C probe built against the headers
//! prints `sizeof`, `_Alignof`, `offsetof` and the constants' values, and
//! whether each field's type is compatible (`__builtin_types_compatible_p`)
//! with the C spelling of ours; each must equal our value.
//!
//! Headers probed:
//! - /usr/include, always: the host's rdma-core (44 on Debian bookworm).
//!   Without its rdma/rdma_cma.h the test prints one line and passes,
//!   unless ERNIC_REQUIRE_VERBS_HEADERS=1.
//! - /var/cache/ernic-vm/sid/usr/include when it has rdma/rdma_cma.h: the
//!   sid guest's rdma-core (65). Without it the test prints one line and
//!   passes, unless ERNIC_REQUIRE_SID_VERBS=1.
//! - each directory in ERNIC_VERBS_HEADERS (colon-separated) that has
//!   rdma/rdma_cma.h (the others are named in one line each).
//!
//! cma_abi.rs has rdma-core 65's layout. A row for something rdma-core
//! added after v44 carries the header text that declares it (a field's
//! declarator, a constant's name), and is probed only against a header that
//! contains that text. Nothing librdmacm added moved or grew a struct, so
//! every size is checked in every header.
//!
//! The helpers are tests/layout.rs's (tests share no code without a common
//! module; these are the ones these rows use).

use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};

mod common;

use common::Row;
use ibverbs::abi::{
    ibv_ah_attr, ibv_comp_channel, ibv_context, ibv_cq, ibv_gid, ibv_pd, ibv_qp, ibv_srq,
};
use ibverbs::cma_abi::*;
use libc::{c_void, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage};

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
    i32 => "int", i8 => "char", usize => "size_t", c_void => "void",
    ibv_gid => "union ibv_gid", sockaddr => "struct sockaddr",
    sockaddr_in => "struct sockaddr_in", sockaddr_in6 => "struct sockaddr_in6",
    sockaddr_storage => "struct sockaddr_storage",
);

macro_rules! c_struct {
    ($($t:ident),* $(,)?) => {
        c_name!($($t => concat!("struct ", stringify!($t))),*);
    };
}

c_struct!(
    ibv_context,
    ibv_qp,
    ibv_pd,
    ibv_cq,
    ibv_comp_channel,
    ibv_srq,
    ibv_ah_attr,
    ib_addr,
    sockaddr_ib,
    ibv_sa_path_rec,
    ibv_sa_mcmember_rec,
    ibv_sa_service_rec,
    ibv_path_record,
    ibv_path_data,
    rdma_ib_addr,
    rdma_addr,
    rdma_route,
    rdma_event_channel,
    rdma_cm_id,
    rdma_conn_param,
    rdma_ud_param,
    rdma_cm_event,
    rdma_addrinfo,
    rdma_cm_join_mc_attr_ex,
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
    ib_addr_ib_u,
    rdma_addr_src,
    rdma_addr_dst,
    rdma_addr_addr,
    rdma_cm_event_param,
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

/// Whether an enum's type is signed (C: `int`, else `unsigned int`).
trait Signed {
    const SIGNED: bool;
}

impl Signed for u32 {
    const SIGNED: bool = false;
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

    /// Whether `tag`'s member `path` is of C type `c` (where our Rust
    /// type's spelling is not C's: `__be64` and `__u64` are `unsigned long
    /// long`, `uint64_t` `unsigned long`).
    fn ty_c(&mut self, tag: &str, path: &str, c: &str) {
        self.push(
            format!("__builtin_types_compatible_p(__typeof__((({tag} *)0)->{path}), {c})"),
            1,
        );
    }

    /// A member whose C type is spelled `c` (see `ty_c`): its offset, its
    /// type, and that our field is as big.
    fn field_c<S, F>(
        &mut self,
        tag: &str,
        path: &str,
        ours: usize,
        c: &str,
        _field: impl Fn(&S) -> *const F,
    ) {
        self.offset(tag, path, ours);
        self.ty_c(tag, path, c);
        self.push(
            format!("sizeof((({tag} *)0)->{path})"),
            size_of::<F>() as u64,
        );
    }
}

/// C's `struct X` for our type `X` (none of ours is a tagged union).
fn tag(name: &str) -> String {
    format!("struct {name}")
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
            $r.offset(&tag(stringify!($t)), stringify!($f), offset_of!($t, $f));
            $r.ty(&tag(stringify!($t)), stringify!($f), |s: &$t| &raw const s.$f);
        )*
    }};
}

/// Offset, type and size of each field whose C type we spell as given
/// (see `Rows::ty_c`).
macro_rules! fields_c {
    ($r:ident; $t:ident { $($f:ident: $c:literal),* $(,)? }) => {{
        $(
            $r.field_c(
                &tag(stringify!($t)),
                stringify!($f),
                offset_of!($t, $f),
                $c,
                |s: &$t| &raw const s.$f,
            );
        )*
    }};
}

/// Offset and type of each field of one of our types for an anonymous C
/// member of `$outer` at `$base` in it: C reaches them as `$prefix f`.
macro_rules! anonymous {
    ($r:ident, $outer:literal, $prefix:literal, $base:expr; $t:ident { $($f:ident),* $(,)? }) => {{
        let base: usize = $base;
        $(
            let path = format!("{}{}", $prefix, stringify!($f));
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

fn rows() -> Vec<Row> {
    let mut r = Rows::default();
    ib_h(&mut r);
    sa_h(&mut r);
    rdma_cma_h(&mut r);
    constants(&mut r);
    r.rows
}

/// <infiniband/ib.h>'s `struct ib_addr` and `struct sockaddr_ib`.
fn ib_h(r: &mut Rows) {
    sizes!(r; ib_addr, sockaddr_ib);
    fields!(r; ib_addr { ib_u });
    r.push(
        "sizeof(((struct ib_addr *)0)->ib_u)",
        size_of::<ib_addr_ib_u>() as u64,
    );
    let at = offset_of!(ib_addr, ib_u);
    anonymous!(
        r, "struct ib_addr", "ib_u.", at;
        ib_addr_ib_u { uib_addr8, uib_addr16, uib_addr32 }
    );
    r.field_c(
        "struct ib_addr",
        "ib_u.uib_addr64",
        at + offset_of!(ib_addr_ib_u, uib_addr64),
        "__be64[2]",
        |s: &ib_addr_ib_u| &raw const s.uib_addr64,
    );
    // ib.h's names for the union's views.
    r.offset("struct ib_addr", "sib_raw", at);
    r.offset("struct ib_addr", "sib_subnet_prefix", at);
    r.offset("struct ib_addr", "sib_interface_id", at + 8);

    let sib = "struct sockaddr_ib";
    fields!(r; sockaddr_ib { sib_family, sib_pkey, sib_flowinfo, sib_addr });
    r.ty_c(sib, "sib_family", "unsigned short int");
    fields_c!(r; sockaddr_ib {
        sib_sid: "__be64", sib_sid_mask: "__be64", sib_scope_id: "__u64",
    });
    // It fits where rdma_addr keeps AF_IB addresses.
    r.push(
        "sizeof(struct sockaddr_ib) <= sizeof(((struct rdma_addr *)0)->src_storage)",
        1,
    );
}

/// <infiniband/sa.h>'s records.
fn sa_h(r: &mut Rows) {
    sizes!(
        r;
        ibv_sa_path_rec, ibv_sa_mcmember_rec, ibv_sa_service_rec, ibv_path_record, ibv_path_data,
    );
    fields!(r; ibv_sa_path_rec {
        dgid, sgid, dlid, slid, raw_traffic, flow_label, hop_limit, traffic_class, reversible,
        numb_path, pkey, sl, mtu_selector, mtu, rate_selector, rate, packet_life_time_selector,
        packet_life_time, preference,
    });
    fields!(r; ibv_sa_mcmember_rec {
        mgid, port_gid, qkey, mlid, mtu_selector, mtu, traffic_class, pkey, rate_selector, rate,
        packet_life_time_selector, packet_life_time, sl, flow_label, hop_limit, scope, join_state,
        proxy_join,
    });
    fields!(r; ibv_sa_service_rec {
        id, gid, pkey, lease, key, name, data8, data16, data32, data64,
    });
    fields!(r; ibv_path_record {
        dgid, sgid, dlid, slid, flowlabel_hoplimit, tclass, reversible_numpath, pkey, qosclass_sl,
        mtu, rate, packetlifetime, preference, reserved,
    });
    fields_c!(r; ibv_path_record { service_id: "__be64" });
    fields!(r; ibv_path_data { flags, reserved, path });
}

/// <rdma/rdma_cma.h>'s structs.
fn rdma_cma_h(r: &mut Rows) {
    sizes!(
        r;
        rdma_ib_addr, rdma_addr, rdma_route, rdma_event_channel, rdma_cm_id, rdma_conn_param,
        rdma_ud_param, rdma_cm_event, rdma_addrinfo, rdma_cm_join_mc_attr_ex,
    );
    fields!(r; rdma_ib_addr { sgid, dgid, pkey });

    // rdma_addr: two anonymous unions, then `addr`.
    let ra = "struct rdma_addr";
    r.push(
        "offsetof(struct rdma_addr, dst_addr) - offsetof(struct rdma_addr, src_addr)",
        size_of::<rdma_addr_src>() as u64,
    );
    anonymous!(
        r, "struct rdma_addr", "", offset_of!(rdma_addr, src);
        rdma_addr_src { src_addr, src_sin, src_sin6, src_storage }
    );
    r.push(
        "offsetof(struct rdma_addr, addr) - offsetof(struct rdma_addr, dst_addr)",
        size_of::<rdma_addr_dst>() as u64,
    );
    anonymous!(
        r, "struct rdma_addr", "", offset_of!(rdma_addr, dst);
        rdma_addr_dst { dst_addr, dst_sin, dst_sin6, dst_storage }
    );
    fields!(r; rdma_addr { addr });
    r.push(
        "sizeof(((struct rdma_addr *)0)->addr)",
        size_of::<rdma_addr_addr>() as u64,
    );
    anonymous!(
        r, "struct rdma_addr", "addr.", offset_of!(rdma_addr, addr);
        rdma_addr_addr { ibaddr }
    );
    // rdma_get_local_addr and rdma_get_peer_addr (inline) return these.
    r.offset(ra, "src_addr", offset_of!(rdma_addr, src));
    r.offset(ra, "dst_addr", offset_of!(rdma_addr, dst));

    fields!(r; rdma_route { addr, path_rec, num_paths });
    fields!(r; rdma_event_channel { fd });
    fields!(r; rdma_cm_id {
        verbs, channel, context, qp, route, ps, port_num, event, send_cq_channel, send_cq,
        recv_cq_channel, recv_cq, srq, pd, qp_type,
    });
    // The members of the members programs reach into.
    r.offset(
        "struct rdma_cm_id",
        "route.addr.src_addr",
        offset_of!(rdma_cm_id, route) + offset_of!(rdma_route, addr),
    );
    r.offset(
        "struct rdma_cm_id",
        "route.addr.addr.ibaddr.sgid",
        offset_of!(rdma_cm_id, route)
            + offset_of!(rdma_route, addr)
            + offset_of!(rdma_addr, addr)
            + offset_of!(rdma_ib_addr, sgid),
    );
    fields!(r; rdma_conn_param {
        private_data, private_data_len, responder_resources, initiator_depth, flow_control,
        retry_count, rnr_retry_count, srq, qp_num,
    });
    fields!(r; rdma_ud_param { private_data, private_data_len, ah_attr, qp_num, qkey });

    fields!(r; rdma_cm_event { id, listen_id, event, status, param });
    r.push(
        "sizeof(((struct rdma_cm_event *)0)->param)",
        size_of::<rdma_cm_event_param>() as u64,
    );
    let at = offset_of!(rdma_cm_event, param);
    anonymous!(
        r, "struct rdma_cm_event", "param.", at;
        rdma_cm_event_param { conn, ud }
    );
    r.newer("uint64_t arg;", |r| {
        anonymous!(
            r, "struct rdma_cm_event", "param.", at;
            rdma_cm_event_param { arg }
        );
    });

    fields!(r; rdma_addrinfo {
        ai_flags, ai_family, ai_qp_type, ai_port_space, ai_src_len, ai_dst_len, ai_src_addr,
        ai_dst_addr, ai_src_canonname, ai_dst_canonname, ai_route_len, ai_route, ai_connect_len,
        ai_connect, ai_next,
    });
    r.ty_c("struct rdma_addrinfo", "ai_src_len", "socklen_t");
    r.ty_c("struct rdma_addrinfo", "ai_dst_len", "socklen_t");
    fields!(r; rdma_cm_join_mc_attr_ex { comp_mask, join_flags, addr });
}

fn constants(r: &mut Rows) {
    enums!(
        r;
        rdma_cm_event_type, rdma_port_space, rdma_cm_join_mc_attr_mask, rdma_cm_mc_join_flags,
    );
    values!(
        r;
        AF_IB, PF_IB, IBV_PATH_RECORD_REVERSIBLE, IBV_PATH_FLAG_GMP, IBV_PATH_FLAG_PRIMARY,
        IBV_PATH_FLAG_ALTERNATE, IBV_PATH_FLAG_OUTBOUND, IBV_PATH_FLAG_INBOUND,
        IBV_PATH_FLAG_INBOUND_REVERSE, IBV_PATH_FLAG_BIDIRECTIONAL, RDMA_CM_EVENT_ADDR_RESOLVED,
        RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_RESOLVED, RDMA_CM_EVENT_ROUTE_ERROR,
        RDMA_CM_EVENT_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_RESPONSE, RDMA_CM_EVENT_CONNECT_ERROR,
        RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_REJECTED, RDMA_CM_EVENT_ESTABLISHED,
        RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_DEVICE_REMOVAL, RDMA_CM_EVENT_MULTICAST_JOIN,
        RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_ADDR_CHANGE, RDMA_CM_EVENT_TIMEWAIT_EXIT,
        RDMA_PS_IPOIB, RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB, RDMA_CM_JOIN_MC_ATTR_ADDRESS,
        RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS, RDMA_CM_JOIN_MC_ATTR_RESERVED,
        RDMA_MC_JOIN_FLAG_FULLMEMBER, RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
        RDMA_MC_JOIN_FLAG_RESERVED, RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH, RDMA_OPTION_ID,
        RDMA_OPTION_IB, RDMA_OPTION_ID_TOS, RDMA_OPTION_ID_REUSEADDR, RDMA_OPTION_ID_AFONLY,
        RDMA_OPTION_ID_ACK_TIMEOUT, RDMA_OPTION_IB_PATH, RDMA_IB_IP_PS_MASK, RDMA_IB_IP_PORT_MASK,
        RDMA_IB_IP_PS_TCP, RDMA_IB_IP_PS_UDP, RDMA_IB_PS_IB, RDMA_UDP_QKEY, RAI_PASSIVE,
        RAI_NUMERICHOST, RAI_NOROUTE, RAI_FAMILY, SOL_RDMA, RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE,
        RDMA_IOMAPSIZE, RDMA_ROUTE,
    );
    // Each #define's and enum member's C type, where it is not the enum's:
    // a #define of `int`s or of a `ULL` literal.
    for k in [
        "AF_IB",
        "IBV_PATH_RECORD_REVERSIBLE",
        "IBV_PATH_FLAG_BIDIRECTIONAL",
        "RDMA_UDP_QKEY",
        "RAI_PASSIVE",
        "SOL_RDMA",
    ] {
        r.push(
            format!("__builtin_types_compatible_p(__typeof__({k}), int)"),
            1,
        );
    }
    r.push(
        "__builtin_types_compatible_p(__typeof__(RDMA_IB_IP_PS_MASK), unsigned long long)",
        1,
    );
    r.newer(
        "RDMA_CM_EVENT_ADDRINFO_RESOLVED",
        |r| values!(r; RDMA_CM_EVENT_ADDRINFO_RESOLVED),
    );
    r.newer(
        "RDMA_CM_EVENT_ADDRINFO_ERROR",
        |r| values!(r; RDMA_CM_EVENT_ADDRINFO_ERROR),
    );
    r.newer("RDMA_CM_EVENT_USER", |r| values!(r; RDMA_CM_EVENT_USER));
    r.newer(
        "RDMA_CM_EVENT_INTERNAL",
        |r| values!(r; RDMA_CM_EVENT_INTERNAL),
    );
    r.newer("RAI_SA", |r| values!(r; RAI_SA));
    r.newer("RAI_DNS", |r| values!(r; RAI_DNS));
}

/// The header files the probe includes (and whose text the rows' `needs`
/// are looked for in), under the include root.
const HEADERS: [&str; 5] = [
    "rdma/rdma_cma.h",
    "rdma/rdma_verbs.h",
    "rdma/rsocket.h",
    "infiniband/sa.h",
    "infiniband/ib.h",
];

/// Probes every row against the headers under `root`.
fn probe(name: &str, root: &Path) {
    common::probe(name, root, &HEADERS, &HEADERS, rows());
}

#[test]
fn cma_layouts_are_the_hosts_rdma_core() {
    let root = Path::new("/usr/include");
    if !root.join("rdma/rdma_cma.h").exists() {
        assert_ne!(
            std::env::var("ERNIC_REQUIRE_VERBS_HEADERS").as_deref(),
            Ok("1"),
            "ERNIC_REQUIRE_VERBS_HEADERS=1 but there is no /usr/include/rdma/rdma_cma.h"
        );
        println!("skipped: no /usr/include/rdma/rdma_cma.h (apt-get install librdmacm-dev)");
        return;
    }
    probe("host", root);
}

#[test]
fn cma_layouts_are_the_sid_guests_rdma_core() {
    let root = Path::new("/var/cache/ernic-vm/sid/usr/include");
    if !root.join("rdma/rdma_cma.h").exists() {
        assert_ne!(
            std::env::var("ERNIC_REQUIRE_SID_VERBS").as_deref(),
            Ok("1"),
            "ERNIC_REQUIRE_SID_VERBS=1 but {} has no rdma/rdma_cma.h (vm/verbs-tools.sh)",
            root.display()
        );
        println!(
            "skipped: no {}/rdma/rdma_cma.h (vm/verbs-tools.sh installs it)",
            root.display()
        );
        return;
    }
    probe("sid", root);
}

#[test]
fn cma_layouts_are_those_of_ernic_verbs_headers() {
    let Some(dirs) = std::env::var_os("ERNIC_VERBS_HEADERS") else {
        return;
    };
    for (i, root) in std::env::split_paths(&dirs).enumerate() {
        let root: PathBuf = root;
        if root.join("rdma/rdma_cma.h").exists() {
            probe(&format!("extra{i}"), &root);
        } else {
            println!("skipped: {} has no rdma/rdma_cma.h", root.display());
        }
    }
}
