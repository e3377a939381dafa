//! Rejections, calls out of state or bounds, MADs for unknown connections or from other peers, and the max_conns bound.

use super::*;

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
