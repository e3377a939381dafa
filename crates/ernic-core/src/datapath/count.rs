//! Counting a request that succeeded: the counter its opcode bumps at the
//! requester ([`tx_counter`]), and the transmit and receive byte counts of a
//! device and its QP.

use crate::counters::Counter;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::types::{DeviceId, Qpn};
use crate::wr::SendOp;

impl<M: DmaMemory> Engine<M> {
    pub(crate) fn count_tx(&mut self, dev: DeviceId, qpn: Qpn, c: Counter, bytes: u64) {
        if let Ok(d) = self.dev_mut(dev) {
            d.counters.inc(c);
            d.counters.add(Counter::TxBytes, bytes);
            if let Some(q) = d.qps.get_mut(qpn.0) {
                q.counters.inc(c);
                q.counters.add(Counter::TxBytes, bytes);
            }
        }
    }

    /// Adds one to `c` on the device and on its QP.
    pub(crate) fn count_one(&mut self, dev: DeviceId, qpn: Qpn, c: Counter) {
        if let Ok(d) = self.dev_mut(dev) {
            d.counters.inc(c);
            if let Some(q) = d.qps.get_mut(qpn.0) {
                q.counters.inc(c);
            }
        }
    }

    pub(crate) fn count_rx(&mut self, dev: DeviceId, qpn: Qpn, c: Counter, bytes: u64) {
        if let Ok(d) = self.dev_mut(dev) {
            d.counters.inc(c);
            d.counters.add(Counter::RxBytes, bytes);
            if let Some(q) = d.qps.get_mut(qpn.0) {
                q.counters.inc(c);
                q.counters.add(Counter::RxBytes, bytes);
            }
        }
    }
}

/// The counter a successful request bumps at its requester.
pub(crate) fn tx_counter(op: SendOp) -> Counter {
    match op {
        SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => Counter::RdmaSends,
        SendOp::Write(_) | SendOp::WriteImm(..) => Counter::RdmaWrites,
        SendOp::Read(_) => Counter::RdmaReads,
        _ => Counter::RdmaAtomics,
    }
}
