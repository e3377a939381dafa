//! Polling completions: CQEs read by their color through `fw::cqe` and
//! turned into the core's completions, one CQE standing for every
//! request up to a sequence number or a WQE.

use std::collections::VecDeque;

use ernic_core::{Completion, Qpn, WcOpcode, WcStatus};
use ernic_ionic::fw::{self, cqe};
use ernic_vfio::shm::Mapping;

use crate::{Cq, Driver, SendMeta};

/// Reads the CQE at `slot` if its color is `color`: the word holding the
/// color first, then (after an acquire fence) the rest, so a CQE the
/// device is still writing is never taken half old.
pub(crate) fn read_cqe(mem: &Mapping, slot: usize, color: bool, c: &mut [u8; cqe::LEN]) -> bool {
    // status_length and qid_type_flags: the last aligned 8 bytes.
    let Some(tail) = mem.load(slot + cqe::STATUS_LENGTH_BE) else {
        return false;
    };
    let tail_at = cqe::field::TAIL;
    c[tail_at.clone()].copy_from_slice(&tail.to_le_bytes());
    // A whole CQE's array: the getter cannot run past it.
    if cqe::Packet::new_unchecked(&*c).color() != color {
        return false;
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    mem.read(slot, &mut c[..tail_at.start]);
    true
}

impl Driver {
    /// CQEs waiting in `cq` (with completions read but not yet taken).
    pub fn cq_len(&self, cq: &Cq) -> usize {
        let mut c = [0u8; cqe::LEN];
        let mut n = cq.pending.len();
        for i in 0..cq.ring.depth() {
            let at = cq.cons.wrapping_add(i);
            let color = (at >> cq.ring.depth_log2) & 1 == 0;
            if !read_cqe(&self.mem, cq.ring.slot(at), color, &mut c) {
                break;
            }
            n += 1;
        }
        n
    }

    /// Reads up to `out.len()` completions from `cq`. One CQE may complete
    /// several requests (every request up to a sequence number, or up to a
    /// WQE): those that do not fit `out` wait for the next call.
    /// Unsignaled requests that succeed are not reported, as in verbs.
    pub fn poll_cq(&mut self, cq: &mut Cq, out: &mut [Completion]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(c) = cq.pending.pop_front() else {
                break;
            };
            out[n] = c;
            n += 1;
        }
        let mut c = [0u8; cqe::LEN];
        while n < out.len() {
            let color = (cq.cons >> cq.ring.depth_log2) & 1 == 0;
            if !read_cqe(&self.mem, cq.ring.slot(cq.cons), color, &mut c) {
                break;
            }
            cq.cons = cq.cons.wrapping_add(1);
            // A whole CQE's array: the getters cannot run past it.
            let p = cqe::Packet::new_unchecked(&c);
            let qid = p.qid();
            let Some(book) = self.qps.get_mut(&qid) else {
                continue;
            };
            let st = p.status_length();
            let status = if p.error() {
                fw::status::to_wc(st)
            } else {
                WcStatus::Success
            };
            let flushed = status == WcStatus::WrFlushErr;
            let mut sink = Sink {
                out,
                n: &mut n,
                pending: &mut cq.pending,
            };
            let mut wc = Completion::EMPTY;
            wc.qpn = Qpn(qid);
            wc.signaled = true;
            match p.cqe_type() {
                cqe::TYPE_RECV => {
                    let id = p.recv_wqe_id();
                    wc.opcode = WcOpcode::Recv;
                    wc.status = status;
                    if book.srq {
                        wc.wr_id = id;
                    } else if flushed {
                        // One flush CQE stands for every posted receive.
                        for (_, wr_id) in book.rq.drain(..) {
                            wc.wr_id = wr_id;
                            sink.push(wc);
                        }
                        continue;
                    } else {
                        // Receives complete in order: the one named.
                        let Some(at) = book.rq.iter().position(|&(i, _)| u64::from(i) == id) else {
                            continue;
                        };
                        wc.wr_id = book.rq[at].1;
                        book.rq.drain(..=at);
                    }
                    let sq = p.recv_src_qpn_op();
                    wc.src_qpn = Qpn(sq & 0xff_ffff);
                    wc.grh = book.ud;
                    wc.grh_ipv4 = book.ud && sq & fw::recv_op::IS_IPV4 != 0;
                    if status == WcStatus::Success {
                        wc.byte_len = st;
                        let op = sq >> 24;
                        if op == fw::recv_op::RDMA_IMM || op == fw::recv_op::SEND_IMM {
                            wc.imm = Some(p.recv_imm_data_rkey());
                        }
                        if op == fw::recv_op::RDMA_IMM {
                            wc.opcode = WcOpcode::RecvRdmaWithImm;
                        }
                        if op == fw::recv_op::SEND_INV {
                            let k = p.recv_imm_data_rkey();
                            wc.invalidated = Some(ernic_core::Rkey(k));
                        }
                    }
                    sink.push(wc);
                }
                cqe::TYPE_SEND_MSN => {
                    // Every request up to this sequence number is done;
                    // the last one with the CQE's status.
                    let msn = p.send_msg_msn();
                    if !book.sq.iter().any(|m| m.msn == Some(msn)) {
                        continue;
                    }
                    while let Some(m) = book.sq.pop_front() {
                        let last = m.msn == Some(msn);
                        let st = if last { status } else { WcStatus::Success };
                        if m.signaled || st != WcStatus::Success {
                            sink.push(send_wc(wc, &m, st));
                        }
                        if last {
                            break;
                        }
                    }
                }
                _ => {
                    // By WQE index: a local operation, a datagram, or the
                    // flush that stands for every request still posted.
                    let idx = p.send_npg_wqe_id();
                    let Some(at) = book.sq.iter().position(|m| u64::from(m.idx) == idx) else {
                        continue;
                    };
                    for m in book.sq.drain(..at) {
                        if m.signaled {
                            sink.push(send_wc(wc, &m, WcStatus::Success));
                        }
                    }
                    if flushed {
                        for m in book.sq.drain(..) {
                            sink.push(send_wc(wc, &m, WcStatus::WrFlushErr));
                        }
                    } else if let Some(m) = book.sq.pop_front()
                        && (m.signaled || status != WcStatus::Success)
                    {
                        sink.push(send_wc(wc, &m, status));
                    }
                }
            }
        }
        n
    }
}

/// Where [`Driver::poll_cq`] puts completions: the caller's array while it
/// has room, then the CQ's pending queue.
pub(crate) struct Sink<'a> {
    pub(crate) out: &'a mut [Completion],
    pub(crate) n: &'a mut usize,
    pub(crate) pending: &'a mut VecDeque<Completion>,
}

impl Sink<'_> {
    pub(crate) fn push(&mut self, wc: Completion) {
        if *self.n < self.out.len() {
            self.out[*self.n] = wc;
            *self.n += 1;
        } else {
            self.pending.push_back(wc);
        }
    }
}

/// The completion of send request `m` with `status`.
pub(crate) fn send_wc(mut wc: Completion, m: &SendMeta, status: WcStatus) -> Completion {
    wc.wr_id = m.wr_id;
    wc.opcode = m.opcode;
    wc.status = status;
    wc.byte_len = m.byte_len;
    wc.sq_index = m.idx;
    wc
}
