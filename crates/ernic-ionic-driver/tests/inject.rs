//! The emulated ionic device's fault injection, driven through the
//! userspace driver: the same workload on a fresh device with the same
//! spec fails the same way twice. `stats_vals:at=2` fails the second of
//! three counter reads with the injected admin status; `send_err=
//! rnr_retry_exc:at=3` fails the third of five RC WRITEs and flushes the
//! two after it; `dma_fault:every=2` fails every second WRITE with a local
//! protection error (each WRITE on a fresh QP pair: 1 and 3 succeed; all on
//! one QP: 2 fails and 3-4 are flushed); `admin_err=2:at=1` fails the first
//! CREATE_QP and the device goes on serving. Each test checks completions
//! (wr_id and status, in order), which WRITEs landed, the device's
//! requester counters and the injector's `seen`/`fired` counts.

use std::sync::Arc;

use ernic_core::inject::Injector;
use ernic_core::{Completion, Counter, SendOp, SendWr, WcStatus};
use ernic_ionic::function::IonicFunction;
use ernic_ionic::fw::admin_op;
use ernic_ionic::profile;
use ernic_ionic_driver::{Buf, Cq, Driver, Error, Qp};

mod common;

use ernic_ionic::rdmadev::INJECTED_STATUS;

/// A fresh device with `spec` armed, a driver attached to it, and the
/// injector (for its report).
fn device(name: &str, spec: &str) -> (Driver, Arc<Injector>) {
    let inj = Arc::new(Injector::parse(spec).unwrap());
    let id = profile::load("shared-doorbells").unwrap();
    let f = IonicFunction::new(id)
        .with_shared_doorbells()
        .unwrap()
        .with_injector(inj.clone());
    let sock = common::serve_function(name, f);
    let d = Driver::attach(&sock, 8 << 20).unwrap();
    (d, inj)
}

/// `(seen, fired)` of each armed fault.
type Report = Vec<(u64, u64)>;

/// The injector's report, as [`Report`].
fn counts(inj: &Injector) -> Report {
    inj.report().iter().map(|f| (f.seen, f.fired)).collect()
}

/// Two connected RC QPs on `cq`.
fn pair(d: &mut Driver, cq: &Cq) -> (Qp, Qp) {
    let a = d.create_qp(cq, 5).unwrap();
    let b = d.create_qp(cq, 5).unwrap();
    d.connect(&a, b.qpn()).unwrap();
    d.connect(&b, a.qpn()).unwrap();
    (a, b)
}

/// `(wr_id, status)` of each completion, in the order they came.
fn outcome(wcs: &[Completion]) -> Vec<(u64, WcStatus)> {
    wcs.iter().map(|c| (c.wr_id, c.status)).collect()
}

/// The device's requester counters: WRITEs, WRITEs received, requester
/// completions in success, in error, flushed.
fn req_counters(d: &mut Driver) -> [u64; 5] {
    let c = d.counters(None).unwrap();
    [
        Counter::RdmaWrites,
        Counter::RxWriteRequests,
        Counter::ReqCqeSuccess,
        Counter::ReqCqeError,
        Counter::ReqCqeFlushError,
    ]
    .map(|k| c.get(k))
}

/// Whether the 256-byte WRITE `i` (to `0x8000 + 256 * i`) landed its
/// 0xa5 payload, for each `i`; a target not written stays zero.
fn landed(d: &Driver, buf: &Buf, ids: std::ops::RangeInclusive<u64>) -> Vec<bool> {
    ids.map(|i| {
        let mut got = [0u8; 256];
        assert!(d.read(buf, 0x8000 + 256 * i, &mut got));
        assert!(got == [0xa5; 256] || got == [0; 256], "WRITE {i}: {got:?}");
        got == [0xa5; 256]
    })
    .collect()
}

/// Three counter reads: what each gave (`Ok(rdma_writes)` or the error).
fn stats_run(n: u32) -> (Vec<Result<u64, String>>, Report) {
    let (mut d, inj) = device(&format!("inject-stats-{n}"), "stats_vals:at=2");
    let mut out = Vec::new();
    for _ in 0..3 {
        match d.counters(None) {
            Ok(c) => out.push(Ok(c.get(ernic_core::Counter::RdmaWrites))),
            Err(Error::Admin { op, status }) => {
                assert_eq!(op, admin_op::STATS_VALS);
                assert_eq!(status, INJECTED_STATUS);
                out.push(Err(format!("admin {op} status {status}")));
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    let report = counts(&inj);
    // The device still answers after the fault (a fourth STATS_VALS).
    assert!(d.counters(None).is_ok());
    assert_eq!(counts(&inj), vec![(4, 1)]);
    (out, report)
}

#[test]
fn stats_vals_at_2_fails_the_second_counter_read_the_same_way_twice() {
    let want_status = format!("admin {} status {}", admin_op::STATS_VALS, INJECTED_STATUS);
    for n in 0..2 {
        let (out, report) = stats_run(n);
        assert_eq!(out, vec![Ok(0), Err(want_status.clone()), Ok(0)], "run {n}");
        // Three STATS_VALS seen (STATS_HDRS is not counted), one fired.
        assert_eq!(report, vec![(3, 1)], "run {n}");
    }
}

/// Five WRITEs on one RC QP, all posted, then their completions.
fn send_err_run(n: u32) -> (Vec<(u64, WcStatus)>, Report) {
    let (mut d, inj) = device(&format!("inject-send-{n}"), "send_err=rnr_retry_exc:at=3");
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, _b) = pair(&mut d, &cq);
    let buf = d.alloc(64 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    assert!(d.write(&buf, 0, &[0xa5; 256]));
    for i in 1..=5u64 {
        let to = mr.remote(0x8000 + 256 * i);
        d.post_send(
            &mut a,
            &SendWr::new(i, SendOp::Write(to)).sgl(&[mr.sge(0, 256)]),
        )
        .unwrap();
    }
    let wcs = common::completions(&mut d, &mut cq, &[1, 2, 3, 4, 5]);
    assert_eq!(landed(&d, &buf, 1..=5), [true, true, false, false, false]);
    assert_eq!(req_counters(&mut d), [2, 2, 2, 1, 2]);
    (outcome(&wcs), counts(&inj))
}

#[test]
fn send_err_at_3_fails_the_third_write_and_flushes_the_rest_the_same_way_twice() {
    // The rule: WQE 3 completes with the fault's status; an error moves
    // the RC QP to ERR, so the WQEs after it are flushed.
    let want = vec![
        (1, WcStatus::Success),
        (2, WcStatus::Success),
        (3, WcStatus::RnrRetryExcErr),
        (4, WcStatus::WrFlushErr),
        (5, WcStatus::WrFlushErr),
    ];
    for n in 0..2 {
        let (got, report) = send_err_run(n);
        assert_eq!(got, want, "run {n}");
        // Every WQE the engine took was counted, the flushed ones too.
        assert_eq!(report, vec![(5, 1)], "run {n}");
    }
}

/// Four WRITEs, each on a fresh connected QP pair (so one's error cannot
/// flush another), each waited for before the next.
fn dma_run(n: u32) -> (Vec<(u64, WcStatus)>, Report) {
    let (mut d, inj) = device(&format!("inject-dma-{n}"), "dma_fault:every=2");
    let mut cq = d.create_cq(6).unwrap();
    let buf = d.alloc(64 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    assert!(d.write(&buf, 0, &[0xa5; 256]));
    let mut all = Vec::new();
    for i in 1..=4u64 {
        let (mut a, _b) = pair(&mut d, &cq);
        let to = mr.remote(0x8000 + 256 * i);
        d.post_send(
            &mut a,
            &SendWr::new(10 + i, SendOp::Write(to)).sgl(&[mr.sge(0, 256)]),
        )
        .unwrap();
        let wcs = common::completions(&mut d, &mut cq, &[10 + i]);
        all.extend(outcome(&wcs));
    }
    assert_eq!(landed(&d, &buf, 1..=4), [true, false, true, false]);
    assert_eq!(req_counters(&mut d), [2, 2, 2, 2, 0]);
    (all, counts(&inj))
}

#[test]
fn dma_fault_every_2_fails_every_second_write_the_same_way_twice() {
    let want = vec![
        (11, WcStatus::Success),
        (12, WcStatus::LocProtErr),
        (13, WcStatus::Success),
        (14, WcStatus::LocProtErr),
    ];
    for n in 0..2 {
        let (got, report) = dma_run(n);
        assert_eq!(got, want, "run {n}");
        assert_eq!(report, vec![(4, 2)], "run {n}");
    }
}

/// Four WRITEs posted on one RC QP, then their completions.
fn dma_one_qp_run(n: u32) -> (Vec<(u64, WcStatus)>, Report) {
    let (mut d, inj) = device(&format!("inject-dma1-{n}"), "dma_fault:every=2");
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, _b) = pair(&mut d, &cq);
    let buf = d.alloc(64 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    assert!(d.write(&buf, 0, &[0xa5; 256]));
    for i in 1..=4u64 {
        let to = mr.remote(0x8000 + 256 * i);
        d.post_send(
            &mut a,
            &SendWr::new(i, SendOp::Write(to)).sgl(&[mr.sge(0, 256)]),
        )
        .unwrap();
    }
    let wcs = common::completions(&mut d, &mut cq, &[1, 2, 3, 4]);
    assert_eq!(landed(&d, &buf, 1..=4), [true, false, false, false]);
    assert_eq!(req_counters(&mut d), [1, 1, 1, 1, 2]);
    (outcome(&wcs), counts(&inj))
}

#[test]
fn dma_fault_every_2_on_one_qp_fails_the_second_write_and_flushes_the_rest_twice() {
    // WQE 2 fails with a local protection error and moves the RC QP to
    // ERR, so 3 and 4 are flushed; the device still read WQE 4, so the
    // fault counted it and fired on it, but its completion is a flush.
    let want = vec![
        (1, WcStatus::Success),
        (2, WcStatus::LocProtErr),
        (3, WcStatus::WrFlushErr),
        (4, WcStatus::WrFlushErr),
    ];
    for n in 0..2 {
        let (got, report) = dma_one_qp_run(n);
        assert_eq!(got, want, "run {n}");
        assert_eq!(report, vec![(4, 2)], "run {n}");
    }
}

/// The first CREATE_QP fails; the next two succeed and a WRITE between
/// them completes.
fn admin_run(n: u32) -> (String, WcStatus, Report) {
    let spec = format!("admin_err={}:at=1", admin_op::CREATE_QP);
    let (mut d, inj) = device(&format!("inject-admin-{n}"), &spec);
    let mut cq = d.create_cq(6).unwrap();
    let err = match d.create_qp(&cq, 5) {
        Err(Error::Admin { op, status }) => format!("admin {op} status {status}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("the first CREATE_QP succeeded"),
    };
    let (mut a, _b) = pair(&mut d, &cq);
    let buf = d.alloc(16 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    d.post_send(
        &mut a,
        &SendWr::new(7, SendOp::Write(mr.remote(0x2000))).sgl(&[mr.sge(0, 64)]),
    )
    .unwrap();
    let wcs = common::completions(&mut d, &mut cq, &[7]);
    assert_eq!(wcs.len(), 1, "{wcs:?}");
    assert_eq!(req_counters(&mut d), [1, 1, 1, 0, 0]);
    (err, wcs[0].status, counts(&inj))
}

#[test]
fn admin_err_on_create_qp_at_1_fails_the_first_create_and_the_device_serves_on() {
    let want_err = format!("admin {} status {}", admin_op::CREATE_QP, INJECTED_STATUS);
    for n in 0..2 {
        let (err, status, report) = admin_run(n);
        assert_eq!(err, want_err, "run {n}");
        assert_eq!(status, WcStatus::Success, "run {n}");
        // Three CREATE_QPs counted (the failed one and the pair's two).
        assert_eq!(report, vec![(3, 1)], "run {n}");
    }
}
