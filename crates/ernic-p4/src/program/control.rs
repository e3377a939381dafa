//! The ingress and egress pipelines: tables (keys, actions, next nodes,
//! default and const entries, direct counters and meters, action profiles
//! and selectors), conditionals and action calls, with the control graph
//! checked to be acyclic so a packet visits each node at most once.

use std::collections::HashMap;

use super::expr::{self, Scope};
use super::json::At;
use super::{Ctx, Expr, FieldOrValid, HashAlgo, LoadError, limits};

/// A node of a control graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// A table (index into `Program::tables`).
    Table(u32),
    /// A conditional (index into `Program::conditionals`).
    Cond(u32),
    /// An action call (index into `Program::action_calls`).
    Call(u32),
}

/// A match kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    /// Exact.
    Exact,
    /// Longest prefix.
    Lpm,
    /// Value and mask.
    Ternary,
    /// Inclusive range.
    Range,
    /// Exact or wildcard.
    Optional,
    /// P4_14's header validity.
    Valid,
}

impl MatchKind {
    fn parse(at: &At<'_>) -> Result<MatchKind, LoadError> {
        Ok(match at.str()? {
            "exact" => MatchKind::Exact,
            "lpm" => MatchKind::Lpm,
            "ternary" => MatchKind::Ternary,
            "range" => MatchKind::Range,
            "optional" => MatchKind::Optional,
            "valid" => MatchKind::Valid,
            other => return Err(at.unsupported(format!("match kind {other:?}"))),
        })
    }

    /// bmv2's name for it.
    pub fn name(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
            MatchKind::Valid => "valid",
        }
    }
}

/// One element of a table key.
#[derive(Clone, Debug)]
pub struct KeyElement {
    /// How it matches.
    pub kind: MatchKind,
    /// What it reads: a field, or a header's validity (1 bit).
    pub value: Expr,
    /// Its width in bits.
    pub bits: u32,
    /// Its static mask, as padded bytes.
    pub mask: Option<Vec<u8>>,
    /// Its name, for messages and dumps.
    pub name: String,
}

impl KeyElement {
    /// Its width in bytes, as it sits in the key.
    pub fn nbytes(&self) -> usize {
        (self.bits as usize).div_ceil(8)
    }
}

/// How a table finds its action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableImpl {
    /// Entries carry the action.
    Simple,
    /// Entries name action-profile members (or groups).
    Indirect(u32),
    /// Entries name members or groups, a selector picks a group's member.
    IndirectWs(u32),
}

/// Where control goes after a table.
#[derive(Clone, Debug, Default)]
pub struct Next {
    /// By the action run (position in `Table::actions`).
    pub by_action: Vec<Option<Node>>,
    /// `__HIT__`, when the program uses `.hit`.
    pub hit: Option<Option<Node>>,
    /// `__MISS__`.
    pub miss: Option<Option<Node>>,
}

/// A table's default entry from the file.
#[derive(Clone, Debug)]
pub struct DefaultEntry {
    /// The action.
    pub action: u32,
    /// Its data.
    pub data: Vec<i128>,
    /// The control plane may not change the action.
    pub action_const: bool,
    /// The control plane may not change the action data.
    pub entry_const: bool,
}

/// One field of a const entry's key.
#[derive(Clone, Debug)]
pub enum ConstMatch {
    /// Exact value.
    Exact(Vec<u8>),
    /// Prefix.
    Lpm(Vec<u8>, u32),
    /// Value and mask.
    Ternary(Vec<u8>, Vec<u8>),
    /// Inclusive range.
    Range(Vec<u8>, Vec<u8>),
    /// Validity.
    Valid(bool),
}

/// A const entry (`entries` in the file).
#[derive(Clone, Debug)]
pub struct ConstEntry {
    /// The key.
    pub key: Vec<ConstMatch>,
    /// The action.
    pub action: u32,
    /// Its data.
    pub data: Vec<i128>,
    /// The priority (lower wins, as in bmv2).
    pub priority: i32,
}

/// A table.
#[derive(Clone, Debug)]
pub struct Table {
    /// Its name.
    pub name: String,
    /// Its table-level match type.
    pub match_type: MatchKind,
    /// Where its actions come from.
    pub imp: TableImpl,
    /// Entries it may hold.
    pub max_size: u32,
    /// Whether entries carry direct counters.
    pub with_counters: bool,
    /// The direct meter array, if any.
    pub direct_meter: Option<u32>,
    /// The key.
    pub key: Vec<KeyElement>,
    /// The key's width in bytes.
    pub key_bytes: usize,
    /// The actions it may run.
    pub actions: Vec<u32>,
    /// Next nodes.
    pub next: Next,
    /// Where control goes after the table when `next` names nothing for
    /// the action (`base_default_next`).
    pub base_default_next: Option<Node>,
    /// The default entry, if the file sets one.
    pub default: Option<DefaultEntry>,
    /// Const entries (the table is then immutable).
    pub entries: Vec<ConstEntry>,
    /// Whether the file gave `entries` (and so the table is immutable).
    pub immutable: bool,
}

/// A conditional.
#[derive(Clone, Debug)]
pub struct Conditional {
    /// Its name.
    pub name: String,
    /// The condition.
    pub expr: Expr,
    /// Next when true.
    pub t: Option<Node>,
    /// Next when false.
    pub f: Option<Node>,
}

/// An action profile's dynamic selector.
#[derive(Clone, Debug)]
pub struct Selector {
    /// The hash.
    pub algo: HashAlgo,
    /// The fields hashed, as a calculation's inputs.
    pub inputs: Vec<super::CalcInput>,
}

/// An action profile.
#[derive(Clone, Debug)]
pub struct ActionProfile {
    /// Its name.
    pub name: String,
    /// Members it may hold.
    pub max_size: u32,
    /// Its selector, for `indirect_ws` tables.
    pub selector: Option<Selector>,
}

/// A pipeline.
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    /// Its name.
    pub name: String,
    /// Its first node.
    pub init: Option<Node>,
}

pub(crate) struct Pipelines {
    pub(crate) ingress: Pipeline,
    pub(crate) egress: Pipeline,
    pub(crate) tables: Vec<Table>,
    pub(crate) conditionals: Vec<Conditional>,
    pub(crate) action_calls: Vec<(u32, Option<Node>)>,
    pub(crate) profiles: Vec<ActionProfile>,
}

pub(crate) fn load(at: &At<'_>, cx: &Ctx) -> Result<Pipelines, LoadError> {
    let mut out = Pipelines {
        ingress: Pipeline::default(),
        egress: Pipeline::default(),
        tables: Vec::new(),
        conditionals: Vec::new(),
        action_calls: Vec::new(),
        profiles: Vec::new(),
    };
    let mut seen = Vec::new();
    at.each("pipelines", |_, p| {
        let name = p.get("name", |n| n.str().map(str::to_owned))?;
        let pipe = load_pipeline(&p, cx, &mut out)?;
        seen.push(name.clone());
        match name.as_str() {
            "ingress" => out.ingress = Pipeline { name, init: pipe },
            "egress" => out.egress = Pipeline { name, init: pipe },
            other => {
                return Err(p.unsupported(format!(
                    "pipeline {other:?} (v1model has ingress and egress)"
                )));
            }
        }
        Ok(())
    })?;
    super::graph::check_acyclic(at, &out)?;
    Ok(out)
}

fn load_pipeline(p: &At<'_>, cx: &Ctx, out: &mut Pipelines) -> Result<Option<Node>, LoadError> {
    let t0 = out.tables.len() as u32;
    let c0 = out.conditionals.len() as u32;
    let a0 = out.action_calls.len() as u32;
    let mut nodes: HashMap<String, Node> = HashMap::new();
    let p0 = out.profiles.len() as u32;
    let mut profiles = HashMap::new();
    let new_profiles = p.each("action_profiles", |i, ap| {
        let name = ap.get("name", |n| n.str().map(str::to_owned))?;
        let max_size = ap.get("max_size", |m| {
            if m.v.is_null() {
                Ok(1024)
            } else {
                m.bounded(limits::MAX_TABLE_SIZE, "max_size")
            }
        })? as u32;
        let selector = if ap.has("selector") {
            Some(ap.get("selector", |s| load_selector(&s, cx))?)
        } else {
            None
        };
        profiles.insert(name.clone(), p0 + i as u32);
        Ok(ActionProfile {
            name,
            max_size,
            selector,
        })
    })?;
    out.profiles.extend(new_profiles);
    let count = |k: &'static str| -> Result<usize, LoadError> {
        p.get(k, |a| if a.v.is_null() { Ok(0) } else { a.len() })
    };
    let (nt, nc, na) = (
        count("tables")?,
        count("conditionals")?,
        count("action_calls")?,
    );
    if nt + nc + na > limits::MAX_OBJECTS {
        return Err(p.err("too many tables and conditionals"));
    }
    let mut name_node =
        |a: &At<'_>, k: &'static str, f: &dyn Fn(u32) -> Node| -> Result<(), LoadError> {
            a.each(k, |i, x| {
                let n = x.get("name", |n| n.str().map(str::to_owned))?;
                if nodes.insert(n.clone(), f(i as u32)).is_some() {
                    return Err(x.err(format!("two nodes named {n:?}")));
                }
                Ok(())
            })?;
            Ok(())
        };
    name_node(p, "tables", &|i| Node::Table(t0 + i))?;
    name_node(p, "conditionals", &|i| Node::Cond(c0 + i))?;
    name_node(p, "action_calls", &|i| Node::Call(a0 + i))?;
    let node = |a: &At<'_>| -> Result<Option<Node>, LoadError> {
        match a.opt_str()? {
            None => Ok(None),
            Some(n) => nodes
                .get(n)
                .copied()
                .map(Some)
                .ok_or_else(|| a.err(format!("no table or conditional {n:?}"))),
        }
    };
    // Older files (p4c-bm) name a table's profile inline: `act_prof_name`,
    // with the selector on the table.
    p.each("tables", |_, t| {
        if !t.has("act_prof_name") {
            return Ok(());
        }
        let name = t.get("act_prof_name", |n| n.str().map(str::to_owned))?;
        if profiles.contains_key(&name) {
            return Ok(());
        }
        let selector = if t.has("selector") {
            Some(t.get("selector", |s| load_selector(&s, cx))?)
        } else {
            None
        };
        let max_size = t.get("max_size", |m| {
            if m.v.is_null() {
                Ok(1024)
            } else {
                m.bounded(limits::MAX_TABLE_SIZE, "max_size")
            }
        })? as u32;
        profiles.insert(name.clone(), out.profiles.len() as u32);
        out.profiles.push(ActionProfile {
            name,
            max_size,
            selector,
        });
        Ok(())
    })?;
    let tables = p.each("tables", |_, t| load_table(&t, cx, &node, &profiles))?;
    out.tables.extend(tables);
    let conds = p.each("conditionals", |_, c| {
        let name = c.get("name", |n| n.str().map(str::to_owned))?;
        let e = c.get("expression", |e| expr::load(&e, cx, &Scope::Control))?;
        let t = c.get("true_next", |a| node(&a))?;
        let f = c.get("false_next", |a| node(&a))?;
        Ok(Conditional {
            name,
            expr: e,
            t,
            f,
        })
    })?;
    out.conditionals.extend(conds);
    let calls = p.each("action_calls", |_, c| {
        let action = c.get("action_id", |a| action_by_id(&a, cx))?;
        if !cx.actions[action as usize].params.is_empty() {
            return Err(c.err("an action call to an action with parameters"));
        }
        let next = c.get("next_node", |a| node(&a))?;
        Ok((action, next))
    })?;
    out.action_calls.extend(calls);
    p.get("init_table", |a| node(&a))
}

fn load_selector(s: &At<'_>, cx: &Ctx) -> Result<Selector, LoadError> {
    let algo = s.get("algo", |a| HashAlgo::parse(&a))?;
    let inputs = s.each("input", |_, x| {
        x.get("value", |v| match cx.field_ref(&v)? {
            FieldOrValid::Field(f) => Ok(super::CalcInput::Field(f)),
            _ => Err(v.unsupported("a validity bit as a selector input")),
        })
    })?;
    Ok(Selector { algo, inputs })
}

fn action_by_id(a: &At<'_>, cx: &Ctx) -> Result<u32, LoadError> {
    let id = a.u64()?;
    cx.names
        .action_ids
        .get(&id)
        .copied()
        .ok_or_else(|| a.err(format!("no action with id {id}")))
}

fn load_table(
    t: &At<'_>,
    cx: &Ctx,
    node: &dyn Fn(&At<'_>) -> Result<Option<Node>, LoadError>,
    profiles: &HashMap<String, u32>,
) -> Result<Table, LoadError> {
    let name = t.get("name", |n| n.str().map(str::to_owned))?;
    let match_type = t.get("match_type", |m| MatchKind::parse(&m))?;
    let imp = t.get("type", |ty| {
        let kind = if ty.v.is_null() { "simple" } else { ty.str()? };
        let profile = || -> Result<u32, LoadError> {
            let key = if t.has("act_prof_name") {
                "act_prof_name"
            } else {
                "action_profile"
            };
            t.get(key, |a| {
                let n = a.str()?;
                profiles
                    .get(n)
                    .copied()
                    .ok_or_else(|| a.err(format!("no action profile {n:?}")))
            })
        };
        match kind {
            "simple" => Ok(TableImpl::Simple),
            "indirect" => Ok(TableImpl::Indirect(profile()?)),
            "indirect_ws" => Ok(TableImpl::IndirectWs(profile()?)),
            other => Err(ty.unsupported(format!("table type {other:?}"))),
        }
    })?;
    let max_size = t.get("max_size", |m| {
        if m.v.is_null() {
            Ok(1024)
        } else {
            m.bounded(limits::MAX_TABLE_SIZE, "max_size")
        }
    })? as u32;
    let with_counters = t.get("with_counters", |w| {
        if w.v.is_null() { Ok(false) } else { w.bool() }
    })?;
    let direct_meter = t.get("direct_meters", |d| match d.opt_str()? {
        None => Ok(None),
        Some(n) => cx
            .names
            .meters
            .get(n)
            .copied()
            .map(Some)
            .ok_or_else(|| d.err(format!("no meter array {n:?}"))),
    })?;
    let key = t.each("key", |_, k| {
        let kind = k.get("match_type", |m| MatchKind::parse(&m))?;
        let (value, bits, default_name) = k.get("target", |tg| {
            if kind == MatchKind::Valid {
                let h = cx.header(&tg, tg.str()?)?;
                return Ok((
                    Expr::Valid(expr::HeaderRef::Fixed(h)),
                    1,
                    format!("{}.$valid$", tg.str()?),
                ));
            }
            let label = format!(
                "{}.{}",
                tg.at(0, |x| x.str().map(str::to_owned))?,
                tg.at(1, |x| x.str().map(str::to_owned))?
            );
            match cx.field_ref(&tg)? {
                FieldOrValid::Field(f) => {
                    let fd = &cx.fields[f as usize];
                    if fd.varbit {
                        return Err(tg.unsupported("matching on a variable-length field"));
                    }
                    Ok((Expr::Field(f), fd.bits, label))
                }
                FieldOrValid::Valid(h) => Ok((Expr::Valid(expr::HeaderRef::Fixed(h)), 1, label)),
                FieldOrValid::UnionValid(u) => {
                    Ok((Expr::UnionValid(expr::UnionRef::Fixed(u)), 1, label))
                }
            }
        })?;
        let nbytes = (bits as usize).div_ceil(8);
        let mask = k.get("mask", |m| {
            if m.v.is_null() {
                Ok(None)
            } else {
                m.hex_bytes(nbytes).map(Some)
            }
        })?;
        let name = k
            .get("name", |n| n.opt_str().map(|s| s.map(str::to_owned)))?
            .unwrap_or(default_name);
        Ok(KeyElement {
            kind,
            value,
            bits,
            mask,
            name,
        })
    })?;
    if key.iter().filter(|k| k.kind == MatchKind::Lpm).count() > 1 {
        return Err(t.err("more than one lpm field in a key"));
    }
    let key_bytes = key.iter().map(KeyElement::nbytes).sum();
    // Actions by name ("actions"), or by id ("action_ids") where names
    // are ambiguous.
    let actions = if t.has("action_ids") {
        t.each("action_ids", |_, a| action_by_id(&a, cx))?
    } else {
        t.each("actions", |_, a| {
            let n = a.str()?;
            cx.names
                .actions
                .get(n)
                .copied()
                .ok_or_else(|| a.err(format!("no action {n:?}")))
        })?
    };
    let mut next = Next {
        by_action: vec![None; actions.len()],
        hit: None,
        miss: None,
    };
    t.get("next_tables", |nt| {
        let Some(map) = nt.v.as_object() else {
            return if nt.v.is_null() {
                Ok(())
            } else {
                Err(nt.err("expected an object"))
            };
        };
        for k in map.keys() {
            let target = nt.get(k.as_str(), |x| node(&x))?;
            match k.as_str() {
                "__HIT__" => next.hit = Some(target),
                "__MISS__" => next.miss = Some(target),
                a => {
                    let pos = actions
                        .iter()
                        .position(|&id| cx.actions[id as usize].name == a);
                    match pos {
                        Some(p) => next.by_action[p] = target,
                        None => {
                            return Err(nt.err(format!(
                                "next_tables names {a:?}, not one of the table's actions"
                            )));
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    let base_default_next = t.get("base_default_next", |a| node(&a))?;
    // Without next_tables for an action, control goes to base_default_next.
    t.get("next_tables", |nt| {
        for (p, &id) in actions.iter().enumerate() {
            let named =
                nt.v.as_object()
                    .is_some_and(|m| m.contains_key(&cx.actions[id as usize].name));
            if !named {
                next.by_action[p] = base_default_next;
            }
        }
    });
    let data = |a: &At<'_>, action: u32| -> Result<Vec<i128>, LoadError> {
        let d = a.items(|_, x| x.hexstr())?;
        let want = cx.actions[action as usize].params.len();
        if d.len() != want {
            return Err(a.err(format!(
                "action {:?} takes {want} parameters, not {}",
                cx.actions[action as usize].name,
                d.len()
            )));
        }
        Ok(d)
    };
    let default = if t.has("default_entry") {
        Some(t.get("default_entry", |d| {
            let action = d.get("action_id", |a| action_by_id(&a, cx))?;
            let action_const = d.get("action_const", |c| {
                if c.v.is_null() { Ok(false) } else { c.bool() }
            })?;
            let has_data = d.has("action_data");
            let data = if has_data {
                d.get("action_data", |a| data(&a, action))?
            } else {
                vec![0; cx.actions[action as usize].params.len()]
            };
            let entry_const = has_data
                && d.get("action_entry_const", |c| {
                    if c.v.is_null() { Ok(false) } else { c.bool() }
                })?;
            Ok(DefaultEntry {
                action,
                data,
                action_const,
                entry_const,
            })
        })?)
    } else {
        None
    };
    let immutable = t.has("entries");
    let entries = t.each("entries", |_, e| {
        let mk = e.get("match_key", |m| {
            if m.len()? != key.len() {
                return Err(m.err(format!(
                    "{} key fields for a key of {}",
                    m.len()?,
                    key.len()
                )));
            }
            m.items(|i, f| load_const_match(&f, &key[i]))
        })?;
        let (action, d) = e.get("action_entry", |a| {
            let action = a.get("action_id", |x| action_by_id(&x, cx))?;
            let d = a.get("action_data", |x| data(&x, action))?;
            Ok((action, d))
        })?;
        let priority = e.get("priority", |p| if p.v.is_null() { Ok(0) } else { p.i64() })?;
        let priority = i32::try_from(priority).map_err(|_| e.err("priority out of range"))?;
        Ok(ConstEntry {
            key: mk,
            action,
            data: d,
            priority,
        })
    })?;
    if entries.len() as u64 > u64::from(max_size).max(limits::MAX_TABLE_SIZE) {
        return Err(t.err("more const entries than the table holds"));
    }
    Ok(Table {
        name,
        match_type,
        imp,
        max_size,
        with_counters,
        direct_meter,
        key,
        key_bytes,
        actions,
        next,
        base_default_next,
        default,
        entries,
        immutable,
    })
}

fn load_const_match(f: &At<'_>, k: &KeyElement) -> Result<ConstMatch, LoadError> {
    let kind = f.get("match_type", |m| MatchKind::parse(&m))?;
    if kind != k.kind && !(k.kind == MatchKind::Optional && kind == MatchKind::Ternary) {
        return Err(f.err(format!(
            "match type {} for a {} key field",
            kind.name(),
            k.kind.name()
        )));
    }
    let n = k.nbytes();
    Ok(match kind {
        MatchKind::Exact => ConstMatch::Exact(f.get("key", |x| x.hex_bytes(n))?),
        MatchKind::Optional => {
            ConstMatch::Ternary(f.get("key", |x| x.hex_bytes(n))?, vec![0xff; n])
        }
        MatchKind::Lpm => {
            let plen = f.get("prefix_length", |x| {
                x.bounded(u64::from(k.bits), "prefix_length")
            })? as u32;
            ConstMatch::Lpm(f.get("key", |x| x.hex_bytes(n))?, plen)
        }
        MatchKind::Ternary => ConstMatch::Ternary(
            f.get("key", |x| x.hex_bytes(n))?,
            f.get("mask", |x| x.hex_bytes(n))?,
        ),
        MatchKind::Range => ConstMatch::Range(
            f.get("start", |x| x.hex_bytes(n))?,
            f.get("end", |x| x.hex_bytes(n))?,
        ),
        MatchKind::Valid => ConstMatch::Valid(f.get("key", |x| x.bool())?),
    })
}
