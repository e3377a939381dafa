//! Requests between two engines on different nodes, carried by an in-memory
//! carrier the test pumps: every opcode, pieces larger than one message,
//! receiver-not-ready holds, timeouts, flow control, flushes and malformed
//! messages. The TCP mesh's own tests run the same path across processes.
#![allow(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ernic_core::*;

mod common;
use common::{ra, sge};

#[derive(Default)]
struct Net {
    /// (to, from, tag, reply, bytes)
    queue: VecDeque<(u16, u16, u64, bool, Vec<u8>)>,
    owners: HashMap<Gid, u16>,
    /// Most request messages queued at once (replies always fit).
    room: usize,
    down: bool,
    /// Each node's memory as "a process on this host", (base, length): what
    /// a peer's reference may name.
    arenas: HashMap<u16, (u64, usize)>,
    /// Whether each node tells its requests that the peer reads its memory.
    refs_out: bool,
    /// Whether a node accepts to read its peer's memory (has it proved
    /// who it is).
    refs_in: bool,
}

struct Carrier {
    me: u16,
    net: Arc<Mutex<Net>>,
}

impl Remote for Carrier {
    fn owner(&self, gid: &Gid) -> Option<NodeId> {
        let n = self.net.lock().unwrap();
        n.owners
            .get(gid)
            .filter(|&&o| o != self.me)
            .map(|&o| NodeId(o))
    }

    fn send(&mut self, to: NodeId, out: Outgoing<'_>) -> Result<(), SendError> {
        let mut n = self.net.lock().unwrap();
        if n.down {
            return Err(SendError::NoRoute);
        }
        let requests = n.queue.iter().filter(|m| !m.3).count();
        if !out.reply && requests >= n.room {
            return Err(SendError::Busy);
        }
        let mut buf = vec![0u8; out.len];
        (out.fill)(&mut buf);
        n.queue.push_back((to.0, self.me, out.tag, out.reply, buf));
        Ok(())
    }

    fn reads_from_me(&self, _to: NodeId) -> bool {
        self.net.lock().unwrap().refs_out
    }

    /// As `process_vm_readv` on a proved peer: runs outside the peer's
    /// memory fail.
    unsafe fn read_peer(&self, from: NodeId, runs: &[PeerRun]) -> Result<(), PeerReadError> {
        let n = self.net.lock().unwrap();
        if !n.refs_in {
            return Err(PeerReadError::NotProved);
        }
        let &(base, len) = n.arenas.get(&from.0).ok_or(PeerReadError::Gone)?;
        for r in runs {
            let inside = r.remote >= base
                && r.remote
                    .checked_add(r.len as u64)
                    .is_some_and(|end| end <= base + len as u64);
            if !inside {
                return Err(PeerReadError::Fault);
            }
            // SAFETY: the source lies in the peer's arena (checked above),
            // alive for the test; the caller promises `local` for `len`
            // writes. The two arenas are distinct allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(r.remote as *const u8, r.local.as_ptr(), r.len)
            };
        }
        Ok(())
    }

    fn cancel(&mut self, tag: u64) {
        let me = self.me;
        self.net
            .lock()
            .unwrap()
            .queue
            .retain(|m| !(m.1 == me && m.2 == tag && !m.3));
    }
}

struct Node {
    e: Engine<ProcessMemory>,
    arena: Box<[u8]>,
    dev: DeviceId,
    gid: Gid,
    pd: PdId,
    cq: CqId,
    done: Vec<CqEvent>,
}

const ARENA: usize = 40 << 20;

impl Node {
    fn new(id: u16, gid: &str, net: &Arc<Mutex<Net>>, cfg: EngineConfig) -> Node {
        let mut arena = vec![0u8; ARENA].into_boxed_slice();
        let mut e = Engine::new(cfg, ProcessMemory::new());
        // SAFETY: the arena lives in the node beside the engine and outlives its use.
        unsafe {
            e.memory_mut()
                .add(NonNull::new(arena.as_mut_ptr()).unwrap(), ARENA)
        };
        let gid: Gid = gid.parse().unwrap();
        let dev = e.add_device(vec![gid]);
        net.lock().unwrap().owners.insert(gid, id);
        net.lock()
            .unwrap()
            .arenas
            .insert(id, (arena.as_ptr() as u64, ARENA));
        e.set_remote(Box::new(Carrier {
            me: id,
            net: net.clone(),
        }));
        let pd = e.alloc_pd(dev).unwrap();
        let cq = e.create_cq(dev, None, 1 << 16).unwrap();
        Node {
            e,
            arena,
            dev,
            gid,
            pd,
            cq,
            done: Vec::new(),
        }
    }

    fn addr(&self, off: usize) -> u64 {
        self.arena.as_ptr() as u64 + off as u64
    }

    fn mr(&mut self, off: usize, len: usize) -> u32 {
        let a = self.addr(off);
        self.e
            .reg_mr(
                self.dev,
                MrSpec::contiguous(self.pd, a, len as u64, Access::ALL, a),
            )
            .unwrap()
    }

    fn qp(&mut self, t: QpType) -> Qpn {
        let caps = QpCaps {
            max_send_wr: 256,
            max_recv_wr: 256,
            max_send_sge: 4,
            max_recv_sge: 4,
            max_inline_data: 64,
        };
        let init = QpInit {
            qp_type: t,
            pd: self.pd,
            send_cq: self.cq,
            recv_cq: self.cq,
            srq: None,
            caps,
            sq_sig_all: true,
            qpn: None,
        };
        self.e.create_qp(self.dev, &init).unwrap()
    }

    fn connect(&mut self, q: Qpn, dest: Option<(Gid, Qpn)>, qkey: Option<u32>, now: Instant) {
        common::to_rts(&mut self.e, self.dev, q, dest, qkey, now);
    }

    fn collect(&mut self) {
        let d = &mut self.done;
        self.e.drain_completions(|c| d.push(*c));
    }

    fn take(&mut self, qpn: Qpn, wr_id: u64) -> Completion {
        self.collect();
        let i = self
            .done
            .iter()
            .position(|c| c.completion.qpn == qpn && c.completion.wr_id == wr_id);
        let i = i.unwrap_or_else(|| panic!("no completion for {qpn} wr {wr_id}: {:?}", self.done));
        self.done.remove(i).completion
    }

    fn none(&mut self, qpn: Qpn, wr_id: u64) -> bool {
        self.collect();
        !self
            .done
            .iter()
            .any(|c| c.completion.qpn == qpn && c.completion.wr_id == wr_id)
    }

    fn bytes(&self, off: usize, len: usize) -> &[u8] {
        &self.arena[off..off + len]
    }
}

struct World {
    net: Arc<Mutex<Net>>,
    a: Node,
    b: Node,
    now: Instant,
}

impl World {
    fn new() -> World {
        World::with(EngineConfig {
            rnr_timeout: Duration::from_millis(100),
            request_timeout: Duration::from_secs(1),
            ..EngineConfig::default()
        })
    }

    fn with(cfg: EngineConfig) -> World {
        World::with_each(cfg.clone(), cfg)
    }

    /// Nodes a and b with configurations of their own.
    fn with_each(ca: EngineConfig, cb: EngineConfig) -> World {
        let net = Arc::new(Mutex::new(Net {
            room: usize::MAX,
            ..Net::default()
        }));
        let a = Node::new(1, "10.1.0.1", &net, ca);
        let b = Node::new(2, "10.1.0.2", &net, cb);
        World {
            net,
            a,
            b,
            now: Instant::now(),
        }
    }

    /// Delivers queued messages until none are left (at most `max`).
    fn pump(&mut self, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some((to, from, _, _, buf)) = self.net.lock().unwrap().queue.pop_front() else {
                break;
            };
            let node = if to == 1 { &mut self.a } else { &mut self.b };
            node.e.apply_remote(NodeId(from), buf, 0, self.now);
            node.e.take_released(drop);
            n += 1;
        }
        n
    }

    fn pair(&mut self, t: QpType) -> (Qpn, Qpn) {
        let (qa, qb) = (self.a.qp(t), self.b.qp(t));
        let (ga, gb, now) = (self.a.gid, self.b.gid, self.now);
        self.a.connect(qa, Some((gb, qb)), None, now);
        self.b.connect(qb, Some((ga, qa)), None, now);
        (qa, qb)
    }

    fn post(&mut self, qa: Qpn, wr: &SendWr<'_>) {
        let now = self.now;
        self.a.e.post_send(self.a.dev, qa, wr, now).unwrap();
    }

    fn recv(&mut self, qb: Qpn, wr_id: u64, sgl: &[Sge]) {
        let now = self.now;
        self.b
            .e
            .post_recv(self.b.dev, qb, &RecvWr { wr_id, sgl }, now)
            .unwrap();
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        let now = self.now;
        self.a.e.poll(now);
        self.b.e.poll(now);
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2654435761)
                .wrapping_add(seed as u32) as u8
        })
        .collect()
}

#[test]
fn every_opcode_crosses_nodes_and_completes_only_when_answered() {
    let mut w = World::new();
    let (qa, qb) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 1 << 20);
    let kb = w.b.mr(0, 1 << 20);
    let data = pattern(5000, 3);
    w.a.arena[..5000].copy_from_slice(&data);
    // WRITE: no completion until the ACK comes back.
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(100), kb))).sgl(&[sge(w.a.addr(0), 5000, ka)]),
    );
    assert!(
        w.a.none(qa, 1),
        "a remote WRITE completes only when answered"
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert_eq!(w.b.bytes(100, 5000), &data[..]);
    // SEND_IMM into a posted receive.
    w.recv(qb, 7, &[sge(w.b.addr(20000), 8000, kb)]);
    w.post(
        qa,
        &SendWr::new(2, SendOp::SendImm(99)).sgl(&[sge(w.a.addr(0), 3000, ka)]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::Success);
    let r = w.b.take(qb, 7);
    assert_eq!(
        (r.byte_len, r.imm, r.opcode),
        (3000, Some(99), WcOpcode::Recv)
    );
    assert_eq!(w.b.bytes(20000, 3000), &data[..3000]);
    // WRITE_IMM.
    w.recv(qb, 8, &[]);
    w.post(
        qa,
        &SendWr::new(3, SendOp::WriteImm(ra(w.b.addr(40000), kb), 5)).sgl(&[sge(
            w.a.addr(0),
            100,
            ka,
        )]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 3).status, WcStatus::Success);
    assert_eq!(w.b.take(qb, 8).opcode, WcOpcode::RecvRdmaWithImm);
    // READ back what the WRITE put there.
    w.post(
        qa,
        &SendWr::new(4, SendOp::Read(ra(w.b.addr(100), kb))).sgl(&[sge(
            w.a.addr(200_000),
            5000,
            ka,
        )]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 4).status, WcStatus::Success);
    assert_eq!(w.a.bytes(200_000, 5000), &data[..]);
    // Atomics.
    w.b.arena[64..72].copy_from_slice(&40u64.to_ne_bytes());
    w.post(
        qa,
        &SendWr::new(
            5,
            SendOp::AtomicFa {
                remote: ra(w.b.addr(64), kb),
                add: 2,
            },
        )
        .sgl(&[sge(w.a.addr(300_000), 8, ka)]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 5).status, WcStatus::Success);
    assert_eq!(w.a.bytes(300_000, 8), 40u64.to_ne_bytes());
    w.post(
        qa,
        &SendWr::new(
            6,
            SendOp::AtomicCas {
                remote: ra(w.b.addr(64), kb),
                compare: 42,
                swap: 7,
            },
        )
        .sgl(&[sge(w.a.addr(300_008), 8, ka)]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 6).status, WcStatus::Success);
    assert_eq!(w.b.bytes(64, 8), 7u64.to_ne_bytes());
    assert_eq!(w.a.bytes(300_008, 8), 42u64.to_ne_bytes());
}

#[test]
fn requests_larger_than_one_message_go_in_pieces_and_complete_once() {
    // Pieces as large as a wire message carries (16 MiB).
    let mut w = World::with(EngineConfig {
        max_piece: ernic_core::wire::MAX_PAYLOAD as u32,
        rnr_timeout: Duration::from_millis(100),
        request_timeout: Duration::from_secs(1),
        ..EngineConfig::default()
    });
    let (qa, qb) = w.pair(QpType::Rc);
    let n = 16 << 20 | 12345; // a little over 16 MiB: two messages
    let ka = w.a.mr(0, 36 << 20);
    let kb = w.b.mr(0, 36 << 20);
    let data = pattern(n, 9);
    w.a.arena[..n].copy_from_slice(&data);
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(w.a.addr(0), n as u32, ka)]),
    );
    assert_eq!(w.net.lock().unwrap().queue.len(), 2, "two pieces");
    w.pump(100);
    let c = w.a.take(qa, 1);
    assert_eq!((c.status, c.byte_len), (WcStatus::Success, n as u32));
    assert!(w.a.none(qa, 1), "completed once");
    assert!(w.b.bytes(0, n) == &data[..]);
    // A SEND of the same size lands in one receive.
    w.recv(qb, 2, &[sge(w.b.addr(18 << 20), 17 << 20, kb)]);
    w.post(
        qa,
        &SendWr::new(2, SendOp::Send).sgl(&[sge(w.a.addr(0), n as u32, ka)]),
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::Success);
    let r = w.b.take(qb, 2);
    assert_eq!(r.byte_len, n as u32);
    assert!(w.b.none(qb, 2), "one receive completion");
    assert!(w.b.bytes(18 << 20, n) == &data[..]);
    // And a READ of it comes back whole.
    w.post(
        qa,
        &SendWr::new(3, SendOp::Read(ra(w.b.addr(0), kb))).sgl(&[sge(
            w.a.addr(18 << 20),
            n as u32,
            ka,
        )]),
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 3).status, WcStatus::Success);
    assert!(w.a.bytes(18 << 20, n) == &data[..]);
}

/// Connects an RC pair and posts, as request 1, a WRITE of `n` bytes of a
/// pattern from A's arena to the start of B's. Returns A's QP and the bytes.
fn post_write(w: &mut World, n: usize, seed: u8) -> (Qpn, Vec<u8>) {
    let (qa, _) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, n);
    let kb = w.b.mr(0, n);
    let data = pattern(n, seed);
    w.a.arena[..n].copy_from_slice(&data);
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(w.a.addr(0), n as u32, ka)]),
    );
    (qa, data)
}

#[test]
fn the_default_piece_splits_a_large_write_into_that_many_messages() {
    let mut w = World::new();
    let piece = EngineConfig::default().max_piece as usize;
    let n = 3 * piece + 5;
    let (qa, data) = post_write(&mut w, n, 3);
    let lens: Vec<usize> = w
        .net
        .lock()
        .unwrap()
        .queue
        .iter()
        .map(|m| m.4.len())
        .collect();
    assert_eq!(lens.len(), 4, "three whole pieces and the rest");
    assert!(
        lens.iter()
            .all(|&l| l <= ernic_core::wire::HEADER_LEN + piece)
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert!(w.a.none(qa, 1), "completed once");
    assert!(w.b.bytes(0, n) == &data[..]);
}

#[test]
fn rkeys_are_resolved_by_the_responder_and_key_0_is_refused() {
    let mut w = World::new();
    let (qa, _) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 4096);
    let _kb = w.b.mr(0, 4096);
    // The requester's own key means nothing at the responder.
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.a.addr(0), ka))).sgl(&[sge(w.a.addr(0), 8, ka)]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::RemAccessErr);
    let (qa, _) = w.pair(QpType::Rc);
    w.post(
        qa,
        &SendWr::new(2, SendOp::Write(ra(w.b.addr(0), 0))).sgl(&[sge(w.a.addr(0), 8, ka)]),
    );
    w.pump(10);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::RemAccessErr);
    assert_eq!(w.b.bytes(0, 8), &[0; 8]);
}

/// Sets the requester's `rnr_retry` on a's QP and the responder's
/// `min_rnr_timer` on b's.
fn set_rnr(w: &mut World, qa: Qpn, qb: Qpn, retry: u8, timer: u8) {
    let now = w.now;
    let ra = QpAttr {
        rnr_retry: Some(retry),
        ..QpAttr::default()
    };
    w.a.e.modify_qp(w.a.dev, qa, &ra, now).unwrap();
    let rb = QpAttr {
        min_rnr_timer: Some(timer),
        ..QpAttr::default()
    };
    w.b.e.modify_qp(w.b.dev, qb, &rb, now).unwrap();
}

#[test]
fn the_requesters_rnr_retry_and_the_responders_timer_bound_a_held_send() {
    let mut w = World::new();
    let ka = w.a.mr(0, 4096);
    let kb = w.b.mr(0, 4096);
    let one = |w: &mut World, qa: Qpn, id: u64| {
        w.post(
            qa,
            &SendWr::new(id, SendOp::Send).sgl(&[sge(w.a.addr(0), 1, ka)]),
        );
        w.pump(10);
    };
    // rnr_retry 0: refused at once, nothing held.
    let (qa, qb) = w.pair(QpType::Rc);
    set_rnr(&mut w, qa, qb, 0, 14);
    one(&mut w, qa, 1);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::RnrRetryExcErr);
    assert!(!w.b.e.has_held());
    // Two retries of timer 22 (20.48 ms): held 40.96 ms, not the
    // responder's 100 ms default.
    let (qa, qb) = w.pair(QpType::Rc);
    set_rnr(&mut w, qa, qb, 2, 22);
    one(&mut w, qa, 2);
    assert!(w.b.e.has_held());
    w.advance(Duration::from_micros(40_950));
    w.pump(10);
    assert!(w.a.none(qa, 2), "still held");
    w.advance(Duration::from_micros(10));
    w.pump(10);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::RnrRetryExcErr);
    // 7: held past the default; a receive delivers it.
    let (qa, qb) = w.pair(QpType::Rc);
    set_rnr(&mut w, qa, qb, 7, 1);
    one(&mut w, qa, 3);
    w.advance(Duration::from_millis(400));
    w.pump(10);
    assert!(w.a.none(qa, 3) && w.b.e.has_held());
    w.recv(qb, 30, &[sge(w.b.addr(0), 1, kb)]);
    w.pump(10);
    assert_eq!(w.a.take(qa, 3).status, WcStatus::Success);
    // But never past the requester's patience (a 1 s request timeout
    // here): refused at 0.9 s, so it cannot land after the requester gave
    // up on it.
    one(&mut w, qa, 4);
    w.advance(Duration::from_millis(899));
    w.pump(10);
    assert!(w.a.none(qa, 4));
    w.advance(Duration::from_millis(1));
    w.pump(10);
    assert_eq!(w.a.take(qa, 4).status, WcStatus::RnrRetryExcErr);
}

#[test]
fn rnr_both_ways_holds_then_delivers_in_order_or_fails_after_the_timeout() {
    let mut w = World::new();
    let (qa, qb) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 4096);
    let kb = w.b.mr(0, 4096);
    w.a.arena[..2].copy_from_slice(b"12");
    w.post(
        qa,
        &SendWr::new(1, SendOp::Send).sgl(&[sge(w.a.addr(0), 1, ka)]),
    );
    w.post(
        qa,
        &SendWr::new(2, SendOp::Send).sgl(&[sge(w.a.addr(1), 1, ka)]),
    );
    w.pump(10);
    assert!(w.a.none(qa, 1) && w.a.none(qa, 2), "held at the responder");
    assert!(w.b.e.has_held());
    w.advance(Duration::from_millis(50));
    w.recv(qb, 10, &[sge(w.b.addr(0), 1, kb)]);
    w.recv(qb, 11, &[sge(w.b.addr(1), 1, kb)]);
    w.pump(10);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::Success);
    assert_eq!(w.b.bytes(0, 2), b"12", "in order");
    assert!(!w.b.e.has_held());
    // No receive for longer than the RNR timeout: RNR retry exceeded.
    w.post(
        qa,
        &SendWr::new(3, SendOp::Send).sgl(&[sge(w.a.addr(0), 1, ka)]),
    );
    w.pump(10);
    w.advance(Duration::from_millis(150));
    w.pump(10);
    assert_eq!(w.a.take(qa, 3).status, WcStatus::RnrRetryExcErr);
    assert_eq!(w.a.e.query_qp(w.a.dev, qa).unwrap().state, QpState::Err);
    // And the other way round.
    let (qa, qb) = w.pair(QpType::Rc);
    let now = w.now;
    w.b.e
        .post_send(
            w.b.dev,
            qb,
            &SendWr::new(4, SendOp::Send).inline(b"back"),
            now,
        )
        .unwrap();
    w.pump(10);
    assert!(w.a.e.has_held());
    w.a.e
        .post_recv(
            w.a.dev,
            qa,
            &RecvWr {
                wr_id: 12,
                sgl: &[sge(w.a.addr(100), 8, ka)],
            },
            now,
        )
        .unwrap();
    w.pump(10);
    assert_eq!(w.b.take(qb, 4).status, WcStatus::Success);
    assert_eq!(w.a.bytes(100, 4), b"back");
}

#[test]
fn a_lost_peer_costs_retry_exceeded_after_the_timeout_or_at_once_with_no_route() {
    let mut w = World::new();
    let (qa, _) = w.pair(QpType::Rc);
    w.post(qa, &SendWr::new(1, SendOp::Send).inline(b"x"));
    // The message vanishes (the peer died after accepting it).
    w.net.lock().unwrap().queue.clear();
    w.advance(Duration::from_millis(999));
    assert!(w.a.none(qa, 1));
    w.advance(Duration::from_millis(1));
    assert_eq!(w.a.take(qa, 1).status, WcStatus::RetryExcErr);
    assert_eq!(w.a.e.remote_stats().timeouts, 1);
    let (qa, _) = w.pair(QpType::Rc);
    w.net.lock().unwrap().down = true;
    w.post(qa, &SendWr::new(2, SendOp::Send).inline(b"x"));
    assert_eq!(
        w.a.take(qa, 2).status,
        WcStatus::RetryExcErr,
        "no route: at once"
    );
}

#[test]
fn the_timers_of_answered_requests_do_not_pile_up_and_a_lost_one_still_times_out() {
    let mut w = World::new();
    // One request whose message vanishes: its timer must survive the sweeps.
    let (lost, _) = w.pair(QpType::Rc);
    w.post(lost, &SendWr::new(1, SendOp::Write(ra(0, 0))).inline(b"x"));
    w.net.lock().unwrap().queue.clear();
    let (qa, _) = w.pair(QpType::Rc);
    // Then many that are answered at once, all within one timeout: each
    // left a timer behind before, which fell due only a second later.
    let kb = w.b.mr(0, 4096);
    for i in 0..10_000u64 {
        w.post(
            qa,
            &SendWr::new(2 + i, SendOp::Write(ra(w.b.addr(0), kb))).inline(b"y"),
        );
        w.pump(100);
        assert_eq!(w.a.take(qa, 2 + i).status, WcStatus::Success);
        assert!(
            // Two requests pending at most (the lost one and the next):
            // twice that and 64 more.
            w.a.e.remote_timers_held() <= 2 * 2 + 64,
            "timers held after {} answered requests: {}",
            i + 1,
            w.a.e.remote_timers_held()
        );
    }
    w.advance(Duration::from_secs(1));
    assert_eq!(w.a.take(lost, 1).status, WcStatus::RetryExcErr);
    assert_eq!(w.a.e.remote_stats().timeouts, 1);
    assert_eq!(w.a.e.remote_timers_held(), 0);
}

#[test]
fn a_full_connection_stops_the_send_queue_which_resumes_in_order() {
    let mut w = World::new();
    let (qa, _) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 4096);
    let kb = w.b.mr(0, 4096);
    w.net.lock().unwrap().room = 2;
    for i in 0..5u8 {
        w.a.arena[i as usize] = b'a' + i;
        w.post(
            qa,
            &SendWr::new(u64::from(i), SendOp::Write(ra(w.b.addr(i as usize), kb))).sgl(&[sge(
                w.a.addr(i as usize),
                1,
                ka,
            )]),
        );
    }
    assert_eq!(
        w.net.lock().unwrap().queue.len(),
        2,
        "the rest wait on the send queue"
    );
    assert!(w.a.e.has_timers());
    // Room appears without any message arriving (the connection drains),
    // so the stalled queue is due at once, not at the request timeout.
    let due =
        w.a.e
            .next_deadline(w.now)
            .expect("a stalled queue has a deadline");
    assert!(due <= Instant::now(), "due in {:?}", due - Instant::now());
    for _ in 0..5 {
        w.pump(100);
        w.advance(Duration::from_millis(1));
    }
    for i in 0..5 {
        assert_eq!(w.a.take(qa, i).status, WcStatus::Success);
    }
    assert_eq!(w.b.bytes(0, 5), b"abcde");
}

#[test]
fn flushing_takes_back_what_is_queued_and_ignores_late_answers() {
    let mut w = World::new();
    let (qa, _) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 4096);
    let kb = w.b.mr(0, 4096);
    w.a.arena[..4].copy_from_slice(b"zzzz");
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(w.a.addr(0), 4, ka)]),
    );
    w.post(
        qa,
        &SendWr::new(2, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(w.a.addr(0), 4, ka)]),
    );
    // Deliver the first, keep its answer; the second is still queued.
    let first = w.net.lock().unwrap().queue.pop_front().unwrap();
    w.b.e.apply_remote(NodeId(1), first.4, 0, w.now);
    let now = w.now;
    w.a.e
        .modify_qp(
            w.a.dev,
            qa,
            &QpAttr {
                state: Some(QpState::Err),
                ..QpAttr::default()
            },
            now,
        )
        .unwrap();
    assert_eq!(w.a.take(qa, 1).status, WcStatus::WrFlushErr);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::WrFlushErr);
    let q = w
        .net
        .lock()
        .unwrap()
        .queue
        .iter()
        .filter(|m| m.0 == 2)
        .count();
    assert_eq!(q, 0, "the queued WRITE was taken back");
    w.pump(10); // the first WRITE's answer arrives late
    assert!(w.a.none(qa, 1), "no second completion");
    assert_eq!(w.a.e.remote_stats().stale_replies, 1);
}

#[test]
fn a_recreated_qp_never_gets_its_predecessors_completions() {
    let mut w = World::new();
    let (qa, qb) = w.pair(QpType::Rc);
    let kb = w.b.mr(0, 4096);
    w.recv(qb, 5, &[sge(w.b.addr(0), 64, kb)]);
    w.post(qa, &SendWr::new(1, SendOp::Send).inline(b"x"));
    w.a.e.destroy_qp(w.a.dev, qa).unwrap();
    let (qa2, _) = w.pair(QpType::Rc);
    assert_eq!(qa2, qa, "the same QP number again");
    w.pump(10);
    assert_eq!(
        w.b.take(qb, 5).status,
        WcStatus::Success,
        "a destroyed QP's request still goes out"
    );
    assert!(
        w.a.none(qa2, 1),
        "its answer does not complete the new QP's request"
    );
    assert_eq!(w.a.e.remote_stats().stale_replies, 1);
}

#[test]
fn datagrams_cross_nodes_with_their_grh_and_complete_at_once() {
    let mut w = World::new();
    let (qa, qb) = (w.a.qp(QpType::Ud), w.b.qp(QpType::Ud));
    let now = w.now;
    w.a.connect(qa, None, Some(0x77), now);
    w.b.connect(qb, None, Some(0x77), now);
    let kb = w.b.mr(0, 4096);
    let gb = w.b.gid;
    let ah = w.a.e.create_ah(w.a.dev, None, w.a.pd, gb).unwrap();
    w.recv(qb, 1, &[sge(w.b.addr(0), 100, kb)]);
    w.post(
        qa,
        &SendWr::new(1, SendOp::SendImm(8))
            .inline(b"over the mesh")
            .to(UdDest {
                ah,
                remote_qpn: qb,
                remote_qkey: 0x77,
            }),
    );
    assert_eq!(
        w.a.take(qa, 1).status,
        WcStatus::Success,
        "completes before the peer has it"
    );
    w.pump(10);
    let r = w.b.take(qb, 1);
    assert_eq!(
        (r.byte_len, r.src_qpn, r.imm, r.grh),
        (40 + 13, qa, Some(8), true)
    );
    let g = grh::Repr::parse(&grh::Packet::new_checked(w.b.bytes(0, 40)).unwrap()).unwrap();
    assert_eq!((g.sgid, g.dgid), (w.a.gid, gb));
    assert_eq!(w.b.bytes(40, 13), b"over the mesh");
    // A wrong Q_Key is dropped at the far end.
    w.recv(qb, 2, &[sge(w.b.addr(200), 100, kb)]);
    w.post(
        qa,
        &SendWr::new(2, SendOp::Send).inline(b"x").to(UdDest {
            ah,
            remote_qpn: qb,
            remote_qkey: 0x78,
        }),
    );
    w.pump(10);
    assert!(w.b.none(qb, 2));
}

/// Hands node B a message from node A and returns B's answer.
fn answer_to(w: &mut World, msg: Vec<u8>) -> wire::Repr {
    let now = w.now;
    w.b.e.apply_remote(NodeId(1), msg, 0, now);
    let m = w.net.lock().unwrap().queue.pop_front().expect("an answer");
    wire::Repr::parse(&wire::Packet::new_checked(&m.4[..]).unwrap()).unwrap()
}

#[test]
fn malformed_and_unknown_messages_are_dropped_without_harm() {
    let mut w = World::new();
    let now = w.now;
    w.b.e.apply_remote(NodeId(1), vec![9, 9, 1, 2, 3], 2, now);
    let mut bad = vec![0u8; wire::HEADER_LEN + 4];
    wire::Repr {
        len: 9,
        total: 9,
        ..wire::Repr::new(wire::Op::Write)
    }
    .emit(&mut bad);
    w.b.e.apply_remote(NodeId(1), bad, 0, now);
    let mut unk = vec![0u8; wire::HEADER_LEN];
    unk[0] = 200;
    w.b.e.apply_remote(NodeId(1), unk, 0, now);
    assert_eq!(w.b.e.remote_stats().malformed, 3);
    let mut released = 0;
    w.b.e.take_released(|_| released += 1);
    assert_eq!(released, 3, "every buffer comes back");
    // A request for a QP that does not exist is answered, not ignored.
    let (qa, _) = w.pair(QpType::Rc);
    let mut req = vec![0u8; wire::HEADER_LEN];
    wire::Repr {
        src_qpn: qa,
        dst_qpn: Qpn(999),
        req_id: 42,
        dgid: w.b.gid,
        sgid: w.a.gid,
        flags: wire::flags::LAST,
        ..wire::Repr::new(wire::Op::Send)
    }
    .emit(&mut req);
    let r = answer_to(&mut w, req);
    assert_eq!(
        (r.op, r.status, r.req_id),
        (wire::Op::Ack, WcStatus::RetryExcErr, 42)
    );
}

#[test]
fn a_node_asks_a_peer_for_at_most_32_mib_of_read_replies_at_once() {
    let mut w = World::new();
    let (qa, _) = w.pair(QpType::Rc);
    const N: usize = 18 << 20; // one READ: 18 pieces of 1 MiB
    let ka = w.a.mr(0, 2 * N);
    let kb = w.b.mr(0, N);
    let data = pattern(N, 4);
    w.b.arena[..N].copy_from_slice(&data);
    for i in 0..2u64 {
        let off = i as usize * N;
        w.post(
            qa,
            &SendWr::new(i, SendOp::Read(ra(w.b.addr(0), kb))).sgl(&[sge(
                w.a.addr(off),
                N as u32,
                ka,
            )]),
        );
    }
    let asked: usize = w
        .net
        .lock()
        .unwrap()
        .queue
        .iter()
        .map(|m| {
            let r = wire::Repr::parse(&wire::Packet::new_checked(&m.4[..]).unwrap()).unwrap();
            assert_eq!(r.op, wire::Op::ReadReq);
            r.len as usize
        })
        .sum();
    assert_eq!(
        asked,
        32 << 20,
        "the first READ's 18 MiB and 14 of the second's fill the 32 MiB; the rest waits"
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 0).status, WcStatus::Success);
    w.pump(100);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert!(w.a.bytes(0, N) == &data[..] && w.a.bytes(N, N) == &data[..]);
}

#[test]
fn held_sends_are_given_up_at_once_when_they_keep_a_full_queue_waiting() {
    let mut w = World::new();
    let (qa, _) = w.pair(QpType::Rc);
    w.post(qa, &SendWr::new(1, SendOp::Send).inline(b"x"));
    w.pump(10);
    assert!(w.b.e.has_held());
    let now = w.now;
    w.b.e.expire_held(now); // what the device loop does after half a second of starvation
    w.pump(10);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::RnrRetryExcErr);
    assert!(!w.b.e.has_held());
}

/// The requests that reached the wire, as (flags, bytes).
fn on_the_wire(w: &World) -> Vec<(u8, usize)> {
    w.net
        .lock()
        .unwrap()
        .queue
        .iter()
        .map(|m| (m.4[1], m.4.len()))
        .collect()
}

#[test]
fn large_payloads_to_a_peer_that_reads_this_memory_go_by_reference() {
    // By-reference pieces of 1 MiB, to see a request split and its runs.
    let mut w = World::with(EngineConfig {
        max_ref_piece: 1 << 20,
        rnr_timeout: Duration::from_millis(100),
        request_timeout: Duration::from_secs(1),
        ..EngineConfig::default()
    });
    {
        let mut n = w.net.lock().unwrap();
        (n.refs_out, n.refs_in) = (true, true);
    }
    let (qa, qb) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 8 << 20);
    let kb = w.b.mr(0, 8 << 20);
    let n = (3 << 20) + 5;
    let data = pattern(n, 21);
    w.a.arena[..n].copy_from_slice(&data);

    // A WRITE of three pieces and a bit: four messages, each naming its
    // bytes, none carrying them.
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(w.a.addr(0), n as u32, ka)]),
    );
    let sent = on_the_wire(&w);
    assert_eq!(sent.len(), 4);
    for (flags, len) in &sent[..3] {
        assert_ne!(flags & wire::flags::BY_REF, 0);
        assert_eq!(*len, wire::HEADER_LEN + wire::REF_RUN_LEN, "one run each");
    }
    // The last piece (5 bytes) is under the threshold: it carries them.
    assert_eq!(sent[3], (wire::flags::LAST, wire::HEADER_LEN + 5));
    w.pump(100);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert!(w.b.bytes(0, n) == &data[..]);
    assert_eq!(w.a.e.remote_stats().sent_by_ref, 3);
    assert_eq!(w.b.e.remote_stats().read_by_ref, 3 << 20);

    // A SEND gathered from two places lands scattered over two; its second
    // piece names two runs.
    let half = 1 << 20;
    let (g1, g2) = (3 << 19, 1 << 19);
    w.recv(
        qb,
        2,
        &[
            sge(w.b.addr(4 << 20), 300_000, kb),
            sge(w.b.addr(6 << 20), 2 << 20, kb),
        ],
    );
    w.post(
        qa,
        &SendWr::new(2, SendOp::Send).sgl(&[
            sge(w.a.addr(0), g1 as u32, ka),
            sge(w.a.addr(2 << 20), g2 as u32, ka),
        ]),
    );
    let sent: Vec<usize> = on_the_wire(&w).iter().map(|m| m.1).collect();
    let runs = |k| wire::HEADER_LEN + k * wire::REF_RUN_LEN;
    assert_eq!(sent, vec![runs(1), runs(2)]);
    w.pump(100);
    assert_eq!(w.a.take(qa, 2).status, WcStatus::Success);
    let r = w.b.take(qb, 2);
    assert_eq!((r.status, r.byte_len), (WcStatus::Success, 2 << 20));
    let mut got = w.b.bytes(4 << 20, 300_000).to_vec();
    got.extend_from_slice(w.b.bytes(6 << 20, (2 << 20) - 300_000));
    let mut want = data[..g1].to_vec();
    want.extend_from_slice(&data[2 << 20..(2 << 20) + g2]);
    assert!(got == want);

    // A WRITE with immediate consumes a receive and carries its immediate.
    w.recv(qb, 3, &[]);
    w.post(
        qa,
        &SendWr::new(3, SendOp::WriteImm(ra(w.b.addr(1 << 20), kb), 0xabcd)).sgl(&[sge(
            w.a.addr(0),
            half as u32,
            ka,
        )]),
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 3).status, WcStatus::Success);
    let r = w.b.take(qb, 3);
    assert_eq!((r.status, r.imm), (WcStatus::Success, Some(0xabcd)));
    assert!(w.b.bytes(1 << 20, half) == &data[..half]);

    // A peer that does not read this memory gets the bytes.
    w.net.lock().unwrap().refs_out = false;
    w.post(
        qa,
        &SendWr::new(4, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(
            w.a.addr(0),
            half as u32,
            ka,
        )]),
    );
    assert_eq!(
        on_the_wire(&w),
        vec![(wire::flags::LAST, wire::HEADER_LEN + half)]
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 4).status, WcStatus::Success);
}

/// An engine configured not to send references (the ionic server's, whose
/// guest may unmap its memory at any time) carries the bytes even to a
/// peer that reads its memory, and still reads the references it is sent.
#[test]
fn an_engine_that_does_not_send_references_carries_bytes_and_still_reads_them() {
    // a is such an engine; b is not.
    let mut w = World::with_each(
        EngineConfig {
            send_by_ref: false,
            ..EngineConfig::default()
        },
        EngineConfig::default(),
    );
    {
        let mut n = w.net.lock().unwrap();
        (n.refs_out, n.refs_in) = (true, true);
    }
    let (qa, qb) = w.pair(QpType::Rc);
    let n = 3 << 20;
    let ka = w.a.mr(0, 2 * n);
    let kb = w.b.mr(0, 2 * n);
    let (da, db) = (pattern(n, 9), pattern(n, 10));
    w.a.arena[..n].copy_from_slice(&da);
    w.b.arena[..n].copy_from_slice(&db);

    // a to b: bytes, in pieces that carry them.
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(n), kb))).sgl(&[sge(w.a.addr(0), n as u32, ka)]),
    );
    let piece = EngineConfig::default().max_piece as usize;
    let sent = on_the_wire(&w);
    assert_eq!(sent.len(), n.div_ceil(piece));
    assert!(
        sent.iter().all(
            |&(flags, len)| flags & wire::flags::BY_REF == 0 && len == wire::HEADER_LEN + piece
        ),
        "{sent:?}"
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert!(w.b.bytes(n, n) == &da[..]);
    assert_eq!(w.a.e.remote_stats().sent_by_ref, 0);

    // b to a: by reference, and a reads it.
    let now = w.now;
    let sgl = [sge(w.b.addr(0), n as u32, kb)];
    let wr = SendWr::new(2, SendOp::Write(ra(w.a.addr(n), ka))).sgl(&sgl);
    w.b.e.post_send(w.b.dev, qb, &wr, now).unwrap();
    let sent = on_the_wire(&w);
    assert!(
        !sent.is_empty()
            && sent
                .iter()
                .all(|&(flags, _)| flags & wire::flags::BY_REF != 0)
    );
    w.pump(100);
    assert_eq!(w.b.take(qb, 2).status, WcStatus::Success);
    assert!(w.a.bytes(n, n) == &db[..]);
    assert_eq!(w.a.e.remote_stats().read_by_ref, n as u64);
}

#[test]
fn by_reference_pieces_are_larger_than_those_that_carry_bytes() {
    let mut w = World::new();
    {
        let mut n = w.net.lock().unwrap();
        (n.refs_out, n.refs_in) = (true, true);
    }
    let n = 20 << 20;
    let (qa, data) = post_write(&mut w, n, 5);
    let piece = EngineConfig::default().max_ref_piece as usize;
    assert!(piece > EngineConfig::default().max_piece as usize);
    assert_eq!(on_the_wire(&w).len(), n.div_ceil(piece));
    w.pump(100);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::Success);
    assert!(w.b.bytes(0, n) == &data[..]);
}

#[test]
fn a_reference_the_responder_cannot_read_fails_that_request_only() {
    let mut w = World::new();
    let now = w.now;
    w.net.lock().unwrap().refs_out = true;
    let (qa, qb) = w.pair(QpType::Rc);
    let ka = w.a.mr(0, 4 << 20);
    let kb = w.b.mr(0, 4 << 20);
    // The responder has not proved the requester: it refuses to read, and
    // the requester learns its buffer could not be read.
    w.post(
        qa,
        &SendWr::new(1, SendOp::Write(ra(w.b.addr(0), kb))).sgl(&[sge(w.a.addr(0), 1 << 20, ka)]),
    );
    w.pump(100);
    assert_eq!(w.a.take(qa, 1).status, WcStatus::LocProtErr);
    assert_eq!(w.b.e.remote_stats().read_by_ref, 0);

    // A reference outside the requester's memory (forged, or memory gone)
    // fails the same way, for a SEND too, and leaves the receive posted.
    w.net.lock().unwrap().refs_in = true;
    let (qa, qb2) = w.pair(QpType::Rc);
    w.recv(qb2, 7, &[sge(w.b.addr(0), 4 << 20, kb)]);
    let mut m = vec![0u8; wire::HEADER_LEN + wire::REF_RUN_LEN];
    wire::Repr {
        flags: wire::flags::LAST | wire::flags::BY_REF,
        src_qpn: qa,
        dst_qpn: qb2,
        req_id: 77,
        len: 4096,
        total: 4096,
        operand0: 1,
        sgid: w.a.gid,
        dgid: w.b.gid,
        ..wire::Repr::new(wire::Op::Send)
    }
    .emit(&mut m);
    wire::put_ref_runs(&mut m[wire::HEADER_LEN..], &[(0x1000, 4096)]);
    let r = answer_to(&mut w, m);
    assert_eq!(
        (r.op, r.status, r.req_id),
        (wire::Op::Ack, WcStatus::LocProtErr, 77)
    );
    assert!(w.b.none(qb2, 7), "the receive is still posted");

    // References whose runs do not add up to the length are malformed.
    let mut m = vec![0u8; wire::HEADER_LEN + wire::REF_RUN_LEN];
    wire::Repr {
        flags: wire::flags::LAST | wire::flags::BY_REF,
        dst_qpn: qb,
        len: 4096,
        total: 4096,
        operand0: 1,
        dgid: w.b.gid,
        ..wire::Repr::new(wire::Op::Write)
    }
    .emit(&mut m);
    wire::put_ref_runs(&mut m[wire::HEADER_LEN..], &[(0, 4095)]);
    w.b.e.apply_remote(NodeId(1), m, 0, now);
    assert_eq!(w.b.e.remote_stats().malformed, 1);
}
