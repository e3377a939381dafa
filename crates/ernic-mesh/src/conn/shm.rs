//! A connection's shared-memory carrier: once the peer on this host has
//! taken the ring this side made (`same_host`), its data frames go through
//! the ring instead of the socket, and heartbeats and control frames stay
//! on TCP.
//!
//! One ordered stream, whichever carrier: the switch is a [`Kind::Ring`]
//! frame, the last data-carrying frame on TCP, written while nothing else
//! is queued or being written (under the queue's lock), after which every
//! data frame takes the ring. The peer reads the ring only once it has
//! read that frame, so it has taken every frame that came before it.
//! A frame that does not fit the ring waits in the queue as one that the
//! socket does not take does, for the send thread, which sleeps for room
//! on the ring's bell and gives up after the send timeout (closing the
//! connection, as a stuck socket does).
//!
//! [`Kind::Ring`]: crate::frame::Kind::Ring

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Conn, Queue, ReadState};
use crate::frame::{self, FrameError, Header};
use crate::ring::Direction;

/// The smallest record a frame is cut into (but its last), in a ring of
/// 8 KiB or more: a frame's first record holds at least its header.
const MIN_CHUNK: usize = 4096;

/// The smallest record for `ring`: [`MIN_CHUNK`], or half a smaller ring
/// (so a record always fits an empty one).
fn chunk(ring: &Direction) -> usize {
    MIN_CHUNK.min(ring.ring.capacity() / 2)
}

impl Conn {
    /// The ring data frames go through now, if the switch happened.
    pub(crate) fn tx_ring(&self) -> Option<&Direction> {
        if !self.same_host.tx_on.load(Ordering::Acquire) {
            return None;
        }
        self.same_host.ring_out.get()
    }

    /// Queues the switch (`marker`, a [`Kind::Ring`] frame) behind what
    /// is queued: the send thread writes it on the socket, and from then
    /// on data frames take the ring this side handed over.
    ///
    /// [`Kind::Ring`]: crate::frame::Kind::Ring
    pub(crate) fn queue_switch(&self, marker: Vec<u8>) {
        if self.same_host.ring_out.get().is_none() || self.is_closed() {
            return;
        }
        let mut q = self.lock();
        if q.switch_queued || self.same_host.tx_on.load(Ordering::Relaxed) {
            return;
        }
        q.switch_queued = true;
        // A reply, so that cancel() never takes it back; not counted
        // against the queue's bounds.
        q.data.push_back(super::Item {
            frame: marker,
            tag: 0,
            reply: true,
            offset: 0,
            not_before: None,
            switch: true,
        });
        drop(q);
        self.cv.notify_all();
    }

    /// Pushes what is left of `frame` (from `offset`) into the ring as
    /// far as it fits, in records of at least [`MIN_CHUNK`] (or the rest);
    /// answers whether all of it went.
    pub(super) fn ring_push(
        &self,
        ring: &Direction,
        frame: &[u8],
        offset: &mut usize,
    ) -> Result<bool, ()> {
        let min = chunk(ring);
        while *offset < frame.len() {
            let n = ring.send_some(&frame[*offset..], min).map_err(|_| ())?;
            if n == 0 {
                return Ok(false);
            }
            *offset += n;
        }
        self.stats.shm_sent.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// The queued data frames (then `extra`), into the ring as far as they
    /// fit: `send_batch`'s work once the ring carries data. Returns
    /// whether every queued frame went whole, and how much of `extra` did.
    pub(super) fn push_batch(
        &self,
        ring: &Direction,
        q: &mut Queue,
        extra: &[u8],
        done: &mut dyn FnMut(Vec<u8>),
    ) -> Result<(bool, usize), ()> {
        let now = (q.held > 0).then(Instant::now);
        while let Some(it) = q.data.front_mut() {
            if now.is_some_and(|now| it.held(now)) {
                return Ok((false, 0));
            }
            let mut off = it.offset;
            let whole = self.ring_push(ring, &it.frame, &mut off)?;
            it.offset = off;
            if !whole {
                return Ok((false, 0));
            }
            let it = q.data.pop_front().expect("front exists");
            q.retire(&it);
            self.stats.sent(it.frame.len());
            done(it.frame);
        }
        if extra.is_empty() || q.held > 0 {
            return Ok((true, 0));
        }
        let mut off = 0;
        self.ring_push(ring, extra, &mut off)?;
        Ok((true, off))
    }

    /// Writes what is left of a data frame (from `offset`) into the ring,
    /// sleeping for room up to the send timeout (the send thread's write).
    pub(super) fn ring_write(
        &self,
        ring: &Direction,
        frame: &[u8],
        mut offset: usize,
    ) -> Result<(), ()> {
        // As a socket's timeout: no progress for the send timeout.
        let mut end = Instant::now() + self.send_timeout;
        loop {
            if self.is_closed() {
                return Err(());
            }
            let before = offset;
            if self.ring_push(ring, frame, &mut offset)? {
                return Ok(());
            }
            let now = Instant::now();
            if offset > before {
                end = now + self.send_timeout;
            }
            if now >= end {
                return Err(());
            }
            let wait = (end - now).min(Duration::from_millis(100));
            let need = (frame.len() - offset).min(chunk(ring)) + 4;
            ring.sleep_for_room(need, None, wait);
        }
    }

    /// The next frame from the peer's ring, once the peer switched to it:
    /// its header (checked as a socket's is) and a buffer from `buffer`
    /// holding header and body, assembled from as many records as the
    /// peer cut it into (`rs` keeps a frame begun until the rest comes).
    pub(crate) fn ring_frame(
        &self,
        rs: &mut ReadState,
        buffer: &dyn Fn(usize) -> Vec<u8>,
    ) -> Result<Option<(Header, Vec<u8>)>, FrameError> {
        if !self.same_host.rx_on.load(Ordering::Acquire) {
            return Ok(None);
        }
        let Some(ring) = self.same_host.ring_in.get() else {
            return Ok(None);
        };
        loop {
            if let Some((_, buf, got)) = rs.ring_part.as_mut() {
                // A record never holds more than the rest of its frame.
                match ring.recv_to(&mut buf[*got..]) {
                    Ok(Some(n)) => *got += n,
                    Ok(None) => return Ok(None),
                    Err(_) => return Err(FrameError::Ring),
                }
                if *got == buf.len() {
                    self.stats.shm_received.fetch_add(1, Ordering::Relaxed);
                    let (h, buf, _) = rs.ring_part.take().expect("just there");
                    return Ok(Some((h, buf)));
                }
                continue;
            }
            let mut head = [0u8; frame::HEADER_LEN];
            match ring.ring.peek(&mut head) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(_) => return Err(FrameError::Ring),
            }
            let h = Header::parse(&head)?;
            // Sized by a header checked against the frame bound.
            let buf = buffer(frame::HEADER_LEN + h.len as usize);
            rs.ring_part = Some((h, buf, 0));
        }
    }

    /// Whether the peer's ring holds a frame for this side to read.
    pub(crate) fn ring_readable(&self) -> bool {
        self.same_host.rx_on.load(Ordering::Acquire)
            && self
                .same_host
                .ring_in
                .get()
                .is_some_and(|r| r.ring.readable())
    }

    /// Waits up to `timeout` for a frame on the socket or, once the peer
    /// switched, in its ring.
    pub(crate) fn wait_any(&self, timeout: Duration) -> bool {
        let ring = self
            .same_host
            .ring_in
            .get()
            .filter(|_| self.same_host.rx_on.load(Ordering::Acquire));
        match ring {
            None => self.wait_readable(timeout),
            Some(r) => {
                use std::os::fd::AsFd;
                r.sleep_for_data(Some(self.stream.as_fd()), timeout);
                r.ring.readable() || self.wait_readable(Duration::ZERO)
            }
        }
    }
}
