//! Values as bmv2's `runtime_CLI.py` reads them: one match field or action
//! parameter of a bit width the program gives (`parse_param`,
//! `int_to_bytes`, `parse_match_key` there), as a big-endian byte string of
//! the field's byte width.
//!
//! What it promises: the accepted spellings and the error wording are
//! runtime_CLI's; no input, however long or odd, makes it panic or allocate
//! more than the field's byte width per value. What it never does: look a
//! name up. The caller (the engine) knows the field widths and match kinds
//! from the program and passes them in.
//!
//! The rules, from `tools/runtime_CLI.py`:
//! - a token is first tried as an address when the width invites one: with a
//!   `.` at width 32 it must be a dotted quad, with a `:` at width 48 a MAC
//!   (six hex bytes), with a `:` at width 128 an IPv6 address;
//! - otherwise it is a Python integer literal, `int(text, 0)`: decimal
//!   (no leading zeros), `0x`, `0o`, `0b`, `_` between digits, a sign;
//! - a value that needs more bytes than `(width + 7) / 8` is refused
//!   ("Parameter is too large"); one that fits the bytes but not the bits is
//!   accepted, and bmv2 masks the top byte to the width (`match_units.cpp`,
//!   "automatic masking of the first byte"), which [`parse_value`] does too;
//! - a negative number is accepted and becomes zero (`int_to_bytes` only
//!   emits digits while the number is positive).

use std::net::Ipv6Addr;

use thiserror::Error;

/// A field or parameter value: `bytes` is big-endian, exactly
/// `(bits + 7) / 8` long, with the bits above `bits` zero.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Value {
    /// The field's width in bits.
    pub bits: u32,
    /// The value, big-endian, `byte_len(bits)` bytes.
    pub bytes: Vec<u8>,
}

/// Why a value token was refused; the texts are runtime_CLI's
/// `UIn_BadParamError` messages.
#[derive(Clone, PartialEq, Eq, Debug, Error)]
pub enum ValueError {
    /// A token with a `.` at width 32 that is not a dotted quad.
    #[error("Invalid IPv4 address")]
    BadIpv4,
    /// A token with a `:` at width 48 that is not six hex bytes.
    #[error("Invalid MAC address")]
    BadMac,
    /// A token with a `:` at width 128 that is not an IPv6 address.
    #[error("Invalid IPv6 address")]
    BadIpv6,
    /// Not a Python integer literal.
    #[error("Invalid input, could not cast to integer, try in hex with 0x prefix")]
    NotAnInteger,
    /// Needs more bytes than the field's byte width.
    #[error("Parameter is too large")]
    TooLarge,
}

/// The number of bytes a field of `bits` bits takes: `(bits + 7) / 8`.
pub fn byte_len(bits: u32) -> usize {
    bits.div_ceil(8) as usize
}

/// The mask of the top (first) byte of a `bits`-wide big-endian value
/// (`get_byte0_mask` in bmv2's `match_units.cpp`).
fn top_byte_mask(bits: u32) -> u8 {
    match bits % 8 {
        0 => 0xff,
        n => (1u8 << n) - 1,
    }
}

impl Value {
    /// Zero of width `bits`.
    pub fn zero(bits: u32) -> Value {
        Value {
            bits,
            bytes: vec![0; byte_len(bits)],
        }
    }

    /// `v` as a `bits`-wide value; [`ValueError::TooLarge`] if it does not
    /// fit in `bits` bits (stricter than the CLI, which checks bytes).
    pub fn from_u128(v: u128, bits: u32) -> Result<Value, ValueError> {
        if bits < 128 && v >> bits != 0 {
            return Err(ValueError::TooLarge);
        }
        let mut out = Value::zero(bits);
        let be = v.to_be_bytes();
        let n = out.bytes.len().min(16);
        let len = out.bytes.len();
        out.bytes[len - n..].copy_from_slice(&be[16 - n..]);
        Ok(out)
    }

    /// The value as an integer, if it fits in 128 bits.
    pub fn as_u128(&self) -> Option<u128> {
        let first = self
            .bytes
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(self.bytes.len());
        let significant = &self.bytes[first..];
        if significant.len() > 16 {
            return None;
        }
        Some(
            significant
                .iter()
                .fold(0u128, |acc, &b| (acc << 8) | u128::from(b)),
        )
    }

    /// Builds a value from big-endian `magnitude` (any length), refusing it
    /// when its significant bytes exceed the byte width, and masking the
    /// top byte to the bit width as bmv2 does.
    fn from_magnitude(magnitude: &[u8], bits: u32) -> Result<Value, ValueError> {
        let first = magnitude
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(magnitude.len());
        let significant = &magnitude[first..];
        let mut out = Value::zero(bits);
        let len = out.bytes.len();
        if significant.len() > len {
            return Err(ValueError::TooLarge);
        }
        out.bytes[len - significant.len()..].copy_from_slice(significant);
        if let Some(top) = out.bytes.first_mut() {
            *top &= top_byte_mask(bits);
        }
        Ok(out)
    }
}

/// Parses one value token of a `bits`-wide field as runtime_CLI's
/// `parse_param` does (see the module doc for the rules).
pub fn parse_value(text: &str, bits: u32) -> Result<Value, ValueError> {
    if bits == 32 && text.contains('.') {
        return parse_ipv4(text).and_then(|b| Value::from_magnitude(&b, bits));
    }
    if bits == 48 && text.contains(':') {
        return parse_mac(text).and_then(|b| Value::from_magnitude(&b, bits));
    }
    if bits == 128 && text.contains(':') {
        let ip: Ipv6Addr = text.parse().map_err(|_| ValueError::BadIpv6)?;
        return Value::from_magnitude(&ip.octets(), bits);
    }
    let n = PyInt::parse(text, Base::Auto).ok_or(ValueError::NotAnInteger)?;
    if n.negative {
        return Ok(Value::zero(bits));
    }
    n.to_magnitude(byte_len(bits))
        .ok_or(ValueError::TooLarge)
        .and_then(|m| Value::from_magnitude(&m, bits))
}

/// `ipv4Addr_to_bytes`: four `int()` parts. runtime_CLI lets a part above
/// 255 through to `struct.pack`, which raises and ends the CLI; here it is
/// "Invalid IPv4 address".
fn parse_ipv4(text: &str) -> Result<Vec<u8>, ValueError> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return Err(ValueError::BadIpv4);
    }
    parts
        .iter()
        .map(|p| octet(p, Base::Ten).ok_or(ValueError::BadIpv4))
        .collect()
}

/// `macAddr_to_bytes`: six `int(part, 16)` parts (so `0x1f` is a part).
fn parse_mac(text: &str) -> Result<Vec<u8>, ValueError> {
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() != 6 {
        return Err(ValueError::BadMac);
    }
    parts
        .iter()
        .map(|p| octet(p, Base::Sixteen).ok_or(ValueError::BadMac))
        .collect()
}

fn octet(part: &str, base: Base) -> Option<u8> {
    let n = PyInt::parse(part, base)?;
    let m = n.to_magnitude(1)?;
    // A negative part would make struct.pack raise too.
    if n.negative && m[0] != 0 {
        return None;
    }
    Some(m[0])
}

/// How Python's `int()` is called.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Base {
    /// `int(s, 0)`: the prefix picks the base; decimal has no leading zeros.
    Auto,
    /// `int(s)`: decimal, leading zeros allowed.
    Ten,
    /// `int(s, 16)`: hex, an optional `0x` prefix.
    Sixteen,
}

/// A Python integer literal, checked but not yet converted: its sign, base
/// and digit values (most significant first, underscores removed).
#[derive(Debug)]
pub(crate) struct PyInt {
    pub(crate) negative: bool,
    radix: u32,
    digits: Vec<u8>,
}

impl PyInt {
    /// Checks `text` as Python's `int(text, base)` would accept it.
    pub(crate) fn parse(text: &str, base: Base) -> Option<PyInt> {
        let s = text.trim();
        let (negative, s) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let lower = s.get(..2).map(str::to_ascii_lowercase);
        let prefixed = |p: &str| lower.as_deref() == Some(p);
        let (radix, body, after_prefix) = match base {
            Base::Auto if prefixed("0x") => (16, &s[2..], true),
            Base::Auto if prefixed("0o") => (8, &s[2..], true),
            Base::Auto if prefixed("0b") => (2, &s[2..], true),
            Base::Auto | Base::Ten => (10, s, false),
            Base::Sixteen if prefixed("0x") => (16, &s[2..], true),
            Base::Sixteen => (16, s, false),
        };
        let digits = digits(body, radix, after_prefix)?;
        // int(s, 0) refuses "010" (but takes "000").
        let leading_zero = base == Base::Auto && radix == 10 && digits.len() > 1 && digits[0] == 0;
        if leading_zero && digits.iter().any(|&d| d != 0) {
            return None;
        }
        Some(PyInt {
            negative,
            radix,
            digits,
        })
    }

    /// The magnitude as big-endian bytes of exactly `width` bytes, or `None`
    /// if it does not fit. Work is bounded by digits x width.
    pub(crate) fn to_magnitude(&self, width: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; width];
        for &d in &self.digits {
            let mut carry = u32::from(d);
            for b in out.iter_mut().rev() {
                let v = u32::from(*b) * self.radix + carry;
                *b = v as u8;
                carry = v >> 8;
            }
            if carry != 0 {
                return None;
            }
        }
        Some(out)
    }

    /// The value as an `i64`, if it fits (handles, indices, counts).
    pub(crate) fn to_i64(&self) -> Option<i64> {
        let m = self.to_magnitude(8)?;
        let v = u64::from_be_bytes(m.try_into().ok()?);
        if self.negative {
            0i64.checked_sub_unsigned(v)
        } else {
            i64::try_from(v).ok()
        }
    }
}

/// Digit values of `body` in `radix`, with Python's underscore rule: single
/// underscores between digits, and one right after a base prefix.
fn digits(body: &str, radix: u32, after_prefix: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut prev_underscore = false;
    for (i, c) in body.chars().enumerate() {
        if c == '_' {
            let allowed = if i == 0 {
                after_prefix
            } else {
                !prev_underscore
            };
            if !allowed {
                return None;
            }
            prev_underscore = true;
            continue;
        }
        out.push(c.to_digit(radix)? as u8);
        prev_underscore = false;
    }
    if out.is_empty() || prev_underscore {
        return None;
    }
    Some(out)
}

/// Parses a Python `int(text)` (decimal) into an `i64`: runtime_CLI's
/// handles, indices, counts and priorities.
pub fn parse_py_int(text: &str) -> Option<i64> {
    PyInt::parse(text, Base::Ten)?.to_i64()
}

/// Parses a Python `int(text, 0)` (prefix picks the base) into an `i64`.
pub fn parse_py_int_auto(text: &str) -> Option<i64> {
    PyInt::parse(text, Base::Auto)?.to_i64()
}

#[cfg(test)]
#[path = "value_tests.rs"]
mod tests;
