//! The layout vocabulary every format here is written in: byte ranges
//! ([`Field`]) for whole fields, and [`Bits`] for the sub-byte and 24-bit
//! fields of the CM tables, which mirror Linux's `IBA_FIELD*_LOC` macros
//! (`include/rdma/iba.h`) so each constant reads like its line of
//! `include/rdma/ibta_vol1_c12.h`. Accessors index only inside the
//! structure's fixed length, which `check_len` has checked.

use std::ops::Range;

/// A field as a byte range of its structure.
pub type Field = Range<usize>;

/// A field of `width` bits inside the big-endian word of `len` bytes (1, 2
/// or 4) at byte `at`, whose least significant bit is bit `shift` of that
/// word: the mask `GENMASK(shift + width - 1, shift)` of `iba.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bits {
    /// First byte of the word.
    pub at: usize,
    /// Bytes of the word: 1, 2 or 4.
    pub len: usize,
    /// Position of the field's lowest bit in the word.
    pub shift: u32,
    /// Bits of the field.
    pub width: u32,
}

impl Bits {
    /// `IBA_FIELD_BLOC(byte, bit, width)`: `width` bits of byte `byte`,
    /// starting `bit` bits from its most significant bit.
    pub const fn bloc(byte: usize, bit: u32, width: u32) -> Bits {
        Bits {
            at: byte,
            len: 1,
            shift: 8 - bit - width,
            width,
        }
    }

    /// `IBA_FIELD8_LOC(byte, width)`: the top `width` bits of byte `byte`.
    pub const fn f8(byte: usize, width: u32) -> Bits {
        Bits::bloc(byte, 0, width)
    }

    /// `IBA_FIELD16_LOC(byte, width)`: `width` bits from the top of byte
    /// `byte`, in the aligned big-endian 16-bit word holding it.
    pub const fn f16(byte: usize, width: u32) -> Bits {
        Bits {
            at: byte & !1,
            len: 2,
            shift: 16 - (byte as u32 % 2) * 8 - width,
            width,
        }
    }

    /// `IBA_FIELD32_LOC(byte, width)`: `width` bits from the top of byte
    /// `byte`, in the aligned big-endian 32-bit word holding it.
    pub const fn f32(byte: usize, width: u32) -> Bits {
        Bits {
            at: byte & !3,
            len: 4,
            shift: 32 - (byte as u32 % 4) * 8 - width,
            width,
        }
    }

    /// The same field `by` bytes further on (a CM field's offset is from
    /// the end of the MAD header: `CM_FIELD*_LOC` adds 24).
    pub const fn after(self, by: usize) -> Bits {
        Bits {
            at: self.at + by,
            ..self
        }
    }

    /// The field's largest value.
    pub const fn max(self) -> u32 {
        if self.width >= 32 {
            u32::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// Reads the field from `b`, which holds `at + len` bytes.
    pub fn get(self, b: &[u8]) -> u32 {
        (self.word(b) >> self.shift) & self.max()
    }

    /// Writes the low `width` bits of `v`, keeping the word's other bits.
    pub fn set(self, b: &mut [u8], v: u32) {
        let mask = self.max() << self.shift;
        let w = (self.word(b) & !mask) | ((v << self.shift) & mask);
        let bytes = w.to_be_bytes();
        b[self.at..self.at + self.len].copy_from_slice(&bytes[4 - self.len..]);
    }

    fn word(self, b: &[u8]) -> u32 {
        b[self.at..self.at + self.len]
            .iter()
            .fold(0, |w, &x| w << 8 | u32::from(x))
    }
}

/// Bytes of the MAD header, which `ibta_vol1_c12.h`'s `CM_FIELD*` macros
/// add to every CM offset.
const CM: usize = 24;

/// `CM_FIELD_MLOC`: bytes `start..end` of a CM message, as offsets from the
/// end of the MAD header.
pub(crate) const fn cm_bytes(start: usize, end: usize) -> Field {
    start + CM..end + CM
}

/// `CM_FIELD_BLOC(byte, bit, width)`.
pub(crate) const fn cm_bloc(byte: usize, bit: u32, width: u32) -> Bits {
    Bits::bloc(byte + CM, bit, width)
}

/// `CM_FIELD8_LOC(byte, width)`.
pub(crate) const fn cm8(byte: usize, width: u32) -> Bits {
    Bits::f8(byte + CM, width)
}

/// `CM_FIELD16_LOC(byte, width)`.
pub(crate) const fn cm16(byte: usize, width: u32) -> Bits {
    Bits::f16(byte + CM, width)
}

/// `CM_FIELD32_LOC(byte, width)`.
pub(crate) const fn cm32(byte: usize, width: u32) -> Bits {
    Bits::f32(byte + CM, width)
}

pub(crate) fn array<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[f]);
    a
}

pub(crate) fn get_be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes(array(b, f))
}

pub(crate) fn get_be32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes(array(b, f))
}

pub(crate) fn get_be64(b: &[u8], f: Field) -> u64 {
    u64::from_be_bytes(array(b, f))
}

pub(crate) fn get_le16(b: &[u8], f: Field) -> u16 {
    u16::from_le_bytes(array(b, f))
}

pub(crate) fn set_bytes(b: &mut [u8], f: Field, v: &[u8]) {
    b[f].copy_from_slice(v);
}

/// The `Packet<T>` view of a structure of `$len` bytes called `$format`
/// in errors: `new_unchecked`, `new_checked`, `check_len`, `into_inner`.
macro_rules! view {
    ($format:literal, $len:expr) => {
        /// A view of the structure's bytes. After
        /// [`new_checked`](Self::new_checked) no accessor panics.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// A view without a length check; accessors may panic on a
            /// short buffer.
            pub const fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            /// A view of a buffer that holds the whole structure (it may
            /// hold more, which the view ignores).
            pub fn new_checked(buffer: T) -> Result<Packet<T>, $crate::Error> {
                let p = Packet::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }

            /// Whether the buffer holds the whole structure.
            pub fn check_len(&self) -> Result<(), $crate::Error> {
                let len = self.buffer.as_ref().len();
                if len < $len {
                    return Err($crate::Error::Truncated {
                        format: $format,
                        need: $len,
                        len,
                    });
                }
                Ok(())
            }

            /// The buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}
pub(crate) use view;

/// Getters and setters of a `Packet<T>` view for [`Bits`] fields, as
/// `get / set: type = BITS;` (type `u8`, `u16`, `u32` or `bool`).
macro_rules! bit_fields {
    ($($(#[$doc:meta])* $get:ident / $set:ident : $ty:ident = $f:expr;)*) => {
        impl<T: AsRef<[u8]>> Packet<T> {
            $($(#[$doc])*
            pub fn $get(&self) -> $ty {
                bit_fields!(@from $ty, $f.get(self.buffer.as_ref()))
            })*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            $(#[doc = concat!("Sets what [`", stringify!($get), "`](Self::", stringify!($get),
                ") reads (bits past the field's width are dropped).")]
            pub fn $set(&mut self, v: $ty) {
                $f.set(self.buffer.as_mut(), u32::from(v))
            })*
        }
    };
    // The masks keep every value inside the type: the casts cannot lose bits.
    (@from bool, $v:expr) => { $v != 0 };
    (@from u8, $v:expr) => { $v as u8 };
    (@from u16, $v:expr) => { $v as u16 };
    (@from u32, $v:expr) => { $v };
}
pub(crate) use bit_fields;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_place_fields_as_the_iba_macros_do() {
        // CM_REQ_LOCAL_QPN: CM_FIELD32_LOC(32, 24) = GENMASK(31, 8) of the
        // word at 24 + 32.
        assert_eq!(
            Bits::f32(32, 24).after(24),
            Bits {
                at: 56,
                len: 4,
                shift: 8,
                width: 24
            }
        );
        // CM_REQ_VENDOR_ID: CM_FIELD32_LOC(5, 24) = GENMASK(23, 0) of the word at 4.
        assert_eq!(
            Bits::f32(5, 24),
            Bits {
                at: 4,
                len: 4,
                shift: 0,
                width: 24
            }
        );
        // CM_REQ_TRANSPORT_SERVICE_TYPE: BLOC(43, 5, 2) = GENMASK(2, 1).
        assert_eq!(
            Bits::bloc(43, 5, 2),
            Bits {
                at: 43,
                len: 1,
                shift: 1,
                width: 2
            }
        );
        // CM_REJ_REASON: CM_FIELD16_LOC(10, 16).
        assert_eq!(
            Bits::f16(10, 16),
            Bits {
                at: 10,
                len: 2,
                shift: 0,
                width: 16
            }
        );
        // An odd 16-bit location takes the low byte of its aligned word.
        assert_eq!(
            Bits::f16(11, 4),
            Bits {
                at: 10,
                len: 2,
                shift: 4,
                width: 4
            }
        );
    }

    #[test]
    fn set_keeps_the_neighbours_and_get_reads_back() {
        let f = Bits::bloc(1, 5, 2); // mask 0b0000_0110 of byte 1
        let mut b = [0xffu8, 0xff, 0xff];
        f.set(&mut b, 0);
        assert_eq!(b, [0xff, 0xf9, 0xff]);
        f.set(&mut b, 0b110); // too wide: the high bit is dropped
        assert_eq!(b, [0xff, 0xfd, 0xff]);
        assert_eq!(f.get(&b), 0b10);
        let q = Bits::f32(0, 24);
        let mut w = [0u8; 4];
        w[3] = 0xaa;
        q.set(&mut w, 0x123456);
        assert_eq!(w, [0x12, 0x34, 0x56, 0xaa]);
        assert_eq!(q.get(&w), 0x123456);
        assert_eq!(Bits::f32(0, 32).max(), u32::MAX);
    }
}
