//! The driver's one error type: what a vfio-user exchange, a device
//! command, an admin command or the driver's own bookkeeping can fail
//! with.

use ernic_vfio::client::ClientError;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The vfio-user conversation failed.
    #[error("vfio-user: {0}")]
    Client(#[from] ClientError),
    /// A local resource (memory, a mapping) could not be had.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A device command failed.
    #[error("device command {op} failed with status {status}")]
    DevCmd {
        /// The opcode.
        op: u8,
        /// `ionic_status_code`.
        status: u8,
    },
    /// An RDMA admin command failed.
    #[error("admin command {op} failed with status {status}")]
    Admin {
        /// The opcode.
        op: u8,
        /// `ionic_v1_admin_status`.
        status: u32,
    },
    /// The device did not answer in time.
    #[error("{0} timed out")]
    Timeout(&'static str),
    /// The driver's memory is used up.
    #[error("out of driver memory ({0} bytes wanted)")]
    NoMemory(u64),
    /// A request the driver cannot express.
    #[error("{0}")]
    Unsupported(&'static str),
    /// Every PD id is in use.
    #[error("all {max} protection domain ids are in use")]
    NoPd {
        /// How many ids there are.
        max: u32,
    },
    /// The queue has no room.
    #[error("queue full ({depth} entries)")]
    Full {
        /// The queue's depth.
        depth: u32,
    },
    /// A frame does not fit the buffer it goes through.
    #[error("a frame of {len} bytes does not fit a buffer of {room}")]
    FrameSize {
        /// The frame's bytes.
        len: usize,
        /// The buffer's.
        room: usize,
    },
}
