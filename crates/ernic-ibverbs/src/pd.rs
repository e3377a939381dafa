//! Protection domains and memory regions on the caller's own memory.

use std::ffi::{c_int, c_uint, c_void};
use std::ptr::NonNull;

use ernic_verbs::Access;

use crate::abi;
use crate::device::Context;
use crate::errno;

/// `struct ibv_pd` and the PD behind it.
#[repr(C)]
pub(crate) struct Pd {
    pub c: abi::ibv_pd,
    pub pd: ernic_verbs::Pd,
}

impl Pd {
    /// The PD behind a program's `struct ibv_pd *`.
    ///
    /// # Safety
    ///
    /// `pd` must be NULL or a live PD from `ibv_alloc_pd`.
    pub(crate) unsafe fn from_c<'a>(pd: *mut abi::ibv_pd) -> Option<&'a Pd> {
        // SAFETY: `c` is the first member of the repr(C) `Pd` that
        // ibv_alloc_pd leaked, so the pointers are the same.
        unsafe { pd.cast::<Pd>().as_ref() }
    }
}

/// `struct ibv_mr` and the region behind it.
#[repr(C)]
pub(crate) struct Mr {
    pub c: abi::ibv_mr,
    pub mr: ernic_verbs::Mr,
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ctx` an open context.
pub unsafe extern "C" fn ernic_ibv_alloc_pd(ctx: *mut abi::ibv_context) -> *mut abi::ibv_pd {
    // SAFETY: the caller's contract.
    let Some(c) = (unsafe { Context::from_c(ctx) }) else {
        return errno::null(libc::EINVAL);
    };
    match c.rt.device.alloc_pd() {
        Ok(pd) => {
            let b = Box::new(Pd {
                c: abi::ibv_pd {
                    context: ctx,
                    handle: 0,
                },
                pd,
            });
            Box::into_raw(b).cast()
        }
        Err(e) => errno::null(errno::of(&e)),
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `pd` a live PD, freed once.
pub unsafe extern "C" fn ernic_ibv_dealloc_pd(pd: *mut abi::ibv_pd) -> c_int {
    if pd.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a PD from ibv_alloc_pd (Box::into_raw), freed once. The
    // objects made in it hold their own reference to the engine's PD, so
    // it outlives them.
    drop(unsafe { Box::from_raw(pd.cast::<Pd>()) });
    0
}

/// The access bits the device takes: the four of `ibv_access_flags` ernic
/// checks, and those it may ignore (HUGETLB, and the optional range, which
/// a device is free to leave unheeded).
const TAKEN: c_uint = abi::IBV_ACCESS_LOCAL_WRITE
    | abi::IBV_ACCESS_REMOTE_WRITE
    | abi::IBV_ACCESS_REMOTE_READ
    | abi::IBV_ACCESS_REMOTE_ATOMIC
    | abi::IBV_ACCESS_ZERO_BASED
    | abi::IBV_ACCESS_HUGETLB
    | abi::IBV_ACCESS_OPTIONAL_RANGE;

/// The ernic rights for `ibv_access_flags`, or the error number.
fn access_of(flags: c_uint) -> Result<Access, c_int> {
    if flags & !TAKEN != 0 {
        // MW_BIND, ON_DEMAND, REMOTE_FLUSH…: rights this device cannot give.
        return Err(libc::EOPNOTSUPP);
    }
    let a = Access(flags & 0xf);
    if !a.is_consistent() {
        // Remote write or atomic rights need local write (the verbs rule).
        return Err(libc::EINVAL);
    }
    Ok(a)
}

/// Registers `len` bytes at `addr`, known to the device as `iova`.
///
/// # Safety
///
/// `pd` a live PD; the memory valid until the region is deregistered.
unsafe fn reg(
    pd: *mut abi::ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: c_uint,
) -> *mut abi::ibv_mr {
    // SAFETY: the caller's contract.
    let Some(p) = (unsafe { Pd::from_c(pd) }) else {
        return errno::null(libc::EINVAL);
    };
    let Some(ptr) = NonNull::new(addr.cast::<u8>()) else {
        return errno::null(libc::EINVAL);
    };
    if len == 0 {
        return errno::null(libc::EINVAL);
    }
    let iova = if access & abi::IBV_ACCESS_ZERO_BASED != 0 {
        0
    } else {
        iova
    };
    let access = match access_of(access) {
        Ok(a) => a,
        Err(e) => return errno::null(e),
    };
    // SAFETY: the program keeps the memory valid until ibv_dereg_mr (the
    // verbs contract, passed on to ours).
    match unsafe { p.pd.reg_user_mr_iova(ptr, len, iova, access) } {
        Ok(mr) => {
            let key = mr.lkey().0;
            let b = Box::new(Mr {
                c: abi::ibv_mr {
                    context: p.c.context,
                    pd,
                    addr,
                    length: len,
                    handle: key,
                    lkey: key,
                    rkey: mr.rkey().0,
                },
                mr,
            });
            Box::into_raw(b).cast()
        }
        Err(e) => errno::null(errno::of(&e)),
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `pd` a live PD; the memory valid until deregistered.
pub unsafe extern "C" fn ernic_ibv_reg_mr(
    pd: *mut abi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> *mut abi::ibv_mr {
    // SAFETY: the caller's contract.
    unsafe { reg(pd, addr, length, addr as u64, access as c_uint) }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// As `ibv_reg_mr`.
pub unsafe extern "C" fn ernic_ibv_reg_mr_iova(
    pd: *mut abi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: c_int,
) -> *mut abi::ibv_mr {
    // SAFETY: the caller's contract.
    unsafe { reg(pd, addr, length, iova, access as c_uint) }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// As `ibv_reg_mr`.
pub unsafe extern "C" fn ernic_ibv_reg_mr_iova2(
    pd: *mut abi::ibv_pd,
    addr: *mut c_void,
    length: usize,
    iova: u64,
    access: c_uint,
) -> *mut abi::ibv_mr {
    // SAFETY: the caller's contract.
    unsafe { reg(pd, addr, length, iova, access) }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `mr` a live region, deregistered once.
pub unsafe extern "C" fn ernic_ibv_dereg_mr(mr: *mut abi::ibv_mr) -> c_int {
    if mr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: a region from ibv_reg_mr* (Box::into_raw), freed once;
    // dropping the ernic region deregisters it.
    drop(unsafe { Box::from_raw(mr.cast::<Mr>()) });
    0
}

#[unsafe(no_mangle)]
/// `ibv_rereg_mr`: changing a region in place is not supported; the
/// caller keeps the old region (IBV_REREG_MR_ERR_INPUT, as rdma-core
/// answers a request it cannot carry out before touching the region).
///
/// # Safety
///
/// Any arguments.
pub unsafe extern "C" fn ernic_ibv_rereg_mr(
    _mr: *mut abi::ibv_mr,
    _flags: c_int,
    _pd: *mut abi::ibv_pd,
    _addr: *mut c_void,
    _length: usize,
    _access: c_int,
) -> c_int {
    errno::set(libc::EOPNOTSUPP);
    abi::IBV_REREG_MR_ERR_INPUT
}

/// A buffer from `ibv_alloc_buf`: anonymous pages of this process.
struct Buf {
    ptr: *mut c_void,
    len: usize,
}

#[unsafe(no_mangle)]
/// `ibv_alloc_buf` (rdma-core 64): `size` bytes of fresh, page-aligned,
/// zeroed memory for a region; `*buf` is the handle `ibv_free_buf` takes.
///
/// # Safety
///
/// `pd` a live PD; `buf` writable.
pub unsafe extern "C" fn ernic_ibv_alloc_buf(
    pd: *mut abi::ibv_pd,
    size: usize,
    buf: *mut *mut abi::ibv_buf,
) -> *mut c_void {
    // SAFETY: the caller's contract.
    if unsafe { Pd::from_c(pd) }.is_none() || buf.is_null() || size == 0 {
        return errno::null(libc::EINVAL);
    }
    // SAFETY: an anonymous private mapping; no pointer is passed in.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return errno::null(libc::ENOMEM);
    }
    let handle = Box::into_raw(Box::new(Buf { ptr, len: size }));
    // SAFETY: `buf` is writable (the contract).
    unsafe { *buf = handle.cast() };
    ptr
}

#[unsafe(no_mangle)]
/// `ibv_free_buf`: unmaps a buffer from `ibv_alloc_buf` (after its region
/// is deregistered).
///
/// # Safety
///
/// `buf` a handle from `ibv_alloc_buf`, freed once.
pub unsafe extern "C" fn ernic_ibv_free_buf(buf: *mut abi::ibv_buf) {
    if buf.is_null() {
        return;
    }
    // SAFETY: made by ibv_alloc_buf (Box::into_raw), freed once.
    let b = unsafe { Box::from_raw(buf.cast::<Buf>()) };
    // SAFETY: the mapping ibv_alloc_buf made, of that length.
    unsafe { libc::munmap(b.ptr, b.len) };
}

#[unsafe(no_mangle)]
/// `ibv_reg_buf_mr`: registers `length` bytes at `addr`, inside `buf`.
///
/// # Safety
///
/// As `ibv_reg_mr`, with `buf` from `ibv_alloc_buf`.
pub unsafe extern "C" fn ernic_ibv_reg_buf_mr(
    pd: *mut abi::ibv_pd,
    buf: *mut abi::ibv_buf,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> *mut abi::ibv_mr {
    if !buf.is_null() {
        // SAFETY: a handle from ibv_alloc_buf.
        let b = unsafe { &*buf.cast::<Buf>() };
        let (start, end) = (b.ptr as usize, b.ptr as usize + b.len);
        if (addr as usize) < start || (addr as usize).saturating_add(length) > end {
            return errno::null(libc::EINVAL);
        }
    }
    // SAFETY: the caller's contract.
    unsafe { reg(pd, addr, length, addr as u64, access as c_uint) }
}

#[unsafe(no_mangle)]
/// `ibv_reg_mr_ex` (rdma-core 59): a region of the caller's memory, at an
/// IOVA if asked. dma-buf regions and DMA handles are not offered.
///
/// # Safety
///
/// `pd` a live PD; `attr` readable; the memory as for `ibv_reg_mr`.
pub unsafe extern "C" fn ernic_ibv_reg_mr_ex(
    pd: *mut abi::ibv_pd,
    attr: *mut abi::ibv_mr_init_attr,
) -> *mut abi::ibv_mr {
    // SAFETY: the caller's contract.
    let Some(a) = (unsafe { attr.as_ref() }) else {
        return errno::null(libc::EINVAL);
    };
    // The mask's bits all sit in its low word.
    let m = a.comp_mask as u32;
    if m & (abi::IBV_REG_MR_MASK_FD | abi::IBV_REG_MR_MASK_FD_OFFSET | abi::IBV_REG_MR_MASK_DMAH)
        != 0
    {
        return errno::null(libc::EOPNOTSUPP);
    }
    if m & abi::IBV_REG_MR_MASK_ADDR == 0 {
        return errno::null(libc::EINVAL);
    }
    let iova = if m & abi::IBV_REG_MR_MASK_IOVA != 0 {
        a.iova
    } else {
        a.addr as u64
    };
    // `buf` exists only in structs of rdma-core 64 and later, and is read
    // only when the mask says it is there.
    if m & abi::IBV_REG_MR_MASK_BUF != 0 {
        // SAFETY: the caller's contract.
        return unsafe { ernic_ibv_reg_buf_mr(pd, a.buf, a.addr, a.length, a.access) };
    }
    // SAFETY: the caller's contract.
    unsafe { reg(pd, a.addr, a.length, iova, a.access as c_uint) }
}
