//! Device and per-QP counters.
//!
//! Names follow a real ionic's `hw_counters` (the names its firmware returns
//! for STATS_HDRS: `req_rx_rnr_retry_err`, `resp_rx_outof_buf`,
//! `req_rx_cqe_flush_err`, …) wherever a counter means the same event; the
//! rest are named in the same style (`req_` for the requester side, `resp_`
//! for the responder side). The stats file uses these very names. A counter
//! is a plain `u64` bumped on the device thread: no allocation, no lock.

use crate::wr::WcStatus;

/// One counter.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(usize)]
pub enum Counter {
    /// SEND work requests this requester completed successfully.
    RdmaSends,
    /// RDMA WRITE work requests this requester completed successfully.
    RdmaWrites,
    /// RDMA READ work requests this requester completed successfully.
    RdmaReads,
    /// Atomic work requests this requester completed successfully.
    RdmaAtomics,
    /// Fast registrations and local invalidations executed.
    LocalOps,
    /// Payload bytes moved by this device's requests (either way).
    TxBytes,
    /// SENDs delivered into this device's receives.
    RdmaRecvs,
    /// RDMA WRITEs this device served as responder.
    RxWriteRequests,
    /// RDMA READs this device served as responder.
    RxReadRequests,
    /// Atomics this device served as responder.
    RxAtomicRequests,
    /// Payload bytes written into this device's memory by peers.
    RxBytes,
    /// Messages dropped because no receive was posted (ionic's name).
    OutOfBuffer,
    /// Datagrams dropped by the Q_Key or QP type check.
    RxDatagramsDropped,
    /// Requests that ended with RNR retry exceeded (ionic's name).
    RnrNakRetryErr,
    /// Requests that ended with transport retry exceeded (ionic's name).
    LocalAckTimeoutErr,
    /// Requests the responder refused for access (ionic's name).
    ReqRemoteAccessErrors,
    /// Requests the responder refused as invalid (ionic's name).
    ReqRemoteInvalidRequest,
    /// Receives that were too small for the message (ionic's name).
    RespLocalLengthError,
    /// Local protection errors: bad lkey, range or right (ionic's name).
    LocalProtectionErrors,
    /// Send-side error completions, flushes excluded (ionic's name).
    ReqCqeError,
    /// Receive-side error completions, flushes excluded (ionic's name).
    RespCqeError,
    /// Send work requests flushed (ionic's name).
    ReqCqeFlushError,
    /// Receive work requests flushed (ionic's name).
    RespCqeFlushError,
    /// Send work requests that completed with success, signaled or not.
    ReqCqeSuccess,
    /// Receive completions with success.
    RespCqeSuccess,
    /// Times a request found no receive posted and began an RNR wait.
    RnrWaits,
    /// Re-executions of a request that was waiting on RNR.
    RnrRetries,
}

impl Counter {
    /// Number of counters.
    pub const COUNT: usize = 27;

    /// Every counter, in index order.
    pub const ALL: [Counter; Counter::COUNT] = [
        Counter::RdmaSends,
        Counter::RdmaWrites,
        Counter::RdmaReads,
        Counter::RdmaAtomics,
        Counter::LocalOps,
        Counter::TxBytes,
        Counter::RdmaRecvs,
        Counter::RxWriteRequests,
        Counter::RxReadRequests,
        Counter::RxAtomicRequests,
        Counter::RxBytes,
        Counter::OutOfBuffer,
        Counter::RxDatagramsDropped,
        Counter::RnrNakRetryErr,
        Counter::LocalAckTimeoutErr,
        Counter::ReqRemoteAccessErrors,
        Counter::ReqRemoteInvalidRequest,
        Counter::RespLocalLengthError,
        Counter::LocalProtectionErrors,
        Counter::ReqCqeError,
        Counter::RespCqeError,
        Counter::ReqCqeFlushError,
        Counter::RespCqeFlushError,
        Counter::ReqCqeSuccess,
        Counter::RespCqeSuccess,
        Counter::RnrWaits,
        Counter::RnrRetries,
    ];

    /// The counter's name, as `hw_counters` and the stats file show it.
    pub fn name(self) -> &'static str {
        match self {
            Counter::RdmaSends => "req_tx_sends",
            Counter::RdmaWrites => "req_tx_writes",
            Counter::RdmaReads => "req_tx_reads",
            Counter::RdmaAtomics => "req_tx_atomics",
            Counter::LocalOps => "req_tx_local_ops",
            Counter::TxBytes => "req_bytes",
            Counter::RdmaRecvs => "resp_rx_sends",
            Counter::RxWriteRequests => "resp_rx_writes",
            Counter::RxReadRequests => "resp_rx_reads",
            Counter::RxAtomicRequests => "resp_rx_atomics",
            Counter::RxBytes => "resp_bytes",
            Counter::OutOfBuffer => "resp_rx_outof_buf",
            Counter::RxDatagramsDropped => "resp_rx_datagrams_dropped",
            Counter::RnrNakRetryErr => "req_rx_rnr_retry_err",
            Counter::LocalAckTimeoutErr => "req_tx_retry_excd_err",
            Counter::ReqRemoteAccessErrors => "req_rx_remote_access_err",
            Counter::ReqRemoteInvalidRequest => "req_rx_remote_inv_req_err",
            Counter::RespLocalLengthError => "resp_rx_local_len_err",
            Counter::LocalProtectionErrors => "req_tx_local_access_err",
            Counter::ReqCqeError => "req_rx_cqe_err",
            Counter::RespCqeError => "resp_rx_cqe_err",
            Counter::ReqCqeFlushError => "req_rx_cqe_flush_err",
            Counter::RespCqeFlushError => "resp_rx_cqe_flush_err",
            Counter::ReqCqeSuccess => "req_cqe_success",
            Counter::RespCqeSuccess => "resp_cqe_success",
            Counter::RnrWaits => "req_rnr_waits",
            Counter::RnrRetries => "req_rnr_retries",
        }
    }
}

/// A set of counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counters([u64; Counter::COUNT]);

impl Default for Counters {
    fn default() -> Counters {
        Counters([0; Counter::COUNT])
    }
}

impl Counters {
    /// Adds `n` to `c`.
    #[inline]
    pub fn add(&mut self, c: Counter, n: u64) {
        self.0[c as usize] = self.0[c as usize].wrapping_add(n);
    }

    /// Adds one to `c`.
    #[inline]
    pub fn inc(&mut self, c: Counter) {
        self.add(c, 1);
    }

    /// The value of `c`.
    pub fn get(&self, c: Counter) -> u64 {
        self.0[c as usize]
    }

    /// Every counter with its name, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Counter::ALL.iter().map(|c| (c.name(), self.get(*c)))
    }

    /// Sets every counter to zero.
    pub fn reset(&mut self) {
        self.0 = [0; Counter::COUNT];
    }
}

/// The counter an error status bumps, besides the per-side CQE error count.
pub(crate) fn error_counter(s: WcStatus) -> Option<Counter> {
    match s {
        WcStatus::RnrRetryExcErr => Some(Counter::RnrNakRetryErr),
        WcStatus::RetryExcErr => Some(Counter::LocalAckTimeoutErr),
        WcStatus::RemAccessErr => Some(Counter::ReqRemoteAccessErrors),
        WcStatus::RemInvReqErr => Some(Counter::ReqRemoteInvalidRequest),
        WcStatus::LocProtErr => Some(Counter::LocalProtectionErrors),
        WcStatus::LocLenErr => Some(Counter::RespLocalLengthError),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order_and_names_are_unique() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
        }
        let mut names: Vec<_> = Counter::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Counter::COUNT);
    }
}
