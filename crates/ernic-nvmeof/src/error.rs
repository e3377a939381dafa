//! The one error of this crate's decoders: what about the bytes was wrong.

/// Why bytes did not decode as the format asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than the structure.
    #[error("{format} needs {need} bytes, got {len}")]
    Truncated {
        /// The structure.
        format: &'static str,
        /// Its length.
        need: usize,
        /// The buffer's.
        len: usize,
    },
}
