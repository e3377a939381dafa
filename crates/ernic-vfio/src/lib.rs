//! The vfio-user server side of ernic's emulated NIC (seed 001, "How a PCI
//! Device Is Emulated in Userspace"), to QEMU's
//! `docs/interop/vfio-user.rst`.
//!
//! - [`proto`]: the message codec — the header, every client request
//!   decoded with its lengths checked, the replies encoded — with
//!   byte-layout tests against the spec's tables and property tests over
//!   the decoder;
//! - [`sock`]: messages with `SCM_RIGHTS` descriptors on a UNIX socket;
//! - [`dma`]: the client's DMA windows, mmapped from its descriptors, and
//!   checked device reads and writes of guest memory; memory not sealed
//!   against shrinking refused, or taken under [`guard`], a SIGBUS
//!   handler that turns a shrunk file into failed DMA;
//! - [`pci`]: a function's configuration space — identity, BARs with the
//!   sizing protocol, INTx, an MSI-X capability — and vfio's PCI region
//!   and interrupt indexes;
//! - [`client`]: the other end, as QEMU plays it, for tests and for
//!   drivers that attach over the socket;
//! - [`server`]: a [`server::Device`] served to one client at a time —
//!   version handshake, DMA maps, region info and I/O, IRQ eventfds with
//!   mask and latch, reset; a departing client's windows and eventfds are
//!   dropped, the device's state stays.
//!
//! - [`shm`]: memory the server shares with the client for sparse-mmap
//!   areas (the ionic function's shared doorbell pages).
//!
//! # Limits
//!
//! The client is untrusted; what it can make the server hold is bounded:
//!
//! | what | limit | where |
//! | --- | --- | --- |
//! | clients at once | 1 (the next waits in the socket's backlog) | [`server::Server::serve`] |
//! | a message | 16-byte header + 16 + `max_data_xfer_size` (1 MiB by default) | [`proto::max_message`] |
//! | descriptors in a message | 16 | [`sock::MAX_FDS`] |
//! | DMA windows | `max_dma_maps` announced (65 535 by default), each within its file, no descriptor kept | [`dma::Dma::new`] |
//! | guest memory | sealed against shrinking (`F_SEAL_SHRINK`), unless [`dma::Unsealed::Guard`] | [`dma`] |
//! | guarded (unsealed) windows | 256 | [`guard::SLOTS`] |
//! | replies queued unread | reading stops at one largest message queued (or 16 descriptors): at most two largest messages | [`server`] |
//! | a client that takes no reply, or leaves a message half sent | disconnected after 10 s by default | [`server::STALL_TIMEOUT`], [`server::Options`] |
//! | a departed client's memory | unmapped when it leaves, views included ([`server::Device::unmapped`]) | [`server::Server::serve`] |
//!
//! The decoders of bytes from the socket, for fuzzing: [`proto::Header::parse`],
//! [`proto::check_header`], [`proto::decode`], [`proto::Capabilities::parse`]
//! and, on the client's side, [`proto::RegionInfo::parse`].
//!
//! Why not rust-vmm's `vfio-user` crate: its server owns the loop that
//! reads the socket, while ernic's loop must also serve a TAP, timers, the
//! mesh and memory the client writes without a message (the shared
//! doorbell pages); and this codec checks every length from the socket
//! before anything is allocated or indexed, with a property test over it.

#[allow(unsafe_code)]
pub mod client;
#[allow(unsafe_code)]
pub mod dma;
#[allow(unsafe_code)]
pub mod guard;
pub mod pci;
pub mod proto;
#[allow(unsafe_code)]
pub mod server;
#[allow(unsafe_code)]
pub mod shm;
#[allow(unsafe_code)]
pub mod sock;
