//! A test bench over the engine: one arena of process memory, two devices,
//! helpers to register ranges of the arena and to connect QPs.
#![allow(dead_code, unsafe_code, missing_docs, clippy::new_without_default)]

use std::ptr::NonNull;
use std::time::{Duration, Instant};

use ernic_core::*;

pub const ARENA: usize = 1 << 20;

pub struct Bench {
    pub e: Engine<ProcessMemory>,
    arena: Box<[u8]>,
    pub now: Instant,
    pub a: Side,
    pub b: Side,
    pub done: Vec<CqEvent>,
}

#[derive(Clone, Copy, Debug)]
pub struct Side {
    pub dev: DeviceId,
    pub gid: Gid,
    pub pd: PdId,
    pub cq: CqId,
}

impl Bench {
    pub fn new() -> Bench {
        Bench::with(EngineConfig {
            rnr_timeout: Duration::from_millis(100),
            ..EngineConfig::default()
        })
    }

    pub fn with(cfg: EngineConfig) -> Bench {
        let mut arena = vec![0u8; ARENA].into_boxed_slice();
        let mut e = Engine::new(cfg, ProcessMemory::new());
        let base = NonNull::new(arena.as_mut_ptr()).unwrap();
        // SAFETY: the arena lives in the bench, which owns the engine too and
        // drops the engine first (field order).
        unsafe { e.memory_mut().add(base, ARENA) };
        let mut side = |gid: &str| {
            let gid: Gid = gid.parse().unwrap();
            let dev = e.add_device(vec![gid]);
            let pd = e.alloc_pd(dev).unwrap();
            let cq = e.create_cq(dev, None, 4096).unwrap();
            Side { dev, gid, pd, cq }
        };
        let a = side("10.0.0.1");
        let b = side("10.0.0.2");
        Bench {
            e,
            arena,
            now: Instant::now(),
            a,
            b,
            done: Vec::new(),
        }
    }

    pub fn addr(&self, off: usize) -> u64 {
        self.arena.as_ptr() as u64 + off as u64
    }

    pub fn bytes(&self, off: usize, len: usize) -> &[u8] {
        &self.arena[off..off + len]
    }

    pub fn fill(&mut self, off: usize, data: &[u8]) {
        self.arena[off..off + data.len()].copy_from_slice(data);
    }

    /// Registers arena bytes `off..off+len` on `s`'s device with iova = its address.
    pub fn mr(&mut self, s: Side, off: usize, len: usize, access: Access) -> u32 {
        let addr = self.addr(off);
        self.e
            .reg_mr(
                s.dev,
                MrSpec::contiguous(s.pd, addr, len as u64, access, addr),
            )
            .unwrap()
    }

    pub fn qp(&mut self, s: Side, t: QpType) -> Qpn {
        self.e
            .create_qp(
                s.dev,
                &QpInit {
                    qp_type: t,
                    pd: s.pd,
                    send_cq: s.cq,
                    recv_cq: s.cq,
                    srq: None,
                    caps: QpCaps {
                        max_send_wr: 64,
                        max_recv_wr: 64,
                        max_send_sge: 8,
                        max_recv_sge: 8,
                        max_inline_data: 256,
                    },
                    sq_sig_all: false,
                    qpn: None,
                },
            )
            .unwrap()
    }

    pub fn connect_rts(&mut self, s: Side, q: Qpn, dest: Option<(Gid, Qpn)>, qkey: Option<u32>) {
        let now = self.now;
        to_rts(&mut self.e, s.dev, q, dest, qkey, now);
    }

    /// An RC (or UC) pair between A and B.
    pub fn pair(&mut self, t: QpType) -> (Qpn, Qpn) {
        let (qa, qb) = (self.qp(self.a, t), self.qp(self.b, t));
        let (a, b) = (self.a, self.b);
        self.connect_rts(a, qa, Some((b.gid, qb)), None);
        self.connect_rts(b, qb, Some((a.gid, qa)), None);
        (qa, qb)
    }

    pub fn send(&mut self, s: Side, q: Qpn, wr: &SendWr<'_>) {
        let now = self.now;
        self.e.post_send(s.dev, q, wr, now).unwrap();
        self.collect();
    }

    /// A SEND from side a's QP `q` of `len` bytes at arena offset `off`
    /// under key `key`.
    pub fn send_from_a(&mut self, q: Qpn, wr_id: u64, off: usize, len: u32, key: u32) {
        let sgl = [sge(self.addr(off), len, key)];
        let a = self.a;
        self.send(a, q, &SendWr::new(wr_id, SendOp::Send).sgl(&sgl));
    }

    pub fn recv(&mut self, s: Side, q: Qpn, wr_id: u64, sgl: &[Sge]) {
        let now = self.now;
        self.e
            .post_recv(s.dev, q, &RecvWr { wr_id, sgl }, now)
            .unwrap();
        self.collect();
    }

    pub fn collect(&mut self) {
        let done = &mut self.done;
        self.e.drain_completions(|c| done.push(*c));
    }

    /// Takes the completion of `wr_id` on QP `qpn` of side `s`, asserting
    /// there is exactly one.
    pub fn take(&mut self, s: Side, qpn: Qpn, wr_id: u64) -> Completion {
        let hit = |c: &CqEvent| {
            c.device == s.dev && c.completion.qpn == qpn && c.completion.wr_id == wr_id
        };
        let found: Vec<usize> = (0..self.done.len())
            .filter(|&i| hit(&self.done[i]))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "completions of {} {qpn} wr {wr_id}: {:#?}",
            s.dev,
            self.done
        );
        self.done.remove(found[0]).completion
    }

    pub fn none_for(&self, s: Side, qpn: Qpn, wr_id: u64) -> bool {
        !self
            .done
            .iter()
            .any(|c| c.device == s.dev && c.completion.qpn == qpn && c.completion.wr_id == wr_id)
    }

    /// A device counter of side `s`.
    pub fn count(&self, s: Side, c: Counter) -> u64 {
        self.e.device_counters(s.dev).unwrap().get(c)
    }

    pub fn advance(&mut self, d: Duration) {
        self.now += d;
        let now = self.now;
        self.e.poll(now);
        self.collect();
    }
}

/// Takes QP `q` of `dev` from RESET to RTS: all rights, `qkey` at INIT,
/// `dest` at RTR.
pub fn to_rts<M: DmaMemory>(
    e: &mut Engine<M>,
    dev: DeviceId,
    q: Qpn,
    dest: Option<(Gid, Qpn)>,
    qkey: Option<u32>,
    now: Instant,
) {
    for st in [QpState::Init, QpState::Rtr, QpState::Rts] {
        let attr = QpAttr {
            state: Some(st),
            access: (st == QpState::Init).then_some(Access::ALL),
            qkey: if st == QpState::Init { qkey } else { None },
            dest: if st == QpState::Rtr { dest } else { None },
            ..QpAttr::default()
        };
        e.modify_qp(dev, q, &attr, now).unwrap();
    }
}

pub fn sge(addr: u64, len: u32, key: u32) -> Sge {
    Sge {
        addr,
        len,
        lkey: Lkey(key),
    }
}

pub fn ra(addr: u64, key: u32) -> RemoteAddr {
    RemoteAddr {
        addr,
        rkey: Rkey(key),
    }
}
