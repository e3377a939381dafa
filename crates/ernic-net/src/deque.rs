//! The pending deque: posts that met `EAGAIN`, retried in order by
//! progress. A retry that meets `EAGAIN` again goes back to the front, so
//! order is kept.

use std::collections::VecDeque;

/// A FIFO with a put-back at the front.
#[derive(Debug)]
pub struct Deque<T> {
    items: VecDeque<T>,
}

impl<T> Default for Deque<T> {
    fn default() -> Deque<T> {
        Deque {
            items: VecDeque::new(),
        }
    }
}

impl<T> Deque<T> {
    /// An empty deque with room for `cap` entries before it grows.
    pub fn with_capacity(cap: usize) -> Deque<T> {
        Deque {
            items: VecDeque::with_capacity(cap),
        }
    }

    /// Parks `item` at the back.
    pub fn push_back(&mut self, item: T) {
        self.items.push_back(item);
    }

    /// Puts `item` back at the front (its retry met `EAGAIN` again).
    pub fn push_front(&mut self, item: T) {
        self.items.push_front(item);
    }

    /// The oldest parked item.
    pub fn pop_front(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    /// Whether nothing is parked.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// How many are parked.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Removes every parked item `keep` refuses, returning them (a comm
    /// closing takes its own posts out).
    pub fn extract(&mut self, mut keep: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut out = Vec::new();
        let mut kept = VecDeque::with_capacity(self.items.len());
        for item in self.items.drain(..) {
            if keep(&item) {
                kept.push_back(item);
            } else {
                out.push(item);
            }
        }
        self.items = kept;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aws-ofi-nccl tests/unit/deque.c: insert back, insert front, remove
    /// front, in order, and empty.
    #[test]
    fn upstream_scenario() {
        let mut d = Deque::with_capacity(4);
        assert!(d.is_empty());
        assert_eq!(d.pop_front(), None);
        for i in 0..3 {
            d.push_back(i);
        }
        d.push_front(10);
        assert_eq!(d.len(), 4);
        for want in [10, 0, 1, 2] {
            assert_eq!(d.pop_front(), Some(want));
        }
        assert!(d.is_empty());
        assert_eq!(d.pop_front(), None);
    }

    #[test]
    fn extract_keeps_order() {
        let mut d = Deque::default();
        for i in 0..6 {
            d.push_back(i);
        }
        assert_eq!(d.extract(|i| i % 2 == 0), vec![1, 3, 5]);
        assert_eq!(d.pop_front(), Some(0));
        assert_eq!(d.pop_front(), Some(2));
    }
}
