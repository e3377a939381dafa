//! Posting: every write, send and rx buffer goes to its rail through
//! [`Endpoint::post`], which parks a post the provider answers `EAGAIN`
//! (behind anything already parked, to keep order) and fails its request
//! on a hard error; progress retries the parked ones in order. A request
//! counts its posts still out, so it is reported only when none is left.

use super::context::{After, K_REQ, K_RX, K_TX, ctx, then_bits};
use super::error::RequestError;
use super::{CTL, CTL_SLOT, Endpoint};
use crate::freelist::Entry;
use crate::provider::{FiAddr, PostError};

/// A post parked on EAGAIN.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    Write {
        req: Entry,
        rail: usize,
        offset: usize,
        len: usize,
        dest: FiAddr,
        remote: u64,
        key: u64,
        imm: u32,
    },
    /// A send with immediate of `len` bytes from `offset` of the request
    /// (an eager message, or a chunk of a SENDRECV one).
    Eager {
        req: Entry,
        rail: usize,
        offset: usize,
        len: usize,
        dest: FiAddr,
        imm: u32,
    },
    Ctl {
        ctl: usize,
        slot: usize,
        len: usize,
        dest: FiAddr,
        imm: u32,
        then: After,
        /// The comm it belongs to, for its counters.
        comm: Option<u32>,
    },
    Rx {
        rail: usize,
        slot: usize,
    },
}

impl Endpoint {
    /// Sends a control message from a tx slot; false when it could not
    /// even be parked (no free slot: try again later).
    pub(super) fn ctl_send(
        &mut self,
        m: &[u8],
        ctl: usize,
        dest: FiAddr,
        imm: u32,
        then: After,
        comm: Option<u32>,
    ) -> bool {
        debug_assert!(m.len() <= CTL_SLOT);
        let Some(slot) = self.tx_free.pop() else {
            return false;
        };
        self.tx.write(slot, m);
        self.post(Op::Ctl {
            ctl,
            slot,
            len: m.len(),
            dest,
            imm,
            then,
            comm,
        });
        true
    }

    /// Posts `op`, parking it on EAGAIN (behind anything already parked,
    /// to keep order) and failing its request on a hard error.
    pub(super) fn post(&mut self, op: Op) {
        if let Some(r) = Endpoint::op_req(op).and_then(|e| self.reqs.get_mut(e)) {
            r.outstanding += 1;
        }
        if !self.pending.is_empty() {
            self.pending.push_back(op);
            return;
        }
        match self.try_post(op) {
            Ok(()) => {}
            Err(PostError::Again) => {
                self.deferred(op);
                self.pending.push_back(op);
            }
            Err(PostError::Failed(message)) => self.op_failed(op, RequestError::Post { message }),
        }
    }

    /// The request a post belongs to.
    pub(super) fn op_req(op: Op) -> Option<Entry> {
        match op {
            Op::Write { req, .. } | Op::Eager { req, .. } => Some(req),
            Op::Ctl {
                then: After::Req(req),
                ..
            } => Some(req),
            _ => None,
        }
    }

    /// The comm a post belongs to, if any (rx buffers belong to none).
    pub(super) fn op_comm(&self, op: Op) -> Option<u32> {
        match op {
            Op::Write { req, .. } | Op::Eager { req, .. } => self.reqs.get(req).map(|r| r.comm),
            Op::Ctl { comm, .. } => comm,
            Op::Rx { .. } => None,
        }
    }

    /// The provider answered `op` EAGAIN: counted as a deferral.
    pub(super) fn deferred(&self, op: Op) {
        self.count(self.op_comm(op), |c| &c.eagain_deferrals, 1);
    }

    /// One post of `req` came back from the provider.
    pub(super) fn op_done(&mut self, req: Entry) {
        let Some(r) = self.reqs.get_mut(req) else {
            return;
        };
        r.outstanding = r.outstanding.saturating_sub(1);
    }

    pub(super) fn try_post(&mut self, op: Op) -> Result<(), PostError> {
        match op {
            Op::Write {
                req,
                rail,
                offset,
                len,
                dest,
                remote,
                key,
                imm,
            } => {
                let (addr, desc) = self.local(req, offset, rail);
                self.data[rail].rail.write_data(
                    addr,
                    len,
                    desc,
                    dest,
                    remote,
                    key,
                    imm,
                    ctx(K_REQ, rail, req.0 as usize),
                )
            }
            Op::Eager {
                req,
                rail,
                offset,
                len,
                dest,
                imm,
            } => {
                let (addr, desc) = self.local(req, offset, rail);
                self.data[rail].rail.send_data(
                    addr,
                    len,
                    desc,
                    dest,
                    imm,
                    ctx(K_REQ, rail, req.0 as usize),
                )
            }
            Op::Ctl {
                ctl,
                slot,
                len,
                dest,
                imm,
                then,
                ..
            } => {
                let c = ctx(K_TX, 0, slot) | then_bits(then);
                let desc = self.tx_regs[ctl].desc;
                self.ctls[ctl]
                    .rail
                    .send_data(self.tx.addr(slot), len, desc, dest, imm, c)
            }
            Op::Rx { rail, slot } => {
                let set = if rail >= CTL {
                    &mut self.ctls[rail - CTL]
                } else {
                    &mut self.data[rail]
                };
                let (addr, len, desc) = (set.rx.addr(slot), set.rx.slot_len(), set.rx_reg.desc);
                set.rail
                    .recv(addr, len, desc, ctx(K_RX, rail & 0xff_ffff, slot))
            }
        }
    }

    /// The address `offset` bytes into request `req`'s buffer, and the
    /// descriptor of its registration on `rail`.
    pub(super) fn local(&self, req: Entry, offset: usize, rail: usize) -> (u64, u64) {
        let r = self.reqs.get(req).expect("live request");
        let desc = self
            .mrs
            .get(r.mr as usize)
            .and_then(Option::as_ref)
            .map_or(0, |m| m.regs[rail].desc);
        (r.addr + offset as u64, desc)
    }

    pub(super) fn op_failed(&mut self, op: Op, msg: RequestError) {
        if let Some(req) = Endpoint::op_req(op) {
            self.op_done(req);
        }
        match op {
            Op::Write { req, .. } | Op::Eager { req, .. } => self.fail_req(req, msg),
            Op::Ctl { slot, then, .. } => {
                self.tx_free.push(slot);
                self.after_failed(then, msg);
            }
            // An rx buffer that cannot be posted is lost to this endpoint.
            Op::Rx { .. } => self.drop_one(),
        }
    }

    pub(super) fn after_failed(&mut self, then: After, msg: RequestError) {
        match then {
            After::Nothing => {}
            After::Req(req) => self.fail_req(req, msg),
            After::Connect(id) => {
                if let Some(c) = self.comms[id as usize].as_mut() {
                    c.handshake.fail(msg);
                }
            }
        }
    }
}
