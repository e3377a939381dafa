//! `ernic-server`: the emulated ionic NIC, served to a QEMU guest (or any
//! vfio-user client) on a UNIX socket.
//!
//! So far the server presents the PCI function (identity, config space,
//! BAR 0 registers and device commands, the Ethernet admin queue, BAR 2
//! doorbells, MSI-X) to one client at a time; the Ethernet data queues,
//! the RDMA half and the mesh backends are still to come (issues 6 and 7).

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Parser;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::profile;
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
    /// names (compat, small) or .ini files of key = value lines.
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

fn run(a: &Args) -> Result<()> {
    let id = profile::load(&a.nic_profile).context("--nic-profile")?;
    let info = a.log_level != "error" && a.log_level != "warn";
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
    let mut function = IonicFunction::new(id);
    if let Some(name) = &a.tap {
        let tap = ernic_ionic::tap::Tap::open(name).with_context(|| format!("--tap {name}"))?;
        if info {
            eprintln!("ernic-server: frames on TAP {}", tap.name());
        }
        function = function.with_wire(ernic_ionic::tap::Wire::Tap(tap));
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
