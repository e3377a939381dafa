//! Device and per-QP counters.
//!
//! Names follow the kernel's rdma `hw_counters` where a driver already has a
//! counter for the same event (mlx5's `rx_write_requests`, `out_of_buffer`,
//! `rnr_nak_retry_err`, …; rxe's `rdma_sends`); the rest are named in the same
//! style. A counter is a plain `u64` bumped on the device thread.

use crate::wr::WcStatus;

/// One counter.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(usize)]
pub enum Counter {
    /// SEND work requests executed by this requester.
    RdmaSends,
    /// RDMA WRITE work requests executed.
    RdmaWrites,
    /// RDMA READ work requests executed.
    RdmaReads,
    /// Atomic work requests executed.
    RdmaAtomics,
    /// Fast registrations and local invalidations executed.
    LocalOps,
    /// Payload bytes moved by this device's requests.
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
    /// Datagrams dropped because no receive was posted.
    OutOfBuffer,
    /// Datagrams dropped by the Q_Key or QP type check.
    RxDatagramsDropped,
    /// Requests that ended with RNR retry exceeded.
    RnrNakRetryErr,
    /// Requests that ended with transport retry exceeded.
    LocalAckTimeoutErr,
    /// Requests the responder refused for access.
    ReqRemoteAccessErrors,
    /// Requests the responder refused as invalid.
    ReqRemoteInvalidRequest,
    /// Receives that were too small for the message.
    RespLocalLengthError,
    /// Local protection errors (bad lkey, range or right).
    LocalProtectionErrors,
    /// Send-side error completions, flushes excluded.
    ReqCqeError,
    /// Receive-side error completions, flushes excluded.
    RespCqeError,
    /// Send work requests flushed.
    ReqCqeFlushError,
    /// Receive work requests flushed.
    RespCqeFlushError,
}

impl Counter {
    /// Number of counters.
    pub const COUNT: usize = 23;

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
    ];

    /// The counter's name, as `hw_counters` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Counter::RdmaSends => "rdma_sends",
            Counter::RdmaWrites => "rdma_writes",
            Counter::RdmaReads => "rdma_reads",
            Counter::RdmaAtomics => "rdma_atomics",
            Counter::LocalOps => "local_ops",
            Counter::TxBytes => "tx_bytes",
            Counter::RdmaRecvs => "rdma_recvs",
            Counter::RxWriteRequests => "rx_write_requests",
            Counter::RxReadRequests => "rx_read_requests",
            Counter::RxAtomicRequests => "rx_atomic_requests",
            Counter::RxBytes => "rx_bytes",
            Counter::OutOfBuffer => "out_of_buffer",
            Counter::RxDatagramsDropped => "rx_datagrams_dropped",
            Counter::RnrNakRetryErr => "rnr_nak_retry_err",
            Counter::LocalAckTimeoutErr => "local_ack_timeout_err",
            Counter::ReqRemoteAccessErrors => "req_remote_access_errors",
            Counter::ReqRemoteInvalidRequest => "req_remote_invalid_request",
            Counter::RespLocalLengthError => "resp_local_length_error",
            Counter::LocalProtectionErrors => "local_protection_errors",
            Counter::ReqCqeError => "req_cqe_error",
            Counter::RespCqeError => "resp_cqe_error",
            Counter::ReqCqeFlushError => "req_cqe_flush_error",
            Counter::RespCqeFlushError => "resp_cqe_flush_error",
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
