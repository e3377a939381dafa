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
//! or loses is said on its log ([`Server::set_log`]).
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

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::dma::{Dma, Unsealed, errno};
use crate::proto::{
    self, Capabilities, HEADER_LEN, Header, IRQ_ACTION_MASK, IRQ_ACTION_TRIGGER, IRQ_ACTION_UNMASK,
    IRQ_DATA_BOOL, IRQ_DATA_EVENTFD, IRQ_DATA_NONE, RegionInfo, Request,
};
use crate::sock;

/// The protocol version this server speaks (QEMU's client proposes 0.1).
pub const VERSION: (u16, u16) = (0, 1);

/// What the device's region handlers reach: the client's memory and the
/// interrupts.
pub struct Io<'a> {
    /// The client's DMA windows.
    pub dma: &'a mut Dma,
    /// The interrupt eventfds.
    pub irqs: &'a mut Irqs,
}

/// A device served over vfio-user. Region accesses reach it already
/// checked: an existing region, a direction it allows, inside its size.
pub trait Device {
    /// `VFIO_DEVICE_FLAGS_*`.
    fn flags(&self) -> u32;
    /// The regions, by index. Fixed for the device's life: the server
    /// asks once.
    fn regions(&self) -> Vec<RegionInfo>;
    /// Per interrupt type index: (`VFIO_IRQ_INFO_*` flags, count).
    fn irqs(&self) -> Vec<(u32, u32)>;
    /// Reads `buf.len()` bytes of `region` at `offset`; an errno on failure.
    fn read(&mut self, io: &mut Io, region: u32, offset: u64, buf: &mut [u8]) -> Result<(), i32>;
    /// Writes `data` to `region` at `offset`; an errno on failure.
    fn write(&mut self, io: &mut Io, region: u32, offset: u64, data: &[u8]) -> Result<(), i32>;
    /// `VFIO_USER_DEVICE_RESET`.
    fn reset(&mut self, io: &mut Io);

    /// The client left (its windows and eventfds are gone); the device
    /// keeps its state, but may drop what only that client could use.
    fn detached(&mut self) {}

    /// A DMA window was withdrawn, or every one was (the client left): a
    /// device that keeps a [`Dma::view`] drops it now, so the withdrawn
    /// memory is unmapped at once rather than at its next access.
    fn unmapped(&mut self) {}

    /// Descriptors the server waits on beside the client's socket (a TAP,
    /// say), appended to `out`; when one is readable, [`ready`] runs.
    ///
    /// [`ready`]: Device::ready
    fn wait_fds(&self, out: &mut Vec<RawFd>) {
        let _ = out;
    }

    /// A descriptor from [`wait_fds`](Device::wait_fds) is readable.
    fn ready(&mut self, io: &mut Io) {
        let _ = io;
    }

    /// How long until the device wants [`tick`](Device::tick) (periodic
    /// work: statistics, timers); `None` for never.
    fn next_tick(&self) -> Option<std::time::Duration> {
        None
    }

    /// Periodic work, when [`next_tick`](Device::next_tick) came due.
    fn tick(&mut self, io: &mut Io) {
        let _ = io;
    }

    /// The descriptor the client may mmap for `region`'s sparse-mmap
    /// areas, sent with the region's info.
    fn region_fd(&self, region: u32) -> Option<RawFd> {
        let _ = region;
        None
    }

    /// Whether the client can write device memory without a message (a
    /// mapped area), so the server must call [`poll`](Device::poll).
    fn polled(&self) -> bool {
        false
    }

    /// Looks at the memory the client writes directly; answers whether
    /// there was work.
    fn poll(&mut self, io: &mut Io) -> bool {
        let _ = io;
        false
    }
}

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

/// One interrupt type's eventfds, mask bits and latched interrupts.
#[derive(Debug, Default)]
struct IrqSet {
    fds: Vec<Option<OwnedFd>>,
    masked: Vec<bool>,
    pending: Vec<bool>,
}

/// The interrupts the client wired to eventfds (`VFIO_USER_DEVICE_SET_IRQS`).
#[derive(Debug, Default)]
pub struct Irqs {
    sets: Vec<IrqSet>,
}

fn signal(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writing 8 bytes from a live u64 to an eventfd; a full
    // counter (EAGAIN) means the interrupt is already pending.
    unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

impl Irqs {
    /// Sized for the device's interrupt types.
    pub fn new(counts: &[(u32, u32)]) -> Irqs {
        Irqs {
            sets: counts
                .iter()
                .map(|&(_, n)| IrqSet {
                    fds: (0..n).map(|_| None).collect(),
                    masked: vec![false; n as usize],
                    pending: vec![false; n as usize],
                })
                .collect(),
        }
    }

    /// Raises interrupt `sub` of type `index`: its eventfd is signalled,
    /// or, while masked, the interrupt is latched for the unmask. Answers
    /// whether an eventfd was signalled.
    pub fn trigger(&mut self, index: u32, sub: u32) -> bool {
        let Some(s) = self.sets.get_mut(index as usize) else {
            return false;
        };
        let i = sub as usize;
        if i >= s.fds.len() {
            return false;
        }
        if s.masked[i] {
            s.pending[i] = true;
            return false;
        }
        match &s.fds[i] {
            Some(fd) => {
                signal(fd);
                true
            }
            None => false,
        }
    }

    /// Drops every eventfd and mask (the client left).
    pub fn clear(&mut self) {
        for s in &mut self.sets {
            s.fds.iter_mut().for_each(|f| *f = None);
            s.masked.iter_mut().for_each(|m| *m = false);
            s.pending.iter_mut().for_each(|p| *p = false);
        }
    }

    fn set(
        &mut self,
        flags: u32,
        index: u32,
        start: u32,
        count: u32,
        data: &[u8],
        fds: &mut Vec<OwnedFd>,
    ) -> Result<(), i32> {
        let s = self.sets.get_mut(index as usize).ok_or(errno::EINVAL)?;
        let total = s.fds.len();
        if flags & IRQ_DATA_NONE != 0 && flags & IRQ_ACTION_TRIGGER != 0 && start == 0 && count == 0
        {
            // Disable every interrupt of the type.
            s.fds.iter_mut().for_each(|f| *f = None);
            return Ok(());
        }
        let end = start.checked_add(count).ok_or(errno::EINVAL)? as usize;
        if end > total {
            return Err(errno::EINVAL);
        }
        let range = start as usize..end;
        if flags & IRQ_DATA_EVENTFD != 0 {
            if flags & IRQ_ACTION_TRIGGER == 0 {
                return Err(errno::ENOTSUP);
            }
            if fds.is_empty() {
                // No descriptors: de-assign the range.
                range.for_each(|i| s.fds[i] = None);
                return Ok(());
            }
            if fds.len() != count as usize {
                return Err(errno::EINVAL);
            }
            for (i, fd) in range.zip(fds.drain(..)) {
                s.fds[i] = Some(fd);
            }
            return Ok(());
        }
        // DATA_NONE (every sub-index) or DATA_BOOL (those set).
        let chosen = |k: usize| flags & IRQ_DATA_BOOL == 0 || data[k] != 0;
        for (k, i) in range.enumerate() {
            if !chosen(k) {
                continue;
            }
            if flags & IRQ_ACTION_MASK != 0 {
                s.masked[i] = true;
            } else if flags & IRQ_ACTION_UNMASK != 0 {
                s.masked[i] = false;
                if std::mem::take(&mut s.pending[i]) {
                    if let Some(fd) = &s.fds[i] {
                        signal(fd);
                    }
                }
            } else if let Some(fd) = &s.fds[i] {
                signal(fd);
            }
        }
        Ok(())
    }
}

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
    log: Box<dyn FnMut(std::fmt::Arguments<'_>) + Send>,
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
            log: Box::new(|m| eprintln!("vfio-user: {m}")),
            faults_seen: crate::guard::faults(),
            fds: Vec::new(),
            polls: Vec::new(),
            busy: std::time::Instant::now(),
        }
    }

    /// Where the server says what it refused or lost (one line each: a
    /// refused DMA_MAP, memory that vanished); stderr by default.
    pub fn set_log(&mut self, log: Box<dyn FnMut(std::fmt::Arguments<'_>) + Send>) {
        self.log = log;
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

    /// Bytes of replies the client has not taken.
    fn queued(&self) -> usize {
        self.out.len() - self.out_head
    }

    /// Reads what has come of the current message, up to its end.
    fn read_some(&mut self, fd: RawFd) -> io::Result<Input> {
        loop {
            if self.have < HEADER_LEN {
                let n = match sock::recv_some(fd, &mut self.head[self.have..], &mut self.in_fds) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Input::Pending),
                    Err(e) => return Err(e),
                };
                if n == 0 {
                    if self.have == 0 {
                        return Ok(Input::Closed);
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the client left after {} bytes of a header", self.have),
                    ));
                }
                if self.have == 0 {
                    self.in_since = Some(Instant::now());
                }
                self.have += n;
                if self.have < HEADER_LEN {
                    continue;
                }
                let h = Header::parse(&self.head);
                if let Err(e) = proto::check_header(&h, self.ours.max_data_xfer_size) {
                    // The size cannot be trusted: answer, then stop reading.
                    let _ = self.send_reply(fd, h.error_reply(e.errno()).to_bytes(), &[], None);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
                }
                // check_header bounds the size by max_message.
                self.buf.resize(h.size as usize - HEADER_LEN, 0);
            }
            let want = self.buf.len();
            let got = self.have - HEADER_LEN;
            if got == want {
                self.have = 0;
                self.in_since = None;
                return Ok(Input::Message(Header::parse(&self.head)));
            }
            let n = match sock::recv_some(fd, &mut self.buf[got..], &mut self.in_fds) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Input::Pending),
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the client left after {got} of a message's {want} body bytes"),
                ));
            }
            self.have += n;
        }
    }

    /// Sends a reply, or what the socket does not take of it now into the
    /// queue; `give` goes with its first byte.
    fn send_reply(
        &mut self,
        fd: RawFd,
        head: [u8; HEADER_LEN],
        body: &[u8],
        give: Option<RawFd>,
    ) -> io::Result<()> {
        // SAFETY: a descriptor the device keeps open for its life
        // (Device::region_fd), borrowed for this call.
        let give = give.map(|g| unsafe { BorrowedFd::borrow_raw(g) });
        let mut sent = 0;
        if self.queued() == 0 {
            let fds: &[&dyn AsRawFd] = match &give {
                Some(g) => &[g],
                None => &[],
            };
            sent = match sock::send_some(fd, &[&head, body], 0, fds) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => return Err(e),
            };
            if sent == HEADER_LEN + body.len() {
                return Ok(());
            }
            self.out.clear();
            self.out_head = 0;
            self.out_since = Instant::now();
        }
        if sent == 0 {
            if let Some(g) = give {
                self.out_fds
                    .push_back((self.out.len(), g.try_clone_to_owned()?));
            }
        }
        let at = sent.min(HEADER_LEN);
        self.out.extend_from_slice(&head[at..]);
        self.out
            .extend_from_slice(&body[sent.saturating_sub(HEADER_LEN)..]);
        Ok(())
    }

    /// Writes what the socket takes of the queue now.
    fn flush(&mut self, fd: RawFd) -> io::Result<()> {
        while self.out_head < self.out.len() {
            // Up to the next message that carries descriptors, which must
            // go with its first byte.
            let (end, give) = match self.out_fds.front() {
                Some((at, f)) if *at == self.out_head => (
                    self.out_fds
                        .get(1)
                        .map_or(self.out.len(), |(next, _)| *next),
                    Some(f),
                ),
                Some((at, _)) => (*at, None),
                None => (self.out.len(), None),
            };
            let fds: &[&dyn AsRawFd] = match &give {
                Some(g) => &[*g],
                None => &[],
            };
            let n = match sock::send_some(fd, &[&self.out[self.out_head..end]], 0, fds) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            if give.is_some() {
                self.out_fds.pop_front();
            }
            self.out_head += n;
            self.out_since = Instant::now();
        }
        if self.out_head == self.out.len() {
            self.out.clear();
            self.out_head = 0;
        } else if self.out_head >= self.out.len() / 2 {
            // Keep the queue's buffer from growing: drop what was sent.
            self.out.drain(..self.out_head);
            for (at, _) in &mut self.out_fds {
                *at -= self.out_head;
            }
            self.out_head = 0;
        }
        Ok(())
    }

    /// Logs each guarded window whose memory vanished since the last look.
    fn report_vanished(&mut self) {
        let f = crate::guard::faults();
        if f == self.faults_seen {
            return;
        }
        self.faults_seen = f;
        while let Some((address, size)) = self.dma.take_vanished() {
            (self.log)(format_args!(
                "the memory behind DMA window {address:#x} ({size} bytes) vanished: the client \
                 shrank its file; DMA there fails from now on"
            ));
        }
    }

    /// Waits until the client's socket has one of `events` (or a hangup
    /// or error), serving the device's own descriptors, timers and polled
    /// memory meanwhile (an idle device sleeps; see the module's note on
    /// polled devices); answers the socket's events, or 0 at `deadline`.
    fn wait(&mut self, sock: RawFd, events: i16, deadline: Option<Instant>) -> io::Result<i16> {
        loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| d <= now) {
                return Ok(0);
            }
            let polled = self.device.polled();
            if polled {
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                if self.device.poll(&mut io) {
                    self.busy = Instant::now();
                }
            }
            self.fds.clear();
            self.device.wait_fds(&mut self.fds);
            let tick = self.device.next_tick();
            if tick == Some(Duration::ZERO) {
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.tick(&mut io);
                continue;
            }
            // Busy: look again at once (a wakeup from poll costs tens of
            // microseconds on a small machine). Idle: sleep until something
            // comes, or, with polled memory, for growing naps.
            let idle = self.busy.elapsed();
            let nap = if idle < HOT {
                Some(Duration::ZERO)
            } else if polled {
                Some((idle / 4).min(COLD_WAIT))
            } else {
                None
            };
            let until = deadline.map(|d| d.saturating_duration_since(now));
            let timeout = [tick, nap, until].into_iter().flatten().min();
            self.polls.clear();
            self.polls.push(libc::pollfd {
                fd: sock,
                events,
                revents: 0,
            });
            self.polls.extend(self.fds.iter().map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }));
            // Microseconds matter for a polled device, so ppoll's timespec.
            let ts = timeout.map(|t| {
                let t = t.min(Duration::from_secs(60));
                libc::timespec {
                    tv_sec: t.as_secs() as libc::time_t,
                    tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
                }
            });
            // SAFETY: ppoll over a live array of pollfd of the given length,
            // with a live timespec or none, and no signal mask change.
            let n = unsafe {
                libc::ppoll(
                    self.polls.as_mut_ptr(),
                    self.polls.len() as libc::nfds_t,
                    ts.as_ref().map_or(std::ptr::null(), |t| t as *const _),
                    std::ptr::null(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.polls[1..].iter().any(|p| p.revents != 0) {
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.ready(&mut io);
                self.busy = Instant::now();
            }
            if self.polls[0].revents != 0 {
                self.busy = Instant::now();
                return Ok(self.polls[0].revents);
            }
        }
    }

    fn answer(
        &mut self,
        h: &Header,
        body: &[u8],
        fds: &mut Vec<OwnedFd>,
        versioned: &mut bool,
    ) -> Answer {
        let req = match proto::decode(h, body, self.ours.max_data_xfer_size) {
            Ok(r) => r,
            Err(e) => return Answer::Error(e.errno()),
        };
        if !*versioned && !matches!(req, Request::Version { .. }) {
            return Answer::Error(errno::EINVAL);
        }
        let give = match req {
            Request::DeviceGetRegionInfo { index, .. } => self.device.region_fd(index),
            _ => None,
        };
        let mut out = std::mem::take(&mut self.reply);
        out.clear();
        let r = self.handle(req, fds, versioned, &mut out);
        self.reply = out;
        match r {
            Ok(()) => Answer::Body(give),
            Err(e) => Answer::Error(e),
        }
    }

    fn region(&self, index: u32, offset: u64, len: usize, need: u32) -> Result<(), i32> {
        let r = self.regions.get(index as usize).ok_or(errno::EINVAL)?;
        let end = offset.checked_add(len as u64).ok_or(errno::EINVAL)?;
        if end > r.size || r.flags & need == 0 {
            return Err(errno::EINVAL);
        }
        Ok(())
    }

    fn handle(
        &mut self,
        req: Request,
        fds: &mut Vec<OwnedFd>,
        versioned: &mut bool,
        b: &mut Vec<u8>,
    ) -> Result<(), i32> {
        let mut io = Io {
            dma: &mut self.dma,
            irqs: &mut self.irqs,
        };
        match req {
            // The client's capabilities matter for what a server sends it
            // (DMA_READ/WRITE messages, fds per message); this one sends
            // replies only, each without descriptors.
            Request::Version { major, minor, .. } => {
                if major != VERSION.0 {
                    return Err(errno::ENOTSUP);
                }
                *versioned = true;
                b.extend_from_slice(&major.to_le_bytes());
                b.extend_from_slice(&minor.min(VERSION.1).to_le_bytes());
                b.extend_from_slice(&self.ours.to_json());
                Ok(())
            }
            Request::DmaMap {
                flags,
                offset,
                address,
                size,
            } => {
                if fds.len() > 1 {
                    return Err(errno::EINVAL);
                }
                io.dma
                    .map(address, size, offset, flags, fds.pop())
                    .map_err(|e| {
                        (self.log)(format_args!("DMA_MAP refused: {e}"));
                        e.errno()
                    })
            }
            Request::DmaUnmap {
                argsz,
                address,
                size,
            } => {
                io.dma.unmap(address, size)?;
                self.device.unmapped();
                // The reply repeats the request's entry.
                b.extend_from_slice(&argsz.min(24).to_le_bytes());
                b.extend_from_slice(&0u32.to_le_bytes());
                b.extend_from_slice(&address.to_le_bytes());
                b.extend_from_slice(&size.to_le_bytes());
                Ok(())
            }
            Request::DeviceGetInfo { .. } => {
                b.extend_from_slice(&proto::device_info(
                    self.device.flags(),
                    self.regions.len() as u32,
                    self.device.irqs().len() as u32,
                ));
                Ok(())
            }
            Request::DeviceGetRegionInfo { argsz, index } => {
                let r = self.regions.get(index as usize).ok_or(errno::EINVAL)?;
                b.extend_from_slice(&r.reply(argsz));
                Ok(())
            }
            Request::DeviceGetIrqInfo { index, .. } => {
                let irqs = self.device.irqs();
                let &(flags, count) = irqs.get(index as usize).ok_or(errno::EINVAL)?;
                b.extend_from_slice(&proto::irq_info(flags, index, count));
                Ok(())
            }
            Request::DeviceSetIrqs {
                flags,
                index,
                start,
                count,
                data,
            } => {
                io.irqs.set(flags, index, start, count, data, fds)?;
                Ok(())
            }
            Request::RegionRead {
                offset,
                region,
                count,
            } => {
                self.region(region, offset, count as usize, proto::REGION_READ)?;
                b.extend_from_slice(&proto::region_io_reply(offset, region, count));
                b.resize(16 + count as usize, 0);
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.read(&mut io, region, offset, &mut b[16..])
            }
            Request::RegionWrite {
                offset,
                region,
                data,
            } => {
                self.region(region, offset, data.len(), proto::REGION_WRITE)?;
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.write(&mut io, region, offset, data)?;
                b.extend_from_slice(&proto::region_io_reply(offset, region, data.len() as u32));
                Ok(())
            }
            Request::DeviceReset => {
                self.device.reset(&mut io);
                Ok(())
            }
        }
    }
}
