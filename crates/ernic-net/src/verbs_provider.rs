//! The verbs provider ([`ErnicProvider`]): rails over ernic's own verbs, in
//! one process (loopback fabric) or across processes and hosts (a fabric on
//! the mesh).
//!
//! Each rail is a device of its own (or, over one NIC, a part of that
//! device: [`ErnicProvider::on_device`]) with a PD, one CQ, a shared receive
//! queue for the caller's rx buffers and a datagram QP for connection
//! set-up. An RDM endpoint reaches each peer through two reliable
//! connected QPs, made on `av_insert`:
//!
//! - the *message* QP sends with immediate into the peer's shared receive
//!   queue (the caller's rx buffers);
//! - the *data* QP carries RDMA writes with immediate; each consumes one of
//!   the zero-length receives the provider keeps posted on the peer's data
//!   QP, so a write never eats a caller's rx buffer.
//!
//! The two sides learn each other's QP numbers over the datagram QP: REQ
//! (my QPs) → REP (mine, and I am connected to yours) → ACK (so am I)
//! (`verbs_provider/setup.rs`).
//! Until both sides are connected, posts to that peer answer `EAGAIN`;
//! lost datagrams are sent again every 20 ms by the CQ read.

use std::collections::{HashMap, VecDeque};
use std::net::Ipv6Addr;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ernic_verbs::{
    Access, Ah, Cq, Device, Error as VerbsError, Fabric, Gid, Mr, Pd, Qp, QpCaps, QpType, Qpn,
    RemoteAddr, Rkey, SendOp, SendWr, Sge, Srq, Wc, WcOpcode, WcStatus,
};

mod setup;

use crate::provider::{
    Buffer, CqEntry, CqErrEntry, CqError, CqFlags, FiAddr, MrReg, PostError, Provider,
    ProviderError, Rail, RemoteAddressing,
};

/// Bytes of an endpoint name: the rail's GID and its datagram QP number.
pub const NAME_LEN: usize = 20;

const QKEY: u32 = 0x4e43_4c31;
const MAGIC: &[u8; 4] = b"ERNP";
const MSG_LEN: usize = 36;
const GRH: usize = 40;
const UD_SLOT: usize = 128;
const UD_RECVS: usize = 32;
const RETRY: Duration = Duration::from_millis(20);

const INTERNAL: u64 = 1 << 63;
const KIND_UD_RECV: u64 = 1 << 48;
const KIND_UD_SEND: u64 = 2 << 48;
const KIND_DATA_RECV: u64 = 3 << 48;
const KIND_MASK: u64 = 0xff << 48;

const REQ: u8 = 1;
const REP: u8 = 2;
const ACK: u8 = 3;

/// The queue sizes of each rail, as a libfabric provider's `tx_attr` and
/// `rx_attr` sizes: a post beyond them answers `EAGAIN`, which the
/// transport queues and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Depths {
    /// The rail's completion queue (every QP of the rail shares it).
    pub cq: u32,
    /// The shared receive queue holding the caller's rx buffers.
    pub srq: u32,
    /// Sends outstanding on each of a peer's two QPs.
    pub qp: u32,
    /// Zero-length receives kept posted on each peer's data QP: RDMA
    /// writes with immediate in flight from that peer.
    pub data_recvs: u32,
}

impl Default for Depths {
    fn default() -> Depths {
        Depths {
            cq: 65536,
            srq: 4096,
            qp: 1024,
            data_recvs: 512,
        }
    }
}

/// Where a provider's rails get their devices.
#[derive(Debug)]
enum Source {
    /// A device of its own for each rail, on this fabric.
    Fabric(Fabric),
    /// Every rail on this one device (its own PD, CQ and QPs on it): a
    /// device that is a NIC of its own, such as the ionic driver's.
    Device(Device),
}

/// Rails over ernic's verbs.
#[derive(Debug)]
pub struct ErnicProvider {
    source: Source,
    /// The PD of the buffers `alloc_buffer` gives, once it gave one.
    buffer_pd: Mutex<Option<Pd>>,
    devices: Devices,
    next: AtomicU16,
    wait: Duration,
    depths: Depths,
}

impl ErnicProvider {
    /// A provider over `fabric` (loopback, or on a mesh).
    pub fn new(fabric: Fabric) -> ErnicProvider {
        ErnicProvider::with_depths(fabric, Depths::default())
    }

    /// A provider whose rails all live on `device` (each with a PD, CQ and
    /// QPs of its own), with the queue sizes `depths`: the transport over
    /// one NIC, such as the emulated ionic device through its driver
    /// (`ernic_ionic_driver::provider::open`). Its
    /// [`alloc_buffer`](Provider::alloc_buffer) gives memory of the
    /// device's own, for a device that reaches no other.
    pub fn on_device(device: Device, depths: Depths) -> ErnicProvider {
        ErnicProvider::build(Source::Device(device), depths)
    }

    /// A provider whose rails have the queue sizes `depths` (each at least
    /// 1; the fabric refuses sizes beyond its own limits when a rail
    /// opens). Small queues make a rail cheap to open.
    pub fn with_depths(fabric: Fabric, depths: Depths) -> ErnicProvider {
        ErnicProvider::build(Source::Fabric(fabric), depths)
    }

    fn build(source: Source, depths: Depths) -> ErnicProvider {
        let at_least_one = |n: u32| n.max(1);
        ErnicProvider {
            source,
            buffer_pd: Mutex::new(None),
            devices: Devices::default(),
            next: AtomicU16::new(1),
            wait: Duration::from_secs(10),
            depths: Depths {
                cq: at_least_one(depths.cq),
                srq: at_least_one(depths.srq),
                qp: at_least_one(depths.qp),
                data_recvs: at_least_one(depths.data_recvs),
            },
        }
    }

    /// The fabric the rails live on (`None` for rails on one device).
    pub fn fabric(&self) -> Option<&Fabric> {
        match &self.source {
            Source::Fabric(f) => Some(f),
            Source::Device(_) => None,
        }
    }

    /// The devices its rails opened (one a rail), for their counters.
    pub fn devices(&self) -> Devices {
        self.devices.clone()
    }
}

/// The devices a provider's rails opened, shared with a stats reader.
#[derive(Debug, Clone, Default)]
pub struct Devices(Arc<Mutex<Vec<Device>>>);

impl Devices {
    /// Every device opened so far.
    pub fn list(&self) -> Vec<Device> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Provider for ErnicProvider {
    fn name(&self) -> String {
        "ernic".into()
    }

    fn open_rail(&self) -> Result<Box<dyn Rail>, ProviderError> {
        let dev = match &self.source {
            Source::Device(d) => d.clone(),
            Source::Fabric(fabric) => {
                let node = match fabric.mesh() {
                    None => 0,
                    Some(m) => {
                        m.wait_registered(self.wait)
                            .ok_or_else(|| {
                                ProviderError(
                                    "this node never registered with the mesh manager".into(),
                                )
                            })?
                            .0
                            + 1
                    }
                };
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                let gid = Gid(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0x6e65, node, n).octets());
                fabric.open_device(gid).map_err(verr)?
            }
        };
        let rail = ErnicRail::open(dev, self.depths).map_err(verr)?;
        let mut devices = self.devices.0.lock().unwrap_or_else(|e| e.into_inner());
        if !devices.iter().any(|d| d.gid() == rail.dev.gid()) {
            devices.push(rail.dev.clone());
        }
        Ok(Box::new(rail))
    }

    fn alloc_buffer(&self, len: usize) -> Result<Option<Buffer>, ProviderError> {
        let Source::Device(dev) = &self.source else {
            return Ok(None);
        };
        // One PD for every buffer (a region keeps its PD alive).
        let mut pd = self.buffer_pd.lock().unwrap_or_else(|e| e.into_inner());
        let pd = match &mut *pd {
            Some(pd) => pd,
            none => none.insert(dev.alloc_pd().map_err(verr)?),
        };
        let mr = pd.reg_mr(len, Access::LOCAL_WRITE).map_err(verr)?;
        let ptr = mr.host_ptr();
        // SAFETY: the region's memory is `len` bytes at `ptr`, this
        // process's, and lives as long as the region, which the buffer
        // keeps; nothing else is given this memory.
        Ok(Some(unsafe { Buffer::new(ptr, len, Box::new(mr)) }))
    }
}

fn verr(e: VerbsError) -> ProviderError {
    ProviderError(e.to_string())
}

fn post_err(e: VerbsError) -> PostError {
    match e {
        VerbsError::Engine(ernic_verbs::EngineError::QueueFull { .. }) => PostError::Again,
        e => PostError::Failed(e.to_string()),
    }
}

struct Peer {
    gid: Gid,
    ud_qpn: Qpn,
    ah: Ah,
    data: Qp,
    msg: Qp,
    /// The peer's data and message QPs our QPs are connected to.
    remote: Option<(Qpn, Qpn)>,
    /// The peer's QPs are connected to ours.
    peer_ready: bool,
    last_sent: Option<Instant>,
}

impl Peer {
    fn ready(&self) -> bool {
        self.remote.is_some() && self.peer_ready
    }
}

struct ErnicRail {
    dev: Device,
    pd: Pd,
    cq: Cq,
    srq: Srq,
    ud: Qp,
    ud_mr: Mr,
    name: [u8; NAME_LEN],
    /// By address; `None` once removed (addresses are never reused, so a
    /// late completion naming one finds nothing).
    peers: Vec<Option<Box<Peer>>>,
    by_name: HashMap<[u8; NAME_LEN], FiAddr>,
    connecting: usize,
    mrs: HashMap<u64, Mr>,
    next_mr: u64,
    ready: VecDeque<Result<CqEntry, CqErrEntry>>,
    wcs: Vec<Wc>,
    depths: Depths,
}

impl ErnicRail {
    fn open(dev: Device, depths: Depths) -> Result<ErnicRail, VerbsError> {
        let gid = dev.gid();
        let pd = dev.alloc_pd()?;
        let cq = dev.create_cq(depths.cq)?;
        let srq = pd.create_srq(depths.srq, 1)?;
        let ud = pd.create_qp(
            QpType::Ud,
            &cq,
            &cq,
            QpCaps {
                max_send_wr: 256,
                max_recv_wr: UD_RECVS as u32,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 64,
            },
        )?;
        ud.ready_datagram(QKEY)?;
        let ud_mr = pd.reg_mr(UD_SLOT * UD_RECVS, Access::LOCAL_WRITE)?;
        for i in 0..UD_RECVS {
            ud.post_recv(
                INTERNAL | KIND_UD_RECV | i as u64,
                &[ud_mr.sge(i * UD_SLOT, UD_SLOT as u32)?],
            )?;
        }
        let mut name = [0u8; NAME_LEN];
        name[..16].copy_from_slice(&gid.0);
        name[16..].copy_from_slice(&ud.qpn().0.to_le_bytes());
        Ok(ErnicRail {
            dev,
            pd,
            cq,
            srq,
            ud,
            ud_mr,
            name,
            peers: Vec::new(),
            by_name: HashMap::new(),
            connecting: 0,
            mrs: HashMap::new(),
            next_mr: 1,
            ready: VecDeque::with_capacity(4096),
            wcs: vec![Wc::EMPTY; 64],
            depths,
        })
    }

    fn peer_for(&mut self, name: &[u8; NAME_LEN]) -> Result<FiAddr, VerbsError> {
        if let Some(&a) = self.by_name.get(name) {
            return Ok(a);
        }
        let gid = Gid::from_slice(&name[..16]).expect("a name has 20 bytes");
        let ud_qpn = Qpn(u32::from_le_bytes(name[16..].try_into().expect("4 bytes")));
        let (data, msg) = self.qps()?;
        let ah = self.pd.create_ah(gid)?;
        let addr = self.peers.len() as FiAddr;
        self.peers.push(Some(Box::new(Peer {
            gid,
            ud_qpn,
            ah,
            data,
            msg,
            remote: None,
            peer_ready: false,
            last_sent: None,
        })));
        self.by_name.insert(*name, addr);
        self.connecting += 1;
        Ok(addr)
    }

    /// The live peer at `addr`: every address the rail uses itself came
    /// from `peer_for` and is live until `av_remove`, which forgets it
    /// everywhere.
    fn live(&mut self, addr: FiAddr) -> &mut Peer {
        self.peers[addr as usize]
            .as_deref_mut()
            .expect("an address the rail uses is live")
    }

    fn qps(&self) -> Result<(Qp, Qp), VerbsError> {
        let caps = QpCaps {
            max_send_wr: self.depths.qp,
            max_recv_wr: self.depths.data_recvs,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let data = self.pd.create_qp(QpType::Rc, &self.cq, &self.cq, caps)?;
        let msg =
            self.pd
                .create_qp_with(QpType::Rc, &self.cq, &self.cq, Some(&self.srq), caps, false)?;
        Ok((data, msg))
    }

    /// Replaces a peer's QPs after an error took them down (a reliable
    /// connection stops at its first error; an RDM endpoint keeps going),
    /// and connects again.
    fn rebuild(&mut self, addr: FiAddr) -> Result<(), VerbsError> {
        let (data, msg) = self.qps()?;
        let p = self.live(addr);
        let was_ready = p.ready();
        p.data = data;
        p.msg = msg;
        p.remote = None;
        p.peer_ready = false;
        p.last_sent = None;
        if was_ready {
            self.connecting += 1;
        }
        Ok(())
    }

    fn peer(&mut self, dest: FiAddr) -> Result<&Peer, PostError> {
        match self.peers.get(dest as usize).and_then(Option::as_deref) {
            None => Err(PostError::Failed(format!(
                "no address {dest} in this rail's address vector"
            ))),
            Some(p) if p.ready() => Ok(self.peers[dest as usize].as_deref().expect("checked")),
            Some(_) => {
                self.retry(Instant::now());
                Err(PostError::Again)
            }
        }
    }

    fn poll(&mut self) -> Result<(), CqError> {
        if self.connecting > 0 {
            self.retry(Instant::now());
        }
        let mut wcs = std::mem::take(&mut self.wcs);
        let r = self.cq.poll(&mut wcs);
        let n = match r {
            Ok(n) => n,
            Err(e) => {
                self.wcs = wcs;
                return Err(CqError::Failed(e.to_string()));
            }
        };
        for wc in &wcs[..n] {
            self.on_completion(wc);
        }
        self.wcs = wcs;
        Ok(())
    }

    fn on_completion(&mut self, wc: &Wc) {
        if wc.wr_id & INTERNAL != 0 {
            let low = wc.wr_id & !(INTERNAL | KIND_MASK);
            match wc.wr_id & KIND_MASK {
                KIND_UD_RECV => {
                    if wc.status == WcStatus::Success {
                        self.on_datagram(low as usize, wc.byte_len as usize);
                    }
                    if wc.status != WcStatus::WrFlushErr {
                        let slot = low as usize;
                        if let Ok(sge) = self.ud_mr.sge(slot * UD_SLOT, UD_SLOT as u32) {
                            let _ = self.ud.post_recv(wc.wr_id, &[sge]);
                        }
                    }
                }
                KIND_DATA_RECV => {
                    let Some(p) = self.peers.get(low as usize).and_then(Option::as_deref) else {
                        return;
                    };
                    if wc.status == WcStatus::WrFlushErr {
                        return;
                    }
                    let _ = p.data.post_recv(wc.wr_id, &[]);
                    if wc.status == WcStatus::Success && wc.opcode == WcOpcode::RecvRdmaWithImm {
                        self.ready.push_back(Ok(CqEntry {
                            context: 0,
                            flags: CqFlags::REMOTE_WRITE | CqFlags::REMOTE_CQ_DATA,
                            len: wc.byte_len as usize,
                            data: wc.imm.unwrap_or(0),
                        }));
                    }
                }
                _ => {}
            }
            return;
        }
        let flags = match wc.opcode {
            WcOpcode::Send => CqFlags::SEND,
            WcOpcode::RdmaWrite => CqFlags::WRITE,
            WcOpcode::Recv | WcOpcode::RecvRdmaWithImm => CqFlags::RECV | CqFlags::REMOTE_CQ_DATA,
            _ => CqFlags::default(),
        };
        if wc.status == WcStatus::Success {
            self.ready.push_back(Ok(CqEntry {
                context: wc.wr_id,
                flags,
                len: wc.byte_len as usize,
                data: wc.imm.unwrap_or(0),
            }));
        } else {
            if wc.status != WcStatus::WrFlushErr {
                if let Some(a) = self.peers.iter().position(|p| {
                    p.as_deref()
                        .is_some_and(|p| p.data.qpn() == wc.qpn || p.msg.qpn() == wc.qpn)
                }) {
                    if self.rebuild(a as FiAddr).is_ok() {
                        self.send_ctl(a as FiAddr, REQ);
                    }
                }
            }
            self.ready.push_back(Err(CqErrEntry {
                context: wc.wr_id,
                flags,
                err: match wc.status {
                    WcStatus::LocLenErr => libc::EMSGSIZE,
                    WcStatus::RemAccessErr | WcStatus::LocProtErr => libc::EACCES,
                    WcStatus::WrFlushErr => libc::ECANCELED,
                    _ => libc::EIO,
                },
                message: format!("work request failed: {}", wc.status.as_str()),
            }));
        }
    }
}

fn sgl(addr: u64, len: usize, desc: u64) -> Result<[Sge; 1], PostError> {
    let len = u32::try_from(len)
        .map_err(|_| PostError::Failed(format!("{len} bytes is more than one post carries")))?;
    Ok([Sge {
        addr,
        len,
        lkey: ernic_verbs::Lkey(desc as u32),
    }])
}

impl Rail for ErnicRail {
    fn name(&self) -> Vec<u8> {
        self.name.to_vec()
    }

    fn av_insert(&mut self, name: &[u8]) -> Result<FiAddr, ProviderError> {
        let name: [u8; NAME_LEN] = name.try_into().map_err(|_| {
            ProviderError(format!(
                "an ernic endpoint name has {NAME_LEN} bytes, not {}",
                name.len()
            ))
        })?;
        let known = self.by_name.contains_key(&name);
        let addr = self.peer_for(&name).map_err(verr)?;
        if !known {
            self.send_ctl(addr, REQ);
        }
        Ok(addr)
    }

    fn av_remove(&mut self, addr: FiAddr) -> Result<(), ProviderError> {
        let p = self
            .peers
            .get_mut(addr as usize)
            .and_then(Option::take)
            .ok_or_else(|| ProviderError(format!("no address {addr} to remove")))?;
        if !p.ready() {
            self.connecting -= 1;
        }
        self.by_name.retain(|_, a| *a != addr);
        // Its two QPs (and their queues, most of a peer's cost) go here.
        drop(p);
        Ok(())
    }

    fn remote_addressing(&self) -> RemoteAddressing {
        RemoteAddressing::Virtual
    }

    unsafe fn mr_reg(&mut self, addr: *mut u8, len: usize) -> Result<MrReg, ProviderError> {
        let id = self.next_mr;
        self.next_mr += 1;
        let Some(ptr) = NonNull::new(addr).filter(|_| len > 0) else {
            // Nothing to reach: zero-length posts carry no SGE.
            return Ok(MrReg {
                handle: 0,
                key: 0,
                desc: 0,
            });
        };
        // SAFETY: the caller keeps the memory valid until `mr_close`
        // (this trait method's contract), which drops the `Mr`.
        let mr = unsafe { self.pd.reg_user_mr(ptr, len, Access::ALL) }.map_err(verr)?;
        let reg = MrReg {
            handle: id,
            key: u64::from(mr.rkey().0),
            desc: u64::from(mr.lkey().0),
        };
        self.mrs.insert(id, mr);
        Ok(reg)
    }

    fn mr_close(&mut self, handle: u64) -> Result<(), ProviderError> {
        if handle == 0 {
            return Ok(());
        }
        self.mrs
            .remove(&handle)
            .map(drop)
            .ok_or_else(|| ProviderError(format!("no registration {handle} on this rail")))
    }

    fn write_data(
        &mut self,
        addr: u64,
        len: usize,
        desc: u64,
        dest: FiAddr,
        remote: u64,
        key: u64,
        data: u32,
        context: u64,
    ) -> Result<(), PostError> {
        let sg = sgl(addr, len, desc)?;
        let p = self.peer(dest)?;
        let op = SendOp::WriteImm(
            RemoteAddr {
                addr: remote,
                rkey: Rkey(key as u32),
            },
            data,
        );
        let wr = SendWr::new(context, op).sgl(if len == 0 { &[] } else { &sg });
        p.data.post_send(&wr).map_err(post_err)
    }

    fn send_data(
        &mut self,
        addr: u64,
        len: usize,
        desc: u64,
        dest: FiAddr,
        data: u32,
        context: u64,
    ) -> Result<(), PostError> {
        let sg = sgl(addr, len, desc)?;
        let p = self.peer(dest)?;
        let wr = SendWr::new(context, SendOp::SendImm(data)).sgl(if len == 0 { &[] } else { &sg });
        p.msg.post_send(&wr).map_err(post_err)
    }

    fn recv(&mut self, addr: u64, len: usize, desc: u64, context: u64) -> Result<(), PostError> {
        let sg = sgl(addr, len, desc)?;
        self.srq
            .post_recv(context, if len == 0 { &[] } else { &sg })
            .map_err(post_err)
    }

    fn cq_read(&mut self, out: &mut [CqEntry]) -> Result<usize, CqError> {
        if self.ready.is_empty() {
            self.poll()?;
        }
        match self.ready.front() {
            None => return Err(CqError::Again),
            Some(Err(_)) => return Err(CqError::Avail),
            Some(Ok(_)) => {}
        }
        let mut n = 0;
        while n < out.len() {
            match self.ready.front() {
                Some(Ok(e)) => {
                    out[n] = *e;
                    self.ready.pop_front();
                    n += 1;
                }
                _ => break,
            }
        }
        Ok(n)
    }

    fn cq_readerr(&mut self) -> Option<CqErrEntry> {
        match self.ready.front() {
            Some(Err(_)) => self.ready.pop_front().and_then(Result::err),
            _ => None,
        }
    }
}

impl Drop for ErnicRail {
    fn drop(&mut self) {
        // Registrations and QPs go before the device (field order would drop
        // the device handle first; the fabric keeps it alive either way).
        self.mrs.clear();
        self.peers.clear();
        let _ = &self.dev;
    }
}
