//! The server over a real UNIX socket, driven as QEMU drives it: a client
//! that negotiates the version, shares its RAM as a memfd with DMA_MAP,
//! wires an eventfd with SET_IRQS, reads and writes a region, and lets the
//! device DMA into its memory and interrupt it. Then hostile clients:
//! commands out of order, unknown ones, bad ranges, a lying size, too many
//! descriptors, a client that vanishes mid-message — and the next client
//! is served. And clients that would have held or killed the server: one
//! that never reads its replies, one that shares memory it then shrinks.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ernic_vfio::client::{Client, ClientError, dma_map_body, set_irqs_body, shared_memory};
use ernic_vfio::dma::Unsealed;
use ernic_vfio::proto::{self, Capabilities, Command, HEADER_LEN, Header};
use ernic_vfio::server::{Device, Io, Options, Server};
use ernic_vfio::sock;

const RAM: usize = 1 << 20;
const GUEST_BASE: u64 = 0x4000_0000;
const MSIX: u32 = 2;

/// A toy PCI function: region 0 is 4 KiB of registers. Writing a length to
/// 0x108 makes the device write that many pattern bytes into guest memory
/// at the address in 0x100, record the outcome at 0x110 (0 or an errno)
/// and raise MSI-X vector 0. Its timer counts in `ticks` every 5 ms, which
/// shows the server's loop is running.
#[derive(Default)]
struct Toy {
    regs: Vec<u8>,
    ticks: Arc<AtomicU64>,
    next: Option<Instant>,
}

impl Device for Toy {
    fn flags(&self) -> u32 {
        proto::DEVICE_FLAGS_PCI | proto::DEVICE_FLAGS_RESET
    }
    fn regions(&self) -> Vec<proto::RegionInfo> {
        vec![proto::RegionInfo {
            flags: proto::REGION_READ | proto::REGION_WRITE,
            index: 0,
            size: 4096,
            offset: 0,
            sparse: vec![],
        }]
    }
    fn irqs(&self) -> Vec<(u32, u32)> {
        // INTx, MSI, MSI-X (eventfd-capable, maskable).
        vec![(0x3, 1), (0x3, 0), (0x3, 4)]
    }
    fn read(&mut self, _io: &mut Io, _r: u32, offset: u64, buf: &mut [u8]) -> Result<(), i32> {
        self.regs.resize(4096, 0);
        let o = offset as usize;
        buf.copy_from_slice(&self.regs[o..o + buf.len()]);
        Ok(())
    }
    fn write(&mut self, io: &mut Io, _r: u32, offset: u64, data: &[u8]) -> Result<(), i32> {
        self.regs.resize(4096, 0);
        let o = offset as usize;
        self.regs[o..o + data.len()].copy_from_slice(data);
        if offset == 0x108 {
            let addr = u64::from_le_bytes(self.regs[0x100..0x108].try_into().unwrap());
            let len = u32::from_le_bytes(self.regs[0x108..0x10c].try_into().unwrap()) as usize;
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let status: u32 = match io.dma.write(addr, &bytes) {
                Ok(()) => 0,
                Err(_) => 14,
            };
            self.regs[0x110..0x114].copy_from_slice(&status.to_le_bytes());
            io.irqs.trigger(MSIX, 0);
        }
        Ok(())
    }
    fn reset(&mut self, _io: &mut Io) {
        self.regs = vec![0; 4096];
    }
    fn next_tick(&self) -> Option<Duration> {
        Some(self.next.map_or(Duration::ZERO, |t| {
            t.saturating_duration_since(Instant::now())
        }))
    }
    fn tick(&mut self, _io: &mut Io) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
        self.next = Some(Instant::now() + Duration::from_millis(5));
    }
}

/// The server thread's log lines (its `tracing` events at `warn` and
/// above), one string each.
#[derive(Clone)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let line = String::from_utf8_lossy(buf).trim_end().to_string();
        self.0.lock().unwrap().push(line);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a test sees of a server thread: its socket, how each connection
/// ended (`Err` with its message), the Toy's tick count, and the log.
struct Served {
    path: std::path::PathBuf,
    ends: JoinHandle<Vec<Result<(), String>>>,
    ticks: Arc<AtomicU64>,
    log: Arc<Mutex<Vec<String>>>,
}

/// As `server`, with `opts`, and all of what the test sees.
fn server_with(name: &str, clients: usize, opts: Options) -> Served {
    let dir = std::env::temp_dir().join(format!("ernic-vfio-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let toy = Toy {
        ticks: ticks.clone(),
        ..Toy::default()
    };
    let lines = log.clone();
    let ends = std::thread::spawn(move || {
        let caps = Capabilities {
            max_msg_fds: sock::MAX_FDS as u32,
            max_data_xfer_size: 64 * 1024,
            max_dma_maps: 16,
            ..Capabilities::default()
        };
        let mut s = Server::with_options(toy, caps, opts);
        let lines = Lines(lines);
        let sub = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || lines.clone())
            .finish();
        tracing::subscriber::with_default(sub, || {
            (0..clients)
                .map(|_| {
                    let (c, _) = listener.accept().unwrap();
                    s.serve(&c).map_err(|e| e.to_string())
                })
                .collect()
        })
    });
    Served {
        path,
        ends,
        ticks,
        log,
    }
}

/// A server thread taking clients one after another until `clients` have
/// come and gone; answers how each connection ended.
fn server(clients: usize) -> (std::path::PathBuf, JoinHandle<Vec<bool>>) {
    let dir = std::env::temp_dir().join(format!(
        "ernic-vfio-{}-{}",
        std::process::id(),
        std::thread::current()
            .name()
            .unwrap_or("t")
            .replace("::", "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let h = std::thread::spawn(move || {
        let caps = Capabilities {
            max_msg_fds: sock::MAX_FDS as u32,
            max_data_xfer_size: 64 * 1024,
            max_dma_maps: 16,
            ..Capabilities::default()
        };
        let mut s = Server::new(Toy::default(), caps);
        (0..clients)
            .map(|_| {
                let (c, _) = listener.accept().unwrap();
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.serve(&c).is_ok()
            })
            .collect()
    });
    (path, h)
}

/// A raw command header: id, command number, whole message size.
fn command(id: u16, command: u16, size: u32) -> Header {
    Header {
        id,
        command,
        size,
        flags: 0,
        error: 0,
    }
}

fn connect(path: &std::path::Path) -> Client {
    Client::connect(path, Duration::from_secs(10)).unwrap()
}

fn version(c: &mut Client) -> Capabilities {
    c.version(&Capabilities {
        max_msg_fds: 16,
        ..Capabilities::default()
    })
    .unwrap()
}

/// The errno of a request that must be refused.
fn refused(r: Result<Vec<u8>, ClientError>) -> u32 {
    match r {
        Err(ClientError::Refused { errno, .. }) => errno,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn memfd(len: usize) -> OwnedFd {
    shared_memory(c"guest-ram", len as u64).unwrap()
}

fn eventfd() -> OwnedFd {
    ernic_vfio::client::eventfd().unwrap()
}

/// The eventfd's count (0 when it was not signalled).
fn take(fd: &OwnedFd) -> u64 {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into a live u64 from a non-blocking eventfd.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    if n == 8 { v } else { 0 }
}

fn pread(fd: &OwnedFd, at: usize, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    // SAFETY: reading into a live buffer of `len` bytes.
    let n = unsafe { libc::pread(fd.as_raw_fd(), b.as_mut_ptr().cast(), len, at as i64) };
    assert_eq!(n as usize, len);
    b
}

/// Sends `bytes` with any number of descriptors (our own sender stops at
/// MAX_FDS; a hostile client does not).
fn send_with_fds(s: &UnixStream, bytes: &[u8], fds: &[OwnedFd]) {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    let mut cmsg = [0u64; 64];
    let n = std::mem::size_of::<i32>() * fds.len();
    // SAFETY: a msghdr over live buffers; the control buffer (512 bytes)
    // holds the header and `fds.len()` (< 100) descriptors.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(n as u32) as usize;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(n as u32) as usize;
        let data = libc::CMSG_DATA(c).cast::<i32>();
        for (i, f) in fds.iter().enumerate() {
            std::ptr::write_unaligned(data.add(i), f.as_raw_fd());
        }
        assert_eq!(libc::sendmsg(s.as_raw_fd(), &msg, 0), bytes.len() as isize);
    }
}

/// Whether the server closed the connection (an end of stream, or a reset
/// when it left our unread bytes behind).
fn hung_up(s: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    match sock::recv_exact(s.as_raw_fd(), &mut byte, &mut Vec::new()) {
        Ok(false) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        Ok(true) => false,
    }
}

fn dma_map(address: u64, size: u64, offset: u64) -> Vec<u8> {
    dma_map_body(address, size, offset, proto::DMA_READ | proto::DMA_WRITE)
}

fn set_irqs(flags: u32, index: u32, start: u32, count: u32) -> Vec<u8> {
    set_irqs_body(flags, index, start, count)
}

fn get(cmd_body_len: usize, index: u32, argsz: u32) -> Vec<u8> {
    let mut b = vec![0u8; cmd_body_len];
    b[0..4].copy_from_slice(&argsz.to_le_bytes());
    if cmd_body_len > 8 {
        b[8..12].copy_from_slice(&index.to_le_bytes());
    }
    b
}

#[test]
fn a_client_maps_memory_wires_an_interrupt_and_the_device_dmas_into_it() {
    let (path, srv) = server(1);
    let mut c = connect(&path);
    let caps = version(&mut c);
    assert_eq!(caps.max_data_xfer_size, 64 * 1024);
    assert_eq!(caps.max_msg_fds, 16);

    let info = c
        .request(Command::DeviceGetInfo, &get(16, 0, 16), &[])
        .unwrap();
    assert_eq!(info, proto::device_info(3, 1, 3));
    let region = c
        .request(Command::DeviceGetRegionInfo, &get(32, 0, 32), &[])
        .unwrap();
    assert_eq!(u64::from_le_bytes(region[16..24].try_into().unwrap()), 4096);
    let irq = c
        .request(Command::DeviceGetIrqInfo, &get(16, MSIX, 16), &[])
        .unwrap();
    assert_eq!(irq, proto::irq_info(3, MSIX, 4));

    let ram = memfd(RAM);
    c.request(
        Command::DmaMap,
        &dma_map(GUEST_BASE, RAM as u64, 0),
        &[&ram],
    )
    .unwrap();
    let ev = eventfd();
    c.request(
        Command::DeviceSetIrqs,
        &set_irqs(
            proto::IRQ_DATA_EVENTFD | proto::IRQ_ACTION_TRIGGER,
            MSIX,
            0,
            1,
        ),
        &[&ev],
    )
    .unwrap();

    // Registers read back what was written.
    c.region_write(0, 0x20, b"abcdefgh").unwrap();
    assert_eq!(c.region_read(0, 0x20, 8).unwrap(), b"abcdefgh");

    // The device writes 300 bytes at guest 0x4000_1000 and interrupts.
    c.region_write(0, 0x100, &(GUEST_BASE + 0x1000).to_le_bytes())
        .unwrap();
    c.region_write(0, 0x108, &300u32.to_le_bytes()).unwrap();
    assert_eq!(c.region_read(0, 0x110, 4).unwrap(), 0u32.to_le_bytes());
    let want: Vec<u8> = (0..300).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(
        pread(&ram, 0x1000, 300),
        want,
        "the DMA landed in the client's memory"
    );
    assert_eq!(take(&ev), 1, "MSI-X vector 0 fired");

    // Masked, the interrupt is latched; unmasking delivers it.
    c.request(
        Command::DeviceSetIrqs,
        &set_irqs(proto::IRQ_DATA_NONE | proto::IRQ_ACTION_MASK, MSIX, 0, 1),
        &[],
    )
    .unwrap();
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(take(&ev), 0, "masked: nothing");
    c.request(
        Command::DeviceSetIrqs,
        &set_irqs(proto::IRQ_DATA_NONE | proto::IRQ_ACTION_UNMASK, MSIX, 0, 1),
        &[],
    )
    .unwrap();
    assert_eq!(take(&ev), 1, "delivered on unmask");

    // Outside the window the device's DMA fails, and says so.
    c.region_write(0, 0x100, &(GUEST_BASE + RAM as u64 - 4).to_le_bytes())
        .unwrap();
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(c.region_read(0, 0x110, 4).unwrap(), 14u32.to_le_bytes());
    take(&ev);

    // Unmapped, the memory is no longer reachable.
    let mut unmap = vec![0u8; 24];
    unmap[0..4].copy_from_slice(&24u32.to_le_bytes());
    unmap[8..16].copy_from_slice(&GUEST_BASE.to_le_bytes());
    unmap[16..24].copy_from_slice(&(RAM as u64).to_le_bytes());
    assert_eq!(c.request(Command::DmaUnmap, &unmap, &[]).unwrap(), unmap);
    c.region_write(0, 0x100, &(GUEST_BASE + 0x1000).to_le_bytes())
        .unwrap();
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(c.region_read(0, 0x110, 4).unwrap(), 14u32.to_le_bytes());

    // Reset clears the registers.
    c.request(Command::DeviceReset, &[], &[]).unwrap();
    assert_eq!(c.region_read(0, 0x20, 8).unwrap(), [0u8; 8]);
    drop(c);
    assert_eq!(srv.join().unwrap(), vec![true]);
}

/// Posted writes (`VFIO_USER_F_NO_REPLY`, as QEMU's client sends a guest's
/// MMIO writes): each takes effect in order with what follows and gets no
/// reply, not even a refused one; the next request's reply is its own.
#[test]
fn posted_writes_take_effect_in_order_and_get_no_reply() {
    let (path, srv) = server(1);
    let mut c = connect(&path);
    version(&mut c);
    c.region_write_posted(0, 0x20, b"first!!!").unwrap();
    c.region_write_posted(0, 0x20, b"second!!").unwrap();
    // Past the region's end: refused, silently.
    c.region_write_posted(0, 4092, b"overflow").unwrap();
    c.region_write_posted(0, 0x28, b"third!!!").unwrap();
    assert_eq!(c.region_read(0, 0x20, 16).unwrap(), b"second!!third!!!");
    // Nothing else is waiting on the socket: every reply so far was read.
    c.stream().set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let r = std::io::Read::read(&mut c.stream(), &mut b);
    assert!(
        r.as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "a stray reply: {r:?}"
    );
    c.stream().set_nonblocking(false).unwrap();
    drop(c);
    assert_eq!(srv.join().unwrap(), vec![true]);
}

#[test]
fn hostile_clients_get_errors_and_the_next_client_is_served() {
    let (path, srv) = server(4);

    // 1: out of order, unknown, out of range, overlapping: error replies,
    // and the connection goes on.
    let mut c = connect(&path);
    assert_eq!(
        refused(c.request(Command::DeviceGetInfo, &get(16, 0, 16), &[])),
        22,
        "VERSION first"
    );
    version(&mut c);
    let (h, _) = {
        let h = command(500, 99, HEADER_LEN as u32);
        c.send(&[&h.to_bytes()], &[]).unwrap();
        let (h, b, _) = c.receive().unwrap();
        (h, b)
    };
    assert_eq!(
        (h.flags & proto::FLAG_ERROR, h.error),
        (proto::FLAG_ERROR, 95)
    );
    assert_eq!(
        refused(c.request(
            Command::RegionRead,
            &proto::region_io_reply(4090, 0, 8),
            &[]
        )),
        22,
        "past the region's end"
    );
    assert_eq!(
        refused(c.request(Command::RegionRead, &proto::region_io_reply(0, 5, 4), &[])),
        22,
        "no region 5"
    );
    assert_eq!(
        refused(c.request(
            Command::RegionRead,
            &proto::region_io_reply(0, 0, 1 << 20),
            &[]
        )),
        7,
        "larger than max_data_xfer_size"
    );
    let ram = memfd(RAM);
    c.request(
        Command::DmaMap,
        &dma_map(GUEST_BASE, RAM as u64, 0),
        &[&ram],
    )
    .unwrap();
    assert_eq!(
        refused(c.request(
            Command::DmaMap,
            &dma_map(GUEST_BASE + 4096, 4096, 0),
            &[&ram]
        )),
        17,
        "EEXIST over a mapped window"
    );
    assert_eq!(
        refused(c.request(
            Command::DmaMap,
            &dma_map(0x9000_0000, 2 * RAM as u64, 0),
            &[&ram]
        )),
        22,
        "a window longer than its file"
    );
    assert_eq!(
        refused(c.request(
            Command::DeviceSetIrqs,
            &set_irqs(proto::IRQ_DATA_NONE | proto::IRQ_ACTION_TRIGGER, MSIX, 3, 2),
            &[]
        )),
        22,
        "sub-indexes past the vector count"
    );
    assert_eq!(
        refused(c.request(Command::DeviceGetRegionInfo, &get(32, 0, 8), &[])),
        22,
        "argsz too small"
    );
    c.region_write(0, 0x40, b"kept").unwrap();
    // A size below the header: an error reply, then the server hangs up.
    let bad = command(77, Command::RegionRead as u16, 4);
    sock::send_all(c.stream().as_raw_fd(), &[&bad.to_bytes()], &[]).unwrap();
    let (h, _, _) = c.receive().unwrap();
    assert_eq!(h.id, 77);
    assert_ne!(h.flags & proto::FLAG_ERROR, 0);
    assert!(
        hung_up(c.stream()),
        "the server hangs up after a size it cannot trust"
    );

    // 2: more descriptors than a message may carry: the connection ends.
    let mut c = connect(&path);
    version(&mut c);
    let many: Vec<OwnedFd> = (0..sock::MAX_FDS + 1).map(|_| eventfd()).collect();
    let refs: Vec<&dyn AsRawFd> = many.iter().map(|f| f as &dyn AsRawFd).collect();
    // Sent by hand (the client-side helper refuses so many).
    let h = command(1, Command::DeviceSetIrqs as u16, (HEADER_LEN + 20) as u32);
    let body = set_irqs(
        proto::IRQ_DATA_EVENTFD | proto::IRQ_ACTION_TRIGGER,
        MSIX,
        0,
        4,
    );
    assert!(
        sock::send_all(c.stream().as_raw_fd(), &[&h.to_bytes(), &body], &refs).is_err(),
        "our own sender refuses more than MAX_FDS"
    );
    let mut msg = h.to_bytes().to_vec();
    msg.extend_from_slice(&body);
    send_with_fds(c.stream(), &msg, &many);
    assert!(
        hung_up(c.stream()),
        "the server hangs up on a message with too many descriptors"
    );
    drop(c);

    // 3: a client that vanishes mid-message.
    let c = connect(&path);
    let h = command(1, Command::Version as u16, 100);
    sock::send_all(c.stream().as_raw_fd(), &[&h.to_bytes(), &[0, 0]], &[]).unwrap();
    drop(c);

    // 4: the next client is served; the device kept its registers, the
    // old client's window is gone.
    let mut c = connect(&path);
    version(&mut c);
    assert_eq!(c.region_read(0, 0x40, 4).unwrap(), b"kept");
    c.region_write(0, 0x100, &(GUEST_BASE + 0x1000).to_le_bytes())
        .unwrap();
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(
        c.region_read(0, 0x110, 4).unwrap(),
        14u32.to_le_bytes(),
        "no DMA window now"
    );
    drop(c);
    let ends = srv.join().unwrap();
    assert_eq!(ends, vec![false, false, false, true]);
}

/// Waits (bounded) until `f` holds.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

// A client that sends requests and never reads a reply: the server's loop
// goes on (its timer keeps ticking), the client is cut off once its
// replies have waited the stall timeout, and the next client is served.
// (Before, the reply's send blocked the loop for good.)
#[test]
fn a_client_that_never_reads_is_cut_off_and_the_loop_goes_on() {
    let stall = Duration::from_millis(400);
    let srv = server_with(
        "stalled",
        2,
        Options {
            stall_timeout: stall,
            ..Options::default()
        },
    );
    let mut c = connect(&srv.path);
    version(&mut c);
    let stream = c.stream().try_clone().unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    // Taken before the first request goes: the server's stall clock can
    // start no earlier than this (taken after the writer started, it once
    // read 399.1 ms against a 400 ms stall).
    let started = Instant::now();
    let writer = std::thread::spawn(move || {
        // 4 KiB reads, never read back: until the socket refuses more.
        let read = proto::region_io_reply(0, 0, 4096);
        let h = command(1, Command::RegionRead as u16, (HEADER_LEN + 16) as u32);
        let mut sent = 0u32;
        while sent < 1_000_000
            && sock::send_all(stream.as_raw_fd(), &[&h.to_bytes(), &read], &[]).is_ok()
        {
            sent += 1;
        }
        sent
    });
    // The replies back up (far more than the socket holds) ...
    std::thread::sleep(stall / 4);
    // ... and meanwhile the device's timer runs.
    let t0 = srv.ticks.load(Ordering::Relaxed);
    eventually("ticks while the client stalls", || {
        srv.ticks.load(Ordering::Relaxed) >= t0 + 10
    });
    // The writer stops when the server, cut off from it, closes.
    let sent = writer.join().unwrap();
    // 100 replies of 4 KiB are more than the queue (at most two 64 KiB
    // messages here) and the socket's buffer hold.
    assert!(sent >= 100, "only {sent} requests went out");
    // A second client waits its turn, and is served once the first is cut.
    let mut next = connect(&srv.path);
    version(&mut next);
    assert!(
        started.elapsed() >= stall,
        "cut off after {:?}, before the stall timeout",
        started.elapsed()
    );
    assert_eq!(next.region_read(0, 0x20, 4).unwrap(), [0; 4]);
    drop(next);
    drop(c);
    let ends = srv.ends.join().unwrap();
    assert!(
        matches!(&ends[0], Err(e) if e.contains("took no reply")),
        "{ends:?}"
    );
    assert_eq!(ends[1], Ok(()));
}

// A client that sends half a message and stops holds nothing either.
#[test]
fn a_half_sent_message_is_cut_off_at_the_stall_timeout() {
    let stall = Duration::from_millis(300);
    let srv = server_with(
        "half-sent",
        2,
        Options {
            stall_timeout: stall,
            ..Options::default()
        },
    );
    let c = connect(&srv.path);
    let h = command(1, Command::Version as u16, 100);
    sock::send_all(c.stream().as_raw_fd(), &[&h.to_bytes(), &[0, 0]], &[]).unwrap();
    let t0 = srv.ticks.load(Ordering::Relaxed);
    eventually("ticks while the message hangs", || {
        srv.ticks.load(Ordering::Relaxed) >= t0 + 10
    });
    assert!(hung_up(c.stream()), "cut off");
    let mut next = connect(&srv.path);
    version(&mut next);
    drop(next);
    let ends = srv.ends.join().unwrap();
    assert!(
        matches!(&ends[0], Err(e) if e.contains("18 bytes of a message")),
        "{ends:?}"
    );
}

// Memory not sealed against shrinking is refused with EPERM and a line
// saying why and what to do.
#[test]
fn unsealed_memory_is_refused_with_a_reason() {
    let srv = server_with("unsealed", 1, Options::default());
    let mut c = connect(&srv.path);
    version(&mut c);
    let ram = ernic_vfio::client::unsealed_memory(c"guest-ram", RAM as u64).unwrap();
    assert_eq!(
        refused(c.request(
            Command::DmaMap,
            &dma_map(GUEST_BASE, RAM as u64, 0),
            &[&ram]
        )),
        1,
        "EPERM"
    );
    // Sealed memory (QEMU's default, and our client's) is taken.
    let sealed = memfd(RAM);
    c.request(
        Command::DmaMap,
        &dma_map(GUEST_BASE, RAM as u64, 0),
        &[&sealed],
    )
    .unwrap();
    drop(c);
    srv.ends.join().unwrap();
    let log = srv.log.lock().unwrap();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].contains("not sealed against shrinking")
            && log[0].contains("--allow-unsealed-memory"),
        "{log:?}"
    );
}

// Allowed anyway, memory the client shrinks under a window costs the
// device's DMA an error, not the server its life. (Before, the DMA raised
// SIGBUS and the process died.)
#[test]
fn memory_shrunk_under_a_guarded_window_fails_the_dma_and_the_server_lives() {
    let srv = server_with(
        "shrunk",
        2,
        Options {
            unsealed: Unsealed::Guard,
            ..Options::default()
        },
    );
    let mut c = connect(&srv.path);
    version(&mut c);
    let ram = ernic_vfio::client::unsealed_memory(c"guest-ram", RAM as u64).unwrap();
    c.request(
        Command::DmaMap,
        &dma_map(GUEST_BASE, RAM as u64, 0),
        &[&ram],
    )
    .unwrap();
    c.region_write(0, 0x100, &(GUEST_BASE + 0x1000).to_le_bytes())
        .unwrap();
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(c.region_read(0, 0x110, 4).unwrap(), 0u32.to_le_bytes());
    std::fs::File::from(ram.try_clone().unwrap())
        .set_len(0)
        .unwrap();
    // The device's DMA lands where the file no longer reaches.
    c.region_write(0, 0x108, &300u32.to_le_bytes()).unwrap();
    assert_eq!(
        c.region_read(0, 0x110, 4).unwrap(),
        14u32.to_le_bytes(),
        "the DMA failed"
    );
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(c.region_read(0, 0x110, 4).unwrap(), 14u32.to_le_bytes());
    drop(c);
    // The next client is served, with memory of its own.
    let mut c = connect(&srv.path);
    version(&mut c);
    let fresh = memfd(RAM);
    c.request(
        Command::DmaMap,
        &dma_map(GUEST_BASE, RAM as u64, 0),
        &[&fresh],
    )
    .unwrap();
    c.region_write(0, 0x108, &8u32.to_le_bytes()).unwrap();
    assert_eq!(c.region_read(0, 0x110, 4).unwrap(), 0u32.to_le_bytes());
    drop(c);
    assert_eq!(srv.ends.join().unwrap(), vec![Ok(()), Ok(())]);
    let log = srv.log.lock().unwrap();
    assert!(
        log.iter()
            .any(|l| l.contains("DMA window 0x40000000 (1048576 bytes) vanished")),
        "{log:?}"
    );
}
