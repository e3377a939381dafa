//! p4c's STF test format as bmv2's runner reads it: the grammar of p4c's
//! `tools/stf/stf_lexer.py` and `stf_parser.py` with the direct commands
//! `backends/bmv2/bmv2stf.py` adds, into [`StfStatement`]s with line
//! numbers.
//!
//! What it promises: every statement bmv2stf.py's grammar knows parses to a
//! typed value, anything else is an [`StfError`] for that line with the
//! parser's wording, and no input panics. It never resolves names: the
//! engine turns an `add` into table entries with the helpers in
//! [`resolve`], which follow bmv2stf.py's own lookups.
//!
//! Differences from p4c, all on inputs p4c's runner cannot use: statements
//! are one per line (every real `.stf` file is written so; p4c's grammar
//! has no newline token); `remove all` parses (p4c's lexer makes `all` an
//! identifier there, so its parser refuses it, and bmv2stf.py ignores
//! `remove` anyway); `no_packet` parses (bmv2stf.py turns it into an
//! `expect` with no port and fails on it). bmv2stf.py also ignores `wait`,
//! `check_counter` and `mc_node_update`; they are parsed for the engine to
//! honour or skip.

mod expect;
mod lex;
mod parse;
pub mod resolve;

pub use expect::{ExpectedPacket, Mismatch};
pub use parse::parse_stf;

use thiserror::Error;

use super::cli::{CliError, Command};

/// One statement of an STF file.
#[derive(Clone, PartialEq, Debug)]
pub enum StfStatement {
    /// `packet PORT HEX...`: send these bytes in on `port`.
    Packet {
        /// Ingress port.
        port: u32,
        /// The packet (the hex digits joined, an even number of them).
        data: Vec<u8>,
    },
    /// `expect PORT [HEX... [$]]`: a packet must come out of `port`.
    /// Without data, any packets may come out of that port, and their count
    /// is not checked (bmv2stf.py's `any`); with data, the port's packets
    /// are compared in order and their count must equal its expects'.
    Expect {
        /// Egress port.
        port: u32,
        /// The expected packet, `None` for "any".
        packet: Option<ExpectedPacket>,
    },
    /// `no_packet`.
    NoPacket,
    /// `add TABLE [PRIORITY] KEY:VALUE... ACTION(ARG:VALUE, ...) [= NAME]`
    Add {
        /// Table name (full or a suffix, see [`resolve::find_table`]).
        table: String,
        /// STF priority: larger wins; bmv2stf.py passes `10000 - priority`
        /// to bmv2, where smaller wins ([`resolve::bmv2_priority`]).
        priority: Option<u32>,
        /// The key fields given; the others take defaults
        /// ([`resolve::default_match_token`]).
        keys: Vec<StfKey>,
        /// The action and its arguments.
        action: StfAction,
        /// `= NAME`: a name for the entry's handle (`check_counter
        /// cnt($NAME)` refers to it).
        handle_name: Option<String>,
    },
    /// `setdefault TABLE ACTION(ARG:VALUE, ...)`
    SetDefault {
        /// Table name.
        table: String,
        /// The action.
        action: StfAction,
    },
    /// `remove all`.
    RemoveAll,
    /// `check_counter NAME(INDEX) [packets|bytes OP VALUE]`; without the
    /// check, p4c's parser records `== 0` with no count type.
    CheckCounter {
        /// The counter (an identifier, not a dotted name: quote it).
        counter: String,
        /// The entry or index.
        index: CounterIndex,
        /// What to compare.
        check: CounterCheck,
    },
    /// `wait`: let the switch drain.
    Wait,
    /// One of bmv2stf.py's direct commands (`mirroring_add`, `mc_*`,
    /// `counter_*`, `register_*`, `meter_*`), which it passes to
    /// simple_switch_CLI as the words joined by spaces.
    Cli {
        /// The line passed to the CLI.
        line: String,
        /// That line through [`crate::text::cli::parse_line`] (so a hex
        /// number where the CLI wants decimal is the CLI's error).
        command: Result<Command, CliError>,
    },
}

/// `FIELD:VALUE` of an `add`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StfKey {
    /// The field as written (`hdr.ipv4.dst`, `extra$0.h`, `data.$valid`).
    pub field: String,
    /// The value as written.
    pub value: StfValue,
}

/// A key value as written: a number (`10`, `0x0a**`, `0b1*`), or
/// `NUMBER/NUMBER`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum StfValue {
    /// A number, possibly with `*` nibbles (hex) or bits (binary).
    Number(String),
    /// `value/prefix_len`.
    Prefix {
        /// The value.
        value: String,
        /// The prefix length, as written.
        len: String,
    },
}

/// `ACTION(ARG:VALUE, ...)`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StfAction {
    /// The action name (full or a suffix).
    pub name: String,
    /// The arguments by name, in written order, values as written.
    pub args: Vec<(String, String)>,
}

/// What `check_counter NAME(...)` indexes with.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CounterIndex {
    /// `$NAME`, an `add ... = NAME` entry (a direct counter), or another
    /// identifier, as written.
    Id(String),
    /// A number, as written.
    Number(String),
}

/// Which count `check_counter` compares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CountType {
    /// `packets`
    Packets,
    /// `bytes`
    Bytes,
}

/// `check_counter`'s comparison.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// `[packets|bytes OP VALUE]`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CounterCheck {
    /// `None` when the line had no check.
    pub count: Option<CountType>,
    /// The comparison.
    pub op: CmpOp,
    /// The value as written (`0` when the line had no check).
    pub value: String,
}

/// A line the parser refused.
#[derive(Clone, PartialEq, Eq, Debug, Error)]
#[error("parse error (line {line}): {kind}")]
pub struct StfError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub kind: StfErrorKind,
}

/// What was wrong with a line; texts follow p4c's lexer and parser.
#[derive(Clone, PartialEq, Eq, Debug, Error)]
pub enum StfErrorKind {
    /// The lexer met a character no rule takes.
    #[error("Illegal character '{0}'")]
    IllegalCharacter(char),
    /// Packet data that is not hex digits, `*` or `$`.
    #[error("invalid packet data")]
    InvalidPacketData,
    /// A token the grammar does not allow there.
    #[error("Unexpected token '{value}' (of type {ty}).")]
    UnexpectedToken {
        /// The token's text.
        value: String,
        /// Its type.
        ty: &'static str,
    },
    /// (ernic's wording) The line ended inside a statement.
    #[error("Unexpected end of line")]
    UnexpectedEnd,
    /// bmv2stf.py's `bytes.fromhex` refused the packet (an odd number of
    /// digits).
    #[error("Invalid packet data {0}")]
    OddPacketData(String),
    /// (ernic's wording) A port or priority too large for 32 bits.
    #[error("number {0} is too large")]
    NumberTooLarge(String),
}

#[cfg(test)]
mod tests;
