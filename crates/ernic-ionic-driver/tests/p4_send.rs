//! The P4 send hook through the real socket: a filter installed on the
//! device sees each WRITE, READ, SEND and atomic of the guest's RC QPs
//! whose local memory checks passed, and its verdict holds: `Pass` runs
//! the WQE as posted, `Drop` completes it with a local protection error
//! and moves nothing, `Transform` turns an RDMA WRITE into this device's
//! memory into the filter's arithmetic over the source and the
//! destination's bytes, and is refused (with an error completion, the
//! destination untouched) for key 0, for an rkey this device does not
//! have, and for anything but a WRITE.

use std::sync::{Arc, Mutex};

use ernic_core::{Lkey, RemoteAddr, Rkey, SendOp, SendWr, Sge, WcStatus};
use ernic_ionic::function::IonicFunction;
use ernic_ionic::p4hook::{SendFilter, SendVerdict, SendWqe, WqeOpcode};
use ernic_ionic_driver::{Buf, Cq, Driver, Mr, Qp};

mod common;
use common::status_in;

/// What the filter saw of a WQE.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    opcode: WqeOpcode,
    qpn: u32,
    dest_qpn: u32,
    length: u64,
    lkeys: Vec<u32>,
    remote: Option<(u32, u64)>,
    remote_is_local: bool,
    imm: u32,
}

/// A filter whose verdict the test sets; transform 1 adds each source
/// byte into the destination's (wrapping), transform 2 fails.
#[derive(Clone, Default)]
struct Scripted {
    verdict: Arc<Mutex<Option<SendVerdict>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl SendFilter for Scripted {
    fn on_send(&mut self, w: &SendWqe<'_>) -> SendVerdict {
        self.seen.lock().unwrap().push(Seen {
            opcode: w.opcode,
            qpn: w.qpn,
            dest_qpn: w.dest_qpn,
            length: w.length,
            lkeys: w.sges.iter().map(|s| s.lkey).collect(),
            remote: w.remote,
            remote_is_local: w.remote_is_local,
            imm: w.imm,
        });
        self.verdict.lock().unwrap().unwrap_or(SendVerdict::Pass)
    }

    fn transform(&mut self, op: u32, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        match op {
            1 => {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = d.wrapping_add(*s);
                }
                Ok(())
            }
            _ => Err(format!("no transform {op}")),
        }
    }
}

/// A guest on a device with the filter: two connected RC QPs, a source
/// buffer and a destination buffer, each under its own MR.
struct Guest {
    d: Driver,
    cq: Cq,
    a: Qp,
    b: Qp,
    src: Mr,
    dst: Mr,
    filter: Scripted,
}

const SRC: [u8; 16] = [
    10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160,
];
const DST: [u8; 16] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 250, 255];

fn guest(name: &str) -> Guest {
    let filter = Scripted::default();
    let f = IonicFunction::new(Default::default()).with_send_filter(Box::new(filter.clone()));
    let path = common::serve_function(&format!("p4-send-{name}"), f);
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let cq = d.create_cq(7).unwrap();
    let pd = d.alloc_pd().unwrap();
    let (a, b) = common::rc_pair(&mut d, &cq, pd, pd);
    let (sb, db): (Buf, Buf) = (d.alloc(4096).unwrap(), d.alloc(4096).unwrap());
    assert!(d.write(&sb, 0, &SRC));
    assert!(d.write(&db, 0, &DST));
    let src = d.reg_mr_in(pd, sb).unwrap();
    let dst = d.reg_mr_in(pd, db).unwrap();
    Guest {
        d,
        cq,
        a,
        b,
        src,
        dst,
        filter,
    }
}

impl Guest {
    fn verdict(&self, v: SendVerdict) {
        *self.filter.verdict.lock().unwrap() = Some(v);
    }

    /// Posts `op` with 16 source bytes on QP `a` as request `id`; answers
    /// its completion status.
    fn run(&mut self, id: u64, op: SendOp) -> WcStatus {
        let sgl = [self.src.sge(0, 16)];
        self.d
            .post_send(&mut self.a, &SendWr::new(id, op).sgl(&sgl))
            .unwrap();
        status_in(&common::completions(&mut self.d, &mut self.cq, &[id]), id)
    }

    fn dst_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        assert!(self.d.read(&self.dst.buf, 0, &mut b));
        b
    }

    fn last_seen(&self) -> Seen {
        self.filter
            .seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("the filter saw a WQE")
    }
}

#[test]
fn pass_runs_the_write_and_the_filter_sees_what_the_wqe_names() {
    let mut g = guest("pass");
    let to = g.dst.remote(0);
    assert_eq!(g.run(1, SendOp::Write(to)), WcStatus::Success);
    assert_eq!(g.dst_bytes(), SRC, "the WRITE ran as posted");
    assert_eq!(
        g.last_seen(),
        Seen {
            opcode: WqeOpcode::Write,
            qpn: g.a.qpn().0,
            dest_qpn: g.b.qpn().0,
            length: 16,
            lkeys: vec![g.src.key],
            remote: Some((g.dst.key, g.dst.buf.addr())),
            remote_is_local: true,
            imm: 0,
        }
    );
    // A READ is shown too, with its remote address; an rkey this device
    // does not have is not local.
    let from = RemoteAddr {
        addr: 0x1234,
        rkey: Rkey(0x7f00),
    };
    let st = g.run(2, SendOp::Read(from));
    assert_eq!(st, WcStatus::RemAccessErr, "the core's own answer");
    let s = g.last_seen();
    assert_eq!(
        (s.opcode, s.remote, s.remote_is_local),
        (WqeOpcode::Read, Some((0x7f00, 0x1234)), false)
    );
}

#[test]
fn a_wqe_whose_local_checks_fail_never_reaches_the_filter() {
    let mut g = guest("local-checks");
    let bad = [Sge {
        addr: g.src.buf.addr(),
        len: 16,
        lkey: Lkey(0x4400),
    }];
    g.d.post_send(
        &mut g.a,
        &SendWr::new(1, SendOp::Write(g.dst.remote(0))).sgl(&bad),
    )
    .unwrap();
    let st = status_in(&common::completions(&mut g.d, &mut g.cq, &[1]), 1);
    assert_eq!(st, WcStatus::LocProtErr);
    assert!(
        g.filter.seen.lock().unwrap().is_empty(),
        "the filter saw it"
    );
    assert_eq!(g.dst_bytes(), DST);
}

#[test]
fn drop_completes_with_a_local_protection_error_and_moves_nothing() {
    let mut g = guest("drop");
    g.verdict(SendVerdict::Drop);
    assert_eq!(
        g.run(1, SendOp::Write(g.dst.remote(0))),
        WcStatus::LocProtErr
    );
    assert_eq!(g.dst_bytes(), DST, "a dropped WRITE wrote");
    // As after any error completion, the QP is in ERROR: what follows is
    // flushed, and the filter sees it no more.
    g.verdict(SendVerdict::Pass);
    let seen = g.filter.seen.lock().unwrap().len();
    assert_eq!(
        g.run(2, SendOp::Write(g.dst.remote(0))),
        WcStatus::WrFlushErr
    );
    assert_eq!(g.filter.seen.lock().unwrap().len(), seen);
    assert_eq!(g.dst_bytes(), DST);
}

#[test]
fn transform_adds_the_source_into_a_local_destination() {
    let mut g = guest("transform");
    g.verdict(SendVerdict::Transform(1));
    assert_eq!(g.run(1, SendOp::Write(g.dst.remote(0))), WcStatus::Success);
    let want: Vec<u8> = SRC
        .iter()
        .zip(DST)
        .map(|(s, d)| s.wrapping_add(d))
        .collect();
    assert_eq!(g.dst_bytes().to_vec(), want);
    // Again: the destination's current bytes are the operand.
    assert_eq!(g.run(2, SendOp::Write(g.dst.remote(0))), WcStatus::Success);
    let want: Vec<u8> = want
        .iter()
        .zip(SRC)
        .map(|(d, s)| d.wrapping_add(s))
        .collect();
    assert_eq!(g.dst_bytes().to_vec(), want);
    // Eight bytes further in: only those 16 bytes change.
    let before = {
        let mut b = [0u8; 32];
        assert!(g.d.read(&g.dst.buf, 0, &mut b));
        b
    };
    assert_eq!(g.run(3, SendOp::Write(g.dst.remote(8))), WcStatus::Success);
    let mut after = [0u8; 32];
    assert!(g.d.read(&g.dst.buf, 0, &mut after));
    assert_eq!(after[..8], before[..8]);
    for i in 0..16 {
        assert_eq!(
            after[8 + i],
            before[8 + i].wrapping_add(SRC[i]),
            "byte {}",
            8 + i
        );
    }
    assert_eq!(after[24..], before[24..]);
}

#[test]
fn transform_past_the_destination_mr_is_a_remote_access_error() {
    let mut g = guest("transform-bounds");
    g.verdict(SendVerdict::Transform(1));
    let len = g.dst.buf.len;
    let st = g.run(1, SendOp::Write(g.dst.remote(len - 8)));
    assert_eq!(st, WcStatus::RemAccessErr);
    assert_eq!(g.dst_bytes(), DST);
}

#[test]
fn transform_with_key_0_or_a_key_of_no_local_mr_is_refused() {
    let mut g = guest("transform-keys");
    g.verdict(SendVerdict::Transform(1));
    let key0 = RemoteAddr {
        addr: g.dst.buf.addr(),
        rkey: Rkey(0),
    };
    assert_eq!(g.run(1, SendOp::Write(key0)), WcStatus::RemAccessErr);
    assert!(!g.last_seen().remote_is_local, "key 0 is never local");
    assert_eq!(g.dst_bytes(), DST, "key 0 reached guest memory");

    // Fresh QPs: the error moved the first pair to ERROR.
    let mut g = guest("transform-remote");
    g.verdict(SendVerdict::Transform(1));
    let elsewhere = RemoteAddr {
        addr: g.dst.buf.addr(),
        rkey: Rkey(g.dst.key + 0x100),
    };
    assert_eq!(g.run(1, SendOp::Write(elsewhere)), WcStatus::RemAccessErr);
    assert!(!g.last_seen().remote_is_local);
    assert_eq!(g.dst_bytes(), DST);
}

#[test]
fn transform_of_anything_but_a_write_or_a_failing_transform_is_an_error() {
    let mut g = guest("transform-send");
    g.verdict(SendVerdict::Transform(1));
    let into = g.dst.sge(0, 64);
    g.d.post_recv(&mut g.b, 50, into).unwrap();
    assert_eq!(g.run(1, SendOp::Send), WcStatus::LocQpOpErr);
    assert_eq!(g.last_seen().opcode, WqeOpcode::Send);
    assert_eq!(g.dst_bytes(), DST);

    let mut g = guest("transform-fails");
    g.verdict(SendVerdict::Transform(2));
    assert_eq!(g.run(1, SendOp::Write(g.dst.remote(0))), WcStatus::RemOpErr);
    assert_eq!(g.dst_bytes(), DST, "a failed transform wrote back");
}

/// Two servers on a mesh, the filter on server a: a WRITE from a's QP to
/// its peer on b names b's MR by a key that a's own MR also has. That key
/// is another node's: the WQE is not local, a transform of it is refused
/// with a remote access error, and neither MR changes.
#[test]
fn transform_of_another_nodes_rkey_is_refused_even_when_the_number_is_local_too() {
    use ernic_core::Gid;
    use ernic_mesh::{Mesh, MeshConfig, Spec};
    use std::time::{Duration, Instant};
    let (ga, gb): (Gid, Gid) = (
        "::ffff:10.0.4.1".parse().unwrap(),
        "::ffff:10.0.4.2".parse().unwrap(),
    );
    let manager = Mesh::start(MeshConfig {
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let port = manager.listen_addr().port();
    let worker = Arc::new(
        Mesh::start(MeshConfig {
            heartbeat: Duration::from_millis(100),
            ..MeshConfig::new(Spec::Worker {
                host: "127.0.0.1".into(),
                port,
            })
        })
        .unwrap(),
    );
    assert!(worker.wait_registered(Duration::from_secs(10)).is_some());
    let filter = Scripted::default();
    *filter.verdict.lock().unwrap() = Some(SendVerdict::Transform(1));
    let hook = filter.clone();
    let pa = common::serve_on_mesh_with("p4-mesh-a", Arc::new(manager), ga, move |f| {
        f.with_send_filter(Box::new(hook))
    });
    let pb = common::serve_on_mesh("p4-mesh-b", worker.clone(), gb);
    let mut da = Driver::attach(&pa, 4 << 20).unwrap();
    let mut db = Driver::attach(&pb, 4 << 20).unwrap();
    da.set_gid(ga).unwrap();
    db.set_gid(gb).unwrap();
    let (mut ca, cb) = (da.create_cq(6).unwrap(), db.create_cq(6).unwrap());
    let (mut qa, qb) = (da.create_qp(&ca, 5).unwrap(), db.create_qp(&cb, 5).unwrap());
    let end = Instant::now() + Duration::from_secs(10);
    while da.connect_to(&qa, gb, qb.qpn()).is_err() {
        assert!(Instant::now() < end, "server a never learned {gb}");
        std::thread::sleep(Duration::from_millis(20));
    }
    while db.connect_to(&qb, ga, qa.qpn()).is_err() {
        assert!(Instant::now() < end, "server b never learned {ga}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (sa, la, lb) = (
        da.alloc(4096).unwrap(),
        da.alloc(4096).unwrap(),
        db.alloc(4096).unwrap(),
    );
    assert!(da.write(&sa, 0, &SRC) && da.write(&la, 0, &DST) && db.write(&lb, 0, &DST));
    // Each server's first MR: the same key number on both, valid on a too.
    let local = da.reg_mr(la).unwrap();
    let theirs = db.reg_mr(lb).unwrap();
    assert_eq!(local.key, theirs.key);
    let src = da.reg_mr(sa).unwrap();
    let sgl = [src.sge(0, 16)];
    da.post_send(
        &mut qa,
        &SendWr::new(1, SendOp::Write(theirs.remote(0))).sgl(&sgl),
    )
    .unwrap();
    let st = status_in(&common::completions(&mut da, &mut ca, &[1]), 1);
    assert_eq!(st, WcStatus::RemAccessErr);
    let seen = filter.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        (seen.opcode, seen.remote_is_local),
        (WqeOpcode::Write, false)
    );
    assert_eq!(seen.dest_qpn, qb.qpn().0);
    let mut b = [0u8; 16];
    assert!(da.read(&local.buf, 0, &mut b));
    assert_eq!(b, DST, "a's MR of the same key changed");
    assert!(db.read(&theirs.buf, 0, &mut b));
    assert_eq!(b, DST, "b's MR changed");
}
