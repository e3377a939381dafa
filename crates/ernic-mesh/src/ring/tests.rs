use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use proptest::prelude::*;

use super::direction::HAND_OVER;
use super::*;

/// The same ring mapped twice, as the writer and the reader hold it.
fn pair(cap: usize) -> (Ring, Ring) {
    let w = Ring::create(cap).unwrap();
    let r = Ring::open(w.fd().try_clone_to_owned().unwrap()).unwrap();
    (w, r)
}

fn record(i: u64, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i as usize * 31 + k) as u8).collect()
}

#[test]
fn records_come_out_whole_and_in_order_across_the_wrap() {
    let (w, r) = pair(MIN_CAP);
    let mut out = Vec::new();
    // 1000 records of 0..=700 bytes through 4 KiB wrap around it many
    // times, in two parts each.
    for i in 0..1000u64 {
        let rec = record(i, (i as usize * 7) % 701);
        let (a, b) = rec.split_at(rec.len() / 3);
        assert!(w.push(&[a, b]).unwrap(), "record {i} fits an empty ring");
        assert!(r.pop(&mut out, MAX_CAP).unwrap());
        assert_eq!(out, rec, "record {i}");
        assert!(!r.pop(&mut out, MAX_CAP).unwrap(), "nothing more");
    }
}

#[test]
fn a_full_ring_refuses_until_the_reader_frees_room() {
    let (w, r) = pair(MIN_CAP);
    let rec = [7u8; 1020];
    // 4 + 1020 bytes each: four fill 4096 exactly.
    for _ in 0..4 {
        assert!(w.push(&[&rec]).unwrap());
    }
    assert_eq!(w.free().unwrap(), 0);
    assert!(!w.push(&[&[1]]).unwrap(), "no room for even one byte");
    let mut out = Vec::new();
    assert!(r.pop(&mut out, MAX_CAP).unwrap());
    assert_eq!(w.free().unwrap(), 1024);
    assert!(w.push(&[&rec]).unwrap());
    assert!(w.push(&[&[]]).is_ok_and(|ok| !ok));
}

#[test]
fn records_too_long_are_refused_on_both_sides() {
    let (w, r) = pair(MIN_CAP);
    let big = vec![0u8; MIN_CAP - LEN + 1];
    assert_eq!(w.push(&[&big]), Err(RingError::TooLong(big.len() as u64)));
    assert!(w.push(&[&big[..100]]).unwrap());
    let mut out = Vec::new();
    // The reader's own limit.
    assert_eq!(r.pop(&mut out, 99), Err(RingError::TooLong(100)));
    assert!(out.capacity() < 100, "nothing was sized by the record");
}

#[test]
fn a_peer_that_scribbles_on_the_header_is_an_error_not_a_crash() {
    let (w, r) = pair(MIN_CAP);
    let mut out = Vec::new();
    let cap = MIN_CAP as u64;
    // The head more than the ring ahead of the tail.
    w.atomic64(HEAD_AT).store(cap + 1, Ordering::Release);
    assert_eq!(
        r.pop(&mut out, MAX_CAP),
        Err(RingError::Corrupt {
            head: cap + 1,
            tail: 0
        })
    );
    assert!(r.readable(), "an inconsistent ring is for pop to report");
    // The tail past the head (the writer checks too).
    w.atomic64(HEAD_AT).store(10, Ordering::Release);
    r.atomic64(TAIL_AT).store(11, Ordering::Release);
    assert!(matches!(w.push(&[b"x"]), Err(RingError::Corrupt { .. })));
    assert!(matches!(w.free(), Err(RingError::Corrupt { .. })));
    // A length longer than what was published.
    r.atomic64(TAIL_AT).store(0, Ordering::Release);
    w.copy_in(0, &100u32.to_le_bytes());
    w.atomic64(HEAD_AT).store(50, Ordering::Release);
    assert_eq!(
        r.pop(&mut out, MAX_CAP),
        Err(RingError::Corrupt { head: 50, tail: 0 })
    );
    // Fewer bytes published than a length takes.
    w.atomic64(HEAD_AT).store(3, Ordering::Release);
    assert!(matches!(
        r.pop(&mut out, MAX_CAP),
        Err(RingError::Corrupt { head: 3, tail: 0 })
    ));
    // A length past any record.
    w.copy_in(0, &u32::MAX.to_le_bytes());
    w.atomic64(HEAD_AT).store(cap, Ordering::Release);
    assert_eq!(
        r.pop(&mut out, MAX_CAP),
        Err(RingError::TooLong(u64::from(u32::MAX)))
    );
}

fn memfd(len: i64, seal: bool) -> OwnedFd {
    // SAFETY: a NUL-terminated name; the fd is ours.
    let fd = unsafe {
        OwnedFd::from_raw_fd(libc::memfd_create(
            c"t".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        ))
    };
    // SAFETY: plain calls on our own fd.
    unsafe {
        assert_eq!(libc::ftruncate(fd.as_raw_fd(), len), 0);
        if seal {
            libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK);
        }
    }
    fd
}

#[test]
fn only_a_sealed_ring_of_a_ring_size_with_a_ring_header_is_mapped() {
    let size = (HEADER + MIN_CAP) as i64;
    let why = |fd| {
        Ring::open(fd)
            .err()
            .and_then(|e| e.into_inner())
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert_eq!(
        why(memfd(size, false)),
        RingError::NotSealed.to_string(),
        "shrinkable"
    );
    assert_eq!(
        why(memfd(size + 1, true)),
        RingError::BadSize(size as u64 + 1).to_string()
    );
    assert_eq!(
        why(memfd(HEADER as i64 + 2048, true)),
        RingError::BadSize(HEADER as u64 + 2048).to_string(),
        "below MIN_CAP"
    );
    assert_eq!(
        why(memfd(size, true)),
        RingError::BadHeader.to_string(),
        "no magic"
    );
    // Not a file at all.
    let (bell, _) = Bell::pair().unwrap();
    assert!(Ring::open(bell.fd().try_clone_to_owned().unwrap()).is_err());
    // And one cannot make a ring of no ring size.
    assert!(Ring::create(MIN_CAP + 1).is_err());
    assert!(Ring::create(MAX_CAP * 2).is_err());
}

fn readable(b: &Bell) -> bool {
    let mut p = libc::pollfd {
        fd: b.fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

#[test]
fn a_bell_rings_its_peer_never_blocks_and_takes_only_a_datagram_socket() {
    let (b, theirs) = Bell::pair().unwrap();
    let peer = Bell::from_fd(theirs).unwrap();
    assert!(!readable(&b));
    peer.ring();
    peer.ring();
    assert!(readable(&b), "rung");
    assert!(!readable(&peer), "a ring goes to the other end only");
    b.drain();
    assert!(!readable(&b), "drained");
    // Far more rings than the socket holds: none blocks, and the bell
    // still wakes its waiter.
    for _ in 0..100_000 {
        peer.ring();
    }
    assert!(readable(&b));
    // A memfd or a stream socket is no bell.
    assert!(Bell::from_fd(memfd(4096, false)).is_err());
    let (s, _t) = std::os::unix::net::UnixStream::pair().unwrap();
    assert!(Bell::from_fd(OwnedFd::from(s)).is_err());
}

#[test]
fn a_writer_thread_and_a_reader_thread_keep_every_record_in_order() {
    let (w, r) = pair(MIN_CAP * 4);
    const N: u64 = 50_000;
    let writer = std::thread::spawn(move || {
        for i in 0..N {
            let rec = record(i, 8 + (i as usize % 300));
            let seq = i.to_le_bytes();
            while !w.push(&[&seq, &rec]).unwrap() {
                std::hint::spin_loop();
            }
        }
        w
    });
    let mut out = Vec::new();
    let mut next = 0u64;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while next < N {
        assert!(std::time::Instant::now() < end, "stuck at record {next}");
        if !r.pop(&mut out, MAX_CAP).unwrap() {
            std::hint::spin_loop();
            continue;
        }
        let seq = u64::from_le_bytes(out[..8].try_into().unwrap());
        assert_eq!(seq, next, "in order");
        assert_eq!(out[8..], record(next, 8 + (next as usize % 300))[..]);
        next += 1;
    }
    let w = writer.join().unwrap();
    assert!(!r.pop(&mut out, MAX_CAP).unwrap());
    assert_eq!(w.free().unwrap(), MIN_CAP * 4);
}

proptest! {
    /// Any interleaving of pushes and pops gives what a queue would.
    #[test]
    fn the_ring_behaves_as_a_bounded_queue(ops in proptest::collection::vec((any::<bool>(), 0usize..1500), 1..300)) {
        let (w, r) = pair(MIN_CAP);
        let mut model: VecDeque<Vec<u8>> = VecDeque::new();
        let mut used = 0usize;
        let mut out = Vec::new();
        for (k, (push, len)) in ops.into_iter().enumerate() {
            if push {
                let rec = record(k as u64, len);
                let fits = MIN_CAP - used >= LEN + len;
                prop_assert_eq!(w.push(&[&rec]).unwrap(), fits);
                if fits {
                    used += LEN + len;
                    model.push_back(rec);
                }
            } else {
                let got = r.pop(&mut out, MAX_CAP).unwrap();
                let want = model.pop_front();
                prop_assert_eq!(got, want.is_some());
                if let Some(rec) = want {
                    used -= LEN + rec.len();
                    prop_assert_eq!(&out, &rec);
                }
            }
            prop_assert_eq!(w.free().unwrap(), MIN_CAP - used);
        }
    }
}

#[test]
fn a_direction_handed_over_a_unix_socket_carries_records_and_wakes_its_reader() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let w = Direction::create(MIN_CAP).unwrap();
    w.hand_over(&a).unwrap();
    let r = Direction::take(&b).unwrap().expect("a ring");
    // A reader asleep is woken by the record, long before its timeout.
    let reader = std::thread::spawn(move || {
        let t0 = std::time::Instant::now();
        let mut out = Vec::new();
        let mut got = Vec::new();
        while got.len() < 3 && t0.elapsed() < std::time::Duration::from_secs(20) {
            if r.recv(&mut out, MAX_CAP).unwrap() {
                got.push(out.clone());
            } else {
                r.sleep_for_data(None, std::time::Duration::from_secs(10));
            }
        }
        (got, t0.elapsed())
    });
    for rec in [&b"one"[..], b"two", b"three"] {
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(w.send(&[rec]).unwrap());
    }
    let (got, took) = reader.join().unwrap();
    assert_eq!(got, [b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]);
    assert!(took < std::time::Duration::from_secs(5), "woken: {took:?}");
}

#[test]
fn a_hand_over_of_anything_else_is_refused() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let (bell, _theirs) = Bell::pair().unwrap();
    // Two fds, but the "ring" is a socket.
    crate::sys::send_fds(&a, &[HAND_OVER], &[bell.fd(), bell.fd()]).unwrap();
    assert!(Direction::take(&b).is_err());
    // One fd only.
    let w = Direction::create(MIN_CAP).unwrap();
    crate::sys::send_fds(&a, &[HAND_OVER], &[w.ring.fd()]).unwrap();
    assert!(Direction::take(&b).is_err());
    // The wrong tag.
    crate::sys::send_fds(&a, b"X", &[w.ring.fd(), bell.fd()]).unwrap();
    assert!(Direction::take(&b).is_err());
    // Three fds.
    crate::sys::send_fds(&a, &[HAND_OVER], &[w.ring.fd(), bell.fd(), bell.fd()]).unwrap();
    assert!(Direction::take(&b).is_err());
    // A decline is no ring, and no error.
    Direction::decline(&a).unwrap();
    assert!(Direction::take(&b).unwrap().is_none());
    // And then a good one still goes through.
    w.hand_over(&a).unwrap();
    assert!(Direction::take(&b).unwrap().is_some());
}

#[test]
fn records_cross_to_another_process_in_order_through_a_full_ring() {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    const N: u32 = 20_000;
    // SAFETY: the child only maps the ring and makes system calls (no
    // allocation, no locks) before _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = (|| {
            let w = Direction::create(MIN_CAP).ok()?;
            w.hand_over(&a).ok()?;
            let mut rec = [0u8; 600];
            for i in 0..N {
                let len = 4 + (i as usize * 13) % 596;
                rec[..4].copy_from_slice(&i.to_le_bytes());
                rec[4..len].fill(i as u8);
                while !w.send(&[&rec[..len]]).ok()? {
                    w.sleep_for_room(LEN + len, None, std::time::Duration::from_secs(1));
                }
            }
            Some(())
        })()
        .map_or(1, |()| 0);
        // SAFETY: ends the child at once.
        unsafe { libc::_exit(code) };
    }
    let r = Direction::take(&b).unwrap().expect("a ring");
    let mut out = Vec::new();
    let mut next = 0u32;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while next < N {
        assert!(std::time::Instant::now() < end, "stuck at {next}");
        if !r.recv(&mut out, MAX_CAP).unwrap() {
            // Sleep at times, so the writer fills the ring and waits too.
            r.sleep_for_data(None, std::time::Duration::from_millis(100));
            continue;
        }
        let len = 4 + (next as usize * 13) % 596;
        assert_eq!(out.len(), len, "record {next}");
        assert_eq!(u32::from_le_bytes(out[..4].try_into().unwrap()), next);
        assert!(out[4..].iter().all(|&x| x == next as u8));
        next += 1;
    }
    let mut status = 0;
    // SAFETY: reaps our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
}
