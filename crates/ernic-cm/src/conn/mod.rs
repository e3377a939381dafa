//! A sans-IO IB connection manager for one local port: the state machine of
//! Linux's `drivers/infiniband/core/cm.c` (REQ, MRA, REP, RTU, REJ, DREQ,
//! DREP; no SIDR, LAP or APR), for an NVMe-oF target (the responder) and
//! for ernic's own initiator (the requester).
//!
//! What it promises: [`Cm`] owns every connection's state, timers and
//! retransmissions, and talks to the world only through its methods.
//! MADs come in through [`Cm::on_mad`] and go out through
//! [`Cm::pop_output`]; what the consumer must act on comes out of
//! [`Cm::pop_event`]; time comes in as the `now` of every call, and
//! [`Cm::next_deadline`] says when [`Cm::poll`] next has work. Every MAD
//! is untrusted: one that does not decode, names no connection of the
//! peer it came from, or does not fit the connection's state is counted in
//! [`CmStats`] and dropped, or answered where cm.c answers (a REJ, a
//! DREP). Nothing panics on any input.
//!
//! Bounds: at most [`CmConfig::max_conns`] connections (TIMEWAIT
//! included; a REQ beyond them is refused with REJ `NO_RESOURCES`), at
//! most [`CmConfig::max_outputs`] queued MADs and [`CmConfig::max_events`]
//! queued events (when full, the oldest is dropped and counted: a lost
//! MAD is what retransmission is for, a lost event is the caller's
//! failure to drain). Each bound is clamped to 1..=[`QUEUE_LIMIT`].
//! Lookups scan the connections, O(`max_conns`).
//!
//! What it must never do: open a socket, start a thread, read a clock or
//! touch a QP. Moving the QP through INIT/RTR/RTS with the values the
//! events carry is the consumer's work.
//!
//! A connection in REQ_RCVD (or MRA_REQ_SENT) runs no timer: as in cm.c it
//! waits for its consumer, which must answer every [`Event::Request`]
//! with [`Cm::accept`] or [`Cm::reject`], or the REQs of a hostile peer
//! hold `max_conns` connections.
//!
//! Where it departs from cm.c, on purpose: a REQ retransmitted while the
//! REP is outstanding (REP_SENT, MRA_REP_RCVD) resends the REP at once
//! (cm.c drops it and waits for the REP's own retransmission timer); the
//! requester whose REQ went unanswered sends a REJ with reason TIMEOUT
//! (cm.c sends it only when its consumer destroys an id still in
//! REQ_SENT); a REQ beyond `max_conns` gets REJ NO_RESOURCES (cm.c drops
//! a REQ it cannot allocate for); a DREQ transaction gets a fresh
//! transaction id (cm.c reuses the REQ's); the requester, too, gets
//! [`Event::Established`] when it sends the RTU (as rdma_cm reports it);
//! connections are keyed by the peer's GID where cm.c uses its CA GUID.

mod requester;
mod responder;
mod state;
mod teardown;
mod timers;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

pub use state::State;
pub use timers::{ack_timeout, iba_time};

use crate::mad::MAD_LEN;
use crate::msg::{CmMessage, MsgResponse};
use crate::rej::RejReason;
use crate::{rep, req};
use state::Conn;
use timers::TimerKind;

/// The largest value any of [`CmConfig`]'s bounds may take.
pub const QUEUE_LIMIT: usize = 1 << 16;

/// What a [`Cm`] needs to know about its port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmConfig {
    /// The port's GID (the primary path's local GID of our REQs).
    pub local_gid: [u8; 16],
    /// The CA's GUID (`node_guid`: REQ and REP's local CA GUID, the ARI of
    /// a REJ with reason TIMEOUT).
    pub ca_guid: u64,
    /// The most connections held at once, TIMEWAIT included
    /// (1..=[`QUEUE_LIMIT`]).
    pub max_conns: usize,
    /// The most MADs queued for [`Cm::pop_output`] (1..=[`QUEUE_LIMIT`]).
    pub max_outputs: usize,
    /// The most events queued for [`Cm::pop_event`] (1..=[`QUEUE_LIMIT`]).
    pub max_events: usize,
    /// The path's packet life time (5-bit exponent) our REQs assume.
    pub packet_life_time: u8,
    /// The CA's local ACK delay (5-bit exponent, `local_ca_ack_delay`):
    /// a REP's target ACK delay, and part of a REQ's local ACK timeout.
    pub ack_delay: u8,
    /// Seeds the communication ids and transaction ids.
    pub seed: u64,
}

/// Where a MAD came from or goes: a port GID and its GSI QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The port's GID.
    pub gid: [u8; 16],
    /// The QP that sent or receives CM MADs (the GSI QP, 1).
    pub qpn: u32,
}

/// A connection, named by its local communication id (what the wire calls
/// our "local comm id").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u32);

/// What [`Cm::connect`] puts into the REQ (`struct ib_cm_req_param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectParams<'a> {
    /// The service (rdma_cm: [`service_id`](crate::private_data::cma::service_id)).
    pub service_id: u64,
    /// Our RC QP's number (24 bits).
    pub local_qpn: u32,
    /// Our send queue's first PSN (24 bits).
    pub starting_psn: u32,
    /// RDMA READs and atomics we accept outstanding from the peer.
    pub responder_resources: u8,
    /// RDMA READs and atomics we keep outstanding to the peer.
    pub initiator_depth: u8,
    /// Transport retries (3 bits).
    pub retry_count: u8,
    /// RNR retries (3 bits).
    pub rnr_retry_count: u8,
    /// REQ retransmissions before giving up (4 bits; rdma_cm uses 15).
    pub max_cm_retries: u8,
    /// How long the peer may take to answer (5-bit exponent; rdma_cm 20).
    pub remote_cm_response_timeout: u8,
    /// How long we take to answer (5-bit exponent).
    pub local_cm_response_timeout: u8,
    /// Path MTU (IBTA encoding: 1 = 256 .. 5 = 4096).
    pub path_mtu: u8,
    /// The partition key (0xffff, the default, on RoCE).
    pub partition_key: u16,
    /// End-to-end flow control (NVMe/RDMA hosts ask for it).
    pub flow_control: bool,
    /// Whether our QP uses an SRQ.
    pub srq: bool,
    /// The primary path. Its local GID is the port's
    /// ([`CmConfig::local_gid`]); its local ACK timeout and subnet-local bit are
    /// computed here as cm.c computes them (and, for a routed path, hop
    /// limit above 1, its LIDs are the permissive 0xffff); the rest (the
    /// GIDs, flow label, traffic class, hop limit, SL, rate) is sent as
    /// given. On RoCE the GIDs are the IP addresses of both ends.
    pub primary: req::Path,
    /// At most [`req::PRIVATE_DATA_LEN`] bytes (rdma_cm's header first).
    pub private_data: &'a [u8],
}

/// What [`Cm::accept`] puts into the REP (`struct ib_cm_rep_param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptParams<'a> {
    /// Our RC QP's number (24 bits).
    pub local_qpn: u32,
    /// Our send queue's first PSN (24 bits).
    pub starting_psn: u32,
    /// RDMA READs and atomics we accept outstanding from the peer.
    pub responder_resources: u8,
    /// RDMA READs and atomics we keep outstanding to the peer.
    pub initiator_depth: u8,
    /// RNR retries (3 bits).
    pub rnr_retry_count: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// Whether our QP uses an SRQ.
    pub srq: bool,
    /// At most [`rep::PRIVATE_DATA_LEN`] bytes (NVMe/RDMA's CM REP record).
    pub private_data: &'a [u8],
}

/// A MAD to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    /// Where.
    pub to: Peer,
    /// The whole MAD.
    pub mad: [u8; MAD_LEN],
}

/// What the consumer must know or do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A new REQ (`IB_CM_REQ_RECEIVED`): answer with [`Cm::accept`],
    /// [`Cm::reject`] or [`Cm::send_mra`].
    Request {
        /// The new connection.
        id: ConnId,
        /// Who asked.
        from: Peer,
        /// The REQ as it came.
        req: Box<req::Repr>,
    },
    /// The REP to our REQ (`IB_CM_REP_RECEIVED`): move the QP to RTR and
    /// RTS, then [`Cm::ready_to_use`] (or [`Cm::reject`]).
    Reply {
        /// The connection.
        id: ConnId,
        /// The REP as it came.
        rep: Box<rep::Repr>,
    },
    /// The connection is established: an RTU came, data came first
    /// ([`Cm::established`]), or we sent the RTU.
    Established {
        /// The connection.
        id: ConnId,
    },
    /// The peer refused or abandoned the connection (`IB_CM_REJ_RECEIVED`).
    Rejected {
        /// The connection.
        id: ConnId,
        /// Why.
        reason: RejReason,
        /// The REJ's private data (NVMe/RDMA's reject record).
        private_data: Box<[u8; crate::rej::PRIVATE_DATA_LEN]>,
    },
    /// Our REQ or REP went unanswered through every retry
    /// (`IB_CM_REQ_ERROR`, `IB_CM_REP_ERROR`); the connection is freed.
    TimedOut {
        /// The connection.
        id: ConnId,
    },
    /// The peer sent a DREQ (`IB_CM_DREQ_RECEIVED`); the DREP has been
    /// sent and [`Event::Disconnected`] follows.
    DisconnectRequested {
        /// The connection.
        id: ConnId,
    },
    /// The connection is down and in TIMEWAIT: a DREP came, our DREQ
    /// timed out, or we answered the peer's DREQ. The QP may be destroyed.
    Disconnected {
        /// The connection.
        id: ConnId,
    },
    /// TIMEWAIT ended (`IB_CM_TIMEWAIT_EXIT`); the id is freed.
    TimewaitExit {
        /// The connection.
        id: ConnId,
    },
    /// The peer acknowledged our REQ or REP and will answer within its
    /// service timeout (`IB_CM_MRA_RECEIVED`).
    MraReceived {
        /// The connection.
        id: ConnId,
        /// The MRA's service timeout (5-bit exponent).
        service_timeout: u8,
    },
}

/// What [`Cm`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmStats {
    /// MADs that did not decode as a CM message this CM handles.
    pub malformed: u64,
    /// CM messages naming no connection of the peer that sent them.
    pub unknown: u64,
    /// CM messages for a connection whose state does not take them.
    pub unexpected: u64,
    /// Retransmitted messages recognised as such.
    pub duplicates: u64,
    /// REQs refused because `max_conns` connections were held.
    pub rejected_full: u64,
    /// MADs we sent again after a timeout.
    pub retransmits: u64,
    /// Outputs dropped because the queue was full.
    pub outputs_dropped: u64,
    /// Events dropped because the queue was full.
    pub events_dropped: u64,
}

/// Why a consumer's call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CmError {
    /// No connection has this id.
    #[error("no connection {id:#010x}")]
    UnknownConn {
        /// The id.
        id: u32,
    },
    /// The connection's state does not allow the call.
    #[error("connection {id:#010x} is in {state:?}, {op} is not allowed there")]
    WrongState {
        /// The id.
        id: u32,
        /// The call.
        op: &'static str,
        /// The state.
        state: State,
    },
    /// More private data than the message holds.
    #[error("{msg} holds {max} bytes of private data, got {len}")]
    PrivateData {
        /// The message.
        msg: &'static str,
        /// What was given.
        len: usize,
        /// What fits.
        max: usize,
    },
    /// More rejection info than a REJ's ARI holds.
    #[error("a REJ holds {max} bytes of rejection info, got {len}")]
    Ari {
        /// What was given.
        len: usize,
        /// What fits.
        max: usize,
    },
    /// A 5-bit time exponent above 31.
    #[error("time exponent {value} does not fit 5 bits")]
    TimeExponent {
        /// What was given.
        value: u8,
    },
    /// `max_conns` connections are held.
    #[error("{max} connections are held, the most this CM keeps")]
    TooManyConns {
        /// The bound.
        max: usize,
    },
}

/// The connection manager of one port. See the module doc.
#[derive(Debug)]
pub struct Cm {
    cfg: CmConfig,
    conns: BTreeMap<u32, Conn>,
    outputs: VecDeque<Output>,
    events: VecDeque<Event>,
    stats: CmStats,
    /// cm.c's `local_id_next`: ids are allocated cyclically ...
    id_next: u32,
    /// ... and XORed with `random_id_operand`.
    id_operand: u32,
    next_tid: u64,
}

/// splitmix64: spreads the seed over the generators' starting points.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Copies `data` into a zeroed private data field of `N` bytes.
fn private_data<const N: usize>(msg: &'static str, data: &[u8]) -> Result<[u8; N], CmError> {
    let mut out = [0u8; N];
    out.get_mut(..data.len())
        .ok_or(CmError::PrivateData {
            msg,
            len: data.len(),
            max: N,
        })?
        .copy_from_slice(data);
    Ok(out)
}

impl Cm {
    /// A CM with no connections.
    pub fn new(cfg: CmConfig) -> Cm {
        let bound = |n: usize| n.clamp(1, QUEUE_LIMIT);
        let cfg = CmConfig {
            max_conns: bound(cfg.max_conns),
            max_outputs: bound(cfg.max_outputs),
            max_events: bound(cfg.max_events),
            packet_life_time: cfg.packet_life_time.min(timers::MAX_EXPONENT),
            ack_delay: cfg.ack_delay.min(timers::MAX_EXPONENT),
            ..cfg
        };
        let a = mix(cfg.seed);
        let b = mix(a);
        Cm {
            cfg,
            conns: BTreeMap::new(),
            outputs: VecDeque::new(),
            events: VecDeque::new(),
            stats: CmStats::default(),
            // The halves of one mixed word.
            id_next: a as u32,
            id_operand: (a >> 32) as u32,
            next_tid: b,
        }
    }

    /// The configuration, bounds clamped.
    pub fn config(&self) -> &CmConfig {
        &self.cfg
    }

    /// What was counted so far.
    pub fn stats(&self) -> CmStats {
        self.stats
    }

    /// The state of connection `id`, or `None` once it is freed.
    pub fn state(&self, id: ConnId) -> Option<State> {
        self.conns.get(&id.0).map(|c| c.state)
    }

    /// How many connections are held (TIMEWAIT included).
    pub fn conn_count(&self) -> usize {
        self.conns.len()
    }

    /// How many MADs wait in the output queue.
    pub fn output_count(&self) -> usize {
        self.outputs.len()
    }

    /// How many events wait in the event queue.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// The next MAD to send.
    pub fn pop_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// The next event.
    pub fn pop_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`poll`](Self::poll) next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.conns
            .values()
            .filter_map(|c| c.timer.map(|t| t.deadline))
            .min()
    }

    /// Handles one received MAD from `from`. Never panics; see the module
    /// doc for what is dropped and what is answered.
    pub fn on_mad(&mut self, now: Instant, from: Peer, mad: &[u8]) {
        let Ok(msg) = CmMessage::parse(mad) else {
            self.stats.malformed += 1;
            return;
        };
        match msg {
            CmMessage::Req(r) => self.on_req(now, from, &r),
            CmMessage::Rep(r) => self.on_rep(now, from, &r),
            CmMessage::Rtu(r) => self.on_rtu(from, &r),
            CmMessage::Rej(r) => self.on_rej(now, from, &r),
            CmMessage::Mra(r) => self.on_mra(now, from, &r),
            CmMessage::Dreq(r) => self.on_dreq(now, from, &r),
            CmMessage::Drep(r) => self.on_drep(now, from, &r),
        }
    }

    /// Runs every timer due at `now`: retransmissions, timeouts, the ends
    /// of TIMEWAIT.
    pub fn poll(&mut self, now: Instant) {
        let due: Vec<u32> = self
            .conns
            .values()
            .filter(|c| c.timer.is_some_and(|t| t.deadline <= now))
            .map(|c| c.local_id)
            .collect();
        for id in due {
            self.fire(now, id);
        }
    }

    /// Runs connection `id`'s timer, which is due.
    fn fire(&mut self, now: Instant, id: u32) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let Some(timer) = c.timer.take() else {
            return;
        };
        match timer.kind {
            TimerKind::Retransmit {
                retries_left,
                timeout,
            } if retries_left > 0 => {
                c.timer = Some(timers::Timer {
                    deadline: timers::after(now, timeout),
                    kind: TimerKind::Retransmit {
                        retries_left: retries_left - 1,
                        timeout,
                    },
                });
                let (to, mad) = (c.peer, c.msg);
                self.stats.retransmits += 1;
                self.push_output(to, mad);
            }
            TimerKind::Retransmit { .. } => self.send_failed(now, id),
            TimerKind::Timewait => {
                self.conns.remove(&id);
                self.push_event(Event::TimewaitExit { id: ConnId(id) });
            }
        }
    }

    /// `cm_process_send_error`: the outstanding MAD of `id` went
    /// unanswered through every retry.
    fn send_failed(&mut self, now: Instant, id: u32) {
        let Some(state) = self.conns.get(&id).map(|c| c.state) else {
            return;
        };
        match state {
            State::ReqSent | State::MraReqRcvd => {
                self.send_timeout_rej(id);
                self.conns.remove(&id);
                self.push_event(Event::TimedOut { id: ConnId(id) });
            }
            State::RepSent | State::MraRepRcvd => {
                self.conns.remove(&id);
                self.push_event(Event::TimedOut { id: ConnId(id) });
            }
            State::DreqSent => {
                self.enter_timewait(now, id);
                self.push_event(Event::Disconnected { id: ConnId(id) });
            }
            _ => {}
        }
    }

    /// Queues a MAD, dropping (and counting) the oldest when full.
    fn push_output(&mut self, to: Peer, mad: [u8; MAD_LEN]) {
        if self.outputs.len() >= self.cfg.max_outputs {
            self.outputs.pop_front();
            self.stats.outputs_dropped += 1;
        }
        self.outputs.push_back(Output { to, mad });
    }

    /// Writes `msg` and queues it for `to`.
    fn send(&mut self, to: Peer, msg: &CmMessage) -> [u8; MAD_LEN] {
        let mut mad = [0u8; MAD_LEN];
        // A MAD_LEN buffer holds every CM message: emit cannot fail here.
        if msg.emit(&mut mad).is_ok() {
            self.push_output(to, mad);
        }
        mad
    }

    /// Queues an event, dropping (and counting) the oldest when full.
    fn push_event(&mut self, e: Event) {
        if self.events.len() >= self.cfg.max_events {
            self.events.pop_front();
            self.stats.events_dropped += 1;
        }
        self.events.push_back(e);
    }

    /// A fresh transaction id.
    fn tid(&mut self) -> u64 {
        let t = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1);
        t
    }

    /// A fresh local communication id (`cm_alloc_id_priv`): the next of a
    /// cyclic counter XOR a seeded operand, skipping 0 (which the wire
    /// uses for "not known yet") and every id held, TIMEWAIT included.
    fn alloc_id(&mut self) -> Option<u32> {
        // Of conns.len() + 2 candidates at most conns.len() are held and
        // one is 0: the loop always finds one.
        for _ in 0..self.conns.len() + 2 {
            let id = self.id_next ^ self.id_operand;
            self.id_next = self.id_next.wrapping_add(1);
            if id != 0 && !self.conns.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }

    /// The connection `id` names, or the error saying it is gone.
    fn conn_mut(&mut self, id: ConnId) -> Result<&mut Conn, CmError> {
        self.conns
            .get_mut(&id.0)
            .ok_or(CmError::UnknownConn { id: id.0 })
    }

    /// `cm_acquire_id(local, remote)`: the connection of `from` whose
    /// local id is `local` and remote id `remote` (0: not known yet).
    fn find(&self, local: u32, remote: u32, from: &Peer) -> Option<u32> {
        self.conns
            .get(&local)
            .filter(|c| c.remote_id == remote && c.peer.gid == from.gid)
            .map(|c| c.local_id)
    }

    /// cm.c's `remote_qp_table`: the connection to QP `qpn` of the CA
    /// `guid`, while it knows that QP and is not in TIMEWAIT.
    fn find_remote_qp(&self, qpn: u32, guid: u64) -> Option<u32> {
        self.conns
            .values()
            .find(|c| {
                c.remote_qpn == qpn
                    && c.remote_ca_guid == guid
                    && !matches!(
                        c.state,
                        State::Idle | State::ReqSent | State::MraReqRcvd | State::Timewait
                    )
            })
            .map(|c| c.local_id)
    }

    /// What cm.c does to the connection `old` a new REQ or REP showed
    /// stale (its peer reuses the QP): a DREQ, if it is established.
    fn disconnect_stale(&mut self, now: Instant, old: u32) {
        if self
            .conns
            .get(&old)
            .is_some_and(|c| c.state == State::Established)
        {
            // Established, so disconnect cannot refuse; no private data.
            let _ = self.disconnect(now, ConnId(old), &[]);
        }
    }

    /// `cm_issue_rej`: a REJ answering a MAD no connection takes, the
    /// ids swapped from the message's.
    fn issue_rej(
        &mut self,
        to: Peer,
        tid: u64,
        ids: (u32, u32),
        what: MsgResponse,
        reason: RejReason,
    ) {
        let (local, remote) = ids;
        let r = crate::rej::Repr {
            tid,
            local_comm_id: local,
            remote_comm_id: remote,
            message_rejected: what,
            ari_len: 0,
            reason,
            ari: [0; crate::rej::ARI_LEN],
            private_data: [0; crate::rej::PRIVATE_DATA_LEN],
        };
        self.send(to, &CmMessage::Rej(r));
    }

    /// The connection of `from` whose remote id is `remote` (cm.c's
    /// `remote_id_table`, keyed here by the peer's GID).
    fn find_remote(&self, remote: u32, from: &Peer) -> Option<u32> {
        self.conns
            .values()
            .find(|c| remote != 0 && c.remote_id == remote && c.peer.gid == from.gid)
            .map(|c| c.local_id)
    }
}
