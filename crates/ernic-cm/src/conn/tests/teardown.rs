//! DREQ without an answer, a refused REP, a DREQ for another QP, the event queue's bound, and the MRA and RTU bodies on the wire.

use super::*;

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
