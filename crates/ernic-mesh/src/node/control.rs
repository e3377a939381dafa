//! The control frames' bodies (GIDS, REGISTER, TOPOLOGY): how each is
//! written and read. The readers take bytes from peers; they check every
//! count against its cap before it sizes anything, and are fuzzed
//! (`fuzz/fuzz_targets/mesh_frame.rs`).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use ernic_core::{Gid, NodeId};

use crate::frame::{self, FrameError, Kind, NO_NODE, Reader, Writer};

use super::table::NodeTable;
use super::{MAX_GIDS, Peer};

pub(super) fn gids_frame(src: u16, node: u16, alive: bool, gids: &[Gid]) -> Vec<u8> {
    let mut w = Writer::default()
        .u16(node)
        .u8(u8::from(alive))
        .u16(gids.len() as u16);
    for g in gids {
        w = w.gid(*g);
    }
    frame::frame(Kind::Gids, src, NO_NODE, &w.0)
}

/// Reads a GIDS body (node, alive, count, GIDs); public for the fuzz
/// targets (`fuzz/`), re-exported at the crate root.
pub fn parse_gids(body: &[u8]) -> Result<(u16, bool, Vec<Gid>), FrameError> {
    let mut r = Reader::new(Kind::Gids, body);
    let node = r.u16()?;
    let alive = r.u8()? != 0;
    let gids = read_gids(&mut r, Kind::Gids)?;
    r.end()?;
    Ok((node, alive, gids))
}

/// A GID count and as many GIDs, at most [`MAX_GIDS`].
fn read_gids(r: &mut Reader<'_>, kind: Kind) -> Result<Vec<Gid>, FrameError> {
    let n = usize::from(r.u16()?);
    if n > MAX_GIDS {
        return Err(FrameError::Body(kind));
    }
    (0..n).map(|_| r.gid()).collect()
}

/// A registration's payload: boot id, wanted id, listen port, GIDs;
/// public for the fuzz targets (`fuzz/`), re-exported at the crate root.
pub fn parse_register(body: &[u8]) -> Result<(u64, u16, u16, Vec<Gid>), FrameError> {
    let mut r = Reader::new(Kind::Register, body);
    let (boot, wanted, port) = (r.u64()?, r.u16()?, r.u16()?);
    let gids = read_gids(&mut r, Kind::Register)?;
    r.end()?;
    Ok((boot, wanted, port, gids))
}

/// A TOPOLOGY body: the table's records, each id, alive, address, port.
pub(super) fn topology_body(table: &NodeTable) -> Vec<u8> {
    let mut w = Writer::default().u16(table.len() as u16);
    for (id, r) in table.iter() {
        let (ip, port) = match r.addr {
            Some(a) => (
                match a.ip() {
                    IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                    IpAddr::V6(v6) => v6,
                },
                a.port(),
            ),
            None => (Ipv6Addr::UNSPECIFIED, 0),
        };
        w = w
            .u16(id)
            .u8(u8::from(r.alive))
            .gid(Gid(ip.octets()))
            .u16(port);
    }
    w.0
}

/// Reads a TOPOLOGY body (count, then id, alive, address, port each);
/// public for the fuzz targets (`fuzz/`), re-exported at the crate root.
pub fn parse_topology(body: &[u8]) -> Result<Vec<Peer>, FrameError> {
    let mut r = Reader::new(Kind::Topology, body);
    let n = r.u16()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let id = r.u16()?;
        let alive = r.u8()? != 0;
        let ip = Ipv6Addr::from(r.gid()?.0);
        let port = r.u16()?;
        let addr = (port != 0).then(|| match ip.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), port),
            None => SocketAddr::new(IpAddr::V6(ip), port),
        });
        out.push(Peer {
            id: NodeId(id),
            alive,
            addr,
        });
    }
    r.end()?;
    Ok(out)
}
