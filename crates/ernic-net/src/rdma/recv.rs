//! The receive data path: `irecv` posts its CTRL (where the buffer is,
//! its key on each data rail); then a peer's writes and SIZE are counted
//! toward the message's segments, and an eager message or SENDRECV chunk
//! that came in an rx buffer is copied into its receive, or held until the
//! receive is posted. A size or length from the peer is checked against
//! the receive before it is used.

use super::comm::{CommKind, RElem};
use super::context::After;
use super::control::{CTRL_MAX_LEN, CtrlMsg, encode_ctrl};
use super::error::{NetError, RequestError};
use super::immediate::{split_imm, split_sr_imm};
use super::post::Op;
use super::request::ReqState;
use super::{Endpoint, MAX_INFLIGHT, MrHandle, RecvComm, Request};
use crate::config::MAX_RAILS;
use crate::freelist::Entry;
use crate::msgbuff::Status;

/// Where a message that came in an rx buffer goes.
pub(super) enum Arrival {
    /// Into this posted receive.
    Receive(Entry),
    /// Held by its comm: its receive is not posted yet.
    Early,
    /// Its message is already finished (failed): the rest is dropped.
    Finished,
    /// No such comm or number.
    Stray,
}

/// A SENDRECV chunk held in its rx buffer until its receive is posted.
#[derive(Debug, Clone, Copy)]
pub(super) struct HeldChunk {
    pub(super) seq: u16,
    pub(super) rail: usize,
    pub(super) slot: usize,
    pub(super) len: usize,
    pub(super) index: usize,
    pub(super) last: bool,
}

impl Endpoint {
    /// Starts receiving up to `len` bytes into `addr` (inside registration
    /// `mr`). Answers `None` when 128 receives are in flight.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid for writes, and be left alone, until the
    /// request completes.
    pub unsafe fn irecv(
        &mut self,
        comm: RecvComm,
        addr: *mut u8,
        len: usize,
        mr: MrHandle,
    ) -> Result<Option<Request>, NetError> {
        self.progress();
        let mr = self.check_mr(mr, addr as u64, len)?;
        let (no_tx, nctl) = (self.tx_free.is_empty(), self.ctls.len());
        let c = self.connected(comm.0, CommKind::Recv)?;
        // Its CTRL needs a tx slot.
        if c.inflight >= MAX_INFLIGHT || no_tx {
            return Ok(None);
        }
        let seq = c.next_seq;
        let early = match c.recvs.retrieve(seq) {
            Ok(Some(RElem::Eager { rail, slot, len })) => Some((*rail, *slot, *len)),
            _ => None,
        };
        let req = self.new_req(false, comm.0, seq, addr as u64, len, mr)?;
        let c = self.comm(comm.0, CommKind::Recv)?;
        if let Err(e) = c.recvs.put(seq, RElem::Req(req.entry)) {
            let _ = self.reqs.give(req.entry);
            return Err(NetError::SequenceWindow { source: e });
        }
        c.next_seq = (seq + 1) & 0x3ff;
        c.inflight += 1;
        let ctl = usize::from(seq) % nctl;
        let (remote, peer_ctrl) = (c.remote, c.peer_ctrl[ctl]);
        if self.sendrecv {
            // Chunks that came first, in their order.
            let mut i = 0;
            while let Some(&h) = self.comms[comm.0 as usize]
                .as_ref()
                .and_then(|c| c.held.get(i))
            {
                if h.seq == seq {
                    self.comms[comm.0 as usize]
                        .as_mut()
                        .expect("live")
                        .held
                        .remove(i);
                    self.deliver_chunk(req.entry, h);
                } else {
                    i += 1;
                }
            }
        }
        // The CTRL goes even when the message came eagerly (and in
        // SENDRECV, where it is only a credit): the sender counts CTRLs to
        // stay within the window.
        //
        // Where the receive starts, as the peer's writes must name it: its
        // address, or (offset addressing, the tcp providers) its offset in
        // the registration, which may begin pages before `addr`.
        let base = if self.virt {
            addr as u64
        } else {
            self.mrs[mr as usize]
                .as_ref()
                .map_or(0, |m| addr as u64 - m.addr)
        };
        let mut keys = [0u64; MAX_RAILS];
        for (rail, key) in keys.iter_mut().enumerate().take(self.data.len()) {
            *key = self.mrs[mr as usize]
                .as_ref()
                .map_or(0, |m| m.regs[rail].key);
        }
        let ctrl = CtrlMsg {
            comm: remote,
            seq,
            addr: base,
            len: len as u64,
            nkeys: self.data.len() as u8,
            keys,
        };
        // Built on the stack: no allocation.
        let mut m = [0u8; CTRL_MAX_LEN];
        let used = encode_ctrl(&ctrl, &mut m);
        // A tx slot was free when the receive began (checked above), and
        // nothing since took one.
        let sent = self.ctl_send(&m[..used], ctl, peer_ctrl, 0, After::Nothing, Some(comm.0));
        debug_assert!(sent);
        self.count(Some(comm.0), |c| &c.ctrl_sent, 1);
        if let Some((rail, slot, elen)) = early {
            self.deliver_eager(req.entry, rail, slot, elen);
        }
        Ok(Some(req))
    }

    /// A segment of a message this endpoint receives: a write completion,
    /// or a SIZE message.
    pub(super) fn remote_segment(&mut self, comm: u32, seq: u16, nseg: u8, size: Option<u64>) {
        let Some(c) = self.comms.get_mut(comm as usize).and_then(Option::as_mut) else {
            self.drop_one();
            return;
        };
        if c.kind != CommKind::Recv {
            self.drop_one();
            return;
        }
        match c.recvs.retrieve(seq) {
            Ok(Some(RElem::Req(req))) => {
                let req = *req;
                let Some(r) = self.reqs.get_mut(req) else {
                    return;
                };
                r.need = u32::from(nseg);
                // The size is the peer's word: never more than the receive.
                let len = r.len;
                match size.map(|n| usize::try_from(n).ok().filter(|&n| n <= len)) {
                    Some(None) => self.fail_req(
                        req,
                        RequestError::SizeBeyondReceive {
                            size: size.unwrap_or(0),
                            len,
                        },
                    ),
                    Some(n) => self.segment_done(req, n),
                    None => self.segment_done(req, None),
                }
            }
            _ => self.drop_one(),
        }
    }

    /// Where a message that came in an rx buffer goes: the receive posted
    /// for its sequence number, or the comm to hold it until that receive
    /// is posted.
    pub(super) fn arrival(&mut self, comm: u32, seq: u16) -> Arrival {
        let Ok(c) = self.comm(comm, CommKind::Recv) else {
            return Arrival::Stray;
        };
        match c.recvs.status(seq) {
            Status::InProgress => match c.recvs.retrieve(seq) {
                Ok(Some(RElem::Req(req))) => Arrival::Receive(*req),
                _ => Arrival::Stray,
            },
            Status::NotStarted => Arrival::Early,
            Status::Completed => Arrival::Finished,
            Status::Unavailable => Arrival::Stray,
        }
    }

    pub(super) fn on_eager(&mut self, rail: usize, slot: usize, len: usize, data: u32) {
        let (seq, comm, _) = split_imm(data);
        match self.arrival(comm, seq) {
            Arrival::Receive(req) => self.deliver_eager(req, rail, slot, len),
            Arrival::Early => {
                let c = self.comm(comm, CommKind::Recv).expect("checked");
                let _ = c.recvs.insert(seq, RElem::Eager { rail, slot, len });
            }
            Arrival::Finished | Arrival::Stray => {
                self.drop_one();
                self.post(Op::Rx { rail, slot });
            }
        }
    }

    /// A SENDRECV chunk: into its receive, or held until the receive comes.
    pub(super) fn on_chunk(&mut self, rail: usize, slot: usize, len: usize, data: u32) {
        let (seq, comm, index, last) = split_sr_imm(data);
        let h = HeldChunk {
            seq,
            rail,
            slot,
            len,
            index,
            last,
        };
        match self.arrival(comm, seq) {
            Arrival::Receive(req) => self.deliver_chunk(req, h),
            Arrival::Early => {
                let c = self.comm(comm, CommKind::Recv).expect("checked");
                c.held.push_back(h);
            }
            // The rest of a message whose receive already failed.
            Arrival::Finished => self.post(Op::Rx { rail, slot }),
            // Or (from a peer that ignores credits) beyond the window.
            Arrival::Stray => {
                self.drop_one();
                self.post(Op::Rx { rail, slot });
            }
        }
    }

    /// Copies a chunk to its place in its receive; the receive completes
    /// when every chunk up to the last has come.
    pub(super) fn deliver_chunk(&mut self, req: Entry, h: HeldChunk) {
        let HeldChunk {
            rail,
            slot,
            len,
            index,
            last,
            ..
        } = h;
        let r = self.reqs.get(req).expect("live request").clone();
        if r.state != ReqState::Pending {
            self.post(Op::Rx { rail, slot });
            return;
        }
        let at = index * self.chunk;
        if at + len > r.len || len > self.chunk {
            self.post(Op::Rx { rail, slot });
            self.fail_req(
                req,
                RequestError::ChunkBeyondReceive {
                    end: at + len,
                    len: r.len,
                },
            );
            return;
        }
        if len > 0 {
            // SAFETY: `at + len <= r.len` (checked above), and the request's
            // buffer is the caller's registered memory of `r.len` bytes,
            // kept valid while the request is in flight.
            unsafe {
                self.data[rail]
                    .rx
                    .read_to(slot, (r.addr as *mut u8).wrapping_add(at), len)
            };
        }
        self.post(Op::Rx { rail, slot });
        if last {
            self.reqs.get_mut(req).expect("live request").need = index as u32 + 1;
        }
        self.segment_done(req, last.then_some(at + len));
    }

    /// Copies an eager message into its receive and completes it.
    pub(super) fn deliver_eager(&mut self, req: Entry, rail: usize, slot: usize, len: usize) {
        let r = self.reqs.get(req).expect("live request").clone();
        if len > r.len {
            self.post(Op::Rx { rail, slot });
            self.fail_req(
                req,
                RequestError::EagerBeyondReceive {
                    size: len,
                    len: r.len,
                },
            );
            return;
        }
        if len > 0 {
            // SAFETY: the request's buffer is the caller's registered memory
            // of `r.len >= len` bytes (checked at `irecv`), which the
            // caller keeps valid while the request is in flight.
            unsafe { self.data[rail].rx.read_to(slot, r.addr as *mut u8, len) };
        }
        self.post(Op::Rx { rail, slot });
        if let Some(r) = self.reqs.get_mut(req) {
            r.need = 1;
        }
        self.segment_done(req, Some(len));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::rdma::Connector;
    use crate::rdma::control::SIZE;
    use crate::verbs_provider::ErnicProvider;

    /// A peer's SIZE message claiming more bytes than the receive holds
    /// fails that receive instead of reporting the claim to the caller.
    #[test]
    fn a_size_beyond_the_receive_fails_it() {
        let p = ErnicProvider::new(ernic_verbs::Fabric::new());
        let mut a = Endpoint::open(&p, 1, Config::default()).unwrap();
        let mut b = Endpoint::open(&p, 1, Config::default()).unwrap();
        let (l, h) = b.listen().unwrap();
        let mut c = Connector::new(h);
        let (mut s, mut r) = (None, None);
        for _ in 0..100_000 {
            if s.is_none() {
                s = a.connect(&mut c).unwrap();
            }
            if r.is_none() {
                r = b.accept(l).unwrap();
            }
            if s.is_some() && r.is_some() {
                break;
            }
        }
        let r = r.expect("accepted");
        let mut dst = vec![0u8; 100_000];
        // SAFETY: `dst` outlives the registration and the receive (tested
        // to its end below).
        let req = unsafe {
            let md = b.reg(dst.as_mut_ptr(), dst.len()).unwrap();
            b.irecv(r, dst.as_mut_ptr(), dst.len(), md)
                .unwrap()
                .unwrap()
        };
        let mut m = [0u8; 24];
        m[0] = SIZE;
        m[4..8].copy_from_slice(&r.0.to_le_bytes());
        m[12..16].copy_from_slice(&1u32.to_le_bytes());
        m[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(b.on_control(&m, 0));
        let e = b.test(req).unwrap_err();
        assert!(
            e.to_string()
                .contains("reported 1099511627776 bytes for a 100000-byte receive"),
            "{e}"
        );
    }
}
