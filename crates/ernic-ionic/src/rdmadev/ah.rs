//! CREATE_AH, and the RoCE v2 header templates that AHs and MODIFY_QP's
//! address vectors carry: the GIDs read from them.

use ernic_core::{AhId, Gid, PdId};
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_status as st};

use super::{MAX_GIDS, RdmaDev};

impl RdmaDev {
    pub(super) fn create_ah(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        let Ok(c) = fw::create_ah::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let id = c.id_ver();
        let Some((src, gid)) = self.template(dma, c.dma_addr(), c.length()) else {
            return st::BAD_ATTR;
        };
        match self
            .engine
            .create_ah_from(self.dev, Some(AhId(id)), pd, Some(src), gid)
        {
            Ok(_) => {
                self.ahs.insert(id, gid);
                st::OK
            }
            Err(e) => self.refuse(st::BAD_INDEX, e),
        }
    }

    /// Reads a header template of at most 256 bytes and learns its
    /// addresses: the source is always one of the guest's own GIDs, and
    /// with no mesh every destination is in this guest too. Answers the
    /// (source, destination) pair.
    pub(super) fn template(&mut self, dma: &Dma, at: u64, len: u32) -> Option<(Gid, Gid)> {
        let mut h = vec![0u8; (len as usize).min(256)];
        dma.read(at, &mut h).ok()?;
        let (src, dst) = template_gids(&h)?;
        let mut learn = vec![src];
        if self.standalone {
            learn.push(dst);
        }
        let mut gids = self.engine.gids(self.dev).ok()?.to_vec();
        let before = gids.len();
        for g in learn {
            if !gids.contains(&g) {
                gids.push(g);
            }
        }
        if gids.len() != before {
            // A guest has a handful of addresses; the table stays small.
            gids.truncate(MAX_GIDS);
            if let Some(m) = &self.mesh {
                m.set_gids(gids.clone());
            }
            let _ = self.engine.set_gids(self.dev, gids);
        }
        Some((src, dst))
    }
}

/// The (source, destination) addresses in a RoCE header template
/// (Ethernet, an optional VLAN tag, then IPv4 or IPv6), as GIDs.
pub fn template_gids(h: &[u8]) -> Option<(Gid, Gid)> {
    let mut at = 12;
    let mut ethertype = u16::from_be_bytes([*h.get(at)?, *h.get(at + 1)?]);
    if ethertype == 0x8100 {
        at += 4;
        ethertype = u16::from_be_bytes([*h.get(at)?, *h.get(at + 1)?]);
    }
    let ip = at + 2;
    match ethertype {
        0x0800 => {
            let v4 = |at: usize| -> Option<Gid> {
                let a: [u8; 4] = h.get(at..at + 4)?.try_into().ok()?;
                Some(Gid::from_ipv4(std::net::Ipv4Addr::from(a)))
            };
            Some((v4(ip + 12)?, v4(ip + 16)?))
        }
        0x86dd => Some((
            Gid::from_slice(h.get(ip + 8..ip + 24)?)?,
            Gid::from_slice(h.get(ip + 24..ip + 40)?)?,
        )),
        _ => None,
    }
}
