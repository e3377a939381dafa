//! Answers from a peer to this engine's requests: a READ's bytes and an
//! atomic's old value are scattered into the request's own buffers, each
//! answer is counted against its request, and the last one (or the first
//! failure) ends it. Answers to requests no longer pending are ignored.

use std::time::Instant;

use crate::datapath::{SegArray, resolve_sgl_after};
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::types::{DeviceId, NodeId, Qpn};
use crate::wire::{Op, Repr, flags};
use crate::wr::{Access, WcStatus};

impl<M: DmaMemory> Engine<M> {
    pub(super) fn handle_reply(&mut self, from: NodeId, r: &Repr, payload: &[u8], now: Instant) {
        let Some(p) = self.remote.pending.get(&r.req_id) else {
            self.remote.stats.stale_replies += 1;
            return;
        };
        let (dev, qpn, incarnation, ctr, node) = (p.dev, p.qpn, p.incarnation, p.ctr, p.node);
        if node != from {
            // Only the node asked answers: another that names this request
            // (a stale id, or a guess) changes nothing.
            self.remote.stats.stale_replies += 1;
            return;
        }
        let live = self
            .qp(dev, qpn)
            .is_ok_and(|q| q.incarnation == incarnation);
        if !live {
            self.remote.stats.stale_replies += 1;
            self.drop_pending(r.req_id);
            return;
        }
        let mut status = r.status;
        match r.op {
            Op::ReadResp => {
                let n = u64::from(r.len);
                let p = self.remote.pending.get_mut(&r.req_id).expect("checked");
                p.reads_out = p.reads_out.saturating_sub(n);
                if let Some(out) = self.remote.reads_out.get_mut(&node) {
                    *out = out.saturating_sub(n);
                }
                let by_ref = r.flags & flags::BY_REF != 0;
                if status.is_ok() {
                    status =
                        self.scatter_into_slot(dev, qpn, ctr, u64::from(r.offset), |this, sink| {
                            // Bytes named by reference are read from the
                            // responder's memory now, while the request is
                            // pending and its buffers are this engine's.
                            let src = match this.remote.carrier.as_deref() {
                                Some(carrier) if by_ref => crate::copy::Src::Peer {
                                    carrier,
                                    from,
                                    runs: payload,
                                },
                                None if by_ref => return Err(WcStatus::RemOpErr),
                                _ => crate::copy::Src::Bytes(payload),
                            };
                            crate::copy::copy(&this.mem, sink, src, n).map_err(|e| match e {
                                // The responder's memory could not be read:
                                // its fault, as a READ it could not serve.
                                crate::copy::CopyError::Peer(_) => WcStatus::RemOpErr,
                                crate::copy::CopyError::Mem(_) => WcStatus::LocProtErr,
                            })
                        });
                    if by_ref && status.is_ok() {
                        self.remote.stats.read_by_ref += n;
                    }
                }
            }
            Op::AtomicResp if status.is_ok() => {
                let old = r.operand0;
                status = self.scatter_into_slot(dev, qpn, ctr, 0, |this, sink| {
                    crate::copy::copy(
                        &this.mem,
                        sink,
                        crate::copy::Src::Bytes(&old.to_ne_bytes()),
                        8,
                    )
                    .map_err(|_| WcStatus::LocProtErr)
                });
            }
            _ => {}
        }
        let p = self.remote.pending.get_mut(&r.req_id).expect("checked");
        p.answered += 1;
        if p.status.is_ok() && !status.is_ok() {
            p.status = status;
        }
        let (st, done) = (p.status, p.all_sent && p.answered >= p.sent);
        if done || !st.is_ok() {
            self.finish(r.req_id, st, now);
        }
    }

    /// Runs `f` with the local buffers of a pending request (from byte
    /// `skip` on) as a copy destination.
    fn scatter_into_slot(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        ctr: u32,
        skip: u64,
        f: impl FnOnce(&Self, crate::copy::Dst<'_>) -> Result<(), WcStatus>,
    ) -> WcStatus {
        let every = self.cfg.allow_reserved_lkey;
        let Ok(qp) = self.qp_mut(dev, qpn) else {
            return WcStatus::GeneralErr;
        };
        let (pd, dma_key) = (qp.pd, every || qp.privileged);
        let idx = qp.sq.index(ctr);
        let sgl = std::mem::take(&mut qp.sq.slots[idx].sgl);
        let result = (|| {
            let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
            let mut seg: SegArray<'_> = Default::default();
            let need = Access::LOCAL_WRITE;
            let segs = resolve_sgl_after(d, dma_key, pd, &sgl, need, skip, &mut seg)?;
            f(self, crate::copy::Dst::Segs(segs))
        })();
        self.qp_mut(dev, qpn).expect("checked").sq.slots[idx].sgl = sgl;
        result.err().unwrap_or(WcStatus::Success)
    }
}
