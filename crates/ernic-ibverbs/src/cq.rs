//! Completion channels and completion queues: creating them, polling
//! (`ibv_poll_cq` through `ibv_context_ops`), arming (`ibv_req_notify_cq`)
//! and the events a channel's fd wakes for.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use ernic_verbs::{Wc, WcOpcode};

use crate::abi;
use crate::device::Context;
use crate::errno;
use crate::fd;

/// `struct ibv_comp_channel` and the CQs whose events wait on it.
#[repr(C)]
pub(crate) struct Channel {
    pub c: abi::ibv_comp_channel,
    /// CQs with an event not yet taken, in the order they fired.
    pub ready: Mutex<VecDeque<usize>>,
    /// CQs created on the channel and not yet destroyed.
    pub cqs: AtomicUsize,
}

/// `struct ibv_cq` (the head of `struct ibv_cq_ex`) and the CQ behind it.
#[repr(C)]
pub(crate) struct Cq {
    pub c: abi::ibv_cq_ex,
    pub cq: ernic_verbs::Cq,
    /// The extended poll API's session (`ibv_start_poll` … `ibv_end_poll`):
    /// held by the one thread polling, and the completion it is at.
    pub session: crate::ex::Session<Wc>,
}

impl Cq {
    /// The CQ behind a program's `struct ibv_cq *`.
    ///
    /// # Safety
    ///
    /// `cq` must be NULL or a live CQ from `ibv_create_cq`.
    pub(crate) unsafe fn from_c<'a>(cq: *mut abi::ibv_cq) -> Option<&'a Cq> {
        // SAFETY: `c` (whose first members are `struct ibv_cq`) is the
        // first member of the repr(C) `Cq` that ibv_create_cq leaked.
        unsafe { cq.cast::<Cq>().as_ref() }
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context.
pub unsafe extern "C" fn ernic_ibv_create_comp_channel(
    ctx: *mut abi::ibv_context,
) -> *mut abi::ibv_comp_channel {
    // SAFETY: the caller's contract.
    if unsafe { Context::from_c(ctx) }.is_none() {
        return errno::null(libc::EINVAL);
    }
    let Some(fd) = fd::eventfd() else {
        return errno::null(libc::EMFILE);
    };
    let b = Box::new(Channel {
        c: abi::ibv_comp_channel {
            context: ctx,
            fd,
            refcnt: 0,
        },
        ready: Mutex::new(VecDeque::new()),
        cqs: AtomicUsize::new(0),
    });
    Box::into_raw(b).cast()
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ch` a live channel, destroyed once.
pub unsafe extern "C" fn ernic_ibv_destroy_comp_channel(ch: *mut abi::ibv_comp_channel) -> c_int {
    if ch.is_null() {
        return libc::EINVAL;
    }
    let chan = ch.cast::<Channel>();
    // SAFETY: a channel from ibv_create_comp_channel, still live.
    if unsafe { &*chan }.cqs.load(Ordering::SeqCst) > 0 {
        // CQs still report to it (as the kernel answers).
        return libc::EBUSY;
    }
    // SAFETY: as above, freed once; no CQ refers to it any more.
    let b = unsafe { Box::from_raw(chan) };
    fd::close(b.c.fd);
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context; `channel` NULL or a live channel of it.
pub unsafe extern "C" fn ernic_ibv_create_cq(
    ctx: *mut abi::ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut abi::ibv_comp_channel,
    _comp_vector: c_int,
) -> *mut abi::ibv_cq {
    // SAFETY: the caller's contract.
    unsafe { create(ctx, cqe, cq_context, channel) }.cast()
}

/// The most entries a CQ may have (`max_cqe`). A CQ's ring is allocated
/// whole when it is made, about 64 bytes an entry, so this bounds one CQ
/// to 64 MiB. It is far above a QP's depth because programs size one CQ
/// for many QPs: libfabric's RDM endpoint asks for 262,144 entries.
pub(crate) const MAX_CQE: u32 = 1 << 20;

/// Makes a CQ (both `ibv_create_cq` and `ibv_create_cq_ex`).
///
/// # Safety
///
/// `ctx` an open context; `channel` NULL or a live channel of it.
pub(crate) unsafe fn create(
    ctx: *mut abi::ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut abi::ibv_comp_channel,
) -> *mut Cq {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return errno::null(libc::EINVAL);
    };
    if cqe < 1 || cqe as u32 > MAX_CQE {
        tracing::debug!("ibv_create_cq: {cqe} entries asked, 1 to {MAX_CQE} allowed (max_cqe)");
        return errno::null(libc::EINVAL);
    }
    let cq = match c.rt.device.create_cq(cqe as u32) {
        Ok(cq) => cq,
        Err(e) => return errno::null(errno::of(&e)),
    };
    // SAFETY: ibv_cq_ex is plain C data; zero is valid for every field
    // (NULL pointers, None, an initialised-by-zero pthread mutex and cond).
    let mut head: abi::ibv_cq_ex = unsafe { std::mem::zeroed() };
    head.context = ctx;
    head.channel = channel;
    head.cq_context = cq_context;
    head.cqe = cq.depth() as c_int;
    let b = Box::into_raw(Box::new(Cq {
        c: head,
        cq,
        session: crate::ex::Session::new(Wc::EMPTY),
    }));
    if !channel.is_null() {
        let chan = channel.cast::<Channel>();
        let (me, ch) = (b as usize, chan as usize);
        let notify = Box::new(move || {
            // SAFETY: the channel outlives every CQ on it (destroying it
            // is refused while `cqs` > 0), and this CQ's notifier goes
            // with the CQ.
            let chan = unsafe { &*(ch as *const Channel) };
            chan.ready
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_back(me);
            fd::signal(chan.c.fd);
        });
        // SAFETY: `b` was just made; `chan` is live (the contract).
        unsafe {
            (*chan).cqs.fetch_add(1, Ordering::SeqCst);
            if let Err(e) = (*b).cq.set_notify(notify) {
                (*chan).cqs.fetch_sub(1, Ordering::SeqCst);
                drop(Box::from_raw(b));
                return errno::null(errno::of(&e));
            }
        }
    }
    b
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `cq` a live CQ no QP uses, destroyed once.
pub unsafe extern "C" fn ernic_ibv_destroy_cq(cq: *mut abi::ibv_cq) -> c_int {
    if cq.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a CQ from ibv_create_cq (Box::into_raw), freed once.
    let b = unsafe { Box::from_raw(cq.cast::<Cq>()) };
    let channel = b.c.channel;
    let me = cq as usize;
    drop(b);
    if !channel.is_null() {
        // SAFETY: the channel outlives its CQs (see ibv_create_cq).
        let chan = unsafe { &*channel.cast::<Channel>() };
        // Its events not yet taken go with it.
        chan.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&c| c != me);
        chan.cqs.fetch_sub(1, Ordering::SeqCst);
    }
    0
}

#[unsafe(no_mangle)]
/// `ibv_resize_cq`: not supported (the CQ keeps its size).
///
/// # Safety
///
/// Any arguments.
pub unsafe extern "C" fn ernic_ibv_resize_cq(_cq: *mut abi::ibv_cq, _cqe: c_int) -> c_int {
    libc::EOPNOTSUPP
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ch` a live channel; `cq` and `cq_context` writable.
pub unsafe extern "C" fn ernic_ibv_get_cq_event(
    ch: *mut abi::ibv_comp_channel,
    cq: *mut *mut abi::ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    if ch.is_null() || cq.is_null() || cq_context.is_null() {
        errno::set(libc::EINVAL);
        return -1;
    }
    // SAFETY: a live channel (the contract).
    let chan = unsafe { &*ch.cast::<Channel>() };
    loop {
        if let Err(e) = fd::take(chan.c.fd) {
            errno::set(e);
            return -1;
        }
        // An event whose CQ was destroyed since was taken out of `ready`,
        // leaving its count in the fd: wait on for a real one.
        let Some(me) = chan
            .ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
        else {
            continue;
        };
        let c = me as *mut Cq;
        // SAFETY: `me` is a live CQ of this channel (destroying a CQ takes
        // its events out under the same lock); the out pointers are
        // writable (the contract).
        unsafe {
            *cq = c.cast();
            *cq_context = (*c).c.cq_context;
        }
        return 0;
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `cq` a live CQ.
pub unsafe extern "C" fn ernic_ibv_ack_cq_events(cq: *mut abi::ibv_cq, nevents: u32) {
    if cq.is_null() {
        return;
    }
    let c = cq.cast::<Cq>();
    // SAFETY: a live CQ; the count is only a tally for the program (the
    // kernel's, which ibv_destroy_cq waits on, has no counterpart here),
    // written by the thread acking.
    unsafe { (*c).c.comp_events_completed = (*c).c.comp_events_completed.wrapping_add(nevents) };
}

/// `ibv_context_ops.req_notify_cq`.
///
/// # Safety
///
/// `cq` a live CQ.
pub(crate) unsafe extern "C" fn req_notify_cq(
    cq: *mut abi::ibv_cq,
    solicited_only: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Cq::from_c(cq) }) else {
        return libc::EINVAL;
    };
    match c.cq.arm(solicited_only != 0) {
        Ok(()) => 0,
        Err(e) => errno::of(&e),
    }
}

/// Most completions moved from the ring in one go (on the stack).
const POLL_BATCH: usize = 32;

/// `ibv_context_ops.poll_cq`: up to `n` completions into `wc`; answers how
/// many, or a negative number on error (a CQ overrun).
///
/// # Safety
///
/// `cq` a live CQ; `wc` writable for `n` entries.
pub(crate) unsafe extern "C" fn poll_cq(
    cq: *mut abi::ibv_cq,
    n: c_int,
    wc: *mut abi::ibv_wc,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Cq::from_c(cq) }) else {
        return -1;
    };
    if n <= 0 || wc.is_null() {
        return 0;
    }
    let mut done = 0usize;
    let mut buf = [Wc::EMPTY; POLL_BATCH];
    while done < n as usize {
        let want = (n as usize - done).min(POLL_BATCH);
        let got = match c.cq.poll(&mut buf[..want]) {
            Ok(k) => k,
            Err(_) if done > 0 => break,
            Err(_) => return -1,
        };
        for (i, w) in buf[..got].iter().enumerate() {
            // SAFETY: done + i < n, inside the caller's array.
            unsafe { wc.add(done + i).write(to_ibv(w)) };
        }
        done += got;
        if got < want {
            break;
        }
    }
    done as c_int
}

/// A completion as `struct ibv_wc`.
pub(crate) fn to_ibv(w: &Wc) -> abi::ibv_wc {
    let mut flags = 0;
    let mut imm = 0u32;
    if let Some(v) = w.imm {
        flags |= abi::IBV_WC_WITH_IMM;
        imm = v.to_be();
    } else if let Some(k) = w.invalidated {
        flags |= abi::IBV_WC_WITH_INV;
        imm = k.0;
    }
    if w.grh {
        flags |= abi::IBV_WC_GRH;
    }
    // SAFETY: plain C data; zero is valid for every field.
    let mut out: abi::ibv_wc = unsafe { std::mem::zeroed() };
    out.wr_id = w.wr_id;
    out.status = w.status as u32;
    out.opcode = opcode(w.opcode);
    out.byte_len = w.byte_len;
    out.imm_data_invalidated_rkey = abi::ibv_wc_imm { imm_data: imm };
    out.qp_num = w.qpn.0;
    out.src_qp = w.src_qpn.0;
    out.wc_flags = flags;
    out.pkey_index = 0;
    out
}

fn opcode(o: WcOpcode) -> u32 {
    match o {
        WcOpcode::Send => abi::IBV_WC_SEND,
        WcOpcode::RdmaWrite => abi::IBV_WC_RDMA_WRITE,
        WcOpcode::RdmaRead => abi::IBV_WC_RDMA_READ,
        WcOpcode::CompSwap => abi::IBV_WC_COMP_SWAP,
        WcOpcode::FetchAdd => abi::IBV_WC_FETCH_ADD,
        WcOpcode::LocalInv => abi::IBV_WC_LOCAL_INV,
        // A fast registration has no user-space opcode of its own; the
        // library never posts one.
        WcOpcode::RegMr => abi::IBV_WC_DRIVER1,
        WcOpcode::Recv => abi::IBV_WC_RECV,
        WcOpcode::RecvRdmaWithImm => abi::IBV_WC_RECV_RDMA_WITH_IMM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ernic_verbs::WcStatus;

    #[test]
    fn every_status_is_its_ibv_wc_status() {
        let want = [
            (WcStatus::Success, abi::IBV_WC_SUCCESS),
            (WcStatus::LocLenErr, abi::IBV_WC_LOC_LEN_ERR),
            (WcStatus::LocQpOpErr, abi::IBV_WC_LOC_QP_OP_ERR),
            (WcStatus::LocProtErr, abi::IBV_WC_LOC_PROT_ERR),
            (WcStatus::WrFlushErr, abi::IBV_WC_WR_FLUSH_ERR),
            (WcStatus::RemInvReqErr, abi::IBV_WC_REM_INV_REQ_ERR),
            (WcStatus::RemAccessErr, abi::IBV_WC_REM_ACCESS_ERR),
            (WcStatus::RemOpErr, abi::IBV_WC_REM_OP_ERR),
            (WcStatus::RetryExcErr, abi::IBV_WC_RETRY_EXC_ERR),
            (WcStatus::RnrRetryExcErr, abi::IBV_WC_RNR_RETRY_EXC_ERR),
            (WcStatus::GeneralErr, abi::IBV_WC_GENERAL_ERR),
        ];
        assert_eq!(want.len(), WcStatus::ALL.len(), "every status is listed");
        for (s, c) in want {
            let w = Wc {
                status: s,
                ..Wc::EMPTY
            };
            assert_eq!(to_ibv(&w).status, c, "{s:?}");
        }
    }

    #[test]
    fn immediates_and_invalidated_keys_reach_the_union() {
        let w = Wc {
            imm: Some(0x1122_3344),
            opcode: WcOpcode::Recv,
            ..Wc::EMPTY
        };
        let c = to_ibv(&w);
        assert_eq!(c.wc_flags, abi::IBV_WC_WITH_IMM);
        // SAFETY: a u32 union; either member reads the same bytes.
        let imm = unsafe { c.imm_data_invalidated_rkey.imm_data };
        assert_eq!(u32::from_be(imm), 0x1122_3344);
        let w = Wc {
            invalidated: Some(ernic_verbs::Rkey(0x77)),
            ..Wc::EMPTY
        };
        let c = to_ibv(&w);
        assert_eq!(c.wc_flags, abi::IBV_WC_WITH_INV);
        // SAFETY: as above.
        let key = unsafe { c.imm_data_invalidated_rkey.invalidated_rkey };
        assert_eq!(key, 0x77);
        assert_eq!(
            opcode(WcOpcode::RecvRdmaWithImm),
            abi::IBV_WC_RECV_RDMA_WITH_IMM
        );
        assert_eq!(opcode(WcOpcode::LocalInv), abi::IBV_WC_LOCAL_INV);
    }
}
