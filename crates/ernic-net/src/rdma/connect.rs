//! The endpoint's side of making connections: `listen` and its handle,
//! `connect` (CONN sent, CONN_RESP awaited, up to the connect timeout),
//! `cancel`, `accept` (CONN_RESP sent, connected at its completion), and
//! the handlers of a peer's CONN and CONN_RESP. What a CONN costs the
//! listener is bounded before anything is spent on it.

use std::time::{Duration, Instant};

use super::comm::CommKind;
use super::conn_state::{Handshake, Step};
use super::context::After;
use super::control::{RailNames, encode_conn, encode_conn_resp, encode_rail_names};
use super::error::NetError;
use super::handle::{Handle, decode_handle};
use super::{Endpoint, HANDLE_LEN, ListenComm, MAX_BACKLOG, MAX_CONTROL_RAILS, RecvComm, SendComm};
use crate::config::MAX_RAILS;
use crate::provider::FiAddr;

/// A connection being made: give it to [`Endpoint::connect`] until it
/// answers a comm (or fails, at the latest when the connect timeout has
/// passed since the first call).
#[derive(Debug)]
pub struct Connector {
    pub(super) handle: Handle,
    pub(super) comm: Option<u32>,
    /// When the first `connect` call began.
    pub(super) since: Option<Instant>,
}

impl Connector {
    /// A connection to the listener behind `handle`.
    pub fn new(handle: Handle) -> Connector {
        Connector {
            handle,
            comm: None,
            since: None,
        }
    }

    /// Whether `timeout` has passed, at `now`, since the first `connect`.
    pub fn expired(&self, now: Instant, timeout: Duration) -> bool {
        self.since
            .is_some_and(|t| now.saturating_duration_since(t) >= timeout)
    }
}

impl Endpoint {
    /// Opens a listening comm and the handle a peer connects with.
    pub fn listen(&mut self) -> Result<(ListenComm, Handle), NetError> {
        let id = self.new_comm(CommKind::Listen, Handshake::listening())?;
        let name = self.ctls[0].rail.name();
        let mut h = Vec::with_capacity(HANDLE_LEN);
        h.push(name.len() as u8);
        h.extend_from_slice(&name);
        h.extend_from_slice(&id.to_le_bytes());
        if h.len() > HANDLE_LEN {
            return Err(NetError::NameTooLong { len: name.len() });
        }
        h.resize(HANDLE_LEN, 0);
        Ok((ListenComm(id), Handle(h)))
    }

    /// Our rails' names, for a CONN or CONN_RESP.
    pub(super) fn names(&self) -> Vec<u8> {
        encode_rail_names(
            self.ctls.iter().map(|c| c.rail.name()),
            self.data.iter().map(|d| d.rail.name()),
        )
    }

    /// Connects to a listener; answers `None` until the connection is made.
    /// Fails with [`NetError::ConnectTimeout`] once the connect timeout has
    /// passed since the first call without an answer; what the connection
    /// held is released then.
    pub fn connect(&mut self, c: &mut Connector) -> Result<Option<SendComm>, NetError> {
        self.connect_at(c, Instant::now())
    }

    /// [`connect`](Endpoint::connect) at time `now`.
    pub fn connect_at(
        &mut self,
        c: &mut Connector,
        now: Instant,
    ) -> Result<Option<SendComm>, NetError> {
        let id = match c.comm {
            Some(id) => id,
            None => {
                let h =
                    decode_handle(&c.handle.0).map_err(|source| NetError::NotAHandle { source })?;
                let timeout = self.cfg.connect_timeout;
                let id = self.new_comm(CommKind::Send, Handshake::dial(now, timeout))?;
                let peer = match self.ctls[0].rail.av_insert(h.name) {
                    Ok(p) => p,
                    Err(source) => {
                        self.free_comm(id);
                        return Err(NetError::ListenerAddress { source });
                    }
                };
                let comm = self.comms[id as usize].as_mut().expect("just made");
                comm.peer_ctrl[0] = peer;
                comm.remote = h.listen;
                c.comm = Some(id);
                c.since = Some(now);
                id
            }
        };
        // CQs first: a CONN_RESP that came by now counts, however late.
        self.progress();
        let comm = self.comm(id, CommKind::Send)?;
        match comm.handshake.step(now) {
            Step::SendConn => {
                let (peer, listen) = (comm.peer_ctrl[0], comm.remote);
                let m = encode_conn(listen, id, &self.names());
                if self.ctl_send(&m, 0, peer, 0, After::Nothing, Some(id)) {
                    self.comm(id, CommKind::Send)?.handshake.conn_sent();
                }
                Ok(None)
            }
            Step::Connected => Ok(Some(SendComm(id))),
            Step::Failed(reason) => {
                self.cancel(c);
                Err(NetError::ConnectFailed { reason })
            }
            Step::TimedOut => {
                self.cancel(c);
                Err(NetError::ConnectTimeout {
                    ms: self.cfg.connect_timeout.as_millis(),
                })
            }
            Step::Wait | Step::SendConnResp => Ok(None),
        }
    }

    /// Gives up a connection not yet made: its comm is freed, and the
    /// listener's address too when no other comm uses it (with the ernic
    /// provider, a peer's queue pairs: most of what a connect costs). A
    /// connection already made is left alone: close its comm instead.
    pub fn cancel(&mut self, c: &mut Connector) {
        let Some(id) = c.comm.take() else { return };
        let Some(comm) = self.comms.get(id as usize).and_then(Option::as_ref) else {
            return;
        };
        if comm.kind != CommKind::Send || comm.handshake.is_connected() {
            c.comm = Some(id);
            return;
        }
        let peer = comm.peer_ctrl[0];
        self.free_comm(id);
        let used = self
            .comms
            .iter()
            .flatten()
            .any(|o| o.kind != CommKind::Listen && o.peer_ctrl[0] == peer);
        if !used {
            // Nothing else sends to it; a provider that cannot remove keeps it.
            let _ = self.ctls[0].rail.av_remove(peer);
        }
    }

    /// Accepts a connection on `l`; answers `None` until one is made.
    pub fn accept(&mut self, l: ListenComm) -> Result<Option<RecvComm>, NetError> {
        self.progress();
        let Some(&id) = self.comm(l.0, CommKind::Listen)?.backlog.front() else {
            return Ok(None);
        };
        let c = self.comm(id, CommKind::Recv)?;
        match c.handshake.accept_step() {
            Step::SendConnResp => {
                let (peer, remote) = (c.peer_ctrl[0], c.remote);
                let m = encode_conn_resp(remote, id, &self.names());
                if self.ctl_send(&m, 0, peer, 0, After::Connect(id), Some(id)) {
                    self.comm(id, CommKind::Recv)?.handshake.resp_sent();
                }
                Ok(None)
            }
            Step::Connected => {
                self.comm(l.0, CommKind::Listen)?.backlog.pop_front();
                Ok(Some(RecvComm(id)))
            }
            Step::Failed(reason) => {
                self.comm(l.0, CommKind::Listen)?.backlog.pop_front();
                self.free_comm(id);
                Err(NetError::AcceptFailed { reason })
            }
            Step::Wait | Step::SendConn | Step::TimedOut => Ok(None),
        }
    }

    /// The peer's rails in our address vectors; `None` (nothing kept) if
    /// its rail counts differ from ours or a name is refused.
    #[allow(clippy::type_complexity)]
    pub(super) fn insert_names(
        &mut self,
        names: &RailNames<'_>,
    ) -> Option<([FiAddr; MAX_CONTROL_RAILS], [FiAddr; MAX_RAILS])> {
        if names.data().len() != self.data.len() || names.control().len() != self.ctls.len() {
            // A peer with other rail counts: refuse by ignoring; its
            // connect never completes (and times out).
            return None;
        }
        let mut peer_ctrl = [0; MAX_CONTROL_RAILS];
        for (i, n) in names.control().iter().enumerate() {
            peer_ctrl[i] = self.ctls[i].rail.av_insert(n).ok()?;
        }
        let mut peer_data = [0; MAX_RAILS];
        for (i, n) in names.data().iter().enumerate() {
            peer_data[i] = self.data[i].rail.av_insert(n).ok()?;
        }
        Some((peer_ctrl, peer_data))
    }

    pub(super) fn on_conn(
        &mut self,
        listen: u32,
        sender: u32,
        names: &RailNames<'_>,
    ) -> Option<()> {
        // What a CONN costs is bounded before anything is spent on it: a
        // listener that exists, room in its backlog, a free comm id.
        if self.comm(listen, CommKind::Listen).ok()?.backlog.len() >= MAX_BACKLOG {
            return None;
        }
        let id = self.new_comm(CommKind::Recv, Handshake::answer()).ok()?;
        let Some((peer_ctrl, peer_data)) = self.insert_names(names) else {
            self.free_comm(id);
            return None;
        };
        // The same CONN again (a sender's retry): one connection for it.
        let again = self.comms[listen as usize]
            .as_ref()?
            .backlog
            .iter()
            .any(|&b| {
                self.comms[b as usize]
                    .as_ref()
                    .is_some_and(|c| c.remote == sender && c.peer_ctrl[0] == peer_ctrl[0])
            });
        if again {
            self.free_comm(id);
            return None;
        }
        let c = self.comms[id as usize].as_mut()?;
        c.remote = sender;
        c.set_peer(sender);
        c.peer_ctrl = peer_ctrl;
        c.peer_data = peer_data;
        self.comm(listen, CommKind::Listen)
            .ok()?
            .backlog
            .push_back(id);
        Some(())
    }

    pub(super) fn on_conn_resp(
        &mut self,
        sender: u32,
        receiver: u32,
        names: &RailNames<'_>,
    ) -> Option<()> {
        if !self
            .comm(sender, CommKind::Send)
            .ok()?
            .handshake
            .awaits_resp()
        {
            return None;
        }
        let (peer_ctrl, peer_data) = self.insert_names(names)?;
        let c = self.comm(sender, CommKind::Send).ok()?;
        c.remote = receiver;
        c.set_peer(receiver);
        c.peer_ctrl = peer_ctrl;
        c.peer_data = peer_data;
        c.handshake.conn_resp();
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::verbs_provider::ErnicProvider;

    /// A CONN that comes again (the same comm of the same peer: a retry)
    /// makes no second connection; another comm of that peer makes its own.
    #[test]
    fn a_duplicate_conn_makes_one_connection() {
        let p = ErnicProvider::new(ernic_verbs::Fabric::new());
        let a = Endpoint::open(&p, 1, Config::default()).unwrap();
        let mut b = Endpoint::open(&p, 1, Config::default()).unwrap();
        let (l, _) = b.listen().unwrap();
        let conn = |sender: u32| encode_conn(l.0, sender, &a.names());
        let backlog = |b: &Endpoint| b.comms[l.0 as usize].as_ref().unwrap().backlog.len();
        assert!(b.on_control(&conn(7), 0));
        assert!(!b.on_control(&conn(7), 0), "the same CONN again is dropped");
        assert_eq!(backlog(&b), 1);
        assert!(b.on_control(&conn(8), 0));
        assert_eq!(backlog(&b), 2);
        // Each waits for accept as a connection of its own.
        let first = b.comms[l.0 as usize].as_ref().unwrap().backlog[0];
        assert_eq!(b.comms[first as usize].as_ref().unwrap().remote, 7);
    }
}
