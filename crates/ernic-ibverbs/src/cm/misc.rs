//! The rest of librdmacm: the device list, event names, options, and the
//! calls not offered yet (-1, errno ENOSYS: multicast, ECE, rsockets…).

use std::ffi::{c_char, c_int, c_void};

use super::api::{cm_context, fail};
use crate::{abi, cma_abi as ca};

#[unsafe(no_mangle)]
/// # Safety
///
/// `num` NULL or writable.
pub unsafe extern "C" fn ernic_rdma_get_devices(num: *mut c_int) -> *mut *mut abi::ibv_context {
    let list: Vec<*mut abi::ibv_context> = match cm_context() {
        Some(c) => vec![c, std::ptr::null_mut()],
        None => vec![std::ptr::null_mut()],
    };
    if !num.is_null() {
        // SAFETY: writable.
        unsafe { *num = (list.len() - 1) as c_int };
    }
    Box::into_raw(list.into_boxed_slice()).cast()
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `list` from rdma_get_devices, freed once.
pub unsafe extern "C" fn ernic_rdma_free_devices(list: *mut *mut abi::ibv_context) {
    if list.is_null() {
        return;
    }
    let mut n = 0;
    // SAFETY: NULL-terminated (built so).
    while !unsafe { *list.add(n) }.is_null() {
        n += 1;
    }
    // SAFETY: a boxed slice of n + 1, freed once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(list, n + 1)) });
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_rdma_event_str(e: ca::rdma_cm_event_type) -> *const c_char {
    const NAMES: [&str; 18] = [
        "RDMA_CM_EVENT_ADDR_RESOLVED\0",
        "RDMA_CM_EVENT_ADDR_ERROR\0",
        "RDMA_CM_EVENT_ROUTE_RESOLVED\0",
        "RDMA_CM_EVENT_ROUTE_ERROR\0",
        "RDMA_CM_EVENT_CONNECT_REQUEST\0",
        "RDMA_CM_EVENT_CONNECT_RESPONSE\0",
        "RDMA_CM_EVENT_CONNECT_ERROR\0",
        "RDMA_CM_EVENT_UNREACHABLE\0",
        "RDMA_CM_EVENT_REJECTED\0",
        "RDMA_CM_EVENT_ESTABLISHED\0",
        "RDMA_CM_EVENT_DISCONNECTED\0",
        "RDMA_CM_EVENT_DEVICE_REMOVAL\0",
        "RDMA_CM_EVENT_MULTICAST_JOIN\0",
        "RDMA_CM_EVENT_MULTICAST_ERROR\0",
        "RDMA_CM_EVENT_ADDR_CHANGE\0",
        "RDMA_CM_EVENT_TIMEWAIT_EXIT\0",
        "RDMA_CM_EVENT_ADDRINFO_RESOLVED\0",
        "RDMA_CM_EVENT_ADDRINFO_ERROR\0",
    ];
    NAMES
        .get(e as usize)
        .map_or(c"UNKNOWN EVENT".as_ptr(), |s| s.as_ptr().cast())
}

#[unsafe(no_mangle)]
/// Options are taken and have no effect (type of service, address reuse,
/// IPv6 only, the ACK timeout), except IB paths, which are refused.
///
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_set_option(
    id: *mut ca::rdma_cm_id,
    level: c_int,
    _name: c_int,
    _val: *mut c_void,
    _len: usize,
) -> c_int {
    if id.is_null() {
        return fail(libc::EINVAL);
    }
    if level == ca::RDMA_OPTION_IB as c_int {
        return fail(libc::EOPNOTSUPP);
    }
    0
}

/// Entry points of librdmacm not offered yet: -1, errno ENOSYS.
macro_rules! not_yet {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        #[doc = "Not offered by ernic yet: -1, errno ENOSYS."]
        pub extern "C" fn $name() -> c_int {
            fail(libc::ENOSYS)
        }
    )*};
}

not_yet!(
    ernic_rdma_notify,
    ernic_rdma_join_multicast,
    ernic_rdma_leave_multicast,
    ernic_rdma_create_srq,
    ernic_rdma_destroy_srq,
    ernic_rdma_create_srq_ex,
    ernic_rdma_create_qp_ex,
    ernic_rdma_join_multicast_ex,
    ernic_rdma_init_qp_attr,
    ernic_rdma_get_remote_ece,
    ernic_rdma_reject_ece,
    ernic_rdma_set_local_ece,
    ernic_rdma_query_addrinfo,
    ernic_rdma_resolve_addrinfo,
    ernic_rdma_write_cm_event,
    ernic_rsocket,
    ernic_rbind,
    ernic_rlisten,
    ernic_raccept,
    ernic_rconnect,
    ernic_rshutdown,
    ernic_rclose,
    ernic_rrecv,
    ernic_rrecvfrom,
    ernic_rrecvmsg,
    ernic_rsend,
    ernic_rsendto,
    ernic_rsendmsg,
    ernic_rread,
    ernic_rreadv,
    ernic_rwrite,
    ernic_rwritev,
    ernic_rpoll,
    ernic_rselect,
    ernic_rgetpeername,
    ernic_rgetsockname,
    ernic_rsetsockopt,
    ernic_rgetsockopt,
    ernic_rfcntl,
    ernic_riomap,
    ernic_riounmap,
    ernic_riowrite,
    ernic_repoll_create,
    ernic_repoll_ctl,
    ernic_repoll_wait,
);
