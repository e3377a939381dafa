//! The transport's counters: per comm (kind `comm`, labels `endpoint`,
//! `comm`, `role`, and `peer_comm` and `dev` when known) and per process
//! (kind `transport`), for the stats file (`ernic_comm_*_total` and
//! `ernic_transport_*_total` once exported).
//!
//! Counting is a relaxed atomic add on the comm's counters and one on its
//! endpoint's totals, on the endpoint's own thread: no lock and no
//! allocation per message. Locks are taken only when a comm is made or
//! freed (its counters join or leave its endpoint's list) and by a reader
//! ([`stats_groups`], usually the stats file's thread). A comm's counters
//! leave the file with the comm; the process totals keep everything every
//! endpoint ever counted, closed ones included.
//!
//! What is counted where: a message and its bytes when its request
//! completes (sent size for a send, received size for a receive), and
//! whether it went eagerly (as sends through the receiver's rx buffers:
//! every `SENDRECV` message, and a `RDMA` message up to the eager limit) or
//! as RDMA writes; a CTRL when the receiver posts it and when the sender
//! takes it; an EAGAIN deferral each time the provider answers a post
//! `EAGAIN` (the post is parked and retried); an error completion each
//! time a CQ hands one over; a failed request when a request fails, for
//! whatever reason. Posts that belong to no comm (rx buffers) count only
//! in the totals.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use ernic_ops::schema::Group;

use crate::rdma::CommKind;

macro_rules! counts {
    ($($(#[doc = $doc:literal])* $field:ident,)*) => {
        /// One set of transport counters (relaxed atomics).
        #[derive(Debug, Default)]
        pub struct Counts {
            $($(#[doc = $doc])* pub $field: AtomicU64,)*
        }

        impl Counts {
            /// All zero.
            pub const fn new() -> Counts {
                Counts { $($field: AtomicU64::new(0),)* }
            }

            /// Every counter by its name in the stats file.
            pub fn values(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($field), self.$field.load(Relaxed)),)*]
            }

            fn add_into(&self, into: &Counts) {
                $(into.$field.fetch_add(self.$field.load(Relaxed), Relaxed);)*
            }
        }
    };
}

counts! {
    /// Sends completed.
    messages_sent,
    /// Bytes of the sends completed.
    bytes_sent,
    /// Receives completed.
    messages_received,
    /// Bytes of the receives completed (the sizes the senders sent).
    bytes_received,
    /// Messages completed that went as eager sends (either direction).
    eager_messages,
    /// Messages completed that went as RDMA writes (either direction).
    rdma_messages,
    /// CTRL messages posted (receiving comms: one per receive).
    ctrl_sent,
    /// CTRL messages taken (sending comms).
    ctrl_received,
    /// Posts the provider answered EAGAIN (parked, retried later).
    eagain_deferrals,
    /// Error completions read from a CQ.
    error_completions,
    /// Requests that failed.
    failed_requests,
    /// Control messages that were malformed or stray, messages for no
    /// live receive, and rx buffers that could not be posted again
    /// (per endpoint only).
    dropped,
}

/// One comm's counters and what names it.
#[derive(Debug)]
pub(crate) struct CommStats {
    pub(crate) counts: Counts,
    comm: u32,
    role: CommKind,
    /// The peer's comm id once connected (`u32::MAX` before).
    pub(crate) peer: AtomicU32,
}

/// One endpoint's totals and its comms' counters.
#[derive(Debug)]
pub(crate) struct EndpointStats {
    id: u64,
    /// The device number a caller gave ([`crate::rdma::Endpoint::set_stats_device`]).
    pub(crate) dev: AtomicU32,
    pub(crate) totals: Counts,
    comms: Mutex<Vec<Arc<CommStats>>>,
}

const NONE: u32 = u32::MAX;

/// What endpoints that are gone counted.
static RETIRED: Counts = Counts::new();
/// The endpoints alive in this process; the lock also keeps an endpoint's
/// move from here to [`RETIRED`] whole to a reader.
static LIVE: Mutex<Vec<Arc<EndpointStats>>> = Mutex::new(Vec::new());
static NEXT_ENDPOINT: AtomicU64 = AtomicU64::new(0);

impl EndpointStats {
    /// A new endpoint's counters, known to [`stats_groups`].
    pub(crate) fn register() -> Arc<EndpointStats> {
        let s = Arc::new(EndpointStats {
            id: NEXT_ENDPOINT.fetch_add(1, Relaxed),
            dev: AtomicU32::new(NONE),
            totals: Counts::new(),
            comms: Mutex::new(Vec::new()),
        });
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(s.clone());
        s
    }

    /// The endpoint is closed: its totals move to the process's retired
    /// counts, and its comms leave the file.
    pub(crate) fn retire(self: &Arc<EndpointStats>) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = live.iter().position(|x| Arc::ptr_eq(x, self)) {
            live.swap_remove(i);
            self.totals.add_into(&RETIRED);
        }
    }

    /// Counters for a new comm (`None` for a listening one, which moves
    /// no data).
    pub(crate) fn comm(&self, comm: u32, role: CommKind) -> Option<Arc<CommStats>> {
        if role == CommKind::Listen {
            return None;
        }
        let c = Arc::new(CommStats {
            counts: Counts::new(),
            comm,
            role,
            peer: AtomicU32::new(NONE),
        });
        self.comms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(c.clone());
        Some(c)
    }

    /// A comm is freed: its counters leave the file.
    pub(crate) fn forget(&self, c: &Arc<CommStats>) {
        self.comms
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|x| !Arc::ptr_eq(x, c));
    }

    /// This endpoint's groups: its totals (kind `transport`, label
    /// `endpoint`) and each comm's.
    pub(crate) fn groups(&self) -> Vec<Group> {
        let mut v = vec![
            Group::new("transport")
                .label("endpoint", self.id)
                .counters(self.totals.values()),
        ];
        self.comm_groups(&mut v);
        v
    }

    fn comm_groups(&self, out: &mut Vec<Group>) {
        let dev = self.dev.load(Relaxed);
        for c in self.comms.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            let role = match c.role {
                CommKind::Send => "send",
                _ => "recv",
            };
            let mut g = Group::new("comm")
                .label("endpoint", self.id)
                .label("comm", c.comm)
                .label("role", role);
            let peer = c.peer.load(Relaxed);
            if peer != NONE {
                g = g.label("peer_comm", peer);
            }
            if dev != NONE {
                g = g.label("dev", dev);
            }
            out.push(g.counters(c.counts.values()));
        }
    }
}

/// The whole process's transport counters: one `transport` group with the
/// totals of every endpoint it ever opened, and a `comm` group per comm
/// alive now.
pub fn stats_groups() -> Vec<Group> {
    let total = Counts::new();
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    RETIRED.add_into(&total);
    for e in live.iter() {
        e.totals.add_into(&total);
    }
    let mut v = vec![Group::new("transport").counters(total.values())];
    for e in live.iter() {
        e.comm_groups(&mut v);
    }
    v
}
