//! The Ethernet admin queue: its doorbell runs the descriptors (device
//! commands, `fw::dev_cmd`) the driver posts, writes their completions and
//! raises its vector; the notify queue's link events.

use ernic_vfio::dma::Dma;

use crate::fw::dev_cmd;
use crate::regs::{opcode, qtype, status};

use super::Bar0;

impl Bar0 {
    /// The Ethernet admin queue `qid`'s doorbell: runs the descriptors up
    /// to `p_index`, writes each completion (color byte last), and answers
    /// the vector to raise when the queue asked for interrupts.
    pub fn admin_doorbell(&mut self, qid: u32, p_index: u16, dma: &mut Dma) -> Option<u16> {
        use crate::regs::{q_init, qtype};
        let at = self
            .eth
            .queues
            .iter()
            .position(|e| e.qtype == qtype::ADMINQ && e.index == qid && e.enabled)?;
        let q = self.eth.queues[at];
        let depth = 1u32 << q.ring_size;
        let mask = (depth - 1) as u16;
        let target = p_index & mask;
        let (mut head, mut color) = (q.head & mask, q.color);
        let mut ran = 0;
        while head != target && ran < depth {
            let mut c = [0u8; 64];
            let desc = q.ring_base.wrapping_add(u64::from(head) * 64);
            let mut comp = [0u8; 16];
            let st = match dma.read(desc, &mut c) {
                Ok(()) => {
                    let st = self.admin_command(&c, &mut comp);
                    let p = dev_cmd::Packet::new_unchecked(&c);
                    if st == status::SUCCESS
                        && p.opcode() == opcode::Q_INIT
                        && p.q_init_type() == qtype::NOTIFYQ
                    {
                        // The first event a new notify queue carries: the
                        // link as it is.
                        if let Some(v) = self.post_link_event(dma) {
                            self.to_fire.push(v);
                        }
                    }
                    st
                }
                Err(_) => status::EFAULT,
            };
            dev_cmd::Comp::new_unchecked(&mut comp).set_status(st);
            (head, color) = crate::eth::complete(dma, q.cq_ring_base, head, mask, color, &mut comp);
            ran += 1;
        }
        if let Some(e) = self.eth.queues.get_mut(at) {
            e.head = head;
            e.color = color;
        }
        (ran > 0 && q.flags & q_init::F_IRQ != 0 && self.raise(q.intr_index))
            .then_some(q.intr_index)
    }

    /// Posts a LINK_CHANGE event (`struct ionic_link_change_event`: eid,
    /// ecode 1, link_status, link_speed) on the notify queue, and raises
    /// its vector; the driver takes events whose eid is past the last it
    /// saw.
    pub(super) fn post_link_event(&mut self, dma: &mut Dma) -> Option<u16> {
        let at = self
            .eth
            .queues
            .iter()
            .position(|e| e.qtype == qtype::NOTIFYQ && e.enabled)?;
        let q = self.eth.queues[at];
        self.eth.eid += 1;
        let mut ev = [0u8; 64];
        ev[0..8].copy_from_slice(&self.eth.eid.to_le_bytes());
        ev[8..10].copy_from_slice(&1u16.to_le_bytes()); // IONIC_EVENT_LINK_CHANGE
        ev[10..12].copy_from_slice(&1u16.to_le_bytes()); // IONIC_PORT_OPER_STATUS_UP
        ev[12..16].copy_from_slice(&self.id.speed.to_le_bytes());
        let mask = ((1u32 << q.ring_size) - 1) as u16;
        let slot = q.ring_base.wrapping_add(u64::from(q.head & mask) * 64);
        let _ = dma.write(slot, &ev);
        self.eth.queues[at].head = (q.head + 1) & mask;
        if let Some(pa) = self.eth.lif_info {
            let at = pa + crate::regs::lif_info::STATUS_EID as u64;
            let _ = dma.write(at, &self.eth.eid.to_le_bytes());
        }
        (q.flags & crate::regs::q_init::F_IRQ != 0 && self.raise(q.intr_index))
            .then_some(q.intr_index)
    }

    /// One command from the Ethernet admin queue. Those with device state
    /// run as from BAR 0; receive modes and filters, and the rest of what
    /// the driver posts while it brings the LIF up, have none here and
    /// succeed (seed 001); the RDMA bootstrap (50-53) is recorded.
    pub(super) fn admin_command(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
        match dev_cmd::Packet::new_unchecked(c).opcode() {
            opcode::Q_INIT => self.eth.q_init(c, comp),
            opcode::Q_CONTROL => self.eth.q_control(c),
            opcode::LIF_SETATTR | opcode::LIF_GETATTR => self.lif_attr(c, comp),
            opcode::RX_FILTER_ADD => {
                self.eth.filters += 1;
                dev_cmd::Comp::new_unchecked(comp).set_filter_id(self.eth.filters);
                status::SUCCESS
            }
            50..=53 => self.rdma_bootstrap(c),
            _ => status::SUCCESS,
        }
    }
}
