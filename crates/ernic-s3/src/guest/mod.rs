//! The store as a host on an emulated guest's Ethernet segment (seed 001,
//! "The Ethernet Side"): the guest reaches the S3 API at the store's IP
//! and port as it would reach any host beside it, through its own ionic
//! NIC, with no TAP and no host network.
//!
//! [`GuestStack::start`] gives a [`GuestEndpoint`] (attached to the guest's
//! device, which offers it every frame the guest sends) and runs the
//! stack's thread, `s3-guest-net`: a smoltcp interface with the store's
//! MAC and IP that answers ARP and ICMP echo itself, and TCP listeners on
//! the store's port. Each connection the guest opens is bridged through a
//! socket pair to a thread of its own (`s3-guest-conn`) that runs
//! [`serve_connection`](crate::http::serve_connection) with the store's
//! handler, exactly as a host TCP connection is served.
//!
//! What it promises: the device's thread is never blocked by it (every
//! queue between them is bounded, and what does not fit is dropped and
//! counted, as a wire drops); nothing the guest sends can make it panic
//! or hold memory beyond those bounds and [`MAX_CONNECTIONS`] connections
//! of [`TCP_BUFFER`] bytes each way; its thread sleeps when nothing is
//! pending, and stops when the [`GuestStack`] is dropped. It never
//! touches a frame that is not the store's: those go on to the wire.

mod endpoint;
mod net;
#[cfg(test)]
mod tests;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;

pub use endpoint::{GuestEndpoint, TO_GUEST, claims};

use crate::http::{Handler, Limits};

/// Frames the guest sent that may wait for the stack's thread; past this
/// they are dropped and counted.
pub const FROM_GUEST: usize = 1024;
/// TCP listeners kept open on the store's port.
pub const LISTENERS: usize = 8;
/// The most TCP connections at once (listeners not counted); past this a
/// new connection is refused until one closes.
pub const MAX_CONNECTIONS: usize = 64;
/// Bytes of each TCP socket's receive buffer, and of its send buffer.
pub const TCP_BUFFER: usize = 256 * 1024;

/// Where the store sits on the segment.
#[derive(Debug, Clone)]
pub struct GuestConfig {
    /// Its IPv4 address (a /24 is assumed for its neighbours).
    pub ip: Ipv4Addr,
    /// The prefix length of its subnet.
    pub prefix: u8,
    /// Its MAC.
    pub mac: [u8; 6],
    /// Its HTTP port.
    pub port: u16,
    /// Bounds on each HTTP connection.
    pub limits: Limits,
}

impl GuestConfig {
    /// The store at `ip`/24 with `mac`, serving on `port`.
    pub fn new(ip: Ipv4Addr, mac: [u8; 6], port: u16) -> GuestConfig {
        GuestConfig {
            ip,
            prefix: 24,
            mac,
            port,
            limits: Limits::default(),
        }
    }
}

/// Why the stack did not start.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// The MAC is not a unicast address a host may have.
    #[error("the store's MAC {mac:02x?} is not a unicast address")]
    Mac {
        /// The MAC.
        mac: [u8; 6],
    },
    /// The IP cannot be a host's (unspecified, broadcast, multicast).
    #[error("the store's address {ip} cannot be a host's")]
    Ip {
        /// The address.
        ip: Ipv4Addr,
    },
    /// The port is 0.
    #[error("the store's port cannot be 0")]
    Port,
    /// The prefix length is not 1 to 32.
    #[error("the prefix length {prefix} is not 1 to 32")]
    Prefix {
        /// The prefix length.
        prefix: u8,
    },
    /// Its notification socket or its thread could not start.
    #[error("starting the store's network stack")]
    Io(#[from] std::io::Error),
}

/// What the endpoint and the stack's thread tell each other.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A frame the guest sent to the store.
    Frame(Vec<u8>),
    /// Look again: room was made in the outbox, or a connection's worker
    /// wrote, read or closed.
    Wake,
}

/// Counters shared by the endpoint and the stack's thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) claimed: AtomicU64,
    pub(crate) dropped_from_guest: AtomicU64,
    pub(crate) sent: AtomicU64,
    pub(crate) dropped_to_guest: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) open: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// A snapshot of the stack's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuestStats {
    /// Frames the guest sent that were the store's.
    pub claimed: u64,
    /// Of those, dropped because the stack's channel was full.
    pub dropped_from_guest: u64,
    /// Frames the stack queued for the guest.
    pub sent: u64,
    /// Frames the stack made that found the outbox full.
    pub dropped_to_guest: u64,
    /// Frames the device delivered to the guest.
    pub delivered: u64,
    /// TCP connections the guest opened (served).
    pub connections: u64,
    /// Connections closed because [`MAX_CONNECTIONS`] were open, or a
    /// worker could not start.
    pub refused: u64,
    /// Connections open now.
    pub open: u64,
}

/// The store's network stack on a guest's segment; its thread stops when
/// this is dropped.
pub struct GuestStack {
    config: GuestConfig,
    stop: Arc<AtomicBool>,
    wake: SyncSender<Msg>,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for GuestStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestStack")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl GuestStack {
    /// Starts the stack for `config`, serving each connection with
    /// `handler`; the answer's endpoint goes to the guest's device.
    pub fn start(
        config: GuestConfig,
        handler: Arc<dyn Handler>,
    ) -> Result<(GuestStack, GuestEndpoint), GuestError> {
        let mac = config.mac;
        if mac[0] & 1 != 0 || mac == [0; 6] {
            return Err(GuestError::Mac { mac });
        }
        let ip = config.ip;
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
            return Err(GuestError::Ip { ip });
        }
        if config.port == 0 {
            return Err(GuestError::Port);
        }
        if !(1..=32).contains(&config.prefix) {
            return Err(GuestError::Prefix {
                prefix: config.prefix,
            });
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(FROM_GUEST);
        let (outbox, ready) = endpoint::Outbox::new()?;
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let woken = Arc::new(AtomicBool::new(false));
        let endpoint = GuestEndpoint::new(
            ip,
            tx.clone(),
            outbox.clone(),
            ready,
            counters.clone(),
            woken.clone(),
        );
        let net = net::Net::new(
            &config,
            handler,
            outbox,
            counters.clone(),
            tx.clone(),
            woken,
        );
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("s3-guest-net".into())
            .spawn(move || net.run(&rx, &s))?;
        Ok((
            GuestStack {
                config,
                stop,
                wake: tx,
                counters,
                thread: Some(thread),
            },
            endpoint,
        ))
    }

    /// Where the store sits.
    pub fn config(&self) -> &GuestConfig {
        &self.config
    }

    /// The counters now.
    pub fn stats(&self) -> GuestStats {
        self.watch().stats()
    }

    /// A handle that reads the counters from anywhere, for as long as it
    /// is kept (the stats file's writer keeps one).
    pub fn watch(&self) -> GuestWatch {
        GuestWatch(self.counters.clone())
    }
}

/// Reads a [`GuestStack`]'s counters (see [`GuestStack::watch`]).
#[derive(Debug, Clone)]
pub struct GuestWatch(Arc<Counters>);

impl GuestWatch {
    /// The counters now.
    pub fn stats(&self) -> GuestStats {
        let c = &self.0;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        GuestStats {
            claimed: g(&c.claimed),
            dropped_from_guest: g(&c.dropped_from_guest),
            sent: g(&c.sent),
            dropped_to_guest: g(&c.dropped_to_guest),
            delivered: g(&c.delivered),
            connections: g(&c.connections),
            refused: g(&c.refused),
            open: g(&c.open),
        }
    }

    /// The counters as the stats file's `s3_guest` group.
    pub fn group(&self) -> ernic_ops::Group {
        let s = self.stats();
        ernic_ops::Group::new("s3_guest")
            .counter("frames_claimed", s.claimed)
            .counter("frames_dropped_from_guest", s.dropped_from_guest)
            .counter("frames_sent", s.sent)
            .counter("frames_dropped_to_guest", s.dropped_to_guest)
            .counter("frames_delivered", s.delivered)
            .counter("connections", s.connections)
            .counter("connections_refused", s.refused)
            .gauge("connections_open", s.open as f64)
    }
}

impl Drop for GuestStack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.wake.try_send(Msg::Wake);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
