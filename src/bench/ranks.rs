//! The parent's side of the rank processes: started with their standard
//! input and output piped, each output read by a thread of its own into
//! one channel, so a rank that fails (it answers `FAILED AT why`) or exits
//! stops the run at once, whichever rank the parent was waiting for; the
//! ranks still running are killed then (and whenever the run ends early),
//! so a failure never leaves a ring waiting on a dead neighbour.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

/// How long the parent listens for more failures after the first.
const FAILURE_GRACE: Duration = Duration::from_millis(200);

/// A rank's `FAILED AT why` line.
struct Failure {
    rank: usize,
    /// When the rank saw it (wall-clock nanoseconds; one clock for every
    /// rank on the host).
    at: u128,
    why: String,
}

impl Failure {
    fn parse(rank: usize, line: &str) -> Option<Failure> {
        let rest = line.strip_prefix("FAILED ")?;
        let (at, why) = rest.split_once(' ').unwrap_or((rest, ""));
        Some(Failure {
            rank,
            at: at.parse().unwrap_or(u128::MAX),
            why: why.to_string(),
        })
    }
}

/// The rank processes of one run.
pub(super) struct Ranks {
    children: Vec<Child>,
    stdins: Vec<ChildStdin>,
    lines: mpsc::Receiver<(usize, Option<String>)>,
    /// Lines a rank sent before the parent asked for them.
    early: Vec<VecDeque<String>>,
}

impl Ranks {
    /// Starts one process per command.
    pub(super) fn spawn(cmds: Vec<Command>) -> Result<Ranks> {
        let (tx, lines) = mpsc::channel();
        let mut ranks = Ranks {
            children: Vec::with_capacity(cmds.len()),
            stdins: Vec::with_capacity(cmds.len()),
            lines,
            early: vec![VecDeque::new(); cmds.len()],
        };
        for (r, mut cmd) in cmds.into_iter().enumerate() {
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .context("starting a rank")?;
            ranks.stdins.push(child.stdin.take().expect("piped"));
            let out = BufReader::new(child.stdout.take().expect("piped"));
            ranks.children.push(child);
            let tx = tx.clone();
            std::thread::spawn(move || {
                for l in out.lines() {
                    let Ok(l) = l else { break };
                    if tx.send((r, Some(l))).is_err() {
                        return;
                    }
                }
                let _ = tx.send((r, None));
            });
        }
        Ok(ranks)
    }

    /// Sends `line` to every rank.
    pub(super) fn send_all(&mut self, line: &str) -> Result<()> {
        for s in &mut self.stdins {
            writeln!(s, "{line}").context("writing to a rank")?;
        }
        Ok(())
    }

    /// Sends `line` to rank `r`.
    pub(super) fn send(&mut self, r: usize, line: &str) -> Result<()> {
        writeln!(self.stdins[r], "{line}").context("writing to a rank")
    }

    /// The next line of every rank, in rank order, within `timeout`. A rank
    /// that answers `FAILED …` or exits, or a timeout, is an error that
    /// names the rank and what it was doing.
    pub(super) fn gather(&mut self, what: &str, timeout: Duration) -> Result<Vec<String>> {
        let end = Instant::now() + timeout;
        while self.early.iter().any(VecDeque::is_empty) {
            let left = end.saturating_duration_since(Instant::now());
            let (r, line) = match self.lines.recv_timeout(left) {
                Ok(x) => x,
                Err(_) => {
                    let late: Vec<usize> = (0..self.early.len())
                        .filter(|&r| self.early[r].is_empty())
                        .collect();
                    bail!("ranks {late:?} did not answer in {timeout:?} while {what}");
                }
            };
            match line {
                // The end of a rank that has answered is no failure (after
                // its last answer, it exits).
                None if !self.early[r].is_empty() => {}
                None => bail!("rank {r} exited while {what}"),
                Some(l) => match Failure::parse(r, &l) {
                    Some(first) => return Err(self.first_failure(first, what)),
                    None => self.early[r].push_back(l),
                },
            }
        }
        Ok(self
            .early
            .iter_mut()
            .map(|q| q.pop_front().expect("checked"))
            .collect())
    }

    /// The failure that came first in time of those the ranks tell within
    /// [`FAILURE_GRACE`] of `first`: one rank's failure can fail its
    /// neighbours' operations (its memory goes), and their word may reach
    /// the parent before its own.
    fn first_failure(&mut self, first: Failure, what: &str) -> anyhow::Error {
        let end = Instant::now() + FAILURE_GRACE;
        let mut earliest = first;
        let mut others = Vec::new();
        while let Ok((r, line)) = self
            .lines
            .recv_timeout(end.saturating_duration_since(Instant::now()))
        {
            let Some(f) = line.and_then(|l| Failure::parse(r, &l)) else {
                continue;
            };
            if f.at < earliest.at {
                others.push(earliest.rank);
                earliest = f;
            } else {
                others.push(f.rank);
            }
        }
        let Failure { rank, why, .. } = earliest;
        if others.is_empty() {
            anyhow!("rank {rank} failed while {what}: {why}")
        } else {
            others.sort_unstable();
            anyhow!("rank {rank} failed while {what}: {why} (then ranks {others:?} failed too)")
        }
    }

    /// Waits for every rank to exit; an exit status other than success is
    /// an error.
    pub(super) fn finish(mut self) -> Result<()> {
        for (r, c) in self.children.iter_mut().enumerate() {
            let st = c.wait().context("waiting for a rank")?;
            if !st.success() {
                return Err(anyhow!("rank {r} failed ({st})"));
            }
        }
        self.children.clear();
        Ok(())
    }
}

impl Drop for Ranks {
    fn drop(&mut self) {
        // A run that ended early: no rank is left waiting on the others.
        for c in &mut self.children {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}
