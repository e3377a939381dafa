//! Actions and the primitives in them: bmv2's core primitives and
//! simple_switch's (v1model's) own, each checked for its parameter count
//! and kinds at load. A primitive the engine does not know is refused with
//! its path; so is a jump backwards, which would let an action loop.

use super::expr::{self, HeaderRef, Scope};
use super::json::At;
use super::{Ctx, Expr, LValue, LoadError, limits};

/// A header stack or a header union stack.
#[derive(Clone, Copy, Debug)]
pub enum StackRef {
    /// A header stack.
    Headers(u32),
    /// A header union stack.
    Unions(u32),
}

/// A primitive call, resolved.
#[derive(Clone, Debug)]
pub enum Prim {
    /// `assign`, `modify_field`; also `add_to_field` and the three-operand
    /// arithmetic primitives, as the assignment of an expression.
    Assign(LValue, Expr),
    /// `assign_VL`: copy a header's variable-length field.
    AssignVl(HeaderRef, HeaderRef),
    /// `assign_header`, `copy_header`.
    AssignHeader(HeaderRef, HeaderRef),
    /// `assign_union`.
    AssignUnion(u32, u32),
    /// `assign_header_stack`, `assign_union_stack`.
    AssignStack(StackRef, StackRef),
    /// `drop`: egress_spec to the drop port, mcast_grp to 0.
    Drop,
    /// `mark_to_drop(standard_metadata)`.
    MarkToDrop,
    /// `add_header`.
    AddHeader(HeaderRef),
    /// `add_header_fast`: only marks valid.
    MarkValid(HeaderRef),
    /// `remove_header`.
    RemoveHeader(HeaderRef),
    /// `push(stack, n)`.
    Push(StackRef, Expr),
    /// `pop(stack, n)`.
    Pop(StackRef, Expr),
    /// `count(counter, index)`.
    Count(u32, Expr),
    /// `execute_meter(meter, index, dst)`.
    ExecuteMeter(u32, Expr, LValue),
    /// `register_read(dst, register, index)`.
    RegisterRead(LValue, u32, Expr),
    /// `register_write(register, index, value)`.
    RegisterWrite(u32, Expr, Expr),
    /// `modify_field_with_hash_based_offset(dst, base, calc, size)`.
    HashOffset(LValue, Expr, u32, Expr),
    /// `modify_field_rng_uniform(dst, lo, hi)`.
    Random(LValue, Expr, Expr),
    /// `clone_ingress_pkt_to_egress(session, field_list)`.
    CloneI2E(Expr, Expr),
    /// `clone_egress_pkt_to_egress(session, field_list)`.
    CloneE2E(Expr, Expr),
    /// `resubmit(field_list)`.
    Resubmit(Expr),
    /// `recirculate(field_list)`.
    Recirculate(Expr),
    /// `generate_digest(receiver, learn_list)`.
    Digest(Expr),
    /// `truncate(bytes)`.
    Truncate(Expr),
    /// `exit`.
    Exit,
    /// `assert`, `assume`: stop the packet, logging, when false.
    Assert(Expr),
    /// `log_msg(format, args)`.
    Log(String, Vec<Expr>),
    /// `_jump(target)`.
    Jump(u32),
    /// `_jump_if_zero(cond, target)`.
    JumpIfZero(Expr, u32),
    /// `no_op`.
    NoOp,
    /// An ernic extern method (`_ernic_<type>_<method>`, or an extern
    /// function the target registers), with its evaluated arguments.
    Extern(String, Vec<Expr>),
}

/// An action.
#[derive(Clone, Debug)]
pub struct Action {
    /// Its name.
    pub name: String,
    /// Its id in the file.
    pub id: u64,
    /// Its parameters: `(name, bits)`.
    pub params: Vec<(String, u32)>,
    /// Its body.
    pub body: Vec<Prim>,
}

pub(crate) fn load_actions(at: &At<'_>, cx: &mut Ctx) -> Result<(), LoadError> {
    // Names first: primitives never name actions, so one pass suffices.
    let actions = at.each("actions", |i, a| {
        if i >= limits::MAX_OBJECTS {
            return Err(a.err("too many actions"));
        }
        let name = a.get("name", |n| n.str().map(str::to_owned))?;
        let id = a.get("id", |n| n.u64())?;
        let params = a.each("runtime_data", |_, r| {
            let n = r.get("name", |n| n.str().map(str::to_owned))?;
            let b = r.get("bitwidth", |b| {
                b.bounded(limits::MAX_FIELD_BITS as u64, "bitwidth")
            })? as u32;
            Ok((n, b))
        })?;
        let nparams = params.len() as u32;
        let body = a.each("primitives", |_, p| load_one(&p, cx, nparams))?;
        let len = body.len() as u32;
        for (pc, prim) in body.iter().enumerate() {
            if let Prim::Jump(t) | Prim::JumpIfZero(_, t) = prim {
                if *t <= pc as u32 || *t > len {
                    return Err(a.err(format!(
                        "primitive {pc} jumps to {t}: only forward jumps within the action are run"
                    )));
                }
            }
        }
        Ok(super::Action {
            name,
            id,
            params,
            body,
        })
    })?;
    for (i, a) in actions.iter().enumerate() {
        cx.names.action_ids.insert(a.id, i as u32);
        cx.names.actions.entry(a.name.clone()).or_insert(i as u32);
    }
    cx.actions = actions;
    Ok(())
}

/// Loads one primitive call (`{"op":…, "parameters":[…]}`).
pub(crate) fn load_one(p: &At<'_>, cx: &Ctx, nparams: u32) -> Result<Prim, LoadError> {
    let op = p.get("op", |o| o.str().map(str::to_owned))?;
    let scope = Scope::Action(nparams);
    p.get("parameters", |ps| {
        let n = if ps.v.is_null() { 0 } else { ps.len()? };
        let want = |k: usize| -> Result<(), LoadError> {
            if n != k {
                Err(ps.err(format!("{op} takes {k} parameters, not {n}")))
            } else {
                Ok(())
            }
        };
        let e = |i: usize| ps.at(i, |x| expr::load(&x, cx, &scope));
        let lv = |i: usize| ps.at(i, |x| expr::load_lvalue(&x, cx, &scope));
        let hdr = |i: usize| ps.at(i, |x| expr::header_ref(&x, cx, &scope));
        let named = |i: usize, kind: &str| -> Result<String, LoadError> {
            ps.at(i, |x| {
                let ty = x.get("type", |t| t.str().map(str::to_owned))?;
                if ty != kind {
                    return Err(x.err(format!("expected a {kind}, found {ty:?}")));
                }
                x.get("value", |v| v.str().map(str::to_owned))
            })
        };
        let stack_ref = |i: usize| -> Result<StackRef, LoadError> {
            ps.at(i, |x| {
                let ty = x.get("type", |t| t.str().map(str::to_owned))?;
                x.get("value", |v| match ty.as_str() {
                    "header_stack" => Ok(StackRef::Headers(expr::stack(&v, cx, v.str()?)?)),
                    "header_union_stack" => {
                        Ok(StackRef::Unions(expr::union_stack(&v, cx, v.str()?)?))
                    }
                    other => Err(x.err(format!("expected a header stack, found {other:?}"))),
                })
            })
        };
        let target = |i: usize| -> Result<u32, LoadError> {
            ps.at(i, |x| {
                let v = x.get("value", |v| v.hexstr())?;
                u32::try_from(v).map_err(|_| x.err("a jump target out of range"))
            })
        };
        let counter = |i: usize| -> Result<u32, LoadError> {
            let name = named(i, "counter_array")?;
            cx.names
                .counters
                .get(&name)
                .copied()
                .ok_or_else(|| ps.err(format!("no counter array {name:?}")))
        };
        let meter = |i: usize| -> Result<u32, LoadError> {
            let name = named(i, "meter_array")?;
            cx.names
                .meters
                .get(&name)
                .copied()
                .ok_or_else(|| ps.err(format!("no meter array {name:?}")))
        };
        let register = |i: usize| -> Result<u32, LoadError> {
            let name = named(i, "register_array")?;
            expr::register(&ps, cx, &name)
        };
        let compute = |op: expr::BinOp| -> Result<Prim, LoadError> {
            want(3)?;
            Ok(Prim::Assign(
                lv(0)?,
                Expr::Bin(op, Box::new(e(1)?), Box::new(e(2)?)),
            ))
        };
        Ok(match op.as_str() {
            "assign" | "modify_field" => {
                // P4_14 modify_field may carry a third mask operand.
                if n == 3 {
                    let dst = lv(0)?;
                    let cur = lvalue_expr(&dst);
                    let mask = e(2)?;
                    let keep = Expr::Bin(
                        expr::BinOp::BitAnd,
                        Box::new(cur),
                        Box::new(Expr::Un(expr::UnOp::BitNot, Box::new(mask.clone()))),
                    );
                    let set = Expr::Bin(expr::BinOp::BitAnd, Box::new(e(1)?), Box::new(mask));
                    return Ok(Prim::Assign(
                        dst,
                        Expr::Bin(expr::BinOp::BitOr, Box::new(keep), Box::new(set)),
                    ));
                }
                want(2)?;
                Prim::Assign(lv(0)?, e(1)?)
            }
            "assign_VL" => {
                want(2)?;
                Prim::AssignVl(vl_header(&ps, cx, 0)?, vl_header(&ps, cx, 1)?)
            }
            "assign_header" | "copy_header" => {
                want(2)?;
                Prim::AssignHeader(hdr(0)?, hdr(1)?)
            }
            "assign_union" => {
                want(2)?;
                let u = |i: usize| -> Result<u32, LoadError> {
                    let name = named(i, "header_union")?;
                    cx.names
                        .unions
                        .get(&name)
                        .copied()
                        .ok_or_else(|| ps.err(format!("no header union {name:?}")))
                };
                Prim::AssignUnion(u(0)?, u(1)?)
            }
            "assign_header_stack" | "assign_union_stack" => {
                want(2)?;
                Prim::AssignStack(stack_ref(0)?, stack_ref(1)?)
            }
            "add_to_field" | "subtract_from_field" => {
                want(2)?;
                let dst = lv(0)?;
                let bop = if op == "add_to_field" {
                    expr::BinOp::Add
                } else {
                    expr::BinOp::Sub
                };
                Prim::Assign(
                    dst.clone(),
                    Expr::Bin(bop, Box::new(lvalue_expr(&dst)), Box::new(e(1)?)),
                )
            }
            "add" => compute(expr::BinOp::Add)?,
            "subtract" => compute(expr::BinOp::Sub)?,
            "bit_xor" => compute(expr::BinOp::BitXor)?,
            "bit_or" => compute(expr::BinOp::BitOr)?,
            "bit_and" => compute(expr::BinOp::BitAnd)?,
            "shift_left" => compute(expr::BinOp::Shl)?,
            "shift_right" => compute(expr::BinOp::Shr)?,
            "drop" => {
                want(0)?;
                Prim::Drop
            }
            "mark_to_drop" => {
                if n > 1 {
                    want(1)?;
                }
                Prim::MarkToDrop
            }
            "add_header" => {
                want(1)?;
                Prim::AddHeader(hdr(0)?)
            }
            "add_header_fast" => {
                want(1)?;
                Prim::MarkValid(hdr(0)?)
            }
            "remove_header" => {
                want(1)?;
                Prim::RemoveHeader(hdr(0)?)
            }
            "push" | "pop" => {
                want(2)?;
                let s = stack_ref(0)?;
                let count = e(1)?;
                if op == "push" {
                    Prim::Push(s, count)
                } else {
                    Prim::Pop(s, count)
                }
            }
            "count" => {
                want(2)?;
                Prim::Count(counter(0)?, e(1)?)
            }
            "execute_meter" => {
                want(3)?;
                Prim::ExecuteMeter(meter(0)?, e(1)?, lv(2)?)
            }
            "register_read" => {
                want(3)?;
                Prim::RegisterRead(lv(0)?, register(1)?, e(2)?)
            }
            "register_write" => {
                want(3)?;
                Prim::RegisterWrite(register(0)?, e(1)?, e(2)?)
            }
            "modify_field_with_hash_based_offset" => {
                want(4)?;
                let calc_name = named(2, "calculation")?;
                let calc = cx
                    .names
                    .calculations
                    .get(&calc_name)
                    .copied()
                    .ok_or_else(|| ps.err(format!("no calculation {calc_name:?}")))?;
                Prim::HashOffset(lv(0)?, e(1)?, calc, e(3)?)
            }
            "modify_field_rng_uniform" => {
                want(3)?;
                Prim::Random(lv(0)?, e(1)?, e(2)?)
            }
            "clone_ingress_pkt_to_egress" | "clone_egress_pkt_to_egress" => {
                if n == 1 {
                    let s = e(0)?;
                    return Ok(if op.starts_with("clone_i") {
                        Prim::CloneI2E(s, Expr::Const(0))
                    } else {
                        Prim::CloneE2E(s, Expr::Const(0))
                    });
                }
                want(2)?;
                if op.starts_with("clone_i") {
                    Prim::CloneI2E(e(0)?, e(1)?)
                } else {
                    Prim::CloneE2E(e(0)?, e(1)?)
                }
            }
            "resubmit" | "recirculate" => {
                let fl = if n == 0 {
                    Expr::Const(0)
                } else {
                    want(1).and_then(|_| e(0))?
                };
                if op == "resubmit" {
                    Prim::Resubmit(fl)
                } else {
                    Prim::Recirculate(fl)
                }
            }
            "generate_digest" => {
                want(2)?;
                Prim::Digest(e(1)?)
            }
            "truncate" => {
                want(1)?;
                Prim::Truncate(e(0)?)
            }
            "exit" => {
                want(0)?;
                Prim::Exit
            }
            "assert" | "assume" => {
                want(1)?;
                Prim::Assert(e(0)?)
            }
            "log_msg" => {
                want(2)?;
                let fmt = ps.at(0, |x| x.get("value", |v| v.str().map(str::to_owned)))?;
                let args = ps.at(1, |x| {
                    x.get("value", |v| v.items(|_, a| expr::load(&a, cx, &scope)))
                })?;
                Prim::Log(fmt, args)
            }
            "_jump" => {
                want(1)?;
                Prim::Jump(target(0)?)
            }
            "_jump_if_zero" => {
                want(2)?;
                Prim::JumpIfZero(e(0)?, target(1)?)
            }
            "no_op" => Prim::NoOp,
            name if name.starts_with("ernic_") || name.starts_with("_ernic_") => {
                let args = (0..n).map(e).collect::<Result<Vec<_>, _>>()?;
                Prim::Extern(name.trim_start_matches('_').to_owned(), args)
            }
            other => return Err(p.unsupported(format!("primitive {other:?}"))),
        })
    })
}

/// The expression reading what an lvalue names.
pub(crate) fn lvalue_expr(l: &LValue) -> Expr {
    match l {
        LValue::Field(f) => Expr::Field(*f),
        LValue::DynField { header, field } => Expr::DynField {
            header: header.clone(),
            field: *field,
        },
        LValue::Register { array, index } => Expr::Register {
            array: *array,
            index: index.clone(),
        },
    }
}

/// `assign_VL`'s operands are the varbit fields themselves: their headers.
fn vl_header(ps: &At<'_>, cx: &Ctx, i: usize) -> Result<HeaderRef, LoadError> {
    ps.at(i, |x| match expr::load(&x, cx, &Scope::Control)? {
        Expr::Field(f) if cx.fields[f as usize].varbit => {
            Ok(HeaderRef::Fixed(cx.fields[f as usize].header))
        }
        _ => Err(x.err("assign_VL copies variable-length fields")),
    })
}
