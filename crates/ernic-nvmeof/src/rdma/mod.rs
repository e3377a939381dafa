//! The NVMe/RDMA transport of the target: an RDMA consumer of the fabric,
//! as Linux's nvmet-rdma and SPDK's RDMA transport are. The target is a
//! device of its own with its own GID; its GSI QP answers rdma_cm
//! connection requests through [`ernic_cm`]'s connection manager, each
//! accepted connection is one NVMe queue on an RC QP numbered from
//! [`QPN_BASE`], and data moves by RDMA READ and WRITE against the keys
//! the host names, so every key, bound and PD check of the engine applies
//! to the host's memory as to any other peer's.
//!
//! One thread runs a target: [`RdmaTarget::poll`] takes what arrived on
//! the GSI QP and on every queue, runs the CM's timers and the
//! controller's (keep-alive), and sends what they produced.

mod accept;
mod queue;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ernic_cm::conn::{Cm, CmConfig, ConnId, Event};
use ernic_verbs::{Device, Gid, Pd, Qp, QpAttr, QpState, Qpn};

use crate::controller::{Action, Target};

pub use ernic_verbs::GsiStats;
pub use queue::{CAPSULE_LEN, IN_CAPSULE};

use ernic_verbs::Gsi;
use queue::Queue;

/// The first QP number of the target's queues (the seed's `0xc0xxxx`, the
/// engine's window for a device's own services): far above the numbers a
/// guest's or a host program's device hands out, so they never collide.
pub const QPN_BASE: u32 = ernic_core::SERVICE_QPN_BASE;
/// NVMe/RDMA's well-known port (`NVME_RDMA_IP_PORT`).
pub const DEFAULT_PORT: u16 = ernic_cm::private_data::nvme::IP_PORT;
/// Queues one target serves at once, over all controllers (each
/// controller's admin queue and I/O queues). A connection request past it
/// is rejected for want of resources.
pub const MAX_QUEUES: usize = 1024;

/// Takes an RC QP in INIT through RTR and RTS, talking to QP `qpn` at
/// `gid` whose first PSN is `rq_psn`; ours is `sq_psn`. What rdma_cm does
/// with the numbers a REQ and a REP carry, on either side.
pub(crate) fn connect_rc(
    qp: &Qp,
    gid: Gid,
    qpn: Qpn,
    rq_psn: u32,
    sq_psn: u32,
) -> Result<(), ernic_verbs::Error> {
    qp.modify(&QpAttr {
        state: Some(QpState::Rtr),
        dest: Some((gid, qpn)),
        rq_psn: Some(rq_psn),
        ..QpAttr::default()
    })?;
    qp.modify(&QpAttr {
        state: Some(QpState::Rts),
        sq_psn: Some(sq_psn),
        ..QpAttr::default()
    })
}

/// Why the transport failed.
#[derive(Debug, thiserror::Error)]
pub enum RdmaError {
    /// A verbs call failed.
    #[error("a verbs call failed")]
    Verbs(#[from] ernic_verbs::Error),
    /// The peer broke NVMe/RDMA's rules; the queue is dropped.
    #[error("NVMe/RDMA protocol: {what}")]
    Protocol {
        /// What it did.
        what: &'static str,
    },
}

/// How the target listens.
#[derive(Clone, Copy, Debug)]
pub struct ListenConfig {
    /// The rdma_cm port (NVMe/RDMA's is 4420).
    pub port: u16,
    /// The largest data transfer of one command (the controller's MDTS).
    pub max_xfer: usize,
    /// Entries a queue may have (the host's `hsqsize + 1`).
    pub max_entries: u32,
}

/// What the transport counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Connection requests rejected.
    pub rejected: u64,
    /// Queues torn down (a disconnect, a failed QP, a lapsed controller).
    pub torn_down: u64,
    /// Commands taken.
    pub commands: u64,
    /// The GSI QP's counts.
    pub gsi: GsiStats,
}

/// An NVMe-oF target on one device of a fabric.
pub struct RdmaTarget {
    dev: Device,
    pd: Pd,
    gsi: Gsi,
    cm: Cm,
    target: Target,
    cfg: ListenConfig,
    queues: BTreeMap<ConnId, Queue>,
    /// QP numbers in use, as offsets from [`QPN_BASE`].
    qpns: BTreeMap<u32, ConnId>,
    actions: Vec<Action>,
    stats: TransportStats,
}

impl RdmaTarget {
    /// A target serving `target`'s subsystems on `dev`, listening as `cfg`
    /// says.
    pub fn new(dev: Device, target: Target, cfg: ListenConfig) -> Result<RdmaTarget, RdmaError> {
        let pd = dev.alloc_pd()?;
        let gsi = Gsi::new(&dev, &pd)?;
        let gid = dev.gid();
        let cm = Cm::new(CmConfig {
            local_gid: gid.0,
            ca_guid: u64::from_be_bytes(gid.0[8..16].try_into().unwrap_or_default()),
            max_conns: MAX_QUEUES,
            max_outputs: 256,
            max_events: 256,
            packet_life_time: 14,
            ack_delay: 14,
            seed: u64::from_be_bytes(gid.0[..8].try_into().unwrap_or_default()) ^ 0x6e76_6d65,
        });
        Ok(RdmaTarget {
            dev,
            pd,
            gsi,
            cm,
            target,
            cfg,
            queues: BTreeMap::new(),
            qpns: BTreeMap::new(),
            actions: Vec::new(),
            stats: TransportStats::default(),
        })
    }

    /// The controller behind the transport.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Queues connected now.
    pub fn queues(&self) -> usize {
        self.queues.len()
    }

    /// What the transport counted.
    pub fn stats(&self) -> TransportStats {
        TransportStats {
            gsi: self.gsi.stats(),
            ..self.stats
        }
    }

    /// One pass: MADs in, CM events, every queue's completions, timers,
    /// MADs out. Answers whether anything happened.
    pub fn poll(&mut self, now: Instant) -> Result<bool, RdmaError> {
        let cm = &mut self.cm;
        let mut worked = self.gsi.poll(|gid, qpn, mad| {
            cm.on_mad(
                now,
                ernic_cm::conn::Peer {
                    gid: gid.0,
                    qpn: qpn.0,
                },
                mad,
            )
        })? > 0;
        self.cm.poll(now);
        while let Some(ev) = self.cm.pop_event() {
            worked = true;
            self.event(now, ev)?;
        }
        let mut dead = Vec::new();
        for (&id, q) in self.queues.iter_mut() {
            let before = q.commands;
            match q.poll(&mut self.target, now) {
                Ok(0) => {}
                Ok(_) => worked = true,
                Err(_) => q.kill(),
            }
            if before == 0 && q.commands > 0 {
                // Data before the RTU: the connection is up
                // (IB_EVENT_COMM_EST).
                let _ = self.cm.established(now, id);
            }
            self.stats.commands += q.commands - before;
            if q.dead {
                dead.push(id);
            }
        }
        for id in dead {
            let _ = self.cm.disconnect(now, id, &[]);
            self.drop_queue(id);
        }
        self.controller_actions(now)?;
        while let Some(out) = self.cm.pop_output() {
            worked = true;
            self.gsi.send(Gid(out.to.gid), Qpn(out.to.qpn), &out.mad)?;
        }
        // A few relaxed stores, so a stats writer sees this poll's counts.
        self.target.stats().publish(&self.stats(), &self.cm.stats());
        Ok(worked)
    }

    fn controller_actions(&mut self, now: Instant) -> Result<(), RdmaError> {
        self.actions.clear();
        self.target.poll(now, &mut self.actions);
        for i in 0..self.actions.len() {
            match self.actions[i] {
                Action::Complete { cntlid, qid, cqe } => {
                    let q = self
                        .queues
                        .values_mut()
                        .find(|q| !q.dead && q.state.binding() == Some((cntlid, qid)));
                    if let Some(q) = q {
                        if q.release(&cqe).is_err() {
                            q.kill();
                        }
                    }
                }
                Action::Teardown { cntlid } => {
                    let ids: Vec<ConnId> = self
                        .queues
                        .iter()
                        .filter(|(_, q)| q.state.binding().map(|b| b.0) == Some(cntlid))
                        .map(|(&id, _)| id)
                        .collect();
                    for id in ids {
                        let _ = self.cm.disconnect(now, id, &[]);
                        self.drop_queue(id);
                    }
                }
            }
        }
        Ok(())
    }

    fn event(&mut self, now: Instant, ev: Event) -> Result<(), RdmaError> {
        match ev {
            Event::Request { id, from, req } => self.request(now, id, from, &req),
            Event::DisconnectRequested { id }
            | Event::Disconnected { id }
            | Event::TimedOut { id }
            | Event::Rejected { id, .. } => {
                self.drop_queue(id);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Forgets a queue: the controller hears it is gone, its QP is stopped
    /// and its number freed.
    fn drop_queue(&mut self, id: ConnId) {
        if let Some(mut q) = self.queues.remove(&id) {
            q.kill();
            self.target.queue_gone(&q.state);
            self.qpns.retain(|_, c| *c != id);
            self.stats.torn_down += 1;
        }
    }

    /// Runs the target on this thread until `stop` is set: spins while
    /// there is work, and naps briefly when there has been none for a
    /// while.
    pub fn serve(&mut self, stop: &AtomicBool) -> Result<(), RdmaError> {
        const SPIN: Duration = Duration::from_millis(2);
        let mut last = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if self.poll(now)? {
                last = now;
            } else if now.duration_since(last) > SPIN {
                std::thread::sleep(Duration::from_micros(50));
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }
}
