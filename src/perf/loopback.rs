//! Both sides of a perf test in one process: two devices on the loopback
//! fabric, a thread each, a `Barrier` for the out-of-band channel.

use std::sync::Barrier;
use std::sync::mpsc;

use anyhow::{Context, Result, anyhow};
use ernic_verbs::{Access, Fabric, QpCaps, QpType};

use super::report::Row;
use super::tests::{self, Side};
use super::{Oob, Plan, baseline};

impl Oob for Barrier {
    fn barrier(&self) {
        self.wait();
    }
}

/// Builds one connected side pair on a fresh fabric.
fn sides(plan: &Plan) -> Result<(Side, Side)> {
    let fabric = Fabric::new();
    let max = *plan.sizes.iter().max().expect("at least one size") as usize;
    let gids = ["::ffff:10.0.0.1", "::ffff:10.0.0.2"];
    let mut devs = Vec::new();
    for g in gids {
        let dev = fabric.open_device(g.parse().expect("literal GID"))?;
        let pd = dev.alloc_pd()?;
        let scq = dev.create_cq(plan.tx_depth * 2 + 64)?;
        let rcq = dev.create_cq(tests::RX_DEPTH * 2)?;
        let caps = QpCaps {
            max_send_wr: plan.tx_depth.max(16),
            max_recv_wr: tests::RX_DEPTH,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = pd.create_qp(QpType::Rc, &scq, &rcq, caps)?;
        let mr = pd
            .reg_mr(2 * max, Access::ALL)
            .with_context(|| format!("registering two {max}-byte buffers"))?;
        devs.push((dev, qp, scq, rcq, mr));
    }
    let access = Access::ALL;
    let (b, a) = (devs.pop().expect("two"), devs.pop().expect("two"));
    a.1.connect(b.0.gid(), b.1.qpn(), access)?;
    b.1.connect(a.0.gid(), a.1.qpn(), access)?;
    let side = |me: (_, ernic_verbs::Qp, _, _, ernic_verbs::Mr),
                peer_mr: &ernic_verbs::Mr|
     -> Result<Side> {
        let remote = peer_mr.remote(max)?;
        Ok(Side {
            qp: me.1,
            scq: me.2,
            rcq: me.3,
            mr: me.4,
            half: max,
            remote,
        })
    };
    let (a_mr, b_mr) = (a.4.clone(), b.4.clone());
    Ok((side(a, &b_mr)?, side(b, &a_mr)?))
}

/// Runs the plan, handing each size's row to `emit` as soon as it is measured.
pub fn run(plan: &Plan, with_baseline: bool, emit: &mut dyn FnMut(Row)) -> Result<()> {
    let (client, server) = sides(plan)?;
    let oob = Barrier::new(2);
    let (tx, rx) = mpsc::channel::<Result<Row>>();
    std::thread::scope(|scope| -> Result<()> {
        let oob = &oob;
        let srv = scope.spawn(move || -> Result<()> {
            for &size in &plan.sizes {
                tests::server(plan.test, &server, size, plan.iters, oob)?;
                if with_baseline {
                    oob.barrier(); // the client measures its baseline meanwhile
                }
            }
            Ok(())
        });
        let cli = scope.spawn(move || {
            for &size in &plan.sizes {
                let r = tests::client(plan.test, &client, size, plan.iters, plan.tx_depth, oob);
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
                    oob.barrier();
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
