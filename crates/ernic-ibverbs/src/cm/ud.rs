//! rdma_cm over UD (`RDMA_PS_UDP`): service ID resolution. A UD id's
//! rdma_connect sends a SIDR_REQ to each candidate port in turn; a
//! listener's SIDR_REQ becomes a CONNECT_REQUEST with `param.ud`, which
//! rdma_accept answers with a SIDR_REP naming its QP and rdma_cm's Q_Key;
//! the requester's ESTABLISHED carries the AH, QP and Q_Key. SIDR has no
//! connection state, so the agent hands these MADs here, past the CM.

use std::ffi::{c_int, c_void};
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Instant;

use ernic_cm::conn::Peer;
use ernic_cm::private_data::cma;
use ernic_cm::rej::RejReason;
use ernic_cm::sidr;
use ernic_verbs::Gid;

use super::addr::cma_header;
use super::agent::{Agent, State};
use super::id::{
    Id, IdState, Phase, RETRY_GAP, RETRY_ROUNDS, child_of, event_for, post, queue, send_req,
};
use crate::{abi, cma_abi as ca};

/// Sends the SIDR_REQ of a UD id to its candidate `at`.
pub(crate) fn send_sidr_req(
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
pub(crate) fn accept_ud(st: &mut State, id: &Id, s: &mut IdState, data: &[u8]) -> c_int {
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
