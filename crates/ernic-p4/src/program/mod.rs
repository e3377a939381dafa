//! A bmv2 JSON program, loaded and checked: every name resolved to an index,
//! every width known, every construct the engine runs. [`Program::load`]
//! reads the format of p4lang/behavioral-model's `docs/JSON_format.md`
//! (`__meta__.version` 2.x, as p4c writes it, and the older files without
//! `__meta__` that p4c-bm wrote) and refuses, with the JSON path, anything it
//! would not run exactly: an unknown primitive, hash algorithm or match kind,
//! a field wider than 128 bits, a control graph with a cycle, a jump backwards
//! inside an action.
//!
//! The limits on what a file may declare are documented constants
//! ([`limits`]); nothing is sized from the file before it is checked
//! against them.

mod control;
mod expr;
mod graph;
mod headers;
pub(crate) mod json;
mod objects;
mod parser;
mod primitives;

use std::collections::HashMap;

pub use control::{
    ActionProfile, Conditional, ConstEntry, ConstMatch, DefaultEntry, KeyElement, MatchKind, Next,
    Node, Pipeline, Selector, Table, TableImpl,
};
pub use expr::{BinOp, Expr, HeaderRef, LValue, UnOp, UnionRef};
/// The bit that marks a `SizeStack`/`LastStackIndex` operand as a union stack.
pub(crate) const fn expr_union_bit() -> u32 {
    expr::UNION_STACK_BIT
}
pub use headers::{Field, Header, HeaderType, Stack, StdFields, Union, UnionStack};
pub use parser::{Deparser, KeyPart, ParseOp, ParseState, Parser, Transition, TransitionValue};
pub use primitives::{Action, Prim, StackRef};

use json::{At, Path};
use objects::{load_arrays, load_calculations, load_checksum, load_errors, load_field_lists};

/// What a program may declare (each checked at load).
pub mod limits {
    /// Widest fixed field, action parameter or register cell, in bits.
    pub const MAX_FIELD_BITS: u32 = 128;
    /// Largest varbit field, in bytes.
    pub const MAX_VARBIT_BYTES: u32 = 4096;
    /// Header instances (including metadata).
    pub const MAX_HEADERS: usize = 4096;
    /// Fields in one header type.
    pub const MAX_FIELDS_PER_TYPE: usize = 1024;
    /// Tables, conditionals, actions, parse states: each at most this many.
    pub const MAX_OBJECTS: usize = 65536;
    /// Entries in one counter, meter or register array.
    pub const MAX_ARRAY_SIZE: u64 = 1 << 20;
    /// Cells of all counter, meter and register arrays together.
    pub const MAX_TOTAL_CELLS: u64 = 1 << 22;
    /// A table's `max_size` (entries the control plane may add).
    pub const MAX_TABLE_SIZE: u64 = 1 << 20;
    /// Depth of one expression tree.
    pub const MAX_EXPR_DEPTH: usize = 256;
    /// Header stack depth.
    pub const MAX_STACK_SIZE: u64 = 256;
    /// Parse states one packet may visit before the parser stops with
    /// `ParserTimeout`.
    pub const MAX_PARSE_STEPS: u32 = 4096;
    /// Times one packet may pass through ingress (resubmit, recirculate).
    pub const MAX_PASSES: u32 = 16;
}

/// Why a program was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is not JSON.
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A value is malformed or names something that does not exist.
    #[error("{path}: {what}")]
    Invalid {
        /// Where in the document.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// The program uses something the engine does not implement.
    #[error("{path}: not supported by ernic's P4 engine: {what}")]
    Unsupported {
        /// Where in the document.
        path: String,
        /// What it asks for.
        what: String,
    },
    /// The JSON format's major version is not 2.
    #[error("__meta__.version: bmv2 JSON version {0}.{1} is not supported (2.x is)")]
    Version(u64, u64),
}

/// A hash or checksum algorithm bmv2 knows (`calculations`, selectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashAlgo {
    /// CRC-16/ARC (bmv2's `crc16`, and `crc16_custom` before it is set).
    Crc16,
    /// CRC-32/ISO-HDLC (`crc32`, `crc32_custom`).
    Crc32,
    /// CRC-16/IBM-3740 (`crcCCITT`).
    CrcCcitt,
    /// The Internet checksum (`csum16`, `cksum16`).
    Csum16,
    /// The first 8 bytes as a big-endian integer (`identity`).
    Identity,
    /// XOR of 16-bit words (`xor16`).
    Xor16,
    /// XOR of 32-bit words (`xor32`).
    Xor32,
    /// A counter (`round_robin`).
    RoundRobin,
}

impl HashAlgo {
    fn from_name(name: &str) -> Option<HashAlgo> {
        Some(match name {
            "crc16" | "crc16_custom" => HashAlgo::Crc16,
            "crc32" | "crc32_custom" => HashAlgo::Crc32,
            "crcCCITT" => HashAlgo::CrcCcitt,
            "csum16" | "cksum16" => HashAlgo::Csum16,
            "identity" => HashAlgo::Identity,
            "xor16" => HashAlgo::Xor16,
            "xor32" => HashAlgo::Xor32,
            "round_robin" => HashAlgo::RoundRobin,
            _ => return None,
        })
    }

    pub(crate) fn parse(at: &At<'_>) -> Result<HashAlgo, LoadError> {
        let name = at.str()?;
        HashAlgo::from_name(name).ok_or_else(|| at.unsupported(format!("hash algorithm {name:?}")))
    }
}

/// One input of a calculation, bit-packed into the hashed bytes in order.
#[derive(Clone, Debug)]
pub enum CalcInput {
    /// A field (skipped when its header is invalid).
    Field(u32),
    /// A constant of a given width.
    Const {
        /// The value.
        value: i128,
        /// Its width in bits.
        bits: u32,
    },
    /// A whole header (skipped when invalid).
    Header(u32),
    /// Every valid header after the last input's header, then the payload.
    Payload,
}

/// A named calculation (`calculations`).
#[derive(Clone, Debug)]
pub struct Calculation {
    /// Its name.
    pub name: String,
    /// The algorithm.
    pub algo: HashAlgo,
    /// What it hashes.
    pub inputs: Vec<CalcInput>,
}

/// A checksum verified by the parser and updated by the deparser.
#[derive(Clone, Debug)]
pub struct Checksum {
    /// Its name.
    pub name: String,
    /// Where the checksum lives.
    pub target: u32,
    /// The calculation.
    pub calc: u32,
    /// Whether the deparser updates it.
    pub update: bool,
    /// Whether the parser verifies it.
    pub verify: bool,
    /// The condition, if any.
    pub cond: Option<Expr>,
}

/// A counter array.
#[derive(Clone, Debug)]
pub struct CounterArray {
    /// Its name.
    pub name: String,
    /// Cells.
    pub size: u32,
    /// Bound to a table (direct counter).
    pub direct_table: Option<String>,
}

/// Whether a meter measures packets or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeterUnit {
    /// Bytes.
    Bytes,
    /// Packets.
    Packets,
}

/// A meter array (two-rate three-colour meters, RFC 2698).
#[derive(Clone, Debug)]
pub struct MeterArray {
    /// Its name.
    pub name: String,
    /// Cells.
    pub size: u32,
    /// Bytes or packets.
    pub unit: MeterUnit,
    /// Rates per meter (2 for trTCM).
    pub rate_count: u32,
    /// Bound to a table (direct meter).
    pub direct_table: Option<String>,
    /// Where a direct meter's colour goes.
    pub result: Option<u32>,
}

/// A register array.
#[derive(Clone, Debug)]
pub struct RegisterArray {
    /// Its name.
    pub name: String,
    /// Cells.
    pub size: u32,
    /// Width of a cell in bits.
    pub bits: u32,
}

/// A field list (for clone, resubmit, recirculate and digests).
#[derive(Clone, Debug)]
pub struct FieldList {
    /// Its id, as primitives name it.
    pub id: u32,
    /// Its name.
    pub name: String,
    /// The fields preserved or reported.
    pub fields: Vec<u32>,
}

/// A parse value set.
#[derive(Clone, Debug)]
pub struct ValueSet {
    /// Its name.
    pub name: String,
    /// The width of its values, without padding.
    pub bits: u32,
}

/// An extern instance.
#[derive(Clone, Debug)]
pub struct ExternInstance {
    /// Its name.
    pub name: String,
    /// Its type (the target must support it).
    pub type_name: String,
}

/// A loaded program.
#[derive(Clone, Debug)]
pub struct Program {
    /// Header types, by id order in the file.
    pub header_types: Vec<HeaderType>,
    /// Header instances (index = engine header id).
    pub headers: Vec<Header>,
    /// Every field of every instance, flat (index = engine field id).
    pub fields: Vec<Field>,
    /// Header stacks.
    pub stacks: Vec<Stack>,
    /// Header unions.
    pub unions: Vec<Union>,
    /// Header union stacks.
    pub union_stacks: Vec<UnionStack>,
    /// Error constants.
    pub errors: Vec<(String, u32)>,
    /// The parser.
    pub parser: Parser,
    /// The deparser.
    pub deparser: Deparser,
    /// Actions (index = engine action id).
    pub actions: Vec<Action>,
    /// The ingress pipeline.
    pub ingress: Pipeline,
    /// The egress pipeline.
    pub egress: Pipeline,
    /// Every table of both pipelines.
    pub tables: Vec<Table>,
    /// Every conditional of both pipelines.
    pub conditionals: Vec<Conditional>,
    /// Action calls outside tables.
    pub action_calls: Vec<(u32, Option<Node>)>,
    /// Action profiles.
    pub action_profiles: Vec<ActionProfile>,
    /// Counter arrays.
    pub counters: Vec<CounterArray>,
    /// Meter arrays.
    pub meters: Vec<MeterArray>,
    /// Register arrays.
    pub registers: Vec<RegisterArray>,
    /// Calculations.
    pub calculations: Vec<Calculation>,
    /// Checksums.
    pub checksums: Vec<Checksum>,
    /// Field lists.
    pub field_lists: Vec<FieldList>,
    /// Learn lists (digests), reported as log lines.
    pub learn_lists: Vec<FieldList>,
    /// Parse value sets.
    pub value_sets: Vec<ValueSet>,
    /// Extern instances.
    pub externs: Vec<ExternInstance>,
    /// The v1model standard metadata fields the switch reads and writes.
    pub std: StdFields,
    /// The `program` attribute, if given.
    pub source: Option<String>,
}

/// Name lookups used while loading.
#[derive(Default)]
pub(crate) struct Names {
    pub(crate) headers: HashMap<String, u32>,
    pub(crate) stacks: HashMap<String, u32>,
    pub(crate) unions: HashMap<String, u32>,
    pub(crate) union_stacks: HashMap<String, u32>,
    pub(crate) actions: HashMap<String, u32>,
    pub(crate) action_ids: HashMap<u64, u32>,
    pub(crate) calculations: HashMap<String, u32>,
    pub(crate) counters: HashMap<String, u32>,
    pub(crate) meters: HashMap<String, u32>,
    pub(crate) registers: HashMap<String, u32>,
    pub(crate) field_lists: HashMap<u64, u32>,
    pub(crate) value_sets: HashMap<String, u32>,
    pub(crate) externs: HashMap<String, u32>,
    pub(crate) errors: HashMap<String, u32>,
    pub(crate) aliases: HashMap<String, (String, String)>,
}

/// The loading context: what is known so far, for resolving names.
pub(crate) struct Ctx {
    pub(crate) names: Names,
    pub(crate) header_types: Vec<HeaderType>,
    pub(crate) headers: Vec<Header>,
    pub(crate) fields: Vec<Field>,
    pub(crate) stacks: Vec<Stack>,
    pub(crate) unions: Vec<Union>,
    pub(crate) union_stacks: Vec<UnionStack>,
    pub(crate) actions: Vec<Action>,
    pub(crate) registers: Vec<RegisterArray>,
    pub(crate) meters: Vec<MeterArray>,
    pub(crate) counters: Vec<CounterArray>,
    pub(crate) value_sets: Vec<ValueSet>,
}

impl Ctx {
    /// The header instance named `name`.
    pub(crate) fn header(&self, at: &At<'_>, name: &str) -> Result<u32, LoadError> {
        self.names
            .headers
            .get(name)
            .copied()
            .ok_or_else(|| at.err(format!("no header instance {name:?}")))
    }

    /// The field `hdr.field`, through `field_aliases`.
    pub(crate) fn field(&self, at: &At<'_>, hdr: &str, field: &str) -> Result<u32, LoadError> {
        let h = self.header(at, hdr)?;
        self.field_of(at, h, field)
    }

    pub(crate) fn field_of(&self, at: &At<'_>, h: u32, field: &str) -> Result<u32, LoadError> {
        let header = &self.headers[h as usize];
        let ty = &self.header_types[header.ty as usize];
        let idx =
            ty.fields.iter().position(|f| f.0 == field).ok_or_else(|| {
                at.err(format!("header {:?} has no field {field:?}", header.name))
            })?;
        Ok(header.first_field + idx as u32)
    }

    /// A `["header", "field"]` reference (also `$valid$`, as a header).
    pub(crate) fn field_ref(&self, at: &At<'_>) -> Result<FieldOrValid, LoadError> {
        let hdr = at.at(0, |a| a.str().map(str::to_owned))?;
        let f = at.at(1, |a| a.str().map(str::to_owned))?;
        if f == "$valid$" {
            if let Some(&h) = self.names.headers.get(&hdr) {
                return Ok(FieldOrValid::Valid(h));
            }
            if let Some(&u) = self.names.unions.get(&hdr) {
                return Ok(FieldOrValid::UnionValid(u));
            }
            return Err(at.err(format!("no header instance {hdr:?}")));
        }
        let full = format!("{hdr}.{f}");
        if let Some((h2, f2)) = self.names.aliases.get(&full) {
            return Ok(FieldOrValid::Field(self.field(at, h2, f2)?));
        }
        Ok(FieldOrValid::Field(self.field(at, &hdr, &f)?))
    }
}

/// A field reference, or a header's hidden validity bit.
pub(crate) enum FieldOrValid {
    Field(u32),
    Valid(u32),
    UnionValid(u32),
}

impl Program {
    /// Loads a program from bmv2 JSON text.
    pub fn load(text: &str) -> Result<Program, LoadError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(LoadError::Json)?;
        let root = Path::Root;
        Program::from_json(At::root(&v, &root))
    }

    fn from_json(at: At<'_>) -> Result<Program, LoadError> {
        if !at.v.is_object() {
            return Err(at.err("expected a JSON object"));
        }
        if at.has("__meta__") {
            at.get("__meta__", |m| {
                m.get("version", |v| {
                    let major = v.at(0, |x| x.u64())?;
                    let minor = v.at(1, |x| x.u64())?;
                    if major != 2 {
                        return Err(LoadError::Version(major, minor));
                    }
                    Ok(())
                })
            })?;
        }
        let mut cx = headers::load(&at)?;
        parser::load_value_sets(&at, &mut cx)?;
        let errors = load_errors(&at, &mut cx)?;
        (cx.counters, cx.meters, cx.registers) = load_arrays(&at, &mut cx)?;
        let calculations = load_calculations(&at, &mut cx)?;
        let field_lists = load_field_lists(&at, "field_lists", &mut cx, true)?;
        let learn_lists = load_field_lists(&at, "learn_lists", &mut cx, false)?;
        let externs = at.each("extern_instances", |i, e| {
            let name = e.get("name", |n| n.str().map(str::to_owned))?;
            let type_name = e.get("type", |n| n.str().map(str::to_owned))?;
            cx.names.externs.insert(name.clone(), i as u32);
            Ok(ExternInstance { name, type_name })
        })?;
        primitives::load_actions(&at, &mut cx)?;
        let parser = parser::load(&at, &cx)?;
        let deparser = parser::load_deparser(&at, &cx)?;
        let pipes = control::load(&at, &cx)?;
        let checksums = at.each("checksums", |_, c| load_checksum(&c, &cx))?;
        let std = headers::std_fields(&cx);
        let source = at.get("program", |p| p.opt_str().map(|s| s.map(str::to_owned)))?;
        let Ctx {
            header_types,
            headers,
            fields,
            stacks,
            unions,
            union_stacks,
            actions,
            value_sets,
            counters,
            meters,
            registers,
            ..
        } = cx;
        Ok(Program {
            header_types,
            headers,
            fields,
            stacks,
            unions,
            union_stacks,
            errors,
            parser,
            deparser,
            actions,
            ingress: pipes.ingress,
            egress: pipes.egress,
            tables: pipes.tables,
            conditionals: pipes.conditionals,
            action_calls: pipes.action_calls,
            action_profiles: pipes.profiles,
            counters,
            meters,
            registers,
            calculations,
            checksums,
            field_lists,
            learn_lists,
            value_sets,
            externs,
            std,
            source,
        })
    }

    /// The table named `name` (its full name, or the last dotted component
    /// when that is unambiguous, as bmv2's CLI allows).
    pub fn table(&self, name: &str) -> Option<u32> {
        find_by_name(self.tables.iter().map(|t| t.name.as_str()), name)
    }

    /// The action named `name` (full or unambiguous short name).
    pub fn action(&self, name: &str) -> Option<u32> {
        find_by_name(self.actions.iter().map(|a| a.name.as_str()), name)
    }

    /// The value of error constant `name`.
    pub fn error_code(&self, name: &str) -> Option<u32> {
        self.errors.iter().find(|e| e.0 == name).map(|e| e.1)
    }

    /// A field by `header.field` name.
    pub fn field_named(&self, name: &str) -> Option<u32> {
        let (h, f) = name.rsplit_once('.')?;
        let hid = self.headers.iter().position(|x| x.name == h)?;
        let hdr = &self.headers[hid];
        let idx = self.header_types[hdr.ty as usize]
            .fields
            .iter()
            .position(|x| x.0 == f)?;
        Some(hdr.first_field + idx as u32)
    }
}

/// Finds `name` among `names`: exactly, or as the unique name whose last
/// dot-separated components equal it.
pub fn find_by_name<'a>(names: impl Iterator<Item = &'a str> + Clone, name: &str) -> Option<u32> {
    if let Some(i) = names.clone().position(|n| n == name) {
        return Some(i as u32);
    }
    let mut found = None;
    for (i, n) in names.enumerate() {
        if n.ends_with(name) && n.as_bytes().get(n.len() - name.len() - 1) == Some(&b'.') {
            if found.is_some() {
                return None;
            }
            found = Some(i as u32);
        }
    }
    found
}

#[cfg(test)]
mod tests;
