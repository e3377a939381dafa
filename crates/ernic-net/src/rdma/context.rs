//! The 64-bit context of each of our posts, which the CQ gives back: the
//! kind of post in the top byte (an rx buffer, a request's segment, a
//! control send), the rail in the middle, the slot or request entry below;
//! a control send's rail field holds instead what its completion does
//! ([`After`]). Contexts stay below the provider's
//! [`CONTEXT_LIMIT`](crate::provider::CONTEXT_LIMIT).

use crate::freelist::Entry;

pub(super) const KIND_SHIFT: u32 = 56;
pub(super) const K_RX: u64 = 1;
pub(super) const K_REQ: u64 = 2;
pub(super) const K_TX: u64 = 3;

pub(super) fn ctx(kind: u64, rail: usize, index: usize) -> u64 {
    kind << KIND_SHIFT | (rail as u64) << 32 | index as u64
}

pub(super) fn unctx(c: u64) -> (u64, usize, usize) {
    (
        c >> KIND_SHIFT,
        ((c >> 32) & 0xff_ffff) as usize,
        (c & 0xffff_ffff) as usize,
    )
}

/// What a control send's completion does.
#[derive(Debug, Clone, Copy)]
pub(super) enum After {
    Nothing,
    /// Counts as a segment of this request.
    Req(Entry),
    /// Connects this receiving comm (its CONN_RESP went out).
    Connect(u32),
}

pub(super) const THEN_MASK: u64 = 0xff_ffff << 32;

pub(super) fn then_bits(then: After) -> u64 {
    // The rail field of a tx context is free: it holds what comes after.
    let v: u64 = match then {
        After::Nothing => 0,
        After::Req(e) => 1 << 22 | u64::from(e.0 & 0x3f_ffff),
        After::Connect(id) => 2 << 22 | u64::from(id & 0x3f_ffff),
    };
    v << 32
}

pub(super) fn then_of(context: u64) -> After {
    let v = (context & THEN_MASK) >> 32;
    match v >> 22 {
        1 => After::Req(Entry((v & 0x3f_ffff) as u32)),
        2 => After::Connect((v & 0x3f_ffff) as u32),
        _ => After::Nothing,
    }
}
