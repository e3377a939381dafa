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

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::ValueEnum;
use ernic_net::config::Config;
use ernic_net::libfabric::LibfabricProvider;
use ernic_net::provider::Provider;
use ernic_net::rdma::{Connector, Endpoint, Handle, MrHandle, RecvComm, Request, SendComm};
use ernic_net::verbs_provider::ErnicProvider;
use ernic_verbs::{Config as VerbsConfig, Fabric, Mesh, MeshConfig, MeshSpec};

use crate::perf::parse_size;

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
    /// FI_PROVIDER steers), or `libfabric:PROV` (say `libfabric:tcp;ofi_rxm`
    /// or `libfabric:shm`).
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
}

impl std::fmt::Display for ProviderChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProviderChoice::Ernic => f.write_str("ernic"),
            ProviderChoice::Libfabric(None) => f.write_str("libfabric"),
            ProviderChoice::Libfabric(Some(p)) => write!(f, "libfabric:{p}"),
        }
    }
}

fn parse_provider(s: &str) -> Result<ProviderChoice, String> {
    match s.split_once(':') {
        None if s == "ernic" => Ok(ProviderChoice::Ernic),
        None if s == "libfabric" => Ok(ProviderChoice::Libfabric(None)),
        Some(("libfabric", p)) if !p.is_empty() => Ok(ProviderChoice::Libfabric(Some(p.into()))),
        _ => Err(format!(
            "{s:?}: write ernic, libfabric, or libfabric:PROV (for example libfabric:shm)"
        )),
    }
}

impl ProviderChoice {
    /// Opens the provider in a rank; `port` is the mesh manager's (ernic).
    fn open(&self, port: u16) -> Result<Box<dyn Provider>> {
        match self {
            ProviderChoice::Ernic => {
                let mesh = Mesh::start(MeshConfig::new(MeshSpec::Worker {
                    host: "127.0.0.1".into(),
                    port,
                }))
                .context("joining the mesh")?;
                Ok(Box::new(ErnicProvider::new(Fabric::on_mesh(
                    VerbsConfig::default(),
                    mesh,
                ))))
            }
            ProviderChoice::Libfabric(name) => Ok(Box::new(
                LibfabricProvider::open(name.as_deref()).map_err(|e| anyhow!("libfabric: {e}"))?,
            )),
        }
    }
}

/// Runs `ernic bench`.
pub fn run(a: &BenchArgs) -> Result<()> {
    if let (Some(rank), Some(port)) = (a.rank, a.port) {
        return rank_main(a, rank, port);
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
    if !(1..=15).contains(&a.rails) {
        bail!("--rails {}: between 1 and 15", a.rails);
    }
    if a.min_bytes > a.max_bytes || a.max_bytes > 1 << 30 {
        bail!("--min-bytes must not exceed --max-bytes, which is at most 1G");
    }
    Config::from_env().map_err(|e| anyhow!("{e}"))?;
    parent(a)
}

struct Rank {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Rank {
    fn line(&mut self, what: &str) -> Result<String> {
        self.lines
            .next()
            .ok_or_else(|| anyhow!("a rank exited while {what}"))?
            .context("reading from a rank")
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}").context("writing to a rank")
    }
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
        ProviderChoice::Libfabric(_) => None,
    };
    let port = mesh.as_ref().map_or(0, |m| m.listen_addr().port());
    let exe = std::env::current_exe().context("finding this program")?;
    tracing::info!(
        "{} ranks, {} rails each, provider {}",
        a.nodes,
        a.rails,
        a.provider
    );
    let mut ranks = Vec::with_capacity(a.nodes);
    for r in 0..a.nodes {
        let mut child = Command::new(&exe)
            .args([
                "bench",
                "--rank",
                &r.to_string(),
                "--port",
                &port.to_string(),
            ])
            .args([
                "--rails",
                &a.rails.to_string(),
                "--max-bytes",
                &a.max_bytes.to_string(),
            ])
            .args(["--nodes", &a.nodes.to_string()])
            .args(["--provider", &a.provider.to_string()])
            .args(crate::log_flags())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting a rank")?;
        let stdin = child.stdin.take().expect("piped");
        let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        ranks.push(Rank {
            child,
            stdin,
            lines,
        });
    }
    // The ring: each rank connects to the next one's handle.
    let mut handles = Vec::with_capacity(a.nodes);
    for r in &mut ranks {
        let l = r.line("starting")?;
        handles.push(
            l.strip_prefix("HANDLE ")
                .ok_or_else(|| anyhow!("unexpected line from a rank: {l}"))?
                .to_string(),
        );
    }
    for (i, r) in ranks.iter_mut().enumerate() {
        r.send(&format!("PEER {}", handles[(i + 1) % a.nodes]))?;
    }
    for r in &mut ranks {
        let l = r.line("connecting")?;
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
            for r in &mut ranks {
                r.send(&format!("RUN {} {size} {}", op.name(), a.iters))?;
            }
            let (mut secs, mut wrong) = (0f64, 0u64);
            for r in &mut ranks {
                let l = r.line("running")?;
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
    for r in &mut ranks {
        r.send("QUIT")?;
    }
    for r in &mut ranks {
        let st = r.child.wait().context("waiting for a rank")?;
        if !st.success() {
            bail!("a rank failed ({st})");
        }
    }
    if !a.json {
        println!("# out of bounds values : {wrong_total} (wrong elements over every op and size)");
    }
    if wrong_total > 0 {
        bail!("{wrong_total} elements were wrong");
    }
    Ok(())
}

/// What rank `r` contributes at element `i`: small integers, so sums of up
/// to 16 ranks are exact in `f32`.
fn value(r: usize, i: usize) -> f32 {
    ((r * 7 + i) % 13) as f32
}

struct Me {
    ep: Endpoint,
    send: SendComm,
    recv: RecvComm,
    /// Send area, receive area and scratch, one registration.
    buf: Vec<u8>,
    mr: MrHandle,
    area: usize,
    rank: usize,
    n: usize,
    /// Idle polls before a waiting rank yields ([`IDLE_POLLS`]).
    idle_polls: u32,
}

impl Me {
    fn f32s(&mut self, area: usize, from: usize, count: usize) -> &mut [u8] {
        let at = area * self.area + from * 4;
        &mut self.buf[at..at + count * 4]
    }

    /// Sends `sc` floats from (area, from) to the next rank while receiving
    /// `rc` from the previous into (area, from).
    fn exchange(
        &mut self,
        s: (usize, usize),
        sc: usize,
        r: (usize, usize),
        rc: usize,
    ) -> Result<()> {
        let base = self.buf.as_mut_ptr();
        let rp = base.wrapping_add(r.0 * self.area + r.1 * 4);
        let sp = base.wrapping_add(s.0 * self.area + s.1 * 4) as *const u8;
        let (slen, rlen) = (sc * 4, rc * 4);
        let (send, recv, mr) = (self.send, self.recv, self.mr);
        // SAFETY: both ranges are inside `buf` (areas of `max_bytes`),
        // registered as `mr`, and are left alone until both requests finish
        // below.
        let rq = post(&mut self.ep, |ep| unsafe { ep.irecv(recv, rp, rlen, mr) })?;
        // SAFETY: as above.
        let sq = post(&mut self.ep, |ep| unsafe { ep.isend(send, sp, slen, mr) })?;
        let end = Instant::now() + T;
        let (mut sd, mut rd) = (false, false);
        let mut idle = 0u32;
        while !(sd && rd) {
            let (was_s, was_r) = (sd, rd);
            if !rd {
                rd = self.ep.test(rq).map_err(anyhow::Error::new)?.is_some();
            }
            if !sd {
                sd = self.ep.test(sq).map_err(anyhow::Error::new)?.is_some();
            }
            if (was_s, was_r) == (sd, rd) {
                // Ranks outnumber cores (four on two by default): one that
                // keeps finding nothing lets the others run.
                idle += 1;
                if idle >= self.idle_polls {
                    std::thread::yield_now();
                }
            } else {
                idle = 0;
            }
            if Instant::now() > end {
                bail!("a transfer did not finish in {T:?}");
            }
        }
        Ok(())
    }

    fn chunk(&self, count: usize, c: usize) -> (usize, usize) {
        let per = count.div_ceil(self.n);
        let from = (c * per).min(count);
        (from, per.min(count - from))
    }

    /// Runs the collective of `count` floats (the part that is timed,
    /// reductions included), out of place as nccl-tests runs it: the input
    /// (area 0) is left as it is, so running again gives the same result.
    fn run(&mut self, op: Op, count: usize) -> Result<()> {
        let (n, me) = (self.n, self.rank);
        match op {
            Op::Sendrecv => {
                self.exchange((0, 0), count, (1, 0), count)?;
            }
            Op::AllGather => {
                // `count` is the gathered total; this rank's part goes to
                // its place in the result first.
                let part = count / n;
                let area = self.area;
                self.buf.copy_within(0..part * 4, area + me * part * 4);
                for s in 0..n - 1 {
                    let c = (me + n - s) % n;
                    let p = (me + n - s - 1) % n;
                    self.exchange((1, c * part), part, (1, p * part), part)?;
                }
            }
            Op::AllReduce => {
                // Reduced in the result area, starting from this rank's input.
                let area = self.area;
                self.buf.copy_within(0..count * 4, area);
                for s in 0..n - 1 {
                    let c = (me + n - s) % n;
                    let p = (me + n - s - 1) % n;
                    let (cf, cl) = self.chunk(count, c);
                    let (pf, pl) = self.chunk(count, p);
                    self.exchange((1, cf), cl, (2, 0), pl)?;
                    // Sum the received part into ours.
                    let (mine, rest) = self.buf.split_at_mut(2 * self.area);
                    let mine = &mut mine[self.area + pf * 4..self.area + (pf + pl) * 4];
                    for (m, g) in mine.chunks_exact_mut(4).zip(rest.chunks_exact(4)) {
                        let v = f32::from_le_bytes((&*m).try_into().expect("4 bytes"))
                            + f32::from_le_bytes(g.try_into().expect("4 bytes"));
                        m.copy_from_slice(&v.to_le_bytes());
                    }
                }
                for s in 0..n - 1 {
                    let c = (me + 1 + n - s) % n;
                    let p = (me + n - s) % n;
                    let (cf, cl) = self.chunk(count, c);
                    let (pf, pl) = self.chunk(count, p);
                    self.exchange((1, cf), cl, (1, pf), pl)?;
                }
            }
            Op::All => unreachable!("expanded by the parent"),
        }
        Ok(())
    }

    /// Counts the wrong elements of the result `run` left (not timed, as
    /// nccl-tests checks outside its timing).
    fn verify(&mut self, op: Op, count: usize) -> u64 {
        let n = self.n;
        match op {
            Op::Sendrecv => {
                let prev = (self.rank + n - 1) % n;
                self.check(1, count, |i| value(prev, i))
            }
            Op::AllGather => {
                let part = count / n;
                self.check(1, count, |i| value(i / part, i))
            }
            Op::AllReduce => self.check(1, count, |i| (0..n).map(|r| value(r, i)).sum()),
            Op::All => unreachable!("expanded by the parent"),
        }
    }

    /// Fills the send area (and the receive area, for the in-place ops)
    /// with this rank's values.
    fn fill(&mut self, op: Op, count: usize) {
        let (me, n) = (self.rank, self.n);
        // The input, in area 0: all of it, or (all_gather) this rank's part,
        // valued by its place in the gathered result.
        let (from, len) = match op {
            Op::Sendrecv | Op::AllReduce => (0, count),
            Op::AllGather => (me * (count / n), count / n),
            Op::All => return,
        };
        let region = self.f32s(0, 0, len);
        for (k, b) in region.chunks_exact_mut(4).enumerate() {
            b.copy_from_slice(&value(me, from + k).to_le_bytes());
        }
    }

    fn check(&mut self, area: usize, count: usize, want: impl Fn(usize) -> f32) -> u64 {
        let region = self.f32s(area, 0, count);
        region
            .chunks_exact(4)
            .enumerate()
            .filter(|(i, b)| f32::from_le_bytes((*b).try_into().expect("4 bytes")) != want(*i))
            .count() as u64
    }
}

/// Posts with `f` until the endpoint takes the request.
fn post(
    ep: &mut Endpoint,
    mut f: impl FnMut(&mut Endpoint) -> Result<Option<Request>, ernic_net::rdma::NetError>,
) -> Result<Request> {
    let end = Instant::now() + T;
    loop {
        if let Some(r) = f(ep).map_err(anyhow::Error::new)? {
            return Ok(r);
        }
        ep.progress();
        if Instant::now() > end {
            bail!("the endpoint took no request for {T:?}");
        }
    }
}

fn rank_main(a: &BenchArgs, rank: usize, port: u16) -> Result<()> {
    let provider = a.provider.open(port)?;
    let cfg = Config::from_env().map_err(|e| anyhow!("{e}"))?;
    let mut ep = Endpoint::open(provider.as_ref(), a.rails, cfg).map_err(anyhow::Error::new)?;
    let (listen, handle) = ep.listen().map_err(anyhow::Error::new)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "HANDLE {}", handle.to_hex())?;
    out.flush()?;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut next = || -> Result<String> {
        lines
            .next()
            .ok_or_else(|| anyhow!("the bench parent went away"))?
            .context("reading")
    };
    let l = next()?;
    let hex = l
        .strip_prefix("PEER ")
        .ok_or_else(|| anyhow!("expected PEER, got {l}"))?;
    let peer = Handle::from_hex(hex).ok_or_else(|| anyhow!("not a handle: {hex}"))?;
    let mut conn = Connector::new(peer);
    let (mut send, mut recv) = (None, None);
    let end = Instant::now() + T;
    while send.is_none() || recv.is_none() {
        if send.is_none() {
            send = ep.connect(&mut conn).map_err(anyhow::Error::new)?;
        }
        if recv.is_none() {
            recv = ep.accept(listen).map_err(anyhow::Error::new)?;
        }
        if Instant::now() > end {
            bail!("the ring did not connect in {T:?}");
        }
    }
    let area = (a.max_bytes as usize).max(4).next_multiple_of(4096);
    let mut buf = vec![0u8; 3 * area];
    // SAFETY: `buf` is never moved or freed while `ep` lives: `Me` owns
    // both and the endpoint is dropped first (field order).
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.map_err(anyhow::Error::new)?;
    let mut me = Me {
        ep,
        send: send.expect("connected"),
        recv: recv.expect("accepted"),
        buf,
        mr,
        area,
        rank,
        n: a.nodes,
        idle_polls: match std::thread::available_parallelism() {
            Ok(cores) if a.nodes > cores.get() => IDLE_POLLS_CROWDED,
            _ => IDLE_POLLS,
        },
    };
    writeln!(out, "READY")?;
    out.flush()?;
    loop {
        let l = next()?;
        let f: Vec<&str> = l.split_whitespace().collect();
        match f[..] {
            ["QUIT"] => return Ok(()),
            ["RUN", op, size, iters] => {
                let op = Op::parse(op).ok_or_else(|| anyhow!("unknown op {op}"))?;
                let count = size.parse::<usize>()? / 4;
                let iters: usize = iters.parse()?;
                // Filled once; a warm-up run, checked; then the timed runs
                // back to back (no rank stops between them to fill or check,
                // which would hold its neighbours up), checked after.
                me.fill(op, count);
                me.run(op, count)?;
                let mut wrong = me.verify(op, count);
                // The result area poisoned (NaN): what the last check finds
                // must have come from the timed runs (of which the parent
                // asks at least one).
                let mut total = Duration::ZERO;
                if iters > 0 {
                    me.f32s(1, 0, count).fill(0xff);
                    let t = Instant::now();
                    for _ in 0..iters {
                        me.run(op, count)?;
                    }
                    total = t.elapsed();
                    wrong += me.verify(op, count);
                }
                writeln!(
                    out,
                    "DONE {} {wrong}",
                    total.as_secs_f64() / iters.max(1) as f64
                )?;
                out.flush()?;
            }
            _ => bail!("unexpected line from the bench parent: {l}"),
        }
    }
}
