//! Servers for the driver's tests: an ionic function behind a vfio-user
//! socket, in a thread of the test process, serving one client.

#![allow(dead_code)] // each test file uses some of these

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ernic_core::{Completion, Gid, WcStatus};
use ernic_ionic::function::IonicFunction;
use ernic_ionic::profile;
use ernic_ionic::tap::FrameEndpoint;
use ernic_ionic_driver::{Buf, Cq, Driver, Pd, Qp};
use ernic_mesh::Mesh;
use ernic_vfio::proto::Capabilities;
use ernic_vfio::server::Server;

/// A fresh socket path for `name` under the temporary directory.
fn socket(name: &str) -> (PathBuf, UnixListener) {
    let dir = std::env::temp_dir().join(format!("ernic-drv-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    (path, listener)
}

fn spawn(listener: UnixListener, f: IonicFunction) {
    std::thread::spawn(move || {
        let mut s = Server::new(f, Capabilities::default());
        if let Ok((c, _)) = listener.accept() {
            let _ = s.serve(&c);
        }
    });
}

/// A server with `profile_spec`, `ini` (key = value lines) layered over it.
pub fn serve(name: &str, profile_spec: &str, ini: &str) -> PathBuf {
    let (path, listener) = socket(name);
    let mut id = profile::load(profile_spec).unwrap();
    profile::apply(&mut id, ini, "test").unwrap();
    let f = IonicFunction::new(id).with_shared_doorbells().unwrap();
    spawn(listener, f);
    path
}

/// A server for the function `f` the caller built (hooks installed).
pub fn serve_function(name: &str, f: IonicFunction) -> PathBuf {
    let (path, listener) = socket(name);
    spawn(listener, f);
    path
}

/// A server on `mesh` whose guest has `gid`; requests to a peer that
/// stops answering give up after 300 ms.
pub fn serve_on_mesh(name: &str, mesh: Arc<Mesh>, gid: Gid) -> PathBuf {
    serve_on_mesh_with(name, mesh, gid, |f| f)
}

/// [`serve_on_mesh`], with the function `add` makes of it (hooks
/// installed).
pub fn serve_on_mesh_with(
    name: &str,
    mesh: Arc<Mesh>,
    gid: Gid,
    add: impl FnOnce(IonicFunction) -> IonicFunction,
) -> PathBuf {
    let (path, listener) = socket(name);
    let id = ernic_ionic::bar0::Identity {
        request_timeout_ms: 300,
        ..Default::default()
    };
    spawn(
        listener,
        add(IonicFunction::new(id).with_mesh(mesh, vec![gid])),
    );
    path
}

/// An RC QP of `p_pd` and one of `q_pd`, connected to each other.
pub fn rc_pair(d: &mut Driver, cq: &Cq, p_pd: Pd, q_pd: Pd) -> (Qp, Qp) {
    let p = d.create_qp_in(p_pd, cq, 5).unwrap();
    let q = d.create_qp_in(q_pd, cq, 5).unwrap();
    d.connect(&p, q.qpn()).unwrap();
    d.connect(&q, p.qpn()).unwrap();
    (p, q)
}

/// Polls `cq` until every request in `ids` has completed (bounded);
/// answers the completions seen.
pub fn completions(d: &mut Driver, cq: &mut Cq, ids: &[u64]) -> Vec<Completion> {
    let mut got: Vec<Completion> = Vec::new();
    let mut buf = [Completion::EMPTY; 8];
    let end = Instant::now() + Duration::from_secs(5);
    while !ids.iter().all(|id| got.iter().any(|c| c.wr_id == *id)) {
        let k = d.poll_cq(cq, &mut buf);
        got.extend_from_slice(&buf[..k]);
        assert!(Instant::now() < end, "waiting for {ids:?}, have {got:?}");
    }
    got
}

/// The status request `id` completed with, among `wcs`.
pub fn status_in(wcs: &[Completion], id: u64) -> WcStatus {
    wcs.iter().find(|c| c.wr_id == id).unwrap().status
}

/// `buf` holds only `pattern`, repeated over all its bytes.
pub fn holds_only(d: &Driver, buf: &Buf, pattern: &[u8; 16]) -> bool {
    let mut all = vec![0u8; buf.len as usize];
    d.read(buf, 0, &mut all);
    all == pattern.repeat(all.len() / 16)
}

/// `buf` holds no 4 bytes in a row of `pattern`.
pub fn holds_none_of(d: &Driver, buf: &Buf, pattern: &[u8; 16]) -> bool {
    let mut all = vec![0u8; buf.len as usize];
    d.read(buf, 0, &mut all);
    !all.windows(4).any(|w| pattern.windows(4).any(|s| s == w))
}

/// The 8 bytes at `off` in `buf`, as an atomic sees them.
pub fn word(d: &Driver, buf: &Buf, off: u64) -> u64 {
    let mut v = [0u8; 8];
    d.read(buf, off, &mut v);
    u64::from_le_bytes(v)
}

/// An ARP request from 10.0.0.2 for `target`.
pub fn arp(target: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].fill(0xff);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f[28..32].copy_from_slice(&[10, 0, 0, 2]);
    f[38..42].copy_from_slice(&target);
    f
}

/// Polls `f` until it answers, for at most 5 s.
pub fn within<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A segment holding one host that takes every frame the guest sends and
/// sends it back; its descriptor holds one byte per frame waiting.
#[derive(Debug)]
pub struct Echo {
    queued: VecDeque<Vec<u8>>,
    wake: UnixDatagram,
    fd: UnixDatagram,
}

impl Echo {
    /// An echo with nothing waiting.
    pub fn new() -> Echo {
        let (wake, fd) = UnixDatagram::pair().unwrap();
        fd.set_nonblocking(true).unwrap();
        Echo {
            queued: VecDeque::new(),
            wake,
            fd,
        }
    }
}

impl FrameEndpoint for Echo {
    fn claim_tx(&mut self, frame: &[u8]) -> bool {
        self.queued.push_back(frame.to_vec());
        let _ = self.wake.send(&[1]);
        true
    }
    fn peek_rx(&mut self) -> Option<&[u8]> {
        self.queued.front().map(|f| &f[..])
    }
    fn pop_rx(&mut self) {
        self.queued.pop_front();
        let _ = self.fd.recv(&mut [0u8; 1]);
    }
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
