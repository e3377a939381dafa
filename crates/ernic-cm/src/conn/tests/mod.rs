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

/// A MAD of attribute `attr` with tid `tid` whose first 12 bytes after the
/// header are `body` (the comm ids and, for a DREQ, the QPN).
fn mad_with(attr: u16, tid: u64, body: &[u8]) -> [u8; MAD_LEN] {
    let mut b = [0u8; MAD_LEN];
    mad::Repr::cm(attr.into(), tid, 0).emit(&mut mad::Packet::new_unchecked(&mut b[..]));
    b[24..24 + body.len()].copy_from_slice(body);
    b
}

mod hostile;
mod lifecycle;
mod loss;
mod refusals;
mod teardown;
mod wire;
