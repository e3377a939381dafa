//! Authentication and hostile requests over a real socket: a wrong secret,
//! an unknown key and an unsigned request are refused as S3 refuses them;
//! malformed HTTP and absurd lengths get an error and the server keeps
//! serving.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{AK, client, req, start, start_with};
use ernic_s3::client::Client;
use ernic_s3::sigv4::sign::Signer;

fn signer(secret: &str, ak: &str) -> Option<Signer> {
    Some(Signer {
        access_key: ak.into(),
        secret: secret.into(),
        region: "us-east-1".into(),
    })
}

#[test]
fn wrong_secret_unknown_key_and_unsigned_are_refused() {
    let s = start(true, None);
    let mut good = client(&s, true);
    let made = req(&mut good, "PUT", "/auth", "", &[], b"");
    assert_eq!(made.status, 200, "{}", made.text());
    let mut wrong = Client::new(&s.addr, signer("not-the-secret", AK));
    let r = req(&mut wrong, "PUT", "/auth/k", "", &[], b"data");
    assert_eq!(
        (r.status, r.code().as_deref()),
        (403, Some("SignatureDoesNotMatch"))
    );
    let mut unknown = Client::new(&s.addr, signer("x", "AKIDUNKNOWN"));
    let r = req(&mut unknown, "GET", "/auth", "", &[], b"");
    assert_eq!(
        (r.status, r.code().as_deref()),
        (403, Some("InvalidAccessKeyId"))
    );
    let mut anon = client(&s, false);
    let r = req(&mut anon, "GET", "/auth", "", &[], b"");
    assert_eq!((r.status, r.code().as_deref()), (403, Some("AccessDenied")));
    assert_eq!(
        req(&mut good, "GET", "/auth/k", "", &[], b"").status,
        404,
        "the refused PUT stored nothing"
    );
}

#[test]
fn anonymous_beside_credentials_when_configured() {
    let s = start_with(true, true, None, 1 << 20);
    let mut anon = client(&s, false);
    assert_eq!(req(&mut anon, "PUT", "/open", "", &[], b"").status, 200);
    // A signed request is still checked.
    let mut wrong = Client::new(&s.addr, signer("bad", AK));
    assert_eq!(req(&mut wrong, "GET", "/open", "", &[], b"").status, 403);
}

fn raw(addr: &str, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn hostile_http_gets_errors_and_the_server_keeps_serving() {
    let s = start(false, None);
    let cases: &[&[u8]] = &[
        b"GARBAGE\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000000\r\n\r\n",
        b"PUT /b/k HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET /b/%ZZ HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET http://x/ HTTP/2.0\r\n\r\n",
    ];
    for case in cases {
        let answer = raw(&s.addr, case);
        let status: u16 = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        assert!(
            (400..600).contains(&status),
            "{:?} got {answer:?}",
            String::from_utf8_lossy(case)
        );
        assert!(
            answer.contains("<Code>"),
            "an S3 error body for {:?}: {answer}",
            String::from_utf8_lossy(case)
        );
    }
    let huge_header = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(100_000)
    );
    assert!(raw(&s.addr, huge_header.as_bytes()).starts_with("HTTP/1.1 431"));
    let mut c = client(&s, false);
    assert_eq!(
        req(&mut c, "PUT", "/after", "", &[], b"").status,
        200,
        "still serving"
    );
}

#[test]
fn an_aws_chunked_body_with_a_bad_chunk_signature_stores_nothing() {
    let s = start(true, None);
    let mut good = client(&s, true);
    assert_eq!(req(&mut good, "PUT", "/chunky", "", &[], b"").status, 200);
    let amz_date = ernic_s3::sigv4::canonical::format_amz_date(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    );
    let body = format!(
        "5;chunk-signature={}\r\nhello\r\n0;chunk-signature={}\r\n\r\n",
        "0".repeat(64),
        "0".repeat(64)
    );
    let len = body.len().to_string();
    let headers = [
        ("host", s.addr.as_str()),
        ("x-amz-date", amz_date.as_str()),
        ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        ("x-amz-decoded-content-length", "5"),
        ("content-encoding", "aws-chunked"),
        ("content-length", len.as_str()),
    ];
    let auth = signer(common::SK, AK)
        .unwrap()
        .authorization("PUT", "/chunky/k", "", &headers, &amz_date)
        .unwrap();
    let mut raw_req = String::from("PUT /chunky/k HTTP/1.1\r\n");
    for (n, v) in headers {
        raw_req.push_str(&format!("{n}: {v}\r\n"));
    }
    raw_req.push_str(&format!(
        "authorization: {auth}\r\nconnection: close\r\n\r\n{body}"
    ));
    let answer = raw(&s.addr, raw_req.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains("<Code>SignatureDoesNotMatch</Code>"),
        "{answer}"
    );
    assert_eq!(
        req(&mut good, "GET", "/chunky/k", "", &[], b"").status,
        404,
        "nothing was stored"
    );
}
