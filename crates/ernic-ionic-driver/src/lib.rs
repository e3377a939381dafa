//! # ernic-ionic-driver: a userspace ionic driver
//!
//! Attaches to an `ernic-server` socket as a vfio-user client (the part
//! QEMU plays), brings the device up as Linux's `ionic` and `ionic_rdma`
//! drivers do (IDENTIFY, LIF_IDENTIFY, the RDMA bootstrap of an event
//! queue, an admin CQ and an admin queue), creates objects through the
//! RDMA admin queue, and drives the rings as rdma-core's ionic provider
//! does: v1 WQEs written into the send and receive rings, doorbells, CQEs
//! read by their color. Work requests and completions are `ernic-core`'s
//! types, as `ernic-verbs` uses them.
//!
//! Protection domains are the driver's, as in Linux's `ionic_alloc_pd`:
//! [`Driver::alloc_pd`] hands out the lowest free id below [`MAX_PDS`] and
//! tells the device nothing; every CREATE_QP, CREATE_MR, CREATE_AH and
//! CREATE_SRQ carries the id of the PD its object belongs to, and the
//! device keeps objects of different PDs apart. The calls without a PD
//! use the driver's own, [`Driver::pd`] (id 0, taken at attach).
//!
//! Key 0, the reserved DMA key, is for privileged QPs only, as in Linux:
//! a PD becomes privileged when the driver takes a DMA MR for it
//! ([`Driver::get_dma_mr`], `ionic_get_dma_mr`), which ib_core does for
//! every kernel PD and never for a user one, and each QP created in a
//! privileged PD carries `IONIC_QPF_PRIVILEGED` in CREATE_QP (and
//! MODIFY_QP). The driver's own PD plays the kernel's and is privileged
//! from attach; those [`Driver::alloc_pd`] hands out (the verbs layer's,
//! a guest process's) are not, so their QPs' SGEs cannot name key 0.
//!
//! The driver's "guest memory" is a memfd it shares with the server
//! (DMA_MAP); rings and buffers are carved from it. Doorbells go into a
//! shared doorbell page when the server offers them (profile
//! `shared-doorbells`), one page per QP and CQ, else through BAR 2 as
//! messages.
//!
//! ```no_run
//! use ernic_ionic_driver::Driver;
//! let mut d = Driver::attach(std::path::Path::new("/tmp/ernic.sock"), 16 << 20)?;
//! let cq = d.create_cq(8)?;
//! # Ok::<(), ernic_ionic_driver::Error>(())
//! ```

#[allow(unsafe_code)]
pub mod provider;

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use ernic_core::{
    Access, Completion, Counter, Counters, Dest, DeviceId, Gid, Lkey, PageSource, QpAttr, QpCaps,
    QpInfo, QpState, QpType, Qpn, RemoteAddr, Rkey, Route, SendOp, SendWr, Sge, WcOpcode, WcStatus,
};
use ernic_ionic::bootstrap::RdmaQueue;
use ernic_ionic::bytes::{be16, be32, put};
use ernic_ionic::doorbell::PAGE;
use ernic_ionic::fw::{self, admin_cqe, admin_op, admin_wqe, cqe, dev_cmd, wqe};
use ernic_ionic::regs::{cmd, lif_identity as li, opcode, qtype};
use ernic_vfio::client::{Client, ClientError, eventfd, shared_memory};
use ernic_vfio::pci::{irq, region};
use ernic_vfio::proto::{Capabilities, DMA_READ, DMA_WRITE};
use ernic_vfio::shm::Mapping;

/// Where the driver's memory sits in the device's DMA address space.
const BASE: u64 = 0x1_0000_0000;
/// How long an admin command may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest WQE this driver writes.
const MAX_WQE: usize = 512;
/// PD ids the driver hands out: those below this (Linux's `IONIC_MAX_PD`).
pub const MAX_PDS: u32 = 1024;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The vfio-user conversation failed.
    #[error("vfio-user: {0}")]
    Client(#[from] ClientError),
    /// A local resource (memory, a mapping) could not be had.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A device command failed.
    #[error("device command {op} failed with status {status}")]
    DevCmd {
        /// The opcode.
        op: u8,
        /// `ionic_status_code`.
        status: u8,
    },
    /// An RDMA admin command failed.
    #[error("admin command {op} failed with status {status}")]
    Admin {
        /// The opcode.
        op: u8,
        /// `ionic_v1_admin_status`.
        status: u32,
    },
    /// The device did not answer in time.
    #[error("{0} timed out")]
    Timeout(&'static str),
    /// The driver's memory is used up.
    #[error("out of driver memory ({0} bytes wanted)")]
    NoMemory(u64),
    /// A request the driver cannot express.
    #[error("{0}")]
    Unsupported(&'static str),
    /// Every PD id is in use.
    #[error("all {max} protection domain ids are in use")]
    NoPd {
        /// How many ids there are.
        max: u32,
    },
    /// The queue has no room.
    #[error("queue full ({depth} entries)")]
    Full {
        /// The queue's depth.
        depth: u32,
    },
}

/// A ring in the driver's memory.
#[derive(Debug, Clone, Copy)]
struct Ring {
    off: u64,
    depth_log2: u8,
    stride_log2: u8,
}

impl Ring {
    fn depth(&self) -> u32 {
        1 << self.depth_log2
    }

    fn stride(&self) -> usize {
        1 << self.stride_log2
    }

    fn bytes(&self) -> u64 {
        1 << (self.depth_log2 + self.stride_log2)
    }

    fn slot(&self, i: u32) -> usize {
        (self.off + (u64::from(i & (self.depth() - 1)) << self.stride_log2)) as usize
    }

    fn gpa(&self) -> u64 {
        BASE + self.off
    }
}

/// A buffer in the driver's memory: its device address doubles as the
/// address MRs over it use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buf {
    off: u64,
    /// Bytes.
    pub len: u64,
}

impl Buf {
    /// The buffer's address as the device sees it (and as SGEs name it).
    pub fn addr(&self) -> u64 {
        BASE + self.off
    }
}

/// A completion queue.
#[derive(Debug)]
pub struct Cq {
    id: u32,
    ring: Ring,
    cons: u32,
    /// Completions read from CQEs that did not fit the caller's array
    /// (one MSN CQE completes many requests).
    pending: VecDeque<Completion>,
}

impl Cq {
    /// The device's id for it.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Entries it holds.
    pub fn depth(&self) -> u32 {
        self.ring.depth()
    }
}

/// A queue pair: its rings and where the driver is in them. What its
/// completions need (outstanding requests, receive ids) the driver keeps,
/// so a CQ is polled on its own, as in verbs.
#[derive(Debug)]
pub struct Qp {
    id: u32,
    qp_type: QpType,
    sq: Ring,
    /// No ring when receives come from an SRQ.
    rq: Option<Ring>,
    sq_prod: u32,
    rq_prod: u32,
    /// Doorbell page offset in the shared area, when there is one.
    db: Option<usize>,
}

/// A posted send request, until its completion is read.
#[derive(Debug, Clone, Copy)]
struct SendMeta {
    /// Its WQE's index (what a by-id CQE names).
    idx: u32,
    wr_id: u64,
    opcode: WcOpcode,
    signaled: bool,
    /// The sequence number it completes by, for requests of connected QPs
    /// that reach the peer; `None` for local ones and datagrams.
    msn: Option<u32>,
    byte_len: u32,
}

/// The driver's book of a QP, for turning its CQEs into completions.
#[derive(Debug)]
struct QpBook {
    /// Send requests in the order they were posted (and complete).
    sq: VecDeque<SendMeta>,
    /// Sequence numbers handed out.
    msn_prod: u32,
    /// Posted receives in order: (ring index, wr_id).
    rq: VecDeque<(u32, u64)>,
    /// Receives come from an SRQ (their completions carry the wr_id).
    srq: bool,
    /// A datagram QP (receives start with a 40-byte GRH).
    ud: bool,
    /// Created in a privileged PD: it may name key 0.
    privileged: bool,
    /// Attributes the device does not report back.
    caps: QpCaps,
    dest: Option<(Gid, Qpn)>,
}

/// A protection domain: an id the driver allocated, which the objects
/// created in it carry to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pd(u32);

impl Pd {
    /// The id the device knows it by.
    pub fn id(&self) -> u32 {
        self.0
    }
}

/// What [`Driver::create_qp_with`] creates.
#[derive(Debug, Clone, Copy)]
pub struct QpSpec<'a> {
    /// The protection domain it belongs to.
    pub pd: Pd,
    /// RC, UC, UD or GSI (which becomes QP 1).
    pub qp_type: QpType,
    /// Where send completions go.
    pub send_cq: &'a Cq,
    /// Where receive completions go.
    pub recv_cq: &'a Cq,
    /// Receives drawn from this SRQ instead of a ring of the QP's own.
    pub srq: Option<&'a Srq>,
    /// Queue sizes; depths round up to powers of two.
    pub caps: QpCaps,
}

/// A shared receive queue.
#[derive(Debug)]
pub struct Srq {
    id: u32,
    pd: Pd,
    ring: Ring,
    prod: u32,
    db: Option<usize>,
}

impl Srq {
    /// The id the device gave it.
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl Qp {
    /// The QP number.
    pub fn qpn(&self) -> Qpn {
        Qpn(self.id)
    }
}

/// A memory region over a driver buffer.
#[derive(Debug, Clone, Copy)]
pub struct Mr {
    /// Its key (lkey and rkey alike).
    pub key: u32,
    /// The buffer.
    pub buf: Buf,
}

impl Mr {
    /// An SGE of `len` bytes at `off` in the region.
    pub fn sge(&self, off: u64, len: u32) -> Sge {
        Sge {
            addr: self.buf.addr() + off,
            len,
            lkey: Lkey(self.key),
        }
    }

    /// The remote address of the byte at `off`, under the region's key.
    pub fn remote(&self, off: u64) -> RemoteAddr {
        RemoteAddr {
            addr: self.buf.addr() + off,
            rkey: Rkey(self.key),
        }
    }
}

/// The driver, attached to one device.
pub struct Driver {
    c: Client,
    mem: Mapping,
    _mem_fd: std::os::fd::OwnedFd,
    size: u64,
    /// Free runs of driver memory: offset to length.
    free: std::collections::BTreeMap<u64, u64>,
    aq: Ring,
    aq_prod: u32,
    acq: Ring,
    acq_cons: u32,
    shared: Option<(Mapping, usize)>,
    next_cq: u32,
    next_qp: u32,
    next_mr: u32,
    next_ah: u32,
    /// PD ids in use, and the driver's own PD.
    pds: std::collections::BTreeSet<u32>,
    pd: Pd,
    /// PD ids a DMA MR was taken for: their QPs are privileged.
    privileged: std::collections::BTreeSet<u32>,
    gid: Gid,
    qps: std::collections::HashMap<u32, QpBook>,
    /// Shared doorbell pages given to a QP or SRQ.
    pages_used: std::collections::BTreeSet<usize>,
    /// The event queue (vector 0) and how far it has been read.
    eq: Ring,
    eq_cons: u32,
    /// Vector 0's eventfd, and how many interrupts it has counted.
    event: std::fs::File,
    interrupts: u64,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("memory", &self.size)
            .field("shared_doorbells", &self.shared.is_some())
            .finish()
    }
}

/// Reads the CQE at `slot` if its color is `color`: the word holding the
/// color first, then (after an acquire fence) the rest, so a CQE the
/// device is still writing is never taken half old.
fn read_cqe(mem: &Mapping, slot: usize, color: bool, c: &mut [u8; cqe::LEN]) -> bool {
    // status_length and qid_type_flags: the last aligned 8 bytes.
    let Some(tail) = mem.load(slot + cqe::STATUS_LENGTH_BE) else {
        return false;
    };
    let tail_at = cqe::field::TAIL;
    c[tail_at.clone()].copy_from_slice(&tail.to_le_bytes());
    // A whole CQE's array: the getter cannot run past it.
    if cqe::Packet::new_unchecked(&*c).color() != color {
        return false;
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    mem.read(slot, &mut c[..tail_at.start]);
    true
}

/// Blocks until `fd` is readable or `timeout` passes.
#[allow(unsafe_code)]
pub fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, timeout: Duration) {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one pollfd on the stack for the call's length, and a
    // descriptor the caller keeps open while it waits (it is borrowed).
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// Caps whose rings are `2^depth_log2` 64-byte WQEs deep.
fn caps_of_depth(depth_log2: u8) -> QpCaps {
    let n = (1u32 << depth_log2) - 1;
    QpCaps {
        max_send_wr: n,
        max_recv_wr: n,
        max_send_sge: 2,
        max_recv_sge: 2,
        max_inline_data: 0,
    }
}

/// A RoCE v2 header template as the kernel driver builds one: Ethernet,
/// IPv4 from `src` to `dst`, UDP.
fn ipv4_template(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut h = vec![0u8; 14 + 20 + 8];
    put(&mut h, 12, &[0x08, 0x00]);
    h[14] = 0x45;
    put(&mut h, 14 + 12, &src);
    put(&mut h, 14 + 16, &dst);
    h
}

impl Driver {
    /// Attaches to the server at `socket` with `memory` bytes of driver
    /// memory, and brings the device up.
    pub fn attach(socket: &Path, memory: u64) -> Result<Driver, Error> {
        let mut c = Client::connect(socket, Duration::from_secs(10))?;
        c.version(&Capabilities::default())?;
        let size = memory.max(1 << 20).next_multiple_of(PAGE);
        let fd = shared_memory(c"ernic-driver", size)?;
        c.dma_map(BASE, size, 0, DMA_READ | DMA_WRITE, &fd)?;
        let mem = Mapping::new(&fd, 0, size as usize)?;
        let event = eventfd()?;
        c.irq_eventfds(irq::MSIX, 0, &[&event])?;
        // Shared doorbell pages, if the server offers them.
        let shared = match c.region_info(region::BAR2)? {
            (info, Some(dfd)) if !info.sparse.is_empty() => {
                let (area, len) = info.sparse[0];
                Some((
                    Mapping::new(&dfd, info.offset + area, len as usize)?,
                    len as usize,
                ))
            }
            _ => None,
        };
        let mut d = Driver {
            c,
            mem,
            _mem_fd: fd,
            size,
            free: std::collections::BTreeMap::from([(0, size)]),
            aq: Ring {
                off: 0,
                depth_log2: 0,
                stride_log2: 0,
            },
            aq_prod: 0,
            acq: Ring {
                off: 0,
                depth_log2: 0,
                stride_log2: 0,
            },
            acq_cons: 0,
            shared,
            next_cq: 1,
            next_qp: 2,
            next_mr: 1,
            next_ah: 1,
            pds: std::collections::BTreeSet::from([0]),
            pd: Pd(0),
            // The driver's own PD is the kernel's (`ib_alloc_pd` takes a
            // DMA MR for each).
            privileged: std::collections::BTreeSet::from([0]),
            qps: std::collections::HashMap::new(),
            pages_used: std::collections::BTreeSet::new(),
            eq: Ring {
                off: 0,
                depth_log2: 0,
                stride_log2: 0,
            },
            eq_cons: 0,
            event: std::fs::File::from(event),
            interrupts: 0,
            gid: "::ffff:10.0.0.1".parse().expect("a literal GID"),
        };
        d.bring_up()?;
        Ok(d)
    }

    /// Allocates a protection domain: the lowest id not in use, as the
    /// kernel driver does. The device learns it from the first object
    /// created in it.
    pub fn alloc_pd(&mut self) -> Result<Pd, Error> {
        let id = (0..MAX_PDS)
            .find(|i| !self.pds.contains(i))
            .ok_or(Error::NoPd { max: MAX_PDS })?;
        self.pds.insert(id);
        Ok(Pd(id))
    }

    /// Frees a protection domain whose objects are all destroyed; its id
    /// may be handed out again.
    pub fn dealloc_pd(&mut self, pd: Pd) {
        if pd != self.pd {
            self.pds.remove(&pd.0);
            self.privileged.remove(&pd.0);
        }
    }

    /// The driver's own PD, which the calls that name none use. It is
    /// privileged (see [`get_dma_mr`](Driver::get_dma_mr)).
    pub fn pd(&self) -> Pd {
        self.pd
    }

    /// Takes a DMA MR for `pd`, as Linux's `ionic_get_dma_mr` does for
    /// ib_core's kernel PDs: answers the reserved key 0
    /// ([`fw::DMA_LKEY`]), whose SGEs name bus addresses, and makes `pd`
    /// privileged, so the QPs created in it from now on may use it. The
    /// device is told nothing until such a QP is created.
    pub fn get_dma_mr(&mut self, pd: Pd) -> Lkey {
        self.privileged.insert(pd.0);
        Lkey(fw::DMA_LKEY)
    }

    /// Whether `pd`'s QPs are created privileged.
    pub fn is_privileged(&self, pd: Pd) -> bool {
        self.privileged.contains(&pd.0)
    }

    /// Whether doorbells go through shared pages (no message each).
    pub fn shared_doorbells(&self) -> bool {
        self.shared.is_some()
    }

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

    fn free_ring(&mut self, r: &Ring) {
        self.free(Buf {
            off: r.off,
            len: r.bytes().next_multiple_of(PAGE),
        });
    }

    fn ring(&mut self, depth_log2: u8, stride_log2: u8) -> Result<Ring, Error> {
        let b = self.alloc(1 << (depth_log2 + stride_log2))?;
        Ok(Ring {
            off: b.off,
            depth_log2,
            stride_log2,
        })
    }

    /// A device command through BAR 0.
    fn devcmd(&mut self, c: &[u8; 64]) -> Result<[u8; 16], Error> {
        self.c
            .region_write(region::BAR0, cmd::DONE as u64, &[0; 4])?;
        self.c.region_write(region::BAR0, cmd::CMD as u64, c)?;
        self.c
            .region_write(region::BAR0, cmd::DOORBELL as u64, &[1, 0, 0, 0])?;
        let comp = self
            .c
            .region_read(region::BAR0, cmd::COMP as u64, dev_cmd::COMP_LEN as u32)?;
        let done = dev_cmd::Comp::new_checked(&comp[..])
            .map_err(|_| Error::Unsupported("a short device command completion"))?;
        if done.status() != 0 {
            return Err(Error::DevCmd {
                op: dev_cmd::Packet::new_unchecked(c).opcode(),
                status: done.status(),
            });
        }
        let mut out = [0u8; dev_cmd::COMP_LEN];
        out.copy_from_slice(&comp[..dev_cmd::COMP_LEN]);
        Ok(out)
    }

    fn bring_up(&mut self) -> Result<(), Error> {
        let mut c = [0u8; dev_cmd::LEN];
        let mut p = dev_cmd::Packet::new_unchecked(&mut c);
        p.set_opcode(opcode::IDENTIFY);
        p.set_identify_ver(2);
        self.devcmd(&c)?;
        // LIF_IDENTIFY: type 0, version 1.
        c[..3].copy_from_slice(&[opcode::LIF_IDENTIFY, 0, 1]);
        self.devcmd(&c)?;
        let data = self
            .c
            .region_read(region::BAR0, (cmd::DATA + li::RDMA_VERSION) as u64, 4)?;
        if data[0] != 1 {
            return Err(Error::Unsupported("the device does not speak RDMA ABI v1"));
        }
        // The bootstrap: reset, one EQ (vector 0), the admin CQ on it, the
        // admin queue on that CQ.
        let eq = self.ring(9, 2)?;
        let acq = self.ring(6, 5)?;
        let aq = self.ring(6, 6)?;
        let queue = |op: u8, cid: u32, r: &Ring| {
            let mut c = [0u8; dev_cmd::LEN];
            let mut p = dev_cmd::Packet::new_unchecked(&mut c);
            p.set_opcode(op);
            RdmaQueue {
                qid: 0,
                version: 0,
                cid,
                dbid: 0,
                depth_log2: r.depth_log2,
                stride_log2: r.stride_log2,
                dma_addr: r.gpa(),
            }
            .emit(&mut p);
            c
        };
        let mut reset = [0u8; dev_cmd::LEN];
        reset[0] = ernic_ionic::bootstrap::opcode::RESET_LIF;
        self.devcmd(&reset)?;
        self.devcmd(&queue(ernic_ionic::bootstrap::opcode::CREATE_EQ, 0, &eq))?;
        self.devcmd(&queue(ernic_ionic::bootstrap::opcode::CREATE_CQ, 0, &acq))?;
        self.devcmd(&queue(
            ernic_ionic::bootstrap::opcode::CREATE_ADMINQ,
            0,
            &aq,
        ))?;
        self.aq = aq;
        self.acq = acq;
        self.eq = eq;
        Ok(())
    }

    /// Arms `cq`: the next completion (or one already waiting: arming is
    /// a level) puts an event on the EQ and raises its interrupt.
    pub fn arm_cq(&mut self, cq: &Cq) -> Result<(), Error> {
        let index = cq.cons & (cq.ring.depth() - 1);
        // Where the CQ has been read to, then the arm.
        self.ring_doorbell(None, qtype::RDMA_CQ, cq.id, 0, index)?;
        self.ring_doorbell(None, qtype::RDMA_CQ, cq.id, 1, index)
    }

    /// Interrupts of the EQ's vector seen so far.
    pub fn interrupts(&mut self) -> u64 {
        self.take_interrupts();
        self.interrupts
    }

    /// Adds what the eventfd counted since the last look; answers whether
    /// it had counted anything.
    fn take_interrupts(&mut self) -> bool {
        use std::io::Read;
        let mut count = [0u8; 8];
        match self.event.read(&mut count) {
            Ok(8) => {
                self.interrupts += u64::from_le_bytes(count);
                true
            }
            _ => false,
        }
    }

    /// Waits up to `timeout` for a CQ event: answers the CQ's id, or
    /// `None`. The EQ's interrupt (an eventfd) wakes the wait.
    pub fn wait_cq_event(&mut self, timeout: Duration) -> Result<Option<u32>, Error> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(cq) = self.next_cq_event() {
                return Ok(Some(cq));
            }
            let now = Instant::now();
            if now >= end {
                return Ok(None);
            }
            if !self.take_interrupts() {
                wait_readable(self.event_fd(), end - now);
            }
        }
    }

    /// The next event on the EQ (the id of a CQ that was armed and got an
    /// entry), if one is there.
    pub fn next_cq_event(&mut self) -> Option<u32> {
        let color = (self.eq_cons >> self.eq.depth_log2) & 1 == 0;
        let mut e = [0u8; fw::eqe::LEN];
        self.mem.read(self.eq.slot(self.eq_cons), &mut e);
        // A whole EQE's array: the getters cannot run past it.
        let evt = fw::eqe::Packet::new_unchecked(&e);
        if evt.color() != color {
            return None;
        }
        self.eq_cons = self.eq_cons.wrapping_add(1);
        Some(evt.qid())
    }

    /// Takes every event waiting on the EQ and the interrupts counted;
    /// answers how many events there were.
    pub fn drain_events(&mut self) -> usize {
        self.take_interrupts();
        std::iter::from_fn(|| self.next_cq_event()).count()
    }

    /// The eventfd the EQ's interrupt (MSI-X vector 0) is signalled on: a
    /// caller may block on it readable (without the driver) and then
    /// [`drain_events`](Driver::drain_events).
    pub fn event_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.event.as_fd()
    }

    /// A doorbell: into the shared page `page` (an offset in the shared
    /// area) when there is one, else as a BAR 2 write to page 0.
    fn ring_doorbell(
        &mut self,
        page: Option<usize>,
        t: u8,
        qid: u32,
        ring: u8,
        index: u32,
    ) -> Result<(), Error> {
        let v = u64::from(qid) << 24 | u64::from(ring) << 16 | u64::from(index & 0xffff);
        if let (Some(p), Some((m, _))) = (page, &self.shared) {
            // The WQE (a plain copy) before the doorbell that publishes it.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            m.store(p + 8 * usize::from(t), v);
            return Ok(());
        }
        self.c
            .region_write(region::BAR2, 8 * u64::from(t), &v.to_le_bytes())?;
        Ok(())
    }

    /// Runs admin command `op` with `body` as given, whatever it says: what
    /// a kernel driver with other ideas (or a bug) could send. Answers the
    /// CQE's two result words, or the status it failed with.
    pub fn raw_admin(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        self.admin(op, body)
    }

    /// Runs RDMA admin command `op` with `body` as written, whatever its
    /// fields say (at most four 64-byte strides with the header): what a
    /// hostile guest's driver can send. Answers as the typed calls do.
    pub fn admin_command(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        if body.len() + 4 > 4 * 64 {
            return Err(Error::Unsupported(
                "an admin command longer than four strides",
            ));
        }
        self.admin(op, body)
    }

    /// Runs an RDMA admin command; answers the two result words its CQE
    /// carries (ernic's SRQ commands use them).
    fn admin(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        let mut w = vec![0u8; admin_wqe::HDR_LEN + body.len()];
        w[admin_wqe::HDR_LEN..].copy_from_slice(body);
        // Unchecked: only the 4-byte header's setters are used.
        let mut header = admin_wqe::Packet::new_unchecked(&mut w[..]);
        header.set_op(op);
        header.set_len(body.len() as u16);
        let index = self.aq_prod;
        for chunk in w.chunks(64) {
            let mut stride = [0u8; 64];
            stride[..chunk.len()].copy_from_slice(chunk);
            self.mem.write(self.aq.slot(self.aq_prod), &stride);
            self.aq_prod = self.aq_prod.wrapping_add(1);
        }
        self.ring_doorbell(
            None,
            qtype::RDMA_AQ,
            0,
            0,
            self.aq_prod & (self.aq.depth() - 1),
        )?;
        let slot = self.acq.slot(self.acq_cons);
        let color = (self.acq_cons >> self.acq.depth_log2) & 1 == 0;
        let end = Instant::now() + ADMIN_TIMEOUT;
        let mut c = [0u8; cqe::LEN];
        loop {
            if read_cqe(&self.mem, slot, color, &mut c) {
                // A whole CQE's array: the getters cannot run past it.
                let done = admin_cqe::Packet::new_unchecked(&c);
                self.acq_cons = self.acq_cons.wrapping_add(1);
                let idx = done.cmd_idx();
                debug_assert_eq!(u32::from(idx), index & (self.aq.depth() - 1));
                let status = done.status();
                if done.failed() {
                    return Err(Error::Admin { op, status });
                }
                return Ok(done.result());
            }
            if Instant::now() > end {
                return Err(Error::Timeout("an admin command"));
            }
            std::hint::spin_loop();
        }
    }

    /// Creates a CQ of `2^depth_log2` entries.
    pub fn create_cq(&mut self, depth_log2: u8) -> Result<Cq, Error> {
        let ring = self.ring(depth_log2, 5)?;
        let id = self.next_cq;
        let mut b = [0u8; fw::create_cq::LEN];
        b[fw::create_cq::DEPTH_LOG2] = depth_log2;
        b[fw::create_cq::STRIDE_LOG2] = 5;
        put(&mut b, fw::create_cq::ID_VER, &id.to_le_bytes());
        put(&mut b, fw::create_cq::MAP_COUNT, &1u32.to_le_bytes());
        put(&mut b, fw::create_cq::DMA_ADDR, &ring.gpa().to_le_bytes());
        if let Err(e) = self.admin(admin_op::CREATE_CQ, &b) {
            self.free_ring(&ring);
            return Err(e);
        }
        self.next_cq += 1;
        Ok(Cq {
            id,
            ring,
            cons: 0,
            pending: VecDeque::new(),
        })
    }

    /// Creates an RC QP on `cq` (sends and receives) with 64-byte WQEs, in
    /// the driver's own PD.
    pub fn create_qp(&mut self, cq: &Cq, depth_log2: u8) -> Result<Qp, Error> {
        self.create_qp_in(self.pd, cq, depth_log2)
    }

    /// As [`create_qp`](Driver::create_qp), in `pd`.
    pub fn create_qp_in(&mut self, pd: Pd, cq: &Cq, depth_log2: u8) -> Result<Qp, Error> {
        self.create_qp_with(&QpSpec {
            pd,
            qp_type: QpType::Rc,
            send_cq: cq,
            recv_cq: cq,
            srq: None,
            caps: caps_of_depth(depth_log2),
        })
    }

    /// Creates a datagram QP on `cq` in the driver's own PD: UD, or with
    /// `gsi` the GSI QP (QP 1), and makes it ready (INIT with `qkey`, RTR,
    /// RTS).
    pub fn create_ud_qp(
        &mut self,
        cq: &Cq,
        depth_log2: u8,
        gsi: bool,
        qkey: u32,
    ) -> Result<Qp, Error> {
        self.create_ud_qp_in(self.pd, cq, depth_log2, gsi, qkey)
    }

    /// As [`create_ud_qp`](Driver::create_ud_qp), in `pd`.
    pub fn create_ud_qp_in(
        &mut self,
        pd: Pd,
        cq: &Cq,
        depth_log2: u8,
        gsi: bool,
        qkey: u32,
    ) -> Result<Qp, Error> {
        let qp = self.create_qp_with(&QpSpec {
            pd,
            qp_type: if gsi { QpType::Gsi } else { QpType::Ud },
            send_cq: cq,
            recv_cq: cq,
            srq: None,
            caps: caps_of_depth(depth_log2),
        })?;
        for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
            self.modify_qp(
                &qp,
                &QpAttr {
                    state: Some(state),
                    qkey: (state == QpState::Init).then_some(qkey),
                    ..QpAttr::default()
                },
            )?;
        }
        Ok(qp)
    }

    /// Creates an address handle for `dgid` (sent from this driver's GID)
    /// in the driver's own PD; answers its id.
    pub fn create_ah(&mut self, dgid: Gid) -> Result<u32, Error> {
        self.create_ah_in(self.pd, dgid)
    }

    /// As [`create_ah`](Driver::create_ah), in `pd`.
    pub fn create_ah_in(&mut self, pd: Pd, dgid: Gid) -> Result<u32, Error> {
        let (Some(src), Some(dst)) = (self.gid.to_ipv4(), dgid.to_ipv4()) else {
            return Err(Error::Unsupported("IPv4-mapped GIDs only"));
        };
        let hdr = self.alloc(PAGE)?;
        let h = ipv4_template(src.octets(), dst.octets());
        self.write(&hdr, 0, &h);
        let id = self.next_ah;
        use fw::create_ah as f;
        let mut b = [0u8; f::LEN];
        put(&mut b, f::DMA_ADDR, &hdr.addr().to_le_bytes());
        put(&mut b, f::LENGTH, &(h.len() as u32).to_le_bytes());
        put(&mut b, f::PD_ID, &pd.0.to_le_bytes());
        put(&mut b, f::ID_VER, &id.to_le_bytes());
        let r = self.admin(admin_op::CREATE_AH, &b);
        // The device reads the template during the command.
        self.free(hdr);
        r?;
        self.next_ah += 1;
        Ok(id)
    }

    /// Posts a datagram SEND of `sge` through `ah` to QP `dest` with
    /// `qkey`; it completes by WQE id.
    pub fn post_send_ud(
        &mut self,
        qp: &mut Qp,
        wr_id: u64,
        ah: u32,
        dest: Qpn,
        qkey: u32,
        sge: Sge,
    ) -> Result<(), Error> {
        let sgl = [sge];
        let mut wr = SendWr::new(wr_id, SendOp::Send).sgl(&sgl);
        wr.ud = Some(ernic_core::UdDest {
            ah: ernic_core::AhId(ah),
            remote_qpn: dest,
            remote_qkey: qkey,
        });
        self.post_send(qp, &wr)
    }

    /// As [`create_qp`](Driver::create_qp), its receives drawn from `srq`.
    pub fn create_qp_with_srq(&mut self, cq: &Cq, depth_log2: u8, srq: &Srq) -> Result<Qp, Error> {
        self.create_qp_with(&QpSpec {
            pd: srq.pd,
            qp_type: QpType::Rc,
            send_cq: cq,
            recv_cq: cq,
            srq: Some(srq),
            caps: caps_of_depth(depth_log2),
        })
    }

    /// Creates a QP in the RESET state as `spec` describes: rings sized
    /// for its caps (WQEs of 64 bytes, or larger for more SGEs or inline
    /// data), and a shared doorbell page of its own when one is left.
    pub fn create_qp_with(&mut self, spec: &QpSpec<'_>) -> Result<Qp, Error> {
        let c = spec.caps;
        let depth_log2 = |n: u32| -> Result<u8, Error> {
            let d = n.saturating_add(1).max(4).checked_next_power_of_two();
            match d {
                Some(d) if d <= 1 << 16 => Ok(d.trailing_zeros() as u8),
                _ => Err(Error::Unsupported("a queue deeper than 65536")),
            }
        };
        let stride_log2 = |body: usize| -> Result<u8, Error> {
            let s = (wqe::PLD + body).max(64).next_power_of_two();
            if s > 4096 {
                return Err(Error::Unsupported("WQEs over 4096 bytes"));
            }
            Ok(s.trailing_zeros() as u8)
        };
        let sq_body =
            (c.max_send_sge.max(1) as usize * wqe::SGE_LEN).max(c.max_inline_data as usize);
        let rq_body = c.max_recv_sge.max(1) as usize * wqe::SGE_LEN;
        let qpt = match spec.qp_type {
            QpType::Rc => fw::qpt::RC,
            QpType::Uc => fw::qpt::UC,
            QpType::Ud | QpType::Gsi => fw::qpt::UD,
        };
        let gsi = spec.qp_type == QpType::Gsi;
        let id = if gsi { fw::GSI_QPID } else { self.next_qp };
        if self.qps.contains_key(&id) {
            return Err(Error::Unsupported("the GSI QP exists already"));
        }
        let sq = self.ring(depth_log2(c.max_send_wr)?, stride_log2(sq_body)?)?;
        let rq = match spec.srq {
            Some(_) => None,
            None => match depth_log2(c.max_recv_wr).and_then(|d| Ok((d, stride_log2(rq_body)?))) {
                Ok((d, st)) => match self.ring(d, st) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        self.free_ring(&sq);
                        return Err(e);
                    }
                },
                Err(e) => {
                    self.free_ring(&sq);
                    return Err(e);
                }
            },
        };
        use fw::create_qp as f;
        let mut b = [0u8; f::LEN];
        put(&mut b, f::PD_ID, &spec.pd.0.to_le_bytes());
        // As `ionic_create_qp_cmd`: privileged if its PD is.
        let privileged = self.is_privileged(spec.pd);
        let priv_flags = if privileged { fw::qpf::PRIVILEGED } else { 0 };
        put(
            &mut b,
            f::PRIV_FLAGS_BE,
            &u32::from(priv_flags).to_be_bytes(),
        );
        put(&mut b, f::SQ_CQ_ID, &spec.send_cq.id.to_le_bytes());
        put(&mut b, f::RQ_CQ_ID, &spec.recv_cq.id.to_le_bytes());
        for (d, st, n, a, r) in [
            (
                f::SQ_DEPTH_LOG2,
                f::SQ_STRIDE_LOG2,
                f::SQ_MAP_COUNT,
                f::SQ_DMA_ADDR,
                Some(&sq),
            ),
            (
                f::RQ_DEPTH_LOG2,
                f::RQ_STRIDE_LOG2,
                f::RQ_MAP_COUNT,
                f::RQ_DMA_ADDR,
                rq.as_ref(),
            ),
        ] {
            let Some(r) = r else { continue }; // no RQ ring of its own
            b[d] = r.depth_log2;
            b[st] = r.stride_log2;
            put(&mut b, n, &1u32.to_le_bytes());
            put(&mut b, a, &r.gpa().to_le_bytes());
        }
        let srq_id = spec.srq.map_or(u32::MAX, |s| s.id);
        put(&mut b, f::RQ_TBL_INDEX_SRQ_ID, &srq_id.to_le_bytes());
        put(&mut b, f::ID_VER, &id.to_le_bytes());
        b[f::TYPE_STATE] = qpt;
        if let Err(e) = self.admin(admin_op::CREATE_QP, &b) {
            self.free_ring(&sq);
            if let Some(r) = &rq {
                self.free_ring(r);
            }
            return Err(e);
        }
        if !gsi {
            self.next_qp += 1;
        }
        // A doorbell page of its own in the shared area (one per QP, so no
        // two queues of a type share a word); trapped when none is left.
        let db = self.take_page();
        let caps = QpCaps {
            max_send_wr: sq.depth() - 1,
            max_recv_wr: rq.map_or(0, |r| r.depth() - 1),
            max_send_sge: ((sq.stride() - wqe::PLD) / wqe::SGE_LEN) as u32,
            max_recv_sge: rq.map_or(0, |r| ((r.stride() - wqe::PLD) / wqe::SGE_LEN) as u32),
            max_inline_data: (sq.stride() - wqe::PLD) as u32,
        };
        self.qps.insert(
            id,
            QpBook {
                sq: VecDeque::with_capacity(sq.depth() as usize),
                msn_prod: 0,
                rq: VecDeque::with_capacity(rq.map_or(0, |r| r.depth() as usize)),
                srq: spec.srq.is_some(),
                ud: qpt == fw::qpt::UD,
                privileged,
                caps,
                dest: None,
            },
        );
        Ok(Qp {
            id,
            qp_type: spec.qp_type,
            sq,
            rq,
            sq_prod: 0,
            rq_prod: 0,
            db,
        })
    }

    /// The sizes `qp` was created with (depths and SGE counts as the rings
    /// allow, which may exceed what was asked).
    pub fn qp_caps(&self, qp: &Qp) -> QpCaps {
        self.qps.get(&qp.id).map_or(QpCaps::default(), |b| b.caps)
    }

    /// Allocates an MR for fast registration of up to `max_pages` 4 KiB
    /// pages in the driver's own PD; REG_MR work requests bind it (see
    /// [`post_reg_mr`](Driver::post_reg_mr)).
    pub fn alloc_fast_mr(&mut self, max_pages: u32) -> Result<u32, Error> {
        self.alloc_fast_mr_in(self.pd, max_pages)
    }

    /// As [`alloc_fast_mr`](Driver::alloc_fast_mr), in `pd`: only a QP of
    /// `pd` can bind or invalidate it.
    pub fn alloc_fast_mr_in(&mut self, pd: Pd, max_pages: u32) -> Result<u32, Error> {
        let key = self.next_mr << 8;
        use fw::create_mr as f;
        let mut b = [0u8; f::LEN];
        put(&mut b, f::PD_ID, &pd.0.to_le_bytes());
        put(&mut b, f::ID_VER, &key.to_le_bytes());
        put(&mut b, f::MAP_COUNT, &max_pages.to_le_bytes());
        // IONIC_MRF_PHYS_MR: a key the work requests set, invalidation.
        put(
            &mut b,
            f::DBID_FLAGS,
            &((1u16 << 13) | (1 << 15)).to_le_bytes(),
        );
        b[f::PAGE_SIZE_LOG2] = 12;
        self.admin(admin_op::CREATE_MR, &b)?;
        self.next_mr += 1;
        Ok(key)
    }

    /// Posts a fast registration: `mr` (from
    /// [`alloc_fast_mr`](Driver::alloc_fast_mr)) gets key byte `variant`
    /// and covers `len` bytes of `buf` at their device address, with every
    /// right. Answers the new key.
    pub fn post_reg_mr(
        &mut self,
        qp: &mut Qp,
        wr_id: u64,
        mr: u32,
        variant: u8,
        buf: &Buf,
        len: u64,
    ) -> Result<u32, Error> {
        let key = mr & !0xff | u32::from(variant);
        let op = SendOp::RegMr(ernic_core::RegMr {
            key: ernic_core::Lkey(key),
            iova: buf.addr(),
            len,
            access: Access::ALL,
            pages: PageSource::Contiguous { dma: buf.addr() },
        });
        self.post_send(qp, &SendWr::new(wr_id, op))?;
        Ok(key)
    }

    /// Posts a local invalidation of `key`.
    pub fn post_local_inv(&mut self, qp: &mut Qp, wr_id: u64, key: u32) -> Result<(), Error> {
        let op = SendOp::LocalInv(ernic_core::Lkey(key));
        self.post_send(qp, &SendWr::new(wr_id, op))
    }

    /// Destroys a QP.
    pub fn destroy_qp(&mut self, qp: Qp) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_QP, &qp.id.to_le_bytes())?;
        self.qps.remove(&qp.id);
        self.give_page(qp.db);
        self.free_ring(&qp.sq);
        if let Some(r) = &qp.rq {
            self.free_ring(r);
        }
        Ok(())
    }

    /// A shared doorbell page no other queue uses (its offset in the shared
    /// area), or `None` (trapped doorbells) when there is none left.
    fn take_page(&mut self) -> Option<usize> {
        let (_, len) = self.shared.as_ref()?;
        let pages = len / PAGE as usize;
        let free = (0..pages).find(|p| !self.pages_used.contains(p))?;
        self.pages_used.insert(free);
        Some(free * PAGE as usize)
    }

    fn give_page(&mut self, page: Option<usize>) {
        if let Some(p) = page {
            self.pages_used.remove(&(p / PAGE as usize));
        }
    }

    /// Destroys a CQ no QP uses.
    pub fn destroy_cq(&mut self, cq: Cq) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_CQ, &cq.id.to_le_bytes())?;
        self.free_ring(&cq.ring);
        Ok(())
    }

    /// Deregisters an MR.
    pub fn dereg_mr(&mut self, mr: Mr) -> Result<(), Error> {
        self.dereg_key(mr.key)
    }

    /// Creates a shared receive queue of `2^depth_log2` 64-byte WQEs with
    /// low watermark `limit`, in the driver's own PD.
    pub fn create_srq(&mut self, depth_log2: u8, limit: u32) -> Result<Srq, Error> {
        self.create_srq_in(self.pd, depth_log2, limit)
    }

    /// As [`create_srq`](Driver::create_srq), in `pd`: only QPs of `pd`
    /// may draw from it.
    pub fn create_srq_in(&mut self, pd: Pd, depth_log2: u8, limit: u32) -> Result<Srq, Error> {
        let ring = self.ring(depth_log2, 6)?;
        use fw::srq as f;
        let mut b = [0u8; f::CREATE_LEN];
        put(&mut b, f::PD_ID, &pd.0.to_le_bytes());
        b[f::DEPTH_LOG2] = depth_log2;
        b[f::STRIDE_LOG2] = 6;
        put(&mut b, f::MAP_COUNT, &1u32.to_le_bytes());
        put(&mut b, f::DMA_ADDR, &ring.gpa().to_le_bytes());
        put(&mut b, f::LIMIT, &limit.to_le_bytes());
        let [id, _] = self.admin(fw::srq_op::CREATE_SRQ, &b)?;
        let db = self.take_page();
        Ok(Srq {
            id,
            pd,
            ring,
            prod: 0,
            db,
        })
    }

    /// Sets an SRQ's low watermark.
    pub fn modify_srq(&mut self, srq: &Srq, limit: u32) -> Result<(), Error> {
        let mut b = [0u8; fw::srq::MODIFY_LEN];
        put(&mut b, fw::srq::ID, &srq.id.to_le_bytes());
        put(&mut b, fw::srq::MODIFY_LIMIT, &limit.to_le_bytes());
        self.admin(fw::srq_op::MODIFY_SRQ, &b).map(|_| ())
    }

    /// An SRQ's (limit, receives outstanding).
    pub fn query_srq(&mut self, srq: &Srq) -> Result<(u32, u32), Error> {
        let [limit, n] = self.admin(fw::srq_op::QUERY_SRQ, &srq.id.to_le_bytes())?;
        Ok((limit, n))
    }

    /// Destroys an SRQ no QP uses.
    pub fn destroy_srq(&mut self, srq: Srq) -> Result<(), Error> {
        self.admin(fw::srq_op::DESTROY_SRQ, &srq.id.to_le_bytes())?;
        self.give_page(srq.db);
        self.free_ring(&srq.ring);
        Ok(())
    }

    /// Posts a receive on an SRQ; its completion names the QP that took it
    /// and carries `wr_id`.
    pub fn post_srq_recv(&mut self, srq: &mut Srq, wr_id: u64, sge: Sge) -> Result<(), Error> {
        self.post_srq_recv_sgl(srq, wr_id, &[sge])
    }

    /// As [`post_srq_recv`](Driver::post_srq_recv), into several SGEs (as
    /// many as fit the SRQ's 64-byte WQEs: two).
    pub fn post_srq_recv_sgl(
        &mut self,
        srq: &mut Srq,
        wr_id: u64,
        sgl: &[Sge],
    ) -> Result<(), Error> {
        let mut w = [0u8; 64];
        if !recv_wqe(&mut w, wr_id, sgl) {
            return Err(Error::Unsupported("more SGEs than the SRQ's WQEs hold"));
        }
        self.mem.write(srq.ring.slot(srq.prod), &w);
        srq.prod = srq.prod.wrapping_add(1);
        let index = srq.prod & (srq.ring.depth() - 1);
        self.ring_doorbell(srq.db, qtype::RDMA_RQ, srq.id, 0, index)
    }

    /// The GID this driver's QPs are known by (an IPv4-mapped one;
    /// `::ffff:10.0.0.1` unless set). With the server on a mesh it must be
    /// one of the guest GIDs the server was given.
    pub fn set_gid(&mut self, gid: Gid) -> Result<(), Error> {
        if gid.to_ipv4().is_none() {
            return Err(Error::Unsupported("the driver's GID must be IPv4-mapped"));
        }
        self.gid = gid;
        Ok(())
    }

    /// Moves `qp` through INIT, RTR (to `peer` at this driver's GID) and
    /// RTS, granting the peer every remote right.
    pub fn connect(&mut self, qp: &Qp, peer: Qpn) -> Result<(), Error> {
        let gid = self.gid;
        self.connect_to(qp, gid, peer)
    }

    /// As [`connect`](Driver::connect), to QP `peer` at `peer_gid` (a QP of
    /// another server's guest, over the mesh).
    pub fn connect_to(&mut self, qp: &Qp, peer_gid: Gid, peer: Qpn) -> Result<(), Error> {
        let rights = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
        for (state, access, dest) in [
            (QpState::Init, Some(rights), None),
            (QpState::Rtr, None, Some((peer_gid, peer))),
            (QpState::Rts, None, None),
        ] {
            self.modify_qp(
                qp,
                &QpAttr {
                    state: Some(state),
                    access,
                    dest,
                    path_mtu: dest.map(|_| 4096),
                    ..QpAttr::default()
                },
            )?;
        }
        Ok(())
    }

    /// Changes `qp`'s attributes and state through MODIFY_QP, as the
    /// kernel's `ionic_modify_qp` does: a destination becomes a RoCE v2
    /// IPv4 header template from this driver's GID to it.
    pub fn modify_qp(&mut self, qp: &Qp, a: &QpAttr) -> Result<(), Error> {
        use fw::{attr, mod_qp as f};
        let mut b = [0u8; f::LEN];
        let mut mask = 0u32;
        if let Some(state) = a.state {
            mask |= attr::STATE;
            b[f::TYPE_STATE] = fw::qps::from_state(state);
        }
        // As `ionic_modify_qp_cmd`: the flags carry the QP's privilege
        // whatever the mask says.
        let mut flags = match self.qps.get(&qp.id) {
            Some(book) if book.privileged => fw::qpf::PRIVILEGED,
            _ => 0,
        };
        if let Some(access) = a.access {
            mask |= attr::ACCESS_FLAGS;
            flags |= fw::qpf::from_access(access);
        }
        put(&mut b, f::ACCESS_FLAGS_BE, &flags.to_be_bytes());
        if let Some(qkey) = a.qkey {
            mask |= attr::QKEY;
            put(&mut b, f::QKEY_DEST_QPN, &qkey.to_le_bytes());
        }
        if let Some(mtu) = a.path_mtu {
            if !mtu.is_power_of_two() || !(256..=4096).contains(&mtu) {
                return Err(Error::Unsupported(
                    "a path MTU of 256, 512, 1024, 2048 or 4096",
                ));
            }
            mask |= attr::PATH_MTU;
            b[f::PMTU] = fw::pmtu::from_bytes(mtu);
        }
        if let Some(psn) = a.rq_psn {
            mask |= attr::RQ_PSN;
            put(&mut b, f::RQ_PSN, &psn.to_le_bytes());
        }
        if let Some(psn) = a.sq_psn {
            mask |= attr::SQ_PSN;
            put(&mut b, f::SQ_PSN, &psn.to_le_bytes());
        }
        let mut hdr = None;
        if let Some((gid, peer)) = a.dest {
            let (Some(src), Some(dst)) = (self.gid.to_ipv4(), gid.to_ipv4()) else {
                return Err(Error::Unsupported("IPv4-mapped GIDs only"));
            };
            let page = self.alloc(PAGE)?;
            let h = ipv4_template(src.octets(), dst.octets());
            self.write(&page, 0, &h);
            mask |= attr::AV | attr::DEST_QPN;
            put(&mut b, f::QKEY_DEST_QPN, &peer.0.to_le_bytes());
            put(&mut b, f::AH_ID_LEN, &(h.len() as u32).to_le_bytes());
            put(&mut b, f::DMA_ADDR, &page.addr().to_le_bytes());
            hdr = Some(page);
        }
        put(&mut b, f::ATTR_MASK_BE, &mask.to_be_bytes());
        put(&mut b, f::ID_VER, &qp.id.to_le_bytes());
        let r = self.admin(admin_op::MODIFY_QP, &b);
        // The device reads the template during the command.
        if let Some(page) = hdr {
            self.free(page);
        }
        r?;
        if let (Some(dest), Some(book)) = (a.dest, self.qps.get_mut(&qp.id)) {
            book.dest = Some(dest);
        }
        Ok(())
    }

    /// `qp`'s attributes: what QUERY_QP reports (state, rights, path MTU,
    /// PSNs, Q_Key or peer QP), with what the driver knows (type, caps,
    /// the peer's GID, requests and receives outstanding).
    pub fn query_qp(&mut self, qp: &Qp) -> Result<QpInfo, Error> {
        use fw::query_qp as f;
        let bufs = self.alloc(PAGE)?;
        let mut b = [0u8; f::LEN];
        put(&mut b, f::SQ_DMA_ADDR, &bufs.addr().to_le_bytes());
        put(&mut b, f::RQ_DMA_ADDR, &(bufs.addr() + 64).to_le_bytes());
        put(&mut b, f::ID_VER, &qp.id.to_le_bytes());
        let r = self.admin(admin_op::QUERY_QP, &b);
        let (mut sq, mut rq) = ([0u8; 20], [0u8; 12]);
        self.read(&bufs, 0, &mut sq);
        self.read(&bufs, 64, &mut rq);
        self.free(bufs);
        r?;
        let book = self
            .qps
            .get(&qp.id)
            .ok_or(Error::Unsupported("no such QP"))?;
        let state = fw::qps::to_state(rq[0] >> 4).unwrap_or(QpState::Err);
        let access = fw::qpf::to_access(be16(&sq, 2));
        let qkey_dest = be32(&sq, 8);
        let datagram = qp.qp_type.is_datagram();
        Ok(QpInfo {
            qpn: Qpn(qp.id),
            qp_type: qp.qp_type,
            state,
            access,
            qkey: datagram.then_some(qkey_dest),
            // The device says which QP; where it lives it does not say.
            dest: book
                .dest
                .filter(|_| !datagram && matches!(state, QpState::Rtr | QpState::Rts))
                .map(|(gid, qpn)| Dest {
                    gid,
                    qpn,
                    route: Route::Local(DeviceId(0)),
                }),
            path_mtu: fw::pmtu::to_bytes(rq[0] & 0xf).unwrap_or(1024),
            rq_psn: be32(&sq, 16),
            sq_psn: be32(&rq, 4),
            caps: book.caps,
            sq_outstanding: book.sq.len() as u32,
            rq_outstanding: book.rq.len() as u32,
        })
    }

    /// The device's counters (STATS_HDRS and STATS_VALS), or with `qp`
    /// that QP's (QP_STATS_VALS), matched to ernic's by name.
    pub fn counters(&mut self, qp: Option<&Qp>) -> Result<Counters, Error> {
        use fw::{stat, stats_hdr as f};
        let n = Counter::ALL.len() + 1;
        let bufs = self.alloc((n * stat::LEN + n * 8) as u64)?;
        let vals_at = (n * stat::LEN) as u64;
        let cmd = |addr: u64, len: usize, id: u32| {
            let mut b = [0u8; f::LEN];
            put(&mut b, f::DMA_ADDR, &addr.to_le_bytes());
            put(&mut b, f::LENGTH, &(len as u32).to_le_bytes());
            put(&mut b, f::ID_VER, &id.to_le_bytes());
            b
        };
        let (hdrs_op, vals_op, id) = match qp {
            Some(q) => (admin_op::QP_STATS_HDRS, admin_op::QP_STATS_VALS, q.id),
            None => (admin_op::STATS_HDRS, admin_op::STATS_VALS, 0),
        };
        let r = self
            .admin(hdrs_op, &cmd(bufs.addr(), n * stat::LEN, id))
            .and_then(|_| self.admin(vals_op, &cmd(bufs.addr() + vals_at, n * 8, id)));
        let mut raw = vec![0u8; bufs.len as usize];
        self.read(&bufs, 0, &mut raw);
        self.free(bufs);
        r?;
        let mut out = Counters::default();
        for h in raw[..n * stat::LEN].chunks_exact(stat::LEN) {
            let type_off = be32(h, 0);
            if type_off >> stat::TYPE_SHIFT != stat::TYPE_LE64 {
                break;
            }
            let at = vals_at as usize + (type_off & 0xffff) as usize;
            let name = &h[stat::NAME..stat::NAME + stat::NAME_LEN];
            let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
            let (Some(k), Some(v)) = (
                Counter::ALL.iter().find(|k| k.name().as_bytes() == name),
                raw.get(at..at + 8),
            ) else {
                continue;
            };
            out.add(*k, u64::from_le_bytes(v.try_into().expect("8")));
        }
        Ok(out)
    }

    /// Registers `buf` with every right in the driver's own PD; its key
    /// names it in SGEs and as an rkey.
    pub fn reg_mr(&mut self, buf: Buf) -> Result<Mr, Error> {
        self.reg_mr_in(self.pd, buf)
    }

    /// As [`reg_mr`](Driver::reg_mr), in `pd`: only QPs of `pd` reach the
    /// buffer through its key.
    pub fn reg_mr_in(&mut self, pd: Pd, buf: Buf) -> Result<Mr, Error> {
        let key = self.reg_range_in(pd, buf.addr(), buf.len, Access::ALL)?;
        Ok(Mr { key, buf })
    }

    /// Registers `len` bytes of driver memory at device address `addr`
    /// with `access` in the driver's own PD; answers the key.
    pub fn reg_range(&mut self, addr: u64, len: u64, access: Access) -> Result<u32, Error> {
        self.reg_range_in(self.pd, addr, len, access)
    }

    /// As [`reg_range`](Driver::reg_range), in `pd`.
    pub fn reg_range_in(
        &mut self,
        pd: Pd,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, Error> {
        let key = self.next_mr << 8;
        use fw::create_mr as f;
        let mut b = [0u8; f::LEN];
        put(&mut b, f::PD_ID, &pd.0.to_le_bytes());
        put(&mut b, f::VA, &addr.to_le_bytes());
        put(&mut b, f::LENGTH, &len.to_le_bytes());
        put(&mut b, f::ID_VER, &key.to_le_bytes());
        put(&mut b, f::MAP_COUNT, &1u32.to_le_bytes());
        put(&mut b, f::DMA_ADDR, &addr.to_le_bytes());
        put(
            &mut b,
            f::DBID_FLAGS,
            &fw::mrf::from_access(access).to_le_bytes(),
        );
        b[f::PAGE_SIZE_LOG2] = 12;
        self.admin(admin_op::CREATE_MR, &b)?;
        self.next_mr += 1;
        Ok(key)
    }

    /// Deregisters the MR with `key` (a registered or a fast one).
    pub fn dereg_key(&mut self, key: u32) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_MR, &key.to_le_bytes())
            .map(|_| ())
    }

    /// Destroys an address handle.
    pub fn destroy_ah(&mut self, ah: u32) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_AH, &ah.to_le_bytes())
            .map(|_| ())
    }

    /// CQEs waiting in `cq` (with completions read but not yet taken).
    pub fn cq_len(&self, cq: &Cq) -> usize {
        let mut c = [0u8; cqe::LEN];
        let mut n = cq.pending.len();
        for i in 0..cq.ring.depth() {
            let at = cq.cons.wrapping_add(i);
            let color = (at >> cq.ring.depth_log2) & 1 == 0;
            if !read_cqe(&self.mem, cq.ring.slot(at), color, &mut c) {
                break;
            }
            n += 1;
        }
        n
    }

    /// Posts a send request: its WQE into the send ring, then the doorbell.
    /// Every operation of ernic's verbs is expressed: SGEs up to what the
    /// QP's WQEs hold, inline data, datagram destinations, fast
    /// registration of contiguous pages and invalidation.
    pub fn post_send(&mut self, qp: &mut Qp, wr: &SendWr<'_>) -> Result<(), Error> {
        let stride = qp.sq.stride();
        let connected = qp.qp_type.is_connected();
        let book = self
            .qps
            .get_mut(&qp.id)
            .ok_or(Error::Unsupported("no such QP"))?;
        if book.sq.len() as u32 >= qp.sq.depth() - 1 {
            return Err(Error::Full {
                depth: qp.sq.depth(),
            });
        }
        let mut buf = [0u8; MAX_WQE];
        // The QP's stride is at least a WQE's 64 bytes (`create_qp`).
        let mut w = wqe::Packet::new_checked(&mut buf[..stride])
            .map_err(|_| Error::Unsupported("a send stride shorter than a WQE"))?;
        let mut flags = 0u16;
        for (on, bit) in [
            (wr.flags.signaled, wqe::FLAG_SIG),
            (wr.flags.solicited, wqe::FLAG_SOL),
            (wr.flags.fence, wqe::FLAG_FENCE),
        ] {
            if on {
                flags |= bit;
            }
        }
        let mut remote = None;
        let mut key_word = 0u32;
        let mut sge_at = wqe::PLD;
        let mut max_sges = (stride - wqe::PLD) / wqe::SGE_LEN;
        let op = match wr.op {
            SendOp::Send => fw::op::SEND,
            SendOp::SendImm(i) => {
                key_word = i;
                fw::op::SEND_IMM
            }
            SendOp::SendInv(k) => {
                key_word = k.0;
                fw::op::SEND_INV
            }
            SendOp::Write(r) => {
                remote = Some(r);
                fw::op::RDMA_WRITE
            }
            SendOp::WriteImm(r, i) => {
                (remote, key_word) = (Some(r), i);
                fw::op::RDMA_WRITE_IMM
            }
            SendOp::Read(r) => {
                remote = Some(r);
                fw::op::RDMA_READ
            }
            SendOp::AtomicFa { remote: r, add } => {
                remote = Some(r);
                w.set_swap_add(add);
                (sge_at, max_sges) = (wqe::ATOMIC_SGE, 1);
                fw::op::ATOMIC_FA
            }
            SendOp::AtomicCas {
                remote: r,
                compare,
                swap,
            } => {
                remote = Some(r);
                w.set_swap_add(swap);
                w.set_compare(compare);
                (sge_at, max_sges) = (wqe::ATOMIC_SGE, 1);
                fw::op::ATOMIC_CS
            }
            SendOp::RegMr(r) => {
                // Contiguous pages, or a table of 64-bit page addresses as
                // the kernel driver builds one.
                let (dma, count, page_shift, first_offset) = match r.pages {
                    PageSource::Contiguous { dma } => (dma, 1, 12, 0),
                    PageSource::Table {
                        table,
                        count,
                        page_shift,
                        first_offset,
                    } => (table, count, page_shift, first_offset),
                };
                w.set_num_sge_key(r.key.0 as u8);
                w.set_imm_data_key(r.key.0);
                w.set_reg_va(r.iova);
                w.set_reg_length(r.len);
                w.set_reg_dma_addr(dma);
                w.set_reg_map_count(count);
                w.set_reg_offset(u64::from(first_offset));
                w.set_reg_flags(fw::mrf::from_access(r.access));
                w.set_reg_page_size_log2(page_shift);
                fw::op::REG_MR
            }
            SendOp::LocalInv(k) => {
                w.set_imm_data_key(k.0);
                fw::op::LOCAL_INV
            }
        };
        let local = matches!(wr.op, SendOp::RegMr(_) | SendOp::LocalInv(_));
        if let Some(r) = remote {
            if !connected {
                return Err(Error::Unsupported("RDMA and atomics on connected QPs only"));
            }
            w.set_remote_va(r.addr);
            w.set_remote_rkey(r.rkey.0);
        }
        if !connected && !local {
            let Some(ud) = wr.ud else {
                return Err(Error::Unsupported("a datagram send needs a destination"));
            };
            w.set_ah_id(ud.ah.0);
            w.set_dest_qpn(ud.remote_qpn.0);
            w.set_dest_qkey(ud.remote_qkey);
        }
        let mut byte_len = 0u32;
        if !local {
            if !matches!(wr.op, SendOp::AtomicFa { .. } | SendOp::AtomicCas { .. }) {
                w.set_imm_data_key(key_word);
            }
            if wr.flags.inline {
                let data = wr.inline_data;
                let Some(pld) = w.inline_data_mut(data.len()) else {
                    return Err(Error::Unsupported(
                        "more inline data than the QP's WQEs hold",
                    ));
                };
                flags |= wqe::FLAG_INL;
                pld.copy_from_slice(data);
                byte_len = data.len() as u32;
            } else {
                if wr.sgl.len() > max_sges {
                    return Err(Error::Unsupported("more SGEs than the QP's WQEs hold"));
                }
                w.set_num_sge_key(wr.sgl.len() as u8);
                for (i, s) in wr.sgl.iter().enumerate() {
                    // Inside the stride: `max_sges` was counted from it.
                    let fits = w.set_sge(sge_at, i, s);
                    debug_assert!(fits);
                    byte_len = byte_len.wrapping_add(s.len);
                }
            }
            if sge_at == wqe::PLD {
                w.set_length(byte_len);
            }
        }
        let idx = qp.sq_prod;
        w.set_wqe_id(u64::from(idx));
        w.set_op(op);
        w.set_flags(flags);
        let msn = (connected && !local).then(|| {
            book.msn_prod = book.msn_prod.wrapping_add(1);
            book.msn_prod
        });
        book.sq.push_back(SendMeta {
            idx,
            wr_id: wr.wr_id,
            opcode: wr.op.wc_opcode(),
            signaled: wr.flags.signaled,
            msn,
            byte_len,
        });
        self.mem.write(qp.sq.slot(idx), w.into_inner());
        qp.sq_prod = qp.sq_prod.wrapping_add(1);
        let index = qp.sq_prod & (qp.sq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_SQ, qp.id, 0, index)
    }

    /// Posts a receive into `sge`.
    pub fn post_recv(&mut self, qp: &mut Qp, wr_id: u64, sge: Sge) -> Result<(), Error> {
        self.post_recv_sgl(qp, wr_id, &[sge])
    }

    /// Posts a receive into several SGEs (as many as the QP's receive WQEs
    /// hold).
    pub fn post_recv_sgl(&mut self, qp: &mut Qp, wr_id: u64, sgl: &[Sge]) -> Result<(), Error> {
        let Some(rq) = qp.rq else {
            return Err(Error::Unsupported("the QP's receives come from an SRQ"));
        };
        let book = self
            .qps
            .get_mut(&qp.id)
            .ok_or(Error::Unsupported("no such QP"))?;
        if book.rq.len() as u32 >= rq.depth() - 1 {
            return Err(Error::Full { depth: rq.depth() });
        }
        let mut buf = [0u8; MAX_WQE];
        let w = &mut buf[..rq.stride()];
        let idx = qp.rq_prod;
        if !recv_wqe(w, u64::from(idx), sgl) {
            return Err(Error::Unsupported(
                "more SGEs than the QP's receive WQEs hold",
            ));
        }
        book.rq.push_back((idx, wr_id));
        self.mem.write(rq.slot(idx), w);
        qp.rq_prod = qp.rq_prod.wrapping_add(1);
        let index = qp.rq_prod & (rq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_RQ, qp.id, 0, index)
    }

    /// Reads up to `out.len()` completions from `cq`. One CQE may complete
    /// several requests (every request up to a sequence number, or up to a
    /// WQE): those that do not fit `out` wait for the next call.
    /// Unsignaled requests that succeed are not reported, as in verbs.
    pub fn poll_cq(&mut self, cq: &mut Cq, out: &mut [Completion]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(c) = cq.pending.pop_front() else {
                break;
            };
            out[n] = c;
            n += 1;
        }
        let mut c = [0u8; cqe::LEN];
        while n < out.len() {
            let color = (cq.cons >> cq.ring.depth_log2) & 1 == 0;
            if !read_cqe(&self.mem, cq.ring.slot(cq.cons), color, &mut c) {
                break;
            }
            cq.cons = cq.cons.wrapping_add(1);
            // A whole CQE's array: the getters cannot run past it.
            let p = cqe::Packet::new_unchecked(&c);
            let qid = p.qid();
            let Some(book) = self.qps.get_mut(&qid) else {
                continue;
            };
            let st = p.status_length();
            let status = if p.error() {
                fw::status::to_wc(st)
            } else {
                WcStatus::Success
            };
            let flushed = status == WcStatus::WrFlushErr;
            let mut sink = Sink {
                out,
                n: &mut n,
                pending: &mut cq.pending,
            };
            let mut wc = Completion::EMPTY;
            wc.qpn = Qpn(qid);
            wc.signaled = true;
            match p.cqe_type() {
                cqe::TYPE_RECV => {
                    let id = p.recv_wqe_id();
                    wc.opcode = WcOpcode::Recv;
                    wc.status = status;
                    if book.srq {
                        wc.wr_id = id;
                    } else if flushed {
                        // One flush CQE stands for every posted receive.
                        for (_, wr_id) in book.rq.drain(..) {
                            wc.wr_id = wr_id;
                            sink.push(wc);
                        }
                        continue;
                    } else {
                        // Receives complete in order: the one named.
                        let Some(at) = book.rq.iter().position(|&(i, _)| u64::from(i) == id) else {
                            continue;
                        };
                        wc.wr_id = book.rq[at].1;
                        book.rq.drain(..=at);
                    }
                    let sq = p.recv_src_qpn_op();
                    wc.src_qpn = Qpn(sq & 0xff_ffff);
                    wc.grh = book.ud;
                    wc.grh_ipv4 = book.ud && sq & fw::recv_op::IS_IPV4 != 0;
                    if status == WcStatus::Success {
                        wc.byte_len = st;
                        let op = sq >> 24;
                        if op == fw::recv_op::RDMA_IMM || op == fw::recv_op::SEND_IMM {
                            wc.imm = Some(p.recv_imm_data_rkey());
                        }
                        if op == fw::recv_op::RDMA_IMM {
                            wc.opcode = WcOpcode::RecvRdmaWithImm;
                        }
                        if op == fw::recv_op::SEND_INV {
                            let k = p.recv_imm_data_rkey();
                            wc.invalidated = Some(ernic_core::Rkey(k));
                        }
                    }
                    sink.push(wc);
                }
                cqe::TYPE_SEND_MSN => {
                    // Every request up to this sequence number is done;
                    // the last one with the CQE's status.
                    let msn = p.send_msg_msn();
                    if !book.sq.iter().any(|m| m.msn == Some(msn)) {
                        continue;
                    }
                    while let Some(m) = book.sq.pop_front() {
                        let last = m.msn == Some(msn);
                        let st = if last { status } else { WcStatus::Success };
                        if m.signaled || st != WcStatus::Success {
                            sink.push(send_wc(wc, &m, st));
                        }
                        if last {
                            break;
                        }
                    }
                }
                _ => {
                    // By WQE index: a local operation, a datagram, or the
                    // flush that stands for every request still posted.
                    let idx = p.send_npg_wqe_id();
                    let Some(at) = book.sq.iter().position(|m| u64::from(m.idx) == idx) else {
                        continue;
                    };
                    for m in book.sq.drain(..at) {
                        if m.signaled {
                            sink.push(send_wc(wc, &m, WcStatus::Success));
                        }
                    }
                    if flushed {
                        for m in book.sq.drain(..) {
                            sink.push(send_wc(wc, &m, WcStatus::WrFlushErr));
                        }
                    } else if let Some(m) = book.sq.pop_front()
                        && (m.signaled || status != WcStatus::Success)
                    {
                        sink.push(send_wc(wc, &m, status));
                    }
                }
            }
        }
        n
    }
}

/// Where [`Driver::poll_cq`] puts completions: the caller's array while it
/// has room, then the CQ's pending queue.
struct Sink<'a> {
    out: &'a mut [Completion],
    n: &'a mut usize,
    pending: &'a mut VecDeque<Completion>,
}

impl Sink<'_> {
    fn push(&mut self, wc: Completion) {
        if *self.n < self.out.len() {
            self.out[*self.n] = wc;
            *self.n += 1;
        } else {
            self.pending.push_back(wc);
        }
    }
}

/// The completion of send request `m` with `status`.
fn send_wc(mut wc: Completion, m: &SendMeta, status: WcStatus) -> Completion {
    wc.wr_id = m.wr_id;
    wc.opcode = m.opcode;
    wc.status = status;
    wc.byte_len = m.byte_len;
    wc.sq_index = m.idx;
    wc
}

/// Fills a receive WQE: its id and SGEs; `false` when they do not fit.
fn recv_wqe(w: &mut [u8], id: u64, sgl: &[Sge]) -> bool {
    let Ok(mut w) = wqe::Packet::new_checked(w) else {
        return false;
    };
    if !w.holds_sges(wqe::PLD, sgl.len()) {
        return false;
    }
    w.set_wqe_id(id);
    w.set_num_sge_key(sgl.len() as u8);
    for (i, s) in sgl.iter().enumerate() {
        w.set_sge(wqe::PLD, i, s);
    }
    true
}
