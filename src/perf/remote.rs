//! Two processes over the TCP mesh, as perftest runs: `--server` listens on
//! the out-of-band port, the client connects to it. Over that connection the
//! two exchange, as JSON lines, what the other needs (the mesh port, GID,
//! QP number, buffer address and rkey) and then meet at one-byte barriers.
//! The RDMA traffic itself goes over the mesh: the server runs its manager on
//! a port of its own choosing, and the client registers as a worker.
//!
//! `--baseline` measures a plain TCP stream (bandwidth tests) or a TCP
//! ping-pong (latency tests) over the out-of-band connection, between the
//! same two processes, in the same run.
//!
//! Waits are bounded by `--timeout` (default 30 s) counted
//! from the peer's last sign of life, never from the start of a wait: a
//! side waiting at a barrier while the other runs a long test keeps waiting
//! while the peer is alive on the mesh (it makes its own progress checks,
//! and leaves the mesh and the connection when it stops), and gives up
//! `--timeout` after it last was. Anyone may connect to the server's port:
//! a connection that does not open with ernic perf's handshake within
//! [`HELLO_WAIT`] (a port scan, a stray client, garbage) is refused with
//! one line, and the server keeps waiting for its client.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ernic::perf_wire::{self, Endpoint, HandshakeError, Hello as HelloLine, MAX_LINE};
use ernic_verbs::{Access, Fabric, Gid, Mesh, MeshConfig, MeshSpec, NodeId, Qpn, RemoteAddr};
use serde_json::{Value, json};

use super::ops::Ops;
use super::report::Row;
use super::tests::{self, Measure, Side};
use super::{Oob, Plan, Test};

/// perftest's default port.
pub const DEFAULT_PORT: u16 = 18515;

/// How long the server gives a new connection to send its handshake line
/// (at most `--timeout`): a real client sends it at once.
pub const HELLO_WAIT: Duration = Duration::from_secs(5);

/// How often a side waiting at a barrier looks whether its peer is alive.
const LIVENESS_POLL: Duration = Duration::from_millis(100);

/// Whether the peer is still there (on the mesh), asked while waiting.
type Alive = Box<dyn Fn() -> bool + Send + Sync>;

/// The out-of-band connection.
struct Channel {
    r: Mutex<BufReader<TcpStream>>,
    w: Mutex<TcpStream>,
    /// Who the peer is, for messages: `HOST:PORT`.
    peer: String,
    /// The longest wait without a sign of life.
    timeout: Duration,
    /// Set once the peer is on the mesh.
    alive: OnceLock<Alive>,
}

/// Seconds, as a user wrote them (0.5 s, 30 s).
fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

impl Channel {
    fn new(s: TcpStream, peer: String, timeout: Duration) -> Result<Channel> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        Ok(Channel {
            r: Mutex::new(BufReader::new(s.try_clone()?)),
            w: Mutex::new(s),
            peer,
            timeout,
            alive: OnceLock::new(),
        })
    }

    /// The same channel, whose waits last `timeout`.
    fn retimed(mut self, timeout: Duration) -> Result<Channel> {
        self.w
            .get_mut()
            .map_err(|_| anyhow!("channel lock"))?
            .set_read_timeout(Some(timeout))?;
        self.timeout = timeout;
        Ok(self)
    }

    /// From now on, waits at barriers last while `alive` says the peer is.
    fn watch(&self, alive: Alive) {
        let _ = self.alive.set(alive);
    }

    /// What a failed read from the peer means, in one line.
    fn read_error(&self, e: io::Error, waited: Duration) -> anyhow::Error {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => {
                anyhow!("no reply from {} within {}", self.peer, secs(waited))
            }
            ErrorKind::UnexpectedEof => anyhow!("{} closed the connection", self.peer),
            ErrorKind::InvalidData => anyhow!(
                "{} sent something that is not an ernic perf handshake",
                self.peer
            ),
            _ => anyhow!("reading from {}: {e}", self.peer),
        }
    }

    fn send(&self, v: &Value) -> Result<()> {
        let mut w = self.w.lock().map_err(|_| anyhow!("channel lock"))?;
        writeln!(w, "{v}").with_context(|| format!("{} closed the connection", self.peer))?;
        Ok(())
    }

    fn recv(&self) -> Result<Value> {
        let mut r = self.r.lock().map_err(|_| anyhow!("channel lock"))?;
        let mut line = Vec::new();
        (&mut *r)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)
            .map_err(|e| self.read_error(e, self.timeout))?;
        if line.is_empty() {
            bail!("{} closed the connection", self.peer);
        }
        perf_wire::decode_line(&line).map_err(|e| anyhow!("{} {e}", self.peer))
    }

    /// Writes `n` bytes of `chunk`-sized pieces, then waits for a one-byte answer.
    fn stream_out(&self, total: u64, chunk: usize) -> Result<Duration> {
        let buf = vec![0x5au8; chunk];
        let mut w = self.w.lock().map_err(|_| anyhow!("channel lock"))?;
        let t0 = Instant::now();
        let mut left = total;
        while left > 0 {
            let n = (chunk as u64).min(left) as usize;
            w.write_all(&buf[..n])?;
            left -= n as u64;
        }
        drop(w);
        let mut ack = [0u8; 1];
        self.r
            .lock()
            .map_err(|_| anyhow!("channel lock"))?
            .read_exact(&mut ack)
            .map_err(|e| self.read_error(e, self.timeout))?;
        Ok(t0.elapsed())
    }

    fn stream_in(&self, total: u64, chunk: usize) -> Result<()> {
        let mut buf = vec![0u8; chunk];
        let mut r = self.r.lock().map_err(|_| anyhow!("channel lock"))?;
        let mut left = total;
        while left > 0 {
            let n = (chunk as u64).min(left) as usize;
            r.read_exact(&mut buf[..n])
                .map_err(|e| self.read_error(e, self.timeout))?;
            left -= n as u64;
        }
        drop(r);
        self.w
            .lock()
            .map_err(|_| anyhow!("channel lock"))?
            .write_all(&[1])?;
        Ok(())
    }

    /// One ping-pong of `size` bytes; the initiator returns the round trip.
    fn pingpong(&self, size: usize, initiator: bool, buf: &mut [u8]) -> Result<Duration> {
        let t0 = Instant::now();
        let mut w = self.w.lock().map_err(|_| anyhow!("channel lock"))?;
        let mut r = self.r.lock().map_err(|_| anyhow!("channel lock"))?;
        let read_err = |e| self.read_error(e, self.timeout);
        if initiator {
            w.write_all(&buf[..size])?;
            r.read_exact(&mut buf[..size]).map_err(read_err)?;
        } else {
            r.read_exact(&mut buf[..size]).map_err(read_err)?;
            w.write_all(&buf[..size])?;
        }
        Ok(t0.elapsed())
    }
}

/// A wait for the peer that gives up `timeout` after the peer's last sign
/// of life (its being alive when asked), not after the wait began. Time is
/// passed in.
#[derive(Debug, Clone, Copy)]
pub struct PeerWait {
    timeout: Duration,
    last_seen: Instant,
}

impl PeerWait {
    /// A wait beginning at `now`.
    pub fn new(timeout: Duration, now: Instant) -> PeerWait {
        PeerWait {
            timeout,
            last_seen: now,
        }
    }

    /// Nothing came by `now`; `alive` says whether the peer is still there.
    /// False once the wait should give up.
    pub fn idle(&mut self, now: Instant, alive: bool) -> bool {
        if alive {
            self.last_seen = now;
        }
        now.saturating_duration_since(self.last_seen) < self.timeout
    }
}

impl Oob for Channel {
    fn barrier(&self) -> Result<()> {
        self.w
            .lock()
            .map_err(|_| anyhow!("channel lock"))?
            .write_all(&[0xb])
            .with_context(|| format!("{} closed the connection", self.peer))?;
        let mut r = self.r.lock().map_err(|_| anyhow!("channel lock"))?;
        // Looked at every LIVENESS_POLL: the peer may be running a long test.
        r.get_ref()
            .set_read_timeout(Some(LIVENESS_POLL.min(self.timeout)))?;
        let mut wait = PeerWait::new(self.timeout, Instant::now());
        let mut b = [0u8; 1];
        let got = loop {
            match r.read_exact(&mut b) {
                Ok(()) => break Ok(()),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    let alive = self.alive.get().is_some_and(|f| f());
                    if !wait.idle(Instant::now(), alive) {
                        break Err(e);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        r.get_ref().set_read_timeout(Some(self.timeout))?;
        got.map_err(|e| self.read_error(e, self.timeout))?;
        if b[0] != 0xb {
            bail!("{} is out of step (barrier byte {:#x})", self.peer, b[0]);
        }
        Ok(())
    }
}

/// The GID a perf process gives its device: one per mesh node.
fn gid_for(node: NodeId) -> Gid {
    Gid(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0xe, node.0 + 1).octets())
}

fn wait_owner(mesh: &Mesh, gid: Gid, timeout: Duration) -> Result<()> {
    let end = Instant::now() + timeout;
    while mesh.owner(&gid).is_none() {
        if Instant::now() > end {
            bail!(
                "the peer's GID {gid} did not appear on the mesh within {}",
                secs(timeout)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn mesh_config(spec: MeshSpec) -> MeshConfig {
    MeshConfig::new(spec)
}

fn endpoint(side: &Side, gid: Gid) -> Result<Value> {
    let remote = side.target()?;
    Ok(Endpoint {
        gid,
        qpn: side.qp.qpn(),
        remote,
    }
    .to_json())
}

fn peer_endpoint(v: &Value) -> Result<(Gid, Qpn, RemoteAddr)> {
    let e = Endpoint::from_json(v)?;
    Ok((e.gid, e.qpn, e.remote))
}

/// What a client asked for, once its handshake line has been checked.
struct Hello {
    plan: Plan,
    baseline: bool,
}

/// Reads and checks a client's handshake; an error is the reason it is
/// refused (and, when the connection still listens, what it is told).
fn hello(ch: &Channel, test: Test) -> Result<Hello> {
    let refuse = |why: String| -> Result<Hello> {
        let _ = ch.send(&perf_wire::refusal(&why));
        bail!("{}: {why}", ch.peer)
    };
    let h = match HelloLine::from_json(&ch.recv()?) {
        Ok(h) => h,
        Err(e @ HandshakeError::NotHandshake) => bail!("{} {e}", ch.peer),
        Err(e) => return refuse(e.to_string()),
    };
    if h.test != test.to_string() {
        return refuse(format!("this server runs {test}, not {}", h.test));
    }
    let plan = Plan {
        test,
        sizes: h.sizes,
        iters: h.iters,
        tx_depth: h.tx_depth,
        bidir: h.bidirectional,
    };
    if let Err(e) = plan.check() {
        return refuse(e.to_string());
    }
    Ok(Hello {
        plan,
        baseline: h.baseline,
    })
}

/// `ernic perf TEST --server`: waits for one client and serves its run.
/// Connections that are not an ernic perf client asking for `test` are
/// refused with one line each, and the wait goes on.
pub fn server(test: Test, port: u16, quiet: bool, timeout: Duration, ops: &Ops) -> Result<()> {
    let listener = TcpListener::bind((Ipv6Addr::UNSPECIFIED, port))
        .or_else(|_| TcpListener::bind(("0.0.0.0", port)))
        .with_context(|| format!("cannot listen on port {port} (is another ernic perf --server running? choose one with -p)"))?;
    let bound = listener.local_addr()?.port();
    if !quiet {
        tracing::info!(port = bound, "Waiting for a client on port {bound} ...");
    }
    let (ch, Hello { plan, baseline }) = loop {
        let (stream, peer) = listener.accept().context("accepting a client")?;
        let first = Channel::new(stream, peer.to_string(), HELLO_WAIT.min(timeout))
            .and_then(|ch| Ok((hello(&ch, test)?, ch)));
        match first {
            Ok((h, ch)) => break (ch.retimed(timeout)?, h),
            Err(e) => tracing::info!(%peer, "refused a connection from {peer}: {e:#}"),
        }
    };
    drop(listener);
    let max = *plan.sizes.iter().max().expect("checked: at least one size");
    let mesh = Mesh::start(mesh_config(MeshSpec::Manager { port: 0 }))
        .context("starting the mesh manager")?;
    let mesh_port = mesh.listen_addr().port();
    let fabric = Fabric::on_mesh(ops.engine_config(), mesh);
    let gid = gid_for(NodeId(0));
    let dev = fabric.open_device(gid)?;
    let mut side = Side::build(&dev, max as usize, plan.tx_depth)?;
    ops.watch.add("server", &dev, &side.qp);
    let mut me = endpoint(&side, gid)?;
    me["mesh_port"] = json!(mesh_port);
    ch.send(&me)?;
    let (cgid, cqpn, cremote) = peer_endpoint(&ch.recv()?)?;
    wait_owner(fabric.mesh().expect("on a mesh"), cgid, timeout)?;
    ch.watch(alive_on(&fabric, cgid));
    side.qp.connect(cgid, cqpn, Access::ALL)?;
    side.remote = cremote;
    ch.send(&json!({"ready": true}))?;
    ch.recv()?;
    for &size in &plan.sizes {
        let (d, b) = (plan.tx_depth, plan.bidir);
        if let Some(Measure::Bw {
            avg,
            peak,
            msg_rate,
        }) = tests::server(test, &side, size, plan.iters, d, b, &ch)?
        {
            ch.send(&json!({"avg": avg, "peak": peak, "msg_rate": msg_rate}))?;
        }
        if baseline {
            if test.is_bw() {
                ch.stream_in(baseline_bytes(size, plan.iters), size.min(1 << 22) as usize)?;
            } else {
                let mut buf = vec![0u8; size as usize];
                for _ in 0..plan.iters {
                    ch.pingpong(size as usize, false, &mut buf)?;
                }
            }
        }
    }
    ch.recv()?; // the client's goodbye, after it left the mesh
    Ok(())
}

/// Whether the node owning `gid` is alive on `fabric`'s mesh.
fn alive_on(fabric: &Fabric, gid: Gid) -> Alive {
    let fabric = fabric.clone();
    Box::new(move || fabric.mesh().is_some_and(|m| m.owner(&gid).is_some()))
}

/// Bytes the bandwidth baseline streams: what the test moved, at most 8 GiB.
fn baseline_bytes(size: u64, iters: u64) -> u64 {
    (size * iters).min(8 << 30)
}

/// `ernic perf TEST HOST`: runs the plan against a server.
pub fn client(
    plan: &Plan,
    host: &str,
    port: u16,
    with_baseline: bool,
    timeout: Duration,
    ops: &Ops,
    emit: &mut dyn FnMut(Row),
) -> Result<()> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .collect();
    let stream = addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(5)).ok())
        .ok_or_else(|| {
            anyhow!("cannot reach ernic perf --server at {host} port {port}; is it running?")
        })?;
    let server_ip = stream.peer_addr()?.ip();
    let ch = Channel::new(stream, format!("{host}:{port}"), timeout)?;
    let hello = HelloLine {
        test: plan.test.to_string(),
        sizes: plan.sizes.clone(),
        iters: plan.iters,
        tx_depth: plan.tx_depth,
        baseline: with_baseline,
        bidirectional: plan.bidir,
    };
    ch.send(&hello.to_json())?;
    let srv = ch.recv()?;
    let mesh_port = perf_wire::mesh_port(&srv)?;
    let (sgid, sqpn, sremote) = peer_endpoint(&srv)?;
    let spec = MeshSpec::Worker {
        host: server_ip.to_string(),
        port: mesh_port,
    };
    let mesh = Mesh::start(mesh_config(spec)).context("starting the mesh worker")?;
    let id = mesh.wait_registered(timeout).ok_or_else(|| {
        anyhow!("could not register with the server's mesh at {server_ip} port {mesh_port}")
    })?;
    let fabric = Fabric::on_mesh(ops.engine_config(), mesh);
    let gid = gid_for(id);
    let dev = fabric.open_device(gid)?;
    let max = *plan.sizes.iter().max().expect("a size") as usize;
    let mut side = Side::build(&dev, max, plan.tx_depth)?;
    ops.watch.add("client", &dev, &side.qp);
    wait_owner(fabric.mesh().expect("on a mesh"), sgid, timeout)?;
    ch.watch(alive_on(&fabric, sgid));
    side.qp.connect(sgid, sqpn, Access::ALL)?;
    side.remote = sremote;
    ch.send(&endpoint(&side, gid)?)?;
    ch.recv()?;
    ch.send(&json!({"ready": true}))?;
    for &size in &plan.sizes {
        let mut m = tests::client(
            plan.test,
            &side,
            size,
            plan.iters,
            plan.tx_depth,
            plan.bidir,
            &ch,
        )?;
        if plan.bidir {
            // The server's own direction, added as perftest -b reports.
            let v = ch.recv()?;
            let f = |k: &str| {
                v[k].as_f64()
                    .ok_or_else(|| anyhow!("no {k} from the server"))
            };
            m = m.plus(&Measure::Bw {
                avg: f("avg")?,
                peak: f("peak")?,
                msg_rate: f("msg_rate")?,
            });
        }
        let base = if with_baseline {
            Some(if plan.test.is_bw() {
                let bytes = baseline_bytes(size, plan.iters);
                bytes as f64
                    / ch.stream_out(bytes, size.min(1 << 22) as usize)?
                        .as_secs_f64()
            } else {
                let mut buf = vec![0u8; size as usize];
                let mut rtts: Vec<f64> = (0..plan.iters)
                    .map(|_| {
                        ch.pingpong(size as usize, true, &mut buf)
                            .map(|d| d.as_secs_f64() * 1e6 / 2.0)
                    })
                    .collect::<Result<_>>()?;
                rtts.sort_by(|a, b| a.total_cmp(b));
                rtts[rtts.len() / 2]
            })
        } else {
            None
        };
        emit(Row::new(plan.test, size, plan.iters, m, base));
    }
    // Leave the mesh before the server does, so neither side sees the other vanish.
    if let Some(m) = fabric.mesh() {
        m.shutdown();
    }
    ch.send(&json!({"bye": true}))?;
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    /// The wait counts from the peer's last sign of life: a peer alive at
    /// every look is waited for past the timeout; one gone gives up the
    /// timeout after it was last seen, not after the wait began.
    #[test]
    fn a_wait_counts_from_the_peers_last_sign_of_life() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut w = PeerWait::new(ms(300), t0);
        for i in 1..=10 {
            assert!(w.idle(t0 + ms(100 * i), true), "alive at {i}00 ms");
        }
        assert!(w.idle(t0 + ms(1_200), false), "gone 200 ms");
        assert!(!w.idle(t0 + ms(1_300), false), "gone 300 ms: give up");
        let mut w = PeerWait::new(ms(300), t0);
        assert!(
            !w.idle(t0 + ms(300), false),
            "never seen: the timeout from the start"
        );
    }
}
