//! The BAR 0 register file: what the guest's driver reads and writes, the
//! device commands run synchronously on the doorbell write, and the
//! per-vector interrupt control (mask, credits with unmask, mask on
//! assert; an interrupt raised while masked is latched and delivered on
//! unmask).
//!
//! The register window is kept as the bytes the driver sees; writes land
//! only where the driver may write (command, side data, done, interrupt
//! control, the MSI-X area), and their effects are applied after the bytes.

use ernic_vfio::dma::Dma;

use crate::bytes::{le32, put_le32};
use crate::fw::dev_cmd;
use crate::regs::{self, cmd, dev_identity, info, intr, opcode, qtype, status};

/// What the device says of itself (a slice of the NIC profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// MSI-X vectors (and interrupt control blocks).
    pub vectors: u16,
    /// Firmware version string (at most 31 bytes are shown).
    pub fw_version: String,
    /// Serial number string.
    pub serial: String,
    /// Link speed in Mb/s.
    pub speed: u32,
    /// Doorbell pages per LIF.
    pub doorbell_pages: u32,
    /// Doorbell pages at the top of BAR 2 offered to the client as shared
    /// memory (sparse mmap) that the server polls; 0 for none. They lie
    /// above the pages the LIF reports, so a driver that takes its pages
    /// from the LIF never rings one.
    pub shared_doorbell_pages: u32,
    /// The LIF's station MAC.
    pub mac: [u8; 6],
    /// Largest Ethernet frame.
    pub max_frame: u32,
    /// Ethernet receive (and transmit) queues.
    pub eth_queues: u32,
    /// RDMA queue counts: admin queues, QPs (SQ and RQ ids), CQs, EQs.
    pub rdma_aqs: u32,
    /// QPs.
    pub rdma_qps: u32,
    /// CQs.
    pub rdma_cqs: u32,
    /// EQs.
    pub rdma_eqs: u32,
    /// Memory regions.
    pub rdma_mrs: u32,
    /// Address handles.
    pub rdma_ahs: u32,
    /// Page-table entries per LIF, shared by every MR (a fast-registration
    /// MR's page-list room included) and every ring given by a page table;
    /// one object may take half (see [`crate::limits`]).
    pub rdma_ptes: u32,
    /// Memory the engine may hold for the work-request slots of the QPs
    /// and SRQs, in MiB (see [`crate::limits`]).
    pub rdma_queue_mib: u32,
    /// How long a SEND waits for its peer to post a receive before it
    /// completes with RNR retry exceeded, in milliseconds.
    pub rnr_timeout_ms: u32,
    /// How long a request to another server waits for its answer before it
    /// completes with transport retry exceeded, in milliseconds.
    pub request_timeout_ms: u32,
}

impl Default for Identity {
    fn default() -> Identity {
        Identity {
            vectors: 32,
            fw_version: format!("ernic-{}", env!("CARGO_PKG_VERSION")),
            serial: "ERNIC0000000001".into(),
            speed: 100_000,
            doorbell_pages: 1024,
            shared_doorbell_pages: 0,
            // A locally administered address.
            mac: [0x02, 0x00, 0x45, 0x52, 0x4e, 0x01],
            max_frame: 9216 + 14 + 4,
            eth_queues: 4,
            rdma_aqs: 4,
            rdma_qps: 1024,
            rdma_cqs: 1024,
            rdma_eqs: 32,
            rdma_mrs: 65_536,
            rdma_ahs: 4096,
            // 2^20 entries, as the seed's device has: with 4 KiB pages a
            // 2 GiB MR at most (the driver reports half the table).
            rdma_ptes: 1 << 20,
            rdma_queue_mib: 128,
            rnr_timeout_ms: 5000,
            request_timeout_ms: 30_000,
        }
    }
}

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

/// BAR 0.
#[derive(Debug, Clone)]
pub struct Bar0 {
    bytes: Vec<u8>,
    pending: Vec<bool>,
    heartbeat: u32,
    id: Identity,
    commands: u64,
    // Where PORT_INIT and LIF_INIT put the port and LIF info blocks (the
    // device keeps them current; the resets forget them).
    pub(crate) port_info: Option<u64>,
    pub(crate) lif_info: Option<u64>,
    pub(crate) queues: Vec<EthQueue>,
    filters: u32,
    eid: u64,
    pub(crate) rdma: crate::bootstrap::Bootstrap,
    // Vectors raised by events outside a queue's own doorbell, for the
    // function to signal (see `take_fired`).
    to_fire: Vec<u16>,
    /// Scratch for `write`: whether each vector it touches was masked.
    masked_before: Vec<bool>,
    pub(crate) stats: crate::eth::LifStats,
    pub(crate) frame: Vec<u8>,
}

fn put_str(b: &mut [u8], at: usize, s: &str) {
    let n = s.len().min(info::STRING_LEN - 1);
    b[at..at + info::STRING_LEN].fill(0);
    b[at..at + n].copy_from_slice(&s.as_bytes()[..n]);
}

impl Bar0 {
    /// BAR 0 as after reset, for a device that is `id`.
    pub fn new(id: Identity) -> Bar0 {
        assert!(
            (1..=((regs::WINDOW - regs::INTR_CTRL) / regs::INTR_CTRL_STRIDE) as u16)
                .contains(&id.vectors),
            "vector count"
        );
        let mut b = Bar0 {
            bytes: vec![0; regs::BAR0_SIZE as usize],
            pending: vec![false; id.vectors as usize],
            heartbeat: 0,
            id,
            commands: 0,
            port_info: None,
            lif_info: None,
            queues: Vec::new(),
            filters: 0,
            eid: 0,
            rdma: crate::bootstrap::Bootstrap::default(),
            to_fire: Vec::new(),
            masked_before: Vec::new(),
            stats: crate::eth::LifStats::default(),
            frame: Vec::with_capacity(16 << 10),
        };
        b.reset();
        b
    }

    /// The device's state as after a reset: info block, no command, every
    /// vector unmasked with nothing pending.
    pub fn reset(&mut self) {
        let b = &mut self.bytes;
        b[..regs::WINDOW].fill(0);
        put_le32(b, info::SIGNATURE, info::SIGNATURE_VALUE);
        b[info::VERSION] = 1;
        b[info::ASIC_TYPE] = 0;
        b[info::ASIC_REV] = 0;
        b[info::FW_STATUS] = info::FW_RUNNING;
        put_str(b, info::FW_VERSION, &self.id.fw_version);
        put_str(b, info::SERIAL_NUM, &self.id.serial);
        self.pending.iter_mut().for_each(|p| *p = false);
        self.port_info = None;
        self.lif_info = None;
        self.queues.clear();
        self.stats = crate::eth::LifStats::default();
        self.rdma.reset();
    }

    /// What the device says of itself.
    pub fn identity(&self) -> &Identity {
        &self.id
    }

    /// What the RDMA bootstrap created.
    pub fn rdma(&self) -> &crate::bootstrap::Bootstrap {
        &self.rdma
    }

    /// Vectors raised since the last call, to signal.
    pub fn take_fired(&mut self, out: &mut Vec<u16>) {
        out.append(&mut self.to_fire);
    }

    /// The LIF's counters.
    pub fn stats(&self) -> &crate::eth::LifStats {
        &self.stats
    }

    /// The Ethernet queues Q_INIT has set up.
    pub fn queues(&self) -> &[EthQueue] {
        &self.queues
    }

    /// How many queues of Ethernet type `qtype` the LIF has, `None` for a
    /// type it does not have.
    fn queue_count(&self, qtype: u8) -> Option<u32> {
        use crate::regs::qtype as t;
        match qtype {
            t::ADMINQ | t::NOTIFYQ => Some(1),
            t::RXQ | t::TXQ => Some(self.id.eth_queues),
            _ => None,
        }
    }

    /// Where the driver asked for the port and LIF info blocks.
    pub fn info_blocks(&self) -> (Option<u64>, Option<u64>) {
        (self.port_info, self.lif_info)
    }

    /// Device commands run so far.
    pub fn commands(&self) -> u64 {
        self.commands
    }

    /// Reads `buf.len()` bytes at `offset` (inside BAR 0: the caller
    /// checked). Each read that covers the heartbeat sees it advance, as a
    /// live firmware's does.
    pub fn read(&mut self, offset: u64, buf: &mut [u8]) {
        let at = offset as usize;
        let hb = info::FW_HEARTBEAT;
        if at < hb + 4 && hb < at + buf.len() {
            self.heartbeat = self.heartbeat.wrapping_add(1);
            put_le32(&mut self.bytes, hb, self.heartbeat);
        }
        buf.copy_from_slice(&self.bytes[at..at + buf.len()]);
    }

    /// Writes `data` at `offset` (inside BAR 0: the caller checked). The
    /// vectors to signal now (an unmask that releases a latched interrupt)
    /// wait in [`take_fired`](Bar0::take_fired).
    pub fn write(&mut self, offset: u64, data: &[u8], dma: &mut Dma) {
        let at = offset as usize;
        let end = at + data.len();
        // Byte by byte into the places the driver may write.
        let vectors = self.id.vectors as usize;
        let intr_end = regs::INTR_CTRL + vectors * regs::INTR_CTRL_STRIDE;
        // The vectors whose control block this write touches, and whether
        // each was masked before it.
        let touched = if end > regs::INTR_CTRL && at < intr_end {
            let first = at.saturating_sub(regs::INTR_CTRL) / regs::INTR_CTRL_STRIDE;
            let last = (end.min(intr_end) - 1 - regs::INTR_CTRL) / regs::INTR_CTRL_STRIDE;
            first..last + 1
        } else {
            0..0
        };
        let mut masked_before = std::mem::take(&mut self.masked_before);
        masked_before.clear();
        masked_before.extend(touched.clone().map(|v| self.masked(v)));
        let mut doorbell = false;
        for (i, &v) in data.iter().enumerate() {
            let a = at + i;
            let writable = (cmd::DONE..cmd::DONE + 4).contains(&a)
                || (cmd::CMD..cmd::CMD + 64).contains(&a)
                || (cmd::DATA..cmd::DATA + cmd::DATA_LEN).contains(&a)
                || (regs::INTR_CTRL..intr_end).contains(&a)
                || a >= regs::WINDOW;
            if writable {
                self.bytes[a] = v;
            }
            // The doorbell: writing 1 (bit 0 of its low byte) runs the
            // command; the register itself keeps nothing.
            if a == cmd::DOORBELL && v & 1 != 0 {
                doorbell = true;
            }
        }
        // Interrupt control: a credits write with UNMASK clears the mask.
        for (v, &was_masked) in touched.zip(&masked_before) {
            let base = regs::INTR_CTRL + v * regs::INTR_CTRL_STRIDE;
            let credits = base + intr::CREDITS;
            if at < credits + 4 && credits < end {
                let c = le32(&self.bytes, credits);
                if c & intr::CRED_UNMASK != 0 {
                    put_le32(&mut self.bytes, base + intr::MASK, 0);
                }
                // Credits are returned, not stored.
                put_le32(&mut self.bytes, credits, 0);
            }
            if was_masked && !self.masked(v) && std::mem::take(&mut self.pending[v]) {
                self.assert_vector(v);
                self.to_fire.push(v as u16);
            }
        }
        self.masked_before = masked_before;
        if doorbell {
            self.run_command(dma);
        }
    }

    fn masked(&self, v: usize) -> bool {
        le32(
            &self.bytes,
            regs::INTR_CTRL + v * regs::INTR_CTRL_STRIDE + intr::MASK,
        ) != 0
    }

    /// An interrupt is being delivered on `v`: with mask-on-assert set,
    /// the vector masks itself.
    fn assert_vector(&mut self, v: usize) {
        let base = regs::INTR_CTRL + v * regs::INTR_CTRL_STRIDE;
        if le32(&self.bytes, base + intr::MASK_ASSERT) != 0 {
            put_le32(&mut self.bytes, base + intr::MASK, 1);
        }
    }

    /// The device raises vector `v`: answers whether to signal it now;
    /// while masked it is latched for the unmask.
    pub fn raise(&mut self, v: u16) -> bool {
        let v = v as usize;
        if v >= self.pending.len() {
            return false;
        }
        if self.masked(v) {
            self.pending[v] = true;
            return false;
        }
        self.assert_vector(v);
        true
    }

    /// Runs the command in the command registers and sets `done`.
    fn run_command(&mut self, dma: &mut Dma) {
        self.commands += 1;
        let c: [u8; 64] = self.bytes[cmd::CMD..cmd::CMD + 64]
            .try_into()
            .expect("64 bytes");
        // Whole arrays of the command's and completion's sizes: no
        // accessor can run past them.
        let p = dev_cmd::Packet::new_unchecked(&c);
        let mut comp = [0u8; dev_cmd::COMP_LEN];
        let status = match p.opcode() {
            // These succeed with a zeroed completion (seed 001's table).
            opcode::NOP
            | opcode::INIT
            | opcode::GETATTR
            | opcode::SETATTR
            | opcode::PORT_IDENTIFY
            | opcode::PORT_GETATTR
            | opcode::PORT_SETATTR => status::SUCCESS,
            opcode::PORT_INIT => self.port_init(p.info_pa(), dma),
            opcode::LIF_INIT => {
                let st = self.lif_init(p.info_pa(), dma);
                // hw_index: the LIF's own index.
                dev_cmd::Comp::new_unchecked(&mut comp).set_lif_hw_index(p.lif_index());
                st
            }
            opcode::LIF_SETATTR | opcode::LIF_GETATTR => self.lif_attr(&c, &mut comp),
            opcode::Q_IDENTIFY => self.q_identify(&c, &mut comp),
            opcode::Q_INIT => self.q_init(&c, &mut comp),
            opcode::Q_CONTROL => self.q_control(&c),
            // The RDMA bootstrap runs from BAR 0 as from the admin queue.
            50..=53 => self.rdma_bootstrap(&c),
            opcode::PORT_RESET => {
                self.port_info = None;
                status::SUCCESS
            }
            opcode::LIF_RESET => {
                self.lif_info = None;
                self.queues.clear();
                status::SUCCESS
            }
            opcode::LIF_IDENTIFY => {
                // Version 1 of the LIF identity is the one served.
                self.lif_identify();
                dev_cmd::Comp::new_unchecked(&mut comp).set_ver(1);
                status::SUCCESS
            }
            opcode::RESET => {
                let keep_cmd = c;
                self.reset();
                self.bytes[cmd::CMD..cmd::CMD + 64].copy_from_slice(&keep_cmd);
                status::SUCCESS
            }
            opcode::IDENTIFY => {
                let ver = p.identify_ver().min(dev_identity::MAX_VERSION);
                if ver == 0 {
                    status::EVERSION
                } else {
                    self.identify(ver);
                    dev_cmd::Comp::new_unchecked(&mut comp).set_ver(ver);
                    status::SUCCESS
                }
            }
            _ => status::EOPCODE,
        };
        dev_cmd::Comp::new_unchecked(&mut comp).set_status(status);
        self.bytes[cmd::COMP..cmd::COMP + 16].copy_from_slice(&comp);
        put_le32(&mut self.bytes, cmd::DONE, 1);
    }

    /// An RDMA bootstrap command (50-53) against the profile's limits.
    fn rdma_bootstrap(&mut self, c: &[u8; 64]) -> u8 {
        let limits = crate::bootstrap::Limits {
            vectors: u32::from(self.id.vectors),
            eqs: self.id.rdma_eqs,
            cqs: self.id.rdma_cqs,
            aqs: self.id.rdma_aqs,
        };
        self.rdma.run(c, limits)
    }

    /// LIF_SETATTR / LIF_GETATTR: the MAC is kept; other attributes
    /// succeed without effect (seed 001).
    pub fn lif_attr(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
        use crate::regs::lif_attr as a;
        let c = dev_cmd::Packet::new_unchecked(c);
        if c.lif_attr() == a::MAC {
            if c.opcode() == opcode::LIF_SETATTR {
                self.id.mac = c.lif_attr_mac();
            } else {
                dev_cmd::Comp::new_unchecked(comp).set_lif_attr_mac(self.id.mac);
            }
        }
        status::SUCCESS
    }

    /// Q_IDENTIFY: descriptor sizes of an Ethernet queue type, version 0,
    /// no offloads.
    fn q_identify(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
        use crate::regs::{q_identify as q, qtype as t};
        // (descriptor, completion, SG descriptor, SG elements)
        let qtype = dev_cmd::Packet::new_unchecked(c).q_identify_type();
        let (desc, cq, sg, elems) = match qtype {
            t::ADMINQ => (64u16, 16u16, 0u16, 0u16),
            t::NOTIFYQ => (4, 64, 0, 0),
            t::RXQ | t::TXQ => (16, 16, 128, 8),
            _ => return status::EQTYPE,
        };
        let d = &mut self.bytes[cmd::DATA..cmd::DATA + cmd::DATA_LEN];
        d.fill(0);
        d[q::ID_VERSION] = 0;
        d[q::ID_SUPPORTED] = 1; // version 0 only
        let features = if qtype == t::NOTIFYQ { 0 } else { q::F_CQ };
        d[q::ID_FEATURES..q::ID_FEATURES + 8].copy_from_slice(&features.to_le_bytes());
        for (at, v) in [
            (q::ID_DESC_SZ, desc),
            (q::ID_COMP_SZ, cq),
            (q::ID_SG_DESC_SZ, sg),
            (q::ID_MAX_SG_ELEMS, elems),
            (q::ID_SG_DESC_STRIDE, elems),
        ] {
            d[at..at + 2].copy_from_slice(&v.to_le_bytes());
        }
        dev_cmd::Comp::new_unchecked(comp).set_q_identify_ver(0);
        status::SUCCESS
    }

    /// Q_INIT: records an Ethernet queue's rings and interrupt; refuses
    /// an unknown type, an index past the LIF's count, a ring deeper than
    /// 2^15.
    fn q_init(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
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
        if flags & q::F_IRQ != 0 && intr_index >= self.id.vectors {
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
    fn q_control(&mut self, c: &[u8; 64]) -> u8 {
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

    /// The Ethernet admin queue `qid`'s doorbell: runs the descriptors up
    /// to `p_index`, writes each completion (color byte last), and answers
    /// the vector to raise when the queue asked for interrupts.
    pub fn admin_doorbell(&mut self, qid: u32, p_index: u16, dma: &mut Dma) -> Option<u16> {
        use crate::regs::{q_init, qtype};
        let at = self
            .queues
            .iter()
            .position(|e| e.qtype == qtype::ADMINQ && e.index == qid && e.enabled)?;
        let q = self.queues[at];
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
        if let Some(e) = self.queues.get_mut(at) {
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
    fn post_link_event(&mut self, dma: &mut Dma) -> Option<u16> {
        let at = self
            .queues
            .iter()
            .position(|e| e.qtype == qtype::NOTIFYQ && e.enabled)?;
        let q = self.queues[at];
        self.eid += 1;
        let mut ev = [0u8; 64];
        ev[0..8].copy_from_slice(&self.eid.to_le_bytes());
        ev[8..10].copy_from_slice(&1u16.to_le_bytes()); // IONIC_EVENT_LINK_CHANGE
        ev[10..12].copy_from_slice(&1u16.to_le_bytes()); // IONIC_PORT_OPER_STATUS_UP
        ev[12..16].copy_from_slice(&self.id.speed.to_le_bytes());
        let mask = ((1u32 << q.ring_size) - 1) as u16;
        let slot = q.ring_base.wrapping_add(u64::from(q.head & mask) * 64);
        let _ = dma.write(slot, &ev);
        self.queues[at].head = (q.head + 1) & mask;
        if let Some(pa) = self.lif_info {
            let at = pa + crate::regs::lif_info::STATUS_EID as u64;
            let _ = dma.write(at, &self.eid.to_le_bytes());
        }
        (q.flags & crate::regs::q_init::F_IRQ != 0 && self.raise(q.intr_index))
            .then_some(q.intr_index)
    }

    /// One command from the Ethernet admin queue. Those with device state
    /// run as from BAR 0; receive modes and filters, and the rest of what
    /// the driver posts while it brings the LIF up, have none here and
    /// succeed (seed 001); the RDMA bootstrap (50-53) is recorded.
    fn admin_command(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
        match dev_cmd::Packet::new_unchecked(c).opcode() {
            opcode::Q_INIT => self.q_init(c, comp),
            opcode::Q_CONTROL => self.q_control(c),
            opcode::LIF_SETATTR | opcode::LIF_GETATTR => self.lif_attr(c, comp),
            opcode::RX_FILTER_ADD => {
                self.filters += 1;
                dev_cmd::Comp::new_unchecked(comp).set_filter_id(self.filters);
                status::SUCCESS
            }
            50..=53 => self.rdma_bootstrap(c),
            _ => status::SUCCESS,
        }
    }

    /// PORT_INIT: the port info block at `pa`, giving the link speed, an
    /// up port and a copper QSFP transceiver.
    fn port_init(&mut self, pa: u64, dma: &mut Dma) -> u8 {
        use crate::regs::port_info as p;
        let mut b = [0u8; p::HEAD_LEN];
        put_le32(&mut b, p::CONFIG_SPEED, self.id.speed);
        put_le32(&mut b, p::CONFIG_MTU, self.id.max_frame - 14 - 4);
        b[p::CONFIG_STATE] = p::ADMIN_UP;
        put_le32(&mut b, p::STATUS_ID, 1);
        put_le32(&mut b, p::STATUS_SPEED, self.id.speed);
        b[p::STATUS_STATUS] = p::OPER_UP;
        b[p::XCVR] = p::XCVR_SPROM_READ;
        b[p::XCVR + 1] = p::PHY_COPPER;
        b[p::XCVR + 2..p::XCVR + 4].copy_from_slice(&p::PID_QSFP_100G_CR4.to_le_bytes());
        match dma.write(pa, &b) {
            Ok(()) => {
                self.port_info = Some(pa);
                status::SUCCESS
            }
            Err(_) => status::EFAULT,
        }
    }

    /// LIF_INIT: link up at the port's speed in the LIF status block at
    /// `pa` (so the netdev gets a carrier).
    fn lif_init(&mut self, pa: u64, dma: &mut Dma) -> u8 {
        use crate::regs::lif_info as l;
        let mut b = [0u8; l::HEAD_LEN];
        b[l::STATUS_PORT_NUM] = 1;
        b[l::STATUS_LINK_STATUS..l::STATUS_LINK_STATUS + 2]
            .copy_from_slice(&u16::from(crate::regs::port_info::OPER_UP).to_le_bytes());
        put_le32(&mut b, l::STATUS_LINK_SPEED, self.id.speed);
        match dma.write(pa, &b) {
            Ok(()) => {
                self.lif_info = Some(pa);
                status::SUCCESS
            }
            Err(_) => status::EFAULT,
        }
    }

    /// `union ionic_lif_identity` into the data window: Ethernet and RDMA
    /// capability, the queue counts, frame size and MAC, and the RDMA
    /// section's queue types (5-9: AQ, SQ, RQ, CQ, EQ) and limits.
    fn lif_identify(&mut self) {
        use crate::regs::lif_identity as l;
        let id = self.id.clone();
        let d = &mut self.bytes[cmd::DATA..cmd::DATA + cmd::DATA_LEN];
        d.fill(0);
        d[l::CAPABILITIES..l::CAPABILITIES + 8]
            .copy_from_slice(&(l::CAP_ETH | l::CAP_RDMA).to_le_bytes());
        d[l::ETH_VERSION] = 1;
        put_le32(d, l::ETH_MAX_UCAST_FILTERS, 32);
        put_le32(d, l::ETH_MAX_MCAST_FILTERS, 32);
        put_le32(d, l::ETH_MIN_FRAME_SIZE, 64);
        put_le32(d, l::ETH_MAX_FRAME_SIZE, id.max_frame);
        // The driver allocates an RSS indirection table of this many
        // entries (accepted and ignored here: one flow hash steers).
        d[l::ETH_RSS_IND_TBL_SZ..l::ETH_RSS_IND_TBL_SZ + 2].copy_from_slice(&64u16.to_le_bytes());
        d[l::CONFIG_STATE] = 1; // enabled
        put_le32(d, l::CONFIG_MTU, id.max_frame - 14 - 4);
        d[l::CONFIG_MAC..l::CONFIG_MAC + 6].copy_from_slice(&id.mac);
        // Per logical queue type: admin, notify, RX, TX.
        for (qtype, n) in [(0, 1), (1, 1), (2, id.eth_queues), (3, id.eth_queues)] {
            put_le32(d, l::CONFIG_QUEUE_COUNT + 4 * qtype, n);
        }
        // Firmware ABI v1 (ionic_fw.h's v1 WQE opcodes), every admin
        // command, and the v1 send opcodes through BIND_MW (rdma-core's
        // provider wants all eleven; a BIND_MW WQE fails on its own).
        d[l::RDMA_VERSION] = 1;
        d[l::RDMA_ADMIN_OPCODES] = crate::fw::admin_op::COUNT;
        d[l::RDMA_QP_OPCODES] = 11;
        put_le32(d, l::RDMA_NPTS_PER_LIF, id.rdma_ptes);
        put_le32(d, l::RDMA_NMRS_PER_LIF, id.rdma_mrs);
        put_le32(d, l::RDMA_NAHS_PER_LIF, id.rdma_ahs);
        // Strides as log2 bytes: 64-byte WQEs up to 4 KiB, 64-byte cache
        // lines, 8-byte page-table entries.
        d[l::RDMA_MAX_STRIDE] = 12;
        d[l::RDMA_CL_STRIDE] = 6;
        d[l::RDMA_PTE_STRIDE] = 3;
        d[l::RDMA_RRQ_STRIDE] = 6;
        d[l::RDMA_RSQ_STRIDE] = 6;
        // Queue groups of 8 ids: the driver interleaves its two groups of
        // QP and CQ ids by group, and with groups of one the first id of
        // the second would be 1, the GSI QP's.
        d[l::RDMA_UDMA_SHIFT] = 3;
        // Device and per-QP counters (IONIC_LIF_RDMA_STAT_GLOBAL | _QP),
        // served by the STATS commands from the core's counters.
        d[l::RDMA_STATS_TYPE..l::RDMA_STATS_TYPE + 2].copy_from_slice(&3u16.to_le_bytes());
        let counts = [
            id.rdma_aqs,
            id.rdma_qps,
            id.rdma_qps,
            id.rdma_cqs,
            id.rdma_eqs,
        ];
        for (i, n) in counts.into_iter().enumerate() {
            let at = l::RDMA_AQ_QTYPE + i * l::QTYPE_STRIDE;
            d[at] = 5 + i as u8;
            put_le32(d, at + 4, n);
            put_le32(d, at + 8, 0);
        }
    }

    /// `union ionic_dev_identity`, version `ver`, into the data window.
    fn identify(&mut self, ver: u8) {
        let d = &mut self.bytes[cmd::DATA..cmd::DATA + cmd::DATA_LEN];
        d.fill(0);
        d[dev_identity::VERSION] = ver;
        d[dev_identity::TYPE] = 0;
        d[dev_identity::NPORTS] = 1;
        put_le32(d, dev_identity::NLIFS, 1);
        put_le32(d, dev_identity::NINTRS, u32::from(self.id.vectors));
        put_le32(
            d,
            dev_identity::NDBPGS_PER_LIF,
            self.id
                .doorbell_pages
                .min(1024 - self.id.shared_doorbell_pages),
        );
        // A coalescing unit of one microsecond: the driver divides by these.
        put_le32(d, dev_identity::INTR_COAL_MULT, 1);
        put_le32(d, dev_identity::INTR_COAL_DIV, 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r32(b: &mut Bar0, at: usize) -> u32 {
        let mut x = [0u8; 4];
        b.read(at as u64, &mut x);
        u32::from_le_bytes(x)
    }

    fn w32(b: &mut Bar0, at: usize, v: u32) -> Vec<u16> {
        b.write(at as u64, &v.to_le_bytes(), &mut Dma::new(0));
        let mut fired = Vec::new();
        b.take_fired(&mut fired);
        fired
    }

    fn put(b: &mut Bar0, at: usize, bytes: &[u8]) {
        b.write(at as u64, bytes, &mut Dma::new(0));
    }

    // ionic_dev_info_regs: signature @0, version @4, asic_type @5,
    // asic_rev @6, fw_status @7, fw_heartbeat @8, fw_version[32] @12,
    // serial_num[32] @44.
    #[test]
    fn the_info_block_is_where_the_driver_reads_it() {
        let mut b = Bar0::new(Identity::default());
        assert_eq!(r32(&mut b, 0x00), 0x4445_5649, "'DEVI'");
        assert_eq!(r32(&mut b, 0x04), 0x0100_0001, "version 1, fw running");
        let h1 = r32(&mut b, 0x08);
        let h2 = r32(&mut b, 0x08);
        assert_ne!(h1, h2, "the heartbeat moves");
        let mut v = [0u8; 32];
        b.read(0x0c, &mut v);
        assert!(v.starts_with(b"ernic-"));
        assert_eq!(v[31], 0, "NUL-terminated");
        b.read(0x2c, &mut v);
        assert!(v.starts_with(b"ERNIC"));
        // Read-only: a write to the info block changes nothing.
        w32(&mut b, 0x00, 0);
        assert_eq!(r32(&mut b, 0x00), 0x4445_5649);
    }

    // ionic_dev_cmd_regs at 0x800: doorbell @0x800, done @0x804, cmd[64]
    // @0x808, comp[16] @0x848, data @0x888.
    #[test]
    fn identify_runs_on_the_doorbell_and_fills_the_data_window() {
        let mut b = Bar0::new(Identity::default());
        w32(&mut b, 0x804, 0);
        put(&mut b, 0x808, &[opcode::IDENTIFY, 2]);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x804), 1, "done");
        let comp = r32(&mut b, 0x848);
        assert_eq!(comp & 0xffff, 0x0200, "status 0, version 2");
        assert_eq!(r32(&mut b, 0x888 + 12), 32, "nintrs");
        assert_eq!(r32(&mut b, 0x888 + 8), 1, "nlifs");
        assert_eq!(r32(&mut b, 0x888) & 0xff, 2, "identity version");
        assert_eq!(r32(&mut b, 0x888 + 20), 1, "coalescing multiplier");
        assert_eq!(r32(&mut b, 0x888 + 24), 1, "coalescing divisor");
        // Version 0 is refused; an unknown opcode fails with EOPCODE.
        w32(&mut b, 0x804, 0);
        put(&mut b, 0x808, &[opcode::IDENTIFY, 0]);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xff, u32::from(status::EVERSION));
        put(&mut b, 0x808, &[199, 0]);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xff, u32::from(status::EOPCODE));
        assert_eq!(b.commands(), 3);
    }

    // union ionic_lif_identity: capabilities @0, eth @8 (max_frame_size
    // @26, config @136: mtu @156, mac @160, queue_count @176), rdma @392
    // (version @392, npts @396, aq_qtype @424 in 12-byte steps).
    #[test]
    fn lif_identify_reports_ethernet_and_rdma() {
        let mut b = Bar0::new(Identity::default());
        put(&mut b, 0x808, &[opcode::LIF_IDENTIFY, 0, 1]);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xffff, 0x0100, "status 0, version 1");
        let d = 0x888;
        assert_eq!(r32(&mut b, d) & 3, 3, "Ethernet and RDMA");
        assert_eq!(r32(&mut b, d + 26), 9234);
        assert_eq!(r32(&mut b, d + 156), 9216, "mtu");
        let mut mac = [0u8; 6];
        b.read((d + 160) as u64, &mut mac);
        assert_eq!(mac, Identity::default().mac);
        assert_eq!(r32(&mut b, d + 176 + 8), 4, "RX queues");
        // rdma: version 1, 11 QP opcodes, 19 admin opcodes.
        assert_eq!(r32(&mut b, d + 392) & 0xff_ffff, 0x13_0b_01, "rdma version");
        assert_eq!(
            r32(&mut b, d + 396),
            1 << 20,
            "page-table entries (the limit)"
        );
        for (i, qtype) in (5..=9).enumerate() {
            assert_eq!(r32(&mut b, d + 424 + 12 * i) & 0xff, qtype);
        }
        assert_eq!(r32(&mut b, d + 424 + 12 * 4 + 4), 32, "EQs");
        // The zeroed-completion commands succeed.
        for op in [opcode::INIT, opcode::PORT_IDENTIFY, opcode::SETATTR] {
            put(&mut b, 0x808, &[op, 0]);
            w32(&mut b, 0x800, 1);
            assert_eq!(r32(&mut b, 0x848), 0);
        }
    }

    // PORT_INIT and LIF_INIT write their blocks at info_pa (offset 8 of
    // the command): port config speed @0, state @8; status speed @260,
    // status @264, xcvr @316; LIF status link_status @266, speed @268.
    #[test]
    fn port_and_lif_init_write_link_up_into_guest_memory() {
        use crate::regs::{lif_info, port_info};
        use ernic_vfio::proto::{DMA_READ, DMA_WRITE};
        let mut dma = Dma::new(4);
        let ram = ernic_vfio::client::shared_memory(c"guest", 1 << 16).unwrap();
        dma.map(0x10_0000, 1 << 16, 0, DMA_READ | DMA_WRITE, Some(ram))
            .unwrap();
        let mut b = Bar0::new(Identity::default());
        let run = |b: &mut Bar0, dma: &mut Dma, op: u8, pa: u64| {
            let mut c = [0u8; 64];
            c[0] = op;
            c[2] = 3; // LIF_INIT's index
            c[8..16].copy_from_slice(&pa.to_le_bytes());
            b.write(0x808, &c, dma);
            b.write(0x800, &[1, 0, 0, 0], dma);
            let mut comp = [0u8; 16];
            b.read(0x848, &mut comp);
            comp
        };
        assert_eq!(run(&mut b, &mut dma, opcode::PORT_INIT, 0x10_1000)[0], 0);
        let mut p = vec![0u8; port_info::HEAD_LEN];
        dma.read(0x10_1000, &mut p).unwrap();
        assert_eq!(le32(&p, 0), 100_000, "config speed");
        assert_eq!(p[8], port_info::ADMIN_UP);
        assert_eq!(le32(&p, 260), 100_000, "status speed");
        assert_eq!(p[264], port_info::OPER_UP);
        assert_eq!(
            &p[316..320],
            &[3, 1, 1, 0],
            "copper QSFP 100G-CR4, SPROM read"
        );
        let comp = run(&mut b, &mut dma, opcode::LIF_INIT, 0x10_2000);
        assert_eq!((comp[0], comp[2]), (0, 3), "status, hw_index");
        let mut l = vec![0u8; lif_info::HEAD_LEN];
        dma.read(0x10_2000, &mut l).unwrap();
        assert_eq!(u16::from_le_bytes([l[266], l[267]]), 1, "link up");
        assert_eq!(le32(&l, 268), 100_000);
        assert_eq!(b.info_blocks(), (Some(0x10_1000), Some(0x10_2000)));
        // Outside guest memory: EFAULT, and nothing remembered.
        assert_eq!(
            run(&mut b, &mut dma, opcode::PORT_INIT, 0x9000_0000)[0],
            status::EFAULT
        );
        run(&mut b, &mut dma, opcode::LIF_RESET, 0);
        assert_eq!(b.info_blocks(), (Some(0x10_1000), None));
    }

    // struct ionic_q_init_cmd: type @4, index @8, intr_index @14, flags
    // @16, ring_size @19, ring_base @20, cq_ring_base @28; completion
    // hw_index @4, hw_type @8.
    #[test]
    fn q_init_records_queues_and_refuses_bad_ones() {
        use crate::regs::{q_init as q, qtype};
        let mut b = Bar0::new(Identity::default());
        let init = |b: &mut Bar0, t: u8, index: u32, ring_size: u8, flags: u16| {
            let mut c = [0u8; 64];
            c[0] = opcode::Q_INIT;
            c[q::TYPE] = t;
            c[q::INDEX..q::INDEX + 4].copy_from_slice(&index.to_le_bytes());
            c[q::INTR_INDEX..q::INTR_INDEX + 2].copy_from_slice(&2u16.to_le_bytes());
            c[q::FLAGS..q::FLAGS + 2].copy_from_slice(&flags.to_le_bytes());
            c[q::RING_SIZE] = ring_size;
            c[q::RING_BASE..q::RING_BASE + 8].copy_from_slice(&0x5000u64.to_le_bytes());
            c[q::CQ_RING_BASE..q::CQ_RING_BASE + 8].copy_from_slice(&0x6000u64.to_le_bytes());
            put(b, 0x808, &c);
            w32(b, 0x800, 1);
            let mut comp = [0u8; 16];
            b.read(0x848, &mut comp);
            comp
        };
        let comp = init(&mut b, qtype::ADMINQ, 0, 6, q::F_IRQ | q::F_ENA);
        assert_eq!((comp[0], le32(&comp, 4), comp[8]), (0, 0, qtype::ADMINQ));
        let e = b.queues()[0];
        assert_eq!(
            (
                e.ring_base,
                e.cq_ring_base,
                e.ring_size,
                e.intr_index,
                e.enabled
            ),
            (0x5000, 0x6000, 6, 2, true)
        );
        assert_eq!(init(&mut b, 7, 0, 6, 0)[0], status::EQTYPE, "unknown type");
        assert_eq!(
            init(&mut b, qtype::RXQ, 4, 6, 0)[0],
            status::EQID,
            "past the count"
        );
        assert_eq!(
            init(&mut b, qtype::TXQ, 0, 16, 0)[0],
            status::EINVAL,
            "2^16 deep"
        );
        assert_eq!(init(&mut b, qtype::RXQ, 3, 15, 0)[0], 0);
        assert_eq!(b.queues().len(), 2);
        // Q_CONTROL enables the RX queue; an unknown one is refused.
        let mut c = [0u8; 64];
        c[0] = opcode::Q_CONTROL;
        c[1] = qtype::RXQ;
        c[4] = 3;
        c[8] = 1;
        put(&mut b, 0x808, &c);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xff, 0);
        assert!(
            b.queues()
                .iter()
                .any(|e| e.qtype == qtype::RXQ && e.enabled)
        );
        c[4] = 2;
        put(&mut b, 0x808, &c);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xff, u32::from(status::EQID));
        // Q_IDENTIFY: 16-byte RX descriptors, version 0.
        let mut c = [0u8; 64];
        c[0] = opcode::Q_IDENTIFY;
        c[4] = qtype::RXQ;
        put(&mut b, 0x808, &c);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xff, 0);
        assert_eq!(r32(&mut b, 0x888 + 16) & 0xffff, 16, "desc_sz");
    }

    #[test]
    fn the_mac_is_set_and_read_back() {
        let mut b = Bar0::new(Identity::default());
        let mac = [0x02, 1, 2, 3, 4, 5];
        let mut c = [0u8; 64];
        c[0] = opcode::LIF_SETATTR;
        c[1] = 3;
        c[4..10].copy_from_slice(&mac);
        put(&mut b, 0x808, &c);
        w32(&mut b, 0x800, 1);
        c = [0u8; 64];
        c[0] = opcode::LIF_GETATTR;
        c[1] = 3;
        put(&mut b, 0x808, &c);
        w32(&mut b, 0x800, 1);
        let mut comp = [0u8; 16];
        b.read(0x848, &mut comp);
        assert_eq!((comp[0], &comp[4..10]), (0, &mac[..]));
        // Another attribute (MTU) succeeds without effect.
        c[1] = 2;
        put(&mut b, 0x808, &c);
        w32(&mut b, 0x800, 1);
        assert_eq!(r32(&mut b, 0x848) & 0xff, 0);
    }

    // struct ionic_intr: coal_init @0, mask @4, credits @8, mask_assert
    // @12, coal @16; 32 bytes per vector from 0x2000.
    #[test]
    fn a_masked_vector_latches_and_fires_on_unmask() {
        let mut b = Bar0::new(Identity::default());
        let v3 = 0x2000 + 3 * 32;
        assert!(b.raise(3), "unmasked: delivered");
        w32(&mut b, v3 + 4, 1);
        assert!(!b.raise(3), "masked: latched");
        assert_eq!(w32(&mut b, v3 + 4, 0), vec![3], "unmask delivers it");
        assert!(w32(&mut b, v3 + 4, 0).is_empty(), "once");
        // Mask on assert: delivering masks the vector; a credits write with
        // UNMASK releases the next one.
        w32(&mut b, v3 + 12, 1);
        assert!(b.raise(3));
        assert_eq!(r32(&mut b, v3 + 4), 1, "masked itself");
        assert!(!b.raise(3));
        assert_eq!(w32(&mut b, v3 + 8, intr::CRED_UNMASK | 1), vec![3]);
        assert_eq!(r32(&mut b, v3 + 4), 1, "and masked itself again");
        assert!(!b.raise(99), "no such vector");
        // Reset clears masks and latches.
        b.reset();
        assert_eq!(r32(&mut b, v3 + 4), 0);
    }

    proptest::proptest! {
        // Whatever the guest writes wherever in BAR 0 (commands included),
        // the device answers and reads stay inside the BAR.
        #[test]
        fn any_access_inside_bar0_is_served(
            offset in 0u64..regs::BAR0_SIZE,
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..80),
        ) {
            let mut b = Bar0::new(Identity::default());
            let len = data.len().min((regs::BAR0_SIZE - offset) as usize);
            let mut dma = Dma::new(0);
            b.write(offset, &data[..len], &mut dma);
            b.write(cmd::DOORBELL as u64, &[1, 0, 0, 0], &mut dma);
            let mut back = vec![0u8; len];
            b.read(offset, &mut back);
            proptest::prop_assert_eq!(r32(&mut b, 0), info::SIGNATURE_VALUE);
        }
    }
}
