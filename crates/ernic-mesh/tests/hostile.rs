//! A manager fed garbage: every malformed or foreign connection is refused or
//! closed, and the manager goes on admitting real workers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ernic_mesh::frame::{self, Header, Kind, NO_NODE, Writer};
use ernic_mesh::{Mesh, MeshConfig, Spec};

fn manager() -> Mesh {
    Mesh::start(
        MeshConfig {
            heartbeat: Duration::from_millis(100),
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
    let mut s = TcpStream::connect(("127.0.0.1", m.listen_addr().port())).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let body = Writer::default().u64(42).u16(NO_NODE).u16(9).u16(0).0;
    s.write_all(&frame::frame(Kind::Register, NO_NODE, 0, &body))
        .unwrap();
    let mut hdr = [0u8; frame::HEADER_LEN];
    s.read_exact(&mut hdr).unwrap();
    let h = Header::parse(&hdr).unwrap();
    assert_eq!(h.kind, Kind::Welcome);
    let mut welcome = vec![0u8; h.len as usize];
    s.read_exact(&mut welcome).unwrap();
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
