//! `ernic bench` as a user runs it: rank processes, the table, bad input.
//!
//! Its own test binary: its rank processes poll busily, and cargo runs
//! test binaries one after another, so they never share the two cores with
//! the latency tests in `cli.rs`.

mod common;
use common::ernic;

/// Runs `ernic bench` over 3 ranks, sizes 4 B to `max`, one iteration, on
/// `provider`; `None` (after one line) when it is a libfabric provider and
/// libfabric is missing outside CI.
fn bench_rows(provider: &str, max: &str) -> Option<Vec<serde_json::Value>> {
    let (ok, out, err) = ernic(&[
        "bench",
        "--nodes",
        "3",
        "--op",
        "all",
        "--provider",
        provider,
        "--min-bytes",
        "4",
        "--max-bytes",
        max,
        "--iters",
        "1",
        "--json",
    ]);
    let required = std::env::var("ERNIC_REQUIRE_LIBFABRIC").is_ok_and(|v| v == "1");
    if !ok && err.contains("cannot load libfabric.so.1") && !required {
        println!("skipped: libfabric.so.1 is not installed (CI installs libfabric1)");
        return None;
    }
    assert!(ok, "{err}");
    assert!(
        err.contains(provider),
        "names the provider it runs on: {err}"
    );
    Some(
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// Every collective has a row per size, each with `#wrong` 0 and a
/// bandwidth, from 3 ranks on `provider`.
fn check_rows(rows: &[serde_json::Value], provider: &str) {
    for op in ["all_reduce", "all_gather", "sendrecv"] {
        let mine: Vec<&serde_json::Value> = rows.iter().filter(|r| r["op"] == op).collect();
        assert!(mine.len() >= 10, "{op}: a row per size: {rows:?}");
        for r in mine {
            assert_eq!(r["wrong"], 0, "{r}");
            assert_eq!(r["nodes"], 3);
            assert_eq!(r["provider"], provider);
            assert!(r["busbw_gbps"].as_f64().is_some_and(|b| b > 0.0), "{r}");
        }
    }
}

#[test]
fn bench_runs_every_collective_across_rank_processes_and_verifies_them() {
    let rows = bench_rows("ernic", "256K").expect("the ernic provider is built in");
    check_rows(&rows, "ernic");
}

/// Every collective over a libfabric provider, `#wrong` 0 everywhere;
/// without libfabric (and outside CI) one line says the test was skipped.
fn bench_over_libfabric(prov: &str) {
    let provider = format!("libfabric:{prov}");
    if let Some(rows) = bench_rows(&provider, "1M") {
        check_rows(&rows, &provider);
    }
}

#[test]
fn bench_over_libfabric_tcp_rxm() {
    bench_over_libfabric("tcp;ofi_rxm");
}

#[test]
fn bench_over_libfabric_shm() {
    bench_over_libfabric("shm");
}

#[test]
fn bench_refuses_bad_input_in_one_line() {
    for (args, says) in [
        (vec!["bench", "--nodes", "1"], "--nodes 1: between 2 and 16"),
        (
            vec!["bench", "--provider", "verbs"],
            "write ernic, libfabric, libfabric:PROV",
        ),
        (
            vec!["bench", "--provider", "libfabric:no-such-provider"],
            "no-such-provider",
        ),
        (
            vec!["bench", "--min-bytes", "1M", "--max-bytes", "1K"],
            "must not exceed",
        ),
        (vec!["bench", "--iters", "0"], "at least 1 timed iteration"),
        (
            vec!["bench", "--provider", "ionic:/tmp/a.sock"],
            "write SOCKET=ADDR",
        ),
        (
            vec!["bench", "--provider", "ionic:/tmp/a.sock=10.0.0.1"],
            "1 sockets for --nodes 4: one server a rank",
        ),
        (
            vec!["bench", "--op", "broadcast"],
            "[possible values: all_reduce, all_gather, sendrecv, all]",
        ),
    ] {
        let (ok, _, err) = ernic(&args);
        assert!(!ok, "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The collectives through the emulated ionic NIC a guest sees: two
/// `ernic-server`s joined by a mesh, each rank's transport on ernic's
/// userspace driver attached to one of them (its buffers in the memory it
/// shares with its server). Sizes up to 4 MiB: a rail's message then
/// crosses the mesh in several pieces.
#[test]
fn bench_runs_through_the_emulated_ionic_nic_of_two_servers() {
    let dir = std::env::temp_dir().join(format!("ernic-bench-ionic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = common::free_port().to_string();
    let spawn = |name: &str, addr: &str, mesh: String| {
        let sock = dir.join(name);
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_ernic-server"))
            .arg("--socket")
            .arg(&sock)
            .args(["--backend", "tcp", "--mesh", &mesh, "--log-level", "warn"])
            .env("ERNIC_TCP_GUEST_GIDS", addr)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        (common::Reaped(child), sock)
    };
    let (_a, sa) = spawn("a.sock", "10.0.9.1", format!("tcp:manager:listen:{port}"));
    let (_b, sb) = spawn("b.sock", "10.0.9.2", format!("tcp:worker:127.0.0.1:{port}"));
    common::within(
        "both servers' sockets",
        std::time::Duration::from_secs(30),
        || (sa.exists() && sb.exists()).then_some(()),
    );
    let provider = format!("ionic:{}=10.0.9.1,{}=10.0.9.2", sa.display(), sb.display());
    let (ok, out, err) = ernic(&[
        "bench",
        "--nodes",
        "2",
        "--op",
        "all",
        "--provider",
        &provider,
        "--min-bytes",
        "4",
        "--max-bytes",
        "4M",
        "--iters",
        "1",
        "--json",
    ]);
    assert!(ok, "{err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for op in ["all_reduce", "all_gather", "sendrecv"] {
        let mine: Vec<_> = rows.iter().filter(|r| r["op"] == op).collect();
        // A row per size up to 4 MiB (from the size the op can split).
        assert!(mine.len() >= 20, "{op}: {} rows", mine.len());
        assert!(
            mine.iter().any(|r| r["size"] == 4 << 20),
            "{op}: no 4 MiB row"
        );
        for r in mine {
            assert_eq!(r["wrong"], 0, "{r}");
            assert_eq!(r["provider"], provider.as_str());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
