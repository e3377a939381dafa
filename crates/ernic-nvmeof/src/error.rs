//! The one error of this crate's decoders and encoders: what about the bytes
//! (or the value to be written) was wrong.

/// Why bytes did not decode as the format asked for, or a value could not be
/// written into it.
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
    /// A Fabrics decoder was given a command that is not a Fabrics command.
    #[error("opcode {opcode:#04x} is not the Fabrics opcode 0x7f")]
    NotFabrics {
        /// The command's opcode.
        opcode: u8,
    },
    /// A Fabrics command of another type than the decoder's.
    #[error("Fabrics command type {found:#04x}, expected {expected:#04x}")]
    FabricsType {
        /// The type the decoder reads.
        expected: u8,
        /// The command's `fctype`.
        found: u8,
    },
    /// An NQN field holds no NUL: the name runs past its field.
    #[error("{field} has no NUL in its {len} bytes")]
    NqnUnterminated {
        /// Which NQN (`subsysnqn`, `hostnqn`).
        field: &'static str,
        /// The field's length.
        len: usize,
    },
    /// An NQN is longer than a qualified name may be (`NVMF_NQN_SIZE`).
    #[error("{field} is {len} bytes long, over the {max} an NQN may have")]
    NqnTooLong {
        /// Which NQN.
        field: &'static str,
        /// Its length before the NUL.
        len: usize,
        /// `NVMF_NQN_SIZE`.
        max: usize,
    },
    /// An NQN is not UTF-8.
    #[error("{field} is not UTF-8 from byte {valid_up_to}")]
    NqnNotUtf8 {
        /// Which NQN.
        field: &'static str,
        /// The length of its valid UTF-8 prefix.
        valid_up_to: usize,
    },
    /// An NQN to be written contains a NUL, which would end it early.
    #[error("{field} has a NUL at byte {at}")]
    NqnInteriorNul {
        /// Which NQN.
        field: &'static str,
        /// Where.
        at: usize,
    },
    /// A value is wider than the field that `emit` was asked to write it to.
    #[error("{field} {value:#x} does not fit its field (max {max:#x})")]
    TooWide {
        /// The field.
        field: &'static str,
        /// The value.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// An `Other` SGL descriptor names a type and subtype that have a
    /// variant of their own, so it would not read back as `Other`.
    #[error("SGL descriptor type {ty:#x} subtype {subtype:#x} is not an Other descriptor")]
    SglNotOther {
        /// Descriptor type.
        ty: u8,
        /// Descriptor subtype.
        subtype: u8,
    },
}
