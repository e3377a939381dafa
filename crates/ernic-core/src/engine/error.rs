//! The engine's error ([`EngineError`]): why a call into it was refused.
//!
//! A refused call changes nothing. Errors of work requests that were accepted
//! are completion statuses ([`WcStatus`](crate::WcStatus)), never this type.

use crate::qp::QpState;
use crate::types::{AhId, CqId, DeviceId, Gid, PdId, Qpn, SrqId};
use crate::wr::Access;

/// A call into the engine was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The device does not exist.
    #[error("no device {0}")]
    NoDevice(DeviceId),
    /// The protection domain does not exist.
    #[error("no protection domain {0}")]
    NoPd(PdId),
    /// The CQ does not exist.
    #[error("no completion queue {0}")]
    NoCq(CqId),
    /// The QP does not exist.
    #[error("no queue pair {0}")]
    NoQp(Qpn),
    /// The SRQ does not exist.
    #[error("no shared receive queue {0}")]
    NoSrq(SrqId),
    /// The address handle does not exist.
    #[error("no address handle {0}")]
    NoAh(AhId),
    /// No MR has this key.
    #[error("no memory region with key {0:#x}")]
    NoMr(u32),
    /// A table is full.
    #[error("too many {what}: the device allows {max}")]
    Limit {
        /// What ran out.
        what: &'static str,
        /// The limit.
        max: u32,
    },
    /// A new object's memory would pass the device's budget for it.
    #[error("{what} of {need} bytes does not fit: {left} of the device's {max} bytes are left")]
    OverBudget {
        /// What was asked for.
        what: &'static str,
        /// The bytes it needs.
        need: u64,
        /// The bytes left in the budget.
        left: u64,
        /// The whole budget.
        max: u64,
    },
    /// An id asked for is taken or out of range.
    #[error("{what} id {id} is taken or out of range")]
    IdUnavailable {
        /// What kind of object.
        what: &'static str,
        /// The id.
        id: u32,
    },
    /// A queue size or count is outside what the device supports.
    #[error("{what} of {value} is outside 1..={max}")]
    BadSize {
        /// Which size.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The largest allowed.
        max: u64,
    },
    /// The object is still used by another and cannot be destroyed.
    #[error("{what} is still in use")]
    InUse {
        /// What is in use.
        what: &'static str,
    },
    /// Verbs does not allow this state change.
    #[error("QP {qpn} cannot move from {from:?} to {to:?}")]
    BadTransition {
        /// The QP.
        qpn: Qpn,
        /// Its state.
        from: QpState,
        /// The state asked for.
        to: QpState,
    },
    /// A transition is missing an attribute it needs.
    #[error("QP {qpn}: moving to {to:?} needs {attr}")]
    MissingAttr {
        /// The QP.
        qpn: Qpn,
        /// The state asked for.
        to: QpState,
        /// The attribute that was missing.
        attr: &'static str,
    },
    /// No device or node owns the destination GID.
    #[error("no device or node owns GID {0}")]
    NoRoute(Gid),
    /// Work cannot be posted in the QP's state.
    #[error("QP {qpn} is in state {state:?}: cannot post {what}")]
    NotPostable {
        /// The QP.
        qpn: Qpn,
        /// Its state.
        state: QpState,
        /// Sends or receives.
        what: &'static str,
    },
    /// The queue has no free slot.
    #[error("{what} of QP {qpn} is full ({depth} entries)")]
    QueueFull {
        /// The QP (or SRQ number).
        qpn: Qpn,
        /// Which queue.
        what: &'static str,
        /// Its depth.
        depth: u32,
    },
    /// More SGEs than the queue was created for.
    #[error("{n} SGEs given, the queue takes at most {max}")]
    TooManySge {
        /// Given.
        n: usize,
        /// Allowed.
        max: u32,
    },
    /// An inline payload longer than the QP allows.
    #[error("inline payload of {len} bytes exceeds the QP's {max}")]
    InlineTooLong {
        /// Given.
        len: usize,
        /// Allowed.
        max: u32,
    },
    /// A datagram send without a destination, or one on a connected QP.
    #[error("QP {qpn}: {why}")]
    BadRequest {
        /// The QP.
        qpn: Qpn,
        /// What was wrong.
        why: &'static str,
    },
    /// Access flags that verbs refuses (remote write or atomic without local write).
    #[error("access {0:?} gives a remote write right without LOCAL_WRITE")]
    BadAccess(Access),
    /// An address range that wraps around.
    #[error("range {addr:#x}+{len} wraps around the address space")]
    Wraps {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
    },
}
