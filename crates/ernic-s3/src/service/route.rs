//! Which S3 operation a request is: the bucket and key it names
//! (path-style `/bucket/key` or virtual-hosted-style `bucket.domain/key`),
//! its decoded query parameters, and the operation its method and
//! sub-resources select ([`Op`]). Pure functions of the request head.

use super::error::{S3Error, S3Result};
use crate::http::Request;
use crate::sigv4::canonical::{parse_query, percent_decode};

/// The most query parameters a request may have (SigV4's own bound).
pub const MAX_QUERY_PARAMS: usize = crate::sigv4::MAX_QUERY_PARAMS;

/// A request's target, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The bucket, if the request names one.
    pub bucket: Option<String>,
    /// The key, if the request names one (never empty).
    pub key: Option<String>,
    /// The query parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    /// The path as received (percent-encoded), for SigV4.
    pub raw_path: String,
    /// The query as received, for SigV4.
    pub raw_query: String,
    /// Whether the bucket came from the Host (virtual-hosted-style).
    pub vhost: bool,
}

impl Target {
    /// The value of the first query parameter of that name.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the query has a parameter of that name (with or without a value).
    pub fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(n, _)| n == name)
    }

    /// The resource an error names: `/bucket/key`, `/bucket` or `/`.
    pub fn resource(&self) -> String {
        match (&self.bucket, &self.key) {
            (Some(b), Some(k)) => format!("/{b}/{k}"),
            (Some(b), None) => format!("/{b}"),
            _ => "/".to_string(),
        }
    }
}

fn utf8(bytes: Vec<u8>, what: &str) -> S3Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        S3Error::new(
            400,
            "InvalidURI",
            format!("the {what} is not UTF-8 once decoded"),
        )
    })
}

/// Splits and decodes a request's target. `domains` are the names under
/// which `bucket.<domain>` Host headers mean virtual-hosted-style.
pub fn parse_target(req: &Request, domains: &[String]) -> S3Result<Target> {
    let (raw_path, raw_query) = match req.target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (req.target.as_str(), ""),
    };
    if !raw_path.starts_with('/') {
        return Err(S3Error::new(
            400,
            "InvalidURI",
            "the request target is not a path",
        ));
    }
    let params = parse_query(raw_query, MAX_QUERY_PARAMS)?;
    let mut query = Vec::with_capacity(params.len());
    for p in params {
        query.push((utf8(p.name, "query")?, utf8(p.value, "query")?));
    }
    let path = percent_decode(raw_path.as_bytes(), false)
        .ok_or_else(|| S3Error::new(400, "InvalidURI", "the path is not valid percent-encoding"))?;
    let path = utf8(path, "path")?;
    let host = req.header("host").map(host_name).unwrap_or_default();
    let vhost = domains.iter().find_map(|d| {
        host.strip_suffix(d.as_str())
            .and_then(|b| b.strip_suffix('.'))
            .filter(|b| !b.is_empty())
    });
    let rest = &path[1..];
    let (bucket, key) = match vhost {
        Some(b) => (Some(b.to_string()), rest),
        None => match rest.split_once('/') {
            Some((b, k)) => (Some(b.to_string()), k),
            None if rest.is_empty() => (None, ""),
            None => (Some(rest.to_string()), ""),
        },
    };
    let bucket = bucket.filter(|b| !b.is_empty());
    let key = (!key.is_empty() && bucket.is_some()).then(|| key.to_string());
    Ok(Target {
        bucket,
        key,
        query,
        raw_path: raw_path.to_string(),
        raw_query: raw_query.to_string(),
        vhost: vhost.is_some(),
    })
}

/// The host part of a Host header, lower-case, without a port.
fn host_name(h: &str) -> String {
    let h = h.trim();
    let name = if h.starts_with('[') {
        h.split(']')
            .next()
            .map(|s| format!("{s}]"))
            .unwrap_or_default()
    } else {
        h.rsplit_once(':')
            .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
            .map_or(h, |(n, _)| n)
            .to_string()
    };
    name.to_ascii_lowercase()
}

/// The S3 operations this server implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `GET /`.
    ListBuckets,
    /// `PUT /bucket`.
    CreateBucket,
    /// `HEAD /bucket`.
    HeadBucket,
    /// `DELETE /bucket`.
    DeleteBucket,
    /// `GET /bucket?location`.
    GetBucketLocation,
    /// `GET /bucket?versioning` (always unversioned here).
    GetBucketVersioning,
    /// `GET /bucket?list-type=2`.
    ListObjectsV2,
    /// `GET /bucket`.
    ListObjects,
    /// `GET /bucket?uploads`.
    ListMultipartUploads,
    /// `POST /bucket?delete`.
    DeleteObjects,
    /// `PUT /bucket/key`.
    PutObject,
    /// `PUT /bucket/key` with `x-amz-copy-source`.
    CopyObject,
    /// `GET /bucket/key`.
    GetObject,
    /// `HEAD /bucket/key`.
    HeadObject,
    /// `DELETE /bucket/key`.
    DeleteObject,
    /// `POST /bucket/key?uploads`.
    CreateMultipartUpload,
    /// `PUT /bucket/key?partNumber=N&uploadId=U`.
    UploadPart,
    /// `UploadPart` with `x-amz-copy-source`.
    UploadPartCopy,
    /// `POST /bucket/key?uploadId=U`.
    CompleteMultipartUpload,
    /// `DELETE /bucket/key?uploadId=U`.
    AbortMultipartUpload,
    /// `GET /bucket/key?uploadId=U`.
    ListParts,
    /// `GET /bucket?versions` (every object is its one, `null`, version).
    ListObjectVersions,
    /// `GET /bucket?acl` or `GET /bucket/key?acl`: the owner's full control.
    GetAcl,
    /// `PUT /bucket?acl` or `PUT /bucket/key?acl`: only `private` is kept.
    PutAcl,
}

/// Sub-resources this server does not implement; a request naming one
/// gets `501 NotImplemented` rather than being taken for a plain request.
const UNIMPLEMENTED: &[&str] = &[
    "accelerate",
    "analytics",
    "attributes",
    "cors",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "legal-hold",
    "lifecycle",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "ownershipControls",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "retention",
    "select",
    "tagging",
    "torrent",
    "website",
];

/// The operation a request names.
pub fn op(method: &str, t: &Target, copy_source: bool) -> S3Result<Op> {
    if let Some(sub) = UNIMPLEMENTED.iter().find(|s| t.has(s)) {
        return Err(S3Error::not_implemented(format!("the ?{sub} sub-resource")));
    }
    let not_allowed = || {
        S3Error::new(
            405,
            "MethodNotAllowed",
            format!("{method} is not allowed on this resource"),
        )
    };
    if t.bucket.is_some() && t.has("acl") {
        return match method {
            "GET" => Ok(Op::GetAcl),
            "PUT" => Ok(Op::PutAcl),
            _ => Err(not_allowed()),
        };
    }
    let op = match (&t.bucket, &t.key) {
        (None, _) => match method {
            "GET" => Op::ListBuckets,
            _ => return Err(not_allowed()),
        },
        (Some(_), None) => match method {
            "PUT" if t.has("versioning") => {
                return Err(S3Error::not_implemented("PutBucketVersioning"));
            }
            "PUT" => Op::CreateBucket,
            "HEAD" => Op::HeadBucket,
            "DELETE" => Op::DeleteBucket,
            "GET" if t.has("location") => Op::GetBucketLocation,
            "GET" if t.has("versioning") => Op::GetBucketVersioning,
            "GET" if t.has("uploads") => Op::ListMultipartUploads,
            "GET" if t.has("versions") => Op::ListObjectVersions,
            "GET" if t.param("list-type") == Some("2") => Op::ListObjectsV2,
            "GET" if t.param("list-type").is_some() => {
                return Err(S3Error::invalid_argument("list-type must be 2"));
            }
            "GET" => Op::ListObjects,
            "POST" if t.has("delete") => Op::DeleteObjects,
            _ => return Err(not_allowed()),
        },
        (Some(_), Some(_)) => {
            let upload = t.has("uploadId");
            match method {
                "PUT" if upload && t.has("partNumber") && copy_source => Op::UploadPartCopy,
                "PUT" if upload && t.has("partNumber") => Op::UploadPart,
                "PUT" if upload || t.has("partNumber") => {
                    return Err(S3Error::invalid_argument(
                        "UploadPart needs both partNumber and uploadId",
                    ));
                }
                "PUT" if copy_source => Op::CopyObject,
                "PUT" => Op::PutObject,
                "GET" if upload => Op::ListParts,
                "GET" if t.has("partNumber") => {
                    return Err(S3Error::not_implemented("GetObject by partNumber"));
                }
                "GET" => Op::GetObject,
                "HEAD" => Op::HeadObject,
                "DELETE" if upload => Op::AbortMultipartUpload,
                "DELETE" => Op::DeleteObject,
                "POST" if t.has("uploads") => Op::CreateMultipartUpload,
                "POST" if upload => Op::CompleteMultipartUpload,
                _ => return Err(not_allowed()),
            }
        }
    };
    Ok(op)
}
