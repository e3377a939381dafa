//! A device, whoever provides it: the handle every verbs object hangs
//! from. It hands each call to its [`Provider`] (a fabric's native device,
//! or another crate's) and knows nothing of how the provider works.

use std::sync::Arc;

use ernic_core::Gid;

use crate::Error;
use crate::cq::Cq;
use crate::provider::Provider;
use crate::qp::Pd;

/// A device: a fabric's, or another provider's (see [`Provider`]).
#[derive(Clone)]
pub struct Device {
    provider: Arc<dyn Provider>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Device({})", self.provider.describe())
    }
}

impl Device {
    /// A device whose calls `provider` carries out.
    pub fn new(provider: Arc<dyn Provider>) -> Device {
        Device { provider }
    }

    /// The device's GID.
    pub fn gid(&self) -> Gid {
        self.provider.gid()
    }

    /// Allocates a protection domain.
    pub fn alloc_pd(&self) -> Result<Pd, Error> {
        let id = self.provider.alloc_pd()?;
        Ok(Pd::new(self.clone(), id))
    }

    /// Creates a completion queue that holds `depth` completions.
    pub fn create_cq(&self, depth: u32) -> Result<Cq, Error> {
        let ops = self.provider.create_cq(depth)?;
        Ok(Cq::new(self.clone(), ops))
    }

    /// The device's counters, by `hw_counters` name.
    pub fn counters(&self) -> ernic_core::Counters {
        self.provider.counters()
    }

    pub(crate) fn provider(&self) -> &dyn Provider {
        &*self.provider
    }
}
