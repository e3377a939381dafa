//! # ernic-core: the RDMA device model
//!
//! One engine for every front end of ernic: the native verbs API for host
//! programs and the ionic device a guest drives over vfio-user both decode
//! their requests into this crate's types and encode its completions into
//! theirs. The core never knows which front end or backend it serves.
//!
//! What it owns:
//! - the object model: devices, PDs, MRs (with fast registration), CQs, QPs
//!   (RC, UC, UD, GSI) with the verbs states, SRQs with a low watermark, AHs;
//! - the key tables, and the bounds, rights, PD and wrap-around checks every
//!   keyed access passes ([`mr`]);
//! - the execution of every send opcode (SEND, SEND_IMM, SEND_INV, WRITE,
//!   WRITE_IMM, READ, both atomics, REG_MR, LOCAL_INV), the datagram rules
//!   (QP type, Q_Key, controlled keys, the GRH), receiver-not-ready waits and
//!   flushes;
//! - completions, exactly one per work request, with the statuses hardware
//!   reports;
//! - counters ([`counters`]);
//! - fault injection on patterns of event counts ([`inject`]).
//!
//! What it promises: no byte outside a checked range is read or written; every
//! request that was accepted completes exactly once; nothing from outside
//! (a guest, a peer) can make it panic.
//!
//! What it never does: allocate per work request, sleep, or read the clock
//! (time is passed in). Memory is reached only through [`DmaMemory`].

#[allow(unsafe_code)]
mod copy;
pub mod counters;
mod datapath;
mod engine;
pub mod grh;
pub mod inject;
#[allow(unsafe_code)]
pub mod memory;
pub mod mr;
pub mod qp;
mod remote;
pub mod rnr;
#[cfg(test)]
mod testing;
pub mod types;
pub mod wire;
pub mod wr;

pub use counters::{Counter, Counters};
pub use engine::{
    AsyncEvent, Engine, EngineConfig, EngineError, Footprint, GSI_QKEY, MAX_SGE, MrSpec,
    SERVICE_QPN_BASE,
};
pub use inject::{Event as FaultEvent, Injector};
pub use memory::{DmaMemory, MemError, ProcessMemory};
pub use qp::{Dest, QpAttr, QpCaps, QpInfo, QpInit, QpState, QpType};
pub use remote::{Outgoing, PeerReadError, PeerRun, Remote, RemoteStats, SendError};
pub use types::{AhId, CqId, DeviceId, Gid, Lkey, NodeId, PdId, Qpn, Rkey, Route, SrqId};
pub use wr::{
    Access, Completion, CqEvent, PageSource, RecvWr, RegMr, RemoteAddr, SendFlags, SendOp, SendWr,
    Sge, UdDest, WcOpcode, WcStatus,
};
