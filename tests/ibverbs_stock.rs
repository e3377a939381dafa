//! Stock RDMA programs over ernic's libibverbs, between two processes, each
//! started by `ernic run` as a person would: Debian's perftest (ib_*_bw,
//! ib_*_lat, RC, and UD for send) and ibverbs-utils (the four pingpongs,
//! with their own data checks; ibv_devinfo). Each pair meets on a mesh the
//! first `ernic run` hosts; both programs must exit 0 and the client print
//! its results.

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether the programs are installed; outside CI a machine without them
/// skips, saying so.
fn have(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {t}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert_ne!(
        std::env::var("ERNIC_REQUIRE_RDMA_TOOLS").as_deref(),
        Ok("1"),
        "ERNIC_REQUIRE_RDMA_TOOLS=1 but {missing:?} are not installed"
    );
    println!("skipped: {missing:?} not installed (apt-get install perftest ibverbs-utils)");
    false
}

/// `ernic run --port MESH -- ARGS`, output piped.
fn run(mesh: u16, args: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ernic"));
    c.args([
        "--log-level",
        "warn",
        "run",
        "--port",
        &mesh.to_string(),
        "--",
    ])
    .args(args)
    .env_remove("ERNIC_MESH")
    .env_remove("ERNIC_GID")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    c
}

/// Whether something listens on TCP `port` of this host (read from
/// /proc, so no connection is made: the servers take only one).
fn listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let v: Vec<&str> = l.split_whitespace().collect();
                v.len() > 3
                    && v[3] == "0A"
                    && v[1]
                        .rsplit(':')
                        .next()
                        .is_some_and(|p| u16::from_str_radix(p, 16) == Ok(port))
            })
        })
    })
}

/// Waits for `child` at most `limit`, killing it if it is late.
fn finish(mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs `args` as a server and `args HOST` as its client; answers the
/// client's standard output.
fn pair(n: usize, args: &[&str]) -> String {
    let mesh = 19_600 + n as u16 * 2;
    let tcp = mesh + 1;
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["-p".into(), tcp.to_string()]);
    let server = run(mesh, &a).spawn().unwrap();
    common::within(
        &format!("{args:?}'s server"),
        Duration::from_secs(30),
        || listening(tcp).then_some(()),
    );
    let mut c = a.clone();
    c.push("127.0.0.1".into());
    let client = finish(run(mesh, &c).spawn().unwrap(), Duration::from_secs(90));
    let server = finish(server, Duration::from_secs(30));
    let text = |o: &Output| {
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(
        client.status.success() && server.status.success(),
        "{args:?}: client {}, server {}\n-- client\n{}\n-- server\n{}",
        client.status,
        server.status,
        text(&client),
        text(&server)
    );
    String::from_utf8_lossy(&client.stdout).into_owned()
}

#[test]
fn perftest_and_the_pingpongs_run_between_two_processes() {
    if !have(&["ib_write_bw", "ibv_rc_pingpong", "ibv_devinfo"]) {
        return;
    }
    let info = run(19_598, &["ibv_devinfo".into(), "-v".into()])
        .output()
        .unwrap();
    let info_text = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success(), "ibv_devinfo: {info_text}");
    for want in [
        "hca_id:\ternic0",
        "PORT_ACTIVE",
        "link_layer:\t\tEthernet",
        "GID[  0]:",
    ] {
        assert!(
            info_text.contains(want),
            "ibv_devinfo -v lacks {want:?}:\n{info_text}"
        );
    }
    let bw = [
        &["ib_write_bw", "-x", "0", "-n", "200"][..],
        &["ib_read_bw", "-x", "0", "-n", "200"],
        &["ib_send_bw", "-x", "0", "-n", "200"],
        &["ib_send_bw", "-x", "0", "-n", "200", "-c", "UD"],
        &["ib_atomic_bw", "-x", "0", "-n", "200"],
        &["ib_write_lat", "-x", "0", "-n", "200"],
        &["ib_read_lat", "-x", "0", "-n", "200"],
        &["ib_send_lat", "-x", "0", "-n", "200"],
    ];
    let mut n = 0;
    for args in bw {
        n += 1;
        let out = pair(n, args);
        // The results table: its header and one row of figures.
        let row = out
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("#bytes"))
            .nth(1)
            .unwrap_or_default();
        assert!(
            row.split_whitespace().count() >= 4
                && row.split_whitespace().all(|f| f.parse::<f64>().is_ok()),
            "{args:?}: no results row:\n{out}"
        );
        println!("{}: {}", args.join(" "), row.trim());
    }
    for args in [
        &["ibv_rc_pingpong", "-g", "0", "-n", "200"][..],
        &["ibv_uc_pingpong", "-g", "0", "-n", "200"],
        &["ibv_ud_pingpong", "-g", "0", "-n", "200"],
        &["ibv_srq_pingpong", "-g", "0", "-n", "200"],
        &["ibv_rc_pingpong", "-g", "0", "-n", "200", "-e"],
    ] {
        n += 1;
        let out = pair(n, args);
        let line = out
            .lines()
            .find(|l| l.contains("iters in"))
            .unwrap_or_else(|| panic!("{args:?}: no figures:\n{out}"));
        println!("{}: {}", args.join(" "), line.trim());
    }
}
