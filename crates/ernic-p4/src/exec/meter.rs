//! Two-rate three-colour meters (RFC 2698), as bmv2's `meters.cpp` runs
//! them: rates in units (bytes or packets) per microsecond, bursts in
//! units, buckets that start full, colours green 0, yellow 1, red 2. A meter
//! whose rates were never set marks everything green. Time is passed in.

/// One rate of a meter: `(units per microsecond, burst in units)`.
pub type Rate = (f64, u64);

/// A meter cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meter {
    /// Committed then peak rate; empty when unconfigured.
    pub rates: Vec<Rate>,
    tokens: Vec<f64>,
    last_us: Option<f64>,
}

/// Green.
pub const GREEN: i128 = 0;
/// Yellow.
pub const YELLOW: i128 = 1;
/// Red.
pub const RED: i128 = 2;

impl Meter {
    /// Sets the rates (committed first, as bmv2's CLI gives them); the
    /// buckets fill.
    pub fn set_rates(&mut self, rates: Vec<Rate>) {
        self.tokens = rates.iter().map(|r| r.1 as f64).collect();
        self.rates = rates;
        self.last_us = None;
    }

    /// Measures `units` at `now_ns`, returning the colour.
    pub fn execute(&mut self, units: u64, now_ns: u64) -> i128 {
        if self.rates.is_empty() {
            return GREEN;
        }
        let now = now_ns as f64 / 1000.0;
        if let Some(last) = self.last_us {
            let dt = (now - last).max(0.0);
            for (t, r) in self.tokens.iter_mut().zip(&self.rates) {
                *t = (*t + r.0 * dt).min(r.1 as f64);
            }
        }
        self.last_us = Some(now);
        let u = units as f64;
        // Peak (the last rate) first: over it is red.
        let n = self.rates.len();
        if self.tokens[n - 1] < u {
            return RED;
        }
        if n >= 2 && self.tokens[0] < u {
            self.tokens[n - 1] -= u;
            return YELLOW;
        }
        for t in &mut self.tokens {
            *t -= u;
        }
        GREEN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2698_colours() {
        let mut m = Meter::default();
        assert_eq!(m.execute(1000, 0), GREEN, "unconfigured is green");
        // CIR 1 unit/us, CBS 100; PIR 2 units/us, PBS 200.
        m.set_rates(vec![(1.0, 100), (2.0, 200)]);
        assert_eq!(m.execute(100, 0), GREEN);
        assert_eq!(
            m.execute(100, 0),
            YELLOW,
            "committed bucket empty, peak has 100"
        );
        assert_eq!(m.execute(1, 0), RED, "both empty");
        // 50 us later: committed +50, peak +100.
        assert_eq!(m.execute(50, 50_000), GREEN);
    }
}
