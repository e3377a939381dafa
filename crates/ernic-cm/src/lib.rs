//! IB connection management (IBTA vol. 1, chapter 12) over GSI MADs: the
//! wire formats of the CM messages (REQ, REP, RTU, REJ, MRA, DREQ, DREP)
//! and of the private data rdma_cm and NVMe/RDMA carry inside them, and
//! [`conn`], the connection state machine that sends and answers them.
//! Any verbs consumer that connects RC queue pairs the way Linux does (the
//! NVMe-oF target, the rdma_cm shim) builds on these.
//!
//! What it promises: the wire modules are decoders of untrusted bytes from
//! the fabric. Every format is two-tier, as smoltcp's wire modules: a
//! lossless view `Packet<T: AsRef<[u8]>>` whose accessors cannot panic
//! once `Packet::new_checked` succeeded, and a validated `Repr` with
//! `parse`/`emit`/`buffer_len`. Every length is checked before it is used,
//! no input makes a decoder panic, and nothing allocates. What a format
//! forbids (another class or attribute, a reserved code, an over-long
//! rejection info) is an [`Error`], never a guess. [`conn::Cm`] is
//! sans-IO: MADs and time are handed in, MADs and events are taken out,
//! and every queue it holds has a bound.
//!
//! What it must never do: the wire modules hold no state; only [`conn`]
//! does, and it neither reads a clock (every call is given `now`) nor
//! owns a socket, a thread or a QP.
//!
//! The layouts are Linux's, which transcribes the IBTA tables:
//! `include/rdma/ibta_vol1_c12.h` (every CM field as byte offset, bit
//! offset and width, through the `IBA_FIELD*_LOC` macros of
//! `include/rdma/iba.h`), `include/rdma/ib_mad.h` (the common MAD header),
//! `include/rdma/ib_cm.h` (attribute ids, private data sizes, reject
//! reasons), `drivers/infiniband/core/cma.c` (`struct cma_hdr`) and
//! `include/linux/nvme-rdma.h`. CM fields are big-endian (network order);
//! NVMe/RDMA's private data is little-endian.

mod bits;
pub mod conn;
mod error;
pub mod mad;
pub mod msg;
pub mod private_data;

pub mod drep;
pub mod dreq;
pub mod mra;
pub mod rej;
pub mod rep;
pub mod req;
pub mod rtu;
pub mod sidr;

pub use bits::{Bits, Field};
pub use error::Error;
pub use msg::CmMessage;
