//! The two request bodies the server reads, `CompleteMultipartUpload` and
//! `Delete`, from untrusted clients: a careful minimal tokenizer (elements,
//! attributes skipped, text with the five predefined entities and `&#NN;` /
//! `&#xHH;` character references, an optional `<?xml …?>` declaration),
//! then a reader per body that checks names, counts and values.
//!
//! Refused with [`XmlError`] (S3 `MalformedXML`): a body over its size cap,
//! nesting deeper than [`MAX_DEPTH`], mismatched or unclosed tags, comments,
//! CDATA, `DOCTYPE` (so no entity is ever defined or expanded), characters
//! XML 1.0 does not have (NUL, C0 controls, U+FFFE/U+FFFF), processing
//! instructions after the start, unknown entities, references to a non-XML
//! character, more than [`MAX_PARTS`] parts or [`MAX_DELETE_OBJECTS`] objects,
//! text outside the root, and values out of range. Nothing panics and every
//! allocation is bounded by the body's (capped) length.

use thiserror::Error;

/// `CompleteMultipartUpload` may name at most this many parts (S3's limit).
pub const MAX_PARTS: usize = 10_000;
/// `Delete` may name at most this many objects (S3's limit).
pub const MAX_DELETE_OBJECTS: usize = 1000;
/// The largest `CompleteMultipartUpload` body read (10 000 parts of ~200 bytes).
pub const MAX_COMPLETE_BODY: usize = 2 << 20;
/// The largest `Delete` body read (1000 keys of 1024 bytes, some escaped).
pub const MAX_DELETE_BODY: usize = 2 << 20;
/// The deepest nesting either body has is 3; anything past this is refused.
pub const MAX_DEPTH: usize = 4;
/// The longest object key S3 allows, in bytes.
pub const MAX_KEY_LEN: usize = 1024;
/// The longest `ETag` or `VersionId` value read, in bytes.
pub const MAX_VALUE_LEN: usize = 1024;

/// Why a request body was refused; every one answers `MalformedXML`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum XmlError {
    /// The body is larger than its cap: refused before reading it.
    #[error("body is {len} bytes, over the {max} this request may have")]
    TooLarge {
        /// Its length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// Not well-formed where the tokenizer stopped.
    #[error("malformed XML at byte {at}: {reason}")]
    Syntax {
        /// The offset.
        at: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("elements nest deeper than {max} at byte {at}")]
    TooDeep {
        /// The offset.
        at: usize,
        /// The limit.
        max: usize,
    },
    /// An element this body does not have there.
    #[error("unexpected element <{name}> in <{parent}>")]
    Unexpected {
        /// The element.
        name: String,
        /// Its parent (empty for the root).
        parent: &'static str,
    },
    /// A required element is missing or given twice.
    #[error("<{parent}> needs exactly one <{name}>")]
    Cardinality {
        /// The element.
        name: &'static str,
        /// Its parent.
        parent: &'static str,
    },
    /// More entries than S3 allows.
    #[error("more than {max} <{name}> elements")]
    TooMany {
        /// The element.
        name: &'static str,
        /// The limit.
        max: usize,
    },
    /// An element's value is out of range or malformed.
    #[error("<{name}> has a bad value: {reason}")]
    Value {
        /// The element.
        name: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

impl XmlError {
    /// The S3 error code: always `MalformedXML`.
    pub fn s3_code(&self) -> &'static str {
        "MalformedXML"
    }
    /// The HTTP status: 400.
    pub fn http_status(&self) -> u16 {
        400
    }
}

/// One element: its name, its text (entities decoded), its children.
#[derive(Debug, Default)]
struct Node {
    name: String,
    text: String,
    children: Vec<Node>,
}

fn syntax(at: usize, reason: &'static str) -> XmlError {
    XmlError::Syntax { at, reason }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':') || b >= 0x80
}

fn is_xml_char(c: u32) -> bool {
    matches!(c, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x1_0000..=0x10_FFFF)
}

/// Decodes `&…;` at `s[at..]` (which starts with `&`) into `out`; returns the
/// bytes consumed.
fn entity(s: &str, at: usize, out: &mut String) -> Result<usize, XmlError> {
    let rest = &s.as_bytes()[at..];
    // The longest entity is `&#x10FFFF;` (10 bytes); look no further.
    let end = rest
        .iter()
        .take(12)
        .position(|&b| b == b';')
        .ok_or_else(|| syntax(at, "entity without ';' within 12 bytes"))?;
    let body = &rest[1..end];
    let c = match body {
        b"amp" => '&',
        b"lt" => '<',
        b"gt" => '>',
        b"quot" => '"',
        b"apos" => '\'',
        [b'#', b'x', hex @ ..] if !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit) => {
            num(hex, 16, at)?
        }
        [b'#', dec @ ..] if !dec.is_empty() && dec.iter().all(u8::is_ascii_digit) => {
            num(dec, 10, at)?
        }
        _ => return Err(syntax(at, "unknown entity")),
    };
    out.push(c);
    Ok(end + 1)
}

fn num(digits: &[u8], radix: u32, at: usize) -> Result<char, XmlError> {
    let mut v: u32 = 0;
    for &d in digits {
        // Digits were checked; to_digit cannot fail.
        let d = char::from(d).to_digit(radix).unwrap_or(0);
        v = v
            .checked_mul(radix)
            .and_then(|v| v.checked_add(d))
            .ok_or_else(|| syntax(at, "character reference out of range"))?;
    }
    if !is_xml_char(v) {
        return Err(syntax(at, "character reference to a non-XML character"));
    }
    char::from_u32(v).ok_or_else(|| syntax(at, "character reference out of range"))
}

/// Parses `s` into its root element.
fn parse_tree(s: &str, max: usize) -> Result<Node, XmlError> {
    if s.len() > max {
        return Err(XmlError::TooLarge { len: s.len(), max });
    }
    // XML 1.0 has no NUL and no other C0 control but tab, LF and CR, raw or
    // referenced: refuse them here once, so text never carries them.
    if let Some((at, _)) = s.char_indices().find(|&(_, c)| !is_xml_char(u32::from(c))) {
        return Err(syntax(at, "a character XML 1.0 does not have"));
    }
    let b = s.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // An optional BOM and declaration.
    if s.starts_with('\u{feff}') {
        i = 3;
    }
    if s[i..].starts_with("<?xml") {
        let end = s[i..]
            .find("?>")
            .ok_or_else(|| syntax(i, "unterminated XML declaration"))?;
        i += end + 2;
    }
    let mut stack: Vec<Node> = Vec::new();
    let mut root: Option<Node> = None;
    loop {
        if stack.is_empty() {
            skip_ws(&mut i);
            if i == b.len() {
                break;
            }
            if root.is_some() {
                return Err(syntax(i, "content after the root element"));
            }
            if b[i] != b'<' {
                return Err(syntax(i, "text outside the root element"));
            }
        }
        if i >= b.len() {
            return Err(syntax(i, "unclosed element at end of body"));
        }
        if b[i] != b'<' {
            // Text up to the next tag, entities decoded.
            let top = stack.last_mut().ok_or_else(|| syntax(i, "text outside"))?;
            while i < b.len() && b[i] != b'<' {
                match b[i] {
                    b'&' => i += entity(s, i, &mut top.text)?,
                    b'>' => return Err(syntax(i, "raw '>' in text")),
                    _ => {
                        let next = s[i..].find(['<', '&', '>']).map_or(b.len(), |n| i + n);
                        top.text.push_str(&s[i..next]);
                        i = next;
                    }
                }
            }
            continue;
        }
        // A tag.
        let at = i;
        i += 1;
        match b.get(i) {
            Some(b'!') => return Err(syntax(at, "comments, CDATA and DOCTYPE are refused")),
            Some(b'?') => return Err(syntax(at, "processing instruction")),
            Some(b'/') => {
                i += 1;
                let start = i;
                while i < b.len() && is_name_byte(b[i]) {
                    i += 1;
                }
                let name = &s[start..i];
                skip_ws(&mut i);
                if b.get(i) != Some(&b'>') {
                    return Err(syntax(i, "end tag without '>'"));
                }
                i += 1;
                let node = stack
                    .pop()
                    .ok_or_else(|| syntax(at, "end tag without start"))?;
                if node.name != name {
                    return Err(syntax(at, "end tag does not match its start tag"));
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(node),
                    None => root = Some(node),
                }
            }
            _ => {
                let start = i;
                while i < b.len() && is_name_byte(b[i]) {
                    i += 1;
                }
                if i == start {
                    return Err(syntax(at, "tag without a name"));
                }
                let name = &s[start..i];
                // Attributes: name="value" or name='value', skipped (xmlns).
                loop {
                    let ws = i;
                    skip_ws(&mut i);
                    match b.get(i) {
                        Some(b'>') | Some(b'/') => break,
                        Some(_) if i > ws => {}
                        _ => return Err(syntax(i, "malformed start tag")),
                    }
                    let a = i;
                    while i < b.len() && is_name_byte(b[i]) {
                        i += 1;
                    }
                    if i == a || b.get(i) != Some(&b'=') {
                        return Err(syntax(i, "attribute without '='"));
                    }
                    i += 1;
                    let q = *b
                        .get(i)
                        .ok_or_else(|| syntax(i, "attribute without value"))?;
                    if q != b'"' && q != b'\'' {
                        return Err(syntax(i, "attribute value not quoted"));
                    }
                    let close = b[i + 1..]
                        .iter()
                        .position(|&c| c == q)
                        .ok_or_else(|| syntax(i, "unterminated attribute value"))?;
                    if b[i + 1..i + 1 + close].contains(&b'<') {
                        return Err(syntax(i, "'<' in attribute value"));
                    }
                    i += close + 2;
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(XmlError::TooDeep { at, max: MAX_DEPTH });
                }
                let node = Node {
                    name: name.to_owned(),
                    ..Node::default()
                };
                if b.get(i) == Some(&b'/') {
                    if b.get(i + 1) != Some(&b'>') {
                        return Err(syntax(i, "'/' not followed by '>'"));
                    }
                    i += 2;
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(node),
                        None => root = Some(node),
                    }
                } else {
                    i += 1;
                    stack.push(node);
                }
            }
        }
    }
    root.ok_or_else(|| syntax(0, "no root element"))
}

/// The children of a container may be separated by whitespace only.
fn container(n: &Node, name: &'static str) -> Result<(), XmlError> {
    if n.text.bytes().all(|b| b.is_ascii_whitespace()) {
        Ok(())
    } else {
        Err(XmlError::Value {
            name,
            reason: "text in a container element",
        })
    }
}

/// A leaf's text: no child elements, at most `max` bytes.
fn leaf<'a>(n: &'a Node, name: &'static str, max: usize) -> Result<&'a str, XmlError> {
    if !n.children.is_empty() {
        return Err(XmlError::Unexpected {
            name: n.children[0].name.clone(),
            parent: name,
        });
    }
    if n.text.len() > max {
        return Err(XmlError::Value {
            name,
            reason: "too long",
        });
    }
    Ok(&n.text)
}

fn set<'a>(
    slot: &mut Option<&'a str>,
    v: &'a str,
    name: &'static str,
    parent: &'static str,
) -> Result<(), XmlError> {
    if slot.replace(v).is_some() {
        return Err(XmlError::Cardinality { name, parent });
    }
    Ok(())
}

fn root<'a>(n: &'a Node, name: &'static str) -> Result<&'a Node, XmlError> {
    if n.name != name {
        return Err(XmlError::Unexpected {
            name: n.name.clone(),
            parent: "",
        });
    }
    container(n, name)?;
    Ok(n)
}

/// One `Part` of `CompleteMultipartUpload`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedPart {
    /// `PartNumber`, 1..=10000.
    pub part_number: u16,
    /// `ETag` as sent (quotes and all; the caller compares it).
    pub etag: String,
}

/// The body of CompleteMultipartUpload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompleteMultipartUpload {
    /// The parts in the order sent (the caller checks they ascend).
    pub parts: Vec<CompletedPart>,
}

impl CompleteMultipartUpload {
    /// Reads the body. `Checksum*` elements of a part are accepted and ignored.
    pub fn parse(body: &str) -> Result<Self, XmlError> {
        let tree = parse_tree(body, MAX_COMPLETE_BODY)?;
        let r = root(&tree, "CompleteMultipartUpload")?;
        if r.children.len() > MAX_PARTS {
            return Err(XmlError::TooMany {
                name: "Part",
                max: MAX_PARTS,
            });
        }
        let mut parts = Vec::with_capacity(r.children.len());
        for p in &r.children {
            if p.name != "Part" {
                return Err(XmlError::Unexpected {
                    name: p.name.clone(),
                    parent: "CompleteMultipartUpload",
                });
            }
            container(p, "Part")?;
            let (mut num, mut etag) = (None, None);
            for c in &p.children {
                match c.name.as_str() {
                    "PartNumber" => set(&mut num, leaf(c, "PartNumber", 5)?, "PartNumber", "Part")?,
                    "ETag" => set(&mut etag, leaf(c, "ETag", MAX_VALUE_LEN)?, "ETag", "Part")?,
                    n if n.starts_with("Checksum") => {
                        leaf(c, "Checksum", MAX_VALUE_LEN)?;
                    }
                    _ => {
                        return Err(XmlError::Unexpected {
                            name: c.name.clone(),
                            parent: "Part",
                        });
                    }
                }
            }
            let num = num.ok_or(XmlError::Cardinality {
                name: "PartNumber",
                parent: "Part",
            })?;
            let etag = etag.ok_or(XmlError::Cardinality {
                name: "ETag",
                parent: "Part",
            })?;
            let part_number = num
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|n| (1..=MAX_PARTS as u16).contains(n))
                .ok_or(XmlError::Value {
                    name: "PartNumber",
                    reason: "not a decimal in 1..=10000",
                })?;
            parts.push(CompletedPart {
                part_number,
                etag: etag.trim().to_owned(),
            });
        }
        Ok(CompleteMultipartUpload { parts })
    }
}

/// One `Object` of `Delete`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectIdentifier {
    /// `Key`, 1..=1024 bytes, exactly as sent (not trimmed).
    pub key: String,
    /// `VersionId`.
    pub version_id: Option<String>,
}

/// The body of DeleteObjects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delete {
    /// The objects in the order sent.
    pub objects: Vec<ObjectIdentifier>,
    /// `Quiet`: answer only the errors.
    pub quiet: bool,
}

impl Delete {
    /// Reads the body. `ETag`, `LastModifiedTime` and `Size` of an object
    /// (conditional deletes) are accepted and ignored.
    pub fn parse(body: &str) -> Result<Self, XmlError> {
        let tree = parse_tree(body, MAX_DELETE_BODY)?;
        let r = root(&tree, "Delete")?;
        let mut objects = Vec::new();
        let mut quiet = None;
        for o in &r.children {
            match o.name.as_str() {
                "Quiet" => {
                    let v = match leaf(o, "Quiet", 8)?.trim() {
                        "true" => "true",
                        "false" => "false",
                        _ => {
                            return Err(XmlError::Value {
                                name: "Quiet",
                                reason: "neither true nor false",
                            });
                        }
                    };
                    set(&mut quiet, v, "Quiet", "Delete")?;
                }
                "Object" => {
                    if objects.len() == MAX_DELETE_OBJECTS {
                        return Err(XmlError::TooMany {
                            name: "Object",
                            max: MAX_DELETE_OBJECTS,
                        });
                    }
                    container(o, "Object")?;
                    let (mut key, mut version) = (None, None);
                    for c in &o.children {
                        match c.name.as_str() {
                            "Key" => set(&mut key, leaf(c, "Key", MAX_KEY_LEN)?, "Key", "Object")?,
                            "VersionId" => set(
                                &mut version,
                                leaf(c, "VersionId", MAX_VALUE_LEN)?,
                                "VersionId",
                                "Object",
                            )?,
                            "ETag" | "LastModifiedTime" | "Size" => {
                                leaf(c, "ETag", MAX_VALUE_LEN)?;
                            }
                            _ => {
                                return Err(XmlError::Unexpected {
                                    name: c.name.clone(),
                                    parent: "Object",
                                });
                            }
                        }
                    }
                    let key = key.ok_or(XmlError::Cardinality {
                        name: "Key",
                        parent: "Object",
                    })?;
                    if key.is_empty() {
                        return Err(XmlError::Value {
                            name: "Key",
                            reason: "empty",
                        });
                    }
                    objects.push(ObjectIdentifier {
                        key: key.to_owned(),
                        version_id: version.map(str::to_owned),
                    });
                }
                _ => {
                    return Err(XmlError::Unexpected {
                        name: o.name.clone(),
                        parent: "Delete",
                    });
                }
            }
        }
        if objects.is_empty() {
            return Err(XmlError::Cardinality {
                name: "Object",
                parent: "Delete",
            });
        }
        Ok(Delete {
            objects,
            quiet: quiet == Some("true"),
        })
    }
}
