//! The passive side of rdma_cm over RC: a peer's REQ to a listener
//! becomes a new id (and a CONNECT_REQUEST on the listener's channel), and
//! `rdma_accept` answers it with a REP (UD's SIDR is in `ud.rs`).

use std::ffi::c_int;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::Instant;

use ernic_cm::conn::{AcceptParams, ConnId, Peer};
use ernic_cm::private_data::cma;
use ernic_cm::rej::RejReason;
use ernic_cm::req;
use ernic_verbs::Gid;

use super::addr::{psn, to_storage};
use super::agent::{Agent, State, flush};
use super::id::{Channel, Id, IdState, Phase, post_on};
use super::qp::connect_qp;
use crate::{abi, cma_abi as ca, errno};

/// Events a listener's channel may hold before new requests are refused.
const MAX_WAITING: usize = 1024;

/// The new id of a request to `listener` from `from`: the listener's
/// settings with no objects of its own, its route from rdma_cm's header in
/// `private_data`, and (for a synchronous listener) a channel of its own.
/// The reason to refuse the request, when it cannot be made.
pub(crate) fn child_of(
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
        c.channel = super::channel::new_channel().ok_or(RejReason::NoResources)?;
    }
    Ok((c, sync))
}

/// A peer's REQ: a new id on the listener's channel, or a REJ.
pub(crate) fn request(agent: &Agent, st: &mut State, conn: ConnId, from: Peer, r: &req::Repr) {
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
    s.rnr_retry = r.rnr_retry_count.min(7);
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
        return super::ud::accept_ud(st, id, &mut s, data);
    }
    let (Phase::Requested, Some(conn), Some(remote)) = (s.phase, s.conn, s.remote) else {
        return libc::EINVAL;
    };
    if id.c.qp.is_null() {
        return libc::EINVAL;
    }
    let r = connect_qp(id.c.qp, remote, s.remote_psn, s.psn, s.rnr_retry);
    if r != 0 {
        return r;
    }
    // SAFETY: the id's QP is live.
    let qpn = unsafe { (*id.c.qp).qp_num };
    let mut data: &[u8] = &[];
    let (mut rr, mut id_) = (s.params.initiator_depth, s.params.responder_resources);
    // What the peer's QP retries on RNR, told it in the REP.
    let mut rnr_retry = 7;
    if let Some(p) = param {
        rnr_retry = p.rnr_retry_count.min(7);
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
            rnr_retry_count: rnr_retry,
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
