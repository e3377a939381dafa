//! Guest memory as the core reaches it: the client's read-write DMA
//! windows, a view the engine maps addresses through (`DmaMemory`).

use std::ptr::NonNull;

use ernic_core::{DmaMemory, MemError};
use ernic_vfio::dma::DmaView;

/// Guest memory as the core reaches it: the client's read-write DMA
/// windows at the last time they changed.
#[derive(Debug, Default)]
pub struct GuestMemory(pub(super) DmaView);

// SAFETY: `DmaView::host` answers a pointer inside a mapping the view holds
// alive (each window is reference-counted), valid for reads and writes of
// the length it answers until the view is replaced, which takes `&mut`.
unsafe impl DmaMemory for GuestMemory {
    fn map(&self, addr: u64, len: u64) -> Result<(NonNull<u8>, usize), MemError> {
        if addr.checked_add(len).is_none() {
            return Err(MemError::Wraps { addr, len });
        }
        let (p, n) = self.0.host(addr, len).ok_or(MemError::Unmapped { addr })?;
        Ok((p, n as usize))
    }
}
