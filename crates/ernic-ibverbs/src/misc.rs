//! The rest of the API: names of enum values, rate conversions, fork
//! support, asynchronous events, and the calls ernic does not offer, which
//! fail cleanly (EOPNOTSUPP, or NULL with errno EOPNOTSUPP) instead of
//! being absent, so a program that only probes for them still loads.

use std::ffi::{c_char, c_int, c_uint, c_void};

use crate::abi;
use crate::device::Context;
use crate::errno;
use crate::fd;

/// A static C string.
macro_rules! cstr {
    ($s:literal) => {
        concat!($s, "\0").as_ptr().cast::<c_char>()
    };
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_wc_status_str(status: u32) -> *const c_char {
    // rdma-core's words, by number.
    const NAMES: [&str; 23] = [
        "success\0",
        "local length error\0",
        "local QP operation error\0",
        "local EE context operation error\0",
        "local protection error\0",
        "Work Request Flushed Error\0",
        "memory management operation error\0",
        "bad response error\0",
        "local access error\0",
        "remote invalid request error\0",
        "remote access error\0",
        "remote operation error\0",
        "transport retry counter exceeded\0",
        "RNR retry counter exceeded\0",
        "local RDD violation error\0",
        "remote invalid RD request\0",
        "aborted error\0",
        "invalid EE context number\0",
        "invalid EE context state\0",
        "fatal error\0",
        "response timeout error\0",
        "general error\0",
        "TM error\0",
    ];
    match NAMES.get(status as usize) {
        Some(s) => s.as_ptr().cast(),
        None if status == 23 => cstr!("TM software rendezvous"),
        None => cstr!("unknown"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_node_type_str(t: c_int) -> *const c_char {
    match t {
        1 => cstr!("InfiniBand channel adapter"),
        2 => cstr!("InfiniBand switch"),
        3 => cstr!("InfiniBand router"),
        4 => cstr!("iWARP NIC"),
        5 => cstr!("usNIC"),
        6 => cstr!("usNIC UDP"),
        7 => cstr!("unspecified"),
        _ => cstr!("unknown"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_port_state_str(s: u32) -> *const c_char {
    match s {
        0 => cstr!("no state change (NOP)"),
        1 => cstr!("down"),
        2 => cstr!("init"),
        3 => cstr!("armed"),
        4 => cstr!("active"),
        5 => cstr!("active defer"),
        _ => cstr!("unknown"),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_event_type_str(e: u32) -> *const c_char {
    const NAMES: [&str; 21] = [
        "CQ error\0",
        "local work queue catastrophic error\0",
        "invalid request local work queue error\0",
        "local access violation work queue error\0",
        "communication established\0",
        "send queue drained\0",
        "path migrated\0",
        "path migration request error\0",
        "local catastrophic error\0",
        "port active\0",
        "port error\0",
        "LID change\0",
        "P_Key change\0",
        "SM change\0",
        "SRQ catastrophic error\0",
        "SRQ limit reached\0",
        "last WQE reached\0",
        "client reregistration\0",
        "GID table change\0",
        "WQ fatal\0",
        "Device link speed change\0",
    ];
    NAMES
        .get(e as usize)
        .map_or(cstr!("unknown"), |s| s.as_ptr().cast())
}

/// `enum ibv_rate` against (multiple of 2.5 Gb/s, Mb/s).
const RATES: [(c_int, c_int, c_int); 21] = [
    (2, 1, 2500),
    (5, 4, 10000),
    (3, 2, 5000),
    (6, 8, 20000),
    (7, 12, 30000),
    (4, 16, 40000),
    (8, 24, 60000),
    (9, 32, 80000),
    (10, 48, 120000),
    (11, 6, 14062),
    (12, 22, 56250),
    (13, 45, 112500),
    (14, 67, 168750),
    (15, 10, 25781),
    (16, 41, 103125),
    (17, 81, 206250),
    (18, 122, 309375),
    (19, 20, 50000),
    (20, 80, 200000),
    (21, 120, 300000),
    (22, 160, 400000),
];

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_rate_to_mult(rate: c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.1)
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_mult_to_ibv_rate(mult: c_int) -> c_int {
    RATES.iter().find(|r| r.1 == mult).map_or(0, |r| r.0)
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_rate_to_mbps(rate: c_int) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.2)
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_mbps_to_ibv_rate(mbps: c_int) -> c_int {
    RATES.iter().find(|r| r.2 == mbps).map_or(0, |r| r.0)
}

#[unsafe(no_mangle)]
/// Memory registered here is never pinned or remapped, so a fork needs
/// nothing done: fork support is "unneeded", as with a kernel that copies
/// pinned pages on fork.
pub extern "C" fn ernic_ibv_fork_init() -> c_int {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_is_fork_initialized() -> c_int {
    abi::IBV_FORK_UNNEEDED as c_int
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_dontfork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_dofork_range(_base: *mut c_void, _size: usize) -> c_int {
    0
}

#[unsafe(no_mangle)]
/// Takes the next asynchronous event, waiting for one unless the program
/// made `async_fd` non-blocking.
///
/// # Safety
///
/// `ctx` an open context; `event` writable.
pub unsafe extern "C" fn ernic_ibv_get_async_event(
    ctx: *mut abi::ibv_context,
    event: *mut abi::ibv_async_event,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        errno::set(libc::EINVAL);
        return -1;
    };
    if event.is_null() {
        errno::set(libc::EINVAL);
        return -1;
    }
    loop {
        if let Err(e) = fd::take(c.v.context.async_fd) {
            errno::set(e);
            return -1;
        }
        if let Some(ev) = c
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
        {
            // SAFETY: `event` is writable.
            unsafe { event.write(ev) };
            return 0;
        }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_ack_async_event(_event: *mut abi::ibv_async_event) {}

#[unsafe(no_mangle)]
/// A RoCE peer's Ethernet address: ernic has no Ethernet under its verbs,
/// so the MAC is the one a RoCE device derives from the GID (EUI-64 with
/// the universal bit flipped), and there is no VLAN.
///
/// # Safety
///
/// `attr` readable; `mac` writable for 6 bytes; `vid` NULL or writable.
pub unsafe extern "C" fn ernic_ibv_resolve_eth_l2_from_gid(
    _ctx: *mut abi::ibv_context,
    attr: *mut abi::ibv_ah_attr,
    mac: *mut u8,
    vid: *mut u16,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(a) = (unsafe { attr.as_ref() }) else {
        return libc::EINVAL;
    };
    if mac.is_null() {
        return libc::EINVAL;
    }
    let g = a.grh.dgid.raw;
    let m = [g[8] ^ 2, g[9], g[10], g[13], g[14], g[15]];
    // SAFETY: `mac` writable for 6 bytes; `vid` NULL or writable.
    unsafe {
        std::ptr::copy_nonoverlapping(m.as_ptr(), mac, 6);
        if !vid.is_null() {
            *vid = 0xffff;
        }
    }
    0
}

/// Entry points ernic does not offer that answer an int: EOPNOTSUPP.
macro_rules! unsupported_int {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[doc = "Not offered by ernic: EOPNOTSUPP."]
        pub extern "C" fn $name() -> c_int {
            errno::set(libc::EOPNOTSUPP);
            libc::EOPNOTSUPP
        }
    )*};
}

/// Entry points ernic does not offer that answer a pointer: NULL, with
/// errno EOPNOTSUPP.
macro_rules! unsupported_ptr {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[doc = "Not offered by ernic: NULL, errno EOPNOTSUPP."]
        pub extern "C" fn $name() -> *mut c_void {
            errno::null(libc::EOPNOTSUPP)
        }
    )*};
}

/// Entry points without a result that ernic does not offer: nothing.
macro_rules! unsupported_void {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[doc = "Not offered by ernic: does nothing."]
        pub extern "C" fn $name() {}
    )*};
}

// Multicast, ECE, dma-buf, device memory, DMA handles, completion
// counters, and importing another process's objects (which needs a kernel
// device file to share).
unsupported_int!(
    ernic_ibv_attach_mcast,
    ernic_ibv_detach_mcast,
    ernic_ibv_query_ece,
    ernic_ibv_set_ece,
    ernic_ibv_dealloc_dmah,
    ernic_ibv_dm_export_dmabuf_fd,
    ernic_ibv_query_port_speed,
    ernic__ibv_query_comp_cntr_caps,
    ernic_ibv_destroy_comp_cntr,
    ernic_ibv_export_buf_dmabuf_fd,
    ernic_ibv_inc_comp_cntr,
    ernic_ibv_inc_err_comp_cntr,
    ernic_ibv_qp_attach_comp_cntr,
    ernic_ibv_read_comp_cntr,
    ernic_ibv_read_err_comp_cntr,
    ernic_ibv_set_comp_cntr,
    ernic_ibv_set_err_comp_cntr,
);
unsupported_ptr!(
    ernic_ibv_import_device,
    ernic_ibv_import_pd,
    ernic_ibv_import_mr,
    ernic_ibv_import_dm,
    ernic_ibv_reg_dmabuf_mr,
    ernic_ibv_alloc_dmah,
    ernic_ibv_create_comp_cntr,
);
unsupported_void!(
    ernic_ibv_unimport_pd,
    ernic_ibv_unimport_mr,
    ernic_ibv_unimport_dm,
);

#[unsafe(no_mangle)]
/// Whether data of an operation lands in order: ernic writes each
/// message's bytes in order, but promises nothing a program could lean on
/// for polling the last byte, so: no guarantee (0).
pub extern "C" fn ernic_ibv_query_qp_data_in_order(
    _qp: *mut abi::ibv_qp,
    _op: u32,
    _flags: u32,
) -> c_int {
    0
}

/// `enum ibv_gid_type_sysfs` (rdma-core's private driver.h).
const GID_TYPE_SYSFS_IB_ROCE_V1: c_uint = 0;
const GID_TYPE_SYSFS_ROCE_V2: c_uint = 1;

/// `ibv_query_gid_type`, private to rdma-core but called by its own
/// `ibv_devinfo`: the GID's type in sysfs terms (RoCE v2).
///
/// # Safety
///
/// `ctx` an open context; `ty` writable.
unsafe fn query_gid_type(
    ctx: *mut abi::ibv_context,
    port: u8,
    index: c_uint,
    ty: *mut c_uint,
) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { Context::from_c(ctx) }.is_none() || port != crate::device::PORT || ty.is_null() {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: `ty` writable. Entries past the table read as RoCE v1, as
    // rdma-core answers an empty GID.
    unsafe {
        *ty = if index == 0 {
            GID_TYPE_SYSFS_ROCE_V2
        } else {
            GID_TYPE_SYSFS_IB_ROCE_V1
        }
    };
    0
}

#[unsafe(no_mangle)]
/// `ibv_query_gid_type`, in both private versions.
///
/// # Safety
///
/// As `query_gid_type`.
pub unsafe extern "C" fn ernic_priv_ibv_query_gid_type(
    ctx: *mut abi::ibv_context,
    port: u8,
    index: c_uint,
    ty: *mut c_uint,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { query_gid_type(ctx, port, index, ty) }
}

// One name in two private versions: beyond what a version script can
// say, so the assembler binds each (the nodes are in libibverbs.map).
std::arch::global_asm!(
    ".symver ernic_priv_ibv_query_gid_type, ibv_query_gid_type@IBVERBS_PRIVATE_34",
    ".symver ernic_priv_ibv_query_gid_type, ibv_query_gid_type@IBVERBS_PRIVATE_65",
);

/// The sysfs files `ibv_read_sysfs_file` answers for the device (there is
/// no sysfs directory for it): the device's own, by name.
fn sysfs_value(file: &str) -> Option<String> {
    Some(match file {
        "board_id" => "ernic software RDMA".to_string(),
        "node_desc" => format!("{} ernic", crate::runtime::DEVICE_NAME),
        "fw_ver" => env!("CARGO_PKG_VERSION").to_string(),
        "hw_rev" => "1".to_string(),
        "hca_type" => "ernic".to_string(),
        _ => return None,
    })
}

#[unsafe(no_mangle)]
/// Reads `dir/file`: the device's own values for its (absent) sysfs
/// directory, any other file as rdma-core does (trailing newline removed,
/// NUL-terminated; -1 when it cannot be read or does not fit).
///
/// # Safety
///
/// `dir` and `file` NUL-terminated strings; `buf` writable for `size`.
pub unsafe extern "C" fn ernic_ibv_read_sysfs_file(
    dir: *const c_char,
    file: *const c_char,
    buf: *mut c_char,
    size: usize,
) -> c_int {
    if dir.is_null() || file.is_null() || buf.is_null() || size == 0 {
        return -1;
    }
    // SAFETY: NUL-terminated strings (the contract).
    let (d, f) = unsafe {
        (
            std::ffi::CStr::from_ptr(dir),
            std::ffi::CStr::from_ptr(file),
        )
    };
    let (d, f) = (d.to_string_lossy(), f.to_string_lossy());
    let ours = format!("/sys/class/infiniband/{}", crate::runtime::DEVICE_NAME);
    let text = if d == ours {
        match sysfs_value(&f) {
            Some(v) => v,
            None => return -1,
        }
    } else {
        match std::fs::read_to_string(format!("{d}/{f}")) {
            Ok(t) => t.strip_suffix('\n').unwrap_or(&t).to_string(),
            Err(_) => return -1,
        }
    };
    if text.len() >= size {
        return -1;
    }
    // SAFETY: `buf` writable for size > text.len() bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, text.len());
        *buf.add(text.len()) = 0;
    }
    text.len() as c_int
}

#[unsafe(no_mangle)]
/// `ibv_get_sysfs_path`, historical: the sysfs mount point.
pub extern "C" fn ernic_ibv_get_sysfs_path() -> *const c_char {
    cstr!("/sys")
}

// Historical conversions of kernel structs (only providers used them) and
// provider registration (ernic loads no providers): nothing to do.
unsupported_void!(
    ernic_ibv_copy_path_rec_from_kern,
    ernic_ibv_copy_path_rec_to_kern,
    ernic_ibv_copy_qp_attr_from_kern,
    ernic_ibv_copy_ah_attr_from_kern,
    ernic_ibv_register_driver,
);
