//! A polling thread's part: a thread that polls anyway (the device's) does
//! the connections' I/O itself, and the receive threads stand aside while it
//! does, so a message need not wait for a thread to wake.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Shared;

/// A poller that polled within this long is taken to be polling still: the
/// receive threads leave the reading to it.
const POLLER_WINDOW: Duration = Duration::from_millis(1);

/// A poller looks at the sockets of connections whose data comes through
/// a ring on one call in this many.
const SOCKET_EVERY: u64 = 32;

/// Longest a receive thread stands aside for a poller that has not said it
/// stopped; after that it looks again (one that stopped without saying so is
/// past its window by then).
const STAND_ASIDE: Duration = Duration::from_millis(10);

impl Shared {
    /// Writes what the sockets take now of the queued data (replies a pass
    /// deferred, say), without reading.
    pub fn flush(&self) {
        let conns = self
            .conn_list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for c in conns.iter() {
            c.flush_now(&mut |b| self.recycle(b));
        }
    }

    /// Stops claiming the connections for a poller: the receive threads read
    /// again (a polling thread about to sleep says so).
    pub fn poller_idle(&self) {
        self.poller_in_pass.store(false, Ordering::Relaxed);
        if self.polled.swap(0, Ordering::Relaxed) != 0 {
            let (gone, cv) = &self.poller_gone;
            *gone.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            cv.notify_all();
        }
    }

    /// A poller is busy with what it read (or not): while it is, it is
    /// taken to be polling, however long that takes (a payload read from a
    /// peer on this host takes a millisecond), and its window starts again
    /// when it is done.
    pub fn poller_busy(&self, busy: bool) {
        if !busy {
            self.polled.store(self.poll_stamp(), Ordering::Relaxed);
        }
        self.poller_in_pass.store(busy, Ordering::Relaxed);
    }

    /// Now, as `polled` holds it: microseconds since `epoch`, plus one (0
    /// means "no poller").
    fn poll_stamp(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64 + 1
    }

    /// Waits until the poller says it stopped, or [`STAND_ASIDE`].
    pub(super) fn stand_aside(&self) {
        let (gone, cv) = &self.poller_gone;
        let g = gone.lock().unwrap_or_else(|p| p.into_inner());
        // Checked under the lock `poller_idle` counts under: a stop between
        // the caller's check and this wait is not missed.
        if !self.poller_active() || self.stop.load(Ordering::Relaxed) {
            return;
        }
        let seen = *g;
        let _ = cv.wait_timeout_while(g, STAND_ASIDE, |n| *n == seen);
    }

    /// Whether a thread is polling the connections itself.
    pub fn poller_active(&self) -> bool {
        if self.poller_in_pass.load(Ordering::Relaxed) {
            return true;
        }
        match self.polled.load(Ordering::Relaxed) {
            0 => false,
            us => {
                self.epoch
                    .elapsed()
                    .saturating_sub(Duration::from_micros(us))
                    < POLLER_WINDOW
            }
        }
    }

    /// Does the connections' I/O that is ready, without blocking: writes
    /// queued data the socket takes, reads arrived frames into the inbound
    /// queue. A thread that polls anyway (the device's) calls this so a
    /// message need not wait for a send or receive thread to wake.
    pub fn poll_io(self: &Arc<Self>) {
        // The clock is read on one call in 64: a spinning poller calls this
        // millions of times a second, and the receive threads only need to
        // know it polled within the last millisecond.
        let calls = self.poll_calls.fetch_add(1, Ordering::Relaxed);
        if calls % 64 == 0 {
            self.polled.store(self.poll_stamp(), Ordering::Relaxed);
        }
        let conns = self
            .conn_list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Readiness first, for all connections in one poll(2): spinning on
        // recv(2) would take each socket's lock against the kernel's own
        // receive path. Connections whose data comes through a ring carry
        // only heartbeats and control frames on their sockets, which can
        // wait a few passes: their sockets are looked at on one call in
        // SOCKET_EVERY (the ring costs a memory read, the poll a system
        // call).
        let mut fds = [0; 64];
        let mut ready = [false; 64];
        let mut all_rings = !conns.is_empty();
        for chunk in conns.chunks(64) {
            let rings = chunk
                .iter()
                .all(|c| c.same_host.rx_on.load(Ordering::Relaxed));
            all_rings &= rings;
            if rings && calls % SOCKET_EVERY != 0 {
                ready = [false; 64];
            } else {
                for (fd, c) in fds.iter_mut().zip(chunk) {
                    *fd = c.fd();
                }
                crate::sys::readable_now(&fds[..chunk.len()], &mut ready[..chunk.len()]);
            }
            for (c, r) in chunk.iter().zip(ready) {
                c.flush_now(&mut |b| self.recycle(b));
                let leftover =
                    r || c.ring_readable() || c.try_reader().is_some_and(|rs| rs.has_pending());
                if !leftover {
                    continue;
                }
                if let Some(mut rs) = c.try_reader() {
                    let socket = r || rs.has_pending();
                    self.read_frames(c, &mut rs, false, socket);
                }
            }
        }
        self.all_rings.store(all_rings, Ordering::Relaxed);
    }
}
