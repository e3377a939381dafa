//! Tests of one connection: frames deferred and flushed, written in part
//! and resumed, whole and in order.

use super::*;
use std::io::Read;
use std::net::TcpListener;

/// A connection's far end, read by a thread into one buffer.
fn pair() -> (Conn, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let near = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (far, _) = l.accept().unwrap();
    let c = Conn::new(
        NodeId(1),
        near,
        std::sync::Arc::default(),
        1 << 30,
        1 << 30,
        Duration::from_secs(5),
    )
    .unwrap();
    (c, far)
}

fn frame(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i * 31 + k * 7) as u8).collect()
}

/// Flushes until `n` frames are done or the time is up.
fn flush_all(c: &Conn, n: usize) -> Vec<Vec<u8>> {
    let mut done = Vec::new();
    let end = Instant::now() + Duration::from_secs(10);
    while done.len() < n {
        c.flush_now(&mut |f| done.push(f));
        assert!(
            Instant::now() < end,
            "only {} of {n} frames went",
            done.len()
        );
    }
    done
}

#[test]
fn a_flush_writes_deferred_frames_whole_and_in_order() {
    let (c, mut far) = pair();
    // More than one batch (16) of replies, of several sizes.
    let frames: Vec<Vec<u8>> = (0..40).map(|i| frame(i, 50 + i * 13)).collect();
    for f in &frames {
        assert!(matches!(c.data(f.clone(), 0, true, true), Ok(None)));
    }
    let done = flush_all(&c, frames.len());
    assert!(done == frames, "each frame retired whole, in order");
    let want: Vec<u8> = frames.concat();
    let mut got = vec![0u8; want.len()];
    far.read_exact(&mut got).unwrap();
    assert!(got == want);
}

#[test]
fn frames_the_socket_takes_in_part_go_on_from_where_they_stopped() {
    let (c, far) = pair();
    // Far more than the socket buffers hold: the first flushes stop
    // inside a frame.
    let frames: Vec<Vec<u8>> = (0..24).map(|i| frame(i, (1 << 20) + i)).collect();
    let want: Vec<u8> = frames.concat();
    let total = want.len();
    for f in &frames[..20] {
        assert!(matches!(c.data(f.clone(), 0, true, true), Ok(None)));
    }
    let mut early = Vec::new();
    c.flush_now(&mut |f| early.push(f));
    assert!(early.len() < 20, "the socket took every frame at once");
    assert!(
        c.lock().data.front().is_some_and(|it| it.offset > 0),
        "stopped inside a frame"
    );
    // A frame sent now (not deferred) queues behind the others.
    for f in &frames[20..] {
        assert!(matches!(c.data(f.clone(), 0, false, false), Ok(None)));
    }
    let reader = std::thread::spawn(move || {
        let mut far = far;
        let mut got = vec![0u8; total];
        far.read_exact(&mut got).unwrap();
        got
    });
    let mut done = early;
    done.extend(flush_all(&c, frames.len() - done.len()));
    assert!(done == frames, "each frame retired whole, in order");
    assert!(c.lock().data.is_empty());
    assert!(reader.join().unwrap() == want, "every byte, in order");
}

#[test]
fn a_held_frame_and_those_behind_it_wait_out_the_hold_in_order() {
    let (c, mut far) = pair();
    let until = Instant::now() + Duration::from_millis(150);
    let (a, b) = (frame(1, 100), frame(2, 200));
    assert!(c.data_held(a.clone(), 0, false, until).is_ok());
    // Not written inline behind a held frame, nor by a flush before its time.
    assert!(matches!(c.data(b.clone(), 0, false, false), Ok(None)));
    let mut done = Vec::new();
    c.flush_now(&mut |f| done.push(f));
    assert!(done.is_empty(), "a frame went out during the hold");
    assert_eq!(c.depth(), 2);
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
    let done = flush_all(&c, 2);
    assert!(done == [a.clone(), b.clone()], "in the order queued");
    let mut got = vec![0u8; 300];
    far.read_exact(&mut got).unwrap();
    assert!(got == [a, b].concat());
    assert_eq!(c.lock().held, 0);
    let s = &c.stats;
    assert_eq!(s.frames_sent.load(Ordering::Relaxed), 2);
    assert_eq!(s.bytes_sent.load(Ordering::Relaxed), 300);
    assert_eq!(s.queue_depth_max.load(Ordering::Relaxed), 2);
}

#[test]
fn silent_intervals_past_the_first_count_as_missed_heartbeats_once_each() {
    let (c, _far) = pair();
    let hb = Duration::from_millis(40);
    let missed = || c.stats.heartbeats_missed.load(Ordering::Relaxed);
    c.count_missed(hb);
    assert_eq!(missed(), 0, "just heard");
    std::thread::sleep(Duration::from_millis(130));
    c.count_missed(hb);
    // At least three intervals of silence: two past the first (more only if
    // the sleep overran).
    let first = missed();
    assert!(first >= 2, "{first}");
    c.count_missed(hb);
    assert!(missed() - first <= 1, "the same silence counted again");
    c.heard();
    let before = missed();
    c.count_missed(hb);
    assert_eq!(missed(), before, "heard again: nothing missed");
}
