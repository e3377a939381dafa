//! The few system calls std does not offer: a send and a receive that never
//! block (`MSG_DONTWAIT`), waiting for a socket to become readable, and what
//! the same-host path needs (a Unix socket's peer, pidfds, reading another
//! process's memory, random tokens).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use ernic_core::PeerRun;

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

/// Sets a listening socket's backlog (`listen(2)` again; the kernel caps
/// it at `net.core.somaxconn`). Best effort: the old backlog stays on
/// failure.
pub fn listen_backlog(fd: &impl AsRawFd, n: i32) {
    // SAFETY: listen takes a descriptor and a number and touches no memory
    // of ours; on a socket that listens already it only resizes the queue.
    unsafe { libc::listen(fd.as_raw_fd(), n) };
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

/// The process at the other end of a Unix socket, as the kernel saw it
/// connect (`SO_PEERCRED`), in this process's PID namespace; `None` when it
/// is not visible there.
pub fn peer_pid(fd: &impl AsRawFd) -> io::Result<Option<libc::pid_t>> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and `len` holds the size
    // of `cred`, as SO_PEERCRED requires; `fd` is the caller's socket.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((cred.pid > 0).then_some(cred.pid))
}

/// A file descriptor that stands for process `pid` (`pidfd_open(2)`): it
/// becomes readable when the process exits.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; it touches no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Whether the process a pidfd stands for is still running.
pub fn alive(pidfd: &impl AsRawFd) -> bool {
    !wait_readable(pidfd, Duration::ZERO)
}

/// Reads from process `pid`'s memory (`process_vm_readv(2)`): for each run,
/// `len` bytes at `remote` in that process into `local`. At most 64 runs
/// (the rest are left alone). Returns the bytes read, which fall short when
/// a remote range is not mapped.
///
/// # Safety
///
/// Every run's `local` must be valid for writes of its `len` for the
/// duration of the call.
pub unsafe fn read_process(pid: libc::pid_t, runs: &[PeerRun]) -> io::Result<usize> {
    const MAX: usize = 64;
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    let (mut local, mut remote) = ([empty; MAX], [empty; MAX]);
    let n = runs.len().min(MAX);
    for ((l, r), run) in local.iter_mut().zip(remote.iter_mut()).zip(runs) {
        *l = libc::iovec {
            iov_base: run.local.as_ptr().cast(),
            iov_len: run.len,
        };
        *r = libc::iovec {
            iov_base: run.remote as *mut libc::c_void,
            iov_len: run.len,
        };
    }
    // SAFETY: `local` holds `n` iovecs the caller promised writable; the
    // remote iovecs name the other process's memory, which the kernel checks
    // (a bad range ends the read short or fails with EFAULT).
    let r = unsafe {
        libc::process_vm_readv(
            pid,
            local.as_ptr(),
            n as libc::c_ulong,
            remote.as_ptr(),
            n as libc::c_ulong,
            0,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// 16 random bytes from the kernel (`getrandom(2)`).
pub fn random16() -> io::Result<[u8; 16]> {
    let mut b = [0u8; 16];
    // SAFETY: `b` is valid for writes of its 16 bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n != 16 {
        return Err(io::Error::other("getrandom gave fewer than 16 bytes"));
    }
    Ok(b)
}

/// Most file descriptors one message carries (`send_fds`, `recv_fds`).
pub const MAX_FDS: usize = 4;

/// Sends `data` with the descriptors `fds` (`SCM_RIGHTS`, at most
/// [`MAX_FDS`]) on a Unix stream socket, blocking as the socket does.
pub fn send_fds(
    sock: &impl AsRawFd,
    data: &[u8],
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> io::Result<usize> {
    if fds.len() > MAX_FDS || data.is_empty() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // u64s keep the control buffer aligned for its cmsghdr.
    let mut space = [0u64; 8];
    // SAFETY: CMSG_SPACE is arithmetic on a length.
    let cmsg_len = unsafe { libc::CMSG_SPACE((fds.len() * size_of::<RawFd>()) as u32) } as usize;
    debug_assert!(cmsg_len <= size_of_val(&space));
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: a zeroed msghdr is a valid "no name, no control" header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = space.as_mut_ptr().cast();
        msg.msg_controllen = cmsg_len as _;
        // SAFETY: the control buffer is `cmsg_len` bytes, aligned, and
        // holds one header with room for `fds.len()` descriptors (checked
        // above), which CMSG_FIRSTHDR and CMSG_DATA point into.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN((fds.len() * size_of::<RawFd>()) as u32) as _;
            let p = libc::CMSG_DATA(c).cast::<RawFd>();
            for (i, f) in fds.iter().enumerate() {
                p.add(i).write_unaligned(std::os::fd::AsRawFd::as_raw_fd(f));
            }
        }
    }
    // SAFETY: `msg` points at one iovec over `data` and the control buffer,
    // both live for the call; MSG_NOSIGNAL keeps a closed peer from
    // raising SIGPIPE.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Receives into `buf` with any descriptors that come along (at most
/// [`MAX_FDS`]; a message with more, or cut short, has all of them
/// closed and is an error), blocking as the socket does. Answers the bytes
/// read; the descriptors go to `fds`, close-on-exec.
pub fn recv_fds(
    sock: &impl AsRawFd,
    buf: &mut [u8],
    fds: &mut Vec<std::os::fd::OwnedFd>,
) -> io::Result<usize> {
    use std::os::fd::FromRawFd;
    let mut space = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is a valid "no name, no control" header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = size_of_val(&space) as _;
    // SAFETY: `msg` points at one iovec over `buf` and the control buffer,
    // both writable and live for the call.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut got = Vec::new();
    // SAFETY: the kernel filled the control buffer up to msg_controllen;
    // CMSG_FIRSTHDR/NXTHDR walk only within it, and each SCM_RIGHTS
    // header's data holds (cmsg_len - CMSG_LEN(0)) / 4 descriptors the
    // kernel installed for us, which we now own.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..bytes / size_of::<RawFd>() {
                    got.push(std::os::fd::OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 || got.len() > MAX_FDS {
        // Dropping `got` closes what did come.
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a message carried more descriptors than allowed",
        ));
    }
    fds.extend(got);
    Ok(n as usize)
}
