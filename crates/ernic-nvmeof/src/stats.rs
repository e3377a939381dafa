//! What an NVMe-oF target counted, for its stats file: commands by queue
//! kind, opcode and status type; bytes and commands per namespace; and the
//! transport's, GSI QP's and CM's counts. Relaxed atomics in fixed arrays:
//! the controller bumps them where it completes a command, the transport
//! publishes its own plain counts once per poll, and a stats writer on
//! another thread reads them ([`NvmeofStats::groups`]) with no lock on the
//! I/O path. Every slot is bounded: 256 opcodes by two queue kinds by five
//! status types, and [`MAX_NAMESPACES`] namespaces.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ernic_ops::Group;

use crate::config::MAX_NAMESPACES;
use crate::rdma::TransportStats;
use crate::wire::status::Status;

/// The status types commands are counted under (by the completion's SCT).
pub const STATUSES: [&str; 5] = ["success", "generic", "command_specific", "media", "other"];

fn status_slot(s: Status) -> usize {
    match (s.sct, s.sc) {
        (0, 0) => 0,
        (0, _) => 1,
        (1, _) => 2,
        (2, _) => 3,
        _ => 4,
    }
}

/// An admin or I/O opcode's name (nvme-cli's), or `0xNN`.
pub fn opcode_name(admin: bool, opcode: u8) -> String {
    let name = match (admin, opcode) {
        (_, 0x7f) => "fabrics",
        (true, 0x02) => "get_log_page",
        (true, 0x06) => "identify",
        (true, 0x08) => "abort",
        (true, 0x09) => "set_features",
        (true, 0x0a) => "get_features",
        (true, 0x0c) => "async_event",
        (true, 0x18) => "keep_alive",
        (false, 0x00) => "flush",
        (false, 0x01) => "write",
        (false, 0x02) => "read",
        (false, 0x08) => "write_zeroes",
        (false, 0x09) => "dsm",
        _ => return format!("{opcode:#04x}"),
    };
    name.to_string()
}

#[derive(Debug, Default)]
struct Namespace {
    reads: AtomicU64,
    writes: AtomicU64,
    read_bytes: AtomicU64,
    written_bytes: AtomicU64,
}

/// The target's counters, shared by its controller, its transport and the
/// stats writer.
#[derive(Debug)]
pub struct NvmeofStats {
    /// [queue kind (0 admin, 1 I/O)][opcode][status type].
    commands: Box<[[[AtomicU64; STATUSES.len()]; 256]; 2]>,
    namespaces: [Namespace; MAX_NAMESPACES],
    /// The transport's counts as of its last poll: accepted, rejected,
    /// torn down, commands; GSI received, bad, sent, dropped.
    transport: [AtomicU64; 8],
    /// The CM's counts as of the last poll (the order of [`CM_NAMES`]).
    cm: [AtomicU64; 8],
}

const TRANSPORT_NAMES: [&str; 4] = [
    "connections_accepted",
    "connections_rejected",
    "queues_torn_down",
    "commands",
];
const GSI_NAMES: [&str; 4] = ["mads_received", "mads_bad", "mads_sent", "mads_dropped"];
const CM_NAMES: [&str; 8] = [
    "malformed",
    "unknown",
    "unexpected",
    "duplicates",
    "rejected_full",
    "retransmits",
    "outputs_dropped",
    "events_dropped",
];

impl Default for NvmeofStats {
    fn default() -> NvmeofStats {
        NvmeofStats {
            commands: Box::new(std::array::from_fn(|_| {
                std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0)))
            })),
            namespaces: std::array::from_fn(|_| Namespace::default()),
            transport: std::array::from_fn(|_| AtomicU64::new(0)),
            cm: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl NvmeofStats {
    /// Counts one completed command.
    pub fn command(&self, admin: bool, opcode: u8, status: Status) {
        self.commands[usize::from(!admin)][usize::from(opcode)][status_slot(status)]
            .fetch_add(1, Relaxed);
    }

    /// Counts a read of `bytes` from namespace index `ns` (nsid - 1).
    pub fn read(&self, ns: usize, bytes: u64) {
        if let Some(n) = self.namespaces.get(ns) {
            n.reads.fetch_add(1, Relaxed);
            n.read_bytes.fetch_add(bytes, Relaxed);
        }
    }

    /// Counts a write of `bytes` to namespace index `ns` (nsid - 1).
    pub fn write(&self, ns: usize, bytes: u64) {
        if let Some(n) = self.namespaces.get(ns) {
            n.writes.fetch_add(1, Relaxed);
            n.written_bytes.fetch_add(bytes, Relaxed);
        }
    }

    /// Publishes the transport's plain counts and its CM's.
    pub fn publish(&self, t: &TransportStats, cm: &ernic_cm::conn::CmStats) {
        let vals = [
            t.accepted,
            t.rejected,
            t.torn_down,
            t.commands,
            t.gsi.received,
            t.gsi.bad,
            t.gsi.sent,
            t.gsi.dropped,
        ];
        for (a, v) in self.transport.iter().zip(vals) {
            a.store(v, Relaxed);
        }
        let cm = [
            cm.malformed,
            cm.unknown,
            cm.unexpected,
            cm.duplicates,
            cm.rejected_full,
            cm.retransmits,
            cm.outputs_dropped,
            cm.events_dropped,
        ];
        for (a, v) in self.cm.iter().zip(cm) {
            a.store(v, Relaxed);
        }
    }

    /// Commands of `opcode` on admin (or I/O) queues with status type
    /// `status` (one of [`STATUSES`]).
    pub fn commands(&self, admin: bool, opcode: u8, status: &str) -> u64 {
        let s = STATUSES.iter().position(|x| *x == status).unwrap_or(0);
        self.commands[usize::from(!admin)][usize::from(opcode)][s].load(Relaxed)
    }

    /// The counts as stats-file groups for a target of `namespaces`
    /// namespaces: `nvmeof` (the transport), `nvmeof_gsi`, `nvmeof_cm`,
    /// `nvmeof_namespace{nsid}`, and `nvmeof_command{queue,opcode,status}`
    /// for every slot that counted.
    pub fn groups(&self, namespaces: usize) -> Vec<Group> {
        let load = |a: &[AtomicU64]| a.iter().map(|x| x.load(Relaxed)).collect::<Vec<_>>();
        let t = load(&self.transport);
        let mut out = vec![
            Group::new("nvmeof")
                .counters(TRANSPORT_NAMES.iter().copied().zip(t[..4].iter().copied())),
            Group::new("nvmeof_gsi")
                .counters(GSI_NAMES.iter().copied().zip(t[4..].iter().copied())),
            Group::new("nvmeof_cm").counters(CM_NAMES.iter().copied().zip(load(&self.cm))),
        ];
        for (i, n) in self.namespaces.iter().take(namespaces).enumerate() {
            out.push(
                Group::new("nvmeof_namespace")
                    .label("nsid", i + 1)
                    .counters([
                        ("reads", n.reads.load(Relaxed)),
                        ("writes", n.writes.load(Relaxed)),
                        ("read_bytes", n.read_bytes.load(Relaxed)),
                        ("written_bytes", n.written_bytes.load(Relaxed)),
                    ]),
            );
        }
        for (kind, ops) in self.commands.iter().enumerate() {
            let admin = kind == 0;
            for (opcode, by_status) in ops.iter().enumerate() {
                for (s, n) in by_status.iter().enumerate() {
                    let n = n.load(Relaxed);
                    if n > 0 {
                        out.push(
                            Group::new("nvmeof_command")
                                .label("queue", if admin { "admin" } else { "io" })
                                .label("opcode", opcode_name(admin, opcode as u8))
                                .label("status", STATUSES[s])
                                .counter("commands", n),
                        );
                    }
                }
            }
        }
        out
    }
}
