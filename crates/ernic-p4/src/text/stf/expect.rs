//! An `expect` line's packet and p4c's comparison of it with a packet that
//! came out (`compare_pkt` in p4c's `tools/testutils.py`).
//!
//! The rule there: the expected text is hex nibbles, `*` matching any
//! nibble; a trailing `$` demands the packet end exactly there; without it
//! the expected nibbles need only be a prefix of the packet (a longer
//! packet passes, a shorter one fails). Comparison is nibble by nibble,
//! case-insensitive, so an odd number of expected nibbles is allowed.

use std::fmt;

/// The packet an `expect` line describes.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ExpectedPacket {
    /// One entry per nibble: `Some(v)` must equal, `None` is `*`.
    pub nibbles: Vec<Option<u8>>,
    /// The line ended in `$`: the packet must be exactly this long.
    pub exact_len: bool,
}

/// Why a packet did not match, worded as p4c's `compare_pkt` logs it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Mismatch {
    /// The packet is longer than an exact (`$`) expectation.
    TooLong {
        /// The packet, in hex digits.
        received: usize,
        /// The expectation, in hex digits.
        expected: usize,
    },
    /// The packet is shorter than the expectation.
    TooShort {
        /// The packet, in hex digits.
        received: usize,
        /// The expectation, in hex digits.
        expected: usize,
    },
    /// A nibble differs.
    Differs {
        /// Index of the first differing nibble.
        position: usize,
        /// The expected digit (upper-case hex).
        expected: char,
        /// The received digit.
        received: char,
        /// The whole packet, upper-case hex.
        received_hex: String,
        /// The whole expectation, upper-case hex with `*`.
        expected_hex: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::TooLong { received, expected } => {
                write!(
                    f,
                    "Received packet too long {received} vs {expected} (in units of hex digits)"
                )
            }
            Mismatch::TooShort { received, expected } => {
                write!(f, "Received packet too short {received} vs {expected}")
            }
            Mismatch::Differs {
                position,
                expected,
                received,
                received_hex,
                expected_hex,
            } => write!(
                f,
                "Packet different at position {position}: expected {expected}, received {received}\n\
                 Received packet\n {received_hex}\nExpected packet\n {expected_hex}"
            ),
        }
    }
}

fn hex_digit(v: u8) -> char {
    char::from_digit(u32::from(v), 16).map_or('?', |c| c.to_ascii_uppercase())
}

impl ExpectedPacket {
    /// Parses expectation text: hex digits and `*`, whitespace ignored, an
    /// optional final `$`. `None` if anything else is in it.
    pub fn parse(text: &str) -> Option<ExpectedPacket> {
        let text: String = text.split_whitespace().collect();
        let (body, exact_len) = match text.strip_suffix('$') {
            Some(b) => (b, true),
            None => (text.as_str(), false),
        };
        let nibbles = body
            .chars()
            .map(|c| {
                if c == '*' {
                    Some(None)
                } else {
                    c.to_digit(16).map(|d| Some(d as u8))
                }
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ExpectedPacket { nibbles, exact_len })
    }

    /// The expectation as p4c prints it: upper-case hex, `*`, and `$` if exact.
    pub fn to_text(&self) -> String {
        let mut s: String = self
            .nibbles
            .iter()
            .map(|n| n.map_or('*', hex_digit))
            .collect();
        if self.exact_len {
            s.push('$');
        }
        s
    }

    /// Whether `actual` passes.
    pub fn matches(&self, actual: &[u8]) -> bool {
        self.compare(actual).is_ok()
    }

    /// Compares as `compare_pkt` does: length first (too long only counts
    /// with `$`), then nibbles in order.
    pub fn compare(&self, actual: &[u8]) -> Result<(), Mismatch> {
        let received = actual.len() * 2;
        let expected = self.nibbles.len();
        if self.exact_len && received > expected {
            return Err(Mismatch::TooLong { received, expected });
        }
        if received < expected {
            return Err(Mismatch::TooShort { received, expected });
        }
        let nibble = |i: usize| {
            let b = actual[i / 2];
            if i % 2 == 0 { b >> 4 } else { b & 0xf }
        };
        for (i, want) in self.nibbles.iter().enumerate() {
            let Some(want) = *want else { continue };
            let got = nibble(i);
            if got != want {
                let mut expected_hex = self.to_text();
                if self.exact_len {
                    expected_hex.pop();
                }
                return Err(Mismatch::Differs {
                    position: i,
                    expected: hex_digit(want),
                    received: hex_digit(got),
                    received_hex: (0..received).map(|j| hex_digit(nibble(j))).collect(),
                    expected_hex,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_rule_without_dollar_exact_rule_with_it() {
        let e = ExpectedPacket::parse("0a0b").unwrap();
        assert!(e.matches(&[0x0a, 0x0b]));
        assert!(e.matches(&[0x0a, 0x0b, 0xff]));
        assert_eq!(
            e.compare(&[0x0a]),
            Err(Mismatch::TooShort {
                received: 2,
                expected: 4
            })
        );
        let e = ExpectedPacket::parse("0a 0b $").unwrap();
        assert!(e.matches(&[0x0a, 0x0b]));
        let err = e.compare(&[0x0a, 0x0b, 0xff]).unwrap_err();
        assert_eq!(
            err,
            Mismatch::TooLong {
                received: 6,
                expected: 4
            }
        );
        assert_eq!(
            err.to_string(),
            "Received packet too long 6 vs 4 (in units of hex digits)"
        );
        // "$" alone: only an empty packet.
        let e = ExpectedPacket::parse("$").unwrap();
        assert!(e.matches(&[]));
        assert!(!e.matches(&[0]));
    }

    #[test]
    fn a_star_matches_any_one_nibble_and_case_is_ignored() {
        let e = ExpectedPacket::parse("01 **** ** ** ** $").unwrap();
        assert!(e.matches(&[1, 0xde, 0xad, 2, 3, 4]));
        assert!(!e.matches(&[2, 0xde, 0xad, 2, 3, 4]));
        let e = ExpectedPacket::parse("A*").unwrap();
        assert!(e.matches(&[0xa0]) && e.matches(&[0xaf]));
        assert!(!e.matches(&[0xb0]));
        assert!(ExpectedPacket::parse("ab").unwrap().matches(&[0xAB]));
        // An odd count compares the high nibble of the last byte only.
        assert!(ExpectedPacket::parse("abc").unwrap().matches(&[0xab, 0xcd]));
        assert_eq!(ExpectedPacket::parse("ab$cd"), None);
        assert_eq!(ExpectedPacket::parse("xy"), None);
    }

    #[test]
    fn a_mismatch_names_the_first_differing_nibble() {
        let e = ExpectedPacket::parse("00 00 ** 02").unwrap();
        let err = e.compare(&[0, 0x10, 0xff, 0x02]).unwrap_err();
        assert_eq!(
            err,
            Mismatch::Differs {
                position: 2,
                expected: '0',
                received: '1',
                received_hex: "0010FF02".into(),
                expected_hex: "0000**02".into(),
            }
        );
        assert!(
            err.to_string()
                .starts_with("Packet different at position 2: expected 0, received 1")
        );
        assert_eq!(e.to_text(), "0000**02");
    }
}
