//! The Ethernet data queues: transmit descriptors gathered from guest
//! memory and sent out (to the TAP), received frames steered by a fixed
//! flow hash to an enabled receive queue and written into the next buffer
//! the guest posted, completions with the color bit, interrupts, and the
//! LIF statistics the driver reads for `ip -s link` kept in guest memory.
//!
//! Layouts are `ionic_if.h`'s: `ionic_txq_desc` (16 bytes: a 64-bit
//! command word packing opcode, flags, SG count and address, then the
//! length), `ionic_txq_sg_elem`, `ionic_txq_comp`, `ionic_rxq_desc`,
//! `ionic_rxq_comp`, and `ionic_lif_stats`.

use ernic_vfio::dma::Dma;

use crate::bar0::Bar0;
use crate::bytes::{le16, le64};
use crate::regs::{q_init, qtype};
use ernic_core::inject::Event;

/// The device-kept counters of `struct ionic_lif_stats` it has events for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LifStats {
    /// Received bytes and frames: unicast, multicast, broadcast.
    pub rx: [(u64, u64); 3],
    /// Sent bytes and frames: unicast, multicast, broadcast.
    pub tx: [(u64, u64); 3],
    /// Received frames lost (an injected `rx_drop`), bytes and frames by
    /// cast: `rx_*_drop_bytes`, `rx_*_drop_packets`.
    pub rx_drop: [(u64, u64); 3],
    /// Transmitted frames completed but never sent (an injected
    /// `tx_drop`): `tx_*_drop_bytes`, `tx_*_drop_packets`.
    pub tx_drop: [(u64, u64); 3],
    /// Frames dropped because no receive queue was enabled.
    pub rx_queue_disabled: u64,
    /// Frames dropped because the receive queue had no buffer posted.
    pub rx_queue_empty: u64,
    /// Frames dropped because the posted buffer was too small.
    pub rx_desc_data_error: u64,
    /// Transmit descriptors whose memory could not be read.
    pub tx_desc_fetch_error: u64,
}

// struct ionic_lif_stats offsets (bytes from the stats block).
const ST_RX: usize = 0; // (bytes, packets) x3 from here
const ST_RX_DROP: usize = 64;
const ST_TX: usize = 128;
const ST_TX_DROP: usize = 192;
const ST_RX_QUEUE_DISABLED: usize = 256;
const ST_RX_QUEUE_EMPTY: usize = 264;
const ST_RX_DESC_DATA_ERROR: usize = 288;
const ST_TX_DESC_FETCH_ERROR: usize = 336;
/// Bytes of the part of the stats block this device writes.
const ST_LEN: usize = 344;

// struct ionic_port_stats offsets (bytes from the port info's stats).
const PS_RX_OK: usize = 0; // frames_rx_ok, frames_rx_all
const PS_OCTETS_RX: usize = 32; // octets_rx_ok, octets_rx_all
const PS_RX_CASTS: usize = 48; // frames_rx_unicast, _multicast, _broadcast
const PS_TX_OK: usize = 256; // frames_tx_ok, frames_tx_all
const PS_OCTETS_TX: usize = 280; // octets_tx_ok, octets_tx_total
const PS_TX_CASTS: usize = 296; // frames_tx_unicast, _multicast, _broadcast
/// Bytes of the part of the port statistics this device writes.
const PS_LEN: usize = 320;

/// Unicast, multicast or broadcast, by the destination MAC.
fn cast(frame: &[u8]) -> usize {
    match frame.get(..6) {
        Some([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]) => 2,
        Some(d) if d[0] & 1 != 0 => 1,
        _ => 0,
    }
}

/// A fixed hash of the frame's flow (MACs, ethertype, and for IPv4 the
/// addresses, protocol and ports): one flow always lands on one queue.
pub fn flow_hash(frame: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h ^= u32::from(x);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    eat(frame.get(..14).unwrap_or(frame));
    if frame.get(12..14) == Some(&[0x08, 0x00]) {
        let ihl = frame.get(14).map_or(20, |b| usize::from(b & 0xf) * 4);
        eat(frame.get(23..24).unwrap_or(&[]));
        eat(frame.get(26..34).unwrap_or(&[]));
        let l4 = 14 + ihl;
        if matches!(frame.get(23), Some(6 | 17)) {
            eat(frame.get(l4..l4 + 4).unwrap_or(&[]));
        }
    }
    h
}

/// `enum ionic_pkt_type` of a frame.
fn pkt_type(frame: &[u8]) -> u8 {
    match (frame.get(12..14), frame.get(23)) {
        (Some([0x08, 0x00]), Some(6)) => 0x03,
        (Some([0x08, 0x00]), Some(17)) => 0x05,
        (Some([0x08, 0x00]), _) => 0x01,
        (Some([0x86, 0xdd]), _) => 0x08,
        _ => 0x00,
    }
}

/// Writes the 16-byte completion `comp` of descriptor `head` into the
/// completion ring at `cq_base`, with its comp_index and the color bit
/// (bit 7 of byte 15, kept with whatever else byte 15 holds), color byte
/// last: the driver polls it. Answers the next head and color (which flips
/// when the ring wraps).
pub(crate) fn complete(
    dma: &mut Dma,
    cq_base: u64,
    head: u16,
    mask: u16,
    color: bool,
    comp: &mut [u8; 16],
) -> (u16, bool) {
    comp[2..4].copy_from_slice(&head.to_le_bytes());
    comp[15] = (comp[15] & 0x7f) | if color { 0x80 } else { 0 };
    let slot = cq_base.wrapping_add(u64::from(head) * 16);
    let _ = dma.write(slot, &comp[..15]);
    let _ = dma.write(slot + 15, &comp[15..]);
    let next = (head + 1) & mask;
    (next, if next == 0 { !color } else { color })
}

const ADDR_MASK: u64 = (1 << 52) - 1;
/// The largest frame gathered or delivered.
pub const MAX_FRAME: usize = 9216 + 18;

impl Bar0 {
    fn find_queue(&self, t: u8, qid: u32) -> Option<usize> {
        self.eth
            .queues
            .iter()
            .position(|e| e.qtype == t && e.index == qid)
    }

    /// Writes the port statistics (`ethtool -S`) from the same counters.
    fn write_port_stats(&self, dma: &mut Dma) {
        let Some(pa) = self.eth.port_info else { return };
        let s = &self.eth.stats;
        let (rx_frames, rx_bytes) = s.rx.iter().fold((0, 0), |a, r| (a.0 + r.1, a.1 + r.0));
        let (tx_frames, tx_bytes) = s.tx.iter().fold((0, 0), |a, t| (a.0 + t.1, a.1 + t.0));
        let mut b = [0u8; PS_LEN];
        let mut put = |at: usize, v: u64| b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        for (at, v) in [
            (PS_RX_OK, rx_frames),
            (PS_RX_OK + 8, rx_frames),
            (PS_OCTETS_RX, rx_bytes),
            (PS_OCTETS_RX + 8, rx_bytes),
            (PS_TX_OK, tx_frames),
            (PS_TX_OK + 8, tx_frames),
            (PS_OCTETS_TX, tx_bytes),
            (PS_OCTETS_TX + 8, tx_bytes),
        ] {
            put(at, v);
        }
        for i in 0..3 {
            put(PS_RX_CASTS + 8 * i, s.rx[i].1);
            put(PS_TX_CASTS + 8 * i, s.tx[i].1);
        }
        let _ = dma.write(pa + crate::regs::port_info::STATS as u64, &b);
    }

    /// Writes the counters into the LIF info block's statistics (and the
    /// port's).
    fn write_stats(&self, dma: &mut Dma) {
        self.write_port_stats(dma);
        let Some(pa) = self.eth.lif_info else { return };
        let mut b = [0u8; ST_LEN];
        let s = &self.eth.stats;
        for (base, v) in [
            (ST_RX, &s.rx),
            (ST_RX_DROP, &s.rx_drop),
            (ST_TX, &s.tx),
            (ST_TX_DROP, &s.tx_drop),
        ] {
            for (i, (bytes, frames)) in v.iter().enumerate() {
                let at = base + 16 * i;
                b[at..at + 8].copy_from_slice(&bytes.to_le_bytes());
                b[at + 8..at + 16].copy_from_slice(&frames.to_le_bytes());
            }
        }
        for (at, v) in [
            (ST_RX_QUEUE_DISABLED, s.rx_queue_disabled),
            (ST_RX_QUEUE_EMPTY, s.rx_queue_empty),
            (ST_RX_DESC_DATA_ERROR, s.rx_desc_data_error),
            (ST_TX_DESC_FETCH_ERROR, s.tx_desc_fetch_error),
        ] {
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        let _ = dma.write(pa + crate::regs::lif_info::STATS as u64, &b);
    }

    /// A transmit queue's doorbell: sends every descriptor up to
    /// `p_index` through `out` (frame bytes gathered from guest memory),
    /// completes each, and answers the vector to raise.
    pub fn tx_doorbell(
        &mut self,
        qid: u32,
        p_index: u16,
        dma: &mut Dma,
        out: &mut dyn FnMut(&[u8]),
    ) -> Option<u16> {
        let at = self.find_queue(qtype::TXQ, qid)?;
        let q = self.eth.queues[at];
        if !q.enabled {
            return None;
        }
        let depth = 1u32 << q.ring_size;
        let mask = (depth - 1) as u16;
        let (mut head, mut color) = (q.head & mask, q.color);
        let target = p_index & mask;
        let mut frame = std::mem::take(&mut self.eth.frame);
        let mut ran = 0;
        while head != target && ran < depth {
            let mut d = [0u8; 16];
            let ok = dma.read(q.ring_base + u64::from(head) * 16, &mut d).is_ok()
                && self.gather(&q, head, &d, dma, &mut frame);
            // An injected `tx_drop`: completed to the guest, never sent.
            let dropped = ok && self.inject(Event::TxDrop);
            if ok {
                let k = cast(&frame);
                let count = if dropped {
                    &mut self.eth.stats.tx_drop[k]
                } else {
                    out(&frame);
                    &mut self.eth.stats.tx[k]
                };
                count.0 += frame.len() as u64;
                count.1 += 1;
            } else {
                self.eth.stats.tx_desc_fetch_error += 1;
            }
            let mut comp = [0u8; 16];
            (head, color) = complete(dma, q.cq_ring_base, head, mask, color, &mut comp);
            ran += 1;
        }
        self.eth.frame = frame;
        self.eth.queues[at].head = head;
        self.eth.queues[at].color = color;
        if ran > 0 {
            self.write_stats(dma);
        }
        (ran > 0 && q.flags & q_init::F_IRQ != 0 && self.raise(q.intr_index))
            .then_some(q.intr_index)
    }

    /// The frame of transmit descriptor `d` (slot `head`) into `frame`:
    /// its own buffer, then its scatter-gather elements.
    fn gather(
        &self,
        q: &crate::bar0::EthQueue,
        head: u16,
        d: &[u8; 16],
        dma: &mut Dma,
        frame: &mut Vec<u8>,
    ) -> bool {
        let cmd = le64(d, 0);
        let nsge = ((cmd >> 8) & 0xf) as usize;
        let addr = (cmd >> 12) & ADDR_MASK;
        let len = usize::from(le16(d, 8));
        let mut parts = [(0u64, 0usize); 9];
        parts[0] = (addr, len);
        if nsge > 0 {
            if nsge > 8 || q.sg_ring_base == 0 {
                return false;
            }
            let mut sg = [0u8; 8 * 16];
            let sgp = q.sg_ring_base + u64::from(head) * 128;
            if dma.read(sgp, &mut sg[..16 * nsge]).is_err() {
                return false;
            }
            for i in 0..nsge {
                let e = &sg[16 * i..16 * i + 16];
                parts[1 + i] = (le64(e, 0), usize::from(le16(e, 8)));
            }
        }
        let total: usize = parts[..=nsge].iter().map(|p| p.1).sum();
        if total == 0 || total > MAX_FRAME {
            return false;
        }
        frame.clear();
        frame.resize(total, 0);
        let mut off = 0;
        for &(a, l) in &parts[..=nsge] {
            if dma.read(a, &mut frame[off..off + l]).is_err() {
                return false;
            }
            off += l;
        }
        true
    }

    /// Counts one `event` against the armed faults; whether one fired.
    #[inline]
    fn inject(&self, event: Event) -> bool {
        self.injector
            .as_ref()
            .is_some_and(|i| i.check(event).is_some())
    }

    /// A receive queue's doorbell: the driver has posted buffers up to
    /// `p_index`.
    pub fn rx_doorbell(&mut self, qid: u32, p_index: u16) {
        if let Some(at) = self.find_queue(qtype::RXQ, qid) {
            let mask = ((1u32 << self.eth.queues[at].ring_size) - 1) as u16;
            self.eth.queues[at].posted = p_index & mask;
        }
    }

    /// Whether the receive queue `frame` steers to has a buffer posted
    /// (what an in-process endpoint's frame waits for).
    pub fn rx_room(&self, frame: &[u8]) -> bool {
        let enabled = || {
            self.eth
                .queues
                .iter()
                .filter(|e| e.qtype == qtype::RXQ && e.enabled)
        };
        let n = enabled().count();
        if n == 0 {
            return false;
        }
        let Some(q) = enabled().nth(flow_hash(frame) as usize % n) else {
            return false;
        };
        let mask = ((1u32 << q.ring_size) - 1) as u16;
        q.head & mask != q.posted
    }

    /// A frame from the wire: steered to an enabled receive queue and
    /// written into its next posted buffer; dropped (and counted) when no
    /// queue is enabled, no buffer is posted, or the buffer is too small.
    /// Answers the vector to raise.
    pub fn rx_frame(&mut self, frame: &[u8], dma: &mut Dma) -> Option<u16> {
        // Injected faults: `rx_drop` loses the frame; `rx_no_buffer` drops
        // it as if no buffer were posted, counted as the queue-empty drop.
        if self.inject(Event::RxDrop) {
            let k = cast(frame);
            self.eth.stats.rx_drop[k].0 += frame.len() as u64;
            self.eth.stats.rx_drop[k].1 += 1;
            self.write_stats(dma);
            return None;
        }
        if self.inject(Event::RxNoBuffer) {
            self.eth.stats.rx_queue_empty += 1;
            self.write_stats(dma);
            return None;
        }
        let enabled: usize = self
            .eth
            .queues
            .iter()
            .filter(|e| e.qtype == qtype::RXQ && e.enabled)
            .count();
        if enabled == 0 {
            self.eth.stats.rx_queue_disabled += 1;
            self.write_stats(dma);
            return None;
        }
        let pick = flow_hash(frame) as usize % enabled;
        let at = self
            .eth
            .queues
            .iter()
            .enumerate()
            .filter(|(_, e)| e.qtype == qtype::RXQ && e.enabled)
            .nth(pick)
            .map(|(i, _)| i)
            .expect("counted");
        let q = self.eth.queues[at];
        let mask = ((1u32 << q.ring_size) - 1) as u16;
        let head = q.head & mask;
        if head == q.posted {
            self.eth.stats.rx_queue_empty += 1;
            self.write_stats(dma);
            return None;
        }
        let mut d = [0u8; 16];
        if dma
            .read(q.ring_base + u64::from(head) * 16, &mut d)
            .is_err()
        {
            self.eth.stats.rx_desc_data_error += 1;
            self.write_stats(dma);
            return None;
        }
        let room = usize::from(le16(&d, 6));
        let addr = le64(&d, 8);
        if frame.len() > room || dma.write(addr, frame).is_err() {
            self.eth.stats.rx_desc_data_error += 1;
            self.write_stats(dma);
            return None;
        }
        let mut comp = [0u8; 16];
        comp[4..8].copy_from_slice(&flow_hash(frame).to_le_bytes());
        comp[12..14].copy_from_slice(&(frame.len() as u16).to_le_bytes());
        comp[15] = pkt_type(frame);
        let (next, color) = complete(dma, q.cq_ring_base, head, mask, q.color, &mut comp);
        self.eth.queues[at].head = next;
        self.eth.queues[at].color = color;
        let k = cast(frame);
        self.eth.stats.rx[k].0 += frame.len() as u64;
        self.eth.stats.rx[k].1 += 1;
        self.write_stats(dma);
        (q.flags & q_init::F_IRQ != 0 && self.raise(q.intr_index)).then_some(q.intr_index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bar0::Identity;
    use crate::regs::{lif_info, opcode, port_info};
    use ernic_vfio::proto::{DMA_READ, DMA_WRITE};

    const G: u64 = 0x100_0000;

    /// A device with port and LIF info blocks in guest memory and an RX
    /// queue of 4 buffers enabled (descriptors at G+0x1000, completions at
    /// G+0x2000, buffers at G+0x8000 + 2 KiB each).
    fn with_rx_queue() -> (Bar0, Dma) {
        let mut dma = Dma::new(4);
        let ram = ernic_vfio::client::shared_memory(c"guest", 1 << 20).unwrap();
        dma.map(G, 1 << 20, 0, DMA_READ | DMA_WRITE, Some(ram))
            .unwrap();
        let mut b = Bar0::new(Identity::default());
        let mut run = |b: &mut Bar0, c: &[u8; 64]| {
            b.write(0x808, c, &mut dma);
            b.write(0x800, &[1, 0, 0, 0], &mut dma);
        };
        let mut c = [0u8; 64];
        c[0] = opcode::PORT_INIT;
        c[8..16].copy_from_slice(&(G + 0x10000).to_le_bytes());
        run(&mut b, &c);
        c[0] = opcode::LIF_INIT;
        c[8..16].copy_from_slice(&(G + 0x20000).to_le_bytes());
        run(&mut b, &c);
        let mut q = [0u8; 64];
        q[0] = opcode::Q_INIT;
        q[q_init::TYPE] = qtype::RXQ;
        q[q_init::FLAGS] = (q_init::F_IRQ | q_init::F_ENA) as u8;
        q[q_init::INTR_INDEX] = 3;
        q[q_init::RING_SIZE] = 2;
        q[q_init::RING_BASE..q_init::RING_BASE + 8].copy_from_slice(&(G + 0x1000).to_le_bytes());
        q[q_init::CQ_RING_BASE..q_init::CQ_RING_BASE + 8]
            .copy_from_slice(&(G + 0x2000).to_le_bytes());
        run(&mut b, &q);
        for i in 0..4u64 {
            let mut d = [0u8; 16];
            d[6..8].copy_from_slice(&2048u16.to_le_bytes());
            d[8..16].copy_from_slice(&(G + 0x8000 + 2048 * i).to_le_bytes());
            dma.write(G + 0x1000 + 16 * i, &d).unwrap();
        }
        (b, dma)
    }

    fn stat(dma: &Dma, at: u64) -> u64 {
        let mut v = [0u8; 8];
        dma.read(at, &mut v).unwrap();
        u64::from_le_bytes(v)
    }

    // ionic_rxq_comp: comp_index @2, len @12, pkt_type_color @15; lif
    // stats rx_ucast_bytes/packets @0/@8, rx_queue_empty @264; port stats
    // frames_rx_ok @0, octets_rx_ok @32.
    #[test]
    fn received_frames_fill_posted_buffers_and_count() {
        let (mut b, mut dma) = with_rx_queue();
        let f = frame([2, 0, 0x45, 0x52, 0x4e, 1], 17, 7);
        assert_eq!(
            b.rx_frame(&f, &mut dma),
            None,
            "nothing posted yet: dropped"
        );
        b.rx_doorbell(0, 3);
        assert_eq!(b.rx_frame(&f, &mut dma), Some(3), "delivered, vector 3");
        let mut got = vec![0u8; f.len()];
        dma.read(G + 0x8000, &mut got).unwrap();
        assert_eq!(got, f);
        let mut comp = [0u8; 16];
        dma.read(G + 0x2000, &mut comp).unwrap();
        assert_eq!(u16::from_le_bytes([comp[12], comp[13]]) as usize, f.len());
        assert_eq!(comp[15], 0x80 | 0x05, "color and IPv4/UDP");
        let stats = G + 0x20000 + lif_info::STATS as u64;
        assert_eq!((stat(&dma, stats), stat(&dma, stats + 8)), (60, 1));
        assert_eq!(
            stat(&dma, stats + 264),
            1,
            "one dropped for want of a buffer"
        );
        let port = G + 0x10000 + port_info::STATS as u64;
        assert_eq!((stat(&dma, port), stat(&dma, port + 32)), (1, 60));
        // Too big for the buffer: dropped and counted, nothing consumed.
        assert_eq!(b.rx_frame(&vec![0u8; 4000], &mut dma), None);
        assert_eq!(stat(&dma, stats + 288), 1);
        assert_eq!(b.rx_frame(&f, &mut dma), Some(3));
        dma.read(G + 0x2010, &mut comp).unwrap();
        assert_eq!(u16::from_le_bytes([comp[2], comp[3]]), 1, "the next slot");
    }

    fn frame(dst: [u8; 6], proto: u8, sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = proto;
        f[26..30].copy_from_slice(&[192, 0, 2, 1]);
        f[30..34].copy_from_slice(&[192, 0, 2, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f
    }

    #[test]
    fn one_flow_hashes_alike_and_casts_are_told_apart() {
        let a = frame([2, 0, 0, 0, 0, 1], 17, 1000);
        let mut a2 = a.clone();
        a2[18] = 0x55; // the IP id differs between packets of a flow
        assert_eq!(flow_hash(&a), flow_hash(&a2));
        assert_ne!(
            flow_hash(&a),
            flow_hash(&frame([2, 0, 0, 0, 0, 1], 17, 1001))
        );
        assert_eq!(cast(&a), 0);
        assert_eq!(cast(&frame([0xff; 6], 17, 1)), 2);
        assert_eq!(cast(&frame([0x01, 0, 0x5e, 0, 0, 1], 17, 1)), 1);
        assert_eq!(pkt_type(&a), 0x05);
        assert_eq!(flow_hash(&[]), flow_hash(&[]), "short frames hash too");
    }
}
