//! Big-endian bit fields in byte buffers: what extract, emit, lookahead and
//! calculations use. Bit 0 is the most significant bit of byte 0, as on the
//! wire. Callers check bounds first; these functions only index within the
//! spans the caller has checked and never panic for `bits <= 128`.

/// Reads `bits` (1..=128) bits starting `off` bits into `buf`. The caller
/// guarantees `off + bits <= buf.len() * 8`.
pub(crate) fn read(buf: &[u8], off: usize, bits: u32) -> u128 {
    debug_assert!((1..=128).contains(&bits) && off + bits as usize <= buf.len() * 8);
    let first = off / 8;
    let lead = off % 8;
    // Fast path: the span fits in 16 bytes loaded as one integer.
    if lead + bits as usize <= 128 && first + 16 <= buf.len() {
        let mut b = [0u8; 16];
        b.copy_from_slice(&buf[first..first + 16]);
        let v = u128::from_be_bytes(b) << lead;
        return v >> (128 - bits);
    }
    let mut v: u128 = 0;
    let mut left = bits;
    let mut pos = off;
    while left > 0 {
        let byte = buf[pos / 8];
        let in_byte = (pos % 8) as u32;
        let take = (8 - in_byte).min(left);
        let chunk = (byte >> (8 - in_byte - take)) & (((1u16 << take) - 1) as u8);
        v = (v << take) | u128::from(chunk);
        left -= take;
        pos += take as usize;
    }
    v
}

/// Writes the low `bits` (1..=128) bits of `v` at bit `off` of `buf`,
/// leaving the bits around them alone. The caller guarantees the span fits.
pub(crate) fn write(buf: &mut [u8], off: usize, bits: u32, v: u128) {
    debug_assert!((1..=128).contains(&bits) && off + bits as usize <= buf.len() * 8);
    let mut left = bits;
    let mut pos = off;
    while left > 0 {
        let in_byte = (pos % 8) as u32;
        let take = (8 - in_byte).min(left);
        let shift = 8 - in_byte - take;
        let mask = (((1u16 << take) - 1) as u8) << shift;
        let chunk = ((v >> (left - take)) as u8) & (((1u16 << take) - 1) as u8);
        let b = &mut buf[pos / 8];
        *b = (*b & !mask) | (chunk << shift);
        left -= take;
        pos += take as usize;
    }
}

/// The big-endian bytes of the low `nbytes * 8` bits of `v` (the form
/// bmv2 uses for keys: each field byte-padded on the left).
pub(crate) fn push_be(out: &mut Vec<u8>, v: u128, nbytes: usize) {
    let b = v.to_be_bytes();
    if nbytes <= 16 {
        out.extend_from_slice(&b[16 - nbytes..]);
    } else {
        out.resize(out.len() + nbytes - 16, 0);
        out.extend_from_slice(&b);
    }
}

/// The mask of `bits` low bits.
pub(crate) fn mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ipv4_version_and_ihl_from_the_first_byte() {
        let hdr = [0x45u8, 0x00, 0x00, 0x54];
        assert_eq!(read(&hdr, 0, 4), 4);
        assert_eq!(read(&hdr, 4, 4), 5);
        assert_eq!(read(&hdr, 16, 16), 0x54);
        let mut out = [0u8; 4];
        write(&mut out, 0, 4, 4);
        write(&mut out, 4, 4, 5);
        write(&mut out, 16, 16, 0x54);
        assert_eq!(out, hdr);
    }

    proptest! {
        #[test]
        fn write_then_read_round_trips(buf in proptest::collection::vec(any::<u8>(), 1..40), off in 0usize..200, bits in 1u32..=128, v in any::<u128>()) {
            let mut buf = buf;
            prop_assume!(off + bits as usize <= buf.len() * 8);
            let before = buf.clone();
            write(&mut buf, off, bits, v);
            prop_assert_eq!(read(&buf, off, bits), v & mask(bits));
            // Bits outside the span are untouched.
            for i in 0..buf.len() * 8 {
                if i < off || i >= off + bits as usize {
                    prop_assert_eq!(read(&buf, i, 1), read(&before, i, 1));
                }
            }
        }
    }
}
