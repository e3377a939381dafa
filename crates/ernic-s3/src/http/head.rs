//! The pure pieces of reading a request head and writing a response head:
//! where a head ends, parsing it (httparse) into a [`Request`], the request
//! target's origin form, the body's framing (RFC 9112 §6.3), the
//! `Connection` tokens, which handler headers may go on the wire, and the
//! reason phrases. Nothing here touches a stream; nothing panics on any
//! input.

use super::body::{Chunk, Framing};
use super::conn::Head;
use super::{Header, HttpError, Limits, Request};

/// Whether `b` holds the empty line that ends a head (`\n\n` or
/// `\n\r\n`).
pub(super) fn has_head_end(b: &[u8]) -> bool {
    b.windows(2).any(|w| w == b"\n\n") || b.windows(3).any(|w| w == b"\n\r\n")
}

/// Parses a head at the start of `b`: None while it is incomplete, else how
/// many bytes it took and what it is.
pub(super) fn parse_head(b: &[u8], limits: &Limits) -> Result<Option<(usize, Head)>, HttpError> {
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
pub(super) fn origin_form(method: &str, target: &str) -> Option<String> {
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
pub(super) fn framing(request: &Request, limits: &Limits) -> Result<Framing, HttpError> {
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
pub(super) fn parse_length(v: &str) -> Option<u64> {
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
pub(super) fn connection_tokens(request: &Request) -> (bool, bool) {
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
pub(super) fn header_ok(name: &str, value: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
        && !value.bytes().any(|c| matches!(c, b'\r' | b'\n' | 0))
}

pub(super) fn push_num(out: &mut Vec<u8>, n: u64) {
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
