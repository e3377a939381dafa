//! The process's one ernic device, made the first time a program asks for
//! the device list, as the environment says:
//!
//! - `ERNIC_MESH=SPEC` joins a TCP mesh (`tcp:worker:HOST:PORT`, or
//!   `tcp:manager:listen:PORT` to be the manager), so the device reaches
//!   the devices of other processes and hosts; unset, the device reaches
//!   only devices of this process. On a mesh, opening the device starts
//!   the process's rdma_cm agent (QP 1 and a thread), so its port answers
//!   other processes' connection requests.
//! - `ERNIC_GID=ADDR` gives the device's GID (an IPv6 address); unset, it
//!   is `fd00::1b:N+1` for mesh node N (`fd00::1b:1` off a mesh).
//! - `ERNIC_MESH_WAIT_MS` bounds the wait to register with the manager
//!   (default 10000).
//! - `ERNIC_RNR_TIMEOUT_MS` bounds how long a SEND waits for its peer to
//!   post a receive before it completes with RNR retry exceeded, for a QP
//!   that set no `rnr_retry` (default 5000). A QP that set one waits its
//!   `rnr_retry` times the peer's `min_rnr_timer`, as on hardware (7:
//!   without limit in one process, 27 s from another).
//! - `ERNIC_LOG` sets what the library logs on stderr (default `warn`).
//!
//! A setting that is wrong, or a mesh that cannot be joined, leaves the
//! process with no device: `ibv_get_device_list` answers an empty list and
//! the reason is printed once on stderr.

use std::net::Ipv6Addr;
use std::sync::OnceLock;
use std::time::Duration;

use ernic_verbs::{Config, Device, Fabric, Gid, Mesh, MeshConfig, MeshSpec, NodeId};

use crate::abi;

/// The device's name in the list, as `ibv_devices` prints it.
pub(crate) const DEVICE_NAME: &str = "ernic0";

/// Everything the library's objects share: the fabric, the device on it,
/// and the C view of the device (`struct ibv_device`), which lives as long
/// as the process.
pub(crate) struct Runtime {
    pub fabric: Fabric,
    /// How long to wait for the mesh (registering, a peer's GID to appear).
    pub wait: Duration,
    pub device: Device,
    pub gid: Gid,
    pub cfg: Limits,
    pub ibv: IbDevice,
    /// The QPs and SRQs asynchronous events may name.
    pub objects: crate::events::Registry,
}

/// The limits the device reports (`ibv_query_device`), the engine's own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_pd: u32,
    pub max_mr: u32,
    pub max_cq: u32,
    pub max_qp: u32,
    pub max_qp_wr: u32,
    pub max_sge: u32,
    pub max_srq: u32,
    pub max_ah: u32,
    pub max_msg_size: u64,
}

/// `struct ibv_device`, the handle the device list holds.
#[repr(C)]
pub(crate) struct IbDevice {
    pub c: abi::ibv_device,
}

// SAFETY: the C struct holds only plain data (names, numbers) and two
// unused pointers that are never dereferenced; it is written once, before
// it is shared, and read only after.
unsafe impl Sync for IbDevice {}
// SAFETY: as above.
unsafe impl Send for IbDevice {}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The runtime, made on first use; the reason there is none, otherwise.
pub(crate) fn get() -> Result<&'static Runtime, &'static str> {
    RUNTIME
        .get_or_init(|| {
            init_logging();
            let made = Runtime::from_env(&|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
            match &made {
                Err(why) => eprintln!("libibverbs (ernic): no device: {why}"),
                // SAFETY: atexit takes a plain function with no arguments,
                // which runs once, on the exiting thread.
                Ok(_) => unsafe {
                    libc::atexit(drain_at_exit);
                },
            }
            made
        })
        .as_ref()
        .map_err(String::as_str)
}

/// At exit: what the process sent last leaves before it does (a UD send
/// completes when handed to the mesh, and a program may exit right after
/// its completion, as the pingpongs do).
extern "C" fn drain_at_exit() {
    if let Some(Ok(rt)) = RUNTIME.get()
        && let Some(mesh) = rt.fabric.mesh()
    {
        let _ = mesh.drain(Duration::from_millis(500));
    }
}

fn init_logging() {
    let args = ernic_ops::LogArgs {
        log_level: std::env::var("ERNIC_LOG").unwrap_or_else(|_| "warn".into()),
        ..ernic_ops::LogArgs::default()
    };
    if let Err(e) = args.init() {
        eprintln!("libibverbs (ernic): ERNIC_LOG: {e}");
    }
}

/// The GID of the device of mesh node `n` when `ERNIC_GID` does not say.
pub(crate) fn default_gid(n: NodeId) -> Gid {
    Gid(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0x1b, n.0.wrapping_add(1)).octets())
}

impl Runtime {
    fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Runtime, String> {
        let gid = match lookup("ERNIC_GID") {
            Some(text) => Some(Gid(text
                .parse::<Ipv6Addr>()
                .map_err(|_| format!("ERNIC_GID={text}: not an IPv6 address"))?
                .octets())),
            None => None,
        };
        let wait = match lookup("ERNIC_MESH_WAIT_MS") {
            Some(t) => Duration::from_millis(
                t.parse()
                    .map_err(|_| format!("ERNIC_MESH_WAIT_MS={t}: not a number of milliseconds"))?,
            ),
            None => Duration::from_secs(10),
        };
        let mut cfg = Config::default();
        if let Some(t) = lookup("ERNIC_RNR_TIMEOUT_MS") {
            cfg.rnr_timeout =
                Duration::from_millis(t.parse().map_err(|_| {
                    format!("ERNIC_RNR_TIMEOUT_MS={t}: not a number of milliseconds")
                })?);
        }
        let limits = Limits {
            max_pd: cfg.max_pd,
            max_mr: cfg.max_mr,
            max_cq: cfg.max_cq,
            max_qp: cfg.max_qp,
            max_qp_wr: cfg.max_qp_wr,
            max_sge: cfg.max_sge,
            max_srq: cfg.max_srq,
            max_ah: cfg.max_ah,
            max_msg_size: cfg.max_msg_size,
        };
        let (fabric, node) = match lookup("ERNIC_MESH") {
            None => (Fabric::with_config(cfg), NodeId(0)),
            Some(text) => {
                let spec: MeshSpec = text.parse().map_err(|e| format!("ERNIC_MESH: {e}"))?;
                let worker = matches!(spec, MeshSpec::Worker { .. });
                let mesh = Mesh::start(MeshConfig::new(spec))
                    .map_err(|e| format!("ERNIC_MESH={text}: {e}"))?;
                let node = if worker {
                    mesh.wait_registered(wait).ok_or_else(|| {
                        let why = mesh
                            .registration_refused()
                            .or_else(|| mesh.registration_error())
                            .unwrap_or_else(|| format!("no answer in {wait:?}"));
                        format!("ERNIC_MESH={text}: could not register: {why}")
                    })?
                } else {
                    mesh.node_id().unwrap_or(NodeId(0))
                };
                (Fabric::on_mesh(cfg, mesh), node)
            }
        };
        let gid = gid.unwrap_or_else(|| default_gid(node));
        let device = fabric
            .open_device(gid)
            .map_err(|e| format!("opening the device with GID {gid}: {e}"))?;
        let objects = crate::events::Registry::default();
        crate::events::hook(&fabric, objects.clone());
        Ok(Runtime {
            fabric,
            wait,
            device,
            gid,
            cfg: limits,
            ibv: IbDevice::new(DEVICE_NAME),
            objects,
        })
    }

    /// Waits (up to the mesh wait) until a node of the mesh owns `gid`: a
    /// peer that just joined is known to this node a moment after the
    /// program learns its GID by other means. False when it never is, or
    /// there is no mesh.
    pub(crate) fn wait_for_gid(&self, gid: Gid) -> bool {
        let Some(mesh) = self.fabric.mesh() else {
            return false;
        };
        let end = std::time::Instant::now() + self.wait;
        while mesh.owner(&gid).is_none() {
            if std::time::Instant::now() > end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// The node GUID: the GID's interface identifier, as RoCE devices derive
    /// it from their MAC (big-endian in `ibv_device_attr`).
    pub(crate) fn guid(&self) -> u64 {
        u64::from_be_bytes(self.gid.0[8..16].try_into().expect("8 bytes"))
    }
}

impl IbDevice {
    fn new(name: &str) -> IbDevice {
        // SAFETY: `ibv_device` is plain C data (integers, char arrays and
        // pointers), for which all-zero bytes are a valid value.
        let mut c: abi::ibv_device = unsafe { std::mem::zeroed() };
        c.node_type = abi::IBV_NODE_CA;
        c.transport_type = abi::IBV_TRANSPORT_IB;
        copy_c_str(&mut c.name, name);
        copy_c_str(&mut c.dev_name, "uverbs0");
        copy_c_str(&mut c.dev_path, "/sys/class/infiniband_verbs/uverbs0");
        copy_c_str(&mut c.ibdev_path, &format!("/sys/class/infiniband/{name}"));
        IbDevice { c }
    }
}

/// Writes `s` into a C char array, NUL-terminated and truncated to fit.
pub(crate) fn copy_c_str(dst: &mut [std::ffi::c_char], s: &str) {
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(&s.as_bytes()[..n]) {
        *d = *b as std::ffi::c_char;
    }
    if let Some(end) = dst.get_mut(n) {
        *end = 0;
    }
}
