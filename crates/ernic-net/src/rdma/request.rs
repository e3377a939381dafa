//! Requests: one per `isend` or `irecv`, in a freelist, each counting its
//! segments to `need` and its posts still out; a finished message leaves
//! its comm's window; `test` reports a request done or failed once no post
//! of it is left with the provider.

use super::error::{NetError, RequestError};
use super::{Endpoint, Request};
use crate::freelist::Entry;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ReqState {
    Free,
    Pending,
    Done(usize),
    Failed(RequestError),
}

#[derive(Debug, Clone)]
pub(super) struct Req {
    pub(super) generation: u32,
    pub(super) state: ReqState,
    pub(super) send: bool,
    pub(super) comm: u32,
    pub(super) seq: u16,
    pub(super) addr: u64,
    pub(super) len: usize,
    pub(super) mr: u32,
    pub(super) need: u32,
    pub(super) got: u32,
    pub(super) size: Option<usize>,
    /// Posts made (parked or with the provider) and not yet completed: a
    /// request is reported only when none is left, so its buffer is free
    /// and no late completion can count toward a later request in the same
    /// entry.
    pub(super) outstanding: u16,
}

impl Default for Req {
    fn default() -> Req {
        Req {
            generation: 0,
            state: ReqState::Free,
            send: false,
            comm: 0,
            seq: 0,
            addr: 0,
            len: 0,
            mr: 0,
            need: 0,
            got: 0,
            size: None,
            outstanding: 0,
        }
    }
}

impl Endpoint {
    pub(super) fn new_req(
        &mut self,
        send: bool,
        comm: u32,
        seq: u16,
        addr: u64,
        len: usize,
        mr: u32,
    ) -> Result<Request, NetError> {
        let entry = self
            .reqs
            .take()
            .map_err(|source| NetError::NoRequest { source })?;
        self.generation = self.generation.wrapping_add(1);
        let generation = self.generation;
        *self.reqs.get_mut(entry).expect("just taken") = Req {
            generation,
            state: ReqState::Pending,
            send,
            comm,
            seq,
            addr,
            len,
            mr,
            need: 0,
            got: 0,
            size: None,
            outstanding: 0,
        };
        Ok(Request { entry, generation })
    }

    pub(super) fn fail_req(&mut self, req: Entry, msg: RequestError) {
        let Some(r) = self.reqs.get_mut(req) else {
            return;
        };
        if r.state != ReqState::Pending {
            return;
        }
        r.state = ReqState::Failed(msg);
        let (comm, seq, send) = (r.comm, r.seq, r.send);
        self.count(Some(comm), |c| &c.failed_requests, 1);
        self.retire(comm, seq, send);
    }

    /// Takes a finished message out of its comm's window.
    pub(super) fn retire(&mut self, comm: u32, seq: u16, send: bool) {
        if let Some(c) = self.comms.get_mut(comm as usize).and_then(Option::as_mut) {
            let done = if send {
                c.sends.complete(seq).is_ok()
            } else {
                c.recvs.complete(seq).is_ok()
            };
            if done {
                c.inflight = c.inflight.saturating_sub(1);
            }
        }
    }

    /// One request's segment done.
    pub(super) fn segment_done(&mut self, req: Entry, size: Option<usize>) {
        let Some(r) = self.reqs.get_mut(req) else {
            return;
        };
        if r.state != ReqState::Pending {
            return;
        }
        r.got += 1;
        if size.is_some() {
            r.size = size;
        }
        if r.need > 0 && r.got >= r.need {
            let size = if r.send {
                r.len
            } else {
                r.size.unwrap_or(r.len)
            };
            r.state = ReqState::Done(size);
            let (comm, seq, send) = (r.comm, r.seq, r.send);
            self.count_message(comm, send, size);
            self.retire(comm, seq, send);
        }
    }

    /// Drives progress and reports whether `req` is done: `Some(size)` (and
    /// the request is gone), or `None` while it runs. A failed request is an
    /// error (and gone).
    pub fn test(&mut self, req: Request) -> Result<Option<usize>, NetError> {
        let live = self
            .reqs
            .get(req.entry)
            .is_some_and(|r| r.generation == req.generation && r.state != ReqState::Free);
        if !live {
            return Err(NetError::NoSuchRequest);
        }
        let busy = |r: &Req| r.state == ReqState::Pending || r.outstanding > 0;
        if self.reqs.get(req.entry).is_some_and(busy) {
            self.progress();
        }
        let r = self.reqs.get_mut(req.entry).expect("live");
        if r.outstanding > 0 {
            // Failed, but some of its posts are still out.
            return Ok(None);
        }
        match r.state.clone() {
            ReqState::Pending => Ok(None),
            ReqState::Done(size) => {
                r.state = ReqState::Free;
                let _ = self.reqs.give(req.entry);
                Ok(Some(size))
            }
            ReqState::Failed(reason) => {
                r.state = ReqState::Free;
                let _ = self.reqs.give(req.entry);
                Err(NetError::Request { reason })
            }
            ReqState::Free => unreachable!("checked live above"),
        }
    }
}
