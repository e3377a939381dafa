//! The NVM I/O commands: Read, Write, Flush, Write Zeroes and Dataset
//! Management (deallocate). `plan` checks the nsid, the LBA range and the
//! transfer size before any data moves; `execute` runs against the
//! namespace and counts the SMART statistics. Nothing on this path
//! allocates. Layouts: `struct nvme_rw_command`, `struct
//! nvme_write_zeroes_cmd`, `struct nvme_dsm_cmd` and `struct nvme_dsm_range`
//! of `include/linux/nvme.h`.

use super::{Cmd, Fail, MDTS_BYTES, Target, Xfer};
use crate::namespace::{Namespace, NamespaceError};
use crate::wire::sqe::IoOpcode;
use crate::wire::status::Status;

/// `sizeof(struct nvme_dsm_range)`.
pub const DSM_RANGE_LEN: usize = 16;
/// The most a DSM payload may carry: 256 ranges. Linux's
/// `nvme_setup_discard` always sends a buffer of `NVME_DSM_MAX_RANGES`
/// ranges whatever NR says ("some devices do not consider the DSM 'Number
/// of Ranges' field"), so a payload longer than NR + 1 ranges is accepted,
/// as nvmet does (`nvmet_check_data_len_lte`), up to this bound; only the
/// first NR + 1 ranges count.
pub const DSM_MAX_PAYLOAD: u32 = 256 * DSM_RANGE_LEN as u32;
/// `NVME_DSMGMT_AD` in CDW11.
const DSMGMT_AD: u32 = 1 << 2;
/// `NVME_RW_FUA` in CDW12.
const RW_FUA: u32 = 1 << 30;

/// A planned I/O command; `ns` indexes the target's namespaces.
#[derive(Debug, Clone, Copy)]
pub(super) enum IoOp {
    Read {
        ns: usize,
        slba: u64,
        nlb: u64,
    },
    Write {
        ns: usize,
        slba: u64,
        nlb: u64,
        fua: bool,
    },
    Flush {
        ns: usize,
    },
    WriteZeroes {
        ns: usize,
        slba: u64,
        nlb: u64,
    },
    Dsm {
        ns: usize,
        ad: bool,
        /// Ranges in the command (NR + 1); the payload may hold more bytes.
        nr: usize,
    },
}

fn lba_range() -> Fail {
    Fail::dnr(Status::LBA_RANGE)
}

/// The one place a namespace error becomes a completion status.
fn ns_status(e: &NamespaceError) -> Status {
    match e {
        NamespaceError::LbaRange { .. } => Status::LBA_RANGE.with_dnr(),
        NamespaceError::BufferLength { .. } => Status::DATA_XFER_ERROR.with_dnr(),
        NamespaceError::Io { op: "read", .. } => Status::READ_ERROR,
        NamespaceError::Io { op: "write", .. } => Status::WRITE_FAULT,
        _ => Status::INTERNAL.with_dnr(),
    }
}

/// Decides an I/O command: nsid, range and length.
pub(super) fn plan(namespaces: &[Namespace], cmd: &Cmd) -> Result<(IoOp, Xfer), Fail> {
    let opcode = IoOpcode::from(cmd.opcode);
    if matches!(opcode, IoOpcode::Unknown(_) | IoOpcode::Fabrics) {
        return Err(Fail::dnr(Status::INVALID_OPCODE));
    }
    let i = usize::try_from(cmd.nsid)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .filter(|&i| i < namespaces.len())
        .ok_or(Fail::dnr(Status::INVALID_NS))?;
    let ns = &namespaces[i];
    let slba = u64::from(cmd.cdw(10)) | u64::from(cmd.cdw(11)) << 32;
    let nlb = u64::from(cmd.cdw(12) & 0xffff) + 1;
    match opcode {
        IoOpcode::Read | IoOpcode::Write => {
            let len = nlb << ns.block_size().shift();
            if len > u64::from(MDTS_BYTES) {
                return Err(Fail::dnr(Status::INVALID_FIELD));
            }
            if !ns.contains(slba, nlb) {
                return Err(lba_range());
            }
            // len <= MDTS_BYTES fits a u32.
            let len = len as u32;
            if opcode == IoOpcode::Read {
                Ok((IoOp::Read { ns: i, slba, nlb }, Xfer::ToHost(len)))
            } else {
                let fua = cmd.cdw(12) & RW_FUA != 0;
                Ok((
                    IoOp::Write {
                        ns: i,
                        slba,
                        nlb,
                        fua,
                    },
                    Xfer::FromHost(len),
                ))
            }
        }
        IoOpcode::Flush => Ok((IoOp::Flush { ns: i }, Xfer::None)),
        IoOpcode::WriteZeroes => {
            if !ns.contains(slba, nlb) {
                return Err(lba_range());
            }
            Ok((IoOp::WriteZeroes { ns: i, slba, nlb }, Xfer::None))
        }
        IoOpcode::DatasetManagement => {
            let nr = (cmd.cdw(10) & 0xff) + 1;
            let ad = cmd.cdw(11) & DSMGMT_AD != 0;
            // NR is 8 bits, 0's based: at most 256 ranges (NVME_DSM_MAX_RANGES),
            // 4 KiB. This is the least the host must send: see
            // DSM_MAX_PAYLOAD.
            Ok((
                IoOp::Dsm {
                    ns: i,
                    ad,
                    nr: nr as usize,
                },
                Xfer::FromHost(nr * DSM_RANGE_LEN as u32),
            ))
        }
        IoOpcode::Unknown(_) | IoOpcode::Fabrics => Err(Fail::dnr(Status::INVALID_OPCODE)),
    }
}

/// One DSM range: (slba, nlb).
fn dsm_range(r: &[u8]) -> (u64, u64) {
    let mut nlb = [0u8; 4];
    let mut slba = [0u8; 8];
    nlb.copy_from_slice(&r[4..8]);
    slba.copy_from_slice(&r[8..16]);
    (u64::from_le_bytes(slba), u64::from(u32::from_le_bytes(nlb)))
}

impl Target {
    pub(super) fn run_io(&mut self, op: IoOp, data: &mut [u8]) -> Result<u64, Fail> {
        let fail = |e: NamespaceError| Fail {
            status: ns_status(&e),
            result: 0,
        };
        match op {
            IoOp::Read { ns, slba, nlb } => {
                self.namespaces[ns].read(slba, nlb, data).map_err(fail)?;
                let c = &mut self.counters[ns];
                c.host_reads += 1;
                c.sectors_read += data.len() as u64 / 512;
                self.stats.read(ns, data.len() as u64);
            }
            IoOp::Write { ns, slba, nlb, fua } => {
                let n = &mut self.namespaces[ns];
                n.write(slba, nlb, data).map_err(fail)?;
                if fua {
                    n.flush().map_err(fail)?;
                }
                let c = &mut self.counters[ns];
                c.host_writes += 1;
                c.sectors_written += data.len() as u64 / 512;
                self.stats.write(ns, data.len() as u64);
            }
            IoOp::Flush { ns } => self.namespaces[ns].flush().map_err(fail)?,
            IoOp::WriteZeroes { ns, slba, nlb } => {
                self.namespaces[ns].write_zeroes(slba, nlb).map_err(fail)?
            }
            IoOp::Dsm { ns, ad, nr } => {
                let n = &mut self.namespaces[ns];
                let ranges = || data.chunks_exact(DSM_RANGE_LEN).take(nr).map(dsm_range);
                // Every range is checked before any is applied.
                if ranges().any(|(slba, nlb)| !n.contains(slba, nlb)) {
                    return Err(lba_range());
                }
                if ad {
                    for (slba, nlb) in ranges() {
                        if nlb != 0 {
                            n.deallocate(slba, nlb).map_err(fail)?;
                        }
                    }
                }
            }
        }
        Ok(0)
    }
}
