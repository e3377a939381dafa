//! The primitives of an action, run on the packet header vector and the
//! switch's state, and the helpers the packet flow shares with them.

use crate::program::{LValue, Prim, Program};

use super::eval::{Scope, eval, header_of};
use super::packet::{self, calc_bytes};
use super::phv::{ExecError, Phv};
use super::state::State;
use super::switch::{DROP_PORT, PacketCtx};
use super::{bits, hash};

/// Sets a standard metadata field the program has.
pub(crate) fn set_std(p: &Program, phv: &mut Phv, f: Option<u32>, v: i128) {
    if let Some(f) = f {
        phv.set(p, f, v);
    }
}

/// The values of field list `fl`'s fields (empty for an unknown list).
pub(crate) fn preserve(p: &Program, phv: &Phv, fl: u32) -> Vec<(u32, u128)> {
    p.field_lists
        .iter()
        .find(|l| l.id == fl)
        .map_or_else(Vec::new, |l| {
            l.fields
                .iter()
                .map(|&f| (f, phv.vals[f as usize]))
                .collect()
        })
}

/// Writes `v` to what `dst` names.
pub(crate) fn assign(
    p: &Program,
    phv: &mut Phv,
    st: &mut State,
    sc: Scope<'_>,
    dst: &LValue,
    v: i128,
) -> Result<(), ExecError> {
    match dst {
        LValue::Field(f) => phv.set(p, *f, v),
        LValue::DynField { header, field } => {
            let h = header_of(p, phv, st, sc, header)?;
            phv.set(p, p.headers[h as usize].first_field + field, v);
        }
        LValue::Register { array, index } => {
            let i = eval(p, phv, st, sc, index)?;
            let bitsw = p.registers[*array as usize].bits;
            let cell = usize::try_from(i)
                .ok()
                .and_then(|i| st.registers[*array as usize].get_mut(i))
                .ok_or_else(|| ExecError::RegisterIndex {
                    array: p.registers[*array as usize].name.clone(),
                    index: i,
                })?;
            *cell = (v as u128) & bits::mask(bitsw);
        }
    }
    Ok(())
}

fn index_of(kind: &'static str, name: &str, len: usize, i: i128) -> Result<usize, ExecError> {
    usize::try_from(i)
        .ok()
        .filter(|&x| x < len)
        .ok_or_else(|| ExecError::ArrayIndex {
            kind,
            array: name.to_owned(),
            index: i,
        })
}

/// Runs one primitive (jumps, assertions and externs are the action
/// loop's).
pub(crate) fn run_prim(
    p: &Program,
    phv: &mut Phv,
    st: &mut State,
    pc: &mut PacketCtx,
    data: &[i128],
    prim: &Prim,
) -> Result<(), ExecError> {
    let sc = Scope { data, ahead: &[] };
    let ev = |phv: &Phv, st: &State, e| eval(p, phv, st, sc, e);
    match prim {
        Prim::Assign(dst, src) => {
            let v = ev(phv, st, src)?;
            assign(p, phv, st, sc, dst, v)?;
        }
        Prim::AssignVl(dst, src) => {
            let (d, s) = (
                header_of(p, phv, st, sc, dst)?,
                header_of(p, phv, st, sc, src)?,
            );
            let v = phv.varbit[s as usize].clone();
            phv.varbit[d as usize].clear();
            phv.varbit[d as usize].extend_from_slice(&v);
            phv.varbit_bits[d as usize] = phv.varbit_bits[s as usize];
        }
        Prim::AssignHeader(dst, src) => {
            let (d, s) = (
                header_of(p, phv, st, sc, dst)?,
                header_of(p, phv, st, sc, src)?,
            );
            phv.copy_header(p, d, s);
        }
        Prim::AssignUnion(d, s) => {
            let (dh, sh) = (
                p.unions[*d as usize].headers.clone(),
                p.unions[*s as usize].headers.clone(),
            );
            for (a, b) in dh.iter().zip(&sh) {
                phv.copy_header(p, *a, *b);
            }
        }
        Prim::AssignStack(d, s) => {
            use crate::program::StackRef;
            match (d, s) {
                (StackRef::Headers(d), StackRef::Headers(s)) => {
                    let (dh, sh) = (
                        p.stacks[*d as usize].headers.clone(),
                        p.stacks[*s as usize].headers.clone(),
                    );
                    for (a, b) in dh.iter().zip(&sh) {
                        phv.copy_header(p, *a, *b);
                    }
                    phv.stack_next[*d as usize] = phv.stack_next[*s as usize];
                }
                (StackRef::Unions(d), StackRef::Unions(s)) => {
                    let (du, su) = (
                        p.union_stacks[*d as usize].unions.clone(),
                        p.union_stacks[*s as usize].unions.clone(),
                    );
                    for (a, b) in du.iter().zip(&su) {
                        for (x, y) in p.unions[*a as usize]
                            .headers
                            .iter()
                            .zip(&p.unions[*b as usize].headers)
                        {
                            phv.copy_header(p, *x, *y);
                        }
                    }
                    phv.ustack_next[*d as usize] = phv.ustack_next[*s as usize];
                }
                _ => {}
            }
        }
        Prim::Drop | Prim::MarkToDrop => {
            if let Some(f) = p.std.egress_spec {
                phv.set(p, f, i128::from(DROP_PORT));
            }
            if let Some(f) = p.std.mcast_grp {
                phv.set(p, f, 0);
            }
        }
        Prim::AddHeader(h) => {
            let h = header_of(p, phv, st, sc, h)?;
            if !phv.valid[h as usize] {
                let hd = &p.headers[h as usize];
                for f in hd.first_field..hd.first_field + hd.nfields {
                    phv.vals[f as usize] = 0;
                }
                phv.mark_valid(p, h);
                pc.length += packet::header_len(p, phv, h) as i64;
            }
        }
        Prim::MarkValid(h) => {
            let h = header_of(p, phv, st, sc, h)?;
            phv.mark_valid(p, h);
        }
        Prim::RemoveHeader(h) => {
            let h = header_of(p, phv, st, sc, h)?;
            if phv.valid[h as usize] {
                pc.length -= packet::header_len(p, phv, h) as i64;
                phv.valid[h as usize] = false;
            }
        }
        Prim::Push(s, n) | Prim::Pop(s, n) => {
            let n = ev(phv, st, n)?.max(0) as usize;
            let push = matches!(prim, Prim::Push(..));
            shift_stack(p, phv, *s, n, push);
        }
        Prim::Count(c, i) => {
            let i = ev(phv, st, i)?;
            let arr = &mut st.counters[*c as usize];
            let i = index_of("counter", &p.counters[*c as usize].name, arr.len(), i)?;
            arr[i].0 += 1;
            arr[i].1 += pc.length.max(0) as u64;
        }
        Prim::ExecuteMeter(m, i, dst) => {
            let i = ev(phv, st, i)?;
            let units = match p.meters[*m as usize].unit {
                crate::program::MeterUnit::Bytes => pc.length.max(0) as u64,
                crate::program::MeterUnit::Packets => 1,
            };
            let arr = &mut st.meters[*m as usize];
            let i = index_of("meter", &p.meters[*m as usize].name, arr.len(), i)?;
            let colour = arr[i].execute(units, pc.now_ns);
            assign(p, phv, st, sc, dst, colour)?;
        }
        Prim::RegisterRead(dst, r, i) => {
            let i = ev(phv, st, i)?;
            let arr = &st.registers[*r as usize];
            let i = usize::try_from(i)
                .ok()
                .filter(|&x| x < arr.len())
                .ok_or_else(|| ExecError::RegisterIndex {
                    array: p.registers[*r as usize].name.clone(),
                    index: i,
                })?;
            let v = arr[i] as i128;
            assign(p, phv, st, sc, dst, v)?;
        }
        Prim::RegisterWrite(r, i, v) => {
            let idx = ev(phv, st, i)?;
            let v = ev(phv, st, v)?;
            assign(
                p,
                phv,
                st,
                sc,
                &LValue::Register {
                    array: *r,
                    index: Box::new(crate::program::Expr::Const(idx)),
                },
                v,
            )?;
        }
        Prim::HashOffset(dst, base, calc, size) => {
            let base = ev(phv, st, base)?;
            let size = ev(phv, st, size)?;
            let c = &p.calculations[*calc as usize];
            let mut buf = Vec::new();
            calc_bytes(p, phv, &c.inputs, &[], &mut buf);
            let h = hash::hash(c.algo, &buf, &mut st.round_robin[*calc as usize]);
            let size = if size <= 0 { 1 } else { size as u128 };
            let v = (u128::from(h) % size) as i128 + base;
            assign(p, phv, st, sc, dst, v)?;
        }
        Prim::Random(dst, lo, hi) => {
            let (lo, hi) = (ev(phv, st, lo)?, ev(phv, st, hi)?);
            if lo <= hi {
                // A deterministic generator: the same packets give the same
                // values (tests compare outputs).
                let x = pc
                    .now_ns
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(st.errors.wrapping_add(1442695040888963407));
                let span = (hi - lo) as u128 + 1;
                assign(p, phv, st, sc, dst, lo + (u128::from(x) % span) as i128)?;
            }
        }
        Prim::CloneI2E(s, fl) | Prim::CloneE2E(s, fl) => {
            let s = ev(phv, st, s)?;
            let fl = ev(phv, st, fl)?;
            pc.clone = Some((s as u32, fl as u32));
        }
        Prim::Resubmit(fl) => pc.resubmit = Some(ev(phv, st, fl)? as u32),
        Prim::Recirculate(fl) => pc.recirculate = Some(ev(phv, st, fl)? as u32),
        Prim::Digest(id) => pc.digest = Some(ev(phv, st, id)? as u32),
        Prim::Truncate(n) => pc.truncate = Some(ev(phv, st, n)?.max(0) as usize),
        Prim::Exit => pc.exit = true,
        Prim::Log(fmt, args) => {
            let mut line = String::new();
            let mut vals = args.iter();
            let mut parts = fmt.split("{}");
            if let Some(first) = parts.next() {
                line.push_str(first);
            }
            for part in parts {
                match vals.next() {
                    Some(a) => line.push_str(&ev(phv, st, a)?.to_string()),
                    None => line.push_str("{}"),
                }
                line.push_str(part);
            }
            st.log(line);
        }
        Prim::NoOp | Prim::Jump(_) | Prim::JumpIfZero(..) | Prim::Assert(_) | Prim::Extern(..) => {}
    }
    Ok(())
}

/// `push_front(n)` / `pop_front(n)` on a stack.
fn shift_stack(p: &Program, phv: &mut Phv, s: crate::program::StackRef, n: usize, push: bool) {
    use crate::program::StackRef;
    let (hs, next): (Vec<Vec<u32>>, &mut u32) = match s {
        StackRef::Headers(s) => (
            p.stacks[s as usize]
                .headers
                .iter()
                .map(|&h| vec![h])
                .collect(),
            &mut phv.stack_next[s as usize],
        ),
        StackRef::Unions(s) => (
            p.union_stacks[s as usize]
                .unions
                .iter()
                .map(|&u| p.unions[u as usize].headers.clone())
                .collect(),
            &mut phv.ustack_next[s as usize],
        ),
    };
    let size = hs.len();
    let cur = *next as usize;
    *next = if push {
        (cur + n).min(size)
    } else {
        cur.saturating_sub(n)
    } as u32;
    let copy = |phv: &mut Phv, to: usize, from: Option<usize>| {
        for (i, &h) in hs[to].iter().enumerate() {
            match from {
                Some(f) => phv.copy_header(p, h, hs[f][i]),
                None => phv.valid[h as usize] = false,
            }
        }
    };
    if push {
        for i in (0..size).rev() {
            copy(phv, i, i.checked_sub(n));
        }
    } else {
        for i in 0..size {
            copy(phv, i, (i + n < size).then_some(i + n));
        }
    }
}
