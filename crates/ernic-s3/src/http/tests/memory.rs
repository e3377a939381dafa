//! Byte-exact exchanges over an in-memory stream: keep-alive, pipelining,
//! chunked decoding, `100 Continue`, HEAD, 204, the server's own headers.

use super::*;

fn echo_head(method: &str, target: &str, headers: usize, len: usize) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ndate: {DATE}\r\nx-method: {method}\r\nx-target: {target}\r\n\
x-headers: {headers}\r\nx-len: {len}\r\ncontent-length: {len}\r\n"
    )
}

#[test]
fn keep_alive_get_then_a_second_request() {
    let out = exchange(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b?q=1 HTTP/1.1\r\nHost: x\r\n\r\n");
    let want = format!(
        "{}\r\n{}\r\n",
        echo_head("GET", "/a", 1, 0),
        echo_head("GET", "/b?q=1", 1, 0)
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn pipelined_bodies_in_order() {
    let input = b"PUT /one HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloPOST /two HTTP/1.1\r\n\
Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n\
PUT /three HTTP/1.1\r\ncontent-length: 0\r\n\r\nGET /four HTTP/1.1\r\n\r\n";
    let out = exchange(input);
    let want = format!(
        "{}\r\nhello{}\r\nabcde{}\r\n{}\r\n",
        echo_head("PUT", "/one", 1, 5),
        echo_head("POST", "/two", 1, 5),
        echo_head("PUT", "/three", 1, 0),
        echo_head("GET", "/four", 0, 0),
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn chunked_with_extensions_and_trailers_decodes_byte_exact() {
    let input = b"PUT /c HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n\
5;name=value;other=\"q\"\r\nhello\r\n1A ; ext\r\n abcdefghijklmnopqrstuvwxy\r\n\
0;last\r\nx-amz-checksum-crc32: DUoRhQ==\r\nx-other: 1\r\n\r\nGET /next HTTP/1.1\r\n\r\n";
    let out = exchange(input);
    let r = parse_all(&out, &[]);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].body, b"hello abcdefghijklmnopqrstuvwxy");
    assert_eq!(r[1].header("x-target"), Some("/next"));
}

#[test]
fn expect_continue_is_sent_once_when_the_handler_reads() {
    let out = exchange(
        b"PUT /up HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-Continue\r\n\r\nabc\
GET /after HTTP/1.1\r\n\r\n",
    );
    let s = String::from_utf8(out).unwrap();
    let (cont, rest) = s.split_at(25);
    assert_eq!(cont, "HTTP/1.1 100 Continue\r\n\r\n");
    assert_eq!(
        rest,
        format!(
            "{}\r\nabc{}\r\n",
            echo_head("PUT", "/up", 2, 3),
            echo_head("GET", "/after", 0, 0)
        )
    );
    assert_eq!(s.matches("100 Continue").count(), 1);
}

#[test]
fn expect_continue_refused_unread_sends_no_continue_and_closes() {
    let out = exchange(
        b"PUT /refuse HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n\
GET /never HTTP/1.1\r\n\r\n",
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "HTTP/1.1 403 Forbidden\r\ndate: {DATE}\r\ncontent-length: 0\r\n\
connection: close\r\n\r\n"
        )
    );
}

#[test]
fn expect_continue_on_http10_or_an_empty_body_is_not_answered() {
    let out = exchange(
        b"PUT /a HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nhi\
PUT /b HTTP/1.1\r\nContent-Length: 0\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
    );
    let s = String::from_utf8(out).unwrap();
    assert!(!s.contains("100 Continue"), "{s}");
    // HTTP/1.0 without keep-alive: closed after the first.
    assert_eq!(parse_all(s.as_bytes(), &[]).len(), 1);
}

#[test]
fn head_has_a_length_and_no_body() {
    let out = exchange(b"HEAD /h HTTP/1.1\r\n\r\nGET /g HTTP/1.1\r\n\r\n");
    // The handler answered HEAD with no body, GET next.
    let want = format!(
        "{}\r\n{}\r\n",
        echo_head("HEAD", "/h", 0, 0),
        echo_head("GET", "/g", 0, 0)
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);
    // A HEAD answered with a Stream or Bytes gets its length, no bytes;
    // the next response starts right after the head.
    let out = exchange(b"HEAD /stream/5000 HTTP/1.1\r\n\r\nGET /g HTTP/1.1\r\n\r\n");
    let s = String::from_utf8(out).unwrap();
    let first = format!("HTTP/1.1 200 OK\r\ndate: {DATE}\r\ncontent-length: 5000\r\n\r\n");
    assert!(s.starts_with(&first), "{s}");
    assert!(s[first.len()..].starts_with("HTTP/1.1 200 OK\r\n"));
}

#[test]
fn no_content_has_no_length() {
    let out = exchange(b"GET /204 HTTP/1.1\r\n\r\n");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "HTTP/1.1 204 No Content\r\ndate: {DATE}\r\nx-method: GET\r\nx-target: /204\r\n\
x-headers: 0\r\nx-len: 0\r\n\r\n"
        )
    );
}

#[test]
fn the_server_adds_a_date() {
    let out = exchange(b"GET /auto-date HTTP/1.1\r\n\r\n");
    let r = &parse_all(&out, &[])[0];
    let date = r.header("date").expect("a Date");
    assert!(super::super::parse_http_date(date).is_some(), "{date}");
}

#[test]
fn connection_close_and_http10() {
    let out = exchange(
        b"GET /a HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
    );
    let r = parse_all(&out, &[]);
    assert_eq!(r.len(), 1);
    assert!(r[0].closes());
    let out = exchange(b"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n");
    let r = parse_all(&out, &[]);
    assert_eq!(r.len(), 1);
    assert!(r[0].closes());
    let out = exchange(b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n");
    let r = parse_all(&out, &[]);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].header("connection"), Some("keep-alive"));
    assert!(r[1].closes());
    let out = exchange(b"GET /close HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
    let r = parse_all(&out, &[]);
    assert_eq!(r.len(), 1);
    assert!(r[0].closes());
}

#[test]
fn leading_empty_lines_and_targets() {
    let out = exchange(
        b"\r\n\r\nGET http://host:9000/b/k?x=1 HTTP/1.1\r\n\r\nGET http://host?a HTTP/1.1\r\n\r\n\
GET HTTPS://host HTTP/1.1\r\n\r\nOPTIONS * HTTP/1.1\r\n\r\n",
    );
    let r = parse_all(&out, &[]);
    let targets: Vec<_> = r.iter().map(|r| r.header("x-target").unwrap()).collect();
    assert_eq!(targets, ["/b/k?x=1", "/?a", "/", "*"]);
}

#[test]
fn header_names_are_lower_case_and_values_trimmed() {
    struct Look;
    impl Handler for Look {
        fn handle(&self, request: &Request, _: &mut dyn Body) -> Response {
            assert_eq!(request.header("x-amz-meta-a"), Some("v  w"));
            assert_eq!(request.headers[0].name, "x-amz-meta-a");
            assert_eq!(request.minor_version, 1);
            Response::new(200)
        }
        fn error(&self, _: &HttpError) -> Response {
            Response::new(400)
        }
    }
    let mut mem = Mem::new(b"GET / HTTP/1.1\r\nX-Amz-Meta-A: \t v  w \t\r\n\r\n", 7);
    serve_connection(&mut mem, &Look, &limits()).unwrap();
    assert!(mem.output.starts_with(b"HTTP/1.1 200 OK\r\n"));
}

#[test]
fn small_unread_body_is_drained_and_the_connection_kept() {
    let out = exchange(
        b"PUT /noread HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789\
PUT /noread HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n\
GET /next HTTP/1.1\r\n\r\n",
    );
    let r = parse_all(&out, &[]);
    assert_eq!(r.len(), 3);
    assert!(!r[0].closes() && !r[1].closes());
    assert_eq!(r[2].header("x-target"), Some("/next"));
}

#[test]
fn large_unread_body_closes() {
    let mut input = b"PUT /noread HTTP/1.1\r\nContent-Length: 100000\r\n\r\n".to_vec();
    input.extend(std::iter::repeat_n(b'z', 100_000));
    input.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");
    let r = parse_all(&exchange(&input), &[]);
    assert_eq!(r.len(), 1);
    assert!(r[0].closes());
    assert_eq!(r[0].body, b"unread");
    // Chunked: drained up to the limit, then closed.
    let mut input = b"PUT /noread HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..20 {
        input.extend_from_slice(b"1000\r\n");
        input.extend(std::iter::repeat_n(b'z', 0x1000));
        input.extend_from_slice(b"\r\n");
    }
    input.extend_from_slice(b"0\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
    let r = parse_all(&exchange(&input), &[]);
    assert_eq!(r.len(), 1);
    assert!(r[0].closes());
}

#[test]
fn a_stream_that_ends_early_closes() {
    let out = exchange(b"GET /short HTTP/1.1\r\n\r\nGET /next HTTP/1.1\r\n\r\n");
    let head = format!("HTTP/1.1 200 OK\r\ndate: {DATE}\r\ncontent-length: 100\r\n\r\n");
    assert_eq!(out.len(), head.len() + 10);
    assert!(out.starts_with(head.as_bytes()));
}

#[test]
fn large_body_read_straight_and_exact() {
    // 300 KiB, bigger than any buffer, then a pipelined request.
    let body: Vec<u8> = (0..300 * 1024u64).map(pattern).collect();
    let mut input = format!(
        "PUT /big HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    input.extend_from_slice(&body);
    input.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");
    let r = parse_all(&exchange(&input), &[]);
    assert_eq!(r.len(), 2);
    assert!(r[0].body == body);
    assert_eq!(r[1].header("x-target"), Some("/next"));
}

#[test]
fn split_reads_give_the_same_bytes() {
    let input = b"\r\nPUT /one HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloPOST /two HTTP/1.1\r\n\
Transfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n2\r\nde\r\n0\r\nt: 1\r\nu: 2\r\n\r\n\
PUT /three HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nxyHEAD /four HTTP/1.1\r\n\r\n\
PUT /noread HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /six HTTP/1.1\r\n\r\n";
    let whole = exchange(input);
    // Six answers and a 100 Continue (the fifth, HEAD, has no body).
    let r = parse_all(&whole, &[false, false, false, false, true]);
    assert_eq!(r.len(), 6 + 1);
    assert_eq!(r[6].header("x-target"), Some("/six"));
    for step in [1, 2, 3, 5, 13, 64] {
        assert_eq!(trickle(input, &limits(), step).0, whole, "step {step}");
    }
}

#[test]
fn the_server_owns_length_and_connection() {
    struct Own;
    impl Handler for Own {
        fn handle(&self, request: &Request, body: &mut dyn Body) -> Response {
            let mut r = Response::new(200);
            r.headers = vec![
                ("date".into(), DATE.into()),
                ("content-length".into(), "999".into()),
                ("connection".into(), "upgrade".into()),
                ("x-split".into(), "a\r\nx-evil: 1".into()),
                ("bad name".into(), "v".into()),
                (
                    "x-body".into(),
                    format!("{:?} {}", body.declared_len(), body.expects_continue()),
                ),
            ];
            r.body = match request.target.as_str() {
                "/length" => ResponseBody::Length(7),
                _ => ResponseBody::Bytes(b"abc".to_vec()),
            };
            r
        }
        fn error(&self, e: &HttpError) -> Response {
            Response::new(e.status())
        }
    }
    let mut mem = Mem::new(
        b"GET /bytes HTTP/1.1\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n\
GET /length HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        usize::MAX,
    );
    serve_connection(&mut mem, &Own, &limits()).unwrap();
    assert_eq!(
        String::from_utf8(mem.output).unwrap(),
        format!(
            "HTTP/1.1 200 OK\r\ndate: {DATE}\r\nx-body: Some(0) true\r\ncontent-length: 3\r\n\r\nabc\
HTTP/1.1 200 OK\r\ndate: {DATE}\r\ncontent-length: 999\r\nx-body: None false\r\n\r\n"
        )
    );
}
