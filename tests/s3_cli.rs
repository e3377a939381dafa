//! `ernic s3` as users run it: the store served on a host socket and judged
//! by stock clients (boto3 and the AWS CLI), and the RDMA token path
//! between two processes over the mesh with `ernic s3 put` and `get`.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{ernic, free_port};

const AK: &str = "AKIDSTOCKCLIENTS";
const SK: &str = "stock/clients/secret";

/// A scratch directory removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("ernic-s3-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ernic s3 serve ARGS`, killed when dropped, once its port answers.
struct Serve(Child);

impl Serve {
    fn start(port: u16, args: &[&str]) -> Serve {
        let child = Command::new(env!("CARGO_BIN_EXE_ernic"))
            .args([
                "s3",
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--seconds",
                "600",
            ])
            .args(args)
            .env("ERNIC_TCP_LISTEN", "127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ernic s3 serve");
        let mut s = Serve(child);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(st)) = s.0.try_wait() {
                let mut err = String::new();
                s.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                panic!("ernic s3 serve exited ({st}): {err}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "ernic s3 serve did not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Python with boto3 and the `aws` on PATH, or why not.
fn stock_python() -> Result<String, String> {
    let py = std::env::var("ERNIC_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import boto3, botocore"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return Err(format!("{py} cannot import boto3"));
    }
    if !Command::new("aws")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Err("no aws CLI on PATH".into());
    }
    Ok(py)
}

#[test]
fn boto3_and_the_aws_cli_against_the_store() {
    let py = match stock_python() {
        Ok(p) => p,
        Err(why) if std::env::var_os("ERNIC_REQUIRE_S3_CLIENTS").is_none() => {
            eprintln!(
                "skipped: {why} (CI installs boto3 and awscli; set ERNIC_REQUIRE_S3_CLIENTS=1 to fail instead)"
            );
            return;
        }
        Err(why) => panic!("ERNIC_REQUIRE_S3_CLIENTS is set but {why}"),
    };
    let scratch = Scratch::new("stock");
    let port = free_port();
    let dir = scratch.0.join("store");
    let _serve = Serve::start(
        port,
        &[
            "--access-key",
            AK,
            "--secret-key",
            SK,
            "--dir",
            dir.to_str().unwrap(),
            "--size",
            "2G",
        ],
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/s3/stock_clients.py");
    let out = Command::new(py)
        .args([
            script,
            &format!("http://127.0.0.1:{port}"),
            AK,
            SK,
            scratch.0.to_str().unwrap(),
        ])
        .output()
        .expect("python");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("all checks passed"), "{text}");
}

#[test]
fn put_and_get_by_rdma_between_two_processes() {
    let scratch = Scratch::new("rdma");
    let (http, mesh) = (free_port(), free_port());
    let _serve = Serve::start(
        http,
        &[
            "--anonymous",
            "--mesh",
            &format!("tcp:manager:listen:{mesh}"),
        ],
    );
    let endpoint = format!("127.0.0.1:{http}");
    let worker = format!("tcp:worker:127.0.0.1:{mesh}");
    let (ok, _, err) = ernic(&["s3", "mb", "s3://rdm", "--endpoint", &endpoint]);
    assert!(ok, "{err}");
    // 70 MiB: more than one 64 MiB window, so the put is a multipart upload
    // of two parts and the get two ranged GETs, each by token.
    let data: Vec<u8> = (0..70u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let src = scratch.0.join("src.bin");
    std::fs::write(&src, &data).unwrap();
    let (ok, _, err) = ernic(&[
        "s3",
        "put",
        src.to_str().unwrap(),
        "s3://rdm/obj",
        "--endpoint",
        &endpoint,
        "--mesh",
        &worker,
        "--addr",
        "192.0.2.91",
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("by RDMA"), "put said: {err}");
    let dst = scratch.0.join("dst.bin");
    let (ok, _, err) = ernic(&[
        "s3",
        "get",
        "s3://rdm/obj",
        dst.to_str().unwrap(),
        "--endpoint",
        &endpoint,
        "--mesh",
        &worker,
        "--addr",
        "192.0.2.92",
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("by RDMA"), "get said: {err}");
    assert!(
        std::fs::read(&dst).unwrap() == data,
        "the bytes that came back are the bytes put"
    );
    // The same object in the HTTP body (no mesh) is the same bytes.
    let (ok, _, err) = ernic(&[
        "s3",
        "get",
        "s3://rdm/obj",
        dst.to_str().unwrap(),
        "--endpoint",
        &endpoint,
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("in the HTTP body"), "{err}");
    assert!(std::fs::read(&dst).unwrap() == data);
    let (ok, out, err) = ernic(&["s3", "ls", "s3://rdm", "--endpoint", &endpoint]);
    assert!(ok, "{err}");
    assert!(out.contains(" 73400320  obj"), "{out}");
}

#[test]
fn bad_input_gets_one_clear_line() {
    for (args, says) in [
        (vec!["s3", "serve", "size=12Q", "--seconds", "1"], "size"),
        (vec!["s3", "serve", "--seconds", "1"], "say anonymous"),
        (
            vec!["s3", "serve", "colour=blue", "--seconds", "1"],
            "unknown",
        ),
        (vec!["s3", "get", "http://x/y"], "expected s3://BUCKET/KEY"),
        (
            vec!["s3", "get", "s3://b/k", "--endpoint", "127.0.0.1:1"],
            "connecting to the store",
        ),
    ] {
        let (ok, _out, err) = ernic(&args);
        assert!(!ok, "{args:?} succeeded");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
