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

#[test]
fn a_driver_probe_over_the_socket() {
    let dir = std::env::temp_dir().join(format!("ernic-ionic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let server = std::thread::spawn(move || {
        let mut s = Server::new(
            IonicFunction::new(Identity::default()),
            Capabilities::default(),
        );
        let (c, _) = listener.accept().unwrap();
        let ended = s.serve(&c).is_ok();
        (ended, s.device.doorbells())
    });

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
        Err(ClientError::Refused { errno: 22, .. })
    ));
    drop(c);
    let (ended, (rung, last)) = server.join().unwrap();
    assert!(ended);
    assert_eq!(rung, 1);
    let d = last.unwrap();
    assert_eq!((d.page, d.qtype, d.qid, d.ring, d.index), (1, 6, 5, 0, 9));
}
