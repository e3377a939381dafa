//! The store's RDMA data plane on an ernic fabric: a device of its own
//! (its GID on the mesh, like the NVMe-oF target's), an RC queue pair (and
//! CQ) per client queue pair it serves, and a small pool of lanes, each a
//! registered staging region a transfer borrows.
//!
//! **How the store reaches the client.** A token names the client's QP
//! (number and GID) and its buffer (address, length, rkey). The store opens
//! an RC QP of its own and connects it to that QP, then posts RDMA WRITEs
//! (GET) or READs (PUT) against the buffer; the QP is kept for the client's
//! next request. This is the "QP per client connection" of the issue, and
//! it was chosen over the other two because it puts every byte through the
//! fabric's ordinary checks: the client's engine refuses an access outside
//! the region, without the right (REMOTE_WRITE for a GET, REMOTE_READ for a
//! PUT) or in another protection domain, exactly as it would refuse any
//! peer, and the store learns of it as a completion error. DMA callbacks
//! into a guest's MR table (the seed's way) would reach only guests of the
//! same server and would re-implement those checks.
//!
//! **The handshake.** A guest's ionic device runs a QP in any state, as
//! seed 001 says, so a guest's QP takes the store's requests as soon as it
//! exists. A host program's QP keeps verbs' rules: it answers only the QP
//! it was connected to. Such a client learns the store's QP from
//! hipObject's RC handshake: any request with an RC token is answered
//! `x-amz-rdma-reply: 200:<server token>` (the store's QP number and GID),
//! and a HEAD with one moves nothing, so `HEAD` + token is the handshake
//! before the first transfer. A transfer on a QP opened for it that the
//! client never connected back is declined (501): the GET is served in the
//! body and the PUT sent again, never failed.
//!
//! Transfers are pipelined through the [`SLOTS`] chunks of the lane's
//! staging region ([`CHUNK`] bytes each): the store fills one while the
//! others are on the wire. No transfer allocates: staging and its bounce buffer belong to
//! the lane. A GET fills its slots in place; a PUT copies each chunk out
//! before the store takes it. A transfer that finds no lane free within [`LANE_WAIT`] is
//! declined (the protocol's 501), never queued without bound.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ernic_verbs::{
    Access, Cq, Device, Gid, Mr, Pd, Qp, QpCaps, QpType, Qpn, RemoteAddr, Rkey, SendOp, SendWr,
    WcStatus,
};

use crate::service::token_path::{Fill, Sink};
use crate::service::{DataPlane, DataPlaneError, Transfer};
use crate::store::StoreError;
use crate::token::{Format, RdmaToken, Transport};

/// Bytes in each slot of a lane's staging region.
pub const CHUNK: usize = 8 << 20;
/// Slots of [`CHUNK`] bytes in a lane's staging region: operations in
/// flight at once.
pub const SLOTS: usize = 8;
/// How long a transfer waits for a free lane before it is declined.
pub const LANE_WAIT: Duration = Duration::from_secs(2);
/// How many client QPs the store keeps connected; past this an idle one
/// is closed for a new one.
pub const MAX_CONNECTIONS: usize = 256;

/// What the data plane is given.
#[derive(Debug, Clone)]
pub struct RdmaConfig {
    /// Lanes (transfers in flight at once).
    pub lanes: usize,
    /// How long one RDMA operation may take before the transfer fails.
    pub op_timeout: Duration,
}

impl Default for RdmaConfig {
    fn default() -> Self {
        RdmaConfig {
            lanes: 2,
            op_timeout: Duration::from_secs(10),
        }
    }
}

/// A registered staging region, and a bounce buffer a PUT's chunk is
/// copied out to (so the store's writer, MD5 and all, runs without the
/// fabric's lock while the next READs land), borrowed by one transfer at a
/// time.
struct Lane {
    staging: Mr,
    bounce: Vec<u8>,
}

/// The store's QP to one client QP.
struct Conn {
    cq: Cq,
    qp: Qp,
    /// Transfers run on it so far (tags work request ids).
    seq: u64,
    /// Whether a transfer has succeeded on it (the client is connected back).
    proven: bool,
}

type Client = (Gid, Qpn);

/// The store's data plane on a device of its own.
pub struct RdmaDataPlane {
    dev: Device,
    pd: Pd,
    conns: Mutex<HashMap<Client, Arc<Mutex<Conn>>>>,
    lanes: Mutex<Vec<Lane>>,
    freed: Condvar,
    config: RdmaConfig,
}

impl RdmaDataPlane {
    /// A data plane on `dev` with `config.lanes` lanes.
    pub fn new(dev: Device, config: RdmaConfig) -> Result<RdmaDataPlane, ernic_verbs::Error> {
        let pd = dev.alloc_pd()?;
        let mut lanes = Vec::with_capacity(config.lanes.max(1));
        for _ in 0..config.lanes.max(1) {
            lanes.push(Lane {
                staging: pd.reg_mr(SLOTS * CHUNK, Access::LOCAL_WRITE)?,
                bounce: vec![0; CHUNK],
            });
        }
        Ok(RdmaDataPlane {
            dev,
            pd,
            conns: Mutex::new(HashMap::new()),
            lanes: Mutex::new(lanes),
            freed: Condvar::new(),
            config,
        })
    }

    /// The device's GID (where clients' fabrics reach the store).
    pub fn gid(&self) -> Gid {
        self.dev.gid()
    }

    fn take_lane(&self) -> Result<Lane, DataPlaneError> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = std::time::Instant::now() + LANE_WAIT;
        loop {
            if let Some(l) = lanes.pop() {
                return Ok(l);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(DataPlaneError::Declined {
                    why: "every RDMA lane is busy".into(),
                });
            }
            lanes = self
                .freed
                .wait_timeout(lanes, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn give_lane(&self, lane: Lane) {
        self.lanes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lane);
        self.freed.notify_one();
    }

    fn client_of(token: &RdmaToken) -> Result<Client, DataPlaneError> {
        let gid = token.gid.ok_or_else(|| DataPlaneError::Declined {
            why: "the token names no GID, and this fabric routes by GID".into(),
        })?;
        Ok((Gid(gid), Qpn(token.qpn)))
    }

    /// The store's QP to a client QP: the one opened before, or a new one
    /// connected to it.
    fn conn(&self, client: Client) -> Result<Arc<Mutex<Conn>>, DataPlaneError> {
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = conns.get(&client) {
            return Ok(Arc::clone(c));
        }
        if conns.len() >= MAX_CONNECTIONS {
            let idle = conns
                .iter()
                .find(|(_, c)| Arc::strong_count(c) == 1)
                .map(|(k, _)| *k);
            match idle {
                Some(k) => {
                    conns.remove(&k);
                }
                None => {
                    return Err(DataPlaneError::Declined {
                        why: "too many client QPs".into(),
                    });
                }
            }
        }
        let fabric = |e: ernic_verbs::Error| DataPlaneError::Fabric {
            why: format!("opening a QP to the client: {e}"),
        };
        let cq = self.dev.create_cq(16).map_err(fabric)?;
        let qp = self
            .pd
            .create_qp(QpType::Rc, &cq, &cq, QpCaps::default())
            .map_err(fabric)?;
        qp.connect(client.0, client.1, Access::NONE)
            .map_err(fabric)?;
        let c = Arc::new(Mutex::new(Conn {
            cq,
            qp,
            seq: 0,
            proven: false,
        }));
        conns.insert(client, Arc::clone(&c));
        Ok(c)
    }

    fn forget(&self, client: Client) {
        self.conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&client);
    }

    /// The handshake's answer for an RC token: the store's QP and GID (and
    /// its staging region's address, which grants no remote right).
    fn server_token(&self, token: &RdmaToken, conn: &Conn) -> Option<String> {
        if token.transport != Transport::Rc {
            return None;
        }
        let t = RdmaToken {
            format: Format::HipObject,
            transport: Transport::Rc,
            addr: 0,
            len: 1,
            rkey: 0,
            qpn: conn.qp.qpn().0,
            lid: 0,
            gid: Some(self.dev.gid().0),
            port: Some(1),
        };
        t.emit().ok()
    }

    /// Runs `f` with the client's connection and a lane; a failure closes
    /// the connection (its QP may be in the error state, with completions
    /// of the failed transfer still to come). A first transfer that finds
    /// the client not connected back is declined, not failed.
    fn transfer(
        &self,
        token: &RdmaToken,
        f: &mut dyn FnMut(&mut Conn, &mut Lane) -> Result<u64, DataPlaneError>,
    ) -> Result<Transfer, DataPlaneError> {
        if token.rkey == 0 {
            return Err(DataPlaneError::Refused {
                why: "rkey 0 names no registered memory".into(),
            });
        }
        let client = Self::client_of(token)?;
        let conn = self.conn(client)?;
        let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
        let mut lane = self.take_lane()?;
        let result = f(&mut conn, &mut lane);
        self.give_lane(lane);
        match result {
            Ok(bytes) => {
                conn.proven = true;
                Ok(Transfer {
                    bytes,
                    server_token: self.server_token(token, &conn),
                })
            }
            Err(e) => {
                let unconnected = !conn.proven
                    && matches!(&e, DataPlaneError::Fabric { why } if why.contains("RetryExcErr"));
                drop(conn);
                self.forget(client);
                Err(if unconnected {
                    DataPlaneError::Declined {
                        why: "the client's QP does not answer the store's; HEAD the object with an RC token first (the handshake)".into(),
                    }
                } else {
                    e
                })
            }
        }
    }
}

/// What a failed completion means for the client's request.
fn completion_error(status: WcStatus) -> DataPlaneError {
    match status {
        WcStatus::RemAccessErr
        | WcStatus::RemInvReqErr
        | WcStatus::RemOpErr
        | WcStatus::LocProtErr => DataPlaneError::Refused {
            why: format!("{status:?}"),
        },
        s => DataPlaneError::Fabric {
            why: format!("completion {s:?}"),
        },
    }
}

impl Conn {
    /// Waits for the oldest outstanding operation of transfer `seq`.
    fn wait(&mut self, seq: u64, timeout: Duration) -> Result<(), DataPlaneError> {
        loop {
            let wc = self
                .cq
                .wait_one(timeout)
                .map_err(|e| DataPlaneError::Fabric { why: e.to_string() })?
                .ok_or_else(|| DataPlaneError::Fabric {
                    why: format!("no completion within {timeout:?}"),
                })?;
            if wc.wr_id >> 8 != seq {
                continue; // A late completion of a transfer that failed.
            }
            if wc.status != WcStatus::Success {
                return Err(completion_error(wc.status));
            }
            return Ok(());
        }
    }

    fn post(
        &self,
        lane: &Lane,
        wr_id: u64,
        op: SendOp,
        slot: usize,
        n: usize,
    ) -> Result<(), DataPlaneError> {
        let fabric = |e: ernic_verbs::Error| DataPlaneError::Fabric { why: e.to_string() };
        let sge = [lane.staging.sge(slot * CHUNK, n as u32).map_err(fabric)?];
        self.qp
            .post_send(&SendWr::new(wr_id, op).sgl(&sge))
            .map_err(fabric)
    }
}

fn remote(token: &RdmaToken, off: u64) -> RemoteAddr {
    RemoteAddr {
        addr: token.addr.wrapping_add(off),
        rkey: Rkey(token.rkey),
    }
}

impl DataPlane for RdmaDataPlane {
    fn handshake(&self, token: &RdmaToken) -> Result<Transfer, DataPlaneError> {
        let client = Self::client_of(token)?;
        let conn = self.conn(client)?;
        let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
        Ok(Transfer {
            bytes: 0,
            server_token: self.server_token(token, &conn),
        })
    }

    fn write_to_client(
        &self,
        token: &RdmaToken,
        len: u64,
        fill: &mut Fill<'_>,
    ) -> Result<Transfer, DataPlaneError> {
        let timeout = self.config.op_timeout;
        self.transfer(token, &mut |conn, lane| {
            conn.seq += 1;
            let seq = conn.seq;
            let (mut off, mut slot, mut outstanding) = (0u64, 0usize, 0usize);
            while off < len {
                if outstanding == SLOTS {
                    conn.wait(seq, timeout)?;
                    outstanding -= 1;
                }
                let n = (len - off).min(CHUNK as u64) as usize;
                // The store's bytes go straight into the slot, which no
                // operation names now (a GET's store read is a memcpy, short
                // enough to hold the fabric's lock for).
                let mut filled: Result<(), DataPlaneError> = Ok(());
                lane.staging
                    .with_bytes(slot * CHUNK, n, &mut |dst| {
                        let mut got = 0;
                        while got < n && filled.is_ok() {
                            match fill(off + got as u64, &mut dst[got..]) {
                                Ok(0) => {
                                    filled = Err(StoreError::Io {
                                        what: "reading the object".into(),
                                        source: std::io::Error::other("it ended early"),
                                    }
                                    .into());
                                }
                                Ok(k) => got += k,
                                Err(e) => filled = Err(e.into()),
                            }
                        }
                    })
                    .map_err(|e| DataPlaneError::Fabric { why: e.to_string() })?;
                filled?;
                conn.post(
                    lane,
                    seq << 8 | slot as u64,
                    SendOp::Write(remote(token, off)),
                    slot,
                    n,
                )?;
                outstanding += 1;
                off += n as u64;
                slot = (slot + 1) % SLOTS;
            }
            for _ in 0..outstanding {
                conn.wait(seq, timeout)?;
            }
            Ok(len)
        })
    }

    fn read_from_client(
        &self,
        token: &RdmaToken,
        len: u64,
        sink: &mut Sink<'_>,
    ) -> Result<Transfer, DataPlaneError> {
        let timeout = self.config.op_timeout;
        self.transfer(token, &mut |conn, lane| {
            conn.seq += 1;
            let seq = conn.seq;
            let mut posted = 0u64;
            let mut queue: VecDeque<(usize, usize)> = VecDeque::with_capacity(SLOTS);
            let mut slot = 0usize;
            let mut post_next = |conn: &Conn,
                                 lane: &Lane,
                                 queue: &mut VecDeque<(usize, usize)>,
                                 slot: &mut usize| {
                if posted >= len {
                    return Ok(());
                }
                let n = (len - posted).min(CHUNK as u64) as usize;
                conn.post(
                    lane,
                    seq << 8 | *slot as u64,
                    SendOp::Read(remote(token, posted)),
                    *slot,
                    n,
                )?;
                queue.push_back((*slot, n));
                posted += n as u64;
                *slot = (*slot + 1) % SLOTS;
                Ok::<(), DataPlaneError>(())
            };
            for _ in 0..SLOTS {
                post_next(conn, lane, &mut queue, &mut slot)?;
            }
            let mut done = 0u64;
            while let Some((s, n)) = queue.pop_front() {
                conn.wait(seq, timeout)?;
                let Lane { staging, bounce } = &mut *lane;
                staging
                    .read(s * CHUNK, &mut bounce[..n])
                    .map_err(|e| DataPlaneError::Fabric { why: e.to_string() })?;
                // The slot is free again: keep the wire busy while the
                // store takes this chunk.
                post_next(conn, lane, &mut queue, &mut slot)?;
                sink(&lane.bounce[..n])?;
                done += n as u64;
            }
            Ok(done)
        })
    }
}
