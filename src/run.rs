//! `ernic run -- PROGRAM ARGS`: runs an unmodified RDMA program over ernic.
//!
//! The program finds ernic's `libibverbs.so.1` first on its library path,
//! and the environment tells the library which mesh to join. Without
//! `--mesh`, the runs of one host meet on a loopback port: the first run
//! to bind it hosts the mesh manager in its own process (and keeps it up,
//! after its program ends, until the programs of the other runs have
//! left); every other run's program joins it as a worker. So
//! `ernic run -- ib_write_bw` in one terminal and
//! `ernic run -- ib_write_bw localhost` in another just work.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ernic_verbs::{Mesh, MeshConfig, MeshSpec};

/// `ernic run` flags.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The program runs with LD_LIBRARY_PATH naming a directory that holds ernic's
libibverbs.so.1, and ERNIC_MESH naming the mesh its device joins. Each
program's device gets its own GID (fd00::1b:N+1 for mesh node N, or
ERNIC_GID), shown by ibv_devinfo; perftest and the pingpong programs pick
it with -x 0 / -g 0. ernic run itself logs warnings only, unless
--log-level or ERNIC_LOG says otherwise (the library logs as ERNIC_LOG says).

Examples:
  ernic run -- ibv_devinfo -v
  ernic run -- ib_write_bw -x 0              (one terminal)
  ernic run -- ib_write_bw -x 0 localhost    (another)
  ernic run --mesh tcp:worker:host1:7000 -- ibv_rc_pingpong -g 0 host1")]
pub struct RunArgs {
    /// The mesh to join (tcp:worker:HOST:PORT, or tcp:manager:listen:PORT
    /// to make this program the manager). Default: meet the other runs of
    /// this host on --port.
    #[arg(long, value_name = "SPEC")]
    pub mesh: Option<String>,
    /// The loopback port the runs of this host meet on, when --mesh is not
    /// given.
    #[arg(long, env = "ERNIC_RUN_PORT", default_value_t = 18520)]
    pub port: u16,
    /// The GID of the program's device (an IPv6 address). Default: one
    /// derived from its mesh node number.
    #[arg(long, value_name = "ADDR")]
    pub gid: Option<String>,
    /// ernic's libibverbs.so to use. Default: the one built beside this
    /// binary (cargo builds it with `ernic`).
    #[arg(long, value_name = "PATH", env = "ERNIC_IBVERBS")]
    pub lib: Option<PathBuf>,
    /// How long, after the program ends, a run that hosts the mesh waits
    /// at most for the other runs' programs to leave, in seconds.
    #[arg(long, default_value_t = 3600)]
    pub linger_secs: u64,
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub program: Vec<OsString>,
}

/// Where cargo put `libibverbs.so`: in this binary's `deps` (built with
/// it), or beside it (built on its own: `cargo build -p ernic-ibverbs`);
/// the newer, as cargo leaves the other as it was.
fn built_library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding this binary")?;
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow!("{} has no directory", exe.display()))?;
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    [
        dir.join("deps").join("libibverbs.so"),
        dir.join("libibverbs.so"),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .max_by_key(|p| modified(p))
    .ok_or_else(|| {
        anyhow!(
            "no libibverbs.so beside {} (build the workspace with cargo, or give --lib)",
            exe.display()
        )
    })
}

/// A directory holding `libibverbs.so.1` and `librdmacm.so.1` (links to
/// `lib`), removed when the run ends.
struct LibDir(PathBuf);

impl LibDir {
    fn new(lib: &Path) -> Result<LibDir> {
        let lib = lib
            .canonicalize()
            .with_context(|| format!("--lib {}", lib.display()))?;
        let dir = std::env::temp_dir().join(format!("ernic-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // One file serves both names: librdmacm lives in libibverbs.so.
        for name in ["libibverbs.so.1", "librdmacm.so.1"] {
            let link = dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&lib, &link)
                .with_context(|| format!("linking {} to {}", link.display(), lib.display()))?;
        }
        Ok(LibDir(dir))
    }
}

impl Drop for LibDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the program; exits with its status.
pub fn run(a: &RunArgs) -> Result<()> {
    let lib = match &a.lib {
        Some(p) => p.clone(),
        None => built_library()?,
    };
    let dir = LibDir::new(&lib)?;
    let mut host = None;
    let mut key_file = None;
    let spec = match &a.mesh {
        Some(s) => {
            s.parse::<MeshSpec>().map_err(|e| anyhow!("--mesh: {e}"))?;
            s.clone()
        }
        None => {
            // The first run to bind the port hosts the manager; the others
            // find it there.
            let key = run_key()?;
            let mut cfg = MeshConfig::new(MeshSpec::Manager { port: a.port });
            cfg.listen_ip = Ok(Some(std::net::Ipv4Addr::LOCALHOST.into()));
            cfg.key = ernic_mesh::MeshKey::from_file(&key).map(Some);
            key_file = Some(key);
            match Mesh::start(cfg) {
                Ok(m) => {
                    tracing::info!("ernic run: hosting the mesh on port {}", a.port);
                    host = Some(m);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    tracing::info!("ernic run: joining the mesh on port {}", a.port);
                }
                Err(e) => bail!("the mesh on port {}: {e}", a.port),
            }
            format!("tcp:worker:127.0.0.1:{}", a.port)
        }
    };
    let mut path = OsString::from(&dir.0);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let mut cmd = Command::new(&a.program[0]);
    cmd.args(&a.program[1..])
        .env("LD_LIBRARY_PATH", path)
        .env("ERNIC_MESH", &spec);
    if let Some(k) = &key_file {
        cmd.env("ERNIC_MESH_KEY_FILE", k);
    }
    if let Some(g) = &a.gid {
        cmd.env("ERNIC_GID", g);
    }
    // The program ends with this run: killed, it takes the program with it
    // (SIGTERM), rather than leave it on a mesh this run may have hosted.
    let me = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec and
    // makes only async-signal-safe calls (prctl, getppid, kill) on no
    // shared state.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The run may have died before the prctl took.
            if libc::getppid() != me {
                libc::kill(libc::getpid(), libc::SIGTERM);
            }
            Ok(())
        })
    };
    let status = cmd
        .status()
        .with_context(|| format!("running {}", a.program[0].to_string_lossy()))?;
    if let Some(mesh) = host {
        linger(&mesh, Duration::from_secs(a.linger_secs));
        mesh.shutdown();
    }
    drop(dir);
    let code = status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + status.signal().unwrap_or(0)
    });
    std::process::exit(code);
}

/// The key the runs of this host share, unless the environment gives one
/// (`ERNIC_MESH_KEY_FILE`): a file only this user can read, made with
/// random bytes by the first run, so only this user's programs can join.
fn run_key() -> Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(f) = std::env::var_os("ERNIC_MESH_KEY_FILE").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(f));
    }
    if std::env::var_os("ERNIC_MESH_KEY").is_some_and(|v| !v.is_empty()) {
        bail!(
            "ernic run shares its key through a file: give ERNIC_MESH_KEY_FILE, not ERNIC_MESH_KEY"
        );
    }
    use std::os::unix::fs::MetadataExt;
    // This process's user: the owner of its /proc directory.
    let uid = std::fs::metadata("/proc/self")
        .context("reading /proc/self")?
        .uid();
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("ernic"),
        None => std::env::temp_dir().join(format!("ernic-{uid}")),
    };
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
    }
    let meta = std::fs::metadata(&dir).with_context(|| format!("{}", dir.display()))?;
    if meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "{} is not this user's own private directory: remove it, or give ERNIC_MESH_KEY_FILE",
            dir.display()
        );
    }
    let key = dir.join("mesh.key");
    if !key.exists() {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .context("reading /dev/urandom for the mesh key")?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = dir.join(format!("mesh.key.{}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, hex.as_bytes()))
            .with_context(|| format!("writing {}", tmp.display()))?;
        // Two first runs at once: one link wins, both use its key.
        if std::fs::hard_link(&tmp, &key).is_err() && !key.exists() {
            bail!("could not make {}", key.display());
        }
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(key)
}

/// Keeps a hosted mesh up while other runs' programs are on it (at most
/// `limit`).
fn linger(mesh: &Mesh, limit: Duration) {
    let others = || {
        mesh.peers()
            .iter()
            .filter(|(p, _)| p.id.0 != 0 && p.alive)
            .count()
    };
    let end = Instant::now() + limit;
    // The program's own node closes its connections as it exits: give it
    // a moment to be gone before counting the others.
    let grace = Instant::now() + Duration::from_secs(1);
    while others() > 0 && Instant::now() < grace {
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut said = false;
    while others() > 0 && Instant::now() < end {
        if !said {
            eprintln!(
                "ernic run: the program ended; keeping the mesh up for the {} other program(s) on it",
                others()
            );
            said = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
