//! The provider abstraction, shaped like libfabric's RDM endpoints: per
//! rail a domain with an endpoint, an address vector and a completion
//! queue.
//!
//! Every post may answer [`PostError::Again`] (`-FI_EAGAIN`): the caller
//! parks the post and retries it after reading the CQ. A CQ read answers
//! entries, [`CqError::Again`] when there is nothing, or
//! [`CqError::Avail`] when an error completion is at the head: it must be
//! taken with [`Rail::cq_readerr`] before the next read.
//!
//! Contexts are the caller's `u64`s, given back in completions; the top
//! bit must be clear (a provider may use it for its own work).

use std::fmt;

/// An address-vector entry: a peer endpoint inserted into a rail.
pub type FiAddr = u64;

/// Contexts must stay below this.
pub const CONTEXT_LIMIT: u64 = 1 << 63;

/// What a completion was (libfabric's `FI_*` completion flags, as bits of
/// our own; the libfabric provider translates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CqFlags(pub u32);

impl CqFlags {
    /// A send of ours completed.
    pub const SEND: CqFlags = CqFlags(1);
    /// A receive of ours was filled.
    pub const RECV: CqFlags = CqFlags(2);
    /// An RDMA write of ours completed.
    pub const WRITE: CqFlags = CqFlags(4);
    /// A peer's RDMA write landed here (with `FI_REMOTE_CQ_DATA`).
    pub const REMOTE_WRITE: CqFlags = CqFlags(8);
    /// The entry carries the peer's immediate data.
    pub const REMOTE_CQ_DATA: CqFlags = CqFlags(16);

    /// Whether every bit of `other` is set.
    pub fn has(self, other: CqFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for CqFlags {
    type Output = CqFlags;
    fn bitor(self, rhs: CqFlags) -> CqFlags {
        CqFlags(self.0 | rhs.0)
    }
}

/// One completion (`struct fi_cq_data_entry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CqEntry {
    /// The post's context (0 for a peer's write, which has none here).
    pub context: u64,
    /// What completed.
    pub flags: CqFlags,
    /// Bytes received (may be 0 for a peer's write: only the immediate is
    /// reliable there, as with libfabric's tcp providers).
    pub len: usize,
    /// The immediate data, when `REMOTE_CQ_DATA` is set.
    pub data: u32,
}

/// An error completion (`struct fi_cq_err_entry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CqErrEntry {
    /// The failed post's context.
    pub context: u64,
    /// What it was.
    pub flags: CqFlags,
    /// A positive errno-style code.
    pub err: i32,
    /// The provider's description.
    pub message: String,
}

/// A post refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// No room now (`-FI_EAGAIN`): read the CQ and retry.
    #[error("resource temporarily unavailable (EAGAIN)")]
    Again,
    /// Refused for good.
    #[error("{0}")]
    Failed(String),
}

/// A CQ read that returned no entries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CqError {
    /// Nothing completed (`-FI_EAGAIN`).
    #[error("no completions (EAGAIN)")]
    Again,
    /// An error completion waits for `cq_readerr` (`-FI_EAVAIL`).
    #[error("an error completion is waiting (EAVAIL)")]
    Avail,
    /// The CQ itself failed.
    #[error("completion queue failed: {0}")]
    Failed(String),
}

/// A provider call that failed for good.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// How a peer names remote memory in a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteAddressing {
    /// By virtual address (`FI_MR_VIRT_ADDR`).
    Virtual,
    /// By offset into the target MR.
    Offset,
}

/// A registration on one rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MrReg {
    /// The provider's handle, for `mr_close`.
    pub handle: u64,
    /// The key a peer names in its writes.
    pub key: u64,
    /// The local descriptor our own posts pass.
    pub desc: u64,
}

/// The [`Rail`] methods a rail that wraps another (its `inner` field)
/// passes on unchanged: its name, its address vector, how it addresses
/// remote memory, and memory registration. Expanded inside such a rail's
/// `impl Rail` (the fault wrappers: `chaos`, `inject`).
macro_rules! pass_rail_setup_to_inner {
    () => {
        fn name(&self) -> Vec<u8> {
            self.inner.name()
        }

        fn av_insert(
            &mut self,
            name: &[u8],
        ) -> Result<$crate::provider::FiAddr, $crate::provider::ProviderError> {
            self.inner.av_insert(name)
        }

        fn av_remove(
            &mut self,
            addr: $crate::provider::FiAddr,
        ) -> Result<(), $crate::provider::ProviderError> {
            self.inner.av_remove(addr)
        }

        fn remote_addressing(&self) -> $crate::provider::RemoteAddressing {
            self.inner.remote_addressing()
        }

        unsafe fn mr_reg(
            &mut self,
            addr: *mut u8,
            len: usize,
        ) -> Result<$crate::provider::MrReg, $crate::provider::ProviderError> {
            // SAFETY: the caller's contract is passed on unchanged.
            unsafe { self.inner.mr_reg(addr, len) }
        }

        fn mr_close(&mut self, handle: u64) -> Result<(), $crate::provider::ProviderError> {
            self.inner.mr_close(handle)
        }
    };
}
pub(crate) use pass_rail_setup_to_inner;

/// One rail: a domain, an RDM endpoint, its address vector and its CQ.
pub trait Rail: Send {
    /// The endpoint's name, for a peer's address vector (at most 56 bytes).
    fn name(&self) -> Vec<u8>;

    /// Inserts a peer's endpoint name; the same name gives the same address.
    fn av_insert(&mut self, name: &[u8]) -> Result<FiAddr, ProviderError>;

    /// Forgets a peer no comm uses any more (`fi_av_remove`), releasing
    /// what the rail holds for it; `addr` is not used again. The default
    /// keeps the entry: an address costs a provider whose entries are
    /// only addresses next to nothing.
    fn av_remove(&mut self, addr: FiAddr) -> Result<(), ProviderError> {
        let _ = addr;
        Ok(())
    }

    /// How remote addresses in writes are given.
    fn remote_addressing(&self) -> RemoteAddressing;

    /// Registers `len` bytes at `addr`.
    ///
    /// # Safety
    ///
    /// The memory must stay valid for reads and writes until `mr_close`,
    /// and operations naming it may read or write it at any time until
    /// then.
    unsafe fn mr_reg(&mut self, addr: *mut u8, len: usize) -> Result<MrReg, ProviderError>;

    /// Closes a registration.
    fn mr_close(&mut self, handle: u64) -> Result<(), ProviderError>;

    /// RDMA write of `len` bytes at `addr` (registered under `desc`) to the
    /// peer's `remote` (an address or an offset, by
    /// [`remote_addressing`](Rail::remote_addressing)) under `key`, with
    /// 32 bits of immediate data reported at the peer (`fi_writedata`).
    #[allow(clippy::too_many_arguments)]
    fn write_data(
        &mut self,
        addr: u64,
        len: usize,
        desc: u64,
        dest: FiAddr,
        remote: u64,
        key: u64,
        data: u32,
        context: u64,
    ) -> Result<(), PostError>;

    /// Send of `len` bytes into one of the peer's posted receives, with 32
    /// bits of immediate data (`fi_senddata`).
    fn send_data(
        &mut self,
        addr: u64,
        len: usize,
        desc: u64,
        dest: FiAddr,
        data: u32,
        context: u64,
    ) -> Result<(), PostError>;

    /// Posts a receive buffer (`fi_recv`, from any peer).
    fn recv(&mut self, addr: u64, len: usize, desc: u64, context: u64) -> Result<(), PostError>;

    /// Reads completions into `out` (`fi_cq_read`).
    fn cq_read(&mut self, out: &mut [CqEntry]) -> Result<usize, CqError>;

    /// Takes the error completion at the head (`fi_cq_readerr`).
    fn cq_readerr(&mut self) -> Option<CqErrEntry>;
}

/// Memory a provider's devices reach, for a program to keep its buffers
/// in (see [`Provider::alloc_buffer`]); it stays valid while this lives.
pub struct Buffer {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
    _keep: Box<dyn Send + Sync>,
}

impl Buffer {
    /// `len` bytes at `ptr`, valid while `keep` lives.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes for as long
    /// as `keep` lives, and nothing else in the process may use them.
    pub unsafe fn new(
        ptr: std::ptr::NonNull<u8>,
        len: usize,
        keep: Box<dyn Send + Sync>,
    ) -> Buffer {
        Buffer {
            ptr,
            len,
            _keep: keep,
        }
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The first byte, to write through.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// A source of rails.
pub trait Provider: Send + Sync + fmt::Debug {
    /// The provider's name, as users select it.
    fn name(&self) -> String;

    /// Opens one rail.
    fn open_rail(&self) -> Result<Box<dyn Rail>, ProviderError>;

    /// `len` bytes of memory its devices reach, when they reach only some
    /// of the process's (an emulated NIC that DMAs only into memory it
    /// shares with its driver): the program keeps its buffers there and
    /// registers them as usual. `None`: any memory will do.
    fn alloc_buffer(&self, _len: usize) -> Result<Option<Buffer>, ProviderError> {
        Ok(None)
    }
}
