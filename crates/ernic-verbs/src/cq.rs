//! Completion queues: a ring the fabric fills and the application polls.
//!
//! Polling never takes the fabric's lock, and never a lock the producer
//! takes, so a thread spinning on `poll` does not slow the threads posting
//! work.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ernic_core::{Completion, CqId, DeviceId};

use crate::Error;
use crate::fabric::{Device, Shared};
use crate::provider::CqOps;

/// The ring of one CQ.
///
/// One producer at a time (the thread holding the fabric lock, which calls
/// [`CqRing::push`] from the fabric's completion hand-off) and any number of
/// consumers, serialised among themselves by `consumer`. Producer and
/// consumers share no lock: the producer publishes entries by advancing
/// `tail` (release), consumers free slots by advancing `head` (release).
pub(crate) struct CqRing {
    /// Left uninitialised until the producer writes a slot: a deep CQ
    /// costs no page until it fills, and a slot is read only after it was
    /// written (see the safety argument of `Sync`).
    slots: Box<[UnsafeCell<MaybeUninit<Completion>>]>,
    /// Next entry to consume (a running count; the slot is `head % depth`).
    head: AtomicUsize,
    /// Next entry to produce.
    tail: AtomicUsize,
    consumer: Mutex<()>,
    /// For blocking waits: sleepers wait on `cond` holding `sleep`.
    sleep: Mutex<()>,
    cond: Condvar,
    depth: u32,
    overrun: AtomicBool,
    waiters: AtomicU32,
}

// SAFETY: the slots are reached only under the protocol above: a slot is
// written by the single producer only while it is outside `head..tail`, and
// read by a consumer (holding `consumer`) only inside it after the release
// store of `tail` that published it, so no slot is ever read and written at
// once, and none is read before it was first written (every slot inside
// `head..tail` was written by the push that moved `tail` past it). All
// other fields are Sync.
unsafe impl Sync for CqRing {}

impl CqRing {
    pub fn new(depth: u32) -> CqRing {
        CqRing {
            slots: (0..depth.max(1))
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            consumer: Mutex::new(()),
            sleep: Mutex::new(()),
            cond: Condvar::new(),
            depth,
            overrun: AtomicBool::new(false),
            waiters: AtomicU32::new(0),
        }
    }

    fn slot(&self, n: usize) -> *mut MaybeUninit<Completion> {
        self.slots[n % self.slots.len()].get()
    }

    /// Adds a completion; a full ring overruns and drops it.
    ///
    /// # Safety
    ///
    /// The caller holds the fabric lock: there is one producer at a time.
    pub unsafe fn push(&self, c: Completion) {
        let t = self.tail.load(Ordering::Relaxed);
        let h = self.head.load(Ordering::Acquire);
        if t - h >= self.depth as usize {
            self.overrun.store(true, Ordering::Relaxed);
            return;
        }
        // SAFETY: slot `t` is outside `h..t`, so no consumer reads it (the
        // acquire load of `head` orders this write after their reads), and
        // the caller guarantees no other producer writes it.
        unsafe { (*self.slot(t)).write(c) };
        self.tail.store(t + 1, Ordering::Release);
        if self.waiters.load(Ordering::Acquire) > 0 {
            let _g = self.sleep.lock().unwrap_or_else(|p| p.into_inner());
            self.cond.notify_all();
        }
    }

    fn len(&self) -> usize {
        self.tail.load(Ordering::Acquire) - self.head.load(Ordering::Acquire)
    }

    fn pop_into(&self, out: &mut [Completion]) -> Result<usize, Error> {
        if self.overrun.load(Ordering::Relaxed) {
            return Err(Error::CqOverrun { depth: self.depth });
        }
        if self.len() == 0 {
            return Ok(0);
        }
        let _g = self.consumer.lock().unwrap_or_else(|p| p.into_inner());
        let h = self.head.load(Ordering::Relaxed);
        let t = self.tail.load(Ordering::Acquire);
        let n = out.len().min(t - h);
        for (i, slot) in out[..n].iter_mut().enumerate() {
            // SAFETY: entry `h + i` is inside `h..t`, published by the release
            // store of `tail` we acquired; the producer does not write it
            // until `head` moves past it, which only we (holding `consumer`) do;
            // the push that published it wrote it, so it is initialised.
            *slot = unsafe { (*self.slot(h + i)).assume_init_read() };
        }
        self.head.store(h + n, Ordering::Release);
        Ok(n)
    }
}

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
            if let Some(Some(_)) = st.cqs[dev.0 as usize].get(id.0 as usize) {
                st.cqs[dev.0 as usize][id.0 as usize] = None;
            }
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
            self.shared.progress();
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
            ring.waiters.fetch_add(1, Ordering::AcqRel);
            let guard = ring.sleep.lock().unwrap_or_else(|p| p.into_inner());
            if ring.len() == 0 && !ring.overrun.load(Ordering::Relaxed) {
                let _ = ring.cond.wait_timeout(guard, slice);
            }
            ring.waiters.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn len(&self) -> usize {
        self.ring.len()
    }

    fn depth(&self) -> u32 {
        self.ring.depth
    }
}

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
}
