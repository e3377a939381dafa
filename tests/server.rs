//! `ernic-server` as a user runs it: the socket it makes, a client that
//! attaches and reads the function's identity, then another client after
//! the first left, and bad flags.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ernic_vfio::client::Client;
use ernic_vfio::pci::region;
use ernic_vfio::proto::Capabilities;

struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `ernic-server --socket DIR/ernic.sock ARGS` in a fresh `DIR`
/// named for `name`, and waits for its socket.
fn start(name: &str, args: &[&str]) -> (Kill, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ernic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ernic.sock");
    let server = Kill(
        Command::new(env!("CARGO_BIN_EXE_ernic-server"))
            .args(["--socket", sock.to_str().unwrap()])
            .args(args)
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        assert!(Instant::now() < end, "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    (server, dir, sock)
}

#[test]
fn the_server_serves_one_client_after_another_on_an_owner_only_socket() {
    let stats_at = std::env::temp_dir().join(format!(
        "ernic-server-cli-{}/stats.json",
        std::process::id()
    ));
    let (_server, dir, sock) = start(
        "server-cli",
        &[
            "--nic-profile",
            "small",
            "--stats-file",
            stats_at.to_str().unwrap(),
        ],
    );
    let end = Instant::now() + Duration::from_secs(10);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "owner-only");
    for _ in 0..2 {
        let mut c = loop {
            match Client::connect(&sock, Duration::from_secs(10)) {
                Ok(c) => break c,
                Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("{e}"),
            }
        };
        c.version(&Capabilities::default()).unwrap();
        let cfg = c.region_read(region::CONFIG, 0, 4).unwrap();
        assert_eq!(cfg, [0xd8, 0x1d, 0x02, 0x10], "1dd8:1002");
        let msix = c.region_read(region::CONFIG, 0x40, 4).unwrap();
        assert_eq!(
            u16::from_le_bytes([msix[2], msix[3]]) & 0x7ff,
            7,
            "small: 8 vectors"
        );
    }
    // While a client is attached, the counters are written as JSON.
    let c = Client::connect(&sock, Duration::from_secs(10)).unwrap();
    let stats = dir.join("stats.json");
    let end = Instant::now() + Duration::from_secs(10);
    let v: serde_json::Value = loop {
        if let Ok(t) = std::fs::read_to_string(&stats) {
            if let Ok(v) = serde_json::from_str(&t) {
                break v;
            }
        }
        assert!(Instant::now() < end, "no stats file");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(v["device_commands"].is_u64() && v["rx_packets"] == 0, "{v}");
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_are_one_clear_line() {
    for (args, says) in [
        (
            vec!["--socket", "/tmp/ernic-x.sock", "--nic-profile", "nosuch"],
            "no profile \"nosuch\"",
        ),
        (vec!["--nic-profile", "compat"], "--socket <SOCKET>"),
        (
            vec!["--socket", "/", "--log-level", "loud"],
            "invalid value 'loud'",
        ),
        (
            vec!["--socket", "/tmp/ernic-x.sock", "--backend", "nvmeof"],
            "not built yet",
        ),
        (
            vec!["--socket", "/tmp/ernic-x.sock", "--backend", "tcp"],
            "--backend tcp needs --mesh",
        ),
        (
            vec![
                "--socket",
                "/tmp/ernic-x.sock",
                "--mesh",
                "tcp:manager:listen:1",
            ],
            "--mesh goes with --backend tcp",
        ),
        (
            vec![
                "--socket",
                "/tmp/ernic-x.sock",
                "--backend",
                "tcp",
                "--mesh",
                "tcp:boss:1",
            ],
            "--mesh",
        ),
        (
            vec!["--socket", "/tmp/ernic-x.sock", "--backend", "tcp"]
                .into_iter()
                .chain(["--mesh", "tcp:worker:127.0.0.1:1", "--mesh-wait", "1"])
                .collect(),
            "no answer from the mesh manager",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ernic-server"))
            .args(&args)
            .env("ERNIC_TCP_GUEST_GIDS", "fe80::1, 10.0.0.2")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn two_servers_join_one_mesh() {
    let dir = std::env::temp_dir().join(format!("ernic-server-mesh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let start = |name: &str, spec: String, gids: &str| {
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        Kill(
            Command::new(env!("CARGO_BIN_EXE_ernic-server"))
                .args([
                    "--socket",
                    dir.join(format!("{name}.sock")).to_str().unwrap(),
                ])
                .args(["--backend", "tcp", "--mesh", &spec, "--mesh-wait", "10"])
                .env("ERNIC_TCP_GUEST_GIDS", gids)
                .stderr(log)
                .spawn()
                .unwrap(),
        )
    };
    let _manager = start("m", format!("tcp:manager:listen:{port}"), "10.0.0.1");
    let _worker = start(
        "w",
        format!("tcp:worker:127.0.0.1:{port}"),
        "10.0.0.2,fe80::2",
    );
    let end = Instant::now() + Duration::from_secs(15);
    for (name, says) in [
        ("m", "mesh node 0"),
        ("w", "mesh node 1"),
        ("w", "2 guest GID(s)"),
    ] {
        loop {
            let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap();
            if log.contains(says) && dir.join(format!("{name}.sock")).exists() {
                break;
            }
            assert!(Instant::now() < end, "{name}: no {says:?} in {log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_ernic-server"))
        .args(["--socket", dir.join("x.sock").to_str().unwrap()])
        .args([
            "--backend",
            "tcp",
            "--mesh",
            &format!("tcp:worker:127.0.0.1:{port}"),
        ])
        .env("ERNIC_TCP_GUEST_GIDS", "10.0.0.3,nonsense")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("\"nonsense\" is not an IPv6 or IPv4"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `ernic perf --device vfio-user:SOCKET` runs every test through an
/// ernic-server's ionic NIC (its shared doorbell pages), and names the
/// form it wants when given another device.
#[test]
fn perf_runs_through_the_ionic_nic_of_a_server() {
    let (_server, dir, sock) = start("perf-ionic", &["--nic-profile", "shared-doorbells"]);
    let device = format!("vfio-user:{}", sock.display());
    for (test, field) in [
        ("send_lat", "lat_us_typical"),
        ("write_lat", "lat_us_typical"),
        ("read_lat", "lat_us_typical"),
        ("atomic_lat", "lat_us_typical"),
        ("write_bw", "bw_gbps"),
        ("read_bw", "bw_gbps"),
        ("send_bw", "bw_gbps"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ernic"))
            .args(["perf", test, "--device", &device, "-n", "200", "--json"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{test}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert!(v[field].as_f64().unwrap() > 0.0, "{test}: {v}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["perf", "send_lat", "--device", "rdma0"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("vfio-user:SOCKET"));
    let _ = std::fs::remove_dir_all(&dir);
}
