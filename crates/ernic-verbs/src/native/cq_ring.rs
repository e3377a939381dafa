//! The native CQ ring: a ring the fabric fills and the application polls,
//! and [`CqRings`], the fabric's table of them and their one producer.
//!
//! Polling never takes the fabric's lock, and never a lock the producer
//! takes, so a thread spinning on `poll` does not slow the threads posting
//! work. A ring has one producer by construction, not by a caller's
//! promise: only [`CqRings::push`] writes a ring, it takes `&mut CqRings`,
//! and a ring enters a table by value, so it is in one table only. The
//! fabric's table lives in the state behind its lock: `&mut` to it is the
//! proof that the fabric lock is held.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use ernic_core::{Completion, CqId, DeviceId, WcStatus};

use crate::Error;
use crate::provider::Notify;

/// The ring of one CQ.
///
/// One producer ([`CqRings::push`], through the one table that holds the
/// ring, under the fabric lock) and any number of consumers, serialised among themselves by `consumer`. Producer and
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
    /// What the CQ is armed for (`ibv_req_notify_cq`): [`UNARMED`],
    /// [`ARMED_NEXT`] or [`ARMED_SOLICITED`]; a completion it is armed for
    /// disarms it and calls `notify`, once.
    armed: AtomicU8,
    notify: OnceLock<Notify>,
}

const UNARMED: u8 = 0;
const ARMED_NEXT: u8 = 1;
const ARMED_SOLICITED: u8 = 2;

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
            armed: AtomicU8::new(UNARMED),
            notify: OnceLock::new(),
        }
    }

    /// Sets what arming calls; answers false if it was set already.
    pub fn set_notify(&self, f: Notify) -> bool {
        self.notify.set(f).is_ok()
    }

    /// Arms the CQ for its next completion (`solicited_only`: the next
    /// solicited receive or failed request). Entries already waiting fire
    /// it at once, so a program that arms and then polls never sleeps on
    /// a completion that came between its last poll and the arming.
    pub fn arm(&self, solicited_only: bool) -> Result<(), Error> {
        let Some(notify) = self.notify.get() else {
            return Err(Error::Unsupported("this CQ has no completion channel"));
        };
        let how = if solicited_only {
            ARMED_SOLICITED
        } else {
            ARMED_NEXT
        };
        self.armed.store(how, Ordering::SeqCst);
        if self.len() > 0 && self.armed.swap(UNARMED, Ordering::SeqCst) != UNARMED {
            notify();
        }
        Ok(())
    }

    /// Fires the arming if `c` is a completion it waits for.
    fn fire(&self, c: &Completion) {
        let how = self.armed.load(Ordering::SeqCst);
        let wanted = match how {
            ARMED_NEXT => true,
            ARMED_SOLICITED => c.solicited || c.status != WcStatus::Success,
            _ => false,
        };
        if wanted
            && self.armed.swap(UNARMED, Ordering::SeqCst) != UNARMED
            && let Some(notify) = self.notify.get()
        {
            notify();
        }
    }

    fn slot(&self, n: usize) -> *mut MaybeUninit<Completion> {
        self.slots[n % self.slots.len()].get()
    }

    /// Adds a completion; a full ring overruns and drops it. Called only by
    /// [`CqRings::push`], the ring's one producer.
    fn produce(&self, c: Completion) {
        let t = self.tail.load(Ordering::Relaxed);
        let h = self.head.load(Ordering::Acquire);
        if t - h >= self.depth as usize {
            self.overrun.store(true, Ordering::Relaxed);
            // The sleeper's next poll finds the overrun.
            if self.armed.swap(UNARMED, Ordering::SeqCst) != UNARMED
                && let Some(notify) = self.notify.get()
            {
                notify();
            }
            return;
        }
        // SAFETY: slot `t` is outside `h..t`, so no consumer reads it (the
        // acquire load of `head` orders this write after their reads), and
        // no other producer writes it: this runs only from `CqRings::push`
        // under `&mut` to the one table that holds this ring (see the
        // module's note).
        unsafe { (*self.slot(t)).write(c) };
        self.tail.store(t + 1, Ordering::Release);
        if self.armed.load(Ordering::Relaxed) != UNARMED {
            self.fire(&c);
        }
        if self.waiters.load(Ordering::Acquire) > 0 {
            let _g = self.sleep.lock().unwrap_or_else(|p| p.into_inner());
            self.cond.notify_all();
        }
    }

    /// Entries waiting.
    pub fn len(&self) -> usize {
        self.tail.load(Ordering::Acquire) - self.head.load(Ordering::Acquire)
    }

    /// Entries the ring holds.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Sleeps up to `slice` unless an entry (or an overrun) waits; a push
    /// wakes it.
    pub fn sleep(&self, slice: Duration) {
        self.waiters.fetch_add(1, Ordering::AcqRel);
        let guard = self.sleep.lock().unwrap_or_else(|p| p.into_inner());
        if self.len() == 0 && !self.overrun.load(Ordering::Relaxed) {
            let _ = self.cond.wait_timeout(guard, slice);
        }
        self.waiters.fetch_sub(1, Ordering::AcqRel);
    }

    /// Moves up to `out.len()` entries into `out`, oldest first (any number
    /// of consumers, one at a time).
    pub fn pop_into(&self, out: &mut [Completion]) -> Result<usize, Error> {
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

/// The fabric's CQ rings by device and CQ id, and the one producer of each
/// (see the module's note).
#[derive(Default)]
pub(crate) struct CqRings {
    rings: Vec<Vec<Option<Arc<CqRing>>>>,
}

impl CqRings {
    /// Room for the CQs of one more device.
    pub fn add_device(&mut self) {
        self.rings.push(Vec::new());
    }

    /// Devices with room.
    pub fn devices(&self) -> usize {
        self.rings.len()
    }

    /// Takes `ring` as the ring of CQ `id` of device `dev`; answers the
    /// consumers' handle on it.
    pub fn insert(&mut self, dev: DeviceId, id: CqId, ring: CqRing) -> Arc<CqRing> {
        let ring = Arc::new(ring);
        let v = &mut self.rings[dev.0 as usize];
        if v.len() <= id.0 as usize {
            v.resize(id.0 as usize + 1, None);
        }
        v[id.0 as usize] = Some(ring.clone());
        ring
    }

    /// Forgets the ring of CQ `id` of device `dev`.
    pub fn remove(&mut self, dev: DeviceId, id: CqId) {
        if let Some(Some(_)) = self.rings[dev.0 as usize].get(id.0 as usize) {
            self.rings[dev.0 as usize][id.0 as usize] = None;
        }
    }

    /// Adds a completion to CQ `id` of device `dev`, if it has a ring here.
    pub fn push(&mut self, dev: DeviceId, id: CqId, c: Completion) {
        if let Some(Some(ring)) = self
            .rings
            .get(dev.0 as usize)
            .and_then(|v| v.get(id.0 as usize))
        {
            ring.produce(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(wr_id: u64) -> Completion {
        Completion {
            wr_id,
            ..Completion::EMPTY
        }
    }

    #[test]
    fn the_table_pushes_into_the_named_ring_in_order_and_a_full_ring_overruns() {
        let mut t = CqRings::default();
        t.add_device();
        t.add_device();
        let (d0, d1) = (DeviceId(0), DeviceId(1));
        let a = t.insert(d1, CqId(3), CqRing::new(2));
        let b = t.insert(d0, CqId(0), CqRing::new(4));
        t.push(d1, CqId(3), wc(1));
        t.push(d1, CqId(3), wc(2));
        t.push(d0, CqId(9), wc(99)); // no such CQ: nothing happens
        t.push(DeviceId(7), CqId(0), wc(98)); // nor device
        assert_eq!((a.len(), b.len()), (2, 0));
        let mut out = [Completion::EMPTY; 4];
        assert_eq!(a.pop_into(&mut out).unwrap(), 2);
        assert_eq!((out[0].wr_id, out[1].wr_id), (1, 2), "oldest first");
        for i in 0..3 {
            t.push(d1, CqId(3), wc(10 + i));
        }
        assert!(
            matches!(a.pop_into(&mut out), Err(Error::CqOverrun { depth: 2 })),
            "a third entry in a 2-deep ring overruns"
        );
        t.remove(d1, CqId(3));
        t.push(d0, CqId(0), wc(5));
        assert_eq!(b.pop_into(&mut out).unwrap(), 1);
        assert_eq!(out[0].wr_id, 5);
    }

    #[test]
    fn an_armed_ring_notifies_once_for_what_it_was_armed_for() {
        use std::sync::atomic::AtomicUsize;
        let mut t = CqRings::default();
        t.add_device();
        let d = DeviceId(0);
        let r = t.insert(d, CqId(0), CqRing::new(8));
        assert!(
            matches!(r.arm(false), Err(Error::Unsupported(_))),
            "no notifier: arming is refused"
        );
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        assert!(r.set_notify(Box::new(move || {
            f.fetch_add(1, Ordering::SeqCst);
        })));
        assert!(!r.set_notify(Box::new(|| {})), "one notifier a ring");
        t.push(d, CqId(0), wc(1));
        assert_eq!(fired.load(Ordering::SeqCst), 0, "not armed: no call");
        let mut out = [Completion::EMPTY; 8];
        r.pop_into(&mut out).unwrap();
        r.arm(false).unwrap();
        t.push(d, CqId(0), wc(2));
        t.push(d, CqId(0), wc(3));
        assert_eq!(fired.load(Ordering::SeqCst), 1, "armed once: one call");
        // Entries waiting when armed: at once.
        r.arm(false).unwrap();
        assert_eq!(fired.load(Ordering::SeqCst), 2);
        r.pop_into(&mut out).unwrap();
        // Solicited only: a plain success does not fire, a solicited or a
        // failed completion does.
        r.arm(true).unwrap();
        t.push(d, CqId(0), wc(4));
        assert_eq!(fired.load(Ordering::SeqCst), 2);
        t.push(
            d,
            CqId(0),
            Completion {
                solicited: true,
                ..wc(5)
            },
        );
        assert_eq!(fired.load(Ordering::SeqCst), 3);
        r.pop_into(&mut out).unwrap();
        r.arm(true).unwrap();
        t.push(
            d,
            CqId(0),
            Completion {
                status: WcStatus::WrFlushErr,
                ..wc(6)
            },
        );
        assert_eq!(fired.load(Ordering::SeqCst), 4);
    }
}
