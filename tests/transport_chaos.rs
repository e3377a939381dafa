//! `ernic bench` with `--stats-file` and `--inject`, as a user runs it:
//! the stats files' exact counts after a known run, and chaos runs (EAGAIN
//! storms, injected error completions) on 2 and 4 ranks that end, in
//! success with every element right or in the reported injected error,
//! within a bound, with the ranks' memory bounded.
//!
//! Its own test binary, like `bench.rs`: its ranks poll busily.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ernic_ops::schema::StatsDoc;

/// Runs `ernic ARGS`, killed after `limit`: (exited in time and
/// successfully, stdout, stderr); a run that outlasts its bound fails the
/// test.
fn ernic_within(args: &[&str], limit: Duration) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).unwrap();
        s
    });
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "ernic {args:?} did not end within {limit:?}: {}",
                e.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status.success(), o.join().unwrap(), e.join().unwrap())
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ernic-chaos-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rank_doc(stats: &Path, rank: usize) -> StatsDoc {
    let mut p = stats.as_os_str().to_owned();
    p.push(format!(".rank{rank}"));
    ernic_ops::file::read_stats(Path::new(&p)).unwrap()
}

fn transport(doc: &StatsDoc, name: &str) -> u64 {
    doc.groups
        .iter()
        .find(|g| g.kind == "transport")
        .unwrap_or_else(|| panic!("no transport group: {doc:?}"))
        .counters[name]
}

/// A device counter summed over the rank's devices (its control rail's and
/// its data rails').
fn devices(doc: &StatsDoc, name: &str) -> u64 {
    doc.groups
        .iter()
        .filter(|g| g.kind == "device")
        .map(|g| g.counters[name])
        .sum()
}

/// The `#wrong` of every row, and the rows.
fn rows(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The peak memory each rank reported (bench's tracing line on stderr).
fn peaks_mib(err: &str) -> Vec<u64> {
    let line = err
        .lines()
        .find_map(|l| l.split_once("peak memory (VmHWM) per rank: "))
        .map(|(_, peaks)| peaks)
        .unwrap_or_else(|| panic!("no peak memory line: {err}"));
    line.split(", ")
        .map(|m| m.trim_end_matches(" MiB").parse().unwrap())
        .collect()
}

/// sendrecv between 2 ranks on 2 rails, 4 KiB to 1 MiB (nine sizes), 3
/// timed iterations: what each rank's file must say, derived from what the
/// bench does. Per size a warm-up and 3 timed runs, each one send and one
/// receive per rank: 4 messages each way per size, 36 in all. The sizes
/// sum to 2 MiB - 4 KiB, so each way moves 4 x 2093056 bytes. 4 and 8 KiB
/// are up to the eager limit (8 KiB): 8 eager messages each way, 28
/// written. A written message takes one write per stripe: below 64 KiB
/// (16, 32 KiB) one rail; from 64 KiB, ceil(size / 128 KiB) stripes cut to
/// the 2 rails: 64 and 128 KiB one, 256 KiB to 1 MiB two. So 1+1+1+1+2+2+2
/// = 10 writes per round of sizes, 40 in all, each a WRITE WQE on this
/// rank's devices and one its peer's devices served. Every receive posts
/// one CTRL: 36 each way.
#[test]
fn a_bench_run_leaves_exact_counts_in_each_ranks_stats_file() {
    let dir = scratch("exact");
    let stats = dir.join("bench.json");
    let (ok, out, err) = ernic_within(
        &[
            "bench",
            "--nodes",
            "2",
            "--op",
            "sendrecv",
            "--rails",
            "2",
            "--min-bytes",
            "4K",
            "--max-bytes",
            "1M",
            "--iters",
            "3",
            "--json",
            "--stats-file",
            stats.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    assert!(ok, "{err}");
    assert!(rows(&out).iter().all(|r| r["wrong"] == 0), "{out}");
    for rank in 0..2 {
        let doc = rank_doc(&stats, rank);
        assert_eq!(doc.schema, "ernic-stats/1");
        assert_eq!(doc.instance.program, "ernic bench");
        assert!(
            doc.groups
                .iter()
                .all(|g| g.labels["rank"] == rank.to_string())
        );
        let t = |n| transport(&doc, n);
        assert_eq!(
            (t("messages_sent"), t("messages_received")),
            (36, 36),
            "rank {rank}"
        );
        assert_eq!(
            (t("bytes_sent"), t("bytes_received")),
            (4 * 2_093_056, 4 * 2_093_056)
        );
        assert_eq!((t("eager_messages"), t("rdma_messages")), (16, 56));
        assert_eq!((t("ctrl_sent"), t("ctrl_received")), (36, 36));
        assert_eq!((t("failed_requests"), t("error_completions")), (0, 0));
        // The comms, one each way, carry the same.
        let comm = |role: &str, n: &str| {
            doc.groups
                .iter()
                .find(|g| g.kind == "comm" && g.labels["role"] == role)
                .unwrap()
                .counters[n]
        };
        assert_eq!(comm("send", "messages_sent"), 36);
        assert_eq!(comm("recv", "bytes_received"), 4 * 2_093_056);
        // Three devices: the control rail's and two data rails'.
        assert_eq!(doc.groups.iter().filter(|g| g.kind == "device").count(), 3);
        assert_eq!(devices(&doc, "req_tx_writes"), 40, "rank {rank}");
        assert_eq!(devices(&doc, "resp_rx_writes"), 40, "rank {rank}");
        assert_eq!(devices(&doc, "req_rx_cqe_err"), 0);
        assert!(doc.faults.is_empty());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One bench run under `spec` on `nodes` ranks (every collective, 4 B to
/// 256 KiB, two iterations): (succeeded, rows, stderr, each rank's doc).
fn chaos(
    nodes: usize,
    spec: &str,
    dir: &Path,
) -> (bool, Vec<serde_json::Value>, String, Vec<StatsDoc>) {
    let stats = dir.join(format!("n{nodes}.json"));
    let (ok, out, err) = ernic_within(
        &[
            "bench",
            "--nodes",
            &nodes.to_string(),
            "--op",
            "all",
            "--rails",
            "2",
            "--min-bytes",
            "4",
            "--max-bytes",
            "256K",
            "--iters",
            "2",
            "--json",
            "--inject",
            spec,
            "--stats-file",
            stats.to_str().unwrap(),
        ],
        Duration::from_secs(240),
    );
    let docs = (0..nodes).map(|r| rank_doc(&stats, r)).collect();
    (ok, if ok { rows(&out) } else { Vec::new() }, err, docs)
}

/// EAGAIN storms on 2 and 4 ranks: every collective completes with every
/// element right; the faults fired, each one a deferral the transport
/// retried; the same spec twice moves the same messages; memory stays
/// bounded.
#[test]
fn bench_under_eagain_storms_completes_with_nothing_wrong() {
    let dir = scratch("storm");
    for nodes in [2, 4] {
        for spec in ["fi_eagain:burst=50/100"] {
            let mut seen = Vec::new();
            for _ in 0..2 {
                let (ok, rows, err, docs) = chaos(nodes, spec, &dir);
                assert!(ok, "{nodes} ranks, {spec}: {err}");
                // 3 collectives, 17 sizes each (4 B to 256 KiB), less the
                // ones too small for a whole float per rank: 4 B on 2
                // ranks, 4 and 8 B on 4, for all_reduce and all_gather.
                let want = if nodes == 2 { 49 } else { 47 };
                assert_eq!(rows.len(), want, "{rows:?}");
                assert!(rows.iter().all(|r| r["wrong"] == 0), "{rows:?}");
                for (r, d) in docs.iter().enumerate() {
                    let fired = d.faults[0].fired;
                    assert!(fired > 100, "rank {r}: a storm ({fired})");
                    assert!(transport(d, "eagain_deferrals") >= fired);
                    assert_eq!(transport(d, "failed_requests"), 0);
                }
                let moved: Vec<(u64, u64, u64)> = docs
                    .iter()
                    .map(|d| {
                        let t = |n| transport(d, n);
                        (t("messages_sent"), t("bytes_sent"), t("ctrl_sent"))
                    })
                    .collect();
                seen.push(moved);
                for mib in peaks_mib(&err) {
                    assert!(
                        mib < 256,
                        "{nodes} ranks, {spec}: a rank peaked at {mib} MiB"
                    );
                }
            }
            assert_eq!(seen[0], seen[1], "{nodes} ranks, {spec}: the same twice");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An injected error completion on 2 and 4 ranks: the run stops soon with
/// the error, naming the rank and what it ran, the same way twice; the
/// failing rank's file counts the error completion and the failed send.
#[test]
fn bench_under_an_injected_error_completion_stops_with_the_error() {
    let dir = scratch("cqerr");
    for nodes in [2, 4] {
        let mut whats = Vec::new();
        for _ in 0..2 {
            let t = Instant::now();
            let (ok, _, err, docs) = chaos(nodes, "fi_cq_err:at=5", &dir);
            assert!(!ok, "{nodes} ranks: the run fails");
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "stops soon: {:?}",
                t.elapsed()
            );
            let line = err
                .lines()
                .find(|l| l.contains("failed while running"))
                .unwrap_or_else(|| panic!("{err}"));
            assert!(
                line.contains("injected error completion (fi_cq_err)"),
                "{line}"
            );
            // "rank R failed while running OP of N bytes: WHY (then ranks
            // [..] failed too)"; which rank fails first is a race, what it
            // ran is not: every rank's 5th write is at the same place in
            // the same workload. WHY is the injected fault, not what the
            // first rank's teardown did to its neighbours.
            let at = line.find("while running").unwrap();
            let what = line[at..].split(':').next().unwrap().to_string();
            whats.push(what);
            let failed: Vec<&StatsDoc> = docs
                .iter()
                .filter(|d| transport(d, "error_completions") > 0)
                .collect();
            assert!(!failed.is_empty(), "a rank counted its error completion");
            for d in failed {
                assert_eq!(transport(d, "error_completions"), 1);
                assert_eq!(transport(d, "failed_requests"), 1);
                assert_eq!(d.faults[0].fired, 1);
            }
        }
        assert_eq!(whats[0], whats[1], "{nodes} ranks: the same failure twice");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
