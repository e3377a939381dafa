//! The parser (states, their operations and transitions), parse value sets
//! and the deparser.

use std::collections::HashMap;

use super::expr::{self, HeaderRef, Scope};
use super::json::At;
use super::primitives::{self, Prim};
use super::{Ctx, Expr, LValue, LoadError, ValueSet, limits};

/// A parser operation.
#[derive(Clone, Debug)]
pub enum ParseOp {
    /// Extract a fixed header (or the next element of a stack).
    Extract(HeaderRef),
    /// Extract into the next element of a union stack's member.
    ExtractUnionStack {
        /// The union stack.
        stack: u32,
        /// The member.
        member: u32,
    },
    /// Extract a header with a variable-length field of `len` bits.
    ExtractVl(HeaderRef, Expr),
    /// `set`: write a field.
    Set(LValue, Expr),
    /// `verify`: on false, stop with the error.
    Verify(Expr, Expr),
    /// Skip `bits` (a multiple of 8).
    Advance(Expr),
    /// A primitive called from the parser.
    Primitive(Prim),
}

/// One part of a transition key.
#[derive(Clone, Debug)]
pub enum KeyPart {
    /// A value (a field, a stack field or lookahead) and its width.
    Value(Expr, u32),
}

/// What a transition compares with.
#[derive(Clone, Debug)]
pub enum TransitionValue {
    /// Always taken.
    Default,
    /// `(key & mask) == (value & mask)`, both as padded bytes.
    Hex {
        /// The value's bytes.
        value: Vec<u8>,
        /// The mask's bytes, all ones when absent.
        mask: Vec<u8>,
    },
    /// A parse value set (with an optional mask).
    ValueSet {
        /// The set.
        set: u32,
        /// The mask's bytes, all ones when absent.
        mask: Vec<u8>,
    },
}

/// A transition.
#[derive(Clone, Debug)]
pub struct Transition {
    /// What it matches.
    pub value: TransitionValue,
    /// The next state, or `None` to accept.
    pub next: Option<u32>,
}

/// A parse state.
#[derive(Clone, Debug)]
pub struct ParseState {
    /// Its name.
    pub name: String,
    /// Its operations in order.
    pub ops: Vec<ParseOp>,
    /// Its transition key.
    pub key: Vec<KeyPart>,
    /// The key's width in bytes (each part byte-padded).
    pub key_bytes: usize,
    /// Its transitions in order.
    pub transitions: Vec<Transition>,
}

/// The parser.
#[derive(Clone, Debug, Default)]
pub struct Parser {
    /// Its states.
    pub states: Vec<ParseState>,
    /// The start state (`None`: accept at once).
    pub init: Option<u32>,
}

/// The deparser: the headers to emit, in order (invalid ones are skipped).
#[derive(Clone, Debug, Default)]
pub struct Deparser {
    /// The header instances.
    pub order: Vec<u32>,
}

pub(crate) fn load_value_sets(at: &At<'_>, cx: &mut Ctx) -> Result<(), LoadError> {
    let sets = at.each("parse_vsets", |i, s| {
        let name = s.get("name", |n| n.str().map(str::to_owned))?;
        let bits = s.get("compressed_bitwidth", |b| {
            b.bounded(limits::MAX_FIELD_BITS as u64, "compressed_bitwidth")
        })? as u32;
        Ok((i, ValueSet { name, bits }))
    })?;
    for (i, s) in sets {
        cx.names.value_sets.insert(s.name.clone(), i as u32);
        cx.value_sets.push(s);
    }
    Ok(())
}

/// Loads the first parser (v1model has one: `parser`).
pub(crate) fn load(at: &At<'_>, cx: &Ctx) -> Result<Parser, LoadError> {
    at.get("parsers", |ps| {
        if ps.v.is_null() || ps.len()? == 0 {
            return Ok(Parser::default());
        }
        if ps.len()? > 1 {
            return Err(ps.unsupported("more than one parser (v1model has one)"));
        }
        ps.at(0, |p| load_parser(&p, cx))
    })
}

fn load_parser(p: &At<'_>, cx: &Ctx) -> Result<Parser, LoadError> {
    let mut index = HashMap::new();
    p.each("parse_states", |i, s| {
        if i >= limits::MAX_OBJECTS {
            return Err(s.err("too many parse states"));
        }
        let n = s.get("name", |n| n.str().map(str::to_owned))?;
        index.insert(n, i as u32);
        Ok(())
    })?;
    let state_named = |a: &At<'_>| -> Result<Option<u32>, LoadError> {
        match a.opt_str()? {
            None => Ok(None),
            Some(n) => index
                .get(n)
                .copied()
                .map(Some)
                .ok_or_else(|| a.err(format!("no parse state {n:?}"))),
        }
    };
    let init = p.get("init_state", |a| state_named(&a))?;
    let states = p.each("parse_states", |_, s| {
        let name = s.get("name", |n| n.str().map(str::to_owned))?;
        let ops = s.each("parser_ops", |_, o| load_op(&o, cx))?;
        let key = s.each("transition_key", |_, k| {
            let e = expr::load(&k, cx, &Scope::Parser)?;
            let bits = width_of(&k, cx, &e)?;
            Ok(KeyPart::Value(e, bits))
        })?;
        let key_bytes: usize = key
            .iter()
            .map(|KeyPart::Value(_, b)| (*b as usize).div_ceil(8))
            .sum();
        let transitions = s.each("transitions", |_, t| {
            let ty = t.get("type", |x| x.opt_str().map(|s| s.map(str::to_owned)))?;
            let value_is_default = t.get("value", |v| Ok(v.v.as_str() == Some("default")))?;
            let mask = |t: &At<'_>| -> Result<Vec<u8>, LoadError> {
                t.get("mask", |m| {
                    if m.v.is_null() {
                        Ok(vec![0xff; key_bytes])
                    } else {
                        m.hex_bytes(key_bytes)
                    }
                })
            };
            let value = match ty.as_deref() {
                Some("default") => TransitionValue::Default,
                None if value_is_default => TransitionValue::Default,
                Some("hexstr") | None => TransitionValue::Hex {
                    value: t.get("value", |v| v.hex_bytes(key_bytes))?,
                    mask: mask(&t)?,
                },
                Some("parse_vset") => {
                    let set = t.get("value", |v| {
                        let n = v.str()?;
                        cx.names
                            .value_sets
                            .get(n)
                            .copied()
                            .ok_or_else(|| v.err(format!("no parse value set {n:?}")))
                    })?;
                    TransitionValue::ValueSet {
                        set,
                        mask: mask(&t)?,
                    }
                }
                Some(other) => return Err(t.unsupported(format!("transition type {other:?}"))),
            };
            let next = t.get("next_state", |a| state_named(&a))?;
            Ok(Transition { value, next })
        })?;
        Ok(ParseState {
            name,
            ops,
            key,
            key_bytes,
            transitions,
        })
    })?;
    Ok(Parser { states, init })
}

/// The width of a transition key part.
fn width_of(at: &At<'_>, cx: &Ctx, e: &Expr) -> Result<u32, LoadError> {
    match e {
        Expr::Field(f) => {
            let f = &cx.fields[*f as usize];
            if f.varbit {
                return Err(at.err("a variable-length field in a transition key"));
            }
            Ok(f.bits)
        }
        Expr::Lookahead { bits, .. } => Ok(*bits),
        Expr::Valid(_) | Expr::UnionValid(_) => Ok(1),
        Expr::DynField { header, field } => {
            let h = match header {
                HeaderRef::Fixed(h) => *h,
                HeaderRef::StackElem { stack, .. } | HeaderRef::StackLast(stack) => {
                    cx.stacks[*stack as usize].headers[0]
                }
                HeaderRef::UnionMember { union, member } => match union.as_ref() {
                    expr::UnionRef::Fixed(u) => cx.unions[*u as usize].headers[*member as usize],
                    expr::UnionRef::StackElem { stack, .. } => {
                        let u = cx.union_stacks[*stack as usize].unions[0];
                        cx.unions[u as usize].headers[*member as usize]
                    }
                },
            };
            let f = cx.headers[h as usize].first_field + field;
            Ok(cx.fields[f as usize].bits)
        }
        _ => Err(at.unsupported("a transition key that is not a field or lookahead")),
    }
}

fn load_op(o: &At<'_>, cx: &Ctx) -> Result<ParseOp, LoadError> {
    let op = o.get("op", |x| x.str().map(str::to_owned))?;
    o.get("parameters", |ps| match op.as_str() {
        "extract" | "extract_VL" => {
            let target = ps.at(0, |p| {
                let ty = p.get("type", |t| t.str().map(str::to_owned))?;
                p.get("value", |v| match ty.as_str() {
                    "regular" => Ok(Ok(HeaderRef::Fixed(cx.header(&v, v.str()?)?))),
                    "stack" => Ok(Ok(HeaderRef::StackLast(expr::stack(&v, cx, v.str()?)?))),
                    "union_stack" => {
                        let s = v.at(0, |n| expr::union_stack(&n, cx, n.str()?))?;
                        let m = v.at(1, |n| {
                            let m = n.str()?;
                            cx.union_stacks[s as usize]
                                .members
                                .iter()
                                .position(|x| x == m)
                                .map(|p| p as u32)
                                .ok_or_else(|| n.err(format!("no union member {m:?}")))
                        })?;
                        Ok(Err((s, m)))
                    }
                    other => Err(p.unsupported(format!("extract of {other:?}"))),
                })
            })?;
            let vl = if op == "extract_VL" {
                Some(ps.at(1, |e| expr::load(&e, cx, &Scope::Parser))?)
            } else {
                None
            };
            match (target, vl) {
                (Ok(h), None) => Ok(ParseOp::Extract(h)),
                (Ok(h), Some(len)) => Ok(ParseOp::ExtractVl(h, len)),
                (Err((stack, member)), None) => Ok(ParseOp::ExtractUnionStack { stack, member }),
                (Err(_), Some(_)) => Err(ps.unsupported("extract_VL into a union stack")),
            }
        }
        "set" => {
            let dst = ps.at(0, |p| expr::load_lvalue(&p, cx, &Scope::Parser))?;
            let src = ps.at(1, |p| expr::load(&p, cx, &Scope::Parser))?;
            Ok(ParseOp::Set(dst, src))
        }
        "verify" => {
            let cond = ps.at(0, |p| expr::load(&p, cx, &Scope::Parser))?;
            let err = ps.at(1, |p| expr::load(&p, cx, &Scope::Parser))?;
            Ok(ParseOp::Verify(cond, err))
        }
        "shift" => {
            let bytes = ps.at(0, |p| p.get("value", |v| v.hexstr()))?;
            Ok(ParseOp::Advance(Expr::Const(bytes.saturating_mul(8))))
        }
        "advance" => Ok(ParseOp::Advance(
            ps.at(0, |p| expr::load(&p, cx, &Scope::Parser))?,
        )),
        "primitive" => ps.at(0, |p| {
            primitives::load_one(&p, cx, 0).map(ParseOp::Primitive)
        }),
        other => Err(o.unsupported(format!("parser operation {other:?}"))),
    })
}

pub(crate) fn load_deparser(at: &At<'_>, cx: &Ctx) -> Result<Deparser, LoadError> {
    at.get("deparsers", |ds| {
        if ds.v.is_null() || ds.len()? == 0 {
            return Ok(Deparser::default());
        }
        if ds.len()? > 1 {
            return Err(ds.unsupported("more than one deparser (v1model has one)"));
        }
        ds.at(0, |d| {
            let order = d.each("order", |_, h| {
                let name = h.str()?;
                cx.header(&h, name)
            })?;
            Ok(Deparser { order })
        })
    })
}
