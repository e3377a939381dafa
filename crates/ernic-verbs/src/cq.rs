//! Completion queues: a ring the fabric fills and the application polls.
//!
//! Polling takes only the CQ's own lock, never the fabric's, so a thread
//! spinning on `poll` does not slow the threads posting work.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ernic_core::{Completion, CqId};

use crate::Error;
use crate::fabric::Device;

pub(crate) struct CqRing {
    ring: Mutex<VecDeque<Completion>>,
    cond: Condvar,
    depth: u32,
    overrun: AtomicBool,
    waiters: AtomicU32,
    /// Completions in the ring, readable without the lock so an empty poll
    /// never contends with the thread that fills the ring.
    len: AtomicUsize,
}

impl CqRing {
    pub fn new(depth: u32) -> CqRing {
        CqRing {
            ring: Mutex::new(VecDeque::with_capacity(depth as usize)),
            cond: Condvar::new(),
            depth,
            overrun: AtomicBool::new(false),
            waiters: AtomicU32::new(0),
            len: AtomicUsize::new(0),
        }
    }

    /// Adds a completion; a full ring overruns and drops it.
    pub fn push(&self, c: Completion) {
        let mut r = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() >= self.depth as usize {
            self.overrun.store(true, Ordering::Relaxed);
            return;
        }
        r.push_back(c);
        self.len.store(r.len(), Ordering::Release);
        drop(r);
        if self.waiters.load(Ordering::Acquire) > 0 {
            self.cond.notify_all();
        }
    }

    fn pop_into(&self, out: &mut [Completion]) -> Result<usize, Error> {
        if self.overrun.load(Ordering::Relaxed) {
            return Err(Error::CqOverrun { depth: self.depth });
        }
        if self.len.load(Ordering::Acquire) == 0 {
            return Ok(0);
        }
        let mut r = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let n = out.len().min(r.len());
        for (slot, c) in out.iter_mut().zip(r.drain(..n)) {
            *slot = c;
        }
        self.len.store(r.len(), Ordering::Release);
        Ok(n)
    }
}

/// A completion queue.
#[derive(Clone)]
pub struct Cq {
    pub(crate) inner: Arc<CqInner>,
}

pub(crate) struct CqInner {
    pub dev: Device,
    pub id: CqId,
    pub ring: Arc<CqRing>,
}

impl Drop for CqInner {
    fn drop(&mut self) {
        let (dev, id) = (self.dev.id(), self.id);
        self.dev.shared().with(|st, _| {
            let _ = st.engine.destroy_cq(dev, id);
            if let Some(Some(_)) = st.cqs[dev.0 as usize].get(id.0 as usize) {
                st.cqs[dev.0 as usize][id.0 as usize] = None;
            }
        });
    }
}

impl std::fmt::Debug for Cq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cq({})", self.inner.id)
    }
}

impl Cq {
    pub(crate) fn new(dev: Device, id: CqId, ring: Arc<CqRing>) -> Cq {
        Cq {
            inner: Arc::new(CqInner { dev, id, ring }),
        }
    }

    pub(crate) fn id(&self) -> CqId {
        self.inner.id
    }

    /// Moves up to `out.len()` completions into `out`, oldest first, and
    /// returns how many. Never blocks.
    pub fn poll(&self, out: &mut [Completion]) -> Result<usize, Error> {
        let n = self.inner.ring.pop_into(out)?;
        if n == 0 && self.inner.dev.shared().timers.load(Ordering::Relaxed) {
            self.inner.dev.shared().run_timers();
            return self.inner.ring.pop_into(out);
        }
        Ok(n)
    }

    /// Waits up to `timeout` for at least one completion; returns how many
    /// were moved into `out` (0 on timeout).
    pub fn wait(&self, out: &mut [Completion], timeout: Duration) -> Result<usize, Error> {
        let deadline = Instant::now() + timeout;
        let ring = &self.inner.ring;
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
            if self.inner.dev.shared().timers.load(Ordering::Relaxed) {
                slice = slice.min(Duration::from_millis(5));
            }
            ring.waiters.fetch_add(1, Ordering::AcqRel);
            let guard = ring.ring.lock().unwrap_or_else(|p| p.into_inner());
            if guard.is_empty() && !ring.overrun.load(Ordering::Relaxed) {
                let _ = ring.cond.wait_timeout(guard, slice);
            }
            ring.waiters.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Waits up to `timeout` for one completion.
    pub fn wait_one(&self, timeout: Duration) -> Result<Option<Completion>, Error> {
        let mut c = [Completion::EMPTY];
        Ok((self.wait(&mut c, timeout)? == 1).then_some(c[0]))
    }

    /// Number of completions waiting.
    pub fn len(&self) -> usize {
        self.inner
            .ring
            .ring
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Whether no completion is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CQ's depth.
    pub fn depth(&self) -> u32 {
        self.inner.ring.depth
    }
}
