//! `ernic perf TEST --device vfio-user:SOCKET`: every test through the
//! whole guest-facing path, written against `ernic-verbs` as any verbs
//! program is — the device is ernic-ionic-driver's provider, which writes
//! WQEs into rings in its memory and rings doorbells (trapped, or in the
//! server's shared doorbell pages when its profile offers them); the
//! server decodes and executes them in ernic-core and writes CQEs back.
//! Both sides are QPs of one device, in this process, driven by one
//! thread (a second spinning thread would share two cores with the
//! server's); the server is the one at SOCKET (`ernic-server --socket
//! SOCKET`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ernic_verbs::{
    Access, Cq, EngineError, Mr, Qp, QpCaps, QpType, RemoteAddr, SendOp, SendWr, Sge, Wc, WcOpcode,
    WcStatus,
};

use super::report::Row;
use super::tests::{Measure, STALL};
use super::{Plan, Test, baseline};

/// The two QPs, their CQ and a registered buffer (a's half first, then
/// b's), all through `ernic-verbs` on the ionic provider.
struct Rig {
    cq: Cq,
    a: Qp,
    b: Qp,
    mr: Mr,
}

impl Rig {
    fn sge(&self, off: u64, len: u32) -> Result<Sge> {
        Ok(self.mr.sge(off as usize, len)?)
    }

    fn remote(&self, off: u64) -> Result<RemoteAddr> {
        Ok(self.mr.remote(off as usize)?)
    }

    /// Polls until a completion for which `want` holds, failing on an
    /// error completion or no progress for [`STALL`].
    fn until(&mut self, want: impl Fn(&Wc) -> bool) -> Result<()> {
        let mut wc = [Wc::EMPTY; 16];
        let end = Instant::now() + STALL;
        let mut spins = 0u32;
        loop {
            let n = self.cq.poll(&mut wc)?;
            let mut hit = false;
            for w in &wc[..n] {
                if w.status != WcStatus::Success {
                    bail!("work request {} failed: {:?}", w.wr_id, w.status);
                }
                hit |= want(w);
            }
            if hit {
                return Ok(());
            }
            spins = spins.wrapping_add(1);
            if spins % 4096 == 0 && Instant::now() > end {
                bail!("no completion for {} s", STALL.as_secs());
            }
        }
    }
}

/// Posts `wr` on `qp`: `Ok(false)` when its send queue is full.
fn try_post(qp: &Qp, wr: &SendWr<'_>) -> Result<bool> {
    match qp.post_send(wr) {
        Ok(()) => Ok(true),
        Err(ernic_verbs::Error::Engine(EngineError::QueueFull { .. })) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Runs the plan against the server at `socket`.
pub fn run(
    plan: &Plan,
    socket: &Path,
    with_baseline: bool,
    emit: &mut dyn FnMut(Row),
) -> Result<()> {
    let max = *plan.sizes.iter().max().expect("at least one size");
    if max > (16 << 20) {
        bail!("--device vfio-user: sizes up to 16M");
    }
    let dev = ernic_ionic_driver::provider::open(socket, 2 * max + (32 << 20), None)
        .with_context(|| format!("attaching to {}", socket.display()))?;
    let pd = dev.alloc_pd()?;
    let cq = dev.create_cq(4096)?;
    let caps = QpCaps {
        max_send_wr: 1023,
        max_recv_wr: 1023,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let a = pd.create_qp(QpType::Rc, &cq, &cq, caps)?;
    let b = pd.create_qp(QpType::Rc, &cq, &cq, caps)?;
    a.connect(dev.gid(), b.qpn(), Access::ALL)?;
    b.connect(dev.gid(), a.qpn(), Access::ALL)?;
    let mr = pd.reg_mr(2 * max as usize, Access::ALL)?;
    let mut r = Rig { cq, a, b, mr };
    for &size in &plan.sizes {
        let m = match plan.test {
            Test::SendLat => send_lat(&mut r, size, plan.iters, max)?,
            Test::WriteLat => write_lat(&mut r, size, plan.iters, max)?,
            Test::ReadLat => one_sided_lat(&mut r, size, plan.iters, false, max)?,
            Test::AtomicLat => one_sided_lat(&mut r, 8, plan.iters, true, max)?,
            Test::SendBw => send_bw(&mut r, size, plan.iters, plan.tx_depth, max)?,
            Test::WriteBw | Test::ReadBw => {
                let read = plan.test == Test::ReadBw;
                one_sided_bw(&mut r, size, plan.iters, plan.tx_depth, max, read)?
            }
        };
        let base = with_baseline.then(|| {
            if plan.test.is_bw() {
                baseline::memcpy_bw(size, plan.iters)
            } else {
                baseline::thread_pingpong_us(plan.iters.max(1000))
            }
        });
        emit(Row::new(plan.test, size, plan.iters, m, base));
    }
    Ok(())
}

/// SEND ping-pong: a to b, b back to a; one-way latency is half the round
/// trip, as perftest reports it.
fn send_lat(r: &mut Rig, size: u64, iters: u64, half: u64) -> Result<Measure> {
    let len = size as u32;
    // Sent from the first half, received into the second.
    let (ra, rb) = ([r.sge(half, len)?], [r.sge(half, len)?]);
    r.b.post_recv(0, &rb)?;
    r.a.post_recv(0, &ra)?;
    let (qa, qb) = (r.a.qpn(), r.b.qpn());
    let mut lat = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let t = Instant::now();
        let s = [r.sge(0, len)?];
        r.a.post_send(&SendWr::new(i, SendOp::Send).sgl(&s))?;
        r.until(|w| w.qpn == qb && w.opcode == WcOpcode::Recv)?;
        r.b.post_recv(0, &rb)?;
        r.b.post_send(&SendWr::new(i, SendOp::Send).sgl(&s))?;
        r.until(|w| w.qpn == qa && w.opcode == WcOpcode::Recv)?;
        r.a.post_recv(0, &ra)?;
        lat.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    lat.sort_by(f64::total_cmp);
    Ok(Measure::Lat(lat))
}

/// RDMA WRITE ping-pong polling memory, as perftest's write_lat: a
/// writes `size` bytes whose last byte is the round's mark into b's half,
/// b sees the mark (after the write's completion, one thread driving both
/// sides) and writes back; one-way latency is half the round trip.
fn write_lat(r: &mut Rig, size: u64, iters: u64, half: u64) -> Result<Measure> {
    let len = size.max(1);
    let (qa, qb) = (r.a.qpn(), r.b.qpn());
    let (to_b, to_a) = (r.remote(half)?, r.remote(0)?);
    let (src_a, src_b) = ([r.sge(0, len as u32)?], [r.sge(half, len as u32)?]);
    let mut lat = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let m = (i % 255 + 1) as u8;
        let t = Instant::now();
        r.mr.set_byte((len - 1) as usize, m)?;
        r.a.post_send(&SendWr::new(i, SendOp::Write(to_b)).sgl(&src_a))?;
        r.until(|w| w.qpn == qa)?;
        if r.mr.poll_byte((half + len - 1) as usize)? != m {
            bail!("the WRITE's last byte did not arrive");
        }
        r.b.post_send(&SendWr::new(i, SendOp::Write(to_a)).sgl(&src_b))?;
        r.until(|w| w.qpn == qb)?;
        lat.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
    }
    lat.sort_by(f64::total_cmp);
    Ok(Measure::Lat(lat))
}

/// One READ (or fetch-and-add) at a time from a to b's half: the full
/// round trip, as perftest's read_lat and atomic_lat report it.
fn one_sided_lat(r: &mut Rig, size: u64, iters: u64, atomic: bool, half: u64) -> Result<Measure> {
    let qa = r.a.qpn();
    let remote = r.remote(half)?;
    let local = [r.sge(0, size.max(1) as u32)?];
    let mut lat = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let op = if atomic {
            SendOp::AtomicFa { remote, add: 1 }
        } else {
            SendOp::Read(remote)
        };
        let t = Instant::now();
        r.a.post_send(&SendWr::new(i, op).sgl(&local))?;
        r.until(|w| w.qpn == qa)?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
    }
    lat.sort_by(f64::total_cmp);
    Ok(Measure::Lat(lat))
}

/// SENDs from a's half of the buffer into receives b keeps posted in the
/// other half, `depth` in flight.
fn send_bw(r: &mut Rig, size: u64, iters: u64, depth: u32, half: u64) -> Result<Measure> {
    let depth = u64::from(depth.min(256));
    let (qa, qb) = (r.a.qpn(), r.b.qpn());
    let recv = [r.sge(half, size.max(1) as u32)?];
    let rx = iters.min(512);
    for _ in 0..rx {
        r.b.post_recv(0, &recv)?;
    }
    let (mut posted_rx, mut got) = (rx, 0u64);
    let s = [r.sge(0, size as u32)?];
    let mut wc = [Wc::EMPTY; 64];
    let (mut posted, mut sent) = (0u64, 0u64);
    let t = Instant::now();
    let mut last = Instant::now();
    while got < iters || sent < iters {
        while posted < iters && posted - sent < depth && posted < got + rx {
            if !try_post(&r.a, &SendWr::new(posted, SendOp::Send).sgl(&s))? {
                break;
            }
            posted += 1;
        }
        let n = r.cq.poll(&mut wc)?;
        for w in &wc[..n] {
            if w.status != WcStatus::Success {
                bail!("work request {} failed: {:?}", w.wr_id, w.status);
            }
            if w.qpn == qb {
                got += 1;
                if posted_rx < iters {
                    r.b.post_recv(0, &recv)?;
                    posted_rx += 1;
                }
            } else if w.qpn == qa {
                sent += 1;
            }
        }
        progress(n, &mut last)?;
    }
    Ok(bandwidth(size, iters, t))
}

/// WRITEs (or READs) from a to b's half of the buffer, `depth` in flight.
fn one_sided_bw(
    r: &mut Rig,
    size: u64,
    iters: u64,
    depth: u32,
    half: u64,
    read: bool,
) -> Result<Measure> {
    let depth = u64::from(depth.min(512));
    let target = r.remote(half)?;
    let s = [r.sge(0, size as u32)?];
    let mut wc = [Wc::EMPTY; 64];
    let (mut posted, mut done) = (0u64, 0u64);
    let t = Instant::now();
    let mut last = Instant::now();
    while done < iters {
        while posted < iters && posted - done < depth {
            let op = if read {
                SendOp::Read(target)
            } else {
                SendOp::Write(target)
            };
            let wr = SendWr::new(posted, op).sgl(&s);
            if !try_post(&r.a, &wr)? {
                break;
            }
            posted += 1;
        }
        let n = r.cq.poll(&mut wc)?;
        for w in &wc[..n] {
            if w.status != WcStatus::Success {
                bail!("request {} failed: {:?}", w.wr_id, w.status);
            }
        }
        done += n as u64;
        progress(n, &mut last)?;
    }
    Ok(bandwidth(size, iters, t))
}

/// Notes when completions last came (`n` of them now); fails after
/// [`STALL`] without any.
fn progress(n: usize, last: &mut Instant) -> Result<()> {
    if n > 0 {
        *last = Instant::now();
    } else if last.elapsed() > STALL {
        bail!("no completion for {} s", STALL.as_secs());
    }
    Ok(())
}

/// `iters` messages of `size` bytes since `t`, as a bandwidth.
fn bandwidth(size: u64, iters: u64, t: Instant) -> Measure {
    let secs = t.elapsed().max(Duration::from_nanos(1)).as_secs_f64();
    let avg = (size * iters) as f64 / secs;
    Measure::Bw {
        avg,
        peak: avg,
        msg_rate: iters as f64 / secs,
    }
}
