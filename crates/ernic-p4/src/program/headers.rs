//! Header types, header instances (metadata included), stacks and unions,
//! and the flat field table every other part of the program indexes.

use super::json::At;
use super::{Ctx, LoadError, Names, limits};

/// A header type: its fields in order.
#[derive(Clone, Debug)]
pub struct HeaderType {
    /// Its name.
    pub name: String,
    /// `(name, width in bits, signed)`; a varbit field has width 0 and is
    /// `varbit`.
    pub fields: Vec<(String, u32, bool)>,
    /// The index of the varbit field, if any.
    pub varbit: Option<usize>,
    /// The varbit field's largest width in bits.
    pub varbit_max_bits: u32,
    /// Width of the fixed fields, in bits.
    pub fixed_bits: u32,
}

/// A header instance.
#[derive(Clone, Debug)]
pub struct Header {
    /// Its name (`ethernet`, `hdr[1]`, `scalars`).
    pub name: String,
    /// Its type (index into `header_types`).
    pub ty: u32,
    /// Metadata instances are always valid and never parsed or deparsed.
    pub metadata: bool,
    /// Its first field in the flat field table.
    pub first_field: u32,
    /// How many fields it has.
    pub nfields: u32,
    /// The union it belongs to, if any.
    pub union: Option<u32>,
}

/// One field of one instance.
#[derive(Clone, Debug)]
pub struct Field {
    /// The instance it belongs to.
    pub header: u32,
    /// Its width in bits (0 for a varbit).
    pub bits: u32,
    /// Two's complement signed.
    pub signed: bool,
    /// Its bit offset within the header.
    pub offset: u32,
    /// The varbit field of its header.
    pub varbit: bool,
}

impl Field {
    /// The mask of its width.
    pub fn mask(&self) -> u128 {
        if self.bits >= 128 {
            u128::MAX
        } else {
            (1u128 << self.bits) - 1
        }
    }
}

/// A header stack.
#[derive(Clone, Debug)]
pub struct Stack {
    /// Its name.
    pub name: String,
    /// Its elements in order.
    pub headers: Vec<u32>,
}

/// A header union.
#[derive(Clone, Debug)]
pub struct Union {
    /// Its name.
    pub name: String,
    /// Its member instances in order.
    pub headers: Vec<u32>,
}

/// A header union stack.
#[derive(Clone, Debug)]
pub struct UnionStack {
    /// Its name.
    pub name: String,
    /// The member names of its union type, in order.
    pub members: Vec<String>,
    /// Its unions in order.
    pub unions: Vec<u32>,
}

/// The fields of v1model's standard metadata the switch itself uses, where
/// the program has them (directly or through `field_aliases`).
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFields {
    /// The header holding them.
    pub header: Option<u32>,
    /// `ingress_port`.
    pub ingress_port: Option<u32>,
    /// `egress_spec`.
    pub egress_spec: Option<u32>,
    /// `egress_port`.
    pub egress_port: Option<u32>,
    /// `instance_type`.
    pub instance_type: Option<u32>,
    /// `packet_length`.
    pub packet_length: Option<u32>,
    /// `mcast_grp`.
    pub mcast_grp: Option<u32>,
    /// `egress_rid`.
    pub egress_rid: Option<u32>,
    /// `checksum_error`.
    pub checksum_error: Option<u32>,
    /// `parser_error`.
    pub parser_error: Option<u32>,
    /// `ingress_global_timestamp`.
    pub ingress_global_timestamp: Option<u32>,
    /// `egress_global_timestamp`.
    pub egress_global_timestamp: Option<u32>,
    /// `priority`.
    pub priority: Option<u32>,
}

pub(crate) fn load(at: &At<'_>) -> Result<Ctx, LoadError> {
    let mut names = Names::default();
    let mut type_names = std::collections::HashMap::new();
    let header_types = at.each("header_types", |i, t| {
        let name = t.get("name", |n| n.str().map(str::to_owned))?;
        let mut varbit = None;
        let mut fixed_bits = 0u32;
        let fields = t.each("fields", |fi, f| {
            let fname = f.at(0, |n| n.str().map(str::to_owned))?;
            let (bits, is_var) = f.at(1, |w| {
                if w.v.as_str() == Some("*") {
                    return Ok((0, true));
                }
                let b = w.bounded(limits::MAX_FIELD_BITS as u64, "field width")? as u32;
                if b == 0 {
                    return Err(w.err("a field of width 0"));
                }
                Ok((b, false))
            })?;
            let signed = if f.len()? > 2 {
                f.at(2, |s| s.bool())?
            } else {
                false
            };
            if signed && bits < 2 {
                return Err(f.err("a signed field needs at least 2 bits"));
            }
            if is_var {
                if varbit.is_some() {
                    return Err(f.err("more than one variable-length field"));
                }
                varbit = Some(fi);
            }
            fixed_bits += bits;
            Ok((fname, bits, signed))
        })?;
        if fields.len() > limits::MAX_FIELDS_PER_TYPE {
            return Err(t.err(format!(
                "{} fields, over the limit of {}",
                fields.len(),
                limits::MAX_FIELDS_PER_TYPE
            )));
        }
        if t.has("length_exp") {
            return Err(t.get("length_exp", |l| {
                l.unsupported("a header length expression (p4c writes extract_VL instead)")
            }));
        }
        let varbit_max_bits = if varbit.is_some() {
            let max_bytes = t.get("max_length", |m| {
                m.bounded(limits::MAX_VARBIT_BYTES as u64, "max_length")
            })? as u32;
            (max_bytes * 8).saturating_sub(fixed_bits)
        } else {
            0
        };
        type_names.insert(name.clone(), i as u32);
        Ok(HeaderType {
            name,
            fields,
            varbit,
            varbit_max_bits,
            fixed_bits,
        })
    })?;
    let mut fields = Vec::new();
    let mut ids = std::collections::HashMap::new();
    let headers = at.each("headers", |i, h| {
        if i >= limits::MAX_HEADERS {
            return Err(h.err(format!(
                "more than {} header instances",
                limits::MAX_HEADERS
            )));
        }
        let name = h.get("name", |n| n.str().map(str::to_owned))?;
        let tname = h.get("header_type", |n| n.str().map(str::to_owned))?;
        let ty = h.get("header_type", |n| {
            type_names
                .get(&tname)
                .copied()
                .ok_or_else(|| n.err(format!("no header type {tname:?}")))
        })?;
        let metadata = h.get(
            "metadata",
            |m| if m.v.is_null() { Ok(false) } else { m.bool() },
        )?;
        let id = h.get("id", |n| n.u64())?;
        let htype: &HeaderType = &header_types[ty as usize];
        // A packet header is whole bytes (with or without a varbit, whose
        // width is a multiple of 8): extract and emit rely on it.
        if !metadata && htype.fixed_bits % 8 != 0 {
            return Err(h.err(format!(
                "header type {tname:?} is {} bits, not a whole number of bytes",
                htype.fixed_bits
            )));
        }
        let first_field = fields.len() as u32;
        let mut offset = 0;
        for (fi, (_, bits, signed)) in htype.fields.iter().enumerate() {
            fields.push(Field {
                header: i as u32,
                bits: *bits,
                signed: *signed,
                offset,
                varbit: htype.varbit == Some(fi),
            });
            offset += bits;
        }
        if names.headers.insert(name.clone(), i as u32).is_some() {
            return Err(h.err(format!("header instance {name:?} declared twice")));
        }
        ids.insert(id, i as u32);
        Ok(Header {
            name,
            ty,
            metadata,
            first_field,
            nfields: htype.fields.len() as u32,
            union: None,
        })
    })?;
    let by_id = |a: &At<'_>| -> Result<u32, LoadError> {
        let id = a.u64()?;
        ids.get(&id)
            .copied()
            .ok_or_else(|| a.err(format!("no header instance with id {id}")))
    };
    let stacks = at.each("header_stacks", |i, s| {
        let name = s.get("name", |n| n.str().map(str::to_owned))?;
        let hs = s.each("header_ids", |_, x| by_id(&x))?;
        if hs.len() as u64 > limits::MAX_STACK_SIZE {
            return Err(s.err(format!(
                "a stack of {} headers, over the limit of {}",
                hs.len(),
                limits::MAX_STACK_SIZE
            )));
        }
        names.stacks.insert(name.clone(), i as u32);
        Ok(Stack { name, headers: hs })
    })?;
    let union_types = at.each("header_union_types", |_, t| {
        let name = t.get("name", |n| n.str().map(str::to_owned))?;
        let members = t.each("headers", |_, m| m.at(0, |n| n.str().map(str::to_owned)))?;
        Ok((name, members))
    })?;
    let mut headers = headers;
    let unions = at.each("header_unions", |i, u| {
        let name = u.get("name", |n| n.str().map(str::to_owned))?;
        let hs = u.each("header_ids", |_, x| by_id(&x))?;
        for &h in &hs {
            headers[h as usize].union = Some(i as u32);
        }
        names.unions.insert(name.clone(), i as u32);
        Ok(Union { name, headers: hs })
    })?;
    let union_ids: std::collections::HashMap<u64, u32> = at
        .each("header_unions", |i, u| {
            Ok((u.get("id", |n| n.u64())?, i as u32))
        })?
        .into_iter()
        .collect();
    let union_stacks = at.each("header_union_stacks", |i, s| {
        let name = s.get("name", |n| n.str().map(str::to_owned))?;
        let utype = s.get("union_type", |n| n.str().map(str::to_owned))?;
        let members = union_types
            .iter()
            .find(|t| t.0 == utype)
            .map(|t| t.1.clone())
            .ok_or_else(|| s.err(format!("no header union type {utype:?}")))?;
        let us = s.each("header_union_ids", |_, x| {
            let id = x.u64()?;
            union_ids
                .get(&id)
                .copied()
                .ok_or_else(|| x.err(format!("no header union with id {id}")))
        })?;
        if us.len() as u64 > limits::MAX_STACK_SIZE {
            return Err(s.err("a union stack over the stack limit"));
        }
        names.union_stacks.insert(name.clone(), i as u32);
        Ok(UnionStack {
            name,
            members,
            unions: us,
        })
    })?;
    at.each("field_aliases", |_, a| {
        let from = a.at(0, |n| n.str().map(str::to_owned))?;
        let to = a.at(1, |t| {
            Ok((
                t.at(0, |n| n.str().map(str::to_owned))?,
                t.at(1, |n| n.str().map(str::to_owned))?,
            ))
        })?;
        names.aliases.insert(from, to);
        Ok(())
    })?;
    Ok(Ctx {
        names,
        header_types,
        headers,
        fields,
        stacks,
        unions,
        union_stacks,
        actions: Vec::new(),
        registers: Vec::new(),
        meters: Vec::new(),
        counters: Vec::new(),
        value_sets: Vec::new(),
    })
}

/// Resolves the standard metadata fields: `standard_metadata.NAME`, an alias
/// of it, or (P4_14 programs) `intrinsic_metadata.NAME`.
pub(crate) fn std_fields(cx: &Ctx) -> StdFields {
    let find = |name: &str| -> Option<u32> {
        let full = format!("standard_metadata.{name}");
        if let Some((h, f)) = cx.names.aliases.get(&full) {
            return lookup(cx, h, f);
        }
        lookup(cx, "standard_metadata", name).or_else(|| lookup(cx, "intrinsic_metadata", name))
    };
    StdFields {
        header: cx.names.headers.get("standard_metadata").copied(),
        ingress_port: find("ingress_port"),
        egress_spec: find("egress_spec"),
        egress_port: find("egress_port"),
        instance_type: find("instance_type"),
        packet_length: find("packet_length"),
        mcast_grp: find("mcast_grp"),
        egress_rid: find("egress_rid"),
        checksum_error: find("checksum_error"),
        parser_error: find("parser_error"),
        ingress_global_timestamp: find("ingress_global_timestamp"),
        egress_global_timestamp: find("egress_global_timestamp"),
        priority: find("priority"),
    }
}

fn lookup(cx: &Ctx, h: &str, f: &str) -> Option<u32> {
    let hid = *cx.names.headers.get(h)?;
    let hdr = &cx.headers[hid as usize];
    let idx = cx.header_types[hdr.ty as usize]
        .fields
        .iter()
        .position(|x| x.0 == f)?;
    Some(hdr.first_field + idx as u32)
}
