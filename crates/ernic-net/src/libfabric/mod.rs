//! The libfabric provider: rails on a real libfabric provider (`tcp;ofi_rxm`,
//! `shm`, `efa`, ...), reached through `libfabric.so.1` loaded at run time.
//!
//! Nothing is linked at build time: the few exported functions
//! (`fi_getinfo`, `fi_freeinfo`, `fi_dupinfo`, `fi_fabric`, `fi_strerror`,
//! `fi_version`) are looked up with `dlsym`, and everything else goes
//! through the op vectors in the objects libfabric hands back, exactly as
//! the headers' inline wrappers (`fi_domain`, `fi_endpoint`, `fi_writedata`,
//! `fi_cq_read`, ...) do. The mirrors of those structs are in [`abi`].
//!
//! One rail is a fabric, a domain, an RDM endpoint, an address vector and
//! a completion queue, opened from the `fi_info` chosen once per provider:
//! RDM, `FI_MSG | FI_RMA`, at least 4 bytes of remote CQ data, keys of at
//! most 8 bytes. `mr_mode` decides the rest: with `FI_MR_VIRT_ADDR` peers
//! write at virtual addresses, without it at offsets into the target
//! region (the tcp providers); with `FI_MR_PROV_KEY` the provider picks the
//! keys, otherwise each rail hands out its own.

pub mod abi;

use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt;
use std::sync::{Mutex, OnceLock};

use abi::*;

use crate::provider::{
    CqEntry, CqErrEntry, CqError, CqFlags, FiAddr, MrReg, PostError, Provider, ProviderError, Rail,
    RemoteAddressing,
};

/// The library file loaded at run time.
pub const LIBRARY: &str = "libfabric.so.1";

/// The oldest libfabric the `efa` provider is accepted from.
pub const EFA_MIN_VERSION: (u32, u32) = (1, 22);

type GetInfo = unsafe extern "C" fn(
    u32,
    *const c_char,
    *const c_char,
    u64,
    *const fi_info,
    *mut *mut fi_info,
) -> c_int;
type FreeInfo = unsafe extern "C" fn(*mut fi_info);
type DupInfo = unsafe extern "C" fn(*const fi_info) -> *mut fi_info;
type OpenFabric =
    unsafe extern "C" fn(*mut fi_fabric_attr, *mut *mut fid_fabric, *mut c_void) -> c_int;
type StrError = unsafe extern "C" fn(c_int) -> *const c_char;
type Version = unsafe extern "C" fn() -> u32;

/// The loaded library and its exported entry points.
struct Lib {
    // Keeps the code the pointers below point into mapped.
    _lib: libloading::Library,
    getinfo: GetInfo,
    freeinfo: FreeInfo,
    dupinfo: DupInfo,
    fabric: OpenFabric,
    strerror: StrError,
    version: u32,
}

impl Lib {
    fn load() -> Result<Lib, String> {
        // SAFETY: loading libfabric runs its initialisers, which only set
        // up its own state; this is what any libfabric user does.
        let lib = unsafe { libloading::Library::new(LIBRARY) }.map_err(|e| {
            format!(
                "cannot load {LIBRARY} ({e}); install libfabric \
                 (Debian and Ubuntu: apt-get install libfabric1)"
            )
        })?;
        fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
            // SAFETY: each name below is looked up with the type its
            // prototype in rdma/fabric.h or fi_errno.h gives.
            unsafe { lib.get::<T>(name.as_bytes()) }
                .map(|s| *s)
                .map_err(|e| format!("{LIBRARY} has no {name}: {e}"))
        }
        let version: Version = sym(&lib, "fi_version")?;
        Ok(Lib {
            getinfo: sym(&lib, "fi_getinfo")?,
            freeinfo: sym(&lib, "fi_freeinfo")?,
            dupinfo: sym(&lib, "fi_dupinfo")?,
            fabric: sym(&lib, "fi_fabric")?,
            strerror: sym(&lib, "fi_strerror")?,
            // SAFETY: fi_version takes nothing and returns the version.
            version: unsafe { version() },
            _lib: lib,
        })
    }

    /// libfabric's text for a (negative or positive) error code.
    fn error(&self, rc: isize) -> String {
        let code = rc.unsigned_abs().min(c_int::MAX as usize) as c_int;
        // SAFETY: fi_strerror returns a static string for any code.
        let text = unsafe { CStr::from_ptr((self.strerror)(code)) };
        format!("{} (-{code})", text.to_string_lossy())
    }
}

fn lib() -> Result<&'static Lib, ProviderError> {
    static LIB: OnceLock<Result<Lib, String>> = OnceLock::new();
    LIB.get_or_init(Lib::load)
        .as_ref()
        .map_err(|e| ProviderError(e.clone()))
}

/// The loaded libfabric's version as (major, minor), or why it cannot be
/// loaded.
pub fn version() -> Result<(u32, u32), ProviderError> {
    lib().map(|l| (l.version >> 16, l.version & 0xffff))
}

const fn fi_version(major: u32, minor: u32) -> u32 {
    major << 16 | minor
}

/// Reads a C string field, or "" for NULL.
///
/// # Safety
///
/// `p` must be NULL or a NUL-terminated string.
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The `fi_info` this provider opens its rails from (one entry, owned).
struct Info(*mut fi_info);

/// Rails on one libfabric provider.
pub struct LibfabricProvider {
    lib: &'static Lib,
    // Locked while a rail opens: libfabric reads the info, and nothing
    // says two threads may open objects from it at once.
    info: Mutex<Info>,
    prov_name: String,
    fabric_name: String,
    domain_name: String,
    mr_mode: c_int,
}

// SAFETY: the info is owned by the provider, only read (under the mutex)
// after `open`, and freed once in Drop; libfabric's objects made from it
// belong to the rails.
unsafe impl Send for LibfabricProvider {}
// SAFETY: as above; every access to the info is under the mutex.
unsafe impl Sync for LibfabricProvider {}

impl fmt::Debug for LibfabricProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Drop for LibfabricProvider {
    fn drop(&mut self) {
        let info = self.info.get_mut().unwrap_or_else(|p| p.into_inner());
        // SAFETY: fi_dupinfo made it; nothing uses it after this.
        unsafe { (self.lib.freeinfo)(info.0) };
    }
}

/// Frees an `fi_info` list when dropped.
struct InfoList<'a>(&'a Lib, *mut fi_info);

impl Drop for InfoList<'_> {
    fn drop(&mut self) {
        if !self.1.is_null() {
            // SAFETY: libfabric allocated the list; it is freed once.
            unsafe { (self.0.freeinfo)(self.1) };
        }
    }
}

impl LibfabricProvider {
    /// Finds an RDM provider with `FI_MSG | FI_RMA` and remote CQ data:
    /// the one named (`"tcp;ofi_rxm"`, `"shm"`, ...), or libfabric's first
    /// choice (which honours `FI_PROVIDER`).
    pub fn open(name: Option<&str>) -> Result<LibfabricProvider, ProviderError> {
        let lib = lib()?;
        let fail = |m: String| ProviderError(m);
        // SAFETY: fi_dupinfo(NULL) is fi_allocinfo: a zeroed fi_info with
        // every attribute struct allocated, freed by fi_freeinfo.
        let hints = InfoList(lib, unsafe { (lib.dupinfo)(std::ptr::null()) });
        if hints.1.is_null() {
            return Err(fail("fi_allocinfo failed (out of memory)".into()));
        }
        // SAFETY: the hints and their attribute structs were just
        // allocated by libfabric with at least the 1.17 layout mirrored in
        // `abi`; each pointer is checked before it is written through.
        unsafe {
            let h = &mut *hints.1;
            if h.ep_attr.is_null() || h.domain_attr.is_null() || h.fabric_attr.is_null() {
                return Err(fail("fi_allocinfo gave no attribute structs".into()));
            }
            h.caps = FI_MSG | FI_RMA;
            h.mode = 0;
            (*h.ep_attr).r#type = FI_EP_RDM;
            (*h.domain_attr).mr_mode =
                FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
            (*h.domain_attr).threading = FI_THREAD_DOMAIN;
            if let Some(n) = name {
                let c = CString::new(n).map_err(|_| fail(format!("provider name {n:?}")))?;
                // fi_freeinfo frees this string: it must come from malloc.
                (*h.fabric_attr).prov_name = libc::strdup(c.as_ptr());
            }
        }
        let mut list = std::ptr::null_mut();
        // SAFETY: valid hints, and an out-pointer for the list.
        let rc = unsafe {
            (lib.getinfo)(
                lib.version,
                std::ptr::null(),
                std::ptr::null(),
                0,
                hints.1,
                &mut list,
            )
        };
        let list = InfoList(lib, list);
        let what = name.map_or_else(|| "any provider".to_string(), |n| format!("provider {n:?}"));
        if rc != 0 {
            return Err(fail(format!(
                "fi_getinfo found no RDM endpoint with FI_MSG|FI_RMA on {what}: {}",
                lib.error(rc as isize)
            )));
        }
        let mut rejected = Vec::new();
        let mut at = list.1;
        while !at.is_null() {
            // SAFETY: a list entry from fi_getinfo, with its attributes.
            let (i, d, f) = unsafe { (&*at, &*(*at).domain_attr, &*(*at).fabric_attr) };
            // SAFETY: libfabric's strings are NUL-terminated or NULL.
            let prov = unsafe { text(f.prov_name) };
            if d.cq_data_size < 4 {
                rejected.push(format!("{prov}: {} bytes of CQ data", d.cq_data_size));
            } else if d.mr_key_size > 8 {
                rejected.push(format!("{prov}: {}-byte keys", d.mr_key_size));
            } else if d.mr_mode & FI_MR_ENDPOINT != 0 {
                rejected.push(format!("{prov}: needs FI_MR_ENDPOINT"));
            } else {
                if prov.split(';').any(|p| p == "efa")
                    && lib.version < fi_version(EFA_MIN_VERSION.0, EFA_MIN_VERSION.1)
                {
                    return Err(fail(format!(
                        "the efa provider needs libfabric {}.{} or newer; this is libfabric {}.{}",
                        EFA_MIN_VERSION.0,
                        EFA_MIN_VERSION.1,
                        lib.version >> 16,
                        lib.version & 0xffff
                    )));
                }
                // SAFETY: copies one entry (fi_dupinfo ignores `next`).
                let one = unsafe { (lib.dupinfo)(i) };
                if one.is_null() {
                    return Err(fail("fi_dupinfo failed (out of memory)".into()));
                }
                // SAFETY: strings of the entry just checked.
                let (fabric_name, domain_name) = unsafe { (text(f.name), text(d.name)) };
                return Ok(LibfabricProvider {
                    lib,
                    info: Mutex::new(Info(one)),
                    prov_name: prov,
                    fabric_name,
                    domain_name,
                    mr_mode: d.mr_mode,
                });
            }
            at = i.next;
        }
        Err(fail(format!(
            "no usable RDM endpoint on {what}: {}",
            rejected.join("; ")
        )))
    }

    /// The provider's name as libfabric gives it (`"tcp;ofi_rxm"`).
    pub fn prov_name(&self) -> &str {
        &self.prov_name
    }

    /// One line for logs: provider, fabric, domain and library version.
    pub fn describe(&self) -> String {
        format!(
            "{} (fabric {}, domain {}, libfabric {}.{}, mr_mode {:#x})",
            self.prov_name,
            self.fabric_name,
            self.domain_name,
            self.lib.version >> 16,
            self.lib.version & 0xffff,
            self.mr_mode
        )
    }
}

impl Provider for LibfabricProvider {
    fn name(&self) -> String {
        format!("libfabric:{}", self.prov_name)
    }

    fn open_rail(&self) -> Result<Box<dyn Rail>, ProviderError> {
        let info = self.info.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the info is valid for the provider's life (held locked).
        let rail = unsafe { LibfabricRail::open(self.lib, info.0, self.mr_mode) }?;
        Ok(Box::new(rail))
    }
}

/// One rail's libfabric objects.
pub struct LibfabricRail {
    lib: &'static Lib,
    fabric: *mut fid_fabric,
    domain: *mut fid_domain,
    cq: *mut fid_cq,
    av: *mut fid_av,
    ep: *mut fid_ep,
    name: Vec<u8>,
    virt: bool,
    prov_key: bool,
    addr_str: bool,
    next_key: u64,
    peers: HashMap<Vec<u8>, FiAddr>,
    dests: HashSet<FiAddr>,
    mrs: HashSet<u64>,
}

// SAFETY: the objects were opened with FI_THREAD_DOMAIN and are only used
// through `&mut self`, so one thread at a time touches them; libfabric
// keeps no per-thread state for them.
unsafe impl Send for LibfabricRail {}

impl fmt::Debug for LibfabricRail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LibfabricRail")
            .field("name", &self.name)
            .finish()
    }
}

/// Closes a libfabric object through its fid's ops.
///
/// # Safety
///
/// `f` must be NULL or an open fid, not used after this.
unsafe fn close(f: *mut fid) {
    if !f.is_null() {
        // SAFETY: the caller's promise; `ops->close` is fi_close.
        unsafe { ((*(*f).ops).close)(f) };
    }
}

impl LibfabricRail {
    /// Opens the objects of one rail from `info`.
    ///
    /// # Safety
    ///
    /// `info` must be a valid `fi_info` from libfabric for the call.
    unsafe fn open(
        lib: &'static Lib,
        info: *mut fi_info,
        mr_mode: c_int,
    ) -> Result<LibfabricRail, ProviderError> {
        let mut r = LibfabricRail {
            lib,
            fabric: std::ptr::null_mut(),
            domain: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            av: std::ptr::null_mut(),
            ep: std::ptr::null_mut(),
            name: Vec::new(),
            virt: mr_mode & FI_MR_VIRT_ADDR != 0,
            prov_key: mr_mode & FI_MR_PROV_KEY != 0,
            // SAFETY: the caller's promise: `info` is valid.
            addr_str: unsafe { (*info).addr_format } == FI_ADDR_STR,
            next_key: 1,
            peers: HashMap::new(),
            dests: HashSet::new(),
            mrs: HashSet::new(),
        };
        let check = |rc: c_int, what: &str| {
            if rc == 0 {
                Ok(())
            } else {
                Err(ProviderError(format!("{what}: {}", lib.error(rc as isize))))
            }
        };
        // SAFETY: each call is the headers' inline wrapper spelled out: the
        // op is read from the object's own op vector and called with that
        // object and out-pointers into `r`; whatever opened before a
        // failure is closed by `r`'s Drop.
        unsafe {
            let i = &*info;
            check(
                (lib.fabric)(i.fabric_attr, &mut r.fabric, std::ptr::null_mut()),
                "fi_fabric",
            )?;
            check(
                ((*(*r.fabric).ops).domain)(r.fabric, info, &mut r.domain, std::ptr::null_mut()),
                "fi_domain",
            )?;
            let depth = (*i.tx_attr).size + (*i.rx_attr).size;
            let mut cq_attr = fi_cq_attr {
                size: depth.max(1024),
                flags: 0,
                format: FI_CQ_FORMAT_DATA,
                wait_obj: FI_WAIT_NONE,
                signaling_vector: 0,
                wait_cond: 0,
                wait_set: std::ptr::null_mut(),
            };
            check(
                ((*(*r.domain).ops).cq_open)(
                    r.domain,
                    &mut cq_attr,
                    &mut r.cq,
                    std::ptr::null_mut(),
                ),
                "fi_cq_open",
            )?;
            let mut av_attr = fi_av_attr {
                r#type: FI_AV_UNSPEC,
                rx_ctx_bits: 0,
                count: 0,
                ep_per_node: 0,
                name: std::ptr::null(),
                map_addr: std::ptr::null_mut(),
                flags: 0,
            };
            check(
                ((*(*r.domain).ops).av_open)(
                    r.domain,
                    &mut av_attr,
                    &mut r.av,
                    std::ptr::null_mut(),
                ),
                "fi_av_open",
            )?;
            check(
                ((*(*r.domain).ops).endpoint)(r.domain, info, &mut r.ep, std::ptr::null_mut()),
                "fi_endpoint",
            )?;
            let ep = &mut (*r.ep).fid as *mut fid;
            check(
                ((*(*ep).ops).bind)(ep, &mut (*r.cq).fid, FI_TRANSMIT | FI_RECV),
                "fi_ep_bind (cq)",
            )?;
            check(
                ((*(*ep).ops).bind)(ep, &mut (*r.av).fid, 0),
                "fi_ep_bind (av)",
            )?;
            check(
                ((*(*ep).ops).control)(ep, FI_ENABLE, std::ptr::null_mut()),
                "fi_enable",
            )?;
            let mut name = [0u8; 64];
            let mut len = name.len();
            check(
                ((*(*r.ep).cm).getname)(ep, name.as_mut_ptr().cast(), &mut len),
                "fi_getname",
            )?;
            if len > 56 {
                return Err(ProviderError(format!(
                    "the endpoint's name has {len} bytes; a handle holds 56"
                )));
            }
            r.name = name[..len].to_vec();
        }
        Ok(r)
    }

    /// Refuses a destination that `av_insert` did not give: libfabric
    /// would index its address table with it unchecked.
    fn check_dest(&self, dest: FiAddr) -> Result<(), PostError> {
        if self.dests.contains(&dest) {
            Ok(())
        } else {
            Err(PostError::Failed(format!("no peer at address {dest}")))
        }
    }

    fn post(&self, rc: isize) -> Result<(), PostError> {
        match rc {
            0 => Ok(()),
            rc if rc == -FI_EAGAIN => Err(PostError::Again),
            rc => Err(PostError::Failed(self.lib.error(rc))),
        }
    }
}

impl Drop for LibfabricRail {
    fn drop(&mut self) {
        // SAFETY: every pointer is NULL or an object this rail opened and
        // nothing else holds; the endpoint goes first (it is bound to the
        // CQ and AV), the domain and fabric last.
        unsafe {
            close(self.ep.cast());
            close(self.av.cast());
            close(self.cq.cast());
            for &mr in &self.mrs {
                close(mr as usize as *mut fid);
            }
            close(self.domain.cast());
            close(self.fabric.cast());
        }
    }
}

fn flags(f: u64) -> CqFlags {
    let mut out = CqFlags::default();
    for (bit, ours) in [
        (FI_SEND, CqFlags::SEND),
        (FI_RECV, CqFlags::RECV),
        (FI_REMOTE_WRITE, CqFlags::REMOTE_WRITE),
        (FI_REMOTE_CQ_DATA, CqFlags::REMOTE_CQ_DATA),
    ] {
        if f & bit != 0 {
            out = out | ours;
        }
    }
    if f & FI_WRITE != 0 && f & FI_REMOTE_WRITE == 0 {
        out = out | CqFlags::WRITE;
    }
    out
}

/// How many completions one `fi_cq_read` takes (on the stack).
const CQ_BATCH: usize = 32;

impl Rail for LibfabricRail {
    fn name(&self) -> Vec<u8> {
        self.name.clone()
    }

    fn av_insert(&mut self, name: &[u8]) -> Result<FiAddr, ProviderError> {
        if let Some(&a) = self.peers.get(name) {
            return Ok(a);
        }
        // fi_av_insert takes no length: it reads a string up to its NUL
        // (FI_ADDR_STR, as shm's names are) or an address of the
        // provider's own size. A name that is neither could make it read
        // past the caller's bytes.
        let fits = if self.addr_str {
            name.contains(&0)
        } else {
            name.len() == self.name.len()
        };
        if !fits {
            return Err(ProviderError(format!(
                "a {}-byte name is not an address of this provider (its names are {})",
                name.len(),
                if self.addr_str {
                    "NUL-terminated strings".to_string()
                } else {
                    format!("{} bytes", self.name.len())
                }
            )));
        }
        let mut addr: fi_addr_t = FI_ADDR_UNSPEC;
        // SAFETY: fi_av_insert of one address of `name.len()` bytes (the
        // provider's own format, from a peer's fi_getname) into our AV.
        let n = unsafe {
            ((*(*self.av).ops).insert)(
                self.av,
                name.as_ptr().cast(),
                1,
                &mut addr,
                0,
                std::ptr::null_mut(),
            )
        };
        if n != 1 || addr == FI_ADDR_UNSPEC {
            return Err(ProviderError(format!(
                "fi_av_insert of a {}-byte name failed: {}",
                name.len(),
                if n < 0 {
                    self.lib.error(n as isize)
                } else {
                    "not inserted".into()
                }
            )));
        }
        self.peers.insert(name.to_vec(), addr);
        self.dests.insert(addr);
        Ok(addr)
    }

    fn remote_addressing(&self) -> RemoteAddressing {
        if self.virt {
            RemoteAddressing::Virtual
        } else {
            RemoteAddressing::Offset
        }
    }

    unsafe fn mr_reg(&mut self, addr: *mut u8, len: usize) -> Result<MrReg, ProviderError> {
        let access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
        let requested = if self.prov_key { 0 } else { self.next_key };
        let mut mr: *mut fid_mr = std::ptr::null_mut();
        // SAFETY: fi_mr_reg on our domain; the caller keeps the memory
        // valid until mr_close (this function's contract).
        let rc = unsafe {
            ((*(*self.domain).mr).reg)(
                &mut (*self.domain).fid,
                addr.cast(),
                len,
                access,
                0,
                requested,
                0,
                &mut mr,
                std::ptr::null_mut(),
            )
        };
        if rc != 0 || mr.is_null() {
            return Err(ProviderError(format!(
                "fi_mr_reg of {len} bytes: {}",
                self.lib.error(rc as isize)
            )));
        }
        if !self.prov_key {
            self.next_key += 1;
        }
        self.mrs.insert(mr as u64);
        // SAFETY: a registration libfabric just returned.
        let (key, desc) = unsafe { ((*mr).key, (*mr).mem_desc as u64) };
        Ok(MrReg {
            handle: mr as u64,
            key,
            desc,
        })
    }

    fn mr_close(&mut self, handle: u64) -> Result<(), ProviderError> {
        if !self.mrs.remove(&handle) {
            return Err(ProviderError(format!("no registration {handle:#x}")));
        }
        // SAFETY: one of our open registrations, closed once (removed
        // from the set above).
        let rc = unsafe {
            let f = handle as usize as *mut fid;
            ((*(*f).ops).close)(f)
        };
        if rc != 0 {
            return Err(ProviderError(format!(
                "fi_close(mr): {}",
                self.lib.error(rc as isize)
            )));
        }
        Ok(())
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
        self.check_dest(dest)?;
        // SAFETY: fi_writedata through the endpoint's RMA ops; the source
        // bytes lie in a registration of ours (the caller's contract) and
        // the context is an opaque word handed back in the completion.
        let rc = unsafe {
            ((*(*self.ep).rma).writedata)(
                self.ep,
                addr as usize as *const c_void,
                len,
                desc as usize as *mut c_void,
                u64::from(data),
                dest,
                remote,
                key,
                context as usize as *mut c_void,
            )
        };
        self.post(rc)
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
        self.check_dest(dest)?;
        // SAFETY: fi_senddata through the endpoint's message ops, as above.
        let rc = unsafe {
            ((*(*self.ep).msg).senddata)(
                self.ep,
                addr as usize as *const c_void,
                len,
                desc as usize as *mut c_void,
                u64::from(data),
                dest,
                context as usize as *mut c_void,
            )
        };
        self.post(rc)
    }

    fn recv(&mut self, addr: u64, len: usize, desc: u64, context: u64) -> Result<(), PostError> {
        // SAFETY: fi_recv into a registered buffer of ours, from any peer.
        let rc = unsafe {
            ((*(*self.ep).msg).recv)(
                self.ep,
                addr as usize as *mut c_void,
                len,
                desc as usize as *mut c_void,
                FI_ADDR_UNSPEC,
                context as usize as *mut c_void,
            )
        };
        self.post(rc)
    }

    fn cq_read(&mut self, out: &mut [CqEntry]) -> Result<usize, CqError> {
        // SAFETY: all-zero is a valid fi_cq_data_entry (NULL pointers and
        // zero numbers).
        let mut buf: [fi_cq_data_entry; CQ_BATCH] = unsafe { std::mem::zeroed() };
        let want = out.len().min(CQ_BATCH);
        // SAFETY: fi_cq_read of at most `want` entries in the DATA format
        // the CQ was opened with, into `buf`.
        let n = unsafe { ((*(*self.cq).ops).read)(self.cq, buf.as_mut_ptr().cast(), want) };
        if n > 0 {
            let n = (n as usize).min(want);
            for (o, e) in out.iter_mut().zip(&buf[..n]) {
                *o = CqEntry {
                    context: e.op_context as u64,
                    flags: flags(e.flags),
                    len: e.len,
                    data: e.data as u32,
                };
            }
            return Ok(n);
        }
        match n {
            0 => Err(CqError::Again),
            n if n == -FI_EAGAIN => Err(CqError::Again),
            n if n == -FI_EAVAIL => Err(CqError::Avail),
            n => Err(CqError::Failed(self.lib.error(n))),
        }
    }

    fn cq_readerr(&mut self) -> Option<CqErrEntry> {
        // SAFETY: all-zero is a valid fi_cq_err_entry (err_data_size 0
        // asks the provider for its own error-data buffer).
        let mut e: fi_cq_err_entry = unsafe { std::mem::zeroed() };
        // SAFETY: fi_cq_readerr of one entry into `e`.
        let n = unsafe { ((*(*self.cq).ops).readerr)(self.cq, &mut e, 0) };
        if n != 1 {
            return None;
        }
        Some(CqErrEntry {
            context: e.op_context as u64,
            flags: flags(e.flags),
            err: e.err.abs(),
            message: format!(
                "{} (provider error {})",
                self.lib.error(e.err as isize),
                e.prov_errno
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_flags_translate() {
        assert_eq!(flags(FI_MSG | FI_SEND), CqFlags::SEND);
        assert_eq!(flags(FI_RMA | FI_WRITE), CqFlags::WRITE);
        assert_eq!(
            flags(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
            CqFlags::REMOTE_WRITE | CqFlags::REMOTE_CQ_DATA
        );
        assert_eq!(
            flags(FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA),
            CqFlags::RECV | CqFlags::REMOTE_CQ_DATA
        );
    }

    /// Compares every size and offset in `abi` with the installed headers,
    /// by compiling a C program that prints them. Skips (with one line)
    /// where the headers or a C compiler are missing; CI installs both.
    #[test]
    fn layouts_match_the_installed_headers() {
        let header = std::path::Path::new("/usr/include/rdma/fabric.h");
        if !header.exists() {
            assert_ne!(
                std::env::var("ERNIC_REQUIRE_LIBFABRIC").as_deref(),
                Ok("1"),
                "ERNIC_REQUIRE_LIBFABRIC=1 but libfabric's headers are missing"
            );
            println!(
                "skipped: libfabric's headers are not installed (apt-get install libfabric-dev)"
            );
            return;
        }
        let rows = abi::layout();
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <rdma/fabric.h>\n\
             #include <rdma/fi_domain.h>\n#include <rdma/fi_endpoint.h>\n\
             #include <rdma/fi_cm.h>\n#include <rdma/fi_rma.h>\n#include <rdma/fi_eq.h>\n\
             int main(void) {\n",
        );
        for (expr, _) in &rows {
            c.push_str(&format!("  printf(\"%zu\\n\", (size_t){expr});\n"));
        }
        c.push_str("  return 0;\n}\n");
        let dir = std::env::temp_dir().join(format!("ernic-fi-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, exe) = (dir.join("layout.c"), dir.join("layout"));
        std::fs::write(&src, c).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = match std::process::Command::new(&cc)
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
        {
            Ok(s) => s,
            Err(e) => {
                println!("skipped: no C compiler ({cc}: {e})");
                return;
            }
        };
        assert!(built.success(), "the layout probe did not compile");
        let out = std::process::Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let got: Vec<usize> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(got.len(), rows.len());
        let wrong: Vec<String> = rows
            .iter()
            .zip(&got)
            .filter(|((_, ours), theirs)| ours != *theirs)
            .map(|((e, ours), theirs)| format!("{e}: ours {ours}, headers {theirs}"))
            .collect();
        assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
    }
}
