//! Providers: what a device does under the verbs API.
//!
//! As libibverbs hands each call to a provider library (rdma-core's
//! `providers/ionic`, `providers/mlx5`...), [`Device`](crate::Device) hands
//! each call to a [`Provider`]. ernic has two: the engine of a
//! [`Fabric`](crate::Fabric) in this process (`native/`), and
//! `ernic-ionic-driver`'s, which writes WQEs into the rings of an emulated
//! ionic NIC behind an `ernic-server` socket. A program written against
//! this crate runs on either without a change.
//!
//! A provider works in ids (`PdId`, `Qpn`, keys...); the handles of this
//! crate own them and give them back when dropped, children before
//! parents (a QP before its CQs, an MR before its PD).

use std::ptr::NonNull;
use std::time::{Duration, Instant};

use ernic_core::{
    Access, AhId, Completion, Counters, CqId, Gid, PdId, QpAttr, QpInfo, QpInit, Qpn, RecvWr,
    SendWr, SrqId,
};

use crate::Error;
use crate::buffer::Buffer;

/// Memory a region covers: where its bytes are in this process, and the
/// address the device knows them by (what SGEs and remote addresses name).
#[derive(Debug)]
pub struct MrMemory {
    buf: Buffer,
    iova: u64,
}

impl MrMemory {
    /// `len` zeroed bytes from this process's heap, known to the device by
    /// their own address (a device in this process reaches them directly).
    pub fn allocate(len: usize) -> Result<MrMemory, Error> {
        let buf = Buffer::new(len).ok_or(Error::Alloc { len })?;
        let iova = buf.ptr().as_ptr() as u64;
        Ok(MrMemory { buf, iova })
    }

    /// Memory someone else owns, known to the device as `iova`.
    ///
    /// # Safety
    ///
    /// `ptr..ptr + len` must stay valid for reads and writes for as long as
    /// the returned value lives; it is never freed through it.
    #[allow(unsafe_code)]
    pub unsafe fn borrowed(ptr: NonNull<u8>, len: usize, iova: u64) -> MrMemory {
        MrMemory {
            // SAFETY: the caller's contract is `Buffer::borrowed`'s.
            buf: unsafe { Buffer::borrowed(ptr, len) },
            iova,
        }
    }

    /// Where the bytes are in this process.
    pub fn ptr(&self) -> NonNull<u8> {
        self.buf.ptr()
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address the device knows the first byte by.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    pub(crate) fn buffer(&self) -> &Buffer {
        &self.buf
    }
}

/// The operations of one device, as a provider implements them. Every
/// call may come from any thread; the provider serialises what must be.
pub trait Provider: Send + Sync {
    /// The device's GID.
    fn gid(&self) -> Gid;
    /// Allocates a protection domain.
    fn alloc_pd(&self) -> Result<PdId, Error>;
    /// Frees a protection domain nothing uses any more.
    fn dealloc_pd(&self, pd: PdId);
    /// Creates a CQ of at least `depth` entries.
    fn create_cq(&self, depth: u32) -> Result<Box<dyn CqOps>, Error>;
    /// Memory of `len` bytes the device can reach, for a region.
    fn alloc_memory(&self, len: usize) -> Result<MrMemory, Error>;
    /// Gives back memory from [`alloc_memory`](Provider::alloc_memory),
    /// after the region over it is gone.
    fn free_memory(&self, mem: &MrMemory) {
        let _ = mem;
    }
    /// Registers `mem` in `pd` with `access`; answers the key (lkey and
    /// rkey alike).
    fn reg_mr(&self, pd: PdId, mem: &MrMemory, access: Access) -> Result<u32, Error>;
    /// Deregisters a region (with its memory, if it covered any).
    fn dereg_mr(&self, key: u32, mem: Option<&MrMemory>);
    /// Allocates a region for fast registration of up to `max_len` bytes.
    fn alloc_fast_mr(&self, pd: PdId, max_len: u64) -> Result<u32, Error>;
    /// Runs `f` while the device copies no bytes of this process's regions
    /// (a device that cannot promise that runs it at once).
    fn exclusive(&self, f: &mut dyn FnMut());
    /// Creates a QP in the RESET state.
    fn create_qp(&self, init: &QpInit) -> Result<Qpn, Error>;
    /// Destroys a QP.
    fn destroy_qp(&self, qpn: Qpn);
    /// Changes a QP's attributes and state (`ibv_modify_qp`).
    fn modify_qp(&self, qpn: Qpn, attr: &QpAttr) -> Result<(), Error>;
    /// A QP's attributes (`ibv_query_qp`).
    fn query_qp(&self, qpn: Qpn) -> Result<QpInfo, Error>;
    /// A QP's counters.
    fn qp_counters(&self, qpn: Qpn) -> Result<Counters, Error>;
    /// Posts a send work request.
    fn post_send(&self, qpn: Qpn, wr: &SendWr<'_>) -> Result<(), Error>;
    /// Posts receives, in order; stops at the first refused one.
    fn post_recv(&self, qpn: Qpn, wrs: &[RecvWr<'_>]) -> Result<(), Error>;
    /// Creates a shared receive queue.
    fn create_srq(&self, pd: PdId, depth: u32, max_sge: u32) -> Result<SrqId, Error>;
    /// Destroys a shared receive queue.
    fn destroy_srq(&self, srq: SrqId);
    /// Posts a receive on an SRQ.
    fn post_srq_recv(&self, srq: SrqId, wr: &RecvWr<'_>) -> Result<(), Error>;
    /// Arms an SRQ's low watermark.
    fn modify_srq(&self, srq: SrqId, limit: u32) -> Result<(), Error>;
    /// An SRQ's armed limit and receives posted.
    fn query_srq(&self, srq: SrqId) -> Result<(u32, u32), Error>;
    /// Creates an address handle for datagrams to `dgid`.
    fn create_ah(&self, pd: PdId, dgid: Gid) -> Result<AhId, Error>;
    /// Destroys an address handle.
    fn destroy_ah(&self, ah: AhId);
    /// The device's counters, by `hw_counters` name.
    fn counters(&self) -> Counters;
    /// A few words naming the device, for `Debug`.
    fn describe(&self) -> String;
}

/// The waiting loop of every CQ: `poll`; done when something came, when
/// `out` has no room, or when `timeout` has passed; spin for the first
/// `spin`; after that, `idle` with the time left (which may find
/// completions itself, or sleep until some may have come).
pub fn wait_with(
    out: &mut [Completion],
    timeout: Duration,
    spin: Duration,
    mut poll: impl FnMut(&mut [Completion]) -> Result<usize, Error>,
    mut idle: impl FnMut(&mut [Completion], Duration) -> Result<usize, Error>,
) -> Result<usize, Error> {
    let start = Instant::now();
    loop {
        let n = poll(out)?;
        if n > 0 || out.is_empty() {
            return Ok(n);
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Ok(0);
        }
        if waited < spin {
            std::hint::spin_loop();
            continue;
        }
        let n = idle(out, timeout - waited)?;
        if n > 0 {
            return Ok(n);
        }
    }
}

/// One completion queue of a provider. Dropping it destroys the CQ.
pub trait CqOps: Send + Sync {
    /// The id QPs name it by.
    fn id(&self) -> CqId;
    /// Moves up to `out.len()` completions into `out`, oldest first; never blocks.
    fn poll(&self, out: &mut [Completion]) -> Result<usize, Error>;
    /// Waits up to `timeout` for at least one completion. The default polls,
    /// spinning for a few microseconds and then napping.
    fn wait(&self, out: &mut [Completion], timeout: Duration) -> Result<usize, Error> {
        wait_with(
            out,
            timeout,
            Duration::from_micros(50),
            |o| self.poll(o),
            |_, left| {
                std::thread::sleep(Duration::from_micros(20).min(left));
                Ok(0)
            },
        )
    }
    /// Completions (or, for a device that completes several requests with
    /// one entry, entries) waiting.
    fn len(&self) -> usize;
    /// Whether nothing waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Entries the CQ holds.
    fn depth(&self) -> u32;
    /// Sets what an armed CQ calls when a completion it was armed for
    /// comes (once; a completion channel's wake-up).
    fn set_notify(&self, f: Notify) -> Result<(), Error> {
        let _ = f;
        Err(Error::Unsupported("completion notification"))
    }
    /// Arms the CQ (`ibv_req_notify_cq`): the next completion, or with
    /// `solicited_only` the next solicited or failed one, calls the
    /// notifier once. Completions already waiting call it at once.
    fn arm(&self, solicited_only: bool) -> Result<(), Error> {
        let _ = solicited_only;
        Err(Error::Unsupported("completion notification"))
    }
}

/// What an armed CQ calls: it runs where the completion is made (under the
/// device's lock), so it must only wake someone, as writing an eventfd does.
pub type Notify = Box<dyn Fn() + Send + Sync>;
