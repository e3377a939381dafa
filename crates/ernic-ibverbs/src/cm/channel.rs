//! rdma_cm event channels (`rdma_cma.h`): making and destroying them,
//! taking and acking their events, and moving an id between them.

use std::ffi::c_int;
use std::sync::Mutex;

use super::agent;
use super::api::fail;
use super::id::{Channel, Ev, Id};
use crate::{cma_abi as ca, errno, fd};

/// A new event channel; None when no fd can be had.
pub(crate) fn new_channel() -> Option<*mut ca::rdma_event_channel> {
    let fd = fd::eventfd()?;
    Some(
        Box::into_raw(Box::new(Channel {
            c: ca::rdma_event_channel { fd },
            queue: Mutex::new(Default::default()),
        }))
        .cast(),
    )
}

#[unsafe(no_mangle)]
pub extern "C" fn ernic_rdma_create_event_channel() -> *mut ca::rdma_event_channel {
    new_channel().unwrap_or_else(|| errno::null(libc::EMFILE))
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ch` a channel with no ids left, destroyed once.
pub unsafe extern "C" fn ernic_rdma_destroy_event_channel(ch: *mut ca::rdma_event_channel) {
    if ch.is_null() {
        return;
    }
    // SAFETY: made by rdma_create_event_channel, freed once.
    let b = unsafe { Box::from_raw(ch.cast::<Channel>()) };
    for ev in b.queue.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
        // SAFETY: events not taken are ours to free.
        drop(unsafe { Box::from_raw(ev) });
    }
    fd::close(b.c.fd);
}

#[unsafe(no_mangle)]
/// Moves `id` to channel `ch`, with its events not yet taken; a NULL `ch`
/// makes it synchronous, with a channel of its own.
///
/// # Safety
///
/// `id` a live id; `ch` NULL or a live channel; no thread waits for the
/// id's events meanwhile.
pub unsafe extern "C" fn ernic_rdma_migrate_id(
    id: *mut ca::rdma_cm_id,
    ch: *mut ca::rdma_event_channel,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(i) = (unsafe { Id::from_c(id) }) else {
        return fail(libc::EINVAL);
    };
    let to_sync = ch.is_null();
    let to = if to_sync {
        match new_channel() {
            Some(c) => c,
            None => return fail(libc::EMFILE),
        }
    } else {
        ch
    };
    // The agent posts events under its lock: hold it while the channel
    // changes, so none goes to the old one after its move.
    let agent = agent::get().ok().map(|a| a.lock());
    let from = i.c.channel;
    if from != to {
        // SAFETY: both channels live (the caller's contract, or ours).
        let (old, new) = unsafe { (&*from.cast::<Channel>(), &*to.cast::<Channel>()) };
        let mut q = old.queue.lock().unwrap_or_else(|p| p.into_inner());
        let mut keep = std::collections::VecDeque::with_capacity(q.len());
        for e in q.drain(..) {
            // SAFETY: queued events are live until taken.
            if unsafe { (*e).c.id } == id {
                fd::try_take(old.c.fd);
                new.queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_back(e);
                fd::signal(new.c.fd);
            } else {
                keep.push_back(e);
            }
        }
        *q = keep;
    }
    // SAFETY: the id is ours; the program reads `channel` after calls.
    unsafe { (*i.ptr()).channel = to };
    let was_sync = std::mem::replace(&mut i.lock().sync, to_sync);
    drop(agent);
    if was_sync && !to_sync && !i.c.event.is_null() {
        // SAFETY: the event a synchronous id kept, ours to free; it is
        // not kept past the id's next call.
        unsafe {
            ernic_rdma_ack_cm_event(i.c.event);
            (*i.ptr()).event = std::ptr::null_mut();
        }
    }
    if was_sync && from != to {
        // SAFETY: the id's own channel, now empty of its events.
        unsafe { ernic_rdma_destroy_event_channel(from) };
    }
    0
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ch` a live channel; `out` writable.
pub unsafe extern "C" fn ernic_rdma_get_cm_event(
    ch: *mut ca::rdma_event_channel,
    out: *mut *mut ca::rdma_cm_event,
) -> c_int {
    if ch.is_null() || out.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: a live channel.
    let chan = unsafe { &*ch.cast::<Channel>() };
    loop {
        if let Err(e) = fd::take(chan.c.fd) {
            return fail(e);
        }
        let ev = chan
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        if let Some(ev) = ev {
            // SAFETY: `out` writable; the event is the program's until acked.
            unsafe { *out = ev.cast() };
            return 0;
        }
    }
}

#[unsafe(no_mangle)]
/// # Safety
///
/// `ev` an event from rdma_get_cm_event, acked once.
pub unsafe extern "C" fn ernic_rdma_ack_cm_event(ev: *mut ca::rdma_cm_event) -> c_int {
    if ev.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: made by us (Box<Ev>), freed once.
    drop(unsafe { Box::from_raw(ev.cast::<Ev>()) });
    0
}
