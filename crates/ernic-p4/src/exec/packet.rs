//! The parser and deparser at run time, and the bytes a calculation hashes.
//! The parser reads only within the packet: an extract past its end stops
//! with `PacketTooShort`, a stack overflow with `StackOutOfBounds`, a
//! varbit longer than its header allows with `HeaderTooShort`, and a parser
//! that visits [`limits::MAX_PARSE_STEPS`] states with `ParserTimeout`, as
//! v1model defines them; the packet then goes on to ingress with
//! `parser_error` set.

use crate::program::{CalcInput, HeaderRef, KeyPart, ParseOp, Program, TransitionValue, limits};

use super::action::run_prim;
use super::bits;
use super::eval::{Scope, eval};
use super::phv::{ExecError, Phv};
use super::state::State;
use super::switch::PacketCtx;

/// A parse that stopped with an error: its value in the program.
pub(crate) struct ParseError(pub(crate) u32);

/// The program's value for core error `name` (every program has the core
/// errors: the loader adds those a file leaves out).
fn code(p: &Program, name: &str) -> u32 {
    p.error_code(name).unwrap_or(u32::MAX)
}

/// Runs the parser over `data`; returns the offset of the payload (the
/// bytes no state extracted) and the error, if parsing stopped with one.
pub(crate) fn parse(
    p: &Program,
    phv: &mut Phv,
    st: &mut State,
    pc: &mut PacketCtx,
    data: &[u8],
    key: &mut Vec<u8>,
) -> Result<(usize, Option<u32>), ExecError> {
    let mut cursor = 0usize;
    let mut state = p.parser.init;
    let mut steps = 0u32;
    while let Some(s) = state {
        steps += 1;
        if steps > limits::MAX_PARSE_STEPS {
            return Ok((cursor, Some(code(p, "ParserTimeout"))));
        }
        let ps = &p.parser.states[s as usize];
        for op in &ps.ops {
            match run_op(p, phv, st, pc, data, &mut cursor, op)? {
                Ok(()) => {}
                Err(ParseError(e)) => return Ok((cursor, Some(e))),
            }
        }
        key.clear();
        let ahead = &data[cursor..];
        for KeyPart::Value(e, w) in &ps.key {
            let v = eval(p, phv, st, Scope { data: &[], ahead }, e)?;
            bits::push_be(key, (v as u128) & bits::mask(*w), (*w as usize).div_ceil(8));
        }
        let mut next = None;
        let mut matched = false;
        for t in &ps.transitions {
            let hit = match &t.value {
                TransitionValue::Default => true,
                TransitionValue::Hex { value, mask } => masked_eq(key, value, mask),
                TransitionValue::ValueSet { set, mask } => {
                    let widths = ps.key.iter().map(|KeyPart::Value(_, w)| *w);
                    let k = compress(key, widths.clone());
                    let m = compress(mask, widths);
                    st.value_sets[*set as usize].iter().any(|&v| k & m == v & m)
                }
            };
            if hit {
                next = t.next;
                matched = true;
                break;
            }
        }
        if !matched {
            return Ok((cursor, Some(code(p, "NoMatch"))));
        }
        state = next;
    }
    Ok((cursor, None))
}

/// A transition key's padded bytes as the key fields' values concatenated
/// without padding (how a parse value set holds them); 128 bits at most.
fn compress(bytes: &[u8], widths: impl Iterator<Item = u32>) -> u128 {
    let mut at = 0usize;
    let mut v: u128 = 0;
    for w in widths {
        let n = (w as usize).div_ceil(8);
        let part = bytes.get(at..at + n).map_or(0, |b| {
            b.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x))
        });
        v = v.checked_shl(w).unwrap_or(0) | (part & bits::mask(w));
        at += n;
    }
    v
}

fn masked_eq(key: &[u8], value: &[u8], mask: &[u8]) -> bool {
    key.len() == value.len()
        && key
            .iter()
            .zip(value)
            .zip(mask)
            .all(|((k, v), m)| k & m == v & m)
}

type OpResult = Result<Result<(), ParseError>, ExecError>;

fn run_op(
    p: &Program,
    phv: &mut Phv,
    st: &mut State,
    pc: &mut PacketCtx,
    data: &[u8],
    cursor: &mut usize,
    op: &ParseOp,
) -> OpResult {
    let ahead = &data[*cursor..];
    match op {
        ParseOp::Extract(h) => {
            let Some(h) = extract_target(p, phv, st, h, ahead)? else {
                return Ok(Err(ParseError(code(p, "StackOutOfBounds"))));
            };
            Ok(extract(p, phv, h, data, cursor, 0))
        }
        ParseOp::ExtractUnionStack { stack, member } => {
            let us = &p.union_stacks[*stack as usize];
            let next = phv.ustack_next[*stack as usize];
            let Some(&u) = us.unions.get(next as usize) else {
                return Ok(Err(ParseError(code(p, "StackOutOfBounds"))));
            };
            phv.ustack_next[*stack as usize] += 1;
            let h = p.unions[u as usize].headers[*member as usize];
            Ok(extract(p, phv, h, data, cursor, 0))
        }
        ParseOp::ExtractVl(h, len) => {
            let n = eval(p, phv, st, Scope { data: &[], ahead }, len)?;
            let Some(h) = extract_target(p, phv, st, h, ahead)? else {
                return Ok(Err(ParseError(code(p, "StackOutOfBounds"))));
            };
            let ty = &p.header_types[p.headers[h as usize].ty as usize];
            if n < 0 || n % 8 != 0 {
                return Ok(Err(ParseError(code(p, "ParserInvalidArgument"))));
            }
            if n > i128::from(ty.varbit_max_bits) {
                return Ok(Err(ParseError(code(p, "HeaderTooShort"))));
            }
            Ok(extract(p, phv, h, data, cursor, n as u32))
        }
        ParseOp::Set(dst, src) => {
            let v = eval(p, phv, st, Scope { data: &[], ahead }, src)?;
            super::action::assign(p, phv, st, Scope::NONE, dst, v)?;
            Ok(Ok(()))
        }
        ParseOp::Verify(cond, err) => {
            if eval(p, phv, st, Scope { data: &[], ahead }, cond)? == 0 {
                let v = eval(p, phv, st, Scope::NONE, err)?;
                return Ok(Err(ParseError(u32::try_from(v).unwrap_or(u32::MAX))));
            }
            Ok(Ok(()))
        }
        ParseOp::Advance(bits_e) => {
            let n = eval(p, phv, st, Scope { data: &[], ahead }, bits_e)?;
            if n < 0 || n % 8 != 0 {
                return Ok(Err(ParseError(code(p, "ParserInvalidArgument"))));
            }
            let bytes = (n / 8) as usize;
            if bytes > ahead.len() {
                return Ok(Err(ParseError(code(p, "PacketTooShort"))));
            }
            *cursor += bytes;
            Ok(Ok(()))
        }
        ParseOp::Primitive(prim) => {
            run_prim(p, phv, st, pc, &[], prim)?;
            Ok(Ok(()))
        }
    }
}

/// The instance an extract writes: a header, or a stack's next element
/// (`None` when the stack is full).
fn extract_target(
    p: &Program,
    phv: &mut Phv,
    st: &State,
    h: &HeaderRef,
    ahead: &[u8],
) -> Result<Option<u32>, ExecError> {
    match h {
        HeaderRef::StackLast(s) => {
            let next = phv.stack_next[*s as usize];
            let Some(&h) = p.stacks[*s as usize].headers.get(next as usize) else {
                return Ok(None);
            };
            phv.stack_next[*s as usize] += 1;
            Ok(Some(h))
        }
        other => super::eval::header_of(p, phv, st, Scope { data: &[], ahead }, other).map(Some),
    }
}

/// Extracts header `h` (with a varbit of `vbits`) at the cursor.
fn extract(
    p: &Program,
    phv: &mut Phv,
    h: u32,
    data: &[u8],
    cursor: &mut usize,
    vbits: u32,
) -> Result<(), ParseError> {
    let hdr = &p.headers[h as usize];
    let ty = &p.header_types[hdr.ty as usize];
    let total_bits = ty.fixed_bits as usize + vbits as usize;
    let nbytes = total_bits / 8;
    if *cursor + nbytes > data.len() {
        return Err(ParseError(code(p, "PacketTooShort")));
    }
    let base = *cursor * 8;
    let mut off = 0usize;
    for i in 0..hdr.nfields as usize {
        let f = (hdr.first_field as usize) + i;
        let fd = &p.fields[f];
        if fd.varbit {
            let start = (base + off) / 8;
            phv.varbit[h as usize].clear();
            phv.varbit[h as usize].extend_from_slice(&data[start..start + vbits as usize / 8]);
            phv.varbit_bits[h as usize] = vbits;
            off += vbits as usize;
        } else {
            phv.vals[f] = bits::read(data, base + off, fd.bits);
            off += fd.bits as usize;
        }
    }
    phv.mark_valid(p, h);
    *cursor += nbytes;
    Ok(())
}

/// The wire length of a valid header now (fixed fields and varbit), in
/// bytes.
pub(crate) fn header_len(p: &Program, phv: &Phv, h: u32) -> usize {
    let ty = &p.header_types[p.headers[h as usize].ty as usize];
    (ty.fixed_bits as usize + phv.varbit_bits[h as usize] as usize) / 8
}

/// Appends header `h` to `out` as the wire has it.
pub(crate) fn emit(p: &Program, phv: &Phv, h: u32, out: &mut Vec<u8>) {
    let hdr = &p.headers[h as usize];
    let start = out.len();
    out.resize(start + header_len(p, phv, h), 0);
    let mut off = start * 8;
    for i in 0..hdr.nfields as usize {
        let f = hdr.first_field as usize + i;
        let fd = &p.fields[f];
        if fd.varbit {
            let vb = &phv.varbit[h as usize];
            let at = off / 8;
            out[at..at + vb.len()].copy_from_slice(vb);
            off += phv.varbit_bits[h as usize] as usize;
        } else {
            bits::write(out, off, fd.bits, phv.vals[f]);
            off += fd.bits as usize;
        }
    }
}

/// Writes bits after one another into a byte buffer, most significant
/// first, without a pass over the buffer per field.
struct BitWriter<'a> {
    buf: &'a mut Vec<u8>,
    acc: u64,
    /// Bits in `acc` not yet written (fewer than 8 between calls).
    n: u32,
}

impl BitWriter<'_> {
    /// Appends the low `w` bits of `v`.
    fn push(&mut self, v: u128, w: u32) {
        let mut left = w;
        while left > 0 {
            let take = left.min(56);
            let chunk = ((v >> (left - take)) as u64) & ((1u64 << take) - 1);
            self.acc = (self.acc << take) | chunk;
            self.n += take;
            while self.n >= 8 {
                self.n -= 8;
                self.buf.push((self.acc >> self.n) as u8);
            }
            self.acc &= (1u64 << self.n) - 1;
            left -= take;
        }
    }

    /// Appends bytes.
    fn bytes(&mut self, b: &[u8]) {
        if self.n == 0 {
            self.buf.extend_from_slice(b);
        } else {
            for &x in b {
                self.push(u128::from(x), 8);
            }
        }
    }

    /// Appends header `h` as the wire has it.
    fn header(&mut self, p: &Program, phv: &Phv, h: u32) {
        if self.n == 0 {
            emit(p, phv, h, self.buf);
        } else {
            let mut tmp = Vec::new();
            emit(p, phv, h, &mut tmp);
            self.bytes(&tmp);
        }
    }

    /// Writes the last partial byte, zero-padded.
    fn finish(self) {
        if self.n > 0 {
            self.buf.push((self.acc << (8 - self.n)) as u8);
        }
    }
}

/// Packs a calculation's inputs into `buf`: fields bit by bit, headers
/// whole, the payload after the headers that follow the last input's.
pub(crate) fn calc_bytes(
    p: &Program,
    phv: &Phv,
    inputs: &[CalcInput],
    payload: &[u8],
    buf: &mut Vec<u8>,
) {
    buf.clear();
    let mut w = BitWriter { buf, acc: 0, n: 0 };
    let mut last_header = None;
    for inp in inputs {
        match inp {
            CalcInput::Field(f) => {
                let fd = &p.fields[*f as usize];
                last_header = Some(fd.header);
                if !phv.valid[fd.header as usize] {
                    continue;
                }
                if fd.varbit {
                    // A variable-length field adds the bytes it holds (IPv4
                    // options in a header checksum), as bmv2's BufBuilder.
                    w.bytes(&phv.varbit[fd.header as usize]);
                } else {
                    w.push(phv.vals[*f as usize], fd.bits);
                }
            }
            CalcInput::Const { value, bits: n } => w.push((*value as u128) & bits::mask(*n), *n),
            CalcInput::Header(h) => {
                last_header = Some(*h);
                if phv.valid[*h as usize] {
                    w.header(p, phv, *h);
                }
            }
            CalcInput::Payload => {
                let after = last_header.and_then(|l| p.deparser.order.iter().position(|&h| h == l));
                if let Some(pos) = after {
                    for &h in &p.deparser.order[pos + 1..] {
                        if phv.valid[h as usize] {
                            w.header(p, phv, h);
                        }
                    }
                }
                w.bytes(payload);
            }
        }
    }
    w.finish();
}

#[cfg(test)]
mod tests {
    use super::compress;

    #[test]
    fn bits_pack_across_bytes() {
        let mut buf = Vec::new();
        let mut w = super::BitWriter {
            buf: &mut buf,
            acc: 0,
            n: 0,
        };
        // IPv4's version and ihl, then a 16-bit field, then 3 + 13 bits,
        // then a 128-bit value: 4+4+16+3+13+128 bits = 21 bytes.
        w.push(4, 4);
        w.push(5, 4);
        w.push(0x1234, 16);
        w.push(0b101, 3);
        w.push(0x1fff, 13);
        w.push(u128::MAX - 1, 128);
        w.push(1, 1);
        w.finish();
        let mut want = vec![0x45, 0x12, 0x34, 0xbf, 0xff];
        want.extend([0xff; 15]);
        want.extend([0xfe, 0x80]);
        assert_eq!(buf, want);
    }

    #[test]
    fn value_set_keys_drop_the_padding() {
        // A 3-bit and a 13-bit field: padded to 1 and 2 bytes in the key,
        // 16 bits together in a value set.
        assert_eq!(
            compress(&[0x05, 0x01, 0x23], [3, 13].into_iter()),
            (5 << 13) | 0x0123
        );
        assert_eq!(compress(&[0xff, 0xff, 0xff], [3, 13].into_iter()), 0xffff);
    }
}
