//! Asynchronous events: held Asynchronous Event Requests (at most
//! [`AER_LIMIT`] per controller, more is ASYNC_LIMIT), the events waiting for
//! one, the Changed Namespace List they point at, and the Asynchronous Event
//! Configuration that enables them. Values follow `include/linux/nvme.h`
//! (`NVME_AER_*`, `NVME_AEN_*`) and nvmet's `core.c`: an event is masked from
//! when it is reported until the host reads its log page without RAE, so
//! each kind is reported at most once at a time.

use super::{AER_LIMIT, Action, Cmd, Fail, QueueState, Subsys, Target};
use crate::controller::Controller;
use crate::wire::cqe;
use crate::wire::status::Status;

/// `NVME_AEN_BIT_NS_ATTR`: Namespace Attribute Notices.
pub const AEN_BIT_NS_ATTR: u32 = 8;
/// `NVME_AEN_BIT_DISC_CHANGE`: Discovery Log Page Change Notices.
pub const AEN_BIT_DISC_CHANGE: u32 = 31;
/// The optional events an NVM controller offers (OAES) and enables at
/// first: namespace attribute notices.
pub const AEN_CFG_OPTIONAL: u32 = 1 << AEN_BIT_NS_ATTR;
/// What a discovery controller offers: discovery log change notices.
pub const DISC_AEN_CFG_OPTIONAL: u32 = 1 << AEN_BIT_DISC_CHANGE;
/// What Set Features Asynchronous Event Configuration accepts on an NVM
/// controller: the SMART critical warnings (bits 0..5, never raised) and the
/// optional events.
pub const AEN_CFG_ALL: u32 = 0x1f | AEN_CFG_OPTIONAL;
/// `NVME_AER_NOTICE`.
const AER_TYPE_NOTICE: u32 = 2;
/// `NVME_AER_NOTICE_NS_CHANGED`.
const AER_NOTICE_NS_CHANGED: u32 = 0;
/// `NVME_LOG_CHANGED_NS`.
const LOG_CHANGED_NS: u32 = 0x04;
/// Events a controller keeps while no AER is held.
pub const MAX_EVENTS: usize = 8;
/// `NVME_MAX_CHANGED_NAMESPACES`.
pub const MAX_CHANGED_NS: usize = 1024;

/// Events waiting for an AER: a fixed ring of completion result dwords.
#[derive(Debug, Default)]
pub(super) struct Events {
    results: [u32; MAX_EVENTS],
    len: usize,
}

impl Events {
    fn push(&mut self, r: u32) {
        if self.len < MAX_EVENTS {
            self.results[self.len] = r;
            self.len += 1;
        }
    }
    fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let r = self.results[0];
        self.results.copy_within(1..self.len, 0);
        self.len -= 1;
        Some(r)
    }
}

/// The Changed Namespace List: nsids in report order; past
/// [`MAX_CHANGED_NS`] the list is the single entry 0xffffffff.
#[derive(Debug, Default)]
pub(super) struct ChangedNs {
    nsids: Vec<u32>,
    overflow: bool,
}

impl ChangedNs {
    fn add(&mut self, nsid: u32) {
        if self.overflow || self.nsids.contains(&nsid) {
            return;
        }
        if self.nsids.len() == MAX_CHANGED_NS {
            self.overflow = true;
            self.nsids.clear();
            return;
        }
        self.nsids.push(nsid);
    }

    /// Writes the 4096-byte page and clears the list.
    pub(super) fn take(&mut self, page: &mut [u8; 4096]) {
        page.fill(0);
        if self.overflow {
            page[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        } else {
            for (slot, nsid) in page.chunks_exact_mut(4).zip(&self.nsids) {
                slot.copy_from_slice(&nsid.to_le_bytes());
            }
        }
        self.nsids.clear();
        self.overflow = false;
    }
}

impl Controller {
    pub(super) fn events_ready(&self) -> bool {
        !self.dead && self.nr_aers > 0 && self.events.len > 0
    }

    /// Clears the mask of an event kind once its log page is read without
    /// Retain Asynchronous Event (CDW10 bit 15).
    pub(super) fn log_read(&mut self, bit: u32, cdw10: u32) {
        if cdw10 & 1 << 15 == 0 {
            self.aen_masked &= !(1 << bit);
        }
    }
}

impl Target {
    pub(super) fn hold_aer(&mut self, q: &QueueState, cmd: &Cmd) -> Result<(), Fail> {
        let Some(b) = q.bound else {
            return Err(Fail::dnr(Status::CMD_SEQ_ERROR));
        };
        let ctrl = self.ctrl_mut(&b)?;
        if ctrl.nr_aers >= AER_LIMIT {
            return Err(Fail::dnr(Status::ASYNC_LIMIT));
        }
        ctrl.aers[ctrl.nr_aers] = cmd.cid;
        ctrl.nr_aers += 1;
        // The held command has taken its SQ entry.
        q.consume();
        self.deliver_events();
        Ok(())
    }

    /// Reports `event` to every controller that enabled it; held AERs
    /// complete at the next [`Target::poll`].
    pub fn notify(&mut self, event: super::AsyncEvent) {
        let super::AsyncEvent::NamespaceChanged { nsid } = event;
        for ctrl in self.controllers.values_mut() {
            if ctrl.subsys != Subsys::Nvm || ctrl.dead {
                continue;
            }
            ctrl.changed_ns.add(nsid);
            let bit = 1 << AEN_BIT_NS_ATTR;
            if ctrl.aen_enabled & bit == 0 || ctrl.aen_masked & bit != 0 {
                continue;
            }
            ctrl.aen_masked |= bit;
            ctrl.events
                .push(AER_TYPE_NOTICE | AER_NOTICE_NS_CHANGED << 8 | LOG_CHANGED_NS << 16);
        }
        self.deliver_events();
    }

    /// Pairs waiting events with held AERs into pending completions.
    pub(super) fn deliver_events(&mut self) {
        for ctrl in self.controllers.values_mut() {
            while ctrl.events_ready() {
                let Some(result) = ctrl.events.pop() else {
                    break;
                };
                // events_ready() says nr_aers > 0.
                ctrl.nr_aers -= 1;
                let cid = ctrl.aers[ctrl.nr_aers];
                // The admin head is below the queue size (<= 65536).
                let sq_head = ctrl.admin_head.load(std::sync::atomic::Ordering::Relaxed) as u16;
                self.pending.push(Action::Complete {
                    cntlid: ctrl.cntlid,
                    qid: 0,
                    cqe: cqe::Repr {
                        result: u64::from(result),
                        sq_head,
                        sq_id: 0,
                        command_id: cid,
                        status: Status::SUCCESS,
                    },
                });
            }
        }
    }
}
