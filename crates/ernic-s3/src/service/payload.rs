//! A request body as the S3 layer consumes it: decoded from `aws-chunked`
//! when the client streamed it so, checked against the SHA-256 the signature
//! covers, against a flexible checksum (`x-amz-checksum-crc32`,
//! `-crc32c`... in a header or a trailer) and, by the caller, against
//! `Content-MD5`. Bytes are handed to a sink as they arrive
//! ([`Payload::pump`]); nothing here holds a body whole except
//! [`Payload::read_small`], which is bounded.
//!
//! The sink sees bytes before they are verified (a chunk's signature is
//! checked at its end, the checksum at the body's end): callers write into
//! an [`ObjectWriter`](crate::store::ObjectWriter) and commit only after
//! `pump` returned `Ok`, so a bad body never becomes an object.

use std::io::ErrorKind;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use sha2::{Digest, Sha256};

use super::error::{S3Error, S3Result};
use crate::http::{Body, Request, body_error};
use crate::sigv4::PayloadMode;
use crate::sigv4::canonical::decode_hex32;
use crate::sigv4::chunked::ChunkDecoder;

/// How many body bytes one read takes.
const READ_CHUNK: usize = 256 * 1024;

/// How the body is framed and what covers it.
pub enum Framing {
    /// As sent; nothing signed covers it.
    Plain,
    /// As sent; its SHA-256 must be this.
    Sha256([u8; 32]),
    /// `aws-chunked`: decoded (and, with a seed, verified) by this decoder.
    AwsChunked(Box<ChunkDecoder>),
}

impl Framing {
    /// The framing a verified signature gives.
    pub fn verified(mode: PayloadMode) -> Framing {
        match mode {
            PayloadMode::Sha256(h) => Framing::Sha256(h),
            PayloadMode::Unsigned => Framing::Plain,
            PayloadMode::Streaming(seed) => Framing::AwsChunked(Box::new(ChunkDecoder::new(seed))),
            PayloadMode::StreamingUnsignedTrailer { decoded_length } => {
                Framing::AwsChunked(Box::new(ChunkDecoder::new_unsigned_trailer(decoded_length)))
            }
        }
    }

    /// The framing of an anonymous request, from its own headers: its
    /// signature (if any) is not checked, but the body is decoded as the
    /// client framed it and its SHA-256 still checked.
    pub fn unverified(req: &Request) -> S3Result<Framing> {
        let decoded = || -> S3Result<u64> {
            let v = req.header("x-amz-decoded-content-length").ok_or_else(|| {
                S3Error::new(
                    411,
                    "MissingContentLength",
                    "aws-chunked needs x-amz-decoded-content-length",
                )
            })?;
            v.parse().map_err(|_| {
                S3Error::invalid_argument(format!(
                    "x-amz-decoded-content-length {v:?} is not a number"
                ))
            })
        };
        Ok(match req.header("x-amz-content-sha256") {
            Some("STREAMING-AWS4-HMAC-SHA256-PAYLOAD") => {
                Framing::AwsChunked(Box::new(ChunkDecoder::new_signed_unchecked(decoded()?)))
            }
            Some("STREAMING-UNSIGNED-PAYLOAD-TRAILER") => {
                Framing::AwsChunked(Box::new(ChunkDecoder::new_unsigned_trailer(decoded()?)))
            }
            Some(v) if v.starts_with("STREAMING-") => {
                return Err(S3Error::not_implemented(format!(
                    "x-amz-content-sha256 {v}"
                )));
            }
            Some(v) => match decode_hex32(v.as_bytes()) {
                Some(h) => Framing::Sha256(h),
                None => Framing::Plain,
            },
            None => Framing::Plain,
        })
    }
}

/// A flexible checksum algorithm (`x-amz-checksum-*`): each is carried in
/// base64 of its big-endian digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumAlgorithm {
    /// CRC-32 (IEEE).
    Crc32,
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// CRC-64/NVME (the AWS SDKs' and CLI v2's default).
    Crc64Nvme,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

const CRC32C: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);
const CRC64NVME: crc::Crc<u64, crc::Table<16>> =
    crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_NVME);

impl ChecksumAlgorithm {
    /// From the name after `x-amz-checksum-` (lower-case).
    fn from_name(name: &str) -> S3Result<ChecksumAlgorithm> {
        match name {
            "crc32" => Ok(ChecksumAlgorithm::Crc32),
            "crc32c" => Ok(ChecksumAlgorithm::Crc32c),
            "crc64nvme" => Ok(ChecksumAlgorithm::Crc64Nvme),
            "sha1" => Ok(ChecksumAlgorithm::Sha1),
            "sha256" => Ok(ChecksumAlgorithm::Sha256),
            other => Err(S3Error::invalid_request(format!(
                "checksum algorithm {other:?} is not one of crc32, crc32c, crc64nvme, sha1, sha256"
            ))),
        }
    }

    /// The header that carries it.
    pub fn header(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgorithm::Sha1 => "x-amz-checksum-sha1",
            ChecksumAlgorithm::Sha256 => "x-amz-checksum-sha256",
        }
    }
}

/// A running checksum.
enum Hasher {
    Crc32(crc32fast::Hasher),
    Crc32c(crc::Digest<'static, u32, crc::Table<16>>),
    Crc64(crc::Digest<'static, u64, crc::Table<16>>),
    Sha1(sha1::Sha1),
    Sha256(Sha256),
}

impl Hasher {
    fn new(a: ChecksumAlgorithm) -> Hasher {
        match a {
            ChecksumAlgorithm::Crc32 => Hasher::Crc32(crc32fast::Hasher::new()),
            ChecksumAlgorithm::Crc32c => Hasher::Crc32c(CRC32C.digest()),
            ChecksumAlgorithm::Crc64Nvme => Hasher::Crc64(CRC64NVME.digest()),
            ChecksumAlgorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            ChecksumAlgorithm::Sha256 => Hasher::Sha256(Sha256::new()),
        }
    }
    fn update(&mut self, d: &[u8]) {
        match self {
            Hasher::Crc32(h) => h.update(d),
            Hasher::Crc32c(h) => h.update(d),
            Hasher::Crc64(h) => h.update(d),
            Hasher::Sha1(h) => h.update(d),
            Hasher::Sha256(h) => h.update(d),
        }
    }
    fn finish_b64(&self) -> String {
        match self {
            Hasher::Crc32(h) => B64.encode(h.clone().finalize().to_be_bytes()),
            Hasher::Crc32c(h) => B64.encode(h.clone().finalize().to_be_bytes()),
            Hasher::Crc64(h) => B64.encode(h.clone().finalize().to_be_bytes()),
            Hasher::Sha1(h) => B64.encode(h.clone().finalize()),
            Hasher::Sha256(h) => B64.encode(h.clone().finalize()),
        }
    }
}

/// Where the expected checksum comes from.
enum Expected {
    /// Not given: computed and stored only.
    None,
    /// In a header.
    Value(String),
    /// In the aws-chunked trailer of that name.
    Trailer(&'static str),
}

/// The flexible checksum of a request: what it claims and what the bytes give.
pub struct Checksum {
    algorithm: ChecksumAlgorithm,
    hasher: Hasher,
    expected: Expected,
}

impl Checksum {
    /// The checksum a request asks for: an `x-amz-checksum-*` header, an
    /// `x-amz-trailer` naming one, or `x-amz-sdk-checksum-algorithm` alone
    /// (then computed and stored). None when it asks for none.
    pub fn from_request(req: &Request) -> S3Result<Option<Checksum>> {
        let mut given: Option<(ChecksumAlgorithm, Expected)> = None;
        let mut give = |a: ChecksumAlgorithm, e: Expected| {
            if given.is_some() {
                return Err(S3Error::invalid_request("more than one checksum was given"));
            }
            given = Some((a, e));
            Ok(())
        };
        for h in &req.headers {
            if let Some(name) = h.name.strip_prefix("x-amz-checksum-") {
                if matches!(name, "mode" | "type" | "algorithm") {
                    continue;
                }
                give(
                    ChecksumAlgorithm::from_name(name)?,
                    Expected::Value(h.value.clone()),
                )?;
            }
        }
        if let Some(t) = req.header("x-amz-trailer") {
            let t = t.trim().to_ascii_lowercase();
            let name = t.strip_prefix("x-amz-checksum-").ok_or_else(|| {
                S3Error::invalid_request(format!("x-amz-trailer {t:?} is not a checksum"))
            })?;
            let a = ChecksumAlgorithm::from_name(name)?;
            give(a, Expected::Trailer(a.header()))?;
        }
        if given.is_none() {
            if let Some(alg) = req.header("x-amz-sdk-checksum-algorithm") {
                given = Some((
                    ChecksumAlgorithm::from_name(&alg.to_ascii_lowercase())?,
                    Expected::None,
                ));
            }
        }
        Ok(given.map(|(algorithm, expected)| Checksum {
            algorithm,
            hasher: Hasher::new(algorithm),
            expected,
        }))
    }

    /// The algorithm.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// Adds bytes that arrived some other way (by RDMA).
    pub fn update(&mut self, d: &[u8]) {
        self.hasher.update(d);
    }

    /// Compares what the bytes gave with what the request claimed (in a
    /// header, or in these trailers); returns the header to store.
    pub fn check(&self, trailers: &[(String, String)]) -> S3Result<(String, String)> {
        let got = self.hasher.finish_b64();
        let want = match &self.expected {
            Expected::None => None,
            Expected::Value(v) => Some(v.as_str()),
            Expected::Trailer(name) => Some(
                trailers
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
                    .ok_or_else(|| {
                        S3Error::invalid_request(format!("the body's trailer has no {name}"))
                    })?,
            ),
        };
        if want.is_some_and(|w| w != got) {
            return Err(S3Error::new(
                400,
                "BadDigest",
                format!(
                    "the {} you specified did not match the calculated checksum",
                    self.algorithm.header()
                ),
            ));
        }
        Ok((self.algorithm.header().to_string(), got))
    }
}

/// A body being consumed.
pub struct Payload<'a> {
    body: &'a mut dyn Body,
    framing: Framing,
    checksum: Option<Checksum>,
    sha: Option<Sha256>,
    total: u64,
}

impl<'a> Payload<'a> {
    /// A body with its framing and checksum.
    pub fn new(body: &'a mut dyn Body, framing: Framing, checksum: Option<Checksum>) -> Self {
        let sha = matches!(framing, Framing::Sha256(_)).then(Sha256::new);
        Payload {
            body,
            framing,
            checksum,
            sha,
            total: 0,
        }
    }

    /// The object's length as the request declares it: the decoded length
    /// of an aws-chunked body, else `Content-Length` (None for an HTTP
    /// chunked body).
    pub fn declared_len(&self) -> Option<u64> {
        match &self.framing {
            Framing::AwsChunked(d) => Some(d.declared_len()),
            _ => self.body.declared_len(),
        }
    }

    /// Reads the whole body, handing its decoded bytes to `sink`, then
    /// checks the chunk signatures, the payload hash and the checksum.
    /// Returns the decoded length and the checksum header to store (if the
    /// request had one).
    pub fn pump(
        &mut self,
        sink: &mut dyn FnMut(&[u8]) -> S3Result<()>,
    ) -> S3Result<(u64, Option<(String, String)>)> {
        // Sized by what the body declared, so a 4 KiB PUT reads through a
        // 4 KiB buffer (an HTTP chunked body, of unknown length, gets the
        // whole chunk).
        let want = self
            .body
            .declared_len()
            .map_or(READ_CHUNK as u64, |n| n.min(READ_CHUNK as u64));
        let mut buf = vec![0u8; (want as usize).max(1)];
        let mut failed: Option<S3Error> = None;
        loop {
            let n = match self.body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(&e)),
            };
            let raw = &buf[..n];
            if let Some(sha) = &mut self.sha {
                sha.update(raw);
            }
            let checksum = &mut self.checksum;
            let total = &mut self.total;
            let mut hand_on = |d: &[u8]| {
                if failed.is_some() {
                    return;
                }
                *total += d.len() as u64;
                if let Some(c) = checksum.as_mut() {
                    c.hasher.update(d);
                }
                if let Err(e) = sink(d) {
                    failed = Some(e);
                }
            };
            match &mut self.framing {
                Framing::AwsChunked(dec) => {
                    let used = dec.feed(raw, &mut hand_on)?;
                    if used < raw.len() {
                        return Err(S3Error::invalid_request(
                            "bytes follow the body's final chunk",
                        ));
                    }
                }
                _ => hand_on(raw),
            }
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        let mut trailers: &[(String, String)] = &[];
        match &self.framing {
            Framing::AwsChunked(dec) => {
                dec.finish()?;
                trailers = dec.trailers();
            }
            Framing::Sha256(want) => {
                let got: [u8; 32] = self.sha.take().unwrap_or_default().finalize().into();
                if &got != want {
                    return Err(S3Error::new(
                        400,
                        "XAmzContentSHA256Mismatch",
                        "the provided x-amz-content-sha256 does not match what was computed",
                    ));
                }
            }
            Framing::Plain => {}
        }
        let stored = match &self.checksum {
            Some(c) => Some(c.check(trailers)?),
            None => None,
        };
        Ok((self.total, stored))
    }

    /// Reads a small body (an XML document) whole, up to `limit` bytes.
    pub fn read_small(&mut self, limit: usize) -> S3Result<Vec<u8>> {
        let mut out = Vec::new();
        self.pump(&mut |d| {
            if out.len() + d.len() > limit {
                return Err(S3Error::new(
                    400,
                    "MaxMessageLengthExceeded",
                    format!("the body is over {limit} bytes"),
                ));
            }
            out.extend_from_slice(d);
            Ok(())
        })?;
        Ok(out)
    }
}

/// An error reading the body: its framing (an [`HttpError`](crate::http::HttpError)) or the socket.
pub fn read_error(e: &std::io::Error) -> S3Error {
    match body_error(e) {
        Some(h) => S3Error::from(h),
        None => S3Error::new(400, "IncompleteBody", format!("reading the body: {e}")),
    }
}

/// Checks `Content-MD5` (base64 of 16 bytes), if the request has one,
/// against the MD5 of what was received.
pub fn check_content_md5(req: &Request, md5: &[u8; 16]) -> S3Result<()> {
    let Some(v) = req.header("content-md5") else {
        return Ok(());
    };
    let want = B64
        .decode(v.trim())
        .ok()
        .filter(|b| b.len() == 16)
        .ok_or_else(|| {
            S3Error::new(
                400,
                "InvalidDigest",
                "the Content-MD5 you specified was invalid",
            )
        })?;
    if want != md5 {
        return Err(S3Error::new(
            400,
            "BadDigest",
            "the Content-MD5 you specified did not match what was received",
        ));
    }
    Ok(())
}

/// Base64 of bytes (for headers).
pub fn b64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}
