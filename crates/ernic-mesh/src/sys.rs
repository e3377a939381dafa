//! The few socket calls std does not offer: a send and a receive that never
//! block (`MSG_DONTWAIT`), and waiting for a socket to become readable.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Sends what the socket takes now; `Ok(0)` when it takes nothing.
pub fn send_now(fd: &impl AsRawFd, buf: &[u8]) -> io::Result<usize> {
    let fd: RawFd = fd.as_raw_fd();
    // SAFETY: `buf` is a valid slice for its length for the duration of the
    // call; `fd` is a socket owned by the caller's stream; MSG_NOSIGNAL keeps
    // a closed peer from raising SIGPIPE.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(0)
    } else {
        Err(e)
    }
}

/// Sends what the socket takes now of the buffers, in order, with one
/// `sendmsg(2)`; `Ok(0)` when it takes nothing.
pub fn send_vectored_now(fd: &impl AsRawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    const MAX: usize = 16;
    let mut iov = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; MAX];
    let n = bufs.len().min(MAX);
    for (v, b) in iov.iter_mut().zip(bufs) {
        v.iov_base = b.as_ptr() as *mut libc::c_void;
        v.iov_len = b.len();
    }
    // SAFETY: a zeroed msghdr is a valid "no name, no control" header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = n as _;
    // SAFETY: `msg` points at `n` iovecs describing live, readable slices
    // that outlive the call (sendmsg only reads them); `fd` is the caller's
    // socket; MSG_NOSIGNAL keeps a closed peer from raising SIGPIPE.
    let r = unsafe {
        libc::sendmsg(
            fd.as_raw_fd(),
            &msg,
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if r >= 0 {
        return Ok(r as usize);
    }
    let e = io::Error::last_os_error();
    if e.kind() == io::ErrorKind::WouldBlock {
        Ok(0)
    } else {
        Err(e)
    }
}

/// Receives what has arrived; `Ok(None)` when nothing has, `Ok(Some(0))` at
/// the end of the stream.
pub fn recv_now(fd: &impl AsRawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    let fd: RawFd = fd.as_raw_fd();
    // SAFETY: `buf` is a valid, writable slice for its length for the
    // duration of the call; `fd` is a socket owned by the caller's stream.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => Ok(None),
        io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// Waits up to `timeout` for the socket to have something to read (or to
/// close). Returns whether it is readable.
pub fn wait_readable(fd: &impl AsRawFd, timeout: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `p` is one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    n > 0
}

/// Which of `fds` have something to read (or have closed), without waiting:
/// one `poll(2)` for all of them. Sets `ready[i]` for each readable `fds[i]`.
pub fn readable_now(fds: &[RawFd], ready: &mut [bool]) {
    const MAX: usize = 64;
    for (chunk, out) in fds.chunks(MAX).zip(ready.chunks_mut(MAX)) {
        let mut p = [libc::pollfd {
            fd: -1,
            events: 0,
            revents: 0,
        }; MAX];
        for (slot, fd) in p.iter_mut().zip(chunk) {
            slot.fd = *fd;
            slot.events = libc::POLLIN;
        }
        // SAFETY: `p` holds `chunk.len()` initialised pollfds, valid for the
        // duration of the call.
        let n = unsafe { libc::poll(p.as_mut_ptr(), chunk.len() as libc::nfds_t, 0) };
        for (o, slot) in out.iter_mut().zip(&p) {
            *o = n > 0 && slot.revents != 0;
        }
    }
}
