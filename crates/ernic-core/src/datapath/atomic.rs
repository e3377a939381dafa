//! The two atomics (compare-and-swap, fetch-and-add): the responder's 8-byte
//! operation at an aligned address an rkey names, and the requester's
//! 8-byte result buffer, checked before and written after.

use super::resolve::{resolve_rkey, resolve_sgl};
use super::{End, SegArray};
use crate::copy::{self, Dst, Src};
use crate::counters::Counter;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::wr::{Access, RemoteAddr, SendOp, Sge, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// An 8-byte atomic at `(ra.rkey, ra.addr)` of QP `at`; returns the old value.
    pub(crate) fn respond_atomic(
        &mut self,
        at: End,
        ra: RemoteAddr,
        op: SendOp,
    ) -> Result<u64, WcStatus> {
        let result = (|| {
            if !at.access.contains(Access::REMOTE_ATOMIC) {
                return Err(WcStatus::RemAccessErr);
            }
            if ra.addr % 8 != 0 {
                return Err(WcStatus::RemInvReqErr);
            }
            let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, 8, Access::REMOTE_ATOMIC)?;
            copy::atomic(&self.mem, &seg, op).map_err(|e| match e {
                copy::AtomicError::Mem(_) => WcStatus::RemAccessErr,
                copy::AtomicError::Misaligned => WcStatus::RemInvReqErr,
            })
        })();
        if result.is_ok() {
            self.count_rx(at.dev, at.qpn, Counter::RxAtomicRequests, 0);
        }
        result
    }

    /// Checks that an atomic's local buffer is 8 writable bytes.
    pub(crate) fn check_atomic_target(
        &self,
        me: End,
        sgl: &[Sge],
        len: u64,
    ) -> Result<(), WcStatus> {
        if len != 8 {
            return Err(WcStatus::LocLenErr);
        }
        let d = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
        let mut dseg: SegArray<'_> = Default::default();
        resolve_sgl(d, me.dma_key, me.pd, sgl, Access::LOCAL_WRITE, &mut dseg)?;
        Ok(())
    }

    /// Writes an atomic's old value into its local buffer.
    pub(crate) fn put_atomic_result(&self, me: End, sgl: &[Sge], old: u64) -> Result<(), WcStatus> {
        let d = self.dev(me.dev).map_err(|_| WcStatus::GeneralErr)?;
        let mut dseg: SegArray<'_> = Default::default();
        let (n, _) = resolve_sgl(d, me.dma_key, me.pd, sgl, Access::LOCAL_WRITE, &mut dseg)?;
        copy::copy(
            &self.mem,
            Dst::Segs(&dseg[..n]),
            Src::Bytes(&old.to_ne_bytes()),
            8,
        )
        .map_err(|_| WcStatus::LocProtErr)
    }

    pub(super) fn local_atomic(
        &mut self,
        me: End,
        them: End,
        sgl: &[Sge],
        len: u64,
        ra: RemoteAddr,
        op: SendOp,
    ) -> Result<u32, WcStatus> {
        self.check_atomic_target(me, sgl, len)?;
        let old = self.respond_atomic(them, ra, op)?;
        self.put_atomic_result(me, sgl, old)?;
        Ok(8)
    }
}
