//! The switch: v1model's packet flow as bmv2's `simple_switch` runs it
//! (`simple_switch.cpp`), one packet at a time on the caller's thread.
//!
//! Ingress: reset the PHV, set `ingress_port`, `packet_length`,
//! `instance_type`; parse (errors go to `parser_error`); verify checksums;
//! the ingress pipeline. Then, in bmv2's order: an ingress clone to its
//! mirroring session's port (the packet as received, re-parsed, with the
//! clone's field list), a digest, a resubmit (the packet as received, back
//! to ingress with its field list; the original goes no further), a
//! multicast group's replicas, the drop port (511), or egress on
//! `egress_spec`. Egress: `egress_port` set, `egress_spec` preset to the
//! drop port plus one, the egress pipeline, an egress clone, the drop port,
//! checksum update and deparse, then a recirculate (the deparsed packet
//! back to ingress) or the output. A packet and all its copies pass through
//! ingress at most [`limits::MAX_PASSES`] times and make at most
//! [`MAX_COPIES`] outputs, so no program can make a packet loop.

use std::collections::VecDeque;

use crate::program::{Node, Program, limits};

use super::action::{preserve, set_std};
use super::eval::{Scope, eval};
use super::hash;
use super::packet::{self, calc_bytes};
use super::phv::{ExecError, Phv};
use super::state::State;

/// Port 511: `egress_spec` set to it drops the packet (bmv2's default
/// drop port).
pub const DROP_PORT: u32 = 511;

/// Output buffers kept for reuse ([`Switch::recycle`]).
const POOL: usize = 64;

/// Outputs one input packet may make (clones and replicas included).
pub const MAX_COPIES: usize = 1024;

/// `instance_type` values (v1model).
pub mod instance {
    /// A packet from a port.
    pub const NORMAL: u32 = 0;
    /// An ingress clone.
    pub const INGRESS_CLONE: u32 = 1;
    /// An egress clone.
    pub const EGRESS_CLONE: u32 = 2;
    /// A recirculated packet.
    pub const RECIRC: u32 = 4;
    /// A multicast replica.
    pub const REPLICATION: u32 = 5;
    /// A resubmitted packet.
    pub const RESUBMIT: u32 = 6;
}

/// A packet out of the switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The egress port.
    pub port: u32,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Extern functions a target provides (`ernic_*` primitives).
pub trait Externs: Send {
    /// Runs extern `name` with its evaluated arguments.
    fn call(&mut self, name: &str, args: &[i128]) -> Result<(), String>;
}

/// What the current packet asked for besides its headers.
#[derive(Default)]
pub(crate) struct PacketCtx {
    pub(crate) clone: Option<(u32, u32)>,
    pub(crate) resubmit: Option<u32>,
    pub(crate) recirculate: Option<u32>,
    pub(crate) digest: Option<u32>,
    pub(crate) truncate: Option<usize>,
    pub(crate) exit: bool,
    pub(crate) length: i64,
    pub(crate) now_ns: u64,
    pub(crate) args: Vec<i128>,
}

/// A packet waiting for ingress or egress.
enum Job {
    Ingress {
        data: Vec<u8>,
        port: u32,
        instance: u32,
        preserved: Vec<(u32, u128)>,
        passes: u32,
    },
    Egress {
        phv: Box<Phv>,
        payload: Vec<u8>,
        port: u32,
        instance: u32,
        rid: Option<u32>,
        length: i64,
        passes: u32,
    },
    /// An ingress clone: the packet as received, parsed again, to egress.
    Clone {
        data: Vec<u8>,
        in_port: u32,
        port: u32,
        preserved: Vec<(u32, u128)>,
        passes: u32,
    },
}

/// A loaded program and its state: the engine's unit.
pub struct Switch {
    /// The program.
    pub program: Program,
    /// Its run-time state.
    pub state: State,
    pub(super) phv: Phv,
    pub(super) key: Vec<u8>,
    pub(super) buf: Vec<u8>,
    jobs: VecDeque<Job>,
    pub(super) externs: Option<Box<dyn Externs>>,
    default_egress: Vec<(u32, u32)>,
    pool: Vec<Vec<u8>>,
}

impl Switch {
    /// A switch running `program`, with const entries and default entries
    /// as the file gives them.
    pub fn new(program: Program) -> Switch {
        let state = State::new(&program);
        let phv = Phv::new(&program);
        Switch {
            program,
            state,
            phv,
            key: Vec::new(),
            buf: Vec::new(),
            jobs: VecDeque::new(),
            externs: None,
            default_egress: Vec::new(),
            pool: Vec::new(),
        }
    }

    /// Presets `egress_spec` for packets from some ports: `(ingress port,
    /// egress_spec)` pairs. simple_switch presets 0; ernic's device presets
    /// the other side, so a program that leaves it alone passes frames
    /// through ([`crate::target`]).
    pub fn set_default_egress(&mut self, map: Vec<(u32, u32)>) {
        self.default_egress = map;
    }

    /// Takes back the buffers of `out` (emptying it) for the next packets'
    /// outputs, so a caller that recycles allocates nothing per packet.
    pub fn recycle(&mut self, out: &mut Vec<Output>) {
        for o in out.drain(..) {
            if self.pool.len() < POOL {
                self.pool.push(o.data);
            }
        }
    }

    /// Installs the target's extern functions.
    pub fn set_externs(&mut self, e: Box<dyn Externs>) {
        self.externs = Some(e);
    }

    /// Runs one packet arriving on `port` at time `now_ns`, appending what
    /// leaves the switch to `out`. A packet whose processing fails (an
    /// out-of-bounds index, a false assertion) is dropped and counted in
    /// `state.errors`, with the reason in the log.
    pub fn process(&mut self, port: u32, data: &[u8], now_ns: u64, out: &mut Vec<Output>) {
        let mut made = 0usize;
        if let Err(e) = self.ingress(data, port, instance::NORMAL, &[], 1, now_ns, out, &mut made) {
            self.state.errors += 1;
            self.state.log(format!("packet dropped: {e}"));
        }
        while let Some(job) = self.jobs.pop_front() {
            let r = match job {
                Job::Ingress {
                    data,
                    port,
                    instance,
                    preserved,
                    passes,
                } => self.ingress(
                    &data, port, instance, &preserved, passes, now_ns, out, &mut made,
                ),
                Job::Clone {
                    data,
                    in_port,
                    port,
                    preserved,
                    passes,
                } => self.clone_to_egress(
                    &data, in_port, port, &preserved, passes, now_ns, out, &mut made,
                ),
                Job::Egress {
                    phv,
                    payload,
                    port,
                    instance,
                    rid,
                    length,
                    passes,
                } => {
                    self.phv = *phv;
                    let mut pc = PacketCtx {
                        length,
                        now_ns,
                        ..Default::default()
                    };
                    self.egress(
                        &mut pc, &payload, port, instance, rid, passes, out, &mut made,
                    )
                }
            };
            if let Err(e) = r {
                self.state.errors += 1;
                self.state.log(format!("packet dropped: {e}"));
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ingress(
        &mut self,
        data: &[u8],
        port: u32,
        inst: u32,
        preserved: &[(u32, u128)],
        passes: u32,
        now_ns: u64,
        out: &mut Vec<Output>,
        made: &mut usize,
    ) -> Result<(), ExecError> {
        self.phv.reset(&self.program);
        for &(f, v) in preserved {
            self.phv.vals[f as usize] = v;
        }
        let sf = self.program.std;
        let p = &self.program;
        let set = |phv: &mut Phv, f: Option<u32>, v: i128| set_std(p, phv, f, v);
        if inst == instance::NORMAL {
            set(&mut self.phv, sf.ingress_port, i128::from(port));
            if let Some(&(_, e)) = self.default_egress.iter().find(|d| d.0 == port) {
                set(&mut self.phv, sf.egress_spec, i128::from(e));
            }
        }
        set(&mut self.phv, sf.packet_length, data.len() as i128);
        set(&mut self.phv, sf.instance_type, i128::from(inst));
        set(
            &mut self.phv,
            sf.ingress_global_timestamp,
            i128::from(now_ns / 1000),
        );
        let mut pc = PacketCtx {
            length: data.len() as i64,
            now_ns,
            ..Default::default()
        };
        let (payload_at, err) = packet::parse(
            p,
            &mut self.phv,
            &mut self.state,
            &mut pc,
            data,
            &mut self.key,
        )?;
        if let Some(e) = err {
            set(&mut self.phv, sf.parser_error, i128::from(e));
        }
        if self.verify_checksums(&data[payload_at..])? {
            set_std(&self.program, &mut self.phv, sf.checksum_error, 1);
        }
        let init = self.program.ingress.init;
        self.run_pipeline(init, &mut pc)?;
        let p = &self.program;
        let egress_spec = sf.egress_spec.map_or(0, |f| self.phv.get(p, f));
        if let Some((session, fl)) = pc.clone.take() {
            if let Some(&mport) = self.state.mirrors.get(&session) {
                // The packet as received, parsed afresh, with the field list.
                let kept = preserve(p, &self.phv, fl);
                self.jobs.push_back(Job::Clone {
                    data: data.to_vec(),
                    in_port: port,
                    port: mport,
                    preserved: kept,
                    passes,
                });
            }
        }
        if let Some(d) = pc.digest.take() {
            let fields = p
                .learn_lists
                .iter()
                .find(|l| l.id == d)
                .map(|l| l.fields.clone())
                .unwrap_or_default();
            let vals: Vec<String> = fields
                .iter()
                .map(|&f| format!("{:#x}", self.phv.vals[f as usize]))
                .collect();
            self.state.log(format!("digest {d}: {}", vals.join(" ")));
        }
        if let Some(fl) = pc.resubmit.take() {
            if passes < limits::MAX_PASSES {
                let kept = preserve(p, &self.phv, fl);
                self.jobs.push_front(Job::Ingress {
                    data: data.to_vec(),
                    port,
                    instance: instance::RESUBMIT,
                    preserved: kept,
                    passes: passes + 1,
                });
            } else {
                self.state
                    .log(format!("resubmit dropped after {passes} passes"));
            }
            return Ok(());
        }
        let mgid = sf.mcast_grp.map_or(0, |f| self.phv.get(p, f));
        let payload = &data[payload_at..];
        if mgid != 0 {
            let replicas = self.state.replicas(mgid as u32);
            for (eport, rid) in replicas {
                self.jobs.push_back(Job::Egress {
                    phv: Box::new(self.phv.clone()),
                    payload: payload.to_vec(),
                    port: eport,
                    instance: instance::REPLICATION,
                    rid: Some(rid),
                    length: pc.length,
                    passes,
                });
            }
            return Ok(());
        }
        if egress_spec == i128::from(DROP_PORT) {
            return Ok(());
        }
        let eport = u32::try_from(egress_spec).unwrap_or(DROP_PORT);
        let mut epc = PacketCtx {
            length: pc.length,
            now_ns,
            ..Default::default()
        };
        self.egress(
            &mut epc,
            payload,
            eport,
            instance::NORMAL,
            None,
            passes,
            out,
            made,
        )
    }

    /// bmv2's ingress clone: the packet as it arrived, parsed afresh, its
    /// metadata reset but for the clone's field list.
    #[allow(clippy::too_many_arguments)]
    fn clone_to_egress(
        &mut self,
        data: &[u8],
        in_port: u32,
        port: u32,
        preserved: &[(u32, u128)],
        passes: u32,
        now_ns: u64,
        out: &mut Vec<Output>,
        made: &mut usize,
    ) -> Result<(), ExecError> {
        self.phv.reset(&self.program);
        let sf = self.program.std;
        set_std(
            &self.program,
            &mut self.phv,
            sf.ingress_port,
            i128::from(in_port),
        );
        let mut pc = PacketCtx {
            length: data.len() as i64,
            now_ns,
            ..Default::default()
        };
        let (payload_at, _) = packet::parse(
            &self.program,
            &mut self.phv,
            &mut self.state,
            &mut pc,
            data,
            &mut self.key,
        )?;
        self.phv.reset_metadata(&self.program);
        for &(f, v) in preserved {
            self.phv.vals[f as usize] = v;
        }
        let payload = data[payload_at..].to_vec();
        let mut epc = PacketCtx {
            length: data.len() as i64,
            now_ns,
            ..Default::default()
        };
        self.egress(
            &mut epc,
            &payload,
            port,
            instance::INGRESS_CLONE,
            None,
            passes,
            out,
            made,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn egress(
        &mut self,
        pc: &mut PacketCtx,
        payload: &[u8],
        port: u32,
        inst: u32,
        rid: Option<u32>,
        passes: u32,
        out: &mut Vec<Output>,
        made: &mut usize,
    ) -> Result<(), ExecError> {
        let p = &self.program;
        let sf = p.std;
        let set = |phv: &mut Phv, f: Option<u32>, v: i128| set_std(p, phv, f, v);
        set(&mut self.phv, sf.instance_type, i128::from(inst));
        if let Some(r) = rid {
            set(&mut self.phv, sf.egress_rid, i128::from(r));
        }
        set(&mut self.phv, sf.egress_port, i128::from(port));
        set(&mut self.phv, sf.egress_spec, i128::from(DROP_PORT + 1));
        set(&mut self.phv, sf.packet_length, i128::from(pc.length));
        set(
            &mut self.phv,
            sf.egress_global_timestamp,
            i128::from(pc.now_ns / 1000),
        );
        let init = p.egress.init;
        self.run_pipeline(init, pc)?;
        let p = &self.program;
        if let Some((session, fl)) = pc.clone.take() {
            if let Some(&mport) = self.state.mirrors.get(&session) {
                let mut copy = self.phv.clone();
                copy.reset_metadata(p);
                for (f, v) in preserve(p, &self.phv, fl) {
                    copy.vals[f as usize] = v;
                }
                self.jobs.push_back(Job::Egress {
                    phv: Box::new(copy),
                    payload: payload.to_vec(),
                    port: mport,
                    instance: instance::EGRESS_CLONE,
                    rid: None,
                    length: pc.length,
                    passes,
                });
            }
        }
        let spec = sf.egress_spec.map_or(0, |f| self.phv.get(p, f));
        if spec == i128::from(DROP_PORT) {
            return Ok(());
        }
        let mut data = self.pool.pop().unwrap_or_default();
        data.clear();
        self.deparse(payload, &mut data)?;
        if let Some(n) = pc.truncate {
            data.truncate(n);
        }
        if let Some(fl) = pc.recirculate.take() {
            if passes < limits::MAX_PASSES {
                let kept = preserve(&self.program, &self.phv, fl);
                self.jobs.push_front(Job::Ingress {
                    data,
                    port,
                    instance: instance::RECIRC,
                    preserved: kept,
                    passes: passes + 1,
                });
            } else {
                self.state
                    .log(format!("recirculate dropped after {passes} passes"));
            }
            return Ok(());
        }
        if *made >= MAX_COPIES {
            self.state
                .log("output dropped: too many copies of one packet".into());
            return Ok(());
        }
        *made += 1;
        out.push(Output { port, data });
        Ok(())
    }

    /// Checksum `c`'s value now, or `None` when its condition is false or
    /// its target's header is invalid (then it is neither verified nor
    /// updated).
    fn checksum(&mut self, c: usize, payload: &[u8]) -> Result<Option<u128>, ExecError> {
        let p = &self.program;
        let ck = &p.checksums[c];
        if let Some(cond) = &ck.cond {
            if eval(p, &self.phv, &self.state, Scope::NONE, cond)? == 0 {
                return Ok(None);
            }
        }
        let target = &p.fields[ck.target as usize];
        if !self.phv.valid[target.header as usize] {
            return Ok(None);
        }
        let calc = &p.calculations[ck.calc as usize];
        calc_bytes(p, &self.phv, &calc.inputs, payload, &mut self.buf);
        let v = hash::hash(
            calc.algo,
            &self.buf,
            &mut self.state.round_robin[ck.calc as usize],
        );
        Ok(Some(u128::from(v) & target.mask()))
    }

    fn verify_checksums(&mut self, payload: &[u8]) -> Result<bool, ExecError> {
        let mut bad = false;
        for c in 0..self.program.checksums.len() {
            if !self.program.checksums[c].verify {
                continue;
            }
            if let Some(v) = self.checksum(c, payload)? {
                bad |= v != self.phv.vals[self.program.checksums[c].target as usize];
            }
        }
        Ok(bad)
    }

    fn deparse(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), ExecError> {
        for c in 0..self.program.checksums.len() {
            if !self.program.checksums[c].update {
                continue;
            }
            if let Some(v) = self.checksum(c, payload)? {
                self.phv.vals[self.program.checksums[c].target as usize] = v;
            }
        }
        let p = &self.program;
        for &h in &p.deparser.order {
            if self.phv.valid[h as usize] {
                packet::emit(p, &self.phv, h, out);
            }
        }
        out.extend_from_slice(payload);
        Ok(())
    }

    fn run_pipeline(&mut self, init: Option<Node>, pc: &mut PacketCtx) -> Result<(), ExecError> {
        let mut node = init;
        pc.exit = false;
        while let Some(n) = node {
            if pc.exit {
                break;
            }
            node = match n {
                Node::Cond(c) => {
                    let c = &self.program.conditionals[c as usize];
                    if eval(&self.program, &self.phv, &self.state, Scope::NONE, &c.expr)? != 0 {
                        c.t
                    } else {
                        c.f
                    }
                }
                Node::Call(a) => {
                    let (action, next) = self.program.action_calls[a as usize];
                    self.run_action(action, &[], pc)?;
                    next
                }
                Node::Table(t) => self.apply_table(t, pc)?,
            };
        }
        pc.exit = false;
        Ok(())
    }
}
