//! Addresses as rdma_cm holds them: socket addresses to and from
//! `sockaddr_storage`, rdma_cm's private-data header for a request, and a
//! first PSN.

use std::ffi::c_int;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ernic_cm::private_data::cma;

/// A socket address from a `sockaddr_storage`.
pub(crate) fn from_storage(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match c_int::from(s.ss_family) {
        libc::AF_INET => {
            // SAFETY: an AF_INET storage holds a sockaddr_in.
            let sin = unsafe { &*std::ptr::from_ref(s).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: an AF_INET6 storage holds a sockaddr_in6.
            let sin6 = unsafe { &*std::ptr::from_ref(s).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)),
                u16::from_be(sin6.sin6_port),
            ))
        }
        _ => None,
    }
}

/// A `sockaddr_storage` for a socket address.
pub(crate) fn to_storage(a: SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: plain C data; zero is valid.
    let mut s: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            // SAFETY: storage is larger than and aligned for sockaddr_in.
            let sin = unsafe { &mut *std::ptr::from_mut(&mut s).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = v4.port().to_be();
            sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
        }
        SocketAddr::V6(v6) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *std::ptr::from_mut(&mut s).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = v6.port().to_be();
            sin6.sin6_addr.s6_addr = v6.ip().octets();
        }
    }
    s
}

/// A random 24-bit PSN.
pub(crate) fn psn() -> u32 {
    random() as u32 & 0xff_ffff
}

/// 64 random bits from the kernel (`getrandom(2)`); should it fail, the
/// clock and the process id, which still differ between processes.
pub(crate) fn random() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: `b` is writable for its length.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == b.len() as isize {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    t ^ u64::from(std::process::id()).rotate_left(40)
}

/// rdma_cm's header for a REQ from `src` to `dst`.
pub(crate) fn cma_header(src: SocketAddr, dst: SocketAddr) -> [u8; cma::LEN] {
    let addrs = match (src.ip(), dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => cma::Addrs::V4 { src: s, dst: d },
        (s, d) => cma::Addrs::V6 {
            src: match s {
                IpAddr::V4(v) => v.to_ipv6_mapped(),
                IpAddr::V6(v) => v,
            },
            dst: match d {
                IpAddr::V4(v) => v.to_ipv6_mapped(),
                IpAddr::V6(v) => v,
            },
        },
    };
    let mut b = [0u8; cma::LEN];
    cma::Repr {
        port: src.port(),
        addrs,
    }
    .emit(&mut cma::Packet::new_unchecked(&mut b[..]));
    b
}
