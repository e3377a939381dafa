//! Memory a server shares with its client for a region's sparse-mmap
//! areas: the server makes the file, maps it, and sends its descriptor
//! with the `VFIO_USER_DEVICE_GET_REGION_INFO` reply; the client maps the
//! same pages. Writes by one side are seen by the other without a socket
//! message — which is the point, and also why every access here is a
//! volatile 64-bit load or store of an aligned word inside the mapping.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// A shared mapping of `len` bytes of a file, from `offset`.
#[derive(Debug)]
pub struct Mapping {
    base: *mut u64,
    len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value, reached
// only through word-sized volatile accesses; no thread affinity.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` at `offset`, readable and writable.
    /// `offset` and `len` must be multiples of the page size.
    pub fn new(fd: &impl AsRawFd, offset: u64, len: usize) -> io::Result<Mapping> {
        if len == 0 || len % 4096 != 0 || offset % 4096 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a shared mapping of {len} bytes at {offset:#x} is not whole pages"),
            ));
        }
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a fresh shared mapping of a descriptor we were given; the
        // kernel checks the descriptor, offset and length, and the result
        // is reached only through this value.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            base: p.cast(),
            len,
        })
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never, for a value that exists).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` in at `offset`; `false` (and nothing written) when it
    /// does not fit.
    pub fn write(&self, offset: usize, data: &[u8]) -> bool {
        if offset.checked_add(data.len()).is_none_or(|e| e > self.len) {
            return false;
        }
        // SAFETY: the range is inside the mapping (checked above); the copy
        // goes through raw pointers, never a reference into shared memory.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.base.cast::<u8>().add(offset),
                data.len(),
            )
        };
        true
    }

    /// Copies out `buf.len()` bytes at `offset`; `false` when they are not
    /// all inside the mapping.
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> bool {
        if offset.checked_add(buf.len()).is_none_or(|e| e > self.len) {
            return false;
        }
        // SAFETY: as in `write`, the other way.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.cast::<u8>().add(offset),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        true
    }

    /// Sets `len` bytes at `offset` to `byte`; `false` (and nothing
    /// written) when they do not fit.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> bool {
        if offset.checked_add(len).is_none_or(|e| e > self.len) {
            return false;
        }
        // SAFETY: the range is inside the mapping (checked above).
        unsafe { std::ptr::write_bytes(self.base.cast::<u8>().add(offset), byte, len) };
        true
    }

    /// The address of the byte at `offset` in this process (for a caller
    /// that copies with raw pointers itself); `None` outside the mapping.
    /// It stays valid while the mapping lives.
    pub fn ptr_at(&self, offset: usize) -> Option<std::ptr::NonNull<u8>> {
        if offset >= self.len {
            return None;
        }
        // SAFETY: `offset` is inside the mapping (checked above).
        std::ptr::NonNull::new(unsafe { self.base.cast::<u8>().add(offset) })
    }

    fn word(&self, offset: usize) -> Option<*mut u64> {
        if offset % 8 != 0 || offset.checked_add(8)? > self.len {
            return None;
        }
        // SAFETY: offset + 8 is inside the mapping (checked above).
        Some(unsafe { self.base.add(offset / 8) })
    }

    /// The aligned word at `offset`; `None` outside the mapping or
    /// unaligned.
    pub fn load(&self, offset: usize) -> Option<u64> {
        let p = self.word(offset)?;
        // SAFETY: an aligned word inside a live mapping; the other side
        // may write it at any time, hence the volatile read.
        Some(unsafe { std::ptr::read_volatile(p) })
    }

    /// Atomically replaces the aligned word at `offset` with `value`;
    /// answers what it held (`None` outside the mapping or unaligned). The
    /// other side's plain aligned 64-bit stores are atomic on the machines
    /// this runs on, so a store is either seen whole here or left for the
    /// next swap.
    pub fn swap(&self, offset: usize, value: u64) -> Option<u64> {
        let p = self.word(offset)?;
        // SAFETY: an aligned word inside a live mapping that this value
        // owns; it is only ever accessed through this pointer as a whole
        // word (atomically here, by aligned stores on the other side).
        let a = unsafe { std::sync::atomic::AtomicU64::from_ptr(p) };
        Some(a.swap(value, std::sync::atomic::Ordering::AcqRel))
    }

    /// Stores `value` at the aligned `offset`; `false` outside the mapping
    /// or unaligned.
    pub fn store(&self, offset: usize, value: u64) -> bool {
        let Some(p) = self.word(offset) else {
            return false;
        };
        // SAFETY: as in `load`; the write is one aligned 64-bit store.
        unsafe { std::ptr::write_volatile(p, value) };
        true
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base` is the start of a mapping of `len` bytes this value
        // made; nothing refers to it after the value goes.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A server's shared file and its own mapping of part of it.
#[derive(Debug)]
pub struct SharedFile {
    fd: OwnedFd,
    map: Mapping,
    offset: u64,
}

impl SharedFile {
    /// A zero-filled anonymous file of `file_len` bytes, of which `len`
    /// bytes from `offset` are mapped here.
    pub fn new(name: &std::ffi::CStr, file_len: u64, offset: u64, len: usize) -> io::Result<Self> {
        let fd = crate::client::shared_memory(name, file_len)?;
        let map = Mapping::new(&fd, offset, len)?;
        Ok(SharedFile { fd, map, offset })
    }

    /// The descriptor to send to the client.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The server's mapping (offsets relative to [`offset`](Self::offset)).
    pub fn map(&self) -> &Mapping {
        &self.map
    }

    /// Where in the file the server's mapping starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_mappings_see_the_same_words() {
        let f = SharedFile::new(c"ernic-shm-test", 4 * 4096, 2 * 4096, 2 * 4096).unwrap();
        let other = Mapping::new(f.fd(), 2 * 4096, 2 * 4096).unwrap();
        assert!(other.store(8, 0x1234_5678_9abc_def0));
        assert_eq!(f.map().load(8), Some(0x1234_5678_9abc_def0));
        assert_eq!(f.map().load(4), None, "unaligned");
        assert_eq!(f.map().load(2 * 4096), None, "past the end");
        assert!(!f.map().store(2 * 4096 - 4, 1));
        assert!(Mapping::new(f.fd(), 100, 4096).is_err());
        assert!(other.write(4096 - 2, b"ab"));
        let mut got = [0u8; 2];
        assert!(f.map().read(4096 - 2, &mut got));
        assert_eq!(&got, b"ab");
        assert!(!other.write(2 * 4096 - 1, b"ab"), "past the end");
        assert!(!f.map().read(usize::MAX, &mut got));
        assert!(other.store(16, 7));
        assert_eq!(f.map().swap(16, u64::MAX), Some(7));
        assert_eq!(other.load(16), Some(u64::MAX));
        assert_eq!(f.map().swap(12, 0), None, "unaligned");
    }
}
