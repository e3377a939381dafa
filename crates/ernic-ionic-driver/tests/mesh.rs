//! Two ernic-servers (in this process) joined by a real TCP mesh, a
//! userspace driver on each: RC QPs of the two "guests" connect through
//! the mesh and move data both ways — SEND, WRITE, READ, fetch-and-add.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ernic_core::{Completion, Gid, SendOp, SendWr, WcOpcode, WcStatus};
use ernic_ionic_driver::{Cq, Driver, Qp};
use ernic_mesh::{Mesh, MeshConfig, Spec};

mod common;

fn serve(name: &str, mesh: Arc<Mesh>, gid: Gid) -> std::path::PathBuf {
    common::serve_on_mesh(&format!("mesh-{name}"), mesh, gid)
}

fn wait(d: &mut Driver, cq: &mut Cq, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    let mut buf = [Completion::EMPTY; 8];
    let end = Instant::now() + Duration::from_secs(10);
    while got.len() < n {
        let k = d.poll_cq(cq, &mut buf);
        got.extend_from_slice(&buf[..k]);
        assert!(Instant::now() < end, "{} of {n} completions", got.len());
    }
    got
}

/// Two servers joined by a mesh (manager a, worker b), a driver on each,
/// an RC QP on each connected to the other.
struct Pair {
    da: Driver,
    db: Driver,
    ca: Cq,
    cb: Cq,
    qa: Qp,
    qb: Qp,
    worker: Arc<Mesh>,
}

fn pair(name: &str) -> Pair {
    let (ga, gb): (Gid, Gid) = (
        "::ffff:10.0.1.1".parse().unwrap(),
        "::ffff:10.0.1.2".parse().unwrap(),
    );
    let manager = Mesh::start(MeshConfig {
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(Spec::Manager { port: 0 })
    })
    .unwrap();
    let port = manager.listen_addr().port();
    let worker = Arc::new(
        Mesh::start(MeshConfig {
            heartbeat: Duration::from_millis(100),
            ..MeshConfig::new(Spec::Worker {
                host: "127.0.0.1".into(),
                port,
            })
        })
        .unwrap(),
    );
    assert!(worker.wait_registered(Duration::from_secs(10)).is_some());
    let pa = serve(&format!("{name}-a"), Arc::new(manager), ga);
    let pb = serve(&format!("{name}-b"), worker.clone(), gb);
    let mut da = Driver::attach(&pa, 4 << 20).unwrap();
    let mut db = Driver::attach(&pb, 4 << 20).unwrap();
    da.set_gid(ga).unwrap();
    db.set_gid(gb).unwrap();
    let (ca, cb) = (da.create_cq(6).unwrap(), db.create_cq(6).unwrap());
    let (qa, qb) = (da.create_qp(&ca, 5).unwrap(), db.create_qp(&cb, 5).unwrap());
    // The peers' GIDs reach each server through the mesh; until then a
    // connected QP cannot name them.
    let end = Instant::now() + Duration::from_secs(10);
    while da.connect_to(&qa, gb, qb.qpn()).is_err() {
        assert!(Instant::now() < end, "server a never learned {gb}");
        std::thread::sleep(Duration::from_millis(20));
    }
    while db.connect_to(&qb, ga, qa.qpn()).is_err() {
        assert!(Instant::now() < end, "server b never learned {ga}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Pair {
        da,
        db,
        ca,
        cb,
        qa,
        qb,
        worker,
    }
}

#[test]
fn qps_of_two_servers_talk_through_the_mesh() {
    let Pair {
        mut da,
        mut db,
        mut ca,
        mut cb,
        mut qa,
        mut qb,
        worker: _worker,
    } = pair("talk");
    let (bufa, bufb) = (da.alloc(64 << 10).unwrap(), db.alloc(64 << 10).unwrap());
    let (ma, mb) = (da.reg_mr(bufa).unwrap(), db.reg_mr(bufb).unwrap());
    let sa = |off: u64, len: u32| ma.sge(off, len);
    let remote_b = |off: u64| mb.remote(off);

    // SEND a to b.
    da.write(&bufa, 0, b"across the mesh");
    db.post_recv(&mut qb, 9, mb.sge(0x1000, 64)).unwrap();
    da.post_send(&mut qa, &SendWr::new(1, SendOp::Send).sgl(&[sa(0, 15)]))
        .unwrap();
    let r = wait(&mut db, &mut cb, 1);
    assert_eq!(
        (r[0].wr_id, r[0].byte_len, r[0].opcode),
        (9, 15, WcOpcode::Recv)
    );
    let s = wait(&mut da, &mut ca, 1);
    assert_eq!((s[0].wr_id, s[0].status), (1, WcStatus::Success));
    let mut got = [0u8; 15];
    db.read(&bufb, 0x1000, &mut got);
    assert_eq!(&got, b"across the mesh");

    // WRITE into b, READ it back, fetch-and-add on b's memory.
    da.post_send(
        &mut qa,
        &SendWr::new(2, SendOp::Write(remote_b(0x2000))).sgl(&[sa(0, 6)]),
    )
    .unwrap();
    da.post_send(
        &mut qa,
        &SendWr::new(3, SendOp::Read(remote_b(0x2000))).sgl(&[sa(0x3000, 6)]),
    )
    .unwrap();
    db.write(&bufb, 0x4000, &7u64.to_le_bytes());
    let fa = SendOp::AtomicFa {
        remote: remote_b(0x4000),
        add: 5,
    };
    da.post_send(&mut qa, &SendWr::new(4, fa).sgl(&[sa(0x4008, 8)]))
        .unwrap();
    let s = wait(&mut da, &mut ca, 3);
    assert_eq!(s.iter().map(|w| w.wr_id).collect::<Vec<_>>(), [2, 3, 4]);
    assert!(s.iter().all(|w| w.status == WcStatus::Success), "{s:?}");
    let mut six = [0u8; 6];
    db.read(&bufb, 0x2000, &mut six);
    assert_eq!(&six, b"across");
    da.read(&bufa, 0x3000, &mut six);
    assert_eq!(&six, b"across");
    let mut v = [0u8; 8];
    db.read(&bufb, 0x4000, &mut v);
    assert_eq!(u64::from_le_bytes(v), 12);
    da.read(&bufa, 0x4008, &mut v);
    assert_eq!(u64::from_le_bytes(v), 7);
}

/// A peer server gone from the mesh (its mesh shut down) costs a request a
/// transport retry exceeded completion — at once when its connection is
/// gone, at the latest after the profile's request timeout (300 ms here) —
/// never a hang.
#[test]
fn a_lost_peer_costs_retry_exceeded() {
    let Pair {
        mut da,
        mut db,
        mut ca,
        cb: _cb,
        mut qa,
        qb: _qb,
        worker,
    } = pair("lost");
    let (bufa, bufb) = (da.alloc(4096).unwrap(), db.alloc(4096).unwrap());
    let (ma, mb) = (da.reg_mr(bufa).unwrap(), db.reg_mr(bufb).unwrap());
    let sge = [ma.sge(0, 8)];
    let to = mb.remote(0);
    da.post_send(&mut qa, &SendWr::new(1, SendOp::Write(to)).sgl(&sge))
        .unwrap();
    let w = wait(&mut da, &mut ca, 1);
    assert_eq!((w[0].wr_id, w[0].status), (1, WcStatus::Success));
    worker.shutdown();
    let t = Instant::now();
    da.post_send(&mut qa, &SendWr::new(2, SendOp::Write(to)).sgl(&sge))
        .unwrap();
    let w = wait(&mut da, &mut ca, 1);
    assert_eq!((w[0].wr_id, w[0].status), (2, WcStatus::RetryExcErr));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// A WRITE with immediate larger than one mesh piece (1 MiB), between two
/// servers: it lands whole, and the receive it consumes completes once,
/// with the whole length and the immediate.
#[test]
fn a_write_with_immediate_of_several_pieces_completes_one_receive() {
    let Pair {
        mut da,
        mut db,
        mut ca,
        mut cb,
        mut qa,
        mut qb,
        worker: _worker,
    } = pair("imm");
    const LEN: u64 = 3 << 20;
    let (bufa, bufb) = (da.alloc(LEN).unwrap(), db.alloc(LEN + 4096).unwrap());
    let (ma, mb) = (da.reg_mr(bufa).unwrap(), db.reg_mr(bufb).unwrap());
    let data: Vec<u8> = (0..LEN).map(|i| (i * 13 / 7) as u8).collect();
    da.write(&bufa, 0, &data);
    // Two in a row, each consuming one of the receives.
    for i in 0..2u64 {
        db.post_recv(&mut qb, 9 + i, mb.sge(LEN, 0)).unwrap();
    }
    for i in 0..2u64 {
        let op = SendOp::WriteImm(mb.remote(0), 0xabcd + i as u32);
        da.post_send(
            &mut qa,
            &SendWr::new(1 + i, op).sgl(&[ma.sge(0, LEN as u32)]),
        )
        .unwrap();
        let s = wait(&mut da, &mut ca, 1);
        assert_eq!((s[0].wr_id, s[0].status), (1 + i, WcStatus::Success));
        let r = wait(&mut db, &mut cb, 1);
        assert_eq!(
            (
                r[0].wr_id,
                r[0].status,
                r[0].opcode,
                r[0].byte_len,
                r[0].imm
            ),
            (
                9 + i,
                WcStatus::Success,
                WcOpcode::RecvRdmaWithImm,
                LEN as u32,
                Some(0xabcd + i as u32)
            ),
            "{r:?}"
        );
    }
    let mut got = vec![0u8; LEN as usize];
    db.read(&bufb, 0, &mut got);
    assert!(got == data, "the write landed whole");
}
