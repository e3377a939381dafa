//! The engine on ernic's emulated ionic device: [`Target`] behind the
//! device's three hooks (`ernic_ionic::p4hook`), shared so that one program
//! and one set of tables serve the frame path, the send path and the
//! guest's device commands. Everything runs on the device's thread; the
//! mutex is there because the hooks must be `Send`.

use std::sync::{Arc, Mutex};

use ernic_ionic::p4hook::{
    FrameFilter, P4Control, SendFilter, SendVerdict, SendWqe, Side, WqeOpcode,
};

use crate::program::Program;
use crate::target::{Target, WqeDecision, WqeMeta};

/// The engine, as the device's hooks.
#[derive(Clone)]
pub struct Engine(Arc<Mutex<Target>>);

impl Engine {
    /// The engine with `program` loaded (or none yet).
    pub fn new(program: Option<Program>) -> Engine {
        Engine(Arc::new(Mutex::new(Target::new(program))))
    }

    /// Runs `f` on the target (e.g. to add table entries from the host).
    pub fn with<R>(&self, f: impl FnOnce(&mut Target) -> R) -> Option<R> {
        self.0.lock().ok().map(|mut t| f(&mut t))
    }
}

impl FrameFilter for Engine {
    fn filter(&mut self, from: Side, frame: &[u8], emit: &mut dyn FnMut(Side, &[u8])) {
        let Ok(mut t) = self.0.lock() else { return };
        t.frame(from == Side::Guest, frame, &mut |to_guest, b| {
            emit(if to_guest { Side::Guest } else { Side::Wire }, b)
        });
    }
}

fn opcode(o: WqeOpcode) -> u8 {
    match o {
        WqeOpcode::Send => 0,
        WqeOpcode::SendImm => 1,
        WqeOpcode::Write => 2,
        WqeOpcode::WriteImm => 3,
        WqeOpcode::Read => 4,
        WqeOpcode::CmpSwap => 5,
        WqeOpcode::FetchAdd => 6,
        WqeOpcode::Other(x) => 0x80 | x,
    }
}

impl SendFilter for Engine {
    fn on_send(&mut self, w: &SendWqe<'_>) -> SendVerdict {
        let Ok(mut t) = self.0.lock() else {
            return SendVerdict::Pass;
        };
        let first = w.sges.first();
        let (rkey, raddr) = w.remote.unwrap_or((0, 0));
        let meta = WqeMeta {
            opcode: opcode(w.opcode),
            nsge: w.sges.len().min(255) as u8,
            remote_is_local: w.remote_is_local,
            qpn: w.qpn,
            dest_qpn: w.dest_qpn,
            length: u32::try_from(w.length).unwrap_or(u32::MAX),
            lkey: first.map_or(0, |s| s.lkey),
            laddr: first.map_or(0, |s| s.addr),
            rkey,
            raddr,
            imm: w.imm,
            sges: std::array::from_fn(|i| {
                w.sges.get(i).map_or((0, 0, 0), |s| (s.lkey, s.addr, s.len))
            }),
        };
        match t.wqe(&meta) {
            WqeDecision::Pass => SendVerdict::Pass,
            WqeDecision::Drop => SendVerdict::Drop,
            WqeDecision::Transform(tok) => SendVerdict::Transform(tok),
        }
    }

    fn transform(&mut self, op: u32, src: &[u8], dst: &mut [u8]) -> Result<(), String> {
        let t = self
            .0
            .lock()
            .map_err(|_| "engine state poisoned".to_string())?;
        let op = t.op(op).ok_or_else(|| format!("no transform {op}"))?;
        op.apply(src, dst).map(|_| ()).map_err(|e| e.to_string())
    }

    fn transform_dst_len(&mut self, op: u32, src_len: u64) -> Option<u64> {
        let t = self.0.lock().ok()?;
        t.op(op)?.dst_len(src_len)
    }
}

impl P4Control for Engine {
    fn command(&mut self, opcode: u8, input: &[u8], output: &mut Vec<u8>) -> Result<(), String> {
        let mut t = self
            .0
            .lock()
            .map_err(|_| "engine state poisoned".to_string())?;
        t.command(opcode, input, output)
    }
}
