//! The engine's limits and behaviour ([`EngineConfig`]) and the constants
//! every front end shares ([`MAX_SGE`], [`GSI_QKEY`], [`SERVICE_QPN_BASE`]).
//!
//! Plain data: nothing here acts on an engine.

use std::time::Duration;

/// Most SGEs one work request may carry.
pub const MAX_SGE: usize = 32;

/// The Q_Key of the GSI QP, which a datagram may name only through a
/// privileged (controlled) key.
pub const GSI_QKEY: u32 = 0x8001_0000;

/// The first QP number of the window a device's own services choose their
/// QPs' numbers from (the seed's `0xc0xxxx`: the NVMe-oF target's queues),
/// above every number a front end hands out, so the two never collide. A
/// device takes chosen numbers from here up to here plus its `max_qp`.
pub const SERVICE_QPN_BASE: u32 = 0xc0_0000;

/// Limits and behaviour of an engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Faults armed on the engine's events (`send_err`, `recv_err`), shared
    /// with the rest of the process; `None`: nothing is injected.
    pub injector: Option<std::sync::Arc<crate::inject::Injector>>,
    /// Protection domains per device.
    pub max_pd: u32,
    /// MRs per device.
    pub max_mr: u32,
    /// CQs per device.
    pub max_cq: u32,
    /// QPs per device (QP numbers run below this).
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// SGEs per work request (at most [`MAX_SGE`]).
    pub max_sge: u32,
    /// Inline payload per send request.
    pub max_inline: u32,
    /// SRQs per device.
    pub max_srq: u32,
    /// Address handles per device.
    pub max_ah: u32,
    /// Largest message.
    pub max_msg_size: u64,
    /// Most bytes the work-request slots of one device's QPs and SRQs may
    /// hold together ([`QpCaps::engine_bytes`](crate::QpCaps::engine_bytes)): a QP or SRQ that would
    /// pass it is refused with [`EngineError::OverBudget`].
    ///
    /// [`EngineError::OverBudget`]: super::EngineError::OverBudget
    pub max_queue_bytes: u64,
    /// Largest datagram payload (the path MTU of UD).
    pub ud_mtu: u32,
    /// How long a SEND waits for its peer to post a receive.
    pub rnr_timeout: Duration,
    /// Check QP states as verbs does. The ionic device records whatever state
    /// the guest asks for and runs its queues in any state (seed 001).
    pub enforce_qp_state: bool,
    /// Whether every QP's local SGEs may use key 0, the reserved DMA key,
    /// whose address is a DMA address used without an MR. Without it only
    /// the QPs a front end makes privileged
    /// ([`Engine::set_qp_privileged`]) may. Never allowed from a peer.
    ///
    /// [`Engine::set_qp_privileged`]: super::Engine::set_qp_privileged
    pub allow_reserved_lkey: bool,
    /// How long a request to another node waits for its answer before it
    /// completes with transport retry exceeded (seed: 30 s).
    pub request_timeout: Duration,
    /// Most READ reply bytes asked of one node at once (seed: 32 MiB).
    pub read_reply_budget: u64,
    /// Largest payload of one message to another node (at most
    /// [`wire::MAX_PAYLOAD`](crate::wire::MAX_PAYLOAD), 16 MiB); a larger
    /// WQE goes as several. Pieces that fit the cache stay in it from the
    /// copy into a frame through the socket and back out into memory: 1 MiB
    /// moved 64 MiB WRITEs between two processes 1.4x faster than 16 MiB here.
    pub max_piece: u32,
    /// Whether requests to a peer that reads this process's memory itself
    /// may name their payloads instead of carrying them. A device whose
    /// memory can go away under a request (a guest's, which the guest may
    /// unmap at any time) says no: a reference could be read after the
    /// mapping is gone and something else is at that address.
    pub send_by_ref: bool,
    /// Smallest piece sent by reference to a peer that reads this process's
    /// memory itself (see [`Remote::reads_from_me`](crate::Remote)); smaller
    /// ones carry their bytes.
    pub by_ref_min: u32,
    /// Largest piece sent by reference. Such a piece costs the socket
    /// nothing, so it may be larger than `max_piece`; but a responder reads
    /// one in a single call, and what queues behind it (a transport's
    /// control message, say) waits that long. Two processes' 64 MiB
    /// sendrecv (ernic bench, four A/B rounds) moved 3.5-4.0 GB/s with
    /// 2 MiB pieces, 3.8-4.4 with 4 MiB, 3.3-4.0 with 8 and 3.2-4.3 with 16.
    pub max_ref_piece: u32,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            injector: None,
            max_pd: 1 << 16,
            max_mr: 1 << 16,
            max_cq: 1 << 16,
            max_qp: 1 << 16,
            max_qp_wr: 1 << 15,
            max_sge: MAX_SGE as u32,
            max_inline: 4096,
            max_srq: 1 << 12,
            max_ah: 1 << 16,
            max_msg_size: u64::from(u32::MAX),
            max_queue_bytes: u64::MAX,
            ud_mtu: 4096,
            rnr_timeout: Duration::from_secs(5),
            enforce_qp_state: true,
            allow_reserved_lkey: false,
            request_timeout: Duration::from_secs(30),
            read_reply_budget: 32 << 20,
            max_piece: 1 << 20,
            send_by_ref: true,
            by_ref_min: 64 << 10,
            max_ref_piece: 4 << 20,
        }
    }
}
