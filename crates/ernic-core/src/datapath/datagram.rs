//! Datagrams (UD and GSI; seed 001, "Datagrams"): the address handle in the
//! sender's PD, the UD MTU, the controlled Q_Key, the GRH every datagram
//! lands with, and delivery by QP number to the device the AH names, or to
//! another node. A datagram's sender never hears of the receiver's trouble.

use std::time::Instant;

use super::{End, Incoming, Outcome, Req, SegArray, Source};
use crate::counters::Counter;
use crate::engine::Engine;
use crate::grh::{self, GRH_LEN};
use crate::memory::DmaMemory;
use crate::types::{DeviceId, Gid, Qpn, Route};
use crate::wr::WcStatus;

impl<M: DmaMemory> Engine<M> {
    /// A datagram send: delivered by QP number to the device the AH names (or
    /// the sender's own, for a GID no one owns), after the datagram rules.
    pub(super) fn exec_datagram(
        &mut self,
        dev: DeviceId,
        qpn: Qpn,
        req: &Req,
        src: Source<'_>,
        len: u64,
        now: Instant,
    ) -> Outcome {
        let Some(ud) = req.ud else {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        };
        let Ok(qp) = self.qp(dev, qpn) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        let (pd, own_qkey) = (qp.pd, qp.qkey);
        let Some(ah) = self.dev(dev).ok().and_then(|d| d.ahs.get(ud.ah.0)).copied() else {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        };
        if ah.pd != pd {
            return Outcome::Done(WcStatus::LocQpOpErr, 0);
        }
        if len > u64::from(self.cfg.ud_mtu) {
            return Outcome::Done(WcStatus::LocLenErr, 0);
        }
        // A controlled Q_Key stands for the sending QP's own; a QP without one
        // can not send with a controlled key.
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            match own_qkey {
                Some(k) => k,
                None => return Outcome::Done(WcStatus::LocQpOpErr, 0),
            }
        } else {
            ud.remote_qkey
        };
        // The sender's payload must be readable before anything goes anywhere.
        {
            let mut sseg: SegArray<'_> = Default::default();
            if let Err(st) = self.resolve_source(&src, &mut sseg) {
                return Outcome::Done(st, 0);
            }
        }
        let sgid = ah.sgid.unwrap_or_else(|| {
            self.dev(dev)
                .ok()
                .and_then(|d| d.gids.first().copied())
                .unwrap_or(Gid([0; 16]))
        });
        let header = grh::Repr {
            sgid,
            dgid: ah.dgid,
            payload_len: len as u16,
            hop_limit: 64,
        }
        .to_bytes();
        // An AH made before anyone owned its GID is looked up again: a
        // mesh peer's GIDs can become known after the handle was made.
        let route = ah.route.or_else(|| self.route_of(&ah.dgid));
        let pdev = match route {
            Some(Route::Remote(node)) => {
                return self.send_datagram(dev, qpn, req, src, len, node, ud, qkey, &header, now);
            }
            Some(Route::Local(d)) => d,
            None => dev,
        };
        let out = self.deliver_datagram(pdev, ud.remote_qpn, qkey, req, src, len, &header, qpn);
        if let Outcome::Done(WcStatus::Success, _) = out {
            self.count_tx(dev, qpn, Counter::RdmaSends, len);
        }
        out
    }

    /// Delivers a datagram to QP `pqpn` of device `pdev` after the datagram
    /// rules (UD/GSI destination, Q_Key). A datagram's sender never hears of
    /// the receiver's trouble: refused and undeliverable ones are dropped and
    /// counted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver_datagram(
        &mut self,
        pdev: DeviceId,
        pqpn: Qpn,
        qkey: u32,
        req: &Req,
        src: Source<'_>,
        len: u64,
        header: &[u8; GRH_LEN],
        src_qpn: Qpn,
    ) -> Outcome {
        let enforce = self.cfg.enforce_qp_state;
        let accepted = self.qp(pdev, pqpn).ok().filter(|p| {
            p.qp_type.is_datagram()
                && (!enforce || p.state.can_receive())
                && p.qkey.is_none_or(|k| k == qkey)
        });
        let Some(peer) = accepted else {
            if let Ok(d) = self.dev_mut(pdev) {
                d.counters.inc(Counter::RxDatagramsDropped);
            }
            return Outcome::Done(WcStatus::Success, len as u32);
        };
        let at = End {
            dev: pdev,
            qpn: pqpn,
            pd: peer.pd,
            dma_key: self.dma_key(peer),
            access: peer.access,
        };
        let inc = Incoming {
            grh: Some(header),
            src_qpn: Some(src_qpn),
            unreliable: true,
            ..Incoming::whole(*req, src, len)
        };
        // The receiver's troubles stay with the receiver (the sender's own
        // buffers were checked before).
        self.respond_receive(at, &inc);
        Outcome::Done(WcStatus::Success, len as u32)
    }
}
