//! Fabrics commands (`nvme_fabrics_command`, opcode 0x7f): Connect, which
//! binds a queue and creates (admin queue) or joins (I/O queue) a
//! controller, and Property Get/Set, the fabrics stand-in for the CAP, VS,
//! CC and CSTS registers. The bytes are read through
//! [`crate::wire::fabrics`]; checks and statuses follow nvmet's
//! `fabrics-cmd.c` and `core.c`.

use std::sync::Arc;
use std::time::Instant;

use super::{
    Binding, CSTS_CFS, CSTS_RDY, CSTS_SHST_CMPLT, Cmd, Controller, DISCOVERY_KATO_MS, Fail, Op,
    QueueState, Subsys, Target, VERSION, Xfer, complete, kato_secs, keepalive,
};
use crate::config::DISCOVERY_NQN;
use crate::wire::cqe;
use crate::wire::fabrics::registers::{
    REG_CAP, REG_CC, REG_CSTS, REG_VS, cc_ams, cc_css, cc_en, cc_iocqes, cc_iosqes, cc_mps, cc_shn,
};
use crate::wire::fabrics::{self as wf, FabricsType, connect, connect_data, property};
use crate::wire::status::Status;

/// `sizeof(struct nvmf_connect_data)`.
pub const CONNECT_DATA_LEN: u32 = connect_data::LEN as u32;
/// `NVME_CNTLID_DYNAMIC`: an admin Connect asks for a new controller.
pub const CNTLID_DYNAMIC: u16 = connect::CNTLID_DYNAMIC;
/// The highest controller id (`NVME_CNTLID_MAX`).
pub const CNTLID_MAX: u16 = connect::CNTLID_MAX;

/// Byte offsets that IATTR/IPO point at.
mod ipo {
    pub const CONNECT_QID: usize = super::connect::field::QID.start;
    pub const CONNECT_SQSIZE: usize = super::connect::field::SQSIZE.start;
    pub const DATA_CNTLID: usize = super::connect_data::field::CNTLID.start;
    pub const DATA_SUBSYSNQN: usize = super::connect_data::field::SUBSYSNQN.start;
    pub const DATA_HOSTNQN: usize = super::connect_data::field::HOSTNQN.start;
}

/// IATTR/IPO for CONNECT_INVALID_PARAM: bit 16 says the offset is in the
/// connect data (`IPO_IATTR_CONNECT_DATA`), else in the SQE.
fn ipo_data(offset: usize) -> u64 {
    1 << 16 | offset as u64
}

/// A decoded Connect command.
#[derive(Debug, Clone, Copy)]
pub(super) struct Connect {
    recfmt: u16,
    qid: u16,
    sqsize: u16,
    cattr: u8,
    kato_ms: u32,
}

fn fctype(cmd: &Cmd) -> FabricsType {
    FabricsType::from(cmd.byte(wf::field::FCTYPE))
}

/// The only command an unbound queue takes is Connect.
pub(super) fn plan_unbound(cmd: &Cmd) -> Result<(Op, Xfer), Fail> {
    if cmd.opcode != wf::OPCODE || fctype(cmd) != FabricsType::Connect {
        return Err(Fail::dnr(Status::INVALID_OPCODE));
    }
    let p = connect::Packet::new_unchecked(&cmd.raw[..]);
    let c = Connect {
        recfmt: p.recfmt(),
        qid: p.qid(),
        sqsize: p.sqsize(),
        cattr: p.cattr(),
        kato_ms: p.kato(),
    };
    Ok((Op::Connect(c), Xfer::FromHost(CONNECT_DATA_LEN)))
}

/// Fabrics commands on a bound admin queue: Property Get and Set. A second
/// Connect is an invalid opcode here, as in nvmet.
pub(super) fn plan_admin(cmd: &Cmd) -> Result<(Op, Xfer), Fail> {
    let p = property::Packet::new_unchecked(&cmd.raw[..]);
    let eight = p.size() == property::Size::Eight;
    match fctype(cmd) {
        FabricsType::PropertyGet => Ok((
            Op::PropertyGet {
                eight,
                offset: p.offset(),
            },
            Xfer::None,
        )),
        FabricsType::PropertySet => {
            if eight {
                return Err(Fail::dnr(Status::INVALID_FIELD));
            }
            Ok((
                Op::PropertySet {
                    offset: p.offset(),
                    value: p.value(),
                },
                Xfer::None,
            ))
        }
        _ => Err(Fail::dnr(Status::INVALID_OPCODE)),
    }
}

/// The NQN in a 256-byte field, which must hold a NUL.
fn nqn(field: &[u8]) -> Option<&[u8]> {
    let end = field.iter().position(|&b| b == 0)?;
    Some(&field[..end])
}

impl Target {
    pub(super) fn connect(
        &mut self,
        q: &mut QueueState,
        now: Instant,
        cmd: &Cmd,
        c: Connect,
        data: &[u8],
    ) -> cqe::Repr {
        let r = if c.qid == 0 {
            self.connect_admin(q, now, c, data)
        } else {
            self.connect_io(q, c, data)
        };
        match r {
            Ok(cntlid) => complete(q, cmd, Status::SUCCESS, u64::from(cntlid)),
            Err(f) => complete(q, cmd, f.status, f.result),
        }
    }

    /// Checks what admin and I/O Connects share and returns the subsystem
    /// and host NQN.
    fn connect_common<'d>(&self, c: &Connect, data: &'d [u8]) -> Result<(Subsys, &'d [u8]), Fail> {
        if c.recfmt != 0 {
            return Err(Fail::dnr(Status::CONNECT_FORMAT));
        }
        let invalid = |at| Fail::dnr(Status::CONNECT_INVALID_PARAM).with_result(ipo_data(at));
        let field = |f| data.get(f).and_then(nqn);
        let subnqn = field(connect_data::field::SUBSYSNQN).ok_or(invalid(ipo::DATA_SUBSYSNQN))?;
        let hostnqn = field(connect_data::field::HOSTNQN).ok_or(invalid(ipo::DATA_HOSTNQN))?;
        let subsys = if subnqn == self.cfg.nqn.as_bytes() {
            Subsys::Nvm
        } else if subnqn == DISCOVERY_NQN.as_bytes() {
            Subsys::Discovery
        } else {
            return Err(invalid(ipo::DATA_SUBSYSNQN));
        };
        Ok((subsys, hostnqn))
    }

    /// The queue-size checks of nvmet_install_queue.
    fn check_sqsize(&self, c: &Connect) -> Result<(), Fail> {
        let sqe_param = |at: usize| Fail::dnr(Status::CONNECT_INVALID_PARAM).with_result(at as u64);
        if c.sqsize == 0 {
            return Err(sqe_param(ipo::CONNECT_SQSIZE));
        }
        // MQES bounds the I/O queues only.
        if c.qid != 0 && c.sqsize > self.cfg.depth - 1 {
            return Err(sqe_param(ipo::CONNECT_SQSIZE));
        }
        Ok(())
    }

    fn connect_admin(
        &mut self,
        q: &mut QueueState,
        now: Instant,
        c: Connect,
        data: &[u8],
    ) -> Result<u16, Fail> {
        let (subsys, hostnqn) = self.connect_common(&c, data)?;
        if data_cntlid(data) != CNTLID_DYNAMIC {
            return Err(
                Fail::dnr(Status::CONNECT_INVALID_PARAM).with_result(ipo_data(ipo::DATA_CNTLID))
            );
        }
        self.check_sqsize(&c)?;
        let mut host = [0u8; 256];
        host[..hostnqn.len()].copy_from_slice(hostnqn);
        let cntlid = self
            .alloc_cntlid()
            .ok_or(Fail::dnr(Status::CONNECT_CTRL_BUSY))?;
        let kato_ms = match (subsys, c.kato_ms) {
            (Subsys::Discovery, 0) => DISCOVERY_KATO_MS,
            (_, ms) => ms,
        };
        let instance = self.next_instance;
        self.next_instance += 1;
        let mut ctrl = Controller {
            cntlid,
            instance,
            subsys,
            hostnqn: host,
            cc: 0,
            csts: 0,
            kato_secs: kato_secs(kato_ms),
            ka_deadline: None,
            dead: false,
            aen_enabled: match subsys {
                Subsys::Nvm => super::aer::AEN_CFG_OPTIONAL,
                Subsys::Discovery => super::aer::DISC_AEN_CFG_OPTIONAL,
            },
            aen_masked: 0,
            granted: match subsys {
                Subsys::Nvm => self.cfg.queues,
                Subsys::Discovery => 0,
            },
            io_queues: 0,
            admin_head: Arc::clone(&q.head),
            aers: [0; super::AER_LIMIT],
            nr_aers: 0,
            events: super::aer::Events::default(),
            changed_ns: super::aer::ChangedNs::default(),
        };
        keepalive::refresh(&mut ctrl, now);
        self.controllers.insert(cntlid, ctrl);
        bind(q, cntlid, instance, &c);
        Ok(cntlid)
    }

    /// The next free controller id, after making room by dropping dead
    /// controllers if the table is full.
    fn alloc_cntlid(&mut self) -> Option<u16> {
        if self.controllers.len() >= super::MAX_CONTROLLERS {
            self.controllers.retain(|_, c| !c.dead);
            if self.controllers.len() >= super::MAX_CONTROLLERS {
                return None;
            }
        }
        // Fewer than MAX_CONTROLLERS ids are taken, so a free one is found
        // within MAX_CONTROLLERS + 1 steps.
        for _ in 0..=super::MAX_CONTROLLERS {
            let id = self.next_cntlid;
            self.next_cntlid = if id >= CNTLID_MAX { 1 } else { id + 1 };
            if !self.controllers.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }

    fn connect_io(&mut self, q: &mut QueueState, c: Connect, data: &[u8]) -> Result<u16, Fail> {
        let (subsys, hostnqn) = self.connect_common(&c, data)?;
        let cntlid = data_cntlid(data);
        let no_ctrl =
            Fail::dnr(Status::CONNECT_INVALID_PARAM).with_result(ipo_data(ipo::DATA_CNTLID));
        let ctrl = self.controllers.get(&cntlid).ok_or(no_ctrl)?;
        let host_matches = ctrl.hostnqn.get(..hostnqn.len()) == Some(hostnqn)
            && ctrl.hostnqn.get(hostnqn.len()) == Some(&0);
        if ctrl.subsys != subsys || !host_matches || ctrl.dead {
            return Err(no_ctrl);
        }
        if c.qid > ctrl.granted {
            return Err(
                Fail::dnr(Status::CONNECT_INVALID_PARAM).with_result(ipo::CONNECT_QID as u64)
            );
        }
        self.check_sqsize(&c)?;
        let instance = ctrl.instance;
        let ctrl = self.controllers.get_mut(&cntlid).ok_or(no_ctrl)?;
        let bit = 1u128 << c.qid;
        if ctrl.io_queues & bit != 0 {
            return Err(Fail::dnr(Status::CMD_SEQ_ERROR));
        }
        ctrl.io_queues |= bit;
        bind(q, cntlid, instance, &c);
        Ok(cntlid)
    }

    pub(super) fn property_get(&self, b: &Binding, eight: bool, offset: u32) -> Result<u64, Fail> {
        let ctrl = self.bound_controller(b)?;
        match (eight, offset) {
            (true, REG_CAP) => Ok(self.cap()),
            (false, REG_VS) => Ok(u64::from(VERSION)),
            (false, REG_CC) => Ok(u64::from(ctrl.cc)),
            (false, REG_CSTS) => Ok(u64::from(ctrl.csts)),
            _ => Err(Fail::dnr(Status::INVALID_FIELD)),
        }
    }

    pub(super) fn property_set(
        &mut self,
        b: &Binding,
        now: Instant,
        offset: u32,
        value: u64,
    ) -> Result<u64, Fail> {
        if offset != REG_CC {
            return Err(Fail::dnr(Status::INVALID_FIELD));
        }
        let ctrl = self.ctrl_mut(b)?;
        // A 4-byte property: the value's low dword.
        update_cc(ctrl, now, value as u32);
        Ok(0)
    }
}

/// The connect data's cntlid (the caller checked the length).
fn data_cntlid(data: &[u8]) -> u16 {
    connect_data::Packet::new_checked(data).map_or(0, |d| d.cntlid())
}

fn bind(q: &mut QueueState, cntlid: u16, instance: u64, c: &Connect) {
    q.bound = Some(Binding {
        cntlid,
        instance,
        qid: c.qid,
        size: u32::from(c.sqsize) + 1,
        sqflow_disabled: c.cattr & connect::CATTR_DISABLE_SQFLOW != 0,
    });
    q.head.store(0, std::sync::atomic::Ordering::Relaxed);
}

/// nvmet_update_cc: EN 0→1 starts the controller (CSTS.RDY, or CSTS.CFS
/// when the entry sizes, page size, arbitration or command set are not
/// ones it supports); EN 1→0 stops it; SHN set reports shutdown complete.
pub(super) fn update_cc(ctrl: &mut Controller, now: Instant, new: u32) {
    let old = ctrl.cc;
    ctrl.cc = new;
    let en = cc_en;
    let shn = |v: u32| cc_shn(v) != 0;
    if en(new) && !en(old) {
        // Only an I/O controller checks the queue entry sizes (nvmet).
        let sizes_ok =
            ctrl.subsys == Subsys::Discovery || (cc_iosqes(new) == 6 && cc_iocqes(new) == 4);
        let rest_ok = cc_mps(new) == 0 && cc_ams(new) == 0 && cc_css(new) == 0;
        if sizes_ok && rest_ok {
            ctrl.csts = CSTS_RDY;
            keepalive::refresh(ctrl, now);
        } else {
            ctrl.csts = CSTS_CFS;
        }
    }
    if !en(new) && en(old) {
        ctrl.csts &= !CSTS_RDY;
        ctrl.cc = 0;
    }
    if shn(new) && !shn(old) {
        ctrl.csts &= !CSTS_RDY;
        ctrl.cc = 0;
        ctrl.csts |= CSTS_SHST_CMPLT;
    }
    if !shn(new) && shn(old) {
        ctrl.csts &= !CSTS_SHST_CMPLT;
    }
}
