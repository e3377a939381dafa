//! How the engine reaches other nodes: the [`Remote`] trait a carrier (the
//! TCP mesh) implements, the message it is handed ([`Outgoing`]), why it may
//! refuse one ([`SendError`]), and reading a peer's memory for a
//! by-reference payload ([`PeerRun`], [`PeerReadError`]).
//!
//! The core's side of the contract with the mesh, and nothing else: this
//! file imports none of the engine's behaviour.

use crate::types::{Gid, NodeId};

/// How the engine reaches other nodes (the TCP mesh implements it).
pub trait Remote: Send {
    /// The node that owns `gid`, if exactly one other node does.
    fn owner(&self, gid: &Gid) -> Option<NodeId>;

    /// Queues one message for `to`. `out.fill` writes its `out.len` bytes.
    /// Refusing with [`SendError::Busy`] leaves the request where it is, to
    /// be tried again on a later pass.
    fn send(&mut self, to: NodeId, out: Outgoing<'_>) -> Result<(), SendError>;

    /// Takes back queued messages tagged `tag` that have not started to go out.
    fn cancel(&mut self, tag: u64);

    /// Whether node `to` reads this process's memory itself: a peer on this
    /// host that has proved which process it talks to. Messages to it may
    /// then name their payload by reference ([`BY_REF`](crate::wire::flags::BY_REF)) instead
    /// of carrying it, and the payload crosses once, by the responder's
    /// read, instead of through two socket copies. The peer reads it any
    /// time until it answers, as a NIC's DMA reads a posted buffer: memory
    /// freed or remapped before the request completes is the same misuse
    /// it is on hardware. A READ's answer to it may name the bytes too: the
    /// requester reads them when it takes the answer, which is before its
    /// READ completes, so a responder changes that memory safely once the
    /// requester says (after its completion) that it is done, as with any
    /// NIC.
    fn reads_from_me(&self, _to: NodeId) -> bool {
        false
    }

    /// Reads what node `from` named by reference in its own memory: for each
    /// run, `len` bytes at the peer's address `remote` into `local`. Fails
    /// when `from` has not proved which process it is, is gone, or named
    /// memory it does not have.
    ///
    /// # Safety
    ///
    /// Every run's `local` must be valid for writes of `len` bytes for the
    /// duration of the call.
    #[allow(unsafe_code)]
    unsafe fn read_peer(&self, _from: NodeId, _runs: &[PeerRun]) -> Result<(), PeerReadError> {
        Err(PeerReadError::NotProved)
    }
}

/// One run of a read from a peer's memory (see [`Remote::read_peer`]).
#[derive(Clone, Copy, Debug)]
pub struct PeerRun {
    /// The address in the peer's memory.
    pub remote: u64,
    /// Where the bytes go in this process.
    pub local: std::ptr::NonNull<u8>,
    /// Bytes.
    pub len: usize,
}

/// Why a peer's memory could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeerReadError {
    /// The node has not proved which process on this host it is.
    #[error("the node has not proved which process on this host it is")]
    NotProved,
    /// The process is gone.
    #[error("the peer's process is gone")]
    Gone,
    /// The memory named could not be read (unmapped, or fewer bytes).
    #[error("the peer's memory could not be read")]
    Fault,
}

/// A message for [`Remote::send`].
pub struct Outgoing<'a> {
    /// A reply (answering a peer's request) rather than a request.
    pub reply: bool,
    /// The sending QP's incarnation, for [`Remote::cancel`]; 0 for replies.
    pub tag: u64,
    /// Bytes in the message.
    pub len: usize,
    /// Writes the message into a buffer of `len` bytes.
    pub fill: &'a mut dyn FnMut(&mut [u8]),
}

/// Why a message could not be queued.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SendError {
    /// No room toward that node now.
    Busy,
    /// No connection leads to that node.
    NoRoute,
}
