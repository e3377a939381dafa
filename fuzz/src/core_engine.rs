//! One `ernic-core` engine (a device with an RC, a UC and a UD QP, one CQ,
//! an MR over its own arena, all in RTS) receiving a fuzzer-chosen
//! sequence of wire messages from peers, as the mesh hands them over
//! (`Engine::apply_remote`), mixed with local posts, whose requests go out
//! through a carrier that keeps them so later messages can answer them,
//! and with time passing.
//!
//! Messages are built from fields (a well-formed header with any values,
//! so the responder and requester paths are reached), answer a request
//! the engine sent (same request id, QPs and GIDs reversed), or are raw
//! bytes. Invariant: nothing panics, and everything the engine holds is
//! released.

#![allow(unsafe_code)]

use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use ernic_core::wire::{self, Repr};
use ernic_core::*;

use crate::{Bytes, Enc};

/// The arena the MR covers.
const ARENA: usize = 64 << 10;
/// Most requests the carrier keeps for replies.
const KEPT: usize = 32;
const MAX_OPS: usize = 128;

/// A peer's message, built from header fields.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct Fields {
    /// The opcode byte.
    pub op: u8,
    /// Flag bits.
    pub flags: u8,
    /// Completion status number.
    pub status: u8,
    /// Which local QP it is for (0 RC, 1 UC, 2 UD, else `raw_qpn`).
    pub qp: u8,
    /// A QP number when `qp` names none.
    pub raw_qpn: u32,
    /// The sender's QP number.
    pub src_qpn: u32,
    /// Request id.
    pub req_id: u64,
    /// The MR's key when true, else `raw_rkey`.
    pub our_rkey: bool,
    /// An rkey.
    pub raw_rkey: u32,
    /// Offset into the MR (or, above its size, a raw address).
    pub addr: u32,
    /// The length field; `None`: the payload's length.
    pub len: Option<u32>,
    /// Immediate data.
    pub imm: u32,
    /// Operand 0.
    pub operand0: u64,
    /// Operand 1.
    pub operand1: u64,
    /// Total of the whole request; `None`: the length (one piece).
    pub total: Option<u32>,
    /// Offset in the whole.
    pub offset: u32,
}

/// What happens next.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// A message from peer `from` (1-3), built from fields.
    Msg {
        from: u8,
        f: Fields,
        payload: Bytes<512>,
    },
    /// An answer to request `which` the engine sent: `op` (a reply
    /// opcode), `status`, and the payload.
    Reply {
        which: u8,
        op: u8,
        status: u8,
        payload: Bytes<512>,
    },
    /// Raw bytes from peer `from`, starting `start` bytes into the buffer.
    Raw {
        from: u8,
        start: u8,
        bytes: Bytes<256>,
    },
    /// A local post on QP `qp` (RC, UC, UD): `op` 0-7 (send, send with
    /// immediate, write, write with immediate, read, compare-and-swap,
    /// fetch-and-add, receive) of `len` bytes at offset `at`.
    Post { qp: u8, op: u8, len: u16, at: u16 },
    /// Time passes.
    Advance { ms: u16 },
}

impl Fields {
    fn emit(&self, e: &mut Enc) {
        let opt = |e: &mut Enc, v: Option<u32>| {
            match v {
                None => e.bool(false),
                Some(v) => e.bool(true).u32(v),
            };
        };
        e.u8(self.op)
            .u8(self.flags)
            .u8(self.status)
            .u8(self.qp)
            .u32(self.raw_qpn)
            .u32(self.src_qpn)
            .u64(self.req_id)
            .bool(self.our_rkey)
            .u32(self.raw_rkey)
            .u32(self.addr);
        opt(e, self.len);
        e.u32(self.imm).u64(self.operand0).u64(self.operand1);
        opt(e, self.total);
        e.u32(self.offset);
    }
}

impl Op {
    /// Writes this step in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        match self {
            Op::Msg { from, f, payload } => {
                e.variant(0, 5).u8(*from);
                f.emit(e);
                e.bytes(&payload.0, 512);
            }
            Op::Reply {
                which,
                op,
                status,
                payload,
            } => {
                e.variant(1, 5).u8(*which).u8(*op).u8(*status);
                e.bytes(&payload.0, 512);
            }
            Op::Raw { from, start, bytes } => {
                e.variant(2, 5).u8(*from).u8(*start).bytes(&bytes.0, 256);
            }
            Op::Post { qp, op, len, at } => {
                e.variant(3, 5).u8(*qp).u8(*op).u16(*len).u16(*at);
            }
            Op::Advance { ms } => {
                e.variant(4, 5).u16(*ms);
            }
        }
    }
}

/// The GID peer node `node` (1-3) owns.
fn peer_gid(node: u16) -> Gid {
    Gid::from_ipv4(std::net::Ipv4Addr::new(10, 9, 0, node as u8 + 1))
}

fn our_gid() -> Gid {
    Gid::from_ipv4(std::net::Ipv4Addr::new(10, 9, 0, 1))
}

/// The remote QP each local QP talks to.
const PEER_QPN: u32 = 100;

#[derive(Default)]
struct Sent {
    /// Requests the engine sent, newest last (at most [`KEPT`]).
    requests: Vec<Vec<u8>>,
}

struct Carrier(Arc<Mutex<Sent>>);

impl Remote for Carrier {
    fn owner(&self, gid: &Gid) -> Option<NodeId> {
        (1..=3u16).find(|&n| peer_gid(n) == *gid).map(NodeId)
    }

    fn send(&mut self, _to: NodeId, out: Outgoing<'_>) -> Result<(), SendError> {
        assert!(
            out.len <= wire::HEADER_LEN + wire::MAX_PAYLOAD,
            "a message of {} bytes",
            out.len
        );
        let mut buf = vec![0u8; out.len];
        (out.fill)(&mut buf);
        if !out.reply {
            let mut s = self.0.lock().unwrap();
            if s.requests.len() == KEPT {
                s.requests.remove(0);
            }
            buf.truncate(wire::HEADER_LEN);
            s.requests.push(buf);
        }
        Ok(())
    }

    fn cancel(&mut self, _tag: u64) {}
}

struct World {
    e: Engine<ProcessMemory>,
    // The MR's memory; the engine reaches it through `ProcessMemory`.
    arena: Box<[u8]>,
    dev: DeviceId,
    qps: [Qpn; 3],
    ah: AhId,
    mr: u32,
    sent: Arc<Mutex<Sent>>,
    now: Instant,
}

impl World {
    fn new() -> World {
        let cfg = EngineConfig {
            rnr_timeout: Duration::from_millis(50),
            request_timeout: Duration::from_millis(200),
            max_queue_bytes: 1 << 20,
            ..EngineConfig::default()
        };
        let mut arena = vec![0u8; ARENA].into_boxed_slice();
        let mut e = Engine::new(cfg, ProcessMemory::new());
        let base = NonNull::new(arena.as_mut_ptr()).expect("a box is not null");
        // SAFETY: the arena is a live allocation of ARENA bytes, moved (not
        // reallocated: a box's heap block stays put) into the world beside
        // the engine; `World`'s fields drop in declaration order, the
        // engine before the arena, so no engine call reaches freed memory.
        unsafe { e.memory_mut().add(base, ARENA) };
        let dev = e.add_device(vec![our_gid()]);
        let sent = Arc::new(Mutex::new(Sent::default()));
        e.set_remote(Box::new(Carrier(sent.clone())));
        let pd = e.alloc_pd(dev).expect("pd");
        let cq = e.create_cq(dev, None, 4096).expect("cq");
        let a = arena.as_ptr() as u64;
        let mr = e
            .reg_mr(dev, MrSpec::contiguous(pd, a, ARENA as u64, Access::ALL, a))
            .expect("mr");
        let now = Instant::now();
        let mut qps = [Qpn(0); 3];
        for (i, t) in [QpType::Rc, QpType::Uc, QpType::Ud].into_iter().enumerate() {
            let init = QpInit {
                qp_type: t,
                pd,
                send_cq: cq,
                recv_cq: cq,
                srq: None,
                caps: QpCaps {
                    max_send_wr: 64,
                    max_recv_wr: 64,
                    max_send_sge: 2,
                    max_recv_sge: 2,
                    max_inline_data: 64,
                },
                sq_sig_all: true,
                qpn: None,
            };
            let q = e.create_qp(dev, &init).expect("qp");
            for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
                let attr = QpAttr {
                    state: Some(st),
                    access: (st == QpState::Init).then_some(Access::ALL),
                    qkey: (st == QpState::Init && t == QpType::Ud).then_some(0x1111),
                    dest: (st == QpState::Rtr && t != QpType::Ud)
                        .then_some((peer_gid(1), Qpn(PEER_QPN))),
                    ..QpAttr::default()
                };
                e.modify_qp(dev, q, &attr, now).expect("to RTS");
            }
            qps[i] = q;
        }
        let ah = e.create_ah(dev, None, pd, peer_gid(2)).expect("ah");
        World {
            e,
            arena,
            dev,
            qps,
            ah,
            mr,
            sent,
            now,
        }
    }

    fn base(&self) -> u64 {
        self.arena.as_ptr() as u64
    }

    fn deliver(&mut self, from: u16, buf: Vec<u8>, start: usize) {
        self.e.apply_remote(NodeId(from), buf, start, self.now);
        self.e.take_released(drop);
    }

    fn message(&self, f: &Fields, payload: &[u8]) -> Vec<u8> {
        let mut r = Repr::new(wire::Op::from(f.op));
        r.flags = f.flags;
        r.status = WcStatus::from_u8(f.status).unwrap_or(WcStatus::Success);
        r.dst_qpn = match f.qp {
            0..=2 => self.qps[usize::from(f.qp)],
            _ => Qpn(f.raw_qpn),
        };
        r.src_qpn = Qpn(f.src_qpn);
        r.req_id = f.req_id;
        r.rkey = if f.our_rkey { self.mr } else { f.raw_rkey };
        r.addr = if (f.addr as usize) < ARENA {
            self.base() + u64::from(f.addr)
        } else {
            u64::from(f.addr)
        };
        r.len = f.len.unwrap_or(payload.len() as u32);
        r.imm = f.imm;
        r.operand0 = f.operand0;
        r.operand1 = f.operand1;
        r.total = f.total.unwrap_or(r.len);
        r.offset = f.offset;
        r.sgid = peer_gid(1);
        r.dgid = our_gid();
        let mut buf = vec![0u8; wire::HEADER_LEN + payload.len()];
        r.emit(&mut buf);
        buf[wire::HEADER_LEN..].copy_from_slice(payload);
        buf
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Msg { from, f, payload } => {
                let m = self.message(&f, &payload.0);
                self.deliver(u16::from(from % 3) + 1, m, 0);
            }
            Op::Reply {
                which,
                op,
                status,
                payload,
            } => {
                let req = {
                    let s = self.sent.lock().unwrap();
                    if s.requests.is_empty() {
                        return;
                    }
                    s.requests[usize::from(which) % s.requests.len()].clone()
                };
                let Ok(q) = wire::Packet::new_checked(&req[..]) else {
                    return;
                };
                let mut r = Repr::new(wire::Op::from(op));
                r.status = WcStatus::from_u8(status).unwrap_or(WcStatus::Success);
                r.req_id = q.req_id();
                r.src_qpn = Qpn(q.src_qpn());
                r.dst_qpn = Qpn(q.dst_qpn());
                r.sgid = q.dgid();
                r.dgid = q.sgid();
                r.len = payload.0.len() as u32;
                r.total = r.len;
                let mut buf = vec![0u8; wire::HEADER_LEN + payload.0.len()];
                r.emit(&mut buf);
                buf[wire::HEADER_LEN..].copy_from_slice(&payload.0);
                let from = (1..=3u16).find(|&n| peer_gid(n) == q.dgid()).unwrap_or(1);
                self.deliver(from, buf, 0);
            }
            Op::Raw { from, start, bytes } => {
                let start = usize::from(start).min(bytes.0.len());
                self.deliver(u16::from(from % 3) + 1, bytes.0, start);
            }
            Op::Post { qp, op, len, at } => self.post(qp, op, len, at),
            Op::Advance { ms } => {
                self.now += Duration::from_millis(u64::from(ms));
                self.e.poll(self.now);
                self.e.expire_held(self.now);
            }
        }
        self.e.drain_completions(|_| {});
        let _ = self.e.take_events();
        self.e.take_released(drop);
    }

    fn post(&mut self, qp: u8, op: u8, len: u16, at: u16) {
        let q = self.qps[usize::from(qp % 3)];
        let base = self.base();
        let len = u32::from(len) % (ARENA as u32 / 2);
        let at = u64::from(at) % (ARENA as u64 / 2);
        let sge = [Sge {
            addr: base + at,
            len,
            lkey: Lkey(self.mr),
        }];
        let remote = RemoteAddr {
            addr: 0x1000 + at,
            rkey: Rkey(0x77),
        };
        if op % 8 == 7 {
            let _ = self.e.post_recv(
                self.dev,
                q,
                &RecvWr {
                    wr_id: 1,
                    sgl: &sge,
                },
                self.now,
            );
            return;
        }
        let atomic_sge = [Sge { len: 8, ..sge[0] }];
        let (sop, sgl) = match op % 8 {
            0 => (SendOp::Send, &sge[..]),
            1 => (SendOp::SendImm(7), &sge[..]),
            2 => (SendOp::Write(remote), &sge[..]),
            3 => (SendOp::WriteImm(remote, 9), &sge[..]),
            4 => (SendOp::Read(remote), &sge[..]),
            5 => (
                SendOp::AtomicCas {
                    remote,
                    compare: 1,
                    swap: 2,
                },
                &atomic_sge[..],
            ),
            _ => (SendOp::AtomicFa { remote, add: 3 }, &atomic_sge[..]),
        };
        let mut wr = SendWr::new(u64::from(op), sop).sgl(sgl);
        if qp % 3 == 2 {
            wr.ud = Some(UdDest {
                ah: self.ah,
                remote_qpn: Qpn(PEER_QPN),
                remote_qkey: 0x1111,
            });
        }
        let _ = self.e.post_send(self.dev, q, &wr, self.now);
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let mut w = World::new();
    for op in ops {
        w.apply(op);
    }
    // Everything held for the data path goes back.
    w.now += Duration::from_secs(3600);
    w.e.poll(w.now);
    w.e.expire_held(w.now);
    w.e.take_released(drop);
}

fn fields(op: wire::Op, qp: u8, len: Option<u32>) -> Fields {
    Fields {
        op: op.into(),
        flags: 0,
        status: 0,
        qp,
        raw_qpn: 0,
        src_qpn: PEER_QPN,
        req_id: 1,
        our_rkey: true,
        raw_rkey: 0,
        addr: 0x100,
        len,
        imm: 0,
        operand0: 0,
        operand1: 0,
        total: None,
        offset: 0,
    }
}

/// Seeds: a peer's requests of every opcode, answers to this engine's
/// requests, and a two-piece write.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    use wire::Op as W;
    let data = Bytes((0..64u8).collect());
    vec![
        (
            "peer-requests",
            vec![
                Op::Post {
                    qp: 0,
                    op: 7,
                    len: 128,
                    at: 0x800,
                },
                Op::Msg {
                    from: 0,
                    f: fields(W::Send, 0, None),
                    payload: data.clone(),
                },
                Op::Msg {
                    from: 0,
                    f: fields(W::Write, 0, None),
                    payload: data.clone(),
                },
                Op::Msg {
                    from: 0,
                    f: fields(W::ReadReq, 0, Some(64)),
                    payload: Bytes::default(),
                },
                Op::Msg {
                    from: 0,
                    f: Fields {
                        operand0: 5,
                        ..fields(W::AtomicFa, 0, Some(8))
                    },
                    payload: Bytes::default(),
                },
                Op::Msg {
                    from: 0,
                    f: Fields {
                        operand0: 0,
                        operand1: 9,
                        ..fields(W::AtomicCas, 0, Some(8))
                    },
                    payload: Bytes::default(),
                },
            ],
        ),
        (
            "answers",
            vec![
                Op::Post {
                    qp: 0,
                    op: 0,
                    len: 32,
                    at: 0,
                },
                Op::Reply {
                    which: 0,
                    op: W::Ack.into(),
                    status: 0,
                    payload: Bytes::default(),
                },
                Op::Post {
                    qp: 0,
                    op: 4,
                    len: 64,
                    at: 0x400,
                },
                Op::Reply {
                    which: 1,
                    op: W::ReadResp.into(),
                    status: 0,
                    payload: data.clone(),
                },
                Op::Post {
                    qp: 0,
                    op: 6,
                    len: 8,
                    at: 0x10,
                },
                Op::Advance { ms: 500 },
            ],
        ),
        (
            "pieces-ud",
            vec![
                Op::Msg {
                    from: 0,
                    f: Fields {
                        total: Some(128),
                        ..fields(W::Write, 0, None)
                    },
                    payload: data.clone(),
                },
                Op::Msg {
                    from: 0,
                    f: Fields {
                        total: Some(128),
                        offset: 64,
                        addr: 0x140,
                        ..fields(W::Write, 0, None)
                    },
                    payload: data.clone(),
                },
                Op::Post {
                    qp: 2,
                    op: 7,
                    len: 256,
                    at: 0x1000,
                },
                Op::Msg {
                    from: 1,
                    f: Fields {
                        flags: wire::flags::DATAGRAM,
                        operand0: 0x1111,
                        ..fields(W::Send, 2, None)
                    },
                    payload: data,
                },
                Op::Post {
                    qp: 2,
                    op: 0,
                    len: 16,
                    at: 0,
                },
            ],
        ),
    ]
}
