//! One queue of the initiator, as Linux's nvme-rdma drives it: each
//! command has a slot (its command id), whose data buffer is fast-registered
//! for the command (REG_MR, then the capsule's keyed SGL asks the target to
//! invalidate the key with its response), or carried in the capsule when it
//! is a small write on an I/O queue. A slot is free again when both its
//! capsule SEND and its response have completed.

use ernic_verbs::{
    Access, Cq, Device, FastMr, Gid, Mr, Pd, Qp, QpAttr, QpCaps, QpState, QpType, Qpn, RecvWr,
    Rkey, SendOp, SendWr, Sge, Wc, WcOpcode, WcStatus,
};

use crate::rdma::{CAPSULE_LEN, IN_CAPSULE};
use crate::wire::cqe;
use crate::wire::sgl::{self, Descriptor};
use crate::wire::sqe;

use super::HostError;

const CQE_LEN: usize = cqe::LEN;

/// The direction of a command's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// No data.
    None,
    /// The target writes into our buffer (Read, Identify, Get Log Page).
    FromTarget,
    /// The target reads our buffer (Write, Connect's data, DSM's ranges).
    ToTarget,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    busy: bool,
    sent: bool,
    response: Option<cqe::Repr>,
    /// The key the target was asked to invalidate.
    key: Option<Rkey>,
    variant: u8,
}

/// A command that finished: its id and completion.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    /// The command id (the slot).
    pub cid: u16,
    /// The completion.
    pub cqe: cqe::Repr,
}

/// A connected queue of the initiator.
pub struct HostQueue {
    qp: Qp,
    cq: Cq,
    capsules: Mr,
    responses: Mr,
    data: Mr,
    fmrs: Vec<FastMr>,
    slots: Vec<Slot>,
    free: Vec<u16>,
    max_xfer: usize,
    qid: u16,
    /// Whether small writes travel in the capsule.
    in_capsule: bool,
    /// Completions polled at once (kept: an array a poll is costly to make).
    wcs: Box<[Wc; 32]>,
}

const RECV: u64 = 1 << 32;
const SEND: u64 = 2 << 32;
const REG: u64 = 3 << 32;

impl HostQueue {
    /// A queue of `entries` commands moving up to `max_xfer` bytes each,
    /// its QP in INIT with a receive posted per entry.
    pub fn new(
        dev: &Device,
        pd: &Pd,
        qid: u16,
        entries: u16,
        max_xfer: usize,
    ) -> Result<HostQueue, HostError> {
        let n = usize::from(entries);
        let cq = dev.create_cq(u32::from(entries) * 3 + 4)?;
        let caps = QpCaps {
            max_send_wr: u32::from(entries) * 2 + 2,
            max_recv_wr: u32::from(entries),
            max_send_sge: 2,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = pd.create_qp(QpType::Rc, &cq, &cq, caps)?;
        // As rdma_cm sets an RC QP's access (`cma_init_conn_qp`): the
        // target READs and WRITEs our buffers through the keys we name.
        qp.modify(&QpAttr {
            state: Some(QpState::Init),
            access: Some(Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE),
            ..QpAttr::default()
        })?;
        let mut fmrs = Vec::with_capacity(n);
        for _ in 0..n {
            fmrs.push(pd.alloc_fast_mr(max_xfer as u64)?);
        }
        let q = HostQueue {
            qp,
            cq,
            capsules: pd.reg_mr(CAPSULE_LEN * n, Access::LOCAL_WRITE)?,
            responses: pd.reg_mr(CQE_LEN * n, Access::LOCAL_WRITE)?,
            data: pd.reg_mr(max_xfer * n, Access::LOCAL_WRITE)?,
            fmrs,
            slots: vec![Slot::default(); n],
            free: (0..entries).rev().collect(),
            max_xfer,
            qid,
            in_capsule: qid != 0,
            wcs: Box::new([Wc::EMPTY; 32]),
        };
        for i in 0..n {
            let sge = [q.responses.sge(i * CQE_LEN, CQE_LEN as u32)?];
            q.qp.post_recv_list(&[RecvWr {
                wr_id: RECV | i as u64,
                sgl: &sge,
            }])?;
        }
        Ok(q)
    }

    /// The QP's number, for the connection request.
    pub fn qpn(&self) -> Qpn {
        self.qp.qpn()
    }

    /// The queue id.
    pub fn qid(&self) -> u16 {
        self.qid
    }

    /// Commands that can be submitted now.
    pub fn room(&self) -> usize {
        self.free.len()
    }

    /// Commands in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The largest transfer of one command.
    pub fn max_xfer(&self) -> usize {
        self.max_xfer
    }

    /// Connects the QP to the target's QP `qpn` at `gid`.
    pub fn connect(&self, gid: Gid, qpn: Qpn, rq_psn: u32, sq_psn: u32) -> Result<(), HostError> {
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

    /// Submits `sqe` (its command id and data pointer are filled in here)
    /// moving `len` bytes in `dir`; for [`Dir::ToTarget`], `data` holds
    /// them. Answers the command id, or `None` when every slot is busy.
    pub fn submit(
        &mut self,
        sqe: &mut [u8; sqe::LEN],
        dir: Dir,
        len: usize,
        data: &[u8],
    ) -> Result<Option<u16>, HostError> {
        if len > self.max_xfer {
            return Err(HostError::TooLong {
                len,
                max: self.max_xfer,
            });
        }
        let Some(cid) = self.free.pop() else {
            return Ok(None);
        };
        let i = usize::from(cid);
        let mut p = sqe::Packet::new_unchecked(&mut sqe[..]);
        p.set_command_id(cid);
        p.set_flags((p.flags() & !sqe::FLAGS_PSDT_MASK) | sqe::FLAGS_SGL_METABUF);
        let mut inline = 0;
        let desc = match dir {
            Dir::None => Descriptor::Keyed {
                addr: 0,
                len: 0,
                key: 0,
                invalidate: false,
            },
            Dir::ToTarget if self.in_capsule && len <= IN_CAPSULE => {
                inline = len;
                Descriptor::DataBlock {
                    addr: 0,
                    len: len as u32,
                    offset: true,
                }
            }
            _ => {
                let slot = &mut self.slots[i];
                slot.variant = slot.variant.wrapping_add(1);
                let access = match dir {
                    Dir::FromTarget => Access::LOCAL_WRITE | Access::REMOTE_WRITE,
                    _ => Access::LOCAL_WRITE | Access::REMOTE_READ,
                };
                let off = i * self.max_xfer;
                if dir == Dir::ToTarget {
                    self.data.write(off, &data[..len])?;
                }
                let fmr = &self.fmrs[i];
                let reg = fmr
                    .reg_wr(
                        REG | i as u64,
                        slot.variant,
                        &self.data,
                        off..off + len,
                        access,
                    )?
                    .signaled(false);
                self.qp.post_send(&reg)?;
                let key = fmr.key(slot.variant).0;
                slot.key = Some(Rkey(key));
                Descriptor::Keyed {
                    addr: self.data.addr() + off as u64,
                    len: len as u32,
                    key,
                    invalidate: true,
                }
            }
        };
        let mut dptr = [0u8; sgl::LEN];
        desc.emit(&mut sgl::Packet::new_unchecked(&mut dptr[..]))?;
        p.set_dptr(&dptr);
        let coff = i * CAPSULE_LEN;
        self.capsules.write(coff, &sqe[..])?;
        if inline > 0 {
            self.capsules.write(coff + sqe::LEN, &data[..inline])?;
        }
        let sge: [Sge; 1] = [self.capsules.sge(coff, (sqe::LEN + inline) as u32)?];
        self.qp
            .post_send(&SendWr::new(SEND | i as u64, SendOp::Send).sgl(&sge))?;
        let slot = &mut self.slots[i];
        slot.busy = true;
        slot.sent = false;
        slot.response = None;
        if dir == Dir::None || inline > 0 {
            slot.key = None;
        }
        Ok(Some(cid))
    }

    /// Sends `sqe` as it is (only its command id is filled in), with
    /// `capsule_data` after it in the capsule and nothing registered: what
    /// a host that builds its own data pointers (or a hostile one) sends.
    pub fn submit_raw(
        &mut self,
        sqe: &[u8; sqe::LEN],
        capsule_data: &[u8],
    ) -> Result<Option<u16>, HostError> {
        if capsule_data.len() > IN_CAPSULE {
            return Err(HostError::TooLong {
                len: capsule_data.len(),
                max: IN_CAPSULE,
            });
        }
        let Some(cid) = self.free.pop() else {
            return Ok(None);
        };
        let i = usize::from(cid);
        let mut sqe = *sqe;
        sqe::Packet::new_unchecked(&mut sqe[..]).set_command_id(cid);
        let coff = i * CAPSULE_LEN;
        self.capsules.write(coff, &sqe)?;
        self.capsules.write(coff + sqe::LEN, capsule_data)?;
        let len = (sqe::LEN + capsule_data.len()) as u32;
        let sge = [self.capsules.sge(coff, len)?];
        self.qp
            .post_send(&SendWr::new(SEND | i as u64, SendOp::Send).sgl(&sge))?;
        self.slots[i] = Slot {
            busy: true,
            ..Slot::default()
        };
        Ok(Some(cid))
    }

    /// Sends the first `len` bytes of `bytes` (at most a capsule) as one
    /// SEND, outside any command slot: for tests of what the target does
    /// with a capsule that is not one.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> Result<(), HostError> {
        let Some(cid) = self.free.pop() else {
            return Err(HostError::Protocol {
                what: "the queue is full",
            });
        };
        let coff = usize::from(cid) * CAPSULE_LEN;
        let n = bytes.len().min(CAPSULE_LEN);
        self.capsules.write(coff, &bytes[..n])?;
        let sge = [self.capsules.sge(coff, n as u32)?];
        self.qp
            .post_send(&SendWr::new(SEND | u64::from(cid), SendOp::Send).sgl(&sge))?;
        Ok(())
    }

    /// Copies the data a finished command `cid` read into `out`.
    pub fn read_data(&self, cid: u16, out: &mut [u8]) -> Result<(), HostError> {
        self.data
            .read(usize::from(cid) * self.max_xfer, out)
            .map_err(HostError::from)
    }

    /// Takes what completed; finished commands go to `out`. A failed
    /// request is an error: the queue is dead.
    pub fn poll(&mut self, out: &mut Vec<Done>) -> Result<usize, HostError> {
        let n = self.cq.poll(&mut self.wcs[..])?;
        for k in 0..n {
            let wc = &{ self.wcs[k] };
            if wc.status != WcStatus::Success {
                return Err(HostError::Completion {
                    status: wc.status,
                    qid: self.qid,
                });
            }
            let i = (wc.wr_id & 0xffff_ffff) as usize;
            if i >= self.slots.len() {
                continue;
            }
            match (wc.wr_id & !0xffff_ffff, wc.opcode) {
                (RECV, WcOpcode::Recv) => {
                    let mut b = [0u8; CQE_LEN];
                    self.responses.read(i * CQE_LEN, &mut b)?;
                    let sge = [self.responses.sge(i * CQE_LEN, CQE_LEN as u32)?];
                    self.qp.post_recv_list(&[RecvWr {
                        wr_id: RECV | i as u64,
                        sgl: &sge,
                    }])?;
                    let c = cqe::Repr::parse(&cqe::Packet::new_unchecked(&b[..]))?;
                    let cid = usize::from(c.command_id);
                    if cid >= self.slots.len() || !self.slots[cid].busy {
                        return Err(HostError::Protocol {
                            what: "a response names no command in flight",
                        });
                    }
                    let s = &mut self.slots[cid];
                    if let (Some(k), Some(inv)) = (s.key, wc.invalidated) {
                        if k != inv {
                            return Err(HostError::Protocol {
                                what: "the target invalidated another key",
                            });
                        }
                    }
                    s.response = Some(c);
                    self.finish(cid, out);
                }
                (SEND, _) => {
                    self.slots[i].sent = true;
                    self.finish(i, out);
                }
                _ => {}
            }
        }
        Ok(n)
    }

    fn finish(&mut self, i: usize, out: &mut Vec<Done>) {
        let s = &mut self.slots[i];
        if let (true, true, Some(c)) = (s.busy, s.sent, s.response) {
            s.busy = false;
            s.response = None;
            self.free.push(i as u16);
            out.push(Done {
                cid: i as u16,
                cqe: c,
            });
        }
    }

    /// Stops the queue.
    pub fn kill(&self) {
        let _ = self.qp.set_error();
    }
}
