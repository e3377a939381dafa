//! The MR cache: registrations kept by page-aligned address range and
//! shared by reference count, so registering the same buffer again (NCCL
//! does, once per comm) costs a lookup instead of a registration.
//!
//! A lookup hits when the asked range lies inside a cached one (after both
//! are widened to whole pages); a hit takes a reference. Inserting a range
//! already cached is refused. Dropping a reference reports whether it was
//! the last one, so the caller deregisters exactly once.

/// Why the cache refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MrCacheError {
    /// The range is already cached (EEXIST).
    #[error("a registration of {addr:#x}+{len} is already cached")]
    Exists {
        /// The page-aligned start.
        addr: u64,
        /// The page-aligned length.
        len: u64,
    },
    /// No entry holds that handle (ENOENT).
    #[error("no cached registration holds this handle")]
    NotFound,
    /// The range wraps the address space.
    #[error("range {addr:#x}+{len} wraps the address space")]
    BadRange {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
    },
}

/// What dropping a reference did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// Other references remain.
    StillUsed,
    /// That was the last: deregister it.
    Removed,
}

#[derive(Debug, Clone)]
struct Entry<H> {
    start: u64,
    end: u64,
    refcnt: usize,
    handle: H,
}

/// The cache, over registrations of type `H`.
#[derive(Debug, Clone)]
pub struct MrCache<H> {
    page: u64,
    entries: Vec<Entry<H>>,
}

impl<H: Clone + PartialEq> MrCache<H> {
    /// A cache over pages of `page` bytes (a power of two), with room for
    /// `capacity` entries before it grows.
    ///
    /// # Panics
    ///
    /// If `page` is not a power of two.
    pub fn new(page: u64, capacity: usize) -> MrCache<H> {
        assert!(page.is_power_of_two(), "page size {page}");
        MrCache {
            page,
            entries: Vec::with_capacity(capacity),
        }
    }

    fn widen(&self, addr: u64, len: u64) -> Result<(u64, u64), MrCacheError> {
        let end = addr
            .checked_add(len.max(1))
            .and_then(|e| e.checked_add(self.page - 1))
            .ok_or(MrCacheError::BadRange { addr, len })?;
        Ok((addr & !(self.page - 1), end & !(self.page - 1)))
    }

    /// The cached registration covering `addr..addr+len`, taking a
    /// reference on it.
    pub fn lookup(&mut self, addr: u64, len: u64) -> Result<Option<H>, MrCacheError> {
        let (start, end) = self.widen(addr, len)?;
        Ok(self
            .entries
            .iter_mut()
            .find(|e| e.start <= start && end <= e.end)
            .map(|e| {
                e.refcnt += 1;
                e.handle.clone()
            }))
    }

    /// Caches `handle` as the registration of `addr..addr+len`, with one
    /// reference.
    pub fn insert(&mut self, addr: u64, len: u64, handle: H) -> Result<(), MrCacheError> {
        let (start, end) = self.widen(addr, len)?;
        if self
            .entries
            .iter()
            .any(|e| e.start == start && e.end == end)
        {
            return Err(MrCacheError::Exists {
                addr: start,
                len: end - start,
            });
        }
        self.entries.push(Entry {
            start,
            end,
            refcnt: 1,
            handle,
        });
        Ok(())
    }

    /// Drops one reference on `handle`'s entry.
    pub fn release(&mut self, handle: &H) -> Result<Released, MrCacheError> {
        let i = self
            .entries
            .iter()
            .position(|e| e.handle == *handle)
            .ok_or(MrCacheError::NotFound)?;
        self.entries[i].refcnt -= 1;
        if self.entries[i].refcnt == 0 {
            self.entries.swap_remove(i);
            Ok(Released::Removed)
        } else {
            Ok(Released::StillUsed)
        }
    }

    /// Cached entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-ofi-nccl tests/unit/mr.c: pages of 1024 bytes, entries inserted,
    /// looked up (hits take references), inserted twice (refused), and
    /// released until gone.
    #[test]
    fn upstream_scenario() {
        let page = 1024;
        let mut c: MrCache<u32> = MrCache::new(page, 32);
        let n = 64u64;
        for i in 0..n {
            let addr = i * 10 * page + 17;
            assert_eq!(c.lookup(addr, 100), Ok(None), "miss before insert");
            c.insert(addr, 100, i as u32).unwrap();
        }
        assert_eq!(c.len(), 64);
        for i in 0..n {
            let addr = i * 10 * page + 17;
            assert_eq!(
                c.insert(addr, 100, 999),
                Err(MrCacheError::Exists {
                    addr: i * 10 * page,
                    len: page
                })
            );
            // Anywhere in the same page hits.
            assert_eq!(c.lookup(i * 10 * page, page), Ok(Some(i as u32)));
            assert_eq!(c.lookup(addr + 500, 1), Ok(Some(i as u32)));
            // Reaching into the next page misses.
            assert_eq!(c.lookup(addr, page), Ok(None));
        }
        for i in 0..n as u32 {
            assert_eq!(c.release(&i), Ok(Released::StillUsed));
            assert_eq!(c.release(&i), Ok(Released::StillUsed));
            assert_eq!(c.release(&i), Ok(Released::Removed));
            assert_eq!(c.release(&i), Err(MrCacheError::NotFound));
        }
        assert!(c.is_empty());
    }

    #[test]
    fn overlapping_ranges_are_distinct_entries() {
        let mut c: MrCache<&str> = MrCache::new(4096, 4);
        c.insert(0, 8192, "big").unwrap();
        c.insert(4096, 4096, "small").unwrap();
        assert_eq!(c.lookup(100, 10), Ok(Some("big")));
        c.insert(0, 3 * 4096, "bigger").unwrap();
        assert_eq!(
            c.lookup(8192, 100),
            Ok(Some("bigger")),
            "only the widest covers it"
        );
        assert_eq!(c.release(&"small"), Ok(Released::Removed));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn zero_length_and_wrapping_ranges() {
        let mut c: MrCache<u8> = MrCache::new(4096, 1);
        c.insert(4096, 0, 1).unwrap();
        assert_eq!(c.lookup(4096 + 5, 0), Ok(Some(1)));
        assert!(matches!(
            c.insert(u64::MAX - 10, 100, 2),
            Err(MrCacheError::BadRange { .. })
        ));
        assert!(c.lookup(u64::MAX, 1).is_err());
    }
}
