//! The fp8 region operations elementwise against oracles: float8's decode
//! and (saturating) encode from the exact f64 result, half's f16/bf16, and
//! the hardware's f32 addition; plus the scalar functions they must agree
//! with, and the length errors. See tests/fp8_scalar.rs for where float8's
//! behaviour differs from OCP's modes and why only the comparable part is
//! compared.

use ernic_p4::fp8::{
    Element, Fp8, Fp8Error, Overflow, Side, accumulate, accumulate_into_f32, convert, quantize,
    scale,
};
use float8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use proptest::prelude::*;

const FORMATS: [Fp8; 2] = [Fp8::E4M3, Fp8::E5M2];
const MODES: [Overflow; 2] = [Overflow::Saturate, Overflow::NonSaturate];

fn oracle_decode(fmt: Fp8, code: u8) -> f64 {
    match fmt {
        Fp8::E4M3 => F8E4M3::from_bits(code).to_f64(),
        Fp8::E5M2 => F8E5M2::from_bits(code).to_f64(),
    }
}

/// The code the oracle gives for the exact result `x` of a region op: a
/// NaN result is the positive NaN code the module documents.
fn oracle_result(fmt: Fp8, x: f64, o: Overflow) -> u8 {
    if x.is_nan() {
        return match fmt {
            Fp8::E4M3 => 0x7f,
            Fp8::E5M2 => 0x7e,
        };
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let overflows = match fmt {
        Fp8::E4M3 => x.abs() > 464.0,
        Fp8::E5M2 => x.abs() >= 61440.0,
    };
    match (o, fmt) {
        (Overflow::NonSaturate, Fp8::E4M3) if overflows => sign | 0x7f,
        (Overflow::NonSaturate, Fp8::E5M2) if overflows => sign | 0x7c,
        (_, Fp8::E4M3) => F8E4M3::from_f64(x).to_bits(),
        (_, Fp8::E5M2) => F8E5M2::from_f64(x).to_bits(),
    }
}

/// A deterministic byte stream (xorshift64*), for regions.
fn bytes(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            (seed.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

#[test]
fn accumulate_every_pair() {
    // dst walks every code 256 times, src every code once per dst code.
    let a: Vec<u8> = (0..=u16::MAX).map(|i| (i >> 8) as u8).collect();
    let b: Vec<u8> = (0..=u16::MAX).map(|i| i as u8).collect();
    for fmt in FORMATS {
        for o in MODES {
            let mut d = a.clone();
            assert_eq!(accumulate(fmt, &mut d, &b, o), Ok(1 << 16));
            for i in 0..d.len() {
                let sum = oracle_decode(fmt, a[i]) + oracle_decode(fmt, b[i]);
                let want = oracle_result(fmt, sum, o);
                assert_eq!(
                    d[i], want,
                    "{fmt:?} {o:?}: {:#04x} + {:#04x} gave {:#04x}, want {want:#04x}",
                    a[i], b[i], d[i]
                );
            }
        }
    }
}

#[test]
fn accumulate_spec_cases() {
    // E4M3 448 + 16 = 464, a tie that goes to 448 in both modes; 448 + 32
    // = 480 overflows. E5M2 57344 + 4096 = 61440 overflows.
    let (e448, e16, e32) = (0x7e, 0x58, 0x60);
    assert_eq!((Fp8::E4M3.to_f32(e16), Fp8::E4M3.to_f32(e32)), (16.0, 32.0));
    for o in MODES {
        let mut d = [e448, e448];
        accumulate(Fp8::E4M3, &mut d, &[e16, e32], o).unwrap();
        let over = if o == Overflow::Saturate { 0x7e } else { 0x7f };
        assert_eq!(d, [0x7e, over], "{o:?}");
    }
    let e4096 = 0x6c;
    assert_eq!(Fp8::E5M2.to_f32(e4096), 4096.0);
    let mut d = [0x7b, 0xfb];
    accumulate(
        Fp8::E5M2,
        &mut d,
        &[e4096, 0x80 | e4096],
        Overflow::NonSaturate,
    )
    .unwrap();
    assert_eq!(d, [0x7c, 0xfc]);
    // E5M2's widest sum: 57344 + 2^-16 needs 32 bits; it rounds to 57344.
    let mut d = [0x7b];
    accumulate(Fp8::E5M2, &mut d, &[0x01], Overflow::Saturate).unwrap();
    assert_eq!(d, [0x7b]);
}

#[test]
fn accumulate_into_f32_adds_as_ieee_does() {
    for fmt in FORMATS {
        let src: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        let dst0 = bytes(4 * 4096, 7);
        let mut dst = dst0.clone();
        assert_eq!(accumulate_into_f32(fmt, &mut dst, &src), Ok(4096));
        for i in 0..4096 {
            let d0 = f32::from_le_bytes(dst0[4 * i..4 * i + 4].try_into().unwrap());
            let got = f32::from_le_bytes(dst[4 * i..4 * i + 4].try_into().unwrap());
            let c = src[i];
            let want = d0 + oracle_decode(fmt, c) as f32;
            if want.is_nan() {
                assert!(got.is_nan(), "{fmt:?} {d0:e} + {c:#04x}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{fmt:?} {d0:e} + {c:#04x}");
            }
        }
    }
    // Known values: 1.5 + E4M3 0x38 (1.0) = 2.5; 0.25 + E5M2 0xfc (-inf) = -inf.
    let mut d = 1.5f32.to_le_bytes();
    accumulate_into_f32(Fp8::E4M3, &mut d, &[0x38]).unwrap();
    assert_eq!(f32::from_le_bytes(d), 2.5);
    let mut d = 0.25f32.to_le_bytes();
    accumulate_into_f32(Fp8::E5M2, &mut d, &[0xfc]).unwrap();
    assert_eq!(f32::from_le_bytes(d), f32::NEG_INFINITY);
}

#[test]
fn scale_every_code() {
    let factors = [
        1.0,
        0.5,
        3.0,
        1.0 / 3.0,
        -2.0,
        1.0e-3,
        1.1,
        1.0e10,
        0.0,
        -0.0,
        1.0e-30,
        f32::INFINITY,
        f32::NAN,
    ];
    for fmt in FORMATS {
        for o in MODES {
            for f in factors {
                let mut d: Vec<u8> = (0..=255u8).collect();
                assert_eq!(scale(fmt, &mut d, f, o), Ok(256));
                for c in 0..=255u8 {
                    let want = oracle_result(fmt, oracle_decode(fmt, c) * f as f64, o);
                    assert_eq!(d[c as usize], want, "{fmt:?} {o:?} {c:#04x} × {f:e}");
                }
            }
        }
    }
    // 1.0 × 1/3 in E4M3: 0.333… lies between 0.3125 (0x2a) and 0.34375
    // (0x2b), above their midpoint 0.328125, so 0x2b.
    let mut d = [0x38];
    scale(Fp8::E4M3, &mut d, 1.0 / 3.0, Overflow::Saturate).unwrap();
    assert_eq!((d[0], Fp8::E4M3.to_f32(d[0])), (0x2b, 0.34375));
}

#[test]
fn quantize_matches_float8() {
    let src = bytes(4 * 8192, 11);
    for fmt in FORMATS {
        for o in MODES {
            for f in [1.0f32, 1.0e-30, 7.0, 2.0f32.powi(-20), 1.0e30] {
                let mut dst = vec![0u8; 8192];
                assert_eq!(quantize(fmt, &src, &mut dst, f, o), Ok(8192));
                for i in 0..8192 {
                    let x = f32::from_le_bytes(src[4 * i..4 * i + 4].try_into().unwrap());
                    let want = oracle_result(fmt, x as f64 * f as f64, o);
                    assert_eq!(dst[i], want, "{fmt:?} {o:?} {x:e} × {f:e}");
                }
            }
        }
    }
}

const ELEMENTS: [Element; 5] = [
    Element::F32,
    Element::F16,
    Element::Bf16,
    Element::E4M3,
    Element::E5M2,
];

/// The oracle's value of one element.
fn oracle_read(e: Element, b: &[u8]) -> f32 {
    match e {
        Element::F32 => f32::from_le_bytes(b.try_into().unwrap()),
        Element::F16 => f16::from_le_bytes(b.try_into().unwrap()).to_f32(),
        Element::Bf16 => bf16::from_le_bytes(b.try_into().unwrap()).to_f32(),
        Element::E4M3 => F8E4M3::from_bits(b[0]).to_f32(),
        Element::E5M2 => F8E5M2::from_bits(b[0]).to_f32(),
    }
}

/// Whether the element `b` of type `e` is a NaN.
fn is_nan(e: Element, b: &[u8]) -> bool {
    match e.fp8() {
        Some(f) => f.is_nan(b[0]),
        None => oracle_read(e, b).is_nan(),
    }
}

/// The oracle's encoding of `x` as `e`; `None` for "a NaN".
fn oracle_write(e: Element, x: f32, o: Overflow) -> Option<Vec<u8>> {
    if x.is_nan() {
        return None;
    }
    Some(match e {
        Element::F32 => x.to_le_bytes().to_vec(),
        Element::F16 => f16::from_f32(x).to_le_bytes().to_vec(),
        Element::Bf16 => bf16::from_f32(x).to_le_bytes().to_vec(),
        Element::E4M3 => vec![oracle_result(Fp8::E4M3, x as f64, o)],
        Element::E5M2 => vec![oracle_result(Fp8::E5M2, x as f64, o)],
    })
}

/// A source region of `e`: every code for fp8, every pattern for f16 and
/// bf16, pseudo-random bits plus edges for f32.
fn source(e: Element) -> Vec<u8> {
    match e {
        Element::E4M3 | Element::E5M2 => (0..=255u8).collect(),
        Element::F16 | Element::Bf16 => (0..=u16::MAX).flat_map(u16::to_le_bytes).collect(),
        Element::F32 => {
            let mut v = bytes(4 * 50_000, 3);
            for x in [
                464.0f32,
                61440.0,
                65520.0,
                65519.996,
                f32::INFINITY,
                f32::NAN,
                -0.0,
                1.0e-40,
            ] {
                v.extend(x.to_le_bytes());
            }
            v
        }
    }
}

#[test]
fn convert_every_pair() {
    for from in ELEMENTS {
        let src = source(from);
        let n = src.len() / from.size();
        for to in ELEMENTS {
            for o in MODES {
                let mut dst = vec![0u8; n * to.size()];
                assert_eq!(
                    convert(from, to, &src, &mut dst, o),
                    Ok(n),
                    "{from:?} to {to:?}"
                );
                if from == to {
                    assert_eq!(dst, src, "{from:?} to itself copies");
                    continue;
                }
                for i in 0..n {
                    let s = &src[i * from.size()..(i + 1) * from.size()];
                    let d = &dst[i * to.size()..(i + 1) * to.size()];
                    match oracle_write(to, oracle_read(from, s), o) {
                        Some(want) => {
                            assert_eq!(d, &want[..], "{from:?} {s:02x?} to {to:?} {o:?}")
                        }
                        None => assert!(is_nan(to, d), "{from:?} {s:02x?} to {to:?}: NaN"),
                    }
                }
            }
        }
    }
}

#[test]
fn convert_agrees_with_the_scalar_functions() {
    let src: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
    for fmt in FORMATS {
        for o in MODES {
            let mut d = vec![0u8; 1 << 16];
            convert(Element::F16, fmt.into(), &src, &mut d, o).unwrap();
            let mut b = vec![0u8; 1 << 16];
            convert(Element::Bf16, fmt.into(), &src, &mut b, o).unwrap();
            for h in 0..=u16::MAX {
                assert_eq!(d[h as usize], fmt.from_f16_bits(h, o), "f16 {h:#06x}");
                assert_eq!(b[h as usize], fmt.from_bf16_bits(h, o), "bf16 {h:#06x}");
            }
            let codes: Vec<u8> = (0..=255).collect();
            let mut w = vec![0u8; 512];
            convert(fmt.into(), Element::F16, &codes, &mut w, o).unwrap();
            for c in 0..=255u8 {
                let got = u16::from_le_bytes([w[2 * c as usize], w[2 * c as usize + 1]]);
                assert_eq!(got, fmt.to_f16_bits(c), "{fmt:?} {c:#04x} to f16");
            }
        }
    }
}

#[test]
fn length_errors_leave_dst_untouched() {
    let mut dst = [0xaau8; 6];
    let cases: [(Element, Element, usize, Fp8Error); 4] = [
        (
            Element::F32,
            Element::E4M3,
            7,
            Fp8Error::Ragged {
                side: Side::Src,
                len: 7,
                element: Element::F32,
            },
        ),
        (
            Element::F32,
            Element::F16,
            8,
            Fp8Error::CountMismatch { dst: 3, src: 2 },
        ),
        (
            Element::E5M2,
            Element::F32,
            6,
            Fp8Error::Ragged {
                side: Side::Dst,
                len: 6,
                element: Element::F32,
            },
        ),
        (
            Element::Bf16,
            Element::E5M2,
            2,
            Fp8Error::CountMismatch { dst: 6, src: 1 },
        ),
    ];
    for (from, to, src_len, want) in cases {
        let src = vec![0u8; src_len];
        assert_eq!(
            convert(from, to, &src, &mut dst, Overflow::Saturate),
            Err(want)
        );
        assert_eq!(dst, [0xaa; 6]);
    }
    let mut d = [0xaau8; 8];
    assert_eq!(
        accumulate_into_f32(Fp8::E5M2, &mut d, &[0; 3]),
        Err(Fp8Error::CountMismatch { dst: 2, src: 3 })
    );
    assert_eq!(d, [0xaa; 8]);
    assert_eq!(
        quantize(Fp8::E4M3, &[0; 6], &mut d, 1.0, Overflow::Saturate),
        Err(Fp8Error::Ragged {
            side: Side::Src,
            len: 6,
            element: Element::F32
        })
    );
    assert_eq!(d, [0xaa; 8]);
}

proptest! {
    #[test]
    fn random_regions_accumulate_as_the_scalar_functions(
        a in proptest::collection::vec(any::<u8>(), 0..300),
        seed in any::<u64>(),
    ) {
        let b = bytes(a.len(), seed | 1);
        for fmt in FORMATS {
            for o in MODES {
                let mut d = a.clone();
                prop_assert_eq!(accumulate(fmt, &mut d, &b, o), Ok(a.len()));
                for i in 0..a.len() {
                    let sum = fmt.to_f32(a[i]) as f64 + fmt.to_f32(b[i]) as f64;
                    let want = if sum.is_nan() { fmt.nan_code() } else { fmt.from_f64(sum, o) };
                    prop_assert_eq!(d[i], want);
                }
            }
        }
    }
}
