//! SPDK's transport ID, as `spdk_nvme_perf -r` takes it
//! (`spdk_nvme_transport_id_parse`): whitespace-separated `key:value`
//! pairs, keys case-insensitive, `=` accepted for `:`. ernic speaks one
//! transport, so `trtype` must be RDMA and `adrfam` IPv4.

use std::net::Ipv4Addr;

use anyhow::{Result, bail};

/// Where a controller is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trid {
    /// `traddr`.
    pub addr: Ipv4Addr,
    /// `trsvcid` (4420 when absent).
    pub port: u16,
    /// `subnqn`, when given.
    pub subnqn: Option<String>,
}

impl Trid {
    /// Reads a transport ID string.
    pub fn parse(s: &str) -> Result<Trid> {
        let mut addr = None;
        let mut port = 4420;
        let mut subnqn = None;
        for pair in s.split_whitespace() {
            let Some((k, v)) = pair.split_once([':', '=']) else {
                bail!("transport ID {s:?}: {pair:?} is not key:value");
            };
            match k.to_ascii_lowercase().as_str() {
                "trtype" if v.eq_ignore_ascii_case("rdma") => {}
                "trtype" => {
                    bail!("transport ID {s:?}: trtype {v} is not served; ernic speaks RDMA")
                }
                "adrfam" if v.eq_ignore_ascii_case("ipv4") => {}
                "adrfam" => bail!("transport ID {s:?}: adrfam {v} is not served; use IPv4"),
                "traddr" => match v.parse() {
                    Ok(a) => addr = Some(a),
                    Err(_) => bail!("transport ID {s:?}: traddr {v:?} is not an IPv4 address"),
                },
                "trsvcid" => match v.parse::<u16>() {
                    Ok(p) if p > 0 => port = p,
                    _ => bail!("transport ID {s:?}: trsvcid {v:?} is not a port (1-65535)"),
                },
                "subnqn" if !v.is_empty() && v.len() <= 223 => subnqn = Some(v.to_string()),
                "subnqn" => bail!("transport ID {s:?}: subnqn must be 1 to 223 bytes"),
                "hostaddr" | "hostsvcid" | "ns" | "alt_traddr" | "priority" => {}
                _ => bail!(
                    "transport ID {s:?}: unknown key {k:?} (trtype, adrfam, traddr, trsvcid, subnqn)"
                ),
            }
        }
        let Some(addr) = addr else {
            bail!(
                "transport ID {s:?}: traddr is missing (e.g. 'trtype:RDMA adrfam:IPv4 traddr:192.0.2.10 trsvcid:4420')"
            );
        };
        Ok(Trid { addr, port, subnqn })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_spdk_nvme_perf_takes() {
        let t = Trid::parse(
            "trtype:RDMA adrfam:IPv4 traddr:192.0.2.10 trsvcid:4421 subnqn:nqn.2024-01.io.ernic:a",
        )
        .unwrap();
        assert_eq!(t.addr, Ipv4Addr::new(192, 0, 2, 10));
        assert_eq!(t.port, 4421);
        assert_eq!(t.subnqn.as_deref(), Some("nqn.2024-01.io.ernic:a"));
        let t = Trid::parse("TRTYPE=rdma traddr=10.0.0.1").unwrap();
        assert_eq!((t.port, t.subnqn), (4420, None));
    }

    #[test]
    fn refuses_what_it_cannot_reach() {
        for bad in [
            "trtype:TCP traddr:10.0.0.1",
            "trtype:RDMA adrfam:IPv6 traddr:10.0.0.1",
            "traddr:fe80::1",
            "trtype:RDMA",
            "traddr:10.0.0.1 trsvcid:0",
            "traddr:10.0.0.1 colour:blue",
            "traddr",
        ] {
            assert!(Trid::parse(bad).is_err(), "{bad}");
        }
    }
}
