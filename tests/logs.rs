//! The one logging switch, end to end on real processes: `ernic-server`
//! and `ernic perf` with `--log-level`, `ERNIC_LOG`, `--log-format json`
//! and `--log-file`. A healthy run at `warn` says nothing; `debug` says
//! why a request was refused; a bad level is one clear error.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ernic_vfio::proto::{HEADER_LEN, Header};

/// Kills the server when the test ends, however it ends.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ernic-logs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `ernic-server` on DIR/ernic.sock with `args` (and `env`), its stderr in
/// DIR/stderr; answers once the socket is there.
fn server(d: &Path, args: &[&str], env: &[(&str, &str)]) -> (Kill, PathBuf) {
    let sock = d.join("ernic.sock");
    let err = std::fs::File::create(d.join("stderr")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ernic-server"));
    cmd.args(["--socket", sock.to_str().unwrap()])
        .args(args)
        .env_remove("ERNIC_LOG")
        .stdout(Stdio::null())
        .stderr(err);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = Kill(cmd.spawn().unwrap());
    let end = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        assert!(Instant::now() < end, "no socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, sock)
}

/// A client that attaches, sets up a CQ and two connected QPs, and leaves.
fn healthy_session(sock: &Path) {
    let mut d = ernic_ionic_driver::Driver::attach(sock, 1 << 20).unwrap();
    let cq = d.create_cq(4).unwrap();
    let a = d.create_qp(&cq, 4).unwrap();
    let b = d.create_qp(&cq, 4).unwrap();
    d.connect(&a, b.qpn()).unwrap();
}

/// A client that sends a DEVICE_GET_INFO without its body (the server
/// refuses it with an error reply) and reads the reply.
fn request_before_version(sock: &Path) {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let h = Header {
        id: 7,
        command: 4,
        size: HEADER_LEN as u32,
        flags: 0,
        error: 0,
    };
    s.write_all(&h.to_bytes()).unwrap();
    let mut reply = [0u8; HEADER_LEN];
    s.read_exact(&mut reply).unwrap();
}

/// Waits (bounded) until `file` has a line containing `what`.
fn said(file: &Path, what: &str) -> String {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        assert!(Instant::now() < end, "no {what:?} in {file:?}: {text}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_healthy_server_at_warn_says_nothing() {
    let d = dir("warn");
    let (mut srv, sock) = server(&d, &["--log-level", "warn"], &[]);
    healthy_session(&sock);
    healthy_session(&sock);
    // The second session ended; give the server its turn to say anything.
    std::thread::sleep(Duration::from_millis(200));
    srv.0.kill().unwrap();
    srv.0.wait().unwrap();
    assert_eq!(std::fs::read_to_string(d.join("stderr")).unwrap(), "");
}

#[test]
fn at_info_the_server_says_each_client_once() {
    let d = dir("info");
    let (_srv, sock) = server(&d, &[], &[]);
    healthy_session(&sock);
    let text = said(&d.join("stderr"), "client left");
    assert_eq!(text.matches("client attached").count(), 1, "{text}");
    assert_eq!(text.matches("client left").count(), 1, "{text}");
    assert!(!text.contains("DEBUG"), "{text}");
}

#[test]
fn debug_says_why_a_request_was_refused_by_flag_and_by_ernic_log() {
    let d = dir("debug-flag");
    let (_srv, sock) = server(&d, &["--log-level", "info,ernic_vfio=debug"], &[]);
    request_before_version(&sock);
    let text = said(&d.join("stderr"), "refused");
    assert!(
        text.contains(
            "vfio-user request refused command=4 error=VFIO_USER_DEVICE_GET_INFO: 0 bytes where 16 are needed"
        ),
        "{text}"
    );

    let d = dir("debug-env");
    let (_srv, sock) = server(&d, &[], &[("ERNIC_LOG", "info,ernic_vfio=debug")]);
    request_before_version(&sock);
    let text = said(&d.join("stderr"), "refused");
    assert!(
        text.contains(
            "vfio-user request refused command=4 error=VFIO_USER_DEVICE_GET_INFO: 0 bytes where 16 are needed"
        ),
        "{text}"
    );

    // At the default level the refusal is not said.
    let d = dir("debug-off");
    let (_srv, sock) = server(&d, &[], &[]);
    request_before_version(&sock);
    let text = said(&d.join("stderr"), "client left");
    assert!(!text.contains("refused"), "{text}");
}

#[test]
fn json_lines_parse_with_level_and_fields() {
    let d = dir("json");
    let (_srv, sock) = server(&d, &["--log-format", "json"], &[]);
    healthy_session(&sock);
    let text = said(&d.join("stderr"), "client left");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 3, "{text}");
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"));
        assert!(v["level"].is_string(), "{l}");
        assert!(v["fields"]["message"].is_string(), "{l}");
    }
    let attached = lines
        .iter()
        .filter(|l| l.contains("\"message\":\"client attached\""))
        .count();
    assert_eq!(attached, 1, "{text}");
}

#[test]
fn the_log_file_gets_the_lines_and_stderr_none() {
    let d = dir("file");
    let file = d.join("server.log");
    let (_srv, sock) = server(&d, &["--log-file", file.to_str().unwrap()], &[]);
    healthy_session(&sock);
    let text = said(&file, "client left");
    assert_eq!(text.matches("client attached").count(), 1, "{text}");
    assert_eq!(std::fs::read_to_string(d.join("stderr")).unwrap(), "");
}

/// `ernic ARGS` without ERNIC_LOG: (status success, stdout, stderr).
fn ernic(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(args)
        .env_remove("ERNIC_LOG")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_healthy_perf_run_at_warn_says_nothing_on_stderr() {
    let (ok, out, err) = ernic(&["perf", "write_bw", "-n", "50", "--log-level", "warn"]);
    assert!(ok, "{err}");
    assert!(out.contains("RDMA_Write BW Test"), "{out}");
    assert_eq!(err, "");
    // The flag is global: before the subcommand too.
    let (ok, _, err) = ernic(&["--log-level", "warn", "perf", "send_lat", "-n", "20"]);
    assert!(ok, "{err}");
    assert_eq!(err, "");
}

#[test]
fn a_bad_log_level_is_one_clear_error() {
    for (args, env) in [
        (vec!["perf", "write_bw", "--log-level", "loud"], None),
        (vec!["perf", "write_bw"], Some("loud")),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ernic"));
        cmd.args(&args);
        match env {
            Some(v) => cmd.env("ERNIC_LOG", v),
            None => cmd.env_remove("ERNIC_LOG"),
        };
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("ernic: --log-level \"loud\": \"loud\" is not a level"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ernic-server"))
        .args([
            "--socket",
            "/tmp/ernic-logs-bad.sock",
            "--log-level",
            "info,ernic_mesh=loud",
        ])
        .env_remove("ERNIC_LOG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ernic-server: --log-level \"info,ernic_mesh=loud\""),
        "{err}"
    );
}

#[test]
fn debug_says_which_admin_command_was_refused_and_how() {
    let d = dir("admin");
    let (_srv, sock) = server(&d, &["--log-level", "info,ernic_ionic=debug"], &[]);
    let mut drv = ernic_ionic_driver::Driver::attach(&sock, 1 << 20).unwrap();
    assert!(drv.raw_admin(200, &[]).is_err(), "opcode 200 is no command");
    let text = said(&d.join("stderr"), "RDMA admin command 200 refused");
    let line = text
        .lines()
        .find(|l| l.contains("RDMA admin command 200 refused"))
        .unwrap();
    assert!(
        line.contains(" DEBUG ernic_ionic::rdmadev::admin: "),
        "{line}"
    );
    assert!(line.contains("opcode=200 status="), "{line}");
}
