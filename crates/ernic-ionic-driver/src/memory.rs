//! The driver's memory: the memfd shared with the server (its "guest
//! memory"), carved into rings and buffers, and the doorbell pages taken
//! from the shared area. Addresses here are device (DMA) addresses; the
//! driver's own view is the mapping.

use ernic_ionic::doorbell::PAGE;

use crate::{BASE, Driver, Error};

/// A ring in the driver's memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ring {
    pub(crate) off: u64,
    pub(crate) depth_log2: u8,
    pub(crate) stride_log2: u8,
}

impl Ring {
    pub(crate) fn depth(&self) -> u32 {
        1 << self.depth_log2
    }

    pub(crate) fn stride(&self) -> usize {
        1 << self.stride_log2
    }

    pub(crate) fn bytes(&self) -> u64 {
        1 << (self.depth_log2 + self.stride_log2)
    }

    pub(crate) fn slot(&self, i: u32) -> usize {
        (self.off + (u64::from(i & (self.depth() - 1)) << self.stride_log2)) as usize
    }

    pub(crate) fn gpa(&self) -> u64 {
        BASE + self.off
    }
}

/// A buffer in the driver's memory: its device address doubles as the
/// address MRs over it use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buf {
    pub(crate) off: u64,
    /// Bytes.
    pub len: u64,
}

impl Buf {
    /// The buffer's address as the device sees it (and as SGEs name it).
    pub fn addr(&self) -> u64 {
        BASE + self.off
    }
}

impl Driver {
    /// Carves `len` bytes (page-aligned, zeroed) from the driver's memory.
    pub fn alloc(&mut self, len: u64) -> Result<Buf, Error> {
        let len = len
            .max(1)
            .checked_next_multiple_of(PAGE)
            .ok_or(Error::NoMemory(len))?;
        let (&off, &run) = self
            .free
            .iter()
            .find(|&(_, &run)| run >= len)
            .ok_or(Error::NoMemory(len))?;
        self.free.remove(&off);
        if run > len {
            self.free.insert(off + len, run - len);
        }
        self.mem.fill(off as usize, len as usize, 0);
        Ok(Buf { off, len })
    }

    /// Gives `buf` back to the driver's memory (it must not be used after).
    pub fn free(&mut self, buf: Buf) {
        let (mut off, mut len) = (buf.off, buf.len);
        if len == 0 || off.checked_add(len).is_none_or(|e| e > self.size) {
            return;
        }
        // Joined with the free runs on either side.
        if let Some((&p, &plen)) = self.free.range(..off).next_back()
            && p + plen == off
        {
            self.free.remove(&p);
            (off, len) = (p, plen + len);
        }
        if let Some(&nlen) = self.free.get(&(off + len)) {
            self.free.remove(&(off + len));
            len += nlen;
        }
        self.free.insert(off, len);
    }

    /// Where `buf`'s bytes are in this process (valid while the driver
    /// lives); `None` for a buffer not of this driver.
    pub fn host_ptr(&self, buf: &Buf) -> Option<std::ptr::NonNull<u8>> {
        self.mem.ptr_at(buf.off as usize)
    }

    /// Copies `data` into `buf` at `at`.
    pub fn write(&self, buf: &Buf, at: u64, data: &[u8]) -> bool {
        at + data.len() as u64 <= buf.len && self.mem.write((buf.off + at) as usize, data)
    }

    /// Copies bytes of `buf` at `at` out.
    pub fn read(&self, buf: &Buf, at: u64, out: &mut [u8]) -> bool {
        at + out.len() as u64 <= buf.len && self.mem.read((buf.off + at) as usize, out)
    }

    pub(crate) fn free_ring(&mut self, r: &Ring) {
        self.free(Buf {
            off: r.off,
            len: r.bytes().next_multiple_of(PAGE),
        });
    }

    pub(crate) fn ring(&mut self, depth_log2: u8, stride_log2: u8) -> Result<Ring, Error> {
        let b = self.alloc(1 << (depth_log2 + stride_log2))?;
        Ok(Ring {
            off: b.off,
            depth_log2,
            stride_log2,
        })
    }

    /// A shared doorbell page no other queue uses (its offset in the shared
    /// area), or `None` (trapped doorbells) when there is none left.
    pub(crate) fn take_page(&mut self) -> Option<usize> {
        let (_, len) = self.shared.as_ref()?;
        let pages = len / PAGE as usize;
        let free = (0..pages).find(|p| !self.pages_used.contains(p))?;
        self.pages_used.insert(free);
        Some(free * PAGE as usize)
    }

    pub(crate) fn give_page(&mut self, page: Option<usize>) {
        if let Some(p) = page {
            self.pages_used.remove(&(p / PAGE as usize));
        }
    }
}
