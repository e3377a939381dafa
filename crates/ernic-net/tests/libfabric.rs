//! The transport over real libfabric (`libfabric.so.1`, loaded at run
//! time): the provider contract, then the protocol scenarios of `rdma.rs`,
//! over `tcp;ofi_rxm` and `shm`.
//!
//! Where libfabric is not installed each test prints one line and passes;
//! `.ci/run` installs it and sets `ERNIC_REQUIRE_LIBFABRIC=1`, which turns a
//! missing library or provider into a failure.
#![allow(unsafe_code)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use ernic_net::config::{Config, Protocol};
use ernic_net::libfabric::{self, LibfabricProvider};
use ernic_net::provider::{CqEntry, CqError, CqFlags, PostError, Provider, Rail, RemoteAddressing};

const WAIT: Duration = Duration::from_secs(20);

/// The named provider, or `None` (after one line saying why) where
/// libfabric is missing and CI did not demand it.
fn provider(name: &str) -> Option<LibfabricProvider> {
    let required = std::env::var("ERNIC_REQUIRE_LIBFABRIC").is_ok_and(|v| v == "1");
    let opened = libfabric::version().and_then(|_| LibfabricProvider::open(Some(name)));
    match opened {
        Ok(p) => Some(p),
        Err(e) if !required => {
            println!("skipped: libfabric provider {name} unavailable: {e}");
            None
        }
        Err(e) => panic!("libfabric provider {name}: {e}"),
    }
}

/// Posts until the rail takes it, driving both rails' progress meanwhile
/// (libfabric's tcp provider connects on first use).
fn post(
    a: &mut dyn Rail,
    b: &mut dyn Rail,
    mut f: impl FnMut(&mut dyn Rail) -> Result<(), PostError>,
) {
    let end = Instant::now() + WAIT;
    loop {
        match f(a) {
            Ok(()) => return,
            Err(PostError::Again) => {}
            Err(e) => panic!("{e}"),
        }
        let mut sink = [CqEntry::default(); 4];
        assert!(
            !matches!(a.cq_read(&mut sink), Ok(n) if n > 0),
            "nothing else is in flight"
        );
        let _ = b.cq_read(&mut sink);
        assert!(Instant::now() < end, "still EAGAIN after {WAIT:?}");
    }
}

/// The next completion of each rail, in whichever order they come.
fn both(a: &mut dyn Rail, b: &mut dyn Rail) -> (CqEntry, CqEntry) {
    let end = Instant::now() + WAIT;
    let (mut ea, mut eb) = (None, None);
    let take = |rail: &mut dyn Rail, slot: &mut Option<CqEntry>| {
        if slot.is_some() {
            return;
        }
        let mut out = [CqEntry::default(); 1];
        match rail.cq_read(&mut out) {
            Ok(1) => *slot = Some(out[0]),
            Ok(_) | Err(CqError::Again) => {}
            Err(CqError::Avail) => panic!("error completion: {:?}", rail.cq_readerr()),
            Err(e) => panic!("{e}"),
        }
    };
    while ea.is_none() || eb.is_none() {
        take(a, &mut ea);
        take(b, &mut eb);
        assert!(Instant::now() < end, "no completion within {WAIT:?}");
    }
    (ea.unwrap(), eb.unwrap())
}

/// The provider contract, as `provider.rs` checks it for the ernic
/// provider: writes with immediate data (the target sees only the
/// immediate), sends into posted receives, and bad input refused.
fn contract(p: &LibfabricProvider) {
    let mut a = p.open_rail().unwrap();
    let mut b = p.open_rail().unwrap();
    let (a, b) = (&mut *a, &mut *b);
    let b_at_a = a.av_insert(&b.name()).unwrap();
    assert_eq!(
        a.av_insert(&b.name()).unwrap(),
        b_at_a,
        "same name, same address"
    );
    b.av_insert(&a.name()).unwrap();
    let mut src: Vec<u8> = (0..300_000u32).map(|i| (i * 13 + 5) as u8).collect();
    let mut dst = vec![0u8; 300_000];
    let mut rx = vec![0u8; 8192];
    // SAFETY: the buffers outlive their registrations, closed below.
    let (rs, rd, rr) = unsafe {
        (
            a.mr_reg(src.as_mut_ptr(), src.len()).unwrap(),
            b.mr_reg(dst.as_mut_ptr(), dst.len()).unwrap(),
            b.mr_reg(rx.as_mut_ptr(), rx.len()).unwrap(),
        )
    };
    let target = match b.remote_addressing() {
        RemoteAddressing::Virtual => dst.as_ptr() as u64,
        RemoteAddressing::Offset => 0,
    };
    post(a, b, |a| {
        a.write_data(
            src.as_ptr() as u64,
            src.len(),
            rs.desc,
            b_at_a,
            target,
            rd.key,
            0xdead_beef,
            7,
        )
    });
    let (w, e) = both(a, b);
    assert_eq!((w.context, w.flags), (7, CqFlags::WRITE));
    assert!(
        e.flags.has(CqFlags::REMOTE_WRITE | CqFlags::REMOTE_CQ_DATA),
        "{e:?}"
    );
    assert_eq!(e.data, 0xdead_beef);
    assert!(dst == src, "the written bytes arrived");
    // Into the middle of the region: offsets or addresses as mr_mode says.
    post(a, b, |a| {
        a.write_data(
            src.as_ptr() as u64 + 5,
            1000,
            rs.desc,
            b_at_a,
            target + 4096,
            rd.key,
            3,
            8,
        )
    });
    let (w, e) = both(a, b);
    assert_eq!((w.context, e.data), (8, 3));
    assert_eq!(&dst[4096..5096], &src[5..1005]);
    // A send with immediate into a posted receive.
    post(b, a, |b| b.recv(rx.as_ptr() as u64, rx.len(), rr.desc, 9));
    post(a, b, |a| {
        a.send_data(src.as_ptr() as u64 + 10, 100, rs.desc, b_at_a, 5, 10)
    });
    let (w, e) = both(a, b);
    assert_eq!(w.flags, CqFlags::SEND);
    assert_eq!((e.context, e.len, e.data), (9, 100, 5));
    assert!(e.flags.has(CqFlags::RECV));
    assert_eq!(&rx[..100], &src[10..110]);
    // Bad input is refused before libfabric sees it.
    assert!(a.av_insert(b"short").is_err());
    assert!(matches!(
        a.send_data(0, 0, 0, 99, 0, 1),
        Err(PostError::Failed(_))
    ));
    a.mr_close(rs.handle).unwrap();
    assert!(a.mr_close(rs.handle).is_err(), "closed twice");
    b.mr_close(rd.handle).unwrap();
    b.mr_close(rr.handle).unwrap();
}

/// The protocol scenarios of `rdma.rs` on `p`.
fn protocol(p: &LibfabricProvider) {
    for rails in [1, 2] {
        run_on(p, rails, Config::default(), &SIZES, &SIZES, 4);
    }
    let recv: Vec<usize> = SIZES.iter().map(|s| s + 4096).collect();
    run_on(p, 2, Config::default(), &SIZES, &recv, 4);
    run_on(p, 2, Config::default(), &[64 << 20], &[64 << 20], 1);
    let many: Vec<usize> = (0..3000).map(|i| [8, 4000, 9000, 70_000][i % 4]).collect();
    run_on(p, 2, Config::default(), &many, &many, 128);
    let sendrecv = Config {
        protocol: Protocol::SendRecv,
        ..Config::default()
    };
    run_on(p, 2, sendrecv, &SIZES, &SIZES, 4);
}

#[test]
fn tcp_rxm_keeps_the_provider_contract() {
    if let Some(p) = provider("tcp;ofi_rxm") {
        contract(&p);
    }
}

#[test]
fn shm_keeps_the_provider_contract() {
    if let Some(p) = provider("shm") {
        contract(&p);
    }
}

#[test]
fn the_protocol_over_tcp_rxm() {
    if let Some(p) = provider("tcp;ofi_rxm") {
        protocol(&p);
    }
}

#[test]
fn the_protocol_over_shm() {
    if let Some(p) = provider("shm") {
        protocol(&p);
    }
}

#[test]
fn an_unknown_provider_is_named_in_the_error() {
    if libfabric::version().is_err() {
        println!("skipped: libfabric is not installed");
        return;
    }
    let e = LibfabricProvider::open(Some("no-such-provider")).unwrap_err();
    assert!(e.0.contains("no-such-provider"), "{e}");
}

/// The fault-injection wrapper over real libfabric: an EAGAIN storm (half
/// of every hundred posts) loses nothing; error completions on the 2nd and
/// 7th writes fail exactly those two sends (100000-byte messages: one
/// write each, under the 128 KiB stripe), and every message still arrives.
#[test]
fn injected_faults_over_tcp_rxm_and_shm() {
    use std::sync::Arc;

    use ernic_core::Injector;
    use ernic_net::inject::Injected;

    for name in ["tcp;ofi_rxm", "shm"] {
        let Some(p) = provider(name) else { continue };
        let storm = Arc::new(Injector::parse("fi_eagain:burst=50/100").unwrap());
        let p = Injected::new(p, storm.clone());
        let many: Vec<usize> = (0..1000).map(|i| [8, 4000, 9000, 70_000][i % 4]).collect();
        assert_eq!(
            run_on(&p, 2, Config::default(), &many, &many, 32),
            0,
            "{name}"
        );
        assert!(storm.fired() > 500, "{name}: a storm ({})", storm.fired());

        let Some(p) = provider(name) else { continue };
        let errors = Arc::new(Injector::parse("fi_cq_err:at=2,7").unwrap());
        let p = Injected::new(p, errors.clone());
        let sizes = [100_000; 20];
        assert_eq!(
            run_on(&p, 2, Config::default(), &sizes, &sizes, 4),
            2,
            "{name}"
        );
        assert_eq!(errors.fired(), 2);
    }
}
