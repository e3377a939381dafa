//! One rank of `ernic bench`: its endpoint and ring connections, the
//! collectives as ring algorithms over them, and the check of every
//! element; it takes its orders from the parent on standard input and
//! answers on standard output.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use ernic_core::Injector;
use ernic_net::config::Config;
use ernic_net::inject::Injected;
use ernic_net::provider::Provider;
use ernic_net::rdma::{Connector, Endpoint, Handle, MrHandle, RecvComm, Request, SendComm};
use ernic_net::verbs_provider::Devices;
use ernic_ops::file::StatsThread;
use ernic_ops::schema::{FaultStat, Group, Instance, StatsDoc};

use super::{BenchArgs, IDLE_POLLS, IDLE_POLLS_CROWDED, Op, T};

/// What rank `r` contributes at element `i`: small integers, so sums of up
/// to 16 ranks are exact in `f32`.
fn value(r: usize, i: usize) -> f32 {
    ((r * 7 + i) % 13) as f32
}

struct Me {
    ep: Endpoint,
    send: SendComm,
    recv: RecvComm,
    /// Send area, receive area and scratch, one registration.
    buf: RankBuf,
    mr: MrHandle,
    area: usize,
    rank: usize,
    n: usize,
    /// Idle polls before a waiting rank yields ([`IDLE_POLLS`]).
    idle_polls: u32,
}

/// A rank's buffers: its own memory, or memory its provider's device
/// reaches when that device reaches no other (the ionic NIC's).
enum RankBuf {
    Heap(Vec<u8>),
    Device(ernic_net::provider::Buffer),
}

impl std::ops::Deref for RankBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            RankBuf::Heap(v) => v,
            RankBuf::Device(b) => {
                // SAFETY: a provider's buffer is `len` bytes valid for
                // reads and writes while it lives, and only this rank uses
                // them (the device writes them only while a request that
                // names them is out, during which the rank does not look).
                unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) }
            }
        }
    }
}

impl std::ops::DerefMut for RankBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            RankBuf::Heap(v) => v,
            // SAFETY: as for `deref`, with `&mut self` making this the one
            // slice of it.
            RankBuf::Device(b) => unsafe {
                std::slice::from_raw_parts_mut(b.as_mut_ptr(), b.len())
            },
        }
    }
}

impl Me {
    /// Fills for `op` once, runs a checked warm-up, then `iters` timed runs
    /// back to back (no rank stops between them to fill or check, which
    /// would hold its neighbours up), checked after: the time per run and
    /// the elements wrong.
    fn timed(&mut self, op: Op, count: usize, iters: usize) -> Result<(Duration, u64)> {
        self.fill(op, count);
        self.run(op, count)?;
        let mut wrong = self.verify(op, count);
        // The result area poisoned (NaN): what the last check finds must
        // have come from the timed runs (of which the parent asks at least
        // one).
        let mut total = Duration::ZERO;
        if iters > 0 {
            self.f32s(1, 0, count).fill(0xff);
            let t = Instant::now();
            for _ in 0..iters {
                self.run(op, count)?;
            }
            total = t.elapsed();
            wrong += self.verify(op, count);
        }
        Ok((total, wrong))
    }

    fn f32s(&mut self, area: usize, from: usize, count: usize) -> &mut [u8] {
        let at = area * self.area + from * 4;
        &mut self.buf[at..at + count * 4]
    }

    /// Sends `sc` floats from (area, from) to the next rank while receiving
    /// `rc` from the previous into (area, from).
    fn exchange(
        &mut self,
        s: (usize, usize),
        sc: usize,
        r: (usize, usize),
        rc: usize,
    ) -> Result<()> {
        let base = self.buf.as_mut_ptr();
        let rp = base.wrapping_add(r.0 * self.area + r.1 * 4);
        let sp = base.wrapping_add(s.0 * self.area + s.1 * 4) as *const u8;
        let (slen, rlen) = (sc * 4, rc * 4);
        let (send, recv, mr) = (self.send, self.recv, self.mr);
        // SAFETY: both ranges are inside `buf` (areas of `max_bytes`),
        // registered as `mr`, and are left alone until both requests finish
        // below.
        let rq = post(&mut self.ep, |ep| unsafe { ep.irecv(recv, rp, rlen, mr) })?;
        // SAFETY: as above.
        let sq = post(&mut self.ep, |ep| unsafe { ep.isend(send, sp, slen, mr) })?;
        let end = Instant::now() + T;
        let (mut sd, mut rd) = (false, false);
        let mut idle = 0u32;
        while !(sd && rd) {
            let (was_s, was_r) = (sd, rd);
            if !rd {
                rd = self.ep.test(rq).map_err(anyhow::Error::new)?.is_some();
            }
            if !sd {
                sd = self.ep.test(sq).map_err(anyhow::Error::new)?.is_some();
            }
            if (was_s, was_r) == (sd, rd) {
                // Ranks outnumber cores (four on two by default): one that
                // keeps finding nothing lets the others run.
                idle += 1;
                if idle >= self.idle_polls {
                    std::thread::yield_now();
                }
            } else {
                idle = 0;
            }
            if Instant::now() > end {
                bail!("a transfer did not finish in {T:?}");
            }
        }
        Ok(())
    }

    fn chunk(&self, count: usize, c: usize) -> (usize, usize) {
        let per = count.div_ceil(self.n);
        let from = (c * per).min(count);
        (from, per.min(count - from))
    }

    /// Runs the collective of `count` floats (the part that is timed,
    /// reductions included), out of place as nccl-tests runs it: the input
    /// (area 0) is left as it is, so running again gives the same result.
    fn run(&mut self, op: Op, count: usize) -> Result<()> {
        let (n, me) = (self.n, self.rank);
        match op {
            Op::Sendrecv => {
                self.exchange((0, 0), count, (1, 0), count)?;
            }
            Op::AllGather => {
                // `count` is the gathered total; this rank's part goes to
                // its place in the result first.
                let part = count / n;
                let area = self.area;
                self.buf.copy_within(0..part * 4, area + me * part * 4);
                for s in 0..n - 1 {
                    let c = (me + n - s) % n;
                    let p = (me + n - s - 1) % n;
                    self.exchange((1, c * part), part, (1, p * part), part)?;
                }
            }
            Op::AllReduce => {
                // Reduced in the result area, starting from this rank's input.
                let area = self.area;
                self.buf.copy_within(0..count * 4, area);
                for s in 0..n - 1 {
                    let c = (me + n - s) % n;
                    let p = (me + n - s - 1) % n;
                    let (cf, cl) = self.chunk(count, c);
                    let (pf, pl) = self.chunk(count, p);
                    self.exchange((1, cf), cl, (2, 0), pl)?;
                    // Sum the received part into ours.
                    let (mine, rest) = self.buf.split_at_mut(2 * self.area);
                    let mine = &mut mine[self.area + pf * 4..self.area + (pf + pl) * 4];
                    for (m, g) in mine.chunks_exact_mut(4).zip(rest.chunks_exact(4)) {
                        let v = f32::from_le_bytes((&*m).try_into().expect("4 bytes"))
                            + f32::from_le_bytes(g.try_into().expect("4 bytes"));
                        m.copy_from_slice(&v.to_le_bytes());
                    }
                }
                for s in 0..n - 1 {
                    let c = (me + 1 + n - s) % n;
                    let p = (me + n - s) % n;
                    let (cf, cl) = self.chunk(count, c);
                    let (pf, pl) = self.chunk(count, p);
                    self.exchange((1, cf), cl, (1, pf), pl)?;
                }
            }
            Op::All => unreachable!("expanded by the parent"),
        }
        Ok(())
    }

    /// Counts the wrong elements of the result `run` left (not timed, as
    /// nccl-tests checks outside its timing).
    fn verify(&mut self, op: Op, count: usize) -> u64 {
        let n = self.n;
        match op {
            Op::Sendrecv => {
                let prev = (self.rank + n - 1) % n;
                self.check(1, count, |i| value(prev, i))
            }
            Op::AllGather => {
                let part = count / n;
                self.check(1, count, |i| value(i / part, i))
            }
            Op::AllReduce => self.check(1, count, |i| (0..n).map(|r| value(r, i)).sum()),
            Op::All => unreachable!("expanded by the parent"),
        }
    }

    /// Fills the send area (and the receive area, for the in-place ops)
    /// with this rank's values.
    fn fill(&mut self, op: Op, count: usize) {
        let (me, n) = (self.rank, self.n);
        // The input, in area 0: all of it, or (all_gather) this rank's part,
        // valued by its place in the gathered result.
        let (from, len) = match op {
            Op::Sendrecv | Op::AllReduce => (0, count),
            Op::AllGather => (me * (count / n), count / n),
            Op::All => return,
        };
        let region = self.f32s(0, 0, len);
        for (k, b) in region.chunks_exact_mut(4).enumerate() {
            b.copy_from_slice(&value(me, from + k).to_le_bytes());
        }
    }

    fn check(&mut self, area: usize, count: usize, want: impl Fn(usize) -> f32) -> u64 {
        let region = self.f32s(area, 0, count);
        region
            .chunks_exact(4)
            .enumerate()
            .filter(|(i, b)| f32::from_le_bytes((*b).try_into().expect("4 bytes")) != want(*i))
            .count() as u64
    }
}

/// Posts with `f` until the endpoint takes the request.
fn post(
    ep: &mut Endpoint,
    mut f: impl FnMut(&mut Endpoint) -> Result<Option<Request>, ernic_net::rdma::NetError>,
) -> Result<Request> {
    let end = Instant::now() + T;
    loop {
        if let Some(r) = f(ep).map_err(anyhow::Error::new)? {
            return Ok(r);
        }
        ep.progress();
        if Instant::now() > end {
            bail!("the endpoint took no request for {T:?}");
        }
    }
}

/// Runs rank `rank`; a failure is also told to the parent (`FAILED AT
/// why`, AT the wall-clock nanoseconds when this rank saw it), which stops
/// the other ranks.
pub(super) fn rank_main(a: &BenchArgs, rank: usize, port: u16) -> Result<()> {
    let mut told = false;
    let r = serve(a, rank, port, &mut told);
    if let Err(e) = &r
        && !told
    {
        tell_failure(e);
    }
    r
}

fn tell_failure(e: &anyhow::Error) {
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut out = std::io::stdout().lock();
    let why = format!("{e:#}").replace('\n', " ");
    let _ = writeln!(out, "FAILED {at} {why}");
    let _ = out.flush();
}

/// What this rank's stats file holds: its transport's groups and its
/// devices', each labelled with the rank, and its faults.
fn snapshot(
    instance: &Instance,
    rank: usize,
    devices: Option<&Devices>,
    injector: Option<&Injector>,
) -> StatsDoc {
    let mut doc = StatsDoc::new(instance);
    for g in ernic_net::stats::stats_groups() {
        doc.push(g.label("rank", rank));
    }
    for d in devices.map(Devices::list).unwrap_or_default() {
        doc.push(
            Group::new("device")
                .label("rank", rank)
                .label("gid", d.gid())
                .core_counters(&d.counters()),
        );
    }
    if let Some(i) = injector {
        doc.faults = FaultStat::all(i);
    }
    doc
}

/// This process's peak resident set (`VmHWM`), in KiB; 0 where unknown.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn serve(a: &BenchArgs, rank: usize, port: u16, told: &mut bool) -> Result<()> {
    let area = (a.max_bytes as usize).max(4).next_multiple_of(4096);
    let (provider, devices) = a.provider.open(rank, port, 3 * area as u64)?;
    let injector = match &a.inject {
        Some(spec) => Some(Arc::new(
            Injector::parse(spec).map_err(|e| anyhow!("--inject {spec}: {e}"))?,
        )),
        None => None,
    };
    let provider: Box<dyn Provider> = match &injector {
        Some(i) => Box::new(Injected::new(provider, i.clone())),
        None => provider,
    };
    let mut stats = match &a.stats_file {
        Some(p) => {
            let mut path = p.clone().into_os_string();
            path.push(format!(".rank{rank}"));
            let path = std::path::PathBuf::from(path);
            let instance = Instance::this_process("ernic bench", None);
            let injector = injector.clone();
            // Written once before the rank answers at all, so every rank's
            // file is there even if the run is stopped at once.
            let first = snapshot(&instance, rank, devices.as_ref(), injector.as_deref());
            ernic_ops::file::write_atomic(&path, &first)
                .with_context(|| format!("writing {}", path.display()))?;
            Some(
                StatsThread::spawn(path, Duration::from_secs(1), move || {
                    snapshot(&instance, rank, devices.as_ref(), injector.as_deref())
                })
                .context("starting the stats file's thread")?,
            )
        }
        None => None,
    };
    let cfg = Config::from_env().map_err(|e| anyhow!("{e}"))?;
    let mut ep = Endpoint::open(provider.as_ref(), a.rails, cfg).map_err(anyhow::Error::new)?;
    let (listen, handle) = ep.listen().map_err(anyhow::Error::new)?;
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "HANDLE {}", handle.to_hex())?;
    out.flush()?;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut next = || -> Result<String> {
        lines
            .next()
            .ok_or_else(|| anyhow!("the bench parent went away"))?
            .context("reading")
    };
    let l = next()?;
    let hex = l
        .strip_prefix("PEER ")
        .ok_or_else(|| anyhow!("expected PEER, got {l}"))?;
    let peer = Handle::from_hex(hex).ok_or_else(|| anyhow!("not a handle: {hex}"))?;
    let mut conn = Connector::new(peer);
    let (mut send, mut recv) = (None, None);
    let end = Instant::now() + T;
    while send.is_none() || recv.is_none() {
        if send.is_none() {
            send = ep.connect(&mut conn).map_err(anyhow::Error::new)?;
        }
        if recv.is_none() {
            recv = ep.accept(listen).map_err(anyhow::Error::new)?;
        }
        if Instant::now() > end {
            bail!("the ring did not connect in {T:?}");
        }
    }
    let mut buf = match provider.alloc_buffer(3 * area) {
        Ok(Some(b)) => RankBuf::Device(b),
        Ok(None) => RankBuf::Heap(vec![0u8; 3 * area]),
        Err(e) => bail!("memory for the rank's buffers: {e}"),
    };
    // SAFETY: `buf` is never moved or freed while `ep` lives: `Me` owns
    // both and the endpoint is dropped first (field order); a heap
    // buffer's bytes do not move when the Vec does.
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.map_err(anyhow::Error::new)?;
    let mut me = Me {
        ep,
        send: send.expect("connected"),
        recv: recv.expect("accepted"),
        buf,
        mr,
        area,
        rank,
        n: a.nodes,
        idle_polls: match std::thread::available_parallelism() {
            Ok(cores) if a.nodes > cores.get() => IDLE_POLLS_CROWDED,
            _ => IDLE_POLLS,
        },
    };
    writeln!(out, "READY")?;
    out.flush()?;
    loop {
        let l = next()?;
        let f: Vec<&str> = l.split_whitespace().collect();
        match f[..] {
            ["QUIT"] => {
                // The last stats, while the comms are still open.
                if let Some(s) = stats.take() {
                    s.finish();
                }
                writeln!(out, "BYE {}", vm_hwm_kib())?;
                out.flush()?;
                return Ok(());
            }
            ["RUN", op, size, iters] => {
                let op = Op::parse(op).ok_or_else(|| anyhow!("unknown op {op}"))?;
                let count = size.parse::<usize>()? / 4;
                let iters: usize = iters.parse()?;
                let (total, wrong) = match me.timed(op, count, iters) {
                    Ok(x) => x,
                    Err(e) => {
                        // Told with this rank's memory and comms still up:
                        // a neighbour whose operation the teardown would
                        // fail must not be the first to tell the parent
                        // (the last stats first, as the parent stops the
                        // ranks once it hears).
                        if let Some(s) = stats.take() {
                            s.finish();
                        }
                        tell_failure(&e);
                        *told = true;
                        return Err(e);
                    }
                };
                writeln!(
                    out,
                    "DONE {} {wrong}",
                    total.as_secs_f64() / iters.max(1) as f64
                )?;
                out.flush()?;
            }
            _ => bail!("unexpected line from the bench parent: {l}"),
        }
    }
}
