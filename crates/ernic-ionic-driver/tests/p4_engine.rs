//! The P4 engine itself (`ernic_p4::device::Engine`) behind the device's
//! hooks, driven by the driver model over the real socket, with the
//! programs in crates/ernic-p4/testdata:
//! - ernic_frames: an ARP the guest sends for an address arp_filter holds
//!   is dropped, others reach the wire; a frame from the wire reaches the
//!   guest with the Ethernet source rx_rewrite sets;
//! - ernic_fp8: an RDMA WRITE into a local MR becomes fp8 E4M3
//!   accumulation, checked element by element; a WRITE of a length
//!   wqe_ops drops completes with a local protection error and moves
//!   nothing.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use ernic_core::{SendOp, SendWr, WcStatus};
use ernic_ionic::function::IonicFunction;
use ernic_ionic::tap::Wire;
use ernic_ionic_driver::{Buf, Driver, FRAME_BUF};
use ernic_p4::device::Engine;
use ernic_p4::fp8::{Fp8, Overflow};
use ernic_p4::program::Program;

mod common;
use common::{arp, status_in, within};

fn engine(name: &str, commands: &str) -> Engine {
    let p = format!(
        "{}/../ernic-p4/testdata/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let e = Engine::new(Some(
        Program::load(&std::fs::read_to_string(p).unwrap()).unwrap(),
    ));
    let mut out = Vec::new();
    e.with(|t| t.command(71, commands.as_bytes(), &mut out))
        .unwrap()
        .unwrap();
    e
}

#[test]
fn a_program_drops_arp_for_one_address_and_rewrites_what_the_guest_receives() {
    let e = engine(
        "ernic_frames",
        "table_add arp_filter drop 10.0.0.99 =>\ntable_set_default rx_rewrite set_src 02:aa:bb:cc:dd:ee\n",
    );
    let (wire, theirs): (Wire, UnixDatagram) = Wire::socket_pair().unwrap();
    theirs.set_nonblocking(true).unwrap();
    let f = IonicFunction::new(Default::default())
        .with_wire(wire)
        .with_frame_filter(Box::new(e.clone()));
    let path = common::serve_function("p4-engine-frames", f);
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    d.eth_up().unwrap();

    d.send_frame(&arp([10, 0, 0, 99])).unwrap();
    d.send_frame(&arp([10, 0, 0, 1])).unwrap();
    let mut buf = vec![0u8; FRAME_BUF];
    let n = within("the ARP for 10.0.0.1 on the wire", || {
        theirs.recv(&mut buf).ok()
    });
    assert_eq!(&buf[..n], &arp([10, 0, 0, 1])[..]);
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        theirs.recv(&mut buf).is_err(),
        "the ARP for 10.0.0.99 reached the wire"
    );

    let mut from_wire: Vec<u8> = (0..64u8).collect();
    from_wire[12..14].copy_from_slice(&[0x08, 0x00]);
    theirs.send(&from_wire).unwrap();
    let n = within("the wire's frame at the driver", || {
        d.recv_frame(&mut buf).unwrap()
    });
    let mut want = from_wire.clone();
    want[6..12].copy_from_slice(&[0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee]);
    assert_eq!(&buf[..n], &want[..]);
    let stats = e.with(|t| t.stats).unwrap();
    assert_eq!((stats.frames, stats.frames_dropped), (3, 1));
}

#[test]
fn an_rdma_write_becomes_fp8_accumulation_into_a_local_region() {
    let e = engine("ernic_fp8", "table_add wqe_ops drop 12 =>\n");
    let f = IonicFunction::new(Default::default()).with_send_filter(Box::new(e.clone()));
    let path = common::serve_function("p4-engine-fp8", f);
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let mut cq = d.create_cq(7).unwrap();
    let pd = d.alloc_pd().unwrap();
    let (mut a, _b) = common::rc_pair(&mut d, &cq, pd, pd);
    const N: usize = 256;
    // Every E4M3 code but the NaNs as the source, a spread as the
    // destination: sums that round, saturate and stay exact.
    let src: Vec<u8> = (0..N)
        .map(|i| if i % 128 == 127 { 0x40 } else { i as u8 })
        .collect();
    let dst0: Vec<u8> = (0..N)
        .map(|i| Fp8::E4M3.from_f32((i as f32 - 128.0) * 1.75, Overflow::Saturate))
        .collect();
    let (sb, db): (Buf, Buf) = (d.alloc(4096).unwrap(), d.alloc(4096).unwrap());
    assert!(d.write(&sb, 0, &src));
    assert!(d.write(&db, 0, &dst0));
    let smr = d.reg_mr_in(pd, sb).unwrap();
    let dmr = d.reg_mr_in(pd, db).unwrap();

    let sgl = [smr.sge(0, N as u32)];
    d.post_send(
        &mut a,
        &SendWr::new(1, SendOp::Write(dmr.remote(0))).sgl(&sgl),
    )
    .unwrap();
    assert_eq!(
        status_in(&common::completions(&mut d, &mut cq, &[1]), 1),
        WcStatus::Success
    );
    let mut got = vec![0u8; N];
    assert!(d.read(&dmr.buf, 0, &mut got));
    for i in 0..N {
        let want = Fp8::E4M3.from_f32(
            Fp8::E4M3.to_f32(dst0[i]) + Fp8::E4M3.to_f32(src[i]),
            Overflow::Saturate,
        );
        assert_eq!(
            got[i], want,
            "element {i}: {:#04x} + {:#04x}",
            dst0[i], src[i]
        );
    }
    assert!(
        got.iter().zip(&dst0).any(|(g, d)| g != d),
        "nothing accumulated"
    );

    // A WRITE of 12 bytes: wqe_ops drops it; nothing moves.
    let sgl = [smr.sge(0, 12)];
    d.post_send(
        &mut a,
        &SendWr::new(2, SendOp::Write(dmr.remote(0))).sgl(&sgl),
    )
    .unwrap();
    assert_eq!(
        status_in(&common::completions(&mut d, &mut cq, &[2]), 2),
        WcStatus::LocProtErr
    );
    let mut after = vec![0u8; N];
    assert!(d.read(&dmr.buf, 0, &mut after));
    assert_eq!(after, got);
    let s = e.with(|t| t.stats).unwrap();
    assert_eq!((s.wqes, s.wqes_transformed, s.wqes_dropped), (2, 1, 1));
}
