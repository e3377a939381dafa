//! Deterministic fault injection: chosen events fail on a pattern of event
//! counts, never on a timer, so the same workload fails the same way.
//!
//! A spec is a comma-separated list of `EVENT[=ARG]:PATTERN` (the syntax of
//! `--inject` and `ERNIC_INJECT`):
//!
//! - `every=N`: the Nth, 2Nth, 3Nth … event;
//! - `from=N`: the Nth event and every one after it;
//! - `burst=B/M`: the first B of every M events (events 1..=B, M+1..=M+B, …);
//! - `at=3,7,19`: exactly those events (the list may go on after commas).
//!
//! Events are counted from 1, per fault: two faults on the same event each
//! count it. The events ([`Event`]) are the seed's three and the ones beyond
//! it; where an event takes an argument (the status a failed send completes
//! with, the admin opcode that fails, how long a delay is) it follows `=`.
//!
//! What it promises: [`Injector::check`] takes no lock and allocates
//! nothing, and costs one load when nothing is armed for the event; each
//! fired fault is counted ([`Injector::report`]) and logged at `info`.
//! Nothing here reads the clock.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::wr::WcStatus;

/// An event a fault can make fail.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum Event {
    /// The ionic STATS_VALS / QP_STATS_VALS admin command completes with an
    /// error status.
    StatsVals,
    /// A frame received for the guest is lost.
    RxDrop,
    /// A frame received for the guest is dropped as if no buffer was posted
    /// (counted as the queue-empty drop).
    RxNoBuffer,
    /// A frame the guest transmits is completed but never sent.
    TxDrop,
    /// A send work request completes with an error status (ARG: the status,
    /// `rem_access` unless said).
    SendError,
    /// A receive completes in error (ARG: the status, `loc_len` unless said).
    RecvError,
    /// An RDMA admin command fails (ARG: only commands with this opcode are
    /// counted; every command unless said).
    AdminError,
    /// A DMA access to guest memory by the device fails.
    DmaFault,
    /// A mesh message is dropped before it is sent.
    MeshDrop,
    /// A mesh message is held before it is sent (ARG: milliseconds, 50
    /// unless said).
    MeshDelay,
    /// A mesh connection is cut as a message is about to go on it.
    MeshCut,
    /// A transport post (`fi_writedata`, `fi_senddata`, …) answers EAGAIN.
    FiAgain,
    /// A transport write reports an error completion.
    FiCqError,
}

impl Event {
    /// Number of events.
    pub const COUNT: usize = 13;

    /// Every event, in index order.
    pub const ALL: [Event; Event::COUNT] = [
        Event::StatsVals,
        Event::RxDrop,
        Event::RxNoBuffer,
        Event::TxDrop,
        Event::SendError,
        Event::RecvError,
        Event::AdminError,
        Event::DmaFault,
        Event::MeshDrop,
        Event::MeshDelay,
        Event::MeshCut,
        Event::FiAgain,
        Event::FiCqError,
    ];

    /// The event's name in a spec.
    pub fn name(self) -> &'static str {
        match self {
            Event::StatsVals => "stats_vals",
            Event::RxDrop => "rx_drop",
            Event::RxNoBuffer => "rx_no_buffer",
            Event::TxDrop => "tx_drop",
            Event::SendError => "send_err",
            Event::RecvError => "recv_err",
            Event::AdminError => "admin_err",
            Event::DmaFault => "dma_fault",
            Event::MeshDrop => "mesh_drop",
            Event::MeshDelay => "mesh_delay",
            Event::MeshCut => "mesh_cut",
            Event::FiAgain => "fi_eagain",
            Event::FiCqError => "fi_cq_err",
        }
    }

    fn from_name(s: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name() == s)
    }

    fn bit(self) -> u32 {
        1 << self as u8
    }
}

/// When a fault fires, by the event's number (counted from 1).
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Pattern {
    /// Every Nth event.
    Every(u64),
    /// The Nth event and all after it.
    From(u64),
    /// The first B of every M events.
    Burst {
        /// Events that fail in each window.
        fail: u64,
        /// The window.
        of: u64,
    },
    /// Exactly these events, ascending.
    At(Vec<u64>),
}

impl Pattern {
    /// Whether event number `n` (from 1) fires.
    pub fn fires(&self, n: u64) -> bool {
        match self {
            // A zero (not from a spec, which refuses it) never fires.
            Pattern::Every(k) => *k != 0 && n % k == 0,
            Pattern::From(k) => n >= *k,
            Pattern::Burst { fail, of } => *of != 0 && n.saturating_sub(1) % of < *fail,
            Pattern::At(list) => list.binary_search(&n).is_ok(),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Every(n) => write!(f, "every={n}"),
            Pattern::From(n) => write!(f, "from={n}"),
            Pattern::Burst { fail, of } => write!(f, "burst={fail}/{of}"),
            Pattern::At(list) => {
                f.write_str("at=")?;
                for (i, n) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{n}")?;
                }
                Ok(())
            }
        }
    }
}

/// What a fault does beyond failing, from its `=ARG`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Arg {
    /// Nothing to say.
    None,
    /// The status the failed request completes with.
    Status(WcStatus),
    /// Only this admin opcode is counted.
    Opcode(u8),
    /// How long to hold, in milliseconds.
    Millis(u32),
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::None => Ok(()),
            Arg::Status(s) => write!(f, "={}", status_name(*s)),
            Arg::Opcode(o) => write!(f, "={o}"),
            Arg::Millis(ms) => write!(f, "={ms}"),
        }
    }
}

/// One armed fault.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Fault {
    /// The event it counts.
    pub event: Event,
    /// Its argument.
    pub arg: Arg,
    /// When it fires.
    pub pattern: Pattern,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}:{}", self.event.name(), self.arg, self.pattern)
    }
}

/// The most faults one spec may arm.
pub const MAX_FAULTS: usize = 32;
/// The most event numbers one `at=` list may hold.
pub const MAX_AT: usize = 1024;

/// Why a spec was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// A fault without `:PATTERN`.
    #[error("{0:?}: a fault is EVENT[=ARG]:PATTERN (e.g. rx_drop:every=10)")]
    NoPattern(String),
    /// An event name not in the list.
    #[error("{0:?} is not an event; the events are {list}", list = event_list())]
    UnknownEvent(String),
    /// An argument the event does not take, or cannot read.
    #[error("{event}: bad argument {arg:?} ({want})")]
    BadArg {
        /// The event.
        event: &'static str,
        /// What was given.
        arg: String,
        /// What it takes.
        want: &'static str,
    },
    /// A pattern that is not one of the four.
    #[error("{0:?}: a pattern is every=N, from=N, burst=B/M or at=N[,N...] (N from 1)")]
    BadPattern(String),
    /// Too many faults or `at=` numbers.
    #[error("at most {MAX_FAULTS} faults and {MAX_AT} numbers in one at= list")]
    TooMany,
}

fn event_list() -> String {
    Event::ALL.map(Event::name).join(", ")
}

/// The spelling of a status in a spec.
pub fn status_name(s: WcStatus) -> &'static str {
    match s {
        WcStatus::Success => "success",
        WcStatus::LocLenErr => "loc_len",
        WcStatus::LocQpOpErr => "loc_qp_op",
        WcStatus::LocProtErr => "loc_prot",
        WcStatus::WrFlushErr => "wr_flush",
        WcStatus::RemInvReqErr => "rem_inv_req",
        WcStatus::RemAccessErr => "rem_access",
        WcStatus::RemOpErr => "rem_op",
        WcStatus::RetryExcErr => "retry_exc",
        WcStatus::RnrRetryExcErr => "rnr_retry_exc",
        WcStatus::GeneralErr => "general",
    }
}

fn parse_arg(event: Event, arg: Option<&str>) -> Result<Arg, SpecError> {
    let bad = |want| SpecError::BadArg {
        event: event.name(),
        arg: arg.unwrap_or("").to_string(),
        want,
    };
    match event {
        Event::SendError | Event::RecvError => {
            let Some(a) = arg else {
                return Ok(Arg::Status(if event == Event::SendError {
                    WcStatus::RemAccessErr
                } else {
                    WcStatus::LocLenErr
                }));
            };
            WcStatus::ALL
                .into_iter()
                .filter(|s| *s != WcStatus::Success)
                .find(|s| status_name(*s) == a)
                .map(Arg::Status)
                .ok_or_else(|| {
                    bad("an error status: loc_len, loc_qp_op, loc_prot, wr_flush, rem_inv_req, rem_access, rem_op, retry_exc, rnr_retry_exc, general")
                })
        }
        Event::AdminError => match arg {
            None => Ok(Arg::None),
            Some(a) => parse_u64(a)
                .and_then(|n| u8::try_from(n).ok())
                .map(Arg::Opcode)
                .ok_or_else(|| bad("an admin opcode, 0-255")),
        },
        Event::MeshDelay => match arg {
            None => Ok(Arg::Millis(50)),
            Some(a) => parse_u64(a.trim_end_matches("ms"))
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n <= 60_000)
                .map(Arg::Millis)
                .ok_or_else(|| bad("milliseconds, at most 60000")),
        },
        _ => match arg {
            None => Ok(Arg::None),
            Some(_) => Err(bad("no argument")),
        },
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

fn parse_pattern(s: &str) -> Result<Pattern, SpecError> {
    let bad = || SpecError::BadPattern(s.to_string());
    let positive = |v: &str| parse_u64(v).filter(|n| *n > 0).ok_or_else(bad);
    let (kind, value) = s.split_once('=').ok_or_else(bad)?;
    match kind {
        "every" => Ok(Pattern::Every(positive(value)?)),
        "from" => Ok(Pattern::From(positive(value)?)),
        "burst" => {
            let (b, m) = value.split_once('/').ok_or_else(bad)?;
            let (fail, of) = (positive(b)?, positive(m)?);
            if fail > of {
                return Err(bad());
            }
            Ok(Pattern::Burst { fail, of })
        }
        "at" => {
            let mut list = value
                .split(',')
                .map(positive)
                .collect::<Result<Vec<_>, _>>()?;
            if list.len() > MAX_AT {
                return Err(SpecError::TooMany);
            }
            list.sort_unstable();
            list.dedup();
            Ok(Pattern::At(list))
        }
        _ => Err(bad()),
    }
}

/// Reads a spec (`EVENT[=ARG]:PATTERN[,...]`); an empty spec arms nothing.
pub fn parse_spec(spec: &str) -> Result<Vec<Fault>, SpecError> {
    // Split on commas, then put back the numbers an `at=` list goes on with.
    let mut items: Vec<String> = Vec::new();
    for tok in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let continues = tok.bytes().all(|b| b.is_ascii_digit())
            && items.last().is_some_and(|l| l.contains(":at="));
        match items.last_mut() {
            Some(last) if continues => {
                last.push(',');
                last.push_str(tok);
            }
            _ => items.push(tok.to_string()),
        }
    }
    if items.len() > MAX_FAULTS {
        return Err(SpecError::TooMany);
    }
    items
        .iter()
        .map(|item| {
            let (head, pattern) = item
                .split_once(':')
                .ok_or_else(|| SpecError::NoPattern(item.clone()))?;
            let (name, arg) = match head.split_once('=') {
                Some((n, a)) => (n, Some(a)),
                None => (head, None),
            };
            let event =
                Event::from_name(name).ok_or_else(|| SpecError::UnknownEvent(name.to_string()))?;
            Ok(Fault {
                event,
                arg: parse_arg(event, arg)?,
                pattern: parse_pattern(pattern)?,
            })
        })
        .collect()
}

/// A fault that fired.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Fired {
    /// The fault's argument.
    pub arg: Arg,
    /// The event's number, from 1, as the fault counted it.
    pub n: u64,
}

impl Fired {
    /// The status a failed request completes with, or `default`.
    pub fn status_or(&self, default: WcStatus) -> WcStatus {
        match self.arg {
            Arg::Status(s) => s,
            _ => default,
        }
    }

    /// The delay a held message waits, in milliseconds.
    pub fn millis(&self) -> u32 {
        match self.arg {
            Arg::Millis(ms) => ms,
            _ => 0,
        }
    }
}

#[derive(Debug)]
struct Armed {
    fault: Fault,
    seen: AtomicU64,
    fired: AtomicU64,
}

/// A fault's counts, for the stats file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FaultCount {
    /// The fault as a spec item.
    pub spec: String,
    /// The event it counts.
    pub event: Event,
    /// Events it saw.
    pub seen: u64,
    /// Times it fired.
    pub fired: u64,
}

/// The armed faults of one process or device, shared by its threads.
#[derive(Debug, Default)]
pub struct Injector {
    armed: Vec<Armed>,
    events: u32,
}

impl Injector {
    /// Arms the faults of `spec` (see the module's syntax).
    pub fn parse(spec: &str) -> Result<Injector, SpecError> {
        Ok(Injector::new(parse_spec(spec)?))
    }

    /// Arms `faults`.
    pub fn new(faults: Vec<Fault>) -> Injector {
        let events = faults.iter().fold(0, |m, f| m | f.event.bit());
        let armed = faults
            .into_iter()
            .map(|fault| Armed {
                fault,
                seen: AtomicU64::new(0),
                fired: AtomicU64::new(0),
            })
            .collect();
        Injector { armed, events }
    }

    /// Whether anything is armed.
    pub fn is_empty(&self) -> bool {
        self.armed.is_empty()
    }

    /// Whether a fault on `event` is armed.
    #[inline]
    pub fn arms(&self, event: Event) -> bool {
        self.events & event.bit() != 0
    }

    /// Counts one `event`; answers the first fault it fires, if any.
    #[inline]
    pub fn check(&self, event: Event) -> Option<Fired> {
        if !self.arms(event) {
            return None;
        }
        self.count(event, |_| true)
    }

    /// Counts one admin command of `opcode`, for the faults on
    /// [`Event::AdminError`] that count it.
    pub fn check_admin(&self, opcode: u8) -> Option<Fired> {
        if !self.arms(Event::AdminError) {
            return None;
        }
        self.count(Event::AdminError, |a| match a {
            Arg::Opcode(o) => *o == opcode,
            _ => true,
        })
    }

    #[cold]
    fn count(&self, event: Event, counts: impl Fn(&Arg) -> bool) -> Option<Fired> {
        let mut first = None;
        for a in &self.armed {
            if a.fault.event != event || !counts(&a.fault.arg) {
                continue;
            }
            let n = a.seen.fetch_add(1, Ordering::Relaxed) + 1;
            if a.fault.pattern.fires(n) {
                a.fired.fetch_add(1, Ordering::Relaxed);
                tracing::info!(fault = %a.fault, event = n, "injected fault fired");
                first.get_or_insert(Fired {
                    arg: a.fault.arg,
                    n,
                });
            }
        }
        first
    }

    /// Every fault with its counts.
    pub fn report(&self) -> Vec<FaultCount> {
        self.armed
            .iter()
            .map(|a| FaultCount {
                spec: a.fault.to_string(),
                event: a.fault.event,
                seen: a.seen.load(Ordering::Relaxed),
                fired: a.fired.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Faults fired so far, on every event.
    pub fn fired(&self) -> u64 {
        self.armed
            .iter()
            .map(|a| a.fired.load(Ordering::Relaxed))
            .sum()
    }
}

#[cfg(test)]
mod tests;
