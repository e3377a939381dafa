//! Address handles: CREATE_AH from a RoCE v2 header template, and
//! DESTROY_AH.

use ernic_core::Gid;
use ernic_ionic::bytes::put;
use ernic_ionic::doorbell::PAGE;
use ernic_ionic::fw::{self, admin_op};

use crate::{Driver, Error, Pd};

impl Driver {
    /// Creates an address handle for `dgid` (sent from this driver's GID)
    /// in the driver's own PD; answers its id.
    pub fn create_ah(&mut self, dgid: Gid) -> Result<u32, Error> {
        self.create_ah_in(self.pd, dgid)
    }

    /// As [`create_ah`](Driver::create_ah), in `pd`.
    pub fn create_ah_in(&mut self, pd: Pd, dgid: Gid) -> Result<u32, Error> {
        let (Some(src), Some(dst)) = (self.gid.to_ipv4(), dgid.to_ipv4()) else {
            return Err(Error::Unsupported("IPv4-mapped GIDs only"));
        };
        let hdr = self.alloc(PAGE)?;
        let h = ipv4_template(src.octets(), dst.octets());
        self.write(&hdr, 0, &h);
        let id = self.next_ah;
        use fw::create_ah as f;
        let mut b = [0u8; f::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = f::Packet::new_unchecked(&mut b);
        p.set_dma_addr(hdr.addr());
        p.set_length(h.len() as u32);
        p.set_pd_id(pd.0);
        p.set_id_ver(id);
        let r = self.admin(admin_op::CREATE_AH, &b);
        // The device reads the template during the command.
        self.free(hdr);
        r?;
        self.next_ah += 1;
        Ok(id)
    }

    /// Destroys an address handle.
    pub fn destroy_ah(&mut self, ah: u32) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_AH, &ah.to_le_bytes())
            .map(|_| ())
    }
}

/// A RoCE v2 header template as the kernel driver builds one: Ethernet,
/// IPv4 from `src` to `dst`, UDP.
pub(crate) fn ipv4_template(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut h = vec![0u8; 14 + 20 + 8];
    put(&mut h, 12, &[0x08, 0x00]);
    h[14] = 0x45;
    put(&mut h, 14 + 12, &src);
    put(&mut h, 14 + 16, &dst);
    h
}
