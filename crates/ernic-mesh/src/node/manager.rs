//! The manager's side: admitting a registering worker into the table,
//! forgetting one that never took up its id, the health-check thread
//! (heartbeats; a node silent for three is dead) and the broadcast thread
//! (topology and GID changes to every worker).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Instant;

use ernic_core::Gid;

use crate::conn::Conn;
use crate::frame::{self, Kind, NO_NODE};

use super::control::{gids_frame, topology_body};
use super::{AdmitError, Shared};

impl Shared {
    /// A node that never took up its id leaves the table (its id goes to
    /// quarantine like any other).
    pub(super) fn forget(&self, id: u16) {
        let mut st = self.lock();
        if st.table.forget(id, Instant::now()) {
            st.recompute_owners(Some(0));
        }
    }

    /// The manager admits a registering worker (see the table's rules).
    pub(super) fn admit(
        self: &Arc<Self>,
        boot: u64,
        wanted: u16,
        addr: SocketAddr,
        gids: Vec<Gid>,
    ) -> Result<u16, AdmitError> {
        let mut st = self.lock();
        let admission = st.table.admit(boot, wanted, addr, gids, Instant::now());
        if admission.evicted.is_some() {
            // Even when no id was free after all.
            st.dirty_topology = true;
        }
        let id = admission.id?;
        self.stats.nodes_joined.fetch_add(1, Ordering::Relaxed);
        // A node back under its id before its old connection was seen to
        // close: that connection goes now, under this lock, or its closing
        // (`closed`, while it is still the current one) would mark the node
        // dead after this admission, and its GIDs stay unowned until it
        // registers again (a cut connection's quick reconnect did that).
        let stale = st.conns.remove(&id);
        if stale.is_some() {
            self.publish_conns(&st);
        }
        // Its connection is installed before the broadcast thread is told to
        // send it the whole table (see `handshake_in`).
        st.recompute_owners(Some(0));
        drop(st);
        if let Some(c) = stale {
            c.close();
        }
        Ok(id)
    }

    /// The manager's health-check thread: heartbeats, and dead nodes.
    pub(super) fn health_loop(self: &Arc<Self>) {
        let hb = self.cfg.heartbeat;
        while !self.stop.load(Ordering::Relaxed) {
            let conns: Vec<Arc<Conn>> = self.lock().conns.values().cloned().collect();
            for c in conns {
                c.count_missed(hb);
                if c.silence() > hb * 3 {
                    tracing::warn!(node = %self.who(),
                        "node {} has been silent for {:?}: dead",
                        c.peer.0,
                        c.silence()
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
    pub(super) fn broadcast_loop(self: &Arc<Self>) {
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
                .map(|(id, r)| (id, gids_frame(0, id, r.alive, &r.gids)))
                .collect();
            st.topology = st.table.peers();
            drop(st);
            if topo || !fresh.is_empty() {
                self.stats.topology_updates.fetch_add(1, Ordering::Relaxed);
            }
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
}
