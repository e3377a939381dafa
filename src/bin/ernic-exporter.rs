//! `ernic-exporter`: serves ernic stats files to Prometheus.
//!
//! It reads each `--stats-file` afresh on every scrape of `/metrics` and
//! answers in the Prometheus text format (0.0.4), or OpenMetrics when the
//! request's `Accept` asks for it. A missing, unreadable or stale file is
//! `ernic_up 0`, never an error page. The metrics and the stats file's
//! schema are in docs/stats.md; the logic is `ernic::exporter`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use ernic::exporter::http::{Config, serve};

/// The command line.
#[derive(Parser, Debug)]
#[command(
    name = "ernic-exporter",
    version,
    about = "Serve ernic stats files (ernic-server, ernic perf, ernic nvme serve, ...) as Prometheus metrics on /metrics",
    after_help = AFTER_HELP
)]
struct Args {
    /// A stats file to serve (repeat for several instances); each is read
    /// afresh on every scrape.
    #[arg(long = "stats-file", required = true, value_name = "PATH")]
    stats_files: Vec<PathBuf>,
    /// The address to listen on, as HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:9753", value_name = "ADDR")]
    listen: String,
    /// A file written longer ago than this many seconds is down (ernic_up 0).
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    stale_after: f64,
    #[command(flatten)]
    log: ernic_ops::LogArgs,
}

const AFTER_HELP: &str = "\
Metrics: a group counter C of kind K is ernic_K_C_total, a gauge G is
ernic_K_G, labelled with instance (the file's instance.name) and the group's
labels; ernic_up{instance,path}, ernic_stats_age_seconds,
ernic_start_time_seconds, ernic_info{program,version,node_id},
ernic_fault_events_total and ernic_fault_fired_total{fault,event}.
See docs/stats.md. Prometheus should scrape with honor_labels: true, so the
instance label stays the file's.";

fn main() {
    if let Err(e) = run() {
        eprintln!("ernic-exporter: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    args.log.init().context("setting up logs")?;
    anyhow::ensure!(
        args.stale_after.is_finite() && args.stale_after > 0.0,
        "--stale-after must be a positive number of seconds"
    );
    let server = tiny_http::Server::http(&args.listen)
        .map_err(|e| anyhow::anyhow!("listening on {}: {e}", args.listen))?;
    let addr = server
        .server_addr()
        .to_ip()
        .map_or_else(|| args.listen.clone(), |a| a.to_string());
    tracing::info!(listen = %addr, files = args.stats_files.len(), "serving /metrics");
    // The one line a script (or a test) waits for, with the bound port.
    println!("ernic-exporter: listening on http://{addr}/metrics");
    let config = Config {
        paths: args.stats_files,
        stale_after: Duration::from_secs_f64(args.stale_after),
    };
    serve(&server, &config);
    Ok(())
}
