//! The inbound queue: what receive threads read, waiting for the device
//! thread to apply it (seed 001, "When a Node Falls Behind").
//!
//! Bounded at a byte and a message count, whichever comes first; a message
//! counts from when it is queued until the device releases its buffer, so a
//! SEND the engine holds for a receive keeps its room. An empty queue takes
//! any one message. A receive thread with a message that does not fit waits
//! (and reads nothing more from its peer, which TCP passes back to the
//! sender), except when the device loop has not run for the stall time: then
//! what comes is dropped and counted, and the next pass logs it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use ernic_core::NodeId;

/// One message for the device: its bytes start `start` bytes into `buf`.
#[derive(Debug)]
pub struct Message {
    /// The node it came from.
    pub from: NodeId,
    /// The buffer.
    pub buf: Vec<u8>,
    /// Where the message starts in `buf`.
    pub start: usize,
}

struct State {
    msgs: VecDeque<Message>,
    /// Bytes queued or still in the device's hands.
    bytes: usize,
    /// Messages queued or still in the device's hands.
    count: usize,
    /// Since when some receive thread has waited for room.
    waiting_since: Option<Instant>,
    in_pass: bool,
    last_pass_end: Instant,
    dropped: u64,
}

pub(crate) struct Inbound {
    st: Mutex<State>,
    not_empty: Condvar,
    not_full: Condvar,
    max_bytes: usize,
    max_msgs: usize,
    stall: Duration,
    /// Messages queued (readable without the lock).
    queued: AtomicUsize,
    /// Threads waiting for a message: a push wakes them only if there are any.
    sleepers: AtomicUsize,
    /// Receive threads waiting for room: a release wakes them only if there are any.
    room_waiters: AtomicUsize,
}

/// Why a message was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The device loop is not running and the queue is full: dropped.
    Dropped,
    /// The connection closed while waiting for room.
    Closed,
}

impl Inbound {
    pub fn new(max_bytes: usize, max_msgs: usize, stall: Duration) -> Inbound {
        Inbound {
            st: Mutex::new(State {
                msgs: VecDeque::new(),
                bytes: 0,
                count: 0,
                waiting_since: None,
                in_pass: false,
                last_pass_end: Instant::now(),
                dropped: 0,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            max_bytes,
            max_msgs,
            stall,
            queued: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            room_waiters: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a message, waiting for room while `closed` stays false.
    pub fn push(&self, m: Message, closed: &AtomicBool) -> Result<(), Refused> {
        let size = m.buf.len();
        let mut st = self.lock();
        loop {
            let fits =
                st.count == 0 || (st.bytes + size <= self.max_bytes && st.count < self.max_msgs);
            if fits {
                break;
            }
            let now = Instant::now();
            if !st.in_pass && now.duration_since(st.last_pass_end) >= self.stall {
                st.dropped += 1;
                return Err(Refused::Dropped);
            }
            if closed.load(Ordering::Relaxed) {
                return Err(Refused::Closed);
            }
            st.waiting_since.get_or_insert(now);
            self.room_waiters.fetch_add(1, Ordering::AcqRel);
            st = self
                .not_full
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
            self.room_waiters.fetch_sub(1, Ordering::AcqRel);
        }
        st.waiting_since = None;
        st.bytes += size;
        st.count += 1;
        st.msgs.push_back(m);
        self.queued.store(st.msgs.len(), Ordering::Release);
        drop(st);
        if self.sleepers.load(Ordering::Acquire) > 0 {
            self.not_empty.notify_all();
        }
        Ok(())
    }

    /// Queues a message if it fits now; gives it back if not (a polling
    /// thread's way in).
    pub fn try_push(&self, m: Message) -> Result<(), Message> {
        let size = m.buf.len();
        let mut st = self.lock();
        let fits = st.count == 0 || (st.bytes + size <= self.max_bytes && st.count < self.max_msgs);
        if !fits {
            return Err(m);
        }
        st.bytes += size;
        st.count += 1;
        st.msgs.push_back(m);
        self.queued.store(st.msgs.len(), Ordering::Release);
        // Wakes no one: the polling thread that queued it applies it itself.
        Ok(())
    }

    /// Takes the next message (the device thread).
    pub fn pop(&self) -> Option<Message> {
        if self.queued.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut st = self.lock();
        let m = st.msgs.pop_front();
        self.queued.store(st.msgs.len(), Ordering::Release);
        m
    }

    /// Whether messages wait.
    pub fn has_messages(&self) -> bool {
        self.queued.load(Ordering::Acquire) > 0
    }

    /// The device is done with a buffer of `len` bytes.
    pub fn release(&self, len: usize) {
        let mut st = self.lock();
        st.bytes = st.bytes.saturating_sub(len);
        st.count = st.count.saturating_sub(1);
        drop(st);
        if self.room_waiters.load(Ordering::Acquire) > 0 {
            self.not_full.notify_all();
        }
    }

    /// Waits up to `timeout` for a message.
    pub fn wait(&self, timeout: Duration) {
        self.sleepers.fetch_add(1, Ordering::AcqRel);
        let st = self.lock();
        if st.msgs.is_empty() {
            let _ = self.not_empty.wait_timeout(st, timeout);
        }
        self.sleepers.fetch_sub(1, Ordering::AcqRel);
    }

    /// A device loop pass begins.
    pub fn begin_pass(&self) {
        self.lock().in_pass = true;
    }

    /// A device loop pass ends; returns how many messages were dropped since
    /// the last pass for want of one.
    pub fn end_pass(&self) -> u64 {
        let mut st = self.lock();
        st.in_pass = false;
        st.last_pass_end = Instant::now();
        std::mem::take(&mut st.dropped)
    }

    /// How long a receive thread has waited for room, if one is waiting.
    pub fn starved_for(&self) -> Option<Duration> {
        self.lock().waiting_since.map(|t| t.elapsed())
    }

    /// Bytes and messages counted against the bounds now.
    pub fn usage(&self) -> (usize, usize) {
        let st = self.lock();
        (st.bytes, st.count)
    }

    /// Wakes everyone (shutdown).
    pub fn wake_all(&self) {
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(n: usize) -> Message {
        Message {
            from: NodeId(1),
            buf: vec![0; n],
            start: 0,
        }
    }

    #[test]
    fn bounded_by_bytes_and_count_and_an_empty_queue_takes_one() {
        let q = Inbound::new(100, 3, Duration::from_secs(60));
        let open = AtomicBool::new(false);
        q.begin_pass();
        assert!(
            q.push(msg(500), &open).is_ok(),
            "an empty queue takes any one"
        );
        let closed = AtomicBool::new(true);
        assert_eq!(
            q.push(msg(1), &closed),
            Err(Refused::Closed),
            "full: would wait"
        );
        let m = q.pop().unwrap();
        assert_eq!(
            q.push(msg(1), &closed),
            Err(Refused::Closed),
            "still counted until released"
        );
        q.release(m.buf.len());
        for _ in 0..3 {
            q.push(msg(10), &open).unwrap();
        }
        assert_eq!(
            q.push(msg(1), &closed),
            Err(Refused::Closed),
            "three messages at most"
        );
        assert_eq!(q.usage(), (30, 3));
    }

    #[test]
    fn a_stalled_device_loop_makes_a_full_queue_drop() {
        let q = Inbound::new(10, 10, Duration::from_millis(20));
        let open = AtomicBool::new(false);
        q.push(msg(10), &open).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(q.push(msg(10), &open), Err(Refused::Dropped));
        assert_eq!(q.end_pass(), 1);
        assert_eq!(q.end_pass(), 0);
    }
}
