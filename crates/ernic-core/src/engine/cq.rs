//! Completion queues: the engine keeps only their depth; the front end keeps
//! the ring and writes the completions it drains.

use super::{Engine, EngineError};
use crate::memory::DmaMemory;
use crate::types::{CqId, DeviceId};

impl<M: DmaMemory> Engine<M> {
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
}
