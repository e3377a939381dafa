//! The simple_switch_CLI command language run against a [`Switch`]: each
//! parsed [`Command`] resolved against the program (table, action and field
//! names, key widths and kinds, parameter widths) and executed through the
//! control-plane API, printing what bmv2's CLI prints and failing with its
//! wording. A script is run line by line; a failing line is reported and
//! the rest still run, as in the CLI.

use std::fmt::Write as _;

use crate::exec::Switch;
use crate::exec::control::ControlError;
use crate::exec::tables::{EntryAction, MatchParam, TableError};
use crate::program::{MatchKind, TableImpl};
use crate::text::cli::{self, CliError, Command, OperationKind, ProfileRef};
use crate::text::key::{self, MatchText};
use crate::text::value::parse_value;

/// Runs every line of `script`, appending the CLI's output (and an error
/// line for each line that fails) to `out`; returns how many lines failed.
pub fn run_script(sw: &mut Switch, script: &str, out: &mut String) -> usize {
    let mut failed = 0;
    for (line, cmd) in cli::parse_script(script) {
        let r = cmd.and_then(|c| execute(sw, &c, out));
        if let Err(e) = r {
            failed += 1;
            let _ = writeln!(out, "line {line}: {}", e.printed());
        }
    }
    failed
}

fn table_err(e: ControlError, table: &str, action: &str) -> CliError {
    match e {
        ControlError::NoTable(t) => CliError::InvalidTableName(t),
        ControlError::NoAction(a) => CliError::TableHasNoAction {
            table: table.into(),
            action: if action.is_empty() { a } else { action.into() },
        },
        ControlError::ParamCount { action, expected } => {
            CliError::WrongParamCount { action, expected }
        }
        ControlError::NoCounter(c) => CliError::InvalidCounterName(c),
        ControlError::NoRegister(r) => CliError::InvalidRegisterName(r),
        ControlError::NoMeter(m) => CliError::InvalidMeterName(m),
        ControlError::NoProfile(p) => CliError::InvalidActionProfileName(p),
        ControlError::NoValueSet(p) => CliError::InvalidPvsName(p),
        ControlError::Table(t) => CliError::Operation {
            kind: OperationKind::Table,
            code: t.to_string(),
        },
        ControlError::Index { .. } => CliError::Operation {
            kind: OperationKind::Register,
            code: "INVALID_INDEX".into(),
        },
        ControlError::TooWide { what, .. } => CliError::RuntimeData {
            field: what,
            error: crate::text::value::ValueError::TooLarge,
        },
    }
}

/// Parses the match-key tokens of table `t`.
fn match_key(
    sw: &Switch,
    t: usize,
    tname: &str,
    tokens: &[String],
) -> Result<Vec<MatchParam>, CliError> {
    let table = &sw.program.tables[t];
    if tokens.len() != table.key.len() {
        return Err(CliError::WrongKeyCount {
            table: tname.into(),
            expected: table.key.len(),
        });
    }
    let mut key = Vec::with_capacity(tokens.len());
    for (tok, k) in tokens.iter().zip(&table.key) {
        let kind = match k.kind {
            MatchKind::Exact => key::MatchKind::Exact,
            MatchKind::Lpm => key::MatchKind::Lpm,
            MatchKind::Ternary => key::MatchKind::Ternary,
            MatchKind::Optional => key::MatchKind::Optional,
            MatchKind::Range => key::MatchKind::Range,
            MatchKind::Valid => key::MatchKind::Valid,
        };
        let m = key::parse_match(tok, kind, k.bits).map_err(CliError::MatchKey)?;
        key.push(match m {
            MatchText::Exact(v) => MatchParam::Exact(v.bytes),
            MatchText::Lpm { value, prefix_len } => MatchParam::Lpm(value.bytes, prefix_len),
            MatchText::Ternary { value, mask } => MatchParam::Ternary(value.bytes, mask.bytes),
            MatchText::Range { lo, hi } => MatchParam::Range(lo.bytes, hi.bytes),
            MatchText::Valid(b) => MatchParam::Valid(b),
        });
    }
    Ok(key)
}

/// Parses action parameters for action `a`.
fn params(sw: &Switch, a: u32, tokens: &[String]) -> Result<Vec<i128>, CliError> {
    let act = &sw.program.actions[a as usize];
    if tokens.len() != act.params.len() {
        return Err(CliError::WrongParamCount {
            action: act.name.clone(),
            expected: act.params.len(),
        });
    }
    tokens
        .iter()
        .zip(&act.params)
        .map(|(tok, (_, bits))| {
            let v = parse_value(tok, *bits).map_err(|error| CliError::RuntimeData {
                field: tok.clone(),
                error,
            })?;
            Ok(v.as_u128().unwrap_or(0) as i128)
        })
        .collect()
}

fn table_of(sw: &Switch, name: &str) -> Result<usize, CliError> {
    sw.program
        .table(name)
        .map(|t| t as usize)
        .ok_or_else(|| CliError::InvalidTableName(name.into()))
}

fn action_in(sw: &Switch, t: usize, tname: &str, action: &str) -> Result<u32, CliError> {
    sw.program.tables[t]
        .actions
        .iter()
        .copied()
        .find(|&a| {
            let n = &sw.program.actions[a as usize].name;
            n == action || n.rsplit('.').next() == Some(action)
        })
        .ok_or_else(|| CliError::TableHasNoAction {
            table: tname.into(),
            action: action.into(),
        })
}

fn needs_priority(sw: &Switch, t: usize) -> bool {
    let k = sw.program.tables[t].match_type;
    matches!(k, MatchKind::Ternary | MatchKind::Range)
        || sw.program.tables[t].key.iter().any(|k| {
            matches!(
                k.kind,
                MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
            )
        })
}

fn profile_name(sw: &Switch, p: &ProfileRef) -> Result<String, CliError> {
    match p {
        ProfileRef::Profile(n) => Ok(n.clone()),
        ProfileRef::Table(t) => {
            let ti = table_of(sw, t)?;
            match sw.program.tables[ti].imp {
                TableImpl::Indirect(p) | TableImpl::IndirectWs(p) => {
                    Ok(sw.program.action_profiles[p as usize].name.clone())
                }
                TableImpl::Simple => Err(CliError::NotIndirect),
            }
        }
    }
}

fn handle(h: i64) -> Result<u32, CliError> {
    u32::try_from(h).map_err(|_| CliError::Operation {
        kind: OperationKind::Table,
        code: TableError::InvalidHandle.to_string(),
    })
}

/// Runs one command, appending its output.
pub fn execute(sw: &mut Switch, cmd: &Command, out: &mut String) -> Result<(), CliError> {
    match cmd {
        Command::TableAdd {
            table,
            action,
            args,
        } => {
            let t = table_of(sw, table)?;
            let a = action_in(sw, t, table, action)?;
            let e = cli::split_entry(args, needs_priority(sw, t))?;
            let key = match_key(sw, t, table, &e.match_key)?;
            let data = params(sw, a, &e.params)?;
            let an = sw.program.actions[a as usize].name.clone();
            let h = sw
                .table_add(table, &an, key, data, e.priority.unwrap_or(0))
                .map_err(|e| table_err(e, table, action))?;
            let _ = writeln!(out, "Entry has been added with handle {h}");
        }
        Command::TableSetDefault {
            table,
            action,
            params: toks,
        } => {
            let t = table_of(sw, table)?;
            let a = action_in(sw, t, table, action)?;
            let data = params(sw, a, toks)?;
            let an = sw.program.actions[a as usize].name.clone();
            sw.table_set_default(table, &an, data)
                .map_err(|e| table_err(e, table, action))?;
        }
        Command::TableModify {
            table,
            action,
            handle: h,
            params: toks,
        } => {
            let t = table_of(sw, table)?;
            let a = action_in(sw, t, table, action)?;
            let data = params(sw, a, toks)?;
            let an = sw.program.actions[a as usize].name.clone();
            sw.table_modify(table, &an, handle(*h)?, data)
                .map_err(|e| table_err(e, table, action))?;
        }
        Command::TableDelete { table, handle: h }
        | Command::TableIndirectDelete { table, handle: h } => {
            sw.table_delete(table, handle(*h)?)
                .map_err(|e| table_err(e, table, ""))?;
        }
        Command::TableClear { table } => {
            sw.table_clear(table).map_err(|e| table_err(e, table, ""))?
        }
        Command::TableResetDefault { table } | Command::TableIndirectResetDefault { table } => sw
            .table_reset_default(table)
            .map_err(|e| table_err(e, table, ""))?,
        Command::TableNumEntries { table } => {
            let t = table_of(sw, table)?;
            let _ = writeln!(out, "{}", sw.state.tables[t].len());
        }
        Command::TableDump { table } => {
            let t = table_of(sw, table)?;
            dump_table(sw, t, out);
        }
        Command::ShowTables => {
            for t in &sw.program.tables {
                table_line(sw, t, out);
            }
        }
        Command::ShowActions => {
            for a in &sw.program.actions {
                action_line(a, out);
            }
        }
        Command::ActProfCreateMember {
            profile,
            action,
            params: toks,
        } => {
            let (pn, an, data) = member_args(sw, profile, action, toks)?;
            let m = sw
                .member_create(&pn, &an, data)
                .map_err(|e| table_err(e, "", action))?;
            let _ = writeln!(out, "Member has been created with handle {m}");
        }
        Command::ActProfDeleteMember { profile, member } => {
            let pn = profile_name(sw, profile)?;
            sw.member_delete(&pn, handle(*member)?)
                .map_err(|e| table_err(e, "", ""))?;
        }
        Command::ActProfModifyMember {
            profile,
            action,
            member,
            params: toks,
        } => {
            let (pn, an, data) = member_args(sw, profile, action, toks)?;
            sw.member_modify(&pn, &an, handle(*member)?, data)
                .map_err(|e| table_err(e, "", action))?;
        }
        Command::ActProfCreateGroup { profile } => {
            let pn = profile_name(sw, profile)?;
            let g = sw.group_create(&pn).map_err(|e| table_err(e, "", ""))?;
            let _ = writeln!(out, "Group has been created with handle {g}");
        }
        Command::ActProfDeleteGroup { profile, group } => {
            let pn = profile_name(sw, profile)?;
            sw.group_delete(&pn, handle(*group)?)
                .map_err(|e| table_err(e, "", ""))?;
        }
        Command::ActProfAddMemberToGroup {
            profile,
            member,
            group,
        }
        | Command::ActProfRemoveMemberFromGroup {
            profile,
            member,
            group,
        } => {
            let pn = profile_name(sw, profile)?;
            let add = matches!(cmd, Command::ActProfAddMemberToGroup { .. });
            sw.group_member(&pn, handle(*member)?, handle(*group)?, add)
                .map_err(|e| table_err(e, "", ""))?;
        }
        Command::TableIndirectAdd {
            table,
            args,
            with_group,
        } => {
            let t = table_of(sw, table)?;
            let e = cli::split_indirect_entry(args, needs_priority(sw, t))?;
            let key = match_key(sw, t, table, &e.match_key)?;
            let target = if *with_group {
                EntryAction::Group(handle(e.handle)?)
            } else {
                EntryAction::Member(handle(e.handle)?)
            };
            let h = sw
                .table_add_indirect(table, key, target, e.priority.unwrap_or(0))
                .map_err(|e| table_err(e, table, ""))?;
            let _ = writeln!(out, "Entry has been added with handle {h}");
        }
        Command::TableIndirectSetDefault {
            table,
            handle: h,
            with_group,
        } => {
            let target = if *with_group {
                EntryAction::Group(handle(*h)?)
            } else {
                EntryAction::Member(handle(*h)?)
            };
            sw.table_set_default_indirect(table, target)
                .map_err(|e| table_err(e, table, ""))?;
        }
        Command::CounterRead { counter, index } => {
            let (pk, by) = sw
                .counter_read(counter, *index as u64)
                .map_err(counter_err)?;
            let _ = writeln!(
                out,
                "{counter}[{index}]=  BmCounterValue(packets={pk}, bytes={by})"
            );
        }
        Command::CounterWrite {
            counter,
            index,
            packets,
            bytes,
        } => {
            sw.counter_write(counter, *index as u64, *packets as u64, *bytes as u64)
                .map_err(counter_err)?;
        }
        Command::CounterReset { counter } => sw.counter_reset(counter).map_err(counter_err)?,
        Command::RegisterRead { register, index } => match index {
            Some(i) => {
                let v = sw
                    .register_read(register, *i as u64)
                    .map_err(|e| table_err(e, "", ""))?;
                let _ = writeln!(out, "{register}[{i}]= {v}");
            }
            None => {
                let vals = sw
                    .register_read_all(register)
                    .map_err(|e| table_err(e, "", ""))?;
                let s: Vec<String> = vals.iter().map(u128::to_string).collect();
                let _ = writeln!(out, "{register}= {}", s.join(", "));
            }
        },
        Command::RegisterWrite {
            register,
            index,
            value,
        } => sw
            .register_write(register, *index as u64, i128::from(*value))
            .map_err(|e| table_err(e, "", ""))?,
        Command::RegisterReset { register } => sw
            .register_reset(register)
            .map_err(|e| table_err(e, "", ""))?,
        Command::MeterArraySetRates { meter, rates } => sw
            .meter_set_rates(
                meter,
                None,
                rates
                    .iter()
                    .map(|r| (r.rate, r.burst.max(0) as u64))
                    .collect(),
            )
            .map_err(|e| table_err(e, "", ""))?,
        Command::MeterSetRates {
            meter,
            index,
            rates,
        } => sw
            .meter_set_rates(
                meter,
                Some(*index as u64),
                rates
                    .iter()
                    .map(|r| (r.rate, r.burst.max(0) as u64))
                    .collect(),
            )
            .map_err(|e| table_err(e, "", ""))?,
        Command::MirroringAdd { session, port } => sw.mirroring_add(*session as u32, *port as u32),
        Command::MirroringDelete { session } => {
            if !sw.mirroring_delete(*session as u32) {
                return Err(CliError::Operation {
                    kind: OperationKind::Mirroring,
                    code: "SESSION_NOT_FOUND".into(),
                });
            }
        }
        Command::McMgrpCreate { mgrp } => {
            sw.state.mcast.entry(*mgrp as u32).or_default();
        }
        Command::McMgrpDestroy { mgrp } => {
            sw.state
                .mcast
                .remove(&(*mgrp as u32))
                .ok_or_else(|| pre_err("INVALID_MGID"))?;
        }
        Command::McNodeCreate { rid, ports, .. } => {
            let h = sw.state.mcast_nodes.len();
            sw.state
                .mcast_nodes
                .push(Some((*rid as u32, ports.clone())));
            let _ = writeln!(out, "node was created with handle {h}");
        }
        Command::McNodeUpdate { node, ports, .. } => {
            let n = node_mut(sw, *node)?;
            n.1 = ports.clone();
        }
        Command::McNodeDestroy { node } => {
            node_mut(sw, *node)?;
            sw.state.mcast_nodes[*node as usize] = None;
            for g in sw.state.mcast.values_mut() {
                g.retain(|&n| i64::from(n) != *node);
            }
        }
        Command::McNodeAssociate { mgrp, node } | Command::McNodeDissociate { mgrp, node } => {
            node_mut(sw, *node)?;
            let g = sw
                .state
                .mcast
                .get_mut(&(*mgrp as u32))
                .ok_or_else(|| pre_err("INVALID_MGID"))?;
            let n = *node as u32;
            if matches!(cmd, Command::McNodeAssociate { .. }) {
                if !g.contains(&n) {
                    g.push(n);
                }
            } else {
                g.retain(|&x| x != n);
            }
        }
        Command::McDump => {
            let mut groups: Vec<_> = sw.state.mcast.keys().copied().collect();
            groups.sort_unstable();
            for g in groups {
                let _ = writeln!(out, "mgrp({g})");
                for (port, rid) in sw.state.replicas(g) {
                    let _ = writeln!(out, "  -> (port {port}, rid {rid})");
                }
            }
        }
        Command::MirroringGet { session } => match sw.state.mirrors.get(&(*session as u32)) {
            Some(p) => {
                let _ = writeln!(out, "MirroringSessionConfig(port={p})");
            }
            None => {
                return Err(CliError::Operation {
                    kind: OperationKind::Mirroring,
                    code: "SESSION_NOT_FOUND".into(),
                });
            }
        },
        Command::TableDumpEntry { table, handle: h } => {
            let t = table_of(sw, table)?;
            let e = sw.state.tables[t]
                .get(handle(*h)?)
                .map_err(|e| table_err(e.into(), table, ""))?;
            let _ = writeln!(out, "Dumping entry {h:#x}");
            dump_entry(sw, t, e, out);
        }
        Command::TableShowActions { table } => {
            let t = table_of(sw, table)?;
            for &a in &sw.program.tables[t].actions {
                action_line(&sw.program.actions[a as usize], out);
            }
        }
        Command::TableInfo { table } => {
            let t = &sw.program.tables[table_of(sw, table)?];
            table_line(sw, t, out);
            let _ = writeln!(out, "{}", "*".repeat(40));
        }
        Command::MeterGetRates { meter, index } => {
            let rates = sw
                .meter_rates(meter, *index as u64)
                .map_err(|e| table_err(e, "", ""))?;
            for (i, (rate, burst)) in rates.iter().enumerate() {
                let _ = writeln!(out, "{i}: info rate = {rate}, burst size = {burst}");
            }
        }
        Command::PvsAdd { pvs, value } | Command::PvsRemove { pvs, value } => {
            let set = pvs_of(sw, pvs)?;
            let bits = sw.program.value_sets[set].bits;
            let v = cli::parse_pvs_value(value, bits)?
                .iter()
                .fold(0u128, |a, &b| (a << 8) | u128::from(b));
            let name = sw.program.value_sets[set].name.clone();
            if matches!(cmd, Command::PvsAdd { .. }) {
                sw.value_set_add(&name, v)
                    .map_err(|e| table_err(e, "", ""))?;
            } else {
                sw.value_set_remove(&name, v)
                    .map_err(|e| table_err(e, "", ""))?;
            }
        }
        Command::PvsGet { pvs } => {
            let set = pvs_of(sw, pvs)?;
            let name = sw.program.value_sets[set].name.clone();
            for v in sw.value_set_get(&name).map_err(|e| table_err(e, "", ""))? {
                let _ = writeln!(out, "{v:#x}");
            }
        }
        Command::PvsClear { pvs } => {
            let set = pvs_of(sw, pvs)?;
            let name = sw.program.value_sets[set].name.clone();
            sw.value_set_clear(&name)
                .map_err(|e| table_err(e, "", ""))?;
        }
        Command::ShowPvs => {
            for v in &sw.program.value_sets {
                let _ = writeln!(out, "{:<24} [compressed bitwidth:\t{}]", v.name, v.bits);
            }
        }
        Command::ResetState => {
            let p = sw.program.clone();
            *sw = Switch::new(p);
        }
        Command::Help(_)
        | Command::Greet
        | Command::SetQueueDepth { .. }
        | Command::SetQueueRate { .. } => {}
        other => {
            return Err(CliError::UnknownSyntax(format!(
                "{other:?} is not supported by ernic's P4 engine"
            )));
        }
    }
    Ok(())
}

/// A member's profile, action and data, from its CLI arguments.
fn member_args(
    sw: &Switch,
    profile: &ProfileRef,
    action: &str,
    toks: &[String],
) -> Result<(String, String, Vec<i128>), CliError> {
    let pn = profile_name(sw, profile)?;
    let a = sw
        .program
        .action(action)
        .ok_or_else(|| CliError::ProfileHasNoAction {
            profile: pn.clone(),
            action: action.into(),
        })?;
    let data = params(sw, a, toks)?;
    Ok((pn, sw.program.actions[a as usize].name.clone(), data))
}

fn pre_err(code: &str) -> CliError {
    CliError::Operation {
        kind: OperationKind::Pre,
        code: code.into(),
    }
}

fn node_mut(sw: &mut Switch, node: i64) -> Result<&mut crate::exec::state::McNode, CliError> {
    usize::try_from(node)
        .ok()
        .and_then(|n| sw.state.mcast_nodes.get_mut(n))
        .and_then(Option::as_mut)
        .ok_or_else(|| pre_err("INVALID_L1_HANDLE"))
}

fn pvs_of(sw: &Switch, name: &str) -> Result<usize, CliError> {
    crate::program::find_by_name(sw.program.value_sets.iter().map(|v| v.name.as_str()), name)
        .map(|s| s as usize)
        .ok_or_else(|| CliError::InvalidPvsName(name.into()))
}

fn counter_err(e: ControlError) -> CliError {
    match e {
        ControlError::Index { .. } => CliError::Operation {
            kind: OperationKind::Counter,
            code: "INVALID_INDEX".into(),
        },
        other => table_err(other, "", ""),
    }
}

/// A table as `show_tables` and `table_info` print it.
fn table_line(sw: &Switch, t: &crate::program::Table, out: &mut String) {
    let key: Vec<String> = t
        .key
        .iter()
        .map(|k| format!("{}({}, {})", k.name, k.kind.name(), k.bits))
        .collect();
    let _ = writeln!(
        out,
        "{:<24} [implementation={}, mk={}]",
        t.name,
        impl_name(sw, t.imp),
        key.join(",\t")
    );
}

/// An action as `show_actions` and `table_show_actions` print it.
fn action_line(a: &crate::program::Action, out: &mut String) {
    let ps: Vec<String> = a.params.iter().map(|(n, b)| format!("{n}({b})")).collect();
    let _ = writeln!(out, "{:<24} [{}]", a.name, ps.join(",\t"));
}

fn impl_name(sw: &Switch, i: TableImpl) -> String {
    match i {
        TableImpl::Simple => "None".into(),
        TableImpl::Indirect(p) | TableImpl::IndirectWs(p) => {
            sw.program.action_profiles[p as usize].name.clone()
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn dump_table(sw: &Switch, t: usize, out: &mut String) {
    let ts = &sw.state.tables[t];
    let _ = writeln!(out, "==========\nTABLE ENTRIES");
    for h in ts.handles() {
        let Ok(e) = ts.get(h) else { continue };
        let _ = writeln!(out, "**********\nDumping entry {h:#x}");
        dump_entry(sw, t, e, out);
    }
    let _ = writeln!(out, "==========\nDumping default entry");
    if ts.default_set {
        let _ = writeln!(out, "Action entry: {}", action_text(sw, &ts.default));
    } else {
        let _ = writeln!(out, "EMPTY");
    }
    let _ = writeln!(out, "==========");
}

fn dump_entry(sw: &Switch, t: usize, e: &crate::exec::tables::Entry, out: &mut String) {
    let table = &sw.program.tables[t];
    let _ = writeln!(out, "Match key:");
    for (k, p) in table.key.iter().zip(&e.key) {
        let v = match p {
            MatchParam::Exact(v) => hex(v),
            MatchParam::Lpm(v, l) => format!("{}/{l}", hex(v)),
            MatchParam::Ternary(v, m) => format!("{} &&& {}", hex(v), hex(m)),
            MatchParam::Range(a, b) => format!("{} -> {}", hex(a), hex(b)),
            MatchParam::Valid(b) => format!("{:02x}", *b as u8),
        };
        let _ = writeln!(
            out,
            "* {:<20}: {:<10}{v}",
            format!("{} ", k.name),
            k.kind.name().to_uppercase()
        );
    }
    if matches!(table.match_type, MatchKind::Ternary | MatchKind::Range) {
        let _ = writeln!(out, "Priority: {}", e.priority);
    }
    let _ = writeln!(out, "Action entry: {}", action_text(sw, &e.action));
}

fn action_text(sw: &Switch, a: &EntryAction) -> String {
    match a {
        EntryAction::Direct { action, data } => {
            let name = sw
                .program
                .actions
                .get(*action as usize)
                .map_or("NoAction", |a| a.name.as_str());
            let d: Vec<String> = data.iter().map(|v| format!("{v:x}")).collect();
            format!("{name} - {}", d.join(", "))
        }
        EntryAction::Member(m) => format!("member {m}"),
        EntryAction::Group(g) => format!("group {g}"),
    }
}
