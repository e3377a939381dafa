//! `ernic bench`: collectives over the transport across rank processes on
//! this machine, reported like nccl-tests.
//!
//! The command starts a mesh manager and `--nodes` rank processes (this
//! binary again, with the hidden `--rank`), which join the mesh as workers,
//! open a transport endpoint each and connect in a ring: every rank sends
//! to the next and receives from the previous. The parent hands out the
//! ring's listen handles and then each operation and size over the ranks'
//! standard input; every rank runs it, checks its result and answers with
//! its time and its count of wrong elements.
//!
//! The collectives are ring algorithms on `float` data: `all_reduce`
//! (reduce-scatter then all-gather, sum), `all_gather`, and `sendrecv`
//! (each rank to the next). Values are small integers, so every sum is
//! exact and checked element by element.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::ValueEnum;
use ernic_net::config::Config;
use ernic_net::libfabric::LibfabricProvider;
use ernic_net::provider::Provider;
use ernic_net::verbs_provider::{Devices, ErnicProvider};
use ernic_verbs::{Config as VerbsConfig, Fabric, Mesh, MeshConfig, MeshSpec};

use crate::perf::parse_size;

mod rank;
mod ranks;
mod soak;

use ranks::Ranks;

/// A collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Op {
    /// Sum over every rank, result on every rank.
    #[value(name = "all_reduce", alias = "all-reduce")]
    AllReduce,
    /// Every rank's part, gathered on every rank.
    #[value(name = "all_gather", alias = "all-gather")]
    AllGather,
    /// Each rank sends to the next and receives from the previous.
    Sendrecv,
    /// The three in turn.
    All,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::AllReduce => "all_reduce",
            Op::AllGather => "all_gather",
            Op::Sendrecv => "sendrecv",
            Op::All => "all",
        }
    }

    fn parse(s: &str) -> Option<Op> {
        [Op::AllReduce, Op::AllGather, Op::Sendrecv]
            .into_iter()
            .find(|o| o.name() == s)
    }

    /// nccl-tests' bus bandwidth factor for `n` ranks.
    fn bus_factor(self, n: usize) -> f64 {
        let n = n as f64;
        match self {
            Op::AllReduce => 2.0 * (n - 1.0) / n,
            Op::AllGather => (n - 1.0) / n,
            _ => 1.0,
        }
    }
}

/// Arguments of `ernic bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Rank processes to start on this machine (2 to 16).
    #[arg(long, default_value_t = 4)]
    nodes: usize,
    /// The collective to run.
    #[arg(long, value_enum, default_value_t = Op::All)]
    op: Op,
    /// Smallest size (bytes, or with K, M, G); sizes double up to --max-bytes.
    #[arg(long, default_value = "1K", value_parser = parse_size)]
    min_bytes: u64,
    /// Largest size.
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    max_bytes: u64,
    /// The transport's provider: `ernic` (the emulated fabric, over a TCP
    /// mesh between the ranks), `libfabric` (libfabric's choice, which
    /// FI_PROVIDER steers), `libfabric:PROV` (say `libfabric:tcp;ofi_rxm`
    /// or `libfabric:shm`), or `ionic:SOCKET=ADDR,...` (through the
    /// emulated ionic NIC a guest sees: rank N attaches ernic's userspace
    /// driver to the Nth `ernic-server --socket SOCKET`, known by ADDR,
    /// one of that server's ERNIC_TCP_GUEST_GIDS; one SOCKET a rank, the
    /// servers joined by a mesh).
    #[arg(long, default_value = "ernic", value_parser = parse_provider)]
    provider: ProviderChoice,
    /// Data rails per rank.
    #[arg(long, default_value_t = 2)]
    rails: usize,
    /// Timed iterations per size (after one warm-up), at least 1.
    #[arg(long, default_value_t = 5, value_parser = parse_iters)]
    iters: usize,
    /// One JSON object per operation and size instead of the table.
    #[arg(long)]
    json: bool,
    /// Write counters to stats files (`ernic-stats/1`, as `ernic-exporter`
    /// reads): rank N writes PATH.rankN (its transport's counters, per comm
    /// and in total, its devices' counters with `--provider ernic`, and the
    /// faults it armed) about once a second and when it ends.
    #[arg(long, value_name = "PATH")]
    stats_file: Option<PathBuf>,
    /// Inject faults, EVENT:PATTERN[,...] (see ernic-server --help): each
    /// rank arms the spec on its transport and counts events of its own.
    /// `fi_eagain` makes posts answer EAGAIN (retried: the run only slows);
    /// `fi_cq_err` makes a write complete in error (the run stops and names
    /// the rank and the injected error).
    #[arg(long, value_name = "SPEC")]
    inject: Option<String>,
    /// Soak for SECS seconds: rounds of the run, each under a fault schedule
    /// drawn from --seed and printed before it runs, so a failing round
    /// replays with --inject SPEC. A round passes when it succeeds with
    /// #wrong 0, or stops on the error completion it injected.
    #[arg(long, value_name = "SECS", conflicts_with = "inject")]
    soak: Option<u64>,
    /// The soak's seed.
    #[arg(long, default_value_t = 1, requires = "soak")]
    seed: u64,
    /// (Internal) run as rank N, joining the mesh manager on --port.
    #[arg(long, hide = true)]
    rank: Option<usize>,
    /// (Internal) the mesh manager's port.
    #[arg(long, hide = true)]
    port: Option<u16>,
}

const T: Duration = Duration::from_secs(120);

/// Reads `--iters`: the timed runs whose results are checked, so at least one.
fn parse_iters(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0: at least 1 timed iteration (the one warm-up is not timed)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a count of iterations")),
    }
}

/// Polls that find nothing before a waiting rank yields its core, when
/// there is a core for every rank. Two ranks' 64 MiB bandwidth did not
/// change with yielding.
const IDLE_POLLS: u32 = 16;

/// The same when ranks outnumber cores: a rank waits on others that need
/// its core, so it yields at once. Four ranks on two cores, 1 KiB: sendrecv
/// 0.7-6.5 ms without yielding, 0.21-0.26 ms after 16 polls, 0.11-0.18 ms
/// after one; all_reduce 1.2-1.4 ms after 16, 0.6-0.7 ms after one.
const IDLE_POLLS_CROWDED: u32 = 1;

/// Which provider the ranks' endpoints use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderChoice {
    /// ernic's own, over a TCP mesh the bench starts.
    Ernic,
    /// libfabric's, by name or libfabric's choice.
    Libfabric(Option<String>),
    /// ernic's verbs through the emulated ionic NIC: a server's socket and
    /// the address (IPv4, its GID IPv4-mapped) its guest is known by, per
    /// rank.
    Ionic(Vec<(PathBuf, std::net::Ipv4Addr)>),
}

/// Shared memory each rank's driver takes beyond its buffers: rings,
/// the rails' queues and their datagram buffers.
const IONIC_OVERHEAD: u64 = 64 << 20;

impl std::fmt::Display for ProviderChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderChoice::Ernic => f.write_str("ernic"),
            ProviderChoice::Libfabric(None) => f.write_str("libfabric"),
            ProviderChoice::Libfabric(Some(p)) => write!(f, "libfabric:{p}"),
            ProviderChoice::Ionic(socks) => {
                f.write_str("ionic:")?;
                for (i, (s, a)) in socks.iter().enumerate() {
                    let sep = if i == 0 { "" } else { "," };
                    write!(f, "{sep}{}={a}", s.display())?;
                }
                Ok(())
            }
        }
    }
}

fn parse_provider(s: &str) -> Result<ProviderChoice, String> {
    match s.split_once(':') {
        None if s == "ernic" => Ok(ProviderChoice::Ernic),
        None if s == "libfabric" => Ok(ProviderChoice::Libfabric(None)),
        Some(("libfabric", p)) if !p.is_empty() => Ok(ProviderChoice::Libfabric(Some(p.into()))),
        Some(("ionic", list)) => list
            .split(',')
            .map(|one| {
                let (sock, addr) = one.rsplit_once('=').ok_or_else(|| {
                    format!("{one:?}: write SOCKET=ADDR (the guest address the server knows)")
                })?;
                let addr = addr
                    .parse()
                    .map_err(|_| format!("{addr:?} is not an IPv4 address"))?;
                if sock.is_empty() {
                    return Err(format!("{one:?}: no socket before ="));
                }
                Ok((PathBuf::from(sock), addr))
            })
            .collect::<Result<Vec<_>, String>>()
            .map(ProviderChoice::Ionic),
        _ => Err(format!(
            "{s:?}: write ernic, libfabric, libfabric:PROV (for example libfabric:shm), \
             or ionic:SOCKET=ADDR,..."
        )),
    }
}

impl ProviderChoice {
    /// Opens the provider in rank `rank`; `port` is the mesh manager's
    /// (ernic); `memory`, the bytes of buffers the rank will keep (ionic).
    /// With ernic's verbs, also the devices its rails open.
    fn open(
        &self,
        rank: usize,
        port: u16,
        memory: u64,
    ) -> Result<(Box<dyn Provider>, Option<Devices>)> {
        match self {
            ProviderChoice::Ionic(socks) => {
                let (sock, addr) = socks
                    .get(rank)
                    .ok_or_else(|| anyhow!("no ionic socket for rank {rank}"))?;
                let gid = ernic_verbs::Gid(addr.to_ipv6_mapped().octets());
                let dev =
                    ernic_ionic_driver::provider::open(sock, memory + IONIC_OVERHEAD, Some(gid))
                        .with_context(|| {
                            format!("attaching to the ionic device at {}", sock.display())
                        })?;
                let p = ErnicProvider::on_device(dev, ernic_net::verbs_provider::Depths::default());
                let devices = p.devices();
                Ok((Box::new(p), Some(devices)))
            }
            ProviderChoice::Ernic => {
                let mesh = Mesh::start(MeshConfig::new(MeshSpec::Worker {
                    host: "127.0.0.1".into(),
                    port,
                }))
                .context("joining the mesh")?;
                let p = ErnicProvider::new(Fabric::on_mesh(VerbsConfig::default(), mesh));
                let devices = p.devices();
                Ok((Box::new(p), Some(devices)))
            }
            ProviderChoice::Libfabric(name) => Ok((
                Box::new(
                    LibfabricProvider::open(name.as_deref())
                        .map_err(|e| anyhow!("libfabric: {e}"))?,
                ),
                None,
            )),
        }
    }
}

/// Runs `ernic bench`.
pub fn run(a: &BenchArgs) -> Result<()> {
    if let (Some(rank), Some(port)) = (a.rank, a.port) {
        return rank::rank_main(a, rank, port);
    }
    if let ProviderChoice::Libfabric(name) = &a.provider {
        // Found here, so a missing library or provider is one clear line
        // before any rank starts.
        let p = LibfabricProvider::open(name.as_deref())
            .map_err(|e| anyhow!("--provider {}: {e}", a.provider))?;
        tracing::info!("libfabric provider {}", p.describe());
    }
    if !(2..=16).contains(&a.nodes) {
        bail!("--nodes {}: between 2 and 16", a.nodes);
    }
    if let ProviderChoice::Ionic(socks) = &a.provider {
        if socks.len() != a.nodes {
            bail!(
                "--provider ionic: {} sockets for --nodes {}: one server a rank",
                socks.len(),
                a.nodes
            );
        }
    }
    if !(1..=15).contains(&a.rails) {
        bail!("--rails {}: between 1 and 15", a.rails);
    }
    if a.min_bytes > a.max_bytes || a.max_bytes > 1 << 30 {
        bail!("--min-bytes must not exceed --max-bytes, which is at most 1G");
    }
    Config::from_env().map_err(|e| anyhow!("{e}"))?;
    if let Some(spec) = &a.inject {
        ernic_core::Injector::parse(spec).map_err(|e| anyhow!("--inject {spec}: {e}"))?;
    }
    if let Some(p) = &a.stats_file {
        ernic_ops::file::check_writable(p).map_err(|e| anyhow!("--stats-file: {e}"))?;
    }
    if let Some(secs) = a.soak {
        return soak::run(a, secs);
    }
    parent(a)
}

fn sizes(a: &BenchArgs) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = a.min_bytes.max(4);
    while s <= a.max_bytes {
        v.push(s);
        s *= 2;
    }
    v
}

fn parent(a: &BenchArgs) -> Result<()> {
    // The ernic provider's ranks meet on a TCP mesh; libfabric's need none.
    let mesh = match a.provider {
        ProviderChoice::Ernic => Some(
            Mesh::start(MeshConfig::new(MeshSpec::Manager { port: 0 }))
                .context("starting the mesh manager")?,
        ),
        ProviderChoice::Libfabric(_) | ProviderChoice::Ionic(_) => None,
    };
    let port = mesh.as_ref().map_or(0, |m| m.listen_addr().port());
    let exe = std::env::current_exe().context("finding this program")?;
    tracing::info!(
        "{} ranks, {} rails each, provider {}",
        a.nodes,
        a.rails,
        a.provider
    );
    let cmds = (0..a.nodes)
        .map(|r| {
            let mut c = Command::new(&exe);
            c.args([
                "bench",
                "--rank",
                &r.to_string(),
                "--port",
                &port.to_string(),
            ])
            .args(["--rails", &a.rails.to_string()])
            .args(["--max-bytes", &a.max_bytes.to_string()])
            .args(["--nodes", &a.nodes.to_string()])
            .args(["--provider", &a.provider.to_string()])
            .args(crate::log_flags());
            if let Some(p) = &a.stats_file {
                c.arg("--stats-file").arg(p);
            }
            if let Some(spec) = &a.inject {
                c.args(["--inject", spec]);
            }
            c
        })
        .collect();
    let mut ranks = Ranks::spawn(cmds)?;
    // The ring: each rank connects to the next one's handle.
    let mut handles = Vec::with_capacity(a.nodes);
    for l in ranks.gather("starting", T)? {
        handles.push(
            l.strip_prefix("HANDLE ")
                .ok_or_else(|| anyhow!("unexpected line from a rank: {l}"))?
                .to_string(),
        );
    }
    for i in 0..a.nodes {
        ranks.send(i, &format!("PEER {}", handles[(i + 1) % a.nodes]))?;
    }
    for l in ranks.gather("connecting", T)? {
        if l != "READY" {
            bail!("a rank could not connect: {l}");
        }
    }
    let ops: Vec<Op> = match a.op {
        Op::All => vec![Op::AllReduce, Op::AllGather, Op::Sendrecv],
        o => vec![o],
    };
    let mut wrong_total = 0u64;
    // Progress on a terminal: which operation and size is running, on
    // stderr, erased before each row (rows stream to stdout as they come).
    let tty = std::io::stderr().is_terminal();
    let steps = ops.len() * sizes(a).len();
    let mut step = 0;
    for op in ops {
        if !a.json {
            println!("# {} over {} ranks", op.name(), a.nodes);
            println!(
                "#{:>12} {:>12} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8} {:>7}",
                "size", "count", "type", "redop", "root", "time(us)", "algbw", "busbw", "#wrong"
            );
        }
        for size in sizes(a) {
            // All-gather sizes are the gathered total: a whole part per rank.
            let unit = if op == Op::Sendrecv {
                4
            } else {
                4 * a.nodes as u64
            };
            let size = size / unit * unit;
            if size == 0 {
                continue;
            }
            step += 1;
            if tty {
                eprint!(
                    "\r\x1b[K[{step}/{steps}] {} of {size} bytes on {} ranks ...",
                    op.name(),
                    a.nodes
                );
            }
            ranks.send_all(&format!("RUN {} {size} {}", op.name(), a.iters))?;
            let (mut secs, mut wrong) = (0f64, 0u64);
            // Each rank bounds each transfer by T itself.
            let what = format!("running {} of {size} bytes", op.name());
            for l in ranks.gather(&what, T * (a.iters as u32 + 1) * 4)? {
                let f: Vec<&str> = l.split_whitespace().collect();
                match f[..] {
                    ["DONE", t, w] => {
                        secs = secs.max(t.parse().unwrap_or(f64::NAN));
                        wrong += w.parse::<u64>().unwrap_or(u64::MAX / 2);
                    }
                    _ => bail!("a rank failed: {l}"),
                }
            }
            wrong_total += wrong;
            if tty {
                eprint!("\r\x1b[K");
            }
            let algbw = size as f64 / secs / 1e9;
            let busbw = algbw * op.bus_factor(a.nodes);
            let redop = if op == Op::AllReduce { "sum" } else { "none" };
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({"op": op.name(), "size": size, "count": size / 4,
                        "type": "float", "redop": redop, "time_us": secs * 1e6,
                        "algbw_gbps": algbw, "busbw_gbps": busbw, "wrong": wrong,
                        "nodes": a.nodes, "rails": a.rails, "provider": a.provider.to_string()})
                );
            } else {
                println!(
                    " {:>12} {:>12} {:>8} {:>6} {:>6} {:>10.1} {:>8.2} {:>8.2} {:>7}",
                    size,
                    size / 4,
                    "float",
                    redop,
                    -1,
                    secs * 1e6,
                    algbw,
                    busbw,
                    wrong
                );
            }
            std::io::stdout().flush().ok();
        }
    }
    ranks.send_all("QUIT")?;
    let mut peaks = Vec::with_capacity(a.nodes);
    for l in ranks.gather("finishing", T)? {
        let kib = l.strip_prefix("BYE ").and_then(|k| k.parse::<u64>().ok());
        peaks.push(kib.map_or_else(|| "?".to_string(), |k| format!("{} MiB", k / 1024)));
    }
    ranks.finish()?;
    tracing::info!("peak memory (VmHWM) per rank: {}", peaks.join(", "));
    if !a.json {
        println!("# out of bounds values : {wrong_total} (wrong elements over every op and size)");
    }
    if wrong_total > 0 {
        bail!("{wrong_total} elements were wrong");
    }
    Ok(())
}
