//! The id tables of a device's objects ([`Slab`]): the lowest free id, or
//! one the front end chooses, below a limit; and for QPs, a second window
//! of ids a device's own services choose from (the NVMe-oF target's
//! `0xc0xxxx`, [`SERVICE_QPN_BASE`](super::SERVICE_QPN_BASE)).

use super::EngineError;

/// A simple id table: lowest free id, or an id the caller chooses.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
    /// Lowest id `insert` hands out (ids below it are reserved).
    first: u32,
    max: u32,
    what: &'static str,
    /// The first id of the high window (`u32::MAX`: none), and its items:
    /// id `high_base + i` is `high[i]`, for `i` below `max`.
    high_base: u32,
    high: Vec<Option<T>>,
}

impl<T> Slab<T> {
    pub fn new(what: &'static str, max: u32) -> Slab<T> {
        Slab {
            items: Vec::new(),
            first: 0,
            max,
            what,
            high_base: u32::MAX,
            high: Vec::new(),
        }
    }

    /// The same table, also taking chosen ids from `base` to `base + max`.
    pub fn with_high_window(mut self, base: u32) -> Slab<T> {
        self.high_base = base;
        self
    }

    /// Where the item of a high id lives, if `id` is in the window.
    fn high_index(&self, id: u32) -> Option<usize> {
        let off = id.checked_sub(self.high_base)?;
        (off < self.max).then_some(off as usize)
    }

    /// A table whose automatic ids start at `first`.
    pub fn with_first(what: &'static str, max: u32, first: u32) -> Slab<T> {
        Slab {
            first,
            ..Slab::new(what, max)
        }
    }

    pub fn insert(&mut self, item: T) -> Result<u32, EngineError> {
        let first = self.first as usize;
        if self.items.len() < first {
            self.items.resize_with(first, || None);
        }
        let id = match self.items[first..].iter().position(Option::is_none) {
            Some(i) => first + i,
            None if (self.items.len() as u32) < self.max => {
                self.items.push(None);
                self.items.len() - 1
            }
            None => {
                return Err(EngineError::Limit {
                    what: self.what,
                    max: self.max,
                });
            }
        };
        self.items[id] = Some(item);
        Ok(id as u32)
    }

    pub fn insert_at(&mut self, id: u32, item: T) -> Result<(), EngineError> {
        if let Some(i) = self.high_index(id).filter(|_| id >= self.max) {
            if self.get(id).is_some() || self.live() >= self.max as usize {
                return Err(EngineError::IdUnavailable {
                    what: self.what,
                    id,
                });
            }
            if self.high.len() <= i {
                self.high.resize_with(i + 1, || None);
            }
            self.high[i] = Some(item);
            return Ok(());
        }
        if id >= self.max || self.get(id).is_some() {
            return Err(EngineError::IdUnavailable {
                what: self.what,
                id,
            });
        }
        let i = id as usize;
        if self.items.len() <= i {
            self.items.resize_with(i + 1, || None);
        }
        self.items[i] = Some(item);
        Ok(())
    }

    pub fn get(&self, id: u32) -> Option<&T> {
        match self.items.get(id as usize) {
            Some(slot) => slot.as_ref(),
            None => self.high.get(self.high_index(id)?)?.as_ref(),
        }
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        if (id as usize) < self.items.len() {
            return self.items[id as usize].as_mut();
        }
        let i = self.high_index(id)?;
        self.high.get_mut(i)?.as_mut()
    }

    pub fn remove(&mut self, id: u32) -> Option<T> {
        if (id as usize) < self.items.len() {
            return self.items[id as usize].take();
        }
        let i = self.high_index(id)?;
        self.high.get_mut(i)?.take()
    }

    /// Items held, in both windows.
    fn live(&self) -> usize {
        self.items
            .iter()
            .chain(&self.high)
            .filter(|t| t.is_some())
            .count()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        let base = self.high_base;
        let low = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i as u32, t.as_ref()?)));
        let high = self
            .high
            .iter()
            .enumerate()
            .filter_map(move |(i, t)| Some((base + i as u32, t.as_ref()?)));
        low.chain(high)
    }

    /// Every item, both windows, mutably.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut().chain(self.high.iter_mut()).flatten()
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.high.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_high_window_takes_chosen_ids_and_nothing_else() {
        let mut s: Slab<u32> = Slab::with_first("queue pairs", 8, 2).with_high_window(0xc0_0000);
        assert_eq!(s.insert(10).unwrap(), 2, "automatic ids stay low");
        s.insert_at(0xc0_0000, 20).unwrap();
        s.insert_at(0xc0_0007, 27).unwrap();
        assert_eq!(s.get(0xc0_0007), Some(&27));
        assert!(s.get(0xc0_0001).is_none());
        // Past the window, in use, or between the windows: refused.
        assert!(s.insert_at(0xc0_0008, 0).is_err());
        assert!(s.insert_at(0xc0_0000, 0).is_err());
        assert!(s.insert_at(100, 0).is_err());
        let ids: Vec<u32> = s.iter().map(|(id, _)| id).collect();
        assert_eq!(ids, vec![2, 0xc0_0000, 0xc0_0007]);
        for v in s.values_mut() {
            *v += 1;
        }
        assert_eq!(s.remove(0xc0_0000), Some(21));
        assert!(s.get(0xc0_0000).is_none());
        // No window: a high id is just out of range.
        let mut plain: Slab<u32> = Slab::new("cqs", 8);
        assert!(plain.insert_at(0xc0_0000, 1).is_err());
        assert!(plain.get(u32::MAX).is_none());
    }
}
