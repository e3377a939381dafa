//! `ernic stats PATH [--watch]`: a stats file (docs/stats.md) for a person.
//!
//! Once: the instance's line and a table of every group's counters and
//! gauges. With `--watch`: every interval, the rates per second between the
//! last two writes of the file (bandwidth for byte counters, errors/s for
//! error counters, ops/s for the rest), refreshed in place on a terminal
//! and as successive tables otherwise. A missing, unreadable or stale file
//! is said on one line and read again; it never ends the watch. Rates are
//! taken over the file's own `written_unix_ms`, so they are exact whatever
//! the reader's timing.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use ernic_ops::{Group, StatsDoc};

/// Arguments of `ernic stats`.
#[derive(Args, Debug)]
#[command(after_help = "\
Columns: KIND and LABELS name a group (docs/stats.md), then each counter.
With --watch, RATE is per second between the last two writes of the file:
MB/s or GB/s for counters named *bytes*, errors/s for counters of errors,
drops and discards, ops/s for the rest; counters that did not move are left
out. A file older than --stale-after seconds is said to be stale.")]
pub struct StatsArgs {
    /// The stats file (an ernic tool's or ernic-server's --stats-file).
    pub path: PathBuf,
    /// Refresh every --interval with rates per second, until Ctrl-C.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between reads with --watch.
    #[arg(long, default_value_t = 1.0, value_name = "SECS")]
    pub interval: f64,
    /// With --watch, stop after this many tables (default: until Ctrl-C).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// A file written longer ago than this is stale.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    pub stale_after: f64,
}

/// Runs `ernic stats`.
pub fn run(a: &StatsArgs) -> Result<()> {
    anyhow::ensure!(
        a.interval.is_finite() && a.interval > 0.0 && a.stale_after.is_finite(),
        "--interval and --stale-after must be positive numbers of seconds"
    );
    if !a.watch {
        let doc = ernic_ops::read_stats(&a.path)?;
        print!("{}", totals(&doc, age(&doc)));
        return Ok(());
    }
    watch(a)
}

/// Seconds since `doc` was written.
fn age(doc: &StatsDoc) -> f64 {
    let now = ernic_ops::schema::unix_ms(std::time::SystemTime::now());
    now.saturating_sub(doc.written_unix_ms) as f64 / 1000.0
}

fn read_fresh(path: &Path, stale_after: f64) -> Result<StatsDoc, String> {
    let doc = ernic_ops::read_stats(path).map_err(|e| e.to_string())?;
    let age = age(&doc);
    if age > stale_after {
        return Err(format!(
            "{}: stale, written {age:.1} s ago (by {} pid {})",
            path.display(),
            doc.instance.program,
            doc.instance.pid
        ));
    }
    Ok(doc)
}

fn watch(a: &StatsArgs) -> Result<()> {
    let tty = std::io::stdout().is_terminal();
    let every = Duration::from_secs_f64(a.interval);
    let mut prev: Option<StatsDoc> = None;
    let mut shown = 0u64;
    let mut said = String::new();
    loop {
        match read_fresh(&a.path, a.stale_after) {
            Err(why) => {
                // One line per change of trouble, not one per interval.
                if why != said {
                    println!("ernic stats: {why}; retrying every {} s", a.interval);
                    said = why;
                }
                prev = None;
            }
            Ok(cur) => {
                said.clear();
                match &prev {
                    Some(p) if cur.written_unix_ms > p.written_unix_ms => {
                        let mut out = String::new();
                        if tty {
                            out.push_str("\x1b[H\x1b[2J");
                        }
                        out.push_str(&rates(p, &cur));
                        if !tty {
                            out.push('\n');
                        }
                        print!("{out}");
                        std::io::stdout().flush()?;
                        shown += 1;
                        if a.count.is_some_and(|n| shown >= n) {
                            return Ok(());
                        }
                        prev = Some(cur);
                    }
                    Some(_) => {}
                    None => prev = Some(cur),
                }
            }
        }
        std::thread::sleep(every);
    }
}

fn instance_line(doc: &StatsDoc, age: f64) -> String {
    let i = &doc.instance;
    let node = i.node_id.map_or(String::new(), |n| format!("  node {n}"));
    format!(
        "{}  {} {}  pid {}{node}  written {age:.1} s ago\n",
        i.name, i.program, i.version, i.pid
    )
}

fn labels(g: &Group) -> String {
    let l: Vec<String> = g.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if l.is_empty() {
        "-".to_string()
    } else {
        l.join(",")
    }
}

/// The instance line and every group's counters and gauges.
pub fn totals(doc: &StatsDoc, age: f64) -> String {
    let mut out = instance_line(doc, age);
    let mut rows = vec![[
        "KIND".into(),
        "LABELS".into(),
        "COUNTER".into(),
        "VALUE".into(),
    ]];
    for g in &doc.groups {
        for (c, v) in &g.counters {
            rows.push([g.kind.clone(), labels(g), c.clone(), v.to_string()]);
        }
        for (c, v) in &g.gauges {
            rows.push([g.kind.clone(), labels(g), c.clone(), format!("{v}")]);
        }
    }
    for f in &doc.faults {
        rows.push([
            "fault".into(),
            f.spec.clone(),
            "fired".into(),
            f.fired.to_string(),
        ]);
    }
    table(&mut out, &rows);
    out
}

/// What a counter counts, for its rate's unit.
fn unit_of(name: &str) -> Unit {
    if name.contains("bytes") {
        Unit::Bytes
    } else if [
        "err", "drop", "discard", "fail", "reject", "timeout", "missed",
    ]
    .iter()
    .any(|w| name.contains(w))
    {
        Unit::Errors
    } else {
        Unit::Ops
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Bytes,
    Errors,
    Ops,
}

/// A rate per second in its unit: `12.50 MB/s`, `1.20 GB/s`, `300.0 ops/s`.
fn rate_text(unit: Unit, per_s: f64) -> String {
    match unit {
        Unit::Bytes if per_s >= 1e9 => format!("{:.2} GB/s", per_s / 1e9),
        Unit::Bytes => format!("{:.2} MB/s", per_s / 1e6),
        Unit::Errors => format!("{per_s:.1} errors/s"),
        Unit::Ops => format!("{per_s:.1} ops/s"),
    }
}

/// The rates between two writes of a file: every counter that moved.
pub fn rates(prev: &StatsDoc, cur: &StatsDoc) -> String {
    let dt = cur.written_unix_ms.saturating_sub(prev.written_unix_ms) as f64 / 1000.0;
    let mut out = instance_line(cur, age(cur));
    let _ = writeln!(out, "rates over the last {dt:.1} s");
    let mut rows = vec![[
        "KIND".into(),
        "LABELS".into(),
        "COUNTER".into(),
        "RATE".into(),
        "TOTAL".into(),
    ]];
    for g in &cur.groups {
        let before = prev
            .groups
            .iter()
            .find(|p| p.kind == g.kind && p.labels == g.labels);
        for (c, &v) in &g.counters {
            let was = before.and_then(|p| p.counters.get(c)).copied().unwrap_or(0);
            // A counter that went back (a restarted writer) starts anew.
            let moved = if v >= was { v - was } else { v };
            if moved == 0 || dt <= 0.0 {
                continue;
            }
            let r = rate_text(unit_of(c), moved as f64 / dt);
            rows.push([g.kind.clone(), labels(g), c.clone(), r, v.to_string()]);
        }
    }
    if rows.len() == 1 {
        out.push_str("(no counter moved)\n");
    } else {
        table(&mut out, &rows);
    }
    out
}

/// Rows as columns padded to their widest cell, numbers on the right.
fn table<const N: usize>(out: &mut String, rows: &[[String; N]]) {
    let mut width = [0usize; N];
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    for r in rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(width).enumerate() {
            if i >= 3 {
                let _ = write!(line, "  {c:>w$}");
            } else {
                let _ = write!(line, "{c:<w$}  ");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_in_the_units_a_person_reads() {
        assert_eq!(rate_text(unit_of("tx_bytes"), 12.5e6), "12.50 MB/s");
        assert_eq!(
            rate_text(unit_of("data_received_bytes"), 2.5e9),
            "2.50 GB/s"
        );
        assert_eq!(rate_text(unit_of("req_cqe_error"), 3.0), "3.0 errors/s");
        assert_eq!(rate_text(unit_of("rdma_writes"), 300.0), "300.0 ops/s");
    }
}
