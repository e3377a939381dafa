//! The native verbs API as a host program uses it: several threads, blocking
//! waits, datagrams, SRQs, fast registration, and memory freed while a peer
//! still holds its key.

use std::time::{Duration, Instant};

use ernic_verbs::*;

const ALL: Access = Access::ALL;
const T: Duration = Duration::from_secs(5);

struct Pair {
    fabric: Fabric,
    a: Device,
    b: Device,
    pa: Pd,
    pb: Pd,
    ca: Cq,
    cb: Cq,
}

fn pair() -> Pair {
    pair_with(Config::default())
}

fn pair_with(cfg: Config) -> Pair {
    let fabric = Fabric::with_config(cfg);
    let a = fabric
        .open_device("::ffff:10.9.0.1".parse().unwrap())
        .unwrap();
    let b = fabric
        .open_device("::ffff:10.9.0.2".parse().unwrap())
        .unwrap();
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (ca, cb) = (a.create_cq(1024).unwrap(), b.create_cq(1024).unwrap());
    Pair {
        fabric,
        a,
        b,
        pa,
        pb,
        ca,
        cb,
    }
}

fn rc(p: &Pair) -> (Qp, Qp) {
    let qa =
        p.pa.create_qp(QpType::Rc, &p.ca, &p.ca, QpCaps::default())
            .unwrap();
    let qb =
        p.pb.create_qp(QpType::Rc, &p.cb, &p.cb, QpCaps::default())
            .unwrap();
    qa.connect(p.b.gid(), qb.qpn(), ALL).unwrap();
    qb.connect(p.a.gid(), qa.qpn(), ALL).unwrap();
    (qa, qb)
}

#[test]
fn a_device_gid_is_owned_once() {
    let p = pair();
    let err = p.fabric.open_device(p.a.gid()).unwrap_err().to_string();
    assert!(err.contains("GID"), "{err}");
}

#[test]
fn threads_exchange_sends_and_a_blocking_wait_wakes() {
    let p = pair();
    let (qa, qb) = rc(&p);
    let mb = p.pb.reg_mr(64 * 1024, ALL).unwrap();
    for i in 0..64 {
        qb.post_recv(i, &[mb.sge(i as usize * 1024, 1024).unwrap()])
            .unwrap();
    }
    let receiver = {
        let cb = p.cb.clone();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut wc = [Wc::EMPTY; 8];
            while got.len() < 64 {
                let n = cb.wait(&mut wc, T).unwrap();
                assert!(n > 0, "timed out waiting for messages");
                got.extend(wc[..n].iter().map(|c| (c.wr_id, c.byte_len, c.status)));
            }
            got
        })
    };
    let ma = p.pa.reg_mr(1024, ALL).unwrap();
    for i in 0..64u64 {
        ma.write(0, &i.to_le_bytes()).unwrap();
        qa.post_send(&SendWr::new(i, SendOp::Send).sgl(&[ma.sge(0, 8 + i as u32).unwrap()]))
            .unwrap();
        let c = p.ca.wait_one(T).unwrap().expect("send completion");
        assert_eq!(c.status, WcStatus::Success);
        std::thread::sleep(Duration::from_micros(200));
    }
    let got = receiver.join().unwrap();
    for (i, (wr_id, len, st)) in got.into_iter().enumerate() {
        assert_eq!(
            (wr_id, len, st),
            (i as u64, 8 + i as u32, WcStatus::Success)
        );
        let mut v = [0u8; 8];
        mb.read(i * 1024, &mut v).unwrap();
        assert_eq!(u64::from_le_bytes(v), i as u64);
    }
}

#[test]
fn rnr_timeout_runs_while_the_application_waits() {
    let p = pair_with(Config {
        rnr_timeout: Duration::from_millis(50),
        ..Config::default()
    });
    let (qa, _qb) = rc(&p);
    qa.post_send(&SendWr::new(1, SendOp::Send).inline(b"nobody listens"))
        .unwrap();
    let t0 = Instant::now();
    let c = p.ca.wait_one(T).unwrap().expect("a completion");
    assert_eq!(c.status, WcStatus::RnrRetryExcErr);
    assert!(
        t0.elapsed() >= Duration::from_millis(45),
        "waited {:?}",
        t0.elapsed()
    );
    assert_eq!(qa.query().unwrap().state, QpState::Err);
    assert!(
        p.fabric
            .take_events()
            .iter()
            .any(|e| matches!(e, AsyncEvent::QpFatal { .. }))
    );
}

#[test]
fn freed_memory_is_out_of_reach_of_its_old_key() {
    let p = pair();
    let (qa, _qb) = rc(&p);
    let target = p.pb.reg_mr(4096, ALL).unwrap();
    let remote = target.remote(0).unwrap();
    drop(target);
    let src = p.pa.reg_mr(64, ALL).unwrap();
    qa.post_send(&SendWr::new(1, SendOp::Write(remote)).sgl(&[src.sge(0, 64).unwrap()]))
        .unwrap();
    assert_eq!(
        p.ca.wait_one(T).unwrap().unwrap().status,
        WcStatus::RemAccessErr
    );
}

#[test]
fn datagrams_through_an_address_handle() {
    let p = pair();
    let qa =
        p.pa.create_qp(QpType::Ud, &p.ca, &p.ca, QpCaps::default())
            .unwrap();
    let qb =
        p.pb.create_qp(QpType::Ud, &p.cb, &p.cb, QpCaps::default())
            .unwrap();
    qa.ready_datagram(0x1234).unwrap();
    qb.ready_datagram(0x1234).unwrap();
    let mb = p.pb.reg_mr(4096, ALL).unwrap();
    qb.post_recv(1, &[mb.sge(0, 4096).unwrap()]).unwrap();
    let ah = p.pa.create_ah(p.b.gid()).unwrap();
    qa.post_send(
        &SendWr::new(2, SendOp::Send)
            .inline(b"hello ud")
            .to(ah.dest(qb.qpn(), 0x1234)),
    )
    .unwrap();
    assert_eq!(p.ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    let r = p.cb.wait_one(T).unwrap().unwrap();
    assert_eq!((r.byte_len, r.grh, r.src_qpn), (48, true, qa.qpn()));
    let mut m = [0u8; 8];
    mb.read(40, &mut m).unwrap();
    assert_eq!(&m, b"hello ud");
}

#[test]
fn srq_limit_event_and_fast_registration_through_the_api() {
    let p = pair();
    let srq = p.pb.create_srq(8, 1).unwrap();
    let qa =
        p.pa.create_qp(QpType::Rc, &p.ca, &p.ca, QpCaps::default())
            .unwrap();
    let qb =
        p.pb.create_qp_with(
            QpType::Rc,
            &p.cb,
            &p.cb,
            Some(&srq),
            QpCaps::default(),
            false,
        )
        .unwrap();
    qa.connect(p.b.gid(), qb.qpn(), ALL).unwrap();
    qb.connect(p.a.gid(), qa.qpn(), ALL).unwrap();
    let mb = p.pb.reg_mr(8192, ALL).unwrap();
    for i in 0..2 {
        srq.post_recv(i, &[mb.sge(i as usize * 64, 64).unwrap()])
            .unwrap();
    }
    srq.set_limit(2).unwrap();
    qa.post_send(&SendWr::new(1, SendOp::Send).inline(b"x"))
        .unwrap();
    assert_eq!(p.cb.wait_one(T).unwrap().unwrap().wr_id, 0);
    let ev = p.fabric.take_events();
    assert!(
        ev.iter()
            .any(|e| matches!(e, AsyncEvent::SrqLimitReached { .. })),
        "{ev:?}"
    );
    assert_eq!(srq.query().unwrap(), (0, 1));
    // Fast registration of the second 4 KiB of mb, then a WRITE through it.
    let fmr = p.pb.alloc_fast_mr(4096).unwrap();
    qb.post_send(&fmr.reg_wr(9, 1, &mb, 4096..8192, ALL).unwrap())
        .unwrap();
    assert_eq!(p.cb.wait_one(T).unwrap().unwrap().opcode, WcOpcode::RegMr);
    let remote = RemoteAddr {
        addr: mb.addr() + 4096 + 10,
        rkey: Rkey(fmr.key(1).0),
    };
    qa.post_send(&SendWr::new(2, SendOp::Write(remote)).inline(b"fast"))
        .unwrap();
    assert_eq!(p.ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    let mut v = [0u8; 4];
    mb.read(4096 + 10, &mut v).unwrap();
    assert_eq!(&v, b"fast");
}

#[test]
fn counters_count_per_device_and_per_qp() {
    let p = pair();
    let (qa, qb) = rc(&p);
    let mb = p.pb.reg_mr(4096, ALL).unwrap();
    qa.post_send(&SendWr::new(1, SendOp::Write(mb.remote(0).unwrap())).inline(b"12345"))
        .unwrap();
    p.ca.wait_one(T).unwrap().unwrap();
    assert_eq!(p.a.counters().get(Counter::RdmaWrites), 1);
    assert_eq!(qa.counters().unwrap().get(Counter::TxBytes), 5);
    assert_eq!(p.b.counters().get(Counter::RxWriteRequests), 1);
    assert_eq!(qb.counters().unwrap().get(Counter::RxBytes), 5);
}

#[test]
fn out_of_range_buffers_are_refused_before_posting() {
    let p = pair();
    let m = p.pa.reg_mr(100, ALL).unwrap();
    assert!(matches!(m.sge(90, 11), Err(Error::OutOfRange { .. })));
    assert!(matches!(
        m.read(usize::MAX, &mut [0; 2]),
        Err(Error::OutOfRange { .. })
    ));
    let (qa, _) = rc(&p);
    let too_many = vec![m.sge(0, 1).unwrap(); 5];
    let e = qa
        .post_send(&SendWr::new(1, SendOp::Send).sgl(&too_many))
        .unwrap_err();
    assert!(e.to_string().contains("5 SGEs"), "{e}");
}

#[test]
fn a_busy_cq_loses_nothing_and_keeps_order_across_threads() {
    let p = pair();
    let (qa, qb) = rc(&p);
    const N: u64 = 50_000;
    let mb = p.pb.reg_mr(4096, ALL).unwrap();
    let consumer = {
        let (cb, qb) = (p.cb.clone(), qb.clone());
        let sge = [mb.sge(0, 4096).unwrap()];
        std::thread::spawn(move || {
            for i in 0..128 {
                qb.post_recv(i, &sge).unwrap();
            }
            let mut wc = [Wc::EMPTY; 32];
            let (mut next, mut posted) = (0u64, 128u64);
            let deadline = Instant::now() + Duration::from_secs(60);
            while next < N {
                assert!(Instant::now() < deadline, "stuck at {next}");
                let n = cb.poll(&mut wc).unwrap();
                for c in &wc[..n] {
                    assert_eq!(
                        (c.wr_id, c.imm, c.status),
                        (next, Some(next as u32), WcStatus::Success)
                    );
                    next += 1;
                }
                for _ in 0..n {
                    if posted < N {
                        qb.post_recv(posted, &sge).unwrap();
                        posted += 1;
                    }
                }
            }
        })
    };
    let mut wc = [Wc::EMPTY; 32];
    let mut done = 0u64;
    for i in 0..N {
        let wr = SendWr::new(i, SendOp::WriteImm(mb.remote(0).unwrap(), i as u32))
            .signaled(i % 64 == 63 || i + 1 == N);
        // A full send queue (the receiver is behind: RNR) is retried after polling.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match qa.post_send(&wr) {
                Ok(()) => break,
                Err(Error::Engine(EngineError::QueueFull { .. })) => {
                    assert!(Instant::now() < deadline)
                }
                Err(e) => panic!("{e}"),
            }
            done += p.ca.poll(&mut wc).unwrap() as u64;
        }
        done += p.ca.poll(&mut wc).unwrap() as u64;
    }
    while done < N / 64 + 1 {
        done += p.ca.wait(&mut wc, T).unwrap() as u64;
    }
    consumer.join().unwrap();
}

#[test]
fn an_overfull_cq_reports_an_overrun() {
    let p = pair();
    let small = p.a.create_cq(4).unwrap();
    let qa =
        p.pa.create_qp(QpType::Rc, &small, &small, QpCaps::default())
            .unwrap();
    let qb =
        p.pb.create_qp(QpType::Rc, &p.cb, &p.cb, QpCaps::default())
            .unwrap();
    qa.connect(p.b.gid(), qb.qpn(), ALL).unwrap();
    qb.connect(p.a.gid(), qa.qpn(), ALL).unwrap();
    let mb = p.pb.reg_mr(64, ALL).unwrap();
    for i in 0..5 {
        qa.post_send(&SendWr::new(i, SendOp::Write(mb.remote(0).unwrap())).inline(b"x"))
            .unwrap();
    }
    let mut wc = [Wc::EMPTY; 8];
    assert!(matches!(
        small.poll(&mut wc),
        Err(Error::CqOverrun { depth: 4 })
    ));
}
