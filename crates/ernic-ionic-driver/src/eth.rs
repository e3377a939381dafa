//! The Ethernet side of the LIF, as Linux's `ionic` brings it up: PORT_INIT
//! and LIF_INIT with their info blocks, the Ethernet admin queue through
//! BAR 0 (Q_INIT by device command), then one TX and one RX queue by
//! Q_INIT commands posted on that admin queue. Frames go out through
//! [`Driver::send_frame`] (copied into the TX buffer of the descriptor's
//! slot, doorbell, completion reaped) and come in through
//! [`Driver::recv_frame`] (completions read by their color, the frame
//! copied out, the buffer posted again).
//!
//! Layouts are `ionic_if.h`'s, which `ernic_ionic::eth` decodes:
//! `ionic_txq_desc` (a 64-bit command word of opcode, flags, SG count and
//! address, then the length), `ionic_rxq_desc` (length at 6, address at 8),
//! and their 16-byte completions (`comp_index` at 2, the color in bit 7 of
//! byte 15; an RX completion's length at 12). No SG lists and no offloads:
//! each frame is one buffer of at most [`FRAME_BUF`] bytes. The doorbells
//! are BAR 2 writes to page 0, at `qtype * 8`, as the kernel's are.
//!
//! Every wait is bounded ([`ADMIN_TIMEOUT`](crate::ADMIN_TIMEOUT)); what
//! the device writes (lengths, indices) is checked before it sizes a copy.

use std::time::Instant;

use ernic_ionic::fw::dev_cmd;
use ernic_ionic::regs::{opcode, q_init, qtype};

use crate::{ADMIN_TIMEOUT, Buf, Driver, Error, Ring};

/// Bytes of each TX and RX buffer: the largest frame sent or received
/// (a 1500-byte MTU's frame, 1514 bytes, fits).
pub const FRAME_BUF: usize = 2048;
/// log2 of the TX and RX rings' depth.
const DEPTH_LOG2: u8 = 6;
/// log2 of the Ethernet admin queue's depth.
const ADMINQ_LOG2: u8 = 4;

/// `ionic_txq_desc`, `ionic_rxq_desc` and their completions.
mod layout {
    /// Bytes of a TX or RX descriptor, and of a completion.
    pub const DESC_LEN: usize = 16;
    /// log2 of [`DESC_LEN`].
    pub const DESC_LOG2: u8 = 4;
    /// Bytes of an Ethernet admin command.
    pub const ADMIN_LOG2: u8 = 6;
    /// `ionic_txq_desc.cmd`: the address's shift (`IONIC_TXQ_DESC_ADDR_SHIFT`).
    pub const TX_ADDR_SHIFT: u32 = 12;
    /// `IONIC_ADDR_LEN`: bits of a descriptor's address.
    pub const ADDR_BITS: u32 = 52;
    /// `ionic_txq_desc.len`.
    pub const TX_LEN: usize = 8;
    /// `ionic_rxq_desc.len`.
    pub const RX_LEN: usize = 6;
    /// `ionic_rxq_desc.addr`.
    pub const RX_ADDR: usize = 8;
    /// A completion's `status`.
    pub const COMP_STATUS: usize = 0;
    /// A completion's `comp_index`.
    pub const COMP_INDEX: usize = 2;
    /// `ionic_rxq_comp.len`.
    pub const RX_COMP_LEN: usize = 12;
    /// The byte holding the color (`IONIC_COMP_COLOR_MASK`, bit 7).
    pub const COLOR_BYTE: usize = 15;
    /// `IONIC_COMP_COLOR_MASK`.
    pub const COLOR: u8 = 0x80;
    /// `struct ionic_lif_info.stats`: after the 256-byte config union and
    /// the 64-byte `struct ionic_lif_status`.
    pub const LIF_INFO_STATS: u64 = 256 + 64;
    /// `struct ionic_lif_stats`: `rx_ucast_bytes`, the first of three
    /// (bytes, packets) pairs (unicast, multicast, broadcast).
    pub const ST_RX: usize = 0;
    /// `rx_ucast_drop_bytes`, likewise.
    pub const ST_RX_DROP: usize = 64;
    /// `tx_ucast_bytes`, likewise.
    pub const ST_TX: usize = 128;
    /// `tx_ucast_drop_bytes`, likewise.
    pub const ST_TX_DROP: usize = 192;
    /// `rx_queue_disabled`.
    pub const ST_RX_QUEUE_DISABLED: usize = 256;
    /// `rx_queue_empty`.
    pub const ST_RX_QUEUE_EMPTY: usize = 264;
    /// `rx_desc_data_error`.
    pub const ST_RX_DESC_DATA_ERROR: usize = 288;
    /// `tx_desc_fetch_error`.
    pub const ST_TX_DESC_FETCH_ERROR: usize = 336;
    /// Bytes of `struct ionic_lif_stats` read (to `tx_desc_fetch_error`).
    pub const ST_READ: usize = 344;
}

/// Counters of `struct ionic_lif_stats`, as the device keeps them in the
/// LIF info block (what Linux's `ionic` shows in `ethtool -S`). Each
/// array is (bytes, packets) for unicast, multicast, broadcast.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LifStats {
    /// Frames received into a buffer.
    pub rx: [(u64, u64); 3],
    /// Frames lost on the way in (`rx_*_drop_*`).
    pub rx_drop: [(u64, u64); 3],
    /// Frames sent.
    pub tx: [(u64, u64); 3],
    /// Frames completed but not sent (`tx_*_drop_*`).
    pub tx_drop: [(u64, u64); 3],
    /// Frames dropped with no receive queue enabled.
    pub rx_queue_disabled: u64,
    /// Frames dropped with no receive buffer posted.
    pub rx_queue_empty: u64,
    /// Frames dropped for a bad receive descriptor.
    pub rx_desc_data_error: u64,
    /// Transmit descriptors whose memory could not be read.
    pub tx_desc_fetch_error: u64,
}

impl LifStats {
    /// Bytes of `struct ionic_lif_stats` decoded (to `tx_desc_fetch_error`).
    pub const LEN: usize = layout::ST_READ;

    /// Decodes the counters from the start of `b`, the device's bytes;
    /// `None` when `b` is shorter than [`LifStats::LEN`].
    pub fn from_bytes(b: &[u8]) -> Option<LifStats> {
        b.get(..Self::LEN)?.try_into().ok().map(Self::parse)
    }

    /// Decodes the first [`layout::ST_READ`] bytes of `struct
    /// ionic_lif_stats`.
    fn parse(b: &[u8; layout::ST_READ]) -> LifStats {
        let at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let pairs = |base: usize| [0, 1, 2].map(|i| (at(base + 16 * i), at(base + 16 * i + 8)));
        LifStats {
            rx: pairs(layout::ST_RX),
            rx_drop: pairs(layout::ST_RX_DROP),
            tx: pairs(layout::ST_TX),
            tx_drop: pairs(layout::ST_TX_DROP),
            rx_queue_disabled: at(layout::ST_RX_QUEUE_DISABLED),
            rx_queue_empty: at(layout::ST_RX_QUEUE_EMPTY),
            rx_desc_data_error: at(layout::ST_RX_DESC_DATA_ERROR),
            tx_desc_fetch_error: at(layout::ST_TX_DESC_FETCH_ERROR),
        }
    }
}

/// The Ethernet queues' rings and where the driver has got to in each.
#[derive(Debug)]
pub(crate) struct Eth {
    adminq: Ring,
    admin_cq: Ring,
    admin_prod: u32,
    admin_cons: u32,
    tx: Ring,
    tx_cq: Ring,
    tx_bufs: Buf,
    /// Descriptors written, and completions reaped (both unwrapped).
    tx_prod: u32,
    tx_cons: u32,
    rx: Ring,
    rx_cq: Ring,
    rx_bufs: Buf,
    /// Buffers posted, and completions taken (both unwrapped).
    rx_prod: u32,
    rx_cons: u32,
    /// The LIF info block LIF_INIT named, which the device keeps current.
    lif_info: Buf,
}

/// `ionic_txq_desc` for one buffer at `addr` of `len` bytes: opcode
/// CSUM_NONE, no flags, no SG elements.
fn tx_desc(addr: u64, len: u16) -> [u8; layout::DESC_LEN] {
    let mut d = [0u8; layout::DESC_LEN];
    let cmd = (addr & ((1 << layout::ADDR_BITS) - 1)) << layout::TX_ADDR_SHIFT;
    d[..8].copy_from_slice(&cmd.to_le_bytes());
    d[layout::TX_LEN..layout::TX_LEN + 2].copy_from_slice(&len.to_le_bytes());
    d
}

/// `ionic_rxq_desc` for a buffer at `addr` of `len` bytes (opcode SIMPLE).
fn rx_desc(addr: u64, len: u16) -> [u8; layout::DESC_LEN] {
    let mut d = [0u8; layout::DESC_LEN];
    d[layout::RX_LEN..layout::RX_LEN + 2].copy_from_slice(&len.to_le_bytes());
    d[layout::RX_ADDR..layout::RX_ADDR + 8].copy_from_slice(&addr.to_le_bytes());
    d
}

/// The color a completion at unwrapped index `i` of `r` carries when it
/// is new: set on the first pass, flipping at each wrap.
fn color_of(r: &Ring, i: u32) -> bool {
    (i >> r.depth_log2) & 1 == 0
}

/// A completion is new when its color is the pass's.
fn is_new(c: &[u8; layout::DESC_LEN], color: bool) -> bool {
    (c[layout::COLOR_BYTE] & layout::COLOR != 0) == color
}

/// A Q_INIT command for queue `index` of type `t` on `ring`, completing
/// into `cq`, enabled, without interrupts.
fn q_init_cmd(t: u8, index: u32, ring: &Ring, cq: &Ring) -> [u8; dev_cmd::LEN] {
    let mut c = [0u8; dev_cmd::LEN];
    // A whole command's array: no setter can run past it.
    let mut p = dev_cmd::Packet::new_unchecked(&mut c);
    p.set_opcode(opcode::Q_INIT);
    p.set_q_init_type(t);
    p.set_q_init_index(index);
    p.set_q_init_flags(q_init::F_ENA);
    p.set_q_init_ring_size(ring.depth_log2);
    p.set_q_init_ring_base(ring.gpa());
    p.set_q_init_cq_ring_base(cq.gpa());
    c
}

impl Driver {
    /// Brings the Ethernet side up: PORT_INIT and LIF_INIT, the Ethernet
    /// admin queue, one TX and one RX queue (index 0 of each), and RX
    /// buffers posted on every slot but one. Calling it again is refused.
    pub fn eth_up(&mut self) -> Result<(), Error> {
        if self.eth.is_some() {
            return Err(Error::Unsupported("the Ethernet queues are already up"));
        }
        let mut lif_info = None;
        for op in [opcode::PORT_INIT, opcode::LIF_INIT] {
            let info = self.alloc(8 << 10)?;
            let mut c = [0u8; dev_cmd::LEN];
            let mut p = dev_cmd::Packet::new_unchecked(&mut c);
            p.set_opcode(op);
            p.set_info_pa(info.addr());
            self.devcmd(&c)?;
            lif_info = Some(info);
        }
        let lif_info = lif_info.expect("LIF_INIT ran");
        let adminq = self.ring(ADMINQ_LOG2, layout::ADMIN_LOG2)?;
        let admin_cq = self.ring(ADMINQ_LOG2, layout::DESC_LOG2)?;
        self.devcmd(&q_init_cmd(qtype::ADMINQ, 0, &adminq, &admin_cq))?;
        let tx = self.ring(DEPTH_LOG2, layout::DESC_LOG2)?;
        let tx_cq = self.ring(DEPTH_LOG2, layout::DESC_LOG2)?;
        let rx = self.ring(DEPTH_LOG2, layout::DESC_LOG2)?;
        let rx_cq = self.ring(DEPTH_LOG2, layout::DESC_LOG2)?;
        let bufs = (FRAME_BUF as u64) << DEPTH_LOG2;
        let (tx_bufs, rx_bufs) = (self.alloc(bufs)?, self.alloc(bufs)?);
        self.eth = Some(Eth {
            adminq,
            admin_cq,
            admin_prod: 0,
            admin_cons: 0,
            tx,
            tx_cq,
            tx_bufs,
            tx_prod: 0,
            tx_cons: 0,
            rx,
            rx_cq,
            rx_bufs,
            rx_prod: 0,
            rx_cons: 0,
            lif_info,
        });
        self.eth_admin(&q_init_cmd(qtype::TXQ, 0, &tx, &tx_cq))?;
        self.eth_admin(&q_init_cmd(qtype::RXQ, 0, &rx, &rx_cq))?;
        for _ in 0..rx.depth() - 1 {
            self.post_rx_slot()?;
        }
        self.ring_rx()
    }

    /// Runs a device command on the Ethernet admin queue (as Linux's
    /// `ionic_adminq_post_wait`): the command in the next slot, the
    /// doorbell, and the completion waited for by its color.
    fn eth_admin(&mut self, cmd: &[u8; dev_cmd::LEN]) -> Result<(), Error> {
        let e = self.eth.as_mut().ok_or(Error::Unsupported(NOT_UP))?;
        let slot = e.adminq.slot(e.admin_prod);
        e.admin_prod = e.admin_prod.wrapping_add(1);
        let (index, cq_slot) = (
            e.admin_prod & (e.adminq.depth() - 1),
            e.admin_cq.slot(e.admin_cons),
        );
        let color = color_of(&e.admin_cq, e.admin_cons);
        self.mem.write(slot, cmd);
        self.ring_doorbell(None, qtype::ADMINQ, 0, 0, index)?;
        let end = Instant::now() + ADMIN_TIMEOUT;
        let mut c = [0u8; layout::DESC_LEN];
        loop {
            self.mem.read(cq_slot, &mut c);
            if is_new(&c, color) {
                break;
            }
            if Instant::now() > end {
                return Err(Error::Timeout("an Ethernet admin command"));
            }
            std::thread::yield_now();
        }
        if let Some(e) = self.eth.as_mut() {
            e.admin_cons = e.admin_cons.wrapping_add(1);
        }
        // A whole completion's array: the getter cannot run past it.
        let status = dev_cmd::Comp::new_unchecked(&c[..]).status();
        if status != 0 {
            return Err(Error::DevCmd { op: cmd[0], status });
        }
        Ok(())
    }

    /// Sends `frame` on TX queue 0: copied into its slot's buffer, the
    /// descriptor written, the doorbell rung and the completion reaped.
    /// A frame longer than [`FRAME_BUF`] (or empty) is refused.
    pub fn send_frame(&mut self, frame: &[u8]) -> Result<(), Error> {
        let e = self.eth.as_mut().ok_or(Error::Unsupported(NOT_UP))?;
        if frame.is_empty() || frame.len() > FRAME_BUF {
            return Err(Error::FrameSize {
                len: frame.len(),
                room: FRAME_BUF,
            });
        }
        let depth = e.tx.depth();
        if e.tx_prod.wrapping_sub(e.tx_cons) >= depth - 1 {
            self.reap_tx(true)?;
        }
        let e = self.eth.as_mut().ok_or(Error::Unsupported(NOT_UP))?;
        let slot = e.tx_prod & (depth - 1);
        let buf_off = e.tx_bufs.off as usize + slot as usize * FRAME_BUF;
        let addr = e.tx_bufs.addr() + u64::from(slot) * FRAME_BUF as u64;
        let desc = tx_desc(addr, frame.len() as u16);
        let desc_at = e.tx.slot(e.tx_prod);
        e.tx_prod = e.tx_prod.wrapping_add(1);
        let index = e.tx_prod & (depth - 1);
        self.mem.write(buf_off, frame);
        self.mem.write(desc_at, &desc);
        self.ring_doorbell(None, qtype::TXQ, 0, 0, index)?;
        self.reap_tx(true)
    }

    /// Takes the TX completions there are; with `wait`, waits (bounded)
    /// until at least one has come if any descriptor is outstanding.
    fn reap_tx(&mut self, wait: bool) -> Result<(), Error> {
        let end = Instant::now() + ADMIN_TIMEOUT;
        let mut took = false;
        loop {
            let e = self.eth.as_mut().ok_or(Error::Unsupported(NOT_UP))?;
            if e.tx_cons == e.tx_prod {
                return Ok(());
            }
            let mut c = [0u8; layout::DESC_LEN];
            self.mem.read(e.tx_cq.slot(e.tx_cons), &mut c);
            if is_new(&c, color_of(&e.tx_cq, e.tx_cons)) {
                e.tx_cons = e.tx_cons.wrapping_add(1);
                took = true;
                continue;
            }
            if took || !wait {
                return Ok(());
            }
            if Instant::now() > end {
                return Err(Error::Timeout("a transmit completion"));
            }
            std::thread::yield_now();
        }
    }

    /// Takes the next received frame into `out`, if one has come (it does
    /// not wait): answers its length. Its buffer is posted again. A frame
    /// longer than `out` is dropped with [`Error::FrameSize`]; one the
    /// device marked bad, or whose length does not fit its buffer, is
    /// dropped and the next looked for.
    pub fn recv_frame(&mut self, out: &mut [u8]) -> Result<Option<usize>, Error> {
        loop {
            let e = self.eth.as_mut().ok_or(Error::Unsupported(NOT_UP))?;
            let mut c = [0u8; layout::DESC_LEN];
            self.mem.read(e.rx_cq.slot(e.rx_cons), &mut c);
            if !is_new(&c, color_of(&e.rx_cq, e.rx_cons)) {
                return Ok(None);
            }
            let slot = e.rx_cons & (e.rx.depth() - 1);
            let index = u16::from_le_bytes([c[layout::COMP_INDEX], c[layout::COMP_INDEX + 1]]);
            let len = usize::from(u16::from_le_bytes([
                c[layout::RX_COMP_LEN],
                c[layout::RX_COMP_LEN + 1],
            ]));
            e.rx_cons = e.rx_cons.wrapping_add(1);
            let good = c[layout::COMP_STATUS] == 0
                && u32::from(index) == slot
                && len > 0
                && len <= FRAME_BUF;
            let from = e.rx_bufs.off as usize + slot as usize * FRAME_BUF;
            let fits = len <= out.len();
            if good && fits {
                self.mem.read(from, &mut out[..len]);
            }
            self.post_rx_slot()?;
            self.ring_rx()?;
            if good && !fits {
                return Err(Error::FrameSize {
                    len,
                    room: out.len(),
                });
            }
            if good {
                return Ok(Some(len));
            }
        }
    }

    /// The LIF's statistics as the device last wrote them into the LIF
    /// info block (after every frame it handles).
    pub fn lif_stats(&self) -> Result<LifStats, Error> {
        let e = self.eth.as_ref().ok_or(Error::Unsupported(NOT_UP))?;
        let mut b = [0u8; layout::ST_READ];
        if !self.read(&e.lif_info, layout::LIF_INFO_STATS, &mut b) {
            return Err(Error::Unsupported(
                "the LIF info block is out of the driver's memory",
            ));
        }
        Ok(LifStats::parse(&b))
    }

    /// Writes the RX descriptor of the next slot to post (its own buffer).
    fn post_rx_slot(&mut self) -> Result<(), Error> {
        let e = self.eth.as_mut().ok_or(Error::Unsupported(NOT_UP))?;
        let slot = e.rx_prod & (e.rx.depth() - 1);
        let addr = e.rx_bufs.addr() + u64::from(slot) * FRAME_BUF as u64;
        let at = e.rx.slot(e.rx_prod);
        e.rx_prod = e.rx_prod.wrapping_add(1);
        self.mem.write(at, &rx_desc(addr, FRAME_BUF as u16));
        Ok(())
    }

    /// Tells the device how far RX buffers are posted.
    fn ring_rx(&mut self) -> Result<(), Error> {
        let e = self.eth.as_ref().ok_or(Error::Unsupported(NOT_UP))?;
        let index = e.rx_prod & (e.rx.depth() - 1);
        self.ring_doorbell(None, qtype::RXQ, 0, 0, index)
    }
}

const NOT_UP: &str = "the Ethernet queues are not up (Driver::eth_up)";

#[cfg(test)]
mod tests {
    use super::*;

    // ionic_txq_desc: cmd = opcode | flags << 4 | nsge << 8 | addr << 12,
    // len @8; ionic_rxq_desc: opcode @0, len @6, addr @8.
    #[test]
    fn descriptors_are_laid_out_as_ionic_if_h_says() {
        // 0x1_2345_6000 << 12 = 0x1234_5600_0000.
        let t = tx_desc(0x1_2345_6000, 1514);
        assert_eq!(
            t,
            [
                0x00, 0x00, 0x00, 0x56, 0x34, 0x12, 0x00, 0x00, 0xea, 0x05, 0, 0, 0, 0, 0, 0
            ]
        );
        let cmd = u64::from_le_bytes(t[..8].try_into().unwrap());
        assert_eq!((cmd >> 8) & 0xf, 0, "no SG elements");
        assert_eq!(cmd >> 12, 0x1_2345_6000);
        let r = rx_desc(0x1_0000_8000, 2048);
        assert_eq!(
            r,
            [
                0, 0, 0, 0, 0, 0, 0x00, 0x08, 0x00, 0x80, 0x00, 0x00, 0x01, 0, 0, 0
            ]
        );
    }

    #[test]
    fn a_completion_is_new_by_the_color_of_its_pass() {
        let r = Ring {
            off: 0,
            depth_log2: 2,
            stride_log2: 4,
        };
        let mut c = [0u8; 16];
        c[15] = 0x80 | 0x03; // the color with a packet type beside it
        assert!(is_new(&c, color_of(&r, 0)));
        assert!(is_new(&c, color_of(&r, 3)));
        assert!(!is_new(&c, color_of(&r, 4)), "the second pass wants 0");
        c[15] = 0x03;
        assert!(is_new(&c, color_of(&r, 5)));
        assert!(!is_new(&c, color_of(&r, 8)));
    }

    #[test]
    fn q_init_names_the_rings_and_enables_the_queue() {
        let ring = Ring {
            off: 0x4000,
            depth_log2: 6,
            stride_log2: 4,
        };
        let cq = Ring {
            off: 0x8000,
            depth_log2: 6,
            stride_log2: 4,
        };
        let c = q_init_cmd(qtype::RXQ, 0, &ring, &cq);
        let p = dev_cmd::Packet::new_unchecked(&c[..]);
        assert_eq!((p.opcode(), p.q_init_type()), (opcode::Q_INIT, 2));
        assert_eq!(p.q_init_flags(), q_init::F_ENA);
        assert_eq!(p.q_init_ring_size(), 6);
        assert_eq!(p.q_init_ring_base(), crate::BASE + 0x4000);
        assert_eq!(p.q_init_cq_ring_base(), crate::BASE + 0x8000);
        assert_eq!(p.q_init_sg_ring_base(), 0);
    }
}
