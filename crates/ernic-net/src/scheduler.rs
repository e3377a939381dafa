//! The threshold scheduler: which rails carry a message, and which bytes
//! each carries.
//!
//! A message smaller than `max_small_msg_size` goes whole on one rail,
//! chosen round robin. A larger one is cut into
//! `clamp(ceil(size / min_stripe_size), 1, rails)` stripes, reduced to the
//! largest divisor of the rail count not above it (so the round robin
//! start keeps every rail evenly loaded), each stripe a multiple of 128
//! bytes except the last; the stripes start on consecutive rails after the
//! previous large message's.

use crate::config::MAX_RAILS;

/// Stripes are cut on this alignment.
pub const STRIPE_ALIGN: usize = 128;

/// One rail's part of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stripe {
    /// The rail.
    pub rail: u16,
    /// Where the part starts in the message.
    pub offset: usize,
    /// Its length.
    pub len: usize,
}

/// A message's stripes (at most [`MAX_RAILS`]; no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    stripes: [Stripe; MAX_RAILS],
    n: u8,
}

impl Schedule {
    /// The stripes, in message order.
    pub fn stripes(&self) -> &[Stripe] {
        &self.stripes[..self.n as usize]
    }

    /// How many stripes.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// Never: a message has at least one stripe, even when empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// The scheduler of one endpoint.
#[derive(Debug, Clone)]
pub struct Scheduler {
    rails: usize,
    max_small: usize,
    min_stripe: usize,
    rr_small: usize,
    rr_large: usize,
}

impl Scheduler {
    /// A scheduler over `rails` rails (1 to [`MAX_RAILS`]).
    ///
    /// # Panics
    ///
    /// If `rails` is out of range or `min_stripe` is 0 (the configuration
    /// refuses both before here).
    pub fn new(rails: usize, max_small_msg_size: usize, min_stripe_size: usize) -> Scheduler {
        assert!((1..=MAX_RAILS).contains(&rails), "{rails} rails");
        assert!(min_stripe_size > 0);
        Scheduler {
            rails,
            max_small: max_small_msg_size,
            min_stripe: min_stripe_size,
            rr_small: 0,
            rr_large: 0,
        }
    }

    /// The number of stripes a message of `size` bytes is cut into.
    pub fn num_stripes(&self, size: usize) -> usize {
        if size < self.max_small {
            return 1;
        }
        let wanted = size.div_ceil(self.min_stripe).clamp(1, self.rails);
        (1..=wanted)
            .rev()
            .find(|d| self.rails % d == 0)
            .unwrap_or(1)
    }

    /// The schedule of the next message of `size` bytes.
    pub fn schedule(&mut self, size: usize) -> Schedule {
        let mut s = Schedule {
            stripes: [Stripe::default(); MAX_RAILS],
            n: 0,
        };
        if size < self.max_small {
            s.stripes[0] = Stripe {
                rail: self.rr_small as u16,
                offset: 0,
                len: size,
            };
            s.n = 1;
            self.rr_small = (self.rr_small + 1) % self.rails;
            return s;
        }
        let n = self.num_stripes(size);
        let stripe = size.div_ceil(n).div_ceil(STRIPE_ALIGN) * STRIPE_ALIGN;
        let mut offset = 0;
        for i in 0..n {
            if offset >= size && i > 0 {
                break;
            }
            let len = stripe.min(size - offset);
            s.stripes[i] = Stripe {
                rail: ((self.rr_large + i) % self.rails) as u16,
                offset,
                len,
            };
            s.n += 1;
            offset += len;
        }
        self.rr_large = (self.rr_large + n) % self.rails;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1024;

    fn covers(s: &Schedule, size: usize) {
        let mut at = 0;
        for st in s.stripes() {
            assert_eq!(st.offset, at);
            at += st.len;
        }
        assert_eq!(at, size, "stripes cover the message exactly");
    }

    /// aws-ofi-nccl tests/unit/scheduler.c: 4 rails, small threshold and
    /// minimum stripe size as configured.
    #[test]
    fn boundaries_for_four_rails() {
        let min_stripe = 128 * KIB;
        let max_small = 64 * KIB;
        let mut s = Scheduler::new(4, max_small, min_stripe);
        // Just below the small threshold: one rail, round robin.
        for want in [0u16, 1, 2, 3, 0] {
            let sch = s.schedule(max_small - 1);
            assert_eq!(sch.len(), 1);
            assert_eq!(sch.stripes()[0].rail, want);
            covers(&sch, max_small - 1);
        }
        // At the threshold: striped, one stripe (below the minimum stripe).
        let sch = s.schedule(max_small);
        assert_eq!(sch.len(), 1);
        covers(&sch, max_small);
        // Exactly one minimum stripe: one stripe.
        assert_eq!(s.num_stripes(min_stripe), 1);
        // One byte over: two stripes (2 divides 4).
        assert_eq!(s.num_stripes(min_stripe + 1), 2);
        // Three minimum stripes: 3 does not divide 4, so 2.
        assert_eq!(s.num_stripes(3 * min_stripe), 2);
        let sch = s.schedule(3 * min_stripe);
        assert_eq!(sch.len(), 2);
        assert_eq!(sch.stripes()[0].len, 3 * min_stripe / 2);
        covers(&sch, 3 * min_stripe);
        // Just over three: 4 stripes.
        assert_eq!(s.num_stripes(3 * min_stripe + 1), 4);
        let sch = s.schedule(3 * min_stripe + 1);
        assert_eq!(sch.len(), 4);
        assert!(
            sch.stripes()[..3]
                .iter()
                .all(|st| st.len % STRIPE_ALIGN == 0)
        );
        covers(&sch, 3 * min_stripe + 1);
        // Far above: never more stripes than rails.
        assert_eq!(s.num_stripes(64 * 1024 * KIB), 4);
    }

    #[test]
    fn large_messages_rotate_their_first_rail() {
        let mut s = Scheduler::new(4, 0, 1000);
        let first: Vec<u16> = (0..4).map(|_| s.schedule(2000).stripes()[0].rail).collect();
        assert_eq!(first, vec![0, 2, 0, 2]);
        let sch = s.schedule(4000);
        let rails: Vec<u16> = sch.stripes().iter().map(|st| st.rail).collect();
        assert_eq!(rails, vec![0, 1, 2, 3]);
    }

    #[test]
    fn tiny_striped_messages_drop_empty_stripes() {
        // With no small threshold, a 200-byte message asked for 2 stripes
        // of 128: the second carries 72.
        let mut s = Scheduler::new(2, 0, 100);
        let sch = s.schedule(200);
        assert_eq!(sch.len(), 2);
        covers(&sch, 200);
        let sch = s.schedule(0);
        assert_eq!(sch.len(), 1);
        covers(&sch, 0);
    }

    #[test]
    fn every_size_is_covered_for_every_rail_count() {
        for rails in 1..=MAX_RAILS {
            let mut s = Scheduler::new(rails, 4096, 1000);
            for size in [0, 1, 127, 128, 4095, 4096, 5000, 99_999, 1 << 20] {
                let sch = s.schedule(size);
                assert!(sch.len() <= rails && !sch.is_empty());
                covers(&sch, size);
            }
        }
    }
}
