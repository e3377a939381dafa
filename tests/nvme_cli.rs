//! `ernic nvme` as a user runs it: a target and an initiator in one
//! process, and across two processes over the mesh.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::ernic;

const TRID: &str = "trtype:RDMA adrfam:IPv4 traddr:192.0.2.10 trsvcid:4420";

#[test]
fn perf_in_one_process_verifies_then_reports_json() {
    let (ok, out, err) = ernic(&[
        "nvme", "perf", "-r", TRID, "--serve", "ns=16M", "-q", "8", "-o", "4096", "-w", "randrw",
        "-M", "50", "-t", "1", "-a", "0", "--queues", "2", "--verify", "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    assert_eq!(v["io_size"], 4096);
    assert!(
        v["reads"].as_u64().unwrap() > 0 && v["writes"].as_u64().unwrap() > 0,
        "{v}"
    );
    let lat = &v["latency_us"];
    let (min, avg, max) = (
        lat["min"].as_f64().unwrap(),
        lat["average"].as_f64().unwrap(),
        lat["max"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= avg && avg <= max, "{v}");
    assert!(
        lat["percentiles"]["p99"].as_f64().unwrap() >= lat["percentiles"]["p50"].as_f64().unwrap()
    );
}

#[test]
fn the_table_looks_like_spdk_nvme_perf() {
    let (ok, out, err) = ernic(&[
        "nvme", "perf", "-r", TRID, "--serve", "ns=4M", "-q", "1", "-t", "1", "-a", "0",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("Latency(us)"), "{out}");
    assert!(out.contains("Device Information"), "{out}");
    let total = out
        .lines()
        .find(|l| l.starts_with("Total"))
        .expect("a Total row");
    let nums: Vec<f64> = total
        .split(':')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(nums.len(), 5, "IOPS MiB/s Average min max: {total}");
    assert!(nums[0] > 0.0, "{total}");
}

#[test]
fn identify_and_discover_show_the_subsystem() {
    let (ok, out, err) = ernic(&[
        "nvme",
        "identify",
        "-r",
        &format!("{TRID} subnqn:nqn.2024-01.io.ernic:cli"),
        "--serve",
        "nqn=nqn.2024-01.io.ernic:cli,ns=8M,ns=2M,bs=4096",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("subnqn    : nqn.2024-01.io.ernic:cli"),
        "{out}"
    );
    assert!(
        out.contains("namespace 1: 2048 blocks of 4096 bytes"),
        "{out}"
    );
    assert!(
        out.contains("namespace 2: 512 blocks of 4096 bytes"),
        "{out}"
    );
    let (ok, out, err) = ernic(&[
        "nvme",
        "discover",
        "-r",
        TRID,
        "--serve",
        "nqn=nqn.2024-01.io.ernic:cli,ns=8M",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("subnqn:  nqn.2024-01.io.ernic:cli"), "{out}");
    assert!(out.contains("traddr:  192.0.2.10"), "{out}");
    assert!(out.contains("trsvcid: 4420"), "{out}");
}

#[test]
fn bad_input_gets_one_clear_line() {
    for (args, says) in [
        (
            vec!["nvme", "perf", "-r", "traddr:192.0.2.10"],
            "nothing to reach",
        ),
        (
            vec![
                "nvme",
                "perf",
                "-r",
                "trtype:TCP traddr:1.2.3.4",
                "--serve",
                "",
            ],
            "trtype TCP",
        ),
        (
            vec!["nvme", "perf", "-r", TRID, "--serve", "ns=1M", "-o", "1000"],
            "not a multiple of the block size",
        ),
        (vec!["nvme", "serve", "ns=12Q"], "ns"),
        (
            vec![
                "nvme",
                "identify",
                "-r",
                "traddr:192.0.2.10 subnqn:nqn.2024-01.io.ernic:nobody",
                "--serve",
                "ns=1M",
            ],
            "no such subsystem (subsysnqn)",
        ),
    ] {
        let (ok, _out, err) = ernic(&args);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn perf_reaches_a_target_in_another_process_over_the_mesh() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["nvme", "serve", "ns=16M", "--seconds", "30", "--mesh"])
        .arg(format!("tcp:manager:listen:{port}"))
        .env("ERNIC_TCP_LISTEN", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ernic nvme serve");
    let start = Instant::now();
    let mut result = None;
    // The manager may take a moment to listen: a perf that finds nothing
    // is tried again, for a bounded time.
    while start.elapsed() < Duration::from_secs(20) {
        let (ok, out, err) = ernic(&[
            "nvme",
            "perf",
            "-r",
            TRID,
            "-q",
            "4",
            "-t",
            "1",
            "-a",
            "0",
            "--verify",
            "--json",
            "--mesh",
            &format!("tcp:worker:127.0.0.1:{port}"),
        ]);
        if ok {
            result = Some(out);
            break;
        }
        result = Some(err);
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = serve.kill();
    let _ = serve.wait();
    let out = result.unwrap();
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}"));
    assert!(v["iops"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn a_host_killed_mid_run_leaves_the_target_serving_the_next() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["nvme", "serve", "ns=16M", "--seconds", "40", "--mesh"])
        .arg(format!("tcp:manager:listen:{port}"))
        .env("ERNIC_TCP_LISTEN", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ernic nvme serve");
    let worker = format!("tcp:worker:127.0.0.1:{port}");
    let perf = |addr: &str, secs: &str| {
        Command::new(env!("CARGO_BIN_EXE_ernic"))
            .args([
                "nvme", "perf", "-r", TRID, "-q", "16", "-w", "randrw", "-t", secs, "-a", "0",
            ])
            .args(["--json", "--host-addr", addr, "--mesh", &worker])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ernic nvme perf")
    };
    // The first host is killed while its 16 commands are in flight.
    let start = Instant::now();
    let mut victim = perf("192.0.2.98", "20");
    std::thread::sleep(Duration::from_secs(3));
    let _ = victim.kill();
    let _ = victim.wait();
    let (mut out, mut err) = (String::new(), String::new());
    while start.elapsed() < Duration::from_secs(30) {
        let o = perf("192.0.2.97", "1").wait_with_output().unwrap();
        // The table (JSON here) is on stdout; stderr has the log lines.
        out = String::from_utf8_lossy(&o.stdout).into_owned();
        err = String::from_utf8_lossy(&o.stderr).into_owned();
        if o.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let _ = serve.kill();
    let _ = serve.wait();
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}\n{err}"));
    assert!(v["iops"].as_f64().unwrap() > 0.0, "{v}");
}
