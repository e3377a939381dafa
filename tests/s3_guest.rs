//! The S3 store of `ernic-server --backend s3` as a guest reaches it,
//! with ernic's own userspace ionic driver playing the guest: its
//! Ethernet TX and RX queues carry a smoltcp interface's frames (ARP,
//! then HTTP/1.1 over TCP to the store at 192.0.2.20:80), and its verbs
//! provider registers the memory an `x-amz-rdma-token` names, which the
//! store's RDMA data plane then reads (PUT) and writes (GET) through the
//! emulated NIC. Everything waits with a deadline; the server is killed
//! and its directory removed at the end, however the test ends.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant as StdInstant};

use ernic_ionic_driver::provider::{self, DriverHandle};
use ernic_ionic_driver::{Driver, FRAME_BUF};
use ernic_s3::store::hex;
use ernic_s3::token::{Format, RdmaToken, Transport};
use ernic_verbs::{Access, Gid, Mr, QpCaps, QpType, Qpn};
use md5::{Digest, Md5};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, HardwareAddress, IpCidr,
};

const STORE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 20);
const STORE_MAC: [u8; 6] = [0x02, 0, 0xc0, 0, 0x02, 0x14];
const GUEST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const GUEST_MAC: [u8; 6] = [0x02, 0, 0xc0, 0, 0x02, 0x02];
/// How long any one step (a frame, a response) may take.
const STEP: Duration = Duration::from_secs(15);
/// The region the token names.
const MR_LEN: usize = 1 << 20;

/// `ernic-server` and its directory, killed and removed when dropped.
struct Server {
    child: Child,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            eprintln!("--- ernic-server's log ---\n{log}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    /// `ernic-server --backend s3` on a socket in a fresh directory, with
    /// the guest's GID given; waits for its socket.
    fn start() -> Server {
        let dir = std::env::temp_dir().join(format!("ernic-s3-guest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        let sock = dir.join("s.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_ernic-server"))
            .args(["--socket", sock.to_str().unwrap()])
            .args(["--backend", "s3:addr=192.0.2.20,size=64M,anonymous"])
            .args(["--stats-file", dir.join("stats.json").to_str().unwrap()])
            .env("ERNIC_TCP_GUEST_GIDS", "::ffff:192.0.2.2")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let s = Server { child, dir };
        let end = StdInstant::now() + Duration::from_secs(10);
        while !s.socket().exists() {
            assert!(StdInstant::now() < end, "ernic-server made no socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("s.sock")
    }

    /// Stops the server by SIGTERM (it writes its stats file last) and
    /// answers the file.
    fn stop(&mut self) -> ernic_ops::StatsDoc {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill")
            .args(["-s", "TERM", &pid])
            .status()
            .unwrap();
        assert!(ok.success());
        let end = StdInstant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                StdInstant::now() < end,
                "ernic-server did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        ernic_ops::read_stats(&self.dir.join("stats.json")).unwrap()
    }
}

/// The driver attached, its RDMA GID the guest's, its Ethernet queues up.
fn attach(sock: &Path) -> (ernic_verbs::Device, DriverHandle) {
    let mut d = Driver::attach(sock, 16 << 20).expect("attaching the driver");
    d.set_gid(Gid::from_ipv4(GUEST)).unwrap();
    d.eth_up().expect("bringing the Ethernet queues up");
    provider::device(d, sock)
}

/// The next frame the guest receives, waited for.
fn next_frame(h: &DriverHandle) -> Vec<u8> {
    let mut buf = vec![0u8; FRAME_BUF];
    let end = StdInstant::now() + STEP;
    loop {
        if let Some(n) = h.recv_frame(&mut buf).unwrap() {
            buf.truncate(n);
            return buf;
        }
        assert!(StdInstant::now() < end, "no frame came to the guest");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// ARP for the store, by hand through the TX queue; the reply through
/// the RX queue names its MAC.
fn resolve(h: &DriverHandle) -> [u8; 6] {
    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(GUEST_MAC),
        source_protocol_addr: GUEST,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: STORE,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(GUEST_MAC),
        dst_addr: EthernetAddress::BROADCAST,
        ethertype: EthernetProtocol::Arp,
    };
    let mut f = vec![0; eth.buffer_len() + arp.buffer_len()];
    let mut frame = EthernetFrame::new_unchecked(&mut f[..]);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    h.send_frame(&f).unwrap();
    let end = StdInstant::now() + STEP;
    loop {
        assert!(StdInstant::now() < end, "no ARP reply from the store");
        let f = next_frame(h);
        let Ok(eth) = EthernetFrame::new_checked(&f[..]) else {
            continue;
        };
        if eth.ethertype() != EthernetProtocol::Arp {
            continue;
        }
        let Ok(arp) = ArpPacket::new_checked(eth.payload()).and_then(|p| ArpRepr::parse(&p)) else {
            continue;
        };
        if let ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Reply,
            source_hardware_addr,
            source_protocol_addr,
            target_protocol_addr,
            ..
        } = arp
        {
            assert_eq!((source_protocol_addr, target_protocol_addr), (STORE, GUEST));
            assert_eq!(eth.dst_addr(), EthernetAddress(GUEST_MAC));
            return source_hardware_addr.0;
        }
    }
}

/// The guest's wire: frames through the driver's Ethernet queues.
struct Wire {
    h: DriverHandle,
    buf: Vec<u8>,
}

struct Rx(Vec<u8>);
impl phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

struct Tx<'a>(&'a DriverHandle);
impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        self.0.send_frame(&frame).expect("sending a frame");
        r
    }
}

impl phy::Device for Wire {
    type RxToken<'a>
        = Rx
    where
        Self: 'a;
    type TxToken<'a>
        = Tx<'a>
    where
        Self: 'a;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let n = self
            .h
            .recv_frame(&mut self.buf)
            .expect("receiving a frame")?;
        Some((Rx(self.buf[..n].to_vec()), Tx(&self.h)))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx(&self.h))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

/// A response: status, header block, body.
struct Response {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn text(&self) -> String {
        format!("{}{}", self.head, String::from_utf8_lossy(&self.body))
    }
}

/// An HTTP/1.1 client on the guest's smoltcp stack.
struct Client {
    wire: Wire,
    iface: Interface,
    sockets: SocketSet<'static>,
    tcp: SocketHandle,
    inbuf: Vec<u8>,
}

impl Client {
    fn connect(h: DriverHandle) -> Client {
        let mut wire = Wire {
            h,
            buf: vec![0; FRAME_BUF],
        };
        let cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(GUEST_MAC)));
        let mut iface = Interface::new(cfg, &mut wire, Instant::now());
        iface.update_ip_addrs(|a| a.push(IpCidr::new(GUEST.into(), 24)).unwrap());
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 256 << 10]),
            tcp::SocketBuffer::new(vec![0; 256 << 10]),
        );
        s.set_ack_delay(None);
        s.connect(iface.context(), (STORE, 80), 49152).unwrap();
        let mut sockets = SocketSet::new(Vec::new());
        let tcp = sockets.add(s);
        let mut c = Client {
            wire,
            iface,
            sockets,
            tcp,
            inbuf: Vec::new(),
        };
        let end = StdInstant::now() + STEP;
        loop {
            c.poll();
            if c.sockets.get_mut::<tcp::Socket>(c.tcp).state() == tcp::State::Established {
                return c;
            }
            assert!(StdInstant::now() < end, "no TCP connection to the store");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn poll(&mut self) {
        self.iface
            .poll(Instant::now(), &mut self.wire, &mut self.sockets);
    }

    /// Sends `head` (the request line and headers, without the blank
    /// line) with `body`, and reads the response.
    fn request(&mut self, head: &str, body: &[u8]) -> Response {
        let mut req = format!(
            "{head}\r\nHost: 192.0.2.20\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        let mut at = 0;
        let end = StdInstant::now() + STEP;
        let mut head_end = None;
        loop {
            self.poll();
            let s = self.sockets.get_mut::<tcp::Socket>(self.tcp);
            if at < req.len() && s.can_send() {
                at += s.send_slice(&req[at..]).unwrap();
            }
            while s.can_recv() {
                s.recv(|d| {
                    self.inbuf.extend_from_slice(d);
                    (d.len(), ())
                })
                .unwrap();
            }
            if head_end.is_none() {
                head_end = self
                    .inbuf
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .map(|p| p + 4);
            }
            if let Some(h) = head_end {
                let head = String::from_utf8_lossy(&self.inbuf[..h]).to_string();
                let status: u16 = head
                    .get(9..12)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("a bad status line: {head:?}"));
                let r = Response {
                    status,
                    head,
                    body: Vec::new(),
                };
                let len: usize = r
                    .header("content-length")
                    .map_or(0, |v| v.parse().expect("a Content-Length"));
                if self.inbuf.len() >= h + len {
                    let body = self.inbuf[h..h + len].to_vec();
                    self.inbuf.drain(..h + len);
                    assert_eq!(at, req.len(), "answered before the request was sent");
                    return Response { body, ..r };
                }
            }
            assert!(StdInstant::now() < end, "no response to {head:?}");
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

/// A cuObject token naming `len` bytes at `addr` under `rkey`, for the
/// guest's QP `qpn`.
fn token(addr: u64, len: u64, rkey: u32, qpn: u32) -> String {
    RdmaToken {
        format: Format::CuObject,
        transport: Transport::Dc,
        addr,
        len,
        rkey,
        qpn,
        lid: 0,
        gid: Some(Gid::from_ipv4(GUEST).0),
        port: None,
    }
    .emit()
    .unwrap()
}

fn mr_bytes(mr: &Mr) -> Vec<u8> {
    let mut v = vec![0u8; mr.len()];
    mr.read(0, &mut v).unwrap();
    v
}

#[test]
fn a_guest_reaches_the_store_over_its_ethernet_queues_and_rdma() {
    let started = StdInstant::now();
    let server = Server::start();
    let (dev, h) = attach(&server.socket());

    // ARP through the device's queues: the store answers with its MAC.
    assert_eq!(resolve(&h), STORE_MAC);

    // HTTP over the guest's TCP.
    let mut c = Client::connect(h.clone());
    let r = c.request("PUT /gbkt HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let body: Vec<u8> = (0..256u32 << 10).map(|i| (i * 7 % 251) as u8).collect();
    let r = c.request("PUT /gbkt/obj HTTP/1.1", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let etag = r.header("etag").expect("an ETag").trim_matches('"');
    assert_eq!(etag, hex(&Md5::digest(&body)), "the ETag is the MD5");
    let r = c.request("GET /gbkt/obj HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.head);
    assert_eq!(r.body.len(), body.len());
    assert!(r.body == body, "the object came back different");

    // The token path: a region of the guest's, its QP, and the store's
    // RDMA READ (PUT) and WRITE (GET) through the emulated NIC.
    let pd = dev.alloc_pd().unwrap();
    let mr = pd
        .reg_mr(
            MR_LEN,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ,
        )
        .unwrap();
    let cq = dev.create_cq(16).unwrap();
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq, QpCaps::default())
        .unwrap();
    // The remote rights are the QP's as much as the region's (verbs'
    // qp_access_flags, granted at INIT): without them the store's READ is
    // refused. The device runs a QP in any state, so the dest given here
    // (the store's first QP, as a guess) does not steer the responses.
    qp.connect(
        Gid::from_ipv4(STORE),
        Qpn(0xc0_0001),
        Access::REMOTE_WRITE | Access::REMOTE_READ,
    )
    .unwrap();
    let pattern: Vec<u8> = (0..MR_LEN as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    mr.write(0, &pattern).unwrap();
    let (addr, rkey, qpn) = (mr.addr(), mr.rkey().0, qp.qpn().0);
    let t = token(addr, MR_LEN as u64, rkey, qpn);

    let r = c.request(
        &format!("PUT /gbkt/rd HTTP/1.1\r\nx-amz-rdma-token: {t}"),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-rdma-reply"), Some("200"), "{}", r.text());
    let moved = MR_LEN.to_string();
    assert_eq!(r.header("x-amz-rdma-bytes-transferred"), Some(&moved[..]));
    let r = c.request("GET /gbkt/rd HTTP/1.1", b"");
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(
        r.body == pattern,
        "the store holds other bytes than the region's"
    );

    mr.write(0, &vec![0u8; MR_LEN]).unwrap();
    let r = c.request(
        &format!("GET /gbkt/rd HTTP/1.1\r\nx-amz-rdma-token: {t}"),
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("x-amz-rdma-reply"), Some("200"), "{}", r.text());
    assert_eq!(r.header("x-amz-rdma-bytes-transferred"), Some(&moved[..]));
    assert_eq!(r.header("content-length"), Some("0"));
    assert!(mr_bytes(&mr) == pattern, "the region holds other bytes");

    // Bad tokens: key 0, and a range that runs past the region.
    for (what, t) in [
        ("rkey 0", token(addr, MR_LEN as u64, 0, qpn)),
        (
            "a range past the region",
            token(addr + 4096, MR_LEN as u64, rkey, qpn),
        ),
    ] {
        let r = c.request(
            &format!("PUT /gbkt/bad HTTP/1.1\r\nx-amz-rdma-token: {t}"),
            b"",
        );
        assert_eq!(r.status, 400, "{what}: {}", r.text());
        assert!(
            String::from_utf8_lossy(&r.body).contains("InvalidRDMAToken"),
            "{what}: {}",
            r.text()
        );
    }
    let r = c.request("GET /gbkt/bad HTTP/1.1", b"");
    assert_eq!(r.status, 404, "nothing was stored: {}", r.text());

    drop(qp);
    drop(mr);
    drop(c);
    // The store's stack on the guest's segment, in the file: the one TCP
    // connection, frames both ways, none dropped or refused.
    let mut server = server;
    let doc = server.stop();
    let guest = |name: &str| doc.counter("s3_guest", &[], name);
    assert_eq!(guest("connections"), Some(1));
    assert_eq!(guest("connections_refused"), Some(0));
    assert_eq!(guest("frames_dropped_from_guest"), Some(0));
    assert_eq!(guest("frames_dropped_to_guest"), Some(0));
    assert!(guest("frames_claimed").unwrap() > 0);
    assert!(guest("frames_delivered").unwrap() > 0);
    drop(dev);
    drop(h);
    drop(server);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}
