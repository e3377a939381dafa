//! The RDMA tokens a client sends in `x-amz-rdma-token`, and hipObject's
//! handshake answer in `x-amz-rdma-reply`: parsed from untrusted header text
//! into one validated [`RdmaToken`], and emitted again (ernic's own client).
//!
//! Two formats are told apart by their length and shape:
//!
//! - **cuObject** (NVIDIA cuObject, as NooBaa serves it): 81 characters,
//!   `raddr:rsize:rkey:lid:qp:has_gid:gid` in fixed-width lowercase hex,
//!   `%016lx:%08x:%08x:%04x:%06x:%01x:%016lx%016lx`. Followed:
//!   noobaa/noobaa-core `src/util/rdma_utils.js` (`CUOBJ_TOKEN_FMT`,
//!   `parse_cuobj_token`). NooBaa checks the total length, the field count
//!   and each field's width; this parser also refuses uppercase and non-hex
//!   digits (`%x` prints lowercase), a `has_gid` other than 0 or 1, and a GID
//!   that is not all zero when `has_gid` is 0 (so that a token parses to one
//!   value and emits back to the same text). The GID's 32 digits are read as
//!   its 16 bytes in order (network order, as `ibv_gid.raw`).
//! - **hipObject** (ROCm/hipObject): a 44-byte little-endian binary token in
//!   88 hex digits. Field order from `docs/interop.rst` (the transport byte:
//!   DC `0x00`, RC `0x01`); offsets and sizes from `src/rdma/token.cpp`
//!   (`kTokenBinaryLen = 1 + 4 + 16 + 4 + 8 + 8 + 1 + 2`): see [`hip`].
//!   hipObject's decoder takes either case of hex digit, and so does this one;
//!   emit writes lowercase as hipObject does.
//!
//! Every token must name a non-empty range that does not wrap the 64-bit
//! address space, and a 24-bit QPN. This module never checks that the memory
//! is registered: the RDMA engine does (key 0 never moves data). Parsing never
//! panics and never allocates; the input is refused before any work when it
//! is longer than [`MAX_TOKEN_LEN`] (or [`MAX_REPLY_LEN`]).

use std::fmt::Write as _;

use thiserror::Error;

/// The longest token either format has (hipObject's 88 hex digits).
pub const MAX_TOKEN_LEN: usize = hip::HEX_LEN;
/// The longest `x-amz-rdma-reply` value hipObject writes: `200:` + a token.
pub const MAX_REPLY_LEN: usize = 4 + hip::HEX_LEN;
/// The S3 error code a bad token answers with (HTTP 400).
pub const S3_CODE: &str = "InvalidRDMAToken";
/// The HTTP status of [`S3_CODE`].
pub const HTTP_STATUS: u16 = 400;
/// The widest queue pair number (IBTA: 24 bits).
pub const MAX_QPN: u32 = 0x00ff_ffff;

/// cuObject's text layout: each field's name and width in hex digits.
pub mod cuobj {
    /// The fields in order, with their widths (`rdma_utils.js`'s `CUOBJ_TOKEN_FMT`).
    pub const FIELDS: [(&str, usize); 7] = [
        ("raddr", 16),
        ("rsize", 8),
        ("rkey", 8),
        ("lid", 4),
        ("qp", 6),
        ("has_gid", 1),
        ("gid", 32),
    ];
    /// The token's length: 75 digits and 6 colons.
    pub const LEN: usize = 81;
}

/// hipObject's binary layout: byte offsets within the 44-byte token.
pub mod hip {
    use core::ops::Range;
    /// `uint8_t transport` (DC `0x00`, RC `0x01`).
    pub const TRANSPORT: usize = 0;
    /// `uint32_t qpNum`, little-endian.
    pub const QPN: Range<usize> = 1..5;
    /// `uint8_t gid[16]`, raw.
    pub const GID: Range<usize> = 5..21;
    /// `uint32_t rkey`, little-endian.
    pub const RKEY: Range<usize> = 21..25;
    /// `uint64_t remoteAddr`, little-endian.
    pub const ADDR: Range<usize> = 25..33;
    /// `uint64_t length`, little-endian.
    pub const LENGTH: Range<usize> = 33..41;
    /// `uint8_t portNum`.
    pub const PORT: usize = 41;
    /// `uint16_t lid`, little-endian.
    pub const LID: Range<usize> = 42..44;
    /// The binary token's size.
    pub const LEN: usize = 44;
    /// Its hex form's length.
    pub const HEX_LEN: usize = 2 * LEN;
}

/// Which client format a token came in (and is emitted in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// NVIDIA cuObject's colon-separated text (NooBaa).
    CuObject,
    /// ROCm hipObject's 44-byte binary token in hex.
    HipObject,
}

/// The RDMA transport the token's queue pair speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Dynamic Connection (cuObject's only transport; hipObject byte `0x00`).
    Dc,
    /// Reliable Connection (hipObject byte `0x01`).
    Rc,
}

/// One validated RDMA token: the client's registered buffer and its queue pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmaToken {
    /// The format it came in.
    pub format: Format,
    /// The transport (always [`Transport::Dc`] for cuObject).
    pub transport: Transport,
    /// The buffer's remote virtual address.
    pub addr: u64,
    /// The buffer's length in bytes (non-zero; at most `u32::MAX` for cuObject).
    pub len: u64,
    /// The buffer's remote key.
    pub rkey: u32,
    /// The client's queue pair number (24 bits).
    pub qpn: u32,
    /// The client port's LID.
    pub lid: u16,
    /// The client port's GID (always present for hipObject).
    pub gid: Option<[u8; 16]>,
    /// The client's port number (hipObject only).
    pub port: Option<u8>,
}

/// `x-amz-rdma-reply` values in the forms hipObject's `docs/interop.rst` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaReply {
    /// The legacy tag `ok`.
    Ok,
    /// The legacy tag `err`.
    Err,
    /// A three-digit HTTP status (`200`, `501`, …).
    Status(u16),
    /// `200:<server token>`: an RC peer handshake carrying the server's token.
    Handshake(RdmaToken),
}

/// Why a token or reply was refused; every one answers [`S3_CODE`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TokenError {
    /// Longer than any token: refused before looking at it.
    #[error("token is {len} bytes, longer than the {max} any format has")]
    TooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Neither 81 characters with colons (cuObject) nor 88 without (hipObject).
    #[error(
        "token of {len} bytes is neither cuObject's 81-character text nor hipObject's 88 hex digits"
    )]
    UnknownFormat {
        /// Its length.
        len: usize,
    },
    /// A cuObject token with the wrong number of `:`-separated fields.
    #[error("cuObject token has {found} fields, not 7")]
    FieldCount {
        /// How many it has.
        found: usize,
    },
    /// A cuObject field of the wrong width.
    #[error("cuObject field {field} is {found} digits wide, not {expected}")]
    FieldWidth {
        /// The field's name.
        field: &'static str,
        /// Its width.
        found: usize,
        /// The width `%…x` prints.
        expected: usize,
    },
    /// A character that is not a hex digit (cuObject: not a lowercase one).
    #[error("field {field} has a byte {byte:#04x} at {at} that is not a lowercase hex digit")]
    NotHex {
        /// The field's name.
        field: &'static str,
        /// The offending byte.
        byte: u8,
        /// Its offset in the token.
        at: usize,
    },
    /// cuObject's `has_gid` other than 0 or 1.
    #[error("has_gid is {value}, not 0 or 1")]
    HasGid {
        /// The value sent.
        value: u8,
    },
    /// cuObject's `has_gid` 0 with a non-zero GID.
    #[error("has_gid is 0 but the GID is not zero")]
    StrayGid,
    /// hipObject's transport byte other than DC or RC.
    #[error("transport byte {value:#04x} is neither DC (0x00) nor RC (0x01)")]
    Transport {
        /// The byte sent.
        value: u8,
    },
    /// A buffer of length 0.
    #[error("token names a buffer of length 0")]
    ZeroLength,
    /// A buffer whose end is past the 64-bit address space.
    #[error("buffer {addr:#x} + {len:#x} wraps the address space")]
    Wraps {
        /// Its address.
        addr: u64,
        /// Its length.
        len: u64,
    },
    /// A QPN wider than 24 bits.
    #[error("QPN {qpn:#x} is wider than 24 bits")]
    Qpn {
        /// The QPN.
        qpn: u32,
    },
    /// A token whose fields its format cannot carry (emit only).
    #[error("a {format:?} token cannot carry {what}")]
    NotRepresentable {
        /// The format asked for.
        format: Format,
        /// What it cannot carry.
        what: &'static str,
    },
    /// A reply that is none of `ok`, `err`, `NNN`, `200:<token>`.
    #[error("x-amz-rdma-reply is malformed: {reason}")]
    Reply {
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl TokenError {
    /// The S3 error code this answers with: always [`S3_CODE`].
    pub fn s3_code(&self) -> &'static str {
        S3_CODE
    }

    /// The HTTP status this answers with: always [`HTTP_STATUS`] (400).
    pub fn http_status(&self) -> u16 {
        HTTP_STATUS
    }
}

/// Reads `digits` (at most 16) as a hex number; `at` is their offset in the
/// token, for the error. `upper` allows `A-F`.
fn hex(digits: &[u8], field: &'static str, at: usize, upper: bool) -> Result<u64, TokenError> {
    let mut v: u64 = 0;
    for (i, &b) in digits.iter().enumerate() {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' if upper => b - b'A' + 10,
            _ => {
                return Err(TokenError::NotHex {
                    field,
                    byte: b,
                    at: at + i,
                });
            }
        };
        v = (v << 4) | u64::from(d);
    }
    Ok(v)
}

impl RdmaToken {
    /// Parses an `x-amz-rdma-token` value in either format.
    pub fn parse(s: &str) -> Result<RdmaToken, TokenError> {
        let b = s.as_bytes();
        if b.len() > MAX_TOKEN_LEN {
            return Err(TokenError::TooLong {
                len: b.len(),
                max: MAX_TOKEN_LEN,
            });
        }
        let t = if b.contains(&b':') {
            Self::parse_cuobject(b)?
        } else if b.len() == hip::HEX_LEN {
            Self::parse_hipobject(b)?
        } else {
            return Err(TokenError::UnknownFormat { len: b.len() });
        };
        t.check()?;
        Ok(t)
    }

    fn parse_cuobject(b: &[u8]) -> Result<RdmaToken, TokenError> {
        let found = b.split(|&c| c == b':').count();
        if found != cuobj::FIELDS.len() {
            return Err(TokenError::FieldCount { found });
        }
        let mut v = [0u64; 6];
        let mut gid = [0u8; 16];
        let mut at = 0;
        for (i, (part, &(field, expected))) in b
            .split(|&c| c == b':')
            .zip(cuobj::FIELDS.iter())
            .enumerate()
        {
            if part.len() != expected {
                return Err(TokenError::FieldWidth {
                    field,
                    found: part.len(),
                    expected,
                });
            }
            if i < 6 {
                v[i] = hex(part, field, at, false)?;
            } else {
                for (j, pair) in part.chunks_exact(2).enumerate() {
                    // Two digits: fits a byte.
                    gid[j] = hex(pair, field, at + 2 * j, false)? as u8;
                }
            }
            at += part.len() + 1;
        }
        let has_gid = match v[5] {
            0 => false,
            1 => true,
            value => return Err(TokenError::HasGid { value: value as u8 }),
        };
        if !has_gid && gid != [0; 16] {
            return Err(TokenError::StrayGid);
        }
        // The widths bound each value: 8 digits fit u32, 4 fit u16.
        Ok(RdmaToken {
            format: Format::CuObject,
            transport: Transport::Dc,
            addr: v[0],
            len: v[1],
            rkey: v[2] as u32,
            lid: v[3] as u16,
            qpn: v[4] as u32,
            gid: has_gid.then_some(gid),
            port: None,
        })
    }

    fn parse_hipobject(b: &[u8]) -> Result<RdmaToken, TokenError> {
        let mut raw = [0u8; hip::LEN];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            raw[i] = hex(pair, "hipObject token", 2 * i, true)? as u8;
        }
        let transport = match raw[hip::TRANSPORT] {
            0x00 => Transport::Dc,
            0x01 => Transport::Rc,
            value => return Err(TokenError::Transport { value }),
        };
        let le = |r: core::ops::Range<usize>| {
            raw[r]
                .iter()
                .rev()
                .fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
        };
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&raw[hip::GID]);
        Ok(RdmaToken {
            format: Format::HipObject,
            transport,
            qpn: le(hip::QPN) as u32,
            gid: Some(gid),
            rkey: le(hip::RKEY) as u32,
            addr: le(hip::ADDR),
            len: le(hip::LENGTH),
            port: Some(raw[hip::PORT]),
            lid: le(hip::LID) as u16,
        })
    }

    /// The checks both formats share, and what each format can carry.
    fn check(&self) -> Result<(), TokenError> {
        if self.len == 0 {
            return Err(TokenError::ZeroLength);
        }
        if self.addr.checked_add(self.len - 1).is_none() {
            return Err(TokenError::Wraps {
                addr: self.addr,
                len: self.len,
            });
        }
        if self.qpn > MAX_QPN {
            return Err(TokenError::Qpn { qpn: self.qpn });
        }
        let no = |what| {
            Err(TokenError::NotRepresentable {
                format: self.format,
                what,
            })
        };
        match self.format {
            Format::CuObject => {
                if self.len > u64::from(u32::MAX) {
                    return no("a length over 32 bits");
                }
                if self.transport != Transport::Dc {
                    return no("a transport other than DC");
                }
                if self.port.is_some() {
                    return no("a port number");
                }
            }
            Format::HipObject => {
                if self.gid.is_none() {
                    return no("an absent GID");
                }
                if self.port.is_none() {
                    return no("an absent port number");
                }
            }
        }
        Ok(())
    }

    /// Writes the token in its [`Format`], after the checks [`parse`](Self::parse) makes.
    pub fn emit(&self) -> Result<String, TokenError> {
        let mut s = String::with_capacity(MAX_TOKEN_LEN);
        self.emit_into(&mut s)?;
        Ok(s)
    }

    /// Appends the token to `out` (nothing is appended on error).
    pub fn emit_into(&self, out: &mut String) -> Result<(), TokenError> {
        self.check()?;
        // Writing into a String cannot fail.
        match self.format {
            Format::CuObject => {
                let gid = self.gid.unwrap_or([0; 16]);
                let _ = write!(
                    out,
                    "{:016x}:{:08x}:{:08x}:{:04x}:{:06x}:{:01x}:",
                    self.addr,
                    self.len,
                    self.rkey,
                    self.lid,
                    self.qpn,
                    u8::from(self.gid.is_some())
                );
                for b in gid {
                    let _ = write!(out, "{b:02x}");
                }
            }
            Format::HipObject => {
                for b in self.to_hip_bytes() {
                    let _ = write!(out, "{b:02x}");
                }
            }
        }
        Ok(())
    }

    /// The 44 binary bytes of hipObject's layout (whatever `format` says).
    pub fn to_hip_bytes(&self) -> [u8; hip::LEN] {
        let mut raw = [0u8; hip::LEN];
        raw[hip::TRANSPORT] = match self.transport {
            Transport::Dc => 0,
            Transport::Rc => 1,
        };
        raw[hip::QPN].copy_from_slice(&self.qpn.to_le_bytes());
        raw[hip::GID].copy_from_slice(&self.gid.unwrap_or([0; 16]));
        raw[hip::RKEY].copy_from_slice(&self.rkey.to_le_bytes());
        raw[hip::ADDR].copy_from_slice(&self.addr.to_le_bytes());
        raw[hip::LENGTH].copy_from_slice(&self.len.to_le_bytes());
        raw[hip::PORT] = self.port.unwrap_or(0);
        raw[hip::LID].copy_from_slice(&self.lid.to_le_bytes());
        raw
    }
}

impl RdmaReply {
    /// Parses an `x-amz-rdma-reply` value: `ok`, `err`, a three-digit status
    /// 100..=599, or `200:` and a hipObject token. Unlike hipObject, trailing
    /// CR/LF/NUL are refused (an HTTP header value carries none).
    pub fn parse(s: &str) -> Result<RdmaReply, TokenError> {
        let b = s.as_bytes();
        if b.len() > MAX_REPLY_LEN {
            return Err(TokenError::TooLong {
                len: b.len(),
                max: MAX_REPLY_LEN,
            });
        }
        match b {
            b"ok" => return Ok(RdmaReply::Ok),
            b"err" => return Ok(RdmaReply::Err),
            _ => {}
        }
        let (status, rest) = match b.iter().position(|&c| c == b':') {
            Some(i) => (&b[..i], Some(&s[i + 1..])),
            None => (b, None),
        };
        if status.len() != 3 || !status.iter().all(u8::is_ascii_digit) {
            return Err(TokenError::Reply {
                reason: "status is not three decimal digits",
            });
        }
        let code = status
            .iter()
            .fold(0u16, |acc, &d| acc * 10 + u16::from(d - b'0'));
        if !(100..=599).contains(&code) {
            return Err(TokenError::Reply {
                reason: "status is outside 100..=599",
            });
        }
        let Some(rest) = rest else {
            return Ok(RdmaReply::Status(code));
        };
        if code != 200 {
            return Err(TokenError::Reply {
                reason: "only status 200 carries a peer token",
            });
        }
        if rest.len() != hip::HEX_LEN || rest.contains(':') {
            return Err(TokenError::Reply {
                reason: "peer token is not 88 hex digits",
            });
        }
        Ok(RdmaReply::Handshake(RdmaToken::parse(rest)?))
    }

    /// Writes the reply value (a handshake token is written in hipObject's
    /// format whatever its `format` says; it must pass the token checks).
    pub fn emit(&self) -> Result<String, TokenError> {
        Ok(match self {
            RdmaReply::Ok => "ok".to_owned(),
            RdmaReply::Err => "err".to_owned(),
            RdmaReply::Status(code) => {
                if !(100..=599).contains(code) {
                    return Err(TokenError::Reply {
                        reason: "status is outside 100..=599",
                    });
                }
                code.to_string()
            }
            RdmaReply::Handshake(t) => {
                let t = RdmaToken {
                    format: Format::HipObject,
                    ..*t
                };
                let mut s = String::with_capacity(MAX_REPLY_LEN);
                s.push_str("200:");
                t.emit_into(&mut s)?;
                s
            }
        })
    }
}

#[cfg(test)]
mod tests;
