//! librdmacm's C entry points (`rdma_cma.h`). As in rdma-core, a call
//! that fails answers -1 with `errno` set.

use std::ffi::{c_int, c_void};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;

use ernic_cm::private_data::cma;

use super::addr;
use super::agent;
use super::channel::{
    ernic_rdma_ack_cm_event, ernic_rdma_destroy_event_channel, ernic_rdma_get_cm_event, new_channel,
};
use super::id::{self, Channel, Id, IdState, Phase};
use crate::{abi, cma_abi as ca, errno};

/// -1 with `errno` set to `e`.
pub(crate) fn fail(e: c_int) -> c_int {
    errno::set(e);
    -1
}

/// 0, or -1 with `errno` set to `e`.
fn result(e: c_int) -> c_int {
    if e == 0 { 0 } else { fail(e) }
}

/// The one context rdma_cm ids carry (`id->verbs`), opened once.
pub(crate) fn cm_context() -> Option<*mut abi::ibv_context> {
    static CTX: Mutex<usize> = Mutex::new(0);
    let mut c = CTX.lock().unwrap_or_else(|p| p.into_inner());
    if *c == 0 {
        let rt = crate::runtime::get().ok()?;
        let dev = std::ptr::from_ref(&rt.ibv.c).cast_mut();
        // SAFETY: the runtime's device, from the list.
        let ctx = unsafe { crate::device::ernic_ibv_open_device(dev) };
        if ctx.is_null() {
            return None;
        }
        *c = ctx as usize;
    }
    Some(*c as *mut abi::ibv_context)
}

/// For a synchronous id: waits on its own channel for its next event,
/// which is kept as `id->event` (the one before it is acked), and answers
/// 0 if it is `want` with status 0, else -1 with errno.
fn complete(i: &Id, want: ca::rdma_cm_event_type) -> c_int {
    if !i.lock().sync {
        return 0;
    }
    let c = std::ptr::from_ref(&i.c).cast_mut();
    if !i.c.event.is_null() {
        // SAFETY: the id's last event, ours to free (the program's copy of
        // it is documented to last until the id's next call).
        unsafe {
            ernic_rdma_ack_cm_event(i.c.event);
            (*c).event = std::ptr::null_mut();
        }
    }
    let mut ev: *mut ca::rdma_cm_event = std::ptr::null_mut();
    // SAFETY: the id's own channel, live while it is.
    if unsafe { ernic_rdma_get_cm_event(i.c.channel, &mut ev) } != 0 {
        return -1;
    }
    // SAFETY: the event just taken, kept as the id's.
    let (kind, status) = unsafe {
        (*c).event = ev;
        ((*ev).event, (*ev).status)
    };
    if kind == want && status == 0 {
        return 0;
    }
    let e = match kind {
        ca::RDMA_CM_EVENT_REJECTED => libc::ECONNREFUSED,
        ca::RDMA_CM_EVENT_UNREACHABLE => libc::ETIMEDOUT,
        _ if status < 0 => -status,
        _ => libc::EIO,
    };
    fail(e)
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ch` a live channel; `out` writable.
pub unsafe extern "C" fn ernic_rdma_create_id(
    ch: *mut ca::rdma_event_channel,
    out: *mut *mut ca::rdma_cm_id,
    context: *mut c_void,
    ps: ca::rdma_port_space,
) -> c_int {
    if out.is_null() {
        return fail(libc::EINVAL);
    }
    // No channel: a synchronous id, with a channel of its own.
    let sync = ch.is_null();
    let ch = if sync {
        match new_channel() {
            Some(c) => c,
            None => return fail(libc::EMFILE),
        }
    } else {
        ch
    };
    if ps != ca::RDMA_PS_TCP && ps != ca::RDMA_PS_UDP {
        return fail(libc::EPROTONOSUPPORT);
    }
    if let Err(why) = agent::get() {
        tracing::warn!("rdma_create_id: {why}");
        return fail(libc::ENODEV);
    }
    let Some(verbs) = cm_context() else {
        return fail(libc::ENODEV);
    };
    // SAFETY: plain C data; zero is valid.
    let mut c: ca::rdma_cm_id = unsafe { std::mem::zeroed() };
    c.verbs = verbs;
    c.channel = ch;
    c.context = context;
    c.ps = ps;
    c.port_num = 1;
    c.qp_type = if ps == ca::RDMA_PS_UDP {
        abi::IBV_QPT_UD
    } else {
        abi::IBV_QPT_RC
    };
    let mut state = IdState::new();
    state.sync = sync;
    let b = Box::into_raw(Box::new(Id {
        c,
        st: Mutex::new(state),
    }));
    // SAFETY: `out` writable.
    unsafe { *out = b.cast() };
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id, destroyed once (its QP destroyed first).
pub unsafe extern "C" fn ernic_rdma_destroy_id(id: *mut ca::rdma_cm_id) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    if let Ok(a) = agent::get() {
        let mut st = a.lock();
        let s = i.lock();
        st.retries.retain(|(i, _)| *i != id as usize);
        st.sidr_out.retain(|_, o| o.id != id as usize);
        st.sidr_in.retain(|_, x| x.id != id as usize);
        if let Some(c) = s.conn {
            st.conns.remove(&c.0);
            if s.phase == Phase::Connected {
                let _ = st.cm.disconnect(std::time::Instant::now(), c, &[]);
            }
        }
        if let Some(svc) = s.service
            && st.listeners.get(&svc) == Some(&(id as usize))
        {
            st.listeners.remove(&svc);
        }
        agent::flush(&mut st);
    }
    // Events for it not yet taken go with it.
    // SAFETY: its channel outlives it.
    let chan = unsafe { &*i.c.channel.cast::<Channel>() };
    chan.queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|&e| {
            // SAFETY: queued events are live until taken.
            let mine = unsafe { (*e).c.id } == id;
            if mine {
                // SAFETY: ours to free: never handed out.
                drop(unsafe { Box::from_raw(e) });
            }
            !mine
        });
    // SAFETY: made by us (Box::into_raw), freed once.
    let b = unsafe { Box::from_raw(id.cast::<Id>()) };
    if b.lock().sync {
        if !b.c.event.is_null() {
            // SAFETY: the id's kept event, ours to free.
            unsafe { ernic_rdma_ack_cm_event(b.c.event) };
        }
        // SAFETY: the id's own channel, freed with it.
        unsafe { ernic_rdma_destroy_event_channel(b.c.channel) };
    }
    0
}

/// The socket address at `sa`, or None.
///
/// # Safety
///
/// `sa` NULL or a sockaddr of its family's size.
pub(crate) unsafe fn sockaddr(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: the family tells the size; storage is the largest.
    let fam = c_int::from(unsafe { (*sa).sa_family });
    // SAFETY: plain C data.
    let mut s: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let n = match fam {
        libc::AF_INET => size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => size_of::<libc::sockaddr_in6>(),
        _ => return None,
    };
    // SAFETY: `sa` readable for its family's size.
    unsafe {
        std::ptr::copy_nonoverlapping(sa.cast::<u8>(), std::ptr::from_mut(&mut s).cast::<u8>(), n)
    };
    addr::from_storage(&s)
}

/// A port not in use by a listener here, for an id that asked for 0.
fn ephemeral() -> u16 {
    // The kernel's pick, through a socket bound for a moment.
    std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|l| l.local_addr())
        .map_or(49_152 + (addr::psn() % 16_000) as u16, |a| a.port())
}

/// Sets the id's source address.
fn set_src(i: &Id, a: SocketAddr) {
    // SAFETY: the id is ours; the program reads its route after calls.
    let c = std::ptr::from_ref(&i.c).cast_mut();
    // SAFETY: as above.
    unsafe { (*c).route.addr.src.src_storage = addr::to_storage(a) };
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id; `addr` a sockaddr.
pub unsafe extern "C" fn ernic_rdma_bind_addr(
    id: *mut ca::rdma_cm_id,
    addr: *mut libc::sockaddr,
) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(i), Some(mut a)) = (unsafe { Id::from_c(id) }, unsafe { sockaddr(addr) }) else {
        return fail(libc::EINVAL);
    };
    if a.port() == 0 {
        a.set_port(ephemeral());
    }
    set_src(i, a);
    let mut s = i.lock();
    if s.phase != Phase::Idle {
        return fail(libc::EINVAL);
    }
    s.phase = Phase::Bound;
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live, bound id.
pub unsafe extern "C" fn ernic_rdma_listen(id: *mut ca::rdma_cm_id, _backlog: c_int) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let Ok(a) = agent::get() else {
        return fail(libc::ENODEV);
    };
    let Some(src) = i.addr(false) else {
        return fail(libc::EINVAL);
    };
    let svc = cma::service_id(i.c.ps as u16, src.port());
    let mut st = a.lock();
    let mut s = i.lock();
    if s.phase != Phase::Bound {
        return fail(libc::EINVAL);
    }
    if st.listeners.contains_key(&svc) {
        return fail(libc::EADDRINUSE);
    }
    st.listeners.insert(svc, id as usize);
    s.service = Some(svc);
    s.phase = Phase::Listening;
    0
}

#[unsafe(no_mangle)]
/// Resolves `dst` to the GIDs of the ports at that address (answered by
/// an ADDR_RESOLVED event at once; ADDR_ERROR when there are none).
///
/// # Safety
///
/// `id` a live id; `src` NULL or a sockaddr; `dst` a sockaddr.
pub unsafe extern "C" fn ernic_rdma_resolve_addr(
    id: *mut ca::rdma_cm_id,
    src: *mut libc::sockaddr,
    dst: *mut libc::sockaddr,
    _timeout_ms: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(i), Some(d)) = (unsafe { Id::from_c(id) }, unsafe { sockaddr(dst) }) else {
        return fail(libc::EINVAL);
    };
    let Ok(a) = agent::get() else {
        return fail(libc::ENODEV);
    };
    // SAFETY: the caller's contract.
    let bound = unsafe { sockaddr(src) }.or_else(|| i.addr(false));
    let s_addr = match bound {
        Some(mut b) => {
            if b.port() == 0 {
                b.set_port(ephemeral());
            }
            b
        }
        None => {
            let ip = if d.ip().is_loopback() {
                d.ip()
            } else {
                local_ip_towards(d.ip()).unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
            };
            SocketAddr::new(ip, ephemeral())
        }
    };
    set_src(i, s_addr);
    let cands = a.candidates(d.ip());
    {
        let c = std::ptr::from_ref(&i.c).cast_mut();
        // SAFETY: the id is ours; the program reads its route after calls.
        unsafe {
            (*c).route.addr.dst.dst_storage = addr::to_storage(d);
            (*c).route.addr.addr.ibaddr.sgid.raw = a.rt.gid.0;
            if let Some(g) = cands.first() {
                (*c).route.addr.addr.ibaddr.dgid.raw = g.0;
            }
            (*c).route.addr.addr.ibaddr.pkey = 0xffff_u16.to_be();
        }
    }
    let mut s = i.lock();
    s.candidates = cands;
    let found = !s.candidates.is_empty();
    if found {
        s.phase = Phase::AddrResolved;
    }
    drop(s);
    let (ev, status) = if found {
        (ca::RDMA_CM_EVENT_ADDR_RESOLVED, 0)
    } else {
        (ca::RDMA_CM_EVENT_ADDR_ERROR, -libc::EHOSTUNREACH)
    };
    // SAFETY: live id and channel.
    unsafe { id::post(i, std::ptr::null_mut(), ev, status, None, &[]) };
    complete(i, ca::RDMA_CM_EVENT_ADDR_RESOLVED)
}

/// The local address a connection to `dst` would leave from.
fn local_ip_towards(dst: IpAddr) -> Option<IpAddr> {
    let any: SocketAddr = match dst {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let s = std::net::UdpSocket::bind(any).ok()?;
    s.connect((dst, 9)).ok()?;
    s.local_addr().ok().map(|a| a.ip())
}

#[unsafe(no_mangle)]
/// The route is the GID pair: ROUTE_RESOLVED at once.
///
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_resolve_route(
    id: *mut ca::rdma_cm_id,
    _timeout_ms: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let mut s = i.lock();
    if s.phase != Phase::AddrResolved {
        return fail(libc::EINVAL);
    }
    s.phase = Phase::RouteResolved;
    drop(s);
    // SAFETY: live id and channel.
    unsafe {
        id::post(
            i,
            std::ptr::null_mut(),
            ca::RDMA_CM_EVENT_ROUTE_RESOLVED,
            0,
            None,
            &[],
        )
    };
    complete(i, ca::RDMA_CM_EVENT_ROUTE_RESOLVED)
}

/// Reads the program's connection parameters into the id's state.
///
/// # Safety
///
/// `p` NULL or readable, its private data readable for its length.
unsafe fn take_params(s: &mut IdState, p: *const ca::rdma_conn_param) {
    // SAFETY: the caller's contract.
    match unsafe { p.as_ref() } {
        Some(p) => {
            s.params = *p;
            let n = usize::from(p.private_data_len).min(id::REQ_DATA);
            if n > 0 && !p.private_data.is_null() {
                // SAFETY: the program's buffer of that length.
                let d = unsafe { std::slice::from_raw_parts(p.private_data.cast::<u8>(), n) };
                s.private[..n].copy_from_slice(d);
            }
            s.private_len = if p.private_data.is_null() { 0 } else { n };
        }
        None => {
            s.params.responder_resources = 16;
            s.params.initiator_depth = 16;
            s.params.retry_count = 7;
            s.params.rnr_retry_count = 7;
            s.private_len = 0;
        }
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id with a QP; `param` NULL or readable.
pub unsafe extern "C" fn ernic_rdma_connect(
    id: *mut ca::rdma_cm_id,
    param: *mut ca::rdma_conn_param,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let Ok(a) = agent::get() else {
        return fail(libc::ENODEV);
    };
    let mut st = a.lock();
    let mut s = i.lock();
    if s.phase != Phase::RouteResolved {
        return fail(libc::EINVAL);
    }
    // SAFETY: the caller's contract.
    unsafe { take_params(&mut s, param) };
    let r = id::send_req(a, &mut st, i, &mut s, 0);
    drop(s);
    drop(st);
    if r != 0 {
        return fail(r);
    }
    complete(i, ca::RDMA_CM_EVENT_ESTABLISHED)
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id with a QP, from a CONNECT_REQUEST; `param` NULL or readable.
pub unsafe extern "C" fn ernic_rdma_accept(
    id: *mut ca::rdma_cm_id,
    param: *mut ca::rdma_conn_param,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let Ok(a) = agent::get() else {
        return fail(libc::ENODEV);
    };
    let mut st = a.lock();
    // SAFETY: the caller's contract.
    let r = super::passive::accept(&mut st, i, unsafe { param.as_ref() });
    drop(st);
    if r != 0 {
        return fail(r);
    }
    if i.c.qp_type == abi::IBV_QPT_UD {
        // A UD accept is its SIDR_REP: nothing more comes.
        return 0;
    }
    complete(i, ca::RDMA_CM_EVENT_ESTABLISHED)
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id from a CONNECT_REQUEST; `data` readable for `len`.
pub unsafe extern "C" fn ernic_rdma_reject(
    id: *mut ca::rdma_cm_id,
    data: *const c_void,
    len: u8,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let Ok(a) = agent::get() else {
        return fail(libc::ENODEV);
    };
    let mut st = a.lock();
    let mut s = i.lock();
    let d: &[u8] = if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the program's buffer of that length.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), usize::from(len)) }
    };
    if i.c.qp_type == abi::IBV_QPT_UD && s.phase == Phase::Requested {
        return result(super::ud::reject_ud(&mut st, &mut s, d));
    }
    let (Phase::Requested, Some(c)) = (s.phase, s.conn) else {
        return fail(libc::EINVAL);
    };
    let r = st.cm.reject(
        std::time::Instant::now(),
        c,
        ernic_cm::rej::RejReason::ConsumerDefined,
        &[],
        d,
    );
    st.conns.remove(&c.0);
    s.phase = Phase::Disconnected;
    agent::flush(&mut st);
    result(if r.is_ok() { 0 } else { libc::EINVAL })
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_disconnect(id: *mut ca::rdma_cm_id) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let Ok(a) = agent::get() else {
        return fail(libc::ENODEV);
    };
    super::qp::error_qp(i.c.qp);
    let mut st = a.lock();
    let s = i.lock();
    let Some(c) = s.conn else {
        return fail(libc::EINVAL);
    };
    let r = st.cm.disconnect(std::time::Instant::now(), c, &[]);
    agent::flush(&mut st);
    // Already disconnecting (the peer's DREQ came first) is no failure.
    let _ = r;
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_establish(_id: *mut ca::rdma_cm_id) -> c_int {
    fail(libc::EOPNOTSUPP)
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_get_src_port(id: *mut ca::rdma_cm_id) -> u16 {
    // SAFETY: the caller's contract.
    unsafe { Id::from_c(id) }
        .and_then(|i| i.addr(false))
        .map_or(0, |a| a.port().to_be())
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_get_dst_port(id: *mut ca::rdma_cm_id) -> u16 {
    // SAFETY: the caller's contract.
    unsafe { Id::from_c(id) }
        .and_then(|i| i.addr(true))
        .map_or(0, |a| a.port().to_be())
}
