//! Memory regions: buffers the fabric allocates and registers, and MRs for
//! fast registration.

use std::sync::Arc;

use ernic_core::{Access, Lkey, PageSource, RegMr, RemoteAddr, Rkey, SendOp, SendWr, Sge};

use crate::Error;
use crate::provider::MrMemory;
use crate::qp::Pd;

/// A registered memory region over a buffer the fabric allocated.
///
/// The buffer lives as long as the `Mr`; dropping it deregisters the region
/// and takes the buffer out of the device's reach before freeing it.
#[derive(Clone)]
pub struct Mr {
    inner: Arc<MrInner>,
}

struct MrInner {
    pd: Pd,
    key: u32,
    mem: MrMemory,
    /// The memory came from the provider (and goes back to it).
    provided: bool,
    access: Access,
}

impl Drop for MrInner {
    fn drop(&mut self) {
        let p = self.pd.dev().provider();
        p.dereg_mr(self.key, Some(&self.mem));
        if self.provided {
            p.free_memory(&self.mem);
        }
    }
}

impl std::fmt::Debug for Mr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Mr(key {:#x}, {} bytes at {:#x})",
            self.inner.key,
            self.len(),
            self.addr()
        )
    }
}

impl Mr {
    pub(crate) fn register(pd: &Pd, len: usize, access: Access) -> Result<Mr, Error> {
        let mem = pd.dev().provider().alloc_memory(len)?;
        Mr::register_memory(pd, mem, true, access)
    }

    pub(crate) fn register_memory(
        pd: &Pd,
        mem: MrMemory,
        provided: bool,
        access: Access,
    ) -> Result<Mr, Error> {
        let p = pd.dev().provider();
        let key = match p.reg_mr(pd.id(), &mem, access) {
            Ok(k) => k,
            Err(e) => {
                if provided {
                    p.free_memory(&mem);
                }
                return Err(e);
            }
        };
        Ok(Mr {
            inner: Arc::new(MrInner {
                pd: pd.clone(),
                key,
                mem,
                provided,
                access,
            }),
        })
    }

    /// The local key.
    pub fn lkey(&self) -> Lkey {
        Lkey(self.inner.key)
    }

    /// The remote key.
    pub fn rkey(&self) -> Rkey {
        Rkey(self.inner.key)
    }

    /// The region's first address, as the device knows it (what SGEs and
    /// remote addresses name; on a fabric, the buffer's own address).
    pub fn addr(&self) -> u64 {
        self.inner.mem.iova()
    }

    /// The region's length.
    pub fn len(&self) -> usize {
        self.inner.mem.len()
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rights the region grants.
    pub fn access(&self) -> Access {
        self.inner.access
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(Error::OutOfRange {
                offset,
                len,
                size: self.len(),
            }),
        }
    }

    /// An SGE naming `len` bytes at `offset`.
    pub fn sge(&self, offset: usize, len: u32) -> Result<Sge, Error> {
        self.check(offset, len as usize)?;
        Ok(Sge {
            addr: self.addr() + offset as u64,
            len,
            lkey: self.lkey(),
        })
    }

    /// The remote address of the byte at `offset`, for a peer's READ, WRITE or atomic.
    pub fn remote(&self, offset: usize) -> Result<RemoteAddr, Error> {
        self.check(offset, 0)?;
        Ok(RemoteAddr {
            addr: self.addr() + offset as u64,
            rkey: self.rkey(),
        })
    }

    /// Where the region's bytes are in this process: for a program that
    /// keeps its own buffers in memory the device reaches (a device that
    /// reaches only memory it shares, such as the ionic driver's, takes a
    /// `reg_user_mr` of memory inside such a region).
    pub fn host_ptr(&self) -> std::ptr::NonNull<u8> {
        self.inner.mem.ptr()
    }

    /// Copies bytes out of the region. On a fabric this is taken under the
    /// fabric lock, so the copy never overlaps one the device makes.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        self.check(offset, out.len())?;
        let buf = self.inner.mem.buffer();
        self.inner
            .pd
            .dev()
            .provider()
            .exclusive(&mut || buf.read(offset, out));
        Ok(())
    }

    /// Runs `f` on `len` bytes at `offset` in place (on a fabric, under the
    /// fabric lock): a program fills a buffer, or takes what arrived in it,
    /// without copying through one of its own. The range must not be named
    /// by a work request still in flight, nor be open to peers while `f`
    /// runs (an MR with remote rights: the caller's protocol keeps peers
    /// off it, as it must before reading any RDMA buffer).
    pub fn with_bytes(
        &self,
        offset: usize,
        len: usize,
        f: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), Error> {
        self.check(offset, len)?;
        let buf = self.inner.mem.buffer();
        self.inner
            .pd
            .dev()
            .provider()
            .exclusive(&mut || buf.with_slice(offset, len, f));
        Ok(())
    }

    /// Copies bytes into the region (on a fabric, under the fabric lock).
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        self.check(offset, data.len())?;
        let buf = self.inner.mem.buffer();
        self.inner
            .pd
            .dev()
            .provider()
            .exclusive(&mut || buf.write(offset, data));
        Ok(())
    }

    /// Reads one byte without the fabric lock, for spinning on memory a peer
    /// writes (as perftest's `write_lat` polls its buffer).
    pub fn poll_byte(&self, offset: usize) -> Result<u8, Error> {
        self.check(offset, 1)?;
        Ok(self.inner.mem.buffer().read_volatile(offset))
    }

    /// Writes one byte without the fabric lock (the local half of `poll_byte`).
    pub fn set_byte(&self, offset: usize, v: u8) -> Result<(), Error> {
        self.check(offset, 1)?;
        self.inner.mem.buffer().write(offset, &[v]);
        Ok(())
    }
}

/// An MR allocated for fast registration. Its key works only after a REG_MR
/// work request binds pages to it, and stops at LOCAL_INV or the next REG_MR.
pub struct FastMr {
    pd: Pd,
    key: u32,
    max_len: u64,
}

impl std::fmt::Debug for FastMr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FastMr(key {:#x}, up to {} bytes)",
            self.key, self.max_len
        )
    }
}

impl Drop for FastMr {
    fn drop(&mut self) {
        self.pd.dev().provider().dereg_mr(self.key, None);
    }
}

impl FastMr {
    pub(crate) fn alloc(pd: &Pd, max_len: u64) -> Result<FastMr, Error> {
        let key = pd.dev().provider().alloc_fast_mr(pd.id(), max_len)?;
        Ok(FastMr {
            pd: pd.clone(),
            key,
            max_len,
        })
    }

    /// The key with variant byte `variant`: what a REG_MR should bind.
    pub fn key(&self, variant: u8) -> Lkey {
        Lkey((self.key & !0xff) | u32::from(variant))
    }

    /// A REG_MR work request that binds bytes `range` of `mr`'s buffer under
    /// key variant `variant`. The region's virtual addresses are those of the
    /// buffer, so an SGE or remote address names the same bytes either way.
    pub fn reg_wr<'a>(
        &self,
        wr_id: u64,
        variant: u8,
        mr: &Mr,
        range: std::ops::Range<usize>,
        access: Access,
    ) -> Result<SendWr<'a>, Error> {
        let len = range.end.saturating_sub(range.start);
        mr.check(range.start, len)?;
        let addr = mr.addr() + range.start as u64;
        Ok(SendWr::new(
            wr_id,
            SendOp::RegMr(RegMr {
                key: self.key(variant),
                iova: addr,
                len: len as u64,
                access,
                pages: PageSource::Contiguous { dma: addr },
            }),
        ))
    }
}
