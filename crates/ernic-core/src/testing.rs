//! A bench for the crate's unit tests: an engine over no memory (inline
//! payloads need none), one device, RC QPs connected to each other or to a
//! QP on a peer node that a [`Wire`] stands for, and a clock the test
//! steps by hand. Nothing here sleeps or reads the clock after the start.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::wire::{HEADER_LEN, Op, Repr, flags};
use crate::*;

/// The peer node the [`Wire`] reaches.
pub(crate) const PEER: NodeId = NodeId(9);

/// The QP on the peer node a QP here connects to.
pub(crate) const PEER_QPN: Qpn = Qpn(5);

/// How long a SEND waits for a receive on the bench.
pub(crate) const RNR: Duration = Duration::from_millis(100);

/// How long a request to the peer waits for its answer on the bench.
pub(crate) const REQUEST: Duration = Duration::from_secs(1);

/// What went out over the [`Wire`], and whether it has room.
#[derive(Default)]
pub(crate) struct Sent {
    /// Refuse every message for lack of room.
    pub busy: bool,
    /// The messages queued, in order.
    pub msgs: Vec<Vec<u8>>,
}

/// A carrier to the one peer node [`PEER`], which owns [`Bench::peer_gid`]
/// and never answers.
pub(crate) struct Wire(Arc<Mutex<Sent>>, Gid);

impl Remote for Wire {
    fn owner(&self, gid: &Gid) -> Option<NodeId> {
        (*gid == self.1).then_some(PEER)
    }

    fn send(&mut self, _to: NodeId, out: Outgoing<'_>) -> Result<(), SendError> {
        let mut s = self.0.lock().unwrap();
        if s.busy {
            return Err(SendError::Busy);
        }
        let mut buf = vec![0; out.len];
        (out.fill)(&mut buf);
        s.msgs.push(buf);
        Ok(())
    }

    fn cancel(&mut self, _tag: u64) {}
}

pub(crate) struct Bench {
    pub e: Engine<ProcessMemory>,
    pub dev: DeviceId,
    pub gid: Gid,
    pub peer_gid: Gid,
    pd: PdId,
    cq: CqId,
    /// When the bench started; tests count from it.
    pub t0: Instant,
    pub wire: Arc<Mutex<Sent>>,
    done: Vec<CqEvent>,
}

impl Bench {
    pub fn new() -> Bench {
        let cfg = EngineConfig {
            rnr_timeout: RNR,
            request_timeout: REQUEST,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(cfg, ProcessMemory::new());
        let gid: Gid = "10.1.0.1".parse().unwrap();
        let peer_gid: Gid = "10.9.0.1".parse().unwrap();
        let wire = Arc::new(Mutex::new(Sent::default()));
        e.set_remote(Box::new(Wire(wire.clone(), peer_gid)));
        let dev = e.add_device(vec![gid]);
        let pd = e.alloc_pd(dev).unwrap();
        let cq = e.create_cq(dev, None, 64).unwrap();
        Bench {
            e,
            dev,
            gid,
            peer_gid,
            pd,
            cq,
            t0: Instant::now(),
            wire,
            done: Vec::new(),
        }
    }

    /// An RC QP taken to RTS toward `dest`.
    pub fn qp(&mut self, dest: (Gid, Qpn)) -> Qpn {
        let q = self.unconnected_qp();
        self.connect(q, dest);
        q
    }

    /// An RC QP in RESET.
    pub fn unconnected_qp(&mut self) -> Qpn {
        let init = QpInit {
            qp_type: QpType::Rc,
            pd: self.pd,
            send_cq: self.cq,
            recv_cq: self.cq,
            srq: None,
            caps: QpCaps {
                max_send_wr: 8,
                max_recv_wr: 8,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 64,
            },
            sq_sig_all: true,
            qpn: None,
        };
        self.e.create_qp(self.dev, &init).unwrap()
    }

    /// Takes QP `q` from RESET to RTS toward `dest`, with every right.
    pub fn connect(&mut self, q: Qpn, dest: (Gid, Qpn)) {
        for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
            let attr = QpAttr {
                state: Some(st),
                access: (st == QpState::Init).then_some(Access::ALL),
                dest: (st == QpState::Rtr).then_some(dest),
                ..QpAttr::default()
            };
            self.e.modify_qp(self.dev, q, &attr, self.t0).unwrap();
        }
    }

    /// Posts a one-byte inline SEND on `q` at `at`.
    pub fn send(&mut self, q: Qpn, wr_id: u64, at: Instant) {
        let wr = SendWr::new(wr_id, SendOp::Send).inline(b"x");
        self.e.post_send(self.dev, q, &wr, at).unwrap();
        self.collect();
    }

    /// Runs the engine's timers at `at`.
    pub fn poll(&mut self, at: Instant) {
        self.e.poll(at);
        self.collect();
    }

    /// A one-byte SEND from the peer's QP to QP `q` here, as it arrives.
    pub fn send_from_peer(&mut self, q: Qpn, at: Instant) {
        let r = Repr {
            flags: flags::LAST,
            src_qpn: PEER_QPN,
            dst_qpn: q,
            req_id: 1,
            len: 1,
            total: 1,
            sgid: self.peer_gid,
            dgid: self.gid,
            ..Repr::new(Op::Send)
        };
        let mut buf = vec![0; HEADER_LEN + 1];
        r.emit(&mut buf);
        buf[HEADER_LEN] = b'x';
        self.e.apply_remote(PEER, buf, 0, at);
        self.e.take_released(drop);
        self.collect();
    }

    /// The completions of `wr_id` produced so far, taken.
    pub fn take(&mut self, wr_id: u64) -> Vec<Completion> {
        let (hit, rest) = self
            .done
            .drain(..)
            .partition(|c| c.completion.wr_id == wr_id);
        self.done = rest;
        hit.into_iter().map(|c: CqEvent| c.completion).collect()
    }

    /// The messages the wire queued so far, parsed.
    pub fn sent(&self) -> Vec<Repr> {
        let s = self.wire.lock().unwrap();
        s.msgs
            .iter()
            .map(|m| Repr::parse(&wire::Packet::new_checked(&m[..]).unwrap()).unwrap())
            .collect()
    }

    fn collect(&mut self) {
        let done = &mut self.done;
        self.e.drain_completions(|c| done.push(*c));
    }
}
