//! Opening a directory store: making its directories, emptying `tmp/`, and
//! rebuilding the index from the meta files, removing what a crash left
//! half-done (data files no meta names, the older of two metas for one
//! key) and skipping, with a count, what cannot be read. Never panics on
//! what it finds on disk.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::meta::{self, ObjectFile, PartFile, UploadFile};
use super::writer::{meta_name_of, part_meta_name};
use super::{Bucket, DirStore, Entry, PartEntry, Shared, State, Upload, io_err};
use crate::store::check_bucket_name;
use crate::store::common::{Capacity, IdGen, plausible_upload_id};

/// The largest meta file `open` reads; a bigger one is not one of ours.
const MAX_META_FILE: u64 = 1 << 20;

/// What loading counts as it goes.
#[derive(Default)]
struct Tally {
    skipped: usize,
    used: u64,
    max_seq: u64,
}

impl Tally {
    /// Notes a file name that may carry a write sequence in hex.
    fn saw_name(&mut self, name: &str) {
        let stem = name.split('.').find(|s| s.len() == 16);
        if let Some(seq) = stem.and_then(|s| u64::from_str_radix(s, 16).ok()) {
            self.max_seq = self.max_seq.max(seq);
        }
    }
}

fn read_small(path: &Path) -> Option<Vec<u8>> {
    let md = fs::metadata(path).ok()?;
    if !md.is_file() || md.len() > MAX_META_FILE {
        return None;
    }
    fs::read(path).ok()
}

/// The length of the regular file at `path`, if it is one.
fn file_len(path: &Path) -> Option<u64> {
    fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// The UTF-8 names in a directory (others are counted as skipped).
fn names(dir: &Path, tally: &mut Tally) -> Result<Vec<String>, super::StoreError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err("read directory", dir))? {
        let entry = entry.map_err(io_err("read directory", dir))?;
        match entry.file_name().into_string() {
            Ok(n) => out.push(n),
            Err(_) => tally.skipped += 1,
        }
    }
    out.sort();
    Ok(out)
}

fn ensure_dir(dir: &Path) -> Result<(), super::StoreError> {
    fs::create_dir_all(dir).map_err(io_err("create directory", dir))
}

pub(super) fn open(root: &Path, capacity: u64) -> Result<DirStore, super::StoreError> {
    ensure_dir(root)?;
    let tmp = root.join("tmp");
    ensure_dir(&tmp)?;
    for entry in fs::read_dir(&tmp).map_err(io_err("read directory", &tmp))? {
        let path = entry.map_err(io_err("read directory", &tmp))?.path();
        let _ = if path.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
    }
    let buckets_dir = root.join("buckets");
    ensure_dir(&buckets_dir)?;
    let mut tally = Tally::default();
    let mut st = State::default();
    for name in names(&buckets_dir, &mut tally)? {
        let dir = buckets_dir.join(&name);
        let created = read_small(&dir.join("bucket.meta")).and_then(|b| meta::decode_bucket(&b));
        let (true, Some(created_ms)) = (check_bucket_name(&name).is_ok() && dir.is_dir(), created)
        else {
            tally.skipped += 1;
            continue;
        };
        let mut b = Bucket {
            created_ms,
            ..Bucket::default()
        };
        load_objects(&dir.join("objects"), &mut b, &mut tally)?;
        load_uploads(&dir.join("uploads"), &mut b, &mut tally)?;
        st.buckets.insert(name, b);
    }
    st.seq = tally.max_seq.saturating_add(1);
    let shared = Shared {
        root: root.to_path_buf(),
        state: Mutex::new(st),
        cap: Capacity::new(capacity, tally.used),
        ids: IdGen::new(),
    };
    Ok(DirStore {
        shared: Arc::new(shared),
        skipped: tally.skipped,
    })
}

fn load_objects(dir: &Path, b: &mut Bucket, tally: &mut Tally) -> Result<(), super::StoreError> {
    ensure_dir(dir)?;
    let names = names(dir, tally)?;
    let mut winners: BTreeMap<String, ObjectFile> = BTreeMap::new();
    let mut losers: Vec<String> = Vec::new();
    for name in &names {
        tally.saw_name(name);
        let Some(stem) = name.strip_suffix(".meta") else {
            continue;
        };
        let file = read_small(&dir.join(name)).and_then(|b| ObjectFile::decode(&b));
        let good = file.filter(|f| {
            f.data == format!("{stem}.data") && file_len(&dir.join(&f.data)) == Some(f.meta.size)
        });
        let Some(f) = good else {
            tally.skipped += 1;
            continue;
        };
        tally.max_seq = tally.max_seq.max(f.seq);
        match winners.get(&f.key) {
            Some(w) if w.seq > f.seq => losers.push(f.data),
            _ => {
                if let Some(old) = winners.insert(f.key.clone(), f) {
                    losers.push(old.data);
                }
            }
        }
    }
    // The older of two metas for one key lost a crash's race: remove it,
    // meta first. Then every data file no winner names.
    for data in &losers {
        let _ = fs::remove_file(dir.join(meta_name_of(data)));
    }
    let named: BTreeSet<&str> = winners.values().map(|f| f.data.as_str()).collect();
    for name in names.iter().filter(|n| n.ends_with(".data")) {
        if !named.contains(name.as_str()) {
            let _ = fs::remove_file(dir.join(name));
        }
    }
    for (key, f) in winners {
        tally.used = tally.used.saturating_add(f.meta.size);
        b.objects.insert(
            key,
            Entry {
                meta: f.meta,
                data: f.data,
            },
        );
    }
    Ok(())
}

fn load_uploads(dir: &Path, b: &mut Bucket, tally: &mut Tally) -> Result<(), super::StoreError> {
    ensure_dir(dir)?;
    for id in names(dir, tally)? {
        let updir = dir.join(&id);
        let file = read_small(&updir.join("upload.meta")).and_then(|b| UploadFile::decode(&b));
        let (true, Some(f)) = (plausible_upload_id(&id) && updir.is_dir(), file) else {
            tally.skipped += 1;
            continue;
        };
        let mut u = Upload {
            key: f.key,
            attrs: f.attrs,
            initiated_ms: f.initiated_ms,
            parts: BTreeMap::new(),
            completing: false,
        };
        load_parts(&updir, &mut u, tally)?;
        tally.used = tally.used.saturating_add(u.bytes());
        b.upload_order
            .insert((u.key.clone(), u.initiated_ms, id.clone()));
        b.uploads.insert(id, u);
    }
    Ok(())
}

fn load_parts(dir: &Path, u: &mut Upload, tally: &mut Tally) -> Result<(), super::StoreError> {
    let names = names(dir, tally)?;
    for name in &names {
        tally.saw_name(name);
        let Some(num) = name
            .strip_prefix("part-")
            .and_then(|n| n.strip_suffix(".meta"))
        else {
            continue;
        };
        let file = read_small(&dir.join(name)).and_then(|b| PartFile::decode(&b));
        let good = file.filter(|f| {
            part_meta_name(f.info.number) == *name
                && num == f.info.number.to_string()
                && f.data.starts_with(&format!("part-{num}."))
                && file_len(&dir.join(&f.data)) == Some(f.info.size)
        });
        let Some(f) = good else {
            tally.skipped += 1;
            continue;
        };
        tally.max_seq = tally.max_seq.max(f.seq);
        u.parts.insert(
            f.info.number,
            PartEntry {
                info: f.info,
                data: f.data,
            },
        );
    }
    let named: BTreeSet<&str> = u.parts.values().map(|p| p.data.as_str()).collect();
    for name in names.iter().filter(|n| n.ends_with(".data")) {
        if !named.contains(name.as_str()) {
            let _ = fs::remove_file(dir.join(name));
        }
    }
    Ok(())
}
