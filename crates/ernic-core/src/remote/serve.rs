//! The responder's half: a peer's request message is parsed and applied to
//! this engine's memory through the same responder operations the local
//! path uses ([`crate::datapath`]), and answered (a READ's reply carries the
//! bytes, read straight into it). A SEND that finds no receive posted is
//! held ([`super::held`]).

use std::time::Instant;

use super::Outgoing;
use super::state::Msg;
use crate::datapath::{End, Incoming, Outcome, Req, Sink, Source};
use crate::engine::Engine;
use crate::grh::GRH_LEN;
use crate::memory::DmaMemory;
use crate::types::{NodeId, Rkey};
use crate::wire::{self, HEADER_LEN, Op, Packet, Repr, flags};
use crate::wr::{RemoteAddr, SendFlags, SendOp, WcStatus};

impl<M: DmaMemory> Engine<M> {
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
            self.handle_reply(from, &repr, &msg.bytes()[HEADER_LEN..], now);
            self.remote.released.push(msg.buf);
            return;
        }
        if let Some(msg) = self.serve(from, msg, &repr, now, false) {
            self.remote.released.push(msg.buf);
        }
    }

    pub(super) fn reply(
        &mut self,
        to: NodeId,
        req: &Repr,
        op: Op,
        status: WcStatus,
        operand0: u64,
    ) {
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
    pub(super) fn serve(
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
            return self.hold(dev, r.dst_qpn, from, msg, r, now);
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
                    Outcome::Rnr => return self.hold(dev, r.dst_qpn, from, msg, r, now),
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

    /// Answers a READ request: with where the bytes lie, to a requester on
    /// this host that reads this process's memory itself (it copies them
    /// once, straight into its own buffers, when it takes the answer, and
    /// drops the answer unread if the request is gone by then: nothing
    /// is ever written into its memory from here); otherwise with the
    /// bytes, read straight into the reply.
    fn serve_read(&mut self, from: NodeId, at: End, r: &Repr) {
        let len = r.len as usize;
        let ra = RemoteAddr {
            addr: r.addr,
            rkey: Rkey(r.rkey),
        };
        let mut refs = [(0u64, 0u64); wire::MAX_REF_RUNS];
        let by_ref = self.cfg.send_by_ref
            && r.len >= self.cfg.by_ref_min
            && self
                .remote
                .carrier
                .as_ref()
                .is_some_and(|c| c.reads_from_me(from));
        let answer = if by_ref {
            self.read_runs(at, ra, u64::from(r.len), &mut refs)
        } else {
            Ok(None)
        };
        let Some(mut carrier) = self.remote.carrier.take() else {
            return;
        };
        let hdr = |status: WcStatus, fl: u8, runs: usize| Repr {
            flags: flags::LAST | fl,
            status,
            src_qpn: r.src_qpn,
            dst_qpn: r.dst_qpn,
            req_id: r.req_id,
            len: r.len,
            total: r.total,
            offset: r.offset,
            operand0: runs as u64,
            sgid: r.dgid,
            dgid: r.sgid,
            ..Repr::new(Op::ReadResp)
        };
        let res = match answer {
            Ok(Some(k)) => {
                let h = hdr(WcStatus::Success, flags::BY_REF, k);
                let mut fill = |buf: &mut [u8]| {
                    h.emit(buf);
                    wire::put_ref_runs(&mut buf[HEADER_LEN..], &refs[..k]);
                };
                let out = Outgoing {
                    reply: true,
                    tag: 0,
                    len: h.buffer_len(),
                    fill: &mut fill,
                };
                carrier.send(from, out)
            }
            // Not by reference, or a key check failed: the reply carries
            // `len` bytes either way (the requester counts them back).
            Ok(None) | Err(_) => {
                let mut fill = |buf: &mut [u8]| {
                    let st = self
                        .respond_read(at, ra, Sink::Bytes(&mut buf[HEADER_LEN..]), len as u64)
                        .err()
                        .unwrap_or(WcStatus::Success);
                    hdr(st, 0, 0).emit(buf);
                };
                let out = Outgoing {
                    reply: true,
                    tag: 0,
                    len: HEADER_LEN + len,
                    fill: &mut fill,
                };
                carrier.send(from, out)
            }
        };
        self.remote.carrier = Some(carrier);
        match res {
            Err(_) => self.remote.stats.replies_dropped += 1,
            Ok(()) if matches!(answer, Ok(Some(_))) => self.remote.stats.sent_by_ref += 1,
            Ok(()) => {}
        }
    }
}
