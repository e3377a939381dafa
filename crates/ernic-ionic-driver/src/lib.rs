//! # ernic-ionic-driver: a userspace ionic driver
//!
//! This crate exists so that tests and tools can drive the emulated ionic
//! device without a VM: it plays the guest's kernel driver from an
//! ordinary process, so the device's rings, commands and interrupts are
//! exercised exactly as a guest would, in `cargo test` and in the perf
//! tools. It reads and writes every ring format through `ernic_ionic::fw`,
//! the same views the device decodes with, so the two cannot drift.
//!
//! It attaches to an `ernic-server` socket as a vfio-user client (the part
//! QEMU plays), brings the device up as Linux's `ionic` and `ionic_rdma`
//! drivers do (IDENTIFY, LIF_IDENTIFY, the RDMA bootstrap of an event
//! queue, an admin CQ and an admin queue), creates objects through the
//! RDMA admin queue, and drives the rings as rdma-core's ionic provider
//! does: v1 WQEs written into the send and receive rings, doorbells, CQEs
//! read by their color. Work requests and completions are `ernic-core`'s
//! types, as `ernic-verbs` uses them.
//!
//! Protection domains are the driver's, as in Linux's `ionic_alloc_pd`:
//! [`Driver::alloc_pd`] hands out the lowest free id below [`MAX_PDS`] and
//! tells the device nothing; every CREATE_QP, CREATE_MR, CREATE_AH and
//! CREATE_SRQ carries the id of the PD its object belongs to, and the
//! device keeps objects of different PDs apart. The calls without a PD
//! use the driver's own, [`Driver::pd`] (id 0, taken at attach).
//!
//! Key 0, the reserved DMA key, is for privileged QPs only, as in Linux:
//! a PD becomes privileged when the driver takes a DMA MR for it
//! ([`Driver::get_dma_mr`], `ionic_get_dma_mr`), which ib_core does for
//! every kernel PD and never for a user one, and each QP created in a
//! privileged PD carries `IONIC_QPF_PRIVILEGED` in CREATE_QP (and
//! MODIFY_QP). The driver's own PD plays the kernel's and is privileged
//! from attach; those [`Driver::alloc_pd`] hands out (the verbs layer's,
//! a guest process's) are not, so their QPs' SGEs cannot name key 0.
//!
//! The driver's "guest memory" is a memfd it shares with the server
//! (DMA_MAP); rings and buffers are carved from it. Doorbells go into a
//! shared doorbell page when the server offers them (profile
//! `shared-doorbells`), one page per QP and CQ, else through BAR 2 as
//! messages.
//!
//! The files, one thing each: [`Error`] (`error.rs`); memory, rings and
//! buffers (`memory.rs`); the handles (`handles.rs`); attach and bring-up
//! (`bring_up.rs`); events, interrupts and doorbells (`events.rs`); the
//! admin queue (`admin.rs`) and the objects made through it (`pd.rs`,
//! `cq.rs`, `qp.rs`, `ah.rs`, `mr.rs`, `srq.rs`); WQE encoding
//! (`post.rs`); CQE polling (`poll.rs`); the Ethernet admin, TX and RX
//! queues and the frames through them (`eth.rs`); and the `ernic-verbs`
//! provider ([`provider`]).
//!
//! ```no_run
//! use ernic_ionic_driver::Driver;
//! let mut d = Driver::attach(std::path::Path::new("/tmp/ernic.sock"), 16 << 20)?;
//! let cq = d.create_cq(8)?;
//! # Ok::<(), ernic_ionic_driver::Error>(())
//! ```

mod admin;
mod ah;
mod bring_up;
mod cq;
mod error;
mod eth;
mod events;
mod handles;
mod memory;
mod mr;
mod pd;
mod poll;
mod post;
#[allow(unsafe_code)]
pub mod provider;
mod qp;
mod srq;

pub(crate) use ah::ipv4_template;
pub use error::Error;
pub use eth::{FRAME_BUF, LifStats};
pub use events::wait_readable;
pub use handles::{Cq, Mr, Pd, Qp, QpSpec, Srq};
pub(crate) use handles::{QpBook, SendMeta};
pub use memory::Buf;
pub(crate) use memory::Ring;
pub(crate) use poll::read_cqe;

use std::time::Duration;

use ernic_core::Gid;
use ernic_vfio::client::Client;
use ernic_vfio::shm::Mapping;

/// Where the driver's memory sits in the device's DMA address space.
pub(crate) const BASE: u64 = 0x1_0000_0000;
/// How long an admin command may take.
pub(crate) const ADMIN_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest WQE this driver writes.
pub(crate) const MAX_WQE: usize = 512;
/// PD ids the driver hands out: those below this (Linux's `IONIC_MAX_PD`).
pub const MAX_PDS: u32 = 1024;

/// The driver, attached to one device.
pub struct Driver {
    c: Client,
    mem: Mapping,
    _mem_fd: std::os::fd::OwnedFd,
    size: u64,
    /// Free runs of driver memory: offset to length.
    free: std::collections::BTreeMap<u64, u64>,
    aq: Ring,
    aq_prod: u32,
    acq: Ring,
    acq_cons: u32,
    shared: Option<(Mapping, usize)>,
    next_cq: u32,
    next_qp: u32,
    next_mr: u32,
    next_ah: u32,
    /// PD ids in use, and the driver's own PD.
    pds: std::collections::BTreeSet<u32>,
    pd: Pd,
    /// PD ids a DMA MR was taken for: their QPs are privileged.
    privileged: std::collections::BTreeSet<u32>,
    gid: Gid,
    qps: std::collections::HashMap<u32, QpBook>,
    /// Shared doorbell pages given to a QP or SRQ.
    pages_used: std::collections::BTreeSet<usize>,
    /// The event queue (vector 0) and how far it has been read.
    eq: Ring,
    eq_cons: u32,
    /// Vector 0's eventfd, and how many interrupts it has counted.
    event: std::fs::File,
    interrupts: u64,
    /// The Ethernet queues, once [`Driver::eth_up`] has made them.
    eth: Option<eth::Eth>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("memory", &self.size)
            .field("shared_doorbells", &self.shared.is_some())
            .finish()
    }
}
