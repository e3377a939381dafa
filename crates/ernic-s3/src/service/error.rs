//! The one error type of the S3 layer: a status, an S3 `Code`, a message and
//! the extra elements S3 puts in its `<Error>` body. Every failure of a
//! lower layer (the store, SigV4, the chunk decoder, the XML readers, the
//! token parser, the HTTP framing) converts into it in exactly one place,
//! here, and it becomes a response in one place, [`S3Error::into_response`].

use crate::http::{HttpError, Response, ResponseBody};
use crate::sigv4::SigV4Error;
use crate::sigv4::chunked::ChunkError;
use crate::store::StoreError;
use crate::token::TokenError;
use crate::xml::XmlError;
use crate::xml::write::ErrorDoc;

/// A failed S3 request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    /// The HTTP status.
    pub status: u16,
    /// S3's error code (`NoSuchKey`, `SignatureDoesNotMatch`, ...).
    pub code: &'static str,
    /// The message for a person.
    pub message: String,
    /// Elements after `Message` (`Key`, `BucketName`, `UploadId`, ...).
    pub extra: Vec<(&'static str, String)>,
    /// Headers to send with the error (`Content-Range` of a 416, ...).
    pub headers: Vec<(String, String)>,
}

impl S3Error {
    /// An error with a status, a code and a message.
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> S3Error {
        S3Error {
            status,
            code,
            message: message.into(),
            extra: Vec::new(),
            headers: Vec::new(),
        }
    }

    /// Adds an element after `Message`.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> S3Error {
        self.extra.push((name, value.into()));
        self
    }

    /// `400 InvalidArgument`.
    pub fn invalid_argument(message: impl Into<String>) -> S3Error {
        S3Error::new(400, "InvalidArgument", message)
    }

    /// `400 InvalidRequest`.
    pub fn invalid_request(message: impl Into<String>) -> S3Error {
        S3Error::new(400, "InvalidRequest", message)
    }

    /// `501 NotImplemented`.
    pub fn not_implemented(what: impl Into<String>) -> S3Error {
        S3Error::new(
            501,
            "NotImplemented",
            format!("{} is not implemented by this server", what.into()),
        )
    }

    /// `500 InternalError`.
    pub fn internal(message: impl Into<String>) -> S3Error {
        S3Error::new(500, "InternalError", message)
    }

    /// The response: the XML `<Error>` document, except for HEAD requests
    /// and 304s, which have no body.
    pub fn into_response(self, resource: &str, request_id: &str, head_only: bool) -> Response {
        let mut r = Response::new(self.status);
        r.headers = self.headers;
        if head_only || self.status == 304 {
            return r;
        }
        let doc = ErrorDoc {
            code: self.code.to_string(),
            message: self.message,
            resource: Some(resource.to_string()),
            request_id: Some(request_id.to_string()),
            extra: self.extra,
        };
        let mut body = String::new();
        doc.write_into(&mut body);
        r.headers
            .push(("Content-Type".into(), "application/xml".into()));
        r.body = ResponseBody::Bytes(body.into_bytes());
        r
    }
}

impl From<StoreError> for S3Error {
    fn from(e: StoreError) -> S3Error {
        let extra = match &e {
            StoreError::NoSuchBucket { name }
            | StoreError::BucketNotEmpty { name }
            | StoreError::BucketAlreadyOwnedByYou { name }
            | StoreError::InvalidBucketName { name, .. } => vec![("BucketName", name.clone())],
            StoreError::NoSuchKey { key } => vec![("Key", key.clone())],
            StoreError::NoSuchUpload { upload_id } => vec![("UploadId", upload_id.clone())],
            StoreError::InvalidPart { number, etag } => {
                vec![("PartNumber", number.to_string()), ("ETag", etag.clone())]
            }
            _ => Vec::new(),
        };
        S3Error {
            status: e.http_status(),
            code: e.s3_code(),
            message: e.to_string(),
            extra,
            headers: Vec::new(),
        }
    }
}

impl From<SigV4Error> for S3Error {
    fn from(e: SigV4Error) -> S3Error {
        S3Error::new(e.http_status(), e.s3_code(), e.to_string())
    }
}

impl From<ChunkError> for S3Error {
    fn from(e: ChunkError) -> S3Error {
        S3Error::new(e.http_status(), e.s3_code(), e.to_string())
    }
}

impl From<XmlError> for S3Error {
    fn from(e: XmlError) -> S3Error {
        S3Error::new(e.http_status(), e.s3_code(), e.to_string())
    }
}

impl From<TokenError> for S3Error {
    fn from(e: TokenError) -> S3Error {
        S3Error::new(e.http_status(), e.s3_code(), e.to_string())
    }
}

impl From<&HttpError> for S3Error {
    fn from(e: &HttpError) -> S3Error {
        let code = match e {
            HttpError::HeadTooLarge { .. } => "RequestHeaderSectionTooLarge",
            HttpError::Version => "HttpVersionNotSupported",
            HttpError::BodyTooLarge { .. } => "EntityTooLarge",
            HttpError::Truncated { .. } => "IncompleteBody",
            HttpError::Malformed { .. } | HttpError::Framing { .. } | HttpError::Chunk { .. } => {
                "BadRequest"
            }
        };
        S3Error::new(e.status(), code, e.to_string())
    }
}

/// What a request's handling gives: the response, or the error it becomes.
pub type S3Result<T> = Result<T, S3Error>;
