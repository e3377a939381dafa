//! The keep-alive timer and [`Target::poll`]: a controller whose host sends
//! nothing for its KATO plus a grace is fatal (CSTS.CFS) and handed to the
//! transport to tear down.
//!
//! Timing follows nvmet with traffic-based keep-alive (CTRATT.TBKAS): any
//! command on any of the controller's queues, a Keep Alive, an enable (CC.EN
//! 0→1) or a Set Features KATO restarts the timer. nvmet checks the traffic
//! flag once per KATO period, so a controller dies between one and two KATOs
//! after its last command; this target uses the late end of that window:
//! the deadline is the last activity plus KATO plus a grace of one more
//! KATO ([`grace`]). KATO is kept in whole seconds, rounded up from the
//! Connect's or Set Features' milliseconds, as nvmet does. KATO 0 disables
//! the timer, and a Keep Alive then fails with KA_TIMEOUT_INVALID.

use std::time::{Duration, Instant};

use super::{Action, Binding, CSTS_CFS, Controller, Fail, Target, secs};
use crate::wire::status::Status;

/// The grace after KATO before a silent controller is declared dead: one
/// more KATO (nvmet's worst case with its per-period traffic check).
pub fn grace(kato: Duration) -> Duration {
    kato
}

/// Restarts `ctrl`'s keep-alive timer at `now`.
pub(super) fn refresh(ctrl: &mut Controller, now: Instant) {
    if ctrl.dead {
        return;
    }
    // A deadline too far to represent is no deadline.
    ctrl.ka_deadline = match ctrl.kato_secs {
        0 => None,
        s => now
            .checked_add(secs(s))
            .and_then(|t| t.checked_add(grace(secs(s)))),
    };
}

impl Target {
    pub(super) fn keep_alive(&mut self, b: &Binding, now: Instant) -> Result<u64, Fail> {
        let ctrl = self.ctrl_mut(b)?;
        if ctrl.kato_secs == 0 {
            return Err(Fail {
                status: Status::KA_TIMEOUT_INVALID,
                result: 0,
            });
        }
        refresh(ctrl, now);
        Ok(0)
    }

    /// Runs the timers and hands out what the transport must do: held AERs
    /// that an event completes, and controllers to tear down (keep-alive
    /// lapsed, or admin queue gone). Appends to `out`.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<Action>) {
        self.last_now = Some(now);
        for ctrl in self.controllers.values_mut() {
            if ctrl.dead {
                continue;
            }
            if ctrl.ka_deadline.is_some_and(|d| d <= now) {
                ctrl.dead = true;
                ctrl.csts |= CSTS_CFS;
                ctrl.ka_deadline = None;
                // The held AERs die with the queues the transport tears down.
                ctrl.nr_aers = 0;
                self.pending.push(Action::Teardown {
                    cntlid: ctrl.cntlid,
                });
            }
        }
        self.deliver_events();
        out.append(&mut self.pending);
    }

    /// When [`Target::poll`] next has work: the earliest keep-alive deadline,
    /// or the last instant seen when actions are already waiting.
    pub fn next_deadline(&self) -> Option<Instant> {
        if !self.pending.is_empty() || self.controllers.values().any(|c| c.events_ready()) {
            return self.last_now;
        }
        self.controllers
            .values()
            .filter(|c| !c.dead)
            .filter_map(|c| c.ka_deadline)
            .min()
    }
}
