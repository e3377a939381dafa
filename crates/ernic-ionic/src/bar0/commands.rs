//! The device commands BAR 0's doorbell runs (`fw::dev_cmd`): the
//! dispatch, and those with state outside the Ethernet LIF — IDENTIFY,
//! LIF_IDENTIFY, PORT_INIT, LIF_INIT, the LIF attributes, Q_IDENTIFY and
//! the RDMA bootstrap (and 70-72, in `p4_commands.rs`).

use ernic_vfio::dma::Dma;

use crate::bytes::put_le32;
use crate::fw::dev_cmd;
use crate::regs::{cmd, dev_identity, opcode, status};

use super::Bar0;

impl Bar0 {
    /// Runs the command in the command registers and sets `done`.
    pub(super) fn run_command(&mut self, dma: &mut Dma) {
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
            opcode::Q_INIT => self.eth.q_init(&c, &mut comp),
            opcode::Q_CONTROL => self.eth.q_control(&c),
            // The RDMA bootstrap runs from BAR 0 as from the admin queue.
            50..=53 => self.rdma_bootstrap(&c),
            // The P4 engine's, as far as the guest's scope allows (else
            // answered as unknown opcodes).
            70..=72 => self.p4_command(&c, &mut comp, dma),
            opcode::PORT_RESET => {
                self.eth.port_info = None;
                status::SUCCESS
            }
            opcode::LIF_RESET => {
                self.eth.lif_info = None;
                self.eth.queues.clear();
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
    pub(super) fn rdma_bootstrap(&mut self, c: &[u8; 64]) -> u8 {
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
    pub(super) fn q_identify(&mut self, c: &[u8; 64], comp: &mut [u8; 16]) -> u8 {
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

    /// PORT_INIT: the port info block at `pa`, giving the link speed, an
    /// up port and a copper QSFP transceiver.
    pub(super) fn port_init(&mut self, pa: u64, dma: &mut Dma) -> u8 {
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
                self.eth.port_info = Some(pa);
                status::SUCCESS
            }
            Err(_) => status::EFAULT,
        }
    }

    /// LIF_INIT: link up at the port's speed in the LIF status block at
    /// `pa` (so the netdev gets a carrier).
    pub(super) fn lif_init(&mut self, pa: u64, dma: &mut Dma) -> u8 {
        use crate::regs::lif_info as l;
        let mut b = [0u8; l::HEAD_LEN];
        b[l::STATUS_PORT_NUM] = 1;
        b[l::STATUS_LINK_STATUS..l::STATUS_LINK_STATUS + 2]
            .copy_from_slice(&u16::from(crate::regs::port_info::OPER_UP).to_le_bytes());
        put_le32(&mut b, l::STATUS_LINK_SPEED, self.id.speed);
        match dma.write(pa, &b) {
            Ok(()) => {
                self.eth.lif_info = Some(pa);
                status::SUCCESS
            }
            Err(_) => status::EFAULT,
        }
    }

    /// `union ionic_lif_identity` into the data window: Ethernet and RDMA
    /// capability, the queue counts, frame size and MAC, and the RDMA
    /// section's queue types (5-9: AQ, SQ, RQ, CQ, EQ) and limits.
    pub(super) fn lif_identify(&mut self) {
        use crate::regs::lif_identity as l;
        let id = self.id.clone();
        let d = &mut self.bytes[cmd::DATA..cmd::DATA + cmd::DATA_LEN];
        d.fill(0);
        let p4 = if self.p4.advertised() {
            crate::p4hook::LIF_CAP_P4
        } else {
            0
        };
        d[l::CAPABILITIES..l::CAPABILITIES + 8]
            .copy_from_slice(&(l::CAP_ETH | l::CAP_RDMA | p4).to_le_bytes());
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
    pub(super) fn identify(&mut self, ver: u8) {
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
