//! Protection domains: allocating, freeing, and the check every object that
//! names a PD passes.

use super::{Engine, EngineError};
use crate::memory::DmaMemory;
use crate::types::{DeviceId, PdId};

impl<M: DmaMemory> Engine<M> {
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

    pub(super) fn check_pd(&self, dev: DeviceId, pd: PdId) -> Result<(), EngineError> {
        self.dev(dev)?
            .pds
            .get(pd.0)
            .map(|_| ())
            .ok_or(EngineError::NoPd(pd))
    }
}
