//! The controller's view of one command: the SQE fields it reads (copied
//! out of the 64 untrusted bytes, so no later read can fail), the SGL
//! length it checks against the planned transfer, the completion it builds
//! (counting the SQ entry), and the little-endian writers that fill the
//! fixed-size structures sent to the host (their callers pass constant
//! offsets inside those structures).

use super::{Fail, QueueState};
use crate::wire::status::Status;
use crate::wire::{cqe, sgl, sqe};

/// The parts of an SQE the controller reads, copied out of the 64 bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cmd {
    pub(super) opcode: u8,
    pub(super) flags: u8,
    pub(super) cid: u16,
    pub(super) nsid: u32,
    pub(super) dptr: [u8; 16],
    pub(super) cdw: [u32; 6],
    pub(super) raw: [u8; 64],
}

impl Cmd {
    pub(super) fn new(sqe: &[u8; 64]) -> Cmd {
        let p = sqe::Packet::new_unchecked(&sqe[..]);
        let mut cdw = [0u32; 6];
        for (i, c) in cdw.iter_mut().enumerate() {
            *c = p.cdw(10 + i).unwrap_or(0);
        }
        Cmd {
            opcode: p.opcode(),
            flags: p.flags(),
            cid: p.command_id(),
            nsid: p.nsid(),
            dptr: p.dptr(),
            cdw,
            raw: *sqe,
        }
    }
    /// `cdw{n}` for n in 10..=15.
    pub(super) fn cdw(&self, n: usize) -> u32 {
        self.cdw.get(n.wrapping_sub(10)).copied().unwrap_or(0)
    }
    pub(super) fn byte(&self, i: usize) -> u8 {
        self.raw.get(i).copied().unwrap_or(0)
    }
}

/// Builds the completion of `cmd` on `q`, counting its SQ entry.
pub(super) fn complete(q: &QueueState, cmd: &Cmd, status: Status, result: u64) -> cqe::Repr {
    cqe::Repr {
        result,
        sq_head: q.consume(),
        sq_id: q.bound.map_or(0, |b| b.qid),
        command_id: cmd.cid,
        status,
    }
}

/// The length the SGL describes: keyed data blocks, data blocks (in-capsule
/// data at an offset) and transport data blocks carry one; other descriptor
/// types are refused. nvmet_check_transfer_len then wants it to be the
/// length the command moves.
pub(super) fn sgl_len(cmd: &Cmd) -> Result<u32, Fail> {
    match sgl::Descriptor::from_dptr(&cmd.dptr) {
        sgl::Descriptor::Keyed { len, .. }
        | sgl::Descriptor::DataBlock { len, .. }
        | sgl::Descriptor::Transport { len, .. } => Ok(len),
        sgl::Descriptor::Other { .. } => Err(Fail::dnr(Status::SGL_INVALID_TYPE)),
    }
}

/// Copies `src` into `out` as the window `[offset, offset + out.len())` of
/// a log page; bytes past the page's end are zeros.
pub(super) fn window(out: &mut [u8], offset: u64, src: &[u8]) {
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(src.len());
    let n = (src.len() - start).min(out.len());
    out[..n].copy_from_slice(&src[start..start + n]);
    out[n..].fill(0);
}

/// Writes `s` into `field`, space-padded (Identify's ASCII strings).
pub(super) fn put_ascii(field: &mut [u8], s: &str) {
    field.fill(b' ');
    let n = s.len().min(field.len());
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

pub(super) fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
pub(super) fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
pub(super) fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
