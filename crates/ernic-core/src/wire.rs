//! The data path's wire format between servers: one fixed header, then the
//! payload (at most [`MAX_PAYLOAD`] bytes).
//!
//! The mesh carries these messages without looking inside, but for one
//! bit it reads on purpose: [`flags::BY_REF`] (through [`is_by_ref`]), to
//! refuse a by-reference message relayed from any node but the requester
//! itself, since a reference is read from the process that proved it holds
//! the connection. Every other field's meaning belongs to the data path
//! (seed 001, "The ionic Wire Protocol"). A request names remote memory
//! only by rkey; the responder resolves it against its own MR table. A WQE
//! larger than [`MAX_PAYLOAD`] travels as several messages carrying the
//! same request id, each with its offset in the whole.
//!
//! Two tiers, as smoltcp's wire modules: [`Packet`] is a lossless view whose
//! accessors never panic once [`Packet::new_checked`] succeeded; [`Repr`] is
//! the validated meaning, parsed and emitted. All fields are little-endian.

use crate::types::{Gid, Qpn};
use crate::wr::WcStatus;

/// Largest payload one message carries (16 MiB).
pub const MAX_PAYLOAD: usize = 16 << 20;

/// Length of the header.
pub const HEADER_LEN: usize = 96;

mod field {
    use std::ops::Range;
    pub const OP: usize = 0;
    pub const FLAGS: usize = 1;
    pub const STATUS: Range<usize> = 2..4;
    pub const SRC_QPN: Range<usize> = 4..8;
    pub const DST_QPN: Range<usize> = 8..12;
    pub const REQ_ID: Range<usize> = 12..20;
    pub const RKEY: Range<usize> = 20..24;
    pub const ADDR: Range<usize> = 24..32;
    pub const LEN: Range<usize> = 32..36;
    pub const IMM: Range<usize> = 36..40;
    pub const OPERAND0: Range<usize> = 40..48;
    pub const OPERAND1: Range<usize> = 48..56;
    pub const TOTAL: Range<usize> = 56..60;
    pub const OFFSET: Range<usize> = 60..64;
    pub const SGID: Range<usize> = 64..80;
    pub const DGID: Range<usize> = 80..96;
}

/// The operation of a message.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    /// SEND (also SEND_IMM, SEND_INV and datagrams; see flags).
    Send,
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate: the last chunk consumes a receive.
    WriteImm,
    /// RDMA READ request; `len` is the length asked for.
    ReadReq,
    /// Compare-and-swap: operand 0 compares, operand 1 swaps.
    AtomicCas,
    /// Fetch-and-add: operand 0 adds.
    AtomicFa,
    /// Reply to SEND and WRITE, carrying the responder's status.
    Ack,
    /// Reply to a READ, carrying the data.
    ReadResp,
    /// Reply to an atomic; operand 0 is the old value.
    AtomicResp,
    /// An opcode this version does not know.
    Unknown(u8),
}

impl From<u8> for Op {
    fn from(v: u8) -> Op {
        match v {
            1 => Op::Send,
            2 => Op::Write,
            3 => Op::WriteImm,
            4 => Op::ReadReq,
            5 => Op::AtomicCas,
            6 => Op::AtomicFa,
            16 => Op::Ack,
            17 => Op::ReadResp,
            18 => Op::AtomicResp,
            v => Op::Unknown(v),
        }
    }
}

impl From<Op> for u8 {
    fn from(op: Op) -> u8 {
        match op {
            Op::Send => 1,
            Op::Write => 2,
            Op::WriteImm => 3,
            Op::ReadReq => 4,
            Op::AtomicCas => 5,
            Op::AtomicFa => 6,
            Op::Ack => 16,
            Op::ReadResp => 17,
            Op::AtomicResp => 18,
            Op::Unknown(v) => v,
        }
    }
}

impl Op {
    /// Whether this is a reply (it completes a request of the receiver's).
    pub fn is_reply(self) -> bool {
        matches!(self, Op::Ack | Op::ReadResp | Op::AtomicResp)
    }
}

/// Flag bits.
pub mod flags {
    /// `imm` carries immediate data.
    pub const IMM: u8 = 1 << 0;
    /// `imm` carries an rkey to invalidate (SEND_INV).
    pub const INVALIDATE: u8 = 1 << 1;
    /// The sender asked for a solicited event.
    pub const SOLICITED: u8 = 1 << 2;
    /// A datagram: the payload starts with the 40-byte GRH; `imm` may still
    /// carry immediate data; operand 0 is the Q_Key.
    pub const DATAGRAM: u8 = 1 << 3;
    /// The last message of a request carried in several.
    pub const LAST: u8 = 1 << 4;
    /// The payload is not the data but where it lies in the sender's own
    /// memory: operand 0 runs of [`REF_RUN_LEN`](super::REF_RUN_LEN)
    /// bytes, each a little-endian address and length, that together hold
    /// `len` bytes. Only a node on the same host that has proved who the
    /// sender is reads them (see [`Remote`](crate::Remote)): a responder,
    /// the requester's SEND or WRITE payload; a requester, the bytes its
    /// READ asked for (a READ response).
    pub const BY_REF: u8 = 1 << 5;
    /// Bits this version knows.
    pub const KNOWN: u8 = IMM | INVALIDATE | SOLICITED | DATAGRAM | LAST | BY_REF;
}

/// Bytes of one run in a by-reference payload: address and length.
pub const REF_RUN_LEN: usize = 16;

/// Most runs one by-reference message names.
pub const MAX_REF_RUNS: usize = 64;

/// The runs of a by-reference payload, as (address, length). The payload
/// must have passed [`Repr::parse`], which checks its shape.
pub fn ref_runs(payload: &[u8]) -> impl Iterator<Item = (u64, u64)> + '_ {
    payload.chunks_exact(REF_RUN_LEN).map(|r| {
        let mut a = [0u8; 8];
        let mut l = [0u8; 8];
        a.copy_from_slice(&r[..8]);
        l.copy_from_slice(&r[8..]);
        (u64::from_le_bytes(a), u64::from_le_bytes(l))
    })
}

/// Writes `runs` as a by-reference payload into `out` (which holds
/// [`REF_RUN_LEN`] bytes for each): the encoding [`ref_runs`] reads.
pub fn put_ref_runs(out: &mut [u8], runs: &[(u64, u64)]) {
    for (o, (addr, n)) in out.chunks_exact_mut(REF_RUN_LEN).zip(runs) {
        o[..8].copy_from_slice(&addr.to_le_bytes());
        o[8..].copy_from_slice(&n.to_le_bytes());
    }
}

/// Whether a data message (of any validity) says its payload is by
/// reference: the mesh refuses such messages from anyone but the requester
/// itself.
pub fn is_by_ref(msg: &[u8]) -> bool {
    msg.get(field::FLAGS)
        .is_some_and(|f| f & flags::BY_REF != 0)
}

/// The message was malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Shorter than the header.
    #[error("data message of {0} bytes is shorter than its {HEADER_LEN}-byte header")]
    Truncated(usize),
    /// The payload is not the length the header says, or is too long.
    #[error("data message says {said} payload bytes but carries {got}")]
    BadLength {
        /// What `len` (or nothing, for READ requests) says.
        said: usize,
        /// What follows the header.
        got: usize,
    },
    /// An opcode this version does not know.
    #[error("unknown data opcode {0}")]
    UnknownOp(u8),
    /// Flag bits this version does not know.
    #[error("unknown flag bits {0:#04x}")]
    UnknownFlags(u8),
    /// A status number that is not a completion status.
    #[error("unknown completion status {0}")]
    UnknownStatus(u16),
    /// A by-reference payload of the wrong shape: not a SEND, WRITE or READ
    /// response, no runs or too many, or runs that do not add up to `len`.
    #[error("malformed by-reference payload")]
    BadReference,
    /// A READ request for more than one reply can carry: its answer would
    /// be a message of that size (the requester asks in pieces of at most
    /// [`MAX_PAYLOAD`]).
    #[error("READ request for {0} bytes exceeds the {MAX_PAYLOAD}-byte payload of one reply")]
    ReadTooLong(u32),
    /// A chunk that does not fit in its whole.
    #[error("chunk at offset {offset} of {len} bytes exceeds the total {total}")]
    BadChunk {
        /// Offset.
        offset: u32,
        /// Length.
        len: u32,
        /// Total.
        total: u32,
    },
    /// A SEND or WRITE_IMM request whose RNR retry count (operand 1) is
    /// past 7.
    #[error("RNR retry field {0} of a request is past 8 (7 retries, plus one)")]
    BadRnrRetry(u64),
}

/// A view over a data message's bytes.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

macro_rules! getter {
    ($name:ident, $f:ident, u32) => {
        #[doc = concat!("The `", stringify!($name), "` field.")]
        pub fn $name(&self) -> u32 {
            let b = &self.buffer.as_ref()[field::$f];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        }
    };
    ($name:ident, $f:ident, u64) => {
        #[doc = concat!("The `", stringify!($name), "` field.")]
        pub fn $name(&self) -> u64 {
            let mut v = [0u8; 8];
            v.copy_from_slice(&self.buffer.as_ref()[field::$f]);
            u64::from_le_bytes(v)
        }
    };
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// A view without checks; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view over a buffer at least as long as the header; after this
    /// succeeds no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let n = buffer.as_ref().len();
        if n < HEADER_LEN {
            return Err(WireError::Truncated(n));
        }
        Ok(Packet { buffer })
    }

    /// The raw opcode.
    pub fn op(&self) -> Op {
        Op::from(self.buffer.as_ref()[field::OP])
    }

    /// The raw flag bits.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The raw status.
    pub fn status(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::STATUS];
        u16::from_le_bytes([b[0], b[1]])
    }

    getter!(src_qpn, SRC_QPN, u32);
    getter!(dst_qpn, DST_QPN, u32);
    getter!(req_id, REQ_ID, u64);
    getter!(rkey, RKEY, u32);
    getter!(addr, ADDR, u64);
    getter!(length, LEN, u32);
    getter!(imm, IMM, u32);
    getter!(operand0, OPERAND0, u64);
    getter!(operand1, OPERAND1, u64);
    getter!(total, TOTAL, u32);
    getter!(offset, OFFSET, u32);

    /// The sender's GID.
    pub fn sgid(&self) -> Gid {
        Gid::from_slice(&self.buffer.as_ref()[field::SGID]).expect("a 16-byte field")
    }

    /// The destination GID.
    pub fn dgid(&self) -> Gid {
        Gid::from_slice(&self.buffer.as_ref()[field::DGID]).expect("a 16-byte field")
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

/// What a data message says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// The operation.
    pub op: Op,
    /// Flag bits (see [`flags`]).
    pub flags: u8,
    /// For replies: how the request ended at the responder.
    pub status: WcStatus,
    /// The requesting QP (for replies: the QP the reply is for).
    pub src_qpn: Qpn,
    /// The responding QP.
    pub dst_qpn: Qpn,
    /// The requester's name for the request; replies carry it back.
    pub req_id: u64,
    /// Remote key of WRITE, READ and atomics.
    pub rkey: u32,
    /// Remote address of this message's bytes.
    pub addr: u64,
    /// Payload bytes (or, for a READ request, bytes asked for).
    pub len: u32,
    /// Immediate data or the rkey to invalidate.
    pub imm: u32,
    /// Atomic compare/add, old value in replies, or a datagram's Q_Key.
    pub operand0: u64,
    /// Atomic swap. A SEND or WRITE_IMM request (a message that needs a
    /// receive) carries the requester's `rnr_retry` here instead, plus one;
    /// 0 says it gave none ([`Repr::rnr_retry`]).
    pub operand1: u64,
    /// Length of the whole request this message is part of.
    pub total: u32,
    /// Offset of this message's bytes within the whole.
    pub offset: u32,
    /// The requester's GID.
    pub sgid: Gid,
    /// The GID the request is for (picks the device at the responder).
    pub dgid: Gid,
}

impl Repr {
    /// A request or reply with every field zero but the opcode.
    pub fn new(op: Op) -> Repr {
        Repr {
            op,
            flags: 0,
            status: WcStatus::Success,
            src_qpn: Qpn(0),
            dst_qpn: Qpn(0),
            req_id: 0,
            rkey: 0,
            addr: 0,
            len: 0,
            imm: 0,
            operand0: 0,
            operand1: 0,
            total: 0,
            offset: 0,
            sgid: Gid::default(),
            dgid: Gid::default(),
        }
    }

    /// Reads and validates a message: opcode, flags, status, and that the
    /// payload is exactly `len` bytes (none for READ requests and atomics).
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, WireError> {
        let op = p.op();
        if let Op::Unknown(v) = op {
            return Err(WireError::UnknownOp(v));
        }
        let fl = p.flags();
        if fl & !flags::KNOWN != 0 {
            return Err(WireError::UnknownFlags(fl & !flags::KNOWN));
        }
        let status = u8::try_from(p.status())
            .ok()
            .and_then(WcStatus::from_u8)
            .ok_or(WireError::UnknownStatus(p.status()))?;
        let got = p.payload().len();
        let len = p.length();
        let by_ref = fl & flags::BY_REF != 0;
        let carries = match op {
            _ if by_ref => {
                check_refs(op, fl, p.operand0(), len, p.payload())?;
                p.operand0() as usize * REF_RUN_LEN
            }
            Op::Send | Op::Write | Op::WriteImm | Op::ReadResp => len as usize,
            _ => 0,
        };
        if got != carries || got > MAX_PAYLOAD {
            return Err(WireError::BadLength { said: carries, got });
        }
        if op == Op::ReadReq && len as usize > MAX_PAYLOAD {
            return Err(WireError::ReadTooLong(len));
        }
        if matches!(op, Op::Send | Op::WriteImm) && p.operand1() > 8 {
            return Err(WireError::BadRnrRetry(p.operand1()));
        }
        let (offset, total) = (p.offset(), p.total());
        if matches!(
            op,
            Op::Send | Op::Write | Op::WriteImm | Op::ReadReq | Op::ReadResp
        ) && offset.checked_add(len).is_none_or(|end| end > total)
        {
            return Err(WireError::BadChunk { offset, len, total });
        }
        Ok(Repr {
            op,
            flags: fl,
            status,
            src_qpn: Qpn(p.src_qpn()),
            dst_qpn: Qpn(p.dst_qpn()),
            req_id: p.req_id(),
            rkey: p.rkey(),
            addr: p.addr(),
            len,
            imm: p.imm(),
            operand0: p.operand0(),
            operand1: p.operand1(),
            total,
            offset,
            sgid: p.sgid(),
            dgid: p.dgid(),
        })
    }

    /// The requester's `rnr_retry` a SEND or WRITE_IMM request carries,
    /// if it gave one.
    pub fn rnr_retry(&self) -> Option<u8> {
        match self.op {
            Op::Send | Op::WriteImm => (self.operand1 as u8).checked_sub(1),
            _ => None,
        }
    }

    /// Sets the `rnr_retry` a SEND or WRITE_IMM request carries (at most
    /// 7); other messages carry none.
    pub fn set_rnr_retry(&mut self, retry: Option<u8>) {
        if matches!(self.op, Op::Send | Op::WriteImm) {
            self.operand1 = retry.map_or(0, |r| u64::from(r.min(7)) + 1);
        }
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[field::OP] = self.op.into();
        b[field::FLAGS] = self.flags;
        b[field::STATUS].copy_from_slice(&u16::from(self.status as u8).to_le_bytes());
        b[field::SRC_QPN].copy_from_slice(&self.src_qpn.0.to_le_bytes());
        b[field::DST_QPN].copy_from_slice(&self.dst_qpn.0.to_le_bytes());
        b[field::REQ_ID].copy_from_slice(&self.req_id.to_le_bytes());
        b[field::RKEY].copy_from_slice(&self.rkey.to_le_bytes());
        b[field::ADDR].copy_from_slice(&self.addr.to_le_bytes());
        b[field::LEN].copy_from_slice(&self.len.to_le_bytes());
        b[field::IMM].copy_from_slice(&self.imm.to_le_bytes());
        b[field::OPERAND0].copy_from_slice(&self.operand0.to_le_bytes());
        b[field::OPERAND1].copy_from_slice(&self.operand1.to_le_bytes());
        b[field::TOTAL].copy_from_slice(&self.total.to_le_bytes());
        b[field::OFFSET].copy_from_slice(&self.offset.to_le_bytes());
        b[field::SGID].copy_from_slice(&self.sgid.0);
        b[field::DGID].copy_from_slice(&self.dgid.0);
    }

    /// Bytes of payload this message carries.
    pub fn payload_len(&self) -> usize {
        match self.op {
            _ if self.flags & flags::BY_REF != 0 => {
                (self.operand0.min(MAX_REF_RUNS as u64) as usize) * REF_RUN_LEN
            }
            Op::Send | Op::Write | Op::WriteImm | Op::ReadResp => self.len as usize,
            _ => 0,
        }
    }

    /// Header plus payload.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len()
    }
}

/// Checks a by-reference payload: a SEND or WRITE that is not a datagram,
/// 1 to [`MAX_REF_RUNS`] whole runs, none wrapping, adding up to `len`.
fn check_refs(op: Op, fl: u8, runs: u64, len: u32, payload: &[u8]) -> Result<(), WireError> {
    let shape_ok = matches!(op, Op::Send | Op::Write | Op::WriteImm | Op::ReadResp)
        && fl & flags::DATAGRAM == 0
        && (1..=MAX_REF_RUNS as u64).contains(&runs)
        && payload.len() == runs as usize * REF_RUN_LEN;
    if !shape_ok {
        return Err(WireError::BadReference);
    }
    let mut sum = 0u64;
    for (addr, n) in ref_runs(payload) {
        if addr.checked_add(n).is_none() {
            return Err(WireError::BadReference);
        }
        sum = sum.checked_add(n).ok_or(WireError::BadReference)?;
    }
    if sum != u64::from(len) {
        return Err(WireError::BadReference);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_bytes_parse_or_fail_cleanly(b in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(p) = Packet::new_checked(&b[..]) {
                if let Ok(r) = Repr::parse(&p) {
                    prop_assert_eq!(r.buffer_len(), b.len());
                }
            }
        }

        #[test]
        fn emit_then_parse_round_trips(
            op in prop::sample::select(vec![Op::Send, Op::Write, Op::WriteImm, Op::ReadReq, Op::AtomicCas, Op::AtomicFa, Op::Ack, Op::ReadResp, Op::AtomicResp]),
            fl in 0u8..32, qpns in (0u32..0xff_ffff, 0u32..0xff_ffff), id in any::<u64>(),
            rkey in any::<u32>(), addr in any::<u64>(), len in 0u32..512, off in 0u32..1024, ops in (any::<u64>(), any::<u64>()),
        ) {
            let carries = matches!(op, Op::Send | Op::Write | Op::WriteImm | Op::ReadResp);
            // A message that needs a receive carries an RNR retry count there.
            let needs_recv = matches!(op, Op::Send | Op::WriteImm);
            let ops = (ops.0, if needs_recv { ops.1 % 9 } else { ops.1 });
            let r = Repr {
                flags: fl,
                src_qpn: Qpn(qpns.0),
                dst_qpn: Qpn(qpns.1),
                req_id: id,
                rkey,
                addr,
                len,
                total: off + len,
                offset: off,
                operand0: ops.0,
                operand1: ops.1,
                ..Repr::new(op)
            };
            let mut b = vec![0u8; HEADER_LEN + if carries { len as usize } else { 0 }];
            r.emit(&mut b);
            prop_assert_eq!(Repr::parse(&Packet::new_checked(&b[..]).unwrap()), Ok(r));
        }
    }

    #[test]
    fn a_request_that_needs_a_receive_carries_its_rnr_retry() {
        let mut r = Repr::new(Op::Send);
        assert_eq!(r.rnr_retry(), None, "none given");
        for n in 0..=7 {
            r.set_rnr_retry(Some(n));
            assert_eq!(r.operand1, u64::from(n) + 1);
            let mut b = vec![0u8; HEADER_LEN];
            r.emit(&mut b);
            let back = Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap();
            assert_eq!(back.rnr_retry(), Some(n));
        }
        // A WRITE carries none: its operand 1 is not touched.
        let mut w = Repr::new(Op::Write);
        w.set_rnr_retry(Some(3));
        assert_eq!((w.operand1, w.rnr_retry()), (0, None));
        // Past 7 (plus one) is refused.
        let mut b = vec![0u8; HEADER_LEN];
        Repr::new(Op::WriteImm).emit(&mut b);
        b[48] = 9;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::BadRnrRetry(9))
        );
    }

    static WRITE_BYTES: [u8; HEADER_LEN + 3] = [
        2, 0x10, 0, 0, // WRITE, LAST, success
        0x11, 0, 0, 0, 0x22, 0, 0, 0, // src qpn 0x11, dst qpn 0x22
        8, 7, 6, 5, 4, 3, 2, 1, // req id
        0x00, 0x01, 0, 0, // rkey 0x100
        0, 0x10, 0, 0, 0, 0, 0, 0, // addr 0x1000
        3, 0, 0, 0, 0, 0, 0, 0, // len 3, imm 0
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // operands
        3, 0, 0, 0, 0, 0, 0, 0, // total 3, offset 0
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1, // sgid ::ffff:10.0.0.1
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2, // dgid ::ffff:10.0.0.2
        b'a', b'b', b'c',
    ];

    fn write_repr() -> Repr {
        Repr {
            flags: flags::LAST,
            src_qpn: Qpn(0x11),
            dst_qpn: Qpn(0x22),
            req_id: 0x0102_0304_0506_0708,
            rkey: 0x100,
            addr: 0x1000,
            len: 3,
            total: 3,
            sgid: "10.0.0.1".parse().unwrap(),
            dgid: "10.0.0.2".parse().unwrap(),
            ..Repr::new(Op::Write)
        }
    }

    #[test]
    fn write_is_byte_exact_both_ways() {
        let mut buf = vec![0u8; HEADER_LEN + 3];
        write_repr().emit(&mut buf);
        buf[HEADER_LEN..].copy_from_slice(b"abc");
        assert_eq!(&buf[..], &WRITE_BYTES[..]);
        let p = Packet::new_checked(&WRITE_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), write_repr());
        assert_eq!(p.payload(), b"abc");
    }

    #[test]
    fn malformed_messages_are_refused() {
        assert_eq!(
            Packet::new_checked(&[0u8; 95][..]).unwrap_err(),
            WireError::Truncated(95)
        );
        let mut b = WRITE_BYTES.to_vec();
        b.pop();
        assert!(matches!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::BadLength { said: 3, got: 2 })
        ));
        let mut b = WRITE_BYTES.to_vec();
        b[0] = 99;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::UnknownOp(99))
        );
        let mut b = WRITE_BYTES.to_vec();
        b[1] = 0x80;
        assert!(matches!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::UnknownFlags(0x80))
        ));
        let mut b = WRITE_BYTES.to_vec();
        b[2] = 3; // no such status
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::UnknownStatus(3))
        );
        let mut b = WRITE_BYTES.to_vec();
        b[60] = 1; // offset 1 + len 3 > total 3
        assert!(matches!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()),
            Err(WireError::BadChunk { .. })
        ));
    }

    #[test]
    fn read_requests_carry_no_payload() {
        let r = Repr {
            len: 4096,
            total: 4096,
            ..Repr::new(Op::ReadReq)
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
    }

    // Found by the core_engine fuzz target: a peer's READ request for
    // 4 GiB made the responder build a 4 GiB reply.
    #[test]
    fn read_requests_longer_than_one_reply_are_refused() {
        let read = |len: u32| {
            let r = Repr {
                len,
                total: len,
                ..Repr::new(Op::ReadReq)
            };
            let mut b = vec![0u8; HEADER_LEN];
            r.emit(&mut b);
            parse(&b)
        };
        assert!(read(MAX_PAYLOAD as u32).is_ok());
        assert_eq!(
            read(MAX_PAYLOAD as u32 + 1),
            Err(WireError::ReadTooLong(MAX_PAYLOAD as u32 + 1))
        );
        assert_eq!(read(u32::MAX), Err(WireError::ReadTooLong(u32::MAX)));
    }

    fn by_ref(op: Op, fl: u8, len: u32, runs: &[(u64, u64)], said: u64) -> Vec<u8> {
        let r = Repr {
            flags: fl | flags::BY_REF,
            len,
            total: len,
            operand0: said,
            ..Repr::new(op)
        };
        let mut b = vec![0u8; HEADER_LEN + runs.len() * REF_RUN_LEN];
        r.emit(&mut b);
        put_ref_runs(&mut b[HEADER_LEN..], runs);
        b
    }

    fn parse(b: &[u8]) -> Result<Repr, WireError> {
        Repr::parse(&Packet::new_checked(b)?)
    }

    #[test]
    fn by_reference_payloads_are_runs_that_add_up_to_len() {
        let runs = [(0x1000, 100), (0x9000, 28)];
        let b = by_ref(Op::Write, flags::LAST, 128, &runs, 2);
        let r = parse(&b).unwrap();
        assert_eq!(r.buffer_len(), b.len());
        assert!(is_by_ref(&b));
        assert_eq!(ref_runs(&b[HEADER_LEN..]).collect::<Vec<_>>(), runs);
        for op in [Op::Send, Op::WriteImm, Op::ReadResp] {
            assert!(parse(&by_ref(op, 0, 128, &runs, 2)).is_ok());
        }

        let bad = [
            by_ref(Op::Write, 0, 127, &runs, 2),   // runs hold 128
            by_ref(Op::Write, 0, 128, &runs, 3),   // says 3 runs, has 2
            by_ref(Op::Write, 0, 0, &[], 0),       // no runs
            by_ref(Op::ReadReq, 0, 128, &runs, 2), // a request, not data
            by_ref(Op::AtomicResp, 0, 128, &runs, 2),
            by_ref(Op::Ack, 0, 128, &runs, 2),
            by_ref(Op::Send, flags::DATAGRAM, 128, &runs, 2),
            by_ref(Op::Write, 0, 1, &[(u64::MAX, 1)], 1), // wraps
            by_ref(Op::Write, 0, 65, &[(0, 1); 65], 65),  // too many
        ];
        for b in bad {
            assert!(parse(&b).is_err(), "{:?}", parse(&b));
            assert!(is_by_ref(&b));
        }
        assert!(!is_by_ref(&WRITE_BYTES));
        assert!(!is_by_ref(&[]));
    }
}
