//! `ernic`: the command-line front of the ernic software RDMA fabric.
//!
//! Subcommands:
//! - `perf`: perftest-style benchmarks (`write_bw`, `send_lat`, ...) over the
//!   emulated fabric.

mod perf;

use clap::{Parser, Subcommand};

/// ernic: a software RDMA fabric.
#[derive(Parser, Debug)]
#[command(name = "ernic", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Measure bandwidth or latency like perftest's ib_* tools.
    Perf(perf::PerfArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Perf(args) => perf::run(&args),
    };
    if let Err(e) = result {
        eprintln!("ernic: {e:#}");
        std::process::exit(1);
    }
}
