//! The STF lexer of p4c's `tools/stf/stf_lexer.py` (with bmv2stf.py's extra
//! keywords), for one line: a keyword state for the first identifier, then
//! either the ordinary tokens or, after `packet`/`expect`, packet data.

use super::StfErrorKind;

/// A token and the text it stands for.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) enum Tok {
    /// A keyword (lower-cased), only as a line's first identifier, or
    /// `packets`/`bytes` anywhere.
    Keyword(String),
    /// An identifier (`[a-zA-Z_$][a-zA-Z_$0-9]*` or `"quoted"`).
    Id(String),
    /// `[0-9]+`
    Dec(String),
    /// `0[xX][0-9a-fA-F*]+` (p4c's TERN_CONST_HEX and INT_CONST_HEX).
    Hex(String),
    /// `0[bB][*01]+`
    Bin(String),
    /// One of `: , . [ ] ( ) / = == != < <= > >=`.
    Punct(&'static str),
    /// Packet data: a run of hex digits.
    Data(String),
    /// Packet data: `*`.
    Wild,
    /// Packet data: `$`.
    Exact,
}

impl Tok {
    /// The token's text and ply type name, for "Unexpected token" messages.
    pub(super) fn describe(&self) -> (String, &'static str) {
        match self {
            Tok::Keyword(k) => (k.clone(), "keyword"),
            Tok::Id(s) => (s.clone(), "ID"),
            Tok::Dec(s) => (s.clone(), "INT_CONST_DEC"),
            Tok::Hex(s) => (s.clone(), "INT_CONST_HEX"),
            Tok::Bin(s) => (s.clone(), "INT_CONST_BIN"),
            Tok::Punct(p) => (p.to_string(), "punctuation"),
            Tok::Data(s) => (s.clone(), "DATA_HEX"),
            Tok::Wild => ("*".into(), "DATA_TERN"),
            Tok::Exact => ("$".into(), "DATA_EXACT"),
        }
    }
}

/// bmv2's STF keywords: p4c's base list plus bmv2stf.py's direct commands.
pub(super) const KEYWORDS: &[&str] = &[
    "add",
    "all",
    "bytes",
    "check_counter",
    "expect",
    "no_packet",
    "packet",
    "packets",
    "remove",
    "setdefault",
    "wait",
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_update",
    "mc_node_associate",
    "counter_read",
    "counter_write",
    "register_read",
    "register_write",
    "register_reset",
    "meter_get_rates",
    "meter_set_rates",
    "meter_array_set_rates",
];

fn is_id_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$'
}

fn is_id_char(c: u8) -> bool {
    is_id_start(c) || c.is_ascii_digit()
}

/// The length of the run of bytes from `i` satisfying `f`.
fn run(s: &[u8], i: usize, f: impl Fn(u8) -> bool) -> usize {
    s[i..].iter().take_while(|&&c| f(c)).count()
}

/// Lexes one line (without its newline).
pub(super) fn lex_line(line: &str) -> Result<Vec<Tok>, StfErrorKind> {
    let s = line.as_bytes();
    let mut out = Vec::new();
    let mut keyword_state = true;
    let mut packet_data = false;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        if packet_data {
            // p4c's DATA_DEC rule comes first: a digit run, else a hex run
            // ("10ab" is DATA_DEC 10 then DATA_HEX ab).
            let n = if c.is_ascii_digit() {
                run(s, i, |c| c.is_ascii_digit())
            } else {
                run(s, i, |c| c.is_ascii_hexdigit())
            };
            if n > 0 {
                out.push(Tok::Data(line[i..i + n].to_string()));
                i += n;
            } else if c == b'*' {
                out.push(Tok::Wild);
                i += 1;
            } else if c == b'$' {
                out.push(Tok::Exact);
                i += 1;
            } else {
                // No comment rule in p4c's packet-data state either.
                return Err(StfErrorKind::InvalidPacketData);
            }
            continue;
        }
        if c == b'#' {
            break;
        }
        // Numbers, in p4c's rule order: hex (with `*`), binary, decimal.
        let prefixed =
            |p: u8| c == b'0' && s.get(i + 1).is_some_and(|&x| x.to_ascii_lowercase() == p);
        if prefixed(b'x') && run(s, i + 2, |c| c.is_ascii_hexdigit() || c == b'*') > 0 {
            let n = 2 + run(s, i + 2, |c| c.is_ascii_hexdigit() || c == b'*');
            out.push(Tok::Hex(line[i..i + n].to_string()));
            i += n;
            continue;
        }
        if prefixed(b'b') && run(s, i + 2, |c| matches!(c, b'0' | b'1' | b'*')) > 0 {
            let n = 2 + run(s, i + 2, |c| matches!(c, b'0' | b'1' | b'*'));
            out.push(Tok::Bin(line[i..i + n].to_string()));
            i += n;
            continue;
        }
        if c.is_ascii_digit() {
            let n = run(s, i, |c| c.is_ascii_digit());
            out.push(Tok::Dec(line[i..i + n].to_string()));
            i += n;
            continue;
        }
        if is_id_start(c) {
            let n = run(s, i, is_id_char);
            let word = &line[i..i + n];
            let lower = word.to_ascii_lowercase();
            let is_kw = KEYWORDS.contains(&lower.as_str());
            if keyword_state {
                keyword_state = false;
                packet_data = lower == "packet" || lower == "expect";
                out.push(if is_kw {
                    Tok::Keyword(lower)
                } else {
                    Tok::Id(word.to_string())
                });
            } else if lower == "packets" || lower == "bytes" {
                out.push(Tok::Keyword(lower));
            } else {
                out.push(Tok::Id(word.to_string()));
            }
            i += n;
            continue;
        }
        if c == b'"' {
            let n = s[i + 1..]
                .iter()
                .position(|&c| c == b'"')
                .filter(|&n| n > 0);
            let Some(n) = n else {
                return Err(StfErrorKind::IllegalCharacter('"'));
            };
            out.push(Tok::Id(line[i + 1..i + 1 + n].to_string()));
            i += n + 2;
            continue;
        }
        let two = line.get(i..i + 2).unwrap_or("");
        if let Some(p) = ["==", "!=", "<=", ">="].into_iter().find(|p| *p == two) {
            out.push(Tok::Punct(p));
            i += 2;
            continue;
        }
        let one = [":", ",", ".", "[", "]", "(", ")", "/", "=", "<", ">"];
        match one.into_iter().find(|p| p.as_bytes()[0] == c) {
            Some(p) => out.push(Tok::Punct(p)),
            None => {
                return Err(StfErrorKind::IllegalCharacter(
                    line[i..].chars().next().unwrap_or('?'),
                ));
            }
        }
        i += 1;
    }
    Ok(out)
}
