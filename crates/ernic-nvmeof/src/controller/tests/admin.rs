//! Admin and fabrics paths: Connect's errors, granted queues, keep-alive,
//! AERs, the discovery controller, queues going away, shutdown, Identify's
//! fields, the admin error statuses, SQ flow control, the controller table's
//! bound, and a missing backing file.

use super::*;

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
