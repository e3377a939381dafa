//! fp8: the OCP 8-bit floating point formats (OFP8, v1.0), E4M3 and E5M2,
//! as the P4 engine's elementwise externs use them over RDMA regions.
//!
//! This module promises bit-exact conversions: fp8 to f32, IEEE binary16
//! (f16) and bfloat16 (bf16) is exact; everything to fp8 (and f32 to f16 or
//! bf16) is one rounding, to nearest with ties to even, with the OCP spec's
//! two overflow modes ([`Overflow`]). f16 and bf16 travel as raw `u16` bits;
//! regions are byte slices with multi-byte elements little-endian, copied
//! out of guest memory by the caller (this module never sees guest memory).
//!
//! It must never allocate per element or per call on a region's hot loop:
//! decode tables are built at compile time, the fp8 sum tables once per
//! process ([`accumulate`]), and per-call tables ([`scale`], fp8-to-fp8
//! [`convert`]) live on the stack. It never panics on a region whose lengths
//! are wrong: those come back as [`Fp8Error`].
//!
//! The codes it emits for NaN are E4M3 `S.1111.111` (0x7f, 0xff with the
//! sign set) and E5M2 `S.11111.10` (0x7e, 0xfe), the quiet NaN; the sign of
//! the input NaN is kept.

mod region;
mod scalar;

pub use region::{accumulate, accumulate_into_f32, convert, quantize, scale};
pub use scalar::{bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits};

/// One of OFP8's two 8-bit formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fp8 {
    /// 1 sign, 4 exponent, 3 mantissa bits, bias 7; no infinities, NaN only
    /// `S.1111.111`; largest finite ±448, smallest subnormal 2^-9.
    E4M3,
    /// 1 sign, 5 exponent, 2 mantissa bits, bias 15; infinities
    /// `S.11111.00`, NaNs `S.11111.{01,10,11}`; largest finite ±57344,
    /// smallest subnormal 2^-16.
    E5M2,
}

/// What a conversion to fp8 does with a value whose rounded magnitude
/// exceeds the format's largest finite value, and with ±infinity.
///
/// "Overflow" is the OCP spec's: the value rounded to nearest-even as if the
/// exponent range were unbounded is larger than the max normal. For E4M3 the
/// would-be next value past 448 is 480 (`1.111 × 2^8`, odd), so 464, the
/// midpoint, rounds to 448 and does not overflow, while anything above 464
/// does. For E5M2 the next value past 57344 is 2^16 (even), so 61440, the
/// midpoint, overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// Overflow and ±infinity clamp to ±max normal; NaN stays NaN.
    Saturate,
    /// Overflow and ±infinity become E5M2 ±infinity, E4M3 NaN (sign kept).
    NonSaturate,
}

/// The element types a region can hold, for [`convert`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Element {
    /// IEEE binary32, 4 bytes little-endian.
    F32,
    /// IEEE binary16, 2 bytes little-endian.
    F16,
    /// bfloat16 (the top half of a binary32), 2 bytes little-endian.
    Bf16,
    /// OFP8 E4M3, 1 byte.
    E4M3,
    /// OFP8 E5M2, 1 byte.
    E5M2,
}

impl Element {
    /// The element's size in bytes.
    pub const fn size(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::F16 | Element::Bf16 => 2,
            Element::E4M3 | Element::E5M2 => 1,
        }
    }

    /// The fp8 format this element is, if it is one.
    pub const fn fp8(self) -> Option<Fp8> {
        match self {
            Element::E4M3 => Some(Fp8::E4M3),
            Element::E5M2 => Some(Fp8::E5M2),
            _ => None,
        }
    }
}

impl From<Fp8> for Element {
    fn from(f: Fp8) -> Self {
        match f {
            Fp8::E4M3 => Element::E4M3,
            Fp8::E5M2 => Element::E5M2,
        }
    }
}

/// Which of an operation's two regions an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The region read.
    Src,
    /// The region written (and, for accumulations, read).
    Dst,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Src => "source",
            Side::Dst => "destination",
        })
    }
}

/// Why a region operation refused its regions (it wrote nothing then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Fp8Error {
    /// A region's length is not a whole number of its elements.
    #[error("the {side} region's {len} bytes are not a whole number of {element:?} elements")]
    Ragged {
        /// The region at fault.
        side: Side,
        /// Its length in bytes.
        len: usize,
        /// The element type it was to hold.
        element: Element,
    },
    /// The two regions hold different numbers of elements.
    #[error("the destination holds {dst} elements but the source {src}")]
    CountMismatch {
        /// Elements in the destination.
        dst: usize,
        /// Elements in the source.
        src: usize,
    },
}
