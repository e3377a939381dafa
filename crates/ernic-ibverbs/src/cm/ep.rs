//! rdma_cm's synchronous endpoints (`rdma_verbs.h`'s side of it):
//! `rdma_getaddrinfo`, `rdma_create_ep`/`rdma_destroy_ep` and
//! `rdma_get_request`, as rdma-core's rdma_server and rdma_client use them,
//! over the asynchronous calls of [`super::api`].

use std::ffi::{c_char, c_int};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::addr;
use super::api::{
    ernic_rdma_bind_addr, ernic_rdma_create_id, ernic_rdma_destroy_id, ernic_rdma_reject,
    ernic_rdma_resolve_addr, ernic_rdma_resolve_route, fail, sockaddr,
};
use super::channel::{ernic_rdma_ack_cm_event, ernic_rdma_get_cm_event};
use super::id::Id;
use super::qp::{ernic_rdma_create_qp, ernic_rdma_destroy_qp};
use crate::{abi, cma_abi as ca};

#[unsafe(no_mangle)]
/// Waits for a connection request on a synchronous listener; the new id
/// gets the listener's endpoint QP, if it has one (`rdma_create_ep`).
///
/// # Safety
///
/// `listen` a live, listening, synchronous id; `out` writable.
pub unsafe extern "C" fn ernic_rdma_get_request(
    listen: *mut ca::rdma_cm_id,
    out: *mut *mut ca::rdma_cm_id,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(l) = (unsafe { Id::from_c(listen) }) else {
        return fail(libc::EINVAL);
    };
    if out.is_null() || !l.lock().sync {
        return fail(libc::EINVAL);
    }
    loop {
        let mut ev: *mut ca::rdma_cm_event = std::ptr::null_mut();
        // SAFETY: the listener's own channel.
        if unsafe { ernic_rdma_get_cm_event(l.c.channel, &mut ev) } != 0 {
            return -1;
        }
        // SAFETY: the event just taken.
        let (kind, child) = unsafe { ((*ev).event, (*ev).id) };
        if kind != ca::RDMA_CM_EVENT_CONNECT_REQUEST {
            // SAFETY: ours to free.
            unsafe { ernic_rdma_ack_cm_event(ev) };
            continue;
        }
        // SAFETY: the request's new id, live.
        let Some(c) = (unsafe { Id::from_c(child) }) else {
            return fail(libc::EIO);
        };
        // SAFETY: the new id is the program's from here; it keeps the event.
        unsafe { (*std::ptr::from_ref(&c.c).cast_mut()).event = ev };
        let ep = l.lock().ep_qp;
        if let Some((pd, mut attr)) = ep {
            // SAFETY: the PD and CQs the program gave rdma_create_ep.
            if unsafe { ernic_rdma_create_qp(child, pd, &mut attr) } != 0 {
                let e = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                // SAFETY: the new id, not yet handed out.
                unsafe {
                    ernic_rdma_reject(child, std::ptr::null(), 0);
                    ernic_rdma_destroy_id(child);
                }
                return fail(e);
            }
        }
        // SAFETY: `out` writable.
        unsafe { *out = child };
        return 0;
    }
}

#[unsafe(no_mangle)]
/// An endpoint from rdma_getaddrinfo's answer: a synchronous id, bound
/// (passive) or resolved to its destination (active), with a QP made now
/// (active) or for each request (passive) when `attr` is given.
///
/// # Safety
///
/// `out` writable; `res` from rdma_getaddrinfo; `pd` NULL or a PD;
/// `attr` NULL or readable.
pub unsafe extern "C" fn ernic_rdma_create_ep(
    out: *mut *mut ca::rdma_cm_id,
    res: *mut ca::rdma_addrinfo,
    pd: *mut abi::ibv_pd,
    attr: *mut abi::ibv_qp_init_attr,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(r) = (unsafe { res.as_ref() }) else {
        return fail(libc::EINVAL);
    };
    if out.is_null() {
        return fail(libc::EINVAL);
    }
    let ps = if r.ai_port_space == 0 {
        ca::RDMA_PS_TCP
    } else {
        r.ai_port_space as ca::rdma_port_space
    };
    let mut id: *mut ca::rdma_cm_id = std::ptr::null_mut();
    // SAFETY: a new synchronous id.
    if unsafe { ernic_rdma_create_id(std::ptr::null_mut(), &mut id, std::ptr::null_mut(), ps) } != 0
    {
        return -1;
    }
    // SAFETY: just made.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EIO);
    };
    let passive = r.ai_flags & ca::RAI_PASSIVE != 0;
    let ok = if passive {
        let mut any = addr::to_storage(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
        let src = if r.ai_src_addr.is_null() {
            std::ptr::from_mut(&mut any).cast()
        } else {
            r.ai_src_addr
        };
        // SAFETY: a sockaddr from rdma_getaddrinfo, or ours.
        let bound = unsafe { ernic_rdma_bind_addr(id, src) } == 0;
        // SAFETY: `attr` NULL or readable.
        if bound && let Some(a) = unsafe { attr.as_ref() } {
            i.lock().ep_qp = Some((pd, *a));
        }
        bound
    } else {
        // SAFETY: the addresses from rdma_getaddrinfo; `attr` the program's.
        unsafe {
            ernic_rdma_resolve_addr(id, r.ai_src_addr, r.ai_dst_addr, 2000) == 0
                && ernic_rdma_resolve_route(id, 2000) == 0
                && (attr.is_null() || ernic_rdma_create_qp(id, pd, attr) == 0)
        }
    };
    if !ok {
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        // SAFETY: ours, not handed out.
        unsafe { ernic_rdma_destroy_ep(id) };
        return fail(e);
    }
    // SAFETY: `out` writable.
    unsafe { *out = id };
    0
}

/// An `rdma_addrinfo` and the addresses it points to.
#[repr(C)]
struct AddrInfo {
    c: ca::rdma_addrinfo,
    src: libc::sockaddr_storage,
    dst: libc::sockaddr_storage,
}

/// The length of a socket address of `a`'s family.
fn sa_len(a: &SocketAddr) -> libc::socklen_t {
    match a {
        SocketAddr::V4(_) => size_of::<libc::sockaddr_in>() as libc::socklen_t,
        SocketAddr::V6(_) => size_of::<libc::sockaddr_in6>() as libc::socklen_t,
    }
}

/// Copies the `len` bytes of a socket address at `sa` into `to`: its
/// length, or None when it is missing or larger than a sockaddr_storage.
///
/// # Safety
///
/// `sa` NULL or readable for `len` bytes.
unsafe fn copy_addr(
    to: &mut libc::sockaddr_storage,
    sa: *const libc::sockaddr,
    len: libc::socklen_t,
) -> Option<libc::socklen_t> {
    let n = len as usize;
    if sa.is_null() || n == 0 || n > size_of::<libc::sockaddr_storage>() {
        return None;
    }
    // SAFETY: `sa` readable for `n` bytes, `to` writable for more.
    unsafe { std::ptr::copy_nonoverlapping(sa.cast::<u8>(), std::ptr::from_mut(to).cast(), n) };
    Some(len)
}

#[unsafe(no_mangle)]
/// Resolves `node` and `service` with the system's resolver, as
/// rdma-core does: one entry, the first address found, as the source of a
/// passive (RAI_PASSIVE) request or the destination of an active one.
/// With neither, the addresses come from `hints`; a source in `hints`
/// fills one the name did not. Answers 0, or -1 with errno (ENOENT when
/// nothing resolves, EOPNOTSUPP for RAI_SA).
///
/// # Safety
///
/// `node`, `service` NULL or NUL-terminated; `hints` NULL or readable,
/// its addresses readable for their lengths; `res` writable.
pub unsafe extern "C" fn ernic_rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const ca::rdma_addrinfo,
    res: *mut *mut ca::rdma_addrinfo,
) -> c_int {
    // SAFETY: `hints` NULL or readable.
    let h = unsafe { hints.as_ref() };
    if res.is_null() || (node.is_null() && service.is_null() && h.is_none()) {
        return fail(libc::EINVAL);
    }
    let flags = h.map_or(0, |h| h.ai_flags);
    if flags & ca::RAI_SA != 0 {
        return fail(libc::EOPNOTSUPP);
    }
    let qp_type = h.map_or(0, |h| h.ai_qp_type);
    let port_space = h.map_or(0, |h| h.ai_port_space);
    // SAFETY: plain C data; zero is valid.
    let mut b: Box<AddrInfo> = Box::new(unsafe { std::mem::zeroed() });
    b.c.ai_qp_type = qp_type;
    b.c.ai_port_space = port_space;
    if !node.is_null() || !service.is_null() {
        let passive = flags & ca::RAI_PASSIVE != 0;
        // SAFETY: plain C data; zero is valid.
        let mut want: libc::addrinfo = unsafe { std::mem::zeroed() };
        if let Some(h) = h {
            if passive {
                want.ai_flags |= libc::AI_PASSIVE;
            }
            if flags & ca::RAI_NUMERICHOST != 0 {
                want.ai_flags |= libc::AI_NUMERICHOST;
            }
            if h.ai_family != ca::AF_IB {
                want.ai_family = h.ai_family;
            }
            want.ai_socktype = match h.ai_qp_type as u32 {
                abi::IBV_QPT_UD => libc::SOCK_DGRAM,
                0 => 0,
                _ => libc::SOCK_STREAM,
            };
            want.ai_protocol = match h.ai_port_space as u32 {
                ca::RDMA_PS_TCP => libc::IPPROTO_TCP,
                ca::RDMA_PS_UDP | ca::RDMA_PS_IPOIB => libc::IPPROTO_UDP,
                _ => 0,
            };
        }
        let mut found: *mut libc::addrinfo = std::ptr::null_mut();
        // SAFETY: the strings are the program's (NULL or NUL-terminated);
        // `found` is written by getaddrinfo and freed below.
        let r = unsafe { libc::getaddrinfo(node, service, &want, &mut found) };
        if r != 0 || found.is_null() {
            return fail(libc::ENOENT);
        }
        // SAFETY: a list getaddrinfo made, read before it is freed.
        let (ai, addr) = unsafe { (*found, sockaddr((*found).ai_addr)) };
        // SAFETY: freed once, after the reads above.
        unsafe { libc::freeaddrinfo(found) };
        let Some(addr) = addr else {
            return fail(libc::ENOENT);
        };
        if b.c.ai_qp_type == 0 {
            b.c.ai_qp_type = if ai.ai_socktype == libc::SOCK_DGRAM {
                abi::IBV_QPT_UD as c_int
            } else {
                abi::IBV_QPT_RC as c_int
            };
        }
        if b.c.ai_port_space == 0 {
            b.c.ai_port_space = if ai.ai_protocol == libc::IPPROTO_UDP {
                ca::RDMA_PS_UDP as c_int
            } else {
                ca::RDMA_PS_TCP as c_int
            };
        }
        b.c.ai_family = if addr.is_ipv4() {
            libc::AF_INET
        } else {
            libc::AF_INET6
        };
        if passive {
            b.c.ai_flags = ca::RAI_PASSIVE;
            b.src = addr::to_storage(addr);
            b.c.ai_src_len = sa_len(&addr);
        } else {
            b.dst = addr::to_storage(addr);
            b.c.ai_dst_len = sa_len(&addr);
        }
    } else if let Some(h) = h {
        b.c.ai_flags = h.ai_flags;
        b.c.ai_family = h.ai_family;
        if h.ai_dst_len != 0 {
            // SAFETY: the hints' destination, readable for its length.
            match unsafe { copy_addr(&mut b.dst, h.ai_dst_addr, h.ai_dst_len) } {
                Some(n) => b.c.ai_dst_len = n,
                None => return fail(libc::EINVAL),
            }
        }
    }
    if let Some(h) = h
        && b.c.ai_src_len == 0
        && h.ai_src_len != 0
    {
        // SAFETY: the hints' source, readable for its length.
        match unsafe { copy_addr(&mut b.src, h.ai_src_addr, h.ai_src_len) } {
            Some(n) => b.c.ai_src_len = n,
            None => return fail(libc::EINVAL),
        }
    }
    if b.c.ai_src_len != 0 {
        b.c.ai_src_addr = std::ptr::from_mut(&mut b.src).cast();
    }
    if b.c.ai_dst_len != 0 {
        b.c.ai_dst_addr = std::ptr::from_mut(&mut b.dst).cast();
    }
    // SAFETY: `res` writable.
    unsafe { *res = Box::into_raw(b).cast() };
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `res` NULL or a list from rdma_getaddrinfo, freed once.
pub unsafe extern "C" fn ernic_rdma_freeaddrinfo(res: *mut ca::rdma_addrinfo) {
    let mut p = res;
    while !p.is_null() {
        // SAFETY: an entry we made (Box<AddrInfo>), freed once.
        let b = unsafe { Box::from_raw(p.cast::<AddrInfo>()) };
        p = b.c.ai_next;
    }
}

#[unsafe(no_mangle)]
/// Destroys an endpoint: its QP, the CQs and channels rdma_create_qp
/// made for it, and the id.
///
/// # Safety
///
/// `id` a live id, destroyed once.
pub unsafe extern "C" fn ernic_rdma_destroy_ep(id: *mut ca::rdma_cm_id) {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return;
    };
    let c = i.c;
    // SAFETY: the id's objects, destroyed once each, QP first.
    unsafe {
        ernic_rdma_destroy_qp(id);
        if !c.send_cq.is_null() {
            crate::cq::ernic_ibv_destroy_cq(c.send_cq);
        }
        if !c.recv_cq.is_null() && c.recv_cq != c.send_cq {
            crate::cq::ernic_ibv_destroy_cq(c.recv_cq);
        }
        for ch in [c.send_cq_channel, c.recv_cq_channel] {
            if !ch.is_null() {
                crate::cq::ernic_ibv_destroy_comp_channel(ch);
            }
        }
        ernic_rdma_destroy_id(id);
    }
}
