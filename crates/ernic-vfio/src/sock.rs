//! Messages with file descriptors over a UNIX stream socket
//! (`SCM_RIGHTS`), as vfio-user passes DMA memory and eventfds.
//!
//! A message's descriptors travel with its first bytes, so the receiver
//! takes them with the header read and reads the rest of the message
//! without them.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The most descriptors one message may carry here (vfio-user's
/// `max_msg_fds` we announce).
pub const MAX_FDS: usize = 16;

// Room for MAX_FDS descriptors: CMSG_SPACE(16 * 4) on Linux = 16 + 64.
const CMSG_ROOM: usize = 128;

/// Reads exactly `buf.len()` bytes; the descriptors that came with them
/// are appended to `fds` (at most [`MAX_FDS`]; a message with more is an
/// error, and the extra ones are closed). `Ok(false)` means the peer closed
/// before the first byte.
pub fn recv_exact(fd: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        let n = match recv_once(fd, &mut buf[got..], fds, 0) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if got == 0 {
                return Ok(false);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the peer left after {got} of {} bytes", buf.len()),
            ));
        }
        got += n;
    }
    Ok(true)
}

/// Reads what is there, at most `buf.len()` bytes, without waiting: the
/// byte count (0 when the peer closed), or `WouldBlock` when nothing is
/// there. Descriptors go to `fds` as for [`recv_exact`].
pub fn recv_some(fd: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<usize> {
    loop {
        match recv_once(fd, buf, fds, libc::MSG_DONTWAIT) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// One recvmsg(2) into `buf` with `flags`.
fn recv_once(fd: RawFd, buf: &mut [u8], fds: &mut Vec<OwnedFd>, flags: i32) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cmsg = [0u64; CMSG_ROOM / 8];
    // SAFETY: all-zero is a valid msghdr; its pointers are set below
    // to the live iovec and control buffer.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_ROOM;
    // SAFETY: recvmsg writes at most iov_len bytes into `buf` and at
    // most msg_controllen into `cmsg`, both live for the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC | flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let too_many = take_fds(&msg, fds);
    if too_many || msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("more than {MAX_FDS} file descriptors in one message"),
        ));
    }
    Ok(n as usize)
}

/// Moves the descriptors of `msg`'s control data into `fds`; answers
/// whether there were more than [`MAX_FDS`] (those are closed).
fn take_fds(msg: &libc::msghdr, fds: &mut Vec<OwnedFd>) -> bool {
    let mut too_many = false;
    // SAFETY: the CMSG_* walk stays inside the control buffer recvmsg
    // filled (msg_controllen is what it wrote); each SCM_RIGHTS payload is
    // an array of descriptors now owned by this process.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let len = (*c).cmsg_len as usize - (data as usize - c as usize);
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let raw = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    let owned = OwnedFd::from_raw_fd(raw);
                    if fds.len() < MAX_FDS {
                        fds.push(owned);
                    } else {
                        too_many = true; // dropped: closed
                    }
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    too_many
}

/// Most parts one message is written from.
pub const MAX_PARTS: usize = 8;

/// Writes all of `parts` (at most [`MAX_PARTS`]) as one message, `fds`
/// attached to its first bytes.
pub fn send_all(fd: RawFd, parts: &[&[u8]], fds: &[&dyn AsRawFd]) -> io::Result<()> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut sent = 0;
    while sent < total {
        let first = if sent == 0 { fds } else { &[] };
        match send_once(fd, parts, sent, first, 0) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes what the socket takes now of `parts` after their first `skip`
/// bytes, without waiting: the bytes written, or `WouldBlock` when it
/// takes none. `fds` go with the first byte written.
pub fn send_some(
    fd: RawFd,
    parts: &[&[u8]],
    skip: usize,
    fds: &[&dyn AsRawFd],
) -> io::Result<usize> {
    loop {
        match send_once(fd, parts, skip, fds, libc::MSG_DONTWAIT) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// One sendmsg(2) of `parts` after their first `skip` bytes, with `fds`.
fn send_once(
    fd: RawFd,
    parts: &[&[u8]],
    skip: usize,
    fds: &[&dyn AsRawFd],
    flags: i32,
) -> io::Result<usize> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} descriptors: at most {MAX_FDS}", fds.len()),
        ));
    }
    if parts.len() > MAX_PARTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} parts: at most {MAX_PARTS}", parts.len()),
        ));
    }
    let empty = libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    };
    // The unsent tail of the parts.
    let mut iovs = [empty; MAX_PARTS];
    let mut n = 0;
    let mut skip = skip;
    for p in parts {
        if skip >= p.len() {
            skip -= p.len();
            continue;
        }
        iovs[n] = libc::iovec {
            iov_base: p[skip..].as_ptr().cast_mut().cast(),
            iov_len: p.len() - skip,
        };
        n += 1;
        skip = 0;
    }
    let mut cmsg = [0u64; CMSG_ROOM / 8];
    // SAFETY: all-zero is a valid msghdr; its pointers are set below
    // to live buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iovs.as_mut_ptr();
    msg.msg_iovlen = n;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(&0 as &RawFd) * fds.len();
        // SAFETY: CMSG_SPACE/LEN are pure arithmetic; the header and
        // its descriptor array fit in `cmsg` (MAX_FDS checked above).
        unsafe {
            msg.msg_control = cmsg.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(bytes as u32) as usize;
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes as u32) as usize;
            let data = libc::CMSG_DATA(c).cast::<RawFd>();
            for (i, f) in fds.iter().enumerate() {
                std::ptr::write_unaligned(data.add(i), f.as_raw_fd());
            }
        }
    }
    // SAFETY: sendmsg reads the iovecs (pointing into `parts`) and the
    // control buffer, all live for the call.
    let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}
