//! The object operations: PutObject (from the HTTP body or by RDMA),
//! GetObject and HeadObject (whole, ranged, conditional, or by RDMA),
//! DeleteObject, DeleteObjects and CopyObject; and [`receive`], the one
//! way a PUT or an UploadPart's bytes reach a store writer.

use std::io;

use md5::{Digest, Md5};

use super::error::{S3Error, S3Result};
use super::headers::{
    COPY_SOURCE_CONDITIONS, READ_CONDITIONS, RESPONSE_OVERRIDES, attrs_from_request,
    check_preconditions, etag_listed, object_headers, parse_range, quoted, resolve_range,
};
use super::payload::{Checksum, Payload, check_content_md5};
use super::token_path::{self, DataPlaneError, TOKEN_HEADER, Transfer};
use super::{Cx, xml_response};
use crate::http::{Body, BodySource, Response, ResponseBody};
use crate::sigv4::canonical::percent_decode;
use crate::store::{ObjectMeta, ObjectReader, ObjectWriter, StoreError, check_key};
use crate::xml::read::{Delete, MAX_DELETE_BODY};
use crate::xml::write::{
    CopyObjectResult, DeleteErrorEntry, DeleteResult, DeletedEntry, Timestamp,
};

/// How many bytes a copy moves at a time.
const COPY_CHUNK: usize = 1 << 20;

/// How a PUT's (or UploadPart's) bytes arrived.
pub enum Received {
    /// In the HTTP body; the checksum header to store, if any.
    Body(Option<(String, String)>),
    /// By RDMA; the checksum header to store, and the transfer.
    Rdma(Option<(String, String)>, Transfer),
    /// RDMA declined: this response, and nothing is to be committed.
    Declined(Response),
}

/// Streams a PUT's bytes into `w`: from the client's registered buffer when
/// the request has a token (its length is the token's), else from the
/// body (decoded, hashed, checked). `Content-MD5` is checked against what
/// arrived. The caller commits `w` only on `Ok` other than `Declined`.
pub fn receive(cx: &mut Cx, body: &mut dyn Body, w: &mut dyn ObjectWriter) -> S3Result<Received> {
    let mut checksum = Checksum::from_request(cx.req)?;
    let token = token_path::request_token(cx.header(TOKEN_HEADER))?;
    let framing = cx.framing();
    if let Some(token) = token {
        // The HTTP body of a token PUT is empty; read it to check that.
        let mut payload = Payload::new(body, framing, None);
        if !payload.read_small(0).is_ok_and(|b| b.is_empty()) {
            return Err(S3Error::invalid_request(
                "a request with x-amz-rdma-token has an empty body",
            ));
        }
        let Some(dp) = cx.data_plane else {
            return Ok(Received::Declined(token_path::declined_put(
                "this store has no RDMA data plane",
                &cx.t.resource(),
            )));
        };
        let mut hasher = checksum.as_mut();
        let result = dp.read_from_client(&token, token.len, &mut |d| {
            if let Some(c) = hasher.as_mut() {
                c.update(d);
            }
            w.write(d)
        });
        let transfer = match result {
            Ok(t) => t,
            Err(DataPlaneError::Declined { why }) => {
                return Ok(Received::Declined(token_path::declined_put(
                    &why,
                    &cx.t.resource(),
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let stored = match &checksum {
            Some(c) => Some(c.check(&[])?),
            None => None,
        };
        check_content_md5(cx.req, &w.md5())?;
        return Ok(Received::Rdma(stored, transfer));
    }
    if cx.header("content-length").is_none() && cx.header("transfer-encoding").is_none() {
        return Err(S3Error::new(
            411,
            "MissingContentLength",
            "you must provide the Content-Length HTTP header",
        ));
    }
    let mut payload = Payload::new(body, framing, checksum);
    let (_, stored) = payload.pump(&mut |d| w.write(d).map_err(S3Error::from))?;
    check_content_md5(cx.req, &w.md5())?;
    Ok(Received::Body(stored))
}

/// The checks of a conditional PUT (`If-None-Match: *`, `If-Match`),
/// made before any byte is read. (They are checked again by nobody at
/// commit: a writer racing this one may still win in between.)
fn check_put_conditions(cx: &Cx) -> S3Result<()> {
    let failed = || {
        S3Error::new(
            412,
            "PreconditionFailed",
            "at least one of the preconditions you specified did not hold",
        )
    };
    if let Some(v) = cx.header("if-none-match") {
        if v.trim() != "*" {
            return Err(S3Error::not_implemented(
                "If-None-Match on PUT other than *",
            ));
        }
        match cx.store.head_object(cx.bucket(), cx.key()) {
            Ok(_) => return Err(failed()),
            Err(StoreError::NoSuchKey { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(v) = cx.header("if-match") {
        let meta = cx.store.head_object(cx.bucket(), cx.key())?;
        if !etag_listed(v, &meta.etag) {
            return Err(failed());
        }
    }
    Ok(())
}

/// The response to a stored PUT or UploadPart.
pub fn stored_response(
    meta: &ObjectMeta,
    received: Received,
    stored: Option<(String, String)>,
) -> Response {
    let mut r = Response::new(200);
    r.headers.push(("ETag".to_string(), quoted(&meta.etag)));
    if let Some((n, v)) = stored {
        r.headers.push((n, v));
    }
    match received {
        Received::Rdma(_, t) => token_path::answered(r, 200, &t),
        _ => r,
    }
}

/// Receives a PUT's or an UploadPart's bytes into `w` and commits it (with
/// `attrs` and the checksum header, for an object), or answers the
/// declined token request and commits nothing.
pub fn receive_and_commit(
    cx: &mut Cx,
    body: &mut dyn Body,
    mut w: Box<dyn ObjectWriter>,
    attrs: Option<crate::store::ObjectAttrs>,
) -> S3Result<Response> {
    let received = receive(cx, body, &mut *w)?;
    let stored = match &received {
        Received::Declined(_) => None,
        Received::Body(s) | Received::Rdma(s, _) => s.clone(),
    };
    if let Received::Declined(r) = received {
        return Ok(r);
    }
    if let (Some(h), Some(mut attrs)) = (&stored, attrs) {
        attrs.headers.push(h.clone());
        w.set_attrs(attrs);
    }
    let meta = w.commit()?;
    Ok(stored_response(&meta, received, stored))
}

/// `PUT /bucket/key`.
pub fn put(cx: &mut Cx, body: &mut dyn Body) -> S3Result<Response> {
    check_key(cx.key())?;
    let attrs = attrs_from_request(cx.req)?;
    check_put_conditions(cx)?;
    let w = cx.store.put_object(cx.bucket(), cx.key(), attrs.clone())?;
    receive_and_commit(cx, body, w, Some(attrs))
}

/// An object's bytes `[pos, end)` as a response body.
struct ObjectSource {
    reader: Box<dyn ObjectReader>,
    pos: u64,
    end: u64,
}

impl BodySource for ObjectSource {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        if left == 0 {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self
            .reader
            .read_at(self.pos, &mut buf[..want])
            .map_err(io::Error::other)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// `GET` and `HEAD /bucket/key`.
pub fn get(cx: &mut Cx, head_only: bool) -> S3Result<Response> {
    check_key(cx.key())?;
    let token = token_path::request_token(cx.header(TOKEN_HEADER))?;
    if head_only {
        // A HEAD with a token is the handshake: the store readies its QP to
        // the client's and answers with its own (an RC token's
        // 200:<token>), whatever the HEAD itself answers.
        let reply = match (token, cx.data_plane) {
            (Some(t), Some(dp)) => match dp.handshake(&t) {
                Ok(tr) => Some(token_path::reply_value(200, &tr)),
                Err(DataPlaneError::Declined { .. }) => Some("501".to_string()),
                Err(e) => return Err(e.into()),
            },
            (Some(_), None) => Some("501".to_string()),
            _ => None,
        };
        let with_reply = |mut h: Vec<(String, String)>| {
            if let Some(v) = &reply {
                h.push((token_path::REPLY_HEADER.to_string(), v.clone()));
            }
            h
        };
        return match head(cx) {
            Ok(mut r) => {
                r.headers = with_reply(std::mem::take(&mut r.headers));
                Ok(r)
            }
            Err(mut e) => {
                e.headers = with_reply(std::mem::take(&mut e.headers));
                Err(e)
            }
        };
    }
    let (meta, mut reader) = cx.store.open_object(cx.bucket(), cx.key())?;
    let (mut r, offset, len, status) = answer_head(cx, &meta, false)?;
    if let Some(token) = token {
        let outcome = match cx.data_plane {
            None => Err(DataPlaneError::Declined {
                why: "this store has no RDMA data plane".into(),
            }),
            Some(_) if len > token.len => Err(DataPlaneError::Declined {
                why: format!(
                    "the object's {len} bytes do not fit the client's {}-byte buffer",
                    token.len
                ),
            }),
            Some(dp) => {
                dp.write_to_client(&token, len, &mut |at, buf| reader.read_at(offset + at, buf))
            }
        };
        match outcome {
            Ok(t) => return Ok(token_path::answered(r, status, &t)),
            Err(DataPlaneError::Declined { .. }) => {
                r = token_path::declined(r);
            }
            Err(e) => return Err(e.into()),
        }
    }
    r.body = ResponseBody::Stream {
        len,
        source: Box::new(ObjectSource {
            reader,
            pos: offset,
            end: offset + len,
        }),
    };
    Ok(r)
}

/// `HEAD /bucket/key`.
fn head(cx: &mut Cx) -> S3Result<Response> {
    let meta = cx.store.head_object(cx.bucket(), cx.key())?;
    let (mut r, _, len, _) = answer_head(cx, &meta, true)?;
    r.body = ResponseBody::Length(len);
    Ok(r)
}

/// The conditions, the range and the headers of a GET or HEAD of `meta`:
/// the response without its body, and the offset, length and status.
fn answer_head(cx: &Cx, meta: &ObjectMeta, head_only: bool) -> S3Result<(Response, u64, u64, u16)> {
    check_preconditions(cx.req, meta, READ_CONDITIONS)?;
    let (offset, len, status) = match cx.header("range").and_then(parse_range) {
        Some(r) => {
            let (o, l) = resolve_range(r, meta.size)?;
            (o, l, 206)
        }
        None => (0, meta.size, 200),
    };
    let overrides: Vec<(String, String)> = if head_only {
        Vec::new()
    } else {
        cx.t.query
            .iter()
            .filter(|(n, _)| RESPONSE_OVERRIDES.contains(&n.as_str()))
            .cloned()
            .collect()
    };
    let checksums = status == 200
        && cx
            .header("x-amz-checksum-mode")
            .is_some_and(|v| v.eq_ignore_ascii_case("enabled"));
    let mut r = Response::new(status);
    r.headers = object_headers(meta, checksums, &overrides);
    if status == 206 {
        r.headers.push((
            "Content-Range".to_string(),
            format!("bytes {}-{}/{}", offset, offset + len - 1, meta.size),
        ));
    }
    Ok((r, offset, len, status))
}

/// `DELETE /bucket/key`: 204 whether or not it existed.
pub fn delete(cx: &mut Cx) -> S3Result<Response> {
    check_key(cx.key())?;
    cx.store.delete_object(cx.bucket(), cx.key())?;
    Ok(Response::new(204))
}

/// `POST /bucket?delete`.
pub fn delete_objects(cx: &mut Cx, body: &mut dyn Body) -> S3Result<Response> {
    cx.store.bucket(cx.bucket())?;
    let checksum = Checksum::from_request(cx.req)?;
    let framing = cx.framing();
    let raw = Payload::new(body, framing, checksum).read_small(MAX_DELETE_BODY)?;
    let md5: [u8; 16] = Md5::digest(&raw).into();
    check_content_md5(cx.req, &md5)?;
    let text = std::str::from_utf8(&raw)
        .map_err(|_| S3Error::new(400, "MalformedXML", "the body is not UTF-8"))?;
    let doc = Delete::parse(text)?;
    let mut result = DeleteResult::default();
    for o in doc.objects {
        let outcome = check_key(&o.key).and_then(|()| cx.store.delete_object(cx.bucket(), &o.key));
        match outcome {
            Ok(()) if doc.quiet => {}
            Ok(()) => result.deleted.push(DeletedEntry {
                key: o.key,
                version_id: o.version_id,
            }),
            Err(e) => {
                let e = S3Error::from(e);
                result.errors.push(DeleteErrorEntry {
                    key: o.key,
                    version_id: o.version_id,
                    code: e.code.to_string(),
                    message: e.message,
                });
            }
        }
    }
    let mut xml = String::new();
    result.write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `x-amz-copy-source`: `[/]bucket/key[?versionId=null]`, percent-encoded.
pub fn copy_source(cx: &Cx) -> S3Result<(String, String)> {
    let raw = cx.header("x-amz-copy-source").unwrap_or("");
    let (path, query) = raw.split_once('?').unwrap_or((raw, ""));
    if let Some(v) = query.strip_prefix("versionId=") {
        if v != "null" {
            return Err(S3Error::new(
                400,
                "InvalidArgument",
                "this store keeps no versions; versionId must be null",
            ));
        }
    }
    let decoded = percent_decode(path.as_bytes(), false)
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            S3Error::invalid_argument("x-amz-copy-source is not valid percent-encoded UTF-8")
        })?;
    let trimmed = decoded.strip_prefix('/').unwrap_or(&decoded);
    match trimmed.split_once('/') {
        Some((b, k)) if !b.is_empty() && !k.is_empty() => Ok((b.to_string(), k.to_string())),
        _ => Err(S3Error::invalid_argument(
            "x-amz-copy-source must name a bucket and a key",
        )),
    }
}

/// Copies `[offset, offset + len)` of `reader` into `w`.
pub fn copy_range(
    reader: &mut dyn ObjectReader,
    offset: u64,
    len: u64,
    w: &mut dyn ObjectWriter,
) -> S3Result<()> {
    let mut buf = vec![
        0u8;
        COPY_CHUNK
            .min(usize::try_from(len).unwrap_or(COPY_CHUNK))
            .max(1)
    ];
    let mut done = 0u64;
    while done < len {
        let want = buf
            .len()
            .min(usize::try_from(len - done).unwrap_or(usize::MAX));
        let n = reader.read_at(offset + done, &mut buf[..want])?;
        if n == 0 {
            return Err(S3Error::internal("the source object ended early"));
        }
        w.write(&buf[..n])?;
        done += n as u64;
    }
    Ok(())
}

/// `PUT /bucket/key` with `x-amz-copy-source`.
pub fn copy(cx: &mut Cx) -> S3Result<Response> {
    check_key(cx.key())?;
    let (sb, sk) = copy_source(cx)?;
    let (smeta, mut reader) = cx.store.open_object(&sb, &sk)?;
    check_preconditions(cx.req, &smeta, COPY_SOURCE_CONDITIONS)?;
    let replace = match cx.header("x-amz-metadata-directive") {
        None | Some("COPY") => false,
        Some("REPLACE") => true,
        Some(other) => {
            return Err(S3Error::invalid_argument(format!(
                "unknown metadata directive {other:?}"
            )));
        }
    };
    let attrs = if replace {
        attrs_from_request(cx.req)?
    } else {
        smeta.attrs.clone()
    };
    if sb == cx.bucket() && sk == cx.key() && !replace {
        return Err(S3Error::invalid_request(
            "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
        ));
    }
    check_put_conditions(cx)?;
    let mut w = cx.store.put_object(cx.bucket(), cx.key(), attrs)?;
    copy_range(&mut *reader, 0, smeta.size, &mut *w)?;
    let meta = w.commit()?;
    let mut xml = String::new();
    CopyObjectResult {
        last_modified: Timestamp::from_unix_millis(meta.last_modified_ms),
        etag: meta.etag.clone(),
        part: false,
    }
    .write_into(&mut xml);
    let mut r = xml_response(200, xml);
    r.headers.push((
        "x-amz-copy-source-version-id".to_string(),
        "null".to_string(),
    ));
    Ok(r)
}
