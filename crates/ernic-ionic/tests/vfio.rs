//! The ionic function served over a real vfio-user socket, read and
//! written as the Linux driver's probe does: config space identity, the
//! BAR 0 info block, a device command through the command registers, and a
//! doorbell in BAR 2.

use std::os::unix::net::UnixListener;
use std::time::Duration;

use ernic_ionic::bar0::Identity;
use ernic_ionic::function::IonicFunction;
use ernic_ionic::regs::{cmd, info, opcode, status};
use ernic_vfio::client::{Client, ClientError};
use ernic_vfio::pci::{irq, region};
use ernic_vfio::proto::{self, Capabilities, Command};
use ernic_vfio::server::Server;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// An ionic function served on a fresh socket to one client in a thread;
/// the thread answers whether the client ended well, and `after` of the
/// server.
fn serve<T: Send + 'static>(
    name: &str,
    after: fn(&Server<IonicFunction>) -> T,
) -> (std::path::PathBuf, std::thread::JoinHandle<(bool, T)>) {
    let dir = std::env::temp_dir().join(format!("ernic-ionic-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let h = std::thread::spawn(move || {
        let mut s = Server::new(
            IonicFunction::new(Identity::default()),
            Capabilities::default(),
        );
        let (c, _) = listener.accept().unwrap();
        let ended = s.serve(&c).is_ok();
        (ended, after(&s))
    });
    (path, h)
}

#[test]
fn a_driver_probe_over_the_socket() {
    let (path, server) = serve("probe", |s| s.device.doorbells());
    let mut c = Client::connect(&path, Duration::from_secs(10)).unwrap();
    c.version(&Capabilities::default()).unwrap();
    let info_reply = c
        .request(Command::DeviceGetInfo, &16u32.to_le_bytes().repeat(4), &[])
        .unwrap();
    assert_eq!(info_reply, proto::device_info(3, region::COUNT, irq::COUNT));

    // Config space: 1dd8:1002, subsystem 1dd8:5400, class 02:00:00.
    let cfg = c.region_read(region::CONFIG, 0, 64).unwrap();
    assert_eq!(u32_at(&cfg, 0x00), 0x1002_1dd8);
    assert_eq!(u32_at(&cfg, 0x08) >> 8, 0x02_0000);
    assert_eq!(u32_at(&cfg, 0x2c), 0x5400_1dd8);
    let msix = c.region_read(region::CONFIG, 0x40, 12).unwrap();
    assert_eq!(u32_at(&msix, 0) >> 16, 31, "32 MSI-X vectors");

    // BAR 0: "DEVI", firmware running.
    let dev = c.region_read(region::BAR0, 0, 8).unwrap();
    assert_eq!(u32_at(&dev, 0), info::SIGNATURE_VALUE);
    assert_eq!(dev[info::FW_STATUS], info::FW_RUNNING);

    // IDENTIFY through the command registers, as ionic_dev_cmd_go does.
    c.region_write(region::BAR0, cmd::DONE as u64, &0u32.to_le_bytes())
        .unwrap();
    let mut command = [0u8; 64];
    command[0] = opcode::IDENTIFY;
    command[1] = 1;
    c.region_write(region::BAR0, cmd::CMD as u64, &command)
        .unwrap();
    c.region_write(region::BAR0, cmd::DOORBELL as u64, &1u32.to_le_bytes())
        .unwrap();
    let done = c.region_read(region::BAR0, cmd::DONE as u64, 4).unwrap();
    assert_eq!(u32_at(&done, 0) & 1, 1);
    let comp = c.region_read(region::BAR0, cmd::COMP as u64, 16).unwrap();
    assert_eq!((comp[0], comp[1]), (status::SUCCESS, 1));
    let ident = c.region_read(region::BAR0, cmd::DATA as u64, 64).unwrap();
    assert_eq!(u32_at(&ident, 12), 32, "nintrs");

    // An opcode the device does not know fails with EOPCODE.
    command[0] = 250;
    c.region_write(region::BAR0, cmd::CMD as u64, &command)
        .unwrap();
    c.region_write(region::BAR0, cmd::DOORBELL as u64, &1u32.to_le_bytes())
        .unwrap();
    let comp = c.region_read(region::BAR0, cmd::COMP as u64, 16).unwrap();
    assert_eq!(comp[0], status::EOPCODE);

    // A doorbell on BAR 2: page 1, RDMA SQ type (6), qid 5, index 9.
    let value: u64 = 5 << 24 | 9;
    c.region_write(region::BAR2, 4096 + 6 * 8, &value.to_le_bytes())
        .unwrap();
    // Regions the function does not have are refused.
    assert!(matches!(
        c.region_read(1, 0, 4),
        Err(ClientError::Refused { errno, .. }) if errno == libc::EINVAL as u32
    ));
    drop(c);
    let (ended, (rung, last)) = server.join().unwrap();
    assert!(ended);
    assert_eq!(rung, 1);
    let d = last.unwrap();
    assert_eq!((d.page, d.qtype, d.qid, d.ring, d.index), (1, 6, 5, 0, 9));
}

/// The Ethernet admin queue over the socket: set up with Q_INIT through
/// BAR 0, descriptors in guest memory, a BAR 2 doorbell, completions with
/// the color bit written back, and the queue's MSI-X vector fired.
#[test]
fn the_ethernet_admin_queue_runs_descriptors_from_guest_memory() {
    use ernic_ionic::regs::{q_init, qtype};
    use ernic_vfio::client::{eventfd, shared_memory};
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let (path, server) = serve("aq", |_| ());
    let mut c = Client::connect(&path, Duration::from_secs(10)).unwrap();
    c.version(&Capabilities::default()).unwrap();
    const G: u64 = 0x8000_0000;
    let ram = shared_memory(c"guest", 1 << 16).unwrap();
    c.dma_map(G, 1 << 16, 0, proto::DMA_READ | proto::DMA_WRITE, &ram)
        .unwrap();
    let ev = std::fs::File::from(eventfd().unwrap());
    c.irq_eventfds(irq::MSIX, 1, &[&ev]).unwrap();

    // Q_INIT: admin queue 0, 4 descriptors, interrupt 1, enabled.
    let mut q = [0u8; 64];
    q[0] = opcode::Q_INIT;
    q[q_init::TYPE] = qtype::ADMINQ;
    q[q_init::INTR_INDEX] = 1;
    q[q_init::FLAGS] = (q_init::F_IRQ | q_init::F_ENA) as u8;
    q[q_init::RING_SIZE] = 2;
    q[q_init::RING_BASE..q_init::RING_BASE + 8].copy_from_slice(&(G + 0x1000).to_le_bytes());
    q[q_init::CQ_RING_BASE..q_init::CQ_RING_BASE + 8].copy_from_slice(&(G + 0x2000).to_le_bytes());
    c.region_write(region::BAR0, cmd::CMD as u64, &q).unwrap();
    c.region_write(region::BAR0, cmd::DOORBELL as u64, &1u32.to_le_bytes())
        .unwrap();
    let comp = c.region_read(region::BAR0, cmd::COMP as u64, 1).unwrap();
    assert_eq!(comp[0], status::SUCCESS);

    let ram = std::fs::File::from(ram);
    let pwrite = |at: u64, b: &[u8]| ram.write_all_at(b, at).unwrap();
    let pread = |at: u64, n: usize| {
        let mut b = vec![0u8; n];
        ram.read_exact_at(&mut b, at).unwrap();
        b
    };
    let take = || {
        let mut v = [0u8; 8];
        match (&ev).read(&mut v) {
            Ok(8) => u64::from_le_bytes(v),
            _ => 0,
        }
    };
    let post = |slot: u64, op: u8, attr: u8| {
        let mut d = [0u8; 64];
        d[0] = op;
        d[1] = attr;
        pwrite(0x1000 + 64 * slot, &d);
    };
    let ring = |c: &mut Client, p_index: u64| {
        c.region_write(region::BAR2, 0, &p_index.to_le_bytes())
            .unwrap();
    };

    post(0, opcode::NOP, 0);
    post(1, opcode::LIF_GETATTR, 3);
    post(2, 52, 0); // RDMA CREATE_CQ with a zero stride: refused
    ring(&mut c, 3);
    for (slot, want) in [
        (0u64, status::SUCCESS),
        (1, status::SUCCESS),
        (2, status::EINVAL),
    ] {
        let comp = pread(0x2000 + 16 * slot, 16);
        assert_eq!(comp[0], want, "descriptor {slot}");
        assert_eq!(
            u16::from_le_bytes([comp[2], comp[3]]),
            slot as u16,
            "comp_index"
        );
        assert_eq!(comp[15] & 0x80, 0x80, "first pass: color 1");
    }
    assert_eq!(
        &pread(0x2000 + 16 + 4, 6),
        &Identity::default().mac,
        "the MAC"
    );
    assert!(take() >= 1, "the admin queue's vector fired");

    // Three more wrap the 4-deep ring: slot 3 keeps color 1, slots 0 and
    // 1 come back with color 0.
    for slot in [3u64, 0, 1] {
        post(slot, opcode::NOP, 0);
    }
    ring(&mut c, 6 & 3);
    assert_eq!(pread(0x2000 + 16 * 3, 16)[15] & 0x80, 0x80);
    assert_eq!(pread(0x2000, 16)[15] & 0x80, 0);
    assert_eq!(pread(0x2000 + 16, 16)[15] & 0x80, 0);
    assert!(take() >= 1);
    drop(c);
    assert!(server.join().unwrap().0);
}
