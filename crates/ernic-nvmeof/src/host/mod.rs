//! ernic's NVMe/RDMA initiator: what `ernic nvme perf`, `identify` and
//! `discover` drive, and what the target's end-to-end tests connect with.
//! It does what Linux's nvme-rdma does: a queue is an RC QP connected
//! through the IB CM (a REQ carrying rdma_cm's header and an
//! `nvme_rdma_cm_req`), then a Fabrics Connect on it; the admin queue
//! brings the controller up (CAP, CC.EN, CSTS.RDY, Identify, Number of
//! Queues), and I/O queues follow with the controller id the target gave.

mod commands;
mod queue;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use ernic_cm::conn::{Cm, CmConfig, ConnId, ConnectParams, Event, Peer};
use ernic_cm::private_data::{cma, nvme};
use ernic_cm::rej::RejReason;
use ernic_cm::req;
use ernic_verbs::{Device, Gid, Pd, Qpn, WcStatus};

use crate::wire::cqe;
use crate::wire::fabrics::connect::{CNTLID_DYNAMIC, InvalidParam, result_cntlid};
use crate::wire::fabrics::registers::{
    CC_CSS_NVM, CC_ENABLE, CC_IOCQES_SHIFT, CC_IOSQES_SHIFT, CC_SHN_NORMAL, CSTS_RDY, NVM_IOCQES,
    NVM_IOSQES, REG_CAP, REG_CC, REG_CSTS,
};
use crate::wire::status::Status;
use ernic_verbs::Gsi;

pub use commands::Command;
pub use queue::{Dir, Done, HostQueue};

/// Why the initiator failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A verbs call failed.
    #[error("a verbs call failed")]
    Verbs(#[from] ernic_verbs::Error),
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] crate::rdma::RdmaError),
    /// Bytes from the target did not decode.
    #[error("bytes did not decode")]
    Wire(#[from] crate::Error),
    /// A request completed in error: the queue is dead.
    #[error("queue {qid}: a request completed with {status:?}")]
    Completion {
        /// Its status.
        status: WcStatus,
        /// The queue.
        qid: u16,
    },
    /// The target broke the protocol.
    #[error("the target broke NVMe/RDMA: {what}")]
    Protocol {
        /// What it did.
        what: &'static str,
    },
    /// The target refused the connection.
    #[error("queue {qid}: the target rejected the connection ({reason:?}{})",
        .nvme.map(|s| format!(", NVMe/RDMA status {s:?}")).unwrap_or_default())]
    Rejected {
        /// The queue.
        qid: u16,
        /// The CM's reason.
        reason: RejReason,
        /// NVMe/RDMA's status, when the target gave one.
        nvme: Option<nvme::rej::Status>,
    },
    /// Nothing answered in time.
    #[error("{what}: no answer within {ms} ms")]
    Timeout {
        /// What waited.
        what: &'static str,
        /// How long.
        ms: u128,
    },
    /// A command completed with an error status.
    #[error("{what} failed: status {status:?} (SCT {:#x} SC {:#x})", .status.sct, .status.sc)]
    Status {
        /// The command.
        what: &'static str,
        /// Its status.
        status: Status,
    },
    /// The target refused a Fabrics Connect.
    #[error("queue {qid}: the target refused Connect: {}", refusal(.status, .param))]
    ConnectRefused {
        /// The queue.
        qid: u16,
        /// Its status.
        status: Status,
        /// For an invalid parameter: which one.
        param: Option<InvalidParam>,
    },
    /// A transfer larger than the queue's buffers.
    #[error("a transfer of {len} bytes is larger than the {max} a command may move")]
    TooLong {
        /// Asked.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A CM call failed.
    #[error("the connection manager refused")]
    Cm(#[from] ernic_cm::conn::CmError),
}

/// Words for a refused Connect (`nvmf_log_connect_error`'s cases).
fn refusal(status: &Status, param: &Option<InvalidParam>) -> String {
    let field = match param {
        Some(p) if *p == InvalidParam::SUBSYSNQN => "no such subsystem (subsysnqn)".into(),
        Some(p) if *p == InvalidParam::HOSTNQN => "this host is not allowed (hostnqn)".into(),
        Some(p) if *p == InvalidParam::CNTLID => "no such controller (cntlid)".into(),
        Some(p) if *p == InvalidParam::QID => "the queue id (qid)".into(),
        Some(p) if *p == InvalidParam::SQSIZE => "the queue size (sqsize)".into(),
        Some(p) => format!(
            "the field at byte {} of the {}",
            p.offset,
            if p.in_data { "data" } else { "command" }
        ),
        None => return format!("status SCT {:#x} SC {:#x}", status.sct, status.sc),
    };
    format!("invalid parameter: {field}")
}

/// A completion, or the error its status is.
fn succeeded(what: &'static str, c: cqe::Repr) -> Result<cqe::Repr, HostError> {
    if c.status != Status::SUCCESS {
        return Err(HostError::Status {
            what,
            status: c.status,
        });
    }
    Ok(c)
}

/// A Connect's completion as an error when it is not a success.
fn check_connect(qid: u16, cqe: &cqe::Repr) -> Result<(), HostError> {
    if cqe.status == Status::SUCCESS {
        return Ok(());
    }
    let invalid = Status::CONNECT_INVALID_PARAM;
    let param = (cqe.status.sct == invalid.sct && cqe.status.sc == invalid.sc)
        .then(|| InvalidParam::from_result(cqe.result as u32));
    Err(HostError::ConnectRefused {
        qid,
        status: cqe.status,
        param,
    })
}

/// How to reach and use a controller.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The subsystem to connect to.
    pub subnqn: String,
    /// Our host NQN.
    pub hostnqn: String,
    /// Our host identifier.
    pub hostid: [u8; 16],
    /// The rdma_cm port (4420).
    pub port: u16,
    /// I/O queues to ask for.
    pub io_queues: u16,
    /// Entries of each I/O queue.
    pub depth: u16,
    /// Bytes one command may move.
    pub max_xfer: usize,
    /// The keep-alive timeout to ask for, in milliseconds (0: none).
    pub kato_ms: u32,
    /// How long to wait for a connection or an admin command.
    pub timeout: Duration,
    /// The I/O queues' size to tell the target (`hsqsize + 1`), if not
    /// `depth`: a host that then keeps more commands in flight than it
    /// said over-fills the target's queue (what tests of that do).
    pub claim_entries: Option<u16>,
}

impl Default for HostConfig {
    fn default() -> HostConfig {
        HostConfig {
            subnqn: String::new(),
            hostnqn: "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000e7a1c".into(),
            hostid: *b"ernic-host-00001",
            port: nvme::IP_PORT,
            io_queues: 1,
            depth: 32,
            max_xfer: 128 * 1024,
            // Linux's NVME_DEFAULT_KATO.
            kato_ms: 5000,
            // Room for one lost REQ: the CM resends it after rdma_cm's
            // response timeout (2^20 x 4.096 us, 4.3 s) plus the packet
            // life time.
            timeout: Duration::from_secs(10),
            claim_entries: None,
        }
    }
}

/// Entries of the admin queue (Linux's `NVME_AQ_DEPTH`).
pub const ADMIN_DEPTH: u16 = 32;

/// A connected controller: its admin queue, its I/O queues, and the GSI
/// QP and CM that connected them.
pub struct Controller {
    dev: Device,
    pd: Pd,
    gsi: Gsi,
    cm: Cm,
    target: Gid,
    cfg: HostConfig,
    admin: HostQueue,
    io: Vec<HostQueue>,
    conns: Vec<ConnId>,
    cntlid: u16,
    done: Vec<Done>,
    /// When the last Keep Alive went.
    last_keep_alive: Instant,
    /// The command id of a Keep Alive [`tick`](Self::tick) sent and has
    /// not seen answered.
    keep_alive_cid: Option<u16>,
    /// The controller's Identify data.
    pub id_ctrl: Box<[u8; 4096]>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("target", &self.target)
            .field("cntlid", &self.cntlid)
            .field("io_queues", &self.io.len())
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// Connects to the target at `target` and brings its controller up, with
    /// as many I/O queues as it grants (up to `cfg.io_queues`).
    pub fn connect(dev: &Device, target: Gid, cfg: &HostConfig) -> Result<Controller, HostError> {
        let pd = dev.alloc_pd()?;
        let gsi = Gsi::new(dev, &pd)?;
        let gid = dev.gid();
        let cm = Cm::new(CmConfig {
            local_gid: gid.0,
            ca_guid: u64::from_be_bytes(gid.0[8..16].try_into().unwrap_or_default()),
            max_conns: 256,
            max_outputs: 64,
            max_events: 64,
            packet_life_time: 14,
            ack_delay: 14,
            seed: u64::from_be_bytes(gid.0[8..16].try_into().unwrap_or_default()) ^ 0x686f_7374,
        });
        let admin = HostQueue::new(dev, &pd, 0, ADMIN_DEPTH, cfg.max_xfer.max(4096))?;
        let mut c = Controller {
            dev: dev.clone(),
            pd,
            gsi,
            cm,
            target,
            cfg: cfg.clone(),
            admin,
            io: Vec::new(),
            conns: Vec::new(),
            cntlid: 0xffff,
            done: Vec::new(),
            last_keep_alive: Instant::now(),
            keep_alive_cid: None,
            id_ctrl: Box::new([0; 4096]),
        };
        c.bring_up()?;
        Ok(c)
    }

    fn bring_up(&mut self) -> Result<(), HostError> {
        let id = self.cm_connect(0, ADMIN_DEPTH)?;
        self.conns.push(id);
        let connect = Command::connect(0, ADMIN_DEPTH - 1, self.cfg.kato_ms);
        let data = commands::connect_data(&self.cfg, CNTLID_DYNAMIC)?;
        let cqe = self.admin_raw(connect, Dir::ToTarget, &data, &mut [])?;
        check_connect(0, &cqe)?;
        self.cntlid = result_cntlid(cqe.result as u32);
        let cap = self.property_get(REG_CAP, true)?;
        let mqes = (cap & 0xffff) as u16;
        // CC as Linux's nvme_enable_ctrl writes it: NVM command set, 4 KiB
        // pages, round robin, 64-byte SQEs and 16-byte CQEs, enabled.
        let cc = CC_ENABLE
            | CC_CSS_NVM
            | u32::from(NVM_IOSQES) << CC_IOSQES_SHIFT
            | u32::from(NVM_IOCQES) << CC_IOCQES_SHIFT;
        let set = Command::property_set(REG_CC, cc);
        self.admin_cmd("Property Set CC", set, Dir::None, &[], &mut [])?;
        let deadline = Instant::now() + self.cfg.timeout;
        while self.property_get(REG_CSTS, false)? as u32 & CSTS_RDY == 0 {
            if Instant::now() > deadline {
                return Err(HostError::Timeout {
                    what: "CSTS.RDY",
                    ms: self.cfg.timeout.as_millis(),
                });
            }
        }
        let mut id = [0u8; 4096];
        self.admin_cmd(
            "Identify controller",
            Command::identify(0x01, 0),
            Dir::FromTarget,
            &[],
            &mut id,
        )?;
        *self.id_ctrl = id;
        if self.cfg.io_queues == 0 {
            return Ok(());
        }
        let want = u32::from(self.cfg.io_queues - 1);
        let cqe = self.admin_cmd(
            "Set Features (Number of Queues)",
            Command::set_features(0x07, want << 16 | want),
            Dir::None,
            &[],
            &mut [],
        )?;
        let granted = ((cqe.result as u32 & 0xffff) + 1).min(u32::from(self.cfg.io_queues)) as u16;
        let depth = self.cfg.depth.min(mqes.saturating_add(1)).max(2);
        for qid in 1..=granted {
            let q = HostQueue::new(&self.dev, &self.pd, qid, depth, self.cfg.max_xfer)?;
            self.io.push(q);
            let claimed = self.cfg.claim_entries.unwrap_or(depth).clamp(2, depth);
            let id = self.cm_connect(qid, claimed)?;
            self.conns.push(id);
            let data = commands::connect_data(&self.cfg, self.cntlid)?;
            let cmd = Command::connect(qid, depth - 1, 0);
            let cqe = self.io_raw(usize::from(qid - 1), cmd, Dir::ToTarget, &data, &mut [])?;
            check_connect(qid, &cqe)?;
        }
        Ok(())
    }

    /// Connects queue `qid`'s QP through the CM: REQ, REP, RTU.
    fn cm_connect(&mut self, qid: u16, entries: u16) -> Result<ConnId, HostError> {
        let q = if qid == 0 {
            &self.admin
        } else {
            &self.io[usize::from(qid) - 1]
        };
        let local = self.dev.gid();
        let psn = (q.qpn().0.wrapping_mul(0x2545) ^ 0x5a5a) & 0xff_ffff;
        let mut pd = [0u8; cma::LEN + nvme::req::LEN];
        let v4 = |g: Gid| g.to_ipv4().unwrap_or(Ipv4Addr::UNSPECIFIED);
        cma::Repr {
            port: 0xc000 | qid,
            addrs: cma::Addrs::V4 {
                src: v4(local),
                dst: v4(self.target),
            },
        }
        .emit(&mut cma::Packet::new_unchecked(&mut pd[..cma::LEN]));
        nvme::req::Repr {
            qid,
            hrqsize: entries,
            hsqsize: entries - 1,
        }
        .emit(&mut nvme::req::Packet::new_unchecked(&mut pd[cma::LEN..]));
        let now = Instant::now();
        let id = self.cm.connect(
            now,
            Peer {
                gid: self.target.0,
                qpn: 1,
            },
            &ConnectParams {
                service_id: cma::service_id(cma::RDMA_PS_TCP, self.cfg.port),
                local_qpn: q.qpn().0,
                starting_psn: psn,
                responder_resources: 16,
                initiator_depth: 16,
                retry_count: 7,
                rnr_retry_count: 7,
                max_cm_retries: 15,
                remote_cm_response_timeout: 20,
                local_cm_response_timeout: 20,
                path_mtu: 5,
                partition_key: 0xffff,
                srq: false,
                flow_control: true,
                primary: req::Path {
                    local_gid: local.0,
                    remote_gid: self.target.0,
                    hop_limit: 64,
                    ..req::Path::default()
                },
                private_data: &pd,
            },
        )?;
        let deadline = now + self.cfg.timeout;
        loop {
            let now = Instant::now();
            self.service(now)?;
            while let Some(ev) = self.cm.pop_event() {
                match ev {
                    Event::Reply { id: got, rep } if got == id => {
                        let q = if qid == 0 {
                            &self.admin
                        } else {
                            &self.io[usize::from(qid) - 1]
                        };
                        q.connect(self.target, Qpn(rep.local_qpn), rep.starting_psn, psn)?;
                        self.cm.ready_to_use(now, id)?;
                        self.service(now)?;
                        return Ok(id);
                    }
                    Event::Rejected {
                        id: got,
                        reason,
                        private_data,
                    } if got == id => {
                        let nvme = (reason == RejReason::ConsumerDefined)
                            .then(|| nvme::rej::Packet::new_checked(&private_data[..]).ok())
                            .flatten()
                            .and_then(|p| nvme::rej::Repr::parse(&p).ok())
                            .map(|r| r.sts);
                        return Err(HostError::Rejected { qid, reason, nvme });
                    }
                    Event::TimedOut { id: got } if got == id => {
                        return Err(HostError::Timeout {
                            what: "the connection request",
                            ms: self.cfg.timeout.as_millis(),
                        });
                    }
                    _ => {}
                }
            }
            if now > deadline {
                return Err(HostError::Timeout {
                    what: "the connection request",
                    ms: self.cfg.timeout.as_millis(),
                });
            }
            std::hint::spin_loop();
        }
    }

    /// MADs in and out, and the CM's timers: call now and then while
    /// driving I/O queues directly.
    pub fn service(&mut self, now: Instant) -> Result<(), HostError> {
        let cm = &mut self.cm;
        self.gsi.poll(|gid, qpn, mad| {
            cm.on_mad(
                now,
                Peer {
                    gid: gid.0,
                    qpn: qpn.0,
                },
                mad,
            )
        })?;
        self.cm.poll(now);
        while let Some(out) = self.cm.pop_output() {
            self.gsi.send(Gid(out.to.gid), Qpn(out.to.qpn), &out.mad)?;
        }
        Ok(())
    }

    /// The controller id the target gave.
    pub fn cntlid(&self) -> u16 {
        self.cntlid
    }

    /// The I/O queues.
    pub fn io_queues(&mut self) -> &mut [HostQueue] {
        &mut self.io
    }

    fn property_get(&mut self, offset: u32, eight: bool) -> Result<u64, HostError> {
        let cqe = self.admin_cmd(
            "Property Get",
            Command::property_get(offset, eight),
            Dir::None,
            &[],
            &mut [],
        )?;
        Ok(cqe.result)
    }

    /// Runs an admin command to completion: `data` goes to the target, or
    /// what it sends back lands in `out`. A status other than success is
    /// an error.
    pub fn admin_cmd(
        &mut self,
        what: &'static str,
        cmd: Command,
        dir: Dir,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<cqe::Repr, HostError> {
        succeeded(what, self.run(None, cmd, dir, data, out)?)
    }

    /// Runs an admin command and answers its completion, whatever its status.
    pub fn admin_raw(
        &mut self,
        cmd: Command,
        dir: Dir,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<cqe::Repr, HostError> {
        self.run(None, cmd, dir, data, out)
    }

    /// Runs one command on I/O queue `i` to completion; a status other
    /// than success is an error.
    pub fn io_cmd_sync(
        &mut self,
        what: &'static str,
        i: usize,
        cmd: Command,
        dir: Dir,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<cqe::Repr, HostError> {
        succeeded(what, self.run(Some(i), cmd, dir, data, out)?)
    }

    /// Runs one command on I/O queue `i` and answers its completion,
    /// whatever its status.
    pub fn io_raw(
        &mut self,
        i: usize,
        cmd: Command,
        dir: Dir,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<cqe::Repr, HostError> {
        self.run(Some(i), cmd, dir, data, out)
    }

    /// The admin queue (`None`) or I/O queue `i`.
    fn queue(&mut self, which: Option<usize>) -> &mut HostQueue {
        match which {
            None => &mut self.admin,
            Some(i) => &mut self.io[i],
        }
    }

    /// Submits `cmd` on a queue and waits for its completion, keeping the
    /// CM serviced meanwhile.
    fn run(
        &mut self,
        which: Option<usize>,
        cmd: Command,
        dir: Dir,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<cqe::Repr, HostError> {
        let len = if dir == Dir::ToTarget {
            data.len()
        } else {
            out.len()
        };
        let mut sqe = cmd.0;
        let Some(cid) = self.queue(which).submit(&mut sqe, dir, len, data)? else {
            return Err(HostError::Protocol {
                what: "the queue is full",
            });
        };
        let deadline = Instant::now() + self.cfg.timeout;
        loop {
            let mut done = std::mem::take(&mut self.done);
            done.clear();
            let polled = self.queue(which).poll(&mut done);
            let found = done.iter().find(|d| d.cid == cid).map(|d| d.cqe);
            self.done = done;
            polled?;
            if let Some(c) = found {
                if dir == Dir::FromTarget {
                    self.queue(which).read_data(cid, out)?;
                }
                return Ok(c);
            }
            let now = Instant::now();
            self.service(now)?;
            if now > deadline {
                return Err(HostError::Timeout {
                    what: if which.is_none() {
                        "an admin command"
                    } else {
                        "an I/O command"
                    },
                    ms: self.cfg.timeout.as_millis(),
                });
            }
        }
    }

    /// Sends a Keep Alive.
    pub fn keep_alive(&mut self) -> Result<(), HostError> {
        self.admin_cmd("Keep Alive", Command::keep_alive(), Dir::None, &[], &mut [])?;
        self.last_keep_alive = Instant::now();
        Ok(())
    }

    /// What a host does now and then while it drives its I/O queues: the
    /// CM's MADs and timers, and a Keep Alive every half keep-alive timeout
    /// (Linux's `nvme_keep_alive_work` cadence), sent without waiting for
    /// it: its completion is taken by a later call.
    pub fn tick(&mut self, now: Instant) -> Result<(), HostError> {
        self.service(now)?;
        self.done.clear();
        self.admin.poll(&mut self.done)?;
        for d in &self.done {
            if Some(d.cid) == self.keep_alive_cid.take() && d.cqe.status != Status::SUCCESS {
                return Err(HostError::Status {
                    what: "Keep Alive",
                    status: d.cqe.status,
                });
            }
        }
        let half = Duration::from_millis(u64::from(self.cfg.kato_ms) / 2);
        if self.cfg.kato_ms > 0
            && self.keep_alive_cid.is_none()
            && now.duration_since(self.last_keep_alive) >= half
        {
            let mut sqe = Command::keep_alive().0;
            self.keep_alive_cid = self.admin.submit(&mut sqe, Dir::None, 0, &[])?;
            self.last_keep_alive = now;
        }
        Ok(())
    }

    /// Shuts the controller down (CC.SHN) and disconnects every queue.
    pub fn disconnect(mut self) -> Result<(), HostError> {
        let cc = CC_ENABLE
            | CC_SHN_NORMAL
            | u32::from(NVM_IOSQES) << CC_IOSQES_SHIFT
            | u32::from(NVM_IOCQES) << CC_IOCQES_SHIFT;
        let set = Command::property_set(REG_CC, cc);
        let _ = self.admin_cmd("Property Set CC", set, Dir::None, &[], &mut []);
        let now = Instant::now();
        let mut open: Vec<ConnId> = std::mem::take(&mut self.conns);
        for &id in &open {
            let _ = self.cm.disconnect(now, id, &[]);
        }
        // Each connection is down at its DREP (or when the DREQ's retries
        // run out, which the deadline cuts short).
        let deadline = now + self.cfg.timeout.min(Duration::from_secs(1));
        while !open.is_empty() && Instant::now() < deadline {
            self.service(Instant::now())?;
            while let Some(ev) = self.cm.pop_event() {
                if let Event::Disconnected { id } | Event::TimedOut { id } = ev {
                    open.retain(|&c| c != id);
                }
            }
            std::hint::spin_loop();
        }
        for q in &self.io {
            q.kill();
        }
        self.admin.kill();
        Ok(())
    }
}
