//! `ernic s3`: the S3 store as a tool, and a client of it.
//!
//! - `serve` runs the store on a host socket (HTTP/1.1), its RDMA data
//!   plane a device of its own on the loopback fabric or, with `--mesh`,
//!   on the TCP mesh, where clients in other processes reach it.
//! - `get`, `put`, `ls` and `mb` are a client: with `--mesh` it registers a
//!   buffer on a device of its own and sends `x-amz-rdma-token`, so the
//!   object moves by RDMA; without, it moves in the HTTP body.
//! - `bench` measures both paths against each other.

mod bench;
mod transfer;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ernic_s3::http::{Limits, Server};
use ernic_s3::options::S3Options;
use ernic_s3::rdma::{RdmaConfig, RdmaDataPlane};
use ernic_s3::service::{DataPlane, S3Service};
use ernic_s3::sigv4::sign::Signer;
use ernic_verbs::Gid;

use crate::fabric::FabricArgs;

/// `ernic s3` subcommands.
#[derive(Subcommand, Debug)]
pub enum S3Cmd {
    /// Serve the S3 store on a host socket, its RDMA data plane on the fabric.
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Download an object (by RDMA with --mesh, else in the HTTP body).
    Get(transfer::GetArgs),
    /// Upload a file (by RDMA with --mesh, else in the HTTP body).
    Put(transfer::PutArgs),
    /// List buckets, or the objects of s3://BUCKET[/PREFIX].
    Ls(transfer::LsArgs),
    /// Make a bucket.
    Mb(transfer::MbArgs),
    /// Measure GET and PUT through the token path against the HTTP body.
    Bench(bench::BenchArgs),
}

const SERVE_HELP: &str = "\
OPTS (comma-separated, as for ernic-server --backend s3:OPTS):
  dir=PATH          keep objects in this directory (default: in memory)
  size=SIZE         the store's capacity (default 1G)
  access-key=ID,secret-key=S   a credential (or --access-key/--secret-key)
  credentials=FILE  credentials, one 'ACCESS_KEY_ID SECRET' per line
  anonymous         admit unsigned requests (without credentials, say so)
  region=R          the region reported (default us-east-1)
  domain=D          Host 'BUCKET.D' is virtual-hosted-style (default localhost)
  addr=IPV4         the data plane's address on the fabric (default 192.0.2.20);
                    with ernic-server, also the store's IP on the guest's segment
  mac=MAC           with ernic-server: its MAC there (default 02:00:c0:00:02:14)
  port=N            with ernic-server: its HTTP port there (default 80)
  lanes=N           RDMA transfers in flight at once, 64 MiB of staging each (default 2)

With credentials every signed request is checked (SigV4 and SigV2, header
and presigned forms, aws-chunked bodies) and an unsigned one is refused
unless 'anonymous' (--anonymous) is given; without credentials the store
serves only when told 'anonymous'. Clients in other
processes reach the data plane by joining the same mesh (--mesh).";

/// Arguments of `ernic s3 serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The store's options (see below).
    #[arg(default_value = "")]
    pub opts: String,
    /// Where to listen for HTTP.
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,
    /// Keep objects in this directory (as dir=PATH).
    #[arg(long)]
    pub dir: Option<String>,
    /// The store's capacity, e.g. 4G (as size=SIZE).
    #[arg(long)]
    pub size: Option<String>,
    /// An access key id to accept (with --secret-key).
    #[arg(long, requires = "secret_key")]
    pub access_key: Option<String>,
    /// Its secret.
    #[arg(long, requires = "access_key")]
    pub secret_key: Option<String>,
    /// A credentials file (as credentials=FILE).
    #[arg(long)]
    pub credentials: Option<String>,
    /// Admit unsigned requests (required when no credential is given).
    #[arg(long)]
    pub anonymous: bool,
    /// The most connections served at once.
    #[arg(long, default_value_t = 256)]
    pub max_connections: usize,
    /// Stop after this many seconds (default: serve until SIGTERM or SIGINT,
    /// which stop it as cleanly, the stats file written last).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Write the service's counters to this stats file about once a second
    /// and at the end (docs/stats.md: kinds s3_request, s3_error, s3).
    #[arg(long, value_name = "PATH")]
    pub stats_file: Option<std::path::PathBuf>,
    /// The fabric of the RDMA data plane.
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// A client's endpoint and credential.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    /// The store, HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub endpoint: String,
    /// The access key id (default: $AWS_ACCESS_KEY_ID; none: unsigned).
    #[arg(long)]
    pub access_key: Option<String>,
    /// Its secret (default: $AWS_SECRET_ACCESS_KEY).
    #[arg(long)]
    pub secret_key: Option<String>,
    /// The region to sign for (default: $AWS_REGION, else us-east-1).
    #[arg(long)]
    pub region: Option<String>,
    /// No progress line.
    #[arg(long, short)]
    pub quiet: bool,
}

impl ClientArgs {
    /// The signer these name, if any.
    pub fn signer(&self) -> Result<Option<Signer>> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let ak = self.access_key.clone().or_else(|| env("AWS_ACCESS_KEY_ID"));
        let sk = self
            .secret_key
            .clone()
            .or_else(|| env("AWS_SECRET_ACCESS_KEY"));
        let region = self
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        match (ak, sk) {
            (Some(access_key), Some(secret)) => Ok(Some(Signer {
                access_key,
                secret,
                region,
            })),
            (None, None) => Ok(None),
            _ => bail!(
                "give both an access key and its secret (--access-key/--secret-key or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), or neither"
            ),
        }
    }
}

/// Runs an `ernic s3` subcommand.
pub fn run(cmd: &S3Cmd) -> Result<()> {
    match cmd {
        S3Cmd::Serve(a) => serve(a),
        S3Cmd::Get(a) => transfer::get(a),
        S3Cmd::Put(a) => transfer::put(a),
        S3Cmd::Ls(a) => transfer::ls(a),
        S3Cmd::Mb(a) => transfer::mb(a),
        S3Cmd::Bench(a) => bench::run(a),
    }
}

/// The option string `serve`'s flags and OPTS make together.
fn serve_options(a: &ServeArgs) -> Result<S3Options> {
    let mut opts = vec![a.opts.clone()];
    let mut add = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            opts.push(format!("{k}={v}"));
        }
    };
    add("dir", &a.dir);
    add("size", &a.size);
    add("access-key", &a.access_key);
    add("secret-key", &a.secret_key);
    add("credentials", &a.credentials);
    if a.anonymous {
        opts.push("anonymous".into());
    }
    Ok(S3Options::parse(&opts.join(","))?)
}

/// A store with its service and data plane, listening.
pub struct Running {
    /// The HTTP server.
    pub server: ernic_s3::http::ServerHandle,
    /// The service it serves (its counters: `stats_groups`).
    pub service: Arc<S3Service>,
}

/// Starts the store `o` describes on `listen`, its data plane on `fabric`.
pub fn start(
    o: &S3Options,
    fabric: &ernic_verbs::Fabric,
    listen: SocketAddr,
    max_connections: usize,
) -> Result<Running> {
    let store = o.open_store().context("opening the store")?;
    let dev = fabric
        .open_device(Gid::from_ipv4(o.addr))
        .with_context(|| format!("the data plane's device at {}", o.addr))?;
    let dp = RdmaDataPlane::new(
        dev,
        RdmaConfig {
            lanes: o.lanes,
            ..RdmaConfig::default()
        },
    )
    .context("the RDMA data plane")?;
    let dp: Arc<dyn DataPlane> = Arc::new(dp);
    let service = Arc::new(S3Service::new(store, o.config.clone(), Some(dp))?);
    let server = Server::bind(listen, service.clone(), Limits::default(), max_connections)
        .with_context(|| format!("listening on {listen}"))?;
    Ok(Running {
        server: server.spawn().context("starting the accept thread")?,
        service,
    })
}

fn serve(a: &ServeArgs) -> Result<()> {
    // First, before any thread: SIGTERM and SIGINT stop the store.
    let stop = ernic_ops::signal::Termination::arm()?;
    let o = serve_options(a)?;
    let fabric = a.fabric.fabric()?;
    if let Some(p) = &a.stats_file {
        ernic_ops::file::check_writable(p).map_err(anyhow::Error::msg)?;
    }
    let running = start(&o, &fabric, a.listen, a.max_connections)?;
    let stats = match &a.stats_file {
        None => None,
        Some(p) => {
            let service = running.service.clone();
            let me = ernic_ops::Instance::this_process("ernic s3 serve", None);
            let snapshot = move || {
                let mut doc = ernic_ops::StatsDoc::new(&me);
                doc.groups = service.stats_groups();
                doc
            };
            let every = Duration::from_secs(1);
            Some(ernic_ops::StatsThread::spawn(p.clone(), every, snapshot)?)
        }
    };
    tracing::info!(
        "S3 store serving http://{} ({}, {} MiB, {}), RDMA data plane at {} on {}",
        running.server.local_addr(),
        o.dir
            .as_ref()
            .map_or("in memory".to_string(), |d| d.display().to_string()),
        o.size >> 20,
        if o.config.credentials.is_empty() {
            "anonymous".to_string()
        } else {
            format!(
                "{} credential(s){}",
                o.config.credentials.len(),
                if o.config.anonymous {
                    ", anonymous too"
                } else {
                    ""
                }
            )
        },
        o.addr,
        if a.fabric.mesh.is_some() {
            "the mesh"
        } else {
            "the loopback fabric (this process only)"
        },
    );
    // Until --seconds pass, or SIGTERM / SIGINT comes.
    let _ = stop.wait(a.seconds.map(Duration::from_secs));
    running.server.shutdown();
    // The last write, with every request the server answered.
    drop(stats);
    tracing::info!("S3 store stopped");
    Ok(())
}

/// The client's own address on the fabric when none is given.
pub fn client_addr(given: Option<Ipv4Addr>) -> Ipv4Addr {
    given.unwrap_or_else(crate::fabric::default_host_addr)
}
