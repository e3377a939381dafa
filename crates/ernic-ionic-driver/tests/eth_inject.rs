//! The Ethernet faults (`rx_drop`, `rx_no_buffer`, `tx_drop`) of the
//! emulated ionic device, driven through the driver's Ethernet queues
//! against a segment that echoes every frame back: the same eight frames
//! on a fresh device with the same spec lose the same frames twice. Each
//! test checks which frames came back (in order, byte for byte), the LIF
//! statistics the driver reads from its info block (`struct
//! ionic_lif_stats`: the drop counters by cast, bytes and packets) and the
//! injector's `seen`/`fired` counts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ernic_core::inject::Injector;
use ernic_ionic::function::IonicFunction;
use ernic_ionic_driver::{Driver, FRAME_BUF, LifStats};

mod common;

/// Frames sent in each run.
const FRAMES: usize = 8;

/// Frame `i` (from 1): unicast to a fixed MAC, `60 + 10 * i` bytes, its
/// number in every payload byte.
fn frame(i: usize) -> Vec<u8> {
    let mut f = vec![i as u8; 60 + 10 * i];
    f[..6].copy_from_slice(&[0x02, 0, 0x45, 0x52, 0x4e, 0x09]);
    f[6..12].copy_from_slice(&[0x02, 0, 0x45, 0x52, 0x4e, 0x01]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]); // IEEE local experimental
    f
}

/// Bytes of frame `i`.
fn len(i: usize) -> u64 {
    frame(i).len() as u64
}

/// What one run gives: the frames that came back (by number), the LIF
/// statistics, and `(seen, fired)` of each armed fault.
type Run = (Vec<usize>, LifStats, Vec<(u64, u64)>);

/// Sends frames 1..=8 through a fresh device armed with `spec`, waits
/// (bounded) until the device has accounted for every one of them both
/// ways, and takes what came back.
fn run(name: &str, spec: &str) -> Run {
    let inj = Arc::new(Injector::parse(spec).unwrap());
    let f = IonicFunction::new(Default::default())
        .with_endpoint(Box::new(common::Echo::new()))
        .with_injector(inj.clone());
    let sock = common::serve_function(name, f);
    let mut d = Driver::attach(&sock, 8 << 20).unwrap();
    d.eth_up().unwrap();
    let mut back = Vec::new();
    let mut buf = vec![0u8; FRAME_BUF];
    for i in 1..=FRAMES {
        d.send_frame(&frame(i)).unwrap();
    }
    // Every frame is sent or dropped on the way out, and every one sent
    // is received, lost or refused on the way in.
    let end = Instant::now() + Duration::from_secs(5);
    let stats = loop {
        while let Some(n) = d.recv_frame(&mut buf).unwrap() {
            let i = usize::from(buf[n - 1]);
            assert_eq!(&buf[..n], &frame(i)[..], "frame {i} came back altered");
            back.push(i);
        }
        let s = d.lif_stats().unwrap();
        let out = s.tx[0].1 + s.tx_drop[0].1;
        let settled = s.rx[0].1 + s.rx_drop[0].1 + s.rx_queue_empty;
        if out == FRAMES as u64 && settled == s.tx[0].1 && back.len() as u64 == s.rx[0].1 {
            break s;
        }
        assert!(
            Instant::now() < end,
            "the device did not account for every frame: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = std::fs::remove_dir_all(sock.parent().unwrap());
    let report = inj.report().iter().map(|f| (f.seen, f.fired)).collect();
    (back, stats, report)
}

/// Unicast (bytes, packets) of the frames numbered in `ids`.
fn ucast(ids: &[usize]) -> [(u64, u64); 3] {
    [
        (ids.iter().map(|&i| len(i)).sum(), ids.len() as u64),
        (0, 0),
        (0, 0),
    ]
}

#[test]
fn tx_drop_at_3_7_completes_two_frames_unsent_the_same_way_twice() {
    for n in 0..2 {
        let (back, s, report) = run(&format!("eth-inject-tx-{n}"), "tx_drop:at=3,7");
        assert_eq!(back, [1, 2, 4, 5, 6, 8], "run {n}");
        assert_eq!(s.tx, ucast(&[1, 2, 4, 5, 6, 8]), "run {n}");
        assert_eq!(s.tx_drop, ucast(&[3, 7]), "run {n}");
        assert_eq!(s.rx, ucast(&[1, 2, 4, 5, 6, 8]), "run {n}");
        assert_eq!((s.rx_drop, s.rx_queue_empty), (ucast(&[]), 0), "run {n}");
        // Every transmitted frame was counted, two fired.
        assert_eq!(report, vec![(8, 2)], "run {n}");
    }
}

#[test]
fn rx_drop_every_3_loses_every_third_frame_received_the_same_way_twice() {
    for n in 0..2 {
        let (back, s, report) = run(&format!("eth-inject-rx-{n}"), "rx_drop:every=3");
        assert_eq!(back, [1, 2, 4, 5, 7, 8], "run {n}");
        assert_eq!(s.tx, ucast(&[1, 2, 3, 4, 5, 6, 7, 8]), "run {n}");
        assert_eq!(s.rx, ucast(&[1, 2, 4, 5, 7, 8]), "run {n}");
        assert_eq!(s.rx_drop, ucast(&[3, 6]), "run {n}");
        assert_eq!((s.tx_drop, s.rx_queue_empty), (ucast(&[]), 0), "run {n}");
        assert_eq!(report, vec![(8, 2)], "run {n}");
    }
}

#[test]
fn rx_no_buffer_burst_2_of_4_drops_as_queue_empty_the_same_way_twice() {
    for n in 0..2 {
        let (back, s, report) = run(&format!("eth-inject-nobuf-{n}"), "rx_no_buffer:burst=2/4");
        // Events 1-2 and 5-6 of every 4 fire.
        assert_eq!(back, [3, 4, 7, 8], "run {n}");
        assert_eq!(s.rx, ucast(&[3, 4, 7, 8]), "run {n}");
        assert_eq!(s.rx_queue_empty, 4, "run {n}");
        assert_eq!((s.rx_drop, s.tx_drop), (ucast(&[]), ucast(&[])), "run {n}");
        assert_eq!(report, vec![(8, 4)], "run {n}");
    }
}

#[test]
fn rx_drop_from_6_with_tx_drop_at_2_counts_each_fault_on_its_own_events() {
    // Frame 2 never leaves; of the seven that do, the sixth and seventh
    // received (frames 7 and 8) are lost.
    let (back, s, report) = run("eth-inject-both", "tx_drop:at=2,rx_drop:from=6");
    assert_eq!(back, [1, 3, 4, 5, 6]);
    assert_eq!(s.tx_drop, ucast(&[2]));
    assert_eq!(s.rx_drop, ucast(&[7, 8]));
    assert_eq!(report, vec![(8, 1), (7, 2)]);
}
