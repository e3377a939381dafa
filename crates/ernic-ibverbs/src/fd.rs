//! The file descriptors programs wait on: a context's `async_fd` and a
//! completion channel's `fd`. Each is an eventfd in semaphore mode: every
//! event adds one, every read takes one, so `poll(2)` on it wakes exactly
//! while events wait, and a program that made it non-blocking (`fcntl`)
//! gets EAGAIN when none does, as with the kernel's files.

use std::ffi::c_int;

/// A new eventfd (close-on-exec, semaphore); `None` when none can be had.
pub(crate) fn eventfd() -> Option<c_int> {
    // SAFETY: eventfd takes no pointers.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_SEMAPHORE) };
    (fd >= 0).then_some(fd)
}

/// Adds one event to `fd`.
pub(crate) fn signal(fd: c_int) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live local to an eventfd we made; a
    // failure (the counter at its maximum) loses nothing a reader needs,
    // as the count is then already far above zero.
    let _ = unsafe { libc::write(fd, (&raw const one).cast(), 8) };
}

/// Takes one event from `fd`, waiting for one unless the program made the
/// descriptor non-blocking: `Err(errno)` when it could not.
pub(crate) fn take(fd: c_int) -> Result<(), c_int> {
    let mut v: u64 = 0;
    loop {
        // SAFETY: reads 8 bytes into a live local from an eventfd.
        let n = unsafe { libc::read(fd, (&raw mut v).cast(), 8) };
        if n == 8 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// Takes one event from `fd` if one is waiting, without waiting: whether
/// it took one.
pub(crate) fn try_take(fd: c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd; a zero timeout never waits.
    let ready = unsafe { libc::poll(&raw mut p, 1, 0) } == 1;
    ready && take(fd).is_ok()
}

/// Closes a descriptor we made.
pub(crate) fn close(fd: c_int) {
    if fd >= 0 {
        // SAFETY: the descriptor is ours and closed once, by its owner.
        unsafe { libc::close(fd) };
    }
}
