//! An id's QP: `rdma_create_qp` (with the CQs and channels it makes when
//! none are named) and `rdma_destroy_qp`, and the transitions the CM's
//! steps take it through.

use std::ffi::c_int;

use ernic_verbs::Gid;

use super::addr;
use super::api::fail;
use super::id::Id;
use crate::{abi, cma_abi as ca};

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
    i.lock().psn = addr::psn();
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

/// Moves a QP through RTR to RTS towards `remote` (`ibv_modify_qp`),
/// retrying `rnr_retry` times on a peer with no receive.
pub(crate) fn connect_qp(
    qp: *mut abi::ibv_qp,
    remote: (Gid, u32),
    rq_psn: u32,
    sq_psn: u32,
    rnr_retry: u8,
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
    a.rnr_retry = rnr_retry;
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
