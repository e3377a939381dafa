//! A request's body as the handler reads it ([`BodyReader`]): decoded
//! from `Content-Length` or chunked framing, ending exactly at the body's
//! end, sending `100 Continue` before the first read when the request asked
//! for it, and turning every framing fault into an [`HttpError`] carried in
//! the `io::Error` (see [`super::body_error`]).

use std::io::{self, Read, Write};

use super::conn::{DIRECT_READ, Io, MAX_CHUNK_LINE};
use super::{Body, HttpError, Limits};

/// How a body is framed, and how far it has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// `remaining` bytes of a `Content-Length` body are still to come.
    Length { remaining: u64 },
    /// A chunked body in this state, `total` data bytes so far.
    Chunked { state: Chunk, total: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Chunk {
    /// Before a chunk-size line.
    Size,
    /// This many bytes of a chunk's data to come.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines, this many bytes of them so far.
    Trailers(usize),
    /// Past the final CRLF.
    Done,
}

impl Framing {
    pub(super) fn is_done(&self) -> bool {
        matches!(
            self,
            Framing::Length { remaining: 0 }
                | Framing::Chunked {
                    state: Chunk::Done,
                    ..
                }
        )
    }
}

/// The body of the request being served, as the handler reads it.
pub(super) struct BodyReader<'a, S> {
    pub(super) io: &'a mut Io<S>,
    pub(super) framing: Framing,
    pub(super) declared: Option<u64>,
    pub(super) expects: bool,
    pub(super) continue_sent: bool,
    /// The framing error a read hit; later reads repeat it.
    pub(super) failed: Option<HttpError>,
    pub(super) limits: &'a Limits,
}

pub(super) fn invalid(e: HttpError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A copy of an error to hand out again (the `io::Error` inside
/// `Truncated` is not `Clone`).
pub(super) fn again(e: &HttpError) -> HttpError {
    match e {
        HttpError::Malformed { why } => HttpError::Malformed { why: why.clone() },
        HttpError::HeadTooLarge { why } => HttpError::HeadTooLarge { why: why.clone() },
        HttpError::Version => HttpError::Version,
        HttpError::Framing { why } => HttpError::Framing { why: why.clone() },
        HttpError::BodyTooLarge { limit } => HttpError::BodyTooLarge { limit: *limit },
        HttpError::Chunk { why } => HttpError::Chunk { why: why.clone() },
        HttpError::Truncated { source } => HttpError::Truncated {
            source: io::Error::new(source.kind(), source.to_string()),
        },
    }
}

pub(super) fn truncated(source: io::Error) -> HttpError {
    HttpError::Truncated { source }
}

pub(super) fn eof() -> HttpError {
    truncated(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the connection closed in the body",
    ))
}

pub(super) fn chunk_err(why: &str) -> HttpError {
    HttpError::Chunk { why: why.into() }
}

/// Why a body read stopped: a framing error (kept, and closing the
/// connection) or a socket error from writing `100 Continue`.
pub(super) enum Stop {
    Http(HttpError),
    Io(io::Error),
}

impl From<HttpError> for Stop {
    fn from(e: HttpError) -> Stop {
        Stop::Http(e)
    }
}

impl<S: Read + Write> BodyReader<'_, S> {
    /// Reads more into the connection buffer; a stream that ends or fails
    /// mid-body is `Truncated`.
    fn fill(&mut self) -> Result<(), HttpError> {
        match self.io.fill() {
            Ok(0) => Err(eof()),
            Ok(_) => Ok(()),
            Err(e) => Err(truncated(e)),
        }
    }

    /// Up to `want` (> 0) body bytes into `buf` from the buffer, or
    /// straight from the stream when nothing is buffered and `buf` is large.
    fn data(&mut self, buf: &mut [u8], want: u64) -> Result<usize, HttpError> {
        let want = usize::try_from(want).unwrap_or(usize::MAX).min(buf.len());
        if self.io.buffered().is_empty() {
            if want >= DIRECT_READ {
                return match self.io.read_direct(&mut buf[..want]) {
                    Ok(0) => Err(eof()),
                    Ok(n) => Ok(n.min(want)),
                    Err(e) => Err(truncated(e)),
                };
            }
            self.fill()?;
        }
        let b = self.io.buffered();
        let n = b.len().min(want);
        buf[..n].copy_from_slice(&b[..n]);
        self.io.consume(n);
        Ok(n)
    }

    fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, Stop> {
        if let Some(e) = &self.failed {
            return Err(Stop::Http(again(e)));
        }
        if buf.is_empty() || self.framing.is_done() {
            return Ok(0);
        }
        if self.expects && !self.continue_sent {
            self.continue_sent = true;
            let s = &mut self.io.stream;
            s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .and_then(|()| s.flush())
                .map_err(Stop::Io)?;
        }
        loop {
            match self.framing {
                Framing::Length { remaining } => {
                    let n = self.data(buf, remaining)?;
                    self.framing = Framing::Length {
                        remaining: remaining - n as u64,
                    };
                    return Ok(n);
                }
                Framing::Chunked { state, total } => {
                    let (state, total, n) = self.chunked(buf, state, total)?;
                    self.framing = Framing::Chunked { state, total };
                    if n > 0 || state == Chunk::Done {
                        return Ok(n);
                    }
                }
            }
        }
    }

    /// One step of the chunked decoder from `state` with `total` data
    /// bytes so far: the next state, the new total and how many data bytes
    /// it put in `buf`.
    fn chunked(
        &mut self,
        buf: &mut [u8],
        state: Chunk,
        total: u64,
    ) -> Result<(Chunk, u64, usize), HttpError> {
        match state {
            Chunk::Size => loop {
                match httparse::parse_chunk_size(self.io.buffered()) {
                    Ok(httparse::Status::Complete((used, _))) if used > MAX_CHUNK_LINE => {
                        return Err(chunk_err("the chunk-size line is too long"));
                    }
                    Ok(httparse::Status::Complete((used, size))) => {
                        self.io.consume(used);
                        if size == 0 {
                            return Ok((Chunk::Trailers(0), total, 0));
                        }
                        let total = total
                            .checked_add(size)
                            .filter(|t| *t <= self.limits.max_body_bytes)
                            .ok_or(HttpError::BodyTooLarge {
                                limit: self.limits.max_body_bytes,
                            })?;
                        return Ok((Chunk::Data(size), total, 0));
                    }
                    Ok(httparse::Status::Partial) => {
                        if self.io.buffered().len() >= MAX_CHUNK_LINE {
                            return Err(chunk_err("the chunk-size line is too long"));
                        }
                        self.fill()?;
                    }
                    Err(httparse::InvalidChunkSize) => {
                        return Err(chunk_err("bad chunk size"));
                    }
                }
            },
            Chunk::Data(left) => {
                let n = self.data(buf, left)?;
                let left = left - n as u64;
                let next = if left == 0 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(left)
                };
                Ok((next, total, n))
            }
            Chunk::DataEnd => {
                while self.io.buffered().len() < 2 {
                    self.fill()?;
                }
                if &self.io.buffered()[..2] != b"\r\n" {
                    return Err(chunk_err("no CRLF after the chunk's data"));
                }
                self.io.consume(2);
                Ok((Chunk::Size, total, 0))
            }
            Chunk::Trailers(mut seen) => {
                // How far the current line has been searched for its CRLF.
                let mut searched = 0usize;
                loop {
                    let b = self.io.buffered();
                    let from = searched.saturating_sub(1);
                    let crlf = b[from..].windows(2).position(|w| w == b"\r\n");
                    searched = b.len();
                    match crlf.map(|at| at + from) {
                        Some(0) => {
                            self.io.consume(2);
                            return Ok((Chunk::Done, total, 0));
                        }
                        Some(at) => {
                            seen += at + 2;
                            if seen > self.limits.max_head_bytes {
                                return Err(HttpError::HeadTooLarge {
                                    why: "the chunked body's trailers".into(),
                                });
                            }
                            self.io.consume(at + 2);
                            searched = 0;
                        }
                        None => {
                            if seen + b.len() >= self.limits.max_head_bytes {
                                return Err(HttpError::HeadTooLarge {
                                    why: "the chunked body's trailers".into(),
                                });
                            }
                            self.fill()?;
                        }
                    }
                }
            }
            Chunk::Done => Ok((Chunk::Done, total, 0)),
        }
    }

    /// After the handler: whether the connection can go on. A body the
    /// handler never asked for after `Expect: 100-continue` was never sent
    /// (close unless it is empty); otherwise up to
    /// [`Limits::max_drain_bytes`] of what is left is read and dropped.
    pub(super) fn finish(&mut self) -> bool {
        if self.framing.is_done() {
            return true;
        }
        if self.expects && !self.continue_sent {
            return false;
        }
        if let Framing::Length { remaining } = self.framing {
            if remaining > self.limits.max_drain_bytes {
                return false;
            }
        }
        let mut budget = self.limits.max_drain_bytes;
        let mut scratch = [0u8; 4096];
        while !self.framing.is_done() {
            let want = usize::try_from(budget.min(scratch.len() as u64)).unwrap_or(0);
            if want == 0 {
                return false;
            }
            match self.read_body(&mut scratch[..want]) {
                Ok(n) => budget -= n as u64,
                Err(_) => return false,
            }
        }
        true
    }
}

impl<S: Read + Write> Read for BodyReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.read_body(buf) {
            Ok(n) => Ok(n),
            Err(Stop::Io(e)) => Err(e),
            Err(Stop::Http(e)) => {
                let out = again(&e);
                self.failed = Some(e);
                Err(invalid(out))
            }
        }
    }
}

impl<S: Read + Write> Body for BodyReader<'_, S> {
    fn declared_len(&self) -> Option<u64> {
        self.declared
    }

    fn expects_continue(&self) -> bool {
        self.expects
    }
}
