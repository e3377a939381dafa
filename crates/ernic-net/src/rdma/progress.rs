//! Progress: parked posts retried, then every rail's CQ drained, each
//! completion dispatched by its context (a request's segment, a control
//! send, an rx buffer) or, for a peer's write, by its immediate. Runs only
//! inside the endpoint's calls (`test`, and before posting).

use super::context::{After, K_REQ, K_RX, K_TX, THEN_MASK, then_of, unctx};
use super::control::{Control, decode_control};
use super::error::RequestError;
use super::immediate::split_imm;
use super::post::Op;
use super::{CTL, CTL_SLOT, Endpoint};
use crate::freelist::Entry;
use crate::provider::{CqEntry, CqError, CqFlags, PostError};

impl Endpoint {
    /// Drives the endpoint: retries parked posts, then drains every rail's
    /// CQ.
    pub fn progress(&mut self) {
        for _ in 0..self.pending.len() {
            let Some(op) = self.pending.pop_front() else {
                break;
            };
            match self.try_post(op) {
                Ok(()) => {}
                Err(PostError::Again) => {
                    self.deferred(op);
                    self.pending.push_front(op);
                    break;
                }
                Err(PostError::Failed(message)) => {
                    self.op_failed(op, RequestError::Post { message })
                }
            }
        }
        for rail in (CTL..CTL + self.ctls.len()).chain(0..self.data.len()) {
            self.drain(rail);
        }
    }

    pub(super) fn drain(&mut self, rail: usize) {
        let mut buf = std::mem::take(&mut self.cqbuf);
        let n = self.cfg.cq_read_count.min(buf.len()).max(1);
        loop {
            let set = if rail >= CTL {
                &mut self.ctls[rail - CTL]
            } else {
                &mut self.data[rail]
            };
            match set.rail.cq_read(&mut buf[..n]) {
                Ok(k) => {
                    for e in &buf[..k] {
                        self.on_entry(rail, e);
                    }
                    if k < n {
                        break;
                    }
                }
                Err(CqError::Again) => break,
                Err(CqError::Avail) => {
                    let Some(err) = set.rail.cq_readerr() else {
                        break;
                    };
                    let why = RequestError::Completion {
                        message: err.message,
                        errno: err.err,
                    };
                    self.on_error(rail, err.context, why);
                }
                Err(CqError::Failed(msg)) => {
                    self.drop_one();
                    let _ = msg;
                    break;
                }
            }
        }
        self.cqbuf = buf;
    }

    pub(super) fn on_error(&mut self, rail: usize, context: u64, msg: RequestError) {
        let (kind, _, index) = unctx(context & !THEN_MASK);
        let comm = match (kind, then_of(context)) {
            (K_REQ, _) | (K_TX, After::Req(_)) => {
                let req = if kind == K_REQ {
                    Entry(index as u32)
                } else {
                    match then_of(context) {
                        After::Req(r) => r,
                        _ => unreachable!("matched above"),
                    }
                };
                self.reqs.get(req).map(|r| r.comm)
            }
            (K_TX, After::Connect(id)) => Some(id),
            _ => None,
        };
        self.count(comm, |c| &c.error_completions, 1);
        tracing::debug!(rail, context, comm, error = %msg, "transport: error completion");
        match kind {
            K_REQ => {
                self.op_done(Entry(index as u32));
                self.fail_req(Entry(index as u32), msg);
            }
            K_TX => {
                self.tx_free.push(index);
                if let After::Req(req) = then_of(context) {
                    self.op_done(req);
                }
                self.after_failed(then_of(context), msg);
            }
            K_RX => {
                // A receive that failed (too long a message): post it again.
                self.drop_one();
                self.post(Op::Rx { rail, slot: index });
            }
            _ => self.drop_one(),
        }
    }

    pub(super) fn on_entry(&mut self, rail: usize, e: &CqEntry) {
        if e.flags.has(CqFlags::REMOTE_WRITE) {
            let (seq, comm, nseg) = split_imm(e.data);
            self.remote_segment(comm, seq, nseg, None);
            return;
        }
        let (kind, _, index) = unctx(e.context & !THEN_MASK);
        match kind {
            K_REQ => {
                self.op_done(Entry(index as u32));
                self.segment_done(Entry(index as u32), None);
            }
            K_TX => {
                self.tx_free.push(index);
                match then_of(e.context) {
                    After::Nothing => {}
                    After::Req(req) => {
                        self.op_done(req);
                        self.segment_done(req, None);
                    }
                    After::Connect(id) => {
                        if let Some(c) = self.comms[id as usize].as_mut() {
                            c.handshake.resp_done();
                        }
                    }
                }
            }
            K_RX if rail >= CTL => {
                // On the stack: a control message per receive must not
                // allocate.
                let mut buf = [0u8; CTL_SLOT];
                let m = &mut buf[..e.len.min(CTL_SLOT)];
                self.ctls[rail - CTL].rx.read(index, m);
                self.post(Op::Rx { rail, slot: index });
                if !self.on_control(m, e.data) {
                    self.drop_one();
                }
            }
            K_RX if self.sendrecv => self.on_chunk(rail, index, e.len, e.data),
            K_RX => self.on_eager(rail, index, e.len, e.data),
            _ => self.drop_one(),
        }
    }

    /// Handles a control message; false if it was malformed or stray.
    pub(super) fn on_control(&mut self, m: &[u8], _imm: u32) -> bool {
        match decode_control(m) {
            Ok(Control::Conn {
                listen,
                sender,
                names,
            }) => self.on_conn(listen, sender, &names).is_some(),
            Ok(Control::ConnResp {
                sender,
                receiver,
                names,
            }) => self.on_conn_resp(sender, receiver, &names).is_some(),
            Ok(Control::Ctrl(ctrl)) => self.on_ctrl(ctrl).is_some(),
            Ok(Control::Size {
                comm,
                seq,
                nseg,
                size,
            }) => {
                self.remote_segment(comm, seq, nseg, Some(size));
                true
            }
            Err(_) => false,
        }
    }
}
