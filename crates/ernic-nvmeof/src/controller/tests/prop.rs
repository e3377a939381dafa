//! A random-SQE property test over admin, I/O, unbound and discovery queues.

use super::*;
use proptest::prelude::*;

/// Runs `s` with host data of the planned length: a well-formed connect
/// data block (for this host, dynamic or this controller's id) when
/// `good_connect`, else `fill` bytes.
fn run_with(
    t: &mut Target,
    q: &mut QueueState,
    now: Instant,
    s: &[u8; 64],
    good_connect: Option<u16>,
    fill: u8,
) -> Option<cqe::Repr> {
    let mut buf = match t.plan(q, s) {
        Err(c) => return Some(c),
        Ok(x) => match good_connect {
            Some(cntlid) if x.len() == 1024 => connect_data(cntlid, NQN, HOSTNQN),
            _ => vec![fill; x.len() as usize],
        },
    };
    match t.execute(q, now, s, &mut buf) {
        Outcome::Done(c) => Some(c),
        Outcome::Deferred => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    /// Random SQEs on the admin queue, an I/O queue, fresh unbound
    /// queues and a discovery controller: nothing panics, every command
    /// completes once (only an AER on an admin queue is held), a
    /// completion names its command and queue, and the state stays
    /// within its bounds.
    #[test]
    fn random_sqes_never_panic(
        cmds in proptest::collection::vec(
            (
                0u8..4,
                any::<u8>(),
                0u32..4,
                proptest::array::uniform32(any::<u8>()),
                any::<u8>(),
                prop_oneof![0u32..2048, Just(1024u32), Just(4096u32)],
                any::<bool>(),
            ),
            1..40,
        ),
    ) {
        let mut h = host();
        expect(&h.connect_io(1, 31), Status::SUCCESS);
        let mut disc = h.t.new_queue();
        let (c, _) = run(
            &mut h.t,
            &mut disc,
            h.now,
            &connect_sqe(1, 0, 31, 0),
            &connect_data(0xffff, DISCOVERY_NQN, HOSTNQN),
        );
        prop_assert!(c.unwrap().status.is_success());
        let mut fresh = Vec::new();
        for (which, opcode, nsid, tail, flags, len, good) in cmds {
            let mut s = sqe(opcode, 9, nsid, len);
            if flags & 1 == 1 {
                s[1] = flags;
            }
            s[40..64].copy_from_slice(&tail[..24]);
            s[4] = tail[24];
            let connect = good.then_some(if tail[25] & 1 == 0 { 0xffff } else { h.cntlid });
            let q = match which {
                0 => &mut h.admin,
                1 => &mut h.io[0],
                2 => {
                    fresh.push(h.t.new_queue());
                    fresh.last_mut().unwrap()
                }
                _ => &mut disc,
            };
            let qid = q.binding().map_or(0, |(_, qid)| qid);
            match run_with(&mut h.t, q, h.now, &s, connect, tail[26]) {
                Some(c) => {
                    prop_assert_eq!(c.command_id, 9);
                    let qid_after = q.binding().map_or(0, |(_, qid)| qid);
                    prop_assert!(c.sq_id == qid || c.sq_id == qid_after);
                }
                None => prop_assert!(opcode == 0x0c && qid == 0),
            }
            if tail[27] == 0 {
                h.t.notify(AsyncEvent::NamespaceChanged { nsid: u32::from(tail[28]) });
            }
            let mut out = Vec::new();
            h.now += Duration::from_millis(10);
            h.t.poll(h.now, &mut out);
            prop_assert!(out.len() <= MAX_CONTROLLERS * (AER_LIMIT + 1));
            prop_assert!(h.t.pending.is_empty());
            prop_assert!(h.t.controllers.len() <= MAX_CONTROLLERS);
            for c in h.t.controllers.values() {
                prop_assert!(c.nr_aers <= AER_LIMIT);
                prop_assert!(c.granted <= MAX_QUEUES);
            }
        }
    }
}
