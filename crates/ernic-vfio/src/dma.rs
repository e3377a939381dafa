//! The client's DMA windows (`VFIO_USER_DMA_MAP`), mapped into this
//! process from the file descriptors that come with them, and the device's
//! reads and writes of guest memory through them.
//!
//! Every access is checked against one window: inside it (no wrap), of a
//! direction the window allows, and mapped. The guest may change its
//! memory at any time, so bytes are copied with raw pointer copies, never
//! through references into the mapping.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::proto::{DMA_READ, DMA_WRITE};

/// errno values the replies carry.
pub mod errno {
    /// Invalid argument.
    pub const EINVAL: i32 = 22;
    /// A map over an existing one (the spec names this one).
    pub const EEXIST: i32 = 17;
    /// No room for another window.
    pub const ENOSPC: i32 = 28;
    /// Bad address.
    pub const EFAULT: i32 = 14;
    /// No such device or address.
    pub const ENXIO: i32 = 6;
    /// Not supported.
    pub const ENOTSUP: i32 = 95;
}

/// Why a device access of guest memory failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    /// No window holds the whole range.
    #[error("{len} bytes at guest address {addr:#x} are not inside one DMA window")]
    Unmapped {
        /// Guest address.
        addr: u64,
        /// Bytes.
        len: usize,
    },
    /// The window does not allow this direction.
    #[error("the DMA window at {addr:#x} is not {what}")]
    Denied {
        /// Guest address.
        addr: u64,
        /// "readable" or "writable".
        what: &'static str,
    },
    /// The window came without a file descriptor.
    #[error("the DMA window at {addr:#x} has no memory shared with the server")]
    NotShared {
        /// Guest address.
        addr: u64,
    },
}

struct Window {
    address: u64,
    size: u64,
    flags: u32,
    // The mapping (null when the window came without a descriptor).
    base: *mut u8,
    _fd: Option<OwnedFd>,
}

impl Drop for Window {
    fn drop(&mut self) {
        if !self.base.is_null() {
            // SAFETY: `base` is the start of a mapping of `size` bytes this
            // window made; nothing refers to it after the window goes.
            unsafe { libc::munmap(self.base.cast(), self.size as usize) };
        }
    }
}

// SAFETY: a window's mapping is plain shared memory that lives as long as
// the window; it is reached only through raw-pointer copies, never through
// references, so sharing or sending the window between threads is sound.
unsafe impl Send for Window {}
// SAFETY: as for Send: nothing in a window is mutated after it is made.
unsafe impl Sync for Window {}

/// The DMA windows of the attached client.
pub struct Dma {
    windows: Vec<Arc<Window>>,
    max: usize,
    generation: u64,
}

/// The read-write windows as they were at one moment, for a device engine
/// that reaches guest memory by address. Each window's mapping lives as
/// long as some view holds it, so a window the client has since unmapped
/// stays valid memory (no longer the guest's) until the view is replaced:
/// take a fresh [`Dma::view`] whenever [`Dma::generation`] moves.
#[derive(Clone, Default)]
pub struct DmaView {
    windows: Vec<Arc<Window>>,
}

impl std::fmt::Debug for DmaView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.windows.iter().map(|w| (w.address, w.size)))
            .finish()
    }
}

impl DmaView {
    /// The host address of guest address `addr` and how many bytes from
    /// there (at most `len`) lie in the same window; `None` outside every
    /// read-write window.
    pub fn host(&self, addr: u64, len: u64) -> Option<(std::ptr::NonNull<u8>, u64)> {
        let w = self
            .windows
            .iter()
            .find(|w| addr >= w.address && addr - w.address < w.size)?;
        let off = addr - w.address;
        let n = len.min(w.size - off);
        // In the mapping: off < size; base is non-null for views.
        std::ptr::NonNull::new(w.base.wrapping_add(off as usize)).map(|p| (p, n))
    }
}

impl std::fmt::Debug for Dma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.windows.iter().map(|w| (w.address, w.size)))
            .finish()
    }
}

impl Dma {
    /// No windows; at most `max` at once.
    pub fn new(max: usize) -> Dma {
        Dma {
            windows: Vec::new(),
            max,
            generation: 0,
        }
    }

    /// How many windows are mapped.
    pub fn len(&self) -> usize {
        self.windows.len()
    }

    /// Whether no window is mapped.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Adds a window: `size` bytes of guest address space at `address`,
    /// at `offset` in `fd` when the client shared one. Answers an errno:
    /// `EEXIST` over an existing window, `ENOSPC` past the limit,
    /// `EINVAL` for a range that wraps or a mapping that fails.
    pub fn map(
        &mut self,
        address: u64,
        size: u64,
        offset: u64,
        flags: u32,
        fd: Option<OwnedFd>,
    ) -> Result<(), i32> {
        let end = address.checked_add(size).ok_or(errno::EINVAL)?;
        if size == 0 || usize::try_from(size).is_err() || offset.checked_add(size).is_none() {
            return Err(errno::EINVAL);
        }
        if self
            .windows
            .iter()
            .any(|w| address < w.address + w.size && w.address < end)
        {
            return Err(errno::EEXIST);
        }
        if self.windows.len() >= self.max {
            return Err(errno::ENOSPC);
        }
        let base = match &fd {
            None => std::ptr::null_mut(),
            Some(f) => {
                let mut prot = 0;
                if flags & DMA_READ != 0 {
                    prot |= libc::PROT_READ;
                }
                if flags & DMA_WRITE != 0 {
                    prot |= libc::PROT_WRITE;
                }
                let off = libc::off_t::try_from(offset).map_err(|_| errno::EINVAL)?;
                // A window past the end of its file would fault (SIGBUS) on
                // first touch: refuse it now. (A client that shrinks its
                // file afterwards can still do that to itself; QEMU's
                // memory backends do not.)
                // SAFETY: fstat into a zeroed stat of our own.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: a valid descriptor and a live stat buffer.
                if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } != 0 {
                    return Err(errno::EINVAL);
                }
                if st.st_mode & libc::S_IFMT == libc::S_IFREG && (st.st_size as u64) < offset + size
                {
                    return Err(errno::EINVAL);
                }
                // SAFETY: a fresh shared mapping of the client's descriptor;
                // the kernel checks the descriptor, offset and size, and the
                // result is only used through this window.
                let p = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        size as usize,
                        if prot == 0 { libc::PROT_NONE } else { prot },
                        libc::MAP_SHARED,
                        f.as_raw_fd(),
                        off,
                    )
                };
                if p == libc::MAP_FAILED {
                    return Err(std::io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(errno::EINVAL));
                }
                p.cast()
            }
        };
        self.windows.push(Arc::new(Window {
            address,
            size,
            flags,
            base,
            _fd: fd,
        }));
        self.generation += 1;
        Ok(())
    }

    /// Removes the window that was mapped at exactly `address` and `size`.
    pub fn unmap(&mut self, address: u64, size: u64) -> Result<(), i32> {
        let i = self
            .windows
            .iter()
            .position(|w| w.address == address && w.size == size)
            .ok_or(errno::EINVAL)?;
        self.windows.swap_remove(i);
        self.generation += 1;
        Ok(())
    }

    /// Drops every window (the client left, or reset the maps).
    pub fn clear(&mut self) {
        self.windows.clear();
        self.generation += 1;
    }

    /// Moves whenever a window is mapped or unmapped.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The windows shared with memory, readable and writable, now.
    pub fn view(&self) -> DmaView {
        DmaView {
            windows: self
                .windows
                .iter()
                .filter(|w| {
                    !w.base.is_null() && w.flags & (DMA_READ | DMA_WRITE) == DMA_READ | DMA_WRITE
                })
                .cloned()
                .collect(),
        }
    }

    fn find(
        &self,
        addr: u64,
        len: usize,
        need: u32,
        what: &'static str,
    ) -> Result<*mut u8, DmaError> {
        let end = addr
            .checked_add(len as u64)
            .ok_or(DmaError::Unmapped { addr, len })?;
        let w = self
            .windows
            .iter()
            .find(|w| addr >= w.address && end <= w.address + w.size)
            .ok_or(DmaError::Unmapped { addr, len })?;
        if w.flags & need == 0 {
            return Err(DmaError::Denied { addr, what });
        }
        if w.base.is_null() {
            return Err(DmaError::NotShared { addr });
        }
        // Inside the mapping: addr - w.address + len <= w.size.
        Ok(w.base.wrapping_add((addr - w.address) as usize))
    }

    /// Copies guest memory at `addr` into `buf`.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let p = self.find(addr, buf.len(), DMA_READ, "readable")?;
        // SAFETY: `find` checked the range lies inside a live mapping; the
        // copy goes byte-wise from shared memory into our own buffer.
        unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    /// Copies `data` into guest memory at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let p = self.find(addr, data.len(), DMA_WRITE, "writable")?;
        // SAFETY: as in `read`, the other way.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memfd(len: usize) -> OwnedFd {
        crate::client::shared_memory(c"ernic-test", len as u64).unwrap()
    }

    #[test]
    fn windows_map_check_and_unmap() {
        let mut d = Dma::new(2);
        d.map(
            0x10000,
            0x4000,
            0x1000,
            DMA_READ | DMA_WRITE,
            Some(memfd(0x8000)),
        )
        .unwrap();
        d.write(0x10010, b"hello").unwrap();
        let mut got = [0u8; 5];
        d.read(0x10010, &mut got).unwrap();
        assert_eq!(&got, b"hello");
        // Overlaps are refused with EEXIST, wrapping ranges with EINVAL.
        assert_eq!(
            d.map(0x13000, 0x2000, 0, DMA_READ, None),
            Err(errno::EEXIST)
        );
        assert_eq!(
            d.map(u64::MAX - 1, 4, 0, DMA_READ, None),
            Err(errno::EINVAL)
        );
        // Accesses must sit inside one window.
        assert!(matches!(
            d.read(0x13ffe, &mut got),
            Err(DmaError::Unmapped { .. })
        ));
        assert!(d.read(u64::MAX - 2, &mut got).is_err());
        // A read-only window refuses writes; one without memory refuses both.
        d.map(0x20000, 0x1000, 0, DMA_READ, Some(memfd(0x1000)))
            .unwrap();
        assert!(matches!(
            d.write(0x20000, b"x"),
            Err(DmaError::Denied { .. })
        ));
        assert_eq!(
            d.map(0x30000, 0x1000, 0, DMA_READ, None),
            Err(errno::ENOSPC)
        );
        d.unmap(0x20000, 0x1000).unwrap();
        d.map(0x30000, 0x1000, 0, DMA_READ, None).unwrap();
        assert!(matches!(
            d.read(0x30000, &mut got),
            Err(DmaError::NotShared { .. })
        ));
        assert_eq!(
            d.unmap(0x10000, 0x1000),
            Err(errno::EINVAL),
            "must match exactly"
        );
        // A view holds the read-write windows that have memory, and keeps
        // a window's mapping alive after the client unmaps it.
        let g = d.generation();
        let v = d.view();
        let (p, n) = v.host(0x10010, 0x10000).unwrap();
        assert_eq!(n, 0x4000 - 0x10);
        assert!(v.host(0x30000, 1).is_none(), "no memory behind it");
        assert!(v.host(0x0fff, 1).is_none());
        d.clear();
        assert!(d.is_empty());
        assert_ne!(d.generation(), g);
        // SAFETY: the view still holds the window's mapping.
        assert_eq!(unsafe { std::ptr::read(p.as_ptr()) }, b'h');
        drop(v);
        // A window longer than its file is refused before it can fault.
        assert_eq!(
            d.map(0x40000, 0x2000, 0, DMA_READ, Some(memfd(0x1000))),
            Err(errno::EINVAL)
        );
    }
}
