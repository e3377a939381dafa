//! The packet header vector: every field's value, every header's validity,
//! varbit contents and stack cursors for the packet being processed.
//! Allocated once per switch and reset per packet, so processing a packet
//! allocates nothing here.

use crate::program::{HeaderRef, Program, UnionRef};

use super::bits;

/// Why processing a packet stopped early (it is then dropped and logged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// A stack index past the stack's end.
    #[error("header stack {stack:?} index {index} is out of bounds")]
    StackIndex {
        /// The stack.
        stack: String,
        /// The index.
        index: i128,
    },
    /// A register index past the array's end.
    #[error("register array {array:?} index {index} is out of bounds")]
    RegisterIndex {
        /// The array.
        array: String,
        /// The index.
        index: i128,
    },
    /// A counter or meter index past the array's end.
    #[error("{kind} array {array:?} index {index} is out of bounds")]
    ArrayIndex {
        /// Counter or meter.
        kind: &'static str,
        /// The array.
        array: String,
        /// The index.
        index: i128,
    },
    /// An `assert` or `assume` was false.
    #[error("assertion failed in action {action:?}")]
    Assert {
        /// The action.
        action: String,
    },
    /// An extern the program calls is not registered.
    #[error("extern {0:?} failed: {1}")]
    Extern(String, String),
    /// A union member index past the union's end.
    #[error("union member {0} is out of bounds")]
    UnionMember(u32),
}

/// The packet header vector.
#[derive(Clone, Debug)]
pub struct Phv {
    /// Field values (raw bits, truncated to the field's width).
    pub vals: Vec<u128>,
    /// Header validity.
    pub valid: Vec<bool>,
    /// Varbit contents per header (empty for headers without one).
    pub varbit: Vec<Vec<u8>>,
    /// Varbit widths in bits, per header.
    pub varbit_bits: Vec<u32>,
    /// Next index to extract or push, per header stack.
    pub stack_next: Vec<u32>,
    /// Next index, per header union stack.
    pub ustack_next: Vec<u32>,
}

impl Phv {
    /// An all-zero vector shaped for `p`.
    pub fn new(p: &Program) -> Phv {
        let varbit = p
            .headers
            .iter()
            .map(|h| {
                let t = &p.header_types[h.ty as usize];
                Vec::with_capacity((t.varbit_max_bits as usize).div_ceil(8))
            })
            .collect();
        let mut phv = Phv {
            vals: vec![0; p.fields.len()],
            valid: vec![false; p.headers.len()],
            varbit,
            varbit_bits: vec![0; p.headers.len()],
            stack_next: vec![0; p.stacks.len()],
            ustack_next: vec![0; p.union_stacks.len()],
        };
        phv.reset(p);
        phv
    }

    /// Resets for a new packet: headers invalid, metadata zero and valid.
    pub fn reset(&mut self, p: &Program) {
        self.vals.fill(0);
        for (i, h) in p.headers.iter().enumerate() {
            self.valid[i] = h.metadata;
            self.varbit[i].clear();
            self.varbit_bits[i] = 0;
        }
        self.stack_next.fill(0);
        self.ustack_next.fill(0);
    }

    /// Zeroes the metadata only (bmv2's `reset_metadata`).
    pub fn reset_metadata(&mut self, p: &Program) {
        for h in p.headers.iter().filter(|h| h.metadata) {
            let r = h.first_field as usize..(h.first_field + h.nfields) as usize;
            self.vals[r].fill(0);
        }
    }

    /// A field's value, sign-extended if the field is signed.
    pub fn get(&self, p: &Program, f: u32) -> i128 {
        let fd = &p.fields[f as usize];
        let raw = self.vals[f as usize];
        if fd.signed && fd.bits < 128 && (raw >> (fd.bits - 1)) & 1 == 1 {
            (raw | !bits::mask(fd.bits)) as i128
        } else {
            raw as i128
        }
    }

    /// Writes a field, truncating to its width.
    pub fn set(&mut self, p: &Program, f: u32, v: i128) {
        let fd = &p.fields[f as usize];
        self.vals[f as usize] = (v as u128) & bits::mask(fd.bits);
    }

    /// Marks a header valid; the other members of its union become invalid.
    pub fn mark_valid(&mut self, p: &Program, h: u32) {
        if let Some(u) = p.headers[h as usize].union {
            for &m in &p.unions[u as usize].headers {
                self.valid[m as usize] = false;
            }
        }
        self.valid[h as usize] = true;
    }

    /// Copies header `src` into `dst` (validity, fields and varbit).
    pub fn copy_header(&mut self, p: &Program, dst: u32, src: u32) {
        if dst == src {
            return;
        }
        let (d, s) = (&p.headers[dst as usize], &p.headers[src as usize]);
        let n = d.nfields.min(s.nfields) as usize;
        for i in 0..n {
            self.vals[d.first_field as usize + i] = self.vals[s.first_field as usize + i];
        }
        let (vb, vbits) = (
            self.varbit[src as usize].clone(),
            self.varbit_bits[src as usize],
        );
        self.varbit[dst as usize].clear();
        self.varbit[dst as usize].extend_from_slice(&vb);
        self.varbit_bits[dst as usize] = vbits;
        if self.valid[src as usize] {
            self.mark_valid(p, dst);
        } else {
            self.valid[dst as usize] = false;
        }
    }

    /// Whether any member of union `u` is valid.
    pub fn union_valid(&self, p: &Program, u: u32) -> bool {
        p.unions[u as usize]
            .headers
            .iter()
            .any(|&h| self.valid[h as usize])
    }
}

/// Resolves a header reference to an instance, evaluating indices with
/// `eval`.
pub(crate) fn resolve_header(
    p: &Program,
    phv: &Phv,
    h: &HeaderRef,
    eval: &mut dyn FnMut(&crate::program::Expr) -> Result<i128, ExecError>,
) -> Result<u32, ExecError> {
    match h {
        HeaderRef::Fixed(h) => Ok(*h),
        HeaderRef::StackElem { stack, index } => {
            let i = eval(index)?;
            let s = &p.stacks[*stack as usize];
            usize::try_from(i)
                .ok()
                .and_then(|i| s.headers.get(i).copied())
                .ok_or_else(|| ExecError::StackIndex {
                    stack: s.name.clone(),
                    index: i,
                })
        }
        HeaderRef::StackLast(stack) => {
            let s = &p.stacks[*stack as usize];
            let next = phv.stack_next[*stack as usize];
            if next == 0 {
                return Err(ExecError::StackIndex {
                    stack: s.name.clone(),
                    index: -1,
                });
            }
            Ok(s.headers[next as usize - 1])
        }
        HeaderRef::UnionMember { union, member } => {
            let u = match union.as_ref() {
                UnionRef::Fixed(u) => *u,
                UnionRef::StackElem { stack, index } => {
                    let i = eval(index)?;
                    let s = &p.union_stacks[*stack as usize];
                    usize::try_from(i)
                        .ok()
                        .and_then(|i| s.unions.get(i).copied())
                        .ok_or_else(|| ExecError::StackIndex {
                            stack: s.name.clone(),
                            index: i,
                        })?
                }
            };
            p.unions[u as usize]
                .headers
                .get(*member as usize)
                .copied()
                .ok_or(ExecError::UnionMember(*member))
        }
    }
}
