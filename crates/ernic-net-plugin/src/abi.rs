//! The C side: `#[repr(C)]` tables laid out as NCCL's `net_v6.h`,
//! `net_v5.h` and `net_v4.h` define them, and the `extern "C"` entry points
//! they hold. Each entry point checks the caller's pointers, takes the
//! plugin's lock, calls [`Plugin`], turns a failure into its `ncclResult_t`
//! and a WARN line for the caller's logger, and turns a panic into
//! `ncclInternalError` (a panic must not unwind into C).

use std::ffi::{CStr, c_char, c_int, c_ulong, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard};

use ernic_net::rdma::HANDLE_LEN;

use crate::plugin::{Code, Failure, Outcome, Plugin, Tag};

/// `NCCL_PTR_HOST`.
pub const NCCL_PTR_HOST: c_int = 1;
/// `NCCL_NET`: the subsystem flag of our log lines.
pub const NCCL_NET: c_ulong = 16;
/// `NCCL_LOG_WARN`.
pub const NCCL_LOG_WARN: c_int = 2;
/// `NCCL_LOG_INFO`.
pub const NCCL_LOG_INFO: c_int = 3;
/// `NCCL_LOG_TRACE`.
pub const NCCL_LOG_TRACE: c_int = 5;

/// `ncclResult_t`.
pub type NcclResult = c_int;

/// `ncclDebugLogger_t`: `(level, flags, file, line, fmt, ...)`.
pub type Logger = unsafe extern "C" fn(c_int, c_ulong, *const c_char, c_int, *const c_char, ...);

/// `ncclNetProperties_v6_t` (also v5's).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PropertiesV6 {
    /// Device name.
    pub name: *mut c_char,
    /// sysfs path.
    pub pci_path: *mut c_char,
    /// Unique device id.
    pub guid: u64,
    /// `NCCL_PTR_*` bits.
    pub ptr_support: c_int,
    /// Mbps.
    pub speed: c_int,
    /// Port number.
    pub port: c_int,
    /// Microseconds.
    pub latency: f32,
    /// Comms the device can hold.
    pub max_comms: c_int,
    /// Receives one irecv may group.
    pub max_recvs: c_int,
}

/// `ncclNetProperties_v4_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PropertiesV4 {
    /// Device name.
    pub name: *mut c_char,
    /// sysfs path.
    pub pci_path: *mut c_char,
    /// Unique device id.
    pub guid: u64,
    /// `NCCL_PTR_*` bits.
    pub ptr_support: c_int,
    /// Mbps.
    pub speed: c_int,
    /// Port number.
    pub port: c_int,
    /// Comms the device can hold.
    pub max_comms: c_int,
}

type V = *mut c_void;
type Vp = *mut *mut c_void;

/// `ncclNet_v6_t`.
#[repr(C)]
#[allow(missing_docs)]
pub struct NetV6 {
    pub name: *const c_char,
    pub init: unsafe extern "C" fn(Option<Logger>) -> NcclResult,
    pub devices: unsafe extern "C" fn(*mut c_int) -> NcclResult,
    pub get_properties: unsafe extern "C" fn(c_int, *mut PropertiesV6) -> NcclResult,
    pub listen: unsafe extern "C" fn(c_int, V, Vp) -> NcclResult,
    pub connect: unsafe extern "C" fn(c_int, V, Vp) -> NcclResult,
    pub accept: unsafe extern "C" fn(V, Vp) -> NcclResult,
    pub reg_mr: unsafe extern "C" fn(V, V, c_int, c_int, Vp) -> NcclResult,
    pub reg_mr_dma_buf: unsafe extern "C" fn(V, V, usize, c_int, u64, c_int, Vp) -> NcclResult,
    pub dereg_mr: unsafe extern "C" fn(V, V) -> NcclResult,
    pub isend: unsafe extern "C" fn(V, V, c_int, c_int, V, Vp) -> NcclResult,
    pub irecv: unsafe extern "C" fn(V, c_int, Vp, *mut c_int, *mut c_int, Vp, Vp) -> NcclResult,
    pub iflush: unsafe extern "C" fn(V, c_int, Vp, *mut c_int, Vp, Vp) -> NcclResult,
    pub test: unsafe extern "C" fn(V, *mut c_int, *mut c_int) -> NcclResult,
    pub close_send: unsafe extern "C" fn(V) -> NcclResult,
    pub close_recv: unsafe extern "C" fn(V) -> NcclResult,
    pub close_listen: unsafe extern "C" fn(V) -> NcclResult,
}

/// `ncclNet_v5_t`: v6 without `regMrDmaBuf`.
#[repr(C)]
#[allow(missing_docs)]
pub struct NetV5 {
    pub name: *const c_char,
    pub init: unsafe extern "C" fn(Option<Logger>) -> NcclResult,
    pub devices: unsafe extern "C" fn(*mut c_int) -> NcclResult,
    pub get_properties: unsafe extern "C" fn(c_int, *mut PropertiesV6) -> NcclResult,
    pub listen: unsafe extern "C" fn(c_int, V, Vp) -> NcclResult,
    pub connect: unsafe extern "C" fn(c_int, V, Vp) -> NcclResult,
    pub accept: unsafe extern "C" fn(V, Vp) -> NcclResult,
    pub reg_mr: unsafe extern "C" fn(V, V, c_int, c_int, Vp) -> NcclResult,
    pub dereg_mr: unsafe extern "C" fn(V, V) -> NcclResult,
    pub isend: unsafe extern "C" fn(V, V, c_int, c_int, V, Vp) -> NcclResult,
    pub irecv: unsafe extern "C" fn(V, c_int, Vp, *mut c_int, *mut c_int, Vp, Vp) -> NcclResult,
    pub iflush: unsafe extern "C" fn(V, c_int, Vp, *mut c_int, Vp, Vp) -> NcclResult,
    pub test: unsafe extern "C" fn(V, *mut c_int, *mut c_int) -> NcclResult,
    pub close_send: unsafe extern "C" fn(V) -> NcclResult,
    pub close_recv: unsafe extern "C" fn(V) -> NcclResult,
    pub close_listen: unsafe extern "C" fn(V) -> NcclResult,
}

/// `ncclNet_v4_t`: one buffer per receive and flush, no tags.
#[repr(C)]
#[allow(missing_docs)]
pub struct NetV4 {
    pub name: *const c_char,
    pub init: unsafe extern "C" fn(Option<Logger>) -> NcclResult,
    pub devices: unsafe extern "C" fn(*mut c_int) -> NcclResult,
    pub get_properties: unsafe extern "C" fn(c_int, *mut PropertiesV4) -> NcclResult,
    pub listen: unsafe extern "C" fn(c_int, V, Vp) -> NcclResult,
    pub connect: unsafe extern "C" fn(c_int, V, Vp) -> NcclResult,
    pub accept: unsafe extern "C" fn(V, Vp) -> NcclResult,
    pub reg_mr: unsafe extern "C" fn(V, V, c_int, c_int, Vp) -> NcclResult,
    pub dereg_mr: unsafe extern "C" fn(V, V) -> NcclResult,
    pub isend: unsafe extern "C" fn(V, V, c_int, V, Vp) -> NcclResult,
    pub irecv: unsafe extern "C" fn(V, V, c_int, V, Vp) -> NcclResult,
    pub iflush: unsafe extern "C" fn(V, V, c_int, V, Vp) -> NcclResult,
    pub test: unsafe extern "C" fn(V, *mut c_int, *mut c_int) -> NcclResult,
    pub close_send: unsafe extern "C" fn(V) -> NcclResult,
    pub close_recv: unsafe extern "C" fn(V) -> NcclResult,
    pub close_listen: unsafe extern "C" fn(V) -> NcclResult,
}

// SAFETY: the tables are immutable after link time; `name` points at a
// static C string and every other field is a function pointer.
unsafe impl Sync for NetV6 {}
// SAFETY: as for NetV6.
unsafe impl Sync for NetV5 {}
// SAFETY: as for NetV6.
unsafe impl Sync for NetV4 {}

const NAME: &CStr = c"ernic";

/// The table NCCL looks up by name.
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static ncclNetPlugin_v6: NetV6 = NetV6 {
    name: NAME.as_ptr(),
    init,
    devices,
    get_properties: get_properties_v6,
    listen,
    connect,
    accept,
    reg_mr,
    reg_mr_dma_buf,
    dereg_mr,
    isend,
    irecv,
    iflush,
    test,
    close_send,
    close_recv,
    close_listen,
};

/// The v5 table.
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static ncclNetPlugin_v5: NetV5 = NetV5 {
    name: NAME.as_ptr(),
    init,
    devices,
    get_properties: get_properties_v6,
    listen,
    connect,
    accept,
    reg_mr,
    dereg_mr,
    isend,
    irecv,
    iflush,
    test,
    close_send,
    close_recv,
    close_listen,
};

/// The v4 table.
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals)]
pub static ncclNetPlugin_v4: NetV4 = NetV4 {
    name: NAME.as_ptr(),
    init,
    devices,
    get_properties: get_properties_v4,
    listen,
    connect,
    accept,
    reg_mr,
    dereg_mr,
    isend: isend_v4,
    irecv: irecv_v4,
    iflush: iflush_v4,
    test,
    close_send,
    close_recv,
    close_listen,
};

static PLUGIN: Mutex<Option<Plugin>> = Mutex::new(None);
static LOGGER: Mutex<Option<Logger>> = Mutex::new(None);

/// Sends one line to the caller's logger, if it gave one.
pub(crate) fn log(level: c_int, line: &str) {
    let logger = *LOGGER.lock().unwrap_or_else(|p| p.into_inner());
    let Some(logger) = logger else { return };
    let text = std::ffi::CString::new(line.replace('\0', " ")).expect("NULs replaced");
    // SAFETY: `logger` is the caller's ncclDebugLogger_t, called as its
    // type says: a printf-style format of "%s" with one C string, both
    // valid for the call.
    unsafe {
        logger(
            level,
            NCCL_NET,
            c"ernic-net-plugin".as_ptr(),
            0,
            c"%s".as_ptr(),
            text.as_ptr(),
        )
    };
}

fn plugin_lock() -> MutexGuard<'static, Option<Plugin>> {
    PLUGIN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `f`, mapping its failure or panic to a result code and a log line.
fn guard(what: &str, f: impl FnOnce() -> Outcome<()>) -> NcclResult {
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Failure {
            code: Code::Internal,
            message: "internal error (a panic, caught)".into(),
        })
    });
    match r {
        Ok(()) => Code::Success as NcclResult,
        Err(e) => {
            log(NCCL_LOG_WARN, &format!("NET/ernic: {what}: {}", e.message));
            e.code as NcclResult
        }
    }
}

/// Runs `f` on the opened plugin.
fn with_plugin(what: &str, f: impl FnOnce(&mut Plugin) -> Outcome<()>) -> NcclResult {
    guard(what, || {
        let mut p = plugin_lock();
        let p = p
            .as_mut()
            .ok_or_else(|| Failure::invalid("the plugin is not initialised: call init first"))?;
        f(p)
    })
}

fn out<T>(p: *mut T, what: &str) -> Outcome<*mut T> {
    if p.is_null() {
        Err(Failure::invalid(format!("{what} is NULL")))
    } else {
        Ok(p)
    }
}

fn check_dev(dev: c_int) -> Outcome<()> {
    if dev != 0 {
        return Err(Failure::invalid(format!(
            "no device {dev}: ernic has one device, 0"
        )));
    }
    Ok(())
}

fn len(size: impl TryInto<usize> + Copy + std::fmt::Display) -> Outcome<usize> {
    size.try_into()
        .map_err(|_| Failure::invalid(format!("size {size} is negative")))
}

/// Writes a word (or NULL for `None`) through an out-pointer.
///
/// # Safety
///
/// `p` must be valid for a pointer-sized write (checked non-NULL here).
unsafe fn put(p: Vp, w: Option<u64>, what: &str) -> Outcome<()> {
    let p = out(p, what)?;
    // SAFETY: the caller's promise; non-NULL checked above.
    unsafe { p.write(w.map_or(std::ptr::null_mut(), |w| w as usize as *mut c_void)) };
    Ok(())
}

unsafe extern "C" fn init(logger: Option<Logger>) -> NcclResult {
    *LOGGER.lock().unwrap_or_else(|p| p.into_inner()) = logger;
    crate::logs::init();
    guard("init", || {
        let mut p = plugin_lock();
        if p.is_none() {
            let opened = Plugin::open(&|k| std::env::var(k).ok())?;
            // Through tracing, so it goes wherever ERNIC_LOG lets it.
            tracing::info!("{}", opened.summary);
            *p = Some(opened);
        }
        Ok(())
    })
}

unsafe extern "C" fn devices(ndev: *mut c_int) -> NcclResult {
    with_plugin("devices", |_| {
        // SAFETY: NCCL passes a valid int pointer; NULL is refused.
        unsafe { out(ndev, "ndev")?.write(1) };
        Ok(())
    })
}

fn fill_v6(p: &Plugin, props: &mut PropertiesV6) {
    *props = PropertiesV6 {
        name: p.name.as_ptr().cast_mut(),
        pci_path: p.pci_path.as_ptr().cast_mut(),
        guid: 0x0045_524e_4943_0000,
        ptr_support: NCCL_PTR_HOST,
        speed: 100_000 * p.rails() as c_int,
        port: 1,
        latency: 0.0,
        max_comms: 65_536,
        max_recvs: 1,
    };
}

unsafe extern "C" fn get_properties_v6(dev: c_int, props: *mut PropertiesV6) -> NcclResult {
    with_plugin("getProperties", |p| {
        check_dev(dev)?;
        let props = out(props, "props")?;
        // SAFETY: NCCL passes a valid properties struct; NULL is refused.
        fill_v6(p, unsafe { &mut *props });
        Ok(())
    })
}

unsafe extern "C" fn get_properties_v4(dev: c_int, props: *mut PropertiesV4) -> NcclResult {
    with_plugin("getProperties", |p| {
        check_dev(dev)?;
        let props = out(props, "props")?;
        let mut v6 = PropertiesV6 {
            name: std::ptr::null_mut(),
            pci_path: std::ptr::null_mut(),
            guid: 0,
            ptr_support: 0,
            speed: 0,
            port: 0,
            latency: 0.0,
            max_comms: 0,
            max_recvs: 0,
        };
        fill_v6(p, &mut v6);
        // SAFETY: NCCL passes a valid v4 properties struct; NULL is refused.
        unsafe {
            props.write(PropertiesV4 {
                name: v6.name,
                pci_path: v6.pci_path,
                guid: v6.guid,
                ptr_support: v6.ptr_support,
                speed: v6.speed,
                port: v6.port,
                max_comms: v6.max_comms,
            })
        };
        Ok(())
    })
}

/// The caller's handle buffer.
///
/// # Safety
///
/// `h` must point at `NCCL_NET_HANDLE_MAXSIZE` (128) writable bytes that no
/// one else touches during the call (checked non-NULL here).
unsafe fn handle<'a>(h: V) -> Outcome<&'a mut [u8; HANDLE_LEN]> {
    let h = out(h, "handle")?;
    // SAFETY: the caller's promise.
    Ok(unsafe { &mut *h.cast::<[u8; HANDLE_LEN]>() })
}

unsafe extern "C" fn listen(dev: c_int, h: V, listen_comm: Vp) -> NcclResult {
    with_plugin("listen", |p| {
        check_dev(dev)?;
        out(listen_comm, "listenComm")?;
        // SAFETY: NCCL passes a 128-byte handle buffer.
        let w = p.listen(unsafe { handle(h) }?)?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(listen_comm, Some(w), "listenComm") }
    })
}

unsafe extern "C" fn connect(dev: c_int, h: V, send_comm: Vp) -> NcclResult {
    with_plugin("connect", |p| {
        check_dev(dev)?;
        out(send_comm, "sendComm")?;
        // SAFETY: NCCL passes the peer's 128-byte handle, the same buffer
        // on every call for one connection.
        let w = p.connect(unsafe { handle(h) }?)?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(send_comm, w, "sendComm") }
    })
}

unsafe extern "C" fn accept(listen_comm: V, recv_comm: Vp) -> NcclResult {
    with_plugin("accept", |p| {
        out(recv_comm, "recvComm")?;
        let w = p.accept(listen_comm as u64)?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(recv_comm, w, "recvComm") }
    })
}

unsafe extern "C" fn reg_mr(comm: V, data: V, size: c_int, ty: c_int, mhandle: Vp) -> NcclResult {
    with_plugin("regMr", |p| {
        out(mhandle, "mhandle")?;
        let n = len(size)?;
        // SAFETY: NCCL registers memory it keeps until deregMr, as the ABI
        // requires.
        let w = unsafe { p.reg(comm as u64, data.cast(), n, ty) }?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(mhandle, Some(w), "mhandle") }
    })
}

unsafe extern "C" fn reg_mr_dma_buf(
    comm: V,
    data: V,
    size: usize,
    ty: c_int,
    _offset: u64,
    _fd: c_int,
    mhandle: Vp,
) -> NcclResult {
    with_plugin("regMrDmaBuf", |p| {
        out(mhandle, "mhandle")?;
        // Host memory needs no dma-buf: the fd and offset are not used.
        // SAFETY: as in regMr.
        let w = unsafe { p.reg(comm as u64, data.cast(), size, ty) }?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(mhandle, Some(w), "mhandle") }
    })
}

unsafe extern "C" fn dereg_mr(comm: V, mhandle: V) -> NcclResult {
    with_plugin("deregMr", |p| p.dereg(comm as u64, mhandle as u64))
}

unsafe extern "C" fn isend(
    send_comm: V,
    data: V,
    size: c_int,
    _tag: c_int,
    mhandle: V,
    request: Vp,
) -> NcclResult {
    // SAFETY: the same contract; v6 tags are not matched (maxRecvs is 1).
    unsafe { isend_v4(send_comm, data, size, mhandle, request) }
}

unsafe extern "C" fn isend_v4(
    send_comm: V,
    data: V,
    size: c_int,
    mhandle: V,
    request: Vp,
) -> NcclResult {
    with_plugin("isend", |p| {
        out(request, "request")?;
        let n = len(size)?;
        // SAFETY: NCCL keeps the buffer until the request tests done.
        let w = unsafe { p.isend(send_comm as u64, data.cast(), n, mhandle as u64) }?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(request, w, "request") }
    })
}

unsafe extern "C" fn irecv(
    recv_comm: V,
    n: c_int,
    data: Vp,
    sizes: *mut c_int,
    _tags: *mut c_int,
    mhandles: Vp,
    request: Vp,
) -> NcclResult {
    with_plugin("irecv", |p| {
        if n != 1 {
            return Err(Failure::invalid(format!(
                "{n} grouped receives: the device's maxRecvs is 1"
            )));
        }
        out(request, "request")?;
        let (data, sizes, mhandles) = (
            out(data, "data")?,
            out(sizes, "sizes")?,
            out(mhandles, "mhandles")?,
        );
        // SAFETY: with n == 1 each array has one element (NULL refused).
        let (d, s, m) = unsafe { (*data, *sizes, *mhandles) };
        // SAFETY: NCCL keeps the buffer until the request tests done.
        let w = unsafe { p.irecv(recv_comm as u64, d.cast(), len(s)?, m as u64) }?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(request, w, "request") }
    })
}

unsafe extern "C" fn irecv_v4(
    recv_comm: V,
    data: V,
    size: c_int,
    mhandle: V,
    request: Vp,
) -> NcclResult {
    with_plugin("irecv", |p| {
        out(request, "request")?;
        // SAFETY: NCCL keeps the buffer until the request tests done.
        let w = unsafe { p.irecv(recv_comm as u64, data.cast(), len(size)?, mhandle as u64) }?;
        // SAFETY: checked non-NULL; NCCL passes a valid out-pointer.
        unsafe { put(request, w, "request") }
    })
}

/// Host memory is coherent once the receive completes: nothing to flush,
/// which the ABI says with a NULL request.
fn flush(p: &Plugin, recv_comm: V, request: Vp) -> Outcome<()> {
    crate::plugin::unword(Tag::Recv, recv_comm as u64, "receive comm")?;
    let _ = p;
    // SAFETY: NCCL passes a valid out-pointer (NULL refused).
    unsafe { put(request, None, "request") }
}

unsafe extern "C" fn iflush(
    recv_comm: V,
    _n: c_int,
    _data: Vp,
    _sizes: *mut c_int,
    _mhandles: Vp,
    request: Vp,
) -> NcclResult {
    with_plugin("iflush", |p| flush(p, recv_comm, request))
}

unsafe extern "C" fn iflush_v4(
    recv_comm: V,
    _data: V,
    _size: c_int,
    _mhandle: V,
    request: Vp,
) -> NcclResult {
    with_plugin("iflush", |p| flush(p, recv_comm, request))
}

unsafe extern "C" fn test(request: V, done: *mut c_int, sizes: *mut c_int) -> NcclResult {
    with_plugin("test", |p| {
        let done = out(done, "done")?;
        let got = p.test(request as u64)?;
        // SAFETY: NCCL passes a valid int for done (NULL refused) and, when
        // not NULL, room for one size (a request is one receive).
        unsafe {
            done.write(c_int::from(got.is_some()));
            if let (Some(n), false) = (got, sizes.is_null()) {
                sizes.write(c_int::try_from(n).unwrap_or(c_int::MAX));
            }
        }
        Ok(())
    })
}

unsafe extern "C" fn close_send(comm: V) -> NcclResult {
    with_plugin("closeSend", |p| p.close(Tag::Send, comm as u64))
}

unsafe extern "C" fn close_recv(comm: V) -> NcclResult {
    with_plugin("closeRecv", |p| p.close(Tag::Recv, comm as u64))
}

unsafe extern "C" fn close_listen(comm: V) -> NcclResult {
    with_plugin("closeListen", |p| p.close(Tag::Listen, comm as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    // Sizes and offsets of ext-net's structs on LP64 (net_v6.h, net_v4.h):
    // two pointers, a u64, then ints (and v6's float) packed after it.
    #[test]
    fn properties_match_the_published_layout() {
        assert_eq!(size_of::<PropertiesV6>(), 48);
        assert_eq!(offset_of!(PropertiesV6, guid), 16);
        assert_eq!(offset_of!(PropertiesV6, ptr_support), 24);
        assert_eq!(offset_of!(PropertiesV6, speed), 28);
        assert_eq!(offset_of!(PropertiesV6, port), 32);
        assert_eq!(offset_of!(PropertiesV6, latency), 36);
        assert_eq!(offset_of!(PropertiesV6, max_comms), 40);
        assert_eq!(offset_of!(PropertiesV6, max_recvs), 44);
        assert_eq!(size_of::<PropertiesV4>(), 40);
        assert_eq!(offset_of!(PropertiesV4, max_comms), 36);
    }

    // The tables: a name pointer, then one pointer per function, in the
    // headers' order.
    #[test]
    fn tables_have_the_published_slots() {
        assert_eq!(size_of::<NetV6>(), 17 * 8);
        assert_eq!(offset_of!(NetV6, reg_mr_dma_buf), 8 * 8);
        assert_eq!(offset_of!(NetV6, test), 13 * 8);
        assert_eq!(offset_of!(NetV6, close_listen), 16 * 8);
        assert_eq!(size_of::<NetV5>(), 16 * 8);
        assert_eq!(offset_of!(NetV5, dereg_mr), 8 * 8);
        assert_eq!(offset_of!(NetV5, close_listen), 15 * 8);
        assert_eq!(size_of::<NetV4>(), 16 * 8);
        assert_eq!(offset_of!(NetV4, isend), 9 * 8);
    }
}
