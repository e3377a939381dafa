//! ernic's NVMe over Fabrics target (seed 001, "NVMe over Fabrics"): the
//! controller that stock Linux `nvme connect -t rdma` brings up and uses.
//!
//! - [`wire`]: NVMe's formats (`include/linux/nvme.h`): the submission queue
//!   entry and its opcodes, the SGL descriptor, the completion entry and
//!   status values, and the Fabrics commands (Connect and its data, Property
//!   Get/Set) with the controller properties they address.
//! - [`config`]: the `--backend nvmeof:OPTS` option string (NQN, namespaces,
//!   block size, queues, depth) and its limits.
//! - [`namespace`]: a namespace's blocks in lazily allocated RAM or a file.
//! - [`controller`]: the sans-IO [`Target`](controller::Target): one NVM
//!   subsystem and the discovery subsystem, dynamic controllers, and every
//!   command Linux's host needs (Connect, properties, Identify, features,
//!   log pages incl. discovery, keep-alive, AER, Abort, Read, Write, Flush,
//!   Write Zeroes, Dataset Management). The RDMA transport that carries
//!   capsules and moves data is not here: it calls `plan`, moves the bytes,
//!   and calls `execute`.
//!
//! What it promises: every decoder reads untrusted bytes from a host, checks
//! the buffer's length before any field is read, and never panics; a short
//! buffer is an [`Error`], an unknown opcode or descriptor type is a value
//! (`Unknown(u8)`, `Other`), not a failure. Every count from a host is
//! bounded by a documented limit before it sizes anything.

pub mod config;
pub mod controller;
pub mod namespace;
pub mod wire;

mod error;
pub use error::Error;

#[cfg(test)]
mod test_util;
