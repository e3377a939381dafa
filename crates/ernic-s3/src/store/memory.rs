//! A store that keeps everything in memory: buckets in a map behind one
//! lock, each object as the list of pieces it was written in (at most
//! [`PIECE`] bytes each, small writes coalesced), shared by `Arc` so that a
//! reader keeps the bytes it opened while the key is replaced or deleted.
//!
//! Completing a multipart upload moves the parts' pieces into the object:
//! no byte is copied. Capacity counts the bytes of objects, of parts and of
//! writers in progress; it never counts allocator slack.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::common::{self, Capacity, Digesting, IdGen, PartFacts, UploadOrder};
use super::{
    BucketInfo, CompletePart, ListFrom, ObjectAttrs, ObjectMeta, ObjectReader, ObjectWriter,
    PartInfo, Store, StoreError, UploadInfo, check_bucket_name, check_key, check_user_meta, now_ms,
};

/// The largest piece a writer makes, in bytes (1 MiB).
pub const PIECE: usize = 1 << 20;

/// One committed object: its metadata and its pieces.
struct Object {
    meta: ObjectMeta,
    pieces: Vec<Vec<u8>>,
    /// Where each piece starts in the object, for `read_at`'s search.
    starts: Vec<u64>,
}

impl Object {
    fn new(meta: ObjectMeta, pieces: Vec<Vec<u8>>) -> Object {
        let mut starts = Vec::with_capacity(pieces.len());
        let mut at = 0u64;
        for p in &pieces {
            starts.push(at);
            at += p.len() as u64;
        }
        Object {
            meta,
            pieces,
            starts,
        }
    }
}

/// One uploaded part.
struct Part {
    info: PartInfo,
    pieces: Vec<Vec<u8>>,
}

struct Upload {
    key: String,
    attrs: ObjectAttrs,
    initiated_ms: i64,
    parts: BTreeMap<u32, Part>,
}

impl Upload {
    fn bytes(&self) -> u64 {
        self.parts.values().map(|p| p.info.size).sum()
    }
}

struct Bucket {
    created_ms: i64,
    objects: BTreeMap<String, Arc<Object>>,
    uploads: BTreeMap<String, Upload>,
    upload_order: UploadOrder,
}

struct Shared {
    buckets: Mutex<BTreeMap<String, Bucket>>,
    cap: Capacity,
    ids: IdGen,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Bucket>> {
        // A panic while holding the lock cannot leave the map half-updated
        // in a way later calls trip over, so a poisoned lock is taken as is.
        self.buckets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The in-memory store (see the module doc).
pub struct MemoryStore {
    shared: Arc<Shared>,
}

impl MemoryStore {
    /// An empty store that holds at most `capacity` bytes.
    pub fn new(capacity: u64) -> MemoryStore {
        MemoryStore {
            shared: Arc::new(Shared {
                buckets: Mutex::new(BTreeMap::new()),
                cap: Capacity::new(capacity, 0),
                ids: IdGen::new(),
            }),
        }
    }
}

fn no_bucket(name: &str) -> StoreError {
    StoreError::NoSuchBucket {
        name: name.chars().take(80).collect(),
    }
}

fn no_upload(id: &str) -> StoreError {
    StoreError::NoSuchUpload {
        upload_id: id.chars().take(80).collect(),
    }
}

fn get_bucket<'m>(
    map: &'m mut BTreeMap<String, Bucket>,
    name: &str,
) -> Result<&'m mut Bucket, StoreError> {
    map.get_mut(name).ok_or_else(|| no_bucket(name))
}

fn get_upload<'b>(b: &'b mut Bucket, key: &str, id: &str) -> Result<&'b mut Upload, StoreError> {
    match b.uploads.get_mut(id) {
        Some(u) if u.key == key => Ok(u),
        _ => Err(no_upload(id)),
    }
}

/// Where a writer's bytes go when it commits.
enum Target {
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

struct MemWriter {
    shared: Arc<Shared>,
    target: Target,
    pieces: Vec<Vec<u8>>,
    digest: Digesting,
    /// Bytes reserved against the capacity and not yet handed over.
    reserved: u64,
}

impl MemWriter {
    fn new(shared: Arc<Shared>, target: Target) -> MemWriter {
        MemWriter {
            shared,
            target,
            pieces: Vec::new(),
            digest: Digesting::default(),
            reserved: 0,
        }
    }
}

impl Drop for MemWriter {
    fn drop(&mut self) {
        self.shared.cap.release(self.reserved);
    }
}

impl ObjectWriter for MemWriter {
    fn write(&mut self, mut data: &[u8]) -> Result<(), StoreError> {
        self.shared.cap.reserve(data.len() as u64)?;
        self.reserved += data.len() as u64;
        self.digest.update(data);
        while !data.is_empty() {
            let room = match self.pieces.last() {
                Some(p) if p.len() < PIECE => PIECE - p.len(),
                _ => {
                    let want = data.len().clamp(64 << 10, PIECE);
                    self.pieces.push(Vec::with_capacity(want));
                    PIECE
                }
            };
            let n = room.min(data.len());
            if let Some(p) = self.pieces.last_mut() {
                p.extend_from_slice(&data[..n]);
            }
            data = &data[n..];
        }
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
        let size = self.digest.written();
        let etag = self.digest.etag();
        let now = now_ms();
        let pieces = std::mem::take(&mut self.pieces);
        let shared = Arc::clone(&self.shared);
        let mut map = shared.lock();
        let (meta, freed) = match &self.target {
            Target::Object { bucket, key, attrs } => {
                let b = get_bucket(&mut map, bucket)?;
                let meta = ObjectMeta {
                    size,
                    etag,
                    last_modified_ms: now,
                    parts: None,
                    attrs: attrs.clone(),
                };
                let obj = Arc::new(Object::new(meta.clone(), pieces));
                let old = b.objects.insert(key.clone(), obj);
                (meta, old.map_or(0, |o| o.meta.size))
            }
            Target::Part {
                bucket,
                key,
                upload_id,
                number,
            } => {
                let b = get_bucket(&mut map, bucket)?;
                let u = get_upload(b, key, upload_id)?;
                let info = PartInfo {
                    number: *number,
                    size,
                    etag: etag.clone(),
                    last_modified_ms: now,
                };
                let old = u.parts.insert(*number, Part { info, pieces });
                let meta = ObjectMeta {
                    size,
                    etag,
                    last_modified_ms: now,
                    parts: None,
                    attrs: ObjectAttrs::default(),
                };
                (meta, old.map_or(0, |p| p.info.size))
            }
        };
        // The reservation now belongs to the object or part.
        self.reserved = 0;
        drop(map);
        shared.cap.release(freed);
        Ok(meta)
    }
}

struct MemReader {
    obj: Arc<Object>,
}

impl ObjectReader for MemReader {
    fn len(&self) -> u64 {
        self.obj.meta.size
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError> {
        if offset >= self.obj.meta.size || buf.is_empty() {
            return Ok(0);
        }
        // The piece that holds `offset`: the last one starting at or before it.
        let mut i = self.obj.starts.partition_point(|s| *s <= offset) - 1;
        let mut skip = (offset - self.obj.starts[i]) as usize;
        let mut done = 0;
        while done < buf.len() && i < self.obj.pieces.len() {
            let piece = &self.obj.pieces[i][skip..];
            let n = piece.len().min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&piece[..n]);
            done += n;
            skip = 0;
            i += 1;
        }
        Ok(done)
    }
}

impl Store for MemoryStore {
    fn list_buckets(&self) -> Result<Vec<BucketInfo>, StoreError> {
        Ok(self
            .shared
            .lock()
            .iter()
            .map(|(name, b)| BucketInfo {
                name: name.clone(),
                created_ms: b.created_ms,
            })
            .collect())
    }

    fn create_bucket(&self, name: &str) -> Result<BucketInfo, StoreError> {
        check_bucket_name(name)?;
        let mut map = self.shared.lock();
        if map.contains_key(name) {
            return Err(StoreError::BucketAlreadyOwnedByYou {
                name: name.to_owned(),
            });
        }
        let created_ms = now_ms();
        map.insert(
            name.to_owned(),
            Bucket {
                created_ms,
                objects: BTreeMap::new(),
                uploads: BTreeMap::new(),
                upload_order: UploadOrder::new(),
            },
        );
        Ok(BucketInfo {
            name: name.to_owned(),
            created_ms,
        })
    }

    fn bucket(&self, name: &str) -> Result<BucketInfo, StoreError> {
        let map = self.shared.lock();
        let b = map.get(name).ok_or_else(|| no_bucket(name))?;
        Ok(BucketInfo {
            name: name.to_owned(),
            created_ms: b.created_ms,
        })
    }

    fn delete_bucket(&self, name: &str) -> Result<(), StoreError> {
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, name)?;
        if !b.objects.is_empty() || !b.uploads.is_empty() {
            return Err(StoreError::BucketNotEmpty {
                name: name.to_owned(),
            });
        }
        map.remove(name);
        Ok(())
    }

    fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        from: ListFrom<'_>,
        limit: usize,
    ) -> Result<Vec<(String, ObjectMeta)>, StoreError> {
        let map = self.shared.lock();
        let b = map.get(bucket).ok_or_else(|| no_bucket(bucket))?;
        Ok(common::select_keys(&b.objects, prefix, from, limit)
            .map(|(k, o)| (k.clone(), o.meta.clone()))
            .collect())
    }

    fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectMeta, StoreError> {
        self.open_object(bucket, key).map(|(m, _)| m)
    }

    fn open_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(ObjectMeta, Box<dyn ObjectReader>), StoreError> {
        let map = self.shared.lock();
        let b = map.get(bucket).ok_or_else(|| no_bucket(bucket))?;
        let obj = b.objects.get(key).ok_or_else(|| StoreError::NoSuchKey {
            key: key.chars().take(1024).collect(),
        })?;
        Ok((
            obj.meta.clone(),
            Box::new(MemReader {
                obj: Arc::clone(obj),
            }),
        ))
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
        Ok(Box::new(MemWriter::new(
            Arc::clone(&self.shared),
            Target::Object {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                attrs,
            },
        )))
    }

    fn delete_object(&self, bucket: &str, key: &str) -> Result<(), StoreError> {
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, bucket)?;
        let old = b.objects.remove(key);
        drop(map);
        if let Some(o) = old {
            self.shared.cap.release(o.meta.size);
        }
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
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, bucket)?;
        let upload_id = self
            .shared
            .ids
            .fresh_upload_id(|id| b.uploads.contains_key(id));
        let initiated_ms = now_ms();
        b.upload_order
            .insert((key.to_owned(), initiated_ms, upload_id.clone()));
        b.uploads.insert(
            upload_id.clone(),
            Upload {
                key: key.to_owned(),
                attrs,
                initiated_ms,
                parts: BTreeMap::new(),
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
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, bucket)?;
        get_upload(b, key, upload_id)?;
        drop(map);
        Ok(Box::new(MemWriter::new(
            Arc::clone(&self.shared),
            Target::Part {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                upload_id: upload_id.to_owned(),
                number,
            },
        )))
    }

    fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<Vec<PartInfo>, StoreError> {
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, bucket)?;
        let u = get_upload(b, key, upload_id)?;
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
        let map = self.shared.lock();
        let b = map.get(bucket).ok_or_else(|| no_bucket(bucket))?;
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
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, bucket)?;
        let u = get_upload(b, key, upload_id)?;
        let (size, etag) = common::check_completion(parts, |n| {
            u.parts.get(&n).map(|p| PartFacts {
                size: p.info.size,
                etag: p.info.etag.clone(),
            })
        })?;
        let Some(mut u) = b.uploads.remove(upload_id) else {
            return Err(no_upload(upload_id));
        };
        b.upload_order
            .remove(&(u.key.clone(), u.initiated_ms, upload_id.to_owned()));
        let mut pieces = Vec::new();
        for p in parts {
            if let Some(part) = u.parts.remove(&p.number) {
                pieces.extend(part.pieces);
            }
        }
        // Parts not named are discarded.
        let mut freed = u.bytes();
        let meta = ObjectMeta {
            size,
            etag,
            last_modified_ms: now_ms(),
            parts: Some(parts.len() as u32),
            attrs: u.attrs,
        };
        let obj = Arc::new(Object::new(meta.clone(), pieces));
        if let Some(old) = b.objects.insert(key.to_owned(), obj) {
            freed += old.meta.size;
        }
        drop(map);
        self.shared.cap.release(freed);
        Ok(meta)
    }

    fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<(), StoreError> {
        let mut map = self.shared.lock();
        let b = get_bucket(&mut map, bucket)?;
        get_upload(b, key, upload_id)?;
        let Some(u) = b.uploads.remove(upload_id) else {
            return Err(no_upload(upload_id));
        };
        b.upload_order
            .remove(&(u.key.clone(), u.initiated_ms, upload_id.to_owned()));
        drop(map);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(s: &MemoryStore, key: &str) -> Vec<(usize, usize)> {
        let map = s.shared.lock();
        map["bkt"].objects[key]
            .pieces
            .iter()
            .map(|p| (p.as_ptr() as usize, p.len()))
            .collect()
    }

    #[test]
    fn small_writes_coalesce_into_pieces_of_at_most_one_mib() {
        let s = MemoryStore::new(1 << 30);
        s.create_bucket("bkt").unwrap();
        let mut w = s.put_object("bkt", "k", ObjectAttrs::default()).unwrap();
        for _ in 0..(3 * PIECE / 4096 + 1) {
            w.write(&[7u8; 4096]).unwrap();
        }
        w.commit().unwrap();
        let lens: Vec<usize> = pieces(&s, "k").into_iter().map(|(_, l)| l).collect();
        assert_eq!(lens, [PIECE, PIECE, PIECE, 4096]);
        // One write bigger than a piece is cut into pieces.
        let mut w = s.put_object("bkt", "big", ObjectAttrs::default()).unwrap();
        w.write(&vec![1u8; 2 * PIECE + 10]).unwrap();
        w.write(b"abc").unwrap();
        w.commit().unwrap();
        let lens: Vec<usize> = pieces(&s, "big").into_iter().map(|(_, l)| l).collect();
        assert_eq!(lens, [PIECE, PIECE, 13]);
    }

    #[test]
    fn completion_moves_the_parts_pieces_without_copying() {
        let s = MemoryStore::new(1 << 30);
        s.create_bucket("bkt").unwrap();
        let u = s.create_upload("bkt", "k", ObjectAttrs::default()).unwrap();
        let mut named = Vec::new();
        let mut before = Vec::new();
        for (n, len) in [(1u32, super::super::MIN_PART_SIZE as usize), (2, 10)] {
            let mut w = s.put_part("bkt", "k", &u.upload_id, n).unwrap();
            w.write(&vec![n as u8; len]).unwrap();
            let etag = w.commit().unwrap().etag;
            named.push(CompletePart { number: n, etag });
            let map = s.shared.lock();
            let part = &map["bkt"].uploads[&u.upload_id].parts[&n];
            before.extend(part.pieces.iter().map(|p| (p.as_ptr() as usize, p.len())));
        }
        s.complete_upload("bkt", "k", &u.upload_id, &named).unwrap();
        assert_eq!(pieces(&s, "k"), before);
    }
}
