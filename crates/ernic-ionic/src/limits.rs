//! Every limit on what a guest can make the device hold, in one place, and
//! the most memory that adds up to.
//!
//! Everything a guest sends is a count the server would otherwise trust:
//! a page table's `map_count`, a region's length, a ring's depth and
//! stride, a fast registration's page list, how many objects it creates.
//! Each is bounded here or where it is read, before it sizes anything:
//!
//! | What | Limit (default profile `compat`) | Where | Excess |
//! |---|---|---|---|
//! | page-table entries, all objects of a LIF | `rdma_ptes` = 2^20 (LIF_IDENTIFY `npts_per_lif`) | [`PageTables`] | BAD_INDEX |
//! | page-table entries of one MR or ring | `rdma_ptes / 2` = 2^19 (the driver's `max_mr_size` and `max_fast_reg_page_list_len` are half the table) | [`PageTables`] | BAD_ATTR |
//! | fast-registration pages | the MR's CREATE_MR `map_count` (512 when it is 0, as Linux's `ionic_alloc_mr` sends it: `rdmadev::mr::UNSIZED_FAST_PAGES`), within the two above | core `alloc_fast_mr_pages` | REG_MR fails, LOCAL_PROT_ERR |
//! | a page list a REG_MR names | the fast-reg MR's pages; the list must be readable | core `exec_reg_mr` | REG_MR fails, LOCAL_PROT_ERR |
//! | a page table's entries vs. its geometry | exactly what the length needs | `rdmadev::read_page_table` | BAD_ATTR |
//! | ring depth, stride | 2^16 entries, 4 KiB WQEs (the driver's `IONIC_MAX_DEPTH`, LIF_IDENTIFY `max_stride`) | `rdmadev::Ring` | BAD_ATTR |
//! | work-request slots of all QPs and SRQs | `rdma_queue_mib` = 128 MiB of engine memory | core `max_queue_bytes` | BAD_ATTR |
//! | outstanding requests | one per slot: a ring's depth, within the budget above | core queues | the queue is full |
//! | SGEs per WQE | 32 (core `MAX_SGE`); what a 4 KiB stride holds when decoded | core, `rdmadev::datapath` | the WQE completes in error |
//! | admin command | 4 strides (252 bytes) | `rdmadev` | MSG_TOO_BIG |
//! | QPs (SQ/RQ ids), SRQs | `rdma_qps` = 1024 each (LIF_IDENTIFY qtype counts) | core, `rdmadev` | BAD_ATTR / BAD_INDEX |
//! | CQs | `rdma_cqs` = 1024 | core, bootstrap | BAD_INDEX |
//! | MRs | `rdma_mrs` = 65536 (LIF_IDENTIFY `nmrs_per_lif`) | core key table | BAD_ATTR |
//! | AHs | `rdma_ahs` = 4096 (LIF_IDENTIFY `nahs_per_lif`) | core | BAD_INDEX |
//! | EQs, admin queues | `rdma_eqs` = 32, `rdma_aqs` = 4 | bootstrap | device-command error |
//! | GIDs learned from header templates | 256 | `rdmadev` | not learned |
//! | a stats buffer, a header template | 64 KiB, 256 bytes | `rdmadev` | truncated |
//! | a profile file | 64 KiB, a regular file | [`crate::profile`] | refused at start |
//!
//! The driver learns the page-table size, the MR and AH counts and the
//! queue counts from LIF_IDENTIFY; the depth bound is the driver's own.
//! The queue budget has no field to travel in: a CREATE_QP or CREATE_SRQ
//! past it fails, as one past the device's memory would. The Linux driver
//! turns every admin error into `-EINVAL`; the statuses follow the
//! firmware's sense: BAD_ATTR for a size no object may have, BAD_INDEX for
//! a table (ids, page-table entries) that is full. [`LimitError::status`]
//! is where a limit becomes a status.
//!
//! # The most memory a guest can make the server hold
//!
//! [`MemoryBound::of`] adds it up from the profile and this build's sizes
//! (`ernic_core::Footprint`), every term at its worst:
//!
//! - page tables: 24 bytes (one run) per entry, `rdma_ptes` entries:
//!   24 MiB. A page table is read 512 entries at a time into a fixed
//!   buffer; the runs it becomes are kept, merged, at most one per entry.
//! - work-request slots: `rdma_queue_mib`, 128 MiB; completions waiting to
//!   be written are at most one per slot, twice (the engine's and the
//!   front end's copy), 56 bytes each against at least 64 bytes a slot:
//!   224 MiB more at the very worst.
//! - object tables and records: a slot per id up to each count, and the
//!   front end's record of each object: under 12 MiB.
//! - per command: a 64 KiB stats buffer, a 4 KiB page-table buffer.
//!
//! With `compat` that is at most 392 MiB (388 MiB in this build; checked
//! by a test below), and with `small` 90 MiB. Not counted: the guest memory the client maps (its
//! own size, mapped, not allocated), the mesh's buffers (bounded by
//! `ernic-mesh`) and the vfio-user messages (bounded by `ernic-vfio`).

use std::collections::BTreeMap;

use crate::bar0::Identity;
use crate::fw::admin_status as st;

/// A page table the LIF has no room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// One object asked for more entries than any object may have.
    #[error(
        "a page table of {count} entries: one object may have at most {max} \
         (half the profile's rdma_ptes)"
    )]
    TooManyEntries {
        /// Entries asked for.
        count: u64,
        /// Most an object may have.
        max: u32,
    },
    /// The LIF's page table is used up.
    #[error(
        "a page table of {count} entries: {left} of the LIF's {max} are left \
         (the profile's rdma_ptes)"
    )]
    TableFull {
        /// Entries asked for.
        count: u64,
        /// Entries free.
        left: u64,
        /// The LIF's page table.
        max: u64,
    },
}

impl LimitError {
    /// The admin status the command gets.
    pub fn status(&self) -> u32 {
        match self {
            LimitError::TooManyEntries { .. } => st::BAD_ATTR,
            LimitError::TableFull { .. } => st::BAD_INDEX,
        }
    }
}

/// What holds page-table entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    /// An MR, by key slot (the key without its variant byte).
    Mr(u32),
    /// A CQ's ring.
    Cq(u32),
    /// A QP's two rings.
    Qp(u32),
    /// An SRQ's ring.
    Srq(u32),
}

/// The LIF's page table: how many of its `rdma_ptes` entries each object
/// holds. An object is charged after it was made and released when it is
/// destroyed or the LIF resets.
#[derive(Debug, Default)]
pub struct PageTables {
    max: u64,
    per_object: u32,
    used: u64,
    held: BTreeMap<Owner, u32>,
}

impl PageTables {
    /// A page table of `ptes` entries, half of which one object may have.
    pub fn new(ptes: u32) -> PageTables {
        PageTables {
            max: ptes.into(),
            per_object: (ptes / 2).max(1),
            used: 0,
            held: BTreeMap::new(),
        }
    }

    /// Most entries one object may have.
    pub fn per_object(&self) -> u32 {
        self.per_object
    }

    /// Entries in use.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Whether one object may have `count` entries.
    pub fn check_one(&self, count: u64) -> Result<(), LimitError> {
        if count > u64::from(self.per_object) {
            return Err(LimitError::TooManyEntries {
                count,
                max: self.per_object,
            });
        }
        self.check_free(count)
    }

    /// Whether `count` more entries are free.
    pub fn check_free(&self, count: u64) -> Result<(), LimitError> {
        let left = self.max - self.used;
        if count > left {
            return Err(LimitError::TableFull {
                count,
                left,
                max: self.max,
            });
        }
        Ok(())
    }

    /// Records that `owner` holds `count` entries (checked before).
    pub fn charge(&mut self, owner: Owner, count: u32) {
        self.release(owner);
        if count > 0 {
            self.held.insert(owner, count);
            self.used += u64::from(count);
        }
    }

    /// `owner` is gone: its entries are free.
    pub fn release(&mut self, owner: Owner) {
        if let Some(n) = self.held.remove(&owner) {
            self.used -= u64::from(n);
        }
    }

    /// The LIF reset: every entry is free.
    pub fn clear(&mut self) {
        self.held.clear();
        self.used = 0;
    }
}

/// What the front end keeps per object besides the core's slot and what a
/// budget covers (its record in a map, a ring's descriptor and first run);
/// `rdmadev`'s tests check its records fit.
pub const RECORD_BYTES: u64 = 512;

/// Bytes a command needs for as long as it runs (a stats buffer, a
/// page-table buffer, a header template).
const PER_COMMAND_BYTES: u64 = (64 << 10) + (4 << 10) + 256;

/// The most memory a guest can make the RDMA side hold, by term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBound {
    /// MR and ring runs.
    pub page_tables: u64,
    /// Work-request slots.
    pub queues: u64,
    /// Completions waiting to be written.
    pub completions: u64,
    /// Object tables and records.
    pub objects: u64,
    /// Per command.
    pub command: u64,
}

impl MemoryBound {
    /// The bound for a device of profile `id`.
    pub fn of(id: &Identity) -> MemoryBound {
        let f = ernic_core::Footprint::of_this_build();
        let queues = u64::from(id.rdma_queue_mib) << 20;
        let n = u64::from;
        let objects = n(id.rdma_qps) * (f.qp + RECORD_BYTES)
            + n(id.rdma_qps) * (f.srq + RECORD_BYTES)
            + n(id.rdma_cqs) * (f.cq + RECORD_BYTES)
            + n(id.rdma_mrs) * (f.mr + RECORD_BYTES / 8)
            + n(id.rdma_ahs) * (f.ah + RECORD_BYTES / 8)
            + n(id.rdma_eqs + id.rdma_aqs + id.rdma_cqs) * RECORD_BYTES
            + 256 * 16;
        MemoryBound {
            page_tables: n(id.rdma_ptes) * f.run,
            queues,
            completions: 2 * (queues / f.min_slot) * f.completion,
            objects,
            command: PER_COMMAND_BYTES,
        }
    }

    /// The sum.
    pub fn total(&self) -> u64 {
        self.page_tables + self.queues + self.completions + self.objects + self.command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_bounds_hold() {
        let mib = |b: u64| b.div_ceil(1 << 20);
        let compat = MemoryBound::of(&crate::profile::load("compat").unwrap());
        assert_eq!(mib(compat.page_tables), 24);
        assert!(mib(compat.completions) <= 224, "{compat:?}");
        assert!(mib(compat.objects) <= 12, "{compat:?}");
        assert!(mib(compat.total()) <= 392, "{compat:?}");
        let small = MemoryBound::of(&crate::profile::load("small").unwrap());
        assert!(mib(small.total()) <= 90, "{small:?}");
    }

    #[test]
    fn entries_are_charged_per_object_and_given_back() {
        let mut t = PageTables::new(100);
        assert_eq!(t.per_object(), 50);
        assert_eq!(
            t.check_one(51),
            Err(LimitError::TooManyEntries { count: 51, max: 50 })
        );
        t.charge(Owner::Mr(1), 50);
        t.charge(Owner::Qp(1), 40);
        assert_eq!(t.used(), 90);
        let full = t.check_one(11).unwrap_err();
        assert_eq!(full.status(), st::BAD_INDEX);
        assert!(full.to_string().contains("10 of the LIF's 100"), "{full}");
        t.charge(Owner::Mr(1), 10);
        assert_eq!(t.used(), 50, "a second charge replaces the first");
        t.release(Owner::Qp(1));
        t.release(Owner::Qp(1));
        assert_eq!(t.used(), 10);
        t.clear();
        assert_eq!(t.used(), 0);
    }
}
