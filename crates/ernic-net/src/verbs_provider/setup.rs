//! A rail's connection set-up over its datagram QP: REQ (my QPs) → REP
//! (mine, and I am connected to yours) → ACK (so am I), sent again every
//! [`RETRY`] until the peer answers.

use super::*;

impl ErnicRail {
    pub(super) fn send_ctl(&mut self, addr: FiAddr, kind: u8) {
        let name = self.name;
        let p = self.peers[addr as usize]
            .as_deref_mut()
            .expect("an address the rail uses is live");
        let mut m = [0u8; MSG_LEN];
        m[..4].copy_from_slice(MAGIC);
        m[4] = kind;
        m[8..28].copy_from_slice(&name);
        m[28..32].copy_from_slice(&p.data.qpn().0.to_le_bytes());
        m[32..36].copy_from_slice(&p.msg.qpn().0.to_le_bytes());
        let wr = SendWr::new(INTERNAL | KIND_UD_SEND, SendOp::Send)
            .inline(&m)
            .signaled(false)
            .to(p.ah.dest(p.ud_qpn, QKEY));
        // A lost datagram is sent again by `retry`.
        let _ = self.ud.post_send(&wr);
        p.last_sent = Some(Instant::now());
    }

    pub(super) fn connect(
        &mut self,
        addr: FiAddr,
        data_qpn: Qpn,
        msg_qpn: Qpn,
    ) -> Result<(), VerbsError> {
        let data_recvs = self.depths.data_recvs;
        let p = self.live(addr);
        match p.remote {
            Some(r) if r == (data_qpn, msg_qpn) => return Ok(()),
            // The peer rebuilt its QPs: so do we.
            Some(_) => {
                self.rebuild(addr)?;
                return self.connect(addr, data_qpn, msg_qpn);
            }
            None => {}
        }
        p.data.connect(p.gid, data_qpn, Access::ALL)?;
        p.msg.connect(p.gid, msg_qpn, Access::ALL)?;
        for _ in 0..data_recvs {
            p.data.post_recv(INTERNAL | KIND_DATA_RECV | addr, &[])?;
        }
        p.remote = Some((data_qpn, msg_qpn));
        Ok(())
    }

    pub(super) fn mark_ready(&mut self, addr: FiAddr) {
        let p = self.live(addr);
        let was = p.ready();
        p.peer_ready = true;
        if !was && p.ready() {
            self.connecting -= 1;
        }
    }

    pub(super) fn on_datagram(&mut self, slot: usize, len: usize) {
        let mut m = [0u8; MSG_LEN];
        if len < GRH + MSG_LEN
            || self.ud_mr.read(slot * UD_SLOT + GRH, &mut m).is_err()
            || &m[..4] != MAGIC
        {
            return;
        }
        let name: [u8; NAME_LEN] = m[8..28].try_into().expect("20 bytes");
        let data_qpn = Qpn(u32::from_le_bytes(m[28..32].try_into().expect("4 bytes")));
        let msg_qpn = Qpn(u32::from_le_bytes(m[32..36].try_into().expect("4 bytes")));
        let Ok(addr) = self.peer_for(&name) else {
            return;
        };
        if self.connect(addr, data_qpn, msg_qpn).is_err() {
            return;
        }
        match m[4] {
            REQ => self.send_ctl(addr, REP),
            REP => {
                self.mark_ready(addr);
                self.send_ctl(addr, ACK);
            }
            ACK => self.mark_ready(addr),
            _ => {}
        }
    }

    /// Sends set-up datagrams again to peers that have not answered.
    pub(super) fn retry(&mut self, now: Instant) {
        for a in 0..self.peers.len() {
            let Some(p) = self.peers[a].as_deref() else {
                continue;
            };
            if p.ready() || p.last_sent.is_some_and(|t| now.duration_since(t) < RETRY) {
                continue;
            }
            let kind = if p.remote.is_some() { REP } else { REQ };
            self.send_ctl(a as FiAddr, kind);
        }
    }
}
