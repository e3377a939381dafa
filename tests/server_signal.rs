//! `ernic-server` stopped by SIGTERM or SIGINT, as a service manager or a
//! person at the terminal stops it: it ends the client's session, writes
//! the stats file one last time with the counts of the whole run, removes
//! its socket and exits 0. The file is rewritten only once an hour here
//! (`--stats-interval-ms`), so counts made after the first write can only
//! be in it if the last write happened.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ernic-server` on DIR/ernic.sock with its stats file DIR/stats.json
/// rewritten hourly, once its socket is there.
fn start(name: &str) -> (Kill, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("ernic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sock, stats) = (dir.join("ernic.sock"), dir.join("stats.json"));
    let _ = std::fs::remove_file(&sock);
    let _ = std::fs::remove_file(&stats);
    let child = Command::new(env!("CARGO_BIN_EXE_ernic-server"))
        .args(["--socket", sock.to_str().unwrap()])
        .args(["--stats-file", stats.to_str().unwrap()])
        .args(["--stats-interval-ms", "3600000"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Kill(child);
    within("the socket", || sock.exists().then_some(()));
    (server, sock, stats)
}

/// A bounded wait for what the server does.
fn within<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    common::within(what, Duration::from_secs(10), f)
}

/// Sends the signal named `sig` (`TERM`, `INT`) to the server, by kill(1).
fn signal(server: &Kill, sig: &str) {
    let ok = Command::new("kill")
        .args(["-s", sig, &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill -s {sig}: {ok}");
}

/// Waits (bounded) for the server to exit; its status.
fn exit_of(server: &mut Kill) -> std::process::ExitStatus {
    within("the server's exit", || server.0.try_wait().unwrap())
}

fn create_cqs(doc: &ernic_ops::StatsDoc) -> Option<u64> {
    doc.counter(
        "admin",
        &[("command", "create_cq"), ("status", "0")],
        "commands",
    )
}

fn read(stats: &Path) -> ernic_ops::StatsDoc {
    ernic_ops::read_stats(stats).unwrap()
}

#[test]
fn sigterm_with_a_client_attached_writes_the_whole_runs_counts_and_exits_0() {
    let (mut server, sock, stats) = start("signal-term");
    let mut d = ernic_ionic_driver::Driver::attach(&sock, 1 << 20).unwrap();
    // The first write, as the client attached: no CQ yet.
    let first = within("the first stats file", || {
        ernic_ops::read_stats(&stats).ok()
    });
    assert_eq!(create_cqs(&first), None);
    for _ in 0..3 {
        d.create_cq(6).unwrap();
    }
    signal(&server, "TERM");
    assert_eq!(exit_of(&mut server).code(), Some(0));
    let last = read(&stats);
    assert_eq!(create_cqs(&last), Some(3));
    assert!(last.written_unix_ms >= first.written_unix_ms);
    assert!(!sock.exists(), "the socket is removed at exit");
}

#[test]
fn sigint_with_no_client_exits_0_and_removes_the_socket() {
    let (mut server, sock, stats) = start("signal-int");
    signal(&server, "INT");
    assert_eq!(exit_of(&mut server).code(), Some(0));
    assert!(!sock.exists());
    // No client ever came: the file has the device's zeros.
    assert_eq!(
        read(&stats).counter("ionic", &[], "rdma_admin_commands"),
        Some(0)
    );
}

/// `ernic ARGS --stats-file DIR/stats.json` stopped by SIGTERM once its
/// file is there: it exits 0, and its file was written after the signal.
fn service_stops_on_sigterm(name: &str, args: &[&str]) {
    let dir = std::env::temp_dir().join(format!("ernic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("stats.json");
    let _ = std::fs::remove_file(&stats);
    let child = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(args)
        .args(["--stats-file", stats.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut service = Kill(child);
    within("the first stats file", || {
        ernic_ops::read_stats(&stats).ok()
    });
    let before = ernic_ops::schema::unix_ms(std::time::SystemTime::now());
    signal(&service, "TERM");
    assert_eq!(exit_of(&mut service).code(), Some(0), "ernic {args:?}");
    let last = read(&stats);
    assert!(
        last.written_unix_ms >= before,
        "ernic {args:?}: the file was last written {} ms before the signal",
        before - last.written_unix_ms
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_services_stop_on_sigterm_with_their_stats_file_written_last() {
    service_stops_on_sigterm("signal-nvme", &["nvme", "serve"]);
    service_stops_on_sigterm("signal-s3", &["s3", "serve", "anonymous"]);
    service_stops_on_sigterm("signal-mesh", &["mesh", "manager", "--listen", "0"]);
}
