//! Asynchronous events (`ibv_get_async_event`): the fabric hands each one
//! over as it happens; the object it names is found here, and the event is
//! queued on that object's context, whose `async_fd` it wakes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ernic_verbs::{AsyncEvent, Fabric};

use crate::abi;
use crate::device::Context;

/// The live QPs and SRQs by the numbers events name them by, as the
/// addresses of their library objects.
#[derive(Default)]
pub(crate) struct Objects {
    qps: HashMap<u32, usize>,
    srqs: HashMap<u32, usize>,
}

/// The registry, shared with the fabric's hook.
pub(crate) type Registry = Arc<Mutex<Objects>>;

fn lock(r: &Registry) -> std::sync::MutexGuard<'_, Objects> {
    r.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records a new QP (`qp` is its `struct ibv_qp *`).
pub(crate) fn add_qp(r: &Registry, qpn: u32, qp: *mut abi::ibv_qp) {
    lock(r).qps.insert(qpn, qp as usize);
}

/// Forgets a QP that is being destroyed.
pub(crate) fn remove_qp(r: &Registry, qpn: u32) {
    lock(r).qps.remove(&qpn);
}

/// Records a new SRQ.
pub(crate) fn add_srq(r: &Registry, id: u32, srq: *mut abi::ibv_srq) {
    lock(r).srqs.insert(id, srq as usize);
}

/// Forgets an SRQ that is being destroyed.
pub(crate) fn remove_srq(r: &Registry, id: u32) {
    lock(r).srqs.remove(&id);
}

/// Routes the fabric's events to the contexts of the objects they name.
pub(crate) fn hook(fabric: &Fabric, reg: Registry) {
    fabric.set_event_hook(Box::new(move |e| {
        let objs = lock(&reg);
        let (element, event_type, ctx) = match *e {
            AsyncEvent::QpFatal { qpn, .. } => {
                let Some(&qp) = objs.qps.get(&qpn.0) else {
                    return;
                };
                let qp = qp as *mut abi::ibv_qp;
                // SAFETY: a registered QP is live (it leaves the registry
                // before it is freed, under this lock).
                let ctx = unsafe { (*qp).context };
                (
                    abi::ibv_async_event_element { qp },
                    abi::IBV_EVENT_QP_FATAL,
                    ctx,
                )
            }
            AsyncEvent::SrqLimitReached { srq, .. } => {
                let Some(&s) = objs.srqs.get(&srq.0) else {
                    return;
                };
                let srq = s as *mut abi::ibv_srq;
                // SAFETY: as above, for SRQs.
                let ctx = unsafe { (*srq).context };
                (
                    abi::ibv_async_event_element { srq },
                    abi::IBV_EVENT_SRQ_LIMIT_REACHED,
                    ctx,
                )
            }
        };
        // SAFETY: an object's context outlives it (the program closes the
        // device last, as the API requires).
        if let Some(c) = unsafe { Context::from_c(ctx) } {
            c.post_event(abi::ibv_async_event {
                element,
                event_type,
            });
        }
    }));
}
