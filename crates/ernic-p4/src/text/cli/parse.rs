//! One CLI line to a [`Command`]: Python `cmd`'s line split, then each
//! `do_*` method's argument checks from runtime_CLI.py and sswitch_CLI.py,
//! in the same order where no name is involved.

use super::{CliError, Command, MeterRate, ProfileRef};
use crate::text::value::{Base, PyInt, parse_py_int};

type Result<T> = std::result::Result<T, CliError>;

/// Parses a script (a file or stdin): one entry per line that is not blank
/// or a `#` comment, with its 1-based line number.
pub fn parse_script(text: &str) -> Vec<(usize, Result<Command>)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| match parse_line(line) {
            Ok(None) => None,
            Ok(Some(c)) => Some((i + 1, Ok(c))),
            Err(e) => Some((i + 1, Err(e))),
        })
        .collect()
}

/// Parses one line; `Ok(None)` for a blank or `#` line.
pub fn parse_line(line: &str) -> Result<Option<Command>> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let line = if let Some(rest) = line.strip_prefix('?') {
        format!("help {rest}")
    } else if let Some(rest) = line.strip_prefix('!') {
        format!("shell {rest}")
    } else {
        line.to_string()
    };
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let (name, rest) = (&line[..end], line[end..].trim());
    let args: Vec<&str> = rest.split_whitespace().collect();
    let unknown = || CliError::UnknownSyntax(line.clone());
    if name.is_empty() {
        return Err(unknown());
    }
    let a = Args(&args);
    let s = |i: usize| args[i].to_string();
    let tail = |i: usize| {
        args[i.min(args.len())..]
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
    };
    let legacy = name.starts_with("table_indirect_") || name.starts_with("table_dump_");
    let prof = |i: usize| {
        if legacy {
            ProfileRef::Table(s(i))
        } else {
            ProfileRef::Profile(s(i))
        }
    };
    let cmd = match name {
        "help" => Command::Help(args.first().map(|t| t.to_string())),
        "shell" => Command::Shell(rest.to_string()),
        // cmd's `line == 'EOF'` check is on the whole line.
        "EOF" => Command::Eof,
        "greet" => Command::Greet,
        "show_tables" => a.exactly(0).map(|_| Command::ShowTables)?,
        "show_actions" => a.exactly(0).map(|_| Command::ShowActions)?,
        "show_pvs" => a.exactly(0).map(|_| Command::ShowPvs)?,
        "show_ports" => a.exactly(0).map(|_| Command::ShowPorts)?,
        "switch_info" => a.exactly(0).map(|_| Command::SwitchInfo)?,
        "reset_state" => a.exactly(0).map(|_| Command::ResetState)?,
        "swap_configs" => Command::SwapConfigs,
        "mc_dump" => Command::McDump,
        "get_time_elapsed" => Command::GetTimeElapsed,
        "get_time_since_epoch" => Command::GetTimeSinceEpoch,
        "table_show_actions" => a
            .exactly(1)
            .map(|_| Command::TableShowActions { table: s(0) })?,
        "table_info" => a.exactly(1).map(|_| Command::TableInfo { table: s(0) })?,
        "table_set_default" => {
            a.at_least(2)?;
            Command::TableSetDefault {
                table: s(0),
                action: s(1),
                params: tail(2),
            }
        }
        "table_reset_default" => a
            .exactly(1)
            .map(|_| Command::TableResetDefault { table: s(0) })?,
        "table_num_entries" => a
            .exactly(1)
            .map(|_| Command::TableNumEntries { table: s(0) })?,
        "table_clear" => a.exactly(1).map(|_| Command::TableClear { table: s(0) })?,
        "table_add" => {
            a.at_least(3)?;
            Command::TableAdd {
                table: s(0),
                action: s(1),
                args: tail(2),
            }
        }
        "table_set_timeout" => {
            a.exactly(3)?;
            let handle = a.int(1, "entry handle")?;
            Command::TableSetTimeout {
                table: s(0),
                handle,
                timeout_ms: a.int(2, "timeout")?,
            }
        }
        "table_modify" => {
            a.at_least(3)?;
            let handle = a.int(2, "entry handle")?;
            let params = if args.get(3) == Some(&"=>") {
                tail(4)
            } else {
                tail(3)
            };
            Command::TableModify {
                table: s(0),
                action: s(1),
                handle,
                params,
            }
        }
        "table_delete" => {
            a.exactly(2)?;
            Command::TableDelete {
                table: s(0),
                handle: a.int(1, "entry handle")?,
            }
        }
        "table_dump" => a.exactly(1).map(|_| Command::TableDump { table: s(0) })?,
        "table_dump_entry" => {
            a.exactly(2)?;
            Command::TableDumpEntry {
                table: s(0),
                handle: a.int(1, "entry handle")?,
            }
        }
        "table_dump_entry_from_key" => {
            a.at_least(1)?;
            Command::TableDumpEntryFromKey {
                table: s(0),
                args: tail(1),
            }
        }
        "act_prof_create_member" | "table_indirect_create_member" => {
            a.at_least(2)?;
            Command::ActProfCreateMember {
                profile: prof(0),
                action: s(1),
                params: tail(2),
            }
        }
        "act_prof_delete_member" | "table_indirect_delete_member" => {
            a.legacy(legacy)?;
            a.exactly(2)?;
            Command::ActProfDeleteMember {
                profile: prof(0),
                member: a.int(1, "member handle")?,
            }
        }
        "act_prof_modify_member" | "table_indirect_modify_member" => {
            a.at_least(3)?;
            let member = a.int(2, "member handle")?;
            let params = if args.get(3) == Some(&"=>") {
                tail(4)
            } else {
                tail(3)
            };
            Command::ActProfModifyMember {
                profile: prof(0),
                action: s(1),
                member,
                params,
            }
        }
        "act_prof_create_group" | "table_indirect_create_group" => {
            a.legacy(legacy)?;
            a.exactly(1)?;
            Command::ActProfCreateGroup { profile: prof(0) }
        }
        "act_prof_delete_group" | "table_indirect_delete_group" => {
            a.legacy(legacy)?;
            a.exactly(2)?;
            Command::ActProfDeleteGroup {
                profile: prof(0),
                group: a.int(1, "group handle")?,
            }
        }
        "act_prof_add_member_to_group" | "table_indirect_add_member_to_group" => {
            a.legacy(legacy)?;
            a.exactly(3)?;
            let member = a.int(1, "member handle")?;
            Command::ActProfAddMemberToGroup {
                profile: prof(0),
                member,
                group: a.int(2, "group handle")?,
            }
        }
        "act_prof_remove_member_from_group" | "table_indirect_remove_member_from_group" => {
            a.legacy(legacy)?;
            a.exactly(3)?;
            let member = a.int(1, "member handle")?;
            let group = a.int(2, "group handle")?;
            Command::ActProfRemoveMemberFromGroup {
                profile: prof(0),
                member,
                group,
            }
        }
        "act_prof_dump_member" | "table_dump_member" => {
            a.legacy(legacy)?;
            a.exactly(2)?;
            Command::ActProfDumpMember {
                profile: prof(0),
                member: a.int(1, "member handle")?,
            }
        }
        "act_prof_dump_group" | "table_dump_group" => {
            a.legacy(legacy)?;
            a.exactly(2)?;
            Command::ActProfDumpGroup {
                profile: prof(0),
                group: a.int(1, "group handle")?,
            }
        }
        "act_prof_dump" => a
            .exactly(1)
            .map(|_| Command::ActProfDump { profile: s(0) })?,
        "table_indirect_add" | "table_indirect_add_with_group" => {
            a.at_least(2)?;
            let with_group = name.ends_with("_with_group");
            Command::TableIndirectAdd {
                table: s(0),
                args: tail(1),
                with_group,
            }
        }
        "table_indirect_delete" => {
            a.exactly(2)?;
            Command::TableIndirectDelete {
                table: s(0),
                handle: a.int(1, "entry handle")?,
            }
        }
        "table_indirect_set_default" | "table_indirect_set_default_with_group" => {
            a.exactly(2)?;
            let with_group = name.ends_with("_with_group");
            Command::TableIndirectSetDefault {
                table: s(0),
                handle: a.int(1, "handle")?,
                with_group,
            }
        }
        "table_indirect_reset_default" => a
            .exactly(1)
            .map(|_| Command::TableIndirectResetDefault { table: s(0) })?,
        "mc_mgrp_create" => {
            a.exactly(1)?;
            Command::McMgrpCreate {
                mgrp: a.int(0, "multicast group id")?,
            }
        }
        "mc_mgrp_destroy" => {
            a.exactly(1)?;
            Command::McMgrpDestroy {
                mgrp: a.int(0, "multicast group id")?,
            }
        }
        "mc_node_create" => {
            a.at_least(1)?;
            let rid = a.int(0, "rid")?;
            let (ports, lags) = ports_and_lags(&args[1..])?;
            Command::McNodeCreate { rid, ports, lags }
        }
        "mc_node_update" => {
            a.at_least(2)?;
            let node = a.int(0, "node handle")?;
            let (ports, lags) = ports_and_lags(&args[1..])?;
            Command::McNodeUpdate { node, ports, lags }
        }
        "mc_node_associate" | "mc_node_dissociate" => {
            a.exactly(2)?;
            let mgrp = a.int(0, "multicast group id")?;
            let node = a.int(1, "node handle")?;
            if name == "mc_node_associate" {
                Command::McNodeAssociate { mgrp, node }
            } else {
                Command::McNodeDissociate { mgrp, node }
            }
        }
        "mc_node_destroy" => {
            a.exactly(1)?;
            Command::McNodeDestroy {
                node: a.int(0, "node handle")?,
            }
        }
        "mc_set_lag_membership" => {
            a.at_least(2)?;
            let lag = a.int(0, "lag index")?;
            Command::McSetLagMembership {
                lag,
                ports: port_list(&args[1..], "lag")?,
            }
        }
        "load_new_config_file" => a
            .exactly(1)
            .map(|_| Command::LoadNewConfigFile { path: s(0) })?,
        "write_config_to_file" => a
            .exactly(1)
            .map(|_| Command::WriteConfigToFile { path: s(0) })?,
        "serialize_state" => a
            .exactly(1)
            .map(|_| Command::SerializeState { path: s(0) })?,
        "meter_array_set_rates" => {
            a.at_least(1)?;
            Command::MeterArraySetRates {
                meter: s(0),
                rates: rates(&args[1..])?,
            }
        }
        "meter_set_rates" => {
            a.at_least(2)?;
            let index = a.int(1, "index")?;
            Command::MeterSetRates {
                meter: s(0),
                index,
                rates: rates(&args[2..])?,
            }
        }
        "meter_get_rates" => {
            a.exactly(2)?;
            Command::MeterGetRates {
                meter: s(0),
                index: a.int(1, "index")?,
            }
        }
        "counter_read" => {
            a.exactly(2)?;
            Command::CounterRead {
                counter: s(0),
                index: a.int(1, "index")?,
            }
        }
        "counter_write" => {
            a.exactly(4)?;
            let index = a.int(1, "index")?;
            let packets = a.int(2, "packets")?;
            Command::CounterWrite {
                counter: s(0),
                index,
                packets,
                bytes: a.int(3, "bytes")?,
            }
        }
        "counter_reset" => a
            .exactly(1)
            .map(|_| Command::CounterReset { counter: s(0) })?,
        "register_read" => {
            a.at_least(1)?;
            let index = if args.len() > 1 {
                a.exactly(2)?;
                Some(a.int(1, "index")?)
            } else {
                None
            };
            Command::RegisterRead {
                register: s(0),
                index,
            }
        }
        "register_write" => {
            a.exactly(3)?;
            let index = a.int(1, "index")?;
            let value = parse_py_int(args[2]).ok_or(CliError::BadFormatMustBeInteger("value"))?;
            Command::RegisterWrite {
                register: s(0),
                index,
                value,
            }
        }
        "register_reset" => a
            .exactly(1)
            .map(|_| Command::RegisterReset { register: s(0) })?,
        "pvs_add" => a.exactly(2).map(|_| Command::PvsAdd {
            pvs: s(0),
            value: s(1),
        })?,
        "pvs_remove" => a.exactly(2).map(|_| Command::PvsRemove {
            pvs: s(0),
            value: s(1),
        })?,
        "pvs_get" => a.exactly(1).map(|_| Command::PvsGet { pvs: s(0) })?,
        "pvs_clear" => a.exactly(1).map(|_| Command::PvsClear { pvs: s(0) })?,
        "port_add" => {
            a.at_least(2)?;
            let port = parse_py_int(args[1]).ok_or(CliError::BadFormatMustBeInteger("port_num"))?;
            Command::PortAdd {
                iface: s(0),
                port,
                pcap: args.get(2).map(|p| p.to_string()),
            }
        }
        "port_remove" => {
            a.exactly(1)?;
            let port = parse_py_int(args[0]).ok_or(CliError::BadFormatMustBeInteger("port_num"))?;
            Command::PortRemove { port }
        }
        "set_crc16_parameters" | "set_crc32_parameters" => crc(name, &args)?,
        "set_toeplitz_hash_key" => {
            a.exactly(2)?;
            Command::SetToeplitzHashKey {
                name: s(0),
                key: toeplitz_key(args[1])?,
            }
        }
        "set_queue_depth" | "set_queue_rate" => {
            a.at_least(1)?;
            let depth = name == "set_queue_depth";
            let v = a.sw_int(0, if depth { "nb_pkts" } else { "rate_pps" })?;
            let port = if args.len() >= 2 {
                Some(a.sw_int(1, "egress_port")?)
            } else {
                None
            };
            let priority = if args.len() > 2 {
                Some(a.sw_int(2, "priority")?)
            } else {
                None
            };
            if depth {
                Command::SetQueueDepth {
                    depth: v,
                    port,
                    priority,
                }
            } else {
                Command::SetQueueRate {
                    rate_pps: v,
                    port,
                    priority,
                }
            }
        }
        "mirroring_add" | "mirroring_add_mc" => {
            a.exactly(2)?;
            let session = a.sw_int(0, "mirror_id")?;
            if name == "mirroring_add" {
                Command::MirroringAdd {
                    session,
                    port: a.sw_int(1, "egress_port")?,
                }
            } else {
                Command::MirroringAddMc {
                    session,
                    mgrp: a.sw_int(1, "mgrp")?,
                }
            }
        }
        "mirroring_delete" => {
            a.exactly(1)?;
            Command::MirroringDelete {
                session: a.sw_int(0, "mirror_id")?,
            }
        }
        "mirroring_get" => {
            a.exactly(1)?;
            Command::MirroringGet {
                session: a.sw_int(0, "mirror_id")?,
            }
        }
        _ => return Err(unknown()),
    };
    Ok(Some(cmd))
}

/// The argument list and runtime_CLI's checks on it.
struct Args<'a>(&'a [&'a str]);

impl Args<'_> {
    fn at_least(&self, n: usize) -> Result<()> {
        if self.0.len() < n {
            Err(CliError::InsufficientArgs)
        } else {
            Ok(())
        }
    }

    /// The legacy `table_indirect_*` wrappers first check for a table name.
    fn legacy(&self, legacy: bool) -> Result<()> {
        if legacy { self.at_least(1) } else { Ok(()) }
    }

    fn exactly(&self, n: usize) -> Result<()> {
        if self.0.len() != n {
            return Err(CliError::WrongArgCount {
                expected: n,
                got: self.0.len(),
            });
        }
        Ok(())
    }

    /// `int(args[i])` or "Bad format for WHAT".
    fn int(&self, i: usize, what: &'static str) -> Result<i64> {
        self.0
            .get(i)
            .and_then(|t| parse_py_int(t))
            .ok_or(CliError::BadFormat(what))
    }

    /// sswitch_CLI's `parse_int`: "Bad format for WHAT, expected integer".
    fn sw_int(&self, i: usize, what: &'static str) -> Result<i64> {
        self.0
            .get(i)
            .and_then(|t| parse_py_int(t))
            .ok_or(CliError::BadFormatExpectedInteger(what))
    }
}

/// `parse_ports_and_lags` with simple_switch's SimplePreLAG: ports up to
/// `|`, lags after it.
fn ports_and_lags(args: &[&str]) -> Result<(Vec<u32>, Vec<u32>)> {
    let bar = args.iter().position(|a| *a == "|").unwrap_or(args.len());
    let ports = port_list(&args[..bar], "port")?;
    let lags = port_list(args.get(bar + 1..).unwrap_or(&[]), "lag")?;
    Ok((ports, lags))
}

/// `ports_to_port_map_str`'s checks: non-negative integers, no repeats;
/// returned sorted.
fn port_list(args: &[&str], what: &'static str) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(args.len());
    for t in args {
        let n = parse_py_int(t).and_then(|n| u32::try_from(n).ok());
        out.push(n.ok_or_else(|| CliError::InvalidPortNumber {
            text: t.to_string(),
            what,
        })?);
    }
    out.sort_unstable();
    if let Some(w) = out.windows(2).find(|w| w[0] == w[1]) {
        return Err(CliError::DuplicatePort { what, number: w[0] });
    }
    Ok(out)
}

/// `rate:burst` pairs: `float(rate)`, `int(burst)`.
fn rates(args: &[&str]) -> Result<Vec<MeterRate>> {
    args.iter()
        .map(|t| {
            let (r, b) = t
                .split_once(':')
                .filter(|(_, b)| !b.contains(':'))
                .ok_or(CliError::BadRates)?;
            let rate = r
                .trim()
                .replace('_', "")
                .parse::<f64>()
                .map_err(|_| CliError::BadRates)?;
            let burst = parse_py_int(b).ok_or(CliError::BadRates)?;
            Ok(MeterRate { rate, burst })
        })
        .collect()
}

/// `set_crc_parameters_common`: three `int(x, 0)` values that fit the
/// width, two bools.
fn crc(name: &str, args: &[&str]) -> Result<Command> {
    let width = if name == "set_crc16_parameters" {
        16
    } else {
        32
    };
    Args(args).exactly(6)?;
    let word = |t: &str| -> Result<u32> {
        // runtime_CLI's int(h, 0) raises on a non-integer; it gets the
        // width's message here.
        let n = PyInt::parse(t, Base::Auto).ok_or(CliError::IntegerTooWide(width))?;
        let m = n.to_magnitude(4).ok_or(CliError::IntegerTooWide(width))?;
        let v = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
        if width == 16 && v > 0xffff {
            return Err(CliError::IntegerTooWide(width));
        }
        // Negative numbers are passed to Thrift as they are: two's complement.
        let mask = if width == 16 { 0xffff } else { u32::MAX };
        Ok(if n.negative {
            v.wrapping_neg() & mask
        } else {
            v
        })
    };
    Ok(Command::SetCrcParameters {
        width,
        name: args[0].to_string(),
        polynomial: word(args[1])?,
        initial_remainder: word(args[2])?,
        final_xor_value: word(args[3])?,
        data_reflected: parse_bool(args[4])?,
        remainder_reflected: parse_bool(args[5])?,
    })
}

/// runtime_CLI's `parse_bool`.
fn parse_bool(t: &str) -> Result<bool> {
    match t {
        "true" | "True" => Ok(true),
        "false" | "False" => Ok(false),
        _ => {
            let n = PyInt::parse(t, Base::Auto).ok_or(CliError::BadBool)?;
            Ok(n.to_magnitude(1).is_none_or(|m| m[0] != 0))
        }
    }
}

/// `bytearray.fromhex(key)`, a multiple of 4 bytes.
fn toeplitz_key(t: &str) -> Result<Vec<u8>> {
    let digits: Vec<u32> = t
        .chars()
        .map(|c| c.to_digit(16))
        .collect::<Option<_>>()
        .ok_or(CliError::ToeplitzNotHex)?;
    if digits.len() % 2 != 0 {
        return Err(CliError::ToeplitzNotHex);
    }
    let key: Vec<u8> = digits.chunks(2).map(|p| (p[0] * 16 + p[1]) as u8).collect();
    if key.len() % 4 != 0 {
        return Err(CliError::ToeplitzLength);
    }
    Ok(key)
}
