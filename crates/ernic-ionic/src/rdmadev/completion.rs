//! Completions and events into the guest's rings: a CQE (through
//! `fw::cqe`, its last word with the color after the rest), the CQ-notify
//! EQE of an armed CQ (through `fw::eqe`) and its vector, and the CQ
//! doorbell that arms a CQ or reports the driver's position.

use ernic_vfio::dma::Dma;

use crate::fw::{cqe, eqe};

use crate::bootstrap::Bootstrap;

use super::RdmaDev;

impl RdmaDev {
    /// Writes a CQE (its last word, with the color, after the rest) to CQ
    /// `cqid`, then the CQ's event if it is armed.
    pub(super) fn post_cqe(
        &mut self,
        cqid: u32,
        c: &mut [u8; cqe::LEN],
        qtf: u32,
        dma: &mut Dma,
        fire: &mut Vec<u16>,
    ) {
        let Some(cq) = self.cqs.get_mut(&cqid) else {
            return;
        };
        let depth = cq.ring.depth();
        let color = (cq.prod / depth) & 1 == 0;
        let qtf = qtf | if color { cqe::COLOR } else { 0 };
        cqe::Packet::new_unchecked(&mut *c).set_qid_type_flags(qtf);
        let slot = cq.ring.slot(cq.prod);
        let last_word = cqe::field::QID_TYPE_FLAGS;
        let body = dma.write(slot, &c[..last_word.start]);
        // The body is visible before the word whose color publishes it
        // (the compiler may not sink the body's copy past this).
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        let last = dma.write(slot + last_word.start as u64, &c[last_word]);
        if let Err(e) = body.and(last) {
            // The guest gave a ring the device cannot write: this entry is
            // lost. Said once per CQ (a guest must not flood the log).
            cq.lost += 1;
            if cq.lost == 1 {
                tracing::warn!(
                    cq = cqid,
                    error = %e,
                    "cannot write a CQ entry at {slot:#x}; completions to this CQ are lost"
                );
            }
            return;
        }
        cq.prod = cq.prod.wrapping_add(1);
        if cq.armed {
            cq.armed = false;
            let eq = cq.eq;
            self.post_eqe(eq, cqid, dma, fire);
        }
    }

    /// Writes a CQ-notify EQE naming `cqid` to EQ `eqid` and raises its
    /// vector.
    pub(super) fn post_eqe(&mut self, eqid: u32, cqid: u32, dma: &mut Dma, fire: &mut Vec<u16>) {
        let Some(eq) = self.eqs.get_mut(&eqid) else {
            return;
        };
        let depth = eq.ring.depth();
        let color = (eq.prod / depth) & 1 == 0;
        let mut evt = [0u8; eqe::LEN];
        // A whole EQE's array: the setter cannot run past it.
        eqe::Packet::new_unchecked(&mut evt).set_cq_notify(cqid, color);
        if dma.write(eq.ring.slot(eq.prod), &evt).is_ok() {
            eq.prod = eq.prod.wrapping_add(1);
            fire.push(eq.vector);
        }
    }

    /// A CQ doorbell: ring 0 reports the driver's next entry; ring 1 or 2
    /// arms the CQ, which fires at once when entries are already waiting
    /// (a level, not an edge).
    pub fn cq_doorbell(
        &mut self,
        boot: &Bootstrap,
        dma: &mut Dma,
        cqid: u32,
        ring: u8,
        index: u16,
        fire: &mut Vec<u16>,
    ) {
        self.sync(boot, dma);
        let Some(cq) = self.cqs.get_mut(&cqid) else {
            return;
        };
        let mask = cq.ring.depth() - 1;
        match ring {
            0 => cq.guest_next = index & mask as u16,
            1 | 2 => {
                let waiting = (cq.prod & mask) as u16 != cq.guest_next;
                if waiting {
                    cq.armed = false;
                    let eq = cq.eq;
                    self.post_eqe(eq, cqid, dma, fire);
                } else {
                    cq.armed = true;
                }
            }
            _ => {}
        }
    }
}
