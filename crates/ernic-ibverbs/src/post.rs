//! Posting work (`ibv_post_send`, `ibv_post_recv`, `ibv_post_srq_recv`
//! through `ibv_context_ops`): each program request becomes an engine
//! request on the stack (SGEs, inline bytes, the opcode's union member, a
//! UD destination from its AH), with nothing allocated.

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::ptr;

use ernic_verbs::{Lkey, QpType, Qpn, RecvWr, RemoteAddr, Rkey, SendFlags, SendOp, SendWr, Sge};

use crate::abi;
use crate::errno;
use crate::qp::{Ah, MAX_INLINE, MAX_SGE, Qp, Srq};

/// Gathers a request's SGEs into `out`; answers how many, or EINVAL.
///
/// # Safety
///
/// `sg` readable for `n` entries.
unsafe fn sges(
    sg: *const abi::ibv_sge,
    n: c_int,
    out: &mut [MaybeUninit<Sge>; MAX_SGE],
) -> Result<&[Sge], c_int> {
    let n = usize::try_from(n).map_err(|_| libc::EINVAL)?;
    if n > MAX_SGE || (n > 0 && sg.is_null()) {
        return Err(libc::EINVAL);
    }
    for (i, slot) in out[..n].iter_mut().enumerate() {
        // SAFETY: i < n, inside the caller's list.
        let s = unsafe { &*sg.add(i) };
        slot.write(Sge {
            addr: s.addr,
            len: s.length,
            lkey: Lkey(s.lkey),
        });
    }
    // SAFETY: the first n entries were just written.
    Ok(unsafe { &*(ptr::from_ref(&out[..n]) as *const [Sge]) })
}

/// A send request as the engine's.
///
/// # Safety
///
/// `w`'s pointers (list, AH) valid as the program passes them.
unsafe fn send_op(w: &abi::ibv_send_wr) -> Result<SendOp, c_int> {
    // SAFETY: the union member read is the one the opcode says is set.
    let rdma = || unsafe {
        RemoteAddr {
            addr: w.wr.rdma.remote_addr,
            rkey: Rkey(w.wr.rdma.rkey),
        }
    };
    // SAFETY: as above.
    let atomic = || unsafe {
        (
            RemoteAddr {
                addr: w.wr.atomic.remote_addr,
                rkey: Rkey(w.wr.atomic.rkey),
            },
            w.wr.atomic.compare_add,
            w.wr.atomic.swap,
        )
    };
    // SAFETY: imm_data and invalidate_rkey share a union; which is set is
    // what the opcode says.
    let imm = unsafe { w.imm_data_invalidated_rkey.imm_data };
    Ok(match w.opcode {
        abi::IBV_WR_SEND => SendOp::Send,
        abi::IBV_WR_SEND_WITH_IMM => SendOp::SendImm(u32::from_be(imm)),
        abi::IBV_WR_SEND_WITH_INV => SendOp::SendInv(Rkey(imm)),
        abi::IBV_WR_RDMA_WRITE => SendOp::Write(rdma()),
        abi::IBV_WR_RDMA_WRITE_WITH_IMM => SendOp::WriteImm(rdma(), u32::from_be(imm)),
        abi::IBV_WR_RDMA_READ => SendOp::Read(rdma()),
        abi::IBV_WR_ATOMIC_CMP_AND_SWP => {
            let (remote, compare, swap) = atomic();
            SendOp::AtomicCas {
                remote,
                compare,
                swap,
            }
        }
        abi::IBV_WR_ATOMIC_FETCH_AND_ADD => {
            let (remote, add, _) = atomic();
            SendOp::AtomicFa { remote, add }
        }
        abi::IBV_WR_LOCAL_INV => SendOp::LocalInv(Lkey(imm)),
        _ => return Err(libc::EOPNOTSUPP),
    })
}

/// Posts one send request.
///
/// # Safety
///
/// `w` and what it points to valid as the program passes them.
unsafe fn post_one(q: &Qp, w: &abi::ibv_send_wr) -> Result<(), c_int> {
    let mut sg = [const { MaybeUninit::uninit() }; MAX_SGE];
    // SAFETY: the program's list (the contract).
    let sgl = unsafe { sges(w.sg_list, w.num_sge, &mut sg)? };
    // SAFETY: as above.
    let op = unsafe { send_op(w)? };
    let flags = SendFlags {
        signaled: w.send_flags & abi::IBV_SEND_SIGNALED != 0,
        solicited: w.send_flags & abi::IBV_SEND_SOLICITED != 0,
        inline: w.send_flags & abi::IBV_SEND_INLINE != 0,
        fence: w.send_flags & abi::IBV_SEND_FENCE != 0,
    };
    let mut wr = SendWr::new(w.wr_id, op);
    wr.flags = flags;
    // Initialised only for an inline send (it is 4 KiB).
    let mut inline: [u8; MAX_INLINE];
    if flags.inline {
        inline = [0u8; MAX_INLINE];
        // Inline data is read now, from the addresses (no key applies).
        let mut at = 0usize;
        for s in sgl {
            let len = s.len as usize;
            if at + len > MAX_INLINE {
                return Err(libc::EINVAL);
            }
            if len > 0 {
                // SAFETY: the program's buffer of `len` bytes at `addr`,
                // readable (the verbs contract for inline sends).
                unsafe {
                    ptr::copy_nonoverlapping(s.addr as *const u8, inline[at..].as_mut_ptr(), len)
                };
            }
            at += len;
        }
        wr.inline_data = &inline[..at];
    } else {
        wr.sgl = sgl;
    }
    if q.qp.qp_type() == QpType::Ud {
        // SAFETY: the union member of UD requests; the AH live.
        let (ah, rqpn, rqkey) = unsafe { (w.wr.ud.ah, w.wr.ud.remote_qpn, w.wr.ud.remote_qkey) };
        // SAFETY: the AH is `c`, the first member of our `Ah`.
        let Some(ah) = (unsafe { ah.cast::<Ah>().as_ref() }) else {
            return Err(libc::EINVAL);
        };
        wr.ud = Some(ah.ah.dest(Qpn(rqpn), rqkey));
    }
    q.qp.post_send(&wr).map_err(|e| errno::of(&e))
}

/// `ibv_context_ops.post_send`: posts the list in order; the first one
/// refused stops it, named in `bad` (the ones before stay posted).
///
/// # Safety
///
/// `qp` a live QP; the list as the program builds it.
pub(crate) unsafe extern "C" fn post_send(
    qp: *mut abi::ibv_qp,
    wr: *mut abi::ibv_send_wr,
    bad: *mut *mut abi::ibv_send_wr,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(q) = (unsafe { Qp::from_c(qp) }) else {
        return libc::EINVAL;
    };
    let mut w = wr;
    while !w.is_null() {
        // SAFETY: a request of the program's list.
        let r = unsafe { post_one(q, &*w) };
        if let Err(e) = r {
            if !bad.is_null() {
                // SAFETY: `bad` is writable (the contract).
                unsafe { *bad = w };
            }
            return e;
        }
        // SAFETY: as above.
        w = unsafe { (*w).next };
    }
    0
}

/// Posts a receive list with `one`, stopping at the first refused.
///
/// # Safety
///
/// The list as the program builds it.
unsafe fn post_recvs(
    wr: *mut abi::ibv_recv_wr,
    bad: *mut *mut abi::ibv_recv_wr,
    max_sge: u32,
    one: &dyn Fn(&RecvWr<'_>) -> Result<(), ernic_verbs::Error>,
) -> c_int {
    let mut w = wr;
    while !w.is_null() {
        // SAFETY: a request of the program's list.
        let r = unsafe { &*w };
        let mut sg = [const { MaybeUninit::uninit() }; MAX_SGE];
        // SAFETY: the program's list.
        let res = match unsafe { sges(r.sg_list, r.num_sge, &mut sg) } {
            Ok(sgl) if sgl.len() as u32 > max_sge => Err(libc::EINVAL),
            Ok(sgl) => one(&RecvWr {
                wr_id: r.wr_id,
                sgl,
            })
            .map_err(|e| errno::of(&e)),
            Err(e) => Err(e),
        };
        if let Err(e) = res {
            if !bad.is_null() {
                // SAFETY: `bad` is writable.
                unsafe { *bad = w };
            }
            return e;
        }
        w = r.next;
    }
    0
}

/// `ibv_context_ops.post_recv`.
///
/// # Safety
///
/// `qp` a live QP; the list as the program builds it.
pub(crate) unsafe extern "C" fn post_recv(
    qp: *mut abi::ibv_qp,
    wr: *mut abi::ibv_recv_wr,
    bad: *mut *mut abi::ibv_recv_wr,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(q) = (unsafe { Qp::from_c(qp) }) else {
        return libc::EINVAL;
    };
    // SAFETY: the caller's contract.
    unsafe {
        post_recvs(wr, bad, MAX_SGE as u32, &|r| {
            q.qp.post_recv_list(std::slice::from_ref(r))
        })
    }
}

/// `ibv_context_ops.post_srq_recv`.
///
/// # Safety
///
/// `srq` a live SRQ; the list as the program builds it.
pub(crate) unsafe extern "C" fn post_srq_recv(
    srq: *mut abi::ibv_srq,
    wr: *mut abi::ibv_recv_wr,
    bad: *mut *mut abi::ibv_recv_wr,
) -> c_int {
    // SAFETY: `c` is the first member of our `Srq`.
    let Some(s) = (unsafe { srq.cast::<Srq>().as_ref() }) else {
        return libc::EINVAL;
    };
    // SAFETY: the caller's contract.
    unsafe { post_recvs(wr, bad, s.max_sge, &|r| s.srq.post_recv(r.wr_id, r.sgl)) }
}
