//! The RDMA protocol between two processes over a real TCP mesh on
//! loopback: this test binary runs itself again as the receiving process
//! (the ignored test `child`, selected with `--ignored --exact`), which joins
//! the parent's mesh as a worker, listens, prints its handle, and checks
//! every message it receives.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ernic_net::chaos::{Chaos, ChaosConfig};
use ernic_net::config::{Config, Protocol};
use ernic_net::inject::Injected;
use ernic_net::provider::Provider;
use ernic_net::rdma::{Connector, Endpoint, Handle, Request};
use ernic_net::verbs_provider::ErnicProvider;
use ernic_verbs::{Config as VerbsConfig, Fabric, Mesh, MeshConfig, MeshSpec};

const T: Duration = Duration::from_secs(120);

/// (send size, receive size) of every message, and how many may be in
/// flight.
fn scenario(name: &str) -> (Vec<(usize, usize)>, usize) {
    match name {
        "sizes" => {
            let sizes = [
                0,
                1,
                8191,
                8192,
                8193,
                65536,
                131073,
                393217,
                1 << 20,
                16 << 20,
                64 << 20,
            ];
            let v = sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| (s, if i % 2 == 1 { s + 4096 } else { s }))
                .collect();
            (v, 2)
        }
        "many" => (
            (0..5000)
                .map(|i| [8, 4000, 9000, 70_000][i % 4])
                .map(|s| (s, s + (s % 3)))
                .collect(),
            128,
        ),
        "sendrecv" => {
            let sizes = [0, 1, 8192, 131072, 131073, 1 << 20, 64 << 20];
            let mut v: Vec<(usize, usize)> = sizes.iter().map(|&s| (s, s + 1000)).collect();
            v.extend(
                (0..3000)
                    .map(|i| [8, 70_000, 200_000][i % 3])
                    .map(|s| (s, s)),
            );
            (v, 2)
        }
        "chaos" | "storm" => (
            (0..1000)
                .map(|i| [0, 8, 8192, 8193, 200_000][i % 5])
                .map(|s| (s, s))
                .collect(),
            32,
        ),
        "errors" | "cq_err" => (
            (0..600).map(|i| 100_000 + i * 64).map(|s| (s, s)).collect(),
            16,
        ),
        _ => panic!("no scenario {name}"),
    }
}

/// "many" runs over two control rails; the rest over one.
fn control_rails(name: &str) -> usize {
    if name == "many" { 2 } else { 1 }
}

fn config(name: &str) -> Config {
    Config {
        protocol: if name == "sendrecv" {
            Protocol::SendRecv
        } else {
            Protocol::Rdma
        },
        ..Config::default()
    }
}

/// The fault specs of the injector-driven scenarios, by side (seed 1 the
/// sender, 2 the receiver).
fn inject_spec(name: &str, seed: u64) -> Option<&'static str> {
    match (name, seed) {
        // EAGAIN storms on both sides: half of every hundred posts.
        ("storm", 1) => Some("fi_eagain:burst=50/100"),
        ("storm", _) => Some("fi_eagain:every=3"),
        // Four writes of the sender complete in error (one write a message
        // here: 100 KB and up go on one rail, under the 128 KiB stripe).
        ("cq_err", 1) => Some("fi_cq_err:at=3,50,51,200"),
        _ => None,
    }
}

/// Sends that fail in a scenario.
fn failures(name: &str) -> Option<usize> {
    match name {
        "cq_err" => Some(4),
        "errors" => None,
        _ => Some(0),
    }
}

fn provider(fabric: Fabric, name: &str, seed: u64) -> Box<dyn Provider> {
    let p = ErnicProvider::new(fabric);
    if let Some(spec) = inject_spec(name, seed) {
        let injector = std::sync::Arc::new(ernic_core::Injector::parse(spec).unwrap());
        return Box::new(Injected::new(p, injector));
    }
    // The sender (seed 1) fails every 11th write in "errors"; the write
    // still lands, so the receiver sees every message.
    let fail = if name == "errors" && seed == 1 { 11 } else { 0 };
    if name == "chaos" || fail > 0 {
        Box::new(Chaos::new(
            p,
            ChaosConfig {
                again_per_mille: if fail > 0 { 50 } else { 250 },
                reorder: true,
                fail_every_nth_write: fail,
                seed,
            },
        ))
    } else {
        Box::new(p)
    }
}

fn byte(msg: usize, i: usize) -> u8 {
    (i.wrapping_mul(131) ^ msg.wrapping_mul(0x9e37)) as u8
}

/// Tests a request; an injected failure counts in `failed` (as done).
fn done(ep: &mut Endpoint, req: Request, failed: &mut usize) -> Option<usize> {
    match ep.test(req) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.to_string().contains("injected"), "a request failed: {e}");
            *failed += 1;
            Some(0)
        }
    }
}

/// The receiving process.
#[test]
#[ignore = "the receiving process of the two-process tests; they start it"]
fn child() {
    let args = std::env::var("ERNIC_NET_CHILD").expect("run by the two-process tests");
    let mut it = args.split(',');
    let port: u16 = it.next().unwrap().parse().unwrap();
    let rails: usize = it.next().unwrap().parse().unwrap();
    let name = it.next().unwrap().to_string();
    let (msgs, depth) = scenario(&name);
    let mesh = Mesh::start(MeshConfig::new(MeshSpec::Worker {
        host: "127.0.0.1".into(),
        port,
    }))
    .unwrap();
    let p = provider(Fabric::on_mesh(VerbsConfig::default(), mesh), &name, 2);
    let mut ep = Endpoint::open_with(&*p, rails, control_rails(&name), config(&name)).unwrap();
    let slot = msgs.iter().map(|m| m.1).max().unwrap().max(1);
    let mut buf = vec![0u8; slot * depth];
    // SAFETY: `buf` outlives every request; the endpoint is closed first.
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.unwrap();
    let (l, h) = ep.listen().unwrap();
    println!("HANDLE {}", h.to_hex());
    std::io::stdout().flush().unwrap();
    let end = Instant::now() + T;
    let comm = loop {
        if let Some(c) = ep.accept(l).unwrap() {
            break c;
        }
        assert!(Instant::now() < end, "no connection");
    };
    let mut q: VecDeque<(usize, Request)> = VecDeque::new();
    let (mut next, mut got) = (0, 0);
    while got < msgs.len() {
        assert!(Instant::now() < end, "stuck at message {got}");
        while next < msgs.len() && q.len() < depth {
            let p = buf.as_mut_ptr().wrapping_add((next % depth) * slot);
            // SAFETY: the slot is inside the registration and untouched
            // until its receive completes.
            match unsafe { ep.irecv(comm, p, msgs[next].1, mr) }.unwrap() {
                Some(r) => {
                    q.push_back((next, r));
                    next += 1;
                }
                None => break,
            }
        }
        let Some(&(i, r)) = q.front() else {
            // No receive could start (no control buffer free): wait.
            ep.progress();
            continue;
        };
        if let Some(n) = done(&mut ep, r, &mut 0) {
            assert_eq!(n, msgs[i].0, "message {i} completes with the sent size");
            let s = &buf[(i % depth) * slot..][..n];
            assert!(
                s.iter().enumerate().all(|(k, &b)| b == byte(i, k)),
                "message {i} arrived intact"
            );
            q.pop_front();
            got += 1;
        }
    }
    ep.close(comm).unwrap();
    println!("OK {got}");
    println!("VMHWM {}", vm_hwm_kib());
}

/// This process's peak resident set (`VmHWM`), in KiB.
fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let v = s.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap();
    v.trim().trim_end_matches("kB").trim().parse().unwrap()
}

/// The sending process: starts the mesh and the child, sends everything.
fn parent(rails: usize, name: &str) {
    let (msgs, depth) = scenario(name);
    let mesh = Mesh::start(MeshConfig::new(MeshSpec::Manager { port: 0 })).unwrap();
    let port = mesh.listen_addr().port();
    let mut kid = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ERNIC_NET_CHILD", format!("{port},{rails},{name}"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(kid.stdout.take().unwrap()).lines();
    let hex = loop {
        let line = lines.next().expect("the child printed its handle").unwrap();
        // libtest may have begun the line ("test child ... ").
        if let Some(at) = line.find("HANDLE ") {
            break line[at + 7..].to_string();
        }
    };
    let handle = Handle::from_hex(&hex).expect("a handle in hex");
    let p = provider(Fabric::on_mesh(VerbsConfig::default(), mesh), name, 1);
    let mut ep = Endpoint::open_with(&*p, rails, control_rails(name), config(name)).unwrap();
    let slot = msgs.iter().map(|m| m.0).max().unwrap().max(1);
    let mut buf = vec![0u8; slot * depth];
    // SAFETY: as in the child.
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.unwrap();
    let mut c = Connector::new(handle);
    let end = Instant::now() + T;
    let comm = loop {
        if let Some(s) = ep.connect(&mut c).unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "connect did not finish");
    };
    let mut q: VecDeque<Request> = VecDeque::new();
    let mut failed = 0;
    let (mut next, mut sent) = (0, 0);
    while sent < msgs.len() {
        assert!(Instant::now() < end, "stuck at message {sent}");
        while next < msgs.len() && q.len() < depth {
            let off = (next % depth) * slot;
            let len = msgs[next].0;
            for (k, b) in buf[off..off + len].iter_mut().enumerate() {
                *b = byte(next, k);
            }
            let p = buf.as_ptr().wrapping_add(off);
            // SAFETY: the slot is unchanged until its send completes.
            match unsafe { ep.isend(comm, p, len, mr) }.unwrap() {
                Some(r) => {
                    q.push_back(r);
                    next += 1;
                }
                None => break,
            }
        }
        match q.front() {
            Some(&r) => {
                if done(&mut ep, r, &mut failed).is_some() {
                    q.pop_front();
                    sent += 1;
                }
            }
            // Nothing could start yet (the receiver's credits): wait.
            None => ep.progress(),
        }
    }
    let out: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = kid.wait().unwrap();
    assert!(status.success(), "the receiving process failed: {out:?}");
    assert!(
        out.iter().any(|l| l == &format!("OK {}", msgs.len())),
        "{out:?}"
    );
    // Memory stays bounded, faults or not: the receiver's buffers and the
    // endpoint's preallocated rings, plus 128 MiB for everything else.
    let slot = msgs.iter().map(|m| m.1).max().unwrap().max(1);
    let bound = (slot * depth) as u64 / 1024 + (128 << 10);
    let peak: u64 = out
        .iter()
        .find_map(|l| l.strip_prefix("VMHWM "))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("the child reports its peak memory: {out:?}"));
    assert!(
        peak < bound,
        "{name}: the receiver peaked at {peak} KiB (bound {bound})"
    );
    ep.close(comm).unwrap();
    match failures(name) {
        Some(n) => assert_eq!(failed, n, "{failed} sends failed"),
        None => assert!(failed > 0, "{failed} sends failed"),
    }
    // The sender's counters agree with what it saw.
    let groups = ep.stats_groups();
    let total = |n: &str| {
        groups
            .iter()
            .find(|g| g.kind == "transport")
            .unwrap()
            .counters[n]
    };
    assert_eq!(total("messages_sent") as usize, msgs.len() - failed);
    assert_eq!(total("failed_requests") as usize, failed);
    if name == "cq_err" {
        assert_eq!(total("error_completions"), 4);
    }
}

#[test]
fn sizes_to_64_mib_on_one_two_and_four_rails() {
    for rails in [1, 2, 4] {
        parent(rails, "sizes");
    }
}

/// Over two control rails, too.
#[test]
fn five_thousand_messages_with_128_in_flight() {
    parent(2, "many");
}

#[test]
fn random_eagain_and_reordering_on_both_sides() {
    parent(2, "chaos");
}

#[test]
fn the_sendrecv_protocol_between_processes() {
    parent(2, "sendrecv");
}

#[test]
fn injected_error_completions_fail_their_sends_and_the_rest_arrive() {
    parent(2, "errors");
}

/// Under the injector's EAGAIN storms on both sides (the sender half of
/// every hundred posts, the receiver every third): every message arrives
/// intact and no send fails.
#[test]
fn eagain_storms_from_the_injector_lose_nothing() {
    parent(2, "storm");
}

/// The injector fails the sender's 3rd, 50th, 51st and 200th writes:
/// exactly those four sends report the error, and every message arrives.
#[test]
fn injected_fi_cq_err_fails_exactly_the_chosen_sends() {
    parent(2, "cq_err");
}
