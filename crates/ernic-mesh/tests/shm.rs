//! The same-host shared-memory channel between two in-process nodes (the
//! same-host path works within one process as between two): data frames
//! begin on TCP, switch to the ring, and arrive whole and in order across
//! the switch, in every size from a header to far past the ring's, while
//! the ring is full for seconds, and not at all by ring when it is off.

use std::time::{Duration, Instant};

use ernic_core::{NodeId, Outgoing, Remote, SendError};
use ernic_mesh::{Mesh, MeshConfig, Spec};

const T: Duration = Duration::from_secs(30);

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A manager and a worker with rings of `ring` bytes (0: none), and a
/// `stall_drop` long enough for a receiver that stops for seconds.
fn pair(ring: usize) -> (Mesh, Mesh) {
    let mut cfg = MeshConfig::new(Spec::Manager { port: 0 });
    cfg.shm_ring = ring;
    cfg.stall_drop = Duration::from_secs(20);
    let manager = Mesh::start(cfg).unwrap();
    let mut cfg = MeshConfig::new(Spec::Worker {
        host: "127.0.0.1".into(),
        port: manager.listen_addr().port(),
    });
    cfg.shm_ring = ring;
    cfg.stall_drop = Duration::from_secs(20);
    let worker = Mesh::start(cfg).unwrap();
    assert_eq!(worker.wait_registered(T), Some(NodeId(1)));
    (manager, worker)
}

/// Message `seq`'s bytes: its number, then a pattern of it.
fn message(seq: u32, len: usize, b: &mut [u8]) {
    b[..4].copy_from_slice(&seq.to_le_bytes());
    for (i, x) in b[4..len].iter_mut().enumerate() {
        *x = (seq as usize * 7 + i) as u8;
    }
}

/// The sizes message `seq` cycles through: a few bytes, a page, 70 KB,
/// 300 KB (past a 16 KiB ring many times).
fn size(seq: u32) -> usize {
    [4, 100, 4096, 70_000, 300_000][seq as usize % 5]
}

/// Sends `n` messages from the worker, retrying while the mesh is busy
/// (bounded by T).
fn send_all(worker: &Mesh, n: u32) {
    let mut carrier = worker.carrier();
    let end = Instant::now() + T;
    for seq in 0..n {
        let len = size(seq);
        loop {
            let mut fill = |b: &mut [u8]| message(seq, len, b);
            let out = Outgoing {
                reply: false,
                tag: 0,
                len,
                fill: &mut fill,
            };
            match carrier.send(NodeId(0), out) {
                Ok(()) => break,
                Err(SendError::Busy) => {
                    assert!(Instant::now() < end, "stuck sending {seq}");
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err(e) => panic!("message {seq}: {e:?}"),
            }
        }
    }
}

/// Takes `n` messages at the manager and checks each is the next, whole.
fn receive_all(manager: &Mesh, n: u32) {
    let end = Instant::now() + T;
    let mut next = 0u32;
    while next < n {
        assert!(Instant::now() < end, "stuck at message {next}");
        let Some(m) = manager.pop() else {
            manager.poll_io();
            std::thread::yield_now();
            continue;
        };
        let b = &m.buf[m.start..];
        let len = size(next);
        assert_eq!(b.len(), len, "message {next}'s length");
        let mut want = vec![0u8; len];
        message(next, len, &mut want);
        assert!(b == want, "message {next}'s bytes");
        manager.release(m.buf);
        next += 1;
    }
}

fn shm_frames(mesh: &Mesh, peer: &str, counter: &str) -> u64 {
    mesh.stats_groups()
        .iter()
        .find(|g| g.kind == "mesh_peer" && g.labels.get("peer").map(String::as_str) == Some(peer))
        .and_then(|g| g.counters.get(counter).copied())
        .unwrap_or(0)
}

#[test]
fn messages_of_every_size_arrive_in_order_across_the_switch_to_the_ring() {
    let (manager, worker) = pair(16 << 10);
    // Sending starts at once: the first messages go by TCP, the switch
    // comes between two of them, the rest go by the ring.
    const N: u32 = 2000;
    std::thread::scope(|s| {
        s.spawn(|| send_all(&worker, N));
        receive_all(&manager, N);
    });
    until("the worker says its data goes by the ring", || {
        worker.same_host(NodeId(0)).shm_out && manager.same_host(NodeId(1)).shm_in
    });
    let (sent, got) = (
        shm_frames(&worker, "0", "shm_frames_sent"),
        shm_frames(&manager, "1", "shm_frames_received"),
    );
    eprintln!("{sent} of {N} messages went by the ring");
    assert!(sent > 0 && sent == got, "sent {sent}, received {got}");
    // And after it, too.
    std::thread::scope(|s| {
        s.spawn(|| send_all(&worker, 50));
        receive_all(&manager, 50);
    });
    assert_eq!(shm_frames(&manager, "1", "shm_frames_received"), got + 50);
}

#[test]
fn a_ring_full_for_seconds_holds_the_sender_and_loses_nothing() {
    let (manager, worker) = pair(16 << 10);
    until("the ring carries the worker's data", || {
        worker.same_host(NodeId(0)).shm_out && manager.same_host(NodeId(1)).shm_in
    });
    // About 150 MB: more than the inbound queue (64 MiB) and the sender's
    // queue (32 MiB) hold.
    const N: u32 = 2000;
    std::thread::scope(|s| {
        let sender = s.spawn(|| send_all(&worker, N));
        // Nobody takes the manager's messages for three seconds: its
        // inbound queue fills, the ring behind it, then the worker's queue.
        std::thread::sleep(Duration::from_secs(3));
        assert!(!sender.is_finished(), "the sender was held");
        receive_all(&manager, N);
    });
    assert_eq!(
        manager
            .stats_groups()
            .iter()
            .find(|g| g.kind == "mesh")
            .and_then(|g| g.counters.get("inbound_dropped").copied()),
        Some(0)
    );
}

#[test]
fn with_the_rings_off_every_message_still_arrives_by_tcp() {
    let (manager, worker) = pair(0);
    until("the same-host path is up", || {
        manager.same_host(NodeId(1)).read_by_me
    });
    std::thread::scope(|s| {
        s.spawn(|| send_all(&worker, 200));
        receive_all(&manager, 200);
    });
    assert!(!worker.same_host(NodeId(0)).shm_out);
    assert_eq!(shm_frames(&worker, "0", "shm_frames_sent"), 0);
}

#[test]
fn the_smallest_ring_still_carries_frames_far_larger_than_itself() {
    // 4 KiB: every message past 2 KiB goes in several records.
    let (manager, worker) = pair(4096);
    until("the ring carries the worker's data", || {
        worker.same_host(NodeId(0)).shm_out && manager.same_host(NodeId(1)).shm_in
    });
    std::thread::scope(|s| {
        s.spawn(|| send_all(&worker, 300));
        receive_all(&manager, 300);
    });
    assert_eq!(shm_frames(&manager, "1", "shm_frames_received"), 300);
}
