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

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ernic_verbs::{
    Access, Config, Fabric, Gid, Mesh, MeshConfig, MeshSpec, NodeId, Qpn, RemoteAddr, Rkey,
};
use serde_json::{Value, json};

use super::report::Row;
use super::tests::{self, Measure, Side};
use super::{Oob, Plan, Test};

/// perftest's default port.
pub const DEFAULT_PORT: u16 = 18515;

/// How long either side waits for the other during set-up.
const SETUP: Duration = Duration::from_secs(30);

/// The out-of-band connection.
struct Channel {
    r: Mutex<BufReader<TcpStream>>,
    w: Mutex<TcpStream>,
}

impl Channel {
    fn new(s: TcpStream) -> Result<Channel> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(SETUP))?;
        Ok(Channel {
            r: Mutex::new(BufReader::new(s.try_clone()?)),
            w: Mutex::new(s),
        })
    }

    fn send(&self, v: &Value) -> Result<()> {
        let mut w = self.w.lock().map_err(|_| anyhow!("channel lock"))?;
        writeln!(w, "{v}").context("the peer closed the connection")?;
        Ok(())
    }

    fn recv(&self) -> Result<Value> {
        let mut r = self.r.lock().map_err(|_| anyhow!("channel lock"))?;
        let mut line = String::new();
        (&mut *r)
            .take(64 * 1024)
            .read_line(&mut line)
            .context("the peer did not answer")?;
        if line.is_empty() {
            bail!("the peer closed the connection");
        }
        let v: Value = serde_json::from_str(&line)
            .context("the peer sent something that is not ernic perf's protocol")?;
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            bail!("the peer refused: {e}");
        }
        Ok(v)
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
            .read_exact(&mut ack)?;
        Ok(t0.elapsed())
    }

    fn stream_in(&self, total: u64, chunk: usize) -> Result<()> {
        let mut buf = vec![0u8; chunk];
        let mut r = self.r.lock().map_err(|_| anyhow!("channel lock"))?;
        let mut left = total;
        while left > 0 {
            let n = (chunk as u64).min(left) as usize;
            r.read_exact(&mut buf[..n])?;
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
        if initiator {
            w.write_all(&buf[..size])?;
            r.read_exact(&mut buf[..size])?;
        } else {
            r.read_exact(&mut buf[..size])?;
            w.write_all(&buf[..size])?;
        }
        Ok(t0.elapsed())
    }
}

impl Oob for Channel {
    fn barrier(&self) -> Result<()> {
        self.w
            .lock()
            .map_err(|_| anyhow!("channel lock"))?
            .write_all(&[0xb])?;
        let mut b = [0u8; 1];
        self.r
            .lock()
            .map_err(|_| anyhow!("channel lock"))?
            .read_exact(&mut b)
            .context("the peer went away")?;
        if b[0] != 0xb {
            bail!("the peer is out of step (barrier byte {:#x})", b[0]);
        }
        Ok(())
    }
}

/// The GID a perf process gives its device: one per mesh node.
fn gid_for(node: NodeId) -> Gid {
    Gid(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0xe, node.0 + 1).octets())
}

fn wait_owner(mesh: &Mesh, gid: Gid) -> Result<()> {
    let end = Instant::now() + SETUP;
    while mesh.owner(&gid).is_none() {
        if Instant::now() > end {
            bail!("the peer's GID {gid} never appeared on the mesh");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(())
}

fn mesh_config(spec: MeshSpec) -> MeshConfig {
    MeshConfig::new(spec)
}

fn endpoint(side: &Side, gid: Gid) -> Result<Value> {
    let t = side.target()?;
    Ok(json!({"gid": gid.to_string(), "qpn": side.qp.qpn().0, "addr": t.addr, "rkey": t.rkey.0}))
}

fn peer_endpoint(v: &Value) -> Result<(Gid, Qpn, RemoteAddr)> {
    let gid: Gid = v["gid"]
        .as_str()
        .ok_or_else(|| anyhow!("no gid"))?
        .parse()?;
    let qpn = Qpn(v["qpn"].as_u64().ok_or_else(|| anyhow!("no qpn"))? as u32);
    let addr = v["addr"].as_u64().ok_or_else(|| anyhow!("no addr"))?;
    let rkey = Rkey(v["rkey"].as_u64().ok_or_else(|| anyhow!("no rkey"))? as u32);
    Ok((gid, qpn, RemoteAddr { addr, rkey }))
}

/// `ernic perf TEST --server`: waits for one client and serves its run.
pub fn server(test: Test, port: u16, quiet: bool) -> Result<()> {
    let listener = TcpListener::bind((Ipv6Addr::UNSPECIFIED, port))
        .or_else(|_| TcpListener::bind(("0.0.0.0", port)))
        .with_context(|| format!("cannot listen on port {port} (is another ernic perf --server running? choose one with -p)"))?;
    if !quiet {
        eprintln!(" Waiting for a client on port {port} ...");
    }
    let (stream, peer) = listener.accept().context("accepting the client")?;
    drop(listener);
    let ch = Channel::new(stream)?;
    let hello = ch.recv()?;
    let their = hello["test"].as_str().unwrap_or("?");
    if their != test.to_string() {
        ch.send(&json!({"error": format!("this server runs {test}, not {their}")}))?;
        bail!("the client at {peer} asked for {their}, this server runs {test}");
    }
    let plan: Plan = Plan {
        test,
        sizes: serde_json::from_value(hello["sizes"].clone()).context("sizes")?,
        iters: hello["iters"].as_u64().ok_or_else(|| anyhow!("iters"))?,
        tx_depth: hello["tx_depth"]
            .as_u64()
            .ok_or_else(|| anyhow!("tx_depth"))? as u32,
        bidir: hello["bidirectional"].as_bool().unwrap_or(false),
    };
    if plan.bidir && !test.is_bw() {
        ch.send(&json!({"error": "-b applies to bandwidth tests only"}))?;
        bail!("the client asked for {test} in both directions");
    }
    let baseline = hello["baseline"].as_bool().unwrap_or(false);
    let max = plan
        .sizes
        .iter()
        .copied()
        .max()
        .ok_or_else(|| anyhow!("no sizes"))?;
    if max > super::MAX_SIZE || plan.iters == 0 {
        ch.send(&json!({"error": "sizes or iterations out of range"}))?;
        bail!("the client asked for sizes or iterations out of range");
    }
    let mesh = Mesh::start(mesh_config(MeshSpec::Manager { port: 0 }))
        .context("starting the mesh manager")?;
    let mesh_port = mesh.listen_addr().port();
    let fabric = Fabric::on_mesh(Config::default(), mesh);
    let gid = gid_for(NodeId(0));
    let dev = fabric.open_device(gid)?;
    let mut side = Side::build(&dev, max as usize, plan.tx_depth)?;
    let mut me = endpoint(&side, gid)?;
    me["mesh_port"] = json!(mesh_port);
    ch.send(&me)?;
    let (cgid, cqpn, cremote) = peer_endpoint(&ch.recv()?)?;
    wait_owner(fabric.mesh().expect("on a mesh"), cgid)?;
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
    let ch = Channel::new(stream)?;
    ch.send(&json!({
        "test": plan.test.to_string(),
        "sizes": plan.sizes,
        "iters": plan.iters,
        "tx_depth": plan.tx_depth,
        "baseline": with_baseline,
        "bidirectional": plan.bidir,
    }))?;
    let srv = ch.recv()?;
    let mesh_port = srv["mesh_port"]
        .as_u64()
        .ok_or_else(|| anyhow!("no mesh port"))? as u16;
    let (sgid, sqpn, sremote) = peer_endpoint(&srv)?;
    let spec = MeshSpec::Worker {
        host: server_ip.to_string(),
        port: mesh_port,
    };
    let mesh = Mesh::start(mesh_config(spec)).context("starting the mesh worker")?;
    let id = mesh.wait_registered(SETUP).ok_or_else(|| {
        anyhow!("could not register with the server's mesh at {server_ip} port {mesh_port}")
    })?;
    let fabric = Fabric::on_mesh(Config::default(), mesh);
    let gid = gid_for(id);
    let dev = fabric.open_device(gid)?;
    let max = *plan.sizes.iter().max().expect("a size") as usize;
    let mut side = Side::build(&dev, max, plan.tx_depth)?;
    wait_owner(fabric.mesh().expect("on a mesh"), sgid)?;
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
