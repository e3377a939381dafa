#![allow(unsafe_code)]
//! The ernic provider against the provider contract: connection set-up
//! over the datagram QP, writes with immediate, sends into posted
//! receives, EAGAIN and EAVAIL, in one process and across a real TCP mesh.

use std::time::{Duration, Instant};

use ernic_net::provider::{CqEntry, CqError, CqFlags, FiAddr, PostError, Provider, Rail};
use ernic_net::verbs_provider::ErnicProvider;
use ernic_verbs::{Config, Fabric, Mesh, MeshConfig, MeshSpec, NodeId};

const T: Duration = Duration::from_secs(10);

/// Reads one entry from `rail`.
fn read_one(rail: &mut dyn Rail) -> Result<CqEntry, ernic_net::provider::CqErrEntry> {
    let end = Instant::now() + T;
    let mut out = [CqEntry::default(); 1];
    loop {
        match rail.cq_read(&mut out) {
            Ok(1) => return Ok(out[0]),
            Ok(_) | Err(CqError::Again) => {}
            Err(CqError::Avail) => {
                return Err(rail.cq_readerr().expect("EAVAIL means an error entry"));
            }
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < end, "no completion within {T:?}");
    }
}

/// Retries `post` while it answers EAGAIN, reading both CQs meanwhile.
fn post(
    a: &mut dyn Rail,
    b: &mut dyn Rail,
    mut post: impl FnMut(&mut dyn Rail) -> Result<(), PostError>,
) -> u32 {
    let end = Instant::now() + T;
    let mut agains = 0;
    loop {
        match post(a) {
            Ok(()) => return agains,
            Err(PostError::Again) => agains += 1,
            Err(e) => panic!("{e}"),
        }
        let mut sink = [CqEntry::default(); 4];
        let _ = a.cq_read(&mut sink);
        let _ = b.cq_read(&mut sink);
        assert!(Instant::now() < end, "still EAGAIN after {T:?}");
    }
}

fn pair(p: &dyn Provider, q: &dyn Provider) -> (Box<dyn Rail>, Box<dyn Rail>, FiAddr, FiAddr) {
    let mut a = p.open_rail().unwrap();
    let mut b = q.open_rail().unwrap();
    let b_at_a = a.av_insert(&b.name()).unwrap();
    let a_at_b = b.av_insert(&a.name()).unwrap();
    assert_eq!(
        a.av_insert(&b.name()).unwrap(),
        b_at_a,
        "same name, same address"
    );
    (a, b, b_at_a, a_at_b)
}

fn exercise(pa: &dyn Provider, pb: &dyn Provider) {
    let (mut a, mut b, b_at_a, _a_at_b) = pair(pa, pb);
    let (a, b) = (&mut *a, &mut *b);
    let mut src: Vec<u8> = (0..300_000u32).map(|i| (i * 13 + 5) as u8).collect();
    let mut dst = vec![0u8; 300_000];
    let mut rx = vec![0u8; 8192];
    // SAFETY: the three buffers outlive their registrations, closed below.
    let (rs, rd, rr) = unsafe {
        (
            a.mr_reg(src.as_mut_ptr(), src.len()).unwrap(),
            b.mr_reg(dst.as_mut_ptr(), dst.len()).unwrap(),
            b.mr_reg(rx.as_mut_ptr(), rx.len()).unwrap(),
        )
    };
    // A write with immediate: the writer sees WRITE, the target sees the
    // immediate alone.
    let agains = post(a, b, |a| {
        a.write_data(
            src.as_ptr() as u64,
            src.len(),
            rs.desc,
            b_at_a,
            dst.as_ptr() as u64,
            rd.key,
            0xdead_beef,
            7,
        )
    });
    eprintln!("first post met EAGAIN {agains} times while the peers connected");
    let e = read_one(a).unwrap();
    assert_eq!((e.context, e.flags), (7, CqFlags::WRITE));
    let e = read_one(b).unwrap();
    assert!(e.flags.has(CqFlags::REMOTE_WRITE | CqFlags::REMOTE_CQ_DATA));
    assert_eq!(e.data, 0xdead_beef);
    assert!(dst == src, "the written bytes arrived");
    // A zero-length write still carries its immediate.
    post(a, b, |a| a.write_data(0, 0, 0, b_at_a, 0, 0, 42, 8));
    assert_eq!(read_one(a).unwrap().context, 8);
    assert_eq!(read_one(b).unwrap().data, 42);
    // A send with immediate into a posted receive.
    post(b, a, |b| b.recv(rx.as_ptr() as u64, rx.len(), rr.desc, 9));
    post(a, b, |a| {
        a.send_data(src.as_ptr() as u64 + 10, 100, rs.desc, b_at_a, 5, 10)
    });
    assert_eq!(read_one(a).unwrap().flags, CqFlags::SEND);
    let e = read_one(b).unwrap();
    assert_eq!((e.context, e.len, e.data), (9, 100, 5));
    assert!(e.flags.has(CqFlags::RECV));
    assert_eq!(&rx[..100], &src[10..110]);
    // Sixteen bytes from `src` to `dst` under `key`.
    let (from, to) = (src.as_ptr() as u64, dst.as_ptr() as u64);
    let write16 = |a: &mut dyn Rail, key: u64, data: u32, ctx: u64| {
        a.write_data(from, 16, rs.desc, b_at_a, to, key, data, ctx)
    };
    // A write under a wrong key: an error completion, taken with readerr,
    // and the rail keeps working.
    post(a, b, |a| write16(a, rd.key ^ 0x100, 1, 11));
    let err = read_one(a).unwrap_err();
    assert_eq!(err.context, 11);
    assert!(err.message.contains("failed"), "{}", err.message);
    assert_eq!(a.cq_readerr(), None, "one error, taken once");
    post(a, b, |a| write16(a, rd.key, 2, 12));
    assert_eq!(read_one(a).unwrap().context, 12);
    assert_eq!(read_one(b).unwrap().data, 2);
    // Bad input is refused, not crashed on.
    assert!(a.av_insert(b"short").is_err());
    assert!(matches!(
        a.send_data(0, 0, 0, 99, 0, 1),
        Err(PostError::Failed(_))
    ));
    a.mr_close(rs.handle).unwrap();
    assert!(a.mr_close(rs.handle).is_err(), "closed twice");
    b.mr_close(rd.handle).unwrap();
    b.mr_close(rr.handle).unwrap();
}

#[test]
fn one_process_loopback() {
    let p = ErnicProvider::new(Fabric::new());
    exercise(&p, &p);
}

#[test]
fn across_a_real_tcp_mesh() {
    let manager = Mesh::start(MeshConfig {
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(MeshSpec::Manager { port: 0 })
    })
    .unwrap();
    let port = manager.listen_addr().port();
    let worker = Mesh::start(MeshConfig {
        heartbeat: Duration::from_millis(100),
        ..MeshConfig::new(MeshSpec::Worker {
            host: "127.0.0.1".into(),
            port,
        })
    })
    .unwrap();
    assert_eq!(worker.wait_registered(T), Some(NodeId(1)));
    let pa = ErnicProvider::new(Fabric::on_mesh(Config::default(), manager));
    let pb = ErnicProvider::new(Fabric::on_mesh(Config::default(), worker));
    exercise(&pa, &pb);
}
