//! `ernic nvme perf`: an I/O generator in the spirit of SPDK's
//! `spdk_nvme_perf`. It connects through the IB CM, builds the admin queue
//! and `--queues` I/O queues, keeps `-q` commands in flight on each, with
//! every data buffer fast-registered per command as Linux's host does, and
//! prints perf's table (IOPS, MiB/s, average/min/max latency in µs) and
//! latency percentiles, or JSON. `--verify` writes patterns over a region
//! and reads them back first.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use ernic_nvmeof::host::{Command, Controller, Dir, Done, HostConfig};
use ernic_nvmeof::rdma::RdmaTarget;
use serde_json::json;

use super::latency::Histogram;
use super::{FabricArgs, Trid, connect, default_host_addr, start_target};

/// The I/O pattern (`-w`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Pattern {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Sequential, reads and writes mixed by -M.
    Rw,
    /// Random, reads and writes mixed by -M.
    Randrw,
}

/// Arguments of `ernic nvme perf`.
#[derive(Args, Debug)]
#[command(after_help = "\
In one process: --serve OPTS runs a target at the TRID's address on this
process's loopback fabric (OPTS as for `ernic nvme serve`). Across processes:
`ernic nvme serve --mesh tcp:manager:listen:P` there, `--mesh tcp:worker:HOST:P`
here.")]
pub struct PerfArgs {
    /// The controller: 'trtype:RDMA adrfam:IPv4 traddr:ADDR trsvcid:4420 subnqn:NQN'.
    #[arg(short = 'r', long = "trid")]
    pub trid: String,
    /// Commands in flight on each I/O queue.
    #[arg(short = 'q', long = "io-depth", default_value_t = 32)]
    pub depth: u16,
    /// Bytes an I/O moves (a multiple of the block size).
    #[arg(short = 'o', long = "io-size", default_value = "4096", value_parser = crate::perf::parse_size)]
    pub size: u64,
    /// The I/O pattern.
    #[arg(short = 'w', long = "io-pattern", value_enum, default_value_t = Pattern::Randread)]
    pub pattern: Pattern,
    /// Percent reads for rw and randrw.
    #[arg(short = 'M', long = "rwmixread", default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub mix: u8,
    /// Seconds to measure.
    #[arg(short = 't', long = "time", default_value_t = 5)]
    pub seconds: u64,
    /// Seconds to run before measuring.
    #[arg(short = 'a', long = "warmup-time", default_value_t = 1)]
    pub warmup: u64,
    /// I/O queues (each with -q in flight).
    #[arg(long, default_value_t = 1)]
    pub queues: u16,
    /// The namespace.
    #[arg(long, default_value_t = 1)]
    pub nsid: u32,
    /// Write patterns over the first blocks, read them back, and fail on a
    /// difference, before measuring.
    #[arg(long)]
    pub verify: bool,
    /// Print JSON instead of perf's table.
    #[arg(long)]
    pub json: bool,
    /// Our own IPv4 address on the fabric (default: one in 192.0.2.128/25
    /// picked from the process id, so that a run started as the last one
    /// ends does not claim the GID the mesh still gives the last one).
    #[arg(long)]
    pub host_addr: Option<Ipv4Addr>,
    /// Run a target with these options in this process first. While I/O
    /// is measured, this thread polls it between submissions (one core
    /// for both, as an SPDK application with a target and an initiator on
    /// one reactor); --target-thread keeps it on a thread of its own.
    #[arg(long, value_name = "OPTS")]
    pub serve: Option<String>,
    /// With --serve: poll the target on a thread of its own throughout.
    #[arg(long, requires = "serve")]
    pub target_thread: bool,
    /// The fabric.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// A small, fast generator (xorshift64*): offsets need no more.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// What a namespace is: its size in blocks, and the block size.
pub(super) struct Ns {
    pub blocks: u64,
    pub bs: u64,
}

/// Identify Namespace `nsid`, read as far as perf and identify need it.
pub(super) fn namespace(c: &mut Controller, nsid: u32) -> Result<Ns> {
    let mut id = [0u8; 4096];
    c.admin_cmd(
        "Identify (namespace)",
        Command::identify(0x00, nsid),
        Dir::FromTarget,
        &[],
        &mut id,
    )?;
    // `struct nvme_id_ns`: nsze at 0, flbas at 26, lbaf[] at 128 (ds at +2).
    let blocks = u64::from_le_bytes(id[0..8].try_into()?);
    let lbaf = usize::from(id[26] & 0x0f);
    let ds = id[128 + 4 * lbaf + 2];
    if blocks == 0 || !(9..=16).contains(&ds) {
        bail!("namespace {nsid} is not active (size {blocks}, block shift {ds})");
    }
    Ok(Ns {
        blocks,
        bs: 1 << ds,
    })
}

/// The pattern of block `lba` in the verify pass.
fn fill(lba: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (lba.wrapping_mul(31).wrapping_add(i as u64 * 7) ^ (i as u64 >> 8)) as u8;
    }
}

/// Counts of one direction.
#[derive(Default)]
struct Side {
    ios: u64,
    lat: Histogram,
}

/// Runs `ernic nvme perf`.
pub fn run(a: &PerfArgs) -> Result<()> {
    let trid = Trid::parse(&a.trid)?;
    let fabric = a.fabric.fabric()?;
    if a.serve.is_none() && a.fabric.mesh.is_none() {
        bail!(
            "nothing to reach: give --serve OPTS for a target in this process, or --mesh SPEC for one on the mesh"
        );
    }
    let mut serving = match &a.serve {
        Some(o) => Some(start_target(&fabric, o, trid.addr, trid.port)?),
        None => None,
    };
    let host = HostConfig {
        io_queues: a.queues.max(1),
        depth: a.depth.saturating_add(1).max(2),
        max_xfer: (a.size as usize).max(4096),
        ..HostConfig::default()
    };
    let (_dev, mut c) = connect(
        &fabric,
        &trid,
        a.host_addr.unwrap_or_else(default_host_addr),
        ernic_nvmeof::config::DEFAULT_NQN,
        host,
    )?;
    let ns = namespace(&mut c, a.nsid)?;
    if a.size == 0 || a.size % ns.bs != 0 {
        bail!("-o {}: not a multiple of the block size {}", a.size, ns.bs);
    }
    let nlb = (a.size / ns.bs) as u32;
    let span = ns.blocks / u64::from(nlb);
    if span == 0 {
        bail!("-o {}: larger than the namespace", a.size);
    }
    let queues = c.io_queues().len();
    if !a.json {
        println!("Initializing NVMe Controllers");
        println!(
            "Attached to NVMe over Fabrics controller at {}:{}: {}",
            trid.addr,
            trid.port,
            trid.subnqn
                .as_deref()
                .unwrap_or(ernic_nvmeof::config::DEFAULT_NQN)
        );
        println!("Initialization complete. Launching workers.");
    }
    if a.verify {
        verify(&mut c, a, &ns, nlb, span)?;
    }
    let mut inline = match serving.as_mut() {
        Some(s) if !a.target_thread => Some(s.pause()?),
        _ => None,
    };
    let result = workload(&mut c, a, nlb, span, queues, inline.as_mut());
    if let (Some(s), Some(t)) = (serving.as_mut(), inline) {
        s.resume(t)?;
    }
    let (reads, writes, elapsed) = result?;
    report(a, &trid, &reads, &writes, elapsed);
    c.disconnect()?;
    Ok(())
}

/// Writes a pattern over up to 256 I/Os' worth of blocks, then reads it back.
fn verify(c: &mut Controller, a: &PerfArgs, ns: &Ns, nlb: u32, span: u64) -> Result<()> {
    let n = span.min(256);
    let len = a.size as usize;
    let mut buf = vec![0u8; len];
    let mut got = vec![0u8; len];
    let queues = c.io_queues().len();
    for i in 0..n {
        let lba = i * u64::from(nlb);
        for (k, b) in buf.chunks_mut(ns.bs as usize).enumerate() {
            fill(lba + k as u64, b);
        }
        let q = (i as usize) % queues;
        c.io_cmd_sync(
            "Write",
            q,
            Command::write(a.nsid, lba, nlb),
            Dir::ToTarget,
            &buf,
            &mut [],
        )?;
    }
    for i in 0..n {
        let lba = i * u64::from(nlb);
        for (k, b) in buf.chunks_mut(ns.bs as usize).enumerate() {
            fill(lba + k as u64, b);
        }
        let q = (i as usize + 1) % queues;
        c.io_cmd_sync(
            "Read",
            q,
            Command::read(a.nsid, lba, nlb),
            Dir::FromTarget,
            &[],
            &mut got,
        )?;
        if got != buf {
            let at = got.iter().zip(&buf).position(|(x, y)| x != y).unwrap_or(0);
            bail!(
                "verify: block {} differs at byte {at} of the I/O at LBA {lba}",
                at as u64 / ns.bs
            );
        }
    }
    if !a.json {
        println!("Verified {n} I/Os of {len} bytes written and read back on {queues} queue(s)");
    }
    Ok(())
}

fn workload(
    c: &mut Controller,
    a: &PerfArgs,
    nlb: u32,
    span: u64,
    queues: usize,
    mut target: Option<&mut RdmaTarget>,
) -> Result<(Side, Side, Duration)> {
    let random = matches!(
        a.pattern,
        Pattern::Randread | Pattern::Randwrite | Pattern::Randrw
    );
    let read_pct = match a.pattern {
        Pattern::Read | Pattern::Randread => 100,
        Pattern::Write | Pattern::Randwrite => 0,
        Pattern::Rw | Pattern::Randrw => u64::from(a.mix),
    };
    let payload = vec![0x5au8; a.size as usize];
    let depth = usize::from(a.depth).max(1);
    // Per queue and command id: when it went, and whether it reads.
    let mut started: Vec<Vec<(Instant, bool)>> = (0..queues)
        .map(|_| vec![(Instant::now(), false); depth + 1])
        .collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut next_lba = 0u64;
    let (mut reads, mut writes) = (Side::default(), Side::default());
    let begin = Instant::now();
    let measure_from = begin + Duration::from_secs(a.warmup);
    let end = measure_from + Duration::from_secs(a.seconds.max(1));
    let mut done: Vec<Done> = Vec::with_capacity(64);
    let mut last_pump = begin;
    loop {
        let now = Instant::now();
        let stopping = now >= end;
        let mut in_flight = 0;
        for (qi, q) in c.io_queues().iter_mut().enumerate() {
            while !stopping && q.in_flight() < depth && q.room() > 0 {
                let slot = if random {
                    rng.next() % span
                } else {
                    next_lba = (next_lba + 1) % span;
                    next_lba
                };
                let lba = slot * u64::from(nlb);
                let read = rng.next() % 100 < read_pct;
                let (cmd, dir) = if read {
                    (Command::read(a.nsid, lba, nlb), Dir::FromTarget)
                } else {
                    (Command::write(a.nsid, lba, nlb), Dir::ToTarget)
                };
                let mut sqe = cmd.0;
                let Some(cid) = q.submit(&mut sqe, dir, a.size as usize, &payload)? else {
                    break;
                };
                started[qi][usize::from(cid)] = (now, read);
            }
            done.clear();
            q.poll(&mut done)
                .with_context(|| format!("I/O queue {}", qi + 1))?;
            let t = Instant::now();
            for d in &done {
                if !d.cqe.status.is_success() {
                    bail!("an I/O failed: status {:?}", d.cqe.status);
                }
                let (at, read) = started[qi][usize::from(d.cid)];
                if at >= measure_from && t <= end {
                    let side = if read { &mut reads } else { &mut writes };
                    side.ios += 1;
                    side.lat.record(t.duration_since(at).as_nanos() as u64);
                }
            }
            in_flight += q.in_flight();
        }
        if let Some(t) = target.as_deref_mut() {
            t.poll(now)?;
        }
        if now.duration_since(last_pump) > Duration::from_millis(10) {
            c.tick(now)?;
            last_pump = now;
        }
        if stopping && in_flight == 0 {
            break;
        }
        if stopping && now > end + Duration::from_secs(5) {
            bail!("{in_flight} I/O(s) never completed");
        }
    }
    Ok((reads, writes, Duration::from_secs(a.seconds.max(1))))
}

fn report(a: &PerfArgs, trid: &Trid, reads: &Side, writes: &Side, elapsed: Duration) {
    let secs = elapsed.as_secs_f64();
    let mut all = Histogram::default();
    all.merge(&reads.lat);
    all.merge(&writes.lat);
    let ios = all.count();
    let iops = ios as f64 / secs;
    let mibs = iops * a.size as f64 / (1024.0 * 1024.0);
    let us = |ns: f64| ns / 1000.0;
    let name = format!(
        "RDMA (addr:{} subnqn:{}) NSID {}",
        trid.addr,
        trid.subnqn
            .as_deref()
            .unwrap_or(ernic_nvmeof::config::DEFAULT_NQN),
        a.nsid
    );
    let pcts = [1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99];
    if a.json {
        let p: serde_json::Map<String, serde_json::Value> = pcts
            .iter()
            .map(|&p| (format!("p{p}"), json!(us(all.percentile(p) as f64))))
            .collect();
        let out = json!({
            "device": name,
            "pattern": format!("{:?}", a.pattern).to_lowercase(),
            "io_size": a.size,
            "queue_depth": a.depth,
            "queues": a.queues,
            "seconds": secs,
            "reads": reads.ios,
            "writes": writes.ios,
            "iops": iops,
            "mib_s": mibs,
            "latency_us": {
                "average": us(all.mean()),
                "min": us(all.min() as f64),
                "max": us(all.max() as f64),
                "percentiles": p,
            },
        });
        println!("{out}");
        return;
    }
    let dev = format!("{name} from core  0");
    let w = dev.len().max(20);
    println!("========================================================");
    println!("{:>width$}", "Latency(us)", width = w + 56);
    println!(
        "{:<w$}: {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Device Information", "IOPS", "MiB/s", "Average", "min", "max"
    );
    let row = |label: &str| {
        println!(
            "{label:<w$}: {iops:>10.2} {mibs:>10.2} {:>10.2} {:>10.2} {:>10.2}",
            us(all.mean()),
            us(all.min() as f64),
            us(all.max() as f64)
        )
    };
    row(&dev);
    println!("========================================================");
    row("Total");
    println!();
    println!("Summary latency data for {dev}:");
    println!("=================================================================================");
    for p in pcts {
        println!("{:>10.5}% : {:>12.3}us", p, us(all.percentile(p) as f64));
    }
}
