//! Admission at the door: the accept thread, the handshake threads (at
//! most `max_handshakes` at once), an accepted connection's handshake (the
//! key first, then a registration at the manager or a peer's hello at a
//! worker), refusals counted and said at most once a second; and the
//! responder sides run alone, for the fuzz targets.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ernic_core::NodeId;

use crate::auth::{self, Deadline, HandshakeError, code};
use crate::frame::{self, FrameError, Kind, NO_NODE, Reader, Writer};
use crate::key::MeshKey;
use crate::{MeshConfig, Spec};

use super::control::parse_register;
use super::{MAX_GIDS, Shared, full};

/// Largest body of a handshake's last frame: a registration with
/// [`MAX_GIDS`] GIDs and its proof.
const MAX_HANDSHAKE_BODY: usize = auth::MAC + 14 + MAX_GIDS * 16;

/// Accepted connections waiting for a handshake thread.
#[derive(Default)]
pub(super) struct Handshakes {
    waiting: std::collections::VecDeque<(TcpStream, SocketAddr)>,
    /// Handshake threads running, and how many of them wait for work.
    threads: usize,
    idle: usize,
}

/// Refused handshakes: counted, and each reason logged at most once a
/// second (a flood of strangers does not flood the log).
#[derive(Default)]
pub(super) struct Refusals {
    count: AtomicU64,
    /// Per reason ([`HandshakeError::reason`]): when its last line went
    /// out, and how many were refused unsaid since.
    said: Mutex<[(Option<Instant>, u64); auth::REASONS]>,
}

impl Shared {
    pub fn refused_handshakes(&self) -> u64 {
        self.refusals.count.load(Ordering::Relaxed)
    }

    /// Counts a refused handshake; says why on the log (about the key or
    /// the version: a warning, at most one a second; anything else: info).
    pub(super) fn refused(&self, from: Option<SocketAddr>, e: &HandshakeError) {
        self.refusals.count.fetch_add(1, Ordering::Relaxed);
        self.stats.refused(e);
        let from = from.map_or("a peer".to_string(), |a| a.to_string());
        if !e.about_the_key() {
            tracing::info!(node = %self.who(), "refused a connection from {from}: {}", full(e));
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
        tracing::warn!(node = %self.who(), "refused a connection from {from}: {}{more}", full(e));
    }

    /// The accept thread: hands each connection to a handshake thread
    /// (kept for the next one while connections keep coming: a new thread
    /// per connection would let a flood of strangers fill the listen
    /// backlog), and past `max_handshakes` at once closes it at once.
    pub(super) fn accept_loop(self: &Arc<Self>, listener: TcpListener) {
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
                        let e = HandshakeError::Busy {
                            max_handshakes: self.cfg.max_handshakes,
                        };
                        let _ = crate::sys::send_now(
                            &stream,
                            &auth::refusal(NO_NODE, code::BUSY, &e.to_string()),
                        );
                        self.refused(Some(from), &e);
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
    pub(super) fn handshake_in(
        self: &Arc<Self>,
        mut stream: TcpStream,
    ) -> Result<(), HandshakeError> {
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
                Err(e) => {
                    let why = auth::refusal(me, e.code(), &e.to_string());
                    let _ = auth::write_all(&mut stream, &why, d);
                    return Err(e.into());
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
            tracing::info!(node = %self.who(), "node {id} registered");
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
