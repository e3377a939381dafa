//! errno, as the C API reports failures: a call that returns a pointer
//! answers NULL with `errno` set; one that returns an int answers the
//! error number itself (rdma-core's convention, which perftest and the
//! pingpong programs print).

use std::ffi::c_int;

use ernic_core::EngineError;
use ernic_verbs::Error;

/// Sets the calling thread's `errno`.
pub(crate) fn set(e: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno, valid
    // for writes for the thread's life.
    unsafe { *libc::__errno_location() = e };
}

/// Sets `errno` to `e` and answers a NULL pointer of any type.
pub(crate) fn null<T>(e: c_int) -> *mut T {
    set(e);
    std::ptr::null_mut()
}

/// The error number for a verbs error.
pub(crate) fn of(e: &Error) -> c_int {
    match e {
        Error::Engine(e) => of_engine(e),
        Error::Alloc { .. } => libc::ENOMEM,
        Error::OutOfRange { .. } => libc::EINVAL,
        Error::Unsupported(_) => libc::EOPNOTSUPP,
        Error::Device(_) => libc::EIO,
        Error::CqOverrun { .. } => libc::EOVERFLOW,
    }
}

fn of_engine(e: &EngineError) -> c_int {
    match e {
        EngineError::Limit { .. }
        | EngineError::OverBudget { .. }
        | EngineError::QueueFull { .. } => libc::ENOMEM,
        EngineError::InUse { .. } => libc::EBUSY,
        EngineError::IdUnavailable { .. } => libc::EEXIST,
        EngineError::NoRoute(_) => libc::EHOSTUNREACH,
        _ => libc::EINVAL,
    }
}
