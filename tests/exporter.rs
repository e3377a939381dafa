//! `ernic-exporter` as Prometheus sees it: the real binary on a free port
//! over stats files written with `ernic_ops::file::write_atomic`, scraped
//! over HTTP with a plain `TcpStream`, its exposition parsed by
//! `prometheus-parse` (exact values and labels) and by Prometheus' own
//! `promtool check metrics` where it is installed (in CI it must be). And
//! the Grafana dashboard: every metric its queries name is one the exporter
//! serves for a file that holds every documented kind.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use ernic_ops::file::write_atomic;
use ernic_ops::{FaultStat, Group, Instance, StatsDoc};
use prometheus_parse::{Sample, Scrape, Value};

/// The exporter, killed when dropped.
struct Exporter {
    child: Child,
    addr: String,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn exporter(files: &[&Path], extra: &[&str]) -> Exporter {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ernic-exporter"));
    for f in files {
        cmd.arg("--stats-file").arg(f);
    }
    let mut child = cmd
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ernic-exporter");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("ernic-exporter: listening on http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no listening line: {line:?}"))
        .to_string();
    Exporter { child, addr }
}

/// (status, content type, body) of `GET path`.
fn get(addr: &str, path: &str, accept: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a whole response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, ctype, body.to_string())
}

fn parse(body: &str) -> Vec<Sample> {
    Scrape::parse(body.lines().map(|l| Ok(l.to_string())))
        .expect("prometheus-parse reads the exposition")
        .samples
}

/// The value of the one sample of `metric` whose labels include `labels`.
fn value(samples: &[Sample], metric: &str, labels: &[(&str, &str)]) -> Value {
    let found: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{metric}{labels:?}: {found:?}");
    found[0].value.clone()
}

fn promtool(body: &str) {
    if Command::new("promtool").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("ERNIC_REQUIRE_PROMTOOL").is_none(),
            "promtool is required (ERNIC_REQUIRE_PROMTOOL) but not installed"
        );
        println!("skipping promtool check metrics: promtool is not installed (Debian: prometheus)");
        return;
    }
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    // promtool exits 1 for lint findings (e.g. a counter without _total)
    // and 3 for a body it cannot parse; neither may happen.
    assert!(
        out.status.success(),
        "promtool check metrics: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ernic-exporter-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn instance(name: &str) -> Instance {
    Instance {
        node_id: Some(2),
        started_unix_ms: 1_764_680_000_000,
        ..Instance::this_process("ernic-server", Some(name))
    }
}

/// A stats file holding every kind docs/stats.md lists, as the writers of
/// each name them.
fn representative(name: &str) -> StatsDoc {
    let mut d = StatsDoc::new(&instance(name));
    let core = ernic_core::Counters::default();
    d.push(Group::new("device").core_counters(&core));
    d.push(Group::new("qp").label("qpn", 17).core_counters(&core));
    d.push(
        Group::new("admin")
            .label("opcode", 5)
            .label("command", "stats_vals")
            .label("status", 0)
            .counter("commands", 3),
    );
    d.push(Group::new("lif").label("lif", 0).counters([
        ("tx_ucast_bytes", 1),
        ("tx_ucast_packets", 1),
        ("rx_ucast_bytes", 1),
        ("rx_ucast_packets", 1),
    ]));
    d.push(Group::new("port").label("port", 1).counters([
        ("data_transmitted_bytes", 1_000_000),
        ("data_received_bytes", 2_000_000),
        ("packets_transmitted", 1_000),
        ("packets_received", 2_000),
        ("unicast_packets_transmitted", 990),
        ("unicast_packets_received", 1_990),
        ("multicast_packets_transmitted", 10),
        ("multicast_packets_received", 10),
        ("receive_errors", 4),
        ("transmit_discards", 5),
    ]));
    d.push(Group::new("link").label("port", 1).counter("downed", 1));
    d.push(Group::new("mesh").counters([("peers_joined", 2), ("relay_drops", 0)]));
    d.push(Group::new("mesh_peer").label("peer", 3).counters([
        ("frames_sent", 1),
        ("frames_received", 1),
        ("bytes_sent", 1),
        ("bytes_received", 1),
        ("reconnects", 1),
        ("heartbeats_missed", 1),
    ]));
    d.push(Group::new("comm").label("comm", "c0").counters([
        ("messages_sent", 1),
        ("messages_received", 1),
        ("bytes_sent", 1),
        ("bytes_received", 1),
        ("eager_messages", 1),
        ("rdma_messages", 1),
        ("ctrl_messages", 1),
        ("eagain_deferrals", 1),
    ]));
    d.push(Group::new("transport").counter("comms_opened", 1));
    // The in-process targets' kinds, from their own counters.
    let nvme = ernic_nvmeof::stats::NvmeofStats::default();
    nvme.command(false, 0x02, ernic_nvmeof::wire::status::Status::SUCCESS);
    nvme.read(0, 4096);
    d.groups.extend(nvme.groups(1));
    let s3 = ernic_s3::service::ServiceStats::default();
    s3.request(Some(ernic_s3::service::route::Op::PutObject), 200);
    s3.error("NoSuchKey");
    d.groups.extend(s3.groups());
    d.push(
        Group::new("s3_guest")
            .counters([("frames_claimed", 4), ("connections", 1)])
            .gauge("connections_open", 1.0),
    );
    d.faults.push(FaultStat {
        spec: "rx_drop:every=10".into(),
        event: "rx_drop".into(),
        seen: 30,
        fired: 3,
    });
    d
}

#[test]
fn two_files_a_missing_a_stale_and_a_garbage_one_scrape_as_prometheus_reads_them() {
    let d = dir("scrape");
    let (a, b) = (d.join("a.json"), d.join("b.json"));
    let mut da = representative("node-a");
    da.groups.push(
        Group::new("qp")
            .label("qpn", 18)
            .counter("req_tx_writes", 10)
            .gauge("depth", 2.5),
    );
    write_atomic(&a, &da).unwrap();
    let mut db = StatsDoc::new(&instance("node-b"));
    db.push(
        Group::new("qp")
            .label("qpn", 18)
            .counter("req_tx_writes", 7),
    );
    write_atomic(&b, &db).unwrap();
    let stale = d.join("stale.json");
    let mut ds = StatsDoc::new(&instance("node-s"));
    ds.written_unix_ms -= 60_000;
    ds.push(
        Group::new("qp")
            .label("qpn", 18)
            .counter("req_tx_writes", 1),
    );
    write_atomic(&stale, &ds).unwrap();
    let missing = d.join("missing.json");
    let garbage = d.join("garbage.json");
    std::fs::write(
        &garbage,
        b"{\"schema\": \"ernic-stats/1\", \"groups\": [\xff",
    )
    .unwrap();
    let other = d.join("other.json");
    std::fs::write(&other, br#"{"schema":"ernic-stats/2","instance":{"program":"x","name":"n2","pid":1,"version":"9","started_unix_ms":0},"written_unix_ms":0,"groups":[]}"#).unwrap();

    // A FIFO would block a reader that opened it: it is down, not a hang.
    let fifo = d.join("fifo.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let ex = exporter(
        &[&a, &b, &stale, &missing, &garbage, &other, &fifo, &d],
        &["--stale-after", "10"],
    );
    let (status, ctype, body) = get(&ex.addr, "/metrics", None);
    assert_eq!(status, 200);
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    promtool(&body);
    let s = parse(&body);

    // The same series name and group labels under two instances.
    let w = "ernic_qp_req_tx_writes_total";
    assert_eq!(
        value(&s, w, &[("instance", "node-a"), ("qpn", "18")]),
        Value::Counter(10.0)
    );
    assert_eq!(
        value(&s, w, &[("instance", "node-b"), ("qpn", "18")]),
        Value::Counter(7.0)
    );
    assert_eq!(
        value(
            &s,
            "ernic_qp_depth",
            &[("instance", "node-a"), ("qpn", "18")]
        ),
        Value::Gauge(2.5)
    );
    // node_exporter's infiniband names.
    let port = [("instance", "node-a"), ("port", "1")];
    assert_eq!(
        value(&s, "ernic_port_data_transmitted_bytes_total", &port),
        Value::Counter(1e6)
    );
    assert_eq!(
        value(&s, "ernic_port_packets_received_total", &port),
        Value::Counter(2000.0)
    );
    assert_eq!(
        value(&s, "ernic_link_downed_total", &port),
        Value::Counter(1.0)
    );
    // prometheus-parse splits labels at every '=', so a fault's spec
    // (`rx_drop:every=10`) is checked as the exact line (promtool parsed it).
    let fault = r#"{instance="node-a",fault="rx_drop:every=10",event="rx_drop"}"#;
    assert!(
        body.contains(&format!("\nernic_fault_events_total{fault} 30\n")),
        "{body}"
    );
    assert!(
        body.contains(&format!("\nernic_fault_fired_total{fault} 3\n")),
        "{body}"
    );
    let info = [
        ("instance", "node-a"),
        ("program", "ernic-server"),
        ("node_id", "2"),
    ];
    assert_eq!(value(&s, "ernic_info", &info), Value::Gauge(1.0));
    assert_eq!(
        value(&s, "ernic_start_time_seconds", &[("instance", "node-a")]),
        Value::Gauge(1_764_680_000.0)
    );
    let Value::Gauge(age) = value(&s, "ernic_stats_age_seconds", &[("instance", "node-a")]) else {
        panic!("the age is a gauge")
    };
    assert!((0.0..10.0).contains(&age), "{age}");

    // Up and down, each with its path; never an error page.
    let up = |inst: &str, p: &Path| {
        value(
            &s,
            "ernic_up",
            &[("instance", inst), ("path", p.to_str().unwrap())],
        )
    };
    assert_eq!(up("node-a", &a), Value::Gauge(1.0));
    assert_eq!(up("node-b", &b), Value::Gauge(1.0));
    assert_eq!(up("node-s", &stale), Value::Gauge(0.0));
    assert_eq!(up(missing.to_str().unwrap(), &missing), Value::Gauge(0.0));
    assert_eq!(up(garbage.to_str().unwrap(), &garbage), Value::Gauge(0.0));
    assert_eq!(up(other.to_str().unwrap(), &other), Value::Gauge(0.0));
    assert_eq!(up(fifo.to_str().unwrap(), &fifo), Value::Gauge(0.0));
    assert_eq!(up(d.to_str().unwrap(), &d), Value::Gauge(0.0));
    // A stale file's counters are not served as if current.
    assert!(
        !s.iter()
            .any(|x| x.metric == w && x.labels.get("instance") == Some("node-s"))
    );
    // Every counter is typed as one, and named with _total.
    assert!(s.iter().all(|x| !matches!(x.value, Value::Untyped(_))));
    assert!(
        s.iter()
            .filter(|x| matches!(x.value, Value::Counter(_)))
            .all(|x| x.metric.ends_with("_total"))
    );

    // The file changes and the next scrape reads it afresh.
    da.groups
        .last_mut()
        .unwrap()
        .counters
        .insert("req_tx_writes".into(), 11);
    write_atomic(&a, &da).unwrap();
    let s = parse(&get(&ex.addr, "/metrics", None).2);
    assert_eq!(
        value(&s, w, &[("instance", "node-a"), ("qpn", "18")]),
        Value::Counter(11.0)
    );
}

#[test]
fn openmetrics_when_asked_an_index_page_and_404_for_anything_else() {
    let d = dir("negotiate");
    let a = d.join("a.json");
    write_atomic(&a, &representative("node-a")).unwrap();
    let ex = exporter(&[&a], &[]);
    let accept = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    let (status, ctype, body) = get(&ex.addr, "/metrics", Some(accept));
    assert_eq!(status, 200);
    assert_eq!(
        ctype,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("# TYPE ernic_port_packets_received counter\n"));
    assert!(
        body.contains("\nernic_port_packets_received_total{instance=\"node-a\",port=\"1\"} 2000\n")
    );
    let (status, _, body) = get(&ex.addr, "/", None);
    assert_eq!(status, 200);
    assert!(body.contains("<a href=\"/metrics\">"), "{body}");
    assert_eq!(get(&ex.addr, "/metricsx", None).0, 404);
    assert_eq!(get(&ex.addr, "/favicon.ico", None).0, 404);
}

#[test]
fn names_and_labels_from_a_file_are_sanitized_and_never_collide() {
    let d = dir("sanitize");
    let (a, b) = (d.join("a.json"), d.join("b.json"));
    let mut doc = StatsDoc::new(&instance("same"));
    doc.push(
        Group::new("weird-kind")
            .label("instance", "spoof")
            .label("bad label", "x\"y\\z\nw")
            .counter("odd.name/x", 5),
    );
    write_atomic(&a, &doc).unwrap();
    write_atomic(&b, &doc).unwrap();
    let ex = exporter(&[&a, &b], &[]);
    let body = get(&ex.addr, "/metrics", None).2;
    promtool(&body);
    let s = parse(&body);
    let m = "ernic_weird_kind_odd_name_x_total";
    assert_eq!(
        value(&s, m, &[("instance", "same"), ("group_instance", "spoof")]),
        Value::Counter(5.0)
    );
    let later = format!("same@{}", b.display());
    assert_eq!(value(&s, m, &[("instance", &later)]), Value::Counter(5.0));
    assert!(body.contains("bad_label=\"x\\\"y\\\\z\\nw\""), "{body}");
}

/// Every `ernic_…` name in the dashboard's PromQL expressions.
fn dashboard_metrics() -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/grafana/ernic.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut exprs = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        serde_json::Value::String(s) if k == "expr" || k == "query" => {
                            out.push(s.clone())
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(&json, &mut exprs);
    assert!(exprs.len() >= 20, "{} expressions", exprs.len());
    let mut names = BTreeSet::new();
    for e in &exprs {
        let b = e.as_bytes();
        let mut i = 0;
        while let Some(at) = e[i..].find("ernic_") {
            let start = i + at;
            let word_start =
                start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
            let end = start
                + e[start..]
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(e.len() - start);
            if word_start {
                names.insert(e[start..end].to_string());
            }
            i = end;
        }
    }
    names
}

#[test]
fn every_metric_the_grafana_dashboard_queries_is_served() {
    let d = dir("dashboard");
    let a = d.join("a.json");
    write_atomic(&a, &representative("node-a")).unwrap();
    let ex = exporter(&[&a], &[]);
    let served: BTreeSet<String> = parse(&get(&ex.addr, "/metrics", None).2)
        .into_iter()
        .map(|s| s.metric)
        .collect();
    let wanted = dashboard_metrics();
    let missing: Vec<&String> = wanted.difference(&served).collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics the exporter does not serve: {missing:?}"
    );
    assert!(wanted.contains("ernic_up") && wanted.contains("ernic_fault_fired_total"));
}
