//! The stores' tests: one behaviour suite ([`suite`]) run over both stores
//! (the `both!` macro makes a `_memory` and a `_dir` test of each), the
//! directory store's own tests (reopen, crash leftovers, corrupt files) in
//! [`dir`], and a property test against a `BTreeMap` model in [`prop`].

mod dir;
mod prop;
mod suite;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ObjectAttrs, ObjectMeta, Store};

/// A unique directory under the system's temp dir, removed on drop. The
/// store lives in `root()`, one level down, so a test can check that
/// nothing was made beside it.
pub(super) struct TempDir {
    parent: PathBuf,
}

impl TempDir {
    pub(super) fn new() -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let parent = std::env::temp_dir().join(format!(
            "ernic-s3-store-test-{}-{n}-{}",
            std::process::id(),
            super::now_ms()
        ));
        std::fs::create_dir_all(&parent).unwrap();
        TempDir { parent }
    }

    pub(super) fn root(&self) -> PathBuf {
        self.parent.join("root")
    }

    pub(super) fn parent(&self) -> &Path {
        &self.parent
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.parent);
    }
}

/// Deterministic bytes (an LCG), different for each `seed`.
pub(super) fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(&(x ^ (x >> 29)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Writes `data` as `key` in writes of `chunk` bytes and commits.
pub(super) fn put_chunked(
    s: &dyn Store,
    bucket: &str,
    key: &str,
    data: &[u8],
    chunk: usize,
) -> ObjectMeta {
    let mut w = s.put_object(bucket, key, ObjectAttrs::default()).unwrap();
    for c in data.chunks(chunk.max(1)) {
        w.write(c).unwrap();
    }
    w.commit().unwrap()
}

/// Writes `data` as `key` in 64 KiB writes and commits.
pub(super) fn put(s: &dyn Store, bucket: &str, key: &str, data: &[u8]) -> ObjectMeta {
    put_chunked(s, bucket, key, data, 64 << 10)
}

/// Reads the whole object in reads of an odd size.
pub(super) fn get(s: &dyn Store, bucket: &str, key: &str) -> Vec<u8> {
    let (meta, mut r) = s.open_object(bucket, key).unwrap();
    assert_eq!(r.len(), meta.size);
    read_all(r.as_mut())
}

pub(super) fn read_all(r: &mut dyn super::ObjectReader) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 77_777];
    loop {
        let n = r.read_at(out.len() as u64, &mut buf).unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    assert_eq!(out.len() as u64, r.len());
    out
}

/// Hex MD5.
pub(super) fn md5_hex(data: &[u8]) -> String {
    use md5::{Digest, Md5};
    super::hex(&Md5::digest(data))
}

/// Every path under `dir`, relative to it, sorted.
pub(super) fn walk(dir: &Path) -> Vec<String> {
    fn go(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if p.is_dir() {
                go(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    go(dir, dir, &mut out);
    out.sort();
    out
}

/// Checks that a directory store made nothing beside its root and nothing
/// in it but the layout its module doc gives (no name made from a key).
pub(super) fn check_tree(t: &TempDir) {
    let beside = walk(t.parent());
    assert!(
        beside.iter().all(|p| p == "root" || p.starts_with("root/")),
        "{beside:?}"
    );
    let hex16 = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    for p in walk(&t.root()) {
        let parts: Vec<&str> = p.split('/').collect();
        let ok = match parts.as_slice() {
            ["tmp"] | ["buckets"] | ["buckets", _] => true,
            ["buckets", _, "bucket.meta" | "objects" | "uploads"] => true,
            ["buckets", _, "objects", f] => f
                .strip_suffix(".data")
                .or_else(|| f.strip_suffix(".meta"))
                .is_some_and(hex16),
            ["buckets", _, "uploads", id] => id.len() == 32,
            ["buckets", _, "uploads", _, f] => {
                *f == "upload.meta"
                    || (f.starts_with("part-") && (f.ends_with(".data") || f.ends_with(".meta")))
            }
            _ => false,
        };
        assert!(ok, "unexpected path in the store: {p}");
    }
}

/// Makes a `_memory` and a `_dir` test that run `$f(&dyn Store)` on a
/// store of `$cap` bytes with a bucket "bkt"; the dir test then checks the
/// tree ([`check_tree`]).
macro_rules! both {
    ($name:ident, $cap:expr, $f:path) => {
        mod $name {
            use super::*;
            #[test]
            fn memory() {
                let s = crate::store::memory::MemoryStore::new($cap);
                s.create_bucket("bkt").unwrap();
                $f(&s);
            }
            #[test]
            fn dir() {
                let t = crate::store::tests::TempDir::new();
                let s = crate::store::dir::DirStore::open(&t.root(), $cap).unwrap();
                s.create_bucket("bkt").unwrap();
                $f(&s);
                crate::store::tests::check_tree(&t);
            }
        }
    };
}
pub(super) use both;
