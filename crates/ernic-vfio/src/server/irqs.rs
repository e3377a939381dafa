//! [`Irqs`]: the client's interrupt eventfds by type, with their mask
//! bits and latched interrupts (`VFIO_USER_DEVICE_SET_IRQS`).

use std::os::fd::{AsRawFd, OwnedFd};

use crate::dma::errno;
use crate::proto::{
    IRQ_ACTION_MASK, IRQ_ACTION_TRIGGER, IRQ_ACTION_UNMASK, IRQ_DATA_BOOL, IRQ_DATA_EVENTFD,
    IRQ_DATA_NONE,
};

/// One interrupt type's eventfds, mask bits and latched interrupts.
#[derive(Debug, Default)]
struct IrqSet {
    fds: Vec<Option<OwnedFd>>,
    masked: Vec<bool>,
    pending: Vec<bool>,
}

/// The interrupts the client wired to eventfds (`VFIO_USER_DEVICE_SET_IRQS`).
#[derive(Debug, Default)]
pub struct Irqs {
    sets: Vec<IrqSet>,
}

fn signal(fd: &OwnedFd) {
    let one: u64 = 1;
    // SAFETY: writing 8 bytes from a live u64 to an eventfd; a full
    // counter (EAGAIN) means the interrupt is already pending.
    unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
}

impl Irqs {
    /// Sized for the device's interrupt types.
    pub fn new(counts: &[(u32, u32)]) -> Irqs {
        Irqs {
            sets: counts
                .iter()
                .map(|&(_, n)| IrqSet {
                    fds: (0..n).map(|_| None).collect(),
                    masked: vec![false; n as usize],
                    pending: vec![false; n as usize],
                })
                .collect(),
        }
    }

    /// Raises interrupt `sub` of type `index`: its eventfd is signalled,
    /// or, while masked, the interrupt is latched for the unmask. Answers
    /// whether an eventfd was signalled.
    pub fn trigger(&mut self, index: u32, sub: u32) -> bool {
        let Some(s) = self.sets.get_mut(index as usize) else {
            return false;
        };
        let i = sub as usize;
        if i >= s.fds.len() {
            return false;
        }
        if s.masked[i] {
            s.pending[i] = true;
            return false;
        }
        match &s.fds[i] {
            Some(fd) => {
                signal(fd);
                true
            }
            None => false,
        }
    }

    /// Drops every eventfd and mask (the client left).
    pub fn clear(&mut self) {
        for s in &mut self.sets {
            s.fds.iter_mut().for_each(|f| *f = None);
            s.masked.iter_mut().for_each(|m| *m = false);
            s.pending.iter_mut().for_each(|p| *p = false);
        }
    }

    pub(super) fn set(
        &mut self,
        flags: u32,
        index: u32,
        start: u32,
        count: u32,
        data: &[u8],
        fds: &mut Vec<OwnedFd>,
    ) -> Result<(), i32> {
        let s = self.sets.get_mut(index as usize).ok_or(errno::EINVAL)?;
        let total = s.fds.len();
        if flags & IRQ_DATA_NONE != 0 && flags & IRQ_ACTION_TRIGGER != 0 && start == 0 && count == 0
        {
            // Disable every interrupt of the type.
            s.fds.iter_mut().for_each(|f| *f = None);
            return Ok(());
        }
        let end = start.checked_add(count).ok_or(errno::EINVAL)? as usize;
        if end > total {
            return Err(errno::EINVAL);
        }
        let range = start as usize..end;
        if flags & IRQ_DATA_EVENTFD != 0 {
            if flags & IRQ_ACTION_TRIGGER == 0 {
                return Err(errno::ENOTSUP);
            }
            if fds.is_empty() {
                // No descriptors: de-assign the range.
                range.for_each(|i| s.fds[i] = None);
                return Ok(());
            }
            if fds.len() != count as usize {
                return Err(errno::EINVAL);
            }
            for (i, fd) in range.zip(fds.drain(..)) {
                s.fds[i] = Some(fd);
            }
            return Ok(());
        }
        // DATA_NONE (every sub-index) or DATA_BOOL (those set).
        let chosen = |k: usize| flags & IRQ_DATA_BOOL == 0 || data[k] != 0;
        for (k, i) in range.enumerate() {
            if !chosen(k) {
                continue;
            }
            if flags & IRQ_ACTION_MASK != 0 {
                s.masked[i] = true;
            } else if flags & IRQ_ACTION_UNMASK != 0 {
                s.masked[i] = false;
                if std::mem::take(&mut s.pending[i]) {
                    if let Some(fd) = &s.fds[i] {
                        signal(fd);
                    }
                }
            } else if let Some(fd) = &s.fds[i] {
                signal(fd);
            }
        }
        Ok(())
    }
}
