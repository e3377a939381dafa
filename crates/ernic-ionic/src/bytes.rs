//! Fixed-width fields at byte offsets, in the byte order the ionic ABI
//! gives each: little-endian for device commands, admin command payloads
//! and descriptors, big-endian for the RDMA WQE and CQE words. Offsets
//! come from `fw.rs` and `regs.rs`; the caller has checked the buffer's
//! length (like indexing, these panic past its end).

/// The little-endian `u16` at `at`.
pub fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The little-endian `u32` at `at`.
pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The little-endian `u64` at `at`.
pub fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The big-endian `u16` at `at`.
pub fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// The big-endian `u32` at `at`.
pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The big-endian `u64` at `at`.
pub fn be64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Copies `v` (a value's bytes in the field's order) to `at`.
pub fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// Writes `v` little-endian at `at`.
pub fn put_le32(b: &mut [u8], at: usize, v: u32) {
    put(b, at, &v.to_le_bytes());
}
