//! `ernic perf --stats-file` across two processes (`--server` and HOST):
//! after a known run, each side's file holds the exact counts of its
//! device and QP.

use std::path::Path;
use std::process::Command;

use ernic_ops::schema::StatsDoc;

mod common;

fn counter(doc: &StatsDoc, kind: &str, name: &str) -> u64 {
    doc.groups
        .iter()
        .find(|g| g.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} group: {doc:?}"))
        .counters[name]
}

fn read(p: &Path) -> StatsDoc {
    ernic_ops::file::read_stats(p).unwrap()
}

/// write_bw of 1000 writes of 64 KiB (perftest's stream: no warm-up,
/// exactly -n writes): the client's device and QP executed 1000 RDMA
/// WRITEs moving 1000 x 65536 bytes; the server's served 1000 write
/// requests, 65536000 bytes into its memory, and executed nothing.
#[test]
fn perf_two_processes_leave_exact_counts_on_both_sides() {
    let dir = std::env::temp_dir().join(format!("ernic-perf-stats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (sfile, cfile) = (dir.join("server.json"), dir.join("client.json"));
    let (mut server, port) =
        common::perf_server(&["write_bw", "--stats-file", sfile.to_str().unwrap()]);
    let out = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["perf", "write_bw", "127.0.0.1", "-p", &port])
        .args(["-s", "64K", "-n", "1000", "--json", "--stats-file"])
        .arg(&cfile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.0.wait().unwrap().success());

    let c = read(&cfile);
    assert_eq!(c.instance.program, "ernic perf");
    for kind in ["device", "qp"] {
        assert_eq!(counter(&c, kind, "req_tx_writes"), 1000, "client {kind}");
        assert_eq!(
            counter(&c, kind, "req_bytes"),
            1000 * 65536,
            "client {kind}"
        );
        assert_eq!(counter(&c, kind, "req_rx_cqe_err"), 0);
    }
    let s = read(&sfile);
    assert_eq!(counter(&s, "device", "resp_rx_writes"), 1000);
    assert_eq!(counter(&s, "device", "resp_bytes"), 1000 * 65536);
    assert_eq!(counter(&s, "device", "req_tx_writes"), 0);
    assert!(c.groups.iter().all(|g| g.labels["side"] == "client"));
    assert!(s.groups.iter().all(|g| g.labels["side"] == "server"));
    std::fs::remove_dir_all(&dir).unwrap();
}

// An injected error completion ends an in-process run at once, on both
// sides, with an error: the side waiting for the failed one is told, not
// left to its no-progress limit (10 s) or, at a barrier, for ever.
#[test]
fn perf_under_an_injected_error_completion_stops_with_it_at_once() {
    for test in ["write_bw", "send_bw", "send_lat", "write_lat", "read_bw"] {
        for bidir in [false, true] {
            if bidir && !test.ends_with("_bw") {
                continue;
            }
            let t = std::time::Instant::now();
            let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ernic"));
            cmd.args(["perf", test, "-n", "1000", "-s", "64"])
                .args(["--inject", "send_err:at=5"]);
            if bidir {
                cmd.arg("-b");
            }
            let out = cmd.output().unwrap();
            let took = t.elapsed();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{test} -b={bidir}: {err}");
            // One way, the fifth send WQE is the client's fifth; both
            // ways, the two sides' WQEs interleave, so which side's fails
            // (and whether the client reports that error or its QP's
            // broken connection after it) is theirs to race for.
            let want = if bidir {
                "failed: completion status"
            } else {
                "completion status \"remote access error\""
            };
            assert!(err.contains(want), "{test} -b={bidir}: {err}");
            assert!(
                took < std::time::Duration::from_secs(5),
                "{test} -b={bidir} took {took:?}"
            );
        }
    }
}
