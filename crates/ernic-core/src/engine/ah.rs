//! Address handles ([`Ah`]): a destination GID, the source GID its datagrams
//! carry, and where the destination lived when the handle was made.

use super::{Engine, EngineError};
use crate::memory::DmaMemory;
use crate::types::{AhId, DeviceId, Gid, PdId, Route};

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

impl<M: DmaMemory> Engine<M> {
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
}
