//! Two fabrics joined by a real TCP mesh on loopback (each with its own
//! manager or worker node, in one process): verbs across nodes.

use std::time::{Duration, Instant};

use ernic_verbs::*;

const T: Duration = Duration::from_secs(10);

fn wait_owner(f: &Fabric, gid: Gid) {
    let end = Instant::now() + T;
    while f.mesh().unwrap().owner(&gid).is_none() {
        assert!(Instant::now() < end, "GID {gid} never became known");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn two_nodes(cfg: Config) -> (Fabric, Fabric) {
    two_nodes_on(cfg, true)
}

/// Two nodes, with or without the same-host path.
fn two_nodes_on(cfg: Config, same_host: bool) -> (Fabric, Fabric) {
    two_nodes_with(cfg, same_host, "")
}

/// Two nodes; the worker (B) injects the faults of `faults` (an
/// `--inject` spec) into what it sends.
fn two_nodes_with(cfg: Config, same_host: bool, faults: &str) -> (Fabric, Fabric) {
    let mut mc = MeshConfig::new("tcp:manager:listen:1".parse().unwrap());
    mc.spec = MeshSpec::Manager { port: 0 };
    // Port 0 is not a valid spec port; bind it directly for the test.
    let manager = Mesh::start(MeshConfig {
        heartbeat: Duration::from_millis(100),
        same_host,
        ..mc
    })
    .unwrap();
    let port = manager.listen_addr().port();
    let injector = ernic_core::inject::parse_spec(faults).unwrap();
    let wc = MeshConfig {
        heartbeat: Duration::from_millis(100),
        same_host,
        injector: std::sync::Arc::new(ernic_core::Injector::new(injector)),
        ..MeshConfig::new(MeshSpec::Worker {
            host: "127.0.0.1".into(),
            port,
        })
    };
    let worker = Mesh::start(wc).unwrap();
    assert_eq!(worker.wait_registered(T), Some(NodeId(1)));
    (
        Fabric::on_mesh(cfg.clone(), manager),
        Fabric::on_mesh(cfg, worker),
    )
}

/// Two devices on two nodes with an RC QP each, connected to each other.
struct RcPair {
    _fabrics: (Fabric, Fabric),
    pa: Pd,
    pb: Pd,
    ca: Cq,
    cb: Cq,
    qa: Qp,
    qb: Qp,
}

fn rc_pair(ga: &str, gb: &str, depth: u32) -> RcPair {
    rc_pair_on(ga, gb, depth, true)
}

fn rc_pair_on(ga: &str, gb: &str, depth: u32, same_host: bool) -> RcPair {
    rc_pair_with(ga, gb, depth, same_host, "")
}

fn rc_pair_with(ga: &str, gb: &str, depth: u32, same_host: bool, faults: &str) -> RcPair {
    let (fa, fb) = two_nodes_with(Config::default(), same_host, faults);
    let a = fa.open_device(ga.parse().unwrap()).unwrap();
    let b = fb.open_device(gb.parse().unwrap()).unwrap();
    wait_owner(&fa, b.gid());
    wait_owner(&fb, a.gid());
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let (ca, cb) = (a.create_cq(depth).unwrap(), b.create_cq(depth).unwrap());
    let qa = pa
        .create_qp(QpType::Rc, &ca, &ca, QpCaps::default())
        .unwrap();
    let qb = pb
        .create_qp(QpType::Rc, &cb, &cb, QpCaps::default())
        .unwrap();
    qa.connect(b.gid(), qb.qpn(), Access::ALL).unwrap();
    qb.connect(a.gid(), qa.qpn(), Access::ALL).unwrap();
    RcPair {
        _fabrics: (fa, fb),
        pa,
        pb,
        ca,
        cb,
        qa,
        qb,
    }
}

#[test]
fn verbs_cross_a_real_tcp_mesh() {
    let RcPair {
        pa,
        pb,
        ca,
        cb,
        qa,
        qb,
        _fabrics: _keep,
    } = rc_pair("fd00::a", "fd00::b", 256);
    let ma = pa.reg_mr(1 << 20, Access::ALL).unwrap();
    let mb = pb.reg_mr(1 << 20, Access::ALL).unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + 1) as u8).collect();
    ma.write(0, &data).unwrap();
    // WRITE, then READ it back into another place.
    qa.post_send(
        &SendWr::new(1, SendOp::Write(mb.remote(0).unwrap())).sgl(&[ma.sge(0, 100_000).unwrap()]),
    )
    .unwrap();
    assert_eq!(ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    let mut got = vec![0u8; 100_000];
    mb.read(0, &mut got).unwrap();
    assert!(got == data);
    qa.post_send(
        &SendWr::new(2, SendOp::Read(mb.remote(0).unwrap()))
            .sgl(&[ma.sge(200_000, 100_000).unwrap()]),
    )
    .unwrap();
    assert_eq!(ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    ma.read(200_000, &mut got).unwrap();
    assert!(got == data);
    // SEND both ways, the receive posted after the SEND arrived (RNR hold).
    qa.post_send(&SendWr::new(3, SendOp::SendImm(17)).inline(b"ping"))
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    qb.post_recv(9, &[mb.sge(500_000, 64).unwrap()]).unwrap();
    let r = cb.wait_one(T).unwrap().unwrap();
    assert_eq!((r.wr_id, r.byte_len, r.imm), (9, 4, Some(17)));
    assert_eq!(ca.wait_one(T).unwrap().unwrap().wr_id, 3);
    qa.post_recv(10, &[ma.sge(600_000, 64).unwrap()]).unwrap();
    qb.post_send(&SendWr::new(4, SendOp::Send).inline(b"pong"))
        .unwrap();
    assert_eq!(ca.wait_one(T).unwrap().unwrap().wr_id, 10);
    // Atomics.
    qa.post_send(
        &SendWr::new(
            5,
            SendOp::AtomicFa {
                remote: mb.remote(900_000).unwrap(),
                add: 5,
            },
        )
        .sgl(&[ma.sge(0, 8).unwrap()]),
    )
    .unwrap();
    assert_eq!(ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    let mut v = [0u8; 8];
    mb.read(900_000, &mut v).unwrap();
    assert_eq!(u64::from_ne_bytes(v), 5);
}

#[test]
fn a_connected_qp_to_a_gid_no_node_owns_fails_to_reach_rtr() {
    let (fa, _fb) = two_nodes(Config::default());
    let a = fa.open_device("fd00::1a".parse().unwrap()).unwrap();
    let pa = a.alloc_pd().unwrap();
    let ca = a.create_cq(16).unwrap();
    let qa = pa
        .create_qp(QpType::Rc, &ca, &ca, QpCaps::default())
        .unwrap();
    let e = qa
        .connect("fd00::dead".parse().unwrap(), Qpn(5), Access::ALL)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("no device or node owns GID fd00::dead"),
        "{e}"
    );
}

#[test]
fn a_write_with_immediate_larger_than_one_frame_crosses_the_mesh() {
    let RcPair {
        pa,
        pb,
        ca,
        cb,
        qa,
        qb,
        _fabrics: _keep,
    } = rc_pair("fd00::2a", "fd00::2b", 16);
    let len = 20 << 20;
    let ma = pa.reg_mr(len, Access::ALL).unwrap();
    let mb = pb.reg_mr(len, Access::ALL).unwrap();
    ma.write(len - 4, b"tail").unwrap();
    // Two in a row: each consumes its own receive (the last piece takes the
    // ring's head and must leave the ring with it).
    qb.post_recv(1, &[]).unwrap();
    qb.post_recv(3, &[]).unwrap();
    for (send, recv, imm) in [(2, 1, 99), (4, 3, 100)] {
        qa.post_send(
            &SendWr::new(send, SendOp::WriteImm(mb.remote(0).unwrap(), imm))
                .sgl(&[ma.sge(0, len as u32).unwrap()]),
        )
        .unwrap();
        let r = cb.wait_one(T).unwrap().expect("the receive completes");
        assert_eq!(
            (r.wr_id, r.status, r.imm),
            (recv, WcStatus::Success, Some(imm))
        );
        assert_eq!(r.byte_len, len as u32);
        assert_eq!(ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    }
    // Each byte counted once at the responder, however many pieces.
    assert_eq!(qb.counters().unwrap().get(Counter::RxBytes), 2 * len as u64);
    let mut t = [0u8; 4];
    mb.read(len - 4, &mut t).unwrap();
    assert_eq!(&t, b"tail");
}

/// Writes of 64 MiB (four wire frames each, more than the queue toward a
/// node holds) complete in order. (The engine test
/// `a_full_connection_stops_the_send_queue_which_resumes_in_order` pins
/// down that such a queue is due for a retry at once.)
#[test]
fn writes_larger_than_the_queue_toward_a_node_complete_in_order() {
    let RcPair {
        pa,
        pb,
        ca,
        cb,
        qa,
        qb: _qb,
        _fabrics: _keep,
    } = rc_pair("fd00::3a", "fd00::3b", 64);
    let piece = 64 << 20;
    let ma = pa.reg_mr(piece, Access::ALL).unwrap();
    let mb = pb.reg_mr(piece, Access::ALL).unwrap();
    for i in 0..3 {
        qa.post_send(
            &SendWr::new(i, SendOp::Write(mb.remote(0).unwrap()))
                .sgl(&[ma.sge(0, piece as u32).unwrap()]),
        )
        .unwrap();
    }
    let start = Instant::now();
    for i in 0..3 {
        let c = ca
            .wait_one(T)
            .unwrap()
            .expect("each write completes within the timeout");
        assert_eq!((c.wr_id, c.status), (i, WcStatus::Success));
    }
    assert!(start.elapsed() < T);
    assert!(cb.is_empty(), "plain writes complete nothing at the target");
}

#[test]
fn an_address_handle_made_before_its_gid_was_known_reaches_it_later() {
    let (fa, fb) = two_nodes(Config::default());
    let a = fa.open_device("fd00::a".parse().unwrap()).unwrap();
    let pa = a.alloc_pd().unwrap();
    let later: Gid = "fd00::b".parse().unwrap();
    // No node owns fd00::b yet: the handle is made all the same.
    let ah = pa.create_ah(later).unwrap();
    let b = fb.open_device(later).unwrap();
    wait_owner(&fa, later);
    let caps = QpCaps {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 64,
    };
    let ca = a.create_cq(64).unwrap();
    let qa = pa.create_qp(QpType::Ud, &ca, &ca, caps).unwrap();
    qa.ready_datagram(7).unwrap();
    let pb = b.alloc_pd().unwrap();
    let cb = b.create_cq(64).unwrap();
    let qb = pb.create_qp(QpType::Ud, &cb, &cb, caps).unwrap();
    qb.ready_datagram(7).unwrap();
    let mb = pb.reg_mr(4096, Access::LOCAL_WRITE).unwrap();
    qb.post_recv(1, &[mb.sge(0, 1024).unwrap()]).unwrap();
    // The datagram goes to the node that owns the GID now, not to a QP of
    // the same number on the sender's own device.
    qa.post_send(
        &SendWr::new(2, SendOp::Send)
            .inline(b"late")
            .to(ah.dest(qb.qpn(), 7)),
    )
    .unwrap();
    let r = cb.wait_one(T).unwrap().unwrap();
    assert_eq!(
        (r.wr_id, r.status, r.byte_len),
        (1, WcStatus::Success, 40 + 4)
    );
    let mut got = [0u8; 4];
    mb.read(40, &mut got).unwrap();
    assert_eq!(&got, b"late");
}

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 13) as u8)
        .collect()
}

/// A WRITE of `len` bytes and a SEND of `len / 2` from A to B, checked at B.
fn write_and_send(p: &RcPair, len: usize) {
    let ma = p.pa.reg_mr(len, Access::ALL).unwrap();
    let mb = p.pb.reg_mr(2 * len, Access::ALL).unwrap();
    let data = pattern(len, len as u32);
    ma.write(0, &data).unwrap();
    p.qa.post_send(
        &SendWr::new(1, SendOp::Write(mb.remote(0).unwrap()))
            .sgl(&[ma.sge(0, len as u32).unwrap()]),
    )
    .unwrap();
    assert_eq!(p.ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    p.qb.post_recv(2, &[mb.sge(len, len as u32).unwrap()])
        .unwrap();
    p.qa.post_send(&SendWr::new(3, SendOp::Send).sgl(&[ma.sge(7, (len / 2) as u32).unwrap()]))
        .unwrap();
    assert_eq!(p.ca.wait_one(T).unwrap().unwrap().status, WcStatus::Success);
    let r = p.cb.wait_one(T).unwrap().unwrap();
    assert_eq!(
        (r.wr_id, r.status, r.byte_len),
        (2, WcStatus::Success, (len / 2) as u32)
    );
    let mut got = vec![0u8; len];
    mb.read(0, &mut got).unwrap();
    assert!(got == data, "the WRITE landed whole");
    let mut got = vec![0u8; len / 2];
    mb.read(len, &mut got).unwrap();
    assert!(got[..] == data[7..7 + len / 2], "the SEND landed whole");
}

#[test]
fn large_payloads_between_nodes_on_one_host_are_read_from_the_sender() {
    let p = rc_pair_on("fd00::3a", "fd00::3b", 16, true);
    // Both links prove themselves soon after the connection is up.
    wait_same_host(&p);
    let (fa, fb) = &p._fabrics;
    let len = 5 << 20;
    write_and_send(&p, len);
    // Both went by reference, in pieces of up to max_ref_piece, and B read
    // all of them.
    let (sa, sb) = (fa.remote_stats(), fb.remote_stats());
    let piece = Config::default().max_ref_piece as usize;
    let pieces = len.div_ceil(piece) + (len / 2).div_ceil(piece);
    assert_eq!(sa.sent_by_ref, pieces as u64, "{sa:?}");
    assert_eq!(sb.read_by_ref, (len + len / 2) as u64, "{sb:?}");
}

/// Waits until both nodes of `p` read each other's memory.
fn wait_same_host(p: &RcPair) {
    let (fa, fb) = &p._fabrics;
    let (ma, mb) = (fa.mesh().unwrap(), fb.mesh().unwrap());
    let end = Instant::now() + T;
    let both = |l: SameHostLink| l.reads_me && l.read_by_me;
    while !both(ma.same_host(NodeId(1))) || !both(mb.same_host(NodeId(0))) {
        assert!(Instant::now() < end, "the same-host path never came up");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A READ of `len` bytes of B's `mb` (from `from`) into A's `ma` at `at`.
fn read_into(p: &RcPair, ma: &Mr, at: usize, mb: &Mr, from: usize, len: usize, id: u64) {
    p.qa.post_send(
        &SendWr::new(id, SendOp::Read(mb.remote(from).unwrap()))
            .sgl(&[ma.sge(at, len as u32).unwrap()]),
    )
    .unwrap();
}

#[test]
fn large_reads_between_nodes_on_one_host_are_read_by_the_requester() {
    let p = rc_pair_on("fd00::5a", "fd00::5b", 16, true);
    wait_same_host(&p);
    let (fa, fb) = &p._fabrics;
    // Three pieces of max_piece (1 MiB) and a short one over by_ref_min
    // (64 KiB); then a READ under by_ref_min, which carries its bytes.
    let len = (3 << 20) + 100_000;
    let small = 1000;
    let ma = p.pa.reg_mr(len + small, Access::ALL).unwrap();
    let mb = p.pb.reg_mr(len + 64, Access::ALL).unwrap();
    let data = pattern(len + 64, 99);
    mb.write(0, &data).unwrap();
    read_into(&p, &ma, 0, &mb, 0, len, 1);
    read_into(&p, &ma, len, &mb, 17, small, 2);
    for id in [1, 2] {
        let r = p.ca.wait_one(T).unwrap().unwrap();
        assert_eq!((r.wr_id, r.status), (id, WcStatus::Success));
    }
    let mut got = vec![0u8; len + small];
    ma.read(0, &mut got).unwrap();
    assert!(got[..len] == data[..len], "the large READ landed whole");
    assert!(
        got[len..] == data[17..17 + small],
        "the small READ landed whole"
    );
    // B answered each large piece with where its bytes lie, and A read
    // exactly the large READ's bytes from B's memory.
    let pieces = len.div_ceil(Config::default().max_piece as usize);
    assert_eq!(fb.remote_stats().sent_by_ref, pieces as u64);
    assert_eq!(fa.remote_stats().read_by_ref, len as u64);
}

/// The hazard a READ that the responder writes into the requester's memory
/// has: an answer that comes after the request ended lands in memory the
/// program has taken back. Here B holds back everything it sends, A's QP
/// is flushed while the READ waits, A reuses the buffer, and the answers
/// that come late (by reference) change nothing.
#[test]
fn a_late_read_answer_cannot_touch_memory_the_requester_took_back() {
    let p = rc_pair_with("fd00::6a", "fd00::6b", 16, true, "mesh_delay=700:every=1");
    wait_same_host(&p);
    let (fa, fb) = &p._fabrics;
    let len = 2 << 20;
    let ma = p.pa.reg_mr(len, Access::ALL).unwrap();
    let mb = p.pb.reg_mr(len, Access::ALL).unwrap();
    mb.write(0, &pattern(len, 5)).unwrap();
    read_into(&p, &ma, 0, &mb, 0, len, 1);
    std::thread::sleep(Duration::from_millis(100));
    p.qa.set_error().unwrap();
    let r = p.ca.wait_one(T).unwrap().unwrap();
    assert_eq!((r.wr_id, r.status), (1, WcStatus::WrFlushErr));
    // The buffer is the program's again: it writes its own bytes.
    let mine = vec![0xa5u8; len];
    ma.write(0, &mine).unwrap();
    // B's answers (held 700 ms) arrive and are dropped unread.
    let end = Instant::now() + T;
    while fa.remote_stats().stale_replies < 2 {
        assert!(Instant::now() < end, "the late answers never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(fb.remote_stats().sent_by_ref, 2, "answered by reference");
    assert_eq!(fa.remote_stats().read_by_ref, 0, "nothing read for them");
    let mut got = vec![0u8; len];
    ma.read(0, &mut got).unwrap();
    assert!(got == mine, "the program's bytes were overwritten");
}

#[test]
fn with_the_same_host_path_off_payloads_cross_tcp() {
    let p = rc_pair_on("fd00::4a", "fd00::4b", 16, false);
    let (fa, fb) = &p._fabrics;
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        fa.mesh().unwrap().same_host(NodeId(1)),
        SameHostLink::default()
    );
    write_and_send(&p, 2 << 20);
    assert_eq!(fa.remote_stats().sent_by_ref, 0);
    assert_eq!(fb.remote_stats().read_by_ref, 0);
}

/// While B's application polls its CQ, B's own thread applies what A sends;
/// when it stops polling (without a word), B's device thread and receive
/// threads take over. A's WRITEs complete before, across and after that.
#[test]
fn a_node_whose_application_stops_polling_keeps_serving() {
    let p = rc_pair("fd00::4a", "fd00::4b", 64);
    let ma = p.pa.reg_mr(4096, Access::ALL).unwrap();
    let mb = p.pb.reg_mr(4096, Access::ALL).unwrap();
    let cb = p.cb.clone();
    let spin = Duration::from_millis(100);
    let poller = std::thread::spawn(move || {
        let mut out = [Wc::EMPTY; 4];
        let end = Instant::now() + spin;
        let mut polls = 0u64;
        while Instant::now() < end {
            assert_eq!(
                cb.poll(&mut out).unwrap(),
                0,
                "plain WRITEs complete nothing at B"
            );
            polls += 1;
        }
        polls
    });
    let start = Instant::now();
    let mut n = 0u32;
    // Before, across and well after the poller stops.
    while start.elapsed() < 3 * spin {
        ma.write(0, &n.to_le_bytes()).unwrap();
        p.qa.post_send(
            &SendWr::new(u64::from(n), SendOp::Write(mb.remote(0).unwrap()))
                .sgl(&[ma.sge(0, 4).unwrap()]),
        )
        .unwrap();
        let c = p.ca.wait_one(T).unwrap().expect("each WRITE completes");
        assert_eq!((c.wr_id, c.status), (u64::from(n), WcStatus::Success));
        let mut got = [0u8; 4];
        mb.read(0, &mut got).unwrap();
        assert_eq!(u32::from_le_bytes(got), n);
        n += 1;
    }
    assert!(poller.join().unwrap() > 0);
    assert!(n > 10, "only {n} WRITEs in {:?}", 3 * spin);
}
