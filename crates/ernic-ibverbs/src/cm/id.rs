//! rdma_cm ids and their events: what `rdma_connect`, `rdma_listen`,
//! `rdma_accept`… do with the CM, and what each CM event becomes for the
//! program (an `rdma_cm_event` on the id's channel).
//!
//! An address names a listener by IP address and port, but ernic's devices
//! are named by GID, and several processes of one host share its
//! addresses. So resolving an address gives the GIDs of the mesh nodes at
//! that address (`Agent::candidates`), and connecting tries them in turn:
//! a port whose CM has no listener on the service answers a REJ with
//! reason "invalid service ID", and the next one is asked.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::Instant;

use ernic_cm::conn::{AcceptParams, ConnId, ConnectParams, Event, Peer};
use ernic_cm::private_data::cma;
use ernic_cm::rej::RejReason;
use ernic_cm::req;
use ernic_cm::sidr;
use ernic_verbs::Gid;

use super::agent::{Agent, State, flush};
use crate::{abi, cma_abi as ca, errno, fd};

/// Private data of a REQ after rdma_cm's header, which is the program's.
pub(crate) const REQ_DATA: usize = req::PRIVATE_DATA_LEN - cma::LEN;

/// An event channel: `struct rdma_event_channel` (its fd, an eventfd in
/// semaphore mode) and the events waiting on it.
#[repr(C)]
pub(crate) struct Channel {
    pub c: ca::rdma_event_channel,
    pub queue: Mutex<VecDeque<*mut Ev>>,
}

/// An event and the private data it points to.
#[repr(C)]
pub(crate) struct Ev {
    pub c: ca::rdma_cm_event,
    pub data: [u8; 256],
}

/// Where an id is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Idle,
    Bound,
    Listening,
    AddrResolved,
    RouteResolved,
    /// Our REQ is out, to the candidate at this index.
    Connecting(usize),
    /// A peer's REQ came; the program has yet to accept or reject.
    Requested,
    /// We accepted; the RTU has yet to come.
    Accepting,
    Connected,
    Disconnected,
}

/// What the library keeps of an id.
pub(crate) struct IdState {
    pub phase: Phase,
    pub conn: Option<ConnId>,
    /// The GIDs the destination may be at (active side).
    pub candidates: Vec<Gid>,
    /// The peer's port GID and QP, once known.
    pub remote: Option<(Gid, u32)>,
    /// The peer's first PSN, and ours.
    pub remote_psn: u32,
    pub psn: u32,
    /// What the active side asked for (its connect parameters).
    pub params: ca::rdma_conn_param,
    pub private: [u8; REQ_DATA],
    pub private_len: usize,
    /// The service id it listens on.
    pub service: Option<u64>,
    /// Rounds of candidates asked so far (active side).
    pub rounds: u32,
    /// A synchronous id (made with no channel): its calls wait for their
    /// outcome on a channel of the library's own.
    pub sync: bool,
    /// The QP a passive endpoint gives each request (`rdma_create_ep`).
    pub ep_qp: Option<(*mut abi::ibv_pd, abi::ibv_qp_init_attr)>,
    /// The SIDR_REQ a passive UD id answers.
    pub sidr: Option<sidr::Req>,
}

// SAFETY: the raw pointers in `ep_qp` name the program's PD and CQs, only
// handed back to the verbs calls, which take them from any thread.
unsafe impl Send for IdState {}

/// `struct rdma_cm_id` and the library's state for it.
#[repr(C)]
pub(crate) struct Id {
    pub c: ca::rdma_cm_id,
    pub st: Mutex<IdState>,
}

impl Id {
    /// # Safety
    ///
    /// `id` NULL or a live id of ours.
    pub(crate) unsafe fn from_c<'a>(id: *mut ca::rdma_cm_id) -> Option<&'a Id> {
        // SAFETY: `c` is the first member of our repr(C) `Id`.
        unsafe { id.cast::<Id>().as_ref() }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, IdState> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The C pointer programs hold.
    pub(crate) fn ptr(&self) -> *mut ca::rdma_cm_id {
        std::ptr::from_ref(&self.c).cast_mut()
    }

    /// A source or destination address of its route.
    pub(crate) fn addr(&self, dst: bool) -> Option<SocketAddr> {
        // SAFETY: both members are sockaddr_storage-sized views of one
        // buffer we fill; reading the storage form is always sound.
        let s = unsafe {
            if dst {
                self.c.route.addr.dst.dst_storage
            } else {
                self.c.route.addr.src.src_storage
            }
        };
        from_storage(&s)
    }
}

impl IdState {
    pub(crate) fn new() -> IdState {
        IdState {
            phase: Phase::Idle,
            conn: None,
            candidates: Vec::new(),
            remote: None,
            remote_psn: 0,
            psn: 0,
            // SAFETY: plain C data; zero is valid (a NULL pointer, zeros).
            params: unsafe { std::mem::zeroed() },
            private: [0; REQ_DATA],
            private_len: 0,
            service: None,
            rounds: 0,
            sync: false,
            ep_qp: None,
            sidr: None,
        }
    }
}

/// A socket address from a `sockaddr_storage`.
pub(crate) fn from_storage(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match c_int::from(s.ss_family) {
        libc::AF_INET => {
            // SAFETY: an AF_INET storage holds a sockaddr_in.
            let sin = unsafe { &*std::ptr::from_ref(s).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 storage holds a sockaddr_in6.
            let sin6 = unsafe { &*std::ptr::from_ref(s).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)),
                u16::from_be(sin6.sin6_port),
            ))
        }
        _ => None,
    }
}

/// A `sockaddr_storage` for a socket address.
pub(crate) fn to_storage(a: SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: plain C data; zero is valid.
    let mut s: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            // SAFETY: storage is larger than and aligned for sockaddr_in.
            let sin = unsafe { &mut *std::ptr::from_mut(&mut s).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *std::ptr::from_mut(&mut s).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
        }
    }
    s
}

/// Queues an event for `id` on its channel. `data` is copied with it.
///
/// # Safety
///
/// `id` live; its channel live.
pub(crate) unsafe fn post(
    id: &Id,
    listen: *mut ca::rdma_cm_id,
    event: ca::rdma_cm_event_type,
    status: c_int,
    conn: Option<ca::rdma_conn_param>,
    data: &[u8],
) {
    // SAFETY: the caller's contract.
    unsafe { post_on(id.c.channel, id, listen, event, status, conn, data) }
}

/// As [`post`], on channel `chan`.
///
/// # Safety
///
/// `id` live; `chan` live.
pub(crate) unsafe fn post_on(
    chan: *mut ca::rdma_event_channel,
    id: &Id,
    listen: *mut ca::rdma_cm_id,
    event: ca::rdma_cm_event_type,
    status: c_int,
    conn: Option<ca::rdma_conn_param>,
    data: &[u8],
) {
    // SAFETY: plain C data; zero is valid.
    let mut ev: Box<Ev> = Box::new(unsafe { std::mem::zeroed() });
    ev.c.id = id.ptr();
    ev.c.listen_id = listen;
    ev.c.event = event;
    ev.c.status = status;
    let n = data.len().min(ev.data.len());
    ev.data[..n].copy_from_slice(&data[..n]);
    let mut p = conn.unwrap_or_else(|| {
        // SAFETY: plain C data.
        unsafe { std::mem::zeroed() }
    });
    if n > 0 {
        p.private_data = ev.data.as_ptr().cast::<c_void>();
        p.private_data_len = n.min(255) as u8;
    }
    ev.c.param.conn = p;
    // SAFETY: the channel outlives its ids (the caller's contract).
    unsafe { queue(chan, ev) };
}

/// A random 24-bit PSN.
pub(crate) fn psn() -> u32 {
    let t = Instant::now().elapsed().as_nanos() as u32;
    (t ^ std::process::id().rotate_left(8) ^ 0x5a5a5a) & 0xff_ffff
}

/// rdma_cm's header for a REQ from `src` to `dst`.
fn cma_header(src: SocketAddr, dst: SocketAddr) -> [u8; cma::LEN] {
    let addrs = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => cma::Addrs::V4 { src: s, dst: d },
        (s, d) => cma::Addrs::V6 {
            src: match s {
                IpAddr::V4(v) => v.to_ipv6_mapped(),
                IpAddr::V6(v) => v,
            },
            dst: match d {
                IpAddr::V4(v) => v.to_ipv6_mapped(),
                IpAddr::V6(v) => v,
            },
        },
    };
    let mut b = [0u8; cma::LEN];
    cma::Repr {
        port: src.port(),
        addrs,
    }
    .emit(&mut cma::Packet::new_unchecked(&mut b[..]));
    b
}

/// Sends the REQ of `id` to its candidate `at`.
pub(crate) fn send_req(
    agent: &Agent,
    st: &mut State,
    id: &Id,
    s: &mut IdState,
    at: usize,
) -> c_int {
    let Some(&gid) = s.candidates.get(at) else {
        return libc::EHOSTUNREACH;
    };
    let (Some(src), Some(dst)) = (id.addr(false), id.addr(true)) else {
        return libc::EINVAL;
    };
    if id.c.qp.is_null() {
        return libc::EINVAL;
    }
    if id.c.qp_type == abi::IBV_QPT_UD {
        return send_sidr_req(st, id, s, at, gid, src, dst);
    }
    // SAFETY: the id's QP is live while the id has it.
    let qpn = unsafe { (*id.c.qp).qp_num };
    let mut pd = [0u8; req::PRIVATE_DATA_LEN];
    pd[..cma::LEN].copy_from_slice(&cma_header(src, dst));
    pd[cma::LEN..cma::LEN + s.private_len].copy_from_slice(&s.private[..s.private_len]);
    let p = &s.params;
    tracing::debug!(
        "rdma_connect: REQ for port {} to {gid} (candidate {} of {})",
        dst.port(),
        at + 1,
        s.candidates.len()
    );
    let r = st.cm.connect(
        Instant::now(),
        Peer { gid: gid.0, qpn: 1 },
        &ConnectParams {
            service_id: cma::service_id(id.c.ps as u16, dst.port()),
            local_qpn: qpn,
            starting_psn: s.psn,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            retry_count: p.retry_count.min(7),
            rnr_retry_count: p.rnr_retry_count.min(7),
            max_cm_retries: 15,
            remote_cm_response_timeout: 20,
            local_cm_response_timeout: 20,
            path_mtu: 5,
            partition_key: 0xffff,
            flow_control: p.flow_control != 0,
            srq: !id.c.srq.is_null(),
            primary: req::Path {
                local_gid: agent.rt.gid.0,
                remote_gid: gid.0,
                hop_limit: 64,
                ..req::Path::default()
            },
            private_data: &pd[..cma::LEN + s.private_len],
        },
    );
    match r {
        Ok(c) => {
            s.conn = Some(c);
            s.phase = Phase::Connecting(at);
            st.conns.insert(c.0, id.ptr() as usize);
            flush(st);
            0
        }
        Err(e) => {
            tracing::debug!("rdma_connect: {e}");
            libc::ENOMEM
        }
    }
}

/// Moves a QP through RTR to RTS towards `remote` (`ibv_modify_qp`).
pub(crate) fn connect_qp(
    qp: *mut abi::ibv_qp,
    remote: (Gid, u32),
    rq_psn: u32,
    sq_psn: u32,
) -> c_int {
    // SAFETY: plain C data; zero is valid.
    let mut a: abi::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = abi::IBV_QPS_RTR;
    a.path_mtu = abi::IBV_MTU_4096;
    a.dest_qp_num = remote.1;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid.raw = remote.0.0;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    let mask = abi::IBV_QP_STATE
        | abi::IBV_QP_AV
        | abi::IBV_QP_PATH_MTU
        | abi::IBV_QP_DEST_QPN
        | abi::IBV_QP_RQ_PSN
        | abi::IBV_QP_MAX_DEST_RD_ATOMIC
        | abi::IBV_QP_MIN_RNR_TIMER;
    // SAFETY: a live QP of the id; `a` a valid attribute set.
    let r = unsafe { crate::qp::ernic_ibv_modify_qp(qp, &mut a, mask as c_int) };
    if r != 0 {
        return r;
    }
    // SAFETY: as above.
    let mut a: abi::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = abi::IBV_QPS_RTS;
    a.sq_psn = sq_psn;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    let mask = abi::IBV_QP_STATE
        | abi::IBV_QP_SQ_PSN
        | abi::IBV_QP_TIMEOUT
        | abi::IBV_QP_RETRY_CNT
        | abi::IBV_QP_RNR_RETRY
        | abi::IBV_QP_MAX_QP_RD_ATOMIC;
    // SAFETY: as above.
    unsafe { crate::qp::ernic_ibv_modify_qp(qp, &mut a, mask as c_int) }
}

/// Moves a QP to ERROR (its outstanding work flushes).
pub(crate) fn error_qp(qp: *mut abi::ibv_qp) {
    if qp.is_null() {
        return;
    }
    // SAFETY: plain C data.
    let mut a: abi::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = abi::IBV_QPS_ERR;
    // SAFETY: a live QP of the id.
    let _ = unsafe { crate::qp::ernic_ibv_modify_qp(qp, &mut a, abi::IBV_QP_STATE as c_int) };
}

/// What a CM event means for the id it concerns.
pub(crate) fn on_event(agent: &Agent, st: &mut State, ev: Event) {
    let conn = match &ev {
        Event::Request { id, .. }
        | Event::Reply { id, .. }
        | Event::Established { id }
        | Event::Rejected { id, .. }
        | Event::TimedOut { id }
        | Event::DisconnectRequested { id }
        | Event::Disconnected { id }
        | Event::TimewaitExit { id }
        | Event::MraReceived { id, .. } => *id,
    };
    if let Event::Request { id, from, req } = ev {
        request(agent, st, id, from, &req);
        return;
    }
    let Some(&ptr) = st.conns.get(&conn.0) else {
        return;
    };
    // SAFETY: an id in `conns` is live (it leaves before it is freed,
    // under the agent's lock, which we hold).
    let id = unsafe { &*(ptr as *const Id) };
    let mut s = id.lock();
    match ev {
        Event::Reply { rep, .. } => {
            let Phase::Connecting(at) = s.phase else {
                return;
            };
            let gid = s.candidates[at];
            s.remote = Some((gid, rep.local_qpn));
            s.remote_psn = rep.starting_psn;
            let r = connect_qp(id.c.qp, (gid, rep.local_qpn), rep.starting_psn, s.psn);
            if r != 0 {
                let _ = st
                    .cm
                    .reject(Instant::now(), conn, RejReason::ConsumerDefined, &[], &[]);
                st.conns.remove(&conn.0);
                s.phase = Phase::Disconnected;
                drop(s);
                // SAFETY: live id and channel.
                unsafe {
                    post(
                        id,
                        std::ptr::null_mut(),
                        ca::RDMA_CM_EVENT_CONNECT_ERROR,
                        -r,
                        None,
                        &[],
                    )
                };
                return;
            }
            let _ = st.cm.ready_to_use(Instant::now(), conn);
            s.phase = Phase::Connected;
            let param = ca::rdma_conn_param {
                private_data: std::ptr::null(),
                private_data_len: 0,
                responder_resources: rep.responder_resources,
                initiator_depth: rep.initiator_depth,
                flow_control: u8::from(rep.end_to_end_flow_control),
                retry_count: 0,
                rnr_retry_count: rep.rnr_retry_count,
                srq: u8::from(rep.srq),
                qp_num: rep.local_qpn,
            };
            drop(s);
            // SAFETY: live id and channel.
            unsafe {
                post(
                    id,
                    std::ptr::null_mut(),
                    ca::RDMA_CM_EVENT_ESTABLISHED,
                    0,
                    Some(param),
                    &rep.private_data,
                )
            };
        }
        Event::Established { .. } => {
            if s.phase == Phase::Accepting {
                s.phase = Phase::Connected;
                drop(s);
                // SAFETY: live id and channel.
                unsafe {
                    post(
                        id,
                        std::ptr::null_mut(),
                        ca::RDMA_CM_EVENT_ESTABLISHED,
                        0,
                        None,
                        &[],
                    )
                };
            }
        }
        Event::Rejected {
            reason,
            private_data,
            ..
        } => {
            st.conns.remove(&conn.0);
            if let Phase::Connecting(at) = s.phase
                && reason == RejReason::InvalidServiceId
            {
                if at + 1 < s.candidates.len() {
                    // Not listening there: the next port at that address.
                    if send_req(agent, st, id, &mut s, at + 1) == 0 {
                        return;
                    }
                } else if s.rounds < RETRY_ROUNDS {
                    // No one listens yet, or this node's view of the mesh
                    // is behind: ask again in a moment.
                    s.rounds += 1;
                    st.retries.push((ptr, Instant::now() + RETRY_GAP));
                    return;
                }
            }
            s.phase = Phase::Disconnected;
            drop(s);
            // SAFETY: live id and channel.
            unsafe {
                post(
                    id,
                    std::ptr::null_mut(),
                    ca::RDMA_CM_EVENT_REJECTED,
                    c_int::from(u16::from(reason)),
                    None,
                    &private_data[..],
                )
            };
        }
        Event::TimedOut { .. } => {
            st.conns.remove(&conn.0);
            s.phase = Phase::Disconnected;
            drop(s);
            // SAFETY: live id and channel.
            unsafe {
                post(
                    id,
                    std::ptr::null_mut(),
                    ca::RDMA_CM_EVENT_UNREACHABLE,
                    -libc::ETIMEDOUT,
                    None,
                    &[],
                )
            };
        }
        Event::DisconnectRequested { .. } => {
            error_qp(id.c.qp);
        }
        Event::Disconnected { .. } => {
            st.conns.remove(&conn.0);
            let was = s.phase;
            s.phase = Phase::Disconnected;
            drop(s);
            error_qp(id.c.qp);
            if was == Phase::Connected {
                // SAFETY: live id and channel.
                unsafe {
                    post(
                        id,
                        std::ptr::null_mut(),
                        ca::RDMA_CM_EVENT_DISCONNECTED,
                        0,
                        None,
                        &[],
                    )
                };
            }
        }
        Event::TimewaitExit { .. } | Event::MraReceived { .. } | Event::Request { .. } => {}
    }
}

/// Sends the SIDR_REQ of a UD id to its candidate `at`.
fn send_sidr_req(
    st: &mut State,
    id: &Id,
    s: &mut IdState,
    at: usize,
    gid: Gid,
    src: SocketAddr,
    dst: SocketAddr,
) -> c_int {
    let request_id = st.sidr_next;
    st.sidr_next = st.sidr_next.wrapping_add(1);
    let mut private_data = [0u8; sidr::REQ_PRIVATE_DATA_LEN];
    private_data[..cma::LEN].copy_from_slice(&cma_header(src, dst));
    let n = s.private_len.min(sidr::REQ_PRIVATE_DATA_LEN - cma::LEN);
    private_data[cma::LEN..cma::LEN + n].copy_from_slice(&s.private[..n]);
    let m = sidr::Req {
        tid: u64::from(request_id) << 32 | u64::from(std::process::id()),
        request_id,
        partition_key: 0xffff,
        service_id: cma::service_id(id.c.ps as u16, dst.port()),
        private_data,
    };
    tracing::debug!(
        "rdma_connect (UD): SIDR_REQ for port {} to {gid}",
        dst.port()
    );
    st.sidr_out.insert(request_id, id.ptr() as usize);
    s.phase = Phase::Connecting(at);
    super::agent::send_mad(st, gid, &m.emit());
    0
}

/// A SIDR MAD from `from`'s QP 1.
pub(crate) fn on_sidr(agent: &Agent, st: &mut State, from: Peer, mad: &[u8; 256]) {
    if let Ok(r) = sidr::Req::parse(mad) {
        sidr_request(agent, st, from, &r);
    } else if let Ok(r) = sidr::Rep::parse(mad) {
        sidr_reply(agent, st, from, &r);
    }
}

/// Answers a SIDR_REQ with status `status` (and no QP).
fn sidr_refuse(st: &mut State, to: Gid, r: &sidr::Req, status: sidr::Status) {
    let rep = sidr::Rep {
        tid: r.tid,
        request_id: r.request_id,
        status,
        info_length: 0,
        qpn: 0,
        service_id: r.service_id,
        qkey: 0,
        info: [0; sidr::REP_INFO_LEN],
        private_data: [0; sidr::REP_PRIVATE_DATA_LEN],
    };
    super::agent::send_mad(st, to, &rep.emit());
}

/// The UD address of a peer port, as `param.ud.ah_attr`.
fn ah_to(gid: Gid) -> abi::ibv_ah_attr {
    // SAFETY: plain C data; zero is valid.
    let mut a: abi::ibv_ah_attr = unsafe { std::mem::zeroed() };
    a.is_global = 1;
    a.grh.dgid.raw = gid.0;
    a.grh.hop_limit = 64;
    a.port_num = 1;
    a
}

/// A peer's SIDR_REQ: a new UD id on the listener's channel, or a refusal.
fn sidr_request(agent: &Agent, st: &mut State, from: Peer, r: &sidr::Req) {
    let gid = Gid(from.gid);
    let Some(&lptr) = st.listeners.get(&r.service_id) else {
        sidr_refuse(st, gid, r, sidr::Status::Unsupported);
        return;
    };
    // SAFETY: a listener in `listeners` is live (see `request`).
    let listener = unsafe { &*(lptr as *const Id) };
    let (c, sync) = match child_of(agent, listener, from, r.service_id, &r.private_data) {
        Ok(x) => x,
        Err(RejReason::NoResources) => {
            sidr_refuse(st, gid, r, sidr::Status::NoQp);
            return;
        }
        Err(_) => {
            sidr_refuse(st, gid, r, sidr::Status::Reject);
            return;
        }
    };
    let mut s = IdState::new();
    s.sync = sync;
    s.phase = Phase::Requested;
    s.remote = Some((gid, 1));
    s.sidr = Some(*r);
    let child = Box::into_raw(Box::new(Id {
        c,
        st: Mutex::new(s),
    }));
    // SAFETY: the child was just made; the listener's channel is live.
    unsafe {
        post_ud(
            listener.c.channel,
            &*child,
            listener.ptr(),
            ca::RDMA_CM_EVENT_CONNECT_REQUEST,
            0,
            ah_to(gid),
            0,
            0,
            &r.private_data[cma::LEN..],
        )
    };
}

/// The answer to our SIDR_REQ.
fn sidr_reply(agent: &Agent, st: &mut State, from: Peer, r: &sidr::Rep) {
    let Some(ptr) = st.sidr_out.remove(&r.request_id) else {
        return;
    };
    // SAFETY: ids in `sidr_out` are live (destroying one takes it out
    // under the agent's lock).
    let id = unsafe { &*(ptr as *const Id) };
    let mut s = id.lock();
    let Phase::Connecting(at) = s.phase else {
        return;
    };
    match r.status {
        sidr::Status::Success => {
            s.phase = Phase::Connected;
            s.remote = Some((Gid(from.gid), r.qpn));
            drop(s);
            // SAFETY: live id and channel.
            unsafe {
                post_ud(
                    id.c.channel,
                    id,
                    std::ptr::null_mut(),
                    ca::RDMA_CM_EVENT_ESTABLISHED,
                    0,
                    ah_to(Gid(from.gid)),
                    r.qpn,
                    r.qkey,
                    &r.private_data,
                )
            };
        }
        sidr::Status::Unsupported if at + 1 < s.candidates.len() => {
            let _ = send_req(agent, st, id, &mut s, at + 1);
        }
        sidr::Status::Unsupported if s.rounds < RETRY_ROUNDS => {
            s.rounds += 1;
            st.retries.push((ptr, Instant::now() + RETRY_GAP));
        }
        other => {
            s.phase = Phase::Disconnected;
            drop(s);
            tracing::debug!("rdma_connect (UD): SIDR_REP {other:?}");
            // SAFETY: live id and channel.
            unsafe {
                post(
                    id,
                    std::ptr::null_mut(),
                    ca::RDMA_CM_EVENT_UNREACHABLE,
                    -libc::ECONNREFUSED,
                    None,
                    &[],
                )
            };
        }
    }
}

/// `rdma_accept` of a UD id: the SIDR_REP naming its QP.
fn accept_ud(st: &mut State, id: &Id, s: &mut IdState, data: &[u8]) -> c_int {
    let (Some(r), Some((gid, _))) = (s.sidr, s.remote) else {
        return libc::EINVAL;
    };
    if id.c.qp.is_null() {
        return libc::EINVAL;
    }
    let mut private_data = [0u8; sidr::REP_PRIVATE_DATA_LEN];
    let n = data.len().min(private_data.len());
    private_data[..n].copy_from_slice(&data[..n]);
    let rep = sidr::Rep {
        tid: r.tid,
        request_id: r.request_id,
        status: sidr::Status::Success,
        info_length: 0,
        // SAFETY: the id's QP is live.
        qpn: unsafe { (*id.c.qp).qp_num },
        service_id: r.service_id,
        qkey: ca::RDMA_UDP_QKEY as u32,
        info: [0; sidr::REP_INFO_LEN],
        private_data,
    };
    super::agent::send_mad(st, gid, &rep.emit());
    s.phase = Phase::Connected;
    0
}

/// Queues a UD event (`param.ud`) for `id` on channel `chan`.
///
/// # Safety
///
/// `id` live; `chan` live.
#[allow(clippy::too_many_arguments)]
unsafe fn post_ud(
    chan: *mut ca::rdma_event_channel,
    id: &Id,
    listen: *mut ca::rdma_cm_id,
    event: ca::rdma_cm_event_type,
    status: c_int,
    ah_attr: abi::ibv_ah_attr,
    qp_num: u32,
    qkey: u32,
    data: &[u8],
) {
    // SAFETY: plain C data; zero is valid.
    let mut ev: Box<Ev> = Box::new(unsafe { std::mem::zeroed() });
    ev.c.id = id.ptr();
    ev.c.listen_id = listen;
    ev.c.event = event;
    ev.c.status = status;
    let n = data.len().min(ev.data.len());
    ev.data[..n].copy_from_slice(&data[..n]);
    ev.c.param.ud = ca::rdma_ud_param {
        private_data: if n > 0 {
            ev.data.as_ptr().cast::<c_void>()
        } else {
            std::ptr::null()
        },
        private_data_len: n.min(255) as u8,
        ah_attr,
        qp_num,
        qkey,
    };
    // SAFETY: the caller's contract.
    unsafe { queue(chan, ev) };
}

/// Puts an event on a channel and wakes its reader.
///
/// # Safety
///
/// `chan` live.
unsafe fn queue(chan: *mut ca::rdma_event_channel, ev: Box<Ev>) {
    // SAFETY: the caller's contract.
    let chan = unsafe { &*chan.cast::<Channel>() };
    chan.queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push_back(Box::into_raw(ev));
    fd::signal(chan.c.fd);
}

/// Rounds of asking every candidate before a connect is rejected.
const RETRY_ROUNDS: u32 = 10;
/// The pause between two rounds.
const RETRY_GAP: std::time::Duration = std::time::Duration::from_millis(200);

/// Asks the candidates of the active id at `ptr` again, found afresh.
pub(crate) fn retry(agent: &Agent, st: &mut State, ptr: usize) {
    // SAFETY: ids in `retries` are live: destroying one takes it out
    // under the agent's lock.
    let id = unsafe { &*(ptr as *const Id) };
    let mut s = id.lock();
    let Some(dst) = id.addr(true) else { return };
    s.candidates = agent.candidates(dst.ip());
    if send_req(agent, st, id, &mut s, 0) != 0 {
        s.phase = Phase::Disconnected;
        drop(s);
        // SAFETY: live id and channel.
        unsafe {
            post(
                id,
                std::ptr::null_mut(),
                ca::RDMA_CM_EVENT_REJECTED,
                c_int::from(u16::from(RejReason::InvalidServiceId)),
                None,
                &[],
            )
        };
    }
}

/// Events a listener's channel may hold before new requests are refused.
const MAX_WAITING: usize = 1024;

/// The new id of a request to `listener` from `from`: the listener's
/// settings with no objects of its own, its route from rdma_cm's header in
/// `private_data`, and (for a synchronous listener) a channel of its own.
/// The reason to refuse the request, when it cannot be made.
fn child_of(
    agent: &Agent,
    listener: &Id,
    from: Peer,
    service_id: u64,
    private_data: &[u8],
) -> Result<(ca::rdma_cm_id, bool), RejReason> {
    // SAFETY: a listener's channel outlives it.
    let waiting = unsafe { &*listener.c.channel.cast::<Channel>() }
        .queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .len();
    if waiting >= MAX_WAITING {
        // The program is not taking its events: a flood of requests must
        // not grow without bound.
        return Err(RejReason::NoResources);
    }
    let head = cma::Repr::parse(&cma::Packet::new_unchecked(private_data))
        .map_err(|_| RejReason::ConsumerDefined)?;
    let (src, dst) = match head.addrs {
        cma::Addrs::V4 { src, dst } => (IpAddr::V4(src), IpAddr::V4(dst)),
        cma::Addrs::V6 { src, dst } => (IpAddr::V6(src), IpAddr::V6(dst)),
    };
    let port = cma::service_port(service_id, listener.c.ps as u16).unwrap_or(0);
    let mut c = listener.c;
    c.qp = std::ptr::null_mut();
    c.event = std::ptr::null_mut();
    c.send_cq = std::ptr::null_mut();
    c.recv_cq = std::ptr::null_mut();
    c.send_cq_channel = std::ptr::null_mut();
    c.recv_cq_channel = std::ptr::null_mut();
    c.srq = std::ptr::null_mut();
    c.route.addr.src.src_storage = to_storage(SocketAddr::new(dst, port));
    c.route.addr.dst.dst_storage = to_storage(SocketAddr::new(src, head.port));
    c.route.addr.addr.ibaddr.sgid.raw = agent.rt.gid.0;
    c.route.addr.addr.ibaddr.dgid.raw = from.gid;
    c.route.path_rec = std::ptr::null_mut();
    c.route.num_paths = 0;
    let sync = listener.lock().sync;
    if sync {
        // A synchronous listener's requests are synchronous ids too, each
        // waiting on a channel of its own; the request itself is for
        // rdma_get_request, on the listener's.
        c.channel = super::api::new_channel().ok_or(RejReason::NoResources)?;
    }
    Ok((c, sync))
}

/// A peer's REQ: a new id on the listener's channel, or a REJ.
fn request(agent: &Agent, st: &mut State, conn: ConnId, from: Peer, r: &req::Repr) {
    let Some(&lptr) = st.listeners.get(&r.service_id) else {
        tracing::debug!(
            "rdma_cm: REQ for service {:#x}: no listener here",
            r.service_id
        );
        let _ = st
            .cm
            .reject(Instant::now(), conn, RejReason::InvalidServiceId, &[], &[]);
        return;
    };
    // SAFETY: a listener in `listeners` is live (it leaves before it is
    // freed, under the agent's lock).
    let listener = unsafe { &*(lptr as *const Id) };
    let (c, sync) = match child_of(agent, listener, from, r.service_id, &r.private_data) {
        Ok(x) => x,
        Err(reason) => {
            let _ = st.cm.reject(Instant::now(), conn, reason, &[], &[]);
            return;
        }
    };
    let mut s = IdState::new();
    s.sync = sync;
    s.phase = Phase::Requested;
    s.conn = Some(conn);
    s.remote = Some((Gid(from.gid), r.local_qpn));
    s.remote_psn = r.starting_psn;
    s.psn = psn();
    s.params.responder_resources = r.responder_resources;
    s.params.initiator_depth = r.initiator_depth;
    let child = Box::into_raw(Box::new(Id {
        c,
        st: Mutex::new(s),
    }));
    st.conns.insert(conn.0, child as usize);
    let param = ca::rdma_conn_param {
        private_data: std::ptr::null(),
        private_data_len: 0,
        responder_resources: r.responder_resources,
        initiator_depth: r.initiator_depth,
        flow_control: u8::from(r.end_to_end_flow_control),
        retry_count: r.retry_count,
        rnr_retry_count: r.rnr_retry_count,
        srq: u8::from(r.srq),
        qp_num: r.local_qpn,
    };
    // SAFETY: the child was just made; the listener's channel is live.
    unsafe {
        post_on(
            listener.c.channel,
            &*child,
            listener.ptr(),
            ca::RDMA_CM_EVENT_CONNECT_REQUEST,
            0,
            Some(param),
            &r.private_data[cma::LEN..],
        )
    };
}

/// `rdma_accept`'s work, under the agent's lock.
pub(crate) fn accept(st: &mut State, id: &Id, param: Option<&ca::rdma_conn_param>) -> c_int {
    let mut s = id.lock();
    if id.c.qp_type == abi::IBV_QPT_UD && s.phase == Phase::Requested {
        let mut data: &[u8] = &[];
        if let Some(p) = param
            && !p.private_data.is_null()
            && p.private_data_len > 0
        {
            // SAFETY: the program's buffer of that length.
            data = unsafe {
                std::slice::from_raw_parts(
                    p.private_data.cast::<u8>(),
                    usize::from(p.private_data_len),
                )
            };
        }
        let r = accept_ud(st, id, &mut s, data);
        return r;
    }
    let (Phase::Requested, Some(conn), Some(remote)) = (s.phase, s.conn, s.remote) else {
        return libc::EINVAL;
    };
    if id.c.qp.is_null() {
        return libc::EINVAL;
    }
    let r = connect_qp(id.c.qp, remote, s.remote_psn, s.psn);
    if r != 0 {
        return r;
    }
    // SAFETY: the id's QP is live.
    let qpn = unsafe { (*id.c.qp).qp_num };
    let mut data: &[u8] = &[];
    let (mut rr, mut id_) = (s.params.initiator_depth, s.params.responder_resources);
    if let Some(p) = param {
        if !p.private_data.is_null() && p.private_data_len > 0 {
            // SAFETY: the program's buffer of that length.
            data = unsafe {
                std::slice::from_raw_parts(
                    p.private_data.cast::<u8>(),
                    usize::from(p.private_data_len),
                )
            };
        }
        rr = p.responder_resources;
        id_ = p.initiator_depth;
    }
    let r = st.cm.accept(
        Instant::now(),
        conn,
        &AcceptParams {
            local_qpn: qpn,
            starting_psn: s.psn,
            responder_resources: rr,
            initiator_depth: id_,
            rnr_retry_count: 7,
            flow_control: true,
            srq: !id.c.srq.is_null(),
            private_data: data,
        },
    );
    match r {
        Ok(()) => {
            s.phase = Phase::Accepting;
            flush(st);
            0
        }
        Err(e) => {
            tracing::debug!("rdma_accept: {e}");
            errno::set(libc::EINVAL);
            libc::EINVAL
        }
    }
}
