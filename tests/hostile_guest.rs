//! A hostile guest against the real `ernic-server`, run under a 1 GiB
//! address-space limit (`prlimit --as`), over its vfio-user socket with
//! ernic's own userspace driver: the counts a guest sends (page-table
//! sizes, region lengths, ring depths and strides, fast-registration page
//! lists) are refused or bounded, never allocated on trust, and after every
//! command the server is alive and still answers one. Also the NIC profile
//! path, which is read only when it is a small regular file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ernic_core::{Completion, Lkey, PageSource, RegMr, SendOp, SendWr, WcStatus};
use ernic_ionic::fw::{admin_op, admin_status as st};
use ernic_ionic_driver::{Driver, Error};
use proptest::prelude::*;

mod common;

/// The address-space limit every server here runs under.
const AS_LIMIT: &str = "--as=1073741824";

/// An `ernic-server` under the limit, killed when dropped.
struct Server {
    child: Child,
    dir: PathBuf,
    sock: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    /// Starts `prlimit --as=1GiB ernic-server --socket DIR/s --nic-profile
    /// profile` and waits for its socket.
    fn start(name: &str, profile: &str) -> Server {
        let dir = std::env::temp_dir().join(format!("ernic-hostile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("s");
        let child = limited()
            .args(["--socket", sock.to_str().unwrap(), "--nic-profile", profile])
            .stderr(Stdio::null())
            .spawn()
            .expect("prlimit (util-linux) runs ernic-server");
        let mut s = Server { child, dir, sock };
        let end = Instant::now() + Duration::from_secs(10);
        while !s.sock.exists() {
            assert!(s.child.try_wait().unwrap().is_none(), "the server exited");
            assert!(Instant::now() < end, "no socket");
            std::thread::sleep(Duration::from_millis(5));
        }
        s
    }

    /// Panics unless the process is still running.
    fn assert_alive(&mut self, after: &str) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("ernic-server died ({status}) after {after}");
        }
    }
}

/// `prlimit --as=1GiB -- ernic-server`.
fn limited() -> Command {
    let mut c = Command::new("prlimit");
    c.args([AS_LIMIT, "--", env!("CARGO_BIN_EXE_ernic-server")]);
    c
}

fn attach(sock: &Path) -> Driver {
    Driver::attach(sock, 4 << 20).expect("the driver attaches")
}

/// The server answers a command: a NOOP completes.
fn answers(d: &mut Driver, s: &mut Server, after: &str) {
    if let Err(e) = d.admin_command(admin_op::NOOP, &[]) {
        s.assert_alive(after);
        panic!("no answer after {after}: {e}");
    }
    s.assert_alive(after);
}

fn refused_with(r: Result<impl std::fmt::Debug, Error>, status: u32) {
    match r {
        Err(Error::Admin { status: s, .. }) if s == status => {}
        other => panic!("expected status {status}, got {other:?}"),
    }
}

/// CREATE_MR's bytes (`struct ionic_admin_create_mr`, 44 bytes as ernic's
/// driver lays them out).
fn create_mr(
    id: u32,
    va: u64,
    len: u64,
    map_count: u32,
    page_log2: u8,
    dma: u64,
    flags: u16,
) -> Vec<u8> {
    use ernic_ionic::fw::create_mr as f;
    let mut b = vec![0u8; f::LEN];
    put(&mut b, f::VA, &va.to_le_bytes());
    put(&mut b, f::LENGTH, &len.to_le_bytes());
    put(&mut b, f::ID_VER, &id.to_le_bytes());
    put(&mut b, f::MAP_COUNT, &map_count.to_le_bytes());
    put(&mut b, f::DMA_ADDR, &dma.to_le_bytes());
    put(&mut b, f::DBID_FLAGS, &flags.to_le_bytes());
    b[f::PAGE_SIZE_LOG2] = page_log2;
    b
}

/// Finding: one CREATE_MR with `map_count = 0xFFFFFFFF`, 4 KiB pages and
/// the length that count matches made the server allocate the whole page
/// table at once (34 GB) and abort. Now it is refused with BAD_ATTR (no MR
/// may have more than half the LIF's page table), and so is one that fits
/// the geometry but not the table; the server goes on.
#[test]
fn a_create_mr_with_a_huge_page_table_is_refused_and_the_server_lives() {
    let mut s = Server::start("mr", "compat");
    let mut d = attach(&s.sock);
    let table = d.alloc(64 << 10).unwrap();
    let huge = create_mr(
        0x100,
        0,
        u64::from(u32::MAX) << 12,
        u32::MAX,
        12,
        table.addr(),
        0,
    );
    refused_with(d.admin_command(admin_op::CREATE_MR, &huge), st::BAD_ATTR);
    answers(&mut d, &mut s, "CREATE_MR with map_count 0xffffffff");
    // Half the table (2^19 entries) plus one: still too many for one MR.
    let n = (1u32 << 19) + 1;
    let big = create_mr(0x200, 0, u64::from(n) << 12, n, 12, table.addr(), 0);
    refused_with(d.admin_command(admin_op::CREATE_MR, &big), st::BAD_ATTR);
    // 2^19 entries fit, but the table is 4 MiB and only 64 KiB of it is
    // guest memory: refused when the reading reaches the end, not before
    // it was bounded.
    let n = 1u32 << 19;
    let unreadable = create_mr(0x300, 0, u64::from(n) << 12, n, 12, table.addr(), 0);
    refused_with(
        d.admin_command(admin_op::CREATE_MR, &unreadable),
        st::BAD_ATTR,
    );
    answers(&mut d, &mut s, "CREATE_MR with an unreadable table");
    // A real registration still works.
    let buf = d.alloc(8192).unwrap();
    d.reg_mr(buf).unwrap();
}

/// Finding: a fast-registration MR was allowed 2^32-1 pages, and a REG_MR
/// naming millions of 4 KiB pages grew the MR's run list by 24 bytes a
/// page, unreadable entries becoming address 0. Now CREATE_MR refuses
/// more pages than one MR may have, a REG_MR naming more pages than its
/// MR was made for fails, and so does one whose page list cannot be read
/// (LOCAL_PROT_ERR), all with the server alive.
#[test]
fn fast_registration_is_bounded_at_create_and_at_reg_mr() {
    let mut s = Server::start("frmr", "compat");
    let mut d = attach(&s.sock);
    refused_with(d.alloc_fast_mr(u32::MAX), st::BAD_ATTR);
    answers(&mut d, &mut s, "a fast-reg MR of 2^32-1 pages");
    let fast = d.alloc_fast_mr(1 << 19).unwrap();
    let mut cq = d.create_cq(6).unwrap();
    let target = d.alloc(4 * 4096).unwrap();
    let table = d.alloc(4096).unwrap();
    let pages: Vec<u8> = (0..4u64)
        .flat_map(|i| (target.addr() + 4096 * i).to_le_bytes())
        .collect();
    assert!(d.write(&table, 0, &pages));
    let mut reg = |d: &mut Driver, wr_id: u64, variant: u32, table: u64, count: u32, first: u32| {
        let mut qp = d.create_qp(&cq, 4).unwrap();
        d.connect(&qp, qp.qpn()).unwrap();
        let op = SendOp::RegMr(RegMr {
            key: Lkey(fast | variant),
            iova: 0x10_0000,
            len: (u64::from(count) << 12) - u64::from(first),
            access: ernic_core::Access::ALL,
            pages: PageSource::Table {
                table,
                count,
                page_shift: 12,
                first_offset: first,
            },
        });
        d.post_send(&mut qp, &SendWr::new(wr_id, op)).unwrap();
        let mut got = [Completion::EMPTY; 4];
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let n = d.poll_cq(&mut cq, &mut got);
            if n > 0 {
                assert_eq!(got[0].wr_id, wr_id);
                return got[0].status;
            }
            assert!(Instant::now() < end, "REG_MR {wr_id} never completed");
        }
    };
    // The most pages the MR allows, listed at an address past guest memory:
    // the first unreadable entry fails it.
    let past = 0x7000_0000_0000;
    assert_eq!(reg(&mut d, 1, 1, past, 1 << 19, 0), WcStatus::LocProtErr);
    answers(&mut d, &mut s, "a REG_MR with an unreadable page list");
    // A list running off the end of guest memory after 4 readable pages.
    let edge = table.addr() + 4096 - 32;
    assert_eq!(reg(&mut d, 2, 2, edge, 1 << 19, 0), WcStatus::LocProtErr);
    // One page more than the MR was made for (an offset into the first).
    assert_eq!(
        reg(&mut d, 3, 3, table.addr(), (1 << 19) + 1, 1),
        WcStatus::LocProtErr
    );
    // Four readable pages bind.
    assert_eq!(reg(&mut d, 4, 4, table.addr(), 4, 0), WcStatus::Success);
    answers(&mut d, &mut s, "fast registrations");
}

/// Every page table comes out of the LIF's (`rdma_ptes`): an MR's, a
/// CQ's ring's, a QP's rings'; when it is used up a command needing more
/// is refused with BAD_INDEX, and a destroyed object gives its entries back.
#[test]
fn page_tables_of_rings_and_regions_share_the_lifs_table() {
    let dir = std::env::temp_dir().join(format!("ernic-hostile-ptes-ini-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ini = dir.join("ptes.ini");
    // 64 entries: 32 for one object at most.
    std::fs::write(&ini, "rdma_ptes = 64\n").unwrap();
    let mut s = Server::start("ptes", ini.to_str().unwrap());
    let mut d = attach(&s.sock);
    let _cq = d.create_cq(4).unwrap();
    // 32 pages of 4 KiB and a table listing them.
    let pages = d.alloc(32 * 4096).unwrap();
    let table = d.alloc(4096).unwrap();
    let list: Vec<u8> = (0..32u64)
        .flat_map(|i| (pages.addr() + 4096 * i).to_le_bytes())
        .collect();
    assert!(d.write(&table, 0, &list));
    // A QP whose send ring (512 WQEs of 256 bytes) is those 32 pages.
    use ernic_ionic::fw::create_qp as q;
    let mut qp = vec![0u8; q::LEN];
    put(&mut qp, q::ID_VER, &100u32.to_le_bytes());
    put(&mut qp, q::SQ_CQ_ID, &1u32.to_le_bytes());
    put(&mut qp, q::RQ_CQ_ID, &1u32.to_le_bytes());
    qp[q::SQ_DEPTH_LOG2] = 9;
    qp[q::SQ_STRIDE_LOG2] = 8;
    qp[q::SQ_PAGE_SIZE_LOG2] = 12;
    put(&mut qp, q::SQ_MAP_COUNT, &32u32.to_le_bytes());
    put(&mut qp, q::SQ_DMA_ADDR, &table.addr().to_le_bytes());
    d.admin_command(admin_op::CREATE_QP, &qp).unwrap();
    // A CQ of 4096 entries on the same pages takes the other 32.
    use ernic_ionic::fw::create_cq as c;
    let mut cq = vec![0u8; c::LEN];
    put(&mut cq, c::ID_VER, &50u32.to_le_bytes());
    cq[c::DEPTH_LOG2] = 12;
    cq[c::STRIDE_LOG2] = 5;
    cq[c::PAGE_SIZE_LOG2] = 12;
    put(&mut cq, c::MAP_COUNT, &32u32.to_le_bytes());
    put(&mut cq, c::DMA_ADDR, &table.addr().to_le_bytes());
    d.admin_command(admin_op::CREATE_CQ, &cq).unwrap();
    // The table is full: an MR of two pages does not fit.
    let mr = create_mr(0x700, pages.addr(), 8192, 2, 12, table.addr(), 0);
    refused_with(d.admin_command(admin_op::CREATE_MR, &mr), st::BAD_INDEX);
    // Nor does one object of more than half the table.
    let n = 33u32;
    let big = create_mr(0x800, 0, u64::from(n) << 12, n, 12, table.addr(), 0);
    refused_with(d.admin_command(admin_op::CREATE_MR, &big), st::BAD_ATTR);
    // The QP gone, its 32 entries are free again.
    d.admin_command(admin_op::DESTROY_QP, &100u32.to_le_bytes())
        .unwrap();
    d.admin_command(admin_op::CREATE_MR, &mr).unwrap();
    answers(&mut d, &mut s, "page tables");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Finding: `--nic-profile /dev/zero` was read until memory ran out. Now a
/// profile that is not a small regular file is refused at start with one
/// line naming it.
#[test]
fn a_profile_that_is_not_a_small_regular_file_is_refused_at_start() {
    let dir = std::env::temp_dir().join(format!("ernic-hostile-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.ini");
    std::fs::write(&big, "# padding\n".repeat(10_000)).unwrap();
    let sock = dir.join("s");
    for (profile, says) in [
        ("/dev/zero", "/dev/zero: not a regular file"),
        (big.to_str().unwrap(), "larger than 64 KiB"),
    ] {
        let child = limited()
            .args(["--socket", sock.to_str().unwrap(), "--nic-profile", profile])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (status, err) = common::exit_within(child, Duration::from_secs(10));
        let status =
            status.unwrap_or_else(|| panic!("--nic-profile {profile}: still running after 10 s"));
        assert_eq!(status.code(), Some(1), "{profile}: {status}: {err}");
        assert!(err.contains(says), "{profile}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!sock.exists(), "no server came up");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An admin command with hostile fields: counts, lengths, depths, strides,
/// page sizes, map counts, at their edges or random; addresses in a
/// scratch buffer of guest memory, past guest memory, or 0 (never the
/// driver's own rings, which a real guest may also scribble over, but then
/// only its own driver stops).
#[derive(Debug, Clone)]
enum Cmd {
    CreateMr {
        id: u32,
        va: u64,
        len: u64,
        count: u32,
        page: u8,
        at: Addr,
        flags: u16,
    },
    CreateCq {
        id: u32,
        depth: u8,
        stride: u8,
        page: u8,
        count: u32,
        at: Addr,
    },
    CreateQp {
        id: u32,
        depth: [u8; 2],
        stride: [u8; 2],
        page: u8,
        count: [u32; 2],
        at: Addr,
    },
    CreateSrq {
        depth: u8,
        stride: u8,
        page: u8,
        count: u32,
        at: Addr,
    },
    CreateAh {
        id: u32,
        len: u32,
        at: Addr,
    },
    Stats {
        op: u8,
        len: u32,
        at: Addr,
    },
    Destroy {
        op: u8,
        id: u32,
    },
    Raw {
        op: u8,
        body: Vec<u8>,
    },
}

/// Where a command's DMA address points.
#[derive(Debug, Clone, Copy)]
enum Addr {
    Scratch(u32),
    Past(u64),
    Zero,
}

fn count() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(u32::MAX),
        Just(1 << 19),
        Just((1 << 19) + 1),
        Just(1 << 20),
        0u32..4,
        any::<u32>(),
    ]
}

fn log2() -> impl Strategy<Value = u8> {
    prop_oneof![0u8..=16, Just(12), Just(30), Just(63), any::<u8>()]
}

fn addr() -> impl Strategy<Value = Addr> {
    prop_oneof![
        (0u32..(SCRATCH as u32)).prop_map(Addr::Scratch),
        any::<u64>().prop_map(|a| Addr::Past(a | 1 << 47)),
        Just(Addr::Zero),
    ]
}

fn id() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..64, Just(u32::MAX), any::<u32>()]
}

fn cmd() -> impl Strategy<Value = Cmd> {
    let len = prop_oneof![
        Just(u64::MAX),
        Just(u64::from(u32::MAX) << 12),
        any::<u64>(),
        0u64..1 << 20
    ];
    prop_oneof![
        // Half of them with the length their count and page size need, so
        // the geometry check passes and the count itself is what is tested.
        (
            (id(), any::<u64>(), len, count()),
            (
                prop_oneof![Just(12u8), log2()],
                addr(),
                any::<u16>(),
                any::<bool>()
            )
        )
            .prop_map(|((id, va, len, count), (page, at, flags, matching))| {
                let (va, len) = if matching && page <= 40 {
                    (0, u64::from(count) << page)
                } else {
                    (va, len)
                };
                Cmd::CreateMr {
                    id: id << 8,
                    va,
                    len,
                    count,
                    page,
                    at,
                    flags,
                }
            }),
        (
            id(),
            log2(),
            prop_oneof![Just(5u8), log2()],
            log2(),
            count(),
            addr()
        )
            .prop_map(|(id, depth, stride, page, count, at)| Cmd::CreateCq {
                id,
                depth,
                stride,
                page,
                count,
                at
            }),
        (
            id(),
            [log2(), log2()],
            [log2(), log2()],
            log2(),
            [count(), count()],
            addr()
        )
            .prop_map(|(id, depth, stride, page, count, at)| Cmd::CreateQp {
                id,
                depth,
                stride,
                page,
                count,
                at
            }),
        (log2(), log2(), log2(), count(), addr()).prop_map(|(depth, stride, page, count, at)| {
            Cmd::CreateSrq {
                depth,
                stride,
                page,
                count,
                at,
            }
        }),
        (id(), any::<u32>(), addr()).prop_map(|(id, len, at)| Cmd::CreateAh { id, len, at }),
        (
            prop_oneof![
                Just(admin_op::STATS_HDRS),
                Just(admin_op::STATS_VALS),
                Just(admin_op::QP_STATS_VALS)
            ],
            any::<u32>(),
            addr()
        )
            .prop_map(|(op, len, at)| Cmd::Stats { op, len, at }),
        (
            prop_oneof![
                Just(admin_op::DESTROY_MR),
                Just(admin_op::DESTROY_CQ),
                Just(admin_op::DESTROY_QP),
                Just(admin_op::DESTROY_AH)
            ],
            id()
        )
            .prop_map(|(op, id)| Cmd::Destroy { op, id }),
        (0u8..64, proptest::collection::vec(any::<u8>(), 0..240))
            .prop_map(|(op, body)| Cmd::Raw { op, body }),
    ]
}

/// Bytes of scratch guest memory commands may point into.
const SCRATCH: u64 = 256 << 10;

fn put(b: &mut [u8], at: usize, v: &[u8]) {
    b[at..at + v.len()].copy_from_slice(v);
}

/// A ring's fields in a CREATE command's bytes `b`: its depth, stride and
/// page size (log2 bytes), its map count and the DMA address of its page
/// table, at the offsets `at` names in that order.
fn put_ring(b: &mut [u8], at: [usize; 5], depth: u8, stride: u8, page: u8, count: u32, dma: u64) {
    let [depth_at, stride_at, page_at, count_at, dma_at] = at;
    b[depth_at] = depth;
    b[stride_at] = stride;
    b[page_at] = page;
    put(b, count_at, &count.to_le_bytes());
    put(b, dma_at, &dma.to_le_bytes());
}

/// The command's bytes, with addresses resolved against `scratch`.
fn encode(c: &Cmd, scratch: u64) -> (u8, Vec<u8>) {
    use ernic_ionic::fw;
    let a = |at: &Addr| match *at {
        Addr::Scratch(o) => scratch + u64::from(o),
        Addr::Past(x) => x,
        Addr::Zero => 0,
    };
    match c {
        Cmd::CreateMr {
            id,
            va,
            len,
            count,
            page,
            at,
            flags,
        } => (
            admin_op::CREATE_MR,
            create_mr(*id, *va, *len, *count, *page, a(at), *flags),
        ),
        Cmd::CreateCq {
            id,
            depth,
            stride,
            page,
            count,
            at,
        } => {
            use fw::create_cq as f;
            let mut b = vec![0u8; f::LEN];
            put(&mut b, f::ID_VER, &id.to_le_bytes());
            let ring = [
                f::DEPTH_LOG2,
                f::STRIDE_LOG2,
                f::PAGE_SIZE_LOG2,
                f::MAP_COUNT,
                f::DMA_ADDR,
            ];
            put_ring(&mut b, ring, *depth, *stride, *page, *count, a(at));
            (admin_op::CREATE_CQ, b)
        }
        Cmd::CreateQp {
            id,
            depth,
            stride,
            page,
            count,
            at,
        } => {
            use fw::create_qp as f;
            let mut b = vec![0u8; f::LEN];
            put(&mut b, f::ID_VER, &id.to_le_bytes());
            b[f::TYPE_STATE] = fw::qpt::RC;
            // The driver's CQ 1 (created first) for both queues.
            put(&mut b, f::SQ_CQ_ID, &1u32.to_le_bytes());
            put(&mut b, f::RQ_CQ_ID, &1u32.to_le_bytes());
            let sq = [
                f::SQ_DEPTH_LOG2,
                f::SQ_STRIDE_LOG2,
                f::SQ_PAGE_SIZE_LOG2,
                f::SQ_MAP_COUNT,
                f::SQ_DMA_ADDR,
            ];
            let rq = [
                f::RQ_DEPTH_LOG2,
                f::RQ_STRIDE_LOG2,
                f::RQ_PAGE_SIZE_LOG2,
                f::RQ_MAP_COUNT,
                f::RQ_DMA_ADDR,
            ];
            put_ring(&mut b, sq, depth[0], stride[0], *page, count[0], a(at));
            put_ring(&mut b, rq, depth[1], stride[1], *page, count[1], a(at));
            (admin_op::CREATE_QP, b)
        }
        Cmd::CreateSrq {
            depth,
            stride,
            page,
            count,
            at,
        } => {
            use fw::srq as f;
            let mut b = vec![0u8; f::CREATE_LEN];
            let ring = [
                f::DEPTH_LOG2,
                f::STRIDE_LOG2,
                f::PAGE_SIZE_LOG2,
                f::MAP_COUNT,
                f::DMA_ADDR,
            ];
            put_ring(&mut b, ring, *depth, *stride, *page, *count, a(at));
            (fw::srq_op::CREATE_SRQ, b)
        }
        Cmd::CreateAh { id, len, at } => {
            use fw::create_ah as f;
            let mut b = vec![0u8; f::LEN];
            put(&mut b, f::ID_VER, &id.to_le_bytes());
            put(&mut b, f::LENGTH, &len.to_le_bytes());
            put(&mut b, f::DMA_ADDR, &a(at).to_le_bytes());
            (admin_op::CREATE_AH, b)
        }
        Cmd::Stats { op, len, at } => {
            use fw::stats_hdr as f;
            let mut b = vec![0u8; f::LEN];
            put(&mut b, f::LENGTH, &len.to_le_bytes());
            put(&mut b, f::DMA_ADDR, &a(at).to_le_bytes());
            (*op, b)
        }
        Cmd::Destroy { op, id } => (*op, id.to_le_bytes().to_vec()),
        Cmd::Raw { op, body } => (*op, body.clone()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 32,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Whatever sequence of admin commands a guest sends, with any fields,
    /// the server under a 1 GiB address-space limit neither aborts nor
    /// stops answering: after each, a NOOP still completes.
    #[test]
    fn no_sequence_of_hostile_admin_commands_aborts_the_server(
        cmds in proptest::collection::vec(cmd(), 8..40)
    ) {
        let started = Instant::now();
        let mut s = Server::start("seq", "compat");
        let mut d = attach(&s.sock);
        // CQ 1, which hostile QPs name.
        let _cq = d.create_cq(4).unwrap();
        let scratch = d.alloc(SCRATCH).unwrap();
        for (i, c) in cmds.iter().enumerate() {
            let (op, body) = encode(c, scratch.addr());
            match d.admin_command(op, &body) {
                Ok(_) | Err(Error::Admin { .. }) => {}
                Err(e) => {
                    s.assert_alive(&format!("command {i} {c:?}"));
                    prop_assert!(false, "command {} {:?}: {}", i, c, e);
                }
            }
            answers(&mut d, &mut s, &format!("command {i} {c:?}"));
        }
        prop_assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    }
}
