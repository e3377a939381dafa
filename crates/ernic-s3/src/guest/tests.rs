//! The stack played against by a guest without a VM: a second smoltcp
//! interface (or frames built by hand with `smoltcp::wire`) whose frames
//! go through the endpoint exactly as the device hands them over.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use ernic_ionic::tap::FrameEndpoint;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{self, ChecksumCapabilities, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, HardwareAddress, Icmpv4Packet, Icmpv4Repr, IpCidr, IpProtocol, Ipv4Packet,
    Ipv4Repr,
};

use super::*;
use crate::service::{Config as S3Config, S3Service};
use crate::store::memory::MemoryStore;

const STORE: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 20);
const STORE_MAC: [u8; 6] = [0x02, 0, 0xc0, 0, 0x02, 0x14];
const GUEST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const GUEST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const DEADLINE: Duration = Duration::from_secs(20);

fn start() -> (GuestStack, GuestEndpoint) {
    let store = Arc::new(MemoryStore::new(64 << 20));
    let service = S3Service::new(store, S3Config::default(), None).unwrap();
    GuestStack::start(GuestConfig::new(STORE, STORE_MAC, 80), Arc::new(service)).unwrap()
}

/// Waits for the next frame the stack sends the guest.
fn next_frame(ep: &mut GuestEndpoint) -> Vec<u8> {
    let t = StdInstant::now();
    loop {
        if let Some(f) = ep.peek_rx() {
            let f = f.to_vec();
            ep.pop_rx();
            return f;
        }
        assert!(t.elapsed() < DEADLINE, "no frame from the stack");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn arp_request(target: Ipv4Addr) -> Vec<u8> {
    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(GUEST_MAC),
        source_protocol_addr: GUEST,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: target,
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
    f
}

fn echo_request(dst: Ipv4Addr, data: &[u8]) -> Vec<u8> {
    let icmp = Icmpv4Repr::EchoRequest {
        ident: 0x1234,
        seq_no: 7,
        data,
    };
    let ip = Ipv4Repr {
        src_addr: GUEST,
        dst_addr: dst,
        next_header: IpProtocol::Icmp,
        payload_len: icmp.buffer_len(),
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(GUEST_MAC),
        dst_addr: EthernetAddress(STORE_MAC),
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut f = vec![0; eth.buffer_len() + ip.buffer_len() + icmp.buffer_len()];
    let caps = ChecksumCapabilities::default();
    let mut frame = EthernetFrame::new_unchecked(&mut f[..]);
    eth.emit(&mut frame);
    let mut pkt = Ipv4Packet::new_unchecked(frame.payload_mut());
    ip.emit(&mut pkt, &caps);
    icmp.emit(&mut Icmpv4Packet::new_unchecked(pkt.payload_mut()), &caps);
    f
}

/// The store's MAC, learned by ARP as a guest would.
fn resolve(ep: &mut GuestEndpoint) -> [u8; 6] {
    assert!(ep.claim_tx(&arp_request(STORE)));
    let f = next_frame(ep);
    let eth = EthernetFrame::new_checked(&f[..]).unwrap();
    assert_eq!(eth.ethertype(), EthernetProtocol::Arp);
    assert_eq!(eth.dst_addr(), EthernetAddress(GUEST_MAC));
    let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
    match arp {
        ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr,
            source_protocol_addr,
            target_protocol_addr,
            ..
        } => {
            assert_eq!(operation, ArpOperation::Reply);
            assert_eq!(source_protocol_addr, STORE);
            assert_eq!(target_protocol_addr, GUEST);
            source_hardware_addr.0
        }
        other => panic!("not an Ethernet/IPv4 ARP reply: {other:?}"),
    }
}

#[test]
fn frames_for_other_hosts_are_not_claimed() {
    let (_stack, mut ep) = start();
    let other = Ipv4Addr::new(192, 0, 2, 99);
    assert!(!ep.claim_tx(&arp_request(other)));
    assert!(!ep.claim_tx(&echo_request(other, b"x")));
    assert!(claims(&arp_request(STORE), STORE));
    assert!(claims(&echo_request(STORE, b"x"), STORE));
    // An IPv6 frame, whatever its bytes, is not the store's.
    let mut v6 = echo_request(STORE, b"x");
    v6[12..14].copy_from_slice(&[0x86, 0xdd]);
    assert!(!ep.claim_tx(&v6));
}

#[test]
fn arp_is_answered_with_the_stores_mac() {
    let (stack, mut ep) = start();
    assert_eq!(resolve(&mut ep), STORE_MAC);
    let s = stack.stats();
    assert_eq!(s.claimed, 1);
    assert!(s.sent >= 1 && s.delivered >= 1);
}

#[test]
fn ping_is_answered() {
    let (_stack, mut ep) = start();
    resolve(&mut ep);
    let data = b"ernic ping payload 0123456789";
    assert!(ep.claim_tx(&echo_request(STORE, data)));
    let f = next_frame(&mut ep);
    let eth = EthernetFrame::new_checked(&f[..]).unwrap();
    assert_eq!(eth.src_addr(), EthernetAddress(STORE_MAC));
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    let caps = ChecksumCapabilities::default();
    let ipr = Ipv4Repr::parse(&ip, &caps).unwrap();
    assert_eq!((ipr.src_addr, ipr.dst_addr), (STORE, GUEST));
    let icmp = Icmpv4Packet::new_checked(ip.payload()).unwrap();
    match Icmpv4Repr::parse(&icmp, &caps).unwrap() {
        Icmpv4Repr::EchoReply {
            ident,
            seq_no,
            data: d,
        } => {
            assert_eq!((ident, seq_no), (0x1234, 7));
            assert_eq!(d, data);
        }
        other => panic!("not an echo reply: {other:?}"),
    }
}

#[test]
fn garbage_does_not_panic_and_the_stack_goes_on() {
    let (stack, mut ep) = start();
    // A fixed LCG: the same bytes every run.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut byte = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 56) as u8
    };
    for len in 0..200 {
        let f: Vec<u8> = (0..len * 7 % 1600).map(|_| byte()).collect();
        let _ = ep.claim_tx(&f);
    }
    // Truncated ARP and IPv4 headers are not the store's.
    let arp = arp_request(STORE);
    for n in 0..arp.len() - 1 {
        let _ = ep.claim_tx(&arp[..n]);
    }
    assert!(!ep.claim_tx(&arp[..14 + 27]));
    let ping = echo_request(STORE, b"x");
    assert!(!ep.claim_tx(&ping[..14 + 19]));
    // Claimed but broken (the IPv4 length runs past the frame, a bad
    // checksum): smoltcp drops them.
    let mut long = ping.clone();
    long[16..18].copy_from_slice(&0x0fffu16.to_be_bytes());
    assert!(ep.claim_tx(&long));
    let mut bad = ping.clone();
    bad[24] ^= 0xff;
    assert!(ep.claim_tx(&bad));
    let mut short_ip = ping.clone();
    short_ip.truncate(14 + 22);
    assert!(ep.claim_tx(&short_ip));
    // Still answering.
    assert_eq!(resolve(&mut ep), STORE_MAC);
    assert!(stack.stats().claimed >= 4);
}

/// The guest's side of the segment: its frames go through the endpoint.
struct GuestWire<'a> {
    ep: &'a mut GuestEndpoint,
    unclaimed: usize,
}

struct Rx(Vec<u8>);
impl phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

struct Tx<'a, 'b>(&'a mut GuestWire<'b>);
impl phy::TxToken for Tx<'_, '_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        if !self.0.ep.claim_tx(&frame) {
            self.0.unclaimed += 1;
        }
        r
    }
}

impl<'b> phy::Device for GuestWire<'b> {
    type RxToken<'a>
        = Rx
    where
        Self: 'a;
    type TxToken<'a>
        = Tx<'a, 'b>
    where
        Self: 'a;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_, 'b>)> {
        let f = self.ep.peek_rx()?.to_vec();
        self.ep.pop_rx();
        Some((Rx(f), Tx(self)))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_, 'b>> {
        Some(Tx(self))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

/// An HTTP/1.1 client on the guest's smoltcp stack.
struct GuestClient<'a> {
    wire: GuestWire<'a>,
    iface: Interface,
    sockets: SocketSet<'static>,
    tcp: smoltcp::iface::SocketHandle,
    inbuf: Vec<u8>,
}

impl<'a> GuestClient<'a> {
    fn connect(ep: &'a mut GuestEndpoint) -> GuestClient<'a> {
        let mut wire = GuestWire { ep, unclaimed: 0 };
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
        let mut c = GuestClient {
            wire,
            iface,
            sockets,
            tcp,
            inbuf: Vec::new(),
        };
        c.until(|s| s.state() == tcp::State::Established);
        c
    }

    fn poll(&mut self) {
        self.iface
            .poll(Instant::now(), &mut self.wire, &mut self.sockets);
    }

    /// Polls until `done` holds of the socket.
    fn until(&mut self, mut done: impl FnMut(&mut tcp::Socket<'static>) -> bool) {
        let t = StdInstant::now();
        loop {
            self.poll();
            if done(self.sockets.get_mut::<tcp::Socket>(self.tcp)) {
                return;
            }
            assert!(t.elapsed() < DEADLINE, "the guest's TCP did not get there");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Sends one request and reads its response: status, body.
    fn exchange(&mut self, req: &[u8]) -> (u16, Vec<u8>) {
        let mut at = 0;
        let t = StdInstant::now();
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
                let status: u16 = head[9..12].parse().unwrap();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if self.inbuf.len() >= h + len {
                    let body = self.inbuf[h..h + len].to_vec();
                    self.inbuf.drain(..h + len);
                    assert_eq!(at, req.len(), "answered before the request was sent");
                    return (status, body);
                }
            }
            assert!(t.elapsed() < DEADLINE, "no response");
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

#[test]
fn s3_over_the_guests_tcp_with_keep_alive() {
    let (stack, mut ep) = start();
    let body: Vec<u8> = (0..(1u32 << 20) + 123)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    {
        let mut c = GuestClient::connect(&mut ep);
        let (status, _) =
            c.exchange(b"PUT /bkt HTTP/1.1\r\nHost: 192.0.2.20\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(status, 200);
        let mut put = format!(
            "PUT /bkt/key HTTP/1.1\r\nHost: 192.0.2.20\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        put.extend_from_slice(&body);
        let (status, _) = c.exchange(&put);
        assert_eq!(status, 200);
        let (status, got) = c.exchange(b"GET /bkt/key HTTP/1.1\r\nHost: 192.0.2.20\r\n\r\n");
        assert_eq!(status, 200);
        assert_eq!(got.len(), body.len());
        assert!(got == body, "the object came back different");
        let (status, _) = c.exchange(b"GET /bkt/nokey HTTP/1.1\r\nHost: 192.0.2.20\r\n\r\n");
        assert_eq!(status, 404);
        assert_eq!(c.wire.unclaimed, 0);
        assert_eq!(stack.stats().connections, 1);
        assert_eq!(stack.stats().open, 1);
        // The guest closes; the store closes its side and forgets the
        // connection.
        c.sockets.get_mut::<tcp::Socket>(c.tcp).close();
        c.until(|s| matches!(s.state(), tcp::State::TimeWait | tcp::State::Closed));
    }
    let t = StdInstant::now();
    while stack.stats().open != 0 {
        assert!(t.elapsed() < DEADLINE, "the store kept the connection");
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = stack.stats();
    assert_eq!(s.dropped_from_guest, 0);
    assert_eq!(s.refused, 0);
}

#[test]
fn a_response_with_connection_close_ends_in_the_stores_fin() {
    let (stack, mut ep) = start();
    {
        let mut c = GuestClient::connect(&mut ep);
        let (status, body) =
            c.exchange(b"GET / HTTP/1.1\r\nHost: 192.0.2.20\r\nConnection: close\r\n\r\n");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert!(
            String::from_utf8_lossy(&body).contains("ListAllMyBucketsResult"),
            "{}",
            String::from_utf8_lossy(&body)
        );
        // Everything was sent before the FIN, and then the FIN came.
        c.until(|s| !s.may_recv());
        assert_eq!(
            c.sockets.get_mut::<tcp::Socket>(c.tcp).state(),
            tcp::State::CloseWait
        );
        c.sockets.get_mut::<tcp::Socket>(c.tcp).close();
        c.until(|s| s.state() == tcp::State::Closed);
    }
    let t = StdInstant::now();
    while stack.stats().open != 0 {
        assert!(t.elapsed() < DEADLINE, "the store kept the connection");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(stack.stats().connections, 1);
}

#[test]
fn bad_configurations_are_refused() {
    let store = Arc::new(MemoryStore::new(1 << 20));
    let h: Arc<dyn Handler> = Arc::new(S3Service::new(store, S3Config::default(), None).unwrap());
    let bad = [
        GuestConfig::new(STORE, [0x01, 0, 0, 0, 0, 1], 80),
        GuestConfig::new(STORE, [0; 6], 80),
        GuestConfig::new(Ipv4Addr::BROADCAST, STORE_MAC, 80),
        GuestConfig::new(Ipv4Addr::UNSPECIFIED, STORE_MAC, 80),
        GuestConfig::new(STORE, STORE_MAC, 0),
        GuestConfig {
            prefix: 33,
            ..GuestConfig::new(STORE, STORE_MAC, 80)
        },
    ];
    for cfg in bad {
        let what = format!("{cfg:?}");
        assert!(GuestStack::start(cfg, h.clone()).is_err(), "{what}");
    }
}
