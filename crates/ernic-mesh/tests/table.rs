//! The manager's table and GID ownership, with real sockets on loopback:
//! a full table evicts the node dead longest or refuses, a dead node's id
//! is not given straight to the next node (ids go in turn), and a GID two
//! nodes claim belongs to no one.

use std::time::{Duration, Instant};

use ernic_core::{Gid, NodeId};
use ernic_mesh::{Mesh, MeshConfig, Spec};

const T: Duration = Duration::from_secs(20);

fn manager(max_nodes: usize) -> Mesh {
    let mut cfg = MeshConfig::new(Spec::Manager { port: 1 });
    cfg.spec = Spec::Manager { port: 0 };
    cfg.heartbeat = Duration::from_millis(50);
    cfg.max_nodes = max_nodes;
    Mesh::start(cfg).unwrap()
}

fn worker(m: &Mesh, gids: Vec<Gid>) -> Mesh {
    let mut cfg = MeshConfig::new(Spec::Worker {
        host: "127.0.0.1".into(),
        port: m.listen_addr().port(),
    });
    cfg.heartbeat = Duration::from_millis(50);
    cfg.gids = gids;
    Mesh::start(cfg).unwrap()
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn alive(m: &Mesh, id: u16) -> Option<bool> {
    m.peers()
        .into_iter()
        .find(|(p, _)| p.id.0 == id)
        .map(|(p, _)| p.alive)
}

#[test]
fn a_full_table_evicts_the_longest_dead_refuses_when_none_is_and_gives_the_next_id() {
    let m = manager(3); // node 0 and two workers
    let w1 = worker(&m, vec![]);
    assert_eq!(w1.wait_registered(T), Some(NodeId(1)));
    let w2 = worker(&m, vec![]);
    assert_eq!(w2.wait_registered(T), Some(NodeId(2)));
    // Full, nobody dead: refused.
    let w3 = worker(&m, vec![]);
    assert_eq!(
        w3.wait_registered(Duration::from_millis(500)),
        None,
        "refused while the table is full"
    );
    drop(w3);
    // Node 1 dies first, then node 2: node 1 has been dead longest.
    drop(w1);
    until("node 1 is dead", || alive(&m, 1) == Some(false));
    std::thread::sleep(Duration::from_millis(100));
    drop(w2);
    until("node 2 is dead", || alive(&m, 2) == Some(false));
    let w4 = worker(&m, vec![]);
    assert_eq!(
        w4.wait_registered(T),
        Some(NodeId(3)),
        "a new id, not a dead node's"
    );
    until("node 1 was evicted", || alive(&m, 1).is_none());
    assert_eq!(alive(&m, 2), Some(false), "node 2 died later and stays");
}

#[test]
fn a_gid_claimed_by_two_nodes_is_owned_by_none() {
    let m = manager(64);
    let shared: Gid = "fd00::5".parse().unwrap();
    let mine: Gid = "fd00::1".parse().unwrap();
    let a = worker(&m, vec![shared, mine]);
    let b = worker(&m, vec![shared]);
    let c = worker(&m, vec![]);
    let ida = a.wait_registered(T).unwrap();
    assert!(b.wait_registered(T).is_some() && c.wait_registered(T).is_some());
    until("c learns a's GID", || c.owner(&mine) == Some(ida));
    // a claims the shared GID too, so it reads as a's until c hears b's
    // claim (b may have registered after c, its GIDs broadcast later).
    until("c sees the shared GID contested", || {
        c.owner(&shared).is_none()
    });
    assert_eq!(m.owner(&shared), None, "contested at the manager too");
    // b gives it up: a owns it alone.
    b.set_gids(vec![]);
    until("a owns the GID alone", || c.owner(&shared) == Some(ida));
    // a dies: its GIDs belong to no one.
    drop(a);
    until("a's GIDs are released", || {
        c.owner(&mine).is_none() && c.owner(&shared).is_none()
    });
}
