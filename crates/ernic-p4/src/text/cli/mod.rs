//! The `simple_switch_CLI` command language (bmv2's `tools/runtime_CLI.py`
//! plus `targets/simple_switch/sswitch_CLI.py`), one line to one
//! [`Command`], with the argument shapes, integer spellings and error
//! wording of those scripts.
//!
//! What it promises: every line either becomes a `Command` or a
//! [`CliError`] whose [`CliError::printed`] is what bmv2 prints; no input
//! panics. What it never does: resolve a name or a width. Names stay
//! `String`s, match-key and action-parameter tokens stay raw (their widths
//! come from the program: the engine calls [`crate::text::key::parse_match`]
//! and [`crate::text::value::parse_value`] on them), and the tail of a
//! `table_add` is split only once the engine knows whether the table takes a
//! priority ([`split_entry`]).
//!
//! Line handling follows Python's `cmd` module: the command is the leading
//! run of letters, digits and `_`; `?x` is `help x` and `!x` is `shell x`;
//! an unknown command is "*** Unknown syntax: LINE". Two deliberate
//! differences, both on lines that do nothing in bmv2 either: a blank line
//! is skipped (`cmd` would run the previous command again), and a line
//! starting with `#` is skipped (bmv2 has no comments and prints "Unknown
//! syntax" for it). When a line has both a bad name and a bad number, bmv2
//! reports the name first; here the number is reported, since names are the
//! engine's.
//!
//! Priorities: an entry of a table whose match type is ternary or range (or
//! has an optional key) must end in an integer priority. Among entries that
//! match, bmv2's runtime_CLI gives the win to the smallest number
//! (`docs/runtime_CLI.md`: "one with the smallest numeric priority value
//! will be the winner"); P4Runtime's convention is the opposite, and p4c's
//! STF runner converts its priorities with `10000 - prio` for that reason.

mod error;
mod help;
mod parse;

pub use error::{CliError, OperationKind};
pub use help::{HELP, help_text};
pub use parse::{parse_line, parse_script};

use super::value::parse_py_int;

/// An action profile named directly, or through a table that uses it (the
/// legacy `table_indirect_*` member and group commands, which bmv2 maps to
/// the table's profile and refuses for shared profiles).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ProfileRef {
    /// `act_prof_*`: the profile's name.
    Profile(String),
    /// `table_indirect_*`: a table's name.
    Table(String),
}

/// One `rate:burst` pair of a meter (rate in units per microsecond, burst in
/// units; units are bytes or packets as the meter counts).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct MeterRate {
    /// Committed or peak information rate, units per microsecond.
    pub rate: f64,
    /// Burst size, units.
    pub burst: i64,
}

/// One parsed CLI line. Integers are Python `int()`s (decimal, sign
/// allowed) as `i64`; ranges are the engine's to check.
#[derive(Clone, PartialEq, Debug)]
#[allow(missing_docs)] // Fields: the arguments named in each variant's usage line.
pub enum Command {
    /// `help [command]`
    Help(Option<String>),
    /// `shell ...` / `!...`: runtime_CLI runs it in a shell; the engine
    /// should refuse it.
    Shell(String),
    /// `EOF`: the end of input; the CLI stops.
    Eof,
    /// `greet`: prints "hello".
    Greet,
    /// `show_tables`
    ShowTables,
    /// `show_actions`
    ShowActions,
    /// `show_pvs`
    ShowPvs,
    /// `show_ports`
    ShowPorts,
    /// `switch_info`
    SwitchInfo,
    /// `reset_state`
    ResetState,
    /// `swap_configs`: swaps in the config `load_new_config_file` loaded.
    SwapConfigs,
    /// `mc_dump`: Dump entries in multicast engine
    McDump,
    /// `get_time_elapsed`
    GetTimeElapsed,
    /// `get_time_since_epoch`
    GetTimeSinceEpoch,
    /// `table_show_actions <table_name>`
    TableShowActions { table: String },
    /// `table_info <table_name>`
    TableInfo { table: String },
    /// `table_set_default <table> <action> <params...>`
    TableSetDefault {
        table: String,
        action: String,
        params: Vec<String>,
    },
    /// `table_reset_default <table name>`
    TableResetDefault { table: String },
    /// `table_num_entries <table name>`
    TableNumEntries { table: String },
    /// `table_clear <table name>`
    TableClear { table: String },
    /// `table_add <table> <action> <match...> => <params...> [priority]`:
    /// `args` is everything after the action, for [`split_entry`].
    TableAdd {
        table: String,
        action: String,
        args: Vec<String>,
    },
    /// `table_set_timeout <table_name> <entry handle> <timeout (ms)>`
    TableSetTimeout {
        table: String,
        handle: i64,
        timeout_ms: i64,
    },
    /// `table_modify <table> <action> <handle> [=>] <params...>`
    TableModify {
        table: String,
        action: String,
        handle: i64,
        params: Vec<String>,
    },
    /// `table_delete <table name> <entry handle>`
    TableDelete { table: String, handle: i64 },
    /// `table_dump <table name>`
    TableDump { table: String },
    /// `table_dump_entry <table name> <entry handle>`
    TableDumpEntry { table: String, handle: i64 },
    /// `table_dump_entry_from_key <table> <match...> [priority]`: `args` for
    /// [`split_key`].
    TableDumpEntryFromKey { table: String, args: Vec<String> },
    /// `act_prof_create_member <prof> <action> <params...>`
    ActProfCreateMember {
        profile: ProfileRef,
        action: String,
        params: Vec<String>,
    },
    /// `act_prof_delete_member <action profile name> <member handle>`
    ActProfDeleteMember { profile: ProfileRef, member: i64 },
    /// `act_prof_modify_member <action profile name> <action_name> <member_handle> [action parameters]`
    ActProfModifyMember {
        profile: ProfileRef,
        action: String,
        member: i64,
        params: Vec<String>,
    },
    /// `act_prof_create_group <action profile name>`
    ActProfCreateGroup { profile: ProfileRef },
    /// `act_prof_delete_group <action profile name> <group handle>`
    ActProfDeleteGroup { profile: ProfileRef, group: i64 },
    /// `act_prof_add_member_to_group <action profile name> <member handle> <group handle>`
    ActProfAddMemberToGroup {
        profile: ProfileRef,
        member: i64,
        group: i64,
    },
    /// `act_prof_remove_member_from_group <action profile name> <member handle> <group handle>`
    ActProfRemoveMemberFromGroup {
        profile: ProfileRef,
        member: i64,
        group: i64,
    },
    /// `act_prof_dump_member <action profile name> <member handle>`
    ActProfDumpMember { profile: ProfileRef, member: i64 },
    /// `act_prof_dump_group <action profile name> <group handle>` (legacy:
    /// `table_dump_group <table name> <group handle>`)
    ActProfDumpGroup { profile: ProfileRef, group: i64 },
    /// `act_prof_dump <action profile name>`
    ActProfDump { profile: String },
    /// `table_indirect_add[_with_group] <table> <match...> => <handle>
    /// [priority]`: `args` for [`split_indirect_entry`]; the handle is a
    /// member, or a group when `with_group`.
    TableIndirectAdd {
        table: String,
        args: Vec<String>,
        with_group: bool,
    },
    /// `table_indirect_delete <table name> <entry handle>`
    TableIndirectDelete { table: String, handle: i64 },
    /// `table_indirect_set_default[_with_group] <table> <handle>`
    TableIndirectSetDefault {
        table: String,
        handle: i64,
        with_group: bool,
    },
    /// `table_indirect_reset_default <table name>`
    TableIndirectResetDefault { table: String },
    /// `mc_mgrp_create <group id>`
    McMgrpCreate { mgrp: i64 },
    /// `mc_mgrp_destroy <group id>`
    McMgrpDestroy { mgrp: i64 },
    /// `mc_node_create <rid> <ports...> [| <lags...>]` (sorted, no repeats)
    McNodeCreate {
        rid: i64,
        ports: Vec<u32>,
        lags: Vec<u32>,
    },
    /// `mc_node_update <node handle> <space-separated port list> [ | <space-separated lag list> ]`
    McNodeUpdate {
        node: i64,
        ports: Vec<u32>,
        lags: Vec<u32>,
    },
    /// `mc_node_associate <group handle> <node handle>`
    McNodeAssociate { mgrp: i64, node: i64 },
    /// `mc_node_dissociate <group handle> <node handle>`
    McNodeDissociate { mgrp: i64, node: i64 },
    /// `mc_node_destroy <node handle>`
    McNodeDestroy { node: i64 },
    /// `mc_set_lag_membership <lag index> <space-separated port list>`
    McSetLagMembership { lag: i64, ports: Vec<u32> },
    /// `load_new_config_file <path to .json file>`
    LoadNewConfigFile { path: String },
    /// `write_config_to_file <file>`: the JSON config in use, to a file.
    WriteConfigToFile { path: String },
    /// `serialize_state <file>`: the switch state, to a file.
    SerializeState { path: String },
    /// `meter_array_set_rates <meter> <rate:burst...>`
    MeterArraySetRates {
        meter: String,
        rates: Vec<MeterRate>,
    },
    /// `meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2> ...`
    MeterSetRates {
        meter: String,
        index: i64,
        rates: Vec<MeterRate>,
    },
    /// `meter_get_rates <name> <index>`
    MeterGetRates { meter: String, index: i64 },
    /// `counter_read <name> <index>`
    CounterRead { counter: String, index: i64 },
    /// `counter_write <name> <index> <packets> <bytes>`
    CounterWrite {
        counter: String,
        index: i64,
        packets: i64,
        bytes: i64,
    },
    /// `counter_reset <name>`
    CounterReset { counter: String },
    /// `register_read <reg> [index]` (no index: the whole array)
    RegisterRead {
        register: String,
        index: Option<i64>,
    },
    /// `register_write <name> <index> <value>`
    RegisterWrite {
        register: String,
        index: i64,
        value: i64,
    },
    /// `register_reset <name>`
    RegisterReset { register: String },
    /// `pvs_add <pvs> <value>`: the value (Python `int(v, 0)`) is checked
    /// against the set's width by the engine ([`parse_pvs_value`]).
    PvsAdd { pvs: String, value: String },
    /// `pvs_remove <pvs_name> <value>`
    PvsRemove { pvs: String, value: String },
    /// `pvs_get <pvs_name>`
    PvsGet { pvs: String },
    /// `pvs_clear <pvs_name>`
    PvsClear { pvs: String },
    /// `port_add <iface_name> <port_num> [pcap_path]`
    PortAdd {
        iface: String,
        port: i64,
        pcap: Option<String>,
    },
    /// `port_remove <port_num>`
    PortRemove { port: i64 },
    /// `set_crc{16,32}_parameters <name> <poly> <init> <xor> <refl_data>
    /// <refl_rem>`
    SetCrcParameters {
        width: u32,
        name: String,
        polynomial: u32,
        initial_remainder: u32,
        final_xor_value: u32,
        data_reflected: bool,
        remainder_reflected: bool,
    },
    /// `set_toeplitz_hash_key <name> <key in hex string>`
    SetToeplitzHashKey { name: String, key: Vec<u8> },
    /// `set_queue_depth <nb_pkts> [<egress_port> [<priority>]]`
    SetQueueDepth {
        depth: i64,
        port: Option<i64>,
        priority: Option<i64>,
    },
    /// `set_queue_rate <rate_pps> [<egress_port> [<priority>]]`
    SetQueueRate {
        rate_pps: i64,
        port: Option<i64>,
        priority: Option<i64>,
    },
    /// `mirroring_add <mirror_id> <egress_port>`
    MirroringAdd { session: i64, port: i64 },
    /// `mirroring_add_mc <mirror_id> <mgrp>`
    MirroringAddMc { session: i64, mgrp: i64 },
    /// `mirroring_delete <mirror_id>`
    MirroringDelete { session: i64 },
    /// `mirroring_get <mirror_id>`
    MirroringGet { session: i64 },
}

/// A direct entry's tail split as `table_add` splits it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EntryArgs {
    /// The match-key tokens, one per key field.
    pub match_key: Vec<String>,
    /// The action-parameter tokens.
    pub params: Vec<String>,
    /// The priority, for tables that take one.
    pub priority: Option<i32>,
}

/// Pops the priority off `args` when the table takes one
/// (`int(args.pop(-1))`).
fn pop_priority(args: &mut Vec<String>, needs_priority: bool) -> Result<Option<i32>, CliError> {
    if !needs_priority {
        return Ok(None);
    }
    let last = args.pop().ok_or(CliError::NoPriority)?;
    let p = parse_py_int(&last).and_then(|p| i32::try_from(p).ok());
    p.map(Some).ok_or(CliError::NoPriority)
}

/// runtime_CLI's search for `=>`: its index, or (when absent) the index of
/// the last token, which is then dropped as if it were the separator.
fn arrow_index(args: &[String]) -> Option<usize> {
    let last = args.len().checked_sub(1)?;
    Some(args.iter().position(|a| a == "=>").unwrap_or(last))
}

/// Splits a [`Command::TableAdd`] tail as `table_add` does: the priority
/// off the end when `needs_priority` (the table's match type is ternary or
/// range, [`crate::text::key::MatchKind::needs_priority`]), then key tokens
/// up to `=>` and parameters after it. Without `=>` the last token is taken
/// as the separator and dropped, as runtime_CLI does. The engine checks the
/// counts next ([`CliError::WrongKeyCount`], [`CliError::WrongParamCount`]).
pub fn split_entry(args: &[String], needs_priority: bool) -> Result<EntryArgs, CliError> {
    let mut args = args.to_vec();
    let priority = pop_priority(&mut args, needs_priority)?;
    // runtime_CLI fails with a Python NameError here; say what is missing.
    let idx = arrow_index(&args).ok_or(CliError::InsufficientArgs)?;
    Ok(EntryArgs {
        match_key: args[..idx].to_vec(),
        params: args[idx + 1..].to_vec(),
        priority,
    })
}

/// An indirect entry's tail split as `table_indirect_add` splits it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IndirectEntryArgs {
    /// The match-key tokens.
    pub match_key: Vec<String>,
    /// The member (or group) handle.
    pub handle: i64,
    /// The priority, for tables that take one.
    pub priority: Option<i32>,
}

/// Splits a [`Command::TableIndirectAdd`] tail: priority, key tokens, `=>`,
/// exactly one handle.
pub fn split_indirect_entry(
    args: &[String],
    needs_priority: bool,
) -> Result<IndirectEntryArgs, CliError> {
    let mut args = args.to_vec();
    let priority = pop_priority(&mut args, needs_priority)?;
    let idx = arrow_index(&args).ok_or(CliError::NoHandle)?;
    if args.len() != idx + 2 {
        return Err(CliError::NoHandle);
    }
    let handle = parse_py_int(&args[idx + 1]).ok_or(CliError::BadFormat("handle"))?;
    Ok(IndirectEntryArgs {
        match_key: args[..idx].to_vec(),
        handle,
        priority,
    })
}

/// Splits a [`Command::TableDumpEntryFromKey`] tail: the key tokens and
/// the priority, if the table takes one.
pub fn split_key(
    args: &[String],
    needs_priority: bool,
) -> Result<(Vec<String>, Option<i32>), CliError> {
    let mut args = args.to_vec();
    let priority = pop_priority(&mut args, needs_priority)?;
    Ok((args, priority))
}

/// Checks a parser value set value as `parse_pvs_value` does: `int(v, 0)`,
/// at most `bits` wide, returned as `(bits + 7) / 8` big-endian bytes.
pub fn parse_pvs_value(text: &str, bits: u32) -> Result<Vec<u8>, CliError> {
    use super::value::{Base, PyInt, byte_len};
    let n = PyInt::parse(text, Base::Auto).ok_or(CliError::PvsNotAnInteger)?;
    if n.negative {
        return Ok(vec![0; byte_len(bits)]);
    }
    let bytes = n
        .to_magnitude(byte_len(bits))
        .ok_or(CliError::PvsValueTooLarge(bits))?;
    let spare = (byte_len(bits) * 8) as u32 - bits;
    if spare > 0 && bytes.first().is_some_and(|b| b >> (8 - spare) != 0) {
        return Err(CliError::PvsValueTooLarge(bits));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_wording;
