//! p4c's STF grammar (`stf_parser.py`'s productions, bmv2stf.py's
//! `direct_cmd`s) over one line's tokens.

use super::lex::{Tok, lex_line};
use super::{
    CmpOp, CountType, CounterCheck, CounterIndex, ExpectedPacket, StfAction, StfError,
    StfErrorKind, StfKey, StfStatement, StfValue,
};
use crate::text::cli::parse_line;

type Result<T> = std::result::Result<T, StfErrorKind>;

/// Parses a whole `.stf` file: one entry per line that holds a statement
/// (blank and `#` lines give none), with its 1-based line number.
pub fn parse_stf(text: &str) -> Vec<std::result::Result<(usize, StfStatement), StfError>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        match lex_line(line).and_then(|toks| statement(&toks)) {
            Ok(None) => {}
            Ok(Some(s)) => out.push(Ok((line_no, s))),
            Err(kind) => out.push(Err(StfError {
                line: line_no,
                kind,
            })),
        }
    }
    out
}

struct Cursor<'a> {
    toks: &'a [Tok],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Result<&Tok> {
        let t = self.toks.get(self.pos).ok_or(StfErrorKind::UnexpectedEnd)?;
        self.pos += 1;
        Ok(t)
    }

    fn unexpected(t: &Tok) -> StfErrorKind {
        let (value, ty) = t.describe();
        StfErrorKind::UnexpectedToken { value, ty }
    }

    fn punct(&mut self, p: &str) -> Result<()> {
        match self.next()? {
            Tok::Punct(q) if *q == p => Ok(()),
            t => Err(Self::unexpected(t)),
        }
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Punct(q)) if *q == p);
        self.pos += usize::from(hit);
        hit
    }

    fn end(&self) -> Result<()> {
        self.peek().map_or(Ok(()), |t| Err(Self::unexpected(t)))
    }

    fn id(&mut self) -> Result<String> {
        match self.next()? {
            Tok::Id(s) => Ok(s.clone()),
            t => Err(Self::unexpected(t)),
        }
    }

    /// `qualified_name : ID | ID '[' INT_CONST_DEC ']' | qualified_name DOT ID`
    fn qualified_name(&mut self) -> Result<String> {
        let mut name = self.id()?;
        if self.eat_punct("[") {
            match self.next()? {
                Tok::Dec(d) => name = format!("{name}[{d}]"),
                t => return Err(Self::unexpected(t)),
            }
            self.punct("]")?;
        }
        while self.eat_punct(".") {
            name.push('.');
            name.push_str(&self.id()?);
        }
        Ok(name)
    }

    /// `number : INT_CONST_DEC | INT_CONST_BIN | TERN_CONST_HEX | INT_CONST_HEX`
    fn number(&mut self) -> Result<String> {
        match self.next()? {
            Tok::Dec(s) | Tok::Hex(s) | Tok::Bin(s) => Ok(s.clone()),
            t => Err(Self::unexpected(t)),
        }
    }

    fn is_number(&self) -> bool {
        matches!(self.peek(), Some(Tok::Dec(_) | Tok::Hex(_) | Tok::Bin(_)))
    }

    /// `action : qualified_name LPAREN args RPAREN`, `arg : ID COLON number`
    fn action(&mut self) -> Result<StfAction> {
        let name = self.qualified_name()?;
        self.punct("(")?;
        let mut args = Vec::new();
        if !self.eat_punct(")") {
            loop {
                let arg = self.id()?;
                self.punct(":")?;
                args.push((arg, self.number()?));
                if self.eat_punct(")") {
                    break;
                }
                self.punct(",")?;
            }
        }
        Ok(StfAction { name, args })
    }

    /// `meter_rate : number_or_float COLON number [meter_rate]`, as the
    /// text bmv2stf.py passes on ("r:b r:b").
    fn meter_rates(&mut self) -> Result<String> {
        let mut rates = Vec::new();
        loop {
            let mut rate = self.number()?;
            if self.eat_punct(".") {
                rate = format!("{rate}.{}", self.number()?);
            }
            self.punct(":")?;
            rates.push(format!("{rate}:{}", self.number()?));
            if self.peek().is_none() {
                return Ok(rates.join(" "));
            }
        }
    }
}

fn u32_of(text: &str) -> Result<u32> {
    text.parse()
        .map_err(|_| StfErrorKind::NumberTooLarge(text.to_string()))
}

fn statement(toks: &[Tok]) -> Result<Option<StfStatement>> {
    let mut c = Cursor { toks, pos: 0 };
    let Some(first) = c.peek() else {
        return Ok(None);
    };
    let Tok::Keyword(kw) = first else {
        return Err(Cursor::unexpected(first));
    };
    let kw = kw.clone();
    c.pos += 1;
    let st = match kw.as_str() {
        "packet" | "expect" => return packet(&kw, &mut c).map(Some),
        "no_packet" => StfStatement::NoPacket,
        "wait" => StfStatement::Wait,
        "remove" => {
            // p4c lexes `all` as an identifier here; take either.
            match c.next()? {
                Tok::Id(a) | Tok::Keyword(a) if a.eq_ignore_ascii_case("all") => {
                    StfStatement::RemoveAll
                }
                t => return Err(Cursor::unexpected(t)),
            }
        }
        "setdefault" => {
            let table = c.qualified_name()?;
            StfStatement::SetDefault {
                table,
                action: c.action()?,
            }
        }
        "add" => add(&mut c)?,
        "check_counter" => check_counter(&mut c)?,
        _ => direct_command(&kw, &mut c)?,
    };
    c.end()?;
    Ok(Some(st))
}

/// `PACKET port packet_data`, `EXPECT port [expect_data]`.
fn packet(kw: &str, c: &mut Cursor<'_>) -> Result<StfStatement> {
    // The port is DATA_DEC: a run of hex digits that are all decimal.
    let port = match c.next()? {
        Tok::Data(d) if d.bytes().all(|b| b.is_ascii_digit()) => u32_of(d)?,
        t => return Err(Cursor::unexpected(t)),
    };
    let mut text = String::new();
    let mut exact = false;
    while let Some(t) = c.peek() {
        if exact {
            // `exact_datum` only ends the data.
            return Err(Cursor::unexpected(t));
        }
        match t {
            Tok::Data(d) => text.push_str(d),
            Tok::Wild if kw == "expect" => text.push('*'),
            Tok::Exact if kw == "expect" => {
                text.push('$');
                exact = true;
            }
            t => return Err(Cursor::unexpected(t)),
        }
        c.pos += 1;
    }
    if kw == "expect" {
        let packet = match text.is_empty() {
            true => None,
            false => Some(ExpectedPacket::parse(&text).ok_or(StfErrorKind::InvalidPacketData)?),
        };
        return Ok(StfStatement::Expect { port, packet });
    }
    if text.is_empty() {
        return Err(StfErrorKind::UnexpectedEnd);
    }
    if text.len() % 2 != 0 {
        return Err(StfErrorKind::OddPacketData(text));
    }
    let data = text
        .as_bytes()
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap_or("zz"), 16));
    let data = data
        .collect::<std::result::Result<Vec<u8>, _>>()
        .map_err(|_| StfErrorKind::OddPacketData(text))?;
    Ok(StfStatement::Packet { port, data })
}

/// `ADD qualified_name [priority] match_list action [EQUAL ID]`
fn add(c: &mut Cursor<'_>) -> Result<StfStatement> {
    let table = c.qualified_name()?;
    let priority = match c.peek() {
        Some(Tok::Dec(d)) => {
            let p = u32_of(d)?;
            c.pos += 1;
            Some(p)
        }
        _ => None,
    };
    // match_list: at least one `name:value`; the action is the first
    // qualified name followed by `(`.
    let mut keys = Vec::new();
    let action = loop {
        let start = c.pos;
        let name = c.qualified_name()?;
        if matches!(c.peek(), Some(Tok::Punct("("))) && !keys.is_empty() {
            c.pos = start;
            break c.action()?;
        }
        c.punct(":")?;
        let value = c.number()?;
        let value = if c.eat_punct("/") {
            StfValue::Prefix {
                value,
                len: c.number()?,
            }
        } else {
            StfValue::Number(value)
        };
        keys.push(StfKey { field: name, value });
    };
    let handle_name = if c.eat_punct("=") {
        Some(c.id()?)
    } else {
        None
    };
    Ok(StfStatement::Add {
        table,
        priority,
        keys,
        action,
        handle_name,
    })
}

/// `CHECK_COUNTER ID LPAREN id_or_index RPAREN [count_type logical_cond number]`
fn check_counter(c: &mut Cursor<'_>) -> Result<StfStatement> {
    let counter = c.id()?;
    c.punct("(")?;
    let index = if c.is_number() {
        CounterIndex::Number(c.number()?)
    } else {
        CounterIndex::Id(c.id()?)
    };
    c.punct(")")?;
    let mut check = CounterCheck {
        count: None,
        op: CmpOp::Eq,
        value: "0".into(),
    };
    if c.peek().is_some() {
        check.count = Some(match c.next()? {
            Tok::Keyword(k) if k == "packets" => CountType::Packets,
            Tok::Keyword(k) if k == "bytes" => CountType::Bytes,
            t => return Err(Cursor::unexpected(t)),
        });
        check.op = match c.next()? {
            Tok::Punct("==") => CmpOp::Eq,
            Tok::Punct("!=") => CmpOp::Ne,
            Tok::Punct("<") => CmpOp::Lt,
            Tok::Punct("<=") => CmpOp::Le,
            Tok::Punct(">") => CmpOp::Gt,
            Tok::Punct(">=") => CmpOp::Ge,
            t => return Err(Cursor::unexpected(t)),
        };
        check.value = c.number()?;
    }
    Ok(StfStatement::CheckCounter {
        counter,
        index,
        check,
    })
}

/// bmv2stf.py's `direct_cmd`s: checked against its grammar, then passed to
/// the CLI parser as the words joined by spaces.
fn direct_command(kw: &str, c: &mut Cursor<'_>) -> Result<StfStatement> {
    let mut words = vec![kw.to_string()];
    // The shapes: `n` number, `q` qualified name, `l` number list, `r` rates.
    let shape = match kw {
        "mirroring_add" | "mirroring_add_mc" | "mc_node_associate" => "nn",
        "mirroring_delete" | "mirroring_get" | "mc_mgrp_create" => "n",
        "mc_node_create" | "mc_node_update" => "nl",
        "counter_read" | "register_read" | "meter_get_rates" => "qn",
        "counter_write" => "qnnn",
        "register_write" => "qnn",
        "register_reset" => "q",
        "meter_set_rates" => "qnr",
        "meter_array_set_rates" => "qr",
        // Any other keyword (`all`, `packets`, `bytes`) cannot start a line.
        _ => {
            return Err(StfErrorKind::UnexpectedToken {
                value: kw.to_string(),
                ty: "keyword",
            });
        }
    };
    for part in shape.chars() {
        match part {
            'n' => words.push(c.number()?),
            'q' => words.push(c.qualified_name()?),
            'l' => {
                words.push(c.number()?);
                while c.is_number() {
                    words.push(c.number()?);
                }
            }
            _ => words.push(c.meter_rates()?),
        }
    }
    let line = words.join(" ");
    let command = parse_line(&line)
        .and_then(|cmd| cmd.ok_or_else(|| crate::text::cli::CliError::UnknownSyntax(line.clone())));
    Ok(StfStatement::Cli { line, command })
}
