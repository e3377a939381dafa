//! Protection domains, the driver's own as in Linux's `ionic_alloc_pd`,
//! and the privilege a DMA MR gives a PD's QPs.

use ernic_core::Lkey;
use ernic_ionic::fw::{self};

use crate::{Driver, Error, MAX_PDS, Pd};

impl Driver {
    /// Allocates a protection domain: the lowest id not in use, as the
    /// kernel driver does. The device learns it from the first object
    /// created in it.
    pub fn alloc_pd(&mut self) -> Result<Pd, Error> {
        let id = (0..MAX_PDS)
            .find(|i| !self.pds.contains(i))
            .ok_or(Error::NoPd { max: MAX_PDS })?;
        self.pds.insert(id);
        Ok(Pd(id))
    }

    /// Frees a protection domain whose objects are all destroyed; its id
    /// may be handed out again.
    pub fn dealloc_pd(&mut self, pd: Pd) {
        if pd != self.pd {
            self.pds.remove(&pd.0);
            self.privileged.remove(&pd.0);
        }
    }

    /// The driver's own PD, which the calls that name none use. It is
    /// privileged (see [`get_dma_mr`](Driver::get_dma_mr)).
    pub fn pd(&self) -> Pd {
        self.pd
    }

    /// Takes a DMA MR for `pd`, as Linux's `ionic_get_dma_mr` does for
    /// ib_core's kernel PDs: answers the reserved key 0
    /// ([`fw::DMA_LKEY`]), whose SGEs name bus addresses, and makes `pd`
    /// privileged, so the QPs created in it from now on may use it. The
    /// device is told nothing until such a QP is created.
    pub fn get_dma_mr(&mut self, pd: Pd) -> Lkey {
        self.privileged.insert(pd.0);
        Lkey(fw::DMA_LKEY)
    }

    /// Whether `pd`'s QPs are created privileged.
    pub fn is_privileged(&self, pd: Pd) -> bool {
        self.privileged.contains(&pd.0)
    }
}
