//! A ring with its doorbell, as the two sides of a connection hold it
//! ([`Direction`]), and the doorbell itself ([`Bell`]).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{Ring, RingError};

/// A doorbell: one end of a Unix datagram socket pair, the peer holding
/// the other. Ringing sends a byte to the peer (`MSG_DONTWAIT` on each
/// call, so however the peer sets the shared file's flags, ringing never
/// blocks: a full socket means the peer has a ring waiting already); the
/// fd is readable while the peer's rings wait.
pub struct Bell {
    fd: OwnedFd,
}

impl Bell {
    /// A pair of bells: this side's, and the peer's to hand over.
    pub fn pair() -> io::Result<(Bell, OwnedFd)> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two fds the call returns, which
        // are ours.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
                fds.as_mut_ptr(),
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both fds are fresh and ours.
        let (mine, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok((Bell { fd: mine }, theirs))
    }

    /// The peer's end of a pair (received over the Unix socket); anything
    /// but a Unix datagram socket is refused.
    pub fn from_fd(fd: OwnedFd) -> io::Result<Bell> {
        let int = |opt| {
            let mut v: libc::c_int = 0;
            let mut len = size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: `v` and `len` are writable and sized for an int.
            let r = unsafe {
                libc::getsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&raw mut v).cast(),
                    &mut len,
                )
            };
            (r == 0).then_some(v)
        };
        if int(libc::SO_DOMAIN) != Some(libc::AF_UNIX)
            || int(libc::SO_TYPE) != Some(libc::SOCK_DGRAM)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the peer's doorbell is not a Unix datagram socket",
            ));
        }
        Ok(Bell { fd })
    }

    /// The fd, to wait on.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Rings the peer's end.
    pub fn ring(&self) {
        // SAFETY: a one-byte buffer to our own socket; MSG_DONTWAIT makes
        // this call non-blocking whatever the file's flags.
        let _ = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                [1u8].as_ptr().cast(),
                1,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
    }

    /// Takes the peer's rings after a wake (a bounded number, so a peer
    /// that rings without end does not hold this side here).
    pub fn drain(&self) {
        let mut b = [0u8; 16];
        for _ in 0..64 {
            // SAFETY: a writable buffer of its length from our own socket,
            // non-blocking for this call.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    b.as_mut_ptr().cast(),
                    b.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n <= 0 {
                break;
            }
        }
    }
}

/// The tag of the message that hands a direction over.
pub(super) const HAND_OVER: u8 = b'R';
/// The tag of the message that says there is none.
const DECLINE: u8 = b'N';

/// One direction of a shared-memory channel: the ring and this side's
/// end of its doorbell (the writer rings it for a sleeping reader, the
/// reader for a sleeping writer). Made by its writer, and handed to the
/// reader over the Unix socket.
pub struct Direction {
    /// The records.
    pub ring: Ring,
    bell: Bell,
    /// The reader's end of the bell, until it is handed over.
    theirs: Option<OwnedFd>,
}

impl Direction {
    /// A new direction with `cap` bytes of ring, for this side to write.
    pub fn create(cap: usize) -> io::Result<Direction> {
        let (bell, theirs) = Bell::pair()?;
        Ok(Direction {
            ring: Ring::create(cap)?,
            bell,
            theirs: Some(theirs),
        })
    }

    /// Hands the direction to the peer (the ring's memfd and the bell's
    /// other end, in one message on `sock`).
    pub fn hand_over(&self, sock: &impl AsRawFd) -> io::Result<()> {
        let theirs = self
            .theirs
            .as_ref()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let fds = [self.ring.fd(), theirs.as_fd()];
        crate::sys::send_fds(sock, &[HAND_OVER], &fds).map(|_| ())
    }

    /// Tells the peer, where a hand-over would go, that this side has no
    /// ring for it.
    pub fn decline(sock: &impl AsRawFd) -> io::Result<()> {
        crate::sys::send_fds(sock, &[DECLINE], &[]).map(|_| ())
    }

    /// Takes the direction the peer hands over on `sock`, for this side
    /// to read: exactly a ring and a bell, each checked; `None` when the
    /// peer declined.
    pub fn take(sock: &impl AsRawFd) -> io::Result<Option<Direction>> {
        let mut tag = [0u8; 1];
        let mut fds = Vec::new();
        let n = crate::sys::recv_fds(sock, &mut tag, &mut fds)?;
        if n == 1 && tag[0] == DECLINE && fds.is_empty() {
            return Ok(None);
        }
        if n != 1 || tag[0] != HAND_OVER || fds.len() != 2 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the peer's hand-over is not a ring and a bell",
            ));
        }
        let mut fds = fds.into_iter();
        let (ring, bell) = (fds.next().expect("two"), fds.next().expect("two"));
        Ok(Some(Direction {
            ring: Ring::open(ring)?,
            bell: Bell::from_fd(bell)?,
            theirs: None,
        }))
    }

    /// Writes one record (the writer's side), waking a sleeping reader;
    /// answers whether it fitted.
    pub fn send(&self, parts: &[&[u8]]) -> Result<bool, RingError> {
        if !self.ring.push(parts)? {
            return Ok(false);
        }
        self.wake(&self.bell, self.ring.reader_waiting());
        Ok(true)
    }

    /// Writes as much of `bytes` as fits now, as one record (none smaller
    /// than `min`, unless that is all there is), waking a sleeping reader;
    /// answers how many bytes went.
    pub fn send_some(&self, bytes: &[u8], min: usize) -> Result<usize, RingError> {
        let n = self.ring.push_some(bytes, min)?;
        if n > 0 {
            self.wake(&self.bell, self.ring.reader_waiting());
        }
        Ok(n)
    }

    /// Takes the next record into the front of `dst` (the reader's side),
    /// waking a writer that sleeps for room; answers its length.
    pub fn recv_to(&self, dst: &mut [u8]) -> Result<Option<usize>, RingError> {
        let n = self.ring.pop_to(dst)?;
        if n.is_some() {
            self.wake(&self.bell, self.ring.writer_waiting());
        }
        Ok(n)
    }

    /// Rings `bell` if the other side said it sleeps (`flag`): with the
    /// flag read after the positions are stored (SeqCst on both sides),
    /// one of the two sees the other.
    fn wake(&self, bell: &Bell, flag: &AtomicU32) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if flag.load(Ordering::Relaxed) != 0 {
            bell.ring();
        }
    }

    /// Takes the next record (the reader's side), waking a writer that
    /// sleeps for room; answers whether one was there.
    pub fn recv(&self, out: &mut Vec<u8>, max: usize) -> Result<bool, RingError> {
        if !self.ring.pop(out, max)? {
            return Ok(false);
        }
        self.wake(&self.bell, self.ring.writer_waiting());
        Ok(true)
    }

    /// The reader sleeps until a record is there, `also` is readable, or
    /// `timeout` passes.
    pub fn sleep_for_data(&self, also: Option<BorrowedFd<'_>>, timeout: std::time::Duration) {
        self.sleep(
            self.ring.reader_waiting(),
            &self.bell,
            also,
            timeout,
            &|| self.ring.readable(),
        );
    }

    /// The writer sleeps until `need` bytes are free, `also` is readable,
    /// or `timeout` passes.
    pub fn sleep_for_room(
        &self,
        need: usize,
        also: Option<BorrowedFd<'_>>,
        timeout: std::time::Duration,
    ) {
        self.sleep(
            self.ring.writer_waiting(),
            &self.bell,
            also,
            timeout,
            &|| self.ring.free().map_or(true, |f| f >= need),
        );
    }

    fn sleep(
        &self,
        flag: &AtomicU32,
        bell: &Bell,
        also: Option<BorrowedFd<'_>>,
        timeout: std::time::Duration,
        ready: &dyn Fn() -> bool,
    ) {
        flag.store(1, Ordering::SeqCst);
        // The store before the look again (the waker fences the other way).
        std::sync::atomic::fence(Ordering::SeqCst);
        if !ready() {
            let mut p = [
                libc::pollfd {
                    fd: bell.fd().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: also.map_or(-1, |f| f.as_raw_fd()),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: two pollfds in a live array (a negative fd is
            // ignored by poll).
            unsafe { libc::poll(p.as_mut_ptr(), 2, ms) };
        }
        flag.store(0, Ordering::SeqCst);
        bell.drain();
    }
}
