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

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use ernic_core::{Completion, Gid, Qpn, SendOp, SendWr, Sge, WcOpcode, WcStatus};
use ernic_ionic::fw::{self, admin_op, cqe, wqe};
use ernic_ionic::regs::{cmd, lif_identity as li, opcode, qtype};
use ernic_vfio::client::{Client, ClientError, eventfd, shared_memory};
use ernic_vfio::pci::{irq, region};
use ernic_vfio::proto::{Capabilities, DMA_READ, DMA_WRITE};
use ernic_vfio::shm::Mapping;

/// Where the driver's memory sits in the device's DMA address space.
const BASE: u64 = 0x1_0000_0000;
/// Bytes of a doorbell page.
const PAGE: u64 = 4096;
/// How long an admin command may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// The queue has no room.
    #[error("queue full")]
    Full,
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
}

impl Cq {
    /// The device's id for it.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// A queue pair: its rings and where the driver is in them. What its
/// completions need (outstanding requests, receive ids) the driver keeps,
/// so a CQ is polled on its own, as in verbs.
#[derive(Debug)]
pub struct Qp {
    id: u32,
    sq: Ring,
    rq: Ring,
    sq_prod: u32,
    rq_prod: u32,
    /// Doorbell page offset in the shared area, when there is one.
    db: Option<usize>,
}

/// The driver's book of a QP, for turning its CQEs into completions.
#[derive(Debug)]
struct QpBook {
    /// wr_ids of posted requests that complete by message sequence number.
    remote: VecDeque<u64>,
    msn: u32,
    /// wr_ids of posted receives, by ring slot.
    recv_ids: Vec<u64>,
    /// Receives come from an SRQ (their completions carry the wr_id).
    srq: bool,
    /// A datagram QP (receives start with a 40-byte GRH).
    ud: bool,
}

/// A shared receive queue.
#[derive(Debug)]
pub struct Srq {
    id: u32,
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

/// The driver, attached to one device.
pub struct Driver {
    c: Client,
    mem: Mapping,
    _mem_fd: std::os::fd::OwnedFd,
    size: u64,
    next: u64,
    aq: Ring,
    aq_prod: u32,
    acq: Ring,
    acq_cons: u32,
    shared: Option<(Mapping, usize)>,
    next_cq: u32,
    next_qp: u32,
    next_mr: u32,
    next_ah: u32,
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
    let tail = tail.to_le_bytes();
    let qtf = u32::from_be_bytes(tail[4..8].try_into().expect("4"));
    if (qtf & cqe::COLOR != 0) != color {
        return false;
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    mem.read(slot, &mut c[..cqe::STATUS_LENGTH_BE]);
    c[cqe::STATUS_LENGTH_BE..].copy_from_slice(&tail);
    true
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
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
            next: 0,
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

    /// Whether doorbells go through shared pages (no message each).
    pub fn shared_doorbells(&self) -> bool {
        self.shared.is_some()
    }

    /// Carves `len` bytes (page-aligned) from the driver's memory.
    pub fn alloc(&mut self, len: u64) -> Result<Buf, Error> {
        let len = len.max(1).next_multiple_of(PAGE);
        if self.next + len > self.size {
            return Err(Error::NoMemory(len));
        }
        let b = Buf {
            off: self.next,
            len,
        };
        self.next += len;
        Ok(b)
    }

    /// Copies `data` into `buf` at `at`.
    pub fn write(&self, buf: &Buf, at: u64, data: &[u8]) -> bool {
        at + data.len() as u64 <= buf.len && self.mem.write((buf.off + at) as usize, data)
    }

    /// Copies bytes of `buf` at `at` out.
    pub fn read(&self, buf: &Buf, at: u64, out: &mut [u8]) -> bool {
        at + out.len() as u64 <= buf.len && self.mem.read((buf.off + at) as usize, out)
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
        let comp: [u8; 16] = self
            .c
            .region_read(region::BAR0, cmd::COMP as u64, 16)?
            .try_into()
            .expect("16 bytes");
        if comp[0] != 0 {
            return Err(Error::DevCmd {
                op: c[0],
                status: comp[0],
            });
        }
        Ok(comp)
    }

    fn bring_up(&mut self) -> Result<(), Error> {
        let mut c = [0u8; 64];
        c[..2].copy_from_slice(&[opcode::IDENTIFY, 2]);
        self.devcmd(&c)?;
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
            let mut c = [0u8; 64];
            c[0] = op;
            put(&mut c, 8, &cid.to_le_bytes());
            c[14] = r.depth_log2;
            c[15] = r.stride_log2;
            put(&mut c, 16, &r.gpa().to_le_bytes());
            c
        };
        let mut reset = [0u8; 64];
        reset[0] = ernic_ionic::rdma::opcode::RESET_LIF;
        self.devcmd(&reset)?;
        self.devcmd(&queue(ernic_ionic::rdma::opcode::CREATE_EQ, 0, &eq))?;
        self.devcmd(&queue(ernic_ionic::rdma::opcode::CREATE_CQ, 0, &acq))?;
        self.devcmd(&queue(ernic_ionic::rdma::opcode::CREATE_ADMINQ, 0, &aq))?;
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
            let color = (self.eq_cons >> self.eq.depth_log2) & 1 == 0;
            let mut e = [0u8; 4];
            self.mem.read(self.eq.slot(self.eq_cons), &mut e);
            let evt = u32::from_be_bytes(e);
            if (evt & fw::eqe::COLOR != 0) == color {
                self.eq_cons = self.eq_cons.wrapping_add(1);
                return Ok(Some(evt >> fw::eqe::QID_SHIFT));
            }
            if Instant::now() >= end {
                return Ok(None);
            }
            // The interrupt, or a short nap (the eventfd does not block).
            if !self.take_interrupts() {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
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

    /// Runs an RDMA admin command; answers the two result words its CQE
    /// carries (ernic's SRQ commands use them).
    fn admin(&mut self, op: u8, body: &[u8]) -> Result<[u32; 2], Error> {
        let mut w = vec![0u8; 4 + body.len()];
        w[0] = op;
        put(&mut w, 2, &(body.len() as u16).to_le_bytes());
        put(&mut w, 4, body);
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
                let qtf = u32::from_be_bytes(c[28..32].try_into().expect("4"));
                self.acq_cons = self.acq_cons.wrapping_add(1);
                let idx = u16::from_be_bytes([c[0], c[1]]);
                debug_assert_eq!(u32::from(idx), index & (self.aq.depth() - 1));
                let status = u32::from_be_bytes(c[24..28].try_into().expect("4"));
                if qtf & cqe::ERROR != 0 {
                    return Err(Error::Admin { op, status });
                }
                let at = fw::srq::CQE_RESULT;
                let word = |o: usize| u32::from_le_bytes(c[o..o + 4].try_into().expect("4"));
                return Ok([word(at), word(at + 4)]);
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
        self.admin(admin_op::CREATE_CQ, &b)?;
        self.next_cq += 1;
        Ok(Cq { id, ring, cons: 0 })
    }

    /// Creates an RC QP on `cq` (sends and receives) with 64-byte WQEs.
    pub fn create_qp(&mut self, cq: &Cq, depth_log2: u8) -> Result<Qp, Error> {
        self.create_qp_on(cq, depth_log2, None)
    }

    /// Creates a datagram QP on `cq`: UD, or with `gsi` the GSI QP (QP 1),
    /// and makes it ready (INIT with `qkey`, RTR, RTS).
    pub fn create_ud_qp(
        &mut self,
        cq: &Cq,
        depth_log2: u8,
        gsi: bool,
        qkey: u32,
    ) -> Result<Qp, Error> {
        let saved = self.next_qp;
        if gsi {
            self.next_qp = fw::GSI_QPID;
        }
        let qp = self.create_qp_typed(cq, depth_log2, None, fw::qpt::UD);
        if gsi {
            self.next_qp = saved;
        }
        let qp = qp?;
        use fw::{attr, mod_qp as f};
        for (mask, state) in [
            (attr::STATE | attr::QKEY, fw::qps::INIT),
            (attr::STATE, fw::qps::RTR),
            (attr::STATE, fw::qps::RTS),
        ] {
            let mut b = [0u8; f::LEN];
            put(&mut b, f::ATTR_MASK_BE, &mask.to_be_bytes());
            put(&mut b, f::QKEY_DEST_QPN, &qkey.to_le_bytes());
            b[f::TYPE_STATE] = state;
            put(&mut b, f::ID_VER, &qp.id.to_le_bytes());
            self.admin(admin_op::MODIFY_QP, &b)?;
        }
        Ok(qp)
    }

    /// Creates an address handle for `dgid` (sent from this driver's GID);
    /// answers its id.
    pub fn create_ah(&mut self, dgid: Gid) -> Result<u32, Error> {
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
        put(&mut b, f::ID_VER, &id.to_le_bytes());
        self.admin(admin_op::CREATE_AH, &b)?;
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
        let mut w = [0u8; 64];
        put(&mut w, wqe::WQE_ID, &wr_id.to_le_bytes());
        w[wqe::OP] = fw::op::SEND;
        w[wqe::NUM_SGE_KEY] = 1;
        put(&mut w, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
        put(&mut w, wqe::AH_ID_BE, &ah.to_be_bytes());
        put(&mut w, wqe::DEST_QPN_BE, &dest.0.to_be_bytes());
        put(&mut w, wqe::DEST_QKEY_BE, &qkey.to_be_bytes());
        put(&mut w, wqe::LENGTH_BE, &sge.len.to_be_bytes());
        put(&mut w, wqe::PLD, &sge.addr.to_be_bytes());
        put(&mut w, wqe::PLD + 8, &sge.len.to_be_bytes());
        put(&mut w, wqe::PLD + 12, &sge.lkey.0.to_be_bytes());
        self.post_local(qp, &w)
    }

    /// As [`create_qp`](Driver::create_qp), its receives drawn from `srq`.
    pub fn create_qp_with_srq(&mut self, cq: &Cq, depth_log2: u8, srq: &Srq) -> Result<Qp, Error> {
        self.create_qp_on(cq, depth_log2, Some(srq))
    }

    fn create_qp_on(&mut self, cq: &Cq, depth_log2: u8, srq: Option<&Srq>) -> Result<Qp, Error> {
        self.create_qp_typed(cq, depth_log2, srq, fw::qpt::RC)
    }

    fn create_qp_typed(
        &mut self,
        cq: &Cq,
        depth_log2: u8,
        srq: Option<&Srq>,
        qpt: u8,
    ) -> Result<Qp, Error> {
        let sq = self.ring(depth_log2, 6)?;
        let rq = self.ring(depth_log2, 6)?;
        let id = self.next_qp;
        use fw::create_qp as f;
        let mut b = [0u8; f::LEN];
        for (cq_at, d, s, n, a, r) in [
            (
                f::SQ_CQ_ID,
                f::SQ_DEPTH_LOG2,
                f::SQ_STRIDE_LOG2,
                f::SQ_MAP_COUNT,
                f::SQ_DMA_ADDR,
                &sq,
            ),
            (
                f::RQ_CQ_ID,
                f::RQ_DEPTH_LOG2,
                f::RQ_STRIDE_LOG2,
                f::RQ_MAP_COUNT,
                f::RQ_DMA_ADDR,
                &rq,
            ),
        ] {
            put(&mut b, cq_at, &cq.id.to_le_bytes());
            if srq.is_some() && cq_at == f::RQ_CQ_ID {
                continue; // no RQ ring of its own
            }
            b[d] = r.depth_log2;
            b[s] = r.stride_log2;
            put(&mut b, n, &1u32.to_le_bytes());
            put(&mut b, a, &r.gpa().to_le_bytes());
        }
        let srq_id = srq.map_or(u32::MAX, |s| s.id);
        put(&mut b, f::RQ_TBL_INDEX_SRQ_ID, &srq_id.to_le_bytes());
        put(&mut b, f::ID_VER, &id.to_le_bytes());
        b[f::TYPE_STATE] = qpt;
        self.admin(admin_op::CREATE_QP, &b)?;
        if id != fw::GSI_QPID {
            self.next_qp += 1;
        }
        // A doorbell page of its own in the shared area (one per QP, so no
        // two queues of a type share a word); trapped when none is left.
        let db = self.take_page();
        self.qps.insert(
            id,
            QpBook {
                remote: VecDeque::new(),
                msn: 0,
                recv_ids: vec![0; 1 << depth_log2],
                srq: srq.is_some(),
                ud: qpt == fw::qpt::UD,
            },
        );
        Ok(Qp {
            id,
            sq,
            rq,
            sq_prod: 0,
            rq_prod: 0,
            db,
        })
    }

    /// Allocates an MR for fast registration of up to `max_pages` 4 KiB
    /// pages; REG_MR work requests bind it (see
    /// [`post_reg_mr`](Driver::post_reg_mr)).
    pub fn alloc_fast_mr(&mut self, max_pages: u32) -> Result<u32, Error> {
        let key = self.next_mr << 8;
        use fw::create_mr as f;
        let mut b = [0u8; f::LEN];
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
        let mut w = [0u8; 64];
        put(&mut w, wqe::WQE_ID, &wr_id.to_le_bytes());
        w[wqe::OP] = fw::op::REG_MR;
        w[wqe::NUM_SGE_KEY] = variant;
        put(&mut w, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
        put(&mut w, wqe::IMM_DATA_KEY_BE, &key.to_be_bytes());
        put(&mut w, wqe::REG_VA_BE, &buf.addr().to_be_bytes());
        put(&mut w, wqe::REG_LENGTH_BE, &len.to_be_bytes());
        put(&mut w, wqe::REG_DMA_ADDR_BE, &buf.addr().to_be_bytes());
        put(&mut w, wqe::REG_MAP_COUNT_BE, &1u32.to_be_bytes());
        let rights = fw::mrf::LOCAL_WRITE
            | fw::mrf::REMOTE_WRITE
            | fw::mrf::REMOTE_READ
            | fw::mrf::REMOTE_ATOMIC;
        put(&mut w, wqe::REG_FLAGS_BE, &rights.to_be_bytes());
        w[wqe::REG_PAGE_SIZE_LOG2] = 12;
        self.post_local(qp, &w)?;
        Ok(key)
    }

    /// Posts a local invalidation of `key`.
    pub fn post_local_inv(&mut self, qp: &mut Qp, wr_id: u64, key: u32) -> Result<(), Error> {
        let mut w = [0u8; 64];
        put(&mut w, wqe::WQE_ID, &wr_id.to_le_bytes());
        w[wqe::OP] = fw::op::LOCAL_INV;
        put(&mut w, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
        put(&mut w, wqe::IMM_DATA_KEY_BE, &key.to_be_bytes());
        self.post_local(qp, &w)
    }

    /// A WQE that completes by its id (a local operation), not by MSN.
    fn post_local(&mut self, qp: &mut Qp, w: &[u8; 64]) -> Result<(), Error> {
        if self.outstanding(qp) >= qp.sq.depth() - 1 {
            return Err(Error::Full);
        }
        self.mem.write(qp.sq.slot(qp.sq_prod), w);
        qp.sq_prod = qp.sq_prod.wrapping_add(1);
        let index = qp.sq_prod & (qp.sq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_SQ, qp.id, 0, index)
    }

    /// Destroys a QP.
    pub fn destroy_qp(&mut self, qp: Qp) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_QP, &qp.id.to_le_bytes())?;
        self.qps.remove(&qp.id);
        self.give_page(qp.db);
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
        self.admin(admin_op::DESTROY_CQ, &cq.id.to_le_bytes())
            .map(|_| ())
    }

    /// Deregisters an MR.
    pub fn dereg_mr(&mut self, mr: Mr) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_MR, &mr.key.to_le_bytes())
            .map(|_| ())
    }

    /// Creates a shared receive queue of `2^depth_log2` 64-byte WQEs with
    /// low watermark `limit`.
    pub fn create_srq(&mut self, depth_log2: u8, limit: u32) -> Result<Srq, Error> {
        let ring = self.ring(depth_log2, 6)?;
        use fw::srq as f;
        let mut b = [0u8; f::CREATE_LEN];
        b[f::DEPTH_LOG2] = depth_log2;
        b[f::STRIDE_LOG2] = 6;
        put(&mut b, f::MAP_COUNT, &1u32.to_le_bytes());
        put(&mut b, f::DMA_ADDR, &ring.gpa().to_le_bytes());
        put(&mut b, f::LIMIT, &limit.to_le_bytes());
        let [id, _] = self.admin(fw::srq_op::CREATE_SRQ, &b)?;
        let db = self.take_page();
        Ok(Srq {
            id,
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
        Ok(())
    }

    /// Posts a receive on an SRQ; its completion names the QP that took it
    /// and carries `wr_id`.
    pub fn post_srq_recv(&mut self, srq: &mut Srq, wr_id: u64, sge: Sge) -> Result<(), Error> {
        let mut w = [0u8; 64];
        put(&mut w, wqe::WQE_ID, &wr_id.to_le_bytes());
        w[wqe::NUM_SGE_KEY] = 1;
        put(&mut w, wqe::PLD, &sge.addr.to_be_bytes());
        put(&mut w, wqe::PLD + 8, &sge.len.to_be_bytes());
        put(&mut w, wqe::PLD + 12, &sge.lkey.0.to_be_bytes());
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
        // A RoCE v2 IPv4 header template: this driver's GID to the peer's.
        let (Some(src), Some(dst)) = (self.gid.to_ipv4(), peer_gid.to_ipv4()) else {
            return Err(Error::Unsupported("IPv4-mapped GIDs only"));
        };
        let hdr = self.alloc(PAGE)?;
        let h = ipv4_template(src.octets(), dst.octets());
        self.write(&hdr, 0, &h);
        use fw::{attr, mod_qp as f};
        for (mask, state) in [
            (attr::STATE | attr::ACCESS_FLAGS, fw::qps::INIT),
            (
                attr::STATE | attr::AV | attr::PATH_MTU | attr::DEST_QPN,
                fw::qps::RTR,
            ),
            (attr::STATE, fw::qps::RTS),
        ] {
            let mut b = [0u8; f::LEN];
            put(&mut b, f::ATTR_MASK_BE, &mask.to_be_bytes());
            let rights = fw::qpf::REMOTE_WRITE | fw::qpf::REMOTE_READ | fw::qpf::REMOTE_ATOMIC;
            put(&mut b, f::ACCESS_FLAGS_BE, &rights.to_be_bytes());
            put(&mut b, f::QKEY_DEST_QPN, &peer.0.to_le_bytes());
            b[f::PMTU] = 5 + 7; // 4096
            put(&mut b, f::AH_ID_LEN, &(h.len() as u32).to_le_bytes());
            b[f::TYPE_STATE] = state;
            put(&mut b, f::DMA_ADDR, &hdr.addr().to_le_bytes());
            put(&mut b, f::ID_VER, &qp.id.to_le_bytes());
            self.admin(admin_op::MODIFY_QP, &b)?;
        }
        Ok(())
    }

    /// Registers `buf` with every right; its key names it in SGEs and as an
    /// rkey.
    pub fn reg_mr(&mut self, buf: Buf) -> Result<Mr, Error> {
        let key = self.next_mr << 8;
        use fw::create_mr as f;
        let mut b = [0u8; f::LEN];
        put(&mut b, f::VA, &buf.addr().to_le_bytes());
        put(&mut b, f::LENGTH, &buf.len.to_le_bytes());
        put(&mut b, f::ID_VER, &key.to_le_bytes());
        put(&mut b, f::MAP_COUNT, &1u32.to_le_bytes());
        put(&mut b, f::DMA_ADDR, &buf.addr().to_le_bytes());
        let rights = fw::mrf::LOCAL_WRITE
            | fw::mrf::REMOTE_WRITE
            | fw::mrf::REMOTE_READ
            | fw::mrf::REMOTE_ATOMIC;
        put(&mut b, f::DBID_FLAGS, &rights.to_le_bytes());
        b[f::PAGE_SIZE_LOG2] = 12;
        self.admin(admin_op::CREATE_MR, &b)?;
        self.next_mr += 1;
        Ok(Mr { key, buf })
    }

    /// Posts a send request: its WQE into the send ring, then the doorbell.
    pub fn post_send(&mut self, qp: &mut Qp, wr: &SendWr<'_>) -> Result<(), Error> {
        if self.outstanding(qp) >= qp.sq.depth() - 1 {
            return Err(Error::Full);
        }
        let mut w = [0u8; 64];
        let (op, remote, imm) = match wr.op {
            SendOp::Send => (fw::op::SEND, None, 0),
            SendOp::SendImm(i) => (fw::op::SEND_IMM, None, i),
            SendOp::Write(r) => (fw::op::RDMA_WRITE, Some(r), 0),
            SendOp::WriteImm(r, i) => (fw::op::RDMA_WRITE_IMM, Some(r), i),
            SendOp::Read(r) => (fw::op::RDMA_READ, Some(r), 0),
            SendOp::AtomicFa { remote, add } => {
                put(
                    &mut w,
                    wqe::SWAP_ADD_HIGH_BE,
                    &((add >> 32) as u32).to_be_bytes(),
                );
                put(&mut w, wqe::SWAP_ADD_LOW_BE, &(add as u32).to_be_bytes());
                (fw::op::ATOMIC_FA, Some(remote), 0)
            }
            SendOp::AtomicCas {
                remote,
                compare,
                swap,
            } => {
                put(
                    &mut w,
                    wqe::SWAP_ADD_HIGH_BE,
                    &((swap >> 32) as u32).to_be_bytes(),
                );
                put(&mut w, wqe::SWAP_ADD_LOW_BE, &(swap as u32).to_be_bytes());
                put(
                    &mut w,
                    wqe::COMPARE_HIGH_BE,
                    &((compare >> 32) as u32).to_be_bytes(),
                );
                put(&mut w, wqe::COMPARE_LOW_BE, &(compare as u32).to_be_bytes());
                (fw::op::ATOMIC_CS, Some(remote), 0)
            }
            _ => {
                return Err(Error::Unsupported(
                    "this driver posts SEND, WRITE, READ and atomics",
                ));
            }
        };
        let atomic = matches!(op, fw::op::ATOMIC_FA | fw::op::ATOMIC_CS);
        if wr.sgl.len() > if atomic { 1 } else { 2 } || wr.flags.inline {
            return Err(Error::Unsupported(
                "at most two SGEs (one for atomics), no inline data",
            ));
        }
        put(&mut w, wqe::WQE_ID, &wr.wr_id.to_le_bytes());
        w[wqe::OP] = op;
        w[wqe::NUM_SGE_KEY] = wr.sgl.len() as u8;
        put(&mut w, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
        put(&mut w, wqe::IMM_DATA_KEY_BE, &imm.to_be_bytes());
        if let Some(r) = remote {
            put(
                &mut w,
                wqe::REMOTE_VA_HIGH_BE,
                &((r.addr >> 32) as u32).to_be_bytes(),
            );
            put(
                &mut w,
                wqe::REMOTE_VA_LOW_BE,
                &(r.addr as u32).to_be_bytes(),
            );
            put(&mut w, wqe::REMOTE_RKEY_BE, &r.rkey.0.to_be_bytes());
        }
        let at = if atomic { wqe::ATOMIC_SGE } else { wqe::PLD };
        let total: u32 = wr.sgl.iter().map(|s| s.len).sum();
        if !atomic {
            put(&mut w, wqe::LENGTH_BE, &total.to_be_bytes());
        }
        for (i, s) in wr.sgl.iter().enumerate() {
            let o = at + i * wqe::SGE_LEN;
            put(&mut w, o, &s.addr.to_be_bytes());
            put(&mut w, o + 8, &s.len.to_be_bytes());
            put(&mut w, o + 12, &s.lkey.0.to_be_bytes());
        }
        self.mem.write(qp.sq.slot(qp.sq_prod), &w);
        qp.sq_prod = qp.sq_prod.wrapping_add(1);
        if let Some(b) = self.qps.get_mut(&qp.id) {
            b.remote.push_back(wr.wr_id);
        }
        let index = qp.sq_prod & (qp.sq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_SQ, qp.id, 0, index)
    }

    /// Requests posted on `qp` and not yet completed by sequence number.
    fn outstanding(&self, qp: &Qp) -> u32 {
        self.qps.get(&qp.id).map_or(0, |b| b.remote.len() as u32)
    }

    /// Posts a receive into `sge`.
    pub fn post_recv(&mut self, qp: &mut Qp, wr_id: u64, sge: Sge) -> Result<(), Error> {
        let mut w = [0u8; 64];
        let slot = qp.rq_prod & (qp.rq.depth() - 1);
        put(&mut w, wqe::WQE_ID, &u64::from(slot).to_le_bytes());
        w[wqe::NUM_SGE_KEY] = 1;
        put(&mut w, wqe::PLD, &sge.addr.to_be_bytes());
        put(&mut w, wqe::PLD + 8, &sge.len.to_be_bytes());
        put(&mut w, wqe::PLD + 12, &sge.lkey.0.to_be_bytes());
        if let Some(b) = self.qps.get_mut(&qp.id) {
            b.recv_ids[slot as usize] = wr_id;
        }
        self.mem.write(qp.rq.slot(qp.rq_prod), &w);
        qp.rq_prod = qp.rq_prod.wrapping_add(1);
        let index = qp.rq_prod & (qp.rq.depth() - 1);
        self.ring_doorbell(qp.db, qtype::RDMA_RQ, qp.id, 0, index)
    }

    /// Reads up to `out.len()` completions from `cq`.
    pub fn poll_cq(&mut self, cq: &mut Cq, out: &mut [Completion]) -> usize {
        let mut n = 0;
        let mut c = [0u8; cqe::LEN];
        while n < out.len() {
            let color = (cq.cons >> cq.ring.depth_log2) & 1 == 0;
            if !read_cqe(&self.mem, cq.ring.slot(cq.cons), color, &mut c) {
                break;
            }
            let qtf = u32::from_be_bytes(c[28..32].try_into().expect("4"));
            cq.cons = cq.cons.wrapping_add(1);
            let qid = qtf >> cqe::QID_SHIFT;
            let Some(qp) = self.qps.get_mut(&qid) else {
                continue;
            };
            let st = u32::from_be_bytes(c[24..28].try_into().expect("4"));
            let status = if qtf & cqe::ERROR == 0 {
                WcStatus::Success
            } else {
                from_ionic(st)
            };
            let mut wc = Completion::EMPTY;
            wc.qpn = Qpn(qid);
            wc.status = status;
            match (qtf >> cqe::TYPE_SHIFT) & 7 {
                cqe::TYPE_RECV => {
                    let id = u64::from_le_bytes(c[..8].try_into().expect("8"));
                    wc.wr_id = if qp.srq {
                        id
                    } else {
                        qp.recv_ids.get(id as usize).copied().unwrap_or(0)
                    };
                    wc.opcode = WcOpcode::Recv;
                    let sq = u32::from_be_bytes(c[8..12].try_into().expect("4"));
                    wc.src_qpn = Qpn(sq & 0xff_ffff);
                    wc.grh = qp.ud;
                    wc.grh_ipv4 = qp.ud && sq & fw::recv_op::IS_IPV4 != 0;
                    if status == WcStatus::Success {
                        wc.byte_len = st;
                        let op = u32::from_be_bytes(c[8..12].try_into().expect("4")) >> 24;
                        if op == fw::recv_op::RDMA_IMM || op == fw::recv_op::SEND_IMM {
                            wc.imm = Some(u32::from_be_bytes(c[20..24].try_into().expect("4")));
                        }
                        if op == fw::recv_op::RDMA_IMM {
                            wc.opcode = WcOpcode::RecvRdmaWithImm;
                        }
                    }
                    out[n] = wc;
                    n += 1;
                }
                cqe::TYPE_SEND_MSN => {
                    // Every request up to this sequence number is done.
                    let msn = u32::from_be_bytes(c[4..8].try_into().expect("4"));
                    while qp.msn != msn && n < out.len() {
                        let Some(id) = qp.remote.pop_front() else {
                            break;
                        };
                        qp.msn = qp.msn.wrapping_add(1);
                        wc.wr_id = id;
                        wc.status = if qp.msn == msn {
                            status
                        } else {
                            WcStatus::Success
                        };
                        out[n] = wc;
                        n += 1;
                    }
                }
                _ => {
                    // By WQE id (a flush, or a local operation).
                    wc.wr_id = u64::from_le_bytes(c[16..24].try_into().expect("8"));
                    qp.remote.retain(|&w| w != wc.wr_id);
                    out[n] = wc;
                    n += 1;
                }
            }
        }
        // The device learns how far the CQ has been read only when it needs
        // to (arming, which this driver does not offer yet): a doorbell per
        // poll would cost a message each where pages are not shared.
        n
    }
}

fn from_ionic(s: u32) -> WcStatus {
    use fw::status as st;
    match s {
        st::LOCAL_LEN_ERR => WcStatus::LocLenErr,
        st::LOCAL_QP_OPER_ERR => WcStatus::LocQpOpErr,
        st::LOCAL_PROT_ERR => WcStatus::LocProtErr,
        st::WQE_FLUSHED_ERR => WcStatus::WrFlushErr,
        st::REMOTE_INV_REQ_ERR => WcStatus::RemInvReqErr,
        st::REMOTE_ACC_ERR => WcStatus::RemAccessErr,
        st::REMOTE_OPER_ERR => WcStatus::RemOpErr,
        st::RETRY_EXCEEDED => WcStatus::RetryExcErr,
        st::RNR_RETRY_EXCEEDED => WcStatus::RnrRetryExcErr,
        _ => WcStatus::GeneralErr,
    }
}
