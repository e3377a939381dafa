//! The 40-byte global route header that prefixes every datagram (UD, GSI)
//! a receive completes with.
//!
//! For RoCE v2 the GRH area holds the IP header the packet came with: an IPv6
//! header (40 bytes, next header UDP) when the GIDs are IPv6, or 20 unused
//! bytes followed by an IPv4 header when both GIDs are IPv4-mapped. The
//! kernel's `ib_get_rdma_header_version()` tells the two apart by checking the
//! IPv4 header's checksum, so [`Repr::emit`] writes a valid one.
//!
//! Two tiers, as smoltcp's wire modules: [`Packet`] is a lossless view over
//! bytes whose accessors never panic once [`Packet::new_checked`] succeeded;
//! [`Repr`] is the validated meaning.

use crate::types::Gid;

/// Length of the GRH area at the front of a datagram receive buffer.
pub const GRH_LEN: usize = 40;

/// The wire header was malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GrhError {
    /// Fewer than 40 bytes.
    #[error("GRH needs {GRH_LEN} bytes, got {0}")]
    Truncated(usize),
    /// Neither an IPv6 header nor an IPv4 header with a valid checksum.
    #[error("GRH holds neither an IPv6 nor a valid IPv4 header")]
    Unrecognized,
}

mod field {
    use std::ops::Range;
    pub const VER_TC_FLOW: Range<usize> = 0..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SGID: Range<usize> = 8..24;
    pub const DGID: Range<usize> = 24..40;
    /// The IPv4 header of the RoCE v2 IPv4 form.
    pub const IPV4: Range<usize> = 20..40;
}

/// UDP, the next header of RoCE v2.
const IPPROTO_UDP: u8 = 17;

/// A view over a GRH's bytes.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view without checking the length; accessors may panic on short buffers.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view over a buffer of at least [`GRH_LEN`] bytes; after this
    /// succeeds no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, GrhError> {
        let p = Packet::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks the buffer is long enough.
    pub fn check_len(&self) -> Result<(), GrhError> {
        let n = self.buffer.as_ref().len();
        if n < GRH_LEN {
            Err(GrhError::Truncated(n))
        } else {
            Ok(())
        }
    }

    /// The IP version nibble of the IPv6 form.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_TC_FLOW.start] >> 4
    }

    /// The payload length of the IPv6 form.
    pub fn payload_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PAYLOAD_LEN];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// The next-header byte of the IPv6 form.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NEXT_HEADER]
    }

    /// The hop limit of the IPv6 form.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// The source GID of the IPv6 form.
    pub fn sgid(&self) -> Gid {
        Gid::from_slice(&self.buffer.as_ref()[field::SGID]).expect("a 16-byte field")
    }

    /// The destination GID of the IPv6 form.
    pub fn dgid(&self) -> Gid {
        Gid::from_slice(&self.buffer.as_ref()[field::DGID]).expect("a 16-byte field")
    }

    /// The IPv4 header of the IPv4 form.
    pub fn ipv4_header(&self) -> &[u8] {
        &self.buffer.as_ref()[field::IPV4]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
}

/// The Internet checksum of an IPv4 header.
fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum = 0u32;
    for pair in h.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// What a GRH says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// The sender's GID.
    pub sgid: Gid,
    /// The receiver's GID.
    pub dgid: Gid,
    /// Bytes of payload that follow (the datagram, without the GRH).
    pub payload_len: u16,
    /// Hop limit (IPv6) or TTL (IPv4).
    pub hop_limit: u8,
}

impl Repr {
    /// Reads a GRH in either form.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, GrhError> {
        p.check_len()?;
        let v4 = p.ipv4_header();
        if v4[0] == 0x45 && ipv4_checksum(v4) == 0 {
            let mut s = [0u8; 4];
            let mut d = [0u8; 4];
            s.copy_from_slice(&v4[12..16]);
            d.copy_from_slice(&v4[16..20]);
            let total = u16::from_be_bytes([v4[2], v4[3]]);
            return Ok(Repr {
                sgid: Gid::from_ipv4(s.into()),
                dgid: Gid::from_ipv4(d.into()),
                payload_len: total.saturating_sub(20 + 8),
                hop_limit: v4[8],
            });
        }
        if p.version() == 6 {
            return Ok(Repr {
                sgid: p.sgid(),
                dgid: p.dgid(),
                payload_len: p.payload_len().saturating_sub(8),
                hop_limit: p.hop_limit(),
            });
        }
        Err(GrhError::Unrecognized)
    }

    /// Writes the GRH: the IPv4 form when both GIDs are IPv4-mapped, the IPv6
    /// form otherwise. Lengths count the UDP header of RoCE v2, as the IP
    /// header on the wire would.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = &mut p.bytes_mut()[..GRH_LEN];
        b.fill(0);
        match (self.sgid.to_ipv4(), self.dgid.to_ipv4()) {
            (Some(s), Some(d)) => {
                let h = &mut b[field::IPV4];
                let total = self.payload_len.saturating_add(20 + 8);
                h[0] = 0x45;
                h[2..4].copy_from_slice(&total.to_be_bytes());
                h[6] = 0x40; // don't fragment
                h[8] = self.hop_limit;
                h[9] = IPPROTO_UDP;
                h[12..16].copy_from_slice(&s.octets());
                h[16..20].copy_from_slice(&d.octets());
                let sum = ipv4_checksum(h);
                h[10..12].copy_from_slice(&sum.to_be_bytes());
            }
            _ => {
                b[0] = 0x60;
                let len = self.payload_len.saturating_add(8);
                b[field::PAYLOAD_LEN].copy_from_slice(&len.to_be_bytes());
                b[field::NEXT_HEADER] = IPPROTO_UDP;
                b[field::HOP_LIMIT] = self.hop_limit;
                b[field::SGID].copy_from_slice(&self.sgid.0);
                b[field::DGID].copy_from_slice(&self.dgid.0);
            }
        }
    }

    /// The GRH as 40 bytes.
    pub fn to_bytes(&self) -> [u8; GRH_LEN] {
        let mut out = [0u8; GRH_LEN];
        self.emit(&mut Packet::new_unchecked(&mut out[..]));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // An IPv6-form GRH for fe80::1 -> fe80::2 with 8 bytes of payload.
    static V6_BYTES: [u8; 40] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x10, 0x11, 0x40, //
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, //
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    ];

    #[test]
    fn ipv6_form_is_byte_exact() {
        let repr = Repr {
            sgid: "fe80::1".parse().unwrap(),
            dgid: "fe80::2".parse().unwrap(),
            payload_len: 8,
            hop_limit: 64,
        };
        assert_eq!(repr.to_bytes(), V6_BYTES);
        let p = Packet::new_checked(&V6_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), repr);
    }

    #[test]
    fn ipv4_form_has_valid_checksum_and_round_trips() {
        let repr = Repr {
            sgid: "192.168.1.1".parse().unwrap(),
            dgid: "192.168.1.2".parse().unwrap(),
            payload_len: 100,
            hop_limit: 64,
        };
        let b = repr.to_bytes();
        assert_eq!(&b[..20], &[0u8; 20]);
        assert_eq!(b[20], 0x45);
        assert_eq!(u16::from_be_bytes([b[22], b[23]]), 128);
        assert_eq!(&b[32..36], &[192, 168, 1, 1]);
        assert_eq!(ipv4_checksum(&b[20..40]), 0);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            repr
        );
    }

    #[test]
    fn short_and_garbage_headers_are_refused() {
        assert_eq!(
            Packet::new_checked(&[0u8; 39][..]).unwrap_err(),
            GrhError::Truncated(39)
        );
        let p = Packet::new_checked(&[0u8; 40][..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap_err(), GrhError::Unrecognized);
    }
}
