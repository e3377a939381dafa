//! bmv2stf.py's translation of `add` and `setdefault` into
//! simple_switch_CLI tokens (`TableKeyInstance`, `makeMask`, `makeLpm`,
//! `tableByName`, `actionByName`, `BMV2ActionArguments`), over name lists
//! the engine passes from the program, so the engine installs exactly the
//! entries p4c's bmv2 runner would.
//!
//! Key field names are the JSON key's `name`, or its `target` joined with
//! `.`, as bmv2stf.py reads them. Match kinds are the JSON's `match_type`
//! strings; bmv2stf.py knows `exact`, `lpm`, `ternary` and `valid` only, and
//! a table with any other kind (`range`) cannot take an `add`.

use thiserror::Error;

use super::{StfAction, StfKey, StfValue};

/// Why an `add`/`setdefault` cannot be applied; texts are bmv2stf.py's
/// exceptions except where marked.
#[derive(Clone, PartialEq, Eq, Debug, Error)]
pub enum ResolveError {
    /// No table of that name or suffix.
    #[error("Could not find table {0}")]
    NoTable(String),
    /// Two tables end with the name.
    #[error("Table name {name} is ambiguous between {first} and {second}")]
    AmbiguousTable {
        /// The name written.
        name: String,
        /// One candidate.
        first: String,
        /// Another.
        second: String,
    },
    /// The table has no action of that name or suffix.
    #[error("No action {action} in table {table}")]
    NoAction {
        /// The action written.
        action: String,
        /// The table.
        table: String,
    },
    /// Two of the table's actions end with the name.
    #[error("Ambiguous action name {action} in {table}")]
    AmbiguousAction {
        /// The action written.
        action: String,
        /// The table.
        table: String,
    },
    /// No key field matches the name.
    #[error("Unexpected key field {0}")]
    UnexpectedKeyField(String),
    /// The table has a key kind bmv2stf.py does not handle.
    #[error("Unexpected key type {0}")]
    UnexpectedKeyType(String),
    /// A ternary key written in decimal (it cannot carry `*`).
    #[error("Decimal value {0} not supported for ternary key")]
    DecimalTernary(String),
    /// The action has no parameter of that name.
    #[error("Unexpected action arg {0}")]
    UnexpectedActionArg(String),
    /// (ernic's wording: bmv2stf.py raises KeyError) A parameter not given.
    #[error("Missing action arg {0}")]
    MissingActionArg(String),
    /// (ernic's wording: bmv2stf.py raises TypeError) An `add` without a
    /// priority for a ternary table.
    #[error("Table {0} is ternary, but the add has no priority")]
    MissingPriority(String),
    /// (ernic's wording: bmv2stf.py raises on it) `value/len` for a key
    /// that is not lpm.
    #[error("Prefix value {value} for {kind} key field {field}")]
    PrefixNotLpm {
        /// The field.
        field: String,
        /// The value as written.
        value: String,
        /// The field's kind.
        kind: String,
    },
}

/// The priority bmv2stf.py passes to bmv2 for an STF priority: `10000 -
/// prio` (in STF a larger number wins, in bmv2's CLI a smaller one).
/// bmv2stf.py appends it only for tables whose match type is `ternary`.
pub fn bmv2_priority(stf_priority: u32) -> i64 {
    10000 - i64::from(stf_priority)
}

/// The CLI token of a key field an `add` does not mention
/// (`TableKeyInstance.__init__`).
pub fn default_match_token(kind: &str) -> Result<&'static str, ResolveError> {
    match kind {
        "ternary" => Ok("0&&&0"),
        "lpm" => Ok("0/0"),
        "exact" | "valid" => Ok("0"),
        other => Err(ResolveError::UnexpectedKeyType(other.to_string())),
    }
}

/// Finds the key field an STF key name means (`TableKeyInstance.set`):
/// `a$3.b` is `a[3].b`; then the name itself, `name$`, `name.$valid$`,
/// `x.valid` as `x.$valid$`, a field ending in `.name` (or `.name$`), and
/// `valid` for a lone `$valid$` field.
pub fn find_key_field(name: &str, fields: &[&str]) -> Result<usize, ResolveError> {
    let mut key = stack_index(name);
    let has = |k: &str| fields.contains(&k);
    let mut found = true;
    if has(&key) {
    } else if has(&format!("{key}$")) {
        key.push('$');
    } else if has(&format!("{key}.$valid$")) {
        key.push_str(".$valid$");
    } else if let Some(alt) = key
        .strip_suffix("valid")
        .filter(|_| key.ends_with(".valid"))
        .map(|h| format!("{h}$valid$"))
    {
        found = has(&alt);
        if found {
            key = alt;
        }
    } else {
        found = false;
    }
    if !found {
        for f in fields {
            let suffix = f.ends_with(&format!(".{key}")) || f.ends_with(&format!(".{key}$"));
            if suffix || (key == "valid" && f.ends_with(".$valid$")) {
                key = f.to_string();
                found = true;
            }
        }
    }
    if !found && key == "valid" && has("$valid$") {
        key = "$valid$".into();
    }
    fields
        .iter()
        .position(|f| *f == key)
        .ok_or(ResolveError::UnexpectedKeyField(key))
}

/// `re.match("(.*)\$([0-9]+)(.*)")`: the last `$` followed by digits
/// becomes `[digits]`.
fn stack_index(name: &str) -> String {
    let b = name.as_bytes();
    let at = (0..b.len())
        .rev()
        .find(|&i| b[i] == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit));
    let Some(at) = at else {
        return name.to_string();
    };
    let digits = b[at + 1..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let end = at + 1 + digits;
    format!("{}[{}]{}", &name[..at], &name[at + 1..end], &name[end..])
}

/// The CLI token for an STF key value of `kind` (`makeMask` for ternary,
/// `makeLpm` for lpm, the value itself otherwise).
///
/// Ternary: `0x12**` becomes `0x1200&&&0xFF00` (`0b1*` likewise with `1`
/// mask bits); decimal is refused. Lpm: the digits that are not `*` give the
/// prefix length (`0x0a******` is `0x0a000000/8`); `value/len` is taken as
/// written (bmv2stf.py fails on it). For a decimal lpm value bmv2stf.py
/// writes `0x0x...` (a bug the CLI then refuses); here it is the value in
/// hex with four bits per hex digit, which is what that code means.
pub fn match_token(field: &str, value: &StfValue, kind: &str) -> Result<String, ResolveError> {
    let v = match value {
        StfValue::Number(v) => v,
        StfValue::Prefix { value, len } if kind == "lpm" => return Ok(format!("{value}/{len}")),
        StfValue::Prefix { value, .. } => {
            return Err(ResolveError::PrefixNotLpm {
                field: field.into(),
                value: value.clone(),
                kind: kind.into(),
            });
        }
    };
    match kind {
        "ternary" => {
            let (prefix, one) = if v.starts_with("0x") {
                ("0x", 'F')
            } else if v.starts_with("0b") {
                ("0b", '1')
            } else if v.starts_with("0o") {
                ("0o", '7')
            } else {
                return Err(ResolveError::DecimalTernary(v.clone()));
            };
            let body = &v[2..];
            let mask: String = body
                .chars()
                .map(|c| if c == '*' { '0' } else { one })
                .collect();
            Ok(format!(
                "{prefix}{}&&&{prefix}{mask}",
                body.replace('*', "0")
            ))
        }
        "lpm" => {
            let (text, per_digit) = if v.starts_with("0x") {
                (v.clone(), 4)
            } else if v.starts_with("0b") {
                (v.clone(), 1)
            } else if v.starts_with("0o") {
                (v.clone(), 3)
            } else {
                (format!("0x{}", decimal_to_hex(v)), 4)
            };
            let digits = text.len() - 2 - text.matches('*').count();
            Ok(format!("{}/{}", text.replace('*', "0"), digits * per_digit))
        }
        _ => Ok(v.clone()),
    }
}

/// A decimal digit string in lower-case hex (no prefix), any length.
fn decimal_to_hex(dec: &str) -> String {
    let mut nibbles: Vec<u8> = vec![0];
    for d in dec.bytes().filter(u8::is_ascii_digit) {
        let mut carry = u32::from(d - b'0');
        for n in nibbles.iter_mut().rev() {
            let v = u32::from(*n) * 10 + carry;
            *n = (v & 0xf) as u8;
            carry = v >> 4;
        }
        while carry > 0 {
            nibbles.insert(0, (carry & 0xf) as u8);
            carry >>= 4;
        }
    }
    nibbles
        .iter()
        .map(|&n| char::from_digit(u32::from(n), 16).unwrap_or('0'))
        .collect()
}

/// The CLI match tokens of an `add`, in key order: each given key set on
/// its field, the rest at their defaults. `fields` are `(name, kind)`.
pub fn entry_match_tokens(
    keys: &[StfKey],
    fields: &[(&str, &str)],
) -> Result<Vec<String>, ResolveError> {
    let mut tokens = fields
        .iter()
        .map(|(_, kind)| default_match_token(kind).map(String::from))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
    for k in keys {
        let i = find_key_field(&k.field, &names)?;
        tokens[i] = match_token(fields[i].0, &k.value, fields[i].1)?;
    }
    Ok(tokens)
}

/// The action's argument values in parameter order (`BMV2ActionArguments`).
pub fn action_params(action: &StfAction, params: &[&str]) -> Result<Vec<String>, ResolveError> {
    let mut values: Vec<Option<String>> = vec![None; params.len()];
    for (name, value) in &action.args {
        let i = params
            .iter()
            .position(|p| p == name)
            .ok_or_else(|| ResolveError::UnexpectedActionArg(name.clone()))?;
        values[i] = Some(value.clone());
    }
    values
        .into_iter()
        .zip(params)
        .map(|(v, p)| v.ok_or_else(|| ResolveError::MissingActionArg(p.to_string())))
        .collect()
}

/// `tableByName`: the exact name, else the one table whose name ends with it.
pub fn find_table(name: &str, tables: &[&str]) -> Result<usize, ResolveError> {
    if let Some(i) = tables.iter().position(|t| *t == name) {
        return Ok(i);
    }
    let mut found: Option<usize> = None;
    for (i, t) in tables.iter().enumerate() {
        if t.ends_with(name) {
            if let Some(first) = found {
                let (first, second) = (tables[first].to_string(), t.to_string());
                return Err(ResolveError::AmbiguousTable {
                    name: name.into(),
                    first,
                    second,
                });
            }
            found = Some(i);
        }
    }
    found.ok_or_else(|| ResolveError::NoTable(name.into()))
}

/// `actionByName`: among a table's actions, the exact name, else the one
/// ending with it.
pub fn find_action(name: &str, table: &str, actions: &[&str]) -> Result<usize, ResolveError> {
    if let Some(i) = actions.iter().position(|a| *a == name) {
        return Ok(i);
    }
    let mut hits = actions
        .iter()
        .enumerate()
        .filter(|(_, a)| a.ends_with(name));
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Ok(i),
        (Some(_), Some(_)) => Err(ResolveError::AmbiguousAction {
            action: name.into(),
            table: table.into(),
        }),
        _ => Err(ResolveError::NoAction {
            action: name.into(),
            table: table.into(),
        }),
    }
}

/// The simple_switch_CLI line bmv2stf.py sends for an `add`
/// (`parse_table_add`): `table_add TABLE ACTION KEYS => PARAMS`, plus the
/// converted priority ([`bmv2_priority`]) when the table's match type is
/// `ternary` (and only then: for a `range` table the CLI then asks for one).
/// Names are the resolved full names; tokens come from
/// [`entry_match_tokens`] and [`action_params`].
pub fn table_add_line(
    table: &str,
    action: &str,
    match_tokens: &[String],
    params: &[String],
    priority: Option<u32>,
    table_match_type: &str,
) -> Result<String, ResolveError> {
    let mut line = format!(
        "table_add {table} {action} {} => {}",
        match_tokens.join(" "),
        params.join(" ")
    );
    if table_match_type == "ternary" {
        let p = priority.ok_or_else(|| ResolveError::MissingPriority(table.to_string()))?;
        line.push_str(&format!(" {}", bmv2_priority(p)));
    }
    Ok(line)
}

/// The line bmv2stf.py sends for a `setdefault` (`parse_table_set_default`):
/// the table as written in the STF file, the resolved action, its params.
pub fn table_set_default_line(table: &str, action: &str, params: &[String]) -> String {
    let mut line = format!("table_set_default {table} {action}");
    for p in params {
        line.push(' ');
        line.push_str(p);
    }
    line
}
