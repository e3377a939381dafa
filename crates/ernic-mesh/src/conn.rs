//! One TCP connection to a peer server, with its send queue and send thread.
//!
//! The device thread never writes to a socket: it queues, and the
//! connection's send thread writes. Heartbeats and their answers never wait
//! behind data: at most one of each is queued, ahead of everything else,
//! then control frames, then data. Data is bounded per connection (requests
//! and replies separately); an empty queue takes any one message. A write
//! that makes no progress for the send timeout shuts the connection down,
//! which the receive side then sees as the peer hanging up.

use std::collections::VecDeque;
use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use ernic_core::NodeId;

/// A queued data frame.
struct Item {
    frame: Vec<u8>,
    tag: u64,
    reply: bool,
}

#[derive(Default)]
struct Queue {
    heartbeat: Option<Vec<u8>>,
    answer: Option<Vec<u8>>,
    control: VecDeque<Vec<u8>>,
    data: VecDeque<Item>,
    request_bytes: usize,
    reply_bytes: usize,
}

/// Why a frame was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueError {
    /// No room now.
    Full,
    /// The connection is closed.
    Closed,
}

pub(crate) struct Conn {
    pub peer: NodeId,
    stream: TcpStream,
    q: Mutex<Queue>,
    cv: Condvar,
    closed: AtomicBool,
    /// Milliseconds since `epoch` when something was last read from the peer.
    heard: AtomicU64,
    epoch: Instant,
    max_requests: usize,
    max_replies: usize,
}

impl Conn {
    pub fn new(
        peer: NodeId,
        stream: TcpStream,
        max_requests: usize,
        max_replies: usize,
        send_timeout: Duration,
    ) -> std::io::Result<Conn> {
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(send_timeout))?;
        Ok(Conn {
            peer,
            stream,
            q: Mutex::new(Queue::default()),
            cv: Condvar::new(),
            closed: AtomicBool::new(false),
            heard: AtomicU64::new(0),
            epoch: Instant::now(),
            max_requests,
            max_replies,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The socket, for the receive thread.
    pub fn reader(&self) -> std::io::Result<TcpStream> {
        self.stream.try_clone()
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
            let mut q = self.lock();
            *q = Queue::default();
            drop(q);
            self.cv.notify_all();
        }
    }

    /// Notes that the peer was heard from.
    pub fn heard(&self) {
        self.heard
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Time since the peer was last heard from.
    pub fn silence(&self) -> Duration {
        let last = Duration::from_millis(self.heard.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
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

    /// Queues a control frame (topology, GIDs, ...), ahead of data.
    pub fn control(&self, frame: Vec<u8>) {
        if self.is_closed() {
            return;
        }
        self.lock().control.push_back(frame);
        self.cv.notify_all();
    }

    /// Whether a data frame of `len` bytes fits now.
    fn fits(&self, q: &Queue, len: usize, reply: bool) -> bool {
        if reply {
            q.reply_bytes == 0 || q.reply_bytes + len <= self.max_replies
        } else {
            q.request_bytes == 0 || q.request_bytes + len <= self.max_requests
        }
    }

    /// Queues a data frame if it fits.
    pub fn data(&self, frame: Vec<u8>, tag: u64, reply: bool) -> Result<(), (QueueError, Vec<u8>)> {
        if self.is_closed() {
            return Err((QueueError::Closed, frame));
        }
        let mut q = self.lock();
        if !self.fits(&q, frame.len(), reply) {
            return Err((QueueError::Full, frame));
        }
        if reply {
            q.reply_bytes += frame.len();
        } else {
            q.request_bytes += frame.len();
        }
        q.data.push_back(Item { frame, tag, reply });
        drop(q);
        self.cv.notify_all();
        Ok(())
    }

    /// Queues a data frame, waiting up to `limit` for room (the manager
    /// relaying a request).
    pub fn data_wait(&self, mut frame: Vec<u8>, limit: Duration) -> Result<(), QueueError> {
        let end = Instant::now() + limit;
        loop {
            match self.data(frame, 0, false) {
                Ok(()) => return Ok(()),
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

    /// Takes back queued data frames tagged `tag`; returns them for recycling.
    pub fn cancel(&self, tag: u64, out: &mut Vec<Vec<u8>>) {
        let mut q = self.lock();
        let mut kept = VecDeque::with_capacity(q.data.len());
        let mut freed = 0;
        for it in q.data.drain(..) {
            if it.tag == tag && !it.reply {
                freed += it.frame.len();
                out.push(it.frame);
            } else {
                kept.push_back(it);
            }
        }
        q.data = kept;
        q.request_bytes -= freed;
    }

    /// The send thread's loop: writes what is queued until the connection
    /// closes. Written data buffers go to `recycle`.
    pub fn send_loop(&self, recycle: &dyn Fn(Vec<u8>)) {
        let mut w = match self.stream.try_clone() {
            Ok(s) => s,
            Err(_) => return self.close(),
        };
        loop {
            let (frame, data) = {
                let mut q = self.lock();
                loop {
                    if self.is_closed() {
                        return;
                    }
                    if let Some(f) = q.heartbeat.take() {
                        break (f, None);
                    }
                    if let Some(f) = q.answer.take() {
                        break (f, None);
                    }
                    if let Some(f) = q.control.pop_front() {
                        break (f, None);
                    }
                    if let Some(it) = q.data.pop_front() {
                        break (it.frame, Some(it.reply));
                    }
                    q = self.cv.wait(q).unwrap_or_else(|p| p.into_inner());
                }
            };
            // A write that makes no progress for the send timeout fails and
            // shuts the connection down.
            let ok = w.write_all(&frame).is_ok();
            if let Some(reply) = data {
                let mut q = self.lock();
                if reply {
                    q.reply_bytes = q.reply_bytes.saturating_sub(frame.len());
                } else {
                    q.request_bytes = q.request_bytes.saturating_sub(frame.len());
                }
                drop(q);
                self.cv.notify_all();
                recycle(frame);
            }
            if !ok {
                self.close();
                return;
            }
        }
    }
}
