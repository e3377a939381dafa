//! ernic's ionic front end: the PCI function a guest's stock `ionic` and
//! `ionic_rdma` drivers bind to (seed 001, "The Device the Guest Sees"),
//! served over vfio-user by `ernic-vfio`.
//!
//! - [`regs`] and [`fw`]: the layouts of Linux's `ionic_if.h`,
//!   `ionic_regs.h` and `ionic_fw.h` (checked by `tests/layout.rs`);
//! - [`bar0`]: the register file: device info, device commands, interrupt
//!   control, and the Ethernet LIF ([`bar0::EthLif`]: its queues, the
//!   admin and notify queues, its statistics);
//! - [`eth`] and [`tap`]: the Ethernet queues and the host TAP;
//! - [`doorbell`]: BAR 2's doorbell decoding;
//! - [`bootstrap`]: the RDMA bootstrap (commands 50-53); [`rdmadev`]: the RDMA
//!   admin queues, event queues and the objects they create in
//!   `ernic-core`;
//! - [`profile`]: NIC profiles; [`limits`]: every limit on what a guest
//!   can make the device hold, and the most memory that adds up to;
//! - [`p4hook`]: the hooks a match-action engine installs on the
//!   Ethernet and RDMA send paths, and its device commands 70-72;
//! - [`function`]: the function itself — identity, config space, regions
//!   and interrupts as a `ernic_vfio::server::Device`.

pub mod bar0;
pub mod bootstrap;
pub mod bytes;
pub mod doorbell;
pub mod eth;
pub mod function;
pub mod fw;
pub mod limits;
pub mod p4hook;
pub mod profile;
#[allow(unsafe_code)]
pub mod rdmadev;
pub mod regs;
#[allow(unsafe_code)]
pub mod tap;
