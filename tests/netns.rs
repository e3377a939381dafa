//! The mesh between real separate hosts: three network namespaces, each
//! with a veth pair into a bridge (in a fourth), running `ernic mesh node`
//! processes. One host's link is cut and restored.
//!
//! Needs root and iproute2. CI has both (`.ci/run` installs iproute2) and
//! must run this; elsewhere it skips with one line saying why.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::netns::{Net, can_run};
use common::{Node, T};

/// Starts a node inside network namespace `ns`.
fn start(ns: &str, spec: &str) -> Node {
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        ns,
        env!("CARGO_BIN_EXE_ernic"),
        "mesh",
        "node",
        spec,
    ])
    .args(["--heartbeat-ms", "100", "--request-timeout-ms", "2000"]);
    Node::spawn(cmd)
}

/// Whether `n` thinks node `id` is alive.
fn peer_alive(n: &mut Node, id: u64) -> Option<bool> {
    let info = n.call(json!({"op": "info"}));
    info["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .map(|p| p["alive"] == true)
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Connects a fresh QP pair and WRITEs 1 MiB from `a` to `b`; returns the
/// completion status and whether the bytes arrived intact.
fn write_across(a: &mut Node, b: &mut Node) -> (String, bool) {
    a.call(json!({"op": "wait_owner", "gid": b.gid, "timeout_ms": 30_000}));
    b.call(json!({"op": "wait_owner", "gid": a.gid, "timeout_ms": 30_000}));
    let qa = a.call(json!({"op": "qp"}));
    let qb = b.call(json!({"op": "qp"}));
    a.call(json!({"op": "connect", "qp": qa["qp"], "gid": b.gid, "qpn": qb["qpn"]}));
    b.call(json!({"op": "connect", "qp": qb["qp"], "gid": a.gid, "qpn": qa["qpn"]}));
    let ma = a.call(json!({"op": "mr", "len": 1 << 20}));
    let mb = b.call(json!({"op": "mr", "len": 1 << 20}));
    let seed = a.id * 10 + b.id;
    a.call(json!({"op": "fill", "mr": ma["mr"], "offset": 0, "len": 1 << 20, "seed": seed}));
    a.call(json!({"op": "send", "qp": qa["qp"], "kind": "write", "mr": ma["mr"], "offset": 0, "len": 1 << 20,
        "raddr": mb["addr"], "rkey": mb["rkey"], "wr_id": 1}));
    let w = a.call(json!({"op": "poll", "n": 1, "timeout_ms": 30_000}));
    let status = w["wcs"][0]["status"].as_str().unwrap_or("none").to_string();
    let sa = a.call(json!({"op": "sum", "mr": ma["mr"], "offset": 0, "len": 1 << 20}));
    let sb = b.call(json!({"op": "sum", "mr": mb["mr"], "offset": 0, "len": 1 << 20}));
    (status, sa["sum"] == sb["sum"])
}

#[test]
fn three_hosts_on_a_bridge_survive_a_cut_link() {
    if !can_run() {
        return;
    }
    let net = Net::new();
    let mut m = start(&net.ns("h0"), "tcp:manager:listen:7000");
    let mut a = start(&net.ns("h1"), "tcp:worker:10.77.7.1:7000");
    let mut b = start(&net.ns("h2"), "tcp:worker:10.77.7.1:7000");
    assert_eq!((m.id, a.id, b.id), (0, 1, 2));
    assert_eq!(write_across(&mut a, &mut b), ("Success".into(), true));
    assert_eq!(write_across(&mut b, &mut m), ("Success".into(), true));
    assert_eq!(write_across(&mut m, &mut a), ("Success".into(), true));
    // A pair connected before the cut.
    let qa = a.call(json!({"op": "qp"}));
    let qb = b.call(json!({"op": "qp"}));
    a.call(json!({"op": "connect", "qp": qa["qp"], "gid": b.gid, "qpn": qb["qpn"]}));
    b.call(json!({"op": "connect", "qp": qb["qp"], "gid": a.gid, "qpn": qa["qpn"]}));
    let ma = a.call(json!({"op": "mr", "len": 4096}));
    let mb = b.call(json!({"op": "mr", "len": 4096}));
    // Cut host 2 off: a WRITE toward it fails with retry exceeded instead of
    // hanging, and the manager declares it dead.
    net.link(2, false);
    let t0 = Instant::now();
    a.call(json!({"op": "send", "qp": qa["qp"], "kind": "write", "mr": ma["mr"], "offset": 0, "len": 4096,
        "raddr": mb["addr"], "rkey": mb["rkey"], "wr_id": 7}));
    let w = a.call(json!({"op": "poll", "n": 1, "timeout_ms": 30_000}));
    assert_eq!(w["wcs"][0]["status"], "RetryExcErr", "{w}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    until("node 2 is dead", || peer_alive(&mut m, 2) == Some(false));
    until("node 1 hears node 2 is dead", || {
        peer_alive(&mut a, 2) == Some(false)
    });
    let qa2 = a.call(json!({"op": "qp"}));
    let refused = {
        let v = json!({"op": "connect", "qp": qa2["qp"], "gid": b.gid, "qpn": 2});
        writeln!(a.stdin, "{v}").unwrap();
        let r: Value = serde_json::from_str(&a.out.recv_timeout(T).unwrap()).unwrap();
        r.get("error").is_some()
    };
    assert!(refused, "no node owns the GID of a dead node");
    // Restore it: the quiet node comes back under its id, and traffic flows.
    net.link(2, true);
    until("node 2 is alive again", || {
        peer_alive(&mut m, 2) == Some(true)
    });
    assert_eq!(b.call(json!({"op": "info"}))["node"], 2, "it kept its id");
    assert_eq!(write_across(&mut a, &mut b), ("Success".into(), true));
    assert_eq!(write_across(&mut b, &mut m), ("Success".into(), true));
}
