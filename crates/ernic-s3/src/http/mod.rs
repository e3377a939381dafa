//! The store's HTTP/1.1 server: request heads parsed by `httparse`, bodies
//! framed by `Content-Length` or `Transfer-Encoding: chunked`, keep-alive and
//! pipelining on one connection, `Expect: 100-continue`, and responses
//! written with a `Content-Length` (the server never chunks a response:
//! every [`ResponseBody`] knows its length). It knows nothing of S3: a [`Handler`]
//! gets each request and its body and returns a [`Response`].
//!
//! It runs over anything that is `Read + Write` ([`serve_connection`]), so
//! one code serves a host TCP socket ([`Server`]) and a guest's TCP
//! connection carried by the smoltcp stack through a socket pair.
//!
//! Everything on the connection is untrusted: a head is bounded by
//! [`Limits::max_head_bytes`] and [`Limits::max_headers`], a chunk size or
//! `Content-Length` that does not parse, overflows or passes
//! [`Limits::max_body_bytes`] is refused, a request that is not HTTP/1.x
//! gets 505, and each failure becomes an [`HttpError`] the handler turns into
//! its own error body ([`Handler::error`]). After an error the framing of
//! the connection cannot be trusted, so it is closed once the answer is out.
//! Reads and writes are bounded by [`Limits::idle_timeout`] where the
//! stream supports timeouts.

use std::io;
use std::time::Duration;

mod body;
pub mod conn;
pub mod date;
mod head;
pub mod server;
#[cfg(test)]
mod tests;

pub use conn::serve_connection;
pub use date::{http_date, parse_http_date};
pub use server::{Server, ServerHandle};

/// Bounds on what one connection may send.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The most bytes of a request head (request line and headers).
    pub max_head_bytes: usize,
    /// The most header fields in one head.
    pub max_headers: usize,
    /// The largest body a request may declare or send (5 GiB: S3's largest
    /// single PUT).
    pub max_body_bytes: u64,
    /// How long a connection may sit with a request half read, or idle
    /// between requests, before it is closed.
    pub idle_timeout: Duration,
    /// The most bytes of an unread body the server reads and throws away
    /// to keep a connection open after a handler did not read it all; past
    /// this the connection is closed instead.
    pub max_drain_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 64 * 1024,
            max_headers: 128,
            max_body_bytes: 5 << 30,
            idle_timeout: Duration::from_secs(60),
            max_drain_bytes: 1 << 20,
        }
    }
}

/// One request header. The name is lower-case; the value is as sent, with
/// surrounding whitespace removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The name, lower-case.
    pub name: String,
    /// The value.
    pub value: String,
}

/// A request's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method, as sent (`GET`, `PUT`, ...).
    pub method: String,
    /// The request target as sent: an origin form `/path?query` (an
    /// absolute form `http://host/path?query` is reduced to its path and
    /// query).
    pub target: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// The header fields in the order sent.
    pub headers: Vec<Header>,
}

impl Request {
    /// The first header of that name (give it lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.value.as_str())
    }
}

/// Why a request could not be read. Each maps to one status
/// ([`HttpError::status`]); the connection closes after the answer.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The head did not parse.
    #[error("malformed request: {why}")]
    Malformed {
        /// What was wrong.
        why: String,
    },
    /// The head passed [`Limits::max_head_bytes`] or
    /// [`Limits::max_headers`].
    #[error("the request head is too large: {why}")]
    HeadTooLarge {
        /// Which limit.
        why: String,
    },
    /// Not HTTP/1.0 or 1.1.
    #[error("HTTP version not supported")]
    Version,
    /// `Content-Length` and `Transfer-Encoding` together, two different
    /// lengths, a length that does not parse, or a transfer coding other
    /// than chunked.
    #[error("bad body framing: {why}")]
    Framing {
        /// What was wrong.
        why: String,
    },
    /// The body declared or sent is over [`Limits::max_body_bytes`].
    #[error("the body is over {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: u64,
    },
    /// A chunked body's framing was wrong.
    #[error("bad chunked body: {why}")]
    Chunk {
        /// What was wrong.
        why: String,
    },
    /// The client closed the connection or stopped sending in the middle
    /// of a body.
    #[error("the body ended early: {source}")]
    Truncated {
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl HttpError {
    /// The HTTP status to answer with.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::Malformed { .. } | HttpError::Framing { .. } | HttpError::Chunk { .. } => {
                400
            }
            HttpError::HeadTooLarge { .. } => 431,
            HttpError::Version => 505,
            HttpError::BodyTooLarge { .. } => 413,
            HttpError::Truncated { .. } => 400,
        }
    }
}

/// Bytes a response streams from (an object being read).
pub trait BodySource: Send {
    /// Fills `buf` with the next bytes; returns how many, 0 at the end.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;
}

/// What follows a response's head.
pub enum ResponseBody {
    /// No body: `Content-Length: 0` (none at all for 1xx, 204 and 304).
    Empty,
    /// These bytes.
    Bytes(Vec<u8>),
    /// `len` bytes from a source (written with that `Content-Length`; a
    /// source that ends early closes the connection, since the framing is
    /// broken).
    Stream {
        /// How many bytes.
        len: u64,
        /// Where they come from.
        source: Box<dyn BodySource>,
    },
    /// A head-only answer (HEAD): `Content-Length: len` and no bytes.
    Length(u64),
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseBody::Empty => write!(f, "Empty"),
            ResponseBody::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            ResponseBody::Stream { len, .. } => write!(f, "Stream({len} bytes)"),
            ResponseBody::Length(len) => write!(f, "Length({len})"),
        }
    }
}

/// A response: status, headers (the server adds `Date`, `Content-Length`
/// and `Connection` itself), body.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields to send, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: ResponseBody,
    /// Close the connection after this response.
    pub close: bool,
}

impl Response {
    /// A response with a status and no headers or body.
    pub fn new(status: u16) -> Response {
        Response {
            status,
            headers: Vec::new(),
            body: ResponseBody::Empty,
            close: false,
        }
    }
}

/// A request's body as the handler reads it: decoded from its framing,
/// ending where the request's body ends (never reading into the next
/// pipelined request). The first read of a request that asked for
/// `Expect: 100-continue` sends `100 Continue` first; a handler that
/// answers without reading never lets the client send the body.
pub trait Body: io::Read {
    /// The body's length if the request declared one (`Content-Length`),
    /// None for chunked.
    fn declared_len(&self) -> Option<u64>;
    /// Whether the request asked for `Expect: 100-continue`.
    fn expects_continue(&self) -> bool;
}

/// What serves the requests.
pub trait Handler: Send + Sync {
    /// Answers one request. `body` yields its body; what the handler leaves
    /// unread is drained (up to [`Limits::max_drain_bytes`]) or the
    /// connection closed. A read error from `body` is an [`HttpError`]
    /// carried in the `io::Error` (see [`body_error`]).
    fn handle(&self, request: &Request, body: &mut dyn Body) -> Response;
    /// Answers a request that could not be read (the head or the body's
    /// framing); the connection closes after it.
    fn error(&self, error: &HttpError) -> Response;
}

/// The [`HttpError`] inside an `io::Error` a [`Body`] read returned, if it
/// carries one (a framing error, as opposed to a socket error).
pub fn body_error(e: &io::Error) -> Option<&HttpError> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<HttpError>())
}
