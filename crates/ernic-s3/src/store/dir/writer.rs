//! The directory store's writers (objects and parts streamed into `tmp/`
//! and committed by rename), its reader (an open file read with `pread`),
//! and the completion of a multipart upload (the parts copied in order into
//! one new object file).
//!
//! A writer dropped without a commit removes its temporary file and gives
//! its bytes back to the capacity.

use std::fs::{self, File};
use std::io::{BufWriter, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use super::meta::{ObjectFile, PartFile};
use super::{Entry, PartEntry, fsync_dir, get_bucket, get_upload, io_err, no_bucket, no_upload};
use super::{Shared, State};
use crate::store::common::{self, Digesting, PartFacts};
use crate::store::{
    CompletePart, ObjectAttrs, ObjectMeta, ObjectReader, ObjectWriter, PartInfo, StoreError, now_ms,
};

/// How much a writer buffers before it writes to its file.
const WRITE_BUFFER: usize = 256 << 10;

/// The name of an object's meta file, from its data file's name.
pub(super) fn meta_name_of(data: &str) -> String {
    format!("{}.meta", data.strip_suffix(".data").unwrap_or(data))
}

/// An object's data file name for write sequence `seq`.
fn object_data_name(seq: u64) -> String {
    format!("{seq:016x}.data")
}

/// A part's data file name for write sequence `seq`.
pub(super) fn part_data_name(number: u32, seq: u64) -> String {
    format!("part-{number}.{seq:016x}.data")
}

/// A part's meta file name.
pub(super) fn part_meta_name(number: u32) -> String {
    format!("part-{number}.meta")
}

/// Where a writer's bytes go when it commits.
pub(super) enum Target {
    Object {
        bucket: String,
        key: String,
        attrs: ObjectAttrs,
    },
    Part {
        bucket: String,
        key: String,
        upload_id: String,
        number: u32,
    },
}

pub(super) struct DirWriter {
    shared: Arc<Shared>,
    target: Target,
    file: Option<BufWriter<File>>,
    tmp: PathBuf,
    digest: Digesting,
    /// Bytes reserved against the capacity and not yet handed over.
    reserved: u64,
    /// The temporary file has been renamed into place.
    placed: bool,
}

impl DirWriter {
    pub(super) fn new(shared: Arc<Shared>, target: Target) -> Result<DirWriter, StoreError> {
        let tmp = shared.tmp_path();
        let file = File::create_new(&tmp).map_err(io_err("create", &tmp))?;
        Ok(DirWriter {
            shared,
            target,
            file: Some(BufWriter::with_capacity(WRITE_BUFFER, file)),
            tmp,
            digest: Digesting::default(),
            reserved: 0,
            placed: false,
        })
    }

    /// Flushes and fsyncs the temporary file and closes it.
    fn finish_file(&mut self) -> Result<(), StoreError> {
        let Some(w) = self.file.take() else {
            return Ok(());
        };
        let f = w
            .into_inner()
            .map_err(|e| io_err("write", &self.tmp)(e.into_error()))?;
        f.sync_all().map_err(io_err("fsync", &self.tmp))
    }

    /// Renames the temporary file to `dest` and fsyncs its directory.
    fn place(&mut self, dest: &std::path::Path) -> Result<(), StoreError> {
        fs::rename(&self.tmp, dest).map_err(io_err("rename into place", dest))?;
        self.placed = true;
        if let Some(dir) = dest.parent() {
            if let Err(e) = fsync_dir(dir) {
                let _ = fs::remove_file(dest);
                return Err(e);
            }
        }
        Ok(())
    }

    fn commit_object(
        &mut self,
        st: &mut State,
        bucket: &str,
        key: &str,
        attrs: &ObjectAttrs,
    ) -> Result<(ObjectMeta, u64), StoreError> {
        if !st.buckets.contains_key(bucket) {
            return Err(no_bucket(bucket));
        }
        let seq = st.next_seq();
        let meta = ObjectMeta {
            size: self.digest.written(),
            etag: self.digest.etag(),
            last_modified_ms: now_ms(),
            parts: None,
            attrs: attrs.clone(),
        };
        let shared = Arc::clone(&self.shared);
        let freed = commit_object_file(&shared, st, bucket, key, &meta, seq, |dest| {
            self.place(dest)
        })?;
        Ok((meta, freed))
    }

    fn commit_part(
        &mut self,
        st: &mut State,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
    ) -> Result<(ObjectMeta, u64), StoreError> {
        let seq = st.next_seq();
        let u = get_upload(get_bucket(st, bucket)?, key, upload_id)?;
        let now = now_ms();
        let dir = self.shared.upload_dir(bucket, upload_id);
        let data = part_data_name(number, seq);
        let info = PartInfo {
            number,
            size: self.digest.written(),
            etag: self.digest.etag(),
            last_modified_ms: now,
        };
        self.place(&dir.join(&data))?;
        let file = PartFile {
            info: info.clone(),
            data: data.clone(),
            seq,
        };
        if let Err(e) = self
            .shared
            .write_atomic(&dir.join(part_meta_name(number)), &file.encode())
        {
            let _ = fs::remove_file(dir.join(&data));
            return Err(e);
        }
        let old = u.parts.insert(number, PartEntry { info, data });
        let mut freed = 0;
        if let Some(old) = old {
            let _ = fs::remove_file(dir.join(&old.data));
            freed = old.info.size;
        }
        let meta = ObjectMeta {
            size: file.info.size,
            etag: file.info.etag,
            last_modified_ms: now,
            parts: None,
            attrs: ObjectAttrs::default(),
        };
        Ok((meta, freed))
    }
}

/// Puts an object's data file in place (with `place`), writes its meta,
/// updates the index and removes the object it replaces. Returns the bytes
/// the replaced object held.
fn commit_object_file(
    shared: &Shared,
    st: &mut State,
    bucket: &str,
    key: &str,
    meta: &ObjectMeta,
    seq: u64,
    place: impl FnOnce(&std::path::Path) -> Result<(), StoreError>,
) -> Result<u64, StoreError> {
    let b = get_bucket(st, bucket)?;
    let dir = shared.objects_dir(bucket);
    let data = object_data_name(seq);
    place(&dir.join(&data))?;
    let file = ObjectFile {
        key: key.to_owned(),
        meta: meta.clone(),
        data: data.clone(),
        seq,
    };
    if let Err(e) = shared.write_atomic(&dir.join(meta_name_of(&data)), &file.encode()) {
        let _ = fs::remove_file(dir.join(&data));
        return Err(e);
    }
    let entry = Entry {
        meta: meta.clone(),
        data,
    };
    let Some(old) = b.objects.insert(key.to_owned(), entry) else {
        return Ok(0);
    };
    // The new meta is durable: the old files can go, meta first.
    let _ = fs::remove_file(dir.join(meta_name_of(&old.data)));
    let _ = fs::remove_file(dir.join(&old.data));
    Ok(old.meta.size)
}

impl Drop for DirWriter {
    fn drop(&mut self) {
        self.file = None;
        if !self.placed {
            let _ = fs::remove_file(&self.tmp);
        }
        self.shared.cap.release(self.reserved);
    }
}

impl ObjectWriter for DirWriter {
    fn write(&mut self, data: &[u8]) -> Result<(), StoreError> {
        let n = data.len() as u64;
        let Some(file) = self.file.as_mut() else {
            return Err(io_err("write", &self.tmp)(
                std::io::ErrorKind::BrokenPipe.into(),
            ));
        };
        self.shared.cap.reserve(n)?;
        if let Err(e) = file.write_all(data) {
            self.shared.cap.release(n);
            return Err(io_err("write", &self.tmp)(e));
        }
        self.reserved += n;
        self.digest.update(data);
        Ok(())
    }

    fn written(&self) -> u64 {
        self.digest.written()
    }

    fn md5(&self) -> [u8; 16] {
        self.digest.md5()
    }

    fn set_attrs(&mut self, new: ObjectAttrs) {
        if let Target::Object { attrs, .. } = &mut self.target {
            *attrs = new;
        }
    }

    fn commit(mut self: Box<Self>) -> Result<ObjectMeta, StoreError> {
        self.finish_file()?;
        let shared = Arc::clone(&self.shared);
        let mut st = shared.lock();
        let target = std::mem::replace(
            &mut self.target,
            Target::Object {
                bucket: String::new(),
                key: String::new(),
                attrs: ObjectAttrs::default(),
            },
        );
        let (meta, freed) = match &target {
            Target::Object { bucket, key, attrs } => {
                self.commit_object(&mut st, bucket, key, attrs)?
            }
            Target::Part {
                bucket,
                key,
                upload_id,
                number,
            } => self.commit_part(&mut st, bucket, key, upload_id, *number)?,
        };
        // The reservation now belongs to the object or part.
        self.reserved = 0;
        drop(st);
        shared.cap.release(freed);
        Ok(meta)
    }
}

/// Reads one object's data file, which it holds open.
pub(super) struct DirReader {
    file: File,
    len: u64,
}

impl DirReader {
    pub(super) fn new(file: File, len: u64) -> DirReader {
        DirReader { file, len }
    }
}

impl ObjectReader for DirReader {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        if offset >= self.len {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.len - offset).unwrap_or(usize::MAX));
        let mut done = 0;
        while done < want {
            match self
                .file
                .read_at(&mut buf[done..want], offset + done as u64)
            {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(StoreError::Io {
                        what: "read an object's data file".into(),
                        source: e,
                    });
                }
            }
        }
        Ok(done)
    }
}

/// Copies the part files, in order, into a new temporary file; checks each
/// gives the length its meta says. Returns the file's path.
fn copy_parts(shared: &Shared, parts: &[(PathBuf, u64)]) -> Result<PathBuf, StoreError> {
    let tmp = shared.tmp_path();
    let res = (|| {
        let mut out = File::create_new(&tmp).map_err(io_err("create", &tmp))?;
        for (path, size) in parts {
            let mut src = File::open(path).map_err(io_err("open", path))?;
            let n = std::io::copy(&mut src, &mut out).map_err(io_err("copy", path))?;
            if n != *size {
                let short = std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{n} bytes, its meta says {size}"),
                );
                return Err(io_err("copy", path)(short));
            }
        }
        out.sync_all().map_err(io_err("fsync", &tmp))
    })();
    match res {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Completes a multipart upload (see [`crate::store::Store::complete_upload`]):
/// checks the list under the lock and marks the upload as completing, copies
/// the parts without the lock, then commits the object and removes the
/// upload under the lock.
pub(super) fn complete(
    shared: &Shared,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: &[CompletePart],
) -> Result<ObjectMeta, StoreError> {
    let (size, etag, files, attrs) = {
        let mut st = shared.lock();
        let u = get_upload(get_bucket(&mut st, bucket)?, key, upload_id)?;
        let (size, etag) = common::check_completion(parts, |n| {
            u.parts.get(&n).map(|p| PartFacts {
                size: p.info.size,
                etag: p.info.etag.clone(),
            })
        })?;
        let dir = shared.upload_dir(bucket, upload_id);
        let files: Vec<(PathBuf, u64)> = parts
            .iter()
            .filter_map(|p| u.parts.get(&p.number))
            .map(|p| (dir.join(&p.data), p.info.size))
            .collect();
        u.completing = true;
        (size, etag, files, u.attrs.clone())
    };
    let copied = copy_parts(shared, &files);
    let mut st = shared.lock();
    let res = copied.and_then(|tmp| {
        let seq = st.next_seq();
        let meta = ObjectMeta {
            size,
            etag,
            last_modified_ms: now_ms(),
            parts: Some(parts.len() as u32),
            attrs,
        };
        let placed = commit_object_file(shared, &mut st, bucket, key, &meta, seq, |dest| {
            fs::rename(&tmp, dest).map_err(io_err("rename into place", dest))?;
            fsync_dir(dest.parent().unwrap_or(dest))
        });
        if placed.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        placed.map(|freed| (meta, freed))
    });
    let b = get_bucket(&mut st, bucket)?;
    let (meta, freed) = match res {
        Ok(r) => r,
        Err(e) => {
            if let Some(u) = b.uploads.get_mut(upload_id) {
                u.completing = false;
            }
            return Err(e);
        }
    };
    let Some(u) = b.uploads.remove(upload_id) else {
        return Err(no_upload(upload_id));
    };
    b.upload_order
        .remove(&(u.key.clone(), u.initiated_ms, upload_id.to_owned()));
    // The object is committed; if the upload's files cannot be removed now
    // the next open lists the upload again, and it can be aborted.
    let _ = shared.remove_dir_atomic(&shared.upload_dir(bucket, upload_id));
    drop(st);
    shared.cap.add(size);
    shared.cap.release(u.bytes().saturating_add(freed));
    Ok(meta)
}
