//! The S3 object API over a real socket: what S3 documents for PutObject,
//! GetObject (whole, ranged, conditional), HeadObject, DeleteObject,
//! DeleteObjects, CopyObject and the errors, checked byte for byte.

mod common;

use common::{client, pattern, req, start};
use md5::{Digest, Md5};

fn md5_hex(b: &[u8]) -> String {
    Md5::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn put_get_head_delete_round_trip() {
    let s = start(true, None);
    let mut c = client(&s, true);
    assert_eq!(req(&mut c, "PUT", "/bkt", "", &[], b"").status, 200);
    let data = pattern(3 << 20, 1);
    let put = req(
        &mut c,
        "PUT",
        "/bkt/dir/obj.bin",
        "",
        &[
            ("content-type", "application/x-test"),
            ("x-amz-meta-colour", "blue"),
            ("cache-control", "no-cache"),
        ],
        &data,
    );
    assert_eq!(put.status, 200, "{}", put.text());
    let etag = format!("\"{}\"", md5_hex(&data));
    assert_eq!(put.header("etag"), Some(etag.as_str()));

    let get = req(&mut c, "GET", "/bkt/dir/obj.bin", "", &[], b"");
    assert_eq!(get.status, 200);
    assert!(get.body == data, "GET returned other bytes");
    assert_eq!(get.header("etag"), Some(etag.as_str()));
    assert_eq!(get.header("content-type"), Some("application/x-test"));
    assert_eq!(get.header("x-amz-meta-colour"), Some("blue"));
    assert_eq!(get.header("cache-control"), Some("no-cache"));
    assert_eq!(get.header("accept-ranges"), Some("bytes"));
    assert!(
        get.header("last-modified")
            .is_some_and(|d| d.ends_with(" GMT"))
    );

    let head = req(&mut c, "HEAD", "/bkt/dir/obj.bin", "", &[], b"");
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("3145728"));
    assert!(head.body.is_empty());

    assert_eq!(
        req(&mut c, "DELETE", "/bkt/dir/obj.bin", "", &[], b"").status,
        204
    );
    let gone = req(&mut c, "GET", "/bkt/dir/obj.bin", "", &[], b"");
    assert_eq!(
        (gone.status, gone.code().as_deref()),
        (404, Some("NoSuchKey"))
    );
    // Deleting what is not there is still 204, as S3 answers.
    assert_eq!(
        req(&mut c, "DELETE", "/bkt/dir/obj.bin", "", &[], b"").status,
        204
    );
    let nb = req(&mut c, "GET", "/nobucket/x", "", &[], b"");
    assert_eq!(
        (nb.status, nb.code().as_deref()),
        (404, Some("NoSuchBucket"))
    );
}

#[test]
fn ranges_give_206_and_416() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/rng", "", &[], b"");
    let data = pattern(1000, 2);
    assert_eq!(req(&mut c, "PUT", "/rng/k", "", &[], &data).status, 200);
    for (range, first, last) in [
        ("bytes=0-99", 0, 99),
        ("bytes=900-", 900, 999),
        ("bytes=-10", 990, 999),
        ("bytes=990-5000", 990, 999),
    ] {
        let g = req(&mut c, "GET", "/rng/k", "", &[("range", range)], b"");
        assert_eq!(g.status, 206, "{range}");
        assert_eq!(g.body, &data[first..=last], "{range}");
        let cr = format!("bytes {first}-{last}/1000");
        assert_eq!(g.header("content-range"), Some(cr.as_str()), "{range}");
    }
    let bad = req(
        &mut c,
        "GET",
        "/rng/k",
        "",
        &[("range", "bytes=1000-")],
        b"",
    );
    assert_eq!(
        (bad.status, bad.code().as_deref()),
        (416, Some("InvalidRange"))
    );
    assert_eq!(bad.header("content-range"), Some("bytes */1000"));
    // A range the server does not understand is ignored (RFC 9110 14.2).
    let whole = req(&mut c, "GET", "/rng/k", "", &[("range", "items=1-2")], b"");
    assert_eq!((whole.status, whole.body.len()), (200, 1000));
}

#[test]
fn conditional_requests() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/cnd", "", &[], b"");
    let put = req(&mut c, "PUT", "/cnd/k", "", &[], b"hello");
    let etag = put.header("etag").unwrap().to_string();
    assert_eq!(etag, "\"5d41402abc4b2a76b9719d911017c592\"");
    let st = |c: &mut _, h: &[(&str, &str)]| req(c, "GET", "/cnd/k", "", h, b"").status;
    assert_eq!(st(&mut c, &[("if-match", &etag)]), 200);
    assert_eq!(st(&mut c, &[("if-match", "\"other\"")]), 412);
    assert_eq!(st(&mut c, &[("if-none-match", &etag)]), 304);
    assert_eq!(st(&mut c, &[("if-none-match", "\"other\"")]), 200);
    assert_eq!(
        st(
            &mut c,
            &[("if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT")]
        ),
        200
    );
    assert_eq!(
        st(
            &mut c,
            &[("if-modified-since", "Fri, 01 Jan 2100 00:00:00 GMT")]
        ),
        304
    );
    assert_eq!(
        st(
            &mut c,
            &[("if-unmodified-since", "Sun, 06 Nov 1994 08:49:37 GMT")]
        ),
        412
    );
    // If-Match holding wins over If-Unmodified-Since failing (RFC 9110 13.2.2).
    assert_eq!(
        st(
            &mut c,
            &[
                ("if-match", &etag),
                ("if-unmodified-since", "Sun, 06 Nov 1994 08:49:37 GMT")
            ]
        ),
        200
    );
    // If-None-Match failing wins over If-Modified-Since holding.
    assert_eq!(
        st(
            &mut c,
            &[
                ("if-none-match", &etag),
                ("if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT")
            ]
        ),
        304
    );
    // A conditional PUT.
    assert_eq!(
        req(&mut c, "PUT", "/cnd/k", "", &[("if-none-match", "*")], b"x").status,
        412
    );
    assert_eq!(
        req(
            &mut c,
            "PUT",
            "/cnd/new",
            "",
            &[("if-none-match", "*")],
            b"x"
        )
        .status,
        200
    );
}

#[test]
fn content_md5_and_checksums_are_checked() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/md5", "", &[], b"");
    // md5("hello") in base64.
    let ok = req(
        &mut c,
        "PUT",
        "/md5/k",
        "",
        &[("content-md5", "XUFAKrxLKna5cZ2REBfFkg==")],
        b"hello",
    );
    assert_eq!(ok.status, 200);
    let bad = req(
        &mut c,
        "PUT",
        "/md5/k2",
        "",
        &[("content-md5", "XUFAKrxLKna5cZ2REBfFkg==")],
        b"jello",
    );
    assert_eq!(
        (bad.status, bad.code().as_deref()),
        (400, Some("BadDigest"))
    );
    assert_eq!(
        req(&mut c, "GET", "/md5/k2", "", &[], b"").status,
        404,
        "a bad body must store nothing"
    );
    // crc32("hello") = 0x3610a686.
    let crc = req(
        &mut c,
        "PUT",
        "/md5/c",
        "",
        &[("x-amz-checksum-crc32", "NhCmhg==")],
        b"hello",
    );
    assert_eq!(crc.status, 200, "{}", crc.text());
    assert_eq!(crc.header("x-amz-checksum-crc32"), Some("NhCmhg=="));
    let badcrc = req(
        &mut c,
        "PUT",
        "/md5/c2",
        "",
        &[("x-amz-checksum-crc32", "AAAAAA==")],
        b"hello",
    );
    assert_eq!(
        (badcrc.status, badcrc.code().as_deref()),
        (400, Some("BadDigest"))
    );
    let g = req(
        &mut c,
        "GET",
        "/md5/c",
        "",
        &[("x-amz-checksum-mode", "ENABLED")],
        b"",
    );
    assert_eq!(g.header("x-amz-checksum-crc32"), Some("NhCmhg=="));
}

#[test]
fn copy_and_multi_delete() {
    let s = start(true, None);
    let mut c = client(&s, true);
    req(&mut c, "PUT", "/srcb", "", &[], b"");
    req(&mut c, "PUT", "/dstb", "", &[], b"");
    let data = pattern(100_000, 3);
    req(
        &mut c,
        "PUT",
        "/srcb/a",
        "",
        &[("x-amz-meta-k", "v"), ("content-type", "text/plain")],
        &data,
    );
    let cp = req(
        &mut c,
        "PUT",
        "/dstb/b",
        "",
        &[("x-amz-copy-source", "/srcb/a")],
        b"",
    );
    assert_eq!(cp.status, 200, "{}", cp.text());
    assert!(cp.text().contains("<CopyObjectResult"), "{}", cp.text());
    let g = req(&mut c, "GET", "/dstb/b", "", &[], b"");
    assert!(g.body == data);
    assert_eq!(g.header("x-amz-meta-k"), Some("v"));
    let rep = req(
        &mut c,
        "PUT",
        "/dstb/c",
        "",
        &[
            ("x-amz-copy-source", "srcb/a"),
            ("x-amz-metadata-directive", "REPLACE"),
            ("x-amz-meta-n", "w"),
        ],
        b"",
    );
    assert_eq!(rep.status, 200);
    let h = req(&mut c, "HEAD", "/dstb/c", "", &[], b"");
    assert_eq!(
        (h.header("x-amz-meta-k"), h.header("x-amz-meta-n")),
        (None, Some("w"))
    );
    let itself = req(
        &mut c,
        "PUT",
        "/srcb/a",
        "",
        &[("x-amz-copy-source", "/srcb/a")],
        b"",
    );
    assert_eq!(
        (itself.status, itself.code().as_deref()),
        (400, Some("InvalidRequest"))
    );
    let missing = req(
        &mut c,
        "PUT",
        "/dstb/d",
        "",
        &[("x-amz-copy-source", "/srcb/nope")],
        b"",
    );
    assert_eq!(missing.status, 404);

    let body = "<Delete><Object><Key>b</Key></Object><Object><Key>c</Key></Object><Object><Key>never</Key></Object></Delete>";
    let d = req(&mut c, "POST", "/dstb", "delete", &[], body.as_bytes());
    assert_eq!(d.status, 200, "{}", d.text());
    assert_eq!(d.text().matches("<Deleted>").count(), 3, "{}", d.text());
    assert_eq!(req(&mut c, "GET", "/dstb/b", "", &[], b"").status, 404);
    let quiet = "<Delete><Quiet>true</Quiet><Object><Key>x</Key></Object></Delete>";
    let q = req(&mut c, "POST", "/dstb", "delete", &[], quiet.as_bytes());
    assert!(!q.text().contains("<Deleted>"), "{}", q.text());
}

#[test]
fn keys_are_names_not_paths() {
    let s = start(false, None);
    let mut c = client(&s, false);
    req(&mut c, "PUT", "/trv", "", &[], b"");
    for key in [
        "..%2F..%2Fetc%2Fpasswd",
        "a/../b",
        "%2Fabs",
        "a//b",
        "sp%20ace",
        "%E2%9C%93",
    ] {
        let p = format!("/trv/{key}");
        assert_eq!(
            req(&mut c, "PUT", &p, "", &[], key.as_bytes()).status,
            200,
            "{key}"
        );
        assert_eq!(
            req(&mut c, "GET", &p, "", &[], b"").body,
            key.as_bytes(),
            "{key}"
        );
    }
    let long = "k".repeat(1025);
    let r = req(&mut c, "PUT", &format!("/trv/{long}"), "", &[], b"x");
    assert_eq!(
        (r.status, r.code().as_deref()),
        (400, Some("KeyTooLongError"))
    );
}
