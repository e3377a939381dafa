//! A PCI function's configuration space, as a vfio-user server answers it
//! (region `VFIO_PCI_CONFIG_REGION_INDEX`): a type-0 header with the
//! function's identity, memory BARs that answer the sizing protocol, INTx,
//! and an MSI-X capability pointing into a BAR.
//!
//! Offsets and bits are the PCI Local Bus specification's (type-0 header)
//! and its MSI-X capability's. Writes reach only the bits software may
//! change; everything else reads back as the device defines it.

/// vfio's region indexes of a PCI device (linux/vfio.h).
pub mod region {
    /// BAR 0.
    pub const BAR0: u32 = 0;
    /// BAR 2.
    pub const BAR2: u32 = 2;
    /// The expansion ROM.
    pub const ROM: u32 = 6;
    /// Configuration space.
    pub const CONFIG: u32 = 7;
    /// How many region indexes a PCI device has (through VGA).
    pub const COUNT: u32 = 9;
}

/// vfio's interrupt type indexes of a PCI device (linux/vfio.h).
pub mod irq {
    /// Legacy INTx.
    pub const INTX: u32 = 0;
    /// MSI.
    pub const MSI: u32 = 1;
    /// MSI-X.
    pub const MSIX: u32 = 2;
    /// AER error notification.
    pub const ERR: u32 = 3;
    /// Device request.
    pub const REQ: u32 = 4;
    /// How many types.
    pub const COUNT: u32 = 5;
}

// Type-0 header offsets.
const VENDOR: usize = 0x00;
const DEVICE: usize = 0x02;
const COMMAND: usize = 0x04;
const STATUS: usize = 0x06;
const REVISION: usize = 0x08;
const CLASS: usize = 0x09;
const HEADER_TYPE: usize = 0x0e;
const BAR_BASE: usize = 0x10;
const SUBSYS_VENDOR: usize = 0x2c;
const SUBSYS_ID: usize = 0x2e;
const CAP_PTR: usize = 0x34;
const INTR_LINE: usize = 0x3c;
const INTR_PIN: usize = 0x3d;

/// Command register bits software may set: I/O space, memory space, bus
/// master, parity error response, SERR#, INTx disable.
const COMMAND_WRITABLE: u16 = 0x0001 | 0x0002 | 0x0004 | 0x0040 | 0x0100 | 0x0400;
/// Status: the capabilities list is present.
const STATUS_CAP_LIST: u16 = 1 << 4;

/// Where the MSI-X capability sits, and its id.
const MSIX_CAP: usize = 0x40;
const CAP_ID_MSIX: u8 = 0x11;
/// MSI-X message control bits software may set: enable, function mask.
const MSIX_ENABLE: u16 = 1 << 15;
const MSIX_MASKALL: u16 = 1 << 14;

/// Bytes of configuration space served (the conventional 256; the rest of
/// PCIe's extended space reads as zero).
pub const CONFIG_SIZE: usize = 256;

/// A memory BAR: its index (0-5), size (a power of two, at least 16) and
/// whether it is 64-bit (using the next index as its upper half).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bar {
    /// BAR index.
    pub index: usize,
    /// Bytes.
    pub size: u64,
    /// A 64-bit BAR.
    pub wide: bool,
}

/// What a function is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Vendor id.
    pub vendor: u16,
    /// Device id.
    pub device: u16,
    /// Subsystem vendor id.
    pub subsys_vendor: u16,
    /// Subsystem id.
    pub subsys: u16,
    /// Class code (base, sub, programming interface), e.g. 0x020000.
    pub class: u32,
    /// Revision id.
    pub revision: u8,
    /// Memory BARs.
    pub bars: Vec<Bar>,
    /// MSI-X: vectors (1 to 2048), and the BAR and offsets of its table
    /// and pending-bit array.
    pub msix: Option<Msix>,
}

/// An MSI-X capability's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msix {
    /// Vectors.
    pub vectors: u16,
    /// BAR of the table.
    pub table_bar: u8,
    /// Offset of the table in its BAR (8-byte aligned).
    pub table_offset: u32,
    /// BAR of the pending-bit array.
    pub pba_bar: u8,
    /// Offset of the PBA in its BAR (8-byte aligned).
    pub pba_offset: u32,
}

/// A function's configuration space.
#[derive(Debug, Clone)]
pub struct Config {
    bytes: [u8; CONFIG_SIZE],
    bars: Vec<Bar>,
    msix: Option<Msix>,
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl Config {
    /// The configuration space of `id`, as after reset. Panics on a
    /// geometry no device could have (a programming error, not input).
    pub fn new(id: &Identity) -> Config {
        let mut b = [0u8; CONFIG_SIZE];
        put16(&mut b, VENDOR, id.vendor);
        put16(&mut b, DEVICE, id.device);
        b[REVISION] = id.revision;
        b[CLASS] = id.class as u8;
        b[CLASS + 1] = (id.class >> 8) as u8;
        b[CLASS + 2] = (id.class >> 16) as u8;
        b[HEADER_TYPE] = 0;
        put16(&mut b, SUBSYS_VENDOR, id.subsys_vendor);
        put16(&mut b, SUBSYS_ID, id.subsys);
        b[INTR_PIN] = 1; // INTA#
        for bar in &id.bars {
            assert!(bar.size.is_power_of_two() && bar.size >= 16, "BAR size");
            assert!(bar.index < 6 && (!bar.wide || bar.index < 5), "BAR index");
            // Memory, 32- or 64-bit, not prefetchable: type bits only.
            put32(
                &mut b,
                BAR_BASE + 4 * bar.index,
                if bar.wide { 0x4 } else { 0 },
            );
        }
        if let Some(m) = id.msix {
            assert!((1..=2048).contains(&m.vectors), "MSI-X vectors");
            put16(&mut b, STATUS, STATUS_CAP_LIST);
            b[CAP_PTR] = MSIX_CAP as u8;
            b[MSIX_CAP] = CAP_ID_MSIX;
            b[MSIX_CAP + 1] = 0; // last capability
            put16(&mut b, MSIX_CAP + 2, m.vectors - 1);
            put32(
                &mut b,
                MSIX_CAP + 4,
                m.table_offset | u32::from(m.table_bar),
            );
            put32(&mut b, MSIX_CAP + 8, m.pba_offset | u32::from(m.pba_bar));
        }
        Config {
            bytes: b,
            bars: id.bars.clone(),
            msix: id.msix,
        }
    }

    /// Reads `buf.len()` bytes at `offset` (the caller checked the range
    /// against [`CONFIG_SIZE`]; beyond it reads as zero).
    pub fn read(&self, offset: u64, buf: &mut [u8]) {
        for (i, out) in buf.iter_mut().enumerate() {
            let at = offset as usize + i;
            *out = self.bytes.get(at).copied().unwrap_or(0);
        }
    }

    /// Writes `data` at `offset`, keeping what software may not change.
    pub fn write(&mut self, offset: u64, data: &[u8]) {
        for (i, &v) in data.iter().enumerate() {
            let at = offset as usize + i;
            if at >= CONFIG_SIZE {
                break;
            }
            self.write_byte(at, v);
        }
    }

    fn write_byte(&mut self, at: usize, v: u8) {
        match at {
            COMMAND | 0x05 => {
                let shift = 8 * (at - COMMAND);
                let mask = (COMMAND_WRITABLE >> shift) as u8;
                self.bytes[at] = (self.bytes[at] & !mask) | (v & mask);
            }
            INTR_LINE => self.bytes[at] = v,
            a if (BAR_BASE..BAR_BASE + 24).contains(&a) => self.write_bar_byte(a, v),
            a if self.msix.is_some() && (MSIX_CAP + 2..MSIX_CAP + 4).contains(&a) => {
                let shift = 8 * (a - MSIX_CAP - 2);
                let mask = ((MSIX_ENABLE | MSIX_MASKALL) >> shift) as u8;
                self.bytes[a] = (self.bytes[a] & !mask) | (v & mask);
            }
            _ => {} // read-only
        }
    }

    /// A byte of a BAR register: the address bits above the BAR's size
    /// take the write, the size and type bits stay, so writing all-ones
    /// reads back the size mask (the sizing protocol).
    fn write_bar_byte(&mut self, at: usize, v: u8) {
        let slot = (at - BAR_BASE) / 4;
        let byte = (at - BAR_BASE) % 4;
        let Some((bar, upper)) = self.bars.iter().find_map(|b| {
            if b.index == slot {
                Some((*b, false))
            } else if b.wide && b.index + 1 == slot {
                Some((*b, true))
            } else {
                None
            }
        }) else {
            return; // no BAR here: reads as zero
        };
        // The writable address mask of this 32-bit half.
        let full: u64 = !(bar.size - 1);
        let half = if upper {
            (full >> 32) as u32
        } else {
            full as u32 & !0xf
        };
        let mask = (half >> (8 * byte)) as u8;
        self.bytes[at] = (self.bytes[at] & !mask) | (v & mask);
    }

    /// The MSI-X enable and function-mask bits, as software last set them.
    pub fn msix_state(&self) -> (bool, bool) {
        let c = get16(&self.bytes, MSIX_CAP + 2);
        (c & MSIX_ENABLE != 0, c & MSIX_MASKALL != 0)
    }

    /// Whether the function may master the bus (DMA) and decode memory.
    pub fn command(&self) -> u16 {
        get16(&self.bytes, COMMAND)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ionic_like() -> Identity {
        Identity {
            vendor: 0x1dd8,
            device: 0x1002,
            subsys_vendor: 0x1dd8,
            subsys: 0x5400,
            class: 0x02_00_00,
            revision: 0,
            bars: vec![
                Bar {
                    index: 0,
                    size: 64 << 10,
                    wide: true,
                },
                Bar {
                    index: 2,
                    size: 4 << 20,
                    wide: true,
                },
            ],
            msix: Some(Msix {
                vectors: 32,
                table_bar: 0,
                table_offset: 0x8000,
                pba_bar: 0,
                pba_offset: 0xa000,
            }),
        }
    }

    fn r32(c: &Config, at: u64) -> u32 {
        let mut b = [0u8; 4];
        c.read(at, &mut b);
        u32::from_le_bytes(b)
    }

    // The type-0 header: vendor 0x00, device 0x02, command 0x04, status
    // 0x06, revision 0x08, class 0x09-0x0b, header type 0x0e, BARs 0x10,
    // subsystem vendor 0x2c, subsystem 0x2e, capabilities 0x34, interrupt
    // line 0x3c and pin 0x3d.
    #[test]
    fn the_header_holds_the_identity_where_pci_puts_it() {
        let c = Config::new(&ionic_like());
        assert_eq!(r32(&c, 0x00), 0x1002_1dd8);
        assert_eq!(r32(&c, 0x08), 0x0200_0000, "class 02:00:00, revision 0");
        assert_eq!(r32(&c, 0x2c), 0x5400_1dd8);
        assert_eq!(r32(&c, 0x04) >> 16, 0x10, "status: capability list");
        assert_eq!(r32(&c, 0x34) & 0xff, 0x40);
        assert_eq!(r32(&c, 0x3c) >> 8 & 0xff, 1, "INTA#");
        assert_eq!(r32(&c, 0x10), 0x4, "BAR0: 64-bit memory");
        assert_eq!(r32(&c, 0x18), 0x4, "BAR2: 64-bit memory");
    }

    // MSI-X: id 0x11, next, message control (table size - 1, enable bit
    // 15, function mask bit 14), table offset/BIR, PBA offset/BIR.
    #[test]
    fn the_msix_capability_describes_the_table_and_pba() {
        let mut c = Config::new(&ionic_like());
        assert_eq!(r32(&c, 0x40), 0x001f_0011, "32 vectors, disabled");
        assert_eq!(r32(&c, 0x44), 0x8000, "table at BAR0 0x8000");
        assert_eq!(r32(&c, 0x48), 0xa000, "PBA at BAR0 0xa000");
        c.write(0x42, &(0xc000u16 | 0x3ff).to_le_bytes());
        assert_eq!(c.msix_state(), (true, true));
        assert_eq!(
            r32(&c, 0x40) >> 16 & 0x7ff,
            0x1f,
            "the table size is read-only"
        );
        c.write(0x44, &0xffff_ffffu32.to_le_bytes());
        assert_eq!(r32(&c, 0x44), 0x8000, "the table location is read-only");
    }

    #[test]
    fn bars_answer_the_sizing_protocol_and_keep_their_address() {
        let mut c = Config::new(&ionic_like());
        c.write(0x10, &[0xff; 8]);
        assert_eq!(r32(&c, 0x10), 0xffff_0004, "64 KiB, 64-bit");
        assert_eq!(r32(&c, 0x14), 0xffff_ffff);
        c.write(0x18, &[0xff; 8]);
        assert_eq!(r32(&c, 0x18), 0xffc0_0004, "4 MiB");
        c.write(0x10, &0xfe10_0000u32.to_le_bytes());
        c.write(0x14, &0u32.to_le_bytes());
        assert_eq!(r32(&c, 0x10), 0xfe10_0004);
        assert_eq!(r32(&c, 0x14), 0);
        // No BAR 4 or 5: writes are dropped.
        c.write(0x20, &[0xff; 8]);
        assert_eq!(r32(&c, 0x20), 0);
    }

    #[test]
    fn only_writable_bits_change() {
        let mut c = Config::new(&ionic_like());
        c.write(0x00, &[0; 4]);
        assert_eq!(r32(&c, 0x00), 0x1002_1dd8, "identity is read-only");
        c.write(0x04, &0xffff_ffffu32.to_le_bytes());
        assert_eq!(c.command(), COMMAND_WRITABLE);
        assert_eq!(r32(&c, 0x04) >> 16, 0x10, "status unchanged");
        c.write(0x3c, &[11, 0]);
        assert_eq!(r32(&c, 0x3c) & 0xffff, 0x010b, "line writable, pin not");
        let mut past = [9u8; 8];
        c.read(252, &mut past);
        assert_eq!(past, [0; 8], "beyond the header: zero");
        c.write(250, &[1; 16]);
    }
}
