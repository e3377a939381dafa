//! Resolving what a request names against the key tables: a QP's own SGE
//! list (with key 0 only where the QP may name it), a requester's rkey (never
//! key 0), and a payload [`Source`] into copyable segments. Every key failure
//! becomes a completion status here and nowhere else: [`local_status`] for
//! the requester's own keys, [`remote_status`] for an rkey.

use super::Source;
use crate::copy::Src;
use crate::engine::{Device, Engine, MAX_SGE};
use crate::memory::DmaMemory;
use crate::mr::{KeyError, Seg};
use crate::types::PdId;
use crate::wr::{Access, Sge, WcStatus};

/// A local key failure, as the requester's status.
fn local_status(_: KeyError) -> WcStatus {
    WcStatus::LocProtErr
}

/// A remote key failure, as the requester's status.
fn remote_status(_: KeyError) -> WcStatus {
    WcStatus::RemAccessErr
}

pub(crate) type SegArray<'a> = [Seg<'a>; MAX_SGE];

/// Resolves an SGE list against a device's MRs. Zero-length SGEs are skipped
/// without a key check. Key 0 names a bus address directly, and only where
/// `dma_key` says the QP may (a privileged QP's, see
/// [`Engine::set_qp_privileged`]); elsewhere it is a local protection error.
/// Returns the number of segments and the total length.
pub(crate) fn resolve_sgl<'a>(
    dev: &'a Device,
    dma_key: bool,
    pd: PdId,
    sgl: &[Sge],
    need: Access,
    out: &mut SegArray<'a>,
) -> Result<(usize, u64), WcStatus> {
    let mut n = 0;
    let mut total = 0u64;
    for sge in sgl.iter().filter(|s| s.len > 0) {
        let len = u64::from(sge.len);
        let seg = if sge.lkey.0 == 0 {
            if !dma_key {
                return Err(local_status(KeyError::ReservedKey));
            }
            sge.addr.checked_add(len).ok_or(WcStatus::LocProtErr)?;
            Seg::direct(sge.addr, len)
        } else {
            let mr = dev.mrs.get(sge.lkey.0).map_err(local_status)?;
            mr.check(pd, sge.addr, len, need).map_err(local_status)?
        };
        *out.get_mut(n).ok_or(WcStatus::LocLenErr)? = seg;
        n += 1;
        total += len;
    }
    if total > u64::from(u32::MAX) {
        return Err(WcStatus::LocLenErr);
    }
    Ok((n, total))
}

/// [`resolve_sgl`] into `out`, less the list's first `skip` bytes: the
/// segments left.
pub(crate) fn resolve_sgl_after<'a, 's>(
    dev: &'a Device,
    dma_key: bool,
    pd: PdId,
    sgl: &[Sge],
    need: Access,
    skip: u64,
    out: &'s mut SegArray<'a>,
) -> Result<&'s [Seg<'a>], WcStatus> {
    let (n, _) = resolve_sgl(dev, dma_key, pd, sgl, need, out)?;
    let first = skip_prefix(&mut out[..n], skip);
    Ok(&out[first..n])
}

/// Sum of an SGE list's lengths, without checking keys.
pub(crate) fn sgl_len(sgl: &[Sge]) -> u64 {
    sgl.iter().map(|s| u64::from(s.len)).sum()
}

/// Resolves an rkey named by a requester. Key 0 is refused: a peer may name
/// memory only through keys this device issued.
pub(super) fn resolve_rkey<'a>(
    dev: &'a Device,
    pd: PdId,
    rkey: u32,
    addr: u64,
    len: u64,
    need: Access,
) -> Result<Seg<'a>, WcStatus> {
    if rkey == 0 {
        return Err(remote_status(KeyError::ReservedKey));
    }
    let mr = dev.mrs.get(rkey).map_err(remote_status)?;
    mr.check(pd, addr, len, need).map_err(remote_status)
}

/// Drops the first `n` bytes of a segment list, in place; returns the index
/// of the first segment left.
pub(super) fn skip_prefix(segs: &mut [Seg<'_>], mut n: u64) -> usize {
    let mut i = 0;
    while n > 0 && i < segs.len() {
        if segs[i].len <= n {
            n -= segs[i].len;
            i += 1;
        } else {
            segs[i].off += n;
            segs[i].len -= n;
            n = 0;
        }
    }
    i
}

impl<M: DmaMemory> Engine<M> {
    /// Resolves a source into copyable segments.
    pub(crate) fn resolve_source<'a>(
        &'a self,
        s: &Source<'a>,
        segs: &'a mut SegArray<'a>,
    ) -> Result<Src<'a>, WcStatus> {
        match *s {
            Source::Bytes(b) => Ok(Src::Bytes(b)),
            Source::Peer { from, runs } => {
                let carrier = self.remote.carrier.as_deref().ok_or(WcStatus::LocProtErr)?;
                Ok(Src::Peer {
                    carrier,
                    from,
                    runs,
                })
            }
            Source::Sgl {
                dev,
                pd,
                dma_key,
                sgl,
                skip,
            } => {
                let d = self.dev(dev).map_err(|_| WcStatus::GeneralErr)?;
                let segs = resolve_sgl_after(d, dma_key, pd, sgl, Access::NONE, skip, segs)?;
                Ok(Src::Segs(segs))
            }
        }
    }
}
