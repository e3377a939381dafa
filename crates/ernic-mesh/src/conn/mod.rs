//! One TCP connection to a peer server: its send queue, its frame reader,
//! and the send thread.
//!
//! The device thread never waits on a socket. A frame queued on an empty,
//! idle connection is written at once with a non-blocking send; whatever the
//! socket does not take waits in the queue for the send thread, which writes
//! it (blocking, bounded by the send timeout). Frames leave in the order they
//! were queued: nobody writes inline while the send thread is writing or
//! while anything waits ahead.
//!
//! Heartbeats and their answers never wait behind data: at most one of each
//! is queued, ahead of everything else, then control frames, then data. Data
//! is bounded per connection (requests and replies separately); an empty
//! queue takes any one message. A write that makes no progress for the send
//! timeout shuts the connection down, which the receive side then sees as the
//! peer hanging up.
//!
//! Reading is a resumable state machine ([`ReadState`]) behind a lock, so
//! either the connection's receive thread or a thread that is polling anyway
//! can take the next frames off the socket.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ernic_core::NodeId;

mod read;
mod shm;

pub(crate) use read::{ReadState, ReadStep};

use crate::stats::PeerStats;
use crate::sys;

/// A queued data frame; `offset` bytes of it have been written already.
struct Item {
    frame: Vec<u8>,
    tag: u64,
    reply: bool,
    offset: usize,
    /// A held frame (an injected `mesh_delay`) does not go out before
    /// this, nor does anything queued behind it.
    not_before: Option<Instant>,
    /// The switch to the shared-memory ring (`shm.rs`): the send thread
    /// writes it on the socket, and what is queued behind it takes the
    /// ring.
    switch: bool,
}

impl Item {
    fn held(&self, now: Instant) -> bool {
        self.not_before.is_some_and(|t| t > now)
    }
}

#[derive(Default)]
struct Queue {
    heartbeat: Option<Vec<u8>>,
    answer: Option<Vec<u8>>,
    control: VecDeque<Vec<u8>>,
    /// Bytes of `control`.
    control_bytes: usize,
    data: VecDeque<Item>,
    request_bytes: usize,
    reply_bytes: usize,
    /// The send thread is writing a frame it took off the queue.
    writing: bool,
    /// Data frames queued with a `not_before` (held ones, or ones whose
    /// hold just ended): while any is queued nothing is written inline.
    held: usize,
    /// The switch to the ring waits in `data`: nothing behind it is
    /// written ahead of it, nor on the socket.
    switch_queued: bool,
}

impl Queue {
    /// Nothing but data waits, and the send thread is not writing.
    fn only_data(&self) -> bool {
        !self.writing
            && self.heartbeat.is_none()
            && self.answer.is_none()
            && self.control.is_empty()
    }

    fn idle(&self) -> bool {
        !self.writing
            && self.heartbeat.is_none()
            && self.answer.is_none()
            && self.control.is_empty()
            && self.data.is_empty()
    }

    /// Whether the front data frame is held now.
    fn front_held(&self) -> Option<Instant> {
        if self.held == 0 {
            return None;
        }
        let now = Instant::now();
        self.data
            .front()
            .filter(|it| it.held(now))
            .and_then(|it| it.not_before)
    }

    /// A data frame leaves the queue, written.
    fn retire(&mut self, it: &Item) {
        self.account(it.frame.len(), it.reply, false);
        self.unhold(it);
    }

    /// A data frame leaves the queue (its bytes stay counted while the
    /// send thread writes it).
    fn unhold(&mut self, it: &Item) {
        self.held -= usize::from(it.not_before.is_some());
    }

    fn account(&mut self, len: usize, reply: bool, add: bool) {
        let c = if reply {
            &mut self.reply_bytes
        } else {
            &mut self.request_bytes
        };
        if add {
            *c += len;
        } else {
            *c = c.saturating_sub(len);
        }
    }
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueError {
    /// No room now.
    Full,
    /// The connection is closed.
    Closed,
}

/// Most bytes of control frames queued on one connection. The manager's
/// whole table for a new node is far less (a topology of at most 1,024
/// nodes and one GID frame per node, each at most 4 KiB: about 4 MiB); a
/// peer that reads none of it while the mesh changes is cut off here
/// instead of holding memory for every change.
pub(crate) const MAX_CONTROL_BYTES: usize = 16 << 20;

pub(crate) struct Conn {
    pub peer: NodeId,
    stream: TcpStream,
    q: Mutex<Queue>,
    cv: Condvar,
    reader: Mutex<ReadState>,
    /// Queued frames a vectored send wrote whole, waiting to be recycled.
    written: Mutex<Vec<Vec<u8>>>,
    closed: AtomicBool,
    /// The receive side holds a frame it has no room for: the peer is not
    /// silent, this side is not reading (heartbeats wait behind the frame).
    stalled: AtomicBool,
    /// Milliseconds since `epoch` when something was last read from the peer.
    heard: AtomicU64,
    epoch: Instant,
    max_requests: usize,
    max_replies: usize,
    /// The same-host path on this connection.
    pub same_host: crate::same_host::Link,
    /// The peer's counters (they outlive the connection).
    pub stats: Arc<PeerStats>,
    /// Heartbeat intervals of the current silence already counted missed.
    silent: AtomicU64,
    /// How long a write may make no progress before the connection is
    /// closed.
    send_timeout: Duration,
}

impl Conn {
    pub fn new(
        peer: NodeId,
        stream: TcpStream,
        stats: Arc<PeerStats>,
        max_requests: usize,
        max_replies: usize,
        send_timeout: Duration,
    ) -> io::Result<Conn> {
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(send_timeout))?;
        stream.set_read_timeout(None)?;
        Ok(Conn {
            peer,
            stream,
            q: Mutex::new(Queue::default()),
            cv: Condvar::new(),
            reader: Mutex::new(ReadState::default()),
            written: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            stalled: AtomicBool::new(false),
            heard: AtomicU64::new(0),
            epoch: Instant::now(),
            max_requests,
            max_replies,
            same_host: crate::same_host::Link::new(),
            stats,
            silent: AtomicU64::new(0),
            send_timeout,
        })
    }

    /// Data frames queued now.
    pub fn depth(&self) -> usize {
        self.lock().data.len()
    }

    /// Counts the heartbeat intervals past the first that the peer has been
    /// silent for, once each (the health checks call this).
    pub fn count_missed(&self, heartbeat: Duration) {
        let k = (self.silence().as_millis() / heartbeat.as_millis().max(1)) as u64;
        let k = k.saturating_sub(1);
        let before = self.silent.swap(k, Ordering::Relaxed);
        if k > before {
            self.stats
                .heartbeats_missed
                .fetch_add(k - before, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn closed_flag(&self) -> &AtomicBool {
        &self.closed
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Closes the connection: both directions shut down, queued frames dropped.
    pub fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            let _ = self.stream.shutdown(Shutdown::Both);
            *self.lock() = Queue::default();
            self.cv.notify_all();
        }
    }

    /// Notes that the peer was heard from.
    pub fn heard(&self) {
        self.heard
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Time since the peer was last heard from; zero while this side is not
    /// reading for lack of room (backpressure is not silence).
    pub fn silence(&self) -> Duration {
        if self.stalled.load(Ordering::Relaxed) {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.heard.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// Marks the receive side as waiting for room (or done waiting).
    pub fn set_stalled(&self, on: bool) {
        self.stalled.store(on, Ordering::Relaxed);
        if !on {
            self.heard();
        }
    }

    /// Queues a heartbeat, unless one is already waiting.
    pub fn heartbeat(&self, frame: Vec<u8>) {
        let mut q = self.lock();
        if q.heartbeat.is_none() && !self.is_closed() {
            q.heartbeat = Some(frame);
            drop(q);
            self.cv.notify_all();
        }
    }

    /// Queues a heartbeat's answer, unless one is already waiting.
    pub fn answer(&self, frame: Vec<u8>) {
        let mut q = self.lock();
        if q.answer.is_none() && !self.is_closed() {
            q.answer = Some(frame);
            drop(q);
            self.cv.notify_all();
        }
    }

    /// Queues a control frame (topology, GIDs, ...), ahead of data. A
    /// connection with [`MAX_CONTROL_BYTES`] queued already is closed
    /// instead: its peer is not reading.
    pub fn control(&self, frame: Vec<u8>) {
        if self.is_closed() {
            return;
        }
        let mut q = self.lock();
        if q.control_bytes + frame.len() > MAX_CONTROL_BYTES {
            drop(q);
            self.close();
            return;
        }
        q.control_bytes += frame.len();
        q.control.push_back(frame);
        drop(q);
        self.cv.notify_all();
    }

    /// Whether a data frame of `len` bytes fits now.
    pub fn fits(&self, len: usize, reply: bool) -> bool {
        let q = self.lock();
        self.fits_in(&q, len, reply)
    }

    fn fits_in(&self, q: &Queue, len: usize, reply: bool) -> bool {
        if reply {
            q.reply_bytes == 0 || q.reply_bytes + len <= self.max_replies
        } else {
            q.request_bytes == 0 || q.request_bytes + len <= self.max_requests
        }
    }

    /// Queues a data frame if it fits, writing it at once when the
    /// connection is idle. Returns the buffer when it has been written whole.
    /// A `deferred` frame is only queued, and nobody is woken for it: the
    /// caller flushes ([`Conn::flush_now`]) when it is done with more urgent
    /// work.
    pub fn data(
        &self,
        frame: Vec<u8>,
        tag: u64,
        reply: bool,
        deferred: bool,
    ) -> Result<Option<Vec<u8>>, (QueueError, Vec<u8>)> {
        self.data_at(frame, tag, reply, deferred, None)
    }

    /// Queues a data frame (if it fits) that goes out no sooner than
    /// `until`, and nothing queued after it before it: an injected delay.
    /// The send thread writes it; no one waits for it.
    pub fn data_held(
        &self,
        frame: Vec<u8>,
        tag: u64,
        reply: bool,
        until: Instant,
    ) -> Result<(), (QueueError, Vec<u8>)> {
        self.data_at(frame, tag, reply, false, Some(until))
            .map(|_| ())
    }

    fn data_at(
        &self,
        frame: Vec<u8>,
        tag: u64,
        reply: bool,
        deferred: bool,
        not_before: Option<Instant>,
    ) -> Result<Option<Vec<u8>>, (QueueError, Vec<u8>)> {
        if self.is_closed() {
            return Err((QueueError::Closed, frame));
        }
        let mut q = self.lock();
        if !self.fits_in(&q, frame.len(), reply) {
            return Err((QueueError::Full, frame));
        }
        let mut offset = 0;
        let inline = !deferred && not_before.is_none();
        if inline
            && q.idle()
            && let Some(ring) = self.tx_ring()
        {
            match self.ring_push(ring, &frame, &mut offset) {
                Ok(true) => {
                    self.stats.sent(frame.len());
                    return Ok(Some(frame));
                }
                // The rest waits, as a socket's would.
                Ok(false) => {}
                Err(()) => {
                    drop(q);
                    self.close();
                    return Err((QueueError::Closed, frame));
                }
            }
        } else if inline && q.idle() {
            match sys::send_now(&self.stream, &frame) {
                Ok(n) if n == frame.len() => {
                    self.stats.sent(n);
                    return Ok(Some(frame));
                }
                Ok(n) => offset = n,
                Err(_) => {
                    drop(q);
                    self.close();
                    return Err((QueueError::Closed, frame));
                }
            }
        } else if inline && q.only_data() && q.data.len() < 16 && q.held == 0 && !q.switch_queued {
            // Deferred replies wait ahead: they go out together with this
            // frame, in one sendmsg.
            match self.send_with_queued(&mut q, &frame) {
                Ok(n) if n == frame.len() => {
                    self.stats.sent(n);
                    return Ok(Some(frame));
                }
                Ok(n) => offset = n,
                Err(()) => {
                    drop(q);
                    self.close();
                    return Err((QueueError::Closed, frame));
                }
            }
        }
        q.account(frame.len(), reply, true);
        q.held += usize::from(not_before.is_some());
        q.data.push_back(Item {
            frame,
            tag,
            reply,
            offset,
            not_before,
            switch: false,
        });
        self.stats
            .queue_depth_max
            .fetch_max(q.data.len() as u64, Ordering::Relaxed);
        drop(q);
        if !deferred {
            self.cv.notify_all();
        }
        Ok(None)
    }

    /// Writes the queued data frames and then `frame` with one sendmsg, as
    /// far as the socket takes them; retires the queued frames written whole
    /// and returns how much of `frame` went.
    fn send_with_queued(&self, q: &mut Queue, frame: &[u8]) -> Result<usize, ()> {
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let (_, of_frame) = self.send_batch(q, frame, &mut |f| written.push(f))?;
        Ok(of_frame)
    }

    /// One sendmsg of the queued data frames (as many as fit beside
    /// `extra`, at most 16 in all) and then `extra`, as far as the socket
    /// takes them. The frames written whole go to `done`; a frame written in
    /// part keeps its offset. Returns whether every frame of the batch went
    /// whole, and how much of `extra` went.
    fn send_batch(
        &self,
        q: &mut Queue,
        extra: &[u8],
        done: &mut dyn FnMut(Vec<u8>),
    ) -> Result<(bool, usize), ()> {
        if let Some(ring) = self.tx_ring() {
            return self.push_batch(ring, q, extra, done);
        }
        const MAX: usize = 16;
        let mut bufs: [&[u8]; MAX] = [&[]; MAX];
        // `extra` goes only behind every queued frame, never ahead of one.
        let extra = if q.data.len() < MAX && q.held == 0 && !q.switch_queued {
            extra
        } else {
            &[]
        };
        let room = if extra.is_empty() { MAX } else { MAX - 1 };
        let now = (q.held > 0).then(Instant::now);
        let mut n = 0;
        // A held frame, and everything behind it, stays.
        let free = q
            .data
            .iter()
            .take_while(|it| !it.switch && now.is_none_or(|now| !it.held(now)));
        for (b, it) in bufs[..room].iter_mut().zip(free) {
            *b = &it.frame[it.offset..];
            n += 1;
        }
        let batch = n;
        if !extra.is_empty() {
            bufs[n] = extra;
            n += 1;
        }
        if n == 0 {
            return Ok((false, 0));
        }
        let mut sent = sys::send_vectored_now(&self.stream, &bufs[..n]).map_err(|_| ())?;
        for _ in 0..batch {
            let it = q.data.front_mut().expect("batched from the queue");
            let left = it.frame.len() - it.offset;
            if sent < left {
                it.offset += sent;
                return Ok((false, 0));
            }
            sent -= left;
            let it = q.data.pop_front().expect("front exists");
            q.retire(&it);
            self.stats.sent(it.frame.len());
            done(it.frame);
        }
        Ok((true, sent))
    }

    /// Frames written whole by a vectored send, for the caller to recycle.
    pub fn take_written(&self, out: &mut dyn FnMut(Vec<u8>)) {
        let mut w = self.written.lock().unwrap_or_else(|p| p.into_inner());
        for f in w.drain(..) {
            out(f);
        }
    }

    /// Queues a data frame, waiting up to `limit` for room (the manager
    /// relaying a request). Returns a buffer written whole, for reuse.
    pub fn data_wait(
        &self,
        mut frame: Vec<u8>,
        limit: Duration,
    ) -> Result<Option<Vec<u8>>, QueueError> {
        let end = Instant::now() + limit;
        loop {
            match self.data(frame, 0, false, false) {
                Ok(done) => return Ok(done),
                Err((QueueError::Closed, _)) => return Err(QueueError::Closed),
                Err((QueueError::Full, f)) => {
                    frame = f;
                    if Instant::now() >= end {
                        return Err(QueueError::Full);
                    }
                    let q = self.lock();
                    let _ = self.cv.wait_timeout(q, Duration::from_millis(20));
                }
            }
        }
    }

    /// Writes what the socket takes now of the data queue, when the send
    /// thread is not busy (a polling thread doing the send thread's work).
    /// Frames written whole go to `done`.
    pub fn flush_now(&self, done: &mut dyn FnMut(Vec<u8>)) {
        let mut q = self.lock();
        while !q.writing && q.heartbeat.is_none() && q.answer.is_none() && q.control.is_empty() {
            if q.data.is_empty() {
                break;
            }
            // Up to 16 frames in one sendmsg (the replies a pass queued,
            // say): one system call where there were as many as frames.
            match self.send_batch(&mut q, &[], done) {
                Ok((true, _)) => {}
                // The socket took only part: the rest waits for room.
                Ok((false, _)) => break,
                Err(()) => {
                    drop(q);
                    self.close();
                    return;
                }
            }
        }
        // What the socket did not take (deferred replies included, which
        // woke no one when queued), the send thread writes.
        let left = !q.data.is_empty();
        drop(q);
        if left {
            self.cv.notify_all();
        }
    }

    /// Takes back queued data frames tagged `tag` that have not started to
    /// go out; returns them for recycling.
    pub fn cancel(&self, tag: u64, out: &mut Vec<Vec<u8>>) {
        let mut q = self.lock();
        let mut kept = VecDeque::with_capacity(q.data.len());
        let (mut freed, mut unheld) = (0, 0);
        for it in q.data.drain(..) {
            if it.tag == tag && !it.reply && it.offset == 0 {
                freed += it.frame.len();
                unheld += usize::from(it.not_before.is_some());
                out.push(it.frame);
            } else {
                kept.push_back(it);
            }
        }
        q.data = kept;
        q.request_bytes -= freed;
        q.held -= unheld;
    }

    /// The send thread's loop: writes what is queued until the connection
    /// closes. Written data buffers go to `recycle`.
    pub fn send_loop(&self, recycle: &dyn Fn(Vec<u8>)) {
        let mut w = match self.stream.try_clone() {
            Ok(s) => s,
            Err(_) => return self.close(),
        };
        loop {
            let (frame, offset, data, switch) = {
                let mut q = self.lock();
                let item = loop {
                    if self.is_closed() {
                        return;
                    }
                    // A frame partly written already is finished first:
                    // nothing may go out in the middle of it.
                    if q.data.front().is_some_and(|it| it.offset > 0) {
                        let it = q.data.pop_front().expect("front exists");
                        q.unhold(&it);
                        break (it.frame, it.offset, Some(it.reply), false);
                    }
                    if let Some(f) = q.heartbeat.take() {
                        break (f, 0, None, false);
                    }
                    if let Some(f) = q.answer.take() {
                        break (f, 0, None, false);
                    }
                    if let Some(f) = q.control.pop_front() {
                        q.control_bytes -= f.len();
                        break (f, 0, None, false);
                    }
                    if let Some(until) = q.front_held() {
                        // A held frame: wait out its hold (heartbeats and
                        // control frames still go meanwhile).
                        let wait = until.saturating_duration_since(Instant::now());
                        q = self
                            .cv
                            .wait_timeout(q, wait)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                        continue;
                    }
                    if let Some(it) = q.data.pop_front() {
                        q.unhold(&it);
                        if it.switch {
                            break (it.frame, 0, None, true);
                        }
                        break (it.frame, it.offset, Some(it.reply), false);
                    }
                    q = self.cv.wait(q).unwrap_or_else(|p| p.into_inner());
                };
                q.writing = true;
                item
            };
            // A write that makes no progress for the send timeout fails and
            // shuts the connection down.
            let wrote = match self.tx_ring().filter(|_| data.is_some()) {
                // A data frame after the switch: whole, into the ring.
                Some(ring) => self
                    .ring_write(ring, &frame, offset)
                    .map_err(|()| io::Error::from(io::ErrorKind::TimedOut)),
                None => w.write_all(&frame[offset..]),
            };
            let ok = wrote.is_ok();
            match &wrote {
                Ok(()) if data.is_some() => self.stats.sent(frame.len()),
                Ok(()) => {
                    self.stats.control_sent.fetch_add(1, Ordering::Relaxed);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.stats.send_timeouts.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {}
            }
            let mut q = self.lock();
            if switch && ok {
                // Under the lock the queue's writers look at it with.
                self.same_host.tx_on.store(true, Ordering::Release);
                q.switch_queued = false;
            }
            q.writing = false;
            if let Some(reply) = data {
                q.account(frame.len(), reply, false);
            }
            drop(q);
            self.cv.notify_all();
            if data.is_some() {
                recycle(frame);
            }
            if !ok {
                self.close();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
