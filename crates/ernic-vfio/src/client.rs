//! A vfio-user client, playing QEMU's part: for tests of servers, and for
//! drivers that attach to a device over its socket.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::proto::{
    self, Capabilities, Command, FLAG_ERROR, FLAG_NO_REPLY, FLAG_REPLY, HEADER_LEN, Header,
};
use crate::sock;

/// The largest reply body accepted (a 64 MiB region read and change).
const MAX_REPLY: usize = (64 << 20) + 64;

/// What went wrong with a request.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The socket failed.
    #[error("vfio-user socket: {0}")]
    Io(#[from] io::Error),
    /// The server answered with an error.
    #[error("{command:?} refused with errno {errno}")]
    Refused {
        /// The command.
        command: Command,
        /// The errno in its reply.
        errno: u32,
    },
    /// The reply does not fit the request.
    #[error("bad reply: {0}")]
    BadReply(String),
}

/// A connection to a vfio-user server.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    id: u16,
}

impl Client {
    /// Connects to the server's socket; replies are awaited for at most
    /// `timeout`.
    pub fn connect(path: &Path, timeout: Duration) -> io::Result<Client> {
        let stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(timeout))?;
        Ok(Client { stream, id: 0 })
    }

    /// The socket (for raw traffic in tests).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Sends the parts of one message as they are, descriptors attached.
    pub fn send(&mut self, parts: &[&[u8]], fds: &[&dyn AsRawFd]) -> io::Result<()> {
        sock::send_all(self.stream.as_raw_fd(), parts, fds)
    }

    /// Reads one message: its header, body and descriptors.
    pub fn receive(&mut self) -> Result<(Header, Vec<u8>, Vec<OwnedFd>), ClientError> {
        let mut head = [0u8; HEADER_LEN];
        let mut fds = Vec::new();
        if !sock::recv_exact(self.stream.as_raw_fd(), &mut head, &mut fds)? {
            return Err(ClientError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let h = Header::parse(&head);
        let len = (h.size as usize)
            .checked_sub(HEADER_LEN)
            .filter(|&n| n <= MAX_REPLY)
            .ok_or_else(|| ClientError::BadReply(format!("size {}", h.size)))?;
        let mut body = vec![0u8; len];
        if len > 0 && !sock::recv_exact(self.stream.as_raw_fd(), &mut body, &mut fds)? {
            return Err(ClientError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        Ok((h, body, fds))
    }

    /// Sends `cmd` and returns its reply, error replies included.
    pub fn call(
        &mut self,
        cmd: Command,
        body: &[u8],
        fds: &[&dyn AsRawFd],
    ) -> Result<(Header, Vec<u8>), ClientError> {
        self.call_fds(cmd, body, fds).map(|(h, b, _)| (h, b))
    }

    /// As [`call`](Client::call), with the descriptors the reply brought.
    pub fn call_fds(
        &mut self,
        cmd: Command,
        body: &[u8],
        fds: &[&dyn AsRawFd],
    ) -> Result<(Header, Vec<u8>, Vec<OwnedFd>), ClientError> {
        self.id = self.id.wrapping_add(1);
        let h = Header {
            id: self.id,
            command: cmd as u16,
            size: (HEADER_LEN + body.len()) as u32,
            flags: 0,
            error: 0,
        };
        self.send(&[&h.to_bytes(), body], fds)?;
        let (r, b, got) = self.receive()?;
        if r.id != self.id || r.command != cmd as u16 || r.flags & FLAG_REPLY == 0 {
            return Err(ClientError::BadReply(format!(
                "{r:?} answers id {} command {cmd:?}",
                self.id
            )));
        }
        Ok((r, b, got))
    }

    /// Sends `cmd` and returns its reply's body; an error reply is
    /// [`ClientError::Refused`].
    pub fn request(
        &mut self,
        cmd: Command,
        body: &[u8],
        fds: &[&dyn AsRawFd],
    ) -> Result<Vec<u8>, ClientError> {
        let (h, b) = self.call(cmd, body, fds)?;
        if h.flags & FLAG_ERROR != 0 {
            return Err(ClientError::Refused {
                command: cmd,
                errno: h.error,
            });
        }
        Ok(b)
    }

    /// Negotiates version 0.1 offering `caps`; answers the server's.
    pub fn version(&mut self, caps: &Capabilities) -> Result<Capabilities, ClientError> {
        let mut b = vec![0, 0, 1, 0];
        b.extend_from_slice(&caps.to_json());
        let r = self.request(Command::Version, &b, &[])?;
        if r.len() < 4 || r[..2] != [0, 0] {
            return Err(ClientError::BadReply(format!(
                "version {:?}",
                &r[..r.len().min(4)]
            )));
        }
        Capabilities::parse(&r[4..]).map_err(|e| ClientError::BadReply(e.to_string()))
    }

    /// A region's info, with the descriptor to mmap its sparse areas
    /// when the server sent one.
    pub fn region_info(
        &mut self,
        index: u32,
    ) -> Result<(proto::RegionInfo, Option<OwnedFd>), ClientError> {
        // Room for the fixed part and a sparse-mmap capability of 16 areas.
        let argsz: u32 = 32 + 16 + 16 * 16;
        let mut body = vec![0u8; 32];
        body[0..4].copy_from_slice(&argsz.to_le_bytes());
        body[8..12].copy_from_slice(&index.to_le_bytes());
        let (h, b, mut fds) = self.call_fds(Command::DeviceGetRegionInfo, &body, &[])?;
        if h.flags & FLAG_ERROR != 0 {
            return Err(ClientError::Refused {
                command: Command::DeviceGetRegionInfo,
                errno: h.error,
            });
        }
        let info =
            proto::RegionInfo::parse(&b).map_err(|e| ClientError::BadReply(e.to_string()))?;
        Ok((info, fds.pop()))
    }

    /// Reads `count` bytes of `region` at `offset`.
    pub fn region_read(
        &mut self,
        region: u32,
        offset: u64,
        count: u32,
    ) -> Result<Vec<u8>, ClientError> {
        let head = proto::region_io_reply(offset, region, count);
        let r = self.request(Command::RegionRead, &head, &[])?;
        if r.len() != 16 + count as usize || r[..16] != head {
            return Err(ClientError::BadReply(format!(
                "{} bytes for a {count}-byte read",
                r.len()
            )));
        }
        Ok(r[16..].to_vec())
    }

    /// Writes `data` to `region` at `offset`.
    pub fn region_write(
        &mut self,
        region: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), ClientError> {
        let mut b = proto::region_io_reply(offset, region, data.len() as u32).to_vec();
        b.extend_from_slice(data);
        self.request(Command::RegionWrite, &b, &[])?;
        Ok(())
    }

    /// Writes `data` to `region` at `offset` as a posted write: the message
    /// says no reply is wanted (`VFIO_USER_F_NO_REPLY`), and this returns
    /// once it is sent, as QEMU's client posts a guest's MMIO writes. The
    /// socket keeps the order: a later request is served after it. A write
    /// the server refuses is lost, as a posted PCI write is.
    pub fn region_write_posted(
        &mut self,
        region: u32,
        offset: u64,
        data: &[u8; 8],
    ) -> Result<(), ClientError> {
        let mut b = [0u8; 16 + 8];
        b[..16].copy_from_slice(&proto::region_io_reply(offset, region, 8));
        b[16..].copy_from_slice(data);
        self.id = self.id.wrapping_add(1);
        let h = Header {
            id: self.id,
            command: Command::RegionWrite as u16,
            size: (HEADER_LEN + b.len()) as u32,
            flags: FLAG_NO_REPLY,
            error: 0,
        };
        self.send(&[&h.to_bytes(), &b], &[])?;
        Ok(())
    }

    /// Shares `size` bytes of `fd` from `offset` as DMA window `address`.
    pub fn dma_map(
        &mut self,
        address: u64,
        size: u64,
        offset: u64,
        flags: u32,
        fd: &dyn AsRawFd,
    ) -> Result<(), ClientError> {
        self.request(
            Command::DmaMap,
            &dma_map_body(address, size, offset, flags),
            &[fd],
        )?;
        Ok(())
    }

    /// Wires eventfds to interrupts `start..` of type `index` (trigger).
    pub fn irq_eventfds(
        &mut self,
        index: u32,
        start: u32,
        fds: &[&dyn AsRawFd],
    ) -> Result<(), ClientError> {
        let body = set_irqs_body(
            proto::IRQ_DATA_EVENTFD | proto::IRQ_ACTION_TRIGGER,
            index,
            start,
            fds.len() as u32,
        );
        self.request(Command::DeviceSetIrqs, &body, fds)?;
        Ok(())
    }
}

/// Memory a client can share with a server (what QEMU's memfd memory
/// backend is): an anonymous file of `len` zero bytes, sealed as QEMU
/// seals it (`F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL`), so its size is
/// fixed for good and a server may map it without fearing that it shrinks
/// under the mapping (see [`crate::dma`]).
pub fn shared_memory(name: &std::ffi::CStr, len: u64) -> io::Result<OwnedFd> {
    let fd = memfd(name, len, true)?;
    let seals = libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    // SAFETY: F_ADD_SEALS on a descriptor we own, made with
    // MFD_ALLOW_SEALING; an int argument.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// As [`shared_memory`], without seals: memory its owner may shrink (or
/// grow) at any time, as a file on hugetlbfs or a plain file is. For
/// tests of what a server does with memory that vanishes under it.
pub fn unsealed_memory(name: &std::ffi::CStr, len: u64) -> io::Result<OwnedFd> {
    memfd(name, len, false)
}

/// A memfd of `len` zero bytes, open to seals or not.
fn memfd(name: &std::ffi::CStr, len: u64, sealable: bool) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let flags = libc::MFD_CLOEXEC | if sealable { libc::MFD_ALLOW_SEALING } else { 0 };
    // SAFETY: memfd_create with a NUL-terminated name; the result is
    // checked before it is owned.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made and owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: sizing the file we own.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// A non-blocking eventfd, for a server to signal an interrupt on (read
/// it as a `File` of 8-byte counts; an empty one reads `WouldBlock`).
pub fn eventfd() -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: eventfd with flags only; the result is checked before it is
    // owned.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made and owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A `VFIO_USER_DMA_MAP` body.
pub fn dma_map_body(address: u64, size: u64, offset: u64, flags: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(32);
    b.extend_from_slice(&32u32.to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b.extend_from_slice(&address.to_le_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b
}

/// A `VFIO_USER_DEVICE_SET_IRQS` body without data.
pub fn set_irqs_body(flags: u32, index: u32, start: u32, count: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(20);
    b.extend_from_slice(&20u32.to_le_bytes());
    b.extend_from_slice(&flags.to_le_bytes());
    b.extend_from_slice(&index.to_le_bytes());
    b.extend_from_slice(&start.to_le_bytes());
    b.extend_from_slice(&count.to_le_bytes());
    b
}
