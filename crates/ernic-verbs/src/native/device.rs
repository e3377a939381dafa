//! The native provider: a device of a [`Fabric`](crate::Fabric), its calls
//! carried out by the fabric's engine under the fabric lock, its memory this
//! process's own (a region's device address is its pointer).

use std::sync::Arc;

use ernic_core::{
    Access, AhId, Counters, DeviceId, Gid, MrSpec, PdId, QpAttr, QpInfo, QpInit, Qpn, RecvWr,
    SendWr, SrqId,
};

use crate::Error;
use crate::provider::{CqOps, MrMemory, Provider};

use super::cq::NativeCq;
use super::cq_ring::CqRing;
use super::fabric::Shared;

/// One device of a fabric.
pub(crate) struct Native {
    pub shared: Arc<Shared>,
    pub id: DeviceId,
    pub gid: Gid,
}

impl Provider for Native {
    fn gid(&self) -> Gid {
        self.gid
    }

    fn alloc_pd(&self) -> Result<PdId, Error> {
        Ok(self.shared.with(|st, _| st.engine.alloc_pd(self.id))?)
    }

    fn dealloc_pd(&self, pd: PdId) {
        self.shared.with(|st, _| {
            let _ = st.engine.dealloc_pd(self.id, pd);
        });
    }

    fn create_cq(&self, depth: u32) -> Result<Box<dyn CqOps>, Error> {
        let dev = self.id;
        let ring = CqRing::new(depth);
        let (id, ring) = self.shared.with(|st, _| -> Result<_, Error> {
            let id = st.engine.create_cq(dev, None, depth)?;
            Ok((id, st.cqs.insert(dev, id, ring)))
        })?;
        Ok(Box::new(NativeCq {
            shared: self.shared.clone(),
            dev,
            id,
            ring,
        }))
    }

    fn alloc_memory(&self, len: usize) -> Result<MrMemory, Error> {
        MrMemory::allocate(len)
    }

    #[allow(unsafe_code)]
    fn reg_mr(&self, pd: PdId, mem: &MrMemory, access: Access) -> Result<u32, Error> {
        // The engine reaches this process's memory by address: the DMA
        // address of the bytes is where they are; SGEs name them by `iova`.
        let (ptr, len, iova) = (mem.ptr(), mem.len(), mem.iova());
        let dma = ptr.as_ptr() as u64;
        let dev = self.id;
        Ok(self.shared.with(|st, _| {
            // SAFETY: `mem` is live memory of `len` bytes (an allocation, or
            // the caller's under `reg_user_mr`'s contract) that outlives the
            // region: it is removed from the registry in `dereg_mr` (or just
            // below, on failure) before it is freed.
            unsafe { st.engine.memory_mut().add(ptr, len) };
            let r = st
                .engine
                .reg_mr(dev, MrSpec::contiguous(pd, iova, len as u64, access, dma));
            if r.is_err() {
                st.engine.memory_mut().remove(ptr, len);
            }
            r
        })?)
    }

    fn dereg_mr(&self, key: u32, mem: Option<&MrMemory>) {
        self.shared.with(|st, _| {
            let _ = st.engine.dereg_mr(self.id, key);
            if let Some(m) = mem {
                st.engine.memory_mut().remove(m.ptr(), m.len());
            }
        });
    }

    fn alloc_fast_mr(&self, pd: PdId, max_len: u64) -> Result<u32, Error> {
        Ok(self
            .shared
            .with(|st, _| st.engine.alloc_fast_mr(self.id, pd, None, max_len))?)
    }

    fn exclusive(&self, f: &mut dyn FnMut()) {
        let _st = self.shared.lock();
        f();
    }

    fn create_qp(&self, init: &QpInit) -> Result<Qpn, Error> {
        Ok(self
            .shared
            .with(|st, _| st.engine.create_qp(self.id, init))?)
    }

    fn destroy_qp(&self, qpn: Qpn) {
        self.shared.with(|st, _| {
            let _ = st.engine.destroy_qp(self.id, qpn);
        });
    }

    fn modify_qp(&self, qpn: Qpn, attr: &QpAttr) -> Result<(), Error> {
        Ok(self
            .shared
            .with(|st, now| st.engine.modify_qp(self.id, qpn, attr, now))?)
    }

    fn query_qp(&self, qpn: Qpn) -> Result<QpInfo, Error> {
        Ok(self.shared.lock().engine.query_qp(self.id, qpn)?)
    }

    fn qp_counters(&self, qpn: Qpn) -> Result<Counters, Error> {
        Ok(self.shared.lock().engine.qp_counters(self.id, qpn)?.clone())
    }

    fn post_send(&self, qpn: Qpn, wr: &SendWr<'_>) -> Result<(), Error> {
        Ok(self
            .shared
            .with(|st, now| st.engine.post_send(self.id, qpn, wr, now))?)
    }

    fn post_recv(&self, qpn: Qpn, wrs: &[RecvWr<'_>]) -> Result<(), Error> {
        Ok(self.shared.with(|st, now| {
            wrs.iter()
                .try_for_each(|wr| st.engine.post_recv(self.id, qpn, wr, now))
        })?)
    }

    fn create_srq(&self, pd: PdId, depth: u32, max_sge: u32) -> Result<SrqId, Error> {
        Ok(self
            .shared
            .with(|st, _| st.engine.create_srq(self.id, None, pd, depth, max_sge))?)
    }

    fn destroy_srq(&self, srq: SrqId) {
        self.shared.with(|st, _| {
            let _ = st.engine.destroy_srq(self.id, srq);
        });
    }

    fn post_srq_recv(&self, srq: SrqId, wr: &RecvWr<'_>) -> Result<(), Error> {
        Ok(self
            .shared
            .with(|st, now| st.engine.post_srq_recv(self.id, srq, wr, now))?)
    }

    fn modify_srq(&self, srq: SrqId, limit: u32) -> Result<(), Error> {
        Ok(self
            .shared
            .with(|st, _| st.engine.modify_srq(self.id, srq, limit))?)
    }

    fn query_srq(&self, srq: SrqId) -> Result<(u32, u32), Error> {
        Ok(self.shared.lock().engine.query_srq(self.id, srq)?)
    }

    fn create_ah(&self, pd: PdId, dgid: Gid) -> Result<AhId, Error> {
        Ok(self
            .shared
            .with(|st, _| st.engine.create_ah(self.id, None, pd, dgid))?)
    }

    fn destroy_ah(&self, ah: AhId) {
        self.shared.with(|st, _| {
            let _ = st.engine.destroy_ah(self.id, ah);
        });
    }

    fn counters(&self) -> Counters {
        let st = self.shared.lock();
        st.engine
            .device_counters(self.id)
            .cloned()
            .unwrap_or_default()
    }

    fn describe(&self) -> String {
        format!("{}, {}", self.id, self.gid)
    }
}
