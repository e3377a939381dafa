//! Byte-range helpers and the `view!` macro shared by the formats.

use core::ops::Range;

/// A field: a byte range inside a structure.
pub type Field = Range<usize>;

pub(crate) fn array<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[f]);
    a
}

pub(crate) fn get_le16(b: &[u8], f: Field) -> u16 {
    u16::from_le_bytes(array(b, f))
}

pub(crate) fn get_le32(b: &[u8], f: Field) -> u32 {
    u32::from_le_bytes(array(b, f))
}

pub(crate) fn get_le64(b: &[u8], f: Field) -> u64 {
    u64::from_le_bytes(array(b, f))
}

pub(crate) fn set_bytes(b: &mut [u8], f: Field, v: &[u8]) {
    b[f].copy_from_slice(v);
}

/// `Packet<T>` with `new_unchecked`, `new_checked`, `check_len`, `into_inner`.
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
