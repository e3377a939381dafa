//! Events and interrupts: arming CQs, the EQ's CQ-notify entries (read
//! by their color through `fw::eqe`), the eventfd of its MSI-X vector,
//! and the doorbells that tell the device of new work.

use std::time::{Duration, Instant};

use ernic_ionic::fw::{self};
use ernic_ionic::regs::qtype;
use ernic_vfio::pci::region;

use crate::{Cq, Driver, Error};

impl Driver {
    /// Arms `cq`: the next completion (or one already waiting: arming is
    /// a level) puts an event on the EQ and raises its interrupt.
    pub fn arm_cq(&mut self, cq: &Cq) -> Result<(), Error> {
        let index = cq.cons & (cq.ring.depth() - 1);
        // Where the CQ has been read to, then the arm.
        self.ring_doorbell(None, qtype::RDMA_CQ, cq.id, 0, index)?;
        self.ring_doorbell(None, qtype::RDMA_CQ, cq.id, 1, index)
    }

    /// Interrupts of the EQ's vector seen so far.
    pub fn interrupts(&mut self) -> u64 {
        self.take_interrupts();
        self.interrupts
    }

    /// Adds what the eventfd counted since the last look; answers whether
    /// it had counted anything.
    pub(crate) fn take_interrupts(&mut self) -> bool {
        use std::io::Read;
        let mut count = [0u8; 8];
        match self.event.read(&mut count) {
            Ok(8) => {
                self.interrupts += u64::from_le_bytes(count);
                true
            }
            _ => false,
        }
    }

    /// Waits up to `timeout` for a CQ event: answers the CQ's id, or
    /// `None`. The EQ's interrupt (an eventfd) wakes the wait.
    pub fn wait_cq_event(&mut self, timeout: Duration) -> Result<Option<u32>, Error> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(cq) = self.next_cq_event() {
                return Ok(Some(cq));
            }
            let now = Instant::now();
            if now >= end {
                return Ok(None);
            }
            if !self.take_interrupts() {
                wait_readable(self.event_fd(), end - now);
            }
        }
    }

    /// The next event on the EQ (the id of a CQ that was armed and got an
    /// entry), if one is there.
    pub fn next_cq_event(&mut self) -> Option<u32> {
        let color = (self.eq_cons >> self.eq.depth_log2) & 1 == 0;
        let mut e = [0u8; fw::eqe::LEN];
        self.mem.read(self.eq.slot(self.eq_cons), &mut e);
        // A whole EQE's array: the getters cannot run past it.
        let evt = fw::eqe::Packet::new_unchecked(&e);
        if evt.color() != color {
            return None;
        }
        self.eq_cons = self.eq_cons.wrapping_add(1);
        Some(evt.qid())
    }

    /// Takes every event waiting on the EQ and the interrupts counted;
    /// answers how many events there were.
    pub fn drain_events(&mut self) -> usize {
        self.take_interrupts();
        std::iter::from_fn(|| self.next_cq_event()).count()
    }

    /// The eventfd the EQ's interrupt (MSI-X vector 0) is signalled on: a
    /// caller may block on it readable (without the driver) and then
    /// [`drain_events`](Driver::drain_events).
    pub fn event_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.event.as_fd()
    }

    /// Whether doorbells go through shared pages (no message each).
    pub fn shared_doorbells(&self) -> bool {
        self.shared.is_some()
    }

    /// A doorbell: into the shared page `page` (an offset in the shared
    /// area) when there is one, else as a BAR 2 write to page 0.
    pub(crate) fn ring_doorbell(
        &mut self,
        page: Option<usize>,
        t: u8,
        qid: u32,
        ring: u8,
        index: u32,
    ) -> Result<(), Error> {
        let v = u64::from(qid) << 24 | u64::from(ring) << 16 | u64::from(index & 0xffff);
        if let (Some(p), Some((m, _))) = (page, &self.shared) {
            // The WQE (a plain copy) before the doorbell that publishes it.
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            m.store(p + 8 * usize::from(t), v);
            return Ok(());
        }
        // A trapped doorbell is a posted write, as QEMU's client sends a
        // guest's: no reply is waited for (the socket keeps it in order
        // with what follows).
        self.c
            .region_write_posted(region::BAR2, 8 * u64::from(t), &v.to_le_bytes())?;
        Ok(())
    }
}

/// Blocks until `fd` is readable or `timeout` passes.
#[allow(unsafe_code)]
pub fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, timeout: Duration) {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one pollfd on the stack for the call's length, and a
    // descriptor the caller keeps open while it waits (it is borrowed).
    unsafe { libc::poll(&mut p, 1, ms) };
}
