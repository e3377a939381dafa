//! The process's connection manager: QP 1 of the device (`ernic_verbs::Gsi`)
//! and `ernic-cm`'s state machine, driven by a thread of its own, made when
//! the first rdma_cm id is. The thread moves MADs between the two, runs
//! the CM's timers, and hands each CM event to the id it concerns
//! (`id.rs`), all under one lock, which the ids' calls take too: the lock
//! order is the agent's, then an id's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ernic_cm::conn::{Cm, CmConfig};
use ernic_verbs::{Gid, Gsi, NodeId, Qpn};

use crate::runtime::Runtime;

/// Connections (TIMEWAIT included) the CM holds at once.
const MAX_CONNS: usize = 4096;

/// What the agent's lock guards.
pub(crate) struct State {
    pub cm: Cm,
    gsi: Gsi,
    /// Listening ids by service id (port space and port).
    pub listeners: HashMap<u64, usize>,
    /// The id of each connection, by the CM's connection id.
    pub conns: HashMap<u32, usize>,
    /// Active ids whose every candidate had no listener, to ask again
    /// (with the mesh's view then) at the time given.
    pub retries: Vec<(usize, Instant)>,
    /// SIDR MADs received in this pass, for the ids.
    sidr: Vec<(ernic_cm::conn::Peer, [u8; ernic_cm::mad::MAD_LEN])>,
    /// Outstanding SIDR requests, by request id.
    pub sidr_out: HashMap<u32, super::ud::SidrOut>,
    /// SIDR requests a child id was made for, by the requester's port and
    /// the request's transaction id (its request id and process), with the
    /// answer once sent: a repeat is answered again.
    pub sidr_in: HashMap<([u8; 16], u64), super::ud::SidrIn>,
    /// The next SIDR request id.
    pub sidr_next: u32,
}

/// SIDR MADs taken in one pass (more wait for the next).
const MAX_SIDR: usize = 64;

/// The agent: its state, and the runtime it serves.
pub(crate) struct Agent {
    st: Mutex<State>,
    pub rt: &'static Runtime,
}

static AGENT: OnceLock<Result<Arc<Agent>, String>> = OnceLock::new();

/// The agent, started on first use.
pub(crate) fn get() -> Result<&'static Arc<Agent>, &'static str> {
    AGENT
        .get_or_init(|| {
            let rt = crate::runtime::get().map_err(str::to_string)?;
            Agent::start(rt)
        })
        .as_ref()
        .map_err(String::as_str)
}

impl Agent {
    fn start(rt: &'static Runtime) -> Result<Arc<Agent>, String> {
        let pd = rt
            .device
            .alloc_pd()
            .map_err(|e| format!("the CM's PD: {e}"))?;
        let gsi = Gsi::new(&rt.device, &pd).map_err(|e| format!("QP 1 for the CM: {e}"))?;
        let seed = super::addr::random();
        let cm = Cm::new(CmConfig {
            local_gid: rt.gid.0,
            ca_guid: rt.guid(),
            max_conns: MAX_CONNS,
            max_outputs: 1024,
            max_events: 1024,
            packet_life_time: 14,
            ack_delay: 16,
            seed: seed ^ rt.guid(),
        });
        let agent = Arc::new(Agent {
            st: Mutex::new(State {
                cm,
                gsi,
                listeners: HashMap::new(),
                conns: HashMap::new(),
                retries: Vec::new(),
                sidr: Vec::new(),
                sidr_out: HashMap::new(),
                sidr_in: HashMap::new(),
                sidr_next: seed as u32 | 1,
            }),
            rt,
        });
        let a = agent.clone();
        std::thread::Builder::new()
            .name("ernic-rdma-cm".into())
            .spawn(move || a.run())
            .map_err(|e| format!("the CM's thread: {e}"))?;
        Ok(agent)
    }

    /// The lock (the first of the two an id's call takes).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One pass: MADs in, timers, events out to their ids, MADs out.
    /// Answers whether anything happened.
    pub(crate) fn pass(&self, st: &mut State) -> bool {
        let now = Instant::now();
        let State { cm, gsi, sidr, .. } = st;
        let got = gsi
            .poll(|gid, qpn, mad| {
                let from = ernic_cm::conn::Peer {
                    gid: gid.0,
                    qpn: qpn.0,
                };
                match ernic_cm::sidr::attr_of(mad) {
                    // SIDR has no connection state: the ids answer it.
                    Some(ernic_cm::mad::AttrId::SidrReq | ernic_cm::mad::AttrId::SidrRep) => {
                        if sidr.len() < MAX_SIDR {
                            let mut m = [0u8; ernic_cm::mad::MAD_LEN];
                            m.copy_from_slice(&mad[..ernic_cm::mad::MAD_LEN]);
                            sidr.push((from, m));
                        }
                    }
                    _ => cm.on_mad(now, from, mad),
                }
            })
            .unwrap_or(0);
        let mads = std::mem::take(&mut st.sidr);
        for (from, mad) in &mads {
            super::ud::on_sidr(self, st, *from, mad);
        }
        st.cm.poll(now);
        let mut worked = super::ud::resend_sidr(self, st, now) || got > 0;
        let due: Vec<usize> = st
            .retries
            .iter()
            .filter(|(_, t)| *t <= now)
            .map(|(id, _)| *id)
            .collect();
        if !due.is_empty() {
            st.retries.retain(|(_, t)| *t > now);
            for id in due {
                worked = true;
                super::id::retry(self, st, id);
            }
        }
        while let Some(ev) = st.cm.pop_event() {
            worked = true;
            super::id::on_event(self, st, ev);
        }
        flush(st);
        worked
    }

    fn run(self: Arc<Self>) {
        let mut idle = Duration::from_micros(200);
        loop {
            let worked = {
                let mut st = self.lock();
                self.pass(&mut st)
            };
            if worked {
                idle = Duration::from_micros(200);
            } else {
                idle = (idle * 2).min(Duration::from_millis(5));
                std::thread::sleep(idle);
            }
        }
    }

    /// The GIDs a destination address may be at: the devices of the mesh
    /// nodes at that address (this process's own first when it is a local
    /// address), in a stable order.
    pub(crate) fn candidates(&self, ip: std::net::IpAddr) -> Vec<Gid> {
        let local = ip.is_loopback() || ip.is_unspecified() || is_local(ip);
        let mut out = Vec::new();
        if local {
            out.push(self.rt.gid);
        }
        if let Some(mesh) = self.rt.fabric.mesh() {
            let me = mesh.node_id();
            for (p, _) in mesh.peers() {
                if !p.alive || Some(p.id) == me {
                    continue;
                }
                let here = p.addr.is_some_and(|a| {
                    a.ip() == ip || (local && (a.ip().is_loopback() || is_local(a.ip())))
                });
                if here || (local && p.addr.is_none()) {
                    out.extend(mesh.gids_of(p.id));
                }
            }
            // The manager (node 0) is never in its own topology.
            if me != Some(NodeId(0))
                && local
                && !out.iter().any(|g| mesh.owner(g) == Some(NodeId(0)))
            {
                out.extend(mesh.gids_of(NodeId(0)));
            }
        }
        out.dedup();
        out
    }
}

/// Sends a MAD of our own (a SIDR message) to a port's QP 1.
pub(crate) fn send_mad(st: &mut State, to: Gid, mad: &[u8; ernic_cm::mad::MAD_LEN]) {
    let _ = st.gsi.send(to, Qpn(1), mad);
}

/// Sends what the CM queued.
pub(crate) fn flush(st: &mut State) {
    while let Some(out) = st.cm.pop_output() {
        let _ = st.gsi.send(Gid(out.to.gid), Qpn(out.to.qpn), &out.mad);
    }
}

/// Whether `ip` is an address of this host.
fn is_local(ip: std::net::IpAddr) -> bool {
    // Binding a UDP socket to it succeeds only for a local address.
    std::net::UdpSocket::bind((ip, 0)).is_ok()
}
