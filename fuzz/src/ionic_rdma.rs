//! The RDMA half of one ionic function (`ernic_ionic::rdmadev`), after the
//! bootstrap and with a CQ, two RC QPs connected to each other and an MR
//! already made through the admin queue, driven by a fuzzer-chosen
//! sequence: admin WQEs of any opcode and length in the admin queue, SQ
//! and RQ WQEs in the QPs' rings with their doorbells, CQ doorbells, raw
//! doorbells of any RDMA type and queue, guest memory writes (rings, page
//! tables, header templates), timers, and guest memory unmapped and mapped
//! again.
//!
//! Invariant: while the admin queue has only seen whole WQEs written by
//! the harness and rung in order (no unmap, no stray doorbell or write into
//! its ring), each admin action runs exactly one command; after that, the
//! command count never goes back.

use arbitrary::Arbitrary;
use ernic_ionic::bootstrap::{Bootstrap, Limits};
use ernic_ionic::fw::{admin_op, create_cq, create_mr, create_qp, mod_qp, op, wqe};
use ernic_ionic::rdmadev::{RdmaDev, RdmaLimits};
use ernic_vfio::dma::Dma;
use ernic_vfio::proto::{DMA_READ, DMA_WRITE};
use std::os::fd::OwnedFd;
use std::time::Duration;

use crate::{Bytes, Enc, put};

/// Guest memory at this DMA address.
pub const G: u64 = 0x10_0000;
/// Bytes of guest memory.
pub const RAM: u64 = 1 << 18;
const EQ: u64 = 0x1000;
const ACQ: u64 = 0x2000;
const AQ: u64 = 0x3000;
/// Where the objects' rings and buffers start (see [`object_commands`]).
pub const OBJECTS: u64 = 0x8000;
const AQ_DEPTH: u16 = 32;
/// WQEs in each QP ring.
const QP_DEPTH: u16 = 16;

// Offsets from the objects' base.
const CQ: u64 = 0x0000;
const SQ5: u64 = 0x1000;
const RQ5: u64 = 0x1400;
const SQ6: u64 = 0x1800;
const RQ6: u64 = 0x1c00;
const TEMPLATE: u64 = 0x3000;
/// The MR: 16 KiB from here, key [`MR`].
pub const BUF: u64 = 0x4000;
const BUF_LEN: u64 = 0x4000;
/// The MR's key: slot 0x20, variant 0 (a key's low byte is its variant
/// and slot 0 is reserved, so an id below 0x100 names no MR).
pub const MR: u32 = 0x2000;
/// The QPs.
pub const QPS: [u32; 2] = [5, 6];

/// A guest action on the RDMA side.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// An admin WQE: opcode and command (up to four strides), rung.
    Admin { op: u8, cmd: Bytes<252> },
    /// A send WQE into QP 5's (`qp6` false) or QP 6's SQ, rung with the
    /// next index, or with `index` when given.
    Sq {
        qp6: bool,
        wqe: [u8; 64],
        index: Option<u16>,
    },
    /// A receive WQE into a QP's RQ, rung likewise.
    Rq {
        qp6: bool,
        wqe: [u8; 64],
        index: Option<u16>,
    },
    /// A CQ doorbell: consumer index (ring 0) or arm (1, 2).
    Cq { cq: u8, ring: u8, index: u16 },
    /// A doorbell for any RDMA queue type (5 admin, 6 SQ, 7 RQ, 8 CQ).
    Bell { qtype: u8, qid: u32, index: u16 },
    /// Bytes into guest memory.
    Mem { at: u32, data: Bytes<64> },
    /// The device's timers.
    Tick,
    /// Guest memory unmapped, and with `back` mapped again.
    Unmap { back: bool },
}

impl Op {
    const VARIANTS: u32 = 8;

    /// Writes this action in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = Op::VARIANTS;
        let opt = |e: &mut Enc, i: &Option<u16>| {
            match i {
                None => e.bool(false),
                Some(v) => e.bool(true).u16(*v),
            };
        };
        match self {
            Op::Admin { op, cmd } => {
                e.variant(0, n).u8(*op).bytes(&cmd.0, 252);
            }
            Op::Sq { qp6, wqe, index } => {
                e.variant(1, n).bool(*qp6).array(wqe);
                opt(e, index);
            }
            Op::Rq { qp6, wqe, index } => {
                e.variant(2, n).bool(*qp6).array(wqe);
                opt(e, index);
            }
            Op::Cq { cq, ring, index } => {
                e.variant(3, n).u8(*cq).u8(*ring).u16(*index);
            }
            Op::Bell { qtype, qid, index } => {
                e.variant(4, n).u8(*qtype).u32(*qid).u16(*index);
            }
            Op::Mem { at, data } => {
                e.variant(5, n).u32(*at).bytes(&data.0, 64);
            }
            Op::Tick => {
                e.variant(6, n);
            }
            Op::Unmap { back } => {
                e.variant(7, n).bool(*back);
            }
        }
    }
}

const MAX_OPS: usize = 256;

/// The admin commands that make the objects at `base` (a guest address
/// with 32 KiB of room): CQ 1 (16 x 32 bytes) on EQ 0; RC QPs 5 and 6
/// (16 x 64-byte SQ and RQ each) on it; MR [`MR`] over 16 KiB with every
/// right; each QP to INIT, to RTR with the other as its peer (the
/// destination in an IPv4 header template), and to RTS.
pub fn object_commands(base: u64) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut cq = vec![0u8; create_cq::LEN];
    cq[create_cq::DEPTH_LOG2] = 4;
    cq[create_cq::STRIDE_LOG2] = 5;
    put(&mut cq, create_cq::ID_VER, &1u32.to_le_bytes());
    put(&mut cq, create_cq::MAP_COUNT, &1u32.to_le_bytes());
    put(&mut cq, create_cq::DMA_ADDR, &(base + CQ).to_le_bytes());
    out.push((admin_op::CREATE_CQ, cq));
    for (id, sq, rq) in [(5u32, SQ5, RQ5), (6, SQ6, RQ6)] {
        let mut q = vec![0u8; create_qp::LEN];
        put(&mut q, create_qp::SQ_CQ_ID, &1u32.to_le_bytes());
        q[create_qp::SQ_DEPTH_LOG2] = 4;
        q[create_qp::SQ_STRIDE_LOG2] = 6;
        put(&mut q, create_qp::SQ_MAP_COUNT, &1u32.to_le_bytes());
        put(&mut q, create_qp::SQ_DMA_ADDR, &(base + sq).to_le_bytes());
        put(&mut q, create_qp::RQ_CQ_ID, &1u32.to_le_bytes());
        q[create_qp::RQ_DEPTH_LOG2] = 4;
        q[create_qp::RQ_STRIDE_LOG2] = 6;
        put(&mut q, create_qp::RQ_MAP_COUNT, &1u32.to_le_bytes());
        put(&mut q, create_qp::RQ_DMA_ADDR, &(base + rq).to_le_bytes());
        put(&mut q, create_qp::ID_VER, &id.to_le_bytes());
        out.push((admin_op::CREATE_QP, q));
    }
    let mut mr = vec![0u8; create_mr::LEN];
    put(&mut mr, create_mr::VA, &(base + BUF).to_le_bytes());
    put(&mut mr, create_mr::LENGTH, &BUF_LEN.to_le_bytes());
    put(&mut mr, create_mr::ID_VER, &MR.to_le_bytes());
    put(&mut mr, create_mr::MAP_COUNT, &1u32.to_le_bytes());
    put(&mut mr, create_mr::DMA_ADDR, &(base + BUF).to_le_bytes());
    put(&mut mr, create_mr::DBID_FLAGS, &0xfu16.to_le_bytes());
    mr[create_mr::PAGE_SIZE_LOG2] = 12;
    out.push((admin_op::CREATE_MR, mr));
    for (id, peer) in [(5u32, 6u32), (6, 5)] {
        for (state, mask) in [
            (
                1u8,
                ernic_ionic::fw::attr::STATE | ernic_ionic::fw::attr::ACCESS_FLAGS,
            ),
            (
                2,
                ernic_ionic::fw::attr::STATE
                    | ernic_ionic::fw::attr::AV
                    | ernic_ionic::fw::attr::DEST_QPN
                    | ernic_ionic::fw::attr::PATH_MTU,
            ),
            (3, ernic_ionic::fw::attr::STATE),
        ] {
            let mut m = vec![0u8; mod_qp::LEN];
            put(&mut m, mod_qp::ATTR_MASK_BE, &mask.to_be_bytes());
            put(&mut m, mod_qp::ACCESS_FLAGS_BE, &0xfu16.to_be_bytes());
            put(&mut m, mod_qp::QKEY_DEST_QPN, &peer.to_le_bytes());
            m[mod_qp::PMTU] = 3;
            put(&mut m, mod_qp::AH_ID_LEN, &34u32.to_le_bytes());
            m[mod_qp::TYPE_STATE] = state;
            put(&mut m, mod_qp::DMA_ADDR, &(base + TEMPLATE).to_le_bytes());
            put(&mut m, mod_qp::ID_VER, &id.to_le_bytes());
            out.push((admin_op::MODIFY_QP, m));
        }
    }
    out
}

/// An Ethernet + IPv4 header template from 10.0.0.1 to 10.0.0.1 (both
/// QPs are in this guest).
pub fn template() -> [u8; 34] {
    let mut h = [0u8; 34];
    put(&mut h, 12, &0x0800u16.to_be_bytes());
    h[14] = 0x45;
    h[23] = 17;
    put(&mut h, 26, &[10, 0, 0, 1]);
    put(&mut h, 30, &[10, 0, 0, 1]);
    h
}

/// A send WQE: `opcode`, signaled, one SGE of `len` bytes at `addr` in the
/// MR, remote address `raddr` under the MR's key.
pub fn send_wqe(id: u64, opcode: u8, addr: u64, len: u32, raddr: u64) -> [u8; 64] {
    let mut w = [0u8; 64];
    put(&mut w, wqe::WQE_ID, &id.to_le_bytes());
    w[wqe::OP] = opcode;
    w[wqe::NUM_SGE_KEY] = 1;
    put(&mut w, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
    put(&mut w, wqe::IMM_DATA_KEY_BE, &0x1234u32.to_be_bytes());
    put(
        &mut w,
        wqe::REMOTE_VA_HIGH_BE,
        &((raddr >> 32) as u32).to_be_bytes(),
    );
    put(&mut w, wqe::REMOTE_VA_LOW_BE, &(raddr as u32).to_be_bytes());
    put(&mut w, wqe::REMOTE_RKEY_BE, &MR.to_be_bytes());
    put(&mut w, wqe::LENGTH_BE, &len.to_be_bytes());
    sge(&mut w, wqe::PLD, addr, len);
    w
}

/// A receive WQE with one SGE.
pub fn recv_wqe(id: u64, addr: u64, len: u32) -> [u8; 64] {
    let mut w = [0u8; 64];
    put(&mut w, wqe::WQE_ID, &id.to_le_bytes());
    w[wqe::NUM_SGE_KEY] = 1;
    sge(&mut w, wqe::PLD, addr, len);
    w
}

fn sge(w: &mut [u8], at: usize, addr: u64, len: u32) {
    put(w, at, &addr.to_be_bytes());
    put(w, at + 8, &len.to_be_bytes());
    put(w, at + 12, &MR.to_be_bytes());
}

struct Rdma {
    d: RdmaDev,
    boot: Bootstrap,
    dma: Dma,
    ram: OwnedFd,
    fire: Vec<u16>,
    aq: u16,
    /// Whether the admin queue is still in step (see the module doc).
    aq_in_step: bool,
    sq: [u16; 2],
    rq: [u16; 2],
}

impl Rdma {
    fn new() -> Rdma {
        let mut dma = Dma::new(4);
        let ram = ernic_vfio::client::shared_memory(c"ernic-fuzz-rdma", RAM).expect("memfd");
        dma.map(
            G,
            RAM,
            0,
            DMA_READ | DMA_WRITE,
            Some(ram.try_clone().expect("dup")),
        )
        .expect("map guest memory");
        let mut boot = Bootstrap::default();
        let limits = Limits {
            vectors: 32,
            eqs: 4,
            cqs: 64,
            aqs: 1,
        };
        for c in crate::ionic_device::rdma_bootstrap(G + EQ, G + ACQ, G + AQ) {
            assert_eq!(boot.run(&c, limits), 0, "bootstrap");
        }
        let id = ernic_ionic::bar0::Identity::default();
        let d = RdmaDev::new(
            RdmaLimits {
                qps: 64,
                cqs: 64,
                mrs: 256,
                ahs: 64,
                // The profile's defaults: limits a guest reaches.
                ptes: id.rdma_ptes,
                queue_bytes: u64::from(id.rdma_queue_mib) << 20,
                rnr_timeout: Duration::from_millis(20),
                request_timeout: Duration::from_millis(20),
            },
            Vec::new(),
        );
        let mut r = Rdma {
            d,
            boot,
            dma,
            ram,
            fire: Vec::new(),
            aq: 0,
            aq_in_step: true,
            sq: [0; 2],
            rq: [0; 2],
        };
        let _ = r.dma.write(G + OBJECTS + TEMPLATE, &template());
        for (op, c) in object_commands(G + OBJECTS) {
            r.admin(op, &c);
        }
        // The objects are there (the seeds' WQEs name them).
        assert!(QPS.iter().all(|&q| r.d.qp_rings(q) == Some((true, true))));
        assert!(
            r.d.engine().mr(ernic_core::DeviceId(0), MR).is_ok(),
            "the MR is there"
        );
        r
    }

    fn admin(&mut self, op: u8, cmd: &[u8]) {
        let mut w = Vec::with_capacity(4 + cmd.len());
        w.extend_from_slice(&[op, 0]);
        w.extend_from_slice(&(cmd.len() as u16).to_le_bytes());
        w.extend_from_slice(cmd);
        for chunk in w.chunks(64) {
            let mut slot = [0u8; 64];
            slot[..chunk.len()].copy_from_slice(chunk);
            let at = G + AQ + 64 * u64::from(self.aq % AQ_DEPTH);
            let _ = self.dma.write(at, &slot);
            self.aq = self.aq.wrapping_add(1);
        }
        self.d
            .aq_doorbell(&self.boot, &mut self.dma, 0, self.aq, &mut self.fire);
    }

    /// A WQE into the next slot of a QP's SQ (`send`) or RQ, rung.
    fn wqe(&mut self, send: bool, qp6: bool, wqe: &[u8; 64], index: Option<u16>) {
        let i = usize::from(qp6);
        let (base, prod) = if send {
            ([SQ5, SQ6][i], &mut self.sq[i])
        } else {
            ([RQ5, RQ6][i], &mut self.rq[i])
        };
        let at = G + OBJECTS + base + 64 * u64::from(*prod % QP_DEPTH);
        *prod = prod.wrapping_add(1);
        let p = index.unwrap_or(*prod);
        let _ = self.dma.write(at, wqe);
        let (b, m, f) = (&self.boot, &mut self.dma, &mut self.fire);
        if send {
            self.d.sq_doorbell(b, m, QPS[i], p, f);
        } else {
            self.d.rq_doorbell(b, m, QPS[i], p, f);
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Admin { op, cmd } => {
                let before = self.d.commands();
                self.admin(op, &cmd.0);
                if self.aq_in_step {
                    assert_eq!(self.d.commands(), before + 1, "one admin WQE, one command");
                } else {
                    assert!(self.d.commands() >= before);
                }
            }
            Op::Sq { qp6, wqe, index } => self.wqe(true, qp6, &wqe, index),
            Op::Rq { qp6, wqe, index } => self.wqe(false, qp6, &wqe, index),
            Op::Cq { cq, ring, index } => {
                self.d.cq_doorbell(
                    &self.boot,
                    &mut self.dma,
                    u32::from(cq),
                    ring,
                    index,
                    &mut self.fire,
                );
            }
            Op::Bell { qtype, qid, index } => {
                let qid = qid & 0xff_ffff;
                self.aq_in_step &= qtype % 5 != 0;
                let (b, m, f) = (&self.boot, &mut self.dma, &mut self.fire);
                match qtype % 5 {
                    0 => self.d.aq_doorbell(b, m, qid, index, f),
                    1 => self.d.sq_doorbell(b, m, qid, index, f),
                    2 => self.d.rq_doorbell(b, m, qid, index, f),
                    3 => self.d.cq_doorbell(b, m, qid, 1, index, f),
                    _ => self.d.cq_doorbell(b, m, qid, 0, index, f),
                }
            }
            Op::Mem { at, data } => {
                let at = u64::from(at) % (RAM - data.0.len() as u64);
                let ring = AQ..AQ + 64 * u64::from(AQ_DEPTH);
                self.aq_in_step &= at + data.0.len() as u64 <= ring.start || at >= ring.end;
                let _ = self.dma.write(G + at, &data.0);
            }
            Op::Tick => self.d.tick(&self.boot, &mut self.dma, &mut self.fire),
            Op::Unmap { back } => {
                self.aq_in_step = false;
                let _ = self.dma.unmap(G, RAM);
                if back {
                    let fd = self.ram.try_clone().expect("dup");
                    let _ = self.dma.map(G, RAM, 0, DMA_READ | DMA_WRITE, Some(fd));
                }
            }
        }
        // Vectors raised are the function's to signal; they do not pile up.
        self.fire.clear();
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let mut r = Rdma::new();
    for op in ops {
        r.apply(op);
    }
}

/// Seeds: the data path between the two QPs, and the admin commands a
/// driver sends after its objects.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    let b = G + OBJECTS + BUF;
    let mut out = Vec::new();
    out.push((
        "send-recv",
        vec![
            Op::Rq {
                qp6: true,
                wqe: recv_wqe(1, b + 0x1000, 256),
                index: None,
            },
            Op::Mem {
                at: (OBJECTS + BUF) as u32,
                data: Bytes(b"hello, fuzz".to_vec()),
            },
            Op::Sq {
                qp6: false,
                wqe: send_wqe(2, op::SEND, b, 11, 0),
                index: None,
            },
            Op::Cq {
                cq: 1,
                ring: 1,
                index: 0,
            },
        ],
    ));
    out.push((
        "write-read",
        vec![
            Op::Sq {
                qp6: false,
                wqe: send_wqe(3, op::RDMA_WRITE, b, 64, b + 0x2000),
                index: None,
            },
            Op::Sq {
                qp6: true,
                wqe: send_wqe(4, op::RDMA_READ, b + 0x3000, 64, b + 0x2000),
                index: None,
            },
            Op::Tick,
        ],
    ));
    out.push((
        "write-imm-atomic",
        vec![
            Op::Rq {
                qp6: true,
                wqe: recv_wqe(5, b + 0x1000, 64),
                index: None,
            },
            Op::Sq {
                qp6: false,
                wqe: send_wqe(6, op::RDMA_WRITE_IMM, b, 32, b + 0x2000),
                index: None,
            },
            Op::Sq {
                qp6: false,
                wqe: send_wqe(7, op::ATOMIC_FA, b + 0x100, 8, b + 0x2008),
                index: None,
            },
        ],
    ));
    // A query, stats into guest memory, an MR destroyed, a QP destroyed.
    let mut query = vec![0u8; ernic_ionic::fw::query_qp::LEN];
    put(&mut query, 8, &(b + 0x3800).to_le_bytes());
    put(&mut query, 16, &(b + 0x3900).to_le_bytes());
    put(&mut query, 28, &5u32.to_le_bytes());
    let mut stats = vec![0u8; ernic_ionic::fw::stats_hdr::LEN];
    put(&mut stats, 0, &(b + 0x3000).to_le_bytes());
    put(&mut stats, 8, &1024u32.to_le_bytes());
    out.push((
        "admin-after",
        vec![
            Op::Admin {
                op: admin_op::QUERY_QP,
                cmd: Bytes(query),
            },
            Op::Admin {
                op: admin_op::STATS_HDRS,
                cmd: Bytes(stats.clone()),
            },
            Op::Admin {
                op: admin_op::STATS_VALS,
                cmd: Bytes(stats),
            },
            Op::Admin {
                op: admin_op::DESTROY_MR,
                cmd: Bytes(MR.to_le_bytes().to_vec()),
            },
            Op::Admin {
                op: admin_op::DESTROY_QP,
                cmd: Bytes(6u32.to_le_bytes().to_vec()),
            },
            Op::Unmap { back: true },
            Op::Sq {
                qp6: false,
                wqe: send_wqe(8, op::SEND, b, 8, 0),
                index: None,
            },
        ],
    ));
    // A fast-registration MR (UKEY_EN) of 4 pages and a REG_MR binding it
    // through a page table in guest memory.
    let mut fmr = vec![0u8; create_mr::LEN];
    put(&mut fmr, create_mr::ID_VER, &0x4000u32.to_le_bytes());
    put(&mut fmr, create_mr::MAP_COUNT, &4u32.to_le_bytes());
    put(
        &mut fmr,
        create_mr::DBID_FLAGS,
        &(0xfu16 | 1 << 13).to_le_bytes(),
    );
    fmr[create_mr::PAGE_SIZE_LOG2] = 12;
    let mut table = Vec::new();
    for p in 0..4u64 {
        table.extend_from_slice(&(b + (p << 12)).to_le_bytes());
    }
    let mut reg = [0u8; 64];
    put(&mut reg, wqe::WQE_ID, &9u64.to_le_bytes());
    reg[wqe::OP] = op::REG_MR;
    put(&mut reg, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
    put(&mut reg, wqe::IMM_DATA_KEY_BE, &0x4000u32.to_be_bytes());
    put(&mut reg, wqe::REG_VA_BE, &0x7000_0000u64.to_be_bytes());
    put(&mut reg, wqe::REG_LENGTH_BE, &0x4000u64.to_be_bytes());
    put(&mut reg, wqe::REG_DMA_ADDR_BE, &(b + 0x3c00).to_be_bytes());
    put(&mut reg, wqe::REG_MAP_COUNT_BE, &4u32.to_be_bytes());
    put(&mut reg, wqe::REG_FLAGS_BE, &0xfu16.to_be_bytes());
    reg[wqe::REG_PAGE_SIZE_LOG2] = 12;
    out.push((
        "fast-reg",
        vec![
            Op::Admin {
                op: admin_op::CREATE_MR,
                cmd: Bytes(fmr),
            },
            Op::Mem {
                at: (OBJECTS + BUF + 0x3c00) as u32,
                data: Bytes(table),
            },
            Op::Sq {
                qp6: false,
                wqe: reg,
                index: None,
            },
            Op::Bell {
                qtype: 3,
                qid: 1,
                index: 0,
            },
        ],
    ));
    // The finding: a fast-registration MR allowed 2^32-1 pages,
    // then a REG_MR naming 2^26 4 KiB pages through a table that runs off
    // guest memory. Before the bound (6a1a62e) each page read as address 0
    // and none merged: a run of 24 bytes per page, 1.5 GiB for the count,
    // past `-malloc_limit_mb=1024`. Now the CREATE_MR or the REG_MR is
    // refused at once.
    let pages: u64 = 1 << 26;
    let mut huge = vec![0u8; create_mr::LEN];
    put(&mut huge, create_mr::ID_VER, &0x6000u32.to_le_bytes());
    put(&mut huge, create_mr::MAP_COUNT, &u32::MAX.to_le_bytes());
    put(
        &mut huge,
        create_mr::DBID_FLAGS,
        &(0xfu16 | 1 << 13).to_le_bytes(),
    );
    huge[create_mr::PAGE_SIZE_LOG2] = 12;
    let mut reg = [0u8; 64];
    put(&mut reg, wqe::WQE_ID, &9u64.to_le_bytes());
    reg[wqe::OP] = op::REG_MR;
    put(&mut reg, wqe::FLAGS_BE, &wqe::FLAG_SIG.to_be_bytes());
    put(&mut reg, wqe::IMM_DATA_KEY_BE, &0x6000u32.to_be_bytes());
    put(&mut reg, wqe::REG_VA_BE, &0x7000_0000u64.to_be_bytes());
    put(&mut reg, wqe::REG_LENGTH_BE, &(pages << 12).to_be_bytes());
    put(
        &mut reg,
        wqe::REG_DMA_ADDR_BE,
        &(G + OBJECTS + SQ5).to_be_bytes(),
    );
    put(
        &mut reg,
        wqe::REG_MAP_COUNT_BE,
        &(pages as u32).to_be_bytes(),
    );
    put(&mut reg, wqe::REG_FLAGS_BE, &0xfu16.to_be_bytes());
    reg[wqe::REG_PAGE_SIZE_LOG2] = 12;
    out.push((
        "regress-fast-reg-millions-of-pages",
        vec![
            Op::Admin {
                op: admin_op::CREATE_MR,
                cmd: Bytes(huge),
            },
            Op::Sq {
                qp6: false,
                wqe: reg,
                index: None,
            },
        ],
    ));
    out
}
