//! The target and the initiator end to end, over the loopback fabric: the
//! initiator connects through the IB CM as Linux's nvme-rdma does (REQ
//! with rdma_cm's header and NVMe/RDMA's record, REP, RTU), brings the
//! controller up, moves data through fast-registered keys the target
//! reads and writes with RDMA, and the target keeps serving others when a
//! host misbehaves or vanishes.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ernic_nvmeof::host::{Command, Controller, Dir, HostConfig, HostError};
use ernic_nvmeof::serve::{ServeOptions, Serving};
use ernic_nvmeof::wire::status::Status;
use ernic_verbs::{Fabric, Gid};

mod common;

const TARGET: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const NQN: &str = "nqn.2024-01.io.ernic:e2e";

fn serve(fabric: &Fabric, opts: &str) -> Serving {
    let o = ServeOptions::parse(&format!("nqn={NQN},{opts}")).expect("options");
    Serving::start(fabric, &o).expect("the target starts")
}

fn host(fabric: &Fabric, n: u8, queues: u16) -> Result<Controller, HostError> {
    host_with(fabric, n, queues, 5000)
}

fn host_with(fabric: &Fabric, n: u8, queues: u16, kato_ms: u32) -> Result<Controller, HostError> {
    let dev = fabric
        .open_device(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 100 + n)))
        .expect("a host device");
    let cfg = HostConfig {
        subnqn: NQN.into(),
        hostnqn: format!("nqn.2014-08.org.nvmexpress:uuid:e2e-host-{n}"),
        io_queues: queues,
        depth: 16,
        kato_ms,
        timeout: Duration::from_secs(5),
        ..HostConfig::default()
    };
    Controller::connect(&dev, Gid::from_ipv4(TARGET), &cfg)
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(0x9e37_79b9).wrapping_add(i as u64 * 13) >> 3) as u8)
        .collect()
}

/// A scratch directory removed when the test ends, however it ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("ernic-nvmeof-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn connect_identify_write_read_on_several_queues_and_reconnect() {
    let fabric = Fabric::new();
    let _t = serve(&fabric, "ns=8M,ns=4M,bs=512,queues=4,depth=64");
    let mut c = host(&fabric, 1, 3).expect("connects");
    assert_ne!(c.cntlid(), 0xffff);
    // Identify Controller: the subsystem's NQN at SUBNQN (byte 768).
    let subnqn = &c.id_ctrl[768..768 + NQN.len()];
    assert_eq!(subnqn, NQN.as_bytes());
    assert_eq!(c.io_queues().len(), 3);
    // Several I/O queues, several sizes: every pattern reads back.
    let mut lba = 0u64;
    let mut written = Vec::new();
    for q in 0..3 {
        for blocks in [1u32, 8, 64] {
            let data = pattern(lba * 7 + q as u64, blocks as usize * 512);
            c.io_cmd_sync(
                "Write",
                q,
                Command::write(1, lba, blocks),
                Dir::ToTarget,
                &data,
                &mut [],
            )
            .expect("write");
            written.push((lba, blocks, data));
            lba += u64::from(blocks);
        }
    }
    for (i, (lba, blocks, data)) in written.iter().enumerate() {
        let mut got = vec![0u8; data.len()];
        c.io_cmd_sync(
            "Read",
            (i + 1) % 3,
            Command::read(1, *lba, *blocks),
            Dir::FromTarget,
            &[],
            &mut got,
        )
        .expect("read");
        assert_eq!(&got, data, "LBA {lba}, {blocks} blocks");
    }
    // The second namespace is its own.
    let mut got = vec![0u8; 512];
    c.io_cmd_sync(
        "Read",
        0,
        Command::read(2, 0, 1),
        Dir::FromTarget,
        &[],
        &mut got,
    )
    .expect("read ns 2");
    assert!(got.iter().all(|&b| b == 0));
    // Past the end: LBA out of range, and the queue still works after.
    let err = c
        .io_cmd_sync(
            "Read",
            0,
            Command::read(1, 8 * 2048, 1),
            Dir::FromTarget,
            &[],
            &mut got,
        )
        .expect_err("past the end");
    assert!(
        matches!(err, HostError::Status { status, .. } if status.sc == Status::LBA_RANGE.sc),
        "{err}"
    );
    c.keep_alive().expect("keep alive");
    c.disconnect().expect("disconnects");

    // A new controller sees what the first wrote.
    // (A device keeps its GID for the fabric's life: the new host is another.)
    let mut c = host(&fabric, 6, 1).expect("reconnects");
    let (lba, blocks, data) = &written[4];
    let mut got = vec![0u8; data.len()];
    c.io_cmd_sync(
        "Read",
        0,
        Command::read(1, *lba, *blocks),
        Dir::FromTarget,
        &[],
        &mut got,
    )
    .expect("read after reconnect");
    assert_eq!(&got, data);
    c.disconnect().expect("disconnects");
}

#[test]
fn a_file_backed_namespace_keeps_its_data_across_a_restart() {
    let dir = Scratch::new("restart");
    let path = dir.0.join("ns1.img");
    std::fs::write(&path, vec![0u8; 1 << 20]).expect("image");
    let data = pattern(42, 4096);
    {
        let fabric = Fabric::new();
        let _t = serve(&fabric, &format!("ns=file:{},bs=4096", path.display()));
        let mut c = host(&fabric, 2, 1).expect("connects");
        c.io_cmd_sync(
            "Write",
            0,
            Command::write(1, 3, 1),
            Dir::ToTarget,
            &data,
            &mut [],
        )
        .expect("write");
        c.io_cmd_sync("Flush", 0, Command::flush(1), Dir::None, &[], &mut [])
            .expect("flush");
        c.disconnect().expect("disconnects");
    }
    let fabric = Fabric::new();
    let _t = serve(&fabric, &format!("ns=file:{},bs=4096", path.display()));
    let mut c = host(&fabric, 2, 1).expect("connects after the restart");
    let mut got = vec![0u8; 4096];
    c.io_cmd_sync(
        "Read",
        0,
        Command::read(1, 3, 1),
        Dir::FromTarget,
        &[],
        &mut got,
    )
    .expect("read");
    assert_eq!(got, data);
    c.disconnect().expect("disconnects");
}

#[test]
fn a_wrong_subsystem_is_refused_and_others_are_served() {
    let fabric = Fabric::new();
    let _t = serve(&fabric, "ns=1M");
    let dev = fabric
        .open_device(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 150)))
        .expect("device");
    let cfg = HostConfig {
        subnqn: "nqn.2024-01.io.ernic:nobody".into(),
        io_queues: 1,
        ..HostConfig::default()
    };
    let err = Controller::connect(&dev, Gid::from_ipv4(TARGET), &cfg).expect_err("refused");
    assert!(err.to_string().contains("no such subsystem"), "{err}");
    let mut c = host(&fabric, 3, 1).expect("the next host connects");
    c.keep_alive().expect("served");
    c.disconnect().expect("disconnects");
}

#[test]
fn a_host_that_vanishes_leaves_the_target_serving_others() {
    let fabric = Fabric::new();
    let t = serve(&fabric, "ns=1M");
    {
        // Connected, then gone without a word: its device, QPs and keys
        // are destroyed while the target still holds its queues, until
        // the keep-alive timeout lapses (300 ms is 1 s to the target,
        // which counts KATO in seconds as nvmet does, and as much again of
        // grace).
        let c = host_with(&fabric, 4, 2, 300).expect("connects");
        drop(c);
    }
    let start = Instant::now();
    let mut c = host(&fabric, 5, 1).expect("another host connects");
    common::round_trip(&mut c, 0, &pattern(5, 512));
    assert!(start.elapsed() < Duration::from_secs(5));
    // Past the vanished host's keep-alive timeout and grace, its three
    // queues are gone; ours are not (we keep alive).
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(500));
        c.keep_alive().expect("still served");
    }
    c.keep_alive().expect("still served");
    c.disconnect().expect("disconnects");
    let st = t.stop().expect("the target ran to the end");
    assert!(st.accepted >= 5, "{st:?}");
    assert!(st.torn_down >= 3, "the vanished host's queues: {st:?}");
}
