//! Moves messages between two processes over ernic's TCP mesh with the
//! RDMA protocol.
//!
//! ```text
//! cargo run --release -p ernic-net --example two_process -- [--rails R] [--size BYTES] [--count N]
//! ```
//!
//! The parent starts a mesh manager on an ephemeral port and spawns itself
//! as the child (`child PORT ...`), which joins as a worker, opens an
//! endpoint, listens, and prints its listen handle. The parent connects
//! with that handle and sends `N` messages of `BYTES`; the child checks
//! every byte and reports. The parent prints the one-way bandwidth, then
//! measures plain RDMA WRITEs of the same size between the same two
//! processes (what `ernic perf write_bw` does) and prints the ratio.
//! `--verify 0` measures bandwidth alone: the buffers are filled once and
//! only the first messages are checked byte by byte (every size still is).
#![allow(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ernic_net::config::Config;
use ernic_net::rdma::{Connector, Endpoint, Handle, Request};
use ernic_net::verbs_provider::ErnicProvider;
use ernic_verbs::{
    Access, Config as VerbsConfig, Cq, Fabric, Gid, Mesh, MeshConfig, MeshSpec, Mr, Qp, QpCaps,
    QpType, Qpn, RemoteAddr, Rkey, SendOp, SendWr,
};

const DEPTH: usize = 4;
const T: Duration = Duration::from_secs(120);

struct Args {
    rails: usize,
    size: usize,
    count: usize,
    verify: bool,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        rails: 2,
        size: 1 << 20,
        count: 64,
        verify: true,
    };
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let n: usize = v
            .parse()
            .map_err(|_| format!("{flag} {v}: expected a number"))?;
        match flag.as_str() {
            "--rails" => a.rails = n,
            "--size" => a.size = n,
            "--count" => a.count = n,
            "--verify" => a.verify = n != 0,
            _ => {
                return Err(format!(
                    "unknown flag {flag} (flags: --rails R --size BYTES --count N --verify 0|1)"
                ));
            }
        }
    }
    Ok(a)
}

fn byte(msg: usize, i: usize) -> u8 {
    (i.wrapping_mul(131) ^ msg.wrapping_mul(7)) as u8
}

fn wait(ep: &mut Endpoint, req: Request) -> Result<usize, String> {
    let end = Instant::now() + T;
    loop {
        if let Some(n) = ep.test(req).map_err(|e| e.to_string())? {
            return Ok(n);
        }
        if Instant::now() > end {
            return Err("a request did not complete in time".into());
        }
    }
}

/// Runs `count` requests with up to `DEPTH` in flight: `start(ep, i)` posts
/// the i-th (`None`: not now), `finish(i, size)` takes each as it completes,
/// in order.
fn pipeline(
    ep: &mut Endpoint,
    count: usize,
    mut start: impl FnMut(&mut Endpoint, usize) -> Result<Option<Request>, String>,
    mut finish: impl FnMut(usize, usize) -> Result<(), String>,
) -> Result<(), String> {
    let mut inflight = std::collections::VecDeque::with_capacity(DEPTH);
    let (mut posted, mut done) = (0, 0);
    while done < count {
        while inflight.len() < DEPTH && posted < count {
            match start(ep, posted)? {
                Some(r) => {
                    inflight.push_back(r);
                    posted += 1;
                }
                None => break,
            }
        }
        let Some(r) = inflight.pop_front() else {
            // Nothing could start yet: drive the endpoint and try again.
            ep.progress();
            continue;
        };
        let n = wait(ep, r)?;
        finish(done, n)?;
        done += 1;
    }
    Ok(())
}

/// The baseline: a plain verbs QP and MR on the same fabric, for an RDMA
/// WRITE bandwidth run between the same two processes (what `ernic perf
/// write_bw` measures).
struct Raw {
    gid: Gid,
    qp: Qp,
    cq: Cq,
    mr: Mr,
}

fn raw(fabric: &Fabric, role: u16, size: usize) -> Result<Raw, String> {
    let gid =
        Gid(
            std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0x7261, role, std::process::id() as u16)
                .octets(),
        );
    let e = |e: ernic_verbs::Error| e.to_string();
    let dev = fabric.open_device(gid).map_err(e)?;
    let pd = dev.alloc_pd().map_err(e)?;
    let cq = dev.create_cq(256).map_err(e)?;
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq, QpCaps::default())
        .map_err(e)?;
    let mr = pd.reg_mr(size.max(1), Access::ALL).map_err(e)?;
    // Touched, as a reused buffer would be.
    mr.write(0, &vec![1u8; size]).map_err(e)?;
    Ok(Raw { gid, qp, cq, mr })
}

/// Connects `r` to the peer's QP, waiting for the mesh to learn its GID.
fn raw_connect(r: &Raw, gid: Gid, qpn: Qpn) -> Result<(), String> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        match r.qp.connect(gid, qpn, Access::ALL) {
            Ok(()) => return Ok(()),
            Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("cannot connect the baseline QP: {e}")),
        }
    }
}

fn child(port: u16, a: Args) -> Result<(), String> {
    let mesh = Mesh::start(MeshConfig::new(MeshSpec::Worker {
        host: "127.0.0.1".into(),
        port,
    }))
    .map_err(|e| format!("cannot join the mesh: {e}"))?;
    let provider = ErnicProvider::new(Fabric::on_mesh(VerbsConfig::default(), mesh));
    let cfg = Config::from_env().map_err(|e| e.to_string())?;
    let mut ep = Endpoint::open(&provider, a.rails, cfg).map_err(|e| e.to_string())?;
    // Touched before timing starts, as a reused buffer would be (a fresh
    // page costs a fault on first write).
    let mut buf = vec![0xffu8; a.size.max(1) * DEPTH];
    // SAFETY: `buf` outlives the endpoint's use of it (the endpoint is
    // dropped first, at the end of this function, after every request).
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.map_err(|e| e.to_string())?;
    let (listen, handle) = ep.listen().map_err(|e| e.to_string())?;
    let base = raw(provider.fabric().expect("rails on a fabric"), 2, a.size)?;
    println!("HANDLE {}", handle.to_hex());
    println!(
        "RAW {} {} {} {}",
        base.gid,
        base.qp.qpn().0,
        base.mr.addr(),
        base.mr.rkey().0
    );
    std::io::stdout().flush().ok();
    let end = Instant::now() + T;
    let comm = loop {
        if let Some(c) = ep.accept(listen).map_err(|e| e.to_string())? {
            break c;
        }
        if Instant::now() > end {
            return Err("no connection arrived".into());
        }
    };
    let slots = buf.as_mut_ptr();
    let mut bytes = 0;
    pipeline(
        &mut ep,
        a.count,
        |ep, i| {
            let p = slots.wrapping_add((i % DEPTH) * a.size);
            // SAFETY: the slot is inside the registered buffer and left
            // alone until its receive completes.
            unsafe { ep.irecv(comm, p, a.size, mr) }.map_err(|e| e.to_string())
        },
        |m, n| {
            let slot = &buf[(m % DEPTH) * a.size..][..n];
            let pattern = if a.verify { m } else { m % DEPTH };
            let check = a.verify || m < DEPTH;
            if n != a.size
                || (check && slot.iter().enumerate().any(|(i, &b)| b != byte(pattern, i)))
            {
                return Err(format!("message {m} arrived damaged ({n} bytes)"));
            }
            bytes += n;
            Ok(())
        },
    )?;
    println!("received {} messages, {bytes} bytes, all intact", a.count);
    ep.close(comm).map_err(|e| e.to_string())?;
    // The baseline: the parent writes into `base`; this process only has to
    // stay up (its device thread applies the writes) until told.
    let mut line = String::new();
    let stdin = std::io::stdin();
    stdin.read_line(&mut line).map_err(|e| e.to_string())?;
    let mut f = line.split_whitespace().skip(1);
    let gid: Gid = f
        .next()
        .and_then(|g| g.parse().ok())
        .ok_or("bad RAW line")?;
    let qpn = Qpn(f
        .next()
        .and_then(|q| q.parse().ok())
        .ok_or("bad RAW line")?);
    raw_connect(&base, gid, qpn)?;
    println!("RAWREADY");
    std::io::stdout().flush().ok();
    line.clear();
    stdin.read_line(&mut line).map_err(|e| e.to_string())?;
    Ok(())
}

/// RDMA WRITE bandwidth from `r` to the peer's MR: `count` writes of
/// `size` bytes, `DEPTH` in flight.
fn raw_write_bw(r: &Raw, to: RemoteAddr, size: usize, count: usize) -> Result<f64, String> {
    let sge = r.mr.sge(0, size as u32).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let (mut posted, mut done) = (0, 0);
    while done < count {
        while posted < count && posted - done < DEPTH {
            let wr = SendWr::new(posted as u64, SendOp::Write(to)).sgl(std::slice::from_ref(&sge));
            r.qp.post_send(&wr).map_err(|e| e.to_string())?;
            posted += 1;
        }
        match r.cq.wait_one(T).map_err(|e| e.to_string())? {
            Some(c) if c.status.is_ok() => done += 1,
            Some(c) => return Err(format!("a baseline write failed: {}", c.status.as_str())),
            None => return Err("a baseline write did not complete".into()),
        }
    }
    Ok((size * count) as f64 / start.elapsed().as_secs_f64() / 1e9)
}

fn parent(a: Args) -> Result<(), String> {
    // Refuse bad input here, before a child is started.
    let cfg = Config::from_env().map_err(|e| e.to_string())?;
    if !(1..=ernic_net::config::MAX_RAILS).contains(&a.rails) {
        return Err(format!(
            "--rails {}: between 1 and {}",
            a.rails,
            ernic_net::config::MAX_RAILS
        ));
    }
    if a.count == 0 {
        return Err("--count 0: send at least one message".into());
    }
    let mesh = Mesh::start(MeshConfig::new(MeshSpec::Manager { port: 0 }))
        .map_err(|e| format!("cannot start the mesh manager: {e}"))?;
    let port = mesh.listen_addr().port();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut kid = Command::new(exe)
        .args([
            "child",
            &port.to_string(),
            "--rails",
            &a.rails.to_string(),
            "--size",
            &a.size.to_string(),
            "--count",
            &a.count.to_string(),
            "--verify",
            if a.verify { "1" } else { "0" },
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the child: {e}"))?;
    let mut lines = BufReader::new(kid.stdout.take().expect("piped")).lines();
    let line = lines
        .next()
        .ok_or("the child exited before printing its handle")?
        .map_err(|e| e.to_string())?;
    let hex = line
        .strip_prefix("HANDLE ")
        .ok_or(format!("unexpected line from the child: {line}"))?;
    let handle = Handle::from_hex(hex).ok_or(format!("not a handle: {hex}"))?;
    let line = lines
        .next()
        .ok_or("the child exited early")?
        .map_err(|e| e.to_string())?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let (peer_gid, peer_qpn, peer_addr, peer_rkey) = match f[..] {
        ["RAW", g, q, a, k] => (
            g.parse::<Gid>().map_err(|e| e.to_string())?,
            Qpn(q.parse().map_err(|_| "bad qpn")?),
            a.parse::<u64>().map_err(|_| "bad address")?,
            Rkey(k.parse().map_err(|_| "bad rkey")?),
        ),
        _ => return Err(format!("unexpected line from the child: {line}")),
    };

    let provider = ErnicProvider::new(Fabric::on_mesh(VerbsConfig::default(), mesh));
    let mut ep = Endpoint::open(&provider, a.rails, cfg).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; a.size.max(1) * DEPTH];
    for s in 0..DEPTH.min(a.count) {
        for (i, b) in buf[s * a.size..(s + 1) * a.size].iter_mut().enumerate() {
            *b = byte(s, i);
        }
    }
    // SAFETY: as in the child.
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.map_err(|e| e.to_string())?;
    let mut conn = Connector::new(handle);
    let end = Instant::now() + T;
    let comm = loop {
        if let Some(c) = ep.connect(&mut conn).map_err(|e| e.to_string())? {
            break c;
        }
        if Instant::now() > end {
            return Err("connect did not finish".into());
        }
    };
    let start = Instant::now();
    pipeline(
        &mut ep,
        a.count,
        |ep, i| {
            let off = (i % DEPTH) * a.size;
            if i >= DEPTH && a.verify {
                // Refill the slot (its previous send completed) with this
                // message's bytes.
                for (k, b) in buf[off..off + a.size].iter_mut().enumerate() {
                    *b = byte(i, k);
                }
            }
            let p = buf.as_ptr().wrapping_add(off);
            // SAFETY: the slot is inside the registered buffer and unchanged
            // until its send completes.
            unsafe { ep.isend(comm, p, a.size, mr) }.map_err(|e| e.to_string())
        },
        |_, _| Ok(()),
    )?;
    let secs = start.elapsed().as_secs_f64();
    let gbps = (a.size * a.count) as f64 / secs / 1e9;
    // The same run's baseline: plain RDMA WRITEs between the same processes.
    let base = raw(provider.fabric().expect("rails on a fabric"), 1, a.size)?;
    raw_connect(&base, peer_gid, peer_qpn)?;
    let mut stdin = kid.stdin.take().expect("piped");
    writeln!(stdin, "RAW {} {}", base.gid, base.qp.qpn().0).map_err(|e| e.to_string())?;
    loop {
        let l = lines
            .next()
            .ok_or("the child exited early")?
            .map_err(|e| e.to_string())?;
        if l == "RAWREADY" {
            break;
        }
        println!("child: {l}");
    }
    let to = RemoteAddr {
        addr: peer_addr,
        rkey: peer_rkey,
    };
    let write_gbps = raw_write_bw(&base, to, a.size, a.count)?;
    writeln!(stdin, "BYE").map_err(|e| e.to_string())?;
    for l in lines {
        println!("child: {}", l.map_err(|e| e.to_string())?);
    }
    let status = kid.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("the child failed ({status})"));
    }
    println!(
        "{} messages of {} bytes over {} rails: {:.3} s, {gbps:.2} GB/s one way",
        a.count, a.size, a.rails, secs
    );
    if a.size > 0 {
        println!(
            "same run, plain RDMA WRITE between the same processes: {write_gbps:.2} GB/s; ratio {:.2}",
            gbps / write_gbps
        );
    }
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let r = if args.peek().map(String::as_str) == Some("child") {
        args.next();
        let port = args.next().and_then(|p| p.parse().ok());
        match (port, parse(args)) {
            (Some(port), Ok(a)) => child(port, a),
            (None, _) => Err("child needs the manager's port".into()),
            (_, Err(e)) => Err(e),
        }
    } else {
        parse(args).and_then(parent)
    };
    if let Err(e) = r {
        eprintln!("two_process: {e}");
        std::process::exit(1);
    }
}
