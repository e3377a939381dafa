//! BAR 0 of the ionic function, laid out as Linux's `ionic_if.h` and
//! `ionic_regs.h` define it: the device info block, the device command
//! registers, interrupt status, and one interrupt control block per
//! vector; above the 32 KiB register window, the MSI-X table and PBA.

/// Bytes of BAR 0 (the register window, then MSI-X).
pub const BAR0_SIZE: u64 = 64 << 10;
/// The register window (`IONIC_BAR0_SIZE`).
pub const WINDOW: usize = 0x8000;
/// `union ionic_dev_info_regs` (2 KiB).
pub const DEV_INFO: usize = 0x0000;
/// `union ionic_dev_cmd_regs` (2 KiB).
pub const DEV_CMD: usize = 0x0800;
/// `struct ionic_intr_status`.
pub const INTR_STATUS: usize = 0x1000;
/// `struct ionic_intr` per vector.
pub const INTR_CTRL: usize = 0x2000;
/// Bytes of one `struct ionic_intr`.
pub const INTR_CTRL_STRIDE: usize = 32;
/// The MSI-X table, above the window.
pub const MSIX_TABLE: u32 = 0x8000;
/// The MSI-X pending-bit array.
pub const MSIX_PBA: u32 = 0xa000;

/// Fields of `ionic_dev_info_regs`, as offsets in BAR 0.
pub mod info {
    /// `signature`: 'DEVI'.
    pub const SIGNATURE: usize = 0x00;
    /// `version`.
    pub const VERSION: usize = 0x04;
    /// `asic_type`.
    pub const ASIC_TYPE: usize = 0x05;
    /// `asic_rev`.
    pub const ASIC_REV: usize = 0x06;
    /// `fw_status`.
    pub const FW_STATUS: usize = 0x07;
    /// `fw_heartbeat`.
    pub const FW_HEARTBEAT: usize = 0x08;
    /// `fw_version[32]`.
    pub const FW_VERSION: usize = 0x0c;
    /// `serial_num[32]`.
    pub const SERIAL_NUM: usize = 0x2c;
    /// Buffer lengths of the two strings.
    pub const STRING_LEN: usize = 32;
    /// `IONIC_DEV_INFO_SIGNATURE`.
    pub const SIGNATURE_VALUE: u32 = 0x4445_5649;
    /// `IONIC_FW_STS_F_RUNNING`.
    pub const FW_RUNNING: u8 = 0x01;
}

/// Fields of `ionic_dev_cmd_regs`, as offsets in BAR 0.
pub mod cmd {
    /// `doorbell`: write 1 to run the command.
    pub const DOORBELL: usize = 0x800;
    /// `done`: bit 0 set when the command has completed.
    pub const DONE: usize = 0x804;
    /// `cmd`: 64 bytes.
    pub const CMD: usize = 0x808;
    /// `comp`: 16 bytes.
    pub const COMP: usize = 0x848;
    /// `data`: 478 words of side data.
    pub const DATA: usize = 0x888;
    /// Bytes of `data`.
    pub const DATA_LEN: usize = 478 * 4;
}

/// Fields of `struct ionic_intr`, as offsets in one vector's block.
pub mod intr {
    /// `coal_init`.
    pub const COAL_INIT: usize = 0x00;
    /// `mask`.
    pub const MASK: usize = 0x04;
    /// `credits`.
    pub const CREDITS: usize = 0x08;
    /// `mask_assert`.
    pub const MASK_ASSERT: usize = 0x0c;
    /// `coal`.
    pub const COAL: usize = 0x10;
    /// `IONIC_INTR_CRED_UNMASK`: a credits write that unmasks.
    pub const CRED_UNMASK: u32 = 0x1_0000;
    /// `IONIC_INTR_CRED_COUNT`.
    pub const CRED_COUNT: u32 = 0x7fff;
}

/// `enum ionic_cmd_opcode` (the device commands served here, and the rest
/// by number for their names in errors).
pub mod opcode {
    #![allow(missing_docs)]
    pub const NOP: u8 = 0;
    pub const IDENTIFY: u8 = 1;
    pub const INIT: u8 = 2;
    pub const RESET: u8 = 3;
    pub const GETATTR: u8 = 4;
    pub const SETATTR: u8 = 5;
    pub const PORT_IDENTIFY: u8 = 10;
    pub const PORT_INIT: u8 = 11;
    pub const PORT_RESET: u8 = 12;
    pub const LIF_IDENTIFY: u8 = 20;
    pub const LIF_INIT: u8 = 21;
    pub const LIF_RESET: u8 = 22;
    pub const LIF_GETATTR: u8 = 23;
    pub const LIF_SETATTR: u8 = 24;
    pub const RX_MODE_SET: u8 = 30;
    pub const RX_FILTER_ADD: u8 = 31;
    pub const RX_FILTER_DEL: u8 = 32;
    pub const PORT_GETATTR: u8 = 13;
    pub const PORT_SETATTR: u8 = 14;
    pub const Q_IDENTIFY: u8 = 39;
    pub const Q_INIT: u8 = 40;
    pub const Q_CONTROL: u8 = 41;
}

/// `enum ionic_status_code`.
pub mod status {
    #![allow(missing_docs)]
    pub const SUCCESS: u8 = 0;
    pub const EVERSION: u8 = 1;
    pub const EOPCODE: u8 = 2;
    pub const EPERM: u8 = 4;
    pub const EQID: u8 = 5;
    pub const EQTYPE: u8 = 6;
    pub const ENOENT: u8 = 7;
    pub const EFAULT: u8 = 11;
    pub const EEXIST: u8 = 13;
    pub const EINVAL: u8 = 14;
    pub const ENOSPC: u8 = 15;
    pub const ERROR: u8 = 29;
}

/// `union ionic_dev_identity`, as offsets in the command data window.
pub mod dev_identity {
    #![allow(missing_docs)]
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    pub const NPORTS: usize = 4;
    pub const NLIFS: usize = 8;
    pub const NINTRS: usize = 12;
    pub const NDBPGS_PER_LIF: usize = 16;
    pub const INTR_COAL_MULT: usize = 20;
    pub const INTR_COAL_DIV: usize = 24;
    pub const EQ_COUNT: usize = 28;
    pub const HWSTAMP_MASK: usize = 32;
    pub const HWSTAMP_MULT: usize = 40;
    pub const HWSTAMP_SHIFT: usize = 44;
    pub const CAPABILITIES: usize = 48;
    /// The newest identity version served (`IONIC_DEV_IDENTITY_VERSION_2`).
    pub const MAX_VERSION: u8 = 2;
}

/// `union ionic_lif_identity`, as offsets in the command data window
/// (`capabilities`, then the packed `eth` and `rdma` sections).
pub mod lif_identity {
    #![allow(missing_docs)]
    pub const CAPABILITIES: usize = 0;
    /// `IONIC_LIF_CAP_ETH`.
    pub const CAP_ETH: u64 = 1 << 0;
    /// `IONIC_LIF_CAP_RDMA`.
    pub const CAP_RDMA: u64 = 1 << 1;

    /// The `eth` section.
    pub const ETH: usize = 8;
    pub const ETH_VERSION: usize = ETH;
    pub const ETH_MAX_UCAST_FILTERS: usize = ETH + 4;
    pub const ETH_MAX_MCAST_FILTERS: usize = ETH + 8;
    pub const ETH_RSS_IND_TBL_SZ: usize = ETH + 12;
    pub const ETH_MIN_FRAME_SIZE: usize = ETH + 14;
    pub const ETH_MAX_FRAME_SIZE: usize = ETH + 18;
    /// `union ionic_lif_config` inside `eth`.
    pub const CONFIG: usize = ETH + 128;
    pub const CONFIG_STATE: usize = CONFIG;
    pub const CONFIG_NAME: usize = CONFIG + 4;
    pub const CONFIG_MTU: usize = CONFIG + 20;
    pub const CONFIG_MAC: usize = CONFIG + 24;
    pub const CONFIG_VLAN: usize = CONFIG + 30;
    pub const CONFIG_FEATURES: usize = CONFIG + 32;
    /// `queue_count[IONIC_QTYPE_MAX]` (u32 each), by logical queue type.
    pub const CONFIG_QUEUE_COUNT: usize = CONFIG + 40;

    /// The `rdma` section, after `eth` (384 bytes).
    pub const RDMA: usize = ETH + 384;
    pub const RDMA_VERSION: usize = RDMA;
    pub const RDMA_QP_OPCODES: usize = RDMA + 1;
    pub const RDMA_ADMIN_OPCODES: usize = RDMA + 2;
    pub const RDMA_MINOR_VERSION: usize = RDMA + 3;
    pub const RDMA_NPTS_PER_LIF: usize = RDMA + 4;
    pub const RDMA_NMRS_PER_LIF: usize = RDMA + 8;
    pub const RDMA_NAHS_PER_LIF: usize = RDMA + 12;
    pub const RDMA_MAX_STRIDE: usize = RDMA + 16;
    pub const RDMA_CL_STRIDE: usize = RDMA + 17;
    pub const RDMA_PTE_STRIDE: usize = RDMA + 18;
    pub const RDMA_RRQ_STRIDE: usize = RDMA + 19;
    pub const RDMA_RSQ_STRIDE: usize = RDMA + 20;
    pub const RDMA_DCQCN_PROFILES: usize = RDMA + 21;
    pub const RDMA_UDMA_SHIFT: usize = RDMA + 22;
    pub const RDMA_PAGE_SIZE_CAP: usize = RDMA + 24;
    /// `struct ionic_lif_logical_qtype` (qtype u8, 3 reserved, qid_count,
    /// qid_base) for AQ, SQ, RQ, CQ, EQ in that order.
    pub const RDMA_AQ_QTYPE: usize = RDMA + 32;
    pub const QTYPE_STRIDE: usize = 12;
    pub const RDMA_STATS_TYPE: usize = RDMA + 92;
    /// Bytes of the rdma section.
    pub const RDMA_LEN: usize = 256;
}

/// `struct ionic_port_info` (written at PORT_INIT's `info_pa`): the port
/// config, the packed port status, then the port statistics.
pub mod port_info {
    #![allow(missing_docs)]
    pub const CONFIG_SPEED: usize = 0;
    pub const CONFIG_MTU: usize = 4;
    pub const CONFIG_STATE: usize = 8;
    pub const STATUS: usize = 256;
    pub const STATUS_ID: usize = STATUS;
    pub const STATUS_SPEED: usize = STATUS + 4;
    pub const STATUS_STATUS: usize = STATUS + 8;
    pub const STATUS_LINK_DOWN_COUNT: usize = STATUS + 9;
    pub const STATUS_FEC_TYPE: usize = STATUS + 11;
    /// `struct ionic_xcvr_status`: state, phy, pid, `sprom[256]`.
    pub const XCVR: usize = STATUS + 60;
    pub const STATS: usize = STATUS + 320;
    /// Bytes written at PORT_INIT (config and status; the statistics
    /// follow as the device counts).
    pub const HEAD_LEN: usize = STATS;
    /// `IONIC_PORT_ADMIN_STATE_UP`.
    pub const ADMIN_UP: u8 = 2;
    /// `IONIC_PORT_OPER_STATUS_UP`.
    pub const OPER_UP: u8 = 1;
    /// `IONIC_XCVR_STATE_SPROM_READ`.
    pub const XCVR_SPROM_READ: u8 = 3;
    /// `IONIC_PHY_TYPE_COPPER`.
    pub const PHY_COPPER: u8 = 1;
    /// `IONIC_XCVR_PID_QSFP_100G_CR4`.
    pub const PID_QSFP_100G_CR4: u16 = 1;
}

/// `struct ionic_lif_info` (written at LIF_INIT's `info_pa`): the LIF
/// config, the LIF status, then the LIF statistics.
pub mod lif_info {
    #![allow(missing_docs)]
    pub const STATUS: usize = 256;
    pub const STATUS_EID: usize = STATUS;
    pub const STATUS_PORT_NUM: usize = STATUS + 8;
    pub const STATUS_LINK_STATUS: usize = STATUS + 10;
    pub const STATUS_LINK_SPEED: usize = STATUS + 12;
    pub const STATUS_LINK_DOWN_COUNT: usize = STATUS + 16;
    pub const STATS: usize = STATUS + 64;
    /// Bytes written at LIF_INIT (config and status).
    pub const HEAD_LEN: usize = STATS;
}

/// Offsets in the 64-byte command of PORT_INIT and LIF_INIT.
pub mod init_cmd {
    /// `info_pa`, in both.
    pub const INFO_PA: usize = 8;
    /// LIF_INIT's `index`.
    pub const LIF_INDEX: usize = 2;
}

/// `struct ionic_q_init_cmd` (packed) and its completion.
pub mod q_init {
    #![allow(missing_docs)]
    pub const TYPE: usize = 4;
    pub const VER: usize = 5;
    pub const INDEX: usize = 8;
    pub const PID: usize = 12;
    pub const INTR_INDEX: usize = 14;
    pub const FLAGS: usize = 16;
    pub const COS: usize = 18;
    pub const RING_SIZE: usize = 19;
    pub const RING_BASE: usize = 20;
    pub const CQ_RING_BASE: usize = 28;
    pub const SG_RING_BASE: usize = 36;
    pub const FEATURES: usize = 56;
    /// `IONIC_QINIT_F_IRQ`.
    pub const F_IRQ: u16 = 0x01;
    /// `IONIC_QINIT_F_ENA`.
    pub const F_ENA: u16 = 0x02;
    /// The deepest ring accepted: 2^15 descriptors (seed 001).
    pub const MAX_RING_SIZE: u8 = 15;
    /// Completion: `hw_index` (u32) and `hw_type`.
    pub const COMP_HW_INDEX: usize = 4;
    pub const COMP_HW_TYPE: usize = 8;
}

/// `struct ionic_q_control_cmd`.
pub mod q_control {
    #![allow(missing_docs)]
    pub const TYPE: usize = 1;
    pub const INDEX: usize = 4;
    pub const OPER: usize = 8;
    /// `IONIC_Q_DISABLE`, `IONIC_Q_ENABLE`, `IONIC_Q_HANG_RESET`.
    pub const DISABLE: u8 = 0;
    pub const ENABLE: u8 = 1;
    pub const HANG_RESET: u8 = 2;
}

/// `struct ionic_q_identify_cmd`, its completion's `ver`, and `union
/// ionic_q_identity` in the data window.
pub mod q_identify {
    #![allow(missing_docs)]
    pub const TYPE: usize = 4;
    pub const VER: usize = 5;
    pub const COMP_VER: usize = 4;
    pub const ID_VERSION: usize = 0;
    pub const ID_SUPPORTED: usize = 1;
    pub const ID_FEATURES: usize = 8;
    pub const ID_DESC_SZ: usize = 16;
    pub const ID_COMP_SZ: usize = 18;
    pub const ID_SG_DESC_SZ: usize = 20;
    pub const ID_MAX_SG_ELEMS: usize = 22;
    pub const ID_SG_DESC_STRIDE: usize = 24;
    /// `IONIC_QIDENT_F_CQ`.
    pub const F_CQ: u64 = 1 << 0;
}

/// `enum ionic_logical_qtype` (the Ethernet ones).
pub mod qtype {
    #![allow(missing_docs)]
    pub const ADMINQ: u8 = 0;
    pub const NOTIFYQ: u8 = 1;
    pub const RXQ: u8 = 2;
    pub const TXQ: u8 = 3;
    // The RDMA ones, as LIF_IDENTIFY's RDMA section numbers them.
    pub const RDMA_AQ: u8 = 5;
    pub const RDMA_SQ: u8 = 6;
    pub const RDMA_RQ: u8 = 7;
    pub const RDMA_CQ: u8 = 8;
    pub const RDMA_EQ: u8 = 9;
}

/// LIF_GETATTR / LIF_SETATTR: the attribute byte, `IONIC_LIF_ATTR_MAC`,
/// where a SETATTR carries its value and where a GETATTR completion
/// answers it.
pub mod lif_attr {
    #![allow(missing_docs)]
    pub const ATTR: usize = 1;
    /// `IONIC_LIF_ATTR_MAC`.
    pub const MAC: u8 = 3;
    /// The value in the command (after opcode, attr, index).
    pub const VALUE: usize = 4;
    /// The value in the completion (after status, rsvd, comp_index).
    pub const COMP_VALUE: usize = 4;
}
