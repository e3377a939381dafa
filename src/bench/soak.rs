//! `ernic bench --soak SECS --seed N`: rounds of the same bench, each a
//! fresh run (this program again, with `--inject SPEC`) under a fault
//! schedule drawn from the seed and the round's number, printed before the
//! round runs. A round passes when the run succeeds with `#wrong` 0, or,
//! when its schedule injects error completions, when it stops on the
//! injected error and names it; anything else (other errors, wrong data,
//! a round that outlasts its bound) stops the soak with the command that
//! replays it. Rounds start until SECS have passed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::BenchArgs;

/// The longest one round may take before it counts as a hang.
const ROUND: Duration = Duration::from_secs(180);

/// A xorshift step: the schedule follows from the seed alone.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Round `round`'s fault schedule under `seed`, and whether it injects
/// error completions.
pub(super) fn schedule(seed: u64, round: u64) -> (String, bool) {
    let mut x = (seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
    for _ in 0..4 {
        next(&mut x);
    }
    let mut items = Vec::new();
    let again = match next(&mut x) % 3 {
        0 => format!("fi_eagain:every={}", 2 + next(&mut x) % 9),
        1 => {
            let of = 10 + next(&mut x) % 191;
            format!("fi_eagain:burst={}/{of}", 1 + next(&mut x) % (of / 2))
        }
        _ => {
            let mut at: Vec<u64> = (0..3).map(|_| 1 + next(&mut x) % 5000).collect();
            at.sort_unstable();
            at.dedup();
            let at: Vec<String> = at.iter().map(u64::to_string).collect();
            format!("fi_eagain:at={}", at.join(","))
        }
    };
    items.push(again);
    let cq_err = next(&mut x) % 4 == 0;
    if cq_err {
        items.push(format!("fi_cq_err:at={}", 1 + next(&mut x) % 400));
    }
    (items.join(","), cq_err)
}

/// Runs the soak.
pub(super) fn run(a: &BenchArgs, secs: u64) -> Result<()> {
    let exe = std::env::current_exe().context("finding this program")?;
    let end = Instant::now() + Duration::from_secs(secs);
    let base: Vec<String> = vec![
        "bench".into(),
        "--nodes".into(),
        a.nodes.to_string(),
        "--op".into(),
        a.op.name().into(),
        "--min-bytes".into(),
        a.min_bytes.to_string(),
        "--max-bytes".into(),
        a.max_bytes.to_string(),
        "--provider".into(),
        a.provider.to_string(),
        "--rails".into(),
        a.rails.to_string(),
        "--iters".into(),
        a.iters.to_string(),
        "--json".into(),
    ];
    let (mut round, mut passed, mut stopped) = (0u64, 0u64, 0u64);
    while Instant::now() < end {
        let (spec, cq_err) = schedule(a.seed, round);
        println!("soak round {round}: --inject {spec}");
        let t = Instant::now();
        let mut child = Command::new(&exe)
            .args(&base)
            .args(["--inject", &spec])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting a round")?;
        // Read in threads, so a chatty round never blocks on a full pipe.
        let mut out = child.stdout.take().expect("piped");
        let mut err = child.stderr.take().expect("piped");
        let o = std::thread::spawn(move || std::io::read_to_string(&mut out).unwrap_or_default());
        let e = std::thread::spawn(move || std::io::read_to_string(&mut err).unwrap_or_default());
        let status = loop {
            if let Some(st) = child.try_wait()? {
                break Some(st);
            }
            if t.elapsed() > ROUND {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let (out, err) = (o.join().unwrap_or_default(), e.join().unwrap_or_default());
        let replay = format!(
            "ernic {} --inject '{spec}'",
            base.iter()
                .map(|a| if a.contains(';') {
                    format!("'{a}'")
                } else {
                    a.clone()
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
        let Some(status) = status else {
            bail!("soak round {round} did not finish in {ROUND:?}; replay: {replay}");
        };
        let rows: Vec<serde_json::Value> = out
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let wrong: u64 = rows.iter().filter_map(|v| v["wrong"].as_u64()).sum();
        let verdict = if status.success() && wrong == 0 && !rows.is_empty() {
            passed += 1;
            "passed"
        } else if !status.success() && cq_err && err.contains("injected error completion") {
            stopped += 1;
            "stopped on its injected error completion"
        } else {
            bail!(
                "soak round {round} failed ({status}, {wrong} wrong elements): {}\nreplay: {replay}",
                err.trim()
            );
        };
        println!(
            "soak round {round}: {verdict} in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        round += 1;
    }
    println!(
        "soak: {round} rounds, {passed} passed, {stopped} stopped on an injected error, seed {}",
        a.seed
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same seed draws the same schedules, and every schedule parses.
    #[test]
    fn schedules_follow_the_seed_and_parse() {
        for round in 0..200 {
            let (s, cq) = schedule(7, round);
            assert_eq!(schedule(7, round), (s.clone(), cq));
            let i = ernic_core::Injector::parse(&s).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(i.arms(ernic_core::FaultEvent::FiCqError), cq, "{s}");
            assert!(i.arms(ernic_core::FaultEvent::FiAgain), "{s}");
        }
        assert_ne!(schedule(7, 0), schedule(8, 0));
    }
}
