//! The control graph's check: no cycle, so a packet visits each node of a
//! pipeline at most once.

use std::collections::HashMap;

use super::control::Pipelines;
use super::json::At;
use super::{LoadError, Node};

/// Refuses a control graph with a cycle: every node's successors, depth
/// first, with the nodes on the current path marked.
pub(crate) fn check_acyclic(at: &At<'_>, p: &Pipelines) -> Result<(), LoadError> {
    let succ = |n: Node| -> Vec<Node> {
        let mut v: Vec<Node> = match n {
            Node::Table(t) => {
                let t = &p.tables[t as usize];
                let mut s: Vec<Option<Node>> = t.next.by_action.clone();
                s.extend(t.next.hit);
                s.extend(t.next.miss);
                s.push(t.base_default_next);
                s.into_iter().flatten().collect()
            }
            Node::Cond(c) => [p.conditionals[c as usize].t, p.conditionals[c as usize].f]
                .into_iter()
                .flatten()
                .collect(),
            Node::Call(a) => p.action_calls[a as usize].1.into_iter().collect(),
        };
        v.dedup();
        v
    };
    let mut state: HashMap<Node, u8> = HashMap::new();
    let all = (0..p.tables.len() as u32)
        .map(Node::Table)
        .chain((0..p.conditionals.len() as u32).map(Node::Cond))
        .chain((0..p.action_calls.len() as u32).map(Node::Call));
    for start in all {
        if state.contains_key(&start) {
            continue;
        }
        let mut stack = vec![(start, succ(start), 0usize)];
        state.insert(start, 1);
        while let Some((n, s, i)) = stack.last_mut() {
            if *i < s.len() {
                let m = s[*i];
                *i += 1;
                match state.get(&m) {
                    Some(1) => {
                        return Err(at.err(format!(
                            "the control graph has a cycle through {}",
                            node_name(p, m)
                        )));
                    }
                    Some(_) => {}
                    None => {
                        state.insert(m, 1);
                        let sm = succ(m);
                        stack.push((m, sm, 0));
                    }
                }
            } else {
                state.insert(*n, 2);
                stack.pop();
            }
        }
    }
    Ok(())
}

fn node_name(p: &Pipelines, n: Node) -> String {
    match n {
        Node::Table(t) => format!("table {:?}", p.tables[t as usize].name),
        Node::Cond(c) => format!("conditional {:?}", p.conditionals[c as usize].name),
        Node::Call(a) => format!("action call {a}"),
    }
}
