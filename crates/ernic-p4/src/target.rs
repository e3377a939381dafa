//! The engine as ernic's emulated NIC runs it (`ernic-server --p4`): which
//! port is which, what a program written for the RDMA path sees of a send
//! work request, the externs that turn an RDMA WRITE into fp8 arithmetic or
//! a format conversion, and device commands 70–72.
//!
//! **Ports.** A frame the guest transmits enters on port [`GUEST_PORT`] (0),
//! one from the wire (the TAP) on [`WIRE_PORT`] (1). Before ingress,
//! `egress_spec` is preset to the other side, so a program that does not
//! set it passes frames through; it may drop (`mark_to_drop`), rewrite, or
//! send elsewhere: to port 0 (the guest) or 1 (the wire). Any other port
//! drops the frame (counted).
//!
//! **Send WQEs.** Only a program with a header instance named `ernic_wqe`
//! is run on the RDMA path (an Ethernet program never sees WQEs). Each send
//! WQE, after its own memory checks, enters on [`RDMA_PORT`] (2) as the
//! [`WQE_BYTES`]-byte header [`WqeMeta::encode`] lays out, big-endian:
//!
//! ```text
//! opcode 8 | nsge 8 | remote_is_local 8 | reserved 8 | qpn 32 | dest_qpn 32
//! length 32 | lkey 32 | laddr 64 | rkey 32 | raddr 64 | imm 32
//! ```
//!
//! (`opcode`: 0 SEND, 1 SEND_IMM, 2 WRITE, 3 WRITE_IMM, 4 READ, 5 CMP_SWAP,
//! 6 FETCH_ADD; `lkey`/`laddr` are the first SGE's, `length` the sum.) After
//! it come the WQE's local regions, one 16-byte record per SGE (at most
//! [`MAX_SGES`]): `lkey 32 | addr 64 | len 32`, for a program to extract
//! into a header stack (or leave as payload). A
//! WQE the program drops is not executed (the device completes it with an
//! error). One whose pipeline calls an extern below has its WRITE
//! transformed: the WQE's gathered local bytes are the source, the
//! destination region (an MR of this device, never key 0, never another
//! node's) is read, combined and written back. Otherwise it runs as posted.
//!
//! | extern (P4: `extern void NAME(in bit<8> ...)`) | effect on the destination |
//! | --- | --- |
//! | `ernic_fp8_accumulate(fmt, saturate)` | fp8 `dst[i] += src[i]` |
//! | `ernic_fp8_accumulate_f32(fmt)` | f32 `dst[i] += src[i]` (fp8 source) |
//! | `ernic_convert(from, to, saturate)` | `dst = convert(src)` |
//! | `ernic_fp8_scale(fmt, factor_bits, saturate)` | `dst = src × f32::from_bits(factor_bits)` |
//!
//! `fmt`: 0 E4M3, 1 E5M2; element codes for `ernic_convert`: 0 f32, 1 f16,
//! 2 bf16, 3 E4M3, 4 E5M2; `saturate`: 1 saturating, 0 not (OCP OFP8).
//!
//! **Device commands** (as far as `--p4-guest-scope` lets the guest): 70
//! loads a program (its JSON text), 71 runs simple_switch_CLI lines and
//! answers their output, 72 answers a status line.

use std::sync::{Arc, Mutex};

use crate::exec::{Externs, Output, Switch};
use crate::fp8::{self, Element, Fp8, Fp8Error, Overflow};
use crate::program::Program;

/// Frames the guest transmits enter here.
pub const GUEST_PORT: u32 = 0;
/// Frames from the wire enter here.
pub const WIRE_PORT: u32 = 1;
/// Send WQEs enter here.
pub const RDMA_PORT: u32 = 2;
/// The WQE header's length.
pub const WQE_BYTES: usize = 44;
/// SGE records after the WQE header.
pub const MAX_SGES: usize = 16;
/// One SGE record's length.
pub const SGE_BYTES: usize = 16;

/// Distinct transforms one program may ask for (each is a token the device
/// hands back).
pub const MAX_OPS: usize = 1024;

/// What the program sees of a send WQE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WqeMeta {
    /// 0 SEND, 1 SEND_IMM, 2 WRITE, 3 WRITE_IMM, 4 READ, 5 CMP_SWAP,
    /// 6 FETCH_ADD, others as the device numbers them.
    pub opcode: u8,
    /// SGEs.
    pub nsge: u8,
    /// The remote key names an MR of this device.
    pub remote_is_local: bool,
    /// The QP.
    pub qpn: u32,
    /// Its destination QP.
    pub dest_qpn: u32,
    /// Bytes, summed over the SGEs (saturating at 4 GiB - 1).
    pub length: u32,
    /// The first SGE's key.
    pub lkey: u32,
    /// The first SGE's address.
    pub laddr: u64,
    /// The remote key (0 when none).
    pub rkey: u32,
    /// The remote address.
    pub raddr: u64,
    /// Immediate data.
    pub imm: u32,
    /// The local regions: `(lkey, addr, len)`, the first [`MAX_SGES`].
    pub sges: [(u32, u64, u32); MAX_SGES],
}

impl WqeMeta {
    /// The header and SGE records the program parses, into `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.encode());
        for &(lkey, addr, len) in self.sges.iter().take(usize::from(self.nsge).min(MAX_SGES)) {
            out.extend_from_slice(&lkey.to_be_bytes());
            out.extend_from_slice(&addr.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
        }
    }

    /// The header bytes alone.
    pub fn encode(&self) -> [u8; WQE_BYTES] {
        let mut b = [0u8; WQE_BYTES];
        b[0] = self.opcode;
        b[1] = self.nsge;
        b[2] = self.remote_is_local as u8;
        b[4..8].copy_from_slice(&self.qpn.to_be_bytes());
        b[8..12].copy_from_slice(&self.dest_qpn.to_be_bytes());
        b[12..16].copy_from_slice(&self.length.to_be_bytes());
        b[16..20].copy_from_slice(&self.lkey.to_be_bytes());
        b[20..28].copy_from_slice(&self.laddr.to_be_bytes());
        b[28..32].copy_from_slice(&self.rkey.to_be_bytes());
        b[32..40].copy_from_slice(&self.raddr.to_be_bytes());
        b[40..44].copy_from_slice(&self.imm.to_be_bytes());
        b
    }
}

/// A transform of an RDMA WRITE's destination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// fp8 += fp8.
    Accumulate(Fp8, Overflow),
    /// f32 += fp8.
    AccumulateF32(Fp8),
    /// `dst = convert(src)`.
    Convert(Element, Element, Overflow),
    /// `dst = src × factor`, fp8.
    Scale(Fp8, f32, Overflow),
}

impl Op {
    /// The destination's length for a source of `src` bytes.
    pub fn dst_len(&self, src: u64) -> Option<u64> {
        match self {
            Op::Accumulate(..) | Op::Scale(..) => Some(src),
            Op::AccumulateF32(_) => src.checked_mul(4),
            Op::Convert(from, to, _) => {
                let (f, t) = (from.size() as u64, to.size() as u64);
                (src % f == 0).then(|| src / f * t)
            }
        }
    }

    /// Applies it.
    pub fn apply(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, Fp8Error> {
        match *self {
            Op::Accumulate(f, o) => fp8::accumulate(f, dst, src, o),
            Op::AccumulateF32(f) => fp8::accumulate_into_f32(f, dst, src),
            Op::Convert(from, to, o) => fp8::convert(from, to, src, dst, o),
            Op::Scale(f, factor, o) => {
                if dst.len() != src.len() {
                    return fp8::accumulate(f, dst, src, o);
                }
                dst.copy_from_slice(src);
                fp8::scale(f, dst, factor, o)
            }
        }
    }
}

/// What to do with a send WQE.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WqeDecision {
    /// Run it as posted.
    Pass,
    /// Do not run it.
    Drop,
    /// Transform its WRITE by op `token` ([`Target::op`]).
    Transform(u32),
}

fn fmt_of(v: i128) -> Result<Fp8, String> {
    match v {
        0 => Ok(Fp8::E4M3),
        1 => Ok(Fp8::E5M2),
        _ => Err(format!("fp8 format {v} (0 E4M3, 1 E5M2)")),
    }
}

fn elem_of(v: i128) -> Result<Element, String> {
    Ok(match v {
        0 => Element::F32,
        1 => Element::F16,
        2 => Element::Bf16,
        3 => Element::E4M3,
        4 => Element::E5M2,
        _ => {
            return Err(format!(
                "element {v} (0 f32, 1 f16, 2 bf16, 3 E4M3, 4 E5M2)"
            ));
        }
    })
}

fn overflow_of(v: i128) -> Overflow {
    if v != 0 {
        Overflow::Saturate
    } else {
        Overflow::NonSaturate
    }
}

/// The externs a program calls: each records the op it asks for.
struct Recorder(Arc<Mutex<Option<Op>>>);

impl Externs for Recorder {
    fn call(&mut self, name: &str, args: &[i128]) -> Result<(), String> {
        let arg = |i: usize| {
            args.get(i)
                .copied()
                .ok_or_else(|| format!("{name} takes more arguments"))
        };
        let op = match name {
            "ernic_fp8_accumulate" => Op::Accumulate(fmt_of(arg(0)?)?, overflow_of(arg(1)?)),
            "ernic_fp8_accumulate_f32" => Op::AccumulateF32(fmt_of(arg(0)?)?),
            "ernic_convert" => {
                Op::Convert(elem_of(arg(0)?)?, elem_of(arg(1)?)?, overflow_of(arg(2)?))
            }
            "ernic_fp8_scale" => {
                let factor = f32::from_bits(arg(1)? as u32);
                if factor.is_nan() {
                    return Err("ernic_fp8_scale: the factor is NaN".into());
                }
                Op::Scale(fmt_of(arg(0)?)?, factor, overflow_of(arg(2)?))
            }
            other => return Err(format!("unknown extern {other}")),
        };
        *self
            .0
            .lock()
            .map_err(|_| "extern state poisoned".to_string())? = Some(op);
        Ok(())
    }
}

/// Counts of what went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetStats {
    /// Frames in.
    pub frames: u64,
    /// Frames dropped (by the program, or sent to a port that is neither
    /// side).
    pub frames_dropped: u64,
    /// WQEs judged.
    pub wqes: u64,
    /// WQEs dropped.
    pub wqes_dropped: u64,
    /// WQEs transformed.
    pub wqes_transformed: u64,
}

/// The engine on the device.
pub struct Target {
    switch: Option<Switch>,
    pending: Arc<Mutex<Option<Op>>>,
    ops: Vec<Op>,
    out: Vec<Output>,
    wqe_bytes: Vec<u8>,
    now_ns: u64,
    /// Whether the program has the `ernic_wqe` header (runs on WQEs).
    rdma: bool,
    /// Counts.
    pub stats: TargetStats,
}

impl Target {
    /// The engine with `program` loaded (none: frames pass, WQEs pass).
    pub fn new(program: Option<Program>) -> Target {
        let mut t = Target {
            switch: None,
            pending: Arc::new(Mutex::new(None)),
            ops: Vec::new(),
            out: Vec::new(),
            wqe_bytes: Vec::with_capacity(WQE_BYTES + MAX_SGES * SGE_BYTES),
            now_ns: 0,
            rdma: false,
            stats: TargetStats::default(),
        };
        if let Some(p) = program {
            t.load(p);
        }
        t
    }

    fn load(&mut self, p: Program) {
        self.rdma = p.headers.iter().any(|h| h.name == "ernic_wqe");
        let mut sw = Switch::new(p);
        sw.set_externs(Box::new(Recorder(self.pending.clone())));
        sw.set_default_egress(vec![
            (GUEST_PORT, WIRE_PORT),
            (WIRE_PORT, GUEST_PORT),
            (RDMA_PORT, RDMA_PORT),
        ]);
        self.switch = Some(sw);
        self.ops.clear();
    }

    /// The switch, if a program is loaded.
    pub fn switch(&mut self) -> Option<&mut Switch> {
        self.switch.as_mut()
    }

    /// A frame from the guest (`from_guest`) or the wire; `emit(to_guest,
    /// bytes)` for each frame that leaves.
    pub fn frame(&mut self, from_guest: bool, frame: &[u8], emit: &mut dyn FnMut(bool, &[u8])) {
        self.stats.frames += 1;
        self.now_ns += 1_000;
        let Some(sw) = self.switch.as_mut() else {
            emit(!from_guest, frame);
            return;
        };
        sw.recycle(&mut self.out);
        sw.process(
            if from_guest { GUEST_PORT } else { WIRE_PORT },
            frame,
            self.now_ns,
            &mut self.out,
        );
        // An extern called for a frame does nothing on the frame path.
        if let Ok(mut p) = self.pending.lock() {
            *p = None;
        }
        if self.out.is_empty() {
            self.stats.frames_dropped += 1;
        }
        for o in &self.out {
            match o.port {
                GUEST_PORT => emit(true, &o.data),
                WIRE_PORT => emit(false, &o.data),
                _ => self.stats.frames_dropped += 1,
            }
        }
    }

    /// Judges a send WQE.
    pub fn wqe(&mut self, meta: &WqeMeta) -> WqeDecision {
        let Some(sw) = self.switch.as_mut() else {
            return WqeDecision::Pass;
        };
        if !self.rdma {
            return WqeDecision::Pass;
        }
        self.stats.wqes += 1;
        self.now_ns += 1_000;
        sw.recycle(&mut self.out);
        meta.encode_into(&mut self.wqe_bytes);
        sw.process(RDMA_PORT, &self.wqe_bytes, self.now_ns, &mut self.out);
        let op = self.pending.lock().ok().and_then(|mut p| p.take());
        if self.out.is_empty() {
            self.stats.wqes_dropped += 1;
            return WqeDecision::Drop;
        }
        let Some(op) = op else {
            return WqeDecision::Pass;
        };
        let token = match self.ops.iter().position(|o| *o == op) {
            Some(i) => i,
            None if self.ops.len() < MAX_OPS => {
                self.ops.push(op);
                self.ops.len() - 1
            }
            None => {
                self.stats.wqes_dropped += 1;
                return WqeDecision::Drop;
            }
        };
        self.stats.wqes_transformed += 1;
        WqeDecision::Transform(token as u32)
    }

    /// The op behind a token [`Target::wqe`] answered.
    pub fn op(&self, token: u32) -> Option<Op> {
        self.ops.get(token as usize).copied()
    }

    /// Device commands 70 (load a program), 71 (run CLI lines), 72
    /// (status); the caller has applied the guest's scope.
    pub fn command(
        &mut self,
        opcode: u8,
        input: &[u8],
        output: &mut Vec<u8>,
    ) -> Result<(), String> {
        let text =
            std::str::from_utf8(input).map_err(|_| "the input is not UTF-8 text".to_string())?;
        match opcode {
            70 => {
                let p = Program::load(text).map_err(|e| e.to_string())?;
                let (t, a) = (p.tables.len(), p.actions.len());
                self.load(p);
                output.extend_from_slice(
                    format!("program loaded: {t} tables, {a} actions\n").as_bytes(),
                );
                Ok(())
            }
            71 => {
                let sw = self.switch.as_mut().ok_or("no program is loaded")?;
                let mut out = String::new();
                let failed = crate::runtime::run_script(sw, text, &mut out);
                output.extend_from_slice(out.as_bytes());
                if failed > 0 { Err(out) } else { Ok(()) }
            }
            72 => {
                let s = self.stats;
                let prog = match &self.switch {
                    Some(sw) => format!(
                        "{} tables, {} actions",
                        sw.program.tables.len(),
                        sw.program.actions.len()
                    ),
                    None => "none".into(),
                };
                let line = format!(
                    "program: {prog}; frames {} dropped {}; wqes {} dropped {} transformed {}\n",
                    s.frames, s.frames_dropped, s.wqes, s.wqes_dropped, s.wqes_transformed
                );
                output.extend_from_slice(line.as_bytes());
                Ok(())
            }
            other => Err(format!("device command {other} is not the P4 engine's")),
        }
    }
}
