//! The engine's injected faults (`send_err`, `recv_err`) on a connected
//! pair of RC QPs in one engine: the same workload under the same spec
//! fails at the same WQEs with the same statuses, run after run.

use std::sync::Arc;

use crate::inject::Injector;
use crate::testing::Bench;
use crate::*;

/// Eight zero-length SENDs from one QP to its peer, each with a receive
/// posted first; answers each send's (wr_id, status) and each receive's.
/// Completions as (wr_id, status).
type Wcs = Vec<(u64, WcStatus)>;

fn run(spec: &str) -> (Wcs, Wcs, Arc<Injector>) {
    let mut b = Bench::new();
    let inj = Arc::new(Injector::parse(spec).unwrap());
    b.e.set_injector(Some(inj.clone()));
    let (a, c) = (b.unconnected_qp(), b.unconnected_qp());
    let gid = b.gid;
    b.connect(a, (gid, c));
    b.connect(c, (gid, a));
    let t = b.t0;
    for i in 1..=8u64 {
        let rwr = RecvWr {
            wr_id: 100 + i,
            sgl: &[],
        };
        b.e.post_recv(b.dev, c, &rwr, t).unwrap();
    }
    for i in 1..=8u64 {
        b.e.post_send(b.dev, a, &SendWr::new(i, SendOp::Send), t)
            .unwrap();
    }
    b.poll(t);
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for i in 1..=8u64 {
        sends.extend(b.take(i).iter().map(|c| (i, c.status)));
        recvs.extend(b.take(100 + i).iter().map(|c| (100 + i, c.status)));
    }
    (sends, recvs, inj)
}

#[test]
fn send_err_fails_the_chosen_wqe_and_the_rc_qp_flushes_the_rest() {
    let first = run("send_err=rnr_retry_exc:at=3,7");
    let (sends, recvs, inj) = &first;
    let mut want = vec![(1, WcStatus::Success), (2, WcStatus::Success)];
    want.push((3, WcStatus::RnrRetryExcErr));
    want.extend((4..=8).map(|i| (i, WcStatus::WrFlushErr)));
    assert_eq!(*sends, want);
    // Two messages arrived; the other receives wait (the peer QP is fine).
    assert_eq!(
        *recvs,
        vec![(101, WcStatus::Success), (102, WcStatus::Success)]
    );
    // Every WQE posted was counted; 7 fired too but was flushed.
    let r = inj.report();
    assert_eq!((r[0].seen, r[0].fired), (8, 2));
    let second = run("send_err=rnr_retry_exc:at=3,7");
    assert_eq!((first.0, first.1), (second.0, second.1));
}

#[test]
fn recv_err_fails_the_receive_and_the_sender_sees_the_receivers_error() {
    let first = run("recv_err:every=2");
    let (sends, recvs, inj) = &first;
    // The second receive fails with loc_len (the default); its sender gets
    // remote invalid request, as for a real too-small buffer, and its RC QP
    // goes to ERROR, flushing the rest.
    let mut want = vec![(1, WcStatus::Success), (2, WcStatus::RemInvReqErr)];
    want.extend((3..=8).map(|i| (i, WcStatus::WrFlushErr)));
    assert_eq!(*sends, want);
    assert_eq!(
        *recvs,
        vec![(101, WcStatus::Success), (102, WcStatus::LocLenErr)]
    );
    assert_eq!(inj.report()[0].fired, 1);
    let second = run("recv_err:every=2");
    assert_eq!((first.0, first.1), (second.0, second.1));
}

#[test]
fn no_spec_means_no_fault() {
    let (sends, recvs, inj) = run("");
    assert!(sends.iter().all(|(_, s)| *s == WcStatus::Success));
    assert_eq!((sends.len(), recvs.len()), (8, 8));
    assert_eq!(inj.fired(), 0);
}
