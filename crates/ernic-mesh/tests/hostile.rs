//! A manager fed garbage: every malformed or foreign connection is refused or
//! closed, and the manager goes on admitting real workers. Strangers without
//! the mesh key, peers that drip bytes, floods of fake registrations and
//! nodes of an older protocol get no id and cost a bounded time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ernic_mesh::frame::{self, Header, Kind, NO_NODE, Writer};
use ernic_mesh::{Mesh, MeshConfig, MeshKey, Spec};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The first exchange of the handshake by hand (the `auth` module's
/// layout, restated here so the test pins the wire format): sends a nonce
/// and whether this side has a key, reads the answer, checks the
/// responder's proof when keyed, and returns both nonces.
fn auth_by_hand(
    s: &mut (impl Read + Write),
    key: Option<&[u8]>,
) -> Result<([u8; 16], [u8; 16]), String> {
    let nonce_i = [0x5a; 16];
    let body = Writer::default()
        .bytes(&nonce_i)
        .u8(u8::from(key.is_some()))
        .0;
    s.write_all(&frame::frame(Kind::Auth, NO_NODE, NO_NODE, &body))
        .map_err(|e| e.to_string())?;
    let (h, body) = read_any(s).map_err(|e| e.to_string())?;
    if h.kind == Kind::Refuse {
        return Err(String::from_utf8_lossy(&body[2..]).into_owned());
    }
    assert_eq!(h.kind, Kind::Auth);
    assert_eq!(body.len(), 16 + 1 + 32);
    let nonce_r: [u8; 16] = body[..16].try_into().unwrap();
    if let Some(k) = key {
        assert_eq!(body[16], 1, "the responder says it is keyed");
        let mut m = Hmac::<Sha256>::new_from_slice(k).unwrap();
        m.update(b"ernic-mesh 4 responder");
        m.update(&nonce_i);
        m.update(&nonce_r);
        m.verify_slice(&body[17..])
            .map_err(|_| "responder's proof".to_string())?;
    }
    Ok((nonce_i, nonce_r))
}

/// The initiator's last frame: `kind` with its proof (zeros without a key).
fn finish_by_hand(
    key: Option<&[u8]>,
    n: ([u8; 16], [u8; 16]),
    kind: Kind,
    payload: &[u8],
) -> Vec<u8> {
    let mac: [u8; 32] = match key {
        Some(k) => {
            let mut m = Hmac::<Sha256>::new_from_slice(k).unwrap();
            m.update(b"ernic-mesh 4 initiator");
            m.update(&n.0);
            m.update(&n.1);
            m.update(&[u8::from(kind)]);
            m.update(payload);
            m.finalize().into_bytes().into()
        }
        None => [0; 32],
    };
    frame::frame(
        kind,
        NO_NODE,
        0,
        &Writer::default().bytes(&mac).bytes(payload).0,
    )
}

/// Reads one frame of any kind.
fn read_any(s: &mut impl Read) -> std::io::Result<(Header, Vec<u8>)> {
    let mut hdr = [0u8; frame::HEADER_LEN];
    s.read_exact(&mut hdr)?;
    let h = Header::parse(&hdr).map_err(std::io::Error::other)?;
    let mut body = vec![0u8; h.len as usize];
    s.read_exact(&mut body)?;
    Ok((h, body))
}

const KEY: &[u8] = b"a mesh key for the tests, 32 b.";

fn key(k: &[u8]) -> Result<Option<MeshKey>, ernic_mesh::KeyError> {
    MeshKey::new(k, "test").map(Some)
}

fn keyed_manager(k: &[u8]) -> Mesh {
    Mesh::start(MeshConfig {
        key: key(k),
        handshake_timeout: Duration::from_millis(500),
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap()
}

fn worker_of(m: &Mesh, k: Option<&[u8]>) -> Mesh {
    Mesh::start(MeshConfig {
        key: k.map_or(Ok(None), key),
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(Spec::Worker {
            host: "127.0.0.1".into(),
            port: m.listen_addr().port(),
        })
    })
    .unwrap()
}

/// Waits until `f` holds, for at most 10 s.
fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

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
    register_keyed(m, boot, None)
}

/// [`register_by_hand`], proving `key`.
fn register_keyed(m: &Mesh, boot: u64, key: Option<&[u8]>) -> (TcpStream, u16) {
    let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = auth_by_hand(&mut s, key).unwrap();
    let body = Writer::default().u64(boot).u16(NO_NODE).u16(9).u16(0).0;
    s.write_all(&finish_by_hand(key, n, Kind::Register, &body))
        .unwrap();
    let mut hdr = [0u8; frame::HEADER_LEN];
    s.read_exact(&mut hdr).unwrap();
    let h = Header::parse(&hdr).unwrap();
    let mut welcome = vec![0u8; h.len as usize];
    s.read_exact(&mut welcome).unwrap();
    assert_eq!(
        h.kind,
        Kind::Welcome,
        "{}",
        String::from_utf8_lossy(&welcome)
    );
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
    // A register whose GID count overruns the body, or passes the limit.
    for n in [50, 257] {
        let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let nonces = auth_by_hand(&mut s, None).unwrap();
        let mut body = Writer::default().u64(1).u16(NO_NODE).u16(0).u16(n);
        if n > 256 {
            for _ in 0..n {
                body = body.gid(ernic_core::Gid([1; 16]));
            }
        }
        s.write_all(&finish_by_hand(None, nonces, Kind::Register, &body.0))
            .unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(
            rest.is_empty(),
            "{n} GIDs: closed with no welcome ({rest:?})"
        );
    }
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
    offer_keyed(m, None)
}

/// [`offer_to_raw_worker`], registered with `key`.
fn offer_keyed(m: &Mesh, key: Option<&[u8]>) -> (TcpStream, [u8; 16], String) {
    let (mut s, _) = register_keyed(m, 7, key);
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
    prove_keyed(name, token, addr, None, None).unwrap()
}

/// [`prove`], with `key` in the handshake and `mac_key` (if other) in the
/// proof; a refusal comes back as its text.
fn prove_keyed(
    name: &str,
    token: &[u8; 16],
    addr: u64,
    key: Option<&[u8]>,
    mac_key: Option<&[u8]>,
) -> Result<u8, String> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixStream};
    let mut u = UnixStream::connect_addr(&SocketAddr::from_abstract_name(name).unwrap()).unwrap();
    u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = auth_by_hand(&mut u, key)?;
    let proof = Writer::default().bytes(token).bytes(&addr.to_le_bytes()).0;
    u.write_all(&finish_by_hand(mac_key.or(key), n, Kind::SameHost, &proof))
        .unwrap();
    let mut verdict = [9u8; 1];
    u.read_exact(&mut verdict).unwrap();
    if verdict[0] == 1 || verdict[0] == 0 {
        return Ok(verdict[0]);
    }
    // Not a verdict: the start of a refusal frame.
    let mut rest = [0u8; frame::HEADER_LEN - 1];
    u.read_exact(&mut rest).unwrap();
    let len = u32::from_be_bytes(rest[7..11].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len];
    u.read_exact(&mut body).unwrap();
    Err(String::from_utf8_lossy(&body[2..]).into_owned())
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

/// How many fake registrations the flood test sends (100,000 in CI:
/// `ERNIC_TEST_FAKE_REGISTRATIONS`).
fn fake_count() -> usize {
    std::env::var("ERNIC_TEST_FAKE_REGISTRATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000)
}

#[test]
fn a_keyed_mesh_refuses_keyless_and_wrong_key_nodes_before_they_get_an_id() {
    let m = keyed_manager(KEY);
    let port = m.listen_addr().port();
    // Real workers: one with no key, one with another key. Neither gets an
    // id, and each says why.
    let keyless = worker_of(&m, None);
    let wrong = worker_of(&m, Some(b"another key, also long enough"));
    until("both were refused", || {
        keyless.registration_error().is_some() && wrong.registration_error().is_some()
    });
    let e = keyless.registration_error().unwrap();
    assert!(e.contains("requires a mesh key"), "{e}");
    let e = wrong.registration_error().unwrap();
    assert!(e.contains("different mesh key"), "{e}");
    assert_eq!(keyless.node_id(), None);
    assert_eq!(wrong.node_id(), None);

    // By hand: a keyless hello, and a keyed one whose proof is made up.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let e = auth_by_hand(&mut s, None).unwrap_err();
    assert!(e.contains("requires a mesh key"), "{e}");
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = auth_by_hand(&mut s, Some(KEY)).unwrap();
    let body = Writer::default().u64(1).u16(NO_NODE).u16(9).u16(0).0;
    let forged = finish_by_hand(
        Some(b"not the key, but as long as it"),
        n,
        Kind::Register,
        &body,
    );
    s.write_all(&forged).unwrap();
    let (h, body) = read_any(&mut s).unwrap();
    assert_eq!(h.kind, Kind::Refuse);
    assert!(String::from_utf8_lossy(&body).contains("different mesh key"));
    // A proof replayed on a new connection (with its own responder nonce)
    // fails too.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = auth_by_hand(&mut s, Some(KEY)).unwrap();
    let body = Writer::default().u64(1).u16(NO_NODE).u16(9).u16(0).0;
    s.write_all(&finish_by_hand(Some(KEY), n, Kind::Register, &body))
        .unwrap();
    let (h, _) = read_any(&mut s).unwrap();
    assert_eq!(h.kind, Kind::Refuse, "a replayed proof");

    until("five refusals are counted", || m.refused_handshakes() >= 5);
    assert!(
        m.peers().iter().all(|(p, _)| p.id.0 == 0),
        "no id went to a stranger: {:?}",
        m.peers()
    );
    // The right key: the first id there is, and the proof by hand works.
    let good = worker_of(&m, Some(KEY));
    assert_eq!(
        good.wait_registered(Duration::from_secs(10)).map(|n| n.0),
        Some(1)
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = auth_by_hand(&mut s, Some(KEY)).unwrap();
    let body = Writer::default().u64(77).u16(NO_NODE).u16(9).u16(0).0;
    s.write_all(&finish_by_hand(Some(KEY), n, Kind::Register, &body))
        .unwrap();
    let (h, body) = read_any(&mut s).unwrap();
    assert_eq!(h.kind, Kind::Welcome);
    assert_eq!(u16::from_be_bytes([body[0], body[1]]), 2);
}

#[test]
fn workers_with_the_key_connect_directly_and_a_stranger_cannot_reach_them() {
    let m = keyed_manager(KEY);
    let a = worker_of(&m, Some(KEY));
    let b = worker_of(&m, Some(KEY));
    let ida = a.wait_registered(Duration::from_secs(10)).unwrap();
    let idb = b.wait_registered(Duration::from_secs(10)).unwrap();
    until("a direct link", || {
        a.peers().iter().any(|(p, direct)| p.id == idb && *direct)
            && b.peers().iter().any(|(p, direct)| p.id == ida && *direct)
    });
    // A stranger at a worker's own port: refused at the first frame.
    let mut s = TcpStream::connect(("127.0.0.1", b.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let e = auth_by_hand(&mut s, None).unwrap_err();
    assert!(e.contains("requires a mesh key"), "{e}");
    until("the refusal is counted", || b.refused_handshakes() >= 1);
}

#[test]
fn fake_registrations_do_not_stop_a_real_worker_from_joining() {
    let m = Mesh::start(MeshConfig {
        key: key(KEY),
        handshake_timeout: Duration::from_millis(500),
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let port = m.listen_addr().port();
    let n = fake_count();
    let t0 = Instant::now();
    // Each fake: connect, a keyless hello or a keyed one with a made-up
    // registration, close without waiting for the answer.
    let par: usize = std::env::var("ERNIC_TEST_FAKE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let threads: Vec<_> = (0..par)
        .map(|t| {
            std::thread::spawn(move || {
                let keyless = frame::frame(
                    Kind::Auth,
                    NO_NODE,
                    NO_NODE,
                    &Writer::default().bytes(&[t as u8; 16]).u8(0).0,
                );
                let mut sent = 0;
                for i in (t..n).step_by(par) {
                    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                        continue;
                    };
                    let bogus = if i % 2 == 0 {
                        keyless.clone()
                    } else {
                        frame::frame(Kind::Register, NO_NODE, 0, &[0; 46])
                    };
                    if s.write_all(&bogus).is_ok() {
                        sent += 1;
                    }
                }
                sent
            })
        })
        .collect();
    let sent: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    eprintln!("{sent} of {n} fake registrations in {:?}", t0.elapsed());
    assert!(sent >= n * 9 / 10, "only {sent} of {n} fakes were sent");
    let w = worker_of(&m, Some(KEY));
    assert_eq!(
        w.wait_registered(Duration::from_secs(10)).map(|n| n.0),
        Some(1),
        "the real worker gets the first id: no fake took one"
    );
    assert!(
        m.peers().iter().all(|(p, _)| p.id.0 <= 1),
        "{:?}",
        m.peers()
    );
}

#[test]
fn register_close_cycles_past_the_id_space_leave_ids_for_new_workers() {
    // Keyless, every cycle takes an id: ids must come back. With
    // ERNIC_TEST_ID_CYCLES past 65534 the whole id space goes round.
    let cycles: usize = std::env::var("ERNIC_TEST_ID_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_500);
    // Ids in the table (at most 64) and ids in quarantine are skipped: 300
    // leaves room for both at any pace this test can go.
    let max_id = if cycles > 65_534 { 65_534 } else { 300 };
    let m = Mesh::start(MeshConfig {
        key: Ok(None),
        heartbeat: Duration::from_secs(30),
        id_quarantine: Duration::from_millis(20),
        max_id,
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let mut seen = std::collections::HashMap::<u16, Instant>::new();
    let mut reused = 0;
    for i in 0..cycles {
        let (s, id) = register_by_hand(&m, 1000 + i as u64);
        assert!((1..=max_id).contains(&id), "id {id}");
        if let Some(before) = seen.insert(id, Instant::now()) {
            reused += 1;
            assert!(
                before.elapsed() >= Duration::from_millis(20),
                "id {id} again within the quarantine"
            );
        }
        drop(s);
        // The manager sees the close (the node is dead) before the next one
        // comes: with a full table of the living, it would refuse instead.
        if i % 32 == 31 {
            until("the closed nodes are dead", || {
                m.peers().iter().filter(|(p, _)| p.alive).count() <= 1
            });
        }
    }
    assert!(reused > 0, "ids went round");
    let w = worker_of(&m, None);
    assert!(
        w.wait_registered(Duration::from_secs(10)).is_some(),
        "a real worker joins after {cycles} cycles: {:?}",
        w.registration_error()
    );
}

#[test]
fn a_drip_feeding_peer_is_cut_at_the_handshake_deadline() {
    let deadline = Duration::from_millis(500);
    let m = Mesh::start(MeshConfig {
        handshake_timeout: deadline,
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(40))).unwrap();
    // A frame that promises a body, one byte every 40 ms (each read well
    // inside any per-read timeout).
    let mut f = frame::frame(Kind::Register, NO_NODE, 0, &[0; 4000]);
    f.truncate(frame::HEADER_LEN + 100);
    let t0 = Instant::now();
    let mut cut = None;
    for b in f {
        if s.write_all(&[b]).is_err() {
            cut = Some(t0.elapsed());
            break;
        }
        match s.read(&mut [0u8; 64]) {
            Ok(0) => {
                cut = Some(t0.elapsed());
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                cut = Some(t0.elapsed());
                break;
            }
            _ => {}
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "still open after 5 s"
        );
    }
    let cut = cut.expect("the manager never cut the drip");
    assert!(
        cut >= deadline - Duration::from_millis(50) && cut < deadline + Duration::from_secs(1),
        "cut after {cut:?}, the deadline is {deadline:?}"
    );
}

#[test]
fn connections_past_the_handshake_cap_are_closed_at_once() {
    let m = Mesh::start(MeshConfig {
        handshake_timeout: Duration::from_secs(3),
        max_handshakes: 4,
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let port = m.listen_addr().port();
    let silent: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    until("four handshakes wait", || {
        // The accept thread has taken them all once a fifth is refused.
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let t0 = Instant::now();
        match read_any(&mut s) {
            Ok((h, body)) => {
                assert_eq!(h.kind, Kind::Refuse);
                assert!(String::from_utf8_lossy(&body).contains("in their handshake"));
                assert!(t0.elapsed() < Duration::from_millis(500));
                true
            }
            Err(_) => false,
        }
    });
    drop(silent);
    let w = worker_of(&m, None);
    assert!(w.wait_registered(Duration::from_secs(10)).is_some());
}

#[test]
fn a_node_of_an_older_protocol_is_told_why_it_is_refused() {
    let m = manager();
    let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // Version 2's registration, as an older ernic sends it.
    let body = Writer::default().u64(5).u16(NO_NODE).u16(9).u16(0).0;
    let mut old = frame::frame(Kind::Register, NO_NODE, 0, &body);
    old[4..6].copy_from_slice(&2u16.to_be_bytes());
    s.write_all(&old).unwrap();
    let mut hdr = [0u8; frame::HEADER_LEN];
    s.read_exact(&mut hdr).unwrap();
    assert_eq!(&hdr[0..4], b"ERNM");
    assert_eq!(
        &hdr[4..6],
        &2u16.to_be_bytes(),
        "framed as version 2 reads it"
    );
    assert_eq!(Kind::from(hdr[6]), Kind::Refuse);
    let len = u32::from_be_bytes(hdr[8..12].try_into().unwrap()) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    let why = String::from_utf8_lossy(&body[2..]).into_owned();
    assert!(
        why.contains("version 2") && why.contains("version 4"),
        "{why}"
    );
    assert!(m.peers().iter().all(|(p, _)| p.id.0 == 0));
}

#[test]
fn a_keyed_nodes_same_host_socket_takes_proofs_only_with_the_key() {
    let m = Mesh::start(MeshConfig {
        key: key(KEY),
        heartbeat: Duration::from_secs(30),
        handshake_timeout: Duration::from_millis(500),
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let (_s, token, name) = offer_keyed(&m, Some(KEY));
    let held = Box::new(token);
    let at = held.as_ptr() as u64;
    // The right token and address, but no key, or a made-up proof.
    let e = prove_keyed(&name, &token, at, None, None).unwrap_err();
    assert!(e.contains("requires a mesh key"), "{e}");
    let e = prove_keyed(
        &name,
        &token,
        at,
        Some(KEY),
        Some(b"not the key, but as long as it"),
    )
    .unwrap_err();
    assert!(e.contains("different mesh key"), "{e}");
    assert!(!m.same_host(ernic_core::NodeId(1)).read_by_me);
    // With the key, the proof holds.
    assert_eq!(prove_keyed(&name, &token, at, Some(KEY), None), Ok(1));
    assert!(m.same_host(ernic_core::NodeId(1)).read_by_me);
}
