//! AWS Signature Version 2, the form S3 clients still send when they are
//! not told otherwise: boto3's `generate_presigned_url` with a custom
//! endpoint signs `AWSAccessKeyId`/`Signature`/`Expires` query parameters,
//! and older tools send `Authorization: AWS ACCESS_KEY:SIGNATURE`. The
//! signature is Base64(HMAC-SHA1(secret, string to sign)) over the method,
//! `Content-MD5`, `Content-Type`, the date (or `Expires`), the `x-amz-*`
//! headers and the resource (AWS's "Signing and Authenticating REST
//! Requests"). It covers no body: the payload is unsigned, as a presigned
//! SigV4 URL's is.
//!
//! Everything is bounded by SigV4's limits ([`crate::sigv4`]); nothing here
//! panics, and the signature is compared in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use crate::http::date::parse_http_date;
use crate::sigv4::canonical::{QueryParam, parse_amz_date, parse_query, push_folded};
use crate::sigv4::{
    Credentials, MAX_QUERY_PARAMS, MAX_SKEW_SECS, PayloadMode, SigV4Error, Verified,
};

/// The sub-resources that are part of the resource signed (AWS's list),
/// with the `response-*` overrides.
const SUBRESOURCES: &[&str] = &[
    "acl",
    "cors",
    "delete",
    "lifecycle",
    "location",
    "logging",
    "notification",
    "partNumber",
    "policy",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

/// A request as SigV2 signs it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The method.
    pub method: &'a str,
    /// The path as received (percent-encoded).
    pub raw_path: &'a str,
    /// The query as received.
    pub raw_query: &'a str,
    /// The bucket when it came in the Host (virtual-hosted-style), which
    /// the signed resource starts with.
    pub vhost_bucket: Option<&'a str>,
    /// The headers, `(name, value)`, names in any case.
    pub headers: &'a [(&'a str, &'a str)],
}

fn header<'a>(r: &Request<'a>, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// Whether the request is signed with SigV2 (either form).
pub fn is_v2(r: &Request<'_>) -> bool {
    header(r, "authorization").is_some_and(|a| a.starts_with("AWS "))
        || (r.raw_query.contains("AWSAccessKeyId=") && r.raw_query.contains("Signature="))
}

/// The string to sign: method, Content-MD5, Content-Type, `date`, the
/// canonical `x-amz-*` headers, the canonical resource.
pub fn string_to_sign(r: &Request<'_>, params: &[QueryParam], date: &str) -> String {
    let mut s = String::new();
    s.push_str(r.method);
    s.push('\n');
    s.push_str(header(r, "content-md5").unwrap_or("").trim());
    s.push('\n');
    s.push_str(header(r, "content-type").unwrap_or("").trim());
    s.push('\n');
    s.push_str(date);
    s.push('\n');
    let mut amz: Vec<(String, &str)> = r
        .headers
        .iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), *v))
        .filter(|(n, _)| n.starts_with("x-amz-"))
        .collect();
    amz.sort_by(|a, b| a.0.cmp(&b.0));
    let mut i = 0;
    while i < amz.len() {
        let name = amz[i].0.clone();
        s.push_str(&name);
        s.push(':');
        let mut first = true;
        while i < amz.len() && amz[i].0 == name {
            if !first {
                s.push(',');
            }
            push_folded(&mut s, amz[i].1);
            first = false;
            i += 1;
        }
        s.push('\n');
    }
    if let Some(b) = r.vhost_bucket {
        s.push('/');
        s.push_str(b);
    }
    s.push_str(if r.raw_path.is_empty() {
        "/"
    } else {
        r.raw_path
    });
    let mut subs: Vec<(&str, String)> = params
        .iter()
        .filter_map(|p| {
            let n = std::str::from_utf8(&p.name).ok()?;
            SUBRESOURCES
                .contains(&n)
                .then(|| (n, String::from_utf8_lossy(&p.value).into_owned()))
        })
        .collect();
    subs.sort();
    for (i, (n, v)) in subs.iter().enumerate() {
        s.push(if i == 0 { '?' } else { '&' });
        s.push_str(n);
        if !v.is_empty() {
            s.push('=');
            s.push_str(v);
        }
    }
    s
}

/// Base64(HMAC-SHA1(secret, string to sign)).
pub fn sign(secret: &str, sts: &str) -> String {
    match Hmac::<Sha1>::new_from_slice(secret.as_bytes()) {
        Ok(mut m) => {
            m.update(sts.as_bytes());
            B64.encode(m.finalize().into_bytes())
        }
        Err(_) => String::new(),
    }
}

/// An RFC 1123 date as clients sign it: `GMT` or a `+0000` zone.
fn parse_date(d: &str) -> Option<u64> {
    let d = d.trim();
    let gmt = d.strip_suffix("+0000").map(|x| format!("{x}GMT"));
    parse_http_date(gmt.as_deref().unwrap_or(d)).map(|t| t.max(0) as u64)
}

fn matches(secret: &str, sts: &str, given: &str) -> bool {
    let Ok(sig) = B64.decode(given.trim()) else {
        return false;
    };
    match Hmac::<Sha1>::new_from_slice(secret.as_bytes()) {
        Ok(mut m) => {
            m.update(sts.as_bytes());
            m.verify_slice(&sig).is_ok()
        }
        Err(_) => false,
    }
}

/// Checks a SigV2 request (header or query form) at server time `now`.
pub fn verify<C: Credentials + ?Sized>(
    r: &Request<'_>,
    creds: &C,
    now: u64,
) -> Result<Verified, SigV4Error> {
    for (n, v) in r.headers {
        if n.len() > crate::sigv4::MAX_SCOPE_FIELD_LEN
            || v.len() > crate::sigv4::MAX_HEADER_VALUE_LEN
        {
            return Err(SigV4Error::TooLong {
                what: "a header",
                len: v.len(),
                limit: crate::sigv4::MAX_HEADER_VALUE_LEN,
            });
        }
    }
    let params = parse_query(r.raw_query, MAX_QUERY_PARAMS)?;
    let param = |name: &str| {
        params
            .iter()
            .find(|p| p.name == name.as_bytes())
            .map(|p| String::from_utf8_lossy(&p.value).into_owned())
    };
    let (access_key, signature, date) = match header(r, "authorization") {
        Some(a) => {
            let rest = a
                .strip_prefix("AWS ")
                .ok_or(SigV4Error::MalformedAuthorization {
                    reason: "not AWS ACCESS_KEY:SIGNATURE",
                })?;
            let (ak, sig) = rest
                .split_once(':')
                .ok_or(SigV4Error::MalformedAuthorization {
                    reason: "not AWS ACCESS_KEY:SIGNATURE",
                })?;
            // With x-amz-date, the Date line is empty (x-amz-date is signed
            // among the x-amz-* headers).
            let (date_line, when) = match header(r, "x-amz-date") {
                Some(d) => (
                    "",
                    parse_http_date(d)
                        .map(|t| t.max(0) as u64)
                        .or_else(|| parse_amz_date(d)),
                ),
                None => {
                    let d = header(r, "date").ok_or(SigV4Error::MissingHeader { name: "date" })?;
                    (d, parse_date(d))
                }
            };
            let when = when.ok_or_else(|| SigV4Error::InvalidDate {
                value: header(r, "date").unwrap_or("").to_string(),
            })?;
            if when.abs_diff(now) > MAX_SKEW_SECS {
                return Err(SigV4Error::TimeTooSkewed {
                    request_time: when,
                    server_time: now,
                });
            }
            (ak.to_string(), sig.to_string(), date_line.to_string())
        }
        None => {
            let bad = |reason| SigV4Error::MalformedPresignedQuery { reason };
            let ak = param("AWSAccessKeyId").ok_or(bad("no AWSAccessKeyId"))?;
            let sig = param("Signature").ok_or(bad("no Signature"))?;
            let expires = param("Expires").ok_or(bad("no Expires"))?;
            let at: u64 = expires
                .parse()
                .map_err(|_| bad("Expires is not a number of seconds"))?;
            if at < now {
                return Err(SigV4Error::Expired {
                    expired_at: at,
                    server_time: now,
                });
            }
            (ak, sig, expires)
        }
    };
    let secret = creds
        .secret(&access_key)
        .ok_or_else(|| SigV4Error::UnknownAccessKey {
            access_key: access_key.clone(),
        })?;
    let sts = string_to_sign(r, &params, &date);
    if !matches(secret, &sts, &signature) {
        return Err(SigV4Error::SignatureMismatch);
    }
    Ok(Verified {
        access_key,
        region: String::new(),
        payload: PayloadMode::Unsigned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AK: &str = "AKIAIOSFODNN7EXAMPLE";
    const SK: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const CREDS: &[(&str, &str)] = &[(AK, SK)];

    // AWS's "Signing and Authenticating REST Requests", Object GET and the
    // query string example (Expires 1175139620).
    #[test]
    fn aws_examples_verify() {
        let h = [
            ("Host", "johnsmith.s3.amazonaws.com"),
            ("Date", "Tue, 27 Mar 2007 19:36:42 +0000"),
            (
                "Authorization",
                "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU=",
            ),
        ];
        let r = Request {
            method: "GET",
            raw_path: "/photos/puppy.jpg",
            raw_query: "",
            vhost_bucket: Some("johnsmith"),
            headers: &h,
        };
        assert!(is_v2(&r));
        assert_eq!(verify(&r, CREDS, 1_175_024_202).unwrap().access_key, AK);
        let q = "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
        let h = [("Host", "johnsmith.s3.amazonaws.com")];
        let r = Request {
            method: "GET",
            raw_path: "/photos/puppy.jpg",
            raw_query: q,
            vhost_bucket: Some("johnsmith"),
            headers: &h,
        };
        assert!(is_v2(&r));
        verify(&r, CREDS, 1_175_139_000).unwrap();
        assert!(matches!(
            verify(&r, CREDS, 1_175_139_621),
            Err(SigV4Error::Expired { .. })
        ));
        let r = Request { method: "PUT", ..r };
        assert_eq!(
            verify(&r, CREDS, 1_175_139_000),
            Err(SigV4Error::SignatureMismatch)
        );
        let wrong: &[(&str, &str)] = &[(AK, "another secret")];
        let r = Request { method: "GET", ..r };
        assert_eq!(
            verify(&r, wrong, 1_175_139_000),
            Err(SigV4Error::SignatureMismatch)
        );
    }

    #[test]
    fn amz_headers_and_subresources_are_canonical() {
        let h = [
            ("X-Amz-Meta-B", "two  words"),
            ("x-amz-meta-a", "1"),
            ("x-amz-meta-a", "2"),
            ("Content-Type", "text/plain"),
        ];
        let r = Request {
            method: "PUT",
            raw_path: "/bkt/k",
            raw_query: "uploadId=U&partNumber=3&x=y",
            vhost_bucket: None,
            headers: &h,
        };
        let params = parse_query(r.raw_query, 16).unwrap();
        assert_eq!(
            string_to_sign(&r, &params, "D"),
            "PUT\n\ntext/plain\nD\nx-amz-meta-a:1,2\nx-amz-meta-b:two words\n/bkt/k?partNumber=3&uploadId=U"
        );
    }
}
