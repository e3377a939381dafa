//! Reading a connection: a resumable state machine ([`ReadState`]) that
//! takes frames off the socket as bytes arrive, without blocking, so either
//! the receive thread or a thread polling anyway can take the next frames.
//!
//! Small frames come through a 64 KiB staging buffer (one receive can bring
//! several); a large body goes straight into its own buffer. A header is
//! checked ([`Header::parse`]) before its body is given a buffer, so a peer
//! names no size past a frame's bound.

use std::sync::MutexGuard;
use std::time::Duration;

use super::Conn;
use crate::frame::{self, FrameError, Header};
use crate::sys;

/// Bytes a reader takes off the socket at once into its staging buffer: one
/// receive can bring several small frames.
const STAGE: usize = 64 << 10;

/// Where the reader is in the byte stream.
pub(crate) struct ReadState {
    /// Bytes received but not yet taken: `stage[lo..hi]`.
    stage: Box<[u8]>,
    lo: usize,
    hi: usize,
    hdr: [u8; frame::HEADER_LEN],
    hdr_got: usize,
    body: Option<(Header, Vec<u8>)>,
    body_got: usize,
    /// A complete frame that could not be handed on yet (no room); it goes
    /// before anything read after it.
    pub ready: Option<(Header, Vec<u8>)>,
    /// A frame begun in the peer's shared-memory ring: its header, its
    /// buffer, and the bytes of it come so far.
    pub ring_part: Option<(Header, Vec<u8>, usize)>,
}

impl Default for ReadState {
    fn default() -> ReadState {
        ReadState {
            stage: vec![0u8; STAGE].into_boxed_slice(),
            lo: 0,
            hi: 0,
            hdr: [0; frame::HEADER_LEN],
            hdr_got: 0,
            body: None,
            body_got: 0,
            ready: None,
            ring_part: None,
        }
    }
}

impl ReadState {
    /// Whether it holds bytes or a frame the socket will not signal again.
    pub fn has_pending(&self) -> bool {
        self.ready.is_some() || self.lo < self.hi
    }

    /// Moves up to `out.len()` staged bytes into `out`; returns how many.
    fn take(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.hi - self.lo);
        out[..n].copy_from_slice(&self.stage[self.lo..self.lo + n]);
        self.lo += n;
        n
    }
}

/// What one read step found.
pub(crate) enum ReadStep {
    /// A whole frame: its header, and a buffer holding header and body.
    Frame(Header, Vec<u8>),
    /// Nothing more for now.
    Pending,
    /// The peer closed the stream.
    Eof,
    /// A frame header that could not be accepted.
    Bad(FrameError),
}

impl Conn {
    /// The reader, for the receive thread.
    pub fn reader(&self) -> MutexGuard<'_, ReadState> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reader, if no one else is reading.
    pub fn try_reader(&self) -> Option<MutexGuard<'_, ReadState>> {
        self.reader.try_lock().ok()
    }

    /// The socket's descriptor.
    pub fn fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.stream)
    }

    /// Waits up to `timeout` for bytes to read.
    pub fn wait_readable(&self, timeout: Duration) -> bool {
        sys::wait_readable(&self.stream, timeout)
    }

    /// Refills the staging buffer from the socket: `None` when bytes came.
    fn fill(&self, rs: &mut ReadState) -> Option<ReadStep> {
        if rs.lo == rs.hi {
            rs.lo = 0;
            rs.hi = 0;
        }
        match sys::recv_now(&self.stream, &mut rs.stage[rs.hi..]) {
            Ok(None) => Some(ReadStep::Pending),
            Ok(Some(0)) | Err(_) => Some(ReadStep::Eof),
            Ok(Some(n)) => {
                rs.hi += n;
                None
            }
        }
    }

    /// Reads what has arrived toward the next frame, without blocking.
    pub fn read_step(&self, rs: &mut ReadState, alloc: &dyn Fn(usize) -> Vec<u8>) -> ReadStep {
        loop {
            if let Some((_, buf)) = rs.body.as_mut() {
                let need = buf.len() - rs.body_got;
                if need == 0 {
                    let (h, buf) = rs.body.take().expect("some");
                    rs.hdr_got = 0;
                    return ReadStep::Frame(h, buf);
                }
                if rs.lo < rs.hi {
                    let got = rs.body_got;
                    let (_, buf) = rs.body.as_mut().expect("some");
                    let n = {
                        let avail = rs.hi - rs.lo;
                        let n = avail.min(need);
                        buf[got..got + n].copy_from_slice(&rs.stage[rs.lo..rs.lo + n]);
                        n
                    };
                    rs.lo += n;
                    rs.body_got += n;
                    continue;
                }
                if need >= STAGE / 2 {
                    // A large body goes straight into its buffer.
                    match sys::recv_now(&self.stream, &mut buf[rs.body_got..]) {
                        Ok(None) => return ReadStep::Pending,
                        Ok(Some(0)) | Err(_) => return ReadStep::Eof,
                        Ok(Some(n)) => rs.body_got += n,
                    }
                    continue;
                }
                if let Some(step) = self.fill(rs) {
                    return step;
                }
                continue;
            }
            if rs.lo == rs.hi {
                if let Some(step) = self.fill(rs) {
                    return step;
                }
            }
            let mut hdr = rs.hdr;
            let n = rs.take(&mut hdr[rs.hdr_got..]);
            rs.hdr = hdr;
            rs.hdr_got += n;
            if rs.hdr_got < frame::HEADER_LEN {
                continue;
            }
            let h = match Header::parse(&rs.hdr) {
                Ok(h) => h,
                Err(e) => return ReadStep::Bad(e),
            };
            let mut buf = alloc(frame::HEADER_LEN + h.len as usize);
            buf[..frame::HEADER_LEN].copy_from_slice(&rs.hdr);
            rs.body = Some((h, buf));
            rs.body_got = frame::HEADER_LEN;
        }
    }
}
