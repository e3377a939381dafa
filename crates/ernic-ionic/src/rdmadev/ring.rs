//! A ring in guest memory — a CQ's, an EQ's, an admin queue's, a QP's or
//! an SRQ's — as a create command describes it: contiguous, or by a page
//! table that is bounded and read before the ring is used.

use ernic_core::mr::{Run, runs_from_pages};
use ernic_vfio::dma::Dma;

use crate::fw::admin_status as st;
use crate::limits::PageTables;

use super::{MAX_DEPTH_LOG2, MAX_STRIDE_LOG2, PAGE_SHIFTS, TABLE_CHUNK};

/// A ring in guest memory: its bytes as DMA runs, read once when the ring
/// was created.
#[derive(Debug, Clone)]
pub struct Ring {
    pub(super) runs: Vec<Run>,
    pub(super) depth_log2: u8,
    pub(super) stride_log2: u8,
    /// Page-table entries it holds (0 for a contiguous ring).
    pub(super) ptes: u32,
}

impl Ring {
    pub(super) fn len_bytes(depth_log2: u8, stride_log2: u8) -> u64 {
        1u64 << (depth_log2 + stride_log2)
    }

    /// A ring at one contiguous guest address.
    pub fn contiguous(addr: u64, depth_log2: u8, stride_log2: u8) -> Option<Ring> {
        if depth_log2 > MAX_DEPTH_LOG2 || stride_log2 > MAX_STRIDE_LOG2 {
            return None;
        }
        let len = Ring::len_bytes(depth_log2, stride_log2);
        addr.checked_add(len)?;
        Some(Ring {
            runs: vec![Run {
                off: 0,
                dma: addr,
                len,
            }],
            depth_log2,
            stride_log2,
            ptes: 0,
        })
    }

    /// A ring the way the driver describes one: `map_count` pages of
    /// `1 << page_log2` bytes, either directly at `dma_addr` (one page, or
    /// physically contiguous memory) or listed in a table of 64-bit page
    /// addresses at `dma_addr`. The table must have exactly the entries
    /// the ring's size needs, and fit the LIF's page table (`tables`; the
    /// caller charges it once the ring's object exists).
    pub(super) fn described(
        dma: &Dma,
        tables: &PageTables,
        dma_addr: u64,
        map_count: u32,
        page_log2: u8,
        depth_log2: u8,
        stride_log2: u8,
    ) -> Result<Ring, u32> {
        if depth_log2 > MAX_DEPTH_LOG2 || stride_log2 > MAX_STRIDE_LOG2 {
            return Err(st::BAD_ATTR);
        }
        if map_count <= 1 {
            if map_count == 1
                && page_log2 != 0
                && (!PAGE_SHIFTS.contains(&page_log2)
                    || Ring::len_bytes(depth_log2, stride_log2) > 1u64 << page_log2)
            {
                return Err(st::BAD_ATTR);
            }
            return Ring::contiguous(dma_addr, depth_log2, stride_log2).ok_or(st::BAD_ATTR);
        }
        if let Err(e) = tables.check_one(map_count.into()) {
            return Err(e.status());
        }
        let len = Ring::len_bytes(depth_log2, stride_log2);
        let runs = read_page_table(dma, dma_addr, map_count, page_log2, 0, len)?;
        if stride_log2 > page_log2 {
            return Err(st::BAD_ATTR);
        }
        Ok(Ring {
            runs,
            depth_log2,
            stride_log2,
            ptes: map_count,
        })
    }

    /// Entries in the ring.
    pub fn depth(&self) -> u32 {
        1 << self.depth_log2
    }

    /// Bytes per entry.
    pub fn stride(&self) -> usize {
        1 << self.stride_log2
    }

    /// The guest address of entry `index` (taken modulo the depth).
    pub fn slot(&self, index: u32) -> u64 {
        let off = u64::from(index & (self.depth() - 1)) << self.stride_log2;
        // The run holding `off` (runs are sorted and start at offset 0).
        let r = &self.runs[self.runs.partition_point(|r| r.off <= off) - 1];
        r.dma + (off - r.off)
    }
}

/// Reads a page table of `count` entries at `table` describing `len` bytes
/// that start `first_offset` into the first page; the count is checked
/// against the geometry before anything is read (and, by the caller,
/// against the LIF's page table: see [`crate::limits`]). The table is read
/// [`TABLE_CHUNK`] entries at a time, and an entry that cannot be read
/// fails it; the runs kept are the merged pages, at most one per entry.
pub(super) fn read_page_table(
    dma: &Dma,
    table: u64,
    count: u32,
    page_log2: u8,
    first_offset: u64,
    len: u64,
) -> Result<Vec<Run>, u32> {
    if !PAGE_SHIFTS.contains(&page_log2) {
        return Err(st::BAD_ATTR);
    }
    let page = 1u64 << page_log2;
    let needed = first_offset
        .checked_add(len)
        .ok_or(st::BAD_ATTR)?
        .div_ceil(page);
    if u64::from(count) != needed || table.checked_add(u64::from(count) * 8).is_none() {
        return Err(st::BAD_ATTR);
    }
    let mut raw = [0u8; TABLE_CHUNK * 8];
    let (mut at, mut have, mut used) = (0u32, 0usize, 0usize);
    let mut unreadable = false;
    let pages = std::iter::from_fn(|| {
        if at == count || unreadable {
            return None;
        }
        if used == have {
            let n = ((count - at) as usize).min(TABLE_CHUNK);
            if dma
                .read(table + u64::from(at) * 8, &mut raw[..n * 8])
                .is_err()
            {
                unreadable = true;
                return None;
            }
            (have, used) = (n, 0);
        }
        let e = u64::from_le_bytes(raw[used * 8..used * 8 + 8].try_into().expect("8 bytes"));
        (used, at) = (used + 1, at + 1);
        Some(e)
    });
    let mut runs = Vec::new();
    let fits = runs_from_pages(pages, page_log2, first_offset, len, &mut runs);
    if fits.is_none() || unreadable {
        return Err(st::BAD_ATTR);
    }
    runs.shrink_to_fit();
    Ok(runs)
}
