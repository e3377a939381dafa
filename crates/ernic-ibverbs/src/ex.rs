//! The extended verbs: `ibv_create_cq_ex` with its poll API
//! (`ibv_start_poll`, `ibv_next_poll`, `ibv_end_poll`, `ibv_wc_read_*`) and
//! `ibv_create_qp_ex` with the new post-send API (`ibv_wr_start`,
//! `ibv_wr_send`, `ibv_wr_set_sge`, … `ibv_wr_complete`), reached through
//! `verbs_context` and the function pointers of `ibv_cq_ex` and
//! `ibv_qp_ex`, as verbs.h's inline functions call them.
//!
//! Both APIs are sessions a program runs from one thread at a time on an
//! object (rdma-core's providers lock from the start to the end); here a
//! [`Session`] is that lock, and the state it guards is only touched while
//! it is held.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use ernic_verbs::{Lkey, Qpn, RemoteAddr, Rkey, SendFlags, SendOp, SendWr, Sge, UdDest};

use crate::abi;
use crate::cq::{self, Cq};
use crate::errno;
use crate::qp::{self, Qp};

/// A poll or post session: a flag one thread holds from the session's
/// start to its end, and the state only that thread touches meanwhile.
pub(crate) struct Session<T> {
    held: AtomicBool,
    state: UnsafeCell<T>,
}

// SAFETY: `state` is reached only through `with`, by the thread that holds
// `held` (acquired with Acquire, released with Release), so never by two
// threads at once.
unsafe impl<T: Send> Sync for Session<T> {}

impl<T> Session<T> {
    pub(crate) fn new(state: T) -> Session<T> {
        Session {
            held: AtomicBool::new(false),
            state: UnsafeCell::new(state),
        }
    }

    /// Starts the session, waiting for another thread's to end.
    fn begin(&self) {
        while self
            .held
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
    }

    fn end(&self) {
        self.held.store(false, Ordering::Release);
    }

    /// The state, for the thread in the session.
    ///
    /// # Safety
    ///
    /// The calling thread began the session and has not ended it (the
    /// API's contract: only it calls the session's functions), and does
    /// not call `with` again while the reference lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn with(&self) -> &mut T {
        // SAFETY: the session is this thread's (the contract), so no other
        // reference to the state exists.
        unsafe { &mut *self.state.get() }
    }
}

// ---- CQs -------------------------------------------------------------------

/// The `wc_flags` the extended CQ can answer.
const CQ_WC_FLAGS: u64 = (abi::IBV_WC_EX_WITH_BYTE_LEN
    | abi::IBV_WC_EX_WITH_IMM
    | abi::IBV_WC_EX_WITH_QP_NUM
    | abi::IBV_WC_EX_WITH_SRC_QP
    | abi::IBV_WC_EX_WITH_SLID
    | abi::IBV_WC_EX_WITH_SL
    | abi::IBV_WC_EX_WITH_DLID_PATH_BITS) as u64;

/// `verbs_context.create_cq_ex`.
///
/// # Safety
///
/// `ctx` an open context; `attr` readable.
pub(crate) unsafe extern "C" fn create_cq_ex(
    ctx: *mut abi::ibv_context,
    attr: *mut abi::ibv_cq_init_attr_ex,
) -> *mut abi::ibv_cq_ex {
    // SAFETY: the caller's contract.
    let Some(a) = (unsafe { attr.as_ref() }) else {
        return errno::null(libc::EINVAL);
    };
    if a.wc_flags & !CQ_WC_FLAGS != 0 {
        // Timestamps, VLANs, flow tags, tag matching.
        return errno::null(libc::EOPNOTSUPP);
    }
    if a.comp_mask & !(abi::IBV_CQ_INIT_ATTR_MASK_FLAGS | abi::IBV_CQ_INIT_ATTR_MASK_PD) != 0 {
        return errno::null(libc::EINVAL);
    }
    let Ok(cqe) = c_int::try_from(a.cqe) else {
        return errno::null(libc::EINVAL);
    };
    // SAFETY: the caller's contract.
    let b = unsafe { cq::create(ctx, cqe, a.cq_context, a.channel) };
    if b.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: just made, not yet shared.
    let c = unsafe { &mut (*b).c };
    c.start_poll = Some(start_poll);
    c.next_poll = Some(next_poll);
    c.end_poll = Some(end_poll);
    c.read_opcode = Some(read_opcode);
    c.read_vendor_err = Some(read_vendor_err);
    c.read_byte_len = Some(read_byte_len);
    c.read_imm_data = Some(read_imm_data);
    c.read_qp_num = Some(read_qp_num);
    c.read_src_qp = Some(read_src_qp);
    c.read_wc_flags = Some(read_wc_flags);
    c.read_slid = Some(read_slid);
    c.read_sl = Some(read_sl);
    c.read_dlid_path_bits = Some(read_dlid_path_bits);
    c
}

/// The CQ of an extended poll call.
///
/// # Safety
///
/// `cq` a live CQ.
unsafe fn cq_of<'a>(cq: *mut abi::ibv_cq_ex) -> &'a Cq {
    // SAFETY: `c` is the first member of our `Cq`.
    unsafe { &*cq.cast::<Cq>() }
}

/// Moves one completion into the session, and its status and id into the
/// CQ's head; ENOENT when none waits.
///
/// # Safety
///
/// The calling thread is in the CQ's session.
unsafe fn advance(c: &Cq, cq: *mut abi::ibv_cq_ex) -> c_int {
    // SAFETY: the session is this thread's (the contract).
    let cur = unsafe { c.session.with() };
    match c.cq.poll(std::slice::from_mut(cur)) {
        Ok(1) => {
            // SAFETY: `cq` is live; the program reads these fields only
            // inside its session, which is this thread's.
            unsafe {
                (*cq).status = cur.status as u32;
                (*cq).wr_id = cur.wr_id;
            }
            0
        }
        Ok(_) => libc::ENOENT,
        Err(e) => errno::of(&e),
    }
}

unsafe extern "C" fn start_poll(
    cq: *mut abi::ibv_cq_ex,
    attr: *mut abi::ibv_poll_cq_attr,
) -> c_int {
    // SAFETY: the program's CQ.
    let c = unsafe { cq_of(cq) };
    // SAFETY: `attr` readable (the contract), or NULL.
    if unsafe { attr.as_ref() }.is_some_and(|a| a.comp_mask != 0) {
        return libc::EINVAL;
    }
    c.session.begin();
    // SAFETY: the session is this thread's, begun just above.
    let r = unsafe { advance(c, cq) };
    if r != 0 {
        // The program does not call end_poll after a failed start.
        c.session.end();
    }
    r
}

unsafe extern "C" fn next_poll(cq: *mut abi::ibv_cq_ex) -> c_int {
    // SAFETY: the program's CQ, in its session (the API's order).
    unsafe { advance(cq_of(cq), cq) }
}

unsafe extern "C" fn end_poll(cq: *mut abi::ibv_cq_ex) {
    // SAFETY: the program's CQ.
    unsafe { cq_of(cq) }.session.end();
}

/// The session's completion as `struct ibv_wc`.
///
/// # Safety
///
/// The calling thread is in the CQ's session.
unsafe fn current(cq: *mut abi::ibv_cq_ex) -> abi::ibv_wc {
    // SAFETY: the program's CQ, in its session.
    cq::to_ibv(unsafe { cq_of(cq).session.with() })
}

macro_rules! reader {
    ($name:ident, $ret:ty, |$w:ident| $e:expr) => {
        unsafe extern "C" fn $name(cq: *mut abi::ibv_cq_ex) -> $ret {
            // SAFETY: the program reads inside its poll session.
            let $w = unsafe { current(cq) };
            $e
        }
    };
}

/// The immediate (or invalidated rkey) of a completion.
fn imm(w: &abi::ibv_wc) -> u32 {
    // SAFETY: both members of the union are the same u32.
    unsafe { w.imm_data_invalidated_rkey.imm_data }
}

reader!(read_opcode, u32, |w| w.opcode);
reader!(read_vendor_err, u32, |w| w.vendor_err);
reader!(read_byte_len, u32, |w| w.byte_len);
reader!(read_imm_data, u32, |w| imm(&w));
reader!(read_qp_num, u32, |w| w.qp_num);
reader!(read_src_qp, u32, |w| w.src_qp);
reader!(read_wc_flags, c_uint, |w| w.wc_flags);
reader!(read_slid, u32, |w| u32::from(w.slid));
reader!(read_sl, u8, |w| w.sl);
reader!(read_dlid_path_bits, u8, |w| w.dlid_path_bits);

// ---- QPs -------------------------------------------------------------------

/// The send operations the new post-send API offers here.
const QP_SEND_OPS: u64 = (abi::IBV_QP_EX_WITH_RDMA_WRITE
    | abi::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
    | abi::IBV_QP_EX_WITH_SEND
    | abi::IBV_QP_EX_WITH_SEND_WITH_IMM
    | abi::IBV_QP_EX_WITH_RDMA_READ
    | abi::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
    | abi::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD
    | abi::IBV_QP_EX_WITH_LOCAL_INV
    | abi::IBV_QP_EX_WITH_SEND_WITH_INV) as u64;

/// One request of a post session, and where its data is in the batch.
struct Pending {
    wr_id: u64,
    flags: SendFlags,
    op: SendOp,
    ud: Option<UdDest>,
    sges: std::ops::Range<usize>,
    inline: Option<std::ops::Range<usize>>,
}

/// A QP's post session: the requests built since `ibv_wr_start`, with
/// room made when the QP was (posting allocates nothing).
pub(crate) struct Batch {
    wrs: Vec<Pending>,
    sges: Vec<Sge>,
    bytes: Vec<u8>,
    /// A request failed to build (too many, too long): `wr_complete`
    /// answers this error and posts nothing.
    error: c_int,
}

impl Batch {
    pub(crate) fn with_room(wrs: u32, sges: u32, inline: u32) -> Batch {
        Batch {
            wrs: Vec::with_capacity(wrs as usize),
            sges: Vec::with_capacity((wrs * sges.max(1)) as usize),
            bytes: Vec::with_capacity((wrs * inline) as usize),
            error: 0,
        }
    }

    fn clear(&mut self) {
        self.wrs.clear();
        self.sges.clear();
        self.bytes.clear();
        self.error = 0;
    }
}

/// `verbs_context.create_qp_ex`.
///
/// # Safety
///
/// `ctx` an open context; `attr` readable and writable.
pub(crate) unsafe extern "C" fn create_qp_ex(
    _ctx: *mut abi::ibv_context,
    attr: *mut abi::ibv_qp_init_attr_ex,
) -> *mut abi::ibv_qp {
    // SAFETY: the caller's contract.
    let Some(a) = (unsafe { attr.as_mut() }) else {
        return errno::null(libc::EINVAL);
    };
    let known = abi::IBV_QP_INIT_ATTR_PD
        | abi::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
        | abi::IBV_QP_INIT_ATTR_CREATE_FLAGS;
    if a.comp_mask & abi::IBV_QP_INIT_ATTR_PD == 0 || a.comp_mask & !known != 0 {
        return errno::null(libc::EOPNOTSUPP);
    }
    if a.comp_mask & abi::IBV_QP_INIT_ATTR_CREATE_FLAGS != 0 && a.create_flags != 0 {
        return errno::null(libc::EOPNOTSUPP);
    }
    let ops = if a.comp_mask & abi::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 {
        a.send_ops_flags
    } else {
        0
    };
    if ops & !QP_SEND_OPS != 0 {
        return errno::null(libc::EOPNOTSUPP);
    }
    let mut init = abi::ibv_qp_init_attr {
        qp_context: a.qp_context,
        send_cq: a.send_cq,
        recv_cq: a.recv_cq,
        srq: a.srq,
        cap: a.cap,
        qp_type: a.qp_type,
        sq_sig_all: a.sq_sig_all,
    };
    // SAFETY: the caller's contract.
    let q = unsafe { qp::ernic_ibv_create_qp(a.pd, &mut init) };
    if q.is_null() {
        return q;
    }
    a.cap = init.cap;
    if ops != 0 {
        // SAFETY: just made, not yet shared.
        let x = unsafe { &mut (*q.cast::<Qp>()).c };
        x.wr_start = Some(wr_start);
        x.wr_complete = Some(wr_complete);
        x.wr_abort = Some(wr_abort);
        x.wr_send = Some(wr_send);
        x.wr_send_imm = Some(wr_send_imm);
        x.wr_send_inv = Some(wr_send_inv);
        x.wr_rdma_write = Some(wr_rdma_write);
        x.wr_rdma_write_imm = Some(wr_rdma_write_imm);
        x.wr_rdma_read = Some(wr_rdma_read);
        x.wr_atomic_cmp_swp = Some(wr_atomic_cmp_swp);
        x.wr_atomic_fetch_add = Some(wr_atomic_fetch_add);
        x.wr_local_inv = Some(wr_local_inv);
        x.wr_set_sge = Some(wr_set_sge);
        x.wr_set_sge_list = Some(wr_set_sge_list);
        x.wr_set_inline_data = Some(wr_set_inline_data);
        x.wr_set_inline_data_list = Some(wr_set_inline_data_list);
        x.wr_set_ud_addr = Some(wr_set_ud_addr);
    }
    q
}

/// The QP of a post-session call.
///
/// # Safety
///
/// `qp` a live QP.
unsafe fn qp_of<'a>(qp: *mut abi::ibv_qp_ex) -> &'a Qp {
    // SAFETY: `c` is the first member of our `Qp`.
    unsafe { &*qp.cast::<Qp>() }
}

/// The session's batch.
///
/// # Safety
///
/// The calling thread is in the QP's post session.
unsafe fn batch<'a>(qp: *mut abi::ibv_qp_ex) -> &'a mut Batch {
    // SAFETY: the program's QP, in its session (the API's order).
    unsafe { qp_of(qp).batch.with() }
}

unsafe extern "C" fn wr_start(qp: *mut abi::ibv_qp_ex) {
    // SAFETY: the program's QP.
    let q = unsafe { qp_of(qp) };
    q.batch.begin();
    // SAFETY: begun just above.
    unsafe { q.batch.with() }.clear();
}

unsafe extern "C" fn wr_abort(qp: *mut abi::ibv_qp_ex) {
    // SAFETY: the program's QP, in its session.
    let q = unsafe { qp_of(qp) };
    // SAFETY: as above.
    unsafe { q.batch.with() }.clear();
    q.batch.end();
}

unsafe extern "C" fn wr_complete(qp: *mut abi::ibv_qp_ex) -> c_int {
    // SAFETY: the program's QP, in its session.
    let q = unsafe { qp_of(qp) };
    // SAFETY: as above.
    let b = unsafe { q.batch.with() };
    let mut r = b.error;
    if r == 0 {
        for p in &b.wrs {
            let mut wr = SendWr::new(p.wr_id, p.op);
            wr.flags = p.flags;
            wr.sgl = &b.sges[p.sges.clone()];
            if let Some(i) = &p.inline {
                wr.inline_data = &b.bytes[i.clone()];
                wr.sgl = &[];
            }
            wr.ud = p.ud;
            if let Err(e) = q.qp.post_send(&wr) {
                r = errno::of(&e);
                break;
            }
        }
    }
    b.clear();
    q.batch.end();
    r
}

/// Begins a request of the session with the QP's `wr_id` and `wr_flags`.
///
/// # Safety
///
/// The calling thread is in the QP's post session.
unsafe fn begin_wr(qp: *mut abi::ibv_qp_ex, op: SendOp) {
    // SAFETY: the program's QP.
    let (id, f) = unsafe { ((*qp).wr_id, (*qp).wr_flags) };
    // SAFETY: the session is this thread's.
    let b = unsafe { batch(qp) };
    if b.wrs.len() == b.wrs.capacity() {
        // More than the send queue holds: the post would fail anyway.
        b.error = libc::ENOMEM;
        return;
    }
    let at = b.sges.len();
    b.wrs.push(Pending {
        wr_id: id,
        flags: SendFlags {
            signaled: f & abi::IBV_SEND_SIGNALED != 0,
            solicited: f & abi::IBV_SEND_SOLICITED != 0,
            inline: f & abi::IBV_SEND_INLINE != 0,
            fence: f & abi::IBV_SEND_FENCE != 0,
        },
        op,
        ud: None,
        sges: at..at,
        inline: None,
    });
}

fn remote(rkey: u32, addr: u64) -> RemoteAddr {
    RemoteAddr {
        addr,
        rkey: Rkey(rkey),
    }
}

macro_rules! op {
    ($name:ident($($arg:ident: $ty:ty),*) => $op:expr) => {
        unsafe extern "C" fn $name(qp: *mut abi::ibv_qp_ex, $($arg: $ty),*) {
            // SAFETY: the program calls it inside its post session.
            unsafe { begin_wr(qp, $op) }
        }
    };
}

op!(wr_send() => SendOp::Send);
op!(wr_send_imm(imm: u32) => SendOp::SendImm(u32::from_be(imm)));
op!(wr_send_inv(rkey: u32) => SendOp::SendInv(Rkey(rkey)));
op!(wr_rdma_write(rkey: u32, addr: u64) => SendOp::Write(remote(rkey, addr)));
op!(wr_rdma_write_imm(rkey: u32, addr: u64, imm: u32) =>
    SendOp::WriteImm(remote(rkey, addr), u32::from_be(imm)));
op!(wr_rdma_read(rkey: u32, addr: u64) => SendOp::Read(remote(rkey, addr)));
op!(wr_atomic_cmp_swp(rkey: u32, addr: u64, compare: u64, swap: u64) =>
    SendOp::AtomicCas { remote: remote(rkey, addr), compare, swap });
op!(wr_atomic_fetch_add(rkey: u32, addr: u64, add: u64) =>
    SendOp::AtomicFa { remote: remote(rkey, addr), add });
op!(wr_local_inv(rkey: u32) => SendOp::LocalInv(Lkey(rkey)));

/// The request being built, if the session has one.
///
/// # Safety
///
/// The calling thread is in the QP's post session.
unsafe fn last<'a>(qp: *mut abi::ibv_qp_ex) -> Option<(&'a mut Batch, usize)> {
    // SAFETY: the session is this thread's.
    let b = unsafe { batch(qp) };
    match b.wrs.len() {
        0 => {
            b.error = libc::EINVAL;
            None
        }
        n => Some((b, n - 1)),
    }
}

/// Sets the data of the request being built to `sges`.
///
/// # Safety
///
/// The calling thread is in the QP's post session.
unsafe fn set_sges(qp: *mut abi::ibv_qp_ex, sges: impl ExactSizeIterator<Item = Sge>) {
    // SAFETY: as the caller's.
    let Some((b, i)) = (unsafe { last(qp) }) else {
        return;
    };
    // SAFETY: the program's QP.
    let max = unsafe { qp_of(qp) }.max_send_sge as usize;
    if sges.len() > max || b.sges.len() + sges.len() > b.sges.capacity() {
        b.error = libc::EINVAL;
        return;
    }
    let at = b.sges.len();
    b.sges.extend(sges);
    b.wrs[i].sges = at..b.sges.len();
}

unsafe extern "C" fn wr_set_sge(qp: *mut abi::ibv_qp_ex, lkey: u32, addr: u64, length: u32) {
    let one = Sge {
        addr,
        len: length,
        lkey: Lkey(lkey),
    };
    // SAFETY: the program calls it inside its post session.
    unsafe { set_sges(qp, std::iter::once(one)) }
}

unsafe extern "C" fn wr_set_sge_list(qp: *mut abi::ibv_qp_ex, n: usize, list: *const abi::ibv_sge) {
    if n > 0 && list.is_null() {
        // SAFETY: in the session.
        if let Some((b, _)) = unsafe { last(qp) } {
            b.error = libc::EINVAL;
        }
        return;
    }
    let list = if n == 0 {
        &[][..]
    } else {
        // SAFETY: the program's list of `n` SGEs.
        unsafe { std::slice::from_raw_parts(list, n) }
    };
    let sges = list.iter().map(|s| Sge {
        addr: s.addr,
        len: s.length,
        lkey: Lkey(s.lkey),
    });
    // SAFETY: the program calls it inside its post session.
    unsafe { set_sges(qp, sges) }
}

/// Copies inline data for the request being built, now (the program may
/// reuse its buffers as soon as the call returns).
///
/// # Safety
///
/// In the QP's post session; each buffer readable for its length.
unsafe fn set_inline(qp: *mut abi::ibv_qp_ex, bufs: &[(*const u8, usize)]) {
    // SAFETY: as the caller's.
    let Some((b, i)) = (unsafe { last(qp) }) else {
        return;
    };
    // SAFETY: the program's QP.
    let max = unsafe { qp_of(qp) }.max_inline as usize;
    let total: usize = bufs.iter().map(|(_, n)| n).sum();
    if total > max || b.bytes.len() + total > b.bytes.capacity() {
        b.error = libc::EINVAL;
        return;
    }
    let at = b.bytes.len();
    for &(p, n) in bufs {
        if n > 0 {
            // SAFETY: readable for `n` bytes (the contract).
            b.bytes
                .extend_from_slice(unsafe { std::slice::from_raw_parts(p, n) });
        }
    }
    b.wrs[i].inline = Some(at..b.bytes.len());
}

unsafe extern "C" fn wr_set_inline_data(qp: *mut abi::ibv_qp_ex, addr: *mut c_void, length: usize) {
    // SAFETY: the program's buffer, in its session.
    unsafe { set_inline(qp, &[(addr.cast_const().cast(), length)]) }
}

unsafe extern "C" fn wr_set_inline_data_list(
    qp: *mut abi::ibv_qp_ex,
    n: usize,
    list: *const abi::ibv_data_buf,
) {
    const MAX: usize = 32;
    if n > MAX || (n > 0 && list.is_null()) {
        // SAFETY: in the session.
        if let Some((b, _)) = unsafe { last(qp) } {
            b.error = libc::EINVAL;
        }
        return;
    }
    let mut bufs = [(std::ptr::null::<u8>(), 0usize); MAX];
    for (i, slot) in bufs[..n].iter_mut().enumerate() {
        // SAFETY: the program's list of `n` buffers.
        let d = unsafe { &*list.add(i) };
        *slot = (d.addr.cast_const().cast(), d.length);
    }
    // SAFETY: the program's buffers, in its session.
    unsafe { set_inline(qp, &bufs[..n]) }
}

unsafe extern "C" fn wr_set_ud_addr(
    qp: *mut abi::ibv_qp_ex,
    ah: *mut abi::ibv_ah,
    rqpn: u32,
    rqkey: u32,
) {
    // SAFETY: in the session.
    let Some((b, i)) = (unsafe { last(qp) }) else {
        return;
    };
    // SAFETY: the program's AH (`c` first in our `Ah`), or NULL.
    match unsafe { ah.cast::<qp::Ah>().as_ref() } {
        Some(a) => b.wrs[i].ud = Some(a.ah.dest(Qpn(rqpn), rqkey)),
        None => b.error = libc::EINVAL,
    }
}
