//! The BAR 0 register file: what the guest's driver reads and writes, the
//! device commands run synchronously on the doorbell write, and the
//! per-vector interrupt control (mask, credits with unmask, mask on
//! assert; an interrupt raised while masked is latched and delivered on
//! unmask).
//!
//! The register window is kept as the bytes the driver sees; writes land
//! only where the driver may write (command, side data, done, interrupt
//! control, the MSI-X area), and their effects are applied after the bytes.
//!
//! The Ethernet side is not hidden in here: an [`EthLif`] (`eth_lif.rs`)
//! owns the Ethernet queues, the info blocks and the LIF statistics, and
//! BAR 0 holds one. The rest, one thing per file: the device's
//! [`Identity`] (`identity.rs`), the device commands (`commands.rs`), the
//! Ethernet admin queue (`eth_adminq.rs`), the P4 engine's commands
//! 70-72 (`p4_commands.rs`); this file keeps the register
//! window and interrupt control.

mod commands;
mod eth_adminq;
mod eth_lif;
mod identity;
mod p4_commands;

pub use eth_lif::{EthLif, EthQueue};
pub use identity::Identity;

use ernic_vfio::dma::Dma;

use crate::bytes::{le32, put_le32};
use crate::regs::{self, cmd, info, intr};

/// BAR 0.
#[derive(Debug)]
pub struct Bar0 {
    bytes: Vec<u8>,
    pending: Vec<bool>,
    heartbeat: u32,
    id: Identity,
    commands: u64,
    /// The Ethernet LIF: its queues, info blocks and statistics.
    pub(crate) eth: EthLif,
    pub(crate) rdma: crate::bootstrap::Bootstrap,
    // Vectors raised by events outside a queue's own doorbell, for the
    // function to signal (see `take_fired`).
    to_fire: Vec<u16>,
    /// Scratch for `write`: whether each vector it touches was masked.
    masked_before: Vec<bool>,
    /// Device commands 70-72 and the engine they reach.
    p4: p4_commands::P4Commands,
    /// Faults armed on the Ethernet events (`rx_drop`, `rx_no_buffer`,
    /// `tx_drop`).
    pub(crate) injector: Option<std::sync::Arc<ernic_core::inject::Injector>>,
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
        let eth = EthLif::new(id.eth_queues, id.vectors);
        let mut b = Bar0 {
            bytes: vec![0; regs::BAR0_SIZE as usize],
            pending: vec![false; id.vectors as usize],
            heartbeat: 0,
            id,
            commands: 0,
            eth,
            rdma: crate::bootstrap::Bootstrap::default(),
            to_fire: Vec::new(),
            masked_before: Vec::new(),
            p4: p4_commands::P4Commands::default(),
            injector: None,
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
        self.eth.reset();
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
        self.eth.stats()
    }

    /// The Ethernet queues Q_INIT has set up.
    pub fn queues(&self) -> &[EthQueue] {
        self.eth.queues()
    }

    /// Where the driver asked for the port and LIF info blocks.
    pub fn info_blocks(&self) -> (Option<u64>, Option<u64>) {
        (self.eth.port_info, self.eth.lif_info)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regs::{opcode, status};

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
