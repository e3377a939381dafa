//! The RDMA side's formats, as Linux's `drivers/infiniband/hw/ionic/ionic_fw.h`
//! lays them out (firmware ABI v1): admin WQEs and their commands, CQEs,
//! EQEs, and the numbering of QP types, states and statuses. Offsets are
//! bytes from the start of the structure named; multi-byte fields are
//! little-endian unless the name says `_BE`. `tests/layout.rs` checks every
//! one against the header.

#![allow(missing_docs)]

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

/// The SRQ commands' layouts (ernic's). CREATE_SRQ: its ring (depth,
/// stride, page size, a direct or tabled page list), low watermark and
/// protection domain (the driver's `pd_id`, as CREATE_QP carries it; a QP
/// may draw only from an SRQ of its own PD); the CQE answers the id the
/// device gave it (above the QP id range, so the RQ doorbell type reaches
/// it). MODIFY_SRQ: id and limit. QUERY_SRQ:
/// id; the CQE answers the limit and the receives outstanding.
/// DESTROY_SRQ: id. A QP draws from an SRQ when CREATE_QP gives no RQ
/// ring and names the SRQ in `rq_tbl_index_srq_id`.
pub mod srq {
    pub const DEPTH_LOG2: usize = 0;
    pub const STRIDE_LOG2: usize = 1;
    pub const PAGE_SIZE_LOG2: usize = 2;
    pub const MAP_COUNT: usize = 4;
    pub const DMA_ADDR: usize = 8;
    pub const LIMIT: usize = 16;
    pub const PD_ID: usize = 20;
    pub const CREATE_LEN: usize = 24;
    pub const ID: usize = 0;
    pub const MODIFY_LIMIT: usize = 4;
    pub const MODIFY_LEN: usize = 8;
    /// Where an SRQ command's results go in its admin CQE (after `cmd_op`,
    /// in `admin.rsvd`): two little-endian words.
    pub const CQE_RESULT: usize = 4;
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

/// `struct ionic_v1_admin_wqe`: a 4-byte header, then the command, which
/// continues into the following 64-byte strides when it is longer than 60.
pub mod admin_wqe {
    pub const OP: usize = 0;
    pub const LEN: usize = 2;
    pub const CMD: usize = 4;
    /// `ADMIN_WQE_STRIDE`.
    pub const STRIDE: usize = 64;
    /// `ADMIN_WQE_HDR_LEN`.
    pub const HDR_LEN: usize = 4;
}

/// `struct ionic_admin_create_cq` (34 bytes).
pub mod create_cq {
    pub const EQ_ID: usize = 0;
    pub const DEPTH_LOG2: usize = 4;
    pub const STRIDE_LOG2: usize = 5;
    pub const PAGE_SIZE_LOG2: usize = 7;
    pub const CQ_FLAGS: usize = 8;
    pub const ID_VER: usize = 12;
    pub const TBL_INDEX: usize = 16;
    pub const MAP_COUNT: usize = 20;
    pub const DMA_ADDR: usize = 24;
    pub const DBID_FLAGS: usize = 32;
    pub const LEN: usize = 34;
}

/// `struct ionic_admin_create_qp` (64 bytes).
pub mod create_qp {
    pub const PD_ID: usize = 0;
    pub const PRIV_FLAGS_BE: usize = 4;
    pub const SQ_CQ_ID: usize = 8;
    pub const SQ_DEPTH_LOG2: usize = 12;
    pub const SQ_STRIDE_LOG2: usize = 13;
    pub const SQ_PAGE_SIZE_LOG2: usize = 15;
    pub const SQ_TBL_INDEX_XRCD_ID: usize = 16;
    pub const SQ_MAP_COUNT: usize = 20;
    pub const SQ_DMA_ADDR: usize = 24;
    pub const RQ_CQ_ID: usize = 32;
    pub const RQ_DEPTH_LOG2: usize = 36;
    pub const RQ_STRIDE_LOG2: usize = 37;
    pub const RQ_PAGE_SIZE_LOG2: usize = 39;
    pub const RQ_TBL_INDEX_SRQ_ID: usize = 40;
    pub const RQ_MAP_COUNT: usize = 44;
    pub const RQ_DMA_ADDR: usize = 48;
    pub const ID_VER: usize = 56;
    pub const DBID_FLAGS: usize = 60;
    pub const TYPE_STATE: usize = 62;
    pub const LEN: usize = 64;
}

/// `struct ionic_admin_mod_qp` (60 bytes).
pub mod mod_qp {
    pub const ATTR_MASK_BE: usize = 0;
    pub const ACCESS_FLAGS_BE: usize = 6;
    pub const RQ_PSN: usize = 8;
    pub const SQ_PSN: usize = 12;
    pub const QKEY_DEST_QPN: usize = 16;
    pub const PMTU: usize = 24;
    pub const AH_ID_LEN: usize = 32;
    pub const TYPE_STATE: usize = 39;
    pub const DMA_ADDR: usize = 48;
    pub const ID_VER: usize = 56;
    pub const LEN: usize = 60;
}

/// `struct ionic_admin_query_qp` (34 bytes).
pub mod query_qp {
    pub const HDR_DMA_ADDR: usize = 0;
    pub const SQ_DMA_ADDR: usize = 8;
    pub const RQ_DMA_ADDR: usize = 16;
    pub const AH_ID: usize = 24;
    pub const ID_VER: usize = 28;
    pub const LEN: usize = 34;
}

/// `struct ionic_admin_create_mr` (45 bytes).
pub mod create_mr {
    pub const VA: usize = 0;
    pub const LENGTH: usize = 8;
    pub const PD_ID: usize = 16;
    pub const ID_VER: usize = 20;
    pub const TBL_INDEX: usize = 24;
    pub const MAP_COUNT: usize = 28;
    pub const DMA_ADDR: usize = 32;
    pub const DBID_FLAGS: usize = 40;
    pub const PT_TYPE: usize = 42;
    pub const DIR_SIZE_LOG2: usize = 43;
    pub const PAGE_SIZE_LOG2: usize = 44;
    pub const LEN: usize = 45;
}

/// `struct ionic_admin_create_ah` (24 bytes).
pub mod create_ah {
    pub const DMA_ADDR: usize = 0;
    pub const LENGTH: usize = 8;
    pub const PD_ID: usize = 12;
    pub const ID_VER: usize = 16;
    pub const LEN: usize = 24;
}

/// `struct ionic_admin_stats_hdr` (17 bytes).
pub mod stats_hdr {
    pub const DMA_ADDR: usize = 0;
    pub const LENGTH: usize = 8;
    pub const ID_VER: usize = 12;
    pub const LEN: usize = 17;
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

/// `struct ionic_v1_cqe` (32 bytes).
pub mod cqe {
    pub const LEN: usize = 32;
    pub const ADMIN_CMD_IDX_BE: usize = 0;
    pub const ADMIN_CMD_OP: usize = 2;
    pub const RECV_WQE_ID: usize = 0;
    pub const RECV_SRC_QPN_OP_BE: usize = 8;
    pub const RECV_SRC_MAC: usize = 12;
    pub const RECV_IMM_DATA_RKEY_BE: usize = 20;
    pub const SEND_MSG_MSN_BE: usize = 4;
    pub const SEND_NPG_WQE_ID: usize = 16;
    pub const STATUS_LENGTH_BE: usize = 24;
    pub const QID_TYPE_FLAGS_BE: usize = 28;
    // qid_type_flags bits.
    pub const COLOR: u32 = 1 << 0;
    pub const ERROR: u32 = 1 << 1;
    pub const TYPE_SHIFT: u32 = 5;
    pub const QID_SHIFT: u32 = 8;
    pub const TYPE_ADMIN: u32 = 0;
    pub const TYPE_RECV: u32 = 1;
    pub const TYPE_SEND_MSN: u32 = 2;
    pub const TYPE_SEND_NPG: u32 = 3;
}

/// `struct ionic_v1_eqe`: one big-endian word.
pub mod eqe {
    pub const LEN: usize = 4;
    pub const COLOR: u32 = 1 << 0;
    pub const TYPE_SHIFT: u32 = 1;
    pub const CODE_SHIFT: u32 = 4;
    pub const QID_SHIFT: u32 = 8;
    pub const TYPE_CQ: u32 = 0;
    pub const CQ_NOTIFY: u32 = 0;
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
    pub const RQ_PSN: u32 = 1 << 12;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const DEST_QPN: u32 = 1 << 20;
}

/// The id the driver gives the GSI QP.
pub const GSI_QPID: u32 = 1;

/// `struct ionic_v1_wqe`: the base header, then the body by operation.
pub mod wqe {
    pub const WQE_ID: usize = 0;
    pub const OP: usize = 8;
    pub const NUM_SGE_KEY: usize = 9;
    pub const FLAGS_BE: usize = 10;
    pub const IMM_DATA_KEY_BE: usize = 12;
    // common body (send and RDMA)
    pub const AH_ID_BE: usize = 16;
    pub const DEST_QPN_BE: usize = 20;
    pub const DEST_QKEY_BE: usize = 24;
    pub const REMOTE_VA_HIGH_BE: usize = 16;
    pub const REMOTE_VA_LOW_BE: usize = 20;
    pub const REMOTE_RKEY_BE: usize = 24;
    pub const LENGTH_BE: usize = 28;
    /// The payload: SGEs, or inline data (common and receive bodies).
    pub const PLD: usize = 32;
    // atomic body
    pub const SWAP_ADD_HIGH_BE: usize = 28;
    pub const SWAP_ADD_LOW_BE: usize = 32;
    pub const COMPARE_HIGH_BE: usize = 36;
    pub const COMPARE_LOW_BE: usize = 40;
    pub const ATOMIC_SGE: usize = 48;
    // reg_mr body
    pub const REG_VA_BE: usize = 16;
    pub const REG_LENGTH_BE: usize = 24;
    pub const REG_OFFSET_BE: usize = 32;
    pub const REG_DMA_ADDR_BE: usize = 40;
    pub const REG_MAP_COUNT_BE: usize = 48;
    pub const REG_FLAGS_BE: usize = 52;
    pub const REG_PAGE_SIZE_LOG2: usize = 55;
    /// Bytes of `struct ionic_sge`: va (be64), len (be32), lkey (be32).
    pub const SGE_LEN: usize = 16;
    /// The smallest WQE (`sizeof(struct ionic_v1_wqe)`).
    pub const MIN_LEN: usize = 64;
    // flags
    pub const FLAG_FENCE: u16 = 1 << 0;
    pub const FLAG_SOL: u16 = 1 << 1;
    pub const FLAG_INL: u16 = 1 << 2;
    pub const FLAG_SIG: u16 = 1 << 3;
    pub const FLAG_SPEC32: u16 = 1 << 12;
    pub const FLAG_SPEC16: u16 = 2 << 12;
    /// SGEs start here in the SPEC forms (`IONIC_V1_SPEC_FIRST_SGE`).
    pub const SPEC_FIRST_SGE: usize = 2;
}

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
}

/// Receive CQE operation codes (`src_qpn_op` bits 24 and up).
pub mod recv_op {
    pub const SEND: u32 = 0;
    pub const SEND_INV: u32 = 1;
    pub const SEND_IMM: u32 = 2;
    pub const RDMA_IMM: u32 = 3;
    pub const SHIFT: u32 = 24;
    /// `IONIC_V1_CQE_RECV_IS_IPV4`: the GRH holds an IPv4 header.
    pub const IS_IPV4: u32 = 1 << 31;
}
