//! The mesh's counters as `Mesh::stats_groups` gives them: a manager's
//! table (joins, deaths, the peer's group and its address), refused
//! handshakes by reason, and the peer's connection gauge.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use ernic_mesh::{Mesh, MeshConfig, MeshKey, Spec};
use ernic_ops::{Group, StatsDoc};

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn doc(m: &Mesh) -> StatsDoc {
    StatsDoc {
        groups: m.stats_groups(),
        ..StatsDoc::default()
    }
}

fn mesh_counter(m: &Mesh, name: &str) -> u64 {
    doc(m)
        .counter("mesh", &[], name)
        .unwrap_or_else(|| panic!("no mesh counter {name}"))
}

fn peer_group(m: &Mesh, peer: &str) -> Option<Group> {
    doc(m).group("mesh_peer", &[("peer", peer)]).cloned()
}

fn config(spec: Spec, key: Option<&[u8]>) -> MeshConfig {
    MeshConfig {
        key: Ok(key.map(|k| MeshKey::new(k, "the test").unwrap())),
        heartbeat: Duration::from_millis(100),
        handshake_timeout: Duration::from_millis(500),
        listen_ip: Ok(Some("127.0.0.1".parse().unwrap())),
        ..MeshConfig::new(spec)
    }
}

fn worker_of(m: &Mesh, key: Option<&[u8]>) -> Mesh {
    let spec = Spec::Worker {
        host: "127.0.0.1".into(),
        port: m.listen_addr().port(),
    };
    Mesh::start(config(spec, key)).unwrap()
}

#[test]
fn strangers_refused_at_the_door_are_counted_by_reason() {
    let m = Mesh::start(config(Spec::Manager { port: 0 }, None)).unwrap();
    // One writes a header of no protocol; one hangs up at once.
    let mut s = TcpStream::connect(m.listen_addr()).unwrap();
    s.write_all(&[0xa5; 64]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.read_to_end(&mut Vec::new());
    drop(TcpStream::connect(m.listen_addr()).unwrap());
    until("two refusals", || m.refused_handshakes() == 2);
    assert_eq!(mesh_counter(&m, "handshakes_refused"), 2);
    assert_eq!(mesh_counter(&m, "handshakes_refused_malformed"), 1);
    assert_eq!(mesh_counter(&m, "handshakes_refused_closed"), 1);
    assert_eq!(mesh_counter(&m, "nodes_joined"), 0);
    assert!(
        peer_group(&m, "1").is_none(),
        "no peer without a connection"
    );
}

#[test]
fn a_keyed_manager_counts_the_keyless_worker_it_refuses() {
    const KEY: &[u8] = b"the key of this mesh, long enough";
    let m = Mesh::start(config(Spec::Manager { port: 0 }, Some(KEY))).unwrap();
    let w = worker_of(&m, None);
    until("the worker was refused", || {
        w.registration_error().is_some()
    });
    // The worker tries again (with a backoff), so the count only grows.
    assert!(mesh_counter(&m, "handshakes_refused_peer_keyless") >= 1);
    assert_eq!(mesh_counter(&m, "handshakes_refused_wrong_key"), 0);
    assert_eq!(mesh_counter(&m, "nodes_joined"), 0);
}

#[test]
fn a_worker_that_joins_and_leaves_is_counted_at_the_manager() {
    let m = Mesh::start(config(Spec::Manager { port: 0 }, None)).unwrap();
    let w = worker_of(&m, None);
    assert_eq!(
        w.wait_registered(Duration::from_secs(10)).map(|n| n.0),
        Some(1)
    );
    until("the manager has the worker's group", || {
        peer_group(&m, "1").is_some_and(|g| g.gauges["connected"] == 1.0)
    });
    let g = peer_group(&m, "1").unwrap();
    // Where it listens, as it registered.
    assert_eq!(g.labels["addr"], w.listen_addr().to_string());
    assert_eq!(g.counters["reconnects"], 0);
    assert_eq!(mesh_counter(&m, "nodes_joined"), 1);
    assert_eq!(mesh_counter(&m, "nodes_died"), 0);
    // The worker heard the manager (itself aside) join.
    until("the worker heard the topology", || {
        mesh_counter(&w, "topology_updates") >= 1
    });
    assert_eq!(mesh_counter(&w, "nodes_joined"), 1);
    w.shutdown();
    until("the manager saw it die", || {
        mesh_counter(&m, "nodes_died") == 1
    });
    let g = peer_group(&m, "1").unwrap();
    assert_eq!(g.gauges["connected"], 0.0, "{g:?}");
    assert!(g.counters["control_frames_received"] > 0, "{g:?}");
}
