//! One ionic function, brought up as the stock driver does (port and LIF
//! info, the Ethernet admin, TX and RX queues, the RDMA bootstrap's event,
//! completion and admin queues), then driven by a fuzzer-chosen sequence
//! of guest actions: BAR 0 writes and reads, device commands, config space
//! writes, Ethernet admin commands and descriptors placed in their rings
//! and rung, RDMA admin WQEs in the RDMA admin queue, raw doorbells, guest
//! memory writes, resets, timers, and guest memory unmapped and mapped
//! again under the device.
//!
//! The P4 engine's hooks are installed (scope `program`, no program), so
//! fuzzed device commands 70-72 reach its command decoder, and every frame
//! and send WQE its filters.
//!
//! Invariant after every action: the device still answers (BAR 0's
//! signature reads back).

use arbitrary::Arbitrary;
use ernic_ionic::bar0::Identity;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::regs::{BAR0_SIZE, opcode, q_init};
use ernic_vfio::dma::Dma;
use ernic_vfio::pci;
use ernic_vfio::proto::{DMA_READ, DMA_WRITE};
use ernic_vfio::server::{Device, Io, Irqs};
use std::os::fd::OwnedFd;

use crate::{Bytes, Enc, put};

/// Guest memory: 256 KiB at this DMA address.
pub const G: u64 = 0x10_0000;
/// Bytes of guest memory.
pub const RAM: u64 = 1 << 18;
// Rings in guest memory (offsets from G): Ethernet admin (8 x 64) and its
// CQ (8 x 16), TX and RX (8 x 16 each, with CQs and SG rings), then the
// RDMA bootstrap's EQ (256 x 4), admin CQ (32 x 32) and admin queue
// (32 x 64). Everything from FREE up is the guest's to use.
const EAQ: u64 = 0x1000;
const TXQ: u64 = 0x2000;
const RXQ: u64 = 0x3000;
const EQ: u64 = 0x4000;
const ACQ: u64 = 0x5000;
const AQ: u64 = 0x6000;
/// Where guest buffers start.
pub const FREE: u64 = 0x8000;
const ETH_DEPTH: u16 = 8;
const AQ_DEPTH: u16 = 32;

/// A guest action.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// Bytes written into BAR 0 (the offset is kept inside it).
    Bar0 { offset: u16, data: Bytes<64> },
    /// A read of BAR 0.
    Bar0Read { offset: u16, len: u8 },
    /// A device command: the command registers, then the doorbell.
    DevCmd([u8; 64]),
    /// Bytes written into config space.
    Config { offset: u16, data: Bytes<8> },
    /// An Ethernet admin command in the next admin queue slot, rung.
    EthAdmin([u8; 64]),
    /// A TX (`rx` false) or RX descriptor in its ring's next slot, rung.
    EthDesc { rx: bool, desc: [u8; 16] },
    /// An RDMA admin WQE (header and command, up to four strides) in the
    /// RDMA admin queue, rung.
    RdmaAdmin { op: u8, cmd: Bytes<252> },
    /// A doorbell write anywhere in BAR 2.
    Bell { offset: u32, value: u64 },
    /// Bytes into guest memory (rings included).
    Mem { at: u32, data: Bytes<64> },
    /// A vfio-user device reset.
    Reset,
    /// The device's timers.
    Tick,
    /// Guest memory unmapped (`DMA_UNMAP`) and, with `back`, mapped again.
    Unmap { back: bool },
}

impl Op {
    const VARIANTS: u32 = 12;

    /// Writes this action in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = Op::VARIANTS;
        match self {
            Op::Bar0 { offset, data } => e.variant(0, n).u16(*offset).bytes(&data.0, 64),
            Op::Bar0Read { offset, len } => e.variant(1, n).u16(*offset).u8(*len),
            Op::DevCmd(c) => e.variant(2, n).array(c),
            Op::Config { offset, data } => e.variant(3, n).u16(*offset).bytes(&data.0, 8),
            Op::EthAdmin(c) => e.variant(4, n).array(c),
            Op::EthDesc { rx, desc } => e.variant(5, n).bool(*rx).array(desc),
            Op::RdmaAdmin { op, cmd } => e.variant(6, n).u8(*op).bytes(&cmd.0, 252),
            Op::Bell { offset, value } => e.variant(7, n).u32(*offset).u64(*value),
            Op::Mem { at, data } => e.variant(8, n).u32(*at).bytes(&data.0, 64),
            Op::Reset => e.variant(9, n),
            Op::Tick => e.variant(10, n),
            Op::Unmap { back } => e.variant(11, n).bool(*back),
        };
    }
}

/// Most actions one input runs.
const MAX_OPS: usize = 256;

struct Guest {
    f: IonicFunction,
    dma: Dma,
    irqs: Irqs,
    ram: OwnedFd,
    eaq: u16,
    tx: u16,
    rx: u16,
    aq: u16,
}

fn cmd(op: u8) -> [u8; 64] {
    let mut c = [0u8; 64];
    c[0] = op;
    c
}

impl Guest {
    fn new() -> Guest {
        let engine = ernic_p4::device::Engine::new(None);
        let f = IonicFunction::new(Identity::default())
            .with_frame_filter(Box::new(engine.clone()))
            .with_send_filter(Box::new(engine.clone()))
            .with_p4_control(Box::new(engine), ernic_ionic::p4hook::GuestScope::Program);
        let mut dma = Dma::new(4);
        let ram = ernic_vfio::client::shared_memory(c"ernic-fuzz-guest", RAM).expect("memfd");
        dma.map(
            G,
            RAM,
            0,
            DMA_READ | DMA_WRITE,
            Some(ram.try_clone().expect("dup")),
        )
        .expect("map guest memory");
        let irqs = Irqs::new(&f.irqs());
        let mut g = Guest {
            f,
            dma,
            irqs,
            ram,
            eaq: 0,
            tx: 0,
            rx: 0,
            aq: 0,
        };
        g.bring_up();
        g
    }

    fn io(&mut self) -> (&mut IonicFunction, Io<'_>) {
        (
            &mut self.f,
            Io {
                dma: &mut self.dma,
                irqs: &mut self.irqs,
            },
        )
    }

    fn dev_cmd(&mut self, c: &[u8; 64]) {
        let (f, mut io) = self.io();
        let _ = f.write(&mut io, pci::region::BAR0, 0x808, c);
        let _ = f.write(&mut io, pci::region::BAR0, 0x800, &[1, 0, 0, 0]);
    }

    fn bell(&mut self, qtype: u8, qid: u32, ring: u8, index: u16) {
        let v = u64::from(qid) << 24 | u64::from(ring) << 16 | u64::from(index);
        let (f, mut io) = self.io();
        let _ = f.write(
            &mut io,
            pci::region::BAR2,
            u64::from(qtype) * 8,
            &v.to_le_bytes(),
        );
    }

    /// The driver's bring-up (what `ionic` and `ionic_rdma` send first).
    fn bring_up(&mut self) {
        for c in bring_up_commands() {
            self.dev_cmd(&c);
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Bar0 { offset, data } => {
                let o = u64::from(offset).min(BAR0_SIZE - data.0.len() as u64);
                let (f, mut io) = self.io();
                let _ = f.write(&mut io, pci::region::BAR0, o, &data.0);
            }
            Op::Bar0Read { offset, len } => {
                let mut b = [0u8; 255];
                let n = usize::from(len);
                let o = u64::from(offset).min(BAR0_SIZE - n as u64);
                let (f, mut io) = self.io();
                let _ = f.read(&mut io, pci::region::BAR0, o, &mut b[..n]);
            }
            Op::DevCmd(c) => self.dev_cmd(&c),
            Op::Config { offset, data } => {
                let o = u64::from(offset) % (pci::CONFIG_SIZE as u64 - data.0.len() as u64);
                let (f, mut io) = self.io();
                let _ = f.write(&mut io, pci::region::CONFIG, o, &data.0);
            }
            Op::EthAdmin(c) => {
                let at = G + EAQ + 64 * u64::from(self.eaq % ETH_DEPTH);
                let _ = self.dma.write(at, &c);
                self.eaq = self.eaq.wrapping_add(1);
                self.bell(0, 0, 0, self.eaq);
            }
            Op::EthDesc { rx, desc } => {
                let (base, prod, qtype) = if rx {
                    (RXQ, &mut self.rx, 2)
                } else {
                    (TXQ, &mut self.tx, 3)
                };
                let at = G + base + 16 * u64::from(*prod % ETH_DEPTH);
                *prod = prod.wrapping_add(1);
                let index = *prod;
                let _ = self.dma.write(at, &desc);
                self.bell(qtype, 0, 0, index);
            }
            Op::RdmaAdmin { op, cmd } => {
                let mut w = Vec::with_capacity(256);
                w.extend_from_slice(&[op, 0]);
                w.extend_from_slice(&(cmd.0.len() as u16).to_le_bytes());
                w.extend_from_slice(&cmd.0);
                for chunk in w.chunks(64) {
                    let at = G + AQ + 64 * u64::from(self.aq % AQ_DEPTH);
                    let mut slot = [0u8; 64];
                    slot[..chunk.len()].copy_from_slice(chunk);
                    let _ = self.dma.write(at, &slot);
                    self.aq = self.aq.wrapping_add(1);
                }
                self.bell(5, 0, 0, self.aq);
            }
            Op::Bell { offset, value } => {
                let o = u64::from(offset & !7) % ernic_ionic::doorbell::BAR2_SIZE;
                let (f, mut io) = self.io();
                let _ = f.write(&mut io, pci::region::BAR2, o, &value.to_le_bytes());
            }
            Op::Mem { at, data } => {
                let at = u64::from(at) % (RAM - data.0.len() as u64);
                let _ = self.dma.write(G + at, &data.0);
            }
            Op::Reset => {
                let (f, mut io) = self.io();
                f.reset(&mut io);
            }
            Op::Tick => {
                let (f, mut io) = self.io();
                f.tick(&mut io);
            }
            Op::Unmap { back } => {
                let _ = self.dma.unmap(G, RAM);
                if back {
                    let fd = self.ram.try_clone().expect("dup");
                    let _ = self.dma.map(G, RAM, 0, DMA_READ | DMA_WRITE, Some(fd));
                }
            }
        }
    }

    fn alive(&mut self) {
        let mut sig = [0u8; 4];
        let (f, mut io) = self.io();
        f.read(&mut io, pci::region::BAR0, 0, &mut sig)
            .expect("BAR 0 reads");
        assert_eq!(
            sig,
            [0x49, 0x56, 0x45, 0x44],
            "the device stopped answering"
        );
    }
}

/// The device commands of the driver's bring-up: PORT_INIT, LIF_INIT,
/// Q_INIT of the Ethernet admin, TX and RX queues (8 deep, enabled, with
/// interrupts), and the RDMA bootstrap: an EQ on vector 1, an admin CQ on
/// it, an admin queue on that.
pub fn bring_up_commands() -> Vec<[u8; 64]> {
    let mut out = Vec::new();
    for (op, pa) in [(opcode::PORT_INIT, 0x7000u64), (opcode::LIF_INIT, 0x7800)] {
        let mut c = cmd(op);
        put(&mut c, 8, &(G + pa).to_le_bytes());
        out.push(c);
    }
    for (t, base) in [(0u8, EAQ), (3, TXQ), (2, RXQ)] {
        let mut c = cmd(opcode::Q_INIT);
        c[q_init::TYPE] = t;
        c[q_init::FLAGS] = (q_init::F_IRQ | q_init::F_ENA) as u8;
        c[q_init::INTR_INDEX] = t;
        c[q_init::RING_SIZE] = 3;
        put(&mut c, q_init::RING_BASE, &(G + base).to_le_bytes());
        put(
            &mut c,
            q_init::CQ_RING_BASE,
            &(G + base + 0x800).to_le_bytes(),
        );
        put(
            &mut c,
            q_init::SG_RING_BASE,
            &(G + base + 0xc00).to_le_bytes(),
        );
        out.push(c);
    }
    out.extend(rdma_bootstrap(G + EQ, G + ACQ, G + AQ));
    out
}

/// Commands 51-53 as `ionic_rdma` sends them: EQ 0 on vector 1 (256 x 4
/// bytes at `eq`), admin CQ 0 on EQ 0 (32 x 32 at `acq`), admin queue 0 on
/// CQ 0 (32 x 64 at `aq`).
pub fn rdma_bootstrap(eq: u64, acq: u64, aq: u64) -> Vec<[u8; 64]> {
    [
        (51u8, 1u32, 8u8, 2u8, eq),
        (52, 0, 5, 5, acq),
        (53, 0, 5, 6, aq),
    ]
    .into_iter()
    .map(|(op, cid, depth, stride, at)| {
        let mut c = cmd(op);
        put(&mut c, 8, &cid.to_le_bytes());
        c[14] = depth;
        c[15] = stride;
        put(&mut c, 16, &at.to_le_bytes());
        c
    })
    .collect()
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let mut g = Guest::new();
    for op in ops {
        g.apply(op);
        g.alive();
    }
}

/// Seeds: real driver traffic after the bring-up.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    use ernic_ionic::regs::qtype;
    let mut out = Vec::new();
    // The identify sequence (IDENTIFY v1, LIF_IDENTIFY, PORT_IDENTIFY).
    let mut id = cmd(opcode::IDENTIFY);
    id[1] = 1;
    let mut lif = cmd(opcode::LIF_IDENTIFY);
    lif[2] = 1;
    out.push((
        "identify",
        vec![
            Op::DevCmd(id),
            Op::DevCmd(lif),
            Op::DevCmd(cmd(opcode::PORT_IDENTIFY)),
        ],
    ));
    // A notify queue and a MAC set over the Ethernet admin queue, then
    // Q_CONTROL enabling RX queue 0.
    let mut nq = cmd(opcode::Q_INIT);
    nq[q_init::TYPE] = qtype::NOTIFYQ;
    nq[q_init::FLAGS] = q_init::F_ENA as u8;
    nq[q_init::RING_SIZE] = 3;
    put(&mut nq, q_init::RING_BASE, &(G + 0x7c00).to_le_bytes());
    let mut mac = cmd(opcode::LIF_SETATTR);
    mac[1] = 3;
    put(&mut mac, 4, &[0x02, 1, 2, 3, 4, 5]);
    let mut qc = cmd(opcode::Q_CONTROL);
    qc[1] = qtype::RXQ;
    qc[8] = 1;
    out.push((
        "eth-admin",
        vec![Op::EthAdmin(nq), Op::EthAdmin(mac), Op::EthAdmin(qc)],
    ));
    // A TX descriptor of one 60-byte frame at FREE, and an RX buffer.
    let mut tx = [0u8; 16];
    put(&mut tx, 0, &((G + FREE) | 1 << 48).to_le_bytes());
    put(&mut tx, 10, &60u16.to_le_bytes());
    let mut rx = [0u8; 16];
    put(&mut rx, 0, &(G + FREE + 0x1000).to_le_bytes());
    put(&mut rx, 10, &2048u16.to_le_bytes());
    out.push((
        "eth-tx-rx",
        vec![
            Op::Mem {
                at: FREE as u32,
                data: Bytes(vec![0xff; 60]),
            },
            Op::EthDesc {
                rx: false,
                desc: tx,
            },
            Op::EthDesc { rx: true, desc: rx },
        ],
    ));
    // RDMA objects through the admin queue: a CQ, an RC QP, an MR.
    out.push((
        "rdma-objects",
        crate::ionic_rdma::object_commands(G + FREE)
            .into_iter()
            .map(|(op, c)| Op::RdmaAdmin { op, cmd: Bytes(c) })
            .collect(),
    ));
    // Interrupt control: mask, unmask with credits; a reset; a raw bell.
    let v1 = 0x2000 + 32;
    out.push((
        "intr-reset",
        vec![
            Op::Bar0 {
                offset: v1 + 4,
                data: Bytes(1u32.to_le_bytes().to_vec()),
            },
            Op::Bar0 {
                offset: v1 + 8,
                data: Bytes(0x0100_0001u32.to_le_bytes().to_vec()),
            },
            Op::Bar0Read { offset: 8, len: 4 },
            Op::Reset,
            Op::Bell {
                offset: 8 * 5,
                value: 1,
            },
            Op::Tick,
            Op::Unmap { back: true },
        ],
    ));
    out
}
