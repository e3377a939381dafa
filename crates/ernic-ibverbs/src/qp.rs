//! Queue pairs, shared receive queues and address handles (posting work
//! to them is `post.rs`).

use std::ffi::c_int;
use std::sync::Mutex;

use ernic_verbs::{Access, Gid, QpAttr, QpCaps, QpState, QpType, Qpn};

use crate::abi;
use crate::cq::Cq;
use crate::device::Context;
use crate::errno;
use crate::pd::Pd;

/// Most SGEs a request may carry (the engine's limit).
pub(crate) const MAX_SGE: usize = 32;
/// Most inline bytes a send may carry.
pub(crate) const MAX_INLINE: usize = 4096;

/// `struct ibv_qp` (the head of `struct ibv_qp_ex`) and the QP behind it,
/// with the attributes the engine does not keep, for `ibv_query_qp`.
#[repr(C)]
pub(crate) struct Qp {
    pub c: abi::ibv_qp_ex,
    pub qp: ernic_verbs::Qp,
    pub attr: Mutex<abi::ibv_qp_attr>,
    /// The new post-send API's session (`ibv_wr_start` … `ibv_wr_complete`).
    pub batch: crate::ex::Session<crate::ex::Batch>,
    pub max_send_sge: u32,
    pub max_inline: u32,
}

/// `struct ibv_srq` and the SRQ behind it.
#[repr(C)]
pub(crate) struct Srq {
    pub c: abi::ibv_srq,
    pub srq: ernic_verbs::Srq,
    pub max_sge: u32,
}

/// `struct ibv_ah` and the handle behind it.
#[repr(C)]
pub(crate) struct Ah {
    pub c: abi::ibv_ah,
    pub ah: ernic_verbs::Ah,
}

fn qp_type_of(t: u32) -> Option<QpType> {
    match t {
        abi::IBV_QPT_RC => Some(QpType::Rc),
        abi::IBV_QPT_UC => Some(QpType::Uc),
        abi::IBV_QPT_UD => Some(QpType::Ud),
        _ => None,
    }
}

fn state_of(s: u32) -> Option<QpState> {
    Some(match s {
        abi::IBV_QPS_RESET => QpState::Reset,
        abi::IBV_QPS_INIT => QpState::Init,
        abi::IBV_QPS_RTR => QpState::Rtr,
        abi::IBV_QPS_RTS => QpState::Rts,
        abi::IBV_QPS_SQD => QpState::Sqd,
        abi::IBV_QPS_SQE => QpState::Sqe,
        abi::IBV_QPS_ERR => QpState::Err,
        _ => return None,
    })
}

fn ibv_state(s: QpState) -> u32 {
    match s {
        QpState::Reset => abi::IBV_QPS_RESET,
        QpState::Init => abi::IBV_QPS_INIT,
        QpState::Rtr => abi::IBV_QPS_RTR,
        QpState::Rts => abi::IBV_QPS_RTS,
        QpState::Sqd => abi::IBV_QPS_SQD,
        QpState::Sqe => abi::IBV_QPS_SQE,
        QpState::Err => abi::IBV_QPS_ERR,
    }
}

/// `enum ibv_mtu` to bytes.
fn mtu_bytes(m: u32) -> Option<u32> {
    (1..=5).contains(&m).then(|| 128 << m)
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `pd` a live PD; `init` readable and writable (the caps are written back).
pub unsafe extern "C" fn ernic_ibv_create_qp(
    pd: *mut abi::ibv_pd,
    init: *mut abi::ibv_qp_init_attr,
) -> *mut abi::ibv_qp {
    // SAFETY: the caller's contract.
    let (Some(p), Some(i)) = (unsafe { Pd::from_c(pd) }, unsafe { init.as_mut() }) else {
        return errno::null(libc::EINVAL);
    };
    let Some(qp_type) = qp_type_of(i.qp_type) else {
        return errno::null(libc::EOPNOTSUPP);
    };
    // SAFETY: CQs and SRQ named by the program are live (its contract).
    let (scq, rcq) = unsafe { (Cq::from_c(i.send_cq), Cq::from_c(i.recv_cq)) };
    let (Some(scq), Some(rcq)) = (scq, rcq) else {
        return errno::null(libc::EINVAL);
    };
    // SAFETY: as above.
    let srq = unsafe { i.srq.cast::<Srq>().as_ref() };
    let cap = &mut i.cap;
    if cap.max_send_sge as usize > MAX_SGE
        || cap.max_recv_sge as usize > MAX_SGE
        || cap.max_inline_data as usize > MAX_INLINE
    {
        return errno::null(libc::EINVAL);
    }
    let caps = QpCaps {
        max_send_wr: cap.max_send_wr.max(1),
        max_recv_wr: if srq.is_some() {
            0
        } else {
            cap.max_recv_wr.max(1)
        },
        max_send_sge: cap.max_send_sge.max(1),
        max_recv_sge: cap.max_recv_sge.max(1),
        max_inline_data: cap.max_inline_data,
    };
    let made = p.pd.create_qp_with(
        qp_type,
        &scq.cq,
        &rcq.cq,
        srq.map(|s| &s.srq),
        caps,
        i.sq_sig_all != 0,
    );
    let qp = match made {
        Ok(q) => q,
        Err(e) => return errno::null(errno::of(&e)),
    };
    cap.max_send_wr = caps.max_send_wr;
    cap.max_recv_wr = caps.max_recv_wr;
    cap.max_send_sge = caps.max_send_sge;
    cap.max_recv_sge = caps.max_recv_sge;
    // SAFETY: ibv_qp_ex is plain C data; zero is valid for every field.
    let mut head: abi::ibv_qp_ex = unsafe { std::mem::zeroed() };
    let q = &mut head.qp_base;
    q.context = p.c.context;
    q.qp_context = i.qp_context;
    q.pd = pd;
    q.send_cq = i.send_cq;
    q.recv_cq = i.recv_cq;
    q.srq = i.srq;
    q.qp_num = qp.qpn().0;
    q.handle = qp.qpn().0;
    q.state = abi::IBV_QPS_RESET;
    q.qp_type = i.qp_type;
    // SAFETY: plain C data, as above.
    let mut attr: abi::ibv_qp_attr = unsafe { std::mem::zeroed() };
    attr.qp_state = abi::IBV_QPS_RESET;
    attr.cap = *cap;
    attr.port_num = crate::device::PORT;
    attr.path_mtu = abi::IBV_MTU_1024;
    attr.timeout = 14;
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    let qpn = qp.qpn().0;
    let b: *mut abi::ibv_qp = Box::into_raw(Box::new(Qp {
        c: head,
        qp,
        attr: Mutex::new(attr),
        batch: crate::ex::Session::new(crate::ex::Batch::with_room(
            caps.max_send_wr,
            caps.max_send_sge,
            caps.max_inline_data,
        )),
        max_send_sge: caps.max_send_sge,
        max_inline: caps.max_inline_data,
    }))
    .cast();
    // SAFETY: the PD's context is open (the program's contract).
    if let Some(c) = unsafe { Context::from_c(p.c.context) } {
        crate::events::add_qp(&c.rt.objects, qpn, b);
    }
    b
}

impl Qp {
    /// # Safety
    ///
    /// `qp` must be NULL or a live QP from `ibv_create_qp`.
    pub(crate) unsafe fn from_c<'a>(qp: *mut abi::ibv_qp) -> Option<&'a Qp> {
        // SAFETY: `c.qp_base` is the first member of the repr(C) `Qp`.
        unsafe { qp.cast::<Qp>().as_ref() }
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `qp` a live QP, destroyed once.
pub unsafe extern "C" fn ernic_ibv_destroy_qp(qp: *mut abi::ibv_qp) -> c_int {
    if qp.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a QP from ibv_create_qp (Box::into_raw), freed once.
    let b = unsafe { Box::from_raw(qp.cast::<Qp>()) };
    // SAFETY: its context is open (the program's contract).
    if let Some(c) = unsafe { Context::from_c(b.c.qp_base.context) } {
        crate::events::remove_qp(&c.rt.objects, b.c.qp_base.qp_num);
        c.forget_events(qp as usize);
    }
    drop(b);
    0
}

/// The peer a connected QP's address vector names: its GID.
fn dest_gid(ah: &abi::ibv_ah_attr) -> Option<Gid> {
    (ah.is_global != 0).then_some(Gid(ah.grh.dgid.raw))
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `qp` a live QP; `attr` readable.
pub unsafe extern "C" fn ernic_ibv_modify_qp(
    qp: *mut abi::ibv_qp,
    attr: *mut abi::ibv_qp_attr,
    mask: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let (Some(q), Some(a)) = (unsafe { Qp::from_c(qp) }, unsafe { attr.as_ref() }) else {
        return libc::EINVAL;
    };
    let mask = mask as u32;
    let has = |bit: u32| mask & bit != 0;
    let mut kept = q.attr.lock().unwrap_or_else(|p| p.into_inner());
    let mut m = QpAttr::default();
    if has(abi::IBV_QP_STATE) {
        let Some(s) = state_of(a.qp_state) else {
            return libc::EINVAL;
        };
        m.state = Some(s);
    }
    if has(abi::IBV_QP_ACCESS_FLAGS) {
        // A QP's flags grant remote rights only; the engine takes them in
        // the form of an MR's, where remote write needs local write, so
        // local write is added (it means nothing for a QP).
        m.access = Some(Access(a.qp_access_flags & 0xe) | Access::LOCAL_WRITE);
    }
    if has(abi::IBV_QP_QKEY) {
        m.qkey = Some(a.qkey);
    }
    if has(abi::IBV_QP_PATH_MTU) {
        let Some(b) = mtu_bytes(a.path_mtu) else {
            return libc::EINVAL;
        };
        m.path_mtu = Some(b);
    }
    if has(abi::IBV_QP_RQ_PSN) {
        m.rq_psn = Some(a.rq_psn & 0xff_ffff);
    }
    if has(abi::IBV_QP_SQ_PSN) {
        m.sq_psn = Some(a.sq_psn & 0xff_ffff);
    }
    if has(abi::IBV_QP_RNR_RETRY) {
        m.rnr_retry = Some(a.rnr_retry & 7);
    }
    if has(abi::IBV_QP_MIN_RNR_TIMER) {
        m.min_rnr_timer = Some(a.min_rnr_timer & 0x1f);
    }
    if has(abi::IBV_QP_AV) || has(abi::IBV_QP_DEST_QPN) {
        let ah = if has(abi::IBV_QP_AV) {
            &a.ah_attr
        } else {
            &kept.ah_attr
        };
        let qpn = if has(abi::IBV_QP_DEST_QPN) {
            a.dest_qp_num
        } else {
            kept.dest_qp_num
        };
        match dest_gid(ah) {
            Some(gid) => m.dest = Some((gid, Qpn(qpn))),
            // RoCE addresses by GID: an address vector without a GRH
            // names no peer (the hardware refuses it the same way).
            None if has(abi::IBV_QP_AV) => return libc::EINVAL,
            None => {}
        }
    }
    let mut r = q.qp.modify(&m);
    if let Err(ernic_verbs::Error::Engine(ernic_verbs::EngineError::NoRoute(gid))) = r
        // SAFETY: the QP's context is open (the program's contract).
        && let Some(c) = unsafe { Context::from_c((*qp).context) }
        && c.rt.wait_for_gid(gid)
    {
        r = q.qp.modify(&m);
    }
    if let Err(e) = r {
        tracing::debug!("ibv_modify_qp of QP {}: {e}", q.qp.qpn());
        return errno::of(&e);
    }
    // What the engine does not keep, kept for ibv_query_qp.
    let copy = [
        (abi::IBV_QP_AV, 0),
        (abi::IBV_QP_DEST_QPN, 1),
        (abi::IBV_QP_TIMEOUT, 2),
        (abi::IBV_QP_RETRY_CNT, 3),
        (abi::IBV_QP_RNR_RETRY, 4),
        (abi::IBV_QP_MIN_RNR_TIMER, 5),
        (abi::IBV_QP_MAX_QP_RD_ATOMIC, 6),
        (abi::IBV_QP_MAX_DEST_RD_ATOMIC, 7),
        (abi::IBV_QP_PKEY_INDEX, 8),
        (abi::IBV_QP_PORT, 9),
        (abi::IBV_QP_PATH_MTU, 10),
    ];
    for (bit, what) in copy {
        if has(bit) {
            match what {
                0 => kept.ah_attr = a.ah_attr,
                1 => kept.dest_qp_num = a.dest_qp_num,
                2 => kept.timeout = a.timeout,
                3 => kept.retry_cnt = a.retry_cnt,
                4 => kept.rnr_retry = a.rnr_retry,
                5 => kept.min_rnr_timer = a.min_rnr_timer,
                6 => kept.max_rd_atomic = a.max_rd_atomic,
                7 => kept.max_dest_rd_atomic = a.max_dest_rd_atomic,
                8 => kept.pkey_index = a.pkey_index,
                9 => kept.port_num = a.port_num,
                _ => kept.path_mtu = a.path_mtu,
            }
        }
    }
    if has(abi::IBV_QP_STATE) {
        // SAFETY: `qp` is live (checked above); the program reads `state`
        // after the call returns, as with rdma-core.
        unsafe { (*qp).state = a.qp_state };
    }
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `qp` a live QP; `attr` and `init` writable.
pub unsafe extern "C" fn ernic_ibv_query_qp(
    qp: *mut abi::ibv_qp,
    attr: *mut abi::ibv_qp_attr,
    _mask: c_int,
    init: *mut abi::ibv_qp_init_attr,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(q) = (unsafe { Qp::from_c(qp) }) else {
        return libc::EINVAL;
    };
    if attr.is_null() || init.is_null() {
        return libc::EINVAL;
    }
    let info = match q.qp.query() {
        Ok(i) => i,
        Err(e) => return errno::of(&e),
    };
    let mut a = *q.attr.lock().unwrap_or_else(|p| p.into_inner());
    a.qp_state = ibv_state(info.state);
    a.cur_qp_state = a.qp_state;
    a.qp_access_flags = info.access.0 & 0xe;
    a.qkey = info.qkey.unwrap_or(0);
    a.rq_psn = info.rq_psn;
    a.sq_psn = info.sq_psn;
    if let Some(d) = info.dest {
        a.dest_qp_num = d.qpn.0;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid.raw = d.gid.0;
    }
    a.cap.max_send_wr = info.caps.max_send_wr;
    a.cap.max_recv_wr = info.caps.max_recv_wr;
    a.cap.max_send_sge = info.caps.max_send_sge;
    a.cap.max_recv_sge = info.caps.max_recv_sge;
    a.cap.max_inline_data = info.caps.max_inline_data;
    // SAFETY: `qp` is live; `attr` and `init` writable (the contract).
    unsafe {
        let base = &(*qp);
        attr.write(a);
        let i = &mut *init;
        i.qp_context = base.qp_context;
        i.send_cq = base.send_cq;
        i.recv_cq = base.recv_cq;
        i.srq = base.srq;
        i.cap = a.cap;
        i.qp_type = base.qp_type;
        i.sq_sig_all = 0;
    }
    0
}

#[unsafe(no_mangle)]
/// `ibv_qp_to_qp_ex`: the QP's extended head. Its `wr_*` calls are set
/// when `ibv_create_qp_ex` asked for send ops (`ex.rs`), NULL otherwise.
///
/// # Safety
///
/// `qp` a live QP.
pub unsafe extern "C" fn ernic_ibv_qp_to_qp_ex(qp: *mut abi::ibv_qp) -> *mut abi::ibv_qp_ex {
    qp.cast()
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `pd` a live PD; `init` readable and writable.
pub unsafe extern "C" fn ernic_ibv_create_srq(
    pd: *mut abi::ibv_pd,
    init: *mut abi::ibv_srq_init_attr,
) -> *mut abi::ibv_srq {
    // SAFETY: the caller's contract.
    let (Some(p), Some(i)) = (unsafe { Pd::from_c(pd) }, unsafe { init.as_mut() }) else {
        return errno::null(libc::EINVAL);
    };
    let (depth, max_sge) = (i.attr.max_wr, i.attr.max_sge);
    if depth == 0 || max_sge as usize > MAX_SGE {
        return errno::null(libc::EINVAL);
    }
    let srq = match p.pd.create_srq(depth, max_sge.max(1)) {
        Ok(s) => s,
        Err(e) => return errno::null(errno::of(&e)),
    };
    if i.attr.srq_limit > 0
        && let Err(e) = srq.set_limit(i.attr.srq_limit)
    {
        return errno::null(errno::of(&e));
    }
    // SAFETY: plain C data; zero is valid for every field.
    let mut c: abi::ibv_srq = unsafe { std::mem::zeroed() };
    c.context = p.c.context;
    c.srq_context = i.srq_context;
    c.pd = pd;
    let id = srq.id().0;
    let b: *mut abi::ibv_srq = Box::into_raw(Box::new(Srq {
        c,
        srq,
        max_sge: max_sge.max(1),
    }))
    .cast();
    // SAFETY: the PD's context is open (the program's contract).
    if let Some(ctx) = unsafe { Context::from_c(p.c.context) } {
        crate::events::add_srq(&ctx.rt.objects, id, b);
    }
    b
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `srq` a live SRQ; `attr` readable.
pub unsafe extern "C" fn ernic_ibv_modify_srq(
    srq: *mut abi::ibv_srq,
    attr: *mut abi::ibv_srq_attr,
    mask: c_int,
) -> c_int {
    // SAFETY: our `Srq` begins with `c`; `attr` readable (the contract).
    let (Some(s), Some(a)) = (unsafe { srq.cast::<Srq>().as_ref() }, unsafe {
        attr.as_ref()
    }) else {
        return libc::EINVAL;
    };
    let mask = mask as u32;
    if mask & abi::IBV_SRQ_MAX_WR != 0 {
        // Resizing is not supported.
        return libc::EOPNOTSUPP;
    }
    if mask & abi::IBV_SRQ_LIMIT != 0
        && let Err(e) = s.srq.set_limit(a.srq_limit)
    {
        return errno::of(&e);
    }
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `srq` a live SRQ; `attr` writable.
pub unsafe extern "C" fn ernic_ibv_query_srq(
    srq: *mut abi::ibv_srq,
    attr: *mut abi::ibv_srq_attr,
) -> c_int {
    // SAFETY: our `Srq` begins with `c`.
    let Some(s) = (unsafe { srq.cast::<Srq>().as_ref() }) else {
        return libc::EINVAL;
    };
    if attr.is_null() {
        return libc::EINVAL;
    }
    let (limit, _posted) = match s.srq.query() {
        Ok(x) => x,
        Err(e) => return errno::of(&e),
    };
    // SAFETY: `attr` writable.
    unsafe {
        (*attr).max_sge = s.max_sge;
        (*attr).srq_limit = limit;
    }
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `srq` a live SRQ no QP uses, destroyed once.
pub unsafe extern "C" fn ernic_ibv_destroy_srq(srq: *mut abi::ibv_srq) -> c_int {
    if srq.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: an SRQ from ibv_create_srq (Box::into_raw), freed once.
    let b = unsafe { Box::from_raw(srq.cast::<Srq>()) };
    // SAFETY: its context is open (the program's contract).
    if let Some(c) = unsafe { Context::from_c(b.c.context) } {
        crate::events::remove_srq(&c.rt.objects, b.srq.id().0);
        c.forget_events(srq as usize);
    }
    drop(b);
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `pd` a live PD; `attr` readable.
pub unsafe extern "C" fn ernic_ibv_create_ah(
    pd: *mut abi::ibv_pd,
    attr: *mut abi::ibv_ah_attr,
) -> *mut abi::ibv_ah {
    // SAFETY: the caller's contract.
    let (Some(p), Some(a)) = (unsafe { Pd::from_c(pd) }, unsafe { attr.as_ref() }) else {
        return errno::null(libc::EINVAL);
    };
    let Some(gid) = dest_gid(a) else {
        return errno::null(libc::EINVAL);
    };
    // A datagram to a GID the mesh does not know yet is lost on the way:
    // a peer that just joined is known a moment after the program learned
    // its GID by other means, so the AH waits for it (bounded).
    // SAFETY: the PD's context is open (the program's contract).
    if let Some(c) = unsafe { Context::from_c(p.c.context) }
        && gid != c.rt.gid
        && c.rt.fabric.mesh().is_some_and(|m| m.owner(&gid).is_none())
    {
        c.rt.wait_for_gid(gid);
    }
    let mut made = p.pd.create_ah(gid);
    if let Err(ernic_verbs::Error::Engine(ernic_verbs::EngineError::NoRoute(g))) = made
        // SAFETY: the PD's context is open (the program's contract).
        && let Some(c) = unsafe { Context::from_c(p.c.context) }
        && c.rt.wait_for_gid(g)
    {
        made = p.pd.create_ah(gid);
    }
    match made {
        Ok(ah) => Box::into_raw(Box::new(Ah {
            c: abi::ibv_ah {
                context: p.c.context,
                pd,
                handle: 0,
            },
            ah,
        }))
        .cast(),
        Err(e) => errno::null(errno::of(&e)),
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ah` a live AH, destroyed once.
pub unsafe extern "C" fn ernic_ibv_destroy_ah(ah: *mut abi::ibv_ah) -> c_int {
    if ah.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: an AH from ibv_create_ah (Box::into_raw), freed once.
    drop(unsafe { Box::from_raw(ah.cast::<Ah>()) });
    0
}

#[unsafe(no_mangle)]
/// `ibv_init_ah_from_wc`: the address of a datagram's sender, from its
/// completion and the GRH before its payload.
///
/// # Safety
///
/// `wc` readable; `grh` readable (40 bytes); `attr` writable.
pub unsafe extern "C" fn ernic_ibv_init_ah_from_wc(
    ctx: *mut abi::ibv_context,
    port: u8,
    wc: *mut abi::ibv_wc,
    grh: *mut abi::ibv_grh,
    attr: *mut abi::ibv_ah_attr,
) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { Context::from_c(ctx) }.is_none() || wc.is_null() || attr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: plain C data; zero is valid for every field.
    let mut a: abi::ibv_ah_attr = unsafe { std::mem::zeroed() };
    a.port_num = port;
    // SAFETY: `wc` readable.
    let w = unsafe { &*wc };
    a.dlid = w.slid;
    a.sl = w.sl;
    if w.wc_flags & abi::IBV_WC_GRH != 0 {
        if grh.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: `grh` readable (40 bytes).
        let g = unsafe { &*grh };
        a.is_global = 1;
        a.grh.dgid = g.sgid;
        a.grh.hop_limit = 0xff;
        a.grh.sgid_index = 0;
    }
    // SAFETY: `attr` writable.
    unsafe { attr.write(a) };
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// As `ibv_init_ah_from_wc`, with `pd` a live PD.
pub unsafe extern "C" fn ernic_ibv_create_ah_from_wc(
    pd: *mut abi::ibv_pd,
    wc: *mut abi::ibv_wc,
    grh: *mut abi::ibv_grh,
    port: u8,
) -> *mut abi::ibv_ah {
    // SAFETY: the caller's contract.
    let Some(p) = (unsafe { Pd::from_c(pd) }) else {
        return errno::null(libc::EINVAL);
    };
    // SAFETY: plain C data.
    let mut a: abi::ibv_ah_attr = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's contract.
    let r = unsafe { ernic_ibv_init_ah_from_wc(p.c.context, port, wc, grh, &mut a) };
    if r != 0 {
        return errno::null(r);
    }
    // SAFETY: `a` is a valid address vector.
    unsafe { ernic_ibv_create_ah(pd, &mut a) }
}
