//! `ernic mesh`: run mesh nodes by hand.
//!
//! - `ernic mesh manager --listen PORT` runs a standalone manager (node 0,
//!   with no device of its own) and prints the topology as it changes.
//! - `ernic mesh node SPEC` runs a node with one device and takes commands
//!   as JSON lines on standard input, answering each with one JSON line on
//!   standard output: a scriptable RDMA endpoint for tests and experiments.
//!
//! Both take `--stats-file PATH` (the mesh's counters, and a node's device
//! counters, in the `ernic-stats/1` file about once a second and, for a
//! node that is told to exit, at exit) and `--inject SPEC` (mesh faults:
//! `mesh_drop`, `mesh_delay=MS`, `mesh_cut`; see `ernic_mesh::MeshConfig`).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use clap::{Args, Subcommand};
use ernic_core::Injector;
use ernic_core::inject::Event;
use ernic_ops::{FaultStat, Group, Instance, StatsDoc, StatsThread};
use ernic_verbs::{
    Access, Config, Cq, Device, Fabric, Gid, Mesh, MeshConfig, MeshSpec, Mr, NodeId, Pd, Qp,
    QpCaps, QpType, RemoteAddr, Rkey, SendOp, SendWr, Wc, WcStatus,
};
use serde_json::{Value, json};

/// `ernic mesh` subcommands.
#[derive(Subcommand, Debug)]
pub enum MeshCmd {
    /// Run a standalone mesh manager (node 0) until interrupted.
    #[command(after_help = MESH_ENV_HELP)]
    Manager(ManagerArgs),
    /// Run a scriptable node: JSON commands on stdin, one JSON answer per line on stdout.
    #[command(after_help = NODE_HELP)]
    Node(NodeArgs),
}

const NODE_HELP: &str = "\
Commands (one JSON object per line; every answer is one line, with \"error\" on failure):
  {\"op\":\"info\"}                                   node id, GID, peers (and the same-host path with each)
  {\"op\":\"wait_owner\",\"gid\":G,\"timeout_ms\":T}      wait until a node owns GID G
  {\"op\":\"mr\",\"len\":N}                             register N bytes -> mr, addr, rkey
  {\"op\":\"fill\",\"mr\":M,\"offset\":O,\"len\":N,\"seed\":S}  fill with a pattern
  {\"op\":\"sum\",\"mr\":M,\"offset\":O,\"len\":N}          FNV-1a checksum of the bytes
  {\"op\":\"qp\"}                                     create an RC QP -> qp, qpn
  {\"op\":\"connect\",\"qp\":Q,\"gid\":G,\"qpn\":N}         connect it to a peer QP
  {\"op\":\"recv\",\"qp\":Q,\"mr\":M,\"offset\":O,\"len\":N,\"wr_id\":W}
  {\"op\":\"send\",\"qp\":Q,\"kind\":K,\"mr\":M,\"offset\":O,\"len\":N,\"wr_id\":W,
     \"raddr\":A,\"rkey\":R,\"imm\":I,\"add\":X,\"compare\":C,\"swap\":S}
     K: send send_imm write write_imm read fetch_add cmp_swap
  {\"op\":\"poll\",\"n\":N,\"timeout_ms\":T}              wait for up to N completions
  {\"op\":\"flood\",\"qp\":Q,\"mr\":M,\"len\":N,\"count\":C,\"raddr\":A,\"rkey\":R,\"depth\":D,\"timeout_ms\":T}
                                                    C WRITEs, D in flight -> ok, errors, statuses,
                                                    duplicates (completions of a WR id seen before)
  {\"op\":\"stats\"}                                  the node's mesh and device counters, bytes read by reference,
                                                    and \"groups\"/\"faults\" as the stats file has them
  {\"op\":\"exit\"}

The mesh key and the other settings come from the environment (ERNIC_MESH_KEY_FILE, ...):
see `ernic mesh manager --help`.";

/// What `ernic mesh manager --help` and `ernic mesh node --help` add about
/// the environment.
const MESH_ENV_HELP: &str = "\
Environment:
  ERNIC_MESH_KEY_FILE=PATH  the mesh key (a file no other user may read; the same on every node):
                            nodes prove it to each other before any joins. Without one, anyone who
                            reaches the port can join (one warning line says so).
  ERNIC_MESH_KEY=TEXT       the key itself, for tests (at least 16 bytes)
  ERNIC_TCP_LISTEN=ADDR     the address to listen on (default: every address; 127.0.0.1 keeps the
                            mesh on this host, and a keyless one silent)
  ERNIC_TCP_MAX_NODES=N     the manager's table (64; 2 to 1024)
  ERNIC_LOG=error|warn|info|debug";

/// Arguments of `ernic mesh manager`.
#[derive(Args, Debug)]
pub struct ManagerArgs {
    /// Port to listen on (both address families where the host has IPv6).
    #[arg(long)]
    pub listen: u16,
    /// Heartbeat interval in milliseconds; a node silent for three is dead.
    #[arg(long, default_value_t = 1000)]
    pub heartbeat_ms: u64,
    #[command(flatten)]
    pub ops: OpsArgs,
}

/// The stats file and fault injection, for the manager and the node.
#[derive(Args, Debug)]
pub struct OpsArgs {
    /// Write the counters to PATH about once a second (ernic-stats/1 JSON,
    /// replaced atomically): the mesh's, one group per peer, and a node's
    /// device and engine counters and injected faults. A node told to exit
    /// writes it once more.
    #[arg(long, value_name = "PATH")]
    pub stats_file: Option<PathBuf>,
    /// The instance's name in the stats file (default: HOST:PID).
    #[arg(long, value_name = "NAME")]
    pub stats_name: Option<String>,
    /// Make chosen data messages fail: EVENT[=ARG]:PATTERN[,...] with the
    /// events mesh_drop (not sent), mesh_delay[=MS] (sent MS later, 50
    /// unless said; what follows on its connection waits behind it),
    /// mesh_cut (its connection is closed as it goes), and the patterns
    /// every=N, from=N, burst=B/M, at=N[,N...]. Counted over the requests
    /// and replies this node sends (and frames a manager relays), never
    /// heartbeats or handshakes: the same workload fails the same way.
    #[arg(long, value_name = "SPEC")]
    pub inject: Option<String>,
}

/// The events a mesh node injects.
const MESH_EVENTS: [Event; 3] = [Event::MeshDrop, Event::MeshDelay, Event::MeshCut];

impl OpsArgs {
    /// The injector `--inject` arms (none without it); a spec that arms an
    /// event no mesh node checks is refused, not silently ignored.
    fn injector(&self) -> Result<Arc<Injector>> {
        let spec = self.inject.as_deref().unwrap_or("");
        let faults = ernic_core::inject::parse_spec(spec).map_err(|e| anyhow!("--inject: {e}"))?;
        if let Some(f) = faults.iter().find(|f| !MESH_EVENTS.contains(&f.event)) {
            bail!(
                "--inject: {} is not checked by a mesh node (it injects mesh_drop, mesh_delay and mesh_cut)",
                f.event.name()
            );
        }
        Ok(Arc::new(Injector::new(faults)))
    }

    /// Checks the stats file can be written, before the node starts.
    fn check(&self) -> Result<()> {
        if let Some(p) = &self.stats_file {
            ernic_ops::file::check_writable(p).map_err(|e| anyhow!("--stats-file {e}"))?;
        }
        Ok(())
    }

    /// Starts writing `snapshot` to the stats file, if there is one.
    fn start(
        &self,
        snapshot: impl Fn() -> StatsDoc + Send + 'static,
    ) -> Result<Option<StatsThread>> {
        let Some(p) = &self.stats_file else {
            return Ok(None);
        };
        Ok(Some(StatsThread::spawn(
            p.clone(),
            Duration::from_secs(1),
            snapshot,
        )?))
    }
}

/// A stats document of `mesh` (its groups and its faults) for `inst`.
fn mesh_doc(inst: &Instance, mesh: &Mesh) -> StatsDoc {
    let mut doc = StatsDoc::new(inst);
    doc.instance.node_id = mesh.node_id().map(|n| u32::from(n.0));
    doc.groups = mesh.stats_groups();
    doc.faults = FaultStat::all(mesh.injector());
    doc
}

/// Arguments of `ernic mesh node`.
#[derive(Args, Debug)]
pub struct NodeArgs {
    /// tcp:manager:listen:PORT or tcp:worker:HOST:PORT (IPv6 in brackets).
    pub spec: MeshSpec,
    /// The device's GID (default: fd00::e:N+1 for node N).
    #[arg(long)]
    pub gid: Option<Gid>,
    /// Heartbeat interval in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub heartbeat_ms: u64,
    /// How long a SEND waits for a receive at its peer, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    pub rnr_timeout_ms: u64,
    /// How long a request to another node waits for its answer, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub request_timeout_ms: u64,
    #[command(flatten)]
    pub ops: OpsArgs,
}

/// Runs `ernic mesh ...`.
pub fn run(cmd: &MeshCmd) -> Result<()> {
    match cmd {
        MeshCmd::Manager(a) => manager(a),
        MeshCmd::Node(a) => node(a),
    }
}

fn manager(a: &ManagerArgs) -> Result<()> {
    // First, before any thread: SIGTERM and SIGINT stop the manager.
    let stop = ernic_ops::signal::Termination::arm()?;
    let mut cfg = MeshConfig::new(MeshSpec::Manager { port: a.listen });
    cfg.heartbeat = Duration::from_millis(a.heartbeat_ms.max(1));
    cfg.injector = a.ops.injector()?;
    a.ops.check()?;
    let mesh = Arc::new(Mesh::start(cfg)?);
    let inst = Instance::this_process("ernic mesh manager", a.ops.stats_name.as_deref());
    let m = mesh.clone();
    // Runs until SIGTERM or SIGINT, then writes the file once more.
    let stats = a.ops.start(move || mesh_doc(&inst, &m))?;
    tracing::info!(
        port = mesh.listen_addr().port(),
        "mesh manager: node 0, listening on port {}",
        mesh.listen_addr().port()
    );
    let mut last = String::new();
    loop {
        let now: Vec<String> = mesh
            .peers()
            .iter()
            .filter(|(p, _)| p.id.0 != 0)
            .map(|(p, _)| {
                let addr = p.addr.map_or("-".into(), |a| a.to_string());
                format!(
                    "node {} {} at {addr}",
                    p.id.0,
                    if p.alive { "alive" } else { "dead" }
                )
            })
            .collect();
        let text = now.join("; ");
        if text != last {
            tracing::info!(
                "mesh manager: {}",
                if text.is_empty() {
                    "no workers".into()
                } else {
                    text.clone()
                }
            );
            last = text;
        }
        if stop.wait(Some(Duration::from_millis(200))).is_some() {
            drop(stats);
            tracing::info!("mesh manager stopped");
            return Ok(());
        }
    }
}

/// Waits up to 30 s for the node's id; a refusal over the mesh key or the
/// protocol version ends the wait at once, with the reason.
fn wait_registered(mesh: &Mesh) -> Result<NodeId> {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(id) = mesh.wait_registered(Duration::from_millis(100)) {
            return Ok(id);
        }
        if let Some(why) = mesh.registration_refused() {
            bail!("{why}");
        }
        if Instant::now() >= end {
            let why = mesh
                .registration_error()
                .map_or(String::new(), |e| format!(" ({e})"));
            bail!("could not register with the mesh manager within 30 s{why}");
        }
    }
}

/// The default GID of node `n`.
pub fn gid_for(n: NodeId) -> Gid {
    Gid(std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0xe, n.0.wrapping_add(1)).octets())
}

struct Node {
    fabric: Fabric,
    dev: Device,
    /// The node's one protection domain: every MR and QP is in it.
    pd: Pd,
    cq: Cq,
    mrs: Vec<Mr>,
    qps: Vec<Qp>,
}

fn node(a: &NodeArgs) -> Result<()> {
    let mut cfg = MeshConfig::new(a.spec.clone());
    cfg.heartbeat = Duration::from_millis(a.heartbeat_ms.max(1));
    cfg.injector = a.ops.injector()?;
    a.ops.check()?;
    let mesh = Mesh::start(cfg)?;
    let id = wait_registered(&mesh)?;
    let ecfg = Config {
        rnr_timeout: Duration::from_millis(a.rnr_timeout_ms),
        request_timeout: Duration::from_millis(a.request_timeout_ms),
        ..Config::default()
    };
    let fabric = Fabric::on_mesh(ecfg, mesh);
    let gid = a.gid.unwrap_or_else(|| gid_for(id));
    let dev = fabric.open_device(gid)?;
    let cq = dev.create_cq(1 << 16)?;
    let pd = dev.alloc_pd()?;
    let mut inst = Instance::this_process("ernic mesh node", a.ops.stats_name.as_deref());
    inst.gids = vec![gid.to_string()];
    let (f, d) = (fabric.clone(), dev.clone());
    let stats = a.ops.start(move || node_doc(&inst, &f, &d))?;
    let mut n = Node {
        fabric,
        dev,
        pd,
        cq,
        mrs: Vec::new(),
        qps: Vec::new(),
    };
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        json!({"ready": true, "node": id.0, "gid": gid.to_string()})
    )?;
    out.flush()?;
    for line in stdin.lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(cmd) if cmd["op"] == "exit" => {
                // The last stats file is written before the answer.
                drop(stats);
                writeln!(out, "{}", json!({"ok": true}))?;
                out.flush()?;
                return Ok(());
            }
            Ok(cmd) => n
                .command(&cmd)
                .unwrap_or_else(|e| json!({"error": format!("{e:#}")})),
            Err(e) => json!({"error": format!("not JSON: {e}")}),
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}

/// A node's stats document: the mesh's groups, then the device's counters
/// (kind `device`, label `gid`) and the engine's view of the mesh (kind
/// `remote`: requests timed out, replies dropped or stale, messages
/// malformed, payloads sent by reference and bytes read so).
fn node_doc(inst: &Instance, fabric: &Fabric, dev: &Device) -> StatsDoc {
    let mesh = fabric.mesh().expect("on a mesh");
    let mut doc = mesh_doc(inst, mesh);
    doc.push(
        Group::new("device")
            .label("gid", dev.gid())
            .core_counters(&dev.counters()),
    );
    let r = fabric.remote_stats();
    doc.push(Group::new("remote").counters([
        ("request_timeouts", r.timeouts),
        ("replies_dropped", r.replies_dropped),
        ("stale_replies", r.stale_replies),
        ("messages_malformed", r.malformed),
        ("sent_by_ref", r.sent_by_ref),
        ("read_by_ref_bytes", r.read_by_ref),
    ]));
    doc
}

fn u(v: &Value, k: &str) -> Result<u64> {
    v[k].as_u64().ok_or_else(|| anyhow!("missing number {k:?}"))
}

fn opt(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// FNV-1a, 64 bits.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The pattern `fill` writes: byte i of a fill with `seed`.
pub fn pattern_byte(seed: u64, i: u64) -> u8 {
    (i.wrapping_mul(2_654_435_761)
        .wrapping_add(seed.wrapping_mul(97))
        >> 7) as u8
}

fn wc_json(c: &Wc) -> Value {
    json!({
        "wr_id": c.wr_id,
        "status": format!("{:?}", c.status),
        "opcode": format!("{:?}", c.opcode),
        "byte_len": c.byte_len,
        "imm": c.imm,
        "qpn": c.qpn.0,
    })
}

impl Node {
    fn mr(&self, v: &Value) -> Result<&Mr> {
        self.mrs
            .get(u(v, "mr")? as usize)
            .ok_or_else(|| anyhow!("no such mr"))
    }

    fn qp(&self, v: &Value) -> Result<&Qp> {
        self.qps
            .get(u(v, "qp")? as usize)
            .ok_or_else(|| anyhow!("no such qp"))
    }

    fn command(&mut self, v: &Value) -> Result<Value> {
        let op = v["op"].as_str().ok_or_else(|| anyhow!("missing \"op\""))?;
        Ok(match op {
            "info" => {
                let mesh = self.fabric.mesh().expect("on a mesh");
                let peers: Vec<Value> = mesh
                    .peers()
                    .iter()
                    .map(|(p, direct)| {
                        let l = mesh.same_host(p.id);
                        json!({
                            "id": p.id.0,
                            "alive": p.alive,
                            "direct": direct,
                            "same_host": {"reads_me": l.reads_me, "read_by_me": l.read_by_me, "shm_out": l.shm_out, "shm_in": l.shm_in},
                        })
                    })
                    .collect();
                json!({"node": mesh.node_id().map(|n| n.0), "gid": self.dev.gid().to_string(), "peers": peers})
            }
            "wait_owner" => {
                let gid: Gid = v["gid"]
                    .as_str()
                    .ok_or_else(|| anyhow!("missing gid"))?
                    .parse()?;
                let end = Instant::now() + Duration::from_millis(opt(v, "timeout_ms").max(1));
                let mesh = self.fabric.mesh().expect("on a mesh");
                loop {
                    if let Some(o) = mesh.owner(&gid) {
                        break json!({"owner": o.0});
                    }
                    if Instant::now() > end {
                        bail!("no node owns {gid}");
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            "mr" => {
                let mr = self.pd.reg_mr(u(v, "len")? as usize, Access::ALL)?;
                let r = json!({"mr": self.mrs.len(), "addr": mr.addr(), "rkey": mr.rkey().0});
                self.mrs.push(mr);
                r
            }
            "fill" => {
                let (off, len, seed) = (u(v, "offset")?, u(v, "len")?, opt(v, "seed"));
                let data: Vec<u8> = (0..len).map(|i| pattern_byte(seed, i)).collect();
                self.mr(v)?.write(off as usize, &data)?;
                json!({"ok": true})
            }
            "sum" => {
                let (off, len) = (u(v, "offset")? as usize, u(v, "len")? as usize);
                let mut data = vec![0u8; len];
                self.mr(v)?.read(off, &mut data)?;
                json!({"sum": fnv1a(&data)})
            }
            "qp" => {
                let caps = QpCaps {
                    max_send_wr: 1024,
                    max_recv_wr: 1024,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                };
                let qp = self.pd.create_qp(QpType::Rc, &self.cq, &self.cq, caps)?;
                let r = json!({"qp": self.qps.len(), "qpn": qp.qpn().0});
                self.qps.push(qp);
                r
            }
            "connect" => {
                let gid: Gid = v["gid"]
                    .as_str()
                    .ok_or_else(|| anyhow!("missing gid"))?
                    .parse()?;
                self.qp(v)?
                    .connect(gid, ernic_verbs::Qpn(u(v, "qpn")? as u32), Access::ALL)?;
                json!({"ok": true})
            }
            "recv" => {
                let sge = self
                    .mr(v)?
                    .sge(u(v, "offset")? as usize, u(v, "len")? as u32)?;
                self.qp(v)?.post_recv(opt(v, "wr_id"), &[sge])?;
                json!({"ok": true})
            }
            "send" => {
                let remote = RemoteAddr {
                    addr: opt(v, "raddr"),
                    rkey: Rkey(opt(v, "rkey") as u32),
                };
                let op = match v["kind"].as_str().unwrap_or("") {
                    "send" => SendOp::Send,
                    "send_imm" => SendOp::SendImm(opt(v, "imm") as u32),
                    "write" => SendOp::Write(remote),
                    "write_imm" => SendOp::WriteImm(remote, opt(v, "imm") as u32),
                    "read" => SendOp::Read(remote),
                    "fetch_add" => SendOp::AtomicFa {
                        remote,
                        add: opt(v, "add"),
                    },
                    "cmp_swap" => SendOp::AtomicCas {
                        remote,
                        compare: opt(v, "compare"),
                        swap: opt(v, "swap"),
                    },
                    k => bail!("unknown send kind {k:?}"),
                };
                let sge = self
                    .mr(v)?
                    .sge(u(v, "offset")? as usize, u(v, "len")? as u32)?;
                self.qp(v)?
                    .post_send(&SendWr::new(opt(v, "wr_id"), op).sgl(&[sge]))?;
                json!({"ok": true})
            }
            "poll" => {
                let want = opt(v, "n").max(1) as usize;
                let end = Instant::now() + Duration::from_millis(opt(v, "timeout_ms"));
                let mut got: Vec<Value> = Vec::new();
                let mut buf = [Wc::EMPTY; 64];
                while got.len() < want {
                    let k = self
                        .cq
                        .wait(&mut buf, end.saturating_duration_since(Instant::now()))?;
                    got.extend(buf[..k].iter().map(wc_json));
                    if Instant::now() >= end {
                        break;
                    }
                }
                json!({"wcs": got})
            }
            "flood" => self.flood(v)?,
            "stats" => {
                let mesh = self.fabric.mesh().expect("on a mesh");
                let (bytes, msgs) = mesh.inbound_usage();
                let c = self.dev.counters();
                let r = self.fabric.remote_stats();
                let doc = node_doc(&Instance::default(), &self.fabric, &self.dev);
                json!({
                    "groups": doc.groups,
                    "faults": doc.faults,
                    "inbound_bytes": bytes,
                    "inbound_msgs": msgs,
                    "relay_drops": mesh.relay_drops(),
                    "sent_by_ref": r.sent_by_ref,
                    "read_by_ref": r.read_by_ref,
                    "counters": c.iter().map(|(k, v)| (k.to_string(), v)).collect::<BTreeMap<_, _>>(),
                })
            }
            other => bail!("unknown op {other:?}"),
        })
    }

    /// `count` WRITEs of `len` bytes, `depth` in flight, every one signaled.
    fn flood(&mut self, v: &Value) -> Result<Value> {
        let (len, count, depth) = (u(v, "len")?, u(v, "count")?, opt(v, "depth").clamp(1, 512));
        let remote = RemoteAddr {
            addr: u(v, "raddr")?,
            rkey: Rkey(u(v, "rkey")? as u32),
        };
        let sge = [self.mr(v)?.sge(0, len as u32)?];
        let qp = self.qp(v)?.clone();
        let end = Instant::now() + Duration::from_millis(opt(v, "timeout_ms").max(1));
        let (mut posted, mut done, mut errors) = (0u64, 0u64, 0u64);
        let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
        // Each WR id completes once: a second completion, or one for an id
        // never posted, is counted (and counts toward the end, so a double
        // cannot hide a loss).
        let mut seen = vec![false; count.min(1 << 24) as usize];
        let mut duplicates = 0u64;
        let mut buf = [Wc::EMPTY; 64];
        while done < count {
            if Instant::now() > end {
                bail!("flood timed out after {done} of {count} completions");
            }
            while posted < count && posted - done < depth {
                match qp.post_send(&SendWr::new(posted, SendOp::Write(remote)).sgl(&sge)) {
                    Ok(()) => posted += 1,
                    Err(_) => break,
                }
            }
            let k = self.cq.wait(&mut buf, Duration::from_millis(10))?;
            for c in &buf[..k] {
                done += 1;
                match seen.get_mut(c.wr_id as usize) {
                    Some(s) if !*s => *s = true,
                    _ => duplicates += 1,
                }
                if c.status != WcStatus::Success {
                    errors += 1;
                    *statuses.entry(format!("{:?}", c.status)).or_default() += 1;
                }
            }
        }
        Ok(json!({"ok": true, "errors": errors, "statuses": statuses, "duplicates": duplicates}))
    }
}
