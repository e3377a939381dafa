//! The function tables a context carries: `ibv_context_ops`, which the
//! inline functions of verbs.h call for the data path (`ibv_post_send`,
//! `ibv_poll_cq`, …), and the extended ops of `verbs_context` they look
//! for first (`query_port`, `query_device_ex`).

use crate::abi;
use crate::{cq, device, ex, post};

/// Fills the tables of a new context.
pub(crate) fn fill(v: &mut abi::verbs_context) {
    let ops = &mut v.context.ops;
    ops.poll_cq = Some(cq::poll_cq);
    ops.req_notify_cq = Some(cq::req_notify_cq);
    ops.post_send = Some(post::post_send);
    ops.post_recv = Some(post::post_recv);
    ops.post_srq_recv = Some(post::post_srq_recv);
    v.query_port = Some(device::query_port);
    v.query_device_ex = Some(device::query_device_ex);
    v.create_cq_ex = Some(ex::create_cq_ex);
    v.create_qp_ex = Some(ex::create_qp_ex);
}
