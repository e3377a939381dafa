//! Completions and events leaving the engine: send completions retired in
//! order from the send queue into the outbox, which the front end drains,
//! and the asynchronous events it takes.

use super::{AsyncEvent, Engine};
use crate::counters::{Counter, error_counter};
use crate::memory::DmaMemory;
use crate::types::{DeviceId, Qpn};
use crate::wr::{Completion, CqEvent, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// Hands every completion produced since the last call to `f`, in order.
    pub fn drain_completions(&mut self, mut f: impl FnMut(&CqEvent)) {
        for e in self.outbox.iter() {
            f(e);
        }
        self.outbox.clear();
    }

    /// Whether completions wait in the outbox.
    pub fn has_completions(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Takes the asynchronous events produced since the last call.
    pub fn take_events(&mut self) -> Vec<AsyncEvent> {
        std::mem::take(&mut self.events)
    }

    /// Emits completions for finished send requests, oldest first.
    pub(crate) fn retire_sq(&mut self, dev: DeviceId, qpn: Qpn) {
        let Some(d) = self.devices.get_mut(dev.0 as usize) else {
            return;
        };
        let Some(qp) = d.qps.get_mut(qpn.0) else {
            return;
        };
        while qp.sq.head != qp.sq.exec {
            let i = qp.sq.index(qp.sq.head);
            let slot = &qp.sq.slots[i];
            let Some((status, byte_len)) = slot.done else {
                break;
            };
            let c = match status {
                WcStatus::Success => Some(Counter::ReqCqeSuccess),
                WcStatus::WrFlushErr => Some(Counter::ReqCqeFlushError),
                _ => Some(Counter::ReqCqeError),
            };
            for c in [c, error_counter(status)].into_iter().flatten() {
                qp.counters.inc(c);
                d.counters.inc(c);
            }
            self.outbox.push(CqEvent {
                device: dev,
                cq: qp.send_cq,
                completion: Completion {
                    wr_id: slot.wr_id,
                    status,
                    opcode: slot.op.wc_opcode(),
                    qpn,
                    byte_len,
                    imm: None,
                    invalidated: None,
                    src_qpn: Qpn(0),
                    grh: false,
                    grh_ipv4: false,
                    signaled: slot.flags.signaled || qp.sq_sig_all || !status.is_ok(),
                    sq_index: qp.sq.head,
                    solicited: false,
                },
            });
            qp.sq.head = qp.sq.head.wrapping_add(1);
        }
    }
}
