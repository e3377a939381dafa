//! What goes on the wire: the REP field by field, comm ids, the bounded output and event queues, MRA and RTU bodies.

use super::*;

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
