//! `ernic-server`: the emulated ionic NIC, served to a QEMU guest (or any
//! vfio-user client) on a UNIX socket.
//!
//! The server presents the PCI function (identity, config space, BAR 0
//! registers and device commands, the Ethernet queues and a TAP, the RDMA
//! admin queues and data path, BAR 2 doorbells trapped or in shared pages,
//! MSI-X) to one client at a time. With `--backend tcp` it joins the TCP
//! mesh before serving, and QPs in its guest reach those of other servers'
//! guests through it.
//!
//! What the client can make it hold is bounded (see `--help`'s limits and
//! `ernic_vfio::server`): replies it does not read are queued up to two
//! largest messages and for at most `--client-stall-ms`, then it is
//! disconnected; memory it shares must be sealed against shrinking unless
//! `--allow-unsealed-memory`; when it leaves, every mapping of its memory
//! goes with it.
//!
//! With `--p4`, `--p4-program` or `--p4-guest-scope` the P4 engine's hooks
//! go on the device (`src/p4_hooks.rs`).

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use clap::Parser;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::profile;
use ernic_nvmeof::serve::{ServeOptions, Serving};
use ernic_s3::guest::{GuestConfig, GuestEndpoint, GuestStack};
use ernic_s3::options::S3Options;
use ernic_s3::rdma::{RdmaConfig, RdmaDataPlane};
use ernic_s3::service::{DataPlane, S3Service};
use ernic_verbs::{Gid, Mesh, MeshConfig, MeshSpec};
use ernic_vfio::dma::Unsealed;
use ernic_vfio::proto::Capabilities;
use ernic_vfio::server::{Options, Server};

#[path = "../p4_hooks.rs"]
mod p4_hooks;

/// What `--help` adds after the flags: the limits a client meets.
const LIMITS: &str = "\
Limits a client meets (the socket's client is untrusted):
  one client at a time; the next waits in the socket's backlog
  messages:        at most max_data_xfer_size (1 MiB) + 32 bytes, 16 descriptors
  DMA windows:     at most 65535 (max_dma_maps), each within its file
  guest memory:    must be sealed against shrinking (F_SEAL_SHRINK; QEMU's
                   memory-backend-memfd seals by default), else DMA_MAP fails
                   with EPERM and a line here; --allow-unsealed-memory takes it
                   (at most 256 such windows) under a SIGBUS guard
  unread replies:  queued up to two largest messages (2 MiB + 64 bytes); while
                   that full no request is read; a client that takes no reply,
                   or leaves a message half sent, for --client-stall-ms is
                   disconnected, with a line here
  on leaving:      every mapping of the client's memory is released";

/// The emulated ionic RDMA NIC, served over vfio-user.
#[derive(Parser, Debug)]
#[command(name = "ernic-server", version, about = "The emulated ionic RDMA NIC, served over vfio-user", long_about = None, after_help = LIMITS)]
struct Args {
    /// The vfio-user socket to create (owner-only permissions). A stale
    /// socket there (nobody listening) is replaced; a live server's socket,
    /// or anything that is not a socket, is refused and left alone.
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
    /// Write the device's counters to this file about once a second and
    /// when a client leaves, in ernic's versioned stats schema (what
    /// `ernic-exporter` reads): groups `device` and `qp` (the guest's
    /// `hw_counters`, same names and values), `ionic`, `lif`, `port`, `link`,
    /// `p4`, with this server's identity. Replaced atomically (write, fsync,
    /// rename). Its directory must exist and be writable at start; a later
    /// failed write is logged once.
    #[arg(long)]
    stats_file: Option<PathBuf>,
    /// The instance's name in the stats file (the exporter's `instance`
    /// label); HOST:PID when not given.
    #[arg(long, requires = "stats_file")]
    stats_name: Option<String>,
    /// How often the stats file is rewritten, in milliseconds; it is also
    /// written when a client leaves and at exit (SIGTERM, SIGINT).
    #[arg(long, default_value_t = 1000, requires = "stats_file",
          value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    stats_interval_ms: u64,
    /// Take guest memory that is not sealed against shrinking (a file on
    /// hugetlbfs, a plain file, an unsealed memfd). Such memory is mapped
    /// under a SIGBUS guard: if the client shrinks it, the request that
    /// meets the hole sees zeros, every later DMA into that window fails,
    /// and the server goes on.
    #[arg(long)]
    allow_unsealed_memory: bool,
    /// Disconnect a client that takes no reply, or leaves a message half
    /// sent, for this many milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    client_stall_ms: u64,
    /// What stands behind the device's RDMA side: loopback (one server),
    /// tcp (several servers joined by --mesh), nvmeof[:OPTS] (an NVMe-oF
    /// target in this process that the guest reaches over RDMA; OPTS as
    /// for `ernic nvme serve`, e.g. nvmeof:ns=64M,addr=192.0.2.10; the
    /// guest's GIDs in ERNIC_TCP_GUEST_GIDS), s3[:OPTS] (the S3 store in
    /// this process: a host on the guest's Ethernet segment at addr= with
    /// mac= serving HTTP on port=, its RDMA data plane at addr on the
    /// fabric beside the guest; OPTS as for `ernic s3 serve`, e.g.
    /// s3:addr=192.0.2.20,size=1G,access-key=AK,secret-key=SK (or
    /// anonymous); the guest's GIDs in
    /// ERNIC_TCP_GUEST_GIDS); none is accepted for bring-up scripts and
    /// serves as loopback does.
    #[arg(long, default_value = "loopback", value_parser = parse_backend)]
    backend: String,
    /// With --backend tcp: tcp:manager:listen:PORT or tcp:worker:HOST:PORT
    /// (IPv6 hosts in brackets). The guest's GIDs come from
    /// ERNIC_TCP_GUEST_GIDS (comma-separated IPv6 or IPv4 addresses). Give
    /// every node the same key in ERNIC_MESH_KEY_FILE (mode 600) and the mesh
    /// admits only nodes that prove it; without one, a node listening beyond
    /// loopback warns (ERNIC_TCP_LISTEN picks the address).
    #[arg(long)]
    mesh: Option<MeshSpec>,
    /// How long to wait for the mesh manager at start, in seconds.
    #[arg(long, default_value_t = 30)]
    mesh_wait: u64,
    /// Run the P4 match-action engine on the device's paths: every
    /// Ethernet frame between the guest and the TAP, and every RDMA send
    /// WQE once its memory checks pass. --p4-program and --p4-guest-scope
    /// turn it on too.
    #[arg(long)]
    p4: bool,
    /// A compiled P4 program (bmv2 JSON) for the engine to run from the
    /// start. Read at start: a file that cannot be read is an error naming
    /// it. Turns the engine on.
    #[arg(long, value_name = "FILE")]
    p4_program: Option<PathBuf>,
    /// How far the guest may reach the engine through device commands
    /// 70-72 [default: none]: none (they are unknown opcodes and
    /// LIF_IDENTIFY does not advertise the engine), tables (runtime
    /// commands and status), program (loading a program too). Given at
    /// all, even as none, it turns the engine on.
    #[arg(long, value_name = "SCOPE", value_parser = ["none", "tables", "program"])]
    p4_guest_scope: Option<String>,
    /// Makes chosen events fail, on a pattern of event counts, never on a
    /// timer: a comma-separated list of EVENT[=ARG]:PATTERN. Events:
    /// stats_vals (STATS_VALS and QP_STATS_VALS fail), rx_drop (a frame for
    /// the guest is lost), rx_no_buffer (dropped as if no buffer were
    /// posted), tx_drop (a sent frame is completed but never sent),
    /// send_err[=STATUS] (a send WQE completes with STATUS, rem_access
    /// unless said), recv_err[=STATUS] (a receive completes in error,
    /// loc_len unless said), admin_err[=OPCODE] (an RDMA admin command, of
    /// that opcode, fails), dma_fault (a send WQE's payload read fails);
    /// with --backend tcp, mesh_drop, mesh_delay[=MS] and mesh_cut on the
    /// mesh's data messages.
    /// Patterns, counting events from 1: every=N, from=N, burst=B/M (the
    /// first B of every M), at=3,7,19. Example:
    /// send_err=rnr_retry_exc:at=3,7,rx_drop:every=10. A bad spec is an
    /// error at start.
    #[arg(long, value_name = "SPEC")]
    inject: Option<String>,
    #[command(flatten)]
    log: ernic_ops::LogArgs,
}

/// Binds `path` with permissions for the owner only. A socket file there
/// is replaced only when nobody answers on it.
fn bind(path: &Path) -> Result<UnixListener> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if !m.file_type().is_socket() {
            bail!(
                "{} exists and is not a socket: refusing to replace it",
                path.display()
            );
        }
        match probe(path) {
            Probe::Live => bail!(
                "{}: a server is listening there (it answered a connection): \
                 stop it, or choose another --socket",
                path.display()
            ),
            Probe::Stale => std::fs::remove_file(path)
                .with_context(|| format!("removing the stale socket {}", path.display()))?,
            Probe::Unknown(e) => bail!(
                "{}: cannot tell whether a server listens there ({e}): refusing to replace it",
                path.display()
            ),
        }
    }
    // The socket is made under a name of its own beside PATH, restricted,
    // and only then renamed into place: whoever waits for PATH to appear
    // (QEMU, a script, a test) finds a socket that already listens, and
    // nobody can connect before it is owner-only. A directory so deep that
    // the side name would not fit a socket address binds PATH itself.
    let side = path.with_file_name(format!(".ernic-server-{}.sock", std::process::id()));
    let at = if side.as_os_str().len() < SOCKET_PATH_MAX {
        let _ = std::fs::remove_file(&side);
        side.as_path()
    } else {
        path
    };
    let listener = UnixListener::bind(at).with_context(|| format!("binding {}", at.display()))?;
    std::fs::set_permissions(at, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("restricting {}", at.display()))?;
    if at != path {
        std::fs::rename(at, path).with_context(|| {
            let _ = std::fs::remove_file(at);
            format!("moving the new socket to {}", path.display())
        })?;
    }
    Ok(listener)
}

/// Longest path a Unix socket address holds (`sun_path`, less its NUL).
const SOCKET_PATH_MAX: usize = 107;

/// Whether a server listens on a socket file.
enum Probe {
    Live,
    Stale,
    Unknown(std::io::Error),
}

/// Connects to `path` to see whether anyone listens. A connect that is
/// still pending after a second waits in a full backlog: someone listens.
fn probe(path: &Path) -> Probe {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(UnixStream::connect(p).map(drop));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(1)) {
        Ok(Ok(())) | Err(_) => Probe::Live,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => Probe::Stale,
        Ok(Err(e)) => Probe::Unknown(e),
    }
}

/// Checks at start that the stats file can be written where it is asked
/// for (its directory exists, and a file can be made there).
fn check_stats_file(p: &Path) -> Result<()> {
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!(
            "--stats-file {}: the directory {} does not exist",
            p.display(),
            dir.display()
        );
    }
    if p.is_dir() {
        bail!("--stats-file {}: is a directory", p.display());
    }
    let tmp = p.with_extension("tmp");
    std::fs::write(&tmp, b"").with_context(|| {
        format!(
            "--stats-file {}: cannot write {}",
            p.display(),
            tmp.display()
        )
    })?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
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

/// Checks `--backend`'s value: one of the backends, `nvmeof` or `s3` with
/// options.
fn parse_backend(s: &str) -> Result<String, String> {
    match s {
        "loopback" | "tcp" | "none" | "s3" | "nvmeof" => Ok(s.to_string()),
        _ if s.starts_with("nvmeof:") || s.starts_with("s3:") => Ok(s.to_string()),
        _ => Err(format!(
            "{s:?}: expected loopback, tcp, none, nvmeof[:OPTS] or s3[:OPTS]"
        )),
    }
}

/// The backend a `--backend` value names if it is one that runs beside the
/// guest on a mesh of its own (`nvmeof`, `s3`).
fn beside_backend(b: &str) -> Option<&'static str> {
    ["nvmeof", "s3"]
        .into_iter()
        .find(|n| b == *n || b.strip_prefix(n).is_some_and(|r| r.starts_with(':')))
}

/// The guest's GIDs for an info line.
fn gids_said(gids: &[Gid]) -> String {
    if gids.is_empty() {
        "none given (set ERNIC_TCP_GUEST_GIDS, or the target cannot answer)".to_string()
    } else {
        gids.iter()
            .map(|g| g.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The stats-file groups of a target beside the guest, read from the
/// device loop when the file is written.
type Groups = Box<dyn Fn() -> Vec<ernic_ops::Group> + Send>;

/// What a backend beside the guest keeps running while the server serves.
enum Beside {
    /// The NVMe-oF target.
    Nvmeof(#[allow(dead_code)] Serving),
    /// The S3 store's network stack (its data plane's fabric lives with
    /// the service the stack holds).
    S3(#[allow(dead_code)] GuestStack),
}

/// Starts the S3 store beside the guest: its data plane on a fabric that
/// joins the guest's mesh (the answer's [`Mesh`]), and its network stack,
/// whose endpoint goes to the guest's device.
fn start_s3(opts: &str, gids: Vec<Gid>) -> Result<(Mesh, GuestStack, GuestEndpoint, Groups)> {
    let o = S3Options::parse(opts).context("--backend s3")?;
    let store = o.open_store().context("opening the S3 store")?;
    let gid = Gid::from_ipv4(o.addr);
    let (mesh, fabric) = ernic_verbs::beside::beside(gids.clone(), gid)
        .context("joining the S3 store's data plane to the guest's mesh")?;
    let dev = fabric
        .open_device(gid)
        .with_context(|| format!("the S3 data plane's device at {}", o.addr))?;
    let dp = RdmaDataPlane::new(
        dev,
        RdmaConfig {
            lanes: o.lanes,
            ..RdmaConfig::default()
        },
    )
    .context("the S3 store's RDMA data plane")?;
    let dp: Arc<dyn DataPlane> = Arc::new(dp);
    let service =
        Arc::new(S3Service::new(store, o.config.clone(), Some(dp)).context("--backend s3")?);
    let counted = service.clone();
    let (stack, endpoint) = GuestStack::start(GuestConfig::new(o.addr, o.mac, o.port), service)
        .context("starting the S3 store's network stack")?;
    let guest = stack.watch();
    let groups: Groups = Box::new(move || {
        let mut g = counted.stats_groups();
        g.push(guest.group());
        g
    });
    let m = o.mac;
    tracing::info!(
        addr = %o.addr,
        port = o.port,
        data_plane_gid = %gid,
        guest_gids = %gids_said(&gids),
        "S3 store at http://{}:{} on the guest's segment (MAC \
         {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}; {}, {} MiB)",
        o.addr,
        o.port,
        m[0],
        m[1],
        m[2],
        m[3],
        m[4],
        m[5],
        o.dir
            .as_ref()
            .map_or("in memory".to_string(), |d| d.display().to_string()),
        o.size >> 20,
    );
    Ok((mesh, stack, endpoint, groups))
}

/// Joins the mesh `--backend tcp` asks for, with the guest's GIDs; `None`
/// for the other backends.
fn join_mesh(
    a: &Args,
    injector: Option<&Arc<ernic_core::inject::Injector>>,
) -> Result<Option<(Mesh, Vec<Gid>)>> {
    match (a.backend.as_str(), &a.mesh) {
        (b, None) if beside_backend(b).is_some() => Ok(None),
        (b, Some(_)) if beside_backend(b).is_some() => bail!(
            "--mesh goes with --backend tcp; --backend {} makes a mesh of its own",
            beside_backend(b).unwrap_or_default()
        ),
        ("tcp", None) => {
            bail!("--backend tcp needs --mesh tcp:manager:listen:PORT or tcp:worker:HOST:PORT")
        }
        ("tcp", Some(spec)) => {
            let mut cfg = MeshConfig::new(spec.clone());
            cfg.gids = guest_gids()?;
            // The mesh's events (mesh_drop, mesh_delay, mesh_cut) count
            // on the same faults as the device's.
            if let Some(inj) = injector {
                cfg.injector = inj.clone();
            }
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
            tracing::info!(
                node = id.0,
                "mesh node {} (listening on {}), {gids} guest GID(s)",
                id.0,
                mesh.listen_addr()
            );
            Ok(Some((mesh, guest)))
        }
        (other, Some(_)) => bail!("--mesh goes with --backend tcp, not --backend {other}"),
        (_, None) => Ok(None),
    }
}

fn run(a: &Args) -> Result<()> {
    let id = profile::load(&a.nic_profile).context("--nic-profile")?;
    let injector = match &a.inject {
        Some(spec) => Some(Arc::new(
            ernic_core::inject::Injector::parse(spec)
                .map_err(|e| anyhow::anyhow!("--inject {spec:?}: {e}"))?,
        )),
        None => None,
    };
    if let Some(p) = &a.stats_file {
        check_stats_file(p)?;
    }
    let p4 = p4_hooks::P4Options::from_flags(
        a.p4,
        a.p4_program.as_deref(),
        a.p4_guest_scope.as_deref(),
    )?;
    let p4 = match p4 {
        Some(o) => {
            let hooks = p4_hooks::p4_hooks(&o).context("--p4")?;
            Some((o, hooks))
        }
        None => None,
    };
    let mut mesh = join_mesh(a, injector.as_ref())?;
    // Kept alive for as long as the server serves.
    let mut endpoint = None;
    let mut target_groups: Option<Groups> = None;
    let _beside = match beside_backend(&a.backend) {
        Some("nvmeof") => {
            let opts = a.backend["nvmeof".len()..].trim_start_matches(':');
            let o = ServeOptions::parse(opts).context("--backend nvmeof")?;
            let gids = guest_gids()?;
            let (m, serving) =
                Serving::beside(&o, gids.clone()).context("starting the NVMe-oF target")?;
            tracing::info!(
                nqn = %o.config.nqn,
                addr = %o.addr,
                port = o.port,
                namespaces = o.config.namespaces.len(),
                guest_gids = %gids_said(&gids),
                "NVMe-oF target started"
            );
            mesh = Some((m, gids));
            let (stats, namespaces) = (serving.stats().clone(), o.config.namespaces.len());
            target_groups = Some(Box::new(move || stats.groups(namespaces)));
            Some(Beside::Nvmeof(serving))
        }
        Some(_) => {
            let opts = a.backend["s3".len()..].trim_start_matches(':');
            let gids = guest_gids()?;
            let (m, stack, ep, groups) = start_s3(opts, gids.clone())?;
            target_groups = Some(groups);
            mesh = Some((m, gids));
            endpoint = Some(ep);
            Some(Beside::S3(stack))
        }
        None => None,
    };
    let listener = bind(&a.socket)?;
    tracing::info!(
        vectors = id.vectors,
        speed_mbps = id.speed,
        socket = %a.socket.display(),
        "ionic 1dd8:1002 serving"
    );
    let caps = Capabilities {
        max_msg_fds: ernic_vfio::sock::MAX_FDS as u32,
        ..Capabilities::default()
    };
    let shared = id.shared_doorbell_pages;
    let mut function = IonicFunction::new(id)
        .with_shared_doorbells()
        .context("sharing the doorbell pages")?;
    if let Some(inj) = injector {
        function = function.with_injector(inj);
    }
    if shared > 0 {
        tracing::info!(
            pages = shared,
            "the top doorbell pages are shared memory (sparse mmap), polled"
        );
    }
    if let Some(name) = &a.tap {
        let tap = ernic_ionic::tap::Tap::open(name).with_context(|| format!("--tap {name}"))?;
        tracing::info!(tap = %tap.name(), "frames on TAP");
        function = function.with_wire(ernic_ionic::tap::Wire::Tap(tap));
    }
    if let Some(ep) = endpoint {
        function = function.with_endpoint(Box::new(ep));
    }
    let mut instance = ernic_ops::Instance::this_process("ernic-server", a.stats_name.as_deref());
    instance.socket = Some(a.socket.display().to_string());
    if let Some((m, gids)) = &mesh {
        instance.node_id = m.node_id().map(|n| u32::from(n.0));
        instance.gids = gids.iter().map(|g| g.to_string()).collect();
    }
    let mut mesh_for_stats = None;
    if let Some((m, gids)) = mesh {
        let m = Arc::new(m);
        mesh_for_stats = Some(m.clone());
        function = function.with_mesh(m, gids);
    }
    if let Some((o, hooks)) = p4 {
        tracing::info!(
            program = %o.program
                .as_ref()
                .map_or("none".to_string(), |(p, _)| p.display().to_string()),
            scope = ?o.scope,
            "P4 engine on the Ethernet and RDMA send paths"
        );
        function = p4_hooks::install(function, &o, hooks);
    }
    if let Some(p) = &a.stats_file {
        function = function.with_stats_file(
            p.clone(),
            std::time::Duration::from_millis(a.stats_interval_ms),
            Box::new(move |f| {
                let mut doc = f.stats_doc(&instance);
                if let Some(m) = &mesh_for_stats {
                    doc.groups.extend(m.stats_groups());
                }
                if let Some(g) = &target_groups {
                    doc.groups.extend(g());
                }
                if let Some(inj) = f.injector() {
                    doc.faults = ernic_ops::FaultStat::all(inj);
                }
                doc
            }),
        );
    }
    let opts = Options {
        unsealed: if a.allow_unsealed_memory {
            Unsealed::Guard
        } else {
            Unsealed::Refuse
        },
        stall_timeout: std::time::Duration::from_millis(a.client_stall_ms),
    };
    if a.allow_unsealed_memory {
        tracing::info!("guest memory not sealed against shrinking is taken, under a SIGBUS guard");
    }
    let mut server = Server::with_options(function, caps, opts);
    // SIGTERM or SIGINT: the client's session is ended, the accept loop
    // woken, and the stats file written once more before the exit.
    let stopping = Arc::new(AtomicBool::new(false));
    let current: Arc<Mutex<Option<UnixStream>>> = Arc::default();
    {
        let (stopping, current, at) = (stopping.clone(), current.clone(), a.socket.clone());
        ernic_ops::signal::on_termination(move |_| {
            stopping.store(true, Ordering::SeqCst);
            if let Some(c) = current.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                let _ = c.shutdown(std::net::Shutdown::Both);
            }
            let _ = UnixStream::connect(&at);
        })
        .context("starting the signal thread")?;
    }
    for conn in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        *current.lock().unwrap_or_else(|e| e.into_inner()) = conn.try_clone().ok();
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        tracing::info!("client attached");
        let served = server.serve(&conn);
        *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        // The client's last counts are in the file once it has left.
        server.device.write_stats();
        tracing::debug!(
            counters = ?server.device.bar0().stats(),
            queues = ?server.device.bar0().queues(),
            "client's session ended"
        );
        match served {
            Ok(()) => tracing::info!("client left"),
            Err(e) if stopping.load(Ordering::SeqCst) => {
                tracing::info!(error = %e, "client's session ended by the signal")
            }
            Err(e) => tracing::warn!(error = %e, "client dropped"),
        }
        if stopping.load(Ordering::SeqCst) {
            break;
        }
    }
    server.device.write_stats();
    let _ = std::fs::remove_file(&a.socket);
    tracing::info!("stopped");
    Ok(())
}

fn main() {
    // Before any thread starts: SIGTERM and SIGINT are taken by the
    // signal thread alone (see run).
    if let Err(e) = ernic_ops::signal::block_termination() {
        eprintln!("ernic-server: blocking SIGTERM and SIGINT: {e}");
        std::process::exit(1);
    }
    let args = Args::parse();
    if let Err(e) = args.log.init() {
        eprintln!("ernic-server: {e}");
        std::process::exit(2);
    }
    if let Err(e) = run(&args) {
        eprintln!("ernic-server: {e:#}");
        std::process::exit(1);
    }
}
