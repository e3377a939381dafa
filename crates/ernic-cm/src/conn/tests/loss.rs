//! Lost and duplicated MADs: resends after cm.c's timeouts, REJ TIMEOUT, stale REQs, duplicate REQ/REP, data before the RTU, MRA.

use super::*;

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
