//! Get Log Page (`struct nvme_get_log_page_command`): the pages an NVM
//! controller serves (supported pages, error information, SMART / Health,
//! firmware slots, Changed Namespace List, Commands Supported and Effects)
//! and the discovery controller's Discovery log (`struct
//! nvmf_disc_rsp_page_hdr` and 1024-byte `struct nvmf_disc_rsp_page_entry`
//! records). NUMD and LPO are honoured on every page: the host gets the
//! window `[LPO, LPO + NUMD*4)` of the page, zero past its end; an offset
//! past the end, an unaligned offset or a length over MDTS is INVALID_FIELD.

use super::aer::AEN_BIT_NS_ATTR;
use super::{
    ADMIN_QUEUE_DEPTH, Binding, Cmd, Fail, MDTS_BYTES, Subsys, Target, put16, put64, window,
};
use crate::config::DISCOVERY_NQN;
use crate::wire::status::Status;

/// `NVME_LOG_*`.
pub mod lid {
    /// Supported Log Pages.
    pub const SUPPORTED: u8 = 0x00;
    /// Error Information.
    pub const ERROR: u8 = 0x01;
    /// SMART / Health Information.
    pub const SMART: u8 = 0x02;
    /// Firmware Slot Information.
    pub const FW_SLOT: u8 = 0x03;
    /// Changed Namespace List.
    pub const CHANGED_NS: u8 = 0x04;
    /// Commands Supported and Effects.
    pub const CMD_EFFECTS: u8 = 0x05;
    /// Discovery.
    pub const DISC: u8 = 0x70;
}

/// `sizeof(struct nvme_error_slot)`.
const ERROR_ENTRY: usize = 64;
/// `sizeof(struct nvme_smart_log)`.
const SMART_LEN: usize = 512;
/// `sizeof(struct nvme_effects_log)`.
const EFFECTS_LEN: usize = 4096;
/// A discovery log record.
pub const DISC_ENTRY: usize = 1024;
/// The discovery log: the header and two records (this discovery
/// subsystem, subtype 3, and the NVM subsystem, subtype 2).
const DISC_LEN: usize = DISC_ENTRY * 3;
/// `NVME_CMD_EFFECTS_CSUPP`, `NVME_CMD_EFFECTS_LBCC`.
const CSUPP: u32 = 1 << 0;
const LBCC: u32 = 1 << 1;
/// `NVME_LIDS_LSUPP`.
const LSUPP: u32 = 1 << 0;
/// Discovery record values (`include/linux/nvme.h`).
const TRTYPE_RDMA: u8 = 1;
const ADRFAM_IP4: u8 = 1;
const SUBTYPE_NVME: u8 = 2;
const SUBTYPE_CURRENT_DISCOVERY: u8 = 3;
/// TREQ: secure channel not specified, SQ flow control disable supported
/// (`NVMF_TREQ_DISABLE_SQFLOW`), what nvmet writes for a new port; the
/// controller honours a Connect's CATTR bit 2 by reporting SQ head 0xffff.
const TREQ_DISABLE_SQFLOW: u8 = 1 << 2;
const RDMA_QPTYPE_CONNECTED: u8 = 1;
const RDMA_PRTYPE_NOT_SPECIFIED: u8 = 1;
const RDMA_CMS_RDMA_CM: u8 = 1;

/// Byte offsets in `struct nvmf_disc_rsp_page_entry`.
pub mod disc_at {
    pub const TRTYPE: usize = 0;
    pub const ADRFAM: usize = 1;
    pub const SUBTYPE: usize = 2;
    pub const TREQ: usize = 3;
    pub const PORTID: usize = 4;
    pub const CNTLID: usize = 6;
    pub const ASQSZ: usize = 8;
    pub const TRSVCID: usize = 32;
    pub const SUBNQN: usize = 256;
    pub const TRADDR: usize = 512;
    pub const RDMA_QPTYPE: usize = 768;
    pub const RDMA_PRTYPE: usize = 769;
    pub const RDMA_CMS: usize = 770;
}

/// A decoded Get Log Page command.
#[derive(Debug, Clone, Copy)]
pub(super) struct GetLog {
    lid: u8,
    offset: u64,
    pub(super) len: u32,
    csi: u8,
}

impl GetLog {
    pub(super) fn decode(cmd: &Cmd) -> Result<GetLog, Fail> {
        let (cdw10, cdw11) = (cmd.cdw(10), cmd.cdw(11));
        // NUMD = NUMDU:NUMDL, 0's based, in dwords.
        let numd = u64::from(cdw11 & 0xffff) << 16 | u64::from(cdw10 >> 16);
        let len = (numd + 1) * 4;
        let offset = u64::from(cmd.cdw(12)) | u64::from(cmd.cdw(13)) << 32;
        if len > u64::from(MDTS_BYTES) || offset & 3 != 0 {
            return Err(Fail::dnr(Status::INVALID_FIELD));
        }
        Ok(GetLog {
            lid: cdw10 as u8,
            offset,
            // len <= MDTS_BYTES.
            len: len as u32,
            csi: (cmd.cdw(14) >> 24) as u8,
        })
    }
}

impl Target {
    pub(super) fn get_log(
        &mut self,
        b: &Binding,
        cmd: &Cmd,
        g: GetLog,
        out: &mut [u8],
    ) -> Result<(), Fail> {
        let subsys = self.bound_controller(b)?.subsys;
        let mut page = [0u8; 4096];
        let len = match (subsys, g.lid) {
            (Subsys::Discovery, lid::DISC) => {
                let mut disc = [0u8; DISC_LEN];
                self.discovery_log(&mut disc);
                return send(out, g.offset, &disc);
            }
            (Subsys::Discovery, _) => return Err(Fail::dnr(Status::INVALID_FIELD)),
            (Subsys::Nvm, lid::SUPPORTED) => {
                for l in [lid::SUPPORTED, lid::ERROR, lid::SMART, lid::FW_SLOT]
                    .into_iter()
                    .chain([lid::CHANGED_NS, lid::CMD_EFFECTS])
                {
                    let at = usize::from(l) * 4;
                    page[at..at + 4].copy_from_slice(&LSUPP.to_le_bytes());
                }
                1024
            }
            (Subsys::Nvm, lid::ERROR) => ERROR_ENTRY,
            (Subsys::Nvm, lid::SMART) => {
                self.smart(cmd.nsid, &mut page)?;
                SMART_LEN
            }
            // struct nvme_fw_slot_info_log: slot 1 active (AFI = 1), its
            // revision in frs[0], as Identify's FR reports it.
            (Subsys::Nvm, lid::FW_SLOT) => {
                page[0] = 1;
                super::put_ascii(&mut page[8..16], super::identify::FIRMWARE);
                512
            }
            (Subsys::Nvm, lid::CHANGED_NS) => {
                let ctrl = self.ctrl_mut(b)?;
                ctrl.changed_ns.take(&mut page);
                ctrl.log_read(AEN_BIT_NS_ATTR, cmd.cdw(10));
                4096
            }
            (Subsys::Nvm, lid::CMD_EFFECTS) => {
                if g.csi != super::identify::CSI_NVM {
                    return Err(Fail {
                        status: Status::INVALID_LOG_PAGE,
                        result: 0,
                    });
                }
                effects(&mut page);
                EFFECTS_LEN
            }
            _ => return Err(Fail::dnr(Status::INVALID_FIELD)),
        };
        send(out, g.offset, &page[..len])
    }

    /// SMART / Health for one namespace or, with nsid 0xffffffff, all.
    fn smart(&self, nsid: u32, page: &mut [u8; 4096]) -> Result<(), Fail> {
        let pick: Vec<usize> = if nsid == u32::MAX {
            (0..self.namespaces.len()).collect()
        } else {
            vec![self.ns_index(nsid).ok_or(Fail::dnr(Status::INVALID_NS))?]
        };
        let (mut rd, mut wr, mut hr, mut hw) = (0u64, 0u64, 0u64, 0u64);
        for i in pick {
            let c = &self.counters[i];
            // Data units are thousands of 512-byte units, rounded up.
            rd = rd.saturating_add(c.sectors_read.div_ceil(1000));
            wr = wr.saturating_add(c.sectors_written.div_ceil(1000));
            hr = hr.saturating_add(c.host_reads);
            hw = hw.saturating_add(c.host_writes);
        }
        // data_units_read, data_units_written, host_reads, host_writes:
        // 16-byte little-endian counters at 32, 48, 64 and 80.
        put64(page, 32, rd);
        put64(page, 48, wr);
        put64(page, 64, hr);
        put64(page, 80, hw);
        Ok(())
    }

    fn discovery_log(&self, page: &mut [u8; DISC_LEN]) {
        put64(page, 0, self.genctr);
        put64(page, 8, 2);
        put16(page, 16, 0);
        let (first, second) = page[DISC_ENTRY..].split_at_mut(DISC_ENTRY);
        self.disc_entry(first, SUBTYPE_CURRENT_DISCOVERY, DISCOVERY_NQN);
        self.disc_entry(second, SUBTYPE_NVME, &self.cfg.nqn);
    }

    fn disc_entry(&self, e: &mut [u8], subtype: u8, subnqn: &str) {
        e[disc_at::TRTYPE] = TRTYPE_RDMA;
        e[disc_at::ADRFAM] = ADRFAM_IP4;
        e[disc_at::SUBTYPE] = subtype;
        e[disc_at::TREQ] = TREQ_DISABLE_SQFLOW;
        put16(e, disc_at::PORTID, self.addr.portid);
        // Only dynamic controllers.
        put16(e, disc_at::CNTLID, super::fabrics::CNTLID_DYNAMIC);
        put16(e, disc_at::ASQSZ, ADMIN_QUEUE_DEPTH);
        let svc = self.addr.port.to_string();
        e[disc_at::TRSVCID..disc_at::TRSVCID + svc.len()].copy_from_slice(svc.as_bytes());
        // NQNs are at most 223 bytes, a dotted IPv4 address 15.
        e[disc_at::SUBNQN..disc_at::SUBNQN + subnqn.len()].copy_from_slice(subnqn.as_bytes());
        let addr = self.addr.addr.to_string();
        e[disc_at::TRADDR..disc_at::TRADDR + addr.len()].copy_from_slice(addr.as_bytes());
        e[disc_at::RDMA_QPTYPE] = RDMA_QPTYPE_CONNECTED;
        e[disc_at::RDMA_PRTYPE] = RDMA_PRTYPE_NOT_SPECIFIED;
        e[disc_at::RDMA_CMS] = RDMA_CMS_RDMA_CM;
    }
}

/// Copies the window, refusing an offset past the page's end.
fn send(out: &mut [u8], offset: u64, page: &[u8]) -> Result<(), Fail> {
    if offset > page.len() as u64 {
        return Err(Fail::dnr(Status::INVALID_FIELD));
    }
    window(out, offset, page);
    Ok(())
}

/// Commands Supported and Effects: `acs[256]` then `iocs[256]`, le32 each.
fn effects(page: &mut [u8; 4096]) {
    let admin: [u8; 7] = [0x02, 0x06, 0x08, 0x09, 0x0a, 0x0c, 0x18];
    for op in admin {
        let at = usize::from(op) * 4;
        page[at..at + 4].copy_from_slice(&CSUPP.to_le_bytes());
    }
    // Read, Flush, DSM; Write and Write Zeroes change logical blocks.
    for (op, e) in [
        (0x02u8, CSUPP),
        (0x00, CSUPP),
        (0x09, CSUPP),
        (0x01, CSUPP | LBCC),
        (0x08, CSUPP | LBCC),
    ] {
        let at = 1024 + usize::from(op) * 4;
        page[at..at + 4].copy_from_slice(&e.to_le_bytes());
    }
}
