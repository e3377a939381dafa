//! Memory regions and the key table: the bounds checks every keyed access
//! passes through.
//!
//! An MR maps a virtual address range `[iova, iova + len)` onto runs of DMA
//! addresses. A key names an MR by its slot (the upper 24 bits) and a variant
//! byte (the low 8 bits) that fast registration changes, so a key that was
//! invalidated or replaced stops working at once. Every access through a
//! non-zero key is checked here against the MR's range, rights and protection
//! domain; a range that wraps the address space is refused before it is used.

use crate::types::{PdId, key_index};
use crate::wr::{Access, PageSource};

/// A run of the MR's range that is contiguous in DMA space.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Run {
    /// Offset of the run's first byte from the MR's start.
    pub off: u64,
    /// DMA address of that byte.
    pub dma: u64,
    /// Length of the run.
    pub len: u64,
}

/// Whether an MR was registered whole, or allocated for fast registration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MrKind {
    /// Registered with its pages at once; its key never changes.
    Normal,
    /// Allocated empty; REG_MR binds pages and a key, LOCAL_INV unbinds them.
    FastReg {
        /// Most bytes a registration may bind.
        max_len: u64,
        /// Most page-list entries a registration may name (the `max_num_sg`
        /// of `ib_alloc_mr`): a longer list fails before any is read.
        max_pages: u32,
    },
}

/// A memory region.
#[derive(Clone, Debug)]
pub struct Mr {
    /// The current key (lkey and rkey are the same number).
    pub key: u32,
    /// Its protection domain.
    pub pd: PdId,
    /// Rights through the key.
    pub access: Access,
    /// First virtual address.
    pub iova: u64,
    /// Length in bytes.
    pub len: u64,
    /// DMA runs, sorted by offset, adjacent ones merged.
    pub runs: Vec<Run>,
    /// Whether the key currently works (a fast-reg MR is invalid until REG_MR).
    pub valid: bool,
    /// How it was made.
    pub kind: MrKind,
}

/// Why a keyed access was refused. The data path turns these into completion
/// statuses (local protection or remote access) in one place.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum KeyError {
    /// No MR has this key (never made, destroyed, invalidated, or a stale variant).
    #[error("no valid MR has key {key:#x}")]
    NoSuchKey {
        /// The key.
        key: u32,
    },
    /// The MR belongs to another protection domain.
    #[error("MR {key:#x} is in another protection domain")]
    WrongPd {
        /// The key.
        key: u32,
    },
    /// The MR lacks a right the access needs.
    #[error("MR {key:#x} does not grant {need:?}")]
    NoRight {
        /// The key.
        key: u32,
        /// The right that was missing.
        need: Access,
    },
    /// The range is not inside the MR.
    #[error("range {addr:#x}+{len} is outside MR {key:#x}")]
    OutOfBounds {
        /// The key.
        key: u32,
        /// First address asked for.
        addr: u64,
        /// Length asked for.
        len: u64,
    },
    /// The range wraps around the address space.
    #[error("range {addr:#x}+{len} wraps around the address space")]
    Wraps {
        /// First address asked for.
        addr: u64,
        /// Length asked for.
        len: u64,
    },
    /// Key 0 is not allowed here.
    #[error("the reserved key 0 is refused here")]
    ReservedKey,
}

/// A checked, resolved piece of memory: either bytes of an MR, or (key 0)
/// a direct DMA range.
#[derive(Clone, Copy, Debug, Default)]
pub struct Seg<'a> {
    /// The MR's runs; empty for a direct range.
    pub runs: &'a [Run],
    /// Offset into the MR (or the DMA address, for a direct range).
    pub off: u64,
    /// Length in bytes.
    pub len: u64,
}

impl Seg<'_> {
    /// A direct DMA range (the reserved key 0).
    pub fn direct(dma: u64, len: u64) -> Seg<'static> {
        Seg {
            runs: &[],
            off: dma,
            len,
        }
    }

    /// The DMA address and contiguous length at `pos` bytes into the segment.
    pub fn dma_at(&self, pos: u64) -> (u64, u64) {
        let left = self.len - pos;
        if self.runs.is_empty() {
            return (self.off + pos, left);
        }
        let off = self.off + pos;
        // The run holding `off`: the last run starting at or before it.
        let i = self.runs.partition_point(|r| r.off <= off) - 1;
        let run = &self.runs[i];
        let within = off - run.off;
        (run.dma + within, (run.len - within).min(left))
    }
}

/// Merges a list of page addresses into runs covering `len` bytes that start
/// `first_offset` bytes into the first page. Returns `None` if the table does
/// not have exactly the entries that geometry needs, or an address wraps.
pub fn runs_from_pages(
    pages: impl IntoIterator<Item = u64>,
    page_shift: u8,
    first_offset: u64,
    len: u64,
    out: &mut Vec<Run>,
) -> Option<()> {
    out.clear();
    if page_shift > 40 {
        return None;
    }
    let page = 1u64 << page_shift;
    if first_offset >= page {
        return None;
    }
    let needed = first_offset.checked_add(len)?.div_ceil(page);
    let mut off = 0u64;
    let mut count = 0u64;
    for (i, addr) in pages.into_iter().enumerate() {
        count += 1;
        if count > needed {
            return None;
        }
        let start = if i == 0 { first_offset } else { 0 };
        let run_len = (page - start).min(len - off);
        let dma = addr.checked_add(start)?;
        dma.checked_add(run_len)?;
        match out.last_mut() {
            Some(last) if last.dma + last.len == dma => last.len += run_len,
            _ => out.push(Run {
                off,
                dma,
                len: run_len,
            }),
        }
        off += run_len;
    }
    (count == needed).then_some(())
}

impl Mr {
    /// A normal MR over one contiguous DMA range.
    pub fn contiguous(key: u32, pd: PdId, access: Access, iova: u64, len: u64, dma: u64) -> Mr {
        Mr {
            key,
            pd,
            access,
            iova,
            len,
            runs: vec![Run { off: 0, dma, len }],
            valid: true,
            kind: MrKind::Normal,
        }
    }

    /// Checks an access of `len` bytes at `addr` needing `need`, and returns
    /// the segment it covers.
    pub fn check(&self, pd: PdId, addr: u64, len: u64, need: Access) -> Result<Seg<'_>, KeyError> {
        let key = self.key;
        if !self.valid {
            return Err(KeyError::NoSuchKey { key });
        }
        if self.pd != pd {
            return Err(KeyError::WrongPd { key });
        }
        if !self.access.contains(need) {
            return Err(KeyError::NoRight { key, need });
        }
        let end = addr.checked_add(len).ok_or(KeyError::Wraps { addr, len })?;
        let mr_end = self.iova + self.len;
        if addr < self.iova || end > mr_end {
            return Err(KeyError::OutOfBounds { key, addr, len });
        }
        Ok(Seg {
            runs: &self.runs,
            off: addr - self.iova,
            len,
        })
    }

    /// Binds a fast registration: new key variant, range, rights and pages.
    /// `pages` are the resolved runs (already checked against `len`).
    pub fn rebind(&mut self, key: u32, iova: u64, len: u64, access: Access) {
        self.key = key;
        self.iova = iova;
        self.len = len;
        self.access = access;
        self.valid = true;
    }
}

/// The pages of a fast registration, resolved against its geometry.
pub(crate) fn check_page_source(src: &PageSource, len: u64) -> bool {
    match *src {
        PageSource::Contiguous { dma } => dma.checked_add(len).is_some(),
        PageSource::Table {
            count,
            page_shift,
            first_offset,
            ..
        } => {
            if page_shift > 40 || u64::from(first_offset) >= (1u64 << page_shift) {
                return false;
            }
            let Some(span) = u64::from(first_offset).checked_add(len) else {
                return false;
            };
            span.div_ceil(1u64 << page_shift) == u64::from(count)
        }
    }
}

/// The MR table of one device, indexed by key slot.
#[derive(Debug, Default)]
pub struct MrTable {
    slots: Vec<Option<Mr>>,
    max: u32,
}

impl MrTable {
    /// A table of at most `max` MRs (slot 0 is reserved for key 0).
    pub fn new(max: u32) -> MrTable {
        MrTable {
            slots: Vec::new(),
            max,
        }
    }

    /// The MR whose current key is exactly `key`.
    pub fn get(&self, key: u32) -> Result<&Mr, KeyError> {
        match self.slots.get(key_index(key) as usize) {
            Some(Some(mr)) if mr.key == key && mr.valid => Ok(mr),
            _ => Err(KeyError::NoSuchKey { key }),
        }
    }

    /// The MR in the slot `key` names, whatever its variant or state.
    pub fn slot(&self, key: u32) -> Option<&Mr> {
        self.slots.get(key_index(key) as usize)?.as_ref()
    }

    /// Mutable access to the MR in the slot `key` names.
    pub fn slot_mut(&mut self, key: u32) -> Option<&mut Mr> {
        self.slots.get_mut(key_index(key) as usize)?.as_mut()
    }

    /// The lowest free slot's key (variant 0), or `None` when full.
    pub fn free_key(&self) -> Option<u32> {
        let i = (1..self.max).find(|&i| !matches!(self.slots.get(i as usize), Some(Some(_))))?;
        Some(i << 8)
    }

    /// Stores `mr` in the slot its key names. Fails if the slot is taken, is
    /// slot 0, or is past the table's size.
    pub fn insert(&mut self, mr: Mr) -> Result<(), Mr> {
        let i = key_index(mr.key);
        if i == 0 || i >= self.max {
            return Err(mr);
        }
        let i = i as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].is_some() {
            return Err(mr);
        }
        self.slots[i] = Some(mr);
        Ok(())
    }

    /// Removes the MR in the slot `key` names (any variant).
    pub fn remove(&mut self, key: u32) -> Option<Mr> {
        self.slots.get_mut(key_index(key) as usize)?.take()
    }

    /// Every MR, valid or not.
    pub fn iter(&self) -> impl Iterator<Item = &Mr> {
        self.slots.iter().flatten()
    }

    /// Number of MRs.
    pub fn count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Removes every MR.
    pub fn clear(&mut self) {
        self.slots.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_pages_merge_into_runs() {
        let mut runs = Vec::new();
        // Four 4 KiB pages: two adjacent, a gap, one more; region starts 100 bytes in.
        let pages = [0x10000, 0x11000, 0x20000, 0x21000];
        runs_from_pages(pages, 12, 100, 4 * 4096 - 100, &mut runs).unwrap();
        assert_eq!(
            runs,
            vec![
                Run {
                    off: 0,
                    dma: 0x10064,
                    len: 2 * 4096 - 100
                },
                Run {
                    off: 2 * 4096 - 100,
                    dma: 0x20000,
                    len: 2 * 4096
                },
            ]
        );
    }

    #[test]
    fn page_table_must_match_region_length() {
        let mut runs = Vec::new();
        // 3 pages for a region that needs 2.
        assert!(runs_from_pages([0, 0x1000, 0x2000], 12, 0, 8192, &mut runs).is_none());
        // 1 page for a region that needs 2.
        assert!(runs_from_pages([0], 12, 0, 4097, &mut runs).is_none());
        // Offset beyond the first page.
        assert!(runs_from_pages([0], 12, 4096, 1, &mut runs).is_none());
        // Address that wraps.
        assert!(runs_from_pages([u64::MAX - 10], 12, 0, 4096, &mut runs).is_none());
        assert!(check_page_source(
            &PageSource::Table {
                table: 0,
                count: 2,
                page_shift: 12,
                first_offset: 1
            },
            4096
        ));
        assert!(!check_page_source(
            &PageSource::Table {
                table: 0,
                count: 3,
                page_shift: 12,
                first_offset: 1
            },
            4096
        ));
    }

    #[test]
    fn check_refuses_wrong_pd_right_range_and_wrap() {
        let mr = Mr::contiguous(0x100, PdId(1), Access::LOCAL_WRITE, 0x1000, 0x100, 0x5000);
        assert!(
            mr.check(PdId(1), 0x1000, 0x100, Access::LOCAL_WRITE)
                .is_ok()
        );
        assert_eq!(
            mr.check(PdId(2), 0x1000, 1, Access::NONE).unwrap_err(),
            KeyError::WrongPd { key: 0x100 }
        );
        assert!(matches!(
            mr.check(PdId(1), 0x1000, 1, Access::REMOTE_READ),
            Err(KeyError::NoRight { .. })
        ));
        assert!(matches!(
            mr.check(PdId(1), 0x10ff, 2, Access::NONE),
            Err(KeyError::OutOfBounds { .. })
        ));
        assert!(matches!(
            mr.check(PdId(1), 0xfff, 1, Access::NONE),
            Err(KeyError::OutOfBounds { .. })
        ));
        assert!(matches!(
            mr.check(PdId(1), u64::MAX, 2, Access::NONE),
            Err(KeyError::Wraps { .. })
        ));
    }

    #[test]
    fn seg_walks_runs() {
        let runs = [
            Run {
                off: 0,
                dma: 0x10000,
                len: 10,
            },
            Run {
                off: 10,
                dma: 0x90000,
                len: 20,
            },
        ];
        let seg = Seg {
            runs: &runs,
            off: 5,
            len: 20,
        };
        assert_eq!(seg.dma_at(0), (0x10005, 5));
        assert_eq!(seg.dma_at(5), (0x90000, 15));
        assert_eq!(seg.dma_at(7), (0x90002, 13));
    }

    #[test]
    fn table_keys_by_slot_and_variant() {
        let mut t = MrTable::new(4);
        let k = t.free_key().unwrap();
        assert_eq!(k, 0x100);
        t.insert(Mr::contiguous(k | 0x7, PdId(0), Access::NONE, 0, 1, 0))
            .unwrap();
        assert!(t.get(k | 0x7).is_ok());
        assert!(t.get(k).is_err(), "stale variant must not resolve");
        assert_eq!(t.free_key(), Some(0x200));
        assert!(
            t.insert(Mr::contiguous(0x7, PdId(0), Access::NONE, 0, 1, 0))
                .is_err()
        );
        assert!(
            t.insert(Mr::contiguous(0x400, PdId(0), Access::NONE, 0, 1, 0))
                .is_err()
        );
    }
}
