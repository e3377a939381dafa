//! The bodies of the server's replies: device, region and IRQ info, and
//! region I/O.

use std::fmt;

use super::ProtoError;

/// `VFIO_DEVICE_FLAGS_RESET`.
pub const DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_PCI`.
pub const DEVICE_FLAGS_PCI: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_READ`.
pub const REGION_READ: u32 = 1 << 0;
/// `VFIO_REGION_INFO_FLAG_WRITE`.
pub const REGION_WRITE: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_MMAP`.
pub const REGION_MMAP: u32 = 1 << 2;
/// `VFIO_REGION_INFO_FLAG_CAPS`.
pub const REGION_CAPS: u32 = 1 << 3;
/// `VFIO_REGION_INFO_CAP_SPARSE_MMAP` (linux/vfio.h).
pub const CAP_SPARSE_MMAP: u16 = 1;

/// The `VFIO_USER_DEVICE_GET_INFO` reply body.
pub fn device_info(flags: u32, num_regions: u32, num_irqs: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&16u32.to_le_bytes());
    b[4..8].copy_from_slice(&flags.to_le_bytes());
    b[8..12].copy_from_slice(&num_regions.to_le_bytes());
    b[12..16].copy_from_slice(&num_irqs.to_le_bytes());
    b
}

/// A region as `VFIO_USER_DEVICE_GET_REGION_INFO` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegionInfo {
    /// `REGION_*` flags (`REGION_CAPS` is added when `sparse` is set).
    pub flags: u32,
    /// Region index.
    pub index: u32,
    /// Bytes.
    pub size: u64,
    /// The mmap offset of the region's fd.
    pub offset: u64,
    /// Mappable (offset, size) areas, for the sparse-mmap capability.
    pub sparse: Vec<(u64, u64)>,
}

impl fmt::Display for RegionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region {} ({} bytes)", self.index, self.size)
    }
}

impl RegionInfo {
    /// Reads a `VFIO_USER_DEVICE_GET_REGION_INFO` reply body (what a
    /// client does), the sparse-mmap capability included when present.
    pub fn parse(b: &[u8]) -> Result<RegionInfo, ProtoError> {
        let short = |need: usize| ProtoError::Truncated {
            what: "region info",
            need,
            got: b.len(),
        };
        if b.len() < 32 {
            return Err(short(32));
        }
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let flags = u32_at(4);
        let mut info = RegionInfo {
            flags: flags & !REGION_CAPS,
            index: u32_at(8),
            size: u64_at(16),
            offset: u64_at(24),
            sparse: Vec::new(),
        };
        let mut at = u32_at(12) as usize;
        // Each capability names the next; at most a few, never backwards.
        let mut hops = 0;
        while flags & REGION_CAPS != 0 && at != 0 && hops < 8 {
            hops += 1;
            if at < 32 || at.checked_add(8).is_none_or(|e| e > b.len()) {
                return Err(short(at.saturating_add(8)));
            }
            let id = u16::from_le_bytes([b[at], b[at + 1]]);
            let next = u32_at(at + 4) as usize;
            if id == CAP_SPARSE_MMAP {
                if at + 16 > b.len() {
                    return Err(short(at + 16));
                }
                let n = u32_at(at + 8) as usize;
                let end = n
                    .checked_mul(16)
                    .and_then(|l| l.checked_add(at + 16))
                    .filter(|&e| e <= b.len())
                    .ok_or_else(|| short(at + 16 + n.saturating_mul(16)))?;
                info.sparse = b[at + 16..end]
                    .chunks_exact(16)
                    .map(|c| {
                        (
                            u64::from_le_bytes(c[..8].try_into().unwrap()),
                            u64::from_le_bytes(c[8..].try_into().unwrap()),
                        )
                    })
                    .collect();
            }
            if next != 0 && next <= at {
                break;
            }
            at = next;
        }
        Ok(info)
    }

    /// The reply body for a request whose `argsz` is `argsz`. As with
    /// VFIO's ioctl, a reply that does not fit gives only the fixed part
    /// with `argsz` set to the size needed (and no capability), so the
    /// client can ask again with room.
    pub fn reply(&self, argsz: u32) -> Vec<u8> {
        let cap_len = if self.sparse.is_empty() {
            0
        } else {
            8 + 8 + 16 * self.sparse.len()
        };
        let need = 32 + cap_len;
        let fits = argsz as usize >= need;
        let mut flags = self.flags;
        if cap_len > 0 && fits {
            flags |= REGION_CAPS;
        }
        let mut b = Vec::with_capacity(if fits { need } else { 32 });
        b.extend_from_slice(&(need as u32).to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&self.index.to_le_bytes());
        let cap_offset: u32 = if cap_len > 0 && fits { 32 } else { 0 };
        b.extend_from_slice(&cap_offset.to_le_bytes());
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.offset.to_le_bytes());
        if cap_len > 0 && fits {
            b.extend_from_slice(&CAP_SPARSE_MMAP.to_le_bytes());
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // next: none
            b.extend_from_slice(&(self.sparse.len() as u32).to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // reserved
            for &(o, s) in &self.sparse {
                b.extend_from_slice(&o.to_le_bytes());
                b.extend_from_slice(&s.to_le_bytes());
            }
        }
        b
    }
}

/// The `VFIO_USER_DEVICE_GET_IRQ_INFO` reply body.
pub fn irq_info(flags: u32, index: u32, count: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&16u32.to_le_bytes());
    b[4..8].copy_from_slice(&flags.to_le_bytes());
    b[8..12].copy_from_slice(&index.to_le_bytes());
    b[12..16].copy_from_slice(&count.to_le_bytes());
    b
}

/// The first 16 bytes of a region read or write reply: offset, region,
/// count (a read's data follows).
pub fn region_io_reply(offset: u64, region: u32, count: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&offset.to_le_bytes());
    b[8..12].copy_from_slice(&region.to_le_bytes());
    b[12..16].copy_from_slice(&count.to_le_bytes());
    b
}
