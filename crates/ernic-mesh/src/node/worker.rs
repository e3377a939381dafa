//! A worker's side: registering with the manager (again, under its id,
//! when the manager goes quiet), heartbeats toward it, and direct links to
//! its peers (the lower id connects to the higher).

use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use ernic_core::NodeId;

use crate::auth::{self, Deadline, HandshakeError};
use crate::frame::{self, FrameError, Kind, NO_NODE, Reader, Writer};

use super::control::gids_frame;
use super::{MAX_GIDS, Peer, Shared, full};

impl Shared {
    pub fn registration_error(&self) -> Option<(String, bool)> {
        self.registration_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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
            if e.about_the_key() {
                tracing::error!(node = %self.who(), "{line}");
            } else {
                tracing::warn!(node = %self.who(), "{line}");
            }
            *last = Some((line, e.about_the_key()));
        }
    }

    /// A worker connects and registers with the manager.
    fn register(self: &Arc<Self>, host: &str, port: u16) -> Result<NodeId, HandshakeError> {
        let mut last = HandshakeError::Unresolved {
            host: host.to_string(),
        };
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
        let me = self.me().ok_or(HandshakeError::NotRegistered)?;
        let addr = p.addr.ok_or(HandshakeError::NoAddress { peer: p.id.0 })?;
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

    /// A worker's connect thread: registration, heartbeats toward the
    /// manager, reconnection, and direct links to peers.
    pub(super) fn worker_loop(self: &Arc<Self>, host: String, port: u16) {
        let hb = self.cfg.heartbeat;
        let mut backoff = Duration::from_millis(20);
        while !self.stop.load(Ordering::Relaxed) {
            let manager = self.lock().conns.get(&0).cloned();
            match manager {
                None => match self.register(&host, port) {
                    Ok(id) => {
                        tracing::info!(node = %self.who(), "registered as node {}", id.0);
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
                    c.count_missed(hb);
                    let quiet = c.silence();
                    if quiet > hb * 3 {
                        tracing::warn!(node = %self.who(),
                            "the manager has been silent for {quiet:?}; registering again"
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
                    let why = full(&e);
                    let peer = p.id.0;
                    if e.about_the_key() {
                        tracing::warn!(node = %self.who(), peer, "cannot reach node {peer} directly ({why}); the manager relays");
                    } else {
                        tracing::info!(node = %self.who(), peer, "cannot reach node {peer} directly ({why}); the manager relays");
                    }
                }
            }
            let st = self.lock();
            let _ = self.changed.wait_timeout(st, hb / 4);
        }
    }
}
