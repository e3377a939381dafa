//! rdma_cm over UD (`RDMA_PS_UDP`): service ID resolution. A UD id's
//! rdma_connect sends a SIDR_REQ to each candidate port in turn; a
//! listener's SIDR_REQ becomes a CONNECT_REQUEST with `param.ud`, which
//! rdma_accept answers with a SIDR_REP naming its QP and rdma_cm's Q_Key;
//! the requester's ESTABLISHED carries the AH, QP and Q_Key. SIDR has no
//! connection state, so the agent hands these MADs here, past the CM.
//!
//! A SIDR MAD is a datagram and may be lost (a port whose QP 1 is not yet
//! up, a GID the mesh has yet to tell a node of): as in the kernel's CM, an
//! unanswered SIDR_REQ is sent again, and a repeat of one already answered
//! gets the same answer; one never answered ends in UNREACHABLE.

use std::ffi::{c_int, c_void};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ernic_cm::conn::Peer;
use ernic_cm::mad::MAD_LEN;
use ernic_cm::private_data::cma;
use ernic_cm::rej::RejReason;
use ernic_cm::sidr;
use ernic_verbs::Gid;

use super::addr::cma_header;
use super::agent::{Agent, State};
use super::id::{Id, IdState, Phase, RETRY_GAP, RETRY_ROUNDS, event_for, queue, send_req};
use super::passive::child_of;
use crate::{abi, cma_abi as ca};

/// How long a SIDR_REQ first waits for its SIDR_REP before it is sent
/// again. The wait doubles with each resend up to rdma_cm's own,
/// `1 << (CMA_CM_RESPONSE_TIMEOUT - 8)` ms: on one host a lost SIDR MAD is
/// one the mesh was a moment late to route (or a port with no CM), and
/// waiting 4 s for it would stall a program for nothing; a peer that never
/// answers is still asked for about as long as rdma_cm asks (49 s).
const SIDR_FIRST_TIMEOUT: Duration = Duration::from_millis(256);
const SIDR_TIMEOUT: Duration = Duration::from_millis(4096);
/// How many times it is sent again (rdma_cm's `CMA_MAX_CM_RETRIES`).
const SIDR_RETRIES: u32 = 15;
/// Sends to one candidate port left unanswered before the next is asked:
/// a port that has not answered twice may have no CM yet.
const SIDR_TRIES_PER_PORT: u32 = 2;
/// SIDR requests answered or awaiting an answer at once; more are refused
/// with "no QP".
const MAX_SIDR_IN: usize = 4096;

/// A SIDR_REQ of ours not yet answered.
pub(crate) struct SidrOut {
    /// The id that sent it.
    pub id: usize,
    to: Gid,
    /// The candidate it went to, and how many times.
    at: usize,
    tries_here: u32,
    due: Instant,
    wait: Duration,
    left: u32,
    /// Every candidate said "unsupported": waiting to ask them all again
    /// (the candidates found afresh), which costs no resend.
    parked: bool,
}

/// A peer's SIDR_REQ that a child id was made for.
pub(crate) struct SidrIn {
    /// The child id.
    pub id: usize,
    /// The SIDR_REP sent, once the program accepted or rejected.
    answer: Option<[u8; MAD_LEN]>,
}

/// Sends the SIDR_REQ of a UD id to its candidate `at`. A resend (the
/// request still outstanding) keeps its count and its wait: one
/// rdma_connect sends at most `SIDR_RETRIES` + 1 times for want of an
/// answer, and asks each candidate at most `RETRY_ROUNDS` + 1 times that
/// answer "unsupported".
pub(crate) fn send_sidr_req(
    st: &mut State,
    id: &Id,
    s: &mut IdState,
    at: usize,
    gid: Gid,
    src: SocketAddr,
    dst: SocketAddr,
) -> c_int {
    if s.sidr_request == 0 {
        s.sidr_request = st.sidr_next;
        st.sidr_next = st.sidr_next.wrapping_add(1).max(1);
    }
    let request_id = s.sidr_request;
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
    let now = Instant::now();
    let out = st.sidr_out.entry(request_id).or_insert(SidrOut {
        id: id.ptr() as usize,
        to: gid,
        at,
        tries_here: 0,
        due: now,
        wait: SIDR_FIRST_TIMEOUT,
        left: SIDR_RETRIES,
        parked: false,
    });
    if out.at != at || out.to != gid {
        out.tries_here = 0;
    }
    out.tries_here += 1;
    (out.to, out.at) = (gid, at);
    out.due = now + out.wait;
    s.phase = Phase::Connecting(at);
    super::agent::send_mad(st, gid, &m.emit());
    0
}

/// Sends again each SIDR_REQ whose answer is late: to the same candidate
/// port, or the next once that one has missed `SIDR_TRIES_PER_PORT` (round
/// to the first again, the candidates found afresh; a peer knows a repeat
/// by the request's transaction id); tells the id of one sent for the last
/// time that its peer is unreachable. Answers whether any was due.
pub(crate) fn resend_sidr(agent: &Agent, st: &mut State, now: Instant) -> bool {
    let due: Vec<u32> = st
        .sidr_out
        .iter()
        .filter(|(_, o)| o.due <= now)
        .map(|(k, _)| *k)
        .collect();
    for k in &due {
        let Some(o) = st.sidr_out.get_mut(k) else {
            continue;
        };
        // SAFETY: ids in `sidr_out` are live (destroying one takes it out
        // under the agent's lock).
        let id = unsafe { &*(o.id as *const Id) };
        let (parked, left, tries_here, at) = (o.parked, o.left, o.tries_here, o.at);
        if parked {
            o.parked = false;
        } else if left > 0 {
            o.left -= 1;
            o.wait = (o.wait * 2).min(SIDR_TIMEOUT);
        }
        if parked || left > 0 {
            let mut s = id.lock();
            let next = if parked || tries_here < SIDR_TRIES_PER_PORT {
                if parked { 0 } else { at }
            } else if at + 1 < s.candidates.len() {
                at + 1
            } else {
                0
            };
            if next == 0
                && (parked || tries_here >= SIDR_TRIES_PER_PORT)
                && let Some(dst) = id.addr(true)
            {
                s.candidates = agent.candidates(dst.ip());
            }
            tracing::debug!("rdma_connect (UD): no SIDR_REP yet; asking candidate {next}");
            if send_req(agent, st, id, &mut s, next) == 0 {
                continue;
            }
        }
        st.sidr_out.remove(k);
        id.lock().phase = Phase::Disconnected;
        // SAFETY: live id and channel.
        unsafe { unreachable(id, -libc::ETIMEDOUT, None, &[]) };
    }
    !due.is_empty()
}

/// Tells `id` its UD connect ended: UNREACHABLE with `status`, from the
/// port at `from` (if one answered) with `data` as private data.
///
/// # Safety
///
/// `id` live, its channel live.
unsafe fn unreachable(id: &Id, status: c_int, from: Option<Gid>, data: &[u8]) {
    // SAFETY: plain C data; zero is valid.
    let ah = from.map_or_else(|| unsafe { std::mem::zeroed() }, ah_to);
    // SAFETY: the caller's contract.
    unsafe {
        post_ud(
            id.c.channel,
            id,
            std::ptr::null_mut(),
            ca::RDMA_CM_EVENT_UNREACHABLE,
            status,
            ah,
            0,
            0,
            data,
        )
    };
}

/// A SIDR MAD from `from`'s QP 1.
pub(crate) fn on_sidr(agent: &Agent, st: &mut State, from: Peer, mad: &[u8; 256]) {
    if let Ok(r) = sidr::Req::parse(mad) {
        sidr_request(agent, st, from, &r);
    } else if let Ok(r) = sidr::Rep::parse(mad) {
        sidr_reply(agent, st, from, &r);
    }
}

/// Answers a SIDR_REQ from `to` with `status`, naming QP `qpn` with Q_Key
/// `qkey` (0 for none), with `data` as private data; returns the MAD sent.
fn answer(
    st: &mut State,
    to: Gid,
    r: &sidr::Req,
    status: sidr::Status,
    (qpn, qkey): (u32, u32),
    data: &[u8],
) -> [u8; MAD_LEN] {
    let mut private_data = [0u8; sidr::REP_PRIVATE_DATA_LEN];
    let n = data.len().min(private_data.len());
    private_data[..n].copy_from_slice(&data[..n]);
    let rep = sidr::Rep {
        tid: r.tid,
        request_id: r.request_id,
        status,
        info_length: 0,
        qpn,
        service_id: r.service_id,
        qkey,
        info: [0; sidr::REP_INFO_LEN],
        private_data,
    };
    let mad = rep.emit();
    super::agent::send_mad(st, to, &mad);
    mad
}

/// Answers a SIDR_REQ with status `status` (and no QP).
fn sidr_refuse(st: &mut State, to: Gid, r: &sidr::Req, status: sidr::Status) {
    answer(st, to, r, status, (0, 0), &[]);
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
    let key = (from.gid, r.tid);
    if let Some(seen) = st.sidr_in.get(&key) {
        // A repeat: our answer was lost, or the program has yet to give it.
        if let Some(mad) = seen.answer {
            super::agent::send_mad(st, gid, &mad);
        }
        return;
    }
    let Some(&lptr) = st.listeners.get(&r.service_id) else {
        sidr_refuse(st, gid, r, sidr::Status::Unsupported);
        return;
    };
    if st.sidr_in.len() >= MAX_SIDR_IN {
        sidr_refuse(st, gid, r, sidr::Status::NoQp);
        return;
    }
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
    st.sidr_in.insert(
        key,
        SidrIn {
            id: child as usize,
            answer: None,
        },
    );
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
    let Some(mut out) = st.sidr_out.remove(&r.request_id) else {
        return;
    };
    if out.to.0 != from.gid && r.status == sidr::Status::Unsupported {
        // A late "not here" from a port asked before: the one asked now
        // answers for itself. (Any other answer comes from a listener.)
        st.sidr_out.insert(r.request_id, out);
        return;
    }
    let ptr = out.id;
    // SAFETY: ids in `sidr_out` are live (destroying one takes it out
    // under the agent's lock).
    let id = unsafe { &*(ptr as *const Id) };
    let mut s = id.lock();
    let Phase::Connecting(at) = s.phase else {
        return;
    };
    let status = match r.status {
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
            return;
        }
        sidr::Status::Unsupported if at + 1 < s.candidates.len() => {
            // Not listening there: the next port, with what is left of
            // this request's resends.
            st.sidr_out.insert(r.request_id, out);
            if send_req(agent, st, id, &mut s, at + 1) == 0 {
                return;
            }
            st.sidr_out.remove(&r.request_id);
            -libc::EHOSTUNREACH
        }
        sidr::Status::Unsupported if s.rounds < RETRY_ROUNDS => {
            // No one listens yet, or this node's view of the mesh is
            // behind: ask them all again in a moment.
            s.rounds += 1;
            out.parked = true;
            out.due = Instant::now() + RETRY_GAP;
            st.sidr_out.insert(r.request_id, out);
            return;
        }
        // As the kernel's rdma_cm reports it: UNREACHABLE, with the SIDR
        // status as the event's status and the reply's private data.
        other => c_int::from(u8::from(other)),
    };
    s.phase = Phase::Disconnected;
    drop(s);
    tracing::debug!("rdma_connect (UD): SIDR_REP {:?}", r.status);
    // SAFETY: live id and channel.
    unsafe { unreachable(id, status, Some(Gid(from.gid)), &r.private_data) };
}

/// `rdma_accept` of a UD id: the SIDR_REP naming its QP.
pub(crate) fn accept_ud(st: &mut State, id: &Id, s: &mut IdState, data: &[u8]) -> c_int {
    let (Some(r), Some((gid, _))) = (s.sidr, s.remote) else {
        return libc::EINVAL;
    };
    if id.c.qp.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: the id's QP is live.
    let qpn = unsafe { (*id.c.qp).qp_num };
    let qp = (qpn, ca::RDMA_UDP_QKEY as u32);
    let mad = answer(st, gid, &r, sidr::Status::Success, qp, data);
    keep_answer(st, gid, &r, mad);
    s.phase = Phase::Connected;
    0
}

/// `rdma_reject` of a UD id: a SIDR_REP with status "rejected".
pub(crate) fn reject_ud(st: &mut State, s: &mut IdState, data: &[u8]) -> c_int {
    let (Some(r), Some((gid, _))) = (s.sidr, s.remote) else {
        return libc::EINVAL;
    };
    let mad = answer(st, gid, &r, sidr::Status::Reject, (0, 0), data);
    keep_answer(st, gid, &r, mad);
    s.phase = Phase::Disconnected;
    0
}

/// Keeps the answer to a peer's SIDR_REQ, for its repeats.
fn keep_answer(st: &mut State, gid: Gid, r: &sidr::Req, mad: [u8; MAD_LEN]) {
    if let Some(seen) = st.sidr_in.get_mut(&(gid.0, r.tid)) {
        seen.answer = Some(mad);
    }
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
    let (mut ev, n) = event_for(id, listen, event, status, data);
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
