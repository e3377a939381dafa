//! Every message `simple_switch_CLI` prints for a refused command, with
//! runtime_CLI.py's wording (`tools/runtime_CLI.py`, and
//! `targets/simple_switch/sswitch_CLI.py` for mirroring).
//!
//! `Display` is the message (Python's `str(e)`); [`CliError::printed`] is the
//! whole line the CLI prints, with the prefix its `handle_bad_input` adds
//! ("Error: ", "Invalid match key: ", "Invalid runtime data: ", or none).
//! The parser ([`super::parse_line`]) raises only the purely syntactic
//! errors; the variants that need the program (names, counts, table types)
//! are here for the engine to raise, so it prints what bmv2 prints.

use thiserror::Error;

use crate::text::key::MatchError;
use crate::text::value::ValueError;

/// A refused CLI command.
#[derive(Clone, PartialEq, Debug, Error)]
pub enum CliError {
    /// A line whose command is not known: Python `cmd`'s default handler.
    #[error("*** Unknown syntax: {0}")]
    UnknownSyntax(String),
    /// `at_least_n_args` failed.
    #[error("Insufficient number of args")]
    InsufficientArgs,
    /// `exactly_n_args` failed.
    #[error("Wrong number of args, expected {expected} but got {got}")]
    WrongArgCount {
        /// What the command takes.
        expected: usize,
        /// What the line had.
        got: usize,
    },
    /// A handle, index or count that is not an integer; the field says
    /// which ("entry handle", "member handle", "group handle", "handle",
    /// "index", "packets", "bytes", "timeout", "multicast group id",
    /// "node handle", "rid", "lag index").
    #[error("Bad format for {0}")]
    BadFormat(&'static str),
    /// `register_write`'s value or `port_add`'s port ("value", "port_num").
    #[error("Bad format for {0}, must be an integer")]
    BadFormatMustBeInteger(&'static str),
    /// sswitch_CLI's `parse_int` ("nb_pkts", "egress_port", "priority",
    /// "rate_pps", "mirror_id", "mgrp").
    #[error("Bad format for {0}, expected integer")]
    BadFormatExpectedInteger(&'static str),
    /// (engine) No table of that name or unique suffix.
    #[error("Invalid table name ({0})")]
    InvalidTableName(String),
    /// (engine) No action profile of that name or unique suffix.
    #[error("Invalid action profile name ({0})")]
    InvalidActionProfileName(String),
    /// (engine) No meter array of that name.
    #[error("Invalid meter name ({0})")]
    InvalidMeterName(String),
    /// (engine) No counter array of that name.
    #[error("Invalid counter name ({0})")]
    InvalidCounterName(String),
    /// (engine) No register array of that name.
    #[error("Invalid register name ({0})")]
    InvalidRegisterName(String),
    /// (engine) No parser value set of that name.
    #[error("Invalid parser value set name ({0})")]
    InvalidPvsName(String),
    /// (engine) No custom CRC calculation of that name and width.
    #[error("Invalid crc{width}_custom name ({name})")]
    InvalidCrcName {
        /// 16 or 32.
        width: u32,
        /// The name given.
        name: String,
    },
    /// (engine) The table does not have that action.
    #[error("Table {table} has no action {action}")]
    TableHasNoAction {
        /// The table, as written.
        table: String,
        /// The action, as written.
        action: String,
    },
    /// (engine) The action profile does not have that action.
    #[error("Action profile '{profile}' has no action '{action}'")]
    ProfileHasNoAction {
        /// The profile, as written.
        profile: String,
        /// The action, as written.
        action: String,
    },
    /// (engine) Wrong number of action parameters.
    #[error("Action {action} needs {expected} parameters")]
    WrongParamCount {
        /// The action (as written for table_set_default, full name otherwise).
        action: String,
        /// How many it takes.
        expected: usize,
    },
    /// (engine) Wrong number of match fields.
    #[error("Table {table} needs {expected} key fields")]
    WrongKeyCount {
        /// The table, as written.
        table: String,
        /// How many key fields it has.
        expected: usize,
    },
    /// The last token of an entry for a ternary or range table is not an
    /// integer priority.
    #[error("Table is ternary, but could not extract a valid priority from args")]
    NoPriority,
    /// `table_indirect_add`: not exactly one handle after `=>`.
    #[error("Invalid arguments, could not find handle")]
    NoHandle,
    /// (engine) An indirect-table command on a direct table.
    #[error("Cannot run this command on non-indirect table")]
    NotIndirect,
    /// (engine) A group command on a table without a selector.
    #[error("Cannot run this command on non-indirect table, or on indirect table with no selector")]
    NotIndirectWithSelector,
    /// (engine) A group command on a profile without a selector.
    #[error("Cannot run this command on an action profile without selector")]
    ProfileWithoutSelector,
    /// (engine) A legacy `table_indirect_*` command on a shared profile.
    #[error("Legacy command does not work with shared action profiles")]
    LegacySharedProfile,
    /// (engine) `table_set_timeout` on a table without timeouts.
    #[error("Table {0} does not support entry timeouts")]
    NoTimeoutSupport(String),
    /// (engine) A multicast command without a replication engine.
    #[error("Cannot execute this command without packet replication engine")]
    NoPre,
    /// A port or lag list member that is not a non-negative integer; `what`
    /// is "port" or "lag".
    #[error("'{text}' is not a valid {what} number")]
    InvalidPortNumber {
        /// The token.
        text: String,
        /// "port" or "lag".
        what: &'static str,
    },
    /// A port or lag listed twice.
    #[error("Found duplicate {what} number '{number}'")]
    DuplicatePort {
        /// "port" or "lag".
        what: &'static str,
        /// The repeated number.
        number: u32,
    },
    /// (engine) Not as many `rate:burst` pairs as the meter has rates.
    #[error("Invalid number of rates, expected {expected} but got {got}")]
    WrongRateCount {
        /// The meter's rate count.
        expected: usize,
        /// Pairs given.
        got: usize,
    },
    /// A `rate:burst` pair that does not read as float:int.
    #[error("Error while parsing rates")]
    BadRates,
    /// (engine) `load_new_config_file` on a path that is not a file.
    #[error("Not a valid filename")]
    NotAFile,
    /// (engine) `load_new_config_file` on a file that is not JSON.
    #[error("Not a valid JSON file")]
    NotJson,
    /// A CRC parameter above the CRC's width.
    #[error("Integer cannot fit within {0} bits")]
    IntegerTooWide(u32),
    /// A CRC reflect flag that is not a bool.
    #[error("Invalid bool parameter")]
    BadBool,
    /// (engine) `pvs_add`/`pvs_remove` value wider than the set.
    #[error("Input is too large, it should fit within {0} bits")]
    PvsValueTooLarge(u32),
    /// A parser value set value that is not an integer.
    #[error("Invalid input, could not cast to integer, try in hex with 0x prefix")]
    PvsNotAnInteger,
    /// `set_toeplitz_hash_key` with a key that is not hex.
    #[error("Toeplitz hash key must be a hex string")]
    ToeplitzNotHex,
    /// `set_toeplitz_hash_key` with a key not a multiple of 4 bytes.
    #[error("Toeplitz hash key must be a multiple of 4 bytes in length")]
    ToeplitzLength,
    /// (engine) A match-key field the engine could not parse
    /// ([`crate::text::key::parse_match`]).
    #[error("{0}")]
    MatchKey(MatchError),
    /// (engine) An action parameter the engine could not parse
    /// ([`crate::text::value::parse_value`]).
    #[error("Error while parsing {field} - {error}")]
    RuntimeData {
        /// The parameter token.
        field: String,
        /// Why.
        error: ValueError,
    },
    /// (engine) The switch refused the operation; `code` is the Thrift error
    /// code's name (e.g. table: `INVALID_HANDLE`, `DUPLICATE_ENTRY`,
    /// `BAD_MATCH_KEY`, `TABLE_FULL`; counter/register/meter:
    /// `INVALID_INDEX`; PRE: `INVALID_MGID`; mirroring:
    /// `SESSION_NOT_FOUND`).
    #[error("Invalid {kind} operation ({code})")]
    Operation {
        /// Which service refused it.
        kind: OperationKind,
        /// The error code's name.
        code: String,
    },
}

/// The service named in "Invalid ... operation (CODE)".
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OperationKind {
    /// "table"
    Table,
    /// "counter"
    Counter,
    /// "meter"
    Meter,
    /// "register"
    Register,
    /// "learn"
    Learn,
    /// "swap"
    Swap,
    /// "device manager"
    DeviceManager,
    /// "crc"
    Crc,
    /// "Toeplitz hash"
    ToeplitzHash,
    /// "parser value set"
    ParserValueSet,
    /// "PRE" (the multicast engine)
    Pre,
    /// "mirroring"
    Mirroring,
}

impl std::fmt::Display for OperationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OperationKind::Table => "table",
            OperationKind::Counter => "counter",
            OperationKind::Meter => "meter",
            OperationKind::Register => "register",
            OperationKind::Learn => "learn",
            OperationKind::Swap => "swap",
            OperationKind::DeviceManager => "device manager",
            OperationKind::Crc => "crc",
            OperationKind::ToeplitzHash => "Toeplitz hash",
            OperationKind::ParserValueSet => "parser value set",
            OperationKind::Pre => "PRE",
            OperationKind::Mirroring => "mirroring",
        })
    }
}

impl CliError {
    /// The line the CLI prints for this error (`handle_bad_input`'s prefix
    /// plus the message).
    pub fn printed(&self) -> String {
        match self {
            CliError::UnknownSyntax(_) | CliError::Operation { .. } => self.to_string(),
            CliError::MatchKey(_) => format!("Invalid match key: {self}"),
            CliError::RuntimeData { .. } => format!("Invalid runtime data: {self}"),
            _ => format!("Error: {self}"),
        }
    }
}

impl From<MatchError> for CliError {
    fn from(e: MatchError) -> CliError {
        CliError::MatchKey(e)
    }
}
