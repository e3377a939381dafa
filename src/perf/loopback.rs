//! Both sides of a perf test in one process: two devices on the loopback
//! fabric, a thread each, a `Barrier` for the out-of-band channel.

use std::sync::Barrier;
use std::sync::mpsc;

use anyhow::{Result, anyhow};
use ernic_verbs::{Access, Fabric};

use super::ops::Ops;
use super::report::Row;
use super::tests::{self, Measure, Side};
use super::{Oob, Plan, baseline};

impl Oob for Barrier {
    fn barrier(&self) -> Result<()> {
        self.wait();
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
    let (client, server) = sides(plan, ops)?;
    let oob = Barrier::new(2);
    let (tx, rx) = mpsc::channel::<Result<Row>>();
    std::thread::scope(|scope| -> Result<()> {
        let oob = &oob;
        // The server's own direction of a bidirectional run, per size.
        let (mtx, mrx) = mpsc::channel::<Measure>();
        let srv = scope.spawn(move || -> Result<()> {
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
