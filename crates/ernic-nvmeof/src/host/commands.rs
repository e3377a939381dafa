//! The commands the initiator sends, built as Linux's host builds them
//! (`nvmf_connect_admin_queue`, `nvmf_reg_read64`, `nvme_identify_ctrl`,
//! `nvme_setup_rw`, ...): each a 64-byte SQE whose command id and data
//! pointer the queue fills in when it submits it.

use crate::wire::fabrics::connect;
use crate::wire::fabrics::connect_data::{self, Nqn};
use crate::wire::fabrics::property::{self, Size};
use crate::wire::sgl::Descriptor;
use crate::wire::sqe::{self, AdminOpcode, IoOpcode};

use super::{HostConfig, HostError};

/// A command, ready to submit.
#[derive(Clone, Copy, Debug)]
pub struct Command(pub [u8; sqe::LEN]);

impl Command {
    fn new(opcode: u8) -> Command {
        let mut b = [0u8; sqe::LEN];
        b[0] = opcode;
        b[1] = sqe::FLAGS_SGL_METABUF;
        Command(b)
    }

    fn p(&mut self) -> sqe::Packet<&mut [u8]> {
        sqe::Packet::new_unchecked(&mut self.0[..])
    }

    /// Fabrics Connect of queue `qid` with `sqsize` (0's based) entries
    /// and keep-alive timeout `kato_ms` (the admin queue's is the
    /// controller's). Its data is [`connect_data`]'s.
    pub fn connect(qid: u16, sqsize: u16, kato_ms: u32) -> Command {
        let mut c = Command([0; sqe::LEN]);
        let r = connect::Repr {
            command_id: 0,
            sgl: Descriptor::Keyed {
                addr: 0,
                len: 0,
                key: 0,
                invalidate: false,
            },
            recfmt: 0,
            qid,
            sqsize,
            cattr: 0,
            kato: kato_ms,
        };
        // A zeroed keyed descriptor always emits (the queue fills in the real one).
        let _ = r.emit(&mut connect::Packet::new_unchecked(&mut c.0[..]));
        c
    }

    fn property(r: property::Repr) -> Command {
        let mut c = Command([0; sqe::LEN]);
        let _ = r.emit(&mut property::Packet::new_unchecked(&mut c.0[..]));
        c
    }

    /// Property Get of the register at `offset`, 8 bytes wide or 4.
    pub fn property_get(offset: u32, eight: bool) -> Command {
        Command::property(property::Repr::Get {
            command_id: 0,
            size: if eight { Size::Eight } else { Size::Four },
            offset,
        })
    }

    /// Property Set of the 4-byte register at `offset`.
    pub fn property_set(offset: u32, value: u32) -> Command {
        Command::property(property::Repr::Set {
            command_id: 0,
            size: Size::Four,
            offset,
            value: u64::from(value),
        })
    }

    /// Identify with CNS `cns` for namespace `nsid` (4096 bytes back).
    pub fn identify(cns: u8, nsid: u32) -> Command {
        let mut c = Command::new(AdminOpcode::Identify.into());
        c.p().set_nsid(nsid);
        c.p().set_cdw(10, u32::from(cns));
        c
    }

    /// Set Features `fid` to `value` (CDW11).
    pub fn set_features(fid: u8, value: u32) -> Command {
        let mut c = Command::new(AdminOpcode::SetFeatures.into());
        c.p().set_cdw(10, u32::from(fid));
        c.p().set_cdw(11, value);
        c
    }

    /// Get Features `fid`.
    pub fn get_features(fid: u8) -> Command {
        let mut c = Command::new(AdminOpcode::GetFeatures.into());
        c.p().set_cdw(10, u32::from(fid));
        c
    }

    /// Get Log Page `lid`, `len` bytes (a multiple of 4) from `offset`.
    pub fn get_log_page(lid: u8, nsid: u32, len: usize, offset: u64) -> Command {
        let numd = (len / 4).saturating_sub(1) as u32;
        let mut c = Command::new(AdminOpcode::GetLogPage.into());
        c.p().set_nsid(nsid);
        c.p().set_cdw(10, u32::from(lid) | (numd & 0xffff) << 16);
        c.p().set_cdw(11, numd >> 16);
        c.p().set_cdw(12, offset as u32);
        c.p().set_cdw(13, (offset >> 32) as u32);
        c
    }

    /// Keep Alive.
    pub fn keep_alive() -> Command {
        Command::new(AdminOpcode::KeepAlive.into())
    }

    fn rw(op: IoOpcode, nsid: u32, slba: u64, nlb: u32) -> Command {
        let mut c = Command::new(op.into());
        c.p().set_nsid(nsid);
        c.p().set_cdw(10, slba as u32);
        c.p().set_cdw(11, (slba >> 32) as u32);
        c.p().set_cdw(12, nlb.saturating_sub(1) & 0xffff);
        c
    }

    /// Read of `nlb` blocks from `slba`.
    pub fn read(nsid: u32, slba: u64, nlb: u32) -> Command {
        Command::rw(IoOpcode::Read, nsid, slba, nlb)
    }

    /// Write of `nlb` blocks at `slba`.
    pub fn write(nsid: u32, slba: u64, nlb: u32) -> Command {
        Command::rw(IoOpcode::Write, nsid, slba, nlb)
    }

    /// Write Zeroes of `nlb` blocks at `slba`.
    pub fn write_zeroes(nsid: u32, slba: u64, nlb: u32) -> Command {
        Command::rw(IoOpcode::WriteZeroes, nsid, slba, nlb)
    }

    /// Flush.
    pub fn flush(nsid: u32) -> Command {
        let mut c = Command::new(IoOpcode::Flush.into());
        c.p().set_nsid(nsid);
        c
    }

    /// Dataset Management (deallocate) of `ranges` ranges sent as data.
    pub fn deallocate(nsid: u32, ranges: u32) -> Command {
        let mut c = Command::new(IoOpcode::DatasetManagement.into());
        c.p().set_nsid(nsid);
        c.p().set_cdw(10, ranges.saturating_sub(1) & 0xff);
        // Attribute: deallocate (`NVME_DSMGMT_AD`).
        c.p().set_cdw(11, 1 << 2);
        c
    }
}

/// `struct nvmf_connect_data` for controller `cntlid` (0xFFFF: any).
pub fn connect_data(cfg: &HostConfig, cntlid: u16) -> Result<[u8; connect_data::LEN], HostError> {
    let mut d = [0u8; connect_data::LEN];
    connect_data::Repr {
        hostid: cfg.hostid,
        cntlid,
        subsysnqn: Nqn::new(&cfg.subnqn)?,
        hostnqn: Nqn::new(&cfg.hostnqn)?,
    }
    .emit(&mut connect_data::Packet::new_unchecked(&mut d[..]))?;
    Ok(d)
}
