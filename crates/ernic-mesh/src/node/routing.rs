//! Where frames go: the connection an outgoing frame takes (direct, or
//! through the manager), what each arriving frame does (data to the inbound
//! queue or relayed, control frames to the node's view), and the manager's
//! relay.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ernic_core::NodeId;

use crate::conn::{Conn, QueueError};
use crate::frame::{self, FrameError, Header, Kind, NO_NODE, Reader};
use crate::inbound::Message;

use super::control::{parse_gids, parse_topology};
use super::{Shared, State};

impl Shared {
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

    /// Handles one frame. Without `blocking`, a frame that has no room to go
    /// (inbound queue or relay target full) is given back.
    #[allow(clippy::type_complexity)]
    pub(super) fn handle(
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
                    tracing::warn!(node = %self.who(),
                        "dropping data from node {} claiming to be node {}",
                        c.peer.0, hdr.src
                    );
                    self.recycle(buf);
                    return Ok(None);
                }
                let relayed = hdr.src != c.peer.0;
                if relayed && ernic_core::wire::is_by_ref(body) {
                    // A reference is read from the process that proved it
                    // holds this connection, so only that node may send one.
                    tracing::warn!(node = %self.who(),
                        "dropping a by-reference message for node {} relayed from node {}",
                        hdr.dst, hdr.src
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
                self.stats.gid_updates.fetch_add(1, Ordering::Relaxed);
                let mut st = self.lock();
                st.table.set_gids(node, gids);
                st.dirty_gids.insert(node);
                st.recompute_owners(Some(0));
                drop(st);
                self.changed.notify_all();
                self.recycle(buf);
            }
            Kind::Gids => {
                let (node, alive, gids) = parse_gids(body)?;
                self.stats.gid_updates.fetch_add(1, Ordering::Relaxed);
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
                self.count_topology(&st.topology, &topo);
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
            Kind::Ring => {
                self.recycle(buf);
                // Only a peer that handed this side a ring may switch to it.
                if c.same_host.ring_in.get().is_none() {
                    return Err(FrameError::Body(Kind::Ring));
                }
                c.same_host.rx_on.store(true, Ordering::Release);
                tracing::debug!(node = %self.who(), "node {} sends through shared memory", c.peer.0);
            }
            Kind::Refuse => {
                let mut r = Reader::new(Kind::Refuse, body);
                let _code = r.u16()?;
                tracing::error!(node = %self.who(), "node {} refused: {}", hdr.src, r.text());
                return Err(FrameError::Body(Kind::Refuse));
            }
            _ => return Err(FrameError::Body(hdr.kind)),
        }
        Ok(None)
    }

    /// Faults injected into a frame the manager relays (counted once per
    /// frame with a target): dropped, its target's connection cut, or held
    /// on it. The frame comes back when none fired, or a held one found no
    /// room (it then goes the usual way).
    fn inject_relay(&self, target: Option<&Conn>, buf: Vec<u8>) -> Option<Vec<u8>> {
        let (Some(t), faults) = (target, &self.injector) else {
            return Some(buf);
        };
        if faults.is_empty() {
            return Some(buf);
        }
        use ernic_core::FaultEvent as E;
        // As on the send side: every fault counts the frame.
        let (drop, cut, delay) = (
            faults.check(E::MeshDrop),
            faults.check(E::MeshCut),
            faults.check(E::MeshDelay),
        );
        if drop.is_some() || cut.is_some() {
            if drop.is_none() {
                t.close();
            }
            self.recycle(buf);
            return None;
        }
        let Some(f) = delay else {
            return Some(buf);
        };
        let until =
            std::time::Instant::now() + std::time::Duration::from_millis(u64::from(f.millis()));
        match t.data_held(buf, 0, false, until) {
            Ok(()) => None,
            Err((_, buf)) => Some(buf),
        }
    }

    /// A worker heard a new topology: counts it, and the nodes that
    /// joined (alive now, not before) and died (the other way), itself
    /// aside.
    fn count_topology(&self, old: &[super::Peer], new: &[super::Peer]) {
        let me = self.me().map(|n| n.0);
        let alive = |t: &[super::Peer], id: u16| t.iter().any(|p| p.id.0 == id && p.alive);
        let joined = new
            .iter()
            .filter(|p| p.alive && Some(p.id.0) != me && !alive(old, p.id.0))
            .count();
        let died = old
            .iter()
            .filter(|p| p.alive && Some(p.id.0) != me && !alive(new, p.id.0))
            .count();
        let s = &self.stats;
        s.topology_updates.fetch_add(1, Ordering::Relaxed);
        s.nodes_joined.fetch_add(joined as u64, Ordering::Relaxed);
        s.nodes_died.fetch_add(died as u64, Ordering::Relaxed);
    }

    /// The manager forwards a data frame to the node it names. Blocking, it
    /// waits for room up to its (halved) send timeout; not blocking, a frame
    /// with no room comes back.
    pub(super) fn relay(
        &self,
        hdr: Header,
        buf: Vec<u8>,
        blocking: bool,
    ) -> Option<(Header, Vec<u8>)> {
        let target = self.lock().conns.get(&hdr.dst).cloned();
        // A fault that fired took the frame.
        let buf = self.inject_relay(target.as_deref(), buf)?;
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
                self.stats.relay_drops.fetch_add(1, Ordering::Relaxed);
                if let Some(s) = self.stats.existing(hdr.src) {
                    s.relay_drops.fetch_add(1, Ordering::Relaxed);
                }
                tracing::info!(node = %self.who(), "dropped a frame from node {} for node {}", hdr.src, hdr.dst);
            }
        }
        None
    }
}
