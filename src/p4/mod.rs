//! `ernic p4`: the P4 engine offline.
//!
//! - `run` sends the packets of pcap files through a bmv2 JSON program and
//!   writes what leaves it, after a simple_switch_CLI script if given.
//! - `stf` runs p4c's STF tests against a program, reporting each
//!   expectation.
//! - `bench` measures frames per second through a simple_router-like
//!   program against copying the same frames with no program.

mod bench;
mod run;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ernic_p4::exec::Switch;
use ernic_p4::program::Program;

/// `ernic p4` subcommands.
#[derive(Subcommand, Debug)]
pub enum P4Cmd {
    /// Send pcap packets through a program and write what comes out.
    #[command(after_help = run::RUN_HELP)]
    Run(run::RunArgs),
    /// Run p4c STF tests (packet/expect/add/setdefault/...) against a program.
    Stf(StfArgs),
    /// Frames per second through a simple_router-like program, against a copy.
    Bench(bench::BenchArgs),
}

/// `ernic p4 stf`.
#[derive(Args, Debug)]
pub struct StfArgs {
    /// The program: bmv2 JSON as p4c writes it.
    #[arg(long, value_name = "P.json")]
    program: String,
    /// A simple_switch_CLI script to run first.
    #[arg(long, value_name = "FILE")]
    commands: Option<String>,
    /// Print only failures and the summary.
    #[arg(long, short)]
    quiet: bool,
    /// The STF files (each against a freshly loaded program).
    #[arg(required = true, value_name = "TEST.stf")]
    tests: Vec<String>,
}

/// Runs `ernic p4`.
pub fn run(cmd: &P4Cmd) -> Result<()> {
    match cmd {
        P4Cmd::Run(a) => run::run(a),
        P4Cmd::Stf(a) => stf(a),
        P4Cmd::Bench(a) => bench::run(a),
    }
}

/// Loads a program file, saying which file a refusal is about.
pub(crate) fn load(path: &str) -> Result<Program> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading the program {path}"))?;
    Program::load(&text).with_context(|| format!("loading the program {path}"))
}

/// Runs a simple_switch_CLI script file (`-`: standard input), printing
/// its output; fails if a line failed.
pub(crate) fn commands(sw: &mut Switch, path: &str) -> Result<()> {
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading commands from standard input")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading the commands {path}"))?
    };
    let mut out = String::new();
    let failed = ernic_p4::runtime::run_script(sw, &text, &mut out);
    print!("{out}");
    if failed > 0 {
        anyhow::bail!("{failed} line(s) of {path} failed");
    }
    Ok(())
}

fn stf(a: &StfArgs) -> Result<()> {
    let program = load(&a.program)?;
    let mut failed_tests = 0;
    for t in &a.tests {
        let text = std::fs::read_to_string(t).with_context(|| format!("reading the test {t}"))?;
        let mut sw = Switch::new(program.clone());
        if let Some(c) = &a.commands {
            commands(&mut sw, c)?;
        }
        let r = ernic_p4::stf::run(&mut sw, &text);
        for l in &r.lines {
            if !a.quiet || l.contains("FAIL") {
                println!("{t}: {l}");
            }
        }
        let verdict = if r.ok() { "PASS" } else { "FAIL" };
        println!(
            "{t}: {verdict}: {} expectation(s) met, {} failed",
            r.passed, r.failed
        );
        if !r.ok() {
            failed_tests += 1;
        }
    }
    if failed_tests > 0 {
        anyhow::bail!("{failed_tests} of {} STF test(s) failed", a.tests.len());
    }
    Ok(())
}
