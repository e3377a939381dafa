//! Get and Set Features (`NVME_FEAT_*`): Number of Queues, Keep Alive Timer,
//! Asynchronous Event Configuration and, read-only, Volatile Write Cache.
//! Every other feature is INVALID_FIELD, as in nvmet; a discovery controller
//! has only the keep-alive and event features.

use std::time::Instant;

use super::aer::{AEN_CFG_ALL, DISC_AEN_CFG_OPTIONAL};
use super::{Binding, Fail, Subsys, Target, kato_secs, keepalive};
use crate::wire::status::Status;

/// `NVME_FEAT_VOLATILE_WC`.
pub const FEAT_VOLATILE_WC: u8 = 0x06;
/// `NVME_FEAT_NUM_QUEUES`.
pub const FEAT_NUM_QUEUES: u8 = 0x07;
/// `NVME_FEAT_ASYNC_EVENT`.
pub const FEAT_ASYNC_EVENT: u8 = 0x0b;
/// `NVME_FEAT_KATO`.
pub const FEAT_KATO: u8 = 0x0f;

/// NSQA/NCQA in one dword, both 0's based.
fn queues_result(granted: u16) -> u64 {
    let n = u64::from(granted.saturating_sub(1));
    n | n << 16
}

impl Target {
    pub(super) fn get_features(&self, b: &Binding, fid: u8) -> Result<u64, Fail> {
        let ctrl = self.bound_controller(b)?;
        let nvm = ctrl.subsys == Subsys::Nvm;
        match fid {
            FEAT_KATO => Ok(u64::from(ctrl.kato_secs) * 1000),
            FEAT_ASYNC_EVENT => Ok(u64::from(ctrl.aen_enabled)),
            FEAT_NUM_QUEUES if nvm => Ok(queues_result(ctrl.granted)),
            // The write cache is present and always enabled (WCE = 1).
            FEAT_VOLATILE_WC if nvm => Ok(1),
            _ => Err(Fail::dnr(Status::INVALID_FIELD)),
        }
    }

    pub(super) fn set_features(
        &mut self,
        b: &Binding,
        now: Instant,
        fid: u8,
        cdw11: u32,
    ) -> Result<u64, Fail> {
        let configured = self.cfg.queues;
        let ctrl = self.ctrl_mut(b)?;
        let nvm = ctrl.subsys == Subsys::Nvm;
        match fid {
            FEAT_NUM_QUEUES if nvm => {
                let nsqr = cdw11 & 0xffff;
                let ncqr = cdw11 >> 16;
                if nsqr == 0xffff || ncqr == 0xffff {
                    return Err(Fail::dnr(Status::INVALID_FIELD));
                }
                // Both values are 0's based and below 0xffff, so +1 fits.
                let asked = (nsqr.min(ncqr) + 1) as u16;
                ctrl.granted = asked.min(configured);
                Ok(queues_result(ctrl.granted))
            }
            FEAT_KATO => {
                ctrl.kato_secs = kato_secs(cdw11);
                keepalive::refresh(ctrl, now);
                Ok(u64::from(ctrl.kato_secs))
            }
            FEAT_ASYNC_EVENT => {
                let mask = if nvm {
                    AEN_CFG_ALL
                } else {
                    DISC_AEN_CFG_OPTIONAL
                };
                if cdw11 & !mask != 0 {
                    return Err(Fail::dnr(Status::INVALID_FIELD));
                }
                ctrl.aen_enabled = cdw11;
                Ok(u64::from(cdw11))
            }
            _ => Err(Fail::dnr(Status::INVALID_FIELD)),
        }
    }
}
