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
    /// A MAD header's base version is not `IB_MGMT_BASE_VERSION` (1).
    #[error("MAD base version {got}, expected 1")]
    BaseVersion {
        /// What the header says.
        got: u8,
    },
    /// The MAD is not of the CM class (`IB_MGMT_CLASS_CM`, 0x07).
    #[error("MAD class {got:#04x} is not the CM class (0x07)")]
    NotCm {
        /// What the header says.
        got: u8,
    },
    /// A CM MAD whose class version is not 2 (`IB_CM_CLASS_VERSION`).
    #[error("CM class version {got}, expected 2")]
    ClassVersion {
        /// What the header says.
        got: u8,
    },
    /// A CM MAD whose method is not SEND (0x03), the only one CM messages use.
    #[error("CM method {got:#04x}, expected SEND (0x03)")]
    Method {
        /// What the header says.
        got: u8,
    },
    /// The attribute id is not the message's being parsed.
    #[error("{format} has attribute id {expected:#06x}, the MAD says {got:#06x}")]
    Attribute {
        /// The message being parsed.
        format: &'static str,
        /// Its attribute id.
        expected: u16,
        /// What the header says.
        got: u16,
    },
    /// A CM attribute this crate does not decode (SIDR, LAP, APR, others).
    #[error("CM attribute id {got:#06x} is not one this crate decodes")]
    UnknownAttribute {
        /// What the header says.
        got: u16,
    },
    /// A 2-bit "message REJected / MRAed" field holds its reserved value 3.
    #[error("{field} holds the reserved value {value}")]
    ReservedMessage {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u8,
    },
    /// A REJ whose Rejection Info Length exceeds the 72-byte ARI field.
    #[error("REJ says {len} bytes of rejection info, the field holds {max}")]
    AriLength {
        /// What the REJ says.
        len: u8,
        /// The ARI field's size.
        max: usize,
    },
    /// An rdma_cm header whose `cma_version` is not 0.
    #[error("rdma_cm header version {got:#04x}, expected 0")]
    CmaVersion {
        /// What the header says.
        got: u8,
    },
    /// An rdma_cm header whose IP version (the top nibble) is not 4 or 6.
    #[error("rdma_cm header IP version {got}, expected 4 or 6")]
    IpVersion {
        /// The top nibble of `ip_version`.
        got: u8,
    },
    /// NVMe/RDMA private data of a record format other than 1.0 (0).
    #[error("NVMe/RDMA private data record format {got}, expected 0")]
    NvmeRecfmt {
        /// What the private data says.
        got: u16,
    },
}
