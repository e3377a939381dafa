//! `ernic p4 bench`: frames per second through bmv2's simple_router (one
//! lpm and two exact tables, the IPv4 checksum verified and updated)
//! against the same frames copied out with no program, and fp8
//! accumulation against memcpy, all measured in the same run on one core.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use ernic_p4::exec::{Output, Switch};
use ernic_p4::fp8::{self, Fp8, Overflow};
use ernic_p4::program::Program;

const SIMPLE_ROUTER: &str = include_str!("../../crates/ernic-p4/testdata/simple_router.json");
const COMMANDS: &str = include_str!("../../crates/ernic-p4/testdata/simple_router.commands");

/// bmv2's documentation: about 80,000 packets/s through simple_router.
const BMV2_PPS: f64 = 80_000.0;

/// `ernic p4 bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Seconds per measurement.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Frame size in bytes (at least 34: Ethernet and IPv4).
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Distinct frames cycled through (destinations spread over the routes).
    #[arg(long, default_value_t = 1024)]
    frames: usize,
    /// fp8 region size for the accumulate measurement, in MiB (0: skip it).
    #[arg(long, default_value_t = 64)]
    fp8_mib: usize,
}

fn frame(i: usize, size: usize) -> Vec<u8> {
    let mut f = vec![0u8; size];
    f[..6].copy_from_slice(&[0, 1, 2, 3, 4, 5]);
    f[6..12].copy_from_slice(&[0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((size - 14) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    // Half to each of commands.txt's two routes.
    let dst = if i % 2 == 0 {
        [10, 0, 0, 10]
    } else {
        [10, 0, 1, 10]
    };
    ip[16..20].copy_from_slice(&dst);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f
}

/// Runs `step` over the frames for about `secs`, returning frames/s.
fn measure(secs: f64, frames: &[Vec<u8>], mut step: impl FnMut(&[u8], &mut Vec<Output>)) -> f64 {
    let mut out = Vec::with_capacity(4);
    let deadline = Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < deadline {
        for f in frames {
            step(f, &mut out);
            black_box(&out);
        }
        n += frames.len() as u64;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

pub(crate) fn run(a: &BenchArgs) -> Result<()> {
    if a.size < 34 || a.frames == 0 {
        bail!("--size must be at least 34 and --frames at least 1");
    }
    let mut sw = Switch::new(Program::load(SIMPLE_ROUTER)?);
    let mut log = String::new();
    if ernic_p4::runtime::run_script(&mut sw, COMMANDS, &mut log) > 0 {
        bail!("simple_router's commands failed: {log}");
    }
    let frames: Vec<Vec<u8>> = (0..a.frames).map(|i| frame(i, a.size)).collect();
    // Check the program routes them before timing it.
    let mut out = Vec::new();
    sw.process(0, &frames[1], 0, &mut out);
    if out.len() != 1 || out[0].port != 2 {
        bail!("simple_router did not route the bench frame to port 2: {out:?}");
    }
    println!(
        "# ernic p4 bench: {} frames of {} bytes, {:.1} s each, one core",
        a.frames, a.size, a.seconds
    );
    // The copy reuses its output buffer as the switch reuses its own.
    let copy = measure(a.seconds, &frames, |f, out| {
        if out.is_empty() {
            out.push(Output {
                port: 1,
                data: Vec::new(),
            });
        }
        out[0].data.clear();
        out[0].data.extend_from_slice(f);
    });
    let mut t = 0u64;
    let p4 = measure(a.seconds, &frames, |f, out| {
        t += 1;
        sw.recycle(out);
        sw.process(0, f, t, out);
    });
    println!("copy, no program      {:>12.0} frames/s", copy);
    println!(
        "simple_router         {:>12.0} frames/s  ({:.2} of the copy, {:.1}x bmv2's ~{:.0}/s, {:.2} Gb/s)",
        p4,
        p4 / copy,
        p4 / BMV2_PPS,
        BMV2_PPS,
        p4 * a.size as f64 * 8.0 / 1e9
    );
    if a.fp8_mib > 0 {
        fp8_bench(a.fp8_mib << 20, a.seconds)?;
    }
    Ok(())
}

fn fp8_bench(len: usize, secs: f64) -> Result<()> {
    let src: Vec<u8> = (0..len).map(|i| (i * 7 % 120) as u8).collect();
    let mut dst: Vec<u8> = (0..len).map(|i| (i * 3 % 100) as u8).collect();
    let rate = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        let mut n = 0u64;
        while start.elapsed().as_secs_f64() < secs {
            f();
            n += 1;
        }
        (n as f64 * len as f64) / start.elapsed().as_secs_f64() / 1e9
    };
    let memcpy = rate(&mut || {
        dst.copy_from_slice(black_box(&src));
    });
    let mut err = None;
    let acc = rate(&mut || {
        if let Err(e) = fp8::accumulate(Fp8::E4M3, &mut dst, black_box(&src), Overflow::Saturate) {
            err = Some(e);
        }
    });
    if let Some(e) = err {
        bail!("fp8 accumulate: {e}");
    }
    println!("memcpy {:>4} MiB       {:>9.2} GB/s", len >> 20, memcpy);
    println!(
        "fp8 E4M3 accumulate   {:>9.2} GB/s  ({:.2} of memcpy)",
        acc,
        acc / memcpy
    );
    Ok(())
}
