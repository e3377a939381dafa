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
//!
//! One file per thing: [`config`] (limits), [`error`], [`event`] (async
//! events), [`footprint`], [`slab`] (id tables), one per object kind
//! ([`device`], [`pd`], [`mr`], [`cq`], [`srq`], [`ah`], [`qp`]),
//! [`post`] (posting work), [`timers`], [`completion`] (the outbox) and
//! [`flush`]. What runs on the queues is the data path ([`crate::datapath`]);
//! requests to other nodes are [`crate::remote`].

mod ah;
mod completion;
mod config;
mod cq;
mod device;
mod error;
mod event;
mod flush;
mod footprint;
mod mr;
mod pd;
mod post;
mod qp;
mod slab;
mod srq;
mod timers;

#[cfg(test)]
mod inject_tests;

pub(crate) use ah::Ah;
pub use config::{EngineConfig, GSI_QKEY, MAX_SGE, SERVICE_QPN_BASE};
pub use error::EngineError;
pub use event::AsyncEvent;
pub use footprint::Footprint;
pub use mr::MrSpec;
pub(crate) use slab::Slab;
pub(crate) use srq::Srq;

use std::sync::Arc;

use crate::counters::Counters;
use crate::inject::Injector;
use crate::memory::DmaMemory;
use crate::mr::MrTable;
use crate::qp::Qp;
use crate::remote::state::RemoteState;
use crate::types::{DeviceId, Gid, Qpn};
use crate::wr::CqEvent;

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
    /// Faults armed on the engine's events (`send_err`, `recv_err`).
    pub(crate) injector: Option<Arc<Injector>>,
}

impl<M: DmaMemory> Engine<M> {
    /// An engine with no devices over memory `mem`.
    pub fn new(cfg: EngineConfig, mem: M) -> Engine<M> {
        let mut cfg = cfg;
        cfg.max_sge = cfg.max_sge.clamp(1, MAX_SGE as u32);
        let injector = cfg.injector.clone();
        Engine {
            cfg,
            mem,
            devices: Vec::new(),
            outbox: Vec::with_capacity(1024),
            events: Vec::new(),
            stalled: Vec::new(),
            incarnations: 0,
            remote: RemoteState::default(),
            injector,
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

    /// Arms `injector`'s faults on this engine's events: `send_err` counts
    /// every send WQE posted, `recv_err` every receive a message consumes.
    pub fn set_injector(&mut self, injector: Option<Arc<Injector>>) {
        self.injector = injector;
    }

    /// The injector armed on this engine, if any.
    pub fn injector(&self) -> Option<&Arc<Injector>> {
        self.injector.as_ref()
    }

    /// Counts one `event` against the armed faults (one load when none).
    #[inline]
    pub(crate) fn inject(&self, event: crate::inject::Event) -> Option<crate::inject::Fired> {
        self.injector.as_ref().and_then(|i| i.check(event))
    }

    /// The memory space, mutably (to add or remove regions; the engine holds
    /// no pointer into it between calls).
    pub fn memory_mut(&mut self) -> &mut M {
        &mut self.mem
    }
}
