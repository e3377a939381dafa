//! The connection manager's state machine (`ernic_cm::conn::Cm`), driven
//! as a hostile fabric drives it: MADs from three peers (two ports and one
//! claiming the CM's own GID), raw or built field by field from the ids the
//! CM itself sent (REQ, REP, RTU, REJ, MRA, DREQ, DREP, so retransmissions,
//! answers and stale connections reach every state), time passing, and the
//! consumer's calls (`connect`, `accept`, `reject`, `send_mra`,
//! `ready_to_use`, `established`, `disconnect`) on ids from its events.
//!
//! The CM runs with small bounds (8 connections, 16 outputs, 16 events), so
//! a few steps fill each of them. Invariants, after every step: nothing
//! panics; no count exceeds its bound; no timer is due at `now` (every
//! step either is a `poll` or sets its timers in the future, so
//! `next_deadline` is never in the past); a consumer call that succeeds
//! leaves the connection in the state its doc names, and one refused for
//! the state names the state the connection is in. Every MAD the CM sends
//! goes to a peer that spoke to it or that it connected to, parses as a CM
//! message and emits back to the same 256 bytes.

use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use ernic_cm::conn::{
    AcceptParams, Cm, CmConfig, CmError, ConnId, ConnectParams, Event, Output, Peer, State,
};
use ernic_cm::mad::MAD_LEN;
use ernic_cm::msg::MsgResponse;
use ernic_cm::private_data::cma;
use ernic_cm::rej::RejReason;
use ernic_cm::{CmMessage, drep, dreq, mra, rej, rep, req, rtu};

use crate::{Bytes, Enc};

const MAX_OPS: usize = 256;
const MAX_CONNS: usize = 8;
const MAX_OUTPUTS: usize = 16;
const MAX_EVENTS: usize = 16;
/// Connections the harness remembers (as the peers see them).
const LINKS: usize = 16;
/// Connection ids from events and `connect` the consumer calls pick from.
const IDS: usize = 16;
const LOCAL_GID: [u8; 16] = [0xc; 16];
const CA_GUID: u64 = 0x0002_c903_00cc_0001;
/// The peers: two ports, and one that claims the CM's own GID.
const PEERS: [[u8; 16]; 3] = [[0xa; 16], [0xb; 16], LOCAL_GID];
/// The CA GUIDs peers' messages name: few, so QPs collide and connections
/// go stale.
const GUIDS: [u64; 3] = [0x0002_c903_00aa_0001, 0x0002_c903_00bb_0002, CA_GUID];
/// Private data of consumer calls (its length comes from the input).
const PD: [u8; 256] = [0x5a; 256];

/// A step.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// Bytes from `peer` as a MAD (any length).
    Raw { peer: u8, bytes: Bytes<300> },
    /// A REQ from `peer`: with `link`, that link's REQ again (a
    /// retransmission, its ids, QP and GUID); else a new connection with
    /// comm id `id`, QP `qpn` and CA GUID `guid`.
    Req {
        peer: u8,
        link: Option<u8>,
        id: u32,
        qpn: u16,
        guid: u8,
        local_timeout: u8,
        retries: u8,
        ack_timeout: u8,
    },
    /// A REP answering link `link` (a REQ the CM sent) as comm id `id`
    /// (kept if the link already has one), QP `qpn`, CA GUID `guid`.
    Rep {
        link: u8,
        peer: u8,
        id: u32,
        qpn: u16,
        guid: u8,
        ack_delay: u8,
    },
    /// An RTU for link `link`.
    Rtu { link: u8, peer: u8 },
    /// A REJ of link `link`'s message `what`, for `reason`; with
    /// `timeout_ari`, the link's CA GUID as the rejection info (how a
    /// REJ TIMEOUT names its connection).
    Rej {
        link: u8,
        peer: u8,
        what: u8,
        reason: u8,
        timeout_ari: bool,
    },
    /// An MRA of link `link`'s message `what`.
    Mra {
        link: u8,
        peer: u8,
        what: u8,
        service_timeout: u8,
    },
    /// A DREQ for link `link`, naming the CM's QP (or `qpn`).
    Dreq {
        link: u8,
        peer: u8,
        qpn: Option<u32>,
    },
    /// A DREP for link `link`.
    Drep { link: u8, peer: u8 },
    /// Time passes, `ms << (shift % 24)` milliseconds, then `poll`.
    Advance { ms: u16, shift: u8 },
    /// `connect` to `peer`.
    Connect {
        peer: u8,
        qpn: u16,
        retries: u8,
        remote_timeout: u8,
        local_timeout: u8,
        hop_limit: u8,
        pd: u8,
    },
    /// `accept` of id `id`.
    Accept { id: u8, qpn: u16, pd: u8 },
    /// `reject` of id `id`.
    Reject { id: u8, reason: u8, ari: u8, pd: u8 },
    /// `send_mra` for id `id`.
    SendMra { id: u8, service_timeout: u8 },
    /// `ready_to_use` of id `id`.
    ReadyToUse { id: u8 },
    /// `established` of id `id` (data came first).
    Established { id: u8 },
    /// `disconnect` of id `id`.
    Disconnect { id: u8, pd: u8 },
    /// Takes up to `outputs` MADs and `events` events from the CM.
    Drain { outputs: u8, events: u8 },
}

impl Op {
    /// Writes this step in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = 17;
        match self {
            Op::Raw { peer, bytes } => {
                e.variant(0, n).u8(*peer).bytes(&bytes.0, 300);
            }
            Op::Req {
                peer,
                link,
                id,
                qpn,
                guid,
                local_timeout,
                retries,
                ack_timeout,
            } => {
                e.variant(1, n).u8(*peer);
                match link {
                    None => e.bool(false),
                    Some(l) => e.bool(true).u8(*l),
                };
                e.u32(*id)
                    .u16(*qpn)
                    .u8(*guid)
                    .u8(*local_timeout)
                    .u8(*retries)
                    .u8(*ack_timeout);
            }
            Op::Rep {
                link,
                peer,
                id,
                qpn,
                guid,
                ack_delay,
            } => {
                e.variant(2, n)
                    .u8(*link)
                    .u8(*peer)
                    .u32(*id)
                    .u16(*qpn)
                    .u8(*guid)
                    .u8(*ack_delay);
            }
            Op::Rtu { link, peer } => {
                e.variant(3, n).u8(*link).u8(*peer);
            }
            Op::Rej {
                link,
                peer,
                what,
                reason,
                timeout_ari,
            } => {
                e.variant(4, n)
                    .u8(*link)
                    .u8(*peer)
                    .u8(*what)
                    .u8(*reason)
                    .bool(*timeout_ari);
            }
            Op::Mra {
                link,
                peer,
                what,
                service_timeout,
            } => {
                e.variant(5, n)
                    .u8(*link)
                    .u8(*peer)
                    .u8(*what)
                    .u8(*service_timeout);
            }
            Op::Dreq { link, peer, qpn } => {
                e.variant(6, n).u8(*link).u8(*peer);
                match qpn {
                    None => e.bool(false),
                    Some(q) => e.bool(true).u32(*q),
                };
            }
            Op::Drep { link, peer } => {
                e.variant(7, n).u8(*link).u8(*peer);
            }
            Op::Advance { ms, shift } => {
                e.variant(8, n).u16(*ms).u8(*shift);
            }
            Op::Connect {
                peer,
                qpn,
                retries,
                remote_timeout,
                local_timeout,
                hop_limit,
                pd,
            } => {
                e.variant(9, n)
                    .u8(*peer)
                    .u16(*qpn)
                    .u8(*retries)
                    .u8(*remote_timeout)
                    .u8(*local_timeout)
                    .u8(*hop_limit)
                    .u8(*pd);
            }
            Op::Accept { id, qpn, pd } => {
                e.variant(10, n).u8(*id).u16(*qpn).u8(*pd);
            }
            Op::Reject {
                id,
                reason,
                ari,
                pd,
            } => {
                e.variant(11, n).u8(*id).u8(*reason).u8(*ari).u8(*pd);
            }
            Op::SendMra {
                id,
                service_timeout,
            } => {
                e.variant(12, n).u8(*id).u8(*service_timeout);
            }
            Op::ReadyToUse { id } => {
                e.variant(13, n).u8(*id);
            }
            Op::Established { id } => {
                e.variant(14, n).u8(*id);
            }
            Op::Disconnect { id, pd } => {
                e.variant(15, n).u8(*id).u8(*pd);
            }
            Op::Drain { outputs, events } => {
                e.variant(16, n).u8(*outputs).u8(*events);
            }
        }
    }
}

/// A connection as its peer sees it: what the peer's built messages name.
#[derive(Debug, Clone, Copy, Default)]
struct Link {
    /// Index into [`PEERS`].
    peer: usize,
    /// The CM's comm id (0 until the CM's REQ or REP showed it).
    cm_id: u32,
    /// The peer's comm id (0 until the peer chose one).
    our_id: u32,
    /// The transaction id answers carry.
    tid: u64,
    /// The CM's QPN (from its REQ or REP).
    cm_qpn: u32,
    /// The peer's QPN and CA GUID.
    our_qpn: u32,
    guid: u64,
}

struct World {
    cm: Cm,
    now: Instant,
    links: Vec<Link>,
    ids: Vec<ConnId>,
    next_tid: u64,
}

fn peer(i: usize) -> Peer {
    Peer {
        gid: PEERS[i % PEERS.len()],
        qpn: 1,
    }
}

/// `len` bytes of [`PD`], the length taken modulo a little more than the
/// field holds (so an oversized one is met, but rarely).
fn pd(len: u8, max: usize) -> &'static [u8] {
    &PD[..usize::from(len) % (max + 4)]
}

fn msg_response(what: u8) -> MsgResponse {
    [MsgResponse::Req, MsgResponse::Rep, MsgResponse::Other][usize::from(what) % 3]
}

impl World {
    fn new() -> World {
        World {
            cm: Cm::new(CmConfig {
                local_gid: LOCAL_GID,
                ca_guid: CA_GUID,
                max_conns: MAX_CONNS,
                max_outputs: MAX_OUTPUTS,
                max_events: MAX_EVENTS,
                packet_life_time: 12,
                ack_delay: 10,
                seed: 0x5eed,
            }),
            now: Instant::now(),
            links: Vec::new(),
            ids: Vec::new(),
            next_tid: 0x0000_0001_0000_0000,
        }
    }

    fn tid(&mut self) -> u64 {
        self.next_tid += 1;
        self.next_tid
    }

    fn add_link(&mut self, l: Link) {
        if self.links.len() == LINKS {
            self.links.remove(0);
        }
        self.links.push(l);
    }

    /// Link `i` (modulo), or a blank one naming nothing.
    fn link(&self, i: u8) -> (usize, Link) {
        if self.links.is_empty() {
            return (usize::MAX, Link::default());
        }
        let i = usize::from(i) % self.links.len();
        (i, self.links[i])
    }

    /// The peer of a built message: the link's own (0), else another.
    fn from(l: &Link, p: u8) -> Peer {
        match p {
            0 => peer(l.peer),
            p => peer(usize::from(p)),
        }
    }

    fn id(&self, i: u8) -> Option<ConnId> {
        if self.ids.is_empty() {
            return None;
        }
        Some(self.ids[usize::from(i) % self.ids.len()])
    }

    fn remember(&mut self, id: ConnId) {
        if self.ids.contains(&id) {
            return;
        }
        if self.ids.len() == IDS {
            self.ids.remove(0);
        }
        self.ids.push(id);
    }

    fn send(&mut self, from: Peer, m: &CmMessage) {
        let mut mad = [0u8; MAD_LEN];
        m.emit(&mut mad).expect("a MAD-sized buffer");
        self.cm.on_mad(self.now, from, &mad);
    }

    /// Checks one MAD the CM sent and learns the ids it shows.
    fn learn(&mut self, out: &Output) {
        let p = PEERS
            .iter()
            .position(|g| *g == out.to.gid)
            .unwrap_or_else(|| panic!("a MAD to {:?}, a peer that never spoke", out.to));
        assert_eq!(out.to.qpn, 1, "CM MADs go to the GSI QP");
        let m = CmMessage::parse(&out.mad)
            .unwrap_or_else(|e| panic!("the CM sent a MAD that does not parse: {e}"));
        let mut again = [0u8; MAD_LEN];
        m.emit(&mut again).expect("a MAD-sized buffer");
        assert_eq!(again, out.mad, "a MAD the CM sent emits back the same");
        match m {
            CmMessage::Req(r) => {
                let known = self
                    .links
                    .iter_mut()
                    .find(|l| l.peer == p && l.cm_id == r.local_comm_id);
                match known {
                    Some(l) => l.tid = r.tid,
                    None => self.add_link(Link {
                        peer: p,
                        cm_id: r.local_comm_id,
                        tid: r.tid,
                        cm_qpn: r.local_qpn,
                        ..Link::default()
                    }),
                }
            }
            CmMessage::Rep(r) => {
                let known = self
                    .links
                    .iter_mut()
                    .find(|l| l.peer == p && l.our_id == r.remote_comm_id);
                match known {
                    Some(l) => {
                        l.cm_id = r.local_comm_id;
                        l.cm_qpn = r.local_qpn;
                        l.tid = r.tid;
                    }
                    None => self.add_link(Link {
                        peer: p,
                        cm_id: r.local_comm_id,
                        our_id: r.remote_comm_id,
                        tid: r.tid,
                        cm_qpn: r.local_qpn,
                        ..Link::default()
                    }),
                }
            }
            CmMessage::Dreq(r) => {
                if let Some(l) = self
                    .links
                    .iter_mut()
                    .find(|l| l.peer == p && l.cm_id == r.local_comm_id)
                {
                    l.tid = r.tid;
                }
            }
            _ => {}
        }
    }

    fn drain(&mut self, outputs: usize, events: usize) {
        for _ in 0..outputs {
            let Some(out) = self.cm.pop_output() else {
                break;
            };
            self.learn(&out);
        }
        for _ in 0..events {
            let Some(e) = self.cm.pop_event() else {
                break;
            };
            let id = match e {
                Event::Request { id, from, .. } => {
                    assert!(PEERS.contains(&from.gid), "a REQ from {from:?}");
                    id
                }
                Event::Reply { id, .. }
                | Event::Established { id }
                | Event::Rejected { id, .. }
                | Event::TimedOut { id }
                | Event::DisconnectRequested { id }
                | Event::Disconnected { id }
                | Event::TimewaitExit { id }
                | Event::MraReceived { id, .. } => id,
            };
            self.remember(id);
        }
    }

    /// What a consumer call returned: on success the connection is in one
    /// of `after` (`None`: freed); refused for its state, it is in that
    /// state; refused as unknown, it is gone.
    fn check(&self, op: &str, id: ConnId, r: Result<(), CmError>, after: &[Option<State>]) {
        let now = self.cm.state(id);
        match r {
            Ok(()) => assert!(
                after.contains(&now),
                "{op} succeeded and left {id:?} in {now:?}"
            ),
            Err(CmError::WrongState { state, .. }) => {
                assert_eq!(
                    now,
                    Some(state),
                    "{op} refused for a state {id:?} is not in"
                )
            }
            Err(CmError::UnknownConn { .. }) => {
                assert_eq!(now, None, "{op} called {id:?} unknown")
            }
            Err(_) => {}
        }
    }

    fn apply(&mut self, op: Op) {
        let now = self.now;
        match op {
            Op::Raw { peer: p, bytes } => self.cm.on_mad(now, peer(usize::from(p)), &bytes.0),
            Op::Req {
                peer: p,
                link,
                id,
                qpn,
                guid,
                local_timeout,
                retries,
                ack_timeout,
            } => {
                let (l, from, tid) = match link {
                    Some(i) if !self.links.is_empty() => {
                        let (_, l) = self.link(i);
                        let from = Self::from(&l, p);
                        (l, from, l.tid)
                    }
                    _ => {
                        let l = Link {
                            peer: usize::from(p) % PEERS.len(),
                            our_id: id,
                            our_qpn: u32::from(qpn),
                            guid: GUIDS[usize::from(guid) % GUIDS.len()],
                            tid: self.tid(),
                            ..Link::default()
                        };
                        self.add_link(l);
                        (l, peer(l.peer), l.tid)
                    }
                };
                let r = req::Repr {
                    tid,
                    attr_mod: 0,
                    local_comm_id: l.our_id,
                    vendor_id: 0,
                    service_id: cma::service_id(cma::RDMA_PS_TCP, 4420),
                    local_ca_guid: l.guid,
                    local_qkey: 0,
                    local_qpn: l.our_qpn,
                    responder_resources: 16,
                    local_eecn: 0,
                    initiator_depth: 16,
                    remote_eecn: 0,
                    remote_cm_response_timeout: 20,
                    transport: req::Transport::Rc,
                    end_to_end_flow_control: true,
                    starting_psn: 1,
                    local_cm_response_timeout: local_timeout & 0x1f,
                    retry_count: 7,
                    partition_key: 0xffff,
                    path_mtu: 5,
                    rdc_exists: false,
                    rnr_retry_count: 7,
                    max_cm_retries: retries & 0x0f,
                    srq: false,
                    extended_transport_type: 0,
                    primary: req::Path {
                        local_lid: 0xffff,
                        remote_lid: 0xffff,
                        local_gid: from.gid,
                        remote_gid: LOCAL_GID,
                        hop_limit: 64,
                        local_ack_timeout: ack_timeout & 0x1f,
                        ..req::Path::default()
                    },
                    alternate: req::Path::default(),
                    sap_supported: false,
                    private_data: [0; req::PRIVATE_DATA_LEN],
                };
                self.send(from, &CmMessage::Req(r));
            }
            Op::Rep {
                link,
                peer: p,
                id,
                qpn,
                guid,
                ack_delay,
            } => {
                let (i, mut l) = self.link(link);
                if l.our_id == 0 {
                    l.our_id = id;
                    l.our_qpn = u32::from(qpn);
                    l.guid = GUIDS[usize::from(guid) % GUIDS.len()];
                    if let Some(slot) = self.links.get_mut(i) {
                        *slot = l;
                    }
                }
                let r = rep::Repr {
                    tid: l.tid,
                    attr_mod: 0,
                    local_comm_id: l.our_id,
                    remote_comm_id: l.cm_id,
                    local_qkey: 0,
                    local_qpn: l.our_qpn,
                    vendor_id: 0,
                    local_eecn: 0,
                    starting_psn: 1,
                    responder_resources: 16,
                    initiator_depth: 16,
                    target_ack_delay: ack_delay & 0x1f,
                    failover_accepted: 0,
                    end_to_end_flow_control: true,
                    rnr_retry_count: 7,
                    srq: false,
                    local_ca_guid: l.guid,
                    private_data: [0; rep::PRIVATE_DATA_LEN],
                };
                self.send(Self::from(&l, p), &CmMessage::Rep(r));
            }
            Op::Rtu { link, peer: p } => {
                let (_, l) = self.link(link);
                let r = rtu::Repr {
                    tid: l.tid,
                    local_comm_id: l.our_id,
                    remote_comm_id: l.cm_id,
                    private_data: [0; rtu::PRIVATE_DATA_LEN],
                };
                self.send(Self::from(&l, p), &CmMessage::Rtu(r));
            }
            Op::Rej {
                link,
                peer: p,
                what,
                reason,
                timeout_ari,
            } => {
                let (_, l) = self.link(link);
                let mut ari = [0u8; rej::ARI_LEN];
                let mut ari_len = 0;
                if timeout_ari {
                    ari[..8].copy_from_slice(&l.guid.to_be_bytes());
                    ari_len = 8;
                }
                let r = rej::Repr {
                    tid: l.tid,
                    local_comm_id: l.our_id,
                    remote_comm_id: l.cm_id,
                    message_rejected: msg_response(what),
                    ari_len,
                    reason: RejReason::from(u16::from(reason)),
                    ari,
                    private_data: [0; rej::PRIVATE_DATA_LEN],
                };
                self.send(Self::from(&l, p), &CmMessage::Rej(r));
            }
            Op::Mra {
                link,
                peer: p,
                what,
                service_timeout,
            } => {
                let (_, l) = self.link(link);
                let r = mra::Repr {
                    tid: l.tid,
                    local_comm_id: l.our_id,
                    remote_comm_id: l.cm_id,
                    message_mraed: msg_response(what),
                    service_timeout: service_timeout & 0x1f,
                    private_data: [0; mra::PRIVATE_DATA_LEN],
                };
                self.send(Self::from(&l, p), &CmMessage::Mra(r));
            }
            Op::Dreq { link, peer: p, qpn } => {
                let (_, l) = self.link(link);
                let r = dreq::Repr {
                    tid: self.tid(),
                    local_comm_id: l.our_id,
                    remote_comm_id: l.cm_id,
                    remote_qpn: qpn.unwrap_or(l.cm_qpn) & 0x00ff_ffff,
                    private_data: [0; dreq::PRIVATE_DATA_LEN],
                };
                self.send(Self::from(&l, p), &CmMessage::Dreq(r));
            }
            Op::Drep { link, peer: p } => {
                let (_, l) = self.link(link);
                let r = drep::Repr {
                    tid: l.tid,
                    local_comm_id: l.our_id,
                    remote_comm_id: l.cm_id,
                    private_data: [0; drep::PRIVATE_DATA_LEN],
                };
                self.send(Self::from(&l, p), &CmMessage::Drep(r));
            }
            Op::Advance { ms, shift } => {
                let d = Duration::from_millis(u64::from(ms) << (shift % 24));
                self.now = self.now.checked_add(d).unwrap_or(self.now);
                self.cm.poll(self.now);
            }
            Op::Connect {
                peer: p,
                qpn,
                retries,
                remote_timeout,
                local_timeout,
                hop_limit,
                pd: len,
            } => {
                let to = peer(usize::from(p));
                let params = ConnectParams {
                    service_id: cma::service_id(cma::RDMA_PS_TCP, 4420),
                    local_qpn: u32::from(qpn),
                    starting_psn: 1,
                    responder_resources: 16,
                    initiator_depth: 16,
                    retry_count: 7,
                    rnr_retry_count: 7,
                    max_cm_retries: retries,
                    remote_cm_response_timeout: remote_timeout % 36,
                    local_cm_response_timeout: local_timeout % 36,
                    path_mtu: 5,
                    partition_key: 0xffff,
                    flow_control: true,
                    srq: false,
                    primary: req::Path {
                        remote_gid: to.gid,
                        hop_limit,
                        ..req::Path::default()
                    },
                    private_data: pd(len, req::PRIVATE_DATA_LEN),
                };
                let held = self.cm.conn_count();
                match self.cm.connect(now, to, &params) {
                    Ok(id) => {
                        assert_eq!(self.cm.state(id), Some(State::ReqSent));
                        self.remember(id);
                    }
                    Err(CmError::TooManyConns { max }) => {
                        assert_eq!((held, max), (MAX_CONNS, MAX_CONNS), "refused, not full")
                    }
                    Err(_) => assert_eq!(self.cm.conn_count(), held, "a refused connect holds"),
                }
            }
            Op::Accept { id, qpn, pd: len } => {
                let Some(id) = self.id(id) else { return };
                let p = AcceptParams {
                    local_qpn: u32::from(qpn),
                    starting_psn: 1,
                    responder_resources: 16,
                    initiator_depth: 16,
                    rnr_retry_count: 7,
                    flow_control: true,
                    srq: false,
                    private_data: pd(len, rep::PRIVATE_DATA_LEN),
                };
                let r = self.cm.accept(now, id, &p);
                self.check("accept", id, r, &[Some(State::RepSent)]);
            }
            Op::Reject {
                id,
                reason,
                ari,
                pd: len,
            } => {
                let Some(id) = self.id(id) else { return };
                let ari = pd(ari, rej::ARI_LEN);
                let data = pd(len, rej::PRIVATE_DATA_LEN);
                let r = self
                    .cm
                    .reject(now, id, RejReason::from(u16::from(reason)), ari, data);
                self.check("reject", id, r, &[None, Some(State::Timewait)]);
            }
            Op::SendMra {
                id,
                service_timeout,
            } => {
                let Some(id) = self.id(id) else { return };
                let r = self.cm.send_mra(now, id, service_timeout % 36);
                let after = [Some(State::MraReqSent), Some(State::MraRepSent)];
                self.check("send_mra", id, r, &after);
            }
            Op::ReadyToUse { id } => {
                let Some(id) = self.id(id) else { return };
                let r = self.cm.ready_to_use(now, id);
                self.check("ready_to_use", id, r, &[Some(State::Established)]);
            }
            Op::Established { id } => {
                let Some(id) = self.id(id) else { return };
                let r = self.cm.established(now, id);
                self.check("established", id, r, &[Some(State::Established)]);
            }
            Op::Disconnect { id, pd: len } => {
                let Some(id) = self.id(id) else { return };
                let r = self.cm.disconnect(now, id, pd(len, dreq::PRIVATE_DATA_LEN));
                self.check("disconnect", id, r, &[Some(State::DreqSent)]);
            }
            Op::Drain { outputs, events } => self.drain(usize::from(outputs), usize::from(events)),
        }
    }

    fn check_bounds(&self) {
        let cm = &self.cm;
        assert!(
            cm.conn_count() <= MAX_CONNS,
            "{} connections",
            cm.conn_count()
        );
        assert!(
            cm.output_count() <= MAX_OUTPUTS,
            "{} outputs",
            cm.output_count()
        );
        assert!(
            cm.event_count() <= MAX_EVENTS,
            "{} events",
            cm.event_count()
        );
        if let Some(d) = cm.next_deadline() {
            assert!(d > self.now, "a timer due at or before now is left unrun");
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let mut w = World::new();
    for op in ops {
        w.apply(op);
        w.check_bounds();
    }
    // Whatever is still queued must parse too.
    w.drain(MAX_OUTPUTS, MAX_EVENTS);
}

/// Time enough for any timer to fire: 2^23 ms is the longest wait a
/// 5-bit exponent gives (cm.c's `cm_convert_to_ms(31)`), twice over.
const LONG: Op = Op::Advance { ms: 2, shift: 23 };

const DRAIN: Op = Op::Drain {
    outputs: 255,
    events: 255,
};

fn req(id: u32, qpn: u16) -> Op {
    Op::Req {
        peer: 0,
        link: None,
        id,
        qpn,
        guid: 0,
        local_timeout: 18,
        retries: 3,
        ack_timeout: 17,
    }
}

fn connect() -> Op {
    Op::Connect {
        peer: 1,
        qpn: 0x123,
        retries: 3,
        remote_timeout: 20,
        local_timeout: 18,
        hop_limit: 64,
        pd: 56,
    }
}

/// Seeds: the passive side through REQ, accept, RTU, DREQ and TIMEWAIT;
/// the active side through connect, REP, ready_to_use, disconnect, DREP;
/// a REQ that goes unanswered through its retries; a REJ TIMEOUT of our
/// REP; MRAs, a duplicate REQ and a reject; more REQs than the CM holds; a
/// stale connection.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        (
            "passive",
            vec![
                req(0x1111, 0x11),
                DRAIN,
                Op::Accept {
                    id: 0,
                    qpn: 0x22,
                    pd: 8,
                },
                DRAIN,
                Op::Rtu { link: 0, peer: 0 },
                DRAIN,
                Op::Dreq {
                    link: 0,
                    peer: 0,
                    qpn: None,
                },
                DRAIN,
                LONG,
                DRAIN,
            ],
        ),
        (
            "active",
            vec![
                connect(),
                DRAIN,
                Op::Rep {
                    link: 0,
                    peer: 0,
                    id: 0x2222,
                    qpn: 0x33,
                    guid: 1,
                    ack_delay: 15,
                },
                DRAIN,
                Op::ReadyToUse { id: 0 },
                DRAIN,
                Op::Disconnect { id: 0, pd: 0 },
                DRAIN,
                Op::Drep { link: 0, peer: 0 },
                DRAIN,
                LONG,
                DRAIN,
            ],
        ),
        (
            "unanswered",
            vec![
                Op::Connect {
                    peer: 0,
                    qpn: 0x44,
                    retries: 2,
                    remote_timeout: 10,
                    local_timeout: 10,
                    hop_limit: 1,
                    pd: 0,
                },
                // 2 x 2^(12-8) + 2^(10-8) = 36 ms a try, three tries.
                Op::Advance { ms: 40, shift: 0 },
                Op::Advance { ms: 40, shift: 0 },
                Op::Advance { ms: 40, shift: 0 },
                DRAIN,
            ],
        ),
        (
            "rej-timeout",
            vec![
                req(0x6666, 0x99),
                DRAIN,
                Op::Accept {
                    id: 0,
                    qpn: 0xaa,
                    pd: 0,
                },
                DRAIN,
                // The peer gave up on our REP: REJ TIMEOUT, its GUID as ARI.
                Op::Rej {
                    link: 0,
                    peer: 0,
                    what: 2,
                    reason: 4,
                    timeout_ari: true,
                },
                DRAIN,
            ],
        ),
        (
            "mra-reject",
            vec![
                req(0x3333, 0x55),
                DRAIN,
                Op::SendMra {
                    id: 0,
                    service_timeout: 20,
                },
                Op::Req {
                    peer: 0,
                    link: Some(0),
                    id: 0,
                    qpn: 0,
                    guid: 0,
                    local_timeout: 18,
                    retries: 3,
                    ack_timeout: 17,
                },
                DRAIN,
                Op::Accept {
                    id: 0,
                    qpn: 0x66,
                    pd: 0,
                },
                DRAIN,
                Op::Mra {
                    link: 0,
                    peer: 0,
                    what: 1,
                    service_timeout: 12,
                },
                Op::Reject {
                    id: 0,
                    reason: 28,
                    ari: 0,
                    pd: 4,
                },
                DRAIN,
            ],
        ),
        (
            "full",
            (1..=10)
                .map(|i| req(0x4000 + i, 0x100 + i as u16))
                .chain([DRAIN])
                .collect(),
        ),
        (
            "stale",
            vec![
                req(0x5555, 0x77),
                DRAIN,
                Op::Accept {
                    id: 0,
                    qpn: 0x88,
                    pd: 0,
                },
                Op::Established { id: 0 },
                // The same QP and GUID under a new comm id: stale.
                req(0x5556, 0x77),
                DRAIN,
            ],
        ),
    ]
}
