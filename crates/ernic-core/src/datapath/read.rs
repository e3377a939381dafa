//! RDMA READ at the responder: the memory an rkey names into a [`Sink`]
//! (the requester's own SGEs when both ends are in this engine, a reply
//! message's payload otherwise, or where the bytes lie for a requester on
//! this host that reads them itself), after the QP's REMOTE_READ right and
//! the key's checks.

use super::resolve::{resolve_rkey, resolve_sgl_after};
use super::{End, SegArray, Sink};
use crate::copy::{self, Dst, Src};
use crate::counters::Counter;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::wr::{Access, RemoteAddr, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// RDMA READ of `len` bytes at `(ra.rkey, ra.addr)` of QP `at` into `sink`.
    pub(crate) fn respond_read(
        &mut self,
        at: End,
        ra: RemoteAddr,
        sink: Sink<'_>,
        len: u64,
    ) -> Result<u32, WcStatus> {
        let result = (|| {
            let mut dseg: SegArray<'_> = Default::default();
            let dst = match sink {
                Sink::Bytes(b) => Dst::Bytes(b),
                Sink::Sgl {
                    dev,
                    pd,
                    dma_key,
                    sgl,
                    skip,
                } => {
                    let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
                    let need = Access::LOCAL_WRITE;
                    let segs = resolve_sgl_after(d, dma_key, pd, sgl, need, skip, &mut dseg)?;
                    Dst::Segs(segs)
                }
            };
            if len == 0 {
                return Ok(0);
            }
            if !at.access.contains(Access::REMOTE_READ) {
                return Err(WcStatus::RemAccessErr);
            }
            let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
            let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, len, Access::REMOTE_READ)?;
            copy::copy(&self.mem, dst, Src::Segs(&[seg]), len)
                .map_err(|_| WcStatus::RemAccessErr)?;
            Ok(len as u32)
        })();
        if result.is_ok() {
            self.count_rx(at.dev, at.qpn, Counter::RxReadRequests, 0);
        }
        result
    }

    /// RDMA READ answered by reference: after the same checks as
    /// [`respond_read`](Engine::respond_read), the host runs that hold the
    /// `len` bytes at `(ra.rkey, ra.addr)` are written into `out` for a
    /// requester on this host to read itself. `Ok(None)` when they do not
    /// fit `out`: the caller answers with the bytes instead.
    pub(crate) fn read_runs(
        &mut self,
        at: End,
        ra: RemoteAddr,
        len: u64,
        out: &mut [(u64, u64)],
    ) -> Result<Option<usize>, WcStatus> {
        if !at.access.contains(Access::REMOTE_READ) {
            return Err(WcStatus::RemAccessErr);
        }
        let d = self.dev(at.dev).map_err(|_| WcStatus::RetryExcErr)?;
        let seg = resolve_rkey(d, at.pd, ra.rkey.0, ra.addr, len, Access::REMOTE_READ)?;
        let k = copy::host_runs(&self.mem, Src::Segs(&[seg]), len, out);
        if k.is_some() {
            self.count_rx(at.dev, at.qpn, Counter::RxReadRequests, 0);
        }
        Ok(k)
    }
}
