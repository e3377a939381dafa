//! [`Device`]: what a device served over vfio-user implements, and [`Io`],
//! what its region handlers reach.

use std::os::fd::RawFd;

use super::Irqs;
use crate::dma::Dma;
use crate::proto::RegionInfo;

/// What the device's region handlers reach: the client's memory and the
/// interrupts.
pub struct Io<'a> {
    /// The client's DMA windows.
    pub dma: &'a mut Dma,
    /// The interrupt eventfds.
    pub irqs: &'a mut Irqs,
}

/// A device served over vfio-user. Region accesses reach it already
/// checked: an existing region, a direction it allows, inside its size.
pub trait Device {
    /// `VFIO_DEVICE_FLAGS_*`.
    fn flags(&self) -> u32;
    /// The regions, by index. Fixed for the device's life: the server
    /// asks once.
    fn regions(&self) -> Vec<RegionInfo>;
    /// Per interrupt type index: (`VFIO_IRQ_INFO_*` flags, count).
    fn irqs(&self) -> Vec<(u32, u32)>;
    /// Reads `buf.len()` bytes of `region` at `offset`; an errno on failure.
    fn read(&mut self, io: &mut Io, region: u32, offset: u64, buf: &mut [u8]) -> Result<(), i32>;
    /// Writes `data` to `region` at `offset`; an errno on failure.
    fn write(&mut self, io: &mut Io, region: u32, offset: u64, data: &[u8]) -> Result<(), i32>;
    /// `VFIO_USER_DEVICE_RESET`.
    fn reset(&mut self, io: &mut Io);

    /// The client left (its windows and eventfds are gone); the device
    /// keeps its state, but may drop what only that client could use.
    fn detached(&mut self) {}

    /// A DMA window was withdrawn, or every one was (the client left): a
    /// device that keeps a [`Dma::view`] drops it now, so the withdrawn
    /// memory is unmapped at once rather than at its next access.
    fn unmapped(&mut self) {}

    /// Descriptors the server waits on beside the client's socket (a TAP,
    /// say), appended to `out`; when one is readable, [`ready`] runs.
    ///
    /// [`ready`]: Device::ready
    fn wait_fds(&self, out: &mut Vec<RawFd>) {
        let _ = out;
    }

    /// A descriptor from [`wait_fds`](Device::wait_fds) is readable.
    fn ready(&mut self, io: &mut Io) {
        let _ = io;
    }

    /// How long until the device wants [`tick`](Device::tick) (periodic
    /// work: statistics, timers); `None` for never.
    fn next_tick(&self) -> Option<std::time::Duration> {
        None
    }

    /// Periodic work, when [`next_tick`](Device::next_tick) came due.
    fn tick(&mut self, io: &mut Io) {
        let _ = io;
    }

    /// The descriptor the client may mmap for `region`'s sparse-mmap
    /// areas, sent with the region's info.
    fn region_fd(&self, region: u32) -> Option<RawFd> {
        let _ = region;
        None
    }

    /// Whether the client can write device memory without a message (a
    /// mapped area), so the server must call [`poll`](Device::poll).
    fn polled(&self) -> bool {
        false
    }

    /// Looks at the memory the client writes directly; answers whether
    /// there was work.
    fn poll(&mut self, io: &mut Io) -> bool {
        let _ = io;
        false
    }
}
