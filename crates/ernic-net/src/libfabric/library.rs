//! The loaded `libfabric.so.1`: its few exported entry points, looked up
//! once with `dlsym`, the library's version, and its text for an error
//! code. Everything past these goes through the op vectors of the objects
//! libfabric hands back (see `rail.rs`).

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

use super::LIBRARY;
use super::abi::*;
use crate::provider::ProviderError;

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
pub(super) struct Lib {
    // Keeps the code the pointers below point into mapped.
    _lib: libloading::Library,
    pub(super) getinfo: GetInfo,
    pub(super) freeinfo: FreeInfo,
    pub(super) dupinfo: DupInfo,
    pub(super) fabric: OpenFabric,
    pub(super) strerror: StrError,
    pub(super) version: u32,
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
    pub(super) fn error(&self, rc: isize) -> String {
        let code = rc.unsigned_abs().min(c_int::MAX as usize) as c_int;
        // SAFETY: fi_strerror returns a static string for any code.
        let text = unsafe { CStr::from_ptr((self.strerror)(code)) };
        format!("{} (-{code})", text.to_string_lossy())
    }
}

pub(super) fn lib() -> Result<&'static Lib, ProviderError> {
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

pub(super) const fn fi_version(major: u32, minor: u32) -> u32 {
    major << 16 | minor
}

/// Reads a C string field, or "" for NULL.
///
/// # Safety
///
/// `p` must be NULL or a NUL-terminated string.
pub(super) unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
