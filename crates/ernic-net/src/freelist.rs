//! The freelist: a pool of entries that grows in blocks, up to a cap, and
//! never shrinks, so the data path takes and returns entries without
//! allocating once the pool has grown to its working size.
//!
//! Entries are reached by [`Entry`] handles (indices); an entry's address
//! never moves, because each block is its own allocation. A block hook can
//! register each new block's memory (rx buffers must be registered before
//! they are posted); a hook's failure fails the growth and leaves the pool
//! as it was.

/// A handle to a taken entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry(pub u32);

/// Why the pool refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FreelistError {
    /// Every entry is taken and the pool is at its cap (or does not grow).
    #[error("freelist exhausted: all {0} entries are in use")]
    Exhausted(usize),
    /// The block hook refused a new block.
    #[error("freelist growth failed: {0}")]
    Grow(String),
    /// An entry given back that is not taken.
    #[error("entry {0} returned to the freelist but it is not in use")]
    NotTaken(u32),
}

/// A hook run on each new block: its index and its entries.
pub type BlockHook<T> = Box<dyn FnMut(usize, &mut [T]) -> Result<(), String> + Send>;

/// The pool.
pub struct Freelist<T> {
    blocks: Vec<Box<[T]>>,
    /// Entry index → (block, offset) is computed from these starts.
    starts: Vec<u32>,
    free: Vec<u32>,
    taken: Vec<bool>,
    increase: usize,
    max: usize,
    make: Box<dyn FnMut() -> T + Send>,
    hook: Option<BlockHook<T>>,
}

impl<T> std::fmt::Debug for Freelist<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Freelist")
            .field("entries", &self.capacity())
            .field("free", &self.free.len())
            .field("max", &self.max)
            .finish()
    }
}

impl<T> Freelist<T> {
    /// A pool of `initial` entries made by `make`, growing by `increase`
    /// (0: never grows) up to `max` entries (0: no cap). `initial` is cut
    /// to `max`.
    pub fn new(
        initial: usize,
        increase: usize,
        max: usize,
        make: impl FnMut() -> T + Send + 'static,
    ) -> Result<Freelist<T>, FreelistError> {
        Freelist::with_hook(initial, increase, max, make, None)
    }

    /// As [`Freelist::new`], with `hook` run on every block.
    pub fn with_hook(
        initial: usize,
        increase: usize,
        max: usize,
        make: impl FnMut() -> T + Send + 'static,
        hook: Option<BlockHook<T>>,
    ) -> Result<Freelist<T>, FreelistError> {
        let max = if max == 0 { u32::MAX as usize } else { max };
        let mut fl = Freelist {
            blocks: Vec::new(),
            starts: Vec::new(),
            free: Vec::new(),
            taken: Vec::new(),
            increase,
            max,
            make: Box::new(make),
            hook,
        };
        let initial = initial.min(max);
        if initial > 0 {
            fl.grow(initial)?;
        }
        Ok(fl)
    }

    /// Entries the pool holds, taken or free.
    pub fn capacity(&self) -> usize {
        self.taken.len()
    }

    /// Entries taken.
    pub fn in_use(&self) -> usize {
        self.taken.len() - self.free.len()
    }

    /// Blocks allocated.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    fn grow(&mut self, n: usize) -> Result<(), FreelistError> {
        let n = n.min(self.max - self.capacity());
        if n == 0 {
            return Err(FreelistError::Exhausted(self.capacity()));
        }
        let mut block: Box<[T]> = (0..n).map(|_| (self.make)()).collect();
        if let Some(hook) = self.hook.as_mut() {
            hook(self.blocks.len(), &mut block).map_err(FreelistError::Grow)?;
        }
        let start = self.capacity() as u32;
        self.starts.push(start);
        self.blocks.push(block);
        self.taken.resize(self.taken.len() + n, false);
        // Lowest index on top, so entries are handed out in order.
        self.free.extend((start..start + n as u32).rev());
        Ok(())
    }

    /// Takes a free entry, growing the pool by one block if none is free.
    pub fn take(&mut self) -> Result<Entry, FreelistError> {
        if self.free.is_empty() {
            if self.increase == 0 {
                return Err(FreelistError::Exhausted(self.capacity()));
            }
            self.grow(self.increase)?;
        }
        let i = self.free.pop().expect("a block was just added");
        self.taken[i as usize] = true;
        Ok(Entry(i))
    }

    /// Gives a taken entry back.
    pub fn give(&mut self, e: Entry) -> Result<(), FreelistError> {
        match self.taken.get_mut(e.0 as usize) {
            Some(t) if *t => {
                *t = false;
                self.free.push(e.0);
                Ok(())
            }
            _ => Err(FreelistError::NotTaken(e.0)),
        }
    }

    fn locate(&self, e: Entry) -> Option<(usize, usize)> {
        if e.0 as usize >= self.capacity() {
            return None;
        }
        let b = self.starts.partition_point(|&s| s <= e.0) - 1;
        Some((b, (e.0 - self.starts[b]) as usize))
    }

    /// The entry `e` (taken or not).
    pub fn get(&self, e: Entry) -> Option<&T> {
        self.locate(e).map(|(b, o)| &self.blocks[b][o])
    }

    /// The entry `e`, to change.
    pub fn get_mut(&mut self, e: Entry) -> Option<&mut T> {
        self.locate(e).map(|(b, o)| &mut self.blocks[b][o])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// aws-ofi-nccl tests/unit/freelist.c: a pool that does not grow gives
    /// exactly its initial entries; one that grows stops at its cap.
    #[test]
    fn no_growth_gives_the_initial_entries() {
        let mut fl = Freelist::new(16, 0, 16, || 0u64).unwrap();
        let taken: Vec<Entry> = (0..16).map(|_| fl.take().unwrap()).collect();
        assert_eq!(fl.take(), Err(FreelistError::Exhausted(16)));
        for e in taken {
            fl.give(e).unwrap();
        }
        assert_eq!(fl.in_use(), 0);
        assert_eq!(fl.blocks(), 1);
    }

    #[test]
    fn growth_stops_at_the_cap_and_never_shrinks() {
        let mut fl = Freelist::new(8, 8, 32, || [0u8; 64]).unwrap();
        assert_eq!(fl.capacity(), 8);
        let mut taken = Vec::new();
        for i in 0..32 {
            let e = fl.take().unwrap();
            fl.get_mut(e).unwrap()[0] = i as u8;
            taken.push(e);
        }
        assert_eq!(fl.blocks(), 4);
        assert_eq!(fl.take(), Err(FreelistError::Exhausted(32)));
        for (i, e) in taken.iter().enumerate() {
            assert_eq!(
                fl.get(*e).unwrap()[0],
                i as u8,
                "entries keep their contents across growth"
            );
        }
        for e in taken {
            fl.give(e).unwrap();
        }
        assert_eq!(
            (fl.capacity(), fl.blocks(), fl.in_use()),
            (32, 4, 0),
            "never shrinks"
        );
    }

    #[test]
    fn initial_is_cut_to_the_cap_and_a_cap_of_zero_is_none() {
        let fl = Freelist::new(100, 0, 10, || ()).unwrap();
        assert_eq!(fl.capacity(), 10);
        let mut fl = Freelist::new(1, 1, 0, || ()).unwrap();
        for _ in 0..1000 {
            fl.take().unwrap();
        }
        assert_eq!(fl.capacity(), 1000);
    }

    #[test]
    fn the_last_block_is_cut_to_the_cap() {
        let mut fl = Freelist::new(3, 5, 10, || ()).unwrap();
        for _ in 0..10 {
            fl.take().unwrap();
        }
        assert_eq!((fl.blocks(), fl.capacity()), (3, 10));
        assert!(fl.take().is_err());
    }

    #[test]
    fn double_and_foreign_gives_are_refused() {
        let mut fl = Freelist::new(2, 0, 2, || ()).unwrap();
        let e = fl.take().unwrap();
        fl.give(e).unwrap();
        assert_eq!(fl.give(e), Err(FreelistError::NotTaken(e.0)));
        assert_eq!(fl.give(Entry(99)), Err(FreelistError::NotTaken(99)));
    }

    #[test]
    fn the_hook_sees_every_block_and_its_failure_leaves_the_pool_intact() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let hook: BlockHook<u32> = Box::new(move |b, entries| {
            s.lock().unwrap().push((b, entries.len()));
            if b == 2 {
                return Err("registration refused".into());
            }
            for e in entries.iter_mut() {
                *e = 7;
            }
            Ok(())
        });
        let mut fl = Freelist::with_hook(4, 2, 0, || 0u32, Some(hook)).unwrap();
        let taken: Vec<Entry> = (0..6).map(|_| fl.take().unwrap()).collect();
        assert!(taken.iter().all(|e| *fl.get(*e).unwrap() == 7));
        assert_eq!(
            fl.take(),
            Err(FreelistError::Grow("registration refused".into()))
        );
        assert_eq!(fl.capacity(), 6);
        assert_eq!(*seen.lock().unwrap(), vec![(0, 4), (1, 2), (2, 2)]);
    }
}
