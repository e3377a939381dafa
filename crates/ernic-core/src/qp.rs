//! Queue pairs: types, states, attributes and the send/receive rings the
//! engine keeps for them.
//!
//! The rings hold decoded work requests in slots allocated when the QP is
//! created; posting fills a slot in place (clear, then copy the SGEs in), so
//! no allocation happens per request.

use std::collections::VecDeque;
use std::time::Instant;

use crate::counters::Counters;
use crate::datapath::request::RecvSource;
use crate::types::{CqId, Gid, NodeId, PdId, Qpn, Route, SrqId};
use crate::wr::{Access, SendFlags, SendOp, Sge, UdDest, WcStatus};

/// Transport type of a QP.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// The general services interface QP (QP1), a UD QP for management datagrams.
    Gsi,
}

impl QpType {
    /// Whether the QP talks to one peer QP.
    pub fn is_connected(self) -> bool {
        matches!(self, QpType::Rc | QpType::Uc)
    }

    /// Whether the QP sends and receives datagrams.
    pub fn is_datagram(self) -> bool {
        matches!(self, QpType::Ud | QpType::Gsi)
    }
}

/// QP state, as verbs names them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum QpState {
    /// Just created, or reset: queues empty, nothing runs.
    Reset,
    /// Receives may be posted.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained: posted sends wait.
    Sqd,
    /// Send queue error (datagram QPs).
    Sqe,
    /// Error: everything outstanding is flushed.
    Err,
}

impl QpState {
    /// Whether verbs allows moving from `self` to `to`.
    pub fn can_move_to(self, to: QpState) -> bool {
        use QpState::*;
        if matches!(to, Reset | Err) {
            return true;
        }
        matches!(
            (self, to),
            (Reset, Init)
                | (Init, Init)
                | (Init, Rtr)
                | (Rtr, Rts)
                | (Rts, Rts)
                | (Rts, Sqd)
                | (Sqd, Rts)
                | (Sqd, Sqd)
                | (Sqe, Rts)
        )
    }

    /// Whether a peer's messages are accepted in this state.
    pub fn can_receive(self) -> bool {
        matches!(
            self,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        )
    }
}

/// How big a QP's queues are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QpCaps {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth (ignored with an SRQ).
    pub max_recv_wr: u32,
    /// SGEs per send request.
    pub max_send_sge: u32,
    /// SGEs per receive request.
    pub max_recv_sge: u32,
    /// Bytes of inline payload per send request.
    pub max_inline_data: u32,
}

impl Default for QpCaps {
    fn default() -> QpCaps {
        QpCaps {
            max_send_wr: 128,
            max_recv_wr: 128,
            max_send_sge: 4,
            max_recv_sge: 4,
            max_inline_data: 64,
        }
    }
}

/// What creating a QP needs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QpInit {
    /// Transport type.
    pub qp_type: QpType,
    /// Protection domain.
    pub pd: PdId,
    /// CQ for send completions.
    pub send_cq: CqId,
    /// CQ for receive completions.
    pub recv_cq: CqId,
    /// Shared receive queue, if any.
    pub srq: Option<SrqId>,
    /// Queue sizes.
    pub caps: QpCaps,
    /// Every send completes to the CQ, signaled or not.
    pub sq_sig_all: bool,
    /// A QP number chosen by the front end (the ionic driver picks its own);
    /// `None` lets the device choose. GSI QPs are always QP 1.
    pub qpn: Option<Qpn>,
}

/// A transition and the attributes it sets (verbs' `ibv_qp_attr` with its mask
/// folded into `Option`s).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct QpAttr {
    /// The state to move to; `None` changes attributes only.
    pub state: Option<QpState>,
    /// Remote access rights the QP grants its peer.
    pub access: Option<Access>,
    /// Q_Key of a datagram QP.
    pub qkey: Option<u32>,
    /// Destination of a connected QP (at RTR): GID and QP number.
    pub dest: Option<(Gid, Qpn)>,
    /// Path MTU in bytes.
    pub path_mtu: Option<u32>,
    /// Receive PSN (recorded only; the emulated transport has no PSNs).
    pub rq_psn: Option<u32>,
    /// Send PSN (recorded only).
    pub sq_psn: Option<u32>,
    /// How many times a SEND this QP requests may meet a peer with no
    /// receive posted before it fails (verbs' `rnr_retry`, 0 to 7; 7 is
    /// without limit). Unset, the engine's `rnr_timeout` bounds the wait.
    pub rnr_retry: Option<u8>,
    /// How long a peer is told to wait before it tries again when this
    /// QP has no receive for it (verbs' `min_rnr_timer`, the 5-bit IB code
    /// of [`crate::rnr::timer`]).
    pub min_rnr_timer: Option<u8>,
}

/// Where a connected QP's peer lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Dest {
    /// The peer's GID.
    pub gid: Gid,
    /// The peer's QP number.
    pub qpn: Qpn,
    /// Where the GID lives.
    pub route: Route,
}

/// A snapshot of a QP's attributes (QUERY_QP).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct QpInfo {
    /// Its number.
    pub qpn: Qpn,
    /// Its type.
    pub qp_type: QpType,
    /// Its state.
    pub state: QpState,
    /// Remote rights it grants.
    pub access: Access,
    /// Its Q_Key.
    pub qkey: Option<u32>,
    /// Its peer, if connected and past RTR.
    pub dest: Option<Dest>,
    /// Path MTU.
    pub path_mtu: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Queue sizes.
    pub caps: QpCaps,
    /// Send requests posted and not yet completed.
    pub sq_outstanding: u32,
    /// Receives posted and not yet consumed (0 with an SRQ).
    pub rq_outstanding: u32,
}

/// One send queue slot.
#[derive(Debug)]
pub(crate) struct SendSlot {
    pub wr_id: u64,
    pub op: SendOp,
    pub flags: SendFlags,
    pub sgl: Vec<Sge>,
    pub inline: Vec<u8>,
    pub ud: Option<UdDest>,
    pub decode_error: Option<WcStatus>,
    /// Set when the request has finished: status and bytes moved.
    pub done: Option<(WcStatus, u32)>,
    /// For a request to another node: bytes already sent (a request larger
    /// than one message goes out over several passes).
    pub sent: u64,
    /// For a request to another node: its id in the pending table.
    pub req_id: u64,
}

/// A ring of send slots: `head` is the oldest not yet completed, `exec` the
/// next to execute, `tail` the next free. Indices run freely and wrap.
#[derive(Debug)]
pub(crate) struct SendQueue {
    pub slots: Box<[SendSlot]>,
    pub head: u32,
    pub exec: u32,
    pub tail: u32,
}

impl SendQueue {
    pub fn new(depth: u32, max_sge: u32, max_inline: u32) -> SendQueue {
        let slots = (0..depth)
            .map(|_| SendSlot {
                wr_id: 0,
                op: SendOp::Send,
                flags: SendFlags::default(),
                sgl: Vec::with_capacity(max_sge as usize),
                inline: Vec::with_capacity(max_inline as usize),
                ud: None,
                decode_error: None,
                done: None,
                sent: 0,
                req_id: 0,
            })
            .collect();
        SendQueue {
            slots,
            head: 0,
            exec: 0,
            tail: 0,
        }
    }

    pub fn depth(&self) -> u32 {
        self.slots.len() as u32
    }

    pub fn outstanding(&self) -> u32 {
        self.tail.wrapping_sub(self.head)
    }

    pub fn is_full(&self) -> bool {
        self.outstanding() >= self.depth()
    }

    pub fn index(&self, ctr: u32) -> usize {
        (ctr % self.depth()) as usize
    }
}

/// Bytes the heap keeps for one allocation of `n` bytes: glibc's chunk
/// header and 16-byte granules (none for `n == 0`, which allocates nothing).
fn heap_bytes(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        (n + 8).next_multiple_of(16).max(32)
    }
}

impl QpCaps {
    /// The memory a QP of these sizes holds in the engine, with its own
    /// receive queue or (`srq`) one drawing from a shared one: every send
    /// slot keeps room for `max_send_sge` SGEs and `max_inline_data` bytes,
    /// every receive slot for `max_recv_sge` SGEs, from creation on (the
    /// data path never allocates). A front end bounds this, not the depths
    /// alone: it grows with depth × (SGEs + inline bytes).
    pub fn engine_bytes(&self, srq: bool) -> u64 {
        let send = send_queue_bytes(self.max_send_wr, self.max_send_sge, self.max_inline_data);
        let recv = if srq {
            recv_queue_bytes(1, 0)
        } else {
            recv_queue_bytes(self.max_recv_wr, self.max_recv_sge)
        };
        send + recv
    }
}

/// The memory a send queue of `depth` slots holds (see
/// [`QpCaps::engine_bytes`]).
pub(crate) fn send_queue_bytes(depth: u32, max_sge: u32, max_inline: u32) -> u64 {
    let depth = u64::from(depth);
    let sgl = u64::from(max_sge) * std::mem::size_of::<Sge>() as u64;
    heap_bytes(depth * std::mem::size_of::<SendSlot>() as u64)
        + depth * (heap_bytes(sgl) + heap_bytes(max_inline.into()))
}

/// The memory a receive queue (a QP's or an SRQ's) of `depth` slots holds.
pub fn recv_queue_bytes(depth: u32, max_sge: u32) -> u64 {
    let depth = u64::from(depth);
    let sgl = u64::from(max_sge) * std::mem::size_of::<Sge>() as u64;
    heap_bytes(depth * std::mem::size_of::<RecvSlot>() as u64) + depth * heap_bytes(sgl)
}

/// One receive slot.
#[derive(Debug)]
pub(crate) struct RecvSlot {
    pub wr_id: u64,
    pub sgl: Vec<Sge>,
}

/// A ring of receive slots (a QP's RQ or an SRQ).
#[derive(Debug)]
pub(crate) struct RecvQueue {
    pub slots: Box<[RecvSlot]>,
    pub head: u32,
    pub tail: u32,
}

impl RecvQueue {
    pub fn new(depth: u32, max_sge: u32) -> RecvQueue {
        let slots = (0..depth)
            .map(|_| RecvSlot {
                wr_id: 0,
                sgl: Vec::with_capacity(max_sge as usize),
            })
            .collect();
        RecvQueue {
            slots,
            head: 0,
            tail: 0,
        }
    }

    pub fn depth(&self) -> u32 {
        self.slots.len() as u32
    }

    pub fn outstanding(&self) -> u32 {
        self.tail.wrapping_sub(self.head)
    }

    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    pub fn push(&mut self, wr_id: u64, sgl: &[Sge]) {
        let d = self.depth();
        let slot = &mut self.slots[(self.tail % d) as usize];
        slot.wr_id = wr_id;
        slot.sgl.clear();
        slot.sgl.extend_from_slice(sgl);
        self.tail = self.tail.wrapping_add(1);
    }

    /// The head slot's index, if any receive is posted.
    pub fn head_index(&self) -> Option<usize> {
        (!self.is_empty()).then(|| (self.head % self.depth()) as usize)
    }

    pub fn pop(&mut self) {
        self.head = self.head.wrapping_add(1);
    }
}

/// A receive taken by the first piece of a message that arrives in several.
#[derive(Debug)]
pub(crate) struct OpenRecv {
    pub source: RecvSource,
    pub wr_id: u64,
    pub sgl: Vec<Sge>,
}

/// A message from a peer held back because its QP had no receive posted
/// (or an earlier message for the QP is held).
#[derive(Debug)]
pub(crate) struct Held {
    pub from: NodeId,
    pub msg: crate::remote::state::Msg,
    pub since: Instant,
    /// How long it may wait for a receive from `since` ([`crate::rnr`]);
    /// `None` without limit (and for a message that needs no receive, held
    /// only behind one that does).
    pub budget: Option<std::time::Duration>,
}

/// A queue pair.
#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: Qpn,
    pub incarnation: u64,
    pub qp_type: QpType,
    pub state: QpState,
    pub pd: PdId,
    /// Its own SGEs may name the reserved DMA key 0 (see
    /// [`Engine::set_qp_privileged`](crate::Engine::set_qp_privileged)).
    pub privileged: bool,
    pub send_cq: CqId,
    pub recv_cq: CqId,
    pub srq: Option<SrqId>,
    pub caps: QpCaps,
    pub sq_sig_all: bool,
    pub access: Access,
    pub qkey: Option<u32>,
    pub dest: Option<Dest>,
    pub path_mtu: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub sq: SendQueue,
    pub rq: RecvQueue,
    pub counters: Counters,
    /// Since when the head send request has waited for a receive at its peer.
    pub rnr_since: Option<Instant>,
    /// Its `rnr_retry`, as set ([`QpAttr::rnr_retry`]).
    pub rnr_retry: Option<u8>,
    /// Its `min_rnr_timer` code ([`QpAttr::min_rnr_timer`]; 0 until set).
    pub min_rnr_timer: u8,
    /// A message arriving in pieces, between its first and last.
    pub open_recv: Option<OpenRecv>,
    /// Peers' messages waiting for a receive, in arrival order.
    pub held: VecDeque<Held>,
}

impl Qp {
    pub fn info(&self) -> QpInfo {
        QpInfo {
            qpn: self.qpn,
            qp_type: self.qp_type,
            state: self.state,
            access: self.access,
            qkey: self.qkey,
            dest: self.dest,
            path_mtu: self.path_mtu,
            rq_psn: self.rq_psn,
            sq_psn: self.sq_psn,
            caps: self.caps,
            sq_outstanding: self.sq.outstanding(),
            rq_outstanding: if self.srq.is_some() {
                0
            } else {
                self.rq.outstanding()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_transitions() {
        use QpState::*;
        assert!(Reset.can_move_to(Init));
        assert!(Init.can_move_to(Rtr));
        assert!(Rtr.can_move_to(Rts));
        assert!(Rts.can_move_to(Sqd));
        assert!(Sqd.can_move_to(Rts));
        assert!(Rts.can_move_to(Err));
        assert!(Err.can_move_to(Reset));
        assert!(!Reset.can_move_to(Rts));
        assert!(!Init.can_move_to(Rts));
        assert!(!Err.can_move_to(Rts));
        assert!(!Rtr.can_move_to(Init));
    }

    #[test]
    fn recv_ring_wraps() {
        let mut rq = RecvQueue::new(2, 1);
        for i in 0..10u64 {
            rq.push(i, &[]);
            assert_eq!(rq.slots[rq.head_index().unwrap()].wr_id, i);
            rq.pop();
            assert!(rq.is_empty());
        }
    }
}
