//! The mesh's counters: per peer and mesh-wide, as the stats file carries
//! them (kinds `mesh_peer` and `mesh`; see [`Mesh::stats_groups`]).
//!
//! Every count is a relaxed atomic bumped by the thread that does the work
//! (a connection's send or receive thread, the device thread sending, the
//! health checks, the handshake threads): counting takes no lock and
//! allocates nothing. A peer's counters outlive its connections (a
//! reconnect counts on, and is counted), and the table of them is bounded:
//! past twice the node table's size, peers neither connected nor alive are
//! forgotten when the next connection is installed.
//!
//! What the counters count:
//! - `frames_sent`, `bytes_sent`: data frames (the engine's requests and
//!   replies, and frames relayed) written whole to the peer's connection,
//!   and their bytes with headers; `frames_received`, `bytes_received` the
//!   same, read; `control_frames_sent` and `control_frames_received`: the
//!   rest (heartbeats, topology, GIDs, same-host offers);
//! - `by_ref_reads`, `by_ref_read_bytes`: payloads this node read straight
//!   from the peer's memory (the same-host path);
//! - `shm_frames_sent`, `shm_frames_received`: the data frames of those
//!   counts that went through the connection's shared-memory rings;
//! - `reconnects`: connections to the peer after the first;
//! - `relay_drops`: frames from the peer the manager could not relay;
//! - `heartbeats_missed`: heartbeat intervals past the first that the peer
//!   stayed silent, as the health checks saw them (at three the peer is
//!   dead), on the links that carry heartbeats (worker and manager);
//! - `send_timeouts`: writes that made no progress for the send timeout
//!   (the connection was shut down);
//! - gauges `send_queue_depth` (data frames queued now),
//!   `send_queue_depth_max` (the most ever queued) and `connected`.
//!
//! Mesh-wide: `nodes_joined` and `nodes_died` (the manager's table, or the
//! topology a worker hears), `topology_updates` (broadcast, or heard),
//! `gid_updates` (GID frames heard), `handshakes_refused` and one counter
//! per reason (`handshakes_refused_wrong_key`, …), `frames_malformed`
//! (frames that closed their connection), `relay_drops`, `inbound_dropped`
//! (messages dropped while the device loop stalled), and the gauges
//! `inbound_bytes`, `inbound_messages` and `peers_connected`.
//!
//! [`Mesh::stats_groups`]: crate::Mesh::stats_groups

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use ernic_ops::Group;

use crate::HandshakeError;

/// One peer's counters.
#[derive(Debug, Default)]
pub(crate) struct PeerStats {
    pub frames_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub frames_received: AtomicU64,
    pub bytes_received: AtomicU64,
    pub control_sent: AtomicU64,
    pub control_received: AtomicU64,
    pub by_ref_reads: AtomicU64,
    pub by_ref_bytes: AtomicU64,
    pub shm_sent: AtomicU64,
    pub shm_received: AtomicU64,
    pub queue_depth_max: AtomicU64,
    pub connections: AtomicU64,
    pub heartbeats_missed: AtomicU64,
    pub send_timeouts: AtomicU64,
    pub relay_drops: AtomicU64,
    /// Where the peer's last connection came from (set when it is
    /// installed, off the data path).
    pub addr: Mutex<Option<SocketAddr>>,
}

impl PeerStats {
    /// A data frame of `len` bytes went out whole.
    pub fn sent(&self, len: usize) {
        self.frames_sent.fetch_add(1, Ordering::Relaxed);
        self.bytes_sent.fetch_add(len as u64, Ordering::Relaxed);
    }

    /// A data frame of `len` bytes came in whole.
    pub fn received(&self, len: usize) {
        self.frames_received.fetch_add(1, Ordering::Relaxed);
        self.bytes_received.fetch_add(len as u64, Ordering::Relaxed);
    }

    /// A payload of `len` bytes read from the peer's memory.
    pub fn read_by_ref(&self, len: u64) {
        self.by_ref_reads.fetch_add(1, Ordering::Relaxed);
        self.by_ref_bytes.fetch_add(len, Ordering::Relaxed);
    }
}

/// Why handshakes were refused, as the counters name them.
pub(crate) const REFUSALS: [&str; 9] = [
    "closed",
    "peer_keyless",
    "keyless",
    "wrong_key",
    "version",
    "busy",
    "table_full",
    "deadline",
    "malformed",
];

/// The counter (index into [`REFUSALS`]) a refused handshake counts under.
pub(crate) fn refusal_reason(e: &HandshakeError) -> usize {
    match e {
        HandshakeError::PeerKeyless => 1,
        HandshakeError::NoKey => 2,
        HandshakeError::WrongKey => 3,
        HandshakeError::Version { .. } => 4,
        HandshakeError::Busy { .. } => 5,
        HandshakeError::NotAdmitted(_) => 6,
        HandshakeError::Deadline(_) => 7,
        HandshakeError::Frame(_) | HandshakeError::Unexpected(_) => 8,
        _ => 0,
    }
}

/// The mesh-wide counters.
#[derive(Debug, Default)]
pub(crate) struct MeshStats {
    pub nodes_joined: AtomicU64,
    pub nodes_died: AtomicU64,
    pub topology_updates: AtomicU64,
    pub gid_updates: AtomicU64,
    pub refused: [AtomicU64; REFUSALS.len()],
    pub frames_malformed: AtomicU64,
    pub relay_drops: AtomicU64,
    pub inbound_dropped: AtomicU64,
    /// Every peer's counters, by id.
    peers: Mutex<HashMap<u16, Arc<PeerStats>>>,
}

/// What a snapshot needs of one peer besides its counters.
pub(crate) struct PeerView {
    pub id: u16,
    /// Where it listens, from the topology.
    pub listen: Option<SocketAddr>,
    /// Data frames queued to it now, if it is connected.
    pub depth: Option<usize>,
}

impl MeshStats {
    /// The counters of peer `id`, made on first use. A connection takes
    /// them when it is made; with `keep`, which peers to keep when the table
    /// is past `bound`.
    pub fn peer(&self, id: u16, bound: usize, keep: impl Fn(u16) -> bool) -> Arc<PeerStats> {
        let mut all = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= bound && !all.contains_key(&id) {
            all.retain(|k, _| keep(*k));
        }
        all.entry(id).or_default().clone()
    }

    /// The counters of peer `id`, if it has any.
    pub fn existing(&self, id: u16) -> Option<Arc<PeerStats>> {
        let all = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        all.get(&id).cloned()
    }

    /// Counts a refused handshake under its reason.
    pub fn refused(&self, e: &HandshakeError) {
        self.refused[refusal_reason(e)].fetch_add(1, Ordering::Relaxed);
    }

    /// Handshakes refused, for every reason.
    pub fn refused_total(&self) -> u64 {
        self.refused.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The `mesh` group, with the inbound queue's usage `(bytes, messages)`
    /// and the connections open now.
    pub fn mesh_group(&self, inbound: (usize, usize), connected: usize) -> Group {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut g = Group::new("mesh")
            .counter("nodes_joined", r(&self.nodes_joined))
            .counter("nodes_died", r(&self.nodes_died))
            .counter("topology_updates", r(&self.topology_updates))
            .counter("gid_updates", r(&self.gid_updates))
            .counter("handshakes_refused", self.refused_total())
            .counter("frames_malformed", r(&self.frames_malformed))
            .counter("relay_drops", r(&self.relay_drops))
            .counter("inbound_dropped", r(&self.inbound_dropped))
            .gauge("inbound_bytes", inbound.0 as f64)
            .gauge("inbound_messages", inbound.1 as f64)
            .gauge("peers_connected", connected as f64);
        for (name, c) in REFUSALS.iter().zip(&self.refused) {
            g = g.counter(&format!("handshakes_refused_{name}"), r(c));
        }
        g
    }

    /// One `mesh_peer` group per peer with counters, in id order; `view`
    /// tells what the node knows of each now.
    pub fn peer_groups(&self, view: impl Fn(u16) -> PeerView) -> Vec<Group> {
        let mut all: Vec<(u16, Arc<PeerStats>)> = {
            let m = self.peers.lock().unwrap_or_else(|p| p.into_inner());
            m.iter().map(|(k, v)| (*k, v.clone())).collect()
        };
        all.sort_by_key(|(k, _)| *k);
        all.into_iter()
            .map(|(id, s)| {
                let v = view(id);
                let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
                let seen = *s.addr.lock().unwrap_or_else(|p| p.into_inner());
                let addr = v.listen.or(seen).map_or(String::new(), |a| a.to_string());
                Group::new("mesh_peer")
                    .label("peer", v.id)
                    .label("addr", addr)
                    .counter("frames_sent", r(&s.frames_sent))
                    .counter("bytes_sent", r(&s.bytes_sent))
                    .counter("frames_received", r(&s.frames_received))
                    .counter("bytes_received", r(&s.bytes_received))
                    .counter("control_frames_sent", r(&s.control_sent))
                    .counter("control_frames_received", r(&s.control_received))
                    .counter("by_ref_reads", r(&s.by_ref_reads))
                    .counter("by_ref_read_bytes", r(&s.by_ref_bytes))
                    .counter("shm_frames_sent", r(&s.shm_sent))
                    .counter("shm_frames_received", r(&s.shm_received))
                    .counter("reconnects", r(&s.connections).saturating_sub(1))
                    .counter("relay_drops", r(&s.relay_drops))
                    .counter("heartbeats_missed", r(&s.heartbeats_missed))
                    .counter("send_timeouts", r(&s.send_timeouts))
                    .gauge("send_queue_depth", v.depth.unwrap_or(0) as f64)
                    .gauge("send_queue_depth_max", r(&s.queue_depth_max) as f64)
                    .gauge("connected", if v.depth.is_some() { 1.0 } else { 0.0 })
            })
            .collect()
    }
}
