//! A node's connections: making one, installing it (its send and receive
//! threads), forgetting it when it closes (on the manager, its node is then
//! dead), and the receive thread that reads frames into the node.

use std::io;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use ernic_core::NodeId;

use crate::conn::{Conn, ReadState, ReadStep};
use crate::frame::FrameError;

use super::{Shared, State};

impl Shared {
    fn max_queues(&self) -> (usize, usize, Duration) {
        let timeout = if self.manager {
            self.cfg.send_timeout / 2
        } else {
            self.cfg.send_timeout
        };
        (self.cfg.max_requests, self.cfg.max_replies, timeout)
    }

    pub(super) fn new_conn(&self, peer: NodeId, stream: TcpStream) -> io::Result<Arc<Conn>> {
        let (req, rep, timeout) = self.max_queues();
        let stats = self.peer_stats(peer.0);
        *stats.addr.lock().unwrap_or_else(|p| p.into_inner()) = stream.peer_addr().ok();
        let c = Arc::new(Conn::new(peer, stream, stats, req, rep, timeout)?);
        c.heard();
        Ok(c)
    }

    /// The counters of peer `id` (the table of them stays within twice the
    /// node table: past that, peers neither connected nor alive go).
    fn peer_stats(&self, id: u16) -> Arc<crate::stats::PeerStats> {
        let (conns, alive): (Vec<u16>, Vec<u16>) = {
            let st = self.lock();
            (
                st.conns.keys().copied().collect(),
                st.topology
                    .iter()
                    .filter(|p| p.alive)
                    .map(|p| p.id.0)
                    .collect(),
            )
        };
        self.stats.peer(id, 2 * self.cfg.max_nodes, |k| {
            conns.contains(&k) || alive.contains(&k)
        })
    }

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

    pub(super) fn publish_conns(&self, st: &State) {
        let list: Vec<Arc<Conn>> = st.conns.values().cloned().collect();
        *self.conn_list.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(list);
    }

    /// Registers a connection to `peer`, replacing (and closing) an older one.
    pub(super) fn install(self: &Arc<Self>, c: Arc<Conn>) {
        c.stats.connections.fetch_add(1, Ordering::Relaxed);
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
    pub(super) fn closed(&self, c: &Arc<Conn>) {
        c.close();
        let mut st = self.lock();
        let current = st.conns.get(&c.peer.0).is_some_and(|x| Arc::ptr_eq(x, c));
        if !current {
            return;
        }
        st.conns.remove(&c.peer.0);
        self.publish_conns(&st);
        if self.manager {
            if st.table.mark_dead(c.peer.0, Instant::now()) {
                self.stats.nodes_died.fetch_add(1, Ordering::Relaxed);
                st.dirty_gids.insert(c.peer.0);
                st.dirty_topology = true;
                let me = self.me().map(|n| n.0);
                st.recompute_owners(me);
            }
            drop(st);
            tracing::info!(node = %self.who(), "node {} is gone", c.peer.0);
        } else {
            drop(st);
            tracing::info!(node = %self.who(), "connection to node {} closed", c.peer.0);
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
            if !leftover && !c.ring_readable() && !c.wait_any(Duration::from_millis(100)) {
                continue;
            }
            if self.poller_active() {
                continue;
            }
            let mut rs = c.reader();
            if !self.read_frames(c, &mut rs, true, true) {
                return;
            }
        }
    }

    /// Reads and handles the frames that have arrived. With `blocking`, a
    /// frame with no room to go waits for it; without, it stays in the
    /// reader for later. The socket is read only with `socket` (a poller
    /// that saw it was not readable takes just the ring's frames: a read
    /// that finds nothing is a system call per frame). Returns false when
    /// the connection is done.
    pub(super) fn read_frames(
        self: &Arc<Self>,
        c: &Arc<Conn>,
        rs: &mut ReadState,
        blocking: bool,
        socket: bool,
    ) -> bool {
        // Frames taken from the peer's ring in a row before the socket is
        // looked at (heartbeats and control frames come that way).
        const RING_RUN: u32 = 64;
        let mut run = 0;
        loop {
            // A frame left from before goes first, then the ring's (once
            // the peer switched to it: everything before the switch came
            // over the socket, and has been read).
            let earlier = rs.ready.take();
            let from_ring = match earlier {
                Some(_) => None,
                None if run < RING_RUN => match c.ring_frame(rs, &|n| self.buffer(n)) {
                    Ok(f) => f,
                    Err(e) => return self.drop_conn(c, e),
                },
                None => None,
            };
            run = if from_ring.is_some() { run + 1 } else { 0 };
            let (h, buf) = match (earlier, from_ring) {
                (Some(f), _) => f,
                (None, Some((h, buf))) => arrived(c, h, buf),
                (None, None) if !socket => return true,
                (None, None) => match c.read_step(rs, &|n| self.buffer(n)) {
                    ReadStep::Pending if c.ring_readable() => continue,
                    ReadStep::Pending => return true,
                    ReadStep::Eof => {
                        c.close();
                        return false;
                    }
                    ReadStep::Bad(e) => return self.drop_conn(c, e),
                    ReadStep::Frame(h, buf) => arrived(c, h, buf),
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

    fn drop_conn(&self, c: &Arc<Conn>, e: FrameError) -> bool {
        self.stats.frames_malformed.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(node = %self.who(), "closing connection to node {}: {e}", c.peer.0);
        c.close();
        false
    }
}

/// A frame just read (from the socket or the ring): the peer was heard,
/// and the frame is counted.
fn arrived(c: &Conn, h: crate::frame::Header, buf: Vec<u8>) -> (crate::frame::Header, Vec<u8>) {
    c.heard();
    if h.kind == crate::frame::Kind::Data {
        c.stats.received(buf.len());
    } else {
        c.stats.control_received.fetch_add(1, Ordering::Relaxed);
    }
    (h, buf)
}
