//! [`LibfabricProvider`]: the `fi_info` chosen once (RDM, `FI_MSG |
//! FI_RMA`, remote CQ data, small keys, an accepted version of `efa`),
//! from which every rail opens.

use std::ffi::{CString, c_int};
use std::fmt;
use std::sync::Mutex;

use super::EFA_MIN_VERSION;
use super::abi::*;
use super::library::{Lib, fi_version, lib, text};
use super::rail::LibfabricRail;
use crate::provider::{Provider, ProviderError, Rail};

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
