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
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ernic_core::NodeId;

use crate::frame::{self, FrameError, Header};
use crate::sys;

/// A queued data frame; `offset` bytes of it have been written already.
struct Item {
    frame: Vec<u8>,
    tag: u64,
    reply: bool,
    offset: usize,
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

/// Bytes a reader takes off the socket at once into its staging buffer: one
/// receive can bring several small frames.
const STAGE: usize = 64 << 10;

/// Where the reader is in the byte stream.
pub(crate) struct ReadState {
    /// Bytes received but not yet taken: `stage[lo..hi]`.
    stage: Box<[u8]>,
    lo: usize,
    hi: usize,
    hdr: [u8; frame::HEADER_LEN],
    hdr_got: usize,
    body: Option<(Header, Vec<u8>)>,
    body_got: usize,
    /// A complete frame that could not be handed on yet (no room); it goes
    /// before anything read after it.
    pub ready: Option<(Header, Vec<u8>)>,
}

impl Default for ReadState {
    fn default() -> ReadState {
        ReadState {
            stage: vec![0u8; STAGE].into_boxed_slice(),
            lo: 0,
            hi: 0,
            hdr: [0; frame::HEADER_LEN],
            hdr_got: 0,
            body: None,
            body_got: 0,
            ready: None,
        }
    }
}

impl ReadState {
    /// Whether it holds bytes or a frame the socket will not signal again.
    pub fn has_pending(&self) -> bool {
        self.ready.is_some() || self.lo < self.hi
    }

    /// Moves up to `out.len()` staged bytes into `out`; returns how many.
    fn take(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.hi - self.lo);
        out[..n].copy_from_slice(&self.stage[self.lo..self.lo + n]);
        self.lo += n;
        n
    }
}

/// What one read step found.
pub(crate) enum ReadStep {
    /// A whole frame: its header, and a buffer holding header and body.
    Frame(Header, Vec<u8>),
    /// Nothing more for now.
    Pending,
    /// The peer closed the stream.
    Eof,
    /// A frame header that could not be accepted.
    Bad(FrameError),
}

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
}

impl Conn {
    pub fn new(
        peer: NodeId,
        stream: TcpStream,
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
        })
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
        if self.is_closed() {
            return Err((QueueError::Closed, frame));
        }
        let mut q = self.lock();
        if !self.fits_in(&q, frame.len(), reply) {
            return Err((QueueError::Full, frame));
        }
        let mut offset = 0;
        if !deferred && q.idle() {
            match sys::send_now(&self.stream, &frame) {
                Ok(n) if n == frame.len() => return Ok(Some(frame)),
                Ok(n) => offset = n,
                Err(_) => {
                    drop(q);
                    self.close();
                    return Err((QueueError::Closed, frame));
                }
            }
        } else if !deferred && q.only_data() && q.data.len() < 16 {
            // Deferred replies wait ahead: they go out together with this
            // frame, in one sendmsg.
            match self.send_with_queued(&mut q, &frame) {
                Ok(n) if n == frame.len() => return Ok(Some(frame)),
                Ok(n) => offset = n,
                Err(()) => {
                    drop(q);
                    self.close();
                    return Err((QueueError::Closed, frame));
                }
            }
        }
        q.account(frame.len(), reply, true);
        q.data.push_back(Item {
            frame,
            tag,
            reply,
            offset,
        });
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
        const MAX: usize = 16;
        let mut bufs: [&[u8]; MAX] = [&[]; MAX];
        // `extra` goes only behind every queued frame, never ahead of one.
        let extra = if q.data.len() < MAX { extra } else { &[] };
        let room = if extra.is_empty() { MAX } else { MAX - 1 };
        let mut n = 0;
        for (b, it) in bufs[..room].iter_mut().zip(q.data.iter()) {
            *b = &it.frame[it.offset..];
            n += 1;
        }
        let batch = n;
        if !extra.is_empty() {
            bufs[n] = extra;
            n += 1;
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
            q.account(it.frame.len(), it.reply, false);
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
        let mut freed = 0;
        for it in q.data.drain(..) {
            if it.tag == tag && !it.reply && it.offset == 0 {
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
            let (frame, offset, data) = {
                let mut q = self.lock();
                let item = loop {
                    if self.is_closed() {
                        return;
                    }
                    // A frame partly written already is finished first:
                    // nothing may go out in the middle of it.
                    if q.data.front().is_some_and(|it| it.offset > 0) {
                        let it = q.data.pop_front().expect("front exists");
                        break (it.frame, it.offset, Some(it.reply));
                    }
                    if let Some(f) = q.heartbeat.take() {
                        break (f, 0, None);
                    }
                    if let Some(f) = q.answer.take() {
                        break (f, 0, None);
                    }
                    if let Some(f) = q.control.pop_front() {
                        q.control_bytes -= f.len();
                        break (f, 0, None);
                    }
                    if let Some(it) = q.data.pop_front() {
                        break (it.frame, it.offset, Some(it.reply));
                    }
                    q = self.cv.wait(q).unwrap_or_else(|p| p.into_inner());
                };
                q.writing = true;
                item
            };
            // A write that makes no progress for the send timeout fails and
            // shuts the connection down.
            let ok = w.write_all(&frame[offset..]).is_ok();
            let mut q = self.lock();
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

    /// The reader, for the receive thread.
    pub fn reader(&self) -> MutexGuard<'_, ReadState> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reader, if no one else is reading.
    pub fn try_reader(&self) -> Option<MutexGuard<'_, ReadState>> {
        self.reader.try_lock().ok()
    }

    /// The socket's descriptor.
    pub fn fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.stream)
    }

    /// Waits up to `timeout` for bytes to read.
    pub fn wait_readable(&self, timeout: Duration) -> bool {
        sys::wait_readable(&self.stream, timeout)
    }

    /// Refills the staging buffer from the socket: `None` when bytes came.
    fn fill(&self, rs: &mut ReadState) -> Option<ReadStep> {
        if rs.lo == rs.hi {
            rs.lo = 0;
            rs.hi = 0;
        }
        match sys::recv_now(&self.stream, &mut rs.stage[rs.hi..]) {
            Ok(None) => Some(ReadStep::Pending),
            Ok(Some(0)) | Err(_) => Some(ReadStep::Eof),
            Ok(Some(n)) => {
                rs.hi += n;
                None
            }
        }
    }

    /// Reads what has arrived toward the next frame, without blocking.
    pub fn read_step(&self, rs: &mut ReadState, alloc: &dyn Fn(usize) -> Vec<u8>) -> ReadStep {
        loop {
            if let Some((_, buf)) = rs.body.as_mut() {
                let need = buf.len() - rs.body_got;
                if need == 0 {
                    let (h, buf) = rs.body.take().expect("some");
                    rs.hdr_got = 0;
                    return ReadStep::Frame(h, buf);
                }
                if rs.lo < rs.hi {
                    let got = rs.body_got;
                    let (_, buf) = rs.body.as_mut().expect("some");
                    let n = {
                        let avail = rs.hi - rs.lo;
                        let n = avail.min(need);
                        buf[got..got + n].copy_from_slice(&rs.stage[rs.lo..rs.lo + n]);
                        n
                    };
                    rs.lo += n;
                    rs.body_got += n;
                    continue;
                }
                if need >= STAGE / 2 {
                    // A large body goes straight into its buffer.
                    match sys::recv_now(&self.stream, &mut buf[rs.body_got..]) {
                        Ok(None) => return ReadStep::Pending,
                        Ok(Some(0)) | Err(_) => return ReadStep::Eof,
                        Ok(Some(n)) => rs.body_got += n,
                    }
                    continue;
                }
                if let Some(step) = self.fill(rs) {
                    return step;
                }
                continue;
            }
            if rs.lo == rs.hi {
                if let Some(step) = self.fill(rs) {
                    return step;
                }
            }
            let mut hdr = rs.hdr;
            let n = rs.take(&mut hdr[rs.hdr_got..]);
            rs.hdr = hdr;
            rs.hdr_got += n;
            if rs.hdr_got < frame::HEADER_LEN {
                continue;
            }
            let h = match Header::parse(&rs.hdr) {
                Ok(h) => h,
                Err(e) => return ReadStep::Bad(e),
            };
            let mut buf = alloc(frame::HEADER_LEN + h.len as usize);
            buf[..frame::HEADER_LEN].copy_from_slice(&rs.hdr);
            rs.body = Some((h, buf));
            rs.body_got = frame::HEADER_LEN;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    /// A connection's far end, read by a thread into one buffer.
    fn pair() -> (Conn, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let near = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (far, _) = l.accept().unwrap();
        let c = Conn::new(NodeId(1), near, 1 << 30, 1 << 30, Duration::from_secs(5)).unwrap();
        (c, far)
    }

    fn frame(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|k| (i * 31 + k * 7) as u8).collect()
    }

    /// Flushes until `n` frames are done or the time is up.
    fn flush_all(c: &Conn, n: usize) -> Vec<Vec<u8>> {
        let mut done = Vec::new();
        let end = Instant::now() + Duration::from_secs(10);
        while done.len() < n {
            c.flush_now(&mut |f| done.push(f));
            assert!(
                Instant::now() < end,
                "only {} of {n} frames went",
                done.len()
            );
        }
        done
    }

    #[test]
    fn a_flush_writes_deferred_frames_whole_and_in_order() {
        let (c, mut far) = pair();
        // More than one batch (16) of replies, of several sizes.
        let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(i, 50 + i * 13)).collect();
        for f in &frames {
            assert!(matches!(c.data(f.clone(), 0, true, true), Ok(None)));
        }
        let done = flush_all(&c, frames.len());
        assert!(done == frames, "each frame retired whole, in order");
        let want: Vec<u8> = frames.concat();
        let mut got = vec![0u8; want.len()];
        far.read_exact(&mut got).unwrap();
        assert!(got == want);
    }

    #[test]
    fn frames_the_socket_takes_in_part_go_on_from_where_they_stopped() {
        let (c, far) = pair();
        // Far more than the socket buffers hold: the first flushes stop
        // inside a frame.
        let frames: Vec<Vec<u8>> = (0..24).map(|i| frame(i, (1 << 20) + i)).collect();
        let want: Vec<u8> = frames.concat();
        let total = want.len();
        for f in &frames[..20] {
            assert!(matches!(c.data(f.clone(), 0, true, true), Ok(None)));
        }
        let mut early = Vec::new();
        c.flush_now(&mut |f| early.push(f));
        assert!(early.len() < 20, "the socket took every frame at once");
        assert!(
            c.lock().data.front().is_some_and(|it| it.offset > 0),
            "stopped inside a frame"
        );
        // A frame sent now (not deferred) queues behind the others.
        for f in &frames[20..] {
            assert!(matches!(c.data(f.clone(), 0, false, false), Ok(None)));
        }
        let reader = std::thread::spawn(move || {
            let mut far = far;
            let mut got = vec![0u8; total];
            far.read_exact(&mut got).unwrap();
            got
        });
        let mut done = early;
        done.extend(flush_all(&c, frames.len() - done.len()));
        assert!(done == frames, "each frame retired whole, in order");
        assert!(c.lock().data.is_empty());
        assert!(reader.join().unwrap() == want, "every byte, in order");
    }
}
