//! The mesh's three-process and network-namespace runs again, under
//! injected faults (`ernic mesh node --inject`): dropped and delayed
//! messages, cut connections, on the requester and on a relaying manager.
//!
//! What must hold: every request ends, in success or a reported error
//! (retry exceeded), within bounded time; each WR id completes exactly once;
//! data that succeeded is right at the far end (checksums); memory stays
//! bounded (VmHWM of the node processes). Where the message sequence is
//! fixed (one WRITE at a time, a fresh QP pair after a failure, the faults
//! on one node), the same spec gives the same outcome twice, WR by WR, and
//! the stats file (`--stats-file`) holds exact counts. Under a pipelined
//! flood, which WRs a fault hits depends on thread timing (how many are in
//! flight when the QP fails, which the flush then ends), so those runs
//! assert the invariants only.

use std::process::Command;
use std::time::{Duration, Instant};

use ernic_ops::StatsDoc;
use serde_json::{Value, json};

mod common;
use common::netns::{Net, can_run};
use common::{Node, T, free_port};

/// How long a request waits for its answer here.
const REQUEST_MS: u64 = 1000;

/// `ernic mesh node` with a 500 ms heartbeat (a node is dead after 1.5 s
/// of silence: an overloaded test machine does not make one die, and
/// reconnect, where the counts assert none), a short request timeout and
/// `extra` arguments, under `env`, inside network namespace `ns` if given.
fn node(ns: Option<&str>, spec: &str, env: &[(&str, &str)], extra: &[&str]) -> Node {
    let bin = env!("CARGO_BIN_EXE_ernic");
    let mut cmd = match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, bin]);
            c
        }
        None => Command::new(bin),
    };
    cmd.args(["mesh", "node", spec, "--heartbeat-ms", "500"])
        .args(["--request-timeout-ms", &REQUEST_MS.to_string()])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Node::spawn(cmd)
}

/// A manager node and two workers on loopback; `extra[i]` goes to node i.
fn mesh(env: &[(&str, &str)], extra: [&[&str]; 3]) -> [Node; 3] {
    let port = free_port();
    let m = node(None, &format!("tcp:manager:listen:{port}"), env, extra[0]);
    let w = format!("tcp:worker:127.0.0.1:{port}");
    let a = node(None, &w, env, extra[1]);
    let b = node(None, &w, env, extra[2]);
    assert_eq!((m.id, a.id, b.id), (0, 1, 2));
    [m, a, b]
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What `fill` writes with `seed`.
fn pattern(seed: u64, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i.wrapping_mul(2_654_435_761)
                .wrapping_add(seed.wrapping_mul(97))
                >> 7) as u8
        })
        .collect()
}

/// A fresh connected QP pair; retried while the peer's GID has no owner
/// (a node the manager thought dead for a moment).
fn pair(a: &mut Node, b: &mut Node) -> (u64, u64) {
    let end = Instant::now() + T;
    loop {
        a.call(json!({"op": "wait_owner", "gid": b.gid, "timeout_ms": 20_000}));
        b.call(json!({"op": "wait_owner", "gid": a.gid, "timeout_ms": 20_000}));
        let qa = a.call(json!({"op": "qp"}));
        let qb = b.call(json!({"op": "qp"}));
        let ra =
            a.try_call(json!({"op": "connect", "qp": qa["qp"], "gid": b.gid, "qpn": qb["qpn"]}));
        let rb =
            b.try_call(json!({"op": "connect", "qp": qb["qp"], "gid": a.gid, "qpn": qa["qpn"]}));
        if ra.get("error").is_none() && rb.get("error").is_none() {
            return (qa["qp"].as_u64().unwrap(), qb["qp"].as_u64().unwrap());
        }
        assert!(Instant::now() < end, "no QP pair: {ra} {rb}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mr(n: &mut Node, len: u64) -> (u64, u64, u64) {
    let r = n.call(json!({"op": "mr", "len": len}));
    (
        r["mr"].as_u64().unwrap(),
        r["addr"].as_u64().unwrap(),
        r["rkey"].as_u64().unwrap(),
    )
}

/// Up to `n` completions within `ms`.
fn poll(n: &mut Node, want: u64, ms: u64) -> Vec<Value> {
    let r = n.call(json!({"op": "poll", "n": want, "timeout_ms": ms}));
    r["wcs"].as_array().unwrap().clone()
}

/// `count` WRITEs of `len` bytes from `a` to `b`, one at a time, WR id i
/// into slot i; after a failure the next goes on a fresh QP pair. Checks
/// each WR id completes once, within bounded time, and each success landed
/// intact; returns the statuses in WR order.
fn one_at_a_time(a: &mut Node, b: &mut Node, count: u64, len: u64) -> Vec<String> {
    let (ma, _, _) = mr(a, count * len);
    let (mb, addr, rkey) = mr(b, count * len);
    for i in 0..count {
        a.call(json!({"op": "fill", "mr": ma, "offset": i * len, "len": len, "seed": i + 1}));
    }
    let (mut qa, _) = pair(a, b);
    let mut out = Vec::new();
    for i in 0..count {
        let t0 = Instant::now();
        a.call(
            json!({"op": "send", "qp": qa, "kind": "write", "mr": ma, "offset": i * len, "len": len,
            "raddr": addr + i * len, "rkey": rkey, "wr_id": i}),
        );
        let w = poll(a, 1, 20_000);
        assert_eq!(w.len(), 1, "WR {i} never completed");
        assert_eq!(w[0]["wr_id"], i, "{w:?}");
        let took = t0.elapsed();
        assert!(
            took < Duration::from_millis(REQUEST_MS * 5),
            "WR {i} took {took:?}"
        );
        let status = w[0]["status"].as_str().unwrap().to_string();
        if status == "Success" {
            let got = b.call(json!({"op": "sum", "mr": mb, "offset": i * len, "len": len}));
            assert_eq!(got["sum"], fnv(&pattern(i + 1, len)), "WR {i}'s bytes");
        } else {
            assert_eq!(status, "RetryExcErr", "WR {i}");
            qa = pair(a, b).0;
        }
        out.push(status);
    }
    let late = poll(a, 1, 300);
    assert!(late.is_empty(), "a completion after the last: {late:?}");
    out
}

/// The statuses expected when exactly the WRs `failed` fail.
fn expect(count: u64, failed: &[u64]) -> Vec<String> {
    (0..count)
        .map(|i| {
            if failed.contains(&i) {
                "RetryExcErr"
            } else {
                "Success"
            }
            .to_string()
        })
        .collect()
}

/// Tells the node to exit (it writes its stats file first) and reads the file.
fn exit_and_read(mut n: Node, path: &std::path::Path) -> StatsDoc {
    n.call(json!({"op": "exit"}));
    let _ = n.child.wait();
    ernic_ops::read_stats(path).unwrap()
}

/// (seen, fired) of the fault on `event` in `doc`.
fn fault(doc: &StatsDoc, event: &str) -> (u64, u64) {
    let f = doc.faults.iter().find(|f| f.event == event).unwrap();
    (f.seen, f.fired)
}

fn stats_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("ernic-chaos-{}-{name}.json", std::process::id()))
}

/// Peak and current resident memory of a node, in KiB, from /proc.
fn memory_kib(n: &Node) -> (u64, u64) {
    let s = std::fs::read_to_string(format!("/proc/{}/status", n.child.id())).unwrap();
    let field = |k: &str| -> u64 {
        let l = s.lines().find(|l| l.starts_with(k)).unwrap();
        l.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// One run of ten WRITEs from worker 1 to worker 2 with `spec` injected
/// at worker 1: the statuses, and worker 1's stats file.
fn run_on_requester(spec: &str, name: &str) -> (Vec<String>, StatsDoc) {
    let path = stats_path(name);
    let p = path.to_str().unwrap();
    let extra: [&[&str]; 3] = [&[], &["--inject", spec, "--stats-file", p], &[]];
    let [_m, mut a, mut b] = mesh(&[], extra);
    let statuses = one_at_a_time(&mut a, &mut b, 10, 64 << 10);
    let doc = exit_and_read(a, &path);
    let _ = std::fs::remove_file(&path);
    (statuses, doc)
}

/// The `mesh_peer` counter `name` for peer `peer`.
fn peer_counter(doc: &StatsDoc, peer: &str, name: &str) -> u64 {
    doc.counter("mesh_peer", &[("peer", peer)], name)
        .unwrap_or_else(|| panic!("no mesh_peer {peer} {name}: {doc:?}"))
}

#[test]
fn a_run_without_faults_counts_exactly_what_crossed_each_link() {
    // Over TCP only, so every payload is in the frames counted.
    let env = [("ERNIC_TCP_SAME_HOST", "0")];
    let (pa, pb) = (stats_path("clean-a"), stats_path("clean-b"));
    let (sa, sb) = (pa.to_str().unwrap(), pb.to_str().unwrap());
    let extra: [&[&str]; 3] = [
        &[],
        &["--inject", "mesh_drop:at=1000", "--stats-file", sa],
        &["--stats-file", sb],
    ];
    let [_m, mut a, mut b] = mesh(&env, extra);
    assert_eq!(one_at_a_time(&mut a, &mut b, 5, 64 << 10), expect(5, &[]));
    let (ma, _, _) = mr(&mut a, 8192);
    let (_, addr, rkey) = mr(&mut b, 8192);
    let (qa, _) = pair(&mut a, &mut b);
    for i in 0..2u64 {
        a.call(json!({"op": "send", "qp": qa, "kind": "read", "mr": ma, "offset": i * 4096, "len": 4096,
            "raddr": addr + i * 4096, "rkey": rkey, "wr_id": 50 + i}));
        assert_eq!(poll(&mut a, 1, 20_000)[0]["status"], "Success");
    }
    // Worker 1 exits first; worker 2 hears it died before it exits too.
    let da = exit_and_read(a, &pa);
    let end = Instant::now() + T;
    loop {
        let info = b.call(json!({"op": "info"}));
        let peers = info["peers"].as_array().unwrap();
        if peers.iter().any(|p| p["id"] == 1 && p["alive"] == false) {
            break;
        }
        assert!(Instant::now() < end, "worker 2 never heard: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let db = exit_and_read(b, &pb);
    let _ = (std::fs::remove_file(&pa), std::fs::remove_file(&pb));
    // Seven requests one way, seven answers the other, each one frame.
    assert_eq!(peer_counter(&da, "2", "frames_sent"), 7);
    assert_eq!(peer_counter(&db, "1", "frames_received"), 7);
    assert_eq!(peer_counter(&db, "1", "frames_sent"), 7);
    assert_eq!(peer_counter(&da, "2", "frames_received"), 7);
    let (ab, ba) = (
        peer_counter(&da, "2", "bytes_sent"),
        peer_counter(&db, "1", "bytes_sent"),
    );
    assert_eq!(peer_counter(&db, "1", "bytes_received"), ab);
    assert_eq!(peer_counter(&da, "2", "bytes_received"), ba);
    assert!(
        (5 * (64 << 10)..5 * (64 << 10) + 7 * 512).contains(&ab),
        "{ab}"
    );
    assert!((2 * 4096..2 * 4096 + 7 * 512).contains(&ba), "{ba}");
    assert_eq!(peer_counter(&da, "2", "by_ref_reads"), 0);
    for d in [&da, &db] {
        assert_eq!(peer_counter(d, "0", "reconnects"), 0);
        assert_eq!(peer_counter(d, "0", "send_timeouts"), 0);
        assert_eq!(d.counter("mesh", &[], "handshakes_refused"), Some(0));
        assert!(peer_counter(d, "0", "control_frames_received") > 0);
    }
    assert_eq!(da.counter("mesh", &[], "nodes_died"), Some(0));
    assert_eq!(db.counter("mesh", &[], "nodes_died"), Some(1));
    // Worker 1 heard node 0, then node 2 join.
    assert_eq!(da.counter("mesh", &[], "nodes_joined"), Some(2));
    assert_eq!(fault(&da, "mesh_drop"), (7, 0));
    assert_eq!(da.counter("device", &[], "req_tx_writes"), Some(5));
    assert_eq!(da.counter("device", &[], "req_tx_reads"), Some(2));
    assert_eq!(db.counter("device", &[], "resp_rx_writes"), Some(5));
    assert_eq!(db.counter("device", &[], "resp_rx_reads"), Some(2));
    assert_eq!(da.instance.node_id, Some(1));
    assert_eq!(da.instance.program, "ernic mesh node");
}

#[test]
fn dropped_requests_cost_retry_exceeded_and_the_same_spec_fails_the_same_way_twice() {
    let first = run_on_requester("mesh_drop:at=3,7", "drop1");
    let second = run_on_requester("mesh_drop:at=3,7", "drop2");
    assert_eq!(first.0, expect(10, &[2, 6]));
    assert_eq!(second.0, first.0, "the same spec, the same failures");
    for (_, doc) in [&first, &second] {
        // Ten WRITEs, each one message: events 3 and 7 dropped.
        assert_eq!(fault(doc, "mesh_drop"), (10, 2));
        assert_eq!(doc.counter("remote", &[], "request_timeouts"), Some(2));
        assert_eq!(doc.counter("device", &[], "req_tx_writes"), Some(10));
        assert_eq!(doc.counter("device", &[], "req_tx_retry_excd_err"), Some(2));
        assert_eq!(doc.counter("mesh", &[], "frames_malformed"), Some(0));
    }
}

#[test]
fn delayed_messages_arrive_late_intact_and_in_order() {
    let path = stats_path("delay");
    let p = path.to_str().unwrap();
    let extra: [&[&str]; 3] = [
        &[],
        &["--inject", "mesh_delay=200:every=3", "--stats-file", p],
        &[],
    ];
    let [_m, mut a, mut b] = mesh(&[], extra);
    // One at a time: a delay under the request timeout costs nothing but time.
    let t0 = Instant::now();
    assert_eq!(one_at_a_time(&mut a, &mut b, 9, 4096), expect(9, &[]));
    assert!(
        t0.elapsed() >= Duration::from_millis(600),
        "{:?}",
        t0.elapsed()
    );
    // Ten 8-byte WRITEs of different words to one address, all posted at
    // once: the last one's word is what stays only if the held messages and
    // those behind them kept their order.
    let (ma, _, _) = mr(&mut a, 80);
    let (mb, addr, rkey) = mr(&mut b, 8);
    let (qa, _) = pair(&mut a, &mut b);
    a.call(json!({"op": "fill", "mr": ma, "offset": 0, "len": 80, "seed": 9}));
    for i in 0..10u64 {
        a.call(
            json!({"op": "send", "qp": qa, "kind": "write", "mr": ma, "offset": i * 8, "len": 8,
            "raddr": addr, "rkey": rkey, "wr_id": 100 + i}),
        );
    }
    let mut ids: Vec<u64> = Vec::new();
    let end = Instant::now() + Duration::from_secs(10);
    while ids.len() < 10 && Instant::now() < end {
        for w in poll(&mut a, 10 - ids.len() as u64, 2000) {
            assert_eq!(w["status"], "Success", "{w}");
            ids.push(w["wr_id"].as_u64().unwrap());
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, (100..110).collect::<Vec<_>>(), "each WR once");
    let last = &pattern(9, 80)[72..80];
    assert_eq!(
        b.call(json!({"op": "sum", "mr": mb, "offset": 0, "len": 8}))["sum"],
        fnv(last)
    );
    let doc = exit_and_read(a, &path);
    let _ = std::fs::remove_file(&path);
    // 9 + 10 messages, every third held.
    assert_eq!(fault(&doc, "mesh_delay"), (19, 6));
    assert_eq!(doc.counter("remote", &[], "request_timeouts"), Some(0));
}

/// Waits (at most `T`) until `node` has a direct link to node `peer`.
fn direct(node: &mut Node, peer: u64, why: &str) {
    let end = Instant::now() + T;
    loop {
        let info = node.call(json!({"op": "info"}));
        let peers = info["peers"].as_array().unwrap();
        if peers.iter().any(|p| p["id"] == peer && p["direct"] == true) {
            return;
        }
        assert!(Instant::now() < end, "{why}: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_cut_connection_costs_only_its_request_and_comes_back() {
    // Twice, and the same WR fails each time.
    for run in 0..2 {
        let path = stats_path(&format!("cut{run}"));
        let p = path.to_str().unwrap();
        let extra: [&[&str]; 3] = [&[], &["--inject", "mesh_cut:at=4", "--stats-file", p], &[]];
        let [_m, mut a, mut b] = mesh(&[], extra);
        // The cut must fall on the direct link, not on the manager's
        // (which relays until the direct one is up).
        direct(&mut a, 2, "the direct link never came up");
        assert_eq!(one_at_a_time(&mut a, &mut b, 8, 64 << 10), expect(8, &[3]));
        // The direct link comes back (worker 1 connects to the higher id).
        direct(&mut a, 2, "the direct link never came back");
        let doc = exit_and_read(a, &path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(fault(&doc, "mesh_cut"), (8, 1));
        assert_eq!(
            doc.counter("mesh_peer", &[("peer", "2")], "reconnects"),
            Some(1)
        );
        assert_eq!(doc.counter("remote", &[], "request_timeouts"), Some(1));
    }
}

#[test]
fn a_relaying_manager_that_drops_frames_fails_the_same_requests_twice() {
    let run = || {
        let env = [("ERNIC_TCP_DIRECT", "0")];
        let path = stats_path("relay");
        let p = path.to_str().unwrap();
        let extra: [&[&str]; 3] = [
            &["--inject", "mesh_drop:at=2,9", "--stats-file", p],
            &[],
            &[],
        ];
        let [m, mut a, mut b] = mesh(&env, extra);
        let statuses = one_at_a_time(&mut a, &mut b, 6, 4096);
        let doc = exit_and_read(m, &path);
        let _ = std::fs::remove_file(&path);
        (statuses, doc)
    };
    let (first, doc) = run();
    // Relayed frames in turn: WR 0's request (1) and its reply (2,
    // dropped: WR 0 fails), WR 1's request and reply (3, 4), ... WR 4's
    // request (9, dropped), WR 5's (10, 11).
    assert_eq!(first, expect(6, &[0, 4]));
    assert_eq!(fault(&doc, "mesh_drop").1, 2);
    assert_eq!(run().0, first, "the same spec, the same failures");
}

#[test]
fn floods_under_every_fault_end_with_each_completion_once_and_bounded_memory() {
    let spec = "mesh_drop:every=97,mesh_delay=5:every=13,mesh_cut:at=150";
    let extra: [&[&str]; 3] = [&[], &["--inject", spec], &["--inject", spec]];
    let [mut m, mut a, mut c] = mesh(&[], extra);
    const LEN: u64 = 1 << 20;
    const COUNT: u64 = 200;
    let (_, addr, rkey) = mr(&mut m, 2 * LEN);
    let before: Vec<(u64, u64)> = [&m, &a, &c].iter().map(|n| memory_kib(n)).collect();
    let t0 = Instant::now();
    // Three rounds, each sender flooding on a fresh QP pair: the flood's
    // answer comes only when every WR has its completion, and counts any
    // duplicate. A fault ends the QP: what is in flight then fails with
    // retry exceeded or is flushed (which and how many is up to timing).
    let mut totals = [(0u64, 0u64); 2];
    for round in 0..3 {
        let mut flows = Vec::new();
        for (i, s) in [&mut a, &mut c].into_iter().enumerate() {
            let (q, _) = pair(s, &mut m);
            let (ms, _, _) = mr(s, LEN);
            flows.push((q, ms, addr + i as u64 * LEN));
        }
        for (s, (q, ms, dst)) in [&mut a, &mut c].into_iter().zip(&flows) {
            use std::io::Write;
            writeln!(
                s.stdin,
                "{}",
                json!({"op": "flood", "qp": q, "mr": ms, "len": LEN, "count": COUNT,
                "raddr": dst, "rkey": rkey, "depth": 32, "timeout_ms": 20_000})
            )
            .unwrap();
        }
        for (k, s) in [&mut a, &mut c].into_iter().enumerate() {
            let r: Value = serde_json::from_str(&s.out.recv_timeout(T).unwrap()).unwrap();
            assert_eq!(r["ok"], true, "round {round}: {r}");
            assert_eq!(r["duplicates"], 0, "round {round}: {r}");
            let errors = r["errors"].as_u64().unwrap();
            eprintln!("round {round}, sender {k}: {r}");
            // Retry exceeded (a lost request or answer), flushed (behind it
            // on the failed QP), or a local protection error: the responder
            // could not read a by-reference payload because the connection
            // it proved the requester on was cut before it read.
            for (st, _) in r["statuses"].as_object().unwrap() {
                assert!(
                    ["RetryExcErr", "WrFlushErr", "LocProtErr"].contains(&st.as_str()),
                    "round {round}: {r}"
                );
            }
            totals[k].0 += COUNT;
            totals[k].1 += errors;
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
    assert!(
        totals.iter().all(|t| t.1 > 0),
        "faults ended no WR: {totals:?}"
    );
    eprintln!("WRs posted and errors per sender: {totals:?}");
    for (n, (hwm0, _)) in [&m, &a, &c].iter().zip(&before) {
        let (hwm, rss) = memory_kib(n);
        let grew = hwm.saturating_sub(*hwm0) / 1024;
        assert!(
            grew < 300,
            "node {} grew by {grew} MiB (RSS now {} MiB)",
            n.id,
            rss / 1024
        );
    }
    // The mesh still carries traffic.
    assert_eq!(one_at_a_time(&mut a, &mut m, 2, 4096).len(), 2);
}

#[test]
fn three_hosts_under_dropped_delayed_and_cut_messages() {
    if !can_run() {
        return;
    }
    let net = Net::new();
    let spec = "mesh_drop:at=2,mesh_delay=100:every=4,mesh_cut:at=7";
    // Twice, on fresh nodes: the same WRs fail, the same faults fire.
    for run in 0..2u16 {
        let path = stats_path(&format!("netns{run}"));
        let p = path.to_str().unwrap();
        let port = 7000 + run;
        let m = node(
            Some(&net.ns("h0")),
            &format!("tcp:manager:listen:{port}"),
            &[],
            &[],
        );
        let w = format!("tcp:worker:10.77.7.1:{port}");
        let inject = ["--inject", spec, "--stats-file", p];
        let mut a = node(Some(&net.ns("h1")), &w, &[], &inject);
        let mut b = node(Some(&net.ns("h2")), &w, &[], &[]);
        assert_eq!((m.id, a.id, b.id), (0, 1, 2));
        // Events in turn: WRITE 0 (1) ok, 1 (2) dropped, 2 (3) ok, 3 (4)
        // delayed, 4 (5), 5 (6) ok, 6 (7) cut, 7 (8) delayed, 8 (9) ok.
        let statuses = one_at_a_time(&mut a, &mut b, 9, 256 << 10);
        assert_eq!(statuses, expect(9, &[1, 6]), "run {run}");
        let doc = exit_and_read(a, &path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(fault(&doc, "mesh_drop"), (9, 1));
        assert_eq!(fault(&doc, "mesh_delay"), (9, 2));
        assert_eq!(fault(&doc, "mesh_cut"), (9, 1));
        assert_eq!(
            doc.counter("mesh_peer", &[("peer", "2")], "reconnects"),
            Some(1)
        );
        assert_eq!(doc.counter("remote", &[], "request_timeouts"), Some(2));
    }
}

#[test]
fn a_standalone_manager_writes_its_table_to_the_stats_file() {
    let path = stats_path("manager");
    let port = free_port();
    let mut manager = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["mesh", "manager", "--listen", &port.to_string()])
        .args([
            "--heartbeat-ms",
            "500",
            "--stats-file",
            path.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let w = node(None, &format!("tcp:worker:127.0.0.1:{port}"), &[], &[]);
    assert_eq!(w.id, 1);
    // Rewritten about once a second: the join shows within a few.
    let end = Instant::now() + Duration::from_secs(10);
    let doc = loop {
        if let Ok(d) = ernic_ops::read_stats(&path) {
            // The join is counted a moment before the peer's counters
            // are made: a file written between the two shows only the first.
            let peer = d.group("mesh_peer", &[("peer", "1")]).is_some();
            if d.counter("mesh", &[], "nodes_joined") == Some(1) && peer {
                break d;
            }
        }
        assert!(
            Instant::now() < end,
            "the join and the peer's counters never reached the file"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = manager.kill();
    let _ = manager.wait();
    let _ = std::fs::remove_file(&path);
    assert_eq!(doc.instance.program, "ernic mesh manager");
    assert_eq!(doc.instance.node_id, Some(0));
    assert_eq!(doc.counter("mesh", &[], "nodes_died"), Some(0));
    assert!(doc.faults.is_empty(), "nothing armed");
}
