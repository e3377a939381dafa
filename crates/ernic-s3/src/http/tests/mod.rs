//! The HTTP server's tests: byte-exact exchanges over an in-memory stream
//! (`memory`), hostile input (`hostile`), and real sockets to a
//! [`Server`](super::Server) on 127.0.0.1 (`sockets`). All share the
//! [`Echo`] handler and the response reader here.

mod hostile;
mod memory;
mod sockets;

use std::collections::HashMap;
use std::io::{self, Cursor, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    Body, BodySource, Handler, HttpError, Limits, Request, Response, ResponseBody, Server,
    ServerHandle, body_error, serve_connection,
};

/// The `Date` the echo handler sets, so that exchanges are byte-exact.
const DATE: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

/// Small limits, so the hostile cases are cheap.
fn limits() -> Limits {
    Limits {
        max_head_bytes: 4096,
        max_headers: 16,
        max_body_bytes: 1 << 20,
        idle_timeout: Duration::from_secs(2),
        max_drain_bytes: 64 * 1024,
    }
}

/// Answers with the request's method, target, header count and body
/// (`x-method`, `x-target`, `x-headers`, `x-len`, the body echoed). Some
/// targets change that:
/// - `/noread`: answers 200 without reading the body;
/// - `/refuse`: answers 403 without reading the body;
/// - `/stream/N`: a `Stream` body of N pattern bytes;
/// - `/short`: a `Stream` of 100 bytes whose source ends after 10;
/// - `/204`: 204 (with a handler's `Content-Length` that must be dropped);
/// - `/close`: sets `Response::close`;
/// - `/auto-date`: leaves `Date` to the server.
///
/// Every body read error it sees is kept in `errors`.
#[derive(Default)]
struct Echo {
    errors: Mutex<Vec<String>>,
}

/// The pattern a `/stream/N` body carries: byte i is `i * 7 + i / 251`.
fn pattern(i: u64) -> u8 {
    (i.wrapping_mul(7).wrapping_add(i / 251)) as u8
}

struct Pattern {
    at: u64,
    end: u64,
}

impl BodySource for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min((self.end - self.at) as usize);
        for b in &mut buf[..n] {
            *b = pattern(self.at);
            self.at += 1;
        }
        Ok(n)
    }
}

impl Handler for Echo {
    fn handle(&self, request: &Request, body: &mut dyn Body) -> Response {
        let t = request.target.as_str();
        let mut r = Response::new(200);
        if t != "/auto-date" {
            r.headers.push(("date".into(), DATE.into()));
        }
        if t == "/noread" {
            r.body = ResponseBody::Bytes(b"unread".to_vec());
            return r;
        }
        if t == "/refuse" {
            r.status = 403;
            return r;
        }
        if let Some(n) = t.strip_prefix("/stream/") {
            let end = n.parse().unwrap_or(0);
            r.body = ResponseBody::Stream {
                len: end,
                source: Box::new(Pattern { at: 0, end }),
            };
            return r;
        }
        if t == "/short" {
            r.body = ResponseBody::Stream {
                len: 100,
                source: Box::new(Pattern { at: 0, end: 10 }),
            };
            return r;
        }
        let mut got = Vec::new();
        if let Err(e) = body.read_to_end(&mut got) {
            let why = body_error(&e).map_or_else(|| e.to_string(), |h| h.to_string());
            self.errors.lock().unwrap().push(why);
            r.status = 500;
            return r;
        }
        r.headers.extend([
            ("x-method".into(), request.method.clone()),
            ("x-target".into(), request.target.clone()),
            ("x-headers".into(), request.headers.len().to_string()),
            ("x-len".into(), got.len().to_string()),
        ]);
        match t {
            "/204" => {
                r.status = 204;
                r.headers.push(("content-length".into(), "5".into()));
            }
            "/close" => r.close = true,
            _ => {}
        }
        r.body = ResponseBody::Bytes(got);
        r
    }

    fn error(&self, error: &HttpError) -> Response {
        let mut r = Response::new(error.status());
        r.headers.push(("date".into(), DATE.into()));
        r.body = ResponseBody::Bytes(error.to_string().into_bytes());
        r
    }
}

/// An in-memory connection: what the client sent (handed out at most
/// `step` bytes a read), what the server wrote.
struct Mem {
    input: Cursor<Vec<u8>>,
    step: usize,
    output: Vec<u8>,
}

impl Mem {
    fn new(input: &[u8], step: usize) -> Mem {
        Mem {
            input: Cursor::new(input.to_vec()),
            step,
            output: Vec::new(),
        }
    }
}

impl Read for Mem {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step);
        self.input.read(&mut buf[..n])
    }
}

impl Write for Mem {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serves `input` as one connection with [`Echo`]: what was written, and
/// the body errors the handler saw.
fn exchange_with(input: &[u8], limits: &Limits) -> (Vec<u8>, Vec<String>) {
    trickle(input, limits, usize::MAX)
}

/// [`exchange_with`] with the input handed out `step` bytes a read.
fn trickle(input: &[u8], limits: &Limits, step: usize) -> (Vec<u8>, Vec<String>) {
    let echo = Echo::default();
    let mut mem = Mem::new(input, step);
    serve_connection(&mut mem, &echo, limits).expect("an in-memory stream never fails");
    let errors = echo.errors.lock().unwrap().clone();
    (mem.output, errors)
}

fn exchange(input: &[u8]) -> Vec<u8> {
    exchange_with(input, &limits()).0
}

/// One response as read off the wire.
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    fn closes(&self) -> bool {
        self.header("connection") == Some("close")
    }
}

/// Reads the response at the start of `b` (`head`: the answer to a HEAD,
/// so no body whatever its length): it and the bytes after it, or None if
/// `b` does not hold it all yet.
fn parse_response(b: &[u8], head: bool) -> Option<(Resp, &[u8])> {
    let mut slots = [httparse::EMPTY_HEADER; 32];
    let mut r = httparse::Response::new(&mut slots);
    let n = match r.parse(b).expect("the server writes valid heads") {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return None,
    };
    let status = r.code.unwrap();
    let mut headers = HashMap::new();
    for h in r.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        let value = String::from_utf8(h.value.to_vec()).unwrap();
        assert!(
            headers.insert(name.clone(), value).is_none(),
            "{name} twice"
        );
    }
    let len: usize = headers
        .get("content-length")
        .map_or(0, |v: &String| v.parse().unwrap());
    let len = if head { 0 } else { len };
    let rest = &b[n..];
    if rest.len() < len {
        return None;
    }
    Some((
        Resp {
            status,
            headers,
            body: rest[..len].to_vec(),
        },
        &rest[len..],
    ))
}

/// All the responses in `b`, every one complete; `heads[i]` says the i-th
/// answered a HEAD.
fn parse_all(mut b: &[u8], heads: &[bool]) -> Vec<Resp> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let head = heads.get(out.len()).copied().unwrap_or(false);
        let (r, rest) = parse_response(b, head).expect("a complete response");
        out.push(r);
        b = rest;
    }
    out
}

/// A server on 127.0.0.1 with [`Echo`] (kept, to look at its errors).
fn server(limits: Limits, max_connections: usize) -> (ServerHandle, Arc<Echo>) {
    let echo = Arc::new(Echo::default());
    let s = Server::bind("127.0.0.1:0", echo.clone(), limits, max_connections).unwrap();
    (s.spawn().unwrap(), echo)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads `n` responses off `s` (`heads` as for [`parse_all`]); then, if
/// `eof`, checks the server closed the connection.
fn read_responses(s: &mut TcpStream, n: usize, heads: &[bool], eof: bool) -> Vec<Resp> {
    let mut b = Vec::new();
    let mut chunk = vec![0u8; 256 * 1024];
    let out = loop {
        let mut rest = &b[..];
        let mut got = Vec::new();
        while got.len() < n {
            let head = heads.get(got.len()).copied().unwrap_or(false);
            match parse_response(rest, head) {
                Some((r, after)) => {
                    got.push(r);
                    rest = after;
                }
                None => break,
            }
        }
        if got.len() == n {
            assert!(rest.is_empty(), "bytes after the responses: {rest:?}");
            break got;
        }
        let k = s.read(&mut chunk).expect("a response before the timeout");
        assert!(k > 0, "the connection closed after {} responses", got.len());
        b.extend_from_slice(&chunk[..k]);
    };
    if eof {
        assert_eq!(s.read(&mut chunk).expect("a close, not a timeout"), 0);
    }
    out
}

/// A GET on a fresh connection to `addr` answers 200: the server survived.
fn still_serves(addr: SocketAddr) {
    let mut s = connect(addr);
    s.write_all(b"GET /alive HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, &[], true);
    assert_eq!(r[0].status, 200);
    assert_eq!(r[0].header("x-target"), Some("/alive"));
}
