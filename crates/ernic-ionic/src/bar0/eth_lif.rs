//! The Ethernet LIF: the queues Q_INIT describes and Q_CONTROL enables,
//! where the driver put the port and LIF info blocks, the receive filter
//! and event counters, and the LIF statistics. BAR 0 owns one; the
//! Ethernet admin queue (`eth_adminq.rs`) and data queues (`crate::eth`)
//! work on it.

use crate::fw::dev_cmd;
use crate::regs::status;

/// An Ethernet queue as Q_INIT described it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthQueue {
    /// Logical queue type (admin, notify, RX, TX).
    pub qtype: u8,
    /// Index within the type.
    pub index: u32,
    /// Descriptor ring in guest memory.
    pub ring_base: u64,
    /// Completion ring.
    pub cq_ring_base: u64,
    /// Scatter-gather ring.
    pub sg_ring_base: u64,
    /// log2 of the ring's depth.
    pub ring_size: u8,
    /// Interrupt control index.
    pub intr_index: u16,
    /// `IONIC_QINIT_F_*`.
    pub flags: u16,
    /// Enabled (Q_INIT with ENA, or Q_CONTROL).
    pub enabled: bool,
    /// Descriptors the driver has posted (its producer index, from the
    /// doorbells).
    pub posted: u16,
    /// The next descriptor the device takes.
    pub head: u16,
    /// The color of the completions being written (flips at each wrap).
    pub color: bool,
}

/// The Ethernet LIF's state.
#[derive(Debug, Clone)]
pub struct EthLif {
    /// RX (and TX) queues the LIF has.
    eth_queues: u32,
    /// Interrupt vectors a queue may name.
    vectors: u16,
    // Where PORT_INIT and LIF_INIT put the port and LIF info blocks (the
    // device keeps them current; the resets forget them).
    pub(crate) port_info: Option<u64>,
    pub(crate) lif_info: Option<u64>,
    pub(crate) queues: Vec<EthQueue>,
    pub(crate) filters: u32,
    pub(crate) eid: u64,
    pub(crate) stats: crate::eth::LifStats,
    pub(crate) frame: Vec<u8>,
}

impl EthLif {
    /// A LIF of `eth_queues` RX and TX queues on a device of `vectors`.
    pub fn new(eth_queues: u32, vectors: u16) -> EthLif {
        EthLif {
            eth_queues,
            vectors,
            port_info: None,
            lif_info: None,
            queues: Vec::new(),
            filters: 0,
            eid: 0,
            stats: crate::eth::LifStats::default(),
            frame: Vec::with_capacity(16 << 10),
        }
    }

    /// As after a device reset: no info blocks, no queues, zeroed
    /// statistics.
    pub fn reset(&mut self) {
        self.port_info = None;
        self.lif_info = None;
        self.queues.clear();
        self.stats = crate::eth::LifStats::default();
    }

    /// The LIF's counters.
    pub fn stats(&self) -> &crate::eth::LifStats {
        &self.stats
    }

    /// The queues Q_INIT has set up.
    pub fn queues(&self) -> &[EthQueue] {
        &self.queues
    }
    /// How many queues of Ethernet type `qtype` the LIF has, `None` for a
    /// type it does not have.
    pub(super) fn queue_count(&self, qtype: u8) -> Option<u32> {
        use crate::regs::qtype as t;
        match qtype {
            t::ADMINQ | t::NOTIFYQ => Some(1),
            t::RXQ | t::TXQ => Some(self.eth_queues),
            _ => None,
        }
    }

    /// Q_INIT: records an Ethernet queue's rings and interrupt; refuses
    /// an unknown type, an index past the LIF's count, a ring deeper than
    /// 2^15.
    pub(super) fn q_init(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
        use crate::regs::q_init as q;
        let c = dev_cmd::Packet::new_unchecked(c);
        let qtype = c.q_init_type();
        let index = c.q_init_index();
        let Some(count) = self.queue_count(qtype) else {
            return status::EQTYPE;
        };
        if index >= count {
            return status::EQID;
        }
        let ring_size = c.q_init_ring_size();
        if ring_size > q::MAX_RING_SIZE {
            return status::EINVAL;
        }
        let flags = c.q_init_flags();
        let intr_index = c.q_init_intr_index();
        if flags & q::F_IRQ != 0 && intr_index >= self.vectors {
            return status::EINVAL;
        }
        let queue = EthQueue {
            qtype,
            index,
            ring_base: c.q_init_ring_base(),
            cq_ring_base: c.q_init_cq_ring_base(),
            sg_ring_base: c.q_init_sg_ring_base(),
            ring_size,
            intr_index,
            flags,
            enabled: flags & q::F_ENA != 0,
            posted: 0,
            head: 0,
            color: true,
        };
        self.queues.retain(|e| (e.qtype, e.index) != (qtype, index));
        self.queues.push(queue);
        let mut comp = dev_cmd::Comp::new_unchecked(comp);
        comp.set_q_init_hw_index(index);
        comp.set_q_init_hw_type(qtype);
        status::SUCCESS
    }

    /// Q_CONTROL: enables or disables a queue Q_INIT set up.
    pub(super) fn q_control(&mut self, c: &[u8; 64]) -> u8 {
        use crate::regs::q_control as q;
        let c = dev_cmd::Packet::new_unchecked(c);
        let (qtype, index) = (c.q_control_type(), c.q_control_index());
        let Some(e) = self
            .queues
            .iter_mut()
            .find(|e| (e.qtype, e.index) == (qtype, index))
        else {
            return status::EQID;
        };
        match c.q_control_oper() {
            q::ENABLE => e.enabled = true,
            q::DISABLE | q::HANG_RESET => e.enabled = false,
            _ => return status::EINVAL,
        }
        status::SUCCESS
    }
}
