//! Evaluating expressions over the packet header vector.

use crate::program::{BinOp, Expr, HeaderRef, Program, UnOp, UnionRef};

use super::bits;
use super::phv::{ExecError, Phv, resolve_header};
use super::state::State;

/// What an expression may read besides the PHV: the running action's data
/// and, in the parser, the bytes ahead of the cursor.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub(crate) data: &'a [i128],
    pub(crate) ahead: &'a [u8],
}

impl Scope<'_> {
    pub(crate) const NONE: Scope<'static> = Scope {
        data: &[],
        ahead: &[],
    };
}

/// Evaluates `e`.
pub(crate) fn eval(
    p: &Program,
    phv: &Phv,
    st: &State,
    sc: Scope<'_>,
    e: &Expr,
) -> Result<i128, ExecError> {
    Ok(match e {
        Expr::Const(v) => *v,
        Expr::Field(f) => phv.get(p, *f),
        Expr::Local(i) => sc.data.get(*i as usize).copied().unwrap_or(0),
        Expr::DynField { header, field } => {
            let h = header_of(p, phv, st, sc, header)?;
            phv.get(p, p.headers[h as usize].first_field + field)
        }
        Expr::Valid(h) => match header_of(p, phv, st, sc, h) {
            Ok(h) => phv.valid[h as usize] as i128,
            // `hdr.last.isValid()` on an empty stack is false.
            Err(ExecError::StackIndex { index: -1, .. }) => 0,
            Err(e) => return Err(e),
        },
        Expr::UnionValid(u) => phv.union_valid(p, union_of(p, phv, st, sc, u)?) as i128,
        Expr::Lookahead { offset, bits: n } => {
            let (off, n) = (*offset as usize, *n);
            // Past the end reads as zeros (the parser checks lengths where
            // P4 requires; bmv2 reads what is there).
            let mut v: u128 = 0;
            for i in 0..n as usize {
                let bit = off + i;
                let b = sc
                    .ahead
                    .get(bit / 8)
                    .map_or(0, |b| (b >> (7 - bit % 8)) & 1);
                v = (v << 1) | u128::from(b);
            }
            v as i128
        }
        Expr::Register { array, index } => {
            let i = eval(p, phv, st, sc, index)?;
            let r = &st.registers[*array as usize];
            let cell = usize::try_from(i)
                .ok()
                .and_then(|i| r.get(i))
                .ok_or_else(|| ExecError::RegisterIndex {
                    array: p.registers[*array as usize].name.clone(),
                    index: i,
                })?;
            *cell as i128
        }
        Expr::LastStackIndex(s) => stack_next(phv, *s) as i128 - 1,
        Expr::SizeStack(s) => stack_next(phv, *s) as i128,
        Expr::Un(op, a) => {
            let a = eval(p, phv, st, sc, a)?;
            match op {
                UnOp::Not => (a == 0) as i128,
                UnOp::BitNot => !a,
                UnOp::Neg => a.wrapping_neg(),
                UnOp::D2b => (a != 0) as i128,
                UnOp::B2d => (a != 0) as i128,
            }
        }
        Expr::Bin(BinOp::And, a, b) => {
            (eval(p, phv, st, sc, a)? != 0 && eval(p, phv, st, sc, b)? != 0) as i128
        }
        Expr::Bin(BinOp::Or, a, b) => {
            (eval(p, phv, st, sc, a)? != 0 || eval(p, phv, st, sc, b)? != 0) as i128
        }
        Expr::Bin(op, a, b) => {
            let a = eval(p, phv, st, sc, a)?;
            let b = eval(p, phv, st, sc, b)?;
            binary(*op, a, b)
        }
        Expr::Cond(c, a, b) => {
            if eval(p, phv, st, sc, c)? != 0 {
                eval(p, phv, st, sc, a)?
            } else {
                eval(p, phv, st, sc, b)?
            }
        }
    })
}

/// A binary operator on two values (`and`/`or` are short-circuited by the
/// caller).
pub(crate) fn binary(op: BinOp, a: i128, b: i128) -> i128 {
    match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::Div => a.checked_div(b).unwrap_or(0),
        BinOp::Mod => a.checked_rem(b).unwrap_or(0),
        BinOp::Shl => {
            if !(0..128).contains(&b) {
                0
            } else {
                a.wrapping_shl(b as u32)
            }
        }
        BinOp::Shr => {
            if b < 0 {
                a
            } else if b >= 127 {
                if a < 0 { -1 } else { 0 }
            } else {
                a >> b
            }
        }
        BinOp::Eq => (a == b) as i128,
        BinOp::Ne => (a != b) as i128,
        BinOp::Gt => (a > b) as i128,
        BinOp::Ge => (a >= b) as i128,
        BinOp::Lt => (a < b) as i128,
        BinOp::Le => (a <= b) as i128,
        BinOp::And => (a != 0 && b != 0) as i128,
        BinOp::Or => (a != 0 || b != 0) as i128,
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        BinOp::TwoCompMod => {
            if !(1..=128).contains(&b) {
                return 0;
            }
            let w = b as u32;
            let m = (a as u128) & bits::mask(w);
            if w < 128 && (m >> (w - 1)) & 1 == 1 {
                (m | !bits::mask(w)) as i128
            } else {
                m as i128
            }
        }
        BinOp::SatCast => {
            if !(1..=127).contains(&b) {
                return a;
            }
            let max = (1i128 << (b - 1)) - 1;
            a.clamp(-max - 1, max)
        }
        BinOp::UsatCast => {
            if !(0..=126).contains(&b) {
                return a.max(0);
            }
            a.clamp(0, (1i128 << b) - 1)
        }
    }
}

fn stack_next(phv: &Phv, s: u32) -> u32 {
    if s & crate::program::expr_union_bit() != 0 {
        phv.ustack_next[(s & !crate::program::expr_union_bit()) as usize]
    } else {
        phv.stack_next[s as usize]
    }
}

/// The header instance `h` names now.
pub(crate) fn header_of(
    p: &Program,
    phv: &Phv,
    st: &State,
    sc: Scope<'_>,
    h: &HeaderRef,
) -> Result<u32, ExecError> {
    resolve_header(p, phv, h, &mut |e| eval(p, phv, st, sc, e))
}

fn union_of(
    p: &Program,
    phv: &Phv,
    st: &State,
    sc: Scope<'_>,
    u: &UnionRef,
) -> Result<u32, ExecError> {
    match u {
        UnionRef::Fixed(u) => Ok(*u),
        UnionRef::StackElem { stack, index } => {
            let i = eval(p, phv, st, sc, index)?;
            let s = &p.union_stacks[*stack as usize];
            usize::try_from(i)
                .ok()
                .and_then(|i| s.unions.get(i).copied())
                .ok_or_else(|| ExecError::StackIndex {
                    stack: s.name.clone(),
                    index: i,
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bmv2s_two_comp_mod_examples() {
        // JSON_format.md: two_comp_mod(257, 8) == 1, two_comp_mod(-129, 8) == 127.
        assert_eq!(binary(BinOp::TwoCompMod, 257, 8), 1);
        assert_eq!(binary(BinOp::TwoCompMod, -129, 8), 127);
        assert_eq!(binary(BinOp::TwoCompMod, 255, 8), -1);
    }

    #[test]
    fn saturating_casts() {
        assert_eq!(binary(BinOp::SatCast, 200, 8), 127);
        assert_eq!(binary(BinOp::SatCast, -200, 8), -128);
        assert_eq!(binary(BinOp::UsatCast, 300, 8), 255);
        assert_eq!(binary(BinOp::UsatCast, -5, 8), 0);
    }

    #[test]
    fn shifts_past_the_width() {
        assert_eq!(binary(BinOp::Shl, 1, 200), 0);
        assert_eq!(binary(BinOp::Shr, -8, 200), -1);
        assert_eq!(binary(BinOp::Shr, 8, 2), 2);
        assert_eq!(binary(BinOp::Div, 7, 0), 0);
    }
}
