//! The passive side: taking a REQ (`cm_req_handler`, with
//! `cm_dup_req_handler` for retransmitted ones), answering it with a REP
//! (`ib_send_cm_rep`), an MRA (`ib_send_cm_mra`) or a REJ
//! (`ib_send_cm_rej`, which either side may send), and the RTU or first
//! data (`cm_rtu_handler`, `ib_cm_notify(IB_EVENT_COMM_EST)`) that
//! establishes the connection.

use std::time::Instant;

use super::requester::{exponent, mra_of};
use super::timers::{Timer, iba_time};
use super::{AcceptParams, Cm, CmError, ConnId, Event, Peer, State, private_data, state::Conn};
use crate::msg::{CmMessage, MsgResponse};
use crate::rej::{self, RejReason};
use crate::{rep, req, rtu};

impl Cm {
    /// `cm_req_handler`: a REQ naming a (remote comm id, peer) pair
    /// already held is a retransmission; one from a QP we still hold a
    /// connection to is refused as stale (REJ STALE_CONN, and a DREQ for
    /// the old connection); otherwise it is a new connection
    /// in [`State::ReqRcvd`] and an [`Event::Request`], unless
    /// `max_conns` are held: then a REJ with reason NO_RESOURCES (what
    /// Linux's SRP target sends when it has none; cm.c itself stays
    /// silent on a failed allocation).
    pub(super) fn on_req(&mut self, now: Instant, from: Peer, r: &req::Repr) {
        if r.local_comm_id == 0 {
            self.stats.malformed += 1;
            return;
        }
        if let Some(id) = self.find_remote(r.local_comm_id, &from) {
            self.on_dup_req(id);
            return;
        }
        if let Some(old) = self.find_remote_qp(r.local_qpn, r.local_ca_guid) {
            // cm_match_req's "stale connection": the peer reuses a QP we
            // still hold a connection to.
            self.issue_rej(
                from,
                r.tid,
                (0, r.local_comm_id),
                MsgResponse::Req,
                RejReason::StaleConn,
            );
            self.disconnect_stale(now, old);
            return;
        }
        let free = self.conns.len() < self.cfg.max_conns;
        let Some(id) = free.then(|| self.alloc_id()).flatten() else {
            self.stats.rejected_full += 1;
            let ids = (0, r.local_comm_id);
            self.issue_rej(from, r.tid, ids, MsgResponse::Req, RejReason::NoResources);
            return;
        };
        let mut c = Conn::new(id, from);
        c.state = State::ReqRcvd;
        c.remote_id = r.local_comm_id;
        c.remote_ca_guid = r.local_ca_guid;
        c.remote_qpn = r.local_qpn;
        c.tid = r.tid;
        c.timeout = iba_time(r.local_cm_response_timeout);
        c.max_cm_retries = r.max_cm_retries;
        // cm.c takes the packet life time as the REQ's local ACK timeout
        // less one, and the address vector's timeout as that plus one.
        let ack = r.primary.local_ack_timeout;
        c.av_timeout = ack - u8::from(ack > 0) + 1;
        self.conns.insert(id, c);
        self.push_event(Event::Request {
            id: ConnId(id),
            from,
            req: Box::new(*r),
        });
    }

    /// `cm_dup_req_handler` for connection `id`: discarded while the
    /// consumer decides, the MRA again after one, the REP again while it
    /// waits for the RTU (see the module doc), a REJ STALE_CONN in
    /// TIMEWAIT.
    fn on_dup_req(&mut self, id: u32) {
        self.stats.duplicates += 1;
        let Some(c) = self.conns.get(&id) else {
            return;
        };
        let to = c.peer;
        match c.state {
            State::MraReqSent => {
                let m = CmMessage::Mra(mra_of(c, MsgResponse::Req));
                self.send(to, &m);
            }
            State::RepSent | State::MraRepRcvd => {
                let mad = c.msg;
                self.push_output(to, mad);
            }
            State::Timewait => {
                let r = rej_of(c, c.local_id, MsgResponse::Other, RejReason::StaleConn);
                self.send(to, &CmMessage::Rej(r));
            }
            _ => {}
        }
    }

    /// Answers the REQ of `id` with a REP (`ib_send_cm_rep`), from
    /// [`State::ReqRcvd`] or [`State::MraReqSent`]. The REP carries the
    /// REQ's transaction id; it is resent every REQ-announced CM response
    /// time, up to the REQ's max CM retries, until an RTU (or the first
    /// data, [`established`](Self::established)) comes.
    pub fn accept(
        &mut self,
        now: Instant,
        id: ConnId,
        p: &AcceptParams<'_>,
    ) -> Result<(), CmError> {
        let data = private_data::<{ rep::PRIVATE_DATA_LEN }>("REP", p.private_data)?;
        let (ca_guid, ack_delay) = (self.cfg.ca_guid, self.cfg.ack_delay);
        let c = self.conn_mut(id)?;
        if !matches!(c.state, State::ReqRcvd | State::MraReqSent) {
            return Err(CmError::WrongState {
                id: id.0,
                op: "accept",
                state: c.state,
            });
        }
        let r = rep::Repr {
            tid: c.tid,
            attr_mod: 0,
            local_comm_id: c.local_id,
            remote_comm_id: c.remote_id,
            local_qkey: 0,
            local_qpn: p.local_qpn & 0x00ff_ffff,
            vendor_id: 0,
            local_eecn: 0,
            starting_psn: p.starting_psn & 0x00ff_ffff,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            target_ack_delay: ack_delay,
            failover_accepted: 0,
            end_to_end_flow_control: p.flow_control,
            rnr_retry_count: p.rnr_retry_count & 0x07,
            srq: p.srq,
            local_ca_guid: ca_guid,
            private_data: data,
        };
        c.state = State::RepSent;
        c.local_qpn = r.local_qpn;
        c.timer = Some(Timer::retransmit(now, c.timeout, c.max_cm_retries));
        let to = c.peer;
        let mad = self.send(to, &CmMessage::Rep(r));
        if let Some(c) = self.conns.get_mut(&id.0) {
            c.msg = mad;
        }
        Ok(())
    }

    /// Refuses connection `id` with a REJ (`ib_send_cm_rej`): before the
    /// REP (the connection is freed) or after it (TIMEWAIT). `ari` is at
    /// most [`rej::ARI_LEN`] bytes, `private_data` at most
    /// [`rej::PRIVATE_DATA_LEN`].
    pub fn reject(
        &mut self,
        now: Instant,
        id: ConnId,
        reason: RejReason,
        ari: &[u8],
        private_data: &[u8],
    ) -> Result<(), CmError> {
        let data = super::private_data::<{ rej::PRIVATE_DATA_LEN }>("REJ", private_data)?;
        let mut info = [0u8; rej::ARI_LEN];
        info.get_mut(..ari.len())
            .ok_or(CmError::Ari {
                len: ari.len(),
                max: rej::ARI_LEN,
            })?
            .copy_from_slice(ari);
        let c = self.conn_mut(id)?;
        // cm_format_rej: which message is refused, and whether our id is
        // told (not before we answered the REQ).
        let (local, what) = match c.state {
            State::ReqRcvd => (0, MsgResponse::Req),
            State::MraReqSent => (c.local_id, MsgResponse::Req),
            State::RepRcvd | State::MraRepSent => (c.local_id, MsgResponse::Rep),
            State::ReqSent | State::MraReqRcvd | State::RepSent | State::MraRepRcvd => {
                (c.local_id, MsgResponse::Other)
            }
            state => {
                return Err(CmError::WrongState {
                    id: id.0,
                    op: "reject",
                    state,
                });
            }
        };
        let after_rep = matches!(c.state, State::RepSent | State::MraRepRcvd);
        let r = rej::Repr {
            // ARI_LEN (72) fits a u8, and ari.len() is at most that.
            ari_len: ari.len() as u8,
            ari: info,
            private_data: data,
            ..rej_of(c, local, what, reason)
        };
        let to = c.peer;
        self.send(to, &CmMessage::Rej(r));
        if after_rep {
            self.enter_timewait(now, id.0);
        } else {
            self.conns.remove(&id.0);
        }
        Ok(())
    }

    /// Acknowledges the REQ (from [`State::ReqRcvd`]) or REP (from
    /// [`State::RepRcvd`]) of `id` with an MRA (`ib_send_cm_mra`): the
    /// answer will take up to 4.096 us x 2^`service_timeout` more.
    pub fn send_mra(
        &mut self,
        _now: Instant,
        id: ConnId,
        service_timeout: u8,
    ) -> Result<(), CmError> {
        let service_timeout = exponent(service_timeout)?;
        let c = self.conn_mut(id)?;
        let (next, what) = match c.state {
            State::ReqRcvd => (State::MraReqSent, MsgResponse::Req),
            State::RepRcvd => (State::MraRepSent, MsgResponse::Rep),
            state => {
                return Err(CmError::WrongState {
                    id: id.0,
                    op: "send_mra",
                    state,
                });
            }
        };
        c.state = next;
        c.service_timeout = service_timeout;
        let (to, m) = (c.peer, mra_of(c, what));
        self.send(to, &CmMessage::Mra(m));
        Ok(())
    }

    /// `ib_cm_notify(IB_EVENT_COMM_EST)`: data arrived on the QP of `id`
    /// before its RTU, which establishes it (from [`State::RepSent`] or
    /// [`State::MraRepRcvd`]; the REP is no longer resent). Calling it
    /// again once established does nothing.
    pub fn established(&mut self, _now: Instant, id: ConnId) -> Result<(), CmError> {
        let c = self.conn_mut(id)?;
        match c.state {
            State::RepSent | State::MraRepRcvd => {
                c.state = State::Established;
                c.timer = None;
                self.push_event(Event::Established { id });
                Ok(())
            }
            State::Established => Ok(()),
            state => Err(CmError::WrongState {
                id: id.0,
                op: "established",
                state,
            }),
        }
    }

    /// `cm_rtu_handler`.
    pub(super) fn on_rtu(&mut self, from: Peer, r: &rtu::Repr) {
        let Some(c) = self
            .find(r.remote_comm_id, r.local_comm_id, &from)
            .and_then(|id| self.conns.get_mut(&id))
        else {
            self.stats.unknown += 1;
            return;
        };
        if !matches!(c.state, State::RepSent | State::MraRepRcvd) {
            self.stats.duplicates += 1;
            return;
        }
        c.state = State::Established;
        c.timer = None;
        let id = ConnId(c.local_id);
        self.push_event(Event::Established { id });
    }
}

/// `cm_format_rej` for connection `c` with our id shown as `local`,
/// refusing `what` for `reason` (no ARI, no private data).
pub(super) fn rej_of(c: &Conn, local: u32, what: MsgResponse, reason: RejReason) -> rej::Repr {
    rej::Repr {
        tid: c.tid,
        local_comm_id: local,
        remote_comm_id: c.remote_id,
        message_rejected: what,
        ari_len: 0,
        reason,
        ari: [0; rej::ARI_LEN],
        private_data: [0; rej::PRIVATE_DATA_LEN],
    }
}
