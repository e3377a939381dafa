//! The engine: every device's resources and the calls that create, change
//! and destroy them.
//!
//! One engine serves one or more devices that share a memory space (one
//! guest's RAM, or one process's heap). Each device has its own GIDs and its
//! own id spaces for PDs, MRs, CQs, QPs, SRQs and AHs, as real HCAs do. The
//! engine is single-threaded state: a front end owns it (the ionic device
//! thread) or keeps it behind a lock (native verbs). Time is passed in, so
//! timeouts can be tested without sleeping.
//!
//! The engine knows nothing of rings or CQE formats. Completions it produces
//! wait in an outbox the front end drains ([`Engine::drain_completions`]).

use std::time::{Duration, Instant};

use crate::counters::{Counter, Counters};
use crate::memory::DmaMemory;
use crate::mr::{Mr, MrKind, MrTable};
use crate::qp::{Dest, Qp, QpAttr, QpInfo, QpInit, QpState, QpType, RecvQueue, SendQueue};
use crate::remote::RemoteState;
use crate::types::{AhId, CqId, DeviceId, Gid, PdId, Qpn, Route, SrqId};
use crate::wr::{Access, Completion, CqEvent, RecvWr, SendWr, WcOpcode, WcStatus};

/// Most SGEs one work request may carry.
pub const MAX_SGE: usize = 32;

/// The Q_Key of the GSI QP, which a datagram may name only through a
/// privileged (controlled) key.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// Limits and behaviour of an engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Protection domains per device.
    pub max_pd: u32,
    /// MRs per device.
    pub max_mr: u32,
    /// CQs per device.
    pub max_cq: u32,
    /// QPs per device (QP numbers run below this).
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// SGEs per work request (at most [`MAX_SGE`]).
    pub max_sge: u32,
    /// Inline payload per send request.
    pub max_inline: u32,
    /// SRQs per device.
    pub max_srq: u32,
    /// Address handles per device.
    pub max_ah: u32,
    /// Largest message.
    pub max_msg_size: u64,
    /// Most bytes the work-request slots of one device's QPs and SRQs may
    /// hold together ([`QpCaps::engine_bytes`](crate::QpCaps::engine_bytes)): a QP or SRQ that would
    /// pass it is refused with [`EngineError::OverBudget`].
    pub max_queue_bytes: u64,
    /// Largest datagram payload (the path MTU of UD).
    pub ud_mtu: u32,
    /// How long a SEND waits for its peer to post a receive.
    pub rnr_timeout: Duration,
    /// Check QP states as verbs does. The ionic device records whatever state
    /// the guest asks for and runs its queues in any state (seed 001).
    pub enforce_qp_state: bool,
    /// Whether every QP's local SGEs may use key 0, the reserved DMA key,
    /// whose address is a DMA address used without an MR. Without it only
    /// the QPs a front end makes privileged
    /// ([`Engine::set_qp_privileged`]) may. Never allowed from a peer.
    pub allow_reserved_lkey: bool,
    /// How long a request to another node waits for its answer before it
    /// completes with transport retry exceeded (seed: 30 s).
    pub request_timeout: Duration,
    /// Most READ reply bytes asked of one node at once (seed: 32 MiB).
    pub read_reply_budget: u64,
    /// Largest payload of one message to another node (at most
    /// [`wire::MAX_PAYLOAD`](crate::wire::MAX_PAYLOAD), 16 MiB); a larger
    /// WQE goes as several. Pieces that fit the cache stay in it from the
    /// copy into a frame through the socket and back out into memory: 1 MiB
    /// moved 64 MiB WRITEs between two processes 1.4x faster than 16 MiB here.
    pub max_piece: u32,
    /// Whether requests to a peer that reads this process's memory itself
    /// may name their payloads instead of carrying them. A device whose
    /// memory can go away under a request (a guest's, which the guest may
    /// unmap at any time) says no: a reference could be read after the
    /// mapping is gone and something else is at that address.
    pub send_by_ref: bool,
    /// Smallest piece sent by reference to a peer that reads this process's
    /// memory itself (see [`Remote::reads_from_me`](crate::Remote)); smaller
    /// ones carry their bytes.
    pub by_ref_min: u32,
    /// Largest piece sent by reference. Such a piece costs the socket
    /// nothing, so it may be larger than `max_piece`; but a responder reads
    /// one in a single call, and what queues behind it (a transport's
    /// control message, say) waits that long. Two processes' 64 MiB
    /// sendrecv (ernic bench, four A/B rounds) moved 3.5-4.0 GB/s with
    /// 2 MiB pieces, 3.8-4.4 with 4 MiB, 3.3-4.0 with 8 and 3.2-4.3 with 16.
    pub max_ref_piece: u32,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            max_pd: 1 << 16,
            max_mr: 1 << 16,
            max_cq: 1 << 16,
            max_qp: 1 << 16,
            max_qp_wr: 1 << 15,
            max_sge: MAX_SGE as u32,
            max_inline: 4096,
            max_srq: 1 << 12,
            max_ah: 1 << 16,
            max_msg_size: u64::from(u32::MAX),
            max_queue_bytes: u64::MAX,
            ud_mtu: 4096,
            rnr_timeout: Duration::from_secs(5),
            enforce_qp_state: true,
            allow_reserved_lkey: false,
            request_timeout: Duration::from_secs(30),
            read_reply_budget: 32 << 20,
            max_piece: 1 << 20,
            send_by_ref: true,
            by_ref_min: 64 << 10,
            max_ref_piece: 4 << 20,
        }
    }
}

/// What one object of each kind costs the engine besides the memory a
/// budget already covers (queue slots, [`EngineConfig::max_queue_bytes`]),
/// in bytes: a front end adds these up to state the most memory a guest can
/// make it hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// A QP's table slot (a table grows to the highest id used).
    pub qp: u64,
    /// An MR's table slot.
    pub mr: u64,
    /// An SRQ's table slot.
    pub srq: u64,
    /// An AH's table slot.
    pub ah: u64,
    /// A CQ's table slot.
    pub cq: u64,
    /// One run of an MR's pages (one per page-list entry at most).
    pub run: u64,
    /// A completion waiting to be written (one per queue slot at most).
    pub completion: u64,
    /// The least a queue slot costs (a receive slot with one SGE).
    pub min_slot: u64,
}

impl Footprint {
    /// This build's sizes.
    pub fn of_this_build() -> Footprint {
        use std::mem::size_of;
        let b = |n: usize| n as u64;
        Footprint {
            qp: b(size_of::<Option<Qp>>()),
            mr: b(size_of::<Option<Mr>>()),
            srq: b(size_of::<Option<Srq>>()),
            ah: b(size_of::<Option<Ah>>()),
            cq: b(size_of::<Option<u32>>()),
            run: b(size_of::<crate::mr::Run>()),
            completion: b(size_of::<CqEvent>()),
            min_slot: crate::qp::recv_queue_bytes(1 << 16, 1) >> 16,
        }
    }
}

/// A call into the engine was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The device does not exist.
    #[error("no device {0}")]
    NoDevice(DeviceId),
    /// The protection domain does not exist.
    #[error("no protection domain {0}")]
    NoPd(PdId),
    /// The CQ does not exist.
    #[error("no completion queue {0}")]
    NoCq(CqId),
    /// The QP does not exist.
    #[error("no queue pair {0}")]
    NoQp(Qpn),
    /// The SRQ does not exist.
    #[error("no shared receive queue {0}")]
    NoSrq(SrqId),
    /// The address handle does not exist.
    #[error("no address handle {0}")]
    NoAh(AhId),
    /// No MR has this key.
    #[error("no memory region with key {0:#x}")]
    NoMr(u32),
    /// A table is full.
    #[error("too many {what}: the device allows {max}")]
    Limit {
        /// What ran out.
        what: &'static str,
        /// The limit.
        max: u32,
    },
    /// A new object's memory would pass the device's budget for it.
    #[error("{what} of {need} bytes does not fit: {left} of the device's {max} bytes are left")]
    OverBudget {
        /// What was asked for.
        what: &'static str,
        /// The bytes it needs.
        need: u64,
        /// The bytes left in the budget.
        left: u64,
        /// The whole budget.
        max: u64,
    },
    /// An id asked for is taken or out of range.
    #[error("{what} id {id} is taken or out of range")]
    IdUnavailable {
        /// What kind of object.
        what: &'static str,
        /// The id.
        id: u32,
    },
    /// A queue size or count is outside what the device supports.
    #[error("{what} of {value} is outside 1..={max}")]
    BadSize {
        /// Which size.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The largest allowed.
        max: u64,
    },
    /// The object is still used by another and cannot be destroyed.
    #[error("{what} is still in use")]
    InUse {
        /// What is in use.
        what: &'static str,
    },
    /// Verbs does not allow this state change.
    #[error("QP {qpn} cannot move from {from:?} to {to:?}")]
    BadTransition {
        /// The QP.
        qpn: Qpn,
        /// Its state.
        from: QpState,
        /// The state asked for.
        to: QpState,
    },
    /// A transition is missing an attribute it needs.
    #[error("QP {qpn}: moving to {to:?} needs {attr}")]
    MissingAttr {
        /// The QP.
        qpn: Qpn,
        /// The state asked for.
        to: QpState,
        /// The attribute that was missing.
        attr: &'static str,
    },
    /// No device or node owns the destination GID.
    #[error("no device or node owns GID {0}")]
    NoRoute(Gid),
    /// Work cannot be posted in the QP's state.
    #[error("QP {qpn} is in state {state:?}: cannot post {what}")]
    NotPostable {
        /// The QP.
        qpn: Qpn,
        /// Its state.
        state: QpState,
        /// Sends or receives.
        what: &'static str,
    },
    /// The queue has no free slot.
    #[error("{what} of QP {qpn} is full ({depth} entries)")]
    QueueFull {
        /// The QP (or SRQ number).
        qpn: Qpn,
        /// Which queue.
        what: &'static str,
        /// Its depth.
        depth: u32,
    },
    /// More SGEs than the queue was created for.
    #[error("{n} SGEs given, the queue takes at most {max}")]
    TooManySge {
        /// Given.
        n: usize,
        /// Allowed.
        max: u32,
    },
    /// An inline payload longer than the QP allows.
    #[error("inline payload of {len} bytes exceeds the QP's {max}")]
    InlineTooLong {
        /// Given.
        len: usize,
        /// Allowed.
        max: u32,
    },
    /// A datagram send without a destination, or one on a connected QP.
    #[error("QP {qpn}: {why}")]
    BadRequest {
        /// The QP.
        qpn: Qpn,
        /// What was wrong.
        why: &'static str,
    },
    /// Access flags that verbs refuses (remote write or atomic without local write).
    #[error("access {0:?} gives a remote write right without LOCAL_WRITE")]
    BadAccess(Access),
    /// An address range that wraps around.
    #[error("range {addr:#x}+{len} wraps around the address space")]
    Wraps {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
    },
}

/// What registering a memory region needs.
#[derive(Clone, Debug)]
pub struct MrSpec {
    /// Its protection domain.
    pub pd: PdId,
    /// A key chosen by the front end, or `None` for the lowest free slot.
    pub key: Option<u32>,
    /// First virtual address.
    pub iova: u64,
    /// Length in bytes.
    pub len: u64,
    /// Rights through its key.
    pub access: Access,
    /// Its pages as DMA runs, covering exactly `len` bytes.
    pub runs: Vec<crate::mr::Run>,
}

impl MrSpec {
    /// A region over one contiguous DMA range.
    pub fn contiguous(pd: PdId, iova: u64, len: u64, access: Access, dma: u64) -> MrSpec {
        MrSpec {
            pd,
            key: None,
            iova,
            len,
            access,
            runs: vec![crate::mr::Run { off: 0, dma, len }],
        }
    }
}

/// An event the device reports outside any CQ.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AsyncEvent {
    /// An armed SRQ's receive count fell below its limit (the limit disarms).
    SrqLimitReached {
        /// The device.
        device: DeviceId,
        /// The SRQ.
        srq: SrqId,
    },
    /// A QP went to the error state because a request failed.
    QpFatal {
        /// The device.
        device: DeviceId,
        /// The QP.
        qpn: Qpn,
    },
}

/// A simple id table: lowest free id, or an id the caller chooses.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
    /// Lowest id `insert` hands out (ids below it are reserved).
    first: u32,
    max: u32,
    what: &'static str,
}

impl<T> Slab<T> {
    pub fn new(what: &'static str, max: u32) -> Slab<T> {
        Slab {
            items: Vec::new(),
            first: 0,
            max,
            what,
        }
    }

    /// A table whose automatic ids start at `first`.
    pub fn with_first(what: &'static str, max: u32, first: u32) -> Slab<T> {
        Slab {
            first,
            ..Slab::new(what, max)
        }
    }

    pub fn insert(&mut self, item: T) -> Result<u32, EngineError> {
        let first = self.first as usize;
        if self.items.len() < first {
            self.items.resize_with(first, || None);
        }
        let id = match self.items[first..].iter().position(Option::is_none) {
            Some(i) => first + i,
            None if (self.items.len() as u32) < self.max => {
                self.items.push(None);
                self.items.len() - 1
            }
            None => {
                return Err(EngineError::Limit {
                    what: self.what,
                    max: self.max,
                });
            }
        };
        self.items[id] = Some(item);
        Ok(id as u32)
    }

    pub fn insert_at(&mut self, id: u32, item: T) -> Result<(), EngineError> {
        if id >= self.max || self.get(id).is_some() {
            return Err(EngineError::IdUnavailable {
                what: self.what,
                id,
            });
        }
        let i = id as usize;
        if self.items.len() <= i {
            self.items.resize_with(i + 1, || None);
        }
        self.items[i] = Some(item);
        Ok(())
    }

    pub fn get(&self, id: u32) -> Option<&T> {
        self.items.get(id as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.items.get_mut(id as usize)?.as_mut()
    }

    pub fn remove(&mut self, id: u32) -> Option<T> {
        self.items.get_mut(id as usize)?.take()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i as u32, t.as_ref()?)))
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// A shared receive queue.
#[derive(Debug)]
pub(crate) struct Srq {
    pub pd: PdId,
    pub rq: RecvQueue,
    pub max_sge: u32,
    /// Low watermark; an event fires once when the count drops below it.
    pub limit: u32,
}

/// An address handle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ah {
    pub pd: PdId,
    pub dgid: Gid,
    /// The GID datagrams through the AH come from; `None` for the
    /// device's first.
    pub sgid: Option<Gid>,
    /// Where `dgid` lived when the AH was made; `None` when no one owned it
    /// then. Sends through such an AH look the GID up again, and go by QP
    /// number on the sender's device while no one owns it.
    pub route: Option<Route>,
}

/// One device's resources.
#[derive(Debug)]
pub(crate) struct Device {
    pub gids: Vec<Gid>,
    pub pds: Slab<()>,
    pub mrs: MrTable,
    pub cqs: Slab<u32>,
    pub qps: Slab<Qp>,
    pub srqs: Slab<Srq>,
    pub ahs: Slab<Ah>,
    pub counters: Counters,
    /// What its QPs' and SRQs' slots hold (see `max_queue_bytes`).
    pub queue_bytes: u64,
}

/// The device engine.
#[derive(Debug)]
pub struct Engine<M> {
    pub(crate) cfg: EngineConfig,
    pub(crate) mem: M,
    pub(crate) devices: Vec<Device>,
    pub(crate) outbox: Vec<CqEvent>,
    pub(crate) events: Vec<AsyncEvent>,
    /// Send queues whose head waits: for a receive at a peer (RNR), or for
    /// room toward another node.
    pub(crate) stalled: Vec<(DeviceId, Qpn)>,
    pub(crate) incarnations: u64,
    pub(crate) remote: RemoteState,
}

impl<M: DmaMemory> Engine<M> {
    /// An engine with no devices over memory `mem`.
    pub fn new(cfg: EngineConfig, mem: M) -> Engine<M> {
        let mut cfg = cfg;
        cfg.max_sge = cfg.max_sge.clamp(1, MAX_SGE as u32);
        Engine {
            cfg,
            mem,
            devices: Vec::new(),
            outbox: Vec::with_capacity(1024),
            events: Vec::new(),
            stalled: Vec::new(),
            incarnations: 0,
            remote: RemoteState::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The memory space.
    pub fn memory(&self) -> &M {
        &self.mem
    }

    /// The memory space, mutably (to add or remove regions; the engine holds
    /// no pointer into it between calls).
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.mem
    }

    /// Adds a device with these GIDs.
    pub fn add_device(&mut self, gids: Vec<Gid>) -> DeviceId {
        let c = &self.cfg;
        self.devices.push(Device {
            gids,
            pds: Slab::new("protection domains", c.max_pd),
            mrs: MrTable::new(c.max_mr),
            cqs: Slab::new("completion queues", c.max_cq),
            // QP numbers 0 and 1 are the SMI and GSI QPs.
            qps: Slab::with_first("queue pairs", c.max_qp, 2),
            srqs: Slab::new("shared receive queues", c.max_srq),
            ahs: Slab::new("address handles", c.max_ah),
            counters: Counters::default(),
            queue_bytes: 0,
        });
        DeviceId(self.devices.len() as u16 - 1)
    }

    /// A device's GIDs.
    pub fn gids(&self, dev: DeviceId) -> Result<&[Gid], EngineError> {
        Ok(&self.dev(dev)?.gids)
    }

    /// Replaces a device's GIDs.
    pub fn set_gids(&mut self, dev: DeviceId, gids: Vec<Gid>) -> Result<(), EngineError> {
        self.dev_mut(dev)?.gids = gids;
        Ok(())
    }

    /// Where `gid` lives: a device of this engine, else the node that owns it.
    pub fn route_of(&self, gid: &Gid) -> Option<Route> {
        if let Some(d) = self.device_of_gid(gid) {
            return Some(Route::Local(d));
        }
        self.remote.carrier.as_ref()?.owner(gid).map(Route::Remote)
    }

    /// The device of this engine that owns `gid`.
    pub fn device_of_gid(&self, gid: &Gid) -> Option<DeviceId> {
        self.devices
            .iter()
            .position(|d| d.gids.contains(gid))
            .map(|i| DeviceId(i as u16))
    }

    pub(crate) fn dev(&self, dev: DeviceId) -> Result<&Device, EngineError> {
        self.devices
            .get(dev.0 as usize)
            .ok_or(EngineError::NoDevice(dev))
    }

    pub(crate) fn dev_mut(&mut self, dev: DeviceId) -> Result<&mut Device, EngineError> {
        self.devices
            .get_mut(dev.0 as usize)
            .ok_or(EngineError::NoDevice(dev))
    }

    /// A device's counters.
    pub fn device_counters(&self, dev: DeviceId) -> Result<&Counters, EngineError> {
        Ok(&self.dev(dev)?.counters)
    }

    /// A QP's counters.
    pub fn qp_counters(&self, dev: DeviceId, qpn: Qpn) -> Result<&Counters, EngineError> {
        Ok(&self.qp(dev, qpn)?.counters)
    }

    /// Zeroes a device's counters and those of its QPs.
    pub fn reset_counters(&mut self, dev: DeviceId) -> Result<(), EngineError> {
        let d = self.dev_mut(dev)?;
        d.counters.reset();
        for q in d.qps.items.iter_mut().flatten() {
            q.counters.reset();
        }
        Ok(())
    }

    /// Forgets every object of a device (the ionic RESET_LIF), with no completions.
    pub fn reset_device(&mut self, dev: DeviceId) -> Result<(), EngineError> {
        // Held messages go back to the carrier's budget; answers to pending
        // requests will be ignored.
        for (d, q) in self.remote.held_qps.clone() {
            if d == dev {
                self.drop_held(d, q);
            }
        }
        let qpns: Vec<Qpn> = self.dev(dev)?.qps.iter().map(|(q, _)| Qpn(q)).collect();
        for q in qpns {
            self.forget_pending(dev, q);
        }
        let d = self.dev_mut(dev)?;
        d.pds.clear();
        d.mrs.clear();
        d.cqs.clear();
        d.qps.clear();
        d.srqs.clear();
        d.ahs.clear();
        d.queue_bytes = 0;
        self.stalled.retain(|(dv, _)| *dv != dev);
        self.remote.held_qps.retain(|(dv, _)| *dv != dev);
        self.remote.held_qps.retain(|(dv, _)| *dv != dev);
        self.outbox.retain(|e| e.device != dev);
        Ok(())
    }

    // ---- protection domains ----

    /// Allocates a protection domain.
    pub fn alloc_pd(&mut self, dev: DeviceId) -> Result<PdId, EngineError> {
        Ok(PdId(self.dev_mut(dev)?.pds.insert(())?))
    }

    /// Allocates a protection domain with a chosen id.
    pub fn alloc_pd_at(&mut self, dev: DeviceId, pd: PdId) -> Result<(), EngineError> {
        self.dev_mut(dev)?.pds.insert_at(pd.0, ())
    }

    /// Frees a protection domain that no MR, QP, SRQ or AH uses.
    pub fn dealloc_pd(&mut self, dev: DeviceId, pd: PdId) -> Result<(), EngineError> {
        let d = self.dev_mut(dev)?;
        d.pds.get(pd.0).ok_or(EngineError::NoPd(pd))?;
        let used = d.qps.iter().any(|(_, q)| q.pd == pd)
            || d.srqs.iter().any(|(_, s)| s.pd == pd)
            || d.ahs.iter().any(|(_, a)| a.pd == pd)
            || d.mrs.iter().any(|m| m.pd == pd);
        if used {
            return Err(EngineError::InUse {
                what: "protection domain",
            });
        }
        d.pds.remove(pd.0);
        Ok(())
    }

    fn check_pd(&self, dev: DeviceId, pd: PdId) -> Result<(), EngineError> {
        self.dev(dev)?
            .pds
            .get(pd.0)
            .map(|_| ())
            .ok_or(EngineError::NoPd(pd))
    }

    // ---- memory regions ----

    /// Registers a memory region. With `spec.key` the front end chooses the
    /// key (its slot must be free); without, the lowest free slot is used.
    /// Returns the key.
    pub fn reg_mr(&mut self, dev: DeviceId, spec: MrSpec) -> Result<u32, EngineError> {
        let MrSpec {
            pd,
            key,
            iova,
            len,
            access,
            runs,
        } = spec;
        self.check_pd(dev, pd)?;
        if !access.is_consistent() {
            return Err(EngineError::BadAccess(access));
        }
        if iova.checked_add(len).is_none() {
            return Err(EngineError::Wraps { addr: iova, len });
        }
        let covered: u64 = runs.iter().map(|r| r.len).sum();
        if covered != len || runs.iter().any(|r| r.dma.checked_add(r.len).is_none()) {
            return Err(EngineError::BadSize {
                what: "page list length",
                value: covered,
                max: len,
            });
        }
        let key = self.pick_key(dev, key)?;
        let mr = Mr {
            key,
            pd,
            access,
            iova,
            len,
            runs,
            valid: true,
            kind: MrKind::Normal,
        };
        self.insert_mr(dev, mr)
    }

    /// Allocates an MR for fast registration, able to bind up to `max_len` bytes
    /// named by as many 4 KiB pages as that takes (one more for an offset).
    /// It has no pages and its key does not work until a REG_MR binds them.
    pub fn alloc_fast_mr(
        &mut self,
        dev: DeviceId,
        pd: PdId,
        key: Option<u32>,
        max_len: u64,
    ) -> Result<u32, EngineError> {
        let pages = u32::try_from((max_len >> 12).saturating_add(1)).unwrap_or(u32::MAX);
        self.alloc_fast_mr_pages(dev, pd, key, max_len, pages)
    }

    /// As [`alloc_fast_mr`](Engine::alloc_fast_mr), with at most `max_pages`
    /// page-list entries per REG_MR: the MR never holds more than that many
    /// runs, so a front end that bounds `max_pages` bounds its memory.
    pub fn alloc_fast_mr_pages(
        &mut self,
        dev: DeviceId,
        pd: PdId,
        key: Option<u32>,
        max_len: u64,
        max_pages: u32,
    ) -> Result<u32, EngineError> {
        self.check_pd(dev, pd)?;
        let key = self.pick_key(dev, key)?;
        let mr = Mr {
            key,
            pd,
            access: Access::NONE,
            iova: 0,
            len: 0,
            // Room for a typical registration now; a REG_MR needing more
            // grows it once, never past `max_pages`.
            runs: Vec::with_capacity((max_pages as usize).min(4096)),
            valid: false,
            kind: MrKind::FastReg { max_len, max_pages },
        };
        self.insert_mr(dev, mr)
    }

    fn pick_key(&self, dev: DeviceId, key: Option<u32>) -> Result<u32, EngineError> {
        let d = self.dev(dev)?;
        match key {
            Some(k) => Ok(k),
            None => d.mrs.free_key().ok_or(EngineError::Limit {
                what: "memory regions",
                max: self.cfg.max_mr,
            }),
        }
    }

    fn insert_mr(&mut self, dev: DeviceId, mr: Mr) -> Result<u32, EngineError> {
        let key = mr.key;
        self.dev_mut(dev)?
            .mrs
            .insert(mr)
            .map_err(|m| EngineError::IdUnavailable {
                what: "memory region",
                id: m.key,
            })?;
        Ok(key)
    }

    /// Deregisters the MR in the slot `key` names.
    pub fn dereg_mr(&mut self, dev: DeviceId, key: u32) -> Result<(), EngineError> {
        self.dev_mut(dev)?
            .mrs
            .remove(key)
            .map(|_| ())
            .ok_or(EngineError::NoMr(key))
    }

    /// The MR whose current key is `key`, if valid.
    pub fn mr(&self, dev: DeviceId, key: u32) -> Result<&Mr, EngineError> {
        self.dev(dev)?
            .mrs
            .get(key)
            .map_err(|_| EngineError::NoMr(key))
    }

    // ---- completion queues ----

    /// Creates a CQ of `depth` entries (the front end keeps the ring).
    pub fn create_cq(
        &mut self,
        dev: DeviceId,
        id: Option<CqId>,
        depth: u32,
    ) -> Result<CqId, EngineError> {
        let d = self.dev_mut(dev)?;
        match id {
            Some(id) => d.cqs.insert_at(id.0, depth).map(|_| id),
            None => d.cqs.insert(depth).map(CqId),
        }
    }

    /// Destroys a CQ that no QP or SRQ uses.
    pub fn destroy_cq(&mut self, dev: DeviceId, cq: CqId) -> Result<(), EngineError> {
        let d = self.dev_mut(dev)?;
        d.cqs.get(cq.0).ok_or(EngineError::NoCq(cq))?;
        if d.qps
            .iter()
            .any(|(_, q)| q.send_cq == cq || q.recv_cq == cq)
        {
            return Err(EngineError::InUse {
                what: "completion queue",
            });
        }
        d.cqs.remove(cq.0);
        self.outbox.retain(|e| !(e.device == dev && e.cq == cq));
        Ok(())
    }

    // ---- shared receive queues ----

    /// Creates an SRQ of `depth` receives with up to `max_sge` SGEs each.
    pub fn create_srq(
        &mut self,
        dev: DeviceId,
        id: Option<SrqId>,
        pd: PdId,
        depth: u32,
        max_sge: u32,
    ) -> Result<SrqId, EngineError> {
        self.check_pd(dev, pd)?;
        self.check_size("SRQ depth", depth, self.cfg.max_qp_wr)?;
        self.check_size("SRQ SGE count", max_sge, self.cfg.max_sge)?;
        let cost = crate::qp::recv_queue_bytes(depth, max_sge);
        self.charge(dev, "a shared receive queue", cost)?;
        let srq = Srq {
            pd,
            rq: RecvQueue::new(depth, max_sge),
            max_sge,
            limit: 0,
        };
        let d = self.dev_mut(dev)?;
        let made = match id {
            Some(id) => d.srqs.insert_at(id.0, srq).map(|_| id),
            None => d.srqs.insert(srq).map(SrqId),
        };
        if made.is_err() {
            d.queue_bytes -= cost;
        }
        made
    }

    /// Takes `cost` bytes from the device's queue budget, or refuses.
    fn charge(&mut self, dev: DeviceId, what: &'static str, cost: u64) -> Result<(), EngineError> {
        let max = self.cfg.max_queue_bytes;
        let d = self.dev_mut(dev)?;
        let left = max.saturating_sub(d.queue_bytes);
        if cost > left {
            return Err(EngineError::OverBudget {
                what,
                need: cost,
                left,
                max,
            });
        }
        d.queue_bytes += cost;
        Ok(())
    }

    /// Sets the SRQ's low watermark: when its receive count drops below
    /// `limit`, one [`AsyncEvent::SrqLimitReached`] fires and the limit disarms
    /// (0 disarms it now).
    pub fn modify_srq(&mut self, dev: DeviceId, srq: SrqId, limit: u32) -> Result<(), EngineError> {
        let s = self.srq_mut(dev, srq)?;
        if limit > s.rq.depth() {
            return Err(EngineError::BadSize {
                what: "SRQ limit",
                value: limit.into(),
                max: s.rq.depth().into(),
            });
        }
        s.limit = limit;
        Ok(())
    }

    /// The SRQ's limit and how many receives it holds.
    pub fn query_srq(&self, dev: DeviceId, srq: SrqId) -> Result<(u32, u32), EngineError> {
        let s = self
            .dev(dev)?
            .srqs
            .get(srq.0)
            .ok_or(EngineError::NoSrq(srq))?;
        Ok((s.limit, s.rq.outstanding()))
    }

    /// Destroys an SRQ that no QP uses.
    pub fn destroy_srq(&mut self, dev: DeviceId, srq: SrqId) -> Result<(), EngineError> {
        let d = self.dev_mut(dev)?;
        d.srqs.get(srq.0).ok_or(EngineError::NoSrq(srq))?;
        if d.qps.iter().any(|(_, q)| q.srq == Some(srq)) {
            return Err(EngineError::InUse {
                what: "shared receive queue",
            });
        }
        if let Some(s) = d.srqs.remove(srq.0) {
            d.queue_bytes -= crate::qp::recv_queue_bytes(s.rq.depth(), s.max_sge);
        }
        Ok(())
    }

    pub(crate) fn srq_mut(&mut self, dev: DeviceId, srq: SrqId) -> Result<&mut Srq, EngineError> {
        self.dev_mut(dev)?
            .srqs
            .get_mut(srq.0)
            .ok_or(EngineError::NoSrq(srq))
    }

    // ---- address handles ----

    /// Creates an address handle for `dgid`. A GID no device owns is allowed:
    /// sends through the AH are delivered by QP number on the sender's device.
    pub fn create_ah(
        &mut self,
        dev: DeviceId,
        id: Option<AhId>,
        pd: PdId,
        dgid: Gid,
    ) -> Result<AhId, EngineError> {
        self.create_ah_from(dev, id, pd, None, dgid)
    }

    /// As [`create_ah`](Engine::create_ah), naming the source GID the
    /// datagrams' GRH carries (one of the device's; a front end learns it
    /// from the guest's header template).
    pub fn create_ah_from(
        &mut self,
        dev: DeviceId,
        id: Option<AhId>,
        pd: PdId,
        sgid: Option<Gid>,
        dgid: Gid,
    ) -> Result<AhId, EngineError> {
        self.check_pd(dev, pd)?;
        let ah = Ah {
            pd,
            dgid,
            sgid,
            route: self.route_of(&dgid),
        };
        let d = self.dev_mut(dev)?;
        match id {
            Some(id) => d.ahs.insert_at(id.0, ah).map(|_| id),
            None => d.ahs.insert(ah).map(AhId),
        }
    }

    /// The destination GID of an AH.
    pub fn query_ah(&self, dev: DeviceId, ah: AhId) -> Result<Gid, EngineError> {
        Ok(self
            .dev(dev)?
            .ahs
            .get(ah.0)
            .ok_or(EngineError::NoAh(ah))?
            .dgid)
    }

    /// Destroys an address handle.
    pub fn destroy_ah(&mut self, dev: DeviceId, ah: AhId) -> Result<(), EngineError> {
        self.dev_mut(dev)?
            .ahs
            .remove(ah.0)
            .map(|_| ())
            .ok_or(EngineError::NoAh(ah))
    }

    // ---- queue pairs ----

    fn check_size(&self, what: &'static str, v: u32, max: u32) -> Result<(), EngineError> {
        if v == 0 || v > max {
            return Err(EngineError::BadSize {
                what,
                value: v.into(),
                max: max.into(),
            });
        }
        Ok(())
    }

    /// Creates a QP in the RESET state and returns its number.
    pub fn create_qp(&mut self, dev: DeviceId, init: &QpInit) -> Result<Qpn, EngineError> {
        self.check_pd(dev, init.pd)?;
        let c = &self.cfg;
        let caps = init.caps;
        self.check_size("send queue depth", caps.max_send_wr, c.max_qp_wr)?;
        self.check_size("send SGE count", caps.max_send_sge, c.max_sge)?;
        if caps.max_inline_data > c.max_inline {
            return Err(EngineError::BadSize {
                what: "inline data size",
                value: caps.max_inline_data.into(),
                max: c.max_inline.into(),
            });
        }
        let d = self.dev(dev)?;
        for cq in [init.send_cq, init.recv_cq] {
            d.cqs.get(cq.0).ok_or(EngineError::NoCq(cq))?;
        }
        let rq = match init.srq {
            Some(srq) => {
                let s = d.srqs.get(srq.0).ok_or(EngineError::NoSrq(srq))?;
                if s.pd != init.pd {
                    return Err(EngineError::InUse {
                        what: "SRQ of another protection domain",
                    });
                }
                RecvQueue::new(1, 0)
            }
            None => {
                self.check_size("receive queue depth", caps.max_recv_wr, c.max_qp_wr)?;
                self.check_size("receive SGE count", caps.max_recv_sge, c.max_sge)?;
                RecvQueue::new(caps.max_recv_wr, caps.max_recv_sge)
            }
        };
        let qpn = match (init.qp_type, init.qpn) {
            (QpType::Gsi, _) => Some(Qpn::GSI),
            (_, Some(q)) if q.0 < 2 => {
                return Err(EngineError::IdUnavailable {
                    what: "queue pair (0 and 1 are reserved)",
                    id: q.0,
                });
            }
            (_, q) => q,
        };
        let cost = caps.engine_bytes(init.srq.is_some());
        self.charge(dev, "a queue pair's queues", cost)?;
        self.incarnations += 1;
        let qp = Qp {
            qpn: Qpn(0),
            incarnation: self.incarnations,
            qp_type: init.qp_type,
            state: QpState::Reset,
            pd: init.pd,
            privileged: false,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            srq: init.srq,
            caps,
            sq_sig_all: init.sq_sig_all,
            access: Access::NONE,
            qkey: (init.qp_type == QpType::Gsi).then_some(GSI_QKEY),
            dest: None,
            path_mtu: 4096,
            rq_psn: 0,
            sq_psn: 0,
            sq: SendQueue::new(caps.max_send_wr, caps.max_send_sge, caps.max_inline_data),
            rq,
            counters: Counters::default(),
            rnr_since: None,
            open_recv: None,
            held: Default::default(),
        };
        let d = self.dev_mut(dev)?;
        let made = match qpn {
            Some(q) => d.qps.insert_at(q.0, qp).map(|()| q),
            None => d.qps.insert(qp).map(Qpn),
        };
        let qpn = match made {
            Ok(q) => q,
            Err(e) => {
                d.queue_bytes -= cost;
                return Err(e);
            }
        };
        d.qps.get_mut(qpn.0).expect("just inserted").qpn = qpn;
        Ok(qpn)
    }

    pub(crate) fn qp(&self, dev: DeviceId, qpn: Qpn) -> Result<&Qp, EngineError> {
        self.dev(dev)?.qps.get(qpn.0).ok_or(EngineError::NoQp(qpn))
    }

    pub(crate) fn qp_mut(&mut self, dev: DeviceId, qpn: Qpn) -> Result<&mut Qp, EngineError> {
        self.dev_mut(dev)?
            .qps
            .get_mut(qpn.0)
            .ok_or(EngineError::NoQp(qpn))
    }

    /// A snapshot of the QP's attributes.
    pub fn query_qp(&self, dev: DeviceId, qpn: Qpn) -> Result<QpInfo, EngineError> {
        Ok(self.qp(dev, qpn)?.info())
    }

    /// Makes QP `qpn` privileged or not: whether its own SGEs (send,
    /// receive, an atomic's result, a READ's destination) may name key 0,
    /// the reserved DMA key, whose address is a bus address checked against
    /// no MR and no PD. A QP starts unprivileged; with
    /// [`EngineConfig::allow_reserved_lkey`] every QP may. (The ionic
    /// device's `IONIC_QPF_PRIVILEGED`, which Linux's driver sets on the QPs
    /// of kernel PDs only.)
    pub fn set_qp_privileged(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        privileged: bool,
    ) -> Result<(), EngineError> {
        self.qp_mut(dev, qpn)?.privileged = privileged;
        Ok(())
    }

    /// Whether `qp`'s own SGEs may name key 0.
    pub(crate) fn dma_key(&self, qp: &Qp) -> bool {
        self.cfg.allow_reserved_lkey || qp.privileged
    }

    /// The QP's incarnation: a number unique to this creation of the QP, so a
    /// later QP with the same number is told apart.
    pub fn qp_incarnation(&self, dev: DeviceId, qpn: Qpn) -> Result<u64, EngineError> {
        Ok(self.qp(dev, qpn)?.incarnation)
    }

    /// Destroys a QP. Its outstanding work is dropped without completions;
    /// what it still has queued for other nodes goes out (a consumer may
    /// destroy a QP right after an unsignaled WRITE, counting on it), but
    /// answers to it are ignored.
    pub fn destroy_qp(&mut self, dev: DeviceId, qpn: Qpn) -> Result<(), EngineError> {
        self.qp(dev, qpn)?;
        self.drop_held(dev, qpn);
        self.forget_pending(dev, qpn);
        let d = self.dev_mut(dev)?;
        let qp = d.qps.remove(qpn.0).ok_or(EngineError::NoQp(qpn))?;
        d.queue_bytes -= qp.caps.engine_bytes(qp.srq.is_some());
        self.stalled.retain(|w| *w != (dev, qpn));
        Ok(())
    }

    /// Changes a QP's attributes and state. On failure nothing changes.
    pub fn modify_qp(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        attr: &QpAttr,
        now: Instant,
    ) -> Result<(), EngineError> {
        let enforce = self.cfg.enforce_qp_state;
        let qp = self.qp(dev, qpn)?;
        let from = qp.state;
        let to = attr.state.unwrap_or(from);
        if enforce && attr.state.is_some() && !from.can_move_to(to) {
            return Err(EngineError::BadTransition { qpn, from, to });
        }
        if let Some(a) = attr.access {
            if !a.is_consistent() {
                return Err(EngineError::BadAccess(a));
            }
        }
        let mut dest = qp.dest;
        if let Some((gid, dqpn)) = attr.dest {
            let route = self.route_of(&gid).ok_or(EngineError::NoRoute(gid))?;
            dest = Some(Dest {
                gid,
                qpn: dqpn,
                route,
            });
        }
        if enforce
            && to == QpState::Rtr
            && from != QpState::Rtr
            && qp.qp_type.is_connected()
            && dest.is_none()
        {
            return Err(EngineError::MissingAttr {
                qpn,
                to,
                attr: "a destination GID and QP number",
            });
        }
        if enforce
            && to == QpState::Init
            && from == QpState::Reset
            && qp.qp_type == QpType::Ud
            && attr.qkey.is_none()
        {
            return Err(EngineError::MissingAttr {
                qpn,
                to,
                attr: "a Q_Key",
            });
        }
        let is_gsi = qp.qp_type == QpType::Gsi;
        let qp = self.qp_mut(dev, qpn)?;
        qp.dest = dest;
        if let Some(a) = attr.access {
            qp.access = a;
        }
        if let Some(k) = attr.qkey {
            // The GSI QP's key is fixed.
            if !is_gsi {
                qp.qkey = Some(k);
            }
        }
        if let Some(m) = attr.path_mtu {
            qp.path_mtu = m;
        }
        if let Some(p) = attr.rq_psn {
            qp.rq_psn = p;
        }
        if let Some(p) = attr.sq_psn {
            qp.sq_psn = p;
        }
        qp.state = to;
        match to {
            QpState::Err if from != QpState::Err => self.flush_qp(dev, qpn),
            QpState::Reset => {
                self.drop_held(dev, qpn);
                self.forget_pending(dev, qpn);
                let qp = self.qp_mut(dev, qpn)?;
                qp.sq.head = qp.sq.tail;
                qp.sq.exec = qp.sq.tail;
                qp.rq.head = qp.rq.tail;
                qp.rnr_since = None;
                qp.dest = None;
                qp.open_recv = None;
                self.stalled.retain(|w| *w != (dev, qpn));
            }
            QpState::Rts => self.progress_sq(dev, qpn, now),
            _ => {}
        }
        Ok(())
    }

    // ---- posting ----

    /// Posts a send request. Refused requests (bad state, full queue, too many
    /// SGEs) change nothing; accepted ones complete exactly once.
    pub fn post_send(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        wr: &SendWr<'_>,
        now: Instant,
    ) -> Result<(), EngineError> {
        let enforce = self.cfg.enforce_qp_state;
        let qp = self.qp_mut(dev, qpn)?;
        if enforce && matches!(qp.state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(EngineError::NotPostable {
                qpn,
                state: qp.state,
                what: "sends",
            });
        }
        if qp.sq.is_full() {
            return Err(EngineError::QueueFull {
                qpn,
                what: "send queue",
                depth: qp.sq.depth(),
            });
        }
        if wr.decode_error.is_none() {
            if wr.flags.inline {
                if wr.inline_data.len() > qp.caps.max_inline_data as usize {
                    return Err(EngineError::InlineTooLong {
                        len: wr.inline_data.len(),
                        max: qp.caps.max_inline_data,
                    });
                }
            } else if wr.sgl.len() > qp.caps.max_send_sge as usize {
                return Err(EngineError::TooManySge {
                    n: wr.sgl.len(),
                    max: qp.caps.max_send_sge,
                });
            }
            if qp.qp_type.is_datagram() && wr.ud.is_none() {
                return Err(EngineError::BadRequest {
                    qpn,
                    why: "a datagram send needs an address handle and a destination QP",
                });
            }
        }
        let idx = qp.sq.index(qp.sq.tail);
        let slot = &mut qp.sq.slots[idx];
        slot.wr_id = wr.wr_id;
        slot.op = wr.op;
        slot.flags = wr.flags;
        slot.ud = wr.ud;
        slot.decode_error = wr.decode_error;
        slot.done = None;
        slot.sent = 0;
        slot.req_id = 0;
        slot.sgl.clear();
        slot.inline.clear();
        if wr.decode_error.is_none() {
            if wr.flags.inline {
                slot.inline.extend_from_slice(wr.inline_data);
            } else {
                slot.sgl.extend_from_slice(wr.sgl);
            }
        }
        qp.sq.tail = qp.sq.tail.wrapping_add(1);
        if qp.state == QpState::Err {
            self.flush_qp(dev, qpn);
        } else {
            self.progress_sq(dev, qpn, now);
        }
        Ok(())
    }

    /// Posts a receive request on a QP's own receive queue.
    pub fn post_recv(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        wr: &RecvWr<'_>,
        now: Instant,
    ) -> Result<(), EngineError> {
        let enforce = self.cfg.enforce_qp_state;
        let qp = self.qp_mut(dev, qpn)?;
        if qp.srq.is_some() {
            return Err(EngineError::BadRequest {
                qpn,
                why: "the QP receives from a shared receive queue; post there",
            });
        }
        if enforce && qp.state == QpState::Reset {
            return Err(EngineError::NotPostable {
                qpn,
                state: qp.state,
                what: "receives",
            });
        }
        if wr.sgl.len() > qp.caps.max_recv_sge as usize {
            return Err(EngineError::TooManySge {
                n: wr.sgl.len(),
                max: qp.caps.max_recv_sge,
            });
        }
        if qp.rq.outstanding() >= qp.rq.depth() {
            return Err(EngineError::QueueFull {
                qpn,
                what: "receive queue",
                depth: qp.rq.depth(),
            });
        }
        qp.rq.push(wr.wr_id, wr.sgl);
        let has_held = !qp.held.is_empty();
        if qp.state == QpState::Err {
            self.flush_qp(dev, qpn);
        } else if has_held {
            self.retry_held(dev, qpn, now, false);
        }
        self.retry_rnr(now);
        Ok(())
    }

    /// Posts a receive request on a shared receive queue.
    pub fn post_srq_recv(
        &mut self,
        dev: DeviceId,
        srq: SrqId,
        wr: &RecvWr<'_>,
        now: Instant,
    ) -> Result<(), EngineError> {
        let s = self.srq_mut(dev, srq)?;
        if wr.sgl.len() > s.max_sge as usize {
            return Err(EngineError::TooManySge {
                n: wr.sgl.len(),
                max: s.max_sge,
            });
        }
        if s.rq.outstanding() >= s.rq.depth() {
            return Err(EngineError::QueueFull {
                qpn: Qpn(srq.0),
                what: "shared receive queue",
                depth: s.rq.depth(),
            });
        }
        s.rq.push(wr.wr_id, wr.sgl);
        for (d, q) in self.remote.held_qps.clone() {
            if d == dev && self.qp(d, q).is_ok_and(|qp| qp.srq == Some(srq)) {
                self.retry_held(d, q, now, false);
            }
        }
        self.retry_rnr(now);
        Ok(())
    }

    // ---- progress and completions ----

    /// Runs timers and retries: send queues stalled on RNR or on room toward
    /// another node go on (or fail, past the RNR timeout), requests to other
    /// nodes past their timeout fail, held messages are retried.
    pub fn poll(&mut self, now: Instant) {
        self.retry_rnr(now);
        self.poll_remote(now);
    }

    /// The next instant [`poll`](Engine::poll) has timed work to do, if any.
    /// Queues stalled for room toward another node want a poll as soon as
    /// room appears, which [`has_timers`](Engine::has_timers) reports.
    pub fn next_deadline(&self) -> Option<Instant> {
        // A queue waiting for room toward a node (not for a receive) is
        // due at once: room appears without any message arriving, when the
        // connection drains into TCP.
        let blocked = self
            .stalled
            .iter()
            .any(|(d, q)| self.qp(*d, *q).is_ok_and(|qp| qp.rnr_since.is_none()));
        if blocked {
            return Some(Instant::now());
        }
        let rnr = self
            .stalled
            .iter()
            .filter_map(|(d, q)| self.qp(*d, *q).ok()?.rnr_since)
            .map(|t| t + self.cfg.rnr_timeout)
            .min();
        [rnr, self.next_remote_deadline()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether any work waits on a timer or a retry.
    pub fn has_timers(&self) -> bool {
        !self.stalled.is_empty() || self.pending_remote() > 0 || self.has_held()
    }

    fn retry_rnr(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.stalled.len() {
            let (d, q) = self.stalled[i];
            self.progress_sq(d, q, now);
            // progress_sq removes the entry when the head stops waiting.
            if self.stalled.get(i) == Some(&(d, q)) {
                i += 1;
            }
        }
    }

    /// Hands every completion produced since the last call to `f`, in order.
    pub fn drain_completions(&mut self, mut f: impl FnMut(&CqEvent)) {
        for e in self.outbox.iter() {
            f(e);
        }
        self.outbox.clear();
    }

    /// Whether completions wait in the outbox.
    pub fn has_completions(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Takes the asynchronous events produced since the last call.
    pub fn take_events(&mut self) -> Vec<AsyncEvent> {
        std::mem::take(&mut self.events)
    }

    /// Completes every outstanding request of the QP with a flush error; what
    /// it still has queued for other nodes is taken back, and answers that
    /// come later are ignored.
    pub(crate) fn flush_qp(&mut self, dev: DeviceId, qpn: Qpn) {
        self.stalled.retain(|w| *w != (dev, qpn));
        self.forget_pending(dev, qpn);
        self.drop_held(dev, qpn);
        if let Ok(inc) = self.qp(dev, qpn).map(|q| q.incarnation) {
            self.cancel_queued(inc);
        }
        let Some(d) = self.devices.get_mut(dev.0 as usize) else {
            return;
        };
        let Some(qp) = d.qps.get_mut(qpn.0) else {
            return;
        };
        qp.rnr_since = None;
        let recv_cq = qp.recv_cq;
        if let Some(open) = qp.open_recv.take() {
            // A message that was arriving in pieces: its receive is flushed.
            qp.counters.inc(Counter::RespCqeFlushError);
            d.counters.inc(Counter::RespCqeFlushError);
            self.outbox.push(CqEvent {
                device: dev,
                cq: recv_cq,
                completion: Completion {
                    wr_id: open.wr_id,
                    status: WcStatus::WrFlushErr,
                    opcode: WcOpcode::Recv,
                    qpn,
                    ..Completion::EMPTY
                },
            });
        }
        // Requests in flight to another node are flushed too.
        let mut c = qp.sq.head;
        while c != qp.sq.exec {
            let i = qp.sq.index(c);
            if qp.sq.slots[i].done.is_none() {
                qp.sq.slots[i].done = Some((WcStatus::WrFlushErr, 0));
            }
            c = c.wrapping_add(1);
        }
        let mut c = qp.sq.exec;
        while c != qp.sq.tail {
            let i = qp.sq.index(c);
            qp.sq.slots[i].done = Some((WcStatus::WrFlushErr, 0));
            c = c.wrapping_add(1);
        }
        qp.sq.exec = qp.sq.tail;
        if qp.srq.is_none() {
            while let Some(i) = qp.rq.head_index() {
                let wr_id = qp.rq.slots[i].wr_id;
                qp.rq.pop();
                qp.counters.inc(Counter::RespCqeFlushError);
                d.counters.inc(Counter::RespCqeFlushError);
                self.outbox.push(CqEvent {
                    device: dev,
                    cq: recv_cq,
                    completion: Completion {
                        wr_id,
                        status: WcStatus::WrFlushErr,
                        opcode: WcOpcode::Recv,
                        qpn,
                        signaled: true,
                        ..Completion::EMPTY
                    },
                });
            }
        }
        self.retire_sq(dev, qpn);
    }

    /// Emits completions for finished send requests, oldest first.
    pub(crate) fn retire_sq(&mut self, dev: DeviceId, qpn: Qpn) {
        let Some(d) = self.devices.get_mut(dev.0 as usize) else {
            return;
        };
        let Some(qp) = d.qps.get_mut(qpn.0) else {
            return;
        };
        while qp.sq.head != qp.sq.exec {
            let i = qp.sq.index(qp.sq.head);
            let slot = &qp.sq.slots[i];
            let Some((status, byte_len)) = slot.done else {
                break;
            };
            let c = match status {
                WcStatus::Success => None,
                WcStatus::WrFlushErr => Some(Counter::ReqCqeFlushError),
                _ => Some(Counter::ReqCqeError),
            };
            for c in [c, crate::datapath::error_counter(status)]
                .into_iter()
                .flatten()
            {
                qp.counters.inc(c);
                d.counters.inc(c);
            }
            self.outbox.push(CqEvent {
                device: dev,
                cq: qp.send_cq,
                completion: Completion {
                    wr_id: slot.wr_id,
                    status,
                    opcode: slot.op.wc_opcode(),
                    qpn,
                    byte_len,
                    imm: None,
                    invalidated: None,
                    src_qpn: Qpn(0),
                    grh: false,
                    grh_ipv4: false,
                    signaled: slot.flags.signaled || qp.sq_sig_all || !status.is_ok(),
                    sq_index: qp.sq.head,
                    solicited: false,
                },
            });
            qp.sq.head = qp.sq.head.wrapping_add(1);
        }
    }
}
