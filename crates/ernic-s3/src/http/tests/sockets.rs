//! Real sockets: a [`Server`] on 127.0.0.1 with the echo handler, driven
//! by `TcpStream`s as a client would.

use super::*;

#[test]
fn keep_alive_on_one_socket() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let r = read_responses(&mut s, 1, &[], false);
    assert_eq!(r[0].header("x-target"), Some("/a"));
    assert!(!r[0].closes());
    s.write_all(b"PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody")
        .unwrap();
    let r = read_responses(&mut s, 1, &[], false);
    assert_eq!(r[0].body, b"body");
    s.write_all(b"GET /c HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, &[], true);
    assert!(r[0].closes());
    server.shutdown();
}

#[test]
fn pipelined_in_one_write_answered_in_order() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(
        b"PUT /1 HTTP/1.1\r\nContent-Length: 3\r\n\r\none\
PUT /2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\ntwo\r\n0\r\nt: 1\r\n\r\n\
HEAD /3 HTTP/1.1\r\n\r\nGET /204 HTTP/1.1\r\n\r\n\
PUT /5 HTTP/1.1\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfive",
    )
    .unwrap();
    let r = read_responses(&mut s, 5, &[false, false, true], true);
    let bodies: Vec<&[u8]> = r.iter().map(|r| &r.body[..]).collect();
    assert_eq!(bodies, [&b"one"[..], b"two", b"", b"", b"five"]);
    assert_eq!(r[2].header("content-length"), Some("0"));
    assert_eq!(r[3].status, 204);
    assert_eq!(r[3].header("content-length"), None);
    server.shutdown();
}

#[test]
fn expect_continue_over_a_socket() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"PUT /up HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    // The client waits for 100 before it sends the body.
    let mut b = [0u8; 25];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"hello").unwrap();
    let r = read_responses(&mut s, 1, &[], false);
    assert_eq!(r[0].body, b"hello");
    // Refused without reading: no 100, and the connection closes.
    s.write_all(b"PUT /refuse HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, &[], true);
    assert_eq!(r[0].status, 403);
    assert!(r[0].closes());
    server.shutdown();
}

#[test]
fn http10_closes_after_one_response() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"GET /a HTTP/1.0\r\n\r\n").unwrap();
    let r = read_responses(&mut s, 1, &[], true);
    assert!(r[0].closes());
    server.shutdown();
}

#[test]
fn unread_bodies_drained_or_closed() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"PUT /noread HTTP/1.1\r\nContent-Length: 1000\r\n\r\n")
        .unwrap();
    s.write_all(&[b'q'; 1000]).unwrap();
    s.write_all(b"GET /next HTTP/1.1\r\n\r\n").unwrap();
    let r = read_responses(&mut s, 2, &[], false);
    assert_eq!(r[0].body, b"unread");
    assert_eq!(r[1].header("x-target"), Some("/next"));
    // Past max_drain_bytes: answered, then closed.
    s.write_all(b"PUT /noread HTTP/1.1\r\nContent-Length: 500000\r\n\r\n")
        .unwrap();
    let r = read_responses(&mut s, 1, &[], true);
    assert!(r[0].closes());
    still_serves(server.local_addr());
    server.shutdown();
}

#[test]
fn an_8_mib_stream_arrives_byte_exact() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    let n = 8u64 << 20;
    s.write_all(format!("GET /stream/{n} HTTP/1.1\r\n\r\nGET /after HTTP/1.1\r\n\r\n").as_bytes())
        .unwrap();
    let r = read_responses(&mut s, 2, &[], false);
    assert_eq!(r[0].body.len() as u64, n);
    assert!(
        r[0].body
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(i as u64))
    );
    assert_eq!(r[1].header("x-target"), Some("/after"));
    server.shutdown();
}

#[test]
fn a_large_upload_arrives_byte_exact() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    let body: Vec<u8> = (0..1u64 << 20).map(pattern).collect();
    let writer = {
        let mut s = s.try_clone().unwrap();
        let body = body.clone();
        std::thread::spawn(move || {
            s.write_all(
                format!("PUT /up HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(),
            )
            .unwrap();
            s.write_all(&body).unwrap();
        })
    };
    let r = read_responses(&mut s, 1, &[], false);
    writer.join().unwrap();
    assert!(r[0].body == body);
    server.shutdown();
}

#[test]
fn past_max_connections_is_503() {
    let (server, _) = server(limits(), 2);
    let addr = server.local_addr();
    // Two connections held open (each served once, so both are counted).
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = connect(addr);
        s.write_all(b"GET /a HTTP/1.1\r\n\r\n").unwrap();
        read_responses(&mut s, 1, &[], false);
        held.push(s);
    }
    let mut s = connect(addr);
    let mut b = Vec::new();
    s.read_to_end(&mut b).unwrap();
    assert_eq!(
        b,
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    // One closes: a new connection is served again (its thread leaves the
    // count when it sees the close, so allow it a bounded moment).
    drop(held.pop());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut s = connect(addr);
        s.write_all(b"GET /alive HTTP/1.1\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut b = Vec::new();
        s.read_to_end(&mut b).unwrap();
        if b.starts_with(b"HTTP/1.1 200") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never served again");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.shutdown();
}

#[test]
fn idle_connection_is_closed_after_the_timeout() {
    let mut l = limits();
    l.idle_timeout = Duration::from_millis(200);
    let (server, _) = server(l, 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"GET /a HTTP/1.1\r\n\r\n").unwrap();
    read_responses(&mut s, 1, &[], true);
    server.shutdown();
}

#[test]
fn shutdown_is_bounded_with_a_connection_open() {
    let (server, _) = server(limits(), 8);
    let mut s = connect(server.local_addr());
    s.write_all(b"GET /a HTTP/1.1\r\n\r\n").unwrap();
    read_responses(&mut s, 1, &[], false);
    let t = std::time::Instant::now();
    server.shutdown();
    assert!(t.elapsed() < Duration::from_secs(3));
    let mut b = [0u8; 1];
    assert_eq!(s.read(&mut b).unwrap_or(0), 0, "the socket was shut down");
}

#[test]
fn a_head_trickling_in_is_cut_off_at_the_idle_timeout() {
    let mut l = limits();
    l.idle_timeout = Duration::from_millis(300);
    let (server, _) = server(l, 8);
    let mut s = connect(server.local_addr());
    s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let t = std::time::Instant::now();
    s.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let mut b = [0u8; 64];
    loop {
        assert!(t.elapsed() < Duration::from_secs(5), "never cut off");
        // Each header line well inside the read timeout.
        if s.write_all(b"x-a: 1\r\n").is_err() {
            break;
        }
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(n) => panic!("an answer to half a head: {:?}", &b[..n]),
            // The 50 ms read timeout: still open.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break, // reset
        }
    }
    assert!(t.elapsed() >= Duration::from_millis(300));
    server.shutdown();
}
