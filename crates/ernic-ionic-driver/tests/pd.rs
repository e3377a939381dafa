//! Protection domains between two processes of one guest, through the
//! real socket: the driver gives each process a PD as Linux's driver does
//! (`ionic_alloc_pd`) and names it in every CREATE_QP, CREATE_MR, CREATE_AH
//! and CREATE_SRQ. Process X tries to reach process Y's memory and keys
//! through every opcode; each attempt completes with the status hardware
//! gives (local protection error for an SGE, remote access error for an
//! rkey, ...), and Y's memory is neither read nor changed.

use ernic_core::{Completion, RemoteAddr, SendOp, SendWr, Sge, WcOpcode, WcStatus};
use ernic_ionic_driver::{Buf, Cq, Driver, Error, Mr, Pd, Qp};

mod common;
use common::{holds_none_of, holds_only, rc_pair, status_in};

/// What Y's buffer holds: a secret, repeated.
const SECRET: &[u8; 16] = b"Y's secret bytes";
/// Bytes of each process's buffer.
const LEN: u64 = 16 << 10;

/// Two processes of one guest. X (PD `x`) has RC QPs `a` and `b`
/// connected to each other and buffer `xb` under MR `mx`; Y (PD `y`) has
/// RC QPs `c` and `e` connected to each other and buffer `yb`, full of
/// [`SECRET`], under MR `my`.
struct Guest {
    d: Driver,
    cq: Cq,
    x: Pd,
    y: Pd,
    a: Qp,
    b: Qp,
    c: Qp,
    e: Qp,
    xb: Buf,
    mx: Mr,
    yb: Buf,
    my: Mr,
}

fn guest(name: &str) -> Guest {
    let path = common::serve(name, "compat", "");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let cq = d.create_cq(7).unwrap();
    let (x, y) = (d.alloc_pd().unwrap(), d.alloc_pd().unwrap());
    assert_ne!(x.id(), y.id());
    let (a, b) = rc_pair(&mut d, &cq, x, x);
    let (c, e) = rc_pair(&mut d, &cq, y, y);
    let xb = d.alloc(LEN).unwrap();
    let mx = d.reg_mr_in(x, xb).unwrap();
    let yb = d.alloc(LEN).unwrap();
    let my = d.reg_mr_in(y, yb).unwrap();
    assert!(d.write(&yb, 0, &SECRET.repeat((LEN / 16) as usize)));
    Guest {
        d,
        cq,
        x,
        y,
        a,
        b,
        c,
        e,
        xb,
        mx,
        yb,
        my,
    }
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

    /// Y's buffer still holds only the secret.
    fn y_intact(&self) -> bool {
        holds_only(&self.d, &self.yb, SECRET)
    }

    /// X's buffer holds no byte of Y's secret.
    fn x_clean(&self) -> bool {
        holds_none_of(&self.d, &self.xb, SECRET)
    }

    /// An SGE of `len` bytes at `off` in Y's buffer, under Y's key.
    fn y_sge(&self, off: u64, len: u32) -> Sge {
        self.my.sge(off, len)
    }

    /// A receive on `b` into X's buffer at 0x1000.
    fn post_b_recv(&mut self, wr_id: u64) {
        let sge = self.mx.sge(0x1000, 256);
        self.d.post_recv(&mut self.b, wr_id, sge).unwrap();
    }

    /// Posts `wr` on X's QP `a`.
    fn post_a(&mut self, wr: &SendWr<'_>) {
        self.d.post_send(&mut self.a, wr).unwrap();
    }
}

#[test]
fn send_from_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-send");
    g.post_b_recv(50);
    let sgl = [g.y_sge(0, 64)];
    g.post_a(&SendWr::new(1, SendOp::Send).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.x_clean(), "Y's bytes reached X's receive buffer");
    assert!(g.y_intact());
}

#[test]
fn a_receive_into_an_sge_of_another_pd_fails_at_the_receiver() {
    let mut g = guest("pd-recv");
    let into_y = g.y_sge(0x1000, 256);
    g.d.post_recv(&mut g.b, 50, into_y).unwrap();
    g.d.write(&g.xb, 0, b"X writes into Y's buffer");
    let sgl = [g.mx.sge(0, 24)];
    g.post_a(&SendWr::new(1, SendOp::Send).sgl(&sgl));
    let wcs = g.completions(&[1, 50]);
    let st = |id: u64| status_in(&wcs, id);
    assert_eq!(st(50), WcStatus::LocProtErr, "the receiver's: {wcs:?}");
    assert_eq!(st(1), WcStatus::RemOpErr, "the sender's: {wcs:?}");
    assert!(g.y_intact(), "X's SEND landed in Y's buffer");
}

#[test]
fn write_from_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-write-local");
    let sgl = [g.y_sge(0, 64)];
    let to_x = SendOp::Write(g.mx.remote(0x2000));
    g.post_a(&SendWr::new(1, to_x).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.x_clean(), "Y's bytes were written into X's buffer");
}

#[test]
fn write_to_an_rkey_of_another_pd_is_a_remote_access_error() {
    let mut g = guest("pd-write-remote");
    g.d.write(&g.xb, 0, b"X overwrites Y's memory");
    let sgl = [g.mx.sge(0, 23)];
    g.post_a(&SendWr::new(1, SendOp::Write(g.my.remote(0x100))).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::RemAccessErr);
    assert!(g.y_intact(), "X's WRITE changed Y's memory");
}

#[test]
fn read_into_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-read-local");
    g.d.write(&g.xb, 0x2000, b"X's bytes go to Y");
    let sgl = [g.y_sge(0x100, 17)];
    g.post_a(&SendWr::new(1, SendOp::Read(g.mx.remote(0x2000))).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.y_intact(), "X's READ wrote into Y's memory");
}

#[test]
fn read_from_an_rkey_of_another_pd_is_a_remote_access_error() {
    let mut g = guest("pd-read-remote");
    let sgl = [g.mx.sge(0x3000, 64)];
    g.post_a(&SendWr::new(1, SendOp::Read(g.my.remote(0))).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::RemAccessErr);
    assert!(g.x_clean(), "X's READ fetched Y's secret");
}

/// Y's first 8 bytes, as an atomic sees them.
fn y_word(g: &Guest) -> u64 {
    common::word(&g.d, &g.yb, 0)
}

/// X's atomic `op` on Y's memory, answering into X's buffer at 0x3000,
/// is a remote access error: Y's memory unchanged (`what` did not change
/// it), no old value back in X's.
fn atomic_on_y(g: &mut Guest, op: SendOp, what: &str) {
    let sgl = [g.mx.sge(0x3000, 8)];
    g.post_a(&SendWr::new(1, op).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::RemAccessErr);
    assert!(g.y_intact(), "X's {what} changed Y's memory");
    assert!(g.x_clean(), "the old value came back to X");
}

/// X's atomic `op` on X's own memory, answering into Y's buffer, is a
/// local protection error: no old value written into Y's memory.
fn atomic_into_y(g: &mut Guest, op: SendOp) {
    let sgl = [g.y_sge(0, 8)];
    g.post_a(&SendWr::new(1, op).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.y_intact(), "the old value was written into Y's memory");
}

#[test]
fn compare_and_swap_on_an_rkey_of_another_pd_is_a_remote_access_error() {
    let mut g = guest("pd-cas-remote");
    let cas = SendOp::AtomicCas {
        remote: g.my.remote(0),
        compare: y_word(&g),
        swap: 0x5858_5858_5858_5858,
    };
    atomic_on_y(&mut g, cas, "compare-and-swap");
}

#[test]
fn compare_and_swap_into_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-cas-local");
    g.d.write(&g.xb, 0x3800, &7u64.to_le_bytes());
    let cas = SendOp::AtomicCas {
        remote: g.mx.remote(0x3800),
        compare: 7,
        swap: 0x5858_5858_5858_5858,
    };
    atomic_into_y(&mut g, cas);
}

#[test]
fn fetch_and_add_on_an_rkey_of_another_pd_is_a_remote_access_error() {
    let mut g = guest("pd-fa-remote");
    let fa = SendOp::AtomicFa {
        remote: g.my.remote(0),
        add: 1,
    };
    atomic_on_y(&mut g, fa, "fetch-and-add");
}

#[test]
fn fetch_and_add_into_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-fa-local");
    let fa = SendOp::AtomicFa {
        remote: g.mx.remote(0x3800),
        add: 1,
    };
    atomic_into_y(&mut g, fa);
}

#[test]
fn send_with_immediate_from_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-send-imm");
    g.post_b_recv(50);
    let sgl = [g.y_sge(0, 64)];
    g.post_a(&SendWr::new(1, SendOp::SendImm(0x1234)).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.x_clean(), "Y's bytes reached X's receive buffer");
}

#[test]
fn write_with_immediate_to_an_rkey_of_another_pd_is_a_remote_access_error() {
    let mut g = guest("pd-write-imm-remote");
    g.post_b_recv(50);
    g.d.write(&g.xb, 0, b"X overwrites Y's memory");
    let op = SendOp::WriteImm(g.my.remote(0x100), 0x1234);
    let sgl = [g.mx.sge(0, 23)];
    g.post_a(&SendWr::new(1, op).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::RemAccessErr);
    assert!(g.y_intact(), "X's WRITE with immediate changed Y's memory");
}

#[test]
fn write_with_immediate_from_an_sge_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-write-imm-local");
    g.post_b_recv(50);
    let op = SendOp::WriteImm(g.mx.remote(0x2000), 0x1234);
    let sgl = [g.y_sge(0, 64)];
    g.post_a(&SendWr::new(1, op).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    assert!(g.x_clean(), "Y's bytes were written into X's buffer");
}

/// Y's fast-registration MR, bound by Y's QP `c` to the first page of Y's
/// buffer: answers its key. Y's peer `e` can WRITE through it.
fn y_fast_mr(g: &mut Guest) -> u32 {
    let fast = g.d.alloc_fast_mr_in(g.y, 4).unwrap();
    let yb = g.yb;
    let key = g.d.post_reg_mr(&mut g.c, 90, fast, 1, &yb, 4096).unwrap();
    assert_eq!(g.status(90), WcStatus::Success);
    key
}

/// Y's peer `e` WRITEs "for Y only" through `key` at `off` in Y's buffer;
/// answers the status.
fn y_writes_through(g: &mut Guest, key: u32, off: u64) -> WcStatus {
    let src = g.d.alloc(4096).unwrap();
    g.d.write(&src, 0, b"for Y only");
    let src_mr = g.d.reg_mr_in(g.y, src).unwrap();
    let to = RemoteAddr {
        addr: g.yb.addr() + off,
        rkey: ernic_core::Rkey(key),
    };
    let sgl = [src_mr.sge(0, 10)];
    g.d.post_send(&mut g.e, &SendWr::new(91, SendOp::Write(to)).sgl(&sgl))
        .unwrap();
    g.status(91)
}

#[test]
fn reg_mr_of_an_mr_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-reg-mr");
    let key = y_fast_mr(&mut g);
    // X rebinds Y's MR over X's own buffer, under the next key.
    let (xb, fast) = (g.xb, key & !0xff);
    let taken = g.d.post_reg_mr(&mut g.a, 1, fast, 2, &xb, 4096).unwrap();
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    // Y's key still reaches Y's page, and X's rebinding key nothing.
    assert_eq!(y_writes_through(&mut g, key, 0x800), WcStatus::Success);
    let mut got = [0u8; 10];
    g.d.read(&g.yb, 0x800, &mut got);
    assert_eq!(&got, b"for Y only");
    let mut seen = vec![0u8; 4096];
    g.d.read(&g.xb, 0, &mut seen);
    assert!(seen.iter().all(|&b| b == 0), "Y's WRITE went to X's buffer");
    let sgl = [g.mx.sge(0, 8)];
    let through = RemoteAddr {
        addr: g.xb.addr(),
        rkey: ernic_core::Rkey(taken),
    };
    g.post_a(&SendWr::new(2, SendOp::Write(through)).sgl(&sgl));
    // a is in the error state after its failed REG_MR: flushed, or refused.
    assert_ne!(g.status(2), WcStatus::Success);
}

#[test]
fn local_inv_of_a_key_of_another_pd_is_a_local_protection_error() {
    let mut g = guest("pd-local-inv");
    let key = y_fast_mr(&mut g);
    g.d.post_local_inv(&mut g.a, 1, key).unwrap();
    assert_eq!(g.status(1), WcStatus::LocProtErr);
    // Y's key still works.
    assert_eq!(y_writes_through(&mut g, key, 0x900), WcStatus::Success);
    let mut got = [0u8; 10];
    g.d.read(&g.yb, 0x900, &mut got);
    assert_eq!(&got, b"for Y only");
}

#[test]
fn send_with_invalidate_of_a_key_of_another_pd_is_a_remote_invalid_request() {
    let mut g = guest("pd-send-inv");
    let key = y_fast_mr(&mut g);
    g.post_b_recv(50);
    g.d.write(&g.xb, 0, b"invalidate Y's key");
    let sgl = [g.mx.sge(0, 18)];
    let op = SendOp::SendInv(ernic_core::Rkey(key));
    g.post_a(&SendWr::new(1, op).sgl(&sgl));
    assert_eq!(g.status(1), WcStatus::RemInvReqErr);
    assert_eq!(y_writes_through(&mut g, key, 0xa00), WcStatus::Success);
}

/// A UD QP of X sends to another of X's through an address handle of Y's:
/// refused (the AH must be in the sending QP's PD), nothing arrives; the
/// same send through X's own AH arrives.
#[test]
fn a_datagram_through_an_ah_of_another_pd_is_a_local_qp_operation_error() {
    let mut g = guest("pd-ud-ah");
    let (x, y) = (g.x, g.y);
    let mut u = g.d.create_ud_qp_in(x, &g.cq, 5, false, 0x1111).unwrap();
    let mut v = g.d.create_ud_qp_in(x, &g.cq, 5, false, 0x2222).unwrap();
    let here = "::ffff:10.0.0.1".parse().unwrap();
    let y_ah = g.d.create_ah_in(y, here).unwrap();
    let x_ah = g.d.create_ah_in(x, here).unwrap();
    for i in 0..2 {
        let sge = g.mx.sge(0x1000 * (i + 1), 256);
        g.d.post_recv(&mut v, 50 + i, sge).unwrap();
    }
    g.d.write(&g.xb, 0, b"a datagram");
    let sge = g.mx.sge(0, 10);
    g.d.post_send_ud(&mut u, 1, y_ah, v.qpn(), 0x2222, sge)
        .unwrap();
    assert_eq!(g.status(1), WcStatus::LocQpOpErr);
    g.d.post_send_ud(&mut u, 2, x_ah, v.qpn(), 0x2222, sge)
        .unwrap();
    let wcs = g.completions(&[2, 50]);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
    let recv = wcs.iter().find(|c| c.wr_id == 50).unwrap();
    assert_eq!((recv.opcode, recv.byte_len), (WcOpcode::Recv, 40 + 10));
    assert!(
        !wcs.iter().any(|c| c.wr_id == 51),
        "the datagram through Y's AH arrived too: {wcs:?}"
    );
}

/// A QP may draw receives only from an SRQ of its own PD: CREATE_QP naming
/// Y's SRQ from X's PD is refused (BAD_ATTR); from Y's, it is made.
#[test]
fn a_qp_cannot_draw_from_an_srq_of_another_pd() {
    let mut g = guest("pd-srq");
    let (x, y) = (g.x, g.y);
    let srq = g.d.create_srq_in(y, 5, 0).unwrap();
    let spec = ernic_ionic_driver::QpSpec {
        pd: x,
        qp_type: ernic_core::QpType::Rc,
        send_cq: &g.cq,
        recv_cq: &g.cq,
        srq: Some(&srq),
        caps: g.d.qp_caps(&g.a),
    };
    match g.d.create_qp_with(&spec) {
        Err(Error::Admin { op: 2, status: 5 }) => {}
        other => panic!("CREATE_QP across PDs: {other:?}"),
    }
    let qp = g.d.create_qp_with_srq(&g.cq, 5, &srq).unwrap();
    assert!(qp.qpn().0 > 1);
}

/// Two processes talk as they do on hardware (perftest's client and server
/// in one guest): X's QP connected to Y's WRITEs and READs through the key
/// Y gave it and SENDs into Y's receive: the responder checks Y's key
/// against Y's own QP, the requester X's SGEs against X's.
#[test]
fn a_qp_connected_to_another_pds_qp_reaches_what_that_pd_exposes() {
    let mut g = guest("pd-across");
    let (x, y) = (g.x, g.y);
    let (mut p, mut q) = rc_pair(&mut g.d, &g.cq, x, y);
    g.d.write(&g.xb, 0, b"X to Y, invited");
    let into_y = g.my.sge(0x2000, 64);
    g.d.post_recv(&mut q, 50, into_y).unwrap();
    let sgl = [g.mx.sge(0, 15)];
    let wrs = [
        SendWr::new(1, SendOp::Write(g.my.remote(0x1000))).sgl(&sgl),
        SendWr::new(2, SendOp::Send).sgl(&sgl),
    ];
    for wr in &wrs {
        g.d.post_send(&mut p, wr).unwrap();
    }
    let back = [g.mx.sge(0x3000, 16)];
    let read = SendWr::new(3, SendOp::Read(g.my.remote(0))).sgl(&back);
    g.d.post_send(&mut p, &read).unwrap();
    let wcs = g.completions(&[1, 2, 3, 50]);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
    for at in [0x1000, 0x2000] {
        let mut got = [0u8; 15];
        g.d.read(&g.yb, at, &mut got);
        assert_eq!(&got, b"X to Y, invited");
    }
    let mut got = [0u8; 16];
    g.d.read(&g.xb, 0x3000, &mut got);
    assert_eq!(&got, SECRET, "what Y exposed to X's QP");
}

/// The kernel's reserved key 0 (its DMA key) names a bus address, checked
/// against no PD: QPs of the kernel's own PD reach X's buffer through it.
/// (A process's QP cannot name key 0 at all: tests/dma_key.rs.)
#[test]
fn key_0_stays_the_kernels_dma_key() {
    let mut g = guest("pd-key0");
    let kpd = g.d.pd();
    let (mut p, mut q) = rc_pair(&mut g.d, &g.cq, kpd, kpd);
    let key0 = |off: u64| Sge {
        addr: g.xb.addr() + off,
        len: 8,
        lkey: ernic_core::Lkey(0),
    };
    g.d.post_recv(&mut q, 50, key0(0x1000)).unwrap();
    g.d.write(&g.xb, 0x3000, b"by key 0");
    let sgl = [key0(0x3000)];
    g.d.post_send(&mut p, &SendWr::new(1, SendOp::Send).sgl(&sgl))
        .unwrap();
    let wcs = g.completions(&[1, 50]);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success), "{wcs:?}");
    let mut got = [0u8; 8];
    g.d.read(&g.xb, 0x1000, &mut got);
    assert_eq!(&got, b"by key 0");
}

/// CREATE_MR of a 4 KiB region at `addr` with key `key` in PD `pd_id`, as
/// the kernel driver lays it out (one page, no table).
fn create_mr(pd_id: u32, key: u32, addr: u64) -> [u8; 45] {
    use ernic_ionic::fw::create_mr as f;
    let mut b = [0u8; f::LEN];
    let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    put(f::VA, &addr.to_le_bytes());
    put(f::LENGTH, &4096u64.to_le_bytes());
    put(f::PD_ID, &pd_id.to_le_bytes());
    put(f::ID_VER, &key.to_le_bytes());
    put(f::MAP_COUNT, &1u32.to_le_bytes());
    put(f::DMA_ADDR, &addr.to_le_bytes());
    put(f::DBID_FLAGS, &1u16.to_le_bytes());
    b[f::PAGE_SIZE_LOG2] = 12;
    b
}

/// The device makes a PD on a `pd_id`'s first use, whatever its value, and
/// holds at most 1024 (`MAX_PDS`) at once: one more is refused with
/// BAD_INDEX and nothing is made; an id it knows still works; a PD made for
/// a command that fails does not stay.
#[test]
fn the_device_holds_at_most_1024_pds() {
    let path = common::serve("pd-limit", "compat", "");
    let mut d = Driver::attach(&path, 8 << 20).unwrap();
    let buf = d.alloc(4096).unwrap();
    let op = ernic_ionic::fw::admin_op::CREATE_MR;
    assert_eq!(ernic_ionic::rdmadev::MAX_PDS, 1024);
    // Commands that fail (a zero-length region) in 2000 fresh PDs.
    for i in 0..2000u32 {
        let mut c = create_mr(0x4000_0000 + i, (i + 1) << 8, buf.addr());
        c[8..16].fill(0);
        match d.raw_admin(op, &c) {
            Err(Error::Admin { status: 5, .. }) => {}
            other => panic!("a zero-length MR: {other:?}"),
        }
    }
    // 1024 PDs, ids far apart and up to u32::MAX.
    let id = |i: u32| if i == 0 { u32::MAX } else { i * 4_000_037 };
    for i in 0..1024u32 {
        let c = create_mr(id(i), (i + 1) << 8, buf.addr());
        assert!(d.raw_admin(op, &c).is_ok(), "PD {i}");
    }
    match d.raw_admin(op, &create_mr(7, 2000 << 8, buf.addr())) {
        Err(Error::Admin { status: 2, .. }) => {}
        other => panic!("a 1025th PD: {other:?}"),
    }
    assert!(
        d.raw_admin(op, &create_mr(id(5), 2001 << 8, buf.addr()))
            .is_ok(),
        "a known PD"
    );
}
