//! The text formats the P4 engine is driven by, as parsers to plain typed
//! data: bmv2's value and match-key spellings ([`value`], [`key`]), the
//! `simple_switch_CLI` command language ([`cli`]) and p4c's STF test files
//! ([`stf`]).
//!
//! Nothing here knows the engine: names stay `String`s and the widths and
//! match kinds of fields come from the caller, which resolves names and
//! executes. Every parser reads untrusted text and must not panic on any
//! input; each error carries the wording of the tool it imitates.

pub mod cli;
pub mod key;
pub mod stf;
pub mod value;
