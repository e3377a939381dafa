//! Baselines measured in the same run as the test, on the same machine.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// memcpy bandwidth in bytes per second: `iters` copies of `size` bytes
/// between two buffers of that size (as ernic's WRITE copies between two MRs).
pub fn memcpy_bw(size: u64, iters: u64) -> f64 {
    let size = size as usize;
    let src = vec![0x5au8; size];
    let mut dst = vec![0u8; size];
    dst.copy_from_slice(&src); // touch both once
    let start = Instant::now();
    for _ in 0..iters {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    }
    (iters as f64 * size as f64) / start.elapsed().as_secs_f64().max(1e-9)
}

/// One-way latency in microseconds of a ping-pong between two threads that
/// spin on a shared counter: the floor for two threads of one process.
pub fn thread_pingpong_us(iters: u64) -> f64 {
    let flag = Arc::new(AtomicU64::new(0));
    let peer = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            for i in 0..iters {
                while flag.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                flag.store(2 * i + 2, Ordering::Release);
            }
        })
    };
    let start = Instant::now();
    for i in 0..iters {
        flag.store(2 * i + 1, Ordering::Release);
        while flag.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / iters as f64 / 2.0;
    peer.join().expect("ping-pong thread");
    us
}
