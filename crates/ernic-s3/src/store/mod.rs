//! The object store under the S3 API: buckets of objects kept in memory
//! ([`memory::MemoryStore`]) or in a directory ([`dir::DirStore`]), behind
//! one trait, [`Store`], that the S3 layer and the RDMA data plane use.
//!
//! What every store promises:
//! - **Atomic objects.** A write is streamed through an [`ObjectWriter`] and
//!   becomes visible only at [`ObjectWriter::commit`], whole, replacing any
//!   object of the same key in one step. A writer dropped without a commit
//!   leaves nothing behind. The directory store writes a temporary file,
//!   fsyncs it and renames it into place, so a crash never leaves half an
//!   object (its module says how the files are laid out).
//! - **Streaming.** No object and no part is ever held whole in memory by
//!   the store's callers: bytes go in through `write` and come out through
//!   [`ObjectReader::read_at`] in pieces of the caller's choosing. (The
//!   memory store keeps its objects in memory, of course, but in the pieces
//!   they were written in; it never copies an object to concatenate it.)
//! - **Names are data, never paths.** Bucket names are checked by
//!   [`check_bucket_name`] and keys by [`check_key`]; the directory store
//!   never makes a file name out of a key, so `../` in a key reaches nothing.
//! - **ETags are MD5s.** The writer hashes what it is given; a multipart
//!   object's ETag is the MD5 of its parts' binary MD5s followed by `-N`
//!   ([`multipart_etag`]). ETags are kept and returned without quotes; the
//!   S3 layer quotes them.
//! - **Bounded.** A store has a capacity (`size=`); a write that would pass
//!   it fails with [`StoreError::Full`] and the store keeps serving.
//!
//! Stores are shared by many connection threads: every method takes `&self`.
//! Nothing here reads HTTP or knows about signatures.

mod common;
pub mod dir;
pub mod memory;

/// The longest key S3 accepts, in bytes of UTF-8.
pub const MAX_KEY_LEN: usize = 1024;
/// The fewest and most bytes of a bucket name.
pub const BUCKET_NAME_LEN: std::ops::RangeInclusive<usize> = 3..=63;
/// The highest part number of a multipart upload (S3's limit).
pub const MAX_PART_NUMBER: u32 = 10_000;
/// The smallest part other than the last, as S3 checks it at completion.
pub const MIN_PART_SIZE: u64 = 5 << 20;
/// The most user-metadata bytes (names and values) on one object, as S3
/// counts them (2 KiB).
pub const MAX_USER_META_BYTES: usize = 2048;

/// What is stored with an object besides its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectAttrs {
    /// `Content-Type` as the writer gave it (None: the S3 layer answers
    /// `binary/octet-stream`).
    pub content_type: Option<String>,
    /// The other stored headers, lower-case names: `cache-control`,
    /// `content-disposition`, `content-encoding`, `content-language`,
    /// `expires`, `x-amz-checksum-*`, `x-amz-storage-class`,
    /// `x-amz-website-redirect-location`. Kept in the order given.
    pub headers: Vec<(String, String)>,
    /// User metadata: the part of each `x-amz-meta-*` name after the
    /// prefix, lower-case, with its value. Kept in the order given.
    pub user_meta: Vec<(String, String)>,
}

/// An object as listing and HEAD see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// Its length in bytes.
    pub size: u64,
    /// The MD5 of its bytes in lower-case hex, or for a multipart object
    /// [`multipart_etag`]; without quotes.
    pub etag: String,
    /// When it was committed, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
    /// Its number of parts if it was made by a multipart upload.
    pub parts: Option<u32>,
    /// What was stored with it.
    pub attrs: ObjectAttrs,
}

/// A bucket as ListBuckets sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    /// Its name.
    pub name: String,
    /// When it was created, milliseconds since the Unix epoch.
    pub created_ms: i64,
}

/// Where a listing starts, after which it returns keys in ascending byte
/// order (UTF-8 byte order, as S3 lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFrom<'a> {
    /// From the first key.
    Start,
    /// From the first key greater than this one.
    After(&'a str),
    /// From the first key greater than this one that does not start with
    /// it (how a listing with a delimiter skips a common prefix it has
    /// already reported).
    AfterPrefix(&'a str),
}

/// A multipart upload in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadInfo {
    /// The object's key.
    pub key: String,
    /// The upload's id (a string of `[0-9a-zA-Z_-]`, at most 64 bytes).
    pub upload_id: String,
    /// When it was created, milliseconds since the Unix epoch.
    pub initiated_ms: i64,
}

/// A part that was uploaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartInfo {
    /// Its number, 1..=[`MAX_PART_NUMBER`].
    pub number: u32,
    /// Its length in bytes.
    pub size: u64,
    /// Its MD5 in lower-case hex, without quotes.
    pub etag: String,
    /// When it was committed, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
}

/// A part named by CompleteMultipartUpload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletePart {
    /// Its number.
    pub number: u32,
    /// The ETag the client was given for it, without quotes.
    pub etag: String,
}

/// Why a store operation failed. Each variant is one S3 error code
/// ([`StoreError::s3_code`]) and HTTP status ([`StoreError::http_status`]).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The bucket name breaks S3's rules.
    #[error("bucket name {name:?}: {why}")]
    InvalidBucketName {
        /// The name.
        name: String,
        /// Which rule.
        why: &'static str,
    },
    /// The key is empty, too long, or not a key S3 accepts.
    #[error("key: {why}")]
    InvalidKey {
        /// Which rule.
        why: &'static str,
    },
    /// No such bucket.
    #[error("no bucket {name:?}")]
    NoSuchBucket {
        /// The name.
        name: String,
    },
    /// The bucket exists already (this store has one owner).
    #[error("bucket {name:?} exists already")]
    BucketAlreadyOwnedByYou {
        /// The name.
        name: String,
    },
    /// DeleteBucket on a bucket with objects or uploads in it.
    #[error("bucket {name:?} is not empty")]
    BucketNotEmpty {
        /// The name.
        name: String,
    },
    /// No such object.
    #[error("no object {key:?}")]
    NoSuchKey {
        /// The key.
        key: String,
    },
    /// No such multipart upload (or it belongs to another key).
    #[error("no multipart upload {upload_id:?}")]
    NoSuchUpload {
        /// The id.
        upload_id: String,
    },
    /// A part number outside 1..=10000.
    #[error("part number {number} is outside 1..=10000")]
    InvalidPartNumber {
        /// The number.
        number: u32,
    },
    /// CompleteMultipartUpload named a part that was not uploaded, or with
    /// another ETag.
    #[error("part {number}: not uploaded, or its ETag is not {etag:?}")]
    InvalidPart {
        /// The part.
        number: u32,
        /// The ETag named.
        etag: String,
    },
    /// CompleteMultipartUpload's parts were not in ascending order, or it
    /// named none.
    #[error("the parts are not in ascending order")]
    InvalidPartOrder,
    /// A part other than the last is smaller than [`MIN_PART_SIZE`].
    #[error("part {number} is {size} bytes; every part but the last needs 5 MiB")]
    EntityTooSmall {
        /// The part.
        number: u32,
        /// Its length.
        size: u64,
    },
    /// User metadata over [`MAX_USER_META_BYTES`].
    #[error("user metadata is {bytes} bytes; at most 2048")]
    MetadataTooLarge {
        /// Its size.
        bytes: usize,
    },
    /// The write would pass the store's capacity.
    #[error("the store is full (capacity {capacity} bytes)")]
    Full {
        /// The capacity.
        capacity: u64,
    },
    /// The directory under a directory store failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    /// The S3 error code.
    pub fn s3_code(&self) -> &'static str {
        match self {
            StoreError::InvalidBucketName { .. } => "InvalidBucketName",
            StoreError::InvalidKey { why } if *why == KEY_TOO_LONG => "KeyTooLongError",
            StoreError::InvalidKey { .. } => "InvalidArgument",
            StoreError::NoSuchBucket { .. } => "NoSuchBucket",
            StoreError::BucketAlreadyOwnedByYou { .. } => "BucketAlreadyOwnedByYou",
            StoreError::BucketNotEmpty { .. } => "BucketNotEmpty",
            StoreError::NoSuchKey { .. } => "NoSuchKey",
            StoreError::NoSuchUpload { .. } => "NoSuchUpload",
            StoreError::InvalidPartNumber { .. } => "InvalidArgument",
            StoreError::InvalidPart { .. } => "InvalidPart",
            StoreError::InvalidPartOrder => "InvalidPartOrder",
            StoreError::EntityTooSmall { .. } => "EntityTooSmall",
            StoreError::MetadataTooLarge { .. } => "MetadataTooLarge",
            StoreError::Full { .. } => "InsufficientStorage",
            StoreError::Io { .. } => "InternalError",
        }
    }

    /// The HTTP status S3 answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            StoreError::NoSuchBucket { .. }
            | StoreError::NoSuchKey { .. }
            | StoreError::NoSuchUpload { .. } => 404,
            StoreError::BucketAlreadyOwnedByYou { .. } | StoreError::BucketNotEmpty { .. } => 409,
            StoreError::Full { .. } => 507,
            StoreError::Io { .. } => 500,
            _ => 400,
        }
    }
}

/// The `why` of [`StoreError::InvalidKey`] for a key over [`MAX_KEY_LEN`].
pub const KEY_TOO_LONG: &str = "longer than 1024 bytes";

/// Bytes going into the store: an object (from [`Store::put_object`]) or a
/// part (from [`Store::put_part`]). Nothing is visible until
/// [`commit`](ObjectWriter::commit); dropping the writer abandons the bytes.
pub trait ObjectWriter: Send {
    /// Appends `data`. Fails with [`StoreError::Full`] when the store's
    /// capacity would be passed, or with [`StoreError::Io`].
    fn write(&mut self, data: &[u8]) -> Result<(), StoreError>;
    /// The bytes written so far.
    fn written(&self) -> u64;
    /// The MD5 of the bytes written so far, without finishing the writer
    /// (the S3 layer checks `Content-MD5` before it commits).
    fn md5(&self) -> [u8; 16];
    /// Replaces the attributes the object will be committed with (the S3
    /// layer learns a trailing checksum only once the body has ended).
    /// Ignored by a part's writer.
    fn set_attrs(&mut self, attrs: ObjectAttrs);
    /// Makes the object (or part) visible, whole, in one step, replacing
    /// one of the same key (or number). Returns what listing will show.
    fn commit(self: Box<Self>) -> Result<ObjectMeta, StoreError>;
}

/// Bytes coming out of one committed object. An object replaced or deleted
/// while a reader is open keeps its old bytes for that reader.
pub trait ObjectReader: Send {
    /// The object's length.
    fn len(&self) -> u64;
    /// Whether it has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies bytes from `offset` into `buf`; returns how many (less than
    /// `buf.len()` only at the end). An offset at or past the end gives 0.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize, StoreError>;
}

/// A bucket-and-object store. Every method takes `&self`: connection
/// threads share one store.
pub trait Store: Send + Sync {
    /// Every bucket, by name.
    fn list_buckets(&self) -> Result<Vec<BucketInfo>, StoreError>;
    /// Makes an empty bucket; refuses a name [`check_bucket_name`] refuses,
    /// and one that exists ([`StoreError::BucketAlreadyOwnedByYou`]).
    fn create_bucket(&self, name: &str) -> Result<BucketInfo, StoreError>;
    /// The bucket, or [`StoreError::NoSuchBucket`].
    fn bucket(&self, name: &str) -> Result<BucketInfo, StoreError>;
    /// Removes an empty bucket; one with objects or multipart uploads in
    /// progress is refused with [`StoreError::BucketNotEmpty`].
    fn delete_bucket(&self, name: &str) -> Result<(), StoreError>;

    /// At most `limit` objects whose keys start with `prefix`, from `from`
    /// on, in ascending key order.
    fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        from: ListFrom<'_>,
        limit: usize,
    ) -> Result<Vec<(String, ObjectMeta)>, StoreError>;
    /// One object's metadata.
    fn head_object(&self, bucket: &str, key: &str) -> Result<ObjectMeta, StoreError>;
    /// One object's metadata and its bytes, as of one moment.
    fn open_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<(ObjectMeta, Box<dyn ObjectReader>), StoreError>;
    /// A writer that, committed, makes `key` in `bucket` with `attrs`.
    /// Refuses a missing bucket and a bad key before any byte is written.
    fn put_object(
        &self,
        bucket: &str,
        key: &str,
        attrs: ObjectAttrs,
    ) -> Result<Box<dyn ObjectWriter>, StoreError>;
    /// Removes an object. Removing one that does not exist is not an error
    /// (S3 answers 204 either way); a missing bucket is.
    fn delete_object(&self, bucket: &str, key: &str) -> Result<(), StoreError>;

    /// Starts a multipart upload of `key` with `attrs` (kept until it
    /// completes); returns its id.
    fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        attrs: ObjectAttrs,
    ) -> Result<UploadInfo, StoreError>;
    /// A writer for part `number` of an upload; committed, it replaces a
    /// part of that number. The [`ObjectMeta`] its commit returns has the
    /// part's size and ETag.
    fn put_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: u32,
    ) -> Result<Box<dyn ObjectWriter>, StoreError>;
    /// The parts uploaded so far with numbers above `after`, ascending, at
    /// most `limit`.
    fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<Vec<PartInfo>, StoreError>;
    /// The uploads in progress in a bucket whose keys start with `prefix`,
    /// ordered by key then by initiation, at most `limit`, after the
    /// (`key`, `upload_id`) marker when one is given.
    fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<(&str, Option<&str>)>,
        limit: usize,
    ) -> Result<Vec<UploadInfo>, StoreError>;
    /// Makes the object out of the parts named, in that order: checks
    /// ascending order ([`StoreError::InvalidPartOrder`]), that each was
    /// uploaded with that ETag ([`StoreError::InvalidPart`]) and that every
    /// part but the last has [`MIN_PART_SIZE`] ([`StoreError::EntityTooSmall`]);
    /// parts not named are discarded. The object appears whole, atomically,
    /// and the upload is gone.
    fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletePart],
    ) -> Result<ObjectMeta, StoreError>;
    /// Discards an upload and its parts.
    fn abort_upload(&self, bucket: &str, key: &str, upload_id: &str) -> Result<(), StoreError>;

    /// Bytes held (objects and parts), for the capacity check and stats.
    fn used_bytes(&self) -> u64;
    /// The capacity given at creation.
    fn capacity(&self) -> u64;
}

/// Checks a bucket name against S3's rules for new buckets: 3 to 63
/// characters of lower-case letters, digits, `.` and `-`, starting and
/// ending with a letter or digit, no `..`, not shaped like an IPv4 address,
/// not starting with `xn--` or `sthree-`, not ending with `-s3alias` or
/// `--ol-s3`.
pub fn check_bucket_name(name: &str) -> Result<(), StoreError> {
    let bad = |why| {
        Err(StoreError::InvalidBucketName {
            name: name.chars().take(80).collect(),
            why,
        })
    };
    if !BUCKET_NAME_LEN.contains(&name.len()) {
        return bad("a bucket name has 3 to 63 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
    {
        return bad("a bucket name has only lower-case letters, digits, '.' and '-'");
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    if !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return bad("a bucket name starts and ends with a letter or digit");
    }
    if name.contains("..") {
        return bad("a bucket name has no two adjacent periods");
    }
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return bad("a bucket name is not an IP address");
    }
    if name.starts_with("xn--") || name.starts_with("sthree-") {
        return bad("a bucket name does not start with xn-- or sthree-");
    }
    if name.ends_with("-s3alias") || name.ends_with("--ol-s3") {
        return bad("a bucket name does not end with -s3alias or --ol-s3");
    }
    Ok(())
}

/// Checks a key: 1 to [`MAX_KEY_LEN`] bytes of UTF-8 (the caller has
/// decoded it) with no NUL. Everything else, `../` and `/` included, is an
/// ordinary key: no store makes a path of it.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::InvalidKey {
            why: "an object key is not empty",
        });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(StoreError::InvalidKey { why: KEY_TOO_LONG });
    }
    if key.contains('\0') {
        return Err(StoreError::InvalidKey {
            why: "an object key has no NUL",
        });
    }
    Ok(())
}

/// Checks user metadata against [`MAX_USER_META_BYTES`] as S3 counts it:
/// the bytes of each name (without `x-amz-meta-`) and value.
pub fn check_user_meta(meta: &[(String, String)]) -> Result<(), StoreError> {
    let bytes: usize = meta.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_USER_META_BYTES {
        return Err(StoreError::MetadataTooLarge { bytes });
    }
    Ok(())
}

/// A multipart object's ETag: the MD5 of the parts' binary MD5s, in order,
/// in hex, then `-` and the number of parts.
pub fn multipart_etag(part_md5s: &[[u8; 16]]) -> String {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    for m in part_md5s {
        h.update(m);
    }
    format!("{}-{}", hex(&h.finalize()), part_md5s.len())
}

/// Lower-case hex of `bytes` (SigV4's, as ETags are written).
pub use crate::sigv4::canonical::hex;

/// The 16 bytes of an ETag in hex (quotes and a `-N` suffix not allowed),
/// or None.
pub fn etag_md5(etag: &str) -> Option<[u8; 16]> {
    let b = etag.as_bytes();
    if b.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let hi = (b[2 * i] as char).to_digit(16)?;
        let lo = (b[2 * i + 1] as char).to_digit(16)?;
        *o = (hi * 16 + lo) as u8;
    }
    Some(out)
}

/// Milliseconds since the Unix epoch, now (the stores' one clock).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
