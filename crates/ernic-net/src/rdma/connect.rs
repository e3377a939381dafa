//! The endpoint's side of making connections: `listen` and its handle,
//! `connect` (CONN sent, CONN_RESP awaited, up to the connect timeout),
//! `cancel`, `accept` (CONN_RESP sent, connected at its completion), and
//! the handlers of a peer's CONN and CONN_RESP. What a CONN costs the
//! listener is bounded before anything is spent on it.

use std::time::{Duration, Instant};

use super::comm::CommKind;
use super::conn_state::ConnState;
use super::context::After;
use super::control::{CONN, CONN_RESP, RailNames};
use super::error::{NetError, perr};
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
        let id = self.new_comm(CommKind::Listen, ConnState::Connected)?;
        let name = self.ctls[0].rail.name();
        let mut h = Vec::with_capacity(HANDLE_LEN);
        h.push(name.len() as u8);
        h.extend_from_slice(&name);
        h.extend_from_slice(&id.to_le_bytes());
        if h.len() > HANDLE_LEN {
            return Err(NetError::Provider(format!(
                "endpoint name of {} bytes does not fit a handle",
                name.len()
            )));
        }
        h.resize(HANDLE_LEN, 0);
        Ok((ListenComm(id), Handle(h)))
    }

    pub(super) fn names(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 * (self.ctls.len() + self.data.len()));
        out.push(self.data.len() as u8);
        out.push(self.ctls.len() as u8);
        for n in self
            .ctls
            .iter()
            .map(|c| c.rail.name())
            .chain(self.data.iter().map(|d| d.rail.name()))
        {
            out.push(n.len() as u8);
            out.extend_from_slice(&n);
        }
        out
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
                let h = decode_handle(&c.handle.0)
                    .map_err(|e| NetError::Invalid(format!("not a listen handle: {e}")))?;
                let id = self.new_comm(CommKind::Send, ConnState::Created)?;
                let peer = match self.ctls[0].rail.av_insert(h.name) {
                    Ok(p) => p,
                    Err(e) => {
                        self.free_comm(id);
                        return Err(perr(e));
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
        self.progress();
        let timeout = self.cfg.connect_timeout;
        let comm = self.comm(id, CommKind::Send)?;
        let pending = !matches!(comm.state, ConnState::Connected | ConnState::Failed(_));
        if pending && c.expired(now, timeout) {
            self.cancel(c);
            return Err(NetError::ConnectTimeout {
                ms: timeout.as_millis(),
            });
        }
        let comm = self.comm(id, CommKind::Send)?;
        match &comm.state {
            ConnState::Created => {
                let (peer, listen) = (comm.peer_ctrl[0], comm.remote);
                let mut m = vec![CONN, 0, 0, 0];
                m.extend_from_slice(&listen.to_le_bytes());
                m.extend_from_slice(&id.to_le_bytes());
                m.extend_from_slice(&self.names());
                if self.ctl_send(&m, 0, peer, 0, After::Nothing) {
                    self.comm(id, CommKind::Send)?.state = ConnState::WaitResp;
                }
                Ok(None)
            }
            ConnState::Connected => Ok(Some(SendComm(id))),
            ConnState::Failed(e) => {
                let e = format!("connect failed: {e}");
                self.cancel(c);
                Err(NetError::Request(e))
            }
            _ => Ok(None),
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
        if comm.kind != CommKind::Send || matches!(comm.state, ConnState::Connected) {
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
        match &c.state {
            ConnState::RespPending => {
                let (peer, remote) = (c.peer_ctrl[0], c.remote);
                let mut m = vec![CONN_RESP, 0, 0, 0];
                m.extend_from_slice(&remote.to_le_bytes());
                m.extend_from_slice(&id.to_le_bytes());
                m.extend_from_slice(&self.names());
                if self.ctl_send(&m, 0, peer, 0, After::Connect(id)) {
                    self.comm(id, CommKind::Recv)?.state = ConnState::RespSent;
                }
                Ok(None)
            }
            ConnState::Connected => {
                self.comm(l.0, CommKind::Listen)?.backlog.pop_front();
                Ok(Some(RecvComm(id)))
            }
            ConnState::Failed(e) => {
                let e = e.clone();
                self.comm(l.0, CommKind::Listen)?.backlog.pop_front();
                self.free_comm(id);
                Err(NetError::Request(format!("accept failed: {e}")))
            }
            _ => Ok(None),
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
        let id = self.new_comm(CommKind::Recv, ConnState::RespPending).ok()?;
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
        if !matches!(
            self.comm(sender, CommKind::Send).ok()?.state,
            ConnState::WaitResp
        ) {
            return None;
        }
        let (peer_ctrl, peer_data) = self.insert_names(names)?;
        let c = self.comm(sender, CommKind::Send).ok()?;
        c.remote = receiver;
        c.peer_ctrl = peer_ctrl;
        c.peer_data = peer_data;
        c.state = ConnState::Connected;
        Some(())
    }
}
