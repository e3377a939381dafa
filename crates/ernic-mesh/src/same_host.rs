//! The same-host path: a node on this host reads a requester's large
//! payloads straight from the requester's memory (`process_vm_readv(2)`),
//! so a WRITE or SEND crosses once instead of through two socket copies and
//! the kernel's loopback; a READ's requester reads the answer's bytes from
//! the responder's memory the same way. Nothing is ever written into a
//! peer's memory. Everything else (headers, replies, small payloads) goes
//! over the connection (its socket, or its shared-memory rings), in order
//! with the references.
//!
//! Who may read whom is proved, never claimed. Each node listens on an
//! abstract Unix socket; abstract names belong to a network namespace, so
//! nodes in different namespaces (different hosts, or the hosts of the
//! network-namespace tests) never find each other and keep to TCP. Once a
//! mesh connection is up, each side offers ([`Kind::SameHost`]): a fresh
//! random token and its socket's name. The side that gets the offer, if it
//! reaches that socket, connects, runs the mesh's handshake (`auth`: with
//! a mesh key, both prove it), and sends the token back with the address
//! of a copy of it in its own memory. The offering side takes the
//! connecting process from the kernel (`SO_PEERCRED`), holds a pidfd for it,
//! and reads the token back out of that process at that address. Only when
//! it matches does it read from that process for that connection's node,
//! and says so with one byte; the prover then sends by reference
//! ([`ernic_core::wire::flags::BY_REF`]).
//!
//! `process_vm_readv(2)` names a process by pid, and a pid is reused once
//! its process is gone. Every read is therefore bracketed by two looks at
//! the pidfd: alive before (no read of a process known gone), and alive
//! after. While the process a pidfd names lives its pid is its own, so a
//! process alive after the read was the one read; one gone by then may
//! have been replaced before the read, and what was read is wiped from the
//! destination and reported as [`PeerReadError::Gone`], never delivered.
//!
//! A reference is honoured only from the node's own connection: the mesh
//! drops relayed data frames that carry one.
//!
//! [`Kind::SameHost`]: crate::frame::Kind::SameHost

use std::io;
use std::os::fd::OwnedFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::Duration;

use ernic_core::{NodeId, PeerReadError, PeerRun};

use crate::auth::{self, Deadline, HandshakeError};
use crate::conn::Conn;
use crate::frame::{self, FrameError, Kind, Reader, Writer};
use crate::node::Shared;
use crate::ring::Direction;
use crate::sys;

/// Bytes of an offer's token.
const TOKEN: usize = 16;
/// Longest socket name an offer may carry (the abstract namespace allows 107).
const MAX_NAME: usize = 100;
/// What the prover sends: the token, then where a copy of it lies.
const PROOF: usize = TOKEN + 8;
/// Every node's socket name starts so; an offer naming any other socket is
/// refused (a peer must not make this node write to arbitrary local sockets).
const PREFIX: &str = "ernic-mesh-";
/// Proofs checked at once; a local process that opens more connections to
/// the socket has them closed.
const MAX_CHECKS: usize = 16;

/// This node's listening socket.
pub(crate) struct Listener {
    pub name: String,
    sock: UnixListener,
    /// Proofs being checked now.
    checking: Arc<AtomicUsize>,
}

impl Listener {
    /// Binds a fresh abstract name.
    pub fn bind() -> io::Result<Listener> {
        let r = sys::random16()?;
        let tag = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
        let name = format!("{PREFIX}{}-{tag:016x}", std::process::id());
        let sock = UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name)?)?;
        sock.set_nonblocking(true)?;
        Ok(Listener {
            name,
            sock,
            checking: Arc::new(AtomicUsize::new(0)),
        })
    }
}

/// A process this node has proved it talks to.
struct Proc {
    pid: libc::pid_t,
    pidfd: OwnedFd,
}

/// A connection's same-host state.
pub(crate) struct Link {
    /// The token this side offers on the connection (none when the kernel
    /// gave no random bytes: a guessable token would let any local process
    /// pass for the peer).
    token: Option<[u8; TOKEN]>,
    /// The peer proved this process and reads its memory: requests to it
    /// may go by reference.
    reads_me: AtomicBool,
    /// The peer's process, once it proved which it is.
    peer: OnceLock<Proc>,
    /// An offer from the peer was taken (one per connection).
    offer_taken: AtomicBool,
    /// The ring this side writes (made after the peer read this process's
    /// token), once the peer took it.
    pub ring_out: OnceLock<crate::ring::Direction>,
    /// Data frames go through `ring_out` (the switch is on the socket).
    pub tx_on: AtomicBool,
    /// The ring the peer writes, once this side took it.
    pub ring_in: OnceLock<crate::ring::Direction>,
    /// The peer's switch has been read: its data frames come through
    /// `ring_in`.
    pub rx_on: AtomicBool,
}

impl Link {
    pub fn new() -> Link {
        Link {
            token: sys::random16().ok(),
            reads_me: AtomicBool::new(false),
            peer: OnceLock::new(),
            offer_taken: AtomicBool::new(false),
            ring_out: OnceLock::new(),
            tx_on: AtomicBool::new(false),
            ring_in: OnceLock::new(),
            rx_on: AtomicBool::new(false),
        }
    }

    /// Whether the peer reads this process's memory.
    pub fn reads_me(&self) -> bool {
        self.reads_me.load(Ordering::Relaxed)
    }

    /// Whether this node has proved the peer's process and reads its memory.
    pub fn proved(&self) -> bool {
        self.peer.get().is_some()
    }

    /// Reads what the peer named by reference.
    ///
    /// # Safety
    ///
    /// As [`ernic_core::Remote::read_peer`]: every run's `local` is valid
    /// for writes of its `len` during the call.
    pub unsafe fn read(&self, runs: &[PeerRun]) -> Result<(), PeerReadError> {
        let p = self.peer.get().ok_or(PeerReadError::NotProved)?;
        // SAFETY: as this function's.
        unsafe { read_proc(p, runs, &mut || {}) }
    }
}

/// Reads `runs` from `p`, looking at its pidfd before and after (see the
/// module's doc); `between` runs after the first look (a test's way to
/// make the process die there).
///
/// # Safety
///
/// Every run's `local` is valid for writes of its `len` during the call.
unsafe fn read_proc(
    p: &Proc,
    runs: &[PeerRun],
    between: &mut dyn FnMut(),
) -> Result<(), PeerReadError> {
    const MAX: usize = 64;
    if !sys::alive(&p.pidfd) {
        return Err(PeerReadError::Gone);
    }
    between();
    let mut result = Ok(());
    for chunk in runs.chunks(MAX) {
        let want: usize = chunk.iter().map(|r| r.len).sum();
        // SAFETY: the caller promised every `local` writable for its `len`.
        let got = unsafe { sys::read_process(p.pid, chunk) }.map_err(|e| {
            if e.raw_os_error() == Some(libc::ESRCH) {
                PeerReadError::Gone
            } else {
                PeerReadError::Fault
            }
        });
        match got {
            Ok(n) if n == want => {}
            Ok(_) => {
                result = Err(PeerReadError::Fault);
                break;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if !sys::alive(&p.pidfd) {
        // The pid may have named another process during the read: what
        // came is not the peer's, and nobody may see it.
        for r in runs {
            // SAFETY: the caller promised every `local` writable for its
            // `len`.
            unsafe { std::ptr::write_bytes(r.local.as_ptr(), 0, r.len) };
        }
        return Err(PeerReadError::Gone);
    }
    result
}

impl Shared {
    /// The same-host path with `peer`, as its connection has it now.
    pub(crate) fn same_host_link(&self, peer: NodeId) -> crate::SameHostLink {
        let st = self.lock();
        let c = st.conns.get(&peer.0);
        crate::SameHostLink {
            reads_me: c.is_some_and(|c| c.same_host.reads_me()),
            read_by_me: c.is_some_and(|c| c.same_host.proved()),
            shm_out: c.is_some_and(|c| c.same_host.tx_on.load(Ordering::Relaxed)),
            shm_in: c.is_some_and(|c| c.same_host.rx_on.load(Ordering::Relaxed)),
        }
    }

    /// Offers the same-host path on a new connection.
    pub(crate) fn offer_same_host(&self, c: &Conn) {
        let (Some(l), Some(token)) = (&self.same_host, &c.same_host.token) else {
            return;
        };
        let me = frame::node(self.me());
        let body = Writer::default().bytes(token).text(&l.name).0;
        c.control(frame::frame(Kind::SameHost, me, c.peer.0, &body));
    }

    /// A peer offered: prove this process to it, in the background (the
    /// receive thread does not wait on another socket).
    pub(crate) fn take_offer(
        self: &Arc<Self>,
        c: &Arc<Conn>,
        body: &[u8],
    ) -> Result<(), FrameError> {
        let mut r = Reader::new(Kind::SameHost, body);
        let mut token = [0u8; TOKEN];
        token.copy_from_slice(r.bytes(TOKEN)?);
        let name = r.text();
        if !name.starts_with(PREFIX) || name.len() > MAX_NAME {
            return Err(FrameError::Body(Kind::SameHost));
        }
        if self.same_host.is_none() || c.same_host.offer_taken.swap(true, Ordering::Relaxed) {
            return Ok(());
        }
        let (s, c) = (self.clone(), c.clone());
        let _ = thread::Builder::new()
            .name("mesh-same-host".into())
            .spawn(move || match s.prove(&c, token, &name) {
                Ok(true) => tracing::info!(
                    node = %s.who(),
                    "node {} is on this host: large payloads go by reference",
                    c.peer.0
                ),
                Ok(false) => tracing::info!(
                    node = %s.who(),
                    "node {} refused to read this process's memory",
                    c.peer.0
                ),
                Err(e) => tracing::debug!(
                    node = %s.who(),
                    "node {} is not reachable on this host ({e})",
                    c.peer.0
                ),
            });
        Ok(())
    }

    /// Connects to the offerer's socket and shows it the token in this
    /// process's memory. Returns whether the offerer now reads it.
    fn prove(&self, c: &Conn, token: [u8; TOKEN], name: &str) -> Result<bool, HandshakeError> {
        let d = Deadline::after(self.cfg.handshake_timeout);
        let addr = SocketAddr::from_abstract_name(name).map_err(HandshakeError::Io)?;
        let mut s = UnixStream::connect_addr(&addr).map_err(HandshakeError::Io)?;
        let me = frame::node(self.me());
        let session = auth::initiate(&mut s, self.key(), me, d)?;
        // The copy the offerer reads back; it lives until the answer comes.
        let copy = Box::new(token);
        let mut proof = [0u8; PROOF];
        proof[..TOKEN].copy_from_slice(&token);
        proof[TOKEN..].copy_from_slice(&(copy.as_ptr() as u64).to_le_bytes());
        auth::write_all(
            &mut s,
            &session.finish(Kind::SameHost, me, c.peer.0, &proof),
            d,
        )?;
        let mut answer = [0u8; 1];
        auth::read_exact(&mut s, &mut answer, d)?;
        drop(copy);
        let ok = answer[0] == 1 && !c.is_closed();
        c.same_host.reads_me.store(ok, Ordering::Relaxed);
        if ok {
            self.hand_over_ring(c, &mut s, d);
        }
        Ok(ok)
    }

    /// After a proof the peer accepted: hands it this side's ring (or says
    /// there is none), and once it took the ring, puts the switch on the
    /// connection. A refusal, or a failure of any step, leaves the data
    /// on TCP.
    fn hand_over_ring(&self, c: &Conn, s: &mut UnixStream, d: Deadline) {
        let ring = match self.cfg.shm_ring {
            0 => None,
            cap => match Direction::create(cap) {
                Ok(r) => Some(r),
                Err(e) => {
                    tracing::info!(node = %self.who(), "no shared-memory ring ({e}): data stays on TCP");
                    None
                }
            },
        };
        let sent = match &ring {
            Some(r) => r.hand_over(s),
            None => Direction::decline(s),
        };
        let Some(ring) = ring.filter(|_| sent.is_ok()) else {
            return;
        };
        let mut taken = [0u8; 1];
        if auth::read_exact(s, &mut taken, d).is_err() || taken[0] != 1 {
            tracing::info!(node = %self.who(), "node {} did not take the shared-memory ring: data stays on TCP", c.peer.0);
            return;
        }
        if c.same_host.ring_out.set(ring).is_err() {
            return;
        }
        // The send thread puts the switch on the socket behind what is
        // queued now.
        c.queue_switch(frame::frame(
            Kind::Ring,
            frame::node(self.me()),
            c.peer.0,
            &[],
        ));
        tracing::info!(node = %self.who(), "node {}: data goes through shared memory", c.peer.0);
    }

    /// The same-host listener's thread: checks each proof in a thread of its
    /// own (a local process that connects and says nothing holds up no one).
    pub(crate) fn same_host_loop(self: &Arc<Self>) {
        let Some(l) = &self.same_host else { return };
        while !self.stop.load(Ordering::Relaxed) {
            match l.sock.accept() {
                Ok((stream, _)) => {
                    if l.checking.fetch_add(1, Ordering::AcqRel) >= MAX_CHECKS {
                        l.checking.fetch_sub(1, Ordering::AcqRel);
                        continue;
                    }
                    let (s, busy) = (self.clone(), l.checking.clone());
                    let spawned =
                        thread::Builder::new()
                            .name("mesh-same-host".into())
                            .spawn(move || {
                                if let Err(e) = s.check_proof(stream) {
                                    let why = crate::node::full(&e);
                                    if e.about_the_key() {
                                        tracing::warn!(node = %s.who(), "a same-host proof failed: {why}");
                                    } else {
                                        tracing::info!(node = %s.who(), "a same-host proof failed: {why}");
                                    }
                                }
                                busy.fetch_sub(1, Ordering::AcqRel);
                            });
                    if spawned.is_err() {
                        l.checking.fetch_sub(1, Ordering::AcqRel);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Woken by the next connection; the timeout only bounds
                    // how long a stopped node's thread lingers.
                    crate::sys::wait_readable(&l.sock, Duration::from_millis(100));
                }
                Err(_) => thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Checks one proof: the token names a connection of this node's, and
    /// the process that connected holds it at the address it gave.
    pub(crate) fn check_proof(&self, mut s: UnixStream) -> Result<(), HandshakeError> {
        let d = Deadline::after(self.cfg.handshake_timeout);
        let _ = s.set_nonblocking(false);
        let me = frame::node(self.me());
        let session = auth::respond(&mut s, self.key(), me, d)?;
        let (hdr, body) = auth::read_frame(&mut s, auth::MAC + PROOF, d)?;
        let checked = match hdr.kind {
            Kind::SameHost => session.check(&hdr, &body),
            k => Err(HandshakeError::Unexpected(k)),
        };
        let payload = match checked {
            Ok(p) => p,
            Err(e) => {
                auth::tell(&mut s, &e, me, d);
                return Err(e);
            }
        };
        let proof: &[u8; PROOF] = payload
            .try_into()
            .map_err(|_| HandshakeError::Frame(FrameError::Body(Kind::SameHost)))?;
        let verdict = self.judge(&s, proof);
        auth::write_all(&mut s, &[u8::from(verdict.is_ok())], d)?;
        let c = verdict.map_err(HandshakeError::Io)?;
        // The prover's ring, or its word that there is none.
        let _ = s.set_read_timeout(Some(d.remaining()));
        match Direction::take(&s) {
            Ok(Some(ring)) => {
                let took = self.cfg.shm_ring > 0 && c.same_host.ring_in.set(ring).is_ok();
                auth::write_all(&mut s, &[u8::from(took)], d)?;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::info!(node = %self.who(), "node {}'s shared-memory ring refused: {e}", c.peer.0);
                let _ = auth::write_all(&mut s, &[0], d);
            }
        }
        Ok(())
    }

    fn judge(&self, s: &UnixStream, proof: &[u8; PROOF]) -> io::Result<Arc<Conn>> {
        let token = &proof[..TOKEN];
        let addr = u64::from_le_bytes(proof[TOKEN..].try_into().expect("8 bytes"));
        let c = self
            .lock()
            .conns
            .values()
            .find(|c| c.same_host.token.as_ref().is_some_and(|t| t[..] == *token))
            .cloned()
            .ok_or_else(|| io::Error::other("the token names no connection"))?;
        let pid = sys::peer_pid(s)?
            .ok_or_else(|| io::Error::other("the process is not visible in this PID namespace"))?;
        let pidfd = sys::pidfd_open(pid)?;
        let mut back = [0u8; TOKEN];
        let run = PeerRun {
            remote: addr,
            local: std::ptr::NonNull::from(&mut back).cast(),
            len: TOKEN,
        };
        let proc = Proc { pid, pidfd };
        // SAFETY: `back` is valid for writes of its 16 bytes during the call.
        // Read as every later read is, so a pid reused since the connect
        // (the pidfd then names another process) fails here.
        let read = unsafe { read_proc(&proc, &[run], &mut || {}) };
        if read.is_err() || back != token {
            return Err(io::Error::other(format!(
                "process {pid} does not hold the token where it said"
            )));
        }
        if c.same_host.peer.set(proc).is_err() {
            return Err(io::Error::other("the connection's peer was already proved"));
        }
        tracing::info!(node = %self.who(),
            "node {} is process {pid} on this host: reading its payloads",
            c.peer.0
        );
        Ok(c)
    }
}

/// Reads what node `from` named by reference, through its connection.
///
/// # Safety
///
/// As [`ernic_core::Remote::read_peer`].
pub(crate) unsafe fn read_from(
    shared: &Shared,
    from: NodeId,
    runs: &[PeerRun],
) -> Result<(), PeerReadError> {
    let c = shared
        .lock()
        .conns
        .get(&from.0)
        .cloned()
        .ok_or(PeerReadError::NotProved)?;
    // SAFETY: this function's caller promised every `local` writable for
    // its `len`.
    unsafe { c.same_host.read(runs) }?;
    let bytes = runs.iter().map(|r| r.len as u64).sum();
    c.stats.read_by_ref(bytes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::NonNull;

    /// A copy of this process (it holds what this one holds, where this one
    /// holds it) that waits to be killed.
    fn fork_copy() -> libc::pid_t {
        // SAFETY: the child calls nothing but pause(2), which is
        // async-signal-safe, until SIGKILL ends it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            loop {
                // SAFETY: pause takes nothing and touches no memory.
                unsafe { libc::pause() };
            }
        }
        pid
    }

    fn kill_and_reap(pid: libc::pid_t) {
        // SAFETY: kill and waitpid take a pid of our own child; waitpid may
        // take a null status pointer.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }

    #[test]
    fn a_read_whose_process_dies_before_the_second_look_is_wiped_and_fails() {
        let secret = Box::new([0x5au8; 64]);
        // `a` proved itself; `b` stands in for a process that took a's pid
        // after a died: the link holds a's pidfd and reads by b's pid.
        let a = fork_copy();
        let b = fork_copy();
        let p = Proc {
            pid: b,
            pidfd: sys::pidfd_open(a).unwrap(),
        };
        let mut dst = [0u8; 64];
        let run = PeerRun {
            remote: secret.as_ptr() as u64,
            local: NonNull::from(&mut dst).cast(),
            len: 64,
        };
        // SAFETY: `dst` is valid for writes of its 64 bytes.
        assert_eq!(unsafe { read_proc(&p, &[run], &mut || {}) }, Ok(()));
        assert_eq!(dst, [0x5a; 64], "both alive: the bytes are read");
        dst = [0xee; 64];
        // `a` dies after the first look and before the read: what the read
        // brings from the pid is not delivered.
        // SAFETY: as above.
        let r = unsafe { read_proc(&p, &[run], &mut || kill_and_reap(a)) };
        assert_eq!(r, Err(PeerReadError::Gone));
        assert_eq!(dst, [0; 64], "what was read is wiped");
        // Known dead: nothing is read at all.
        dst = [0xee; 64];
        // SAFETY: as above.
        let r = unsafe { read_proc(&p, &[run], &mut || {}) };
        assert_eq!(r, Err(PeerReadError::Gone));
        assert_eq!(dst, [0xee; 64]);
        kill_and_reap(b);
    }

    #[test]
    fn a_peer_process_that_exits_fails_the_read_cleanly() {
        let secret = Box::new([7u8; 32]);
        let child = fork_copy();
        let p = Proc {
            pid: child,
            pidfd: sys::pidfd_open(child).unwrap(),
        };
        let link = Link::new();
        assert!(link.peer.set(p).is_ok());
        let mut dst = [0u8; 32];
        let run = PeerRun {
            remote: secret.as_ptr() as u64,
            local: NonNull::from(&mut dst).cast(),
            len: 32,
        };
        // SAFETY: `dst` is valid for writes of its 32 bytes.
        assert_eq!(unsafe { link.read(&[run]) }, Ok(()));
        assert_eq!(dst, [7; 32]);
        // Exited but not reaped (its pid still its own), then reaped.
        // SAFETY: kill takes a pid of our own child.
        unsafe { libc::kill(child, libc::SIGKILL) };
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while sys::alive(&link.peer.get().unwrap().pidfd) {
            assert!(std::time::Instant::now() < end, "the child never died");
            thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: as above.
        assert_eq!(unsafe { link.read(&[run]) }, Err(PeerReadError::Gone));
        kill_and_reap(child);
        // SAFETY: as above.
        assert_eq!(unsafe { link.read(&[run]) }, Err(PeerReadError::Gone));
        let mut unmapped = run;
        unmapped.remote = 8;
        let other = fork_copy();
        let q = Link::new();
        assert!(
            q.peer
                .set(Proc {
                    pid: other,
                    pidfd: sys::pidfd_open(other).unwrap(),
                })
                .is_ok()
        );
        // SAFETY: as above.
        assert_eq!(unsafe { q.read(&[unmapped]) }, Err(PeerReadError::Fault));
        kill_and_reap(other);
    }
}
