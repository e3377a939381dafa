//! RDMA WRITE at the responder: the bytes of a [`Source`] into the memory an
//! rkey names, after the QP's REMOTE_WRITE right and the key's bounds,
//! rights and PD.

use super::resolve::resolve_rkey;
use super::{End, SegArray, Source};
use crate::copy::{self, Dst};
use crate::counters::Counter;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::wr::{Access, RemoteAddr, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// RDMA WRITE of `len` bytes from `src` to `(ra.rkey, ra.addr)` at QP `at`.
    pub(crate) fn respond_write(
        &mut self,
        at: End,
        ra: RemoteAddr,
        src: Source<'_>,
        len: u64,
    ) -> Result<u32, WcStatus> {
        let result = (|| {
            let mut sseg: SegArray<'_> = Default::default();
            let src = self.resolve_source(&src, &mut sseg)?;
            if len == 0 {
                return Ok(0);
            }
            if !at.access.contains(Access::REMOTE_WRITE) {
                return Err(WcStatus::RemAccessErr);
            }
            let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, len, Access::REMOTE_WRITE)?;
            copy::copy(&self.mem, Dst::Segs(&[seg]), src, len)
                .map_err(|e| e.status(WcStatus::RemAccessErr))?;
            Ok(len as u32)
        })();
        if let Ok(n) = result {
            self.count_rx(at.dev, at.qpn, Counter::RxWriteRequests, u64::from(n));
        }
        result
    }
}
