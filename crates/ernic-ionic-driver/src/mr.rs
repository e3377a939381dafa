//! Memory regions: CREATE_MR over driver buffers or ranges, fast
//! registration MRs, and DESTROY_MR.

use ernic_core::Access;
use ernic_ionic::fw::{self, admin_op};

use crate::{Buf, Driver, Error, Mr, Pd};

impl Driver {
    /// Allocates an MR for fast registration of up to `max_pages` 4 KiB
    /// pages in the driver's own PD; REG_MR work requests bind it (see
    /// [`post_reg_mr`](Driver::post_reg_mr)).
    pub fn alloc_fast_mr(&mut self, max_pages: u32) -> Result<u32, Error> {
        self.alloc_fast_mr_in(self.pd, max_pages)
    }

    /// As [`alloc_fast_mr`](Driver::alloc_fast_mr), in `pd`: only a QP of
    /// `pd` can bind or invalidate it.
    pub fn alloc_fast_mr_in(&mut self, pd: Pd, max_pages: u32) -> Result<u32, Error> {
        let key = self.next_mr << 8;
        use fw::create_mr as f;
        let mut b = [0u8; f::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = f::Packet::new_unchecked(&mut b);
        p.set_pd_id(pd.0);
        p.set_id_ver(key);
        p.set_map_count(max_pages);
        // IONIC_MRF_PHYS_MR: a key the work requests set, invalidation.
        p.set_dbid_flags((1u16 << 13) | (1 << 15));
        p.set_page_size_log2(12);
        self.admin(admin_op::CREATE_MR, &b)?;
        self.next_mr += 1;
        Ok(key)
    }

    /// Deregisters an MR.
    pub fn dereg_mr(&mut self, mr: Mr) -> Result<(), Error> {
        self.dereg_key(mr.key)
    }

    /// Registers `buf` with every right in the driver's own PD; its key
    /// names it in SGEs and as an rkey.
    pub fn reg_mr(&mut self, buf: Buf) -> Result<Mr, Error> {
        self.reg_mr_in(self.pd, buf)
    }

    /// As [`reg_mr`](Driver::reg_mr), in `pd`: only QPs of `pd` reach the
    /// buffer through its key.
    pub fn reg_mr_in(&mut self, pd: Pd, buf: Buf) -> Result<Mr, Error> {
        let key = self.reg_range_in(pd, buf.addr(), buf.len, Access::ALL)?;
        Ok(Mr { key, buf })
    }

    /// Registers `len` bytes of driver memory at device address `addr`
    /// with `access` in the driver's own PD; answers the key.
    pub fn reg_range(&mut self, addr: u64, len: u64, access: Access) -> Result<u32, Error> {
        self.reg_range_in(self.pd, addr, len, access)
    }

    /// As [`reg_range`](Driver::reg_range), in `pd`.
    pub fn reg_range_in(
        &mut self,
        pd: Pd,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, Error> {
        self.reg_range_iova_in(pd, addr, addr, len, access)
    }

    /// As [`reg_range_in`](Driver::reg_range_in), with SGEs and remote
    /// addresses naming the bytes from `iova` on (the MR's virtual
    /// address, as Linux registers a program's memory at the program's
    /// own addresses): `len` bytes of driver memory at device address
    /// `addr`.
    pub fn reg_range_iova_in(
        &mut self,
        pd: Pd,
        iova: u64,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, Error> {
        let key = self.next_mr << 8;
        use fw::create_mr as f;
        let mut b = [0u8; f::LEN];
        // A whole command's array: no setter can run past it.
        let mut p = f::Packet::new_unchecked(&mut b);
        p.set_pd_id(pd.0);
        p.set_va(iova);
        p.set_length(len);
        p.set_id_ver(key);
        p.set_map_count(1);
        p.set_dma_addr(addr);
        p.set_dbid_flags(fw::mrf::from_access(access));
        p.set_page_size_log2(12);
        self.admin(admin_op::CREATE_MR, &b)?;
        self.next_mr += 1;
        Ok(key)
    }

    /// Deregisters the MR with `key` (a registered or a fast one).
    pub fn dereg_key(&mut self, key: u32) -> Result<(), Error> {
        self.admin(admin_op::DESTROY_MR, &key.to_le_bytes())
            .map(|_| ())
    }
}
