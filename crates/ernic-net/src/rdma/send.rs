//! The send data path: `isend` takes the next sequence number; a message
//! up to the eager limit (or every SENDRECV chunk) goes at once as a send
//! with immediate; a larger one waits for the receiver's CTRL, then is
//! written in the scheduler's stripes, with a SIZE when it is shorter than
//! the receive. Never more than [`MAX_INFLIGHT`] ahead of the CTRLs seen.

use super::comm::{CommKind, SElem};
use super::context::After;
use super::control::{CtrlMsg as Ctrl, encode_size};
use super::error::{NetError, RequestError};
use super::immediate::{imm, sr_imm};
use super::post::Op;
use super::{Endpoint, MAX_INFLIGHT, MrHandle, Request, SENDRECV_MAX_CHUNKS, SendComm};
use crate::freelist::Entry;
use crate::msgbuff::Status;

impl Endpoint {
    /// Starts sending `len` bytes at `addr` (inside registration `mr`).
    /// Answers `None` when the comm cannot take another message now (128
    /// in flight, or too far ahead of the receiver): call `test` on earlier
    /// requests and try again.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid and unchanged until the request completes.
    pub unsafe fn isend(
        &mut self,
        comm: SendComm,
        addr: *const u8,
        len: usize,
        mr: MrHandle,
    ) -> Result<Option<Request>, NetError> {
        if self.sendrecv && len.div_ceil(self.chunk) > SENDRECV_MAX_CHUNKS {
            return Err(NetError::SendRecvTooLarge {
                len,
                max: SENDRECV_MAX_CHUNKS * self.chunk,
            });
        }
        self.progress();
        let mr = self.check_mr(mr, addr as u64, len)?;
        let eager_max = self.cfg.eager_max_size;
        let c = self.connected(comm.0, CommKind::Send)?;
        // Both protocols: no more than 128 ahead of the receives posted.
        let ahead = c.started >= c.ctrls_seen + MAX_INFLIGHT as u64;
        if c.inflight >= MAX_INFLIGHT || ahead {
            return Ok(None);
        }
        let seq = c.next_seq;
        let ctrl = match c.sends.retrieve(seq) {
            Ok(Some(SElem::Ctrl(ctrl))) => Some(*ctrl),
            _ => None,
        };
        let req = self.new_req(true, comm.0, seq, addr as u64, len, mr)?;
        let c = self.comm(comm.0, CommKind::Send)?;
        if let Err(e) = c.sends.put(seq, SElem::Req(req.entry)) {
            let _ = self.reqs.give(req.entry);
            return Err(NetError::SequenceWindow { source: e });
        }
        c.next_seq = (seq + 1) & 0x3ff;
        c.inflight += 1;
        c.started += 1;
        let (remote, peer_data) = (c.remote, c.peer_data);
        if self.sendrecv {
            // In order on one rail: the receiver places chunks by arrival.
            let rail = self.sched.schedule(0).stripes()[0].rail as usize;
            let n = len.div_ceil(self.chunk).max(1);
            self.reqs.get_mut(req.entry).expect("live").need = n as u32;
            for i in 0..n {
                let offset = i * self.chunk;
                self.post(Op::Eager {
                    req: req.entry,
                    rail,
                    offset,
                    len: self.chunk.min(len - offset),
                    dest: peer_data[rail],
                    imm: sr_imm(seq, remote, i, i + 1 == n),
                });
            }
        } else if len <= eager_max {
            let rail = self.sched.schedule(len).stripes()[0].rail as usize;
            let r = self.reqs.get_mut(req.entry).expect("live");
            r.need = 1;
            self.post(Op::Eager {
                req: req.entry,
                rail,
                offset: 0,
                len,
                dest: peer_data[rail],
                imm: imm(seq, remote, 1),
            });
        } else if let Some(ctrl) = ctrl {
            self.start_write(req.entry, ctrl);
        }
        Ok(Some(req))
    }

    /// Writes a send whose CTRL has arrived.
    pub(super) fn start_write(&mut self, req: Entry, ctrl: Ctrl) {
        let r = self.reqs.get(req).expect("live").clone();
        if r.len <= self.cfg.eager_max_size {
            // Went eagerly: the CTRL only counted.
            return;
        }
        if r.len as u64 > ctrl.len {
            self.fail_req(
                req,
                RequestError::ReceiveTooShort {
                    posted: ctrl.len,
                    len: r.len,
                },
            );
            return;
        }
        let Some(c) = self.comms.get(r.comm as usize).and_then(Option::as_ref) else {
            return;
        };
        let (remote, peer_data) = (c.remote, c.peer_data);
        // Control messages of a comm spread over the control rails by seq.
        let ctl = usize::from(r.seq) % self.ctls.len();
        let peer_ctrl = c.peer_ctrl[ctl];
        let sched = self.sched.schedule(r.len);
        let short = (r.len as u64) < ctrl.len;
        let nseg = sched.len() as u8 + u8::from(short);
        let im = imm(r.seq, remote, nseg);
        if let Some(r) = self.reqs.get_mut(req) {
            r.need = u32::from(nseg);
        }
        let _ = ctrl.nkeys;
        for st in sched.stripes() {
            let rail = st.rail as usize;
            // The CTRL's address is virtual or an offset into the
            // receiver's registration, as its provider addresses writes.
            let remote_addr = ctrl.addr + st.offset as u64;
            self.post(Op::Write {
                req,
                rail,
                offset: st.offset,
                len: st.len,
                dest: peer_data[rail],
                remote: remote_addr,
                key: ctrl.keys[rail],
                imm: im,
            });
        }
        if short {
            let m = encode_size(remote, r.seq, nseg, r.len as u64);
            if !self.ctl_send(&m, ctl, peer_ctrl, im, After::Req(req), Some(r.comm)) {
                self.fail_req(req, RequestError::NoControlBuffer);
            }
        }
    }

    pub(super) fn on_ctrl(&mut self, ctrl: Ctrl) -> Option<()> {
        if usize::from(ctrl.nkeys) != self.data.len() {
            return None;
        }
        let seq = ctrl.seq;
        let sendrecv = self.sendrecv;
        let c = self.comm(ctrl.comm, CommKind::Send).ok()?;
        c.ctrls_seen += 1;
        self.count(Some(ctrl.comm), |c| &c.ctrl_received, 1);
        let c = self.comm(ctrl.comm, CommKind::Send).ok()?;
        if sendrecv {
            // Only a credit: a receive was posted.
            return Some(());
        }
        match c.sends.status(seq) {
            Status::InProgress => match c.sends.retrieve(seq) {
                Ok(Some(SElem::Req(req))) => {
                    let req = *req;
                    let _ = c.sends.replace(seq, SElem::Req(req));
                    self.start_write(req, ctrl);
                }
                _ => return None,
            },
            Status::NotStarted => {
                c.sends.insert(seq, SElem::Ctrl(ctrl)).ok()?;
            }
            // The message went eagerly and is done: the CTRL only counted.
            Status::Completed => {}
            Status::Unavailable => return None,
        }
        Some(())
    }
}
