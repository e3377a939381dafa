//! NVMe's wire formats, each as two tiers (smoltcp's `wire`): a lossless
//! view `Packet<T: AsRef<[u8]>>` over the bytes with typed getters and
//! setters, and where the target needs one a validated `Repr` with
//! `parse`/`emit`. Layouts and values are those of Linux's
//! `include/linux/nvme.h`; all multi-byte fields are little-endian.
//!
//! After `Packet::new_checked` (or a successful `check_len`) no accessor
//! panics. Nothing here allocates, keeps state or trusts a length from the
//! bytes.

pub mod cqe;
pub mod fabrics;
pub mod sgl;
pub mod sqe;
pub mod status;

mod bits;
