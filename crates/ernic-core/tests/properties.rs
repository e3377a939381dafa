//! Property tests of the data path's two promises: every work request that
//! was accepted completes exactly once, and no byte outside a registered
//! range is written (guard bytes around every buffer stay as they were), nor
//! any byte of a region registered read-only.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use ernic_core::*;
use proptest::prelude::*;

const SIZE: usize = 256;
const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0xee;
/// Per side: three regions (all rights, local write only, no rights).
const RIGHTS: [Access; 3] = [Access::ALL, Access::LOCAL_WRITE, Access::NONE];

fn region_off(side: usize, i: usize) -> usize {
    side * 65536 + GUARD + i * (SIZE + GUARD)
}

#[derive(Clone, Debug)]
struct Buf {
    /// 0..3: a region of the side; 3: key 0; 4: a bogus key; 5: the other side's region 0.
    key: usize,
    /// Offset from the region's start (may be before or past it).
    off: i64,
    len: u32,
}

#[derive(Clone, Debug)]
enum Step {
    /// Post a send request from side `from` (0 = A, 1 = B).
    Send {
        from: usize,
        op: u8,
        local: Vec<Buf>,
        remote: Buf,
        imm: u32,
    },
    /// Post a receive on side `on`.
    Recv { on: usize, sgl: Vec<Buf> },
    /// Let time pass (RNR timers run).
    Wait,
}

fn buf() -> impl Strategy<Value = Buf> {
    // Mostly buffers that are valid somewhere, sometimes anything.
    let key = prop_oneof![8 => 0usize..3, 2 => 3usize..6];
    let off = prop_oneof![8 => 0i64..200, 2 => -80i64..340];
    let len = prop_oneof![6 => 0u32..56, 2 => Just(8u32), 2 => 0u32..300];
    (key, off, len).prop_map(|(key, off, len)| Buf { key, off, len })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..2, 0u8..9, prop::collection::vec(buf(), 0..4), buf(), any::<u32>())
            .prop_map(|(from, op, local, remote, imm)| Step::Send { from, op, local, remote, imm }),
        3 => (0usize..2, prop::collection::vec(buf(), 0..3)).prop_map(|(on, sgl)| Step::Recv { on, sgl }),
        1 => Just(Step::Wait),
    ]
}

struct World {
    t: Bench,
    keys: [[u32; 3]; 2],
    qps: [Qpn; 2],
}

impl World {
    fn new() -> World {
        let mut t = Bench::with(EngineConfig {
            rnr_timeout: Duration::from_millis(10),
            ..EngineConfig::default()
        });
        let mut keys = [[0; 3]; 2];
        for (side, side_keys) in keys.iter_mut().enumerate() {
            let s = if side == 0 { t.a } else { t.b };
            let base = side * 65536;
            t.fill(base, &[GUARD_BYTE; 4 * (SIZE + GUARD)]);
            for (i, rights) in RIGHTS.iter().enumerate() {
                let off = region_off(side, i);
                let content: Vec<u8> = (0..SIZE).map(|j| (j * 7 + i * 3 + side) as u8).collect();
                t.fill(off, &content);
                side_keys[i] = t.mr(s, off, SIZE, *rights);
            }
        }
        let (qa, qb) = t.pair(QpType::Rc);
        World {
            t,
            keys,
            qps: [qa, qb],
        }
    }

    /// If either QP went to ERROR, flushes the other too and connects both
    /// again (ERR -> RESET -> INIT -> RTR -> RTS); everything outstanding
    /// completed in the flush.
    fn heal(&mut self) {
        let now = self.t.now;
        let states: Vec<QpState> = (0..2)
            .map(|i| {
                self.t
                    .e
                    .query_qp(self.side(i).dev, self.qps[i])
                    .unwrap()
                    .state
            })
            .collect();
        if !states.contains(&QpState::Err) {
            return;
        }
        for i in 0..2 {
            let s = self.side(i);
            let err = QpAttr {
                state: Some(QpState::Err),
                ..QpAttr::default()
            };
            self.t.e.modify_qp(s.dev, self.qps[i], &err, now).unwrap();
            let reset = QpAttr {
                state: Some(QpState::Reset),
                ..QpAttr::default()
            };
            self.t.e.modify_qp(s.dev, self.qps[i], &reset, now).unwrap();
        }
        self.t.collect();
        let (a, b) = (self.t.a, self.t.b);
        let (qa, qb) = (self.qps[0], self.qps[1]);
        self.t.connect_rts(a, qa, Some((b.gid, qb)), None);
        self.t.connect_rts(b, qb, Some((a.gid, qa)), None);
    }

    fn side(&self, i: usize) -> Side {
        if i == 0 { self.t.a } else { self.t.b }
    }

    fn sge(&self, side: usize, b: &Buf) -> Sge {
        let (key, region_side, region) = match b.key {
            k @ 0..=2 => (self.keys[side][k], side, k),
            3 => (0, side, 0),
            4 => (0x00ab_cd00, side, 0),
            _ => (self.keys[1 - side][0], 1 - side, 0),
        };
        let base = self.t.addr(region_off(region_side, region)) as i64;
        Sge {
            addr: (base + b.off) as u64,
            len: b.len,
            lkey: Lkey(key),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_request_completes_once_and_guards_hold(steps in prop::collection::vec(step(), 1..80)) {
        let mut w = World::new();
        let before: Vec<u8> = (0..2).flat_map(|s| w.t.bytes(s * 65536, 4 * (SIZE + GUARD)).to_vec()).collect();
        // (device, qpn, wr_id, is_send) -> completions seen
        let mut posted: HashMap<(u16, u32, u64, bool), u32> = HashMap::new();
        let mut next_id = 1u64;
        for st in &steps {
            match st {
                Step::Send { from, op, local, remote, imm } => {
                    let sgl: Vec<Sge> = local.iter().map(|b| w.sge(*from, b)).collect();
                    let r = w.sge(1 - *from, remote);
                    let ra = RemoteAddr { addr: r.addr, rkey: Rkey(r.lkey.0) };
                    let op = match op {
                        0 => SendOp::Send,
                        1 => SendOp::SendImm(*imm),
                        2 => SendOp::Write(ra),
                        3 => SendOp::WriteImm(ra, *imm),
                        4 => SendOp::Read(ra),
                        5 => SendOp::AtomicFa { remote: ra, add: u64::from(*imm) },
                        6 => SendOp::AtomicCas { remote: ra, compare: 0, swap: u64::from(*imm) },
                        7 => SendOp::SendInv(ra.rkey),
                        _ => SendOp::LocalInv(Lkey(r.lkey.0)),
                    };
                    let id = next_id;
                    next_id += 1;
                    let s = w.side(*from);
                    let now = w.t.now;
                    if w.t.e.post_send(s.dev, w.qps[*from], &SendWr::new(id, op).sgl(&sgl).signaled(id % 3 != 0), now).is_ok() {
                        posted.insert((s.dev.0, w.qps[*from].0, id, true), 0);
                    }
                }
                Step::Recv { on, sgl } => {
                    let sgl: Vec<Sge> = sgl.iter().map(|b| w.sge(*on, b)).collect();
                    let id = next_id;
                    next_id += 1;
                    let s = w.side(*on);
                    let now = w.t.now;
                    if w.t.e.post_recv(s.dev, w.qps[*on], &RecvWr { wr_id: id, sgl: &sgl }, now).is_ok() {
                        posted.insert((s.dev.0, w.qps[*on].0, id, false), 0);
                    }
                }
                Step::Wait => w.t.advance(Duration::from_millis(4)),
            }
            w.t.collect();
            w.heal();
        }
        // Let every RNR wait run out, then flush what is left.
        w.t.advance(Duration::from_millis(50));
        let now = w.t.now;
        for side in 0..2 {
            let s = w.side(side);
            w.t.e.modify_qp(s.dev, w.qps[side], &QpAttr { state: Some(QpState::Err), ..QpAttr::default() }, now).unwrap();
        }
        w.t.collect();
        for ev in &w.t.done {
            let c = ev.completion;
            let is_send = !matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm);
            let n = posted.get_mut(&(ev.device.0, c.qpn.0, c.wr_id, is_send));
            prop_assert!(n.is_some(), "completion for a request never posted: {:?}", ev);
            *n.unwrap() += 1;
        }
        for (k, n) in &posted {
            prop_assert_eq!(*n, 1, "request {:?} completed {} times", k, n);
        }
        prop_assert!(!w.t.e.has_timers());
        // Guards and read-only regions are untouched.
        for side in 0..2 {
            let base = side * 65536;
            let now_bytes = w.t.bytes(base, 4 * (SIZE + GUARD)).to_vec();
            let was = &before[side * 4 * (SIZE + GUARD)..(side + 1) * 4 * (SIZE + GUARD)];
            for i in 0..now_bytes.len() {
                let off = base + i;
                let in_region = (0..3).any(|r| (region_off(side, r)..region_off(side, r) + SIZE).contains(&off));
                let read_only = (region_off(side, 2)..region_off(side, 2) + SIZE).contains(&off);
                if !in_region || read_only {
                    prop_assert_eq!(now_bytes[i], was[i], "byte {:#x} of side {} changed", off, side);
                }
            }
        }
    }
}
