//! One NVMe queue on one RC QP, as NVMe/RDMA carries it: the host SENDs
//! 64-byte command capsules (with in-capsule data after them on I/O
//! queues) into receives the target keeps posted, one per queue entry; the
//! target moves data with RDMA READ (host to target) and RDMA WRITE
//! (target to host) against the keyed SGL the command names, and answers
//! with a SEND of the 16-byte completion (SEND with invalidate when the
//! SGL asked for the host's key to be invalidated).
//!
//! Each receive buffer is a command slot: the slot's data and response
//! buffers are its own, and its receive is posted again only when its
//! response has been sent, so a queue never holds more commands than it
//! has entries and nothing here allocates per command.

use std::time::Instant;

use ernic_verbs::{
    Access, Cq, Device, Gid, Mr, Pd, Qp, QpAttr, QpCaps, QpState, QpType, Qpn, RemoteAddr, Rkey,
    SendOp, SendWr, Wc, WcOpcode, WcStatus,
};

use crate::controller::{Outcome, QueueState, Target, Xfer};
use crate::wire::cqe;
use crate::wire::sgl::Descriptor;
use crate::wire::sqe;
use crate::wire::status::Status;

use super::RdmaError;

/// Bytes of data a command may carry inside its capsule, after the SQE.
pub const IN_CAPSULE: usize = 8192;
/// A capsule: the SQE and its in-capsule data.
pub const CAPSULE_LEN: usize = sqe::LEN + IN_CAPSULE;
/// The completion a response carries.
const CQE_LEN: usize = 16;

/// What a work request was, in the top bits of its id; the slot below.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Recv = 0,
    Read = 1,
    Write = 2,
    Send = 3,
}

fn wr_id(kind: Kind, slot: u32) -> u64 {
    (kind as u64) << 32 | u64::from(slot)
}

fn kind_of(wr_id: u64) -> Option<(Kind, u32)> {
    let slot = wr_id as u32;
    let kind = match wr_id >> 32 {
        0 => Kind::Recv,
        1 => Kind::Read,
        2 => Kind::Write,
        3 => Kind::Send,
        _ => return None,
    };
    Some((kind, slot))
}

/// Where a command slot is.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// Its receive is posted.
    Posted,
    /// Its data is being read from the host.
    Reading {
        sqe: [u8; sqe::LEN],
        len: u32,
        invalidate: Option<Rkey>,
    },
    /// A held command (an Asynchronous Event Request) waits for an event.
    Held {
        command_id: u16,
        invalidate: Option<Rkey>,
    },
    /// Its response is on the wire.
    Responding,
}

/// The host's buffer for a command's data, from its keyed SGL.
#[derive(Clone, Copy, Debug)]
struct HostData {
    remote: RemoteAddr,
    invalidate: Option<Rkey>,
}

/// Where a planned transfer's bytes are.
enum Source {
    None,
    InCapsule { off: usize },
    Host(HostData),
}

/// A connected NVMe queue.
pub(crate) struct Queue {
    qp: Qp,
    cq: Cq,
    capsules: Mr,
    data: Mr,
    responses: Mr,
    slots: Vec<Slot>,
    /// The controller's side of the queue.
    pub state: QueueState,
    /// Bytes a command may move (the controller's MDTS).
    max_xfer: usize,
    /// The controller's view of a command's data, between the MR and it.
    scratch: Vec<u8>,
    /// The QP failed or the host went away: the queue takes no more work.
    pub dead: bool,
    /// Capsules taken.
    pub commands: u64,
    /// Completions polled at once (kept: an array a poll is costly to make).
    wcs: Box<[Wc; 32]>,
}

impl Queue {
    /// Creates the QP `qpn` with `entries` receives posted (the host's
    /// `hsqsize + 1`) and a response buffer per entry, in the INIT state
    /// until [`connect`](Self::connect).
    pub fn new(
        dev: &Device,
        pd: &Pd,
        qpn: Qpn,
        entries: u32,
        max_xfer: usize,
        state: QueueState,
    ) -> Result<Queue, RdmaError> {
        let cq = dev.create_cq(entries * 3 + 4)?;
        let caps = QpCaps {
            // A READ, or a WRITE and the response SEND, per entry.
            max_send_wr: entries * 2 + 2,
            max_recv_wr: entries,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = pd.create_qp_numbered(qpn, QpType::Rc, &cq, caps)?;
        let n = entries as usize;
        let q = Queue {
            qp,
            cq,
            capsules: pd.reg_mr(CAPSULE_LEN * n, Access::LOCAL_WRITE)?,
            data: pd.reg_mr(max_xfer * n, Access::LOCAL_WRITE)?,
            responses: pd.reg_mr(CQE_LEN * n, Access::LOCAL_WRITE)?,
            slots: vec![Slot::Posted; n],
            state,
            max_xfer,
            scratch: vec![0; max_xfer],
            dead: false,
            commands: 0,
            wcs: Box::new([Wc::EMPTY; 32]),
        };
        q.qp.modify(&QpAttr {
            state: Some(QpState::Init),
            access: Some(Access::LOCAL_WRITE),
            ..QpAttr::default()
        })?;
        for i in 0..entries {
            q.post_recv(i)?;
        }
        Ok(q)
    }

    /// Connects the QP to the host's QP `qpn` at `gid`, whose first PSN
    /// is `rq_psn`; ours is `sq_psn`.
    pub fn connect(&self, gid: Gid, qpn: Qpn, rq_psn: u32, sq_psn: u32) -> Result<(), RdmaError> {
        self.qp.modify(&QpAttr {
            state: Some(QpState::Rtr),
            dest: Some((gid, qpn)),
            rq_psn: Some(rq_psn),
            ..QpAttr::default()
        })?;
        self.qp.modify(&QpAttr {
            state: Some(QpState::Rts),
            sq_psn: Some(sq_psn),
            ..QpAttr::default()
        })?;
        Ok(())
    }

    /// The QP's number.
    pub fn qpn(&self) -> Qpn {
        self.qp.qpn()
    }

    fn post_recv(&self, i: u32) -> Result<(), RdmaError> {
        let sge = self
            .capsules
            .sge(i as usize * CAPSULE_LEN, CAPSULE_LEN as u32)?;
        self.qp.post_recv(wr_id(Kind::Recv, i), &[sge])?;
        Ok(())
    }

    /// Runs what completed on this queue. Answers how many completions
    /// there were; a failed QP marks the queue dead.
    pub fn poll(&mut self, target: &mut Target, now: Instant) -> Result<usize, RdmaError> {
        let n = self.cq.poll(&mut self.wcs[..])?;
        for k in 0..n {
            if self.dead {
                break;
            }
            let wc = self.wcs[k];
            if let Err(e) = self.completed(target, now, &wc) {
                self.dead = true;
                return Err(e);
            }
        }
        Ok(n)
    }

    fn completed(&mut self, target: &mut Target, now: Instant, wc: &Wc) -> Result<(), RdmaError> {
        let Some((kind, slot)) =
            kind_of(wc.wr_id).filter(|&(_, s)| (s as usize) < self.slots.len())
        else {
            return Err(RdmaError::Protocol {
                what: "a completion names no slot of the queue",
            });
        };
        if wc.status != WcStatus::Success {
            // A flushed or failed request: the QP is in error, and with it
            // the queue (the host vanished, or named memory it does not own).
            self.dead = true;
            return Ok(());
        }
        match (kind, wc.opcode) {
            (Kind::Recv, WcOpcode::Recv) => self.capsule(target, now, slot, wc.byte_len as usize),
            (Kind::Read, _) => self.read_done(target, now, slot),
            (Kind::Send, _) => {
                self.slots[slot as usize] = Slot::Posted;
                self.post_recv(slot)
            }
            (Kind::Write, _) => Ok(()),
            _ => Err(RdmaError::Protocol {
                what: "a completion of an unexpected kind",
            }),
        }
    }

    /// A capsule arrived in slot `i`, `len` bytes of it.
    fn capsule(
        &mut self,
        target: &mut Target,
        now: Instant,
        i: u32,
        len: usize,
    ) -> Result<(), RdmaError> {
        if len < sqe::LEN {
            // Not even a command: there is no command id to answer.
            return Err(RdmaError::Protocol {
                what: "a capsule shorter than a command",
            });
        }
        self.commands += 1;
        let mut sqe = [0u8; sqe::LEN];
        self.capsules.read(i as usize * CAPSULE_LEN, &mut sqe)?;
        let xfer = match target.plan(&self.state, &sqe) {
            Ok(x) => x,
            Err(cqe) => return self.respond(i, &cqe, None),
        };
        let (dir_len, to_host) = match xfer {
            Xfer::None => (0, false),
            Xfer::ToHost(n) => (n, true),
            Xfer::FromHost(n) => (n, false),
        };
        let source = match self.source(&sqe, dir_len, to_host, len) {
            Ok(s) => s,
            Err(status) => {
                let cqe = target.fail(&self.state, &sqe, status);
                return self.respond(i, &cqe, None);
            }
        };
        let n = dir_len as usize;
        match source {
            Source::None => self.execute(target, now, i, &sqe, 0, None, false),
            Source::InCapsule { off } => {
                let at = i as usize * CAPSULE_LEN + sqe::LEN + off;
                self.capsules.read(at, &mut self.scratch[..n])?;
                self.execute(target, now, i, &sqe, n, None, false)
            }
            Source::Host(h) if to_host => self.execute(target, now, i, &sqe, n, Some(h), true),
            Source::Host(h) => {
                let sge = [self.data.sge(i as usize * self.max_xfer, dir_len)?];
                let wr = SendWr::new(wr_id(Kind::Read, i), SendOp::Read(h.remote)).sgl(&sge);
                self.qp.post_send(&wr)?;
                self.slots[i as usize] = Slot::Reading {
                    sqe,
                    len: dir_len,
                    invalidate: h.invalidate,
                };
                Ok(())
            }
        }
    }

    /// Where the data of a command that moves `len` bytes is, from its SGL:
    /// the statuses are those NVMe gives a bad data pointer.
    fn source(
        &self,
        sqe: &[u8; sqe::LEN],
        len: u32,
        to_host: bool,
        received: usize,
    ) -> Result<Source, Status> {
        if len == 0 {
            return Ok(Source::None);
        }
        let view = sqe::Packet::new_unchecked(&sqe[..]);
        if !view.is_sgl() {
            // NVMe/RDMA carries SGLs only; PRPs name memory we cannot reach.
            return Err(Status::INVALID_FIELD);
        }
        match Descriptor::from_dptr(&view.dptr()) {
            Descriptor::Keyed {
                addr,
                len: sgl_len,
                key,
                invalidate,
            } => {
                if sgl_len < len || sgl_len as usize > self.max_xfer {
                    return Err(Status::SGL_INVALID_DATA);
                }
                if key == 0 {
                    // Key 0 is the reserved DMA key: it never moves data.
                    return Err(Status::DATA_XFER_ERROR);
                }
                let rkey = Rkey(key);
                Ok(Source::Host(HostData {
                    remote: RemoteAddr { addr, rkey },
                    invalidate: invalidate.then_some(rkey),
                }))
            }
            Descriptor::DataBlock {
                addr,
                len: sgl_len,
                offset: true,
            } => {
                if to_host {
                    // In-capsule data goes one way only (nvmet-rdma's
                    // `nvmet_rdma_map_sgl_inline`: not a write, invalid field).
                    return Err(Status::INVALID_FIELD.with_dnr());
                }
                let off = usize::try_from(addr).map_err(|_| Status::SGL_INVALID_OFFSET)?;
                let end = off.checked_add(len as usize);
                if sgl_len < len {
                    return Err(Status::SGL_INVALID_DATA);
                }
                match end {
                    Some(end) if end <= IN_CAPSULE && sqe::LEN + end <= received => {
                        Ok(Source::InCapsule { off })
                    }
                    _ => Err(Status::SGL_INVALID_OFFSET),
                }
            }
            // As nvmet-rdma answers (`nvmet_rdma_map_sgl`): a subtype it
            // does not take is an invalid field, a type an invalid type.
            Descriptor::DataBlock { .. } => Err(Status::INVALID_FIELD.with_dnr()),
            Descriptor::Transport { .. } | Descriptor::Other { .. } => {
                Err(Status::SGL_INVALID_TYPE.with_dnr())
            }
        }
    }

    /// The host's data for slot `i` has been read: run the command.
    fn read_done(&mut self, target: &mut Target, now: Instant, i: u32) -> Result<(), RdmaError> {
        let Slot::Reading {
            sqe,
            len,
            invalidate,
        } = self.slots[i as usize]
        else {
            return Err(RdmaError::Protocol {
                what: "a READ completed for a slot that was not reading",
            });
        };
        let n = len as usize;
        self.data
            .read(i as usize * self.max_xfer, &mut self.scratch[..n])?;
        let host = invalidate.map(|k| HostData {
            remote: RemoteAddr::default(),
            invalidate: Some(k),
        });
        // The data came from the host: nothing goes back but the response.
        self.execute(target, now, i, &sqe, n, host, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn execute(
        &mut self,
        target: &mut Target,
        now: Instant,
        i: u32,
        sqe: &[u8; sqe::LEN],
        n: usize,
        host: Option<HostData>,
        write_back: bool,
    ) -> Result<(), RdmaError> {
        let invalidate = host.and_then(|h| h.invalidate);
        match target.execute(&mut self.state, now, sqe, &mut self.scratch[..n]) {
            Outcome::Deferred => {
                self.slots[i as usize] = Slot::Held {
                    command_id: sqe::Packet::new_unchecked(&sqe[..]).command_id(),
                    invalidate,
                };
                Ok(())
            }
            Outcome::Done(cqe) => {
                if let (true, Some(h), true) = (write_back, host, cqe.status == Status::SUCCESS) {
                    let off = i as usize * self.max_xfer;
                    self.data.write(off, &self.scratch[..n])?;
                    let sge = [self.data.sge(off, n as u32)?];
                    let wr = SendWr::new(wr_id(Kind::Write, i), SendOp::Write(h.remote))
                        .sgl(&sge)
                        .signaled(false);
                    self.qp.post_send(&wr)?;
                }
                self.respond(i, &cqe, invalidate)
            }
        }
    }

    /// Sends `cqe` from slot `i`'s response buffer; with `invalidate`, as
    /// SEND with invalidate of the host's key.
    fn respond(
        &mut self,
        i: u32,
        cqe: &cqe::Repr,
        invalidate: Option<Rkey>,
    ) -> Result<(), RdmaError> {
        let mut bytes = [0u8; CQE_LEN];
        cqe.emit(&mut cqe::Packet::new_unchecked(&mut bytes[..]));
        let off = i as usize * CQE_LEN;
        self.responses.write(off, &bytes)?;
        let sge = [self.responses.sge(off, CQE_LEN as u32)?];
        let op = invalidate.map_or(SendOp::Send, SendOp::SendInv);
        self.qp
            .post_send(&SendWr::new(wr_id(Kind::Send, i), op).sgl(&sge))?;
        self.slots[i as usize] = Slot::Responding;
        Ok(())
    }

    /// Answers the held command `command_id` (an AER an event fired).
    pub fn release(&mut self, cqe: &cqe::Repr) -> Result<bool, RdmaError> {
        let held = self.slots.iter().position(
            |s| matches!(s, Slot::Held { command_id, .. } if *command_id == cqe.command_id),
        );
        let Some(i) = held else { return Ok(false) };
        let Slot::Held { invalidate, .. } = self.slots[i] else {
            return Ok(false);
        };
        self.respond(i as u32, cqe, invalidate)?;
        Ok(true)
    }

    /// Stops the queue: its QP goes to the error state, and what was
    /// posted is flushed.
    pub fn kill(&mut self) {
        self.dead = true;
        let _ = self.qp.set_error();
    }
}
