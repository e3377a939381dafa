//! Surviving guest memory that vanishes: a SIGBUS handler for DMA windows
//! whose file the client could shrink.
//!
//! A shared mapping of a file faults with SIGBUS where the file no longer
//! reaches, and a client that truncates the file it shared kills a server
//! that touches the window. [`crate::dma`] refuses such memory unless told
//! to take it ([`crate::dma::Unsealed::Guard`]); a window taken that way is
//! registered here, and the handler answers a fault inside it by mapping
//! anonymous zero pages over the whole window (`MAP_FIXED`), marking it
//! faulted, and returning: the faulting copy then completes against those
//! zero pages, and every later access of the window fails
//! ([`crate::dma::DmaError::Vanished`]). A fault anywhere else is not
//! ours: the handler puts back the one it replaced and returns, so the
//! instruction faults again under that one (Rust's own, or the default,
//! which ends the process as before).
//!
//! The table is a fixed array of [`SLOTS`] entries, each behind a sequence
//! counter: registration (under a mutex, never in the handler) writes an
//! entry between two increments, and the handler, which takes no lock and
//! allocates nothing, reads an entry only when its counter was even and
//! unchanged across the read.

use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// The most guarded (unsealed) windows at once.
pub const SLOTS: usize = 256;

struct Slot {
    // Odd while being written; 0 (or any even value) with `len == 0` is free.
    seq: AtomicU64,
    base: AtomicUsize,
    len: AtomicUsize,
    faulted: AtomicBool,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        seq: AtomicU64::new(0),
        base: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        faulted: AtomicBool::new(false),
    }
}; SLOTS];
static WRITERS: Mutex<()> = Mutex::new(());
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static FAULTS: AtomicU64 = AtomicU64::new(0);

/// How many guarded windows have vanished so far (in this process).
pub fn faults() -> u64 {
    FAULTS.load(Ordering::Relaxed)
}

/// Guards `len` bytes mapped at `base`; answers the slot, or `None` when
/// all [`SLOTS`] are taken or the handler could not be installed.
pub fn register(base: *mut u8, len: usize) -> Option<usize> {
    let _w = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
    if !install() {
        return None;
    }
    let i = TABLE
        .iter()
        .position(|s| s.len.load(Ordering::Relaxed) == 0)?;
    let s = &TABLE[i];
    s.seq.fetch_add(1, Ordering::AcqRel);
    s.base.store(base as usize, Ordering::Release);
    s.faulted.store(false, Ordering::Release);
    s.len.store(len, Ordering::Release);
    s.seq.fetch_add(1, Ordering::AcqRel);
    Some(i)
}

/// Frees slot `i` (its window is about to be unmapped).
pub fn unregister(i: usize) {
    let _w = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
    let s = &TABLE[i];
    s.seq.fetch_add(1, Ordering::AcqRel);
    s.len.store(0, Ordering::Release);
    s.base.store(0, Ordering::Release);
    s.seq.fetch_add(1, Ordering::AcqRel);
}

/// Whether the window in slot `i` vanished.
pub fn faulted(i: usize) -> bool {
    TABLE[i].faulted.load(Ordering::Acquire)
}

/// Installs the handler once; answers whether it is in place.
fn install() -> bool {
    if PREVIOUS.get().is_some() {
        return true;
    }
    // SAFETY: all-zero is a valid sigaction; the fields that matter are
    // set below.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = on_sigbus as *const () as usize;
    act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: an empty mask in our own sigaction.
    unsafe { libc::sigemptyset(&mut act.sa_mask) };
    // SAFETY: as above, for the old action's buffer.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: replacing SIGBUS's action with a handler that is
    // async-signal-safe (atomics and mmap/sigaction system calls only),
    // keeping the old one to hand faults that are not ours back to.
    if unsafe { libc::sigaction(libc::SIGBUS, &act, &mut old) } != 0 {
        return false;
    }
    let _ = PREVIOUS.set(old);
    true
}

/// The entry of slot `s` if it is live and read whole: (base, len).
fn read(s: &Slot) -> Option<(usize, usize)> {
    for _ in 0..64 {
        let a = s.seq.load(Ordering::Acquire);
        if a % 2 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let base = s.base.load(Ordering::Acquire);
        let len = s.len.load(Ordering::Acquire);
        if s.seq.load(Ordering::Acquire) == a {
            return (len != 0).then_some((base, len));
        }
    }
    None
}

extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel hands a SA_SIGINFO handler a valid siginfo; for
    // SIGBUS its si_addr is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    for s in &TABLE {
        let Some((base, len)) = read(s) else {
            continue;
        };
        if addr < base || addr - base >= len {
            continue;
        }
        // SAFETY: [base, base + len) is one whole window mapping this
        // process made and still holds (the faulting thread is copying
        // through it); replacing it with private zero pages changes what
        // the copy reads and where its writes go, never which addresses
        // are valid.
        let p = unsafe {
            libc::mmap(
                base as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            s.faulted.store(true, Ordering::Release);
            FAULTS.fetch_add(1, Ordering::Relaxed);
            return;
        }
        break;
    }
    // Not a guarded window: the old action takes the fault when the
    // instruction runs again.
    if let Some(old) = PREVIOUS.get() {
        // SAFETY: restoring the action that was in place before ours.
        unsafe { libc::sigaction(libc::SIGBUS, old, std::ptr::null_mut()) };
    }
}
