//! Flushing a QP: every outstanding request completes with a flush error,
//! what it still has queued for other nodes is taken back, and answers that
//! come later are ignored.

use super::Engine;
use crate::counters::Counter;
use crate::memory::DmaMemory;
use crate::types::{DeviceId, Qpn};
use crate::wr::{Completion, CqEvent, WcOpcode, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// Completes every outstanding request of the QP with a flush error; what
    /// it still has queued for other nodes is taken back, and answers that
    /// come later are ignored.
    pub(crate) fn flush_qp(&mut self, dev: DeviceId, qpn: Qpn) {
        self.stalled.retain(|w| *w != (dev, qpn));
        self.forget_pending(dev, qpn);
        self.drop_held(dev, qpn);
        if let Ok(inc) = self.qp(dev, qpn).map(|q| q.incarnation) {
            self.cancel_queued(inc);
        }
        let Some(d) = self.devices.get_mut(dev.0 as usize) else {
            return;
        };
        let Some(qp) = d.qps.get_mut(qpn.0) else {
            return;
        };
        qp.rnr_since = None;
        let recv_cq = qp.recv_cq;
        if let Some(open) = qp.open_recv.take() {
            // A message that was arriving in pieces: its receive is flushed.
            qp.counters.inc(Counter::RespCqeFlushError);
            d.counters.inc(Counter::RespCqeFlushError);
            self.outbox.push(CqEvent {
                device: dev,
                cq: recv_cq,
                completion: Completion {
                    wr_id: open.wr_id,
                    status: WcStatus::WrFlushErr,
                    opcode: WcOpcode::Recv,
                    qpn,
                    ..Completion::EMPTY
                },
            });
        }
        // Requests in flight to another node are flushed too.
        let mut c = qp.sq.head;
        while c != qp.sq.exec {
            let i = qp.sq.index(c);
            if qp.sq.slots[i].done.is_none() {
                qp.sq.slots[i].done = Some((WcStatus::WrFlushErr, 0));
            }
            c = c.wrapping_add(1);
        }
        let mut c = qp.sq.exec;
        while c != qp.sq.tail {
            let i = qp.sq.index(c);
            qp.sq.slots[i].done = Some((WcStatus::WrFlushErr, 0));
            c = c.wrapping_add(1);
        }
        qp.sq.exec = qp.sq.tail;
        if qp.srq.is_none() {
            while let Some(i) = qp.rq.head_index() {
                let wr_id = qp.rq.slots[i].wr_id;
                qp.rq.pop();
                qp.counters.inc(Counter::RespCqeFlushError);
                d.counters.inc(Counter::RespCqeFlushError);
                self.outbox.push(CqEvent {
                    device: dev,
                    cq: recv_cq,
                    completion: Completion {
                        wr_id,
                        status: WcStatus::WrFlushErr,
                        opcode: WcOpcode::Recv,
                        qpn,
                        signaled: true,
                        ..Completion::EMPTY
                    },
                });
            }
        }
        self.retire_sq(dev, qpn);
    }
}
