//! `ernic-server`: the emulated ionic NIC, served to a QEMU guest (or any
//! vfio-user client) on a UNIX socket.
//!
//! The server presents the PCI function (identity, config space, BAR 0
//! registers and device commands, the Ethernet queues and a TAP, the RDMA
//! admin queues and data path, BAR 2 doorbells trapped or in shared pages,
//! MSI-X) to one client at a time. With `--backend tcp` it joins the TCP
//! mesh before serving, and QPs in its guest reach those of other servers'
//! guests through it.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::profile;
use ernic_verbs::{Gid, Mesh, MeshConfig, MeshSpec};
use ernic_vfio::proto::Capabilities;
use ernic_vfio::server::Server;

/// The emulated ionic RDMA NIC, served over vfio-user.
#[derive(Parser, Debug)]
#[command(name = "ernic-server", version, about = "The emulated ionic RDMA NIC, served over vfio-user", long_about = None)]
struct Args {
    /// The vfio-user socket to create (owner-only permissions); a stale
    /// socket there is replaced, anything else is refused.
    #[arg(long)]
    socket: PathBuf,
    /// NIC profiles layered over the default, comma-separated: built-in
    /// names (compat, small, shared-doorbells) or .ini files of
    /// key = value lines.
    #[arg(long, default_value = "compat")]
    nic_profile: String,
    /// A host TAP interface for the guest's Ethernet frames (created if
    /// missing; needs CAP_NET_ADMIN). Without one, sent frames are
    /// completed and discarded and nothing is received.
    #[arg(long)]
    tap: Option<String>,
    /// Write the device's counters as JSON to this file every second
    /// (replaced atomically).
    #[arg(long)]
    stats_file: Option<PathBuf>,
    /// What stands behind the device's RDMA side: loopback (one server),
    /// tcp (several servers joined by --mesh); none is accepted for
    /// bring-up scripts and serves as loopback does. nvmeof and s3 are
    /// named by the design and not built yet.
    #[arg(long, default_value = "loopback", value_parser = ["loopback", "tcp", "none", "nvmeof", "s3"])]
    backend: String,
    /// With --backend tcp: tcp:manager:listen:PORT or tcp:worker:HOST:PORT
    /// (IPv6 hosts in brackets). The guest's GIDs come from
    /// ERNIC_TCP_GUEST_GIDS (comma-separated IPv6 or IPv4 addresses).
    #[arg(long)]
    mesh: Option<MeshSpec>,
    /// How long to wait for the mesh manager at start, in seconds.
    #[arg(long, default_value_t = 30)]
    mesh_wait: u64,
    /// How much to say on stderr: error, warn, info or debug.
    #[arg(long, default_value = "info", value_parser = ["error", "warn", "info", "debug"])]
    log_level: String,
}

/// Binds `path` with permissions for the owner only.
fn bind(path: &Path) -> Result<UnixListener> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_socket() {
            bail!(
                "{} exists and is not a socket: refusing to replace it",
                path.display()
            );
        }
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("restricting {}", path.display()))?;
    Ok(listener)
}

/// The guest's GIDs from `ERNIC_TCP_GUEST_GIDS`.
fn guest_gids() -> Result<Vec<Gid>> {
    let Ok(text) = std::env::var("ERNIC_TCP_GUEST_GIDS") else {
        return Ok(Vec::new());
    };
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<Gid>().with_context(|| {
                format!("ERNIC_TCP_GUEST_GIDS: {t:?} is not an IPv6 or IPv4 address")
            })
        })
        .collect()
}

/// Joins the mesh `--backend tcp` asks for, with the guest's GIDs; `None`
/// for the other backends.
fn join_mesh(a: &Args, info: bool) -> Result<Option<(Mesh, Vec<Gid>)>> {
    match (a.backend.as_str(), &a.mesh) {
        ("nvmeof" | "s3", _) => bail!(
            "--backend {}: the in-process targets are not built yet; use loopback, tcp or none",
            a.backend
        ),
        ("tcp", None) => {
            bail!("--backend tcp needs --mesh tcp:manager:listen:PORT or tcp:worker:HOST:PORT")
        }
        ("tcp", Some(spec)) => {
            let mut cfg = MeshConfig::new(spec.clone());
            cfg.gids = guest_gids()?;
            let guest = cfg.gids.clone();
            let gids = guest.len();
            let mesh = Mesh::start(cfg).with_context(|| format!("--mesh {spec}"))?;
            let id = mesh
                .wait_registered(std::time::Duration::from_secs(a.mesh_wait))
                .with_context(|| {
                    format!(
                        "--mesh {spec}: no answer from the mesh manager within {} s \
                         (is it running? --mesh-wait sets the limit)",
                        a.mesh_wait
                    )
                })?;
            if info {
                eprintln!(
                    "ernic-server: mesh node {} (listening on {}), {gids} guest GID(s)",
                    id.0,
                    mesh.listen_addr()
                );
            }
            Ok(Some((mesh, guest)))
        }
        (other, Some(_)) => bail!("--mesh goes with --backend tcp, not --backend {other}"),
        (_, None) => Ok(None),
    }
}

fn run(a: &Args) -> Result<()> {
    let id = profile::load(&a.nic_profile).context("--nic-profile")?;
    let info = a.log_level != "error" && a.log_level != "warn";
    let mesh = join_mesh(a, info)?;
    let listener = bind(&a.socket)?;
    if info {
        eprintln!(
            "ernic-server: ionic 1dd8:1002 ({} MSI-X vectors, {} Mb/s) on {}",
            id.vectors,
            id.speed,
            a.socket.display()
        );
    }
    let caps = Capabilities {
        max_msg_fds: ernic_vfio::sock::MAX_FDS as u32,
        ..Capabilities::default()
    };
    let shared = id.shared_doorbell_pages;
    let mut function = IonicFunction::new(id)
        .with_verbose(a.log_level == "debug")
        .with_shared_doorbells()
        .context("sharing the doorbell pages")?;
    if info && shared > 0 {
        eprintln!(
            "ernic-server: the top {shared} doorbell pages are shared memory (sparse mmap), polled"
        );
    }
    if let Some(name) = &a.tap {
        let tap = ernic_ionic::tap::Tap::open(name).with_context(|| format!("--tap {name}"))?;
        if info {
            eprintln!("ernic-server: frames on TAP {}", tap.name());
        }
        function = function.with_wire(ernic_ionic::tap::Wire::Tap(tap));
    }
    if let Some((m, gids)) = mesh {
        function = function.with_mesh(std::sync::Arc::new(m), gids);
    }
    if let Some(p) = &a.stats_file {
        function = function.with_stats_file(p.clone(), std::time::Duration::from_secs(1));
    }
    let mut server = Server::new(function, caps);
    for conn in listener.incoming() {
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                eprintln!("ernic-server: accept: {e}");
                continue;
            }
        };
        if info {
            eprintln!("ernic-server: client attached");
        }
        let served = server.serve(&conn);
        if a.log_level == "debug" {
            eprintln!(
                "ernic-server: counters {:?}; queues {:?}",
                server.device.bar0().stats(),
                server.device.bar0().queues()
            );
        }
        match served {
            Ok(()) if info => eprintln!("ernic-server: client left"),
            Ok(()) => {}
            Err(e) => eprintln!("ernic-server: client dropped: {e}"),
        }
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("ernic-server: {e:#}");
        std::process::exit(1);
    }
}
