//! Multipart upload: CreateMultipartUpload, UploadPart (from the body or
//! by RDMA), UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload,
//! ListParts and ListMultipartUploads. Parts are streamed into the store
//! as they arrive ([`super::object::receive`]); the store checks the
//! completion (order, ETags, sizes).

use super::error::{S3Error, S3Result};
use super::headers::{COPY_SOURCE_CONDITIONS, attrs_from_request, check_preconditions};
use super::object::{copy_range, copy_source, receive_and_commit};
use super::payload::Payload;
use super::{Cx, int_param, xml_response};
use crate::http::{Body, Response};
use crate::store::{CompletePart, MAX_PART_NUMBER, check_key};
use crate::xml::read::{CompleteMultipartUpload, MAX_COMPLETE_BODY};
use crate::xml::write::{
    CompleteMultipartUploadResult, CopyObjectResult, InitiateMultipartUploadResult,
    ListMultipartUploadsResult, ListPartsResult, PartEntry, Timestamp, UploadEntry,
};

/// The most parts or uploads one listing returns.
pub const MAX_LISTED: u64 = 1000;

fn upload_id<'a>(cx: &'a Cx) -> &'a str {
    cx.t.param("uploadId").unwrap_or("")
}

fn part_number(cx: &Cx) -> S3Result<u32> {
    let v = cx.t.param("partNumber").unwrap_or("");
    v.parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_PART_NUMBER).contains(n))
        .ok_or_else(|| {
            S3Error::invalid_argument(format!(
                "partNumber {v:?} must be an integer between 1 and 10000"
            ))
        })
}

/// `POST /bucket/key?uploads`.
pub fn create(cx: &mut Cx) -> S3Result<Response> {
    check_key(cx.key())?;
    let attrs = attrs_from_request(cx.req)?;
    let up = cx.store.create_upload(cx.bucket(), cx.key(), attrs)?;
    let mut xml = String::new();
    InitiateMultipartUploadResult {
        bucket: cx.bucket().to_string(),
        key: cx.key().to_string(),
        upload_id: up.upload_id,
    }
    .write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `PUT /bucket/key?partNumber=N&uploadId=U`.
pub fn upload_part(cx: &mut Cx, body: &mut dyn Body) -> S3Result<Response> {
    let n = part_number(cx)?;
    let w = cx.store.put_part(cx.bucket(), cx.key(), upload_id(cx), n)?;
    receive_and_commit(cx, body, w, None)
}

/// `UploadPart` with `x-amz-copy-source` (and `x-amz-copy-source-range`).
pub fn upload_part_copy(cx: &mut Cx) -> S3Result<Response> {
    let n = part_number(cx)?;
    let (sb, sk) = copy_source(cx)?;
    let (smeta, mut reader) = cx.store.open_object(&sb, &sk)?;
    check_preconditions(cx.req, &smeta, COPY_SOURCE_CONDITIONS)?;
    let (offset, len) = match cx.header("x-amz-copy-source-range") {
        None => (0, smeta.size),
        Some(v) => {
            let bad = || {
                S3Error::invalid_argument(format!(
                    "x-amz-copy-source-range {v:?} must be bytes=first-last"
                ))
            };
            let (a, b) = v
                .trim()
                .strip_prefix("bytes=")
                .and_then(|r| r.split_once('-'))
                .ok_or_else(bad)?;
            let first: u64 = a.trim().parse().map_err(|_| bad())?;
            let last: u64 = b.trim().parse().map_err(|_| bad())?;
            if last < first {
                return Err(bad());
            }
            if last >= smeta.size {
                return Err(S3Error::new(
                    416,
                    "InvalidRange",
                    format!("the range {v} is outside the {}-byte source", smeta.size),
                ));
            }
            (first, last - first + 1)
        }
    };
    let mut w = cx.store.put_part(cx.bucket(), cx.key(), upload_id(cx), n)?;
    copy_range(&mut *reader, offset, len, &mut *w)?;
    let meta = w.commit()?;
    let mut xml = String::new();
    CopyObjectResult {
        last_modified: Timestamp::from_unix_millis(meta.last_modified_ms),
        etag: meta.etag,
        part: true,
    }
    .write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `POST /bucket/key?uploadId=U`.
pub fn complete(cx: &mut Cx, body: &mut dyn Body) -> S3Result<Response> {
    let framing = cx.framing();
    let raw = Payload::new(body, framing, None).read_small(MAX_COMPLETE_BODY)?;
    let text = std::str::from_utf8(&raw)
        .map_err(|_| S3Error::new(400, "MalformedXML", "the body is not UTF-8"))?;
    let doc = CompleteMultipartUpload::parse(text)?;
    if doc.parts.is_empty() {
        // As S3 answers an upload completed with no part.
        return Err(S3Error::new(
            400,
            "MalformedXML",
            "the XML you provided named no part",
        ));
    }
    let parts: Vec<CompletePart> = doc
        .parts
        .iter()
        .map(|p| CompletePart {
            number: u32::from(p.part_number),
            etag: p.etag.trim_matches('"').to_string(),
        })
        .collect();
    let meta = cx
        .store
        .complete_upload(cx.bucket(), cx.key(), upload_id(cx), &parts)?;
    let host = cx.header("host").unwrap_or("localhost");
    let mut xml = String::new();
    CompleteMultipartUploadResult {
        location: format!("http://{host}{}", cx.t.raw_path),
        bucket: cx.bucket().to_string(),
        key: cx.key().to_string(),
        etag: meta.etag,
    }
    .write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `DELETE /bucket/key?uploadId=U`.
pub fn abort(cx: &mut Cx) -> S3Result<Response> {
    cx.store
        .abort_upload(cx.bucket(), cx.key(), upload_id(cx))?;
    Ok(Response::new(204))
}

/// `GET /bucket/key?uploadId=U`.
pub fn list_parts(cx: &mut Cx) -> S3Result<Response> {
    let max = int_param(cx.t, "max-parts", MAX_LISTED, MAX_LISTED)?;
    let marker = int_param(cx.t, "part-number-marker", 0, u64::from(MAX_PART_NUMBER))? as u32;
    let mut parts = cx.store.list_parts(
        cx.bucket(),
        cx.key(),
        upload_id(cx),
        marker,
        max as usize + 1,
    )?;
    let truncated = parts.len() as u64 > max;
    parts.truncate(max as usize);
    let next = parts.last().map_or(0, |p| p.number);
    let mut xml = String::new();
    ListPartsResult {
        bucket: cx.bucket().to_string(),
        key: cx.key().to_string(),
        upload_id: upload_id(cx).to_string(),
        owner: super::bucket::owner(),
        storage_class: "STANDARD".to_string(),
        part_number_marker: marker,
        next_part_number_marker: next,
        max_parts: max as u32,
        is_truncated: truncated,
        parts: parts
            .into_iter()
            .map(|p| PartEntry {
                part_number: p.number,
                last_modified: Timestamp::from_unix_millis(p.last_modified_ms),
                etag: p.etag,
                size: p.size,
            })
            .collect(),
    }
    .write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `GET /bucket?uploads`: with a delimiter, keys that share a prefix up to
/// it are rolled up into one common prefix, as ListObjects does.
pub fn list_uploads(cx: &mut Cx) -> S3Result<Response> {
    cx.store.bucket(cx.bucket())?;
    let t = cx.t;
    let max = int_param(t, "max-uploads", MAX_LISTED, MAX_LISTED)?;
    let prefix = t.param("prefix").unwrap_or("");
    let delimiter = t.param("delimiter").filter(|d| !d.is_empty());
    let key_marker = t.param("key-marker").unwrap_or("");
    let id_marker = t
        .param("upload-id-marker")
        .filter(|_| !key_marker.is_empty());
    let after = (!key_marker.is_empty()).then_some((key_marker, id_marker));
    let mut ups = cx
        .store
        .list_uploads(cx.bucket(), prefix, after, max as usize + 1)?;
    let truncated = ups.len() as u64 > max;
    ups.truncate(max as usize);
    let (next_key, next_id) = ups
        .last()
        .filter(|_| truncated)
        .map_or((String::new(), String::new()), |u| {
            (u.key.clone(), u.upload_id.clone())
        });
    let mut uploads = Vec::new();
    let mut common_prefixes: Vec<String> = Vec::new();
    for u in ups {
        if let Some(d) = delimiter {
            if let Some(i) = u.key[prefix.len()..].find(d) {
                let cp = u.key[..prefix.len() + i + d.len()].to_string();
                if common_prefixes.last() != Some(&cp) {
                    common_prefixes.push(cp);
                }
                continue;
            }
        }
        uploads.push(UploadEntry {
            key: u.key,
            upload_id: u.upload_id,
            owner: super::bucket::owner(),
            storage_class: "STANDARD".to_string(),
            initiated: Timestamp::from_unix_millis(u.initiated_ms),
        });
    }
    let mut xml = String::new();
    ListMultipartUploadsResult {
        bucket: cx.bucket().to_string(),
        key_marker: key_marker.to_string(),
        upload_id_marker: id_marker.unwrap_or("").to_string(),
        next_key_marker: next_key,
        next_upload_id_marker: next_id,
        prefix: t.param("prefix").map(str::to_string),
        delimiter: delimiter.map(str::to_string),
        max_uploads: max as u32,
        is_truncated: truncated,
        uploads,
        common_prefixes,
    }
    .write_into(&mut xml);
    Ok(xml_response(200, xml))
}
