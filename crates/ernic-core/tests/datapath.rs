//! Every opcode, every status and every trust check of seed 001's data path,
//! through the engine with process memory.

mod common;

use std::time::Duration;

use common::*;
use ernic_core::*;

const RW: Access = Access::ALL;

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn send_delivers_into_next_receive_with_byte_len() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let (ka, kb) = (t.mr(t.a, 0, 4096, RW), t.mr(t.b, 65536, 4096, RW));
    t.fill(0, &payload(300, 1));
    t.recv(
        t.b,
        qb,
        11,
        &[
            sge(t.addr(65536), 100, kb),
            sge(t.addr(65536 + 1000), 400, kb),
        ],
    );
    t.send_from_a(qa, 1, 0, 300, ka);
    let s = t.take(t.a, qa, 1);
    assert_eq!(
        (s.status, s.opcode, s.byte_len),
        (WcStatus::Success, WcOpcode::Send, 300)
    );
    let r = t.take(t.b, qb, 11);
    assert_eq!(
        (r.status, r.opcode, r.byte_len, r.imm),
        (WcStatus::Success, WcOpcode::Recv, 300, None)
    );
    let p = payload(300, 1);
    assert_eq!(t.bytes(65536, 100), &p[..100]);
    assert_eq!(t.bytes(65536 + 1000, 200), &p[100..]);
    assert_eq!(t.bytes(65536 + 100, 1), &[0], "gap between SGEs untouched");
}

#[test]
fn send_imm_carries_immediate_and_inline_payload() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let kb = t.mr(t.b, 65536, 4096, RW);
    t.recv(t.b, qb, 5, &[sge(t.addr(65536), 64, kb)]);
    t.send(
        t.a,
        qa,
        &SendWr::new(2, SendOp::SendImm(0xdead_beef)).inline(b"inline!"),
    );
    assert_eq!(t.take(t.a, qa, 2).status, WcStatus::Success);
    let r = t.take(t.b, qb, 5);
    assert_eq!((r.imm, r.byte_len), (Some(0xdead_beef), 7));
    assert_eq!(t.bytes(65536, 7), b"inline!");
}

#[test]
fn write_and_read_move_bytes_between_mrs() {
    let mut t = Bench::new();
    let (qa, _qb) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 8192, RW);
    let kb = t.mr(t.b, 65536, 8192, RW);
    t.fill(0, &payload(5000, 7));
    let sgl = [sge(t.addr(0), 5000, ka)];
    let wr = SendWr::new(1, SendOp::Write(ra(t.addr(65536 + 100), kb))).sgl(&sgl);
    t.send(t.a, qa, &wr);
    let c = t.take(t.a, qa, 1);
    assert_eq!(
        (c.status, c.opcode, c.byte_len),
        (WcStatus::Success, WcOpcode::RdmaWrite, 5000)
    );
    assert_eq!(t.bytes(65536 + 100, 5000), &payload(5000, 7)[..]);
    // READ it back into another part of A.
    let sgl = [sge(t.addr(6000), 2000, ka)];
    let wr = SendWr::new(2, SendOp::Read(ra(t.addr(65536 + 100), kb))).sgl(&sgl);
    t.send(t.a, qa, &wr);
    let c = t.take(t.a, qa, 2);
    assert_eq!(
        (c.status, c.opcode),
        (WcStatus::Success, WcOpcode::RdmaRead)
    );
    assert_eq!(t.bytes(6000, 2000), &payload(5000, 7)[..2000]);
}

#[test]
fn write_imm_writes_and_consumes_a_receive() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 4096, RW);
    let kb = t.mr(t.b, 65536, 4096, RW);
    t.fill(0, b"0123456789");
    t.recv(t.b, qb, 9, &[]);
    let sgl = [sge(t.addr(0), 10, ka)];
    let wr = SendWr::new(1, SendOp::WriteImm(ra(t.addr(65536), kb), 77)).sgl(&sgl);
    t.send(t.a, qa, &wr);
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::Success);
    let r = t.take(t.b, qb, 9);
    assert_eq!(
        (r.opcode, r.imm, r.byte_len),
        (WcOpcode::RecvRdmaWithImm, Some(77), 10)
    );
    assert_eq!(t.bytes(65536, 10), b"0123456789");
}

#[test]
fn atomics_return_old_value_and_update_target() {
    let mut t = Bench::new();
    let (qa, _) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 64, RW);
    let kb = t.mr(t.b, 65536, 64, RW);
    t.fill(65536 + 8, &100u64.to_ne_bytes());
    let fa = SendOp::AtomicFa {
        remote: ra(t.addr(65536 + 8), kb),
        add: 5,
    };
    t.send(t.a, qa, &SendWr::new(1, fa).sgl(&[sge(t.addr(0), 8, ka)]));
    let c = t.take(t.a, qa, 1);
    assert_eq!(
        (c.status, c.opcode),
        (WcStatus::Success, WcOpcode::FetchAdd)
    );
    assert_eq!(t.bytes(0, 8), 100u64.to_ne_bytes());
    assert_eq!(t.bytes(65536 + 8, 8), 105u64.to_ne_bytes());
    // CAS that fails leaves the value, CAS that matches swaps it.
    let cas = |cmp| SendOp::AtomicCas {
        remote: ra(t.addr(65536 + 8), kb),
        compare: cmp,
        swap: 9,
    };
    let (miss, hit) = (cas(1), cas(105));
    t.send(t.a, qa, &SendWr::new(2, miss).sgl(&[sge(t.addr(8), 8, ka)]));
    assert_eq!(t.take(t.a, qa, 2).opcode, WcOpcode::CompSwap);
    assert_eq!(t.bytes(8, 8), 105u64.to_ne_bytes());
    assert_eq!(t.bytes(65536 + 8, 8), 105u64.to_ne_bytes());
    t.send(t.a, qa, &SendWr::new(3, hit).sgl(&[sge(t.addr(16), 8, ka)]));
    assert_eq!(t.take(t.a, qa, 3).status, WcStatus::Success);
    assert_eq!(t.bytes(65536 + 8, 8), 9u64.to_ne_bytes());
}

#[test]
fn misaligned_atomic_is_remote_invalid_request() {
    let mut t = Bench::new();
    let (qa, _) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 64, RW);
    let kb = t.mr(t.b, 65536, 64, RW);
    let op = SendOp::AtomicFa {
        remote: ra(t.addr(65536 + 4), kb),
        add: 1,
    };
    t.send(t.a, qa, &SendWr::new(1, op).sgl(&[sge(t.addr(0), 8, ka)]));
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RemInvReqErr);
    assert_eq!(t.bytes(65536, 16), &[0; 16]);
}

#[test]
fn receive_too_small_is_local_length_error_there_and_invalid_request_here() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 4096, RW);
    let kb = t.mr(t.b, 65536, 4096, RW);
    t.recv(t.b, qb, 1, &[sge(t.addr(65536), 10, kb)]);
    t.send_from_a(qa, 1, 0, 11, ka);
    assert_eq!(t.take(t.b, qb, 1).status, WcStatus::LocLenErr);
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RemInvReqErr);
    assert_eq!(
        t.e.query_qp(t.a.dev, qa).unwrap().state,
        QpState::Err,
        "an RC error moves the QP to ERROR"
    );
    assert_eq!(t.count(t.b, Counter::RespLocalLengthError), 1);
    assert_eq!(t.count(t.a, Counter::ReqRemoteInvalidRequest), 1);
}

#[test]
fn local_key_failures_are_local_protection_errors() {
    let mut t = Bench::new();
    let ka = t.mr(t.a, 0, 4096, RW);
    let kb = t.mr(t.b, 65536, 4096, RW);
    let (a0, b0) = (t.addr(0), t.addr(65536));
    let cases: Vec<(&str, Sge)> = vec![
        ("unknown key", sge(a0, 8, 0x7700)),
        ("stale variant", sge(a0, 8, ka ^ 1)),
        ("past the end", sge(a0 + 4090, 8, ka)),
        ("before the start", sge(a0 - 1, 8, ka)),
        ("another device's key", sge(b0, 8, kb)),
        ("reserved key 0", sge(a0, 8, 0)),
        ("wraps", sge(u64::MAX - 3, 8, ka)),
    ];
    for (why, s) in cases {
        let (qa, _) = t.pair(QpType::Rc);
        let wr = SendWr::new(1, SendOp::Write(ra(b0, kb))).sgl(std::slice::from_ref(&s));
        t.send(t.a, qa, &wr);
        assert_eq!(t.take(t.a, qa, 1).status, WcStatus::LocProtErr, "{why}");
    }
    assert_eq!(
        t.bytes(65536, 4096),
        &[0u8; 4096][..],
        "nothing was written"
    );
}

#[test]
fn a_read_needs_local_write_on_its_buffer() {
    let mut t = Bench::new();
    let (qa, _) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 4096, Access::NONE);
    let kb = t.mr(t.b, 65536, 4096, RW);
    t.send(
        t.a,
        qa,
        &SendWr::new(1, SendOp::Read(ra(t.addr(65536), kb))).sgl(&[sge(t.addr(0), 8, ka)]),
    );
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::LocProtErr);
}

#[test]
fn remote_key_failures_are_remote_access_errors() {
    let mut t = Bench::new();
    let ka = t.mr(t.a, 0, 4096, RW);
    let kb = t.mr(t.b, 65536, 4096, RW);
    let kb_ro = t.mr(t.b, 70000, 64, Access::REMOTE_READ);
    let kb_other_pd = {
        let pd2 = t.e.alloc_pd(t.b.dev).unwrap();
        let addr = t.addr(80000);
        t.e.reg_mr(t.b.dev, MrSpec::contiguous(pd2, addr, 64, RW, addr))
            .unwrap()
    };
    let b0 = t.addr(65536);
    let cases = [
        ("unknown rkey", ra(b0, 0x9900)),
        ("rkey 0 from a peer", ra(b0, 0)),
        ("out of range", ra(b0 + 4095, kb)),
        ("wrapping range", ra(u64::MAX - 2, kb)),
        ("no REMOTE_WRITE", ra(t.addr(70000), kb_ro)),
        ("another PD", ra(t.addr(80000), kb_other_pd)),
        ("the requester's own key", ra(t.addr(0), ka)),
    ];
    for (why, r) in cases {
        let (qa, _) = t.pair(QpType::Rc);
        t.send(
            t.a,
            qa,
            &SendWr::new(1, SendOp::Write(r)).sgl(&[sge(t.addr(0), 4, ka)]),
        );
        assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RemAccessErr, "{why}");
    }
    // A zero-length WRITE checks no key at all.
    let (qa, _) = t.pair(QpType::Rc);
    t.send(t.a, qa, &SendWr::new(2, SendOp::Write(ra(0, 0))));
    assert_eq!(t.take(t.a, qa, 2).status, WcStatus::Success);
    assert_eq!(t.bytes(65536, 4096), &[0u8; 4096][..]);
}

#[test]
fn sge_lengths_summing_past_4_gib_fail_with_length_error() {
    let mut t = Bench::new();
    let (qa, _) = t.pair(QpType::Rc);
    // An MR of 3 GiB of (never touched) DMA space; the copy never starts.
    let addr = 0x1000_0000_0000u64;
    let len = 3u64 << 30;
    let k =
        t.e.reg_mr(t.a.dev, MrSpec::contiguous(t.a.pd, addr, len, RW, addr))
            .unwrap();
    let kb = t.mr(t.b, 65536, 4096, RW);
    let s = sge(addr, 3 << 29, k);
    let sgl = [s, s, s]; // 4.5 GiB
    t.send(
        t.a,
        qa,
        &SendWr::new(1, SendOp::Write(ra(t.addr(65536), kb))).sgl(&sgl),
    );
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::LocLenErr);
}

#[test]
fn registration_refuses_wrapping_ranges_and_bad_rights() {
    let mut t = Bench::new();
    let r = |a: u64, l: u64| {
        vec![ernic_core::mr::Run {
            off: 0,
            dma: a,
            len: l,
        }]
    };
    let e = t.e.reg_mr(
        t.a.dev,
        MrSpec {
            runs: r(0, 100),
            ..MrSpec::contiguous(t.a.pd, u64::MAX - 10, 100, RW, 0)
        },
    );
    assert!(matches!(e, Err(EngineError::Wraps { .. })), "{e:?}");
    let e = t.e.reg_mr(
        t.a.dev,
        MrSpec {
            runs: r(0, 100),
            ..MrSpec::contiguous(t.a.pd, 0, 100, Access::REMOTE_WRITE, 0)
        },
    );
    assert!(matches!(e, Err(EngineError::BadAccess(_))), "{e:?}");
    let e = t.e.reg_mr(
        t.a.dev,
        MrSpec {
            runs: r(0, 99),
            ..MrSpec::contiguous(t.a.pd, 0, 100, RW, 0)
        },
    );
    assert!(matches!(e, Err(EngineError::BadSize { .. })), "{e:?}");
}

#[test]
fn rnr_waits_then_delivers_when_a_receive_is_posted() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 4096, RW);
    let kb = t.mr(t.b, 65536, 4096, RW);
    t.fill(0, b"first");
    t.fill(100, b"second");
    t.send_from_a(qa, 1, 0, 5, ka);
    t.send_from_a(qa, 2, 100, 6, ka);
    assert!(
        t.none_for(t.a, qa, 1) && t.none_for(t.a, qa, 2),
        "both wait for a receive"
    );
    t.advance(Duration::from_millis(50));
    assert!(t.none_for(t.a, qa, 1));
    t.recv(t.b, qb, 10, &[sge(t.addr(65536), 64, kb)]);
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::Success);
    assert!(
        t.none_for(t.a, qa, 2),
        "the second SEND waits behind the first"
    );
    assert_eq!(t.take(t.b, qb, 10).byte_len, 5);
    t.recv(t.b, qb, 11, &[sge(t.addr(65536 + 64), 64, kb)]);
    assert_eq!(t.take(t.a, qa, 2).status, WcStatus::Success);
    assert_eq!(t.bytes(65536 + 64, 6), b"second");
}

#[test]
fn rnr_retry_and_the_peers_min_rnr_timer_bound_the_wait() {
    let mut t = Bench::new();
    let ka = t.mr(t.a, 0, 4096, RW);
    let kb = t.mr(t.b, 65536, 4096, RW);
    let set = |t: &mut Bench, qa: Qpn, qb: Qpn, retry: u8, timer: u8| {
        let now = t.now;
        let ra = QpAttr {
            rnr_retry: Some(retry),
            ..QpAttr::default()
        };
        t.e.modify_qp(t.a.dev, qa, &ra, now).unwrap();
        let rb = QpAttr {
            min_rnr_timer: Some(timer),
            ..QpAttr::default()
        };
        t.e.modify_qp(t.b.dev, qb, &rb, now).unwrap();
    };
    // rnr_retry 0: the first refusal fails the SEND, with no wait.
    let (qa, qb) = t.pair(QpType::Rc);
    set(&mut t, qa, qb, 0, 14);
    t.send_from_a(qa, 1, 0, 5, ka);
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RnrRetryExcErr);
    // Three retries of the peer's timer 20 (10.24 ms): 30.72 ms, not the
    // engine's 100.
    let (qa, qb) = t.pair(QpType::Rc);
    set(&mut t, qa, qb, 3, 20);
    t.send_from_a(qa, 2, 0, 5, ka);
    assert_eq!(
        t.e.next_deadline(t.now),
        Some(t.now + Duration::from_micros(30_720))
    );
    t.advance(Duration::from_micros(30_719));
    assert!(t.none_for(t.a, qa, 2));
    t.advance(Duration::from_micros(1));
    assert_eq!(t.take(t.a, qa, 2).status, WcStatus::RnrRetryExcErr);
    // 7 is without limit: past the engine's timeout it still waits, and a
    // receive delivers it.
    let (qa, qb) = t.pair(QpType::Rc);
    set(&mut t, qa, qb, 7, 1);
    t.send_from_a(qa, 3, 0, 5, ka);
    t.advance(Duration::from_millis(500));
    assert!(t.none_for(t.a, qa, 3));
    t.recv(t.b, qb, 30, &[sge(t.addr(65536), 64, kb)]);
    assert_eq!(t.take(t.a, qa, 3).status, WcStatus::Success);
}

#[test]
fn rnr_retry_exceeded_after_the_timeout_and_the_rest_is_flushed() {
    let mut t = Bench::new();
    let (qa, _qb) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 4096, RW);
    t.send_from_a(qa, 1, 0, 5, ka);
    t.send_from_a(qa, 2, 0, 5, ka);
    assert_eq!(
        t.e.next_deadline(t.now),
        Some(t.now + Duration::from_millis(100))
    );
    t.advance(Duration::from_millis(99));
    assert!(t.none_for(t.a, qa, 1));
    t.advance(Duration::from_millis(1));
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RnrRetryExcErr);
    assert_eq!(t.take(t.a, qa, 2).status, WcStatus::WrFlushErr);
    assert!(!t.e.has_timers());
    assert_eq!(t.count(t.a, Counter::RnrNakRetryErr), 1);
}

#[test]
fn a_vanished_peer_is_transport_retry_exceeded() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    t.e.destroy_qp(t.b.dev, qb).unwrap();
    t.send(t.a, qa, &SendWr::new(1, SendOp::Send).inline(b"x"));
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RetryExcErr);
}

#[test]
fn moving_to_error_flushes_everything_outstanding_once() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let kb = t.mr(t.b, 65536, 4096, RW);
    for i in 0..5 {
        t.recv(t.b, qb, i, &[sge(t.addr(65536), 64, kb)]);
    }
    t.send(t.a, qa, &SendWr::new(100, SendOp::Send).inline(b"a"));
    assert_eq!(t.take(t.b, qb, 0).status, WcStatus::Success);
    let now = t.now;
    let err = QpAttr {
        state: Some(QpState::Err),
        ..QpAttr::default()
    };
    t.e.modify_qp(t.b.dev, qb, &err, now).unwrap();
    t.collect();
    for i in 1..5 {
        let c = t.take(t.b, qb, i);
        assert_eq!((c.status, c.opcode), (WcStatus::WrFlushErr, WcOpcode::Recv));
    }
    // Posting in ERROR completes at once with a flush.
    t.recv(t.b, qb, 9, &[]);
    assert_eq!(t.take(t.b, qb, 9).status, WcStatus::WrFlushErr);
    t.e.modify_qp(t.b.dev, qb, &err, now).unwrap();
    t.collect();
    assert!(
        t.done.iter().all(|c| c.device != t.b.dev),
        "flushed once only: {:?}",
        t.done
    );
    let _ = qa;
}

#[test]
fn srq_feeds_several_qps_and_fires_its_limit_once() {
    let mut t = Bench::new();
    let kb = t.mr(t.b, 65536, 4096, RW);
    let srq = t.e.create_srq(t.b.dev, None, t.b.pd, 16, 2).unwrap();
    let mk = |t: &mut Bench| {
        t.e.create_qp(
            t.b.dev,
            &QpInit {
                qp_type: QpType::Rc,
                pd: t.b.pd,
                send_cq: t.b.cq,
                recv_cq: t.b.cq,
                srq: Some(srq),
                caps: QpCaps::default(),
                sq_sig_all: false,
                qpn: None,
            },
        )
        .unwrap()
    };
    let (b1, b2) = (mk(&mut t), mk(&mut t));
    let (a1, a2) = (t.qp(t.a, QpType::Rc), t.qp(t.a, QpType::Rc));
    let (a, b) = (t.a, t.b);
    t.connect_rts(a, a1, Some((b.gid, b1)), None);
    t.connect_rts(a, a2, Some((b.gid, b2)), None);
    t.connect_rts(b, b1, Some((a.gid, a1)), None);
    t.connect_rts(b, b2, Some((a.gid, a2)), None);
    let now = t.now;
    for i in 0..4 {
        let s = [sge(t.addr(65536 + 64 * i as usize), 64, kb)];
        t.e.post_srq_recv(t.b.dev, srq, &RecvWr { wr_id: i, sgl: &s }, now)
            .unwrap();
    }
    assert!(matches!(
        t.e.post_recv(t.b.dev, b1, &RecvWr { wr_id: 0, sgl: &[] }, now),
        Err(EngineError::BadRequest { .. })
    ));
    t.e.modify_srq(t.b.dev, srq, 3).unwrap();
    t.send(t.a, a1, &SendWr::new(1, SendOp::Send).inline(b"one"));
    t.send(t.a, a2, &SendWr::new(2, SendOp::Send).inline(b"two"));
    assert_eq!(t.take(t.b, b1, 0).byte_len, 3);
    assert_eq!(t.take(t.b, b2, 1).byte_len, 3);
    assert_eq!(t.bytes(65536 + 64, 3), b"two");
    let ev = t.e.take_events();
    assert_eq!(
        ev,
        vec![AsyncEvent::SrqLimitReached {
            device: t.b.dev,
            srq
        }]
    );
    t.send(t.a, a1, &SendWr::new(3, SendOp::Send).inline(b"3"));
    assert!(
        t.e.take_events().is_empty(),
        "the limit disarmed after firing"
    );
    assert_eq!(t.e.query_srq(t.b.dev, srq).unwrap(), (0, 1));
    assert!(matches!(
        t.e.destroy_srq(t.b.dev, srq),
        Err(EngineError::InUse { .. })
    ));
}

#[test]
fn fast_registration_binds_a_new_key_and_invalidation_unbinds_it() {
    let mut t = Bench::new();
    let (qa, _) = t.pair(QpType::Rc);
    let ka = t.mr(t.a, 0, 4096, RW);
    let fmr = t.e.alloc_fast_mr(t.b.dev, t.b.pd, None, 8192).unwrap();
    let reg = |variant: u32, off: usize, t: &Bench| {
        SendOp::RegMr(RegMr {
            key: Lkey(fmr | variant),
            iova: 0x5000_0000,
            len: 256,
            access: RW,
            pages: PageSource::Contiguous { dma: t.addr(off) },
        })
    };
    // Before any REG_MR the key does not work.
    t.send(
        t.a,
        qa,
        &SendWr::new(1, SendOp::Write(ra(0x5000_0000, fmr))).inline(b"x"),
    );
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::RemAccessErr);
    let (qa, qb) = t.pair(QpType::Rc);
    let op = reg(1, 65536, &t);
    t.send(t.b, qb, &SendWr::new(2, op));
    assert_eq!(t.take(t.b, qb, 2).opcode, WcOpcode::RegMr);
    t.fill(0, b"via fast reg");
    t.send(
        t.a,
        qa,
        &SendWr::new(3, SendOp::Write(ra(0x5000_0010, fmr | 1))).sgl(&[sge(t.addr(0), 12, ka)]),
    );
    assert_eq!(t.take(t.a, qa, 3).status, WcStatus::Success);
    assert_eq!(t.bytes(65536 + 16, 12), b"via fast reg");
    // Re-registering drops the old key.
    let op = reg(2, 65536 + 1024, &t);
    t.send(t.b, qb, &SendWr::new(4, op));
    assert_eq!(t.take(t.b, qb, 4).status, WcStatus::Success);
    t.send(
        t.a,
        qa,
        &SendWr::new(5, SendOp::Write(ra(0x5000_0000, fmr | 1))).inline(b"y"),
    );
    assert_eq!(t.take(t.a, qa, 5).status, WcStatus::RemAccessErr);
    let (qa, qb) = t.pair(QpType::Rc);
    t.send(
        t.a,
        qa,
        &SendWr::new(6, SendOp::Write(ra(0x5000_0000, fmr | 2))).inline(b"z"),
    );
    assert_eq!(t.take(t.a, qa, 6).status, WcStatus::Success);
    assert_eq!(t.bytes(65536 + 1024, 1), b"z");
    // LOCAL_INV unbinds it.
    t.send(t.b, qb, &SendWr::new(7, SendOp::LocalInv(Lkey(fmr | 2))));
    assert_eq!(t.take(t.b, qb, 7).opcode, WcOpcode::LocalInv);
    t.send(
        t.a,
        qa,
        &SendWr::new(8, SendOp::Write(ra(0x5000_0000, fmr | 2))).inline(b"w"),
    );
    assert_eq!(t.take(t.a, qa, 8).status, WcStatus::RemAccessErr);
}

#[test]
fn fast_registration_reads_a_page_table_and_checks_its_length() {
    let mut t = Bench::new();
    let qb = t.qp(t.b, QpType::Rc);
    let b = t.b;
    t.connect_rts(b, qb, Some((t.a.gid, Qpn(99))), None);
    let fmr = t.e.alloc_fast_mr(t.b.dev, t.b.pd, None, 1 << 20).unwrap();
    // Two 4 KiB pages, deliberately out of order in the arena.
    let (p0, p1) = (t.addr(0x30000), t.addr(0x20000));
    let mut table = Vec::new();
    table.extend_from_slice(&p0.to_le_bytes());
    table.extend_from_slice(&p1.to_le_bytes());
    t.fill(0x40000, &table);
    let reg = |count: u32, len: u64| {
        SendOp::RegMr(RegMr {
            key: Lkey(fmr | 3),
            iova: 0x7000,
            len,
            access: RW,
            pages: PageSource::Table {
                table: t.addr(0x40000),
                count,
                page_shift: 12,
                first_offset: 0,
            },
        })
    };
    let (bad, good) = (reg(2, 100), reg(2, 8192));
    t.send(t.b, qb, &SendWr::new(1, bad));
    assert_eq!(
        t.take(t.b, qb, 1).status,
        WcStatus::LocProtErr,
        "two pages for a 100-byte region"
    );
    let (_, qb) = {
        let (x, y) = t.pair(QpType::Rc);
        (x, y)
    };
    t.send(t.b, qb, &SendWr::new(2, good));
    assert_eq!(t.take(t.b, qb, 2).status, WcStatus::Success);
    let mr = t.e.mr(t.b.dev, fmr | 3).unwrap();
    assert_eq!(mr.runs.len(), 2);
    assert_eq!((mr.runs[0].dma, mr.runs[1].dma), (p0, p1));
}

#[test]
fn send_with_invalidate_kills_the_named_rkey_at_the_receiver() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let fmr = t.e.alloc_fast_mr(t.b.dev, t.b.pd, None, 4096).unwrap();
    let op = SendOp::RegMr(RegMr {
        key: Lkey(fmr | 5),
        iova: 0x1000,
        len: 64,
        access: RW,
        pages: PageSource::Contiguous { dma: t.addr(65536) },
    });
    t.send(t.b, qb, &SendWr::new(1, op));
    t.take(t.b, qb, 1);
    t.recv(t.b, qb, 2, &[]);
    t.send(t.a, qa, &SendWr::new(3, SendOp::SendInv(Rkey(fmr | 5))));
    assert_eq!(t.take(t.a, qa, 3).status, WcStatus::Success);
    let r = t.take(t.b, qb, 2);
    assert_eq!(r.invalidated, Some(Rkey(fmr | 5)));
    t.send(
        t.a,
        qa,
        &SendWr::new(4, SendOp::Write(ra(0x1000, fmr | 5))).inline(b"x"),
    );
    assert_eq!(t.take(t.a, qa, 4).status, WcStatus::RemAccessErr);
}

#[test]
fn uc_drops_a_send_without_a_receive_and_refuses_read() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Uc);
    t.send(t.a, qa, &SendWr::new(1, SendOp::Send).inline(b"x"));
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::Success);
    assert!(t.none_for(t.b, qb, 0));
    assert_eq!(t.count(t.b, Counter::OutOfBuffer), 1);
    t.send(t.a, qa, &SendWr::new(2, SendOp::Read(ra(0, 1))));
    assert_eq!(t.take(t.a, qa, 2).status, WcStatus::LocQpOpErr);
}

mod datagrams {
    use super::*;

    fn ud(t: &mut Bench, on_b: bool, qkey: u32) -> Qpn {
        let s = if on_b { t.b } else { t.a };
        let q = t.qp(s, QpType::Ud);
        t.connect_rts(s, q, None, Some(qkey));
        q
    }

    #[test]
    fn ud_send_arrives_with_a_40_byte_grh() {
        let mut t = Bench::new();
        let (qa, qb) = (ud(&mut t, false, 0x11), ud(&mut t, true, 0x11));
        let kb = t.mr(t.b, 65536, 4096, RW);
        let ah = t.e.create_ah(t.a.dev, None, t.a.pd, t.b.gid).unwrap();
        t.recv(t.b, qb, 1, &[sge(t.addr(65536), 100, kb)]);
        let dest = UdDest {
            ah,
            remote_qpn: qb,
            remote_qkey: 0x11,
        };
        t.send(
            t.a,
            qa,
            &SendWr::new(5, SendOp::SendImm(3))
                .inline(b"datagram")
                .to(dest),
        );
        assert_eq!(t.take(t.a, qa, 5).status, WcStatus::Success);
        let r = t.take(t.b, qb, 1);
        assert_eq!(
            (r.byte_len, r.grh, r.src_qpn, r.imm),
            (48, true, qa, Some(3))
        );
        let g = grh::Repr::parse(&grh::Packet::new_checked(t.bytes(65536, 40)).unwrap()).unwrap();
        assert_eq!((g.sgid, g.dgid, g.payload_len), (t.a.gid, t.b.gid, 8));
        assert_eq!(t.bytes(65536 + 40, 8), b"datagram");
    }

    #[test]
    fn qkey_mismatch_and_connected_destinations_are_dropped() {
        let mut t = Bench::new();
        let (qa, qb) = (ud(&mut t, false, 0x11), ud(&mut t, true, 0x22));
        let (_, rc) = t.pair(QpType::Rc);
        let ah = t.e.create_ah(t.a.dev, None, t.a.pd, t.b.gid).unwrap();
        let kb = t.mr(t.b, 65536, 4096, RW);
        t.recv(t.b, qb, 1, &[sge(t.addr(65536), 64, kb)]);
        t.recv(t.b, rc, 2, &[sge(t.addr(65536 + 64), 64, kb)]);
        for (i, (q, k)) in [(qb, 0x11), (rc, 0x22)].into_iter().enumerate() {
            let dest = UdDest {
                ah,
                remote_qpn: q,
                remote_qkey: k,
            };
            t.send(
                t.a,
                qa,
                &SendWr::new(i as u64, SendOp::Send).inline(b"x").to(dest),
            );
            assert_eq!(
                t.take(t.a, qa, i as u64).status,
                WcStatus::Success,
                "UD never reports the receiver's refusal"
            );
        }
        assert!(
            t.none_for(t.b, qb, 1) && t.none_for(t.b, rc, 2),
            "neither was delivered"
        );
        assert_eq!(t.count(t.b, Counter::RxDatagramsDropped), 2);
    }

    #[test]
    fn controlled_qkey_means_the_senders_own_key() {
        let mut t = Bench::new();
        let (qa, qb) = (ud(&mut t, false, 0x33), ud(&mut t, true, 0x33));
        let ah = t.e.create_ah(t.a.dev, None, t.a.pd, t.b.gid).unwrap();
        let kb = t.mr(t.b, 65536, 4096, RW);
        t.recv(t.b, qb, 1, &[sge(t.addr(65536), 64, kb)]);
        let dest = UdDest {
            ah,
            remote_qpn: qb,
            remote_qkey: 0x8000_0000,
        };
        t.send(t.a, qa, &SendWr::new(1, SendOp::Send).to(dest));
        assert_eq!(
            t.take(t.b, qb, 1).status,
            WcStatus::Success,
            "0x33 stood in for the controlled key"
        );
        // A process can not reach QP1 by writing its well-known key: the
        // controlled key means its own QP's key, 0x33, which QP1 refuses.
        let gsi =
            t.e.create_qp(
                t.b.dev,
                &QpInit {
                    qp_type: QpType::Gsi,
                    pd: t.b.pd,
                    send_cq: t.b.cq,
                    recv_cq: t.b.cq,
                    srq: None,
                    caps: QpCaps::default(),
                    sq_sig_all: false,
                    qpn: None,
                },
            )
            .unwrap();
        assert_eq!(gsi, Qpn::GSI);
        let b = t.b;
        t.connect_rts(b, gsi, None, None);
        t.recv(t.b, gsi, 7, &[sge(t.addr(65536 + 64), 64, kb)]);
        let dest = UdDest {
            ah,
            remote_qpn: gsi,
            remote_qkey: GSI_QKEY,
        };
        t.send(t.a, qa, &SendWr::new(2, SendOp::Send).to(dest));
        assert!(t.none_for(t.b, gsi, 7));
    }

    #[test]
    fn controlled_qkey_without_an_own_key_is_refused() {
        // A device that does not enforce verbs states (the ionic device) can
        // have a UD QP with no Q_Key.
        let mut t = Bench::with(EngineConfig {
            enforce_qp_state: false,
            ..EngineConfig::default()
        });
        let qa = t.qp(t.a, QpType::Ud);
        let qb = t.qp(t.b, QpType::Ud);
        let ah = t.e.create_ah(t.a.dev, None, t.a.pd, t.b.gid).unwrap();
        let kb = t.mr(t.b, 65536, 4096, RW);
        t.recv(t.b, qb, 1, &[sge(t.addr(65536), 64, kb)]);
        let dest = UdDest {
            ah,
            remote_qpn: qb,
            remote_qkey: 0x8000_0001,
        };
        t.send(t.a, qa, &SendWr::new(1, SendOp::Send).to(dest));
        assert_eq!(t.take(t.a, qa, 1).status, WcStatus::LocQpOpErr);
        assert!(t.none_for(t.b, qb, 1));
    }

    #[test]
    fn ah_to_an_unowned_gid_delivers_locally_and_rc_to_it_fails() {
        let mut t = Bench::new();
        let (qa, qa2) = (ud(&mut t, false, 1), ud(&mut t, false, 1));
        let nowhere: Gid = "fd00::99".parse().unwrap();
        let ah = t.e.create_ah(t.a.dev, None, t.a.pd, nowhere).unwrap();
        let ka = t.mr(t.a, 0, 4096, RW);
        t.recv(t.a, qa2, 1, &[sge(t.addr(0), 64, ka)]);
        t.send(
            t.a,
            qa,
            &SendWr::new(1, SendOp::Send).to(UdDest {
                ah,
                remote_qpn: qa2,
                remote_qkey: 1,
            }),
        );
        assert_eq!(t.take(t.a, qa2, 1).status, WcStatus::Success);
        let rc = t.qp(t.a, QpType::Rc);
        let now = t.now;
        t.e.modify_qp(
            t.a.dev,
            rc,
            &QpAttr {
                state: Some(QpState::Init),
                ..QpAttr::default()
            },
            now,
        )
        .unwrap();
        let e = t.e.modify_qp(
            t.a.dev,
            rc,
            &QpAttr {
                state: Some(QpState::Rtr),
                dest: Some((nowhere, Qpn(5))),
                ..QpAttr::default()
            },
            now,
        );
        assert_eq!(e, Err(EngineError::NoRoute(nowhere)));
        assert_eq!(
            t.e.query_qp(t.a.dev, rc).unwrap().state,
            QpState::Init,
            "a failed modify changes nothing"
        );
    }

    #[test]
    fn datagram_larger_than_the_mtu_is_a_length_error() {
        let mut t = Bench::new();
        let (qa, qb) = (ud(&mut t, false, 1), ud(&mut t, true, 1));
        let ka = t.mr(t.a, 0, 8192, RW);
        let ah = t.e.create_ah(t.a.dev, None, t.a.pd, t.b.gid).unwrap();
        let sgl = [sge(t.addr(0), 4097, ka)];
        let wr = SendWr::new(1, SendOp::Send).sgl(&sgl).to(UdDest {
            ah,
            remote_qpn: qb,
            remote_qkey: 1,
        });
        t.send(t.a, qa, &wr);
        assert_eq!(t.take(t.a, qa, 1).status, WcStatus::LocLenErr);
    }
}

#[test]
fn a_datagram_receive_without_room_for_the_grh_is_a_length_error() {
    let mut t = Bench::new();
    let qa = t.qp(t.a, QpType::Ud);
    let qb = t.qp(t.b, QpType::Ud);
    let (a, b) = (t.a, t.b);
    t.connect_rts(a, qa, None, Some(1));
    t.connect_rts(b, qb, None, Some(1));
    let ah = t.e.create_ah(t.a.dev, None, t.a.pd, t.b.gid).unwrap();
    let kb = t.mr(t.b, 65536, 4096, RW);
    t.recv(t.b, qb, 1, &[sge(t.addr(65536), 41, kb)]);
    t.send(
        t.a,
        qa,
        &SendWr::new(1, SendOp::Send).inline(b"xy").to(UdDest {
            ah,
            remote_qpn: qb,
            remote_qkey: 1,
        }),
    );
    assert_eq!(t.take(t.a, qa, 1).status, WcStatus::Success);
    assert_eq!(t.take(t.b, qb, 1).status, WcStatus::LocLenErr);
}

#[test]
fn verbs_state_rules_refuse_posting_too_early() {
    let mut t = Bench::new();
    let q = t.qp(t.a, QpType::Rc);
    let now = t.now;
    let e =
        t.e.post_send(t.a.dev, q, &SendWr::new(1, SendOp::Send), now);
    assert!(matches!(e, Err(EngineError::NotPostable { .. })), "{e:?}");
    let e =
        t.e.post_recv(t.a.dev, q, &RecvWr { wr_id: 1, sgl: &[] }, now);
    assert!(matches!(e, Err(EngineError::NotPostable { .. })), "{e:?}");
    let e = t.e.modify_qp(
        t.a.dev,
        q,
        &QpAttr {
            state: Some(QpState::Rts),
            ..QpAttr::default()
        },
        now,
    );
    assert!(matches!(e, Err(EngineError::BadTransition { .. })), "{e:?}");
    t.e.modify_qp(
        t.a.dev,
        q,
        &QpAttr {
            state: Some(QpState::Init),
            ..QpAttr::default()
        },
        now,
    )
    .unwrap();
    let e = t.e.modify_qp(
        t.a.dev,
        q,
        &QpAttr {
            state: Some(QpState::Rtr),
            ..QpAttr::default()
        },
        now,
    );
    assert!(matches!(e, Err(EngineError::MissingAttr { .. })), "{e:?}");
    assert_eq!(t.e.query_qp(t.a.dev, q).unwrap().state, QpState::Init);
}

#[test]
fn a_full_send_queue_refuses_and_unsignaled_requests_still_complete() {
    let mut t = Bench::new();
    let (qa, qb) = t.pair(QpType::Rc);
    let now = t.now;
    // Nothing receives, so 64 SENDs fill the queue (one waits on RNR).
    for i in 0..64 {
        t.e.post_send(
            t.a.dev,
            qa,
            &SendWr::new(i, SendOp::Send).signaled(i % 2 == 0),
            now,
        )
        .unwrap();
    }
    let e =
        t.e.post_send(t.a.dev, qa, &SendWr::new(99, SendOp::Send), now);
    assert!(matches!(e, Err(EngineError::QueueFull { .. })), "{e:?}");
    for i in 0..64 {
        t.recv(t.b, qb, i, &[]);
    }
    for i in 0..64 {
        let c = t.take(t.a, qa, i);
        assert_eq!(c.status, WcStatus::Success);
        assert_eq!(
            c.signaled,
            i % 2 == 0,
            "every request completes at the device; the flag says if it was asked for"
        );
    }
}

#[test]
fn fast_registration_names_no_more_pages_than_the_mr_was_allocated_for() {
    let mut t = Bench::new();
    let b = t.b;
    // A failed REG_MR moves its QP to ERROR: each attempt gets its own.
    let fresh = |t: &mut Bench| {
        let q = t.qp(b, QpType::Rc);
        t.connect_rts(b, q, Some((t.a.gid, Qpn(99))), None);
        q
    };
    // Room for 1 GiB of bytes, but only four page-list entries.
    let fmr =
        t.e.alloc_fast_mr_pages(t.b.dev, t.b.pd, None, 1 << 30, 4)
            .unwrap();
    let table = t.addr(0x40000);
    let reg = |variant: u32, count: u32, table: u64| {
        SendOp::RegMr(RegMr {
            key: Lkey(fmr | variant),
            iova: 0,
            len: u64::from(count) << 12,
            access: RW,
            pages: PageSource::Table {
                table,
                count,
                page_shift: 12,
                first_offset: 0,
            },
        })
    };
    // A million pages: refused before a single entry is read.
    let qb = fresh(&mut t);
    t.send(t.b, qb, &SendWr::new(1, reg(1, 1 << 20, table)));
    assert_eq!(t.take(t.b, qb, 1).status, WcStatus::LocProtErr);
    assert!(t.e.mr(t.b.dev, fmr | 1).is_err(), "no key came of it");
    // Four pages whose list is half outside memory: the registration fails
    // rather than naming address 0, and nothing stays bound.
    let edge = t.addr(ARENA - 16);
    let qb = fresh(&mut t);
    t.send(t.b, qb, &SendWr::new(2, reg(2, 4, edge)));
    assert_eq!(t.take(t.b, qb, 2).status, WcStatus::LocProtErr);
    assert!(t.e.mr(t.b.dev, fmr | 2).is_err());
    // Four readable entries bind.
    let pages: Vec<u8> = (0..4u64)
        .flat_map(|i| t.addr(0x10000 + 0x2000 * i as usize).to_le_bytes())
        .collect();
    t.fill(0x40000, &pages);
    let qb = fresh(&mut t);
    t.send(t.b, qb, &SendWr::new(3, reg(3, 4, table)));
    assert_eq!(t.take(t.b, qb, 3).status, WcStatus::Success);
    let mr = t.e.mr(t.b.dev, fmr | 3).unwrap();
    assert_eq!(mr.runs.len(), 4);
    assert!(mr.runs.capacity() <= 4, "{}", mr.runs.capacity());
}

#[test]
fn queues_past_the_device_budget_are_refused_and_their_bytes_come_back() {
    let caps = QpCaps {
        max_send_wr: 64,
        max_recv_wr: 64,
        max_send_sge: 8,
        max_recv_sge: 8,
        max_inline_data: 256,
    };
    let one = caps.engine_bytes(false);
    assert!(
        one > 64 * (256 + 8 * 16),
        "slots hold their SGE and inline room"
    );
    // Room for two of the bench's QPs and a bit.
    let mut t = Bench::with(EngineConfig {
        max_queue_bytes: 2 * one + one / 2,
        allow_reserved_lkey: true,
        ..EngineConfig::default()
    });
    let a = t.a;
    let q1 = t.qp(a, QpType::Rc);
    let _q2 = t.qp(a, QpType::Rc);
    let init = QpInit {
        qp_type: QpType::Rc,
        pd: a.pd,
        send_cq: a.cq,
        recv_cq: a.cq,
        srq: None,
        caps,
        sq_sig_all: false,
        qpn: None,
    };
    let e = t.e.create_qp(a.dev, &init).unwrap_err();
    assert!(
        matches!(e, EngineError::OverBudget { need, .. } if need == one),
        "{e}"
    );
    assert!(t.e.create_srq(a.dev, None, a.pd, 1 << 16, 32).is_err());
    // A destroyed QP gives its bytes back.
    t.e.destroy_qp(a.dev, q1).unwrap();
    t.e.create_qp(a.dev, &init).unwrap();
    // A reset device has its whole budget again.
    t.e.reset_device(a.dev).unwrap();
    let pd = t.e.alloc_pd(a.dev).unwrap();
    let cq = t.e.create_cq(a.dev, None, 64).unwrap();
    for _ in 0..2 {
        let init = QpInit {
            pd,
            send_cq: cq,
            recv_cq: cq,
            ..init
        };
        t.e.create_qp(a.dev, &init).unwrap();
    }
}
