//! Hostile input: every malformed head or body framing gets its status
//! and a closed connection, in memory (exactly one answer, nothing after)
//! and on a real socket (after which a fresh connection still works).

use super::*;

/// (what, the connection's bytes, the status it must get).
fn cases() -> Vec<(&'static str, Vec<u8>, u16)> {
    let mut big_head = b"GET / HTTP/1.1\r\nx-big: ".to_vec();
    big_head.extend(std::iter::repeat_n(b'a', 5000));
    big_head.extend_from_slice(b"\r\n\r\n");
    let mut many = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..20 {
        many.extend_from_slice(format!("x-h{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let te = |chunks: &str| {
        format!("PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{chunks}").into_bytes()
    };
    let cl = |v: &str| format!("PUT /c HTTP/1.1\r\nContent-Length: {v}\r\n\r\nabc").into_bytes();
    vec![
        ("bad chunk size", te("zz\r\nabc\r\n0\r\n\r\n"), 400),
        ("chunk size overflow", te("1ffffffffffffffff\r\nabc\r\n"), 400),
        ("no CRLF after chunk data", te("3\r\nabcXY0\r\n\r\n"), 400),
        (
            "chunks past the body limit",
            te(&format!("80000\r\n{}\r\n80001\r\n", "a".repeat(0x80000))),
            413,
        ),
        ("chunk over the body limit", te("100001\r\n"), 413),
        (
            "endless chunk-size line",
            te(&format!("1;{}", "e".repeat(6000))),
            400,
        ),
        (
            "trailers past the head limit",
            te(&format!("0\r\nx: {}\r\n\r\n", "t".repeat(5000))),
            431,
        ),
        (
            "Content-Length with Transfer-Encoding",
            b"PUT /c HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                .to_vec(),
            400,
        ),
        (
            "gzip coding",
            b"PUT /c HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n".to_vec(),
            400,
        ),
        (
            "chunked twice",
            b"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                .to_vec(),
            400,
        ),
        ("Content-Length abc", cl("abc"), 400),
        ("Content-Length -1", cl("-1"), 400),
        ("Content-Length +3", cl("+3"), 400),
        ("Content-Length empty", cl(""), 400),
        ("Content-Length overflow", cl("99999999999999999999999"), 400),
        (
            "two Content-Lengths",
            b"PUT /c HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd".to_vec(),
            400,
        ),
        ("a Content-Length list that differs", cl("3, 4"), 400),
        ("Content-Length over the limit", cl("1048577"), 413),
        (
            "Content-Length over the limit with Expect",
            b"PUT /c HTTP/1.1\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n".to_vec(),
            413,
        ),
        ("head over the limit", big_head, 431),
        ("too many headers", many, 431),
        ("HTTP/2.0", b"GET / HTTP/2.0\r\n\r\n".to_vec(), 505),
        ("HTTP/1.2", b"GET / HTTP/1.2\r\n\r\n".to_vec(), 505),
        ("garbage", b"\x00\x01\x02\xff garbage\r\n\r\n".to_vec(), 400),
        ("no version", b"GET /\r\n\r\n".to_vec(), 400),
        ("bad target", b"GET foo HTTP/1.1\r\n\r\n".to_vec(), 400),
        ("* for GET", b"GET * HTTP/1.1\r\n\r\n".to_vec(), 400),
        ("no authority", b"GET http:///x HTTP/1.1\r\n\r\n".to_vec(), 400),
        (
            "non-UTF-8 value",
            b"GET / HTTP/1.1\r\nx-a: \xff\xfe\r\n\r\n".to_vec(),
            400,
        ),
        (
            "endless empty lines",
            b"\r\n".repeat(3000),
            431,
        ),
    ]
}

#[test]
fn each_case_gets_its_status_and_a_close_in_memory() {
    for (what, mut input, status) in cases() {
        // A request after it that must never be answered.
        input.extend_from_slice(b"GET /never HTTP/1.1\r\n\r\n");
        let out = exchange(&input);
        // Split reads answer the same.
        assert_eq!(trickle(&input, &limits(), 3).0, out, "{what}");
        let s = String::from_utf8_lossy(&out);
        assert!(!s.contains("100 Continue"), "{what}: {s}");
        let r = parse_all(&out, &[]);
        assert_eq!(r.len(), 1, "{what}: {s}");
        assert_eq!(r[0].status, status, "{what}: {s}");
        assert!(r[0].closes(), "{what}");
    }
}

#[test]
fn each_case_over_a_socket_and_the_server_survives() {
    let (server, _) = server(limits(), 8);
    let addr = server.local_addr();
    for (what, input, status) in cases() {
        let mut s = connect(addr);
        s.write_all(&input).unwrap();
        let r = read_responses(&mut s, 1, &[], true);
        assert_eq!(r[0].status, status, "{what}");
        still_serves(addr);
    }
    server.shutdown();
}

#[test]
fn eof_mid_body_reaches_the_handler_and_the_server_survives() {
    let (errors, output) = {
        let (out, errors) = exchange_with(
            b"PUT /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",
            &limits(),
        );
        (errors, out)
    };
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("the body ended early"), "{errors:?}");
    let r = parse_all(&output, &[]);
    assert_eq!(r[0].status, 400);
    assert!(r[0].closes());
    // Chunked, cut in a size line, in data, and before the last CRLF.
    for cut in ["5\r\nhel", "5", "5\r\nhello\r\n0\r\n"] {
        let input = format!("PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{cut}");
        let (out, errors) = exchange_with(input.as_bytes(), &limits());
        assert_eq!(errors.len(), 1, "{cut:?}");
        assert_eq!(parse_all(&out, &[])[0].status, 400);
    }
    // Over a socket: the client half-closes mid-body.
    let (server, echo) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"PUT /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let r = read_responses(&mut s, 1, &[], true);
    assert_eq!(r[0].status, 400);
    assert_eq!(echo.errors.lock().unwrap().len(), 1);
    still_serves(server.local_addr());
    server.shutdown();
}

#[test]
fn a_head_cut_short_ends_quietly() {
    for input in [&b""[..], b"\r\n", b"GET / HTTP/1.1\r\nHost"] {
        assert!(exchange(input).is_empty(), "{input:?}");
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    use proptest::prelude::*;
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 256,
        ..Default::default()
    });
    let seeds: Vec<Vec<u8>> = cases().into_iter().map(|c| c.1).collect();
    let strategy = (
        proptest::sample::select(seeds),
        proptest::collection::vec(any::<u8>(), 0..64),
        any::<usize>(),
    );
    runner
        .run(&strategy, |(seed, noise, at)| {
            let mut input = seed.clone();
            let at = at % (input.len() + 1);
            input.splice(at..at, noise);
            let _ = exchange(&input);
            Ok(())
        })
        .unwrap();
}
