//! Bounce buffers a provider writes into while we read other parts of
//! them: rx and tx slots. Every access goes through raw pointers, so no
//! Rust reference ever covers bytes the device may be writing.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// A page-aligned, zeroed allocation of `slots` slots of `slot` bytes.
#[derive(Debug)]
pub(crate) struct Slots {
    ptr: NonNull<u8>,
    slot: usize,
    count: usize,
    /// Where the memory came from when a provider gave it (its device
    /// reaches no other memory); `None`: this value's own allocation.
    given: Option<crate::provider::Buffer>,
}

// SAFETY: the memory is owned by this value and reached only through raw
// pointers (`read`, `write`, `addr`); sending it between threads moves
// nothing that is thread-bound.
unsafe impl Send for Slots {}

impl Slots {
    fn layout(slot: usize, count: usize) -> Layout {
        Layout::from_size_align((slot * count).max(1).next_multiple_of(4096), 4096)
            .expect("a small layout")
    }

    /// `count` slots of `slot` bytes (both small: the caller's constants).
    pub fn new(slot: usize, count: usize) -> Slots {
        let layout = Slots::layout(slot, count);
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })
            .unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Slots {
            ptr,
            slot,
            count,
            given: None,
        }
    }

    /// As [`new`](Slots::new), in memory `p` gives when its devices reach
    /// only such memory ([`Provider::alloc_buffer`]).
    ///
    /// [`Provider::alloc_buffer`]: crate::provider::Provider::alloc_buffer
    pub fn new_for(
        p: &dyn crate::provider::Provider,
        slot: usize,
        count: usize,
    ) -> Result<Slots, crate::provider::ProviderError> {
        let len = Slots::layout(slot, count).size();
        Ok(match p.alloc_buffer(len)? {
            Some(mut b) => Slots {
                ptr: NonNull::new(b.as_mut_ptr()).expect("a buffer's pointer is not null"),
                slot,
                count,
                given: Some(b),
            },
            None => Slots::new(slot, count),
        })
    }

    /// The whole area's start and length, for registration.
    pub fn area(&self) -> (*mut u8, usize) {
        (self.ptr.as_ptr(), self.slot * self.count)
    }

    /// Slot size.
    pub fn slot_len(&self) -> usize {
        self.slot
    }

    /// The address of slot `i`.
    pub fn addr(&self, i: usize) -> u64 {
        assert!(i < self.count);
        self.ptr.as_ptr() as u64 + (i * self.slot) as u64
    }

    /// Copies the first `out.len()` bytes of slot `i`.
    pub fn read(&self, i: usize, out: &mut [u8]) {
        assert!(i < self.count && out.len() <= self.slot);
        // SAFETY: the range lies inside slot `i` of our allocation (asserted),
        // `out` is a distinct Rust slice, and the provider is done with a slot
        // whose completion we are handling.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(i * self.slot),
                out.as_mut_ptr(),
                out.len(),
            )
        };
    }

    /// Copies `len` bytes of slot `i` to `dst`.
    ///
    /// # Safety
    ///
    /// `dst..dst + len` must be valid for writes and not overlap the slots.
    pub unsafe fn read_to(&self, i: usize, dst: *mut u8, len: usize) {
        assert!(i < self.count && len <= self.slot);
        // SAFETY: the source lies inside slot `i`; the caller vouches for
        // the destination.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(i * self.slot), dst, len) };
    }

    /// Fills the start of slot `i` with `data`.
    pub fn write(&self, i: usize, data: &[u8]) {
        assert!(i < self.count && data.len() <= self.slot);
        // SAFETY: the range lies inside slot `i`, which is free (not posted),
        // and `data` is a distinct Rust slice.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.ptr.as_ptr().add(i * self.slot),
                data.len(),
            )
        };
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        if self.given.is_some() {
            // The provider's buffer goes with this value.
            return;
        }
        // SAFETY: `ptr` came from `alloc_zeroed` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), Slots::layout(self.slot, self.count)) };
    }
}
