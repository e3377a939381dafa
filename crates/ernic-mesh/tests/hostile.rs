//! A manager fed garbage: every malformed or foreign connection is refused or
//! closed, and the manager goes on admitting real workers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ernic_mesh::frame::{self, Header, Kind, NO_NODE, Writer};
use ernic_mesh::{Mesh, MeshConfig, Spec};

fn manager() -> Mesh {
    manager_beating(Duration::from_millis(100))
}

/// A manager with this heartbeat (long, for tests whose hand-made worker
/// answers none and must stay alive while the test runs).
fn manager_beating(heartbeat: Duration) -> Mesh {
    Mesh::start(
        MeshConfig {
            heartbeat,
            handshake_timeout: Duration::from_millis(500),
            ..MeshConfig::new(Spec::Manager { port: 1 })
        }
        .with_port(0),
    )
    .unwrap()
}

trait WithPort {
    fn with_port(self, port: u16) -> Self;
}

impl WithPort for MeshConfig {
    fn with_port(mut self, port: u16) -> MeshConfig {
        self.spec = Spec::Manager { port };
        self
    }
}

/// Sends `bytes` on a fresh connection and returns whether the manager
/// closed it (reading to the end within a few seconds).
fn closed_after(m: &Mesh, bytes: &[u8]) -> bool {
    let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(bytes);
    let mut buf = Vec::new();
    match s.read_to_end(&mut buf) {
        Ok(_) => true,
        // Closed with unread bytes in its buffer: a reset.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        // Still open when the read timed out.
        Err(_) => false,
    }
}

/// Registers with the manager by hand (a worker that listens nowhere and
/// answers no heartbeat); returns the connection and the id it got.
fn register_by_hand(m: &Mesh, boot: u64) -> (TcpStream, u16) {
    let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body = Writer::default().u64(boot).u16(NO_NODE).u16(9).u16(0).0;
    s.write_all(&frame::frame(Kind::Register, NO_NODE, 0, &body))
        .unwrap();
    let mut hdr = [0u8; frame::HEADER_LEN];
    s.read_exact(&mut hdr).unwrap();
    let h = Header::parse(&hdr).unwrap();
    assert_eq!(h.kind, Kind::Welcome);
    let mut welcome = vec![0u8; h.len as usize];
    s.read_exact(&mut welcome).unwrap();
    (s, u16::from_be_bytes([welcome[0], welcome[1]]))
}

#[test]
fn foreign_and_malformed_connections_are_closed_and_the_manager_keeps_serving() {
    let m = manager();
    assert!(
        closed_after(&m, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
        "an HTTP client"
    );
    let mut wrong_version = frame::frame(Kind::Register, NO_NODE, 0, &[]);
    wrong_version[5] = 9;
    assert!(closed_after(&m, &wrong_version), "another protocol version");
    assert!(
        closed_after(&m, &frame::frame(Kind::Register, NO_NODE, 0, &[1, 2, 3])),
        "a short register body"
    );
    let mut huge = [0u8; frame::HEADER_LEN];
    Header {
        kind: Kind::Data,
        len: u32::MAX,
        src: 1,
        dst: NO_NODE,
    }
    .emit(&mut huge);
    assert!(closed_after(&m, &huge), "a length past the limit");
    assert!(
        closed_after(&m, &frame::frame(Kind::Data, 5, 0, &[0; 8])),
        "data before registering"
    );
    assert!(closed_after(&m, &[]), "a connection that says nothing");
    // A register whose GID count overruns the body.
    let body = Writer::default().u64(1).u16(NO_NODE).u16(0).u16(50).0;
    assert!(
        closed_after(&m, &frame::frame(Kind::Register, NO_NODE, 0, &body)),
        "a GID count past the body"
    );
    // Still serving: a real worker registers.
    let w = Mesh::start(MeshConfig::new(Spec::Worker {
        host: "127.0.0.1".into(),
        port: m.listen_addr().port(),
    }))
    .unwrap();
    assert_eq!(
        w.wait_registered(Duration::from_secs(10)).map(|n| n.0),
        Some(1)
    );
}

#[test]
fn a_registered_worker_that_sends_garbage_is_cut_off_alone() {
    let m = manager();
    let good = Mesh::start(MeshConfig::new(Spec::Worker {
        host: "127.0.0.1".into(),
        port: m.listen_addr().port(),
    }))
    .unwrap();
    assert!(good.wait_registered(Duration::from_secs(10)).is_some());
    // Register by hand, then send a frame with a bad magic.
    let (mut s, _) = register_by_hand(&m, 42);
    s.write_all(b"\x00\x01garbage garbage").unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest); // closed (after whatever was queued)
    // The good worker is unaffected.
    std::thread::sleep(Duration::from_millis(400));
    let alive: Vec<_> = m
        .peers()
        .into_iter()
        .filter(|(p, _)| p.alive)
        .map(|(p, _)| p.id.0)
        .collect();
    assert!(alive.contains(&1), "{alive:?}");
    assert!(!alive.contains(&2), "{alive:?}");
}

/// Registers by hand and reads frames until the manager's same-host offer:
/// its token and socket name.
fn offer_to_raw_worker(m: &Mesh) -> (TcpStream, [u8; 16], String) {
    let (mut s, _) = register_by_hand(m, 7);
    for _ in 0..20 {
        let mut hdr = [0u8; frame::HEADER_LEN];
        s.read_exact(&mut hdr).unwrap();
        let h = Header::parse(&hdr).unwrap();
        let mut body = vec![0u8; h.len as usize];
        s.read_exact(&mut body).unwrap();
        if h.kind == Kind::SameHost {
            let token: [u8; 16] = body[..16].try_into().unwrap();
            let name = String::from_utf8(body[16..].to_vec()).unwrap();
            return (s, token, name);
        }
    }
    panic!("no same-host offer");
}

/// Presents a proof on the manager's same-host socket; returns its verdict.
fn prove(name: &str, token: &[u8; 16], addr: u64) -> u8 {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};
    let mut u = UnixStream::connect_addr(&SocketAddr::from_abstract_name(name).unwrap()).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    u.write_all(token).unwrap();
    u.write_all(&addr.to_le_bytes()).unwrap();
    let mut verdict = [9u8; 1];
    u.read_exact(&mut verdict).unwrap();
    verdict[0]
}

#[test]
fn same_host_proofs_that_do_not_hold_are_refused() {
    use ernic_core::{NodeId, PeerReadError, PeerRun, Remote};
    let m = manager_beating(Duration::from_secs(30));
    let (_s, token, name) = offer_to_raw_worker(&m);
    let held = Box::new(token);
    let at = held.as_ptr() as u64;
    let mut wrong = token;
    wrong[0] ^= 1;
    assert_eq!(
        prove(&name, &wrong, at),
        0,
        "a token that names no connection"
    );
    let mut other = Box::new(token);
    other[15] ^= 0x80;
    assert_eq!(
        prove(&name, &token, other.as_ptr() as u64),
        0,
        "the token is not where the prover says"
    );
    assert_eq!(
        prove(&name, &token, 8),
        0,
        "an address the prover does not have"
    );
    // Unproved: the node's references are not read.
    let c = m.carrier();
    let mut dst = [0u8; 16];
    let run = PeerRun {
        remote: at,
        local: std::ptr::NonNull::new(dst.as_mut_ptr()).unwrap(),
        len: 16,
    };
    // SAFETY: `dst` is valid for writes of its 16 bytes.
    #[allow(unsafe_code)]
    let r = unsafe { c.read_peer(NodeId(1), &[run]) };
    assert_eq!(r, Err(PeerReadError::NotProved));
    assert!(!m.same_host(NodeId(1)).read_by_me);
    // A socket that says nothing holds up no one, and the true proof holds
    // once only.
    let _mute = {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixStream};
        UnixStream::connect_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap()
    };
    assert_eq!(prove(&name, &token, at), 1);
    assert!(m.same_host(NodeId(1)).read_by_me);
    // SAFETY: as above.
    #[allow(unsafe_code)]
    let r = unsafe { c.read_peer(NodeId(1), &[run]) };
    assert_eq!(r, Ok(()));
    assert_eq!(&dst, &token);
    assert_eq!(prove(&name, &token, at), 0, "a second proof is refused");
    drop(other);
}

#[test]
fn a_reference_relayed_by_the_manager_is_dropped() {
    let m = manager_beating(Duration::from_secs(30));
    let b = Mesh::start(MeshConfig::new(Spec::Worker {
        host: "127.0.0.1".into(),
        port: m.listen_addr().port(),
    }))
    .unwrap();
    let b_id = b.wait_registered(Duration::from_secs(10)).unwrap().0;
    // A worker by hand: its frames to B go through the manager.
    let (mut s, a_id) = register_by_hand(&m, 3);
    let data = |flags: u8, tag: u8| {
        let mut msg = vec![0u8; ernic_core::wire::HEADER_LEN];
        msg[1] = flags;
        msg[2] = tag;
        frame::frame(Kind::Data, a_id, b_id, &msg)
    };
    s.write_all(&data(ernic_core::wire::flags::BY_REF, 1))
        .unwrap();
    s.write_all(&data(0, 2)).unwrap();
    // The plain message arrives; the reference never does.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.is_empty() && std::time::Instant::now() < end {
        while let Some(msg) = b.pop() {
            assert_eq!(msg.from.0, a_id);
            got.push(msg.buf[msg.start + 2]);
            b.release(msg.buf);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    while let Some(msg) = b.pop() {
        got.push(msg.buf[msg.start + 2]);
    }
    assert_eq!(got, vec![2]);
}

#[test]
fn an_offer_naming_a_foreign_socket_is_refused_and_silent_provers_are_bounded() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
    let m = manager_beating(Duration::from_secs(30));
    // A peer that offers some other local socket: the manager never
    // connects to it, and cuts the peer off.
    let bait_name = format!("not-ernic-{}", std::process::id());
    let bait =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(&bait_name).unwrap()).unwrap();
    bait.set_nonblocking(true).unwrap();
    let (mut s, _token, name) = offer_to_raw_worker(&m);
    let body = Writer::default().u64(0).u64(0).text(&bait_name).0;
    s.write_all(&frame::frame(Kind::SameHost, 1, 0, &body))
        .unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        bait.accept().is_err(),
        "the manager connected to a foreign socket"
    );

    // Local processes that connect and say nothing: past 16 at once, the
    // rest are closed at once; when they go, proofs are checked again.
    let silent: Vec<UnixStream> = (0..24)
        .map(|_| UnixStream::connect_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let closed = silent
        .iter()
        .filter(|u| {
            u.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            matches!((&**u).read(&mut [0u8; 1]), Ok(0))
        })
        .count();
    assert!(
        closed >= 8,
        "only {closed} of 24 silent connections were closed at once"
    );
    drop(silent);
    // The checks of the silent ones end (at the latest when they time out,
    // 500 ms here) and room returns.
    std::thread::sleep(Duration::from_millis(700));
    let (_s2, token, name) = offer_to_raw_worker(&m);
    let held = Box::new(token);
    assert_eq!(prove(&name, &token, held.as_ptr() as u64), 1);
}
