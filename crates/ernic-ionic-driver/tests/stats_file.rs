//! The stats file after a known workload through the guest driver: exactly
//! 7 RDMA WRITEs of 4096 bytes, 3 SENDs of 100 bytes and 2 READs of 512
//! bytes between two RC QPs of one device, and the file's `device` and `qp`
//! groups hold those exact counts, value for value what the driver reads
//! as `hw_counters` (STATS_HDRS/STATS_VALS) under the same names.

use std::time::Duration;

use ernic_core::Counter;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::profile;
use ernic_verbs::*;

mod common;

const T: Duration = Duration::from_secs(5);

fn one(cq: &Cq) -> Wc {
    let wc = cq.wait_one(T).unwrap().expect("a completion in time");
    assert_eq!(wc.status, WcStatus::Success, "{wc:?}");
    wc
}

#[test]
fn the_stats_file_holds_the_exact_counts_of_a_known_workload() {
    let dir = std::env::temp_dir().join(format!("ernic-drv-stats-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stats = dir.join("stats.json");
    let _ = std::fs::remove_file(&stats);
    let id = profile::load("shared-doorbells").unwrap();
    let f = IonicFunction::new(id)
        .with_shared_doorbells()
        .unwrap()
        .with_stats_file(
            stats.clone(),
            Duration::from_millis(10),
            Box::new(|f| f.stats_doc(&ernic_ops::Instance::this_process("stats-test", Some("t")))),
        );
    let sock = common::serve_function("stats-file", f);
    let dev = ernic_ionic_driver::provider::open(&sock, 32 << 20, None).unwrap();

    let pd = dev.alloc_pd().unwrap();
    let (scq, rcq) = (dev.create_cq(64).unwrap(), dev.create_cq(64).unwrap());
    let caps = QpCaps {
        max_send_wr: 32,
        max_recv_wr: 32,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let x = pd.create_qp(QpType::Rc, &scq, &rcq, caps).unwrap();
    let y = pd.create_qp(QpType::Rc, &scq, &rcq, caps).unwrap();
    x.connect(dev.gid(), y.qpn(), Access::ALL).unwrap();
    y.connect(dev.gid(), x.qpn(), Access::ALL).unwrap();
    let mr = pd.reg_mr(256 << 10, Access::ALL).unwrap();

    for i in 0..7u64 {
        let sge = [mr.sge(0, 4096).unwrap()];
        let to = mr.remote(0x10000 + 4096 * i as usize).unwrap();
        x.post_send(&SendWr::new(i, SendOp::Write(to)).sgl(&sge))
            .unwrap();
        one(&scq);
    }
    for i in 0..3u64 {
        y.post_recv(100 + i, &[mr.sge(0x20000 + 256 * i as usize, 256).unwrap()])
            .unwrap();
        let sge = [mr.sge(0, 100).unwrap()];
        x.post_send(&SendWr::new(10 + i, SendOp::Send).sgl(&sge))
            .unwrap();
        one(&scq);
        one(&rcq);
    }
    for i in 0..2u64 {
        let sge = [mr.sge(0x30000 + 512 * i as usize, 512).unwrap()];
        let from = mr.remote(0x10000).unwrap();
        x.post_send(&SendWr::new(20 + i, SendOp::Read(from)).sgl(&sge))
            .unwrap();
        one(&scq);
    }

    // The driver's own read of hw_counters.
    let hw = dev.counters();
    let want = [
        (Counter::RdmaWrites, 7),
        (Counter::RdmaSends, 3),
        (Counter::RdmaReads, 2),
        (Counter::RdmaRecvs, 3),
        (Counter::RxWriteRequests, 7),
        (Counter::RxReadRequests, 2),
        (Counter::ReqCqeSuccess, 12),
        (Counter::RespCqeSuccess, 3),
        (Counter::ReqCqeError, 0),
    ];
    for (c, n) in want {
        assert_eq!(hw.get(c), n, "hw_counters {}", c.name());
    }

    // The file, once it has caught up, says the same, value for value.
    let doc = common::within("the workload in the stats file", || {
        let doc = ernic_ops::read_stats(&stats).ok()?;
        (doc.counter("device", &[], "req_cqe_success") == Some(12)).then_some(doc)
    });
    assert_eq!(doc.instance.name, "t");
    for c in Counter::ALL {
        assert_eq!(
            doc.counter("device", &[], c.name()),
            Some(hw.get(c)),
            "device {}",
            c.name()
        );
    }
    let xq = x.qpn().0.to_string();
    let of_x = |name: &str| doc.counter("qp", &[("qpn", &xq)], name);
    assert_eq!(of_x("req_tx_writes"), Some(7));
    assert_eq!(of_x("req_tx_sends"), Some(3));
    assert_eq!(of_x("req_tx_reads"), Some(2));
    assert_eq!(of_x("req_bytes"), Some(7 * 4096 + 3 * 100 + 2 * 512));
    let trapped = doc.counter("ionic", &[], "doorbells_trapped").unwrap();
    let shared = doc.counter("ionic", &[], "doorbells_shared").unwrap();
    assert!(
        shared > 0,
        "the data path's doorbells come through the shared page"
    );
    assert!(trapped > 0, "the admin queue's doorbells are trapped");

    // The admin commands by opcode and status: the two CREATE_QPs and
    // two CREATE_CQs succeeded, and the groups add up to the total.
    let admin = |cmd: &str| doc.counter("admin", &[("command", cmd), ("status", "0")], "commands");
    assert_eq!(admin("create_qp"), Some(2));
    assert_eq!(admin("create_cq"), Some(2));
    let op = ernic_ionic::fw::admin_op::CREATE_QP.to_string();
    assert_eq!(
        doc.counter("admin", &[("opcode", &op)], "commands"),
        Some(2)
    );
    let by_op: u64 = doc
        .groups
        .iter()
        .filter(|g| g.kind == "admin")
        .map(|g| g.counters["commands"])
        .sum();
    assert_eq!(
        Some(by_op),
        doc.counter("ionic", &[], "rdma_admin_commands"),
        "{:?}",
        doc.groups
            .iter()
            .filter(|g| g.kind == "admin")
            .collect::<Vec<_>>()
    );
    // The admin queue's completions are signalled through its event
    // queue's vector (the driver re-arms it; several may share one).
    let interrupts = doc.counter("ionic", &[], "interrupts").unwrap();
    assert!(interrupts > 0, "{interrupts} interrupts");
}
