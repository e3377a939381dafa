//! The ionic PCI function as a vfio-user device: its identity and config
//! space, BAR 0 (registers, MSI-X table and PBA), BAR 2 (doorbells), and
//! its interrupts (INTx and the profile's MSI-X vectors).

use ernic_vfio::dma::errno;
use ernic_vfio::pci::{self, Bar, Config, Msix};
use ernic_vfio::proto::{self, RegionInfo};
use ernic_vfio::server::{Device, Io};

use crate::bar0::{Bar0, Identity};
use crate::doorbell::{BAR2_SIZE, Doorbell};
use crate::regs::qtype;
use crate::regs::{BAR0_SIZE, MSIX_PBA, MSIX_TABLE};
use crate::tap::Tap;

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
    tap: Option<Tap>,
    frame: Vec<u8>,
}

impl IonicFunction {
    /// The function a device of `id` presents.
    pub fn new(id: Identity) -> IonicFunction {
        let vectors = id.vectors;
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
            tap: None,
            frame: vec![0; crate::eth::MAX_FRAME],
        }
    }

    /// Frames go to and come from `tap`.
    pub fn with_tap(mut self, tap: Tap) -> IonicFunction {
        self.tap = Some(tap);
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
                RegionInfo {
                    flags: if size > 0 { rw } else { 0 },
                    index,
                    size,
                    offset: 0,
                    sparse: vec![],
                }
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
            _ => return Err(errno::EINVAL),
        }
        Ok(())
    }

    fn write(&mut self, io: &mut Io, region: u32, offset: u64, data: &[u8]) -> Result<(), i32> {
        match region {
            pci::region::BAR0 => {
                for v in self.bar0.write(offset, data, io.dma) {
                    io.irqs.trigger(pci::irq::MSIX, u32::from(v));
                }
            }
            pci::region::CONFIG => self.config.write(offset, data),
            pci::region::BAR2 => {
                // A doorbell is one 64-bit write; anything else is ignored.
                let Ok(v) = <[u8; 8]>::try_from(data) else {
                    return Ok(());
                };
                if let Some(d) = Doorbell::decode(offset, u64::from_le_bytes(v)) {
                    self.doorbells += 1;
                    self.last_doorbell = Some(d);
                    let fire = match (d.qtype, d.ring) {
                        (qtype::ADMINQ, 0) => self.bar0.admin_doorbell(d.qid, d.index, io.dma),
                        (qtype::TXQ, 0) => {
                            let tap = &mut self.tap;
                            self.bar0.tx_doorbell(d.qid, d.index, io.dma, &mut |f| {
                                // Without a TAP, frames are completed and discarded.
                                if let Some(t) = tap.as_mut() {
                                    let _ = t.send(f);
                                }
                            })
                        }
                        (qtype::RXQ, 0) => {
                            self.bar0.rx_doorbell(d.qid, d.index);
                            None
                        }
                        _ => None,
                    };
                    if let Some(v) = fire {
                        io.irqs.trigger(pci::irq::MSIX, u32::from(v));
                    }
                }
            }
            _ => return Err(errno::EINVAL),
        }
        Ok(())
    }

    fn reset(&mut self, _io: &mut Io) {
        self.bar0.reset();
    }

    fn wait_fds(&self, out: &mut Vec<std::os::fd::RawFd>) {
        if let Some(t) = &self.tap {
            out.push(t.fd());
        }
    }

    /// Frames waiting on the TAP go to the guest (a bounded batch per
    /// wakeup, so the socket is served between batches).
    fn ready(&mut self, io: &mut Io) {
        let Some(tap) = self.tap.as_mut() else { return };
        for _ in 0..64 {
            match tap.recv(&mut self.frame) {
                Ok(Some(n)) => {
                    if let Some(v) = self.bar0.rx_frame(&self.frame[..n], io.dma) {
                        io.irqs.trigger(pci::irq::MSIX, u32::from(v));
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
}
