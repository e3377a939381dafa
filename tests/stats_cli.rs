//! `ernic stats` on real stats files (written with
//! `ernic_ops::file::write_atomic`): the totals table, and `--watch`'s
//! rates between two writes, after a missing file it waits for.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use ernic_ops::file::write_atomic;
use ernic_ops::{Group, Instance, StatsDoc};

fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

fn doc(written_ms: u64, bytes: u64, writes: u64, errors: u64) -> StatsDoc {
    let mut d = StatsDoc::new(&Instance::this_process("ernic-server", Some("node-a")));
    d.written_unix_ms = written_ms;
    d.push(Group::new("device").counters([
        ("tx_bytes", bytes),
        ("rdma_writes", writes),
        ("req_cqe_error", errors),
        ("rdma_reads", 7),
    ]));
    d.push(
        Group::new("qp")
            .label("qpn", 17)
            .counter("rdma_writes", writes),
    );
    d
}

fn now_ms() -> u64 {
    ernic_ops::schema::unix_ms(std::time::SystemTime::now())
}

#[test]
fn once_it_prints_the_instance_and_every_groups_totals() {
    let dir = std::env::temp_dir().join(format!("ernic-stats-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("s.json");
    write_atomic(&p, &doc(now_ms(), 4096, 10, 1)).unwrap();
    let (ok, out, err) = common::ernic(&["stats", p.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.starts_with("node-a  ernic-server "), "{out}");
    let r = rows(&out);
    assert_eq!(r[1], ["KIND", "LABELS", "COUNTER", "VALUE"]);
    assert!(
        r.contains(&vec!["device", "-", "tx_bytes", "4096"]),
        "{out}"
    );
    assert!(
        r.contains(&vec!["qp", "qpn=17", "rdma_writes", "10"]),
        "{out}"
    );
    assert_eq!(r.len(), 2 + 5, "{out}");

    let (ok, _, err) = common::ernic(&["stats", dir.join("none.json").to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("none.json"), "{err}");
}

#[test]
fn watch_waits_for_a_missing_file_then_shows_rates_between_two_writes() {
    let dir = std::env::temp_dir().join(format!("ernic-stats-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("s.json");
    let _ = std::fs::remove_file(&p);
    let child = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args([
            "stats",
            p.to_str().unwrap(),
            "--watch",
            "--interval",
            "0.05",
            "--count",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let t0 = now_ms() - 2_000;
    write_atomic(&p, &doc(t0, 1_000_000, 100, 0)).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // One second later by the file's clock: 5 MB, 250 writes, 3 errors.
    write_atomic(&p, &doc(t0 + 1_000, 6_000_000, 350, 3)).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let out = String::from_utf8(out.stdout).unwrap();
    let r = rows(&out);
    assert!(out.starts_with("ernic stats: "), "{out}");
    assert!(r[0].contains(&"retrying"), "{out}");
    assert!(out.contains("rates over the last 1.0 s\n"), "{out}");
    assert!(
        r.contains(&vec!["device", "-", "tx_bytes", "5.00", "MB/s", "6000000"]),
        "{out}"
    );
    assert!(
        r.contains(&vec!["device", "-", "rdma_writes", "250.0", "ops/s", "350"]),
        "{out}"
    );
    assert!(
        r.contains(&vec![
            "device",
            "-",
            "req_cqe_error",
            "3.0",
            "errors/s",
            "3"
        ]),
        "{out}"
    );
    assert!(
        r.contains(&vec![
            "qp",
            "qpn=17",
            "rdma_writes",
            "250.0",
            "ops/s",
            "350"
        ]),
        "{out}"
    );
    // rdma_reads did not move, so it is left out; no ANSI codes off a terminal.
    assert!(
        !out.contains("rdma_reads") && !out.contains('\x1b'),
        "{out}"
    );
}
