//! Both sides of a perf test in one process: two devices on the loopback
//! fabric, a thread each, a [`Meet`] for the out-of-band channel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};

use anyhow::{Result, anyhow};
use ernic_verbs::{Access, Fabric};

use super::ops::Ops;
use super::report::Row;
use super::tests::{self, Measure, Side};
use super::{Oob, Plan, baseline};

/// A barrier of the two sides that one of them can call off: when a side
/// fails it says so, and the other, waiting at a barrier or coming to one,
/// stops with that reason at once instead of waiting for ever.
struct Meet {
    state: Mutex<MeetState>,
    turn: Condvar,
    /// The sides' [`Side::peer_failed`], for their waits on the fabric.
    peer_failed: Arc<AtomicBool>,
}

#[derive(Default)]
struct MeetState {
    /// Sides waiting at the current barrier (0 or 1).
    waiting: u32,
    /// Barriers passed.
    generation: u64,
    /// Why a side stopped, once one has.
    failed: Option<String>,
}

impl Meet {
    /// Calls the run off: every barrier from now on fails with `why`.
    fn fail(&self, why: &str) {
        self.peer_failed.store(true, Ordering::Relaxed);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.failed.get_or_insert_with(|| why.to_string());
        self.turn.notify_all();
    }
}

impl Oob for Meet {
    fn barrier(&self) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = &st.failed {
            return Err(anyhow!("the other side stopped: {why}"));
        }
        if st.waiting == 1 {
            st.waiting = 0;
            st.generation += 1;
            self.turn.notify_all();
            return Ok(());
        }
        st.waiting = 1;
        let mine = st.generation;
        while st.generation == mine {
            if let Some(why) = &st.failed {
                return Err(anyhow!("the other side stopped: {why}"));
            }
            st = self.turn.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        Ok(())
    }
}

/// Builds one connected side pair on a fresh fabric.
fn sides(plan: &Plan, ops: &Ops) -> Result<(Side, Side)> {
    let fabric = Fabric::with_config(ops.engine_config());
    let max = *plan.sizes.iter().max().expect("at least one size") as usize;
    let a = fabric.open_device("::ffff:10.0.0.1".parse().expect("literal GID"))?;
    let b = fabric.open_device("::ffff:10.0.0.2".parse().expect("literal GID"))?;
    let mut sa = Side::build(&a, max, plan.tx_depth)?;
    let mut sb = Side::build(&b, max, plan.tx_depth)?;
    ops.watch.add("client", &a, &sa.qp);
    ops.watch.add("server", &b, &sb.qp);
    sa.qp.connect(b.gid(), sb.qp.qpn(), Access::ALL)?;
    sb.qp.connect(a.gid(), sa.qp.qpn(), Access::ALL)?;
    sa.remote = sb.target()?;
    sb.remote = sa.target()?;
    Ok((sa, sb))
}

/// Runs the plan, handing each size's row to `emit` as soon as it is measured.
pub fn run(plan: &Plan, with_baseline: bool, ops: &Ops, emit: &mut dyn FnMut(Row)) -> Result<()> {
    let (client, mut server) = sides(plan, ops)?;
    server.peer_failed = client.peer_failed.clone();
    let oob = Meet {
        state: Mutex::default(),
        turn: Condvar::new(),
        peer_failed: client.peer_failed.clone(),
    };
    let (tx, rx) = mpsc::channel::<Result<Row>>();
    std::thread::scope(|scope| -> Result<()> {
        let oob = &oob;
        // The server's own direction of a bidirectional run, per size.
        let (mtx, mrx) = mpsc::channel::<Measure>();
        let srv = scope.spawn(move || -> Result<()> {
            let r = (|| {
                for &size in &plan.sizes {
                    let (t, d, b) = (plan.test, plan.tx_depth, plan.bidir);
                    if let Some(m) = tests::server(t, &server, size, plan.iters, d, b, oob)? {
                        let _ = mtx.send(m);
                    }
                    if with_baseline {
                        oob.barrier()?; // the client measures its baseline meanwhile
                    }
                }
                Ok(())
            })();
            if let Err(e) = &r {
                oob.fail(&format!("{e:#}"));
            }
            r
        });
        let cli = scope.spawn(move || {
            for &size in &plan.sizes {
                let (t, d, b) = (plan.test, plan.tx_depth, plan.bidir);
                let r = tests::client(t, &client, size, plan.iters, d, b, oob).and_then(|m| {
                    if !b {
                        return Ok(m);
                    }
                    let theirs = mrx.recv().map_err(|_| anyhow!("the server side stopped"))?;
                    Ok(m.plus(&theirs))
                });
                let failed = r.is_err();
                if let Err(e) = &r {
                    oob.fail(&format!("{e:#}"));
                }
                let row = r.map(|m| {
                    let base = with_baseline.then(|| {
                        if plan.test.is_bw() {
                            baseline::memcpy_bw(size, plan.iters)
                        } else {
                            baseline::thread_pingpong_us(plan.iters.max(1000))
                        }
                    });
                    Row::new(plan.test, size, plan.iters, m, base)
                });
                if with_baseline && !failed {
                    let _ = oob.barrier();
                }
                let _ = tx.send(row);
                if failed {
                    break;
                }
            }
        });
        for row in rx.iter() {
            emit(row?);
        }
        cli.join()
            .map_err(|_| anyhow!("the client thread panicked"))?;
        srv.join()
            .map_err(|_| anyhow!("the server thread panicked"))??;
        Ok(())
    })
}
