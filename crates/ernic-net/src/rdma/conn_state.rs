//! The connect/accept progression of one comm, as a pure state machine:
//! it is told what happened (its CONN or CONN_RESP went out, a CONN_RESP
//! came, the CONN_RESP's send completed or failed) and, for the connect
//! timeout, what time it is. It reads no clock and posts nothing; the
//! endpoint (`connect.rs`) does what each [`Step`] asks.
//!
//! - Sender: `Created` (its CONN not yet posted: no free tx slot) → CONN
//!   posted → `WaitResp` → a CONN_RESP → `Connected`. A step at or after
//!   `since + timeout` while neither connected nor failed is `TimedOut`;
//!   a CONN_RESP then is ignored. A CONN_RESP read before that step (the
//!   endpoint drains its CQs first) still connects.
//! - Receiver (a comm made for a peer's CONN): `RespPending` → CONN_RESP
//!   posted → `RespSent` → its send completed → `Connected`, or failed →
//!   `Failed`. It has no deadline: the sender's timeout bounds it.
//! - A listen comm is `Connected` from the start.

use std::time::{Duration, Instant};

use super::error::RequestError;

/// Where a comm's connection stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ConnState {
    /// Sender: the CONN message is not yet posted.
    Created,
    /// Sender: CONN posted, waiting for CONN_RESP.
    WaitResp,
    /// Receiver: CONN_RESP not yet posted.
    RespPending,
    /// Receiver: CONN_RESP posted, waiting for its completion.
    RespSent,
    /// Both: ready for data.
    Connected,
    /// Failed.
    Failed(RequestError),
    /// Sender: no CONN_RESP by the connect timeout.
    TimedOut,
}

/// What the endpoint does next for a connection being made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Post the CONN (then call [`Handshake::conn_sent`]).
    SendConn,
    /// Post the CONN_RESP (then call [`Handshake::resp_sent`]).
    SendConnResp,
    /// Nothing to do until the peer answers.
    Wait,
    /// Ready for data.
    Connected,
    /// The connection failed.
    Failed(RequestError),
    /// The connect timeout passed without a CONN_RESP.
    TimedOut,
}

/// One comm's connection and, for a sender, when it began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Handshake {
    state: ConnState,
    /// Sender: when the connect began, and how long it may take.
    deadline: Option<(Instant, Duration)>,
}

impl Handshake {
    /// A sender's connection, begun at `now`, that fails when `timeout`
    /// has passed without a CONN_RESP.
    pub(super) fn dial(now: Instant, timeout: Duration) -> Handshake {
        Handshake {
            state: ConnState::Created,
            deadline: Some((now, timeout)),
        }
    }

    /// A receiver's connection, for a peer's CONN.
    pub(super) fn answer() -> Handshake {
        Handshake {
            state: ConnState::RespPending,
            deadline: None,
        }
    }

    /// A listen comm's: connected from the start.
    pub(super) fn listening() -> Handshake {
        Handshake {
            state: ConnState::Connected,
            deadline: None,
        }
    }

    /// Where the connection stands.
    #[cfg(test)]
    pub(super) fn state(&self) -> &ConnState {
        &self.state
    }

    /// Whether the comm is ready for data.
    pub(super) fn is_connected(&self) -> bool {
        self.state == ConnState::Connected
    }

    /// The sender's next step at `now`: the deadline is checked here, and
    /// only while neither connected nor failed.
    pub(super) fn step(&mut self, now: Instant) -> Step {
        let pending = matches!(self.state, ConnState::Created | ConnState::WaitResp);
        let expired = self
            .deadline
            .is_some_and(|(since, timeout)| now.saturating_duration_since(since) >= timeout);
        if pending && expired {
            self.state = ConnState::TimedOut;
        }
        self.next()
    }

    /// The receiver's next step (it has no deadline).
    pub(super) fn accept_step(&self) -> Step {
        self.next()
    }

    fn next(&self) -> Step {
        match &self.state {
            ConnState::Created => Step::SendConn,
            ConnState::RespPending => Step::SendConnResp,
            ConnState::WaitResp | ConnState::RespSent => Step::Wait,
            ConnState::Connected => Step::Connected,
            ConnState::Failed(e) => Step::Failed(e.clone()),
            ConnState::TimedOut => Step::TimedOut,
        }
    }

    /// The sender's CONN was posted (or parked behind other posts).
    pub(super) fn conn_sent(&mut self) {
        if self.state == ConnState::Created {
            self.state = ConnState::WaitResp;
        }
    }

    /// Whether a CONN_RESP would be taken now: only while one is awaited.
    pub(super) fn awaits_resp(&self) -> bool {
        self.state == ConnState::WaitResp
    }

    /// A CONN_RESP came: connects a sender that awaits one; anything else
    /// (not yet sent, connected, timed out) ignores it. Answers whether it
    /// connected.
    pub(super) fn conn_resp(&mut self) -> bool {
        let taken = self.awaits_resp();
        if taken {
            self.state = ConnState::Connected;
        }
        taken
    }

    /// The receiver's CONN_RESP was posted.
    pub(super) fn resp_sent(&mut self) {
        if self.state == ConnState::RespPending {
            self.state = ConnState::RespSent;
        }
    }

    /// The receiver's CONN_RESP send completed: connected.
    pub(super) fn resp_done(&mut self) {
        self.state = ConnState::Connected;
    }

    /// The receiver's CONN_RESP could not be sent.
    pub(super) fn fail(&mut self, why: RequestError) {
        self.state = ConnState::Failed(why);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(5);
    const TICK: Duration = Duration::from_nanos(1);

    fn sent(t0: Instant) -> Handshake {
        let mut h = Handshake::dial(t0, TIMEOUT);
        assert_eq!(h.step(t0), Step::SendConn);
        h.conn_sent();
        h
    }

    #[test]
    fn a_connect_nobody_answers_times_out_at_the_timeout_and_not_a_tick_before() {
        let t0 = Instant::now();
        let mut h = sent(t0);
        assert_eq!(h.step(t0 + TIMEOUT / 2), Step::Wait);
        assert_eq!(h.step(t0 + TIMEOUT - TICK), Step::Wait);
        assert_eq!(h.step(t0 + TIMEOUT), Step::TimedOut);
        // And it stays timed out.
        assert_eq!(h.step(t0 + TIMEOUT + TIMEOUT), Step::TimedOut);
    }

    #[test]
    fn a_conn_resp_after_the_timeout_is_ignored() {
        let t0 = Instant::now();
        let mut h = sent(t0);
        assert_eq!(h.step(t0 + TIMEOUT), Step::TimedOut);
        assert!(!h.awaits_resp());
        assert!(!h.conn_resp(), "a late CONN_RESP connects nothing");
        assert_eq!(h.state(), &ConnState::TimedOut);
        assert_eq!(h.step(t0 + TIMEOUT + TICK), Step::TimedOut);
    }

    #[test]
    fn a_conn_resp_read_before_the_late_step_still_connects() {
        // The endpoint drains its CQs before it asks for the step, so an
        // answer that came by then counts, however late the step is.
        let t0 = Instant::now();
        let mut h = sent(t0);
        assert!(h.conn_resp());
        assert_eq!(h.step(t0 + 10 * TIMEOUT), Step::Connected);
        assert!(h.is_connected());
    }

    #[test]
    fn a_conn_not_yet_posted_is_asked_for_again_and_also_times_out() {
        let t0 = Instant::now();
        let mut h = Handshake::dial(t0, TIMEOUT);
        // No tx slot: the endpoint did not call conn_sent.
        assert_eq!(h.step(t0 + TICK), Step::SendConn);
        assert_eq!(h.step(t0 + TIMEOUT - TICK), Step::SendConn);
        assert!(!h.conn_resp(), "no CONN_RESP is awaited before the CONN");
        assert_eq!(h.step(t0 + TIMEOUT), Step::TimedOut);
    }

    #[test]
    fn a_second_conn_resp_changes_nothing() {
        let t0 = Instant::now();
        let mut h = sent(t0);
        assert!(h.conn_resp());
        assert!(!h.conn_resp());
        assert_eq!(h.step(t0 + TICK), Step::Connected);
    }

    #[test]
    fn the_receiver_connects_when_its_conn_resp_completes_or_fails_with_its_send() {
        let mut h = Handshake::answer();
        assert_eq!(h.accept_step(), Step::SendConnResp);
        h.resp_sent();
        assert_eq!(h.accept_step(), Step::Wait);
        h.resp_done();
        assert_eq!(h.accept_step(), Step::Connected);

        let mut h = Handshake::answer();
        h.resp_sent();
        let why = RequestError::Post {
            message: "refused".into(),
        };
        h.fail(why.clone());
        assert_eq!(h.accept_step(), Step::Failed(why));
        assert!(!h.is_connected());
        // A receiver has no deadline: no time makes it time out.
        let mut h = Handshake::answer();
        h.resp_sent();
        assert_eq!(h.step(Instant::now() + 100 * TIMEOUT), Step::Wait);
    }

    #[test]
    fn a_listen_comm_is_connected_from_the_start() {
        let mut h = Handshake::listening();
        assert!(h.is_connected());
        assert_eq!(h.step(Instant::now() + 100 * TIMEOUT), Step::Connected);
    }
}
