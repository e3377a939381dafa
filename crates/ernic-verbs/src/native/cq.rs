//! The native provider's CQ: its ring is filled under the fabric lock and
//! polled without it; a poll that finds nothing does the device's work
//! itself (applies what peers sent, runs due timers) and looks again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ernic_core::{Completion, CqId, DeviceId};

use crate::Error;
use crate::provider::{CqOps, Notify};

use super::cq_ring::CqRing;
use super::fabric::Shared;

/// The engine's CQ: a ring its completions are handed to under the fabric
/// lock, polled without it.
pub(crate) struct NativeCq {
    pub shared: Arc<Shared>,
    pub dev: DeviceId,
    pub id: CqId,
    pub ring: Arc<CqRing>,
}

impl Drop for NativeCq {
    fn drop(&mut self) {
        let (dev, id) = (self.dev, self.id);
        self.shared.with(|st, _| {
            let _ = st.engine.destroy_cq(dev, id);
            st.cqs.remove(dev, id);
        });
    }
}

impl CqOps for NativeCq {
    fn id(&self) -> CqId {
        self.id
    }

    fn poll(&self, out: &mut [Completion]) -> Result<usize, Error> {
        let n = self.ring.pop_into(out)?;
        if n == 0 {
            self.shared.progress(Instant::now());
            if self.shared.has_timers() {
                self.shared.run_timers();
            }
            return self.ring.pop_into(out);
        }
        Ok(n)
    }

    fn wait(&self, out: &mut [Completion], timeout: Duration) -> Result<usize, Error> {
        let deadline = Instant::now() + timeout;
        let ring = &self.ring;
        loop {
            let n = self.poll(out)?;
            if n > 0 || out.is_empty() {
                return Ok(n);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(0);
            }
            // Sleep until a completion arrives, the deadline, or (when the
            // fabric has timers) a short tick to run them.
            let mut slice = deadline - now;
            if self.shared.has_timers() {
                slice = slice.min(Duration::from_millis(5));
            }
            ring.sleep(slice);
        }
    }

    fn len(&self) -> usize {
        self.ring.len()
    }

    fn depth(&self) -> u32 {
        self.ring.depth()
    }

    fn set_notify(&self, f: Notify) -> Result<(), Error> {
        if self.ring.set_notify(f) {
            Ok(())
        } else {
            Err(Error::Unsupported("a second notifier on one CQ"))
        }
    }

    fn arm(&self, solicited_only: bool) -> Result<(), Error> {
        self.ring.arm(solicited_only)
    }
}
