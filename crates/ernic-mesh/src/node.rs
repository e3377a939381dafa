//! A mesh node: the manager's table and health checks, a worker's
//! registration and peer connections, routing and relay, GID ownership.
//!
//! Threads (seed 001, "Threads"): an accept thread; a send and a receive
//! thread per connection; on the manager a health-check thread and a
//! broadcast thread; on a worker a connect thread that registers (again,
//! under its id, when the manager goes quiet) and connects to peers (the
//! lower id connects to the higher); the same-host socket's accept thread,
//! and short-lived threads that make or check a same-host proof; handshake
//! threads (at most `max_handshakes`, each kept a second for the next
//! connection). None of them touches device memory: data frames go to the
//! inbound queue.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use ernic_core::{Gid, NodeId};

use crate::auth::{self, Deadline, HandshakeError, code};
use crate::conn::{Conn, QueueError, ReadState, ReadStep};
use crate::frame::{self, FrameError, Header, Kind, NO_NODE, Reader, Writer};
use crate::inbound::{Inbound, Message};
use crate::key::MeshKey;
use crate::{MeshConfig, Spec};

/// How loud the mesh is on stderr (`ERNIC_LOG=error|warn|info|debug`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

pub(crate) fn log_level() -> Level {
    match std::env::var("ERNIC_LOG").as_deref() {
        Ok("error") => Level::Error,
        Ok("info") => Level::Info,
        Ok("debug") => Level::Debug,
        _ => Level::Warn,
    }
}

/// A node as the manager's table records it.
#[derive(Debug, Clone)]
struct Rec {
    boot: u64,
    alive: bool,
    died: Option<Instant>,
    addr: Option<SocketAddr>,
    gids: Vec<Gid>,
}

/// A node as the topology shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// Its id.
    pub id: NodeId,
    /// Whether the manager thinks it is alive.
    pub alive: bool,
    /// Where it listens for its peers.
    pub addr: Option<SocketAddr>,
}

#[derive(Default)]
pub(crate) struct State {
    /// Direct connections by peer id (a worker's connection to the manager is node 0's).
    pub conns: HashMap<u16, Arc<Conn>>,
    pub my_gids: Vec<Gid>,
    /// Each node's GIDs and whether it is alive (a worker's view).
    node_gids: HashMap<u16, (bool, Vec<Gid>)>,
    /// GID -> the one alive node that claims it.
    owners: HashMap<Gid, u16>,
    /// The topology (a worker's view; on the manager, derived from `table`).
    pub topology: Vec<Peer>,
    // The manager's table.
    table: BTreeMap<u16, Rec>,
    /// The next id to try: ids are given in turn, wrapping around.
    next_id: u16,
    /// Ids whose node left the table, and when it died: none is given out
    /// again within the quarantine. At most one entry per id.
    released: HashMap<u16, Instant>,
    dirty_gids: BTreeSet<u16>,
    dirty_topology: bool,
    send_all_to: Vec<u16>,
    /// Relayed frames dropped (no route or no room in time).
    pub relay_drops: u64,
}

pub(crate) struct Shared {
    pub cfg: MeshConfig,
    pub manager: bool,
    pub boot: u64,
    me: AtomicU32,
    st: Mutex<State>,
    /// Signals state changes to the connect and broadcast threads.
    pub changed: Condvar,
    pub inbound: Inbound,
    pool: Mutex<Pool>,
    pub stop: AtomicBool,
    pub listen: SocketAddr,
    level: Level,
    /// The connections, for pollers (a snapshot replaced on every change).
    conn_list: Mutex<Arc<Vec<Arc<Conn>>>>,
    /// When a thread last polled the connections itself ([`Shared::poll_io`]),
    /// in microseconds since `epoch`.
    polled: AtomicU64,
    epoch: Instant,
    /// Calls of `poll_io`, to read the clock on a few of them only.
    poll_calls: AtomicU64,
    /// Counts the times a poller stopped ([`Shared::poller_idle`]); receive
    /// threads standing aside for it wait on this.
    poller_gone: (Mutex<u64>, Condvar),
    /// The poller is busy with what it read ([`Shared::poller_busy`]).
    poller_in_pass: AtomicBool,
    /// This node's same-host socket, unless the path is off.
    pub same_host: Option<crate::same_host::Listener>,
    /// Connections in their handshake now (queued for a handshake thread
    /// or in one).
    handshaking: AtomicUsize,
    /// Connections waiting for a handshake thread, and the threads.
    handshakes: (Mutex<Handshakes>, Condvar),
    /// Handshakes refused, and the rate limit on saying so.
    refusals: Refusals,
    /// Why the last registration failed (a worker's), and whether it was
    /// over the key or the version (retrying will not help).
    registration_error: Mutex<Option<(String, bool)>>,
}

/// Most GIDs one node may claim: its registration and each GID frame are
/// refused past it, so no node makes the table or a broadcast large.
pub(crate) const MAX_GIDS: usize = 256;

/// Largest body of a handshake's last frame: a registration with
/// [`MAX_GIDS`] GIDs and its proof.
const MAX_HANDSHAKE_BODY: usize = auth::MAC + 14 + MAX_GIDS * 16;

/// Accepted connections waiting for a handshake thread.
#[derive(Default)]
struct Handshakes {
    waiting: std::collections::VecDeque<(TcpStream, SocketAddr)>,
    /// Handshake threads running, and how many of them wait for work.
    threads: usize,
    idle: usize,
}

/// Refused handshakes: counted, and each reason logged at most once a
/// second (a flood of strangers does not flood the log).
#[derive(Default)]
struct Refusals {
    count: AtomicU64,
    /// Per reason ([`HandshakeError::reason`]): when its last line went
    /// out, and how many were refused unsaid since.
    said: Mutex<[(Option<Instant>, u64); auth::REASONS]>,
}

/// Joins an error and its sources into one line.
pub(crate) fn full(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// A poller that polled within this long is taken to be polling still: the
/// receive threads leave the reading to it.
const POLLER_WINDOW: Duration = Duration::from_millis(1);

/// Longest a receive thread stands aside for a poller that has not said it
/// stopped; after that it looks again (one that stopped without saying so is
/// past its window by then).
const STAND_ASIDE: Duration = Duration::from_millis(10);

const NO_ID: u32 = u32::MAX;

impl Shared {
    pub fn new(mut cfg: MeshConfig, listen: SocketAddr) -> Shared {
        cfg.gids.truncate(MAX_GIDS);
        let manager = matches!(cfg.spec, Spec::Manager { .. });
        let boot = boot_id();
        let inbound = Inbound::new(cfg.inbound_bytes, cfg.inbound_msgs, cfg.stall_drop);
        let mut st = State {
            next_id: 1,
            my_gids: cfg.gids.clone(),
            ..State::default()
        };
        if manager {
            st.table.insert(
                0,
                Rec {
                    boot,
                    alive: true,
                    died: None,
                    addr: Some(listen),
                    gids: cfg.gids.clone(),
                },
            );
            st.dirty_gids.insert(0);
            st.recompute_owners(Some(0));
        }
        let same_host = if cfg.same_host {
            crate::same_host::Listener::bind()
                .map_err(|e| {
                    if log_level() >= Level::Info {
                        eprintln!(
                            "ernic-mesh: no same-host path ({e}); every payload goes over TCP"
                        );
                    }
                })
                .ok()
        } else {
            None
        };
        Shared {
            same_host,
            manager,
            boot,
            me: AtomicU32::new(if manager { 0 } else { NO_ID }),
            st: Mutex::new(st),
            changed: Condvar::new(),
            inbound,
            pool: Mutex::new(Pool::default()),
            stop: AtomicBool::new(false),
            listen,
            level: log_level(),
            conn_list: Mutex::new(Arc::new(Vec::new())),
            polled: AtomicU64::new(0),
            epoch: Instant::now(),
            poll_calls: AtomicU64::new(0),
            poller_gone: (Mutex::new(0), Condvar::new()),
            poller_in_pass: AtomicBool::new(false),
            handshaking: AtomicUsize::new(0),
            handshakes: (Mutex::new(Handshakes::default()), Condvar::new()),
            refusals: Refusals::default(),
            registration_error: Mutex::new(None),
            cfg,
        }
    }

    /// The mesh key, if this node has one.
    pub fn key(&self) -> Option<&MeshKey> {
        self.cfg.key.as_ref().ok().and_then(|k| k.as_ref())
    }

    pub fn registration_error(&self) -> Option<(String, bool)> {
        self.registration_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn refused_handshakes(&self) -> u64 {
        self.refusals.count.load(Ordering::Relaxed)
    }

    /// Counts a refused handshake; says why on the log (about the key or
    /// the version: a warning, at most one a second; anything else: info).
    fn refused(&self, from: Option<SocketAddr>, e: &HandshakeError) {
        self.refusals.count.fetch_add(1, Ordering::Relaxed);
        let from = from.map_or("a peer".to_string(), |a| a.to_string());
        if !e.about_the_key() {
            self.log(
                Level::Info,
                format_args!("refused a connection from {from}: {}", full(e)),
            );
            return;
        }
        let mut all = self.refusals.said.lock().unwrap_or_else(|p| p.into_inner());
        let said = &mut all[e.reason()];
        let now = Instant::now();
        if said
            .0
            .is_some_and(|t| now.duration_since(t) < Duration::from_secs(1))
        {
            said.1 += 1;
            return;
        }
        let more = std::mem::take(&mut said.1);
        said.0 = Some(now);
        drop(all);
        let more = if more > 0 {
            format!(" ({more} more refused in the last second)")
        } else {
            String::new()
        };
        self.log(
            Level::Warn,
            format_args!("refused a connection from {from}: {}{more}", full(e)),
        );
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn me(&self) -> Option<NodeId> {
        match self.me.load(Ordering::Acquire) {
            NO_ID => None,
            v => Some(NodeId(v as u16)),
        }
    }

    pub fn log(&self, level: Level, msg: std::fmt::Arguments<'_>) {
        if level <= self.level {
            let who = self.me().map_or("?".to_string(), |n| n.0.to_string());
            eprintln!("ernic-mesh node {who}: {msg}");
        }
    }

    /// A buffer of exactly `len` bytes, reused when one is free.
    pub fn buffer(&self, len: usize) -> Vec<u8> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let b = pool.take(len);
        drop(pool);
        match b {
            Some(mut b) => {
                if b.len() >= len {
                    b.truncate(len);
                } else {
                    b.resize(len, 0);
                }
                b
            }
            None => vec![0u8; len],
        }
    }

    /// Gives a buffer back for reuse.
    pub fn recycle(&self, b: Vec<u8>) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.give(b);
    }

    fn max_queues(&self) -> (usize, usize, Duration) {
        let timeout = if self.manager {
            self.cfg.send_timeout / 2
        } else {
            self.cfg.send_timeout
        };
        (self.cfg.max_requests, self.cfg.max_replies, timeout)
    }

    fn new_conn(&self, peer: NodeId, stream: TcpStream) -> io::Result<Arc<Conn>> {
        let (req, rep, timeout) = self.max_queues();
        let c = Arc::new(Conn::new(peer, stream, req, rep, timeout)?);
        c.heard();
        Ok(c)
    }

    /// The connection frames for `to` go on, and the `dst` to put in them.
    pub fn route(&self, st: &State, to: NodeId) -> Option<(Arc<Conn>, u16)> {
        if let Some(c) = st.conns.get(&to.0) {
            return Some((c.clone(), NO_NODE));
        }
        if !self.manager {
            // No direct link: the manager relays.
            if let Some(c) = st.conns.get(&0) {
                return Some((c.clone(), to.0));
            }
        }
        None
    }

    pub fn owner(&self, gid: &Gid) -> Option<NodeId> {
        let st = self.lock();
        let o = *st.owners.get(gid)?;
        (Some(NodeId(o)) != self.me()).then_some(NodeId(o))
    }

    pub fn set_gids(&self, mut gids: Vec<Gid>) {
        if gids.len() > MAX_GIDS {
            self.log(
                Level::Warn,
                format_args!(
                    "{} GIDs, more than a node may claim: advertising the first {MAX_GIDS}",
                    gids.len()
                ),
            );
            gids.truncate(MAX_GIDS);
        }
        let mut st = self.lock();
        st.my_gids = gids.clone();
        if self.manager {
            if let Some(r) = st.table.get_mut(&0) {
                r.gids = gids;
            }
            st.dirty_gids.insert(0);
            st.recompute_owners(Some(0));
            drop(st);
            self.changed.notify_all();
        } else if let Some(me) = self.me() {
            st.recompute_owners(Some(me.0));
            if let Some(c) = st.conns.get(&0) {
                c.control(gids_frame(me.0, me.0, true, &gids));
            }
        }
    }

    pub fn peers(&self) -> Vec<(Peer, bool)> {
        let st = self.lock();
        st.topology
            .iter()
            .map(|p| (*p, st.conns.get(&p.id.0).is_some_and(|c| !c.is_closed())))
            .collect()
    }

    // ---- connections ----

    /// Starts a connection's send and receive threads.
    fn run_conn(self: &Arc<Self>, c: Arc<Conn>) {
        let (s, c2) = (self.clone(), c.clone());
        let name = format!("mesh-send-{}", c.peer.0);
        let _ = thread::Builder::new().name(name).spawn(move || {
            c2.send_loop(&|b| s.recycle(b));
        });
        let s = self.clone();
        let name = format!("mesh-recv-{}", c.peer.0);
        let _ = thread::Builder::new().name(name).spawn(move || {
            s.recv_loop(&c);
            s.closed(&c);
        });
    }

    fn publish_conns(&self, st: &State) {
        let list: Vec<Arc<Conn>> = st.conns.values().cloned().collect();
        *self.conn_list.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(list);
    }

    /// Registers a connection to `peer`, replacing (and closing) an older one.
    fn install(self: &Arc<Self>, c: Arc<Conn>) {
        let old = {
            let mut st = self.lock();
            let old = st.conns.insert(c.peer.0, c.clone());
            self.publish_conns(&st);
            old
        };
        if let Some(o) = old {
            o.close();
        }
        self.offer_same_host(&c);
        self.run_conn(c);
        self.changed.notify_all();
    }

    /// A connection ended: forget it (if it is still the current one), and
    /// on the manager, mark its node dead.
    fn closed(&self, c: &Arc<Conn>) {
        c.close();
        let mut st = self.lock();
        let current = st.conns.get(&c.peer.0).is_some_and(|x| Arc::ptr_eq(x, c));
        if !current {
            return;
        }
        st.conns.remove(&c.peer.0);
        self.publish_conns(&st);
        if self.manager {
            if let Some(r) = st.table.get_mut(&c.peer.0) {
                if r.alive {
                    r.alive = false;
                    r.died = Some(Instant::now());
                    st.dirty_gids.insert(c.peer.0);
                    st.dirty_topology = true;
                    let me = self.me().map(|n| n.0);
                    st.recompute_owners(me);
                }
            }
            drop(st);
            self.log(Level::Info, format_args!("node {} is gone", c.peer.0));
        } else {
            drop(st);
            self.log(
                Level::Info,
                format_args!("connection to node {} closed", c.peer.0),
            );
        }
        self.changed.notify_all();
    }

    /// The receive thread: waits for bytes, then reads frames (unless a
    /// polling thread is reading them already) and hands them on, waiting
    /// for room when the inbound queue is full.
    fn recv_loop(self: &Arc<Self>, c: &Arc<Conn>) {
        while !c.is_closed() && !self.stop.load(Ordering::Relaxed) {
            if self.poller_active() {
                // A polling thread reads what arrives sooner than this thread
                // could wake; stay out of its way (and off its locks) until
                // it stops. Each look takes the poller's core for a moment:
                // looking every 200 us (as this did, and the device thread
                // every 500) took about 5% off two processes' 64 MiB
                // sendrecv (ten A/B rounds).
                self.stand_aside();
                continue;
            }
            let leftover = c.try_reader().is_some_and(|rs| rs.has_pending());
            if !leftover && !c.wait_readable(Duration::from_millis(100)) {
                continue;
            }
            if self.poller_active() {
                continue;
            }
            let mut rs = c.reader();
            if !self.read_frames(c, &mut rs, true) {
                return;
            }
        }
    }

    /// Reads and handles the frames that have arrived. With `blocking`, a
    /// frame with no room to go waits for it; without, it stays in the
    /// reader for later. Returns false when the connection is done.
    fn read_frames(self: &Arc<Self>, c: &Arc<Conn>, rs: &mut ReadState, blocking: bool) -> bool {
        loop {
            // A frame left from before goes first.
            let (h, buf) = match rs.ready.take() {
                Some(f) => f,
                None => match c.read_step(rs, &|n| self.buffer(n)) {
                    ReadStep::Pending => return true,
                    ReadStep::Eof => {
                        c.close();
                        return false;
                    }
                    ReadStep::Bad(e) => return self.drop_conn(c, e),
                    ReadStep::Frame(h, buf) => {
                        c.heard();
                        (h, buf)
                    }
                },
            };
            match self.handle(c, h, buf, blocking) {
                Ok(None) => {}
                Ok(Some(back)) => {
                    rs.ready = Some(back);
                    return true;
                }
                Err(e) => return self.drop_conn(c, e),
            }
        }
    }

    /// Writes what the sockets take now of the queued data (replies a pass
    /// deferred, say), without reading.
    pub fn flush(&self) {
        let conns = self
            .conn_list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for c in conns.iter() {
            c.flush_now(&mut |b| self.recycle(b));
        }
    }

    /// Stops claiming the connections for a poller: the receive threads read
    /// again (a polling thread about to sleep says so).
    pub fn poller_idle(&self) {
        self.poller_in_pass.store(false, Ordering::Relaxed);
        if self.polled.swap(0, Ordering::Relaxed) != 0 {
            let (gone, cv) = &self.poller_gone;
            *gone.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            cv.notify_all();
        }
    }

    /// A poller is busy with what it read (or not): while it is, it is
    /// taken to be polling, however long that takes (a payload read from a
    /// peer on this host takes a millisecond), and its window starts again
    /// when it is done.
    pub fn poller_busy(&self, busy: bool) {
        if !busy {
            self.polled.store(self.poll_stamp(), Ordering::Relaxed);
        }
        self.poller_in_pass.store(busy, Ordering::Relaxed);
    }

    /// Now, as `polled` holds it: microseconds since `epoch`, plus one (0
    /// means "no poller").
    fn poll_stamp(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64 + 1
    }

    /// Waits until the poller says it stopped, or [`STAND_ASIDE`].
    fn stand_aside(&self) {
        let (gone, cv) = &self.poller_gone;
        let g = gone.lock().unwrap_or_else(|p| p.into_inner());
        // Checked under the lock `poller_idle` counts under: a stop between
        // the caller's check and this wait is not missed.
        if !self.poller_active() || self.stop.load(Ordering::Relaxed) {
            return;
        }
        let seen = *g;
        let _ = cv.wait_timeout_while(g, STAND_ASIDE, |n| *n == seen);
    }

    /// Whether a thread is polling the connections itself.
    pub fn poller_active(&self) -> bool {
        if self.poller_in_pass.load(Ordering::Relaxed) {
            return true;
        }
        match self.polled.load(Ordering::Relaxed) {
            0 => false,
            us => {
                self.epoch
                    .elapsed()
                    .saturating_sub(Duration::from_micros(us))
                    < POLLER_WINDOW
            }
        }
    }

    fn drop_conn(&self, c: &Arc<Conn>, e: FrameError) -> bool {
        self.log(
            Level::Warn,
            format_args!("closing connection to node {}: {e}", c.peer.0),
        );
        c.close();
        false
    }

    /// Does the connections' I/O that is ready, without blocking: writes
    /// queued data the socket takes, reads arrived frames into the inbound
    /// queue. A thread that polls anyway (the device's) calls this so a
    /// message need not wait for a send or receive thread to wake.
    pub fn poll_io(self: &Arc<Self>) {
        // The clock is read on one call in 64: a spinning poller calls this
        // millions of times a second, and the receive threads only need to
        // know it polled within the last millisecond.
        if self.poll_calls.fetch_add(1, Ordering::Relaxed) % 64 == 0 {
            self.polled.store(self.poll_stamp(), Ordering::Relaxed);
        }
        let conns = self
            .conn_list
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Readiness first, for all connections in one poll(2): spinning on
        // recv(2) would take each socket's lock against the kernel's own
        // receive path.
        let mut fds = [0; 64];
        let mut ready = [false; 64];
        for chunk in conns.chunks(64) {
            for (fd, c) in fds.iter_mut().zip(chunk) {
                *fd = c.fd();
            }
            crate::sys::readable_now(&fds[..chunk.len()], &mut ready[..chunk.len()]);
            for (c, r) in chunk.iter().zip(ready) {
                c.flush_now(&mut |b| self.recycle(b));
                let leftover = r || c.try_reader().is_some_and(|rs| rs.has_pending());
                if !leftover {
                    continue;
                }
                if let Some(mut rs) = c.try_reader() {
                    self.read_frames(c, &mut rs, false);
                }
            }
        }
    }

    /// Handles one frame. Without `blocking`, a frame that has no room to go
    /// (inbound queue or relay target full) is given back.
    #[allow(clippy::type_complexity)]
    fn handle(
        self: &Arc<Self>,
        c: &Arc<Conn>,
        hdr: Header,
        buf: Vec<u8>,
        blocking: bool,
    ) -> Result<Option<(Header, Vec<u8>)>, FrameError> {
        let me = self.me().map_or(NO_NODE, |n| n.0);
        let body = &buf[frame::HEADER_LEN..];
        match hdr.kind {
            Kind::Heartbeat => {
                c.answer(frame::frame(Kind::HeartbeatAck, me, hdr.src, &[]));
                self.recycle(buf);
            }
            Kind::HeartbeatAck => self.recycle(buf),
            Kind::Data => {
                // Only the manager relays, and only a connection's own node
                // may speak for itself on a direct link.
                let relayed_to_me = !self.manager && c.peer.0 == 0;
                if !relayed_to_me && hdr.src != c.peer.0 {
                    self.log(
                        Level::Warn,
                        format_args!(
                            "dropping data from node {} claiming to be node {}",
                            c.peer.0, hdr.src
                        ),
                    );
                    self.recycle(buf);
                    return Ok(None);
                }
                let relayed = hdr.src != c.peer.0;
                if relayed && ernic_core::wire::is_by_ref(body) {
                    // A reference is read from the process that proved it
                    // holds this connection, so only that node may send one.
                    self.log(
                        Level::Warn,
                        format_args!(
                            "dropping a by-reference message for node {} relayed from node {}",
                            hdr.dst, hdr.src
                        ),
                    );
                    self.recycle(buf);
                    return Ok(None);
                }
                if hdr.dst == NO_NODE || hdr.dst == me {
                    let m = Message {
                        from: NodeId(hdr.src),
                        buf,
                        start: frame::HEADER_LEN,
                    };
                    if blocking {
                        // Waits for room; drops only when the device loop stalls.
                        c.set_stalled(true);
                        let _ = self.inbound.push(m, c.closed_flag());
                        c.set_stalled(false);
                    } else if let Err(m) = self.inbound.try_push(m) {
                        return Ok(Some((hdr, m.buf)));
                    }
                } else if self.manager {
                    return Ok(self.relay(hdr, buf, blocking));
                } else {
                    self.recycle(buf);
                }
            }
            Kind::Gids if self.manager => {
                let (node, alive, gids) = parse_gids(body)?;
                if node != c.peer.0 || !alive {
                    return Err(FrameError::Body(Kind::Gids));
                }
                let mut st = self.lock();
                if let Some(r) = st.table.get_mut(&node) {
                    r.gids = gids;
                }
                st.dirty_gids.insert(node);
                st.recompute_owners(Some(0));
                drop(st);
                self.changed.notify_all();
                self.recycle(buf);
            }
            Kind::Gids => {
                let (node, alive, gids) = parse_gids(body)?;
                let mut st = self.lock();
                st.node_gids.insert(node, (alive, gids));
                st.recompute_owners(Some(me));
                drop(st);
                self.recycle(buf);
            }
            Kind::Topology if !self.manager => {
                let topo = parse_topology(body)?;
                let mut st = self.lock();
                // Direct links to nodes now dead are closed.
                let dead: Vec<Arc<Conn>> = topo
                    .iter()
                    .filter(|p| !p.alive && p.id.0 != 0)
                    .filter_map(|p| st.conns.get(&p.id.0).cloned())
                    .collect();
                st.topology = topo;
                drop(st);
                for d in dead {
                    d.close();
                }
                self.changed.notify_all();
                self.recycle(buf);
            }
            Kind::SameHost => {
                let r = self.take_offer(c, body);
                self.recycle(buf);
                r?;
            }
            Kind::Refuse => {
                let mut r = Reader::new(Kind::Refuse, body);
                let _code = r.u16()?;
                self.log(
                    Level::Error,
                    format_args!("node {} refused: {}", hdr.src, r.text()),
                );
                return Err(FrameError::Body(Kind::Refuse));
            }
            _ => return Err(FrameError::Body(hdr.kind)),
        }
        Ok(None)
    }

    /// The manager forwards a data frame to the node it names. Blocking, it
    /// waits for room up to its (halved) send timeout; not blocking, a frame
    /// with no room comes back.
    fn relay(&self, hdr: Header, buf: Vec<u8>, blocking: bool) -> Option<(Header, Vec<u8>)> {
        let target = self.lock().conns.get(&hdr.dst).cloned();
        let result = match target {
            None => {
                self.recycle(buf);
                Err(())
            }
            Some(t) if blocking => {
                if let Some(from) = self.lock().conns.get(&hdr.src).cloned() {
                    from.set_stalled(true);
                }
                let r = t.data_wait(buf, self.cfg.send_timeout / 2).map_err(|_| ());
                if let Some(from) = self.lock().conns.get(&hdr.src).cloned() {
                    from.set_stalled(false);
                }
                r
            }
            Some(t) => match t.data(buf, 0, false, false) {
                Ok(done) => Ok(done),
                Err((QueueError::Full, buf)) => return Some((hdr, buf)),
                Err((QueueError::Closed, buf)) => {
                    self.recycle(buf);
                    Err(())
                }
            },
        };
        match result {
            Ok(Some(b)) => self.recycle(b),
            Ok(None) => {}
            Err(()) => {
                self.lock().relay_drops += 1;
                self.log(
                    Level::Info,
                    format_args!("dropped a frame from node {} for node {}", hdr.src, hdr.dst),
                );
            }
        }
        None
    }

    // ---- handshakes ----

    /// The accept thread: hands each connection to a handshake thread
    /// (kept for the next one while connections keep coming: a new thread
    /// per connection would let a flood of strangers fill the listen
    /// backlog), and past `max_handshakes` at once closes it at once.
    fn accept_loop(self: &Arc<Self>, listener: TcpListener) {
        let _ = listener.set_nonblocking(true);
        // The kernel's queue of connections not yet accepted (std's is
        // 128): a burst waits there instead of being dropped.
        crate::sys::listen_backlog(&listener, 4096);
        while !self.stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, from)) => {
                    if self.handshaking.fetch_add(1, Ordering::AcqRel) >= self.cfg.max_handshakes {
                        // Past the cap: closed at once, with a word (a
                        // non-blocking send, or nothing) for a real node.
                        self.handshaking.fetch_sub(1, Ordering::AcqRel);
                        let why = format!(
                            "{} connections are in their handshake here already; retry",
                            self.cfg.max_handshakes
                        );
                        let _ = crate::sys::send_now(
                            &stream,
                            &auth::refusal(NO_NODE, code::BUSY, &why),
                        );
                        self.refused(Some(from), &HandshakeError::Refused(why));
                        continue;
                    }
                    self.hand_over(stream, from);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Woken by the next connection; the timeout only bounds
                    // how long a stopped node's thread lingers.
                    crate::sys::wait_readable(&listener, Duration::from_millis(100));
                }
                Err(_) => thread::sleep(Duration::from_millis(50)),
            }
        }
        self.handshakes.1.notify_all();
    }

    /// Queues an accepted connection for a handshake thread, starting one
    /// when none is idle (at most `max_handshakes` run).
    fn hand_over(self: &Arc<Self>, stream: TcpStream, from: SocketAddr) {
        let (q, cv) = &self.handshakes;
        let mut q = q.lock().unwrap_or_else(|p| p.into_inner());
        q.waiting.push_back((stream, from));
        // An idle thread for each waiting connection, or one more thread
        // (a silent connection ahead holds up only its own thread).
        if q.waiting.len() <= q.idle {
            drop(q);
            cv.notify_one();
            return;
        }
        q.threads += 1;
        drop(q);
        let s = self.clone();
        let spawned = thread::Builder::new()
            .name("mesh-handshake".into())
            .spawn(move || s.handshake_loop());
        if spawned.is_err() {
            let mut q = self.handshakes.0.lock().unwrap_or_else(|p| p.into_inner());
            q.threads -= 1;
            // Nobody will take it: closed, like one past the cap.
            if q.threads == 0 && q.waiting.pop_back().is_some() {
                self.handshaking.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// A handshake thread: runs queued handshakes; ends after a second with
    /// none (or when the node stops).
    fn handshake_loop(self: &Arc<Self>) {
        let (q, cv) = &self.handshakes;
        loop {
            let next = {
                let mut g = q.lock().unwrap_or_else(|p| p.into_inner());
                let idle_since = Instant::now();
                loop {
                    if let Some(x) = g.waiting.pop_front() {
                        break Some(x);
                    }
                    if self.stop.load(Ordering::Relaxed)
                        || idle_since.elapsed() >= Duration::from_secs(1)
                    {
                        g.threads -= 1;
                        break None;
                    }
                    g.idle += 1;
                    g = cv
                        .wait_timeout(g, Duration::from_millis(250))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    g.idle -= 1;
                }
            };
            let Some((stream, from)) = next else { return };
            if let Err(e) = self.handshake_in(stream) {
                self.refused(Some(from), &e);
            }
            self.handshaking.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// An accepted connection's handshake (see `auth`): the key first, then
    /// a worker registering (at the manager) or a peer saying hello (at a
    /// worker). Nothing the peer says is looked at, and no id is given out,
    /// before it has proved the key; the whole exchange has one deadline.
    fn handshake_in(self: &Arc<Self>, mut stream: TcpStream) -> Result<(), HandshakeError> {
        let d = Deadline::after(self.cfg.handshake_timeout);
        let _ = stream.set_nonblocking(false);
        stream.set_nodelay(true).map_err(HandshakeError::Io)?;
        let me = self.me().map_or(NO_NODE, |n| n.0);
        let session = auth::respond(&mut stream, self.key(), me, d)?;
        let (hdr, body) = auth::read_frame(&mut stream, MAX_HANDSHAKE_BODY, d)?;
        let payload = match (hdr.kind, self.manager) {
            (Kind::Register, true) | (Kind::Hello, false) => session.check(&hdr, &body),
            (k, _) => Err(HandshakeError::Unexpected(k)),
        };
        let payload = match payload {
            Ok(p) => p,
            Err(e) => {
                auth::tell(&mut stream, &e, me, d);
                return Err(e);
            }
        };
        let body_err = |k| HandshakeError::Frame(FrameError::Body(k));
        if self.manager {
            let (boot, wanted, port, gids) =
                parse_register(payload).map_err(|_| body_err(Kind::Register))?;
            let peer_ip = stream.peer_addr().map_err(HandshakeError::Io)?.ip();
            let id = match self.admit(boot, wanted, SocketAddr::new(peer_ip, port), gids) {
                Ok(id) => id,
                Err(why) => {
                    let _ = auth::write_all(&mut stream, &auth::refusal(me, code::FULL, &why), d);
                    return Err(HandshakeError::Refused(why));
                }
            };
            let welcome = frame::frame(
                Kind::Welcome,
                0,
                id,
                &Writer::default().u16(id).u64(self.boot).0,
            );
            if let Err(e) = auth::write_all(&mut stream, &welcome, d) {
                // It never heard its id: the record goes, as for a node that died.
                self.forget(id);
                return Err(e);
            }
            let c = match self.new_conn(NodeId(id), stream) {
                Ok(c) => c,
                Err(e) => {
                    self.forget(id);
                    return Err(HandshakeError::Io(e));
                }
            };
            self.install(c);
            {
                let mut st = self.lock();
                st.dirty_gids.insert(id);
                st.dirty_topology = true;
                st.send_all_to.push(id);
            }
            self.changed.notify_all();
            self.log(Level::Info, format_args!("node {id} registered"));
            return Ok(());
        }
        let mut r = Reader::new(Kind::Hello, payload);
        let (id, _boot) = (
            r.u16().map_err(HandshakeError::Frame)?,
            r.u64().map_err(HandshakeError::Frame)?,
        );
        r.end().map_err(HandshakeError::Frame)?;
        if me == NO_NODE || id == me || id == 0 || id == NO_NODE {
            return Err(HandshakeError::Unexpected(Kind::Hello));
        }
        auth::write_all(
            &mut stream,
            &frame::frame(
                Kind::HelloAck,
                me,
                id,
                &Writer::default().u16(me).u64(self.boot).0,
            ),
            d,
        )?;
        let c = self
            .new_conn(NodeId(id), stream)
            .map_err(HandshakeError::Io)?;
        self.install(c);
        Ok(())
    }

    /// A node that never took up its id leaves the table (its id goes to
    /// quarantine like any other).
    fn forget(&self, id: u16) {
        let mut st = self.lock();
        if st.table.remove(&id).is_some() {
            st.released.insert(id, Instant::now());
            st.recompute_owners(Some(0));
        }
    }

    /// The manager admits a registering worker: the id it asked for if its
    /// boot id matches (a quiet node that returns), else the next free one
    /// (ids are given in turn, wrap around, and skip ids in the table and
    /// ids in quarantine); a full table evicts the node dead longest, or
    /// refuses.
    fn admit(
        self: &Arc<Self>,
        boot: u64,
        wanted: u16,
        addr: SocketAddr,
        gids: Vec<Gid>,
    ) -> Result<u16, String> {
        let mut st = self.lock();
        let now = Instant::now();
        let id = match st.table.get(&wanted) {
            Some(r) if wanted != 0 && r.boot == boot => wanted,
            _ => {
                if st.table.len() >= self.cfg.max_nodes {
                    let victim = st
                        .table
                        .iter()
                        .filter(|(_, r)| !r.alive)
                        .min_by_key(|(_, r)| r.died)
                        .map(|(id, r)| (*id, r.died.unwrap_or(now)));
                    match victim {
                        Some((v, died)) => {
                            st.table.remove(&v);
                            st.released.insert(v, died);
                            st.dirty_topology = true;
                        }
                        None => {
                            return Err(format!(
                                "the mesh is full ({} nodes, none dead)",
                                self.cfg.max_nodes
                            ));
                        }
                    }
                }
                st.free_id(self.cfg.max_id, self.cfg.id_quarantine, now)
                    .ok_or_else(|| {
                        format!(
                            "no node id is free now (every id not in use left the mesh less than {:?} ago); retry",
                            self.cfg.id_quarantine
                        )
                    })?
            }
        };
        st.table.insert(
            id,
            Rec {
                boot,
                alive: true,
                died: None,
                addr: Some(addr),
                gids,
            },
        );
        // Its connection is installed before the broadcast thread is told to
        // send it the whole table (see `handshake_in`).
        st.recompute_owners(Some(0));
        Ok(id)
    }

    /// Notes why registering failed (a line on the log when the reason
    /// changes, not on every retry).
    fn registration_failed(&self, host: &str, port: u16, e: &HandshakeError) {
        let line = format!("cannot register with {host}:{port}: {}", full(e));
        let mut last = self
            .registration_error
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if last.as_ref().map(|l| l.0.as_str()) != Some(line.as_str()) {
            let level = if e.about_the_key() {
                Level::Error
            } else {
                Level::Warn
            };
            self.log(level, format_args!("{line}"));
            *last = Some((line, e.about_the_key()));
        }
    }

    /// A worker connects and registers with the manager.
    fn register(self: &Arc<Self>, host: &str, port: u16) -> Result<NodeId, HandshakeError> {
        let mut last =
            HandshakeError::Io(io::Error::other(format!("{host} resolves to no address")));
        let addrs = (host, port).to_socket_addrs().map_err(HandshakeError::Io)?;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.cfg.handshake_timeout) {
                Ok(s) => return self.register_on(s),
                Err(e) => last = HandshakeError::Io(e),
            }
        }
        Err(last)
    }

    fn register_on(self: &Arc<Self>, mut s: TcpStream) -> Result<NodeId, HandshakeError> {
        let d = Deadline::after(self.cfg.handshake_timeout);
        s.set_nodelay(true).map_err(HandshakeError::Io)?;
        let wanted = self.me().map_or(NO_NODE, |n| n.0);
        let session = auth::initiate(&mut s, self.key(), wanted, d)?;
        let gids = self.lock().my_gids.clone();
        let gids = &gids[..gids.len().min(MAX_GIDS)];
        let mut w = Writer::default()
            .u64(self.boot)
            .u16(wanted)
            .u16(self.listen.port())
            .u16(gids.len() as u16);
        for g in gids {
            w = w.gid(*g);
        }
        auth::write_all(&mut s, &session.finish(Kind::Register, wanted, 0, &w.0), d)?;
        let (hdr, body) = auth::read_frame(&mut s, 64, d)?;
        if hdr.kind != Kind::Welcome {
            return Err(HandshakeError::Unexpected(hdr.kind));
        }
        let mut r = Reader::new(Kind::Welcome, &body);
        let id = r.u16().map_err(HandshakeError::Frame)?;
        if id == 0 || id == NO_NODE {
            return Err(HandshakeError::Frame(FrameError::Body(Kind::Welcome)));
        }
        self.me.store(u32::from(id), Ordering::Release);
        let c = self.new_conn(NodeId(0), s).map_err(HandshakeError::Io)?;
        {
            let mut st = self.lock();
            st.recompute_owners(Some(id));
        }
        self.install(c);
        // GIDs set between taking our id and installing the connection found
        // no connection to go on: send them now (set_gids sends later
        // changes).
        let st = self.lock();
        if st.my_gids[..] != *gids {
            if let Some(c) = st.conns.get(&0) {
                c.control(gids_frame(id, id, true, &st.my_gids));
            }
        }
        drop(st);
        *self
            .registration_error
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
        Ok(NodeId(id))
    }

    /// A worker connects to a peer with a higher id.
    fn connect_peer(self: &Arc<Self>, p: Peer) -> Result<(), HandshakeError> {
        let other = |m: &str| HandshakeError::Io(io::Error::other(m.to_string()));
        let me = self.me().ok_or_else(|| other("not registered"))?;
        let addr = p.addr.ok_or_else(|| other("no address"))?;
        let d = Deadline::after(self.cfg.handshake_timeout);
        let mut s = TcpStream::connect_timeout(&addr, self.cfg.handshake_timeout)
            .map_err(HandshakeError::Io)?;
        s.set_nodelay(true).map_err(HandshakeError::Io)?;
        let session = auth::initiate(&mut s, self.key(), me.0, d)?;
        let hello = Writer::default().u16(me.0).u64(self.boot).0;
        auth::write_all(
            &mut s,
            &session.finish(Kind::Hello, me.0, p.id.0, &hello),
            d,
        )?;
        let (hdr, body) = auth::read_frame(&mut s, 64, d)?;
        let mut r = Reader::new(Kind::HelloAck, &body);
        if hdr.kind != Kind::HelloAck || r.u16().map_err(HandshakeError::Frame)? != p.id.0 {
            return Err(HandshakeError::Unexpected(hdr.kind));
        }
        let c = self.new_conn(p.id, s).map_err(HandshakeError::Io)?;
        self.install(c);
        Ok(())
    }

    // ---- the long-running threads ----

    /// A worker's connect thread: registration, heartbeats toward the
    /// manager, reconnection, and direct links to peers.
    fn worker_loop(self: &Arc<Self>, host: String, port: u16) {
        let hb = self.cfg.heartbeat;
        let mut backoff = Duration::from_millis(20);
        while !self.stop.load(Ordering::Relaxed) {
            let manager = self.lock().conns.get(&0).cloned();
            match manager {
                None => match self.register(&host, port) {
                    Ok(id) => {
                        self.log(Level::Info, format_args!("registered as node {}", id.0));
                        backoff = Duration::from_millis(20);
                    }
                    Err(e) => {
                        self.registration_failed(&host, port, &e);
                        thread::sleep(backoff);
                        backoff = (backoff * 2).min(hb);
                        continue;
                    }
                },
                Some(c) => {
                    let quiet = c.silence();
                    if quiet > hb * 3 {
                        self.log(
                            Level::Warn,
                            format_args!(
                                "the manager has been silent for {quiet:?}; registering again"
                            ),
                        );
                        c.close();
                        continue;
                    }
                    if quiet > hb {
                        let me = self.me().map_or(NO_NODE, |n| n.0);
                        c.heartbeat(frame::frame(Kind::Heartbeat, me, 0, &[]));
                    }
                }
            }
            // Direct links: this node connects to every alive peer with a higher id.
            if !self.cfg.direct {
                let st = self.lock();
                let _ = self.changed.wait_timeout(st, hb / 4);
                continue;
            }
            let me = self.me().map_or(0, |n| n.0);
            let todo: Vec<Peer> = {
                let st = self.lock();
                st.topology
                    .iter()
                    .filter(|p| {
                        p.alive && p.id.0 > me && p.id.0 != 0 && !st.conns.contains_key(&p.id.0)
                    })
                    .copied()
                    .collect()
            };
            for p in todo {
                if let Err(e) = self.connect_peer(p) {
                    let level = if e.about_the_key() {
                        Level::Warn
                    } else {
                        Level::Info
                    };
                    self.log(
                        level,
                        format_args!(
                            "cannot reach node {} directly ({}); the manager relays",
                            p.id.0,
                            full(&e)
                        ),
                    );
                }
            }
            let st = self.lock();
            let _ = self.changed.wait_timeout(st, hb / 4);
        }
    }

    /// The manager's health-check thread: heartbeats, and dead nodes.
    fn health_loop(self: &Arc<Self>) {
        let hb = self.cfg.heartbeat;
        while !self.stop.load(Ordering::Relaxed) {
            let conns: Vec<Arc<Conn>> = self.lock().conns.values().cloned().collect();
            for c in conns {
                if c.silence() > hb * 3 {
                    self.log(
                        Level::Warn,
                        format_args!(
                            "node {} has been silent for {:?}: dead",
                            c.peer.0,
                            c.silence()
                        ),
                    );
                    self.closed(&c);
                } else {
                    c.heartbeat(frame::frame(Kind::Heartbeat, 0, c.peer.0, &[]));
                }
            }
            thread::sleep(hb);
        }
    }

    /// The manager's broadcast thread: sends topology and GID changes.
    fn broadcast_loop(self: &Arc<Self>) {
        while !self.stop.load(Ordering::Relaxed) {
            let mut st = self.lock();
            if st.dirty_gids.is_empty() && !st.dirty_topology && st.send_all_to.is_empty() {
                st = self
                    .changed
                    .wait_timeout(st, self.cfg.heartbeat)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            let dirty: Vec<u16> = std::mem::take(&mut st.dirty_gids).into_iter().collect();
            let topo = std::mem::take(&mut st.dirty_topology);
            let fresh = std::mem::take(&mut st.send_all_to);
            let conns: Vec<Arc<Conn>> = st.conns.values().cloned().collect();
            let topo_frame = frame::frame(Kind::Topology, 0, NO_NODE, &topology_body(&st.table));
            let gid_frames: BTreeMap<u16, Vec<u8>> = st
                .table
                .iter()
                .map(|(id, r)| (*id, gids_frame(0, *id, r.alive, &r.gids)))
                .collect();
            st.topology = table_peers(&st.table);
            drop(st);
            for c in &conns {
                if fresh.contains(&c.peer.0) {
                    c.control(topo_frame.clone());
                    for f in gid_frames.values() {
                        c.control(f.clone());
                    }
                    continue;
                }
                if topo {
                    c.control(topo_frame.clone());
                }
                for id in &dirty {
                    if let Some(f) = gid_frames.get(id) {
                        c.control(f.clone());
                    }
                }
            }
        }
    }

    pub fn spawn_threads(self: &Arc<Self>, listener: TcpListener) {
        let s = self.clone();
        let _ = thread::Builder::new()
            .name("mesh-accept".into())
            .spawn(move || s.accept_loop(listener));
        if self.same_host.is_some() {
            let s = self.clone();
            let _ = thread::Builder::new()
                .name("mesh-same-host".into())
                .spawn(move || s.same_host_loop());
        }
        match self.cfg.spec.clone() {
            Spec::Manager { .. } => {
                let s = self.clone();
                let _ = thread::Builder::new()
                    .name("mesh-health".into())
                    .spawn(move || s.health_loop());
                let s = self.clone();
                let _ = thread::Builder::new()
                    .name("mesh-broadcast".into())
                    .spawn(move || s.broadcast_loop());
            }
            Spec::Worker { host, port } => {
                let s = self.clone();
                let _ = thread::Builder::new()
                    .name("mesh-connect".into())
                    .spawn(move || s.worker_loop(host, port));
            }
        }
    }

    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.poller_idle();
        let conns: Vec<Arc<Conn>> = {
            let mut st = self.lock();
            let v = st.conns.drain().map(|(_, c)| c).collect();
            self.publish_conns(&st);
            v
        };
        for c in conns {
            c.close();
        }
        self.changed.notify_all();
        self.inbound.wake_all();
    }
}

impl State {
    /// The next id to give out, from 1 to `max`, in turn: not in the table,
    /// and not released within `quarantine` of `now`.
    fn free_id(&mut self, max: u16, quarantine: Duration, now: Instant) -> Option<u16> {
        let max = max.clamp(1, NO_NODE - 1);
        for _ in 0..max {
            let id = self.next_id.clamp(1, max);
            self.next_id = if id >= max { 1 } else { id + 1 };
            if self.table.contains_key(&id) {
                continue;
            }
            match self.released.get(&id) {
                Some(t) if now.duration_since(*t) < quarantine => continue,
                Some(_) => {
                    self.released.remove(&id);
                }
                None => {}
            }
            return Some(id);
        }
        None
    }

    /// Recomputes GID ownership: a GID belongs to the one alive node that
    /// claims it; a contested GID belongs to no one.
    fn recompute_owners(&mut self, me: Option<u16>) {
        let mut claims: HashMap<Gid, (u16, u32)> = HashMap::new();
        let mut claim = |g: Gid, n: u16| {
            let e = claims.entry(g).or_insert((n, 0));
            if e.0 != n || e.1 == 0 {
                e.1 += 1;
            }
            e.0 = n;
        };
        if !self.table.is_empty() {
            for (id, r) in &self.table {
                if r.alive {
                    for g in &r.gids {
                        claim(*g, *id);
                    }
                }
            }
        } else {
            for (id, (alive, gids)) in &self.node_gids {
                if *alive && Some(*id) != me {
                    for g in gids {
                        claim(*g, *id);
                    }
                }
            }
            if let Some(me) = me {
                for g in self.my_gids.clone() {
                    claim(g, me);
                }
            }
        }
        self.owners = claims
            .into_iter()
            .filter(|(_, (_, n))| *n == 1)
            .map(|(g, (o, _))| (g, o))
            .collect();
    }
}

fn gids_frame(src: u16, node: u16, alive: bool, gids: &[Gid]) -> Vec<u8> {
    let mut w = Writer::default()
        .u16(node)
        .u8(u8::from(alive))
        .u16(gids.len() as u16);
    for g in gids {
        w = w.gid(*g);
    }
    frame::frame(Kind::Gids, src, NO_NODE, &w.0)
}

/// Reads a GIDS body (node, alive, count, GIDs); public for the fuzz
/// targets (`fuzz/`), re-exported at the crate root.
pub fn parse_gids(body: &[u8]) -> Result<(u16, bool, Vec<Gid>), FrameError> {
    let mut r = Reader::new(Kind::Gids, body);
    let node = r.u16()?;
    let alive = r.u8()? != 0;
    let gids = read_gids(&mut r, Kind::Gids)?;
    r.end()?;
    Ok((node, alive, gids))
}

/// A GID count and as many GIDs, at most [`MAX_GIDS`].
fn read_gids(r: &mut Reader<'_>, kind: Kind) -> Result<Vec<Gid>, FrameError> {
    let n = usize::from(r.u16()?);
    if n > MAX_GIDS {
        return Err(FrameError::Body(kind));
    }
    (0..n).map(|_| r.gid()).collect()
}

/// A registration's payload: boot id, wanted id, listen port, GIDs;
/// public for the fuzz targets (`fuzz/`), re-exported at the crate root.
pub fn parse_register(body: &[u8]) -> Result<(u64, u16, u16, Vec<Gid>), FrameError> {
    let mut r = Reader::new(Kind::Register, body);
    let (boot, wanted, port) = (r.u64()?, r.u16()?, r.u16()?);
    let gids = read_gids(&mut r, Kind::Register)?;
    r.end()?;
    Ok((boot, wanted, port, gids))
}

fn table_peers(table: &BTreeMap<u16, Rec>) -> Vec<Peer> {
    table
        .iter()
        .map(|(id, r)| Peer {
            id: NodeId(*id),
            alive: r.alive,
            addr: r.addr,
        })
        .collect()
}

fn topology_body(table: &BTreeMap<u16, Rec>) -> Vec<u8> {
    let mut w = Writer::default().u16(table.len() as u16);
    for (id, r) in table {
        let (ip, port) = match r.addr {
            Some(a) => (
                match a.ip() {
                    IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                    IpAddr::V6(v6) => v6,
                },
                a.port(),
            ),
            None => (Ipv6Addr::UNSPECIFIED, 0),
        };
        w = w
            .u16(*id)
            .u8(u8::from(r.alive))
            .gid(Gid(ip.octets()))
            .u16(port);
    }
    w.0
}

/// Reads a TOPOLOGY body (count, then id, alive, address, port each);
/// public for the fuzz targets (`fuzz/`), re-exported at the crate root.
pub fn parse_topology(body: &[u8]) -> Result<Vec<Peer>, FrameError> {
    let mut r = Reader::new(Kind::Topology, body);
    let n = r.u16()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let id = r.u16()?;
        let alive = r.u8()? != 0;
        let ip = Ipv6Addr::from(r.gid()?.0);
        let port = r.u16()?;
        let addr = (port != 0).then(|| match ip.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), port),
            None => SocketAddr::new(IpAddr::V6(ip), port),
        });
        out.push(Peer {
            id: NodeId(id),
            alive,
            addr,
        });
    }
    r.end()?;
    Ok(out)
}

/// A number that tells this process apart from a restarted one.
fn boot_id() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let pid = u64::from(std::process::id());
    let addr = &t as *const u64 as u64;
    (t ^ pid.rotate_left(32) ^ addr.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// Free buffers by size class, so the frames of large writes are reused
/// (a fresh one costs a page fault per 4 KiB when first written) and the
/// many small ones never crowd them out.
#[derive(Default)]
pub(crate) struct Pool {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
    large_bytes: usize,
}

impl Pool {
    const SMALL: usize = 64 << 10;
    const MAX_SMALL: usize = 256;
    const MAX_LARGE: usize = 32;
    const MAX_LARGE_BYTES: usize = 256 << 20;

    /// The smallest free buffer that holds `len` bytes.
    fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        if len <= Pool::SMALL {
            if let Some(i) = self.small.iter().rposition(|b| b.capacity() >= len) {
                return Some(self.small.swap_remove(i));
            }
        }
        let i = self
            .large
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)?;
        let b = self.large.swap_remove(i);
        self.large_bytes -= b.capacity();
        Some(b)
    }

    fn give(&mut self, b: Vec<u8>) {
        if b.capacity() <= Pool::SMALL {
            if self.small.len() < Pool::MAX_SMALL {
                self.small.push(b);
            }
        } else if self.large.len() < Pool::MAX_LARGE
            && self.large_bytes + b.capacity() <= Pool::MAX_LARGE_BYTES
        {
            self.large_bytes += b.capacity();
            self.large.push(b);
        }
    }
}

#[cfg(test)]
mod pool_tests {
    use super::Pool;

    #[test]
    fn small_buffers_never_crowd_out_large_ones_and_fit_is_best() {
        let mut p = Pool::default();
        for _ in 0..1000 {
            p.give(vec![0u8; 100]);
        }
        p.give(vec![0u8; 32 << 20]);
        p.give(vec![0u8; 16 << 20]);
        let b = p.take(10 << 20).expect("a large buffer is kept");
        assert_eq!(b.capacity(), 16 << 20, "the smallest that fits");
        assert_eq!(p.take(100).map(|b| b.capacity()), Some(100));
        assert_eq!(p.take(64 << 20), None);
        for _ in 0..20 {
            p.give(vec![0u8; 16 << 20]);
        }
        assert!(p.large_bytes <= Pool::MAX_LARGE_BYTES);
    }
}

/// The side a fresh node plays in [`respond_to_handshake`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Responder {
    /// The manager, which a worker registers with.
    Manager,
    /// Worker `me`, which a peer says hello to.
    Worker(u16),
}

fn fresh_node(key: Option<MeshKey>, spec: Spec, deadline: Duration) -> Arc<Shared> {
    let mut cfg = MeshConfig::new(spec);
    cfg.key = Ok(key);
    cfg.same_host = false;
    cfg.handshake_timeout = deadline;
    Arc::new(Shared::new(cfg, SocketAddr::from(([127, 0, 0, 1], 0))))
}

/// Runs the real responder side of one TCP handshake (`auth`, then the
/// registration or the hello, the id given out and the connection
/// installed) on `stream`, as a new node with `key` and `deadline` would,
/// then shuts that node down. Public for the fuzz targets (`fuzz/`),
/// re-exported at the crate root.
pub fn respond_to_handshake(
    stream: TcpStream,
    key: Option<MeshKey>,
    role: Responder,
    deadline: Duration,
) -> Result<(), HandshakeError> {
    let node = match role {
        Responder::Manager => fresh_node(key, Spec::Manager { port: 0 }, deadline),
        Responder::Worker(me) => {
            let spec = Spec::Worker {
                host: "127.0.0.1".into(),
                port: 0,
            };
            let node = fresh_node(key, spec, deadline);
            node.me.store(u32::from(me), Ordering::Release);
            node
        }
    };
    let r = node.handshake_in(stream);
    node.shutdown();
    r
}

/// Runs the real responder side of one same-host proof (`auth`, then the
/// SAME_HOST payload, judged against node `me`'s connections: a fresh node
/// has none) on `stream`, as a new node with `key` and `deadline` would.
/// Public for the fuzz targets (`fuzz/`), re-exported at the crate root.
pub fn respond_to_same_host(
    stream: std::os::unix::net::UnixStream,
    key: Option<MeshKey>,
    me: u16,
    deadline: Duration,
) -> Result<(), HandshakeError> {
    let spec = Spec::Worker {
        host: "127.0.0.1".into(),
        port: 0,
    };
    let node = fresh_node(key, spec, deadline);
    node.me.store(u32::from(me), Ordering::Release);
    let r = node.check_proof(stream);
    node.shutdown();
    r
}
