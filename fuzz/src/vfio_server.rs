//! The vfio-user server (`ernic_vfio::server::Server`) serving one ionic
//! function over a real socket pair in this process: the client side
//! writes a fuzzer-chosen sequence of messages (headers and bodies built
//! from fields, DMA maps with a memfd attached, raw bytes) and closes its
//! writing half; the server serves until the client has left or the
//! stream cannot go on. One thread: both sockets' send buffers are made
//! larger than everything one input can send or be answered (a bounded
//! number of messages, a small transfer limit), so no write waits.
//!
//! Invariant: `serve` returns (the client closing its side ends it), and
//! nothing panics.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;

use arbitrary::Arbitrary;
use ernic_ionic::bar0::Identity;
use ernic_ionic::function::IonicFunction;
use ernic_vfio::proto::{Capabilities, HEADER_LEN, Header};
use ernic_vfio::server::Server;
use ernic_vfio::sock;

use crate::{Bytes, Enc};

const MAX_OPS: usize = 32;
/// The server's transfer limit here (small: replies stay small).
const MAX_XFER: u32 = 4096;
/// Each socket's send buffer: far more than 32 messages or replies of at
/// most 4 KiB (and their per-message overhead).
const SOCKET_BUFFER: libc::c_int = 4 << 20;
/// The guest memory a DMA map hands over.
const RAM: u64 = 1 << 16;

/// A message from the client.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Op {
    /// A message: header fields, and the size the body's (or `size`).
    Msg {
        id: u16,
        command: u16,
        flags: u32,
        size: Option<u32>,
        body: Bytes<600>,
    },
    /// `VFIO_USER_DMA_MAP` of a fresh memfd of 64 KiB.
    DmaMap {
        address: u64,
        size: u64,
        offset: u64,
        flags: u32,
    },
    /// Bytes straight onto the stream.
    Raw(Bytes<256>),
}

impl Op {
    /// Writes this message in the format the target reads.
    pub fn emit(&self, e: &mut Enc) {
        match self {
            Op::Msg {
                id,
                command,
                flags,
                size,
                body,
            } => {
                e.variant(0, 3).u16(*id).u16(*command).u32(*flags);
                match size {
                    None => e.bool(false),
                    Some(s) => e.bool(true).u32(*s),
                };
                e.bytes(&body.0, 600);
            }
            Op::DmaMap {
                address,
                size,
                offset,
                flags,
            } => {
                e.variant(1, 3)
                    .u64(*address)
                    .u64(*size)
                    .u64(*offset)
                    .u32(*flags);
            }
            Op::Raw(b) => {
                e.variant(2, 3).bytes(&b.0, 256);
            }
        }
    }
}

/// Room for everything one side sends (SO_SNDBUFFORCE as root, else as
/// much as the system allows).
fn room(s: &UnixStream) {
    for opt in [libc::SO_SNDBUFFORCE, libc::SO_SNDBUF] {
        let v = SOCKET_BUFFER;
        // SAFETY: setsockopt with a pointer to a live c_int and its size.
        let r = unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return;
        }
    }
}

fn client(stream: &UnixStream, ops: Vec<Op>) {
    let fd = stream.as_raw_fd();
    for (i, op) in ops.into_iter().enumerate() {
        let ok = match op {
            Op::Msg {
                id,
                command,
                flags,
                size,
                body,
            } => {
                let h = Header {
                    id,
                    command,
                    size: size.unwrap_or((HEADER_LEN + body.0.len()) as u32),
                    flags,
                    error: 0,
                };
                sock::send_all(fd, &[&h.to_bytes(), &body.0], &[])
            }
            Op::DmaMap {
                address,
                size,
                offset,
                flags,
            } => {
                let Ok(ram): std::io::Result<OwnedFd> =
                    ernic_vfio::client::shared_memory(c"ernic-fuzz-vfio", RAM)
                else {
                    break;
                };
                let body = ernic_vfio::client::dma_map_body(address, size, offset, flags);
                let h = Header {
                    id: i as u16,
                    command: 2,
                    size: (HEADER_LEN + body.len()) as u32,
                    flags: 0,
                    error: 0,
                };
                sock::send_all(fd, &[&h.to_bytes(), &body], &[&ram])
            }
            Op::Raw(b) => sock::send_all(fd, &[&b.0], &[]),
        };
        if ok.is_err() {
            break;
        }
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// Runs one input.
pub fn run(data: &[u8]) {
    static SIGPIPE: std::sync::Once = std::sync::Once::new();
    // libFuzzer's main is not Rust's: a write to a closed socket must
    // fail with EPIPE, not kill the process.
    SIGPIPE.call_once(|| {
        // SAFETY: setting a signal's disposition to SIG_IGN.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    });
    let ops: Vec<Op> = crate::ops(data, MAX_OPS);
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    room(&ours);
    room(&theirs);
    let mut server = Server::new(
        IonicFunction::new(Identity::default()),
        Capabilities {
            max_data_xfer_size: MAX_XFER,
            max_dma_maps: 8,
            ..Capabilities::default()
        },
    );
    client(&ours, ops);
    let _ = server.serve(&theirs);
    drop(theirs);
    // The replies, to the end (the server's side is closed).
    let mut r = ours;
    let mut buf = [0u8; 8192];
    while matches!(r.read(&mut buf), Ok(n) if n > 0) {}
}

fn msg(id: u16, command: u16, body: Vec<u8>) -> Op {
    Op::Msg {
        id,
        command,
        flags: 0,
        size: None,
        body: Bytes(body),
    }
}

fn query(argsz: u32, index: u32, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    b[0..4].copy_from_slice(&argsz.to_le_bytes());
    if len >= 12 {
        b[8..12].copy_from_slice(&index.to_le_bytes());
    }
    b
}

fn region_write(region: u32, offset: u64, data: &[u8]) -> Vec<u8> {
    let mut b = ernic_vfio::proto::region_io_reply(offset, region, data.len() as u32).to_vec();
    b.extend_from_slice(data);
    b
}

/// Seeds: QEMU's attach sequence (version, device and region info, IRQ
/// info, a DMA map), then a device command through BAR 0, a doorbell,
/// config space reads, an IRQ mask, unmap and reset.
pub fn seeds() -> Vec<(&'static str, Vec<Op>)> {
    let mut version = vec![0, 0, 1, 0];
    version.extend_from_slice(&Capabilities::default().to_json());
    let mut attach = vec![
        msg(0, 1, version),
        msg(1, 4, query(16, 0, 16)),
        msg(2, 5, query(32, 0, 32)),
        msg(3, 5, query(256, 2, 32)),
        msg(4, 5, query(32, 7, 32)),
        msg(5, 7, query(16, 4, 16)),
        Op::DmaMap {
            address: 0x10_0000,
            size: RAM,
            offset: 0,
            flags: 3,
        },
    ];
    let mut io = attach.clone();
    let mut identify = [0u8; 64];
    identify[0] = 0; // IDENTIFY
    identify[1] = 1;
    io.extend([
        msg(6, 10, region_write(0, 0x808, &identify)),
        msg(7, 10, region_write(0, 0x800, &1u32.to_le_bytes())),
        msg(
            8,
            9,
            ernic_vfio::proto::region_io_reply(0x848, 0, 16).to_vec(),
        ),
        msg(9, 9, ernic_vfio::proto::region_io_reply(0, 7, 64).to_vec()),
        msg(10, 10, region_write(7, 4, &6u16.to_le_bytes())),
        msg(11, 10, region_write(2, 0, &1u64.to_le_bytes())),
        msg(
            12,
            8,
            ernic_vfio::client::set_irqs_body(
                ernic_vfio::proto::IRQ_DATA_NONE | ernic_vfio::proto::IRQ_ACTION_MASK,
                4,
                0,
                1,
            ),
        ),
        msg(13, 3, {
            let mut b = query(24, 0, 24);
            b[8..16].copy_from_slice(&0x10_0000u64.to_le_bytes());
            b[16..24].copy_from_slice(&RAM.to_le_bytes());
            b
        }),
        msg(14, 13, Vec::new()),
    ]);
    attach.push(Op::Raw(Bytes(vec![0xff; 16])));
    vec![("attach", attach), ("device-io", io)]
}
