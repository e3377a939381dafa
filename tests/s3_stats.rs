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
    let mut serve = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["s3", "serve", "--anonymous", "--seconds", "120"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--stats-file")
        .arg(&stats)
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
    let end = Instant::now() + Duration::from_secs(10);
    let doc = loop {
        let doc = ernic_ops::read_stats(&stats).ok();
        let missing = doc
            .as_ref()
            .and_then(|d| d.counter("s3_error", &[("code", "NoSuchKey")], "errors"));
        if missing == Some(1) || Instant::now() > end {
            break doc.expect("the stats file reads");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
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
