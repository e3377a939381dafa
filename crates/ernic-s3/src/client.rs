//! A small blocking S3 client: ernic's own `ernic s3 get|put|ls`, and the
//! tests' way of talking to the store in bytes they control. One
//! keep-alive HTTP/1.1 connection, requests signed with SigV4 when it has
//! a credential ([`Signer`]), bodies streamed both ways, and the RDMA
//! token headers passed through as any other header.
//!
//! It reads what a server sends with the same care as the server reads
//! clients: a response head is bounded ([`MAX_HEAD`]), and a body is read
//! by its `Content-Length` (or to the end of the connection).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::sigv4::canonical::{format_amz_date, hex, sha256};
use crate::sigv4::sign::Signer;

/// The largest response head read.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most response headers read.
pub const MAX_HEADERS: usize = 128;

/// Why a request failed before the server's answer was read.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The connection failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The server's answer was not HTTP.
    #[error("the server's response is malformed: {why}")]
    Malformed {
        /// What was wrong.
        why: String,
    },
    /// The request could not be signed.
    #[error("signing the request: {0}")]
    Sign(#[from] crate::sigv4::SigV4Error),
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> ClientError {
    move |source| ClientError::Io { what, source }
}

/// A request's body.
pub enum Outgoing<'a> {
    /// None (`Content-Length: 0`).
    Empty,
    /// These bytes (their SHA-256 is signed).
    Bytes(&'a [u8]),
    /// `len` bytes from a reader (sent `UNSIGNED-PAYLOAD`).
    Reader {
        /// How many.
        len: u64,
        /// From where.
        reader: &'a mut dyn Read,
    },
}

/// A response whose head has been read; its body is read from the client.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// The headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// Bytes of body left to read (None: to the end of the connection).
    left: Option<u64>,
}

impl Reply {
    /// The first header of that name (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One connection to a store.
pub struct Client {
    host: String,
    signer: Option<Signer>,
    conn: Option<BufReader<TcpStream>>,
    timeout: Duration,
    /// The body of the last reply not yet read.
    pending: Option<Option<u64>>,
}

impl Client {
    /// A client of the store at `host` (`HOST:PORT`), signing with `signer`.
    pub fn new(host: &str, signer: Option<Signer>) -> Client {
        Client {
            host: host.to_string(),
            signer,
            conn: None,
            timeout: Duration::from_secs(60),
            pending: None,
        }
    }

    /// Sets the socket timeout of later connections.
    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }

    fn conn(&mut self) -> Result<&mut BufReader<TcpStream>, ClientError> {
        if self.conn.is_none() {
            let s = TcpStream::connect(&self.host).map_err(io_err("connecting to the store"))?;
            s.set_nodelay(true).map_err(io_err("setting TCP_NODELAY"))?;
            s.set_read_timeout(Some(self.timeout))
                .map_err(io_err("setting a timeout"))?;
            s.set_write_timeout(Some(self.timeout))
                .map_err(io_err("setting a timeout"))?;
            self.conn = Some(BufReader::with_capacity(1 << 20, s));
        }
        self.conn.as_mut().ok_or_else(|| ClientError::Malformed {
            why: "no connection".into(),
        })
    }

    /// Sends a request and reads the head of its answer. `raw_path` and
    /// `raw_query` are sent as given (already percent-encoded).
    pub fn send(
        &mut self,
        method: &str,
        raw_path: &str,
        raw_query: &str,
        headers: &[(&str, &str)],
        body: Outgoing<'_>,
    ) -> Result<Reply, ClientError> {
        if let Some(left) = self.pending.take() {
            // The previous body was not read: the connection cannot be reused.
            if left != Some(0) {
                self.conn = None;
            }
        }
        let amz_date = format_amz_date(crate::store::now_ms().div_euclid(1000).max(0) as u64);
        let (len, payload_hash) = match &body {
            Outgoing::Empty => (0, hex(&sha256(b""))),
            Outgoing::Bytes(b) => (b.len() as u64, hex(&sha256(b))),
            Outgoing::Reader { len, .. } => (*len, "UNSIGNED-PAYLOAD".to_string()),
        };
        let len_s = len.to_string();
        let mut all: Vec<(&str, &str)> = vec![
            ("host", self.host.as_str()),
            ("x-amz-date", &amz_date),
            ("x-amz-content-sha256", &payload_hash),
        ];
        all.extend_from_slice(headers);
        let auth = match &self.signer {
            Some(s) => Some(s.authorization(method, raw_path, raw_query, &all, &amz_date)?),
            None => None,
        };
        let mut head = format!("{method} {raw_path}");
        if !raw_query.is_empty() {
            head.push('?');
            head.push_str(raw_query);
        }
        head.push_str(" HTTP/1.1\r\n");
        for (n, v) in &all {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        if let Some(a) = auth {
            head.push_str(&format!("authorization: {a}\r\n"));
        }
        head.push_str(&format!("content-length: {len_s}\r\n\r\n"));
        let mut result = self.exchange(head.as_bytes(), body);
        match &mut result {
            Err(_) => self.conn = None,
            Ok(r) if method == "HEAD" => {
                // A HEAD answer's Content-Length describes a body not sent.
                r.left = Some(0);
                self.pending = Some(Some(0));
            }
            Ok(_) => {}
        }
        result
    }

    fn exchange(&mut self, head: &[u8], body: Outgoing<'_>) -> Result<Reply, ClientError> {
        let conn = self.conn()?;
        let w = conn.get_mut();
        w.write_all(head).map_err(io_err("sending the request"))?;
        match body {
            Outgoing::Empty => {}
            Outgoing::Bytes(b) => w.write_all(b).map_err(io_err("sending the body"))?,
            Outgoing::Reader { len, reader } => {
                let copied =
                    io::copy(&mut reader.take(len), w).map_err(io_err("sending the body"))?;
                if copied != len {
                    return Err(ClientError::Malformed {
                        why: format!("the body source gave {copied} of {len} bytes"),
                    });
                }
            }
        }
        let reply = read_head(conn)?;
        self.pending = Some(reply.left);
        Ok(reply)
    }

    /// Reads the rest of the reply's body into `out`, calling `progress`
    /// with the bytes read so far; returns how many.
    pub fn read_body(
        &mut self,
        reply: &mut Reply,
        out: &mut dyn Write,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, ClientError> {
        let conn = self.conn()?;
        let mut total = 0u64;
        while reply.left != Some(0) {
            let buf = conn.fill_buf().map_err(io_err("reading the body"))?;
            let want = reply.left.map_or(buf.len(), |l| {
                buf.len().min(usize::try_from(l).unwrap_or(usize::MAX))
            });
            if want == 0 {
                if reply.left.is_some_and(|l| l > 0) {
                    return Err(ClientError::Malformed {
                        why: "the connection closed inside the body".into(),
                    });
                }
                break;
            }
            out.write_all(&buf[..want])
                .map_err(io_err("writing the body out"))?;
            conn.consume(want);
            total += want as u64;
            if let Some(l) = &mut reply.left {
                *l -= want as u64;
            }
            progress(total);
        }
        self.pending = Some(reply.left);
        if reply.left.is_none() {
            self.conn = None;
        }
        Ok(total)
    }

    /// Reads the reply's body whole, up to `limit` bytes.
    pub fn body_bytes(&mut self, reply: &mut Reply, limit: usize) -> Result<Vec<u8>, ClientError> {
        if reply.left.is_some_and(|l| l > limit as u64) {
            return Err(ClientError::Malformed {
                why: format!("a {}-byte body is over {limit}", reply.left.unwrap_or(0)),
            });
        }
        let mut v = Vec::new();
        self.read_body(reply, &mut v, &mut |_| {})?;
        Ok(v)
    }
}

/// Reads a response head from `conn` (a `100 Continue` is skipped): its
/// status, headers and how much body follows. Bounded by [`MAX_HEAD`] and
/// [`MAX_HEADERS`]; a server's bytes never make it panic.
pub fn read_head<R: BufRead>(conn: &mut R) -> Result<Reply, ClientError> {
    let mut raw = Vec::new();
    loop {
        let n = conn
            .read_until(b'\n', &mut raw)
            .map_err(io_err("reading the response"))?;
        if n == 0 {
            return Err(ClientError::Malformed {
                why: "the connection closed before a response".into(),
            });
        }
        if raw.len() > MAX_HEAD {
            return Err(ClientError::Malformed {
                why: format!("the response head is over {MAX_HEAD} bytes"),
            });
        }
        if raw.ends_with(b"\r\n\r\n") {
            let mut hs = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut resp = httparse::Response::new(&mut hs);
            match resp.parse(&raw) {
                Ok(httparse::Status::Complete(_)) => {}
                Ok(httparse::Status::Partial) => continue,
                Err(e) => return Err(ClientError::Malformed { why: e.to_string() }),
            }
            let status = resp.code.unwrap_or(0);
            if status == 100 {
                raw.clear();
                continue;
            }
            let headers: Vec<(String, String)> = resp
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).trim().to_string(),
                    )
                })
                .collect();
            let left = match headers.iter().find(|(n, _)| n == "content-length") {
                Some((_, v)) => Some(v.parse::<u64>().map_err(|_| ClientError::Malformed {
                    why: format!("Content-Length {v:?}"),
                })?),
                None if status == 204 || status == 304 => Some(0),
                None => None,
            };
            return Ok(Reply {
                status,
                headers,
                left,
            });
        }
    }
}
