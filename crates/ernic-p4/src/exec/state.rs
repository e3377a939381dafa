//! Everything a running program keeps between packets: table entries,
//! action profiles, counter, meter and register arrays, parse value sets,
//! mirroring sessions and multicast groups, and the log of digests and
//! `log_msg` lines.

use std::collections::HashMap;

use crate::program::Program;

use super::meter::Meter;
use super::tables::{ProfileState, TableState};

/// A multicast node: its `egress_rid` and ports.
pub type McNode = (u32, Vec<u32>);

/// The run-time state of a program.
#[derive(Clone, Debug)]
pub struct State {
    /// Tables, by program table index.
    pub tables: Vec<TableState>,
    /// Action profiles.
    pub profiles: Vec<ProfileState>,
    /// Counter arrays: `(packets, bytes)` per cell.
    pub counters: Vec<Vec<(u64, u64)>>,
    /// Meter arrays.
    pub meters: Vec<Vec<Meter>>,
    /// Register arrays.
    pub registers: Vec<Vec<u128>>,
    /// Parse value sets: their values, compressed (key fields
    /// concatenated without padding).
    pub value_sets: Vec<Vec<u128>>,
    /// Mirroring sessions: session id → egress port.
    pub mirrors: HashMap<u32, u32>,
    /// Multicast groups: group id → the handles of its nodes.
    pub mcast: HashMap<u32, Vec<u32>>,
    /// Multicast nodes by handle.
    pub mcast_nodes: Vec<Option<McNode>>,
    /// Round-robin counters, per calculation.
    pub round_robin: Vec<u64>,
    /// Digests and `log_msg` output, oldest first (bounded).
    pub log: Vec<String>,
    /// Packets dropped because processing failed (`ExecError`).
    pub errors: u64,
}

/// Lines kept in [`State::log`]; older ones are dropped.
pub const LOG_LINES: usize = 4096;

impl State {
    /// The state of a freshly loaded program.
    pub fn new(p: &Program) -> State {
        State {
            tables: p.tables.iter().map(TableState::new).collect(),
            profiles: p
                .action_profiles
                .iter()
                .map(|_| ProfileState::default())
                .collect(),
            counters: p
                .counters
                .iter()
                .map(|c| vec![(0, 0); c.size as usize])
                .collect(),
            meters: p
                .meters
                .iter()
                .map(|m| vec![Meter::default(); m.size as usize])
                .collect(),
            registers: p
                .registers
                .iter()
                .map(|r| vec![0; r.size as usize])
                .collect(),
            value_sets: p.value_sets.iter().map(|_| Vec::new()).collect(),
            mirrors: HashMap::new(),
            mcast: HashMap::new(),
            mcast_nodes: Vec::new(),
            round_robin: vec![0; p.calculations.len() + p.action_profiles.len()],
            log: Vec::new(),
            errors: 0,
        }
    }

    /// A group's replicas, `(port, rid)`, node by node (none for an
    /// unknown group).
    pub fn replicas(&self, group: u32) -> Vec<(u32, u32)> {
        let Some(nodes) = self.mcast.get(&group) else {
            return Vec::new();
        };
        nodes
            .iter()
            .filter_map(|&n| self.mcast_nodes.get(n as usize).and_then(Option::as_ref))
            .flat_map(|(rid, ports)| ports.iter().map(move |&p| (p, *rid)))
            .collect()
    }

    /// Appends a log line, keeping at most [`LOG_LINES`].
    pub fn log(&mut self, line: String) {
        if self.log.len() >= LOG_LINES {
            self.log.remove(0);
        }
        self.log.push(line);
    }
}
