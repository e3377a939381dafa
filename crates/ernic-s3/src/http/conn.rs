//! One HTTP/1.1 connection ([`serve_connection`]): reads request heads and
//! bodies off any `Read + Write` stream, hands each request to the
//! [`Handler`], and writes its [`Response`], request after request, until
//! the client closes, asks to close, goes idle, or breaks the framing.
//!
//! What it promises:
//! - a body is read exactly to its end (by `Content-Length` or chunked
//!   framing); bytes of the next pipelined request stay buffered for it;
//! - every limit in [`Limits`] is checked before it is spent: a declared
//!   length before any body byte is read (or `100 Continue` sent), a head
//!   or a chunk's running total as it arrives;
//! - after any framing error the handler's [`Handler::error`] answer goes
//!   out with `Connection: close` and the connection ends;
//! - responses go out in request order, each head (and a small body) in
//!   one write.
//!
//! It never reads a byte past the body of the request it serves, never
//! allocates by a length the client sent, and never panics on any input.
//! Timeouts are the stream's own: a caller that wants them sets them
//! before calling (the [`Server`](super::Server) sets
//! [`Limits::idle_timeout`] as the socket's read and write timeouts); a
//! read that times out or a reset between requests ends the connection
//! quietly.

use std::io::{self, Read, Write};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::body::{BodyReader, Framing};
use super::date::http_date;
use super::head::{connection_tokens, has_head_end, header_ok, parse_head, push_num, reason};
use super::{Handler, HttpError, Limits, Request, Response, ResponseBody};

/// The smallest connection buffer (a head needs at most
/// [`Limits::max_head_bytes`], a chunk-size line at most [`MAX_CHUNK_LINE`]).
const MIN_BUF: usize = 8 * 1024;
/// The longest chunk-size line (size and extensions) accepted.
pub(super) const MAX_CHUNK_LINE: usize = 4 * 1024;
/// A read at least this large goes straight from the stream into the
/// handler's buffer when nothing is buffered.
pub(super) const DIRECT_READ: usize = 4 * 1024;
/// A `Bytes` body up to this size is appended to the head and written in
/// the same write.
const INLINE_BODY: usize = 64 * 1024;
/// The copy buffer of a `Stream` body.
const STREAM_CHUNK: usize = 1 << 20;

/// Serves requests on `stream` until the connection ends.
///
/// Returns Ok when the client closed (or reset) the connection between
/// requests, went idle past the stream's read timeout, or when the server
/// closed it (after `Connection: close`, an error answer, or a response
/// body that broke off); Err only when writing to the stream failed, or a
/// read failed in a way that is neither of those.
pub fn serve_connection<S: Read + Write>(
    stream: S,
    handler: &dyn Handler,
    limits: &Limits,
) -> io::Result<()> {
    let mut conn = Conn {
        io: Io {
            stream,
            buf: vec![0; limits.max_head_bytes.max(MIN_BUF)],
            start: 0,
            end: 0,
        },
        out: Vec::with_capacity(1024),
        copy: Vec::new(),
        date: (i64::MIN, String::new()),
        handler,
        limits,
    };
    conn.run()
}

/// The stream and its read buffer: `buf[start..end]` is read but not yet
/// consumed.
pub(super) struct Io<S> {
    pub(super) stream: S,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl<S: Read + Write> Io<S> {
    pub(super) fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more into the buffer, moving what is buffered to its front
    /// when the tail is full. Ok(0) at the end of the stream.
    pub(super) fn fill(&mut self) -> io::Result<usize> {
        if self.end == self.buf.len() {
            if self.start == 0 {
                // Callers bound what they buffer below the buffer's size.
                return Err(io::Error::other("the connection buffer is full"));
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        loop {
            match self.stream.read(&mut self.buf[self.end..]) {
                Ok(n) => {
                    self.end += n;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads straight from the stream (nothing buffered).
    pub(super) fn read_direct(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.stream.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
}

/// Whether a read error means the peer went away or went quiet (the
/// connection ends without an answer) rather than a failure of the server.
fn is_quiet_end(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::UnexpectedEof
    )
}

/// What reading a head gave.
pub(super) enum Head {
    /// A request, its body's framing and whether it asked for
    /// `100 Continue`.
    Request(Request, Framing, bool),
    /// The connection ended between requests (or mid-head: the client left).
    End,
    /// The head was refused.
    Refused(HttpError),
}

struct Conn<'a, S> {
    io: Io<S>,
    /// The response head (and small bodies), reused.
    out: Vec<u8>,
    /// A `Stream` body's copy buffer, allocated on first use and reused.
    copy: Vec<u8>,
    /// The last `Date` written: its second and text.
    date: (i64, String),
    handler: &'a dyn Handler,
    limits: &'a Limits,
}

impl<S: Read + Write> Conn<'_, S> {
    fn run(&mut self) -> io::Result<()> {
        loop {
            let (request, framing, expects) = match self.read_head()? {
                Head::End => return Ok(()),
                Head::Refused(e) => {
                    let response = self.handler.error(&e);
                    self.write_response(response, false, true, false)?;
                    return Ok(());
                }
                Head::Request(r, f, x) => (r, f, x),
            };
            let (client_close, client_keep_alive) = connection_tokens(&request);
            let persistent = if request.minor_version >= 1 {
                !client_close
            } else {
                client_keep_alive && !client_close
            };
            let is_head = request.method == "HEAD";
            let declared = match framing {
                Framing::Length { remaining } => Some(remaining),
                Framing::Chunked { .. } => None,
            };
            let mut body = BodyReader {
                io: &mut self.io,
                framing,
                declared,
                expects,
                continue_sent: false,
                failed: None,
                limits: self.limits,
            };
            let response = self.handler.handle(&request, &mut body);
            let (response, keep) = match body.failed.take() {
                // The body's framing broke while the handler read it: the
                // handler's own error answer replaces whatever it returned.
                Some(e) => (self.handler.error(&e), false),
                // Closing anyway: what is left of the body is not read.
                None if !persistent || response.close => (response, false),
                None => {
                    let keep = body.finish();
                    (response, keep)
                }
            };
            let close = !persistent || !keep || response.close;
            let keep_alive_header = !close && request.minor_version == 0;
            if !self.write_response(response, is_head, close, keep_alive_header)? || close {
                return Ok(());
            }
        }
    }

    /// Reads the next request head, skipping empty lines before it.
    ///
    /// The head is parsed when its first bytes arrive (so a bad request
    /// line is refused at once) and then only once its end (an empty line)
    /// is buffered: a head sent a byte at a time costs one scan, not one
    /// parse per byte. A head still incomplete [`Limits::idle_timeout`]
    /// after its first byte ends the connection, however steadily it
    /// trickles in (the stream's timeout only bounds each read).
    fn read_head(&mut self) -> io::Result<Head> {
        let limits = self.limits;
        let mut skipped = 0usize;
        let mut parsed = false;
        let mut searched = 0usize;
        let mut started: Option<Instant> = None;
        loop {
            if started.is_some_and(|t| t.elapsed() > limits.idle_timeout) {
                return Ok(Head::End);
            }
            loop {
                let b = self.io.buffered();
                let n = if b.starts_with(b"\r\n") {
                    2
                } else if b.starts_with(b"\n") {
                    1
                } else {
                    break;
                };
                self.io.consume(n);
                skipped += n;
                parsed = false;
                searched = 0;
            }
            if skipped > limits.max_head_bytes {
                return Ok(Head::Refused(HttpError::HeadTooLarge {
                    why: "empty lines before the request line".into(),
                }));
            }
            let b = self.io.buffered();
            if !b.is_empty() {
                let ended = has_head_end(&b[searched.saturating_sub(2)..]);
                searched = b.len();
                if !parsed || ended {
                    parsed = true;
                    match parse_head(b, limits) {
                        Ok(Some((len, head))) => {
                            self.io.consume(len);
                            return Ok(head);
                        }
                        Ok(None) => {}
                        Err(e) => return Ok(Head::Refused(e)),
                    }
                }
                if b.len() >= limits.max_head_bytes {
                    return Ok(Head::Refused(HttpError::HeadTooLarge {
                        why: format!("over {} bytes", limits.max_head_bytes),
                    }));
                }
            }
            match self.io.fill() {
                Ok(0) => return Ok(Head::End),
                Ok(_) => {
                    started.get_or_insert_with(Instant::now);
                }
                Err(e) if is_quiet_end(&e) => return Ok(Head::End),
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes one response. `is_head`: the request was HEAD (no body bytes);
    /// `close`: say `Connection: close`; `keep_alive`: say
    /// `Connection: keep-alive` (an HTTP/1.0 client that asked). Returns
    /// false when the body broke off and the connection must close.
    fn write_response(
        &mut self,
        response: Response,
        is_head: bool,
        close: bool,
        keep_alive: bool,
    ) -> io::Result<bool> {
        let Response {
            status,
            headers,
            body,
            close: _,
        } = response;
        // A status that is not three digits cannot go on a status line.
        let status = if (100..=999).contains(&status) {
            status
        } else {
            500
        };
        let bodiless = (100..200).contains(&status) || status == 204 || status == 304;
        let own_length = matches!(body, ResponseBody::Length(_)) || is_head;
        let out = &mut self.out;
        out.clear();
        out.extend_from_slice(b"HTTP/1.1 ");
        push_num(out, u64::from(status));
        out.push(b' ');
        out.extend_from_slice(reason(status).as_bytes());
        out.extend_from_slice(b"\r\n");
        let mut has_date = false;
        let mut has_length = false;
        for (name, value) in &headers {
            if !header_ok(name, value) {
                continue;
            }
            if name.eq_ignore_ascii_case("connection")
                || name.eq_ignore_ascii_case("transfer-encoding")
            {
                continue;
            }
            if name.eq_ignore_ascii_case("content-length") {
                if bodiless || !own_length || has_length {
                    continue;
                }
                has_length = true;
            }
            has_date |= name.eq_ignore_ascii_case("date");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !has_date {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
            if self.date.0 != now {
                self.date = (now, http_date(now));
            }
            out.extend_from_slice(b"date: ");
            out.extend_from_slice(self.date.1.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        let len = match &body {
            ResponseBody::Empty => 0,
            ResponseBody::Bytes(b) => b.len() as u64,
            ResponseBody::Stream { len, .. } => *len,
            ResponseBody::Length(len) => *len,
        };
        if !bodiless && !has_length {
            out.extend_from_slice(b"content-length: ");
            push_num(out, len);
            out.extend_from_slice(b"\r\n");
        }
        if close {
            out.extend_from_slice(b"connection: close\r\n");
        } else if keep_alive {
            out.extend_from_slice(b"connection: keep-alive\r\n");
        }
        out.extend_from_slice(b"\r\n");
        let send_body = !bodiless && !is_head;
        let stream = &mut self.io.stream;
        match body {
            ResponseBody::Bytes(b) if send_body => {
                if b.len() <= INLINE_BODY {
                    out.extend_from_slice(&b);
                    stream.write_all(out)?;
                } else {
                    stream.write_all(out)?;
                    stream.write_all(&b)?;
                }
            }
            ResponseBody::Stream { len, mut source } if send_body => {
                stream.write_all(out)?;
                if self.copy.is_empty() {
                    self.copy = vec![0; STREAM_CHUNK];
                }
                let mut left = len;
                while left > 0 {
                    let want = usize::try_from(left)
                        .unwrap_or(usize::MAX)
                        .min(STREAM_CHUNK);
                    let n = match source.read(&mut self.copy[..want]) {
                        Ok(0) | Err(_) => {
                            // The framing promised `len` bytes: it is broken.
                            stream.flush()?;
                            return Ok(false);
                        }
                        Ok(n) => n.min(want),
                    };
                    stream.write_all(&self.copy[..n])?;
                    left -= n as u64;
                }
            }
            _ => stream.write_all(out)?,
        }
        stream.flush()?;
        Ok(true)
    }
}
