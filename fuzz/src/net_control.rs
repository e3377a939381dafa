//! The collective transport's control path (`ernic_net::rdma`): one
//! endpoint on the in-process ernic provider, a listening comm, and an
//! attacker's raw rail on the same fabric that sends it whatever control
//! messages the fuzzer chooses (CONN, CONN_RESP, CTRL, SIZE and garbage),
//! well-formed connection requests naming its own rail, and eager sends;
//! between them the endpoint accepts, connects to handles the fuzzer
//! writes (the attacker's, the endpoint's own, or any bytes), posts
//! receives and sends, tests and closes.
//!
//! Invariant: nothing panics, every call answers (an error is fine).

#![allow(unsafe_code)]

use arbitrary::Arbitrary;
use ernic_net::provider::{CqEntry, FiAddr, MrReg, Provider, Rail};
use ernic_net::rdma::{
    Connector, Endpoint, HANDLE_LEN, Handle, ListenComm, MrHandle, RecvComm, Request, SendComm,
};
use ernic_net::verbs_provider::ErnicProvider;

use crate::{Bytes, Enc};

const ARENA: usize = 64 << 10;
const MAX_OPS: usize = 64;
/// Receives the attacker keeps posted (to take what the endpoint answers).
const ATTACKER_RX: usize = 8;
const SLOT: usize = 2048;

/// A step.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// Raw bytes sent to the endpoint's control rail with immediate `imm`.
    Control { imm: u32, bytes: Bytes<1100> },
    /// A well-formed CONN from the attacker's rail to listen comm `listen`
    /// (`None`: the real one), as comm `sender`, with `data` and `ctl`
    /// rail names (each the attacker's name, or `junk`).
    Conn {
        listen: Option<u32>,
        sender: u32,
        data: u8,
        ctl: u8,
        junk: Bytes<64>,
    },
    /// A CONN_RESP or CTRL naming comm `comm`, with a tail of bytes.
    Typed {
        kind: u8,
        comm: u32,
        tail: Bytes<96>,
    },
    /// `accept` on the listening comm.
    Accept,
    /// `connect` to a handle: the listener's own (`which` 0), the
    /// attacker's rail (1), or `bytes` (else), made `HANDLE_LEN` long.
    Connect { which: u8, bytes: Bytes<160> },
    /// A receive of `len` bytes on accepted comm `comm`.
    Recv { comm: u8, len: u16 },
    /// A send of `len` bytes on connected comm `comm`.
    Send { comm: u8, len: u16 },
    /// `test` on request `req`.
    Test { req: u8 },
    /// Close comm `comm` (accepted ones, then connected ones).
    Close { comm: u8 },
    /// Progress, and the attacker's CQ drained.
    Progress,
}

impl Op {
    /// Writes this step in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = 10;
        match self {
            Op::Control { imm, bytes } => {
                e.variant(0, n).u32(*imm).bytes(&bytes.0, 1100);
            }
            Op::Conn {
                listen,
                sender,
                data,
                ctl,
                junk,
            } => {
                e.variant(1, n);
                match listen {
                    None => e.bool(false),
                    Some(l) => e.bool(true).u32(*l),
                };
                e.u32(*sender).u8(*data).u8(*ctl).bytes(&junk.0, 64);
            }
            Op::Typed { kind, comm, tail } => {
                e.variant(2, n).u8(*kind).u32(*comm).bytes(&tail.0, 96);
            }
            Op::Accept => {
                e.variant(3, n);
            }
            Op::Connect { which, bytes } => {
                e.variant(4, n).u8(*which).bytes(&bytes.0, 160);
            }
            Op::Recv { comm, len } => {
                e.variant(5, n).u8(*comm).u16(*len);
            }
            Op::Send { comm, len } => {
                e.variant(6, n).u8(*comm).u16(*len);
            }
            Op::Test { req } => {
                e.variant(7, n).u8(*req);
            }
            Op::Close { comm } => {
                e.variant(8, n).u8(*comm);
            }
            Op::Progress => {
                e.variant(9, n);
            }
        }
    }
}

struct Attacker {
    rail: Box<dyn Rail>,
    buf: Box<[u8]>,
    mr: MrReg,
    peer: FiAddr,
    name: Vec<u8>,
}

struct World {
    // Field order is drop order: the endpoint closes its registrations
    // before the arena they name goes.
    ep: Endpoint,
    attacker: Attacker,
    listen: ListenComm,
    handle: Handle,
    connectors: Vec<Connector>,
    sends: Vec<SendComm>,
    recvs: Vec<RecvComm>,
    reqs: Vec<Request>,
    mr: MrHandle,
    arena: Box<[u8]>,
    _provider: ErnicProvider,
}

impl World {
    fn new() -> World {
        let provider = crate::small_provider();
        let mut ep = Endpoint::open(&provider, 1, crate::small_config()).expect("endpoint");
        let (listen, handle) = ep.listen().expect("listen");
        let mut arena = vec![0u8; ARENA].into_boxed_slice();
        // SAFETY: the arena is boxed (its block never moves) and dropped
        // after the endpoint (field order), which closes the registration.
        let mr = unsafe { ep.reg(arena.as_mut_ptr(), ARENA) }.expect("reg");
        let mut rail = provider.open_rail().expect("rail");
        let mut buf = vec![0u8; SLOT * (ATTACKER_RX + 1)].into_boxed_slice();
        // SAFETY: as the arena: boxed, and the rail (closed with the
        // attacker) goes before nothing else reads it.
        let mr_reg = unsafe { rail.mr_reg(buf.as_mut_ptr(), buf.len()) }.expect("mr");
        let n = usize::from(handle.0[0]);
        let peer = rail.av_insert(&handle.0[1..1 + n]).expect("av");
        let name = rail.name();
        for i in 0..ATTACKER_RX {
            let at = buf.as_ptr() as u64 + ((i + 1) * SLOT) as u64;
            let _ = rail.recv(at, SLOT, mr_reg.desc, i as u64);
        }
        World {
            ep,
            attacker: Attacker {
                rail,
                buf,
                mr: mr_reg,
                peer,
                name,
            },
            listen,
            handle,
            connectors: Vec::new(),
            sends: Vec::new(),
            recvs: Vec::new(),
            reqs: Vec::new(),
            mr,
            arena,
            _provider: provider,
        }
    }

    fn send(&mut self, m: &[u8], imm: u32) {
        let a = &mut self.attacker;
        let m = &m[..m.len().min(SLOT)];
        a.buf[..m.len()].copy_from_slice(m);
        let addr = a.buf.as_ptr() as u64;
        let _ = a
            .rail
            .send_data(addr, m.len(), a.mr.desc, a.peer, imm, 1 << 40);
        self.drain();
        self.ep.progress();
    }

    fn drain(&mut self) {
        let a = &mut self.attacker;
        let mut e = [CqEntry::default(); 16];
        for _ in 0..4 {
            match a.rail.cq_read(&mut e) {
                Ok(n) => {
                    for x in &e[..n] {
                        // A receive of ours: post it again.
                        if x.context < ATTACKER_RX as u64 {
                            let i = x.context as usize;
                            let at = a.buf.as_ptr() as u64 + ((i + 1) * SLOT) as u64;
                            let _ = a.rail.recv(at, SLOT, a.mr.desc, x.context);
                        }
                    }
                }
                Err(ernic_net::provider::CqError::Avail) => {
                    let _ = a.rail.cq_readerr();
                }
                Err(_) => break,
            }
        }
    }

    fn apply(&mut self, op: Op) {
        let base = self.arena.as_mut_ptr();
        match op {
            Op::Control { imm, bytes } => self.send(&bytes.0, imm),
            Op::Conn {
                listen,
                sender,
                data,
                ctl,
                junk,
            } => {
                let listen = listen.unwrap_or(self.listen.to_raw());
                let mut m = vec![1, 0, 0, 0];
                m.extend_from_slice(&listen.to_le_bytes());
                m.extend_from_slice(&sender.to_le_bytes());
                let (nd, nc) = (data % 6, ctl % 6);
                m.extend_from_slice(&[nd, nc]);
                for i in 0..nd + nc {
                    let name = if i % 2 == 0 || junk.0.is_empty() {
                        &self.attacker.name[..]
                    } else {
                        &junk.0[..]
                    };
                    m.push(name.len() as u8);
                    m.extend_from_slice(name);
                }
                self.send(&m, 0);
            }
            Op::Typed { kind, comm, tail } => {
                let mut m = vec![2 + kind % 3, 0, 0, 0];
                m.extend_from_slice(&comm.to_le_bytes());
                m.extend_from_slice(&tail.0);
                self.send(&m, 0);
            }
            Op::Accept => {
                if let Ok(Some(r)) = self.ep.accept(self.listen) {
                    self.recvs.push(r);
                }
            }
            Op::Connect { which, bytes } => {
                let mut h = match which {
                    0 => self.handle.0.clone(),
                    1 => {
                        let mut h = vec![self.attacker.name.len() as u8];
                        h.extend_from_slice(&self.attacker.name);
                        h.extend_from_slice(&bytes.0[..bytes.0.len().min(4)]);
                        h
                    }
                    _ => bytes.0,
                };
                h.resize(HANDLE_LEN, 0);
                if self.connectors.len() < 8 {
                    self.connectors.push(Connector::new(Handle(h)));
                }
                let mut done = Vec::new();
                for (i, c) in self.connectors.iter_mut().enumerate() {
                    match self.ep.connect(c) {
                        Ok(None) => {}
                        Ok(Some(s)) => {
                            self.sends.push(s);
                            done.push(i);
                        }
                        Err(_) => done.push(i),
                    }
                }
                for i in done.into_iter().rev() {
                    self.connectors.remove(i);
                }
            }
            Op::Recv { comm, len } => {
                let Some(&c) = pick(&self.recvs, comm) else {
                    return;
                };
                let len = usize::from(len).min(ARENA);
                // SAFETY: the arena is registered under `mr` for its
                // whole length and outlives the endpoint's use of it.
                if let Ok(Some(r)) = unsafe { self.ep.irecv(c, base, len, self.mr) } {
                    self.reqs.push(r);
                }
            }
            Op::Send { comm, len } => {
                let Some(&c) = pick(&self.sends, comm) else {
                    return;
                };
                let len = usize::from(len).min(ARENA);
                // SAFETY: as for receives.
                if let Ok(Some(r)) = unsafe { self.ep.isend(c, base, len, self.mr) } {
                    self.reqs.push(r);
                }
            }
            Op::Test { req } => {
                let Some(&r) = pick(&self.reqs, req) else {
                    return;
                };
                if !matches!(self.ep.test(r), Ok(None)) {
                    self.reqs.retain(|x| *x != r);
                }
            }
            Op::Close { comm } => {
                let i = usize::from(comm);
                if i < self.recvs.len() {
                    let _ = self.ep.close(self.recvs.remove(i));
                } else if i - self.recvs.len() < self.sends.len() {
                    let _ = self.ep.close(self.sends.remove(i - self.recvs.len()));
                }
            }
            Op::Progress => {
                self.ep.progress();
                self.drain();
            }
        }
    }
}

fn pick<T>(v: &[T], i: u8) -> Option<&T> {
    if v.is_empty() {
        None
    } else {
        v.get(usize::from(i) % v.len())
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let mut w = World::new();
    for op in ops {
        w.apply(op);
    }
}

/// Seeds: a peer that connects properly, one that sends CTRL and SIZE
/// messages, the endpoint connecting to itself and exchanging messages.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    let mut ctrl = vec![0u8; 64];
    ctrl[8..12].copy_from_slice(&1u32.to_le_bytes());
    ctrl[16..24].copy_from_slice(&0x1000u64.to_le_bytes());
    let mut size = vec![4u8, 0, 0, 0];
    size.extend_from_slice(&0u32.to_le_bytes());
    size.extend_from_slice(&1u32.to_le_bytes());
    size.extend_from_slice(&1u32.to_le_bytes());
    size.extend_from_slice(&64u64.to_le_bytes());
    vec![
        (
            "peer-connects",
            vec![
                Op::Conn {
                    listen: None,
                    sender: 3,
                    data: 1,
                    ctl: 1,
                    junk: Bytes::default(),
                },
                Op::Accept,
                Op::Progress,
                Op::Accept,
                Op::Recv { comm: 0, len: 4096 },
                Op::Typed {
                    kind: 1,
                    comm: 0,
                    tail: Bytes(ctrl),
                },
                Op::Control {
                    imm: 0,
                    bytes: Bytes(size),
                },
                Op::Test { req: 0 },
            ],
        ),
        (
            "self-connect",
            vec![
                Op::Connect {
                    which: 0,
                    bytes: Bytes::default(),
                },
                Op::Accept,
                Op::Connect {
                    which: 0,
                    bytes: Bytes::default(),
                },
                Op::Accept,
                Op::Progress,
                Op::Accept,
                Op::Connect {
                    which: 0,
                    bytes: Bytes::default(),
                },
                Op::Recv { comm: 0, len: 100 },
                Op::Send { comm: 0, len: 100 },
                Op::Progress,
                Op::Test { req: 0 },
                Op::Test { req: 1 },
                Op::Close { comm: 0 },
            ],
        ),
        (
            "connect-attacker",
            vec![
                Op::Connect {
                    which: 1,
                    bytes: Bytes(vec![0, 0, 0, 0]),
                },
                Op::Typed {
                    kind: 0,
                    comm: 0,
                    tail: Bytes(vec![0; 8]),
                },
                Op::Connect {
                    which: 2,
                    bytes: Bytes(vec![5, 1, 2, 3, 4, 5, 0, 0, 0, 0]),
                },
            ],
        ),
    ]
}
