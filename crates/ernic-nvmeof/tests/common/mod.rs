//! What the target's integration tests share: a write of whole blocks on
//! I/O queue 0, read back and compared.

use ernic_nvmeof::host::{Command, Controller, Dir};

/// Writes `data` (whole 512-byte blocks) at `lba` of namespace 1 on I/O
/// queue 0, reads it back, and checks it came back unchanged.
pub fn round_trip(c: &mut Controller, lba: u64, data: &[u8]) {
    let nlb = (data.len() / 512) as u32;
    c.io_cmd_sync(
        "Write",
        0,
        Command::write(1, lba, nlb),
        Dir::ToTarget,
        data,
        &mut [],
    )
    .expect("write");
    let mut got = vec![0u8; data.len()];
    c.io_cmd_sync(
        "Read",
        0,
        Command::read(1, lba, nlb),
        Dir::FromTarget,
        &[],
        &mut got,
    )
    .expect("read");
    assert_eq!(got, data, "LBA {lba}: what was written reads back");
}
