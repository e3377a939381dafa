//! The pieces of a SigV4 signature that are pure functions of bytes: S3's URI encoding,
//! the canonical URI, query string and header block, the string to sign, the signing key,
//! the ISO 8601 basic timestamp, hex, and the constant-time signature check.
//!
//! Nothing here knows about requests or credentials; [`super`] assembles these. No function
//! here panics on any input, and every output is sized by an input the caller has already
//! bounded.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::SigV4Error;
use crate::http::date::{civil_from_days, days_from_civil};

type HmacSha256 = Hmac<Sha256>;

/// The algorithm name of the `Authorization` header, `X-Amz-Algorithm` and the string to sign.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";

/// Hex SHA-256 of the empty string (a chunk string to sign's fixed line).
pub const EMPTY_SHA256_HEX: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes exactly 64 hex digits (either case) into 32 bytes; `None` for anything else.
pub fn decode_hex32(s: &[u8]) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = (hex_val(pair[0])? << 4) | hex_val(pair[1])?;
    }
    Some(out)
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// HMAC-SHA256 of `msg` under `key`.
pub fn hmac(key: &[u8], msg: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail.
    let mut mac = match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => return [0; 32],
    };
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

/// Whether HMAC-SHA256(`key`, `msg`) equals `expected`, compared in constant time
/// (`hmac`'s `verify_slice`, built on `subtle`).
pub fn hmac_matches(key: &[u8], msg: &[u8], expected: &[u8; 32]) -> bool {
    match HmacSha256::new_from_slice(key) {
        Ok(mut mac) => {
            mac.update(msg);
            mac.verify_slice(expected).is_ok()
        }
        Err(_) => false,
    }
}

/// The SigV4 signing key: HMAC chain over date (`YYYYMMDD`), region, `s3`, `aws4_request`.
pub fn signing_key(secret: &str, date: &str, region: &str) -> [u8; 32] {
    let mut k = Vec::with_capacity(4 + secret.len());
    k.extend_from_slice(b"AWS4");
    k.extend_from_slice(secret.as_bytes());
    let k_date = hmac(&k, date.as_bytes());
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, b"s3");
    hmac(&k_service, b"aws4_request")
}

/// The string to sign of a request: algorithm, timestamp, scope, hash of the canonical request.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex(&sha256(canonical_request.as_bytes()))
    )
}

/// Appends `bytes` URI-encoded as AWS specifies: unreserved characters (`A-Z a-z 0-9 - . _ ~`)
/// as they are, `/` as is when `keep_slash`, every other byte as `%XY` with upper-case hex.
pub fn uri_encode_into(out: &mut String, bytes: &[u8], keep_slash: bool) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else if b == b'/' && keep_slash {
            out.push('/');
        } else {
            out.push('%');
            out.push(char::from(DIGITS[usize::from(b >> 4)]));
            out.push(char::from(DIGITS[usize::from(b & 0xf)]));
        }
    }
}

/// Percent-decodes `raw`; `plus_is_space` for query components (`+` is a space there, as
/// form encoding and most S3 servers read it). A `%` not followed by two hex digits fails.
pub fn percent_decode(raw: &[u8], plus_is_space: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'%' => {
                let hi = hex_val(*raw.get(i + 1)?)?;
                let lo = hex_val(*raw.get(i + 2)?)?;
                out.push((hi << 4) | lo);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(out)
}

/// The canonical URI of an S3 request from its path as received: each `/`-separated segment
/// is decoded and encoded once (S3 does not double-encode, nor normalise `.`/`..` or empty
/// segments). An empty path is `/`.
pub fn canonical_uri(raw_path: &str) -> Result<String, SigV4Error> {
    if raw_path.is_empty() {
        return Ok("/".to_owned());
    }
    let mut out = String::with_capacity(raw_path.len() * 3);
    for (i, segment) in raw_path.as_bytes().split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let decoded = percent_decode(segment, false)
            .ok_or(SigV4Error::BadPercentEncoding { what: "path" })?;
        uri_encode_into(&mut out, &decoded, false);
    }
    Ok(out)
}

/// One query parameter, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParam {
    /// The decoded name.
    pub name: Vec<u8>,
    /// The decoded value (empty for `name` without `=`).
    pub value: Vec<u8>,
}

/// Splits a raw query string into decoded parameters, at most `limit` of them.
pub fn parse_query(raw_query: &str, limit: usize) -> Result<Vec<QueryParam>, SigV4Error> {
    let raw = raw_query.strip_prefix('?').unwrap_or(raw_query);
    let mut params = Vec::new();
    for part in raw.as_bytes().split(|&b| b == b'&') {
        if part.is_empty() {
            continue;
        }
        if params.len() == limit {
            return Err(SigV4Error::TooMany {
                what: "query parameters",
                limit,
            });
        }
        let (name, value) = match part.iter().position(|&b| b == b'=') {
            Some(eq) => (&part[..eq], &part[eq + 1..]),
            None => (part, &b""[..]),
        };
        let bad = SigV4Error::BadPercentEncoding { what: "query" };
        params.push(QueryParam {
            name: percent_decode(name, true).ok_or(bad.clone())?,
            value: percent_decode(value, true).ok_or(bad)?,
        });
    }
    Ok(params)
}

/// The canonical query string: every parameter but `skip` (the presigned `X-Amz-Signature`),
/// each name and value encoded, sorted by name then value, joined with `&`.
pub fn canonical_query(params: &[QueryParam], skip: Option<&[u8]>) -> String {
    let mut encoded: Vec<(String, String)> = params
        .iter()
        .filter(|p| Some(p.name.as_slice()) != skip)
        .map(|p| {
            let mut n = String::with_capacity(p.name.len() * 3);
            uri_encode_into(&mut n, &p.name, false);
            let mut v = String::with_capacity(p.value.len() * 3);
            uri_encode_into(&mut v, &p.value, false);
            (n, v)
        })
        .collect();
    encoded.sort();
    let mut out = String::new();
    for (i, (n, v)) in encoded.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(n);
        out.push('=');
        out.push_str(v);
    }
    out
}

/// Appends a header value trimmed, with each run of spaces and tabs folded to one space.
pub fn push_folded(out: &mut String, value: &str) {
    let mut pending_space = false;
    let mut started = false;
    for c in value.chars() {
        if c == ' ' || c == '\t' {
            pending_space = started;
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
            started = true;
        }
    }
}

/// The canonical header block (`name:value\n` per signed header, values of repeated headers
/// joined with `,`). `signed` must already be checked: lower case, ascending, unique. A signed
/// header absent from `headers` fails.
pub fn canonical_headers(signed: &[&str], headers: &[(&str, &str)]) -> Result<String, SigV4Error> {
    let mut out = String::new();
    for &name in signed {
        out.push_str(name);
        out.push(':');
        let mut found = false;
        for (n, v) in headers {
            if n.eq_ignore_ascii_case(name) {
                if found {
                    out.push(',');
                }
                push_folded(&mut out, v);
                found = true;
            }
        }
        if !found {
            return Err(SigV4Error::SignedHeaderAbsent {
                name: name.to_owned(),
            });
        }
        out.push('\n');
    }
    Ok(out)
}

/// The canonical request: method, URI, query, header block, signed header list, payload hash.
pub fn canonical_request(
    method: &str,
    uri: &str,
    query: &str,
    headers: &str,
    signed_headers: &str,
    payload: &str,
) -> String {
    format!("{method}\n{uri}\n{query}\n{headers}\n{signed_headers}\n{payload}")
}

fn digits(s: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(c - b'0');
    }
    Some(v)
}

/// Parses an ISO 8601 basic timestamp `YYYYMMDDTHHMMSSZ` into seconds since the Unix epoch;
/// `None` for anything else (including dates before 1970 and impossible days).
pub fn parse_amz_date(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[4..6])?, digits(&b[6..8])?);
    let (h, mi, se) = (digits(&b[9..11])?, digits(&b[11..13])?, digits(&b[13..15])?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = match mo {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if y < 1970 || d < 1 || d > month_days || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let secs = days_from_civil(y, mo as u32, d as u32) * 86_400 + h * 3600 + mi * 60 + se;
    u64::try_from(secs).ok()
}

/// Seconds since the Unix epoch as an ISO 8601 basic timestamp
/// (`YYYYMMDDTHHMMSSZ`, what `x-amz-date` carries); the inverse of
/// [`parse_amz_date`].
pub fn format_amz_date(unix_secs: u64) -> String {
    let secs = unix_secs as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_encoding_is_s3s_single_pass() {
        assert_eq!(
            canonical_uri("/test$file.text").unwrap(),
            "/test%24file.text"
        );
        assert_eq!(
            canonical_uri("/test%24file.text").unwrap(),
            "/test%24file.text"
        );
        assert_eq!(canonical_uri("/a%20b/c+d/~x").unwrap(), "/a%20b/c%2Bd/~x");
        // An encoded slash stays inside its segment.
        assert_eq!(canonical_uri("/a%2Fb").unwrap(), "/a%2Fb");
        assert_eq!(canonical_uri("").unwrap(), "/");
        assert_eq!(
            canonical_uri("/bad%zz"),
            Err(SigV4Error::BadPercentEncoding { what: "path" })
        );
        assert!(canonical_uri("/trunc%4").is_err());
    }

    #[test]
    fn query_is_sorted_encoded_and_valueless_names_get_equals() {
        let p = parse_query("prefix=J&max-keys=2", 8).unwrap();
        assert_eq!(canonical_query(&p, None), "max-keys=2&prefix=J");
        let p = parse_query("lifecycle", 8).unwrap();
        assert_eq!(canonical_query(&p, None), "lifecycle=");
        let p = parse_query("b=x%2Fy&a=c+d&a=b", 8).unwrap();
        assert_eq!(canonical_query(&p, None), "a=b&a=c%20d&b=x%2Fy");
        assert_eq!(
            parse_query("a&b&c", 2),
            Err(SigV4Error::TooMany {
                what: "query parameters",
                limit: 2
            })
        );
    }

    #[test]
    fn header_values_are_trimmed_and_folded() {
        let h = [("My-Header", "  a   b \t c  "), ("my-header", "d")];
        assert_eq!(
            canonical_headers(&["my-header"], &h).unwrap(),
            "my-header:a b c,d\n"
        );
        assert_eq!(
            canonical_headers(&["host"], &h),
            Err(SigV4Error::SignedHeaderAbsent {
                name: "host".into()
            })
        );
    }

    #[test]
    fn amz_dates_parse_and_impossible_ones_do_not() {
        assert_eq!(parse_amz_date("20130524T000000Z"), Some(1_369_353_600));
        assert_eq!(parse_amz_date("19700101T000001Z"), Some(1));
        assert_eq!(parse_amz_date("20240229T120000Z"), Some(1_709_208_000));
        for bad in [
            "20230229T000000Z",
            "20131324T000000Z",
            "20130524T240000Z",
            "20130524 000000Z",
            "2013-05-24T00:00:00Z",
            "",
            "20130524T00000éZ",
        ] {
            assert_eq!(parse_amz_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn hex_round_trips() {
        let bytes = sha256(b"");
        assert_eq!(hex(&bytes), EMPTY_SHA256_HEX);
        assert_eq!(decode_hex32(EMPTY_SHA256_HEX.as_bytes()), Some(bytes));
        assert_eq!(decode_hex32(&EMPTY_SHA256_HEX.as_bytes()[1..]), None);
        assert_eq!(decode_hex32(&[b'g'; 64]), None);
    }
}
