//! Match-key tokens as runtime_CLI's `parse_match_key` reads them: one token
//! per key field, its shape set by the field's match kind (`V`, `V/LEN`,
//! `V&&&MASK`, `LO->HI`, and `0`/`1` for the old `valid` kind).
//!
//! The caller passes the kind and width from the program; this module only
//! splits and converts. `optional` keys are emitted by p4c's bmv2 back end
//! as `ternary` (`backends/bmv2/common/control.h`), and runtime_CLI's docs
//! say they are "in all ways identical to `ternary`" for the CLI, so
//! [`MatchKind::Optional`] takes `V&&&MASK` with any mask, as bmv2 does.
//! The error texts are runtime_CLI's; the CLI prints them after
//! "Invalid match key: " ([`crate::text::cli::CliError::MatchKey`]).

use thiserror::Error;

use super::value::{PyInt, Value, ValueError, parse_value};

/// A key field's match kind, as bmv2's JSON names it (`match_type`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum MatchKind {
    /// `exact`: a value.
    Exact,
    /// `lpm`: `value/prefix_length`.
    Lpm,
    /// `ternary`: `value&&&mask`.
    Ternary,
    /// `optional` (P4_16): written like ternary.
    Optional,
    /// `range`: `low->high`.
    Range,
    /// `valid` (P4_14's header validity): `0` or `1`.
    Valid,
}

impl MatchKind {
    /// The kind for a JSON `match_type` string, if bmv2 knows it.
    pub fn from_json(name: &str) -> Option<MatchKind> {
        Some(match name {
            "exact" => MatchKind::Exact,
            "lpm" => MatchKind::Lpm,
            "ternary" => MatchKind::Ternary,
            "optional" => MatchKind::Optional,
            "range" => MatchKind::Range,
            "valid" => MatchKind::Valid,
            _ => return None,
        })
    }

    /// Whether an entry of a table with this (table-level) match type needs
    /// a priority: runtime_CLI pops one for `ternary` and `range` tables.
    pub fn needs_priority(self) -> bool {
        matches!(
            self,
            MatchKind::Ternary | MatchKind::Optional | MatchKind::Range
        )
    }
}

/// One parsed match-key field.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum MatchText {
    /// `exact` (a key matches when equal).
    Exact(Value),
    /// `lpm`: the first `prefix_len` bits must match.
    Lpm {
        /// The prefix as written (bits past the prefix are kept as given).
        value: Value,
        /// The prefix length in bits, at most the field width.
        prefix_len: u32,
    },
    /// `ternary` / `optional`: matches `k` when `k & mask == value & mask`.
    Ternary {
        /// The value.
        value: Value,
        /// The mask (1 bits are compared).
        mask: Value,
    },
    /// `range`: matches `lo <= k <= hi`.
    Range {
        /// The low end, inclusive.
        lo: Value,
        /// The high end, inclusive.
        hi: Value,
    },
    /// `valid`: whether the header must be valid.
    Valid(bool),
}

/// Why a match-key token was refused. The texts are runtime_CLI's
/// `UIn_MatchKeyError` messages, except where marked as ernic's (places
/// where runtime_CLI raises a Python exception it does not catch).
#[derive(Clone, PartialEq, Eq, Debug, Error)]
pub enum MatchError {
    /// A value inside the token was refused.
    #[error("Error while parsing {field} - {error}")]
    Param {
        /// The part of the token that was being read.
        field: String,
        /// Why.
        error: ValueError,
    },
    /// An lpm token without exactly one `/`.
    #[error("Invalid LPM value {0}, use '/' to separate prefix and length")]
    BadLpm(String),
    /// (ernic's wording: runtime_CLI's `int(length)` raises.) The prefix
    /// length is not a decimal integer.
    #[error("Invalid LPM value {0}, the prefix length must be a decimal integer")]
    BadPrefixLength(String),
    /// (ernic's wording: bmv2's server refuses it.) The prefix length is
    /// negative or larger than the field.
    #[error("Invalid LPM value {text}, prefix length {len} is not within the field's {bits} bits")]
    PrefixTooLong {
        /// The token.
        text: String,
        /// Its prefix length.
        len: i64,
        /// The field width.
        bits: u32,
    },
    /// A ternary token without exactly one `&&&`.
    #[error("Invalid ternary value {0}, use '&&&' to separate key and mask")]
    BadTernary(String),
    /// A range token without exactly one `->`.
    #[error("Invalid range value {0}, use '->' to separate range start and range end")]
    BadRange(String),
    /// A range whose start is above its end (runtime_CLI's text says "less").
    #[error("start is less than end in expression {0}")]
    RangeStartAfterEnd(String),
    /// (ernic's wording: runtime_CLI's `int(field)` raises.) A valid key
    /// that is not an integer.
    #[error("Invalid valid value {0}, use 0 or 1")]
    BadValid(String),
}

/// Splits `text` on `sep`, requiring exactly two parts (Python's
/// `a, b = text.split(sep)`).
fn split2<'a>(text: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let mut it = text.split(sep);
    let (a, b) = (it.next()?, it.next()?);
    it.next().is_none().then_some((a, b))
}

fn value(field: &str, bits: u32) -> Result<Value, MatchError> {
    parse_value(field, bits).map_err(|error| MatchError::Param {
        field: field.to_string(),
        error,
    })
}

/// Parses one match-key token for a field of `kind` and `bits`.
pub fn parse_match(text: &str, kind: MatchKind, bits: u32) -> Result<MatchText, MatchError> {
    match kind {
        MatchKind::Exact => Ok(MatchText::Exact(value(text, bits)?)),
        MatchKind::Lpm => {
            let (prefix, len) = split2(text, "/").ok_or_else(|| MatchError::BadLpm(text.into()))?;
            let value = value(prefix, bits)?;
            let len = PyInt::parse(len, super::value::Base::Ten)
                .and_then(|n| n.to_i64())
                .ok_or_else(|| MatchError::BadPrefixLength(text.into()))?;
            match u32::try_from(len) {
                Ok(prefix_len) if prefix_len <= bits => Ok(MatchText::Lpm { value, prefix_len }),
                _ => Err(MatchError::PrefixTooLong {
                    text: text.into(),
                    len,
                    bits,
                }),
            }
        }
        MatchKind::Ternary | MatchKind::Optional => {
            let (v, m) = split2(text, "&&&").ok_or_else(|| MatchError::BadTernary(text.into()))?;
            Ok(MatchText::Ternary {
                value: value(v, bits)?,
                mask: value(m, bits)?,
            })
        }
        MatchKind::Range => {
            let (lo, hi) = split2(text, "->").ok_or_else(|| MatchError::BadRange(text.into()))?;
            let (lo, hi) = (value(lo, bits)?, value(hi, bits)?);
            // Same length, so byte order is numeric order, as in Python.
            if lo.bytes > hi.bytes {
                return Err(MatchError::RangeStartAfterEnd(text.into()));
            }
            Ok(MatchText::Range { lo, hi })
        }
        MatchKind::Valid => {
            let n = PyInt::parse(text, super::value::Base::Ten)
                .ok_or_else(|| MatchError::BadValid(text.into()))?;
            let nonzero = n.to_magnitude(1).is_none_or(|m| m[0] != 0);
            Ok(MatchText::Valid(nonzero))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: u128, bits: u32) -> Value {
        Value::from_u128(x, bits).unwrap()
    }

    #[test]
    fn each_kind_parses_its_shape() {
        assert_eq!(
            parse_match("0x0a", MatchKind::Exact, 8),
            Ok(MatchText::Exact(v(10, 8)))
        );
        assert_eq!(
            parse_match("10.0.0.0/8", MatchKind::Lpm, 32),
            Ok(MatchText::Lpm {
                value: v(0x0a00_0000, 32),
                prefix_len: 8
            })
        );
        assert_eq!(
            parse_match("0x1234&&&0xff00", MatchKind::Ternary, 16),
            Ok(MatchText::Ternary {
                value: v(0x1234, 16),
                mask: v(0xff00, 16)
            })
        );
        // optional is written like ternary, any mask allowed.
        assert_eq!(
            parse_match("5&&&3", MatchKind::Optional, 8),
            Ok(MatchText::Ternary {
                value: v(5, 8),
                mask: v(3, 8)
            })
        );
        assert_eq!(
            parse_match("0->255", MatchKind::Range, 8),
            Ok(MatchText::Range {
                lo: v(0, 8),
                hi: v(255, 8)
            })
        );
        assert_eq!(
            parse_match("1", MatchKind::Valid, 1),
            Ok(MatchText::Valid(true))
        );
        assert_eq!(
            parse_match("0", MatchKind::Valid, 1),
            Ok(MatchText::Valid(false))
        );
        assert_eq!(
            parse_match("2", MatchKind::Valid, 1),
            Ok(MatchText::Valid(true))
        );
    }

    #[test]
    fn malformed_tokens_get_runtime_cli_wording() {
        let e = |t, k, b| parse_match(t, k, b).unwrap_err().to_string();
        assert_eq!(
            e("10.0.0.0", MatchKind::Lpm, 32),
            "Invalid LPM value 10.0.0.0, use '/' to separate prefix and length"
        );
        assert_eq!(
            e("1/2/3", MatchKind::Lpm, 32),
            "Invalid LPM value 1/2/3, use '/' to separate prefix and length"
        );
        assert_eq!(
            e("0x1234", MatchKind::Ternary, 16),
            "Invalid ternary value 0x1234, use '&&&' to separate key and mask"
        );
        assert_eq!(
            e("1-2", MatchKind::Range, 8),
            "Invalid range value 1-2, use '->' to separate range start and range end"
        );
        assert_eq!(
            e("9->3", MatchKind::Range, 8),
            "start is less than end in expression 9->3"
        );
        assert_eq!(
            e("zz&&&0xff", MatchKind::Ternary, 8),
            "Error while parsing zz - Invalid input, could not cast to integer, try in hex with 0x prefix"
        );
        assert_eq!(
            e("0x100", MatchKind::Exact, 8),
            "Error while parsing 0x100 - Parameter is too large"
        );
        assert_eq!(
            e("1.2.3/8", MatchKind::Lpm, 32),
            "Error while parsing 1.2.3 - Invalid IPv4 address"
        );
        assert!(matches!(
            parse_match("0/33", MatchKind::Lpm, 32),
            Err(MatchError::PrefixTooLong {
                len: 33,
                bits: 32,
                ..
            })
        ));
        assert!(matches!(
            parse_match("0/0x8", MatchKind::Lpm, 32),
            Err(MatchError::BadPrefixLength(_))
        ));
        assert!(matches!(
            parse_match("yes", MatchKind::Valid, 1),
            Err(MatchError::BadValid(_))
        ));
    }

    #[test]
    fn priority_is_needed_for_ternary_and_range_tables_only() {
        assert!(MatchKind::from_json("ternary").unwrap().needs_priority());
        assert!(MatchKind::from_json("range").unwrap().needs_priority());
        assert!(!MatchKind::from_json("lpm").unwrap().needs_priority());
        assert!(!MatchKind::from_json("exact").unwrap().needs_priority());
        assert_eq!(MatchKind::from_json("selector"), None);
    }
}
