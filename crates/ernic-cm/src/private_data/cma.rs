//! The rdma_cm private-data header (`struct cma_hdr`,
//! `drivers/infiniband/core/cma.c`): the first 36 bytes of the private
//! data of a REQ that rdma_cm sends over IB or RoCE, naming the IP
//! addresses and source port the connection was asked for by; the
//! consumer's own private data follows it ([`LEN`] bytes in).
//!
//! Layout: `cma_version` (0), `ip_version` (the IP version in its top
//! nibble), `port` (big-endian), then `src_addr` and `dst_addr` as `union
//! cma_ip_addr`: an `in6_addr`, or for IPv4 three zero words of padding
//! and the address in the last 4 bytes. And the port space's service ids
//! (`cma_get_service_id`: `ps << 16 | port`, `RDMA_IB_IP_PS_*` of
//! `include/rdma/rdma_cm.h`). After [`Packet::new_checked`] no accessor
//! panics.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::Error;
use crate::bits::{Field, array, get_be16, set_bytes, view};

/// Bytes of the header.
pub const LEN: usize = 36;
/// `CMA_VERSION`.
pub const CMA_VERSION: u8 = 0x00;

/// `RDMA_PS_TCP`: the port space of RC connections (NVMe/RDMA's).
pub const RDMA_PS_TCP: u16 = 0x0106;
/// `RDMA_PS_UDP`.
pub const RDMA_PS_UDP: u16 = 0x0111;
/// `RDMA_PS_IB`.
pub const RDMA_PS_IB: u16 = 0x013F;
/// `RDMA_PS_IPOIB`.
pub const RDMA_PS_IPOIB: u16 = 0x0002;
/// `RDMA_IB_IP_PS_MASK`: the bits of a service id that name the port space.
pub const PS_MASK: u64 = 0xFFFF_FFFF_FFFF_0000;

/// The service id an rdma_cm listener on `port` of port space `ps` takes
/// (`cma_get_service_id`): for [`RDMA_PS_TCP`] and port 4420,
/// `0x0000_0000_0106_1144`.
pub const fn service_id(ps: u16, port: u16) -> u64 {
    (ps as u64) << 16 | port as u64
}

/// The port of a service id of port space `ps`, or `None` if the id is
/// not in that space.
pub const fn service_port(service_id: u64, ps: u16) -> Option<u16> {
    if service_id & PS_MASK == (ps as u64) << 16 {
        Some(service_id as u16)
    } else {
        None
    }
}

/// The fields, as byte ranges.
pub mod field {
    use super::Field;
    /// `cma_version`.
    pub const CMA_VERSION: usize = 0;
    /// `ip_version`: the version in bits 7:4.
    pub const IP_VERSION: usize = 1;
    /// `port` (big-endian): the active side's source port.
    pub const PORT: Field = 2..4;
    /// `src_addr`.
    pub const SRC_ADDR: Field = 4..20;
    /// `dst_addr`.
    pub const DST_ADDR: Field = 20..36;
    /// Where an IPv4 address lies inside a `union cma_ip_addr`.
    pub const IP4_IN_UNION: Field = 12..16;
}

view!("rdma_cm header", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `cma_version`.
    pub fn cma_version(&self) -> u8 {
        self.buffer.as_ref()[field::CMA_VERSION]
    }
    /// The IP version (`ip_version >> 4`).
    pub fn ip_version(&self) -> u8 {
        self.buffer.as_ref()[field::IP_VERSION] >> 4
    }
    /// `port`.
    pub fn port(&self) -> u16 {
        get_be16(self.buffer.as_ref(), field::PORT)
    }
    /// `src_addr`, all 16 bytes.
    pub fn src_addr(&self) -> [u8; 16] {
        array(self.buffer.as_ref(), field::SRC_ADDR)
    }
    /// `dst_addr`, all 16 bytes.
    pub fn dst_addr(&self) -> [u8; 16] {
        array(self.buffer.as_ref(), field::DST_ADDR)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `cma_version`.
    pub fn set_cma_version(&mut self, v: u8) {
        self.buffer.as_mut()[field::CMA_VERSION] = v;
    }
    /// Sets the IP version (`cma_set_ip_ver`: the low nibble is kept).
    pub fn set_ip_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::IP_VERSION];
        *b = (v << 4) | (*b & 0x0f);
    }
    /// Sets `port`.
    pub fn set_port(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::PORT, &v.to_be_bytes());
    }
    /// Sets `src_addr`, all 16 bytes.
    pub fn set_src_addr(&mut self, v: &[u8; 16]) {
        set_bytes(self.buffer.as_mut(), field::SRC_ADDR, v);
    }
    /// Sets `dst_addr`, all 16 bytes.
    pub fn set_dst_addr(&mut self, v: &[u8; 16]) {
        set_bytes(self.buffer.as_mut(), field::DST_ADDR, v);
    }
}

/// The addresses of a header, both of the family its IP version says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addrs {
    /// IP version 4.
    V4 {
        /// The active side's address.
        src: Ipv4Addr,
        /// The address it connected to.
        dst: Ipv4Addr,
    },
    /// IP version 6.
    V6 {
        /// The active side's address.
        src: Ipv6Addr,
        /// The address it connected to.
        dst: Ipv6Addr,
    },
}

/// An rdma_cm header. An IPv4 header's padding and the low nibble of
/// `ip_version` are not kept: they are emitted as 0, as rdma_cm writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// The active side's source port.
    pub port: u16,
    /// The addresses.
    pub addrs: Addrs,
}

fn ip4(union: [u8; 16]) -> Ipv4Addr {
    Ipv4Addr::from(array::<4>(&union, field::IP4_IN_UNION))
}

fn ip4_union(a: Ipv4Addr) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[field::IP4_IN_UNION].copy_from_slice(&a.octets());
    u
}

impl Repr {
    /// Reads a header: version 0, IP version 4 or 6.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check_len()?;
        if p.cma_version() != CMA_VERSION {
            return Err(Error::CmaVersion {
                got: p.cma_version(),
            });
        }
        let addrs = match p.ip_version() {
            4 => Addrs::V4 {
                src: ip4(p.src_addr()),
                dst: ip4(p.dst_addr()),
            },
            6 => Addrs::V6 {
                src: Ipv6Addr::from(p.src_addr()),
                dst: Ipv6Addr::from(p.dst_addr()),
            },
            got => return Err(Error::IpVersion { got }),
        };
        Ok(Repr {
            port: p.port(),
            addrs,
        })
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes the header into a checked view.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.buffer.as_mut()[..LEN].fill(0);
        p.set_cma_version(CMA_VERSION);
        p.set_port(self.port);
        match self.addrs {
            Addrs::V4 { src, dst } => {
                p.set_ip_version(4);
                p.set_src_addr(&ip4_union(src));
                p.set_dst_addr(&ip4_union(dst));
            }
            Addrs::V6 { src, dst } => {
                p.set_ip_version(6);
                p.set_src_addr(&src.octets());
                p.set_dst_addr(&dst.octets());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 header, by hand from `struct cma_hdr`: 10.0.0.1 port 0xc350
    /// (50000) connecting to 10.0.0.2 (the address in the union's last
    /// word).
    static V4: [u8; LEN] = [
        0x00, // cma_version
        0x40, // ip_version 4 in bits 7:4
        0xc3, 0x50, // port
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1, // src_addr
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2, // dst_addr
    ];

    fn v6() -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[1] = 0x60;
        b[2..4].copy_from_slice(&[0x12, 0x34]);
        b[4..20].copy_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
        b[20..36].copy_from_slice(&"fd00::2:3".parse::<Ipv6Addr>().unwrap().octets());
        b
    }

    #[test]
    fn ipv4_and_ipv6_headers_read_and_write_as_cma_hdr_lays_them_out() {
        let r = Repr::parse(&Packet::new_checked(&V4[..]).unwrap()).unwrap();
        let want = Repr {
            port: 50000,
            addrs: Addrs::V4 {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 0, 2),
            },
        };
        assert_eq!(r, want);
        let mut out = [0xffu8; LEN];
        want.emit(&mut Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, V4);

        let b = v6();
        let r = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
        let want = Repr {
            port: 0x1234,
            addrs: Addrs::V6 {
                src: "fe80::1".parse().unwrap(),
                dst: "fd00::2:3".parse().unwrap(),
            },
        };
        assert_eq!(r, want);
        let mut out = [0xffu8; LEN];
        want.emit(&mut Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, b);
    }

    #[test]
    fn other_versions_and_short_buffers_are_refused() {
        for n in 0..LEN {
            assert_eq!(
                Packet::new_checked(&V4[..n]).unwrap_err(),
                Error::Truncated {
                    format: "rdma_cm header",
                    need: LEN,
                    len: n
                }
            );
            assert!(Repr::parse(&Packet::new_unchecked(&V4[..n])).is_err());
        }
        let mut b = V4;
        b[0] = 1;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::CmaVersion { got: 1 }
        );
        let mut b = V4;
        b[1] = 0x50;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::IpVersion { got: 5 }
        );
    }

    #[test]
    fn service_ids_are_the_port_space_and_the_port() {
        assert_eq!(service_id(RDMA_PS_TCP, 4420), 0x0000_0000_0106_1144);
        assert_eq!(service_port(0x0000_0000_0106_1144, RDMA_PS_TCP), Some(4420));
        assert_eq!(service_port(0x0000_0000_0111_1144, RDMA_PS_TCP), None);
        assert_eq!(service_port(0x0100_0000_0106_1144, RDMA_PS_TCP), None);
    }
}
