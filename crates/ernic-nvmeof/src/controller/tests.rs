//! Behaviour tests of the controller, driven the way Linux's host drives a
//! fabrics target: SQEs and connect data written by hand from the layouts of
//! `include/linux/nvme.h`, in the order of `nvmf_connect_admin_queue`,
//! `nvme_enable_ctrl`, `nvme_init_identify`, `nvme_set_queue_count`,
//! `nvme_scan_ns` and `nvmf_connect_io_queue`. Time starts at a fixed
//! instant and moves by explicit offsets.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use super::*;
use crate::test_util::TempDir;
use crate::wire::status::Status;

const NQN: &str = "nqn.2024-01.io.ernic:test";
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";

fn addr() -> TransportAddr {
    TransportAddr {
        addr: Ipv4Addr::new(10, 0, 0, 2),
        port: 4420,
        portid: 1,
    }
}

fn config(extra: &str) -> Config {
    Config::parse(&format!("nqn={NQN},ns=1M,ns=2M{extra}")).unwrap()
}

/// An SQE as nvme-rdma sends it: `flags` = NVME_CMD_SGL_METABUF, and a
/// keyed SGL data block descriptor (`struct nvme_keyed_sgl_desc`: addr at
/// 24, 3-byte length at 32, key at 35, type 0x40 at 39), the null
/// descriptor of `nvme_rdma_set_sg_null` when `len` is 0.
fn sqe(opcode: u8, cid: u16, nsid: u32, len: u32) -> [u8; 64] {
    let mut s = [0u8; 64];
    s[0] = opcode;
    s[1] = 0x40;
    s[2..4].copy_from_slice(&cid.to_le_bytes());
    s[4..8].copy_from_slice(&nsid.to_le_bytes());
    if len != 0 {
        s[24..32].copy_from_slice(&0x1000u64.to_le_bytes());
        s[32..35].copy_from_slice(&len.to_le_bytes()[..3]);
        s[35..39].copy_from_slice(&0x1234u32.to_le_bytes());
    }
    s[39] = 0x40;
    s
}

fn set_cdw(s: &mut [u8; 64], n: usize, v: u32) {
    let at = 40 + 4 * (n - 10);
    s[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// `struct nvmf_connect_command`: fctype at 4, recfmt at 40, qid at 42,
/// sqsize at 44, cattr at 46, kato at 48.
fn connect_sqe(cid: u16, qid: u16, sqsize: u16, kato_ms: u32) -> [u8; 64] {
    let mut s = sqe(0x7f, cid, 0, 1024);
    s[4] = 0x01;
    s[42..44].copy_from_slice(&qid.to_le_bytes());
    s[44..46].copy_from_slice(&sqsize.to_le_bytes());
    s[48..52].copy_from_slice(&kato_ms.to_le_bytes());
    s
}

/// `struct nvmf_connect_data`: hostid 0..16, cntlid 16..18, subsysnqn
/// 256..512, hostnqn 512..768.
fn connect_data(cntlid: u16, subnqn: &str, hostnqn: &str) -> Vec<u8> {
    let mut d = vec![0u8; 1024];
    d[..16].copy_from_slice(&[0x11; 16]);
    d[16..18].copy_from_slice(&cntlid.to_le_bytes());
    d[256..256 + subnqn.len()].copy_from_slice(subnqn.as_bytes());
    d[512..512 + hostnqn.len()].copy_from_slice(hostnqn.as_bytes());
    d
}

/// `struct nvmf_property_get_command` / `_set_command`: fctype at 4,
/// attrib at 40, offset at 44, value at 48.
fn prop_get(cid: u16, eight: bool, offset: u32) -> [u8; 64] {
    let mut s = sqe(0x7f, cid, 0, 0);
    s[4] = 0x04;
    s[40] = u8::from(eight);
    s[44..48].copy_from_slice(&offset.to_le_bytes());
    s
}

fn prop_set(cid: u16, offset: u32, value: u64) -> [u8; 64] {
    let mut s = sqe(0x7f, cid, 0, 0);
    s[4] = 0x00;
    s[44..48].copy_from_slice(&offset.to_le_bytes());
    s[48..56].copy_from_slice(&value.to_le_bytes());
    s
}

/// `struct nvme_identify`: cns in cdw10 bits 0..8, csi in cdw11 bits 24..32.
fn identify(cid: u16, cns: u8, nsid: u32) -> [u8; 64] {
    let mut s = sqe(0x06, cid, nsid, 4096);
    set_cdw(&mut s, 10, u32::from(cns));
    s
}

/// `struct nvme_get_log_page_command`: lid cdw10 0..8, numdl cdw10 16..32,
/// numdu cdw11 0..16, lpo cdw12..13.
fn get_log(cid: u16, lid: u8, nsid: u32, len: u32, offset: u64) -> [u8; 64] {
    let numd = len / 4 - 1;
    let mut s = sqe(0x02, cid, nsid, len);
    set_cdw(&mut s, 10, u32::from(lid) | (numd & 0xffff) << 16);
    set_cdw(&mut s, 11, numd >> 16);
    set_cdw(&mut s, 12, offset as u32);
    set_cdw(&mut s, 13, (offset >> 32) as u32);
    s
}

fn features(cid: u16, set: bool, fid: u8, cdw11: u32) -> [u8; 64] {
    let mut s = sqe(if set { 0x09 } else { 0x0a }, cid, 0, 0);
    set_cdw(&mut s, 10, u32::from(fid));
    set_cdw(&mut s, 11, cdw11);
    s
}

/// `struct nvme_rw_command`: slba cdw10..11, length (0's based) cdw12.
fn rw(opcode: u8, cid: u16, nsid: u32, slba: u64, nlb: u32, bs: u32) -> [u8; 64] {
    let len = if opcode == 0x01 || opcode == 0x02 {
        nlb * bs
    } else {
        0
    };
    let mut s = sqe(opcode, cid, nsid, len);
    set_cdw(&mut s, 10, slba as u32);
    set_cdw(&mut s, 11, (slba >> 32) as u32);
    set_cdw(&mut s, 12, nlb - 1);
    s
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Runs one command the way a transport does: plan, move the data, execute.
/// Returns the completion (None when an AER is held) and the bytes sent to
/// the host.
fn run(
    t: &mut Target,
    q: &mut QueueState,
    now: Instant,
    s: &[u8; 64],
    from_host: &[u8],
) -> (Option<cqe::Repr>, Vec<u8>) {
    let mut buf = match t.plan(q, s) {
        Err(c) => return (Some(c), Vec::new()),
        Ok(Xfer::None) => Vec::new(),
        Ok(Xfer::FromHost(n)) => {
            assert_eq!(n as usize, from_host.len(), "planned length");
            from_host.to_vec()
        }
        Ok(Xfer::ToHost(n)) => vec![0xee; n as usize],
    };
    match t.execute(q, now, s, &mut buf) {
        Outcome::Done(c) => (Some(c), buf),
        Outcome::Deferred => (None, buf),
    }
}

fn status(c: &cqe::Repr) -> (u8, u8, bool) {
    (c.status.sct, c.status.sc, c.status.dnr)
}

fn expect(c: &cqe::Repr, want: Status) {
    assert_eq!(status(c), (want.sct, want.sc, want.dnr), "{c:?}");
}

/// A host connected to a target: admin queue, controller id, a clock.
struct Host {
    t: Target,
    admin: QueueState,
    io: Vec<QueueState>,
    cntlid: u16,
    cid: u16,
    t0: Instant,
    now: Instant,
}

impl Host {
    fn cmd(&mut self, s: [u8; 64], from_host: &[u8]) -> (cqe::Repr, Vec<u8>) {
        let (c, data) = run(&mut self.t, &mut self.admin, self.now, &s, from_host);
        (c.expect("not deferred"), data)
    }
    fn ok(&mut self, s: [u8; 64]) -> (cqe::Repr, Vec<u8>) {
        let (c, data) = self.cmd(s, &[]);
        expect(&c, Status::SUCCESS);
        (c, data)
    }
    fn next(&mut self) -> u16 {
        self.cid = self.cid.wrapping_add(1);
        self.cid
    }
    fn io(&mut self, qi: usize, s: [u8; 64], from_host: &[u8]) -> (cqe::Repr, Vec<u8>) {
        let (c, data) = run(&mut self.t, &mut self.io[qi], self.now, &s, from_host);
        (c.expect("not deferred"), data)
    }

    /// nvmf_connect_admin_queue: qid 0, SQSIZE NVME_AQ_DEPTH - 1, KATO in
    /// ms, connect data with cntlid 0xffff.
    fn connect(t: Target, subnqn: &str, kato_ms: u32) -> Host {
        let t0 = Instant::now();
        let mut admin = t.new_queue();
        let mut t = t;
        let (c, _) = run(
            &mut t,
            &mut admin,
            t0,
            &connect_sqe(1, 0, 31, kato_ms),
            &connect_data(0xffff, subnqn, HOSTNQN),
        );
        let c = c.unwrap();
        expect(&c, Status::SUCCESS);
        // The Connect is the first entry of a 32-entry queue.
        assert_eq!((c.sq_head, c.sq_id, c.command_id), (1, 0, 1));
        let cntlid = c.result as u16;
        assert!((1..=0xffef).contains(&cntlid));
        Host {
            t,
            admin,
            io: Vec::new(),
            cntlid,
            cid: 1,
            t0,
            now: t0,
        }
    }

    /// nvme_enable_ctrl: CC with IOSQES 6, IOCQES 4, CSS NVM, MPS 0, then EN.
    fn enable(&mut self) {
        let cc = 6 << 16 | 4 << 20;
        let id = self.next();
        self.ok(prop_set(id, 0x14, cc));
        let id = self.next();
        self.ok(prop_set(id, 0x14, cc | 1));
        let id = self.next();
        let (c, _) = self.ok(prop_get(id, false, 0x1c));
        assert_eq!(c.result & 1, 1, "CSTS.RDY");
    }

    /// nvmf_connect_io_queue for `qid`.
    fn connect_io(&mut self, qid: u16, sqsize: u16) -> cqe::Repr {
        let mut q = self.t.new_queue();
        let (c, _) = run(
            &mut self.t,
            &mut q,
            self.now,
            &connect_sqe(7, qid, sqsize, 0),
            &connect_data(self.cntlid, NQN, HOSTNQN),
        );
        let c = c.unwrap();
        if c.status.is_success() {
            self.io.push(q);
        }
        c
    }
}

fn host() -> Host {
    let t = Target::new(config(""), addr()).unwrap();
    let mut h = Host::connect(t, NQN, 15_000);
    h.enable();
    h
}

#[test]
fn linux_bring_up_sequence() {
    let t = Target::new(config(""), addr()).unwrap();
    let mut h = Host::connect(t, NQN, 15_000);

    // nvme_enable_ctrl reads CAP (8 bytes) first.
    let (c, _) = h.ok(prop_get(2, true, 0x00));
    let cap = c.result;
    assert_eq!(cap & 0xffff, 127, "MQES = depth - 1");
    assert_eq!(cap >> 16 & 1, 1, "CQR");
    assert_eq!(cap >> 24 & 0xff, 15, "TO");
    assert_eq!(cap >> 37 & 0xff, 1, "CSS: NVM only");
    assert_eq!(cap >> 48 & 0xf, 0, "MPSMIN: 4 KiB");
    let (c, _) = h.ok(prop_get(3, false, 0x08));
    assert_eq!(c.result, 0x0001_0300, "VS 1.3.0");
    // Before CC.EN, admin commands are a sequence error (nvmet).
    let (c, _) = h.cmd(identify(4, 1, 0), &[]);
    expect(&c, Status::CMD_SEQ_ERROR.with_dnr());
    h.enable();

    // nvme_init_identify: every field Linux reads, at struct nvme_id_ctrl's
    // byte offsets.
    let (_, id) = h.ok(identify(10, 0x01, 0));
    assert_eq!(id.len(), 4096);
    assert_eq!(le16(&id, 78), h.cntlid, "cntlid matches the admin connect");
    assert_eq!(le32(&id, 80), 0x0001_0300, "ver");
    assert_eq!(id[77], 8, "mdts: 2^8 x 4 KiB");
    assert_eq!(id[76], 1 << 1, "cmic: multi-controller");
    assert_eq!(le32(&id, 92), 1 << 8, "oaes: namespace attribute notices");
    assert_eq!(le32(&id, 96), 1 | 1 << 6, "ctratt: 128-bit host id, TBKAS");
    assert_eq!(id[111], 1, "cntrltype: I/O controller");
    assert_eq!(id[259], 3, "aerl");
    assert_eq!(
        id[261] & 0b111,
        0b111,
        "lpa: smart per ns, effects, extended"
    );
    assert_ne!(le16(&id, 320), 0, "kas is mandatory for fabrics");
    assert_eq!((id[512], id[513]), (0x66, 0x44), "sqes, cqes");
    assert_eq!(le16(&id, 514), 128, "maxcmd");
    assert_eq!(le32(&id, 516), 2, "nn");
    assert_eq!(le16(&id, 520), 1 << 2 | 1 << 3, "oncs: DSM, Write Zeroes");
    assert_eq!(id[525] & 1, 1, "vwc present");
    let sgls = le32(&id, 536);
    assert!(
        sgls & 1 << 2 != 0,
        "keyed SGLs (nvme-rdma's mandatory check)"
    );
    assert!(sgls & 1 << 20 != 0, "SGL offsets: in-capsule data");
    assert_eq!(&id[768..768 + NQN.len()], NQN.as_bytes(), "subnqn");
    assert_eq!(id[768 + NQN.len()], 0);
    assert_eq!(le32(&id, 1792), (64 + 8192) / 16, "ioccsz >= 4");
    assert_eq!(le32(&id, 1796), 1, "iorcsz");
    assert_eq!(le16(&id, 1800), 0, "icdoff must be 0 for nvme-rdma");
    assert_eq!(id[1802], 0, "fcatt");
    assert_eq!(id[1803], 1, "msdbd");
    assert!(
        id[4..24].iter().all(|b| b.is_ascii_graphic() || *b == b' '),
        "sn"
    );

    // nvme_set_queue_count asks for (count - 1) | (count - 1) << 16.
    let (c, _) = h.ok(features(11, true, 0x07, 7 | 7 << 16));
    assert_eq!(c.result, 3 | 3 << 16, "4 queues granted, 0's based");
    // nvme_enable_aen.
    let (c, _) = h.ok(features(12, true, 0x0b, 1 << 8));
    assert_eq!(c.result, 1 << 8);

    // nvme_scan_ns_list, then per namespace descs and Identify Namespace.
    let (_, list) = h.ok(identify(13, 0x02, 0));
    assert_eq!((le32(&list, 0), le32(&list, 4), le32(&list, 8)), (1, 2, 0));
    // The list starts after the nsid given (nvme_scan_ns_list pages on).
    let (_, list) = h.ok(identify(13, 0x02, 1));
    assert_eq!((le32(&list, 0), le32(&list, 4)), (2, 0));
    let (c, _) = h.cmd(identify(13, 0x02, 0xffff_fffe), &[]);
    expect(&c, Status::INVALID_NS.with_dnr());
    // struct nvme_id_ns_cs_indep: nmic at 1, nstat at 14 (ready).
    let (_, indep) = h.ok(identify(13, 0x08, 2));
    assert_eq!((indep[1], indep[14]), (1, 1));
    let (_, descs) = h.ok(identify(14, 0x03, 1));
    // struct nvme_ns_id_desc: nidt, nidl, reserved, then the value.
    assert_eq!((descs[0], descs[1]), (0x03, 16), "UUID");
    let uuid = &descs[4..20];
    assert_eq!((descs[20], descs[21]), (0x02, 16), "NGUID");
    let nguid = descs[24..40].to_vec();
    assert_eq!((descs[40], descs[41], descs[44]), (0x04, 1, 0), "CSI NVM");
    assert!(descs[45..].iter().all(|&b| b == 0));
    assert_eq!(uuid, &h.t.namespaces()[0].uuid()[..]);
    let (_, ns) = h.ok(identify(15, 0x00, 1));
    // struct nvme_id_ns: nsze 0, ncap 8, nuse 16, flbas 26, nguid 104,
    // lbaf[0].ds 130.
    let blocks = (1u64 << 20) / 512;
    assert_eq!(
        (le64(&ns, 0), le64(&ns, 8), le64(&ns, 16)),
        (blocks, blocks, blocks)
    );
    assert_eq!(ns[26], 0);
    assert_eq!(&ns[104..120], &nguid[..]);
    assert_eq!(ns[130], 9, "lbaf[0].ds: 512-byte blocks");
    // An inactive nsid gives zeros, the broadcast nsid an error.
    let (_, none) = h.ok(identify(16, 0x00, 9));
    assert!(none.iter().all(|&b| b == 0));
    let (c, _) = h.cmd(identify(17, 0x00, u32::MAX), &[]);
    expect(&c, Status::INVALID_NS.with_dnr());
    // The command-set specific structures Linux may ask for (CSI NVM).
    h.ok(identify(18, 0x06, 0));
    h.ok(identify(19, 0x05, 1));
    let (c, _) = h.cmd(identify(20, 0x1f, 0), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());

    // nvme_get_effects_log: Commands Supported and Effects, 4096 bytes.
    let (_, fx) = h.ok(get_log(21, 0x05, 0, 4096, 0));
    assert_eq!(le32(&fx, 0x06 * 4) & 1, 1, "acs[identify]: CSUPP");
    assert_eq!(le32(&fx, 0x18 * 4) & 1, 1, "acs[keep alive]: CSUPP");
    assert_eq!(le32(&fx, 1024 + 4), 0b11, "iocs[write]: CSUPP | LBCC");
    assert_eq!(le32(&fx, 1024 + 0x02 * 4), 0b01, "iocs[read]: CSUPP");
    assert_eq!(le32(&fx, 1024 + 0x05 * 4), 0, "iocs[compare]: unsupported");

    // An AER is held; Keep Alive completes.
    let (c, _) = run(&mut h.t, &mut h.admin, h.now, &sqe(0x0c, 22, 0, 0), &[]);
    assert!(c.is_none(), "AER held");
    let (c, _) = h.ok(sqe(0x18, 23, 0, 0));
    assert_eq!(c.command_id, 23);

    // nvmf_connect_io_queue for each granted queue.
    for qid in 1..=4 {
        let c = h.connect_io(qid, 127);
        expect(&c, Status::SUCCESS);
        assert_eq!(
            (c.result, c.sq_id, c.sq_head),
            (u64::from(h.cntlid), qid, 1)
        );
    }
    let c = h.connect_io(5, 127);
    expect(&c, Status::CONNECT_INVALID_PARAM.with_dnr());
    assert_eq!(c.result, 42, "IPO: struct nvmf_connect_command's qid");
}

#[test]
fn sq_head_advances_modulo_the_queue_size() {
    let mut h = host();
    let c = h.connect_io(1, 15);
    expect(&c, Status::SUCCESS);
    assert_eq!(h.io[0].sq_size(), Some(16));
    assert_eq!(h.io[0].binding(), Some((h.cntlid, 1)));
    assert_eq!(h.t.new_queue().sq_size(), None);
    let mut heads = vec![c.sq_head];
    for i in 0..20u16 {
        let (c, _) = h.io(0, rw(0x00, 100 + i, 1, 0, 1, 512), &[]);
        expect(&c, Status::SUCCESS);
        assert_eq!(c.sq_id, 1);
        heads.push(c.sq_head);
    }
    let want: Vec<u16> = (1..=21).map(|n| n % 16).collect();
    assert_eq!(heads, want);
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ seed)
        .collect()
}

#[test]
fn write_then_read_back_on_several_queues() {
    let mut h = host();
    for qid in 1..=3 {
        expect(&h.connect_io(qid, 63), Status::SUCCESS);
    }
    // Each queue writes its own pattern to its own range of each namespace.
    for (qi, nsid) in [(0usize, 1u32), (1, 2), (2, 1)] {
        let data = pattern(8 * 512, qi as u8 + 1);
        let slba = 100 * qi as u64;
        let (c, _) = h.io(qi, rw(0x01, 1, nsid, slba, 8, 512), &data);
        expect(&c, Status::SUCCESS);
    }
    for (qi, nsid) in [(0usize, 1u32), (1, 2), (2, 1)] {
        let slba = 100 * qi as u64;
        // Read it back through a different queue.
        let (c, back) = h.io((qi + 1) % 3, rw(0x02, 2, nsid, slba, 8, 512), &[]);
        expect(&c, Status::SUCCESS);
        assert_eq!(
            back,
            pattern(8 * 512, qi as u8 + 1),
            "nsid {nsid} slba {slba}"
        );
    }
    // SMART / Health counts the commands and 512-byte units (rounded up to
    // thousands): 3 writes and 3 reads of 8 blocks.
    let (_, smart) = h.ok(get_log(50, 0x02, u32::MAX, 512, 0));
    assert_eq!(
        le64(&smart, 32),
        2,
        "data units read: 24 sectors, 1000s, per ns rounded up"
    );
    assert_eq!(le64(&smart, 64), 3, "host read commands");
    assert_eq!(le64(&smart, 80), 3, "host write commands");
    let (_, smart1) = h.ok(get_log(51, 0x02, 2, 512, 0));
    assert_eq!(le64(&smart1, 80), 1, "nsid 2: one write");
}

#[test]
fn write_zeroes_and_dataset_management() {
    let mut h = host();
    expect(&h.connect_io(1, 63), Status::SUCCESS);
    let data = pattern(16 * 512, 5);
    expect(
        &h.io(0, rw(0x01, 1, 1, 0, 16, 512), &data).0,
        Status::SUCCESS,
    );
    // Write Zeroes over blocks 2..4.
    expect(&h.io(0, rw(0x08, 2, 1, 2, 2, 512), &[]).0, Status::SUCCESS);
    let (_, back) = h.io(0, rw(0x02, 3, 1, 0, 16, 512), &[]);
    assert_eq!(&back[..1024], &data[..1024]);
    assert!(back[1024..2048].iter().all(|&b| b == 0));
    assert_eq!(&back[2048..], &data[2048..]);
    // DSM deallocate (AD, cdw11 bit 2) of two ranges; struct
    // nvme_dsm_range: cattr, nlb, slba.
    let mut s = sqe(0x09, 4, 1, 32);
    set_cdw(&mut s, 10, 1); // NR = 2 ranges, 0's based
    set_cdw(&mut s, 11, 1 << 2);
    let mut ranges = vec![0u8; 32];
    ranges[4..8].copy_from_slice(&1u32.to_le_bytes());
    ranges[8..16].copy_from_slice(&0u64.to_le_bytes());
    ranges[20..24].copy_from_slice(&2u32.to_le_bytes());
    ranges[24..32].copy_from_slice(&10u64.to_le_bytes());
    expect(&h.io(0, s, &ranges).0, Status::SUCCESS);
    let (_, back) = h.io(0, rw(0x02, 5, 1, 0, 16, 512), &[]);
    assert!(back[..512].iter().all(|&b| b == 0), "range 1 deallocated");
    assert_eq!(&back[512..1024], &data[512..1024]);
    assert!(back[10 * 512..12 * 512].iter().all(|&b| b == 0), "range 2");
    assert_eq!(&back[12 * 512..], &data[12 * 512..]);
    // A range past the end fails the whole command and changes nothing.
    let mut s = sqe(0x09, 6, 1, 32);
    set_cdw(&mut s, 10, 1);
    set_cdw(&mut s, 11, 1 << 2);
    ranges[4..8].copy_from_slice(&1u32.to_le_bytes());
    ranges[8..16].copy_from_slice(&4u64.to_le_bytes());
    ranges[24..32].copy_from_slice(&2047u64.to_le_bytes());
    expect(&h.io(0, s, &ranges).0, Status::LBA_RANGE.with_dnr());
    let (_, back) = h.io(0, rw(0x02, 7, 1, 4, 1, 512), &[]);
    assert_eq!(&back[..], &data[4 * 512..5 * 512], "block 4 kept");
}

#[test]
fn flush_on_a_file_namespace_survives_a_new_target() {
    let dir = TempDir::new("ctrl_flush_file");
    let path = dir.0.join("disk.img");
    std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
    let cfg = Config::parse(&format!("nqn={NQN},ns=file:{},bs=4096", path.display())).unwrap();
    let data = pattern(2 * 4096, 9);
    {
        let mut h = Host::connect(Target::new(cfg.clone(), addr()).unwrap(), NQN, 5000);
        h.enable();
        expect(&h.connect_io(1, 31), Status::SUCCESS);
        expect(
            &h.io(0, rw(0x01, 1, 1, 7, 2, 4096), &data).0,
            Status::SUCCESS,
        );
        expect(&h.io(0, rw(0x00, 2, 1, 0, 1, 4096), &[]).0, Status::SUCCESS);
    }
    let mut h = Host::connect(Target::new(cfg, addr()).unwrap(), NQN, 5000);
    h.enable();
    expect(&h.connect_io(1, 31), Status::SUCCESS);
    let (c, back) = h.io(0, rw(0x02, 3, 1, 7, 2, 4096), &[]);
    expect(&c, Status::SUCCESS);
    assert_eq!(back, data);
}

#[test]
fn io_errors() {
    let mut h = host();
    expect(&h.connect_io(1, 63), Status::SUCCESS);
    let blocks = (1u64 << 20) / 512;
    // Compare (0x05) is not served.
    expect(
        &h.io(0, rw(0x05, 1, 1, 0, 1, 512), &[]).0,
        Status::INVALID_OPCODE.with_dnr(),
    );
    // Past the end, and wrapping around u64.
    expect(
        &h.io(0, rw(0x02, 2, 1, blocks - 1, 2, 512), &[]).0,
        Status::LBA_RANGE.with_dnr(),
    );
    expect(
        &h.io(0, rw(0x02, 3, 1, u64::MAX, 1, 512), &[]).0,
        Status::LBA_RANGE.with_dnr(),
    );
    expect(
        &h.io(0, rw(0x08, 4, 1, blocks, 1, 512), &[]).0,
        Status::LBA_RANGE.with_dnr(),
    );
    // Bad namespaces.
    for nsid in [0, 3, u32::MAX] {
        expect(
            &h.io(0, rw(0x02, 5, nsid, 0, 1, 512), &[]).0,
            Status::INVALID_NS.with_dnr(),
        );
    }
    // Over MDTS (1 MiB): 2049 blocks of 512 bytes; NS 2 has room for it.
    expect(
        &h.io(0, rw(0x02, 6, 2, 0, 2049, 512), &[]).0,
        Status::INVALID_FIELD.with_dnr(),
    );
    // An SGL whose length is not NLB x block size (here zero).
    let mut s = rw(0x02, 7, 1, 0, 1, 512);
    s[32..35].copy_from_slice(&[0, 0, 0]);
    expect(&h.io(0, s, &[]).0, Status::SGL_INVALID_DATA.with_dnr());
    // A PRP (PSDT 00b) command and a fused one are refused.
    let mut s = rw(0x02, 8, 1, 0, 1, 512);
    s[1] = 0x00;
    expect(&h.io(0, s, &[]).0, Status::INVALID_FIELD.with_dnr());
    s[1] = 0x41;
    expect(&h.io(0, s, &[]).0, Status::INVALID_FIELD.with_dnr());
    // Admin opcodes are not I/O opcodes.
    expect(
        &h.io(0, identify(9, 1, 0), &[]).0,
        Status::INVALID_OPCODE.with_dnr(),
    );
}

#[test]
fn connect_errors() {
    let mut h = host();
    let me = h.cntlid;
    let mut q = h.t.new_queue();
    let mut try_io =
        |h: &mut Host, s: [u8; 64], d: Vec<u8>| run(&mut h.t, &mut q, h.now, &s, &d).0.unwrap();
    // Unknown cntlid: IATTR set, IPO = struct nvmf_connect_data's cntlid.
    let c = try_io(
        &mut h,
        connect_sqe(1, 1, 31, 0),
        connect_data(me + 1, NQN, HOSTNQN),
    );
    expect(&c, Status::CONNECT_INVALID_PARAM.with_dnr());
    assert_eq!(c.result, 1 << 16 | 16);
    // Another host's NQN for this controller.
    let c = try_io(
        &mut h,
        connect_sqe(1, 1, 31, 0),
        connect_data(me, NQN, "nqn.x:other"),
    );
    assert_eq!(c.result, 1 << 16 | 16);
    // Wrong subsystem NQN: IPO = subsysnqn (256).
    let c = try_io(
        &mut h,
        connect_sqe(1, 1, 31, 0),
        connect_data(me, "nqn.x:nope", HOSTNQN),
    );
    expect(&c, Status::CONNECT_INVALID_PARAM.with_dnr());
    assert_eq!(c.result, 1 << 16 | 256);
    // SQSIZE 0 and over MQES: IPO = struct nvmf_connect_command's sqsize.
    for sqsize in [0, 128] {
        let c = try_io(
            &mut h,
            connect_sqe(1, 1, sqsize, 0),
            connect_data(me, NQN, HOSTNQN),
        );
        expect(&c, Status::CONNECT_INVALID_PARAM.with_dnr());
        assert_eq!(c.result, 44, "sqsize {sqsize}");
    }
    // hostnqn without a NUL in its 256 bytes: IPO = hostnqn (512).
    let mut d = connect_data(me, NQN, HOSTNQN);
    d[512..768].fill(b'a');
    let c = try_io(&mut h, connect_sqe(1, 1, 31, 0), d);
    assert_eq!(c.result, 1 << 16 | 512);
    // recfmt other than 0.
    let mut s = connect_sqe(1, 1, 31, 0);
    s[40] = 1;
    let c = try_io(&mut h, s, connect_data(me, NQN, HOSTNQN));
    expect(&c, Status::CONNECT_FORMAT.with_dnr());
    // An unbound queue takes nothing but Connect, and counts no head.
    let c = try_io(&mut h, identify(2, 1, 0), Vec::new());
    expect(&c, Status::INVALID_OPCODE.with_dnr());
    assert_eq!(c.sq_head, 0);
    // After all that, the queue still connects, once.
    let c = try_io(
        &mut h,
        connect_sqe(1, 1, 127, 0),
        connect_data(me, NQN, HOSTNQN),
    );
    expect(&c, Status::SUCCESS);
    let c = try_io(
        &mut h,
        connect_sqe(1, 1, 127, 0),
        connect_data(me, NQN, HOSTNQN),
    );
    expect(&c, Status::INVALID_OPCODE.with_dnr());
    // The same qid on another queue is a sequence error (nvmet).
    let c = h.connect_io(1, 31);
    expect(&c, Status::CMD_SEQ_ERROR.with_dnr());
    // An admin Connect must ask for a dynamic controller.
    let mut q2 = h.t.new_queue();
    let (c, _) = run(
        &mut h.t,
        &mut q2,
        h.now,
        &connect_sqe(1, 0, 31, 0),
        &connect_data(1, NQN, HOSTNQN),
    );
    expect(&c.unwrap(), Status::CONNECT_INVALID_PARAM.with_dnr());
}

#[test]
fn fewer_queues_granted_bound_io_connects() {
    let mut h = host();
    let (c, _) = h.ok(features(2, true, 0x07, 1 | 1 << 16));
    assert_eq!(c.result, 1 | 1 << 16);
    let (c, _) = h.ok(features(3, false, 0x07, 0));
    assert_eq!(c.result, 1 | 1 << 16);
    expect(&h.connect_io(2, 31), Status::SUCCESS);
    let c = h.connect_io(3, 31);
    expect(&c, Status::CONNECT_INVALID_PARAM.with_dnr());
    assert_eq!(c.result, 42);
    let (c, _) = h.cmd(features(4, true, 0x07, 0xffff), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = h.cmd(features(5, true, 0x02, 0), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = h.ok(features(6, false, 0x06, 0));
    assert_eq!(c.result, 1, "volatile write cache enabled");
    let (c, _) = h.ok(features(7, false, 0x0f, 0));
    assert_eq!(c.result, 15_000, "KATO in ms");
}

#[test]
fn keep_alive_lapse_kills_the_controller() {
    let t = Target::new(config(""), addr()).unwrap();
    let mut h = Host::connect(t, NQN, 5_000);
    h.enable();
    expect(&h.connect_io(1, 31), Status::SUCCESS);
    let kato = Duration::from_secs(5);
    let deadline = h.t0 + kato + keepalive::grace(kato);
    assert_eq!(h.t.next_deadline(), Some(deadline));
    let mut out = Vec::new();
    h.t.poll(deadline - Duration::from_millis(1), &mut out);
    assert!(out.is_empty());
    h.t.poll(deadline, &mut out);
    assert_eq!(out, vec![Action::Teardown { cntlid: h.cntlid }]);
    assert_eq!(h.t.controllers(), 0);
    // CSTS.CFS is set; commands fail.
    h.now = deadline;
    let (c, _) = h.ok(prop_get(3, false, 0x1c));
    assert_eq!(c.result & 0b10, 0b10, "CSTS.CFS");
    let (c, _) = h.cmd(identify(4, 1, 0), &[]);
    expect(&c, Status::KA_TIMEOUT_EXPIRED.with_dnr());
    let (c, _) = h.io(0, rw(0x00, 5, 1, 0, 1, 512), &[]);
    expect(&c, Status::KA_TIMEOUT_EXPIRED.with_dnr());
    // No further teardown, no deadline.
    out.clear();
    h.t.poll(deadline + Duration::from_secs(60), &mut out);
    assert!(out.is_empty());
    assert_eq!(h.t.next_deadline(), None);
}

#[test]
fn keep_alive_in_time_keeps_it_alive() {
    let t = Target::new(config(""), addr()).unwrap();
    let mut h = Host::connect(t, NQN, 5_000);
    h.enable();
    let mut out = Vec::new();
    for step in 1..=10u64 {
        h.now = h.t0 + Duration::from_secs(4 * step);
        let id = h.next();
        h.ok(sqe(0x18, id, 0, 0));
        h.t.poll(h.now, &mut out);
    }
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(h.t.controllers(), 1);
    assert_eq!(h.t.next_deadline(), Some(h.now + Duration::from_secs(10)));
    // With KATO 0 there is no timer, and Keep Alive is KA_TIMEOUT_INVALID.
    let (c, _) = h.ok(features(90, true, 0x0f, 0));
    assert_eq!(c.result, 0);
    assert_eq!(h.t.next_deadline(), None);
    let (c, _) = h.cmd(sqe(0x18, 91, 0, 0), &[]);
    expect(&c, Status::KA_TIMEOUT_INVALID);
}

#[test]
fn aer_limit_and_event_delivery() {
    let mut h = host();
    for i in 0..4u16 {
        let (c, _) = run(&mut h.t, &mut h.admin, h.now, &sqe(0x0c, 40 + i, 0, 0), &[]);
        assert!(c.is_none());
    }
    let (c, _) = h.cmd(sqe(0x0c, 44, 0, 0), &[]);
    expect(&c, Status::ASYNC_LIMIT.with_dnr());
    // Connect, 3 property commands of enable(), 4 held AERs, this one.
    assert_eq!(c.sq_head, 9, "held AERs took their SQ entries");
    let mut out = Vec::new();
    h.t.poll(h.now, &mut out);
    assert!(out.is_empty(), "no event yet");
    h.t.notify(AsyncEvent::NamespaceChanged { nsid: 2 });
    h.t.poll(h.now, &mut out);
    let [
        Action::Complete {
            cntlid,
            qid: 0,
            cqe,
        },
    ] = out[..]
    else {
        panic!("{out:?}");
    };
    assert_eq!(cntlid, h.cntlid);
    // Notice (2), namespace attribute changed (0), log page 0x04.
    assert_eq!(cqe.result, 0x04_00_02);
    assert_eq!(
        (cqe.sq_head, cqe.sq_id),
        (9, 0),
        "the admin queue's head now"
    );
    assert!(cqe.status.is_success());
    assert!((40..44).contains(&cqe.command_id));
    // Masked until the log is read: a second change raises no event.
    out.clear();
    h.t.notify(AsyncEvent::NamespaceChanged { nsid: 1 });
    h.t.poll(h.now, &mut out);
    assert!(out.is_empty());
    let (_, log) = h.ok(get_log(50, 0x04, 0, 4096, 0));
    assert_eq!((le32(&log, 0), le32(&log, 4), le32(&log, 8)), (2, 1, 0));
    let (_, log) = h.ok(get_log(51, 0x04, 0, 4096, 0));
    assert_eq!(le32(&log, 0), 0, "read clears the list");
    h.t.notify(AsyncEvent::NamespaceChanged { nsid: 1 });
    h.t.poll(h.now, &mut out);
    assert_eq!(out.len(), 1, "unmasked by the read");
    // Abort: result bit 0 set, command not aborted.
    let (c, _) = h.ok(sqe(0x08, 52, 0, 0));
    assert_eq!(c.result & 1, 1);
}

#[test]
fn discovery_controller_and_its_log() {
    let t = Target::new(config(""), addr()).unwrap();
    let mut h = Host::connect(t, DISCOVERY_NQN, 0);
    // A discovery controller does not check IOSQES/IOCQES.
    h.ok(prop_set(2, 0x14, 1));
    let (_, id) = h.ok(identify(3, 0x01, 0));
    assert_eq!(id[111], 2, "cntrltype: discovery");
    assert_eq!(
        &id[768..768 + DISCOVERY_NQN.len()],
        DISCOVERY_NQN.as_bytes()
    );
    assert_eq!(le16(&id, 78), h.cntlid);
    let (c, _) = h.cmd(identify(4, 0x00, 1), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    // KATO 0 on a discovery Connect means nvmet's 120 s.
    let (c, _) = h.ok(features(5, false, 0x0f, 0));
    assert_eq!(c.result, 120_000);
    // The header alone (as nvme-cli reads it first).
    let (_, hdr) = h.ok(get_log(6, 0x70, 0, 1024, 0));
    assert_eq!((le64(&hdr, 0), le64(&hdr, 8), le16(&hdr, 16)), (0, 2, 0));
    // The whole page, then each record through LPO.
    let (_, page) = h.ok(get_log(7, 0x70, 0, 3072, 0));
    assert_eq!(&page[..1024], &hdr[..]);
    for (i, (subtype, nqn)) in [(3u8, DISCOVERY_NQN), (2, NQN)].into_iter().enumerate() {
        let (_, e) = h.ok(get_log(8, 0x70, 0, 1024, 1024 * (i as u64 + 1)));
        assert_eq!(&e[..], &page[1024 * (i + 1)..1024 * (i + 2)]);
        // struct nvmf_disc_rsp_page_entry.
        assert_eq!(
            (e[0], e[1], e[2], e[3]),
            (1, 1, subtype, 4),
            "trtype adrfam subtype treq"
        );
        assert_eq!(
            (le16(&e, 4), le16(&e, 6), le16(&e, 8)),
            (1, 0xffff, 32),
            "portid cntlid asqsz"
        );
        assert_eq!(&e[32..36], b"4420");
        assert_eq!(e[36], 0);
        assert_eq!(&e[256..256 + nqn.len()], nqn.as_bytes());
        assert_eq!(&e[512..520], b"10.0.0.2");
        assert_eq!(e[520], 0);
        assert_eq!((e[768], e[769], e[770]), (1, 1, 1), "qptype prtype cms");
    }
    // A short read, a read past the end (zeros), an unaligned or too far
    // offset.
    let (_, short) = h.ok(get_log(9, 0x70, 0, 16, 0));
    assert_eq!(&short[..], &hdr[..16]);
    let (_, tail) = h.ok(get_log(10, 0x70, 0, 2048, 2048));
    assert_eq!(&tail[..1024], &page[2048..]);
    assert!(tail[1024..].iter().all(|&b| b == 0));
    let (c, _) = h.cmd(get_log(11, 0x70, 0, 16, 2), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = h.cmd(get_log(12, 0x70, 0, 16, 4096), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = h.cmd(get_log(13, 0x02, 0, 512, 0), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    // No I/O queues on a discovery controller.
    let mut q = h.t.new_queue();
    let (c, _) = run(
        &mut h.t,
        &mut q,
        h.now,
        &connect_sqe(1, 1, 31, 0),
        &connect_data(h.cntlid, DISCOVERY_NQN, HOSTNQN),
    );
    assert_eq!(c.unwrap().result, 42);
}

#[test]
fn admin_queue_gone_takes_the_controller() {
    let mut h = host();
    expect(&h.connect_io(1, 31), Status::SUCCESS);
    h.t.queue_gone(&h.admin);
    assert_eq!(h.t.next_deadline(), Some(h.now));
    let mut out = Vec::new();
    h.t.poll(h.now, &mut out);
    assert_eq!(out, vec![Action::Teardown { cntlid: h.cntlid }]);
    let (c, _) = h.io(0, rw(0x00, 1, 1, 0, 1, 512), &[]);
    expect(&c, Status::CMD_SEQ_ERROR.with_dnr());
    // A new controller never inherits the old one's queues.
    let t = std::mem::replace(&mut h.t, Target::new(config(""), addr()).unwrap());
    let mut h2 = Host::connect(t, NQN, 0);
    h2.enable();
    let (c, _) = run(
        &mut h2.t,
        &mut h.io[0],
        h2.now,
        &rw(0x00, 2, 1, 0, 1, 512),
        &[],
    );
    expect(&c.unwrap(), Status::CMD_SEQ_ERROR.with_dnr());
}

#[test]
fn shutdown_reports_complete() {
    let mut h = host();
    // CC.SHN = normal (01b at bits 14..16).
    h.ok(prop_set(2, 0x14, 6 << 16 | 4 << 20 | 1 | 1 << 14));
    let (c, _) = h.ok(prop_get(3, false, 0x1c));
    assert_eq!(c.result >> 2 & 3, 2, "CSTS.SHST: shutdown complete");
    assert_eq!(c.result & 1, 0, "not ready");
    // A bad CC (IOSQES 7) makes the enable fatal.
    h.ok(prop_set(4, 0x14, 0));
    h.ok(prop_set(5, 0x14, 7 << 16 | 4 << 20 | 1));
    let (c, _) = h.ok(prop_get(6, false, 0x1c));
    assert_eq!(c.result & 0b11, 0b10, "CSTS.CFS, not RDY");
    // Unknown properties.
    let (c, _) = h.cmd(prop_get(7, false, 0x20), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = h.cmd(prop_get(8, true, 0x14), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
}

#[test]
fn identify_strings_and_discovery_fields() {
    let cfg = config(",serial=SN-0042,model=Model X");
    let mut h = Host::connect(Target::new(cfg, addr()).unwrap(), NQN, 0);
    h.enable();
    let (_, id) = h.ok(identify(2, 0x01, 0));
    // sn[20], mn[40], fr[8]: ASCII, space padded.
    assert_eq!(&id[4..24], b"SN-0042             ");
    assert_eq!(&id[24..64], format!("{:<40}", "Model X").as_bytes());
    assert_eq!(
        &id[64..72],
        format!("{:<8}", env!("CARGO_PKG_VERSION")).as_bytes()
    );
    let t = std::mem::replace(&mut h.t, Target::new(config(""), addr()).unwrap());
    let mut d = Host::connect(t, DISCOVERY_NQN, 0);
    d.ok(prop_set(2, 0x14, 1));
    let (_, id) = d.ok(identify(3, 0x01, 0));
    assert_eq!(id[261], 1 << 2, "lpa: extended data only");
    assert_eq!(le32(&id, 92), 1 << 31, "oaes: discovery log changes");
    assert_eq!(id[77], 0, "mdts: no limit");
    // Only the keep-alive and event features.
    let (c, _) = d.cmd(features(4, false, 0x07, 0), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = d.cmd(features(5, true, 0x0b, 1 << 8), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    d.ok(features(6, true, 0x0b, 1 << 31));
}

#[test]
fn admin_errors_and_edge_cases() {
    let mut h = host();
    // Get Log Page: unknown page, bad nsid for SMART, a command set other
    // than NVM for the effects log, over MDTS.
    let (c, _) = h.cmd(get_log(2, 0x0c, 0, 4096, 0), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    let (c, _) = h.cmd(get_log(3, 0x02, 7, 512, 0), &[]);
    expect(&c, Status::INVALID_NS.with_dnr());
    let mut s = get_log(4, 0x05, 0, 4096, 0);
    set_cdw(&mut s, 14, 2 << 24);
    let (c, _) = h.cmd(s, &[]);
    expect(&c, Status::INVALID_LOG_PAGE);
    let mut s = get_log(5, 0x02, 0, 4, 0);
    set_cdw(&mut s, 11, 0x10);
    let (c, _) = h.cmd(s, &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    // Firmware slot 1 is active and holds FR (struct nvme_fw_slot_info_log:
    // afi at 0, frs[0] at 8), which nvme_get_fw_slot_info copies.
    let (_, fw) = h.ok(get_log(60, 0x03, u32::MAX, 512, 0));
    assert_eq!(fw[0] & 7, 1);
    assert_eq!(
        &fw[8..16],
        format!("{:<8}", env!("CARGO_PKG_VERSION")).as_bytes()
    );
    // The error log is one empty entry; reading more gives zeros.
    let (_, e) = h.ok(get_log(6, 0x01, 0, 256, 0));
    assert!(e.iter().all(|&b| b == 0));
    // Events outside what the controller offers.
    let (c, _) = h.cmd(features(7, true, 0x0b, 1 << 11), &[]);
    expect(&c, Status::INVALID_FIELD.with_dnr());
    // Unknown admin opcode (Format NVM), and Create I/O SQ (PCIe only).
    for op in [0x80u8, 0x01] {
        let (c, _) = h.cmd(sqe(op, 8, 0, 0), &[]);
        expect(&c, Status::INVALID_OPCODE.with_dnr());
    }
    // Fabrics commands other than Connect are not I/O queue commands.
    expect(&h.connect_io(1, 31), Status::SUCCESS);
    let (c, _) = h.io(0, prop_get(9, false, 0x1c), &[]);
    expect(&c, Status::INVALID_OPCODE.with_dnr());
    // A transport that fails the data transfer, or hands the wrong buffer.
    let s = rw(0x02, 10, 1, 0, 1, 512);
    assert_eq!(h.t.plan(&h.io[0], &s), Ok(Xfer::ToHost(512)));
    let c = h.t.fail(&h.io[0], &s, Status::DATA_XFER_ERROR);
    expect(&c, Status::DATA_XFER_ERROR);
    let mut short = vec![0u8; 511];
    let Outcome::Done(c) = h.t.execute(&mut h.io[0], h.now, &s, &mut short) else {
        panic!("deferred");
    };
    expect(&c, Status::DATA_XFER_ERROR.with_dnr());
    // A DSM without the deallocate attribute keeps the data.
    let data = pattern(512, 3);
    expect(
        &h.io(0, rw(0x01, 11, 1, 5, 1, 512), &data).0,
        Status::SUCCESS,
    );
    // Linux sends DSM payloads of 256 ranges whatever NR says
    // (nvme_setup_discard); only the first NR + 1 count.
    let mut s = sqe(0x09, 12, 1, 4096);
    set_cdw(&mut s, 10, 0);
    assert_eq!(h.t.plan(&h.io[0], &s), Ok(Xfer::FromHost(4096)));
    let mut range = vec![0xffu8; 4096];
    range[..16].fill(0);
    range[4..8].copy_from_slice(&1u32.to_le_bytes());
    range[8..16].copy_from_slice(&5u64.to_le_bytes());
    expect(&h.io(0, s, &range).0, Status::SUCCESS);
    assert_eq!(h.io(0, rw(0x02, 13, 1, 5, 1, 512), &[]).1, data);
    // Shorter than the ranges, or longer than 256 ranges, is refused.
    for len in [8, 4112] {
        let mut s = sqe(0x09, 16, 1, len);
        set_cdw(&mut s, 10, 0);
        expect(&h.io(0, s, &[]).0, Status::SGL_INVALID_DATA.with_dnr());
    }
    // A forced-unit-access write is read back like any other.
    let mut s = rw(0x01, 14, 1, 6, 1, 512);
    set_cdw(&mut s, 12, 1 << 30);
    expect(&h.io(0, s, &data).0, Status::SUCCESS);
    assert_eq!(h.io(0, rw(0x02, 15, 1, 6, 1, 512), &[]).1, data);
}

#[test]
fn sq_flow_control_disabled_reports_ffff() {
    let mut h = host();
    let mut q = h.t.new_queue();
    let mut s = connect_sqe(1, 1, 31, 0);
    s[46] = 1 << 2; // cattr: NVME_CONNECT_DISABLE_SQFLOW
    let (c, _) = run(
        &mut h.t,
        &mut q,
        h.now,
        &s,
        &connect_data(h.cntlid, NQN, HOSTNQN),
    );
    assert_eq!(c.unwrap().sq_head, 0xffff);
    let (c, _) = run(&mut h.t, &mut q, h.now, &rw(0x00, 2, 1, 0, 1, 512), &[]);
    assert_eq!(c.unwrap().sq_head, 0xffff);
}

#[test]
fn controller_table_is_bounded() {
    let mut t = Target::new(config(""), addr()).unwrap();
    let now = Instant::now();
    let mut queues = Vec::new();
    for i in 0..MAX_CONTROLLERS {
        let mut q = t.new_queue();
        let (c, _) = run(
            &mut t,
            &mut q,
            now,
            &connect_sqe(1, 0, 31, 0),
            &connect_data(0xffff, NQN, HOSTNQN),
        );
        expect(&c.unwrap(), Status::SUCCESS);
        queues.push(q);
        assert_eq!(t.controllers(), i + 1);
    }
    let mut q = t.new_queue();
    let (c, _) = run(
        &mut t,
        &mut q,
        now,
        &connect_sqe(1, 0, 31, 0),
        &connect_data(0xffff, NQN, HOSTNQN),
    );
    expect(&c.unwrap(), Status::CONNECT_CTRL_BUSY.with_dnr());
    // A gone admin queue frees its slot.
    t.queue_gone(&queues[3]);
    let (c, _) = run(
        &mut t,
        &mut q,
        now,
        &connect_sqe(1, 0, 31, 0),
        &connect_data(0xffff, NQN, HOSTNQN),
    );
    let c = c.unwrap();
    expect(&c, Status::SUCCESS);
    assert_ne!(c.result, 0);
}

#[test]
fn a_missing_backing_file_is_a_config_error() {
    let dir = TempDir::new("ctrl_missing_file");
    let cfg = Config::parse(&format!("ns=file:{}", dir.0.join("nope.img").display())).unwrap();
    match Target::new(cfg, addr()) {
        Err(ConfigError::Namespace { nsid: 1, .. }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    /// Runs `s` with host data of the planned length: a well-formed connect
    /// data block (for this host, dynamic or this controller's id) when
    /// `good_connect`, else `fill` bytes.
    fn run_with(
        t: &mut Target,
        q: &mut QueueState,
        now: Instant,
        s: &[u8; 64],
        good_connect: Option<u16>,
        fill: u8,
    ) -> Option<cqe::Repr> {
        let mut buf = match t.plan(q, s) {
            Err(c) => return Some(c),
            Ok(x) => match good_connect {
                Some(cntlid) if x.len() == 1024 => connect_data(cntlid, NQN, HOSTNQN),
                _ => vec![fill; x.len() as usize],
            },
        };
        match t.execute(q, now, s, &mut buf) {
            Outcome::Done(c) => Some(c),
            Outcome::Deferred => None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Random SQEs on the admin queue, an I/O queue, fresh unbound
        /// queues and a discovery controller: nothing panics, every command
        /// completes once (only an AER on an admin queue is held), a
        /// completion names its command and queue, and the state stays
        /// within its bounds.
        #[test]
        fn random_sqes_never_panic(
            cmds in proptest::collection::vec(
                (
                    0u8..4,
                    any::<u8>(),
                    0u32..4,
                    proptest::array::uniform32(any::<u8>()),
                    any::<u8>(),
                    prop_oneof![0u32..2048, Just(1024u32), Just(4096u32)],
                    any::<bool>(),
                ),
                1..40,
            ),
        ) {
            let mut h = host();
            expect(&h.connect_io(1, 31), Status::SUCCESS);
            let mut disc = h.t.new_queue();
            let (c, _) = run(
                &mut h.t,
                &mut disc,
                h.now,
                &connect_sqe(1, 0, 31, 0),
                &connect_data(0xffff, DISCOVERY_NQN, HOSTNQN),
            );
            prop_assert!(c.unwrap().status.is_success());
            let mut fresh = Vec::new();
            for (which, opcode, nsid, tail, flags, len, good) in cmds {
                let mut s = sqe(opcode, 9, nsid, len);
                if flags & 1 == 1 {
                    s[1] = flags;
                }
                s[40..64].copy_from_slice(&tail[..24]);
                s[4] = tail[24];
                let connect = good.then_some(if tail[25] & 1 == 0 { 0xffff } else { h.cntlid });
                let q = match which {
                    0 => &mut h.admin,
                    1 => &mut h.io[0],
                    2 => {
                        fresh.push(h.t.new_queue());
                        fresh.last_mut().unwrap()
                    }
                    _ => &mut disc,
                };
                let qid = q.binding().map_or(0, |(_, qid)| qid);
                match run_with(&mut h.t, q, h.now, &s, connect, tail[26]) {
                    Some(c) => {
                        prop_assert_eq!(c.command_id, 9);
                        let qid_after = q.binding().map_or(0, |(_, qid)| qid);
                        prop_assert!(c.sq_id == qid || c.sq_id == qid_after);
                    }
                    None => prop_assert!(opcode == 0x0c && qid == 0),
                }
                if tail[27] == 0 {
                    h.t.notify(AsyncEvent::NamespaceChanged { nsid: u32::from(tail[28]) });
                }
                let mut out = Vec::new();
                h.now += Duration::from_millis(10);
                h.t.poll(h.now, &mut out);
                prop_assert!(out.len() <= MAX_CONTROLLERS * (AER_LIMIT + 1));
                prop_assert!(h.t.pending.is_empty());
                prop_assert!(h.t.controllers.len() <= MAX_CONTROLLERS);
                for c in h.t.controllers.values() {
                    prop_assert!(c.nr_aers <= AER_LIMIT);
                    prop_assert!(c.granted <= MAX_QUEUES);
                }
            }
        }
    }
}
