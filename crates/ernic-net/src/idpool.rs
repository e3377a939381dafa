//! A pool of integer ids kept as a bitmap: allocation hands out the lowest
//! free id. Used for MR keys (and comm ids).
//!
//! A pool of size 0 is not an error: it means the provider assigns keys, and
//! [`IdPool::allocate`] says so with [`IdError::Empty`] rather than failing
//! the registration (seed 000's "GOTCHA").

/// Why an id could not be had or given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The pool has no ids at all (the provider assigns keys).
    #[error("the id pool is empty: ids are assigned elsewhere")]
    Empty,
    /// Every id is in use.
    #[error("all {size} ids are in use")]
    Exhausted {
        /// Pool size.
        size: usize,
    },
    /// The id is not in the pool's range.
    #[error("id {id} is outside the pool of {size}")]
    OutOfRange {
        /// The id.
        id: usize,
        /// Pool size.
        size: usize,
    },
    /// The id is not allocated (a double free).
    #[error("id {id} is not in use")]
    NotInUse {
        /// The id.
        id: usize,
    },
}

/// A bitmap of free ids (bit set = free).
#[derive(Debug, Clone)]
pub struct IdPool {
    size: usize,
    free: Vec<u64>,
}

impl IdPool {
    /// A pool of ids `0..size`, all free.
    pub fn new(size: usize) -> IdPool {
        let words = size.div_ceil(64);
        let mut free = vec![u64::MAX; words];
        if size % 64 != 0 {
            if let Some(last) = free.last_mut() {
                *last = (1u64 << (size % 64)) - 1;
            }
        }
        IdPool { size, free }
    }

    /// Number of ids.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The bitmap (bit set = free), word by word.
    pub fn words(&self) -> &[u64] {
        &self.free
    }

    /// The lowest free id.
    pub fn allocate(&mut self) -> Result<usize, IdError> {
        if self.size == 0 {
            return Err(IdError::Empty);
        }
        for (w, word) in self.free.iter_mut().enumerate() {
            if *word != 0 {
                let bit = word.trailing_zeros() as usize;
                *word &= !(1u64 << bit);
                return Ok(w * 64 + bit);
            }
        }
        Err(IdError::Exhausted { size: self.size })
    }

    /// Gives an id back.
    pub fn free(&mut self, id: usize) -> Result<(), IdError> {
        if id >= self.size {
            return Err(IdError::OutOfRange {
                id,
                size: self.size,
            });
        }
        let (w, bit) = (id / 64, id % 64);
        if self.free[w] & (1u64 << bit) != 0 {
            return Err(IdError::NotInUse { id });
        }
        self.free[w] |= 1u64 << bit;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_free(p: &IdPool) {
        let size = p.size();
        for (i, w) in p.words().iter().enumerate() {
            if i == p.words().len() - 1 && size % 64 != 0 {
                assert_eq!(*w, (1u64 << (size % 64)) - 1, "size {size}");
            } else {
                assert_eq!(*w, u64::MAX, "size {size}");
            }
        }
    }

    /// aws-ofi-nccl tests/unit/idpool.c, scenario for scenario.
    #[test]
    fn upstream_scenarios() {
        for size in [0usize, 5, 63, 64, 65, 127, 128, 129, 255] {
            let mut p = IdPool::new(size);
            assert_eq!(p.size(), size);
            assert_eq!(p.words().len(), size.div_ceil(64));
            all_free(&p);
            for i in 0..size {
                assert_eq!(p.allocate(), Ok(i), "size {size}");
            }
            let exhausted = if size == 0 {
                IdError::Empty
            } else {
                IdError::Exhausted { size }
            };
            assert_eq!(p.allocate(), Err(exhausted));
            if size > 0 {
                // Holes come back lowest first.
                let mut holes = vec![size / 3, size / 2];
                holes.dedup();
                for &h in &holes {
                    p.free(h).unwrap();
                }
                for &h in &holes {
                    assert_eq!(p.allocate(), Ok(h), "size {size}");
                }
            }
            assert_eq!(p.free(size), Err(IdError::OutOfRange { id: size, size }));
            for i in 0..size {
                p.free(i).unwrap();
            }
            if size > 0 {
                assert_eq!(p.free(0), Err(IdError::NotInUse { id: 0 }), "double free");
            }
            all_free(&p);
        }
    }
}
