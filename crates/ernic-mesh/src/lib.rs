//! # ernic-mesh: the TCP mesh between ernic servers
//!
//! Seed 001's "More Than One VM: the TCP Mesh", as a backend of
//! `ernic-core`. One node is the manager (node 0); workers register with it
//! and get ids 1, 2, … in turn; the manager broadcasts the topology and
//! every node's GIDs; workers connect directly to each other (the lower id
//! connects to the higher) and reach a node they have no link to through
//! the manager, which relays. Heartbeats run both ways; a node silent for
//! three intervals is dead; a quiet node that comes back keeps its id, a
//! restarted one gets a new id; the table holds at most 64 nodes
//! (`ERNIC_TCP_MAX_NODES`). Ids wrap around, skipping ids in the table and
//! ids whose node left it less than [`MeshConfig::id_quarantine`] (10 s)
//! ago, so churn never uses them up and no live reference meets a stranger.
//!
//! ## Admission
//!
//! Every connection (a worker registering, a worker connecting to a peer, a
//! process proving itself on the same-host socket) opens with the handshake
//! of the `auth` module: with a mesh key (see [`key`]: `ERNIC_MESH_KEY_FILE`
//! or `ERNIC_MESH_KEY`), both sides prove they hold it (HMAC-SHA256 over
//! nonces from both sides) before anything else the peer says is read and
//! before an id is given out; a keyless or wrong-key node is refused, and
//! both sides say why. Without a key any process that reaches the port can
//! join and then name any guest's memory by rkey: a keyless node that
//! listens beyond loopback says so in one warning line at start
//! (`ERNIC_TCP_LISTEN=127.0.0.1` keeps a mesh on this host; a worker whose
//! manager is a loopback address listens on loopback by itself). The whole
//! handshake has one deadline ([`MeshConfig::handshake_timeout`], 5 s), and
//! at most [`MeshConfig::max_handshakes`] (64) run at once: one more is
//! refused and closed at once. A node of another protocol version is
//! refused in words its version reads.
//!
//! Nodes on one host (and in one network namespace) also prove to each
//! other which process each is; a proved peer then reads large WRITE and
//! SEND payloads straight from the requester's memory, and only the request
//! crosses TCP (see the `same_host` module; `ERNIC_TCP_SAME_HOST=0` turns it
//! off).
//!
//! What it promises the device thread: it never waits for a peer (sending
//! queues, [`Carrier`] refuses with `Busy` when a connection's queue is full);
//! memory for peers' messages is bounded by the inbound queue; nothing queued
//! is lost while the device loop runs. The device loop's pass itself (apply
//! what arrived, run timers, hand completions on) is [`Mesh::pass`], the
//! one every front end runs (see [`pump`]).
//!
//! ## Counters and injected faults
//!
//! Every connection counts what it carries, per peer, and the node counts
//! the mesh's changes (see the `stats` module for the list);
//! [`Mesh::stats_groups`] gives them to a stats file as groups of kind
//! `mesh` and `mesh_peer`. Counting is relaxed atomics on the thread doing
//! the work: no lock, no allocation on the send or receive path.
//! [`MeshConfig::injector`] makes chosen data messages fail (dropped,
//! delayed on their connection, or their connection cut) on a pattern of
//! message counts; heartbeats, control frames and handshakes never count,
//! so a fault spec fails the same requests on every run of a workload.
//!
//! ## Limits, and the most memory a peer can make a node hold
//!
//! Per connection (one per peer, and one to the manager):
//! - queued to send: requests up to [`MeshConfig::max_requests`] (32 MiB)
//!   and replies up to [`MeshConfig::max_replies`] (64 MiB) (an empty queue
//!   takes one message of any size, at most a frame: 16 MiB and 112 bytes),
//!   control frames up to 16 MiB (a peer that reads none of them while the
//!   mesh changes is cut off), one heartbeat and one answer;
//! - being read: one frame (at most 16 MiB and 112 bytes) and a 64 KiB
//!   staging buffer;
//! - at the manager, the node's record: at most 256 GIDs (4 KiB).
//!
//! Shared by all peers: the inbound queue ([`MeshConfig::inbound_bytes`],
//! 64 MiB, and [`MeshConfig::inbound_msgs`], 4,096 messages); free buffers
//! kept for reuse (256 of at most 64 KiB, 32 larger ones of at most 256 MiB
//! in all); 64 handshakes of at most 4.2 KiB each and 16 same-host proofs;
//! the ids in quarantine (at most one entry per id, under 2 MiB).
//! So a node with `n` connections holds at most about `n` × 128 MiB plus
//! 64 MiB plus 272 MiB of buffers it reuses; a stranger without the key
//! holds only a handshake (4.2 KiB and a thread, for at most the deadline).
//!
//! ```no_run
//! use ernic_mesh::{Mesh, MeshConfig};
//! let mesh = Mesh::start(MeshConfig::new("tcp:manager:listen:5000".parse()?))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod auth;
mod conn;
pub mod frame;
mod inbound;
pub mod key;
mod node;
pub mod pump;
#[allow(unsafe_code)]
pub mod ring;
#[allow(unsafe_code)]
mod same_host;
pub mod spec;
mod stats;
#[allow(unsafe_code)]
mod sys;

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ernic_core::inject::Event;
use ernic_core::{Gid, Injector, NodeId, Outgoing, PeerReadError, PeerRun, Remote, SendError};

pub use auth::HandshakeError;
pub use inbound::Message;
pub use key::{KeyError, MeshKey};
pub use node::{AdmitError, Peer};
/// The responder sides of the handshakes, for the fuzz targets.
pub use node::{Responder, respond_to_handshake, respond_to_same_host};
/// The control-body decoders, for the fuzz targets.
pub use node::{parse_gids, parse_register, parse_topology};
pub use pump::{HELD_GIVE_UP, PassOptions, PassTarget};
pub use spec::{Spec, SpecError};

use crate::conn::QueueError;
use crate::frame::{HEADER_LEN, Header, Kind};

/// The mesh's limits and timers.
#[derive(Clone, Debug)]
pub struct MeshConfig {
    /// Manager or worker, and where.
    pub spec: Spec,
    /// Port a worker listens on for its peers (0: any free port). The
    /// manager listens on the spec's port.
    pub listen_port: u16,
    /// The address to listen on (`ERNIC_TCP_LISTEN`, say `127.0.0.1` for a
    /// mesh that stays on this host), or why the variable is not one. None:
    /// every address, both families where the host has IPv6, except for a
    /// worker whose manager is a loopback address, which listens there.
    pub listen_ip: Result<Option<IpAddr>, String>,
    /// The GIDs this node owns.
    pub gids: Vec<Gid>,
    /// Heartbeat interval; a node silent for three is dead.
    pub heartbeat: Duration,
    /// A send that makes no progress for this long shuts its connection
    /// down (`ERNIC_TCP_SEND_TIMEOUT_MS`; the manager uses half).
    pub send_timeout: Duration,
    /// How long a new connection's whole handshake may take (5 s), from
    /// its first byte to its last, however the bytes trickle in.
    pub handshake_timeout: Duration,
    /// Connections in their handshake at once (64); one more is refused
    /// and closed at once.
    pub max_handshakes: usize,
    /// The mesh key (`ERNIC_MESH_KEY_FILE` or `ERNIC_MESH_KEY`; see the
    /// [`key`] module), or the reason it could not be read, which
    /// [`Mesh::start`] reports instead of starting without it.
    pub key: Result<Option<MeshKey>, KeyError>,
    /// How long a node id stays unused after its node left the table
    /// before the manager gives it to another node (10 s: the workers have
    /// long since heard that the node is gone, and closed its links).
    pub id_quarantine: Duration,
    /// Highest node id the manager gives out (65534, the most frames can
    /// carry); ids are given in turn and wrap around to 1.
    pub max_id: u16,
    /// Requests queued per connection (32 MiB).
    pub max_requests: usize,
    /// Replies queued per connection (64 MiB).
    pub max_replies: usize,
    /// Inbound queue bound in bytes (64 MiB).
    pub inbound_bytes: usize,
    /// Inbound queue bound in messages (4096).
    pub inbound_msgs: usize,
    /// After this long with no device loop pass, a full inbound queue drops
    /// what comes (2 s).
    pub stall_drop: Duration,
    /// Most nodes in the manager's table (64; `ERNIC_TCP_MAX_NODES`, from 2
    /// to 1024).
    pub max_nodes: usize,
    /// Whether workers connect directly to each other (`ERNIC_TCP_DIRECT=0`
    /// turns it off, for networks where they cannot reach each other: the
    /// manager then relays everything between workers).
    pub direct: bool,
    /// Whether nodes on this host read large payloads from each other's
    /// memory instead of through TCP (`ERNIC_TCP_SAME_HOST=0` turns it off;
    /// see the `same_host` module).
    pub same_host: bool,
    /// Bytes of each direction's shared-memory ring on a same-host
    /// connection, which then carries its data frames instead of TCP
    /// (`ERNIC_TCP_SHM_RING`: a power of two from 4 KiB to 64 MiB; 0 turns
    /// the rings off; 256 KiB by default; off with `same_host`).
    pub shm_ring: usize,
    /// Faults to inject into the data messages this node sends (none
    /// unless said): `mesh_drop` (the message is not sent), `mesh_delay=MS`
    /// (the message, and what its connection carries after it, goes MS
    /// later, from the send thread), `mesh_cut` (its connection is closed
    /// as it is about to go, and the message is lost with it). Only the
    /// engine's messages (requests and replies) count as events, each once
    /// when it is handed to a connection with room for it; heartbeats,
    /// control frames and handshakes never do,
    /// so the mesh's own upkeep is not what fails. A manager also counts
    /// each data frame it relays (a relayed frame dropped, held, or its
    /// target's connection cut).
    pub injector: Arc<Injector>,
}

impl MeshConfig {
    /// The seed's defaults, with the mesh key, `ERNIC_TCP_SEND_TIMEOUT_MS`,
    /// `ERNIC_TCP_MAX_NODES`, `ERNIC_TCP_DIRECT` and `ERNIC_TCP_SAME_HOST`
    /// read from the environment.
    pub fn new(spec: Spec) -> MeshConfig {
        let send_ms = std::env::var("ERNIC_TCP_SEND_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(10_000);
        MeshConfig {
            spec,
            listen_port: 0,
            listen_ip: match std::env::var("ERNIC_TCP_LISTEN") {
                Ok(v) if !v.is_empty() => v
                    .parse::<IpAddr>()
                    .map(Some)
                    .map_err(|_| format!("ERNIC_TCP_LISTEN={v:?} is not an IP address")),
                _ => Ok(None),
            },
            gids: Vec::new(),
            heartbeat: Duration::from_secs(1),
            send_timeout: Duration::from_millis(send_ms),
            handshake_timeout: Duration::from_secs(5),
            max_handshakes: 64,
            key: MeshKey::from_env(),
            id_quarantine: Duration::from_secs(10),
            max_id: frame::NO_NODE - 1,
            max_requests: 32 << 20,
            max_replies: 64 << 20,
            inbound_bytes: 64 << 20,
            inbound_msgs: 4096,
            stall_drop: Duration::from_secs(2),
            max_nodes: std::env::var("ERNIC_TCP_MAX_NODES")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .map_or(64, |n| n.clamp(2, 1024)),
            direct: std::env::var("ERNIC_TCP_DIRECT").map_or(true, |v| v != "0"),
            same_host: std::env::var("ERNIC_TCP_SAME_HOST").map_or(true, |v| v != "0"),
            shm_ring: std::env::var("ERNIC_TCP_SHM_RING")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(DEFAULT_SHM_RING),
            injector: Arc::default(),
        }
    }
}

/// Bytes of each direction's shared-memory ring by default.
pub const DEFAULT_SHM_RING: usize = 256 << 10;

/// A mesh node: its threads, connections and queues.
pub struct Mesh {
    shared: Arc<node::Shared>,
}

impl std::fmt::Debug for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mesh(node {:?})", self.node_id())
    }
}

impl Mesh {
    /// Starts the node: binds its listening socket (both address families
    /// where the host has IPv6) and its threads. A worker registers in the
    /// background; [`wait_registered`](Mesh::wait_registered) waits for it.
    ///
    /// Fails when the mesh key the environment names cannot be read, or
    /// `ERNIC_TCP_LISTEN` is not an address. A node without a key that
    /// listens beyond loopback says so in one warning line. A worker whose manager is a loopback address listens on
    /// loopback only: every peer it can have is on this host.
    pub fn start(cfg: MeshConfig) -> io::Result<Mesh> {
        if let Err(e) = &cfg.key {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, e.clone()));
        }
        let chosen = cfg
            .listen_ip
            .clone()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let (port, local) = match &cfg.spec {
            Spec::Manager { port } => (*port, chosen),
            Spec::Worker { host, .. } => (
                cfg.listen_port,
                chosen.or_else(|| host.parse::<IpAddr>().ok().filter(|ip| ip.is_loopback())),
            ),
        };
        let listener = match local {
            Some(ip) => TcpListener::bind((ip, port)),
            None => TcpListener::bind((Ipv6Addr::UNSPECIFIED, port))
                .or_else(|_| TcpListener::bind(("0.0.0.0", port))),
        }
        .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on port {port}: {e}")))?;
        let addr = listener.local_addr()?;
        if matches!(cfg.key, Ok(None)) && !addr.ip().is_loopback() {
            tracing::warn!(
                port = addr.port(),
                "no mesh key, and this node listens on port {} of every address: anyone who reaches it can join the mesh and name its guests' memory by rkey; give every node the same ERNIC_MESH_KEY_FILE",
                addr.port()
            );
        }
        let shared = Arc::new(node::Shared::new(cfg, addr));
        shared.spawn_threads(listener);
        Ok(Mesh { shared })
    }

    /// This node's id, once it has one (the manager is node 0).
    pub fn node_id(&self) -> Option<NodeId> {
        self.shared.me()
    }

    /// Waits up to `timeout` for the node to have an id.
    pub fn wait_registered(&self, timeout: Duration) -> Option<NodeId> {
        let end = std::time::Instant::now() + timeout;
        loop {
            if let Some(id) = self.node_id() {
                return Some(id);
            }
            if std::time::Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Where this node listens.
    pub fn listen_addr(&self) -> SocketAddr {
        self.shared.listen
    }

    /// Tells the mesh this node's GIDs; it advertises them.
    pub fn set_gids(&self, gids: Vec<Gid>) {
        self.shared.set_gids(gids);
    }

    /// The other node that owns `gid`, if exactly one alive node does.
    pub fn owner(&self, gid: &Gid) -> Option<NodeId> {
        self.shared.owner(gid)
    }

    /// The GIDs node `node` owns (this node's own included), in order.
    pub fn gids_of(&self, node: NodeId) -> Vec<Gid> {
        self.shared.gids_of(node)
    }

    /// What the engine sends through.
    pub fn carrier(&self) -> Carrier {
        Carrier {
            shared: self.shared.clone(),
        }
    }

    /// The next message from a peer, if any.
    pub fn pop(&self) -> Option<Message> {
        self.shared.inbound.pop()
    }

    /// Does the I/O that is ready on every connection without blocking:
    /// writes queued data, reads arrived frames into the inbound queue. A
    /// thread that polls anyway calls this so messages need not wait for the
    /// send and receive threads to wake.
    pub fn poll_io(&self) {
        self.shared.poll_io();
    }

    /// Whether, at the last poll, every connection's data came through a
    /// shared-memory ring: polling then costs memory reads, and a thread
    /// may poll as often as it likes.
    pub fn all_rings(&self) -> bool {
        self.shared
            .all_rings
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes what the sockets take now of the queued data (replies deferred
    /// during a device pass), without reading.
    pub fn flush(&self) {
        self.shared.flush();
    }

    /// Writes queued data until every open connection's queue is empty,
    /// for at most `limit` (a process about to exit calls this, so that
    /// what it sent last, a datagram's completion already reported, leaves
    /// before it does). Answers whether everything went.
    pub fn drain(&self, limit: Duration) -> bool {
        let end = std::time::Instant::now() + limit;
        loop {
            self.flush();
            let conns: Vec<_> = self.shared.lock().conns.values().cloned().collect();
            if conns.iter().all(|c| c.is_closed() || c.depth() == 0) {
                return true;
            }
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Gives the connections back to the receive threads (a polling thread
    /// about to sleep calls this).
    pub fn poller_idle(&self) {
        self.shared.poller_idle();
    }

    /// The polling thread is busy with what it read (true), or done (false):
    /// the receive threads keep standing aside meanwhile.
    pub fn poller_busy(&self, busy: bool) {
        self.shared.poller_busy(busy);
    }

    /// Whether some thread polled the connections itself within the last
    /// millisecond (the device thread then need not wake for messages).
    pub fn poller_active(&self) -> bool {
        self.shared.poller_active()
    }

    /// How many replies have been queued to wait for a flush, ever: a
    /// caller that compares it before and after a call knows whether that
    /// call left any (and flushes only then, so replies an earlier pass
    /// left go out with the next request, in one write, and not alone).
    pub fn replies_queued(&self) -> u64 {
        self.shared.replies_queued.load(Ordering::Relaxed)
    }

    /// Whether messages wait.
    pub fn has_messages(&self) -> bool {
        self.shared.inbound.has_messages()
    }

    /// Waits up to `timeout` for a message.
    pub fn wait(&self, timeout: Duration) {
        self.shared.inbound.wait(timeout);
    }

    /// The device is done with a message's buffer (it leaves the inbound
    /// bound and is reused).
    pub fn release(&self, buf: Vec<u8>) {
        self.shared.inbound.release(buf.len());
        self.shared.recycle(buf);
    }

    /// A device loop pass begins.
    pub fn begin_pass(&self) {
        self.shared.inbound.begin_pass();
    }

    /// A device loop pass ends; logs and returns how many messages were
    /// dropped because no pass ran for the stall time.
    pub fn end_pass(&self) -> u64 {
        let n = self.shared.inbound.end_pass();
        if n > 0 {
            let s = &self.shared.stats;
            s.inbound_dropped
                .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            tracing::warn!(node = %self.shared.who(), "dropped {n} messages while the device loop was not running");
        }
        n
    }

    /// How long a receive thread has waited for room in the inbound queue.
    pub fn starved_for(&self) -> Option<Duration> {
        self.shared.inbound.starved_for()
    }

    /// Bytes and messages counted against the inbound bound now.
    pub fn inbound_usage(&self) -> (usize, usize) {
        self.shared.inbound.usage()
    }

    /// The topology this node knows, and whether it has a direct link to each.
    pub fn peers(&self) -> Vec<(Peer, bool)> {
        self.shared.peers()
    }

    /// The same-host path with `peer`: whether it reads this process's
    /// memory (this node sends it large payloads by reference), and whether
    /// this node reads the peer's (it proved which process it is).
    pub fn same_host(&self, peer: NodeId) -> SameHostLink {
        self.shared.same_host_link(peer)
    }

    /// Why this worker's last attempt to register failed (until one
    /// succeeds): a refusal over the mesh key, a full table, no manager.
    pub fn registration_error(&self) -> Option<String> {
        self.shared.registration_error().map(|e| e.0)
    }

    /// Like [`registration_error`](Mesh::registration_error), only when the
    /// manager refused over the mesh key or the protocol version: retrying
    /// will not help until someone changes a node's key or version.
    pub fn registration_refused(&self) -> Option<String> {
        self.shared
            .registration_error()
            .filter(|e| e.1)
            .map(|e| e.0)
    }

    /// Connections refused in their handshake so far (a wrong or missing
    /// key, a stray or drip-feeding peer, one past the handshake cap).
    pub fn refused_handshakes(&self) -> u64 {
        self.shared.refused_handshakes()
    }

    /// Frames the manager could not relay.
    pub fn relay_drops(&self) -> u64 {
        self.shared
            .stats
            .relay_drops
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The faults this node injects (see [`MeshConfig::injector`]).
    pub fn injector(&self) -> &Arc<Injector> {
        &self.shared.injector
    }

    /// The mesh's counters for the stats file: one group of kind `mesh`
    /// (mesh-wide), then one of kind `mesh_peer` per peer this node has
    /// had a connection to (labels `peer`, the node id, and `addr`, where
    /// it listens or else where its connection came from), in id order.
    /// The counters are listed in the `stats` module; reading them takes
    /// the node's lock and each connection's queue lock a moment, as a
    /// stats writer may, and nothing on the data path waits for it.
    pub fn stats_groups(&self) -> Vec<ernic_ops::Group> {
        let sh = &self.shared;
        let (conns, topology) = {
            let st = sh.lock();
            (st.conns.clone(), st.topology.clone())
        };
        let connected = conns.values().filter(|c| !c.is_closed()).count();
        let mut out = vec![sh.stats.mesh_group(sh.inbound.usage(), connected)];
        out.extend(sh.stats.peer_groups(|id| stats::PeerView {
            id,
            listen: topology.iter().find(|p| p.id.0 == id).and_then(|p| p.addr),
            depth: conns.get(&id).filter(|c| !c.is_closed()).map(|c| c.depth()),
        }));
        out
    }

    /// Stops the node: connections close, threads end.
    pub fn shutdown(&self) {
        self.shared.shutdown();
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The same-host path with one peer (see [`Mesh::same_host`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SameHostLink {
    /// The peer reads this process's memory.
    pub reads_me: bool,
    /// This node reads the peer's memory.
    pub read_by_me: bool,
    /// Data frames to the peer go through a shared-memory ring.
    pub shm_out: bool,
    /// Data frames from the peer come through a shared-memory ring.
    pub shm_in: bool,
}

fn send_error(e: QueueError) -> SendError {
    match e {
        QueueError::Full => SendError::Busy,
        QueueError::Closed => SendError::NoRoute,
    }
}

/// The engine's way out: queues data path messages on the mesh.
pub struct Carrier {
    shared: Arc<node::Shared>,
}

impl Remote for Carrier {
    fn owner(&self, gid: &Gid) -> Option<NodeId> {
        self.shared.owner(gid)
    }

    fn send(&mut self, to: NodeId, out: Outgoing<'_>) -> Result<(), SendError> {
        let me = self.shared.me().ok_or(SendError::NoRoute)?;
        let route = {
            let st = self.shared.lock();
            self.shared.route(&st, to)
        };
        let (conn, dst) = route.ok_or(SendError::NoRoute)?;
        if !conn.fits(HEADER_LEN + out.len, out.reply) {
            // Checked before the payload is gathered, so a full connection
            // costs no copy.
            return Err(SendError::Busy);
        }
        // Injected faults, each message counted once by every fault (a full
        // connection above counts nothing: the engine tries that message
        // again). A drop wins over a cut, a cut over a delay.
        let faults = &self.shared.injector;
        let (drop, cut, delay) = (
            faults.check(Event::MeshDrop),
            faults.check(Event::MeshCut),
            faults.check(Event::MeshDelay),
        );
        if drop.is_some() {
            return Ok(());
        }
        if cut.is_some() {
            tracing::info!(peer = conn.peer.0, "mesh_cut: closing the connection");
            conn.close();
            return Ok(());
        }
        let hold = delay.map(|f| Instant::now() + Duration::from_millis(u64::from(f.millis())));
        let mut buf = self.shared.buffer(HEADER_LEN + out.len);
        Header {
            kind: Kind::Data,
            len: out.len as u32,
            src: me.0,
            dst,
        }
        .emit(&mut buf);
        (out.fill)(&mut buf[HEADER_LEN..]);
        if let Some(until) = hold {
            return conn
                .data_held(buf, out.tag, out.reply, until)
                .map_err(|(e, buf)| {
                    self.shared.recycle(buf);
                    send_error(e)
                });
        }
        // Replies wait for the end of the device's pass (`Mesh::poll_io`
        // flushes them), so delivering a request's completion comes first.
        let r = conn.data(buf, out.tag, out.reply, out.reply);
        conn.take_written(&mut |b| self.shared.recycle(b));
        match r {
            Ok(done) => {
                if out.reply {
                    self.shared.replies_queued.fetch_add(1, Ordering::Relaxed);
                }
                if let Some(b) = done {
                    self.shared.recycle(b);
                }
                Ok(())
            }
            Err((e, buf)) => {
                self.shared.recycle(buf);
                Err(send_error(e))
            }
        }
    }

    fn reads_from_me(&self, to: NodeId) -> bool {
        self.shared.same_host_link(to).reads_me
    }

    #[allow(unsafe_code)]
    unsafe fn read_peer(&self, from: NodeId, runs: &[PeerRun]) -> Result<(), PeerReadError> {
        // SAFETY: the caller promised every `local` writable for its `len`.
        unsafe { same_host::read_from(&self.shared, from, runs) }
    }

    fn cancel(&mut self, tag: u64) {
        let conns: Vec<_> = self.shared.lock().conns.values().cloned().collect();
        let mut back = Vec::new();
        for c in conns {
            c.cancel(tag, &mut back);
        }
        for b in back {
            self.shared.recycle(b);
        }
    }
}
