//! `ernic nvme`: ernic's NVMe over Fabrics target and initiator as tools.
//!
//! - `serve OPTS` runs a target (an RDMA device of its own at `--addr`) on
//!   the loopback fabric or, with `--mesh`, on the TCP mesh, where guests
//!   of `ernic-server`s and host programs of other processes reach it.
//! - `perf -r TRID` measures one, in the manner of SPDK's `spdk_nvme_perf`;
//!   with `--serve OPTS` the target runs in the same process.
//! - `identify -r TRID` and `discover -r TRID` show what a person asks of a
//!   controller: its Identify data, or the discovery log.

mod latency;
mod perf;
mod trid;

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ernic_nvmeof::config::DISCOVERY_NQN;
use ernic_nvmeof::host::{Controller, Dir, HostConfig};
use ernic_nvmeof::serve::{ServeOptions, Serving};
use ernic_verbs::{Device, Fabric, Gid};

pub use crate::fabric::{FabricArgs, default_host_addr};
pub use trid::Trid;

/// `ernic nvme` subcommands.
#[derive(Subcommand, Debug)]
pub enum NvmeCmd {
    /// Serve an NVMe-oF target over RDMA (the loopback fabric, or the mesh).
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Measure a target like spdk_nvme_perf: IOPS, MiB/s and latency.
    Perf(perf::PerfArgs),
    /// Print a controller's Identify data and its namespaces.
    Identify(ClientArgs),
    /// Print a discovery controller's log page, like `nvme discover`.
    Discover(ClientArgs),
}

const SERVE_HELP: &str = "\
OPTS (comma-separated, as for ernic-server --backend nvmeof:OPTS):
  nqn=NQN           the subsystem's NQN (default nqn.2024-01.io.ernic:nvme)
  ns=SIZE           a RAM namespace (64M, 1G, ...); repeat for more, nsid 1 first
  ns=file:PATH      a namespace on an existing file (its size; durable on Flush)
  bs=512|4096       the block size (default 512)
  queues=N          I/O queues a controller may have (default 4, at most 64)
  depth=D           entries a queue may have (default 128, at most 1024)
  serial=S model=M  what Identify Controller reports
  addr=IPV4         the target's address (default 192.0.2.10)
  port=N            its rdma_cm port (default 4420)

The target is a device of its own on the fabric, with the GID of addr=
(IPv4-mapped). On the mesh (--mesh), guests of ernic-servers on the same mesh
reach it as `nvme connect -t rdma -a ADDR -s PORT -n NQN`.";

/// Arguments of `ernic nvme serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The target's options (see below); empty: one 64 MiB RAM namespace
    /// at 192.0.2.10:4420.
    #[arg(default_value = "")]
    pub opts: String,
    /// Stop after this many seconds (default: serve until SIGTERM or SIGINT,
    /// which stop it as cleanly, the stats file written last).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Write the target's counters to this stats file about once a second
    /// and at the end (docs/stats.md: kinds nvmeof, nvmeof_namespace,
    /// nvmeof_command, nvmeof_gsi, nvmeof_cm).
    #[arg(long, value_name = "PATH")]
    pub stats_file: Option<std::path::PathBuf>,
    /// The fabric.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// Arguments of `ernic nvme identify` and `discover`.
#[derive(Args, Debug)]
pub struct ClientArgs {
    /// The controller: 'trtype:RDMA adrfam:IPv4 traddr:ADDR trsvcid:4420 subnqn:NQN'.
    #[arg(short = 'r', long = "trid")]
    pub trid: String,
    /// Our own IPv4 address on the fabric (default: one in 192.0.2.128/25
    /// picked from the process id, so that a run started as the last one
    /// ends does not claim the GID the mesh still gives the last one).
    #[arg(long)]
    pub host_addr: Option<Ipv4Addr>,
    /// Run a target with these options in this process first (at the
    /// TRID's address), on the same fabric.
    #[arg(long, value_name = "OPTS")]
    pub serve: Option<String>,
    /// The fabric.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// Runs an `ernic nvme` subcommand.
pub fn run(cmd: &NvmeCmd) -> Result<()> {
    match cmd {
        NvmeCmd::Serve(a) => serve(a),
        NvmeCmd::Perf(a) => perf::run(a),
        NvmeCmd::Identify(a) => identify(a),
        NvmeCmd::Discover(a) => discover(a),
    }
}

/// Starts a target with `opts` on `fabric` at `addr:port` (the TRID's,
/// whatever `opts` says).
pub fn start_target(fabric: &Fabric, opts: &str, addr: Ipv4Addr, port: u16) -> Result<Serving> {
    let mut o = ServeOptions::parse(opts)?;
    o.addr = addr;
    o.port = port;
    Ok(Serving::start(fabric, &o)?)
}

fn serve(a: &ServeArgs) -> Result<()> {
    // First, before any thread: SIGTERM and SIGINT stop the target.
    let stop = ernic_ops::signal::Termination::arm()?;
    let fabric = a.fabric.fabric()?;
    let o = ServeOptions::parse(&a.opts)?;
    tracing::info!(
        "NVMe-oF target serving {} ({} namespace(s), {} I/O queues of {} entries) at {}:{} on {}",
        o.config.nqn,
        o.config.namespaces.len(),
        o.config.queues,
        o.config.depth,
        o.addr,
        o.port,
        if a.fabric.mesh.is_some() {
            "the mesh"
        } else {
            "the loopback fabric"
        },
    );
    if let Some(p) = &a.stats_file {
        ernic_ops::file::check_writable(p).map_err(anyhow::Error::msg)?;
    }
    let serving = Serving::start(&fabric, &o)?;
    let stats = match &a.stats_file {
        None => None,
        Some(p) => {
            let counters = serving.stats().clone();
            let namespaces = o.config.namespaces.len();
            let me = ernic_ops::Instance::this_process("ernic nvme serve", None);
            let snapshot = move || {
                let mut doc = ernic_ops::StatsDoc::new(&me);
                doc.groups = counters.groups(namespaces);
                doc
            };
            let every = Duration::from_secs(1);
            Some(ernic_ops::StatsThread::spawn(p.clone(), every, snapshot)?)
        }
    };
    // Until --seconds pass, or SIGTERM / SIGINT comes.
    let _ = stop.wait(a.seconds.map(Duration::from_secs));
    let st = serving.stop()?;
    // The last write, after the target's thread published its counts.
    drop(stats);
    tracing::info!(
        accepted = st.accepted,
        rejected = st.rejected,
        commands = st.commands,
        "NVMe-oF target stopped: {} connection(s) accepted, {} rejected, {} command(s)",
        st.accepted,
        st.rejected,
        st.commands
    );
    Ok(())
}

/// Connects to the controller `trid` names (subsystem `default_nqn` when it
/// names none) from a device of our own at `host_addr`.
pub fn connect(
    fabric: &Fabric,
    trid: &Trid,
    host_addr: Ipv4Addr,
    default_nqn: &str,
    cfg: HostConfig,
) -> Result<(Device, Controller)> {
    let dev = fabric
        .open_device(Gid::from_ipv4(host_addr))
        .with_context(|| format!("a device at {host_addr}"))?;
    let cfg = HostConfig {
        subnqn: trid
            .subnqn
            .clone()
            .unwrap_or_else(|| default_nqn.to_string()),
        port: trid.port,
        ..cfg
    };
    let ctrl = Controller::connect(&dev, Gid::from_ipv4(trid.addr), &cfg)
        .with_context(|| format!("connecting to {}:{} ({})", trid.addr, trid.port, cfg.subnqn))?;
    Ok((dev, ctrl))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .trim_end_matches(['\0', ' '])
        .to_string()
}

/// What `identify` and `discover` start with: the TRID, a target in this
/// process if asked for, and a controller with its admin queue only.
fn admin_only(
    a: &ClientArgs,
    default_nqn: &str,
) -> Result<(Trid, Option<Serving>, Device, Controller)> {
    let trid = Trid::parse(&a.trid)?;
    let fabric = a.fabric.fabric()?;
    let serving = match &a.serve {
        Some(o) => Some(start_target(&fabric, o, trid.addr, trid.port)?),
        None => None,
    };
    let host = HostConfig {
        io_queues: 0,
        ..HostConfig::default()
    };
    let addr = a.host_addr.unwrap_or_else(default_host_addr);
    let (dev, c) = connect(&fabric, &trid, addr, default_nqn, host)?;
    Ok((trid, serving, dev, c))
}

fn identify(a: &ClientArgs) -> Result<()> {
    let (trid, _serving, _dev, mut c) = admin_only(a, ernic_nvmeof::config::DEFAULT_NQN)?;
    let id = c.id_ctrl.clone();
    println!(
        "NVMe controller at {}:{} (cntlid {})",
        trid.addr,
        trid.port,
        c.cntlid()
    );
    println!("  vid       : {:#06x}", u16::from_le_bytes([id[0], id[1]]));
    println!("  sn        : {}", text(&id[4..24]));
    println!("  mn        : {}", text(&id[24..64]));
    println!("  fr        : {}", text(&id[64..72]));
    println!("  mdts      : {}", id[77]);
    println!(
        "  ver       : {:#010x}",
        u32::from_le_bytes(id[80..84].try_into()?)
    );
    println!(
        "  nn        : {}",
        u32::from_le_bytes(id[516..520].try_into()?)
    );
    println!("  subnqn    : {}", text(&id[768..1024]));
    let mut list = [0u8; 4096];
    c.admin_cmd(
        "Identify (active namespaces)",
        ernic_nvmeof::host::Command::identify(0x02, 0),
        Dir::FromTarget,
        &[],
        &mut list,
    )?;
    for nsid in list
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .take_while(|&n| n != 0)
    {
        let ns = perf::namespace(&mut c, nsid)?;
        let (nsze, bs) = (ns.blocks, ns.bs);
        println!(
            "  namespace {nsid}: {nsze} blocks of {bs} bytes ({} MiB)",
            (nsze * bs) >> 20
        );
    }
    c.disconnect()?;
    Ok(())
}

fn discover(a: &ClientArgs) -> Result<()> {
    let (_trid, _serving, _dev, mut c) = admin_only(a, DISCOVERY_NQN)?;
    let mut head = [0u8; 1024];
    c.admin_cmd(
        "Get Log Page (discovery)",
        ernic_nvmeof::host::Command::get_log_page(0x70, 0, head.len(), 0),
        Dir::FromTarget,
        &[],
        &mut head,
    )?;
    let genctr = u64::from_le_bytes(head[0..8].try_into()?);
    let numrec = u64::from_le_bytes(head[8..16].try_into()?).min(64) as usize;
    println!("\nDiscovery Log Number of Records {numrec}, Generation counter {genctr}");
    let mut entries = vec![0u8; numrec * 1024];
    if numrec > 0 {
        c.admin_cmd(
            "Get Log Page (discovery entries)",
            ernic_nvmeof::host::Command::get_log_page(0x70, 0, entries.len(), 1024),
            Dir::FromTarget,
            &[],
            &mut entries,
        )?;
    }
    for (i, e) in entries.chunks_exact(1024).enumerate() {
        let subtype = match e[2] {
            1 => "discovery subsystem referral",
            2 => "nvme subsystem",
            3 => "current discovery subsystem",
            _ => "unrecognized",
        };
        println!("=====Discovery Log Entry {i}======");
        println!(
            "trtype:  {}",
            if e[0] == 1 { "rdma" } else { "unrecognized" }
        );
        println!(
            "adrfam:  {}",
            if e[1] == 1 { "ipv4" } else { "unrecognized" }
        );
        println!("subtype: {subtype}");
        println!("portid:  {}", u16::from_le_bytes([e[4], e[5]]));
        println!("trsvcid: {}", text(&e[32..64]));
        println!("subnqn:  {}", text(&e[256..512]));
        println!("traddr:  {}", text(&e[512..768]));
    }
    c.disconnect()?;
    Ok(())
}
