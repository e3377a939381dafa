//! ernic's ionic front end: the PCI function a guest's stock `ionic`
//! driver binds to (seed 001, "The Device the Guest Sees"), served over
//! vfio-user by `ernic-vfio`.
//!
//! So far: BAR 0's register file ([`bar0`], laid out in [`regs`] as
//! Linux's `ionic_if.h` and `ionic_regs.h` define it) with the device info
//! block, the device command registers (NOP, IDENTIFY, INIT, RESET; other
//! opcodes fail with `IONIC_RC_EOPCODE` until they are built) and
//! per-vector interrupt control; BAR 2's doorbell decoding ([`doorbell`]);
//! and the function itself ([`function`]): identity, config space, regions
//! and interrupts as a `ernic_vfio::server::Device`.

pub mod bar0;
pub mod doorbell;
pub mod eth;
pub mod function;
pub mod profile;
pub mod rdma;
pub mod regs;
#[allow(unsafe_code)]
pub mod tap;
