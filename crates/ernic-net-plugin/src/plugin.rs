//! The plugin's state and operations, in safe Rust: one device whose
//! endpoint is opened by `init`, and the opaque words the C side carries
//! for comms, registrations and requests.
//!
//! Every word given to the caller has a tag in its top byte, so a comm
//! passed where a registration belongs, or a stale or made-up value, is
//! refused with `ncclInvalidArgument` instead of being trusted; the
//! endpoint then checks the id itself (unknown comm, freed registration,
//! request generation).
//!
//! Each `regMr` answers a handle of its own, even over a range registered
//! before (the endpoint's MR cache shares the registration underneath), and
//! `deregMr` of a handle already deregistered is refused with
//! `ncclInvalidArgument`: one holder cannot free another's registration.
//!
//! A `connect` is bounded: it answers `ncclSuccess` with a NULL comm while
//! pending, and fails (`ncclRemoteError`, with a WARN line) once
//! `ERNIC_NET_CONNECT_TIMEOUT_MS` has passed without a listener's answer;
//! its comm and the peer's address are released then. A connect the caller
//! stops calling is released by a later `connect` once its time is up.

use std::collections::hash_map::RandomState;
use std::ffi::CString;
use std::hash::BuildHasher;
use std::time::Instant;

use ernic_net::config::Config;
use ernic_net::provider::Provider;
use ernic_net::rdma::{
    Connector, Endpoint, HANDLE_LEN, Handle, ListenComm, MrHandle, NetError, RecvComm, Request,
    SendComm,
};
use ernic_net::verbs_provider::{Devices, ErnicProvider};
use ernic_verbs::{Config as VerbsConfig, Fabric, Mesh, MeshConfig, MeshSpec};

/// `ncclResult_t` values (NCCL's `err.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Code {
    /// `ncclSuccess`.
    Success = 0,
    /// `ncclSystemError`: the provider or the system failed.
    System = 2,
    /// `ncclInternalError`: a bug of ours (a caught panic).
    Internal = 3,
    /// `ncclInvalidArgument`: the caller passed something wrong.
    Invalid = 4,
    /// `ncclRemoteError`: a transfer or connection failed.
    Remote = 6,
}

/// A failed call: the code the ABI returns and the line the logger gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What the call returns.
    pub code: Code,
    /// What the logger is told.
    pub message: String,
}

impl Failure {
    /// A caller's mistake.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure {
            code: Code::Invalid,
            message: message.into(),
        }
    }

    fn system(message: impl Into<String>) -> Failure {
        Failure {
            code: Code::System,
            message: message.into(),
        }
    }
}

impl From<NetError> for Failure {
    fn from(e: NetError) -> Failure {
        let code = match &e {
            // The caller passed something wrong, or asked for more than
            // the endpoint holds.
            NetError::RailCount { .. }
            | NetError::ControlRailCount { .. }
            | NetError::NoCommId { .. }
            | NetError::NotAHandle { .. }
            | NetError::NoSuchComm { .. }
            | NetError::UnknownComm { .. }
            | NetError::NotConnected { .. }
            | NetError::TooManyRegistrations { .. }
            | NetError::NotRegistered { .. }
            | NetError::OutsideRegistration { .. }
            | NetError::SendRecvTooLarge { .. }
            | NetError::SequenceWindow { .. }
            | NetError::NoSuchRequest => Code::Invalid,
            // The provider or the endpoint's own resources failed.
            NetError::OpenRail { .. }
            | NetError::RegisterBuffers { .. }
            | NetError::RequestPool { .. }
            | NetError::NoRequest { .. }
            | NetError::NameTooLong { .. }
            | NetError::ListenerAddress { .. }
            | NetError::Register { .. }
            | NetError::Deregister { .. }
            | NetError::MrCache { .. } => Code::System,
            // The peer, or the way to it.
            NetError::Request { .. }
            | NetError::ConnectFailed { .. }
            | NetError::AcceptFailed { .. }
            | NetError::ConnectTimeout { .. } => Code::Remote,
        };
        // The whole chain: the caller's log is all it gets.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        Failure { code, message }
    }
}

/// What a call answers, or why it failed.
pub type Outcome<T> = Result<T, Failure>;

/// The kinds of opaque word, in the top byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Tag {
    /// A listening comm.
    Listen = 0xe1,
    /// A sending comm.
    Send = 0xe2,
    /// A receiving comm.
    Recv = 0xe3,
    /// A registration.
    Mr = 0xe4,
    /// A request.
    Request = 0xe5,
}

const TAG_SHIFT: u32 = 56;

/// Connections being made at once, at most (each also holds a comm of the
/// endpoint's [`MAX_COMMS`](ernic_net::rdma::MAX_COMMS)).
pub const MAX_CONNECTING: usize = 4096;

/// Wraps a 32-bit id into a word of kind `tag`.
pub fn word(tag: Tag, id: u32) -> u64 {
    u64::from(tag as u8) << TAG_SHIFT | u64::from(id)
}

/// The 32-bit id inside `w`, if `w` is a word of kind `tag`.
pub fn unword(tag: Tag, w: u64, what: &str) -> Outcome<u32> {
    if (w >> TAG_SHIFT) as u8 != tag as u8 || (w >> 32) & 0xff_ffff != 0 {
        return Err(Failure::invalid(format!(
            "{w:#x} is not a {what} of this plugin"
        )));
    }
    Ok(w as u32)
}

/// A request's word: tag, then 24 bits of slot, then the generation.
fn request_word(r: Request) -> Outcome<u64> {
    let raw = r.to_raw();
    let slot = raw & 0xffff_ffff;
    if slot >= 1 << 24 {
        return Err(Failure::system(format!(
            "request slot {slot} does not fit the request word"
        )));
    }
    Ok(u64::from(Tag::Request as u8) << TAG_SHIFT | slot << 32 | raw >> 32)
}

fn request_from_word(w: u64) -> Outcome<Request> {
    if (w >> TAG_SHIFT) as u8 != Tag::Request as u8 {
        return Err(Failure::invalid(format!(
            "{w:#x} is not a request of this plugin"
        )));
    }
    let slot = (w >> 32) & 0xff_ffff;
    Ok(Request::from_raw(slot | (w & 0xffff_ffff) << 32))
}

/// Where the plugin keeps a connection's progress in the caller's handle
/// buffer: NCCL calls `connect` again with the same buffer until it
/// answers a comm. The listener's handle leaves these bytes zero. They hold
/// a magic, the connection's slot and a nonce the plugin drew for it, so a
/// handle from another rank (untrusted) that carries made-up progress bytes
/// cannot take over a connection this process is making.
const CONNECTING_AT: usize = HANDLE_LEN - 8;
const CONNECTING_MAGIC: [u8; 2] = *b"eR";

/// A slot of a connection: being made, or given up at its timeout while
/// its caller was not asking (what the caller hears when it asks again).
/// Each carries the nonce its handle holds.
#[derive(Debug)]
enum Connecting {
    Making { connector: Connector, nonce: u32 },
    TimedOut { nonce: u32 },
}

impl Connecting {
    fn nonce(&self) -> u32 {
        match self {
            Connecting::Making { nonce, .. } | Connecting::TimedOut { nonce } => *nonce,
        }
    }
}

/// The one device: its provider, its endpoint and the connections being
/// made.
pub struct Plugin {
    ep: Endpoint,
    // The provider the endpoint's rails came from; kept for their lifetime.
    _provider: Box<dyn Provider>,
    connecting: Vec<Option<Connecting>>,
    /// Draws the nonces of connections being made.
    nonces: RandomState,
    drawn: u64,
    /// The device's name, for `getProperties` (lives as long as the plugin).
    pub name: CString,
    /// A sysfs path for topology detection.
    pub pci_path: CString,
    /// What `init` chose, for the log.
    pub summary: String,
    // A registration for zero-byte messages that come without one.
    spare: Box<[u8; 64]>,
    spare_mr: MrHandle,
    // ERNIC_STATS_FILE's writer (its last write when the plugin drops).
    _stats: Option<ernic_ops::file::StatsThread>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("summary", &self.summary)
            .finish()
    }
}

/// The provider `ERNIC_NET_PROVIDER` names, and a description for the log.
/// With ernic's provider, also the devices its rails open.
type Opened = (Box<dyn Provider>, String, Option<Devices>);

fn open_provider(lookup: &dyn Fn(&str) -> Option<String>) -> Outcome<Opened> {
    match lookup("ERNIC_NET_PROVIDER").as_deref() {
        None | Some("") | Some("ernic") => {
            let Some(spec) = lookup("ERNIC_NET_MESH").filter(|s| !s.is_empty()) else {
                let p = ErnicProvider::new(Fabric::new());
                let devices = Some(p.devices());
                let what = "ernic (this process only: ERNIC_NET_MESH is unset)";
                return Ok((Box::new(p), what.into(), devices));
            };
            let parsed: MeshSpec = spec
                .parse()
                .map_err(|e| Failure::invalid(format!("ERNIC_NET_MESH: {e}")))?;
            let mesh = Mesh::start(MeshConfig::new(parsed))
                .map_err(|e| Failure::system(format!("joining the mesh {spec}: {e}")))?;
            let fabric = Fabric::on_mesh(VerbsConfig::default(), mesh);
            let p = ErnicProvider::new(fabric);
            let devices = Some(p.devices());
            Ok((Box::new(p), format!("ernic on mesh {spec}"), devices))
        }
        Some("libfabric") => libfabric(lookup),
        Some(other) => Err(Failure::invalid(format!(
            "ERNIC_NET_PROVIDER={other}: choose ernic or libfabric"
        ))),
    }
}

fn libfabric(lookup: &dyn Fn(&str) -> Option<String>) -> Outcome<Opened> {
    // One provider by name is a hint; a list or an exclusion ("tcp,shm",
    // "^efa") is left to libfabric, which reads FI_PROVIDER itself.
    let want = lookup("FI_PROVIDER").filter(|s| !s.is_empty() && !s.contains([',', '^']));
    let p = ernic_net::libfabric::LibfabricProvider::open(want.as_deref())
        .map_err(|e| Failure::system(format!("libfabric: {e}")))?;
    let what = format!("libfabric {}", p.describe());
    Ok((Box::new(p), what, None))
}

impl Plugin {
    /// Opens the device as the environment (`lookup`) says.
    pub fn open(lookup: &dyn Fn(&str) -> Option<String>) -> Outcome<Plugin> {
        let cfg = Config::from_lookup(lookup).map_err(|e| Failure::invalid(e.to_string()))?;
        let (provider, what, devices) = open_provider(lookup)?;
        let ops = crate::ops::Ops::from_env(lookup)?;
        let mut p = Plugin::on(ops.wrap(provider), &what, cfg)?;
        p.ep.set_stats_device(0);
        p._stats = ops.start(devices)?;
        Ok(p)
    }

    /// Opens the device on `provider` (described as `what` in the log
    /// line) with the transport settings `cfg`.
    pub fn on(provider: Box<dyn Provider>, what: &str, cfg: Config) -> Outcome<Plugin> {
        let mut ep = Endpoint::open(provider.as_ref(), 1, cfg.clone())?;
        let mut spare = Box::new([0u8; 64]);
        // SAFETY: `spare` is boxed (it never moves) and owned by the
        // plugin beside `ep`; `Plugin::drop` drops the endpoint (closing
        // the registration) before the box is freed.
        let spare_mr = unsafe { ep.reg(spare.as_mut_ptr(), spare.len()) }?;
        let summary = format!(
            "ernic net plugin: provider {what}, {} data rail(s), protocol {:?}",
            ep.rails(),
            cfg.protocol
        );
        Ok(Plugin {
            ep,
            _provider: provider,
            connecting: Vec::new(),
            nonces: RandomState::new(),
            drawn: 0,
            name: CString::new("ernic0").expect("no NUL"),
            pci_path: CString::new("/sys/devices/virtual/net/ernic0").expect("no NUL"),
            summary,
            spare,
            spare_mr,
            _stats: None,
        })
    }

    /// How many data rails the device stripes over.
    pub fn rails(&self) -> usize {
        self.ep.rails()
    }

    /// Opens a listening comm; fills `handle` (128 bytes).
    pub fn listen(&mut self, handle: &mut [u8; HANDLE_LEN]) -> Outcome<u64> {
        let (l, h) = self.ep.listen()?;
        handle.copy_from_slice(&h.0);
        Ok(word(Tag::Listen, l.to_raw()))
    }

    /// One step of connecting to the listener behind `handle`: a send
    /// comm's word when connected, `None` while the connection is being
    /// made (its progress is kept in `handle`'s last bytes). Fails once the
    /// connect timeout has passed without an answer.
    pub fn connect(&mut self, handle: &mut [u8; HANDLE_LEN]) -> Outcome<Option<u64>> {
        let now = Instant::now();
        let slot = if handle[CONNECTING_AT..CONNECTING_AT + 2] == CONNECTING_MAGIC {
            let slot = usize::from(u16::from_le_bytes([
                handle[CONNECTING_AT + 2],
                handle[CONNECTING_AT + 3],
            ]));
            let nonce = u32::from_le_bytes(handle[CONNECTING_AT + 4..].try_into().expect("4"));
            if self
                .connecting
                .get(slot)
                .and_then(Option::as_ref)
                .is_none_or(|c| c.nonce() != nonce)
            {
                return Err(Failure::invalid(
                    "the handle holds a connection this plugin is not making",
                ));
            }
            slot
        } else {
            self.sweep(now);
            let mut h = handle.to_vec();
            h[CONNECTING_AT..].fill(0);
            // A free slot, a new one, or (when all are taken) one whose
            // caller has not come back for its timeout's answer.
            let slot = match self.connecting.iter().position(Option::is_none) {
                Some(i) => i,
                None if self.connecting.len() < MAX_CONNECTING => {
                    self.connecting.push(None);
                    self.connecting.len() - 1
                }
                None => self
                    .connecting
                    .iter()
                    .position(|c| matches!(c, Some(Connecting::TimedOut { .. })))
                    .ok_or_else(|| {
                        Failure::system(format!(
                            "{MAX_CONNECTING} connections are being made: finish some first"
                        ))
                    })?,
            };
            self.drawn += 1;
            let nonce = self.nonces.hash_one(self.drawn) as u32;
            self.connecting[slot] = Some(Connecting::Making {
                connector: Connector::new(Handle(h)),
                nonce,
            });
            handle[CONNECTING_AT..CONNECTING_AT + 2].copy_from_slice(&CONNECTING_MAGIC);
            handle[CONNECTING_AT + 2..CONNECTING_AT + 4]
                .copy_from_slice(&(slot as u16).to_le_bytes());
            handle[CONNECTING_AT + 4..].copy_from_slice(&nonce.to_le_bytes());
            slot
        };
        let done = match self.connecting[slot].as_mut().expect("checked") {
            Connecting::Making { connector, .. } => match self.ep.connect_at(connector, now) {
                Ok(None) => return Ok(None),
                Ok(Some(s)) => Ok(Some(word(Tag::Send, s.to_raw()))),
                Err(e) => Err(Failure::from(e)),
            },
            Connecting::TimedOut { .. } => Err(Failure::from(NetError::ConnectTimeout {
                ms: self.ep.connect_timeout().as_millis(),
            })),
        };
        // Finished either way: the handle is a plain listen handle again.
        self.connecting[slot] = None;
        handle[CONNECTING_AT..].fill(0);
        done
    }

    /// Releases what connections past their timeout hold (their comm, the
    /// peer's address); each slot keeps only its nonce, so a caller that
    /// asks again hears of the timeout, and a new connection may take it.
    fn sweep(&mut self, now: Instant) {
        let timeout = self.ep.connect_timeout();
        for slot in self.connecting.iter_mut() {
            if let Some(Connecting::Making { connector, nonce }) = slot {
                if connector.expired(now, timeout) {
                    self.ep.cancel(connector);
                    *slot = Some(Connecting::TimedOut { nonce: *nonce });
                }
            }
        }
    }

    /// Connections being made.
    pub fn connecting(&self) -> usize {
        self.connecting
            .iter()
            .filter(|c| matches!(c, Some(Connecting::Making { .. })))
            .count()
    }

    /// One step of accepting on `listen`.
    pub fn accept(&mut self, listen: u64) -> Outcome<Option<u64>> {
        let l = ListenComm::from_raw(unword(Tag::Listen, listen, "listen comm")?);
        Ok(self.ep.accept(l)?.map(|r| word(Tag::Recv, r.to_raw())))
    }

    /// Checks that `comm` is one of our send or receive comms (any
    /// registration serves every comm of the device).
    pub fn check_comm(&self, comm: u64) -> Outcome<()> {
        match (comm >> TAG_SHIFT) as u8 {
            t if t == Tag::Send as u8 || t == Tag::Recv as u8 => Ok(()),
            _ => Err(Failure::invalid(format!(
                "{comm:#x} is not a send or receive comm of this plugin"
            ))),
        }
    }

    /// Registers host memory.
    ///
    /// # Safety
    ///
    /// `len` bytes at `addr` must stay valid for reads and writes until
    /// the registration is dropped.
    pub unsafe fn reg(&mut self, comm: u64, addr: *mut u8, len: usize, ty: i32) -> Outcome<u64> {
        self.check_comm(comm)?;
        if ty != crate::abi::NCCL_PTR_HOST {
            return Err(Failure::invalid(format!(
                "memory of type {ty} cannot be registered: ernic supports host memory \
                 (NCCL_PTR_HOST) only"
            )));
        }
        // SAFETY: the caller's promise, passed on.
        let mr = unsafe { self.ep.reg(addr, len) }?;
        Ok(word(Tag::Mr, mr.to_raw()))
    }

    /// Drops a registration.
    pub fn dereg(&mut self, comm: u64, mr: u64) -> Outcome<()> {
        self.check_comm(comm)?;
        let mr = MrHandle::from_raw(unword(Tag::Mr, mr, "registration")?);
        Ok(self.ep.dereg(mr)?)
    }

    fn mr_or_spare(&self, mr: u64, len: usize, addr: &mut *mut u8) -> Outcome<MrHandle> {
        if mr == 0 && len == 0 {
            *addr = self.spare.as_ptr().cast_mut();
            return Ok(self.spare_mr);
        }
        Ok(MrHandle::from_raw(unword(Tag::Mr, mr, "registration")?))
    }

    /// Starts a send; `None` when the comm cannot take one now.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid and unchanged until the request is done.
    pub unsafe fn isend(
        &mut self,
        comm: u64,
        mut addr: *mut u8,
        len: usize,
        mr: u64,
    ) -> Outcome<Option<u64>> {
        let s = SendComm::from_raw(unword(Tag::Send, comm, "send comm")?);
        let mr = self.mr_or_spare(mr, len, &mut addr)?;
        // SAFETY: the caller's promise, passed on; the spare buffer lives
        // as long as the endpoint.
        match unsafe { self.ep.isend(s, addr, len, mr) }? {
            Some(r) => Ok(Some(request_word(r)?)),
            None => Ok(None),
        }
    }

    /// Starts a receive of up to `len` bytes; `None` when none can start.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid for writes, and be left alone, until the
    /// request is done.
    pub unsafe fn irecv(
        &mut self,
        comm: u64,
        mut addr: *mut u8,
        len: usize,
        mr: u64,
    ) -> Outcome<Option<u64>> {
        let r = RecvComm::from_raw(unword(Tag::Recv, comm, "receive comm")?);
        let mr = self.mr_or_spare(mr, len, &mut addr)?;
        // SAFETY: the caller's promise, passed on.
        match unsafe { self.ep.irecv(r, addr, len, mr) }? {
            Some(r) => Ok(Some(request_word(r)?)),
            None => Ok(None),
        }
    }

    /// Tests a request: the bytes moved once done (and the request is
    /// gone), `None` while it runs.
    pub fn test(&mut self, req: u64) -> Outcome<Option<usize>> {
        let r = request_from_word(req)?;
        Ok(self.ep.test(r)?)
    }

    /// Closes a comm of kind `tag`.
    pub fn close(&mut self, tag: Tag, comm: u64) -> Outcome<()> {
        let id = unword(tag, comm, "comm of that kind")?;
        let r = match tag {
            Tag::Listen => self.ep.close(ListenComm::from_raw(id)),
            Tag::Send => self.ep.close(SendComm::from_raw(id)),
            Tag::Recv => self.ep.close(RecvComm::from_raw(id)),
            Tag::Mr | Tag::Request => unreachable!("only comms are closed"),
        };
        Ok(r?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport error becomes its NCCL code once, here, and the
    /// caller's log gets the whole chain of causes.
    #[test]
    fn a_transport_error_keeps_its_causes_in_the_message() {
        let e = Failure::from(NetError::NotAHandle {
            source: ernic_net::rdma::DecodeError::HandleLen(3),
        });
        assert_eq!(e.code, Code::Invalid);
        assert_eq!(
            e.message,
            "not a listen handle: a handle of 3 bytes: a listen handle has 128"
        );
        let e = Failure::from(NetError::Request {
            reason: ernic_net::rdma::RequestError::CommClosed,
        });
        assert_eq!(
            (e.code, e.message.as_str()),
            (Code::Remote, "request failed: comm closed")
        );
        let e = Failure::from(NetError::NameTooLong { len: 200 });
        assert_eq!(e.code, Code::System);
    }

    #[test]
    fn words_carry_their_kind() {
        let w = word(Tag::Send, 7);
        assert_eq!(unword(Tag::Send, w, "send comm"), Ok(7));
        assert_eq!(
            unword(Tag::Recv, w, "receive comm").unwrap_err().code,
            Code::Invalid
        );
        assert!(unword(Tag::Send, 0, "send comm").is_err());
        assert!(unword(Tag::Send, w | 1 << 40, "send comm").is_err());
    }

    #[test]
    fn request_words_round_trip() {
        let r = Request::from_raw(5 | 0xdead_beef << 32);
        let w = request_word(r).unwrap();
        assert_eq!(w >> 56, Tag::Request as u64);
        assert_eq!(request_from_word(w).unwrap(), r);
        assert!(request_word(Request::from_raw(1 << 24)).is_err());
        assert!(request_from_word(word(Tag::Mr, 1)).is_err());
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let e = Plugin::open(&env(&[("ERNIC_NET_PROVIDER", "verbs")])).unwrap_err();
        assert_eq!(e.code, Code::Invalid);
        assert!(
            e.message.contains("ERNIC_NET_PROVIDER=verbs"),
            "{}",
            e.message
        );
        let e = Plugin::open(&env(&[("ERNIC_NET_MESH", "udp:x")])).unwrap_err();
        assert!(e.message.starts_with("ERNIC_NET_MESH"), "{}", e.message);
    }

    #[test]
    fn one_process_connection_moves_data() {
        let mut p = Plugin::open(&env(&[])).unwrap();
        let mut h = [0u8; HANDLE_LEN];
        let l = p.listen(&mut h).unwrap();
        assert_eq!(h[CONNECTING_AT..], [0; 8]);
        let (mut s, mut r) = (None, None);
        for _ in 0..100_000 {
            if s.is_none() {
                s = p.connect(&mut h).unwrap();
            }
            if r.is_none() {
                r = p.accept(l).unwrap();
            }
            if s.is_some() && r.is_some() {
                break;
            }
        }
        let (s, r) = (s.expect("connected"), r.expect("accepted"));
        assert_eq!(h[CONNECTING_AT..], [0; 8], "the handle is clean again");
        assert_eq!(p.connecting(), 0);
        let mut src = vec![0u8; 100_000];
        src.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        let mut dst = vec![0u8; 100_000];
        // SAFETY: both vectors outlive their registrations (dropped below).
        let (ms, md) = unsafe {
            (
                p.reg(s, src.as_mut_ptr(), src.len(), 1).unwrap(),
                p.reg(r, dst.as_mut_ptr(), dst.len(), 1).unwrap(),
            )
        };
        // SAFETY: the buffers stay put until both requests are done.
        let (rq, sq) = unsafe {
            (
                p.irecv(r, dst.as_mut_ptr(), dst.len(), md)
                    .unwrap()
                    .unwrap(),
                p.isend(s, src.as_mut_ptr(), src.len(), ms)
                    .unwrap()
                    .unwrap(),
            )
        };
        let (mut got_s, mut got_r) = (None, None);
        for _ in 0..1_000_000 {
            if got_s.is_none() {
                got_s = p.test(sq).unwrap();
            }
            if got_r.is_none() {
                got_r = p.test(rq).unwrap();
            }
            if got_s.is_some() && got_r.is_some() {
                break;
            }
        }
        assert_eq!((got_s, got_r), (Some(100_000), Some(100_000)));
        assert_eq!(src, dst);
        assert_eq!(
            p.test(rq).unwrap_err().code,
            Code::Invalid,
            "gone once done"
        );
        // SAFETY: never used: refused first.
        let e = unsafe { p.reg(s, dst.as_mut_ptr(), 8, 2) }.unwrap_err();
        assert!(e.message.contains("host memory"), "{}", e.message);
        assert!(
            p.close(Tag::Recv, s).is_err(),
            "a send comm is not a receive comm"
        );
        p.dereg(s, ms).unwrap();
        p.dereg(r, md).unwrap();
        p.close(Tag::Send, s).unwrap();
        p.close(Tag::Recv, r).unwrap();
        p.close(Tag::Listen, l).unwrap();
    }
}
