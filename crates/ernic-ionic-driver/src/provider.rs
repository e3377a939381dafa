//! The driver as an `ernic-verbs` provider: [`open`] answers an
//! [`ernic_verbs::Device`] whose every call goes through the ionic rings
//! of an `ernic-server`, so a program written against `ernic-verbs` (the
//! perf tests, the transport) runs through the emulated NIC unchanged.
//!
//! The driver sits behind one lock: a call takes it, writes its WQE or
//! admin command and rings the doorbell. Memory for regions is carved from
//! the memory the driver shares with the server, so [`Pd::reg_mr`] works,
//! and `reg_user_mr` works for memory inside such a region (a program that
//! places its buffers there, as the transport's bench does) and is refused
//! for any other: the device reaches nothing else.
//!
//! [`device`] makes the verbs device of a driver already attached and
//! answers a [`DriverHandle`] beside it, for what verbs do not cover (the
//! Ethernet frames of [`Driver::send_frame`] and [`Driver::recv_frame`]):
//! a guest's RDMA and its TCP/IP through one NIC.
//!
//! [`Pd::reg_mr`]: ernic_verbs::Pd::reg_mr

use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ernic_core::{
    Access, AhId, Completion, Counters, CqId, EngineError, Gid, PdId, QpAttr, QpInfo, QpInit, Qpn,
    RecvWr, SendWr, SrqId,
};
use ernic_verbs::{CqOps, Device, MrMemory, Provider};

use crate::{Buf, Cq, Driver, Error, Pd, Qp, QpSpec, Srq};

/// Attaches a driver with `memory` bytes of shared memory to the server at
/// `socket` and answers it as a verbs device. With `gid`, its QPs are
/// known by that (IPv4-mapped) GID; it must be one of the server's guest
/// GIDs when the server is on a mesh.
pub fn open(socket: &Path, memory: u64, gid: Option<Gid>) -> Result<Device, Error> {
    let mut d = Driver::attach(socket, memory)?;
    if let Some(g) = gid {
        d.set_gid(g)?;
    }
    Ok(device(d, socket).0)
}

/// The verbs device of a driver already attached (and, say, with its
/// Ethernet queues up), and a [`DriverHandle`] on the same driver for
/// what verbs do not say (frames, counters). `socket` names the device in
/// [`Device`]'s description.
pub fn device(d: Driver, socket: &Path) -> (Device, DriverHandle) {
    let gid = d.gid;
    let shared = Arc::new(Shared {
        st: Mutex::new(State {
            d,
            cqs: HashMap::new(),
            qps: HashMap::new(),
            srqs: HashMap::new(),
            bufs: HashMap::new(),
        }),
    });
    let handle = DriverHandle {
        shared: shared.clone(),
    };
    let dev = Device::new(Arc::new(Ionic {
        shared,
        gid,
        socket: socket.to_path_buf(),
    }));
    (dev, handle)
}

/// The driver behind a verbs device made by [`device`], shared with it:
/// each call takes the driver's lock, as a verbs call does.
#[derive(Clone)]
pub struct DriverHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for DriverHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverHandle").finish_non_exhaustive()
    }
}

impl DriverHandle {
    /// Runs `f` on the driver, under its lock.
    pub fn with<R>(&self, f: impl FnOnce(&mut Driver) -> R) -> R {
        f(&mut self.shared.lock().d)
    }

    /// [`Driver::send_frame`], under the lock.
    pub fn send_frame(&self, frame: &[u8]) -> Result<(), Error> {
        self.with(|d| d.send_frame(frame))
    }

    /// [`Driver::recv_frame`], under the lock.
    pub fn recv_frame(&self, out: &mut [u8]) -> Result<Option<usize>, Error> {
        self.with(|d| d.recv_frame(out))
    }
}

struct State {
    d: Driver,
    cqs: HashMap<u32, Cq>,
    qps: HashMap<u32, Qp>,
    srqs: HashMap<u32, Srq>,
    /// Driver memory handed out for regions, by device address.
    bufs: HashMap<u64, Buf>,
}

struct Shared {
    st: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every call leaves the driver consistent between rings and books,
        // so a lock poisoned by a panicking caller is still usable.
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the driver and QP `qpn`, under the lock.
    fn with_qp<R>(
        &self,
        qpn: Qpn,
        f: impl FnOnce(&mut Driver, &mut Qp) -> Result<R, ernic_verbs::Error>,
    ) -> Result<R, ernic_verbs::Error> {
        let mut st = self.lock();
        let st = &mut *st;
        let qp = st.qps.get_mut(&qpn.0).ok_or_else(|| no_qp(qpn))?;
        f(&mut st.d, qp)
    }

    /// Runs `f` on the driver and SRQ `srq`, under the lock.
    fn with_srq<R>(
        &self,
        srq: SrqId,
        f: impl FnOnce(&mut Driver, &mut Srq) -> Result<R, Error>,
    ) -> Result<R, ernic_verbs::Error> {
        let mut st = self.lock();
        let st = &mut *st;
        let s = st
            .srqs
            .get_mut(&srq.0)
            .ok_or(ernic_verbs::Error::Engine(EngineError::NoSrq(srq)))?;
        f(&mut st.d, s).map_err(|e| verr(e, Qpn(srq.0), "shared receive queue"))
    }
}

struct Ionic {
    shared: Arc<Shared>,
    gid: Gid,
    socket: PathBuf,
}

/// A driver error as a verbs error: a full queue as the engine says it
/// (callers retry on it), what the driver cannot express as unsupported.
fn verr(e: Error, qpn: Qpn, what: &'static str) -> ernic_verbs::Error {
    match e {
        Error::Full { depth } => {
            ernic_verbs::Error::Engine(EngineError::QueueFull { qpn, what, depth })
        }
        Error::Unsupported(s) => ernic_verbs::Error::Unsupported(s),
        e => ernic_verbs::Error::Device(Box::new(e)),
    }
}

fn dev_err(e: Error) -> ernic_verbs::Error {
    verr(e, Qpn(0), "queue")
}

fn no_qp(qpn: Qpn) -> ernic_verbs::Error {
    ernic_verbs::Error::Engine(EngineError::NoQp(qpn))
}

/// The log2 of the ring that holds `n` entries (at least 4).
fn log2_for(n: u32) -> Result<u8, ernic_verbs::Error> {
    match n.max(4).checked_next_power_of_two() {
        Some(d) if d <= 1 << 16 => Ok(d.trailing_zeros() as u8),
        _ => Err(ernic_verbs::Error::Engine(EngineError::BadSize {
            what: "queue depth",
            value: u64::from(n),
            max: 1 << 16,
        })),
    }
}

impl Provider for Ionic {
    fn gid(&self) -> Gid {
        self.gid
    }

    fn alloc_pd(&self) -> Result<PdId, ernic_verbs::Error> {
        // One driver PD per verbs PD, as Linux's driver does; its id goes
        // with every object created in it.
        let pd = self.shared.lock().d.alloc_pd().map_err(dev_err)?;
        Ok(PdId(pd.id()))
    }

    fn dealloc_pd(&self, pd: PdId) {
        self.shared.lock().d.dealloc_pd(Pd(pd.0));
    }

    fn create_cq(&self, depth: u32) -> Result<Box<dyn CqOps>, ernic_verbs::Error> {
        let log2 = log2_for(depth)?;
        let mut st = self.shared.lock();
        let cq = st.d.create_cq(log2).map_err(dev_err)?;
        let (id, depth) = (cq.id(), cq.depth());
        st.cqs.insert(id, cq);
        Ok(Box::new(IonicCq {
            shared: self.shared.clone(),
            id,
            depth,
        }))
    }

    fn alloc_memory(&self, len: usize) -> Result<MrMemory, ernic_verbs::Error> {
        let mut st = self.shared.lock();
        let buf = st.d.alloc(len as u64).map_err(dev_err)?;
        let Some(ptr) = st.d.host_ptr(&buf) else {
            st.d.free(buf);
            return Err(ernic_verbs::Error::Alloc { len });
        };
        st.bufs.insert(buf.addr(), buf);
        // SAFETY: `buf` is `len` bytes (rounded up to pages) of the driver's
        // shared mapping, which lives as long as the driver; every region
        // over it holds the device (and so the driver) until it is dropped,
        // and the buffer goes back to the driver only in `free_memory`.
        Ok(unsafe { MrMemory::borrowed(ptr, len, buf.addr()) })
    }

    fn free_memory(&self, mem: &MrMemory) {
        let mut st = self.shared.lock();
        if let Some(buf) = st.bufs.remove(&mem.iova()) {
            st.d.free(buf);
        }
    }

    fn reg_mr(&self, pd: PdId, mem: &MrMemory, access: Access) -> Result<u32, ernic_verbs::Error> {
        let mut st = self.shared.lock();
        let len = mem.len() as u64;
        let ours = st.bufs.get(&mem.iova()).is_some_and(|b| b.len >= len);
        if ours {
            return st
                .d
                .reg_range_in(Pd(pd.0), mem.iova(), len, access)
                .map_err(dev_err);
        }
        // A program's registration of memory inside a region the driver
        // gave out (`reg_user_mr` over `Mr::host_ptr`): the device reaches
        // it where the driver's buffer lies, at the program's addresses.
        let start = mem.ptr().as_ptr() as u64;
        let inside = st.bufs.values().find_map(|b| {
            let host = st.d.host_ptr(b)?.as_ptr() as u64;
            let off = start.checked_sub(host)?;
            (off.checked_add(len)? <= b.len).then(|| b.addr() + off)
        });
        let Some(addr) = inside else {
            return Err(ernic_verbs::Error::Unsupported(
                "the ionic device reaches only memory it shares with the driver: \
                 use Pd::reg_mr, or memory inside such a region",
            ));
        };
        st.d.reg_range_iova_in(Pd(pd.0), mem.iova(), addr, len, access)
            .map_err(dev_err)
    }

    fn dereg_mr(&self, key: u32, _mem: Option<&MrMemory>) {
        let _ = self.shared.lock().d.dereg_key(key);
    }

    fn alloc_fast_mr(&self, pd: PdId, max_len: u64) -> Result<u32, ernic_verbs::Error> {
        let pages = max_len.div_ceil(4096).max(1);
        let pages = u32::try_from(pages).map_err(|_| {
            ernic_verbs::Error::Engine(EngineError::BadSize {
                what: "fast MR length",
                value: max_len,
                max: u64::from(u32::MAX) * 4096,
            })
        })?;
        self.shared
            .lock()
            .d
            .alloc_fast_mr_in(Pd(pd.0), pages)
            .map_err(dev_err)
    }

    fn exclusive(&self, f: &mut dyn FnMut()) {
        // The device is another process: no lock keeps it out.
        f();
    }

    fn create_qp(&self, init: &QpInit) -> Result<Qpn, ernic_verbs::Error> {
        let mut st = self.shared.lock();
        let st = &mut *st;
        let cq = |id: CqId| {
            st.cqs
                .get(&id.0)
                .ok_or(ernic_verbs::Error::Engine(EngineError::NoCq(id)))
        };
        let spec = QpSpec {
            pd: Pd(init.pd.0),
            qp_type: init.qp_type,
            send_cq: cq(init.send_cq)?,
            recv_cq: cq(init.recv_cq)?,
            srq: match init.srq {
                Some(s) => Some(
                    st.srqs
                        .get(&s.0)
                        .ok_or(ernic_verbs::Error::Engine(EngineError::NoSrq(s)))?,
                ),
                None => None,
            },
            caps: init.caps,
        };
        let qp = st.d.create_qp_with(&spec).map_err(dev_err)?;
        let qpn = qp.qpn();
        st.qps.insert(qpn.0, qp);
        Ok(qpn)
    }

    fn destroy_qp(&self, qpn: Qpn) {
        let mut st = self.shared.lock();
        if let Some(qp) = st.qps.remove(&qpn.0) {
            let _ = st.d.destroy_qp(qp);
        }
    }

    fn modify_qp(&self, qpn: Qpn, attr: &QpAttr) -> Result<(), ernic_verbs::Error> {
        self.shared
            .with_qp(qpn, |d, qp| d.modify_qp(qp, attr).map_err(dev_err))
    }

    fn query_qp(&self, qpn: Qpn) -> Result<QpInfo, ernic_verbs::Error> {
        self.shared
            .with_qp(qpn, |d, qp| d.query_qp(qp).map_err(dev_err))
    }

    fn qp_counters(&self, qpn: Qpn) -> Result<Counters, ernic_verbs::Error> {
        self.shared
            .with_qp(qpn, |d, qp| d.counters(Some(qp)).map_err(dev_err))
    }

    fn post_send(&self, qpn: Qpn, wr: &SendWr<'_>) -> Result<(), ernic_verbs::Error> {
        self.shared.with_qp(qpn, |d, qp| {
            d.post_send(qp, wr).map_err(|e| verr(e, qpn, "send queue"))
        })
    }

    fn post_recv(&self, qpn: Qpn, wrs: &[RecvWr<'_>]) -> Result<(), ernic_verbs::Error> {
        self.shared.with_qp(qpn, |d, qp| {
            wrs.iter().try_for_each(|wr| {
                d.post_recv_sgl(qp, wr.wr_id, wr.sgl)
                    .map_err(|e| verr(e, qpn, "receive queue"))
            })
        })
    }

    fn create_srq(&self, pd: PdId, depth: u32, max_sge: u32) -> Result<SrqId, ernic_verbs::Error> {
        if max_sge > 2 {
            return Err(ernic_verbs::Error::Unsupported(
                "SRQ receives of at most two SGEs (64-byte WQEs)",
            ));
        }
        let log2 = log2_for(depth.saturating_add(1))?;
        let mut st = self.shared.lock();
        let srq = st.d.create_srq_in(Pd(pd.0), log2, 0).map_err(dev_err)?;
        let id = srq.id();
        st.srqs.insert(id, srq);
        Ok(SrqId(id))
    }

    fn destroy_srq(&self, srq: SrqId) {
        let mut st = self.shared.lock();
        if let Some(s) = st.srqs.remove(&srq.0) {
            let _ = st.d.destroy_srq(s);
        }
    }

    fn post_srq_recv(&self, srq: SrqId, wr: &RecvWr<'_>) -> Result<(), ernic_verbs::Error> {
        self.shared
            .with_srq(srq, |d, s| d.post_srq_recv_sgl(s, wr.wr_id, wr.sgl))
    }

    fn modify_srq(&self, srq: SrqId, limit: u32) -> Result<(), ernic_verbs::Error> {
        self.shared.with_srq(srq, |d, s| d.modify_srq(s, limit))
    }

    fn query_srq(&self, srq: SrqId) -> Result<(u32, u32), ernic_verbs::Error> {
        self.shared.with_srq(srq, |d, s| d.query_srq(s))
    }

    fn create_ah(&self, pd: PdId, dgid: Gid) -> Result<AhId, ernic_verbs::Error> {
        let id = self
            .shared
            .lock()
            .d
            .create_ah_in(Pd(pd.0), dgid)
            .map_err(dev_err)?;
        Ok(AhId(id))
    }

    fn destroy_ah(&self, ah: AhId) {
        let _ = self.shared.lock().d.destroy_ah(ah.0);
    }

    fn counters(&self) -> Counters {
        self.shared.lock().d.counters(None).unwrap_or_default()
    }

    fn describe(&self) -> String {
        format!("ionic at {}, {}", self.socket.display(), self.gid)
    }
}

/// One CQ of the device, polled under the driver's lock.
struct IonicCq {
    shared: Arc<Shared>,
    id: u32,
    depth: u32,
}

impl Drop for IonicCq {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        if let Some(cq) = st.cqs.remove(&self.id) {
            let _ = st.d.destroy_cq(cq);
        }
    }
}

impl CqOps for IonicCq {
    fn id(&self) -> CqId {
        CqId(self.id)
    }

    fn poll(&self, out: &mut [Completion]) -> Result<usize, ernic_verbs::Error> {
        let mut st = self.shared.lock();
        let st = &mut *st;
        let Some(cq) = st.cqs.get_mut(&self.id) else {
            return Ok(0);
        };
        Ok(st.d.poll_cq(cq, out))
    }

    /// Polls for a few microseconds, then arms the CQ and sleeps on the
    /// EQ's interrupt, as a verbs program with a completion channel does:
    /// arming is a level, so an entry that came before the arm still
    /// raises the event. Every waiter re-arms before it sleeps and sleeps
    /// in slices, so one waiter taking an event meant for another's CQ
    /// costs at most a slice.
    fn wait(&self, out: &mut [Completion], timeout: Duration) -> Result<usize, ernic_verbs::Error> {
        const SPIN: Duration = Duration::from_micros(20);
        const SLICE: Duration = Duration::from_millis(5);
        ernic_verbs::wait_with(
            out,
            timeout,
            SPIN,
            |o| self.poll(o),
            |o, left| {
                {
                    let mut st = self.shared.lock();
                    let st = &mut *st;
                    let Some(cq) = st.cqs.get(&self.id) else {
                        return Ok(0);
                    };
                    st.d.arm_cq(cq).map_err(dev_err)?;
                }
                // Armed: what came before the arm is polled now, what comes
                // after raises the event.
                let n = self.poll(o)?;
                if n > 0 {
                    return Ok(n);
                }
                // The eventfd stays open while `shared` (which this CQ holds)
                // lives; it is waited on without the driver's lock.
                let fd = {
                    let st = self.shared.lock();
                    st.d.event_fd().as_raw_fd()
                };
                // SAFETY: the descriptor belongs to the driver, which outlives
                // this borrow (see above).
                let fd = unsafe { BorrowedFd::borrow_raw(fd) };
                crate::wait_readable(fd, left.min(SLICE));
                self.shared.lock().d.drain_events();
                Ok(0)
            },
        )
    }

    fn len(&self) -> usize {
        let st = self.shared.lock();
        st.cqs.get(&self.id).map_or(0, |cq| st.d.cq_len(cq))
    }

    fn depth(&self) -> u32 {
        self.depth
    }
}
