//! Requests between nodes (seed 001, "A Remote Request, Step by Step").
//!
//! The requester's half turns a work request whose peer lives on another
//! node into one or more [`wire`] messages (at most
//! [`EngineConfig::max_piece`](crate::EngineConfig::max_piece) bytes
//! each), records it in the pending table, and completes it when every
//! message has been answered, or with transport retry exceeded when no answer
//! comes within the request timeout. The responder's half applies a peer's
//! message to this engine's memory through the same responder operations the
//! local path uses, and answers. A SEND that finds no receive posted is held
//! (with every later message for its QP) and retried as receives arrive, for
//! up to the RNR timeout.
//!
//! The engine reaches other nodes only through the [`Remote`] trait: it asks
//! who owns a GID, queues a message (which may be refused for lack of room,
//! leaving the request at the head of its send queue), and takes back what a
//! flushed QP still has queued. It never waits for a peer.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use crate::datapath::{End, Incoming, Outcome, Req, SegArray, Sink, Source, tx_counter};
use crate::engine::Engine;
use crate::grh::GRH_LEN;
use crate::memory::DmaMemory;
use crate::qp::{Dest, Held};
use crate::types::{DeviceId, Gid, NodeId, Qpn, Rkey};
use crate::wire::{self, HEADER_LEN, Op, Packet, Repr, flags};
use crate::wr::{Access, RemoteAddr, SendFlags, SendOp, Sge, UdDest, WcStatus};

/// How the engine reaches other nodes (the TCP mesh implements it).
pub trait Remote: Send {
    /// The node that owns `gid`, if exactly one other node does.
    fn owner(&self, gid: &Gid) -> Option<NodeId>;

    /// Queues one message for `to`. `out.fill` writes its `out.len` bytes.
    /// Refusing with [`SendError::Busy`] leaves the request where it is, to
    /// be tried again on a later pass.
    fn send(&mut self, to: NodeId, out: Outgoing<'_>) -> Result<(), SendError>;

    /// Takes back queued messages tagged `tag` that have not started to go out.
    fn cancel(&mut self, tag: u64);

    /// Whether node `to` reads this process's memory itself: a peer on this
    /// host that has proved which process it talks to. Messages to it may
    /// then name their payload by reference ([`wire::flags::BY_REF`]) instead
    /// of carrying it, and the payload crosses once, by the responder's
    /// read, instead of through two socket copies. The peer reads it any
    /// time until it answers, as a NIC's DMA reads a posted buffer: memory
    /// freed or remapped before the request completes is the same misuse
    /// it is on hardware.
    fn reads_from_me(&self, _to: NodeId) -> bool {
        false
    }

    /// Reads what node `from` named by reference in its own memory: for each
    /// run, `len` bytes at the peer's address `remote` into `local`. Fails
    /// when `from` has not proved which process it is, is gone, or named
    /// memory it does not have.
    ///
    /// # Safety
    ///
    /// Every run's `local` must be valid for writes of `len` bytes for the
    /// duration of the call.
    #[allow(unsafe_code)]
    unsafe fn read_peer(&self, _from: NodeId, _runs: &[PeerRun]) -> Result<(), PeerReadError> {
        Err(PeerReadError::NotProved)
    }
}

/// One run of a read from a peer's memory (see [`Remote::read_peer`]).
#[derive(Clone, Copy, Debug)]
pub struct PeerRun {
    /// The address in the peer's memory.
    pub remote: u64,
    /// Where the bytes go in this process.
    pub local: std::ptr::NonNull<u8>,
    /// Bytes.
    pub len: usize,
}

/// Why a peer's memory could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeerReadError {
    /// The node has not proved which process on this host it is.
    #[error("the node has not proved which process on this host it is")]
    NotProved,
    /// The process is gone.
    #[error("the peer's process is gone")]
    Gone,
    /// The memory named could not be read (unmapped, or fewer bytes).
    #[error("the peer's memory could not be read")]
    Fault,
}

/// A message for [`Remote::send`].
pub struct Outgoing<'a> {
    /// A reply (answering a peer's request) rather than a request.
    pub reply: bool,
    /// The sending QP's incarnation, for [`Remote::cancel`]; 0 for replies.
    pub tag: u64,
    /// Bytes in the message.
    pub len: usize,
    /// Writes the message into a buffer of `len` bytes.
    pub fill: &'a mut dyn FnMut(&mut [u8]),
}

/// Why a message could not be queued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SendError {
    /// No room toward that node now.
    Busy,
    /// No connection leads to that node.
    NoRoute,
}

/// A message from a peer: its bytes start `start` bytes into `buf`.
#[derive(Debug)]
pub(crate) struct Msg {
    pub buf: Vec<u8>,
    pub start: usize,
}

impl Msg {
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or(&[])
    }
}

/// A request some of whose messages have gone to a peer node.
#[derive(Debug)]
pub(crate) struct Pending {
    dev: DeviceId,
    qpn: Qpn,
    incarnation: u64,
    /// The request's send queue counter.
    ctr: u32,
    node: NodeId,
    sent: u32,
    answered: u32,
    all_sent: bool,
    status: WcStatus,
    total: u32,
    /// READ reply bytes asked for and not yet answered.
    reads_out: u64,
}

/// The engine's state for requests between nodes.
#[derive(Default)]
pub(crate) struct RemoteState {
    pub carrier: Option<Box<dyn Remote>>,
    pending: HashMap<u64, Pending>,
    /// Request ids in the order their timeouts fall due.
    deadlines: VecDeque<(Instant, u64)>,
    next_req: u64,
    /// READ reply bytes asked of each node and not yet answered.
    reads_out: HashMap<NodeId, u64>,
    /// QPs with held messages.
    pub held_qps: Vec<(DeviceId, Qpn)>,
    /// Message buffers the engine is done with.
    pub released: Vec<Vec<u8>>,
    /// Counters of the inter-node path.
    pub stats: RemoteStats,
}

impl RemoteState {
    /// Queues a request's timeout. Every request has the same timeout, so
    /// the queue stays in deadline order; but an entry outlives its request
    /// (it is dropped only when it falls due), and at a million requests a
    /// second a 30 s timeout would hold 30 million of them. So the entries
    /// of requests that are done are swept out whenever they outnumber the
    /// live ones: the queue never holds more than twice the requests
    /// pending (which the send queues bound) when the last was posted, plus 64.
    fn push_deadline(&mut self, at: Instant, req_id: u64) {
        if self.deadlines.len() >= 2 * self.pending.len() + 64 {
            let pending = &self.pending;
            self.deadlines.retain(|(_, id)| pending.contains_key(id));
        }
        self.deadlines.push_back((at, req_id));
    }
}

impl std::fmt::Debug for RemoteState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteState")
            .field("pending", &self.pending.len())
            .field("held_qps", &self.held_qps)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Counters of the inter-node path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteStats {
    /// Messages from peers that did not parse, dropped.
    pub malformed: u64,
    /// Replies that found no room toward their requester, dropped.
    pub replies_dropped: u64,
    /// Requests that timed out waiting for their answer.
    pub timeouts: u64,
    /// Replies for requests no longer pending (flushed, timed out, or a QP
    /// that was destroyed), ignored.
    pub stale_replies: u64,
    /// Messages sent with their payload by reference, to peers on this host.
    pub sent_by_ref: u64,
    /// Bytes read from peers' memory for by-reference payloads.
    pub read_by_ref: u64,
}

/// The request's operation as the peer sees it, for one piece.
fn piece_op(op: SendOp, last: bool) -> Op {
    match op {
        SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => Op::Send,
        SendOp::Write(_) => Op::Write,
        SendOp::WriteImm(..) if last => Op::WriteImm,
        SendOp::WriteImm(..) => Op::Write,
        SendOp::Read(_) => Op::ReadReq,
        SendOp::AtomicCas { .. } => Op::AtomicCas,
        _ => Op::AtomicFa,
    }
}

impl<M: DmaMemory> Engine<M> {
    /// Connects the engine to other nodes.
    pub fn set_remote(&mut self, carrier: Box<dyn Remote>) {
        self.remote.carrier = Some(carrier);
    }

    /// Counters of the inter-node path.
    pub fn remote_stats(&self) -> RemoteStats {
        self.remote.stats
    }

    /// How many request timers the engine holds now: at most twice the
    /// inter-node requests pending at the last one posted, plus 64.
    pub fn remote_timers_held(&self) -> usize {
        self.remote.deadlines.len()
    }

    /// Hands every message buffer the engine is done with to `f` (to recycle
    /// it, and to count it out of the inbound budget).
    pub fn take_released(&mut self, mut f: impl FnMut(Vec<u8>)) {
        for b in self.remote.released.drain(..) {
            f(b);
        }
    }

    /// Whether messages from peers are held for want of a receive.
    pub fn has_held(&self) -> bool {
        !self.remote.held_qps.is_empty()
    }

    /// Requests waiting for an answer from another node.
    pub fn pending_remote(&self) -> usize {
        self.remote.pending.len()
    }

    fn next_req_id(&mut self) -> u64 {
        self.remote.next_req += 1;
        self.remote.next_req
    }

    /// Sends (the rest of) a connected QP's request to its peer on `node`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn exec_remote(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        ctr: u32,
        req: &Req,
        sgl: &[Sge],
        src: Source<'_>,
        len: u64,
        node: NodeId,
        dest: &Dest,
        now: Instant,
    ) -> Outcome {
        let Ok(qp) = self.qp(dev, qpn) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        let (pd, incarnation, dma_key) = (qp.pd, qp.incarnation, self.dma_key(qp));
        let idx = qp.sq.index(ctr);
        let slot = &qp.sq.slots[idx];
        if let Some((st, n)) = slot.done {
            // An answer already ended it while pieces were still to go.
            return Outcome::Done(st, n);
        }
        let (mut sent, mut req_id) = (slot.sent, slot.req_id);

        let me = End {
            dev,
            qpn,
            pd,
            dma_key,
            access: Access::NONE,
        };
        if req_id == 0 {
            // First pass: the local buffers must hold before anything is sent.
            let check = match req.op {
                SendOp::Read(_) => {
                    let d = self.dev(dev).expect("QP exists");
                    let mut seg: SegArray<'_> = Default::default();
                    crate::datapath::resolve_sgl(d, dma_key, pd, sgl, Access::LOCAL_WRITE, &mut seg)
                        .map(|_| ())
                }
                SendOp::AtomicCas { .. } | SendOp::AtomicFa { .. } => {
                    self.check_atomic_target(me, sgl, len)
                }
                _ => self.resolve_source_checked(&src),
            };
            if let Err(st) = check {
                return Outcome::Done(st, 0);
            }
            if self.remote.carrier.is_none() {
                return Outcome::Done(WcStatus::RetryExcErr, 0);
            }
            req_id = self.next_req_id();
            self.remote.pending.insert(
                req_id,
                Pending {
                    dev,
                    qpn,
                    incarnation,
                    ctr,
                    node,
                    sent: 0,
                    answered: 0,
                    all_sent: false,
                    status: WcStatus::Success,
                    total: len as u32,
                    reads_out: 0,
                },
            );
            self.remote
                .push_deadline(now + self.cfg.request_timeout, req_id);
            self.qp_mut(dev, qpn).expect("QP exists").sq.slots[idx].req_id = req_id;
        }
        let sgid = self
            .dev(dev)
            .ok()
            .and_then(|d| d.gids.first().copied())
            .unwrap_or_default();
        let Some(mut carrier) = self.remote.carrier.take() else {
            return Outcome::Done(WcStatus::RetryExcErr, 0);
        };
        let max = u64::from(self.cfg.max_piece).clamp(1, wire::MAX_PAYLOAD as u64);
        // To a peer that reads this process's memory itself, a large payload
        // goes by reference (the runs that hold it, not the bytes), in
        // pieces that may be larger: they cost the socket nothing.
        let by_ref_ok = matches!(
            req.op,
            SendOp::Send
                | SendOp::SendImm(_)
                | SendOp::SendInv(_)
                | SendOp::Write(_)
                | SendOp::WriteImm(..)
        ) && self.cfg.send_by_ref
            && len - sent >= u64::from(self.cfg.by_ref_min)
            && carrier.reads_from_me(node);
        let max_ref = u64::from(self.cfg.max_ref_piece.max(1));
        let budget = self.cfg.read_reply_budget;
        // The runs of the piece going by reference (filled afresh for each).
        let mut refs = [(0u64, 0u64); wire::MAX_REF_RUNS];
        let result = loop {
            let skipped = match src {
                Source::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    ..
                } => Source::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    skip: sent,
                },
                Source::Bytes(b) => Source::Bytes(&b[sent as usize..]),
                Source::Peer { .. } => src,
            };
            let rest = len - sent;
            let by_ref = (by_ref_ok && rest >= u64::from(self.cfg.by_ref_min))
                .then(|| {
                    let mut seg: SegArray<'_> = Default::default();
                    let s = self.resolve_source(&skipped, &mut seg).ok()?;
                    crate::copy::host_runs(&self.mem, s, rest.min(max_ref), &mut refs)
                })
                .flatten();
            // A payload whose runs are too many for one reference carries
            // its bytes, in pieces a frame holds.
            let piece = if by_ref.is_some() {
                rest.min(max_ref)
            } else {
                rest.min(max)
            };
            let last = sent + piece == len;
            let op = piece_op(req.op, last);
            let mut hdr = Repr {
                flags: if last { flags::LAST } else { 0 }
                    | if req.flags.solicited {
                        flags::SOLICITED
                    } else {
                        0
                    },
                src_qpn: qpn,
                dst_qpn: dest.qpn,
                req_id,
                len: piece as u32,
                total: len as u32,
                offset: sent as u32,
                sgid,
                dgid: dest.gid,
                ..Repr::new(op)
            };
            match req.op {
                SendOp::SendImm(imm) | SendOp::WriteImm(_, imm) => {
                    hdr.flags |= flags::IMM;
                    hdr.imm = imm;
                }
                SendOp::SendInv(rkey) => {
                    hdr.flags |= flags::INVALIDATE;
                    hdr.imm = rkey.0;
                }
                _ => {}
            }
            match req.op {
                SendOp::Write(ra) | SendOp::WriteImm(ra, _) | SendOp::Read(ra) => {
                    hdr.rkey = ra.rkey.0;
                    hdr.addr = ra.addr.wrapping_add(sent);
                }
                SendOp::AtomicCas {
                    remote,
                    compare,
                    swap,
                } => {
                    hdr.rkey = remote.rkey.0;
                    hdr.addr = remote.addr;
                    hdr.operand0 = compare;
                    hdr.operand1 = swap;
                    hdr.len = 0;
                    hdr.total = 0;
                }
                SendOp::AtomicFa { remote, add } => {
                    hdr.rkey = remote.rkey.0;
                    hdr.addr = remote.addr;
                    hdr.operand0 = add;
                    hdr.len = 0;
                    hdr.total = 0;
                }
                _ => {}
            }
            if op == Op::ReadReq {
                let out = self.remote.reads_out.get(&node).copied().unwrap_or(0);
                if out > 0 && out + piece > budget {
                    break Err(crate::remote::SendError::Busy);
                }
            }
            if let Some(k) = by_ref {
                hdr.flags |= flags::BY_REF;
                hdr.operand0 = k as u64;
            }
            let payload_len = hdr.payload_len();
            let this = &*self;
            let mut fill = |buf: &mut [u8]| {
                hdr.emit(buf);
                if let Some(k) = by_ref {
                    wire::put_ref_runs(&mut buf[HEADER_LEN..], &refs[..k]);
                } else if payload_len > 0 {
                    let mut seg: SegArray<'_> = Default::default();
                    if let Ok(s) = this.resolve_source(&skipped, &mut seg) {
                        let _ = crate::copy::copy(
                            &this.mem,
                            crate::copy::Dst::Bytes(&mut buf[HEADER_LEN..]),
                            s,
                            piece,
                        );
                    }
                }
            };
            let r = carrier.send(
                node,
                Outgoing {
                    reply: false,
                    tag: incarnation,
                    len: HEADER_LEN + payload_len,
                    fill: &mut fill,
                },
            );
            if let Err(e) = r {
                break Err(e);
            }
            sent += piece;
            if by_ref.is_some() {
                self.remote.stats.sent_by_ref += 1;
            }
            let Some(p) = self.remote.pending.get_mut(&req_id) else {
                // Answered and ended (in error) while pieces were still going.
                break Ok(());
            };
            p.sent += 1;
            if op == Op::ReadReq {
                p.reads_out += piece;
                *self.remote.reads_out.entry(node).or_insert(0) += piece;
            }
            if last {
                p.all_sent = true;
                break Ok(());
            }
        };
        self.remote.carrier = Some(carrier);
        self.qp_mut(dev, qpn).expect("QP exists").sq.slots[idx].sent = sent;
        match result {
            Ok(()) => {
                self.count_tx(dev, qpn, tx_counter(req.op), len);
                Outcome::InFlight
            }
            Err(SendError::Busy) => Outcome::Blocked,
            Err(SendError::NoRoute) => {
                self.drop_pending(req_id);
                Outcome::Done(WcStatus::RetryExcErr, 0)
            }
        }
    }

    /// Checks that a request's local payload is readable, without copying.
    fn resolve_source_checked(&self, src: &Source<'_>) -> Result<(), WcStatus> {
        match *src {
            Source::Bytes(_) | Source::Peer { .. } => Ok(()),
            Source::Sgl {
                dev,
                pd,
                dma_key,
                sgl,
                ..
            } => {
                let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
                let mut seg: SegArray<'_> = Default::default();
                crate::datapath::resolve_sgl(d, dma_key, pd, sgl, Access::NONE, &mut seg)
                    .map(|_| ())
            }
        }
    }

    /// Sends a datagram to a QP on another node. Its send completion does not
    /// wait for the peer: a datagram's sender never hears of its fate.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_datagram(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        req: &Req,
        src: Source<'_>,
        len: u64,
        node: NodeId,
        ud: UdDest,
        qkey: u32,
        grh: &[u8; GRH_LEN],
        _now: Instant,
    ) -> Outcome {
        let Some(mut carrier) = self.remote.carrier.take() else {
            return Outcome::Done(WcStatus::Success, len as u32);
        };
        let incarnation = self.qp(dev, qpn).map(|q| q.incarnation).unwrap_or(0);
        let sgid = self
            .dev(dev)
            .ok()
            .and_then(|d| d.gids.first().copied())
            .unwrap_or_default();
        let dgid = crate::grh::Repr::parse(&crate::grh::Packet::new_unchecked(&grh[..]))
            .map(|g| g.dgid)
            .unwrap_or_default();
        let total = GRH_LEN as u64 + len;
        let mut hdr = Repr {
            flags: flags::DATAGRAM | flags::LAST,
            src_qpn: qpn,
            dst_qpn: ud.remote_qpn,
            len: total as u32,
            total: total as u32,
            operand0: u64::from(qkey),
            sgid,
            dgid,
            ..Repr::new(Op::Send)
        };
        if let SendOp::SendImm(imm) = req.op {
            hdr.flags |= flags::IMM;
            hdr.imm = imm;
        }
        let this = &*self;
        let mut fill = |buf: &mut [u8]| {
            hdr.emit(buf);
            buf[HEADER_LEN..HEADER_LEN + GRH_LEN].copy_from_slice(grh);
            let mut seg: SegArray<'_> = Default::default();
            if let Ok(s) = this.resolve_source(&src, &mut seg) {
                let _ = crate::copy::copy(
                    &this.mem,
                    crate::copy::Dst::Bytes(&mut buf[HEADER_LEN + GRH_LEN..]),
                    s,
                    len,
                );
            }
        };
        let r = carrier.send(
            node,
            Outgoing {
                reply: false,
                tag: incarnation,
                len: HEADER_LEN + total as usize,
                fill: &mut fill,
            },
        );
        self.remote.carrier = Some(carrier);
        match r {
            Err(SendError::Busy) => Outcome::Blocked,
            // Lost on the way, as a datagram may be.
            Err(SendError::NoRoute) => Outcome::Done(WcStatus::Success, len as u32),
            Ok(()) => {
                self.count_tx(dev, qpn, crate::counters::Counter::RdmaSends, len);
                Outcome::Done(WcStatus::Success, len as u32)
            }
        }
    }

    fn drop_pending(&mut self, req_id: u64) -> Option<Pending> {
        let p = self.remote.pending.remove(&req_id)?;
        if p.reads_out > 0 {
            if let Some(n) = self.remote.reads_out.get_mut(&p.node) {
                *n = n.saturating_sub(p.reads_out);
            }
        }
        Some(p)
    }

    /// Forgets every pending request of a QP (destroyed or flushed): answers
    /// that come later are ignored.
    pub(crate) fn forget_pending(&mut self, dev: DeviceId, qpn: Qpn) {
        let ids: Vec<u64> = self
            .remote
            .pending
            .iter()
            .filter(|(_, p)| p.dev == dev && p.qpn == qpn)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.drop_pending(id);
        }
    }

    /// Takes back what a flushed QP still has queued toward other nodes.
    pub(crate) fn cancel_queued(&mut self, incarnation: u64) {
        if let Some(c) = self.remote.carrier.as_mut() {
            c.cancel(incarnation);
        }
    }

    /// Ends a pending request: its send queue slot completes with `status`.
    fn finish(&mut self, req_id: u64, status: WcStatus, now: Instant) {
        let Some(p) = self.drop_pending(req_id) else {
            return;
        };
        let Ok(qp) = self.qp_mut(p.dev, p.qpn) else {
            return;
        };
        if qp.incarnation != p.incarnation {
            return;
        }
        let idx = qp.sq.index(p.ctr);
        let n = if status.is_ok() { p.total } else { 0 };
        qp.sq.slots[idx].done = Some((status, n));
        let connected = qp.qp_type.is_connected();
        self.retire_sq(p.dev, p.qpn);
        if !status.is_ok() && connected {
            self.fail_qp(p.dev, p.qpn);
        } else {
            // Room freed toward the peer (or a READ budget) may unblock the queue.
            self.progress_sq(p.dev, p.qpn, now);
        }
    }

    /// Applies a message from node `from`: the bytes of `buf` from `start`
    /// on (a carrier may keep its own framing in front). The buffer comes
    /// back through [`take_released`](Engine::take_released) once the engine
    /// is done with it (a SEND held for a receive keeps it until then).
    pub fn apply_remote(&mut self, from: NodeId, buf: Vec<u8>, start: usize, now: Instant) {
        let msg = Msg { buf, start };
        let parsed = Packet::new_checked(msg.bytes()).and_then(|p| Repr::parse(&p));
        let repr = match parsed {
            Ok(r) => r,
            Err(_) => {
                self.remote.stats.malformed += 1;
                self.remote.released.push(msg.buf);
                return;
            }
        };
        if repr.op.is_reply() {
            self.handle_reply(&repr, &msg.bytes()[HEADER_LEN..], now);
            self.remote.released.push(msg.buf);
            return;
        }
        if let Some(msg) = self.serve(from, msg, &repr, now, false) {
            self.remote.released.push(msg.buf);
        }
    }

    fn reply(&mut self, to: NodeId, req: &Repr, op: Op, status: WcStatus, operand0: u64) {
        let hdr = Repr {
            flags: flags::LAST,
            status,
            src_qpn: req.src_qpn,
            dst_qpn: req.dst_qpn,
            req_id: req.req_id,
            operand0,
            sgid: req.dgid,
            dgid: req.sgid,
            ..Repr::new(op)
        };
        let Some(mut carrier) = self.remote.carrier.take() else {
            return;
        };
        let r = carrier.send(
            to,
            Outgoing {
                reply: true,
                tag: 0,
                len: HEADER_LEN,
                fill: &mut |buf: &mut [u8]| hdr.emit(buf),
            },
        );
        self.remote.carrier = Some(carrier);
        if r.is_err() {
            self.remote.stats.replies_dropped += 1;
        }
    }

    /// Serves a request from a peer. Returns the buffer when done with it,
    /// `None` when the message is held.
    fn serve(
        &mut self,
        from: NodeId,
        msg: Msg,
        r: &Repr,
        now: Instant,
        retrying: bool,
    ) -> Option<Msg> {
        let datagram = r.flags & flags::DATAGRAM != 0;
        let Some(dev) = self.device_of_gid(&r.dgid) else {
            if !datagram {
                self.reply(from, r, Op::Ack, WcStatus::RetryExcErr, 0);
            }
            return Some(msg);
        };
        let payload = &msg.bytes()[HEADER_LEN..];
        let imm_op = |r: &Repr| {
            if r.flags & flags::IMM != 0 {
                SendOp::SendImm(r.imm)
            } else if r.flags & flags::INVALIDATE != 0 {
                SendOp::SendInv(Rkey(r.imm))
            } else {
                SendOp::Send
            }
        };
        let sflags = SendFlags {
            solicited: r.flags & flags::SOLICITED != 0,
            ..SendFlags::default()
        };
        if datagram {
            if r.op == Op::Send && payload.len() >= GRH_LEN {
                let mut grh = [0u8; GRH_LEN];
                grh.copy_from_slice(&payload[..GRH_LEN]);
                let data = &payload[GRH_LEN..];
                let req = Req {
                    op: imm_op(r),
                    flags: sflags,
                    ud: None,
                    decode_error: None,
                };
                self.deliver_datagram(
                    dev,
                    r.dst_qpn,
                    r.operand0 as u32,
                    &req,
                    Source::Bytes(data),
                    data.len() as u64,
                    &grh,
                    r.src_qpn,
                );
            } else {
                self.remote.stats.malformed += 1;
            }
            return Some(msg);
        }
        let Ok(qp) = self.qp(dev, r.dst_qpn) else {
            self.reply(from, r, Op::Ack, WcStatus::RetryExcErr, 0);
            return Some(msg);
        };
        if !retrying && !qp.held.is_empty() {
            // Messages for a QP are applied in order: this one waits behind.
            return self.hold(dev, r.dst_qpn, from, msg, now);
        }
        let enforce = self.cfg.enforce_qp_state;
        let from_peer = qp
            .dest
            .is_some_and(|d| d.qpn == r.src_qpn && d.route == crate::types::Route::Remote(from));
        if !qp.qp_type.is_connected() || (enforce && (!qp.state.can_receive() || !from_peer)) {
            self.reply(from, r, Op::Ack, WcStatus::RetryExcErr, 0);
            return Some(msg);
        }
        let at = End {
            dev,
            qpn: r.dst_qpn,
            pd: qp.pd,
            dma_key: self.dma_key(qp),
            access: qp.access,
        };
        let unreliable = qp.qp_type == crate::qp::QpType::Uc;
        // A by-reference payload is read from the requester's memory as it
        // is copied (parse checked its runs add up to `len`).
        let by_ref = r.flags & flags::BY_REF != 0;
        let data = if by_ref {
            Source::Peer {
                from,
                runs: payload,
            }
        } else {
            Source::Bytes(payload)
        };
        let ra = RemoteAddr {
            addr: r.addr,
            rkey: Rkey(r.rkey),
        };
        match r.op {
            Op::Write => {
                let st = self.respond_write(at, ra, data, u64::from(r.len)).err();
                if by_ref && st.is_none() {
                    self.remote.stats.read_by_ref += u64::from(r.len);
                }
                self.reply(from, r, Op::Ack, st.unwrap_or(WcStatus::Success), 0);
            }
            Op::Send | Op::WriteImm => {
                let op = if r.op == Op::WriteImm {
                    SendOp::WriteImm(ra, r.imm)
                } else {
                    imm_op(r)
                };
                let inc = Incoming {
                    req: Req {
                        op,
                        flags: sflags,
                        ud: None,
                        decode_error: None,
                    },
                    src: data,
                    len: u64::from(r.len),
                    offset: u64::from(r.offset),
                    total: u64::from(r.total),
                    last: r.flags & flags::LAST != 0,
                    grh: None,
                    src_qpn: None,
                    unreliable,
                };
                match self.respond_receive(at, &inc) {
                    Outcome::Rnr => return self.hold(dev, r.dst_qpn, from, msg, now),
                    Outcome::Done(st, _) => {
                        if by_ref && st.is_ok() {
                            self.remote.stats.read_by_ref += u64::from(r.len);
                        }
                        self.reply(from, r, Op::Ack, st, 0)
                    }
                    Outcome::InFlight | Outcome::Blocked => unreachable!("responders do not send"),
                }
            }
            Op::ReadReq => self.serve_read(from, at, r),
            Op::AtomicCas | Op::AtomicFa => {
                let op = if r.op == Op::AtomicCas {
                    SendOp::AtomicCas {
                        remote: ra,
                        compare: r.operand0,
                        swap: r.operand1,
                    }
                } else {
                    SendOp::AtomicFa {
                        remote: ra,
                        add: r.operand0,
                    }
                };
                match self.respond_atomic(at, ra, op) {
                    Ok(old) => self.reply(from, r, Op::AtomicResp, WcStatus::Success, old),
                    Err(st) => self.reply(from, r, Op::AtomicResp, st, 0),
                }
            }
            Op::Ack | Op::ReadResp | Op::AtomicResp | Op::Unknown(_) => {
                self.remote.stats.malformed += 1
            }
        }
        Some(msg)
    }

    /// Answers a READ request with the bytes, read straight into the reply.
    fn serve_read(&mut self, from: NodeId, at: End, r: &Repr) {
        let len = r.len as usize;
        let Some(mut carrier) = self.remote.carrier.take() else {
            return;
        };
        let ra = RemoteAddr {
            addr: r.addr,
            rkey: Rkey(r.rkey),
        };
        let mut fill = |buf: &mut [u8]| {
            let st = self
                .respond_read(at, ra, Sink::Bytes(&mut buf[HEADER_LEN..]), len as u64)
                .err()
                .unwrap_or(WcStatus::Success);
            let hdr = Repr {
                flags: flags::LAST,
                status: st,
                src_qpn: r.src_qpn,
                dst_qpn: r.dst_qpn,
                req_id: r.req_id,
                len: r.len,
                total: r.total,
                offset: r.offset,
                sgid: r.dgid,
                dgid: r.sgid,
                ..Repr::new(Op::ReadResp)
            };
            hdr.emit(buf);
        };
        let res = carrier.send(
            from,
            Outgoing {
                reply: true,
                tag: 0,
                len: HEADER_LEN + len,
                fill: &mut fill,
            },
        );
        self.remote.carrier = Some(carrier);
        if res.is_err() {
            self.remote.stats.replies_dropped += 1;
        }
    }

    fn hold(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        from: NodeId,
        msg: Msg,
        now: Instant,
    ) -> Option<Msg> {
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return Some(msg);
        };
        qp.held.push_back(Held {
            from,
            msg,
            since: now,
        });
        if !self.remote.held_qps.contains(&(dev, qpn)) {
            self.remote.held_qps.push((dev, qpn));
        }
        None
    }

    /// Retries a QP's held messages in order; the ones past the RNR timeout
    /// (or all, with `give_up`) are answered with RNR retry exceeded.
    pub(crate) fn retry_held(&mut self, dev: DeviceId, qpn: Qpn, now: Instant, give_up: bool) {
        while let Ok(qp) = self.qp_mut(dev, qpn) {
            let Some(h) = qp.held.pop_front() else { break };
            let Ok(r) = Packet::new_checked(h.msg.bytes()).and_then(|p| Repr::parse(&p)) else {
                self.remote.released.push(h.msg.buf);
                continue;
            };
            if give_up || now.saturating_duration_since(h.since) >= self.cfg.rnr_timeout {
                self.reply(h.from, &r, Op::Ack, WcStatus::RnrRetryExcErr, 0);
                self.remote.released.push(h.msg.buf);
                continue;
            }
            let since = h.since;
            match self.serve(h.from, h.msg, &r, now, true) {
                Some(m) => self.remote.released.push(m.buf),
                None => {
                    // Still no receive: it goes back to the front, with its age.
                    let qp = self.qp_mut(dev, qpn).expect("held above");
                    let mut back = qp.held.pop_back().expect("just held");
                    back.since = since;
                    qp.held.push_front(back);
                    break;
                }
            }
        }
        if self.qp(dev, qpn).map_or(true, |q| q.held.is_empty()) {
            self.remote.held_qps.retain(|x| *x != (dev, qpn));
        }
    }

    /// Gives up on every held message at once (the inbound queue is full and
    /// a receive thread has waited too long for room).
    pub fn expire_held(&mut self, now: Instant) {
        for (d, q) in self.remote.held_qps.clone() {
            self.retry_held(d, q, now, true);
        }
    }

    /// Drops a QP's held messages, answering them as a vanished QP would.
    pub(crate) fn drop_held(&mut self, dev: DeviceId, qpn: Qpn) {
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return;
        };
        let held: Vec<Held> = qp.held.drain(..).collect();
        for h in held {
            if let Ok(r) = Packet::new_checked(h.msg.bytes()).and_then(|p| Repr::parse(&p)) {
                self.reply(h.from, &r, Op::Ack, WcStatus::RetryExcErr, 0);
            }
            self.remote.released.push(h.msg.buf);
        }
        self.remote.held_qps.retain(|x| *x != (dev, qpn));
    }

    fn handle_reply(&mut self, r: &Repr, payload: &[u8], now: Instant) {
        let Some(p) = self.remote.pending.get(&r.req_id) else {
            self.remote.stats.stale_replies += 1;
            return;
        };
        let (dev, qpn, incarnation, ctr, node) = (p.dev, p.qpn, p.incarnation, p.ctr, p.node);
        let live = self
            .qp(dev, qpn)
            .is_ok_and(|q| q.incarnation == incarnation);
        if !live {
            self.remote.stats.stale_replies += 1;
            self.drop_pending(r.req_id);
            return;
        }
        let mut status = r.status;
        match r.op {
            Op::ReadResp => {
                let n = u64::from(r.len);
                let p = self.remote.pending.get_mut(&r.req_id).expect("checked");
                p.reads_out = p.reads_out.saturating_sub(n);
                if let Some(out) = self.remote.reads_out.get_mut(&node) {
                    *out = out.saturating_sub(n);
                }
                if status.is_ok() {
                    status =
                        self.scatter_into_slot(dev, qpn, ctr, u64::from(r.offset), |this, sink| {
                            crate::copy::copy(&this.mem, sink, crate::copy::Src::Bytes(payload), n)
                                .map_err(|_| WcStatus::LocProtErr)
                        });
                }
            }
            Op::AtomicResp if status.is_ok() => {
                let old = r.operand0;
                status = self.scatter_into_slot(dev, qpn, ctr, 0, |this, sink| {
                    crate::copy::copy(
                        &this.mem,
                        sink,
                        crate::copy::Src::Bytes(&old.to_ne_bytes()),
                        8,
                    )
                    .map_err(|_| WcStatus::LocProtErr)
                });
            }
            _ => {}
        }
        let p = self.remote.pending.get_mut(&r.req_id).expect("checked");
        p.answered += 1;
        if p.status.is_ok() && !status.is_ok() {
            p.status = status;
        }
        let (st, done) = (p.status, p.all_sent && p.answered >= p.sent);
        if done || !st.is_ok() {
            self.finish(r.req_id, st, now);
        }
    }

    /// Runs `f` with the local buffers of a pending request (from byte
    /// `skip` on) as a copy destination.
    fn scatter_into_slot(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        ctr: u32,
        skip: u64,
        f: impl FnOnce(&Self, crate::copy::Dst<'_>) -> Result<(), WcStatus>,
    ) -> WcStatus {
        let every = self.cfg.allow_reserved_lkey;
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return WcStatus::GeneralErr;
        };
        let (pd, dma_key) = (qp.pd, every || qp.privileged);
        let idx = qp.sq.index(ctr);
        let sgl = std::mem::take(&mut qp.sq.slots[idx].sgl);
        let result = (|| {
            let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
            let mut seg: SegArray<'_> = Default::default();
            let (n, _) =
                crate::datapath::resolve_sgl(d, dma_key, pd, &sgl, Access::LOCAL_WRITE, &mut seg)?;
            let first = crate::datapath::skip_prefix(&mut seg[..n], skip);
            f(self, crate::copy::Dst::Segs(&seg[first..n]))
        })();
        self.qp_mut(dev, qpn).expect("checked").sq.slots[idx].sgl = sgl;
        result.err().unwrap_or(WcStatus::Success)
    }

    /// Runs the inter-node timers: requests past their timeout complete with
    /// transport retry exceeded; held messages are retried or given up.
    pub(crate) fn poll_remote(&mut self, now: Instant) {
        while let Some(&(t, id)) = self.remote.deadlines.front() {
            if t > now {
                break;
            }
            self.remote.deadlines.pop_front();
            if self.remote.pending.contains_key(&id) {
                self.remote.stats.timeouts += 1;
                self.finish(id, WcStatus::RetryExcErr, now);
            }
        }
        for (d, q) in self.remote.held_qps.clone() {
            self.retry_held(d, q, now, false);
        }
    }

    /// The next instant an inter-node timer falls due.
    pub(crate) fn next_remote_deadline(&self) -> Option<Instant> {
        let held = self
            .remote
            .held_qps
            .iter()
            .filter_map(|(d, q)| {
                self.qp(*d, *q)
                    .ok()?
                    .held
                    .front()
                    .map(|h| h.since + self.cfg.rnr_timeout)
            })
            .min();
        let req = self.remote.deadlines.front().map(|(t, _)| *t);
        [held, req].into_iter().flatten().min()
    }
}
