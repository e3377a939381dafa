//! The memory abstraction: how the device reaches the bytes a work request names.
//!
//! The engine never dereferences an address itself. It asks a [`DmaMemory`] to
//! turn a DMA address range into host pointers, one contiguous run at a time,
//! and copies with `ptr::copy` between runs (no bounce buffer). Two
//! implementations exist: [`ProcessMemory`] here, for host programs that
//! register their own buffers (the native verbs front end), and guest memory
//! shared over vfio-user (the ionic front end).
//!
//! Memory reached this way may be written concurrently by its owner (a guest,
//! or the application thread that registered it), so nothing here ever forms a
//! `&[u8]` over it.

use std::collections::BTreeMap;
use std::ptr::NonNull;

/// A DMA address could not be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// No mapped memory contains the address.
    #[error("DMA address {addr:#x} is not in mapped memory")]
    Unmapped {
        /// The address.
        addr: u64,
    },
    /// The range runs past the end of the address space.
    #[error("DMA range at {addr:#x} of {len} bytes wraps around the address space")]
    Wraps {
        /// First address.
        addr: u64,
        /// Length.
        len: u64,
    },
}

/// Memory the device reaches by DMA address.
///
/// # Safety
///
/// An implementation promises that when [`map`](DmaMemory::map) returns
/// `Ok((ptr, n))`, `ptr` is valid for reads and writes of `n` bytes (with
/// `0 < n <= len`) for as long as the implementation is not mutated: the
/// engine only uses the pointer before its next call that takes the memory by
/// `&mut`. The memory may be shared with other writers; the engine accesses it
/// only through raw pointers.
pub unsafe trait DmaMemory {
    /// Host address of `addr`, and how many bytes from there (at most `len`,
    /// at least 1) are contiguous in host memory. `len` must be non-zero.
    fn map(&self, addr: u64, len: u64) -> Result<(NonNull<u8>, usize), MemError>;
}

/// Process memory: DMA addresses are host virtual addresses, and only regions
/// that were added (and not yet removed) can be reached.
///
/// The registry is what makes the engine's copies sound: a stale MR that still
/// names freed memory fails with [`MemError::Unmapped`] instead of touching it.
#[derive(Debug, Default)]
pub struct ProcessMemory {
    /// (start, length) of every live region → how many times it was added.
    /// Regions may overlap (one buffer registered twice, or a buffer and a
    /// slice of it).
    regions: BTreeMap<(u64, u64), u32>,
    /// The longest region ever added: a lookup scans no further back.
    longest: u64,
}

impl ProcessMemory {
    /// An empty registry.
    pub fn new() -> ProcessMemory {
        ProcessMemory::default()
    }

    /// Makes `len` bytes at `base` reachable. Adding the same region twice
    /// needs two removes.
    ///
    /// # Safety
    ///
    /// `base..base + len` must be valid for reads and writes and stay so until
    /// [`remove`](ProcessMemory::remove) is called with `base` and `len`.
    pub unsafe fn add(&mut self, base: NonNull<u8>, len: usize) {
        *self
            .regions
            .entry((base.as_ptr() as u64, len as u64))
            .or_insert(0) += 1;
        self.longest = self.longest.max(len as u64);
    }

    /// Takes back one [`add`](ProcessMemory::add) of `len` bytes at `base`.
    pub fn remove(&mut self, base: NonNull<u8>, len: usize) {
        let key = (base.as_ptr() as u64, len as u64);
        if let Some(n) = self.regions.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                self.regions.remove(&key);
            }
        }
    }

    /// Number of live regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// Whether no region is live.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }
}

// SAFETY: `map` only returns pointers inside regions added with `add`, whose
// contract keeps them valid until `remove`, which takes `&mut self`.
unsafe impl DmaMemory for ProcessMemory {
    fn map(&self, addr: u64, len: u64) -> Result<(NonNull<u8>, usize), MemError> {
        debug_assert!(len > 0);
        if addr.checked_add(len).is_none() {
            return Err(MemError::Wraps { addr, len });
        }
        // The region reaching furthest past `addr` among those that start
        // at or before it; none starting more than `longest` before it can.
        let floor = addr.saturating_sub(self.longest);
        let reach = self
            .regions
            .range((floor, 0)..=(addr, u64::MAX))
            .map(|(&(base, rlen), _)| base + rlen)
            .filter(|&end| end > addr)
            .max()
            .ok_or(MemError::Unmapped { addr })?;
        let n = len.min(reach - addr).min(usize::MAX as u64) as usize;
        let ptr = NonNull::new(addr as *mut u8).ok_or(MemError::Unmapped { addr })?;
        Ok((ptr, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_memory_maps_only_live_regions() {
        let mut buf = vec![0u8; 64];
        let base = NonNull::new(buf.as_mut_ptr()).unwrap();
        let mut mem = ProcessMemory::new();
        let a = base.as_ptr() as u64;
        assert_eq!(mem.map(a, 8), Err(MemError::Unmapped { addr: a }));
        // SAFETY: `buf` outlives the registry entry, which is removed below.
        unsafe { mem.add(base, 64) };
        let (p, n) = mem.map(a + 60, 100).unwrap();
        assert_eq!(p.as_ptr() as u64, a + 60);
        assert_eq!(n, 4);
        assert_eq!(mem.map(a + 64, 1), Err(MemError::Unmapped { addr: a + 64 }));
        assert!(matches!(mem.map(u64::MAX, 2), Err(MemError::Wraps { .. })));
        mem.remove(base, 64);
        assert!(mem.map(a, 1).is_err());
    }

    #[test]
    fn overlapping_and_repeated_regions_are_counted() {
        let mut buf = vec![0u8; 256];
        let base = NonNull::new(buf.as_mut_ptr()).unwrap();
        let a = base.as_ptr() as u64;
        let mid = NonNull::new(base.as_ptr().wrapping_add(64)).unwrap();
        let mut mem = ProcessMemory::new();
        // SAFETY: `buf` outlives every entry; all are removed below.
        unsafe {
            mem.add(base, 128);
            mem.add(base, 128);
            mem.add(mid, 192);
        }
        // From inside both, the longer reach wins.
        assert_eq!(mem.map(a + 100, 1000).unwrap().1, 156);
        mem.remove(mid, 192);
        assert_eq!(mem.map(a + 100, 1000).unwrap().1, 28);
        mem.remove(base, 128);
        assert_eq!(mem.map(a, 8).unwrap().1, 8, "added twice, removed once");
        mem.remove(base, 128);
        assert!(mem.map(a, 8).is_err());
        assert!(mem.is_empty());
    }
}
