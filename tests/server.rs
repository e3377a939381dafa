//! `ernic-server` as a user runs it: the socket it makes, a client that
//! attaches and reads the function's identity, then another client after
//! the first left, and bad flags. And what a hostile or careless client or
//! operator could do to it before: shrink the memory it shared, stop
//! reading replies, start a second server on a live socket, point the
//! stats file nowhere, leave its RAM mapped behind it.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ernic_vfio::client::Client;
use ernic_vfio::pci::region;
use ernic_vfio::proto::Capabilities;

mod common;

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
    start_logged(name, args, Stdio::null())
}

/// As `start`, with its stderr in DIR/server.log.
fn start_logging(name: &str, args: &[&str]) -> (Kill, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ernic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    start_logged(name, args, log.into())
}

fn start_logged(
    name: &str,
    args: &[&str],
    stderr: Stdio,
) -> (Kill, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ernic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ernic.sock");
    let _ = std::fs::remove_file(&sock);
    let server = Kill(
        Command::new(env!("CARGO_BIN_EXE_ernic-server"))
            .args(["--socket", sock.to_str().unwrap()])
            .args(args)
            .stderr(stderr)
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
    // While a client is attached, the counters are written (ernic-stats/1).
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
    let doc: ernic_ops::StatsDoc = serde_json::from_value(v.clone()).expect("the stats schema");
    assert_eq!(doc.schema, ernic_ops::SCHEMA, "{v}");
    assert_eq!(doc.instance.program, "ernic-server");
    assert!(
        doc.counter("ionic", &[], "device_commands").is_some(),
        "{v}"
    );
    assert_eq!(
        doc.counter("port", &[("port", "1")], "packets_received"),
        Some(0)
    );
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
            "--log-level \"loud\": \"loud\" is not a level",
        ),
        (
            vec![
                "--socket",
                "/tmp/ernic-x.sock",
                "--backend",
                "s3:colour=blue",
            ],
            "--backend s3: s3 option colour: unknown",
        ),
        (
            vec![
                "--socket",
                "/tmp/ernic-x.sock",
                "--backend",
                "s3",
                "--mesh",
                "tcp:manager:listen:1",
            ],
            "--backend s3 makes a mesh of its own",
        ),
        (
            vec![
                "--socket",
                "/tmp/ernic-x.sock",
                "--backend",
                "s3:addr=192.0.2.20",
            ],
            "or say anonymous",
        ),
        (
            vec!["--socket", "/tmp/ernic-x.sock", "--backend", "nvmeof:ns=1Q"],
            "--backend nvmeof",
        ),
        (
            vec![
                "--socket",
                "/tmp/ernic-x.sock",
                "--backend",
                "nvmeof:addr=10.0.0",
            ],
            "addr=\"10.0.0\": not an IPv4 address",
        ),
        (
            vec!["--socket", "/tmp/ernic-x.sock", "--backend", "nvme"],
            "expected loopback, tcp, none, nvmeof[:OPTS] or s3",
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

/// Waits (bounded) until `f` holds.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    common::within(what, Duration::from_secs(15), || f().then_some(()));
}

/// The server's stderr so far.
fn log_of(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
}

/// Runs `ernic-server ARGS` for at most 5 s: whether it exited by itself
/// (and how), and its stderr.
fn run_briefly(args: &[&str]) -> (Option<std::process::ExitStatus>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_ernic-server"))
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::exit_within(child, Duration::from_secs(5))
}

fn attach(sock: &std::path::Path) -> Client {
    let mut c = Client::connect(sock, Duration::from_secs(10)).unwrap();
    c.version(&Capabilities::default()).unwrap();
    c
}

const GUEST: u64 = 0x4000_0000;
const RAM: u64 = 1 << 20;

/// Runs device command PORT_INIT with its info block at `pa`; answers its
/// completion status.
fn port_init(c: &mut Client, pa: u64) -> u8 {
    let mut cmd = [0u8; 64];
    cmd[0] = ernic_ionic::regs::opcode::PORT_INIT;
    cmd[8..16].copy_from_slice(&pa.to_le_bytes());
    c.region_write(region::BAR0, 0x808, &cmd).unwrap();
    c.region_write(region::BAR0, 0x800, &1u32.to_le_bytes())
        .unwrap();
    c.region_read(region::BAR0, 0x848, 16).unwrap()[0]
}

// Memory not sealed against shrinking is refused, with a line saying why;
// with --allow-unsealed-memory it is taken, and a client that shrinks it
// under a device command's DMA gets the command failed (EFAULT), while the
// server lives and serves the next client. Before, the DMA raised SIGBUS
// and the server died without a word.
#[test]
fn a_client_that_shrinks_its_memory_cannot_kill_the_server() {
    use ernic_ionic::regs::status;
    use ernic_vfio::proto::{DMA_READ, DMA_WRITE};
    let (_server, dir, sock) = start_logging("server-unsealed", &[]);
    let mut c = attach(&sock);
    let ram = ernic_vfio::client::unsealed_memory(c"ernic-unsealed", RAM).unwrap();
    match c.dma_map(GUEST, RAM, 0, DMA_READ | DMA_WRITE, &ram) {
        Err(ernic_vfio::client::ClientError::Refused { errno: 1, .. }) => {}
        other => panic!("an unsealed map must be refused with EPERM: {other:?}"),
    }
    eventually("the refusal is logged", || {
        log_of(&dir).contains("DMA_MAP refused") && log_of(&dir).contains("--allow-unsealed-memory")
    });
    drop(c);

    let (_server, dir, sock) = start_logging("server-shrunk", &["--allow-unsealed-memory"]);
    let mut c = attach(&sock);
    let ram = ernic_vfio::client::unsealed_memory(c"ernic-unsealed", RAM).unwrap();
    c.dma_map(GUEST, RAM, 0, DMA_READ | DMA_WRITE, &ram)
        .unwrap();
    assert_eq!(port_init(&mut c, GUEST + 0x1000), status::SUCCESS);
    std::fs::File::from(ram.try_clone().unwrap())
        .set_len(0)
        .unwrap();
    assert_eq!(port_init(&mut c, GUEST + 0x1000), status::EFAULT);
    assert_eq!(port_init(&mut c, GUEST + 0x3000), status::EFAULT);
    eventually("the vanished window is logged", || {
        log_of(&dir).contains("DMA window 0x40000000 (1048576 bytes) vanished")
    });
    drop(c);
    let mut c = attach(&sock);
    let sealed = ernic_vfio::client::shared_memory(c"ernic-sealed", RAM).unwrap();
    c.dma_map(GUEST, RAM, 0, DMA_READ | DMA_WRITE, &sealed)
        .unwrap();
    assert_eq!(port_init(&mut c, GUEST + 0x1000), status::SUCCESS);
}

// A client that sends requests and never reads a reply: the server goes
// on (its stats file is rewritten meanwhile), cuts the client off once
// its replies waited --client-stall-ms, says so, and serves the next
// client. Before, the reply's send blocked the whole loop for good.
#[test]
fn a_client_that_stops_reading_is_disconnected_and_the_server_goes_on() {
    use std::os::unix::fs::MetadataExt;
    let dir = std::env::temp_dir().join(format!("ernic-server-stall-{}", std::process::id()));
    let stats = dir.join("stats.json");
    let (_server, dir, sock) = start_logging(
        "server-stall",
        &[
            "--client-stall-ms",
            "3000",
            "--stats-file",
            stats.to_str().unwrap(),
        ],
    );
    let c = attach(&sock);
    let stream = c.stream().try_clone().unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        use ernic_vfio::proto::{Command as Cmd, HEADER_LEN, Header};
        use std::os::fd::AsRawFd;
        let body = ernic_vfio::proto::region_io_reply(0, region::CONFIG, 256);
        let mut sent = 0u32;
        for id in 0..200_000u32 {
            let h = Header {
                id: id as u16,
                command: Cmd::RegionRead as u16,
                size: (HEADER_LEN + 16) as u32,
                flags: 0,
                error: 0,
            };
            if ernic_vfio::sock::send_all(stream.as_raw_fd(), &[&h.to_bytes(), &body], &[]).is_err()
            {
                break;
            }
            sent += 1;
        }
        sent
    });
    // While the client stalls, the stats file is replaced (a new inode)
    // twice over.
    let inode = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.ino()).ok();
    eventually("a stats file", || inode(&stats).is_some());
    let mut seen = vec![inode(&stats)];
    eventually("the stats file rewritten while the client stalls", || {
        let now = inode(&stats);
        if now.is_some() && !seen.contains(&now) {
            seen.push(now);
        }
        seen.len() >= 3
    });
    let sent = writer.join().unwrap();
    assert!(sent >= 1000, "only {sent} requests went out");
    eventually("the stalled client is cut off and said to be", || {
        log_of(&dir).contains("took no reply for 3s")
    });
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(2900),
        "cut off after {waited:?}"
    );
    let mut next = attach(&sock);
    assert_eq!(
        next.region_read(region::CONFIG, 0, 4).unwrap(),
        [0xd8, 0x1d, 0x02, 0x10]
    );
    drop(c);
}

// A second server on a live server's socket is refused and leaves it be;
// a stale socket file (nobody listening) is replaced; a file that is not
// a socket is refused and kept. Before, the second server deleted the
// live socket and took over.
#[test]
fn a_live_socket_is_not_taken_over() {
    let (_server, dir, sock) = start("server-live", &[]);
    let (status, err) = run_briefly(&["--socket", sock.to_str().unwrap()]);
    assert!(status.is_some_and(|s| !s.success()), "{status:?}: {err}");
    assert!(err.contains("a server is listening there"), "{err}");
    let mut c = attach(&sock);
    assert_eq!(
        c.region_read(region::CONFIG, 0, 4).unwrap(),
        [0xd8, 0x1d, 0x02, 0x10],
        "the first server still serves its socket"
    );
    drop(c);

    let stale = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let (status, err) = run_briefly(&["--socket", stale.to_str().unwrap()]);
    assert_eq!(status, None, "a stale socket is replaced and served: {err}");

    let plain = dir.join("plain");
    std::fs::write(&plain, b"keep me").unwrap();
    let (status, err) = run_briefly(&["--socket", plain.to_str().unwrap()]);
    assert!(status.is_some_and(|s| !s.success()));
    assert!(err.contains("is not a socket"), "{err}");
    assert_eq!(std::fs::read(&plain).unwrap(), b"keep me");
    let _ = std::fs::remove_dir_all(&dir);
}

// A stats file in a missing directory is refused at start; one that
// cannot be written later is said once. Before, both went unsaid.
#[test]
fn a_stats_file_that_cannot_be_written_is_said() {
    let (status, err) = run_briefly(&[
        "--socket",
        "/tmp/ernic-stats-x.sock",
        "--stats-file",
        "/nonexistent-ernic-dir/stats.json",
    ]);
    assert!(status.is_some_and(|s| !s.success()), "{status:?}: {err}");
    assert!(
        err.contains("--stats-file /nonexistent-ernic-dir/stats.json: the directory /nonexistent-ernic-dir does not exist"),
        "{err}"
    );

    let base = std::env::temp_dir().join(format!("ernic-server-stats-gone-{}", std::process::id()));
    let sub = base.join("stats");
    std::fs::create_dir_all(&sub).unwrap();
    let stats = sub.join("stats.json");
    let (_server, dir, sock) = start_logging(
        "server-stats-gone",
        &["--stats-file", stats.to_str().unwrap()],
    );
    let c = attach(&sock);
    eventually("a stats file", || stats.exists());
    std::fs::remove_dir_all(&sub).unwrap();
    let said = "cannot write the stats file";
    eventually("the failed write is said", || log_of(&dir).contains(said));
    // Two more seconds of failing writes: still said once.
    std::thread::sleep(Duration::from_millis(2200));
    assert_eq!(log_of(&dir).matches(said).count(), 1, "{}", log_of(&dir));
    drop(c);
    let _ = std::fs::remove_dir_all(&base);
}

// A client that used RDMA (a CQ, QPs, an MR) and left: its memory is
// unmapped from the server at once. Before, the RDMA engine's view of
// guest memory kept the departed client's RAM mapped.
#[test]
fn a_departed_clients_memory_is_unmapped() {
    let (server, _dir, sock) = start("server-unmap", &[]);
    let maps = format!("/proc/{}/maps", server.0.id());
    let mapped = || {
        std::fs::read_to_string(&maps)
            .unwrap()
            .contains("memfd:ernic-driver")
    };
    let mut d = ernic_ionic_driver::Driver::attach(&sock, 1 << 20).unwrap();
    let cq = d.create_cq(4).unwrap();
    let a = d.create_qp(&cq, 4).unwrap();
    let b = d.create_qp(&cq, 4).unwrap();
    d.connect(&a, b.qpn()).unwrap();
    let buf = d.alloc(4096).unwrap();
    let _mr = d.reg_mr(buf).unwrap();
    assert!(
        mapped(),
        "the driver's memory is mapped while it is attached"
    );
    drop(d);
    eventually("the departed client's memory unmapped", || !mapped());
}
