//! The handles the driver hands out — CQs, QPs, PDs, SRQs, MRs — and
//! the book it keeps of each QP's outstanding requests, which turns the
//! QP's CQEs into completions.

use std::collections::VecDeque;

use ernic_core::{Completion, Gid, Lkey, QpCaps, QpType, Qpn, RemoteAddr, Rkey, Sge, WcOpcode};

use crate::{Buf, Ring};

/// A completion queue.
#[derive(Debug)]
pub struct Cq {
    pub(crate) id: u32,
    pub(crate) ring: Ring,
    pub(crate) cons: u32,
    /// Completions read from CQEs that did not fit the caller's array
    /// (one MSN CQE completes many requests).
    pub(crate) pending: VecDeque<Completion>,
}

impl Cq {
    /// The device's id for it.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Entries it holds.
    pub fn depth(&self) -> u32 {
        self.ring.depth()
    }

    /// CQEs the driver has taken from the ring so far (a test of the
    /// device counts what it wrote, beside what a poll reports).
    pub fn cqes_taken(&self) -> u32 {
        self.cons
    }
}

/// A queue pair: its rings and where the driver is in them. What its
/// completions need (outstanding requests, receive ids) the driver keeps,
/// so a CQ is polled on its own, as in verbs.
#[derive(Debug)]
pub struct Qp {
    pub(crate) id: u32,
    pub(crate) qp_type: QpType,
    pub(crate) sq: Ring,
    /// No ring when receives come from an SRQ.
    pub(crate) rq: Option<Ring>,
    pub(crate) sq_prod: u32,
    pub(crate) rq_prod: u32,
    /// Doorbell page offset in the shared area, when there is one.
    pub(crate) db: Option<usize>,
}

/// A posted send request, until its completion is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendMeta {
    /// Its WQE's index (what a by-id CQE names).
    pub(crate) idx: u32,
    pub(crate) wr_id: u64,
    pub(crate) opcode: WcOpcode,
    pub(crate) signaled: bool,
    /// The sequence number it completes by, for requests of connected QPs
    /// that reach the peer; `None` for local ones and datagrams.
    pub(crate) msn: Option<u32>,
    pub(crate) byte_len: u32,
}

/// The driver's book of a QP, for turning its CQEs into completions.
#[derive(Debug)]
pub(crate) struct QpBook {
    /// Send requests in the order they were posted (and complete).
    pub(crate) sq: VecDeque<SendMeta>,
    /// Sequence numbers handed out.
    pub(crate) msn_prod: u32,
    /// Posted receives in order: (ring index, wr_id).
    pub(crate) rq: VecDeque<(u32, u64)>,
    /// Receives come from an SRQ (their completions carry the wr_id).
    pub(crate) srq: bool,
    /// A datagram QP (receives start with a 40-byte GRH).
    pub(crate) ud: bool,
    /// Created in a privileged PD: it may name key 0.
    pub(crate) privileged: bool,
    /// Attributes the device does not report back.
    pub(crate) caps: QpCaps,
    pub(crate) dest: Option<(Gid, Qpn)>,
}

/// A protection domain: an id the driver allocated, which the objects
/// created in it carry to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pd(pub(crate) u32);

impl Pd {
    /// The id the device knows it by.
    pub fn id(&self) -> u32 {
        self.0
    }
}

/// What [`Driver::create_qp_with`] creates.
#[derive(Debug, Clone, Copy)]
pub struct QpSpec<'a> {
    /// The protection domain it belongs to.
    pub pd: Pd,
    /// RC, UC, UD or GSI (which becomes QP 1).
    pub qp_type: QpType,
    /// Where send completions go.
    pub send_cq: &'a Cq,
    /// Where receive completions go.
    pub recv_cq: &'a Cq,
    /// Receives drawn from this SRQ instead of a ring of the QP's own.
    pub srq: Option<&'a Srq>,
    /// Queue sizes; depths round up to powers of two.
    pub caps: QpCaps,
}

/// A shared receive queue.
#[derive(Debug)]
pub struct Srq {
    pub(crate) id: u32,
    pub(crate) pd: Pd,
    pub(crate) ring: Ring,
    pub(crate) prod: u32,
    pub(crate) db: Option<usize>,
}

impl Srq {
    /// The id the device gave it.
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl Qp {
    /// The QP number.
    pub fn qpn(&self) -> Qpn {
        Qpn(self.id)
    }
}

/// A memory region over a driver buffer.
#[derive(Debug, Clone, Copy)]
pub struct Mr {
    /// Its key (lkey and rkey alike).
    pub key: u32,
    /// The buffer.
    pub buf: Buf,
}

impl Mr {
    /// An SGE of `len` bytes at `off` in the region.
    pub fn sge(&self, off: u64, len: u32) -> Sge {
        Sge {
            addr: self.buf.addr() + off,
            len,
            lkey: Lkey(self.key),
        }
    }

    /// The remote address of the byte at `off`, under the region's key.
    pub fn remote(&self, off: u64) -> RemoteAddr {
        RemoteAddr {
            addr: self.buf.addr() + off,
            rkey: Rkey(self.key),
        }
    }
}
