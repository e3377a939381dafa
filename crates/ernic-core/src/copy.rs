//! The copy engine: moves bytes between checked segments, run by run.
//!
//! Both sides are walked as sequences of host-contiguous runs and each step
//! copies the largest piece both runs allow, with `ptr::copy` (memmove, since
//! source and destination may be the same MR). There is no bounce buffer and
//! no allocation. Every pointer comes from [`DmaMemory::map`] or from a slice
//! the caller lent, so the engine never reaches memory that was not
//! registered or mapped.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::memory::{DmaMemory, MemError};
use crate::mr::Seg;
use crate::remote::carrier::{PeerReadError, PeerRun, Remote};
use crate::types::NodeId;
use crate::wire::{self, MAX_REF_RUNS};
use crate::wr::SendOp;

/// Where bytes come from.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    /// Checked memory segments.
    Segs(&'a [Seg<'a>]),
    /// Bytes the engine holds (inline payloads, headers, wire payloads).
    Bytes(&'a [u8]),
    /// Bytes a peer on this host named in its own memory (a by-reference
    /// payload, already checked by [`wire::Repr::parse`]), read through the
    /// carrier.
    Peer {
        carrier: &'a dyn Remote,
        from: NodeId,
        runs: &'a [u8],
    },
}

/// Why a copy stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CopyError {
    /// This side's memory.
    Mem(MemError),
    /// The peer's memory, for a by-reference payload.
    Peer(PeerReadError),
}

impl CopyError {
    /// What a responder answers: a by-reference payload it could not read
    /// is the requester's fault (LocProtErr), as a local DMA read error is;
    /// its own memory gives `mine`.
    pub(crate) fn status(self, mine: crate::wr::WcStatus) -> crate::wr::WcStatus {
        match self {
            CopyError::Peer(_) => crate::wr::WcStatus::LocProtErr,
            CopyError::Mem(_) => mine,
        }
    }
}

impl From<MemError> for CopyError {
    fn from(e: MemError) -> CopyError {
        CopyError::Mem(e)
    }
}

/// Where bytes go.
pub(crate) enum Dst<'a> {
    /// Checked memory segments.
    Segs(&'a [Seg<'a>]),
    /// A buffer the engine holds.
    Bytes(&'a mut [u8]),
}

struct SegCursor<'a> {
    segs: &'a [Seg<'a>],
    idx: usize,
    pos: u64,
}

impl<'a> SegCursor<'a> {
    fn new(segs: &'a [Seg<'a>]) -> SegCursor<'a> {
        SegCursor {
            segs,
            idx: 0,
            pos: 0,
        }
    }

    fn chunk<M: DmaMemory>(&mut self, mem: &M) -> Result<(NonNull<u8>, usize), MemError> {
        while self.idx < self.segs.len() && self.pos == self.segs[self.idx].len {
            self.idx += 1;
            self.pos = 0;
        }
        let seg = self
            .segs
            .get(self.idx)
            .ok_or(MemError::Unmapped { addr: 0 })?;
        let (dma, len) = seg.dma_at(self.pos);
        mem.map(dma, len)
    }

    fn advance(&mut self, n: usize) {
        self.pos += n as u64;
    }
}

/// Copies `len` bytes from `src` to `dst`. The caller has checked that both
/// sides hold at least `len` bytes; a run that turns out to be unmapped stops
/// the copy with an error (bytes before it have been moved).
pub(crate) fn copy<M: DmaMemory>(
    mem: &M,
    dst: Dst<'_>,
    src: Src<'_>,
    len: u64,
) -> Result<(), CopyError> {
    if len == 0 {
        return Ok(());
    }
    match (dst, src) {
        (Dst::Segs(d), Src::Segs(s)) => {
            let mut d = SegCursor::new(d);
            let mut s = SegCursor::new(s);
            let mut left = len;
            while left > 0 {
                let (sp, sn) = s.chunk(mem)?;
                let (dp, dn) = d.chunk(mem)?;
                let n = sn.min(dn).min(usize::try_from(left).unwrap_or(usize::MAX));
                // SAFETY: `map` promised `sn` readable bytes at `sp` and `dn`
                // writable bytes at `dp`, valid while `mem` is borrowed; `n`
                // is no more than either. `ptr::copy` allows overlap.
                unsafe { std::ptr::copy(sp.as_ptr(), dp.as_ptr(), n) };
                s.advance(n);
                d.advance(n);
                left -= n as u64;
            }
            Ok(())
        }
        (Dst::Segs(d), Src::Bytes(b)) => {
            let mut d = SegCursor::new(d);
            let total = usize::try_from(len).unwrap_or(usize::MAX).min(b.len());
            let mut done = 0usize;
            while done < total {
                let (dp, dn) = d.chunk(mem)?;
                let n = dn.min(total - done);
                // SAFETY: `dp` is valid for `dn >= n` writes (see `map`), and
                // `b[done..done + n]` is in bounds since `done + n <= b.len()`.
                // The slice is engine-owned, so it cannot overlap mapped memory.
                unsafe { std::ptr::copy_nonoverlapping(b.as_ptr().add(done), dp.as_ptr(), n) };
                d.advance(n);
                done += n;
            }
            Ok(())
        }
        (Dst::Bytes(b), Src::Segs(s)) => {
            let mut s = SegCursor::new(s);
            let total = usize::try_from(len).unwrap_or(usize::MAX).min(b.len());
            let mut done = 0usize;
            while done < total {
                let (sp, sn) = s.chunk(mem)?;
                let n = sn.min(total - done);
                // SAFETY: `sp` is valid for `sn >= n` reads (see `map`), and
                // `b[done..done + n]` is in bounds. The destination slice is
                // engine-owned, so it cannot overlap mapped memory.
                unsafe { std::ptr::copy_nonoverlapping(sp.as_ptr(), b.as_mut_ptr().add(done), n) };
                s.advance(n);
                done += n;
            }
            Ok(())
        }
        (Dst::Bytes(d), Src::Bytes(s)) => {
            let n = usize::try_from(len)
                .unwrap_or(usize::MAX)
                .min(d.len())
                .min(s.len());
            d[..n].copy_from_slice(&s[..n]);
            Ok(())
        }
        (
            Dst::Segs(d),
            Src::Peer {
                carrier,
                from,
                runs,
            },
        ) => {
            let d = SegCursor::new(d);
            read_peer(mem, d, carrier, from, runs, len)
        }
        // A by-reference payload only ever lands in memory.
        (Dst::Bytes(_), Src::Peer { .. }) => Err(CopyError::Peer(PeerReadError::Fault)),
    }
}

/// Reads `len` bytes a peer named by reference into `d`, in batches of up to
/// [`MAX_REF_RUNS`] pieces, each as long as both its run and the destination
/// run allow.
fn read_peer<M: DmaMemory>(
    mem: &M,
    mut d: SegCursor<'_>,
    carrier: &dyn Remote,
    from: NodeId,
    runs: &[u8],
    len: u64,
) -> Result<(), CopyError> {
    let mut theirs = wire::ref_runs(runs);
    let (mut at, mut left_in_run) = (0u64, 0u64);
    let mut batch = [PeerRun {
        remote: 0,
        local: NonNull::dangling(),
        len: 0,
    }; MAX_REF_RUNS];
    let mut k = 0;
    let mut left = len;
    while left > 0 {
        if left_in_run == 0 {
            (at, left_in_run) = theirs.next().ok_or(CopyError::Peer(PeerReadError::Fault))?;
            continue;
        }
        let (dp, dn) = d.chunk(mem)?;
        let n = (dn as u64).min(left_in_run).min(left);
        batch[k] = PeerRun {
            remote: at,
            local: dp,
            len: n as usize,
        };
        k += 1;
        d.advance(n as usize);
        at += n;
        left_in_run -= n;
        left -= n;
        if k == MAX_REF_RUNS || left == 0 {
            // SAFETY: each `local` came from `map` with at least `len`
            // writable bytes, valid while `mem` is borrowed, which it is for
            // the whole call.
            unsafe { carrier.read_peer(from, &batch[..k]) }.map_err(CopyError::Peer)?;
            k = 0;
        }
    }
    Ok(())
}

/// The host runs holding `len` bytes of `src`, as (address, length) pairs
/// written into `out`, adjacent runs merged: what a by-reference payload
/// names. `None` when they are more than `out` holds or unmapped.
pub(crate) fn host_runs<M: DmaMemory>(
    mem: &M,
    src: Src<'_>,
    len: u64,
    out: &mut [(u64, u64)],
) -> Option<usize> {
    let Src::Segs(s) = src else { return None };
    let mut s = SegCursor::new(s);
    let mut k = 0usize;
    let mut left = len;
    while left > 0 {
        let (p, n) = s.chunk(mem).ok()?;
        let n = (n as u64).min(left);
        let addr = p.as_ptr() as u64;
        match k.checked_sub(1).map(|i| &mut out[i]) {
            Some(last) if last.0.checked_add(last.1) == Some(addr) => last.1 += n,
            _ => {
                *out.get_mut(k)? = (addr, n);
                k += 1;
            }
        }
        s.advance(n as usize);
        left -= n;
    }
    Some(k)
}

/// Why an atomic could not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtomicError {
    /// The target is not mapped.
    Mem(MemError),
    /// The target is not 8 contiguous, 8-byte aligned host bytes.
    Misaligned,
}

/// Runs an 8-byte atomic (compare-and-swap or fetch-and-add) on the memory
/// `seg` names, and returns the value it held before.
pub(crate) fn atomic<M: DmaMemory>(mem: &M, seg: &Seg<'_>, op: SendOp) -> Result<u64, AtomicError> {
    let (dma, run) = seg.dma_at(0);
    if run < 8 {
        return Err(AtomicError::Misaligned);
    }
    let (p, n) = mem.map(dma, 8).map_err(AtomicError::Mem)?;
    if n < 8 || p.as_ptr() as usize % 8 != 0 {
        return Err(AtomicError::Misaligned);
    }
    // SAFETY: `map` promised 8 valid bytes at `p` while `mem` is borrowed, and
    // `p` is 8-byte aligned (checked above), which `AtomicU64::from_ptr`
    // requires. Other writers of this memory use atomics or plain stores; an
    // atomic here never makes their access undefined on this target.
    let cell = unsafe { AtomicU64::from_ptr(p.as_ptr().cast::<u64>()) };
    Ok(match op {
        SendOp::AtomicCas { compare, swap, .. } => {
            match cell.compare_exchange(compare, swap, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(v) | Err(v) => v,
            }
        }
        SendOp::AtomicFa { add, .. } => cell.fetch_add(add, Ordering::SeqCst),
        _ => return Err(AtomicError::Misaligned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::ProcessMemory;
    use crate::mr::Run;

    #[test]
    fn copies_across_run_boundaries_both_ways() {
        let mut a = vec![0u8; 256];
        let mut b = vec![0u8; 256];
        for (i, x) in a.iter_mut().enumerate() {
            *x = i as u8;
        }
        let mut mem = ProcessMemory::new();
        let pa = NonNull::new(a.as_mut_ptr()).unwrap();
        let pb = NonNull::new(b.as_mut_ptr()).unwrap();
        // SAFETY: both vectors outlive `mem`'s use below.
        unsafe {
            mem.add(pa, 256);
            mem.add(pb, 256);
        }
        let (da, db) = (pa.as_ptr() as u64, pb.as_ptr() as u64);
        // Source: an MR whose two runs are the two halves of `a`, swapped.
        let src_runs = [
            Run {
                off: 0,
                dma: da + 128,
                len: 128,
            },
            Run {
                off: 128,
                dma: da,
                len: 128,
            },
        ];
        let src = [Seg {
            runs: &src_runs,
            off: 100,
            len: 60,
        }];
        // Destination: two direct segments.
        let dst = [Seg::direct(db + 10, 7), Seg::direct(db + 200, 53)];
        copy(&mem, Dst::Segs(&dst), Src::Segs(&src), 60).unwrap();
        let expect: Vec<u8> = (228..256).chain(0..32).map(|v| v as u8).collect();
        assert_eq!(&b[10..17], &expect[..7]);
        assert_eq!(&b[200..253], &expect[7..]);
        assert_eq!(b[17], 0);
        assert_eq!(b[199], 0);
        assert_eq!(b[253], 0);
        let mut out = [0u8; 60];
        copy(&mem, Dst::Bytes(&mut out), Src::Segs(&dst), 60).unwrap();
        assert_eq!(&out[..], &expect[..]);
        mem.remove(pa, 256);
        mem.remove(pb, 256);
    }

    #[test]
    fn unmapped_memory_stops_the_copy() {
        let mem = ProcessMemory::new();
        let dst = [Seg::direct(0x1000, 8)];
        assert!(copy(&mem, Dst::Segs(&dst), Src::Bytes(&[1; 8]), 8).is_err());
    }
}
