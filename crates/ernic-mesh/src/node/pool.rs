//! The buffer pool: frames' buffers are reused, by size class, within a
//! bound on what the free lists hold.

/// Free buffers by size class, so the frames of large writes are reused
/// (a fresh one costs a page fault per 4 KiB when first written) and the
/// many small ones never crowd them out.
#[derive(Default)]
pub(crate) struct Pool {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
    large_bytes: usize,
}

impl Pool {
    const SMALL: usize = 64 << 10;
    const MAX_SMALL: usize = 256;
    const MAX_LARGE: usize = 32;
    const MAX_LARGE_BYTES: usize = 256 << 20;

    /// The smallest free buffer that holds `len` bytes.
    pub(super) fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        if len <= Pool::SMALL {
            if let Some(i) = self.small.iter().rposition(|b| b.capacity() >= len) {
                return Some(self.small.swap_remove(i));
            }
        }
        let i = self
            .large
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)?;
        let b = self.large.swap_remove(i);
        self.large_bytes -= b.capacity();
        Some(b)
    }

    pub(super) fn give(&mut self, b: Vec<u8>) {
        if b.capacity() <= Pool::SMALL {
            if self.small.len() < Pool::MAX_SMALL {
                self.small.push(b);
            }
        } else if self.large.len() < Pool::MAX_LARGE
            && self.large_bytes + b.capacity() <= Pool::MAX_LARGE_BYTES
        {
            self.large_bytes += b.capacity();
            self.large.push(b);
        }
    }
}

#[cfg(test)]
mod pool_tests {
    use super::Pool;

    #[test]
    fn small_buffers_never_crowd_out_large_ones_and_fit_is_best() {
        let mut p = Pool::default();
        for _ in 0..1000 {
            p.give(vec![0u8; 100]);
        }
        p.give(vec![0u8; 32 << 20]);
        p.give(vec![0u8; 16 << 20]);
        let b = p.take(10 << 20).expect("a large buffer is kept");
        assert_eq!(b.capacity(), 16 << 20, "the smallest that fits");
        assert_eq!(p.take(100).map(|b| b.capacity()), Some(100));
        assert_eq!(p.take(64 << 20), None);
        for _ in 0..20 {
            p.give(vec![0u8; 16 << 20]);
        }
        assert!(p.large_bytes <= Pool::MAX_LARGE_BYTES);
    }
}
