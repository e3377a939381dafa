//! The ionic PCI function as a vfio-user device: its identity and config
//! space, BAR 0 (registers, MSI-X table and PBA), BAR 2 (doorbells), and
//! its interrupts (INTx and the profile's MSI-X vectors). The P4 hooks'
//! frame path is `function/frames.rs`.

use ernic_vfio::pci::{self, Bar, Config, Msix};
use ernic_vfio::proto::{self, RegionInfo};
use ernic_vfio::server::{Device, Io};

use crate::bar0::{Bar0, Identity};
use crate::doorbell::{BAR2_SIZE, Doorbell, PAGE};
use crate::regs::qtype;
use crate::regs::{BAR0_SIZE, MSIX_PBA, MSIX_TABLE};
use crate::tap::{FrameEndpoint, Wire};

mod frames;
mod stats;

pub use frames::{FilterStats, MAX_QUEUED};
pub use stats::Compose;

/// Pensando's vendor id.
pub const VENDOR: u16 = 0x1dd8;
/// The ionic PF device id the upstream driver binds.
pub const DEVICE: u16 = 0x1002;
/// The subsystem id that marks the function as emulated.
pub const SUBSYSTEM: u16 = 0x5400;
/// Ethernet controller.
pub const CLASS: u32 = 0x02_00_00;

// VFIO_IRQ_INFO_* flags.
const IRQ_EVENTFD: u32 = 1 << 0;
const IRQ_MASKABLE: u32 = 1 << 1;
const IRQ_AUTOMASKED: u32 = 1 << 2;
const IRQ_NORESIZE: u32 = 1 << 3;

/// The function.
#[derive(Debug)]
pub struct IonicFunction {
    config: Config,
    bar0: Bar0,
    vectors: u16,
    doorbells: u64,
    last_doorbell: Option<Doorbell>,
    wire: Option<Wire>,
    endpoint: Option<Box<dyn FrameEndpoint>>,
    /// The endpoint's first frame found no receive buffer: its descriptor
    /// is not waited on (it stays readable) until the guest posts one.
    endpoint_stalled: bool,
    /// The P4 frame filter, when one is installed.
    frames: Option<frames::FramePath>,
    frame: Vec<u8>,
    fired: Vec<u16>,
    /// Doorbells that came through the shared pages (of `doorbells`).
    doorbells_shared: u64,
    /// MSI-X messages sent to the guest.
    interrupts: u64,
    stats: Option<stats::StatsWriter>,
    shared: Option<SharedDoorbells>,
    rdma: crate::rdmadev::RdmaDev,
    injector: Option<std::sync::Arc<ernic_core::inject::Injector>>,
}

/// The top pages of BAR 2 as memory shared with the client: the guest's
/// doorbell writes land there without a message, and [`Device::poll`]
/// takes each one by swapping [`UNRUNG`] into its word (a doorbell never
/// has bits 48-63 set, so that value is never a real one). A value written
/// again, the same as before, is a doorbell again.
///
/// A word holds the last value written, so two queues of one type ringing
/// the same page between two polls would lose the first doorbell: a driver
/// that uses these pages gives each queue a page of its own (ernic's
/// userspace driver does).
#[derive(Debug)]
struct SharedDoorbells {
    file: ernic_vfio::shm::SharedFile,
    first_page: u32,
    pages: u32,
}

/// What a shared doorbell word holds when nothing has rung it since the
/// last poll.
const UNRUNG: u64 = u64::MAX;

impl SharedDoorbells {
    /// The polled words: (offset in the mapping, offset in BAR 2).
    fn words(&self) -> impl Iterator<Item = (usize, u64)> + use<> {
        let first = u64::from(self.first_page);
        (0..u64::from(self.pages) * POLLED_TYPES).map(move |i| {
            let (page, t) = (i / POLLED_TYPES, i % POLLED_TYPES);
            let at = page * PAGE + t * 8;
            (at as usize, first * PAGE + at)
        })
    }

    /// Every polled word back to [`UNRUNG`] (a new device, a reset, a
    /// client gone).
    fn clear(&self) {
        for (at, _) in self.words() {
            self.file.map().store(at, UNRUNG);
        }
    }
}

/// Queue types a page's words are polled for (Ethernet 0-3, RDMA 5-9).
const POLLED_TYPES: u64 = 10;

impl IonicFunction {
    /// The function a device of `id` presents.
    pub fn new(id: Identity) -> IonicFunction {
        let vectors = id.vectors;
        let rdma = crate::rdmadev::RdmaDev::new(
            crate::rdmadev::RdmaLimits {
                qps: id.rdma_qps,
                cqs: id.rdma_cqs,
                mrs: id.rdma_mrs,
                ahs: id.rdma_ahs,
                ptes: id.rdma_ptes,
                queue_bytes: u64::from(id.rdma_queue_mib) << 20,
                rnr_timeout: std::time::Duration::from_millis(u64::from(id.rnr_timeout_ms)),
                request_timeout: std::time::Duration::from_millis(u64::from(id.request_timeout_ms)),
            },
            Vec::new(),
        );
        let config = Config::new(&pci::Identity {
            vendor: VENDOR,
            device: DEVICE,
            subsys_vendor: VENDOR,
            subsys: SUBSYSTEM,
            class: CLASS,
            revision: 0,
            bars: vec![
                Bar {
                    index: 0,
                    size: BAR0_SIZE,
                    wide: true,
                },
                Bar {
                    index: 2,
                    size: BAR2_SIZE,
                    wide: true,
                },
            ],
            msix: Some(Msix {
                vectors,
                table_bar: 0,
                table_offset: MSIX_TABLE,
                pba_bar: 0,
                pba_offset: MSIX_PBA,
            }),
        });
        IonicFunction {
            config,
            bar0: Bar0::new(id),
            vectors,
            doorbells: 0,
            last_doorbell: None,
            wire: None,
            endpoint: None,
            endpoint_stalled: false,
            frames: None,
            frame: vec![0; crate::eth::MAX_FRAME],
            fired: Vec::new(),
            doorbells_shared: 0,
            interrupts: 0,
            stats: None,
            shared: None,
            rdma,
            injector: None,
        }
    }

    /// Arms `injector`'s faults on this device: the Ethernet events
    /// (`rx_drop`, `rx_no_buffer`, `tx_drop`), the RDMA admin ones
    /// (`stats_vals`, `admin_err`), `dma_fault` on send WQEs, and the
    /// engine's (`send_err`, `recv_err`).
    pub fn with_injector(
        mut self,
        injector: std::sync::Arc<ernic_core::inject::Injector>,
    ) -> IonicFunction {
        self.bar0.injector = Some(injector.clone());
        self.rdma.set_injector(injector.clone());
        self.injector = Some(injector);
        self
    }

    /// The injector armed on this device (for the stats file's `faults`).
    pub fn injector(&self) -> Option<&std::sync::Arc<ernic_core::inject::Injector>> {
        self.injector.as_ref()
    }

    /// Puts the RDMA side on the TCP mesh (`--backend tcp`), known by the
    /// guest's GIDs (`ERNIC_TCP_GUEST_GIDS`).
    pub fn with_mesh(
        mut self,
        mesh: std::sync::Arc<ernic_mesh::Mesh>,
        gids: Vec<ernic_core::Gid>,
    ) -> IonicFunction {
        self.rdma.attach_mesh(mesh, gids);
        self
    }

    /// The RDMA side, for inspection.
    pub fn rdma(&self) -> &crate::rdmadev::RdmaDev {
        &self.rdma
    }

    /// Offers the top pages of BAR 2 the profile's
    /// `shared_doorbell_pages` names as shared memory (a no-op for none;
    /// the LIF already reports only the pages below them).
    pub fn with_shared_doorbells(mut self) -> std::io::Result<IonicFunction> {
        let pages = self
            .bar0
            .identity()
            .shared_doorbell_pages
            .min((BAR2_SIZE / PAGE) as u32 / 2);
        if pages == 0 {
            self.shared = None;
            return Ok(self);
        }
        let first_page = (BAR2_SIZE / PAGE) as u32 - pages;
        let file = ernic_vfio::shm::SharedFile::new(
            c"ernic-doorbells",
            BAR2_SIZE,
            u64::from(first_page) * PAGE,
            (u64::from(pages) * PAGE) as usize,
        )?;
        let shared = SharedDoorbells {
            file,
            first_page,
            pages,
        };
        shared.clear();
        self.shared = Some(shared);
        Ok(self)
    }

    /// Signals the vectors the RDMA side raised, through the interrupt
    /// controls (masked ones latch).
    fn signal_rdma(&mut self, io: &mut Io) {
        let mut raised = std::mem::take(&mut self.fired);
        for v in raised.drain(..) {
            if self.bar0.raise(v) {
                interrupt(&mut self.interrupts, io, v);
            }
        }
        self.fired = raised;
    }

    /// Runs one doorbell, however it came.
    fn ring(&mut self, io: &mut Io, d: Doorbell) {
        self.doorbells += 1;
        self.last_doorbell = Some(d);
        let fire = match (d.qtype, d.ring) {
            (qtype::ADMINQ, 0) => self.bar0.admin_doorbell(d.qid, d.index, io.dma),
            (qtype::TXQ, 0) => {
                let (wire, endpoint) = (&mut self.wire, &mut self.endpoint);
                let frames = &mut self.frames;
                let fire = self.bar0.tx_doorbell(d.qid, d.index, io.dma, &mut |f| {
                    if endpoint.as_mut().is_some_and(|e| e.claim_tx(f)) {
                        return;
                    }
                    if let Some(p) = frames.as_mut() {
                        p.run(crate::p4hook::Side::Guest, f, wire);
                        return;
                    }
                    // Without a wire, frames are completed and discarded.
                    if let Some(t) = wire.as_mut() {
                        let _ = t.send(f);
                    }
                });
                // The filter may have turned a frame back to the guest.
                self.deliver_filtered(io);
                fire
            }
            (qtype::RXQ, 0) => {
                self.bar0.rx_doorbell(d.qid, d.index);
                // Frames the filter queued may have waited for it too.
                self.deliver_filtered(io);
                // Frames an endpoint queued may have waited for this buffer.
                self.deliver_endpoint(io);
                None
            }
            (qtype::RDMA_AQ, 0) => {
                let boot = self.bar0.rdma();
                self.rdma
                    .aq_doorbell(boot, io.dma, d.qid, d.index, &mut self.fired);
                None
            }
            (qtype::RDMA_SQ, 0) => {
                let boot = self.bar0.rdma();
                self.rdma
                    .sq_doorbell(boot, io.dma, d.qid, d.index, &mut self.fired);
                None
            }
            (qtype::RDMA_RQ, 0) => {
                let boot = self.bar0.rdma();
                self.rdma
                    .rq_doorbell(boot, io.dma, d.qid, d.index, &mut self.fired);
                None
            }
            (qtype::RDMA_CQ, ring) => {
                let boot = self.bar0.rdma();
                self.rdma
                    .cq_doorbell(boot, io.dma, d.qid, ring, d.index, &mut self.fired);
                None
            }
            _ => None,
        };
        self.signal_rdma(io);
        if let Some(v) = fire {
            interrupt(&mut self.interrupts, io, v);
        }
        self.bar0.take_fired(&mut self.fired);
        for v in self.fired.drain(..) {
            interrupt(&mut self.interrupts, io, v);
        }
    }

    /// An in-process host on the segment (see [`FrameEndpoint`]).
    pub fn with_endpoint(mut self, endpoint: Box<dyn FrameEndpoint>) -> IonicFunction {
        self.endpoint = Some(endpoint);
        self
    }

    /// Every send WQE whose local memory checks pass goes to `filter`
    /// before it runs (see `rdmadev/p4send.rs`).
    pub fn with_send_filter(mut self, filter: Box<dyn crate::p4hook::SendFilter>) -> IonicFunction {
        self.rdma.set_send_filter(filter);
        self
    }

    /// Device commands 70-72 reach `control`, as far as `scope` allows
    /// (see `bar0/p4_commands.rs`).
    pub fn with_p4_control(
        mut self,
        control: Box<dyn crate::p4hook::P4Control>,
        scope: crate::p4hook::GuestScope,
    ) -> IonicFunction {
        self.bar0.set_p4_control(control, scope);
        self
    }

    /// Delivers the endpoint's queued frames while receive buffers take
    /// them; the first that finds none waits, and the rest behind it.
    fn deliver_endpoint(&mut self, io: &mut Io) {
        let Some(ep) = self.endpoint.as_mut() else {
            return;
        };
        self.endpoint_stalled = false;
        while let Some(f) = ep.peek_rx() {
            if !self.bar0.rx_room(f) {
                self.endpoint_stalled = true;
                break;
            }
            if let Some(v) = self.bar0.rx_frame(f, io.dma) {
                interrupt(&mut self.interrupts, io, v);
            }
            ep.pop_rx();
        }
    }

    /// Frames go to and come from `wire` (a TAP, or a socket).
    pub fn with_wire(mut self, wire: Wire) -> IonicFunction {
        self.wire = Some(wire);
        self
    }

    /// BAR 0, for inspection.
    pub fn bar0(&self) -> &Bar0 {
        &self.bar0
    }

    /// Doorbells rung so far, and the last one (queues come with the
    /// Ethernet and RDMA halves).
    pub fn doorbells(&self) -> (u64, Option<Doorbell>) {
        (self.doorbells, self.last_doorbell)
    }
}

impl IonicFunction {
    /// Rings every doorbell written into the shared pages since the last
    /// look; answers whether there was one.
    fn ring_shared(&mut self, io: &mut Io) -> bool {
        let Some(s) = self.shared.take() else {
            return false;
        };
        let mut rang = false;
        for (at, offset) in s.words() {
            // A plain load first: a word nobody rang costs no locked
            // instruction and leaves its cache line shared with the client.
            if s.file.map().load(at) == Some(UNRUNG) {
                continue;
            }
            let Some(v) = s.file.map().swap(at, UNRUNG) else {
                continue;
            };
            if v == UNRUNG {
                continue;
            }
            if let Some(d) = Doorbell::decode(offset, v) {
                self.doorbells_shared += 1;
                self.ring(io, d);
                rang = true;
            }
        }
        self.shared = Some(s);
        rang
    }
}

impl Device for IonicFunction {
    fn flags(&self) -> u32 {
        proto::DEVICE_FLAGS_PCI | proto::DEVICE_FLAGS_RESET
    }

    fn regions(&self) -> Vec<RegionInfo> {
        let rw = proto::REGION_READ | proto::REGION_WRITE;
        (0..pci::region::COUNT)
            .map(|index| {
                let size = match index {
                    pci::region::BAR0 => BAR0_SIZE,
                    pci::region::BAR2 => BAR2_SIZE,
                    pci::region::CONFIG => pci::CONFIG_SIZE as u64,
                    _ => 0,
                };
                let mut r = RegionInfo {
                    flags: if size > 0 { rw } else { 0 },
                    index,
                    size,
                    offset: 0,
                    sparse: vec![],
                };
                if let (pci::region::BAR2, Some(s)) = (index, &self.shared) {
                    r.flags |= proto::REGION_MMAP;
                    r.sparse = vec![(s.file.offset(), s.file.map().len() as u64)];
                }
                r
            })
            .collect()
    }

    fn irqs(&self) -> Vec<(u32, u32)> {
        (0..pci::irq::COUNT)
            .map(|i| match i {
                pci::irq::INTX => (IRQ_EVENTFD | IRQ_MASKABLE | IRQ_AUTOMASKED, 1),
                pci::irq::MSIX => (IRQ_EVENTFD | IRQ_NORESIZE, u32::from(self.vectors)),
                _ => (IRQ_EVENTFD, 0),
            })
            .collect()
    }

    fn read(&mut self, _io: &mut Io, region: u32, offset: u64, buf: &mut [u8]) -> Result<(), i32> {
        match region {
            pci::region::BAR0 => self.bar0.read(offset, buf),
            pci::region::CONFIG => self.config.read(offset, buf),
            // Doorbells are write-only; they read as zero.
            pci::region::BAR2 => buf.fill(0),
            _ => return Err(libc::EINVAL),
        }
        Ok(())
    }

    fn write(&mut self, io: &mut Io, region: u32, offset: u64, data: &[u8]) -> Result<(), i32> {
        // Stores to the shared pages that came before this one are seen
        // first, as a CPU's earlier MMIO writes reach a device first.
        self.ring_shared(io);
        match region {
            pci::region::BAR0 => {
                self.bar0.write(offset, data, io.dma);
                self.bar0.take_fired(&mut self.fired);
                for v in self.fired.drain(..) {
                    interrupt(&mut self.interrupts, io, v);
                }
            }
            pci::region::CONFIG => self.config.write(offset, data),
            pci::region::BAR2 => {
                // A doorbell is one 64-bit write; anything else is ignored.
                let Ok(v) = <[u8; 8]>::try_from(data) else {
                    return Ok(());
                };
                if let Some(d) = Doorbell::decode(offset, u64::from_le_bytes(v)) {
                    self.ring(io, d);
                }
            }
            _ => return Err(libc::EINVAL),
        }
        Ok(())
    }

    fn reset(&mut self, _io: &mut Io) {
        self.bar0.reset();
        if let Some(p) = self.frames.as_mut() {
            p.clear();
        }
        if let Some(s) = &self.shared {
            s.clear();
        }
    }

    /// A client left: doorbells it wrote and nobody took are not the next
    /// client's.
    fn detached(&mut self) {
        if let Some(s) = &self.shared {
            s.clear();
        }
    }

    /// The engine's view of guest memory goes with the window, so the
    /// client's memory is unmapped here once it withdraws it.
    fn unmapped(&mut self) {
        self.rdma.release_memory();
    }

    fn region_fd(&self, region: u32) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match (region, &self.shared) {
            (pci::region::BAR2, Some(s)) => Some(s.file.fd().as_raw_fd()),
            _ => None,
        }
    }

    fn polled(&self) -> bool {
        self.shared.is_some() || self.rdma.on_mesh()
    }

    /// Rings every doorbell whose word changed in the shared pages, and
    /// applies what mesh peers sent.
    fn poll(&mut self, io: &mut Io) -> bool {
        let boot = self.bar0.rdma();
        let mut work = self.rdma.mesh_pass(boot, io.dma, &mut self.fired);
        if work {
            self.signal_rdma(io);
        }
        work |= self.ring_shared(io);
        work
    }

    fn wait_fds(&self, out: &mut Vec<std::os::fd::RawFd>) {
        if let Some(t) = &self.wire {
            out.push(t.fd());
        }
        if let Some(e) = self.endpoint.as_ref().filter(|_| !self.endpoint_stalled) {
            out.push(e.fd());
        }
    }

    fn next_tick(&self) -> Option<std::time::Duration> {
        let now = std::time::Instant::now();
        let stats = self.stats_due();
        let rdma = self.rdma.next_deadline();
        let due = match (stats, rdma) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        due.map(|t| t.saturating_duration_since(now))
    }

    /// The core's timers, and the stats file, when due.
    fn tick(&mut self, io: &mut Io) {
        let now = std::time::Instant::now();
        if self.rdma.next_deadline().is_some_and(|t| t <= now) {
            let boot = self.bar0.rdma();
            self.rdma.tick(boot, io.dma, &mut self.fired);
            self.signal_rdma(io);
        }
        if self.stats_due().is_some_and(|t| t <= now) {
            self.write_stats();
        }
    }

    /// Frames waiting on the wire go to the guest (a bounded batch per
    /// wakeup, so the socket is served between batches).
    fn ready(&mut self, io: &mut Io) {
        self.ready_wire(io);
        self.deliver_filtered(io);
        self.deliver_endpoint(io);
    }
}

impl IonicFunction {
    fn ready_wire(&mut self, io: &mut Io) {
        for _ in 0..64 {
            let Some(wire) = self.wire.as_mut() else {
                return;
            };
            match wire.recv(&mut self.frame) {
                Ok(Some(n)) => {
                    if let Some(p) = self.frames.as_mut() {
                        // Delivered with the filter's other guest frames.
                        p.run(crate::p4hook::Side::Wire, &self.frame[..n], &mut self.wire);
                    } else if let Some(v) = self.bar0.rx_frame(&self.frame[..n], io.dma) {
                        interrupt(&mut self.interrupts, io, v);
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests;

/// Sends MSI-X vector `v` to the guest, counted in `count`.
fn interrupt(count: &mut u64, io: &mut Io, v: u16) {
    *count += 1;
    io.irqs.trigger(pci::irq::MSIX, u32::from(v));
}
