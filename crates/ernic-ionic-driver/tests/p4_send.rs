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
