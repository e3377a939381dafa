//! The mesh across real processes on loopback: `ernic mesh node` processes
//! driven over their stdin/stdout, stopped, killed and restarted.
//! (`ERNIC_TEST_LOG=1 ERNIC_LOG=info` shows the nodes' logs.)

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{Node, T, free_port};

/// Starts a node on loopback with a 100 ms heartbeat.
fn start(spec: &str, env: &[(&str, &str)], extra: &[&str]) -> Node {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ernic"));
    cmd.args(["mesh", "node", spec, "--heartbeat-ms", "100"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Node::spawn(cmd)
}

/// What these tests ask of a node beyond commands.
trait NodeExt {
    fn hwm_kib(&self) -> u64;
    fn mr(&mut self, len: u64) -> (u64, u64, u64);
    fn sum(&mut self, mr: u64, offset: u64, len: u64) -> u64;
    fn wcs(&mut self, n: u64) -> Vec<Value>;
}

impl NodeExt for Node {
    /// Peak resident memory, from /proc.
    fn hwm_kib(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let l = s.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        l.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Registers `len` bytes; returns (mr, addr, rkey).
    fn mr(&mut self, len: u64) -> (u64, u64, u64) {
        let r = self.call(json!({"op": "mr", "len": len}));
        (
            r["mr"].as_u64().unwrap(),
            r["addr"].as_u64().unwrap(),
            r["rkey"].as_u64().unwrap(),
        )
    }

    fn sum(&mut self, mr: u64, offset: u64, len: u64) -> u64 {
        self.call(json!({"op": "sum", "mr": mr, "offset": offset, "len": len}))["sum"]
            .as_u64()
            .unwrap()
    }

    fn wcs(&mut self, n: u64) -> Vec<Value> {
        let r = self.call(json!({"op": "poll", "n": n, "timeout_ms": 20_000}));
        let w = r["wcs"].as_array().unwrap().clone();
        assert_eq!(w.len() as u64, n, "completions: {w:?}");
        w
    }
}

/// Connects QP pairs between two nodes (both must see each other's GID).
fn pair(a: &mut Node, b: &mut Node) -> (u64, u64) {
    a.call(json!({"op": "wait_owner", "gid": b.gid, "timeout_ms": 20_000}));
    b.call(json!({"op": "wait_owner", "gid": a.gid, "timeout_ms": 20_000}));
    let qa = a.call(json!({"op": "qp"}));
    let qb = b.call(json!({"op": "qp"}));
    a.call(json!({"op": "connect", "qp": qa["qp"], "gid": b.gid, "qpn": qb["qpn"]}));
    b.call(json!({"op": "connect", "qp": qb["qp"], "gid": a.gid, "qpn": qa["qpn"]}));
    (qa["qp"].as_u64().unwrap(), qb["qp"].as_u64().unwrap())
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn pattern(seed: u64, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i.wrapping_mul(2_654_435_761)
                .wrapping_add(seed.wrapping_mul(97))
                >> 7) as u8
        })
        .collect()
}

/// Waits until `node` and peer `id` read each other's memory.
fn same_host_up(node: &mut Node, id: u64) {
    let end = Instant::now() + T;
    loop {
        let info = node.call(json!({"op": "info"}));
        let up = info["peers"].as_array().unwrap().iter().any(|p| {
            p["id"] == id
                && p["same_host"]["reads_me"] == true
                && p["same_host"]["read_by_me"] == true
        });
        if up {
            return;
        }
        assert!(
            Instant::now() < end,
            "the same-host path never came up: {info}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read_by_ref(node: &mut Node) -> u64 {
    node.call(json!({"op": "stats"}))["read_by_ref"]
        .as_u64()
        .unwrap()
}

/// The bytes `node` read by reference from peer `id`, from its mesh_peer
/// counters.
fn by_ref_from(node: &mut Node, id: u64) -> u64 {
    let s = node.call(json!({"op": "stats"}));
    let groups = s["groups"].as_array().unwrap();
    groups
        .iter()
        .find(|g| {
            let peer = g["labels"]["peer"].as_str().and_then(|p| p.parse().ok());
            g["kind"] == "mesh_peer" && peer == Some(id)
        })
        .map_or(0, |g| g["counters"]["by_ref_read_bytes"].as_u64().unwrap())
}

fn mesh(n_workers: usize, env: &[(&str, &str)]) -> (Node, Vec<Node>, u16) {
    let port = free_port();
    let m = start(&format!("tcp:manager:listen:{port}"), env, &[]);
    assert_eq!(m.id, 0);
    let workers = (0..n_workers)
        .map(|_| start(&format!("tcp:worker:127.0.0.1:{port}"), env, &[]))
        .collect();
    (m, workers, port)
}

#[test]
fn three_nodes_every_opcode_with_checksums_at_the_far_end() {
    let (mut m, mut w, _) = mesh(2, &[]);
    let mut b = w.pop().unwrap();
    let mut a = w.pop().unwrap();
    assert_eq!((a.id, b.id), (1, 2), "ids in arrival order");
    const N: u64 = 17 << 20; // more than one 16 MiB message
    for peer in [&mut b, &mut m] {
        let (ma, _, _) = a.mr(2 * N);
        let (mb, addr_b, rkey_b) = peer.mr(2 * N);
        let (qa, qb) = pair(&mut a, peer);
        // Processes on one host read each other's large payloads once the
        // path is up (ERNIC_TCP_SAME_HOST=0 and the netns test keep to TCP).
        same_host_up(&mut a, peer.id);
        let read_before = read_by_ref(peer);
        let from_a_before = by_ref_from(peer, a.id);
        a.call(json!({"op": "fill", "mr": ma, "offset": 0, "len": N, "seed": 5}));
        let want = fnv(&pattern(5, N));
        // WRITE, checksummed at the far end.
        a.call(json!({"op": "send", "qp": qa, "kind": "write", "mr": ma, "offset": 0, "len": N, "raddr": addr_b, "rkey": rkey_b, "wr_id": 1}));
        assert_eq!(a.wcs(1)[0]["status"], "Success");
        assert_eq!(peer.sum(mb, 0, N), want);
        assert_eq!(read_by_ref(peer) - read_before, N, "read from A's memory");
        assert_eq!(
            by_ref_from(peer, a.id) - from_a_before,
            N,
            "counted per peer"
        );
        // READ it back into the other half: A reads the answer's bytes
        // from the peer's memory itself.
        let a_read_before = read_by_ref(&mut a);
        let from_peer_before = by_ref_from(&mut a, peer.id);
        a.call(json!({"op": "send", "qp": qa, "kind": "read", "mr": ma, "offset": N, "len": N, "raddr": addr_b, "rkey": rkey_b, "wr_id": 2}));
        assert_eq!(a.wcs(1)[0]["status"], "Success");
        assert_eq!(a.sum(ma, N, N), want);
        assert_eq!(
            read_by_ref(&mut a) - a_read_before,
            N,
            "read from the peer's memory"
        );
        assert_eq!(by_ref_from(&mut a, peer.id) - from_peer_before, N);
        // SEND_IMM and WRITE_IMM into posted receives.
        peer.call(json!({"op": "recv", "qp": qb, "mr": mb, "offset": N, "len": N, "wr_id": 10}));
        a.call(json!({"op": "send", "qp": qa, "kind": "send_imm", "imm": 77, "mr": ma, "offset": 0, "len": 1000, "wr_id": 3}));
        let r = peer.wcs(1);
        assert_eq!(
            (
                r[0]["wr_id"].as_u64(),
                r[0]["byte_len"].as_u64(),
                r[0]["imm"].as_u64()
            ),
            (Some(10), Some(1000), Some(77))
        );
        assert_eq!(peer.sum(mb, N, 1000), fnv(&pattern(5, 1000)));
        peer.call(json!({"op": "recv", "qp": qb, "mr": mb, "offset": 0, "len": 1, "wr_id": 11}));
        a.call(json!({"op": "send", "qp": qa, "kind": "write_imm", "imm": 9, "mr": ma, "offset": 0, "len": 4096, "raddr": addr_b + N + 8192, "rkey": rkey_b, "wr_id": 4}));
        assert_eq!(peer.wcs(1)[0]["opcode"], "RecvRdmaWithImm");
        assert_eq!(peer.sum(mb, N + 8192, 4096), fnv(&pattern(5, 4096)));
        assert_eq!(
            a.wcs(2).iter().filter(|c| c["status"] == "Success").count(),
            2
        );
        // Atomics on a zeroed word.
        let word = addr_b + 2 * N - 8;
        a.call(json!({"op": "send", "qp": qa, "kind": "fetch_add", "add": 40, "mr": ma, "offset": 0, "len": 8, "raddr": word, "rkey": rkey_b, "wr_id": 5}));
        a.call(json!({"op": "send", "qp": qa, "kind": "cmp_swap", "compare": 40, "swap": 2, "mr": ma, "offset": 8, "len": 8, "raddr": word, "rkey": rkey_b, "wr_id": 6}));
        assert!(a.wcs(2).iter().all(|c| c["status"] == "Success"));
        assert_eq!(peer.sum(mb, 2 * N - 8, 8), fnv(&2u64.to_ne_bytes()));
        assert_eq!(
            a.sum(ma, 0, 16),
            fnv(&[0u64.to_ne_bytes(), 40u64.to_ne_bytes()].concat())
        );
    }
}

#[test]
fn workers_with_no_direct_link_talk_through_the_manager() {
    let (_m, mut w, _) = mesh(2, &[("ERNIC_TCP_DIRECT", "0")]);
    let mut b = w.pop().unwrap();
    let mut a = w.pop().unwrap();
    let (qa, _) = pair(&mut a, &mut b);
    let info = a.call(json!({"op": "info"}));
    let to_b = info["peers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == b.id)
        .cloned()
        .unwrap();
    assert_eq!(to_b["direct"], false, "{info}");
    let (ma, _, _) = a.mr(1 << 20);
    let (mb, addr, rkey) = b.mr(1 << 20);
    a.call(json!({"op": "fill", "mr": ma, "offset": 0, "len": 1 << 20, "seed": 3}));
    a.call(json!({"op": "send", "qp": qa, "kind": "write", "mr": ma, "offset": 0, "len": 1 << 20, "raddr": addr, "rkey": rkey, "wr_id": 1}));
    assert_eq!(a.wcs(1)[0]["status"], "Success");
    assert_eq!(b.sum(mb, 0, 1 << 20), fnv(&pattern(3, 1 << 20)));
}

#[test]
fn a_quiet_node_keeps_its_id_and_a_restarted_one_gets_a_new_one() {
    let (mut m, mut w, port) = mesh(1, &[]);
    let mut a = w.pop().unwrap();
    let alive = |m: &mut Node, id: u64| -> Option<bool> {
        let info = m.call(json!({"op": "info"}));
        info["peers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["alive"].as_bool().unwrap())
    };
    let wait_for = |m: &mut Node, id: u64, want: bool| {
        let end = Instant::now() + T;
        while alive(m, id) != Some(want) {
            assert!(Instant::now() < end, "node {id} never became alive={want}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(&mut m, a.id, true);
    a.signal("-STOP");
    wait_for(&mut m, a.id, false);
    a.signal("-CONT");
    wait_for(&mut m, a.id, true);
    assert_eq!(
        a.call(json!({"op": "info"}))["node"],
        1,
        "the quiet node kept its id"
    );
    drop(a);
    wait_for(&mut m, 1, false);
    // It comes back over IPv6: the manager listens on both families.
    let b = start(&format!("tcp:worker:[::1]:{port}"), &[], &[]);
    assert_eq!(b.id, 2, "a restarted node gets a new id, never an old one");
}

#[test]
fn rnr_both_ways_waits_for_a_receive_or_fails_after_the_timeout() {
    let port = free_port();
    let extra = ["--rnr-timeout-ms", "1500"];
    let mut a = start(&format!("tcp:manager:listen:{port}"), &[], &extra);
    let mut b = start(&format!("tcp:worker:127.0.0.1:{port}"), &[], &extra);
    let (qa, qb) = pair(&mut a, &mut b);
    let (ma, _, _) = a.mr(4096);
    let (mb, _, _) = b.mr(4096);
    let (x, y, qx, qy, mx, my) = (&mut a, &mut b, qa, qb, ma, mb);
    x.call(json!({"op": "send", "qp": qx, "kind": "send", "mr": mx, "offset": 0, "len": 100, "wr_id": 1}));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        x.call(json!({"op": "poll", "n": 1, "timeout_ms": 0}))["wcs"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    y.call(json!({"op": "recv", "qp": qy, "mr": my, "offset": 0, "len": 100, "wr_id": 2}));
    assert_eq!(y.wcs(1)[0]["status"], "Success");
    assert_eq!(x.wcs(1)[0]["status"], "Success");
    // And the other way round.
    y.call(json!({"op": "send", "qp": qy, "kind": "send", "mr": my, "offset": 0, "len": 50, "wr_id": 3}));
    std::thread::sleep(Duration::from_millis(300));
    x.call(json!({"op": "recv", "qp": qx, "mr": mx, "offset": 0, "len": 100, "wr_id": 4}));
    assert_eq!(x.wcs(1)[0]["byte_len"], 50);
    assert_eq!(y.wcs(1)[0]["status"], "Success");
    // No receive at all: RNR retry exceeded after the timeout.
    let t0 = Instant::now();
    x.call(json!({"op": "send", "qp": qx, "kind": "send", "mr": mx, "offset": 0, "len": 10, "wr_id": 5}));
    assert_eq!(x.wcs(1)[0]["status"], "RnrRetryExcErr");
    assert!(
        t0.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        t0.elapsed()
    );
}

#[test]
fn a_lost_peer_costs_retry_exceeded_not_a_hang() {
    let port = free_port();
    let extra = ["--request-timeout-ms", "2000"];
    let mut a = start(&format!("tcp:manager:listen:{port}"), &[], &extra);
    let mut b = start(&format!("tcp:worker:127.0.0.1:{port}"), &[], &extra);
    let (qa, _) = pair(&mut a, &mut b);
    let (ma, _, _) = a.mr(4096);
    let (_, addr, rkey) = b.mr(4096);
    b.signal("-STOP"); // accepts nothing more, answers nothing
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    a.call(json!({"op": "send", "qp": qa, "kind": "write", "mr": ma, "offset": 0, "len": 64, "raddr": addr, "rkey": rkey, "wr_id": 1}));
    assert_eq!(a.wcs(1)[0]["status"], "RetryExcErr");
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(15),
        "{took:?}"
    );
    // Once the peer is gone for good, no node owns its GID: connecting to it
    // fails at once.
    let gid_b = b.gid.clone();
    drop(b);
    let end = Instant::now() + T;
    loop {
        let q = a.call(json!({"op": "qp"}))["qp"].as_u64().unwrap();
        let r = a.try_call(json!({"op": "connect", "qp": q, "gid": gid_b, "qpn": 2}));
        if let Some(e) = r.get("error") {
            assert!(
                e.as_str().unwrap().contains("no device or node owns"),
                "{r}"
            );
            break;
        }
        assert!(Instant::now() < end, "the dead node's GID stayed owned");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_peer_that_stops_reading_is_cut_off_after_the_send_timeout() {
    let port = free_port();
    let env = [("ERNIC_TCP_SEND_TIMEOUT_MS", "1000")];
    let extra = ["--request-timeout-ms", "4000"];
    let mut a = start(&format!("tcp:manager:listen:{port}"), &env, &extra);
    let mut b = start(&format!("tcp:worker:127.0.0.1:{port}"), &env, &extra);
    let (qa, _) = pair(&mut a, &mut b);
    let (ma, _, _) = a.mr(4 << 20);
    let (_, addr, rkey) = b.mr(4 << 20);
    b.signal("-STOP");
    // Far more than socket buffers hold: the writes back up, the send
    // timeout cuts the connection, the requests fail instead of hanging.
    let t0 = Instant::now();
    let r = a.call(json!({"op": "flood", "qp": qa, "mr": ma, "len": 4 << 20, "count": 64, "raddr": addr, "rkey": rkey, "depth": 64, "timeout_ms": 30_000}));
    assert!(r["errors"].as_u64().unwrap() > 0, "{r}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    b.signal("-CONT");
}

/// Waits until `node`'s data frames to peer `id` take the shared-memory
/// ring, and the peer's come back through one.
fn shm_up(node: &mut Node, id: u64) {
    let end = Instant::now() + T;
    loop {
        let info = node.call(json!({"op": "info"}));
        let up = info["peers"].as_array().unwrap().iter().any(|p| {
            p["id"] == id && p["same_host"]["shm_out"] == true && p["same_host"]["shm_in"] == true
        });
        if up {
            return;
        }
        assert!(Instant::now() < end, "the rings never came up: {info}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_peer_killed_mid_ring_fails_what_was_in_flight_and_the_sender_goes_on() {
    let extra = ["--request-timeout-ms", "2000"];
    let port = free_port();
    let _m = start(&format!("tcp:manager:listen:{port}"), &[], &extra);
    let w = format!("tcp:worker:127.0.0.1:{port}");
    let (mut a, mut b) = (start(&w, &[], &extra), start(&w, &[], &extra));
    let (qa, _) = pair(&mut a, &mut b);
    shm_up(&mut a, b.id);
    let (ma, _, _) = a.mr(4096);
    let (_, addr, rkey) = b.mr(4096);
    // Small WRITEs, 64 in flight, far more than can finish: the ring is
    // busy both ways when the peer is killed.
    let t0 = Instant::now();
    writeln!(a.stdin, "{}", json!({"op": "flood", "qp": qa, "mr": ma, "len": 64, "count": 2_000_000u64, "raddr": addr, "rkey": rkey, "depth": 64, "timeout_ms": 25_000})).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    b.signal("-KILL");
    let r: Value = serde_json::from_str(&a.out.recv_timeout(T).unwrap()).unwrap();
    let took = t0.elapsed();
    // The flood ends on the failed requests, not on its own timeout.
    assert!(r["errors"].as_u64().is_some_and(|e| e > 0), "{r}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    // And the sender still serves.
    let info = a.call(json!({"op": "info"}));
    assert_eq!(info["node"], a.id, "{info}");
    eprintln!("killed mid-ring: the flood ended in {took:?}: {r}");
}

#[test]
fn a_flood_from_two_nodes_keeps_memory_bounded_and_loses_nothing() {
    let (mut m, mut w, _) = mesh(2, &[]);
    let mut c = w.pop().unwrap();
    let mut a = w.pop().unwrap();
    const LEN: u64 = 4 << 20;
    const COUNT: u64 = 150; // 600 MiB from each sender
    let (mm, addr, rkey) = m.mr(2 * LEN);
    let before = m.hwm_kib();
    let mut flows = Vec::new();
    for (i, s) in [&mut a, &mut c].into_iter().enumerate() {
        let (q, _) = pair(s, &mut m);
        let (ms, _, _) = s.mr(LEN);
        s.call(json!({"op": "fill", "mr": ms, "offset": 0, "len": LEN, "seed": 11}));
        flows.push((q, ms, addr + i as u64 * LEN));
    }
    // Both floods run at once: each node's stdin gets its command, then both are read.
    for (s, (q, ms, dst)) in [&mut a, &mut c].into_iter().zip(&flows) {
        writeln!(s.stdin, "{}", json!({"op": "flood", "qp": q, "mr": ms, "len": LEN, "count": COUNT, "raddr": dst, "rkey": rkey, "depth": 64, "timeout_ms": 50_000})).unwrap();
    }
    for s in [&mut a, &mut c] {
        let r: Value = serde_json::from_str(&s.out.recv_timeout(T).unwrap()).unwrap();
        assert_eq!(r["errors"], 0, "{r}");
    }
    assert_eq!(m.sum(mm, 0, LEN), fnv(&pattern(11, LEN)));
    assert_eq!(m.sum(mm, LEN, LEN), fnv(&pattern(11, LEN)));
    let grew = (m.hwm_kib() - before) / 1024;
    eprintln!("receiver peak memory grew by {grew} MiB while 1200 MiB arrived");
    assert!(
        grew < 400,
        "the receiver grew by {grew} MiB while 1200 MiB arrived"
    );
}

/// A key file with these permission bits.
fn key_file(name: &str, key: &str, mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = std::env::temp_dir().join(format!("ernic-mesh-key-{}-{name}", std::process::id()));
    std::fs::write(&p, format!("{key}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Runs `ernic mesh node` as a worker of `port` with `env` until it exits
/// by itself: (success, stderr, how long it took).
fn worker_run(port: u16, env: &[(&str, &std::path::Path)]) -> (bool, String, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ernic"));
    cmd.args(["mesh", "node", &format!("tcp:worker:127.0.0.1:{port}")])
        .env_remove("ERNIC_MESH_KEY")
        .env_remove("ERNIC_MESH_KEY_FILE")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        t0.elapsed(),
    )
}

#[test]
fn a_keyed_mesh_admits_only_nodes_with_its_key_and_both_sides_say_why() {
    let good = key_file("good", "the key of this mesh, long enough", 0o600);
    let other = key_file("other", "the key of another mesh, as long", 0o600);
    let open = key_file("open", "the key of this mesh, long enough", 0o644);
    let port = free_port();
    let log = std::env::temp_dir().join(format!("ernic-mesh-keyed-{}.log", std::process::id()));
    /// Kills the manager however the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _manager = Killed(
        Command::new(env!("CARGO_BIN_EXE_ernic"))
            .args(["mesh", "manager", "--listen", &port.to_string()])
            .args(["--heartbeat-ms", "100"])
            .env("ERNIC_MESH_KEY_FILE", &good)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let manager_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let end = Instant::now() + T;
    while !manager_log().contains("listening on port") {
        assert!(Instant::now() < end, "the manager never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !manager_log().contains("no mesh key"),
        "a keyed manager does not warn: {}",
        manager_log()
    );

    let (ok, err, took) = worker_run(port, &[]);
    assert!(!ok && err.contains("requires a mesh key"), "keyless: {err}");
    assert!(
        took < Duration::from_secs(20),
        "refused in {took:?}, not after the wait"
    );
    let (ok, err, _) = worker_run(port, &[("ERNIC_MESH_KEY_FILE", &other)]);
    assert!(
        !ok && err.contains("different mesh key"),
        "another key: {err}"
    );
    let (ok, err, _) = worker_run(port, &[("ERNIC_MESH_KEY_FILE", &open)]);
    assert!(
        !ok && err.contains("readable by every user"),
        "an open key file: {err}"
    );

    // The right key: the first worker id, so none went to the refused.
    let mut w = start(
        &format!("tcp:worker:127.0.0.1:{port}"),
        &[("ERNIC_MESH_KEY_FILE", good.to_str().unwrap())],
        &[],
    );
    assert_eq!(w.id, 1);
    assert!(w.call(json!({"op": "info"}))["node"] == 1);
    let end = Instant::now() + T;
    while !(manager_log().contains("node 1 alive")
        && manager_log().contains("refused a connection"))
    {
        assert!(Instant::now() < end, "manager log: {}", manager_log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = manager_log();
    assert!(
        text.contains("no mesh key") || text.contains("requires"),
        "{text}"
    );
    assert!(text.contains("different mesh key"), "{text}");
    for p in [good, other, open, log] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn a_keyless_manager_beyond_loopback_warns_once_and_one_on_loopback_is_silent() {
    /// Runs `ernic mesh manager` until it says it listens (or exits);
    /// returns its stderr so far, and whether it still runs.
    fn manager_says(env: &[(&str, &str)]) -> (String, bool) {
        let port = free_port();
        let log =
            std::env::temp_dir().join(format!("ernic-mesh-warn-{}-{port}.log", std::process::id()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ernic"));
        cmd.args(["mesh", "manager", "--listen", &port.to_string()])
            .env_remove("ERNIC_MESH_KEY")
            .env_remove("ERNIC_MESH_KEY_FILE")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let end = Instant::now() + T;
        let (text, running) = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("listening on port") {
                break (text, true);
            }
            if child.try_wait().unwrap().is_some() {
                break (std::fs::read_to_string(&log).unwrap_or_default(), false);
            }
            assert!(Instant::now() < end, "the manager said nothing: {text}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_file(log);
        (text, running)
    }
    let (text, running) = manager_says(&[]);
    assert!(running);
    assert_eq!(
        text.lines().filter(|l| l.contains("no mesh key")).count(),
        1,
        "{text}"
    );
    assert!(text.contains("ERNIC_MESH_KEY_FILE"), "{text}");
    let (text, running) = manager_says(&[("ERNIC_TCP_LISTEN", "127.0.0.1")]);
    assert!(running && !text.contains("no mesh key"), "{text}");
    let (text, running) = manager_says(&[("ERNIC_TCP_LISTEN", "not-an-address")]);
    assert!(!running && text.contains("ERNIC_TCP_LISTEN"), "{text}");
}
