//! The connect/accept progression of one comm.

#[derive(Debug)]
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
    Failed(String),
}
