//! The token path end to end on one process's loopback fabric: the store's
//! data plane is a device of its own, the client another, and objects move
//! by RDMA WRITE (GET) and READ (PUT) between the store and the client's
//! registered buffer. Tokens that name memory the client did not register
//! for that use, or key 0, get `InvalidRDMAToken` and move nothing.

mod common;

use std::net::Ipv4Addr;
use std::sync::Arc;

use common::{Running, client, pattern, req, start};
use ernic_s3::client::Client as Http;
use ernic_s3::rdma::{RdmaConfig, RdmaDataPlane};
use ernic_s3::token::{Format, RdmaToken, Transport};
use ernic_verbs::{Access, Cq, Device, Fabric, Gid, Mr, Pd, Qp, QpCaps, QpType, Qpn};
use md5::{Digest, Md5};

struct Client {
    _dev: Device,
    pd: Pd,
    _cq: Cq,
    qp: Qp,
}

fn rw() -> Access {
    Access(Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0)
}

fn setup() -> (Fabric, Running, Client) {
    let fabric = Fabric::new();
    let store = fabric
        .open_device(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 20)))
        .unwrap();
    let dp = RdmaDataPlane::new(store, RdmaConfig::default()).unwrap();
    let running = start(true, Some(Arc::new(dp)));
    let dev = fabric
        .open_device(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 200)))
        .unwrap();
    let pd = dev.alloc_pd().unwrap();
    let cq = dev.create_cq(16).unwrap();
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq, QpCaps::default())
        .unwrap();
    (
        fabric,
        running,
        Client {
            _dev: dev,
            pd,
            _cq: cq,
            qp,
        },
    )
}

/// hipObject's RC handshake: a HEAD with an RC token answers the store's
/// QP, and the client connects its own to it.
fn handshake(h: &mut Http, c: &Client) {
    let mr = c.pd.reg_mr(4096, rw()).unwrap();
    let t = token(c, &mr, 0, 4096, Format::HipObject);
    let r = req(
        h,
        "HEAD",
        "/rdm/handshake",
        "",
        &[("x-amz-rdma-token", &t)],
        b"",
    );
    let reply = r.header("x-amz-rdma-reply").expect("a handshake reply");
    let server = RdmaToken::parse(reply.strip_prefix("200:").expect("200:<token>")).unwrap();
    assert_eq!(
        server.gid,
        Some(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 20)).0)
    );
    c.qp.connect(Gid(server.gid.unwrap()), Qpn(server.qpn), rw())
        .unwrap();
}

fn token(c: &Client, mr: &Mr, off: u64, len: u64, format: Format) -> String {
    RdmaToken {
        format,
        transport: if format == Format::HipObject {
            Transport::Rc
        } else {
            Transport::Dc
        },
        addr: mr.addr() + off,
        len,
        rkey: mr.rkey().0,
        qpn: c.qp.qpn().0,
        lid: 0,
        gid: Some(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 200)).0),
        port: (format == Format::HipObject).then_some(1),
    }
    .emit()
    .unwrap()
}

#[test]
fn put_and_get_by_token_in_both_formats() {
    let (_f, s, c) = setup();
    let mut h = client(&s, true);
    req(&mut h, "PUT", "/rdm", "", &[], b"");
    handshake(&mut h, &c);
    let data = pattern(9 << 20, 5);
    let mr = c.pd.reg_mr(data.len(), rw()).unwrap();
    mr.write(0, &data).unwrap();
    for format in [Format::CuObject, Format::HipObject] {
        let t = token(&c, &mr, 0, data.len() as u64, format);
        let put = req(
            &mut h,
            "PUT",
            "/rdm/obj",
            "",
            &[("x-amz-rdma-token", &t)],
            b"",
        );
        assert_eq!(put.status, 200, "{}", put.text());
        let reply = put.header("x-amz-rdma-reply").unwrap();
        match format {
            Format::CuObject => assert_eq!(reply, "200"),
            // hipObject's RC handshake: 200:<the store's token>.
            Format::HipObject => {
                let server =
                    RdmaToken::parse(reply.strip_prefix("200:").expect("a handshake")).unwrap();
                assert_eq!(
                    server.gid,
                    Some(Gid::from_ipv4(Ipv4Addr::new(192, 0, 2, 20)).0)
                );
            }
        }
        assert_eq!(put.header("x-amz-rdma-bytes-transferred"), Some("9437184"));
        let md5: String = Md5::digest(&data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(put.header("etag"), Some(format!("\"{md5}\"").as_str()));
        assert!(
            req(&mut h, "GET", "/rdm/obj", "", &[], b"").body == data,
            "PUT by token stored the buffer"
        );
    }
    // GET by token into a zeroed buffer.
    let back = c.pd.reg_mr(data.len(), rw()).unwrap();
    let t = token(&c, &back, 0, data.len() as u64, Format::CuObject);
    let g = req(
        &mut h,
        "GET",
        "/rdm/obj",
        "",
        &[("x-amz-rdma-token", &t)],
        b"",
    );
    assert_eq!(g.status, 200);
    assert_eq!(
        (g.header("x-amz-rdma-reply"), g.header("content-length")),
        (Some("200"), Some("0"))
    );
    assert_eq!(g.header("x-amz-rdma-bytes-transferred"), Some("9437184"));
    let mut got = vec![0u8; data.len()];
    back.read(0, &mut got).unwrap();
    assert!(got == data, "GET by token wrote the object into the buffer");
    // A ranged GET lands at the start of the buffer, and replies 206.
    let small = c.pd.reg_mr(4096, rw()).unwrap();
    let t = token(&c, &small, 0, 4096, Format::CuObject);
    let g = req(
        &mut h,
        "GET",
        "/rdm/obj",
        "",
        &[("x-amz-rdma-token", &t), ("range", "bytes=1000-1999")],
        b"",
    );
    assert_eq!((g.status, g.header("x-amz-rdma-reply")), (206, Some("206")));
    let mut got = vec![0u8; 1000];
    small.read(0, &mut got).unwrap();
    assert_eq!(got, &data[1000..2000]);
    // An object larger than the buffer is declined: 501, and the body carries it.
    let g = req(
        &mut h,
        "GET",
        "/rdm/obj",
        "",
        &[("x-amz-rdma-token", &t)],
        b"",
    );
    assert_eq!((g.status, g.header("x-amz-rdma-reply")), (200, Some("501")));
    assert!(g.body == data);
}

#[test]
fn tokens_for_memory_the_client_does_not_own_are_refused() {
    let (_f, s, c) = setup();
    let mut h = client(&s, true);
    req(&mut h, "PUT", "/rdm", "", &[], b"");
    handshake(&mut h, &c);
    req(&mut h, "PUT", "/rdm/obj", "", &[], &pattern(8192, 1));
    let check = |h: &mut _, method: &str, t: &str| {
        let r = req(h, method, "/rdm/obj", "", &[("x-amz-rdma-token", t)], b"");
        assert_eq!(
            (r.status, r.code().as_deref()),
            (400, Some("InvalidRDMAToken")),
            "{method} {t}: {}",
            r.text()
        );
    };
    // Read-only memory named for a GET (which would write it).
    let ro =
        c.pd.reg_mr(8192, Access(Access::LOCAL_WRITE.0 | Access::REMOTE_READ.0))
            .unwrap();
    check(&mut h, "GET", &token(&c, &ro, 0, 8192, Format::CuObject));
    let mut untouched = vec![1u8; 8192];
    ro.read(0, &mut untouched).unwrap();
    assert!(
        untouched.iter().all(|&b| b == 0),
        "a refused GET wrote nothing"
    );
    // Write-only memory named for a PUT (which would read it).
    let wo =
        c.pd.reg_mr(8192, Access(Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0))
            .unwrap();
    check(&mut h, "PUT", &token(&c, &wo, 0, 8192, Format::CuObject));
    // A range past the end of the region.
    let mr = c.pd.reg_mr(8192, rw()).unwrap();
    check(&mut h, "GET", &token(&c, &mr, 4096, 8192, Format::CuObject));
    // A region of another protection domain than the client's QP.
    let other_pd = c._dev.alloc_pd().unwrap();
    let foreign = other_pd.reg_mr(8192, rw()).unwrap();
    check(
        &mut h,
        "GET",
        &token(&c, &foreign, 0, 8192, Format::CuObject),
    );
    // Key 0, and tokens that do not parse.
    let mut zero = RdmaToken::parse(&token(&c, &mr, 0, 8192, Format::CuObject)).unwrap();
    zero.rkey = 0;
    check(&mut h, "GET", &zero.emit().unwrap());
    check(&mut h, "GET", "not-a-token");
    check(
        &mut h,
        "PUT",
        "0000000000001000:00000000:00000001:0000:000001:0:00000000000000000000000000000000",
    );
    // None of it changed the object.
    assert!(req(&mut h, "GET", "/rdm/obj", "", &[], b"").body == pattern(8192, 1));
}

#[test]
fn a_store_without_a_data_plane_declines() {
    let s = start(false, None);
    let mut h = client(&s, false);
    req(&mut h, "PUT", "/nod", "", &[], b"");
    req(&mut h, "PUT", "/nod/k", "", &[], b"payload");
    let t = "0000000000001000:00000100:00000001:0000:000001:1:00000000000000000000ffffc00002c8";
    let g = req(&mut h, "GET", "/nod/k", "", &[("x-amz-rdma-token", t)], b"");
    assert_eq!(
        (g.status, g.header("x-amz-rdma-reply"), g.body.as_slice()),
        (200, Some("501"), &b"payload"[..])
    );
    let p = req(
        &mut h,
        "PUT",
        "/nod/k2",
        "",
        &[("x-amz-rdma-token", t)],
        b"",
    );
    assert_eq!(
        (p.status, p.header("x-amz-rdma-reply"), p.code().as_deref()),
        (200, Some("501"), Some("RDMANotSupported"))
    );
    assert_eq!(
        req(&mut h, "GET", "/nod/k2", "", &[], b"").status,
        404,
        "a declined PUT stores nothing"
    );
}

#[test]
fn a_client_that_skipped_the_handshake_is_declined_not_failed() {
    let (_f, s, c) = setup();
    let mut h = client(&s, true);
    req(&mut h, "PUT", "/rdm", "", &[], b"");
    req(&mut h, "PUT", "/rdm/obj", "", &[], b"by the body");
    let mr = c.pd.reg_mr(4096, rw()).unwrap();
    let t = token(&c, &mr, 0, 4096, Format::CuObject);
    // The client's QP answers only the QP it is connected to (none).
    let g = req(
        &mut h,
        "GET",
        "/rdm/obj",
        "",
        &[("x-amz-rdma-token", &t)],
        b"",
    );
    assert_eq!(
        (g.status, g.header("x-amz-rdma-reply"), g.body.as_slice()),
        (200, Some("501"), &b"by the body"[..])
    );
    let p = req(
        &mut h,
        "PUT",
        "/rdm/new",
        "",
        &[("x-amz-rdma-token", &t)],
        b"",
    );
    assert_eq!((p.status, p.header("x-amz-rdma-reply")), (200, Some("501")));
    assert_eq!(req(&mut h, "GET", "/rdm/new", "", &[], b"").status, 404);
    // After the handshake the same token moves the bytes.
    handshake(&mut h, &c);
    let g = req(
        &mut h,
        "GET",
        "/rdm/obj",
        "",
        &[("x-amz-rdma-token", &t)],
        b"",
    );
    assert_eq!(g.header("x-amz-rdma-reply"), Some("200"), "{}", g.text());
    let mut got = vec![0u8; 11];
    mr.read(0, &mut got).unwrap();
    assert_eq!(got, b"by the body");
}
