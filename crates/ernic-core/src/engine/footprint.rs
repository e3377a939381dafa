//! What one object of each kind costs the engine ([`Footprint`]), so a front
//! end can state the most memory a guest can make it hold.

use super::{Ah, Srq};
use crate::mr::Mr;
use crate::qp::Qp;
use crate::wr::CqEvent;

/// What one object of each kind costs the engine besides the memory a
/// budget already covers (queue slots, [`EngineConfig::max_queue_bytes`]),
/// in bytes: a front end adds these up to state the most memory a guest can
/// make it hold.
///
/// [`EngineConfig::max_queue_bytes`]: super::EngineConfig::max_queue_bytes
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// A QP's table slot (a table grows to the highest id used).
    pub qp: u64,
    /// An MR's table slot.
    pub mr: u64,
    /// An SRQ's table slot.
    pub srq: u64,
    /// An AH's table slot.
    pub ah: u64,
    /// A CQ's table slot.
    pub cq: u64,
    /// One run of an MR's pages (one per page-list entry at most).
    pub run: u64,
    /// A completion waiting to be written (one per queue slot at most).
    pub completion: u64,
    /// The least a queue slot costs (a receive slot with one SGE).
    pub min_slot: u64,
}

impl Footprint {
    /// This build's sizes.
    pub fn of_this_build() -> Footprint {
        use std::mem::size_of;
        let b = |n: usize| n as u64;
        Footprint {
            qp: b(size_of::<Option<Qp>>()),
            mr: b(size_of::<Option<Mr>>()),
            srq: b(size_of::<Option<Srq>>()),
            ah: b(size_of::<Option<Ah>>()),
            cq: b(size_of::<Option<u32>>()),
            run: b(size_of::<crate::mr::Run>()),
            completion: b(size_of::<CqEvent>()),
            min_slot: crate::qp::recv_queue_bytes(1 << 16, 1) >> 16,
        }
    }
}
