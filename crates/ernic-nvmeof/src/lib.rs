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
//!   Write Zeroes, Dataset Management). The transport calls `plan`, moves
//!   the bytes, and calls `execute`.
//! - [`rdma`]: the NVMe/RDMA transport, an RDMA consumer of the fabric as
//!   nvmet-rdma is: a device of its own, a GSI QP answering rdma_cm's
//!   connection requests through [`ernic_cm`], an RC QP per queue numbered
//!   from `0xc0xxxx`, data moved by RDMA READ and WRITE against the host's
//!   keys, responses by SEND (with invalidate when asked).
//! - [`serve`]: a target on a thread: on a fabric, or beside a front end
//!   with an engine of its own (`ernic-server --backend nvmeof`).
//! - [`host`]: the initiator (`ernic nvme perf`, `identify`, `discover`):
//!   queues connected through the IB CM as Linux's nvme-rdma connects
//!   them, data buffers fast-registered per command.
//!
//! What it promises: every decoder reads untrusted bytes from a host, checks
//! the buffer's length before any field is read, and never panics; a short
//! buffer is an [`Error`], an unknown opcode or descriptor type is a value
//! (`Unknown(u8)`, `Other`), not a failure. Every count from a host is
//! bounded by a documented limit before it sizes anything.

pub mod config;
pub mod controller;
pub mod host;
pub mod namespace;
pub mod rdma;
pub mod serve;
pub mod stats;
pub mod wire;

mod error;
pub use error::Error;

#[cfg(test)]
mod test_util;
