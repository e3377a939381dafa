//! The fp8 scalar conversions against oracles we did not write: the
//! `float8` crate (a port of NVIDIA's cuda_fp8.hpp) for fp8, `half` for f16
//! and bf16, and the OCP OFP8 v1.0 spec's characteristic values and formula.
//!
//! Where float8 and OCP's modes differ, only what is comparable is compared:
//! - float8's `from_f32`/`from_f64` always saturate to the max finite value
//!   (its `SaturationType::NoSat` is never used), so it is the oracle for
//!   [`Overflow::Saturate`]; for [`Overflow::NonSaturate`] it is the oracle
//!   only where the value does not overflow by the spec's definition (E4M3
//!   |x| > 464, E5M2 |x| ≥ 61440, ±∞), and there the spec's codes are
//!   checked instead (E4M3 NaN 0x7f|sign, E5M2 ∞ 0x7c|sign).
//! - float8's E5M2 NaN code copies the input's top payload bits (0x7e or
//!   0x7f), and its decode drops a NaN's sign (it returns f16 0x7fff); NaN
//!   is compared as NaN, and our own NaN codes are checked against the spec.

use ernic_p4::fp8::{
    Fp8, Overflow, bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits,
};
use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use proptest::prelude::*;

const FORMATS: [Fp8; 2] = [Fp8::E4M3, Fp8::E5M2];
const MODES: [Overflow; 2] = [Overflow::Saturate, Overflow::NonSaturate];

fn oracle_decode(fmt: Fp8, code: u8) -> f32 {
    match fmt {
        Fp8::E4M3 => F8E4M3::from_bits(code).to_f32(),
        Fp8::E5M2 => F8E5M2::from_bits(code).to_f32(),
    }
}

/// What the oracle says `x` encodes to: `None` for "a NaN code".
fn oracle_encode(fmt: Fp8, x: f64, o: Overflow) -> Option<u8> {
    if x.is_nan() {
        return None;
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let overflows = match fmt {
        Fp8::E4M3 => x.abs() > 464.0,
        Fp8::E5M2 => x.abs() >= 61440.0,
    };
    if o == Overflow::NonSaturate && overflows {
        return Some(sign | if fmt == Fp8::E4M3 { 0x7f } else { 0x7c });
    }
    Some(match fmt {
        Fp8::E4M3 => F8E4M3::from_f64(x).to_bits(),
        Fp8::E5M2 => F8E5M2::from_f64(x).to_bits(),
    })
}

fn check_encoded(fmt: Fp8, got: u8, want: Option<u8>, what: &str) {
    match want {
        Some(w) => assert_eq!(got, w, "{fmt:?} {what}: got {got:#04x}, want {w:#04x}"),
        None => assert!(fmt.is_nan(got), "{fmt:?} {what}: got {got:#04x}, want NaN"),
    }
}

#[test]
fn every_code_decodes_as_float8_does() {
    for fmt in FORMATS {
        for c in 0..=255u8 {
            let (got, want) = (fmt.to_f32(c), oracle_decode(fmt, c));
            if want.is_nan() {
                assert!(got.is_nan(), "{fmt:?} {c:#04x}");
                assert_eq!(got.is_sign_negative(), c & 0x80 != 0, "NaN sign kept");
            } else {
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{fmt:?} {c:#04x}: {got} vs {want}"
                );
            }
        }
    }
}

/// The OFP8 spec's tables (section 4): each format's characteristic values.
#[test]
// The codes are written as the spec writes them, grouped S.EEEE.MMM.
#[allow(clippy::unusual_byte_groupings)]
fn characteristic_values_from_the_spec() {
    let p = |e: i32| 2f64.powi(e);
    // (format, code, value); NaN and inf listed apart.
    let table: &[(Fp8, u8, f64)] = &[
        (Fp8::E4M3, 0b0_1111_110, 448.0),
        (Fp8::E4M3, 0b1_1111_110, -448.0),
        (Fp8::E4M3, 0b0_0001_000, p(-6)),
        (Fp8::E4M3, 0b0_0000_111, 0.875 * p(-6)),
        (Fp8::E4M3, 0b0_0000_001, p(-9)),
        (Fp8::E4M3, 0b0_0000_000, 0.0),
        (Fp8::E4M3, 0b1_0000_000, -0.0),
        (Fp8::E4M3, 0b0_1111_000, 256.0),
        (Fp8::E4M3, 0b0_0111_000, 1.0),
        (Fp8::E5M2, 0b0_11110_11, 57344.0),
        (Fp8::E5M2, 0b1_11110_11, -57344.0),
        (Fp8::E5M2, 0b0_00001_00, p(-14)),
        (Fp8::E5M2, 0b0_00000_11, 0.75 * p(-14)),
        (Fp8::E5M2, 0b0_00000_01, p(-16)),
        (Fp8::E5M2, 0b0_00000_00, 0.0),
        (Fp8::E5M2, 0b1_00000_00, -0.0),
        (Fp8::E5M2, 0b0_01111_00, 1.0),
    ];
    for &(fmt, c, v) in table {
        let got = fmt.to_f32(c) as f64;
        assert_eq!(got, v, "{fmt:?} {c:#010b}");
        assert_eq!(
            got.is_sign_negative(),
            v.is_sign_negative(),
            "{fmt:?} {c:#010b} sign"
        );
    }
    assert!(Fp8::E4M3.to_f32(0x7f).is_nan() && Fp8::E4M3.to_f32(0xff).is_nan());
    assert_eq!(Fp8::E5M2.to_f32(0x7c), f32::INFINITY);
    assert_eq!(Fp8::E5M2.to_f32(0xfc), f32::NEG_INFINITY);
    for c in [0x7d, 0x7e, 0x7f, 0xfd, 0xfe, 0xff] {
        assert!(Fp8::E5M2.to_f32(c).is_nan(), "{c:#04x}");
    }
    // Exactly two NaN codes in E4M3, six in E5M2; one E5M2 infinity a sign.
    let nans = |f: Fp8| (0..=255u8).filter(|&c| f.to_f32(c).is_nan()).count();
    assert_eq!((nans(Fp8::E4M3), nans(Fp8::E5M2)), (2, 6));
}

/// Every non-special code against (-1)^s 2^(e-bias) (1 + m/2^k), and
/// subnormals against (-1)^s 2^(1-bias) (m/2^k), computed in f64.
#[test]
fn every_code_matches_the_formula() {
    for (fmt, k, bias, e_special) in [(Fp8::E4M3, 3, 7, None), (Fp8::E5M2, 2, 15, Some(31))] {
        for c in 0..=255u8 {
            let s = if c & 0x80 != 0 { -1.0 } else { 1.0 };
            let e = ((c & 0x7f) >> k) as i32;
            let m = (c & ((1 << k) - 1)) as f64;
            let scale = 2f64.powi(k);
            let got = fmt.to_f32(c) as f64;
            if Some(e) == e_special || (fmt == Fp8::E4M3 && c & 0x7f == 0x7f) {
                assert!(got.is_nan() || got.is_infinite(), "{fmt:?} {c:#04x}");
                continue;
            }
            let want = if e == 0 {
                s * 2f64.powi(1 - bias) * (m / scale)
            } else {
                s * 2f64.powi(e - bias) * (1.0 + m / scale)
            };
            assert_eq!(got, want, "{fmt:?} {c:#04x}");
        }
    }
}

#[test]
fn every_code_widens_to_f16_and_bf16_exactly() {
    for fmt in FORMATS {
        for c in 0..=255u8 {
            let v = fmt.to_f32(c);
            let h = f16::from_bits(fmt.to_f16_bits(c)).to_f32();
            let b = bf16::from_bits(fmt.to_bf16_bits(c)).to_f32();
            if v.is_nan() {
                // Quiet NaNs of the target: top mantissa bit set.
                assert_eq!(fmt.to_f16_bits(c) & 0x7e00, 0x7e00, "{fmt:?} {c:#04x}");
                assert_eq!(fmt.to_bf16_bits(c) & 0x7fc0, 0x7fc0, "{fmt:?} {c:#04x}");
            } else {
                assert_eq!(h.to_bits(), v.to_bits(), "{fmt:?} {c:#04x} f16");
                assert_eq!(b.to_bits(), v.to_bits(), "{fmt:?} {c:#04x} bf16");
            }
        }
    }
}

fn next_up(x: f32) -> f32 {
    f32::from_bits(x.to_bits() + 1)
}
fn next_down(x: f32) -> f32 {
    f32::from_bits(x.to_bits() - 1)
}

/// Edges, each with the spec's answer in (Saturate, NonSaturate), checked
/// from f32 and, where the value is exact in them, from f16 and bf16; and
/// against float8 where comparable (it saturates).
#[test]
fn edges_round_as_the_spec_says() {
    let p = |e: i32| 2f32.powi(e);
    let nan = f32::NAN;
    #[rustfmt::skip]
    let edges: &[(Fp8, f32, u8, u8)] = &[
        // E4M3 overflow: 448 max; 464 = midpoint to the would-be 480 (odd) ties to 448.
        (Fp8::E4M3, 448.0, 0x7e, 0x7e),
        (Fp8::E4M3, next_up(448.0), 0x7e, 0x7e),
        (Fp8::E4M3, next_down(448.0), 0x7e, 0x7e),
        (Fp8::E4M3, 460.0, 0x7e, 0x7e),
        (Fp8::E4M3, 464.0, 0x7e, 0x7e),
        (Fp8::E4M3, next_up(464.0), 0x7e, 0x7f),
        (Fp8::E4M3, -next_up(464.0), 0xfe, 0xff),
        (Fp8::E4M3, 480.0, 0x7e, 0x7f),
        (Fp8::E4M3, 1.0e6, 0x7e, 0x7f),
        (Fp8::E4M3, f32::MAX, 0x7e, 0x7f),
        (Fp8::E4M3, f32::INFINITY, 0x7e, 0x7f),
        (Fp8::E4M3, f32::NEG_INFINITY, 0xfe, 0xff),
        (Fp8::E4M3, nan, 0x7f, 0x7f),
        (Fp8::E4M3, -nan, 0xff, 0xff),
        // Ties between adjacent codes go to the even code, both ways.
        (Fp8::E4M3, 432.0, 0x7e, 0x7e), // 416 (0x7d) | 448 (0x7e)
        (Fp8::E4M3, 400.0, 0x7c, 0x7c), // 384 (0x7c) | 416 (0x7d)
        (Fp8::E4M3, next_up(400.0), 0x7d, 0x7d),
        (Fp8::E4M3, 1.0625, 0x38, 0x38),  // 1 | 1.125
        (Fp8::E4M3, 1.1875, 0x3a, 0x3a),  // 1.125 | 1.25
        (Fp8::E4M3, -1.1875, 0xba, 0xba),
        // Min normal, subnormals, rounding up into the min normal, zeros.
        (Fp8::E4M3, p(-6), 0x08, 0x08),
        (Fp8::E4M3, next_down(p(-6)), 0x08, 0x08),
        (Fp8::E4M3, 7.5 * p(-9), 0x08, 0x08), // 7 (odd) | 8 (even, min normal)
        (Fp8::E4M3, next_down(7.5 * p(-9)), 0x07, 0x07),
        (Fp8::E4M3, 6.5 * p(-9), 0x06, 0x06),
        (Fp8::E4M3, 7.0 * p(-9), 0x07, 0x07),
        (Fp8::E4M3, 1.5 * p(-9), 0x02, 0x02),
        (Fp8::E4M3, 2.5 * p(-9), 0x02, 0x02),
        (Fp8::E4M3, p(-9), 0x01, 0x01),
        (Fp8::E4M3, p(-10), 0x00, 0x00),      // half the min subnormal: tie to +0
        (Fp8::E4M3, next_up(p(-10)), 0x01, 0x01),
        (Fp8::E4M3, -p(-10), 0x80, 0x80),     // ... and to -0 keeping the sign
        (Fp8::E4M3, -next_up(p(-10)), 0x81, 0x81),
        (Fp8::E4M3, -0.0, 0x80, 0x80),
        (Fp8::E4M3, 0.0, 0x00, 0x00),
        (Fp8::E4M3, f32::from_bits(1), 0x00, 0x00),
        (Fp8::E4M3, -f32::from_bits(1), 0x80, 0x80),
        // E5M2 overflow: 57344 max; 61440 = midpoint to 2^16 (even) overflows.
        (Fp8::E5M2, 57344.0, 0x7b, 0x7b),
        (Fp8::E5M2, next_up(57344.0), 0x7b, 0x7b),
        (Fp8::E5M2, next_down(61440.0), 0x7b, 0x7b),
        (Fp8::E5M2, 61440.0, 0x7b, 0x7c),
        (Fp8::E5M2, -61440.0, 0xfb, 0xfc),
        (Fp8::E5M2, 65536.0, 0x7b, 0x7c),
        (Fp8::E5M2, f32::MAX, 0x7b, 0x7c),
        (Fp8::E5M2, f32::INFINITY, 0x7b, 0x7c),
        (Fp8::E5M2, f32::NEG_INFINITY, 0xfb, 0xfc),
        (Fp8::E5M2, nan, 0x7e, 0x7e),
        (Fp8::E5M2, -nan, 0xfe, 0xfe),
        (Fp8::E5M2, 53248.0, 0x7a, 0x7a), // 49152 (0x7a) | 57344 (0x7b)
        (Fp8::E5M2, 1.125, 0x3c, 0x3c),   // 1 | 1.25
        (Fp8::E5M2, 1.375, 0x3e, 0x3e),   // 1.25 | 1.5
        (Fp8::E5M2, next_down(1.375), 0x3d, 0x3d),
        (Fp8::E5M2, p(-14), 0x04, 0x04),
        (Fp8::E5M2, next_down(p(-14)), 0x04, 0x04),
        (Fp8::E5M2, 3.5 * p(-16), 0x04, 0x04), // 3 (odd) | 4 (min normal)
        (Fp8::E5M2, 2.5 * p(-16), 0x02, 0x02),
        (Fp8::E5M2, 1.5 * p(-16), 0x02, 0x02),
        (Fp8::E5M2, p(-16), 0x01, 0x01),
        (Fp8::E5M2, p(-17), 0x00, 0x00),
        (Fp8::E5M2, next_up(p(-17)), 0x01, 0x01),
        (Fp8::E5M2, -p(-17), 0x80, 0x80),
        (Fp8::E5M2, -0.0, 0x80, 0x80),
    ];
    for &(fmt, x, sat, nonsat) in edges {
        for (o, want) in [(Overflow::Saturate, sat), (Overflow::NonSaturate, nonsat)] {
            assert_eq!(fmt.from_f32(x, o), want, "{fmt:?} {x:e} {o:?} from f32");
            assert_eq!(
                fmt.from_f64(x as f64, o),
                want,
                "{fmt:?} {x:e} {o:?} from f64"
            );
            if !x.is_nan() {
                check_encoded(fmt, want, oracle_encode(fmt, x as f64, o), "the table row");
            }
            let h = f16::from_f32(x);
            if h.to_f32() == x || x.is_nan() {
                assert_eq!(
                    fmt.from_f16_bits(h.to_bits(), o),
                    want,
                    "{fmt:?} {x:e} {o:?} f16"
                );
            }
            let b = bf16::from_f32(x);
            if b.to_f32() == x || x.is_nan() {
                assert_eq!(
                    fmt.from_bf16_bits(b.to_bits(), o),
                    want,
                    "{fmt:?} {x:e} {o:?} bf16"
                );
            }
        }
    }
}

#[test]
fn every_f16_pattern_converts_as_half_then_float8_does() {
    for h in 0..=u16::MAX {
        let x = f16::from_bits(h).to_f32();
        let w = f16_bits_to_f32(h);
        if x.is_nan() {
            assert!(w.is_nan(), "{h:#06x}");
        } else {
            assert_eq!(w.to_bits(), x.to_bits(), "{h:#06x} widens exactly");
        }
        for fmt in FORMATS {
            for o in MODES {
                let got = fmt.from_f16_bits(h, o);
                check_encoded(
                    fmt,
                    got,
                    oracle_encode(fmt, x as f64, o),
                    &format!("f16 {h:#06x}"),
                );
            }
        }
    }
}

#[test]
fn every_bf16_pattern_converts_as_half_then_float8_does() {
    for b in 0..=u16::MAX {
        let x = bf16::from_bits(b).to_f32();
        let w = bf16_bits_to_f32(b);
        if x.is_nan() {
            assert!(w.is_nan(), "{b:#06x}");
        } else {
            assert_eq!(w.to_bits(), x.to_bits(), "{b:#06x} widens exactly");
        }
        for fmt in FORMATS {
            for o in MODES {
                let got = fmt.from_bf16_bits(b, o);
                check_encoded(
                    fmt,
                    got,
                    oracle_encode(fmt, x as f64, o),
                    &format!("bf16 {b:#06x}"),
                );
            }
        }
    }
}

/// f32 to f16 and bf16 bit for bit as `half` does it (NaN payloads too).
fn check_narrowing(x: f32) {
    let h = f32_to_f16_bits(x);
    let want = f16::from_f32(x).to_bits();
    if x.is_nan() {
        assert!(
            f16::from_bits(h).is_nan() && h & 0x0200 != 0,
            "{:#x}: quiet f16 NaN",
            x.to_bits()
        );
        assert_eq!(h & 0x8000, want & 0x8000, "{:#x}: NaN sign", x.to_bits());
    } else {
        assert_eq!(h, want, "f16 of {x:e} ({:#x})", x.to_bits());
    }
    assert_eq!(
        f32_to_bf16_bits(x),
        bf16::from_f32(x).to_bits(),
        "bf16 of {:#x}",
        x.to_bits()
    );
}

#[test]
fn f32_narrowing_edges_match_half() {
    let p = |e: i32| 2f32.powi(e);
    let edges = [
        65504.0,
        65519.996,
        65520.0,
        65536.0,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        p(-14),
        next_down(p(-14)),
        p(-24),
        p(-25),
        next_up(p(-25)),
        1.5 * p(-24),
        2.5 * p(-24),
        1.0 + p(-11),
        1.0 + 3.0 * p(-11),
        1.0 + p(-8),
        1.0 + 3.0 * p(-8),
        f32::from_bits(0x7f7f_8000),
        f32::from_bits(0x7f7f_7fff),
        f32::from_bits(1),
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0x7fbf_ffff),
        0.0,
    ];
    for x in edges {
        check_narrowing(x);
        check_narrowing(-x);
    }
    // A stride through all of f32.
    for bits in (0..=u32::MAX).step_by(65_521) {
        check_narrowing(f32::from_bits(bits));
    }
}

#[test]
fn f32_stride_matches_float8() {
    for bits in (0..=u32::MAX).step_by(8_191) {
        let x = f32::from_bits(bits);
        for fmt in FORMATS {
            for o in MODES {
                let want = oracle_encode(fmt, x as f64, o);
                check_encoded(fmt, fmt.from_f32(x, o), want, &format!("f32 {bits:#x}"));
            }
        }
    }
}

proptest! {
    #[test]
    fn random_f32_matches_float8(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        for fmt in FORMATS {
            for o in MODES {
                let want = oracle_encode(fmt, x as f64, o);
                check_encoded(fmt, fmt.from_f32(x, o), want, &format!("f32 {bits:#x}"));
            }
        }
    }

    #[test]
    fn random_f64_matches_float8(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        for fmt in FORMATS {
            for o in MODES {
                let want = oracle_encode(fmt, x, o);
                check_encoded(fmt, fmt.from_f64(x, o), want, &format!("f64 {bits:#x}"));
            }
        }
    }

    /// Values near the fp8 range, where random bits rarely land.
    #[test]
    fn random_in_range_matches_float8(m in -70_000.0f32..70_000.0, e in -20i32..1) {
        let x = m * 2f32.powi(e);
        for fmt in FORMATS {
            for o in MODES {
                let want = oracle_encode(fmt, x as f64, o);
                check_encoded(fmt, fmt.from_f32(x, o), want, &format!("f32 {x:e}"));
            }
        }
    }

    #[test]
    fn random_f32_narrows_as_half_does(bits in any::<u32>()) {
        check_narrowing(f32::from_bits(bits));
    }
}
