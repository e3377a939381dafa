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

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ seed)
        .collect()
}

mod admin;
mod bring_up;
mod io;
mod prop;
