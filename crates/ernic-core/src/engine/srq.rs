//! Shared receive queues ([`Srq`]): creating one within the device's queue
//! budget, its low watermark, and destroying it.

use super::{Engine, EngineError};
use crate::memory::DmaMemory;
use crate::qp::RecvQueue;
use crate::types::{DeviceId, PdId, SrqId};

/// A shared receive queue.
#[derive(Debug)]
pub(crate) struct Srq {
    pub pd: PdId,
    pub rq: RecvQueue,
    pub max_sge: u32,
    /// Low watermark; an event fires once when the count drops below it.
    pub limit: u32,
}

impl<M: DmaMemory> Engine<M> {
    /// Creates an SRQ of `depth` receives with up to `max_sge` SGEs each.
    pub fn create_srq(
        &mut self,
        dev: DeviceId,
        id: Option<SrqId>,
        pd: PdId,
        depth: u32,
        max_sge: u32,
    ) -> Result<SrqId, EngineError> {
        self.check_pd(dev, pd)?;
        self.check_size("SRQ depth", depth, self.cfg.max_qp_wr)?;
        self.check_size("SRQ SGE count", max_sge, self.cfg.max_sge)?;
        let cost = crate::qp::recv_queue_bytes(depth, max_sge);
        self.charge(dev, "a shared receive queue", cost)?;
        let srq = Srq {
            pd,
            rq: RecvQueue::new(depth, max_sge),
            max_sge,
            limit: 0,
        };
        let d = self.dev_mut(dev)?;
        let made = match id {
            Some(id) => d.srqs.insert_at(id.0, srq).map(|_| id),
            None => d.srqs.insert(srq).map(SrqId),
        };
        if made.is_err() {
            d.queue_bytes -= cost;
        }
        made
    }

    /// Sets the SRQ's low watermark: when its receive count drops below
    /// `limit`, one [`AsyncEvent::SrqLimitReached`] fires and the limit disarms
    /// (0 disarms it now).
    ///
    /// [`AsyncEvent::SrqLimitReached`]: super::AsyncEvent::SrqLimitReached
    pub fn modify_srq(&mut self, dev: DeviceId, srq: SrqId, limit: u32) -> Result<(), EngineError> {
        let s = self.srq_mut(dev, srq)?;
        if limit > s.rq.depth() {
            return Err(EngineError::BadSize {
                what: "SRQ limit",
                value: limit.into(),
                max: s.rq.depth().into(),
            });
        }
        s.limit = limit;
        Ok(())
    }

    /// The SRQ's limit and how many receives it holds.
    pub fn query_srq(&self, dev: DeviceId, srq: SrqId) -> Result<(u32, u32), EngineError> {
        let s = self
            .dev(dev)?
            .srqs
            .get(srq.0)
            .ok_or(EngineError::NoSrq(srq))?;
        Ok((s.limit, s.rq.outstanding()))
    }

    /// Destroys an SRQ that no QP uses.
    pub fn destroy_srq(&mut self, dev: DeviceId, srq: SrqId) -> Result<(), EngineError> {
        let d = self.dev_mut(dev)?;
        d.srqs.get(srq.0).ok_or(EngineError::NoSrq(srq))?;
        if d.qps.iter().any(|(_, q)| q.srq == Some(srq)) {
            return Err(EngineError::InUse {
                what: "shared receive queue",
            });
        }
        if let Some(s) = d.srqs.remove(srq.0) {
            d.queue_bytes -= crate::qp::recv_queue_bytes(s.rq.depth(), s.max_sge);
        }
        Ok(())
    }

    pub(crate) fn srq_mut(&mut self, dev: DeviceId, srq: SrqId) -> Result<&mut Srq, EngineError> {
        self.dev_mut(dev)?
            .srqs
            .get_mut(srq.0)
            .ok_or(EngineError::NoSrq(srq))
    }
}
