//! A store in a directory, laid out so that no key ever becomes a file name
//! and a crash at any instant leaves every key with either its old object
//! or its new one, whole:
//!
//! ```text
//! root/tmp/                                  writers' files, removed on open
//! root/buckets/<bucket>/bucket.meta          {"created_ms"}
//! root/buckets/<bucket>/objects/<id>.data    an object's bytes
//! root/buckets/<bucket>/objects/<id>.meta    its key, size, ETag, attrs, data file, seq
//! root/buckets/<bucket>/uploads/<upload_id>/upload.meta
//! root/buckets/<bucket>/uploads/<upload_id>/part-<N>.<id>.data, part-<N>.meta
//! ```
//!
//! `<id>` is the store-wide write sequence in 16 hex digits, so every write
//! makes new file names. A commit fsyncs its data in `tmp/`, renames it
//! into place, writes the new meta (to `tmp/`, fsync, rename), fsyncs the
//! directory, and only then removes the old object's files. On open a key
//! claimed by two metas keeps the higher sequence, data files no meta
//! names are removed, and a meta that cannot be read is skipped and counted
//! ([`DirStore::skipped_on_open`]). Bucket names (checked by
//! [`check_bucket_name`]) and upload ids (made here, `[0-9a-f]`) are the
//! only names from outside that become paths.
//!
//! An index of every bucket, object, upload and part is kept in memory and
//! rebuilt on open; readers hold an open file, so a replaced or deleted
//! object still reads whole. Completing an upload copies its parts into a
//! new file (`copy_file_range` where the kernel has it); while it copies,
//! the disk briefly holds the object twice, which the capacity does not
//! count. A crash after the object is committed but before the upload's
//! directory is removed leaves the upload listed; it can be aborted.
//!
//! One store (one process) owns a root at a time: nothing locks the
//! directory against a second opener.

mod meta;
mod open;
mod writer;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::common::{self, Capacity, IdGen, UploadOrder};
use super::{
    BucketInfo, CompletePart, ListFrom, ObjectAttrs, ObjectMeta, ObjectReader, ObjectWriter,
    PartInfo, Store, StoreError, UploadInfo, check_bucket_name, check_key, check_user_meta, now_ms,
};
use meta::UploadFile;
use writer::{DirReader, DirWriter, Target};

/// An object in the index.
#[derive(Debug, Clone)]
struct Entry {
    meta: ObjectMeta,
    /// Its data file's name in the bucket's `objects/`.
    data: String,
}

/// A part in the index.
#[derive(Debug, Clone)]
struct PartEntry {
    info: PartInfo,
    /// Its data file's name in the upload's directory.
    data: String,
}

#[derive(Debug)]
struct Upload {
    key: String,
    attrs: ObjectAttrs,
    initiated_ms: i64,
    parts: BTreeMap<u32, PartEntry>,
    /// A completion is copying the parts: other writes to the upload wait
    /// their turn by failing with NoSuchUpload (it is about to vanish).
    completing: bool,
}

impl Upload {
    fn bytes(&self) -> u64 {
        self.parts.values().map(|p| p.info.size).sum()
    }
}

#[derive(Debug, Default)]
struct Bucket {
    created_ms: i64,
    objects: BTreeMap<String, Entry>,
    uploads: BTreeMap<String, Upload>,
    upload_order: UploadOrder,
}

#[derive(Debug, Default)]
struct State {
    buckets: BTreeMap<String, Bucket>,
    /// The next write sequence number.
    seq: u64,
}

impl State {
    fn next_seq(&mut self) -> u64 {
        // Wrapping, not panicking, even if a hostile file name on disk
        // set the counter near its end.
        let s = self.seq;
        self.seq = self.seq.wrapping_add(1);
        s
    }
}

struct Shared {
    root: PathBuf,
    state: Mutex<State>,
    cap: Capacity,
    ids: IdGen,
}

/// The directory store (see the module doc).
pub struct DirStore {
    shared: Arc<Shared>,
    skipped: usize,
}

fn io_err(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> StoreError {
    let what = format!("{what} {}", path.display());
    move |source| StoreError::Io { what, source }
}

fn no_bucket(name: &str) -> StoreError {
    StoreError::NoSuchBucket {
        name: name.chars().take(80).collect(),
    }
}

fn no_key(key: &str) -> StoreError {
    StoreError::NoSuchKey {
        key: key.chars().take(1024).collect(),
    }
}

fn no_upload(id: &str) -> StoreError {
    StoreError::NoSuchUpload {
        upload_id: id.chars().take(80).collect(),
    }
}

fn get_bucket<'s>(st: &'s mut State, name: &str) -> Result<&'s mut Bucket, StoreError> {
    st.buckets.get_mut(name).ok_or_else(|| no_bucket(name))
}

/// The upload `id` of `key`, unless it is being completed.
fn get_upload<'b>(b: &'b mut Bucket, key: &str, id: &str) -> Result<&'b mut Upload, StoreError> {
    match b.uploads.get_mut(id) {
        Some(u) if u.key == key && !u.completing => Ok(u),
        _ => Err(no_upload(id)),
    }
}

/// Makes a directory's entries durable.
fn fsync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync directory", dir))
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update of the index is made after its files; a panic
        // between cannot leave it pointing at nothing it did not before.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    fn tmp_path(&self) -> PathBuf {
        self.tmp_dir().join(format!("{}.tmp", self.ids.tmp_name()))
    }

    fn buckets_dir(&self) -> PathBuf {
        self.root.join("buckets")
    }

    fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.buckets_dir().join(bucket)
    }

    fn objects_dir(&self, bucket: &str) -> PathBuf {
        self.bucket_dir(bucket).join("objects")
    }

    fn upload_dir(&self, bucket: &str, upload_id: &str) -> PathBuf {
        self.bucket_dir(bucket).join("uploads").join(upload_id)
    }

    /// Writes `bytes` to `dest` atomically: a file in `tmp/`, fsynced,
    /// renamed over `dest`, whose directory is then fsynced.
    fn write_atomic(&self, dest: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let tmp = self.tmp_path();
        let res = (|| {
            let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
            f.write_all(bytes).map_err(io_err("write", &tmp))?;
            f.sync_all().map_err(io_err("fsync", &tmp))?;
            fs::rename(&tmp, dest).map_err(io_err("rename into place", dest))
        })();
        if res.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        res?;
        match dest.parent() {
            Some(dir) => fsync_dir(dir),
            None => Ok(()),
        }
    }

    /// Builds a directory in `tmp/` with `files` in it (and the empty
    /// subdirectories `dirs`), then renames it to `dest` in one step.
    fn make_dir_atomic(
        &self,
        dest: &Path,
        dirs: &[&str],
        files: &[(&str, Vec<u8>)],
    ) -> Result<(), StoreError> {
        let tmp = self.tmp_path();
        let res = (|| {
            fs::create_dir(&tmp).map_err(io_err("create directory", &tmp))?;
            for d in dirs {
                let p = tmp.join(d);
                fs::create_dir(&p).map_err(io_err("create directory", &p))?;
            }
            for (name, bytes) in files {
                let p = tmp.join(name);
                let mut f = File::create(&p).map_err(io_err("create", &p))?;
                f.write_all(bytes).map_err(io_err("write", &p))?;
                f.sync_all().map_err(io_err("fsync", &p))?;
            }
            fsync_dir(&tmp)?;
            fs::rename(&tmp, dest).map_err(io_err("rename into place", dest))
        })();
        if res.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        res?;
        match dest.parent() {
            Some(dir) => fsync_dir(dir),
            None => Ok(()),
        }
    }

    /// Takes a directory away in one step (a rename into `tmp/`), then
    /// removes it.
    fn remove_dir_atomic(&self, dir: &Path) -> Result<(), StoreError> {
        let tmp = self.tmp_path();
        fs::rename(dir, &tmp).map_err(io_err("rename away", dir))?;
        if let Some(parent) = dir.parent() {
            fsync_dir(parent)?;
        }
        let _ = fs::remove_dir_all(&tmp);
        Ok(())
    }
}

impl DirStore {
    /// Opens (creating it if missing) the store in `root`, which holds at
    /// most `capacity` bytes of data files. Loads what is there: see the
    /// module doc for what is cleaned up and what is skipped.
    pub fn open(root: &Path, capacity: u64) -> Result<DirStore, StoreError> {
        open::open(root, capacity)
    }

    /// How many files or directories `open` could not read and skipped
    /// (a corrupt meta, a bucket without its `bucket.meta`, ...).
    pub fn skipped_on_open(&self) -> usize {
        self.skipped
    }

    /// The directory the store lives in.
    pub fn root(&self) -> &Path {
        &self.shared.root
    }
}

impl Store for DirStore {
    fn list_buckets(&self) -> Result<Vec<BucketInfo>, StoreError> {
        Ok(self
            .shared
            .lock()
            .buckets
            .iter()
            .map(|(name, b)| BucketInfo {
                name: name.clone(),
                created_ms: b.created_ms,
            })
            .collect())
    }

    fn create_bucket(&self, name: &str) -> Result<BucketInfo, StoreError> {
        check_bucket_name(name)?;
        let mut st = self.shared.lock();
        if st.buckets.contains_key(name) {
            return Err(StoreError::BucketAlreadyOwnedByYou {
                name: name.to_owned(),
            });
        }
        let created_ms = now_ms();
        self.shared.make_dir_atomic(
            &self.shared.bucket_dir(name),
            &["objects", "uploads"],
            &[("bucket.meta", meta::encode_bucket(created_ms))],
        )?;
        st.buckets.insert(
            name.to_owned(),
            Bucket {
                created_ms,
                ..Bucket::default()
            },
        );
        Ok(BucketInfo {
            name: name.to_owned(),
            created_ms,
        })
    }

    fn bucket(&self, name: &str) -> Result<BucketInfo, StoreError> {
        let st = self.shared.lock();
        let b = st.buckets.get(name).ok_or_else(|| no_bucket(name))?;
        Ok(BucketInfo {
            name: name.to_owned(),
            created_ms: b.created_ms,
        })
    }

    fn delete_bucket(&self, name: &str) -> Result<(), StoreError> {
        let mut st = self.shared.lock();
        let b = get_bucket(&mut st, name)?;
        if !b.objects.is_empty() || !b.uploads.is_empty() {
            return Err(StoreError::BucketNotEmpty {
                name: name.to_owned(),
            });
        }
        self.shared
            .remove_dir_atomic(&self.shared.bucket_dir(name))?;
        st.buckets.remove(name);
        Ok(())
    }

    fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        from: ListFrom<'_>,
        limit: usize,
    ) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        let st = self.shared.lock();
        let b = st.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
        Ok(common::select_keys(&b.objects, prefix, from, limit)
            .map(|(k, e)| (k.clone(), e.meta.clone()))
            .collect())
    }

    fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectMeta, StoreError> {
        let st = self.shared.lock();
        let b = st.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
        b.objects
            .get(key)
            .map(|e| e.meta.clone())
            .ok_or_else(|| no_key(key))
    }

    fn open_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(ObjectMeta, Box<dyn ObjectReader>), StoreError> {
        let st = self.shared.lock();
        let b = st.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
        let e = b.objects.get(key).ok_or_else(|| no_key(key))?;
        // Opened under the lock: no commit or delete can remove the file
        // between the lookup and the open.
        let path = self.shared.objects_dir(bucket).join(&e.data);
        let file = File::open(&path).map_err(io_err("open", &path))?;
        let reader = DirReader::new(file, e.meta.size);
        Ok((e.meta.clone(), Box::new(reader)))
    }

    fn put_object(
        &self,
        bucket: &str,
        key: &str,
        attrs: ObjectAttrs,
    ) -> Result<Box<dyn ObjectWriter>, StoreError> {
        check_key(key)?;
        check_user_meta(&attrs.user_meta)?;
        self.bucket(bucket)?;
        let target = Target::Object {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            attrs,
        };
        Ok(Box::new(DirWriter::new(Arc::clone(&self.shared), target)?))
    }

    fn delete_object(&self, bucket: &str, key: &str) -> Result<(), StoreError> {
        let mut st = self.shared.lock();
        let b = get_bucket(&mut st, bucket)?;
        let Some(e) = b.objects.get(key) else {
            return Ok(());
        };
        let dir = self.shared.objects_dir(bucket);
        let meta_path = dir.join(writer::meta_name_of(&e.data));
        // The meta goes first: a crash after it leaves only an orphan data
        // file, which open removes.
        match fs::remove_file(&meta_path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(io_err("remove", &meta_path)(err)),
        }
        let _ = fs::remove_file(dir.join(&e.data));
        let size = e.meta.size;
        b.objects.remove(key);
        drop(st);
        self.shared.cap.release(size);
        Ok(())
    }

    fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        attrs: ObjectAttrs,
    ) -> Result<UploadInfo, StoreError> {
        check_key(key)?;
        check_user_meta(&attrs.user_meta)?;
        let mut st = self.shared.lock();
        let b = get_bucket(&mut st, bucket)?;
        let upload_id = self
            .shared
            .ids
            .fresh_upload_id(|id| b.uploads.contains_key(id));
        let initiated_ms = now_ms();
        let file = UploadFile {
            key: key.to_owned(),
            attrs,
            initiated_ms,
        };
        self.shared.make_dir_atomic(
            &self.shared.upload_dir(bucket, &upload_id),
            &[],
            &[("upload.meta", file.encode())],
        )?;
        b.upload_order
            .insert((key.to_owned(), initiated_ms, upload_id.clone()));
        b.uploads.insert(
            upload_id.clone(),
            Upload {
                key: key.to_owned(),
                attrs: file.attrs,
                initiated_ms,
                parts: BTreeMap::new(),
                completing: false,
            },
        );
        Ok(UploadInfo {
            key: key.to_owned(),
            upload_id,
            initiated_ms,
        })
    }

    fn put_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
    ) -> Result<Box<dyn ObjectWriter>, StoreError> {
        common::check_part_number(number)?;
        let mut st = self.shared.lock();
        get_upload(get_bucket(&mut st, bucket)?, key, upload_id)?;
        drop(st);
        let target = Target::Part {
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            upload_id: upload_id.to_owned(),
            number,
        };
        Ok(Box::new(DirWriter::new(Arc::clone(&self.shared), target)?))
    }

    fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<Vec<PartInfo>, StoreError> {
        let mut st = self.shared.lock();
        let u = get_upload(get_bucket(&mut st, bucket)?, key, upload_id)?;
        Ok(u.parts
            .range(after.saturating_add(1)..)
            .filter(|(n, _)| **n > after)
            .take(limit)
            .map(|(_, p)| p.info.clone())
            .collect())
    }

    fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> Result<Vec<UploadInfo>, StoreError> {
        let st = self.shared.lock();
        let b = st.buckets.get(bucket).ok_or_else(|| no_bucket(bucket))?;
        Ok(common::select_uploads(
            &b.upload_order,
            prefix,
            after,
            limit,
            |id| b.uploads.get(id).map(|u| (u.key.clone(), u.initiated_ms)),
        ))
    }

    fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletePart],
    ) -> Result<ObjectMeta, StoreError> {
        writer::complete(&self.shared, bucket, key, upload_id, parts)
    }

    fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<(), StoreError> {
        let mut st = self.shared.lock();
        let b = get_bucket(&mut st, bucket)?;
        get_upload(b, key, upload_id)?;
        self.shared
            .remove_dir_atomic(&self.shared.upload_dir(bucket, upload_id))?;
        let Some(u) = b.uploads.remove(upload_id) else {
            return Err(no_upload(upload_id));
        };
        b.upload_order
            .remove(&(u.key.clone(), u.initiated_ms, upload_id.to_owned()));
        drop(st);
        self.shared.cap.release(u.bytes());
        Ok(())
    }

    fn used_bytes(&self) -> u64 {
        self.shared.cap.used()
    }

    fn capacity(&self) -> u64 {
        self.shared.cap.capacity()
    }
}
