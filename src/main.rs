//! `ernic`: the command-line front of the ernic software RDMA fabric.
//!
//! Subcommands:
//! - `bench`: collectives (all_reduce, all_gather, sendrecv) over the
//!   transport across rank processes on this machine, like nccl-tests.
//! - `perf`: perftest-style benchmarks (`write_bw`, `send_lat`, ...) over the
//!   emulated fabric, in one process or across two over the TCP mesh.
//! - `mesh`: a standalone mesh manager, or a scriptable mesh node.
//! - `nvme`: an NVMe-oF target (`serve`), an initiator that measures one
//!   (`perf`, like spdk_nvme_perf), `identify` and `discover`.
//! - `s3`: the S3 store with its RDMA data plane (`serve`), a client of it
//!   (`get`, `put`, `ls`, `mb`), and `bench`.
//! - `p4`: the P4 engine offline: bmv2 JSON programs over pcap files
//!   (`run`), p4c's STF tests (`stf`), and `bench`.
//! - `stats`: a stats file (docs/stats.md) as a table, or as rates per
//!   second refreshed in place (`--watch`).

#[allow(unsafe_code)]
mod bench;
mod fabric;
mod mesh;
mod nvme;
mod p4;
mod perf;
mod progress;
#[allow(unsafe_code)]
mod run;
mod s3;
mod stats;

use clap::{Parser, Subcommand};

/// ernic: a software RDMA fabric.
#[derive(Parser, Debug)]
#[command(name = "ernic", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    log: ernic_ops::LogArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run collectives over the transport across rank processes, like nccl-tests.
    Bench(bench::BenchArgs),
    /// Measure bandwidth or latency like perftest's ib_* tools.
    Perf(perf::PerfArgs),
    /// Run TCP mesh nodes: a standalone manager, or a scriptable node.
    #[command(subcommand)]
    Mesh(mesh::MeshCmd),
    /// NVMe over Fabrics: serve a target, measure one (perf), identify, discover.
    #[command(subcommand)]
    Nvme(nvme::NvmeCmd),
    /// S3 over RDMA: serve the store, get/put/ls/mb as a client, bench.
    #[command(subcommand)]
    S3(s3::S3Cmd),
    /// The P4 engine offline: run pcaps through a program, run STF tests, bench.
    #[command(subcommand)]
    P4(p4::P4Cmd),
    /// Show a stats file: every group's totals, or rates per second with --watch.
    Stats(stats::StatsArgs),
    /// Run an unmodified RDMA program (perftest, rdma-core's examples…)
    /// over ernic, with ernic's libibverbs.so.1 under it.
    Run(run::RunArgs),
}

/// The logging flags this process was given, for the processes it spawns.
static LOG: std::sync::OnceLock<ernic_ops::LogArgs> = std::sync::OnceLock::new();

/// The logging flags to hand a child `ernic` process, so that it logs as
/// this one does (`--log-level`, `--log-format`, `--log-file`).
pub(crate) fn log_flags() -> Vec<std::ffi::OsString> {
    let Some(l) = LOG.get() else {
        return Vec::new();
    };
    let mut v: Vec<std::ffi::OsString> = vec!["--log-level".into(), l.log_level.clone().into()];
    if l.log_format == ernic_ops::log::LogFormat::Json {
        v.extend(["--log-format".into(), "json".into()]);
    }
    if let Some(p) = &l.log_file {
        v.extend(["--log-file".into(), p.clone().into_os_string()]);
    }
    v
}

fn main() {
    let mut cli = Cli::parse();
    // `ernic run` shares its terminal with the program it runs: the mesh's
    // info lines would be mixed into the program's output, so it logs
    // warnings only unless told otherwise.
    let told = std::env::var_os("ERNIC_LOG").is_some()
        || std::env::args().any(|a| a == "--log-level" || a.starts_with("--log-level="));
    if matches!(cli.cmd, Cmd::Run(_)) && !told {
        cli.log.log_level = "warn".into();
    }
    if let Err(e) = cli.log.init() {
        eprintln!("ernic: {e}");
        std::process::exit(2);
    }
    let _ = LOG.set(cli.log.clone());
    let result = match cli.cmd {
        Cmd::Bench(args) => bench::run(&args),
        Cmd::Perf(args) => perf::run(&args),
        Cmd::Mesh(cmd) => mesh::run(&cmd),
        Cmd::Nvme(cmd) => nvme::run(&cmd),
        Cmd::S3(cmd) => s3::run(&cmd),
        Cmd::P4(cmd) => p4::run(&cmd),
        Cmd::Stats(args) => stats::run(&args),
        Cmd::Run(args) => run::run(&args),
    };
    if let Err(e) = result {
        eprintln!("ernic: {e:#}");
        std::process::exit(1);
    }
}
