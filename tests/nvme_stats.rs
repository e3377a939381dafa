//! `ernic nvme serve --stats-file`: a target in one process, `ernic nvme
//! perf --verify` in another over the mesh, and the file's counts checked
//! against what the run did: the verify pass's 256 writes of 4 KiB (the
//! only writes of a randread run), every read the namespace served as a
//! read command, one I/O queue's Connect, two queues accepted and torn
//! down.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{ernic, free_port};

const TRID: &str =
    "trtype:RDMA adrfam:IPv4 traddr:192.0.2.10 trsvcid:4420 subnqn:nqn.2024-01.io.ernic:nvme";

#[test]
fn the_stats_file_counts_a_perf_run_exactly() {
    let dir = std::env::temp_dir().join(format!("ernic-nvme-stats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("nvme.json");
    let port = free_port();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["nvme", "serve", "ns=16M", "--seconds", "60", "--mesh"])
        .arg(format!("tcp:manager:listen:{port}"))
        .arg("--stats-file")
        .arg(&stats)
        .env("ERNIC_TCP_LISTEN", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let out = loop {
        let (ok, out, err) = ernic(&[
            "nvme",
            "perf",
            "-r",
            TRID,
            "-q",
            "1",
            "-o",
            "4096",
            "-w",
            "randread",
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
            break out;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "perf never ran: {err}"
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let measured_reads = v["reads"].as_u64().unwrap();
    // The file is rewritten every second: wait for the teardown of both queues.
    let end = Instant::now() + Duration::from_secs(10);
    let doc = loop {
        let doc = ernic_ops::read_stats(&stats).ok();
        let torn = doc
            .as_ref()
            .and_then(|d| d.counter("nvmeof", &[], "queues_torn_down"));
        if torn == Some(2) || Instant::now() > end {
            break doc.expect("the stats file reads");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = serve.kill();
    let _ = serve.wait();
    let show = serde_json::to_string_pretty(&doc.groups).unwrap();
    assert_eq!(doc.instance.program, "ernic nvme serve");
    let ns = |c: &str| {
        doc.counter("nvmeof_namespace", &[("nsid", "1")], c)
            .unwrap()
    };
    let cmd = |q: &str, op: &str| {
        doc.counter(
            "nvmeof_command",
            &[("queue", q), ("opcode", op), ("status", "success")],
            "commands",
        )
    };
    assert_eq!(ns("writes"), 256, "{show}");
    assert_eq!(ns("written_bytes"), 256 * 4096, "{show}");
    assert_eq!(cmd("io", "write"), Some(256), "{show}");
    // The verify pass reads its 256 back, then the measured run reads more.
    let reads = ns("reads");
    assert!(
        reads >= 256 + measured_reads,
        "{reads} {measured_reads} {show}"
    );
    assert_eq!(ns("read_bytes"), reads * 4096, "{show}");
    assert_eq!(cmd("io", "read"), Some(reads), "{show}");
    assert_eq!(
        cmd("io", "fabrics"),
        Some(1),
        "one I/O queue's Connect: {show}"
    );
    assert_eq!(
        doc.counter("nvmeof", &[], "connections_accepted"),
        Some(2),
        "{show}"
    );
    assert_eq!(
        doc.counter("nvmeof", &[], "queues_torn_down"),
        Some(2),
        "{show}"
    );
    // No command failed, and the transport took every command counted.
    assert!(
        !doc.groups
            .iter()
            .any(|g| g.kind == "nvmeof_command" && g.labels["status"] != "success"),
        "{show}"
    );
    let all: u64 = doc
        .groups
        .iter()
        .filter(|g| g.kind == "nvmeof_command")
        .map(|g| g.counters["commands"])
        .sum();
    assert_eq!(doc.counter("nvmeof", &[], "commands"), Some(all), "{show}");
    let _ = std::fs::remove_dir_all(&dir);
}
