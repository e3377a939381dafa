//! Hosts that break the rules, over the loopback fabric: data pointers the
//! target does not take are answered with the status nvmet-rdma gives,
//! key 0 never moves data, a key the host does not own costs that queue
//! its connection (as on real hardware: the RDMA request fails) and
//! nothing else, and a capsule shorter than a command drops its queue. In
//! every case the target goes on serving.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use ernic_nvmeof::host::{Command, Controller, Dir, Done, HostConfig};
use ernic_nvmeof::serve::{ServeOptions, Serving};
use ernic_nvmeof::wire::cqe;
use ernic_nvmeof::wire::sgl::{self, Descriptor};
use ernic_nvmeof::wire::sqe;
use ernic_nvmeof::wire::status::Status;
use ernic_verbs::{Fabric, Gid};

mod common;

const TARGET: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const NQN: &str = "nqn.2024-01.io.ernic:hostile";

fn serve(fabric: &Fabric) -> Serving {
    let o = ServeOptions::parse(&format!("nqn={NQN},ns=1M")).expect("options");
    Serving::start(fabric, &o).expect("the target starts")
}

fn host(fabric: &Fabric, n: u8) -> Controller {
    let dev = fabric
        .open_device(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 100 + n)))
        .expect("a host device");
    let cfg = HostConfig {
        subnqn: NQN.into(),
        io_queues: 1,
        depth: 8,
        timeout: Duration::from_secs(5),
        ..HostConfig::default()
    };
    Controller::connect(&dev, Gid::from_ipv4(TARGET), &cfg).expect("connects")
}

/// A one-block Read of LBA 0 whose data pointer is `desc`.
fn read_with(desc: Descriptor) -> [u8; sqe::LEN] {
    let mut b = Command::read(1, 0, 1).0;
    let mut dptr = [0u8; sgl::LEN];
    desc.emit(&mut sgl::Packet::new_unchecked(&mut dptr[..]))
        .expect("a descriptor");
    sqe::Packet::new_unchecked(&mut b[..]).set_dptr(&dptr);
    b
}

/// Sends `sqe` raw on I/O queue 0 and waits for its completion, if one
/// comes within a second.
fn raw(c: &mut Controller, sqe: &[u8; sqe::LEN], data: &[u8]) -> Option<cqe::Repr> {
    let cid = c.io_queues()[0]
        .submit_raw(sqe, data)
        .expect("posts")
        .expect("a free slot");
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut done: Vec<Done> = Vec::new();
    while Instant::now() < deadline {
        done.clear();
        if c.io_queues()[0].poll(&mut done).is_err() {
            return None;
        }
        if let Some(d) = done.iter().find(|d| d.cid == cid) {
            return Some(d.cqe);
        }
        c.tick(Instant::now()).expect("the admin queue lives");
    }
    None
}

fn works(c: &mut Controller) {
    common::round_trip(c, 1, &[0xa5u8; 512]);
}

#[test]
fn data_pointers_the_target_does_not_take_get_nvmets_statuses() {
    let fabric = Fabric::new();
    let _t = serve(&fabric);
    let mut c = host(&fabric, 1);
    let cases = [
        // A segment descriptor (type 2): an SGL type the host never sends.
        (
            Descriptor::Other {
                ty: sgl::TYPE_SEGMENT,
                subtype: 0,
            },
            Status::SGL_INVALID_TYPE,
        ),
        // A data block by address: memory the target cannot reach.
        (
            Descriptor::DataBlock {
                addr: 0x1000,
                len: 512,
                offset: false,
            },
            Status::INVALID_FIELD,
        ),
        // In-capsule data for a command that reads.
        (
            Descriptor::DataBlock {
                addr: 0,
                len: 512,
                offset: true,
            },
            Status::INVALID_FIELD,
        ),
        // Key 0, the reserved DMA key: refused before any data moves.
        (
            Descriptor::Keyed {
                addr: 0x1000,
                len: 512,
                key: 0,
                invalidate: false,
            },
            Status::DATA_XFER_ERROR,
        ),
    ];
    for (desc, want) in cases {
        let got = raw(&mut c, &read_with(desc), &[]).expect("an answer");
        assert_eq!(
            (got.status.sct, got.status.sc),
            (want.sct, want.sc),
            "{desc:?}"
        );
        // The queue still serves.
        works(&mut c);
    }
    // A keyed length shorter than the command moves: invalid data SGL.
    let short = Descriptor::Keyed {
        addr: 0x1000,
        len: 100,
        key: 0x1234,
        invalidate: false,
    };
    let got = raw(&mut c, &read_with(short), &[]).expect("an answer");
    assert_eq!(got.status.sc, Status::SGL_INVALID_DATA.sc);
    // In-capsule data past what arrived: an invalid offset.
    let mut w = Command::write(1, 0, 1).0;
    let mut dptr = [0u8; sgl::LEN];
    Descriptor::DataBlock {
        addr: 100,
        len: 512,
        offset: true,
    }
    .emit(&mut sgl::Packet::new_unchecked(&mut dptr[..]))
    .unwrap();
    sqe::Packet::new_unchecked(&mut w[..]).set_dptr(&dptr);
    let got = raw(&mut c, &w, &[7u8; 512]).expect("an answer");
    assert_eq!(got.status.sc, Status::SGL_INVALID_OFFSET.sc);
    works(&mut c);
    c.disconnect().expect("disconnects");
}

#[test]
fn a_key_the_host_does_not_own_costs_only_its_queue() {
    let fabric = Fabric::new();
    let t = serve(&fabric);
    let mut c = host(&fabric, 2);
    let forged = Descriptor::Keyed {
        addr: 0x5000,
        len: 512,
        key: 0x00ab_cd01,
        invalidate: false,
    };
    // The target's RDMA WRITE fails the engine's key check; its QP goes
    // to error and the queue is dropped: no answer comes.
    assert!(raw(&mut c, &read_with(forged), &[]).is_none());
    // The admin queue and other hosts are served.
    c.keep_alive().expect("the admin queue lives");
    let mut other = host(&fabric, 3);
    works(&mut other);
    other.disconnect().expect("disconnects");
    let st = t.stop().expect("the target ran");
    assert!(st.torn_down >= 1, "{st:?}");
}

#[test]
fn a_capsule_shorter_than_a_command_drops_its_queue_only() {
    let fabric = Fabric::new();
    let t = serve(&fabric);
    let mut c = host(&fabric, 4);
    c.io_queues()[0].send_bytes(&[0x02; 32]).expect("posts");
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut dropped = false;
    let mut done = Vec::new();
    while Instant::now() < deadline && !dropped {
        // The target drops the queue: our QP's next request fails.
        let mut sqe = Command::flush(1).0;
        if let Ok(Some(_)) = c.io_queues()[0].submit(&mut sqe, Dir::None, 0, &[]) {
            std::thread::sleep(Duration::from_millis(20));
        }
        dropped = c.io_queues()[0].poll(&mut done).is_err();
        c.tick(Instant::now()).expect("the admin queue lives");
    }
    assert!(dropped, "the queue outlived a 32-byte capsule");
    c.keep_alive().expect("the admin queue lives");
    let mut other = host(&fabric, 5);
    works(&mut other);
    drop(t);
}

#[test]
fn a_host_that_overfills_its_queue_loses_nothing() {
    // The host says its I/O queue has 4 entries (the target posts 4
    // receives) and keeps 16 commands in flight: the capsules past the
    // 4th wait (the RC QP's receiver-not-ready retries, rnr_retry 7 =
    // forever) until the target answers and posts its receive again.
    let fabric = Fabric::new();
    let _t = serve(&fabric);
    let dev = fabric
        .open_device(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 120)))
        .expect("a host device");
    let cfg = HostConfig {
        subnqn: NQN.into(),
        io_queues: 1,
        depth: 16,
        claim_entries: Some(4),
        ..HostConfig::default()
    };
    let mut c = Controller::connect(&dev, Gid::from_ipv4(TARGET), &cfg).expect("connects");
    let data: Vec<u8> = (0..16 * 512).map(|i| (i / 512) as u8 ^ (i as u8)).collect();
    let mut cids = Vec::new();
    for i in 0..16u32 {
        let mut sqe = Command::write(1, u64::from(i), 1).0;
        let at = i as usize * 512;
        let cid = c.io_queues()[0]
            .submit(&mut sqe, Dir::ToTarget, 512, &data[at..at + 512])
            .expect("posts")
            .expect("a slot");
        cids.push(cid);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut done: Vec<Done> = Vec::new();
    let mut all = Vec::new();
    while all.len() < 16 && Instant::now() < deadline {
        done.clear();
        c.io_queues()[0].poll(&mut done).expect("the queue lives");
        all.extend(done.iter().map(|d| (d.cid, d.cqe.status)));
        c.tick(Instant::now()).expect("the admin queue lives");
    }
    assert_eq!(all.len(), 16, "{} of 16 answered", all.len());
    assert!(all.iter().all(|(_, s)| *s == Status::SUCCESS), "{all:?}");
    let mut got = vec![0u8; 16 * 512];
    c.io_cmd_sync(
        "Read",
        0,
        Command::read(1, 0, 16),
        Dir::FromTarget,
        &[],
        &mut got,
    )
    .expect("read");
    assert_eq!(got, data);
    c.disconnect().expect("disconnects");
}
