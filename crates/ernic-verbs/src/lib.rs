//! # ernic-verbs: RDMA verbs for host programs
//!
//! A safe Rust API over ernic's device model: open a device on a fabric,
//! allocate a protection domain, register memory, create completion queues,
//! queue pairs and shared receive queues, connect them, post work and poll
//! for completions. Shaped after libibverbs, so its vocabulary carries over.
//!
//! The **loopback fabric** ([`Fabric::new`]) holds any number of devices in
//! one process, each with its own GID; they reach each other as if cabled.
//! Work requests execute when they are posted, on the posting thread: a
//! `post_send` of an RDMA WRITE has copied the bytes by the time it returns,
//! and its completion is waiting on the CQ.
//!
//! Memory the device may touch is allocated by the fabric ([`Pd::reg_mr`]) so
//! that it can never be freed while a key still names it. Read and write it
//! with [`Mr::read`] and [`Mr::write`].
//!
//! A [`Device`] hands every call to a [`Provider`], as libibverbs hands them
//! to rdma-core's providers: a fabric's devices use the native one; the
//! `ernic-ionic-driver` crate has one that drives an emulated ionic NIC
//! through its rings, so the same program runs on either.
//!
//! ```
//! use ernic_verbs::{Access, Fabric, QpType, SendOp, SendWr, WcStatus};
//!
//! # fn main() -> Result<(), ernic_verbs::Error> {
//! let fabric = Fabric::new();
//! let (a, b) = (fabric.open_device("fe80::a".parse().unwrap())?, fabric.open_device("fe80::b".parse().unwrap())?);
//! let (pa, pb) = (a.alloc_pd()?, b.alloc_pd()?);
//! let (ca, cb) = (a.create_cq(64)?, b.create_cq(64)?);
//! let qa = pa.create_qp(QpType::Rc, &ca, &ca, Default::default())?;
//! let qb = pb.create_qp(QpType::Rc, &cb, &cb, Default::default())?;
//! let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
//! qa.connect(b.gid(), qb.qpn(), access)?;
//! qb.connect(a.gid(), qa.qpn(), access)?;
//!
//! let src = pa.reg_mr(4096, Access::LOCAL_WRITE)?;
//! let dst = pb.reg_mr(4096, access)?;
//! src.write(0, b"hello, rdma")?;
//! let sge = [src.sge(0, 11)?];
//! qa.post_send(&SendWr::new(7, SendOp::Write(dst.remote(0)?)).sgl(&sge))?;
//!
//! let wc = ca.wait_one(std::time::Duration::from_secs(1))?.expect("a completion");
//! assert_eq!((wc.wr_id, wc.status), (7, WcStatus::Success));
//! let mut got = [0u8; 11];
//! dst.read(0, &mut got)?;
//! assert_eq!(&got, b"hello, rdma");
//! # Ok(()) }
//! ```

// `unsafe_code` is denied (the workspace's lint policy). It is allowed in
// `buffer` (raw allocations the device reads and writes) and
// `native::cq_ring` (the lock-free CQ ring), and on the three items that
// take a caller's raw memory: `MrMemory::borrowed`, `Pd::reg_user_mr`, and
// the native device's `reg_mr`, which adds it to the engine's registry.
pub mod beside;
#[allow(unsafe_code)]
mod buffer;
mod cq;
mod device;
pub mod gsi;
mod mr;
mod native;
mod provider;
mod qp;

pub use buffer::PAGE;
pub use cq::Cq;
pub use device::Device;
pub use gsi::{Gsi, GsiStats};
pub use mr::{FastMr, Mr};
pub use native::{EventHook, Fabric};
pub use provider::{CqOps, MrMemory, Notify, Provider, wait_with};
pub use qp::{Ah, Pd, Qp, Srq};

pub use ernic_mesh::{Mesh, MeshConfig, SameHostLink, Spec as MeshSpec};

pub use ernic_core::{
    Access, AhId, AsyncEvent, Completion as Wc, Counter, Counters, CqId, EngineConfig as Config,
    EngineError, Gid, Lkey, NodeId, PageSource, PdId, QpAttr, QpCaps, QpInfo, QpInit, QpState,
    QpType, Qpn, RecvWr, RegMr, RemoteAddr, Rkey, SendFlags, SendOp, SendWr, Sge, SrqId, UdDest,
    WcOpcode, WcStatus,
};

/// What went wrong in a verbs call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device refused the call; nothing changed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Memory for a region could not be allocated.
    #[error("cannot allocate {len} bytes for a memory region")]
    Alloc {
        /// Bytes asked for.
        len: usize,
    },
    /// An offset and length outside a memory region.
    #[error("bytes {offset}..{offset}+{len} are outside the {size}-byte memory region")]
    OutOfRange {
        /// Offset asked for.
        offset: usize,
        /// Length asked for.
        len: usize,
        /// The region's size.
        size: usize,
    },
    /// The device does not offer what was asked.
    #[error("{0}")]
    Unsupported(&'static str),
    /// The device failed (a provider's own error).
    #[error(transparent)]
    Device(Box<dyn std::error::Error + Send + Sync>),
    /// The CQ overflowed: completions were lost, as with a hardware CQ overrun.
    #[error("completion queue overrun: more than {depth} completions were waiting")]
    CqOverrun {
        /// The CQ's depth.
        depth: u32,
    },
}
