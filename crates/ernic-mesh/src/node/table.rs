//! The manager's node table: who is in the mesh, alive or dead, and which
//! id the next node gets.
//!
//! A pure structure: every method that needs the time takes it (`now`), and
//! none reads the clock, sleeps or touches a socket, so the rules below are
//! tested in microseconds with time as an argument.
//!
//! The rules: a registering node gets the id it asks for when its boot id
//! matches that record (a quiet node that returns), else the next free id;
//! ids are given in turn from 1 to `max_id` and wrap around, skipping ids
//! in the table and ids whose node left it less than the quarantine ago
//! (10 s). The table holds at most `max_nodes` records (the manager's
//! own included); a full table evicts the node dead longest (its id's
//! quarantine counts from its death), or refuses when none is dead. The
//! ids in quarantine take at most one entry each.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ernic_core::{Gid, NodeId};

use crate::auth::code;
use crate::frame::NO_NODE;

use super::Peer;

/// Why the table refuses a registration. The text is what the refused
/// worker reads (it crosses the wire in a REFUSE frame).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmitError {
    /// Every record is an alive node.
    #[error("the mesh is full ({max_nodes} nodes, none dead)")]
    Full {
        /// The table's cap.
        max_nodes: usize,
    },
    /// Every id not in use is in quarantine.
    #[error(
        "no node id is free now (every id not in use left the mesh less than {quarantine:?} ago); retry"
    )]
    NoFreeId {
        /// How long an id stays unused after its node left.
        quarantine: Duration,
    },
}

impl AdmitError {
    /// The refusal code the worker is told.
    pub(crate) fn code(&self) -> u16 {
        code::FULL
    }
}

/// A node as the manager's table records it.
#[derive(Debug, Clone)]
pub(super) struct Rec {
    pub boot: u64,
    pub alive: bool,
    pub died: Option<Instant>,
    pub addr: Option<SocketAddr>,
    pub gids: Vec<Gid>,
}

/// The table's bounds (from [`MeshConfig`](crate::MeshConfig)).
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// Most records, the manager's own included.
    pub max_nodes: usize,
    /// Highest id given out.
    pub max_id: u16,
    /// How long an id stays unused after its node left the table.
    pub quarantine: Duration,
}

/// What became of a registration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Admission {
    /// The node's id, or why it has none.
    pub id: Result<u16, AdmitError>,
    /// The dead node evicted to make room, if one was (even when no id was
    /// free after all).
    pub evicted: Option<u16>,
}

/// The manager's table (empty on a worker).
#[derive(Debug)]
pub(super) struct NodeTable {
    nodes: BTreeMap<u16, Rec>,
    /// The next id to try: ids are given in turn, wrapping around.
    next_id: u16,
    /// Ids whose node left the table, and when it died: none is given out
    /// again within the quarantine. At most one entry per id.
    released: HashMap<u16, Instant>,
    limits: Limits,
}

impl NodeTable {
    /// An empty table.
    pub fn new(limits: Limits) -> NodeTable {
        NodeTable {
            nodes: BTreeMap::new(),
            next_id: 1,
            released: HashMap::new(),
            limits,
        }
    }

    /// Records the manager itself, node 0.
    pub fn insert_manager(&mut self, boot: u64, addr: SocketAddr, gids: Vec<Gid>) {
        self.nodes.insert(
            0,
            Rec {
                boot,
                alive: true,
                died: None,
                addr: Some(addr),
                gids,
            },
        );
    }

    /// Admits a registering node: the id it asked for if its boot id
    /// matches (a quiet node that returns), else the next free one; a full
    /// table evicts the node dead longest, or refuses.
    pub fn admit(
        &mut self,
        boot: u64,
        wanted: u16,
        addr: SocketAddr,
        gids: Vec<Gid>,
        now: Instant,
    ) -> Admission {
        let mut evicted = None;
        let id = match self.nodes.get(&wanted) {
            Some(r) if wanted != 0 && r.boot == boot => wanted,
            _ => {
                if self.nodes.len() >= self.limits.max_nodes {
                    match self.evict_longest_dead(now) {
                        Some(v) => evicted = Some(v),
                        None => {
                            let max_nodes = self.limits.max_nodes;
                            return Admission {
                                id: Err(AdmitError::Full { max_nodes }),
                                evicted,
                            };
                        }
                    }
                }
                let Some(id) = self.free_id(now) else {
                    let quarantine = self.limits.quarantine;
                    return Admission {
                        id: Err(AdmitError::NoFreeId { quarantine }),
                        evicted,
                    };
                };
                id
            }
        };
        self.nodes.insert(
            id,
            Rec {
                boot,
                alive: true,
                died: None,
                addr: Some(addr),
                gids,
            },
        );
        Admission {
            id: Ok(id),
            evicted,
        }
    }

    /// Marks a node dead at `now`; answers whether it was alive.
    pub fn mark_dead(&mut self, id: u16, now: Instant) -> bool {
        match self.nodes.get_mut(&id) {
            Some(r) if r.alive => {
                r.alive = false;
                r.died = Some(now);
                true
            }
            _ => false,
        }
    }

    /// A node leaves the table at `now` (its id goes to quarantine like any
    /// other); answers whether it was in it.
    pub fn forget(&mut self, id: u16, now: Instant) -> bool {
        if self.nodes.remove(&id).is_some() {
            self.released.insert(id, now);
            true
        } else {
            false
        }
    }

    /// Replaces a node's GIDs (nothing, for a node not in the table).
    pub fn set_gids(&mut self, id: u16, gids: Vec<Gid>) {
        if let Some(r) = self.nodes.get_mut(&id) {
            r.gids = gids;
        }
    }

    /// Whether the table has no record (a worker's).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Records.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The records, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &Rec)> {
        self.nodes.iter().map(|(id, r)| (*id, r))
    }

    /// The topology the table makes.
    pub fn peers(&self) -> Vec<Peer> {
        self.iter()
            .map(|(id, r)| Peer {
                id: NodeId(id),
                alive: r.alive,
                addr: r.addr,
            })
            .collect()
    }

    /// Removes the node dead longest, if one is dead; its id's quarantine
    /// counts from its death.
    fn evict_longest_dead(&mut self, now: Instant) -> Option<u16> {
        let (v, died) = self
            .nodes
            .iter()
            .filter(|(_, r)| !r.alive)
            .min_by_key(|(_, r)| r.died)
            .map(|(id, r)| (*id, r.died.unwrap_or(now)))?;
        self.nodes.remove(&v);
        self.released.insert(v, died);
        Some(v)
    }

    /// The next id to give out, from 1 to `max_id`, in turn: not in the
    /// table, and not released within the quarantine of `now`.
    fn free_id(&mut self, now: Instant) -> Option<u16> {
        let max = self.limits.max_id.clamp(1, NO_NODE - 1);
        for _ in 0..max {
            let id = self.next_id.clamp(1, max);
            self.next_id = if id >= max { 1 } else { id + 1 };
            if self.nodes.contains_key(&id) {
                continue;
            }
            match self.released.get(&id) {
                Some(t) if now.duration_since(*t) < self.limits.quarantine => continue,
                Some(_) => {
                    self.released.remove(&id);
                }
                None => {}
            }
            return Some(id);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: Duration = Duration::from_secs(10);

    fn addr() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 7000))
    }

    /// A manager's table: node 0 and room for `max_nodes - 1` workers.
    fn table(max_nodes: usize, max_id: u16) -> NodeTable {
        let mut t = NodeTable::new(Limits {
            max_nodes,
            max_id,
            quarantine: Q,
        });
        t.insert_manager(1, addr(), vec![]);
        t
    }

    /// A fresh node (asking for no id in particular) registers at `now`.
    fn admit(t: &mut NodeTable, boot: u64, now: Instant) -> Result<u16, AdmitError> {
        t.admit(boot, NO_NODE, addr(), vec![], now).id
    }

    fn id(t: &mut NodeTable, boot: u64, now: Instant) -> u16 {
        admit(t, boot, now).expect("admitted")
    }

    #[test]
    fn ids_are_given_in_turn_from_one() {
        let t0 = Instant::now();
        let mut t = table(64, 100);
        assert_eq!(
            [id(&mut t, 10, t0), id(&mut t, 11, t0), id(&mut t, 12, t0)],
            [1, 2, 3]
        );
        assert_eq!(t.len(), 4, "node 0 and three workers");
    }

    #[test]
    fn a_returning_node_keeps_its_id_and_a_restarted_one_does_not() {
        let t0 = Instant::now();
        let mut t = table(64, 100);
        assert_eq!(id(&mut t, 10, t0), 1);
        assert!(t.mark_dead(1, t0));
        // Same boot id, asking for its id: it comes back alive under it.
        let back = t.admit(10, 1, addr(), vec![], t0);
        assert_eq!(
            back,
            Admission {
                id: Ok(1),
                evicted: None
            }
        );
        assert!(t.iter().any(|(i, r)| i == 1 && r.alive));
        // Another boot id asking for id 1 (a restarted process): a new id.
        assert_eq!(t.admit(99, 1, addr(), vec![], t0).id, Ok(2));
        // Nobody gets node 0's id, whatever its boot id.
        assert_ne!(t.admit(1, 0, addr(), vec![], t0).id, Ok(0));
    }

    #[test]
    fn an_id_is_not_reused_before_its_quarantine_passes_and_is_after() {
        let t0 = Instant::now();
        // Ids 1 and 2 only: the wrap-around comes back to id 1 at once.
        let mut t = table(64, 2);
        assert_eq!(id(&mut t, 10, t0), 1);
        assert!(t.forget(1, t0));
        assert_eq!(id(&mut t, 11, t0), 2, "the next in turn");
        let early = t0 + Q - Duration::from_millis(1);
        assert_eq!(
            admit(&mut t, 12, early),
            Err(AdmitError::NoFreeId { quarantine: Q }),
            "id 1 left less than the quarantine ago, id 2 is in use"
        );
        assert_eq!(id(&mut t, 12, t0 + Q), 1, "free once the quarantine passed");
    }

    #[test]
    fn the_cap_refuses_the_next_registration_while_none_is_dead() {
        let t0 = Instant::now();
        let mut t = table(3, 100); // node 0 and two workers
        id(&mut t, 10, t0);
        id(&mut t, 11, t0);
        assert_eq!(
            admit(&mut t, 12, t0),
            Err(AdmitError::Full { max_nodes: 3 })
        );
        assert_eq!(t.len(), 3, "a refusal changes nothing");
        assert_eq!(
            AdmitError::Full { max_nodes: 3 }.to_string(),
            "the mesh is full (3 nodes, none dead)",
            "the words the refused worker reads"
        );
    }

    #[test]
    fn a_full_table_evicts_the_node_dead_longest_and_its_id_waits_out_the_quarantine() {
        let t0 = Instant::now();
        let mut t = table(3, 3);
        assert_eq!(id(&mut t, 10, t0), 1);
        assert_eq!(id(&mut t, 11, t0), 2);
        assert!(t.mark_dead(1, t0));
        assert!(t.mark_dead(2, t0 + Duration::from_secs(1)));
        assert!(!t.mark_dead(2, t0 + Duration::from_secs(2)), "dead already");
        let a = t.admit(12, NO_NODE, addr(), vec![], t0 + Duration::from_secs(3));
        assert_eq!(
            a,
            Admission {
                id: Ok(3),
                evicted: Some(1)
            },
            "node 1 died first"
        );
        assert!(t.iter().all(|(i, _)| i != 1), "evicted");
        assert!(t.iter().any(|(i, r)| i == 2 && !r.alive), "node 2 stays");
        // Full again; node 2 is evicted, but ids 1 and 2 are in quarantine
        // (counted from their deaths) and id 3 is in use.
        assert_eq!(
            t.admit(13, NO_NODE, addr(), vec![], t0 + Duration::from_secs(4)),
            Admission {
                id: Err(AdmitError::NoFreeId { quarantine: Q }),
                evicted: Some(2),
            }
        );
        // That refused attempt evicted node 2 all the same: there is room
        // now, and id 1's quarantine ran from its death at t0.
        assert_eq!(t.len(), 2);
        assert_eq!(admit(&mut t, 14, t0 + Q), Ok(1));
    }

    #[test]
    fn churn_past_the_id_space_never_meets_an_id_within_its_quarantine() {
        let t0 = Instant::now();
        let mut t = table(64, 5);
        let mut last: HashMap<u16, Instant> = HashMap::new();
        let (mut granted, mut refused) = (0, 0);
        for step in 0..200u32 {
            let now = t0 + Q / 8 * step;
            match admit(&mut t, 100 + u64::from(step), now) {
                Ok(id) => {
                    assert!((1..=5).contains(&id), "id {id}");
                    if let Some(before) = last.insert(id, now) {
                        assert!(now - before >= Q, "id {id} again after {:?}", now - before);
                    }
                    assert!(t.forget(id, now));
                    granted += 1;
                }
                Err(e) => {
                    assert_eq!(e, AdmitError::NoFreeId { quarantine: Q });
                    refused += 1;
                }
            }
            assert!(t.released.len() <= 5, "one quarantine entry per id at most");
        }
        // Five ids every ten seconds: 250 seconds of steps give about 125.
        assert!(
            granted >= 100 && refused > 0,
            "{granted} granted, {refused} refused"
        );
    }
}
