//! `ernic perf`: perftest's `ib_*` tools over ernic.
//!
//! Each test is written once, as what the client side and the server side
//! each do with a connected RC QP ([`tests`]); the two sides meet only at
//! barriers of an out-of-band channel ([`Oob`]). In one process the two sides
//! are two threads on the loopback fabric ([`loopback`]).

mod baseline;
mod ionic;
mod loopback;
mod ops;
mod remote;
mod report;
mod tests;

use std::fmt;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

/// The perftest tests ernic runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Test {
    /// RDMA WRITE bandwidth (ib_write_bw).
    WriteBw,
    /// RDMA WRITE ping-pong latency, polling memory (ib_write_lat).
    WriteLat,
    /// RDMA READ bandwidth (ib_read_bw).
    ReadBw,
    /// RDMA READ latency (ib_read_lat).
    ReadLat,
    /// SEND bandwidth (ib_send_bw).
    SendBw,
    /// SEND ping-pong latency (ib_send_lat).
    SendLat,
    /// Fetch-and-add latency (ib_atomic_lat).
    AtomicLat,
}

impl Test {
    /// Whether the test measures bandwidth (else latency).
    pub fn is_bw(self) -> bool {
        matches!(self, Test::WriteBw | Test::ReadBw | Test::SendBw)
    }

    /// The name perftest prints in its banner.
    pub fn banner(self) -> &'static str {
        match self {
            Test::WriteBw => "RDMA_Write BW Test",
            Test::WriteLat => "RDMA_Write Latency Test",
            Test::ReadBw => "RDMA_Read BW Test",
            Test::ReadLat => "RDMA_Read Latency Test",
            Test::SendBw => "Send BW Test",
            Test::SendLat => "Send Latency Test",
            Test::AtomicLat => "Atomic FETCH_AND_ADD Latency Test",
        }
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            self.to_possible_value()
                .expect("no skipped variants")
                .get_name(),
        )
    }
}

/// Arguments of `ernic perf`.
#[derive(Args, Debug, Clone)]
#[command(after_help = "\
With no HOST and no --server, both sides run in this process, each on its own
thread, over the loopback fabric. With --server on one machine and HOST on the
other (perftest-style), the two processes meet over TCP on -p PORT, and the
RDMA traffic crosses the ernic TCP mesh; the client prints the results. The
server serves one client, then exits; a connection that is not an ernic perf
client (a port scan, garbage, another test) is refused with one line on
stderr, and the server keeps waiting.

Bandwidth is reported in MB/sec (2^20 bytes) in the table, as perftest does, and
in Gbit/s (10^9 bits) as bw_gbps in JSON. Latency is one-way (half the round
trip) for write_lat and send_lat, the full round trip for read_lat and atomic_lat.

--baseline measures, in the same run, memcpy of the same size (bandwidth tests)
or a ping-pong between two threads through shared memory (latency tests) in
one process; across two processes, a plain TCP stream (bandwidth) or a TCP
ping-pong (latency) between the same two processes. It prints ratio = ernic's
figure / the baseline's: for bandwidth higher is better, for latency lower is
better.

Examples:
  ernic perf write_bw -s 1M --baseline
  ernic perf send_lat -s 8 -n 100000
  ernic perf read_bw -a --json
  ernic perf write_bw --server              (on one side)
  ernic perf write_bw 10.0.0.1 -s 1M --baseline   (on the other)
  ernic perf write_bw 10.0.0.1 -s 64M -b   (both directions at once, summed)
  ernic perf write_bw --server -p 0        (any free port: the server prints it)
  ernic perf send_lat --device vfio-user:/tmp/ernic.sock   (through ernic-server's ionic NIC)")]
pub struct PerfArgs {
    /// The test to run.
    pub test: Test,
    /// Run against `ernic perf TEST --server` on this host (over the TCP mesh).
    #[arg(conflicts_with = "server")]
    pub host: Option<String>,
    /// Wait for a client (`ernic perf TEST HOST`) and serve its run.
    #[arg(long)]
    pub server: bool,
    /// Out-of-band port the server listens on.
    #[arg(short = 'p', long = "port", default_value_t = remote::DEFAULT_PORT)]
    pub port: u16,
    /// Message size in bytes; K, M and G suffixes are powers of 1024 (4K, 1M).
    /// Default: 65536 for bandwidth tests, 2 for latency tests (8 for atomic_lat).
    #[arg(short = 's', long = "size", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Iterations per size. Default: 5000 for bandwidth, 1000 for latency.
    #[arg(short = 'n', long = "iters")]
    pub iters: Option<u64>,
    /// Run every size from 2 bytes to 8 MiB in powers of two.
    #[arg(short = 'a', long = "all", conflicts_with = "size")]
    pub all: bool,
    /// Also measure a baseline in the same run and print the ratio.
    #[arg(long)]
    pub baseline: bool,
    /// Print one JSON object per size instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Run through an emulated ionic NIC instead of the native verbs:
    /// `vfio-user:SOCKET` attaches ernic's userspace ionic driver to the
    /// ernic-server at SOCKET; both QPs are in this process.
    #[arg(long, value_name = "vfio-user:SOCKET", conflicts_with_all = ["host", "server"])]
    pub device: Option<String>,
    /// Send requests kept in flight by bandwidth tests.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=MAX_TX_DEPTH as i64))]
    pub tx_depth: u32,
    /// Bandwidth tests: both sides move data at once, each to the other (as
    /// perftest's -b); the figures are the sum of the two directions. A
    /// server does what its client asks, with or without it.
    #[arg(short = 'b', long, conflicts_with_all = ["baseline", "device"])]
    pub bidirectional: bool,
    /// Across two processes: seconds either side waits for the other
    /// without a sign of life before it gives up (a wait while the peer
    /// runs a long test lasts as long as the peer is alive on the mesh).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Write this process's counters to a stats file (`ernic-stats/1`, as
    /// `ernic-exporter` reads) about once a second and at the end: each
    /// device and QP of the run, labelled with its side (client, server).
    #[arg(long, value_name = "PATH", conflicts_with = "device")]
    pub stats_file: Option<std::path::PathBuf>,
    /// Arm faults, EVENT:PATTERN[,...] (see ernic-server --help), for this
    /// process; they and their counts go to the stats file. Perf has no
    /// transport: only the engine's events (send_err, recv_err) apply.
    #[arg(long, value_name = "SPEC", conflicts_with = "device")]
    pub inject: Option<String>,
}

/// Reads `--timeout`: seconds, fractions allowed, more than 0 and at most a day.
fn parse_timeout(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds (say 30, or 0.5)"))?;
    if !(v > 0.0 && v <= 86_400.0) {
        return Err(format!("{s}: give more than 0 and at most 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Reads `64`, `4K`, `1M`, `2G` (powers of 1024), as everywhere in ernic.
pub use ernic_core::types::parse_size;

/// Largest message `ernic perf` runs (it allocates two buffers of this size).
const MAX_SIZE: u64 = 1 << 30;

/// The sizes and iteration count a run covers.
#[derive(Debug, Clone)]
pub struct Plan {
    pub test: Test,
    pub sizes: Vec<u64>,
    pub iters: u64,
    pub tx_depth: u32,
    /// Both directions at once (bandwidth tests).
    pub bidir: bool,
}

impl Plan {
    pub fn from_args(a: &PerfArgs) -> Result<Plan> {
        let sizes: Vec<u64> = if a.all {
            (1..=23).map(|p| 1u64 << p).collect()
        } else {
            let default = match a.test {
                t if t.is_bw() => 65536,
                Test::AtomicLat => 8,
                _ => 2,
            };
            vec![a.size.unwrap_or(default)]
        };
        let iters = a.iters.unwrap_or(if a.test.is_bw() { 5000 } else { 1000 });
        let plan = Plan {
            test: a.test,
            sizes,
            iters,
            tx_depth: a.tx_depth,
            bidir: a.bidirectional,
        };
        plan.check()?;
        Ok(plan)
    }

    /// Checks what the command line or a client's handshake asked for.
    pub fn check(&self) -> Result<()> {
        if self.sizes.is_empty() {
            bail!("no message sizes");
        }
        for &s in &self.sizes {
            if s == 0 || s > MAX_SIZE {
                bail!("message size {s} is outside 1 byte ..= 1 GiB");
            }
            if self.test == Test::AtomicLat && s != 8 {
                bail!("atomic_lat moves exactly 8 bytes; leave out -s or give -s 8");
            }
        }
        if self.bidir && !self.test.is_bw() {
            bail!("-b (both directions) applies to write_bw, read_bw and send_bw");
        }
        if self.iters == 0 {
            bail!("-n must be at least 1");
        }
        if !(1..=MAX_TX_DEPTH).contains(&self.tx_depth) {
            bail!("--tx-depth {}: between 1 and {MAX_TX_DEPTH}", self.tx_depth);
        }
        Ok(())
    }
}

/// The most send requests a bandwidth test keeps in flight.
const MAX_TX_DEPTH: u32 = 8192;

/// The out-of-band channel the two sides synchronise over.
pub trait Oob: Send + Sync {
    /// Waits until the other side reaches the same barrier.
    fn barrier(&self) -> Result<()>;
}

/// Runs `ernic perf`.
pub fn run(a: &PerfArgs) -> Result<()> {
    let ops = ops::Ops::start(a)?;
    if a.server {
        remote::server(a.test, a.port, a.json, a.timeout, &ops)?;
        ops.finish();
        return Ok(());
    }
    let plan = Plan::from_args(a)?;
    let socket = match a.device.as_deref() {
        None => None,
        Some(d) => match d.strip_prefix("vfio-user:") {
            Some(p) if !p.is_empty() => Some(std::path::PathBuf::from(p)),
            _ => bail!("--device {d}: write vfio-user:SOCKET (an ernic-server's socket)"),
        },
    };
    let transport = match (&a.host, &socket) {
        (_, Some(p)) => format!(
            "ionic over vfio-user at {} (both QPs in this process)",
            p.display()
        ),
        (Some(h), None) => format!("ernic TCP mesh to {h} (two processes)"),
        (None, None) => "loopback fabric (both sides in this process)".to_string(),
    };
    let mut out = report::Reporter::new(plan.test, a.json, a.baseline, transport, a.host.is_some());
    if socket.is_some() {
        out = out.kind("ionic");
    }
    out = out.bidirectional(plan.bidir);
    out.header(&plan);
    match (&a.host, &socket) {
        (_, Some(p)) => ionic::run(&plan, p, a.baseline, &mut |row| out.row(&row))?,
        (Some(h), None) => {
            let timeout = a.timeout;
            remote::client(&plan, h, a.port, a.baseline, timeout, &ops, &mut |row| {
                out.row(&row)
            })?
        }
        (None, None) => loopback::run(&plan, a.baseline, &ops, &mut |row| out.row(&row))?,
    }
    out.footer();
    ops.finish();
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn sizes_parse_like_perftest() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert!(parse_size("1X").unwrap_err().contains("unknown unit"));
        assert!(parse_size("K").unwrap_err().contains("not a size"));
        assert!(parse_size("99999999999999999999").is_err());
    }

    #[test]
    fn timeouts_are_seconds_above_zero() {
        assert_eq!(parse_timeout("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_timeout("30"), Ok(Duration::from_secs(30)));
        for bad in ["0", "-1", "NaN", "soon", "1e9"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }
}
