//! Ending a connection: the DREQ and its DREP (`ib_send_cm_dreq`,
//! `cm_dreq_handler`, `ib_send_cm_drep`, `cm_issue_drep`,
//! `cm_drep_handler`), a received REJ (`cm_acquire_rejected_id`,
//! `cm_rej_handler`), and TIMEWAIT (`cm_enter_timewait`).

use std::time::Instant;

use super::timers::Timer;
use super::{Cm, CmError, ConnId, Event, Peer, State, state::Conn};
use crate::msg::{CmMessage, MsgResponse};
use crate::rej::{self, RejReason};
use crate::{drep, dreq};

impl Cm {
    /// Sends a DREQ for the established connection `id`
    /// (`ib_send_cm_dreq`), with a fresh transaction id and at most
    /// [`dreq::PRIVATE_DATA_LEN`] bytes of private data. It is resent
    /// every CM response time, up to the max CM retries, until the DREP;
    /// either way [`Event::Disconnected`] follows and TIMEWAIT begins.
    pub fn disconnect(
        &mut self,
        now: Instant,
        id: ConnId,
        private_data: &[u8],
    ) -> Result<(), CmError> {
        let data = super::private_data::<{ dreq::PRIVATE_DATA_LEN }>("DREQ", private_data)?;
        let state = self.conn_mut(id)?.state;
        if state != State::Established {
            return Err(CmError::WrongState {
                id: id.0,
                op: "disconnect",
                state,
            });
        }
        let tid = self.tid();
        let c = self.conn_mut(id)?;
        let r = dreq::Repr {
            tid,
            local_comm_id: c.local_id,
            remote_comm_id: c.remote_id,
            remote_qpn: c.remote_qpn,
            private_data: data,
        };
        c.state = State::DreqSent;
        c.timer = Some(Timer::retransmit(now, c.timeout, c.max_cm_retries));
        let to = c.peer;
        let mad = self.send(to, &CmMessage::Dreq(r));
        self.conn_mut(id)?.msg = mad;
        Ok(())
    }

    /// `cm_dreq_handler`, answered at once as `ib_send_cm_drep` would be.
    /// A DREQ naming no connection still gets a DREP (`cm_issue_drep`):
    /// the peer may have lost ours.
    pub(super) fn on_dreq(&mut self, now: Instant, from: Peer, r: &dreq::Repr) {
        let Some(id) = self.find(r.remote_comm_id, r.local_comm_id, &from) else {
            self.stats.unknown += 1;
            let d = drep::Repr {
                tid: r.tid,
                local_comm_id: r.remote_comm_id,
                remote_comm_id: r.local_comm_id,
                private_data: [0; drep::PRIVATE_DATA_LEN],
            };
            self.send(from, &CmMessage::Drep(d));
            return;
        };
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if c.local_qpn != r.remote_qpn {
            self.stats.unexpected += 1;
            return;
        }
        match c.state {
            State::RepSent | State::MraRepRcvd | State::Established | State::DreqSent => {}
            State::Timewait => {
                self.stats.duplicates += 1;
                let (to, d) = (c.peer, drep_of(c));
                self.send(to, &CmMessage::Drep(d));
                return;
            }
            State::DreqRcvd => {
                self.stats.duplicates += 1;
                return;
            }
            _ => {
                self.stats.unexpected += 1;
                return;
            }
        }
        c.state = State::DreqRcvd;
        c.tid = r.tid;
        c.timer = None;
        let (to, d) = (c.peer, drep_of(c));
        self.push_event(Event::DisconnectRequested { id: ConnId(id) });
        self.enter_timewait(now, id);
        self.send(to, &CmMessage::Drep(d));
        self.push_event(Event::Disconnected { id: ConnId(id) });
    }

    /// `cm_drep_handler`.
    pub(super) fn on_drep(&mut self, now: Instant, from: Peer, r: &drep::Repr) {
        let Some(id) = self.find(r.remote_comm_id, r.local_comm_id, &from) else {
            self.stats.unknown += 1;
            return;
        };
        match self.conns.get(&id).map(|c| c.state) {
            Some(State::DreqSent | State::DreqRcvd) => {
                self.enter_timewait(now, id);
                self.push_event(Event::Disconnected { id: ConnId(id) });
            }
            _ => self.stats.unexpected += 1,
        }
    }

    /// `cm_acquire_rejected_id` and `cm_rej_handler`.
    pub(super) fn on_rej(&mut self, now: Instant, from: Peer, r: &rej::Repr) {
        let found = if r.reason == RejReason::Timeout {
            // The rejecter's CA GUID is the ARI's first 8 bytes.
            let mut guid = [0u8; 8];
            guid.copy_from_slice(&r.ari[..8]);
            let guid = u64::from_be_bytes(guid);
            self.conns
                .values()
                .find(|c| {
                    c.remote_id != 0
                        && c.remote_id == r.local_comm_id
                        && c.remote_ca_guid == guid
                        && c.peer.gid == from.gid
                })
                .map(|c| c.local_id)
        } else if r.message_rejected == MsgResponse::Req {
            self.find(r.remote_comm_id, 0, &from)
        } else {
            self.find(r.remote_comm_id, r.local_comm_id, &from)
        };
        let Some(id) = found else {
            self.stats.unknown += 1;
            return;
        };
        let Some(state) = self.conns.get(&id).map(|c| c.state) else {
            return;
        };
        match state {
            State::ReqSent
            | State::MraReqRcvd
            | State::RepSent
            | State::MraRepRcvd
            | State::ReqRcvd
            | State::MraReqSent => {
                if r.reason == RejReason::StaleConn {
                    self.enter_timewait(now, id);
                } else {
                    self.conns.remove(&id);
                }
            }
            State::DreqSent | State::RepRcvd | State::MraRepSent | State::Established => {
                self.enter_timewait(now, id);
            }
            _ => {
                self.stats.unexpected += 1;
                return;
            }
        }
        self.push_event(Event::Rejected {
            id: ConnId(id),
            reason: r.reason,
            private_data: Box::new(r.private_data),
        });
    }

    /// `cm_enter_timewait`: the connection waits 4.096 us x 2^av_timeout
    /// before its id is freed; a pending retransmission is cancelled.
    pub(super) fn enter_timewait(&mut self, now: Instant, id: u32) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.state = State::Timewait;
            c.timer = Some(Timer::timewait(now, c.av_timeout));
        }
    }
}

/// `cm_format_drep` for connection `c` (no private data).
fn drep_of(c: &Conn) -> drep::Repr {
    drep::Repr {
        tid: c.tid,
        local_comm_id: c.local_id,
        remote_comm_id: c.remote_id,
        private_data: [0; drep::PRIVATE_DATA_LEN],
    }
}
