//! Latency tracking for `ernic nvme perf`: a log-linear histogram of
//! nanoseconds (32 buckets an octave, so a percentile is within about 3%
//! of the true value) in a fixed array: recording allocates nothing.

/// Buckets an octave.
const SUB: u64 = 32;
/// Octaves above the linear start (up to about 2^40 ns, 18 minutes).
const OCTAVES: usize = 35;
const BUCKETS: usize = 2 * SUB as usize + OCTAVES * SUB as usize;

/// A histogram of latencies with their sum, least and greatest.
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            n: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

fn index(ns: u64) -> usize {
    if ns < 2 * SUB {
        return ns as usize;
    }
    let e = 63 - u64::from(ns.leading_zeros());
    let sub = (ns >> (e - 5)) - SUB;
    let i = 2 * SUB + (e - 6) * SUB + sub;
    (i as usize).min(BUCKETS - 1)
}

/// The least value bucket `i` holds.
fn lower(i: usize) -> u64 {
    let i = i as u64;
    if i < 2 * SUB {
        return i;
    }
    let e = (i - 2 * SUB) / SUB + 6;
    let sub = (i - 2 * SUB) % SUB;
    (SUB + sub) << (e - 5)
}

impl Histogram {
    /// Records one latency.
    pub fn record(&mut self, ns: u64) {
        self.counts[index(ns)] += 1;
        self.n += 1;
        self.sum += u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Adds another histogram's records.
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a += b;
        }
        self.n += o.n;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// Records.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean, in nanoseconds (0 with no records).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    /// Least, in nanoseconds (0 with no records).
    pub fn min(&self) -> u64 {
        if self.n == 0 { 0 } else { self.min }
    }

    /// Greatest, in nanoseconds.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value below which `p` percent of records fall (the bucket's
    /// lower bound, clamped to the records' range).
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return lower(i).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_tight() {
        let mut last = 0;
        for ns in (0..1_000_000u64).step_by(7).chain([u64::MAX / 2, u64::MAX]) {
            let i = index(ns);
            assert!(i >= last || ns < 64, "index falls at {ns}");
            last = i;
            let lo = lower(i);
            assert!(lo <= ns, "{ns} below its bucket's bound {lo}");
            if ns < 1 << 40 {
                assert!(ns - lo <= ns / 32 + 1, "{ns} far from {lo}");
            }
        }
    }

    #[test]
    fn percentiles_of_a_known_spread() {
        let mut h = Histogram::default();
        for us in 1..=100u64 {
            h.record(us * 1000);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.min(), 1000);
        assert_eq!(h.max(), 100_000);
        assert!((h.mean() - 50_500.0).abs() < 1e-6);
        let p50 = h.percentile(50.0);
        assert!((48_500..=50_000).contains(&p50), "{p50}");
        let p99 = h.percentile(99.0);
        assert!((96_000..=99_000).contains(&p99), "{p99}");
        let mut g = Histogram::default();
        g.record(5);
        g.merge(&h);
        assert_eq!((g.count(), g.min()), (101, 5));
    }
}
