//! The device endpoint: its data and control rails (each with its rx
//! buffers posted from the start), the tx slots of control messages, the
//! comm table, requests, parked posts and registrations; opened once, all
//! of it preallocated, and closed on drop.

use std::sync::Arc;
use std::time::Duration;

use super::comm::Comm;
use super::error::NetError;
use super::mr::{Holder, MrEntry, PAGE};
use super::post::Op;
use super::request::Req;
use super::{CTL, CTL_RX, CTL_SLOT, CTL_TX, DATA_RX, MAX_COMMS, MAX_CONTROL_RAILS, SENDRECV_CHUNK};
use crate::config::{Config, MAX_RAILS};
use crate::deque::Deque;
use crate::freelist::Freelist;
use crate::idpool::IdPool;
use crate::mr_cache::MrCache;
use crate::provider::{CqEntry, MrReg, Provider, Rail, RemoteAddressing};
use crate::rawbuf::Slots;
use crate::scheduler::Scheduler;
use crate::stats::EndpointStats;

pub(super) struct RailSet {
    pub(super) rail: Box<dyn Rail>,
    pub(super) rx: Slots,
    pub(super) rx_reg: MrReg,
}

/// A device endpoint: its rails, comms, requests and registrations.
pub struct Endpoint {
    pub(super) cfg: Config,
    pub(super) ctls: Vec<RailSet>,
    pub(super) tx: Slots,
    /// The tx slots' registration on each control rail.
    pub(super) tx_regs: Vec<MrReg>,
    pub(super) tx_free: Vec<usize>,
    pub(super) data: Vec<RailSet>,
    pub(super) virt: bool,
    /// `OFI_NCCL_PROTOCOL=SENDRECV`: every message goes as sends through
    /// the rx buffers, in chunks of `chunk` bytes.
    pub(super) sendrecv: bool,
    pub(super) chunk: usize,
    pub(super) sched: Scheduler,
    pub(super) ids: IdPool,
    pub(super) comms: Vec<Option<Comm>>,
    pub(super) reqs: Freelist<Req>,
    pub(super) pending: Deque<Op>,
    /// Registrations on the rails, by index (shared through the cache).
    pub(super) mrs: Vec<Option<MrEntry>>,
    /// The handles given out, one per `reg`.
    pub(super) holders: Vec<Holder>,
    pub(super) free_holders: Vec<u32>,
    pub(super) cache: MrCache<u32>,
    pub(super) cqbuf: Vec<CqEntry>,
    pub(super) generation: u32,
    /// Malformed or stray control messages dropped.
    pub dropped: u64,
    /// Its counters and its comms', read by the stats file's thread.
    pub(super) stats: Arc<EndpointStats>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("rails", &self.data.len())
            .field("reqs", &self.reqs)
            .finish()
    }
}

pub(super) fn open_set(p: &dyn Provider, slot: usize, count: usize) -> Result<RailSet, NetError> {
    let mut rail = p
        .open_rail()
        .map_err(|source| NetError::OpenRail { source })?;
    let rx = Slots::new_for(p, slot, count).map_err(|source| NetError::RegisterBuffers {
        which: "rx",
        source,
    })?;
    let (a, l) = rx.area();
    // SAFETY: `rx` lives in the same RailSet as the registration, and
    // `Endpoint::drop` closes the registration before the slots are freed.
    let rx_reg = unsafe { rail.mr_reg(a, l) }.map_err(|source| NetError::RegisterBuffers {
        which: "rx",
        source,
    })?;
    Ok(RailSet { rail, rx, rx_reg })
}

impl Endpoint {
    /// An endpoint of `rails` data rails (cut to `OFI_NCCL_FORCE_NUM_RAILS`
    /// when set) and one control rail on `provider`.
    pub fn open(provider: &dyn Provider, rails: usize, cfg: Config) -> Result<Endpoint, NetError> {
        Endpoint::open_with(provider, rails, 1, cfg)
    }

    /// An endpoint of `rails` data rails and `control_rails` control rails
    /// (1 to [`MAX_CONTROL_RAILS`]); a comm's control messages take them
    /// in turn, by sequence number. Both ends must have the same counts.
    pub fn open_with(
        provider: &dyn Provider,
        rails: usize,
        control_rails: usize,
        cfg: Config,
    ) -> Result<Endpoint, NetError> {
        let rails = if cfg.force_num_rails > 0 {
            cfg.force_num_rails
        } else {
            rails
        };
        if !(1..=MAX_RAILS).contains(&rails) {
            return Err(NetError::RailCount {
                rails,
                max: MAX_RAILS,
            });
        }
        if !(1..=MAX_CONTROL_RAILS).contains(&control_rails) {
            return Err(NetError::ControlRailCount {
                rails: control_rails,
                max: MAX_CONTROL_RAILS,
            });
        }
        let mut ctls = Vec::with_capacity(control_rails);
        for _ in 0..control_rails {
            ctls.push(open_set(provider, CTL_SLOT, CTL_RX)?);
        }
        let sendrecv = cfg.protocol == crate::config::Protocol::SendRecv;
        let slot = if sendrecv {
            SENDRECV_CHUNK
        } else {
            cfg.eager_max_size.max(64)
        };
        let mut data = Vec::with_capacity(rails);
        for _ in 0..rails {
            data.push(open_set(provider, slot, DATA_RX)?);
        }
        let virt = ctls
            .iter()
            .all(|c| c.rail.remote_addressing() == RemoteAddressing::Virtual)
            && data
                .iter()
                .all(|d| d.rail.remote_addressing() == RemoteAddressing::Virtual);
        let tx = Slots::new_for(provider, CTL_SLOT, CTL_TX).map_err(|source| {
            NetError::RegisterBuffers {
                which: "tx",
                source,
            }
        })?;
        let (a, l) = tx.area();
        let mut tx_regs = Vec::with_capacity(control_rails);
        for c in &mut ctls {
            // SAFETY: `tx` is dropped after `Endpoint::drop` closes these.
            tx_regs.push(unsafe { c.rail.mr_reg(a, l) }.map_err(|source| {
                NetError::RegisterBuffers {
                    which: "tx",
                    source,
                }
            })?);
        }
        let mut ep = Endpoint {
            sched: Scheduler::new(rails, cfg.sched_max_small_msg_size, cfg.min_stripe_size),
            cfg,
            ctls,
            tx,
            tx_regs,
            tx_free: (0..CTL_TX).rev().collect(),
            data,
            virt,
            sendrecv,
            chunk: slot,
            ids: IdPool::new(MAX_COMMS),
            comms: Vec::new(),
            reqs: Freelist::new(1024, 1024, 0, Req::default)
                .map_err(|source| NetError::RequestPool { source })?,
            pending: Deque::with_capacity(1024),
            mrs: Vec::new(),
            holders: Vec::new(),
            free_holders: Vec::new(),
            cache: MrCache::new(PAGE, 64),
            cqbuf: vec![CqEntry::default(); 64],
            generation: 0,
            dropped: 0,
            stats: EndpointStats::register(),
        };
        for c in 0..control_rails {
            for slot in 0..CTL_RX {
                ep.post(Op::Rx {
                    rail: CTL + c,
                    slot,
                });
            }
        }
        for rail in 0..rails {
            for slot in 0..DATA_RX {
                ep.post(Op::Rx { rail, slot });
            }
        }
        Ok(ep)
    }

    /// Data rails.
    pub fn rails(&self) -> usize {
        self.data.len()
    }

    /// This endpoint's counters: its totals (kind `transport`, label
    /// `endpoint`) and a group per comm (kind `comm`); the process's are
    /// [`crate::stats::stats_groups`].
    pub fn stats_groups(&self) -> Vec<ernic_ops::schema::Group> {
        self.stats.groups()
    }

    /// Labels this endpoint's comms with `dev` (the plugin's device number).
    pub fn set_stats_device(&self, dev: u32) {
        self.stats
            .dev
            .store(dev, std::sync::atomic::Ordering::Relaxed);
    }

    /// Posts parked on `EAGAIN`, waiting for progress to retry them.
    pub fn parked(&self) -> usize {
        self.pending.len()
    }

    /// How long a `connect` may stay pending.
    pub fn connect_timeout(&self) -> Duration {
        self.cfg.connect_timeout
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stats.retire();
        for m in self.mrs.drain(..).flatten() {
            for (d, r) in self.data.iter_mut().zip(&m.regs) {
                let _ = d.rail.mr_close(r.handle);
            }
        }
        for (c, r) in self.ctls.iter_mut().zip(&self.tx_regs) {
            let _ = c.rail.mr_close(r.handle);
            let _ = c.rail.mr_close(c.rx_reg.handle);
        }
        for d in &mut self.data {
            let _ = d.rail.mr_close(d.rx_reg.handle);
        }
    }
}
