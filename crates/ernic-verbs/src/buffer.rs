//! Page-aligned, zeroed buffers that the device may read and write.
//!
//! A [`Buffer`] is allocated by the fabric and added to the engine's
//! [`ProcessMemory`](ernic_core::ProcessMemory) registry for its whole life;
//! it is removed from the registry (under the engine lock) before it is freed,
//! so the device can never reach freed memory.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// Alignment of every buffer: one page.
pub const PAGE: usize = 4096;

/// An owned, page-aligned, zeroed allocation.
#[derive(Debug)]
pub(crate) struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
    /// Allocated here (freed on drop), or the caller's memory.
    owned: bool,
}

// SAFETY: the buffer is plain memory owned by this value; every access goes
// through raw pointers under the fabric's rules (engine lock, or the
// documented racy polling reads), never through shared references.
unsafe impl Send for Buffer {}
// SAFETY: as above: `&Buffer` only hands out the raw pointer.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Allocates `len` zeroed bytes (at least one page is reserved).
    pub fn new(len: usize) -> Option<Buffer> {
        let layout = Layout::from_size_align(len.max(1).next_multiple_of(PAGE), PAGE).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(Buffer {
            ptr,
            len,
            owned: true,
        })
    }

    /// The caller's memory, never freed here.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` must stay valid for reads and writes for the
    /// buffer's whole life.
    pub unsafe fn borrowed(ptr: NonNull<u8>, len: usize) -> Buffer {
        Buffer {
            ptr,
            len,
            owned: false,
        }
    }

    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    fn layout(&self) -> Layout {
        Layout::from_size_align(self.len.max(1).next_multiple_of(PAGE), PAGE)
            .expect("checked at allocation")
    }

    /// Copies `out.len()` bytes from offset `off` (bounds checked by the caller).
    pub fn read(&self, off: usize, out: &mut [u8]) {
        assert!(off.checked_add(out.len()).is_some_and(|e| e <= self.len));
        // SAFETY: the range is inside the allocation (asserted above), and
        // `out` is a distinct Rust slice, so the two cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(off), out.as_mut_ptr(), out.len())
        };
    }

    /// Copies `data` to offset `off` (bounds checked by the caller).
    pub fn write(&self, off: usize, data: &[u8]) {
        assert!(off.checked_add(data.len()).is_some_and(|e| e <= self.len));
        // SAFETY: the range is inside the allocation, and `data` is a distinct
        // Rust slice, so the two cannot overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(off), data.len())
        };
    }

    /// Runs `f` on `len` bytes at `off` as a slice (bounds checked by the
    /// caller): for filling or taking a region's bytes in place, without a
    /// copy through another buffer.
    ///
    /// The caller holds the device's exclusive section ([`Provider::exclusive`]),
    /// so no operation of this process's device touches the memory while
    /// the slice lives; the caller's own work requests must not name the
    /// range then either (it is not registered for peers' access, or none is
    /// in flight to it).
    ///
    /// [`Provider::exclusive`]: crate::Provider::exclusive
    pub fn with_slice(&self, off: usize, len: usize, f: &mut dyn FnMut(&mut [u8])) {
        assert!(off.checked_add(len).is_some_and(|e| e <= self.len));
        // SAFETY: the range is inside the allocation (asserted above), which
        // lives as long as `self`. Nothing else in this process reads or
        // writes it while the slice lives: the device only under the
        // exclusive section the caller holds, and the caller names the range
        // in no work request in flight (this function's contract), so the
        // one `&mut` is the only access.
        let slice = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len) };
        f(slice);
    }

    /// Reads one byte with a volatile load, for polling memory a peer writes.
    pub fn read_volatile(&self, off: usize) -> u8 {
        assert!(off < self.len);
        // SAFETY: `off` is inside the allocation. The device may write this
        // byte concurrently from another thread, as an RDMA NIC writes host
        // memory; a volatile byte load observes either value, which is what
        // polling needs.
        unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(off)) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // SAFETY: an owned `ptr` came from `alloc_zeroed` with this same
        // layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout()) };
    }
}
