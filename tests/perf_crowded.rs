//! More pollers than cores: a two-process `ernic perf send_lat` beside three
//! busy processes (an `ernic perf send_bw` pair, whose application threads
//! spin on their CQs, and a process that only spins) still completes, in a
//! bounded time and with a bounded slowdown. Once such a run stalled for
//! 30 s and lost its connection.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{Reaped, perf_server};

/// The whole latency run must end within this.
const LIMIT: Duration = Duration::from_secs(60);

/// Round trips of the checked run.
const ITERS: &str = "2000";

fn spinner() -> Reaped {
    Reaped(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdout(Stdio::null())
            .spawn()
            .expect("start a spinning shell"),
    )
}

#[test]
fn send_lat_beside_three_busy_processes_completes_with_a_bounded_slowdown() {
    // The crowd: a send_bw pair that runs past the checked run (each side
    // gives up 10 s after the other is gone), and a spinner.
    let (bw_server, bw_port) = perf_server(&["send_bw", "-s", "64", "-n", "1000000000"]);
    let bw_client = Reaped(
        Command::new(env!("CARGO_BIN_EXE_ernic"))
            .args(["perf", "send_bw", "127.0.0.1", "-p", &bw_port])
            .args(["-s", "64", "-n", "1000000000", "--timeout", "10"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the send_bw client"),
    );
    let _spin = spinner();
    let mut crowd = [bw_server, bw_client];
    std::thread::sleep(Duration::from_millis(500));

    let (lat_server, port) = perf_server(&["send_lat", "-s", "8", "-n", ITERS]);
    let start = Instant::now();
    let client = Command::new(env!("CARGO_BIN_EXE_ernic"))
        .args(["perf", "send_lat", "127.0.0.1", "-p", &port])
        .args(["-s", "8", "-n", ITERS, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_output(client, LIMIT);
    let took = start.elapsed();
    let out = out.unwrap_or_else(|| panic!("send_lat did not end within {LIMIT:?}"));
    assert!(
        out.status.success(),
        "send_lat failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(lat_server);
    // The crowd was there the whole time.
    for c in &mut crowd {
        assert!(
            c.0.try_wait().unwrap().is_none(),
            "a busy process ended early"
        );
    }
    let row: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("a JSON result line");
    let avg = row["lat_us_avg"].as_f64().unwrap();
    let typical = row["lat_us_typical"].as_f64().unwrap();
    println!(
        "send_lat -s 8 -n {ITERS} beside 3 busy processes: typical {typical:.2} us, \
         mean {avg:.1} us, p99 {} us, {:.2} s in all",
        row["lat_us_p99"],
        took.as_secs_f64()
    );
    // Bounded: each round trip costs at most a few of the scheduler's time
    // slices (about 3 ms each here), never a stall.
    assert!(avg < 20_000.0, "mean one-way latency {avg} us");
}

/// The child's output if it exits within `limit` (killed otherwise).
fn wait_output(mut child: std::process::Child, limit: Duration) -> Option<std::process::Output> {
    let end = Instant::now() + limit;
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
