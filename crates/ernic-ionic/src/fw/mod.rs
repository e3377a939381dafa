//! The RDMA side's formats, as Linux's `drivers/infiniband/hw/ionic/ionic_fw.h`
//! lays them out (firmware ABI v1), shared by the device (which decodes
//! what the guest's driver writes and encodes what it answers) and by
//! `ernic-ionic-driver` (which does the reverse), so the two cannot drift.
//! One file per ring format, each a smoltcp-style two-tier view
//! (`Packet<T: AsRef<[u8]>>` with `mod field` byte ranges; after
//! `new_checked` no accessor panics):
//!
//! - [`wqe`]: send and receive queue WQEs;
//! - [`cqe`]: work-request CQEs; [`admin_cqe`]: admin command CQEs;
//! - [`eqe`]: event queue entries;
//! - [`admin_wqe`]: admin WQEs; [`admin_cmd`]: the commands they carry;
//! - [`dev_cmd`]: device commands (`ionic_if.h`) and their completions,
//!   the RDMA bootstrap's among them.
//!
//! This file holds the numbering the formats share: admin opcodes and
//! statuses, QP types and states, access flags, WQE operations and
//! completion statuses, with the one conversion between `ionic_status`
//! and the core's [`WcStatus`](ernic_core::WcStatus) ([`status`]).
//! Offsets are bytes from the start of the structure named; the flat
//! offset constants say `_BE` for big-endian fields. `tests/layout.rs`
//! checks every one against the header; each format file has byte-exact
//! tests of its own.

#![allow(missing_docs)]

/// A `Packet<T>` view named `$format` over a structure of `$len` bytes:
/// the struct, `new_unchecked`, `new_checked`, `check_len`, `into_inner`.
macro_rules! view {
    ($format:literal, $len:expr) => {
        /// A view of the structure's bytes. After
        /// [`new_checked`](Self::new_checked) no accessor panics.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// A view without a length check; accessors may panic on a
            /// short buffer.
            pub const fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            /// A view of a buffer that holds the whole structure.
            pub fn new_checked(buffer: T) -> Result<Packet<T>, $crate::fw::Error> {
                let p = Packet::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }

            /// Whether the buffer holds the whole structure.
            pub fn check_len(&self) -> Result<(), $crate::fw::Error> {
                let len = self.buffer.as_ref().len();
                if len < $len {
                    return Err($crate::fw::Error::Truncated {
                        format: $format,
                        need: $len,
                        len,
                    });
                }
                Ok(())
            }

            /// The buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

/// Little-endian getters and setters of a `Packet<T>` view: `get / set:
/// type = byte range (or offset, for a `u8`)`.
macro_rules! fields {
    ($($(#[$doc:meta])* $get:ident / $set:ident : $ty:ident = $f:expr;)*) => {
        impl<T: AsRef<[u8]>> Packet<T> {
            $($(#[$doc])* pub fn $get(&self) -> $ty {
                fields!(@get $ty, self.buffer.as_ref(), $f)
            })*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            $(#[doc = concat!("Sets what [`", stringify!($get), "`](Self::", stringify!($get), ") reads.")]
            pub fn $set(&mut self, v: $ty) {
                fields!(@set $ty, self.buffer.as_mut(), $f, v)
            })*
        }
    };
    (@get u8, $b:expr, $f:expr) => { $b[$f] };
    (@get u16, $b:expr, $f:expr) => { $crate::fw::get_le16($b, $f) };
    (@get u32, $b:expr, $f:expr) => { $crate::fw::get_le32($b, $f) };
    (@get u64, $b:expr, $f:expr) => { $crate::fw::get_le64($b, $f) };
    (@set u8, $b:expr, $f:expr, $v:expr) => { $b[$f] = $v };
    (@set $t:ident, $b:expr, $f:expr, $v:expr) => {
        $crate::fw::set_bytes($b, $f, &$v.to_le_bytes())
    };
}

/// As [`fields!`], big-endian.
macro_rules! be_fields {
    ($($(#[$doc:meta])* $get:ident / $set:ident : $ty:ident = $f:expr;)*) => {
        impl<T: AsRef<[u8]>> Packet<T> {
            $($(#[$doc])* pub fn $get(&self) -> $ty {
                be_fields!(@get $ty, self.buffer.as_ref(), $f)
            })*
        }
        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            $(#[doc = concat!("Sets what [`", stringify!($get), "`](Self::", stringify!($get), ") reads.")]
            pub fn $set(&mut self, v: $ty) {
                be_fields!(@set $ty, self.buffer.as_mut(), $f, v)
            })*
        }
    };
    (@get u8, $b:expr, $f:expr) => { $b[$f] };
    (@get u16, $b:expr, $f:expr) => { $crate::fw::get_be16($b, $f) };
    (@get u32, $b:expr, $f:expr) => { $crate::fw::get_be32($b, $f) };
    (@set u8, $b:expr, $f:expr, $v:expr) => { $b[$f] = $v };
    (@set $t:ident, $b:expr, $f:expr, $v:expr) => {
        $crate::fw::set_bytes($b, $f, &$v.to_be_bytes())
    };
}

pub mod admin_cmd;
pub mod admin_cqe;
pub mod admin_wqe;
pub mod cqe;
pub mod dev_cmd;
pub mod eqe;
pub mod wqe;

pub use admin_cmd::{create_ah, create_cq, create_mr, create_qp, mod_qp, query_qp, srq, stats_hdr};
pub use cqe::recv_op;

/// A field: its byte range in its structure.
pub type Field = core::ops::Range<usize>;

/// A buffer too short for the format viewed over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("a {format} needs {need} bytes; the buffer has {len}")]
    Truncated {
        format: &'static str,
        need: usize,
        len: usize,
    },
}

// Field accessors for the `Packet` views: each field's range is a
// constant inside the length `check_len` proved, so the conversions of a
// slice of that range to an array cannot fail.

fn array<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    let mut a = [0; N];
    a.copy_from_slice(&b[f]);
    a
}

fn get_le16(b: &[u8], f: Field) -> u16 {
    u16::from_le_bytes(array(b, f))
}

fn get_le32(b: &[u8], f: Field) -> u32 {
    u32::from_le_bytes(array(b, f))
}

fn get_le64(b: &[u8], f: Field) -> u64 {
    u64::from_le_bytes(array(b, f))
}

fn get_be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes(array(b, f))
}

fn get_be32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes(array(b, f))
}

fn get_be64(b: &[u8], f: Field) -> u64 {
    u64::from_be_bytes(array(b, f))
}

fn set_bytes(b: &mut [u8], f: Field, v: &[u8]) {
    b[f].copy_from_slice(v);
}

/// `enum ionic_v1_admin_op`.
pub mod admin_op {
    pub const NOOP: u8 = 0;
    pub const CREATE_CQ: u8 = 1;
    pub const CREATE_QP: u8 = 2;
    pub const CREATE_MR: u8 = 3;
    pub const STATS_HDRS: u8 = 4;
    pub const STATS_VALS: u8 = 5;
    pub const DESTROY_MR: u8 = 6;
    pub const RESIZE_CQ: u8 = 7;
    pub const DESTROY_CQ: u8 = 8;
    pub const MODIFY_QP: u8 = 9;
    pub const QUERY_QP: u8 = 10;
    pub const DESTROY_QP: u8 = 11;
    pub const DEBUG: u8 = 12;
    pub const CREATE_AH: u8 = 13;
    pub const QUERY_AH: u8 = 14;
    pub const MODIFY_DCQCN: u8 = 15;
    pub const DESTROY_AH: u8 = 16;
    pub const QP_STATS_HDRS: u8 = 17;
    pub const QP_STATS_VALS: u8 = 18;
    /// `IONIC_V1_ADMIN_OPCODES_MAX`: what LIF_IDENTIFY advertises.
    pub const COUNT: u8 = 19;

    /// The command's name, as `ionic_fw.h` spells it without the
    /// `IONIC_V1_ADMIN_` prefix, in lower case (`create_qp`); ernic's SRQ
    /// commands too; `unknown` for any other opcode.
    pub fn name(op: u8) -> &'static str {
        const NAMES: [&str; COUNT as usize] = [
            "noop",
            "create_cq",
            "create_qp",
            "create_mr",
            "stats_hdrs",
            "stats_vals",
            "destroy_mr",
            "resize_cq",
            "destroy_cq",
            "modify_qp",
            "query_qp",
            "destroy_qp",
            "debug",
            "create_ah",
            "query_ah",
            "modify_dcqcn",
            "destroy_ah",
            "qp_stats_hdrs",
            "qp_stats_vals",
        ];
        match op {
            super::srq_op::CREATE_SRQ => "create_srq",
            super::srq_op::MODIFY_SRQ => "modify_srq",
            super::srq_op::QUERY_SRQ => "query_srq",
            super::srq_op::DESTROY_SRQ => "destroy_srq",
            _ => NAMES.get(usize::from(op)).copied().unwrap_or("unknown"),
        }
    }
}

/// ernic's own admin commands for shared receive queues, which Linux's
/// `ionic_fw.h` does not have (its driver offers no SRQ verbs); numbered
/// well past `IONIC_V1_ADMIN_OPCODES_MAX`. Results come back in the admin
/// CQE's reserved bytes at [`srq::CQE_RESULT`].
pub mod srq_op {
    pub const CREATE_SRQ: u8 = 40;
    pub const MODIFY_SRQ: u8 = 41;
    pub const QUERY_SRQ: u8 = 42;
    pub const DESTROY_SRQ: u8 = 43;
}

/// `enum ionic_v1_admin_status`.
pub mod admin_status {
    pub const OK: u32 = 0;
    pub const BAD_CMD: u32 = 1;
    pub const BAD_INDEX: u32 = 2;
    pub const BAD_STATE: u32 = 3;
    pub const BAD_TYPE: u32 = 4;
    pub const BAD_ATTR: u32 = 5;
    pub const MSG_TOO_BIG: u32 = 6;
}

/// `struct ionic_v1_stat`: a big-endian type and offset word, then a name.
pub mod stat {
    pub const TYPE_SHIFT: u32 = 28;
    pub const TYPE_NONE: u32 = 0;
    pub const TYPE_LE64: u32 = 4;
    pub const NAME: usize = 4;
    pub const NAME_LEN: usize = 28;
    pub const LEN: usize = 32;
}

/// `enum ionic_qp_type` (GSI is folded into UD; its id is 1).
pub mod qpt {
    pub const RC: u8 = 0;
    pub const UC: u8 = 1;
    pub const UD: u8 = 3;
}

/// `enum ionic_qp_state`.
pub mod qps {
    pub const RESET: u8 = 0;
    pub const INIT: u8 = 1;
    pub const RTR: u8 = 2;
    pub const RTS: u8 = 3;
    pub const SQD: u8 = 4;
    pub const SQE: u8 = 5;
    pub const ERR: u8 = 6;

    use ernic_core::QpState;

    const ALL: [(u8, QpState); 7] = [
        (RESET, QpState::Reset),
        (INIT, QpState::Init),
        (RTR, QpState::Rtr),
        (RTS, QpState::Rts),
        (SQD, QpState::Sqd),
        (SQE, QpState::Sqe),
        (ERR, QpState::Err),
    ];

    /// The state an ionic number names, if any.
    pub fn to_state(n: u8) -> Option<QpState> {
        ALL.iter().find(|(v, _)| *v == n).map(|(_, s)| *s)
    }

    /// The ionic number of a state.
    pub fn from_state(s: QpState) -> u8 {
        ALL.iter().find(|(_, v)| *v == s).map_or(ERR, |(n, _)| *n)
    }
}

/// A path MTU as MODIFY_QP and QUERY_QP carry it: its log2 (IB's
/// `ib_mtu` + 7), 8 for 256 bytes to 12 for 4096.
pub mod pmtu {
    /// The bytes a field value names, if it names one.
    pub fn to_bytes(v: u8) -> Option<u32> {
        (8..=12).contains(&v).then(|| 1 << v)
    }

    /// The field value for `mtu` bytes (1024 for a size IB has no name for).
    pub fn from_bytes(mtu: u32) -> u8 {
        match mtu {
            256 | 512 | 1024 | 2048 | 4096 => mtu.trailing_zeros() as u8,
            _ => 10,
        }
    }
}

/// The reserved DMA key (`IONIC_DMA_LKEY` of Linux's `ionic_ibdev.h`, and
/// `IONIC_DMA_RKEY` alike): an SGE with this lkey names a bus address
/// directly, and only a QP created [`qpf::PRIVILEGED`] may use it. No MR
/// is ever given this key (the driver's MR ids start at 1).
pub const DMA_LKEY: u32 = 0;

/// `enum ionic_qp_flags`: remote rights, and the privilege CREATE_QP's
/// `priv_flags` (and MODIFY_QP's `access_flags`) carry.
pub mod qpf {
    pub const REMOTE_WRITE: u16 = 1 << 0;
    pub const REMOTE_READ: u16 = 1 << 1;
    pub const REMOTE_ATOMIC: u16 = 1 << 2;
    /// The QP may name the reserved DMA key 0 (`IONIC_DMA_LKEY`) in its
    /// SGEs: Linux's driver sets it on the QPs of a PD it took a DMA MR
    /// for (`ionic_get_dma_mr`), which is every kernel PD and no user one.
    pub const PRIVILEGED: u16 = 1 << 15;

    use ernic_core::Access;

    const ALL: [(u16, Access); 3] = [
        (REMOTE_WRITE, Access::REMOTE_WRITE),
        (REMOTE_READ, Access::REMOTE_READ),
        (REMOTE_ATOMIC, Access::REMOTE_ATOMIC),
    ];

    /// The remote rights these flags grant.
    pub fn to_access(flags: u16) -> Access {
        super::rights(&ALL, flags)
    }

    /// The flags for `a`'s remote rights.
    pub fn from_access(a: Access) -> u16 {
        super::flags(&ALL, a)
    }
}

/// `enum ionic_mr_flags`: rights.
pub mod mrf {
    pub const LOCAL_WRITE: u16 = 1 << 0;
    pub const REMOTE_WRITE: u16 = 1 << 1;
    pub const REMOTE_READ: u16 = 1 << 2;
    pub const REMOTE_ATOMIC: u16 = 1 << 3;

    use ernic_core::Access;

    const ALL: [(u16, Access); 4] = [
        (LOCAL_WRITE, Access::LOCAL_WRITE),
        (REMOTE_WRITE, Access::REMOTE_WRITE),
        (REMOTE_READ, Access::REMOTE_READ),
        (REMOTE_ATOMIC, Access::REMOTE_ATOMIC),
    ];

    /// The rights these flags grant.
    pub fn to_access(flags: u16) -> Access {
        super::rights(&ALL, flags)
    }

    /// The flags for `a`'s rights.
    pub fn from_access(a: Access) -> u16 {
        super::flags(&ALL, a)
    }
}

/// The rights a flag word grants, by `table`.
fn rights(table: &[(u16, ernic_core::Access)], flags: u16) -> ernic_core::Access {
    let bits = table
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .fold(0, |acc, (_, a)| acc | a.0);
    ernic_core::Access(bits)
}

/// The flag word for rights `a`, by `table`.
fn flags(table: &[(u16, ernic_core::Access)], a: ernic_core::Access) -> u16 {
    table
        .iter()
        .filter(|(_, r)| a.contains(*r))
        .fold(0, |f, (bit, _)| f | bit)
}

/// `ib_qp_attr_mask` bits the driver passes in MODIFY_QP.
pub mod attr {
    pub const STATE: u32 = 1 << 0;
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    pub const QKEY: u32 = 1 << 6;
    pub const AV: u32 = 1 << 7;
    pub const PATH_MTU: u32 = 1 << 8;
    pub const RNR_RETRY: u32 = 1 << 11;
    pub const RQ_PSN: u32 = 1 << 12;
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const DEST_QPN: u32 = 1 << 20;
}

/// The id the driver gives the GSI QP.
pub const GSI_QPID: u32 = 1;

/// `enum ionic_v1_op`.
pub mod op {
    pub const SEND: u8 = 0;
    pub const SEND_INV: u8 = 1;
    pub const SEND_IMM: u8 = 2;
    pub const RDMA_READ: u8 = 3;
    pub const RDMA_WRITE: u8 = 4;
    pub const RDMA_WRITE_IMM: u8 = 5;
    pub const ATOMIC_CS: u8 = 6;
    pub const ATOMIC_FA: u8 = 7;
    pub const REG_MR: u8 = 8;
    pub const LOCAL_INV: u8 = 9;
    pub const BIND_MW: u8 = 10;
}

/// `enum ionic_status`: a failed work request's status in its CQE.
pub mod status {
    pub const OK: u32 = 0;
    pub const LOCAL_LEN_ERR: u32 = 1;
    pub const LOCAL_QP_OPER_ERR: u32 = 2;
    pub const LOCAL_PROT_ERR: u32 = 3;
    pub const WQE_FLUSHED_ERR: u32 = 4;
    pub const MEM_MGMT_OPER_ERR: u32 = 5;
    pub const BAD_RESP_ERR: u32 = 6;
    pub const LOCAL_ACC_ERR: u32 = 7;
    pub const REMOTE_INV_REQ_ERR: u32 = 8;
    pub const REMOTE_ACC_ERR: u32 = 9;
    pub const REMOTE_OPER_ERR: u32 = 10;
    pub const RETRY_EXCEEDED: u32 = 11;
    pub const RNR_RETRY_EXCEEDED: u32 = 12;

    use ernic_core::WcStatus;

    /// The core's status as ionic numbers it in a CQE (the device's side).
    pub fn from_wc(s: WcStatus) -> u32 {
        match s {
            WcStatus::Success => OK,
            WcStatus::LocLenErr => LOCAL_LEN_ERR,
            WcStatus::LocQpOpErr => LOCAL_QP_OPER_ERR,
            WcStatus::LocProtErr => LOCAL_PROT_ERR,
            WcStatus::WrFlushErr => WQE_FLUSHED_ERR,
            WcStatus::RemInvReqErr => REMOTE_INV_REQ_ERR,
            WcStatus::RemAccessErr => REMOTE_ACC_ERR,
            WcStatus::RemOpErr => REMOTE_OPER_ERR,
            WcStatus::RetryExcErr => RETRY_EXCEEDED,
            WcStatus::RnrRetryExcErr => RNR_RETRY_EXCEEDED,
            WcStatus::GeneralErr => BAD_RESP_ERR,
        }
    }

    /// The status of a CQE with its error bit set (the driver's side):
    /// what the core has no name for is a general error.
    pub fn to_wc(s: u32) -> WcStatus {
        match s {
            LOCAL_LEN_ERR => WcStatus::LocLenErr,
            LOCAL_QP_OPER_ERR => WcStatus::LocQpOpErr,
            LOCAL_PROT_ERR => WcStatus::LocProtErr,
            WQE_FLUSHED_ERR => WcStatus::WrFlushErr,
            REMOTE_INV_REQ_ERR => WcStatus::RemInvReqErr,
            REMOTE_ACC_ERR => WcStatus::RemAccessErr,
            REMOTE_OPER_ERR => WcStatus::RemOpErr,
            RETRY_EXCEEDED => WcStatus::RetryExcErr,
            RNR_RETRY_EXCEEDED => WcStatus::RnrRetryExcErr,
            _ => WcStatus::GeneralErr,
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_failure_status_survives_the_trip_through_a_cqe() {
            use WcStatus::*;
            for s in [
                LocLenErr,
                LocQpOpErr,
                LocProtErr,
                WrFlushErr,
                RemInvReqErr,
                RemAccessErr,
                RemOpErr,
                RetryExcErr,
                RnrRetryExcErr,
                GeneralErr,
            ] {
                assert_eq!(to_wc(from_wc(s)), s);
            }
            assert_eq!(from_wc(Success), OK);
            assert_eq!(from_wc(WrFlushErr), 4);
            assert_eq!(to_wc(LOCAL_ACC_ERR), GeneralErr);
        }
    }
}
