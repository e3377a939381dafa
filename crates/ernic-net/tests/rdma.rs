//! The RDMA protocol end to end over the ernic provider in one process:
//! connect/accept, eager and written messages from 0 B to 64 MiB, receives
//! larger than sends, 1, 2 and 4 rails, thousands of messages with 128 in
//! flight on one comm.
#![allow(unsafe_code)]

mod common;

use std::time::Instant;

use common::*;

use ernic_net::chaos::{Chaos, ChaosConfig};
use ernic_net::config::Config;
use ernic_net::rdma::{Endpoint, Request};
use ernic_net::verbs_provider::{Depths, ErnicProvider};
use ernic_verbs::Fabric;

fn run(rails: usize, cfg: Config, sizes: &[usize], recv_sizes: &[usize], depth: usize) {
    run_on(
        &ErnicProvider::new(Fabric::new()),
        rails,
        cfg,
        sizes,
        recv_sizes,
        depth,
    );
}

#[test]
fn sizes_across_one_two_and_four_rails() {
    for rails in [1, 2, 4] {
        run(rails, Config::default(), &SIZES, &SIZES, 4);
    }
}

#[test]
fn receives_larger_than_sends_complete_with_the_sent_size() {
    let recv: Vec<usize> = SIZES.iter().map(|s| s + 4096).collect();
    run(2, Config::default(), &SIZES, &recv, 4);
}

#[test]
fn sixty_four_mebibytes() {
    run(4, Config::default(), &[64 << 20], &[64 << 20], 1);
}

#[test]
fn five_thousand_messages_with_128_in_flight_wrap_the_sequence() {
    let sizes: Vec<usize> = (0..5000).map(|i| [8, 4000, 9000, 70_000][i % 4]).collect();
    run(2, Config::default(), &sizes, &sizes, 128);
}

#[test]
fn rails_with_tiny_queues_lose_nothing() {
    // Two sends in flight per QP and four data receives per peer, against
    // 128 messages in flight: posts beyond the queues answer EAGAIN and
    // are retried, none is lost.
    let tiny = ErnicProvider::with_depths(
        Fabric::new(),
        Depths {
            cq: 4096,
            srq: 256,
            qp: 2,
            data_recvs: 4,
        },
    );
    let sizes: Vec<usize> = (0..1000).map(|i| [8, 4000, 9000, 70_000][i % 4]).collect();
    run_on(&tiny, 2, Config::default(), &sizes, &sizes, 128);
}

#[test]
fn all_written_when_eager_is_off() {
    let cfg = Config {
        eager_max_size: 0,
        ..Config::default()
    };
    let sizes: Vec<usize> = (0..2000).map(|i| i % 7 * 13).collect();
    run(1, cfg, &sizes, &sizes, 128);
}

#[test]
fn random_eagain_and_reordered_completions_lose_nothing() {
    for seed in 1..=3 {
        let p = Chaos::new(
            ErnicProvider::new(Fabric::new()),
            ChaosConfig {
                again_per_mille: 300,
                reorder: true,
                fail_every_nth_write: 0,
                seed,
            },
        );
        let sizes: Vec<usize> = (0..1500)
            .map(|i| [0, 8, 8192, 8193, 200_000, 70_000][i % 6])
            .collect();
        let recv: Vec<usize> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| s + (i % 3) * 100)
            .collect();
        assert_eq!(run_on(&p, 4, Config::default(), &sizes, &recv, 32), 0);
    }
}

#[test]
fn an_error_completion_fails_its_request_and_later_ones_work() {
    let p = Chaos::new(
        ErnicProvider::new(Fabric::new()),
        ChaosConfig {
            again_per_mille: 50,
            reorder: true,
            fail_every_nth_write: 37,
            seed: 9,
        },
    );
    let sizes: Vec<usize> = (0..400).map(|i| 10_000 + i * 17).collect();
    let failed = run_on(&p, 2, Config::default(), &sizes, &sizes, 16);
    assert!(failed > 0, "errors were injected");
    assert_eq!(
        failed as u64,
        p.failed_writes(),
        "each injected error failed exactly its request"
    );
}

#[test]
fn registrations_are_cached_by_page_and_counted() {
    let p = ErnicProvider::new(Fabric::new());
    let mut ep = Endpoint::open(&p, 2, Config::default()).unwrap();
    let mut buf = vec![0u8; 3 * 4096];
    let base = buf.as_mut_ptr();
    // SAFETY: `buf` outlives the endpoint's registrations (all dropped below).
    unsafe {
        let h = ep.reg(base, buf.len()).unwrap();
        let same = ep.reg(base, buf.len()).unwrap();
        let inside = ep.reg(base.wrapping_add(100), 50).unwrap();
        assert!(
            h != same && h != inside && same != inside,
            "a handle per reg"
        );
        assert_eq!(
            ep.registrations(),
            1,
            "the same range and one inside share it"
        );
        ep.dereg(h).unwrap();
        assert!(
            ep.dereg(h).is_err(),
            "a second dereg of one handle is refused"
        );
        assert_eq!(ep.registrations(), 1, "and leaves the others' references");
        ep.dereg(same).unwrap();
        assert_eq!(ep.registrations(), 1);
        ep.dereg(inside).unwrap();
        assert_eq!(ep.registrations(), 0, "the last reference closed it");
        assert!(ep.dereg(inside).is_err());
    }
    let cfg = Config {
        mr_cache_disable: true,
        ..Config::default()
    };
    let mut ep = Endpoint::open(&p, 1, cfg).unwrap();
    // SAFETY: as above.
    unsafe {
        let a = ep.reg(base, 4096).unwrap();
        let b = ep.reg(base, 4096).unwrap();
        assert_ne!(a, b, "without the cache every registration is its own");
        ep.dereg(a).unwrap();
        ep.dereg(b).unwrap();
    }
}

fn sendrecv() -> Config {
    Config {
        protocol: ernic_net::config::Protocol::SendRecv,
        ..Config::default()
    }
}

#[test]
fn sendrecv_moves_every_size_on_one_two_and_four_rails() {
    let recv: Vec<usize> = SIZES.iter().map(|s| s + 100).collect();
    for rails in [1, 2, 4] {
        run(rails, sendrecv(), &SIZES, &SIZES, 4);
        run(rails, sendrecv(), &SIZES, &recv, 4);
    }
    run(2, sendrecv(), &[64 << 20], &[64 << 20], 1);
}

#[test]
fn sendrecv_wraps_the_sequence_with_128_in_flight_under_chaos() {
    let p = Chaos::new(
        ErnicProvider::new(Fabric::new()),
        ChaosConfig {
            again_per_mille: 250,
            reorder: true,
            fail_every_nth_write: 0,
            seed: 5,
        },
    );
    let sizes: Vec<usize> = (0..4500).map(|i| [0, 8, 70_000, 65536][i % 4]).collect();
    assert_eq!(run_on(&p, 2, sendrecv(), &sizes, &sizes, 128), 0);
}

#[test]
fn rail_counts_outside_one_to_fifteen_are_refused() {
    let p = ErnicProvider::new(Fabric::new());
    assert!(Endpoint::open(&p, 0, Config::default()).is_err(), "0 rails");
    assert!(
        Endpoint::open(&p, 16, Config::default()).is_err(),
        "16 rails"
    );
}

/// A striped send whose first stripe fails is reported at once while its
/// other stripes are still with the provider; their late completions must
/// not count toward the next request that takes its entry.
#[test]
fn late_completions_of_a_failed_striped_send_touch_no_other_request() {
    let p = Chaos::new(
        ErnicProvider::new(Fabric::new()),
        ChaosConfig {
            again_per_mille: 100,
            reorder: true,
            fail_every_nth_write: 5,
            seed: 4,
        },
    );
    let cfg = Config {
        min_stripe_size: 4096,
        sched_max_small_msg_size: 4096,
        ..Config::default()
    };
    let sizes: Vec<usize> = (0..600).map(|i| 100_000 + i * 64).collect();
    let failed = run_on(&p, 4, cfg, &sizes, &sizes, 16);
    assert!(failed > 0 && failed as u64 <= p.failed_writes());
}

/// Waits for `req` on `ep` (driving `other` too, which may hold the
/// peer's half).
fn wait(ep: &mut Endpoint, other: &mut Endpoint, req: Request) -> Result<usize, String> {
    let end = Instant::now() + T;
    loop {
        match ep.test(req) {
            Ok(Some(n)) => return Ok(n),
            Ok(None) => other.progress(),
            Err(e) => return Err(e.to_string()),
        }
        assert!(Instant::now() < end, "request never finished");
    }
}

#[test]
fn sendrecv_truncation_fails_that_receive_and_the_next_message_arrives() {
    let p = ErnicProvider::new(Fabric::new());
    let mut a = side(&p, 2, &sendrecv(), 1 << 20);
    let mut b = side(&p, 2, &sendrecv(), 1 << 20);
    let (s, r) = connect(&mut a, &mut b);
    let (ap, bp) = (a.buf.as_ptr(), b.buf.as_mut_ptr());
    // SAFETY: both buffers are registered and left alone until the
    // requests finish.
    unsafe {
        let rr = b.ep.irecv(r, bp, 100_000, b.mr).unwrap().unwrap();
        let sr = a.ep.isend(s, ap, 400_000, a.mr).unwrap().unwrap();
        let e = wait(&mut b.ep, &mut a.ep, rr).unwrap_err();
        assert!(e.contains("does not fit the 100000-byte receive"), "{e}");
        assert_eq!(
            wait(&mut a.ep, &mut b.ep, sr),
            Ok(400_000),
            "the sender's part went"
        );
        a.buf[..5].copy_from_slice(b"after");
        let rr = b.ep.irecv(r, bp, 100_000, b.mr).unwrap().unwrap();
        let sr = a.ep.isend(s, ap, 5, a.mr).unwrap().unwrap();
        assert_eq!(wait(&mut b.ep, &mut a.ep, rr), Ok(5));
        assert_eq!(wait(&mut a.ep, &mut b.ep, sr), Ok(5));
        assert_eq!(&b.buf[..5], b"after");
        let too_big = a.ep.isend(s, ap, (64 << 20) + 1, a.mr);
        assert!(
            too_big.is_err(),
            "more than 64 MiB is refused before anything is sent"
        );
    }
}

#[test]
fn close_fails_what_is_in_flight_and_the_endpoint_goes_on() {
    let p = ErnicProvider::new(Fabric::new());
    let mut a = side(&p, 2, &Config::default(), 1 << 20);
    let mut b = side(&p, 2, &Config::default(), 1 << 20);
    let (s, r) = connect(&mut a, &mut b);
    let (ap, bp) = (a.buf.as_ptr(), b.buf.as_mut_ptr());
    // SAFETY: the buffers are registered and left alone until the requests
    // finish.
    unsafe {
        // Eager messages that arrive before any receive, then are never
        // received: closing gives their rx buffers back.
        let mut sends = Vec::new();
        for _ in 0..100 {
            sends.push(a.ep.isend(s, ap, 1000, a.mr).unwrap().unwrap());
        }
        for q in sends {
            assert_eq!(wait(&mut a.ep, &mut b.ep, q), Ok(1000));
        }
        b.ep.progress();
        b.ep.close(r).unwrap();
        assert!(
            b.ep.irecv(r, bp, 10, b.mr).is_err(),
            "a closed comm is gone"
        );
        a.ep.close(s).unwrap();
        // A receive in flight when its comm closes fails with that reason.
        let (s, r) = connect(&mut a, &mut b);
        let q = b.ep.irecv(r, bp, 1 << 20, b.mr).unwrap().unwrap();
        b.ep.close(r).unwrap();
        let e = wait(&mut b.ep, &mut a.ep, q).unwrap_err();
        assert!(e.contains("comm closed"), "{e}");
        a.ep.close(s).unwrap();
        // Later comms on the same endpoints work, eager and written, well
        // past the rx buffers the first comm held (256 a rail).
        let (s, r) = connect(&mut a, &mut b);
        let sizes: Vec<usize> = (0..600).map(|i| [1000, 100_000][i % 2]).collect();
        transfer(&mut a, &mut b, s, r, &sizes, &sizes, 4);
    }
}

#[test]
fn control_messages_spread_over_several_control_rails() {
    use ernic_net::rdma::MAX_CONTROL_RAILS;
    let p = ErnicProvider::new(Fabric::new());
    for (rails, ctls) in [(1, 2), (4, 4)] {
        let mut a = side_with(&p, rails, ctls, &Config::default(), 4 << 20);
        let mut b = side_with(&p, rails, ctls, &Config::default(), 4 << 20);
        let (s, r) = connect(&mut a, &mut b);
        // Written messages (CTRLs), short ones (SIZE messages) and eager.
        let sizes: Vec<usize> = (0..1200).map(|i| [9000, 200_000, 8][i % 3]).collect();
        let recv: Vec<usize> = sizes.iter().map(|s| s + 64).collect();
        transfer(&mut a, &mut b, s, r, &sizes, &recv, 16);
    }
    assert!(Endpoint::open_with(&p, 1, 0, Config::default()).is_err());
    assert!(Endpoint::open_with(&p, 1, MAX_CONTROL_RAILS + 1, Config::default()).is_err());
}
