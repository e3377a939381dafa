//! `ernic s3 serve --stats-file`: after a known workload of `ernic s3`
//! client commands, the file holds the exact requests by operation and
//! status, errors by code, and object bytes in and out.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{ernic, free_port};

#[test]
fn the_stats_file_counts_a_known_workload_exactly() {
    let dir = std::env::temp_dir().join(format!("ernic-s3-stats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("s3.json");
    let port = free_port();
    let mut serve = serve(port, &stats, &[]);
    let ep = format!("127.0.0.1:{port}");
    let src = dir.join("src.bin");
    std::fs::write(&src, vec![7u8; 1000]).unwrap();
    let run = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend(["--endpoint", &ep]);
        ernic(&a)
    };
    let (ok, _, err) = run(&["s3", "mb", "s3://bkt"]);
    assert!(ok, "{err}");
    for k in ["k0", "k1", "k2"] {
        let (ok, _, err) = run(&["s3", "put", src.to_str().unwrap(), &format!("s3://bkt/{k}")]);
        assert!(ok, "{err}");
    }
    let dst = dir.join("dst.bin");
    let (ok, _, err) = run(&["s3", "get", "s3://bkt/k1", dst.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (ok, _, _) = run(&["s3", "get", "s3://bkt/nothing", dst.to_str().unwrap()]);
    assert!(!ok, "a missing key fails");

    // The file is rewritten every second: wait for the last request.
    let doc = settled(&stats, |d| {
        d.counter("s3_error", &[("code", "NoSuchKey")], "errors") == Some(1)
    });
    let _ = serve.kill();
    let _ = serve.wait();
    let show = serde_json::to_string_pretty(&doc.groups).unwrap();
    assert_eq!(doc.instance.program, "ernic s3 serve");
    let req = |op: &str, st: &str| {
        doc.counter(
            "s3_request",
            &[("operation", op), ("status", st)],
            "requests",
        )
    };
    assert_eq!(req("CreateBucket", "2xx"), Some(1), "{show}");
    assert_eq!(req("PutObject", "2xx"), Some(3), "{show}");
    assert_eq!(req("GetObject", "2xx"), Some(1), "{show}");
    // `ernic s3 get` asks HeadObject first: the missing key ends there.
    assert_eq!(req("HeadObject", "2xx"), Some(1), "{show}");
    assert_eq!(req("HeadObject", "4xx"), Some(1), "{show}");
    assert_eq!(req("GetObject", "4xx"), None, "{show}");
    assert_eq!(
        doc.counter("s3_error", &[("code", "NoSuchKey")], "errors"),
        Some(1),
        "{show}"
    );
    let http = [("body", "http")];
    assert_eq!(
        doc.counter("s3", &http, "received_bytes"),
        Some(3000),
        "{show}"
    );
    assert_eq!(doc.counter("s3", &http, "sent_bytes"), Some(1000), "{show}");
    assert_eq!(
        doc.counter("s3", &[("body", "token")], "received_bytes"),
        Some(0),
        "{show}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ernic s3 serve --anonymous --stats-file STATS EXTRA`, once it listens.
fn serve(port: u16, stats: &std::path::Path, extra: &[&str]) -> std::process::Child {
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["s3", "serve", "--anonymous", "--seconds", "120"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--stats-file")
        .arg(stats)
        .args(extra)
        .env("ERNIC_TCP_LISTEN", "127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(st)) = serve.try_wait() {
            let mut err = String::new();
            serve
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("ernic s3 serve exited ({st}): {err}");
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no listener");
        std::thread::sleep(Duration::from_millis(50));
    }
    serve
}

/// The stats file once `done` holds of it (it is rewritten every second).
fn settled(
    stats: &std::path::Path,
    done: impl Fn(&ernic_ops::StatsDoc) -> bool,
) -> ernic_ops::StatsDoc {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let doc = ernic_ops::read_stats(stats).ok();
        if doc.as_ref().is_some_and(&done) || Instant::now() > end {
            return doc.expect("the stats file reads");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn objects_moved_by_rdma_token_count_as_token_bytes() {
    let dir = std::env::temp_dir().join(format!("ernic-s3-stats-rdma-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("s3.json");
    let (port, mesh) = (free_port(), free_port());
    let mut serve = serve(
        port,
        &stats,
        &["--mesh", &format!("tcp:manager:listen:{mesh}")],
    );
    let ep = format!("127.0.0.1:{port}");
    let worker = format!("tcp:worker:127.0.0.1:{mesh}");
    let src = dir.join("src.bin");
    std::fs::write(&src, vec![9u8; 100_000]).unwrap();
    let (ok, _, err) = ernic(&["s3", "mb", "s3://rdm", "--endpoint", &ep]);
    assert!(ok, "{err}");
    let rdma = ["--endpoint", &ep, "--mesh", &worker];
    let (ok, _, err) = ernic(
        &[
            &[
                "s3",
                "put",
                src.to_str().unwrap(),
                "s3://rdm/o",
                "--addr",
                "192.0.2.91",
            ][..],
            &rdma,
        ]
        .concat(),
    );
    assert!(ok && err.contains("by RDMA"), "{err}");
    let dst = dir.join("dst.bin");
    let (ok, _, err) = ernic(
        &[
            &[
                "s3",
                "get",
                "s3://rdm/o",
                dst.to_str().unwrap(),
                "--addr",
                "192.0.2.92",
            ][..],
            &rdma,
        ]
        .concat(),
    );
    assert!(ok && err.contains("by RDMA"), "{err}");
    let doc = settled(&stats, |d| {
        d.counter("s3", &[("body", "token")], "sent_bytes") == Some(100_000)
    });
    let _ = serve.kill();
    let _ = serve.wait();
    let show = serde_json::to_string_pretty(&doc.groups).unwrap();
    let token = [("body", "token")];
    assert_eq!(
        doc.counter("s3", &token, "received_bytes"),
        Some(100_000),
        "{show}"
    );
    assert_eq!(
        doc.counter("s3", &token, "sent_bytes"),
        Some(100_000),
        "{show}"
    );
    let http = [("body", "http")];
    assert_eq!(
        doc.counter("s3", &http, "received_bytes"),
        Some(0),
        "{show}"
    );
    assert_eq!(doc.counter("s3", &http, "sent_bytes"), Some(0), "{show}");
    let _ = std::fs::remove_dir_all(&dir);
}
