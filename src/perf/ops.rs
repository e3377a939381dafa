//! `ernic perf --stats-file PATH --inject SPEC`: the stats file
//! (`ernic-stats/1`) of this process's side of the test, written about once
//! a second by a thread and once more at the end: for each device the run
//! opened (labels `gid`, `side` client or server) its counters, and its
//! QP's (labels `qpn`, `side`), so a run of N writes of S bytes shows
//! `req_tx_writes` N and `req_bytes` N×S on the writer and
//! `resp_rx_writes` N on the target; and the faults `--inject` armed.
//!
//! The engine's events (`send_err`, `recv_err`) fire where the fabric
//! checks them: [`Ops::engine_config`] is the one place the run's fabrics
//! get their configuration.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use ernic_core::Injector;
use ernic_ops::file::StatsThread;
use ernic_ops::schema::{FaultStat, Group, Instance, StatsDoc};
use ernic_verbs::{Config, Device, Qp};

use super::PerfArgs;

/// A device of the run, its QP, and its side.
type Watched = (&'static str, Device, Qp);

/// The devices and QPs of the run, as they are made.
#[derive(Clone, Default)]
pub struct Watch(Arc<Mutex<Vec<Watched>>>);

impl Watch {
    /// Counts `dev` and `qp` as the run's `side` (client or server).
    pub fn add(&self, side: &'static str, dev: &Device, qp: &Qp) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((side, dev.clone(), qp.clone()));
    }

    fn groups(&self, doc: &mut StatsDoc) {
        for (side, dev, qp) in self.0.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            doc.push(
                Group::new("device")
                    .label("gid", dev.gid())
                    .label("side", side)
                    .core_counters(&dev.counters()),
            );
            if let Ok(c) = qp.counters() {
                doc.push(
                    Group::new("qp")
                        .label("qpn", qp.qpn().0)
                        .label("side", side)
                        .core_counters(&c),
                );
            }
        }
    }
}

/// What `--stats-file` and `--inject` started.
pub struct Ops {
    /// Where the run registers what it makes.
    pub watch: Watch,
    injector: Option<Arc<Injector>>,
    thread: Option<StatsThread>,
}

impl Ops {
    /// Arms the faults and starts the stats file's thread, as `a` asks.
    pub fn start(a: &PerfArgs) -> Result<Ops> {
        let injector = match &a.inject {
            Some(spec) => Some(Arc::new(
                Injector::parse(spec).map_err(|e| anyhow!("--inject {spec}: {e}"))?,
            )),
            None => None,
        };
        let watch = Watch::default();
        let thread = match &a.stats_file {
            Some(path) => {
                ernic_ops::file::check_writable(path).map_err(|e| anyhow!("--stats-file: {e}"))?;
                let instance = Instance::this_process("ernic perf", None);
                let (w, i) = (watch.clone(), injector.clone());
                Some(
                    StatsThread::spawn(path.clone(), Duration::from_secs(1), move || {
                        let mut doc = StatsDoc::new(&instance);
                        w.groups(&mut doc);
                        if let Some(i) = &i {
                            doc.faults = FaultStat::all(i);
                        }
                        doc
                    })
                    .context("starting the stats file's thread")?,
                )
            }
            None => None,
        };
        Ok(Ops {
            watch,
            injector,
            thread,
        })
    }

    /// The configuration of the run's fabrics.
    pub fn engine_config(&self) -> Config {
        // The engine counts send_err and recv_err on the armed faults.
        Config {
            injector: self.injector.clone(),
            ..Config::default()
        }
    }

    /// Writes the last document (the run's final counts) and stops.
    pub fn finish(self) {
        if let Some(t) = self.thread {
            t.finish();
        }
    }
}
