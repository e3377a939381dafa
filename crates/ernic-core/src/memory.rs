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
    /// Start address → length of every live region.
    regions: BTreeMap<u64, u64>,
}

impl ProcessMemory {
    /// An empty registry.
    pub fn new() -> ProcessMemory {
        ProcessMemory::default()
    }

    /// Makes `len` bytes at `base` reachable.
    ///
    /// # Safety
    ///
    /// `base..base + len` must be valid for reads and writes and stay so until
    /// [`remove`](ProcessMemory::remove) is called with `base`. Regions must
    /// not overlap.
    pub unsafe fn add(&mut self, base: NonNull<u8>, len: usize) {
        self.regions.insert(base.as_ptr() as u64, len as u64);
    }

    /// Makes the region that starts at `base` unreachable again.
    pub fn remove(&mut self, base: NonNull<u8>) {
        self.regions.remove(&(base.as_ptr() as u64));
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
        let (&base, &rlen) = self
            .regions
            .range(..=addr)
            .next_back()
            .ok_or(MemError::Unmapped { addr })?;
        let off = addr - base;
        if off >= rlen {
            return Err(MemError::Unmapped { addr });
        }
        let n = len.min(rlen - off).min(usize::MAX as u64) as usize;
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
        mem.remove(base);
        assert!(mem.map(a, 1).is_err());
    }
}
