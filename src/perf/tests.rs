//! What each side of each perftest test does, given a connected RC QP.
//!
//! The client measures; the server serves (posts receives, answers
//! ping-pongs). Both meet at the [`Oob`] barrier before and after each size.
//! Every wait is a poll loop bounded by [`STALL`]: a side that sees no
//! progress for that long gives up with an error instead of hanging.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ernic_verbs::{
    Access, Cq, Device, Mr, Qp, QpCaps, QpType, RecvWr, RemoteAddr, SendOp, SendWr, Wc, WcStatus,
};

use super::{Oob, Test};

/// How long a side waits without progress before giving up.
pub const STALL: Duration = Duration::from_secs(10);

/// Receives kept posted by the receiving side of send tests.
pub const RX_DEPTH: u32 = 512;

/// One side's resources: a connected QP, its CQs, and a buffer whose first
/// half is the source of what it sends and whose second half receives.
pub struct Side {
    pub qp: Qp,
    pub scq: Cq,
    pub rcq: Cq,
    pub mr: Mr,
    /// Offset of the receiving half in `mr`.
    pub half: usize,
    /// The peer's receiving half.
    pub remote: RemoteAddr,
    /// Set when the other side of an in-process run has failed: a wait
    /// for it stops at once instead of at [`STALL`] (the two sides share
    /// one flag).
    pub peer_failed: Arc<AtomicBool>,
}

impl Side {
    /// Builds one side's resources on `dev`: CQs and an RC QP sized for
    /// `tx_depth`, and a buffer of twice the largest size. The QP is not
    /// connected yet, nor is `remote` known.
    pub fn build(dev: &Device, max: usize, tx_depth: u32) -> Result<Side> {
        let pd = dev.alloc_pd()?;
        let scq = dev.create_cq(tx_depth * 2 + 64)?;
        let rcq = dev.create_cq(RX_DEPTH * 2)?;
        let caps = QpCaps {
            max_send_wr: tx_depth.max(16),
            max_recv_wr: RX_DEPTH,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = pd.create_qp(QpType::Rc, &scq, &rcq, caps)?;
        let mr = pd
            .reg_mr(2 * max, Access::ALL)
            .with_context(|| format!("registering two {max}-byte buffers"))?;
        Ok(Side {
            qp,
            scq,
            rcq,
            mr,
            half: max,
            remote: RemoteAddr::default(),
            peer_failed: Arc::default(),
        })
    }

    /// Where the peer may write: this side's receiving half.
    pub fn target(&self) -> Result<RemoteAddr> {
        Ok(self.mr.remote(self.half)?)
    }
}

/// What a client measured for one size.
#[derive(Debug, Clone)]
pub enum Measure {
    /// Bandwidth, in bytes per second.
    Bw {
        /// Over the whole run.
        avg: f64,
        /// Over the best completion interval.
        peak: f64,
        /// Messages per second.
        msg_rate: f64,
    },
    /// Latency samples in microseconds, sorted.
    Lat(Vec<f64>),
}

const NO_WC: Wc = Wc::EMPTY;

/// Notices a side that makes no progress. It reads the clock only every
/// few thousand idle spins, so a short wait costs no clock reads at all.
struct Watchdog<'a> {
    since: Option<Instant>,
    spins: u32,
    peer_failed: &'a AtomicBool,
}

impl Watchdog<'_> {
    fn new(s: &Side) -> Watchdog<'_> {
        Watchdog {
            since: None,
            spins: 0,
            peer_failed: &s.peer_failed,
        }
    }

    fn progress(&mut self) {
        self.spins = 0;
        self.since = None;
    }

    fn idle(&mut self, what: &str) -> Result<()> {
        self.spins = self.spins.wrapping_add(1);
        if self.spins % 4096 == 0 {
            if self.peer_failed.load(Ordering::Relaxed) {
                bail!("the other side failed while {what}");
            }
            let since = *self.since.get_or_insert_with(Instant::now);
            if since.elapsed() > STALL {
                bail!("no progress for {} s while {what}", STALL.as_secs());
            }
        }
        Ok(())
    }
}

fn check(wc: &Wc, what: &str) -> Result<()> {
    if wc.status != WcStatus::Success {
        bail!(
            "{what} failed: completion status \"{}\" (wr_id {})",
            wc.status,
            wc.wr_id
        );
    }
    Ok(())
}

/// Polls `cq` until one completion arrives.
fn poll_one(s: &Side, cq: &Cq, what: &str) -> Result<Wc> {
    let mut wc = [NO_WC];
    let mut dog = Watchdog::new(s);
    loop {
        if cq.poll(&mut wc)? == 1 {
            check(&wc[0], what)?;
            return Ok(wc[0]);
        }
        dog.idle(what)?;
    }
}

/// A tag for iteration `i` that differs from the previous one and is never 0.
fn tag(i: u64) -> u8 {
    (i % 255 + 1) as u8
}

/// Runs the client side of `test` for one size (with `bidir`, a
/// bandwidth test in both directions: this side's half of it).
pub fn client(
    test: Test,
    s: &Side,
    size: u64,
    iters: u64,
    tx_depth: u32,
    bidir: bool,
    oob: &dyn Oob,
) -> Result<Measure> {
    if bidir {
        return both_ways(test, s, size, iters, tx_depth, oob);
    }
    oob.barrier()?;
    let m = match test {
        Test::WriteBw | Test::ReadBw | Test::SendBw => stream(test, s, size, iters, tx_depth)?,
        Test::WriteLat => write_pingpong(s, size, iters, true)?,
        Test::SendLat => send_pingpong(s, size, iters, true)?,
        Test::ReadLat | Test::AtomicLat => one_sided_lat(test, s, size, iters)?,
    };
    oob.barrier()?;
    Ok(m)
}

/// Runs the server side of `test` for one size. With `bidir` (a
/// bandwidth test in both directions) it moves data too, and answers what
/// it measured of its own direction.
pub fn server(
    test: Test,
    s: &Side,
    size: u64,
    iters: u64,
    tx_depth: u32,
    bidir: bool,
    oob: &dyn Oob,
) -> Result<Option<Measure>> {
    if bidir {
        return both_ways(test, s, size, iters, tx_depth, oob).map(Some);
    }
    match test {
        Test::SendBw => {
            let first = u64::from(RX_DEPTH).min(iters);
            for i in 0..first {
                s.qp.post_recv(i, &[s.mr.sge(s.half, size as u32)?])?;
            }
            oob.barrier()?;
            sink(s, size, iters, first)?;
        }
        Test::SendLat => {
            post_lat_recvs(s, size)?;
            oob.barrier()?;
            send_pingpong(s, size, iters, false)?;
        }
        Test::WriteLat => {
            oob.barrier()?;
            write_pingpong(s, size, iters, false)?;
        }
        Test::WriteBw | Test::ReadBw | Test::ReadLat | Test::AtomicLat => oob.barrier()?,
    }
    oob.barrier()?;
    Ok(None)
}

/// One side of a bandwidth test in both directions: this side streams to
/// the peer while the peer streams to it (and, for send_bw, takes the
/// peer's messages on a second thread). Answers this side's direction.
fn both_ways(
    test: Test,
    s: &Side,
    size: u64,
    iters: u64,
    tx_depth: u32,
    oob: &dyn Oob,
) -> Result<Measure> {
    let first = u64::from(RX_DEPTH).min(iters);
    if test == Test::SendBw {
        for i in 0..first {
            s.qp.post_recv(i, &[s.mr.sge(s.half, size as u32)?])?;
        }
    }
    oob.barrier()?;
    let m = std::thread::scope(|scope| -> Result<Measure> {
        let rx = (test == Test::SendBw).then(|| scope.spawn(|| sink(s, size, iters, first)));
        let m = stream(test, s, size, iters, tx_depth);
        if let Some(rx) = rx {
            let got = rx
                .join()
                .map_err(|_| anyhow::anyhow!("the receiving thread panicked"))?;
            // A failed stream is the cause; the receives' flush follows it.
            if m.is_ok() {
                got?;
            }
        }
        m
    })?;
    oob.barrier()?;
    Ok(m)
}

impl Measure {
    /// Both directions' figures added, as perftest reports -b.
    pub fn plus(&self, other: &Measure) -> Measure {
        match (self, other) {
            (
                Measure::Bw {
                    avg,
                    peak,
                    msg_rate,
                },
                Measure::Bw {
                    avg: a2,
                    peak: p2,
                    msg_rate: m2,
                },
            ) => Measure::Bw {
                avg: avg + a2,
                peak: peak + p2,
                msg_rate: msg_rate + m2,
            },
            (m, _) => m.clone(),
        }
    }
}

/// Bandwidth: keep `tx_depth` requests in flight, signal one in `cq_mod`.
fn stream(test: Test, s: &Side, size: u64, iters: u64, tx_depth: u32) -> Result<Measure> {
    let cq_mod = u64::from((tx_depth / 2).clamp(1, 100));
    let sge = [s.mr.sge(0, size as u32)?];
    let op = match test {
        Test::WriteBw => SendOp::Write(s.remote),
        Test::ReadBw => SendOp::Read(s.remote),
        _ => SendOp::Send,
    };
    let mut wc = [NO_WC; 16];
    let (mut posted, mut done) = (0u64, 0u64);
    let mut dog = Watchdog::new(s);
    let start = Instant::now();
    let (mut last_t, mut last_done, mut peak) = (start, 0u64, 0f64);
    while done < iters {
        while posted < iters && posted - done < u64::from(tx_depth) {
            let signaled = (posted + 1) % cq_mod == 0 || posted + 1 == iters;
            s.qp.post_send(&SendWr::new(posted, op).sgl(&sge).signaled(signaled))?;
            posted += 1;
        }
        let n = s.scq.poll(&mut wc)?;
        if n == 0 {
            dog.idle("waiting for send completions")?;
            continue;
        }
        dog.progress();
        for c in &wc[..n] {
            check(c, test.banner())?;
            done = done.max(c.wr_id + 1);
        }
        // Peak over windows of at least 50 ms: completions arrive in
        // bursts, and a burst over a short window says nothing.
        let now = Instant::now();
        let dt = now.duration_since(last_t).as_secs_f64();
        if dt >= 0.05 {
            peak = peak.max((done - last_done) as f64 * size as f64 / dt);
            (last_t, last_done) = (now, done);
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    let avg = (iters * size) as f64 / secs;
    Ok(Measure::Bw {
        avg,
        peak: peak.max(avg),
        msg_rate: iters as f64 / secs,
    })
}

/// The receiving side of send_bw: take `iters` messages, keeping receives
/// posted. Used receives are replaced in batches, one list post each, so the
/// receiver takes the device lock rarely.
fn sink(s: &Side, size: u64, iters: u64, mut posted: u64) -> Result<()> {
    const BATCH: usize = 128;
    let mut wc = [NO_WC; BATCH];
    let mut got = 0u64;
    let mut dog = Watchdog::new(s);
    let sge = [s.mr.sge(s.half, size as u32)?];
    let mut batch = [RecvWr {
        wr_id: 0,
        sgl: &sge,
    }; BATCH];
    while got < iters {
        let n = s.rcq.poll(&mut wc)?;
        if n == 0 {
            dog.idle("waiting for messages")?;
            continue;
        }
        dog.progress();
        for c in &wc[..n] {
            check(c, "receive")?;
        }
        got += n as u64;
        let k = (n as u64).min(iters - posted) as usize;
        for wr in &mut batch[..k] {
            wr.wr_id = posted;
            posted += 1;
        }
        s.qp.post_recv_list(&batch[..k])?;
    }
    Ok(())
}

/// write_lat: each side writes into the peer's receiving half and spins on
/// the last byte of its own until the peer's write lands.
fn write_pingpong(s: &Side, size: u64, iters: u64, client: bool) -> Result<Measure> {
    let last = size as usize - 1;
    let sge = [s.mr.sge(0, size as u32)?];
    let mut samples = Vec::with_capacity(if client { iters as usize } else { 0 });
    let wait = |i: u64| -> Result<()> {
        let mut dog = Watchdog::new(s);
        while s.mr.poll_byte(s.half + last)? != tag(i) {
            dog.idle("waiting for the peer's write")?;
        }
        Ok(())
    };
    let write = |i: u64| -> Result<()> {
        s.mr.set_byte(last, tag(i))?;
        s.qp.post_send(&SendWr::new(i, SendOp::Write(s.remote)).sgl(&sge))?;
        poll_one(s, &s.scq, "RDMA WRITE")?;
        Ok(())
    };
    for i in 0..iters {
        if client {
            let t0 = Instant::now();
            write(i)?;
            wait(i)?;
            samples.push(t0.elapsed().as_secs_f64() * 1e6 / 2.0);
        } else {
            wait(i)?;
            write(i)?;
        }
    }
    Ok(Measure::Lat(samples))
}

/// Receives posted ahead by each side of send_lat.
const LAT_RECVS: u64 = 16;

fn post_lat_recvs(s: &Side, size: u64) -> Result<()> {
    for i in 0..LAT_RECVS {
        s.qp.post_recv(i, &[s.mr.sge(s.half, size as u32)?])?;
    }
    Ok(())
}

/// send_lat: SEND ping-pong. Each side keeps [`LAT_RECVS`] receives posted
/// and replaces the one a message used after it has answered, so the repost
/// is off the timed path.
fn send_pingpong(s: &Side, size: u64, iters: u64, client: bool) -> Result<Measure> {
    if client {
        post_lat_recvs(s, size)?;
    }
    let sge = [s.mr.sge(0, size as u32)?];
    let rsge = [s.mr.sge(s.half, size as u32)?];
    let mut samples = Vec::with_capacity(if client { iters as usize } else { 0 });
    let send = |i: u64| -> Result<()> {
        s.qp.post_send(&SendWr::new(i, SendOp::Send).sgl(&sge))?;
        poll_one(s, &s.scq, "SEND")?;
        Ok(())
    };
    let repost = |i: u64| -> Result<()> {
        s.qp.post_recv(LAT_RECVS + i, &rsge)?;
        Ok(())
    };
    for i in 0..iters {
        if client {
            let t0 = Instant::now();
            send(i)?;
            poll_one(s, &s.rcq, "receive")?;
            samples.push(t0.elapsed().as_secs_f64() * 1e6 / 2.0);
        } else {
            poll_one(s, &s.rcq, "receive")?;
            send(i)?;
        }
        repost(i)?;
    }
    Ok(Measure::Lat(samples))
}

/// read_lat and atomic_lat: one request at a time, timed to its completion.
fn one_sided_lat(test: Test, s: &Side, size: u64, iters: u64) -> Result<Measure> {
    let sge = [s.mr.sge(0, size as u32)?];
    let op = match test {
        Test::ReadLat => SendOp::Read(s.remote),
        _ => SendOp::AtomicFa {
            remote: s.remote,
            add: 1,
        },
    };
    let mut samples = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let t0 = Instant::now();
        s.qp.post_send(&SendWr::new(i, op).sgl(&sge))?;
        poll_one(s, &s.scq, test.banner())?;
        samples.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    Ok(Measure::Lat(samples))
}
