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
//!
//! One file per part: `conns` (a connection's life and its receive
//! thread), `poller` (a polling thread doing the I/O itself), `routing`
//! (where each frame goes, and the relay), `handshake` (admission at the
//! door), `table` (the manager's node table: admission, ids, quarantine),
//! `manager` (the table's glue, health checks, broadcasts), `worker`
//! (registration and direct links), `gids` (GID ownership), `control` (the
//! control frames' bodies), `pool` (buffers reused); log lines go through `tracing`, each with the node's id as `node`.

mod conns;
mod control;
mod gids;
mod handshake;
mod manager;
mod poller;
mod pool;
mod routing;
mod table;
mod worker;

use std::collections::{BTreeSet, HashMap};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

use ernic_core::{Gid, Injector, NodeId};

use crate::conn::Conn;
use crate::inbound::Inbound;
use crate::key::MeshKey;
use crate::stats::MeshStats;
use crate::{MeshConfig, Spec};

pub use control::{parse_gids, parse_register, parse_topology};
pub use handshake::{Responder, respond_to_handshake, respond_to_same_host};
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

use handshake::{Handshakes, Refusals};
use pool::Pool;
use table::{Limits, NodeTable};

pub use table::AdmitError;

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

/// What the node's lock guards: its connections, its view of the mesh, and
/// on the manager the table and what the broadcast thread has yet to send.
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
    /// The manager's table (empty on a worker).
    table: NodeTable,
    dirty_gids: BTreeSet<u16>,
    dirty_topology: bool,
    send_all_to: Vec<u16>,
}

/// What a node's threads share: its configuration, the state behind its
/// lock, the inbound queue and buffer pool, and the bookkeeping of its
/// pollers and handshakes.
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
    /// The connections, for pollers (a snapshot replaced on every change).
    conn_list: Mutex<Arc<Vec<Arc<Conn>>>>,
    /// When a thread last polled the connections itself ([`Shared::poll_io`]),
    /// in microseconds since `epoch`.
    polled: AtomicU64,
    epoch: Instant,
    /// Calls of `poll_io`, to read the clock on a few of them only.
    poll_calls: AtomicU64,
    /// At the last poll, every connection's data came through a ring (a
    /// poll then costs memory reads, not a system call).
    pub(crate) all_rings: AtomicBool,
    /// Replies queued to wait for a flush, ever ([`crate::Mesh::replies_queued`]).
    pub replies_queued: AtomicU64,
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
    /// The counters, per peer and mesh-wide.
    pub stats: MeshStats,
    /// Faults injected into outgoing data messages (`mesh_drop`,
    /// `mesh_delay`, `mesh_cut`).
    pub injector: Arc<Injector>,
}

/// Most GIDs one node may claim: its registration and each GID frame are
/// refused past it, so no node makes the table or a broadcast large.
pub(crate) const MAX_GIDS: usize = 256;

const NO_ID: u32 = u32::MAX;

impl Shared {
    pub fn new(mut cfg: MeshConfig, listen: SocketAddr) -> Shared {
        cfg.gids.truncate(MAX_GIDS);
        let manager = matches!(cfg.spec, Spec::Manager { .. });
        let boot = boot_id();
        let inbound = Inbound::new(cfg.inbound_bytes, cfg.inbound_msgs, cfg.stall_drop);
        let mut st = State {
            conns: HashMap::new(),
            my_gids: cfg.gids.clone(),
            node_gids: HashMap::new(),
            owners: HashMap::new(),
            topology: Vec::new(),
            table: NodeTable::new(Limits {
                max_nodes: cfg.max_nodes,
                max_id: cfg.max_id,
                quarantine: cfg.id_quarantine,
            }),
            dirty_gids: BTreeSet::new(),
            dirty_topology: false,
            send_all_to: Vec::new(),
        };
        if manager {
            st.table.insert_manager(boot, listen, cfg.gids.clone());
            st.dirty_gids.insert(0);
            st.recompute_owners(Some(0));
        }
        let same_host = if cfg.same_host {
            crate::same_host::Listener::bind()
                .map_err(|e| {
                    tracing::info!(error = %e, "no same-host path; every payload goes over TCP");
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
            conn_list: Mutex::new(Arc::new(Vec::new())),
            polled: AtomicU64::new(0),
            epoch: Instant::now(),
            poll_calls: AtomicU64::new(0),
            all_rings: AtomicBool::new(false),
            replies_queued: AtomicU64::new(0),
            poller_gone: (Mutex::new(0), Condvar::new()),
            poller_in_pass: AtomicBool::new(false),
            handshaking: AtomicUsize::new(0),
            handshakes: (Mutex::new(Handshakes::default()), Condvar::new()),
            refusals: Refusals::default(),
            registration_error: Mutex::new(None),
            stats: MeshStats::default(),
            injector: cfg.injector.clone(),
            cfg,
        }
    }

    /// The mesh key, if this node has one.
    pub fn key(&self) -> Option<&MeshKey> {
        self.cfg.key.as_ref().ok().and_then(|k| k.as_ref())
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This node's id for a log line (`?` before it registered).
    pub fn who(&self) -> String {
        self.me().map_or("?".to_string(), |n| n.0.to_string())
    }

    pub fn me(&self) -> Option<NodeId> {
        match self.me.load(Ordering::Acquire) {
            NO_ID => None,
            v => Some(NodeId(v as u16)),
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

    pub fn peers(&self) -> Vec<(Peer, bool)> {
        let st = self.lock();
        st.topology
            .iter()
            .map(|p| (*p, st.conns.get(&p.id.0).is_some_and(|c| !c.is_closed())))
            .collect()
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
