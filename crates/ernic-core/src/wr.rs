//! Work requests and completions: the core's own, front-end neutral forms.
//!
//! A front end decodes its format (ionic WQEs in guest rings, or a Rust call)
//! into a [`SendWr`] or [`RecvWr`], and encodes each [`Completion`] the engine
//! produces into its own format (a 32-byte ionic CQE, or a native work
//! completion). Statuses and opcodes keep the numbering of libibverbs'
//! `ibv_wc_status` and `ibv_wc_opcode`, which readers of this code know.

use std::fmt;

use crate::types::{AhId, Lkey, Qpn, Rkey};

/// Memory access rights, as `ibv_access_flags` numbers them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Access(pub u32);

impl Access {
    /// No rights beyond local read.
    pub const NONE: Access = Access(0);
    /// The device may write the memory on behalf of a local request (receives, READ results).
    pub const LOCAL_WRITE: Access = Access(1);
    /// A peer may RDMA WRITE the memory.
    pub const REMOTE_WRITE: Access = Access(2);
    /// A peer may RDMA READ the memory.
    pub const REMOTE_READ: Access = Access(4);
    /// A peer may run atomics on the memory.
    pub const REMOTE_ATOMIC: Access = Access(8);
    /// Every right.
    pub const ALL: Access = Access(0xf);

    /// Whether every right in `other` is also in `self`.
    pub const fn contains(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the remote rights given come with the local write right they need
    /// (verbs refuses REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE).
    pub const fn is_consistent(self) -> bool {
        let needs_local = self.0 & (Self::REMOTE_WRITE.0 | Self::REMOTE_ATOMIC.0) != 0;
        !needs_local || self.0 & Self::LOCAL_WRITE.0 != 0
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, rhs: Access) -> Access {
        Access(self.0 | rhs.0)
    }
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Self::LOCAL_WRITE, "LOCAL_WRITE"),
            (Self::REMOTE_WRITE, "REMOTE_WRITE"),
            (Self::REMOTE_READ, "REMOTE_READ"),
            (Self::REMOTE_ATOMIC, "REMOTE_ATOMIC"),
        ];
        let mut first = true;
        write!(f, "Access(")?;
        for (bit, name) in names {
            if self.contains(bit) {
                if !first {
                    write!(f, "|")?;
                }
                write!(f, "{name}")?;
                first = false;
            }
        }
        write!(f, ")")
    }
}

/// One scatter/gather element: `len` bytes at `addr`, in the memory `lkey` names.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Sge {
    /// Address in the key's address space (the MR's virtual address range).
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// The key of the MR that holds the buffer; key 0 is the reserved DMA key
    /// where the engine allows it.
    pub lkey: Lkey,
}

/// Remote memory named by a peer's rkey.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RemoteAddr {
    /// Address in the remote MR's address range.
    pub addr: u64,
    /// The remote key.
    pub rkey: Rkey,
}

/// Where the pages of a fast registration come from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PageSource {
    /// The region is one contiguous run starting at this DMA address.
    Contiguous {
        /// DMA address of the first byte.
        dma: u64,
    },
    /// A table of `count` little-endian 64-bit page addresses, itself at DMA
    /// address `table`; the region starts `first_offset` bytes into the first page.
    Table {
        /// DMA address of the page table.
        table: u64,
        /// Number of entries.
        count: u32,
        /// Page size as a power of two (12 for 4 KiB).
        page_shift: u8,
        /// Offset of the region's first byte within the first page.
        first_offset: u32,
    },
}

/// The arguments of a fast registration (REG_MR) work request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RegMr {
    /// The new key; its index must name a fast-registration MR of this QP's PD.
    pub key: Lkey,
    /// First virtual address of the region.
    pub iova: u64,
    /// Length of the region.
    pub len: u64,
    /// Rights granted through the new key.
    pub access: Access,
    /// Where the region's pages are.
    pub pages: PageSource,
}

/// The operation of a send queue work request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SendOp {
    /// Two-sided send into the peer's next posted receive.
    Send,
    /// Send carrying 32 bits of immediate data.
    SendImm(u32),
    /// Send that invalidates the given rkey at the responder.
    SendInv(Rkey),
    /// RDMA WRITE of the local SGEs to remote memory.
    Write(RemoteAddr),
    /// RDMA WRITE that also consumes a receive at the peer and reports the immediate.
    WriteImm(RemoteAddr, u32),
    /// RDMA READ of remote memory into the local SGEs.
    Read(RemoteAddr),
    /// 8-byte compare-and-swap; the old value lands in the local SGE.
    AtomicCas {
        /// Target (8-byte aligned).
        remote: RemoteAddr,
        /// Value to compare with.
        compare: u64,
        /// Value written when equal.
        swap: u64,
    },
    /// 8-byte fetch-and-add; the old value lands in the local SGE.
    AtomicFa {
        /// Target (8-byte aligned).
        remote: RemoteAddr,
        /// Value to add.
        add: u64,
    },
    /// Fast registration: bind a new key and pages to a pre-allocated MR.
    RegMr(RegMr),
    /// Unbind a key from its MR.
    LocalInv(Lkey),
}

impl SendOp {
    /// The opcode its completion reports.
    pub fn wc_opcode(&self) -> WcOpcode {
        match self {
            SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => WcOpcode::Send,
            SendOp::Write(_) | SendOp::WriteImm(..) => WcOpcode::RdmaWrite,
            SendOp::Read(_) => WcOpcode::RdmaRead,
            SendOp::AtomicCas { .. } => WcOpcode::CompSwap,
            SendOp::AtomicFa { .. } => WcOpcode::FetchAdd,
            SendOp::RegMr(_) => WcOpcode::RegMr,
            SendOp::LocalInv(_) => WcOpcode::LocalInv,
        }
    }

    /// Whether this operation delivers a message to the peer's receive queue.
    pub fn consumes_receive(&self) -> bool {
        matches!(
            self,
            SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) | SendOp::WriteImm(..)
        )
    }
}

/// Flags of a send work request.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SendFlags {
    /// Report a completion to the application even on success.
    pub signaled: bool,
    /// Ask the peer for a solicited event.
    pub solicited: bool,
    /// The payload is carried in the work request itself ([`SendWr::inline_data`]).
    pub inline: bool,
    /// Wait for earlier READs and atomics before this one.
    pub fence: bool,
}

/// The destination of a datagram (UD or GSI) send.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct UdDest {
    /// The address handle naming the destination GID.
    pub ah: AhId,
    /// The destination QP number.
    pub remote_qpn: Qpn,
    /// The Q_Key; one with the high bit set is *controlled*: the sending QP's
    /// own Q_Key is used instead.
    pub remote_qkey: u32,
}

/// A send queue work request, as a front end hands it to the engine.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a> {
    /// The caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp,
    /// Flags.
    pub flags: SendFlags,
    /// Local buffers (the source of SEND/WRITE, the destination of READ and atomics).
    pub sgl: &'a [Sge],
    /// The payload when `flags.inline` is set; `sgl` is then ignored.
    pub inline_data: &'a [u8],
    /// Destination of a datagram send; required on UD and GSI QPs.
    pub ud: Option<UdDest>,
    /// A front end that could not decode the request it was given sets the
    /// status here; the engine completes the request with it, in order.
    pub decode_error: Option<WcStatus>,
}

impl<'a> SendWr<'a> {
    /// A signaled request with no buffers.
    pub fn new(wr_id: u64, op: SendOp) -> SendWr<'a> {
        SendWr {
            wr_id,
            op,
            flags: SendFlags {
                signaled: true,
                ..SendFlags::default()
            },
            sgl: &[],
            inline_data: &[],
            ud: None,
            decode_error: None,
        }
    }

    /// The same request with these local buffers.
    pub fn sgl(mut self, sgl: &'a [Sge]) -> SendWr<'a> {
        self.sgl = sgl;
        self
    }

    /// The same request carrying `data` inline.
    pub fn inline(mut self, data: &'a [u8]) -> SendWr<'a> {
        self.flags.inline = true;
        self.inline_data = data;
        self
    }

    /// The same request, signaled or not.
    pub fn signaled(mut self, signaled: bool) -> SendWr<'a> {
        self.flags.signaled = signaled;
        self
    }

    /// The same request, sent as a datagram to `ud`.
    pub fn to(mut self, ud: UdDest) -> SendWr<'a> {
        self.ud = Some(ud);
        self
    }
}

/// A receive work request.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    /// The caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Buffers the message is scattered into.
    pub sgl: &'a [Sge],
}

/// Completion status, numbered as `ibv_wc_status`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum WcStatus {
    /// The request completed.
    Success = 0,
    /// A length did not fit: a receive buffer too small, a message too long.
    LocLenErr = 1,
    /// The request is not valid for this QP (wrong opcode for the type, no destination).
    LocQpOpErr = 2,
    /// A local key, range or right did not hold.
    LocProtErr = 4,
    /// The QP went to the error state before the request ran.
    WrFlushErr = 5,
    /// The responder found the request invalid (misaligned atomic, receive too small).
    RemInvReqErr = 9,
    /// The responder refused the rkey, range or right.
    RemAccessErr = 10,
    /// The responder could not carry the request out.
    RemOpErr = 11,
    /// No answer from the peer: it is gone or unreachable.
    RetryExcErr = 12,
    /// The peer had no receive posted for longer than the RNR timeout.
    RnrRetryExcErr = 13,
    /// An internal failure.
    GeneralErr = 21,
}

impl WcStatus {
    /// Every status, for tables and counters.
    pub const ALL: [WcStatus; 11] = [
        WcStatus::Success,
        WcStatus::LocLenErr,
        WcStatus::LocQpOpErr,
        WcStatus::LocProtErr,
        WcStatus::WrFlushErr,
        WcStatus::RemInvReqErr,
        WcStatus::RemAccessErr,
        WcStatus::RemOpErr,
        WcStatus::RetryExcErr,
        WcStatus::RnrRetryExcErr,
        WcStatus::GeneralErr,
    ];

    /// Whether this is the success status.
    pub fn is_ok(self) -> bool {
        self == WcStatus::Success
    }

    /// The status as `ibv_wc_status_str` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            WcStatus::Success => "success",
            WcStatus::LocLenErr => "local length error",
            WcStatus::LocQpOpErr => "local QP operation error",
            WcStatus::LocProtErr => "local protection error",
            WcStatus::WrFlushErr => "Work Request Flushed Error",
            WcStatus::RemInvReqErr => "remote invalid request error",
            WcStatus::RemAccessErr => "remote access error",
            WcStatus::RemOpErr => "remote operation error",
            WcStatus::RetryExcErr => "transport retry counter exceeded",
            WcStatus::RnrRetryExcErr => "RNR retry counter exceeded",
            WcStatus::GeneralErr => "general error",
        }
    }

    /// The status with this `ibv_wc_status` number, if it is one the engine reports.
    pub fn from_u8(v: u8) -> Option<WcStatus> {
        WcStatus::ALL.into_iter().find(|s| *s as u8 == v)
    }
}

impl fmt::Display for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Completion opcode, numbered as `ibv_wc_opcode`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum WcOpcode {
    /// SEND, SEND_IMM or SEND_INV.
    Send = 0,
    /// RDMA WRITE (with or without immediate).
    RdmaWrite = 1,
    /// RDMA READ.
    RdmaRead = 2,
    /// Compare-and-swap.
    CompSwap = 3,
    /// Fetch-and-add.
    FetchAdd = 4,
    /// Local invalidate.
    LocalInv = 7,
    /// Fast registration.
    RegMr = 9,
    /// A received message.
    Recv = 128,
    /// A received RDMA WRITE with immediate.
    RecvRdmaWithImm = 129,
}

/// One completion, produced exactly once for every work request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Completion {
    /// The work request's identifier.
    pub wr_id: u64,
    /// How it ended.
    pub status: WcStatus,
    /// What it was.
    pub opcode: WcOpcode,
    /// The QP it belongs to.
    pub qpn: Qpn,
    /// Bytes received (receives), or transferred (sends).
    pub byte_len: u32,
    /// Immediate data, for SEND_IMM and WRITE_IMM receives.
    pub imm: Option<u32>,
    /// The rkey a SEND_INV invalidated at this receiver.
    pub invalidated: Option<Rkey>,
    /// For datagram receives: the sending QP.
    pub src_qpn: Qpn,
    /// For datagram receives: a 40-byte GRH precedes the payload.
    pub grh: bool,
    /// That GRH is in RoCE v2's IPv4 form (both GIDs IPv4-mapped).
    pub grh_ipv4: bool,
    /// Whether the application asked to see it (send side); receives always are.
    pub signaled: bool,
    /// The send queue index (send completions) within the QP's ring.
    pub sq_index: u32,
    /// For receives: the sender asked for a solicited event.
    pub solicited: bool,
}

impl Completion {
    /// A placeholder, for filling output buffers before a poll.
    pub const EMPTY: Completion = Completion {
        wr_id: 0,
        status: WcStatus::Success,
        opcode: WcOpcode::Send,
        qpn: Qpn(0),
        byte_len: 0,
        imm: None,
        invalidated: None,
        src_qpn: Qpn(0),
        grh: false,
        grh_ipv4: false,
        signaled: false,
        sq_index: 0,
        solicited: false,
    };
}

/// A completion bound for a CQ.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CqEvent {
    /// The device whose CQ it goes to.
    pub device: crate::DeviceId,
    /// The CQ.
    pub cq: crate::CqId,
    /// The completion.
    pub completion: Completion,
}
