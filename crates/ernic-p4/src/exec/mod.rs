//! Running a loaded program: the packet header vector, expressions, the
//! parser and deparser, tables, meters and hashes, and v1model's packet
//! flow through the switch.

mod action;
mod apply;
mod bits;
pub mod control;
mod eval;
mod hash;
pub mod meter;
mod packet;
mod phv;
pub mod state;
mod switch;
pub mod tables;

pub use phv::{ExecError, Phv};
pub use state::State;
pub use switch::{DROP_PORT, Externs, MAX_COPIES, Output, Switch, instance};
