//! The client's DMA windows (`VFIO_USER_DMA_MAP`), mapped into this
//! process from the file descriptors that come with them, and the device's
//! reads and writes of guest memory through them.
//!
//! Every access is checked against one window: inside it (no wrap), of a
//! direction the window allows, and mapped. The guest may change its
//! memory at any time, so bytes are copied with raw pointer copies, never
//! through references into the mapping.
//!
//! # Memory that can vanish
//!
//! A shared mapping faults (SIGBUS) wherever its file no longer reaches,
//! so a client that shrinks the file behind a window could kill the
//! server with the next DMA. The choice made here: **refuse memory that
//! is not sealed against shrinking** (`F_SEAL_SHRINK`, checked with
//! `F_GET_SEALS` at DMA_MAP; [`MapError::Unsealed`], errno `EPERM`), with
//! an option to take it anyway ([`Unsealed::Guard`], `ernic-server
//! --allow-unsealed-memory`) under a SIGBUS handler ([`crate::guard`]).
//! Why refusal first: a sealed file cannot shrink, so one check at map
//! time makes every later access safe at no cost, and QEMU's
//! `memory-backend-memfd` seals by default (`seal=on`: grow, shrink and
//! seal), as ernic's own client does ([`crate::client::shared_memory`]).
//! The handler is the fallback for memory that cannot be sealed (a file
//! on hugetlbfs, a plain file): it is process-wide, and the one request
//! that meets the vanished memory completes against zero pages rather
//! than failing cleanly; every later access of that window fails with
//! [`DmaError::Vanished`]. A descriptor that is not a regular file is
//! treated as unsealed.
//!
//! Limits: at most the `max` windows given to [`Dma::new`] (the
//! `max_dma_maps` announced), each at most the size of its file from its
//! offset; at most [`crate::guard::SLOTS`] guarded windows at once. A
//! window keeps no descriptor open (the mapping holds the file).

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::guard;
use crate::proto::{DMA_READ, DMA_WRITE};

/// errno values the replies carry (Linux's, from `libc`).
pub mod errno {
    /// Operation not permitted (memory not sealed against shrinking).
    pub const EPERM: i32 = libc::EPERM;
    /// Invalid argument.
    pub const EINVAL: i32 = libc::EINVAL;
    /// A map over an existing one (the spec names this one).
    pub const EEXIST: i32 = libc::EEXIST;
    /// No room for another window.
    pub const ENOSPC: i32 = libc::ENOSPC;
    /// Bad address.
    pub const EFAULT: i32 = libc::EFAULT;
    /// No such device or address.
    pub const ENXIO: i32 = libc::ENXIO;
    /// Not supported.
    pub const ENOTSUP: i32 = libc::ENOTSUP;
}

/// What to do with memory whose file the client could shrink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unsealed {
    /// Refuse the map ([`MapError::Unsealed`]).
    #[default]
    Refuse,
    /// Map it under the SIGBUS guard ([`crate::guard`]).
    Guard,
}

/// Why a DMA_MAP was refused; [`MapError::errno`] is what the reply says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// Empty, wrapping, or too large for this machine's addresses.
    #[error("{size} bytes at guest address {address:#x} (file offset {offset:#x}) is not a range")]
    BadRange {
        /// Guest address.
        address: u64,
        /// Bytes.
        size: u64,
        /// Offset in the file.
        offset: u64,
    },
    /// Overlaps a window already mapped.
    #[error("{size} bytes at guest address {address:#x} overlap the window at {other:#x}")]
    Overlap {
        /// Guest address.
        address: u64,
        /// Bytes.
        size: u64,
        /// The window it overlaps.
        other: u64,
    },
    /// As many windows as announced are mapped.
    #[error("{max} DMA windows are mapped already (the max_dma_maps announced)")]
    Full {
        /// The limit.
        max: usize,
    },
    /// The descriptor cannot be inspected.
    #[error("the descriptor of the window at {address:#x} cannot be inspected (errno {errno})")]
    Stat {
        /// Guest address.
        address: u64,
        /// What fstat said.
        errno: i32,
    },
    /// The window reaches past the end of its file (it would fault).
    #[error(
        "the window at {address:#x} ({size} bytes from file offset {offset:#x}) runs past the end of its {file_len}-byte file"
    )]
    PastEnd {
        /// Guest address.
        address: u64,
        /// Bytes.
        size: u64,
        /// Offset in the file.
        offset: u64,
        /// The file's length.
        file_len: u64,
    },
    /// The file is not sealed against shrinking and such memory is refused.
    #[error(
        "the memory of the window at {address:#x} ({size} bytes) is not sealed against shrinking \
         (F_SEAL_SHRINK): seal it (QEMU's memory-backend-memfd does, with seal=on, its default) \
         or start the server with --allow-unsealed-memory"
    )]
    Unsealed {
        /// Guest address.
        address: u64,
        /// Bytes.
        size: u64,
    },
    /// Too many unsealed windows to guard.
    #[error(
        "the unsealed window at {address:#x} cannot be guarded: {max} unsealed windows are mapped already"
    )]
    GuardFull {
        /// Guest address.
        address: u64,
        /// The limit.
        max: usize,
    },
    /// mmap(2) failed.
    #[error("mapping the window at {address:#x} ({size} bytes) failed (errno {errno})")]
    Mmap {
        /// Guest address.
        address: u64,
        /// Bytes.
        size: u64,
        /// What mmap said.
        errno: i32,
    },
}

impl MapError {
    /// The errno the DMA_MAP reply reports.
    pub fn errno(&self) -> i32 {
        match self {
            MapError::Overlap { .. } => errno::EEXIST,
            MapError::Full { .. } | MapError::GuardFull { .. } => errno::ENOSPC,
            MapError::Unsealed { .. } => errno::EPERM,
            MapError::Mmap { errno, .. } => *errno,
            MapError::BadRange { .. } | MapError::Stat { .. } | MapError::PastEnd { .. } => {
                errno::EINVAL
            }
        }
    }
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
    /// The client shrank the file behind the window (a guarded window).
    #[error("the memory behind guest address {addr:#x} vanished: the client shrank its file")]
    Vanished {
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
    // The guard slot of an unsealed window.
    guard: Option<usize>,
    // Its vanishing was logged.
    reported: AtomicBool,
}

impl Window {
    fn vanished(&self) -> bool {
        self.guard.is_some_and(guard::faulted)
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        if let Some(g) = self.guard {
            guard::unregister(g);
        }
        if !self.base.is_null() {
            // SAFETY: `base` is the start of a mapping of `size` bytes this
            // window made (or the guard's zero pages over all of it);
            // nothing refers to it after the window goes.
            unsafe { libc::munmap(self.base.cast(), self.size as usize) };
        }
    }
}

// SAFETY: a window's mapping is plain shared memory that lives as long as
// the window; it is reached only through raw-pointer copies, never through
// references, so sharing or sending the window between threads is sound.
unsafe impl Send for Window {}
// SAFETY: as for Send: nothing in a window is mutated after it is made
// but an atomic flag.
unsafe impl Sync for Window {}

/// Whether `fd` is sealed against shrinking: a regular file whose seals
/// include `F_SEAL_SHRINK`.
fn sealed(fd: &OwnedFd) -> bool {
    // SAFETY: F_GET_SEALS on a valid descriptor; no argument.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    seals >= 0 && seals & libc::F_SEAL_SHRINK != 0
}

/// The DMA windows of the attached client.
pub struct Dma {
    windows: Vec<Arc<Window>>,
    max: usize,
    generation: u64,
    unsealed: Unsealed,
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
        if w.vanished() {
            return None;
        }
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
    /// No windows; at most `max` at once; memory not sealed against
    /// shrinking is refused.
    pub fn new(max: usize) -> Dma {
        Dma {
            windows: Vec::new(),
            max,
            generation: 0,
            unsealed: Unsealed::Refuse,
        }
    }

    /// What to do with memory the client could shrink (see the module's
    /// note); from the next map on.
    pub fn set_unsealed(&mut self, policy: Unsealed) {
        self.unsealed = policy;
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
    /// at `offset` in `fd` when the client shared one. The descriptor is
    /// closed once mapped.
    pub fn map(
        &mut self,
        address: u64,
        size: u64,
        offset: u64,
        flags: u32,
        fd: Option<OwnedFd>,
    ) -> Result<(), MapError> {
        let bad = MapError::BadRange {
            address,
            size,
            offset,
        };
        let end = address.checked_add(size).ok_or(bad.clone())?;
        if size == 0 || usize::try_from(size).is_err() || offset.checked_add(size).is_none() {
            return Err(bad);
        }
        if let Some(w) = self
            .windows
            .iter()
            .find(|w| address < w.address + w.size && w.address < end)
        {
            return Err(MapError::Overlap {
                address,
                size,
                other: w.address,
            });
        }
        if self.windows.len() >= self.max {
            return Err(MapError::Full { max: self.max });
        }
        let (base, guarded) = match &fd {
            None => (std::ptr::null_mut(), None),
            Some(f) => {
                let mut prot = 0;
                if flags & DMA_READ != 0 {
                    prot |= libc::PROT_READ;
                }
                if flags & DMA_WRITE != 0 {
                    prot |= libc::PROT_WRITE;
                }
                let off = libc::off_t::try_from(offset).map_err(|_| bad.clone())?;
                // SAFETY: fstat into a zeroed stat of our own.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: a valid descriptor and a live stat buffer.
                if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } != 0 {
                    return Err(MapError::Stat {
                        address,
                        errno: std::io::Error::last_os_error()
                            .raw_os_error()
                            .unwrap_or(errno::EINVAL),
                    });
                }
                let regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
                // A window past the end of its file would fault (SIGBUS) on
                // first touch: refuse it now.
                if regular && (st.st_size as u64) < offset + size {
                    return Err(MapError::PastEnd {
                        address,
                        size,
                        offset,
                        file_len: st.st_size as u64,
                    });
                }
                // A file that can shrink later would fault then (the
                // module's note).
                let guard = !(regular && sealed(f));
                if guard && self.unsealed == Unsealed::Refuse {
                    return Err(MapError::Unsealed { address, size });
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
                    return Err(MapError::Mmap {
                        address,
                        size,
                        errno: std::io::Error::last_os_error()
                            .raw_os_error()
                            .unwrap_or(errno::EINVAL),
                    });
                }
                let slot = if guard {
                    match guard::register(p.cast(), size as usize) {
                        Some(i) => Some(i),
                        None => {
                            // SAFETY: the mapping just made, used by no one.
                            unsafe { libc::munmap(p, size as usize) };
                            return Err(MapError::GuardFull {
                                address,
                                max: guard::SLOTS,
                            });
                        }
                    }
                } else {
                    None
                };
                (p.cast(), slot)
            }
        };
        drop(fd);
        self.windows.push(Arc::new(Window {
            address,
            size,
            flags,
            base,
            guard: guarded,
            reported: AtomicBool::new(false),
        }));
        self.generation += 1;
        Ok(())
    }

    /// A window whose memory vanished since the last call (guest address
    /// and size), to be logged once; `None` when there is none new.
    pub fn take_vanished(&self) -> Option<(u64, u64)> {
        self.windows
            .iter()
            .find(|w| w.vanished() && !w.reported.swap(true, Ordering::Relaxed))
            .map(|w| (w.address, w.size))
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
    ) -> Result<(*mut u8, &Window), DmaError> {
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
        if w.vanished() {
            return Err(DmaError::Vanished { addr });
        }
        // Inside the mapping: addr - w.address + len <= w.size.
        Ok((w.base.wrapping_add((addr - w.address) as usize), w))
    }

    /// Copies guest memory at `addr` into `buf`.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let (p, w) = self.find(addr, buf.len(), DMA_READ, "readable")?;
        // SAFETY: `find` checked the range lies inside a live mapping; the
        // copy goes byte-wise from shared memory into our own buffer.
        unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len()) };
        // Vanished during the copy: what was read is zeros, not the guest's.
        if w.vanished() {
            return Err(DmaError::Vanished { addr });
        }
        Ok(())
    }

    /// Copies `data` into guest memory at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let (p, w) = self.find(addr, data.len(), DMA_WRITE, "writable")?;
        // SAFETY: as in `read`, the other way.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        if w.vanished() {
            return Err(DmaError::Vanished { addr });
        }
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
        let errno_of = |r: Result<(), MapError>| r.map_err(|e| e.errno());
        assert_eq!(
            errno_of(d.map(0x13000, 0x2000, 0, DMA_READ, None)),
            Err(errno::EEXIST)
        );
        assert_eq!(
            errno_of(d.map(u64::MAX - 1, 4, 0, DMA_READ, None)),
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
            errno_of(d.map(0x30000, 0x1000, 0, DMA_READ, None)),
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
        assert!(matches!(
            d.map(0x40000, 0x2000, 0, DMA_READ, Some(memfd(0x1000))),
            Err(MapError::PastEnd {
                file_len: 0x1000,
                ..
            })
        ));
    }

    // Memory its owner can shrink is refused unless guarded; guarded, a
    // shrink makes the window's accesses fail instead of raising SIGBUS.
    #[test]
    fn unsealed_memory_is_refused_or_guarded() {
        use std::os::fd::FromRawFd;
        let unsealed = || crate::client::unsealed_memory(c"ernic-unsealed", 0x4000).unwrap();
        let mut d = Dma::new(4);
        let e = d
            .map(0x10000, 0x4000, 0, DMA_READ | DMA_WRITE, Some(unsealed()))
            .unwrap_err();
        assert!(matches!(
            e,
            MapError::Unsealed {
                address: 0x10000,
                size: 0x4000
            }
        ));
        assert_eq!(e.errno(), errno::EPERM);
        assert!(e.to_string().contains("--allow-unsealed-memory"), "{e}");
        d.set_unsealed(Unsealed::Guard);
        let fd = unsealed();
        // SAFETY: a duplicate of our own descriptor, owned by the File.
        let file = unsafe { std::fs::File::from_raw_fd(libc::dup(fd.as_raw_fd())) };
        d.map(0x10000, 0x4000, 0, DMA_READ | DMA_WRITE, Some(fd))
            .unwrap();
        d.write(0x10000, b"before").unwrap();
        let view = d.view();
        assert!(view.host(0x10000, 8).is_some());
        file.set_len(0).unwrap();
        let mut got = [0u8; 6];
        assert_eq!(
            d.read(0x10000, &mut got),
            Err(DmaError::Vanished { addr: 0x10000 })
        );
        assert_eq!(got, [0; 6], "read from the zero pages, not the guest");
        assert_eq!(d.take_vanished(), Some((0x10000, 0x4000)));
        assert_eq!(d.take_vanished(), None, "reported once");
        assert!(
            matches!(d.write(0x10008, b"x"), Err(DmaError::Vanished { .. })),
            "later accesses fail before they touch memory"
        );
        assert!(view.host(0x10000, 8).is_none());
    }
}
