//! A vfio-user server: one client at a time on a UNIX socket, serving a
//! [`Device`] — its regions, its interrupts, its DMA into the client's
//! memory.
//!
//! Each message is checked before it is believed ([`proto`]); a message
//! that cannot be served gets an error reply and the connection goes on; a
//! message whose size cannot be trusted (the stream cannot be re-framed)
//! ends the connection. When the client leaves, its DMA windows are
//! unmapped (the device is told, [`Device::unmapped`], so nothing it holds
//! keeps a mapping) and its eventfds closed; the device keeps its state
//! for the next client.
//!
//! The client cannot hold the loop. The socket is never waited on for a
//! read or a write: a message is read as its bytes come, between the
//! device's other work, and a reply the client does not take at once is
//! queued. While the queue holds at least a largest message
//! ([`proto::max_message`] of the transfer limit) or [`sock::MAX_FDS`]
//! descriptors, no further request is read, so the queue never holds more
//! than two largest messages (2 × (`max_data_xfer_size` + 32) bytes). A
//! client that leaves queued replies unread, or a message half sent, for
//! [`Options::stall_timeout`] ([`STALL_TIMEOUT`] unless set) is
//! disconnected, with an error that says which. Memory the client shares
//! is refused unless sealed against shrinking, or guarded when
//! [`Options::unsealed`] says so ([`crate::dma`]); what the server refuses
//! or loses is logged through `tracing` (at `warn`; each refused request at
//! `debug`, with its command and errno).
//!
//! The loop waits in ppoll(2) on the client's socket and the device's own
//! descriptors (a TAP) with the device's next timer as the timeout. For
//! half a millisecond after a message or any work it does not sleep at all
//! (it looks again at once: a wakeup costs tens of microseconds on a small
//! machine); after that an idle device sleeps until something comes. A
//! device with memory the client writes without a message (shared
//! doorbell pages) is polled on every pass, and once idle it naps for
//! spells that grow to a millisecond, so it does not spin while idle and
//! has no sleep floor while busy.
//!
//! One file a part: `device` (what a served device implements),
//! `irqs` (the client's interrupt eventfds), `stream` (reading messages and
//! queueing replies without waiting on the socket), `requests` (what each
//! request does).

mod device;
mod irqs;
mod requests;
mod stream;

pub use device::{Device, Io};
pub use irqs::Irqs;

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::dma::{Dma, Unsealed};
use crate::proto::{self, Capabilities, HEADER_LEN, Header, RegionInfo};
use crate::sock;

/// The protocol version this server speaks (QEMU's client proposes 0.1).
pub const VERSION: (u16, u16) = (0, 1);

/// How long a client may leave replies unread, or a message half sent,
/// before it is disconnected (unless [`Options::stall_timeout`] says
/// otherwise).
pub const STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A server's limits and choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// What to do with memory the client could shrink ([`crate::dma`]).
    pub unsealed: Unsealed,
    /// How long a client may leave replies unread, or a message half
    /// sent, before it is disconnected.
    pub stall_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            unsealed: Unsealed::Refuse,
            stall_timeout: STALL_TIMEOUT,
        }
    }
}

/// While the device had a message or work this recently, the loop does
/// not sleep.
const HOT: std::time::Duration = std::time::Duration::from_micros(500);
/// The longest sleep of an idle polled device: the latency of its first
/// doorbell after a quiet spell.
const COLD_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// The server of one device.
pub struct Server<D: Device> {
    /// The device.
    pub device: D,
    /// The attached client's DMA windows.
    pub dma: Dma,
    /// The attached client's interrupt eventfds.
    pub irqs: Irqs,
    ours: Capabilities,
    /// The device's regions, asked once.
    regions: Vec<RegionInfo>,
    opts: Options,
    // The message coming in: its header, how many of its bytes are here,
    // its body, its descriptors, and when its first byte came.
    head: [u8; HEADER_LEN],
    have: usize,
    buf: Vec<u8>,
    in_fds: Vec<OwnedFd>,
    in_since: Option<Instant>,
    /// The reply being built, reused from message to message.
    reply: Vec<u8>,
    // Replies the client has not taken yet: bytes from `out_head` on, and
    // the descriptors that go with the byte at each offset.
    out: Vec<u8>,
    out_head: usize,
    out_fds: VecDeque<(usize, OwnedFd)>,
    // When the queue last moved (or was started).
    out_since: Instant,
    // Guarded windows seen vanish so far (crate::guard::faults).
    faults_seen: u64,
    fds: Vec<RawFd>,
    polls: Vec<libc::pollfd>,
    // When a polled device last had work.
    busy: std::time::Instant,
}

/// What reading the socket gave.
enum Input {
    /// A whole message: its header (the body is in `Server::buf`).
    Message(Header),
    /// Not a whole message yet.
    Pending,
    /// The client closed between messages.
    Closed,
}

/// How a message was answered.
enum Answer {
    /// The body is in `Server::reply`; a descriptor may go with it.
    Body(Option<RawFd>),
    Error(i32),
}

impl<D: Device> Server<D> {
    /// A server for `device`, announcing `ours` in the version handshake,
    /// with the default [`Options`].
    pub fn new(device: D, ours: Capabilities) -> Server<D> {
        Server::with_options(device, ours, Options::default())
    }

    /// A server for `device`, announcing `ours`, with `opts`.
    pub fn with_options(device: D, ours: Capabilities, opts: Options) -> Server<D> {
        let irqs = Irqs::new(&device.irqs());
        let regions = device.regions();
        let mut dma = Dma::new(ours.max_dma_maps as usize);
        dma.set_unsealed(opts.unsealed);
        Server {
            device,
            dma,
            irqs,
            ours,
            regions,
            opts,
            head: [0; HEADER_LEN],
            have: 0,
            buf: Vec::new(),
            in_fds: Vec::new(),
            in_since: None,
            reply: Vec::new(),
            out: Vec::new(),
            out_head: 0,
            out_fds: VecDeque::new(),
            out_since: Instant::now(),
            faults_seen: crate::guard::faults(),
            fds: Vec::new(),
            polls: Vec::new(),
            busy: std::time::Instant::now(),
        }
    }

    /// Serves one client until it leaves (`Ok`) or sends something the
    /// stream cannot recover from, or stalls ([`Options::stall_timeout`])
    /// (`Err`, after an error reply where one can be sent). Either way the
    /// client's windows and eventfds are gone afterwards and the device is
    /// as the client left it.
    pub fn serve(&mut self, stream: &UnixStream) -> io::Result<()> {
        let r = self.serve_inner(stream);
        self.have = 0;
        self.in_fds.clear();
        self.in_since = None;
        self.out.clear();
        self.out_head = 0;
        self.out_fds.clear();
        self.dma.clear();
        self.device.unmapped();
        self.irqs.clear();
        self.device.detached();
        r
    }

    fn serve_inner(&mut self, stream: &UnixStream) -> io::Result<()> {
        let fd = stream.as_raw_fd();
        let mut versioned = false;
        let limit = proto::max_message(self.ours.max_data_xfer_size);
        let stall = self.opts.stall_timeout;
        loop {
            self.report_vanished();
            if self.queued() > 0 {
                self.flush(fd)?;
            }
            let now = Instant::now();
            if self.queued() > 0 && now.duration_since(self.out_since) >= stall {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the client took no reply for {stall:?} ({} bytes queued): disconnected",
                        self.queued()
                    ),
                ));
            }
            if let Some(t) = self.in_since.filter(|t| now.duration_since(*t) >= stall) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the client sent {} bytes of a message and not the rest within {stall:?} \
                         (started {:?} ago): disconnected",
                        self.have,
                        now.duration_since(t)
                    ),
                ));
            }
            // Room for another reply: read the next request.
            let room = self.queued() < limit && self.out_fds.len() < sock::MAX_FDS;
            let mut events = 0;
            if room {
                events |= libc::POLLIN;
            }
            if self.queued() > 0 {
                events |= libc::POLLOUT;
            }
            let deadline = match (self.queued() > 0, self.in_since) {
                (true, Some(t)) => Some((self.out_since + stall).min(t + stall)),
                (true, None) => Some(self.out_since + stall),
                (false, Some(t)) => Some(t + stall),
                (false, None) => None,
            };
            let revents = self.wait(fd, events, deadline)?;
            if !room || revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) == 0 {
                continue;
            }
            let h = match self.read_some(fd)? {
                Input::Message(h) => h,
                Input::Pending => continue,
                Input::Closed => return Ok(()),
            };
            let body = std::mem::take(&mut self.buf);
            let mut fds = std::mem::take(&mut self.in_fds);
            let answer = self.answer(&h, &body, &mut fds, &mut versioned);
            fds.clear();
            self.in_fds = fds;
            self.buf = body;
            if h.no_reply() {
                continue;
            }
            let reply = std::mem::take(&mut self.reply);
            let r = match answer {
                Answer::Body(give) => {
                    self.send_reply(fd, h.reply(reply.len()).to_bytes(), &reply, give)
                }
                Answer::Error(e) => self.send_reply(fd, h.error_reply(e).to_bytes(), &[], None),
            };
            self.reply = reply;
            r?;
        }
    }
}
