//! I/O commands: writes read back on several queues, Write Zeroes and
//! Dataset Management, Flush on a file namespace across a new target, and
//! the I/O error statuses.

use super::*;

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
