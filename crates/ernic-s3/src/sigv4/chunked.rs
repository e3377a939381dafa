//! The incremental decoder of `aws-chunked` bodies: `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`
//! (signed chunks) and `STREAMING-UNSIGNED-PAYLOAD-TRAILER` (unsigned chunks and trailers).
//!
//! A body is a run of chunks `hex-size;chunk-signature=SIG\r\nDATA\r\n` ending with a
//! 0-size chunk. Each chunk's signature chains from the previous one, starting at the seed
//! signature of the request's `Authorization` header (string to sign
//! `AWS4-HMAC-SHA256-PAYLOAD`, timestamp, scope, previous signature, hash of "", hash of the
//! data). [`ChunkDecoder::feed`] takes the body in slices of any size and hands the decoded
//! data on as it arrives, so the server streams to storage and never holds an object.
//!
//! The unsigned-trailer form is `hex-size\r\nDATA\r\n` … `0\r\n`, then trailer lines
//! `name:value\r\n` (at most [`MAX_TRAILERS`]) and an empty line. Its trailers (e.g.
//! `x-amz-checksum-crc32`) are handed back by [`ChunkDecoder::trailers`] unverified: the
//! object layer that computes the checksum checks them.
//!
//! Data handed to `out` is not yet verified: its chunk's signature is checked when the chunk
//! ends. The caller must not commit an object until [`ChunkDecoder::finish`] returns `Ok`,
//! and must discard it on any error. Chunk headers are bounded by [`MAX_CHUNK_HEADER_LEN`]
//! and chunk sizes by [`MAX_CHUNK_SIZE`]; nothing allocates per chunk, nothing panics.

use sha2::{Digest, Sha256};
use thiserror::Error;

use super::StreamingSeed;
use super::canonical::{EMPTY_SHA256_HEX, decode_hex32, hex, hmac_matches};

/// Longest chunk header line accepted, without its CRLF (16 hex digits, the
/// `;chunk-signature=` extension and 64 hex digits fit with room to spare).
pub const MAX_CHUNK_HEADER_LEN: usize = 128;
/// Largest chunk accepted (AWS SDKs send 64 KiB to 8 MiB chunks).
pub const MAX_CHUNK_SIZE: u64 = 16 * 1024 * 1024;
/// Most trailer lines accepted after an unsigned-trailer body's final chunk.
pub const MAX_TRAILERS: usize = 4;

/// Why an aws-chunked body was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ChunkError {
    /// A chunk header line is longer than [`MAX_CHUNK_HEADER_LEN`].
    #[error("chunk header at body offset {offset} is longer than {MAX_CHUNK_HEADER_LEN} bytes")]
    HeaderTooLong {
        /// Offset of the header in the encoded body.
        offset: u64,
    },
    /// A chunk header is not `hex-size;chunk-signature=<64 hex>`.
    #[error("chunk header at body offset {offset} is malformed: {reason}")]
    MalformedHeader {
        /// Offset of the header in the encoded body.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A chunk is larger than [`MAX_CHUNK_SIZE`].
    #[error("chunk {index} declares {size} bytes, more than the {MAX_CHUNK_SIZE} allowed")]
    ChunkTooLarge {
        /// The chunk's index (0-based).
        index: u64,
        /// Its declared size.
        size: u64,
    },
    /// The chunks decode to more than `x-amz-decoded-content-length`.
    #[error("the chunks decode to more than the {declared} bytes declared")]
    LongerThanDeclared {
        /// `x-amz-decoded-content-length`.
        declared: u64,
    },
    /// The chunks decoded to fewer bytes than `x-amz-decoded-content-length`.
    #[error("the chunks decoded to {decoded} bytes, not the {declared} declared")]
    ShorterThanDeclared {
        /// Bytes decoded.
        decoded: u64,
        /// `x-amz-decoded-content-length`.
        declared: u64,
    },
    /// A chunk's data is not followed by CRLF.
    #[error("chunk {index}'s data is not followed by CRLF")]
    MissingCrlf {
        /// The chunk's index (0-based).
        index: u64,
    },
    /// A chunk's signature does not match.
    #[error("chunk {index}'s signature does not match")]
    SignatureMismatch {
        /// The chunk's index (0-based).
        index: u64,
    },
    /// More trailer lines than [`MAX_TRAILERS`].
    #[error("more than {MAX_TRAILERS} trailer lines")]
    TooManyTrailers,
    /// A trailer line is not `name:value`.
    #[error("trailer line at body offset {offset} is not name:value")]
    MalformedTrailer {
        /// Offset of the line in the encoded body.
        offset: u64,
    },
    /// Bytes follow the final chunk.
    #[error("{extra} bytes follow the final chunk")]
    TrailingData {
        /// How many were offered.
        extra: usize,
    },
    /// The body ended before its final chunk.
    #[error("the body ended inside chunk {index}, before the final chunk")]
    Truncated {
        /// The chunk's index (0-based).
        index: u64,
    },
}

impl ChunkError {
    /// The S3 error `Code` the server sends for this error.
    pub fn s3_code(&self) -> &'static str {
        match self {
            ChunkError::SignatureMismatch { .. } => "SignatureDoesNotMatch",
            ChunkError::ShorterThanDeclared { .. } | ChunkError::Truncated { .. } => {
                "IncompleteBody"
            }
            _ => "InvalidRequest",
        }
    }

    /// The HTTP status the server sends with [`Self::s3_code`].
    pub fn http_status(&self) -> u16 {
        match self {
            ChunkError::SignatureMismatch { .. } => 403,
            _ => 400,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a header line; `cr` once its `\r` was seen.
    Header { cr: bool },
    /// Reading `remaining` data bytes of the current chunk.
    Data { remaining: u64 },
    /// Reading the CRLF after the data; `seen` bytes of it so far.
    DataCrlf { seen: u8 },
    /// The final chunk was read and checked.
    Done,
    /// An error was returned; everything after is refused again.
    Failed,
}

/// Decodes and verifies an aws-chunked body fed in slices.
pub struct ChunkDecoder {
    /// `None` for the unsigned-trailer form and the unchecked signed form.
    seed: Option<StreamingSeed>,
    /// Whether chunk headers carry `;chunk-signature=` (the signed form,
    /// checked only when `seed` is set).
    signed: bool,
    declared: u64,
    in_trailer: bool,
    trailers: Vec<(String, String)>,
    prev_signature: [u8; 32],
    state: State,
    header: [u8; MAX_CHUNK_HEADER_LEN],
    header_len: usize,
    header_offset: u64,
    offset: u64,
    chunk_index: u64,
    chunk_size: u64,
    chunk_signature: [u8; 32],
    hasher: Sha256,
    decoded: u64,
    failure: Option<ChunkError>,
}

impl ChunkDecoder {
    /// A decoder for the body of a request whose [`super::verify`] gave
    /// [`super::PayloadMode::Streaming`]`(seed)`.
    pub fn new(seed: StreamingSeed) -> Self {
        let mut d = Self::new_unsigned_trailer(seed.decoded_length);
        d.prev_signature = seed.seed_signature;
        d.seed = Some(seed);
        d.signed = true;
        d
    }

    /// A decoder for a `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` body of
    /// `decoded_length` bytes whose signatures are not checked: for a server
    /// that admits anonymous requests and so has no secret to check them
    /// with. The framing is checked as in [`Self::new`]; the data is not
    /// authenticated.
    pub fn new_signed_unchecked(decoded_length: u64) -> Self {
        let mut d = Self::new_unsigned_trailer(decoded_length);
        d.signed = true;
        d
    }

    /// A decoder for a `STREAMING-UNSIGNED-PAYLOAD-TRAILER` body of `decoded_length` bytes
    /// ([`super::PayloadMode::StreamingUnsignedTrailer`]).
    pub fn new_unsigned_trailer(decoded_length: u64) -> Self {
        ChunkDecoder {
            prev_signature: [0; 32],
            seed: None,
            signed: false,
            declared: decoded_length,
            in_trailer: false,
            trailers: Vec::new(),
            state: State::Header { cr: false },
            header: [0; MAX_CHUNK_HEADER_LEN],
            header_len: 0,
            header_offset: 0,
            offset: 0,
            chunk_index: 0,
            chunk_size: 0,
            chunk_signature: [0; 32],
            hasher: Sha256::new(),
            decoded: 0,
            failure: None,
        }
    }

    /// `x-amz-decoded-content-length`: the length the body decodes to.
    pub fn declared_len(&self) -> u64 {
        self.declared
    }

    /// Whether the final chunk has been read and checked.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The trailer lines of an unsigned-trailer body, `(lower-case name, trimmed value)`,
    /// once [`Self::is_done`]. Not verified here.
    pub fn trailers(&self) -> &[(String, String)] {
        &self.trailers
    }

    /// Bytes of decoded data in the chunks read to their end (and, in the
    /// signed form, verified) so far. The chunk in progress has already
    /// handed its data on, so `out` may have seen up to one chunk more.
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// Feeds the next slice of the body, handing decoded data to `out` as it is found.
    /// Returns how many bytes of `input` it consumed (all of them, until the final chunk).
    /// After an error every later call returns the same error.
    pub fn feed(&mut self, input: &[u8], out: &mut impl FnMut(&[u8])) -> Result<usize, ChunkError> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        match self.feed_inner(input, out) {
            Ok(n) => Ok(n),
            Err(e) => {
                self.state = State::Failed;
                self.failure = Some(e.clone());
                Err(e)
            }
        }
    }

    fn feed_inner(
        &mut self,
        input: &[u8],
        out: &mut impl FnMut(&[u8]),
    ) -> Result<usize, ChunkError> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Header { cr } => {
                    let b = input[i];
                    i += 1;
                    self.offset += 1;
                    match (cr, b) {
                        (true, b'\n') => self.end_header()?,
                        (true, _) => {
                            return Err(self.malformed("a CR not followed by LF"));
                        }
                        (false, b'\r') => self.state = State::Header { cr: true },
                        (false, _) => {
                            if self.header_len == MAX_CHUNK_HEADER_LEN {
                                return Err(ChunkError::HeaderTooLong {
                                    offset: self.header_offset,
                                });
                            }
                            self.header[self.header_len] = b;
                            self.header_len += 1;
                        }
                    }
                }
                State::Data { remaining } => {
                    let avail = input.len() - i;
                    let take = usize::try_from(remaining).map_or(avail, |r| r.min(avail));
                    let data = &input[i..i + take];
                    self.hasher.update(data);
                    out(data);
                    i += take;
                    self.offset += take as u64;
                    let remaining = remaining - take as u64;
                    self.state = if remaining == 0 {
                        State::DataCrlf { seen: 0 }
                    } else {
                        State::Data { remaining }
                    };
                }
                State::DataCrlf { seen } => {
                    let want = if seen == 0 { b'\r' } else { b'\n' };
                    if input[i] != want {
                        return Err(ChunkError::MissingCrlf {
                            index: self.chunk_index,
                        });
                    }
                    i += 1;
                    self.offset += 1;
                    if seen == 0 {
                        self.state = State::DataCrlf { seen: 1 };
                    } else {
                        self.end_chunk()?;
                        if self.state == State::Done {
                            return Ok(i);
                        }
                    }
                }
                State::Done => {
                    return Err(ChunkError::TrailingData {
                        extra: input.len() - i,
                    });
                }
                State::Failed => unreachable_failed()?,
            }
        }
        Ok(i)
    }

    fn malformed(&self, reason: &'static str) -> ChunkError {
        ChunkError::MalformedHeader {
            offset: self.header_offset,
            reason,
        }
    }

    fn end_trailer_line(&mut self) -> Result<(), ChunkError> {
        let line = &self.header[..self.header_len];
        let offset = self.header_offset;
        self.header_offset = self.offset;
        if line.is_empty() {
            self.state = State::Done;
            return Ok(());
        }
        if self.trailers.len() == MAX_TRAILERS {
            return Err(ChunkError::TooManyTrailers);
        }
        let line =
            std::str::from_utf8(line).map_err(|_| ChunkError::MalformedTrailer { offset })?;
        let (name, value) = line
            .split_once(':')
            .filter(|(n, _)| !n.is_empty())
            .ok_or(ChunkError::MalformedTrailer { offset })?;
        let entry = (name.trim().to_ascii_lowercase(), value.trim().to_owned());
        self.trailers.push(entry);
        self.header_len = 0;
        self.state = State::Header { cr: false };
        Ok(())
    }

    fn end_header(&mut self) -> Result<(), ChunkError> {
        if self.in_trailer {
            return self.end_trailer_line();
        }
        let line = &self.header[..self.header_len];
        let (size_hex, ext) = match (self.signed, line.iter().position(|&b| b == b';')) {
            (true, Some(semi)) => (&line[..semi], Some(&line[semi + 1..])),
            (true, None) => return Err(self.malformed("no ;chunk-signature=")),
            (false, None) => (line, None),
            (false, Some(_)) => return Err(self.malformed("an unsigned chunk has an extension")),
        };
        if size_hex.is_empty() || size_hex.len() > 16 {
            return Err(self.malformed("the size is not 1 to 16 hex digits"));
        }
        let mut size: u64 = 0;
        for &c in size_hex {
            let d = (c as char)
                .to_digit(16)
                .ok_or(self.malformed("the size is not hex"))?;
            size = (size << 4) | u64::from(d);
        }
        let sig = match ext {
            Some(ext) => {
                let sig = ext
                    .strip_prefix(b"chunk-signature=")
                    .ok_or(self.malformed("the extension is not chunk-signature="))?;
                decode_hex32(sig).ok_or(self.malformed("the signature is not 64 hex digits"))?
            }
            None => [0; 32],
        };
        if size > MAX_CHUNK_SIZE {
            return Err(ChunkError::ChunkTooLarge {
                index: self.chunk_index,
                size,
            });
        }
        let declared = self.declared;
        if self.decoded.checked_add(size).is_none_or(|t| t > declared) {
            return Err(ChunkError::LongerThanDeclared { declared });
        }
        self.chunk_size = size;
        self.chunk_signature = sig;
        self.hasher = Sha256::new();
        if size == 0 && !self.signed {
            // The unsigned form's final chunk has no data and no CRLF: trailers follow.
            self.in_trailer = true;
            self.header_len = 0;
            self.header_offset = self.offset;
            self.state = State::Header { cr: false };
            return Ok(());
        }
        self.state = if size == 0 {
            State::DataCrlf { seen: 0 }
        } else {
            State::Data { remaining: size }
        };
        Ok(())
    }

    fn end_chunk(&mut self) -> Result<(), ChunkError> {
        let data_hash = std::mem::take(&mut self.hasher).finalize();
        if let Some(seed) = &self.seed {
            let sts = format!(
                "AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{EMPTY_SHA256_HEX}\n{}",
                seed.amz_date,
                seed.scope,
                hex(&self.prev_signature),
                hex(&data_hash)
            );
            if !hmac_matches(&seed.signing_key, sts.as_bytes(), &self.chunk_signature) {
                return Err(ChunkError::SignatureMismatch {
                    index: self.chunk_index,
                });
            }
        }
        self.prev_signature = self.chunk_signature;
        self.decoded += self.chunk_size;
        self.chunk_index += 1;
        self.header_len = 0;
        self.header_offset = self.offset;
        self.state = if self.chunk_size == 0 {
            State::Done
        } else {
            State::Header { cr: false }
        };
        Ok(())
    }

    /// Ends the body: `Ok` only if the final chunk was read and the decoded length is
    /// `x-amz-decoded-content-length`.
    pub fn finish(&self) -> Result<(), ChunkError> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        if self.state != State::Done {
            return Err(ChunkError::Truncated {
                index: self.chunk_index,
            });
        }
        if self.decoded != self.declared {
            return Err(ChunkError::ShorterThanDeclared {
                decoded: self.decoded,
                declared: self.declared,
            });
        }
        Ok(())
    }
}

/// `feed` never runs `feed_inner` in the failed state; this keeps the match total without
/// a panic.
fn unreachable_failed() -> Result<(), ChunkError> {
    Err(ChunkError::MalformedHeader {
        offset: 0,
        reason: "the decoder already failed",
    })
}
