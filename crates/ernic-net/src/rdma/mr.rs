//! Registrations: every `reg` answers a handle of its own (a slot and a
//! generation), holding one reference on a registration on every data
//! rail; with the MR cache, registrations of whole pages are shared and
//! counted. A dead handle is refused, never taken for a newer one.

use super::error::NetError;
use super::{Endpoint, MrHandle};
use crate::mr_cache::Released;
use crate::provider::MrReg;

/// Registrations are cached by whole pages of this size.
pub(super) const PAGE: u64 = 4096;
/// Registration handles one endpoint gives out at once.
pub const MAX_MR_HANDLES: usize = 1 << MR_SLOT_BITS;
/// A registration handle: its slot in the low bits, a generation above, so
/// a handle deregistered (and its slot reused) is not taken for the new one
/// until the generation wraps.
pub(super) const MR_SLOT_BITS: u32 = 20;
pub(super) const MR_SLOT_MASK: u32 = (1 << MR_SLOT_BITS) - 1;

pub(super) struct MrEntry {
    pub(super) addr: u64,
    pub(super) len: usize,
    pub(super) regs: Vec<MrReg>,
}

/// One `reg`'s handle slot: the registration it holds a reference on, and
/// the generation its handle carries.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Holder {
    pub(super) generation: u32,
    pub(super) backing: Option<u32>,
}

impl Endpoint {
    /// Registers `len` bytes of the caller's memory at `addr` on every data
    /// rail, and answers a handle of this call's own. With the MR cache (the
    /// default; `OFI_NCCL_MR_CACHE_DISABLE=1` turns it off) the whole pages
    /// around the buffer are registered, and a later registration inside
    /// them shares that registration, counted: each handle holds one
    /// reference, which its [`dereg`](Endpoint::dereg) drops.
    ///
    /// # Safety
    ///
    /// The memory (with the cache: every page it touches) must stay valid
    /// for reads and writes until [`dereg`](Endpoint::dereg), and the rails
    /// may write the buffer whenever a receive naming it is in flight.
    pub unsafe fn reg(&mut self, addr: *mut u8, len: usize) -> Result<MrHandle, NetError> {
        let slot = match self.free_holders.pop() {
            Some(s) => s,
            None if self.holders.len() < MAX_MR_HANDLES => {
                self.holders.push(Holder::default());
                (self.holders.len() - 1) as u32
            }
            None => {
                return Err(NetError::TooManyRegistrations {
                    max: MAX_MR_HANDLES,
                });
            }
        };
        // SAFETY: this function's contract, passed on.
        match unsafe { self.backing(addr, len) } {
            Ok(b) => {
                let h = &mut self.holders[slot as usize];
                h.backing = Some(b);
                Ok(MrHandle(slot | (h.generation << MR_SLOT_BITS)))
            }
            Err(e) => {
                self.free_holders.push(slot);
                Err(e)
            }
        }
    }

    /// The registration `addr..addr+len` is in, with one more reference
    /// (from the cache), or a new one.
    ///
    /// # Safety
    ///
    /// As [`reg`](Endpoint::reg).
    pub(super) unsafe fn backing(&mut self, addr: *mut u8, len: usize) -> Result<u32, NetError> {
        let (start, span) = if self.cfg.mr_cache_disable || len == 0 {
            (addr, len)
        } else {
            if let Some(h) = self
                .cache
                .lookup(addr as u64, len as u64)
                .map_err(|source| NetError::MrCache { source })?
            {
                return Ok(h);
            }
            let a = addr as u64;
            let lo = a & !(PAGE - 1);
            let hi = (a + len as u64).next_multiple_of(PAGE);
            (addr.wrapping_sub((a - lo) as usize), (hi - lo) as usize)
        };
        let mut regs = Vec::with_capacity(self.data.len());
        for d in &mut self.data {
            // SAFETY: this function's contract is the rail's (the page
            // widening stays inside pages the caller vouches for).
            match unsafe { d.rail.mr_reg(start, span) } {
                Ok(r) => regs.push(r),
                Err(source) => {
                    for (d, r) in self.data.iter_mut().zip(&regs) {
                        let _ = d.rail.mr_close(r.handle);
                    }
                    return Err(NetError::Register {
                        addr: start as u64,
                        len: span,
                        source,
                    });
                }
            }
        }
        let entry = MrEntry {
            addr: start as u64,
            len: span,
            regs,
        };
        let i = match self.mrs.iter().position(Option::is_none) {
            Some(i) => {
                self.mrs[i] = Some(entry);
                i
            }
            None => {
                self.mrs.push(Some(entry));
                self.mrs.len() - 1
            }
        } as u32;
        if !self.cfg.mr_cache_disable && len > 0 {
            if let Err(source) = self.cache.insert(start as u64, span as u64, i) {
                self.close_backing(i);
                return Err(NetError::MrCache { source });
            }
        }
        Ok(i)
    }

    pub(super) fn close_backing(&mut self, b: u32) {
        if let Some(m) = self.mrs.get_mut(b as usize).and_then(Option::take) {
            for (d, r) in self.data.iter_mut().zip(&m.regs) {
                let _ = d.rail.mr_close(r.handle);
            }
        }
    }

    /// The registration behind a live handle.
    pub(super) fn backing_of(&self, h: MrHandle) -> Result<u32, NetError> {
        let slot = h.0 & MR_SLOT_MASK;
        self.holders
            .get(slot as usize)
            .filter(|x| x.generation == h.0 >> MR_SLOT_BITS)
            .and_then(|x| x.backing)
            .ok_or(NetError::NotRegistered { handle: h.0 })
    }

    /// Drops this handle's reference on its registration (with the cache,
    /// the last reference closes it on every rail). The handle is dead
    /// after: a second `dereg` of it is refused, and touches no other
    /// holder's reference.
    pub fn dereg(&mut self, h: MrHandle) -> Result<(), NetError> {
        let b = self.backing_of(h)?;
        let slot = &mut self.holders[(h.0 & MR_SLOT_MASK) as usize];
        slot.backing = None;
        slot.generation = (slot.generation + 1) & (u32::MAX >> MR_SLOT_BITS);
        self.free_holders.push(h.0 & MR_SLOT_MASK);
        let cached =
            self.mrs[b as usize].as_ref().is_some_and(|m| m.len > 0) && !self.cfg.mr_cache_disable;
        if cached
            && self
                .cache
                .release(&b)
                .map_err(|source| NetError::MrCache { source })?
                == Released::StillUsed
        {
            return Ok(());
        }
        let m = self.mrs[b as usize]
            .take()
            .expect("a live handle's registration");
        for (d, r) in self.data.iter_mut().zip(&m.regs) {
            d.rail
                .mr_close(r.handle)
                .map_err(|source| NetError::Deregister {
                    handle: h.0,
                    source,
                })?;
        }
        Ok(())
    }

    /// Registrations held on the rails (handles sharing one through the
    /// cache count once).
    pub fn registrations(&self) -> usize {
        self.mrs.iter().flatten().count()
    }

    /// Checks that `len` bytes at `addr` lie in `h`'s registration; answers
    /// the registration.
    pub(super) fn check_mr(&self, h: MrHandle, addr: u64, len: usize) -> Result<u32, NetError> {
        let b = self.backing_of(h)?;
        let m = self.mrs[b as usize]
            .as_ref()
            .expect("a live handle's registration");
        let inside = addr >= m.addr
            && addr
                .checked_add(len as u64)
                .is_some_and(|e| e <= m.addr + m.len as u64);
        if len > 0 && !inside {
            return Err(NetError::OutsideRegistration {
                len,
                addr,
                handle: h.0,
            });
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::verbs_provider::ErnicProvider;

    #[test]
    fn each_reg_is_its_own_handle_and_a_second_dereg_is_refused() {
        let p = ErnicProvider::new(ernic_verbs::Fabric::new());
        let mut ep = Endpoint::open(&p, 1, Config::default()).unwrap();
        let mut buf = vec![0u8; 8192];
        // SAFETY: `buf` outlives the registrations, all dropped below.
        let (x, y) = unsafe {
            (
                ep.reg(buf.as_mut_ptr(), buf.len()).unwrap(),
                ep.reg(buf.as_mut_ptr(), buf.len()).unwrap(),
            )
        };
        assert_ne!(x, y);
        ep.dereg(x).unwrap();
        assert!(matches!(ep.dereg(x), Err(NetError::NotRegistered { .. })));
        assert!(ep.check_mr(y, buf.as_ptr() as u64, buf.len()).is_ok());
        // The freed slot is reused with a new generation: x stays dead.
        // SAFETY: as above.
        let z = unsafe { ep.reg(buf.as_mut_ptr(), 16).unwrap() };
        assert_eq!(z.0 & MR_SLOT_MASK, x.0 & MR_SLOT_MASK);
        assert_ne!(z, x);
        assert!(ep.dereg(x).is_err());
        ep.dereg(z).unwrap();
        ep.dereg(y).unwrap();
        assert_eq!(ep.registrations(), 0);
    }
}
