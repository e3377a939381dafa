//! GID ownership: a GID belongs to the one alive node that claims it (a
//! contested GID belongs to no one); this node's own GIDs, and telling the
//! manager when they change.

use std::collections::HashMap;

use ernic_core::{Gid, NodeId};

use super::control::gids_frame;
use super::{MAX_GIDS, Shared, State};

impl Shared {
    pub fn owner(&self, gid: &Gid) -> Option<NodeId> {
        let st = self.lock();
        let o = *st.owners.get(gid)?;
        (Some(NodeId(o)) != self.me()).then_some(NodeId(o))
    }

    pub fn gids_of(&self, node: NodeId) -> Vec<Gid> {
        let st = self.lock();
        let mut v: Vec<Gid> = st
            .owners
            .iter()
            .filter(|(_, o)| **o == node.0)
            .map(|(g, _)| *g)
            .collect();
        v.sort_unstable_by_key(|g| g.0);
        v
    }

    pub fn set_gids(&self, mut gids: Vec<Gid>) {
        if gids.len() > MAX_GIDS {
            tracing::warn!(node = %self.who(),
                "{} GIDs, more than a node may claim: advertising the first {MAX_GIDS}",
                gids.len()
            );
            gids.truncate(MAX_GIDS);
        }
        let mut st = self.lock();
        st.my_gids = gids.clone();
        if self.manager {
            st.table.set_gids(0, gids);
            st.dirty_gids.insert(0);
            st.recompute_owners(Some(0));
            drop(st);
            self.changed.notify_all();
        } else if let Some(me) = self.me() {
            st.recompute_owners(Some(me.0));
            if let Some(c) = st.conns.get(&0) {
                c.control(gids_frame(me.0, me.0, true, &gids));
            }
        }
    }
}

impl State {
    pub(super) fn recompute_owners(&mut self, me: Option<u16>) {
        let mut claims: HashMap<Gid, (u16, u32)> = HashMap::new();
        let mut claim = |g: Gid, n: u16| {
            let e = claims.entry(g).or_insert((n, 0));
            if e.0 != n || e.1 == 0 {
                e.1 += 1;
            }
            e.0 = n;
        };
        if !self.table.is_empty() {
            for (id, r) in self.table.iter() {
                if r.alive {
                    for g in &r.gids {
                        claim(*g, id);
                    }
                }
            }
        } else {
            for (id, (alive, gids)) in &self.node_gids {
                if *alive && Some(*id) != me {
                    for g in gids {
                        claim(*g, *id);
                    }
                }
            }
            if let Some(me) = me {
                for g in self.my_gids.clone() {
                    claim(g, me);
                }
            }
        }
        self.owners = claims
            .into_iter()
            .filter(|(_, (_, n))| *n == 1)
            .map(|(g, (o, _))| (g, o))
            .collect();
    }
}
