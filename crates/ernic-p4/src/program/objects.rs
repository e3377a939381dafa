//! The program's other objects: error constants, counter, meter and
//! register arrays, calculations, field lists and checksums.

use super::expr;
use super::json::At;
use super::{
    CalcInput, Calculation, Checksum, CounterArray, Ctx, FieldList, FieldOrValid, HashAlgo,
    LoadError, MeterArray, MeterUnit, RegisterArray, limits,
};

/// The core library's errors, for files that declare none.
const CORE_ERRORS: [&str; 7] = [
    "NoError",
    "PacketTooShort",
    "NoMatch",
    "StackOutOfBounds",
    "HeaderTooShort",
    "ParserTimeout",
    "ParserInvalidArgument",
];

pub(crate) fn load_errors(at: &At<'_>, cx: &mut Ctx) -> Result<Vec<(String, u32)>, LoadError> {
    let mut errors = at.each("errors", |_, e| {
        let name = e.at(0, |n| n.str().map(str::to_owned))?;
        let v = e.at(1, |n| n.bounded(i32::MAX as u64 - 1, "error value"))? as u32;
        Ok((name, v))
    })?;
    // Core errors a file leaves out get values past the ones it uses, so the
    // parser can always report them.
    let mut next = errors.iter().map(|e| e.1 + 1).max().unwrap_or(0);
    for name in CORE_ERRORS {
        if !errors.iter().any(|e| e.0 == name) {
            errors.push((name.to_owned(), next));
            next += 1;
        }
    }
    for (n, v) in &errors {
        cx.names.errors.insert(n.clone(), *v);
    }
    Ok(errors)
}

/// The counter, meter and register arrays.
pub(crate) type Arrays = (Vec<CounterArray>, Vec<MeterArray>, Vec<RegisterArray>);

pub(crate) fn load_arrays(at: &At<'_>, cx: &mut Ctx) -> Result<Arrays, LoadError> {
    let counters = at.each("counter_arrays", |i, c| {
        let name = c.get("name", |n| n.str().map(str::to_owned))?;
        let direct = c.get("is_direct", |d| {
            if d.v.is_null() { Ok(false) } else { d.bool() }
        })?;
        let size = array_size(&c, direct)?;
        let direct_table = if direct {
            c.get("binding", |b| b.opt_str().map(|s| s.map(str::to_owned)))?
        } else {
            None
        };
        cx.names.counters.insert(name.clone(), i as u32);
        Ok(CounterArray {
            name,
            size,
            direct_table,
        })
    })?;
    let meters = at.each("meter_arrays", |i, m| {
        let name = m.get("name", |n| n.str().map(str::to_owned))?;
        let direct = m.get("is_direct", |d| {
            if d.v.is_null() { Ok(false) } else { d.bool() }
        })?;
        let size = array_size(&m, direct)?;
        let unit = m.get("type", |t| match t.str()? {
            "bytes" => Ok(MeterUnit::Bytes),
            "packets" => Ok(MeterUnit::Packets),
            other => Err(t.unsupported(format!("meter type {other:?}"))),
        })?;
        let rate_count = m.get("rate_count", |r| {
            if r.v.is_null() {
                Ok(2)
            } else {
                r.bounded(2, "rate_count")
            }
        })? as u32;
        if rate_count == 0 {
            return Err(m.err("rate_count 0"));
        }
        let (direct_table, result) = if direct {
            let t = m.get("binding", |b| b.opt_str().map(|s| s.map(str::to_owned)))?;
            let r = m.get("result_target", |r| match cx.field_ref(&r)? {
                FieldOrValid::Field(f) => Ok(f),
                _ => Err(r.err("a meter's result must be a field")),
            })?;
            (t, Some(r))
        } else {
            (None, None)
        };
        cx.names.meters.insert(name.clone(), i as u32);
        Ok(MeterArray {
            name,
            size,
            unit,
            rate_count,
            direct_table,
            result,
        })
    })?;
    let registers = at.each("register_arrays", |i, r| {
        let name = r.get("name", |n| n.str().map(str::to_owned))?;
        let size = r.get("size", |n| n.bounded(limits::MAX_ARRAY_SIZE, "size"))? as u32;
        let bits = r.get("bitwidth", |n| {
            n.bounded(limits::MAX_FIELD_BITS as u64, "bitwidth")
        })? as u32;
        cx.names.registers.insert(name.clone(), i as u32);
        Ok(RegisterArray { name, size, bits })
    })?;
    // Each array is bounded; so is their number and their cells together
    // (a guest's command 70 loads programs, so this bounds its memory).
    if counters.len() + meters.len() + registers.len() > limits::MAX_OBJECTS {
        return Err(at.err(format!(
            "more than {} counter, meter and register arrays",
            limits::MAX_OBJECTS
        )));
    }
    let cells: u64 = counters
        .iter()
        .map(|c| u64::from(c.size))
        .chain(meters.iter().map(|m| u64::from(m.size)))
        .chain(registers.iter().map(|r| u64::from(r.size)))
        .sum();
    if cells > limits::MAX_TOTAL_CELLS {
        return Err(at.err(format!(
            "{cells} counter, meter and register cells, over the limit of {}",
            limits::MAX_TOTAL_CELLS
        )));
    }
    Ok((counters, meters, registers))
}

/// An array's `size`; a direct array's may be absent (it has one cell per
/// table entry).
fn array_size(a: &At<'_>, direct: bool) -> Result<u32, LoadError> {
    a.get("size", |n| {
        if direct && n.v.is_null() {
            Ok(0)
        } else {
            n.bounded(limits::MAX_ARRAY_SIZE, "size").map(|v| v as u32)
        }
    })
}

pub(crate) fn load_calculations(at: &At<'_>, cx: &mut Ctx) -> Result<Vec<Calculation>, LoadError> {
    at.each("calculations", |i, c| {
        let name = c.get("name", |n| n.str().map(str::to_owned))?;
        let algo = c.get("algo", |a| HashAlgo::parse(&a))?;
        let inputs = c.each("input", |_, inp| {
            let ty = inp.get("type", |t| t.str().map(str::to_owned))?;
            match ty.as_str() {
                "field" => inp.get("value", |v| match cx.field_ref(&v)? {
                    FieldOrValid::Field(f) => Ok(CalcInput::Field(f)),
                    _ => Err(v.unsupported("a validity bit as a calculation input")),
                }),
                "hexstr" => {
                    let value = inp.get("value", |v| v.hexstr())?;
                    let bits = inp.get("bitwidth", |b| {
                        b.bounded(limits::MAX_FIELD_BITS as u64, "bitwidth")
                    })? as u32;
                    Ok(CalcInput::Const { value, bits })
                }
                "header" => inp.get("value", |v| Ok(CalcInput::Header(cx.header(&v, v.str()?)?))),
                "payload" => Ok(CalcInput::Payload),
                other => Err(inp.unsupported(format!("calculation input type {other:?}"))),
            }
        })?;
        cx.names.calculations.insert(name.clone(), i as u32);
        Ok(Calculation { name, algo, inputs })
    })
}

pub(crate) fn load_field_lists(
    at: &At<'_>,
    key: &'static str,
    cx: &mut Ctx,
    index: bool,
) -> Result<Vec<FieldList>, LoadError> {
    at.each(key, |i, l| {
        let id = l.get("id", |n| n.u64())?;
        let name = l.get("name", |n| n.str().map(str::to_owned))?;
        let fields = l.each("elements", |_, e| {
            let ty = e.get("type", |t| t.str().map(str::to_owned))?;
            if ty != "field" {
                return Err(e.unsupported(format!("field list element type {ty:?}")));
            }
            e.get("value", |v| match cx.field_ref(&v)? {
                FieldOrValid::Field(f) => Ok(f),
                _ => Err(v.unsupported("a validity bit in a field list")),
            })
        })?;
        if index {
            cx.names.field_lists.insert(id, i as u32);
        }
        Ok(FieldList {
            id: id as u32,
            name,
            fields,
        })
    })
}

pub(crate) fn load_checksum(c: &At<'_>, cx: &Ctx) -> Result<Checksum, LoadError> {
    let name = c.get("name", |n| n.str().map(str::to_owned))?;
    let target = c.get("target", |t| match cx.field_ref(&t)? {
        FieldOrValid::Field(f) => Ok(f),
        _ => Err(t.err("a checksum target must be a field")),
    })?;
    let calc_name = c.get("calculation", |n| n.str().map(str::to_owned))?;
    let calc = c.get("calculation", |n| {
        cx_calc(cx, &calc_name).ok_or_else(|| n.err(format!("no calculation {calc_name:?}")))
    })?;
    let update = c.get(
        "update",
        |u| if u.v.is_null() { Ok(true) } else { u.bool() },
    )?;
    let verify = c.get(
        "verify",
        |u| if u.v.is_null() { Ok(true) } else { u.bool() },
    )?;
    let cond = c.get("if_cond", |e| {
        if e.v.is_null() {
            Ok(None)
        } else {
            expr::load(&e, cx, &expr::Scope::Control).map(Some)
        }
    })?;
    Ok(Checksum {
        name,
        target,
        calc,
        update,
        verify,
        cond,
    })
}

fn cx_calc(cx: &Ctx, name: &str) -> Option<u32> {
    cx.names.calculations.get(name).copied()
}
