//! The vfio-user server side of ernic's emulated NIC (seed 001, "How a PCI
//! Device Is Emulated in Userspace"), to QEMU's
//! `docs/interop/vfio-user.rst`.
//!
//! So far: [`proto`], the message codec a server needs — the header, every
//! client request decoded with its lengths checked, the replies encoded —
//! with byte-layout tests against the spec's tables and property tests
//! over the decoder. The socket loop, DMA maps (memfd mmap), regions and
//! IRQ eventfds build on it.
//!
//! Still to decide (issue 6): how much of rust-vmm's `vfio-user` crate the
//! server can use. This codec states the wire format with the checks ernic
//! needs on untrusted input either way, and its tests pin the layouts.

pub mod proto;
