//! The NVMe-oF target's controllers (`ernic_nvmeof::controller::Target`),
//! driven as its RDMA transport drives it for hostile hosts: four queues
//! (and, in a flood, many more) submit SQEs, raw or shaped from the input
//! (admin and I/O Connects with their connect data, Property Get and Set,
//! Identify, Get Log Page, Get/Set Features, Read and Write at any LBA,
//! other I/O commands with a payload, any admin opcode); each is planned
//! and, when the plan says so, executed with a buffer of exactly the
//! planned length (or one byte off, or its transfer failed). Time passes
//! and `poll` runs (AER completions, keep-alive teardowns, which the
//! harness carries out with `queue_gone` as a transport does), queues go
//! away, and namespaces change.
//!
//! Small RAM namespaces (1 MiB and 64 KiB), 2 I/O queues per controller,
//! depth 16. Invariants: nothing panics; every completion names its SQE's
//! command id, the queue's id and the queue's current SQ head (below the
//! queue's size unless SQ flow control is off); a planned transfer is at
//! most `MDTS_BYTES` and is the length the SQE's SGL names (so `ToHost`
//! data never exceeds the plan: the buffer handed over is the plan); a
//! buffer of the wrong length is refused; only an AER is held, and every
//! AER completion `poll` hands out answers one held; the live controllers
//! never exceed `MAX_CONTROLLERS`, and a flood's well-formed Connect is
//! refused only when that many are live; after `poll` no deadline is in
//! the past.

use std::cell::Cell;
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use ernic_nvmeof::config::Config;
use ernic_nvmeof::controller::{
    Action, AsyncEvent, DISCOVERY_NQN, MAX_CONTROLLERS, MDTS_BYTES, Outcome, QueueState, Target,
    TransportAddr, Xfer,
};
use ernic_nvmeof::wire::cqe;
use ernic_nvmeof::wire::fabrics::connect_data::{self, Nqn};
use ernic_nvmeof::wire::fabrics::registers::{
    REG_CAP, REG_CC, REG_CRTO, REG_CSTS, REG_NSSR, REG_VS,
};
use ernic_nvmeof::wire::fabrics::{connect, property};
use ernic_nvmeof::wire::sgl::{self, Descriptor, KEYED_LEN_MAX};
use ernic_nvmeof::wire::sqe;
use ernic_nvmeof::wire::status::Status;

use crate::{Bytes, Enc};

const MAX_OPS: usize = 64;
const QUEUES: usize = 4;
const CONFIG: &str = "ns=1M,ns=64K,queues=2,depth=16";
const HOSTS: [&str; 2] = [
    "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001",
    "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000002",
];
/// Controller ids the harness remembers from successful admin Connects.
const CNTLIDS: usize = 8;
/// The most queues one flood connects: past `MAX_CONTROLLERS`.
const FLOOD_MAX: usize = MAX_CONTROLLERS + 8;
const OPCODE_AER: u8 = 0x0c;
/// The most namespaces one `Notify` reports after its first: past the
/// 1024 a Changed Namespace List holds.
const NOTIFY_MAX: u32 = 1100;

/// A step.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// A command on queue `q` with command id `cid`, its data moved as
    /// `xfer` says.
    Submit {
        q: u8,
        cid: u16,
        cmd: Cmd,
        xfer: Move,
    },
    /// Time passes, `ms << (shift % 24)` milliseconds, then `poll`.
    Advance { ms: u16, shift: u8 },
    /// Queue `q`'s connection ends (`queue_gone`); a fresh queue takes
    /// its place.
    Gone { q: u8 },
    /// Namespaces `nsid` and the `more % 4` after it changed (`notify`);
    /// `more` 0xffff: [`NOTIFY_MAX`] after it, enough to overflow a
    /// controller's Changed Namespace List, if at most four controllers
    /// are live.
    Notify { nsid: u32, more: u16 },
    /// `n` more hosts each connect an admin queue that is then forgotten
    /// without `queue_gone` (a transport that lost them).
    Flood { n: u8, kato: u16 },
}

/// How a planned command's data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Move {
    /// Exactly the planned bytes.
    Exact,
    /// The transfer failed (`fail`).
    Failed,
    /// A buffer one byte short.
    Short,
    /// A buffer one byte long.
    Long,
}

/// A command.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Cmd {
    /// 64 bytes as they came, with `data` for a `FromHost` transfer
    /// (repeated to the planned length).
    Raw { sqe: [u8; 64], data: Bytes<64> },
    /// A Fabrics Connect of queue `qid` (`connect::Repr`) with connect data
    /// (`connect_data::Repr`): `cntlid` 0 is dynamic, 1..=127 a controller
    /// the harness saw created, else itself; `subsys` 0 the NVM
    /// subsystem, 1 discovery, else another; `host` 0 or 1 a host NQN,
    /// else an unterminated field; `sgl` 0 keyed, 1 in capsule, else a
    /// keyed one of the wrong length.
    Connect {
        qid: u8,
        sqsize: u16,
        kato: u32,
        cattr: u8,
        recfmt: u8,
        cntlid: u8,
        subsys: u8,
        host: u8,
        sgl: u8,
    },
    /// Property Get of `offset` (0..6: CAP, VS, CC, CSTS, NSSR, CRTO;
    /// else itself).
    PropGet { eight: bool, offset: u8 },
    /// Property Set of `offset` (as for Get) to `value`.
    PropSet { eight: bool, offset: u8, value: u32 },
    /// Identify with a 4 KiB keyed buffer.
    Identify { cns: u8, nsid: u32, csi: u8 },
    /// Get Log Page of `numd + 1` dwords at `offset`.
    GetLog {
        lid: u8,
        nsid: u32,
        numd: u16,
        offset: u16,
        rae: bool,
    },
    /// Get or Set Features.
    Features { set: bool, fid: u8, cdw11: u32 },
    /// A Read or Write of `nlb + 1` 512-byte blocks at `slba` of `nsid`,
    /// the data `fill`.
    Rw {
        write: bool,
        nsid: u8,
        slba: u32,
        nlb: u16,
        fua: bool,
        fill: u8,
    },
    /// Any I/O opcode (Flush 0x00, Write Zeroes 0x08, DSM 0x09 ...) with
    /// CDW10..12 and a payload of exactly `data`.
    Io {
        opcode: u8,
        nsid: u8,
        cdw10: u32,
        cdw11: u32,
        cdw12: u32,
        data: Bytes<512>,
    },
    /// Any admin opcode without data (AER 0x0c, Keep Alive 0x18, Abort
    /// 0x08 ...).
    Admin {
        opcode: u8,
        nsid: u32,
        cdw10: u32,
        cdw11: u32,
    },
}

impl Op {
    /// Writes this step in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        let n = 5;
        match self {
            Op::Submit { q, cid, cmd, xfer } => {
                e.variant(0, n).u8(*q).u16(*cid);
                cmd.emit(e);
                let k = match xfer {
                    Move::Exact => 0,
                    Move::Failed => 1,
                    Move::Short => 2,
                    Move::Long => 3,
                };
                e.variant(k, 4);
            }
            Op::Advance { ms, shift } => {
                e.variant(1, n).u16(*ms).u8(*shift);
            }
            Op::Gone { q } => {
                e.variant(2, n).u8(*q);
            }
            Op::Notify { nsid, more } => {
                e.variant(3, n).u32(*nsid).u16(*more);
            }
            Op::Flood { n: k, kato } => {
                e.variant(4, n).u8(*k).u16(*kato);
            }
        }
    }
}

impl Cmd {
    fn emit(&self, e: &mut Enc) {
        let n = 10;
        match self {
            Cmd::Raw { sqe, data } => {
                e.variant(0, n).array(sqe).bytes(&data.0, 64);
            }
            Cmd::Connect {
                qid,
                sqsize,
                kato,
                cattr,
                recfmt,
                cntlid,
                subsys,
                host,
                sgl,
            } => {
                e.variant(1, n)
                    .u8(*qid)
                    .u16(*sqsize)
                    .u32(*kato)
                    .u8(*cattr)
                    .u8(*recfmt)
                    .u8(*cntlid)
                    .u8(*subsys)
                    .u8(*host)
                    .u8(*sgl);
            }
            Cmd::PropGet { eight, offset } => {
                e.variant(2, n).bool(*eight).u8(*offset);
            }
            Cmd::PropSet {
                eight,
                offset,
                value,
            } => {
                e.variant(3, n).bool(*eight).u8(*offset).u32(*value);
            }
            Cmd::Identify { cns, nsid, csi } => {
                e.variant(4, n).u8(*cns).u32(*nsid).u8(*csi);
            }
            Cmd::GetLog {
                lid,
                nsid,
                numd,
                offset,
                rae,
            } => {
                e.variant(5, n)
                    .u8(*lid)
                    .u32(*nsid)
                    .u16(*numd)
                    .u16(*offset)
                    .bool(*rae);
            }
            Cmd::Features { set, fid, cdw11 } => {
                e.variant(6, n).bool(*set).u8(*fid).u32(*cdw11);
            }
            Cmd::Rw {
                write,
                nsid,
                slba,
                nlb,
                fua,
                fill,
            } => {
                e.variant(7, n)
                    .bool(*write)
                    .u8(*nsid)
                    .u32(*slba)
                    .u16(*nlb)
                    .bool(*fua)
                    .u8(*fill);
            }
            Cmd::Io {
                opcode,
                nsid,
                cdw10,
                cdw11,
                cdw12,
                data,
            } => {
                e.variant(8, n)
                    .u8(*opcode)
                    .u8(*nsid)
                    .u32(*cdw10)
                    .u32(*cdw11)
                    .u32(*cdw12)
                    .bytes(&data.0, 512);
            }
            Cmd::Admin {
                opcode,
                nsid,
                cdw10,
                cdw11,
            } => {
                e.variant(9, n)
                    .u8(*opcode)
                    .u32(*nsid)
                    .u32(*cdw10)
                    .u32(*cdw11);
            }
        }
    }
}

/// An SQE as nvme-rdma writes one: SGL metadata flag, command id, nsid, a
/// keyed data block of `len` bytes (the null one for 0).
fn sqe(opcode: u8, cid: u16, nsid: u32, len: u32) -> [u8; 64] {
    let mut s = [0u8; 64];
    let mut p = sqe::Packet::new_unchecked(&mut s[..]);
    p.set_opcode(opcode);
    p.set_flags(sqe::FLAGS_SGL_METABUF);
    p.set_command_id(cid);
    p.set_nsid(nsid);
    let d = Descriptor::Keyed {
        addr: if len == 0 { 0 } else { 0x7b2a_1000 },
        len: len.min(KEYED_LEN_MAX),
        key: if len == 0 { 0 } else { 0x1234 },
        invalidate: false,
    };
    let mut dptr = [0u8; sgl::LEN];
    d.emit(&mut sgl::Packet::new_unchecked(&mut dptr[..]))
        .expect("a length within KEYED_LEN_MAX");
    p.set_dptr(&dptr);
    s
}

fn set_cdw(s: &mut [u8; 64], n: usize, v: u32) {
    sqe::Packet::new_unchecked(&mut s[..]).set_cdw(n, v);
}

fn register(offset: u8) -> u32 {
    [REG_CAP, REG_VS, REG_CC, REG_CSTS, REG_NSSR, REG_CRTO]
        .get(usize::from(offset))
        .copied()
        .unwrap_or(u32::from(offset))
}

/// The length the SQE's SGL names, as the controller reads it.
fn sgl_len(s: &[u8; 64]) -> Option<u32> {
    let p = sqe::Packet::new_unchecked(&s[..]);
    match Descriptor::from_dptr(&p.dptr()) {
        Descriptor::Keyed { len, .. }
        | Descriptor::DataBlock { len, .. }
        | Descriptor::Transport { len, .. } => Some(len),
        Descriptor::Other { .. } => None,
    }
}

struct World {
    t: Target,
    queues: Vec<QueueState>,
    now: Instant,
    cntlids: Vec<u16>,
    /// Held AERs: (controller, command id).
    held: Vec<(u16, u16)>,
    /// One buffer for every transfer: MDTS and the one byte a `Long`
    /// buffer adds. Nothing else is sized by the input. It outlives the
    /// input ([`BUF`]): allocating a MiB per input cost more than the run.
    buf: Box<[u8]>,
    actions: Vec<Action>,
}

thread_local! {
    /// The transfer buffer between inputs.
    static BUF: Cell<Option<Box<[u8]>>> = const { Cell::new(None) };
}

impl World {
    fn new() -> World {
        let cfg = Config::parse(CONFIG).expect("the target's options");
        let t = Target::new(
            cfg,
            TransportAddr {
                addr: std::net::Ipv4Addr::new(10, 0, 0, 2),
                port: 4420,
                portid: 1,
            },
        )
        .expect("RAM namespaces");
        World {
            queues: (0..QUEUES).map(|_| t.new_queue()).collect(),
            t,
            now: Instant::now(),
            cntlids: Vec::new(),
            held: Vec::new(),
            buf: BUF
                .take()
                .unwrap_or_else(|| vec![0u8; MDTS_BYTES as usize + 1].into_boxed_slice()),
            actions: Vec::new(),
        }
    }

    /// The 1024 bytes of Connect data.
    fn connect_data(&self, cntlid: u8, subsys: u8, host: u8) -> [u8; connect_data::LEN] {
        let cntlid = match cntlid {
            0 => connect::CNTLID_DYNAMIC,
            k @ 1..=127 => match self.cntlids.len() {
                0 => 1,
                n => self.cntlids[usize::from(k - 1) % n],
            },
            k => u16::from(k),
        };
        let nqn = self.t.config().nqn.clone();
        let sub = match subsys % 3 {
            0 => nqn.as_str(),
            1 => DISCOVERY_NQN,
            _ => "nqn.2024-01.io.ernic:elsewhere",
        };
        let r = connect_data::Repr {
            hostid: [0x11; 16],
            cntlid,
            subsysnqn: Nqn::new(sub).expect("an NQN"),
            hostnqn: Nqn::new(HOSTS[usize::from(host % 2)]).expect("an NQN"),
        };
        let mut b = [0u8; connect_data::LEN];
        r.emit(&mut connect_data::Packet::new_unchecked(&mut b[..]))
            .expect("1024 bytes");
        if host >= 2 {
            // No NUL anywhere in the field.
            b[connect_data::field::HOSTNQN].fill(b'a');
        }
        b
    }

    /// The SQE and the bytes a `FromHost` transfer carries.
    fn build(&self, cid: u16, cmd: &Cmd) -> ([u8; 64], Vec<u8>) {
        match cmd {
            Cmd::Raw { sqe, data } => (*sqe, data.0.clone()),
            Cmd::Connect {
                qid,
                sqsize,
                kato,
                cattr,
                recfmt,
                cntlid,
                subsys,
                host,
                sgl,
            } => {
                let len = connect_data::LEN as u32;
                let sgl = match sgl % 3 {
                    0 => Descriptor::Keyed {
                        addr: 0x7b2a_1000,
                        len,
                        key: 0x1234,
                        invalidate: false,
                    },
                    1 => Descriptor::DataBlock {
                        addr: 0,
                        len,
                        offset: true,
                    },
                    _ => Descriptor::Keyed {
                        addr: 0x7b2a_1000,
                        len: len / 2,
                        key: 0x1234,
                        invalidate: false,
                    },
                };
                let r = connect::Repr {
                    command_id: cid,
                    sgl,
                    recfmt: u16::from(*recfmt),
                    qid: u16::from(*qid),
                    sqsize: *sqsize,
                    cattr: *cattr,
                    kato: *kato,
                };
                let mut s = [0u8; 64];
                r.emit(&mut connect::Packet::new_unchecked(&mut s[..]))
                    .expect("an SQE");
                (s, self.connect_data(*cntlid, *subsys, *host).to_vec())
            }
            Cmd::PropGet { eight, offset } => {
                let size = if *eight {
                    property::Size::Eight
                } else {
                    property::Size::Four
                };
                let r = property::Repr::Get {
                    command_id: cid,
                    size,
                    offset: register(*offset),
                };
                let mut s = [0u8; 64];
                r.emit(&mut property::Packet::new_unchecked(&mut s[..]))
                    .expect("an SQE");
                (s, Vec::new())
            }
            Cmd::PropSet {
                eight,
                offset,
                value,
            } => {
                let size = if *eight {
                    property::Size::Eight
                } else {
                    property::Size::Four
                };
                let r = property::Repr::Set {
                    command_id: cid,
                    size,
                    offset: register(*offset),
                    value: u64::from(*value),
                };
                let mut s = [0u8; 64];
                r.emit(&mut property::Packet::new_unchecked(&mut s[..]))
                    .expect("an SQE");
                (s, Vec::new())
            }
            Cmd::Identify { cns, nsid, csi } => {
                let mut s = sqe(0x06, cid, *nsid, 4096);
                set_cdw(&mut s, 10, u32::from(*cns));
                set_cdw(&mut s, 11, u32::from(*csi) << 24);
                (s, Vec::new())
            }
            Cmd::GetLog {
                lid,
                nsid,
                numd,
                offset,
                rae,
            } => {
                let len = (u32::from(*numd) + 1) * 4;
                let mut s = sqe(0x02, cid, *nsid, len);
                let rae = u32::from(*rae) << 15;
                set_cdw(&mut s, 10, u32::from(*lid) | rae | u32::from(*numd) << 16);
                set_cdw(&mut s, 12, u32::from(*offset));
                (s, Vec::new())
            }
            Cmd::Features { set, fid, cdw11 } => {
                let mut s = sqe(if *set { 0x09 } else { 0x0a }, cid, 0, 0);
                set_cdw(&mut s, 10, u32::from(*fid));
                set_cdw(&mut s, 11, *cdw11);
                (s, Vec::new())
            }
            Cmd::Rw {
                write,
                nsid,
                slba,
                nlb,
                fua,
                fill,
            } => {
                let len = (u32::from(*nlb) + 1) * 512;
                let opcode = if *write { 0x01 } else { 0x02 };
                let mut s = sqe(opcode, cid, u32::from(*nsid), len);
                set_cdw(&mut s, 10, *slba);
                set_cdw(&mut s, 12, u32::from(*nlb) | u32::from(*fua) << 30);
                (s, vec![*fill])
            }
            Cmd::Io {
                opcode,
                nsid,
                cdw10,
                cdw11,
                cdw12,
                data,
            } => {
                let mut s = sqe(*opcode, cid, u32::from(*nsid), data.0.len() as u32);
                set_cdw(&mut s, 10, *cdw10);
                set_cdw(&mut s, 11, *cdw11);
                set_cdw(&mut s, 12, *cdw12);
                (s, data.0.clone())
            }
            Cmd::Admin {
                opcode,
                nsid,
                cdw10,
                cdw11,
            } => {
                let mut s = sqe(*opcode, cid, *nsid, 0);
                set_cdw(&mut s, 10, *cdw10);
                set_cdw(&mut s, 11, *cdw11);
                (s, Vec::new())
            }
        }
    }

    /// Runs one command on queue `q` (an index into `queues`, or a flood's
    /// own queue) the way the transport does.
    fn submit(&mut self, q: &mut QueueState, s: &[u8; 64], data: &[u8], mv: Move) {
        let cid = sqe::Packet::new_unchecked(&s[..]).command_id();
        let x = match self.t.plan(q, s) {
            Err(c) => {
                assert!(!c.status.is_success(), "a plan's completion is a failure");
                check_cqe(q, &c, cid, "plan");
                return;
            }
            Ok(x) => x,
        };
        assert!(x.len() <= MDTS_BYTES, "a plan of {x:?} exceeds MDTS");
        assert_eq!(
            Some(x.len()),
            sgl_len(s),
            "a plan of {x:?} is not the length the SGL names"
        );
        let planned = x.len() as usize;
        let n = match mv {
            Move::Exact | Move::Failed => planned,
            Move::Short if planned > 0 => planned - 1,
            Move::Short | Move::Long => planned + 1,
        };
        let buf = &mut self.buf[..n];
        // Every byte handed over is written first (the buffer is reused
        // across inputs), by whole slices: a byte loop here would cost
        // more than the controller.
        match x {
            Xfer::FromHost(_) if !data.is_empty() => {
                for piece in buf.chunks_mut(data.len()) {
                    piece.copy_from_slice(&data[..piece.len()]);
                }
            }
            _ => buf.fill(0xee),
        }
        if mv == Move::Failed {
            let c = self.t.fail(q, s, Status::DATA_XFER_ERROR);
            check_cqe(q, &c, cid, "fail");
            return;
        }
        let admin = q.binding().is_some_and(|(_, qid)| qid == 0);
        let bound = q.binding();
        let cntlid = bound.map(|(c, _)| c);
        match self.t.execute(q, self.now, s, buf) {
            Outcome::Done(c) => {
                check_cqe(q, &c, cid, "execute");
                if n != planned {
                    assert!(!c.status.is_success(), "a buffer of {n} for {x:?} taken");
                }
                if bound.is_none() && c.status.is_success() {
                    // Only a Connect succeeds on an unbound queue, and it
                    // binds the queue to the controller and queue its
                    // completion and SQE name.
                    let qid = connect::Packet::new_unchecked(&s[..]).qid();
                    assert_eq!(q.binding(), Some((c.result as u16, qid)), "{c:?}");
                    if qid == 0 {
                        if self.cntlids.len() == CNTLIDS {
                            self.cntlids.remove(0);
                        }
                        self.cntlids.push(c.result as u16);
                    }
                }
            }
            Outcome::Deferred => {
                let opcode = sqe::Packet::new_unchecked(&s[..]).opcode();
                assert!(admin && opcode == OPCODE_AER, "only an AER is held");
                assert_eq!(n, planned, "an AER held on a wrong buffer");
                if let Some(c) = cntlid {
                    self.held.push((c, cid));
                }
            }
        }
    }

    fn poll(&mut self) {
        let mut actions = std::mem::take(&mut self.actions);
        self.t.poll(self.now, &mut actions);
        for a in actions.drain(..) {
            match a {
                Action::Complete { cntlid, qid, cqe } => {
                    assert_eq!(qid, 0, "an AER completes on the admin queue");
                    assert!(cqe.status.is_success());
                    let i = self
                        .held
                        .iter()
                        .position(|&h| h == (cntlid, cqe.command_id))
                        .unwrap_or_else(|| panic!("{cqe:?} answers no AER held by {cntlid}"));
                    self.held.remove(i);
                }
                Action::Teardown { cntlid } => {
                    self.held.retain(|h| h.0 != cntlid);
                    for q in &mut self.queues {
                        if q.binding().is_some_and(|b| b.0 == cntlid) {
                            self.t.queue_gone(q);
                            *q = self.t.new_queue();
                        }
                    }
                }
            }
        }
        self.actions = actions;
        if let Some(d) = self.t.next_deadline() {
            assert!(d > self.now, "after poll, a deadline at or before now");
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Submit { q, cid, cmd, xfer } => {
                let i = usize::from(q) % QUEUES;
                let (s, data) = self.build(cid, &cmd);
                let mut queue = std::mem::replace(&mut self.queues[i], self.t.new_queue());
                self.submit(&mut queue, &s, &data, xfer);
                self.queues[i] = queue;
            }
            Op::Advance { ms, shift } => {
                let d = Duration::from_millis(u64::from(ms) << (shift % 24));
                self.now = self.now.checked_add(d).unwrap_or(self.now);
                self.poll();
            }
            Op::Gone { q } => {
                let i = usize::from(q) % QUEUES;
                self.t.queue_gone(&self.queues[i]);
                self.queues[i] = self.t.new_queue();
            }
            Op::Notify { nsid, more } => {
                // The list is searched on every add: a run past its 1024
                // costs each NVM controller half a million compares, so
                // it is sent only when few are live (a flood leaves 64).
                let last = if more == u16::MAX && self.t.controllers() <= QUEUES {
                    NOTIFY_MAX
                } else {
                    u32::from(more % 4)
                };
                for k in 0..=last {
                    let nsid = nsid.wrapping_add(k);
                    self.t.notify(AsyncEvent::NamespaceChanged { nsid });
                }
            }
            Op::Flood { n, kato } => {
                let cmd = Cmd::Connect {
                    qid: 0,
                    sqsize: 31,
                    kato: u32::from(kato),
                    cattr: 0,
                    recfmt: 0,
                    cntlid: 0,
                    subsys: 0,
                    host: 0,
                    sgl: 0,
                };
                let (s, data) = self.build(1, &cmd);
                for _ in 0..usize::from(n) % (FLOOD_MAX + 1) {
                    let mut q = self.t.new_queue();
                    self.submit(&mut q, &s, &data, Move::Exact);
                    if q.binding().is_none() {
                        // Refused (CONNECT_CTRL_BUSY) only at the bound.
                        let n = self.t.controllers();
                        assert_eq!(n, MAX_CONTROLLERS, "a Connect refused at {n} controllers");
                        // The rest would be refused the same way.
                        break;
                    }
                }
            }
        }
    }
}

/// A completion names its command, its queue and the queue's SQ head.
fn check_cqe(q: &QueueState, c: &cqe::Repr, cid: u16, by: &str) {
    assert_eq!(c.command_id, cid, "{by}'s completion names another command");
    assert_eq!(c.sq_id, q.binding().map_or(0, |b| b.1), "{by}: sq_id");
    assert_eq!(c.sq_head, q.sq_head(), "{by}: sq_head");
    if let Some(size) = q.sq_size() {
        assert!(
            c.sq_head == 0xffff || u32::from(c.sq_head) < size,
            "{by}: head {} of a queue of {size}",
            c.sq_head
        );
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let mut w = World::new();
    for op in ops {
        w.apply(op);
        assert!(w.t.controllers() <= MAX_CONTROLLERS);
    }
    BUF.set(Some(w.buf));
}

fn submit(q: u8, cid: u16, cmd: Cmd) -> Op {
    Op::Submit {
        q,
        cid,
        cmd,
        xfer: Move::Exact,
    }
}

fn connect_admin(subsys: u8, kato: u32) -> Cmd {
    Cmd::Connect {
        qid: 0,
        sqsize: 31,
        kato,
        cattr: 0,
        recfmt: 0,
        cntlid: 0,
        subsys,
        host: 0,
        sgl: 0,
    }
}

/// CC as Linux's host enables a controller: EN, IOSQES 6, IOCQES 4.
const CC_ENABLE: u32 = 0x0046_0001;

/// Seeds: Linux's bring-up of an NVM controller (Connect admin, CAP, CC.EN,
/// CSTS, Identify of the controller, a namespace, the active namespace list
/// and a namespace's descriptors, queue count, Connect I/O, Write, Read, a
/// log page, an AER answered by a namespace change, the changed namespace
/// log, the admin queue going); more changed namespaces than the log
/// holds; a discovery
/// controller's log; a keep-alive that lapses; a flood of controllers; a
/// DSM and Write Zeroes.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        (
            "bring-up",
            vec![
                submit(0, 1, connect_admin(0, 5000)),
                submit(
                    0,
                    2,
                    Cmd::PropGet {
                        eight: true,
                        offset: 0,
                    },
                ),
                submit(
                    0,
                    3,
                    Cmd::PropSet {
                        eight: false,
                        offset: 2,
                        value: CC_ENABLE,
                    },
                ),
                submit(
                    0,
                    4,
                    Cmd::PropGet {
                        eight: false,
                        offset: 3,
                    },
                ),
                submit(
                    0,
                    5,
                    Cmd::Identify {
                        cns: 1,
                        nsid: 0,
                        csi: 0,
                    },
                ),
                submit(
                    0,
                    6,
                    Cmd::Identify {
                        cns: 0,
                        nsid: 1,
                        csi: 0,
                    },
                ),
                // nvme_scan_ns_list and nvme_identify_ns_descs.
                submit(
                    0,
                    5,
                    Cmd::Identify {
                        cns: 2,
                        nsid: 0,
                        csi: 0,
                    },
                ),
                submit(
                    0,
                    6,
                    Cmd::Identify {
                        cns: 3,
                        nsid: 1,
                        csi: 0,
                    },
                ),
                submit(
                    0,
                    7,
                    Cmd::Features {
                        set: true,
                        fid: 0x07,
                        cdw11: 0x0001_0001,
                    },
                ),
                submit(
                    1,
                    8,
                    Cmd::Connect {
                        qid: 1,
                        sqsize: 15,
                        kato: 0,
                        cattr: 0,
                        recfmt: 0,
                        cntlid: 1,
                        subsys: 0,
                        host: 0,
                        sgl: 1,
                    },
                ),
                submit(
                    1,
                    9,
                    Cmd::Rw {
                        write: true,
                        nsid: 1,
                        slba: 8,
                        nlb: 7,
                        fua: true,
                        fill: 0xa5,
                    },
                ),
                submit(
                    1,
                    10,
                    Cmd::Rw {
                        write: false,
                        nsid: 1,
                        slba: 8,
                        nlb: 7,
                        fua: false,
                        fill: 0,
                    },
                ),
                submit(
                    0,
                    11,
                    Cmd::GetLog {
                        lid: 0x02,
                        nsid: 0xffff_ffff,
                        numd: 127,
                        offset: 0,
                        rae: false,
                    },
                ),
                submit(
                    0,
                    12,
                    Cmd::Admin {
                        opcode: OPCODE_AER,
                        nsid: 0,
                        cdw10: 0,
                        cdw11: 0,
                    },
                ),
                Op::Notify { nsid: 1, more: 0 },
                Op::Advance { ms: 1, shift: 0 },
                submit(
                    0,
                    13,
                    Cmd::GetLog {
                        lid: 0x04,
                        nsid: 0,
                        numd: 1023,
                        offset: 0,
                        rae: false,
                    },
                ),
                Op::Gone { q: 0 },
                Op::Advance { ms: 1, shift: 0 },
            ],
        ),
        (
            "discovery",
            vec![
                submit(2, 1, connect_admin(1, 0)),
                submit(
                    2,
                    2,
                    Cmd::PropSet {
                        eight: false,
                        offset: 2,
                        value: 1,
                    },
                ),
                submit(
                    2,
                    3,
                    Cmd::Identify {
                        cns: 1,
                        nsid: 0,
                        csi: 0,
                    },
                ),
                submit(
                    2,
                    4,
                    Cmd::GetLog {
                        lid: 0x70,
                        nsid: 0,
                        numd: 255,
                        offset: 0,
                        rae: false,
                    },
                ),
                submit(
                    2,
                    5,
                    Cmd::Admin {
                        opcode: 0x18,
                        nsid: 0,
                        cdw10: 0,
                        cdw11: 0,
                    },
                ),
            ],
        ),
        (
            "changed-ns-overflow",
            vec![
                submit(0, 1, connect_admin(0, 0)),
                submit(
                    0,
                    2,
                    Cmd::PropSet {
                        eight: false,
                        offset: 2,
                        value: CC_ENABLE,
                    },
                ),
                submit(
                    0,
                    3,
                    Cmd::Admin {
                        opcode: OPCODE_AER,
                        nsid: 0,
                        cdw10: 0,
                        cdw11: 0,
                    },
                ),
                Op::Notify {
                    nsid: 1,
                    more: u16::MAX,
                },
                Op::Advance { ms: 0, shift: 0 },
                submit(
                    0,
                    4,
                    Cmd::GetLog {
                        lid: 0x04,
                        nsid: 0,
                        numd: 1023,
                        offset: 0,
                        rae: false,
                    },
                ),
            ],
        ),
        (
            "keep-alive-lapses",
            vec![
                submit(0, 1, connect_admin(0, 1000)),
                submit(
                    0,
                    2,
                    Cmd::PropSet {
                        eight: false,
                        offset: 2,
                        value: CC_ENABLE,
                    },
                ),
                submit(
                    0,
                    3,
                    Cmd::Admin {
                        opcode: OPCODE_AER,
                        nsid: 0,
                        cdw10: 0,
                        cdw11: 0,
                    },
                ),
                Op::Advance { ms: 3000, shift: 0 },
                submit(
                    0,
                    4,
                    Cmd::Admin {
                        opcode: 0x18,
                        nsid: 0,
                        cdw10: 0,
                        cdw11: 0,
                    },
                ),
            ],
        ),
        (
            "flood",
            vec![
                Op::Flood { n: 40, kato: 1000 },
                Op::Advance { ms: 3000, shift: 0 },
                Op::Flood {
                    n: FLOOD_MAX as u8,
                    kato: 0,
                },
            ],
        ),
        (
            "dsm-write-zeroes",
            vec![
                submit(0, 1, connect_admin(0, 0)),
                submit(
                    0,
                    2,
                    Cmd::PropSet {
                        eight: false,
                        offset: 2,
                        value: CC_ENABLE,
                    },
                ),
                submit(
                    3,
                    3,
                    Cmd::Connect {
                        qid: 2,
                        sqsize: 15,
                        kato: 0,
                        cattr: connect::CATTR_DISABLE_SQFLOW,
                        recfmt: 0,
                        cntlid: 1,
                        subsys: 0,
                        host: 0,
                        sgl: 0,
                    },
                ),
                submit(
                    3,
                    4,
                    Cmd::Io {
                        opcode: 0x09,
                        nsid: 2,
                        cdw10: 0,
                        cdw11: 1 << 2,
                        cdw12: 0,
                        data: Bytes({
                            let mut r = vec![0u8; 16];
                            r[4..8].copy_from_slice(&16u32.to_le_bytes());
                            r[8..16].copy_from_slice(&8u64.to_le_bytes());
                            r
                        }),
                    },
                ),
                submit(
                    3,
                    5,
                    Cmd::Io {
                        opcode: 0x08,
                        nsid: 1,
                        cdw10: 100,
                        cdw11: 0,
                        cdw12: 15,
                        data: Bytes::default(),
                    },
                ),
                submit(
                    3,
                    6,
                    Cmd::Io {
                        opcode: 0x00,
                        nsid: 1,
                        cdw10: 0,
                        cdw11: 0,
                        cdw12: 0,
                        data: Bytes::default(),
                    },
                ),
            ],
        ),
    ]
}
