//! # ernic-ops: operating ernic
//!
//! What every ernic process shares to be watched and debugged:
//!
//! - [`schema`]: the stats file, a versioned JSON document (`ernic-stats/1`)
//!   with the instance's identity and its counters in labelled groups;
//! - [`file`]: writing it atomically (write, fsync, rename) about once a
//!   second and at exit, and reading it back with bounds;
//! - [`log`]: the one logging switch (`--log-level`, `ERNIC_LOG`,
//!   `--log-file`, `--log-format`) over `tracing`;
//! - [`signal`]: ending on SIGTERM or SIGINT with the file written last.
//!
//! Counting itself lives where the events are (`ernic_core::Counters`, the
//! mesh's and the transport's atomics); this crate only names and carries
//! the values, so it is never on a data path.

pub mod file;
pub mod log;
pub mod schema;
// sigmask and sigwait are libc calls.
#[allow(unsafe_code)]
pub mod signal;

pub use file::{ReadError, StatsFile, StatsThread, read_stats};
pub use log::LogArgs;
pub use schema::{FaultStat, Group, Instance, SCHEMA, StatsDoc};
