//! ernic's NVMe over Fabrics target (seed 001, "NVMe over Fabrics"): a
//! controller that serves NVMe commands carried over RDMA. This first part
//! holds only the start of the [`wire`] formats of NVMe
//! (`include/linux/nvme.h`): the submission queue entry and its opcodes.
//! The completion entry, SGL descriptors and Fabrics commands come next; it
//! has no controller, no state and no I/O yet.
//!
//! What it promises: every decoder reads untrusted bytes from a host, checks
//! the buffer's length before any field is read, and never panics; a short
//! buffer is an [`Error`], an unknown opcode or descriptor type is a value
//! (`Unknown(u8)`, `Other`), not a failure.

pub mod config;
pub mod namespace;
pub mod wire;

mod error;
pub use error::Error;

#[cfg(test)]
mod test_util;
