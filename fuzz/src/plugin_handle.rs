//! The NCCL plugin's device (`nccl_net_ernic::plugin::Plugin`) on the
//! in-process ernic provider, driven as NCCL drives it, with the parts
//! that come from elsewhere chosen by the fuzzer: the 128-byte connection
//! handle (another rank's, possibly corrupted or forged; the plugin keeps
//! its connection progress in the handle's last bytes) and the opaque
//! words (comms, registrations, requests) NCCL hands back, real or not.
//!
//! Invariant: nothing panics; every call answers.

#![allow(unsafe_code)]

use arbitrary::Arbitrary;
use nccl_net_ernic::abi::NCCL_PTR_HOST;
use nccl_net_ernic::plugin::{Plugin, Tag};

use crate::{Bytes, Enc};

const ARENA: usize = 64 << 10;
const MAX_OPS: usize = 64;
const HANDLE_LEN: usize = ernic_net::rdma::HANDLE_LEN;

/// A word NCCL passes back: one the plugin gave out (`pick`), or `raw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct Word {
    /// Use `raw` instead of a word given out.
    pub forged: bool,
    /// Which word given out.
    pub pick: u8,
    /// A forged word.
    pub raw: u64,
}

/// A call.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// `listen`.
    Listen,
    /// `connect` with a handle: handle `pick` the plugin gave out (with
    /// byte `at` xor `xor`), or (`forged`) `bytes` made 128 long; `again`
    /// reuses the last handle buffer as NCCL does while it is pending.
    Connect {
        again: bool,
        forged: bool,
        pick: u8,
        at: u8,
        xor: u8,
        bytes: Bytes<128>,
    },
    /// `accept` on a listen comm.
    Accept(Word),
    /// `regMr` of `len` bytes at `at` in the arena on a comm.
    Reg { comm: Word, at: u16, len: u16 },
    /// `deregMr`.
    Dereg { comm: Word, mr: Word },
    /// `isend` (`recv` false) or `irecv` of `len` bytes.
    Io {
        recv: bool,
        comm: Word,
        mr: Word,
        len: u16,
    },
    /// `test`.
    Test(Word),
    /// `closeListen`, `closeSend` or `closeRecv` (`kind` 0, 1, 2).
    Close { kind: u8, comm: Word },
}

impl Word {
    fn emit(&self, e: &mut Enc) {
        e.bool(self.forged).u8(self.pick).u64(self.raw);
    }
}

/// A word given out, picked.
pub const fn given(pick: u8) -> Word {
    Word {
        forged: false,
        pick,
        raw: 0,
    }
}

impl Op {
    /// Writes this call in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = 8;
        match self {
            Op::Listen => {
                e.variant(0, n);
            }
            Op::Connect {
                again,
                forged,
                pick,
                at,
                xor,
                bytes,
            } => {
                e.variant(1, n)
                    .bool(*again)
                    .bool(*forged)
                    .u8(*pick)
                    .u8(*at)
                    .u8(*xor)
                    .bytes(&bytes.0, 128);
            }
            Op::Accept(w) => {
                e.variant(2, n);
                w.emit(e);
            }
            Op::Reg { comm, at, len } => {
                e.variant(3, n);
                comm.emit(e);
                e.u16(*at).u16(*len);
            }
            Op::Dereg { comm, mr } => {
                e.variant(4, n);
                comm.emit(e);
                mr.emit(e);
            }
            Op::Io {
                recv,
                comm,
                mr,
                len,
            } => {
                e.variant(5, n).bool(*recv);
                comm.emit(e);
                mr.emit(e);
                e.u16(*len);
            }
            Op::Test(w) => {
                e.variant(6, n);
                w.emit(e);
            }
            Op::Close { kind, comm } => {
                e.variant(7, n).u8(*kind);
                comm.emit(e);
            }
        }
    }
}

struct World {
    // Dropped first: its registrations name the arena.
    p: Plugin,
    handles: Vec<[u8; HANDLE_LEN]>,
    pending: [u8; HANDLE_LEN],
    listens: Vec<u64>,
    comms: Vec<u64>,
    sends: Vec<u64>,
    recvs: Vec<u64>,
    mrs: Vec<u64>,
    reqs: Vec<u64>,
    arena: Box<[u8]>,
}

fn word(v: &[u64], w: Word) -> u64 {
    if w.forged || v.is_empty() {
        w.raw
    } else {
        v[usize::from(w.pick) % v.len()]
    }
}

/// Keeps at most this many words of each kind.
const KEEP: usize = 16;

fn keep(v: &mut Vec<u64>, w: u64) {
    if v.len() < KEEP {
        v.push(w);
    }
}

impl World {
    fn apply(&mut self, op: Op) {
        match op {
            Op::Listen => {
                let mut h = [0u8; HANDLE_LEN];
                if let Ok(l) = self.p.listen(&mut h) {
                    keep(&mut self.listens, l);
                    if self.handles.len() < KEEP {
                        self.handles.push(h);
                    }
                }
            }
            Op::Connect {
                again,
                forged,
                pick,
                at,
                xor,
                bytes,
            } => {
                if !again {
                    self.pending = if forged || self.handles.is_empty() {
                        let mut h = [0u8; HANDLE_LEN];
                        h[..bytes.0.len()].copy_from_slice(&bytes.0);
                        h
                    } else {
                        let mut h = self.handles[usize::from(pick) % self.handles.len()];
                        h[usize::from(at) % HANDLE_LEN] ^= xor;
                        h
                    };
                }
                if let Ok(Some(s)) = self.p.connect(&mut self.pending) {
                    keep(&mut self.sends, s);
                    keep(&mut self.comms, s);
                }
            }
            Op::Accept(w) => {
                if let Ok(Some(r)) = self.p.accept(word(&self.listens, w)) {
                    keep(&mut self.recvs, r);
                    keep(&mut self.comms, r);
                }
            }
            Op::Reg { comm, at, len } => {
                let at = usize::from(at) % ARENA;
                let len = usize::from(len).min(ARENA - at);
                let addr = self.arena[at..].as_mut_ptr();
                // SAFETY: `len` bytes at `addr` lie in the arena, which
                // outlives the plugin (field order).
                if let Ok(m) = unsafe {
                    self.p
                        .reg(word(&self.comms, comm), addr, len, NCCL_PTR_HOST)
                } {
                    keep(&mut self.mrs, m);
                }
            }
            Op::Dereg { comm, mr } => {
                let _ = self.p.dereg(word(&self.comms, comm), word(&self.mrs, mr));
            }
            Op::Io {
                recv,
                comm,
                mr,
                len,
            } => {
                let len = usize::from(len).min(ARENA);
                let addr = self.arena.as_mut_ptr();
                let mr = word(&self.mrs, mr);
                // SAFETY: the whole arena outlives the plugin; a
                // registration that does not cover it is refused.
                let r = unsafe {
                    if recv {
                        self.p.irecv(word(&self.recvs, comm), addr, len, mr)
                    } else {
                        self.p.isend(word(&self.sends, comm), addr, len, mr)
                    }
                };
                if let Ok(Some(r)) = r {
                    keep(&mut self.reqs, r);
                }
            }
            Op::Test(w) => {
                let r = word(&self.reqs, w);
                if !matches!(self.p.test(r), Ok(None)) {
                    self.reqs.retain(|&x| x != r);
                }
            }
            Op::Close { kind, comm } => {
                let (tag, v) = match kind % 3 {
                    0 => (Tag::Listen, &self.listens),
                    1 => (Tag::Send, &self.sends),
                    _ => (Tag::Recv, &self.recvs),
                };
                let _ = self.p.close(tag, word(v, comm));
            }
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let p = Plugin::on(
        Box::new(crate::small_provider()),
        "ernic (small queues)",
        crate::small_config(),
    )
    .expect("the plugin opens on the in-process provider");
    let mut w = World {
        p,
        handles: Vec::new(),
        pending: [0; HANDLE_LEN],
        listens: Vec::new(),
        comms: Vec::new(),
        sends: Vec::new(),
        recvs: Vec::new(),
        mrs: Vec::new(),
        reqs: Vec::new(),
        arena: vec![0u8; ARENA].into_boxed_slice(),
    };
    for op in ops {
        w.apply(op);
    }
}

fn connect(again: bool) -> Op {
    Op::Connect {
        again,
        forged: false,
        pick: 0,
        at: 0,
        xor: 0,
        bytes: Bytes::default(),
    }
}

/// Seeds: a connection made as NCCL makes it, messages both ways, the
/// registrations dropped twice, and handles corrupted.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    let mut conn = vec![Op::Listen, connect(false)];
    for _ in 0..4 {
        conn.push(Op::Accept(given(0)));
        conn.push(connect(true));
    }
    let mut io = conn.clone();
    io.extend([
        Op::Reg {
            comm: given(0),
            at: 0,
            len: 4096,
        },
        Op::Io {
            recv: true,
            comm: given(0),
            mr: given(0),
            len: 1024,
        },
        Op::Io {
            recv: false,
            comm: given(0),
            mr: given(0),
            len: 1000,
        },
        Op::Test(given(0)),
        Op::Test(given(1)),
        Op::Test(given(0)),
        Op::Reg {
            comm: given(0),
            at: 0,
            len: 4096,
        },
        Op::Dereg {
            comm: given(0),
            mr: given(0),
        },
        Op::Dereg {
            comm: given(0),
            mr: given(0),
        },
        Op::Close {
            kind: 1,
            comm: given(0),
        },
        Op::Close {
            kind: 2,
            comm: given(0),
        },
        Op::Close {
            kind: 0,
            comm: given(0),
        },
    ]);
    let corrupt = vec![
        Op::Listen,
        Op::Connect {
            again: false,
            forged: false,
            pick: 0,
            at: 0,
            xor: 0x20,
            bytes: Bytes::default(),
        },
        connect(true),
        Op::Connect {
            again: false,
            forged: true,
            pick: 0,
            at: 0,
            xor: 0,
            bytes: Bytes(vec![4, b'a', b'b', b'c', b'd', 9, 0, 0, 0]),
        },
        connect(true),
        Op::Test(Word {
            forged: true,
            pick: 0,
            raw: 0xe5 << 56 | 7 << 32 | 1,
        }),
    ];
    vec![
        ("connect", conn),
        ("messages", io),
        ("corrupt-handles", corrupt),
    ]
}
