//! The RDMA protocol (seed 000, with DESIGN.md §5's corrections): a device
//! endpoint of N data rails and one to four control rails (a comm's control
//! messages take them in turn by sequence number); receiver-driven bulk
//! transfers as RDMA writes with a 32-bit immediate
//! `seq | comm_id << 10 | nseg << 28`, striped by the scheduler; eager sends
//! of small messages into posted rx buffers; progress only inside `test`
//! (and before posting).
//!
//! A message's life:
//! - the receiver's `irecv` takes the next sequence number and posts a
//!   CTRL (seq, the sender's comm id, buffer address, length, one key per
//!   data rail) on a control rail;
//! - the sender's `isend` takes the same number; a message up to the eager
//!   limit goes at once as a send with immediate on one data rail; a larger
//!   one waits for its CTRL, then is written in stripes, each a write with
//!   the same immediate;
//! - the receiver counts the completions carrying that immediate and
//!   finishes at `nseg`. Where the write completions' lengths cannot be
//!   trusted (libfabric's tcp providers report 0), a message shorter than
//!   the receive buffer also sends a SIZE message on a control rail,
//!   counted as one more segment, so the receive completes with the sent
//!   size.
//!
//! `OFI_NCCL_PROTOCOL=SENDRECV` is the simpler protocol the seed contrasts
//! with this one: no writes, every message goes as sends with immediate
//! through the receiver's rx buffers, in chunks of 128 KiB whose immediate
//! carries `seq | comm_id << 10 | index << 22 | last << 31`, copied into the
//! receive (so a message is at most 512 chunks, 64 MiB).
//!
//! In both, the sender starts a message only while it is fewer than 128 ahead of
//! the CTRLs it has seen, so eager messages never overrun the receiver's
//! window or rx buffers, and the 10-bit sequence space (window 256) never
//! holds two live messages with one number.
//!
//! What a peer sends is untrusted: a listen handle ([`decode_handle`]) and
//! every control message ([`decode_control`]) are decoded into bounded
//! values before anything acts on them, and the costs a peer can cause are
//! capped: [`MAX_COMMS`] comms, [`MAX_BACKLOG`] unaccepted connections per
//! listener, a reported size never larger than the receive. A `connect`
//! that no listener answers fails after
//! [`Config::connect_timeout`](crate::config::Config::connect_timeout) and
//! gives back what it held. Every [`reg`](Endpoint::reg) answers a handle of
//! its own (the MR cache shares the registration underneath), so each
//! holder's [`dereg`](Endpoint::dereg) drops only its own reference and a
//! second one is refused.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::config::{Config, MAX_RAILS};
use crate::deque::Deque;
use crate::freelist::{Entry, Freelist};
use crate::idpool::IdPool;
use crate::mr_cache::{MrCache, Released};
use crate::msgbuff::{MsgBuff, Status};
use crate::provider::{
    CqEntry, CqError, CqFlags, FiAddr, MrReg, PostError, Provider, Rail, RemoteAddressing,
};
use crate::rawbuf::Slots;
use crate::scheduler::Scheduler;

/// Bits of the sequence number in the immediate.
pub const SEQ_BITS: u32 = 10;
/// Bits of the comm id in the immediate.
pub const COMM_ID_BITS: u32 = 18;
/// Most requests in flight on one comm.
pub const MAX_INFLIGHT: usize = 128;
/// The sequence window.
pub const MSGBUFF_SIZE: u16 = 256;
/// Bytes of a listen handle.
pub const HANDLE_LEN: usize = 128;
/// The chunk of a SENDRECV message (and the size of its rx buffers).
pub const SENDRECV_CHUNK: usize = 128 << 10;
/// Chunks of one SENDRECV message, at most (9 bits of the immediate): the
/// largest SENDRECV message is 64 MiB.
pub const SENDRECV_MAX_CHUNKS: usize = 512;

/// The immediate of a SENDRECV chunk: `seq | comm << 10 | index << 22 |
/// last << 31` (12 bits of comm id hold every comm of an endpoint).
pub fn sr_imm(seq: u16, comm: u32, index: usize, last: bool) -> u32 {
    u32::from(seq) & 0x3ff
        | (comm & 0xfff) << 10
        | (index as u32 & 0x1ff) << 22
        | u32::from(last) << 31
}

/// The (seq, comm id, chunk index, last) of a SENDRECV immediate.
pub fn split_sr_imm(data: u32) -> (u16, u32, usize, bool) {
    (
        (data & 0x3ff) as u16,
        (data >> 10) & 0xfff,
        ((data >> 22) & 0x1ff) as usize,
        data >> 31 == 1,
    )
}
/// Registrations are cached by whole pages of this size.
const PAGE: u64 = 4096;
/// Control rails an endpoint may have.
pub const MAX_CONTROL_RAILS: usize = 4;
/// Rail numbers from here on name control rails (`CTL + i`).
const CTL: usize = 1 << 20;
/// Comms one endpoint holds.
pub const MAX_COMMS: usize = 4096;
/// Connections a listener holds before `accept` takes them; a CONN beyond
/// this is dropped (its sender's connect times out).
pub const MAX_BACKLOG: usize = 256;
/// Segments of one message, at most: a write per data rail, and a SIZE.
pub const MAX_SEGMENTS: usize = MAX_RAILS + 1;
/// Registration handles one endpoint gives out at once.
pub const MAX_MR_HANDLES: usize = 1 << MR_SLOT_BITS;
/// A registration handle: its slot in the low bits, a generation above, so
/// a handle deregistered (and its slot reused) is not taken for the new one
/// until the generation wraps.
const MR_SLOT_BITS: u32 = 20;
const MR_SLOT_MASK: u32 = (1 << MR_SLOT_BITS) - 1;

/// The immediate word of a message's segments.
pub fn imm(seq: u16, comm: u32, nseg: u8) -> u32 {
    u32::from(seq) & 0x3ff | (comm & 0x3ffff) << SEQ_BITS | u32::from(nseg & 0xf) << 28
}

/// The (seq, comm id, segment count) of an immediate word.
pub fn split_imm(data: u32) -> (u16, u32, u8) {
    (
        (data & 0x3ff) as u16,
        (data >> SEQ_BITS) & 0x3ffff,
        (data >> 28) as u8,
    )
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The provider failed.
    #[error("provider: {0}")]
    Provider(String),
    /// A caller's mistake: a bad handle, comm, request or size.
    #[error("{0}")]
    Invalid(String),
    /// The request failed.
    #[error("request failed: {0}")]
    Request(String),
    /// No listener answered a connect in time.
    #[error(
        "no listener answered within {ms} ms (ERNIC_NET_CONNECT_TIMEOUT_MS): the handle names \
         an endpoint or listen comm that is not there"
    )]
    ConnectTimeout {
        /// The timeout, in milliseconds.
        ms: u128,
    },
}

/// Why bytes from a peer (a listen handle, a control message) were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A handle of the wrong size.
    #[error("a handle of {0} bytes: a listen handle has {HANDLE_LEN}")]
    HandleLen(usize),
    /// The handle's endpoint name is empty or runs past the handle.
    #[error("the handle's endpoint name of {0} bytes does not fit a handle")]
    HandleName(usize),
    /// An empty control message.
    #[error("an empty control message")]
    Empty,
    /// A kind this protocol does not have.
    #[error("control message kind {0} is none of CONN, CONN_RESP, CTRL, SIZE")]
    Kind(u8),
    /// A message shorter than its kind needs.
    #[error("a {kind} message of {got} bytes is cut short")]
    Short {
        /// The message's kind.
        kind: &'static str,
        /// Its length.
        got: usize,
    },
    /// More rails than an endpoint can have.
    #[error("{data} data and {control} control rails: at most {MAX_RAILS} and {MAX_CONTROL_RAILS}")]
    Rails {
        /// Data rails named.
        data: usize,
        /// Control rails named.
        control: usize,
    },
    /// A rail name that runs past the end of the message.
    #[error("rail name {index} runs past the end of the message")]
    Name {
        /// Which name.
        index: usize,
    },
    /// More keys than rails.
    #[error("{0} keys: at most {MAX_RAILS}")]
    Keys(usize),
    /// A sequence number wider than the protocol's 10 bits.
    #[error("sequence number {0} does not fit 10 bits")]
    Seq(u32),
    /// More segments than a message can have.
    #[error("{0} segments: at most {MAX_SEGMENTS}")]
    Segments(u32),
}

/// What a listen handle names: the listener's control-rail endpoint name
/// and its listen comm id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleRef<'a> {
    /// The provider's name of the listener's first control rail.
    pub name: &'a [u8],
    /// The listen comm on that endpoint.
    pub listen: u32,
}

/// Decodes a listen handle (from another rank: untrusted): a length byte,
/// that many bytes of endpoint name, the listen comm id (LE), zeros.
pub fn decode_handle(h: &[u8]) -> Result<HandleRef<'_>, DecodeError> {
    if h.len() != HANDLE_LEN {
        return Err(DecodeError::HandleLen(h.len()));
    }
    let n = usize::from(h[0]);
    if n == 0 || 1 + n + 4 > HANDLE_LEN {
        return Err(DecodeError::HandleName(n));
    }
    let listen = u32::from_le_bytes(h[1 + n..1 + n + 4].try_into().expect("4 bytes"));
    Ok(HandleRef {
        name: &h[1..1 + n],
        listen,
    })
}

/// The rail names a CONN or CONN_RESP carries, borrowed from it (no
/// allocation): at most [`MAX_CONTROL_RAILS`] and [`MAX_RAILS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RailNames<'a> {
    ctl: [&'a [u8]; MAX_CONTROL_RAILS],
    nctl: usize,
    data: [&'a [u8]; MAX_RAILS],
    ndata: usize,
}

impl<'a> RailNames<'a> {
    /// The control rails' names.
    pub fn control(&self) -> &[&'a [u8]] {
        &self.ctl[..self.nctl]
    }
    /// The data rails' names.
    pub fn data(&self) -> &[&'a [u8]] {
        &self.data[..self.ndata]
    }
}

/// A CTRL: where the receiver's buffer is, and its key on each data rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtrlMsg {
    /// The sender's comm id.
    pub comm: u32,
    /// The message's sequence number (10 bits).
    pub seq: u16,
    /// The buffer's address (or offset into its registration).
    pub addr: u64,
    /// The buffer's length.
    pub len: u64,
    /// Keys given (at most [`MAX_RAILS`]).
    pub nkeys: u8,
    /// One key per data rail; the first `nkeys` count.
    pub keys: [u64; MAX_RAILS],
}

/// A control message, decoded and bounded; see [`decode_control`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control<'a> {
    /// A sender asks a listener for a connection.
    Conn {
        /// The listen comm it names.
        listen: u32,
        /// The sender's comm id.
        sender: u32,
        /// The sender's rails.
        names: RailNames<'a>,
    },
    /// The listener's side answers.
    ConnResp {
        /// The sender's comm id.
        sender: u32,
        /// The receiver's comm id.
        receiver: u32,
        /// The receiver's rails.
        names: RailNames<'a>,
    },
    /// A receive was posted.
    Ctrl(CtrlMsg),
    /// A message shorter than its receive: its size, as one more segment.
    Size {
        /// The receiver's comm id.
        comm: u32,
        /// The message's sequence number.
        seq: u16,
        /// Its segments, this one included.
        nseg: u8,
        /// The bytes sent.
        size: u64,
    },
}

fn names_of<'a>(kind: &'static str, m: &'a [u8]) -> Result<RailNames<'a>, DecodeError> {
    let short = || DecodeError::Short { kind, got: m.len() };
    let (&nd, rest) = m.split_first().ok_or_else(short)?;
    let (&nc, mut rest) = rest.split_first().ok_or_else(short)?;
    let (nd, nc) = (usize::from(nd), usize::from(nc));
    if nd > MAX_RAILS || nc > MAX_CONTROL_RAILS {
        return Err(DecodeError::Rails {
            data: nd,
            control: nc,
        });
    }
    let mut names = RailNames {
        ctl: [&[]; MAX_CONTROL_RAILS],
        nctl: nc,
        data: [&[]; MAX_RAILS],
        ndata: nd,
    };
    for index in 0..nc + nd {
        let (&len, r) = rest.split_first().ok_or(DecodeError::Name { index })?;
        let name = r
            .get(..usize::from(len))
            .ok_or(DecodeError::Name { index })?;
        if index < nc {
            names.ctl[index] = name;
        } else {
            names.data[index - nc] = name;
        }
        rest = &r[usize::from(len)..];
    }
    Ok(names)
}

/// Decodes a control message from a peer (untrusted: every length and
/// count is checked against the message and the protocol's limits; after
/// this succeeds nothing in it can index out of bounds).
pub fn decode_control(m: &[u8]) -> Result<Control<'_>, DecodeError> {
    let short = |kind| DecodeError::Short { kind, got: m.len() };
    let seq = |v: u32| {
        u16::try_from(v)
            .ok()
            .filter(|s| *s < 1 << SEQ_BITS)
            .ok_or(DecodeError::Seq(v))
    };
    match *m.first().ok_or(DecodeError::Empty)? {
        CONN => Ok(Control::Conn {
            listen: u32_at(m, 4).ok_or_else(|| short("CONN"))?,
            sender: u32_at(m, 8).ok_or_else(|| short("CONN"))?,
            names: names_of("CONN", m.get(12..).ok_or_else(|| short("CONN"))?)?,
        }),
        CONN_RESP => Ok(Control::ConnResp {
            sender: u32_at(m, 4).ok_or_else(|| short("CONN_RESP"))?,
            receiver: u32_at(m, 8).ok_or_else(|| short("CONN_RESP"))?,
            names: names_of("CONN_RESP", m.get(12..).ok_or_else(|| short("CONN_RESP"))?)?,
        }),
        CTRL => {
            let comm = u32_at(m, 4).ok_or_else(|| short("CTRL"))?;
            let sq = seq(u32_at(m, 8).ok_or_else(|| short("CTRL"))?)?;
            let addr = u64_at(m, 12).ok_or_else(|| short("CTRL"))?;
            let len = u64_at(m, 20).ok_or_else(|| short("CTRL"))?;
            let nkeys = usize::from(*m.get(28).ok_or_else(|| short("CTRL"))?);
            if nkeys > MAX_RAILS {
                return Err(DecodeError::Keys(nkeys));
            }
            let mut keys = [0u64; MAX_RAILS];
            for (i, k) in keys.iter_mut().enumerate().take(nkeys) {
                *k = u64_at(m, 32 + 8 * i).ok_or_else(|| short("CTRL"))?;
            }
            Ok(Control::Ctrl(CtrlMsg {
                comm,
                seq: sq,
                addr,
                len,
                nkeys: nkeys as u8,
                keys,
            }))
        }
        SIZE => {
            let comm = u32_at(m, 4).ok_or_else(|| short("SIZE"))?;
            let sq = seq(u32_at(m, 8).ok_or_else(|| short("SIZE"))?)?;
            let nseg = u32_at(m, 12).ok_or_else(|| short("SIZE"))?;
            if nseg as usize > MAX_SEGMENTS {
                return Err(DecodeError::Segments(nseg));
            }
            let size = u64_at(m, 16).ok_or_else(|| short("SIZE"))?;
            Ok(Control::Size {
                comm,
                seq: sq,
                nseg: nseg as u8,
                size,
            })
        }
        k => Err(DecodeError::Kind(k)),
    }
}

fn perr(e: impl std::fmt::Display) -> NetError {
    NetError::Provider(e.to_string())
}

/// A listen handle: what the connecting side needs (at most 128 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle(pub Vec<u8>);

impl Handle {
    /// The handle as lowercase hex, to pass to another process as text.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A handle from [`to_hex`](Handle::to_hex)'s text; `None` if `s` is
    /// not hex pairs.
    pub fn from_hex(s: &str) -> Option<Handle> {
        // Digits only: `from_str_radix` alone would take "+f" as a pair.
        if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()
            .map(Handle)
    }
}

/// A listening comm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenComm(u32);
/// The sending end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendComm(u32);
/// The receiving end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvComm(u32);
/// A request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    entry: Entry,
    generation: u32,
}
/// A registration of the caller's memory on every data rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MrHandle(u32);

// Raw forms, for callers that must carry these through a C ABI as opaque
// words. A raw value that was never given out is caught by the endpoint
// (unknown comm, stale request generation, unknown registration), never
// trusted.
macro_rules! raw_id {
    ($($t:ident),*) => {$(
        impl $t {
            /// The id as an opaque word.
            pub fn to_raw(self) -> u32 {
                self.0
            }
            /// An id from [`to_raw`](Self::to_raw); the endpoint checks it on use.
            pub fn from_raw(raw: u32) -> Self {
                $t(raw)
            }
        }
    )*};
}
raw_id!(ListenComm, SendComm, RecvComm, MrHandle);

impl Request {
    /// The request as an opaque word: its slot (low 32 bits) and generation.
    pub fn to_raw(self) -> u64 {
        u64::from(self.entry.0) | u64::from(self.generation) << 32
    }
    /// A request from [`to_raw`](Request::to_raw); `test` refuses one that
    /// is not live.
    pub fn from_raw(raw: u64) -> Request {
        Request {
            entry: Entry(raw as u32),
            generation: (raw >> 32) as u32,
        }
    }
}

/// A connection being made: give it to [`Endpoint::connect`] until it
/// answers a comm (or fails, at the latest when the connect timeout has
/// passed since the first call).
#[derive(Debug)]
pub struct Connector {
    handle: Handle,
    comm: Option<u32>,
    /// When the first `connect` call began.
    since: Option<Instant>,
}

impl Connector {
    /// A connection to the listener behind `handle`.
    pub fn new(handle: Handle) -> Connector {
        Connector {
            handle,
            comm: None,
            since: None,
        }
    }

    /// Whether `timeout` has passed, at `now`, since the first `connect`.
    pub fn expired(&self, now: Instant, timeout: Duration) -> bool {
        self.since
            .is_some_and(|t| now.saturating_duration_since(t) >= timeout)
    }
}

const CONN: u8 = 1;
const CONN_RESP: u8 = 2;
const CTRL: u8 = 3;
const SIZE: u8 = 4;

const CTL_SLOT: usize = 1024;
const CTL_RX: usize = 256;
const CTL_TX: usize = 256;
const DATA_RX: usize = 256;

const KIND_SHIFT: u32 = 56;
const K_RX: u64 = 1;
const K_REQ: u64 = 2;
const K_TX: u64 = 3;

fn ctx(kind: u64, rail: usize, index: usize) -> u64 {
    kind << KIND_SHIFT | (rail as u64) << 32 | index as u64
}

fn unctx(c: u64) -> (u64, usize, usize) {
    (
        c >> KIND_SHIFT,
        ((c >> 32) & 0xff_ffff) as usize,
        (c & 0xffff_ffff) as usize,
    )
}

type Ctrl = CtrlMsg;

#[derive(Debug)]
enum ConnState {
    /// Sender: the CONN message is not yet posted.
    Created,
    /// Sender: CONN posted, waiting for CONN_RESP.
    WaitResp,
    /// Receiver: CONN_RESP not yet posted.
    RespPending,
    /// Receiver: CONN_RESP posted, waiting for its completion.
    RespSent,
    /// Both: ready for data.
    Connected,
    /// Failed.
    Failed(String),
}

#[derive(Debug, Clone, Copy)]
enum SElem {
    Ctrl(Ctrl),
    Req(Entry),
}

#[derive(Debug, Clone, Copy)]
enum RElem {
    Req(Entry),
    Eager {
        rail: usize,
        slot: usize,
        len: usize,
    },
}

struct Comm {
    kind: CommKind,
    state: ConnState,
    /// The peer comm's id (learned from CONN or CONN_RESP).
    remote: u32,
    /// The peer's control rails, in our control rails' address vectors.
    peer_ctrl: [FiAddr; MAX_CONTROL_RAILS],
    peer_data: [FiAddr; MAX_RAILS],
    next_seq: u16,
    inflight: usize,
    started: u64,
    ctrls_seen: u64,
    sends: MsgBuff<SElem>,
    recvs: MsgBuff<RElem>,
    /// Listen comms: receiving comms made for CONNs, waiting for `accept`.
    backlog: VecDeque<u32>,
    /// SENDRECV receiving comms: chunks that came before their receive.
    held: VecDeque<HeldChunk>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CommKind {
    Listen,
    Send,
    Recv,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ReqState {
    Free,
    Pending,
    Done(usize),
    Failed(String),
}

#[derive(Debug, Clone)]
struct Req {
    generation: u32,
    state: ReqState,
    send: bool,
    comm: u32,
    seq: u16,
    addr: u64,
    len: usize,
    mr: u32,
    need: u32,
    got: u32,
    size: Option<usize>,
    /// Posts made (parked or with the provider) and not yet completed: a
    /// request is reported only when none is left, so its buffer is free
    /// and no late completion can count toward a later request in the same
    /// entry.
    outstanding: u16,
}

impl Default for Req {
    fn default() -> Req {
        Req {
            generation: 0,
            state: ReqState::Free,
            send: false,
            comm: 0,
            seq: 0,
            addr: 0,
            len: 0,
            mr: 0,
            need: 0,
            got: 0,
            size: None,
            outstanding: 0,
        }
    }
}

/// What a control send's completion does.
#[derive(Debug, Clone, Copy)]
enum After {
    Nothing,
    /// Counts as a segment of this request.
    Req(Entry),
    /// Connects this receiving comm (its CONN_RESP went out).
    Connect(u32),
}

/// Where a message that came in an rx buffer goes.
enum Arrival {
    /// Into this posted receive.
    Receive(Entry),
    /// Held by its comm: its receive is not posted yet.
    Early,
    /// Its message is already finished (failed): the rest is dropped.
    Finished,
    /// No such comm or number.
    Stray,
}

/// A SENDRECV chunk held in its rx buffer until its receive is posted.
#[derive(Debug, Clone, Copy)]
struct HeldChunk {
    seq: u16,
    rail: usize,
    slot: usize,
    len: usize,
    index: usize,
    last: bool,
}

/// A post parked on EAGAIN.
#[derive(Debug, Clone, Copy)]
enum Op {
    Write {
        req: Entry,
        rail: usize,
        offset: usize,
        len: usize,
        dest: FiAddr,
        remote: u64,
        key: u64,
        imm: u32,
    },
    /// A send with immediate of `len` bytes from `offset` of the request
    /// (an eager message, or a chunk of a SENDRECV one).
    Eager {
        req: Entry,
        rail: usize,
        offset: usize,
        len: usize,
        dest: FiAddr,
        imm: u32,
    },
    Ctl {
        ctl: usize,
        slot: usize,
        len: usize,
        dest: FiAddr,
        imm: u32,
        then: After,
    },
    Rx {
        rail: usize,
        slot: usize,
    },
}

struct RailSet {
    rail: Box<dyn Rail>,
    rx: Slots,
    rx_reg: MrReg,
}

struct MrEntry {
    addr: u64,
    len: usize,
    regs: Vec<MrReg>,
}

/// One `reg`'s handle slot: the registration it holds a reference on, and
/// the generation its handle carries.
#[derive(Debug, Clone, Copy, Default)]
struct Holder {
    generation: u32,
    backing: Option<u32>,
}

/// A device endpoint: its rails, comms, requests and registrations.
pub struct Endpoint {
    cfg: Config,
    ctls: Vec<RailSet>,
    tx: Slots,
    /// The tx slots' registration on each control rail.
    tx_regs: Vec<MrReg>,
    tx_free: Vec<usize>,
    data: Vec<RailSet>,
    virt: bool,
    /// `OFI_NCCL_PROTOCOL=SENDRECV`: every message goes as sends through
    /// the rx buffers, in chunks of `chunk` bytes.
    sendrecv: bool,
    chunk: usize,
    sched: Scheduler,
    ids: IdPool,
    comms: Vec<Option<Comm>>,
    reqs: Freelist<Req>,
    pending: Deque<Op>,
    /// Registrations on the rails, by index (shared through the cache).
    mrs: Vec<Option<MrEntry>>,
    /// The handles given out, one per `reg`.
    holders: Vec<Holder>,
    free_holders: Vec<u32>,
    cache: MrCache<u32>,
    cqbuf: Vec<CqEntry>,
    generation: u32,
    /// Malformed or stray control messages dropped.
    pub dropped: u64,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("rails", &self.data.len())
            .field("reqs", &self.reqs)
            .finish()
    }
}

fn open_set(p: &dyn Provider, slot: usize, count: usize) -> Result<RailSet, NetError> {
    let mut rail = p.open_rail().map_err(perr)?;
    let rx = Slots::new(slot, count);
    let (a, l) = rx.area();
    // SAFETY: `rx` lives in the same RailSet as the registration, and
    // `Endpoint::drop` closes the registration before the slots are freed.
    let rx_reg = unsafe { rail.mr_reg(a, l) }.map_err(perr)?;
    Ok(RailSet { rail, rx, rx_reg })
}

impl Endpoint {
    /// An endpoint of `rails` data rails (cut to `OFI_NCCL_FORCE_NUM_RAILS`
    /// when set) and one control rail on `provider`.
    pub fn open(provider: &dyn Provider, rails: usize, cfg: Config) -> Result<Endpoint, NetError> {
        Endpoint::open_with(provider, rails, 1, cfg)
    }

    /// An endpoint of `rails` data rails and `control_rails` control rails
    /// (1 to [`MAX_CONTROL_RAILS`]); a comm's control messages take them
    /// in turn, by sequence number. Both ends must have the same counts.
    pub fn open_with(
        provider: &dyn Provider,
        rails: usize,
        control_rails: usize,
        cfg: Config,
    ) -> Result<Endpoint, NetError> {
        let rails = if cfg.force_num_rails > 0 {
            cfg.force_num_rails
        } else {
            rails
        };
        if !(1..=MAX_RAILS).contains(&rails) {
            return Err(NetError::Invalid(format!(
                "{rails} rails: between 1 and {MAX_RAILS}"
            )));
        }
        if !(1..=MAX_CONTROL_RAILS).contains(&control_rails) {
            return Err(NetError::Invalid(format!(
                "{control_rails} control rails: between 1 and {MAX_CONTROL_RAILS}"
            )));
        }
        let mut ctls = Vec::with_capacity(control_rails);
        for _ in 0..control_rails {
            ctls.push(open_set(provider, CTL_SLOT, CTL_RX)?);
        }
        let sendrecv = cfg.protocol == crate::config::Protocol::SendRecv;
        let slot = if sendrecv {
            SENDRECV_CHUNK
        } else {
            cfg.eager_max_size.max(64)
        };
        let mut data = Vec::with_capacity(rails);
        for _ in 0..rails {
            data.push(open_set(provider, slot, DATA_RX)?);
        }
        let virt = ctls
            .iter()
            .all(|c| c.rail.remote_addressing() == RemoteAddressing::Virtual)
            && data
                .iter()
                .all(|d| d.rail.remote_addressing() == RemoteAddressing::Virtual);
        let tx = Slots::new(CTL_SLOT, CTL_TX);
        let (a, l) = tx.area();
        let mut tx_regs = Vec::with_capacity(control_rails);
        for c in &mut ctls {
            // SAFETY: `tx` is dropped after `Endpoint::drop` closes these.
            tx_regs.push(unsafe { c.rail.mr_reg(a, l) }.map_err(perr)?);
        }
        let mut ep = Endpoint {
            sched: Scheduler::new(rails, cfg.sched_max_small_msg_size, cfg.min_stripe_size),
            cfg,
            ctls,
            tx,
            tx_regs,
            tx_free: (0..CTL_TX).rev().collect(),
            data,
            virt,
            sendrecv,
            chunk: slot,
            ids: IdPool::new(MAX_COMMS),
            comms: Vec::new(),
            reqs: Freelist::new(1024, 1024, 0, Req::default).map_err(perr)?,
            pending: Deque::with_capacity(1024),
            mrs: Vec::new(),
            holders: Vec::new(),
            free_holders: Vec::new(),
            cache: MrCache::new(PAGE, 64),
            cqbuf: vec![CqEntry::default(); 64],
            generation: 0,
            dropped: 0,
        };
        for c in 0..control_rails {
            for slot in 0..CTL_RX {
                ep.post(Op::Rx {
                    rail: CTL + c,
                    slot,
                });
            }
        }
        for rail in 0..rails {
            for slot in 0..DATA_RX {
                ep.post(Op::Rx { rail, slot });
            }
        }
        Ok(ep)
    }

    /// Data rails.
    pub fn rails(&self) -> usize {
        self.data.len()
    }

    /// How long a `connect` may stay pending.
    pub fn connect_timeout(&self) -> Duration {
        self.cfg.connect_timeout
    }

    fn new_comm(&mut self, kind: CommKind, state: ConnState) -> Result<u32, NetError> {
        let id = self
            .ids
            .allocate()
            .map_err(|e| NetError::Invalid(format!("cannot open a comm: {e}")))?
            as u32;
        // The table grows to the highest id in use, never past MAX_COMMS
        // (the id pool's size), and never shrinks: an id that was once
        // handed out always indexes it.
        if self.comms.len() <= id as usize {
            self.comms.resize_with(id as usize + 1, || None);
        }
        self.comms[id as usize] = Some(Comm {
            kind,
            state,
            remote: 0,
            peer_ctrl: [0; MAX_CONTROL_RAILS],
            peer_data: [0; MAX_RAILS],
            next_seq: 0,
            inflight: 0,
            started: 0,
            ctrls_seen: 0,
            sends: MsgBuff::new(MSGBUFF_SIZE, SEQ_BITS),
            recvs: MsgBuff::new(MSGBUFF_SIZE, SEQ_BITS),
            backlog: VecDeque::new(),
            held: VecDeque::new(),
        });
        Ok(id)
    }

    fn comm(&mut self, id: u32, kind: CommKind) -> Result<&mut Comm, NetError> {
        match self.comms.get_mut(id as usize).and_then(Option::as_mut) {
            Some(c) if c.kind == kind => Ok(c),
            _ => Err(NetError::Invalid(format!("no {kind:?} comm {id}"))),
        }
    }

    /// A comm of `kind` that is connected, ready for data.
    fn connected(&mut self, id: u32, kind: CommKind) -> Result<&mut Comm, NetError> {
        let c = self.comm(id, kind)?;
        if !matches!(c.state, ConnState::Connected) {
            return Err(NetError::Invalid(format!(
                "{kind:?} comm {id} is not connected"
            )));
        }
        Ok(c)
    }

    /// Opens a listening comm and the handle a peer connects with.
    pub fn listen(&mut self) -> Result<(ListenComm, Handle), NetError> {
        let id = self.new_comm(CommKind::Listen, ConnState::Connected)?;
        let name = self.ctls[0].rail.name();
        let mut h = Vec::with_capacity(HANDLE_LEN);
        h.push(name.len() as u8);
        h.extend_from_slice(&name);
        h.extend_from_slice(&id.to_le_bytes());
        if h.len() > HANDLE_LEN {
            return Err(NetError::Provider(format!(
                "endpoint name of {} bytes does not fit a handle",
                name.len()
            )));
        }
        h.resize(HANDLE_LEN, 0);
        Ok((ListenComm(id), Handle(h)))
    }

    fn names(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 * (self.ctls.len() + self.data.len()));
        out.push(self.data.len() as u8);
        out.push(self.ctls.len() as u8);
        for n in self
            .ctls
            .iter()
            .map(|c| c.rail.name())
            .chain(self.data.iter().map(|d| d.rail.name()))
        {
            out.push(n.len() as u8);
            out.extend_from_slice(&n);
        }
        out
    }

    /// Connects to a listener; answers `None` until the connection is made.
    /// Fails with [`NetError::ConnectTimeout`] once the connect timeout has
    /// passed since the first call without an answer; what the connection
    /// held is released then.
    pub fn connect(&mut self, c: &mut Connector) -> Result<Option<SendComm>, NetError> {
        self.connect_at(c, Instant::now())
    }

    /// [`connect`](Endpoint::connect) at time `now`.
    pub fn connect_at(
        &mut self,
        c: &mut Connector,
        now: Instant,
    ) -> Result<Option<SendComm>, NetError> {
        let id = match c.comm {
            Some(id) => id,
            None => {
                let h = decode_handle(&c.handle.0)
                    .map_err(|e| NetError::Invalid(format!("not a listen handle: {e}")))?;
                let id = self.new_comm(CommKind::Send, ConnState::Created)?;
                let peer = match self.ctls[0].rail.av_insert(h.name) {
                    Ok(p) => p,
                    Err(e) => {
                        self.free_comm(id);
                        return Err(perr(e));
                    }
                };
                let comm = self.comms[id as usize].as_mut().expect("just made");
                comm.peer_ctrl[0] = peer;
                comm.remote = h.listen;
                c.comm = Some(id);
                c.since = Some(now);
                id
            }
        };
        self.progress();
        let timeout = self.cfg.connect_timeout;
        let comm = self.comm(id, CommKind::Send)?;
        let pending = !matches!(comm.state, ConnState::Connected | ConnState::Failed(_));
        if pending && c.expired(now, timeout) {
            self.cancel(c);
            return Err(NetError::ConnectTimeout {
                ms: timeout.as_millis(),
            });
        }
        let comm = self.comm(id, CommKind::Send)?;
        match &comm.state {
            ConnState::Created => {
                let (peer, listen) = (comm.peer_ctrl[0], comm.remote);
                let mut m = vec![CONN, 0, 0, 0];
                m.extend_from_slice(&listen.to_le_bytes());
                m.extend_from_slice(&id.to_le_bytes());
                m.extend_from_slice(&self.names());
                if self.ctl_send(&m, 0, peer, 0, After::Nothing) {
                    self.comm(id, CommKind::Send)?.state = ConnState::WaitResp;
                }
                Ok(None)
            }
            ConnState::Connected => Ok(Some(SendComm(id))),
            ConnState::Failed(e) => {
                let e = format!("connect failed: {e}");
                self.cancel(c);
                Err(NetError::Request(e))
            }
            _ => Ok(None),
        }
    }

    /// Gives up a connection not yet made: its comm is freed, and the
    /// listener's address too when no other comm uses it (with the ernic
    /// provider, a peer's queue pairs: most of what a connect costs). A
    /// connection already made is left alone: close its comm instead.
    pub fn cancel(&mut self, c: &mut Connector) {
        let Some(id) = c.comm.take() else { return };
        let Some(comm) = self.comms.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        if comm.kind != CommKind::Send || matches!(comm.state, ConnState::Connected) {
            c.comm = Some(id);
            return;
        }
        let peer = comm.peer_ctrl[0];
        self.free_comm(id);
        let used = self
            .comms
            .iter()
            .flatten()
            .any(|o| o.kind != CommKind::Listen && o.peer_ctrl[0] == peer);
        if !used {
            // Nothing else sends to it; a provider that cannot remove keeps it.
            let _ = self.ctls[0].rail.av_remove(peer);
        }
    }

    /// Accepts a connection on `l`; answers `None` until one is made.
    pub fn accept(&mut self, l: ListenComm) -> Result<Option<RecvComm>, NetError> {
        self.progress();
        let Some(&id) = self.comm(l.0, CommKind::Listen)?.backlog.front() else {
            return Ok(None);
        };
        let c = self.comm(id, CommKind::Recv)?;
        match &c.state {
            ConnState::RespPending => {
                let (peer, remote) = (c.peer_ctrl[0], c.remote);
                let mut m = vec![CONN_RESP, 0, 0, 0];
                m.extend_from_slice(&remote.to_le_bytes());
                m.extend_from_slice(&id.to_le_bytes());
                m.extend_from_slice(&self.names());
                if self.ctl_send(&m, 0, peer, 0, After::Connect(id)) {
                    self.comm(id, CommKind::Recv)?.state = ConnState::RespSent;
                }
                Ok(None)
            }
            ConnState::Connected => {
                self.comm(l.0, CommKind::Listen)?.backlog.pop_front();
                Ok(Some(RecvComm(id)))
            }
            ConnState::Failed(e) => {
                let e = e.clone();
                self.comm(l.0, CommKind::Listen)?.backlog.pop_front();
                self.free_comm(id);
                Err(NetError::Request(format!("accept failed: {e}")))
            }
            _ => Ok(None),
        }
    }

    fn free_comm(&mut self, id: u32) {
        if self
            .comms
            .get_mut(id as usize)
            .and_then(Option::take)
            .is_some()
        {
            let _ = self.ids.free(id as usize);
        }
    }

    /// Sends a control message from a tx slot; false when it could not
    /// even be parked (no free slot: try again later).
    fn ctl_send(&mut self, m: &[u8], ctl: usize, dest: FiAddr, imm: u32, then: After) -> bool {
        debug_assert!(m.len() <= CTL_SLOT);
        let Some(slot) = self.tx_free.pop() else {
            return false;
        };
        self.tx.write(slot, m);
        self.post(Op::Ctl {
            ctl,
            slot,
            len: m.len(),
            dest,
            imm,
            then,
        });
        true
    }

    /// Posts `op`, parking it on EAGAIN (behind anything already parked,
    /// to keep order) and failing its request on a hard error.
    fn post(&mut self, op: Op) {
        if let Some(r) = Endpoint::op_req(op).and_then(|e| self.reqs.get_mut(e)) {
            r.outstanding += 1;
        }
        if !self.pending.is_empty() {
            self.pending.push_back(op);
            return;
        }
        match self.try_post(op) {
            Ok(()) => {}
            Err(PostError::Again) => self.pending.push_back(op),
            Err(PostError::Failed(msg)) => self.op_failed(op, msg),
        }
    }

    /// The request a post belongs to.
    fn op_req(op: Op) -> Option<Entry> {
        match op {
            Op::Write { req, .. } | Op::Eager { req, .. } => Some(req),
            Op::Ctl {
                then: After::Req(req),
                ..
            } => Some(req),
            _ => None,
        }
    }

    /// One post of `req` came back from the provider.
    fn op_done(&mut self, req: Entry) {
        let Some(r) = self.reqs.get_mut(req) else {
            return;
        };
        r.outstanding = r.outstanding.saturating_sub(1);
    }

    fn try_post(&mut self, op: Op) -> Result<(), PostError> {
        match op {
            Op::Write {
                req,
                rail,
                offset,
                len,
                dest,
                remote,
                key,
                imm,
            } => {
                let (addr, desc) = self.local(req, offset, rail);
                self.data[rail].rail.write_data(
                    addr,
                    len,
                    desc,
                    dest,
                    remote,
                    key,
                    imm,
                    ctx(K_REQ, rail, req.0 as usize),
                )
            }
            Op::Eager {
                req,
                rail,
                offset,
                len,
                dest,
                imm,
            } => {
                let (addr, desc) = self.local(req, offset, rail);
                self.data[rail].rail.send_data(
                    addr,
                    len,
                    desc,
                    dest,
                    imm,
                    ctx(K_REQ, rail, req.0 as usize),
                )
            }
            Op::Ctl {
                ctl,
                slot,
                len,
                dest,
                imm,
                then,
            } => {
                let c = ctx(K_TX, 0, slot) | then_bits(then);
                let desc = self.tx_regs[ctl].desc;
                self.ctls[ctl]
                    .rail
                    .send_data(self.tx.addr(slot), len, desc, dest, imm, c)
            }
            Op::Rx { rail, slot } => {
                let set = if rail >= CTL {
                    &mut self.ctls[rail - CTL]
                } else {
                    &mut self.data[rail]
                };
                let (addr, len, desc) = (set.rx.addr(slot), set.rx.slot_len(), set.rx_reg.desc);
                set.rail
                    .recv(addr, len, desc, ctx(K_RX, rail & 0xff_ffff, slot))
            }
        }
    }

    /// The address `offset` bytes into request `req`'s buffer, and the
    /// descriptor of its registration on `rail`.
    fn local(&self, req: Entry, offset: usize, rail: usize) -> (u64, u64) {
        let r = self.reqs.get(req).expect("live request");
        let desc = self
            .mrs
            .get(r.mr as usize)
            .and_then(Option::as_ref)
            .map_or(0, |m| m.regs[rail].desc);
        (r.addr + offset as u64, desc)
    }

    fn op_failed(&mut self, op: Op, msg: String) {
        if let Some(req) = Endpoint::op_req(op) {
            self.op_done(req);
        }
        match op {
            Op::Write { req, .. } | Op::Eager { req, .. } => self.fail_req(req, msg),
            Op::Ctl { slot, then, .. } => {
                self.tx_free.push(slot);
                self.after_failed(then, msg);
            }
            // An rx buffer that cannot be posted is lost to this endpoint.
            Op::Rx { .. } => self.dropped += 1,
        }
    }

    fn after_failed(&mut self, then: After, msg: String) {
        match then {
            After::Nothing => {}
            After::Req(req) => self.fail_req(req, msg),
            After::Connect(id) => {
                if let Some(c) = self.comms[id as usize].as_mut() {
                    c.state = ConnState::Failed(msg);
                }
            }
        }
    }

    fn fail_req(&mut self, req: Entry, msg: String) {
        let Some(r) = self.reqs.get_mut(req) else {
            return;
        };
        if r.state != ReqState::Pending {
            return;
        }
        r.state = ReqState::Failed(msg);
        let (comm, seq, send) = (r.comm, r.seq, r.send);
        self.retire(comm, seq, send);
    }

    /// Takes a finished message out of its comm's window.
    fn retire(&mut self, comm: u32, seq: u16, send: bool) {
        if let Some(c) = self.comms.get_mut(comm as usize).and_then(Option::as_mut) {
            let done = if send {
                c.sends.complete(seq).is_ok()
            } else {
                c.recvs.complete(seq).is_ok()
            };
            if done {
                c.inflight = c.inflight.saturating_sub(1);
            }
        }
    }

    /// One request's segment done.
    fn segment_done(&mut self, req: Entry, size: Option<usize>) {
        let Some(r) = self.reqs.get_mut(req) else {
            return;
        };
        if r.state != ReqState::Pending {
            return;
        }
        r.got += 1;
        if size.is_some() {
            r.size = size;
        }
        if r.need > 0 && r.got >= r.need {
            let size = if r.send {
                r.len
            } else {
                r.size.unwrap_or(r.len)
            };
            r.state = ReqState::Done(size);
            let (comm, seq, send) = (r.comm, r.seq, r.send);
            self.retire(comm, seq, send);
        }
    }

    /// Drives the endpoint: retries parked posts, then drains every rail's
    /// CQ.
    pub fn progress(&mut self) {
        for _ in 0..self.pending.len() {
            let Some(op) = self.pending.pop_front() else {
                break;
            };
            match self.try_post(op) {
                Ok(()) => {}
                Err(PostError::Again) => {
                    self.pending.push_front(op);
                    break;
                }
                Err(PostError::Failed(msg)) => self.op_failed(op, msg),
            }
        }
        for rail in (CTL..CTL + self.ctls.len()).chain(0..self.data.len()) {
            self.drain(rail);
        }
    }

    fn drain(&mut self, rail: usize) {
        let mut buf = std::mem::take(&mut self.cqbuf);
        let n = self.cfg.cq_read_count.min(buf.len()).max(1);
        loop {
            let set = if rail >= CTL {
                &mut self.ctls[rail - CTL]
            } else {
                &mut self.data[rail]
            };
            match set.rail.cq_read(&mut buf[..n]) {
                Ok(k) => {
                    for e in &buf[..k] {
                        self.on_entry(rail, e);
                    }
                    if k < n {
                        break;
                    }
                }
                Err(CqError::Again) => break,
                Err(CqError::Avail) => {
                    let Some(err) = set.rail.cq_readerr() else {
                        break;
                    };
                    self.on_error(
                        rail,
                        err.context,
                        format!("{} (errno {})", err.message, err.err),
                    );
                }
                Err(CqError::Failed(msg)) => {
                    self.dropped += 1;
                    let _ = msg;
                    break;
                }
            }
        }
        self.cqbuf = buf;
    }

    fn on_error(&mut self, rail: usize, context: u64, msg: String) {
        let (kind, _, index) = unctx(context & !THEN_MASK);
        match kind {
            K_REQ => {
                self.op_done(Entry(index as u32));
                self.fail_req(Entry(index as u32), msg);
            }
            K_TX => {
                self.tx_free.push(index);
                if let After::Req(req) = then_of(context) {
                    self.op_done(req);
                }
                self.after_failed(then_of(context), msg);
            }
            K_RX => {
                // A receive that failed (too long a message): post it again.
                self.dropped += 1;
                self.post(Op::Rx { rail, slot: index });
            }
            _ => self.dropped += 1,
        }
    }

    fn on_entry(&mut self, rail: usize, e: &CqEntry) {
        if e.flags.has(CqFlags::REMOTE_WRITE) {
            let (seq, comm, nseg) = split_imm(e.data);
            self.remote_segment(comm, seq, nseg, None);
            return;
        }
        let (kind, _, index) = unctx(e.context & !THEN_MASK);
        match kind {
            K_REQ => {
                self.op_done(Entry(index as u32));
                self.segment_done(Entry(index as u32), None);
            }
            K_TX => {
                self.tx_free.push(index);
                match then_of(e.context) {
                    After::Nothing => {}
                    After::Req(req) => {
                        self.op_done(req);
                        self.segment_done(req, None);
                    }
                    After::Connect(id) => {
                        if let Some(c) = self.comms[id as usize].as_mut() {
                            c.state = ConnState::Connected;
                        }
                    }
                }
            }
            K_RX if rail >= CTL => {
                // On the stack: a control message per receive must not
                // allocate.
                let mut buf = [0u8; CTL_SLOT];
                let m = &mut buf[..e.len.min(CTL_SLOT)];
                self.ctls[rail - CTL].rx.read(index, m);
                self.post(Op::Rx { rail, slot: index });
                if !self.on_control(m, e.data) {
                    self.dropped += 1;
                }
            }
            K_RX if self.sendrecv => self.on_chunk(rail, index, e.len, e.data),
            K_RX => self.on_eager(rail, index, e.len, e.data),
            _ => self.dropped += 1,
        }
    }

    /// A segment of a message this endpoint receives: a write completion,
    /// or a SIZE message.
    fn remote_segment(&mut self, comm: u32, seq: u16, nseg: u8, size: Option<u64>) {
        let Some(c) = self.comms.get_mut(comm as usize).and_then(Option::as_mut) else {
            self.dropped += 1;
            return;
        };
        if c.kind != CommKind::Recv {
            self.dropped += 1;
            return;
        }
        match c.recvs.retrieve(seq) {
            Ok(Some(RElem::Req(req))) => {
                let req = *req;
                let Some(r) = self.reqs.get_mut(req) else {
                    return;
                };
                r.need = u32::from(nseg);
                // The size is the peer's word: never more than the receive.
                let len = r.len;
                match size.map(|n| usize::try_from(n).ok().filter(|&n| n <= len)) {
                    Some(None) => self.fail_req(
                        req,
                        format!(
                            "the sender reported {} bytes for a {len}-byte receive",
                            size.unwrap_or(0)
                        ),
                    ),
                    Some(n) => self.segment_done(req, n),
                    None => self.segment_done(req, None),
                }
            }
            _ => self.dropped += 1,
        }
    }

    /// Where a message that came in an rx buffer goes: the receive posted
    /// for its sequence number, or the comm to hold it until that receive
    /// is posted.
    fn arrival(&mut self, comm: u32, seq: u16) -> Arrival {
        let Ok(c) = self.comm(comm, CommKind::Recv) else {
            return Arrival::Stray;
        };
        match c.recvs.status(seq) {
            Status::InProgress => match c.recvs.retrieve(seq) {
                Ok(Some(RElem::Req(req))) => Arrival::Receive(*req),
                _ => Arrival::Stray,
            },
            Status::NotStarted => Arrival::Early,
            Status::Completed => Arrival::Finished,
            Status::Unavailable => Arrival::Stray,
        }
    }

    fn on_eager(&mut self, rail: usize, slot: usize, len: usize, data: u32) {
        let (seq, comm, _) = split_imm(data);
        match self.arrival(comm, seq) {
            Arrival::Receive(req) => self.deliver_eager(req, rail, slot, len),
            Arrival::Early => {
                let c = self.comm(comm, CommKind::Recv).expect("checked");
                let _ = c.recvs.insert(seq, RElem::Eager { rail, slot, len });
            }
            Arrival::Finished | Arrival::Stray => {
                self.dropped += 1;
                self.post(Op::Rx { rail, slot });
            }
        }
    }

    /// A SENDRECV chunk: into its receive, or held until the receive comes.
    fn on_chunk(&mut self, rail: usize, slot: usize, len: usize, data: u32) {
        let (seq, comm, index, last) = split_sr_imm(data);
        let h = HeldChunk {
            seq,
            rail,
            slot,
            len,
            index,
            last,
        };
        match self.arrival(comm, seq) {
            Arrival::Receive(req) => self.deliver_chunk(req, h),
            Arrival::Early => {
                let c = self.comm(comm, CommKind::Recv).expect("checked");
                c.held.push_back(h);
            }
            // The rest of a message whose receive already failed.
            Arrival::Finished => self.post(Op::Rx { rail, slot }),
            // Or (from a peer that ignores credits) beyond the window.
            Arrival::Stray => {
                self.dropped += 1;
                self.post(Op::Rx { rail, slot });
            }
        }
    }

    /// Copies a chunk to its place in its receive; the receive completes
    /// when every chunk up to the last has come.
    fn deliver_chunk(&mut self, req: Entry, h: HeldChunk) {
        let HeldChunk {
            rail,
            slot,
            len,
            index,
            last,
            ..
        } = h;
        let r = self.reqs.get(req).expect("live request").clone();
        if r.state != ReqState::Pending {
            self.post(Op::Rx { rail, slot });
            return;
        }
        let at = index * self.chunk;
        if at + len > r.len || len > self.chunk {
            self.post(Op::Rx { rail, slot });
            self.fail_req(
                req,
                format!(
                    "a message reaching byte {} does not fit the {}-byte receive",
                    at + len,
                    r.len
                ),
            );
            return;
        }
        if len > 0 {
            // SAFETY: `at + len <= r.len` (checked above), and the request's
            // buffer is the caller's registered memory of `r.len` bytes,
            // kept valid while the request is in flight.
            unsafe {
                self.data[rail]
                    .rx
                    .read_to(slot, (r.addr as *mut u8).wrapping_add(at), len)
            };
        }
        self.post(Op::Rx { rail, slot });
        if last {
            self.reqs.get_mut(req).expect("live request").need = index as u32 + 1;
        }
        self.segment_done(req, last.then_some(at + len));
    }

    /// Copies an eager message into its receive and completes it.
    fn deliver_eager(&mut self, req: Entry, rail: usize, slot: usize, len: usize) {
        let r = self.reqs.get(req).expect("live request").clone();
        if len > r.len {
            self.post(Op::Rx { rail, slot });
            self.fail_req(
                req,
                format!(
                    "message of {len} bytes does not fit the {}-byte receive",
                    r.len
                ),
            );
            return;
        }
        if len > 0 {
            // SAFETY: the request's buffer is the caller's registered memory
            // of `r.len >= len` bytes (checked at `irecv`), which the
            // caller keeps valid while the request is in flight.
            unsafe { self.data[rail].rx.read_to(slot, r.addr as *mut u8, len) };
        }
        self.post(Op::Rx { rail, slot });
        if let Some(r) = self.reqs.get_mut(req) {
            r.need = 1;
        }
        self.segment_done(req, Some(len));
    }
}

const THEN_MASK: u64 = 0xff_ffff << 32;

fn then_bits(then: After) -> u64 {
    // The rail field of a tx context is free: it holds what comes after.
    let v: u64 = match then {
        After::Nothing => 0,
        After::Req(e) => 1 << 22 | u64::from(e.0 & 0x3f_ffff),
        After::Connect(id) => 2 << 22 | u64::from(id & 0x3f_ffff),
    };
    v << 32
}

fn then_of(context: u64) -> After {
    let v = (context & THEN_MASK) >> 32;
    match v >> 22 {
        1 => After::Req(Entry((v & 0x3f_ffff) as u32)),
        2 => After::Connect((v & 0x3f_ffff) as u32),
        _ => After::Nothing,
    }
}

fn u32_at(m: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(m.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(m: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(m.get(at..at + 8)?.try_into().ok()?))
}

impl Endpoint {
    /// Handles a control message; false if it was malformed or stray.
    fn on_control(&mut self, m: &[u8], _imm: u32) -> bool {
        match decode_control(m) {
            Ok(Control::Conn {
                listen,
                sender,
                names,
            }) => self.on_conn(listen, sender, &names).is_some(),
            Ok(Control::ConnResp {
                sender,
                receiver,
                names,
            }) => self.on_conn_resp(sender, receiver, &names).is_some(),
            Ok(Control::Ctrl(ctrl)) => self.on_ctrl(ctrl).is_some(),
            Ok(Control::Size {
                comm,
                seq,
                nseg,
                size,
            }) => {
                self.remote_segment(comm, seq, nseg, Some(size));
                true
            }
            Err(_) => false,
        }
    }

    /// The peer's rails in our address vectors; `None` (nothing kept) if
    /// its rail counts differ from ours or a name is refused.
    #[allow(clippy::type_complexity)]
    fn insert_names(
        &mut self,
        names: &RailNames<'_>,
    ) -> Option<([FiAddr; MAX_CONTROL_RAILS], [FiAddr; MAX_RAILS])> {
        if names.data().len() != self.data.len() || names.control().len() != self.ctls.len() {
            // A peer with other rail counts: refuse by ignoring; its
            // connect never completes (and times out).
            return None;
        }
        let mut peer_ctrl = [0; MAX_CONTROL_RAILS];
        for (i, n) in names.control().iter().enumerate() {
            peer_ctrl[i] = self.ctls[i].rail.av_insert(n).ok()?;
        }
        let mut peer_data = [0; MAX_RAILS];
        for (i, n) in names.data().iter().enumerate() {
            peer_data[i] = self.data[i].rail.av_insert(n).ok()?;
        }
        Some((peer_ctrl, peer_data))
    }

    fn on_conn(&mut self, listen: u32, sender: u32, names: &RailNames<'_>) -> Option<()> {
        // What a CONN costs is bounded before anything is spent on it: a
        // listener that exists, room in its backlog, a free comm id.
        if self.comm(listen, CommKind::Listen).ok()?.backlog.len() >= MAX_BACKLOG {
            return None;
        }
        let id = self.new_comm(CommKind::Recv, ConnState::RespPending).ok()?;
        let Some((peer_ctrl, peer_data)) = self.insert_names(names) else {
            self.free_comm(id);
            return None;
        };
        // The same CONN again (a sender's retry): one connection for it.
        let again = self.comms[listen as usize]
            .as_ref()?
            .backlog
            .iter()
            .any(|&b| {
                self.comms[b as usize]
                    .as_ref()
                    .is_some_and(|c| c.remote == sender && c.peer_ctrl[0] == peer_ctrl[0])
            });
        if again {
            self.free_comm(id);
            return None;
        }
        let c = self.comms[id as usize].as_mut()?;
        c.remote = sender;
        c.peer_ctrl = peer_ctrl;
        c.peer_data = peer_data;
        self.comm(listen, CommKind::Listen)
            .ok()?
            .backlog
            .push_back(id);
        Some(())
    }

    fn on_conn_resp(&mut self, sender: u32, receiver: u32, names: &RailNames<'_>) -> Option<()> {
        if !matches!(
            self.comm(sender, CommKind::Send).ok()?.state,
            ConnState::WaitResp
        ) {
            return None;
        }
        let (peer_ctrl, peer_data) = self.insert_names(names)?;
        let c = self.comm(sender, CommKind::Send).ok()?;
        c.remote = receiver;
        c.peer_ctrl = peer_ctrl;
        c.peer_data = peer_data;
        c.state = ConnState::Connected;
        Some(())
    }

    fn on_ctrl(&mut self, ctrl: Ctrl) -> Option<()> {
        if usize::from(ctrl.nkeys) != self.data.len() {
            return None;
        }
        let seq = ctrl.seq;
        let sendrecv = self.sendrecv;
        let c = self.comm(ctrl.comm, CommKind::Send).ok()?;
        c.ctrls_seen += 1;
        if sendrecv {
            // Only a credit: a receive was posted.
            return Some(());
        }
        match c.sends.status(seq) {
            Status::InProgress => match c.sends.retrieve(seq) {
                Ok(Some(SElem::Req(req))) => {
                    let req = *req;
                    let _ = c.sends.replace(seq, SElem::Req(req));
                    self.start_write(req, ctrl);
                }
                _ => return None,
            },
            Status::NotStarted => {
                c.sends.insert(seq, SElem::Ctrl(ctrl)).ok()?;
            }
            // The message went eagerly and is done: the CTRL only counted.
            Status::Completed => {}
            Status::Unavailable => return None,
        }
        Some(())
    }

    /// Registers `len` bytes of the caller's memory at `addr` on every data
    /// rail, and answers a handle of this call's own. With the MR cache (the
    /// default; `OFI_NCCL_MR_CACHE_DISABLE=1` turns it off) the whole pages
    /// around the buffer are registered, and a later registration inside
    /// them shares that registration, counted: each handle holds one
    /// reference, which its [`dereg`](Endpoint::dereg) drops.
    ///
    /// # Safety
    ///
    /// The memory (with the cache: every page it touches) must stay valid
    /// for reads and writes until [`dereg`](Endpoint::dereg), and the rails
    /// may write the buffer whenever a receive naming it is in flight.
    pub unsafe fn reg(&mut self, addr: *mut u8, len: usize) -> Result<MrHandle, NetError> {
        let slot = match self.free_holders.pop() {
            Some(s) => s,
            None if self.holders.len() < MAX_MR_HANDLES => {
                self.holders.push(Holder::default());
                (self.holders.len() - 1) as u32
            }
            None => {
                return Err(NetError::Invalid(format!(
                    "{MAX_MR_HANDLES} registrations are held: deregister some first"
                )));
            }
        };
        // SAFETY: this function's contract, passed on.
        match unsafe { self.backing(addr, len) } {
            Ok(b) => {
                let h = &mut self.holders[slot as usize];
                h.backing = Some(b);
                Ok(MrHandle(slot | (h.generation << MR_SLOT_BITS)))
            }
            Err(e) => {
                self.free_holders.push(slot);
                Err(e)
            }
        }
    }

    /// The registration `addr..addr+len` is in, with one more reference
    /// (from the cache), or a new one.
    ///
    /// # Safety
    ///
    /// As [`reg`](Endpoint::reg).
    unsafe fn backing(&mut self, addr: *mut u8, len: usize) -> Result<u32, NetError> {
        let (start, span) = if self.cfg.mr_cache_disable || len == 0 {
            (addr, len)
        } else {
            if let Some(h) = self.cache.lookup(addr as u64, len as u64).map_err(perr)? {
                return Ok(h);
            }
            let a = addr as u64;
            let lo = a & !(PAGE - 1);
            let hi = (a + len as u64).next_multiple_of(PAGE);
            (addr.wrapping_sub((a - lo) as usize), (hi - lo) as usize)
        };
        let mut regs = Vec::with_capacity(self.data.len());
        for d in &mut self.data {
            // SAFETY: this function's contract is the rail's (the page
            // widening stays inside pages the caller vouches for).
            match unsafe { d.rail.mr_reg(start, span) } {
                Ok(r) => regs.push(r),
                Err(e) => {
                    for (d, r) in self.data.iter_mut().zip(&regs) {
                        let _ = d.rail.mr_close(r.handle);
                    }
                    return Err(perr(e));
                }
            }
        }
        let entry = MrEntry {
            addr: start as u64,
            len: span,
            regs,
        };
        let i = match self.mrs.iter().position(Option::is_none) {
            Some(i) => {
                self.mrs[i] = Some(entry);
                i
            }
            None => {
                self.mrs.push(Some(entry));
                self.mrs.len() - 1
            }
        } as u32;
        if !self.cfg.mr_cache_disable && len > 0 {
            if let Err(e) = self.cache.insert(start as u64, span as u64, i) {
                self.close_backing(i);
                return Err(perr(e));
            }
        }
        Ok(i)
    }

    fn close_backing(&mut self, b: u32) {
        if let Some(m) = self.mrs.get_mut(b as usize).and_then(Option::take) {
            for (d, r) in self.data.iter_mut().zip(&m.regs) {
                let _ = d.rail.mr_close(r.handle);
            }
        }
    }

    /// The registration behind a live handle.
    fn backing_of(&self, h: MrHandle) -> Result<u32, NetError> {
        let slot = h.0 & MR_SLOT_MASK;
        self.holders
            .get(slot as usize)
            .filter(|x| x.generation == h.0 >> MR_SLOT_BITS)
            .and_then(|x| x.backing)
            .ok_or_else(|| {
                NetError::Invalid(format!(
                    "registration {:#x} is not live (deregistered already, or never given)",
                    h.0
                ))
            })
    }

    /// Drops this handle's reference on its registration (with the cache,
    /// the last reference closes it on every rail). The handle is dead
    /// after: a second `dereg` of it is refused, and touches no other
    /// holder's reference.
    pub fn dereg(&mut self, h: MrHandle) -> Result<(), NetError> {
        let b = self.backing_of(h)?;
        let slot = &mut self.holders[(h.0 & MR_SLOT_MASK) as usize];
        slot.backing = None;
        slot.generation = (slot.generation + 1) & (u32::MAX >> MR_SLOT_BITS);
        self.free_holders.push(h.0 & MR_SLOT_MASK);
        let cached =
            self.mrs[b as usize].as_ref().is_some_and(|m| m.len > 0) && !self.cfg.mr_cache_disable;
        if cached && self.cache.release(&b).map_err(perr)? == Released::StillUsed {
            return Ok(());
        }
        let m = self.mrs[b as usize]
            .take()
            .expect("a live handle's registration");
        for (d, r) in self.data.iter_mut().zip(&m.regs) {
            d.rail.mr_close(r.handle).map_err(perr)?;
        }
        Ok(())
    }

    /// Registrations held on the rails (handles sharing one through the
    /// cache count once).
    pub fn registrations(&self) -> usize {
        self.mrs.iter().flatten().count()
    }

    /// Checks that `len` bytes at `addr` lie in `h`'s registration; answers
    /// the registration.
    fn check_mr(&self, h: MrHandle, addr: u64, len: usize) -> Result<u32, NetError> {
        let b = self.backing_of(h)?;
        let m = self.mrs[b as usize]
            .as_ref()
            .expect("a live handle's registration");
        let inside = addr >= m.addr
            && addr
                .checked_add(len as u64)
                .is_some_and(|e| e <= m.addr + m.len as u64);
        if len > 0 && !inside {
            return Err(NetError::Invalid(format!(
                "{len} bytes at {addr:#x} are outside registration {:#x}",
                h.0
            )));
        }
        Ok(b)
    }

    fn new_req(
        &mut self,
        send: bool,
        comm: u32,
        seq: u16,
        addr: u64,
        len: usize,
        mr: u32,
    ) -> Result<Request, NetError> {
        let entry = self.reqs.take().map_err(perr)?;
        self.generation = self.generation.wrapping_add(1);
        let generation = self.generation;
        *self.reqs.get_mut(entry).expect("just taken") = Req {
            generation,
            state: ReqState::Pending,
            send,
            comm,
            seq,
            addr,
            len,
            mr,
            need: 0,
            got: 0,
            size: None,
            outstanding: 0,
        };
        Ok(Request { entry, generation })
    }

    /// Starts sending `len` bytes at `addr` (inside registration `mr`).
    /// Answers `None` when the comm cannot take another message now (128
    /// in flight, or too far ahead of the receiver): call `test` on earlier
    /// requests and try again.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid and unchanged until the request completes.
    pub unsafe fn isend(
        &mut self,
        comm: SendComm,
        addr: *const u8,
        len: usize,
        mr: MrHandle,
    ) -> Result<Option<Request>, NetError> {
        if self.sendrecv && len.div_ceil(self.chunk) > SENDRECV_MAX_CHUNKS {
            return Err(NetError::Invalid(format!(
                "{len} bytes: OFI_NCCL_PROTOCOL=SENDRECV carries at most {} bytes a message",
                SENDRECV_MAX_CHUNKS * self.chunk
            )));
        }
        self.progress();
        let mr = self.check_mr(mr, addr as u64, len)?;
        let eager_max = self.cfg.eager_max_size;
        let c = self.connected(comm.0, CommKind::Send)?;
        // Both protocols: no more than 128 ahead of the receives posted.
        let ahead = c.started >= c.ctrls_seen + MAX_INFLIGHT as u64;
        if c.inflight >= MAX_INFLIGHT || ahead {
            return Ok(None);
        }
        let seq = c.next_seq;
        let ctrl = match c.sends.retrieve(seq) {
            Ok(Some(SElem::Ctrl(ctrl))) => Some(*ctrl),
            _ => None,
        };
        let req = self.new_req(true, comm.0, seq, addr as u64, len, mr)?;
        let c = self.comm(comm.0, CommKind::Send)?;
        if let Err(e) = c.sends.put(seq, SElem::Req(req.entry)) {
            let _ = self.reqs.give(req.entry);
            return Err(NetError::Invalid(format!("sequence window: {e}")));
        }
        c.next_seq = (seq + 1) & 0x3ff;
        c.inflight += 1;
        c.started += 1;
        let (remote, peer_data) = (c.remote, c.peer_data);
        if self.sendrecv {
            // In order on one rail: the receiver places chunks by arrival.
            let rail = self.sched.schedule(0).stripes()[0].rail as usize;
            let n = len.div_ceil(self.chunk).max(1);
            self.reqs.get_mut(req.entry).expect("live").need = n as u32;
            for i in 0..n {
                let offset = i * self.chunk;
                self.post(Op::Eager {
                    req: req.entry,
                    rail,
                    offset,
                    len: self.chunk.min(len - offset),
                    dest: peer_data[rail],
                    imm: sr_imm(seq, remote, i, i + 1 == n),
                });
            }
        } else if len <= eager_max {
            let rail = self.sched.schedule(len).stripes()[0].rail as usize;
            let r = self.reqs.get_mut(req.entry).expect("live");
            r.need = 1;
            self.post(Op::Eager {
                req: req.entry,
                rail,
                offset: 0,
                len,
                dest: peer_data[rail],
                imm: imm(seq, remote, 1),
            });
        } else if let Some(ctrl) = ctrl {
            self.start_write(req.entry, ctrl);
        }
        Ok(Some(req))
    }

    /// Writes a send whose CTRL has arrived.
    fn start_write(&mut self, req: Entry, ctrl: Ctrl) {
        let r = self.reqs.get(req).expect("live").clone();
        if r.len <= self.cfg.eager_max_size {
            // Went eagerly: the CTRL only counted.
            return;
        }
        if r.len as u64 > ctrl.len {
            self.fail_req(
                req,
                format!(
                    "the receiver posted {} bytes for a {}-byte send",
                    ctrl.len, r.len
                ),
            );
            return;
        }
        let Some(c) = self.comms.get(r.comm as usize).and_then(Option::as_ref) else {
            return;
        };
        let (remote, peer_data) = (c.remote, c.peer_data);
        // Control messages of a comm spread over the control rails by seq.
        let ctl = usize::from(r.seq) % self.ctls.len();
        let peer_ctrl = c.peer_ctrl[ctl];
        let sched = self.sched.schedule(r.len);
        let short = (r.len as u64) < ctrl.len;
        let nseg = sched.len() as u8 + u8::from(short);
        let im = imm(r.seq, remote, nseg);
        if let Some(r) = self.reqs.get_mut(req) {
            r.need = u32::from(nseg);
        }
        let _ = ctrl.nkeys;
        for st in sched.stripes() {
            let rail = st.rail as usize;
            // The CTRL's address is virtual or an offset into the
            // receiver's registration, as its provider addresses writes.
            let remote_addr = ctrl.addr + st.offset as u64;
            self.post(Op::Write {
                req,
                rail,
                offset: st.offset,
                len: st.len,
                dest: peer_data[rail],
                remote: remote_addr,
                key: ctrl.keys[rail],
                imm: im,
            });
        }
        if short {
            let mut m = [0u8; 24];
            m[0] = SIZE;
            m[4..8].copy_from_slice(&remote.to_le_bytes());
            m[8..12].copy_from_slice(&u32::from(r.seq).to_le_bytes());
            m[12..16].copy_from_slice(&u32::from(nseg).to_le_bytes());
            m[16..24].copy_from_slice(&(r.len as u64).to_le_bytes());
            if !self.ctl_send(&m, ctl, peer_ctrl, im, After::Req(req)) {
                self.fail_req(req, "no control buffer for the size message".into());
            }
        }
    }

    /// Starts receiving up to `len` bytes into `addr` (inside registration
    /// `mr`). Answers `None` when 128 receives are in flight.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid for writes, and be left alone, until the
    /// request completes.
    pub unsafe fn irecv(
        &mut self,
        comm: RecvComm,
        addr: *mut u8,
        len: usize,
        mr: MrHandle,
    ) -> Result<Option<Request>, NetError> {
        self.progress();
        let mr = self.check_mr(mr, addr as u64, len)?;
        let (no_tx, nctl) = (self.tx_free.is_empty(), self.ctls.len());
        let c = self.connected(comm.0, CommKind::Recv)?;
        // Its CTRL needs a tx slot.
        if c.inflight >= MAX_INFLIGHT || no_tx {
            return Ok(None);
        }
        let seq = c.next_seq;
        let early = match c.recvs.retrieve(seq) {
            Ok(Some(RElem::Eager { rail, slot, len })) => Some((*rail, *slot, *len)),
            _ => None,
        };
        let req = self.new_req(false, comm.0, seq, addr as u64, len, mr)?;
        let c = self.comm(comm.0, CommKind::Recv)?;
        if let Err(e) = c.recvs.put(seq, RElem::Req(req.entry)) {
            let _ = self.reqs.give(req.entry);
            return Err(NetError::Invalid(format!("sequence window: {e}")));
        }
        c.next_seq = (seq + 1) & 0x3ff;
        c.inflight += 1;
        let ctl = usize::from(seq) % nctl;
        let (remote, peer_ctrl) = (c.remote, c.peer_ctrl[ctl]);
        if self.sendrecv {
            // Chunks that came first, in their order.
            let mut i = 0;
            while let Some(&h) = self.comms[comm.0 as usize]
                .as_ref()
                .and_then(|c| c.held.get(i))
            {
                if h.seq == seq {
                    self.comms[comm.0 as usize]
                        .as_mut()
                        .expect("live")
                        .held
                        .remove(i);
                    self.deliver_chunk(req.entry, h);
                } else {
                    i += 1;
                }
            }
        }
        // The CTRL goes even when the message came eagerly (and in
        // SENDRECV, where it is only a credit): the sender counts CTRLs to
        // stay within the window. Built on the stack: no allocation.
        let mut m = [0u8; 32 + 8 * MAX_RAILS];
        m[0] = CTRL;
        m[4..8].copy_from_slice(&remote.to_le_bytes());
        m[8..12].copy_from_slice(&u32::from(seq).to_le_bytes());
        // Where the receive starts, as the peer's writes must name it: its
        // address, or (offset addressing, the tcp providers) its offset in
        // the registration, which may begin pages before `addr`.
        let base = if self.virt {
            addr as u64
        } else {
            self.mrs[mr as usize]
                .as_ref()
                .map_or(0, |m| addr as u64 - m.addr)
        };
        m[12..20].copy_from_slice(&base.to_le_bytes());
        m[20..28].copy_from_slice(&(len as u64).to_le_bytes());
        m[28] = self.data.len() as u8;
        for rail in 0..self.data.len() {
            let key = self.mrs[mr as usize]
                .as_ref()
                .map_or(0, |m| m.regs[rail].key);
            m[32 + 8 * rail..40 + 8 * rail].copy_from_slice(&key.to_le_bytes());
        }
        let used = 32 + 8 * self.data.len();
        // A tx slot was free when the receive began (checked above), and
        // nothing since took one.
        let sent = self.ctl_send(&m[..used], ctl, peer_ctrl, 0, After::Nothing);
        debug_assert!(sent);
        if let Some((rail, slot, elen)) = early {
            self.deliver_eager(req.entry, rail, slot, elen);
        }
        Ok(Some(req))
    }

    /// Drives progress and reports whether `req` is done: `Some(size)` (and
    /// the request is gone), or `None` while it runs. A failed request is an
    /// error (and gone).
    pub fn test(&mut self, req: Request) -> Result<Option<usize>, NetError> {
        let live = self
            .reqs
            .get(req.entry)
            .is_some_and(|r| r.generation == req.generation && r.state != ReqState::Free);
        if !live {
            return Err(NetError::Invalid(
                "no such request (already completed?)".into(),
            ));
        }
        let busy = |r: &Req| r.state == ReqState::Pending || r.outstanding > 0;
        if self.reqs.get(req.entry).is_some_and(busy) {
            self.progress();
        }
        let r = self.reqs.get_mut(req.entry).expect("live");
        if r.outstanding > 0 {
            // Failed, but some of its posts are still out.
            return Ok(None);
        }
        match r.state.clone() {
            ReqState::Pending => Ok(None),
            ReqState::Done(size) => {
                r.state = ReqState::Free;
                let _ = self.reqs.give(req.entry);
                Ok(Some(size))
            }
            ReqState::Failed(msg) => {
                r.state = ReqState::Free;
                let _ = self.reqs.give(req.entry);
                Err(NetError::Request(msg))
            }
            ReqState::Free => unreachable!("checked live above"),
        }
    }

    /// Closes a comm. Its requests still in flight fail ("comm closed");
    /// eager messages held for it give their rx buffers back.
    pub fn close(&mut self, comm: impl Into<CommRef>) -> Result<(), NetError> {
        let id = comm.into().0;
        let Some(c) = self.comms.get(id as usize).and_then(Option::as_ref) else {
            return Err(NetError::Invalid(format!("no comm {id}")));
        };
        let mut held = Vec::new();
        let mut reqs = Vec::new();
        for seq in 0..1024u16 {
            match c.recvs.retrieve(seq) {
                Ok(Some(RElem::Eager { rail, slot, .. })) => held.push((*rail, *slot)),
                Ok(Some(RElem::Req(r))) => reqs.push(*r),
                _ => {}
            }
            if let Ok(Some(SElem::Req(r))) = c.sends.retrieve(seq) {
                reqs.push(*r);
            }
        }
        held.extend(c.held.iter().map(|h| (h.rail, h.slot)));
        for (rail, slot) in held {
            self.post(Op::Rx { rail, slot });
        }
        for r in reqs {
            self.fail_req(r, "comm closed".into());
        }
        self.free_comm(id);
        Ok(())
    }
}

/// Any comm, for [`Endpoint::close`].
#[derive(Debug, Clone, Copy)]
pub struct CommRef(u32);

impl From<ListenComm> for CommRef {
    fn from(c: ListenComm) -> CommRef {
        CommRef(c.0)
    }
}
impl From<SendComm> for CommRef {
    fn from(c: SendComm) -> CommRef {
        CommRef(c.0)
    }
}
impl From<RecvComm> for CommRef {
    fn from(c: RecvComm) -> CommRef {
        CommRef(c.0)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        for m in self.mrs.drain(..).flatten() {
            for (d, r) in self.data.iter_mut().zip(&m.regs) {
                let _ = d.rail.mr_close(r.handle);
            }
        }
        for (c, r) in self.ctls.iter_mut().zip(&self.tx_regs) {
            let _ = c.rail.mr_close(r.handle);
            let _ = c.rail.mr_close(c.rx_reg.handle);
        }
        for d in &mut self.data {
            let _ = d.rail.mr_close(d.rx_reg.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs_provider::ErnicProvider;

    #[test]
    fn a_handle_in_hex_is_hex_digits_and_nothing_else() {
        let h = Handle::from_hex("00Ff7a").expect("hex digits");
        assert_eq!(h.0, [0x00, 0xff, 0x7a]);
        assert_eq!(h.to_hex(), "00ff7a");
        // Found by the net_decode fuzz target: u8::from_str_radix takes a
        // sign, so "+f" was read as 0x0f, a text that is not the handle's.
        for bad in ["+f", "-1", "0x", " 1", "1", "zz", "é0"] {
            assert_eq!(Handle::from_hex(bad), None, "{bad:?}");
        }
    }

    fn conn_bytes(kind: u8, names: &[&[u8]], nd: u8, nc: u8) -> Vec<u8> {
        let mut m = vec![kind, 0, 0, 0];
        m.extend_from_slice(&7u32.to_le_bytes());
        m.extend_from_slice(&9u32.to_le_bytes());
        m.extend_from_slice(&[nd, nc]);
        for n in names {
            m.push(n.len() as u8);
            m.extend_from_slice(n);
        }
        m
    }

    #[test]
    fn handles_decode_and_bad_ones_are_named() {
        let mut h = vec![0u8; HANDLE_LEN];
        h[0] = 3;
        h[1..4].copy_from_slice(b"abc");
        h[4..8].copy_from_slice(&0x0102_0304u32.to_le_bytes());
        assert_eq!(
            decode_handle(&h),
            Ok(HandleRef {
                name: b"abc",
                listen: 0x0102_0304
            })
        );
        assert_eq!(decode_handle(&h[..64]), Err(DecodeError::HandleLen(64)));
        h[0] = 0;
        assert_eq!(decode_handle(&h), Err(DecodeError::HandleName(0)));
        h[0] = 124;
        assert_eq!(decode_handle(&h), Err(DecodeError::HandleName(124)));
        h[0] = 123;
        assert!(decode_handle(&h).is_ok(), "a name that just fits");
    }

    #[test]
    fn control_messages_decode_with_their_bounds() {
        let m = conn_bytes(CONN, &[b"c0", b"d0", b"d1"], 2, 1);
        let Ok(Control::Conn {
            listen,
            sender,
            names,
        }) = decode_control(&m)
        else {
            panic!("{:?}", decode_control(&m));
        };
        assert_eq!((listen, sender), (7, 9));
        assert_eq!(names.control(), [b"c0"]);
        assert_eq!(names.data(), [&b"d0"[..], b"d1"]);
        // Every cut is refused, none panics.
        for n in 0..m.len() {
            assert!(decode_control(&m[..n]).is_err(), "cut at {n}");
        }
        let m = conn_bytes(CONN_RESP, &[], 16, 1);
        assert_eq!(
            decode_control(&m),
            Err(DecodeError::Rails {
                data: 16,
                control: 1
            })
        );
        let m = conn_bytes(CONN, &[b"x"], 0, 5);
        assert!(matches!(decode_control(&m), Err(DecodeError::Rails { .. })));
        let m = conn_bytes(CONN, &[b"long name"], 0, 1);
        assert_eq!(
            decode_control(&m[..m.len() - 1]),
            Err(DecodeError::Name { index: 0 })
        );

        let mut ctrl = [0u8; 32 + 8];
        ctrl[0] = CTRL;
        ctrl[4..8].copy_from_slice(&5u32.to_le_bytes());
        ctrl[8..12].copy_from_slice(&1023u32.to_le_bytes());
        ctrl[12..20].copy_from_slice(&0x1000u64.to_le_bytes());
        ctrl[20..28].copy_from_slice(&64u64.to_le_bytes());
        ctrl[28] = 1;
        ctrl[32..40].copy_from_slice(&0xabcdu64.to_le_bytes());
        let Ok(Control::Ctrl(c)) = decode_control(&ctrl) else {
            panic!("CTRL");
        };
        assert_eq!((c.comm, c.seq, c.addr, c.len), (5, 1023, 0x1000, 64));
        assert_eq!((c.nkeys, c.keys[0]), (1, 0xabcd));
        assert_eq!(
            decode_control(&ctrl[..39]),
            Err(DecodeError::Short {
                kind: "CTRL",
                got: 39
            })
        );
        ctrl[28] = 16;
        assert_eq!(decode_control(&ctrl), Err(DecodeError::Keys(16)));
        ctrl[28] = 1;
        ctrl[8..12].copy_from_slice(&1024u32.to_le_bytes());
        assert_eq!(decode_control(&ctrl), Err(DecodeError::Seq(1024)));

        let mut size = [0u8; 24];
        size[0] = SIZE;
        size[12..16].copy_from_slice(&17u32.to_le_bytes());
        assert_eq!(decode_control(&size), Err(DecodeError::Segments(17)));
        size[12..16].copy_from_slice(&2u32.to_le_bytes());
        size[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            decode_control(&size),
            Ok(Control::Size {
                comm: 0,
                seq: 0,
                nseg: 2,
                size: u64::MAX
            })
        );
        assert_eq!(decode_control(&[]), Err(DecodeError::Empty));
        assert_eq!(decode_control(&[9]), Err(DecodeError::Kind(9)));
    }

    /// A peer's SIZE message claiming more bytes than the receive holds
    /// fails that receive instead of reporting the claim to the caller.
    #[test]
    fn a_size_beyond_the_receive_fails_it() {
        let p = ErnicProvider::new(ernic_verbs::Fabric::new());
        let mut a = Endpoint::open(&p, 1, Config::default()).unwrap();
        let mut b = Endpoint::open(&p, 1, Config::default()).unwrap();
        let (l, h) = b.listen().unwrap();
        let mut c = Connector::new(h);
        let (mut s, mut r) = (None, None);
        for _ in 0..100_000 {
            if s.is_none() {
                s = a.connect(&mut c).unwrap();
            }
            if r.is_none() {
                r = b.accept(l).unwrap();
            }
            if s.is_some() && r.is_some() {
                break;
            }
        }
        let r = r.expect("accepted");
        let mut dst = vec![0u8; 100_000];
        // SAFETY: `dst` outlives the registration and the receive (tested
        // to its end below).
        let req = unsafe {
            let md = b.reg(dst.as_mut_ptr(), dst.len()).unwrap();
            b.irecv(r, dst.as_mut_ptr(), dst.len(), md)
                .unwrap()
                .unwrap()
        };
        let mut m = [0u8; 24];
        m[0] = SIZE;
        m[4..8].copy_from_slice(&r.0.to_le_bytes());
        m[12..16].copy_from_slice(&1u32.to_le_bytes());
        m[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(b.on_control(&m, 0));
        let e = b.test(req).unwrap_err();
        assert!(
            e.to_string()
                .contains("reported 1099511627776 bytes for a 100000-byte receive"),
            "{e}"
        );
    }

    #[test]
    fn each_reg_is_its_own_handle_and_a_second_dereg_is_refused() {
        let p = ErnicProvider::new(ernic_verbs::Fabric::new());
        let mut ep = Endpoint::open(&p, 1, Config::default()).unwrap();
        let mut buf = vec![0u8; 8192];
        // SAFETY: `buf` outlives the registrations, all dropped below.
        let (x, y) = unsafe {
            (
                ep.reg(buf.as_mut_ptr(), buf.len()).unwrap(),
                ep.reg(buf.as_mut_ptr(), buf.len()).unwrap(),
            )
        };
        assert_ne!(x, y);
        ep.dereg(x).unwrap();
        assert!(matches!(ep.dereg(x), Err(NetError::Invalid(_))));
        assert!(ep.check_mr(y, buf.as_ptr() as u64, buf.len()).is_ok());
        // The freed slot is reused with a new generation: x stays dead.
        // SAFETY: as above.
        let z = unsafe { ep.reg(buf.as_mut_ptr(), 16).unwrap() };
        assert_eq!(z.0 & MR_SLOT_MASK, x.0 & MR_SLOT_MASK);
        assert_ne!(z, x);
        assert!(ep.dereg(x).is_err());
        ep.dereg(z).unwrap();
        ep.dereg(y).unwrap();
        assert_eq!(ep.registrations(), 0);
    }
}
