//! The stack's thread: a smoltcp interface over the endpoint's two queues,
//! TCP listeners on the store's port, and the pump between each
//! established TCP socket and its worker's socket pair.
//!
//! Nothing is lost between the two: bytes leave a smoltcp receive buffer
//! only as far as the worker's socket takes them, and enter a smoltcp send
//! buffer only as far as it has room, so a slow side closes the TCP window
//! instead of dropping data. The thread waits on the endpoint's channel,
//! for at most what smoltcp's timers allow and never more than [`IDLE`];
//! a worker that writes, reads or leaves wakes it.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, IpListenEndpoint};

use super::endpoint::Outbox;
use super::{Counters, GuestConfig, LISTENERS, MAX_CONNECTIONS, Msg, TCP_BUFFER};
use crate::http::{Handler, Limits};

/// The longest the thread sleeps with nothing pending.
const IDLE: Duration = Duration::from_millis(50);
/// The longest it sleeps while a worker has not taken the guest's bytes,
/// and the least while the outbox is full.
const BUSY: Duration = Duration::from_millis(5);
/// Frames taken from the channel per pass before smoltcp is polled.
const BATCH: usize = 64;
/// The largest Ethernet frame (no FCS) the stack sends or takes.
const MTU: usize = 1514;
/// A connection with nothing acknowledged for this long is aborted.
const TCP_TIMEOUT: Duration = Duration::from_secs(120);
/// Keep-alive probes on an idle connection.
const KEEP_ALIVE: Duration = Duration::from_secs(30);

/// The smoltcp device over the endpoint's queues.
struct Queues {
    rx: VecDeque<Vec<u8>>,
    outbox: Arc<Outbox>,
    counters: Arc<Counters>,
}

struct RxToken(Vec<u8>);

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

struct TxToken<'a> {
    outbox: &'a Outbox,
    counters: &'a Counters,
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        if self.outbox.push(frame) {
            Counters::bump(&self.counters.sent);
        } else {
            Counters::bump(&self.counters.dropped_to_guest);
        }
        r
    }
}

impl phy::Device for Queues {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _now: Instant) -> Option<(RxToken, TxToken<'_>)> {
        let frame = self.rx.pop_front()?;
        Some((
            RxToken(frame),
            TxToken {
                outbox: &self.outbox,
                counters: &self.counters,
            },
        ))
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_>> {
        // A full outbox holds smoltcp's output back (it sends again on a
        // later poll) rather than dropping it.
        self.outbox.has_room().then_some(TxToken {
            outbox: &self.outbox,
            counters: &self.counters,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MTU;
        caps
    }
}

/// The worker's end of a connection's socket pair: it wakes the stack's
/// thread when it writes, reads or goes.
struct WorkerEnd {
    stream: UnixStream,
    wake: SyncSender<Msg>,
    woken: Arc<AtomicBool>,
}

impl WorkerEnd {
    fn wake(&self) {
        if !self.woken.swap(true, Ordering::AcqRel) && self.wake.try_send(Msg::Wake).is_err() {
            // A full channel wakes the thread anyway; the next wake-up
            // must be able to send again.
            self.woken.store(false, Ordering::Release);
        }
    }
}

impl Read for WorkerEnd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let r = self.stream.read(buf);
        self.wake();
        r
    }
}

impl Write for WorkerEnd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.stream.write(buf);
        self.wake();
        r
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl Drop for WorkerEnd {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
        // Woken unconditionally: the stack must see the end even if a
        // wake-up is pending.
        self.woken.store(true, Ordering::Release);
        if self.wake.try_send(Msg::Wake).is_err() {
            self.woken.store(false, Ordering::Release);
        }
    }
}

/// One bridged connection.
struct Conn {
    handle: SocketHandle,
    /// The stack's end (non-blocking).
    stream: UnixStream,
    /// The worker closed its end (read EOF): the socket is closed once
    /// its send buffer drains.
    worker_done: bool,
    /// The guest closed: the stream's write side is shut.
    guest_done: bool,
}

/// What one pump of a connection found.
#[derive(Default)]
struct Pumped {
    /// Bytes moved either way.
    moved: bool,
    /// The guest's bytes wait for the worker to read (its reads wake the
    /// thread; this bounds the wait in case a wake-up was coalesced away).
    stuck: bool,
}

/// The stack's state, owned by its thread.
pub(crate) struct Net {
    iface: Interface,
    queues: Queues,
    sockets: SocketSet<'static>,
    listeners: Vec<SocketHandle>,
    conns: Vec<Conn>,
    /// Sockets aborted since the last poll (removed after it, once their
    /// RST is out).
    aborted: Vec<SocketHandle>,
    port: u16,
    handler: Arc<dyn Handler>,
    limits: Limits,
    counters: Arc<Counters>,
    wake: SyncSender<Msg>,
    woken: Arc<AtomicBool>,
}

impl Net {
    pub(crate) fn new(
        config: &GuestConfig,
        handler: Arc<dyn Handler>,
        outbox: Arc<Outbox>,
        counters: Arc<Counters>,
        wake: SyncSender<Msg>,
        woken: Arc<AtomicBool>,
    ) -> Net {
        let mut queues = Queues {
            rx: VecDeque::new(),
            outbox,
            counters: counters.clone(),
        };
        let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(config.mac)));
        cfg.random_seed = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        let mut iface = Interface::new(cfg, &mut queues, Instant::now());
        let (ip, prefix) = (config.ip, config.prefix);
        iface.update_ip_addrs(|a| {
            // One address into an empty list: it fits.
            let _ = a.push(IpCidr::new(ip.into(), prefix));
        });
        let mut net = Net {
            iface,
            queues,
            sockets: SocketSet::new(Vec::new()),
            listeners: Vec::with_capacity(LISTENERS),
            conns: Vec::with_capacity(MAX_CONNECTIONS),
            aborted: Vec::new(),
            port: config.port,
            handler,
            limits: config.limits.clone(),
            counters,
            wake,
            woken,
        };
        net.refill_listeners();
        net
    }

    /// Serves until `stop` is set or every sender is gone.
    pub(crate) fn run(mut self, rx: &Receiver<Msg>, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            self.iface.poll(now, &mut self.queues, &mut self.sockets);
            self.accept();
            let p = self.pump();
            // Bytes moved: smoltcp is polled again at once (after the
            // frames that arrived meanwhile) to send them.
            let mut wait = if p.moved {
                Duration::ZERO
            } else {
                self.iface
                    .poll_delay(Instant::now(), &self.sockets)
                    .map_or(IDLE, |d| Duration::from_micros(d.total_micros()))
                    .min(IDLE)
            };
            if p.stuck {
                wait = wait.min(BUSY);
            }
            if !self.queues.outbox.has_room() {
                // smoltcp may want to send at once, but cannot until the
                // device takes a frame (which wakes this thread).
                wait = wait.max(BUSY);
            }
            match rx.recv_timeout(wait) {
                Ok(m) => self.take(m),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            for _ in 0..BATCH {
                match rx.try_recv() {
                    Ok(m) => self.take(m),
                    Err(_) => break,
                }
            }
        }
    }

    fn take(&mut self, m: Msg) {
        match m {
            Msg::Frame(f) => self.queues.rx.push_back(f),
            Msg::Wake => self.woken.store(false, Ordering::Release),
        }
    }

    /// Opens listeners until [`LISTENERS`] wait (a listener connected
    /// while [`MAX_CONNECTIONS`] are open is refused, in [`Net::accept`]).
    fn refill_listeners(&mut self) {
        while self.listeners.len() < LISTENERS {
            let mut s = tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; TCP_BUFFER]),
                tcp::SocketBuffer::new(vec![0; TCP_BUFFER]),
            );
            s.set_nagle_enabled(false);
            s.set_timeout(Some(TCP_TIMEOUT.into()));
            s.set_keep_alive(Some(KEEP_ALIVE.into()));
            if s.listen(IpListenEndpoint::from(self.port)).is_err() {
                return;
            }
            self.listeners.push(self.sockets.add(s));
        }
    }

    /// Moves the listeners that were connected to connections, each with
    /// a worker, and opens listeners in their place.
    fn accept(&mut self) {
        for h in self.aborted.drain(..) {
            self.sockets.remove(h);
        }
        let mut i = 0;
        while i < self.listeners.len() {
            let h = self.listeners[i];
            let state = self.sockets.get::<tcp::Socket>(h).state();
            if matches!(state, tcp::State::Listen | tcp::State::SynReceived) {
                i += 1;
                continue;
            }
            self.listeners.swap_remove(i);
            if self.conns.len() >= MAX_CONNECTIONS {
                self.refuse(h);
                continue;
            }
            match self.spawn_worker() {
                Ok(stream) => {
                    Counters::bump(&self.counters.connections);
                    self.counters.open.fetch_add(1, Ordering::Relaxed);
                    self.conns.push(Conn {
                        handle: h,
                        stream,
                        worker_done: false,
                        guest_done: false,
                    });
                }
                Err(_) => self.refuse(h),
            }
        }
        self.refill_listeners();
    }

    fn refuse(&mut self, h: SocketHandle) {
        Counters::bump(&self.counters.refused);
        self.sockets.get_mut::<tcp::Socket>(h).abort();
        // The RST goes out on the next poll; the socket is removed after it.
        self.aborted.push(h);
    }

    /// A socket pair whose other end a new worker serves.
    fn spawn_worker(&self) -> io::Result<UnixStream> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        theirs.set_read_timeout(Some(self.limits.idle_timeout))?;
        theirs.set_write_timeout(Some(self.limits.idle_timeout))?;
        let end = WorkerEnd {
            stream: theirs,
            wake: self.wake.clone(),
            woken: self.woken.clone(),
        };
        let handler = self.handler.clone();
        let limits = self.limits.clone();
        std::thread::Builder::new()
            .name("s3-guest-conn".into())
            .spawn(move || {
                let _ = crate::http::serve_connection(end, &*handler, &limits);
            })?;
        Ok(ours)
    }
}

impl Net {
    /// Moves bytes between every connection's socket and its stream, and
    /// ends the connections both sides are done with.
    fn pump(&mut self) -> Pumped {
        let mut out = Pumped::default();
        let mut i = 0;
        while i < self.conns.len() {
            let c = &mut self.conns[i];
            let s = self.sockets.get_mut::<tcp::Socket>(c.handle);
            let p = pump_one(c, s);
            out.moved |= p.moved;
            out.stuck |= p.stuck;
            if matches!(s.state(), tcp::State::Closed | tcp::State::TimeWait) {
                // Reset by the guest, timed out, or closed both ways: the
                // worker sees its end close. TIME-WAIT is not waited out:
                // a socket (with its two buffers) held 10 s per connection
                // would count against MAX_CONNECTIONS; if the store's last
                // ACK was lost, the FIN the guest sends again meets a
                // reset, which ends the connection all the same.
                let c = self.conns.swap_remove(i);
                let _ = c.stream.shutdown(Shutdown::Both);
                self.sockets.remove(c.handle);
                self.counters.open.fetch_sub(1, Ordering::Relaxed);
                continue;
            }
            i += 1;
        }
        out
    }
}

/// One connection's pump (see [`Net::pump`]).
fn pump_one(c: &mut Conn, s: &mut tcp::Socket<'_>) -> Pumped {
    let mut p = Pumped::default();
    if c.worker_done {
        // Nobody reads what the guest still sends: it is taken and
        // dropped, so the window stays open for the FIN exchange.
        while s.can_recv() {
            if s.recv(|d| (d.len(), ())).is_err() {
                break;
            }
        }
    }
    // Guest to worker: only what the stream takes leaves the socket.
    while !c.worker_done && s.can_recv() {
        let r = s.recv(|data| match (&c.stream).write(data) {
            Ok(n) => (n, Ok(n)),
            Err(e) => (0, Err(e)),
        });
        match r {
            Ok(Ok(n)) if n > 0 => p.moved = true,
            Ok(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                p.stuck = true;
                break;
            }
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            // The worker is gone: what the guest sends has nowhere to go.
            Ok(Err(_)) => {
                if !c.worker_done {
                    c.worker_done = true;
                    s.close();
                }
                break;
            }
            _ => break,
        }
    }
    if !c.guest_done && !s.may_recv() && s.recv_queue() == 0 && s.state() != tcp::State::Listen {
        // The guest sent FIN and everything before it is with the worker.
        c.guest_done = true;
        let _ = c.stream.shutdown(Shutdown::Write);
        p.moved = true;
    }
    // Worker to guest: only as much as the send buffer has room for.
    while !c.worker_done && s.can_send() {
        let r = s.send(|room| match (&c.stream).read(room) {
            Ok(n) => (n, Ok(n)),
            Err(e) => (0, Err(e)),
        });
        match r {
            Ok(Ok(0)) => {
                // The worker closed: FIN after what is queued.
                c.worker_done = true;
                s.close();
                p.moved = true;
            }
            Ok(Ok(_)) => p.moved = true,
            Ok(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => break,
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(_)) => {
                c.worker_done = true;
                s.close();
            }
            Err(_) => break,
        }
    }
    p
}
