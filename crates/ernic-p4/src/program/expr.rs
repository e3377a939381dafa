//! Expressions, as `JSON_format.md`'s "type value objects" describe them,
//! compiled to a tree the pipeline evaluates. Values are signed 128-bit
//! integers (bmv2 computes with unbounded precision and truncates on
//! assignment; p4c inserts the masks that give P4's width rules, and 128
//! bits hold every field the engine accepts), booleans are 0 and 1.

use super::json::At;
use super::{Ctx, FieldOrValid, LoadError, limits};

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// `not` (boolean).
    Not,
    /// `~` (bitwise, unbounded precision: p4c masks the result).
    BitNot,
    /// `-` with no left operand.
    Neg,
    /// `d2b`: data to boolean.
    D2b,
    /// `b2d`: boolean to data.
    B2d,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (0 when dividing by 0)
    Div,
    /// `%` (0 when dividing by 0)
    Mod,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `and` (short-circuit)
    And,
    /// `or` (short-circuit)
    Or,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `two_comp_mod(value, width)`
    TwoCompMod,
    /// `sat_cast(value, width)`: saturating signed cast.
    SatCast,
    /// `usat_cast(value, width)`: saturating unsigned cast.
    UsatCast,
}

/// A header named statically or chosen at run time.
#[derive(Clone, Debug)]
pub enum HeaderRef {
    /// A header instance.
    Fixed(u32),
    /// `stack[index]`.
    StackElem {
        /// The stack.
        stack: u32,
        /// The index expression.
        index: Box<Expr>,
    },
    /// Member `member` of a union (fixed or from a union stack).
    UnionMember {
        /// The union.
        union: Box<UnionRef>,
        /// The member's position.
        member: u32,
    },
    /// The last valid element of a stack (`stack_field`'s header).
    StackLast(u32),
}

/// A union named statically or chosen at run time.
#[derive(Clone, Debug)]
pub enum UnionRef {
    /// A union instance.
    Fixed(u32),
    /// `union_stack[index]`.
    StackElem {
        /// The union stack.
        stack: u32,
        /// The index expression.
        index: Box<Expr>,
    },
}

/// An expression.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A constant.
    Const(i128),
    /// A field.
    Field(u32),
    /// Field number `field` of a header chosen at run time.
    DynField {
        /// The header.
        header: HeaderRef,
        /// The field's position in its header type.
        field: u32,
    },
    /// The running action's parameter.
    Local(u32),
    /// Whether a header is valid.
    Valid(HeaderRef),
    /// Whether any member of a union is valid.
    UnionValid(UnionRef),
    /// Packet bits ahead of the parser's cursor (parser only).
    Lookahead {
        /// Bit offset from the cursor.
        offset: u32,
        /// Width.
        bits: u32,
    },
    /// A register cell.
    Register {
        /// The array.
        array: u32,
        /// The index.
        index: Box<Expr>,
    },
    /// The index of a stack's last valid element.
    LastStackIndex(u32),
    /// The number of valid elements of a stack.
    SizeStack(u32),
    /// A unary operation.
    Un(UnOp, Box<Expr>),
    /// A binary operation.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `cond ? left : right`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// Something a primitive writes.
#[derive(Clone, Debug)]
pub enum LValue {
    /// A field.
    Field(u32),
    /// A field of a header chosen at run time.
    DynField {
        /// The header.
        header: HeaderRef,
        /// The field's position.
        field: u32,
    },
    /// A register cell.
    Register {
        /// The array.
        array: u32,
        /// The index.
        index: Box<Expr>,
    },
}

/// Where an expression appears, which decides what it may name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A control (conditionals, checksums): no action parameters.
    Control,
    /// An action with `n` runtime parameters.
    Action(u32),
    /// A parser state: lookahead allowed.
    Parser,
}

/// Loads a type-value object used as an rvalue.
pub(crate) fn load(at: &At<'_>, cx: &Ctx, scope: &Scope) -> Result<Expr, LoadError> {
    load_depth(at, cx, scope, 0)
}

fn load_depth(at: &At<'_>, cx: &Ctx, scope: &Scope, depth: usize) -> Result<Expr, LoadError> {
    if depth > limits::MAX_EXPR_DEPTH {
        return Err(at.err(format!(
            "expression nested deeper than {}",
            limits::MAX_EXPR_DEPTH
        )));
    }
    // A bare operator object where a type-value object is expected (as in
    // hand-written files): the expression itself.
    if at.has("op") && !at.has("type") {
        return load_op(at, cx, scope, depth + 1);
    }
    let ty = at.get("type", |t| t.str().map(str::to_owned))?;
    at.get("value", |v| match ty.as_str() {
        "hexstr" => Ok(Expr::Const(v.hexstr()?)),
        "bool" => Ok(Expr::Const(v.bool()? as i128)),
        "field" => Ok(match cx.field_ref(&v)? {
            FieldOrValid::Field(f) => Expr::Field(f),
            FieldOrValid::Valid(h) => Expr::Valid(HeaderRef::Fixed(h)),
            FieldOrValid::UnionValid(u) => Expr::UnionValid(UnionRef::Fixed(u)),
        }),
        "runtime_data" | "local" => {
            let i = v.u64()?;
            match scope {
                Scope::Action(n) if i < u64::from(*n) => Ok(Expr::Local(i as u32)),
                Scope::Action(n) => Err(v.err(format!("parameter {i} of an action with {n}"))),
                _ => Err(v.err("action data outside an action")),
            }
        }
        "lookahead" => {
            if *scope != Scope::Parser {
                return Err(v.err("lookahead outside a parser"));
            }
            let offset = v.at(0, |o| o.bounded(1 << 20, "lookahead offset"))? as u32;
            let bits = v.at(1, |o| {
                o.bounded(limits::MAX_FIELD_BITS as u64, "lookahead width")
            })? as u32;
            Ok(Expr::Lookahead { offset, bits })
        }
        "register" => {
            let name = v.at(0, |n| n.str().map(str::to_owned))?;
            let array = register(&v, cx, &name)?;
            let index = v.at(1, |i| load_depth(&i, cx, scope, depth + 1))?;
            Ok(Expr::Register {
                array,
                index: Box::new(index),
            })
        }
        "stack_field" => {
            let stack = v.at(0, |n| stack(&n, cx, n.str()?))?;
            let fname = v.at(1, |n| n.str().map(str::to_owned))?;
            let field = v.at(1, |n| stack_field_index(&n, cx, stack, &fname))?;
            Ok(Expr::DynField {
                header: HeaderRef::StackLast(stack),
                field,
            })
        }
        "union_stack_field" => {
            let us = v.at(0, |n| union_stack(&n, cx, n.str()?))?;
            let member = v.at(1, |n| {
                let m = n.str()?;
                cx.union_stacks[us as usize]
                    .members
                    .iter()
                    .position(|x| x == m)
                    .map(|p| p as u32)
                    .ok_or_else(|| n.err(format!("no union member {m:?}")))
            })?;
            let fname = v.at(2, |n| n.str().map(str::to_owned))?;
            let first_union = cx.union_stacks[us as usize].unions[0];
            let member_header = cx.unions[first_union as usize].headers[member as usize];
            let field = v.at(2, |n| header_field_index(&n, cx, member_header, &fname))?;
            Ok(Expr::DynField {
                header: HeaderRef::UnionMember {
                    union: Box::new(UnionRef::StackElem {
                        stack: us,
                        index: Box::new(Expr::Bin(
                            BinOp::Sub,
                            Box::new(Expr::SizeStack(us | UNION_STACK_BIT)),
                            Box::new(Expr::Const(1)),
                        )),
                    }),
                    member,
                },
                field,
            })
        }
        "expression" => load_op(&v, cx, scope, depth + 1),
        "header" => Err(v.err("a header where a value is expected")),
        other => Err(at.unsupported(format!("expression operand type {other:?}"))),
    })
}

/// Marks a `SizeStack` operand as a union stack (the two share the variant).
pub const UNION_STACK_BIT: u32 = 1 << 31;

fn load_op(at: &At<'_>, cx: &Ctx, scope: &Scope, depth: usize) -> Result<Expr, LoadError> {
    // p4c wraps: {"type":"expression","value":{"op":…}}; some files nest once
    // more ({"type":"expression","value":{"type":"expression","value":…}}).
    if at.has("type") && !at.has("op") {
        return load_depth(at, cx, scope, depth);
    }
    let op = at.get("op", |o| o.str().map(str::to_owned))?;
    let sub = |k: &'static str| -> Result<Box<Expr>, LoadError> {
        at.get(k, |x| load_depth(&x, cx, scope, depth + 1))
            .map(Box::new)
    };
    let bin =
        |o: BinOp| -> Result<Expr, LoadError> { Ok(Expr::Bin(o, sub("left")?, sub("right")?)) };
    match op.as_str() {
        "+" => bin(BinOp::Add),
        "-" if !at.has("left") => Ok(Expr::Un(UnOp::Neg, sub("right")?)),
        "-" => bin(BinOp::Sub),
        "*" => bin(BinOp::Mul),
        "/" => bin(BinOp::Div),
        "%" => bin(BinOp::Mod),
        "<<" => bin(BinOp::Shl),
        ">>" => bin(BinOp::Shr),
        "==" => bin(BinOp::Eq),
        "!=" => bin(BinOp::Ne),
        ">" => bin(BinOp::Gt),
        ">=" => bin(BinOp::Ge),
        "<" => bin(BinOp::Lt),
        "<=" => bin(BinOp::Le),
        "and" => bin(BinOp::And),
        "or" => bin(BinOp::Or),
        "&" => bin(BinOp::BitAnd),
        "|" => bin(BinOp::BitOr),
        "^" => bin(BinOp::BitXor),
        "two_comp_mod" => bin(BinOp::TwoCompMod),
        "sat_cast" => bin(BinOp::SatCast),
        "usat_cast" => bin(BinOp::UsatCast),
        "not" => Ok(Expr::Un(UnOp::Not, sub("right")?)),
        "~" => Ok(Expr::Un(UnOp::BitNot, sub("right")?)),
        "d2b" => Ok(Expr::Un(UnOp::D2b, sub("right")?)),
        "b2d" => Ok(Expr::Un(UnOp::B2d, sub("right")?)),
        "?" => Ok(Expr::Cond(
            at.get("cond", |x| load_depth(&x, cx, scope, depth + 1))
                .map(Box::new)?,
            sub("left")?,
            sub("right")?,
        )),
        "valid" => at.get("right", |r| {
            Ok(Expr::Valid(header_ref_depth(&r, cx, scope, depth + 1)?))
        }),
        "valid_union" => at.get("right", |r| {
            Ok(Expr::UnionValid(union_ref(&r, cx, scope, depth + 1)?))
        }),
        "last_stack_index" => at.get("right", |r| Ok(Expr::LastStackIndex(any_stack(&r, cx)?))),
        "size_stack" => at.get("right", |r| Ok(Expr::SizeStack(any_stack(&r, cx)?))),
        "access_field" => {
            let header = at.get("left", |l| header_ref_depth(&l, cx, scope, depth + 1))?;
            let field = at.get("right", |r| {
                r.bounded(limits::MAX_FIELDS_PER_TYPE as u64, "field offset")
            })? as u32;
            check_field_offset(at, cx, &header, field)?;
            Ok(Expr::DynField { header, field })
        }
        "dereference_header_stack" | "dereference_union_stack" | "access_union_header" => {
            Err(at.err(format!("{op:?} yields a header, not a value")))
        }
        other => Err(at.unsupported(format!("expression operator {other:?}"))),
    }
}

/// Loads an lvalue: a `field`, a `register`, or an `access_field`
/// expression.
pub(crate) fn load_lvalue(at: &At<'_>, cx: &Ctx, scope: &Scope) -> Result<LValue, LoadError> {
    match load(at, cx, scope)? {
        Expr::Field(f) => Ok(LValue::Field(f)),
        Expr::DynField { header, field } => Ok(LValue::DynField { header, field }),
        Expr::Register { array, index } => Ok(LValue::Register { array, index }),
        _ => Err(at.err("expected a field to write")),
    }
}

/// Loads a header reference: `{"type":"header"}`, or an expression that
/// yields one (`dereference_header_stack`, `access_union_header`).
pub(crate) fn header_ref(at: &At<'_>, cx: &Ctx, scope: &Scope) -> Result<HeaderRef, LoadError> {
    header_ref_depth(at, cx, scope, 0)
}

fn header_ref_depth(
    at: &At<'_>,
    cx: &Ctx,
    scope: &Scope,
    depth: usize,
) -> Result<HeaderRef, LoadError> {
    if depth > limits::MAX_EXPR_DEPTH {
        return Err(at.err("expression nested too deep"));
    }
    // A bare expression object (the "value" of an "expression").
    if at.has("op") {
        let op = at.get("op", |o| o.str().map(str::to_owned))?;
        return match op.as_str() {
            "dereference_header_stack" => {
                let stack = at.get("left", |l| l.get("value", |v| stack(&v, cx, v.str()?)))?;
                let index = at.get("right", |r| load_depth(&r, cx, scope, depth + 1))?;
                Ok(HeaderRef::StackElem {
                    stack,
                    index: Box::new(index),
                })
            }
            "access_union_header" => {
                let union = at.get("left", |l| union_ref(&l, cx, scope, depth + 1))?;
                let member = at.get("right", |r| r.bounded(64, "union member offset"))? as u32;
                Ok(HeaderRef::UnionMember {
                    union: Box::new(union),
                    member,
                })
            }
            other => Err(at.err(format!("{other:?} does not yield a header"))),
        };
    }
    let ty = at.get("type", |t| t.str().map(str::to_owned))?;
    at.get("value", |v| match ty.as_str() {
        "header" => Ok(HeaderRef::Fixed(cx.header(&v, v.str()?)?)),
        "expression" => header_ref_depth(&v, cx, scope, depth + 1),
        "stack" | "header_stack" => Ok(HeaderRef::StackLast(stack(&v, cx, v.str()?)?)),
        other => Err(at.err(format!("expected a header, found {other:?}"))),
    })
}

fn union_ref(at: &At<'_>, cx: &Ctx, scope: &Scope, depth: usize) -> Result<UnionRef, LoadError> {
    if at.has("op") {
        let op = at.get("op", |o| o.str().map(str::to_owned))?;
        if op != "dereference_union_stack" {
            return Err(at.err(format!("{op:?} does not yield a header union")));
        }
        let stack = at.get("left", |l| {
            l.get("value", |v| union_stack(&v, cx, v.str()?))
        })?;
        let index = at.get("right", |r| load_depth(&r, cx, scope, depth + 1))?;
        return Ok(UnionRef::StackElem {
            stack,
            index: Box::new(index),
        });
    }
    let ty = at.get("type", |t| t.str().map(str::to_owned))?;
    at.get("value", |v| match ty.as_str() {
        "header_union" => {
            let n = v.str()?;
            cx.names
                .unions
                .get(n)
                .copied()
                .map(UnionRef::Fixed)
                .ok_or_else(|| v.err(format!("no header union {n:?}")))
        }
        "expression" => union_ref(&v, cx, scope, depth + 1),
        other => Err(at.err(format!("expected a header union, found {other:?}"))),
    })
}

fn any_stack(at: &At<'_>, cx: &Ctx) -> Result<u32, LoadError> {
    let ty = at.get("type", |t| t.str().map(str::to_owned))?;
    at.get("value", |v| match ty.as_str() {
        "header_stack" => stack(&v, cx, v.str()?),
        "header_union_stack" => Ok(union_stack(&v, cx, v.str()?)? | UNION_STACK_BIT),
        other => Err(at.err(format!("expected a header stack, found {other:?}"))),
    })
}

pub(crate) fn stack(at: &At<'_>, cx: &Ctx, name: &str) -> Result<u32, LoadError> {
    cx.names
        .stacks
        .get(name)
        .copied()
        .ok_or_else(|| at.err(format!("no header stack {name:?}")))
}

pub(crate) fn union_stack(at: &At<'_>, cx: &Ctx, name: &str) -> Result<u32, LoadError> {
    cx.names
        .union_stacks
        .get(name)
        .copied()
        .ok_or_else(|| at.err(format!("no header union stack {name:?}")))
}

pub(crate) fn register(at: &At<'_>, cx: &Ctx, name: &str) -> Result<u32, LoadError> {
    cx.names
        .registers
        .get(name)
        .copied()
        .ok_or_else(|| at.err(format!("no register array {name:?}")))
}

fn stack_field_index(at: &At<'_>, cx: &Ctx, stack: u32, name: &str) -> Result<u32, LoadError> {
    let h = *cx.stacks[stack as usize]
        .headers
        .first()
        .ok_or_else(|| at.err("an empty header stack"))?;
    header_field_index(at, cx, h, name)
}

fn header_field_index(at: &At<'_>, cx: &Ctx, h: u32, name: &str) -> Result<u32, LoadError> {
    let ty = &cx.header_types[cx.headers[h as usize].ty as usize];
    ty.fields
        .iter()
        .position(|f| f.0 == name)
        .map(|p| p as u32)
        .ok_or_else(|| at.err(format!("no field {name:?} in {:?}", ty.name)))
}

fn check_field_offset(at: &At<'_>, cx: &Ctx, h: &HeaderRef, field: u32) -> Result<(), LoadError> {
    let sample = match h {
        HeaderRef::Fixed(h) => Some(*h),
        HeaderRef::StackElem { stack, .. } | HeaderRef::StackLast(stack) => {
            cx.stacks[*stack as usize].headers.first().copied()
        }
        HeaderRef::UnionMember { .. } => None,
    };
    if let Some(s) = sample {
        if field >= cx.headers[s as usize].nfields {
            return Err(at.err(format!(
                "field offset {field} past the end of {:?}",
                cx.headers[s as usize].name
            )));
        }
    }
    Ok(())
}
