//! Writes the seed corpus, `fuzz/corpus/TARGET/NAME`, from the crates' own
//! encoders and the harnesses' seed sequences, and checks each seed: a
//! structured seed decodes back to the operations it was written from,
//! and every seed runs through its harness without a crash.
//!
//! `cargo +nightly run --example gen-corpus` (from `fuzz/`; the corpus is
//! committed, so run it again only when a harness's operations change).

use std::path::Path;

use arbitrary::Arbitrary;
use ernic_fuzz::{
    Enc, cm_conn, core_engine, ionic_device, ionic_rdma, mesh_handshake, net_control,
    nvme_controller, plugin_handle, vfio_server,
};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir).expect("corpus directory");
    std::fs::write(dir.join(name), bytes).expect("seed file");
}

/// Encodes each seed, checks it decodes back to the same operations, runs
/// it, and writes it.
fn structured<T>(
    target: &str,
    seeds: Vec<(&str, Vec<T>)>,
    emit: impl Fn(&T, &mut Enc),
    run: impl Fn(&[u8]),
) where
    T: for<'a> Arbitrary<'a> + PartialEq + std::fmt::Debug,
{
    for (name, ops) in seeds {
        let mut e = Enc::default();
        for op in &ops {
            emit(op, &mut e);
        }
        let back: Vec<T> = ernic_fuzz::ops(&e.0, usize::MAX);
        assert_eq!(back, ops, "{target}/{name} decodes to what was written");
        run(&e.0);
        write(target, name, &e.0);
        // Each operation alone, too: small seeds the fuzzer splices.
        for (i, op) in ops.iter().enumerate() {
            let mut one = Enc::default();
            emit(op, &mut one);
            run(&one.0);
            write(target, &format!("{name}-{i}"), &one.0);
        }
    }
}

fn vfio_proto() {
    use ernic_vfio::proto::{Capabilities, HEADER_LEN, Header, RegionInfo};
    let msg = |command: u16, body: &[u8]| {
        let h = Header {
            id: 1,
            command,
            size: (HEADER_LEN + body.len()) as u32,
            flags: 0,
            error: 0,
        };
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(body);
        v
    };
    let mut version = vec![0, 0, 1, 0];
    version.extend_from_slice(&Capabilities::default().to_json());
    let q = |argsz: u32, index: u32, len: usize| {
        let mut b = vec![0u8; len];
        b[..4].copy_from_slice(&argsz.to_le_bytes());
        if len >= 12 {
            b[8..12].copy_from_slice(&index.to_le_bytes());
        }
        b
    };
    let mut unmap = q(24, 0, 24);
    unmap[8..16].copy_from_slice(&0x10_0000u64.to_le_bytes());
    unmap[16..24].copy_from_slice(&0x1_0000u64.to_le_bytes());
    let mut write_body = ernic_vfio::proto::region_io_reply(0x800, 0, 4).to_vec();
    write_body.extend_from_slice(&1u32.to_le_bytes());
    let mut bools = ernic_vfio::client::set_irqs_body(
        ernic_vfio::proto::IRQ_DATA_BOOL | ernic_vfio::proto::IRQ_ACTION_MASK,
        4,
        0,
        2,
    );
    bools[..4].copy_from_slice(&22u32.to_le_bytes());
    bools.extend_from_slice(&[1, 0]);
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        ("version", msg(1, &version)),
        (
            "dma-map",
            msg(
                2,
                &ernic_vfio::client::dma_map_body(0x10_0000, 0x1_0000, 0, 3),
            ),
        ),
        ("dma-unmap", msg(3, &unmap)),
        ("device-info", msg(4, &q(16, 0, 16))),
        ("region-info", msg(5, &q(32, 2, 32))),
        ("irq-info", msg(7, &q(16, 4, 16))),
        (
            "set-irqs",
            msg(
                8,
                &ernic_vfio::client::set_irqs_body(
                    ernic_vfio::proto::IRQ_DATA_EVENTFD | ernic_vfio::proto::IRQ_ACTION_TRIGGER,
                    4,
                    0,
                    4,
                ),
            ),
        ),
        ("set-irqs-bool", msg(8, &bools)),
        (
            "region-read",
            msg(9, &ernic_vfio::proto::region_io_reply(0, 0, 64)),
        ),
        ("region-write", msg(10, &write_body)),
        ("reset", msg(13, &[])),
    ];
    for (name, b) in seeds {
        write("vfio_proto", name, &b);
    }
    // Region info replies, as a client reads them (the body after a
    // header).
    let r = RegionInfo {
        flags: 7,
        index: 2,
        size: 4 << 20,
        offset: 0,
        sparse: vec![(0x3c_0000, 0x4_0000)],
    };
    let mut v = msg(5, &[]);
    v.extend_from_slice(&r.reply(256));
    write("vfio_proto", "region-info-reply", &v);
}

fn ionic_profile() {
    for (name, text) in ernic_ionic::profile::BUILT_IN {
        write("ionic_profile", name, text.as_bytes());
    }
    write(
        "ionic_profile",
        "every-key",
        b"[nic]\nvectors = 16 # comment\nspeed = 50000\nfw_version = 1.2.3\nserial = S1\n\
          mac = 02:00:00:00:00:07\nmax_frame = 1518\neth_queues = 1\ndoorbell_pages = 16\n\
          shared_doorbell_pages = 4\nrdma_aqs = 1\nrdma_qps = 0x40\nrdma_cqs = 8\nrdma_eqs = 2\n\
          rdma_mrs = 16\nrdma_ahs = 8\nrdma_ptes = 4096\nrdma_queue_mib = 1\n\
          rnr_timeout_ms = 10\nrequest_timeout_ms = 100\n",
    );
}

fn core_wire() {
    use ernic_core::wire::{self, Op, Repr};
    use ernic_core::{Gid, Qpn, WcStatus};
    let emit = |r: &Repr, payload: &[u8]| {
        let mut v = vec![0u8; wire::HEADER_LEN + payload.len()];
        r.emit(&mut v);
        v[wire::HEADER_LEN..].copy_from_slice(payload);
        v
    };
    let base = |op: Op, len: u32| {
        let mut r = Repr::new(op);
        r.src_qpn = Qpn(5);
        r.dst_qpn = Qpn(6);
        r.req_id = 42;
        r.rkey = 0x20;
        r.addr = 0x1000;
        r.len = len;
        r.total = len;
        r.sgid = "10.0.0.1".parse::<Gid>().unwrap();
        r.dgid = "10.0.0.2".parse::<Gid>().unwrap();
        r
    };
    let data = [7u8; 64];
    let mut out: Vec<(&str, Vec<u8>)> = vec![
        ("send", emit(&base(Op::Send, 64), &data)),
        ("write", emit(&base(Op::Write, 64), &data)),
        ("write-imm", {
            let mut r = base(Op::WriteImm, 64);
            r.flags = wire::flags::IMM | wire::flags::LAST;
            r.imm = 9;
            emit(&r, &data)
        }),
        ("read-req", emit(&base(Op::ReadReq, 64), &[])),
        ("read-resp", emit(&base(Op::ReadResp, 64), &data)),
        ("cas", {
            let mut r = base(Op::AtomicCas, 8);
            r.operand0 = 1;
            r.operand1 = 2;
            r.total = 0;
            emit(&r, &[])
        }),
        ("ack-error", {
            let mut r = base(Op::Ack, 0);
            r.status = WcStatus::RemAccessErr;
            emit(&r, &[])
        }),
        ("piece", {
            let mut r = base(Op::Write, 32);
            r.total = 64;
            r.offset = 32;
            emit(&r, &data[..32])
        }),
    ];
    // By reference: two runs adding up to the length.
    let mut r = base(Op::Send, 96);
    r.flags = wire::flags::BY_REF;
    r.operand0 = 2;
    let mut runs = vec![0u8; 2 * wire::REF_RUN_LEN];
    wire::put_ref_runs(&mut runs, &[(0x10_0000, 64), (0x20_0000, 32)]);
    out.push(("by-ref", emit(&r, &runs)));
    for (name, b) in out {
        // Each parses: the seeds are valid messages.
        let p = wire::Packet::new_checked(&b[..]).expect("a header");
        Repr::parse(&p).unwrap_or_else(|e| panic!("seed {name}: {e}"));
        write("core_wire", name, &b);
    }
}

fn mesh_frame() {
    use ernic_core::Gid;
    use ernic_mesh::frame::{Kind, NO_NODE, Writer, frame};
    let g: Gid = "10.0.0.1".parse().unwrap();
    let gids = Writer::default().u16(3).u8(1).u16(2).gid(g).gid(g).0;
    let topo = Writer::default()
        .u16(2)
        .u16(1)
        .u8(1)
        .gid(g)
        .u16(4791)
        .u16(2)
        .u8(0)
        .gid(Gid::default())
        .u16(0)
        .0;
    let mut stream = Vec::new();
    let seeds: Vec<(&str, Vec<u8>)> = vec![
        (
            "register",
            frame(
                Kind::Register,
                NO_NODE,
                NO_NODE,
                &Writer::default().u64(77).u16(NO_NODE).u16(4791).0,
            ),
        ),
        (
            "welcome",
            frame(Kind::Welcome, 0, NO_NODE, &Writer::default().u16(3).0),
        ),
        (
            "refuse",
            frame(
                Kind::Refuse,
                0,
                NO_NODE,
                &Writer::default().text("the table is full").0,
            ),
        ),
        (
            "hello",
            frame(Kind::Hello, 3, NO_NODE, &Writer::default().u16(3).u64(77).0),
        ),
        ("gids", frame(Kind::Gids, 3, NO_NODE, &gids)),
        ("topology", frame(Kind::Topology, 0, NO_NODE, &topo)),
        ("heartbeat", frame(Kind::Heartbeat, 3, NO_NODE, &[])),
        ("data", frame(Kind::Data, 3, 4, &[0u8; 96])),
    ];
    for (name, b) in &seeds {
        stream.extend_from_slice(b);
        write("mesh_frame", name, b);
    }
    write("mesh_frame", "stream", &stream);
}

/// Each handshake seed ends where its name says: the correct ones admitted
/// (or, for the same-host proof, past the key to the token check), the
/// others refused for their reason.
fn mesh_handshake_outcomes() {
    use ernic_mesh::HandshakeError as E;
    let seeds = mesh_handshake::seeds();
    for (name, ops) in &seeds {
        let mut e = Enc::default();
        for op in ops {
            op.emit(&mut e);
        }
        let r = mesh_handshake::respond(&e.0);
        let ok = match *name {
            "register-keyed" | "register-keyless" | "hello-keyed" | "hello-keyless" => r.is_ok(),
            "register-wrong-key" => matches!(r, Err(E::WrongKey)),
            "register-keyless-at-keyed" => matches!(r, Err(E::PeerKeyless)),
            "register-too-many-gids" => matches!(r, Err(E::Frame(_))),
            "same-host-keyed" => {
                matches!(&r, Err(E::Io(e)) if e.to_string().contains("token names no connection"))
            }
            "old-version" => matches!(r, Err(E::Version { theirs: 2 })),
            _ => panic!("mesh_handshake/{name}: no expected outcome"),
        };
        assert!(ok, "mesh_handshake/{name} ended as {r:?}");
    }
}

/// `ernic perf`'s lines, from its own encoders: a client's hello, a
/// server's endpoint with its mesh port, a refusal.
fn perf_wire() {
    use ernic::perf_wire::{Endpoint, Hello, refusal};
    use ernic_verbs::{Qpn, RemoteAddr, Rkey};
    let hello = Hello {
        test: "write_bw".into(),
        sizes: vec![2, 65536, 1 << 20],
        iters: 1000,
        tx_depth: 128,
        baseline: true,
        bidirectional: false,
    };
    let mut endpoint = Endpoint {
        gid: "fd00::6e65:0:1".parse().unwrap(),
        qpn: Qpn(17),
        remote: RemoteAddr {
            addr: 0x7f12_3400_0000,
            rkey: Rkey(0x1234),
        },
    }
    .to_json();
    endpoint["mesh_port"] = 40123.into();
    for (name, v) in [
        ("hello", hello.to_json()),
        ("endpoint", endpoint),
        ("refusal", refusal("this server runs read_bw, not write_bw")),
    ] {
        write("perf_wire", name, format!("{v}\n").as_bytes());
    }
}

/// A connection's CM MADs as Linux's CM and rdma_cm write them for an
/// NVMe/RDMA host: the REQ (rdma_cm header, then the NVMe connect
/// request), the REP (NVMe connect reply), the RTU, a REJ of a refused
/// REQ (NVMe reject record) and the DREQ.
fn cm_mad() {
    use ernic_cm::mad::MAD_LEN;
    use ernic_cm::msg::MsgResponse;
    use ernic_cm::private_data::{cma, nvme};
    use ernic_cm::{CmMessage, dreq, rej, rep, req, rtu};
    use std::net::Ipv4Addr;

    let emit = |name: &str, m: CmMessage| {
        let mut b = [0u8; MAD_LEN];
        m.emit(&mut b).expect("a MAD-sized buffer");
        assert_eq!(CmMessage::parse(&b), Ok(m), "{name} parses back");
        write("cm_mad", name, &b);
    };
    let tid = 0x0000_0001_0000_1234;
    let (host_id, target_id) = (0x1234_5678, 0x9abc_def0);

    let mut pd = [0u8; req::PRIVATE_DATA_LEN];
    cma::Repr {
        port: 50000,
        addrs: cma::Addrs::V4 {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
        },
    }
    .emit(&mut cma::Packet::new_checked(&mut pd[..]).unwrap());
    nvme::req::Repr {
        qid: 1,
        hrqsize: 128,
        hsqsize: 127,
    }
    .emit(&mut nvme::req::Packet::new_checked(&mut pd[cma::LEN..]).unwrap());
    let gid = |last: u8| {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&[10, 0, 0, last]);
        g
    };
    emit(
        "req-nvme-rdma",
        CmMessage::Req(req::Repr {
            tid,
            attr_mod: 0,
            local_comm_id: host_id,
            vendor_id: 0,
            service_id: cma::service_id(cma::RDMA_PS_TCP, nvme::IP_PORT),
            local_ca_guid: 0x0202_c9ff_fe00_0001,
            local_qkey: 0,
            local_qpn: 0x11,
            responder_resources: 16,
            local_eecn: 0,
            initiator_depth: 16,
            remote_eecn: 0,
            remote_cm_response_timeout: 20,
            transport: req::Transport::Rc,
            end_to_end_flow_control: true,
            starting_psn: 0x00ab_cdef,
            local_cm_response_timeout: 20,
            retry_count: 7,
            partition_key: 0xffff,
            path_mtu: 3,
            rdc_exists: false,
            rnr_retry_count: 7,
            max_cm_retries: 15,
            srq: false,
            extended_transport_type: 0,
            primary: req::Path {
                local_lid: 0xffff,
                remote_lid: 0xffff,
                local_gid: gid(1),
                remote_gid: gid(2),
                flow_label: 0,
                packet_rate: 0,
                traffic_class: 0,
                hop_limit: 64,
                sl: 0,
                subnet_local: false,
                local_ack_timeout: 18,
            },
            alternate: req::Path::default(),
            sap_supported: false,
            private_data: pd,
        }),
    );

    let mut pd = [0u8; rep::PRIVATE_DATA_LEN];
    nvme::rep::Repr { crqsize: 128 }
        .emit(&mut nvme::rep::Packet::new_checked(&mut pd[..]).unwrap());
    emit(
        "rep-nvme-rdma",
        CmMessage::Rep(rep::Repr {
            tid,
            attr_mod: 0,
            local_comm_id: target_id,
            remote_comm_id: host_id,
            local_qkey: 0,
            local_qpn: 0x22,
            vendor_id: 0,
            local_eecn: 0,
            starting_psn: 0x0012_3456,
            responder_resources: 16,
            initiator_depth: 16,
            target_ack_delay: 15,
            failover_accepted: 0,
            end_to_end_flow_control: true,
            rnr_retry_count: 7,
            srq: false,
            local_ca_guid: 0x0202_c9ff_fe00_0002,
            private_data: pd,
        }),
    );
    emit(
        "rtu",
        CmMessage::Rtu(rtu::Repr {
            tid,
            local_comm_id: host_id,
            remote_comm_id: target_id,
            private_data: [0; rtu::PRIVATE_DATA_LEN],
        }),
    );

    let mut pd = [0u8; rej::PRIVATE_DATA_LEN];
    nvme::rej::Repr {
        sts: nvme::rej::Status::InvalidHsqsize,
    }
    .emit(&mut nvme::rej::Packet::new_checked(&mut pd[..]).unwrap());
    emit(
        "rej-nvme-rdma",
        CmMessage::Rej(rej::Repr {
            tid,
            local_comm_id: target_id,
            remote_comm_id: host_id,
            message_rejected: MsgResponse::Req,
            ari_len: 0,
            reason: rej::RejReason::ConsumerDefined,
            ari: [0; rej::ARI_LEN],
            private_data: pd,
        }),
    );
    emit(
        "dreq",
        CmMessage::Dreq(dreq::Repr {
            tid: tid + 1,
            local_comm_id: host_id,
            remote_comm_id: target_id,
            remote_qpn: 0x22,
            private_data: [0; dreq::PRIVATE_DATA_LEN],
        }),
    );
}

/// NVMe/RDMA capsules as Linux's host sends them (drivers/nvme/host/
/// fabrics.c and rdma.c), from `ernic_nvmeof`'s encoders: the admin queue's
/// Connect with a keyed descriptor and its 1024 bytes of data after the SQE,
/// an I/O queue's Connect with the data in the capsule, an I/O Write with
/// in-capsule data (an offset descriptor), a Property Get of CAP, a Property
/// Set of CC, and a Connect's completion.
fn nvme_capsule() {
    use ernic_nvmeof::wire::fabrics::connect_data::Nqn;
    use ernic_nvmeof::wire::fabrics::{connect, connect_data, property, registers};
    use ernic_nvmeof::wire::{cqe, sgl::Descriptor, sqe, status::Status};

    let data = |cntlid: u16| {
        let r = connect_data::Repr {
            hostid: *b"\x6b\x1d\x22\x09\x4e\x21\x4c\x33\x9a\x0f\x51\x7e\x0c\x3d\x88\x12",
            cntlid,
            subsysnqn: Nqn::new("nqn.2026-01.io.ernic:nvme0").expect("an NQN"),
            hostnqn: Nqn::new(
                "nqn.2014-08.org.nvmexpress:uuid:6b1d2209-4e21-4c33-9a0f-517e0c3d8812",
            )
            .expect("an NQN"),
        };
        let mut b = [0u8; connect_data::LEN];
        r.emit(&mut connect_data::Packet::new_unchecked(&mut b[..]))
            .expect("1024 bytes");
        assert_eq!(
            connect_data::Repr::parse(&connect_data::Packet::new_unchecked(&b[..])),
            Ok(r)
        );
        b
    };
    let connect = |r: connect::Repr, cntlid: u16| {
        let mut b = vec![0u8; sqe::LEN];
        r.emit(&mut connect::Packet::new_unchecked(&mut b[..]))
            .expect("an SQE");
        assert_eq!(
            connect::Repr::parse(&connect::Packet::new_unchecked(&b[..])),
            Ok(r)
        );
        b.extend_from_slice(&data(cntlid));
        b
    };
    let admin = connect(
        connect::Repr {
            command_id: 0x1f,
            sgl: Descriptor::Keyed {
                addr: 0x7b2a_1000,
                len: connect_data::LEN as u32,
                key: 0x0000_1234,
                invalidate: false,
            },
            recfmt: 0,
            qid: 0,
            sqsize: 31,
            cattr: 0,
            kato: 5000,
        },
        connect::CNTLID_DYNAMIC,
    );
    write("nvme_capsule", "connect-admin", &admin);
    let io = connect(
        connect::Repr {
            command_id: 0x7f,
            sgl: Descriptor::DataBlock {
                addr: 0,
                len: connect_data::LEN as u32,
                offset: true,
            },
            recfmt: 0,
            qid: 1,
            sqsize: 127,
            cattr: 0,
            kato: 0,
        },
        1,
    );
    write("nvme_capsule", "connect-io", &io);

    let mut write_cmd = vec![0u8; sqe::LEN];
    let mut p = sqe::Packet::new_unchecked(&mut write_cmd[..]);
    p.set_opcode(u8::from(sqe::IoOpcode::Write));
    p.set_flags(sqe::FLAGS_SGL_METABUF);
    p.set_command_id(7);
    p.set_nsid(1);
    let mut dptr = [0u8; 16];
    Descriptor::DataBlock {
        addr: 0,
        len: 512,
        offset: true,
    }
    .emit(&mut ernic_nvmeof::wire::sgl::Packet::new_unchecked(
        &mut dptr[..],
    ))
    .expect("16 bytes");
    p.set_dptr(&dptr);
    p.set_cdw(10, 2048); // SLBA, low half
    p.set_cdw(12, 0); // one block (0's based)
    write_cmd.extend((0..512u32).map(|i| (i * 7) as u8));
    write("nvme_capsule", "write-inline", &write_cmd);

    for (name, r) in [
        (
            "property-get-cap",
            property::Repr::Get {
                command_id: 2,
                size: property::Size::Eight,
                offset: registers::REG_CAP,
            },
        ),
        (
            "property-set-cc",
            property::Repr::Set {
                command_id: 3,
                size: property::Size::Four,
                offset: registers::REG_CC,
                value: 0x0046_0001,
            },
        ),
    ] {
        let mut b = [0u8; property::LEN];
        r.emit(&mut property::Packet::new_unchecked(&mut b[..]))
            .expect("an SQE");
        assert_eq!(
            property::Repr::parse(&property::Packet::new_unchecked(&b[..])),
            Ok(r)
        );
        write("nvme_capsule", name, &b);
    }

    let done = cqe::Repr {
        result: u64::from(connect::success_result(1, 0)),
        sq_head: 1,
        sq_id: 0,
        command_id: 0x1f,
        status: Status::SUCCESS,
    };
    let mut b = [0u8; cqe::LEN];
    done.emit(&mut cqe::Packet::new_unchecked(&mut b[..]));
    write("nvme_capsule", "completion-connect", &b);
}

/// Tokens and replies as NooBaa and hipObject write them, and AWS's example
/// request bodies (the `ernic_s3` tests' sources).
/// `s3_sigv4`: AWS's GET Object example head (its time as the first eight
/// bytes), then an unsigned-trailer aws-chunked body.
fn s3_sigv4() {
    let mut b = 1_369_353_600u64.to_le_bytes().to_vec();
    b[5] = 0x0b; // a declared length of 11 << 40 >> 40 for the body below
    b.extend_from_slice(
        b"GET\n/test.txt\n\nhost: examplebucket.s3.amazonaws.com\nrange: bytes=0-9\n\
x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
x-amz-date: 20130524T000000Z\nauthorization: AWS4-HMAC-SHA256 \
Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41\n\n\
b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n",
    );
    write("s3_sigv4", "get-object-and-trailer-body", &b);
}

/// `s3_http`: a read size (the first byte), then a connection's bytes as
/// curl and the AWS SDKs send them: two pipelined keep-alive requests, a
/// chunked PUT with an extension and a trailer, and a PUT that asks for
/// `100 Continue`.
fn s3_http() {
    let seed = |name: &str, conn: &[u8]| {
        let mut b = vec![7u8];
        b.extend_from_slice(conn);
        write("s3_http", name, &b);
    };
    seed(
        "pipelined-keep-alive",
        b"GET /bucket/key HTTP/1.1\r\nHost: s3.local\r\nUser-Agent: curl/8.5.0\r\n\
Accept: */*\r\n\r\nPUT /bucket/k2 HTTP/1.1\r\nHost: s3.local\r\nContent-Length: 5\r\n\r\nhello",
    );
    seed(
        "chunked-trailer",
        b"PUT /bucket/key HTTP/1.1\r\nHost: s3.local\r\nTransfer-Encoding: chunked\r\n\r\n\
5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32: DUoRhQ==\r\n\r\n",
    );
    seed(
        "expect-continue",
        b"PUT /bucket/big HTTP/1.1\r\nHost: s3.local\r\nContent-Length: 11\r\n\
Expect: 100-continue\r\n\r\nhello world",
    );
}

/// `s3_service`: connections a client of the S3 API sends, against the
/// target's store (bucket `bkt` with `a/one` and `b`, an upload of `mp`).
fn s3_service() {
    let seeds: [(&str, &[u8]); 6] = [
        ("get-range-conditional", b"GET /bkt/b HTTP/1.1\r\nHost: h\r\nRange: bytes=10-99\r\nIf-None-Match: \"x\"\r\n\r\nHEAD /bkt/a/one HTTP/1.1\r\nHost: h\r\n\r\n"),
        ("list-v2-delimiter", b"GET /bkt?list-type=2&delimiter=%2F&max-keys=1&encoding-type=url HTTP/1.1\r\nHost: h\r\n\r\nGET /bkt?prefix=a&marker=a HTTP/1.1\r\nHost: h\r\n\r\n"),
        ("put-copy", b"PUT /bkt/new HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nx-amz-meta-k: v\r\nx-amz-checksum-crc32: NhCmhg==\r\n\r\nhelloPUT /bkt/c HTTP/1.1\r\nHost: h\r\nx-amz-copy-source: /bkt/b\r\nContent-Length: 0\r\n\r\n"),
        ("multi-delete", b"POST /bkt?delete HTTP/1.1\r\nHost: h\r\nContent-Length: 79\r\n\r\n<Delete><Object><Key>b</Key></Object><Object><Key>nope</Key></Object></Delete>"),
        ("aws-chunked", b"PUT /bkt/ch HTTP/1.1\r\nHost: h\r\nx-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\nx-amz-decoded-content-length: 5\r\nx-amz-trailer: x-amz-checksum-crc32\r\nContent-Length: 47\r\n\r\n5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"),
        ("multipart", b"GET /bkt?uploads HTTP/1.1\r\nHost: h\r\n\r\nPOST /bkt/mp2?uploads HTTP/1.1\r\nHost: bkt.localhost\r\n\r\nPOST /bkt/mp?uploadId=x HTTP/1.1\r\nHost: h\r\nContent-Length: 94\r\n\r\n<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"e\"</ETag></Part></CompleteMultipartUpload>"),
    ];
    for (name, b) in seeds {
        write("s3_service", name, b);
    }
}

/// `s3_guest_client`: a selector byte, then a guest's ARP request for the
/// store, a response head a store sends, and an option string.
fn s3_guest_client() {
    let mut arp = vec![0u8];
    arp.extend_from_slice(&[0xff; 6]);
    arp.extend_from_slice(&[0x02, 0, 0x45, 0x52, 0x4e, 0x01, 0x08, 0x06]);
    arp.extend_from_slice(&[
        0, 1, 8, 0, 6, 4, 0, 1, 0x02, 0, 0x45, 0x52, 0x4e, 0x01, 192, 0, 2, 2,
    ]);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&[192, 0, 2, 20]);
    write("s3_guest_client", "arp-request", &arp);
    let mut head = vec![1u8];
    head.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nETag: \"x\"\r\nx-amz-rdma-reply: 200\r\nContent-Length: 0\r\n\r\n");
    write("s3_guest_client", "reply-head", &head);
    let mut opts = vec![2u8];
    opts.extend_from_slice(b"dir=/var/tmp/s3,size=1G,access-key=AK,secret-key=SK,addr=192.0.2.20,mac=02:00:c0:00:02:14,port=80,lanes=2");
    write("s3_guest_client", "options", &opts);
}

fn s3_token_xml() {
    use ernic_s3::token::{Format, RdmaReply, RdmaToken, Transport};
    use ernic_s3::xml::{CompleteMultipartUpload, Delete};
    // noobaa-core src/util/rdma_utils.js's CUOBJ_TOKEN_FMT.
    let cuobj = "0102030405060708:01020304:01020304:0102:010203:1:0102030405060708090a0b0c0d0e0f10";
    RdmaToken::parse(cuobj).expect("NooBaa's example parses");
    write("s3_token_xml", "token-cuobject", cuobj.as_bytes());
    let hip = RdmaToken {
        format: Format::HipObject,
        transport: Transport::Rc,
        addr: 0x7f00_1122_3344_5000,
        len: 0x10_0000,
        rkey: 0xdead_beef,
        qpn: 0x12_3456,
        lid: 0x0203,
        gid: Some([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7]),
        port: Some(1),
    };
    let text = hip.emit().expect("a hipObject token emits");
    write("s3_token_xml", "token-hipobject", text.as_bytes());
    let reply = RdmaReply::Handshake(hip).emit().expect("a handshake emits");
    write("s3_token_xml", "reply-handshake", reply.as_bytes());
    write("s3_token_xml", "reply-501", b"501");
    let complete = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n\
  <Part><PartNumber>1</PartNumber><ETag>&quot;a54357aff0632cce46d942af68356b38&quot;</ETag></Part>\n\
  <Part><PartNumber>2</PartNumber><ETag>\"0c78aef83f66abc1fa1e8477f296d394\"</ETag>\
<ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>\n\
</CompleteMultipartUpload>";
    CompleteMultipartUpload::parse(complete).expect("the example reads");
    write(
        "s3_token_xml",
        "complete-multipart-upload",
        complete.as_bytes(),
    );
    let delete = "<Delete>\n\
  <Object><Key>sample1.txt</Key></Object>\n\
  <Object><Key>a&amp;b&#x1F600;&lt;</Key><VersionId>OYcLXagmS.WaD..oyH4KRguB95_YhLs7</VersionId></Object>\n\
  <Quiet>true</Quiet>\n\
</Delete>";
    Delete::parse(delete).expect("the example reads");
    write("s3_token_xml", "delete", delete.as_bytes());
}

fn main() {
    cm_mad();
    nvme_capsule();
    s3_sigv4();
    s3_http();
    s3_service();
    s3_guest_client();
    s3_token_xml();
    perf_wire();
    vfio_proto();
    ionic_profile();
    core_wire();
    mesh_frame();
    structured(
        "ionic_device",
        ionic_device::seeds(),
        ionic_device::Op::emit,
        ionic_device::run,
    );
    structured(
        "ionic_rdma",
        ionic_rdma::seeds(),
        ionic_rdma::Op::emit,
        ionic_rdma::run,
    );
    structured(
        "core_engine",
        core_engine::seeds(),
        core_engine::Op::emit,
        core_engine::run,
    );
    structured(
        "net_control",
        net_control::seeds(),
        net_control::Op::emit,
        net_control::run,
    );
    structured(
        "mesh_handshake",
        mesh_handshake::seeds(),
        mesh_handshake::Op::emit,
        mesh_handshake::run,
    );
    mesh_handshake_outcomes();
    structured(
        "plugin_handle",
        plugin_handle::seeds(),
        plugin_handle::Op::emit,
        plugin_handle::run,
    );
    structured(
        "vfio_server",
        vfio_server::seeds(),
        vfio_server::Op::emit,
        vfio_server::run,
    );
    structured("cm_conn", cm_conn::seeds(), cm_conn::Op::emit, cm_conn::run);
    structured(
        "nvme_controller",
        nvme_controller::seeds(),
        nvme_controller::Op::emit,
        nvme_controller::run,
    );
    println!("corpus written under {}/corpus", env!("CARGO_MANIFEST_DIR"));
}
