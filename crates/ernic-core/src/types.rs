//! Newtypes for the values that are easy to mix up: queue pair numbers, memory
//! keys, GIDs and object handles.
//!
//! Every id that crosses an API boundary has its own type, so a CQ handle can
//! not be passed where a QP number is expected and an rkey can not be used as
//! an lkey without saying so.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// A queue pair number (24 bits on the wire).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Qpn(pub u32);

impl Qpn {
    /// The general services interface QP (QP1), which carries management datagrams.
    pub const GSI: Qpn = Qpn(1);
    /// Largest value a QP number may take (24 bits).
    pub const MAX: u32 = 0x00ff_ffff;
}

impl fmt::Display for Qpn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#08x}", self.0)
    }
}

/// A local memory key, named in the SGEs of one's own work requests.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Lkey(pub u32);

/// A remote memory key, handed to a peer so it can name this memory in RDMA
/// READ, WRITE and atomic requests.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Rkey(pub u32);

impl fmt::Display for Lkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::Display for Rkey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// The index part of a memory key: the low 8 bits of a key are a variant byte
/// that fast registration may change, the upper 24 bits name the MR slot.
pub(crate) const fn key_index(key: u32) -> u32 {
    key >> 8
}

/// A 128-bit global identifier. For RoCE it is an IPv6 address, or an IPv4
/// address in `::ffff:a.b.c.d` form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The GID that stands for an IPv4 address (`::ffff:a.b.c.d`).
    pub fn from_ipv4(addr: Ipv4Addr) -> Gid {
        Gid(addr.to_ipv6_mapped().octets())
    }

    /// The GID in `b`, if `b` is exactly 16 bytes (a wire field).
    pub fn from_slice(b: &[u8]) -> Option<Gid> {
        b.try_into().ok().map(Gid)
    }

    /// The GID as an IPv6 address.
    pub fn to_ipv6(self) -> Ipv6Addr {
        Ipv6Addr::from(self.0)
    }

    /// The IPv4 address this GID maps, if it is IPv4-mapped.
    pub fn to_ipv4(self) -> Option<Ipv4Addr> {
        self.to_ipv6().to_ipv4_mapped()
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_ipv4() {
            Some(v4) => write!(f, "::ffff:{v4}"),
            None => write!(f, "{}", self.to_ipv6()),
        }
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

/// The text could not be read as a GID.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a GID: give an IPv6 address (fe80::1) or an IPv4 address (10.0.0.1)")]
pub struct GidParseError {
    text: String,
}

impl FromStr for Gid {
    type Err = GidParseError;

    fn from_str(s: &str) -> Result<Gid, GidParseError> {
        if let Ok(v6) = s.parse::<Ipv6Addr>() {
            return Ok(Gid(v6.octets()));
        }
        if let Ok(v4) = s.parse::<Ipv4Addr>() {
            return Ok(Gid::from_ipv4(v4));
        }
        Err(GidParseError { text: s.to_owned() })
    }
}

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
        pub struct $name(pub u32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

handle!(
    /// A protection domain handle, unique within one device.
    PdId
);
handle!(
    /// A completion queue handle, unique within one device.
    CqId
);
handle!(
    /// A shared receive queue handle, unique within one device.
    SrqId
);
handle!(
    /// An address handle, unique within one device.
    AhId
);

/// One device of an engine. An engine serves one or more devices that share a
/// memory space; each device has its own GIDs and its own id spaces.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct DeviceId(pub u16);

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dev{}", self.0)
    }
}

/// A node of the mesh: one server (or process) with its own engine.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct NodeId(pub u16);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// Where a GID lives: a device of this engine, or another node.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Route {
    /// A device of this engine.
    Local(DeviceId),
    /// Another node of the mesh.
    Remote(NodeId),
}

/// Reads a byte count as people write it on command lines and in option
/// strings: `64`, `4K`, `1M`, `2G`, `1T` (powers of 1024; `KiB`, `KB` and
/// `B` also accepted, in either case). The error is one line for a person.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num.parse().map_err(|_| {
        format!("{s:?} is not a size: give bytes, or a number with K, M, G or T (4K, 1M)")
    })?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?}; use K, M, G or T (powers of 1024)"
            ));
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_as_people_write_them() {
        use super::parse_size;
        for (text, bytes) in [
            ("64", 64),
            ("4K", 4096),
            ("4kib", 4096),
            ("1M", 1 << 20),
            ("2G", 2 << 30),
            ("1T", 1 << 40),
            (" 8KB ", 8192),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "K", "12Q", "-1", "99999999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    #[test]
    fn gid_parses_both_families() {
        let g: Gid = "10.1.2.3".parse().unwrap();
        assert_eq!(g.0[10..12], [0xff, 0xff]);
        assert_eq!(g.0[12..], [10, 1, 2, 3]);
        assert_eq!(g.to_string(), "::ffff:10.1.2.3");
        let g: Gid = "fe80::1".parse().unwrap();
        assert_eq!(g.0[0], 0xfe);
        assert_eq!(g.0[15], 1);
        assert_eq!(g.to_string(), "fe80::1");
        let err = "fe80::zz".parse::<Gid>().unwrap_err().to_string();
        assert!(err.contains("fe80::zz"), "{err}");
    }

    #[test]
    fn key_index_drops_variant_byte() {
        assert_eq!(key_index(0x1234_56ab), 0x12_3456);
    }
}
