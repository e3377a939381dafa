//! The function as a guest drives it: bring-up, hostile register, doorbell
//! and memory traffic, and the in-process endpoint's frames.
use super::*;
use crate::regs::{opcode, q_init};
use ernic_vfio::dma::Dma;
use ernic_vfio::proto::{DMA_READ, DMA_WRITE};
use ernic_vfio::server::Irqs;
use proptest::prelude::*;

const G: u64 = 0x40_0000;
const RAM: u64 = 1 << 16;

/// A guest action after bring-up: a BAR 0 write, a doorbell, a write
/// into guest memory (rings, descriptors, buffers), a device command,
/// or a frame from the wire.
#[derive(Debug, Clone)]
enum Act {
    Bar0(u16, Vec<u8>),
    Bell(u16, u64),
    Mem(u16, Vec<u8>),
    Command([u8; 64]),
    Frame(Vec<u8>),
}

fn act() -> impl Strategy<Value = Act> {
    let bytes = proptest::collection::vec(any::<u8>(), 1..40);
    prop_oneof![
        (any::<u16>(), bytes.clone()).prop_map(|(o, b)| Act::Bar0(o, b)),
        (0u16..4096, any::<u64>()).prop_map(|(o, v)| Act::Bell(o & !7, v)),
        // Doorbells of the Ethernet queue types for queue 0, ring 0.
        (0u16..4, any::<u16>()).prop_map(|(t, p)| Act::Bell(t * 8, u64::from(p))),
        (any::<u16>(), bytes.clone()).prop_map(|(o, b)| Act::Mem(o, b)),
        any::<[u8; 64]>().prop_map(Act::Command),
        // The P4 commands, with wild addresses and lengths.
        (70u8..=72, any::<[u8; 64]>()).prop_map(|(op, mut c)| {
            c[0] = op;
            Act::Command(c)
        }),
        proptest::collection::vec(any::<u8>(), 0..3000).prop_map(Act::Frame),
    ]
}

/// Runs a device command through BAR 0.
fn command(f: &mut IonicFunction, io: &mut Io, c: &[u8; 64]) {
    f.write(io, pci::region::BAR0, 0x808, c).unwrap();
    f.write(io, pci::region::BAR0, 0x800, &[1, 0, 0, 0])
        .unwrap();
}

/// The driver's bring-up, with every ring in guest memory: port and
/// LIF info, and admin, TX and RX queues of 8 enabled with interrupts.
fn bring_up(f: &mut IonicFunction, io: &mut Io) {
    for (op, pa) in [(opcode::PORT_INIT, 0x8000u64), (opcode::LIF_INIT, 0x9000)] {
        let mut c = [0u8; 64];
        c[0] = op;
        c[8..16].copy_from_slice(&(G + pa).to_le_bytes());
        command(f, io, &c);
    }
    for (t, base) in [(0u8, 0x1000u64), (3, 0x3000), (2, 0x5000)] {
        let mut c = [0u8; 64];
        c[0] = opcode::Q_INIT;
        c[q_init::TYPE] = t;
        c[q_init::FLAGS] = (q_init::F_IRQ | q_init::F_ENA) as u8;
        c[q_init::INTR_INDEX] = t;
        c[q_init::RING_SIZE] = 3;
        for (at, off) in [
            (q_init::RING_BASE, 0),
            (q_init::CQ_RING_BASE, 0x800),
            (q_init::SG_RING_BASE, 0x1000),
        ] {
            c[at..at + 8].copy_from_slice(&(G + base + off).to_le_bytes());
        }
        command(f, io, &c);
    }
}

/// An endpoint for the test: it claims the frames whose first byte
/// is 0xEE and sends what the test queues.
#[derive(Debug)]
struct TestEndpoint {
    claimed: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
    queued: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<Vec<u8>>>>,
    head: Option<Vec<u8>>,
    fd: std::os::unix::net::UnixDatagram,
}

impl FrameEndpoint for TestEndpoint {
    fn claim_tx(&mut self, frame: &[u8]) -> bool {
        if frame.first() != Some(&0xEE) {
            return false;
        }
        self.claimed.lock().unwrap().push(frame.to_vec());
        true
    }
    fn peek_rx(&mut self) -> Option<&[u8]> {
        if self.head.is_none() {
            self.head = self.queued.lock().unwrap().pop_front();
        }
        self.head.as_deref()
    }
    fn pop_rx(&mut self) {
        self.head = None;
    }
    fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }
}

/// A frame of `len` bytes starting with `first`, the rest a pattern.
fn pattern(first: u8, len: usize, seed: u8) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect();
    f[0] = first;
    f
}

// TX descriptor: cmd (addr << 12, no SG) @0, len @8; RX descriptor:
// len @6, addr @8; RX completion: comp_index @2, len @12, color @15.
#[test]
fn an_endpoint_takes_its_frames_and_its_frames_wait_for_buffers() {
    let (wire, theirs) = Wire::socket_pair().unwrap();
    theirs.set_nonblocking(true).unwrap();
    let claimed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let queued = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
    let (fd, _other) = std::os::unix::net::UnixDatagram::pair().unwrap();
    let ep = TestEndpoint {
        claimed: claimed.clone(),
        queued: queued.clone(),
        head: None,
        fd,
    };
    let mut f = IonicFunction::new(Identity::default())
        .with_wire(wire)
        .with_endpoint(Box::new(ep));
    let mut dma = Dma::new(2);
    let ram = ernic_vfio::client::shared_memory(c"guest", RAM).unwrap();
    dma.map(G, RAM, 0, DMA_READ | DMA_WRITE, Some(ram)).unwrap();
    let mut irqs = Irqs::new(&f.irqs());
    let mut io = Io {
        dma: &mut dma,
        irqs: &mut irqs,
    };
    bring_up(&mut f, &mut io);

    // The guest sends one frame for the endpoint, then one for the wire.
    let mine = pattern(0xEE, 90, 1);
    let other = pattern(0x02, 70, 2);
    let mut buf = [0u8; 2048];
    for (i, fr) in [&mine, &other].into_iter().enumerate() {
        let at = G + 0x9000 + 0x800 * i as u64;
        io.dma.write(at, fr).unwrap();
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&(at << 12).to_le_bytes());
        d[8..10].copy_from_slice(&(fr.len() as u16).to_le_bytes());
        io.dma.write(G + 0x3000 + 16 * i as u64, &d).unwrap();
        let bell = (i as u64 + 1).to_le_bytes();
        f.write(&mut io, pci::region::BAR2, u64::from(qtype::TXQ) * 8, &bell)
            .unwrap();
        if i == 0 {
            assert!(
                theirs.recv(&mut buf).is_err(),
                "a claimed frame reached the wire"
            );
        }
    }
    assert_eq!(*claimed.lock().unwrap(), vec![mine.clone()]);
    let n = theirs
        .recv(&mut buf)
        .expect("the unclaimed frame is on the wire");
    assert_eq!(&buf[..n], &other[..]);
    assert!(
        theirs.recv(&mut buf).is_err(),
        "one frame on the wire, no more"
    );

    // Two frames queued with no buffer posted: they wait.
    let (x, y) = (pattern(0x02, 100, 3), pattern(0x02, 200, 4));
    queued.lock().unwrap().extend([x.clone(), y.clone()]);
    f.ready(&mut io);
    let mut comp = [0u8; 16];
    io.dma.read(G + 0x5800, &mut comp).unwrap();
    assert_eq!(comp, [0; 16], "delivered with no buffer posted");
    for i in 0..2u64 {
        let mut d = [0u8; 16];
        d[6..8].copy_from_slice(&2048u16.to_le_bytes());
        d[8..16].copy_from_slice(&(G + 0xa000 + 0x800 * i).to_le_bytes());
        io.dma.write(G + 0x5000 + 16 * i, &d).unwrap();
    }
    // One buffer posted: the first frame, byte-exact, with its
    // completion; the second still waits.
    let rx_bell = u64::from(qtype::RXQ) * 8;
    f.write(&mut io, pci::region::BAR2, rx_bell, &1u64.to_le_bytes())
        .unwrap();
    let mut got = vec![0u8; x.len()];
    io.dma.read(G + 0xa000, &mut got).unwrap();
    assert_eq!(got, x);
    io.dma.read(G + 0x5800, &mut comp).unwrap();
    assert_eq!(u16::from_le_bytes([comp[2], comp[3]]), 0);
    assert_eq!(
        usize::from(u16::from_le_bytes([comp[12], comp[13]])),
        x.len()
    );
    assert_eq!(comp[15] & 0x80, 0x80, "the completion's color");
    io.dma.read(G + 0x5810, &mut comp).unwrap();
    assert_eq!(comp, [0; 16], "the second frame did not wait");
    assert_eq!(
        queued.lock().unwrap().len(),
        0,
        "the second is in the endpoint's hand"
    );
    // The next buffer: the second frame, in order.
    f.write(&mut io, pci::region::BAR2, rx_bell, &2u64.to_le_bytes())
        .unwrap();
    let mut got = vec![0u8; y.len()];
    io.dma.read(G + 0xa800, &mut got).unwrap();
    assert_eq!(got, y);
    io.dma.read(G + 0x5810, &mut comp).unwrap();
    assert_eq!(u16::from_le_bytes([comp[2], comp[3]]), 1);
    assert_eq!(
        usize::from(u16::from_le_bytes([comp[12], comp[13]])),
        y.len()
    );
    assert!(
        theirs.recv(&mut buf).is_err(),
        "an endpoint frame went to the wire"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    // Whatever a guest writes to the registers, the doorbells and its
    // own memory (descriptors with wild addresses, lengths and SG
    // counts included), and whatever arrives on the wire, the device
    // answers, stays inside guest memory, and never panics; with the P4
    // hooks installed (a frame filter, commands 70-72 open) too.
    #[test]
    fn hostile_guests_do_not_crash_the_device(
        acts in proptest::collection::vec(act(), 1..60),
        hooked in any::<bool>(),
    ) {
        let mut f = IonicFunction::new(Identity::default());
        if hooked {
            let filter = ArpFilter { seen: Seen::default(), scratch: Vec::new() };
            f = f
                .with_frame_filter(Box::new(filter))
                .with_p4_control(Box::new(EchoControl), crate::p4hook::GuestScope::Program);
        }
        let mut dma = Dma::new(2);
        let ram = ernic_vfio::client::shared_memory(c"guest", RAM).unwrap();
        dma.map(G, RAM, 0, DMA_READ | DMA_WRITE, Some(ram)).unwrap();
        let mut irqs = Irqs::new(&f.irqs());
        bring_up(&mut f, &mut Io { dma: &mut dma, irqs: &mut irqs });
        for a in acts {
            let mut io = Io { dma: &mut dma, irqs: &mut irqs };
            match a {
                Act::Bar0(o, b) => {
                    let o = u64::from(o).min(BAR0_SIZE - b.len() as u64);
                    f.write(&mut io, pci::region::BAR0, o, &b).unwrap();
                }
                Act::Bell(o, v) => {
                    f.write(&mut io, pci::region::BAR2, u64::from(o), &v.to_le_bytes()).unwrap();
                }
                Act::Mem(o, b) => {
                    let _ = io.dma.write(G + u64::from(o), &b);
                }
                Act::Command(c) => command(&mut f, &mut io, &c),
                Act::Frame(b) => {
                    let _ = f.bar0.rx_frame(&b, io.dma);
                }
            }
            let mut sig = [0u8; 4];
            f.read(&mut io, pci::region::BAR0, 0, &mut sig).unwrap();
            prop_assert_eq!(sig, [0x49, 0x56, 0x45, 0x44]);
        }
    }
}

/// An engine that answers each command with its input.
struct EchoControl;

impl crate::p4hook::P4Control for EchoControl {
    fn command(&mut self, _: u8, input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.extend_from_slice(input);
        Ok(())
    }
}

/// The frames a test filter saw, with where each came from.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(crate::p4hook::Side, Vec<u8>)>>>;

/// A P4-style frame filter for the test: ARP for 10.0.0.99 from the
/// guest is dropped, frames of ethertype 0x88b5 from the guest are turned
/// back to it, other guest frames go to the wire; frames from the wire go
/// to the guest with byte 14 rewritten to 0x5a. It records how many frames
/// it saw.
struct ArpFilter {
    seen: Seen,
    scratch: Vec<u8>,
}

impl crate::p4hook::FrameFilter for ArpFilter {
    fn filter(
        &mut self,
        from: crate::p4hook::Side,
        frame: &[u8],
        emit: &mut dyn FnMut(crate::p4hook::Side, &[u8]),
    ) {
        use crate::p4hook::Side;
        self.seen.lock().unwrap().push((from, frame.to_vec()));
        let ethertype = frame.get(12..14);
        match from {
            Side::Guest
                if ethertype == Some(&[0x08, 0x06])
                    && frame.get(38..42) == Some(&[10, 0, 0, 99]) => {}
            Side::Guest if ethertype == Some(&[0x88, 0xb5]) => emit(Side::Guest, frame),
            Side::Guest => emit(Side::Wire, frame),
            Side::Wire => {
                self.scratch.clear();
                self.scratch.extend_from_slice(frame);
                if let Some(b) = self.scratch.get_mut(14) {
                    *b = 0x5a;
                }
                emit(Side::Guest, &self.scratch);
            }
        }
    }
}

/// An ARP request from 10.0.0.2 for `target`.
fn arp(target: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].fill(0xff);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[22..28].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[28..32].copy_from_slice(&[10, 0, 0, 2]);
    f[38..42].copy_from_slice(&target);
    f
}

/// The guest transmits `fr` from TX slot `i` (its buffer at G+0x9000 +
/// 0x800 * (i % 4)) and rings the doorbell.
fn transmit(f: &mut IonicFunction, io: &mut Io, i: u64, fr: &[u8]) {
    let at = G + 0x9000 + 0x800 * (i % 4);
    io.dma.write(at, fr).unwrap();
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&(at << 12).to_le_bytes());
    d[8..10].copy_from_slice(&(fr.len() as u16).to_le_bytes());
    io.dma.write(G + 0x3000 + 16 * (i % 8), &d).unwrap();
    let bell = ((i + 1) % 8).to_le_bytes();
    f.write(io, pci::region::BAR2, u64::from(qtype::TXQ) * 8, &bell)
        .unwrap();
}

#[test]
fn the_frame_filter_drops_rewrites_and_turns_frames_back_and_endpoints_bypass_it() {
    use crate::p4hook::Side;
    let (wire, theirs) = Wire::socket_pair().unwrap();
    theirs.set_nonblocking(true).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let claimed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (fd, _other) = std::os::unix::net::UnixDatagram::pair().unwrap();
    let ep = TestEndpoint {
        claimed: claimed.clone(),
        queued: Default::default(),
        head: None,
        fd,
    };
    let filter = ArpFilter {
        seen: seen.clone(),
        scratch: Vec::new(),
    };
    let mut f = IonicFunction::new(Identity::default())
        .with_wire(wire)
        .with_endpoint(Box::new(ep))
        .with_frame_filter(Box::new(filter));
    let mut dma = Dma::new(2);
    let ram = ernic_vfio::client::shared_memory(c"guest", RAM).unwrap();
    dma.map(G, RAM, 0, DMA_READ | DMA_WRITE, Some(ram)).unwrap();
    let mut irqs = Irqs::new(&f.irqs());
    let mut io = Io {
        dma: &mut dma,
        irqs: &mut irqs,
    };
    bring_up(&mut f, &mut io);

    let (dropped, passed) = (arp([10, 0, 0, 99]), arp([10, 0, 0, 1]));
    let mut back = pattern(0x02, 80, 5);
    back[12..14].copy_from_slice(&[0x88, 0xb5]);
    let mine = pattern(0xEE, 70, 6);
    for (i, fr) in [&dropped, &passed, &back, &mine].into_iter().enumerate() {
        transmit(&mut f, &mut io, i as u64, fr);
    }
    let mut buf = [0u8; 2048];
    let n = theirs
        .recv(&mut buf)
        .expect("the ARP for 10.0.0.1 is on the wire");
    assert_eq!(&buf[..n], &passed[..]);
    assert!(
        theirs.recv(&mut buf).is_err(),
        "more than one frame on the wire"
    );
    assert_eq!(*claimed.lock().unwrap(), vec![mine.clone()]);
    let guest_seen: Vec<Vec<u8>> = seen.lock().unwrap().iter().map(|s| s.1.clone()).collect();
    assert_eq!(
        guest_seen,
        vec![dropped, passed, back.clone()],
        "the endpoint's frame was filtered"
    );
    let st = f.frame_filter_stats().unwrap();
    assert_eq!(
        (st.dropped, st.queue_full, st.waiting),
        (1, 0, 1),
        "one dropped, one waits"
    );

    // A frame from the wire: rewritten, and waiting too (no buffer yet).
    let from_wire = frame_ipv4();
    theirs.send(&from_wire).unwrap();
    f.ready(&mut io);
    assert_eq!(
        seen.lock().unwrap().last().unwrap(),
        &(Side::Wire, from_wire.clone())
    );
    assert_eq!(f.frame_filter_stats().unwrap().waiting, 2);
    let mut comp = [0u8; 16];
    io.dma.read(G + 0x5800, &mut comp).unwrap();
    assert_eq!(comp, [0; 16], "delivered with no buffer posted");

    // Two buffers: the turned-back frame, then the rewritten one, in order.
    for i in 0..2u64 {
        let mut d = [0u8; 16];
        d[6..8].copy_from_slice(&2048u16.to_le_bytes());
        d[8..16].copy_from_slice(&(G + 0xa000 + 0x800 * i).to_le_bytes());
        io.dma.write(G + 0x5000 + 16 * i, &d).unwrap();
    }
    let rx_bell = u64::from(qtype::RXQ) * 8;
    f.write(&mut io, pci::region::BAR2, rx_bell, &2u64.to_le_bytes())
        .unwrap();
    let mut got = vec![0u8; back.len()];
    io.dma.read(G + 0xa000, &mut got).unwrap();
    assert_eq!(got, back);
    let mut want = from_wire.clone();
    want[14] = 0x5a;
    let mut got = vec![0u8; want.len()];
    io.dma.read(G + 0xa800, &mut got).unwrap();
    assert_eq!(got, want);
    io.dma.read(G + 0x5810, &mut comp).unwrap();
    assert_eq!(
        usize::from(u16::from_le_bytes([comp[12], comp[13]])),
        want.len()
    );
    assert_eq!(f.frame_filter_stats().unwrap().waiting, 0);
    let groups = f.stats_groups();
    let counter = |kind: &str, name: &str| {
        let g = groups.iter().find(|g| g.kind == kind).expect(kind);
        g.counters.get(name).copied()
    };
    assert_eq!(counter("p4", "frames_dropped"), Some(1), "{groups:?}");
    assert_eq!(counter("port", "packets_received"), Some(2), "{groups:?}");
}

/// An IPv4/UDP frame to this guest.
fn frame_ipv4() -> Vec<u8> {
    let mut f = pattern(0x02, 64, 9);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[23] = 17;
    f
}

#[test]
fn without_a_filter_the_stats_say_nothing_of_one() {
    let f = IonicFunction::new(Identity::default());
    assert!(f.frame_filter_stats().is_none());
    let kinds: Vec<_> = f.stats_groups().into_iter().map(|g| g.kind).collect();
    assert_eq!(kinds, ["device", "ionic", "lif", "port", "link"]);
}
