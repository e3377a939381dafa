//! A progress line on stderr for long transfers: bytes done of the total,
//! the percentage and the rate, redrawn at most ten times a second, and
//! only when stderr is a terminal (a log file gets no carriage returns).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Transfers smaller than this show no progress line.
pub const MIN_BYTES: u64 = 8 << 20;

/// One transfer's progress line.
pub struct Progress {
    label: String,
    total: u64,
    start: Instant,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    /// A line for `total` bytes, labelled; silent when `quiet`, when
    /// stderr is not a terminal, or when the transfer is small.
    pub fn new(label: &str, total: u64, quiet: bool) -> Progress {
        let shown = !quiet && total >= MIN_BYTES && std::io::stderr().is_terminal();
        Progress {
            label: label.to_string(),
            total,
            start: Instant::now(),
            last: None,
            shown,
        }
    }

    /// Redraws with `done` bytes (at most every 100 ms).
    pub fn update(&mut self, done: u64) {
        if !self.shown
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(Instant::now());
        self.draw(done);
    }

    fn draw(&self, done: u64) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        let pct = if self.total == 0 {
            100.0
        } else {
            100.0 * done as f64 / self.total as f64
        };
        let _ = write!(
            std::io::stderr(),
            "\r{}  {:.1} / {:.1} MiB  {pct:3.0}%  {:.1} MiB/s ",
            self.label,
            mib(done),
            mib(self.total),
            mib(done) / secs
        );
    }

    /// Draws the final state and ends the line.
    pub fn finish(&self, done: u64) {
        if self.shown {
            self.draw(done);
            let _ = writeln!(std::io::stderr());
        }
    }
}
