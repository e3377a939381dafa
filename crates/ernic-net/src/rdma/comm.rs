//! The comm table: every listen, send and receive comm of an endpoint by
//! id (at most [`MAX_COMMS`](super::MAX_COMMS)), each with its connection
//! state, its peer's addresses and its two sequence windows; and `close`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::conn_state::Handshake;
use super::control::CtrlMsg as Ctrl;
use super::error::{NetError, RequestError};
use super::post::Op;
use super::recv::HeldChunk;
use super::{Endpoint, ListenComm, MAX_CONTROL_RAILS, MSGBUFF_SIZE, RecvComm, SEQ_BITS, SendComm};
use crate::config::MAX_RAILS;
use crate::freelist::Entry;
use crate::msgbuff::MsgBuff;
use crate::provider::FiAddr;
use crate::stats::{CommStats, Counts};

#[derive(Debug, Clone, Copy)]
pub(super) enum SElem {
    Ctrl(Ctrl),
    Req(Entry),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum RElem {
    Req(Entry),
    Eager {
        rail: usize,
        slot: usize,
        len: usize,
    },
}

pub(super) struct Comm {
    pub(super) kind: CommKind,
    pub(super) handshake: Handshake,
    /// The peer comm's id (learned from CONN or CONN_RESP).
    pub(super) remote: u32,
    /// The peer's control rails, in our control rails' address vectors.
    pub(super) peer_ctrl: [FiAddr; MAX_CONTROL_RAILS],
    pub(super) peer_data: [FiAddr; MAX_RAILS],
    pub(super) next_seq: u16,
    pub(super) inflight: usize,
    pub(super) started: u64,
    pub(super) ctrls_seen: u64,
    pub(super) sends: MsgBuff<SElem>,
    pub(super) recvs: MsgBuff<RElem>,
    /// Listen comms: receiving comms made for CONNs, waiting for `accept`.
    pub(super) backlog: VecDeque<u32>,
    /// SENDRECV receiving comms: chunks that came before their receive.
    pub(super) held: VecDeque<HeldChunk>,
    /// Its counters (none for a listening comm).
    pub(super) stats: Option<Arc<CommStats>>,
}

impl Comm {
    /// The peer's comm id is known: it labels the counters.
    pub(super) fn set_peer(&self, peer: u32) {
        if let Some(s) = &self.stats {
            s.peer.store(peer, Ordering::Relaxed);
        }
    }
}

/// The kinds of comm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommKind {
    /// A listening comm ([`ListenComm`]).
    Listen,
    /// The sending end of a connection ([`SendComm`]).
    Send,
    /// The receiving end of a connection ([`RecvComm`]).
    Recv,
}

impl Endpoint {
    pub(super) fn new_comm(
        &mut self,
        kind: CommKind,
        handshake: Handshake,
    ) -> Result<u32, NetError> {
        let id = self
            .ids
            .allocate()
            .map_err(|source| NetError::NoCommId { source })? as u32;
        // The table grows to the highest id in use, never past MAX_COMMS
        // (the id pool's size), and never shrinks: an id that was once
        // handed out always indexes it.
        if self.comms.len() <= id as usize {
            self.comms.resize_with(id as usize + 1, || None);
        }
        self.comms[id as usize] = Some(Comm {
            kind,
            handshake,
            remote: 0,
            peer_ctrl: [0; MAX_CONTROL_RAILS],
            peer_data: [0; MAX_RAILS],
            next_seq: 0,
            inflight: 0,
            started: 0,
            ctrls_seen: 0,
            sends: MsgBuff::new(MSGBUFF_SIZE, SEQ_BITS),
            recvs: MsgBuff::new(MSGBUFF_SIZE, SEQ_BITS),
            backlog: VecDeque::new(),
            held: VecDeque::new(),
            stats: self.stats.comm(id, kind),
        });
        Ok(id)
    }

    pub(super) fn comm(&mut self, id: u32, kind: CommKind) -> Result<&mut Comm, NetError> {
        match self.comms.get_mut(id as usize).and_then(Option::as_mut) {
            Some(c) if c.kind == kind => Ok(c),
            _ => Err(NetError::NoSuchComm { kind, id }),
        }
    }

    /// A comm of `kind` that is connected, ready for data.
    pub(super) fn connected(&mut self, id: u32, kind: CommKind) -> Result<&mut Comm, NetError> {
        let c = self.comm(id, kind)?;
        if !c.handshake.is_connected() {
            return Err(NetError::NotConnected { kind, id });
        }
        Ok(c)
    }

    pub(super) fn free_comm(&mut self, id: u32) {
        if let Some(c) = self.comms.get_mut(id as usize).and_then(Option::take) {
            if let Some(s) = &c.stats {
                self.stats.forget(s);
            }
            let _ = self.ids.free(id as usize);
        }
    }

    /// Adds `n` to the counter `which` picks, in the endpoint's totals and
    /// (when `comm` names a live comm) that comm's counters.
    pub(super) fn count(&self, comm: Option<u32>, which: Pick, n: u64) {
        which(&self.stats.totals).fetch_add(n, Ordering::Relaxed);
        let c = comm
            .and_then(|id| self.comms.get(id as usize))
            .and_then(Option::as_ref)
            .and_then(|c| c.stats.as_deref());
        if let Some(c) = c {
            which(&c.counts).fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Something from outside was dropped (see [`Endpoint::dropped`]).
    pub(super) fn drop_one(&mut self) {
        self.dropped += 1;
        self.count(None, |c| &c.dropped, 1);
    }

    /// A message of `size` bytes completed on `comm`.
    pub(super) fn count_message(&self, comm: u32, send: bool, size: usize) {
        let (messages, bytes): (Pick, Pick) = if send {
            (|c| &c.messages_sent, |c| &c.bytes_sent)
        } else {
            (|c| &c.messages_received, |c| &c.bytes_received)
        };
        self.count(Some(comm), messages, 1);
        self.count(Some(comm), bytes, size as u64);
        // Both ends decide alike: what the eager limit admits goes eagerly.
        let eager = self.sendrecv || size <= self.cfg.eager_max_size;
        if eager {
            self.count(Some(comm), |c| &c.eager_messages, 1);
        } else {
            self.count(Some(comm), |c| &c.rdma_messages, 1);
        }
    }

    /// Closes a comm. Its requests still in flight fail ("comm closed");
    /// eager messages held for it give their rx buffers back.
    pub fn close(&mut self, comm: impl Into<CommRef>) -> Result<(), NetError> {
        let id = comm.into().0;
        let Some(c) = self.comms.get(id as usize).and_then(Option::as_ref) else {
            return Err(NetError::UnknownComm { id });
        };
        let mut held = Vec::new();
        let mut reqs = Vec::new();
        for seq in 0..1024u16 {
            match c.recvs.retrieve(seq) {
                Ok(Some(RElem::Eager { rail, slot, .. })) => held.push((*rail, *slot)),
                Ok(Some(RElem::Req(r))) => reqs.push(*r),
                _ => {}
            }
            if let Ok(Some(SElem::Req(r))) = c.sends.retrieve(seq) {
                reqs.push(*r);
            }
        }
        held.extend(c.held.iter().map(|h| (h.rail, h.slot)));
        for (rail, slot) in held {
            self.post(Op::Rx { rail, slot });
        }
        for r in reqs {
            self.fail_req(r, RequestError::CommClosed);
        }
        self.free_comm(id);
        Ok(())
    }
}

/// Picks one counter of a set.
pub(super) type Pick = fn(&Counts) -> &AtomicU64;

/// Any comm, for [`Endpoint::close`].
#[derive(Debug, Clone, Copy)]
pub struct CommRef(u32);

impl From<ListenComm> for CommRef {
    fn from(c: ListenComm) -> CommRef {
        CommRef(c.0)
    }
}
impl From<SendComm> for CommRef {
    fn from(c: SendComm) -> CommRef {
        CommRef(c.0)
    }
}
impl From<RecvComm> for CommRef {
    fn from(c: RecvComm) -> CommRef {
        CommRef(c.0)
    }
}
