//! What the endpoint's calls answer when they fail ([`NetError`], one
//! variant per kind of failure site), and why a request or a connection
//! being accepted failed ([`RequestError`], kept with the request until
//! `test` or `accept` reports it). Where a provider, the registration
//! cache, the freelist or the id pool refused, its error is the
//! `#[source]`, not repeated in the message.

use crate::freelist::FreelistError;
use crate::idpool::IdError;
use crate::mr_cache::MrCacheError;
use crate::msgbuff::InvalidIndex;
use crate::provider::ProviderError;

use super::comm::CommKind;
use super::control::DecodeError;

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// `open` was asked for a number of data rails it cannot have.
    #[error("{rails} rails: between 1 and {max}")]
    RailCount {
        /// The rails asked for (after `OFI_NCCL_FORCE_NUM_RAILS`).
        rails: usize,
        /// The most an endpoint has.
        max: usize,
    },
    /// `open_with` was asked for a number of control rails it cannot have.
    #[error("{rails} control rails: between 1 and {max}")]
    ControlRailCount {
        /// The control rails asked for.
        rails: usize,
        /// The most an endpoint has.
        max: usize,
    },
    /// The provider could not open a rail.
    #[error("provider: cannot open a rail")]
    OpenRail {
        /// The provider's refusal.
        #[source]
        source: ProviderError,
    },
    /// The provider could not register a rail's rx buffers or the control
    /// messages' tx buffers.
    #[error("provider: cannot register the endpoint's {which} buffers")]
    RegisterBuffers {
        /// `"rx"` or `"tx"`.
        which: &'static str,
        /// The provider's refusal.
        #[source]
        source: ProviderError,
    },
    /// The request pool could not be made.
    #[error("cannot make the request pool")]
    RequestPool {
        /// The freelist's refusal.
        #[source]
        source: FreelistError,
    },
    /// Every request is in flight.
    #[error("no request is free")]
    NoRequest {
        /// The freelist's refusal.
        #[source]
        source: FreelistError,
    },
    /// Every comm id is taken.
    #[error("cannot open a comm")]
    NoCommId {
        /// The id pool's refusal.
        #[source]
        source: IdError,
    },
    /// The provider's endpoint name is too long for a listen handle.
    #[error("endpoint name of {len} bytes does not fit a handle")]
    NameTooLong {
        /// The name's length.
        len: usize,
    },
    /// A connect was given bytes that are not a listen handle.
    #[error("not a listen handle")]
    NotAHandle {
        /// What is wrong with it.
        #[source]
        source: DecodeError,
    },
    /// The provider refused the listener's address.
    #[error("provider: cannot insert the listener's address")]
    ListenerAddress {
        /// The provider's refusal.
        #[source]
        source: ProviderError,
    },
    /// No comm of this kind has this id.
    #[error("no {kind:?} comm {id}")]
    NoSuchComm {
        /// The kind the call needs.
        kind: CommKind,
        /// The id given.
        id: u32,
    },
    /// `close` was given an id no comm has.
    #[error("no comm {id}")]
    UnknownComm {
        /// The id given.
        id: u32,
    },
    /// The comm is not connected yet.
    #[error("{kind:?} comm {id} is not connected")]
    NotConnected {
        /// The comm's kind.
        kind: CommKind,
        /// Its id.
        id: u32,
    },
    /// Every registration handle is held.
    #[error("{max} registrations are held: deregister some first")]
    TooManyRegistrations {
        /// The most held at once.
        max: usize,
    },
    /// The provider could not register the caller's memory.
    #[error("provider: cannot register {len} bytes at {addr:#x}")]
    Register {
        /// The start registered (with the MR cache, of the whole pages).
        addr: u64,
        /// The bytes registered.
        len: usize,
        /// The provider's refusal.
        #[source]
        source: ProviderError,
    },
    /// The provider could not close a registration.
    #[error("provider: cannot close registration {handle:#x}")]
    Deregister {
        /// The handle given.
        handle: u32,
        /// The provider's refusal.
        #[source]
        source: ProviderError,
    },
    /// The registration cache refused a lookup, insertion or release.
    #[error("the registration cache refused")]
    MrCache {
        /// Its refusal.
        #[source]
        source: MrCacheError,
    },
    /// A registration handle that is not live.
    #[error("registration {handle:#x} is not live (deregistered already, or never given)")]
    NotRegistered {
        /// The handle given.
        handle: u32,
    },
    /// A buffer outside the registration named with it.
    #[error("{len} bytes at {addr:#x} are outside registration {handle:#x}")]
    OutsideRegistration {
        /// The buffer's length.
        len: usize,
        /// Its address.
        addr: u64,
        /// The registration named.
        handle: u32,
    },
    /// A SENDRECV message larger than the protocol carries.
    #[error("{len} bytes: OFI_NCCL_PROTOCOL=SENDRECV carries at most {max} bytes a message")]
    SendRecvTooLarge {
        /// The message's length.
        len: usize,
        /// The largest message.
        max: usize,
    },
    /// The comm's sequence window refused the next number.
    #[error("sequence window")]
    SequenceWindow {
        /// Its refusal.
        #[source]
        source: InvalidIndex,
    },
    /// `test` was given a request that is not live.
    #[error("no such request (already completed?)")]
    NoSuchRequest,
    /// The request failed.
    #[error("request failed: {reason}")]
    Request {
        /// Why (part of this message: the request's own outcome, not a
        /// lower layer's error).
        reason: RequestError,
    },
    /// The connection failed.
    #[error("connect failed: {reason}")]
    ConnectFailed {
        /// Why.
        reason: RequestError,
    },
    /// The connection being accepted failed.
    #[error("accept failed: {reason}")]
    AcceptFailed {
        /// Why.
        reason: RequestError,
    },
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

/// Why a request (or the CONN_RESP of a connection being accepted) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The provider refused one of its posts for good.
    #[error("{message}")]
    Post {
        /// The provider's words.
        message: String,
    },
    /// One of its posts completed in error.
    #[error("{message} (errno {errno})")]
    Completion {
        /// The provider's words.
        message: String,
        /// The completion's (positive) errno.
        errno: i32,
    },
    /// A peer's SIZE claimed more than the receive holds.
    #[error("the sender reported {size} bytes for a {len}-byte receive")]
    SizeBeyondReceive {
        /// The bytes claimed.
        size: u64,
        /// The receive's length.
        len: usize,
    },
    /// A SENDRECV chunk reaching past the receive.
    #[error("a message reaching byte {end} does not fit the {len}-byte receive")]
    ChunkBeyondReceive {
        /// Where the chunk ends.
        end: usize,
        /// The receive's length.
        len: usize,
    },
    /// An eager message longer than its receive.
    #[error("message of {size} bytes does not fit the {len}-byte receive")]
    EagerBeyondReceive {
        /// The message's length.
        size: usize,
        /// The receive's length.
        len: usize,
    },
    /// The receiver posted less than the send.
    #[error("the receiver posted {posted} bytes for a {len}-byte send")]
    ReceiveTooShort {
        /// The receive's length.
        posted: u64,
        /// The send's.
        len: usize,
    },
    /// No tx slot was free for a SIZE message.
    #[error("no control buffer for the size message")]
    NoControlBuffer,
    /// Its comm was closed first.
    #[error("comm closed")]
    CommClosed,
}
