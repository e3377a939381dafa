//! The bucket operations: ListBuckets, CreateBucket, HeadBucket,
//! DeleteBucket, GetBucketLocation, GetBucketVersioning, and the two object
//! listings (ListObjects and ListObjectsV2) with prefix, delimiter,
//! max-keys, markers, continuation tokens and `encoding-type=url`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;

use super::error::{S3Error, S3Result};
use super::headers::storage_class;
use super::payload::Payload;
use super::{Cx, int_param, xml_response};
use crate::http::{Body, Response};
use crate::sigv4::canonical::uri_encode_into;
use crate::store::{ListFrom, MAX_KEY_LEN};
use crate::xml::write::{
    BucketEntry, ListAllMyBucketsResult, ListBucketResult, ListVersion, LocationConstraint,
    ObjectEntry, Owner, Timestamp,
};

/// The most keys one listing returns (S3's limit for `max-keys`).
pub const MAX_KEYS: u64 = 1000;
/// The largest CreateBucketConfiguration body read.
const MAX_CONFIG_BODY: usize = 64 * 1024;

/// The one owner of everything in this store.
pub fn owner() -> Owner {
    Owner {
        id: "ernic".to_string(),
        display_name: Some("ernic".to_string()),
    }
}

/// `GET /`.
pub fn list_buckets(cx: &mut Cx) -> S3Result<Response> {
    let buckets = cx
        .store
        .list_buckets()?
        .into_iter()
        .map(|b| BucketEntry {
            name: b.name,
            creation_date: Timestamp::from_unix_millis(b.created_ms),
        })
        .collect();
    let mut xml = String::new();
    ListAllMyBucketsResult {
        owner: owner(),
        buckets,
    }
    .write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `PUT /bucket`: the body (a CreateBucketConfiguration) is read and its
/// location accepted whatever it names, since there is one store.
pub fn create(cx: &mut Cx, body: &mut dyn Body) -> S3Result<Response> {
    let framing = cx.framing();
    Payload::new(body, framing, None).read_small(MAX_CONFIG_BODY)?;
    cx.store.create_bucket(cx.bucket())?;
    let mut r = Response::new(200);
    r.headers
        .push(("Location".to_string(), format!("/{}", cx.bucket())));
    Ok(r)
}

/// `HEAD /bucket`.
pub fn head(cx: &mut Cx) -> S3Result<Response> {
    cx.store.bucket(cx.bucket())?;
    let mut r = Response::new(200);
    r.headers
        .push(("x-amz-bucket-region".to_string(), cx.config.region.clone()));
    Ok(r)
}

/// `DELETE /bucket`: 204, or `BucketNotEmpty`.
pub fn delete(cx: &mut Cx) -> S3Result<Response> {
    cx.store.delete_bucket(cx.bucket())?;
    Ok(Response::new(204))
}

/// `GET /bucket?location`.
pub fn location(cx: &mut Cx) -> S3Result<Response> {
    cx.store.bucket(cx.bucket())?;
    let region = (cx.config.region != "us-east-1").then(|| cx.config.region.clone());
    let mut xml = String::new();
    LocationConstraint(region).write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `GET /bucket?versioning`: never enabled here, which S3 writes as an
/// empty configuration.
pub fn versioning(cx: &mut Cx) -> S3Result<Response> {
    cx.store.bucket(cx.bucket())?;
    let xml = format!(
        "{}<VersioningConfiguration xmlns=\"{}\"/>",
        crate::xml::XML_DECL,
        crate::xml::S3_NS
    );
    Ok(xml_response(200, xml))
}

/// Where a listing resumes, as its marker or token says.
enum Resume {
    Start,
    After(String),
    AfterPrefix(String),
}

/// A V2 continuation token: the last key (`k…`) or common prefix (`p…`)
/// of the page before, in URL-safe base64.
fn encode_token(last: &Item) -> String {
    let (tag, s) = match last {
        Item::Key(k, _) => ('k', k.as_str()),
        Item::Prefix(p) => ('p', p.as_str()),
    };
    B64URL.encode(format!("{tag}{s}"))
}

fn decode_token(t: &str) -> S3Result<Resume> {
    let bad = || S3Error::invalid_argument("the continuation token provided is incorrect");
    if t.len() > 4 * MAX_KEY_LEN {
        return Err(bad());
    }
    let raw = B64URL.decode(t).map_err(|_| bad())?;
    let s = String::from_utf8(raw).map_err(|_| bad())?;
    let mut chars = s.chars();
    match chars.next() {
        Some('k') => Ok(Resume::After(chars.as_str().to_string())),
        Some('p') => Ok(Resume::AfterPrefix(chars.as_str().to_string())),
        _ => Err(bad()),
    }
}

enum Item {
    Key(String, crate::store::ObjectMeta),
    Prefix(String),
}

/// One page of a listing: its items, and whether more follow.
fn page(
    cx: &Cx,
    prefix: &str,
    delimiter: Option<&str>,
    resume: Resume,
    max_keys: u64,
) -> S3Result<(Vec<Item>, bool)> {
    let mut items: Vec<Item> = Vec::new();
    if max_keys == 0 {
        return Ok((items, false));
    }
    let mut from = resume;
    let batch = (max_keys as usize).clamp(1, MAX_KEYS as usize) + 1;
    loop {
        let lf = match &from {
            Resume::Start => ListFrom::Start,
            Resume::After(k) => ListFrom::After(k),
            Resume::AfterPrefix(p) => ListFrom::AfterPrefix(p),
        };
        let got = cx.store.list_objects(cx.bucket(), prefix, lf, batch)?;
        if got.is_empty() {
            return Ok((items, false));
        }
        let n = got.len();
        let mut next = None;
        for (key, meta) in got {
            let rolled = delimiter.and_then(|d| {
                key[prefix.len()..]
                    .find(d)
                    .map(|i| key[..prefix.len() + i + d.len()].to_string())
            });
            if items.len() as u64 == max_keys {
                return Ok((items, true));
            }
            match rolled {
                Some(cp) => {
                    items.push(Item::Prefix(cp.clone()));
                    next = Some(Resume::AfterPrefix(cp));
                    break;
                }
                None => {
                    next = Some(Resume::After(key.clone()));
                    items.push(Item::Key(key, meta));
                }
            }
        }
        match next {
            Some(Resume::AfterPrefix(p)) => from = Resume::AfterPrefix(p),
            Some(n2) if n == batch => from = n2,
            _ => return Ok((items, false)),
        }
    }
}

fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    uri_encode_into(&mut out, s.as_bytes(), true);
    out
}

/// `GET /bucket` (V1) and `GET /bucket?list-type=2` (V2).
pub fn list_objects(cx: &mut Cx, v2: bool) -> S3Result<Response> {
    cx.store.bucket(cx.bucket())?;
    let t = cx.t;
    let prefix = t.param("prefix").unwrap_or("").to_string();
    let delimiter = t
        .param("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let max_keys = int_param(t, "max-keys", MAX_KEYS, MAX_KEYS)?;
    let url = match t.param("encoding-type") {
        None => false,
        Some("url") => true,
        Some(other) => {
            return Err(S3Error::invalid_argument(format!(
                "invalid encoding-type {other:?}; only url is"
            )));
        }
    };
    let start_after = t.param("start-after").filter(|s| !s.is_empty());
    let marker = t.param("marker").unwrap_or("");
    let token = t.param("continuation-token");
    let after_marker = |m: &str| match &delimiter {
        Some(d) if m.ends_with(d.as_str()) && m.starts_with(&prefix) => {
            Resume::AfterPrefix(m.to_string())
        }
        _ => Resume::After(m.to_string()),
    };
    let resume = if v2 {
        match (token, start_after) {
            (Some(tok), _) => decode_token(tok)?,
            (None, Some(s)) => after_marker(s),
            (None, None) => Resume::Start,
        }
    } else if marker.is_empty() {
        Resume::Start
    } else {
        after_marker(marker)
    };
    let (items, truncated) = page(cx, &prefix, delimiter.as_deref(), resume, max_keys)?;
    let enc = |s: &str| if url { url_encode(s) } else { s.to_string() };
    let next = if truncated { items.last() } else { None };
    let fetch_owner = !v2 || t.param("fetch-owner") == Some("true");
    let version = if v2 {
        ListVersion::V2 {
            key_count: items.len() as u64,
            continuation_token: token.map(str::to_string),
            next_continuation_token: next.map(encode_token),
            start_after: start_after.map(enc),
        }
    } else {
        ListVersion::V1 {
            marker: enc(marker),
            next_marker: next.filter(|_| delimiter.is_some()).map(|i| match i {
                Item::Key(k, _) => enc(k),
                Item::Prefix(p) => enc(p),
            }),
        }
    };
    let mut contents = Vec::new();
    let mut common_prefixes = Vec::new();
    for item in items {
        match item {
            Item::Key(key, meta) => contents.push(ObjectEntry {
                key: enc(&key),
                last_modified: Timestamp::from_unix_millis(meta.last_modified_ms),
                etag: meta.etag.clone(),
                size: meta.size,
                storage_class: storage_class(&meta),
                owner: fetch_owner.then(owner),
            }),
            Item::Prefix(p) => common_prefixes.push(enc(&p)),
        }
    }
    let doc = ListBucketResult {
        name: cx.bucket().to_string(),
        prefix: enc(&prefix),
        delimiter: delimiter.as_deref().map(enc),
        max_keys,
        is_truncated: truncated,
        encoding_type: url.then(|| "url".to_string()),
        version,
        contents,
        common_prefixes,
    };
    let mut xml = String::new();
    doc.write_into(&mut xml);
    Ok(xml_response(200, xml))
}

/// `GET /bucket?versions`: this store keeps no versions, so each object is
/// listed as its one version, `null`, the latest; markers are keys
/// (`key-marker`; `version-id-marker` may only be `null`).
pub fn list_versions(cx: &mut Cx) -> S3Result<Response> {
    use crate::xml::{S3_NS, XML_DECL, escape_into};
    use std::fmt::Write as _;
    cx.store.bucket(cx.bucket())?;
    let t = cx.t;
    let prefix = t.param("prefix").unwrap_or("").to_string();
    let delimiter = t
        .param("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let max_keys = int_param(t, "max-keys", MAX_KEYS, MAX_KEYS)?;
    let key_marker = t.param("key-marker").unwrap_or("");
    if t.param("version-id-marker")
        .is_some_and(|v| v != "null" && !v.is_empty())
    {
        return Err(S3Error::invalid_argument(
            "this store keeps no versions; version-id-marker must be null",
        ));
    }
    let resume = match &delimiter {
        _ if key_marker.is_empty() => Resume::Start,
        Some(d) if key_marker.ends_with(d.as_str()) => Resume::AfterPrefix(key_marker.to_string()),
        _ => Resume::After(key_marker.to_string()),
    };
    let (items, truncated) = page(cx, &prefix, delimiter.as_deref(), resume, max_keys)?;
    let mut x = String::new();
    let _ = write!(x, "{XML_DECL}<ListVersionsResult xmlns=\"{S3_NS}\"><Name>");
    escape_into(&mut x, cx.bucket());
    x.push_str("</Name><Prefix>");
    escape_into(&mut x, &prefix);
    x.push_str("</Prefix><KeyMarker>");
    escape_into(&mut x, key_marker);
    x.push_str("</KeyMarker><VersionIdMarker></VersionIdMarker>");
    if let (true, Some(last)) = (truncated, items.last()) {
        x.push_str("<NextKeyMarker>");
        escape_into(
            &mut x,
            match last {
                Item::Key(k, _) => k,
                Item::Prefix(p) => p,
            },
        );
        x.push_str("</NextKeyMarker><NextVersionIdMarker>null</NextVersionIdMarker>");
    }
    let _ = write!(x, "<MaxKeys>{max_keys}</MaxKeys>");
    if let Some(d) = &delimiter {
        x.push_str("<Delimiter>");
        escape_into(&mut x, d);
        x.push_str("</Delimiter>");
    }
    let _ = write!(x, "<IsTruncated>{truncated}</IsTruncated>");
    for item in &items {
        match item {
            Item::Key(k, m) => {
                x.push_str("<Version><Key>");
                escape_into(&mut x, k);
                let _ = write!(
                    x,
                    "</Key><VersionId>null</VersionId><IsLatest>true</IsLatest><LastModified>{}</LastModified><ETag>&quot;{}&quot;</ETag><Size>{}</Size><Owner><ID>ernic</ID><DisplayName>ernic</DisplayName></Owner><StorageClass>",
                    Timestamp::from_unix_millis(m.last_modified_ms),
                    m.etag,
                    m.size
                );
                escape_into(&mut x, &storage_class(m));
                x.push_str("</StorageClass></Version>");
            }
            Item::Prefix(p) => {
                x.push_str("<CommonPrefixes><Prefix>");
                escape_into(&mut x, p);
                x.push_str("</Prefix></CommonPrefixes>");
            }
        }
    }
    x.push_str("</ListVersionsResult>");
    Ok(xml_response(200, x))
}

/// The one ACL this store has: its owner's full control.
fn owner_acl() -> String {
    format!(
        "{}<AccessControlPolicy xmlns=\"{}\"><Owner><ID>ernic</ID><DisplayName>ernic</DisplayName></Owner><AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\"><ID>ernic</ID><DisplayName>ernic</DisplayName></Grantee><Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>",
        crate::xml::XML_DECL,
        crate::xml::S3_NS
    )
}

/// Checks that the bucket (and the key, if named) exist.
fn resource_exists(cx: &Cx) -> S3Result<()> {
    cx.store.bucket(cx.bucket())?;
    if cx.t.key.is_some() {
        cx.store.head_object(cx.bucket(), cx.key())?;
    }
    Ok(())
}

/// `GET ?acl` on a bucket or an object: the owner's full control (this
/// store has one owner and no grants).
pub fn get_acl(cx: &mut Cx) -> S3Result<Response> {
    resource_exists(cx)?;
    Ok(xml_response(200, owner_acl()))
}

/// `PUT ?acl`: the canned `private` (by header, or a body granting the
/// owner full control and nothing else) is what this store has, and is
/// accepted; any other grant is refused as not implemented.
pub fn put_acl(cx: &mut Cx, body: &mut dyn Body) -> S3Result<Response> {
    resource_exists(cx)?;
    let framing = cx.framing();
    let raw = Payload::new(body, framing, None).read_small(MAX_CONFIG_BODY)?;
    let canned = cx.header("x-amz-acl");
    let grants = cx
        .req
        .headers
        .iter()
        .any(|h| h.name.starts_with("x-amz-grant-"));
    let text = String::from_utf8_lossy(&raw);
    let body_ok = text.trim().is_empty()
        || (text.matches("<Grant>").count() == 1
            && text.contains("<Permission>FULL_CONTROL</Permission>")
            && text.contains("<ID>ernic</ID>"));
    match canned {
        Some("private") | None if !grants && body_ok => Ok(Response::new(200)),
        _ => Err(S3Error::not_implemented("an ACL other than private")),
    }
}
