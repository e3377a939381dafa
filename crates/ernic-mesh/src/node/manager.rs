//! The manager's side: admitting a registering worker into the table,
//! forgetting one that never took up its id, the health-check thread
//! (heartbeats; a node silent for three is dead) and the broadcast thread
//! (topology and GID changes to every worker).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use ernic_core::Gid;

use crate::conn::Conn;
use crate::frame::{self, Kind, NO_NODE};

use super::control::{gids_frame, table_peers, topology_body};
use super::{Level, Rec, Shared, State};

impl Shared {
    /// A node that never took up its id leaves the table (its id goes to
    /// quarantine like any other).
    pub(super) fn forget(&self, id: u16) {
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
    pub(super) fn admit(
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

    /// The manager's health-check thread: heartbeats, and dead nodes.
    pub(super) fn health_loop(self: &Arc<Self>) {
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
}
