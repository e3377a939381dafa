//! librdmacm's C entry points (`rdma_cma.h`). As in rdma-core, a call
//! that fails answers -1 with `errno` set.

use std::ffi::{c_char, c_int, c_void};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;

use ernic_cm::private_data::cma;

use super::agent;
use super::id::{self, Channel, Ev, Id, IdState, Phase};
use crate::{abi, cma_abi as ca, errno, fd};

/// -1 with `errno` set to `e`.
fn fail(e: c_int) -> c_int {
    errno::set(e);
    -1
}

/// 0, or -1 with `errno` set to `e`.
fn result(e: c_int) -> c_int {
    if e == 0 { 0 } else { fail(e) }
}

/// The one context rdma_cm ids carry (`id->verbs`), opened once.
fn cm_context() -> Option<*mut abi::ibv_context> {
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

/// A new event channel; None when no fd can be had.
pub(crate) fn new_channel() -> Option<*mut ca::rdma_event_channel> {
    let fd = fd::eventfd()?;
    Some(
        Box::into_raw(Box::new(Channel {
            c: ca::rdma_event_channel { fd },
            queue: Mutex::new(Default::default()),
        }))
        .cast(),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_rdma_create_event_channel() -> *mut ca::rdma_event_channel {
    new_channel().unwrap_or_else(|| errno::null(libc::EMFILE))
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
/// `ch` a channel with no ids left, destroyed once.
pub unsafe extern "C" fn ernic_rdma_destroy_event_channel(ch: *mut ca::rdma_event_channel) {
    if ch.is_null() {
        return;
    }
    // SAFETY: made by rdma_create_event_channel, freed once.
    let b = unsafe { Box::from_raw(ch.cast::<Channel>()) };
    for ev in b.queue.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
        // SAFETY: events not taken are ours to free.
        drop(unsafe { Box::from_raw(ev) });
    }
    fd::close(b.c.fd);
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
        st.sidr_out.retain(|_, i| *i != id as usize);
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
unsafe fn sockaddr(sa: *const libc::sockaddr) -> Option<SocketAddr> {
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
    id::from_storage(&s)
}

/// A port not in use by a listener here, for an id that asked for 0.
fn ephemeral() -> u16 {
    // The kernel's pick, through a socket bound for a moment.
    std::net::TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|l| l.local_addr())
        .map_or(49_152 + (id::psn() % 16_000) as u16, |a| a.port())
}

/// Sets the id's source address.
fn set_src(i: &Id, a: SocketAddr) {
    // SAFETY: the id is ours; the program reads its route after calls.
    let c = std::ptr::from_ref(&i.c).cast_mut();
    // SAFETY: as above.
    unsafe { (*c).route.addr.src.src_storage = id::to_storage(a) };
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
            (*c).route.addr.dst.dst_storage = id::to_storage(d);
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

#[unsafe(no_mangle)]
/// Creates the id's QP (and its CQs when the attributes name none), in
/// INIT (RC: remote rights granted; UD: RTS with rdma_cm's Q_Key).
///
/// # Safety
///
/// `id` a live id; `pd` NULL or a PD of its context; `attr` readable.
pub unsafe extern "C" fn ernic_rdma_create_qp(
    id: *mut ca::rdma_cm_id,
    pd: *mut abi::ibv_pd,
    attr: *mut abi::ibv_qp_init_attr,
) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(i), Some(a)) = (unsafe { Id::from_c(id) }, unsafe { attr.as_mut() }) else {
        return fail(libc::EINVAL);
    };
    let c = std::ptr::from_ref(&i.c).cast_mut();
    let pd = if pd.is_null() {
        if i.c.pd.is_null() {
            // SAFETY: the id's context is open.
            let p = unsafe { crate::pd::ernic_ibv_alloc_pd(i.c.verbs) };
            if p.is_null() {
                return -1;
            }
            // SAFETY: the id is ours.
            unsafe { (*c).pd = p };
        }
        i.c.pd
    } else {
        pd
    };
    // CQs the attributes do not name are made here, each with a channel,
    // the id as its context (rdma_get_send_comp and rdma_get_recv_comp
    // check both).
    for send in [true, false] {
        let (cq, depth) = if send {
            (&mut a.send_cq, a.cap.max_send_wr)
        } else {
            (&mut a.recv_cq, a.cap.max_recv_wr)
        };
        if !cq.is_null() {
            continue;
        }
        // SAFETY: the id's context is open.
        let ch = unsafe { crate::cq::ernic_ibv_create_comp_channel(i.c.verbs) };
        // SAFETY: as above; `ch` a channel of it (or NULL).
        let made = unsafe {
            crate::cq::ernic_ibv_create_cq(i.c.verbs, depth.max(1) as c_int, id.cast(), ch, 0)
        };
        if made.is_null() {
            return -1;
        }
        *cq = made;
        // SAFETY: the id is ours.
        unsafe {
            if send {
                (*c).send_cq = made;
                (*c).send_cq_channel = ch;
            } else {
                (*c).recv_cq = made;
                (*c).recv_cq_channel = ch;
            }
        }
    }
    a.qp_type = i.c.qp_type;
    // SAFETY: the caller's contract.
    let qp = unsafe { crate::qp::ernic_ibv_create_qp(pd, a) };
    if qp.is_null() {
        return -1;
    }
    // SAFETY: plain C data.
    let mut x: abi::ibv_qp_attr = unsafe { std::mem::zeroed() };
    x.qp_state = abi::IBV_QPS_INIT;
    x.port_num = 1;
    let mut mask = abi::IBV_QP_STATE | abi::IBV_QP_PKEY_INDEX | abi::IBV_QP_PORT;
    if i.c.qp_type == abi::IBV_QPT_UD {
        x.qkey = ca::RDMA_UDP_QKEY as u32;
        mask |= abi::IBV_QP_QKEY;
    } else {
        x.qp_access_flags = abi::IBV_ACCESS_REMOTE_WRITE
            | abi::IBV_ACCESS_REMOTE_READ
            | abi::IBV_ACCESS_REMOTE_ATOMIC;
        mask |= abi::IBV_QP_ACCESS_FLAGS;
    }
    // SAFETY: the QP just made.
    let mut r = unsafe { crate::qp::ernic_ibv_modify_qp(qp, &mut x, mask as c_int) };
    if r == 0 && i.c.qp_type == abi::IBV_QPT_UD {
        for state in [abi::IBV_QPS_RTR, abi::IBV_QPS_RTS] {
            x.qp_state = state;
            // SAFETY: as above.
            r = unsafe { crate::qp::ernic_ibv_modify_qp(qp, &mut x, abi::IBV_QP_STATE as c_int) };
            if r != 0 {
                break;
            }
        }
    }
    if r != 0 {
        // SAFETY: the QP just made, not handed out.
        unsafe { crate::qp::ernic_ibv_destroy_qp(qp) };
        return fail(r);
    }
    // SAFETY: the id is ours.
    unsafe {
        (*c).qp = qp;
        (*c).srq = a.srq;
        (*c).pd = pd;
    }
    i.lock().psn = id::psn();
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `id` a live id.
pub unsafe extern "C" fn ernic_rdma_destroy_qp(id: *mut ca::rdma_cm_id) {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return;
    };
    if !i.c.qp.is_null() {
        // SAFETY: the id's QP, destroyed once (the pointer is cleared).
        unsafe {
            crate::qp::ernic_ibv_destroy_qp(i.c.qp);
            (*std::ptr::from_ref(&i.c).cast_mut()).qp = std::ptr::null_mut();
        }
    }
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
    let r = id::accept(&mut st, i, unsafe { param.as_ref() });
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
        let mut any = id::to_storage(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
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
    let (Phase::Requested, Some(c)) = (s.phase, s.conn) else {
        return fail(libc::EINVAL);
    };
    let d: &[u8] = if data.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: the program's buffer of that length.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), usize::from(len)) }
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
    id::error_qp(i.c.qp);
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
/// `ch` a live channel; `out` writable.
pub unsafe extern "C" fn ernic_rdma_get_cm_event(
    ch: *mut ca::rdma_event_channel,
    out: *mut *mut ca::rdma_cm_event,
) -> c_int {
    if ch.is_null() || out.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: a live channel.
    let chan = unsafe { &*ch.cast::<Channel>() };
    loop {
        if let Err(e) = fd::take(chan.c.fd) {
            return fail(e);
        }
        let ev = chan
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        if let Some(ev) = ev {
            // SAFETY: `out` writable; the event is the program's until acked.
            unsafe { *out = ev.cast() };
            return 0;
        }
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ev` an event from rdma_get_cm_event, acked once.
pub unsafe extern "C" fn ernic_rdma_ack_cm_event(ev: *mut ca::rdma_cm_event) -> c_int {
    if ev.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: made by us (Box<Ev>), freed once.
    drop(unsafe { Box::from_raw(ev.cast::<Ev>()) });
    0
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
    ernic_rdma_migrate_id,
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

#[unsafe(no_mangle)]
/// Resolves `node` and `service` with the system's resolver: one entry,
/// the first address found, as the source of a passive (RAI_PASSIVE)
/// request or the destination of an active one. Answers 0, or -1 with
/// errno (ENOENT when nothing resolves).
///
/// # Safety
///
/// `node`, `service` NULL or NUL-terminated; `hints` NULL or readable;
/// `res` writable.
pub unsafe extern "C" fn ernic_rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const ca::rdma_addrinfo,
    res: *mut *mut ca::rdma_addrinfo,
) -> c_int {
    if res.is_null() || (node.is_null() && service.is_null()) {
        return fail(libc::EINVAL);
    }
    // SAFETY: `hints` NULL or readable.
    let h = unsafe { hints.as_ref() };
    let flags = h.map_or(0, |h| h.ai_flags);
    let passive = flags & ca::RAI_PASSIVE != 0;
    // SAFETY: plain C data; zero is valid.
    let mut want: libc::addrinfo = unsafe { std::mem::zeroed() };
    want.ai_family = h.map_or(libc::AF_UNSPEC, |h| h.ai_family);
    want.ai_socktype = libc::SOCK_STREAM;
    if passive {
        want.ai_flags |= libc::AI_PASSIVE;
    }
    if flags & ca::RAI_NUMERICHOST != 0 {
        want.ai_flags |= libc::AI_NUMERICHOST;
    }
    let mut found: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: the strings are the program's (NULL or NUL-terminated);
    // `found` is written by getaddrinfo and freed below.
    let r = unsafe { libc::getaddrinfo(node, service, &want, &mut found) };
    if r != 0 || found.is_null() {
        return fail(libc::ENOENT);
    }
    // SAFETY: a list getaddrinfo made; its first entry's address.
    let addr = unsafe { sockaddr((*found).ai_addr) };
    // SAFETY: freed once, after the copy above.
    unsafe { libc::freeaddrinfo(found) };
    let Some(addr) = addr else {
        return fail(libc::ENOENT);
    };
    // SAFETY: plain C data; zero is valid.
    let mut b: Box<AddrInfo> = Box::new(unsafe { std::mem::zeroed() });
    b.c.ai_flags = flags;
    b.c.ai_family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    b.c.ai_qp_type = h.map_or(0, |h| h.ai_qp_type);
    if b.c.ai_qp_type == 0 {
        b.c.ai_qp_type = abi::IBV_QPT_RC as c_int;
    }
    b.c.ai_port_space = h.map_or(0, |h| h.ai_port_space);
    if b.c.ai_port_space == 0 {
        b.c.ai_port_space = if b.c.ai_qp_type == abi::IBV_QPT_UD as c_int {
            ca::RDMA_PS_UDP as c_int
        } else {
            ca::RDMA_PS_TCP as c_int
        };
    }
    if passive {
        b.src = id::to_storage(addr);
        b.c.ai_src_len = sa_len(&addr);
        b.c.ai_src_addr = std::ptr::from_mut(&mut b.src).cast();
    } else {
        b.dst = id::to_storage(addr);
        b.c.ai_dst_len = sa_len(&addr);
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
