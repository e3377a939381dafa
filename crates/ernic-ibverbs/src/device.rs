//! The device list, opening a device, and what the device and its one port
//! say of themselves (`ibv_query_device`, `ibv_query_port`, the GID and
//! P_Key tables).

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::Mutex;

use crate::abi;
use crate::errno;
use crate::ops;
use crate::runtime::{self, Runtime, copy_c_str};

/// The one port's number.
pub(crate) const PORT: u8 = 1;

/// An open device: `struct verbs_context` (whose last member is the
/// `struct ibv_context` programs hold) and what the library keeps beside it.
#[repr(C)]
pub(crate) struct Context {
    pub v: abi::verbs_context,
    pub rt: &'static Runtime,
    /// Asynchronous events not yet taken by `ibv_get_async_event`.
    pub events: Mutex<VecDeque<abi::ibv_async_event>>,
}

impl Context {
    /// The context behind a program's `struct ibv_context *`.
    ///
    /// # Safety
    ///
    /// `ctx` must be NULL or a pointer `ibv_open_device` returned and
    /// `ibv_close_device` has not closed.
    pub(crate) unsafe fn from_c<'a>(ctx: *mut abi::ibv_context) -> Option<&'a Context> {
        if ctx.is_null() {
            return None;
        }
        let off = offset_of!(Context, v) + offset_of!(abi::verbs_context, context);
        // SAFETY: by the contract, `ctx` is the `context` member of the
        // `v` member of a live `Context`, so stepping back by their offsets
        // stays inside that allocation and lands on its start.
        Some(unsafe { &*ctx.cast::<u8>().sub(off).cast::<Context>() })
    }

    /// The `struct ibv_context *` programs are given.
    pub(crate) fn c(&self) -> *mut abi::ibv_context {
        ptr::from_ref(&self.v.context).cast_mut()
    }

    /// Drops the events not yet taken that name the QP or SRQ at `obj`,
    /// which is being destroyed (as the kernel drops a destroyed object's
    /// events): a program must never be handed a freed object. The fd's
    /// count stays; `ibv_get_async_event` skips counts with no event.
    pub(crate) fn forget_events(&self, obj: usize) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            // SAFETY: reading the union as a pointer is sound for every
            // member (all pointers, or an int smaller than one, zero-padded
            // by `zeroed` where events are made).
            .retain(|e| unsafe { e.element.qp } as usize != obj);
    }

    /// Queues an asynchronous event and wakes `ibv_get_async_event`.
    pub(crate) fn post_event(&self, ev: abi::ibv_async_event) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(ev);
        crate::fd::signal(self.v.context.async_fd);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_ibv_get_device_list(num: *mut c_int) -> *mut *mut abi::ibv_device {
    let list: Vec<*mut abi::ibv_device> = match runtime::get() {
        Ok(rt) => vec![ptr::from_ref(&rt.ibv.c).cast_mut(), ptr::null_mut()],
        Err(_) => vec![ptr::null_mut()],
    };
    if !num.is_null() {
        // SAFETY: the caller passes NULL or a pointer to an int it owns.
        unsafe { *num = (list.len() - 1) as c_int };
    }
    Box::into_raw(list.into_boxed_slice()).cast()
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `list` must be NULL or a list `ibv_get_device_list` returned, freed once.
pub unsafe extern "C" fn ernic_ibv_free_device_list(list: *mut *mut abi::ibv_device) {
    if list.is_null() {
        return;
    }
    let mut n = 0;
    // SAFETY: the list is NULL-terminated (it was built so), so every
    // index up to and including the NULL is inside it.
    while !unsafe { *list.add(n) }.is_null() {
        n += 1;
    }
    // SAFETY: the list was a boxed slice of n + 1 pointers, leaked by
    // ibv_get_device_list; rebuilding the box frees it once.
    drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(list, n + 1)) });
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `dev` must be NULL or a device from the list.
pub unsafe extern "C" fn ernic_ibv_get_device_name(dev: *mut abi::ibv_device) -> *const c_char {
    if dev.is_null() {
        return errno::null(libc::EINVAL);
    }
    // SAFETY: a device from the list lives for the process.
    unsafe { (*dev).name.as_ptr() }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `dev` must be NULL or a device from the list.
pub unsafe extern "C" fn ernic_ibv_get_device_index(dev: *mut abi::ibv_device) -> c_int {
    if dev.is_null() { -1 } else { 0 }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `dev` must be NULL or a device from the list.
pub unsafe extern "C" fn ernic_ibv_get_device_guid(dev: *mut abi::ibv_device) -> u64 {
    match runtime::get() {
        Ok(rt) if !dev.is_null() => rt.guid().to_be(),
        _ => 0,
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `dev` must be NULL or a device from the list.
pub unsafe extern "C" fn ernic_ibv_open_device(dev: *mut abi::ibv_device) -> *mut abi::ibv_context {
    let Ok(rt) = runtime::get() else {
        return errno::null(libc::ENODEV);
    };
    if dev != ptr::from_ref(&rt.ibv.c).cast_mut() {
        return errno::null(libc::EINVAL);
    }
    if rt.fabric.mesh().is_some() {
        // On a mesh other processes' rdma_cm may ask this port (an address
        // names every port at it): its CM answers even a program that
        // never uses rdma_cm, with "no one listens", so theirs moves on to
        // the next port instead of waiting out its timeouts.
        if let Err(why) = crate::cm::serve() {
            tracing::warn!("this port's connection manager: {why}");
        }
    }
    let (Some(async_fd), Some(cmd_fd)) = (crate::fd::eventfd(), crate::fd::eventfd()) else {
        return errno::null(libc::EMFILE);
    };
    // SAFETY: verbs_context is plain C data (integers, pointers, optional
    // function pointers, a pthread mutex), for which zero bytes are valid
    // (NULL, None, and PTHREAD_MUTEX_INITIALIZER, which is all zeros on
    // Linux).
    let mut v: abi::verbs_context = unsafe { std::mem::zeroed() };
    v.sz = size_of::<abi::verbs_context>();
    v.context.device = dev;
    v.context.cmd_fd = cmd_fd;
    v.context.async_fd = async_fd;
    v.context.num_comp_vectors = 1;
    // __VERBS_ABI_IS_EXTENDED: the context is the tail of a verbs_context,
    // so the inline functions of verbs.h look for the extended ops.
    v.context.abi_compat = usize::MAX as *mut c_void;
    ops::fill(&mut v);
    let ctx = Box::new(Context {
        v,
        rt,
        events: Mutex::new(VecDeque::new()),
    });
    Box::leak(ctx).c()
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` must be NULL or an open context, with nothing made on it left.
pub unsafe extern "C" fn ernic_ibv_close_device(ctx: *mut abi::ibv_context) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return libc::EINVAL;
    };
    let fds = (c.v.context.async_fd, c.v.context.cmd_fd);
    // SAFETY: `c` came from Box::leak in ibv_open_device, and the caller
    // closes it once.
    drop(unsafe { Box::from_raw(ptr::from_ref(c).cast_mut()) });
    crate::fd::close(fds.0);
    crate::fd::close(fds.1);
    0
}

/// What `ibv_query_device` answers.
fn device_attr(rt: &Runtime) -> abi::ibv_device_attr {
    let l = rt.cfg;
    let clamp = |v: u32| v.min(i32::MAX as u32) as c_int;
    // SAFETY: plain C data; zero is valid for every field.
    let mut a: abi::ibv_device_attr = unsafe { std::mem::zeroed() };
    copy_c_str(&mut a.fw_ver, env!("CARGO_PKG_VERSION"));
    a.node_guid = rt.guid().to_be();
    a.sys_image_guid = rt.guid().to_be();
    a.max_mr_size = l.max_msg_size;
    a.page_size_cap = 0x1000;
    // Pensando's vendor id, with the ionic RDMA function's part number: the
    // device a guest sees is an ionic, and this one speaks the same verbs.
    a.vendor_id = 0x1dd8;
    a.vendor_part_id = 0x1002;
    a.hw_ver = 1;
    a.max_qp = clamp(l.max_qp);
    a.max_qp_wr = clamp(l.max_qp_wr);
    a.device_cap_flags = abi::IBV_DEVICE_RC_RNR_NAK_GEN
        | abi::IBV_DEVICE_SHUTDOWN_PORT
        | abi::IBV_DEVICE_PORT_ACTIVE_EVENT
        | abi::IBV_DEVICE_SRQ_RESIZE
        | abi::IBV_DEVICE_CHANGE_PHY_PORT;
    a.max_sge = clamp(l.max_sge);
    a.max_sge_rd = clamp(l.max_sge);
    a.max_cq = clamp(l.max_cq);
    a.max_cqe = clamp(crate::cq::MAX_CQE);
    a.max_mr = clamp(l.max_mr);
    a.max_pd = clamp(l.max_pd);
    a.max_qp_rd_atom = 16;
    a.max_res_rd_atom = 16 * clamp(l.max_qp).min(1 << 20);
    a.max_qp_init_rd_atom = 16;
    a.atomic_cap = abi::IBV_ATOMIC_HCA;
    a.max_ah = clamp(l.max_ah);
    a.max_srq = clamp(l.max_srq);
    a.max_srq_wr = clamp(l.max_qp_wr);
    a.max_srq_sge = clamp(l.max_sge);
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 16;
    a.phys_port_cnt = 1;
    a
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context; `attr` NULL or writable.
pub unsafe extern "C" fn ernic_ibv_query_device(
    ctx: *mut abi::ibv_context,
    attr: *mut abi::ibv_device_attr,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return libc::EINVAL;
    };
    if attr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: `attr` points to a writable ibv_device_attr (the contract).
    unsafe { attr.write(device_attr(c.rt)) };
    0
}

/// `verbs_context.query_device_ex`: the extended attributes, as many
/// bytes of them as the caller's struct has.
///
/// # Safety
///
/// `ctx` an open context; `attr` writable for `attr_size` bytes.
pub(crate) unsafe extern "C" fn query_device_ex(
    ctx: *mut abi::ibv_context,
    _input: *const abi::ibv_query_device_ex_input,
    attr: *mut abi::ibv_device_attr_ex,
    attr_size: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return libc::EINVAL;
    };
    if attr.is_null() || attr_size < size_of::<abi::ibv_device_attr>() {
        return libc::EINVAL;
    }
    // SAFETY: plain C data; zero is valid for every field.
    let mut ex: abi::ibv_device_attr_ex = unsafe { std::mem::zeroed() };
    ex.orig_attr = device_attr(c.rt);
    ex.max_dm_size = 0;
    let n = attr_size.min(size_of::<abi::ibv_device_attr_ex>());
    // SAFETY: `attr` is writable for attr_size >= n bytes and does not
    // overlap our local.
    unsafe { ptr::copy_nonoverlapping(ptr::from_ref(&ex).cast::<u8>(), attr.cast::<u8>(), n) };
    0
}

/// What `ibv_query_port` answers for port 1.
fn port_attr(rt: &Runtime) -> abi::ibv_port_attr {
    // SAFETY: plain C data; zero is valid for every field.
    let mut p: abi::ibv_port_attr = unsafe { std::mem::zeroed() };
    p.state = abi::IBV_PORT_ACTIVE;
    p.max_mtu = abi::IBV_MTU_4096;
    p.active_mtu = abi::IBV_MTU_4096;
    p.gid_tbl_len = 1;
    p.port_cap_flags = abi::IBV_PORT_CM_SUP | abi::IBV_PORT_IP_BASED_GIDS;
    p.max_msg_sz = rt.cfg.max_msg_size.min(u64::from(u32::MAX)) as u32;
    p.pkey_tbl_len = 1;
    p.max_vl_num = 1;
    p.active_width = 2; // 4X
    p.active_speed = 32; // EDR: 25 Gb/s a lane
    p.phys_state = 5; // LinkUp
    p.link_layer = abi::IBV_LINK_LAYER_ETHERNET as u8;
    p
}

/// `verbs_context.query_port`, which verbs.h's inline `ibv_query_port`
/// calls with the size of the caller's struct.
///
/// # Safety
///
/// `ctx` an open context; `attr` writable for `len` bytes.
pub(crate) unsafe extern "C" fn query_port(
    ctx: *mut abi::ibv_context,
    port: u8,
    attr: *mut abi::ibv_port_attr,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return libc::EINVAL;
    };
    if port != PORT || attr.is_null() {
        return libc::EINVAL;
    }
    let p = port_attr(c.rt);
    let n = len.min(size_of::<abi::ibv_port_attr>());
    // SAFETY: `attr` is writable for len >= n bytes.
    unsafe { ptr::copy_nonoverlapping(ptr::from_ref(&p).cast::<u8>(), attr.cast::<u8>(), n) };
    0
}

#[unsafe(no_mangle)]
/// The exported `ibv_query_port`, which older callers reach with the
/// struct of rdma-core before `port_cap_flags2` (`_compat_ibv_port_attr`).
///
/// # Safety
///
/// `ctx` an open context; `attr` writable for that struct.
pub unsafe extern "C" fn ernic_ibv_query_port(
    ctx: *mut abi::ibv_context,
    port: u8,
    attr: *mut abi::ibv_port_attr,
) -> c_int {
    // SAFETY: the caller's contract; the compat struct is the prefix.
    unsafe { query_port(ctx, port, attr, abi::COMPAT_PORT_ATTR_LEN) }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context; `gid` writable.
pub unsafe extern "C" fn ernic_ibv_query_gid(
    ctx: *mut abi::ibv_context,
    port: u8,
    index: c_int,
    gid: *mut abi::ibv_gid,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return -1;
    };
    if port != PORT || index != 0 || gid.is_null() {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: `gid` is writable (the contract).
    unsafe { (*gid).raw = c.rt.gid.0 };
    0
}

/// The GID table's entry `index` of port 1.
fn gid_entry(c: &Context, index: u32) -> Option<abi::ibv_gid_entry> {
    (index == 0).then(|| {
        // SAFETY: plain C data; zero is valid for every field.
        let mut e: abi::ibv_gid_entry = unsafe { std::mem::zeroed() };
        e.gid.raw = c.rt.gid.0;
        e.gid_index = 0;
        e.port_num = u32::from(PORT);
        e.gid_type = abi::IBV_GID_TYPE_ROCE_V2;
        e.ndev_ifindex = 1; // lo
        e
    })
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context; `entry` writable for `entry_size` bytes.
pub unsafe extern "C" fn ernic_ibv_query_gid_ex(
    ctx: *mut abi::ibv_context,
    port: u32,
    index: u32,
    entry: *mut abi::ibv_gid_entry,
    flags: u32,
    entry_size: usize,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return libc::EINVAL;
    };
    if flags != 0 || entry.is_null() || entry_size < size_of::<abi::ibv_gid_entry>() {
        return libc::EINVAL;
    }
    if port != u32::from(PORT) {
        return libc::EINVAL;
    }
    let Some(e) = gid_entry(c, index) else {
        return libc::ENODATA;
    };
    // SAFETY: `entry` is writable for at least one entry.
    unsafe { entry.write(e) };
    0
}

#[unsafe(no_mangle)]
/// `_ibv_query_gid_ex`, what verbs.h's `ibv_query_gid_ex` calls.
///
/// # Safety
///
/// As `ibv_query_gid_ex`.
pub unsafe extern "C" fn ernic__ibv_query_gid_ex(
    ctx: *mut abi::ibv_context,
    port: u32,
    index: u32,
    entry: *mut abi::ibv_gid_entry,
    flags: u32,
    entry_size: usize,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { ernic_ibv_query_gid_ex(ctx, port, index, entry, flags, entry_size) }
}

#[unsafe(no_mangle)]
/// `_ibv_query_gid_table`: every valid entry, at most `max` of them;
/// answers how many, or a negative error number.
///
/// # Safety
///
/// `ctx` an open context; `entries` writable for `max` entries of
/// `entry_size` bytes.
pub unsafe extern "C" fn ernic__ibv_query_gid_table(
    ctx: *mut abi::ibv_context,
    entries: *mut abi::ibv_gid_entry,
    max: usize,
    flags: u32,
    entry_size: usize,
) -> isize {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return -(libc::EINVAL as isize);
    };
    if flags != 0 || entry_size < size_of::<abi::ibv_gid_entry>() {
        return -(libc::EINVAL as isize);
    }
    if max == 0 || entries.is_null() {
        return -(libc::EINVAL as isize);
    }
    let e = gid_entry(c, 0).expect("entry 0");
    // SAFETY: `entries` is writable for max >= 1 entries.
    unsafe { entries.write(e) };
    1
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context; `pkey` writable.
pub unsafe extern "C" fn ernic_ibv_query_pkey(
    ctx: *mut abi::ibv_context,
    port: u8,
    index: c_int,
    pkey: *mut u16,
) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { Context::from_c(ctx) }.is_none() || port != PORT || index != 0 || pkey.is_null() {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: `pkey` is writable.
    unsafe { *pkey = 0xffff_u16.to_be() };
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context.
pub unsafe extern "C" fn ernic_ibv_get_pkey_index(
    ctx: *mut abi::ibv_context,
    port: u8,
    pkey: u16,
) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { Context::from_c(ctx) }.is_none() || port != PORT {
        errno::set(libc::EINVAL);
        return -1;
    }
    if u16::from_be(pkey) & 0x7fff == 0x7fff {
        0
    } else {
        errno::set(libc::ENOENT);
        -1
    }
}
