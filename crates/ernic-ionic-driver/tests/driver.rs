//! The userspace driver against a server over a real socket: bring-up,
//! objects through the admin queue, and RDMA between two QPs of one
//! "guest" — SEND into a posted receive, WRITE, READ, fetch-and-add —
//! with doorbells trapped, and with the shared doorbell pages.

use std::time::{Duration, Instant};

use ernic_core::{Completion, Qpn, RemoteAddr, Rkey, SendOp, SendWr, WcOpcode, WcStatus};
use ernic_ionic_driver::{Cq, Driver, Qp};

mod common;

fn serve(name: &str, profile_spec: &str) -> std::path::PathBuf {
    common::serve(name, profile_spec, "")
}

/// As `serve`, with `ini` (key = value lines) layered over the profile.
fn serve_with(name: &str, profile_spec: &str, ini: &str) -> std::path::PathBuf {
    common::serve(name, profile_spec, ini)
}

/// Two RC QPs on `cq` with `2^depth_log2`-deep rings, connected to each
/// other.
fn rc_pair(d: &mut Driver, cq: &Cq, depth_log2: u8) -> (Qp, Qp) {
    let a = d.create_qp(cq, depth_log2).unwrap();
    let b = d.create_qp(cq, depth_log2).unwrap();
    d.connect(&a, b.qpn()).unwrap();
    d.connect(&b, a.qpn()).unwrap();
    (a, b)
}

/// Polls until `n` completions came (bounded).
fn wait(d: &mut Driver, cq: &mut Cq, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut buf = [Completion::EMPTY; 8];
    let end = Instant::now() + Duration::from_secs(5);
    while got.len() < n {
        let k = d.poll_cq(cq, &mut buf);
        got.extend_from_slice(&buf[..k]);
        assert!(Instant::now() < end, "{} of {n} completions", got.len());
    }
    got
}

fn rdma_between_two_qps(profile_spec: &str) {
    let path = serve(profile_spec, profile_spec);
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    assert_eq!(d.shared_doorbells(), profile_spec.contains("shared"));
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, mut b) = rc_pair(&mut d, &cq, 5);
    let buf = d.alloc(64 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64, len: u32| mr.sge(off, len);
    let remote = |off: u64| mr.remote(off);
    assert!(d.write(&buf, 0, b"hello through the ionic rings"));

    // SEND from a into a receive posted on b.
    d.post_recv(&mut b, 77, sge(0x1000, 256)).unwrap();
    d.post_send(&mut a, &SendWr::new(1, SendOp::Send).sgl(&[sge(0, 29)]))
        .unwrap();
    let wcs = wait(&mut d, &mut cq, 2);
    let recv = wcs.iter().find(|w| w.opcode == WcOpcode::Recv).unwrap();
    assert_eq!(
        (recv.wr_id, recv.byte_len, recv.status),
        (77, 29, WcStatus::Success)
    );
    let send = wcs.iter().find(|w| w.wr_id == 1).unwrap();
    assert_eq!(send.status, WcStatus::Success);
    let mut got = [0u8; 29];
    d.read(&buf, 0x1000, &mut got);
    assert_eq!(&got, b"hello through the ionic rings");

    // WRITE, READ, fetch-and-add, in order on one QP.
    d.post_send(
        &mut a,
        &SendWr::new(2, SendOp::Write(remote(0x2000))).sgl(&[sge(0, 5)]),
    )
    .unwrap();
    d.post_send(
        &mut a,
        &SendWr::new(3, SendOp::Read(remote(0x2000))).sgl(&[sge(0x3000, 5)]),
    )
    .unwrap();
    d.write(&buf, 0x4000, &40u64.to_le_bytes());
    let fa = SendOp::AtomicFa {
        remote: remote(0x4000),
        add: 2,
    };
    d.post_send(&mut a, &SendWr::new(4, fa).sgl(&[sge(0x4008, 8)]))
        .unwrap();
    let wcs = wait(&mut d, &mut cq, 3);
    let ids: Vec<u64> = wcs.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [2, 3, 4], "in order, by sequence number");
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success), "{wcs:?}");
    let mut five = [0u8; 5];
    d.read(&buf, 0x3000, &mut five);
    assert_eq!(&five, b"hello");
    let mut v = [0u8; 8];
    d.read(&buf, 0x4000, &mut v);
    assert_eq!(u64::from_le_bytes(v), 42);
    d.read(&buf, 0x4008, &mut v);
    assert_eq!(u64::from_le_bytes(v), 40);

    // A WRITE to a key that does not exist: a remote access error.
    let bad = RemoteAddr {
        addr: buf.addr(),
        rkey: Rkey(0x7700),
    };
    d.post_send(
        &mut a,
        &SendWr::new(5, SendOp::Write(bad)).sgl(&[sge(0, 5)]),
    )
    .unwrap();
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (5, WcStatus::RemAccessErr));
}

#[test]
fn rdma_between_two_qps_with_trapped_doorbells() {
    rdma_between_two_qps("compat");
}

#[test]
fn rdma_between_two_qps_with_shared_doorbell_pages() {
    rdma_between_two_qps("compat,shared-doorbells");
}

/// A shared receive queue (ernic's admin commands; the stock driver has
/// none): two QPs draw their receives from it, the SENDs to each land in
/// its buffers in posting order with the posted wr_ids, the limit is set
/// and read back with the receives outstanding, and an SRQ in use cannot
/// be destroyed.
#[test]
fn two_qps_share_a_receive_queue() {
    let path = serve("srq", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let mut srq = d.create_srq(5, 2).unwrap();
    assert!(srq.id() >= 1024, "SRQ ids lie above the QP ids");
    let mut a = d.create_qp(&cq, 5).unwrap();
    let b = d.create_qp_with_srq(&cq, 5, &srq).unwrap();
    let c = d.create_qp_with_srq(&cq, 5, &srq).unwrap();
    d.connect(&a, b.qpn()).unwrap();
    d.connect(&b, a.qpn()).unwrap();
    let mut a2 = d.create_qp(&cq, 5).unwrap();
    d.connect(&a2, c.qpn()).unwrap();
    d.connect(&c, a2.qpn()).unwrap();
    let buf = d.alloc(64 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64, len: u32| mr.sge(off, len);
    for i in 0..4u64 {
        d.post_srq_recv(&mut srq, 100 + i, sge(0x1000 * (i + 1), 64))
            .unwrap();
    }
    assert_eq!(d.query_srq(&srq).unwrap(), (2, 4));
    d.write(&buf, 0, b"to b via the srq");
    d.write(&buf, 0x100, b"to c via the srq");
    d.post_send(&mut a, &SendWr::new(1, SendOp::Send).sgl(&[sge(0, 16)]))
        .unwrap();
    d.post_send(
        &mut a2,
        &SendWr::new(2, SendOp::Send).sgl(&[sge(0x100, 16)]),
    )
    .unwrap();
    let wcs = wait(&mut d, &mut cq, 4);
    let recvs: Vec<(u32, u64)> = wcs
        .iter()
        .filter(|w| w.opcode == WcOpcode::Recv)
        .map(|w| (w.qpn.0, w.wr_id))
        .collect();
    assert_eq!(recvs, [(b.qpn().0, 100), (c.qpn().0, 101)]);
    let mut got = [0u8; 16];
    d.read(&buf, 0x1000, &mut got);
    assert_eq!(&got, b"to b via the srq");
    d.read(&buf, 0x2000, &mut got);
    assert_eq!(&got, b"to c via the srq");
    d.modify_srq(&srq, 1).unwrap();
    assert_eq!(d.query_srq(&srq).unwrap(), (1, 2));
    // QPs still draw from it: it cannot go.
    let err = d.destroy_srq(srq).unwrap_err();
    assert!(
        matches!(err, ernic_ionic_driver::Error::Admin { status: 3, .. }),
        "{err}"
    );
}

/// Immediate data both ways (SEND_IMM, WRITE_IMM consuming a receive),
/// enough traffic to wrap the send, receive and completion rings many
/// times (colors), then every object destroyed, the CQ after its QPs.
#[test]
fn immediates_ring_wraps_and_destroying_everything() {
    let path = serve("imm", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(3).unwrap(); // 8 CQEs: wraps every 4 round trips
    let (mut a, mut b) = rc_pair(&mut d, &cq, 2); // 4-deep rings
    let buf = d.alloc(16 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64, len: u32| mr.sge(off, len);
    for i in 0..100u32 {
        d.post_recv(&mut b, u64::from(i), sge(0x1000, 64)).unwrap();
        let op = if i % 2 == 0 {
            SendOp::SendImm(0xabc0_0000 | i)
        } else {
            SendOp::WriteImm(mr.remote(0x2000), 0xabc0_0000 | i)
        };
        d.post_send(&mut a, &SendWr::new(u64::from(i), op).sgl(&[sge(0, 16)]))
            .unwrap();
        let wcs = wait(&mut d, &mut cq, 2);
        let recv = wcs.iter().find(|w| w.qpn == b.qpn()).unwrap();
        assert_eq!(recv.imm, Some(0xabc0_0000 | i), "round {i}: {wcs:?}");
        let want = if i % 2 == 0 {
            WcOpcode::Recv
        } else {
            WcOpcode::RecvRdmaWithImm
        };
        assert_eq!((recv.wr_id, recv.opcode), (u64::from(i), want));
        assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
    }
    d.destroy_qp(a).unwrap();
    d.destroy_qp(b).unwrap();
    d.dereg_mr(mr).unwrap();
    d.destroy_cq(cq).unwrap();
}

/// Fast registration: an MR allocated empty is bound by a REG_MR work
/// request to a buffer under a new key; the peer WRITEs through that key;
/// after LOCAL_INV the same WRITE fails with a remote access error.
#[test]
fn fast_registration_and_invalidation() {
    let path = serve("frmr", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, mut b) = rc_pair(&mut d, &cq, 5);
    let src = d.alloc(4096).unwrap();
    let src_mr = d.reg_mr(src).unwrap();
    let target = d.alloc(8192).unwrap();
    let fast = d.alloc_fast_mr(2).unwrap();
    let key = d
        .post_reg_mr(&mut b, 10, fast, 0x2a, &target, 8192)
        .unwrap();
    assert_eq!(key & 0xff, 0x2a);
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (10, WcStatus::Success));
    d.write(&src, 0, b"via a fresh key");
    let write = |at: u64| {
        SendOp::Write(RemoteAddr {
            addr: target.addr() + at,
            rkey: Rkey(key),
        })
    };
    let sge = [src_mr.sge(0, 15)];
    d.post_send(&mut a, &SendWr::new(11, write(100)).sgl(&sge))
        .unwrap();
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (11, WcStatus::Success));
    let mut got = [0u8; 15];
    d.read(&target, 100, &mut got);
    assert_eq!(&got, b"via a fresh key");
    // Invalidated, the key no longer reaches the buffer.
    d.post_local_inv(&mut b, 12, key).unwrap();
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (12, WcStatus::Success));
    d.post_send(&mut a, &SendWr::new(13, write(200)).sgl(&sge))
        .unwrap();
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (13, WcStatus::RemAccessErr));
}

/// Linux's `ionic_alloc_mr` creates a fast-registration MR with no size
/// (map_count 0, `IONIC_MRF_PHYS_MR`) and names the page list only in each
/// REG_MR: such an MR binds a multi-page buffer (as nvme-rdma's do for
/// every command), and a list past the unsized limit is refused.
#[test]
fn an_unsized_fast_registration_mr_binds_what_linux_registers() {
    let path = serve("frmr0", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, mut b) = rc_pair(&mut d, &cq, 5);
    let src = d.alloc(4096).unwrap();
    let src_mr = d.reg_mr(src).unwrap();
    let target = d.alloc(16384).unwrap();
    let fast = d.alloc_fast_mr(0).unwrap();
    let key = d
        .post_reg_mr(&mut b, 20, fast, 0x07, &target, 16384)
        .unwrap();
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (20, WcStatus::Success));
    d.write(&src, 0, b"four pages");
    let sge = [src_mr.sge(0, 10)];
    let at = SendOp::Write(RemoteAddr {
        addr: target.addr() + 3 * 4096 + 5,
        rkey: Rkey(key),
    });
    d.post_send(&mut a, &SendWr::new(21, at).sgl(&sge)).unwrap();
    let wcs = wait(&mut d, &mut cq, 1);
    assert_eq!((wcs[0].wr_id, wcs[0].status), (21, WcStatus::Success));
    let mut got = [0u8; 10];
    d.read(&target, 3 * 4096 + 5, &mut got);
    assert_eq!(&got, b"four pages");
}

/// Datagrams: a UD QP sends through an address handle to another UD QP
/// (and the GSI QP, QP 1, to it as well); each receive starts with a
/// 40-byte GRH in RoCE v2's IPv4 form naming the two GIDs, the completion
/// names the sending QP; a datagram with the wrong Q_Key is dropped while
/// its send still completes.
#[test]
fn ud_and_gsi_datagrams_arrive_with_a_grh() {
    let path = serve("ud", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let mut a = d.create_ud_qp(&cq, 5, false, 0x1111).unwrap();
    let mut b = d.create_ud_qp(&cq, 5, false, 0x2222).unwrap();
    let mut gsi = d.create_ud_qp(&cq, 5, true, 0x8001_0000).unwrap();
    assert_eq!(gsi.qpn().0, 1);
    let ah = d.create_ah("::ffff:10.0.0.1".parse().unwrap()).unwrap();
    let buf = d.alloc(16 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64, len: u32| mr.sge(off, len);
    d.write(&buf, 0, b"a datagram");
    for i in 0..3u64 {
        d.post_recv(&mut b, 20 + i, sge(0x1000 * (i + 1), 256))
            .unwrap();
    }
    // A wrong Q_Key: dropped at b; a's send completes anyway.
    d.post_send_ud(&mut a, 1, ah, b.qpn(), 0x9999, sge(0, 10))
        .unwrap();
    let w = wait(&mut d, &mut cq, 1);
    assert_eq!(
        (w[0].qpn, w[0].wr_id, w[0].status),
        (a.qpn(), 1, WcStatus::Success)
    );
    // The right one, from a, then from the GSI QP.
    d.post_send_ud(&mut a, 2, ah, b.qpn(), 0x2222, sge(0, 10))
        .unwrap();
    d.post_send_ud(&mut gsi, 3, ah, b.qpn(), 0x2222, sge(0, 10))
        .unwrap();
    let w = wait(&mut d, &mut cq, 4);
    let recvs: Vec<&Completion> = w.iter().filter(|c| c.qpn == b.qpn()).collect();
    assert_eq!(recvs.len(), 2, "{w:?}");
    for (r, from, slot) in [(recvs[0], a.qpn(), 1u64), (recvs[1], gsi.qpn(), 2)] {
        assert_eq!((r.wr_id, r.src_qpn, r.byte_len), (19 + slot, from, 40 + 10));
        assert!(r.grh && r.grh_ipv4, "{r:?}");
        let mut grh = [0u8; 50];
        d.read(&buf, 0x1000 * slot, &mut grh);
        assert_eq!(grh[20], 0x45, "an IPv4 header in the GRH's last 20 bytes");
        assert_eq!(&grh[32..36], &[10, 0, 0, 1], "source");
        assert_eq!(&grh[36..40], &[10, 0, 0, 1], "destination");
        assert_eq!(&grh[40..50], b"a datagram");
    }
}

/// Error statuses as CQEs, as hardware reports them: a SEND larger than
/// the receive buffer (the receiver's length error, the sender's remote
/// invalid request), a misaligned atomic (remote invalid request), an SGE
/// outside its MR (local protection error) — each on a fresh QP pair,
/// since an error puts an RC QP in the error state.
#[test]
fn error_statuses_arrive_as_cqes() {
    let path = serve("errors", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(7).unwrap();
    let buf = d.alloc(16 << 10).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64, len: u32| mr.sge(off, len);
    let remote = |off: u64| mr.remote(off);
    let pair = |d: &mut Driver, cq: &Cq| rc_pair(d, cq, 4);
    // 64 bytes into a 16-byte receive.
    let (mut a, mut b) = pair(&mut d, &cq);
    d.post_recv(&mut b, 1, sge(0x1000, 16)).unwrap();
    d.post_send(&mut a, &SendWr::new(2, SendOp::Send).sgl(&[sge(0, 64)]))
        .unwrap();
    let w = wait(&mut d, &mut cq, 2);
    let st = |q: Qpn| w.iter().find(|c| c.qpn == q).unwrap().status;
    assert_eq!(st(b.qpn()), WcStatus::LocLenErr);
    assert_eq!(st(a.qpn()), WcStatus::RemInvReqErr);
    // A fetch-and-add on an address that is not 8-byte aligned.
    let (mut a, _b) = pair(&mut d, &cq);
    let fa = SendOp::AtomicFa {
        remote: remote(0x2004),
        add: 1,
    };
    d.post_send(&mut a, &SendWr::new(3, fa).sgl(&[sge(0x3000, 8)]))
        .unwrap();
    let w = wait(&mut d, &mut cq, 1);
    assert_eq!((w[0].wr_id, w[0].status), (3, WcStatus::RemInvReqErr));
    // A local SGE past the end of its MR.
    let (mut a, _b) = pair(&mut d, &cq);
    let past = [sge(16 << 10, 8)];
    let wr = SendWr::new(4, SendOp::Write(remote(0))).sgl(&past);
    d.post_send(&mut a, &wr).unwrap();
    let w = wait(&mut d, &mut cq, 1);
    assert_eq!((w[0].wr_id, w[0].status), (4, WcStatus::LocProtErr));
}

/// 5000 WRITEs, 64 in flight, each from a source slot reused as soon as
/// its completion arrives and to a target of its own: every one lands
/// with its own value, so no completion is seen before its WRITE ran (a
/// CQE read half old, or written color first, would report one early).
fn many_writes_land_before_they_complete(profile_spec: &str) {
    let path = serve(&format!("writes-{}", profile_spec.len()), profile_spec);
    let mut d = Driver::attach(&path, 16 << 20).unwrap();
    let mut cq = d.create_cq(8).unwrap(); // 256 CQEs: many wraps
    let (mut a, _b) = rc_pair(&mut d, &cq, 10);
    let buf = d.alloc(2 << 20).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let n = 5000u64;
    let (mut posted, mut done) = (0u64, 0u64);
    let mut out = [Completion::EMPTY; 64];
    let end = Instant::now() + Duration::from_secs(20);
    while done < n {
        while posted < n && posted - done < 64 {
            let i = posted;
            d.write(&buf, (i % 64) * 64, &i.to_le_bytes());
            let sge = [mr.sge((i % 64) * 64, 8)];
            let to = mr.remote((1 << 20) + i * 8);
            d.post_send(&mut a, &SendWr::new(i, SendOp::Write(to)).sgl(&sge))
                .unwrap();
            posted += 1;
        }
        let k = d.poll_cq(&mut cq, &mut out);
        for w in &out[..k] {
            assert_eq!((w.wr_id, w.status), (done, WcStatus::Success));
            done += 1;
        }
        assert!(Instant::now() < end, "stalled at {done} of {posted}");
    }
    for i in 0..n {
        let mut v = [0u8; 8];
        d.read(&buf, (1 << 20) + i * 8, &mut v);
        assert_eq!(u64::from_le_bytes(v), i, "WRITE {i}");
    }
}

#[test]
fn many_writes_land_before_they_complete_trapped() {
    many_writes_land_before_they_complete("compat");
}

#[test]
fn many_writes_land_before_they_complete_shared() {
    many_writes_land_before_they_complete("compat,shared-doorbells");
}

/// CQ events: an armed CQ's first completion puts an EQE naming it on the
/// EQ and raises the EQ's interrupt (the driver's eventfd counts it);
/// arming again while completions wait fires at once (a level); unarmed,
/// completions raise nothing.
#[test]
fn an_armed_cq_raises_an_event() {
    let path = serve("events", "compat");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, mut b) = rc_pair(&mut d, &cq, 5);
    let buf = d.alloc(8192).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64| mr.sge(off, 8);
    let t = Duration::from_secs(2);
    assert_eq!(d.wait_cq_event(Duration::from_millis(50)).unwrap(), None);
    d.arm_cq(&cq).unwrap();
    d.post_recv(&mut b, 1, sge(4096)).unwrap();
    d.post_send(&mut a, &SendWr::new(2, SendOp::Send).sgl(&[sge(0)]))
        .unwrap();
    assert_eq!(d.wait_cq_event(t).unwrap(), Some(cq.id()));
    let end = std::time::Instant::now() + t;
    while d.interrupts() < 1 {
        assert!(
            std::time::Instant::now() < end,
            "the EQ's vector never fired"
        );
    }
    assert_eq!(wait(&mut d, &mut cq, 2).len(), 2);
    // Unarmed: a completion, no event.
    d.post_send(
        &mut a,
        &SendWr::new(3, SendOp::Write(mr.remote(0))).sgl(&[sge(0)]),
    )
    .unwrap();
    assert_eq!(d.wait_cq_event(Duration::from_millis(100)).unwrap(), None);
    // Armed with that completion still waiting: the event comes at once.
    d.arm_cq(&cq).unwrap();
    assert_eq!(d.wait_cq_event(t).unwrap(), Some(cq.id()));
    while d.interrupts() < 2 {
        assert!(std::time::Instant::now() < end + t, "no second interrupt");
    }
    assert_eq!(wait(&mut d, &mut cq, 1)[0].wr_id, 3);
}

/// More QPs than shared doorbell pages (64): those past the pages ring
/// trapped doorbells instead of sharing a page (which could lose one), and
/// all of them move data.
#[test]
fn more_qps_than_shared_pages_all_work() {
    let path = serve("many-qps", "compat,shared-doorbells");
    let mut d = Driver::attach(&path, 32 << 20).unwrap();
    let mut cq = d.create_cq(10).unwrap();
    let buf = d.alloc(4096).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = [mr.sge(0, 8)];
    let mut pairs: Vec<(Qp, Qp)> = (0..40).map(|_| rc_pair(&mut d, &cq, 2)).collect();
    for (i, (a, _)) in pairs.iter_mut().enumerate() {
        let to = mr.remote(8 * (i as u64 % 500));
        d.post_send(a, &SendWr::new(i as u64, SendOp::Write(to)).sgl(&sge))
            .unwrap();
    }
    let w = wait(&mut d, &mut cq, 40);
    assert!(w.iter().all(|c| c.status == WcStatus::Success));
}

/// A SEND to a QP with no receive posted waits the profile's RNR timeout
/// (here 200 ms), then completes with RNR retry exceeded; a receive posted
/// in time lets the next one through.
#[test]
fn a_send_without_a_receive_ends_in_rnr_retry_exceeded() {
    let path = serve_with("rnr", "compat", "rnr_timeout_ms = 200");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let (mut a, mut b) = rc_pair(&mut d, &cq, 4);
    let buf = d.alloc(8192).unwrap();
    let mr = d.reg_mr(buf).unwrap();
    let sge = |off: u64| mr.sge(off, 8);
    // In time: the SEND waits for the receive posted 50 ms later.
    d.post_send(&mut a, &SendWr::new(1, SendOp::Send).sgl(&[sge(0)]))
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    d.post_recv(&mut b, 7, sge(4096)).unwrap();
    let w = wait(&mut d, &mut cq, 2);
    assert!(w.iter().all(|c| c.status == WcStatus::Success), "{w:?}");
    // Never: after the timeout, RNR retry exceeded.
    let t = Instant::now();
    d.post_send(&mut a, &SendWr::new(2, SendOp::Send).sgl(&[sge(0)]))
        .unwrap();
    let w = wait(&mut d, &mut cq, 1);
    assert_eq!((w[0].wr_id, w[0].status), (2, WcStatus::RnrRetryExcErr));
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "{:?}",
        t.elapsed()
    );
}
