//! Behaviour tests of [`Cm`], written from cm.c's behaviour: a requester
//! and a responder wired to each other by moving MADs across, with losses,
//! duplicates and hostile input in between. Time is a start instant plus
//! offsets; nothing sleeps.

use std::time::{Duration, Instant};

use super::*;
use crate::mad::{self, AttrId};
use crate::msg::MsgResponse;
use crate::{drep, dreq, mra, rej, rtu};

const A_GID: [u8; 16] = [0xa; 16];
const B_GID: [u8; 16] = [0xb; 16];
const A_GUID: u64 = 0x0002_c903_00aa_0001;
const B_GUID: u64 = 0x0002_c903_00bb_0002;
const A: Peer = Peer { gid: A_GID, qpn: 1 };
const B: Peer = Peer { gid: B_GID, qpn: 1 };

/// Packet life time 16 and ACK delay 15: a REQ's local ACK timeout is
/// `cm_ack_timeout(15, 16)` = 17, and TIMEWAIT on both sides 2^(17-8) ms.
const LIFE: u8 = 16;
const ACK_DELAY: u8 = 15;
const TIMEWAIT: Duration = Duration::from_millis(512);
/// rdma_cm's CM response timeout (20) for the peer: the REQ waits
/// 2 x 2^(16-8) + 2^(20-8) ms.
const REMOTE_TIMEOUT: u8 = 20;
const REQ_WAIT: Duration = Duration::from_millis(2 * 256 + 4096);
/// The requester's own CM response time (18): the REP waits 2^(18-8) ms.
const LOCAL_TIMEOUT: u8 = 18;
const REP_WAIT: Duration = Duration::from_millis(1024);
const RETRIES: u8 = 3;

fn config(gid: [u8; 16], ca_guid: u64, seed: u64) -> CmConfig {
    CmConfig {
        local_gid: gid,
        ca_guid,
        max_conns: 8,
        max_outputs: 32,
        max_events: 32,
        packet_life_time: LIFE,
        ack_delay: ACK_DELAY,
        seed,
    }
}

fn connect_params(private_data: &[u8]) -> ConnectParams<'_> {
    ConnectParams {
        service_id: crate::private_data::cma::service_id(0x0106, 4420),
        local_qpn: 0x00_0123,
        starting_psn: 0x00_abcd,
        responder_resources: 4,
        initiator_depth: 2,
        retry_count: 7,
        rnr_retry_count: 7,
        max_cm_retries: RETRIES,
        remote_cm_response_timeout: REMOTE_TIMEOUT,
        local_cm_response_timeout: LOCAL_TIMEOUT,
        path_mtu: 5,
        partition_key: 0xffff,
        flow_control: true,
        srq: false,
        primary: req::Path {
            remote_gid: B_GID,
            hop_limit: 64,
            ..req::Path::default()
        },
        private_data,
    }
}

fn accept_params(private_data: &[u8]) -> AcceptParams<'_> {
    AcceptParams {
        local_qpn: 0x00_0456,
        starting_psn: 0x00_7777,
        responder_resources: 2,
        initiator_depth: 4,
        rnr_retry_count: 7,
        flow_control: true,
        srq: false,
        private_data,
    }
}

/// A requester (`a`) and a responder (`b`).
struct Pair {
    a: Cm,
    b: Cm,
}

impl Pair {
    fn new() -> Pair {
        Pair {
            a: Cm::new(config(A_GID, A_GUID, 1)),
            b: Cm::new(config(B_GID, B_GUID, 2)),
        }
    }

    /// Delivers every MAD `a` queued to `b`; returns them.
    fn a_to_b(&mut self, now: Instant) -> Vec<Output> {
        let out = drain(&mut self.a);
        for o in &out {
            assert_eq!(o.to, B);
            self.b.on_mad(now, A, &o.mad);
        }
        out
    }

    /// Delivers every MAD `b` queued to `a`; returns them.
    fn b_to_a(&mut self, now: Instant) -> Vec<Output> {
        let out = drain(&mut self.b);
        for o in &out {
            assert_eq!(o.to, A);
            self.a.on_mad(now, B, &o.mad);
        }
        out
    }

    /// Runs a connection to ESTABLISHED at `now`; returns its ids on `a`
    /// and `b`.
    fn establish(&mut self, now: Instant) -> (ConnId, ConnId) {
        let ida = self.a.connect(now, B, &connect_params(b"host")).unwrap();
        self.a_to_b(now);
        let idb = match events(&mut self.b).as_slice() {
            [Event::Request { id, .. }] => *id,
            other => panic!("expected one Request, got {other:?}"),
        };
        self.b.accept(now, idb, &accept_params(b"target")).unwrap();
        self.b_to_a(now);
        assert!(matches!(events(&mut self.a).as_slice(), [Event::Reply { id, .. }] if *id == ida));
        self.a.ready_to_use(now, ida).unwrap();
        self.a_to_b(now);
        assert_eq!(events(&mut self.a), [Event::Established { id: ida }]);
        assert_eq!(events(&mut self.b), [Event::Established { id: idb }]);
        (ida, idb)
    }
}

fn drain(cm: &mut Cm) -> Vec<Output> {
    std::iter::from_fn(|| cm.pop_output()).collect()
}

fn events(cm: &mut Cm) -> Vec<Event> {
    std::iter::from_fn(|| cm.pop_event()).collect()
}

fn attr(o: &Output) -> AttrId {
    mad::Packet::new_checked(&o.mad[..]).unwrap().attr_id()
}

fn tid(mad: &[u8]) -> u64 {
    mad::Packet::new_checked(mad).unwrap().tid()
}

#[test]
fn a_connection_is_made_used_and_torn_down_from_the_requester() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, idb) = p.establish(t0);
    assert_eq!(p.a.state(ida), Some(State::Established));
    assert_eq!(p.b.state(idb), Some(State::Established));
    assert_eq!(p.a.next_deadline(), None);
    assert_eq!(p.b.next_deadline(), None);

    let t1 = t0 + Duration::from_secs(10);
    p.a.disconnect(t1, ida, b"bye").unwrap();
    assert_eq!(p.a.state(ida), Some(State::DreqSent));
    let dreq = p.a_to_b(t1);
    assert_eq!(dreq.iter().map(attr).collect::<Vec<_>>(), [AttrId::Dreq]);
    assert_eq!(
        events(&mut p.b),
        [
            Event::DisconnectRequested { id: idb },
            Event::Disconnected { id: idb }
        ]
    );
    let drep = p.b_to_a(t1);
    assert_eq!(drep.iter().map(attr).collect::<Vec<_>>(), [AttrId::Drep]);
    // The DREP answers the DREQ's transaction.
    assert_eq!(tid(&drep[0].mad), tid(&dreq[0].mad));
    assert_eq!(events(&mut p.a), [Event::Disconnected { id: ida }]);

    for (cm, id) in [(&mut p.a, ida), (&mut p.b, idb)] {
        assert_eq!(cm.state(id), Some(State::Timewait));
        assert_eq!(cm.next_deadline(), Some(t1 + TIMEWAIT));
        cm.poll(t1 + TIMEWAIT - Duration::from_nanos(1));
        assert_eq!(cm.state(id), Some(State::Timewait));
        cm.poll(t1 + TIMEWAIT);
        assert_eq!(cm.state(id), None);
        assert_eq!(events(cm), [Event::TimewaitExit { id }]);
        assert_eq!(cm.conn_count(), 0);
        assert_eq!(cm.next_deadline(), None);
    }
}

#[test]
fn the_responder_may_disconnect_too() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, idb) = p.establish(t0);
    p.b.disconnect(t0, idb, &[]).unwrap();
    p.b_to_a(t0);
    assert_eq!(
        events(&mut p.a),
        [
            Event::DisconnectRequested { id: ida },
            Event::Disconnected { id: ida }
        ]
    );
    p.a_to_b(t0);
    assert_eq!(events(&mut p.b), [Event::Disconnected { id: idb }]);
    assert_eq!(p.a.state(ida), Some(State::Timewait));
    assert_eq!(p.b.state(idb), Some(State::Timewait));
    p.a.poll(t0 + TIMEWAIT);
    p.b.poll(t0 + TIMEWAIT);
    assert_eq!((p.a.state(ida), p.b.state(idb)), (None, None));
}

#[test]
fn a_lost_req_is_sent_again_after_the_cm_response_timeout() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    let first = drain(&mut p.a);
    assert_eq!(first.len(), 1);
    assert_eq!(p.a.next_deadline(), Some(t0 + REQ_WAIT));
    p.a.poll(t0 + REQ_WAIT - Duration::from_millis(1));
    assert!(drain(&mut p.a).is_empty());
    p.a.poll(t0 + REQ_WAIT);
    let again = drain(&mut p.a);
    assert_eq!(again, first, "the retransmission is the same REQ");
    assert_eq!(p.a.next_deadline(), Some(t0 + REQ_WAIT * 2));
    assert_eq!(p.a.stats().retransmits, 1);
    for o in &again {
        p.b.on_mad(t0 + REQ_WAIT, A, &o.mad);
    }
    assert!(matches!(
        events(&mut p.b).as_slice(),
        [Event::Request { .. }]
    ));
    assert_eq!(p.a.state(ida), Some(State::ReqSent));
}

#[test]
fn a_req_never_answered_times_out_with_a_rej_timeout() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    let mut reqs = drain(&mut p.a);
    for k in 1..=u32::from(RETRIES) {
        p.a.poll(t0 + REQ_WAIT * k);
        reqs.extend(drain(&mut p.a));
        assert!(events(&mut p.a).is_empty());
    }
    assert_eq!(reqs.len(), 1 + usize::from(RETRIES));
    assert!(reqs.iter().all(|o| attr(o) == AttrId::Req));
    p.a.poll(t0 + REQ_WAIT * (u32::from(RETRIES) + 1));
    assert_eq!(events(&mut p.a), [Event::TimedOut { id: ida }]);
    assert_eq!(p.a.state(ida), None);
    let out = drain(&mut p.a);
    assert_eq!(out.len(), 1);
    let r = rej::Repr::parse(&rej::Packet::new_checked(&out[0].mad[..]).unwrap()).unwrap();
    assert_eq!(r.reason, RejReason::Timeout);
    assert_eq!(r.local_comm_id, ida.0);
    assert_eq!(r.ari_info(), A_GUID.to_be_bytes());
    assert_eq!(r.tid, tid(&reqs[0].mad));
    assert_eq!(p.a.next_deadline(), None);
}

#[test]
fn a_rej_timeout_frees_the_responders_connection() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    // The responder's consumer never answers; the requester gives up.
    for k in 1..=u32::from(RETRIES) {
        p.a.poll(t0 + REQ_WAIT * k);
        drain(&mut p.a);
    }
    let end = t0 + REQ_WAIT * (u32::from(RETRIES) + 1);
    p.a.poll(end);
    assert_eq!(p.a.state(ida), None);
    assert_eq!(p.b.state(idb), Some(State::ReqRcvd));
    // cm_acquire_rejected_id finds it by the ARI's CA GUID and the
    // requester's comm id.
    p.a_to_b(end);
    assert!(matches!(
        events(&mut p.b).as_slice(),
        [Event::Rejected { id, reason: RejReason::Timeout, .. }] if *id == idb
    ));
    assert_eq!(p.b.state(idb), None);
}

#[test]
fn a_req_from_a_qp_still_connected_is_stale() {
    // cm_match_req: a REQ from the (CA GUID, QPN) of a connection we hold
    // gets REJ STALE_CONN, and the old connection a DREQ.
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, idb) = p.establish(t0);
    let mut a2 = Cm::new(config(A_GID, A_GUID, 77));
    a2.connect(t0, B, &connect_params(&[])).unwrap();
    let req = drain(&mut a2);
    p.b.on_mad(t0, A, &req[0].mad);
    assert!(events(&mut p.b).is_empty(), "no Request for a stale REQ");
    let out = drain(&mut p.b);
    assert_eq!(
        out.iter().map(attr).collect::<Vec<_>>(),
        [AttrId::Rej, AttrId::Dreq]
    );
    let r = rej::Repr::parse(&rej::Packet::new_checked(&out[0].mad[..]).unwrap()).unwrap();
    assert_eq!(r.reason, RejReason::StaleConn);
    assert_eq!(r.message_rejected, MsgResponse::Req);
    assert_eq!(p.b.state(idb), Some(State::DreqSent));
    assert_eq!(p.b.conn_count(), 1);
    p.a.on_mad(t0, B, &out[1].mad);
    assert_eq!(p.a.state(ida), Some(State::Timewait));
}

#[test]
fn a_lost_rep_is_sent_again_and_a_duplicate_req_resends_it() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    let req = p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    let t1 = t0 + Duration::from_millis(3);
    p.b.accept(t1, idb, &accept_params(&[])).unwrap();
    let rep = drain(&mut p.b);
    assert_eq!(rep.iter().map(attr).collect::<Vec<_>>(), [AttrId::Rep]);
    // The REP waits for the RTU the requester's CM response time.
    assert_eq!(p.b.next_deadline(), Some(t1 + REP_WAIT));
    p.b.poll(t1 + REP_WAIT);
    assert_eq!(drain(&mut p.b), rep);
    assert_eq!(p.b.next_deadline(), Some(t1 + REP_WAIT * 2));

    // The requester, hearing nothing, resends its REQ: the REP again,
    // and no second Request.
    p.b.on_mad(t1 + REP_WAIT, A, &req[0].mad);
    assert_eq!(drain(&mut p.b), rep);
    assert!(events(&mut p.b).is_empty());
    assert_eq!(p.b.stats().duplicates, 1);
    assert_eq!(p.b.conn_count(), 1);

    // The first copy to arrive is the Reply; the next is a duplicate.
    p.a.on_mad(t1 + REP_WAIT, B, &rep[0].mad);
    p.a.on_mad(t1 + REP_WAIT, B, &rep[0].mad);
    assert!(matches!(events(&mut p.a).as_slice(), [Event::Reply { id, .. }] if *id == ida));
    assert_eq!(p.a.state(ida), Some(State::RepRcvd));
    assert_eq!(p.a.stats().duplicates, 1);
    assert!(drain(&mut p.a).is_empty());
}

#[test]
fn a_duplicate_rep_once_established_resends_the_rtu() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    p.b.accept(t0, idb, &accept_params(&[])).unwrap();
    let rep = p.b_to_a(t0);
    p.a.ready_to_use(t0, ida).unwrap();
    let rtu = drain(&mut p.a);
    assert_eq!(rtu.iter().map(attr).collect::<Vec<_>>(), [AttrId::Rtu]);
    p.a.on_mad(t0, B, &rep[0].mad);
    assert_eq!(drain(&mut p.a), rtu);
    assert_eq!(p.a.stats().duplicates, 1);
}

#[test]
fn data_before_the_rtu_establishes_the_responder() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    p.b.accept(t0, idb, &accept_params(&[])).unwrap();
    p.b_to_a(t0);
    p.a.ready_to_use(t0, ida).unwrap();
    let rtu = drain(&mut p.a); // lost, for now
    assert_eq!(p.b.state(idb), Some(State::RepSent));
    p.b.established(t0, idb).unwrap();
    assert_eq!(p.b.state(idb), Some(State::Established));
    assert_eq!(events(&mut p.b), [Event::Established { id: idb }]);
    assert_eq!(p.b.next_deadline(), None, "the REP is no longer resent");
    p.b.established(t0, idb).unwrap();
    assert!(events(&mut p.b).is_empty());
    // The RTU arriving late is a duplicate.
    p.b.on_mad(t0, A, &rtu[0].mad);
    assert!(events(&mut p.b).is_empty());
    assert_eq!(p.b.stats().duplicates, 1);
}

#[test]
fn an_mra_extends_the_requesters_wait() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    let req = p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    let t1 = t0 + Duration::from_millis(10);
    p.b.send_mra(t1, idb, 22).unwrap();
    assert_eq!(p.b.state(idb), Some(State::MraReqSent));
    let mra_out = p.b_to_a(t1);
    assert_eq!(
        events(&mut p.a),
        [Event::MraReceived {
            id: ida,
            service_timeout: 22
        }]
    );
    assert_eq!(p.a.state(ida), Some(State::MraReqRcvd));
    // cm_mra_handler: 2^(22-8) ms of service plus 2^(17-8) of the path.
    let wait = Duration::from_millis((1 << 14) + (1 << 9));
    assert_eq!(p.a.next_deadline(), Some(t1 + wait));
    p.a.poll(t0 + REQ_WAIT);
    assert!(
        drain(&mut p.a).is_empty(),
        "the old deadline no longer holds"
    );
    // A REQ resent now gets the MRA again.
    p.b.on_mad(t1, A, &req[0].mad);
    assert_eq!(drain(&mut p.b), mra_out);
    // The REP still completes the connection.
    p.b.accept(t1, idb, &accept_params(&[])).unwrap();
    p.b_to_a(t1);
    assert!(matches!(events(&mut p.a).as_slice(), [Event::Reply { .. }]));
    assert_eq!(p.a.next_deadline(), None);
}

#[test]
fn a_rejection_carries_its_reason_and_private_data() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    // NVMe/RDMA's reject record: recfmt 0, status NVME_RDMA_CM_NO_RSC (6).
    let record = [0x00, 0x00, 0x06, 0x00];
    p.b.reject(t0, idb, RejReason::ConsumerDefined, &[], &record)
        .unwrap();
    assert_eq!(p.b.state(idb), None);
    p.b_to_a(t0);
    let mut want = [0u8; rej::PRIVATE_DATA_LEN];
    want[..4].copy_from_slice(&record);
    assert_eq!(
        events(&mut p.a),
        [Event::Rejected {
            id: ida,
            reason: RejReason::ConsumerDefined,
            private_data: Box::new(want)
        }]
    );
    assert_eq!(p.a.state(ida), None);
    assert_eq!(p.a.next_deadline(), None);
    assert_eq!(
        p.b.reject(t0, idb, RejReason::ConsumerDefined, &[], &[]),
        Err(CmError::UnknownConn { id: idb.0 })
    );
}

#[test]
fn calls_out_of_state_or_out_of_bounds_are_refused() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    assert_eq!(
        p.a.disconnect(t0, ida, &[]),
        Err(CmError::WrongState {
            id: ida.0,
            op: "disconnect",
            state: State::ReqSent
        })
    );
    assert_eq!(
        p.a.connect(t0, B, &connect_params(&[0; 93])),
        Err(CmError::PrivateData {
            msg: "REQ",
            len: 93,
            max: 92
        })
    );
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        p.b.accept(t0, idb, &accept_params(&[0; 197])),
        Err(CmError::PrivateData {
            msg: "REP",
            len: 197,
            max: 196
        })
    );
    assert_eq!(
        p.b.reject(t0, idb, RejReason::ConsumerDefined, &[0; 73], &[]),
        Err(CmError::Ari { len: 73, max: 72 })
    );
    assert_eq!(
        p.b.send_mra(t0, idb, 32),
        Err(CmError::TimeExponent { value: 32 })
    );
    assert_eq!(p.b.state(idb), Some(State::ReqRcvd));
    assert!(drain(&mut p.b).is_empty());
}

/// A MAD of attribute `attr` with tid `tid` whose first 12 bytes after the
/// header are `body` (the comm ids and, for a DREQ, the QPN).
fn mad_with(attr: u16, tid: u64, body: &[u8]) -> [u8; MAD_LEN] {
    let mut b = [0u8; MAD_LEN];
    mad::Repr::cm(attr.into(), tid, 0).emit(&mut mad::Packet::new_unchecked(&mut b[..]));
    b[24..24 + body.len()].copy_from_slice(body);
    b
}

#[test]
fn messages_for_unknown_connections_and_garbage_are_counted() {
    let t0 = Instant::now();
    let mut b = Cm::new(config(B_GID, B_GUID, 2));
    let ids = [0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04];
    b.on_mad(t0, A, &mad_with(0x0013, 5, &ids)); // REP
    b.on_mad(t0, A, &mad_with(0x0014, 6, &ids)); // RTU
    b.on_mad(t0, A, &mad_with(0x0016, 7, &ids)); // DREP
    assert_eq!(b.stats().unknown, 3);
    assert!(drain(&mut b).is_empty());
    // An unknown DREQ is still answered (cm_issue_drep), ids swapped.
    b.on_mad(t0, A, &mad_with(0x0015, 8, &ids));
    assert_eq!(b.stats().unknown, 4);
    let out = drain(&mut b);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].to, A);
    let d = drep::Repr::parse(&drep::Packet::new_checked(&out[0].mad[..]).unwrap()).unwrap();
    assert_eq!(
        (d.tid, d.local_comm_id, d.remote_comm_id),
        (8, 0x0102_0304, 0xdead_beef)
    );

    b.on_mad(t0, A, &[]);
    b.on_mad(t0, A, &[0x55; 100]);
    b.on_mad(t0, A, &[0x55; MAD_LEN]);
    let mut sa = mad_with(0x0014, 1, &ids);
    sa[1] = 0x03;
    b.on_mad(t0, A, &sa);
    b.on_mad(t0, A, &mad_with(0x0019, 1, &ids)); // LAP: not handled
    assert_eq!(b.stats().malformed, 5);
    assert_eq!(b.conn_count(), 0);
    assert!(events(&mut b).is_empty());
}

#[test]
fn a_known_connection_does_not_answer_another_peer() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (_, idb) = p.establish(t0);
    let stranger = Peer {
        gid: [0xcc; 16],
        qpn: 1,
    };
    let (local, remote) = {
        let c = &p.b.conns[&idb.0];
        (c.local_id, c.remote_id)
    };
    let mut body = Vec::new();
    body.extend_from_slice(&remote.to_be_bytes());
    body.extend_from_slice(&local.to_be_bytes());
    body.extend_from_slice(&[0x00, 0x04, 0x56, 0x00]);
    p.b.on_mad(t0, stranger, &mad_with(0x0015, 9, &body));
    assert_eq!(p.b.state(idb), Some(State::Established));
    // The same DREQ from the real peer disconnects.
    p.b.on_mad(t0, A, &mad_with(0x0015, 9, &body));
    assert_eq!(p.b.state(idb), Some(State::Timewait));
}

#[test]
fn a_req_beyond_max_conns_is_rejected_for_lack_of_resources() {
    let t0 = Instant::now();
    let mut b = Cm::new(CmConfig {
        max_conns: 2,
        ..config(B_GID, B_GUID, 2)
    });
    let mut a = Cm::new(config(A_GID, A_GUID, 1));
    let mut reqs = Vec::new();
    for qpn in 0x10..0x13 {
        let p = ConnectParams {
            local_qpn: qpn,
            ..connect_params(&[])
        };
        a.connect(t0, B, &p).unwrap();
        reqs.extend(drain(&mut a));
    }
    for o in &reqs {
        b.on_mad(t0, A, &o.mad);
    }
    assert_eq!(events(&mut b).len(), 2);
    assert_eq!(b.conn_count(), 2);
    assert_eq!(b.stats().rejected_full, 1);
    let out = drain(&mut b);
    assert_eq!(out.len(), 1);
    let r = rej::Repr::parse(&rej::Packet::new_checked(&out[0].mad[..]).unwrap()).unwrap();
    let third = req::Packet::new_checked(&reqs[2].mad[..]).unwrap();
    assert_eq!(r.reason, RejReason::NoResources);
    assert_eq!(r.message_rejected, MsgResponse::Req);
    assert_eq!(r.remote_comm_id, third.local_comm_id());
    assert_eq!(r.tid, tid(&reqs[2].mad));
    // The requester takes it as the end of its third connection.
    a.on_mad(t0, B, &out[0].mad);
    let ev = events(&mut a);
    assert!(matches!(
        ev.as_slice(),
        [Event::Rejected {
            reason: RejReason::NoResources,
            ..
        }]
    ));
    assert_eq!(a.conn_count(), 2);
}

#[test]
fn the_rep_answers_the_req_field_by_field() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    p.a.connect(t0, B, &connect_params(b"nvme")).unwrap();
    let reqs = p.a_to_b(t0);
    let req_p = req::Packet::new_checked(&reqs[0].mad[..]).unwrap();
    assert_eq!(req_p.local_ca_guid(), A_GUID);
    assert_eq!(req_p.local_qpn(), 0x00_0123);
    assert_eq!(req_p.path(&req::field::PRIMARY).local_gid, A_GID);
    assert_eq!(req_p.path(&req::field::PRIMARY).local_ack_timeout, 17);
    assert_eq!(req_p.max_cm_retries(), RETRIES);
    assert_eq!(&req_p.private_data()[..4], b"nvme");
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, req, from }] => {
            assert_eq!(*from, A);
            assert_eq!(req.local_comm_id, req_p.local_comm_id());
            *id
        }
        other => panic!("{other:?}"),
    };
    p.b.accept(t0, idb, &accept_params(b"ok")).unwrap();
    let out = drain(&mut p.b);
    let rep_p = rep::Packet::new_checked(&out[0].mad[..]).unwrap();
    let hdr = mad::Packet::new_checked(&out[0].mad[..]).unwrap();
    assert_eq!(hdr.attr_id(), AttrId::Rep);
    assert_eq!(hdr.tid(), tid(&reqs[0].mad));
    assert_eq!(rep_p.remote_comm_id(), req_p.local_comm_id());
    assert_eq!(rep_p.local_comm_id(), idb.0);
    assert_eq!(rep_p.local_qpn(), 0x00_0456);
    assert_eq!(rep_p.starting_psn(), 0x00_7777);
    assert_eq!(rep_p.responder_resources(), 2);
    assert_eq!(rep_p.initiator_depth(), 4);
    assert_eq!(rep_p.target_ack_delay(), ACK_DELAY);
    assert_eq!(rep_p.local_ca_guid(), B_GUID);
    assert_eq!(&rep_p.private_data()[..2], b"ok");
    // The bytes at the published offsets: remote comm id at 24 + 4, QPN
    // at 24 + 12, PSN at 24 + 20.
    assert_eq!(out[0].mad[28..32], req_p.local_comm_id().to_be_bytes());
    assert_eq!(out[0].mad[36..39], [0x00, 0x04, 0x56]);
    assert_eq!(out[0].mad[44..47], [0x00, 0x77, 0x77]);
}

#[test]
fn comm_ids_look_random_and_are_not_reused_while_in_timewait() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, _) = p.establish(t0);
    p.a.disconnect(t0, ida, &[]).unwrap();
    p.a_to_b(t0);
    p.b_to_a(t0);
    assert_eq!(p.a.state(ida), Some(State::Timewait));
    let mut seen = vec![ida.0];
    for _ in 0..1000 {
        let id = p.a.connect(t0, B, &connect_params(&[])).unwrap();
        assert_ne!(id, ida);
        assert_ne!(id.0, 0);
        seen.push(id.0);
        // Abandon it (REJ from REQ_SENT frees it at once).
        p.a.reject(t0, id, RejReason::ConsumerDefined, &[], &[])
            .unwrap();
        drain(&mut p.a);
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 1001);
    // Not a plain counter from 0 or 1.
    assert!(seen.iter().any(|&id| id > 0x00ff_ffff));
    // Another seed, other ids.
    let mut other = Cm::new(config(A_GID, A_GUID, 99));
    let id = other.connect(t0, B, &connect_params(&[])).unwrap();
    assert_ne!(id, ida);
}

#[test]
fn a_full_output_queue_drops_its_oldest_and_counts() {
    let t0 = Instant::now();
    let mut a = Cm::new(CmConfig {
        max_outputs: 2,
        ..config(A_GID, A_GUID, 1)
    });
    let ids: Vec<ConnId> = (0..3)
        .map(|_| a.connect(t0, B, &connect_params(&[])).unwrap())
        .collect();
    assert_eq!(a.output_count(), 2);
    assert_eq!(a.stats().outputs_dropped, 1);
    let left: Vec<u32> = drain(&mut a)
        .iter()
        .map(|o| {
            req::Packet::new_checked(&o.mad[..])
                .unwrap()
                .local_comm_id()
        })
        .collect();
    assert_eq!(left, [ids[1].0, ids[2].0]);
}

#[test]
fn a_dreq_that_goes_unanswered_ends_in_timewait() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, _) = p.establish(t0);
    p.a.disconnect(t0, ida, &[]).unwrap();
    let dreq = drain(&mut p.a);
    for k in 1..=u32::from(RETRIES) {
        p.a.poll(t0 + REQ_WAIT * k);
        assert_eq!(drain(&mut p.a), dreq);
    }
    let end = t0 + REQ_WAIT * (u32::from(RETRIES) + 1);
    p.a.poll(end);
    assert_eq!(events(&mut p.a), [Event::Disconnected { id: ida }]);
    assert_eq!(p.a.state(ida), Some(State::Timewait));
    assert_eq!(p.a.next_deadline(), Some(end + TIMEWAIT));
    // A DREQ from the peer now is answered with a DREP again.
    let c = &p.a.conns[&ida.0];
    let r = dreq::Repr {
        tid: 77,
        local_comm_id: c.remote_id,
        remote_comm_id: c.local_id,
        remote_qpn: c.local_qpn,
        private_data: [0; dreq::PRIVATE_DATA_LEN],
    };
    let mut m = [0u8; MAD_LEN];
    CmMessage::Dreq(r).emit(&mut m).unwrap();
    p.a.on_mad(end, B, &m);
    let out = drain(&mut p.a);
    assert_eq!(out.iter().map(attr).collect::<Vec<_>>(), [AttrId::Drep]);
    assert_eq!(p.a.stats().duplicates, 1);
}

#[test]
fn the_requester_may_refuse_the_rep() {
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    p.b.accept(t0, idb, &accept_params(&[])).unwrap();
    p.b_to_a(t0);
    events(&mut p.a);
    p.a.reject(t0, ida, RejReason::ConsumerDefined, &[9], &[8])
        .unwrap();
    assert_eq!(p.a.state(ida), None);
    let out = p.a_to_b(t0);
    let r = rej::Repr::parse(&rej::Packet::new_checked(&out[0].mad[..]).unwrap()).unwrap();
    assert_eq!(r.message_rejected, MsgResponse::Rep);
    assert_eq!((r.local_comm_id, r.remote_comm_id), (ida.0, idb.0));
    assert_eq!(r.ari_info(), [9]);
    assert!(matches!(
        events(&mut p.b).as_slice(),
        [Event::Rejected { id, reason: RejReason::ConsumerDefined, private_data }]
            if *id == idb && private_data[0] == 8
    ));
    // cm_rej_handler: REP_SENT, not stale: back to idle, freed.
    assert_eq!(p.b.state(idb), None);
    assert_eq!(p.b.next_deadline(), None);
}

#[test]
fn a_dreq_for_another_qp_is_ignored() {
    // cm_dreq_handler drops a DREQ whose remote QPN is not our QP.
    let t0 = Instant::now();
    let mut p = Pair::new();
    let (ida, idb) = p.establish(t0);
    let r = dreq::Repr {
        tid: 1,
        local_comm_id: ida.0,
        remote_comm_id: idb.0,
        remote_qpn: 0x00_0999,
        private_data: [0; dreq::PRIVATE_DATA_LEN],
    };
    let mut m = [0u8; MAD_LEN];
    CmMessage::Dreq(r).emit(&mut m).unwrap();
    p.b.on_mad(t0, A, &m);
    assert_eq!(p.b.state(idb), Some(State::Established));
    assert_eq!(p.b.stats().unexpected, 1);
    assert!(drain(&mut p.b).is_empty());
    let right = dreq::Repr {
        remote_qpn: 0x00_0456,
        ..r
    };
    CmMessage::Dreq(right).emit(&mut m).unwrap();
    p.b.on_mad(t0, A, &m);
    assert_eq!(p.b.state(idb), Some(State::Timewait));
}

#[test]
fn a_full_event_queue_drops_its_oldest_and_counts() {
    let t0 = Instant::now();
    let mut b = Cm::new(CmConfig {
        max_events: 2,
        ..config(B_GID, B_GUID, 2)
    });
    let mut a = Cm::new(config(A_GID, A_GUID, 1));
    let mut firsts = Vec::new();
    for qpn in 0x20..0x23 {
        let p = ConnectParams {
            local_qpn: qpn,
            ..connect_params(&[])
        };
        a.connect(t0, B, &p).unwrap();
        for o in drain(&mut a) {
            firsts.push(
                req::Packet::new_checked(&o.mad[..])
                    .unwrap()
                    .local_comm_id(),
            );
            b.on_mad(t0, A, &o.mad);
        }
    }
    assert_eq!(b.event_count(), 2);
    assert_eq!(b.stats().events_dropped, 1);
    let left: Vec<u32> = events(&mut b)
        .iter()
        .map(|e| match e {
            Event::Request { req, .. } => req.local_comm_id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(left, firsts[1..]);
}

mod hostile;

#[test]
fn mra_and_rtu_bodies_carry_both_ids() {
    // What a requester's MRA for a REP looks like on the wire, read back
    // through the wire views (the ids and the service timeout).
    let t0 = Instant::now();
    let mut p = Pair::new();
    let ida = p.a.connect(t0, B, &connect_params(&[])).unwrap();
    p.a_to_b(t0);
    let idb = match events(&mut p.b).as_slice() {
        [Event::Request { id, .. }] => *id,
        other => panic!("{other:?}"),
    };
    p.b.accept(t0, idb, &accept_params(&[])).unwrap();
    p.b_to_a(t0);
    p.a.send_mra(t0, ida, 9).unwrap();
    let out = drain(&mut p.a);
    let m = mra::Repr::parse(&mra::Packet::new_checked(&out[0].mad[..]).unwrap()).unwrap();
    assert_eq!((m.local_comm_id, m.remote_comm_id), (ida.0, idb.0));
    assert_eq!(m.message_mraed, MsgResponse::Rep);
    assert_eq!(m.service_timeout, 9);
    for o in &out {
        p.b.on_mad(t0, A, &o.mad);
    }
    assert_eq!(
        events(&mut p.b),
        [Event::MraReceived {
            id: idb,
            service_timeout: 9
        }]
    );
    assert_eq!(p.b.state(idb), Some(State::MraRepRcvd));
    // The responder's REP now waits 2^(9-8) + 2^(17-8) ms.
    assert_eq!(
        p.b.next_deadline(),
        Some(t0 + Duration::from_millis(2 + 512))
    );
    p.a.ready_to_use(t0, ida).unwrap();
    let rtu_out = p.a_to_b(t0);
    let r = rtu::Repr::parse(&rtu::Packet::new_checked(&rtu_out[0].mad[..]).unwrap()).unwrap();
    assert_eq!((r.local_comm_id, r.remote_comm_id), (ida.0, idb.0));
    assert_eq!(p.b.state(idb), Some(State::Established));
}
