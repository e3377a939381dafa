//! The headers S3 reads and writes around an object: what a PUT stores
//! ([`attrs_from_request`]), what GET and HEAD answer with
//! ([`object_headers`]), `Range` ([`parse_range`]) and the conditional
//! requests ([`check_preconditions`], RFC 9110 §13 as S3 applies it).

use super::error::{S3Error, S3Result};
use crate::http::date::parse_http_date;
use crate::http::{Request, http_date};
use crate::store::{ObjectAttrs, ObjectMeta, check_user_meta};

/// The headers a PUT stores and GET returns as they were given.
pub const STORED_HEADERS: &[&str] = &[
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
    "x-amz-storage-class",
    "x-amz-website-redirect-location",
];

/// The `Content-Type` of an object stored without one.
pub const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// What a PUT (or CreateMultipartUpload, or a copy with
/// `x-amz-metadata-directive: REPLACE`) stores: `Content-Type`, the
/// [`STORED_HEADERS`] (`aws-chunked` removed from `Content-Encoding`, since
/// it only framed this request) and the `x-amz-meta-*` headers.
pub fn attrs_from_request(req: &Request) -> S3Result<ObjectAttrs> {
    let mut a = ObjectAttrs {
        content_type: req.header("content-type").map(str::to_string),
        ..ObjectAttrs::default()
    };
    for h in &req.headers {
        if let Some(name) = h.name.strip_prefix("x-amz-meta-") {
            if name.is_empty() {
                return Err(S3Error::invalid_argument("x-amz-meta- needs a name"));
            }
            a.user_meta.push((name.to_string(), h.value.clone()));
        } else if h.name == "content-encoding" {
            let rest: Vec<&str> = h
                .value
                .split(',')
                .map(str::trim)
                .filter(|c| !c.eq_ignore_ascii_case("aws-chunked") && !c.is_empty())
                .collect();
            if !rest.is_empty() {
                a.headers.push((h.name.clone(), rest.join(",")));
            }
        } else if STORED_HEADERS.contains(&h.name.as_str()) {
            if h.name == "x-amz-storage-class" && !STORAGE_CLASSES.contains(&h.value.as_str()) {
                return Err(S3Error::new(
                    400,
                    "InvalidStorageClass",
                    format!("storage class {:?} is not valid", h.value),
                ));
            }
            a.headers.push((h.name.clone(), h.value.clone()));
        }
    }
    check_user_meta(&a.user_meta)?;
    Ok(a)
}

/// The storage classes S3 names (all stored alike here).
const STORAGE_CLASSES: &[&str] = &[
    "STANDARD",
    "REDUCED_REDUNDANCY",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER",
    "DEEP_ARCHIVE",
    "OUTPOSTS",
    "GLACIER_IR",
    "SNOW",
    "EXPRESS_ONEZONE",
];

/// An object's storage class as listings show it.
pub fn storage_class(meta: &ObjectMeta) -> String {
    meta.attrs
        .headers
        .iter()
        .find(|(n, _)| n == "x-amz-storage-class")
        .map_or("STANDARD", |(_, v)| v.as_str())
        .to_string()
}

/// `"etag"` as S3 writes it in headers.
pub fn quoted(etag: &str) -> String {
    format!("\"{etag}\"")
}

/// The headers GET and HEAD answer with for an object: `ETag`,
/// `Last-Modified`, `Content-Type`, `Accept-Ranges`, the stored headers, the
/// user metadata, the stored checksum when `checksums`, and the
/// `response-*` query overrides of a GET.
pub fn object_headers(
    meta: &ObjectMeta,
    checksums: bool,
    overrides: &[(String, String)],
) -> Vec<(String, String)> {
    let mut h = vec![
        ("ETag".to_string(), quoted(&meta.etag)),
        (
            "Last-Modified".to_string(),
            http_date(meta.last_modified_ms.div_euclid(1000)),
        ),
        ("Accept-Ranges".to_string(), "bytes".to_string()),
    ];
    let override_of = |name: &str| {
        overrides
            .iter()
            .find(|(n, _)| n.strip_prefix("response-") == Some(name))
            .map(|(_, v)| v.clone())
    };
    let ct = override_of("content-type")
        .or_else(|| meta.attrs.content_type.clone())
        .unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_string());
    h.push(("Content-Type".to_string(), ct));
    for (n, v) in &meta.attrs.headers {
        if n.starts_with("x-amz-checksum-") {
            if checksums {
                h.push((n.clone(), v.clone()));
            }
            continue;
        }
        if n == "x-amz-storage-class" && v == "STANDARD" {
            continue;
        }
        if override_of(n).is_none() {
            h.push((n.clone(), v.clone()));
        }
    }
    for name in [
        "cache-control",
        "content-disposition",
        "content-encoding",
        "content-language",
        "expires",
    ] {
        if let Some(v) = override_of(name) {
            h.push((name.to_string(), v));
        }
    }
    for (n, v) in &meta.attrs.user_meta {
        h.push((format!("x-amz-meta-{n}"), v.clone()));
    }
    if let Some(parts) = meta.parts {
        h.push(("x-amz-mp-parts-count".to_string(), parts.to_string()));
    }
    h
}

/// The `response-*` parameters GET honours.
pub const RESPONSE_OVERRIDES: &[&str] = &[
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
];

/// A `Range: bytes=...` header's one range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `first-` or `first-last`.
    From {
        /// The first byte.
        first: u64,
        /// The last byte, inclusive.
        last: Option<u64>,
    },
    /// `-n`: the last `n` bytes.
    Suffix(u64),
}

/// Reads a `Range` header. None for one to ignore, as RFC 9110 §14.2 says
/// of a range a server does not understand: another unit, bad syntax, or
/// several ranges (S3 serves one).
pub fn parse_range(v: &str) -> Option<ByteRange> {
    let spec = v.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let num = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())).then(|| s.parse().ok())?
    };
    if a.trim().is_empty() {
        return num(b).map(ByteRange::Suffix);
    }
    let first = num(a)?;
    let last = if b.trim().is_empty() {
        None
    } else {
        Some(num(b)?)
    };
    if last.is_some_and(|l| l < first) {
        return None;
    }
    Some(ByteRange::From { first, last })
}

/// The `(offset, length)` a range selects of `size` bytes, or the 416
/// S3 answers when it selects none.
pub fn resolve_range(r: ByteRange, size: u64) -> S3Result<(u64, u64)> {
    let unsatisfiable = || {
        let mut e = S3Error::new(
            416,
            "InvalidRange",
            "the requested range is not satisfiable",
        )
        .with("RangeRequested", describe(r))
        .with("ActualObjectSize", size.to_string());
        e.headers
            .push(("Content-Range".to_string(), format!("bytes */{size}")));
        e
    };
    match r {
        ByteRange::From { first, last } => {
            if first >= size {
                return Err(unsatisfiable());
            }
            let last = last.map_or(size - 1, |l| l.min(size - 1));
            Ok((first, last - first + 1))
        }
        ByteRange::Suffix(n) => {
            if n == 0 || size == 0 {
                return Err(unsatisfiable());
            }
            let n = n.min(size);
            Ok((size - n, n))
        }
    }
}

fn describe(r: ByteRange) -> String {
    match r {
        ByteRange::From {
            first,
            last: Some(l),
        } => format!("bytes={first}-{l}"),
        ByteRange::From { first, last: None } => format!("bytes={first}-"),
        ByteRange::Suffix(n) => format!("bytes=-{n}"),
    }
}

/// Whether an `If-Match`/`If-None-Match` list names the ETag (`*` names
/// any). Quotes and a weak `W/` prefix are ignored, as S3 compares.
pub fn etag_listed(list: &str, etag: &str) -> bool {
    list.split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.trim_start_matches("W/").trim_matches('"') == etag)
}

/// The header names of the four conditions: plain for GET and HEAD, with
/// `x-amz-copy-source-` for the source of a copy.
#[derive(Debug, Clone, Copy)]
pub struct Conditions {
    /// If-Match.
    pub if_match: &'static str,
    /// If-None-Match.
    pub if_none_match: &'static str,
    /// If-Modified-Since.
    pub if_modified_since: &'static str,
    /// If-Unmodified-Since.
    pub if_unmodified_since: &'static str,
    /// What a failed `If-None-Match`/`If-Modified-Since` answers: 304 for
    /// GET and HEAD, 412 for a copy.
    pub not_modified: u16,
}

/// GET's and HEAD's conditions.
pub const READ_CONDITIONS: Conditions = Conditions {
    if_match: "if-match",
    if_none_match: "if-none-match",
    if_modified_since: "if-modified-since",
    if_unmodified_since: "if-unmodified-since",
    not_modified: 304,
};

/// A copy's conditions on its source.
pub const COPY_SOURCE_CONDITIONS: Conditions = Conditions {
    if_match: "x-amz-copy-source-if-match",
    if_none_match: "x-amz-copy-source-if-none-match",
    if_modified_since: "x-amz-copy-source-if-modified-since",
    if_unmodified_since: "x-amz-copy-source-if-unmodified-since",
    not_modified: 412,
};

/// Evaluates the conditions in RFC 9110 §13.2.2's order: If-Match (else
/// If-Unmodified-Since) fails with 412; If-None-Match (else
/// If-Modified-Since) fails with `not_modified`. Dates that do not parse
/// are ignored.
pub fn check_preconditions(req: &Request, meta: &ObjectMeta, c: Conditions) -> S3Result<()> {
    let modified = meta.last_modified_ms.div_euclid(1000);
    let failed = || {
        S3Error::new(
            412,
            "PreconditionFailed",
            "at least one of the preconditions you specified did not hold",
        )
    };
    match req.header(c.if_match) {
        Some(list) if !etag_listed(list, &meta.etag) => return Err(failed()),
        Some(_) => {}
        None => {
            if let Some(t) = req.header(c.if_unmodified_since).and_then(parse_http_date) {
                if modified > t {
                    return Err(failed());
                }
            }
        }
    }
    let not_modified = || {
        if c.not_modified == 304 {
            let mut e = S3Error::new(304, "NotModified", "not modified");
            e.headers.push(("ETag".to_string(), quoted(&meta.etag)));
            e.headers
                .push(("Last-Modified".to_string(), http_date(modified)));
            e
        } else {
            failed()
        }
    };
    match req.header(c.if_none_match) {
        Some(list) if etag_listed(list, &meta.etag) => return Err(not_modified()),
        Some(_) => {}
        None => {
            if let Some(t) = req.header(c.if_modified_since).and_then(parse_http_date) {
                if modified <= t {
                    return Err(not_modified());
                }
            }
        }
    }
    Ok(())
}
