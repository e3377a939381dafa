//! The S3 store's HTTP/1.1 server (`ernic_s3::http::serve_connection`) on
//! one connection whose input is the fuzz input: request heads, bodies in
//! `Content-Length` or chunked framing, pipelining, `Expect:
//! 100-continue`. The first byte sets how many bytes each read of the
//! stream returns at most (1 to 64), so heads, chunk-size lines and bodies
//! arrive split everywhere. The handler reads the whole body (or none, or
//! half, by the target's last byte) and answers with a body (its bytes, a
//! stream, a stream that breaks off, a HEAD-style length). Small limits.
//! Invariants: nothing panics or hangs; the connection ends when the input
//! does; a body never yields more than the limit or than it declared;
//! everything written is a sequence of `HTTP/1.1 ` responses.
#![no_main]

use std::io::{self, Read, Write};
use std::time::Duration;

use ernic_s3::http::{
    Body, BodySource, Handler, HttpError, Limits, Request, Response, ResponseBody, serve_connection,
};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_head_bytes: 1024,
    max_headers: 8,
    max_body_bytes: 4096,
    idle_timeout: Duration::from_secs(1),
    max_drain_bytes: 512,
};

/// The connection: reads of at most `step` bytes from the input; writes
/// counted and checked to start as a response does.
struct Mem<'a> {
    input: &'a [u8],
    step: usize,
    written: usize,
    first: Option<[u8; 9]>,
    head: [u8; 9],
}

impl Read for Mem<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step).min(self.input.len());
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input = &self.input[n..];
        Ok(n)
    }
}

impl Write for Mem<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            if self.written < 9 {
                self.head[self.written] = b;
                if self.written == 8 {
                    self.first = Some(self.head);
                }
            }
            self.written += 1;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A source that gives `give` bytes then ends.
struct Source(u64);

impl BodySource for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(usize::try_from(self.0).unwrap_or(usize::MAX));
        buf[..n].fill(b'x');
        self.0 -= n as u64;
        Ok(n)
    }
}

struct Echo;

impl Handler for Echo {
    fn handle(&self, request: &Request, body: &mut dyn Body) -> Response {
        let declared = body.declared_len();
        assert!(declared.is_none_or(|d| d <= LIMITS.max_body_bytes));
        let last = request.target.as_bytes().last().copied().unwrap_or(0);
        let mut got = Vec::new();
        let mut buf = [0u8; 700];
        let reads = match last % 4 {
            0 => 0,
            1 => 1,
            _ => usize::MAX,
        };
        for _ in 0..reads {
            match body.read(&mut buf) {
                Ok(0) => {
                    if let Some(d) = declared {
                        assert_eq!(got.len() as u64, d, "a body ends at its length");
                    }
                    break;
                }
                Ok(n) => {
                    got.extend_from_slice(&buf[..n]);
                    assert!(got.len() as u64 <= LIMITS.max_body_bytes);
                    assert!(declared.is_none_or(|d| got.len() as u64 <= d));
                }
                Err(e) => {
                    assert!(ernic_s3::http::body_error(&e).is_some());
                    break;
                }
            }
        }
        let mut r = Response::new(200);
        r.headers.push(("x-len".into(), got.len().to_string()));
        r.body = match last % 5 {
            0 => ResponseBody::Stream {
                len: 3000,
                source: Box::new(Source(3000)),
            },
            1 => ResponseBody::Stream {
                len: 3000,
                source: Box::new(Source(10)),
            },
            2 => ResponseBody::Length(17),
            _ => ResponseBody::Bytes(got),
        };
        r
    }

    fn error(&self, error: &HttpError) -> Response {
        let mut r = Response::new(error.status());
        r.body = ResponseBody::Bytes(error.to_string().into_bytes());
        r
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let mut mem = Mem {
        input,
        step: usize::from(step % 64) + 1,
        written: 0,
        first: None,
        head: [0; 9],
    };
    let _ = serve_connection(&mut mem, &Echo, &LIMITS);
    assert!(
        mem.input.is_empty() || mem.written > 0,
        "it stopped early without a word"
    );
    if let Some(first) = mem.first {
        assert_eq!(&first, b"HTTP/1.1 ");
    }
});
