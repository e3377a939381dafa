//! `ernic perf TEST --device vfio-user:SOCKET`: every test through the
//! whole guest-facing path — ernic-ionic-driver writes WQEs into rings in
//! its memory and rings doorbells (trapped, or in the server's shared
//! doorbell pages when its profile offers them), the server decodes and
//! executes them in ernic-core and writes CQEs back. Both sides are QPs of
//! one driver, in this process, driven by one thread; the server is the
//! one at SOCKET (`ernic-server --socket SOCKET`).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ernic_core::{Completion, Lkey, RemoteAddr, Rkey, SendOp, SendWr, Sge, WcOpcode, WcStatus};
use ernic_ionic_driver::{Cq, Driver, Mr, Qp};

use super::report::Row;
use super::tests::{Measure, STALL};
use super::{Plan, Test, baseline};

/// The two QPs, their CQ and a registered buffer.
struct Rig {
    d: Driver,
    cq: Cq,
    a: Qp,
    b: Qp,
    mr: Mr,
}

impl Rig {
    fn sge(&self, off: u64, len: u32) -> Sge {
        Sge {
            addr: self.mr.buf.addr() + off,
            len,
            lkey: Lkey(self.mr.key),
        }
    }

    /// Polls until a completion for which `want` holds, failing on an
    /// error completion or no progress for [`STALL`].
    fn until(&mut self, want: impl Fn(&Completion) -> bool) -> Result<()> {
        let mut wc = [Completion::EMPTY; 16];
        let end = Instant::now() + STALL;
        let mut spins = 0u32;
        loop {
            let n = self.d.poll_cq(&mut self.cq, &mut wc);
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
    let mut d = Driver::attach(socket, 2 * max + (32 << 20))
        .with_context(|| format!("attaching to {}", socket.display()))?;
    let cq = d.create_cq(12)?;
    let a = d.create_qp(&cq, 10)?;
    let b = d.create_qp(&cq, 10)?;
    d.connect(&a, b.qpn())?;
    d.connect(&b, a.qpn())?;
    let buf = d.alloc(2 * max)?;
    let mr = d.reg_mr(buf)?;
    let mut r = Rig { d, cq, a, b, mr };
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
    let (ra, rb) = (r.sge(half, len), r.sge(half, len));
    r.d.post_recv(&mut r.b, 0, rb)?;
    r.d.post_recv(&mut r.a, 0, ra)?;
    let (qa, qb) = (r.a.qpn(), r.b.qpn());
    let mut lat = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let t = Instant::now();
        let s = r.sge(0, len);
        r.d.post_send(&mut r.a, &SendWr::new(i, SendOp::Send).sgl(&[s]))?;
        r.until(|w| w.qpn == qb && w.opcode == WcOpcode::Recv)?;
        r.d.post_recv(&mut r.b, 0, rb)?;
        r.d.post_send(&mut r.b, &SendWr::new(i, SendOp::Send).sgl(&[s]))?;
        r.until(|w| w.qpn == qa && w.opcode == WcOpcode::Recv)?;
        r.d.post_recv(&mut r.a, 0, ra)?;
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
    let to_b = RemoteAddr {
        addr: r.mr.buf.addr() + half,
        rkey: Rkey(r.mr.key),
    };
    let to_a = RemoteAddr {
        addr: r.mr.buf.addr(),
        rkey: Rkey(r.mr.key),
    };
    let (src_a, src_b) = ([r.sge(0, len as u32)], [r.sge(half, len as u32)]);
    let mut lat = Vec::with_capacity(iters as usize);
    let mut mark = [0u8; 1];
    for i in 0..iters {
        let m = (i % 255 + 1) as u8;
        let t = Instant::now();
        r.d.write(&r.mr.buf, len - 1, &[m]);
        r.d.post_send(&mut r.a, &SendWr::new(i, SendOp::Write(to_b)).sgl(&src_a))?;
        r.until(|w| w.qpn == qa)?;
        r.d.read(&r.mr.buf, half + len - 1, &mut mark);
        if mark[0] != m {
            bail!("the WRITE's last byte did not arrive");
        }
        r.d.post_send(&mut r.b, &SendWr::new(i, SendOp::Write(to_a)).sgl(&src_b))?;
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
    let remote = RemoteAddr {
        addr: r.mr.buf.addr() + half,
        rkey: Rkey(r.mr.key),
    };
    let local = [r.sge(0, size.max(1) as u32)];
    let mut lat = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let op = if atomic {
            SendOp::AtomicFa { remote, add: 1 }
        } else {
            SendOp::Read(remote)
        };
        let t = Instant::now();
        r.d.post_send(&mut r.a, &SendWr::new(i, op).sgl(&local))?;
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
    let recv = r.sge(half, size.max(1) as u32);
    let rx = iters.min(512);
    for _ in 0..rx {
        r.d.post_recv(&mut r.b, 0, recv)?;
    }
    let (mut posted_rx, mut got) = (rx, 0u64);
    let s = [r.sge(0, size as u32)];
    let mut wc = [Completion::EMPTY; 64];
    let (mut posted, mut sent) = (0u64, 0u64);
    let t = Instant::now();
    let mut last = Instant::now();
    while got < iters || sent < iters {
        while posted < iters && posted - sent < depth && posted < got + rx {
            match r
                .d
                .post_send(&mut r.a, &SendWr::new(posted, SendOp::Send).sgl(&s))
            {
                Ok(()) => posted += 1,
                Err(ernic_ionic_driver::Error::Full) => break,
                Err(e) => return Err(e.into()),
            }
        }
        let n = r.d.poll_cq(&mut r.cq, &mut wc);
        for w in &wc[..n] {
            if w.status != WcStatus::Success {
                bail!("work request {} failed: {:?}", w.wr_id, w.status);
            }
            if w.qpn == qb {
                got += 1;
                if posted_rx < iters {
                    r.d.post_recv(&mut r.b, 0, recv)?;
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
    let target = RemoteAddr {
        addr: r.mr.buf.addr() + half,
        rkey: Rkey(r.mr.key),
    };
    let s = [r.sge(0, size as u32)];
    let mut wc = [Completion::EMPTY; 64];
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
            match r.d.post_send(&mut r.a, &wr) {
                Ok(()) => posted += 1,
                Err(ernic_ionic_driver::Error::Full) => break,
                Err(e) => return Err(e.into()),
            }
        }
        let n = r.d.poll_cq(&mut r.cq, &mut wc);
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
