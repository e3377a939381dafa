//! The mesh pump: one device loop pass over a mesh. What peers sent is
//! applied to a front end's engine, held SENDs are given up when they keep
//! the receive threads out of a full queue too long, timers run, the
//! completions go to the front end's queues and the message buffers back
//! to the mesh.
//!
//! Every front end that puts an engine on a mesh (`ernic-verbs`' fabric,
//! `ernic-ionic`'s RDMA device) runs this one pass; where they differ,
//! [`PassOptions`] says so. A pass adds no allocation of its own, never
//! blocks or sleeps, and reads no clock: the caller passes `now`. Passes
//! over one mesh run one at a time: the caller's lock on its engine
//! serialises them.

use std::time::{Duration, Instant};

use ernic_core::{DmaMemory, Engine};

use crate::Mesh;

/// How long receive threads may be kept out of a full inbound queue by
/// SENDs held for receives before a pass gives those SENDs up (seed 001:
/// half a second).
pub const HELD_GIVE_UP: Duration = Duration::from_millis(500);

/// A front end a pass applies messages to: its engine, and how it hands
/// completions on.
pub trait PassTarget {
    /// The engine's memory.
    type Memory: DmaMemory;
    /// The engine messages are applied to.
    fn engine(&mut self) -> &mut Engine<Self::Memory>;
    /// Hands the completions the engine produced to the front end's queues.
    fn complete(&mut self);
}

/// What a caller's pass does beyond the common part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassOptions {
    /// End the pass after a message whose payload was read straight from a
    /// peer's memory on this host. Such a read takes a millisecond: ending
    /// the pass there lets what it completed reach the application (a
    /// transport's control message that starts its own sends, say) before
    /// the next message is read. Without it, two ranks' sendrecv now and
    /// then read all of one direction before starting the other (27 ms
    /// iterations among 14 ms ones).
    pub yield_after_by_ref: bool,
    /// Write the replies queued during the pass at its end, after the
    /// completions (an application's own pass may leave them to its next
    /// send, which takes them along in one sendmsg, or its next poll).
    pub flush: bool,
    /// The caller polls the connections itself ([`Mesh::poll_io`]): the
    /// pass tells the receive threads it is busy with what it read
    /// ([`Mesh::poller_busy`]), however long that takes, and done at its
    /// end.
    pub poller: bool,
}

impl Mesh {
    /// One device loop pass (see the [module](crate::pump)): applies every
    /// queued message (or, with [`PassOptions::yield_after_by_ref`], those up
    /// to the first read by reference), gives up held SENDs after
    /// [`HELD_GIVE_UP`], runs the engine's timers, hands the completions on
    /// and the buffers back. Answers how many messages it applied.
    pub fn pass<T: PassTarget + ?Sized>(
        &self,
        target: &mut T,
        now: Instant,
        how: PassOptions,
    ) -> usize {
        if how.poller {
            self.poller_busy(true);
        }
        self.begin_pass();
        let read_before = target.engine().remote_stats().read_by_ref;
        let mut applied = 0;
        while let Some(m) = self.pop() {
            let engine = target.engine();
            engine.apply_remote(m.from, m.buf, m.start, now);
            engine.take_released(|b| self.release(b));
            applied += 1;
            if how.yield_after_by_ref && engine.remote_stats().read_by_ref != read_before {
                break;
            }
        }
        let engine = target.engine();
        if self.starved_for().is_some_and(|d| d >= HELD_GIVE_UP) && engine.has_held() {
            // Receive threads are kept out of a full queue by SENDs waiting
            // for receives: give up on those now (seed 001).
            engine.expire_held(now);
        }
        engine.poll(now);
        engine.take_released(|b| self.release(b));
        target.complete();
        if how.flush {
            self.flush();
        }
        self.end_pass();
        if how.poller {
            self.poller_busy(false);
        }
        applied
    }
}
