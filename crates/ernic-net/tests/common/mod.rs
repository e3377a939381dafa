//! Helpers shared by the protocol tests: two endpoints, a connection
//! between them, and a transfer that checks every byte and size.
#![allow(dead_code, unsafe_code)]

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ernic_net::config::Config;
use ernic_net::provider::Provider;
use ernic_net::rdma::{Connector, Endpoint, MrHandle, RecvComm, Request, SendComm};

pub const T: Duration = Duration::from_secs(60);

pub struct Side {
    pub ep: Endpoint,
    pub buf: Vec<u8>,
    pub mr: MrHandle,
}

pub fn side(p: &dyn Provider, rails: usize, cfg: &Config, bytes: usize) -> Side {
    side_with(p, rails, 1, cfg, bytes)
}

pub fn side_with(p: &dyn Provider, rails: usize, ctls: usize, cfg: &Config, bytes: usize) -> Side {
    let mut ep = Endpoint::open_with(p, rails, ctls, cfg.clone()).unwrap();
    let mut buf = vec![0u8; bytes];
    // SAFETY: `buf` is never moved or dropped while the endpoint lives
    // (the Side owns both; the endpoint drops first).
    let mr = unsafe { ep.reg(buf.as_mut_ptr(), buf.len()) }.unwrap();
    Side { ep, buf, mr }
}

pub fn connect(a: &mut Side, b: &mut Side) -> (SendComm, RecvComm) {
    let (l, h) = b.ep.listen().unwrap();
    assert!(h.0.len() <= 128);
    let mut c = Connector::new(h);
    let (mut s, mut r) = (None, None);
    let end = Instant::now() + T;
    while s.is_none() || r.is_none() {
        if s.is_none() {
            s = a.ep.connect(&mut c).unwrap();
        }
        if r.is_none() {
            r = b.ep.accept(l).unwrap();
        }
        assert!(Instant::now() < end, "connect/accept did not finish");
    }
    b.ep.close(l).unwrap();
    (s.unwrap(), r.unwrap())
}

pub fn pattern(seed: usize, len: usize) -> impl Iterator<Item = u8> {
    (0..len).map(move |i| (i.wrapping_mul(31) ^ seed.wrapping_mul(0x9e37)) as u8)
}

/// Sends `sizes[i]` into receives of `recv_sizes[i]`, keeping up to
/// `depth` of each in flight; checks every byte and every reported size.
/// Returns how many sends failed (only injected failures are accepted).
pub fn transfer(
    a: &mut Side,
    b: &mut Side,
    s: SendComm,
    r: RecvComm,
    sizes: &[usize],
    recv_sizes: &[usize],
    depth: usize,
) -> usize {
    let mut failed = 0;
    let slot = recv_sizes.iter().copied().max().unwrap_or(0).max(1);
    assert!(slot * depth <= a.buf.len() && slot * depth <= b.buf.len());
    let (mut next_send, mut next_recv) = (0, 0);
    let mut sends: VecDeque<(usize, Request)> = VecDeque::new();
    let mut recvs: VecDeque<(usize, Request)> = VecDeque::new();
    let mut done = 0;
    let end = Instant::now() + T;
    while done < sizes.len() {
        assert!(
            Instant::now() < end,
            "stuck at {done} of {} messages",
            sizes.len()
        );
        while next_recv < sizes.len() && recvs.len() < depth {
            let off = (next_recv % depth) * slot;
            let p = b.buf.as_mut_ptr().wrapping_add(off);
            // SAFETY: the slot lies inside the registered buffer, which
            // outlives the request, and is not touched until it completes.
            match unsafe { b.ep.irecv(r, p, recv_sizes[next_recv], b.mr) }.unwrap() {
                Some(req) => {
                    recvs.push_back((next_recv, req));
                    next_recv += 1;
                }
                None => break,
            }
        }
        while next_send < sizes.len() && sends.len() < depth {
            let off = (next_send % depth) * slot;
            // The slot is free: its previous send completed.
            for (d, v) in a.buf[off..off + sizes[next_send]]
                .iter_mut()
                .zip(pattern(next_send, sizes[next_send]))
            {
                *d = v;
            }
            let p = a.buf.as_ptr().wrapping_add(off);
            // SAFETY: as for the receive: the slot is left alone until the
            // send completes.
            match unsafe { a.ep.isend(s, p, sizes[next_send], a.mr) }.unwrap() {
                Some(req) => {
                    sends.push_back((next_send, req));
                    next_send += 1;
                }
                None => break,
            }
        }
        if let Some(&(i, req)) = sends.front() {
            if let Some(n) = send_done(a, req, &mut failed) {
                assert_eq!(n.unwrap_or(sizes[i]), sizes[i]);
                sends.pop_front();
            }
        }
        if let Some(&(i, req)) = recvs.front() {
            if let Some(n) = b.ep.test(req).unwrap() {
                assert_eq!(
                    n, sizes[i],
                    "message {i}: a receive completes with the sent size"
                );
                let off = (i % depth) * slot;
                assert!(
                    b.buf[off..off + n].iter().copied().eq(pattern(i, n)),
                    "message {i} of {n} bytes arrived intact"
                );
                recvs.pop_front();
                done += 1;
            }
        }
    }
    // Sends complete too.
    while let Some((i, req)) = sends.pop_front() {
        let end = Instant::now() + T;
        loop {
            if let Some(n) = send_done(a, req, &mut failed) {
                assert_eq!(n.unwrap_or(sizes[i]), sizes[i]);
                break;
            }
            assert!(Instant::now() < end);
        }
    }
    failed
}

/// Tests a send: `Some(Some(size))` done, `Some(None)` failed by an
/// injected error (counted), `None` still running.
pub fn send_done(a: &mut Side, req: Request, failed: &mut usize) -> Option<Option<usize>> {
    match a.ep.test(req) {
        Ok(Some(n)) => Some(Some(n)),
        Ok(None) => None,
        Err(e) => {
            assert!(
                e.to_string().contains("injected"),
                "unexpected failure: {e}"
            );
            *failed += 1;
            Some(None)
        }
    }
}

pub fn run_on(
    p: &dyn Provider,
    rails: usize,
    cfg: Config,
    sizes: &[usize],
    recv_sizes: &[usize],
    depth: usize,
) -> usize {
    let slot = recv_sizes.iter().copied().max().unwrap_or(0).max(1);
    let mut a = side(p, rails, &cfg, slot * depth);
    let mut b = side(p, rails, &cfg, slot * depth);
    let (s, r) = connect(&mut a, &mut b);
    let failed = transfer(&mut a, &mut b, s, r, sizes, recv_sizes, depth);
    a.ep.close(s).unwrap();
    b.ep.close(r).unwrap();
    failed
}

pub const SIZES: [usize; 12] = [
    0,
    1,
    100,
    8191,
    8192,
    8193,
    65535,
    65536,
    131072,
    131073,
    3 * 131072 + 1,
    1 << 20,
];
