//! Ending on SIGTERM or SIGINT with the last counts written.
//!
//! A process that keeps a stats file calls [`block_termination`] first in
//! `main`, before it starts any thread, so that no thread is interrupted
//! by the two signals; then [`on_termination`] starts the one thread that
//! waits for them (`sigwait(3)`) and runs the process's own way of
//! stopping: wake its loops, let them write the file and return. The
//! signals' default action (death where the process stood) is never
//! taken, so the file always ends with the counts of the whole run. A
//! second signal while stopping ends the process at once (exit status 130
//! or 143, as a shell reports a death by that signal).

use std::io;

/// The signals [`on_termination`] waits for.
const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

fn set() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is storage sigemptyset initialises; both
    // calls take a pointer to that local and valid signal numbers.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        for sig in SIGNALS {
            libc::sigaddset(&mut s, sig);
        }
        s
    }
}

/// Blocks SIGTERM and SIGINT in the calling thread, and so in every thread
/// it starts after. Call it before any thread is started.
pub fn block_termination() -> io::Result<()> {
    let s = set();
    // SAFETY: `s` is an initialised set; a null old-set pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &s, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// Starts the thread that waits for SIGTERM or SIGINT (blocked by
/// [`block_termination`]) and then runs `stop` with the signal's number.
/// A second signal ends the process at once.
pub fn on_termination(stop: impl FnOnce(libc::c_int) + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let first = wait();
            tracing::info!(
                signal = name(first),
                "stopping: the stats file is written last"
            );
            std::thread::spawn(move || {
                let again = wait();
                tracing::warn!(signal = name(again), "a second signal: exiting now");
                std::process::exit(128 + again);
            });
            stop(first);
        })?;
    Ok(())
}

/// Waits for one of [`SIGNALS`].
fn wait() -> libc::c_int {
    let s = set();
    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: `s` is an initialised set and `sig` a local it writes.
        if unsafe { libc::sigwait(&s, &mut sig) } == 0 {
            return sig;
        }
    }
}

fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        _ => "a signal",
    }
}

/// SIGTERM and SIGINT, taken as a request to stop: for a service whose
/// main thread waits (`ernic nvme serve`, `ernic s3 serve`, `ernic mesh
/// manager`) and then stops its parts and writes its stats file last.
#[derive(Debug)]
pub struct Termination(std::sync::mpsc::Receiver<libc::c_int>);

impl Termination {
    /// Blocks both signals ([`block_termination`]: call it before any
    /// thread starts) and starts the thread that waits for them.
    pub fn arm() -> io::Result<Termination> {
        block_termination()?;
        let (tx, rx) = std::sync::mpsc::channel();
        on_termination(move |sig| {
            let _ = tx.send(sig);
        })?;
        Ok(Termination(rx))
    }

    /// Waits until a signal comes (its number) or `limit` passes (`None`);
    /// with no limit, until a signal comes.
    pub fn wait(&self, limit: Option<std::time::Duration>) -> Option<libc::c_int> {
        match limit {
            Some(t) => self.0.recv_timeout(t).ok(),
            None => self.0.recv().ok(),
        }
    }
}
