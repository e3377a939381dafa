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
//!
//! This file keeps the device's records (EQs, CQs, admin queues, QPs,
//! SRQs) and their lifetime; the rest is one thing per file: guest memory
//! (`guest_memory.rs`), rings and page tables (`ring.rs`), the admin queue
//! and command dispatch (`admin.rs`), one file per object command (`cq.rs`,
//! `qp.rs`, `mr.rs`, `ah.rs`, `srq.rs`), CQE and EQE posting
//! (`completion.rs`), the send and receive data path (`datapath.rs`) and
//! the mesh pass loop (`mesh.rs`).

use std::collections::BTreeMap;

use ernic_core::{DeviceId, Engine, EngineConfig, Gid, PdId, QpType};
use ernic_vfio::dma::Dma;

use crate::fw::admin_status as st;
use crate::limits::PageTables;

mod admin;
pub use admin::INJECTED_STATUS;
mod ah;
mod completion;
mod cq;
mod datapath;
mod guest_memory;
mod mesh;
mod mr;
mod p4send;
mod qp;
mod ring;
mod srq;

use crate::bootstrap::{Bootstrap, RdmaQueue};
pub use ah::template_gids;
pub use guest_memory::GuestMemory;
pub use p4send::{MAX_TRANSFORM, SendFilterStats};
pub use ring::Ring;
use ring::read_page_table;

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
    /// Its protection domain, and whether CREATE_QP marked it privileged
    /// (what the P4 send hook checks SGEs against, as the core does).
    pd: PdId,
    privileged: bool,
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
    /// Admin commands by `(opcode, status)`: one entry for each pair met
    /// (opcodes are a byte and statuses this device's few, so it stays
    /// small), in the order first met.
    admin_tally: Vec<((u8, u32), u64)>,
    /// No mesh: every destination is in this guest.
    standalone: bool,
    /// Completions taken from the core, reused between doorbells.
    events: Vec<ernic_core::CqEvent>,
    /// Why the last command was refused, for the log.
    why: String,
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
    /// The P4 engine's send-queue hook (`p4send.rs`), when installed.
    p4: Option<p4send::P4Send>,
    /// Faults armed on the admin and data-path events (`stats_vals`,
    /// `admin_err`, `dma_fault`; the engine's own, `send_err` and
    /// `recv_err`, are armed in the engine too).
    injector: Option<std::sync::Arc<ernic_core::inject::Injector>>,
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
            admin_tally: Vec::new(),
            standalone: true,
            events: Vec::new(),
            why: String::new(),
            mesh: None,
            srqs: BTreeMap::new(),
            qp_count: limits.qps.max(2),
            result: [0; 2],
            ptes: PageTables::new(limits.ptes),
            p4: None,
            injector: None,
        }
    }

    /// Shows every send WQE whose local checks pass to `filter` first
    /// (see `rdmadev/p4send.rs`).
    pub fn set_send_filter(&mut self, filter: Box<dyn crate::p4hook::SendFilter>) {
        self.p4 = Some(p4send::P4Send::new(filter));
    }

    /// The send filter's counters (`None` without one).
    pub fn send_filter_stats(&self) -> Option<SendFilterStats> {
        self.p4.as_ref().map(|p| p.stats)
    }

    /// Arms `injector`'s faults on this device's RDMA events and its
    /// engine's.
    pub fn set_injector(&mut self, injector: std::sync::Arc<ernic_core::inject::Injector>) {
        self.engine.set_injector(Some(injector.clone()));
        self.injector = Some(injector);
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

    /// Admin commands run so far by `(opcode, status)`, ordered by opcode
    /// then status.
    pub fn admin_tally(&self) -> Vec<(u8, u32, u64)> {
        let mut v: Vec<_> = self
            .admin_tally
            .iter()
            .map(|&((o, s), n)| (o, s, n))
            .collect();
        v.sort_unstable();
        v
    }

    /// Counts one admin command of `op` that ended with `status`.
    fn tally(&mut self, op: u8, status: u32) {
        self.commands += 1;
        match self
            .admin_tally
            .iter_mut()
            .find(|(k, _)| *k == (op, status))
        {
            Some((_, n)) => *n += 1,
            None => self.admin_tally.push(((op, status), 1)),
        }
    }

    /// The device's core counters.
    pub fn device_counters(&self) -> Option<&ernic_core::Counters> {
        self.engine.device_counters(self.dev).ok()
    }

    /// QP `id`'s core counters, when it exists.
    pub fn qp_counters(&self, id: u32) -> Option<&ernic_core::Counters> {
        self.engine.qp_counters(self.dev, ernic_core::Qpn(id)).ok()
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
    use crate::fw::admin_op;
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
