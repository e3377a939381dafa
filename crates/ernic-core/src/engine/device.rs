//! Devices: adding one, its GIDs and where a GID lives, its counters,
//! forgetting all its objects at once (the ionic RESET_LIF), and the checks
//! objects of every kind pass at creation (sizes, the queue budget).

use super::{Device, Engine, EngineError, SERVICE_QPN_BASE, Slab};
use crate::counters::Counters;
use crate::memory::DmaMemory;
use crate::mr::MrTable;
use crate::types::{DeviceId, Gid, Qpn, Route};

impl<M: DmaMemory> Engine<M> {
    /// Adds a device with these GIDs.
    pub fn add_device(&mut self, gids: Vec<Gid>) -> DeviceId {
        let c = &self.cfg;
        self.devices.push(Device {
            gids,
            pds: Slab::new("protection domains", c.max_pd),
            mrs: MrTable::new(c.max_mr),
            cqs: Slab::new("completion queues", c.max_cq),
            // QP numbers 0 and 1 are the SMI and GSI QPs.
            qps: Slab::with_first("queue pairs", c.max_qp, 2).with_high_window(SERVICE_QPN_BASE),
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
        for q in d.qps.values_mut() {
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
        self.outbox.retain(|e| e.device != dev);
        Ok(())
    }

    /// Takes `cost` bytes from the device's queue budget, or refuses.
    pub(super) fn charge(
        &mut self,
        dev: DeviceId,
        what: &'static str,
        cost: u64,
    ) -> Result<(), EngineError> {
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

    pub(super) fn check_size(
        &self,
        what: &'static str,
        v: u32,
        max: u32,
    ) -> Result<(), EngineError> {
        if v == 0 || v > max {
            return Err(EngineError::BadSize {
                what,
                value: v.into(),
                max: max.into(),
            });
        }
        Ok(())
    }
}
