//! A datagram to a QP on another node: one message with the GRH in front of
//! the payload and the Q_Key in the header. Its send completion does not
//! wait for the peer.

use std::time::Instant;

use super::{Outgoing, SendError};
use crate::datapath::{Outcome, Req, SegArray, Source};
use crate::engine::Engine;
use crate::grh::GRH_LEN;
use crate::memory::DmaMemory;
use crate::types::{DeviceId, NodeId, Qpn};
use crate::wire::{HEADER_LEN, Op, Repr, flags};
use crate::wr::{SendOp, UdDest, WcStatus};

impl<M: DmaMemory> Engine<M> {
    /// Sends a datagram to a QP on another node. Its send completion does not
    /// wait for the peer: a datagram's sender never hears of its fate.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_datagram(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        req: &Req,
        src: Source<'_>,
        len: u64,
        node: NodeId,
        ud: UdDest,
        qkey: u32,
        grh: &[u8; GRH_LEN],
        _now: Instant,
    ) -> Outcome {
        let Some(mut carrier) = self.remote.carrier.take() else {
            return Outcome::Done(WcStatus::Success, len as u32);
        };
        let incarnation = self.qp(dev, qpn).map(|q| q.incarnation).unwrap_or(0);
        let sgid = self
            .dev(dev)
            .ok()
            .and_then(|d| d.gids.first().copied())
            .unwrap_or_default();
        let dgid = crate::grh::Repr::parse(&crate::grh::Packet::new_unchecked(&grh[..]))
            .map(|g| g.dgid)
            .unwrap_or_default();
        let total = GRH_LEN as u64 + len;
        let mut hdr = Repr {
            flags: flags::DATAGRAM | flags::LAST,
            src_qpn: qpn,
            dst_qpn: ud.remote_qpn,
            len: total as u32,
            total: total as u32,
            operand0: u64::from(qkey),
            sgid,
            dgid,
            ..Repr::new(Op::Send)
        };
        if let SendOp::SendImm(imm) = req.op {
            hdr.flags |= flags::IMM;
            hdr.imm = imm;
        }
        let this = &*self;
        let mut fill = |buf: &mut [u8]| {
            hdr.emit(buf);
            buf[HEADER_LEN..HEADER_LEN + GRH_LEN].copy_from_slice(grh);
            let mut seg: SegArray<'_> = Default::default();
            if let Ok(s) = this.resolve_source(&src, &mut seg) {
                let _ = crate::copy::copy(
                    &this.mem,
                    crate::copy::Dst::Bytes(&mut buf[HEADER_LEN + GRH_LEN..]),
                    s,
                    len,
                );
            }
        };
        let r = carrier.send(
            node,
            Outgoing {
                reply: false,
                tag: incarnation,
                len: HEADER_LEN + total as usize,
                fill: &mut fill,
            },
        );
        self.remote.carrier = Some(carrier);
        match r {
            Err(SendError::Busy) => Outcome::Blocked,
            // Lost on the way, as a datagram may be.
            Err(SendError::NoRoute) => Outcome::Done(WcStatus::Success, len as u32),
            Ok(()) => {
                self.count_tx(dev, qpn, crate::counters::Counter::RdmaSends, len);
                Outcome::Done(WcStatus::Success, len as u32)
            }
        }
    }
}
