//! The mesh's handshake (`ernic_mesh`'s `auth` module) as a stranger meets
//! it: a fresh node's real responder side (the manager taking a
//! registration, a worker taking a hello, or a node's same-host socket
//! taking a proof), with or without a mesh key, on a real socket pair,
//! against whatever the fuzzer's initiator sends: raw bytes, AUTH frames,
//! the last frame (REGISTER, HELLO, SAME_HOST or any kind) with a correct,
//! zero or damaged proof over a payload the fuzzer builds, and headers of
//! other protocol versions.
//!
//! The initiator here holds the node's key, so a keyed node's payload
//! decoders (`parse_register`, the hello, the same-host proof) are reached
//! too: a correct proof covers the responder's nonce, which the harness
//! reads from the node's answer to an AUTH that opens the connection.
//!
//! Each input starts a new node (nothing carries over from another input)
//! and ends by closing the initiator's side, so the node's reads end at
//! once; a node that admits the registration is shut down after it.
//!
//! Invariant: nothing panics; the responder answers or ends within its
//! deadline.

#![allow(unsafe_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use arbitrary::Arbitrary;
use ernic_mesh::frame::{self, HEADER_LEN, Kind, NO_NODE};
use ernic_mesh::{MeshKey, Responder};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::{Bytes, Enc};

const MAX_OPS: usize = 32;
/// The node's key, when it has one; the initiator proves it.
const KEY: &[u8] = b"ernic fuzz mesh key, 32 bytes...";
/// The id of the worker (and same-host node) under test.
const ME: u16 = 5;
/// The responder's whole-handshake deadline: inputs close their side, so
/// it is reached only if the node waits for bytes that cannot come.
const DEADLINE: Duration = Duration::from_secs(2);
/// Labels and sizes of `auth` (its module doc).
const LABEL_I: &[u8] = b"ernic-mesh 4 initiator";
const NONCE: usize = 16;
const MAC: usize = 32;
/// Most bytes the initiator reads back (a refusal is at most 1 KiB).
const MAX_ANSWER: usize = 4096;

/// Which node answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Role {
    /// The manager, taking a registration.
    Manager,
    /// Worker [`ME`], taking a peer's hello.
    Worker,
    /// Node [`ME`]'s same-host socket, taking a proof.
    SameHost,
}

/// The proof in the initiator's last frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Proof {
    /// HMAC over both nonces, the kind and the payload, with [`KEY`].
    Good,
    /// Zeros (what a keyless initiator sends).
    Zero,
    /// The good one with byte `at % 32` flipped.
    Flip(u8),
}

/// The payload after the proof.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Payload {
    /// A registration: boot id, wanted id, port, `gids` GIDs (GID `i` is
    /// sixteen bytes of `i`) under a count of `count` (`None`: `gids`),
    /// then `tail`.
    Register {
        boot: u64,
        wanted: u16,
        port: u16,
        gids: u8,
        count: Option<u16>,
        tail: Bytes<8>,
    },
    /// A hello: id and boot id, then `tail`.
    Hello { id: u16, boot: u64, tail: Bytes<8> },
    /// A same-host proof: token and address, then `tail`.
    SameHost {
        token: [u8; 16],
        addr: u64,
        tail: Bytes<8>,
    },
    /// Any bytes.
    Raw(Bytes<600>),
}

/// A step of the initiator.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// As the first step: which node answers, and whether it has [`KEY`]
    /// (without it: a keyless manager). Ignored later.
    Node { role: Role, keyed: bool },
    /// Raw bytes.
    Raw(Bytes<600>),
    /// An AUTH frame: a nonce, the keyed flag, and `extra` bytes after
    /// them. The first frame sent, it is answered and the answer read.
    Auth {
        nonce: [u8; NONCE],
        keyed: bool,
        extra: Bytes<8>,
    },
    /// The last frame: kind `kind` (1 REGISTER, 4 HELLO, 11 SAME_HOST,
    /// ...), a proof, a payload.
    Finish {
        kind: u8,
        proof: Proof,
        payload: Payload,
    },
    /// A header of protocol `version`, kind `kind`, with `body`.
    Version {
        version: u16,
        kind: u8,
        body: Bytes<32>,
    },
}

impl Payload {
    fn emit(&self, e: &mut Enc) {
        match self {
            Payload::Register {
                boot,
                wanted,
                port,
                gids,
                count,
                tail,
            } => {
                e.variant(0, 4).u64(*boot).u16(*wanted).u16(*port).u8(*gids);
                match count {
                    None => e.bool(false),
                    Some(c) => e.bool(true).u16(*c),
                };
                e.bytes(&tail.0, 8);
            }
            Payload::Hello { id, boot, tail } => {
                e.variant(1, 4).u16(*id).u64(*boot).bytes(&tail.0, 8);
            }
            Payload::SameHost { token, addr, tail } => {
                e.variant(2, 4).array(token).u64(*addr).bytes(&tail.0, 8);
            }
            Payload::Raw(b) => {
                e.variant(3, 4).bytes(&b.0, 600);
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        match self {
            Payload::Register {
                boot,
                wanted,
                port,
                gids,
                count,
                tail,
            } => {
                v.extend_from_slice(&boot.to_be_bytes());
                v.extend_from_slice(&wanted.to_be_bytes());
                v.extend_from_slice(&port.to_be_bytes());
                v.extend_from_slice(&count.unwrap_or(u16::from(*gids)).to_be_bytes());
                for i in 0..*gids {
                    v.extend_from_slice(&[i; 16]);
                }
                v.extend_from_slice(&tail.0);
            }
            Payload::Hello { id, boot, tail } => {
                v.extend_from_slice(&id.to_be_bytes());
                v.extend_from_slice(&boot.to_be_bytes());
                v.extend_from_slice(&tail.0);
            }
            Payload::SameHost { token, addr, tail } => {
                v.extend_from_slice(token);
                v.extend_from_slice(&addr.to_le_bytes());
                v.extend_from_slice(&tail.0);
            }
            Payload::Raw(b) => v.extend_from_slice(&b.0),
        }
        v
    }
}

impl Op {
    /// Writes this step in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = 5;
        match self {
            Op::Node { role, keyed } => {
                let r = match role {
                    Role::Manager => 0,
                    Role::Worker => 1,
                    Role::SameHost => 2,
                };
                e.variant(0, n).variant(r, 3).bool(*keyed);
            }
            Op::Raw(b) => {
                e.variant(1, n).bytes(&b.0, 600);
            }
            Op::Auth {
                nonce,
                keyed,
                extra,
            } => {
                e.variant(2, n).array(nonce).bool(*keyed).bytes(&extra.0, 8);
            }
            Op::Finish {
                kind,
                proof,
                payload,
            } => {
                e.variant(3, n).u8(*kind);
                match proof {
                    Proof::Good => e.variant(0, 3),
                    Proof::Zero => e.variant(1, 3),
                    Proof::Flip(at) => e.variant(2, 3).u8(*at),
                };
                payload.emit(e);
            }
            Op::Version {
                version,
                kind,
                body,
            } => {
                e.variant(4, n).u16(*version).u8(*kind).bytes(&body.0, 32);
            }
        }
    }
}

/// A connected loopback TCP pair (one listener for the process).
fn tcp_pair() -> (TcpStream, TcpStream) {
    static LISTENER: OnceLock<TcpListener> = OnceLock::new();
    let l = LISTENER.get_or_init(|| TcpListener::bind("127.0.0.1:0").expect("a loopback port"));
    let a = TcpStream::connect(l.local_addr().expect("bound")).expect("loopback connect");
    let (b, _) = l.accept().expect("loopback accept");
    (a, b)
}

/// The initiator's side of either socket.
trait Side: Read + Write {
    fn close_write(&self);
    fn timeout(&self, t: Duration);
}

impl Side for TcpStream {
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
    fn timeout(&self, t: Duration) {
        let _ = self.set_read_timeout(Some(t));
    }
}

impl Side for UnixStream {
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
    fn timeout(&self, t: Duration) {
        let _ = self.set_read_timeout(Some(t));
    }
}

/// Reads one frame the node sent (an AUTH answer or a refusal); returns
/// its kind and body, or `None` if the node closed or sent less.
fn read_answer(s: &mut impl Side) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h).ok()?;
    let len = u32::from_be_bytes(h[8..12].try_into().expect("4 bytes")) as usize;
    if len > MAX_ANSWER {
        return None;
    }
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    Some((h[6], body))
}

fn initiate(s: &mut impl Side, ops: &[Op]) {
    let mut nonce_i = [0u8; NONCE];
    let mut nonce_r = [0u8; NONCE];
    for (i, op) in ops.iter().enumerate() {
        let bytes = match op {
            Op::Node { .. } => continue,
            Op::Raw(b) => b.0.clone(),
            Op::Auth {
                nonce,
                keyed,
                extra,
            } => {
                let mut body = nonce.to_vec();
                body.push(u8::from(*keyed));
                body.extend_from_slice(&extra.0);
                let f = frame::frame(Kind::Auth, NO_NODE, NO_NODE, &body);
                // The connection's first frame (after the node's choice):
                // answered, and the answer holds the node's nonce.
                let first = ops[..i].iter().all(|o| matches!(o, Op::Node { .. }));
                if s.write_all(&f).is_err() {
                    return;
                }
                if first {
                    nonce_i = *nonce;
                    match read_answer(s) {
                        Some((12, a)) if a.len() >= NONCE => nonce_r.copy_from_slice(&a[..NONCE]),
                        _ => return,
                    }
                }
                continue;
            }
            Op::Finish {
                kind,
                proof,
                payload,
            } => {
                let kind = Kind::from(*kind);
                let payload = payload.bytes();
                let mut mac = [0u8; MAC];
                if !matches!(proof, Proof::Zero) {
                    let mut m = Hmac::<Sha256>::new_from_slice(KEY).expect("any key length");
                    m.update(LABEL_I);
                    m.update(&nonce_i);
                    m.update(&nonce_r);
                    m.update(&[u8::from(kind)]);
                    m.update(&payload);
                    mac = m.finalize().into_bytes().into();
                }
                if let Proof::Flip(at) = proof {
                    mac[usize::from(*at) % MAC] ^= 1;
                }
                let mut body = mac.to_vec();
                body.extend_from_slice(&payload);
                frame::frame(kind, 1, 0, &body)
            }
            Op::Version {
                version,
                kind,
                body,
            } => {
                let mut f = frame::frame(Kind::from(*kind), NO_NODE, 0, &body.0);
                f[4..6].copy_from_slice(&version.to_be_bytes());
                f
            }
        };
        if s.write_all(&bytes).is_err() {
            return;
        }
    }
}

/// Sends the input's steps, closes, and reads what the node says until it
/// closes (bounded: the node ends within its deadline).
fn drive(mut s: impl Side, ops: &[Op]) {
    s.timeout(DEADLINE * 2);
    initiate(&mut s, ops);
    s.close_write();
    let mut sink = [0u8; 4096];
    while let Ok(n) = s.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let _ = respond(data);
}

/// Runs one input; returns how the node's handshake ended (for the seeds'
/// checks).
pub fn respond(data: &[u8]) -> Result<(), ernic_mesh::HandshakeError> {
    // libFuzzer's `main` is not Rust's: a write to a socket the node has
    // closed must fail, not kill the process (as in any Rust program).
    static SIGPIPE: OnceLock<()> = OnceLock::new();
    SIGPIPE.get_or_init(|| {
        // SAFETY: setting a signal's disposition to "ignore" runs no
        // handler code; done once, before any socket is written.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    });
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let (role, keyed) = match ops.first() {
        Some(Op::Node { role, keyed }) => (*role, *keyed),
        _ => (Role::Manager, false),
    };
    let key = keyed.then(|| MeshKey::new(KEY, "fuzz").expect("a valid key"));
    let (reply, result) = mpsc::channel();
    match role {
        Role::SameHost => {
            let (a, b) = UnixStream::pair().expect("a socket pair");
            node()
                .send(Job::SameHost(b, key, reply))
                .expect("the responder thread runs");
            drive(a, &ops);
        }
        Role::Manager | Role::Worker => {
            let who = match role {
                Role::Manager => Responder::Manager,
                _ => Responder::Worker(ME),
            };
            let (a, b) = tcp_pair();
            node()
                .send(Job::Tcp(b, key, who, reply))
                .expect("the responder thread runs");
            drive(a, &ops);
        }
    }
    result.recv().expect("the responder does not panic")
}

type Reply = mpsc::Sender<Result<(), ernic_mesh::HandshakeError>>;

/// A handshake for the responder thread to answer.
enum Job {
    Tcp(TcpStream, Option<MeshKey>, Responder, Reply),
    SameHost(UnixStream, Option<MeshKey>, Reply),
}

/// The thread that plays the node: one for the process (a thread started
/// per input costs more than the handshake), each job a fresh node.
fn node() -> mpsc::Sender<Job> {
    static NODE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    NODE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::spawn(move || {
            for job in rx {
                match job {
                    Job::Tcp(s, key, who, reply) => {
                        let _ = reply.send(ernic_mesh::respond_to_handshake(s, key, who, DEADLINE));
                    }
                    Job::SameHost(s, key, reply) => {
                        let _ = reply.send(ernic_mesh::respond_to_same_host(s, key, ME, DEADLINE));
                    }
                }
            }
        });
        Mutex::new(tx)
    })
    .lock()
    .unwrap_or_else(|p| p.into_inner())
    .clone()
}

/// Seeds: each node, keyed and not, taking a correct handshake; a wrong
/// proof; a keyless initiator at a keyed node; an old version; a
/// registration with too many GIDs.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    let auth = |keyed| Op::Auth {
        nonce: [7; NONCE],
        keyed,
        extra: Bytes::default(),
    };
    let register = |gids, count| Payload::Register {
        boot: 0x1234_5678,
        wanted: 0,
        port: 4000,
        gids,
        count,
        tail: Bytes::default(),
    };
    let finish = |kind, proof, payload| Op::Finish {
        kind,
        proof,
        payload,
    };
    let hello = Payload::Hello {
        id: 9,
        boot: 42,
        tail: Bytes::default(),
    };
    let same = Payload::SameHost {
        token: [3; 16],
        addr: 0x7f00_0000_1000,
        tail: Bytes::default(),
    };
    let node = |role, keyed| Op::Node { role, keyed };
    vec![
        (
            "register-keyed",
            vec![
                node(Role::Manager, true),
                auth(true),
                finish(1, Proof::Good, register(2, None)),
            ],
        ),
        (
            "register-keyless",
            vec![
                node(Role::Manager, false),
                auth(false),
                finish(1, Proof::Zero, register(1, None)),
            ],
        ),
        (
            "register-wrong-key",
            vec![
                node(Role::Manager, true),
                auth(true),
                finish(1, Proof::Flip(3), register(1, None)),
            ],
        ),
        (
            "register-keyless-at-keyed",
            vec![node(Role::Manager, true), auth(false)],
        ),
        (
            "register-too-many-gids",
            vec![
                node(Role::Manager, true),
                auth(true),
                finish(1, Proof::Good, register(4, Some(300))),
            ],
        ),
        (
            "hello-keyed",
            vec![
                node(Role::Worker, true),
                auth(true),
                finish(4, Proof::Good, hello.clone()),
            ],
        ),
        (
            "hello-keyless",
            vec![
                node(Role::Worker, false),
                auth(false),
                finish(4, Proof::Zero, hello),
            ],
        ),
        (
            "same-host-keyed",
            vec![
                node(Role::SameHost, true),
                auth(true),
                finish(11, Proof::Good, same),
            ],
        ),
        (
            "old-version",
            vec![
                node(Role::Manager, false),
                Op::Version {
                    version: 2,
                    kind: 1,
                    body: Bytes(vec![0; 14]),
                },
            ],
        ),
    ]
}
