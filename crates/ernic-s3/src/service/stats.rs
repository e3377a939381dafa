//! What the S3 service counted: requests by operation and status class,
//! errors by S3 code, and object bytes by way (the HTTP body, or an RDMA
//! token's transfer): received in PutObject and UploadPart bodies as the
//! client framed them, sent in successful GetObject bodies. Relaxed atomics in fixed arrays, bumped once per
//! request by the connection threads that serve it and read by a stats
//! writer ([`ServiceStats::groups`]): no lock and no allocation on the
//! request path, and every count from outside lands in a bounded slot (an
//! operation the router did not find is `unrouted`, a code not in
//! [`CODES`] is `other`).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ernic_ops::Group;

use super::route::Op;
use super::token_path::{DataPlane, DataPlaneError, Fill, Sink, Transfer};
use crate::http::Body;
use crate::token::RdmaToken;

/// Every operation, in the order of [`Op`]'s variants (`op as usize`).
pub const OPS: [Op; 24] = [
    Op::ListBuckets,
    Op::CreateBucket,
    Op::HeadBucket,
    Op::DeleteBucket,
    Op::GetBucketLocation,
    Op::GetBucketVersioning,
    Op::ListObjectsV2,
    Op::ListObjects,
    Op::ListMultipartUploads,
    Op::DeleteObjects,
    Op::PutObject,
    Op::CopyObject,
    Op::GetObject,
    Op::HeadObject,
    Op::DeleteObject,
    Op::CreateMultipartUpload,
    Op::UploadPart,
    Op::UploadPartCopy,
    Op::CompleteMultipartUpload,
    Op::AbortMultipartUpload,
    Op::ListParts,
    Op::ListObjectVersions,
    Op::GetAcl,
    Op::PutAcl,
];

/// The slot of requests that never reached an operation (a bad target,
/// an unknown sub-resource, a refused signature before routing, an HTTP
/// error).
const UNROUTED: usize = OPS.len();

/// The status classes requests are counted under.
pub const CLASSES: [&str; 4] = ["2xx", "3xx", "4xx", "5xx"];

/// The S3 error codes this service answers with; any other is `other`.
pub const CODES: [&str; 40] = [
    "AccessDenied",
    "AuthorizationHeaderMalformed",
    "BadDigest",
    "BucketAlreadyOwnedByYou",
    "BucketNotEmpty",
    "EntityTooLarge",
    "EntityTooSmall",
    "HttpVersionNotSupported",
    "IncompleteBody",
    "InsufficientStorage",
    "InternalError",
    "InvalidAccessKeyId",
    "InvalidArgument",
    "InvalidBucketName",
    "InvalidDigest",
    "InvalidPart",
    "InvalidPartOrder",
    "InvalidRange",
    "InvalidRequest",
    "InvalidStorageClass",
    "InvalidURI",
    "KeyTooLongError",
    "MalformedXML",
    "MaxMessageLengthExceeded",
    "MetadataTooLarge",
    "MethodNotAllowed",
    "MissingContentLength",
    "MissingSecurityHeader",
    "NoSuchBucket",
    "NoSuchKey",
    "NoSuchUpload",
    "NotImplemented",
    "NotModified",
    "PreconditionFailed",
    "RDMANotSupported",
    "RequestHeaderSectionTooLarge",
    "RequestTimeTooSkewed",
    "SignatureDoesNotMatch",
    "Conflict",
    "Unknown",
];

/// The ways object bytes move: `http` (a request's or a response's body)
/// and `token` (an RDMA transfer named by `x-amz-rdma-token`).
pub const WAYS: [&str; 2] = ["http", "token"];
const HTTP: usize = 0;
const TOKEN: usize = 1;

/// The service's counters.
#[derive(Debug)]
pub struct ServiceStats {
    requests: [[AtomicU64; CLASSES.len()]; OPS.len() + 1],
    errors: [AtomicU64; CODES.len() + 1],
    received: [AtomicU64; WAYS.len()],
    sent: [AtomicU64; WAYS.len()],
}

impl Default for ServiceStats {
    fn default() -> ServiceStats {
        ServiceStats {
            requests: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            errors: std::array::from_fn(|_| AtomicU64::new(0)),
            received: std::array::from_fn(|_| AtomicU64::new(0)),
            sent: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

fn class(status: u16) -> usize {
    match status {
        0..=299 => 0,
        300..=399 => 1,
        400..=499 => 2,
        _ => 3,
    }
}

fn op_name(i: usize) -> String {
    OPS.get(i)
        .map_or_else(|| "unrouted".to_string(), |op| format!("{op:?}"))
}

impl ServiceStats {
    /// Counts one answered request: its operation (None: unrouted) and
    /// status.
    pub fn request(&self, op: Option<Op>, status: u16) {
        let i = op.map_or(UNROUTED, |op| op as usize).min(UNROUTED);
        self.requests[i][class(status)].fetch_add(1, Relaxed);
    }

    /// Counts one error answer by its S3 code.
    pub fn error(&self, code: &str) {
        let i = CODES.iter().position(|c| *c == code).unwrap_or(CODES.len());
        self.errors[i].fetch_add(1, Relaxed);
    }

    /// Counts `n` object bytes sent in a response's body.
    pub fn sent_http(&self, n: u64) {
        self.sent[HTTP].fetch_add(n, Relaxed);
    }

    /// Requests of `op` answered in status class `class` ("2xx", …).
    pub fn requests(&self, op: Op, class: &str) -> u64 {
        let c = CLASSES.iter().position(|x| *x == class).unwrap_or(0);
        self.requests[(op as usize).min(UNROUTED)][c].load(Relaxed)
    }

    /// The counts as stats-file groups: `s3_request{operation,status}`
    /// `requests`, `s3_error{code}` `errors`, and `s3{body}`
    /// `received_bytes`/`sent_bytes`; slots still at zero are left out,
    /// except the bytes.
    pub fn groups(&self) -> Vec<Group> {
        let mut out = Vec::new();
        for (i, row) in self.requests.iter().enumerate() {
            for (c, n) in row.iter().enumerate() {
                let n = n.load(Relaxed);
                if n > 0 {
                    out.push(
                        Group::new("s3_request")
                            .label("operation", op_name(i))
                            .label("status", CLASSES[c])
                            .counter("requests", n),
                    );
                }
            }
        }
        for (i, n) in self.errors.iter().enumerate() {
            let n = n.load(Relaxed);
            if n > 0 {
                let code = CODES.get(i).copied().unwrap_or("other");
                out.push(
                    Group::new("s3_error")
                        .label("code", code)
                        .counter("errors", n),
                );
            }
        }
        for (w, way) in WAYS.iter().enumerate() {
            out.push(Group::new("s3").label("body", way).counters([
                ("received_bytes", self.received[w].load(Relaxed)),
                ("sent_bytes", self.sent[w].load(Relaxed)),
            ]));
        }
        out
    }
}

/// A request body that counts what is read from it.
pub(crate) struct CountingBody<'a> {
    pub inner: &'a mut dyn Body,
    pub stats: &'a ServiceStats,
}

impl io::Read for CountingBody<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.stats.received[HTTP].fetch_add(n as u64, Relaxed);
        Ok(n)
    }
}

impl Body for CountingBody<'_> {
    fn declared_len(&self) -> Option<u64> {
        self.inner.declared_len()
    }
    fn expects_continue(&self) -> bool {
        self.inner.expects_continue()
    }
}

/// A data plane that counts the bytes its transfers moved.
pub(crate) struct CountingPlane<'a> {
    pub inner: &'a dyn DataPlane,
    pub stats: &'a ServiceStats,
}

impl DataPlane for CountingPlane<'_> {
    fn handshake(&self, token: &RdmaToken) -> Result<Transfer, DataPlaneError> {
        self.inner.handshake(token)
    }

    fn write_to_client(
        &self,
        token: &RdmaToken,
        len: u64,
        fill: &mut Fill<'_>,
    ) -> Result<Transfer, DataPlaneError> {
        let t = self.inner.write_to_client(token, len, fill)?;
        self.stats.sent[TOKEN].fetch_add(len, Relaxed);
        Ok(t)
    }

    fn read_from_client(
        &self,
        token: &RdmaToken,
        len: u64,
        sink: &mut Sink<'_>,
    ) -> Result<Transfer, DataPlaneError> {
        let t = self.inner.read_from_client(token, len, sink)?;
        self.stats.received[TOKEN].fetch_add(len, Relaxed);
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_its_own_slot_in_order() {
        for (i, op) in OPS.iter().enumerate() {
            assert_eq!(*op as usize, i, "{op:?}");
        }
    }

    #[test]
    fn counts_land_in_bounded_slots() {
        let s = ServiceStats::default();
        s.request(Some(Op::PutObject), 200);
        s.request(Some(Op::GetObject), 404);
        s.request(None, 400);
        s.error("NoSuchKey");
        s.error("SomethingNew");
        let d = ernic_ops::StatsDoc {
            groups: s.groups(),
            ..Default::default()
        };
        let req = |op, st| {
            d.counter(
                "s3_request",
                &[("operation", op), ("status", st)],
                "requests",
            )
        };
        assert_eq!(req("PutObject", "2xx"), Some(1));
        assert_eq!(req("GetObject", "4xx"), Some(1));
        assert_eq!(req("unrouted", "4xx"), Some(1));
        assert_eq!(
            d.counter("s3_error", &[("code", "NoSuchKey")], "errors"),
            Some(1)
        );
        assert_eq!(
            d.counter("s3_error", &[("code", "other")], "errors"),
            Some(1)
        );
        assert_eq!(
            d.counter("s3", &[("body", "http")], "received_bytes"),
            Some(0)
        );
    }
}
