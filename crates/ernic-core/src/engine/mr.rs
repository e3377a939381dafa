//! Memory regions at the verbs level: registering one over DMA runs
//! ([`MrSpec`]), allocating one for fast registration, deregistering, and
//! looking one up. The key tables and their checks live in [`crate::mr`];
//! a REG_MR or LOCAL_INV work request runs in the data path
//! ([`crate::datapath`]).

use super::{Engine, EngineError};
use crate::memory::DmaMemory;
use crate::mr::{Mr, MrKind};
use crate::types::{DeviceId, PdId};
use crate::wr::Access;

/// What registering a memory region needs.
#[derive(Clone, Debug)]
pub struct MrSpec {
    /// Its protection domain.
    pub pd: PdId,
    /// A key chosen by the front end, or `None` for the lowest free slot.
    pub key: Option<u32>,
    /// First virtual address.
    pub iova: u64,
    /// Length in bytes.
    pub len: u64,
    /// Rights through its key.
    pub access: Access,
    /// Its pages as DMA runs, covering exactly `len` bytes.
    pub runs: Vec<crate::mr::Run>,
}

impl MrSpec {
    /// A region over one contiguous DMA range.
    pub fn contiguous(pd: PdId, iova: u64, len: u64, access: Access, dma: u64) -> MrSpec {
        MrSpec {
            pd,
            key: None,
            iova,
            len,
            access,
            runs: vec![crate::mr::Run { off: 0, dma, len }],
        }
    }
}

impl<M: DmaMemory> Engine<M> {
    /// Registers a memory region. With `spec.key` the front end chooses the
    /// key (its slot must be free); without, the lowest free slot is used.
    /// Returns the key.
    pub fn reg_mr(&mut self, dev: DeviceId, spec: MrSpec) -> Result<u32, EngineError> {
        let MrSpec {
            pd,
            key,
            iova,
            len,
            access,
            runs,
        } = spec;
        self.check_pd(dev, pd)?;
        if !access.is_consistent() {
            return Err(EngineError::BadAccess(access));
        }
        if iova.checked_add(len).is_none() {
            return Err(EngineError::Wraps { addr: iova, len });
        }
        let covered: u64 = runs.iter().map(|r| r.len).sum();
        if covered != len || runs.iter().any(|r| r.dma.checked_add(r.len).is_none()) {
            return Err(EngineError::BadSize {
                what: "page list length",
                value: covered,
                max: len,
            });
        }
        let key = self.pick_key(dev, key)?;
        let mr = Mr {
            key,
            pd,
            access,
            iova,
            len,
            runs,
            valid: true,
            kind: MrKind::Normal,
        };
        self.insert_mr(dev, mr)
    }

    /// Allocates an MR for fast registration, able to bind up to `max_len` bytes
    /// named by as many 4 KiB pages as that takes (one more for an offset).
    /// It has no pages and its key does not work until a REG_MR binds them.
    pub fn alloc_fast_mr(
        &mut self,
        dev: DeviceId,
        pd: PdId,
        key: Option<u32>,
        max_len: u64,
    ) -> Result<u32, EngineError> {
        let pages = u32::try_from((max_len >> 12).saturating_add(1)).unwrap_or(u32::MAX);
        self.alloc_fast_mr_pages(dev, pd, key, max_len, pages)
    }

    /// As [`alloc_fast_mr`](Engine::alloc_fast_mr), with at most `max_pages`
    /// page-list entries per REG_MR: the MR never holds more than that many
    /// runs, so a front end that bounds `max_pages` bounds its memory.
    pub fn alloc_fast_mr_pages(
        &mut self,
        dev: DeviceId,
        pd: PdId,
        key: Option<u32>,
        max_len: u64,
        max_pages: u32,
    ) -> Result<u32, EngineError> {
        self.check_pd(dev, pd)?;
        let key = self.pick_key(dev, key)?;
        let mr = Mr {
            key,
            pd,
            access: Access::NONE,
            iova: 0,
            len: 0,
            // Room for a typical registration now; a REG_MR needing more
            // grows it once, never past `max_pages`.
            runs: Vec::with_capacity((max_pages as usize).min(4096)),
            valid: false,
            kind: MrKind::FastReg { max_len, max_pages },
        };
        self.insert_mr(dev, mr)
    }

    fn pick_key(&self, dev: DeviceId, key: Option<u32>) -> Result<u32, EngineError> {
        let d = self.dev(dev)?;
        match key {
            Some(k) => Ok(k),
            None => d.mrs.free_key().ok_or(EngineError::Limit {
                what: "memory regions",
                max: self.cfg.max_mr,
            }),
        }
    }

    fn insert_mr(&mut self, dev: DeviceId, mr: Mr) -> Result<u32, EngineError> {
        let key = mr.key;
        self.dev_mut(dev)?
            .mrs
            .insert(mr)
            .map_err(|m| EngineError::IdUnavailable {
                what: "memory region",
                id: m.key,
            })?;
        Ok(key)
    }

    /// Deregisters the MR in the slot `key` names.
    pub fn dereg_mr(&mut self, dev: DeviceId, key: u32) -> Result<(), EngineError> {
        self.dev_mut(dev)?
            .mrs
            .remove(key)
            .map(|_| ())
            .ok_or(EngineError::NoMr(key))
    }

    /// The MR whose current key is `key`, if valid.
    pub fn mr(&self, dev: DeviceId, key: u32) -> Result<&Mr, EngineError> {
        self.dev(dev)?
            .mrs
            .get(key)
            .map_err(|_| EngineError::NoMr(key))
    }
}
