//! Elementwise operations over whole regions: fp8 accumulate, f32 += fp8,
//! in-place scaling, quantisation and conversion between any two element
//! types. Each checks both regions' lengths before touching a byte and
//! returns the number of elements it processed.
//!
//! Every result is one rounding of the exact result: fp8 + fp8 and
//! fp8 × f32 are exact in f64 (E5M2 sums need up to 35 significant bits, so
//! f32 would not do), and those are folded into lookup tables, built once
//! per process for sums (64 KiB per format and mode) and per call on the
//! stack for a scale factor, so the hot loops are one load per byte.

use std::sync::OnceLock;

use super::scalar::{bf16_bits_to_f32, f16_bits_to_f32, f32_to_bf16_bits, f32_to_f16_bits};
use super::{Element, Fp8, Fp8Error, Overflow, Side};

/// Element count of a region, or why it has none.
fn count(len: usize, element: Element, side: Side) -> Result<usize, Fp8Error> {
    let size = element.size();
    if len % size != 0 {
        return Err(Fp8Error::Ragged { side, len, element });
    }
    Ok(len / size)
}

/// The common element count of a destination and a source.
fn counts(dst: (usize, Element), src: (usize, Element)) -> Result<usize, Fp8Error> {
    let d = count(dst.0, dst.1, Side::Dst)?;
    let s = count(src.0, src.1, Side::Src)?;
    if d != s {
        return Err(Fp8Error::CountMismatch { dst: d, src: s });
    }
    Ok(d)
}

/// `v`, the exact result of an operation, rounded once to `fmt`. A NaN
/// result is the positive NaN code: the sign of a NaN that arithmetic makes
/// or propagates differs between CPUs (x86's ∞ − ∞ is negative), and a
/// region's bytes must not.
#[inline(always)]
fn round_result(fmt: Fp8, v: f64, o: Overflow) -> u8 {
    if v.is_nan() {
        fmt.nan_code()
    } else {
        fmt.from_f64(v, o)
    }
}

type SumTable = Box<[u8; 1 << 16]>;

/// `table[(a << 8) | b]` = `a + b` rounded once, for one format and mode.
fn sum_table(fmt: Fp8, o: Overflow) -> &'static [u8; 1 << 16] {
    static TABLES: [OnceLock<SumTable>; 4] = [const { OnceLock::new() }; 4];
    let i = (fmt as usize) * 2 + o as usize;
    TABLES[i].get_or_init(|| {
        let dec = fmt.table();
        let mut t: SumTable = vec![0u8; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("the vector has 2^16 bytes");
        for (i, out) in t.iter_mut().enumerate() {
            let sum = dec[i >> 8] as f64 + dec[i & 0xff] as f64;
            *out = round_result(fmt, sum, o);
        }
        t
    })
}

/// `dst[i] = round(dst[i] + src[i])`, both regions fp8 of format `fmt`,
/// rounded once (to nearest-even, overflow per `o`). NaN in either operand,
/// or ∞ + (−∞) in E5M2, gives the positive NaN code.
pub fn accumulate(fmt: Fp8, dst: &mut [u8], src: &[u8], o: Overflow) -> Result<usize, Fp8Error> {
    let n = counts((dst.len(), fmt.into()), (src.len(), fmt.into()))?;
    let table = sum_table(fmt, o);
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = table[((*d as usize) << 8) | s as usize];
    }
    Ok(n)
}

/// `dst[i] += src[i]` with `dst` f32 (little-endian) and `src` fp8 of
/// format `fmt`: one f32 addition, so IEEE's rounding and overflow to ∞.
pub fn accumulate_into_f32(fmt: Fp8, dst: &mut [u8], src: &[u8]) -> Result<usize, Fp8Error> {
    let n = counts((dst.len(), Element::F32), (src.len(), fmt.into()))?;
    let dec = fmt.table();
    for (d, &s) in dst.chunks_exact_mut(4).zip(src) {
        let v = f32::from_le_bytes([d[0], d[1], d[2], d[3]]) + dec[s as usize];
        d.copy_from_slice(&v.to_le_bytes());
    }
    Ok(n)
}

/// `dst[i] = round(dst[i] × factor)` in place over fp8 of format `fmt`: the
/// product is exact in f64, so one rounding (overflow per `o`); a NaN
/// product is the positive NaN code.
pub fn scale(fmt: Fp8, dst: &mut [u8], factor: f32, o: Overflow) -> Result<usize, Fp8Error> {
    let dec = fmt.table();
    let mut table = [0u8; 256];
    for (c, out) in table.iter_mut().enumerate() {
        *out = round_result(fmt, dec[c] as f64 * factor as f64, o);
    }
    for d in dst.iter_mut() {
        *d = table[*d as usize];
    }
    Ok(dst.len())
}

/// `dst[i] = round(src[i] × factor)`: f32 (little-endian) `src` quantised to
/// fp8 `fmt` with a scale factor, the product exact in f64 so one rounding
/// (overflow per `o`); a NaN product is the positive NaN code.
pub fn quantize(
    fmt: Fp8,
    src: &[u8],
    dst: &mut [u8],
    factor: f32,
    o: Overflow,
) -> Result<usize, Fp8Error> {
    let n = counts((dst.len(), fmt.into()), (src.len(), Element::F32))?;
    let factor = factor as f64;
    for (s, d) in src.chunks_exact(4).zip(dst.iter_mut()) {
        let x = f32::from_le_bytes([s[0], s[1], s[2], s[3]]) as f64;
        *d = round_result(fmt, x * factor, o);
    }
    Ok(n)
}

/// `dst[i] = src[i]` converted from `from` to `to`. Every element type
/// widens exactly to f32, so each result is one rounding of the source
/// value: to fp8 per `o`, to f16 and bf16 to nearest-even with overflow to
/// ±∞ (IEEE; `o` does not apply), NaN to a quiet NaN. `from == to` copies
/// the bytes unchanged.
pub fn convert(
    from: Element,
    to: Element,
    src: &[u8],
    dst: &mut [u8],
    o: Overflow,
) -> Result<usize, Fp8Error> {
    let n = counts((dst.len(), to), (src.len(), from))?;
    if from == to {
        dst.copy_from_slice(src);
        return Ok(n);
    }
    match from {
        Element::F32 => convert_from::<4>(src, dst, to, o, f32::from_le_bytes),
        Element::F16 => {
            convert_from::<2>(src, dst, to, o, |s| f16_bits_to_f32(u16::from_le_bytes(s)))
        }
        Element::Bf16 => {
            convert_from::<2>(src, dst, to, o, |s| bf16_bits_to_f32(u16::from_le_bytes(s)))
        }
        Element::E4M3 | Element::E5M2 => {
            let fmt = from.fp8().expect("an fp8 element");
            match to.fp8() {
                Some(to) => {
                    // fp8 to fp8: one table of 256 codes.
                    let mut table = [0u8; 256];
                    for (c, out) in table.iter_mut().enumerate() {
                        *out = to.from_f32(fmt.to_f32(c as u8), o);
                    }
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d = table[s as usize];
                    }
                }
                None => {
                    let dec = fmt.table();
                    convert_from::<1>(src, dst, to, o, |[s]| dec[s as usize]);
                }
            }
        }
    }
    Ok(n)
}

/// The inner loops of [`convert`] from a source of `S`-byte elements,
/// decoded exactly by `dec`, one loop per destination type so that each is
/// monomorphic.
#[inline(always)]
fn convert_from<const S: usize>(
    src: &[u8],
    dst: &mut [u8],
    to: Element,
    o: Overflow,
    dec: impl Fn([u8; S]) -> f32,
) {
    let src = src.chunks_exact(S).map(|s| {
        let mut a = [0u8; S];
        a.copy_from_slice(s);
        dec(a)
    });
    match to {
        Element::F32 => encode_into::<4>(src, dst, |x| x.to_le_bytes()),
        Element::F16 => encode_into::<2>(src, dst, |x| f32_to_f16_bits(x).to_le_bytes()),
        Element::Bf16 => encode_into::<2>(src, dst, |x| f32_to_bf16_bits(x).to_le_bytes()),
        Element::E4M3 => encode_into::<1>(src, dst, |x| [Fp8::E4M3.from_f32(x, o)]),
        Element::E5M2 => encode_into::<1>(src, dst, |x| [Fp8::E5M2.from_f32(x, o)]),
    }
}

#[inline(always)]
fn encode_into<const D: usize>(
    src: impl Iterator<Item = f32>,
    dst: &mut [u8],
    enc: impl Fn(f32) -> [u8; D],
) {
    for (x, d) in src.zip(dst.chunks_exact_mut(D)) {
        d.copy_from_slice(&enc(x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_errors() {
        let mut d = [0u8; 7];
        assert_eq!(
            accumulate_into_f32(Fp8::E4M3, &mut d, &[0; 1]),
            Err(Fp8Error::Ragged {
                side: Side::Dst,
                len: 7,
                element: Element::F32
            })
        );
        assert_eq!(
            convert(
                Element::E5M2,
                Element::F16,
                &[0; 3],
                &mut [0; 5],
                Overflow::Saturate
            ),
            Err(Fp8Error::Ragged {
                side: Side::Dst,
                len: 5,
                element: Element::F16
            })
        );
        assert_eq!(
            convert(
                Element::Bf16,
                Element::E4M3,
                &[0; 3],
                &mut [0; 1],
                Overflow::Saturate
            ),
            Err(Fp8Error::Ragged {
                side: Side::Src,
                len: 3,
                element: Element::Bf16
            })
        );
        let mut d = [0x38u8; 4];
        assert_eq!(
            accumulate(Fp8::E4M3, &mut d, &[0; 3], Overflow::Saturate),
            Err(Fp8Error::CountMismatch { dst: 4, src: 3 })
        );
        assert_eq!(d, [0x38; 4], "a refused region is left untouched");
        assert_eq!(
            quantize(Fp8::E5M2, &[0; 8], &mut [0; 3], 1.0, Overflow::Saturate),
            Err(Fp8Error::CountMismatch { dst: 3, src: 2 })
        );
        assert_eq!(
            Fp8Error::CountMismatch { dst: 3, src: 2 }.to_string(),
            "the destination holds 3 elements but the source 2"
        );
        assert_eq!(
            Fp8Error::Ragged {
                side: Side::Src,
                len: 3,
                element: Element::Bf16
            }
            .to_string(),
            "the source region's 3 bytes are not a whole number of Bf16 elements"
        );
    }

    #[test]
    fn accumulate_bytes() {
        // E4M3: 1.0 (0x38) + 1.0 = 2.0 (0x40); 448 + 448 saturates to 0x7e
        // or overflows to NaN; 2^-9 + -2^-9 = +0.
        let mut d = [0x38, 0x7e, 0x01, 0x7e];
        let s = [0x38, 0x7e, 0x81, 0x7f];
        assert_eq!(accumulate(Fp8::E4M3, &mut d, &s, Overflow::Saturate), Ok(4));
        assert_eq!(d, [0x40, 0x7e, 0x00, 0x7f]);
        let mut d = [0x7e];
        accumulate(Fp8::E4M3, &mut d, &[0x7e], Overflow::NonSaturate).unwrap();
        assert_eq!(d, [0x7f]);
        // E5M2: inf + -inf = NaN (0x7e); 57344 + 57344 overflows to inf.
        let mut d = [0x7c, 0x7b];
        accumulate(Fp8::E5M2, &mut d, &[0xfc, 0x7b], Overflow::NonSaturate).unwrap();
        assert_eq!(d, [0x7e, 0x7c]);
    }
}
