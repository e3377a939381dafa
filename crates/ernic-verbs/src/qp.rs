//! Protection domains, queue pairs, shared receive queues and address handles.

use std::sync::Arc;

use ernic_core::{
    AhId, Gid, PdId, QpAttr, QpCaps, QpInfo, QpInit, QpState, QpType, Qpn, RecvWr, SendWr, Sge,
    SrqId,
};

use crate::cq::Cq;
use crate::device::Device;
use crate::mr::{FastMr, Mr};
use crate::provider::MrMemory;
use crate::{Access, Error};

/// A protection domain.
#[derive(Clone)]
pub struct Pd {
    inner: Arc<PdInner>,
}

struct PdInner {
    dev: Device,
    id: PdId,
}

impl Drop for PdInner {
    fn drop(&mut self) {
        self.dev.provider().dealloc_pd(self.id);
    }
}

impl std::fmt::Debug for Pd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pd({})", self.inner.id)
    }
}

impl Pd {
    pub(crate) fn new(dev: Device, id: PdId) -> Pd {
        Pd {
            inner: Arc::new(PdInner { dev, id }),
        }
    }

    pub(crate) fn dev(&self) -> &Device {
        &self.inner.dev
    }

    pub(crate) fn id(&self) -> PdId {
        self.inner.id
    }

    /// Allocates `len` zeroed bytes and registers them with `access`.
    pub fn reg_mr(&self, len: usize, access: Access) -> Result<Mr, Error> {
        Mr::register(self, len, access)
    }

    /// Registers `len` bytes of the caller's memory at `ptr` with `access`
    /// (what `ibv_reg_mr` does). The device reads and writes that memory
    /// whenever a work request or a peer names it, from its own thread.
    ///
    /// # Safety
    ///
    /// The memory must stay valid for reads and writes until the returned
    /// [`Mr`] and every clone of it are dropped, and the caller must not
    /// rely on its contents while operations that target it may run.
    #[allow(unsafe_code)]
    pub unsafe fn reg_user_mr(
        &self,
        ptr: std::ptr::NonNull<u8>,
        len: usize,
        access: Access,
    ) -> Result<Mr, Error> {
        // SAFETY: the caller's contract is `MrMemory::borrowed`'s; the
        // device knows the memory by its own address.
        let mem = unsafe { MrMemory::borrowed(ptr, len, ptr.as_ptr() as u64) };
        Mr::register_memory(self, mem, false, access)
    }

    /// As [`reg_user_mr`](Pd::reg_user_mr), with the device knowing the
    /// first byte as `iova` (`ibv_reg_mr_iova`): SGEs and remote
    /// addresses name the bytes from `iova` on.
    ///
    /// # Safety
    ///
    /// As [`reg_user_mr`](Pd::reg_user_mr).
    #[allow(unsafe_code)]
    pub unsafe fn reg_user_mr_iova(
        &self,
        ptr: std::ptr::NonNull<u8>,
        len: usize,
        iova: u64,
        access: Access,
    ) -> Result<Mr, Error> {
        // SAFETY: the caller's contract is `MrMemory::borrowed`'s.
        let mem = unsafe { MrMemory::borrowed(ptr, len, iova) };
        Mr::register_memory(self, mem, false, access)
    }

    /// Allocates an MR for fast registration of up to `max_len` bytes.
    pub fn alloc_fast_mr(&self, max_len: u64) -> Result<FastMr, Error> {
        FastMr::alloc(self, max_len)
    }

    /// Creates a queue pair in the RESET state.
    pub fn create_qp(
        &self,
        qp_type: QpType,
        send_cq: &Cq,
        recv_cq: &Cq,
        caps: QpCaps,
    ) -> Result<Qp, Error> {
        self.create_qp_with(qp_type, send_cq, recv_cq, None, caps, false)
    }

    /// Creates a queue pair, with a shared receive queue and `sq_sig_all` if wanted.
    pub fn create_qp_with(
        &self,
        qp_type: QpType,
        send_cq: &Cq,
        recv_cq: &Cq,
        srq: Option<&Srq>,
        caps: QpCaps,
        sq_sig_all: bool,
    ) -> Result<Qp, Error> {
        self.create_qp_init(qp_type, (send_cq, recv_cq), srq, caps, sq_sig_all, None)
    }

    /// Creates a queue pair with the number `qpn`, as a device's own
    /// services take numbers from a range of their own (the NVMe-oF
    /// target's `0xc0xxxx`). Refused when the number is in use or reserved.
    pub fn create_qp_numbered(
        &self,
        qpn: Qpn,
        qp_type: QpType,
        cq: &Cq,
        caps: QpCaps,
    ) -> Result<Qp, Error> {
        self.create_qp_init(qp_type, (cq, cq), None, caps, false, Some(qpn))
    }

    fn create_qp_init(
        &self,
        qp_type: QpType,
        (send_cq, recv_cq): (&Cq, &Cq),
        srq: Option<&Srq>,
        caps: QpCaps,
        sq_sig_all: bool,
        qpn: Option<Qpn>,
    ) -> Result<Qp, Error> {
        let init = QpInit {
            qp_type,
            pd: self.id(),
            send_cq: send_cq.id(),
            recv_cq: recv_cq.id(),
            srq: srq.map(|s| s.inner.id),
            caps,
            sq_sig_all,
            qpn,
        };
        let qpn = self.dev().provider().create_qp(&init)?;
        Ok(Qp {
            inner: Arc::new(QpInner {
                pd: self.clone(),
                qpn,
                qp_type,
                _cqs: (send_cq.clone(), recv_cq.clone()),
                _srq: srq.cloned(),
            }),
        })
    }

    /// Creates a shared receive queue of `depth` receives of up to `max_sge` SGEs.
    pub fn create_srq(&self, depth: u32, max_sge: u32) -> Result<Srq, Error> {
        let id = self
            .dev()
            .provider()
            .create_srq(self.id(), depth, max_sge)?;
        Ok(Srq {
            inner: Arc::new(SrqInner {
                pd: self.clone(),
                id,
            }),
        })
    }

    /// Creates an address handle for datagrams to `dgid`.
    pub fn create_ah(&self, dgid: Gid) -> Result<Ah, Error> {
        let id = self.dev().provider().create_ah(self.id(), dgid)?;
        Ok(Ah {
            inner: Arc::new(AhInner {
                pd: self.clone(),
                id,
            }),
        })
    }
}

/// A queue pair.
#[derive(Clone)]
pub struct Qp {
    inner: Arc<QpInner>,
}

struct QpInner {
    pd: Pd,
    qpn: Qpn,
    qp_type: QpType,
    _cqs: (Cq, Cq),
    _srq: Option<Srq>,
}

impl Drop for QpInner {
    fn drop(&mut self) {
        self.pd.dev().provider().destroy_qp(self.qpn);
    }
}

impl std::fmt::Debug for Qp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Qp({:?} {})", self.inner.qp_type, self.inner.qpn)
    }
}

impl Qp {
    fn dev(&self) -> &Device {
        self.inner.pd.dev()
    }

    /// The QP number.
    pub fn qpn(&self) -> Qpn {
        self.inner.qpn
    }

    /// The transport type.
    pub fn qp_type(&self) -> QpType {
        self.inner.qp_type
    }

    /// Changes attributes and state (`ibv_modify_qp`).
    pub fn modify(&self, attr: &QpAttr) -> Result<(), Error> {
        self.dev().provider().modify_qp(self.qpn(), attr)
    }

    /// Moves to the error state: everything outstanding is flushed.
    pub fn set_error(&self) -> Result<(), Error> {
        self.modify(&QpAttr {
            state: Some(QpState::Err),
            ..QpAttr::default()
        })
    }

    /// Takes a connected QP from RESET through INIT and RTR to RTS, talking to
    /// QP `qpn` of the device with GID `gid`, granting it `access`.
    pub fn connect(&self, gid: Gid, qpn: Qpn, access: Access) -> Result<(), Error> {
        self.modify(&QpAttr {
            state: Some(QpState::Init),
            access: Some(access),
            ..QpAttr::default()
        })?;
        self.modify(&QpAttr {
            state: Some(QpState::Rtr),
            dest: Some((gid, qpn)),
            ..QpAttr::default()
        })?;
        self.modify(&QpAttr {
            state: Some(QpState::Rts),
            ..QpAttr::default()
        })
    }

    /// Takes a datagram QP from RESET to RTS with this Q_Key.
    pub fn ready_datagram(&self, qkey: u32) -> Result<(), Error> {
        for state in [QpState::Init, QpState::Rtr, QpState::Rts] {
            self.modify(&QpAttr {
                state: Some(state),
                qkey: (state == QpState::Init).then_some(qkey),
                ..QpAttr::default()
            })?;
        }
        Ok(())
    }

    /// Posts a send work request (`ibv_post_send`).
    pub fn post_send(&self, wr: &SendWr<'_>) -> Result<(), Error> {
        self.dev().provider().post_send(self.qpn(), wr)
    }

    /// Posts a receive work request (`ibv_post_recv`).
    pub fn post_recv(&self, wr_id: u64, sgl: &[Sge]) -> Result<(), Error> {
        let wr = RecvWr { wr_id, sgl };
        self.dev().provider().post_recv(self.qpn(), &[wr])
    }

    /// Posts several receives at once (under one acquisition of the fabric
    /// lock), as `ibv_post_recv` takes a list. Stops at the first refused
    /// request and returns its error; the ones before it stay posted.
    pub fn post_recv_list(&self, wrs: &[RecvWr<'_>]) -> Result<(), Error> {
        self.dev().provider().post_recv(self.qpn(), wrs)
    }

    /// The QP's attributes (`ibv_query_qp`).
    pub fn query(&self) -> Result<QpInfo, Error> {
        self.dev().provider().query_qp(self.qpn())
    }

    /// The QP's counters.
    pub fn counters(&self) -> Result<ernic_core::Counters, Error> {
        self.dev().provider().qp_counters(self.qpn())
    }
}

/// A shared receive queue.
#[derive(Clone)]
pub struct Srq {
    inner: Arc<SrqInner>,
}

struct SrqInner {
    pd: Pd,
    id: SrqId,
}

impl Drop for SrqInner {
    fn drop(&mut self) {
        self.pd.dev().provider().destroy_srq(self.id);
    }
}

impl std::fmt::Debug for Srq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Srq({})", self.inner.id)
    }
}

impl Srq {
    /// The SRQ's id (what its asynchronous events name).
    pub fn id(&self) -> SrqId {
        self.inner.id
    }

    /// Posts a receive (`ibv_post_srq_recv`).
    pub fn post_recv(&self, wr_id: u64, sgl: &[Sge]) -> Result<(), Error> {
        let wr = RecvWr { wr_id, sgl };
        self.inner
            .pd
            .dev()
            .provider()
            .post_srq_recv(self.inner.id, &wr)
    }

    /// Arms the low watermark: an [`AsyncEvent::SrqLimitReached`](crate::AsyncEvent)
    /// fires once when fewer than `limit` receives remain.
    pub fn set_limit(&self, limit: u32) -> Result<(), Error> {
        self.inner
            .pd
            .dev()
            .provider()
            .modify_srq(self.inner.id, limit)
    }

    /// The armed limit (0 when disarmed) and the receives posted.
    pub fn query(&self) -> Result<(u32, u32), Error> {
        self.inner.pd.dev().provider().query_srq(self.inner.id)
    }
}

/// An address handle.
#[derive(Clone)]
pub struct Ah {
    inner: Arc<AhInner>,
}

struct AhInner {
    pd: Pd,
    id: AhId,
}

impl Drop for AhInner {
    fn drop(&mut self) {
        self.pd.dev().provider().destroy_ah(self.id);
    }
}

impl std::fmt::Debug for Ah {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ah({})", self.inner.id)
    }
}

impl Ah {
    /// The destination of a datagram send through this AH.
    pub fn dest(&self, remote_qpn: Qpn, remote_qkey: u32) -> ernic_core::UdDest {
        ernic_core::UdDest {
            ah: self.inner.id,
            remote_qpn,
            remote_qkey,
        }
    }
}
