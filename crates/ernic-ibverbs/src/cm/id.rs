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
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Instant;

use ernic_cm::conn::{ConnId, ConnectParams, Event, Peer};
use ernic_cm::private_data::cma;
use ernic_cm::rej::RejReason;
use ernic_cm::req;
use ernic_verbs::Gid;

use super::addr::{cma_header, from_storage};
use super::agent::{Agent, State, flush};
use super::qp::{connect_qp, error_qp};
use crate::{abi, cma_abi as ca, fd};

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
    /// The `rnr_retry` our QP sends with: what the peer's REQ or REP asked
    /// of this side (IB CM's rule; 7 until one arrives).
    pub rnr_retry: u8,
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
    pub sidr: Option<ernic_cm::sidr::Req>,
    /// An active UD id's SIDR request id (0 until it first connects): the
    /// same for every candidate and resend, so a peer knows a repeat.
    pub sidr_request: u32,
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
            rnr_retry: 7,
            // SAFETY: plain C data; zero is valid (a NULL pointer, zeros).
            params: unsafe { std::mem::zeroed() },
            private: [0; REQ_DATA],
            private_len: 0,
            service: None,
            rounds: 0,
            sync: false,
            ep_qp: None,
            sidr: None,
            sidr_request: 0,
        }
    }
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
    let (mut ev, n) = event_for(id, listen, event, status, data);
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
        return super::ud::send_sidr_req(st, id, s, at, gid, src, dst);
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
        super::passive::request(agent, st, id, from, &req);
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
            s.rnr_retry = rep.rnr_retry_count.min(7);
            let r = connect_qp(
                id.c.qp,
                (gid, rep.local_qpn),
                rep.starting_psn,
                s.psn,
                s.rnr_retry,
            );
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

/// A new event for `id` with `data` copied in (its length answered);
/// the caller sets `param`.
pub(crate) fn event_for(
    id: &Id,
    listen: *mut ca::rdma_cm_id,
    event: ca::rdma_cm_event_type,
    status: c_int,
    data: &[u8],
) -> (Box<Ev>, usize) {
    // SAFETY: plain C data; zero is valid.
    let mut ev: Box<Ev> = Box::new(unsafe { std::mem::zeroed() });
    ev.c.id = id.ptr();
    ev.c.listen_id = listen;
    ev.c.event = event;
    ev.c.status = status;
    let n = data.len().min(ev.data.len());
    ev.data[..n].copy_from_slice(&data[..n]);
    (ev, n)
}

/// Puts an event on a channel and wakes its reader.
///
/// # Safety
///
/// `chan` live.
pub(crate) unsafe fn queue(chan: *mut ca::rdma_event_channel, ev: Box<Ev>) {
    // SAFETY: the caller's contract.
    let chan = unsafe { &*chan.cast::<Channel>() };
    chan.queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push_back(Box::into_raw(ev));
    fd::signal(chan.c.fd);
}

/// Rounds of asking every candidate before a connect is rejected.
pub(crate) const RETRY_ROUNDS: u32 = 10;
/// The pause between two rounds.
pub(crate) const RETRY_GAP: std::time::Duration = std::time::Duration::from_millis(200);

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
