//! One connection's record: its state (`enum ib_cm_state` of
//! `include/rdma/ib_cm.h`, without the listen and SIDR states, which this
//! CM does not have), the identifiers both ends chose, the timeouts cm.c
//! derives for it, and the MAD it may have to send again.

use std::time::Duration;

use super::Peer;
use super::timers::Timer;
use crate::mad::MAD_LEN;

/// Where a connection stands (`enum ib_cm_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// `IB_CM_IDLE`: nothing in progress; a connection is freed here.
    Idle,
    /// `IB_CM_REQ_SENT`: the requester waits for a REP.
    ReqSent,
    /// `IB_CM_REQ_RCVD`: the responder's consumer has a REQ to answer.
    ReqRcvd,
    /// `IB_CM_MRA_REQ_SENT`: the responder acknowledged the REQ with an MRA.
    MraReqSent,
    /// `IB_CM_MRA_REQ_RCVD`: the requester got an MRA and waits longer.
    MraReqRcvd,
    /// `IB_CM_REP_SENT`: the responder waits for an RTU.
    RepSent,
    /// `IB_CM_REP_RCVD`: the requester's consumer has a REP to confirm.
    RepRcvd,
    /// `IB_CM_MRA_REP_SENT`: the requester acknowledged the REP with an MRA.
    MraRepSent,
    /// `IB_CM_MRA_REP_RCVD`: the responder got an MRA and waits longer.
    MraRepRcvd,
    /// `IB_CM_ESTABLISHED`.
    Established,
    /// `IB_CM_DREQ_SENT`: waiting for the DREP.
    DreqSent,
    /// `IB_CM_DREQ_RCVD`: the peer asked to disconnect (passed through at
    /// once: the DREP is sent in the same call).
    DreqRcvd,
    /// `IB_CM_TIMEWAIT`: the QP must not be reused until this ends.
    Timewait,
}

/// One connection.
#[derive(Clone, Debug)]
pub(crate) struct Conn {
    /// Our communication id (`id.local_id`).
    pub local_id: u32,
    /// The peer's (`id.remote_id`); 0 until known, as cm.c keeps it.
    pub remote_id: u32,
    /// Where its MADs go.
    pub peer: Peer,
    /// The peer's CA GUID (`timewait_info->remote_ca_guid`).
    pub remote_ca_guid: u64,
    /// The peer's QPN.
    pub remote_qpn: u32,
    /// Our QPN (0 until the responder accepts).
    pub local_qpn: u32,
    /// The transaction id responses carry (`cm_id_priv->tid`).
    pub tid: u64,
    /// The state.
    pub state: State,
    /// The one pending timer.
    pub timer: Option<Timer>,
    /// `cm_id_priv->timeout_ms`: the wait for an answer to a REQ, REP or
    /// DREQ of this connection.
    pub timeout: Duration,
    /// `cm_id_priv->max_cm_retries`.
    pub max_cm_retries: u8,
    /// `av.timeout`: the exponent TIMEWAIT and an MRA's extra wait use.
    pub av_timeout: u8,
    /// The service timeout of the MRA we sent, to send it again.
    pub service_timeout: u8,
    /// The MAD a retransmission (or a duplicate REQ) resends.
    pub msg: [u8; MAD_LEN],
}

impl Conn {
    /// A connection in [`State::Idle`] with nothing known yet.
    pub fn new(local_id: u32, peer: Peer) -> Conn {
        Conn {
            local_id,
            remote_id: 0,
            peer,
            remote_ca_guid: 0,
            remote_qpn: 0,
            local_qpn: 0,
            tid: 0,
            state: State::Idle,
            timer: None,
            timeout: Duration::ZERO,
            max_cm_retries: 0,
            av_timeout: 0,
            service_timeout: 0,
            msg: [0; MAD_LEN],
        }
    }
}
