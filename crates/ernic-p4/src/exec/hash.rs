//! bmv2's hash and checksum algorithms (`calculations.cpp`), over the bytes
//! a calculation's inputs pack into: fields bit-packed in order, whole
//! headers, the payload.

use crate::program::HashAlgo;

const CRC16_ARC: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_ARC);
const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
const CRC_CCITT: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_IBM_3740);

/// Hashes `buf` with `algo`; `rr` is the round-robin counter of the
/// calculation.
pub(crate) fn hash(algo: HashAlgo, buf: &[u8], rr: &mut u64) -> u64 {
    match algo {
        HashAlgo::Crc16 => u64::from(CRC16_ARC.checksum(buf)),
        HashAlgo::Crc32 => u64::from(CRC32.checksum(buf)),
        HashAlgo::CrcCcitt => u64::from(CRC_CCITT.checksum(buf)),
        HashAlgo::Csum16 => u64::from(csum16(buf)),
        HashAlgo::Identity => buf
            .iter()
            .take(8)
            .fold(0u64, |v, &b| (v << 8) | u64::from(b)),
        HashAlgo::Xor16 => xor_words::<2>(buf),
        HashAlgo::Xor32 => xor_words::<4>(buf),
        HashAlgo::RoundRobin => {
            let v = *rr;
            *rr = rr.wrapping_add(1);
            v
        }
    }
}

/// The Internet checksum (RFC 1071): the one's complement of the one's
/// complement sum of big-endian 16-bit words, an odd byte padded with 0.
pub(crate) fn csum16(buf: &[u8]) -> u16 {
    // A u64 cannot overflow: a packet is far shorter than 2^48 words.
    let mut sum: u64 = 0;
    let mut chunks = buf.chunks_exact(2);
    for c in &mut chunks {
        sum += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [b] = chunks.remainder() {
        sum += u64::from(*b) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// XOR of `N`-byte big-endian words, the last zero-padded on the right.
fn xor_words<const N: usize>(buf: &[u8]) -> u64 {
    let mut v = 0u64;
    for c in buf.chunks(N) {
        let mut w = 0u64;
        for i in 0..N {
            w = (w << 8) | u64::from(c.get(i).copied().unwrap_or(0));
        }
        v ^= w;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values_of_the_catalogue() {
        // The CRC catalogue's check value: the CRC of "123456789".
        let mut rr = 0;
        assert_eq!(hash(HashAlgo::Crc16, b"123456789", &mut rr), 0xbb3d);
        assert_eq!(hash(HashAlgo::Crc32, b"123456789", &mut rr), 0xcbf43926);
        assert_eq!(hash(HashAlgo::CrcCcitt, b"123456789", &mut rr), 0x29b1);
    }

    #[test]
    fn ipv4_header_checksum() {
        // A well-known IPv4 header (checksum field zeroed); its checksum
        // is 0xb861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0x00,
            0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(csum16(&h), 0xb861);
        assert_eq!(csum16(&[0xff]), 0x00ff);
    }

    #[test]
    fn identity_xor_and_round_robin() {
        let mut rr = 0;
        assert_eq!(hash(HashAlgo::Identity, &[1, 2, 3], &mut rr), 0x010203);
        assert_eq!(
            hash(HashAlgo::Xor16, &[0x12, 0x34, 0x56], &mut rr),
            0x1234 ^ 0x5600
        );
        assert_eq!(hash(HashAlgo::RoundRobin, &[], &mut rr), 0);
        assert_eq!(hash(HashAlgo::RoundRobin, &[], &mut rr), 1);
    }
}
