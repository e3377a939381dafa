//! ernic's NVMe over Fabrics target (seed 001, "NVMe over Fabrics"): a
//! controller that serves NVMe commands carried over RDMA. It holds NVMe's
//! [`wire`] formats (`include/linux/nvme.h`): the submission queue entry and
//! its opcodes, the completion queue entry and the completion status values.
//! It has no controller, no state and no I/O.
//!
//! What it promises: every decoder reads untrusted bytes from a host, checks
//! the buffer's length before any field is read, and never panics; a short
//! buffer is an [`Error`], an unknown opcode or descriptor type is a value
//! (`Unknown(u8)`, `Other`), not a failure.

pub mod config;
pub mod controller;
pub mod namespace;
pub mod wire;

mod error;
pub use error::Error;

#[cfg(test)]
mod test_util;
