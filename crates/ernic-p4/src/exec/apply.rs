//! Tables and actions as a pipeline applies them: the key built from the
//! packet, the lookup, direct counters and meters, an action profile's
//! member or a selector's choice, the next node; and an action's
//! primitives run in order, with its forward jumps, assertions and externs.

use crate::program::{Node, Prim, TableImpl};

use super::action::run_prim;
use super::eval::{Scope, eval};
use super::packet::calc_bytes;
use super::phv::ExecError;
use super::switch::{PacketCtx, Switch};
use super::tables::EntryAction;
use super::{bits, hash};

impl Switch {
    pub(super) fn apply_table(
        &mut self,
        t: u32,
        pc: &mut PacketCtx,
    ) -> Result<Option<Node>, ExecError> {
        let p = &self.program;
        let table = &p.tables[t as usize];
        self.key.clear();
        for k in &table.key {
            let v = eval(p, &self.phv, &self.state, Scope::NONE, &k.value)? as u128;
            let start = self.key.len();
            bits::push_be(&mut self.key, v & bits::mask(k.bits), k.nbytes());
            if let Some(m) = &k.mask {
                for (b, m) in self.key[start..].iter_mut().zip(m) {
                    *b &= m;
                }
            }
        }
        let ts = &mut self.state.tables[t as usize];
        let hit_idx = ts.lookup(&self.key);
        let (action_entry, hit) = match hit_idx {
            Some(i) => {
                let e = ts.at(i).ok_or(ExecError::UnionMember(0))?;
                if table.with_counters {
                    e.packets += 1;
                    e.bytes += pc.length.max(0) as u64;
                }
                if let (Some(m), Some(result)) = (
                    table.direct_meter,
                    table.direct_meter.and_then(|m| p.meters[m as usize].result),
                ) {
                    let units = match p.meters[m as usize].unit {
                        crate::program::MeterUnit::Bytes => pc.length.max(0) as u64,
                        crate::program::MeterUnit::Packets => 1,
                    };
                    let colour = e.meter.execute(units, pc.now_ns);
                    self.phv.set(p, result, colour);
                }
                (e.action.clone(), true)
            }
            None => (ts.default.clone(), false),
        };
        let resolved = self.resolve_action(table.imp, &action_entry)?;
        if let Some((action, data)) = &resolved {
            self.run_action(*action, data, pc)?;
        }
        let table = &self.program.tables[t as usize];
        if hit {
            if let Some(n) = table.next.hit {
                return Ok(n);
            }
        } else if let Some(n) = table.next.miss {
            return Ok(n);
        }
        let pos = resolved.and_then(|(a, _)| table.actions.iter().position(|&x| x == a));
        Ok(match pos {
            Some(i) => table.next.by_action[i],
            None => table.base_default_next,
        })
    }

    /// The action and data an entry runs (a member's, or a group member's
    /// chosen by the selector's hash).
    fn resolve_action(
        &mut self,
        imp: TableImpl,
        a: &EntryAction,
    ) -> Result<Option<(u32, Vec<i128>)>, ExecError> {
        let p = &self.program;
        Ok(match a {
            EntryAction::Direct { action, data } => {
                (*action != u32::MAX).then(|| (*action, data.clone()))
            }
            EntryAction::Member(m) => {
                let prof = match imp {
                    TableImpl::Indirect(x) | TableImpl::IndirectWs(x) => x,
                    TableImpl::Simple => return Ok(None),
                };
                self.state.profiles[prof as usize]
                    .members
                    .get(*m as usize)
                    .cloned()
                    .flatten()
            }
            EntryAction::Group(g) => {
                let TableImpl::IndirectWs(prof) = imp else {
                    return Ok(None);
                };
                let members = self.state.profiles[prof as usize]
                    .groups
                    .get(*g as usize)
                    .cloned()
                    .flatten()
                    .unwrap_or_default();
                if members.is_empty() {
                    return Ok(None);
                }
                let sel = p.action_profiles[prof as usize].selector.as_ref();
                let h = match sel {
                    Some(s) => {
                        calc_bytes(p, &self.phv, &s.inputs, &[], &mut self.buf);
                        let rr = p.calculations.len() + prof as usize;
                        hash::hash(s.algo, &self.buf, &mut self.state.round_robin[rr])
                    }
                    None => 0,
                };
                let m = members[(h % members.len() as u64) as usize];
                self.state.profiles[prof as usize]
                    .members
                    .get(m as usize)
                    .cloned()
                    .flatten()
            }
        })
    }

    pub(super) fn run_action(
        &mut self,
        action: u32,
        data: &[i128],
        pc: &mut PacketCtx,
    ) -> Result<(), ExecError> {
        let p = &self.program;
        let body = &p.actions[action as usize].body;
        let mut pc_i = 0usize;
        while pc_i < body.len() {
            match &body[pc_i] {
                Prim::Jump(t) => {
                    pc_i = *t as usize;
                    continue;
                }
                Prim::JumpIfZero(c, t) => {
                    if eval(p, &self.phv, &self.state, Scope { data, ahead: &[] }, c)? == 0 {
                        pc_i = *t as usize;
                        continue;
                    }
                }
                Prim::Assert(e) => {
                    if eval(p, &self.phv, &self.state, Scope { data, ahead: &[] }, e)? == 0 {
                        return Err(ExecError::Assert {
                            action: p.actions[action as usize].name.clone(),
                        });
                    }
                }
                Prim::Extern(name, args) => {
                    pc.args.clear();
                    for a in args {
                        let v = eval(p, &self.phv, &self.state, Scope { data, ahead: &[] }, a)?;
                        pc.args.push(v);
                    }
                    match self.externs.as_mut() {
                        Some(x) => x
                            .call(name, &pc.args)
                            .map_err(|e| ExecError::Extern(name.clone(), e))?,
                        None => {
                            return Err(ExecError::Extern(
                                name.clone(),
                                "no target registers it here".into(),
                            ));
                        }
                    }
                }
                prim => run_prim(p, &mut self.phv, &mut self.state, pc, data, prim)?,
            }
            if pc.exit {
                break;
            }
            pc_i += 1;
        }
        Ok(())
    }
}
