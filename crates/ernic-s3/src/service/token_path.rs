//! The RDMA data plane as the S3 layer sees it: a request with
//! `x-amz-rdma-token` names a buffer the client registered, and the object
//! moves between it and the store by RDMA (GET as RDMA WRITE into the
//! client, PUT and UploadPart as RDMA READ from it) instead of in the HTTP
//! body. The answers follow the protocol NooBaa and the NVIDIA aws-c-s3
//! fork document: `x-amz-rdma-reply` (`200`/`206`, or a hipObject RC
//! handshake `200:<server token>`), `x-amz-rdma-bytes-transferred`, and
//! `Content-Length: 0`. A store that declines (no data plane, or a buffer
//! too small for the object) answers `x-amz-rdma-reply: 501`: a GET then
//! carries the object in the body as usual, a PUT stores nothing and its
//! client sends it again over HTTP.
//!
//! The token is checked before anything moves: it must parse
//! ([`RdmaToken::parse`]), and key 0 is refused (it would name all of a
//! guest's memory). Range, rights and PD are the fabric's checks: the data
//! plane's RDMA operations against the client's QP succeed only on memory
//! the client registered for remote access, and a refusal becomes
//! `InvalidRDMAToken`.

use super::error::{S3Error, S3Result};
use crate::http::{Response, ResponseBody};
use crate::store::StoreError;
use crate::token::{self, RdmaToken, TokenError};

/// The request header carrying the token.
pub const TOKEN_HEADER: &str = "x-amz-rdma-token";
/// The response header carrying the outcome.
pub const REPLY_HEADER: &str = "x-amz-rdma-reply";
/// The response header counting the bytes moved.
pub const BYTES_HEADER: &str = "x-amz-rdma-bytes-transferred";

/// A finished transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes moved.
    pub bytes: u64,
    /// The server's token when the client asked for an RC handshake
    /// (hipObject): the reply is then `200:<this>`.
    pub server_token: Option<String>,
}

/// Why a transfer did not happen.
#[derive(Debug, thiserror::Error)]
pub enum DataPlaneError {
    /// The store will not move this one by RDMA; the protocol's 501.
    #[error("RDMA declined: {why}")]
    Declined {
        /// Why.
        why: String,
    },
    /// The token named memory the client cannot give: not registered,
    /// outside its region, without the rights, or in another PD.
    #[error("the client's buffer refused the transfer: {why}")]
    Refused {
        /// What the fabric said.
        why: String,
    },
    /// The token itself is bad.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The store failed while the bytes moved.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The fabric failed (the client's node went away, a timeout).
    #[error("the RDMA transfer failed: {why}")]
    Fabric {
        /// What happened.
        why: String,
    },
}

impl From<DataPlaneError> for S3Error {
    fn from(e: DataPlaneError) -> S3Error {
        match e {
            DataPlaneError::Declined { why } => S3Error::new(501, "RDMANotSupported", why),
            DataPlaneError::Refused { .. } => {
                S3Error::new(token::HTTP_STATUS, token::S3_CODE, e.to_string())
            }
            DataPlaneError::Token(t) => t.into(),
            DataPlaneError::Store(s) => s.into(),
            DataPlaneError::Fabric { .. } => S3Error::internal(e.to_string()),
        }
    }
}

/// Gives a GET's bytes: `fill(offset, buf)` writes the transfer's bytes
/// from `offset` into `buf` and answers how many.
pub type Fill<'a> = dyn FnMut(u64, &mut [u8]) -> Result<usize, StoreError> + 'a;
/// Takes a PUT's bytes, in order.
pub type Sink<'a> = dyn FnMut(&[u8]) -> Result<(), StoreError> + 'a;

/// Moves bytes between the store and clients' registered buffers.
pub trait DataPlane: Send + Sync {
    /// Prepares to serve the token's client QP and moves nothing: what a
    /// HEAD with a token does (hipObject's RC handshake: the answer's
    /// server token tells the client the store's QP).
    fn handshake(&self, token: &RdmaToken) -> Result<Transfer, DataPlaneError>;

    /// Writes `len` bytes into the client's buffer (from its start);
    /// `fill(offset, buf)` gives the transfer's bytes from `offset` on,
    /// returning how many it wrote into `buf`.
    fn write_to_client(
        &self,
        token: &RdmaToken,
        len: u64,
        fill: &mut Fill<'_>,
    ) -> Result<Transfer, DataPlaneError>;

    /// Reads `len` bytes from the client's buffer (from its start),
    /// handing them to `sink` in order.
    fn read_from_client(
        &self,
        token: &RdmaToken,
        len: u64,
        sink: &mut Sink<'_>,
    ) -> Result<Transfer, DataPlaneError>;
}

/// The request's token, if it has one: parsed, and key 0 refused.
pub fn request_token(header: Option<&str>) -> S3Result<Option<RdmaToken>> {
    let Some(h) = header else {
        return Ok(None);
    };
    let t = RdmaToken::parse(h.trim())?;
    if t.rkey == 0 {
        return Err(S3Error::new(
            token::HTTP_STATUS,
            token::S3_CODE,
            "the token's rkey is 0, which names no registered memory",
        ));
    }
    Ok(Some(t))
}

/// The reply header's value for a transfer.
pub fn reply_value(status: u16, t: &Transfer) -> String {
    match &t.server_token {
        Some(s) => format!("{status}:{s}"),
        None => status.to_string(),
    }
}

/// Adds the success headers of a transfer to a response and empties its body.
pub fn answered(mut r: Response, status: u16, t: &Transfer) -> Response {
    r.headers
        .push((REPLY_HEADER.to_string(), reply_value(status, t)));
    r.headers
        .push((BYTES_HEADER.to_string(), t.bytes.to_string()));
    r.body = ResponseBody::Empty;
    r
}

/// Marks a response as one whose RDMA was declined (501), leaving its
/// body as it is (a GET's object, a PUT's error document).
pub fn declined(mut r: Response) -> Response {
    r.headers
        .push((REPLY_HEADER.to_string(), "501".to_string()));
    r
}

/// A declined PUT: `200` with `x-amz-rdma-reply: 501` and an error
/// document, and nothing stored; the client sends the object again over
/// HTTP.
pub fn declined_put(why: &str, resource: &str) -> Response {
    let e = S3Error::new(200, "RDMANotSupported", why.to_string());
    declined(e.into_response(resource, "-", false))
}
