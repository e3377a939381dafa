//! A namespace's backing store: the blocks behind one nsid, in RAM or in a
//! file, and the identifiers the host sees for it.
//!
//! A RAM namespace is allocated lazily in [`RAM_CHUNK`]-byte chunks: an
//! untouched namespace of any size costs a map and nothing more, blocks never
//! written read as zeros, and Write Zeroes or Deallocate over a whole chunk
//! gives its memory back. The first write into an untouched chunk is the only
//! operation that allocates. A file namespace reads and writes with
//! positioned I/O (`pread`/`pwrite` through [`FileExt`]); its size is the
//! file's length, which must be a whole number of blocks, and Flush is
//! `sync_data`.
//!
//! Every operation checks its LBA range against the namespace before any byte
//! moves, with checked arithmetic: a range past the end is
//! [`NamespaceError::LbaRange`], never a panic or a wrap. The NGUID and UUID
//! are derived from the subsystem NQN and the nsid alone, so a restarted
//! target presents the same namespace to the host.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes in one lazily allocated chunk of a RAM namespace.
pub const RAM_CHUNK: usize = 1 << 20;

/// The largest namespace this target serves, in bytes (16 TiB): it bounds
/// the LBA arithmetic and the chunk map of a RAM namespace.
pub const MAX_NAMESPACE_BYTES: u64 = 1 << 44;

/// A logical block size the target offers (`lbaf[0].ds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockSize {
    /// 512-byte blocks (`ds` = 9).
    B512,
    /// 4096-byte blocks (`ds` = 12).
    B4096,
}

impl BlockSize {
    /// The block size as log2 of its bytes: `lbaf.ds`.
    pub const fn shift(self) -> u32 {
        match self {
            BlockSize::B512 => 9,
            BlockSize::B4096 => 12,
        }
    }

    /// The block size in bytes.
    pub const fn bytes(self) -> u32 {
        1 << self.shift()
    }
}

/// Why a namespace could not be set up or could not serve a request.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    /// The size is zero, not a whole number of blocks, or over the limit.
    #[error("namespace size {bytes} is not a non-zero multiple of {block_size} up to {max}")]
    BadSize {
        /// The size asked for.
        bytes: u64,
        /// The block size.
        block_size: u32,
        /// [`MAX_NAMESPACE_BYTES`].
        max: u64,
    },
    /// The backing file could not be opened or measured.
    #[error("cannot open backing file {path:?}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The range `[lba, lba + nlb)` does not lie inside the namespace.
    #[error("blocks {lba}+{nlb} are outside the namespace's {blocks} blocks")]
    LbaRange {
        /// First block.
        lba: u64,
        /// Number of blocks.
        nlb: u64,
        /// Blocks in the namespace.
        blocks: u64,
    },
    /// The buffer does not hold exactly the blocks asked for.
    #[error("buffer of {got} bytes for a transfer of {need} bytes")]
    BufferLength {
        /// Bytes the blocks take.
        need: u64,
        /// Bytes in the buffer.
        got: usize,
    },
    /// Reading or writing the backing file failed.
    #[error("backing file {op} failed")]
    Io {
        /// `"read"`, `"write"` or `"flush"`.
        op: &'static str,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

enum Store {
    Ram(HashMap<u64, Box<[u8]>>),
    File(File),
}

/// One namespace: its identity, geometry and backing store.
pub struct Namespace {
    nsid: u32,
    block: BlockSize,
    blocks: u64,
    nguid: [u8; 16],
    uuid: [u8; 16],
    store: Store,
}

impl std::fmt::Debug for Namespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Namespace")
            .field("nsid", &self.nsid)
            .field("block", &self.block)
            .field("blocks", &self.blocks)
            .field("file", &self.is_file())
            .finish()
    }
}

/// A zeroed buffer that Write Zeroes on a file copies from, so it allocates
/// nothing.
static ZEROES: [u8; 64 * 1024] = [0; 64 * 1024];

impl Namespace {
    /// A RAM namespace of `bytes` bytes; no memory is taken until a write.
    pub fn ram(
        nsid: u32,
        bytes: u64,
        block: BlockSize,
        subnqn: &str,
    ) -> Result<Namespace, NamespaceError> {
        let blocks = check_size(bytes, block)?;
        Ok(Namespace::with_store(
            nsid,
            block,
            blocks,
            subnqn,
            Store::Ram(HashMap::new()),
        ))
    }

    /// A namespace backed by the existing file at `path`, opened for reading
    /// and writing; its length must be a non-zero multiple of the block size.
    pub fn file(
        nsid: u32,
        path: &Path,
        block: BlockSize,
        subnqn: &str,
    ) -> Result<Namespace, NamespaceError> {
        let open_err = |source| NamespaceError::Open {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(open_err)?;
        let bytes = file.metadata().map_err(open_err)?.len();
        let blocks = check_size(bytes, block)?;
        Ok(Namespace::with_store(
            nsid,
            block,
            blocks,
            subnqn,
            Store::File(file),
        ))
    }

    fn with_store(nsid: u32, block: BlockSize, blocks: u64, subnqn: &str, store: Store) -> Self {
        Namespace {
            nsid,
            block,
            blocks,
            nguid: derive_id(b"ernic nguid", subnqn, nsid),
            uuid: uuid_from(derive_id(b"ernic uuid", subnqn, nsid)),
            store,
        }
    }

    /// The namespace id.
    pub fn nsid(&self) -> u32 {
        self.nsid
    }
    /// The logical block size.
    pub fn block_size(&self) -> BlockSize {
        self.block
    }
    /// The number of logical blocks (NSZE).
    pub fn blocks(&self) -> u64 {
        self.blocks
    }
    /// The namespace globally unique identifier (`nguid`).
    pub fn nguid(&self) -> [u8; 16] {
        self.nguid
    }
    /// The namespace UUID (an RFC 9562 version 8 UUID).
    pub fn uuid(&self) -> [u8; 16] {
        self.uuid
    }
    /// Whether a file backs the namespace.
    pub fn is_file(&self) -> bool {
        matches!(self.store, Store::File(_))
    }
    /// Bytes of RAM the namespace holds now (0 for a file).
    pub fn resident_bytes(&self) -> usize {
        match &self.store {
            Store::Ram(chunks) => chunks.len() * RAM_CHUNK,
            Store::File(_) => 0,
        }
    }

    /// The byte range of `[lba, lba + nlb)`, checked against the namespace.
    fn range(&self, lba: u64, nlb: u64) -> Result<(u64, u64), NamespaceError> {
        let out = NamespaceError::LbaRange {
            lba,
            nlb,
            blocks: self.blocks,
        };
        match lba.checked_add(nlb) {
            Some(end) if end <= self.blocks => {}
            _ => return Err(out),
        }
        // Cannot overflow: lba + nlb <= blocks <= MAX_NAMESPACE_BYTES >> 9.
        let shift = self.block.shift();
        Ok((lba << shift, nlb << shift))
    }

    fn check_buffer(len: u64, got: usize) -> Result<(), NamespaceError> {
        if u64::try_from(got).ok() != Some(len) {
            return Err(NamespaceError::BufferLength { need: len, got });
        }
        Ok(())
    }

    /// Reads `nlb` blocks from `lba` into `buf`, which must hold exactly
    /// that many bytes. Blocks never written read as zeros.
    pub fn read(&self, lba: u64, nlb: u64, buf: &mut [u8]) -> Result<(), NamespaceError> {
        let (off, len) = self.range(lba, nlb)?;
        Self::check_buffer(len, buf.len())?;
        match &self.store {
            Store::Ram(chunks) => {
                for (idx, within, piece) in pieces(off, buf.len()) {
                    let dst = &mut buf[piece];
                    match chunks.get(&idx) {
                        Some(c) => dst.copy_from_slice(&c[within..within + dst.len()]),
                        None => dst.fill(0),
                    }
                }
                Ok(())
            }
            Store::File(f) => f
                .read_exact_at(buf, off)
                .map_err(|source| NamespaceError::Io { op: "read", source }),
        }
    }

    /// Writes `nlb` blocks at `lba` from `buf`, which must hold exactly that
    /// many bytes.
    pub fn write(&mut self, lba: u64, nlb: u64, buf: &[u8]) -> Result<(), NamespaceError> {
        let (off, len) = self.range(lba, nlb)?;
        Self::check_buffer(len, buf.len())?;
        match &mut self.store {
            Store::Ram(chunks) => {
                for (idx, within, piece) in pieces(off, buf.len()) {
                    let src = &buf[piece];
                    let chunk = chunks
                        .entry(idx)
                        .or_insert_with(|| vec![0u8; RAM_CHUNK].into_boxed_slice());
                    chunk[within..within + src.len()].copy_from_slice(src);
                }
                Ok(())
            }
            Store::File(f) => f
                .write_all_at(buf, off)
                .map_err(|source| NamespaceError::Io {
                    op: "write",
                    source,
                }),
        }
    }

    /// Sets `nlb` blocks from `lba` to zeros. A RAM namespace frees the
    /// chunks the range covers whole; a file gets zeros written.
    pub fn write_zeroes(&mut self, lba: u64, nlb: u64) -> Result<(), NamespaceError> {
        let (off, len) = self.range(lba, nlb)?;
        match &mut self.store {
            Store::Ram(chunks) => {
                zero_ram(chunks, off, len);
                Ok(())
            }
            Store::File(f) => {
                let mut done = 0u64;
                while done < len {
                    let n = (len - done).min(ZEROES.len() as u64);
                    // n <= ZEROES.len(), so the cast and the slice hold.
                    f.write_all_at(&ZEROES[..n as usize], off + done)
                        .map_err(|source| NamespaceError::Io {
                            op: "write",
                            source,
                        })?;
                    done += n;
                }
                Ok(())
            }
        }
    }

    /// Deallocates `nlb` blocks from `lba` (Dataset Management, AD). A RAM
    /// namespace forgets them, so they read as zeros; on a file the hint is
    /// accepted and the data kept (the spec lets a controller keep
    /// deallocated data; DLFEAT does not promise zeros).
    pub fn deallocate(&mut self, lba: u64, nlb: u64) -> Result<(), NamespaceError> {
        let (off, len) = self.range(lba, nlb)?;
        if let Store::Ram(chunks) = &mut self.store {
            zero_ram(chunks, off, len);
        }
        Ok(())
    }

    /// Whether `[lba, lba + nlb)` lies inside the namespace.
    pub fn contains(&self, lba: u64, nlb: u64) -> bool {
        self.range(lba, nlb).is_ok()
    }

    /// Makes written data durable: `sync_data` on a file, nothing for RAM.
    pub fn flush(&mut self) -> Result<(), NamespaceError> {
        match &self.store {
            Store::Ram(_) => Ok(()),
            Store::File(f) => f.sync_data().map_err(|source| NamespaceError::Io {
                op: "flush",
                source,
            }),
        }
    }
}

fn check_size(bytes: u64, block: BlockSize) -> Result<u64, NamespaceError> {
    let bs = u64::from(block.bytes());
    if bytes == 0 || bytes % bs != 0 || bytes > MAX_NAMESPACE_BYTES {
        return Err(NamespaceError::BadSize {
            bytes,
            block_size: block.bytes(),
            max: MAX_NAMESPACE_BYTES,
        });
    }
    Ok(bytes >> block.shift())
}

/// Splits the byte run `[off, off + len)` at chunk boundaries: for each piece,
/// its chunk index, its offset inside the chunk, and its range in the buffer.
fn pieces(off: u64, len: usize) -> impl Iterator<Item = (u64, usize, std::ops::Range<usize>)> {
    let chunk = RAM_CHUNK as u64;
    let mut done = 0usize;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let at = off + done as u64;
        // at % chunk < RAM_CHUNK, so it fits a usize.
        let within = (at % chunk) as usize;
        let n = (RAM_CHUNK - within).min(len - done);
        let piece = done..done + n;
        done += n;
        Some((at / chunk, within, piece))
    })
}

fn zero_ram(chunks: &mut HashMap<u64, Box<[u8]>>, off: u64, len: u64) {
    let chunk = RAM_CHUNK as u64;
    let mut done = 0u64;
    while done < len {
        let at = off + done;
        let idx = at / chunk;
        let within = (at % chunk) as usize;
        let n = (chunk - within as u64).min(len - done);
        if n == chunk {
            chunks.remove(&idx);
        } else if let Some(c) = chunks.get_mut(&idx) {
            // within + n <= RAM_CHUNK by the min above.
            c[within..within + n as usize].fill(0);
        }
        done += n;
    }
}

/// 64-bit FNV-1a over `parts`, each followed by a 0xff separator.
fn fnv1a(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for part in parts {
        for &b in part.iter().chain(&[0xffu8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Sixteen bytes that depend only on `label`, the NQN and the nsid.
fn derive_id(label: &[u8], subnqn: &str, nsid: u32) -> [u8; 16] {
    let parts: [&[u8]; 3] = [label, subnqn.as_bytes(), &nsid.to_be_bytes()];
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&fnv1a(1, &parts).to_be_bytes());
    id[8..].copy_from_slice(&fnv1a(2, &parts).to_be_bytes());
    id
}

/// Marks 16 bytes as an RFC 9562 version 8 (custom) UUID.
fn uuid_from(mut id: [u8; 16]) -> [u8; 16] {
    id[6] = (id[6] & 0x0f) | 0x80;
    id[8] = (id[8] & 0x3f) | 0x80;
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::TempDir;

    const NQN: &str = "nqn.2024-01.io.ernic:test";

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[test]
    fn ram_untouched_reads_zero_and_costs_nothing() {
        let ns = Namespace::ram(1, 64 << 30, BlockSize::B512, NQN).unwrap();
        assert_eq!(ns.blocks(), (64u64 << 30) / 512);
        assert_eq!(ns.resident_bytes(), 0);
        let mut buf = vec![0xaau8; 4096];
        ns.read(ns.blocks() - 8, 8, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        assert_eq!(ns.resident_bytes(), 0);
    }

    #[test]
    fn ram_write_read_across_a_chunk_boundary() {
        let mut ns = Namespace::ram(1, 8 << 20, BlockSize::B512, NQN).unwrap();
        // 16 blocks straddling the 1 MiB boundary.
        let lba = (RAM_CHUNK as u64 / 512) - 8;
        let data = pattern(16 * 512, 7);
        ns.write(lba, 16, &data).unwrap();
        assert_eq!(ns.resident_bytes(), 2 * RAM_CHUNK);
        let mut back = vec![0u8; data.len()];
        ns.read(lba, 16, &mut back).unwrap();
        assert_eq!(back, data);
        // The block before stays zero.
        let mut before = vec![1u8; 512];
        ns.read(lba - 1, 1, &mut before).unwrap();
        assert!(before.iter().all(|&b| b == 0));
    }

    #[test]
    fn write_zeroes_and_deallocate_free_whole_chunks() {
        let mut ns = Namespace::ram(1, 4 << 20, BlockSize::B4096, NQN).unwrap();
        let per_chunk = RAM_CHUNK as u64 / 4096;
        let data = pattern(2 * RAM_CHUNK, 3);
        ns.write(0, 2 * per_chunk, &data).unwrap();
        assert_eq!(ns.resident_bytes(), 2 * RAM_CHUNK);
        // A partial zeroing keeps the chunk and zeroes only its blocks.
        ns.write_zeroes(1, 2).unwrap();
        let mut back = vec![0u8; 4 * 4096];
        ns.read(0, 4, &mut back).unwrap();
        assert_eq!(&back[..4096], &data[..4096]);
        assert!(back[4096..3 * 4096].iter().all(|&b| b == 0));
        assert_eq!(&back[3 * 4096..], &data[3 * 4096..4 * 4096]);
        assert_eq!(ns.resident_bytes(), 2 * RAM_CHUNK);
        // Deallocating a whole chunk frees it.
        ns.deallocate(per_chunk, per_chunk).unwrap();
        assert_eq!(ns.resident_bytes(), RAM_CHUNK);
        let mut second = vec![9u8; 4096];
        ns.read(per_chunk, 1, &mut second).unwrap();
        assert!(second.iter().all(|&b| b == 0));
    }

    #[test]
    fn lba_range_is_checked_without_overflow() {
        let mut ns = Namespace::ram(1, 1 << 20, BlockSize::B512, NQN).unwrap();
        let blocks = ns.blocks();
        let mut one = vec![0u8; 512];
        assert!(matches!(
            ns.read(blocks, 1, &mut one),
            Err(NamespaceError::LbaRange { lba, nlb: 1, blocks: b }) if lba == blocks && b == blocks
        ));
        assert!(matches!(
            ns.write(u64::MAX, 1, &one),
            Err(NamespaceError::LbaRange { .. })
        ));
        assert!(matches!(
            ns.write_zeroes(1, u64::MAX),
            Err(NamespaceError::LbaRange { .. })
        ));
        assert!(matches!(
            ns.deallocate(blocks - 1, 2),
            Err(NamespaceError::LbaRange { .. })
        ));
        assert!(ns.contains(blocks - 1, 1));
        assert!(!ns.contains(blocks - 1, 2));
        // The last block is fine.
        ns.write(blocks - 1, 1, &one).unwrap();
    }

    #[test]
    fn buffer_must_match_the_blocks() {
        let mut ns = Namespace::ram(1, 1 << 20, BlockSize::B4096, NQN).unwrap();
        let mut short = vec![0u8; 4095];
        assert!(matches!(
            ns.read(0, 1, &mut short),
            Err(NamespaceError::BufferLength {
                need: 4096,
                got: 4095
            })
        ));
        assert!(matches!(
            ns.write(0, 2, &[0u8; 4096]),
            Err(NamespaceError::BufferLength { need: 8192, .. })
        ));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for (bytes, bs) in [
            (0, BlockSize::B512),
            (1000, BlockSize::B512),
            (4096 + 512, BlockSize::B4096),
            (MAX_NAMESPACE_BYTES + 4096, BlockSize::B4096),
        ] {
            assert!(
                matches!(
                    Namespace::ram(1, bytes, bs, NQN),
                    Err(NamespaceError::BadSize { .. })
                ),
                "{bytes}"
            );
        }
    }

    #[test]
    fn file_namespace_round_trip_and_persistence() {
        let dir = TempDir::new("ns_file_round_trip");
        let path = dir.0.join("disk.img");
        std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
        let data = pattern(8 * 512, 11);
        {
            let mut ns = Namespace::file(1, &path, BlockSize::B512, NQN).unwrap();
            assert!(ns.is_file());
            assert_eq!(ns.blocks(), 2048);
            ns.write(100, 8, &data).unwrap();
            ns.write_zeroes(102, 1).unwrap();
            ns.flush().unwrap();
        }
        let ns = Namespace::file(1, &path, BlockSize::B512, NQN).unwrap();
        let mut back = vec![0u8; data.len()];
        ns.read(100, 8, &mut back).unwrap();
        assert_eq!(&back[..1024], &data[..1024]);
        assert!(back[1024..1536].iter().all(|&b| b == 0));
        assert_eq!(&back[1536..], &data[1536..]);
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(&raw[100 * 512..101 * 512], &data[..512]);
    }

    #[test]
    fn file_size_must_be_whole_blocks() {
        let dir = TempDir::new("ns_file_size");
        let path = dir.0.join("odd.img");
        std::fs::write(&path, vec![0u8; 4096 + 512]).unwrap();
        assert!(matches!(
            Namespace::file(1, &path, BlockSize::B4096, NQN),
            Err(NamespaceError::BadSize {
                bytes: 4608,
                block_size: 4096,
                ..
            })
        ));
        assert!(matches!(
            Namespace::file(1, &dir.0.join("absent.img"), BlockSize::B512, NQN),
            Err(NamespaceError::Open { .. })
        ));
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = Namespace::ram(1, 1 << 20, BlockSize::B512, NQN).unwrap();
        let a2 = Namespace::ram(1, 2 << 20, BlockSize::B4096, NQN).unwrap();
        let b = Namespace::ram(2, 1 << 20, BlockSize::B512, NQN).unwrap();
        let c = Namespace::ram(1, 1 << 20, BlockSize::B512, "nqn.2024-01.io.ernic:other").unwrap();
        assert_eq!(a.nguid(), a2.nguid());
        assert_eq!(a.uuid(), a2.uuid());
        assert_ne!(a.nguid(), b.nguid());
        assert_ne!(a.nguid(), c.nguid());
        assert_ne!(a.uuid(), b.uuid());
        assert_ne!(a.nguid(), a.uuid());
        // RFC 9562: version 8 in the high nibble of byte 6, variant 10b.
        assert_eq!(a.uuid()[6] >> 4, 8);
        assert_eq!(a.uuid()[8] >> 6, 0b10);
        assert_ne!(a.nguid(), [0u8; 16]);
    }
}
