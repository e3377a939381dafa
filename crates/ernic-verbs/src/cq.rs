//! Completion queues: the handle an application polls, whoever provides
//! the CQ (see [`CqOps`]). The native fabric's ring is `native/cq_ring.rs`.

use std::sync::Arc;
use std::time::Duration;

use ernic_core::{Completion, CqId};

use crate::Error;
use crate::device::Device;
use crate::provider::{CqOps, Notify};

/// A completion queue.
#[derive(Clone)]
pub struct Cq {
    inner: Arc<CqInner>,
}

struct CqInner {
    // Dropped first: the CQ goes before the device's last handle.
    ops: Box<dyn CqOps>,
    _dev: Device,
}

impl std::fmt::Debug for Cq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cq({})", self.inner.ops.id())
    }
}

impl Cq {
    pub(crate) fn new(dev: Device, ops: Box<dyn CqOps>) -> Cq {
        Cq {
            inner: Arc::new(CqInner { ops, _dev: dev }),
        }
    }

    pub(crate) fn id(&self) -> CqId {
        self.inner.ops.id()
    }

    /// Moves up to `out.len()` completions into `out`, oldest first, and
    /// returns how many. Never blocks.
    pub fn poll(&self, out: &mut [Completion]) -> Result<usize, Error> {
        self.inner.ops.poll(out)
    }

    /// Waits up to `timeout` for at least one completion; returns how many
    /// were moved into `out` (0 on timeout).
    pub fn wait(&self, out: &mut [Completion], timeout: Duration) -> Result<usize, Error> {
        self.inner.ops.wait(out, timeout)
    }

    /// Waits up to `timeout` for one completion.
    pub fn wait_one(&self, timeout: Duration) -> Result<Option<Completion>, Error> {
        let mut c = [Completion::EMPTY];
        Ok((self.wait(&mut c, timeout)? == 1).then_some(c[0]))
    }

    /// Number of completions waiting (a device that completes several
    /// requests with one entry counts entries).
    pub fn len(&self) -> usize {
        self.inner.ops.len()
    }

    /// Whether no completion is waiting.
    pub fn is_empty(&self) -> bool {
        self.inner.ops.is_empty()
    }

    /// The CQ's depth.
    pub fn depth(&self) -> u32 {
        self.inner.ops.depth()
    }

    /// Sets what the CQ calls when it is armed and a completion it was
    /// armed for comes (a completion channel's wake-up); once per CQ.
    pub fn set_notify(&self, f: Notify) -> Result<(), Error> {
        self.inner.ops.set_notify(f)
    }

    /// Arms the CQ (`ibv_req_notify_cq`); see [`CqOps::arm`].
    pub fn arm(&self, solicited_only: bool) -> Result<(), Error> {
        self.inner.ops.arm(solicited_only)
    }
}
