//! Identify (`nvme_admin_identify`): the 4096-byte data structures of
//! `include/linux/nvme.h`, written at their byte offsets: Identify
//! Controller (`struct nvme_id_ctrl`, for the NVM and the discovery
//! controller), Identify Namespace (`struct nvme_id_ns`), the active
//! namespace lists, the Namespace Identification Descriptor list, and the
//! NVM-command-set and command-set-independent structures Linux asks for.
//! What is filled and what is zero follows nvmet's `admin-cmd.c` and
//! `discovery.c`; unsupported CNS values are INVALID_FIELD.

use super::aer::{AEN_CFG_OPTIONAL, DISC_AEN_CFG_OPTIONAL};
use super::{
    AER_LIMIT, Binding, Cmd, Controller, Fail, INLINE_DATA_BYTES, KAS, MDTS, Subsys, Target,
    VERSION, put_ascii, put16, put32, put64,
};
use crate::wire::status::Status;

/// `NVME_IDENTIFY_DATA_SIZE`.
pub const LEN: u32 = 4096;

/// `NVME_ID_CNS_*`.
pub mod cns {
    /// Identify Namespace.
    pub const NS: u8 = 0x00;
    /// Identify Controller.
    pub const CTRL: u8 = 0x01;
    /// Active Namespace ID list.
    pub const NS_ACTIVE_LIST: u8 = 0x02;
    /// Namespace Identification Descriptor list.
    pub const NS_DESC_LIST: u8 = 0x03;
    /// I/O command set specific Identify Namespace.
    pub const CS_NS: u8 = 0x05;
    /// I/O command set specific Identify Controller.
    pub const CS_CTRL: u8 = 0x06;
    /// Active Namespace ID list of one command set.
    pub const NS_ACTIVE_LIST_CS: u8 = 0x07;
    /// I/O command set independent Identify Namespace.
    pub const NS_CS_INDEP: u8 = 0x08;
}

/// `NVME_CSI_NVM`.
pub const CSI_NVM: u8 = 0;

/// Byte offsets in `struct nvme_id_ctrl`.
pub mod ctrl_at {
    pub const SN: usize = 4;
    pub const MN: usize = 24;
    pub const FR: usize = 64;
    pub const RAB: usize = 72;
    pub const CMIC: usize = 76;
    pub const MDTS: usize = 77;
    pub const CNTLID: usize = 78;
    pub const VER: usize = 80;
    pub const OAES: usize = 92;
    pub const CTRATT: usize = 96;
    pub const CNTRLTYPE: usize = 111;
    pub const ACL: usize = 258;
    pub const AERL: usize = 259;
    pub const FRMW: usize = 260;
    pub const LPA: usize = 261;
    pub const ELPE: usize = 262;
    pub const KAS: usize = 320;
    pub const SQES: usize = 512;
    pub const CQES: usize = 513;
    pub const MAXCMD: usize = 514;
    pub const NN: usize = 516;
    pub const ONCS: usize = 520;
    pub const VWC: usize = 525;
    pub const SGLS: usize = 536;
    pub const MNAN: usize = 540;
    pub const SUBNQN: usize = 768;
    pub const IOCCSZ: usize = 1792;
    pub const IORCSZ: usize = 1796;
    pub const ICDOFF: usize = 1800;
    pub const FCATT: usize = 1802;
    pub const MSDBD: usize = 1803;
}

/// Byte offsets in `struct nvme_id_ns`.
pub mod ns_at {
    pub const NSZE: usize = 0;
    pub const NCAP: usize = 8;
    pub const NUSE: usize = 16;
    pub const NLBAF: usize = 25;
    pub const FLBAS: usize = 26;
    pub const NMIC: usize = 30;
    pub const NGUID: usize = 104;
    pub const LBAF0: usize = 128;
}

/// `NVME_CTRL_CMIC_MULTI_CTRL`: several controllers (hosts) may share the
/// subsystem's namespaces.
const CMIC_MULTI_CTRL: u8 = 1 << 1;
/// `NVME_CTRL_ATTR_HID_128_BIT | NVME_CTRL_ATTR_TBKAS`, as nvmet.
const CTRATT: u32 = 1 << 0 | 1 << 6;
/// `NVME_CTRL_ONCS_DSM | NVME_CTRL_ONCS_WRITE_ZEROES`.
const ONCS: u16 = 1 << 2 | 1 << 3;
/// SGLS: byte-aligned data blocks (bit 0), keyed data blocks (bit 2,
/// `NVME_CTRL_SGLS_KSDBDS`), offsets / in-capsule data (bit 20, SAOS).
const SGLS: u32 = 1 << 0 | 1 << 2 | 1 << 20;
/// LPA: per-namespace SMART (bit 0), Commands Supported and Effects (bit 1),
/// extended data for Get Log Page (bit 2), as nvmet.
const LPA: u8 = 1 << 0 | 1 << 1 | 1 << 2;
/// `NVME_CTRL_IO` and `NVME_CTRL_DISC`.
const CNTRLTYPE_IO: u8 = 1;
const CNTRLTYPE_DISC: u8 = 2;
/// `NVME_NIDT_*`.
const NIDT_NGUID: u8 = 0x02;
const NIDT_UUID: u8 = 0x03;
const NIDT_CSI: u8 = 0x04;
/// `NVME_NS_NMIC_SHARED`.
const NMIC_SHARED: u8 = 1 << 0;
/// `NVME_NSTAT_NRDY`: the namespace is ready.
const NSTAT_NRDY: u8 = 1 << 0;
/// Firmware revision: the crate version, space-padded to 8.
pub(super) const FIRMWARE: &str = env!("CARGO_PKG_VERSION");

/// A decoded Identify command (`struct nvme_identify`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Identify {
    cns: u8,
    nsid: u32,
    csi: u8,
}

impl Identify {
    pub(super) fn decode(cmd: &Cmd) -> Identify {
        Identify {
            cns: cmd.cdw(10) as u8,
            nsid: cmd.nsid,
            csi: (cmd.cdw(11) >> 24) as u8,
        }
    }
}

impl Target {
    pub(super) fn identify(&self, b: &Binding, id: Identify, out: &mut [u8]) -> Result<(), Fail> {
        let ctrl = self.bound_controller(b)?;
        let Ok(out) = <&mut [u8; 4096]>::try_from(out) else {
            return Err(Fail::dnr(Status::INTERNAL));
        };
        out.fill(0);
        if ctrl.subsys == Subsys::Discovery {
            if id.cns != cns::CTRL {
                return Err(Fail::dnr(Status::INVALID_FIELD));
            }
            self.identify_ctrl(ctrl, out);
            return Ok(());
        }
        match id.cns {
            cns::CTRL => self.identify_ctrl(ctrl, out),
            cns::NS => {
                if id.nsid == u32::MAX {
                    return Err(Fail::dnr(Status::INVALID_NS));
                }
                // An inactive nsid gets an all-zero structure, as nvmet.
                if let Some(i) = self.ns_index(id.nsid) {
                    self.identify_ns(i, out);
                }
            }
            cns::NS_ACTIVE_LIST => self.ns_list(id.nsid, out)?,
            cns::NS_ACTIVE_LIST_CS => {
                if id.csi == CSI_NVM {
                    self.ns_list(id.nsid, out)?;
                } else if id.nsid >= 0xffff_fffe {
                    return Err(Fail::dnr(Status::INVALID_NS));
                }
            }
            cns::NS_DESC_LIST => {
                let i = self.find_ns(id.nsid)?;
                self.ns_descs(i, out);
            }
            cns::CS_NS if id.csi == CSI_NVM => {
                // No protection information or extended LBA formats: the
                // NVM command set structure is all zeros.
                self.find_ns(id.nsid)?;
            }
            // No NVM-specific controller limits: all zeros, as nvmet.
            cns::CS_CTRL if id.csi == CSI_NVM => {}
            cns::NS_CS_INDEP => {
                self.find_ns(id.nsid)?;
                out[1] = NMIC_SHARED;
                out[14] = NSTAT_NRDY;
            }
            _ => return Err(Fail::dnr(Status::INVALID_FIELD)),
        }
        Ok(())
    }

    pub(super) fn ns_index(&self, nsid: u32) -> Option<usize> {
        let i = usize::try_from(nsid).ok()?.checked_sub(1)?;
        (i < self.namespaces.len()).then_some(i)
    }

    fn find_ns(&self, nsid: u32) -> Result<usize, Fail> {
        self.ns_index(nsid).ok_or(Fail::dnr(Status::INVALID_NS))
    }

    fn identify_ctrl(&self, ctrl: &Controller, out: &mut [u8; 4096]) {
        let disc = ctrl.subsys == Subsys::Discovery;
        put_ascii(&mut out[ctrl_at::SN..ctrl_at::MN], &self.cfg.serial);
        put_ascii(&mut out[ctrl_at::MN..ctrl_at::FR], &self.cfg.model);
        put_ascii(&mut out[ctrl_at::FR..ctrl_at::RAB], FIRMWARE);
        put16(out, ctrl_at::CNTLID, ctrl.cntlid);
        put32(out, ctrl_at::VER, VERSION);
        put32(out, ctrl_at::SGLS, SGLS);
        put16(out, ctrl_at::MAXCMD, self.cfg.depth);
        let subnqn = if disc {
            crate::config::DISCOVERY_NQN
        } else {
            self.cfg.nqn.as_str()
        };
        // At most MAX_NQN_LEN (223) bytes: the NUL-padded field holds it.
        out[ctrl_at::SUBNQN..ctrl_at::SUBNQN + subnqn.len()].copy_from_slice(subnqn.as_bytes());
        if disc {
            out[ctrl_at::CNTRLTYPE] = CNTRLTYPE_DISC;
            out[ctrl_at::LPA] = 1 << 2;
            put32(out, ctrl_at::OAES, DISC_AEN_CFG_OPTIONAL);
            return;
        }
        out[ctrl_at::CNTRLTYPE] = CNTRLTYPE_IO;
        out[ctrl_at::RAB] = 6;
        out[ctrl_at::CMIC] = CMIC_MULTI_CTRL;
        out[ctrl_at::MDTS] = MDTS;
        put32(out, ctrl_at::OAES, AEN_CFG_OPTIONAL);
        put32(out, ctrl_at::CTRATT, CTRATT);
        out[ctrl_at::ACL] = 3;
        out[ctrl_at::AERL] = (AER_LIMIT - 1) as u8;
        // One read-only firmware slot.
        out[ctrl_at::FRMW] = 1 << 0 | 1 << 1;
        out[ctrl_at::LPA] = LPA;
        // One (always empty) error log entry: ELPE is 0's based.
        out[ctrl_at::ELPE] = 0;
        put16(out, ctrl_at::KAS, KAS);
        out[ctrl_at::SQES] = 0x66;
        out[ctrl_at::CQES] = 0x44;
        // At most MAX_NAMESPACES (32).
        let nn = self.namespaces.len() as u32;
        put32(out, ctrl_at::NN, nn);
        put32(out, ctrl_at::MNAN, nn);
        put16(out, ctrl_at::ONCS, ONCS);
        out[ctrl_at::VWC] = 1;
        // 64-byte SQE plus the in-capsule data, in 16-byte units.
        put32(out, ctrl_at::IOCCSZ, (64 + INLINE_DATA_BYTES) / 16);
        put32(out, ctrl_at::IORCSZ, 1);
        put16(out, ctrl_at::ICDOFF, 0);
        out[ctrl_at::FCATT] = 0;
        out[ctrl_at::MSDBD] = 1;
    }

    fn identify_ns(&self, i: usize, out: &mut [u8; 4096]) {
        let ns = &self.namespaces[i];
        put64(out, ns_at::NSZE, ns.blocks());
        put64(out, ns_at::NCAP, ns.blocks());
        put64(out, ns_at::NUSE, ns.blocks());
        out[ns_at::NLBAF] = 0;
        out[ns_at::FLBAS] = 0;
        out[ns_at::NMIC] = NMIC_SHARED;
        out[ns_at::NGUID..ns_at::NGUID + 16].copy_from_slice(&ns.nguid());
        // lbaf[0]: ms 0, ds = log2(block size), rp 0. ds is 9 or 12.
        out[ns_at::LBAF0 + 2] = ns.block_size().shift() as u8;
    }

    /// Active nsids above `after`, as le32 entries.
    fn ns_list(&self, after: u32, out: &mut [u8; 4096]) -> Result<(), Fail> {
        if after >= 0xffff_fffe {
            return Err(Fail::dnr(Status::INVALID_NS));
        }
        let ids = self
            .namespaces
            .iter()
            .map(|n| n.nsid())
            .filter(|&n| n > after);
        for (slot, nsid) in out.chunks_exact_mut(4).zip(ids) {
            slot.copy_from_slice(&nsid.to_le_bytes());
        }
        Ok(())
    }

    /// UUID, NGUID and CSI descriptors (`struct nvme_ns_id_desc` + value).
    fn ns_descs(&self, i: usize, out: &mut [u8; 4096]) {
        let ns = &self.namespaces[i];
        let mut at = 0;
        for (nidt, value) in [
            (NIDT_UUID, &ns.uuid()[..]),
            (NIDT_NGUID, &ns.nguid()[..]),
            (NIDT_CSI, &[CSI_NVM][..]),
        ] {
            out[at] = nidt;
            // 16 or 1.
            out[at + 1] = value.len() as u8;
            out[at + 4..at + 4 + value.len()].copy_from_slice(value);
            at += 4 + value.len();
        }
    }
}
