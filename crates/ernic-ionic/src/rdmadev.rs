//! The RDMA half of the ionic function (seed 001, "The Control Path: the
//! RDMA Admin Queue"): the event queues and admin queues the bootstrap
//! created, the admin commands run against `ernic-core`, and the
//! completion and event rings in guest memory.
//!
//! Two id spaces meet here: the driver names every object by its own id
//! (CQ, QP, MR, AH), and those ids are used as the core's ids directly
//! (the core takes ids chosen by a front end), so no table maps one to the
//! other.
//!
//! Protection domains are the exception. The driver allocates its PD ids
//! itself (`ionic_alloc_pd`, ids below `IONIC_MAX_PD`) and never sends a
//! command to create or destroy one; the device learns an id from the
//! `pd_id` of CREATE_QP, CREATE_MR (registered and fast-registration MRs
//! alike), CREATE_AH and ernic's CREATE_SRQ. So the rule is: the first
//! command naming a `pd_id` makes a core PD for it, and every later one
//! naming that id puts its object in the same PD; the core's PD checks
//! (an SGE's lkey, an rkey at the responder, REG_MR and LOCAL_INV, a
//! datagram's AH, a QP's SRQ) then hold between the guest's processes. At
//! most [`MAX_PDS`] PDs exist at once: a command naming one more is refused
//! with BAD_INDEX, and a PD made for a command that then fails goes with
//! it. PDs last until the LIF resets (RESET_LIF or a device reset), when
//! every object goes; an id the driver frees and hands out again names the
//! same, by then empty, PD.
//!
//! Key 0 is the driver's reserved DMA key (`IONIC_DMA_LKEY`): an SGE with
//! lkey 0 names a bus address, checked against no MR and no PD, so it
//! reaches all of guest memory. So, as the driver's flag asks of the
//! hardware, only a QP that CREATE_QP marks privileged
//! (`IONIC_QPF_PRIVILEGED`, bit 15 of the big-endian `priv_flags`) may
//! name it: in its send SGEs, its receive SGEs (an SRQ's receives count as
//! the receiving QP's), a READ's destination and an atomic's result. From
//! any other QP it is a local protection error (for a receive, the
//! receive's, and remote operational error at the sender), and nothing is
//! read or written. Linux's driver sets the flag on the QPs of a PD it
//! took a DMA MR for (`ionic_get_dma_mr`): ib_core does so for every
//! kernel PD (`ib_alloc_pd`, as the device offers no
//! `IBK_LOCAL_DMA_LKEY`), the GSI QP's among them, and for no user PD, so
//! a guest process cannot name key 0. The flag is read once, at
//! CREATE_QP; MODIFY_QP's copy of it is not consulted. A peer can never
//! name key 0 as an rkey (`IONIC_QPF_REMOTE_PRIVILEGED` is not honored).
//! REG_MR's page list is bus addresses too, but it binds only a
//! fast-registration MR of the QP's own PD, and only the kernel makes
//! those (`ib_alloc_mr` has no user path).
//!
//! Everything read from the guest is bounded before it is used: ring depths
//! and strides before any shift, page tables against the size of the ring
//! or region they describe before they are read, addresses against wrap.

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::time::Instant;

use ernic_core::mr::{Run, runs_from_pages};
use ernic_core::{
    Access, AhId, CqId, DeviceId, DmaMemory, Engine, EngineConfig, Gid, MemError, MrSpec, PdId,
    QpAttr, QpCaps, QpInit, QpState, QpType, Qpn,
};
use ernic_vfio::dma::{Dma, DmaView};

use crate::fw::{self, admin_cqe, admin_op, admin_status as st, admin_wqe, cqe, eqe};
use crate::limits::{Owner, PageTables};

mod datapath;
use crate::bootstrap::{Bootstrap, RdmaQueue};
use crate::bytes::{be16, be32, le16, le32, le64};

/// Guest memory as the core reaches it: the client's read-write DMA
/// windows at the last time they changed.
#[derive(Debug, Default)]
pub struct GuestMemory(DmaView);

// SAFETY: `DmaView::host` answers a pointer inside a mapping the view holds
// alive (each window is reference-counted), valid for reads and writes of
// the length it answers until the view is replaced, which takes `&mut`.
unsafe impl DmaMemory for GuestMemory {
    fn map(&self, addr: u64, len: u64) -> Result<(NonNull<u8>, usize), MemError> {
        if addr.checked_add(len).is_none() {
            return Err(MemError::Wraps { addr, len });
        }
        let (p, n) = self.0.host(addr, len).ok_or(MemError::Unmapped { addr })?;
        Ok((p, n as usize))
    }
}

/// The deepest RDMA ring (2^16 entries), as the driver's own queues allow.
const MAX_DEPTH_LOG2: u8 = 16;
/// Largest WQE stride (4 KiB, LIF_IDENTIFY's `max_stride`).
const MAX_STRIDE_LOG2: u8 = 12;
/// Page sizes a page table may use: 4 KiB to 1 GiB.
const PAGE_SHIFTS: std::ops::RangeInclusive<u8> = 12..=30;
/// Addresses a guest is known by, at most (its GID table).
const MAX_GIDS: usize = 256;
/// The longest admin command (four strides).
const MAX_ADMIN_STRIDES: usize = 4;
/// Page-table entries read at a time.
const TABLE_CHUNK: usize = 512;
/// Protection domains one LIF may have at once: the Linux driver's own id
/// space (`IONIC_MAX_PD`), so its ids never run out here first.
pub const MAX_PDS: u32 = 1024;

/// A ring in guest memory: its bytes as DMA runs, read once when the ring
/// was created.
#[derive(Debug, Clone)]
pub struct Ring {
    runs: Vec<Run>,
    depth_log2: u8,
    stride_log2: u8,
    /// Page-table entries it holds (0 for a contiguous ring).
    ptes: u32,
}

impl Ring {
    fn len_bytes(depth_log2: u8, stride_log2: u8) -> u64 {
        1u64 << (depth_log2 + stride_log2)
    }

    /// A ring at one contiguous guest address.
    pub fn contiguous(addr: u64, depth_log2: u8, stride_log2: u8) -> Option<Ring> {
        if depth_log2 > MAX_DEPTH_LOG2 || stride_log2 > MAX_STRIDE_LOG2 {
            return None;
        }
        let len = Ring::len_bytes(depth_log2, stride_log2);
        addr.checked_add(len)?;
        Some(Ring {
            runs: vec![Run {
                off: 0,
                dma: addr,
                len,
            }],
            depth_log2,
            stride_log2,
            ptes: 0,
        })
    }

    /// A ring the way the driver describes one: `map_count` pages of
    /// `1 << page_log2` bytes, either directly at `dma_addr` (one page, or
    /// physically contiguous memory) or listed in a table of 64-bit page
    /// addresses at `dma_addr`. The table must have exactly the entries
    /// the ring's size needs, and fit the LIF's page table (`tables`; the
    /// caller charges it once the ring's object exists).
    fn described(
        dma: &Dma,
        tables: &PageTables,
        dma_addr: u64,
        map_count: u32,
        page_log2: u8,
        depth_log2: u8,
        stride_log2: u8,
    ) -> Result<Ring, u32> {
        if depth_log2 > MAX_DEPTH_LOG2 || stride_log2 > MAX_STRIDE_LOG2 {
            return Err(st::BAD_ATTR);
        }
        if map_count <= 1 {
            if map_count == 1
                && page_log2 != 0
                && (!PAGE_SHIFTS.contains(&page_log2)
                    || Ring::len_bytes(depth_log2, stride_log2) > 1u64 << page_log2)
            {
                return Err(st::BAD_ATTR);
            }
            return Ring::contiguous(dma_addr, depth_log2, stride_log2).ok_or(st::BAD_ATTR);
        }
        if let Err(e) = tables.check_one(map_count.into()) {
            return Err(e.status());
        }
        let len = Ring::len_bytes(depth_log2, stride_log2);
        let runs = read_page_table(dma, dma_addr, map_count, page_log2, 0, len)?;
        if stride_log2 > page_log2 {
            return Err(st::BAD_ATTR);
        }
        Ok(Ring {
            runs,
            depth_log2,
            stride_log2,
            ptes: map_count,
        })
    }

    /// Entries in the ring.
    pub fn depth(&self) -> u32 {
        1 << self.depth_log2
    }

    /// Bytes per entry.
    pub fn stride(&self) -> usize {
        1 << self.stride_log2
    }

    /// The guest address of entry `index` (taken modulo the depth).
    pub fn slot(&self, index: u32) -> u64 {
        let off = u64::from(index & (self.depth() - 1)) << self.stride_log2;
        // The run holding `off` (runs are sorted and start at offset 0).
        let r = &self.runs[self.runs.partition_point(|r| r.off <= off) - 1];
        r.dma + (off - r.off)
    }
}

/// Reads a page table of `count` entries at `table` describing `len` bytes
/// that start `first_offset` into the first page; the count is checked
/// against the geometry before anything is read (and, by the caller,
/// against the LIF's page table: see [`crate::limits`]). The table is read
/// [`TABLE_CHUNK`] entries at a time, and an entry that cannot be read
/// fails it; the runs kept are the merged pages, at most one per entry.
fn read_page_table(
    dma: &Dma,
    table: u64,
    count: u32,
    page_log2: u8,
    first_offset: u64,
    len: u64,
) -> Result<Vec<Run>, u32> {
    if !PAGE_SHIFTS.contains(&page_log2) {
        return Err(st::BAD_ATTR);
    }
    let page = 1u64 << page_log2;
    let needed = first_offset
        .checked_add(len)
        .ok_or(st::BAD_ATTR)?
        .div_ceil(page);
    if u64::from(count) != needed || table.checked_add(u64::from(count) * 8).is_none() {
        return Err(st::BAD_ATTR);
    }
    let mut raw = [0u8; TABLE_CHUNK * 8];
    let (mut at, mut have, mut used) = (0u32, 0usize, 0usize);
    let mut unreadable = false;
    let pages = std::iter::from_fn(|| {
        if at == count || unreadable {
            return None;
        }
        if used == have {
            let n = ((count - at) as usize).min(TABLE_CHUNK);
            if dma
                .read(table + u64::from(at) * 8, &mut raw[..n * 8])
                .is_err()
            {
                unreadable = true;
                return None;
            }
            (have, used) = (n, 0);
        }
        let e = u64::from_le_bytes(raw[used * 8..used * 8 + 8].try_into().expect("8 bytes"));
        (used, at) = (used + 1, at + 1);
        Some(e)
    });
    let mut runs = Vec::new();
    let fits = runs_from_pages(pages, page_log2, first_offset, len, &mut runs);
    if fits.is_none() || unreadable {
        return Err(st::BAD_ATTR);
    }
    runs.shrink_to_fit();
    Ok(runs)
}

/// An event queue.
#[derive(Debug)]
struct Eq {
    ring: Ring,
    vector: u16,
    prod: u32,
}

/// A completion queue: the admin queues' (no core CQ) and the verbs ones.
#[derive(Debug)]
struct Cq {
    ring: Ring,
    eq: u32,
    /// Entries written so far (the color is the pass's parity).
    prod: u32,
    /// The next entry the driver will read, as its last doorbell said.
    guest_next: u16,
    armed: bool,
    /// Entries that could not be written (the ring is not in writable
    /// guest memory).
    lost: u64,
}

/// An RDMA admin queue.
#[derive(Debug)]
struct Aq {
    qid: u32,
    ring: Ring,
    cq: u32,
    cons: u32,
}

/// A QP's rings and where the device is in them.
#[derive(Debug)]
struct Qp {
    qp_type: QpType,
    sq: Option<Ring>,
    rq: Option<Ring>,
    sq_cq: u32,
    rq_cq: u32,
    /// Send WQEs taken from the ring so far.
    sq_cons: u32,
    /// Receive WQEs taken from the ring so far.
    rq_prod: u32,
    /// Message sequence number of the last remote request completed.
    msn: u32,
    /// A flush completion went to each queue since the QP last left
    /// ERROR (the driver wants one per queue).
    sq_flushed: bool,
    rq_flushed: bool,
}

/// The RDMA side's state.
pub struct RdmaDev {
    engine: Engine<GuestMemory>,
    dev: DeviceId,
    /// The core's PD for each `pd_id` the driver has named.
    pds: BTreeMap<u32, PdId>,
    dma_generation: Option<u64>,
    epoch: u64,
    eqs: BTreeMap<u32, Eq>,
    cqs: BTreeMap<u32, Cq>,
    aqs: Vec<Aq>,
    qps: BTreeMap<u32, Qp>,
    mrs: BTreeMap<u32, ()>,
    ahs: BTreeMap<u32, Gid>,
    commands: u64,
    /// No mesh: every destination is in this guest.
    standalone: bool,
    /// Completions taken from the core, reused between doorbells.
    events: Vec<ernic_core::CqEvent>,
    /// Why the last command was refused, for the log.
    why: String,
    /// Log refused admin commands to stderr.
    verbose: bool,
    /// The TCP mesh to other servers (`--backend tcp`).
    mesh: Option<std::sync::Arc<ernic_mesh::Mesh>>,
    /// Shared receive queues, by the id the device gave them.
    srqs: BTreeMap<u32, Srq>,
    /// QP ids run below this; SRQ ids from it up.
    qp_count: u32,
    /// Results of the command being run, for its admin CQE.
    result: [u32; 2],
    /// The LIF's page table: what each MR and ring holds of it.
    ptes: PageTables,
}

/// A shared receive queue's ring and the device's place in it.
#[derive(Debug)]
struct Srq {
    ring: Ring,
    prod: u32,
}

impl std::fmt::Debug for RdmaDev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaDev")
            .field("eqs", &self.eqs.len())
            .field("cqs", &self.cqs.len())
            .field("aqs", &self.aqs.len())
            .field("qps", &self.qps.len())
            .field("mrs", &self.mrs.len())
            .field("ahs", &self.ahs.len())
            .finish()
    }
}

/// What the device's limits are (the NIC profile's).
#[derive(Debug, Clone, Copy)]
pub struct RdmaLimits {
    /// QPs (ids run below this).
    pub qps: u32,
    /// CQs.
    pub cqs: u32,
    /// MRs.
    pub mrs: u32,
    /// AHs.
    pub ahs: u32,
    /// Page-table entries of the LIF (half for one object).
    pub ptes: u32,
    /// Bytes the engine may hold for QPs' and SRQs' work-request slots.
    pub queue_bytes: u64,
    /// How long a SEND waits for a receive (then RNR retry exceeded).
    pub rnr_timeout: std::time::Duration,
    /// How long a request to another server waits (then retry exceeded).
    pub request_timeout: std::time::Duration,
}

/// The (source, destination) addresses in a RoCE header template
/// (Ethernet, an optional VLAN tag, then IPv4 or IPv6), as GIDs.
pub fn template_gids(h: &[u8]) -> Option<(Gid, Gid)> {
    let mut at = 12;
    let mut ethertype = u16::from_be_bytes([*h.get(at)?, *h.get(at + 1)?]);
    if ethertype == 0x8100 {
        at += 4;
        ethertype = u16::from_be_bytes([*h.get(at)?, *h.get(at + 1)?]);
    }
    let ip = at + 2;
    match ethertype {
        0x0800 => {
            let v4 = |at: usize| -> Option<Gid> {
                let a: [u8; 4] = h.get(at..at + 4)?.try_into().ok()?;
                Some(Gid::from_ipv4(std::net::Ipv4Addr::from(a)))
            };
            Some((v4(ip + 12)?, v4(ip + 16)?))
        }
        0x86dd => Some((
            Gid::from_slice(h.get(ip + 8..ip + 24)?)?,
            Gid::from_slice(h.get(ip + 24..ip + 40)?)?,
        )),
        _ => None,
    }
}

impl RdmaDev {
    /// A device with the profile's limits and the guest's GIDs (what the
    /// mesh knows it by; none for a device on its own).
    pub fn new(limits: RdmaLimits, gids: Vec<Gid>) -> RdmaDev {
        let cfg = EngineConfig {
            max_qp: limits.qps.max(2),
            max_pd: MAX_PDS,
            max_cq: limits.cqs,
            max_mr: limits.mrs,
            max_ah: limits.ahs,
            max_qp_wr: 1 << MAX_DEPTH_LOG2,
            max_queue_bytes: limits.queue_bytes,
            // The ionic device runs its queues in any state (seed 001); key
            // 0 is for the QPs CREATE_QP marks privileged, not every QP.
            enforce_qp_state: false,
            allow_reserved_lkey: false,
            rnr_timeout: limits.rnr_timeout,
            request_timeout: limits.request_timeout,
            // Payloads from guest memory cross the mesh as bytes: the guest
            // may unmap that memory while a peer on this host would still
            // read it by address. (References from peers are still read
            // into guest memory: that copy is this server's own.)
            send_by_ref: false,
            ..EngineConfig::default()
        };
        let mut engine = Engine::new(cfg, GuestMemory::default());
        let dev = engine.add_device(gids);
        RdmaDev {
            engine,
            dev,
            pds: BTreeMap::new(),
            dma_generation: None,
            epoch: 0,
            eqs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            aqs: Vec::new(),
            qps: BTreeMap::new(),
            mrs: BTreeMap::new(),
            ahs: BTreeMap::new(),
            commands: 0,
            standalone: true,
            events: Vec::new(),
            why: String::new(),
            verbose: false,
            mesh: None,
            srqs: BTreeMap::new(),
            qp_count: limits.qps.max(2),
            result: [0; 2],
            ptes: PageTables::new(limits.ptes),
        }
    }

    /// Reads a header template of at most 256 bytes and learns its
    /// addresses: the source is always one of the guest's own GIDs, and
    /// with no mesh every destination is in this guest too. Answers the
    /// (source, destination) pair.
    fn template(&mut self, dma: &Dma, at: u64, len: u32) -> Option<(Gid, Gid)> {
        let mut h = vec![0u8; (len as usize).min(256)];
        dma.read(at, &mut h).ok()?;
        let (src, dst) = template_gids(&h)?;
        let mut learn = vec![src];
        if self.standalone {
            learn.push(dst);
        }
        let mut gids = self.engine.gids(self.dev).ok()?.to_vec();
        let before = gids.len();
        for g in learn {
            if !gids.contains(&g) {
                gids.push(g);
            }
        }
        if gids.len() != before {
            // A guest has a handful of addresses; the table stays small.
            gids.truncate(MAX_GIDS);
            if let Some(m) = &self.mesh {
                m.set_gids(gids.clone());
            }
            let _ = self.engine.set_gids(self.dev, gids);
        }
        Some((src, dst))
    }

    /// Puts the device on the TCP mesh: requests for QPs in other servers'
    /// guests go through it, and destinations no server owns are refused
    /// (a connected QP's MODIFY_QP fails; an AH is made and treated as
    /// local). The guest's GIDs are advertised, with any learned later.
    pub fn attach_mesh(&mut self, mesh: std::sync::Arc<ernic_mesh::Mesh>, gids: Vec<Gid>) {
        self.engine.set_remote(Box::new(mesh.carrier()));
        let _ = self.engine.set_gids(self.dev, gids.clone());
        mesh.set_gids(gids);
        self.mesh = Some(mesh);
        self.standalone = false;
    }

    /// Whether the device is on a mesh (and so must be polled for its
    /// messages).
    pub fn on_mesh(&self) -> bool {
        self.mesh.is_some()
    }

    /// Applies what peers sent (requests for this guest's memory, replies
    /// to its requests) and writes the completions; answers whether there
    /// was any.
    pub fn mesh_pass(&mut self, boot: &Bootstrap, dma: &mut Dma, fire: &mut Vec<u16>) -> bool {
        let Some(mesh) = self.mesh.clone() else {
            return false;
        };
        if !mesh.has_messages() {
            return false;
        }
        self.sync(boot, dma);
        let now = Instant::now();
        mesh.begin_pass();
        while let Some(m) = mesh.pop() {
            self.engine.apply_remote(m.from, m.buf, m.start, now);
            self.engine.take_released(|b| mesh.release(b));
        }
        // Receive threads kept out of a full queue by SENDs waiting for
        // receives: give up on those (seed 001).
        if mesh
            .starved_for()
            .is_some_and(|d| d >= std::time::Duration::from_millis(500))
            && self.engine.has_held()
        {
            self.engine.expire_held(now);
        }
        self.engine.poll(now);
        self.engine.take_released(|b| mesh.release(b));
        self.complete(dma, fire);
        mesh.flush();
        mesh.end_pass();
        true
    }

    /// Whether refused admin commands are logged to stderr, with why.
    pub fn set_verbose(&mut self, on: bool) {
        self.verbose = on;
    }

    /// The status of a DESTROY: the core's answer, and on success the
    /// front end's record dropped by `forget`.
    fn destroyed(
        &mut self,
        r: Result<(), ernic_core::EngineError>,
        forget: impl FnOnce(&mut RdmaDev) -> bool,
    ) -> u32 {
        match r {
            Ok(()) => {
                forget(self);
                st::OK
            }
            Err(e) => self.refuse(st::BAD_INDEX, e),
        }
    }

    /// Records why a command is refused; answers its status.
    fn refuse(&mut self, status: u32, why: impl std::fmt::Display) -> u32 {
        self.why = why.to_string();
        status
    }

    /// Admin commands run so far.
    pub fn commands(&self) -> u64 {
        self.commands
    }

    /// The core engine (counters, inspection).
    pub fn engine(&self) -> &Engine<GuestMemory> {
        &self.engine
    }

    /// Runs `create` with the core PD that the guest's `pd_id` names, made
    /// now if this is the id's first use (see the module doc); a PD made
    /// for a command that fails goes with it. Answers `create`'s status, or
    /// BAD_INDEX when [`MAX_PDS`] PDs exist already.
    fn in_pd(&mut self, pd_id: u32, create: impl FnOnce(&mut RdmaDev, PdId) -> u32) -> u32 {
        let (pd, fresh) = match self.pds.get(&pd_id) {
            Some(&pd) => (pd, false),
            None => match self.engine.alloc_pd(self.dev) {
                Ok(pd) => {
                    self.pds.insert(pd_id, pd);
                    (pd, true)
                }
                Err(e) => return self.refuse(st::BAD_INDEX, format_args!("PD {pd_id}: {e}")),
            },
        };
        let status = create(self, pd);
        if status != st::OK && fresh {
            let _ = self.engine.dealloc_pd(self.dev, pd);
            self.pds.remove(&pd_id);
        }
        status
    }

    /// Lets go of guest memory (the client unmapped a window, or left):
    /// the engine's view, which holds the client's windows mapped, is
    /// dropped now and taken afresh at the next access.
    pub fn release_memory(&mut self) {
        *self.engine.memory_mut() = GuestMemory::default();
        self.dma_generation = None;
    }

    /// Forgets every object (RESET_LIF, a device reset).
    fn forget(&mut self) {
        let _ = self.engine.reset_device(self.dev);
        self.pds.clear();
        self.ptes.clear();
        self.eqs.clear();
        self.cqs.clear();
        self.aqs.clear();
        self.qps.clear();
        self.mrs.clear();
        self.ahs.clear();
        self.srqs.clear();
    }

    /// Brings the view of guest memory and the bootstrap's queues up to
    /// date.
    fn sync(&mut self, boot: &Bootstrap, dma: &Dma) {
        if self.dma_generation != Some(dma.generation()) {
            *self.engine.memory_mut() = GuestMemory(dma.view());
            self.dma_generation = Some(dma.generation());
        }
        if boot.epoch != self.epoch {
            self.forget();
            self.epoch = boot.epoch;
        }
        for q in &boot.eqs {
            if let std::collections::btree_map::Entry::Vacant(e) = self.eqs.entry(q.qid) {
                if let Some(ring) = Ring::contiguous(q.dma_addr, q.depth_log2, q.stride_log2) {
                    e.insert(Eq {
                        ring,
                        vector: u16::try_from(q.cid).unwrap_or(u16::MAX),
                        prod: 0,
                    });
                }
            }
        }
        for q in &boot.cqs {
            if !self.cqs.contains_key(&q.qid) {
                self.add_admin_cq(q);
            }
        }
        for q in &boot.aqs {
            if !self.aqs.iter().any(|a| a.qid == q.qid) {
                if let Some(ring) = Ring::contiguous(q.dma_addr, q.depth_log2, q.stride_log2) {
                    self.aqs.push(Aq {
                        qid: q.qid,
                        ring,
                        cq: q.cid,
                        cons: 0,
                    });
                }
            }
        }
    }

    fn add_admin_cq(&mut self, q: &RdmaQueue) {
        if let Some(ring) = Ring::contiguous(q.dma_addr, q.depth_log2, q.stride_log2) {
            self.cqs.insert(
                q.qid,
                Cq {
                    ring,
                    eq: q.cid,
                    prod: 0,
                    guest_next: 0,
                    armed: false,
                    lost: 0,
                },
            );
        }
    }

    /// An admin queue's doorbell: runs its commands up to `p_index`,
    /// writing a completion for each, then the event and interrupt its CQ
    /// is armed for. Vectors to signal go to `fire`.
    pub fn aq_doorbell(
        &mut self,
        boot: &Bootstrap,
        dma: &mut Dma,
        qid: u32,
        p_index: u16,
        fire: &mut Vec<u16>,
    ) {
        self.sync(boot, dma);
        let Some(at) = self.aqs.iter().position(|a| a.qid == qid) else {
            return;
        };
        let depth = self.aqs[at].ring.depth();
        let target = u32::from(p_index) & (depth - 1);
        let mut cmd = [0u8; MAX_ADMIN_STRIDES * admin_wqe::STRIDE];
        // At most one pass round the ring per doorbell.
        let mut ran = 0;
        while self.aqs[at].cons & (depth - 1) != target && ran < depth {
            let aq = &self.aqs[at];
            let index = aq.cons & (depth - 1);
            let mut first = [0u8; admin_wqe::STRIDE];
            if dma.read(aq.ring.slot(index), &mut first).is_err() {
                // An unreadable ring: stop; the driver times the command out.
                return;
            }
            // One whole stride's array: the header's getters cannot fail.
            let header = admin_wqe::Packet::new_unchecked(&first);
            let op = header.op();
            let len = usize::from(header.len());
            let strides = header.strides();
            let status = if strides > MAX_ADMIN_STRIDES || strides as u32 > depth - ran {
                st::MSG_TOO_BIG
            } else {
                // The command: the first stride after its header, then
                // whole strides.
                cmd.fill(0);
                cmd[..admin_wqe::STRIDE - admin_wqe::HDR_LEN].copy_from_slice(header.cmd());
                let mut ok = true;
                for s in 1..strides {
                    let from = admin_wqe::STRIDE - admin_wqe::HDR_LEN + (s - 1) * admin_wqe::STRIDE;
                    let slot = self.aqs[at].ring.slot(index + s as u32);
                    ok &= dma
                        .read(slot, &mut cmd[from..from + admin_wqe::STRIDE])
                        .is_ok();
                }
                if ok {
                    self.command(op, &cmd[..len.min(cmd.len())], dma)
                } else {
                    st::BAD_ATTR
                }
            };
            self.commands += 1;
            if status != st::OK && self.verbose {
                eprintln!(
                    "ernic-server: RDMA admin command {op} refused with status {status}{}{}",
                    if self.why.is_empty() { "" } else { ": " },
                    self.why
                );
            }
            self.why.clear();
            let aq = &self.aqs[at];
            let (aqid, cqid) = (aq.qid, aq.cq);
            let mut c = [0u8; cqe::LEN];
            // A whole CQE's array: no setter can run past it.
            let mut p = admin_cqe::Packet::new_unchecked(&mut c);
            p.set_cmd_idx(index as u16);
            p.set_cmd_op(op);
            p.set_result(self.result);
            self.result = [0; 2];
            p.set_status(status);
            let qtf = admin_cqe::qid_type_flags(aqid, status != st::OK);
            self.post_cqe(cqid, &mut c, qtf, dma, fire);
            let strides = strides.min((depth - ran) as usize) as u32;
            self.aqs[at].cons = self.aqs[at].cons.wrapping_add(strides);
            ran += strides;
        }
    }

    /// Writes a CQE (its last word, with the color, after the rest) to CQ
    /// `cqid`, then the CQ's event if it is armed.
    fn post_cqe(
        &mut self,
        cqid: u32,
        c: &mut [u8; cqe::LEN],
        qtf: u32,
        dma: &mut Dma,
        fire: &mut Vec<u16>,
    ) {
        let Some(cq) = self.cqs.get_mut(&cqid) else {
            return;
        };
        let depth = cq.ring.depth();
        let color = (cq.prod / depth) & 1 == 0;
        let qtf = qtf | if color { cqe::COLOR } else { 0 };
        cqe::Packet::new_unchecked(&mut *c).set_qid_type_flags(qtf);
        let slot = cq.ring.slot(cq.prod);
        let last_word = cqe::field::QID_TYPE_FLAGS;
        let body = dma.write(slot, &c[..last_word.start]);
        // The body is visible before the word whose color publishes it
        // (the compiler may not sink the body's copy past this).
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        let last = dma.write(slot + last_word.start as u64, &c[last_word]);
        if let Err(e) = body.and(last) {
            // The guest gave a ring the device cannot write: this entry is
            // lost. Said once per CQ (a guest must not flood the log).
            cq.lost += 1;
            if cq.lost == 1 {
                eprintln!(
                    "ernic-server: CQ {cqid}: cannot write its entry at {slot:#x} ({e}); \
                     completions to it are lost"
                );
            }
            return;
        }
        cq.prod = cq.prod.wrapping_add(1);
        if cq.armed {
            cq.armed = false;
            let eq = cq.eq;
            self.post_eqe(eq, cqid, dma, fire);
        }
    }

    /// Writes a CQ-notify EQE naming `cqid` to EQ `eqid` and raises its
    /// vector.
    fn post_eqe(&mut self, eqid: u32, cqid: u32, dma: &mut Dma, fire: &mut Vec<u16>) {
        let Some(eq) = self.eqs.get_mut(&eqid) else {
            return;
        };
        let depth = eq.ring.depth();
        let color = (eq.prod / depth) & 1 == 0;
        let mut evt = [0u8; eqe::LEN];
        // A whole EQE's array: the setter cannot run past it.
        eqe::Packet::new_unchecked(&mut evt).set_cq_notify(cqid, color);
        if dma.write(eq.ring.slot(eq.prod), &evt).is_ok() {
            eq.prod = eq.prod.wrapping_add(1);
            fire.push(eq.vector);
        }
    }

    /// A CQ doorbell: ring 0 reports the driver's next entry; ring 1 or 2
    /// arms the CQ, which fires at once when entries are already waiting
    /// (a level, not an edge).
    pub fn cq_doorbell(
        &mut self,
        boot: &Bootstrap,
        dma: &mut Dma,
        cqid: u32,
        ring: u8,
        index: u16,
        fire: &mut Vec<u16>,
    ) {
        self.sync(boot, dma);
        let Some(cq) = self.cqs.get_mut(&cqid) else {
            return;
        };
        let mask = cq.ring.depth() - 1;
        match ring {
            0 => cq.guest_next = index & mask as u16,
            1 | 2 => {
                let waiting = (cq.prod & mask) as u16 != cq.guest_next;
                if waiting {
                    cq.armed = false;
                    let eq = cq.eq;
                    self.post_eqe(eq, cqid, dma, fire);
                } else {
                    cq.armed = true;
                }
            }
            _ => {}
        }
    }

    /// Runs one admin command; answers its status.
    fn command(&mut self, op: u8, c: &[u8], dma: &mut Dma) -> u32 {
        let need = match op {
            admin_op::CREATE_CQ => fw::create_cq::LEN,
            admin_op::CREATE_QP => fw::create_qp::LEN,
            admin_op::MODIFY_QP => fw::mod_qp::LEN,
            admin_op::QUERY_QP => fw::query_qp::LEN,
            admin_op::CREATE_MR => fw::create_mr::LEN,
            admin_op::CREATE_AH => fw::create_ah::LEN,
            fw::srq_op::CREATE_SRQ => fw::srq::CREATE_LEN,
            fw::srq_op::MODIFY_SRQ => fw::srq::MODIFY_LEN,
            fw::srq_op::QUERY_SRQ | fw::srq_op::DESTROY_SRQ => 4,
            admin_op::STATS_HDRS
            | admin_op::STATS_VALS
            | admin_op::QP_STATS_HDRS
            | admin_op::QP_STATS_VALS => fw::stats_hdr::LEN,
            admin_op::DESTROY_CQ
            | admin_op::DESTROY_QP
            | admin_op::DESTROY_MR
            | admin_op::DESTROY_AH => 4,
            _ => 0,
        };
        if c.len() < need {
            return st::BAD_ATTR;
        }
        match op {
            admin_op::QUERY_QP => self.query_qp(c, dma),
            fw::srq_op::CREATE_SRQ => {
                self.in_pd(le32(c, fw::srq::PD_ID), |d, pd| d.create_srq(c, dma, pd))
            }
            fw::srq_op::MODIFY_SRQ | fw::srq_op::QUERY_SRQ | fw::srq_op::DESTROY_SRQ => {
                self.srq_command(op, c)
            }
            admin_op::STATS_HDRS | admin_op::QP_STATS_HDRS => self.stats(c, dma, false, op),
            admin_op::STATS_VALS | admin_op::QP_STATS_VALS => self.stats(c, dma, true, op),
            admin_op::NOOP | admin_op::DEBUG | admin_op::MODIFY_DCQCN | admin_op::QUERY_AH => {
                st::OK
            }
            admin_op::CREATE_CQ => self.create_cq(c, dma),
            admin_op::DESTROY_CQ => self.destroy_cq(le32(c, 0)),
            admin_op::CREATE_QP => self.in_pd(le32(c, fw::create_qp::PD_ID), |d, pd| {
                d.create_qp(c, dma, pd)
            }),
            admin_op::MODIFY_QP => self.modify_qp(c, dma),
            admin_op::DESTROY_QP => {
                let id = le32(c, 0);
                let r = self.engine.destroy_qp(self.dev, Qpn(id));
                self.destroyed(r, |d| {
                    d.ptes.release(Owner::Qp(id));
                    d.qps.remove(&id).is_some()
                })
            }
            admin_op::CREATE_MR => self.in_pd(le32(c, fw::create_mr::PD_ID), |d, pd| {
                d.create_mr(c, dma, pd)
            }),
            admin_op::DESTROY_MR => {
                let id = le32(c, 0);
                let r = self.engine.dereg_mr(self.dev, id);
                self.destroyed(r, |d| {
                    d.ptes.release(Owner::Mr(id >> 8));
                    d.mrs.remove(&id).is_some()
                })
            }
            admin_op::CREATE_AH => self.in_pd(le32(c, fw::create_ah::PD_ID), |d, pd| {
                d.create_ah(c, dma, pd)
            }),
            admin_op::DESTROY_AH => {
                let id = le32(c, 0);
                let r = self.engine.destroy_ah(self.dev, AhId(id));
                self.destroyed(r, |d| d.ahs.remove(&id).is_some())
            }
            _ => st::BAD_CMD,
        }
    }

    fn create_cq(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        use fw::create_cq as f;
        let id = le32(c, f::ID_VER);
        let eq = le32(c, f::EQ_ID);
        if self.cqs.contains_key(&id) {
            return st::BAD_INDEX;
        }
        if !self.eqs.contains_key(&eq) {
            return st::BAD_ATTR;
        }
        if c[f::STRIDE_LOG2] as usize != cqe::LEN.trailing_zeros() as usize {
            return st::BAD_ATTR;
        }
        let ring = match Ring::described(
            dma,
            &self.ptes,
            le64(c, f::DMA_ADDR),
            le32(c, f::MAP_COUNT),
            c[f::PAGE_SIZE_LOG2],
            c[f::DEPTH_LOG2],
            c[f::STRIDE_LOG2],
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        if let Err(e) = self
            .engine
            .create_cq(self.dev, Some(CqId(id)), ring.depth())
        {
            return self.refuse(st::BAD_INDEX, e);
        }
        self.ptes.charge(Owner::Cq(id), ring.ptes);
        self.cqs.insert(
            id,
            Cq {
                ring,
                eq,
                prod: 0,
                guest_next: 0,
                armed: false,
                lost: 0,
            },
        );
        st::OK
    }

    fn destroy_cq(&mut self, id: u32) -> u32 {
        if self.aqs.iter().any(|a| a.cq == id) {
            return st::BAD_STATE;
        }
        let r = self.engine.destroy_cq(self.dev, CqId(id));
        self.destroyed(r, |d| {
            d.ptes.release(Owner::Cq(id));
            d.cqs.remove(&id).is_some()
        })
    }

    fn create_qp(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        use fw::create_qp as f;
        let id = le32(c, f::ID_VER);
        if self.qps.contains_key(&id) {
            return self.refuse(st::BAD_INDEX, format_args!("QP {id} exists"));
        }
        let qp_type = match (c[f::TYPE_STATE] & 0xf, id) {
            (fw::qpt::UD, fw::GSI_QPID) => QpType::Gsi,
            (fw::qpt::UD, _) => QpType::Ud,
            (fw::qpt::RC, _) => QpType::Rc,
            (fw::qpt::UC, _) => QpType::Uc,
            _ => return st::BAD_TYPE,
        };
        let tables = &self.ptes;
        let ring = |dma: &Dma, at_dma, at_count, at_page, at_depth, at_stride| {
            if le32(c, at_count) == 0 && le64(c, at_dma) == 0 {
                return Ok(None);
            }
            Ring::described(
                dma,
                tables,
                le64(c, at_dma),
                le32(c, at_count),
                c[at_page],
                c[at_depth],
                c[at_stride],
            )
            .map(Some)
        };
        let sq = match ring(
            dma,
            f::SQ_DMA_ADDR,
            f::SQ_MAP_COUNT,
            f::SQ_PAGE_SIZE_LOG2,
            f::SQ_DEPTH_LOG2,
            f::SQ_STRIDE_LOG2,
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        let rq = match ring(
            dma,
            f::RQ_DMA_ADDR,
            f::RQ_MAP_COUNT,
            f::RQ_PAGE_SIZE_LOG2,
            f::RQ_DEPTH_LOG2,
            f::RQ_STRIDE_LOG2,
        ) {
            Ok(r) => r,
            Err(s) => return s,
        };
        let (sq_cq, rq_cq) = (le32(c, f::SQ_CQ_ID), le32(c, f::RQ_CQ_ID));
        // No RQ ring and an SRQ named: receives come from it.
        let srq_id = le32(c, f::RQ_TBL_INDEX_SRQ_ID);
        let srq = (rq.is_none() && self.srqs.contains_key(&srq_id))
            .then(|| ernic_core::SrqId(srq_id - self.qp_count));
        // A missing queue still names a CQ in the core; its own stands in.
        let send_cq = if sq.is_some() { sq_cq } else { rq_cq };
        let recv_cq = if rq.is_some() || srq.is_some() {
            rq_cq
        } else {
            sq_cq
        };
        for cq in [send_cq, recv_cq] {
            if !self.cqs.contains_key(&cq) || self.aqs.iter().any(|a| a.cq == cq) {
                return self.refuse(st::BAD_ATTR, format_args!("no CQ {cq} for a QP"));
            }
        }
        // WQE bodies carry SGEs from byte 32 (16 bytes each), or inline data.
        let sges = |r: &Option<Ring>| {
            r.as_ref().map_or(1, |r| {
                ((r.stride().saturating_sub(32)) / 16).clamp(1, ernic_core::MAX_SGE) as u32
            })
        };
        let caps = QpCaps {
            max_send_wr: sq.as_ref().map_or(1, Ring::depth),
            max_recv_wr: rq.as_ref().map_or(1, Ring::depth),
            max_send_sge: sges(&sq),
            max_recv_sge: sges(&rq),
            max_inline_data: sq
                .as_ref()
                .map_or(0, |r| r.stride().saturating_sub(32) as u32)
                .min(self.engine.config().max_inline),
        };
        let init = QpInit {
            qp_type,
            pd,
            send_cq: CqId(send_cq),
            recv_cq: CqId(recv_cq),
            srq,
            caps,
            // Each WQE says whether it is signaled (IONIC_V1_FLAG_SIG).
            sq_sig_all: false,
            qpn: Some(Qpn(id)),
        };
        // Each ring's table fitted alone; both must fit together.
        let ptes = [&sq, &rq]
            .iter()
            .map(|r| r.as_ref().map_or(0, |r| r.ptes))
            .sum::<u32>();
        if let Err(e) = self.ptes.check_free(ptes.into()) {
            return self.refuse(e.status(), e);
        }
        if let Err(e) = self.engine.create_qp(self.dev, &init) {
            return self.refuse(st::BAD_ATTR, e);
        }
        // Key 0 for the QPs the driver marks privileged only (module doc).
        let privileged = be32(c, f::PRIV_FLAGS_BE) & u32::from(fw::qpf::PRIVILEGED) != 0;
        self.engine
            .set_qp_privileged(self.dev, Qpn(id), privileged)
            .expect("the QP was just made");
        self.ptes.charge(Owner::Qp(id), ptes);
        self.qps.insert(
            id,
            Qp {
                qp_type,
                sq,
                rq,
                sq_cq: send_cq,
                rq_cq: recv_cq,
                sq_cons: 0,
                rq_prod: 0,
                msn: 0,
                sq_flushed: false,
                rq_flushed: false,
            },
        );
        st::OK
    }

    fn modify_qp(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        use fw::{attr, mod_qp as f};
        let id = le32(c, f::ID_VER);
        let Ok(info) = self.engine.query_qp(self.dev, Qpn(id)) else {
            return st::BAD_INDEX;
        };
        let mask = be32(c, f::ATTR_MASK_BE);
        let mut a = QpAttr::default();
        if mask & attr::STATE != 0 {
            match fw::qps::to_state(c[f::TYPE_STATE] & 0xf) {
                Some(s) => a.state = Some(s),
                None => return st::BAD_STATE,
            }
        }
        if mask & attr::ACCESS_FLAGS != 0 {
            let fl = be16(c, f::ACCESS_FLAGS_BE);
            a.access = Some(Access::LOCAL_WRITE | fw::qpf::to_access(fl));
        }
        if info.qp_type.is_datagram() && mask & attr::QKEY != 0 {
            a.qkey = Some(le32(c, f::QKEY_DEST_QPN));
        }
        if mask & attr::PATH_MTU != 0 {
            match fw::pmtu::to_bytes(c[f::PMTU]) {
                Some(mtu) => a.path_mtu = Some(mtu),
                None => return st::BAD_ATTR,
            }
        }
        if mask & attr::RQ_PSN != 0 {
            a.rq_psn = Some(le32(c, f::RQ_PSN));
        }
        if mask & attr::SQ_PSN != 0 {
            a.sq_psn = Some(le32(c, f::SQ_PSN));
        }
        if info.qp_type.is_connected() && mask & attr::AV != 0 {
            // The destination is in the packet header template.
            let Some((_, gid)) = self.template(dma, le64(c, f::DMA_ADDR), le32(c, f::AH_ID_LEN))
            else {
                return st::BAD_ATTR;
            };
            a.dest = Some((gid, Qpn(le32(c, f::QKEY_DEST_QPN) & 0xff_ffff)));
        }
        match self.engine.modify_qp(self.dev, Qpn(id), &a, Instant::now()) {
            Err(e) => self.refuse(st::BAD_ATTR, e),
            Ok(()) => {
                if let (Some(q), Some(s)) = (self.qps.get_mut(&id), a.state) {
                    if s != QpState::Err {
                        (q.sq_flushed, q.rq_flushed) = (false, false);
                    }
                    if s == QpState::Reset {
                        (q.sq_cons, q.rq_prod, q.msn) = (0, 0, 0);
                    }
                }
                st::OK
            }
        }
    }

    /// CREATE_SRQ: a ring (bounded, page table read once) and an id above
    /// the QP id range, answered in the CQE.
    fn create_srq(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        use fw::srq as f;
        let ring = match Ring::described(
            dma,
            &self.ptes,
            le64(c, f::DMA_ADDR),
            le32(c, f::MAP_COUNT),
            c[f::PAGE_SIZE_LOG2],
            c[f::DEPTH_LOG2],
            c[f::STRIDE_LOG2],
        ) {
            Ok(r) => r,
            Err(s) => return self.refuse(s, "the SRQ's ring"),
        };
        let id =
            (self.qp_count..self.qp_count.saturating_mul(2)).find(|i| !self.srqs.contains_key(i));
        let Some(id) = id else {
            return self.refuse(st::BAD_INDEX, "no SRQ id left");
        };
        let sges = ((ring.stride().saturating_sub(32)) / 16).clamp(1, ernic_core::MAX_SGE) as u32;
        let srq = ernic_core::SrqId(id - self.qp_count);
        if let Err(e) = self
            .engine
            .create_srq(self.dev, Some(srq), pd, ring.depth(), sges)
        {
            return self.refuse(st::BAD_ATTR, e);
        }
        if let Err(e) = self.engine.modify_srq(self.dev, srq, le32(c, f::LIMIT)) {
            let _ = self.engine.destroy_srq(self.dev, srq);
            return self.refuse(st::BAD_ATTR, e);
        }
        self.ptes.charge(Owner::Srq(id), ring.ptes);
        self.srqs.insert(id, Srq { ring, prod: 0 });
        self.result = [id, 0];
        st::OK
    }

    /// MODIFY_SRQ (the limit), QUERY_SRQ (limit and receives outstanding,
    /// in the CQE), DESTROY_SRQ.
    fn srq_command(&mut self, op: u8, c: &[u8]) -> u32 {
        let id = le32(c, fw::srq::ID);
        if !self.srqs.contains_key(&id) {
            return self.refuse(st::BAD_INDEX, format_args!("no SRQ {id}"));
        }
        let srq = ernic_core::SrqId(id - self.qp_count);
        let r = match op {
            fw::srq_op::MODIFY_SRQ => {
                self.engine
                    .modify_srq(self.dev, srq, le32(c, fw::srq::MODIFY_LIMIT))
            }
            fw::srq_op::QUERY_SRQ => self.engine.query_srq(self.dev, srq).map(|(limit, n)| {
                self.result = [limit, n];
            }),
            _ => self.engine.destroy_srq(self.dev, srq).map(|()| {
                self.ptes.release(Owner::Srq(id));
                self.srqs.remove(&id);
            }),
        };
        match r {
            Ok(()) => st::OK,
            Err(e) => self.refuse(st::BAD_STATE, e),
        }
    }

    /// STATS_HDRS / QP_STATS_HDRS: the counters' names as `struct
    /// ionic_v1_stat` entries (type LE64, the value's offset; a NONE entry
    /// ends the list); STATS_VALS / QP_STATS_VALS: the values, 8 bytes
    /// each at those offsets. The device's counters, or QP `id_ver`'s
    /// (QP_STATS_VALS); at most `length` bytes are written.
    fn stats(&mut self, c: &[u8], dma: &mut Dma, vals: bool, op: u8) -> u32 {
        use ernic_core::Counter;
        use fw::stats_hdr as f;
        // The names are the same for every QP: only the values name one.
        let qp = op == admin_op::QP_STATS_VALS;
        let counters = if qp {
            let id = le32(c, f::ID_VER);
            match self.engine.qp_counters(self.dev, Qpn(id)) {
                Ok(k) => k.clone(),
                Err(e) => return self.refuse(st::BAD_INDEX, e),
            }
        } else {
            match self.engine.device_counters(self.dev) {
                Ok(k) => k.clone(),
                Err(e) => return self.refuse(st::BAD_INDEX, e),
            }
        };
        let len = (le32(c, f::LENGTH) as usize).min(64 << 10);
        let mut out = Vec::with_capacity(len);
        if vals {
            for k in Counter::ALL {
                out.extend_from_slice(&counters.get(k).to_le_bytes());
            }
        } else {
            for (i, k) in Counter::ALL.iter().enumerate() {
                let type_off = fw::stat::TYPE_LE64 << fw::stat::TYPE_SHIFT | (8 * i) as u32;
                out.extend_from_slice(&type_off.to_be_bytes());
                let mut name = [0u8; fw::stat::NAME_LEN];
                let n = k.name().len().min(fw::stat::NAME_LEN - 1);
                name[..n].copy_from_slice(&k.name().as_bytes()[..n]);
                out.extend_from_slice(&name);
            }
            // The end: an entry of type NONE.
            out.extend_from_slice(&[0u8; 4 + fw::stat::NAME_LEN]);
        }
        out.truncate(len);
        if dma.write(le64(c, f::DMA_ADDR), &out).is_err() {
            return self.refuse(st::BAD_ATTR, "the stats buffer is not in guest memory");
        }
        st::OK
    }

    /// QUERY_QP: the QP's state, MTU, PSNs, Q_Key or peer QP and rights
    /// into the driver's two buffers (`struct ionic_v1_admin_query_qp_sq`
    /// and `_rq`); one outstanding READ or atomic each way.
    fn query_qp(&mut self, c: &[u8], dma: &mut Dma) -> u32 {
        use fw::query_qp as f;
        let id = le32(c, f::ID_VER);
        let info = match self.engine.query_qp(self.dev, Qpn(id)) {
            Ok(i) => i,
            Err(e) => return self.refuse(st::BAD_INDEX, e),
        };
        let state = fw::qps::from_state(info.state);
        let flags = fw::qpf::from_access(info.access);
        let qkey_dest = if info.qp_type.is_datagram() {
            info.qkey.unwrap_or(0)
        } else {
            info.dest.map_or(0, |d| d.qpn.0)
        };
        let mut sq = [0u8; 20];
        sq[2..4].copy_from_slice(&flags.to_be_bytes());
        sq[8..12].copy_from_slice(&qkey_dest.to_be_bytes());
        sq[16..20].copy_from_slice(&info.rq_psn.to_be_bytes());
        let mut rq = [0u8; 12];
        rq[0] = state << 4 | fw::pmtu::from_bytes(info.path_mtu);
        rq[2] = 1;
        rq[3] = 1;
        rq[4..8].copy_from_slice(&info.sq_psn.to_be_bytes());
        rq[8..10].copy_from_slice(&flags.to_be_bytes());
        let ok = dma.write(le64(c, f::SQ_DMA_ADDR), &sq).is_ok()
            && dma.write(le64(c, f::RQ_DMA_ADDR), &rq).is_ok();
        if ok {
            st::OK
        } else {
            self.refuse(st::BAD_ATTR, "the query buffers are not in guest memory")
        }
    }

    fn create_mr(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        use fw::create_mr as f;
        let id = le32(c, f::ID_VER);
        let (va, len) = (le64(c, f::VA), le64(c, f::LENGTH));
        let flags = le16(c, f::DBID_FLAGS);
        let count = le32(c, f::MAP_COUNT);
        let page_log2 = c[f::PAGE_SIZE_LOG2];
        if va.checked_add(len).is_none() || self.mrs.contains_key(&id) {
            return st::BAD_ATTR;
        }
        let acc = fw::mrf::to_access(flags).0;
        // A fast-registration MR (IONIC_MRF_UKEY_EN): room for `count`
        // pages, bound later by REG_MR work requests; the room is taken
        // from the LIF's page table now, as a page table's entries are.
        const UKEY_EN: u16 = 1 << 13;
        let fast = flags & UKEY_EN != 0;
        let ptes = if fast || count > 1 { count } else { 0 };
        if let Err(e) = self.ptes.check_one(ptes.into()) {
            return self.refuse(e.status(), format_args!("MR {id:#x}: {e}"));
        }
        let r = if fast {
            let max = u64::from(count) << page_log2.clamp(12, 30);
            self.engine
                .alloc_fast_mr_pages(self.dev, pd, Some(id), max, count)
        } else {
            let runs = if count <= 1 {
                vec![Run {
                    off: 0,
                    dma: le64(c, f::DMA_ADDR),
                    len,
                }]
            } else {
                let first = va & ((1u64 << page_log2.min(63)) - 1);
                match read_page_table(dma, le64(c, f::DMA_ADDR), count, page_log2, first, len) {
                    Ok(r) => r,
                    Err(s) => return s,
                }
            };
            if len == 0 {
                return st::BAD_ATTR;
            }
            self.engine.reg_mr(
                self.dev,
                MrSpec {
                    pd,
                    key: Some(id),
                    iova: va,
                    len,
                    access: Access(acc),
                    runs,
                },
            )
        };
        match r {
            Ok(_) => {
                self.ptes.charge(Owner::Mr(id >> 8), ptes);
                self.mrs.insert(id, ());
                st::OK
            }
            Err(e) => self.refuse(st::BAD_ATTR, e),
        }
    }

    fn create_ah(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        use fw::create_ah as f;
        let id = le32(c, f::ID_VER);
        let Some((src, gid)) = self.template(dma, le64(c, f::DMA_ADDR), le32(c, f::LENGTH)) else {
            return st::BAD_ATTR;
        };
        match self
            .engine
            .create_ah_from(self.dev, Some(AhId(id)), pd, Some(src), gid)
        {
            Ok(_) => {
                self.ahs.insert(id, gid);
                st::OK
            }
            Err(e) => self.refuse(st::BAD_INDEX, e),
        }
    }

    /// The QPs the driver created, by id, with their CQs (for inspection).
    pub fn qps(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.qps.iter().map(|(&id, q)| (id, q.sq_cq, q.rq_cq))
    }

    /// Whether QP `id` has a send and a receive ring.
    pub fn qp_rings(&self, id: u32) -> Option<(bool, bool)> {
        self.qps.get(&id).map(|q| (q.sq.is_some(), q.rq.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::Limits;
    use ernic_vfio::proto::{DMA_READ, DMA_WRITE};
    use proptest::prelude::*;

    const G: u64 = 0x10_0000;
    const RAM: u64 = 1 << 18;
    const EQ: u64 = 0x1000;
    const ACQ: u64 = 0x2000;
    const AQ: u64 = 0x3000;
    const CQ: u64 = 0x5000;
    const SQ: u64 = 0x6000;
    const RQ: u64 = 0x7000;

    fn dma() -> Dma {
        let mut d = Dma::new(4);
        let fd = ernic_vfio::client::shared_memory(c"ernic-rdma-test", RAM).unwrap();
        d.map(G, RAM, 0, DMA_READ | DMA_WRITE, Some(fd)).unwrap();
        d
    }

    fn boot() -> Bootstrap {
        let mut b = Bootstrap::default();
        let l = Limits {
            vectors: 32,
            eqs: 4,
            cqs: 64,
            aqs: 1,
        };
        let q = |op: u8, qid: u32, cid: u32, depth: u8, stride: u8, at: u64| {
            let mut c = [0u8; 64];
            c[0] = op;
            c[4..8].copy_from_slice(&qid.to_le_bytes());
            c[8..12].copy_from_slice(&cid.to_le_bytes());
            c[14] = depth;
            c[15] = stride;
            c[16..24].copy_from_slice(&(G + at).to_le_bytes());
            c
        };
        assert_eq!(b.run(&q(51, 0, 1, 8, 2, EQ), l), 0);
        assert_eq!(b.run(&q(52, 0, 0, 5, 5, ACQ), l), 0);
        assert_eq!(b.run(&q(53, 0, 0, 5, 6, AQ), l), 0);
        b
    }

    fn admin(d: &mut RdmaDev, b: &Bootstrap, m: &mut Dma, prod: &mut u16, op: u8, cmd: &[u8]) {
        let mut w = vec![0u8; 4 + cmd.len()];
        w[0] = op;
        w[2..4].copy_from_slice(&(cmd.len() as u16).to_le_bytes());
        w[4..].copy_from_slice(cmd);
        for chunk in w.chunks(64) {
            m.write(G + AQ + 64 * u64::from(*prod % 32), chunk).unwrap();
            *prod += 1;
        }
        d.aq_doorbell(b, m, 0, *prod % 32, &mut Vec::new());
    }

    /// A CQ (1, on EQ 0) and an RC QP (5) on it, 16-deep rings of 64 bytes.
    fn objects(d: &mut RdmaDev, b: &Bootstrap, m: &mut Dma, prod: &mut u16) {
        let mut cq = [0u8; 34];
        cq[4] = 4;
        cq[5] = 5;
        cq[12..16].copy_from_slice(&1u32.to_le_bytes());
        cq[20..24].copy_from_slice(&1u32.to_le_bytes());
        cq[24..32].copy_from_slice(&(G + CQ).to_le_bytes());
        admin(d, b, m, prod, admin_op::CREATE_CQ, &cq);
        let mut qp = [0u8; 64];
        qp[8..12].copy_from_slice(&1u32.to_le_bytes());
        qp[12] = 4;
        qp[13] = 6;
        qp[20..24].copy_from_slice(&1u32.to_le_bytes());
        qp[24..32].copy_from_slice(&(G + SQ).to_le_bytes());
        qp[32..36].copy_from_slice(&1u32.to_le_bytes());
        qp[36] = 4;
        qp[37] = 6;
        qp[44..48].copy_from_slice(&1u32.to_le_bytes());
        qp[48..56].copy_from_slice(&(G + RQ).to_le_bytes());
        qp[56..60].copy_from_slice(&5u32.to_le_bytes());
        admin(d, b, m, prod, admin_op::CREATE_QP, &qp);
        assert!(d.qp_rings(5).is_some());
    }

    /// What a hostile guest does once the RDMA side is up.
    #[derive(Debug, Clone)]
    enum Act {
        Admin(u8, Vec<u8>),
        Mem(u16, Vec<u8>),
        Sq(Vec<u8>, u16),
        Rq(Vec<u8>, u16),
        Cq(u32, u8, u16),
        Bell(u8, u32, u16),
    }

    fn act() -> impl Strategy<Value = Act> {
        let bytes = |n| proptest::collection::vec(any::<u8>(), 0..n);
        prop_oneof![
            (0u8..24, bytes(200)).prop_map(|(o, b)| Act::Admin(o, b)),
            (any::<u16>(), bytes(64)).prop_map(|(o, b)| Act::Mem(o, b)),
            (proptest::collection::vec(any::<u8>(), 64), any::<u16>())
                .prop_map(|(w, p)| Act::Sq(w, p)),
            (proptest::collection::vec(any::<u8>(), 64), any::<u16>())
                .prop_map(|(w, p)| Act::Rq(w, p)),
            (0u32..8, 0u8..4, any::<u16>()).prop_map(|(q, r, i)| Act::Cq(q, r, i)),
            (5u8..10, any::<u32>(), any::<u16>()).prop_map(|(t, q, i)| Act::Bell(
                t,
                q & 0xff_ffff,
                i
            )),
        ]
    }

    #[test]
    fn the_records_fit_what_the_limits_count_for_them() {
        use crate::limits::RECORD_BYTES;
        use std::mem::size_of;
        // A map entry (key, record, a share of a node) and a ring's first run.
        let entry = |record: usize| (size_of::<u32>() + record + 16) as u64;
        let ring_run = 32;
        assert!(entry(size_of::<Qp>()) + 2 * ring_run <= RECORD_BYTES);
        assert!(entry(size_of::<Cq>()) + ring_run <= RECORD_BYTES);
        assert!(entry(size_of::<Srq>()) + ring_run <= RECORD_BYTES);
        assert!(entry(size_of::<Eq>()) + ring_run <= RECORD_BYTES);
        assert!(entry(size_of::<Aq>()) + ring_run <= RECORD_BYTES);
        assert!(entry(size_of::<Gid>()) <= RECORD_BYTES / 8, "an AH");
        assert!(entry(8) <= RECORD_BYTES / 8, "an MR (its PD)");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        // Whatever the guest writes — admin commands of any opcode and
        // bytes, WQEs, ring and table memory, doorbells for any queue —
        // the device answers without panicking, and every admin command
        // gets its completion.
        #[test]
        fn hostile_guests_do_not_crash_the_rdma_side(acts in proptest::collection::vec(act(), 1..40)) {
            let mut m = dma();
            let b = boot();
            let limits = RdmaLimits {
                qps: 64,
                cqs: 64,
                mrs: 256,
                ahs: 64,
                ptes: 1 << 16,
                queue_bytes: 32 << 20,
                rnr_timeout: std::time::Duration::from_millis(50),
                request_timeout: std::time::Duration::from_millis(50),
            };
            let mut d = RdmaDev::new(limits, Vec::new());
            let mut prod = 0u16;
            objects(&mut d, &b, &mut m, &mut prod);
            let mut fire = Vec::new();
            let (mut sq, mut rq) = (0u16, 0u16);
            for a in acts {
                match a {
                    Act::Admin(op, cmd) => {
                        let before = d.commands();
                        admin(&mut d, &b, &mut m, &mut prod, op, &cmd);
                        prop_assert_eq!(d.commands(), before + 1);
                    }
                    Act::Mem(o, bytes) => {
                        // Anywhere but the admin queue and its CQ.
                        let at = 0x4000 + u64::from(o) % (RAM - 0x4000 - 64);
                        m.write(G + at, &bytes).unwrap();
                    }
                    Act::Sq(w, p) => {
                        m.write(G + SQ + 64 * u64::from(sq % 16), &w).unwrap();
                        sq = sq.wrapping_add(1);
                        d.sq_doorbell(&b, &mut m, 5, if p % 2 == 0 { sq } else { p }, &mut fire);
                    }
                    Act::Rq(w, p) => {
                        m.write(G + RQ + 64 * u64::from(rq % 16), &w).unwrap();
                        rq = rq.wrapping_add(1);
                        d.rq_doorbell(&b, &mut m, 5, if p % 2 == 0 { rq } else { p }, &mut fire);
                    }
                    Act::Cq(q, r, i) => d.cq_doorbell(&b, &mut m, q, r, i, &mut fire),
                    Act::Bell(t, q, i) => match t {
                        5 => d.aq_doorbell(&b, &mut m, q, i, &mut fire),
                        6 => d.sq_doorbell(&b, &mut m, q, i, &mut fire),
                        7 => d.rq_doorbell(&b, &mut m, q, i, &mut fire),
                        8 => d.cq_doorbell(&b, &mut m, q, 1, i, &mut fire),
                        _ => d.tick(&b, &mut m, &mut fire),
                    },
                }
            }
        }
    }
}
