//! The NVMe-oF target's controllers: one NVM subsystem (the configured
//! namespaces) and the discovery subsystem
//! (`nqn.2014-08.org.nvmexpress.discovery`), each serving dynamic
//! controllers that a host creates with a Fabrics Connect on an admin queue.
//!
//! The design is sans-IO. The RDMA transport (not in this crate) owns the
//! queue pairs, the buffers and every byte moved to or from the host; the
//! [`Target`] decides and executes. For each command capsule the transport:
//!
//! 1. calls [`Target::plan`] with the queue's [`QueueState`] and the 64-byte
//!    SQE. An `Err` is the completion to send at once (bad opcode, bad nsid,
//!    a data length over MDTS, a length that does not match the SGL, any
//!    command but Connect on an unbound queue...); `Ok` says how many bytes
//!    the command moves and which way ([`Xfer`]).
//! 2. moves the data: for [`Xfer::FromHost`] it fetches exactly that many
//!    bytes (in-capsule data or RDMA READ through the keyed SGL); for
//!    [`Xfer::ToHost`] it provides a buffer of exactly that length. If the
//!    transfer fails it completes the command with [`Target::fail`].
//! 3. calls [`Target::execute`] with the same SQE and the buffer, and sends
//!    the completion of [`Outcome::Done`] (after RDMA WRITE of a `ToHost`
//!    buffer). [`Outcome::Deferred`] means an Asynchronous Event Request is
//!    held: its completion comes later from [`Target::poll`].
//!
//! It also calls [`Target::poll`] at [`Target::next_deadline`] (keep-alive
//! timers, held AERs) and [`Target::queue_gone`] when a connection ends.
//! Every submission entry is counted exactly once in the queue's SQ head: by
//! the call that produces its completion (`plan`'s `Err`, `execute`,
//! `fail`), or by `execute` for a held AER.
//!
//! What the transport owes the controller: a `ToHost` buffer goes to the
//! host only when the completion is a success; the SGL in the SQE's `dptr`
//! has already been checked against the planned length (keyed descriptors
//! name host memory for RDMA READ/WRITE, offset data blocks name in-capsule
//! data), so the transport resolves it but need not re-check its length.
//! Linux sends admin capsules without in-capsule data and I/O capsules of up
//! to IOCCSZ x 16 = 64 + [`INLINE_DATA_BYTES`] bytes, the receive buffer size
//! an I/O queue needs.
//!
//! Limits: at most [`MAX_CONTROLLERS`] controllers, [`MAX_QUEUES`] I/O queues
//! each, [`MDTS_BYTES`] per command, [`AER_LIMIT`] held AERs per controller.
//! Nothing here reads the clock; `now` is passed in. The I/O path
//! (plan/execute of Read, Write, Flush, Write Zeroes, Dataset Management)
//! does not allocate, except that a RAM namespace allocates a chunk on its
//! first write (see [`crate::namespace`]).

mod aer;
mod cmd;
mod fabrics;
mod features;
mod identify;
mod io;
mod keepalive;
mod log;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::config::{Config, ConfigError, NamespaceSpec};
pub use crate::config::{DISCOVERY_NQN, MAX_QUEUES};
use crate::namespace::Namespace;
use crate::wire::cqe;
use crate::wire::fabrics::registers::{CAP_CSS_NVM, CSTS_CFS, CSTS_RDY, CSTS_SHST_CMPLT, Cap};
use crate::wire::sqe::{self, AdminOpcode, IoOpcode};
use crate::wire::status::Status;
use cmd::{Cmd, complete, put_ascii, put16, put32, put64, sgl_len, window};
pub use keepalive::grace as keep_alive_grace;

/// The most controllers the target keeps at once (live or dead-but-not-gone).
pub const MAX_CONTROLLERS: usize = 64;
/// MDTS as Identify reports it: 2^8 units of CAP.MPSMIN (4 KiB) = 1 MiB, as
/// nvmet-rdma reports (`NVMET_RDMA_MAX_MDTS`).
pub const MDTS: u8 = 8;
/// The largest data transfer of one command, in bytes.
pub const MDTS_BYTES: u32 = 4096 << MDTS;
/// In-capsule data the transport accepts behind an I/O queue's SQE.
pub const INLINE_DATA_BYTES: u32 = 8192;
/// Held Asynchronous Event Requests per controller (nvmet's
/// `NVMET_ASYNC_EVENTS`); Identify's AERL is this minus one.
pub const AER_LIMIT: usize = 4;
/// The version this target reports: NVMe 1.3.0. 1.3 is the first version
/// whose features Linux's host needs from a fabrics target (the Identify
/// Namespace Identification Descriptor list, keep-alive, the active
/// namespace list), and it does not claim 2.x behaviours this target lacks
/// (the CRTO register, the I/O Command Set Independent namespace data
/// as the primary namespace source).
pub const VERSION: u32 = 0x0001_0300;
/// Keep Alive Support granularity (KAS) in 100 ms units: 1 s, as nvmet.
pub const KAS: u16 = 10;
/// KATO of a discovery controller whose Connect asked for none (nvmet's
/// `NVMET_DISC_KATO_MS`).
pub const DISCOVERY_KATO_MS: u32 = 120_000;
/// The admin queue depth the discovery log advertises (`NVME_AQ_DEPTH`).
pub const ADMIN_QUEUE_DEPTH: u16 = 32;

/// Where the target listens, as discovery log entries report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportAddr {
    /// The IPv4 address (`traddr`).
    pub addr: Ipv4Addr,
    /// The RDMA CM port (`trsvcid`), 4420 by convention.
    pub port: u16,
    /// The NVM subsystem port id (`portid`).
    pub portid: u16,
}

/// The bytes a command moves, as [`Target::plan`] decides them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Xfer {
    /// No data.
    None,
    /// The controller fills this many bytes for the host.
    ToHost(u32),
    /// The host sends this many bytes.
    FromHost(u32),
}

impl Xfer {
    /// The length in bytes.
    pub fn len(self) -> u32 {
        match self {
            Xfer::None => 0,
            Xfer::ToHost(n) | Xfer::FromHost(n) => n,
        }
    }
    /// Whether no data moves.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// What [`Target::execute`] did with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The command is complete: send this completion.
    Done(cqe::Repr),
    /// An Asynchronous Event Request is held; [`Target::poll`] completes it.
    Deferred,
}

/// Work [`Target::poll`] hands the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Send this completion on the controller's queue `qid` (an AER fired).
    Complete {
        /// The controller.
        cntlid: u16,
        /// The queue (always 0, the admin queue).
        qid: u16,
        /// The completion.
        cqe: cqe::Repr,
    },
    /// The controller is dead (keep-alive lapsed, CSTS.CFS set) or its admin
    /// queue went away: tear down all its queues.
    Teardown {
        /// The controller.
        cntlid: u16,
    },
}

/// An event the target reports to hosts through Asynchronous Event Requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncEvent {
    /// A namespace's attributes changed (for instance its size).
    NamespaceChanged {
        /// The namespace.
        nsid: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Binding {
    cntlid: u16,
    /// The controller's unique instance, so a queue outliving its controller
    /// is never taken for a new controller with the same cntlid.
    instance: u64,
    qid: u16,
    /// Entries in the submission queue (the Connect's SQSIZE + 1).
    size: u32,
    sqflow_disabled: bool,
}

/// One connected (or not yet connected) queue, owned by the transport.
#[derive(Debug)]
pub struct QueueState {
    bound: Option<Binding>,
    /// The SQ head pointer; shared with the controller for the admin queue so
    /// a held AER's later completion reports the head of its time.
    head: Arc<AtomicU32>,
}

impl QueueState {
    /// The controller and queue this queue is bound to since its Connect.
    pub fn binding(&self) -> Option<(u16, u16)> {
        self.bound.map(|b| (b.cntlid, b.qid))
    }

    /// The submission queue's entries (the Connect's SQSIZE + 1), once bound.
    pub fn sq_size(&self) -> Option<u32> {
        self.bound.map(|b| b.size)
    }

    /// The current SQ head as completions report it.
    pub fn sq_head(&self) -> u16 {
        match self.bound {
            Some(b) if b.sqflow_disabled => 0xffff,
            // The head is kept below the queue size, which is at most 65536.
            _ => self.head.load(Ordering::Relaxed) as u16,
        }
    }

    /// Counts one consumed entry and returns the head to report.
    fn consume(&self) -> u16 {
        if let Some(b) = self.bound {
            let next = (self.head.load(Ordering::Relaxed) + 1) % b.size.max(1);
            self.head.store(next, Ordering::Relaxed);
        }
        self.sq_head()
    }
}

/// Which subsystem a controller belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subsys {
    Nvm,
    Discovery,
}

/// Per-namespace counters for the SMART / Health log.
#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    host_reads: u64,
    host_writes: u64,
    sectors_read: u64,
    sectors_written: u64,
}

/// One controller: its registers, features, keep-alive and events.
#[derive(Debug)]
struct Controller {
    cntlid: u16,
    instance: u64,
    subsys: Subsys,
    hostnqn: [u8; 256],
    cc: u32,
    csts: u32,
    /// KATO in whole seconds (nvmet rounds the Connect's milliseconds up).
    kato_secs: u32,
    ka_deadline: Option<Instant>,
    dead: bool,
    aen_enabled: u32,
    aen_masked: u32,
    granted: u16,
    /// Bit q set: I/O queue q is connected (q <= MAX_QUEUES < 128).
    io_queues: u128,
    admin_head: Arc<AtomicU32>,
    aers: [u16; AER_LIMIT],
    nr_aers: usize,
    events: aer::Events,
    changed_ns: aer::ChangedNs,
}

/// A failure that becomes a completion: its status and result dword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fail {
    status: Status,
    result: u64,
}

impl Fail {
    const fn dnr(status: Status) -> Fail {
        Fail {
            status: status.with_dnr(),
            result: 0,
        }
    }
    const fn with_result(mut self, result: u64) -> Fail {
        self.result = result;
        self
    }
}

/// A command decoded and checked by `plan`, ready for `execute`.
#[derive(Debug, Clone, Copy)]
enum Op {
    Connect(fabrics::Connect),
    PropertyGet { eight: bool, offset: u32 },
    PropertySet { offset: u32, value: u64 },
    Identify(identify::Identify),
    GetLog(log::GetLog),
    GetFeatures { fid: u8 },
    SetFeatures { fid: u8, cdw11: u32 },
    AsyncEvent,
    KeepAlive,
    Abort,
    Io(io::IoOp),
}

/// The target: subsystems, controllers, namespaces and the port address.
#[derive(Debug)]
pub struct Target {
    cfg: Config,
    addr: TransportAddr,
    namespaces: Vec<Namespace>,
    counters: Vec<Counters>,
    controllers: BTreeMap<u16, Controller>,
    next_cntlid: u16,
    next_instance: u64,
    genctr: u64,
    pending: Vec<Action>,
    last_now: Option<Instant>,
    stats: Arc<crate::stats::NvmeofStats>,
}

impl Target {
    /// A target for `cfg`, listening at `addr`: sets up every namespace
    /// (a `file:` namespace's file must exist).
    pub fn new(cfg: Config, addr: TransportAddr) -> Result<Target, ConfigError> {
        let mut namespaces = Vec::with_capacity(cfg.namespaces.len());
        for (i, spec) in cfg.namespaces.iter().enumerate() {
            // At most MAX_NAMESPACES (32) entries, so the nsid fits.
            let nsid = i as u32 + 1;
            let ns = match spec {
                NamespaceSpec::Ram { bytes } => {
                    Namespace::ram(nsid, *bytes, cfg.block_size, &cfg.nqn)
                }
                NamespaceSpec::File { path } => {
                    Namespace::file(nsid, path, cfg.block_size, &cfg.nqn)
                }
            }
            .map_err(|source| ConfigError::Namespace { nsid, source })?;
            namespaces.push(ns);
        }
        Ok(Target {
            counters: vec![Counters::default(); namespaces.len()],
            namespaces,
            cfg,
            addr,
            controllers: BTreeMap::new(),
            next_cntlid: 1,
            next_instance: 1,
            genctr: 0,
            pending: Vec::with_capacity(MAX_CONTROLLERS),
            last_now: None,
            stats: Arc::default(),
        })
    }

    /// Its counters (shared with the transport and a stats writer).
    pub fn stats(&self) -> &Arc<crate::stats::NvmeofStats> {
        &self.stats
    }

    /// Counts `cqe` as the completion of `cmd` on `q`.
    fn counted(&self, q: &QueueState, cmd: &Cmd, cqe: cqe::Repr) -> cqe::Repr {
        let admin = q.bound.is_none_or(|b| b.qid == 0);
        self.stats.command(admin, cmd.opcode, cqe.status);
        cqe
    }

    /// The configuration the target runs with.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The namespaces, nsid 1 first.
    pub fn namespaces(&self) -> &[Namespace] {
        &self.namespaces
    }

    /// A new queue, unbound until its Connect.
    pub fn new_queue(&self) -> QueueState {
        QueueState {
            bound: None,
            head: Arc::new(AtomicU32::new(0)),
        }
    }

    /// Live controllers (not dead, not gone).
    pub fn controllers(&self) -> usize {
        self.controllers.values().filter(|c| !c.dead).count()
    }

    /// CAP as Property Get reports it.
    fn cap(&self) -> u64 {
        // TO = 15 x 500 ms as nvmet; MPSMIN = MPSMAX = 0 (4 KiB pages).
        Cap {
            mqes: self.cfg.depth - 1,
            cqr: true,
            to: 15,
            css: CAP_CSS_NVM,
            mpsmin: 0,
            mpsmax: 0,
        }
        .to_bits()
    }

    /// Decides, before any data moves, what the command needs. An `Err` is
    /// the completion to send now (the command is over).
    pub fn plan(&self, q: &QueueState, sqe: &[u8; 64]) -> Result<Xfer, cqe::Repr> {
        let cmd = Cmd::new(sqe);
        self.plan_op(q, &cmd)
            .map(|(_, x)| x)
            .map_err(|f| self.counted(q, &cmd, complete(q, &cmd, f.status, f.result)))
    }

    /// Completes a planned command whose data transfer failed, with `status`
    /// (normally [`Status::DATA_XFER_ERROR`]).
    pub fn fail(&self, q: &QueueState, sqe: &[u8; 64], status: Status) -> cqe::Repr {
        let cmd = Cmd::new(sqe);
        self.counted(q, &cmd, complete(q, &cmd, status, 0))
    }

    fn plan_op(&self, q: &QueueState, cmd: &Cmd) -> Result<(Op, Xfer), Fail> {
        // nvmet_req_init: no fused commands; fabrics SGLs describe metadata
        // as one buffer (PSDT 01b), which is what Linux sends.
        if cmd.flags & sqe::FLAGS_FUSE_MASK != 0
            || cmd.flags & sqe::FLAGS_PSDT_MASK != sqe::FLAGS_SGL_METABUF
        {
            return Err(Fail::dnr(Status::INVALID_FIELD));
        }
        let (op, xfer) = match q.bound {
            None => fabrics::plan_unbound(cmd)?,
            Some(b) => {
                let ctrl = self.bound_controller(&b)?;
                if b.qid == 0 {
                    self.plan_admin(ctrl, cmd)?
                } else {
                    self.plan_io(ctrl, cmd)?
                }
            }
        };
        let len = sgl_len(cmd)?;
        match (op, xfer) {
            // A DSM payload may be longer than its ranges (see DSM_MAX_PAYLOAD).
            (Op::Io(io::IoOp::Dsm { .. }), Xfer::FromHost(least))
                if (least..=io::DSM_MAX_PAYLOAD).contains(&len) =>
            {
                Ok((op, Xfer::FromHost(len)))
            }
            _ if len == xfer.len() => Ok((op, xfer)),
            _ => Err(Fail::dnr(Status::SGL_INVALID_DATA)),
        }
    }

    fn bound_controller(&self, b: &Binding) -> Result<&Controller, Fail> {
        match self.controllers.get(&b.cntlid) {
            Some(c) if c.instance == b.instance => Ok(c),
            _ => Err(Fail::dnr(Status::CMD_SEQ_ERROR)),
        }
    }

    fn plan_admin(&self, ctrl: &Controller, cmd: &Cmd) -> Result<(Op, Xfer), Fail> {
        let opcode = AdminOpcode::from(cmd.opcode);
        if opcode == AdminOpcode::Fabrics {
            return fabrics::plan_admin(cmd);
        }
        if ctrl.dead {
            return Err(Fail::dnr(Status::KA_TIMEOUT_EXPIRED));
        }
        let ready = ctrl.cc & 1 != 0 && ctrl.csts & CSTS_RDY != 0;
        if ctrl.subsys == Subsys::Discovery {
            if !ready {
                return Err(Fail::dnr(Status::INVALID_OPCODE));
            }
            return match opcode {
                AdminOpcode::Identify | AdminOpcode::GetLogPage => self.plan_common(ctrl, cmd),
                AdminOpcode::GetFeatures | AdminOpcode::SetFeatures => self.plan_common(ctrl, cmd),
                AdminOpcode::AsyncEvent | AdminOpcode::KeepAlive => self.plan_common(ctrl, cmd),
                _ => Err(Fail::dnr(Status::INVALID_OPCODE)),
            };
        }
        if !ready {
            return Err(Fail::dnr(Status::CMD_SEQ_ERROR));
        }
        self.plan_common(ctrl, cmd)
    }

    fn plan_common(&self, ctrl: &Controller, cmd: &Cmd) -> Result<(Op, Xfer), Fail> {
        match AdminOpcode::from(cmd.opcode) {
            AdminOpcode::Identify => {
                let id = identify::Identify::decode(cmd);
                Ok((Op::Identify(id), Xfer::ToHost(identify::LEN)))
            }
            AdminOpcode::GetLogPage => {
                let g = log::GetLog::decode(cmd)?;
                Ok((Op::GetLog(g), Xfer::ToHost(g.len)))
            }
            AdminOpcode::GetFeatures => Ok((
                Op::GetFeatures {
                    fid: cmd.cdw(10) as u8,
                },
                Xfer::None,
            )),
            AdminOpcode::SetFeatures => Ok((
                Op::SetFeatures {
                    fid: cmd.cdw(10) as u8,
                    cdw11: cmd.cdw(11),
                },
                Xfer::None,
            )),
            AdminOpcode::AsyncEvent => {
                if ctrl.nr_aers >= AER_LIMIT {
                    return Err(Fail::dnr(Status::ASYNC_LIMIT));
                }
                Ok((Op::AsyncEvent, Xfer::None))
            }
            AdminOpcode::KeepAlive => Ok((Op::KeepAlive, Xfer::None)),
            AdminOpcode::Abort => Ok((Op::Abort, Xfer::None)),
            _ => Err(Fail::dnr(Status::INVALID_OPCODE)),
        }
    }

    fn plan_io(&self, ctrl: &Controller, cmd: &Cmd) -> Result<(Op, Xfer), Fail> {
        if IoOpcode::from(cmd.opcode) == IoOpcode::Fabrics {
            // Only authentication commands are legal here; none is served.
            return Err(Fail::dnr(Status::INVALID_OPCODE));
        }
        if ctrl.dead {
            return Err(Fail::dnr(Status::KA_TIMEOUT_EXPIRED));
        }
        if ctrl.cc & 1 == 0 || ctrl.csts & CSTS_RDY == 0 {
            return Err(Fail::dnr(Status::CMD_SEQ_ERROR));
        }
        let (op, xfer) = io::plan(&self.namespaces, cmd)?;
        Ok((Op::Io(op), xfer))
    }

    /// Runs a command. `data` holds the bytes moved from the host
    /// ([`Xfer::FromHost`]) or is the buffer the controller fills
    /// ([`Xfer::ToHost`]); its length must be the planned one.
    pub fn execute(
        &mut self,
        q: &mut QueueState,
        now: Instant,
        sqe: &[u8; 64],
        data: &mut [u8],
    ) -> Outcome {
        self.last_now = Some(now);
        let cmd = Cmd::new(sqe);
        let (op, xfer) = match self.plan_op(q, &cmd) {
            Ok(p) => p,
            Err(f) => {
                let cqe = complete(q, &cmd, f.status, f.result);
                return Outcome::Done(self.counted(q, &cmd, cqe));
            }
        };
        if usize::try_from(xfer.len()).ok() != Some(data.len()) {
            let cqe = complete(q, &cmd, Status::DATA_XFER_ERROR.with_dnr(), 0);
            return Outcome::Done(self.counted(q, &cmd, cqe));
        }
        if let Some(b) = q.bound {
            // Traffic-based keep-alive (CTRATT.TBKAS): any command counts.
            if let Some(c) = self.controllers.get_mut(&b.cntlid) {
                keepalive::refresh(c, now);
            }
        }
        let result = match op {
            Op::Connect(c) => {
                let cqe = self.connect(q, now, &cmd, c, data);
                return Outcome::Done(self.counted(q, &cmd, cqe));
            }
            Op::AsyncEvent => match self.hold_aer(q, &cmd) {
                Ok(()) => return Outcome::Deferred,
                Err(f) => Err(f),
            },
            Op::Io(io) => self.run_io(io, data),
            other => self.run_admin(q, now, &cmd, other, data),
        };
        let cqe = match result {
            Ok(r) => complete(q, &cmd, Status::SUCCESS, r),
            Err(f) => complete(q, &cmd, f.status, f.result),
        };
        Outcome::Done(self.counted(q, &cmd, cqe))
    }

    fn run_admin(
        &mut self,
        q: &QueueState,
        now: Instant,
        cmd: &Cmd,
        op: Op,
        data: &mut [u8],
    ) -> Result<u64, Fail> {
        let Some(b) = q.bound else {
            return Err(Fail::dnr(Status::CMD_SEQ_ERROR));
        };
        match op {
            Op::PropertyGet { eight, offset } => self.property_get(&b, eight, offset),
            Op::PropertySet { offset, value } => self.property_set(&b, now, offset, value),
            Op::Identify(id) => self.identify(&b, id, data).map(|()| 0),
            Op::GetLog(g) => self.get_log(&b, cmd, g, data).map(|()| 0),
            Op::GetFeatures { fid } => self.get_features(&b, fid),
            Op::SetFeatures { fid, cdw11 } => self.set_features(&b, now, fid, cdw11),
            Op::KeepAlive => self.keep_alive(&b, now),
            // Abort: result bit 0 set, "command not aborted", as nvmet.
            Op::Abort => Ok(1),
            Op::Connect(_) | Op::AsyncEvent | Op::Io(_) => Err(Fail::dnr(Status::INTERNAL)),
        }
    }

    fn ctrl_mut(&mut self, b: &Binding) -> Result<&mut Controller, Fail> {
        match self.controllers.get_mut(&b.cntlid) {
            Some(c) if c.instance == b.instance => Ok(c),
            _ => Err(Fail::dnr(Status::CMD_SEQ_ERROR)),
        }
    }

    /// A queue's connection went away. An admin queue takes its controller
    /// with it; [`Target::poll`] then hands out a [`Action::Teardown`] so the
    /// transport closes the controller's I/O queues.
    pub fn queue_gone(&mut self, q: &QueueState) {
        let Some(b) = q.bound else { return };
        let Some(c) = self.controllers.get_mut(&b.cntlid) else {
            return;
        };
        if c.instance != b.instance {
            return;
        }
        if b.qid == 0 {
            let was_dead = c.dead;
            self.controllers.remove(&b.cntlid);
            if !was_dead {
                self.pending.push(Action::Teardown { cntlid: b.cntlid });
            }
        } else {
            c.io_queues &= !(1u128 << b.qid);
        }
    }
}

/// The KATO from milliseconds to whole seconds, rounded up (nvmet).
fn kato_secs(ms: u32) -> u32 {
    ms.div_ceil(1000)
}

/// Seconds as a duration.
fn secs(s: u32) -> Duration {
    Duration::from_secs(u64::from(s))
}
