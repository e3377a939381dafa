//! The S3 REST API over a [`Store`]: an [`http::Handler`](crate::http::Handler)
//! that authenticates each request (SigV4 when credentials are configured,
//! anonymous only when allowed), finds its operation ([`route`]), runs it
//! against the store, and answers with S3's headers, XML bodies and error
//! documents ([`error`]). A request carrying `x-amz-rdma-token` moves its
//! object through the [`DataPlane`] instead of the HTTP body
//! ([`token_path`]).
//!
//! It holds no state of its own besides the configuration: buckets, objects
//! and uploads are the store's, so many connections share one service.

pub mod bucket;
pub mod error;
pub mod headers;
pub mod multipart;
pub mod object;
pub mod payload;
pub mod route;
pub mod stats;
pub mod token_path;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::http::{Body, Handler, HttpError, Request, Response};
use crate::sigv4::{self, SigV4Error};
use crate::store::Store;
use error::{S3Error, S3Result};
use payload::Framing;
use route::{Op, Target};
pub use stats::ServiceStats;
pub use token_path::{DataPlane, DataPlaneError, Transfer};

/// How the service authenticates and names itself.
#[derive(Debug, Clone)]
pub struct Config {
    /// The region GetBucketLocation reports and `x-amz-bucket-region`
    /// names. Signatures scoped to any region are accepted: a store on a
    /// laptop has no region of its own to insist on.
    pub region: String,
    /// Access key id → secret. Empty: every request is anonymous.
    pub credentials: BTreeMap<String, String>,
    /// Whether unsigned requests are admitted (always so when there are
    /// no credentials). Signed requests are checked whenever credentials
    /// exist.
    pub anonymous: bool,
    /// Domains under which a Host of `bucket.<domain>` is a
    /// virtual-hosted-style request (e.g. `localhost`, `s3.local`).
    pub domains: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            region: "us-east-1".to_string(),
            credentials: BTreeMap::new(),
            anonymous: true,
            domains: vec!["localhost".to_string()],
        }
    }
}

/// Why a configuration is refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No credentials and anonymous access not allowed: nobody could use it.
    #[error(
        "no credentials are configured and anonymous access is off: give an access key and secret, or allow anonymous access"
    )]
    NobodyAdmitted,
}

/// The S3 API over a store.
pub struct S3Service {
    store: Arc<dyn Store>,
    config: Config,
    data_plane: Option<Arc<dyn DataPlane>>,
    requests: AtomicU64,
    id_seed: u64,
    stats: ServiceStats,
}

impl S3Service {
    /// A service over `store`; `data_plane` moves token requests (None:
    /// every token is declined).
    pub fn new(
        store: Arc<dyn Store>,
        config: Config,
        data_plane: Option<Arc<dyn DataPlane>>,
    ) -> Result<S3Service, ConfigError> {
        if config.credentials.is_empty() && !config.anonymous {
            return Err(ConfigError::NobodyAdmitted);
        }
        let id_seed = {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        };
        Ok(S3Service {
            store,
            config,
            data_plane,
            requests: AtomicU64::new(0),
            id_seed,
            stats: ServiceStats::default(),
        })
    }

    /// The store it serves.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// What it counted (requests, errors, bytes).
    pub fn stats(&self) -> &ServiceStats {
        &self.stats
    }

    /// Its counters as stats-file groups (see [`ServiceStats::groups`]).
    pub fn stats_groups(&self) -> Vec<ernic_ops::Group> {
        self.stats.groups()
    }

    fn request_id(&self) -> String {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        format!(
            "{:016X}",
            n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.id_seed
        )
    }

    /// Checks the request's signature and says how to read its body.
    fn authenticate(&self, req: &Request, t: &Target) -> S3Result<Framing> {
        if self.config.credentials.is_empty() {
            return Framing::unverified(req);
        }
        let headers: Vec<(&str, &str)> = req
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        let sreq = sigv4::Request {
            method: &req.method,
            raw_path: &t.raw_path,
            raw_query: &t.raw_query,
            headers: &headers,
        };
        let now = crate::store::now_ms().div_euclid(1000).max(0) as u64;
        let v2 = crate::sigv2::Request {
            method: &req.method,
            raw_path: &t.raw_path,
            raw_query: &t.raw_query,
            vhost_bucket: t.bucket.as_deref().filter(|_| t.vhost),
            headers: &headers,
        };
        if crate::sigv2::is_v2(&v2) {
            crate::sigv2::verify(&v2, &self.config.credentials, now)?;
            return Framing::unverified(req);
        }
        match sigv4::verify(&sreq, &self.config.credentials, now) {
            Ok(v) => Ok(Framing::verified(v.payload)),
            Err(SigV4Error::MissingAuthentication) if self.config.anonymous => {
                Framing::unverified(req)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn dispatch(
        &self,
        req: &Request,
        t: &Target,
        body: &mut dyn Body,
        routed: &mut Option<Op>,
    ) -> S3Result<Response> {
        let framing = self.authenticate(req, t)?;
        let op = route::op(&req.method, t, req.header("x-amz-copy-source").is_some())?;
        *routed = Some(op);
        let counting = self
            .data_plane
            .as_deref()
            .map(|inner| stats::CountingPlane {
                inner,
                stats: &self.stats,
            });
        // Object bytes in: the bodies of the operations that carry one.
        let mut counted = stats::CountingBody {
            inner: body,
            stats: &self.stats,
        };
        let body: &mut dyn Body = if matches!(op, Op::PutObject | Op::UploadPart) {
            &mut counted
        } else {
            counted.inner
        };
        let mut cx = Cx {
            store: &*self.store,
            config: &self.config,
            data_plane: counting.as_ref().map(|c| c as &dyn DataPlane),
            req,
            t,
            framing: Some(framing),
        };
        match op {
            Op::ListBuckets => bucket::list_buckets(&mut cx),
            Op::CreateBucket => bucket::create(&mut cx, body),
            Op::HeadBucket => bucket::head(&mut cx),
            Op::DeleteBucket => bucket::delete(&mut cx),
            Op::GetBucketLocation => bucket::location(&mut cx),
            Op::GetBucketVersioning => bucket::versioning(&mut cx),
            Op::ListObjects | Op::ListObjectsV2 => {
                bucket::list_objects(&mut cx, op == Op::ListObjectsV2)
            }
            Op::ListMultipartUploads => multipart::list_uploads(&mut cx),
            Op::DeleteObjects => object::delete_objects(&mut cx, body),
            Op::PutObject => object::put(&mut cx, body),
            Op::CopyObject => object::copy(&mut cx),
            Op::GetObject => object::get(&mut cx, false),
            Op::HeadObject => object::get(&mut cx, true),
            Op::DeleteObject => object::delete(&mut cx),
            Op::CreateMultipartUpload => multipart::create(&mut cx),
            Op::UploadPart => multipart::upload_part(&mut cx, body),
            Op::UploadPartCopy => multipart::upload_part_copy(&mut cx),
            Op::CompleteMultipartUpload => multipart::complete(&mut cx, body),
            Op::AbortMultipartUpload => multipart::abort(&mut cx),
            Op::ListParts => multipart::list_parts(&mut cx),
            Op::ListObjectVersions => bucket::list_versions(&mut cx),
            Op::GetAcl => bucket::get_acl(&mut cx),
            Op::PutAcl => bucket::put_acl(&mut cx, body),
        }
    }

    fn finish(
        &self,
        op: Option<Op>,
        r: S3Result<Response>,
        resource: &str,
        id: &str,
        head: bool,
    ) -> Response {
        let mut resp = match r {
            Ok(r) => r,
            Err(e) => {
                self.stats.error(e.code);
                e.into_response(resource, id, head)
            }
        };
        self.stats.request(op, resp.status);
        // Object bytes out: the bodies of successful GETs of objects.
        if op == Some(Op::GetObject) && (200..300).contains(&resp.status) {
            match &resp.body {
                crate::http::ResponseBody::Bytes(b) => self.stats.sent_http(b.len() as u64),
                crate::http::ResponseBody::Stream { len, .. } => self.stats.sent_http(*len),
                _ => {}
            }
        }
        resp.headers
            .push(("x-amz-request-id".to_string(), id.to_string()));
        resp.headers
            .push(("Server".to_string(), "ernic".to_string()));
        resp
    }
}

impl Handler for S3Service {
    fn handle(&self, req: &Request, body: &mut dyn Body) -> Response {
        let id = self.request_id();
        let head = req.method == "HEAD";
        match route::parse_target(req, &self.config.domains) {
            Ok(t) => {
                let mut op = None;
                let r = self.dispatch(req, &t, body, &mut op);
                self.finish(op, r, &t.resource(), &id, head)
            }
            Err(e) => self.finish(None, Err(e), "/", &id, head),
        }
    }

    fn error(&self, e: &HttpError) -> Response {
        let id = self.request_id();
        self.finish(None, Err(S3Error::from(e)), "/", &id, false)
    }
}

/// One request being served: what every operation needs.
pub struct Cx<'a> {
    /// The store.
    pub store: &'a dyn Store,
    /// The configuration.
    pub config: &'a Config,
    /// The RDMA data plane, if any.
    pub data_plane: Option<&'a dyn DataPlane>,
    /// The request's head.
    pub req: &'a Request,
    /// Its target.
    pub t: &'a Target,
    /// How its body is framed (taken by the one reader of the body).
    pub framing: Option<Framing>,
}

impl Cx<'_> {
    /// The bucket (routing put one in every bucket and object operation).
    pub fn bucket(&self) -> &str {
        self.t.bucket.as_deref().unwrap_or("")
    }

    /// The key (routing put one in every object operation).
    pub fn key(&self) -> &str {
        self.t.key.as_deref().unwrap_or("")
    }

    /// The body's framing, once.
    pub fn framing(&mut self) -> Framing {
        self.framing.take().unwrap_or(Framing::Plain)
    }

    /// A header of the request.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.req.header(name)
    }
}

/// A 200 with an XML body.
pub fn xml_response(status: u16, xml: String) -> Response {
    let mut r = Response::new(status);
    r.headers
        .push(("Content-Type".to_string(), "application/xml".to_string()));
    r.body = crate::http::ResponseBody::Bytes(xml.into_bytes());
    r
}

/// An integer query parameter in `range`, or the InvalidArgument S3 answers.
pub fn int_param(t: &Target, name: &str, default: u64, max: u64) -> S3Result<u64> {
    match t.param(name) {
        None => Ok(default),
        Some(v) => v.parse::<u64>().map(|n| n.min(max)).map_err(|_| {
            S3Error::invalid_argument(format!("{name} {v:?} is not a non-negative integer"))
        }),
    }
}
