//! A driver model over the real vfio-user socket: the Linux ionic
//! driver's bring-up sequence (signature, IDENTIFY, LIF_IDENTIFY,
//! PORT_INIT, LIF_INIT, the admin queue, then through it the TX and RX
//! queues), then Ethernet frames both ways through an in-process frame
//! sink (a datagram socket pair), with interrupts, a masked vector's latch
//! and completion colors across a ring wrap checked. Guest memory is a
//! memfd shared with DMA_MAP; interrupts are eventfds.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::time::{Duration, Instant};

use ernic_ionic::bar0::Identity;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::regs::{
    cmd, dev_identity, info, lif_info, opcode, port_info, q_init, qtype, status,
};
use ernic_ionic::tap::Wire;
use ernic_vfio::client::{Client, eventfd, shared_memory};
use ernic_vfio::pci::{irq, region};
use ernic_vfio::proto::{Capabilities, DMA_READ, DMA_WRITE};
use ernic_vfio::server::Server;

const G: u64 = 0x1_0000_0000;
const RAM: u64 = 1 << 20;
// Guest memory map.
const PORT_INFO: u64 = 0x1000;
const LIF_INFO: u64 = 0x2000;
const AQ: u64 = 0x10000; // ring, then completions at +0x1000
const TXQ: u64 = 0x20000; // ring, completions +0x1000, SG +0x2000
const RXQ: u64 = 0x30000;
const TX_BUF: u64 = 0x40000;
const RX_BUF: u64 = 0x50000; // 4 buffers of 2 KiB
const NQ: u64 = 0x60000; // notify queue events
const DEPTH_LOG2: u8 = 2; // 4-deep TX and RX rings

struct Guest {
    c: Client,
    ram: File,
    aq_head: u16,
}

impl Guest {
    fn mem_write(&self, at: u64, b: &[u8]) {
        self.ram.write_all_at(b, at).unwrap();
    }

    fn mem_read(&self, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.ram.read_exact_at(&mut b, at).unwrap();
        b
    }

    fn u64_at(&self, at: u64) -> u64 {
        u64::from_le_bytes(self.mem_read(at, 8).try_into().unwrap())
    }

    /// A device command through BAR 0: answers the completion.
    fn devcmd(&mut self, c: &[u8; 64]) -> [u8; 16] {
        let bar0 = region::BAR0;
        self.c
            .region_write(bar0, cmd::DONE as u64, &[0; 4])
            .unwrap();
        self.c.region_write(bar0, cmd::CMD as u64, c).unwrap();
        self.c
            .region_write(bar0, cmd::DOORBELL as u64, &[1, 0, 0, 0])
            .unwrap();
        let done = self.c.region_read(bar0, cmd::DONE as u64, 4).unwrap();
        assert_eq!(done[0] & 1, 1, "done");
        self.c
            .region_read(bar0, cmd::COMP as u64, 16)
            .unwrap()
            .try_into()
            .unwrap()
    }

    /// A doorbell of queue type `t`, queue 0, ring 0.
    fn ring(&mut self, t: u8, p_index: u16) {
        let v = u64::from(p_index);
        self.c
            .region_write(region::BAR2, u64::from(t) * 8, &v.to_le_bytes())
            .unwrap();
    }

    /// A doorbell of queue type `t`, queue `qid`, with `ring` and index.
    fn doorbell(&mut self, t: u8, qid: u32, ring: u8, index: u16) {
        let v = u64::from(qid) << 24 | u64::from(ring) << 16 | u64::from(index);
        self.c
            .region_write(region::BAR2, u64::from(t) * 8, &v.to_le_bytes())
            .unwrap();
    }

    /// An admin queue command: answers its completion (color checked; the
    /// queue is `bring_up`'s, 16 deep, and the color turns each pass).
    fn admin(&mut self, c: &[u8; 64]) -> [u8; 16] {
        const DEPTH: u16 = 16;
        let slot = u64::from(self.aq_head % DEPTH);
        let color = if self.aq_head / DEPTH % 2 == 0 {
            0x80
        } else {
            0
        };
        self.mem_write(AQ + 64 * slot, c);
        self.aq_head += 1;
        let p = self.aq_head % DEPTH;
        self.ring(qtype::ADMINQ, p);
        let comp: [u8; 16] = self
            .mem_read(AQ + 0x1000 + 16 * slot, 16)
            .try_into()
            .unwrap();
        assert_eq!(comp[15] & 0x80, color, "admin completion color");
        assert_eq!(u16::from_le_bytes([comp[2], comp[3]]), slot as u16);
        comp
    }
}

fn q_init(t: u8, ring: u64, intr: Option<u8>, depth_log2: u8) -> [u8; 64] {
    let mut c = [0u8; 64];
    c[0] = opcode::Q_INIT;
    c[q_init::TYPE] = t;
    let flags = q_init::F_ENA | if intr.is_some() { q_init::F_IRQ } else { 0 };
    c[q_init::FLAGS..q_init::FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
    c[q_init::INTR_INDEX] = intr.unwrap_or(0);
    c[q_init::RING_SIZE] = depth_log2;
    for (at, off) in [
        (q_init::RING_BASE, 0u64),
        (q_init::CQ_RING_BASE, 0x1000),
        (q_init::SG_RING_BASE, 0x2000),
    ] {
        c[at..at + 8].copy_from_slice(&(G + ring + off).to_le_bytes());
    }
    c
}

fn frame(n: u8, len: usize) -> Vec<u8> {
    let mut f = vec![n; len];
    f[..6].copy_from_slice(&[0x02, 0, 0x45, 0x52, 0x4e, 0x01]);
    f[6..12].copy_from_slice(&[0x02, 9, 9, 9, 9, n]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental ethertype
    f
}

/// Waits for an eventfd to be signalled (answers its count), or 0.
fn fired(ev: &mut File, within: Duration) -> u64 {
    let end = Instant::now() + within;
    loop {
        let mut v = [0u8; 8];
        if let Ok(8) = ev.read(&mut v) {
            return u64::from_le_bytes(v);
        }
        if Instant::now() >= end {
            return 0;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A server on a fresh socket with a frame sink, and a client attached
/// to it with guest memory mapped and two vectors wired.
struct Rig {
    dir: std::path::PathBuf,
    g: Guest,
    ev0: File,
    ev1: File,
    peer: UnixDatagram,
    server: std::thread::JoinHandle<bool>,
    /// The server thread's /proc entry (for its CPU time).
    server_task: std::path::PathBuf,
}

fn attach(name: &str, id: Identity) -> Rig {
    let dir = std::env::temp_dir().join(format!("ernic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let (wire, peer): (Wire, UnixDatagram) = Wire::socket_pair().unwrap();
    let (task_tx, task_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let _ = task_tx.send(std::fs::read_link("/proc/thread-self").unwrap());
        let f = IonicFunction::new(id)
            .with_wire(wire)
            .with_shared_doorbells()
            .unwrap();
        let mut s = Server::new(f, Capabilities::default());
        let (c, _) = listener.accept().unwrap();
        s.serve(&c).is_ok()
    });
    peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();

    let mut c = Client::connect(&path, Duration::from_secs(10)).unwrap();
    c.version(&Capabilities::default()).unwrap();
    let ram = shared_memory(c"guest-ram", RAM).unwrap();
    c.dma_map(G, RAM, 0, DMA_READ | DMA_WRITE, &ram).unwrap();
    let (ev0, ev1) = (eventfd().unwrap(), eventfd().unwrap());
    c.irq_eventfds(irq::MSIX, 0, &[&ev0, &ev1]).unwrap();
    Rig {
        dir,
        g: Guest {
            c,
            ram: File::from(ram),
            aq_head: 0,
        },
        ev0: File::from(ev0),
        ev1: File::from(ev1),
        peer,
        server,
        server_task: std::path::Path::new("/proc").join(task_rx.recv().unwrap()),
    }
}

impl Rig {
    fn finish(self) {
        drop(self.g);
        assert!(self.server.join().unwrap());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The Linux driver's bring-up: signature, IDENTIFY, LIF_IDENTIFY,
/// PORT_INIT, LIF_INIT, the admin queue, TX, RX and notify queues, RX
/// mode; then four RX buffers written (not yet posted).
fn bring_up(g: &mut Guest, ev0: &mut File, speed: u32) {
    // Signature and firmware status, as ionic_dev_setup reads them.
    let dev = g.c.region_read(region::BAR0, 0, 8).unwrap();
    assert_eq!(
        u32::from_le_bytes(dev[..4].try_into().unwrap()),
        info::SIGNATURE_VALUE
    );
    assert_eq!(dev[info::FW_STATUS], info::FW_RUNNING);

    // IDENTIFY, LIF_IDENTIFY, PORT_INIT, LIF_INIT.
    let mut c64 = [0u8; 64];
    c64[..2].copy_from_slice(&[opcode::IDENTIFY, 2]);
    assert_eq!(g.devcmd(&c64)[..2], [status::SUCCESS, 2]);
    c64[..3].copy_from_slice(&[opcode::LIF_IDENTIFY, 0, 1]);
    assert_eq!(g.devcmd(&c64)[0], status::SUCCESS);
    for (op, at) in [(opcode::PORT_INIT, PORT_INFO), (opcode::LIF_INIT, LIF_INFO)] {
        let mut c = [0u8; 64];
        c[0] = op;
        c[8..16].copy_from_slice(&(G + at).to_le_bytes());
        assert_eq!(g.devcmd(&c)[0], status::SUCCESS);
    }
    assert_eq!(
        g.mem_read(PORT_INFO + port_info::STATUS_STATUS as u64, 1)[0],
        port_info::OPER_UP
    );
    let link = g.mem_read(LIF_INFO + lif_info::STATUS_LINK_STATUS as u64, 2);
    assert_eq!(link, [1, 0], "LIF link up");

    // The admin queue (16 deep, vector 0) through BAR 0, then the TX and
    // RX queues through it; RX on vector 1, TX without its own interrupt.
    assert_eq!(
        g.devcmd(&q_init(qtype::ADMINQ, AQ, Some(0), 4))[0],
        status::SUCCESS
    );
    assert_eq!(
        g.admin(&q_init(qtype::TXQ, TXQ, None, DEPTH_LOG2))[0],
        status::SUCCESS
    );
    assert_eq!(
        g.admin(&q_init(qtype::RXQ, RXQ, Some(1), DEPTH_LOG2))[0],
        status::SUCCESS
    );
    // The notify queue: its first event is the link, as it is.
    assert_eq!(
        g.admin(&q_init(qtype::NOTIFYQ, NQ, Some(0), 4))[0],
        status::SUCCESS
    );
    let ev = g.mem_read(NQ, 16);
    assert_eq!(u64::from_le_bytes(ev[..8].try_into().unwrap()), 1, "eid");
    assert_eq!(&ev[8..12], &[1, 0, 1, 0], "LINK_CHANGE, link up");
    assert_eq!(u32::from_le_bytes(ev[12..16].try_into().unwrap()), speed);
    assert_eq!(g.u64_at(LIF_INFO + lif_info::STATUS_EID as u64), 1);
    let mut mode = [0u8; 64];
    mode[0] = opcode::RX_MODE_SET;
    assert_eq!(g.admin(&mode)[0], status::SUCCESS);
    assert!(
        fired(ev0, Duration::from_secs(2)) >= 1,
        "the admin queue's vector"
    );

    // Post the four RX buffers.
    for i in 0..4u64 {
        let mut d = [0u8; 16];
        d[6..8].copy_from_slice(&2048u16.to_le_bytes());
        d[8..16].copy_from_slice(&(G + RX_BUF + 2048 * i).to_le_bytes());
        g.mem_write(RXQ + 16 * i, &d);
    }
}

#[test]
fn bring_up_then_frames_both_ways_with_interrupts_masks_and_colors() {
    let mut rig = attach("driver-model", Identity::default());
    let Rig {
        g, ev0, ev1, peer, ..
    } = &mut rig;
    bring_up(g, ev0, 100_000);
    g.ring(qtype::RXQ, 3); // three posted (one slot kept free, as the driver does)

    // Transmit one frame: it comes out of the wire whole.
    let out = frame(1, 100);
    g.mem_write(TX_BUF, &out);
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&((G + TX_BUF) << 12).to_le_bytes()); // opcode 0, no SG
    d[8..10].copy_from_slice(&(out.len() as u16).to_le_bytes());
    g.mem_write(TXQ, &d);
    g.ring(qtype::TXQ, 1);
    let mut got = vec![0u8; 2048];
    let n = peer.recv(&mut got).unwrap();
    assert_eq!(&got[..n], &out[..]);
    assert_eq!(
        g.mem_read(TXQ + 0x1000, 16)[15] & 0x80,
        0x80,
        "TX completion color"
    );

    // Receive: a frame from the wire lands in buffer 0, with a completion
    // and vector 1.
    let recv_one = |g: &Guest, n: u8, slot: u64| -> Vec<u8> {
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            let comp = g.mem_read(RXQ + 0x1000 + 16 * slot, 16);
            let len = u16::from_le_bytes([comp[12], comp[13]]) as usize;
            if len > 0 && comp[0] == 0 && g.mem_read(RX_BUF + 2048 * slot + 11, 1)[0] == n {
                return comp;
            }
            assert!(
                Instant::now() < end,
                "frame {n} never arrived in slot {slot}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    peer.send(&frame(2, 80)).unwrap();
    let comp = recv_one(g, 2, 0);
    assert_eq!(u16::from_le_bytes([comp[12], comp[13]]), 80);
    assert_eq!(comp[15] & 0x80, 0x80, "first pass: color 1");
    assert_eq!(g.mem_read(RX_BUF, 80), frame(2, 80));
    assert!(fired(ev1, Duration::from_secs(2)) >= 1, "RX vector");

    // Masked (interrupt control block of vector 1, mask @4), a frame is
    // still delivered but the vector waits; a credits write with UNMASK
    // releases it.
    let ctrl1 = 0x2000 + 32;
    g.c.region_write(region::BAR0, ctrl1 + 4, &1u32.to_le_bytes())
        .unwrap();
    peer.send(&frame(3, 64)).unwrap();
    recv_one(g, 3, 1);
    assert_eq!(fired(ev1, Duration::from_millis(100)), 0, "masked: latched");
    g.c.region_write(region::BAR0, ctrl1 + 8, &0x1_0000u32.to_le_bytes())
        .unwrap();
    assert!(
        fired(ev1, Duration::from_secs(2)) >= 1,
        "delivered on unmask"
    );

    // Across the wrap: repost and receive until slot 0 comes round again
    // with color 0.
    g.ring(qtype::RXQ, 1); // slots 2, 3, 0 posted (producer index 5 & 3)
    peer.send(&frame(4, 70)).unwrap();
    recv_one(g, 4, 2);
    peer.send(&frame(5, 70)).unwrap();
    recv_one(g, 5, 3);
    peer.send(&frame(6, 70)).unwrap();
    let comp = recv_one(g, 6, 0);
    assert_eq!(comp[15] & 0x80, 0, "second pass: color 0");

    // The LIF statistics in guest memory count both ways.
    let st = LIF_INFO + lif_info::STATS as u64;
    assert_eq!(g.u64_at(st + 8), 5, "rx_ucast_packets");
    assert_eq!(g.u64_at(st + 128 + 8), 1, "tx_ucast_packets");
    rig.finish();
}

/// The `shared-doorbells` profile: BAR 2's top 64 pages come with the
/// region info as a sparse-mmap area and a descriptor; the LIF reports
/// only the pages below them. Doorbells written into the mapped pages
/// (each queue on a page of its own, as the memory's rule asks) run with
/// no socket message: frames go out, posted buffers fill. The trapped
/// path on page 0 still works beside them.
#[test]
fn doorbells_written_to_the_shared_pages_run_without_a_message() {
    let id = ernic_ionic::profile::load("shared-doorbells").unwrap();
    assert_eq!(id.shared_doorbell_pages, 64);
    let mut rig = attach("shared-doorbells", id);
    let g = &mut rig.g;
    bring_up(g, &mut rig.ev0, 100_000);
    let mut c64 = [0u8; 64];
    c64[..2].copy_from_slice(&[opcode::IDENTIFY, 2]);
    assert_eq!(g.devcmd(&c64)[0], status::SUCCESS);
    let at = (cmd::DATA + dev_identity::NDBPGS_PER_LIF) as u64;
    let ndbpgs = g.c.region_read(region::BAR0, at, 4).unwrap();
    assert_eq!(u32::from_le_bytes(ndbpgs.try_into().unwrap()), 960);

    let (info, fd) = g.c.region_info(region::BAR2).unwrap();
    assert_ne!(info.flags & ernic_vfio::proto::REGION_MMAP, 0);
    assert_eq!(info.sparse, vec![(960 * 4096, 64 * 4096)]);
    let fd = fd.expect("the doorbell pages' descriptor");
    let (area, len) = info.sparse[0];
    let db = ernic_vfio::shm::Mapping::new(&fd, info.offset + area, len as usize).unwrap();
    // Region 0 (BAR 0) has nothing to map and no descriptor.
    let (bar0, none) = g.c.region_info(region::BAR0).unwrap();
    assert!(bar0.sparse.is_empty() && none.is_none());

    // TX rings on shared page 1023, RX on 1022 (offsets within the area).
    let tx_word = (63 * 4096 + 8 * u64::from(qtype::TXQ)) as usize;
    let rx_word = (62 * 4096 + 8 * u64::from(qtype::RXQ)) as usize;
    assert!(db.store(rx_word, 3), "three RX buffers posted");
    for i in 0..6u64 {
        let out = frame(10 + i as u8, 60 + i as usize);
        let slot = i % 4;
        g.mem_write(TX_BUF + 2048 * slot, &out);
        let mut d = [0u8; 16];
        d[..8].copy_from_slice(&((G + TX_BUF + 2048 * slot) << 12).to_le_bytes());
        d[8..10].copy_from_slice(&(out.len() as u16).to_le_bytes());
        g.mem_write(TXQ + 16 * slot, &d);
        assert!(db.store(tx_word, (i + 1) & 3));
        let mut got = vec![0u8; 2048];
        let n = rig.peer.recv(&mut got).unwrap();
        assert_eq!(&got[..n], &out[..], "frame {i} through the shared page");
    }
    // Received frames land in the buffers posted through the shared page.
    rig.peer.send(&frame(20, 90)).unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while g.mem_read(RX_BUF + 11, 1)[0] != 20 {
        assert!(Instant::now() < end, "a frame into a shared-page buffer");
        std::thread::sleep(Duration::from_millis(2));
    }
    // The trapped doorbell of page 0 is still heard.
    let out = frame(30, 64);
    g.mem_write(TX_BUF, &out);
    let mut d = [0u8; 16];
    d[..8].copy_from_slice(&((G + TX_BUF) << 12).to_le_bytes());
    d[8..10].copy_from_slice(&(out.len() as u16).to_le_bytes());
    g.mem_write(TXQ + 16 * 2, &d);
    g.ring(qtype::TXQ, 3);
    let mut got = vec![0u8; 2048];
    let n = rig.peer.recv(&mut got).unwrap();
    assert_eq!(&got[..n], &out[..]);

    // Idle, the polling server sleeps: over 300 ms its thread uses a small
    // part of a core (measured on the thread alone: tests run side by side).
    std::thread::sleep(Duration::from_millis(20));
    // utime + stime from the thread's stat, in clock ticks of 10 ms.
    let task = rig.server_task.join("stat");
    let cpu = || {
        let stat = std::fs::read_to_string(&task).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = after
            .split(' ')
            .skip(11)
            .take(2)
            .map(|x| x.parse().unwrap())
            .collect();
        Duration::from_millis(10 * (f[0] + f[1]))
    };
    let (c0, w0) = (cpu(), Instant::now());
    std::thread::sleep(Duration::from_millis(300));
    let share = (cpu() - c0).as_secs_f64() / w0.elapsed().as_secs_f64();
    assert!(
        share < 0.25,
        "an idle polled server used {share:.2} of a core"
    );
    drop(db);
    rig.finish();
}

// The RDMA side's memory map (beside the Ethernet one above).
const EQS: u64 = 0x70000; // four EQs of 512 4-byte entries, 4 KiB apart
const ACQ: u64 = 0x78000; // the admin CQ: 64 entries of 32 bytes
const RAQ: u64 = 0x79000; // the RDMA admin queue: 64 strides of 64 bytes
const CQ1: u64 = 0x7b000; // a verbs CQ: 16 entries
const SQ5: u64 = 0x7c000; // QP 5's send ring: 16 x 64 bytes
const RQ5: u64 = 0x7d000; // and receive ring
const HDRS: u64 = 0x7e000; // header templates
const PTBL: u64 = 0x7f000; // an MR's page table
const MR_PAGES: [u64; 3] = [0x90000, 0x84000, 0x85000];

/// One RDMA admin command posted and run: answers (status, error bit),
/// after checking the completion's index, opcode, queue and color and the
/// event that follows it.
struct RdmaAdmin {
    prod: u16,
    cqes: u32,
    eqes: u32,
}

impl RdmaAdmin {
    fn run(&mut self, g: &mut Guest, ev1: &mut File, op: u8, cmd: &[u8]) -> (u32, bool) {
        let index = self.prod;
        let mut bytes = vec![0u8; 4 + cmd.len()];
        bytes[0] = op;
        bytes[2..4].copy_from_slice(&(cmd.len() as u16).to_le_bytes());
        bytes[4..].copy_from_slice(cmd);
        let strides = bytes.len().div_ceil(64);
        for (i, chunk) in bytes.chunks(64).enumerate() {
            g.mem_write(RAQ + 64 * u64::from((index + i as u16) % 64), chunk);
        }
        self.prod += strides as u16;
        // Arm the admin CQ, then ring the admin queue (qid 0).
        g.doorbell(8, 0, 1, self.cqes as u16 % 64);
        g.doorbell(5, 0, 0, self.prod % 64);
        let slot = u64::from(self.cqes % 64);
        let c = g.mem_read(ACQ + 32 * slot, 32);
        let qtf = u32::from_be_bytes(c[28..32].try_into().unwrap());
        assert_eq!(qtf & 1, u32::from(self.cqes / 64 % 2 == 0), "CQE color");
        assert_eq!(qtf >> 8, 0, "admin queue 0");
        assert_eq!((qtf >> 5) & 7, 0, "an admin CQE");
        assert_eq!(u16::from_be_bytes([c[0], c[1]]), index % 64, "cmd_idx");
        assert_eq!(c[2], op);
        self.cqes += 1;
        g.doorbell(8, 0, 0, self.cqes as u16 % 64);
        // The EQE naming admin CQ 0 (in the pass's color), then EQ 0's
        // vector (1).
        let e = g.mem_read(EQS + 4 * u64::from(self.eqes % 512), 4);
        let evt = u32::from_be_bytes(e.try_into().unwrap());
        assert_eq!(evt, u32::from(self.eqes / 512 % 2 == 0), "CQ 0 notify");
        self.eqes += 1;
        assert!(fired(ev1, Duration::from_secs(2)) >= 1, "EQ 0's vector");
        (
            u32::from_be_bytes(c[24..28].try_into().unwrap()),
            qtf & 2 != 0,
        )
    }
}

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// CREATE_CQ of CQ `id` on EQ `eq`: 16 entries of 32 bytes at `at`.
fn cq_cmd(id: u32, eq: u32, at: u64) -> [u8; 34] {
    let mut cq = [0u8; 34];
    put(&mut cq, 0, &eq.to_le_bytes());
    cq[4] = 4;
    cq[5] = 5;
    put(&mut cq, 12, &id.to_le_bytes());
    put(&mut cq, 20, &1u32.to_le_bytes());
    put(&mut cq, 24, &(G + at).to_le_bytes());
    cq
}

/// CREATE_QP of RC QP `id` on CQ 1: 16-deep rings of 64-byte WQEs at `sq`
/// and `rq`.
fn qp_cmd(id: u32, sq: u64, rq: u64) -> [u8; 64] {
    let mut qp = [0u8; 64];
    for (cq_at, ring, at) in [(8, 12, sq), (32, 36, rq)] {
        put(&mut qp, cq_at, &1u32.to_le_bytes());
        qp[ring] = 4;
        qp[ring + 1] = 6;
        put(&mut qp, ring + 8, &1u32.to_le_bytes());
        put(&mut qp, ring + 12, &(G + at).to_le_bytes());
    }
    put(&mut qp, 56, &id.to_le_bytes());
    qp
}

/// A RoCE v2 header template as the driver builds one: Ethernet, then
/// IPv4 (source, destination) or IPv6.
fn template(v4: Option<[u8; 4]>, v6: Option<[u8; 16]>) -> Vec<u8> {
    let mut h = vec![0u8; 14];
    match (v4, v6) {
        (Some(d), _) => {
            put(&mut h, 12, &[0x08, 0x00]);
            let mut ip = vec![0u8; 20];
            ip[0] = 0x45;
            put(&mut ip, 12, &[10, 0, 0, 1]);
            put(&mut ip, 16, &d);
            h.extend(ip);
        }
        (None, Some(d)) => {
            put(&mut h, 12, &[0x86, 0xdd]);
            let mut ip = vec![0u8; 40];
            ip[0] = 0x60;
            put(&mut ip, 24, &d);
            h.extend(ip);
        }
        _ => unreachable!(),
    }
    h.extend([0u8; 8]); // UDP
    h
}

/// The RDMA bootstrap through the Ethernet admin queue: RESET_LIF, four
/// EQs on vectors 1-4 (4-byte EQEs, 512 deep), the admin CQ on EQ 0, the
/// admin queue on that CQ.
fn rdma_bootstrap(g: &mut Guest) {
    let queue = |op: u8, qid: u32, cid: u32, depth: u8, stride: u8, at: u64| {
        let mut c = [0u8; 64];
        c[0] = op;
        put(&mut c, 4, &qid.to_le_bytes());
        put(&mut c, 8, &cid.to_le_bytes());
        c[14] = depth;
        c[15] = stride;
        put(&mut c, 16, &(G + at).to_le_bytes());
        c
    };
    assert_eq!(g.admin(&queue(50, 0, 0, 0, 0, 0))[0], status::SUCCESS);
    for eq in 0..4u32 {
        let c = queue(51, eq, eq + 1, 9, 2, EQS + 0x1000 * u64::from(eq));
        assert_eq!(g.admin(&c)[0], status::SUCCESS, "EQ {eq}");
    }
    assert_eq!(g.admin(&queue(52, 0, 0, 6, 5, ACQ))[0], status::SUCCESS);
    assert_eq!(g.admin(&queue(53, 0, 0, 6, 6, RAQ))[0], status::SUCCESS);
}

/// The RDMA bootstrap through the Ethernet admin queue (four EQs, the
/// admin CQ, the admin queue), then the RDMA admin queue as
/// `ionic_rdma.ko` drives it: every object created, modified and
/// destroyed, each command answered by an admin CQE, an EQE and EQ 0's
/// vector; bad commands answered with the error bit and a status.
#[test]
fn rdma_admin_queue_creates_every_object_with_completions_and_events() {
    let mut rig = attach("rdma-admin", Identity::default());
    let Rig { g, ev0, ev1, .. } = &mut rig;
    bring_up(g, ev0, 100_000);
    rdma_bootstrap(g);
    let _ = fired(ev0, Duration::from_millis(50));
    let mut a = RdmaAdmin {
        prod: 0,
        cqes: 0,
        eqes: 0,
    };
    let ok = (0, false);

    assert_eq!(a.run(g, ev1, 0, &[]), ok, "NOOP");
    // CREATE_CQ 1 on EQ 1: 16 entries of 32 bytes, contiguous.
    let cq = cq_cmd(1, 1, CQ1);
    assert_eq!(a.run(g, ev1, 1, &cq), ok, "CREATE_CQ");
    assert!(a.run(g, ev1, 1, &cq).1, "CQ 1 exists");
    let mut bad = cq;
    put(&mut bad, 12, &2u32.to_le_bytes());
    bad[4] = 20;
    assert_eq!(a.run(g, ev1, 1, &bad), (5, true), "too deep");
    put(&mut bad, 0, &9u32.to_le_bytes());
    bad[4] = 4;
    assert_eq!(a.run(g, ev1, 1, &bad), (5, true), "no EQ 9");

    // CREATE_QP 5 (RC), both rings on CQ 1: 68 bytes, two strides.
    let qp = qp_cmd(5, SQ5, RQ5); // RC
    assert_eq!(a.run(g, ev1, 2, &qp), ok, "CREATE_QP");
    let mut gsi = qp;
    put(&mut gsi, 56, &1u32.to_le_bytes());
    gsi[62] = 3; // UD with id 1: the GSI QP
    assert_eq!(a.run(g, ev1, 2, &gsi), ok, "GSI");
    let mut bad = qp;
    put(&mut bad, 56, &6u32.to_le_bytes());
    bad[62] = 2; // RD
    assert_eq!(a.run(g, ev1, 2, &bad), (4, true), "bad type");
    bad[62] = 0;
    put(&mut bad, 8, &77u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 2, &bad), (5, true), "no CQ 77");
    put(&mut bad, 8, &0u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 2, &bad), (5, true), "the admin CQ");

    // MODIFY_QP 5: INIT, then RTR with a destination in an IPv4 header
    // template (PMTU 1024), then a bad PMTU that changes nothing.
    let hdr = template(Some([10, 0, 0, 2]), None);
    g.mem_write(HDRS, &hdr);
    let modify = |mask: u32, state: u8, pmtu: u8| {
        let mut m = [0u8; 60];
        put(&mut m, 0, &mask.to_be_bytes());
        put(&mut m, 16, &0x42u32.to_le_bytes()); // dest QPN
        m[24] = pmtu;
        put(&mut m, 32, &(hdr.len() as u32).to_le_bytes());
        m[39] = state;
        put(&mut m, 48, &(G + HDRS).to_le_bytes());
        put(&mut m, 56, &5u32.to_le_bytes());
        m
    };
    assert_eq!(a.run(g, ev1, 9, &modify(1, 1, 0)), ok, "INIT");
    let rtr = 1 | 1 << 7 | 1 << 8 | 1 << 20;
    assert_eq!(a.run(g, ev1, 9, &modify(rtr, 2, 10)), ok, "RTR");
    assert_eq!(a.run(g, ev1, 9, &modify(rtr, 3, 99)), (5, true), "bad PMTU");
    let mut unknown = modify(1, 1, 0);
    put(&mut unknown, 56, &99u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 9, &unknown), (2, true), "no QP 99");

    // CREATE_MR 0x105 (index 1, key 5): 3 pages in a table, 10000 bytes
    // from 0x100 into the first page; a table longer than the region
    // needs is refused.
    let mut tbl = Vec::new();
    for p in MR_PAGES {
        tbl.extend((G + p).to_le_bytes());
    }
    g.mem_write(PTBL, &tbl);
    let mr = |count: u32| {
        let mut m = [0u8; 45];
        put(&mut m, 0, &0x7000_0100u64.to_le_bytes());
        put(&mut m, 8, &10_000u64.to_le_bytes());
        put(&mut m, 20, &0x105u32.to_le_bytes());
        put(&mut m, 28, &count.to_le_bytes());
        put(&mut m, 32, &(G + PTBL).to_le_bytes());
        put(&mut m, 40, &0x7u16.to_le_bytes()); // local write, remote read/write
        m[44] = 12;
        m
    };
    assert_eq!(a.run(g, ev1, 3, &mr(4)), (5, true), "4 pages for 3");
    assert_eq!(a.run(g, ev1, 3, &mr(3)), ok, "CREATE_MR");
    // CREATE_AH 7 from an IPv6 template.
    let gid6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
    let hdr6 = template(None, Some(gid6));
    g.mem_write(HDRS + 0x100, &hdr6);
    let mut ah = [0u8; 24];
    put(&mut ah, 0, &(G + HDRS + 0x100).to_le_bytes());
    put(&mut ah, 8, &(hdr6.len() as u32).to_le_bytes());
    put(&mut ah, 16, &7u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 13, &ah), ok, "CREATE_AH");
    put(&mut ah, 8, &10u32.to_le_bytes());
    put(&mut ah, 16, &8u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 13, &ah), (5, true), "short template");
    // No-ops, an unknown opcode, then every object destroyed (the CQ only
    // once no QP uses it).
    for op in [12, 14, 15] {
        assert_eq!(a.run(g, ev1, op, &[0u8; 8]), ok, "op {op}");
    }
    assert_eq!(a.run(g, ev1, 60, &[]), (1, true), "unknown");
    let id = |v: u32| v.to_le_bytes();
    assert!(a.run(g, ev1, 8, &id(1)).1, "CQ 1 in use");
    for (op, v) in [(16, 7), (6, 0x105), (11, 5), (11, 1), (8, 1)] {
        assert_eq!(a.run(g, ev1, op, &id(v)), ok, "destroy {op} {v}");
    }
    assert_eq!(a.run(g, ev1, 11, &id(5)), (2, true), "gone");
    assert_eq!(a.run(g, ev1, 8, &id(0)), (3, true), "the admin CQ");
    // Enough commands to wrap the admin queue and its CQ: colors turn.
    while a.cqes < 70 {
        assert_eq!(a.run(g, ev1, 0, &[]), ok);
    }
    // EQ 0's vector masked: a command's CQE and EQE are written, the
    // interrupt waits; a credits write with UNMASK delivers it.
    let ctrl1 = 0x2000 + 32;
    g.c.region_write(region::BAR0, ctrl1 + 4, &1u32.to_le_bytes())
        .unwrap();
    g.mem_write(RAQ + 64 * u64::from(a.prod % 64), &[0u8; 64]);
    a.prod += 1;
    g.doorbell(8, 0, 1, a.cqes as u16 % 64);
    g.doorbell(5, 0, 0, a.prod % 64);
    let e = g.mem_read(EQS + 4 * u64::from(a.eqes % 512), 4);
    assert_eq!(
        u32::from_be_bytes(e.try_into().unwrap()) >> 8,
        0,
        "the EQE names CQ 0"
    );
    assert_eq!(fired(ev1, Duration::from_millis(100)), 0, "masked: latched");
    g.c.region_write(region::BAR0, ctrl1 + 8, &0x1_0000u32.to_le_bytes())
        .unwrap();
    assert!(
        fired(ev1, Duration::from_secs(2)) >= 1,
        "delivered on unmask"
    );
    rig.finish();
}

/// CREATE_MR of one 4 KiB page (no table) with key `key` in the guest's
/// PD `pd_id`.
fn mr_in_pd(pd_id: u32, key: u32) -> [u8; 45] {
    let mut m = [0u8; 45];
    put(&mut m, 0, &0x7000_0000u64.to_le_bytes());
    put(&mut m, 8, &4096u64.to_le_bytes());
    put(&mut m, 16, &pd_id.to_le_bytes());
    put(&mut m, 20, &key.to_le_bytes());
    put(&mut m, 28, &1u32.to_le_bytes());
    put(&mut m, 32, &(G + MR_PAGES[0]).to_le_bytes());
    put(&mut m, 40, &0x7u16.to_le_bytes());
    m[44] = 12;
    m
}

/// Protection domains as the device learns them from `pd_id`: each new id
/// makes one, up to 1024 (`MAX_PDS`); the next is refused with BAD_INDEX;
/// RESET_LIF forgets them all, so after a fresh bootstrap a new id is
/// accepted again.
#[test]
fn protection_domains_are_bounded_and_die_when_the_lif_resets() {
    let mut rig = attach("rdma-pd-reset", Identity::default());
    let Rig { g, ev0, ev1, .. } = &mut rig;
    bring_up(g, ev0, 100_000);
    rdma_bootstrap(g);
    let _ = fired(ev0, Duration::from_millis(50));
    let mut a = RdmaAdmin {
        prod: 0,
        cqes: 0,
        eqes: 0,
    };
    let ok = (0, false);
    for i in 0..1024u32 {
        assert_eq!(
            a.run(g, ev1, 3, &mr_in_pd(3 * i, (i + 1) << 8)),
            ok,
            "PD {i}"
        );
    }
    let over = mr_in_pd(5000, 1025 << 8);
    assert_eq!(a.run(g, ev1, 3, &over), (2, true), "a 1025th PD");
    assert_eq!(a.run(g, ev1, 3, &mr_in_pd(3, 1026 << 8)), ok, "a known PD");
    // RESET_LIF, then the bootstrap again: the PDs went with the LIF.
    rdma_bootstrap(g);
    let mut a = RdmaAdmin {
        prod: 0,
        cqes: 0,
        eqes: 0,
    };
    assert_eq!(a.run(g, ev1, 3, &over), ok, "a new PD after the reset");
    rig.finish();
}

/// The data path through the real socket, as rdma-core's provider drives
/// it: two RC QPs of one guest (5 and 6) on CQ 1, an MR over a buffer;
/// WRITE, SEND into a posted receive, READ and a fetch-and-add, each
/// completed by a CQE (MSN for the sender, the WQE id for the receiver);
/// CQ 1 armed, its event on EQ 1; a bad opcode and an SGE outside its MR
/// completing with errors; a doorbell for a QP that does not exist
/// ignored; QP 6 moved to ERROR flushing its receive queue with one CQE.
#[test]
fn rdma_data_path_between_two_qps_of_one_guest() {
    const BUF: u64 = 0xa0000; // the MR: 64 KiB at iova 0x1000_0000
    const IOVA: u64 = 0x1000_0000;
    const KEY: u32 = 0x105;
    const SQ6: u64 = 0x88000;
    const RQ6: u64 = 0x89000;
    let mut rig = attach("rdma-data", Identity::default());
    let g = &mut rig.g;
    bring_up(g, &mut rig.ev0, 100_000);
    rdma_bootstrap(g);
    let _ = fired(&mut rig.ev0, Duration::from_millis(50));
    let mut a = RdmaAdmin {
        prod: 0,
        cqes: 0,
        eqes: 0,
    };
    let ok = (0, false);
    let ev1 = &mut rig.ev1;
    // CQ 1 (16 deep) on EQ 1.
    let cq = cq_cmd(1, 1, CQ1);
    assert_eq!(a.run(g, ev1, 1, &cq), ok);
    // QPs 5 and 6: 16-deep rings of 64-byte WQEs.
    for (id, sq, rq) in [(5u32, SQ5, RQ5), (6, SQ6, RQ6)] {
        assert_eq!(a.run(g, ev1, 2, &qp_cmd(id, sq, rq)), ok, "QP {id}");
    }
    // INIT with remote rights, RTR to the other (same guest GID), RTS.
    let hdr = template(Some([10, 0, 0, 1]), None);
    g.mem_write(HDRS, &hdr);
    for (id, peer) in [(5u32, 6u32), (6, 5)] {
        for (mask, state) in [
            (1u32 | 1 << 3, 1u8),
            (1 | 1 << 7 | 1 << 8 | 1 << 20, 2),
            (1, 3),
        ] {
            let mut m = [0u8; 60];
            put(&mut m, 0, &mask.to_be_bytes());
            put(&mut m, 6, &0x7u16.to_be_bytes());
            put(&mut m, 16, &peer.to_le_bytes());
            m[24] = 10;
            put(&mut m, 32, &(hdr.len() as u32).to_le_bytes());
            m[39] = state;
            put(&mut m, 48, &(G + HDRS).to_le_bytes());
            put(&mut m, 56, &id.to_le_bytes());
            assert_eq!(a.run(g, ev1, 9, &m), ok, "QP {id} to state {state}");
        }
    }
    // The MR: 64 KiB, contiguous, every right.
    let mut mr = [0u8; 45];
    put(&mut mr, 0, &IOVA.to_le_bytes());
    put(&mut mr, 8, &0x10000u64.to_le_bytes());
    put(&mut mr, 20, &KEY.to_le_bytes());
    put(&mut mr, 28, &1u32.to_le_bytes());
    put(&mut mr, 32, &(G + BUF).to_le_bytes());
    put(&mut mr, 40, &0xfu16.to_le_bytes());
    mr[44] = 12;
    assert_eq!(a.run(g, ev1, 3, &mr), ok);

    // WQE builders (ionic_v1_wqe, big-endian fields) and the CQE reader.
    let wqe = |id: u64, op: u8, remote: (u64, u32), sges: &[(u64, u32, u32)]| {
        let mut w = [0u8; 64];
        w[..8].copy_from_slice(&id.to_le_bytes());
        w[8] = op;
        w[9] = sges.len() as u8;
        w[10..12].copy_from_slice(&8u16.to_be_bytes()); // signaled
        w[16..20].copy_from_slice(&((remote.0 >> 32) as u32).to_be_bytes());
        w[20..24].copy_from_slice(&(remote.0 as u32).to_be_bytes());
        w[24..28].copy_from_slice(&remote.1.to_be_bytes());
        let total: u32 = sges.iter().map(|s| s.1).sum();
        w[28..32].copy_from_slice(&total.to_be_bytes());
        for (i, &(va, len, key)) in sges.iter().enumerate() {
            let o = 32 + 16 * i;
            w[o..o + 8].copy_from_slice(&va.to_be_bytes());
            w[o + 8..o + 12].copy_from_slice(&len.to_be_bytes());
            w[o + 12..o + 16].copy_from_slice(&key.to_be_bytes());
        }
        w
    };
    let mut next_cqe = 0u64;
    let mut cqe = |g: &mut Guest| -> (u32, Vec<u8>) {
        let c = g.mem_read(CQ1 + 32 * (next_cqe % 16), 32);
        let qtf = u32::from_be_bytes(c[28..32].try_into().unwrap());
        assert_eq!(
            qtf & 1,
            u32::from(next_cqe / 16 % 2 == 0),
            "CQE {next_cqe} color"
        );
        next_cqe += 1;
        (qtf, c)
    };
    let be32_at = |c: &[u8], at: usize| u32::from_be_bytes(c[at..at + 4].try_into().unwrap());
    let src = IOVA;
    let dst = IOVA + 0x1000;
    g.mem_write(BUF, b"written by RDMA WRITE from QP 5");

    // Arm CQ 1: the first completion raises an event on EQ 1.
    g.doorbell(8, 1, 1, 0);
    // WRITE 31 bytes from QP 5 into the buffer's second page.
    g.mem_write(SQ5, &wqe(0, 4, (dst, KEY), &[(src, 31, KEY)]));
    g.doorbell(6, 5, 0, 1);
    let (qtf, c) = cqe(g);
    assert_eq!(
        (qtf >> 8, (qtf >> 5) & 7, qtf & 2),
        (5, 2, 0),
        "QP 5, SEND_MSN, no error"
    );
    assert_eq!(be32_at(&c, 4), 1, "msn 1");
    assert_eq!(
        g.mem_read(BUF + 0x1000, 31),
        b"written by RDMA WRITE from QP 5"
    );
    let e = u32::from_be_bytes(g.mem_read(EQS + 0x1000, 4).try_into().unwrap());
    assert_eq!(e, 1 << 8 | 1, "EQ 1: CQ 1 notify, color 1");

    // SEND 16 bytes from QP 5 into a receive posted on QP 6.
    let mut recv = [0u8; 64];
    recv[..8].copy_from_slice(&0u64.to_le_bytes());
    recv[9] = 1;
    recv[32..40].copy_from_slice(&(IOVA + 0x2000).to_be_bytes());
    recv[40..44].copy_from_slice(&64u32.to_be_bytes());
    recv[44..48].copy_from_slice(&KEY.to_be_bytes());
    g.mem_write(RQ6, &recv);
    g.doorbell(7, 6, 0, 1);
    g.mem_write(SQ5 + 64, &wqe(1, 0, (0, 0), &[(src, 16, KEY)]));
    g.doorbell(6, 5, 0, 2);
    let mut seen = [cqe(g), cqe(g)];
    seen.sort_by_key(|(qtf, _)| qtf >> 8);
    let (sq, sc) = &seen[0];
    assert_eq!(
        (sq >> 8, (sq >> 5) & 7, be32_at(sc, 4)),
        (5, 2, 2),
        "send: msn 2"
    );
    let (rq, rc) = &seen[1];
    assert_eq!((rq >> 8, (rq >> 5) & 7), (6, 1), "QP 6's receive");
    assert_eq!(be32_at(rc, 24), 16, "16 bytes");
    assert_eq!(be32_at(rc, 8) >> 24, 0, "a plain SEND");
    assert_eq!(g.mem_read(BUF + 0x2000, 16), b"written by RDMA ");

    // READ 8 bytes from the WRITE's target into the third page.
    g.mem_write(
        SQ5 + 128,
        &wqe(2, 3, (dst + 11, KEY), &[(IOVA + 0x3000, 8, KEY)]),
    );
    g.doorbell(6, 5, 0, 3);
    let (qtf, c) = cqe(g);
    assert_eq!((qtf & 2, be32_at(&c, 4)), (0, 3));
    assert_eq!(g.mem_read(BUF + 0x3000, 8), b"RDMA WRI");

    // Fetch-and-add 5 on a counter of 37: the old value comes back.
    g.mem_write(BUF + 0x4000, &37u64.to_le_bytes());
    let mut fa = wqe(3, 7, (IOVA + 0x4000, KEY), &[]);
    fa[32..36].copy_from_slice(&5u32.to_be_bytes()); // swap_add_low
    fa[48..56].copy_from_slice(&(IOVA + 0x4008).to_be_bytes());
    fa[56..60].copy_from_slice(&8u32.to_be_bytes());
    fa[60..64].copy_from_slice(&KEY.to_be_bytes());
    g.mem_write(SQ5 + 192, &fa);
    g.doorbell(6, 5, 0, 4);
    let (qtf, _) = cqe(g);
    assert_eq!(qtf & 2, 0, "atomic succeeded");
    assert_eq!(g.u64_at(BUF + 0x4000), 42);
    assert_eq!(g.u64_at(BUF + 0x4008), 37);

    // An SGE past the MR: LOCAL_PROT_ERR, and the QP is in error, so the
    // WQE after it is flushed (one flush CQE). A bad opcode on QP 6:
    // LOCAL_QP_OPER_ERR.
    g.mem_write(
        SQ5 + 256,
        &wqe(4, 4, (dst, KEY), &[(IOVA + 0xff00, 0x200, KEY)]),
    );
    g.mem_write(SQ5 + 320, &wqe(5, 4, (dst, KEY), &[(src, 8, KEY)]));
    g.doorbell(6, 5, 0, 6);
    let (qtf, c) = cqe(g);
    assert_eq!(
        (qtf >> 8, qtf & 2, be32_at(&c, 24)),
        (5, 2, 3),
        "LOCAL_PROT_ERR"
    );
    let (qtf, c) = cqe(g);
    assert_eq!(
        (qtf >> 8, (qtf >> 5) & 7, qtf & 2),
        (5, 3, 2),
        "a flush CQE by WQE id"
    );
    assert_eq!(be32_at(&c, 24), 4, "WQE_FLUSHED_ERR");
    g.mem_write(SQ6, &wqe(0, 33, (0, 0), &[]));
    g.doorbell(6, 6, 0, 1);
    let (qtf, c) = cqe(g);
    assert_eq!(
        (qtf >> 8, qtf & 2, be32_at(&c, 24)),
        (6, 2, 2),
        "LOCAL_QP_OPER_ERR"
    );

    // A doorbell for a QP that does not exist changes nothing.
    g.doorbell(6, 99, 0, 3);
    g.doorbell(7, 99, 0, 3);
    // QP 6 to ERROR with a receive posted: one flush CQE for its queue.
    g.mem_write(RQ6 + 64, &recv);
    g.doorbell(7, 6, 0, 2);
    let mut m = [0u8; 60];
    put(&mut m, 0, &1u32.to_be_bytes());
    m[39] = 6;
    put(&mut m, 56, &6u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 9, &m), ok, "QP 6 to ERROR");
    let (qtf, c) = cqe(g);
    assert_eq!(
        (qtf >> 8, (qtf >> 5) & 7, qtf & 2),
        (6, 1, 2),
        "QP 6's receive flushed"
    );
    assert_eq!(be32_at(&c, 24), 4, "WQE_FLUSHED_ERR");
    let c = g.mem_read(CQ1 + 32 * (next_cqe % 16), 32);
    assert_eq!(c[31] & 1, 0, "and nothing more");

    // The counters, as the driver reads them for hw_counters: names, then
    // values at the offsets the names give.
    const STATS: u64 = 0xb0000;
    let mut sc = [0u8; 17];
    put(&mut sc, 0, &(G + STATS).to_le_bytes());
    put(&mut sc, 8, &4096u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 4, &sc), ok, "STATS_HDRS");
    let hdrs = g.mem_read(STATS, 4096);
    let mut names = Vec::new();
    for e in hdrs.chunks(32) {
        let type_off = u32::from_be_bytes(e[..4].try_into().unwrap());
        if type_off >> 28 == 0 {
            break;
        }
        assert_eq!(type_off >> 28, 4, "LE64");
        let name = String::from_utf8_lossy(&e[4..])
            .trim_end_matches('\0')
            .to_string();
        names.push((name, (type_off & 0x0fff_ffff) as u64));
    }
    assert_eq!(a.run(g, ev1, 5, &sc), ok, "STATS_VALS");
    let val = |n: &str| {
        let off = names.iter().find(|(k, _)| k == n).expect(n).1;
        g.u64_at(STATS + off)
    };
    assert_eq!(val("req_tx_writes"), 1, "the WRITE that ran");
    assert_eq!(val("req_tx_local_access_err"), 1, "the one past its MR");
    assert_eq!(val("req_tx_reads"), 1);
    assert_eq!(val("req_tx_atomics"), 1);
    put(&mut sc, 12, &5u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 18, &sc), ok, "QP_STATS_VALS of QP 5");
    put(&mut sc, 12, &99u32.to_le_bytes());
    assert_eq!(a.run(g, ev1, 18, &sc), (2, true), "no QP 99");
    rig.finish();
}
