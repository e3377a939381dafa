//! One verbs program, two providers: each scenario here is written once
//! against `ernic-verbs` and runs on a fabric's native devices and on the
//! ionic device through this driver and a server over a real socket. What
//! a verbs user sees — bytes, statuses, opcodes, immediates, which
//! requests report — must be the same on both, and between the guests of
//! two servers joined by a mesh.

use std::sync::Arc;
use std::time::Duration;

use ernic_mesh::{Mesh, MeshConfig, Spec};
use ernic_verbs::*;

const T: Duration = Duration::from_secs(5);

mod common;

/// The two ends a scenario runs between: two devices of a fabric.
fn native() -> (Device, Device) {
    let f = Fabric::new();
    (
        f.open_device("::ffff:10.7.0.1".parse().unwrap()).unwrap(),
        f.open_device("::ffff:10.7.0.2".parse().unwrap()).unwrap(),
    )
}

/// The two ends on the ionic device: one driver (one guest), both ends
/// on it, as two processes of one guest would be.
fn ionic(name: &str, profile_spec: &str) -> (Device, Device) {
    let sock = common::serve(&format!("verbs-{name}"), profile_spec, "");
    let d = ernic_ionic_driver::provider::open(&sock, 32 << 20, None).unwrap();
    (d.clone(), d)
}

fn one(cq: &Cq) -> Wc {
    cq.wait_one(T).unwrap().expect("a completion in time")
}

fn none_within(cq: &Cq, d: Duration) {
    let got = cq.wait_one(d).unwrap();
    assert!(got.is_none(), "no completion expected, got {got:?}");
}

struct End {
    pd: Pd,
    scq: Cq,
    rcq: Cq,
    qp: Qp,
    mr: Mr,
}

fn end(dev: &Device) -> End {
    let pd = dev.alloc_pd().unwrap();
    let (scq, rcq) = (dev.create_cq(128).unwrap(), dev.create_cq(128).unwrap());
    let caps = QpCaps {
        max_send_wr: 64,
        max_recv_wr: 64,
        max_send_sge: 3,
        max_recv_sge: 2,
        max_inline_data: 32,
    };
    let qp = pd.create_qp(QpType::Rc, &scq, &rcq, caps).unwrap();
    let mr = pd.reg_mr(64 << 10, Access::ALL).unwrap();
    End {
        pd,
        scq,
        rcq,
        qp,
        mr,
    }
}

fn connected(a: &Device, b: &Device) -> (End, End) {
    let (x, y) = (end(a), end(b));
    x.qp.connect(b.gid(), y.qp.qpn(), Access::ALL).unwrap();
    y.qp.connect(a.gid(), x.qp.qpn(), Access::ALL).unwrap();
    (x, y)
}

/// Every operation between two RC QPs with separate send and receive CQs,
/// then an error and the flush of what was outstanding.
fn rdma_operations(a: &Device, b: &Device) {
    let (x, y) = connected(a, b);
    let info = x.qp.query().unwrap();
    assert_eq!(info.state, QpState::Rts);
    assert_eq!(info.dest.map(|d| d.qpn), Some(y.qp.qpn()));
    assert_eq!(info.qp_type, QpType::Rc);
    assert!(info.caps.max_send_wr >= 64 && info.caps.max_send_sge >= 3);

    // SEND gathered from three SGEs, scattered into two.
    x.mr.write(0, b"gathered ").unwrap();
    x.mr.write(100, b"from three ").unwrap();
    x.mr.write(200, b"places").unwrap();
    let src = [
        x.mr.sge(0, 9).unwrap(),
        x.mr.sge(100, 11).unwrap(),
        x.mr.sge(200, 6).unwrap(),
    ];
    let dst = [
        y.mr.sge(0x1000, 10).unwrap(),
        y.mr.sge(0x2000, 100).unwrap(),
    ];
    y.qp.post_recv(1, &dst).unwrap();
    x.qp.post_send(&SendWr::new(11, SendOp::Send).sgl(&src))
        .unwrap();
    let s = one(&x.scq);
    assert_eq!(
        (s.wr_id, s.status, s.opcode),
        (11, WcStatus::Success, WcOpcode::Send)
    );
    let r = one(&y.rcq);
    assert_eq!(
        (r.wr_id, r.status, r.opcode),
        (1, WcStatus::Success, WcOpcode::Recv)
    );
    assert_eq!((r.byte_len, r.imm), (26, None));
    let mut got = [0u8; 16];
    y.mr.read(0x1000, &mut got[..10]).unwrap();
    y.mr.read(0x2000, &mut got[10..]).unwrap();
    assert_eq!(&got, b"gathered from th");

    // SEND with an immediate; an inline SEND.
    y.qp.post_recv(2, &[y.mr.sge(0x3000, 64).unwrap()]).unwrap();
    y.qp.post_recv(3, &[y.mr.sge(0x3100, 64).unwrap()]).unwrap();
    x.qp.post_send(&SendWr::new(12, SendOp::SendImm(0xfeed)).sgl(&src[..1]))
        .unwrap();
    x.qp.post_send(&SendWr::new(13, SendOp::Send).inline(b"carried in the WQE"))
        .unwrap();
    assert_eq!(one(&x.scq).wr_id, 12);
    assert_eq!(one(&x.scq).wr_id, 13);
    let r = one(&y.rcq);
    assert_eq!((r.wr_id, r.imm, r.byte_len), (2, Some(0xfeed), 9));
    let r = one(&y.rcq);
    assert_eq!((r.wr_id, r.byte_len), (3, 18));
    let mut inl = [0u8; 18];
    y.mr.read(0x3100, &mut inl).unwrap();
    assert_eq!(&inl, b"carried in the WQE");

    // Ten unsignaled WRITEs and a signaled one: one completion, all bytes.
    for i in 0..11u64 {
        x.mr.write(0x4000 + 8 * i as usize, &(i + 1).to_le_bytes())
            .unwrap();
        let sge = [x.mr.sge(0x4000 + 8 * i as usize, 8).unwrap()];
        let wr = SendWr::new(
            100 + i,
            SendOp::Write(y.mr.remote(0x5000 + 8 * i as usize).unwrap()),
        )
        .sgl(&sge)
        .signaled(i == 10);
        x.qp.post_send(&wr).unwrap();
    }
    let s = one(&x.scq);
    assert_eq!((s.wr_id, s.opcode), (110, WcOpcode::RdmaWrite));
    none_within(&x.scq, Duration::from_millis(20));
    for i in 0..11u64 {
        let mut v = [0u8; 8];
        y.mr.read(0x5000 + 8 * i as usize, &mut v).unwrap();
        assert_eq!(u64::from_le_bytes(v), i + 1);
    }

    // WRITE with an immediate consumes a receive and reports it.
    y.qp.post_recv(4, &[]).unwrap();
    let sge = [x.mr.sge(0, 9).unwrap()];
    x.qp.post_send(&SendWr::new(14, SendOp::WriteImm(y.mr.remote(0x6000).unwrap(), 7)).sgl(&sge))
        .unwrap();
    assert_eq!(one(&x.scq).opcode, WcOpcode::RdmaWrite);
    let r = one(&y.rcq);
    assert_eq!(
        (r.wr_id, r.opcode, r.imm),
        (4, WcOpcode::RecvRdmaWithImm, Some(7))
    );
    y.mr.read(0x6000, &mut got[..9]).unwrap();
    assert_eq!(&got[..9], b"gathered ");

    // READ back, then both atomics.
    let sge = [x.mr.sge(0x7000, 9).unwrap()];
    x.qp.post_send(&SendWr::new(15, SendOp::Read(y.mr.remote(0x6000).unwrap())).sgl(&sge))
        .unwrap();
    let s = one(&x.scq);
    assert_eq!(
        (s.wr_id, s.opcode, s.status),
        (15, WcOpcode::RdmaRead, WcStatus::Success)
    );
    x.mr.read(0x7000, &mut got[..9]).unwrap();
    assert_eq!(&got[..9], b"gathered ");
    y.mr.write(0x8000, &40u64.to_le_bytes()).unwrap();
    let old = [x.mr.sge(0x8000, 8).unwrap()];
    let fa = SendOp::AtomicFa {
        remote: y.mr.remote(0x8000).unwrap(),
        add: 2,
    };
    x.qp.post_send(&SendWr::new(16, fa).sgl(&old)).unwrap();
    assert_eq!(one(&x.scq).opcode, WcOpcode::FetchAdd);
    let cas = SendOp::AtomicCas {
        remote: y.mr.remote(0x8000).unwrap(),
        compare: 42,
        swap: 99,
    };
    let old2 = [x.mr.sge(0x8008, 8).unwrap()];
    x.qp.post_send(&SendWr::new(17, cas).sgl(&old2)).unwrap();
    assert_eq!(one(&x.scq).opcode, WcOpcode::CompSwap);
    let mut v = [0u8; 8];
    x.mr.read(0x8000, &mut v).unwrap();
    assert_eq!(u64::from_le_bytes(v), 40);
    x.mr.read(0x8008, &mut v).unwrap();
    assert_eq!(u64::from_le_bytes(v), 42);
    y.mr.read(0x8000, &mut v).unwrap();
    assert_eq!(u64::from_le_bytes(v), 99);

    // The counters saw it.
    let k = a.counters();
    assert!(k.get(Counter::RdmaWrites) >= 12, "{k:?}");
    assert!(k.get(Counter::RdmaReads) >= 1 && k.get(Counter::RdmaAtomics) >= 2);
    assert!(x.qp.counters().unwrap().get(Counter::RdmaSends) >= 3);

    // A WRITE to a key the peer never gave fails; what follows is flushed,
    // and so are the receives still posted.
    x.qp.post_recv(20, &[x.mr.sge(0x9000, 8).unwrap()]).unwrap();
    x.qp.post_recv(21, &[x.mr.sge(0x9100, 8).unwrap()]).unwrap();
    let bad = RemoteAddr {
        addr: y.mr.addr(),
        rkey: Rkey(y.mr.rkey().0 ^ 0x5500),
    };
    x.qp.post_send(&SendWr::new(30, SendOp::Write(bad)).sgl(&sge))
        .unwrap();
    let s = one(&x.scq);
    assert_eq!((s.wr_id, s.status), (30, WcStatus::RemAccessErr));
    for i in 31..35 {
        // Posting to a QP in error is allowed; each completes flushed.
        x.qp.post_send(&SendWr::new(i, SendOp::Write(y.mr.remote(0).unwrap())).sgl(&sge))
            .unwrap();
    }
    let mut flushed = Vec::new();
    let mut wc = [Wc::EMPTY; 1];
    while flushed.len() < 4 {
        assert_eq!(x.scq.wait(&mut wc, T).unwrap(), 1, "flushed {flushed:?}");
        assert_eq!(wc[0].status, WcStatus::WrFlushErr);
        flushed.push(wc[0].wr_id);
    }
    assert_eq!(flushed, [31, 32, 33, 34]);
    let r: Vec<_> = [one(&x.rcq), one(&x.rcq)]
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect();
    assert_eq!(r, [(20, WcStatus::WrFlushErr), (21, WcStatus::WrFlushErr)]);
    drop((x.pd, y.pd));
}

/// Fast registration and invalidation, a shared receive queue, and UD
/// datagrams through an address handle.
fn keys_srq_and_datagrams(a: &Device, b: &Device) {
    let (x, y) = connected(a, b);

    // y binds a fresh key over part of its region; x writes through it.
    let fast = y.pd.alloc_fast_mr(1 << 16).unwrap();
    let reg = fast
        .reg_wr(1, 0x42, &y.mr, 0x1000..0x3000, Access::ALL)
        .unwrap();
    y.qp.post_send(&reg).unwrap();
    let s = one(&y.scq);
    assert_eq!(
        (s.wr_id, s.opcode, s.status),
        (1, WcOpcode::RegMr, WcStatus::Success)
    );
    let key = fast.key(0x42);
    x.mr.write(0, b"through a fresh key").unwrap();
    let sge = [x.mr.sge(0, 19).unwrap()];
    let to = RemoteAddr {
        addr: y.mr.addr() + 0x1100,
        rkey: Rkey(key.0),
    };
    x.qp.post_send(&SendWr::new(2, SendOp::Write(to)).sgl(&sge))
        .unwrap();
    assert_eq!(one(&x.scq).status, WcStatus::Success);
    let mut got = [0u8; 19];
    y.mr.read(0x1100, &mut got).unwrap();
    assert_eq!(&got, b"through a fresh key");
    y.qp.post_send(&SendWr::new(3, SendOp::LocalInv(key)))
        .unwrap();
    assert_eq!(one(&y.scq).opcode, WcOpcode::LocalInv);

    // A shared receive queue feeds two QPs of y.
    let srq = y.pd.create_srq(16, 1).unwrap();
    let caps = QpCaps {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let (s1, s2) = (end(a), end(a));
    let rq = b.create_cq(64).unwrap();
    let m1 =
        y.pd.create_qp_with(QpType::Rc, &y.scq, &rq, Some(&srq), caps, false)
            .unwrap();
    let m2 =
        y.pd.create_qp_with(QpType::Rc, &y.scq, &rq, Some(&srq), caps, false)
            .unwrap();
    for (s, m) in [(&s1, &m1), (&s2, &m2)] {
        s.qp.connect(b.gid(), m.qpn(), Access::ALL).unwrap();
        m.connect(a.gid(), s.qp.qpn(), Access::ALL).unwrap();
    }
    for i in 0..2u64 {
        srq.post_recv(
            50 + i,
            &[y.mr.sge(0x8000 + 0x100 * i as usize, 64).unwrap()],
        )
        .unwrap();
    }
    assert_eq!(srq.query().unwrap().1, 2);
    for (i, s) in [&s1, &s2].iter().enumerate() {
        s.mr.write(0, format!("via srq {i}").as_bytes()).unwrap();
        let sge = [s.mr.sge(0, 9).unwrap()];
        s.qp.post_send(&SendWr::new(60, SendOp::Send).sgl(&sge))
            .unwrap();
        assert_eq!(one(&s.scq).status, WcStatus::Success);
    }
    let (r1, r2) = (one(&rq), one(&rq));
    assert_eq!((r1.wr_id, r1.qpn), (50, m1.qpn()));
    assert_eq!((r2.wr_id, r2.qpn), (51, m2.qpn()));
    let mut g = [0u8; 9];
    y.mr.read(0x8100, &mut g).unwrap();
    assert_eq!(&g, b"via srq 1");

    // UD: a datagram through an address handle arrives after a GRH.
    let ud_caps = QpCaps {
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let ua = x.pd.create_qp(QpType::Ud, &x.scq, &x.rcq, ud_caps).unwrap();
    let ub = y.pd.create_qp(QpType::Ud, &y.scq, &y.rcq, ud_caps).unwrap();
    ua.ready_datagram(0x1111).unwrap();
    ub.ready_datagram(0x2222).unwrap();
    ub.post_recv(70, &[y.mr.sge(0xa000, 40 + 64).unwrap()])
        .unwrap();
    let ah = x.pd.create_ah(b.gid()).unwrap();
    x.mr.write(0x100, b"a datagram").unwrap();
    let sge = [x.mr.sge(0x100, 10).unwrap()];
    ua.post_send(
        &SendWr::new(71, SendOp::Send)
            .sgl(&sge)
            .to(ah.dest(ub.qpn(), 0x2222)),
    )
    .unwrap();
    assert_eq!(one(&x.scq).wr_id, 71);
    let r = one(&y.rcq);
    assert_eq!(
        (r.wr_id, r.status, r.src_qpn, r.grh),
        (70, WcStatus::Success, ua.qpn(), true)
    );
    assert_eq!(r.byte_len, 40 + 10);
    let mut d = [0u8; 10];
    y.mr.read(0xa000 + 40, &mut d).unwrap();
    assert_eq!(&d, b"a datagram");
}

/// The statuses the other scenarios do not reach: a receive whose SGE
/// names no region (the receiver's LocProtErr, the sender's RemOpErr), a
/// READ on a UC QP and a datagram through an address handle that does not
/// exist (LocQpOpErr).
fn more_error_statuses(a: &Device, b: &Device) {
    let (x, y) = connected(a, b);
    let bad = Sge {
        addr: y.mr.addr(),
        len: 64,
        lkey: Lkey(y.mr.lkey().0 ^ 0x5500),
    };
    y.qp.post_recv(1, &[bad]).unwrap();
    let sge = [x.mr.sge(0, 8).unwrap()];
    x.qp.post_send(&SendWr::new(2, SendOp::Send).sgl(&sge))
        .unwrap();
    assert_eq!(one(&x.scq).status, WcStatus::RemOpErr);
    let r = one(&y.rcq);
    assert_eq!((r.wr_id, r.status), (1, WcStatus::LocProtErr));

    // UC carries no READs.
    let caps = QpCaps {
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let (ua, ub) = (
        x.pd.create_qp(QpType::Uc, &x.scq, &x.rcq, caps).unwrap(),
        y.pd.create_qp(QpType::Uc, &y.scq, &y.rcq, caps).unwrap(),
    );
    ua.connect(b.gid(), ub.qpn(), Access::ALL).unwrap();
    ub.connect(a.gid(), ua.qpn(), Access::ALL).unwrap();
    let read = SendWr::new(3, SendOp::Read(y.mr.remote(0).unwrap())).sgl(&sge);
    ua.post_send(&read).unwrap();
    let s = one(&x.scq);
    assert_eq!((s.wr_id, s.status), (3, WcStatus::LocQpOpErr));

    // A datagram through an address handle nobody created.
    let (da, db) = (
        x.pd.create_qp(QpType::Ud, &x.scq, &x.rcq, caps).unwrap(),
        y.pd.create_qp(QpType::Ud, &y.scq, &y.rcq, caps).unwrap(),
    );
    da.ready_datagram(1).unwrap();
    db.ready_datagram(1).unwrap();
    let nowhere = UdDest {
        ah: AhId(0x7777),
        remote_qpn: db.qpn(),
        remote_qkey: 1,
    };
    da.post_send(&SendWr::new(4, SendOp::Send).sgl(&sge).to(nowhere))
        .unwrap();
    let s = one(&x.scq);
    assert_eq!((s.wr_id, s.status), (4, WcStatus::LocQpOpErr));
}

/// CPU time this thread has used.
#[allow(unsafe_code)]
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a timespec on the stack for the call's length.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// A thread blocked in `Cq::wait` sleeps (it does not spin) and wakes
/// when the completion comes.
fn a_blocked_wait_sleeps_until_the_completion(a: &Device, b: &Device) {
    let (x, y) = connected(a, b);
    y.qp.post_recv(1, &[y.mr.sge(0, 64).unwrap()]).unwrap();
    let rcq = y.rcq.clone();
    let waiter = std::thread::spawn(move || {
        let cpu = thread_cpu();
        let t = std::time::Instant::now();
        let got = rcq.wait_one(T).unwrap();
        (got, t.elapsed(), thread_cpu() - cpu)
    });
    std::thread::sleep(Duration::from_millis(300));
    let sge = [x.mr.sge(0, 8).unwrap()];
    x.qp.post_send(&SendWr::new(2, SendOp::Send).sgl(&sge))
        .unwrap();
    let (got, waited, cpu) = waiter.join().unwrap();
    assert_eq!(
        got.map(|w| (w.wr_id, w.status)),
        Some((1, WcStatus::Success))
    );
    assert!(
        waited >= Duration::from_millis(250),
        "woke early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "woke late: {waited:?}");
    assert!(
        cpu < Duration::from_millis(60),
        "the wait used {cpu:?} of CPU in {waited:?}"
    );
}

#[test]
fn a_blocked_wait_sleeps_native() {
    let (a, b) = native();
    a_blocked_wait_sleeps_until_the_completion(&a, &b);
}

#[test]
fn a_blocked_wait_sleeps_on_the_ionic_interrupt() {
    let (a, b) = ionic("wait", "shared-doorbells");
    a_blocked_wait_sleeps_until_the_completion(&a, &b);
}

#[test]
fn more_error_statuses_native() {
    let (a, b) = native();
    more_error_statuses(&a, &b);
}

#[test]
fn more_error_statuses_ionic() {
    let (a, b) = ionic("errors", "shared-doorbells");
    more_error_statuses(&a, &b);
}

#[test]
fn rdma_operations_native() {
    let (a, b) = native();
    rdma_operations(&a, &b);
}

#[test]
fn rdma_operations_ionic_trapped_doorbells() {
    let (a, b) = ionic("ops-trapped", "compat");
    rdma_operations(&a, &b);
}

#[test]
fn rdma_operations_ionic_shared_doorbells() {
    let (a, b) = ionic("ops-shared", "shared-doorbells");
    rdma_operations(&a, &b);
}

#[test]
fn keys_srq_and_datagrams_native() {
    let (a, b) = native();
    keys_srq_and_datagrams(&a, &b);
}

#[test]
fn keys_srq_and_datagrams_ionic() {
    let (a, b) = ionic("keys", "shared-doorbells");
    keys_srq_and_datagrams(&a, &b);
}

/// Key 0 (the ionic driver's reserved DMA key) is no verbs program's, as
/// no user process's is in Linux: a SEND or a receive naming it fails with
/// a local protection error on either provider, over the address of the
/// program's own region, and nothing arrives.
fn key_0_is_no_programs(a: &Device, b: &Device) {
    let (x, y) = connected(a, b);
    x.mr.write(0, b"behind key 0").unwrap();
    let key0 = |sge: Sge| Sge {
        lkey: Lkey(0),
        ..sge
    };
    y.qp.post_recv(1, &[y.mr.sge(0, 64).unwrap()]).unwrap();
    let sgl = [key0(x.mr.sge(0, 12).unwrap())];
    x.qp.post_send(&SendWr::new(11, SendOp::Send).sgl(&sgl))
        .unwrap();
    let s = one(&x.scq);
    assert_eq!((s.wr_id, s.status), (11, WcStatus::LocProtErr));
    let mut got = [0u8; 12];
    y.mr.read(0, &mut got).unwrap();
    assert_eq!(got, [0u8; 12], "the SEND from key 0 arrived");

    let (x, y) = connected(a, b);
    y.qp.post_recv(2, &[key0(y.mr.sge(0x100, 64).unwrap())])
        .unwrap();
    x.mr.write(0, b"into key 0..").unwrap();
    let sgl = [x.mr.sge(0, 12).unwrap()];
    x.qp.post_send(&SendWr::new(12, SendOp::Send).sgl(&sgl))
        .unwrap();
    assert_eq!(one(&y.rcq).status, WcStatus::LocProtErr);
    assert_eq!(one(&x.scq).status, WcStatus::RemOpErr);
    y.mr.read(0x100, &mut got).unwrap();
    assert_eq!(got, [0u8; 12], "the SEND landed through key 0");
}

#[test]
fn key_0_is_no_programs_native() {
    let (a, b) = native();
    key_0_is_no_programs(&a, &b);
}

#[test]
fn key_0_is_no_programs_ionic() {
    let (a, b) = ionic("key-0", "shared-doorbells");
    key_0_is_no_programs(&a, &b);
}

#[test]
#[allow(unsafe_code)]
fn user_memory_is_refused_on_the_ionic_device() {
    let (a, _) = ionic("usermem", "compat");
    let pd = a.alloc_pd().unwrap();
    let mut mine = vec![0u8; 4096];
    let ptr = std::ptr::NonNull::new(mine.as_mut_ptr()).unwrap();
    // SAFETY: `mine` outlives the attempt, which fails before any use.
    let r = unsafe { pd.reg_user_mr(ptr, mine.len(), Access::ALL) };
    let e = r.expect_err("the device cannot reach this memory");
    assert!(e.to_string().contains("Pd::reg_mr"), "{e}");
}

/// Two servers (in this process) joined by a real TCP mesh, a driver on
/// each: the ends are QPs of two guests, and everything crosses the mesh.
fn ionic_on_a_mesh(name: &str) -> (Device, Device, Vec<Arc<Mesh>>) {
    let (ga, gb): (Gid, Gid) = (
        "::ffff:10.0.2.1".parse().unwrap(),
        "::ffff:10.0.2.2".parse().unwrap(),
    );
    let quick = |spec| MeshConfig {
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(spec)
    };
    let manager = Arc::new(Mesh::start(quick(Spec::Manager { port: 0 })).unwrap());
    let port = manager.listen_addr().port();
    let worker = Arc::new(
        Mesh::start(quick(Spec::Worker {
            host: "127.0.0.1".into(),
            port,
        }))
        .unwrap(),
    );
    assert!(worker.wait_registered(T).is_some());
    let pa = common::serve_on_mesh(&format!("verbs-{name}-a"), manager.clone(), ga);
    let pb = common::serve_on_mesh(&format!("verbs-{name}-b"), worker.clone(), gb);
    let a = ernic_ionic_driver::provider::open(&pa, 16 << 20, Some(ga)).unwrap();
    let b = ernic_ionic_driver::provider::open(&pb, 16 << 20, Some(gb)).unwrap();
    // Each server learns the other's guest GID through the mesh.
    let end = std::time::Instant::now() + T;
    while manager.owner(&gb).is_none() || worker.owner(&ga).is_none() {
        assert!(
            std::time::Instant::now() < end,
            "the GIDs never crossed the mesh"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (a, b, vec![manager, worker])
}

#[test]
fn rdma_operations_ionic_across_a_mesh() {
    let (a, b, _meshes) = ionic_on_a_mesh("ops-mesh");
    rdma_operations(&a, &b);
}

#[test]
fn more_error_statuses_ionic_across_a_mesh() {
    let (a, b, _meshes) = ionic_on_a_mesh("errors-mesh");
    more_error_statuses(&a, &b);
}

#[test]
fn keys_srq_and_datagrams_ionic_across_a_mesh() {
    let (a, b, _meshes) = ionic_on_a_mesh("keys-mesh");
    keys_srq_and_datagrams(&a, &b);
}
