//! ernic's NVMe over Fabrics target (seed 001, "NVMe over Fabrics"): a
//! controller that serves NVMe commands carried over RDMA. It holds NVMe's
//! [`wire`] formats (`include/linux/nvme.h`): the submission queue entry and
//! its opcodes, the SGL descriptor of its data pointer, the completion queue
//! entry and the completion status values, and the Fabrics commands (Connect
//! and its data, Property Get/Set) with the controller properties they
//! address. It has no controller, no state and no I/O.
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
