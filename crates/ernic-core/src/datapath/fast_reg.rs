//! The local memory operations a send queue runs: REG_MR (fast
//! registration, binding pages to an MR allocated for it, the page list read
//! from memory in pieces) and LOCAL_INV.

use super::Outcome;
use crate::copy::{self, Dst, Src};
use crate::counters::Counter;
use crate::engine::Engine;
use crate::memory::DmaMemory;
use crate::mr::{self, MrKind, Run, Seg};
use crate::types::{DeviceId, Lkey, PdId};
use crate::wr::{PageSource, RegMr, WcStatus};

impl<M: DmaMemory> Engine<M> {
    pub(super) fn exec_reg_mr(&mut self, dev: DeviceId, pd: PdId, r: &RegMr) -> Outcome {
        let status = (|| {
            if !r.access.is_consistent()
                || r.iova.checked_add(r.len).is_none()
                || !mr::check_page_source(&r.pages, r.len)
            {
                return Err(WcStatus::LocProtErr);
            }
            let d = self
                .devices
                .get_mut(dev.0 as usize)
                .ok_or(WcStatus::GeneralErr)?;
            let mem = &self.mem;
            let m = d.mrs.slot_mut(r.key.0).ok_or(WcStatus::LocProtErr)?;
            let MrKind::FastReg { max_len, max_pages } = m.kind else {
                return Err(WcStatus::LocProtErr);
            };
            let too_many = matches!(r.pages, PageSource::Table { count, .. } if count > max_pages);
            if m.pd != pd || r.len > max_len || too_many {
                return Err(WcStatus::LocProtErr);
            }
            // The old key stops working whatever happens next.
            m.valid = false;
            match r.pages {
                PageSource::Contiguous { dma } => {
                    m.runs.clear();
                    m.runs.push(Run {
                        off: 0,
                        dma,
                        len: r.len,
                    });
                }
                PageSource::Table {
                    table,
                    count,
                    page_shift,
                    first_offset,
                } => {
                    // The list is read in pieces and ends at the first
                    // entry that cannot be read: the registration then
                    // fails (local protection, as an unreadable SGE does)
                    // instead of naming address 0. At most `max_pages`
                    // runs are ever kept (checked above).
                    let mut buf = [0u8; 512];
                    let (mut at, mut have, mut used) = (0u64, 0usize, 0usize);
                    let mut bad = false;
                    let entries = std::iter::from_fn(|| {
                        if at == u64::from(count) || bad {
                            return None;
                        }
                        if used == have {
                            let n = ((u64::from(count) - at) as usize).min(buf.len() / 8);
                            let read = table.checked_add(at * 8).is_some_and(|a| {
                                copy::copy(
                                    mem,
                                    Dst::Bytes(&mut buf[..n * 8]),
                                    Src::Segs(&[Seg::direct(a, n as u64 * 8)]),
                                    n as u64 * 8,
                                )
                                .is_ok()
                            });
                            if !read {
                                bad = true;
                                return None;
                            }
                            (have, used) = (n, 0);
                        }
                        let e = u64::from_le_bytes(
                            buf[used * 8..used * 8 + 8].try_into().expect("8 bytes"),
                        );
                        used += 1;
                        at += 1;
                        Some(e)
                    });
                    m.runs.clear();
                    m.runs.reserve_exact(count as usize);
                    let fits = mr::runs_from_pages(
                        entries,
                        page_shift,
                        u64::from(first_offset),
                        r.len,
                        &mut m.runs,
                    );
                    if fits.is_none() || bad {
                        m.runs.clear();
                        return Err(WcStatus::LocProtErr);
                    }
                }
            }
            m.rebind(r.key.0, r.iova, r.len, r.access);
            Ok(())
        })();
        let st = status.err().unwrap_or(WcStatus::Success);
        if st.is_ok() {
            if let Ok(d) = self.dev_mut(dev) {
                d.counters.inc(Counter::LocalOps);
            }
        }
        Outcome::Done(st, 0)
    }

    pub(super) fn exec_local_inv(&mut self, dev: DeviceId, pd: PdId, key: Lkey) -> Outcome {
        let Ok(d) = self.dev_mut(dev) else {
            return Outcome::Done(WcStatus::GeneralErr, 0);
        };
        match d.mrs.slot_mut(key.0) {
            Some(m)
                if m.key == key.0
                    && m.valid
                    && m.pd == pd
                    && matches!(m.kind, MrKind::FastReg { .. }) =>
            {
                m.valid = false;
                d.counters.inc(Counter::LocalOps);
                Outcome::Done(WcStatus::Success, 0)
            }
            _ => Outcome::Done(WcStatus::LocProtErr, 0),
        }
    }
}
