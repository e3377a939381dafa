//! The reserved DMA key 0 through the real socket. An SGE with lkey 0
//! names a bus address, checked against no MR and no PD, so only the QPs
//! the driver creates privileged may use it (`IONIC_QPF_PRIVILEGED` in
//! CREATE_QP, which Linux's driver sets on the QPs of kernel PDs: those
//! it took a DMA MR for). A guest process's QP (its PD from `alloc_pd`,
//! as `ibv_alloc_pd`'s) naming key 0 in a SEND, WRITE, READ, atomic,
//! datagram or receive gets a local protection error, and the memory key
//! 0 pointed at is neither read nor written. The kernel's QPs (the
//! driver's own PD, the GSI QP, a PD it took a DMA MR for) keep using it;
//! a peer never may.

use ernic_core::{Completion, Lkey, QpType, RemoteAddr, Rkey, SendOp, SendWr, Sge, WcStatus};
use ernic_ionic_driver::{Buf, Cq, Driver, Mr, Pd, Qp, QpSpec};

mod common;
use common::{holds_none_of, holds_only, status_in};

/// What the kernel's buffer holds: a secret, repeated.
const SECRET: &[u8; 16] = b"kernel's secret!";
/// Bytes of each buffer.
const LEN: u64 = 16 << 10;

/// A guest: a process with PD `user`, RC QPs `a` and `b` connected to
/// each other and buffer `ub` under MR `mu`; and the kernel's buffer `kb`,
/// full of [`SECRET`], which the process has no key for.
struct Guest {
    d: Driver,
    cq: Cq,
    user: Pd,
    a: Qp,
    b: Qp,
    ub: Buf,
    mu: Mr,
    kb: Buf,
}

fn guest(name: &str) -> Guest {
    let path = common::serve(&format!("dma-key-{name}"), "compat", "");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let cq = d.create_cq(7).unwrap();
    let user = d.alloc_pd().unwrap();
    assert!(!d.is_privileged(user), "a process's PD");
    let (a, b) = pair(&mut d, user, &cq);
    let ub = d.alloc(LEN).unwrap();
    let mu = d.reg_mr_in(user, ub).unwrap();
    let kb = d.alloc(LEN).unwrap();
    assert!(d.write(&kb, 0, &SECRET.repeat((LEN / 16) as usize)));
    Guest {
        d,
        cq,
        user,
        a,
        b,
        ub,
        mu,
        kb,
    }
}

/// Two RC QPs of `pd` connected to each other.
fn pair(d: &mut Driver, pd: Pd, cq: &Cq) -> (Qp, Qp) {
    common::rc_pair(d, cq, pd, pd)
}

impl Guest {
    /// Polls until every request in `ids` has completed (bounded);
    /// answers the completions seen.
    fn completions(&mut self, ids: &[u64]) -> Vec<Completion> {
        common::completions(&mut self.d, &mut self.cq, ids)
    }

    /// The status request `id` completed with.
    fn status(&mut self, id: u64) -> WcStatus {
        status_in(&self.completions(&[id]), id)
    }

    /// Key 0 over `len` bytes at `off` in the kernel's buffer.
    fn key0(&self, off: u64, len: u32) -> Sge {
        Sge {
            addr: self.kb.addr() + off,
            len,
            lkey: Lkey(0),
        }
    }

    /// The kernel's buffer still holds only the secret.
    fn kernel_intact(&self) -> bool {
        holds_only(&self.d, &self.kb, SECRET)
    }

    /// The process's buffer holds no byte of the kernel's secret.
    fn user_clean(&self) -> bool {
        holds_none_of(&self.d, &self.ub, SECRET)
    }

    /// The 8 bytes at `off` in the process's buffer.
    fn user_word(&self, off: u64) -> u64 {
        common::word(&self.d, &self.ub, off)
    }

    /// Posts `wr` on the process's QP `a`.
    fn post_a(&mut self, wr: &SendWr<'_>) {
        self.d.post_send(&mut self.a, wr).unwrap();
    }
}

#[test]
fn send_from_key_0_of_a_process_qp_is_a_local_protection_error() {
    let mut g = guest("send");
    let into = g.mu.sge(0x1000, 256);
    g.d.post_recv(&mut g.b, 50, into).unwrap();
    let sgl = [g.key0(0, 64)];
    g.post_a(&SendWr::new(1, SendOp::Send).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.user_clean(), "the kernel's bytes reached the receive");
    assert!(g.kernel_intact());
}

#[test]
fn write_from_key_0_of_a_process_qp_is_a_local_protection_error() {
    let mut g = guest("write");
    let sgl = [g.key0(0, 64)];
    let to = SendOp::Write(g.mu.remote(0x2000));
    g.post_a(&SendWr::new(1, to).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.user_clean(), "the kernel's bytes were written out");
    assert!(g.kernel_intact());
}

#[test]
fn read_into_key_0_of_a_process_qp_is_a_local_protection_error() {
    let mut g = guest("read");
    g.d.write(&g.ub, 0x2000, b"process overwrites the kernel");
    let sgl = [g.key0(0x100, 29)];
    g.post_a(&SendWr::new(1, SendOp::Read(g.mu.remote(0x2000))).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.kernel_intact(), "the READ landed in the kernel's memory");
}

/// The process's word at 0x3800 holds `old`; its atomic `op` on it, the
/// old value answered into key 0 at `off`, is a local protection error,
/// the kernel's memory unchanged and the word still `old` (`what` did not
/// happen).
fn atomic_into_key_0(g: &mut Guest, old: u64, op: SendOp, off: u64, what: &str) {
    g.d.write(&g.ub, 0x3800, &old.to_le_bytes());
    let sgl = [g.key0(off, 8)];
    g.post_a(&SendWr::new(1, op).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(
        g.kernel_intact(),
        "the old value went into the kernel's memory"
    );
    assert_eq!(g.user_word(0x3800), old, "the {what} happened anyway");
}

#[test]
fn compare_and_swap_into_key_0_of_a_process_qp_is_a_local_protection_error() {
    let mut g = guest("cas");
    let cas = SendOp::AtomicCas {
        remote: g.mu.remote(0x3800),
        compare: 7,
        swap: 0x5858_5858_5858_5858,
    };
    atomic_into_key_0(&mut g, 7, cas, 0, "swap");
}

#[test]
fn fetch_and_add_into_key_0_of_a_process_qp_is_a_local_protection_error() {
    let mut g = guest("fa");
    let fa = SendOp::AtomicFa {
        remote: g.mu.remote(0x3800),
        add: 5,
    };
    atomic_into_key_0(&mut g, 37, fa, 0x8, "add");
}

/// With receive 50 posted into key 0, `post` sends 25 bytes of the
/// process's buffer as request 1: the receive is a local protection
/// error, the SEND a remote operation error, the kernel's memory unchanged.
fn send_into_key_0(g: &mut Guest, post: impl FnOnce(&mut Guest, &SendWr<'_>)) {
    g.d.write(&g.ub, 0, b"process writes the kernel");
    let sgl = [g.mu.sge(0, 25)];
    post(g, &SendWr::new(1, SendOp::Send).sgl(&sgl));
    let wcs = g.completions(&[1, 50]);
    let st = |id: u64| status_in(&wcs, id);
    assert_eq!(st(50), WcStatus::LocProtErr, "the receiver's: {wcs:?}");
    assert_eq!(st(1), WcStatus::RemOpErr, "the sender's: {wcs:?}");
    assert!(g.kernel_intact(), "the SEND landed in the kernel's memory");
}

#[test]
fn a_receive_into_key_0_of_a_process_qp_fails_at_the_receiver() {
    let mut g = guest("recv");
    let into = g.key0(0x1000, 256);
    g.d.post_recv(&mut g.b, 50, into).unwrap();
    send_into_key_0(&mut g, |g, wr| g.post_a(wr));
}

/// An SRQ's receives are the receiving QP's: one of a process's PD with
/// key 0 fails as a receive of its own ring does.
#[test]
fn a_receive_from_an_srq_into_key_0_fails_at_the_receiver() {
    let mut g = guest("srq");
    let mut srq = g.d.create_srq_in(g.user, 5, 0).unwrap();
    let spec = QpSpec {
        pd: g.user,
        qp_type: QpType::Rc,
        send_cq: &g.cq,
        recv_cq: &g.cq,
        srq: Some(&srq),
        caps: g.d.qp_caps(&g.a),
    };
    let c = g.d.create_qp_with(&spec).unwrap();
    let mut p = g.d.create_qp_in(g.user, &g.cq, 5).unwrap();
    g.d.connect(&p, c.qpn()).unwrap();
    g.d.connect(&c, p.qpn()).unwrap();
    let into = g.key0(0x1000, 256);
    g.d.post_srq_recv(&mut srq, 50, into).unwrap();
    send_into_key_0(&mut g, |g, wr| g.d.post_send(&mut p, wr).unwrap());
}

/// A datagram from key 0 of a process's UD QP is refused before it goes
/// anywhere; the GSI QP (the kernel's, as ib_core's MAD layer makes it)
/// sends and receives through key 0.
#[test]
fn datagrams_from_key_0_go_from_the_gsi_qp_only() {
    let mut g = guest("ud");
    let here = "::ffff:10.0.0.1".parse().unwrap();
    let kpd = g.d.pd();
    let mut v = g.d.create_ud_qp_in(kpd, &g.cq, 5, false, 0x2222).unwrap();
    let mut gsi = g.d.create_ud_qp(&g.cq, 5, true, 0x8001_0000).unwrap();
    let k_ah = g.d.create_ah_in(kpd, here).unwrap();
    let mut u =
        g.d.create_ud_qp_in(g.user, &g.cq, 5, false, 0x1111)
            .unwrap();
    let u_ah = g.d.create_ah_in(g.user, here).unwrap();
    // v receives through key 0 into the kernel's buffer at 0x3000.
    let into = g.key0(0x3000, 256);
    g.d.post_recv(&mut v, 50, into).unwrap();
    let from = g.key0(0, 16);
    g.d.post_send_ud(&mut u, 1, u_ah, v.qpn(), 0x2222, from)
        .unwrap();
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.kernel_intact(), "the process's datagram arrived");
    g.d.post_send_ud(&mut gsi, 2, k_ah, v.qpn(), 0x2222, from)
        .unwrap();
    let wcs = g.completions(&[2, 50]);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
    let mut got = [0u8; 16];
    g.d.read(&g.kb, 0x3000 + 40, &mut got);
    assert_eq!(&got, SECRET, "the GSI QP's datagram, after its GRH");
}

/// The kernel's own QPs (the driver's PD, privileged from attach as
/// ib_core's PDs are) use key 0 for every opcode.
#[test]
fn the_kernels_qps_use_key_0_for_every_opcode() {
    let mut g = guest("kernel");
    let kpd = g.d.pd();
    assert!(g.d.is_privileged(kpd));
    let (mut p, mut q) = pair(&mut g.d, kpd, &g.cq);
    let kmr = g.d.reg_mr_in(kpd, g.ub).unwrap();
    g.d.write(&g.kb, 0x100, b"sent by key 0..!");
    // A receive into key 0, a SEND from it.
    let into = g.key0(0x1000, 64);
    g.d.post_recv(&mut q, 50, into).unwrap();
    let from = [g.key0(0x100, 16)];
    g.d.post_send(&mut p, &SendWr::new(1, SendOp::Send).sgl(&from))
        .unwrap();
    // A WRITE from key 0, a READ into it, a fetch-and-add answering into it.
    let to = SendOp::Write(kmr.remote(0x2000));
    g.d.post_send(&mut p, &SendWr::new(2, to).sgl(&from))
        .unwrap();
    let back = [g.key0(0x1800, 16)];
    let read = SendOp::Read(kmr.remote(0x2000));
    g.d.post_send(&mut p, &SendWr::new(3, read).sgl(&back))
        .unwrap();
    g.d.write(&g.ub, 0x3800, &40u64.to_le_bytes());
    let old = [g.key0(0x1900, 8)];
    let fa = SendOp::AtomicFa {
        remote: kmr.remote(0x3800),
        add: 2,
    };
    g.d.post_send(&mut p, &SendWr::new(4, fa).sgl(&old))
        .unwrap();
    let wcs = g.completions(&[1, 2, 3, 4, 50]);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
    let mut got = [0u8; 16];
    for (buf, at) in [(g.kb, 0x1000), (g.ub, 0x2000), (g.kb, 0x1800)] {
        g.d.read(&buf, at, &mut got);
        assert_eq!(&got, b"sent by key 0..!", "at {at:#x}");
    }
    let mut v = [0u8; 8];
    g.d.read(&g.kb, 0x1900, &mut v);
    assert_eq!(u64::from_le_bytes(v), 40, "the old value, through key 0");
    assert_eq!(g.user_word(0x3800), 42);
}

/// A PD the driver takes a DMA MR for (what ib_core does for each kernel
/// PD, a ULP's among them) answers key 0 and makes its QPs privileged.
#[test]
fn a_pd_with_a_dma_mr_makes_privileged_qps() {
    let mut g = guest("dma-mr");
    let ulp = g.d.alloc_pd().unwrap();
    assert_eq!(g.d.get_dma_mr(ulp), Lkey(0));
    assert!(g.d.is_privileged(ulp));
    let (mut p, mut q) = pair(&mut g.d, ulp, &g.cq);
    let into = g.key0(0x1000, 64);
    g.d.post_recv(&mut q, 50, into).unwrap();
    g.d.write(&g.kb, 0x100, b"a kernel ULP's..");
    let from = [g.key0(0x100, 16)];
    g.d.post_send(&mut p, &SendWr::new(1, SendOp::Send).sgl(&from))
        .unwrap();
    let wcs = g.completions(&[1, 50]);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
    let mut got = [0u8; 16];
    g.d.read(&g.kb, 0x1000, &mut got);
    assert_eq!(&got, b"a kernel ULP's..");
    // A freed id handed out again is a process's PD once more.
    g.d.dealloc_pd(ulp);
    let again = g.d.alloc_pd().unwrap();
    assert_eq!(again, ulp);
    assert!(!g.d.is_privileged(again));
}

/// Key 0 is never an rkey, even toward a privileged QP from another:
/// a WRITE or READ naming rkey 0 is a remote access error, and the
/// memory it names is neither written nor read.
#[test]
fn rkey_0_is_refused_even_between_privileged_qps() {
    let mut g = guest("rkey-0");
    let kpd = g.d.pd();
    let (mut p, _q) = pair(&mut g.d, kpd, &g.cq);
    let kmr = g.d.reg_mr_in(kpd, g.ub).unwrap();
    g.d.write(&g.ub, 0, b"overwrite it all");
    let sgl = [kmr.sge(0, 16)];
    let at_kb = RemoteAddr {
        addr: g.kb.addr(),
        rkey: Rkey(0),
    };
    g.d.post_send(&mut p, &SendWr::new(1, SendOp::Write(at_kb)).sgl(&sgl))
        .unwrap();
    assert_eq!(g.status(1), WcStatus::RemAccessErr);
    assert!(g.kernel_intact(), "a WRITE through rkey 0 landed");
    let (mut r, _s) = pair(&mut g.d, kpd, &g.cq);
    let into = [kmr.sge(0x1000, 64)];
    g.d.post_send(&mut r, &SendWr::new(2, SendOp::Read(at_kb)).sgl(&into))
        .unwrap();
    assert_eq!(g.status(2), WcStatus::RemAccessErr);
    assert!(g.user_clean(), "a READ through rkey 0 fetched the secret");
}
