//! The S3 store's SigV4 and SigV2 verifiers and aws-chunked decoder (`ernic_s3::sigv4`, `sigv2`)
//! on client bytes. The input is read as a request (a method line, a path
//! line, a query line, then `name: value` header lines up to a blank line)
//! checked against one configured key at a time taken from the first eight
//! bytes; what follows the blank line is fed, in slices whose sizes come
//! from the input, to an unsigned-trailer chunk decoder declaring a length
//! from the input. Invariants: nothing panics; the decoder never hands on
//! more than it declared, and counts no more than it handed on.
#![no_main]

use ernic_s3::sigv4::chunked::ChunkDecoder;
use ernic_s3::sigv4::{Request, verify};
use libfuzzer_sys::fuzz_target;

const CREDS: [(&str, &str); 1] = [(
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
)];

fuzz_target!(|data: &[u8]| {
    let (now, rest) = match data.split_first_chunk::<8>() {
        Some((n, r)) => (u64::from_le_bytes(*n), r),
        None => (0, data),
    };
    let text = String::from_utf8_lossy(rest);
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let method = lines.next().unwrap_or("");
    let path = lines.next().unwrap_or("");
    let query = lines.next().unwrap_or("");
    let headers: Vec<(&str, &str)> = lines
        .take(64)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim(), v.trim()))
        .collect();
    let req = Request {
        method,
        raw_path: path,
        raw_query: query,
        headers: &headers,
    };
    let _ = verify(&req, &CREDS[..], now);
    // The same head as SigV2 (header and query forms), path- and
    // virtual-hosted-style.
    let v2 = ernic_s3::sigv2::Request {
        method,
        raw_path: path,
        raw_query: query,
        vhost_bucket: (now & 1 == 1).then_some("bkt"),
        headers: &headers,
    };
    let _ = ernic_s3::sigv2::is_v2(&v2);
    let _ = ernic_s3::sigv2::verify(&v2, &CREDS[..], now);

    let body = body.as_bytes();
    let declared = now >> 40;
    let mut dec = ChunkDecoder::new_unsigned_trailer(declared);
    let mut handed = 0u64;
    let mut at = 0;
    let mut step = 1 + (now as usize & 0xff);
    while at < body.len() {
        let end = (at + step).min(body.len());
        match dec.feed(&body[at..end], &mut |d: &[u8]| handed += d.len() as u64) {
            Ok(n) => at += n.max(1),
            Err(_) => break,
        }
        step = step * 3 % 4096 + 1;
    }
    let _ = dec.finish();
    assert!(
        handed <= declared,
        "handed on {handed} of {declared} declared"
    );
    // Whole chunks are counted; the one in progress has handed on already.
    assert!(dec.decoded_len() <= handed);
});
