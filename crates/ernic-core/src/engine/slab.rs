//! The id tables of a device's objects ([`Slab`]): the lowest free id, or
//! one the front end chooses, below a limit.

use super::EngineError;

/// A simple id table: lowest free id, or an id the caller chooses.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    pub(super) items: Vec<Option<T>>,
    /// Lowest id `insert` hands out (ids below it are reserved).
    first: u32,
    max: u32,
    what: &'static str,
}

impl<T> Slab<T> {
    pub fn new(what: &'static str, max: u32) -> Slab<T> {
        Slab {
            items: Vec::new(),
            first: 0,
            max,
            what,
        }
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
        self.items.get(id as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.items.get_mut(id as usize)?.as_mut()
    }

    pub fn remove(&mut self, id: u32) -> Option<T> {
        self.items.get_mut(id as usize)?.take()
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i as u32, t.as_ref()?)))
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }
}
