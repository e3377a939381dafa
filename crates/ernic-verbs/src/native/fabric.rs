//! The loopback fabric: one engine behind a lock, and its device thread.
//!
//! A [`Fabric`] is one ernic engine behind a lock. Every verbs call takes the
//! lock, calls the engine, and hands the completions the engine produced to
//! their CQs before letting go; polling a CQ takes only that CQ's own lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use ernic_mesh::{Mesh, PassOptions, PassTarget};

use ernic_core::{AsyncEvent, DeviceId, Engine, EngineConfig, Gid, ProcessMemory};

use crate::Error;
use crate::device::Device;

use super::cq_ring::CqRings;
use super::device::Native;

/// The state behind the fabric's lock.
pub(crate) struct State {
    pub engine: Engine<ProcessMemory>,
    /// CQ rings by device and CQ id, and their one producer.
    pub cqs: CqRings,
    pub events: Vec<AsyncEvent>,
    /// Where events go instead of `events`, once set.
    pub event_hook: Option<EventHook>,
}

/// Called with each asynchronous event as it happens, under the fabric's
/// lock: it must only hand the event on (queue it, wake a reader).
pub type EventHook = Box<dyn Fn(&AsyncEvent) + Send + Sync>;

impl State {
    /// Moves the engine's completions to their CQs. Unsignaled successful
    /// send completions stop here, as a verbs driver hides them.
    pub fn distribute(&mut self) {
        let cqs = &mut self.cqs;
        self.engine.drain_completions(|e| {
            if e.completion.signaled {
                cqs.push(e.device, e.cq, e.completion);
            }
        });
        if !self.engine.has_completions() {
            let ev = self.engine.take_events();
            match &self.event_hook {
                Some(hook) => ev.iter().for_each(hook),
                None => self.events.extend(ev),
            }
        }
    }
}

impl PassTarget for State {
    type Memory = ProcessMemory;

    fn engine(&mut self) -> &mut Engine<ProcessMemory> {
        &mut self.engine
    }

    fn complete(&mut self) {
        self.distribute();
    }
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// The mesh this fabric reaches other nodes through, if any.
    pub mesh: Option<Arc<Mesh>>,
    /// When the engine's next timer is due, in nanoseconds since `epoch`
    /// (`NO_TIMER` when none): read without the lock by pollers, so an empty
    /// poll takes the lock only once something is actually due.
    deadline: AtomicU64,
    epoch: Instant,
    /// When an application thread last polled a CQ (nanoseconds since
    /// `epoch`): while one does, it does the device's work and the device
    /// thread stands aside.
    app_polled: AtomicU64,
    /// An application thread is in a device pass now.
    app_in_pass: AtomicBool,
    /// When `progress` last looked at the sockets (nanoseconds since
    /// `epoch`).
    io_polled: AtomicU64,
}

/// Least time between two looks at the sockets by `progress`.
const IO_GAP_NS: u64 = 1_000;

/// An application that polled within this long is taken to be polling still.
/// What arrives while it polls something else (memory, as ib_write_lat
/// does) waits for the device thread up to this long, and longer when the
/// cores are taken (the thread must wait for a spinning application's time
/// slice). Shorter windows did not help: with 200 us, `ernic perf
/// write_lat` kept its 2 ms 99th percentile with each process on one core,
/// and send_lat's mean went from 2.6-3.1 us to 4.2-5.0 (its device thread
/// woke five times as often).
const APP_WINDOW: Duration = Duration::from_millis(1);

/// How stale the application's stamp may grow before a poll writes it anew.
const STAMP_NS: u64 = APP_WINDOW.as_nanos() as u64 / 10;

/// The device thread's shortest nap while it stands aside.
const MIN_NAP: Duration = Duration::from_micros(100);

const NO_TIMER: u64 = u64::MAX;

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the engine consistent between
        // calls, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the engine, then distributes completions and records
    /// whether timers are pending.
    pub fn with<R>(&self, f: impl FnOnce(&mut State, Instant) -> R) -> R {
        let mut st = self.lock();
        // One reading of the clock serves the call and its deadline: the
        // clock is a visible cost on every verbs call.
        let now = Instant::now();
        let queued = self.mesh.as_ref().map(|m| m.replies_queued());
        let r = f(&mut st, now);
        st.distribute();
        if let Some(mesh) = &self.mesh {
            st.engine.take_released(|b| mesh.release(b));
            // Replies queued by this call (a receive that released a held
            // SEND, say) go out now, with anything else that waits. A call
            // that queued none leaves the replies of an earlier pass to the
            // next request or poll: flushing them here would write them
            // alone, one more segment and system call just before the
            // request that takes them along (ib_send_lat posts a receive
            // and then its SEND on each iteration).
            if queued != Some(mesh.replies_queued()) {
                mesh.flush();
            }
        }
        // Written only on change: every spinning poller reads it, and a store
        // would pull its cache line away from them on each call.
        let d = st
            .engine
            .next_deadline(now)
            .map_or(NO_TIMER, |t| self.since_epoch(t));
        if self.deadline.load(Ordering::Relaxed) != d {
            self.deadline.store(d, Ordering::Relaxed);
        }
        r
    }

    fn since_epoch(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch)
            .as_nanos()
            .min(u128::from(NO_TIMER - 1)) as u64
    }

    /// Whether the engine has timers at all.
    pub fn has_timers(&self) -> bool {
        self.deadline.load(Ordering::Relaxed) != NO_TIMER
    }

    /// Applies what peers sent, if anything waits and no one else holds the
    /// lock: a spinning poller does the device thread's work itself, without
    /// waiting for it to wake.
    pub fn progress(&self, now: Instant) {
        let Some(mesh) = &self.mesh else { return };
        let now = self.since_epoch(now).max(1);
        // The device thread only needs to know an application polled within
        // its window: the stamp is written when it is a tenth of that old,
        // so spinning pollers share a line they mostly read.
        if now.saturating_sub(self.app_polled.load(Ordering::Relaxed)) >= STAMP_NS {
            self.app_polled.store(now, Ordering::Relaxed);
        }
        // A caller polling several CQs in a row (a transport's rails) asks
        // again within a microsecond: the sockets were just looked at, and
        // looking costs a system call.
        // With every connection on a ring there is no system call to save.
        if mesh.all_rings()
            || now.saturating_sub(self.io_polled.load(Ordering::Relaxed)) >= IO_GAP_NS
        {
            self.io_polled.store(now, Ordering::Relaxed);
            mesh.poll_io();
        }
        if !mesh.has_messages() {
            return;
        }
        let Ok(mut st) = self.state.try_lock() else {
            return;
        };
        // A pass may be long (a payload read from a peer on this host): the
        // device thread must not take this thread for one that stopped
        // polling and start passes of its own, a third busy thread on two
        // cores (64 MiB sendrecv: 4.2 GB/s against 3.8, six A/B rounds).
        self.app_in_pass.store(true, Ordering::Relaxed);
        Self::pass(&mut st, mesh, Instant::now(), false);
        self.publish_deadline(&st);
        self.app_polled
            .store(self.since_epoch(Instant::now()).max(1), Ordering::Relaxed);
        self.app_in_pass.store(false, Ordering::Relaxed);
    }

    /// One device loop pass (the mesh's, [`Mesh::pass`]): apply the queued
    /// messages, run timers, hand completions to CQs, give buffers back.
    /// The device thread's pass (`flush`) writes the replies it queued at
    /// its end; an application's leaves them to its next send (which takes
    /// them along in one sendmsg) or its next poll. Both callers polled the
    /// connections just before.
    fn pass(st: &mut State, mesh: &Mesh, now: Instant, flush: bool) {
        let how = PassOptions {
            yield_after_by_ref: true,
            flush,
            poller: true,
        };
        mesh.pass(st, now, how);
    }

    fn publish_deadline(&self, st: &State) {
        let d = if st.engine.has_timers() {
            st.engine
                .next_deadline(Instant::now())
                .map_or(0, |t| self.since_epoch(t))
        } else {
            NO_TIMER
        };
        if self.deadline.load(Ordering::Relaxed) != d {
            self.deadline.store(d, Ordering::Relaxed);
        }
    }

    /// The device thread of a fabric on a mesh. While an application thread
    /// polls a CQ, that thread does the device's work and this one stands
    /// aside (two cores afford one busy thread per process), looking again
    /// when the application's window would end. Otherwise, while there is
    /// traffic, it polls the connections itself (one thread reading and
    /// applying, with no hand-off); after the last work it spins briefly,
    /// then yields its core on each empty look (a poller of this process
    /// or another may want it: the application, pinned to the same core,
    /// waited out 500 us of this thread's spinning before, and
    /// `ernic perf write_lat` so pinned went from 1.3-1.6 ms typical to
    /// 1.9-2.6 us), then gives the connections back to the receive threads
    /// and sleeps until they queue something (they sleep on the peers'
    /// doorbells) or a timer is due.
    fn device_loop(weak: Weak<Shared>) {
        const SPIN: Duration = Duration::from_micros(50);
        const YIELD: Duration = Duration::from_micros(500);
        let mut last_work = Instant::now();
        loop {
            let Some(me) = weak.upgrade() else { return };
            let Some(mesh) = me.mesh.clone() else { return };
            if let Some(left) = me.app_polling() {
                drop(me);
                std::thread::sleep(left.max(MIN_NAP));
                continue;
            }
            mesh.poll_io();
            let worked = mesh.has_messages();
            if worked || me.run_due() {
                let mut st = me.lock();
                Self::pass(&mut st, &mesh, Instant::now(), true);
                me.publish_deadline(&st);
            }
            drop(me);
            let idle = last_work.elapsed();
            if worked {
                last_work = Instant::now();
            } else if idle < SPIN {
                std::hint::spin_loop();
            } else if idle < YIELD {
                std::thread::yield_now();
            } else {
                mesh.poller_idle();
                mesh.wait(Duration::from_millis(2));
            }
        }
    }

    /// Whether an application thread is polling: for how long more it is
    /// taken to be, if it stopped now.
    fn app_polling(&self) -> Option<Duration> {
        if self.app_in_pass.load(Ordering::Relaxed) {
            return Some(APP_WINDOW);
        }
        let last = self.app_polled.load(Ordering::Relaxed);
        let ago = self.since_epoch(Instant::now()).saturating_sub(last);
        let window = APP_WINDOW.as_nanos() as u64;
        (last != 0 && ago < window).then(|| Duration::from_nanos(window - ago))
    }

    /// Whether a timer is due now.
    fn run_due(&self) -> bool {
        let d = self.deadline.load(Ordering::Relaxed);
        d != NO_TIMER && self.since_epoch(Instant::now()) >= d
    }

    /// Runs the engine's timers if one is due.
    pub fn run_timers(&self) {
        let d = self.deadline.load(Ordering::Relaxed);
        if d != NO_TIMER && self.since_epoch(Instant::now()) >= d {
            self.with(|st, now| st.engine.poll(now));
        }
    }
}

/// An in-process RDMA fabric: devices on it reach each other by GID.
#[derive(Clone)]
pub struct Fabric {
    pub(crate) shared: Arc<Shared>,
}

impl Default for Fabric {
    fn default() -> Fabric {
        Fabric::new()
    }
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric").finish_non_exhaustive()
    }
}

impl Fabric {
    /// A loopback fabric with the default limits.
    pub fn new() -> Fabric {
        Fabric::with_config(EngineConfig::default())
    }

    /// A loopback fabric with these limits (verbs QP state rules always apply,
    /// and the reserved key 0 is never usable from host programs).
    pub fn with_config(cfg: EngineConfig) -> Fabric {
        Fabric::build(cfg, None)
    }

    /// A fabric whose devices also reach the devices of other nodes of a
    /// mesh (other processes or hosts). A device thread applies what peers
    /// send; the GIDs of the devices opened here are advertised on the mesh.
    pub fn on_mesh(cfg: EngineConfig, mesh: Mesh) -> Fabric {
        let f = Fabric::build(cfg, Some(Arc::new(mesh)));
        let weak = Arc::downgrade(&f.shared);
        let _ = std::thread::Builder::new()
            .name("ernic-device".into())
            .spawn(move || Shared::device_loop(weak));
        f
    }

    fn build(mut cfg: EngineConfig, mesh: Option<Arc<Mesh>>) -> Fabric {
        cfg.enforce_qp_state = true;
        cfg.allow_reserved_lkey = false;
        let mut engine = Engine::new(cfg, ProcessMemory::new());
        if let Some(m) = &mesh {
            engine.set_remote(Box::new(m.carrier()));
        }
        Fabric {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    engine,
                    cqs: CqRings::default(),
                    events: Vec::new(),
                    event_hook: None,
                }),
                mesh,
                deadline: AtomicU64::new(NO_TIMER),
                epoch: Instant::now(),
                app_polled: AtomicU64::new(0),
                app_in_pass: AtomicBool::new(false),
                io_polled: AtomicU64::new(0),
            }),
        }
    }

    /// The mesh this fabric is on, if any.
    pub fn mesh(&self) -> Option<&Mesh> {
        self.shared.mesh.as_deref()
    }

    /// Adds a device with this GID to the fabric and opens it.
    pub fn open_device(&self, gid: Gid) -> Result<Device, Error> {
        let mut st = self.shared.lock();
        if let Some(d) = st.engine.device_of_gid(&gid) {
            return Err(Error::Engine(ernic_core::EngineError::IdUnavailable {
                what: "GID already owned by device",
                id: u32::from(d.0),
            }));
        }
        let id = st.engine.add_device(vec![gid]);
        st.cqs.add_device();
        if let Some(mesh) = &self.shared.mesh {
            let all: Vec<Gid> = (0..st.cqs.devices())
                .filter_map(|d| st.engine.gids(DeviceId(d as u16)).ok())
                .flatten()
                .copied()
                .collect();
            mesh.set_gids(all);
        }
        Ok(Device::new(Arc::new(Native {
            shared: self.shared.clone(),
            id,
            gid,
        })))
    }

    /// Counters of the inter-node path (timeouts, malformed and stale
    /// replies), for diagnosis.
    pub fn remote_stats(&self) -> ernic_core::RemoteStats {
        self.shared.lock().engine.remote_stats()
    }

    /// Hands every asynchronous event from now on to `hook`, as it
    /// happens, instead of keeping it for [`take_events`](Fabric::take_events)
    /// (those kept so far are handed to it at once).
    pub fn set_event_hook(&self, hook: EventHook) {
        let mut st = self.shared.lock();
        for e in std::mem::take(&mut st.events) {
            hook(&e);
        }
        st.event_hook = Some(hook);
    }

    /// Asynchronous events (SRQ limit reached, QP fatal) since the last call.
    pub fn take_events(&self) -> Vec<AsyncEvent> {
        std::mem::take(&mut self.shared.lock().events)
    }
}
