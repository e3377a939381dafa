//! Deterministic fault injection under any provider (ernic's or
//! libfabric's): a wrapper driven by an [`Injector`], so the same spec
//! (`--inject`, `ERNIC_INJECT`) fails the same posts of the same workload.
//!
//! - [`Event::FiAgain`]: a post (`fi_writedata`, `fi_senddata`, `fi_recv`)
//!   answers EAGAIN without reaching the provider underneath. The transport
//!   parks it and retries it from progress; each answer counts as a
//!   deferral.
//! - [`Event::FiCqError`]: a write is posted as usual, but its completion
//!   comes back as an error completion (`-FI_EAVAIL`, then `fi_cq_readerr`
//!   with `EIO`), as when the sender loses a completion to a transient
//!   fault: the bytes still land, the receiver completes, and the sender's
//!   `test` reports the error.
//!
//! Each event is counted when the post is made, so a spec names posts by
//! their order in the process (or per device, with an injector each). The
//! wrapper allocates nothing per post: its list of doomed writes holds at
//! most the writes in flight, in room reserved when the rail opens.

use std::collections::VecDeque;
use std::sync::Arc;

use ernic_core::inject::{Event, Injector};

use crate::provider::{
    Buffer, CqEntry, CqErrEntry, CqError, FiAddr, PostError, Provider, ProviderError, Rail,
};

/// A provider whose rails fail posts as `injector` says.
#[derive(Debug)]
pub struct Injected<P> {
    inner: P,
    injector: Arc<Injector>,
}

impl<P: Provider> Injected<P> {
    /// Wraps `inner`; every rail it opens shares `injector`.
    pub fn new(inner: P, injector: Arc<Injector>) -> Injected<P> {
        Injected { inner, injector }
    }

    /// The injector.
    pub fn injector(&self) -> &Arc<Injector> {
        &self.injector
    }
}

impl<P: Provider> Provider for Injected<P> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn alloc_buffer(&self, len: usize) -> Result<Option<Buffer>, ProviderError> {
        self.inner.alloc_buffer(len)
    }

    fn open_rail(&self) -> Result<Box<dyn Rail>, ProviderError> {
        Ok(Box::new(InjectedRail {
            inner: self.inner.open_rail()?,
            injector: self.injector.clone(),
            doomed: Vec::with_capacity(RESERVED),
            errors: VecDeque::with_capacity(RESERVED),
        }))
    }
}

impl Provider for Box<dyn Provider> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn open_rail(&self) -> Result<Box<dyn Rail>, ProviderError> {
        (**self).open_rail()
    }

    fn alloc_buffer(&self, len: usize) -> Result<Option<Buffer>, ProviderError> {
        (**self).alloc_buffer(len)
    }
}

/// Doomed writes a rail holds before its list grows.
const RESERVED: usize = 256;

struct InjectedRail {
    inner: Box<dyn Rail>,
    injector: Arc<Injector>,
    /// Contexts of writes whose completion becomes an error.
    doomed: Vec<u64>,
    /// Error completions waiting for `cq_readerr`.
    errors: VecDeque<CqErrEntry>,
}

impl InjectedRail {
    fn again(&self) -> Result<(), PostError> {
        match self.injector.check(Event::FiAgain) {
            Some(_) => Err(PostError::Again),
            None => Ok(()),
        }
    }
}

impl Rail for InjectedRail {
    crate::provider::pass_rail_setup_to_inner!();

    fn write_data(
        &mut self,
        addr: u64,
        len: usize,
        desc: u64,
        dest: FiAddr,
        remote: u64,
        key: u64,
        data: u32,
        context: u64,
    ) -> Result<(), PostError> {
        self.again()?;
        self.inner
            .write_data(addr, len, desc, dest, remote, key, data, context)?;
        if self.injector.check(Event::FiCqError).is_some() {
            self.doomed.push(context);
        }
        Ok(())
    }

    fn send_data(
        &mut self,
        addr: u64,
        len: usize,
        desc: u64,
        dest: FiAddr,
        data: u32,
        context: u64,
    ) -> Result<(), PostError> {
        self.again()?;
        self.inner.send_data(addr, len, desc, dest, data, context)
    }

    fn recv(&mut self, addr: u64, len: usize, desc: u64, context: u64) -> Result<(), PostError> {
        self.again()?;
        self.inner.recv(addr, len, desc, context)
    }

    fn cq_read(&mut self, out: &mut [CqEntry]) -> Result<usize, CqError> {
        if !self.errors.is_empty() {
            return Err(CqError::Avail);
        }
        let got = self.inner.cq_read(out)?;
        if self.doomed.is_empty() {
            return Ok(got);
        }
        // Doomed writes' completions become errors; the rest keep their
        // order.
        let mut kept = 0;
        for i in 0..got {
            let e = out[i];
            let doomed = match e.context {
                0 => None,
                c => self.doomed.iter().position(|&d| d == c),
            };
            match doomed {
                Some(k) => {
                    self.doomed.swap_remove(k);
                    self.errors.push_back(CqErrEntry {
                        context: e.context,
                        flags: e.flags,
                        err: libc::EIO,
                        message: "injected error completion (fi_cq_err)".into(),
                    });
                }
                None => {
                    out[kept] = e;
                    kept += 1;
                }
            }
        }
        match kept {
            0 if !self.errors.is_empty() => Err(CqError::Avail),
            0 => Err(CqError::Again),
            n => Ok(n),
        }
    }

    fn cq_readerr(&mut self) -> Option<CqErrEntry> {
        if let Some(e) = self.errors.pop_front() {
            return Some(e);
        }
        let e = self.inner.cq_readerr()?;
        // A doomed write that failed by itself: it is reported once (this
        // error), and its context, free for a later post, is not doomed.
        if let Some(k) = self.doomed.iter().position(|&d| d == e.context) {
            self.doomed.swap_remove(k);
        }
        Some(e)
    }
}
