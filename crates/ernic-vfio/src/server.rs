//! A vfio-user server: one client at a time on a UNIX socket, serving a
//! [`Device`] — its regions, its interrupts, its DMA into the client's
//! memory.
//!
//! Each message is checked before it is believed ([`proto`]); a message
//! that cannot be served gets an error reply and the connection goes on; a
//! message whose size cannot be trusted (the stream cannot be re-framed)
//! ends the connection. When the client leaves, its DMA windows are
//! unmapped and its eventfds closed; the device keeps its state for the
//! next client.
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

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::dma::{Dma, errno};
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
    buf: Vec<u8>,
    /// The reply being built, reused from message to message.
    reply: Vec<u8>,
    fds: Vec<RawFd>,
    polls: Vec<libc::pollfd>,
    // When a polled device last had work.
    busy: std::time::Instant,
}

/// How a message was answered.
enum Answer {
    /// The body is in `Server::reply`; a descriptor may go with it.
    Body(Option<RawFd>),
    Error(i32),
}

impl<D: Device> Server<D> {
    /// A server for `device`, announcing `ours` in the version handshake.
    pub fn new(device: D, ours: Capabilities) -> Server<D> {
        let irqs = Irqs::new(&device.irqs());
        let regions = device.regions();
        Server {
            device,
            dma: Dma::new(ours.max_dma_maps as usize),
            irqs,
            ours,
            regions,
            buf: Vec::new(),
            reply: Vec::new(),
            fds: Vec::new(),
            polls: Vec::new(),
            busy: std::time::Instant::now(),
        }
    }

    /// Serves one client until it leaves (`Ok`) or sends something the
    /// stream cannot recover from (`Err`, after an error reply where one
    /// can be sent). Either way the client's windows and eventfds are gone
    /// afterwards and the device is as the client left it.
    pub fn serve(&mut self, stream: &UnixStream) -> io::Result<()> {
        let r = self.serve_inner(stream);
        self.dma.clear();
        self.irqs.clear();
        self.device.detached();
        r
    }

    fn serve_inner(&mut self, stream: &UnixStream) -> io::Result<()> {
        let fd = stream.as_raw_fd();
        let mut versioned = false;
        let max = proto::max_message(self.ours.max_data_xfer_size);
        loop {
            self.wait(fd)?;
            let mut head = [0u8; HEADER_LEN];
            let mut fds = Vec::new();
            if !sock::recv_exact(fd, &mut head, &mut fds)? {
                return Ok(());
            }
            let h = Header::parse(&head);
            if let Err(e) = proto::check_header(&h, self.ours.max_data_xfer_size) {
                // The size cannot be trusted: answer, then stop reading.
                let _ = sock::send_all(fd, &[&h.error_reply(e.errno()).to_bytes()], &[]);
                return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
            }
            let body_len = h.size as usize - HEADER_LEN;
            debug_assert!(body_len <= max);
            self.buf.resize(body_len, 0);
            let mut body = std::mem::take(&mut self.buf);
            let got = sock::recv_exact(fd, &mut body, &mut fds);
            let answer = match got {
                Ok(true) => self.answer(&h, &body, &mut fds, &mut versioned),
                // Gone between the header and the body.
                Ok(false) => {
                    self.buf = body;
                    return Ok(());
                }
                Err(e) => {
                    self.buf = body;
                    return Err(e);
                }
            };
            self.buf = body;
            if h.no_reply() {
                continue;
            }
            let b = &self.reply;
            match answer {
                Answer::Body(None) => {
                    sock::send_all(fd, &[&h.reply(b.len()).to_bytes(), b], &[])?;
                }
                Answer::Body(Some(give)) => {
                    sock::send_all(fd, &[&h.reply(b.len()).to_bytes(), b], &[&give])?;
                }
                Answer::Error(e) => {
                    sock::send_all(fd, &[&h.error_reply(e).to_bytes()], &[])?;
                }
            }
        }
    }

    /// Waits until the client's socket is readable, serving the device's
    /// own descriptors, timers and polled memory meanwhile (an idle device
    /// sleeps; see the module's note on polled devices).
    fn wait(&mut self, sock: RawFd) -> io::Result<()> {
        use std::time::{Duration, Instant};
        loop {
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
            let timeout = match (tick, nap) {
                (Some(t), Some(n)) => Some(t.min(n)),
                (t, n) => t.or(n),
            };
            self.polls.clear();
            self.polls.push(libc::pollfd {
                fd: sock,
                events: libc::POLLIN,
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
                return Ok(());
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
                io.dma.map(address, size, offset, flags, fds.pop())?;
                Ok(())
            }
            Request::DmaUnmap {
                argsz,
                address,
                size,
            } => {
                io.dma.unmap(address, size)?;
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
