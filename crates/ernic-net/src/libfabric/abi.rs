//! `#[repr(C)]` mirrors of the parts of libfabric's stable ABI the provider
//! uses, laid out as the public headers (`rdma/fabric.h`, `fi_domain.h`,
//! `fi_endpoint.h`, `fi_cm.h`, `fi_rma.h`, `fi_eq.h`, `fi_errno.h`) of
//! libfabric 1.17 define them. libfabric keeps its ABI by appending: later
//! versions add fields at the ends of these structs and ops at the ends of
//! the op vectors, so a prefix read here stays valid.
//!
//! Field names are the headers' own, so the layout test can name them in
//! C. Function slots the provider never calls are `*const c_void`: they
//! only hold their place.
//!
//! Flag values are taken from the headers, not from seed 000 (whose
//! numbers came from one build; see DESIGN.md §8).

#![allow(non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

pub type fi_addr_t = u64;
type Slot = *const c_void;

// fi_info capability and operation flags (fabric.h).
pub const FI_MSG: u64 = 1 << 1;
pub const FI_RMA: u64 = 1 << 2;
pub const FI_READ: u64 = 1 << 8;
pub const FI_WRITE: u64 = 1 << 9;
pub const FI_RECV: u64 = 1 << 10;
pub const FI_SEND: u64 = 1 << 11;
pub const FI_TRANSMIT: u64 = FI_SEND;
pub const FI_REMOTE_READ: u64 = 1 << 12;
pub const FI_REMOTE_WRITE: u64 = 1 << 13;
pub const FI_REMOTE_CQ_DATA: u64 = 1 << 17;

// Memory registration modes (fabric.h).
pub const FI_MR_LOCAL: c_int = 1 << 2;
pub const FI_MR_VIRT_ADDR: c_int = 1 << 4;
pub const FI_MR_ALLOCATED: c_int = 1 << 5;
pub const FI_MR_PROV_KEY: c_int = 1 << 6;
pub const FI_MR_ENDPOINT: c_int = 1 << 9;

/// `fi_info.addr_format`: a NUL-terminated string address.
pub const FI_ADDR_STR: u32 = 9;
pub const FI_EP_RDM: u32 = 3;
pub const FI_THREAD_DOMAIN: u32 = 3;
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;
pub const FI_CQ_FORMAT_DATA: u32 = 3;
pub const FI_WAIT_NONE: u32 = 0;
pub const FI_AV_UNSPEC: u32 = 0;
/// `fi_control` command: enable an endpoint.
pub const FI_ENABLE: c_int = 6;

// Errors (fi_errno.h): negative in return values.
pub const FI_EAGAIN: isize = libc::EAGAIN as isize;
pub const FI_EAVAIL: isize = 259;

#[repr(C)]
pub struct fi_tx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub inject_size: usize,
    pub size: usize,
    pub iov_limit: usize,
    pub rma_iov_limit: usize,
    pub tclass: u32,
}

#[repr(C)]
pub struct fi_rx_attr {
    pub caps: u64,
    pub mode: u64,
    pub op_flags: u64,
    pub msg_order: u64,
    pub comp_order: u64,
    pub total_buffered_recv: usize,
    pub size: usize,
    pub iov_limit: usize,
}

#[repr(C)]
pub struct fi_ep_attr {
    pub r#type: u32,
    pub protocol: u32,
    pub protocol_version: u32,
    pub max_msg_size: usize,
    pub msg_prefix_size: usize,
    pub max_order_raw_size: usize,
    pub max_order_war_size: usize,
    pub max_order_waw_size: usize,
    pub mem_tag_format: u64,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub auth_key_size: usize,
    pub auth_key: *mut u8,
}

#[repr(C)]
pub struct fi_domain_attr {
    pub domain: *mut fid_domain,
    pub name: *mut c_char,
    pub threading: u32,
    pub control_progress: u32,
    pub data_progress: u32,
    pub resource_mgmt: u32,
    pub av_type: u32,
    pub mr_mode: c_int,
    pub mr_key_size: usize,
    pub cq_data_size: usize,
    pub cq_cnt: usize,
    pub ep_cnt: usize,
    pub tx_ctx_cnt: usize,
    pub rx_ctx_cnt: usize,
    pub max_ep_tx_ctx: usize,
    pub max_ep_rx_ctx: usize,
    pub max_ep_stx_ctx: usize,
    pub max_ep_srx_ctx: usize,
    pub cntr_cnt: usize,
    pub mr_iov_limit: usize,
    pub caps: u64,
    pub mode: u64,
    pub auth_key: *mut u8,
    pub auth_key_size: usize,
    pub max_err_data: usize,
    pub mr_cnt: usize,
    pub tclass: u32,
}

#[repr(C)]
pub struct fi_fabric_attr {
    pub fabric: *mut fid_fabric,
    pub name: *mut c_char,
    pub prov_name: *mut c_char,
    pub prov_version: u32,
    pub api_version: u32,
}

#[repr(C)]
pub struct fi_info {
    pub next: *mut fi_info,
    pub caps: u64,
    pub mode: u64,
    pub addr_format: u32,
    pub src_addrlen: usize,
    pub dest_addrlen: usize,
    pub src_addr: *mut c_void,
    pub dest_addr: *mut c_void,
    pub handle: *mut fid,
    pub tx_attr: *mut fi_tx_attr,
    pub rx_attr: *mut fi_rx_attr,
    pub ep_attr: *mut fi_ep_attr,
    pub domain_attr: *mut fi_domain_attr,
    pub fabric_attr: *mut fi_fabric_attr,
    pub nic: *mut c_void,
}

#[repr(C)]
pub struct fi_ops {
    pub size: usize,
    pub close: unsafe extern "C" fn(*mut fid) -> c_int,
    pub bind: unsafe extern "C" fn(*mut fid, *mut fid, u64) -> c_int,
    pub control: unsafe extern "C" fn(*mut fid, c_int, *mut c_void) -> c_int,
    pub ops_open: Slot,
    pub tostr: Slot,
    pub ops_set: Slot,
}

#[repr(C)]
pub struct fid {
    pub fclass: usize,
    pub context: *mut c_void,
    pub ops: *mut fi_ops,
}

#[repr(C)]
pub struct fi_ops_fabric {
    pub size: usize,
    pub domain: unsafe extern "C" fn(
        *mut fid_fabric,
        *mut fi_info,
        *mut *mut fid_domain,
        *mut c_void,
    ) -> c_int,
    pub passive_ep: Slot,
    pub eq_open: Slot,
    pub wait_open: Slot,
    pub trywait: Slot,
    pub domain2: Slot,
}

#[repr(C)]
pub struct fid_fabric {
    pub fid: fid,
    pub ops: *mut fi_ops_fabric,
    pub api_version: u32,
}

#[repr(C)]
pub struct fi_av_attr {
    pub r#type: u32,
    pub rx_ctx_bits: c_int,
    pub count: usize,
    pub ep_per_node: usize,
    pub name: *const c_char,
    pub map_addr: *mut c_void,
    pub flags: u64,
}

#[repr(C)]
pub struct fi_cq_attr {
    pub size: usize,
    pub flags: u64,
    pub format: u32,
    pub wait_obj: u32,
    pub signaling_vector: c_int,
    pub wait_cond: u32,
    pub wait_set: *mut c_void,
}

#[repr(C)]
pub struct fi_ops_domain {
    pub size: usize,
    pub av_open: unsafe extern "C" fn(
        *mut fid_domain,
        *mut fi_av_attr,
        *mut *mut fid_av,
        *mut c_void,
    ) -> c_int,
    pub cq_open: unsafe extern "C" fn(
        *mut fid_domain,
        *mut fi_cq_attr,
        *mut *mut fid_cq,
        *mut c_void,
    ) -> c_int,
    pub endpoint:
        unsafe extern "C" fn(*mut fid_domain, *mut fi_info, *mut *mut fid_ep, *mut c_void) -> c_int,
    pub scalable_ep: Slot,
    pub cntr_open: Slot,
    pub poll_open: Slot,
    pub stx_ctx: Slot,
    pub srx_ctx: Slot,
    pub query_atomic: Slot,
    pub query_collective: Slot,
    pub endpoint2: Slot,
}

#[repr(C)]
pub struct fi_ops_mr {
    pub size: usize,
    #[allow(clippy::type_complexity)]
    pub reg: unsafe extern "C" fn(
        *mut fid,
        *const c_void,
        usize,
        u64,
        u64,
        u64,
        u64,
        *mut *mut fid_mr,
        *mut c_void,
    ) -> c_int,
    pub regv: Slot,
    pub regattr: Slot,
}

#[repr(C)]
pub struct fid_domain {
    pub fid: fid,
    pub ops: *mut fi_ops_domain,
    pub mr: *mut fi_ops_mr,
}

#[repr(C)]
pub struct fid_mr {
    pub fid: fid,
    pub mem_desc: *mut c_void,
    pub key: u64,
}

#[repr(C)]
pub struct fi_ops_av {
    pub size: usize,
    pub insert: unsafe extern "C" fn(
        *mut fid_av,
        *const c_void,
        usize,
        *mut fi_addr_t,
        u64,
        *mut c_void,
    ) -> c_int,
    pub insertsvc: Slot,
    pub insertsym: Slot,
    pub remove: Slot,
    pub lookup: Slot,
    pub straddr: Slot,
    pub av_set: Slot,
}

#[repr(C)]
pub struct fid_av {
    pub fid: fid,
    pub ops: *mut fi_ops_av,
}

#[repr(C)]
pub struct fi_cq_data_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
}

#[repr(C)]
pub struct fi_cq_err_entry {
    pub op_context: *mut c_void,
    pub flags: u64,
    pub len: usize,
    pub buf: *mut c_void,
    pub data: u64,
    pub tag: u64,
    pub olen: usize,
    pub err: c_int,
    pub prov_errno: c_int,
    pub err_data: *mut c_void,
    pub err_data_size: usize,
}

#[repr(C)]
pub struct fi_ops_cq {
    pub size: usize,
    pub read: unsafe extern "C" fn(*mut fid_cq, *mut c_void, usize) -> isize,
    pub readfrom: Slot,
    pub readerr: unsafe extern "C" fn(*mut fid_cq, *mut fi_cq_err_entry, u64) -> isize,
    pub sread: Slot,
    pub sreadfrom: Slot,
    pub signal: Slot,
    pub strerror: Slot,
}

#[repr(C)]
pub struct fid_cq {
    pub fid: fid,
    pub ops: *mut fi_ops_cq,
}

#[repr(C)]
pub struct fi_ops_cm {
    pub size: usize,
    pub setname: Slot,
    pub getname: unsafe extern "C" fn(*mut fid, *mut c_void, *mut usize) -> c_int,
    pub getpeer: Slot,
    pub connect: Slot,
    pub listen: Slot,
    pub accept: Slot,
    pub reject: Slot,
    pub shutdown: Slot,
    pub join: Slot,
}

#[repr(C)]
pub struct fi_ops_msg {
    pub size: usize,
    pub recv: unsafe extern "C" fn(
        *mut fid_ep,
        *mut c_void,
        usize,
        *mut c_void,
        fi_addr_t,
        *mut c_void,
    ) -> isize,
    pub recvv: Slot,
    pub recvmsg: Slot,
    pub send: Slot,
    pub sendv: Slot,
    pub sendmsg: Slot,
    pub inject: Slot,
    pub senddata: unsafe extern "C" fn(
        *mut fid_ep,
        *const c_void,
        usize,
        *mut c_void,
        u64,
        fi_addr_t,
        *mut c_void,
    ) -> isize,
    pub injectdata: Slot,
}

#[repr(C)]
pub struct fi_ops_rma {
    pub size: usize,
    pub read: Slot,
    pub readv: Slot,
    pub readmsg: Slot,
    pub write: Slot,
    pub writev: Slot,
    pub writemsg: Slot,
    pub inject: Slot,
    #[allow(clippy::type_complexity)]
    pub writedata: unsafe extern "C" fn(
        *mut fid_ep,
        *const c_void,
        usize,
        *mut c_void,
        u64,
        fi_addr_t,
        u64,
        u64,
        *mut c_void,
    ) -> isize,
    pub injectdata: Slot,
}

#[repr(C)]
pub struct fid_ep {
    pub fid: fid,
    pub ops: *mut c_void,
    pub cm: *mut fi_ops_cm,
    pub msg: *mut fi_ops_msg,
    pub rma: *mut fi_ops_rma,
    pub tagged: *mut c_void,
    pub atomic: *mut c_void,
    pub collective: *mut c_void,
}

/// Every (struct, field, offset) and (struct, size) the provider relies on,
/// for the test that compares them with the installed headers.
#[cfg(test)]
pub fn layout() -> Vec<(String, usize)> {
    use std::mem::{offset_of, size_of};
    let mut v = Vec::new();
    macro_rules! rec {
        ($($t:ident { $($f:ident),* })*) => {$(
            v.push((format!("sizeof(struct {})", stringify!($t)), size_of::<$t>()));
            $(v.push((
                format!("offsetof(struct {}, {})", stringify!($t), stringify!($f)),
                offset_of!($t, $f),
            ));)*
        )*};
    }
    rec! {
        fi_tx_attr { caps, mode, op_flags, msg_order, comp_order, inject_size, size, iov_limit, rma_iov_limit, tclass }
        fi_rx_attr { caps, mode, op_flags, msg_order, comp_order, total_buffered_recv, size, iov_limit }
        fi_ep_attr { protocol, protocol_version, max_msg_size, msg_prefix_size, mem_tag_format, tx_ctx_cnt, rx_ctx_cnt, auth_key_size, auth_key }
        fi_domain_attr { domain, name, threading, control_progress, data_progress, resource_mgmt, av_type, mr_mode, mr_key_size, cq_data_size, cq_cnt, ep_cnt, mr_iov_limit, caps, mode, auth_key, auth_key_size, max_err_data, mr_cnt, tclass }
        fi_fabric_attr { fabric, name, prov_name, prov_version, api_version }
        fi_info { next, caps, mode, addr_format, src_addrlen, dest_addrlen, src_addr, dest_addr, handle, tx_attr, rx_attr, ep_attr, domain_attr, fabric_attr, nic }
        fid { fclass, context, ops }
        fi_ops { size, close, bind, control, ops_open, tostr, ops_set }
        fi_ops_fabric { size, domain, passive_ep, eq_open, wait_open, trywait, domain2 }
        fid_fabric { fid, ops, api_version }
        fi_av_attr { rx_ctx_bits, count, ep_per_node, name, map_addr, flags }
        fi_cq_attr { size, flags, format, wait_obj, signaling_vector, wait_cond, wait_set }
        fi_ops_domain { size, av_open, cq_open, endpoint, scalable_ep, cntr_open, poll_open, stx_ctx, srx_ctx, query_atomic, query_collective, endpoint2 }
        fi_ops_mr { size, reg, regv, regattr }
        fid_domain { fid, ops, mr }
        fid_mr { fid, mem_desc, key }
        fi_ops_av { size, insert, insertsvc, insertsym, remove, lookup, straddr, av_set }
        fid_av { fid, ops }
        fi_cq_data_entry { op_context, flags, len, buf, data }
        fi_cq_err_entry { op_context, flags, len, buf, data, tag, olen, err, prov_errno, err_data, err_data_size }
        fi_ops_cq { size, read, readfrom, readerr, sread, sreadfrom, signal, strerror }
        fid_cq { fid, ops }
        fi_ops_cm { size, setname, getname, getpeer, connect, listen, accept, reject, shutdown, join }
        fi_ops_msg { size, recv, recvv, recvmsg, send, sendv, sendmsg, inject, senddata, injectdata }
        fi_ops_rma { size, read, readv, readmsg, write, writev, writemsg, inject, writedata, injectdata }
        fid_ep { fid, ops, cm, msg, rma, tagged, atomic, collective }
    }
    v
}
