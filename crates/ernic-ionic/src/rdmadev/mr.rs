//! CREATE_MR: registered and fast-registration MRs, their page tables
//! against the LIF's page-table budget.

use ernic_core::mr::Run;
use ernic_core::{Access, MrSpec, PdId};
use ernic_vfio::dma::Dma;

use crate::fw::{self, admin_status as st};
use crate::limits::Owner;

use super::{RdmaDev, read_page_table};

/// The pages a fast-registration MR created with no size may bind: twice
/// the longest list Linux's nvme-rdma registers (`NVME_RDMA_MAX_SEGMENTS`,
/// 256) and as long as iSER's.
pub const UNSIZED_FAST_PAGES: u32 = 512;

impl RdmaDev {
    pub(super) fn create_mr(&mut self, c: &[u8], dma: &mut Dma, pd: PdId) -> u32 {
        let Ok(c) = fw::create_mr::Packet::new_checked(c) else {
            return st::BAD_ATTR;
        };
        let id = c.id_ver();
        let (va, len) = (c.va(), c.length());
        let flags = c.dbid_flags();
        let count = c.map_count();
        let page_log2 = c.page_size_log2();
        if va.checked_add(len).is_none() || self.mrs.contains_key(&id) {
            return st::BAD_ATTR;
        }
        let acc = fw::mrf::to_access(flags).0;
        // A fast-registration MR (IONIC_MRF_UKEY_EN): room for `count`
        // pages, bound later by REG_MR work requests; the room is taken
        // from the LIF's page table now, as a page table's entries are.
        const UKEY_EN: u16 = 1 << 13;
        let fast = flags & UKEY_EN != 0;
        // Linux's `ionic_alloc_mr` does not tell the device its `max_sg`:
        // it creates the MR with no pages (map_count 0) and names the page
        // list in each REG_MR. Such an MR may bind UNSIZED_FAST_PAGES, and
        // those are taken from the LIF's table now, as a sized one's are,
        // so what REG_MRs can make the device hold stays bounded by it.
        let count = if fast && count == 0 {
            UNSIZED_FAST_PAGES
        } else {
            count
        };
        let ptes = if fast || count > 1 { count } else { 0 };
        if let Err(e) = self.ptes.check_one(ptes.into()) {
            return self.refuse(e.status(), format_args!("MR {id:#x}: {e}"));
        }
        let r = if fast {
            let max = u64::from(count) << page_log2.clamp(12, 30);
            self.engine
                .alloc_fast_mr_pages(self.dev, pd, Some(id), max, count)
        } else {
            let runs = if count <= 1 {
                vec![Run {
                    off: 0,
                    dma: c.dma_addr(),
                    len,
                }]
            } else {
                let first = va & ((1u64 << page_log2.min(63)) - 1);
                match read_page_table(dma, c.dma_addr(), count, page_log2, first, len) {
                    Ok(r) => r,
                    Err(s) => return s,
                }
            };
            if len == 0 {
                return st::BAD_ATTR;
            }
            self.engine.reg_mr(
                self.dev,
                MrSpec {
                    pd,
                    key: Some(id),
                    iova: va,
                    len,
                    access: Access(acc),
                    runs,
                },
            )
        };
        match r {
            Ok(_) => {
                self.ptes.charge(Owner::Mr(id >> 8), ptes);
                self.mrs.insert(id, ());
                st::OK
            }
            Err(e) => self.refuse(st::BAD_ATTR, e),
        }
    }
}
