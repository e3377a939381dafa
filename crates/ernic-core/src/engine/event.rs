//! Events a device reports outside any CQ ([`AsyncEvent`]).

use crate::types::{DeviceId, Qpn, SrqId};

/// An event the device reports outside any CQ.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AsyncEvent {
    /// An armed SRQ's receive count fell below its limit (the limit disarms).
    SrqLimitReached {
        /// The device.
        device: DeviceId,
        /// The SRQ.
        srq: SrqId,
    },
    /// A QP went to the error state because a request failed.
    QpFatal {
        /// The device.
        device: DeviceId,
        /// The QP.
        qpn: Qpn,
    },
}
