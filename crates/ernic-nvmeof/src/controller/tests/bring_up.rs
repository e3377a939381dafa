//! Linux's bring-up sequence from Connect to the namespace scan, and the SQ
//! head every completion reports.

use super::*;

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
