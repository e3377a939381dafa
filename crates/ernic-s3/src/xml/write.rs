//! The response bodies S3 writes, as AWS's API reference shows them: each a
//! plain struct whose `write_into` appends the whole document (declaration,
//! root element with the S3 namespace, no indentation) to a `String`. Element
//! names are the program's constants; every text taken from a struct is
//! escaped by [`escape_into`]. Writers cannot fail.

use std::fmt::{Display, Write as _};

use super::{S3_NS, XML_DECL, escape_into};

/// A point in time, written as ISO 8601 UTC with milliseconds
/// (`2009-10-12T17:50:30.000Z`), as S3 writes `LastModified`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Milliseconds since 1970-01-01T00:00:00Z (negative before).
    pub unix_millis: i64,
}

impl Timestamp {
    /// The time `unix_millis` after the epoch.
    pub fn from_unix_millis(unix_millis: i64) -> Timestamp {
        Timestamp { unix_millis }
    }
}

impl Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.unix_millis.div_euclid(1000);
        let ms = self.unix_millis.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        let (y, m, d) = crate::http::date::civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        )
    }
}

/// The owner of a bucket, object or upload.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Owner {
    /// The canonical user ID.
    pub id: String,
    /// The display name, when there is one.
    pub display_name: Option<String>,
}

/// Appends elements to a document.
struct W<'a>(&'a mut String);

impl W<'_> {
    fn root<'a>(out: &'a mut String, name: &str) -> W<'a> {
        out.push_str(XML_DECL);
        let _ = write!(out, "<{name} xmlns=\"{S3_NS}\">");
        W(out)
    }
    fn open(&mut self, name: &str) {
        let _ = write!(self.0, "<{name}>");
    }
    fn close(&mut self, name: &str) {
        let _ = write!(self.0, "</{name}>");
    }
    /// `<name>text</name>`, or `<name/>` when `text` is empty.
    fn text(&mut self, name: &str, text: &str) {
        if text.is_empty() {
            let _ = write!(self.0, "<{name}/>");
        } else {
            self.open(name);
            escape_into(self.0, text);
            self.close(name);
        }
    }
    fn opt(&mut self, name: &str, text: Option<&str>) {
        if let Some(t) = text {
            self.text(name, t);
        }
    }
    fn num(&mut self, name: &str, v: impl Display) {
        let _ = write!(self.0, "<{name}>{v}</{name}>");
    }
    fn etag(&mut self, etag: &str) {
        self.open("ETag");
        escape_into(self.0, "\"");
        escape_into(self.0, etag);
        escape_into(self.0, "\"");
        self.close("ETag");
    }
    fn owner(&mut self, name: &str, o: &Owner) {
        self.open(name);
        self.text("ID", &o.id);
        self.opt("DisplayName", o.display_name.as_deref());
        self.close(name);
    }
    fn prefixes(&mut self, prefixes: &[String]) {
        for p in prefixes {
            self.open("CommonPrefixes");
            self.text("Prefix", p);
            self.close("CommonPrefixes");
        }
    }
}

/// Appends `<?xml …?>\n<Error>…</Error>`. S3 writes `Error` without a namespace.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ErrorDoc {
    /// `Code`, e.g. `NoSuchKey`, `InvalidRDMAToken`.
    pub code: String,
    /// `Message`.
    pub message: String,
    /// `Resource`, the bucket or object.
    pub resource: Option<String>,
    /// `RequestId`.
    pub request_id: Option<String>,
    /// Further elements after `Message` (`Key`, `BucketName`, `UploadId`, …).
    pub extra: Vec<(&'static str, String)>,
}

impl ErrorDoc {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        out.push_str(XML_DECL);
        let mut w = W(out);
        w.open("Error");
        w.text("Code", &self.code);
        w.text("Message", &self.message);
        for (name, v) in &self.extra {
            w.text(name, v);
        }
        w.opt("Resource", self.resource.as_deref());
        w.opt("RequestId", self.request_id.as_deref());
        w.close("Error");
    }
}

/// One bucket in `ListAllMyBucketsResult`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BucketEntry {
    /// `Name`.
    pub name: String,
    /// `CreationDate`.
    pub creation_date: Timestamp,
}

/// `ListAllMyBucketsResult` (ListBuckets).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ListAllMyBucketsResult {
    /// `Owner`.
    pub owner: Owner,
    /// `Buckets/Bucket`.
    pub buckets: Vec<BucketEntry>,
}

impl ListAllMyBucketsResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "ListAllMyBucketsResult");
        w.owner("Owner", &self.owner);
        w.open("Buckets");
        for b in &self.buckets {
            w.open("Bucket");
            w.text("Name", &b.name);
            w.num("CreationDate", b.creation_date);
            w.close("Bucket");
        }
        w.close("Buckets");
        w.close("ListAllMyBucketsResult");
    }
}

/// One object in `ListBucketResult`'s `Contents`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ObjectEntry {
    /// `Key`.
    pub key: String,
    /// `LastModified`.
    pub last_modified: Timestamp,
    /// `ETag` without its quotes (the writer adds them).
    pub etag: String,
    /// `Size` in bytes.
    pub size: u64,
    /// `StorageClass`, e.g. `STANDARD`.
    pub storage_class: String,
    /// `Owner`, when the listing asks for it.
    pub owner: Option<Owner>,
}

/// What tells ListObjects (V1) and ListObjectsV2 apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListVersion {
    /// ListObjects.
    V1 {
        /// `Marker` (written even when empty, as S3 does).
        marker: String,
        /// `NextMarker`.
        next_marker: Option<String>,
    },
    /// ListObjectsV2.
    V2 {
        /// `KeyCount`.
        key_count: u64,
        /// `ContinuationToken`.
        continuation_token: Option<String>,
        /// `NextContinuationToken`.
        next_continuation_token: Option<String>,
        /// `StartAfter`.
        start_after: Option<String>,
    },
}

/// `ListBucketResult` (ListObjects and ListObjectsV2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListBucketResult {
    /// `Name`, the bucket.
    pub name: String,
    /// `Prefix` (written even when empty).
    pub prefix: String,
    /// `Delimiter`.
    pub delimiter: Option<String>,
    /// `MaxKeys`.
    pub max_keys: u64,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `EncodingType` (`url`), when the request asked for it.
    pub encoding_type: Option<String>,
    /// V1 or V2 fields.
    pub version: ListVersion,
    /// `Contents`.
    pub contents: Vec<ObjectEntry>,
    /// `CommonPrefixes/Prefix`.
    pub common_prefixes: Vec<String>,
}

impl ListBucketResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "ListBucketResult");
        w.text("Name", &self.name);
        w.text("Prefix", &self.prefix);
        match &self.version {
            ListVersion::V1 {
                marker,
                next_marker,
            } => {
                w.text("Marker", marker);
                w.opt("NextMarker", next_marker.as_deref());
            }
            ListVersion::V2 {
                key_count,
                continuation_token,
                next_continuation_token,
                start_after,
            } => {
                w.opt("ContinuationToken", continuation_token.as_deref());
                w.opt("NextContinuationToken", next_continuation_token.as_deref());
                w.opt("StartAfter", start_after.as_deref());
                w.num("KeyCount", key_count);
            }
        }
        w.num("MaxKeys", self.max_keys);
        w.opt("Delimiter", self.delimiter.as_deref());
        w.num("IsTruncated", self.is_truncated);
        w.opt("EncodingType", self.encoding_type.as_deref());
        for c in &self.contents {
            w.open("Contents");
            w.text("Key", &c.key);
            w.num("LastModified", c.last_modified);
            w.etag(&c.etag);
            w.num("Size", c.size);
            if let Some(o) = &c.owner {
                w.owner("Owner", o);
            }
            w.text("StorageClass", &c.storage_class);
            w.close("Contents");
        }
        w.prefixes(&self.common_prefixes);
        w.close("ListBucketResult");
    }
}

/// `LocationConstraint` (GetBucketLocation); `None` is us-east-1's empty element.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LocationConstraint(pub Option<String>);

impl LocationConstraint {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        out.push_str(XML_DECL);
        let _ = write!(out, "<LocationConstraint xmlns=\"{S3_NS}\"");
        match self.0.as_deref() {
            None | Some("") => out.push_str("/>"),
            Some(r) => {
                out.push('>');
                escape_into(out, r);
                out.push_str("</LocationConstraint>");
            }
        }
    }
}

/// `CopyObjectResult` (CopyObject), or `CopyPartResult` (UploadPartCopy)
/// when `part`: the same two elements under another root.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CopyObjectResult {
    /// `LastModified`.
    pub last_modified: Timestamp,
    /// `ETag` without quotes.
    pub etag: String,
    /// Whether this answers UploadPartCopy (root `CopyPartResult`).
    pub part: bool,
}

impl CopyObjectResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let root = if self.part {
            "CopyPartResult"
        } else {
            "CopyObjectResult"
        };
        let mut w = W::root(out, root);
        w.num("LastModified", self.last_modified);
        w.etag(&self.etag);
        w.close(root);
    }
}

/// `InitiateMultipartUploadResult` (CreateMultipartUpload).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct InitiateMultipartUploadResult {
    /// `Bucket`.
    pub bucket: String,
    /// `Key`.
    pub key: String,
    /// `UploadId`.
    pub upload_id: String,
}

impl InitiateMultipartUploadResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "InitiateMultipartUploadResult");
        w.text("Bucket", &self.bucket);
        w.text("Key", &self.key);
        w.text("UploadId", &self.upload_id);
        w.close("InitiateMultipartUploadResult");
    }
}

/// `CompleteMultipartUploadResult`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CompleteMultipartUploadResult {
    /// `Location`, the object's URL.
    pub location: String,
    /// `Bucket`.
    pub bucket: String,
    /// `Key`.
    pub key: String,
    /// `ETag` without quotes (`…-N` for N parts).
    pub etag: String,
}

impl CompleteMultipartUploadResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "CompleteMultipartUploadResult");
        w.text("Location", &self.location);
        w.text("Bucket", &self.bucket);
        w.text("Key", &self.key);
        w.etag(&self.etag);
        w.close("CompleteMultipartUploadResult");
    }
}

/// One part in `ListPartsResult`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct PartEntry {
    /// `PartNumber`.
    pub part_number: u32,
    /// `LastModified`.
    pub last_modified: Timestamp,
    /// `ETag` without quotes.
    pub etag: String,
    /// `Size`.
    pub size: u64,
}

/// `ListPartsResult`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ListPartsResult {
    /// `Bucket`.
    pub bucket: String,
    /// `Key`.
    pub key: String,
    /// `UploadId`.
    pub upload_id: String,
    /// `Initiator` and `Owner` (S3 writes the same user twice).
    pub owner: Owner,
    /// `StorageClass`.
    pub storage_class: String,
    /// `PartNumberMarker`.
    pub part_number_marker: u32,
    /// `NextPartNumberMarker`.
    pub next_part_number_marker: u32,
    /// `MaxParts`.
    pub max_parts: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `Part`.
    pub parts: Vec<PartEntry>,
}

impl ListPartsResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "ListPartsResult");
        w.text("Bucket", &self.bucket);
        w.text("Key", &self.key);
        w.text("UploadId", &self.upload_id);
        w.owner("Initiator", &self.owner);
        w.owner("Owner", &self.owner);
        w.text("StorageClass", &self.storage_class);
        w.num("PartNumberMarker", self.part_number_marker);
        w.num("NextPartNumberMarker", self.next_part_number_marker);
        w.num("MaxParts", self.max_parts);
        w.num("IsTruncated", self.is_truncated);
        for p in &self.parts {
            w.open("Part");
            w.num("PartNumber", p.part_number);
            w.num("LastModified", p.last_modified);
            w.etag(&p.etag);
            w.num("Size", p.size);
            w.close("Part");
        }
        w.close("ListPartsResult");
    }
}

/// One upload in `ListMultipartUploadsResult`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct UploadEntry {
    /// `Key`.
    pub key: String,
    /// `UploadId`.
    pub upload_id: String,
    /// `Initiator` and `Owner`.
    pub owner: Owner,
    /// `StorageClass`.
    pub storage_class: String,
    /// `Initiated`.
    pub initiated: Timestamp,
}

/// `ListMultipartUploadsResult`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ListMultipartUploadsResult {
    /// `Bucket`.
    pub bucket: String,
    /// `KeyMarker`.
    pub key_marker: String,
    /// `UploadIdMarker`.
    pub upload_id_marker: String,
    /// `NextKeyMarker`.
    pub next_key_marker: String,
    /// `NextUploadIdMarker`.
    pub next_upload_id_marker: String,
    /// `Prefix`, when the request gave one.
    pub prefix: Option<String>,
    /// `Delimiter`, when the request gave one.
    pub delimiter: Option<String>,
    /// `MaxUploads`.
    pub max_uploads: u32,
    /// `IsTruncated`.
    pub is_truncated: bool,
    /// `Upload`.
    pub uploads: Vec<UploadEntry>,
    /// `CommonPrefixes/Prefix`.
    pub common_prefixes: Vec<String>,
}

impl ListMultipartUploadsResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "ListMultipartUploadsResult");
        w.text("Bucket", &self.bucket);
        w.text("KeyMarker", &self.key_marker);
        w.text("UploadIdMarker", &self.upload_id_marker);
        w.text("NextKeyMarker", &self.next_key_marker);
        w.text("NextUploadIdMarker", &self.next_upload_id_marker);
        w.opt("Prefix", self.prefix.as_deref());
        w.opt("Delimiter", self.delimiter.as_deref());
        w.num("MaxUploads", self.max_uploads);
        w.num("IsTruncated", self.is_truncated);
        for u in &self.uploads {
            w.open("Upload");
            w.text("Key", &u.key);
            w.text("UploadId", &u.upload_id);
            w.owner("Initiator", &u.owner);
            w.owner("Owner", &u.owner);
            w.text("StorageClass", &u.storage_class);
            w.num("Initiated", u.initiated);
            w.close("Upload");
        }
        w.prefixes(&self.common_prefixes);
        w.close("ListMultipartUploadsResult");
    }
}

/// One object DeleteObjects deleted.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DeletedEntry {
    /// `Key`.
    pub key: String,
    /// `VersionId`, when the request named one.
    pub version_id: Option<String>,
}

/// One object DeleteObjects failed to delete.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DeleteErrorEntry {
    /// `Key`.
    pub key: String,
    /// `VersionId`, when the request named one.
    pub version_id: Option<String>,
    /// `Code`.
    pub code: String,
    /// `Message`.
    pub message: String,
}

/// `DeleteResult` (DeleteObjects); in quiet mode the caller leaves `deleted` empty.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DeleteResult {
    /// `Deleted`.
    pub deleted: Vec<DeletedEntry>,
    /// `Error`.
    pub errors: Vec<DeleteErrorEntry>,
}

impl DeleteResult {
    /// Appends the document to `out`.
    pub fn write_into(&self, out: &mut String) {
        let mut w = W::root(out, "DeleteResult");
        for d in &self.deleted {
            w.open("Deleted");
            w.text("Key", &d.key);
            w.opt("VersionId", d.version_id.as_deref());
            w.close("Deleted");
        }
        for e in &self.errors {
            w.open("Error");
            w.text("Key", &e.key);
            w.opt("VersionId", e.version_id.as_deref());
            w.text("Code", &e.code);
            w.text("Message", &e.message);
            w.close("Error");
        }
        w.close("DeleteResult");
    }
}
