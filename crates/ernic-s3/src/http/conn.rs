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

use super::date::http_date;
use super::{Body, Handler, Header, HttpError, Limits, Request, Response, ResponseBody};

/// The smallest connection buffer (a head needs at most
/// [`Limits::max_head_bytes`], a chunk-size line at most [`MAX_CHUNK_LINE`]).
const MIN_BUF: usize = 8 * 1024;
/// The longest chunk-size line (size and extensions) accepted.
const MAX_CHUNK_LINE: usize = 4 * 1024;
/// A read at least this large goes straight from the stream into the
/// handler's buffer when nothing is buffered.
const DIRECT_READ: usize = 4 * 1024;
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
struct Io<S> {
    stream: S,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl<S: Read + Write> Io<S> {
    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Reads more into the buffer, moving what is buffered to its front
    /// when the tail is full. Ok(0) at the end of the stream.
    fn fill(&mut self) -> io::Result<usize> {
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
    fn read_direct(&mut self, buf: &mut [u8]) -> io::Result<usize> {
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
enum Head {
    /// A request, its body's framing and whether it asked for
    /// `100 Continue`.
    Request(Request, Framing, bool),
    /// The connection ended between requests (or mid-head: the client left).
    End,
    /// The head was refused.
    Refused(HttpError),
}

/// How a body is framed, and how far it has been read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// `remaining` bytes of a `Content-Length` body are still to come.
    Length { remaining: u64 },
    /// A chunked body in this state, `total` data bytes so far.
    Chunked { state: Chunk, total: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
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
    fn is_done(&self) -> bool {
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

/// Whether `b` holds the empty line that ends a head (`\n\n` or
/// `\n\r\n`).
fn has_head_end(b: &[u8]) -> bool {
    b.windows(2).any(|w| w == b"\n\n") || b.windows(3).any(|w| w == b"\n\r\n")
}

/// Parses a head at the start of `b`: None while it is incomplete, else how
/// many bytes it took and what it is.
fn parse_head(b: &[u8], limits: &Limits) -> Result<Option<(usize, Head)>, HttpError> {
    let mut slots = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(b) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpError::HeadTooLarge {
                why: format!("over {} header fields", limits.max_headers),
            });
        }
        Err(httparse::Error::Version) => return Err(HttpError::Version),
        Err(e) => return Err(HttpError::Malformed { why: e.to_string() }),
    };
    if len > limits.max_head_bytes {
        return Err(HttpError::HeadTooLarge {
            why: format!("over {} bytes", limits.max_head_bytes),
        });
    }
    let malformed = |why: &str| HttpError::Malformed { why: why.into() };
    let method = req.method.ok_or_else(|| malformed("no method"))?;
    let target = req.path.ok_or_else(|| malformed("no target"))?;
    let minor_version = req.version.ok_or_else(|| malformed("no version"))?;
    let target = origin_form(method, target).ok_or_else(|| malformed("bad request target"))?;
    let mut headers = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| malformed("a header value is not UTF-8"))?
            .trim_matches([' ', '\t']);
        headers.push(Header {
            name: h.name.to_ascii_lowercase(),
            value: value.to_owned(),
        });
    }
    let request = Request {
        method: method.to_owned(),
        target,
        minor_version,
        headers,
    };
    let framing = framing(&request, limits)?;
    let expects = request.minor_version == 1
        && request
            .headers
            .iter()
            .any(|h| h.name == "expect" && h.value.eq_ignore_ascii_case("100-continue"));
    Ok(Some((len, Head::Request(request, framing, expects))))
}

/// The origin form of a request target: `/path?query` as sent, an absolute
/// form `http://host/path?query` reduced to its path and query (`/` when it
/// has none), `*` for OPTIONS only.
fn origin_form(method: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return Some(target.to_owned());
    }
    if target == "*" {
        return (method == "OPTIONS").then(|| target.to_owned());
    }
    let scheme_end = target.find("://")?;
    let scheme = &target[..scheme_end];
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let rest = &target[scheme_end + 3..];
    let path_at = rest.find(['/', '?']).unwrap_or(rest.len());
    if path_at == 0 {
        return None; // no authority
    }
    let path = &rest[path_at..];
    Some(match path.as_bytes().first() {
        Some(b'/') => path.to_owned(),
        _ => format!("/{path}"),
    })
}

/// The body's framing (RFC 9112 §6.3): chunked, a `Content-Length`, or
/// none (empty).
///
/// Any transfer coding but a lone `chunked` is refused as a framing error
/// (400; RFC 9112 would answer an unknown coding with 501, but this server
/// knows none, and a body it cannot frame leaves the connection
/// unframeable), as is `Transfer-Encoding` with `Content-Length` (request
/// smuggling), and lengths that differ, do not parse or overflow.
fn framing(request: &Request, limits: &Limits) -> Result<Framing, HttpError> {
    let framing_err = |why: &str| HttpError::Framing { why: why.into() };
    let mut codings = 0usize;
    let mut chunked = false;
    let mut length: Option<u64> = None;
    let mut has_length = false;
    for h in &request.headers {
        match h.name.as_str() {
            "transfer-encoding" => {
                for coding in h.value.split(',').map(|c| c.trim_matches([' ', '\t'])) {
                    if coding.is_empty() {
                        continue;
                    }
                    codings += 1;
                    chunked = coding.eq_ignore_ascii_case("chunked");
                }
            }
            "content-length" => {
                has_length = true;
                for v in h.value.split(',').map(|v| v.trim_matches([' ', '\t'])) {
                    let n = parse_length(v).ok_or_else(|| framing_err("bad Content-Length"))?;
                    if length.is_some_and(|l| l != n) {
                        return Err(framing_err("Content-Length values differ"));
                    }
                    length = Some(n);
                }
            }
            _ => {}
        }
    }
    if codings > 0 {
        if has_length {
            return Err(framing_err("Content-Length with Transfer-Encoding"));
        }
        if codings != 1 || !chunked {
            return Err(framing_err("a transfer coding other than chunked"));
        }
        return Ok(Framing::Chunked {
            state: Chunk::Size,
            total: 0,
        });
    }
    let remaining = match (has_length, length) {
        (false, _) => 0,
        (true, Some(n)) => n,
        (true, None) => return Err(framing_err("empty Content-Length")),
    };
    if remaining > limits.max_body_bytes {
        return Err(HttpError::BodyTooLarge {
            limit: limits.max_body_bytes,
        });
    }
    Ok(Framing::Length { remaining })
}

/// A `Content-Length` value: decimal digits only, no overflow.
fn parse_length(v: &str) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.bytes().try_fold(0u64, |n, c| {
        if !c.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(c - b'0'))
    })
}

/// (`close`, `keep-alive`) among the request's `Connection` tokens.
fn connection_tokens(request: &Request) -> (bool, bool) {
    let mut close = false;
    let mut keep_alive = false;
    for h in request.headers.iter().filter(|h| h.name == "connection") {
        for token in h.value.split(',').map(|t| t.trim_matches([' ', '\t'])) {
            close |= token.eq_ignore_ascii_case("close");
            keep_alive |= token.eq_ignore_ascii_case("keep-alive");
        }
    }
    (close, keep_alive)
}

/// A handler's header that can go on the wire: a token name and a value
/// without CR, LF or NUL (anything else would split the response; such a
/// header is dropped).
fn header_ok(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
        && !value.bytes().any(|c| matches!(c, b'\r' | b'\n' | 0))
}

fn push_num(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// The reason phrase of a status (the ones S3 answers with; "Unknown" for
/// the rest).
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        416 => "Range Not Satisfiable",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "Unknown",
    }
}

/// The body of the request being served, as the handler reads it.
struct BodyReader<'a, S> {
    io: &'a mut Io<S>,
    framing: Framing,
    declared: Option<u64>,
    expects: bool,
    continue_sent: bool,
    /// The framing error a read hit; later reads repeat it.
    failed: Option<HttpError>,
    limits: &'a Limits,
}

fn invalid(e: HttpError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// A copy of an error to hand out again (the `io::Error` inside
/// `Truncated` is not `Clone`).
fn again(e: &HttpError) -> HttpError {
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

fn truncated(source: io::Error) -> HttpError {
    HttpError::Truncated { source }
}

fn eof() -> HttpError {
    truncated(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the connection closed in the body",
    ))
}

fn chunk_err(why: &str) -> HttpError {
    HttpError::Chunk { why: why.into() }
}

/// Why a body read stopped: a framing error (kept, and closing the
/// connection) or a socket error from writing `100 Continue`.
enum Stop {
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
    fn finish(&mut self) -> bool {
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
