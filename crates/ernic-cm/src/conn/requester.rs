//! The active side: sending the REQ (`ib_send_cm_req`), taking the REP
//! (`cm_rep_handler`, `cm_dup_rep_handler`), confirming with the RTU
//! (`ib_send_cm_rtu`), and the MRA handler both sides share
//! (`cm_mra_handler`), with the REJ a REQ that timed out leaves behind.

use std::time::Instant;

use super::timers::{Timer, TimerKind, ack_timeout, after, iba_time};
use super::{Cm, CmError, ConnId, ConnectParams, Event, Peer, State, private_data, state::Conn};
use crate::msg::{CmMessage, MsgResponse};
use crate::rej::{self, RejReason};
use crate::req::{self, Transport};
use crate::{mra, rep, rtu};

/// A LID meaning "whichever", what cm.c writes for a routed path's LIDs.
const LID_PERMISSIVE: u16 = 0xffff;

/// Checks that a time exponent fits its 5 bits.
pub(super) fn exponent(value: u8) -> Result<u8, CmError> {
    if value > super::timers::MAX_EXPONENT {
        return Err(CmError::TimeExponent { value });
    }
    Ok(value)
}

impl Cm {
    /// Sends a REQ to `to` and returns the new connection, in
    /// [`State::ReqSent`]. It waits for the REP twice the path's packet
    /// life time plus the peer's CM response time (cm.c's `timeout_ms`),
    /// resends the REQ up to `max_cm_retries` times, then gives up with
    /// [`Event::TimedOut`] and a REJ with reason TIMEOUT.
    pub fn connect(
        &mut self,
        now: Instant,
        to: Peer,
        p: &ConnectParams<'_>,
    ) -> Result<ConnId, CmError> {
        let data = private_data::<{ req::PRIVATE_DATA_LEN }>("REQ", p.private_data)?;
        let remote_timeout = exponent(p.remote_cm_response_timeout)?;
        let local_timeout = exponent(p.local_cm_response_timeout)?;
        if self.conns.len() >= self.cfg.max_conns {
            return Err(CmError::TooManyConns {
                max: self.cfg.max_conns,
            });
        }
        let id = self.alloc_id().ok_or(CmError::TooManyConns {
            max: self.cfg.max_conns,
        })?;
        let tid = self.tid();
        let life = self.cfg.packet_life_time;
        let mut primary = p.primary;
        primary.local_gid = self.cfg.local_gid;
        primary.local_ack_timeout = ack_timeout(self.cfg.ack_delay, life);
        primary.subnet_local = primary.hop_limit <= 1;
        if !primary.subnet_local {
            primary.local_lid = LID_PERMISSIVE;
            primary.remote_lid = LID_PERMISSIVE;
        }
        let max_cm_retries = p.max_cm_retries & 0x0f;
        let r = req::Repr {
            tid,
            attr_mod: 0,
            local_comm_id: id,
            vendor_id: 0,
            service_id: p.service_id,
            local_ca_guid: self.cfg.ca_guid,
            local_qkey: 0,
            local_qpn: p.local_qpn & 0x00ff_ffff,
            responder_resources: p.responder_resources,
            local_eecn: 0,
            initiator_depth: p.initiator_depth,
            remote_eecn: 0,
            remote_cm_response_timeout: remote_timeout,
            transport: Transport::Rc,
            end_to_end_flow_control: p.flow_control,
            starting_psn: p.starting_psn & 0x00ff_ffff,
            local_cm_response_timeout: local_timeout,
            retry_count: p.retry_count & 0x07,
            partition_key: p.partition_key,
            path_mtu: p.path_mtu & 0x0f,
            rdc_exists: false,
            rnr_retry_count: p.rnr_retry_count & 0x07,
            max_cm_retries,
            srq: p.srq,
            extended_transport_type: 0,
            primary,
            alternate: req::Path::default(),
            sap_supported: false,
            private_data: data,
        };
        let timeout = iba_time(life) * 2 + iba_time(remote_timeout);
        let msg = self.send(to, &CmMessage::Req(r));
        let mut c = Conn::new(id, to);
        c.state = State::ReqSent;
        c.tid = tid;
        c.local_qpn = r.local_qpn;
        c.timeout = timeout;
        c.max_cm_retries = max_cm_retries;
        c.av_timeout = life + 1;
        c.msg = msg;
        c.timer = Some(Timer::retransmit(now, timeout, max_cm_retries));
        self.conns.insert(id, c);
        Ok(ConnId(id))
    }

    /// Sends the RTU for the REP of `id` (`ib_send_cm_rtu`): the
    /// connection is [`State::Established`] and [`Event::Established`]
    /// says so. Call it once the QP is in RTS.
    pub fn ready_to_use(&mut self, _now: Instant, id: ConnId) -> Result<(), CmError> {
        let c = self.conn_mut(id)?;
        if !matches!(c.state, State::RepRcvd | State::MraRepSent) {
            return Err(CmError::WrongState {
                id: id.0,
                op: "ready_to_use",
                state: c.state,
            });
        }
        c.state = State::Established;
        let (to, rtu) = (c.peer, rtu_of(c));
        self.send(to, &CmMessage::Rtu(rtu));
        self.push_event(Event::Established { id });
        Ok(())
    }

    /// `cm_rep_handler`: a REP answers the REQ of the connection whose
    /// local id it names as remote, while that one knows no remote id yet;
    /// one from a QP another connection still holds is refused as stale.
    pub(super) fn on_rep(&mut self, now: Instant, from: Peer, r: &rep::Repr) {
        let Some(id) = self.find(r.remote_comm_id, 0, &from) else {
            self.on_dup_rep(from, r);
            return;
        };
        if r.local_comm_id == 0 {
            self.stats.malformed += 1;
            return;
        }
        if self.find_remote(r.local_comm_id, &from).is_some() {
            // cm.c: "Check for duplicate REP" (another id already holds it).
            self.stats.duplicates += 1;
            return;
        }
        if !matches!(
            self.conns.get(&id).map(|c| c.state),
            Some(State::ReqSent | State::MraReqRcvd)
        ) {
            self.stats.unexpected += 1;
            return;
        }
        if let Some(old) = self.find_remote_qp(r.local_qpn, r.local_ca_guid) {
            // cm_rep_handler's "stale connection": the peer answers from a
            // QP we still hold another connection to.
            let ids = (r.remote_comm_id, r.local_comm_id);
            self.issue_rej(from, r.tid, ids, MsgResponse::Rep, RejReason::StaleConn);
            self.disconnect_stale(now, old);
            return;
        }
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.state = State::RepRcvd;
        c.remote_id = r.local_comm_id;
        c.remote_qpn = r.local_qpn;
        c.remote_ca_guid = r.local_ca_guid;
        c.av_timeout = ack_timeout(r.target_ack_delay, c.av_timeout.saturating_sub(1));
        c.timer = None;
        self.push_event(Event::Reply {
            id: ConnId(id),
            rep: Box::new(*r),
        });
    }

    /// `cm_dup_rep_handler`: a REP for a connection that already has its
    /// remote id resends the RTU (established) or the MRA (MRA_REP_SENT).
    fn on_dup_rep(&mut self, from: Peer, r: &rep::Repr) {
        let Some(c) = self
            .find(r.remote_comm_id, r.local_comm_id, &from)
            .and_then(|id| self.conns.get(&id))
        else {
            self.stats.unknown += 1;
            return;
        };
        self.stats.duplicates += 1;
        let msg = match c.state {
            State::Established => CmMessage::Rtu(rtu_of(c)),
            State::MraRepSent => CmMessage::Mra(mra_of(c, MsgResponse::Rep)),
            _ => return,
        };
        let to = c.peer;
        self.send(to, &msg);
    }

    /// `cm_mra_handler`: the peer will answer our REQ or REP later; the
    /// wait becomes its service timeout plus our address vector's
    /// timeout, for this and every further retransmission.
    pub(super) fn on_mra(&mut self, now: Instant, from: Peer, m: &mra::Repr) {
        let found = match m.message_mraed {
            MsgResponse::Req => self.find(m.remote_comm_id, 0, &from),
            MsgResponse::Rep | MsgResponse::Other => {
                self.find(m.remote_comm_id, m.local_comm_id, &from)
            }
        };
        let Some(c) = found.and_then(|id| self.conns.get_mut(&id)) else {
            self.stats.unknown += 1;
            return;
        };
        c.state = match (c.state, m.message_mraed) {
            (State::ReqSent, MsgResponse::Req) => State::MraReqRcvd,
            (State::RepSent, MsgResponse::Rep) => State::MraRepRcvd,
            (State::MraReqRcvd | State::MraRepRcvd, _) => {
                self.stats.duplicates += 1;
                return;
            }
            _ => {
                self.stats.unexpected += 1;
                return;
            }
        };
        let timeout = iba_time(m.service_timeout) + iba_time(c.av_timeout);
        if let Some(TimerKind::Retransmit { retries_left, .. }) = c.timer.map(|t| t.kind) {
            c.timer = Some(Timer {
                deadline: after(now, timeout),
                kind: TimerKind::Retransmit {
                    retries_left,
                    timeout,
                },
            });
        }
        let id = ConnId(c.local_id);
        self.push_event(Event::MraReceived {
            id,
            service_timeout: m.service_timeout,
        });
    }

    /// The REJ a requester sends when its REQ timed out (what cm.c's
    /// `cm_destroy_id` sends from REQ_SENT): reason TIMEOUT, our CA GUID
    /// as the rejection info, which is how the peer finds the connection.
    pub(super) fn send_timeout_rej(&mut self, id: u32) {
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        let mut ari = [0u8; rej::ARI_LEN];
        let guid = self.cfg.ca_guid.to_be_bytes();
        ari[..guid.len()].copy_from_slice(&guid);
        let r = rej::Repr {
            tid: c.tid,
            local_comm_id: c.local_id,
            remote_comm_id: c.remote_id,
            message_rejected: MsgResponse::Other,
            // The GUID's 8 bytes.
            ari_len: guid.len() as u8,
            reason: RejReason::Timeout,
            ari,
            private_data: [0; rej::PRIVATE_DATA_LEN],
        };
        let to = c.peer;
        self.send(to, &CmMessage::Rej(r));
    }
}

/// `cm_format_rtu` for connection `c` (no private data).
fn rtu_of(c: &Conn) -> rtu::Repr {
    rtu::Repr {
        tid: c.tid,
        local_comm_id: c.local_id,
        remote_comm_id: c.remote_id,
        private_data: [0; rtu::PRIVATE_DATA_LEN],
    }
}

/// `cm_format_mra` for connection `c`, acknowledging `what`, with the
/// service timeout it sent before (no private data).
pub(super) fn mra_of(c: &Conn, what: MsgResponse) -> mra::Repr {
    mra::Repr {
        tid: c.tid,
        local_comm_id: c.local_id,
        remote_comm_id: c.remote_id,
        message_mraed: what,
        service_timeout: c.service_timeout,
        private_data: [0; mra::PRIVATE_DATA_LEN],
    }
}
