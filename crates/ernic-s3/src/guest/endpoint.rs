//! The store's side of the guest's Ethernet segment as the device sees it:
//! [`GuestEndpoint`], an [`ernic_ionic::tap::FrameEndpoint`]. It decides
//! which frames the guest sent are the store's ([`claims`]), hands those to
//! the stack's thread, and gives the device the frames the stack sends, in
//! order.
//!
//! It runs on the device's thread, so it never blocks: a claimed frame
//! that finds the stack's channel full is dropped and counted (TCP sends it
//! again; ARP and ping ask again), and the queue towards the guest is
//! bounded ([`TO_GUEST`] frames; the stack stops sending while it is
//! full). It reads only the Ethernet, ARP and IPv4 fields it needs, after
//! checking the frame is long enough for them: no frame, however short or
//! garbled, makes it panic.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use super::{Counters, Msg};

/// The most frames waiting for the guest; past this the stack holds its
/// output back (and a frame it cannot hold back is dropped and counted).
pub const TO_GUEST: usize = 1024;

const ETH_HEADER: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const ARP_LEN: usize = 28;
const IPV4_MIN_HEADER: usize = 20;

/// Whether a frame the guest sent is the store's: an ARP packet whose
/// target protocol address is `ip`, or an IPv4 packet to `ip`. Any frame
/// too short for those fields, or of another type, is not.
pub fn claims(frame: &[u8], ip: Ipv4Addr) -> bool {
    let Some(ethertype) = frame.get(12..ETH_HEADER) else {
        return false;
    };
    let payload = &frame[ETH_HEADER..];
    match u16::from_be_bytes([ethertype[0], ethertype[1]]) {
        ETHERTYPE_ARP => {
            // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4; the target
            // protocol address is the last four bytes.
            payload.len() >= ARP_LEN
                && payload[0..6] == [0, 1, 0x08, 0x00, 6, 4]
                && payload[24..28] == ip.octets()
        }
        ETHERTYPE_IPV4 => {
            payload.len() >= IPV4_MIN_HEADER
                && payload[0] >> 4 == 4
                && payload[16..20] == ip.octets()
        }
        _ => false,
    }
}

/// Frames for the guest, shared by the stack (which pushes) and the
/// endpoint (which takes). The notification socket holds data exactly
/// while a frame waits (here or in the endpoint's hand): a byte is written
/// when the queue goes from empty to not, and all are read when the last
/// waiting frame was delivered; both happen under the lock.
#[derive(Debug)]
pub(crate) struct Outbox {
    queue: Mutex<VecDeque<Vec<u8>>>,
    /// The writing end (the stack's side).
    notify: UnixStream,
}

impl Outbox {
    /// A bounded outbox and the reading end of its notification socket.
    pub(crate) fn new() -> std::io::Result<(Arc<Outbox>, UnixStream)> {
        let (w, r) = UnixStream::pair()?;
        w.set_nonblocking(true)?;
        r.set_nonblocking(true)?;
        let outbox = Outbox {
            queue: Mutex::new(VecDeque::with_capacity(TO_GUEST)),
            notify: w,
        };
        Ok((Arc::new(outbox), r))
    }

    /// Whether another frame fits.
    pub(crate) fn has_room(&self) -> bool {
        self.lock().len() < TO_GUEST
    }

    /// Queues a frame for the guest; false (and the frame dropped) when
    /// the queue is full.
    pub(crate) fn push(&self, frame: Vec<u8>) -> bool {
        let mut q = self.lock();
        if q.len() >= TO_GUEST {
            return false;
        }
        if q.is_empty() {
            // The socket's buffer holds far more than the one byte per
            // empty-to-not transition it can see between two drains.
            let _ = (&self.notify).write(&[1]);
        }
        q.push_back(frame);
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Vec<u8>>> {
        // A panic elsewhere while holding the lock leaves a queue of whole
        // frames; it is still usable.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The store's endpoint on the guest's segment (see the module's doc).
#[derive(Debug)]
pub struct GuestEndpoint {
    ip: Ipv4Addr,
    to_stack: SyncSender<Msg>,
    outbox: Arc<Outbox>,
    /// The reading end of the outbox's notification socket.
    ready: UnixStream,
    /// The frame `peek_rx` took from the outbox and the device has not
    /// delivered yet.
    head: Option<Vec<u8>>,
    counters: Arc<Counters>,
    /// Set when the stack is woken for this endpoint's frames, cleared by
    /// the stack when it looks.
    woken: Arc<AtomicBool>,
}

impl GuestEndpoint {
    pub(crate) fn new(
        ip: Ipv4Addr,
        to_stack: SyncSender<Msg>,
        outbox: Arc<Outbox>,
        ready: UnixStream,
        counters: Arc<Counters>,
        woken: Arc<AtomicBool>,
    ) -> GuestEndpoint {
        GuestEndpoint {
            ip,
            to_stack,
            outbox,
            ready,
            head: None,
            counters,
            woken,
        }
    }

    /// The store's IP on the segment.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }
}

impl ernic_ionic::tap::FrameEndpoint for GuestEndpoint {
    fn claim_tx(&mut self, frame: &[u8]) -> bool {
        if !claims(frame, self.ip) {
            return false;
        }
        match self.to_stack.try_send(Msg::Frame(frame.to_vec())) {
            Ok(()) => Counters::bump(&self.counters.claimed),
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                Counters::bump(&self.counters.claimed);
                Counters::bump(&self.counters.dropped_from_guest);
            }
        }
        true
    }

    fn peek_rx(&mut self) -> Option<&[u8]> {
        if self.head.is_none() {
            self.head = self.outbox.lock().pop_front();
            if self.head.is_some()
                && !self.woken.swap(true, Ordering::AcqRel)
                && self.to_stack.try_send(Msg::Wake).is_err()
            {
                // Room was made in the outbox, so a stack holding output
                // back may go on; a full channel wakes it anyway.
                self.woken.store(false, Ordering::Release);
            }
        }
        self.head.as_deref()
    }

    fn pop_rx(&mut self) {
        if self.head.take().is_some() {
            Counters::bump(&self.counters.delivered);
        }
        let q = self.outbox.lock();
        if q.is_empty() {
            let mut sink = [0u8; 64];
            while matches!((&self.ready).read(&mut sink), Ok(n) if n > 0) {}
        }
    }

    fn fd(&self) -> RawFd {
        self.ready.as_raw_fd()
    }
}
