//! The data path's request types: how executing a request ended
//! ([`Outcome`]), the pieces of a send slot execution reads ([`Req`]), one
//! end of a request ([`End`]), where a payload comes from ([`Source`]) and
//! where a result goes ([`Sink`]), and a message arriving at a receive queue
//! ([`Incoming`], [`RecvSource`]).
//!
//! Plain data, shared by the local path, the inter-node path
//! ([`crate::remote`]) and the QP state ([`crate::qp`]): this file imports
//! nothing from the files that act on them.

use crate::grh::GRH_LEN;
use crate::types::{DeviceId, NodeId, PdId, Qpn, SrqId};
use crate::wr::{Access, SendFlags, SendOp, Sge, UdDest, WcStatus};

/// How executing one request ended, for now.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Outcome {
    /// Finished with this status, having moved this many bytes.
    Done(WcStatus, u32),
    /// The peer has no receive posted; try again later.
    Rnr,
    /// Sent to a peer node; its reply completes the request.
    InFlight,
    /// No room toward the peer node now; the queue stops here and retries.
    Blocked,
}

/// The pieces of a send slot that execution reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Req {
    pub op: SendOp,
    pub flags: SendFlags,
    pub ud: Option<UdDest>,
    pub decode_error: Option<WcStatus>,
}

/// One end of a request: a QP, its device, its protection domain, whether
/// its own SGEs may name key 0, and the remote rights it grants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct End {
    pub dev: DeviceId,
    pub qpn: Qpn,
    pub pd: PdId,
    pub dma_key: bool,
    pub access: Access,
}

/// Where a request's payload comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'r> {
    /// The SGEs of a QP on `dev` in `pd` (key 0 among them if `dma_key`),
    /// from byte `skip` on.
    Sgl {
        dev: DeviceId,
        pd: PdId,
        dma_key: bool,
        sgl: &'r [Sge],
        skip: u64,
    },
    /// Bytes in hand: an inline payload, or a message from a peer.
    Bytes(&'r [u8]),
    /// A by-reference payload from node `from` on this host: the runs of
    /// its memory that hold the bytes (see [`crate::wire::flags::BY_REF`]).
    Peer { from: NodeId, runs: &'r [u8] },
}

/// Where a request's result goes.
pub(crate) enum Sink<'r> {
    /// The SGEs of a QP on `dev` in `pd` (they need LOCAL_WRITE; key 0
    /// among them if `dma_key`), from byte `skip` on.
    Sgl {
        dev: DeviceId,
        pd: PdId,
        dma_key: bool,
        sgl: &'r [Sge],
        skip: u64,
    },
    /// A reply message's payload.
    Bytes(&'r mut [u8]),
}

/// Where a message consumes its receive from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RecvSource {
    Qp(DeviceId, Qpn),
    Srq(DeviceId, SrqId),
}

/// A message (or one piece of it) for a receive queue.
pub(crate) struct Incoming<'r> {
    /// SEND, SEND_IMM, SEND_INV or WRITE_IMM, and the solicited flag.
    pub req: Req,
    /// The payload of this piece.
    pub src: Source<'r>,
    /// Bytes in this piece.
    pub len: u64,
    /// Where this piece starts within the whole message.
    pub offset: u64,
    /// Length of the whole message.
    pub total: u64,
    /// Whether this piece ends the message.
    pub last: bool,
    /// The GRH a datagram lands with.
    pub grh: Option<&'r [u8; GRH_LEN]>,
    /// For datagrams: the sending QP.
    pub src_qpn: Option<Qpn>,
    /// UC: with no receive posted the message is dropped, not retried.
    pub unreliable: bool,
}

impl<'r> Incoming<'r> {
    /// A whole message in one piece, reliably delivered.
    pub fn whole(req: Req, src: Source<'r>, len: u64) -> Incoming<'r> {
        Incoming {
            req,
            src,
            len,
            offset: 0,
            total: len,
            last: true,
            grh: None,
            src_qpn: None,
            unreliable: false,
        }
    }
}
