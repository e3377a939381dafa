//! [`ProtoError`]: what a client sent that cannot be served, and the
//! errno its reply carries.

use super::Command;

/// What a client sent that cannot be served, with the errno its reply
/// carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The header's size is below the header or above what we accept.
    #[error("message size {size} is outside {min}..={max}")]
    BadSize {
        /// The size claimed.
        size: u32,
        /// The smallest allowed.
        min: usize,
        /// The largest allowed.
        max: usize,
    },
    /// A reply (or anything but a command) where a command belongs.
    #[error("flags {0:#x}: not a command")]
    NotCommand(u32),
    /// No such command.
    #[error("unknown command {0}")]
    UnknownCommand(u16),
    /// A command this server does not implement.
    #[error("command {0:?} is not supported")]
    Unsupported(Command),
    /// The body is shorter than the command's fixed part.
    #[error("{what}: {got} bytes where {need} are needed")]
    Truncated {
        /// The command.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        got: usize,
    },
    /// A field with a value the spec does not allow.
    #[error("{what}: {why}")]
    Invalid {
        /// The command and field.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A transfer larger than `max_data_xfer_size`.
    #[error("{what}: {count} bytes exceed the {max}-byte transfer limit")]
    TooLarge {
        /// The command.
        what: &'static str,
        /// Bytes asked for.
        count: u64,
        /// The limit.
        max: u32,
    },
}

impl ProtoError {
    /// The errno an error reply reports for this.
    pub fn errno(&self) -> i32 {
        match self {
            ProtoError::UnknownCommand(_) | ProtoError::Unsupported(_) => libc::ENOTSUP,
            ProtoError::TooLarge { .. } => libc::E2BIG,
            _ => libc::EINVAL,
        }
    }
}
