//! [`LibfabricRail`]: one rail's fabric, domain, RDM endpoint, address
//! vector and completion queue, and the provider contract over them
//! (address insertion, registrations, posts through the endpoint's op
//! vectors, CQ reads and the translation of libfabric's completion flags).

use std::collections::{HashMap, HashSet};
use std::ffi::{c_int, c_void};
use std::fmt;

use super::abi::*;
use super::library::Lib;
use crate::provider::{
    CqEntry, CqErrEntry, CqError, CqFlags, FiAddr, MrReg, PostError, ProviderError, Rail,
    RemoteAddressing,
};

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
    pub(super) unsafe fn open(
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
}
