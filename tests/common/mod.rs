//! Helpers for tests that run the `ernic` binaries: a one-shot run, a
//! bounded wait for a process that should exit by itself, and a handle on
//! an `ernic mesh node` process (JSON commands in, one JSON line per
//! answer out).
#![allow(dead_code, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod netns;

/// Polls `f` every 10 ms until it gives a value, for at most `limit`;
/// panics naming `what` if it never does.
pub fn within<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "{what} did not come in {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `ernic` with `args`: (success, stdout, stderr).
pub fn ernic(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(args)
        .output()
        .expect("run ernic");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits at most `limit` for `child` (its stderr piped) to exit by itself,
/// killing it if it does not: how it exited (`None`: it did not), and what
/// it wrote to stderr.
pub fn exit_within(mut child: Child, limit: Duration) -> (Option<ExitStatus>, String) {
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

/// How long a node may take to answer.
pub const T: Duration = Duration::from_secs(60);

pub struct Node {
    pub child: Child,
    pub stdin: ChildStdin,
    pub out: Receiver<String>,
    pub id: u64,
    pub gid: String,
}

impl Node {
    /// Starts `cmd` (which runs `ernic mesh node ...`) and waits until the
    /// node has registered. `ERNIC_TEST_LOG=1` lets its stderr through.
    pub fn spawn(mut cmd: Command) -> Node {
        let err = if std::env::var_os("ERNIC_TEST_LOG").is_some() {
            Stdio::inherit()
        } else {
            Stdio::null()
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .expect("start ernic mesh node");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, out) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let ready: Value = serde_json::from_str(&out.recv_timeout(T).expect("node ready")).unwrap();
        Node {
            child,
            stdin,
            out,
            id: ready["node"].as_u64().unwrap(),
            gid: ready["gid"].as_str().unwrap().to_string(),
        }
    }

    /// Sends a command and returns the answer, error or not.
    pub fn try_call(&mut self, v: Value) -> Value {
        writeln!(self.stdin, "{v}").expect("node stdin");
        self.stdin.flush().unwrap();
        let line = self
            .out
            .recv_timeout(T)
            .unwrap_or_else(|_| panic!("no answer to {v}"));
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a command and returns the answer, which must not be an error.
    pub fn call(&mut self, v: Value) -> Value {
        let r = self.try_call(v.clone());
        assert!(r.get("error").is_none(), "{v} -> {r}");
        r
    }

    /// Sends a signal (`-STOP`, `-CONT`, ...) to the node.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A local TCP port free a moment ago (for a server the test starts next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}

/// A child process killed when dropped (a helper the test runs beside the
/// processes it checks).
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `ernic perf ARGS --server -p 0` and answers it with the port it
/// says it waits on (its stderr is read by a thread until it ends).
pub fn perf_server(args: &[&str]) -> (Reaped, String) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .arg("perf")
        .args(args)
        .args(["--server", "-p", "0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start ernic perf --server");
    let err = server.stderr.take().unwrap();
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let port = loop {
        let l = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the server says where it waits");
        if let Some(p) = l.split("on port ").nth(1) {
            break p.split_whitespace().next().unwrap().to_string();
        }
    };
    (Reaped(server), port)
}
