//! A property test: any sequence of MADs (valid headers, random bodies
//! and ids, some naming connections held), garbage, consumer calls (as
//! responder and as requester) and times leaves a [`Cm`] within its
//! bounds, with nothing due after a poll, and never makes it panic.

use super::*;
use proptest::prelude::*;

/// One step of a hostile run.
#[derive(Clone, Debug)]
enum Step {
    /// A CM MAD of attribute `attr` whose body is `body` (the comm
    /// ids drawn from a small set, so that some name connections).
    Mad {
        attr: u16,
        ids: (u32, u32),
        body: Vec<u8>,
        from: u8,
    },
    /// Bytes of any kind.
    Garbage(Vec<u8>),
    /// A consumer call on the `n`th connection held.
    Accept(usize),
    Reject(usize),
    Mra(usize, u8),
    Established(usize),
    Disconnect(usize),
    /// Our own REQ, to peer `n`, from QP `qpn`.
    Connect(u8, u32),
    /// Time passes, then the timers run.
    Poll(u64),
}

fn step() -> impl Strategy<Value = Step> {
    let id = prop_oneof![Just(0u32), 1u32..4, any::<u32>()];
    prop_oneof![
        (
            prop_oneof![0x0010u16..=0x0016, Just(0x0019)],
            (id.clone(), id),
            proptest::collection::vec(any::<u8>(), 0..232),
            0u8..3,
        )
            .prop_map(|(attr, ids, body, from)| Step::Mad {
                attr,
                ids,
                body,
                from
            }),
        proptest::collection::vec(any::<u8>(), 0..300).prop_map(Step::Garbage),
        (0usize..8).prop_map(Step::Accept),
        (0usize..8).prop_map(Step::Reject),
        (0usize..8, 0u8..40).prop_map(|(n, t)| Step::Mra(n, t)),
        (0usize..8).prop_map(Step::Established),
        (0usize..8).prop_map(Step::Disconnect),
        (0u8..3, 1u32..4).prop_map(|(n, qpn)| Step::Connect(n, qpn)),
        (0u64..20_000).prop_map(Step::Poll),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_cm_survives_any_sequence_within_its_bounds(
        steps in proptest::collection::vec(step(), 1..120)
    ) {
        let cfg = CmConfig { max_conns: 4, max_outputs: 8, max_events: 8, ..config(B_GID, B_GUID, 5) };
        let mut b = Cm::new(cfg);
        let mut now = Instant::now();
        let peers = [A, Peer { gid: [0xcc; 16], qpn: 1 }, Peer { gid: [0xdd; 16], qpn: 7 }];
        // Comm ids a peer has used, so that MADs can name real ones.
        let mut held: Vec<ConnId> = Vec::new();
        for s in steps {
            let s_was_poll = matches!(s, Step::Poll(_));
            match s {
                Step::Mad { attr, ids, body, from } => {
                    let mut m = [0u8; MAD_LEN];
                    mad::Repr::cm(attr.into(), u64::from(ids.0), 0)
                        .emit(&mut mad::Packet::new_unchecked(&mut m[..]));
                    m[24..24 + body.len()].copy_from_slice(&body);
                    // Name a held connection sometimes.
                    let remote = held.get(ids.1 as usize % 4).map_or(ids.1, |c| c.0);
                    m[24..28].copy_from_slice(&ids.0.to_be_bytes());
                    m[28..32].copy_from_slice(&remote.to_be_bytes());
                    b.on_mad(now, peers[usize::from(from)], &m);
                }
                Step::Garbage(g) => b.on_mad(now, A, &g),
                Step::Accept(n) => if let Some(&id) = held.get(n) {
                    let _ = b.accept(now, id, &accept_params(&[]));
                },
                Step::Reject(n) => if let Some(&id) = held.get(n) {
                    let _ = b.reject(now, id, RejReason::ConsumerDefined, &[1], &[2]);
                },
                Step::Mra(n, t) => if let Some(&id) = held.get(n) {
                    let _ = b.send_mra(now, id, t);
                },
                Step::Established(n) => if let Some(&id) = held.get(n) {
                    let _ = b.established(now, id);
                },
                Step::Disconnect(n) => if let Some(&id) = held.get(n) {
                    let _ = b.disconnect(now, id, &[3]);
                },
                Step::Connect(n, qpn) => {
                    let p = ConnectParams { local_qpn: qpn, ..connect_params(&[7]) };
                    if let Ok(id) = b.connect(now, peers[usize::from(n)], &p) {
                        held.push(id);
                    }
                }
                Step::Poll(ms) => {
                    now += Duration::from_millis(ms);
                    b.poll(now);
                }
            }
            prop_assert!(b.conn_count() <= 4);
            prop_assert!(b.output_count() <= 8);
            prop_assert!(b.event_count() <= 8);
            if s_was_poll {
                // After poll(now) nothing is left due.
                prop_assert!(b.next_deadline().is_none_or(|d| d > now));
            }
            // Take the events, as a consumer would, and learn the ids.
            while let Some(e) = b.pop_event() {
                if let Event::Request { id, .. } = e {
                    held.push(id);
                }
            }
            held.retain(|&id| b.state(id).is_some());
            if b.output_count() > 4 {
                drain(&mut b);
            }
        }
    }
}
