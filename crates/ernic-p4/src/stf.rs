//! Running p4c's STF tests (`ernic p4 stf`): the statements of a `.stf`
//! file in order against a switch, as p4c's `bmv2stf.py` runs them on
//! simple_switch. `add` and `setdefault` become simple_switch_CLI lines the
//! way bmv2stf.py builds them (short names resolved, keys an `add` leaves
//! out wildcarded, STF priorities turned into bmv2's); `packet` sends a
//! packet; `expect` queues an expectation on a port. At the end (and at each
//! `wait`) every port's outputs are compared, in order, with its
//! expectations; a port with expectations must produce exactly that many
//! packets. `check_counter` is checked at once (bmv2stf.py parses it but
//! does not check it; ernic does).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;

use crate::exec::{Output, Switch};
use crate::program::MatchKind;
use crate::runtime;
use crate::text::cli;
use crate::text::stf::{
    self, CmpOp, CountType, CounterIndex, ExpectedPacket, StfAction, StfStatement, resolve,
};

/// The outcome of an STF run.
#[derive(Debug, Default)]
pub struct Report {
    /// One line per expectation checked, per failure, per control-plane
    /// output.
    pub lines: Vec<String>,
    /// Expectations met.
    pub passed: usize,
    /// Expectations not met, and statements that failed.
    pub failed: usize,
}

impl Report {
    /// Whether every expectation was met and every statement ran.
    pub fn ok(&self) -> bool {
        self.failed == 0
    }

    fn fail(&mut self, line: usize, what: impl std::fmt::Display) {
        self.failed += 1;
        self.lines.push(format!("line {line}: FAIL: {what}"));
    }
}

struct Run<'a> {
    sw: &'a mut Switch,
    expected: BTreeMap<u32, VecDeque<(usize, Option<ExpectedPacket>)>>,
    got: BTreeMap<u32, VecDeque<Vec<u8>>>,
    handles: HashMap<String, u32>,
    now_ns: u64,
    out: Vec<Output>,
    report: Report,
}

/// Runs the STF test `text` against `sw`.
pub fn run(sw: &mut Switch, text: &str) -> Report {
    let mut r = Run {
        sw,
        expected: BTreeMap::new(),
        got: BTreeMap::new(),
        handles: HashMap::new(),
        now_ns: 0,
        out: Vec::new(),
        report: Report::default(),
    };
    for item in stf::parse_stf(text) {
        match item {
            Err(e) => r.report.fail(e.line, &e),
            Ok((line, st)) => r.statement(line, st),
        }
    }
    r.check_outputs(usize::MAX);
    r.report
}

impl Run<'_> {
    fn statement(&mut self, line: usize, st: StfStatement) {
        match st {
            StfStatement::Packet { port, data } => {
                self.out.clear();
                self.sw.process(port, &data, self.now_ns, &mut self.out);
                self.now_ns += 1_000;
                for o in self.out.drain(..) {
                    self.got.entry(o.port).or_default().push_back(o.data);
                }
            }
            StfStatement::Expect { port, packet } => {
                self.expected
                    .entry(port)
                    .or_default()
                    .push_back((line, packet));
            }
            StfStatement::NoPacket => {}
            StfStatement::Wait => self.check_outputs(line),
            StfStatement::Add {
                table,
                priority,
                keys,
                action,
                handle_name,
            } => match self.add_line(&table, priority, &keys, &action) {
                Ok(cli_line) => {
                    let before = self
                        .sw
                        .state
                        .tables
                        .iter()
                        .map(|t| t.handles())
                        .collect::<Vec<_>>();
                    if self.cli(line, &cli_line) {
                        if let Some(name) = handle_name {
                            if let Some(h) = self.new_handle(&before) {
                                self.handles.insert(name, h);
                            }
                        }
                    }
                }
                Err(e) => self.report.fail(line, e),
            },
            StfStatement::SetDefault { table, action } => {
                match self.set_default_line(&table, &action) {
                    Ok(l) => {
                        self.cli(line, &l);
                    }
                    Err(e) => self.report.fail(line, e),
                }
            }
            StfStatement::RemoveAll => {
                for t in 0..self.sw.program.tables.len() {
                    if !self.sw.program.tables[t].immutable {
                        self.sw.state.tables[t].clear();
                    }
                }
            }
            StfStatement::CheckCounter {
                counter,
                index,
                check,
            } => self.check_counter(line, &counter, &index, &check),
            StfStatement::Cli {
                line: text,
                command,
            } => match command {
                Ok(c) => {
                    let mut out = String::new();
                    if let Err(e) = runtime::execute(self.sw, &c, &mut out) {
                        self.report.fail(line, format!("{text}: {}", e.printed()));
                    }
                    self.report.lines.extend(out.lines().map(str::to_owned));
                }
                Err(e) => self.report.fail(line, format!("{text}: {}", e.printed())),
            },
        }
    }

    fn cli(&mut self, line: usize, text: &str) -> bool {
        match cli::parse_line(text) {
            Ok(Some(c)) => {
                let mut out = String::new();
                match runtime::execute(self.sw, &c, &mut out) {
                    Ok(()) => true,
                    Err(e) => {
                        self.report.fail(line, format!("{text}: {}", e.printed()));
                        false
                    }
                }
            }
            Ok(None) => true,
            Err(e) => {
                self.report.fail(line, format!("{text}: {}", e.printed()));
                false
            }
        }
    }

    fn new_handle(&self, before: &[Vec<u32>]) -> Option<u32> {
        for (t, b) in self.sw.state.tables.iter().zip(before) {
            if let Some(h) = t.handles().into_iter().find(|h| !b.contains(h)) {
                return Some(h);
            }
        }
        None
    }

    fn add_line(
        &self,
        table: &str,
        priority: Option<u32>,
        keys: &[stf::StfKey],
        action: &StfAction,
    ) -> Result<String, resolve::ResolveError> {
        let p = &self.sw.program;
        let names: Vec<&str> = p.tables.iter().map(|t| t.name.as_str()).collect();
        let t = &p.tables[resolve::find_table(table, &names)?];
        let fields: Vec<(&str, &str)> = t
            .key
            .iter()
            .map(|k| (k.name.as_str(), k.kind.name()))
            .collect();
        let tokens = resolve::entry_match_tokens(keys, &fields)?;
        let anames: Vec<&str> = t
            .actions
            .iter()
            .map(|&a| p.actions[a as usize].name.as_str())
            .collect();
        let a =
            &p.actions[t.actions[resolve::find_action(&action.name, &t.name, &anames)?] as usize];
        let pnames: Vec<&str> = a.params.iter().map(|x| x.0.as_str()).collect();
        let params = resolve::action_params(action, &pnames)?;
        let kind = if matches!(t.match_type, MatchKind::Range) {
            "ternary"
        } else {
            t.match_type.name()
        };
        resolve::table_add_line(&t.name, &a.name, &tokens, &params, priority, kind)
    }

    fn set_default_line(
        &self,
        table: &str,
        action: &StfAction,
    ) -> Result<String, resolve::ResolveError> {
        let p = &self.sw.program;
        let names: Vec<&str> = p.tables.iter().map(|t| t.name.as_str()).collect();
        let t = &p.tables[resolve::find_table(table, &names)?];
        let anames: Vec<&str> = t
            .actions
            .iter()
            .map(|&a| p.actions[a as usize].name.as_str())
            .collect();
        let a =
            &p.actions[t.actions[resolve::find_action(&action.name, &t.name, &anames)?] as usize];
        let pnames: Vec<&str> = a.params.iter().map(|x| x.0.as_str()).collect();
        let params = resolve::action_params(action, &pnames)?;
        Ok(resolve::table_set_default_line(&t.name, &a.name, &params))
    }

    fn check_counter(
        &mut self,
        line: usize,
        counter: &str,
        index: &CounterIndex,
        check: &stf::CounterCheck,
    ) {
        let idx = match index {
            CounterIndex::Number(n) => cli_number(n),
            CounterIndex::Id(name) => self.handles.get(name).map(|&h| u64::from(h)),
        };
        let Some(idx) = idx else {
            self.report.fail(
                line,
                format!("check_counter {counter}: unknown index {index:?}"),
            );
            return;
        };
        let Some(want) = cli_number(&check.value) else {
            self.report.fail(
                line,
                format!("check_counter {counter}: bad value {:?}", check.value),
            );
            return;
        };
        match self.sw.counter_read(counter, idx) {
            Err(e) => self.report.fail(line, e),
            Ok((packets, bytes)) => {
                let got = if check.count == Some(CountType::Bytes) {
                    bytes
                } else {
                    packets
                };
                let ok = match check.op {
                    CmpOp::Eq => got == want,
                    CmpOp::Ne => got != want,
                    CmpOp::Lt => got < want,
                    CmpOp::Le => got <= want,
                    CmpOp::Gt => got > want,
                    CmpOp::Ge => got >= want,
                };
                if ok {
                    self.report.passed += 1;
                    self.report
                        .lines
                        .push(format!("line {line}: ok: counter {counter}[{idx}] = {got}"));
                } else {
                    self.report.fail(
                        line,
                        format!(
                            "counter {counter}[{idx}] is {got}, expected {:?} {want}",
                            check.op
                        ),
                    );
                }
            }
        }
    }

    /// Compares outputs with expectations, port by port and in order.
    fn check_outputs(&mut self, at: usize) {
        let ports: Vec<u32> = self.expected.keys().copied().collect();
        for port in ports {
            let exp = self.expected.remove(&port).unwrap_or_default();
            let mut got = self.got.remove(&port).unwrap_or_default();
            let (n_exp, n_got) = (exp.len(), got.len());
            for (line, e) in exp {
                let Some(pkt) = got.pop_front() else {
                    self.report
                        .fail(line, format!("expected a packet on port {port}, none came"));
                    continue;
                };
                match e {
                    None => {
                        self.report.passed += 1;
                        self.report
                            .lines
                            .push(format!("line {line}: ok: a packet on port {port}"));
                    }
                    Some(e) => match e.compare(&pkt) {
                        Ok(()) => {
                            self.report.passed += 1;
                            self.report
                                .lines
                                .push(format!("line {line}: ok: port {port} {}", hex(&pkt)));
                        }
                        Err(m) => self.report.fail(
                            line,
                            format!(
                                "port {port}: {m}\n  expected {}\n  received {}",
                                e.to_text(),
                                hex(&pkt)
                            ),
                        ),
                    },
                }
            }
            if n_got > n_exp {
                let line = if at == usize::MAX { 0 } else { at };
                self.report.fail(
                    line,
                    format!("Expected {n_exp} packets on port {port} got {n_got}"),
                );
            }
        }
        // Outputs on ports nothing was expected on are not checked, as in
        // bmv2stf.py; they are listed.
        for (port, pkts) in std::mem::take(&mut self.got) {
            for p in pkts {
                self.report.lines.push(format!(
                    "note: unexpected packet on port {port}: {}",
                    hex(&p)
                ));
            }
        }
    }
}

fn cli_number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02X}");
    }
    s
}
