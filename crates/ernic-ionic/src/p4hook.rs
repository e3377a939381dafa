//! The device's hooks for a match-action engine (seed 001, "The P4
//! Engine"): the traits the function calls on its Ethernet path
//! ([`FrameFilter`]), on its RDMA send path ([`SendFilter`]) and for the
//! guest's device commands 70 to 72 ([`P4Control`]), and the layout of
//! those commands ([`cmd`]).
//!
//! This crate defines the hooks and never implements them: the engine
//! (`ernic-p4`) is not a dependency, and a server installs an adapter
//! through [`IonicFunction`](crate::function::IonicFunction)'s `with_*`
//! builders. With no hook installed the device behaves exactly as it does
//! without this module. What the device promises a hook: a [`FrameFilter`]
//! sees every frame between the guest and the wire except those an
//! in-process endpoint claims or sends; a [`SendFilter`] sees only send
//! WQEs whose local memory checks passed, and never names guest memory
//! itself (a transform gets copies); a [`P4Control`] sees a command only
//! when the [`GuestScope`] allows it, with its input already copied out of
//! guest memory and bounded by [`cmd::MAX_INPUT`]. Every hook runs on the
//! device's own thread.

/// Which side of the device a frame comes from or goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The guest: a frame it transmitted, or one for its receive ring.
    Guest,
    /// The wire (the TAP or socket): a frame from it, or one for it.
    Wire,
}

/// A filter on the Ethernet frames between the guest and the wire.
pub trait FrameFilter: Send {
    /// A frame arriving from `from` (Guest = the guest transmitted it;
    /// Wire = it came from the TAP). The filter emits zero or more frames
    /// through `emit(to_side, bytes)`; emitting none drops it. The device
    /// counts drops.
    fn filter(&mut self, from: Side, frame: &[u8], emit: &mut dyn FnMut(Side, &[u8]));
}

/// A send WQE's operation, as a filter sees it (`From<u8>` of the
/// firmware's v1 opcode, `fw::op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WqeOpcode {
    /// SEND.
    Send,
    /// SEND with immediate.
    SendImm,
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate.
    WriteImm,
    /// RDMA READ.
    Read,
    /// Atomic compare and swap.
    CmpSwap,
    /// Atomic fetch and add.
    FetchAdd,
    /// Any other opcode (SEND with invalidate among them), as the WQE has it.
    Other(u8),
}

impl From<u8> for WqeOpcode {
    fn from(op: u8) -> WqeOpcode {
        use crate::fw::op;
        match op {
            op::SEND => WqeOpcode::Send,
            op::SEND_IMM => WqeOpcode::SendImm,
            op::RDMA_WRITE => WqeOpcode::Write,
            op::RDMA_WRITE_IMM => WqeOpcode::WriteImm,
            op::RDMA_READ => WqeOpcode::Read,
            op::ATOMIC_CS => WqeOpcode::CmpSwap,
            op::ATOMIC_FA => WqeOpcode::FetchAdd,
            other => WqeOpcode::Other(other),
        }
    }
}

/// One local buffer of a WQE (an SGE), as the WQE names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LocalRegion {
    /// The MR's key (0: the reserved DMA key).
    pub lkey: u32,
    /// The address in the MR's range.
    pub addr: u64,
    /// Bytes.
    pub len: u32,
}

/// A send WQE whose local memory checks passed, about to run.
#[derive(Debug, Clone, Copy)]
pub struct SendWqe<'a> {
    /// The operation.
    pub opcode: WqeOpcode,
    /// The QP it was posted on.
    pub qpn: u32,
    /// The destination QP: the connected peer's, or a datagram's; 0 when
    /// neither is known.
    pub dest_qpn: u32,
    /// Bytes the WQE moves (the sum of its SGEs, or its inline bytes).
    pub length: u64,
    /// Its SGEs (empty for inline data).
    pub sges: &'a [LocalRegion],
    /// The remote rkey and address of a WRITE, READ or atomic.
    pub remote: Option<(u32, u64)>,
    /// Whether the rkey names a valid MR of this device and the
    /// destination QP is on this device (what [`SendVerdict::Transform`]
    /// needs); anything not resolvable here counts as remote.
    pub remote_is_local: bool,
    /// The immediate data (SEND or WRITE with immediate), else 0.
    pub imm: u32,
}

/// What a [`SendFilter`] decided for a WQE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendVerdict {
    /// Run it as posted.
    Pass,
    /// Do nothing; it completes with `IONIC_V1_STS_LOCAL_PROT_ERR`
    /// (`IBV_WC_LOC_PROT_ERR`): the local device refused the request for
    /// a protection reason, before it reached any responder.
    Drop,
    /// Run transform `op` (a token the filter chose) over an RDMA WRITE
    /// into a local MR instead of copying; see [`SendFilter::transform`].
    Transform(u32),
}

/// A filter on the RDMA send queue.
pub trait SendFilter: Send {
    /// Decides what becomes of `wqe`.
    fn on_send(&mut self, wqe: &SendWqe<'_>) -> SendVerdict;

    /// Apply transform `op` to an RDMA WRITE: `src` = the WQE's gathered
    /// local bytes, `dst` = the current contents of the destination region
    /// (read from guest memory); the device writes `dst` back afterwards.
    fn transform(&mut self, op: u32, src: &[u8], dst: &mut [u8]) -> Result<(), String>;

    /// Bytes of the destination region transform `op` reads and writes for
    /// `src_len` bytes of source (a conversion may widen or narrow); `None`
    /// refuses the transform. By default the destination is as long as the
    /// source, as a plain WRITE's is.
    fn transform_dst_len(&mut self, op: u32, src_len: u64) -> Option<u64> {
        let _ = op;
        Some(src_len)
    }
}

/// How far the guest may reach the engine through device commands 70-72.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuestScope {
    /// Not at all: 70-72 are unknown opcodes, and LIF_IDENTIFY does not
    /// advertise the engine.
    #[default]
    None,
    /// Runtime commands (71) and status (72); loading a program (70) is
    /// refused with `IONIC_RC_EPERM`.
    Tables,
    /// All three.
    Program,
}

impl std::str::FromStr for GuestScope {
    type Err = String;
    fn from_str(s: &str) -> Result<GuestScope, String> {
        match s {
            "none" => Ok(GuestScope::None),
            "tables" => Ok(GuestScope::Tables),
            "program" => Ok(GuestScope::Program),
            other => Err(format!(
                "unknown P4 guest scope {other:?} (none, tables or program)"
            )),
        }
    }
}

/// The engine's control interface, as device commands 70-72 reach it.
pub trait P4Control: Send {
    /// 70 = load a program (JSON text), 71 = runtime commands
    /// (simple_switch_CLI text, output returned), 72 = status (text).
    fn command(&mut self, opcode: u8, input: &[u8], output: &mut Vec<u8>) -> Result<(), String>;
}

/// The P4 device commands' layout, in the style of `union ionic_dev_cmd`:
/// a 64-byte command in BAR 0's command registers and a 16-byte completion.
///
/// ```text
/// command                               completion
///  0      opcode (70, 71, 72)            0      status (ionic_status_code)
///  1..8   reserved                       1..4   reserved
///  8..16  input_pa   (le64)              4..8   output_len (le32)
///  16..20 input_len  (le32)              8..16  reserved
///  20..24 reserved
///  24..32 output_pa  (le64)
///  32..36 output_cap (le32)
///  36..64 reserved
/// ```
///
/// The input is read from guest memory at `input_pa` (at most
/// [`MAX_INPUT`](cmd::MAX_INPUT) bytes; more is `EINVAL`, an address outside guest memory
/// `EFAULT`), the engine's answer written at `output_pa` (at most
/// `output_cap` bytes, itself at most [`MAX_OUTPUT`](cmd::MAX_OUTPUT)). `output_len` is the
/// answer's length: when it exceeds `output_cap` the status is `ENOSPC`
/// and nothing is written, so the driver can ask again with a bigger
/// buffer. An engine error is status `ERROR` with its message as the
/// output (cut to `output_cap`).
pub mod cmd {
    /// Load a program (bmv2 JSON); needs [`GuestScope::Program`](super::GuestScope::Program).
    pub const LOAD: u8 = 70;
    /// Runtime commands (simple_switch_CLI text).
    pub const RUNTIME: u8 = 71;
    /// Status text.
    pub const STATUS: u8 = 72;
    /// Offset of `input_pa`.
    pub const INPUT_PA: usize = 8;
    /// Offset of `input_len`.
    pub const INPUT_LEN: usize = 16;
    /// Offset of `output_pa`.
    pub const OUTPUT_PA: usize = 24;
    /// Offset of `output_cap`.
    pub const OUTPUT_CAP: usize = 32;
    /// The completion's `output_len`.
    pub const COMP_OUTPUT_LEN: usize = 4;
    /// The largest input a command may name (1 MiB).
    pub const MAX_INPUT: u32 = 1 << 20;
    /// The largest output buffer used (1 MiB); a bigger one is used up to this.
    pub const MAX_OUTPUT: u32 = 1 << 20;
}

/// The P4 bit ernic adds to `ionic_lif_identity.capabilities`, set only
/// when the guest may reach the engine. Linux's `ionic_if.h` defines bits
/// 0 (`IONIC_LIF_CAP_ETH`) and 1 (`IONIC_LIF_CAP_RDMA`) and the driver
/// tests only those; bit 63 is kept far from where new upstream bits
/// would be added.
pub const LIF_CAP_P4: u64 = 1 << 63;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_and_scopes_convert() {
        use crate::fw::op;
        assert_eq!(WqeOpcode::from(op::RDMA_WRITE), WqeOpcode::Write);
        assert_eq!(WqeOpcode::from(op::ATOMIC_FA), WqeOpcode::FetchAdd);
        assert_eq!(
            WqeOpcode::from(op::SEND_INV),
            WqeOpcode::Other(op::SEND_INV)
        );
        assert_eq!("tables".parse(), Ok(GuestScope::Tables));
        assert_eq!(GuestScope::default(), GuestScope::None);
        assert!("all".parse::<GuestScope>().unwrap_err().contains("all"));
    }
}
