//! A provider wrapper for tests and soak runs: posts answer `EAGAIN` at
//! random, completions come back in a shuffled order, and chosen writes
//! report an error completion (the write itself still goes, as when a
//! completion is lost to a transient fault on the sender's side).
//!
//! Deterministic: everything follows from the seed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::provider::{
    Buffer, CqEntry, CqErrEntry, CqError, FiAddr, PostError, Provider, ProviderError, Rail,
};

/// What to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChaosConfig {
    /// Posts answering `EAGAIN`, per thousand.
    pub again_per_mille: u32,
    /// Shuffle each batch of completions.
    pub reorder: bool,
    /// Report every n-th write (counted over the whole provider) as
    /// failed; 0: never.
    pub fail_every_nth_write: u64,
    /// The seed.
    pub seed: u64,
}

impl Default for ChaosConfig {
    fn default() -> ChaosConfig {
        ChaosConfig {
            again_per_mille: 200,
            reorder: true,
            fail_every_nth_write: 0,
            seed: 1,
        }
    }
}

/// The wrapper.
#[derive(Debug)]
pub struct Chaos<P> {
    inner: P,
    cfg: ChaosConfig,
    rails: AtomicU64,
    writes: std::sync::Arc<AtomicU64>,
}

impl<P: Provider> Chaos<P> {
    /// Wraps `inner`.
    pub fn new(inner: P, cfg: ChaosConfig) -> Chaos<P> {
        Chaos {
            inner,
            cfg,
            rails: AtomicU64::new(0),
            writes: Default::default(),
        }
    }

    /// Writes reported as failed so far.
    pub fn failed_writes(&self) -> u64 {
        match self.cfg.fail_every_nth_write {
            0 => 0,
            n => self.writes.load(Ordering::Relaxed) / n,
        }
    }
}

impl<P: Provider> Provider for Chaos<P> {
    fn name(&self) -> String {
        format!("chaos({})", self.inner.name())
    }

    fn alloc_buffer(&self, len: usize) -> Result<Option<Buffer>, ProviderError> {
        self.inner.alloc_buffer(len)
    }

    fn open_rail(&self) -> Result<Box<dyn Rail>, ProviderError> {
        let n = self.rails.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(ChaosRail {
            inner: self.inner.open_rail()?,
            cfg: self.cfg,
            rng: self
                .cfg
                .seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(n)
                | 1,
            held: VecDeque::new(),
            errors: VecDeque::new(),
            doomed: Vec::new(),
            writes: self.writes.clone(),
            batch: vec![CqEntry::default(); 16],
        }))
    }
}

struct ChaosRail {
    inner: Box<dyn Rail>,
    cfg: ChaosConfig,
    rng: u64,
    held: VecDeque<CqEntry>,
    errors: VecDeque<CqErrEntry>,
    /// Contexts of writes whose completion becomes an error.
    doomed: Vec<u64>,
    writes: std::sync::Arc<AtomicU64>,
    batch: Vec<CqEntry>,
}

impl ChaosRail {
    fn next(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    fn again(&mut self) -> bool {
        (self.next() % 1000) < u64::from(self.cfg.again_per_mille)
    }
}

impl Rail for ChaosRail {
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
        if self.again() {
            return Err(PostError::Again);
        }
        self.inner
            .write_data(addr, len, desc, dest, remote, key, data, context)?;
        let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        if self.cfg.fail_every_nth_write > 0 && n % self.cfg.fail_every_nth_write == 0 {
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
        if self.again() {
            return Err(PostError::Again);
        }
        self.inner.send_data(addr, len, desc, dest, data, context)
    }

    fn recv(&mut self, addr: u64, len: usize, desc: u64, context: u64) -> Result<(), PostError> {
        if self.again() {
            return Err(PostError::Again);
        }
        self.inner.recv(addr, len, desc, context)
    }

    fn cq_read(&mut self, out: &mut [CqEntry]) -> Result<usize, CqError> {
        if !self.errors.is_empty() {
            return Err(CqError::Avail);
        }
        if self.held.is_empty() {
            let mut batch = std::mem::take(&mut self.batch);
            let r = self.inner.cq_read(&mut batch);
            let got = match r {
                Ok(n) => n,
                Err(CqError::Avail) => {
                    self.batch = batch;
                    return Err(CqError::Avail);
                }
                Err(e) => {
                    self.batch = batch;
                    return Err(e);
                }
            };
            if self.cfg.reorder {
                for i in (1..got).rev() {
                    let j = (self.next() % (i as u64 + 1)) as usize;
                    batch.swap(i, j);
                }
            }
            for e in &batch[..got] {
                if let Some(k) = self
                    .doomed
                    .iter()
                    .position(|&c| c == e.context && e.context != 0)
                {
                    self.doomed.swap_remove(k);
                    self.errors.push_back(CqErrEntry {
                        context: e.context,
                        flags: e.flags,
                        err: libc::EIO,
                        message: "injected error completion".into(),
                    });
                } else {
                    self.held.push_back(*e);
                }
            }
            self.batch = batch;
        }
        if self.held.is_empty() {
            return Err(if self.errors.is_empty() {
                CqError::Again
            } else {
                CqError::Avail
            });
        }
        let mut n = 0;
        while n < out.len() {
            let Some(e) = self.held.pop_front() else {
                break;
            };
            out[n] = e;
            n += 1;
        }
        Ok(n)
    }

    fn cq_readerr(&mut self) -> Option<CqErrEntry> {
        self.errors.pop_front().or_else(|| self.inner.cq_readerr())
    }
}
