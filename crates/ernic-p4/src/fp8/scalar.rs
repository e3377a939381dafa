//! Scalar conversions between the fp8 formats and f32, f64, f16 and bf16,
//! all bit-level and branch-light so the region loops can inline them.
//!
//! Decoding (fp8 to anything wider) is a lookup in a 256-entry table built
//! at compile time from the OFP8 formula; it is exact. Encoding to fp8 is
//! one round-to-nearest-even: the normal range by integer arithmetic on the
//! wide float's bits (the carry out of the mantissa bumps the exponent, as
//! it should), the subnormal range by one hardware addition of a constant
//! whose ulp is the fp8 subnormal quantum (the FPU does the RNE). f16 and
//! bf16 inputs widen exactly to f32 first, so they too see one rounding.

use super::{Fp8, Overflow};

/// The constants of one fp8 format that encoding and decoding use.
struct Spec {
    /// Mantissa (trailing significand) bits: 3 or 2.
    man_bits: u32,
    /// Exponent bias: 7 or 15.
    bias: u32,
    /// The largest finite positive code: 0x7e (448) or 0x7b (57344).
    max_code: u32,
    /// The NaN code this module emits (sign bit clear).
    nan: u32,
    /// What a non-saturating overflow gives: NaN (E4M3) or infinity (E5M2).
    overflow: u32,
    /// Whether `S.1…1.00` is an infinity (E5M2) or a normal number (E4M3).
    has_inf: bool,
}

const E4M3: Spec = Spec {
    man_bits: 3,
    bias: 7,
    max_code: 0x7e,
    nan: 0x7f,
    overflow: 0x7f,
    has_inf: false,
};

const E5M2: Spec = Spec {
    man_bits: 2,
    bias: 15,
    max_code: 0x7b,
    nan: 0x7e,
    overflow: 0x7c,
    has_inf: true,
};

impl Fp8 {
    const fn spec(self) -> &'static Spec {
        match self {
            Fp8::E4M3 => &E4M3,
            Fp8::E5M2 => &E5M2,
        }
    }

    /// The exact value of `code` as f32 (NaN codes give a quiet NaN with the
    /// code's sign, E5M2 infinities give f32 infinities).
    #[inline]
    pub fn to_f32(self, code: u8) -> f32 {
        self.table()[code as usize]
    }

    /// The 256-entry decode table, `code` to f32.
    #[inline]
    pub(super) fn table(self) -> &'static [f32; 256] {
        match self {
            Fp8::E4M3 => &DEC_E4M3,
            Fp8::E5M2 => &DEC_E5M2,
        }
    }

    /// `x` rounded to nearest-even in this format, overflow per `o`.
    #[inline]
    pub fn from_f32(self, x: f32, o: Overflow) -> u8 {
        match self {
            Fp8::E4M3 => encode_f32(&E4M3, x, o),
            Fp8::E5M2 => encode_f32(&E5M2, x, o),
        }
    }

    /// `x` rounded to nearest-even in this format, overflow per `o`: one
    /// rounding from f64 (products and sums of fp8 and f32 values are exact
    /// in f64, so region ops round them once through here).
    #[inline]
    pub fn from_f64(self, x: f64, o: Overflow) -> u8 {
        match self {
            Fp8::E4M3 => encode_f64(&E4M3, x, o),
            Fp8::E5M2 => encode_f64(&E5M2, x, o),
        }
    }

    /// The exact value of `code` as IEEE binary16 bits (NaN as the quiet
    /// NaN `S.11111.1000000000`).
    #[inline]
    pub fn to_f16_bits(self, code: u8) -> u16 {
        match self {
            Fp8::E4M3 => F16_E4M3[code as usize],
            Fp8::E5M2 => F16_E5M2[code as usize],
        }
    }

    /// IEEE binary16 bits `h` rounded once to this format, overflow per `o`.
    #[inline]
    pub fn from_f16_bits(self, h: u16, o: Overflow) -> u8 {
        self.from_f32(f16_bits_to_f32(h), o)
    }

    /// The exact value of `code` as bfloat16 bits (NaN as the quiet NaN
    /// 0x7fc0 with the code's sign).
    #[inline]
    pub fn to_bf16_bits(self, code: u8) -> u16 {
        (self.to_f32(code).to_bits() >> 16) as u16
    }

    /// bfloat16 bits `b` rounded once to this format, overflow per `o`.
    #[inline]
    pub fn from_bf16_bits(self, b: u16, o: Overflow) -> u8 {
        self.from_f32(bf16_bits_to_f32(b), o)
    }

    /// The largest finite positive code (0x7e, 448; 0x7b, 57344).
    pub const fn max_code(self) -> u8 {
        self.spec().max_code as u8
    }

    /// The NaN code (sign clear) this module emits: 0x7f or 0x7e.
    pub const fn nan_code(self) -> u8 {
        self.spec().nan as u8
    }

    /// Whether `code` is a NaN of this format.
    pub const fn is_nan(self, code: u8) -> bool {
        match self {
            Fp8::E4M3 => code & 0x7f == 0x7f,
            Fp8::E5M2 => code & 0x7f > 0x7c,
        }
    }
}

/// One RNE from f32 bits. Every path is computed and one selected, so that
/// a loop over it has no data-dependent branches.
#[inline(always)]
fn encode_f32(s: &Spec, x: f32, o: Overflow) -> u8 {
    let bits = x.to_bits();
    let sign = (bits >> 24) & 0x80;
    let abs = bits & 0x7fff_ffff;
    let shift = 23 - s.man_bits;
    // Normal range: rebias the exponent, then round the dropped bits (ties
    // to the even result); a carry out of the mantissa bumps the exponent.
    let rebased = abs.wrapping_sub((127 - s.bias) << 23);
    let normal = rebased.wrapping_add((1 << (shift - 1)) - 1 + ((abs >> shift) & 1)) >> shift;
    // Subnormal range: adding 2^(24 - bias - man_bits), whose ulp is the
    // fp8 subnormal quantum 2^(1 - bias - man_bits), makes the FPU round
    // |x| to a whole number of quanta; that number is the code (the min
    // normal's code when it rounds up to it).
    let magic = f32::from_bits((127 + 24 - s.bias - s.man_bits) << 23);
    let sub = (f32::from_bits(abs) + magic)
        .to_bits()
        .wrapping_sub(magic.to_bits());
    let min_normal = (128 - s.bias) << 23;
    let overflow = match o {
        Overflow::Saturate => s.max_code,
        Overflow::NonSaturate => s.overflow,
    };
    let code = if abs > 0x7f80_0000 {
        s.nan
    } else if abs < min_normal {
        sub
    } else if normal > s.max_code {
        // Also ±infinity: its rebased bits are far past the max code.
        overflow
    } else {
        normal
    };
    (code | sign) as u8
}

/// One RNE from f64 bits: [`encode_f32`] with f64's field widths.
#[inline(always)]
fn encode_f64(s: &Spec, x: f64, o: Overflow) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 56) & 0x80) as u32;
    let abs = bits & 0x7fff_ffff_ffff_ffff;
    let shift = 52 - s.man_bits as u64;
    let rebased = abs.wrapping_sub(((1023 - s.bias) as u64) << 52);
    let normal = rebased.wrapping_add((1 << (shift - 1)) - 1 + ((abs >> shift) & 1)) >> shift;
    let magic = f64::from_bits(((1023 + 53 - s.bias - s.man_bits) as u64) << 52);
    let sub = (f64::from_bits(abs) + magic)
        .to_bits()
        .wrapping_sub(magic.to_bits());
    let min_normal = ((1024 - s.bias) as u64) << 52;
    let overflow = match o {
        Overflow::Saturate => s.max_code,
        Overflow::NonSaturate => s.overflow,
    };
    let code = if abs > 0x7ff0_0000_0000_0000 {
        s.nan
    } else if abs < min_normal {
        sub as u32
    } else if normal > s.max_code as u64 {
        overflow
    } else {
        normal as u32
    };
    (code | sign) as u8
}

/// The f32 bits of fp8 `code` from the OFP8 formula:
/// (-1)^s 2^(e-bias) (1 + m/2^k), subnormal (-1)^s 2^(1-bias) (m/2^k).
const fn decode_bits(s: &Spec, code: u8) -> u32 {
    let sign = ((code as u32) & 0x80) << 24;
    let mag = (code as u32) & 0x7f;
    let k = s.man_bits;
    let e = mag >> k;
    let m = mag & ((1 << k) - 1);
    let e_max = 0x7f >> k;
    if mag > s.max_code {
        if s.has_inf && mag == e_max << k {
            return sign | 0x7f80_0000;
        }
        return sign | 0x7fc0_0000;
    }
    if e != 0 {
        return sign | ((e + 127 - s.bias) << 23) | (m << (23 - k));
    }
    if m == 0 {
        return sign;
    }
    // Subnormal: m × 2^(1 - bias - k), normalised. p is m's leading bit.
    let p = 31 - m.leading_zeros();
    let exp = p + 1 + 127 - s.bias - k;
    sign | (exp << 23) | ((m ^ (1 << p)) << (23 - p))
}

const fn f32_table(s: &Spec) -> [f32; 256] {
    let mut t = [0.0f32; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = f32::from_bits(decode_bits(s, c as u8));
        c += 1;
    }
    t
}

const fn f16_table(s: &Spec) -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut c = 0;
    while c < 256 {
        // Exact: every fp8 value is an f16 value.
        t[c] = f32_to_f16_bits(f32::from_bits(decode_bits(s, c as u8)));
        c += 1;
    }
    t
}

static DEC_E4M3: [f32; 256] = f32_table(&E4M3);
static DEC_E5M2: [f32; 256] = f32_table(&E5M2);
static F16_E4M3: [u16; 256] = f16_table(&E4M3);
static F16_E5M2: [u16; 256] = f16_table(&E5M2);

/// f32 to IEEE binary16 bits, round to nearest-even; overflow (a rounded
/// magnitude of 65536 or more, from 65520 up) gives ±infinity, NaN a quiet
/// NaN keeping the sign and the top payload bits (as `half` and F16C do).
#[inline]
pub const fn f32_to_f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let abs = b & 0x7fff_ffff;
    if abs > 0x7f80_0000 {
        return sign | 0x7e00 | ((abs >> 13) & 0x3ff) as u16;
    }
    if abs >= 0x3880_0000 {
        // At least f16's min normal 2^-14: rebias and round; anything that
        // carries to exponent 31 (including infinity itself) is infinity.
        let r = abs - (112 << 23);
        let h = (r + 0xfff + ((r >> 13) & 1)) >> 13;
        return if h >= 0x7c00 {
            sign | 0x7c00
        } else {
            sign | h as u16
        };
    }
    if abs < 0x3300_0000 {
        // Below 2^-25, half the min subnormal: rounds to zero.
        return sign;
    }
    // Subnormal f16: (1.m) × 2^(e-150) in quanta of 2^-24.
    let e = abs >> 23;
    let shift = 126 - e;
    let m = (abs & 0x7f_ffff) | 0x80_0000;
    let h = (m + (1 << (shift - 1)) - 1 + ((m >> shift) & 1)) >> shift;
    sign | h as u16
}

/// IEEE binary16 bits to f32, exactly (NaN stays NaN with its payload,
/// quieted).
#[inline]
pub const fn f16_bits_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let e = (h >> 10) & 0x1f;
    let m = h & 0x3ff;
    let bits = if e == 0x1f {
        if m == 0 {
            sign | 0x7f80_0000
        } else {
            sign | 0x7fc0_0000 | (m << 13)
        }
    } else if e != 0 {
        sign | ((e + 112) << 23) | (m << 13)
    } else if m == 0 {
        sign
    } else {
        // m × 2^-24, normalised: p is m's leading bit.
        let p = 31 - m.leading_zeros();
        sign | ((p + 103) << 23) | ((m ^ (1 << p)) << (23 - p))
    };
    f32::from_bits(bits)
}

/// f32 to bfloat16 bits, round to nearest-even; overflow gives ±infinity
/// (the carry runs into the exponent), NaN a quiet NaN keeping the sign and
/// the top payload bits.
#[inline]
pub const fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if b & 0x7fff_ffff > 0x7f80_0000 {
        return ((b >> 16) | 0x0040) as u16;
    }
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// bfloat16 bits to f32, exactly (NaN quieted).
#[inline]
pub const fn bf16_bits_to_f32(b: u16) -> f32 {
    let bits = (b as u32) << 16;
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return f32::from_bits(bits | 0x0040_0000);
    }
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte-exact: the spec's characteristic codes decode to its values.
    #[test]
    fn characteristic_codes() {
        let e4 = |c| Fp8::E4M3.to_f32(c);
        let e5 = |c| Fp8::E5M2.to_f32(c);
        assert_eq!(e4(0x7e), 448.0);
        assert_eq!(e4(0x08), 2f32.powi(-6));
        assert_eq!(e4(0x07), 0.875 * 2f32.powi(-6));
        assert_eq!(e4(0x01), 2f32.powi(-9));
        assert_eq!(e4(0x80).to_bits(), 0x8000_0000);
        assert!(e4(0x7f).is_nan() && e4(0xff).is_nan());
        assert_eq!(e4(0x78), 256.0, "S.1111.000 is a number in E4M3");
        assert_eq!(e5(0x7b), 57344.0);
        assert_eq!(e5(0x04), 2f32.powi(-14));
        assert_eq!(e5(0x03), 0.75 * 2f32.powi(-14));
        assert_eq!(e5(0x01), 2f32.powi(-16));
        assert_eq!(e5(0x7c), f32::INFINITY);
        assert_eq!(e5(0xfc), f32::NEG_INFINITY);
        assert!(e5(0x7d).is_nan() && e5(0x7e).is_nan() && e5(0xff).is_nan());
    }

    #[test]
    fn encode_edges() {
        use Overflow::*;
        let e4 = |x, o| Fp8::E4M3.from_f32(x, o);
        let e5 = |x, o| Fp8::E5M2.from_f32(x, o);
        assert_eq!(e4(464.0, NonSaturate), 0x7e, "464 is a tie, 448 is even");
        assert_eq!(e4(464.0001, NonSaturate), 0x7f);
        assert_eq!(e4(-464.0001, Saturate), 0xfe);
        assert_eq!(e4(f32::INFINITY, NonSaturate), 0x7f);
        assert_eq!(
            e5(61440.0, NonSaturate),
            0x7c,
            "61440 is a tie, 2^16 is even"
        );
        assert_eq!(e5(61439.996, NonSaturate), 0x7b);
        assert_eq!(e5(-61440.0, Saturate), 0xfb);
        assert_eq!(e4(2f32.powi(-10), Saturate), 0x00, "half the min subnormal");
        assert_eq!(e4(-2f32.powi(-10), Saturate), 0x80);
        assert_eq!(e4(1.5 * 2f32.powi(-9), Saturate), 0x02, "tie to even 2");
        assert_eq!(
            e4(15.5 * 2f32.powi(-10), Saturate),
            0x08,
            "up into min normal"
        );
        assert_eq!(e5(f32::NAN, Saturate), 0x7e);
        assert_eq!(e4(-f32::NAN, Saturate), 0xff);
    }

    #[test]
    fn f64_matches_f32_on_f32_inputs() {
        for bits in (0..=u32::MAX).step_by(4099) {
            let x = f32::from_bits(bits);
            for f in [Fp8::E4M3, Fp8::E5M2] {
                for o in [Overflow::Saturate, Overflow::NonSaturate] {
                    assert_eq!(f.from_f32(x, o), f.from_f64(x as f64, o), "{bits:#x}");
                }
            }
        }
    }
}
