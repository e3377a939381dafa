//! fp8 region throughput against memcpy, over a 64 MiB and a 1 MiB region:
//! fp8 accumulate (E4M3, E5M2), f32 += fp8, and convert f32 to E4M3, each
//! timed as the best of several passes and printed as GB/s with its ratio
//! to a `copy_from_slice` of the same bytes measured in the same run.
//!
//! `cargo bench -p ernic-p4 --bench fp8` (no harness: a plain main).

use std::hint::black_box;
use std::time::{Duration, Instant};

use ernic_p4::fp8::{Element, Fp8, Overflow, accumulate, accumulate_into_f32, convert};

/// The best of `reps` timings of `f`.
fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm: page faults, the sum tables
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("reps > 0")
}

fn gbps(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// Pseudo-random finite fp8 codes (never NaN, never E5M2 ±inf).
fn codes(n: usize, fmt: Fp8) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let c = (x >> 32) as u8;
            if fmt.to_f32(c).is_finite() {
                c
            } else {
                c & 0xf0
            }
        })
        .collect()
}

fn f32_region(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| (((i % 1000) as f32 - 500.0) * 0.37).to_le_bytes())
        .collect()
}

fn row(name: &str, bytes: usize, t: Duration, memcpy: f64, what: &str) {
    let g = gbps(bytes, t);
    println!(
        "  {name:<28} {g:7.2} GB/s of {what:<9} {:5.2}× memcpy",
        g / memcpy
    );
}

fn run(len: usize, reps: usize) {
    println!("region {} KiB ({reps} passes, best):", len >> 10);
    let o = Overflow::Saturate;

    // memcpy of the fp8 region's bytes and of an f32 region (4 × len).
    let src = codes(len, Fp8::E4M3);
    let mut dst = vec![0u8; len];
    let t = best(reps, || {
        black_box(&mut dst[..]).copy_from_slice(black_box(&src));
        black_box(&dst);
    });
    let memcpy = gbps(len, t);
    println!("  {:<28} {memcpy:7.2} GB/s", "memcpy (copy_from_slice)");
    let src4 = f32_region(len);
    let mut dst4 = vec![0u8; 4 * len];
    let t = best(reps, || {
        black_box(&mut dst4[..]).copy_from_slice(black_box(&src4));
        black_box(&dst4);
    });
    let memcpy4 = gbps(4 * len, t);
    println!("  {:<28} {memcpy4:7.2} GB/s", "memcpy of 4× the bytes");

    for fmt in [Fp8::E4M3, Fp8::E5M2] {
        let src = codes(len, fmt);
        let mut dst = codes(len, fmt);
        dst.reverse();
        let t = best(reps, || {
            accumulate(fmt, black_box(&mut dst), black_box(&src), o).expect("lengths");
        });
        row(&format!("accumulate {fmt:?}"), len, t, memcpy, "dst");
    }

    for fmt in [Fp8::E4M3, Fp8::E5M2] {
        let src = codes(len, fmt);
        let mut dst = f32_region(len);
        let t = best(reps, || {
            accumulate_into_f32(fmt, black_box(&mut dst), black_box(&src)).expect("lengths");
        });
        row(&format!("f32 += {fmt:?}"), 4 * len, t, memcpy4, "f32 dst");
    }

    let mut out = vec![0u8; len];
    let t = best(reps, || {
        convert(
            Element::F32,
            Element::E4M3,
            black_box(&src4),
            black_box(&mut out),
            o,
        )
        .expect("lengths");
    });
    row("convert f32 -> E4M3", 4 * len, t, memcpy4, "f32 src");
}

fn main() {
    run(64 << 20, 5);
    run(1 << 20, 200);
}
