//! A ring of records in shared memory: one direction of a same-host
//! connection's shared-memory channel. The writer makes it (a sealed
//! memfd, so no one can shrink it under a mapping), hands the fd to its
//! peer over the proven Unix socket, and is its only producer; the peer
//! maps it and is its only consumer.
//!
//! The layout (`HEADER` bytes, then the data, `cap` bytes, a power of two):
//!
//! | offset | what | written by |
//! |---|---|---|
//! | 0 | magic, then `cap` (u64 each) | the maker, once |
//! | 64 | `head`: bytes ever written (u64), then `writer_waiting` (u32) | the writer |
//! | 128 | `tail`: bytes ever read (u64), then `reader_waiting` (u32) | the reader |
//! | 192 | reserved | |
//!
//! A record is its length (u32, little-endian) and its bytes, wrapping
//! around the end of the data. Positions only grow; a position's byte is at
//! `pos % cap`. The writer publishes a record by storing `head` (Release)
//! after its bytes; the reader frees it by storing `tail` after copying
//! it out.
//!
//! The peer is the same user, proven, but its memory is not ours to trust:
//! every position and length read from the header is checked (the writer
//! checks `tail` too), and a ring that does not add up is an error for the
//! caller to close the connection on, never a panic or a read outside the
//! mapping.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// "ernicrng", little-endian.
const MAGIC: u64 = u64::from_le_bytes(*b"ernicrng");
/// Bytes before the data.
const HEADER: usize = 256;
const HEAD_AT: usize = 64;
const WRITER_WAITING_AT: usize = 72;
const TAIL_AT: usize = 128;
const READER_WAITING_AT: usize = 136;
/// Bytes of a record's length.
const LEN: usize = 4;
/// The smallest ring one may make or map.
pub const MIN_CAP: usize = 4096;
/// The largest ring one may make or map (a peer's fd names its size).
pub const MAX_CAP: usize = 64 << 20;

/// What is wrong with a ring.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RingError {
    /// The memfd's size is no ring's (`HEADER` plus a power of two within
    /// the limits).
    #[error("a ring of {0} bytes is not HEADER plus a power of two from MIN_CAP to MAX_CAP")]
    BadSize(u64),
    /// The memfd may still be shrunk, which would fault a mapping of it.
    #[error("the ring's memfd is not sealed against shrinking")]
    NotSealed,
    /// The header names no ernic ring of this size.
    #[error("the ring's header is not an ernic ring's")]
    BadHeader,
    /// The positions do not add up.
    #[error("the ring's positions do not add up (head {head}, tail {tail})")]
    Corrupt {
        /// The writer's position.
        head: u64,
        /// The reader's position.
        tail: u64,
    },
    /// A record longer than the ring allows (or than the reader takes).
    #[error("a record of {0} bytes is longer than allowed")]
    TooLong(u64),
}

/// One direction's ring, mapped.
pub struct Ring {
    base: *mut u8,
    len: usize,
    cap: u64,
    fd: OwnedFd,
}

// SAFETY: the mapping is plain shared memory that lives as long as the
// Ring; the header is accessed only through atomics, and the data only
// by copies into and out of it in the ranges the positions give each side
// (one producer, one consumer, which callers guarantee by owning the
// writer's and the reader's end in one place each).
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    /// Makes a ring with `cap` bytes of data (a power of two from
    /// [`MIN_CAP`] to [`MAX_CAP`]), for this side to write.
    pub fn create(cap: usize) -> io::Result<Ring> {
        if !cap.is_power_of_two() || !(MIN_CAP..=MAX_CAP).contains(&cap) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                RingError::BadSize((HEADER + cap) as u64),
            ));
        }
        // SAFETY: a NUL-terminated name and flags; the call returns an fd
        // we own, or -1.
        let raw = unsafe {
            libc::memfd_create(
                c"ernic-ring".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh fd of ours.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let len = HEADER + cap;
        // SAFETY: plain calls on our own fd.
        let sized = unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) };
        if sized != 0 {
            return Err(io::Error::last_os_error());
        }
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let ring = Ring::map(fd, len)?;
        // SAFETY: offsets 0 and 8 are inside the header; the memfd starts
        // zeroed, and no one else has the fd yet.
        unsafe {
            ring.base.cast::<u64>().write(MAGIC.to_le());
            ring.base.add(8).cast::<u64>().write((cap as u64).to_le());
        }
        Ok(ring)
    }

    /// Maps a ring the peer made (its fd, received over the Unix socket),
    /// for this side to read, after checking its size, seals and header.
    pub fn open(fd: OwnedFd) -> io::Result<Ring> {
        // The seals first: a file still shrinkable when its size is read
        // could be shrunk under the mapping after.
        // SAFETY: a plain call on our own fd.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(bad(RingError::NotSealed));
        }
        // SAFETY: a zeroed stat is valid to be written by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is writable; the fd is ours.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let size = st.st_size as u64;
        let cap = size.saturating_sub(HEADER as u64);
        if (st.st_mode & libc::S_IFMT) != libc::S_IFREG
            || !cap.is_power_of_two()
            || !(MIN_CAP as u64..=MAX_CAP as u64).contains(&cap)
        {
            return Err(bad(RingError::BadSize(size)));
        }
        let ring = Ring::map(fd, size as usize)?;
        // SAFETY: offsets 0 and 8 are inside the mapped header.
        let (magic, named) = unsafe {
            (
                u64::from_le(ring.base.cast::<u64>().read_volatile()),
                u64::from_le(ring.base.add(8).cast::<u64>().read_volatile()),
            )
        };
        if magic != MAGIC || named != cap {
            return Err(bad(RingError::BadHeader));
        }
        Ok(ring)
    }

    fn map(fd: OwnedFd, len: usize) -> io::Result<Ring> {
        // SAFETY: a fresh shared mapping of `len` bytes of our fd, which is
        // at least that long (made so, or checked by fstat) and sealed
        // against shrinking; no existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            base: p.cast(),
            len,
            cap: (len - HEADER) as u64,
            fd,
        })
    }

    /// The memfd, to hand to the peer.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Bytes of data.
    pub fn capacity(&self) -> usize {
        self.cap as usize
    }

    fn atomic64(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is an 8-aligned offset inside the header of a
        // page-aligned mapping that lives as long as `self`; the peer
        // touches it only atomically (or, if it misbehaves, with plain
        // stores of whole values, which the checks below survive).
        unsafe { &*self.base.add(at).cast::<AtomicU64>() }
    }

    fn atomic32(&self, at: usize) -> &AtomicU32 {
        // SAFETY: as `atomic64`, 4-aligned.
        unsafe { &*self.base.add(at).cast::<AtomicU32>() }
    }

    /// The writer's flag: it sleeps until the reader frees room.
    pub fn writer_waiting(&self) -> &AtomicU32 {
        self.atomic32(WRITER_WAITING_AT)
    }

    /// The reader's flag: it sleeps until the writer publishes a record.
    pub fn reader_waiting(&self) -> &AtomicU32 {
        self.atomic32(READER_WAITING_AT)
    }

    /// The positions, checked: the tail is not past the head, nor the
    /// head more than the ring ahead of it.
    fn positions(&self) -> Result<(u64, u64), RingError> {
        let head = self.atomic64(HEAD_AT).load(Ordering::Acquire);
        let tail = self.atomic64(TAIL_AT).load(Ordering::Acquire);
        if tail > head || head - tail > self.cap {
            return Err(RingError::Corrupt { head, tail });
        }
        Ok((head, tail))
    }

    /// Bytes a record may hold in this ring.
    pub fn max_record(&self) -> usize {
        self.capacity() - LEN
    }

    /// Writes one record of the bytes of `parts` (in order), if it fits
    /// now; answers whether it did. The writer's side only.
    pub fn push(&self, parts: &[&[u8]]) -> Result<bool, RingError> {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        if n > self.max_record() {
            return Err(RingError::TooLong(n as u64));
        }
        let (head, tail) = self.positions()?;
        if self.cap - (head - tail) < (LEN + n) as u64 {
            return Ok(false);
        }
        self.copy_in(head, &(n as u32).to_le_bytes());
        // Positions come from shared memory: wrapping, never a panic.
        let mut at = head.wrapping_add(LEN as u64);
        for p in parts {
            self.copy_in(at, p);
            at = at.wrapping_add(p.len() as u64);
        }
        self.atomic64(HEAD_AT).store(at, Ordering::Release);
        Ok(true)
    }

    /// Bytes free for records now (the writer's view).
    pub fn free(&self) -> Result<usize, RingError> {
        let (head, tail) = self.positions()?;
        Ok((self.cap - (head - tail)) as usize)
    }

    /// Whether a record waits (the reader's view; a ring that does not add
    /// up counts as one, for `pop` to report).
    pub fn readable(&self) -> bool {
        self.positions().map_or(true, |(head, tail)| head != tail)
    }

    /// The length of the next record, if one waits (checked as `pop`
    /// checks it, against `max`).
    pub fn next_len(&self, max: usize) -> Result<Option<usize>, RingError> {
        let (head, tail) = self.positions()?;
        if head == tail {
            return Ok(None);
        }
        let ready = head - tail;
        if ready < LEN as u64 {
            return Err(RingError::Corrupt { head, tail });
        }
        let mut len = [0u8; LEN];
        self.copy_out(tail, &mut len);
        let n = u64::from(u32::from_le_bytes(len));
        if n > max as u64 || n > self.max_record() as u64 {
            return Err(RingError::TooLong(n));
        }
        if n + LEN as u64 > ready {
            return Err(RingError::Corrupt { head, tail });
        }
        Ok(Some(n as usize))
    }

    /// Copies the first `dst.len()` bytes of the next record into `dst`
    /// without taking it; answers whether a record of at least that many
    /// bytes waits (an error when a shorter one does).
    pub fn peek(&self, dst: &mut [u8]) -> Result<bool, RingError> {
        let Some(n) = self.next_len(self.max_record())? else {
            return Ok(false);
        };
        if n < dst.len() {
            return Err(RingError::Corrupt {
                head: self.atomic64(HEAD_AT).load(Ordering::Acquire),
                tail: self.atomic64(TAIL_AT).load(Ordering::Acquire),
            });
        }
        let tail = self.atomic64(TAIL_AT).load(Ordering::Acquire);
        self.copy_out(tail.wrapping_add(LEN as u64), dst);
        Ok(true)
    }

    /// Takes the next record into the front of `dst`, if one waits;
    /// answers its length. A record longer than `dst` is an error.
    pub fn pop_to(&self, dst: &mut [u8]) -> Result<Option<usize>, RingError> {
        let Some(n) = self.next_len(dst.len())? else {
            return Ok(None);
        };
        let tail = self.atomic64(TAIL_AT).load(Ordering::Acquire);
        self.copy_out(tail.wrapping_add(LEN as u64), &mut dst[..n]);
        self.atomic64(TAIL_AT)
            .store(tail.wrapping_add((LEN + n) as u64), Ordering::Release);
        Ok(Some(n))
    }

    /// Writes one record of as much of `bytes` as fits now (nothing when
    /// less than `min` of it would); answers how many bytes went.
    pub fn push_some(&self, bytes: &[u8], min: usize) -> Result<usize, RingError> {
        let free = self.free()?;
        let n = bytes
            .len()
            .min(free.saturating_sub(LEN))
            .min(self.max_record());
        if n == 0 || n < min.min(bytes.len()) {
            return Ok(0);
        }
        let pushed = self.push(&[&bytes[..n]])?;
        Ok(if pushed { n } else { 0 })
    }

    /// Takes the next record into `out` (cleared first), if one waits;
    /// answers whether one did. A record longer than `max` is an error, so
    /// `out` never grows past what the caller allows. The reader's side
    /// only.
    pub fn pop(&self, out: &mut Vec<u8>, max: usize) -> Result<bool, RingError> {
        let Some(n) = self.next_len(max)? else {
            return Ok(false);
        };
        let tail = self.atomic64(TAIL_AT).load(Ordering::Acquire);
        let n = n as u64;
        out.clear();
        out.resize(n as usize, 0);
        self.copy_out(tail.wrapping_add(LEN as u64), out);
        self.atomic64(TAIL_AT)
            .store(tail.wrapping_add(LEN as u64 + n), Ordering::Release);
        Ok(true)
    }

    /// Writes `bytes` at `offset` of the mapping (header included), as a
    /// misbehaving peer may; for the fuzz target. Out of range is ignored.
    #[doc(hidden)]
    pub fn scribble(&self, offset: usize, bytes: &[u8]) {
        if offset
            .checked_add(bytes.len())
            .is_some_and(|end| end <= self.len)
        {
            // SAFETY: the range was just checked to lie inside the mapping.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(offset), bytes.len())
            };
        }
    }

    /// Copies `src` into the data at position `pos`, wrapping.
    fn copy_in(&self, pos: u64, src: &[u8]) {
        let at = (pos % self.cap) as usize;
        let first = src.len().min(self.cap as usize - at);
        // SAFETY: `at + first <= cap` and `src.len() - first <= cap` (a
        // record is at most `cap`), so both copies stay inside the data,
        // which the positions reserve for the writer alone.
        unsafe {
            let data = self.base.add(HEADER);
            std::ptr::copy_nonoverlapping(src.as_ptr(), data.add(at), first);
            std::ptr::copy_nonoverlapping(src.as_ptr().add(first), data, src.len() - first);
        }
    }

    /// Copies the data at position `pos` into `dst`, wrapping.
    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let at = (pos % self.cap) as usize;
        let first = dst.len().min(self.cap as usize - at);
        // SAFETY: as `copy_in`: both ranges inside the data, which the
        // positions hand to the reader; a misbehaving writer can change
        // the bytes under the copy, never its bounds.
        unsafe {
            let data = self.base.add(HEADER);
            std::ptr::copy_nonoverlapping(data.add(at), dst.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, dst.as_mut_ptr().add(first), dst.len() - first);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: the mapping this Ring made, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

fn bad(e: RingError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

mod direction;

pub use direction::{Bell, Direction};

#[cfg(test)]
mod tests;
