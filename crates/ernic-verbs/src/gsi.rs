//! A device's GSI QP (QP 1): where connection-management MADs arrive and
//! leave (the NVMe-oF target and host, and libibverbs' rdma_cm). Receives land in a ring of buffers, each a 40-byte GRH (which
//! names the sender's GID) then the 256-byte MAD; sends go out from a ring
//! of MAD buffers to the sender's QP 1 through address handles kept in a
//! small bounded cache. Nothing here reads a MAD: it hands the bytes and
//! their sender to the CM, which checks everything.

use ernic_core::GSI_QKEY;
use ernic_core::grh::{self, GRH_LEN};
use ernic_core::{
    Access, Completion as Wc, Gid, QpCaps, QpType, Qpn, SendOp, SendWr, WcOpcode, WcStatus,
};

use crate::{Ah, Cq, Device, Error, Mr, Pd, Qp};

/// A MAD's length (IBTA: 256 bytes, header included).
pub const MAD_LEN: usize = 256;

/// Receives kept posted: MADs that can wait at once for the CM.
const RECVS: u32 = 64;
/// MADs that can be in flight out at once; a MAD with no free slot is
/// dropped (the CM's retransmission sends it again).
const SENDS: u32 = 64;
/// Address handles kept for senders; the oldest is dropped past this.
const AH_CACHE: usize = 32;
/// One receive buffer: the GRH, then the MAD.
const RECV_LEN: usize = GRH_LEN + MAD_LEN;

/// What the GSI QP counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GsiStats {
    /// MADs received and handed on.
    pub received: u64,
    /// Receives that completed in error or held no usable GRH or MAD.
    pub bad: u64,
    /// MADs sent.
    pub sent: u64,
    /// MADs dropped for want of a free send buffer.
    pub dropped: u64,
}

/// The GSI QP, its CQ and its buffers.
pub struct Gsi {
    pd: Pd,
    qp: Qp,
    cq: Cq,
    recv: Mr,
    send: Mr,
    /// Send buffers not in flight.
    free: Vec<u32>,
    ahs: Vec<(Gid, Ah)>,
    stats: GsiStats,
}

impl Gsi {
    /// Creates QP 1 of `dev` in `pd` and posts its receives.
    pub fn new(dev: &Device, pd: &Pd) -> Result<Gsi, Error> {
        let cq = dev.create_cq(RECVS + SENDS)?;
        let caps = QpCaps {
            max_send_wr: SENDS,
            max_recv_wr: RECVS,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = pd.create_qp(QpType::Gsi, &cq, &cq, caps)?;
        qp.ready_datagram(GSI_QKEY)?;
        let recv = pd.reg_mr(RECV_LEN * RECVS as usize, Access::LOCAL_WRITE)?;
        let send = pd.reg_mr(MAD_LEN * SENDS as usize, Access::LOCAL_WRITE)?;
        let gsi = Gsi {
            pd: pd.clone(),
            qp,
            cq,
            recv,
            send,
            free: (0..SENDS).rev().collect(),
            ahs: Vec::with_capacity(AH_CACHE),
            stats: GsiStats::default(),
        };
        for i in 0..RECVS {
            gsi.post_recv(i)?;
        }
        Ok(gsi)
    }

    fn post_recv(&self, i: u32) -> Result<(), Error> {
        let sge = self.recv.sge(i as usize * RECV_LEN, RECV_LEN as u32)?;
        self.qp.post_recv(u64::from(i), &[sge])?;
        Ok(())
    }

    /// Takes what completed: each MAD received goes to `on_mad` with its
    /// sender, and its buffer is posted again. Answers how many
    /// completions there were.
    pub fn poll(&mut self, mut on_mad: impl FnMut(Gid, Qpn, &[u8])) -> Result<usize, Error> {
        let mut wcs = [Wc::EMPTY; 16];
        let n = self.cq.poll(&mut wcs)?;
        for wc in &wcs[..n] {
            match wc.opcode {
                WcOpcode::Recv => self.received(wc, &mut on_mad)?,
                _ => {
                    // Send completions name their buffer by wr_id.
                    if wc.wr_id < u64::from(SENDS) {
                        self.free.push(wc.wr_id as u32);
                    }
                }
            }
        }
        Ok(n)
    }

    fn received(&mut self, wc: &Wc, on_mad: &mut impl FnMut(Gid, Qpn, &[u8])) -> Result<(), Error> {
        let i = wc.wr_id as u32;
        if i >= RECVS {
            self.stats.bad += 1;
            return Ok(());
        }
        if wc.status == WcStatus::Success && wc.grh && wc.byte_len as usize >= RECV_LEN {
            let mut buf = [0u8; RECV_LEN];
            self.recv.read(i as usize * RECV_LEN, &mut buf)?;
            match grh::Repr::parse(&grh::Packet::new_unchecked(&buf[..GRH_LEN])) {
                Ok(g) => {
                    self.stats.received += 1;
                    on_mad(g.sgid, wc.src_qpn, &buf[GRH_LEN..]);
                }
                Err(_) => self.stats.bad += 1,
            }
        } else if wc.status != WcStatus::WrFlushErr {
            self.stats.bad += 1;
        }
        if wc.status != WcStatus::WrFlushErr {
            self.post_recv(i)?;
        }
        Ok(())
    }

    /// Sends `mad` to QP `qpn` (the GSI QP, 1) of the port with GID `gid`;
    /// dropped (and counted) when every send buffer is in flight.
    pub fn send(&mut self, gid: Gid, qpn: Qpn, mad: &[u8; MAD_LEN]) -> Result<(), Error> {
        let Some(slot) = self.free.pop() else {
            self.stats.dropped += 1;
            return Ok(());
        };
        let off = slot as usize * MAD_LEN;
        self.send.write(off, mad)?;
        let dest = self.ah(gid)?.dest(qpn, GSI_QKEY);
        let sge = [self.send.sge(off, MAD_LEN as u32)?];
        let wr = SendWr::new(u64::from(slot), SendOp::Send)
            .sgl(&sge)
            .to(dest);
        if let Err(e) = self.qp.post_send(&wr) {
            self.free.push(slot);
            return Err(e);
        }
        self.stats.sent += 1;
        Ok(())
    }

    /// The address handle for `gid`, made on first use.
    fn ah(&mut self, gid: Gid) -> Result<&Ah, Error> {
        let i = match self.ahs.iter().position(|(g, _)| *g == gid) {
            Some(i) => i,
            None => {
                if self.ahs.len() == AH_CACHE {
                    self.ahs.remove(0);
                }
                self.ahs.push((gid, self.pd.create_ah(gid)?));
                self.ahs.len() - 1
            }
        };
        Ok(&self.ahs[i].1)
    }

    /// What it counted.
    pub fn stats(&self) -> GsiStats {
        self.stats
    }
}
