//! The comm table: every listen, send and receive comm of an endpoint by
//! id (at most [`MAX_COMMS`](super::MAX_COMMS)), each with its connection
//! state, its peer's addresses and its two sequence windows; and `close`.

use std::collections::VecDeque;

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
        if self
            .comms
            .get_mut(id as usize)
            .and_then(Option::take)
            .is_some()
        {
            let _ = self.ids.free(id as usize);
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
