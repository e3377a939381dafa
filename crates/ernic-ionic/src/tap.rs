//! Where the guest's Ethernet frames go: a host TAP interface (`--tap
//! IFNAME`), or one end of a datagram socket pair (an in-process frame
//! sink for tests and embedders: each datagram is one frame).

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};

/// An open TAP interface, non-blocking.
#[derive(Debug)]
pub struct Tap {
    file: File,
    name: String,
}

// linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    pad: [u8; 22],
}

impl Tap {
    /// Opens (creating if needed) the TAP interface `name`; needs
    /// CAP_NET_ADMIN. The interface is brought up.
    pub fn open(name: &str) -> io::Result<Tap> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not an interface name (1 to 15 characters)"),
            ));
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TAP | IFF_NO_PI,
            pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq
        // lays out (name, flags, padding to its 40 bytes); it lives for
        // the call.
        if unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fcntl on our own descriptor.
        unsafe {
            let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
        let tap = Tap {
            file,
            name: name.into(),
        };
        tap.up()?;
        Ok(tap)
    }

    /// Sets the interface's IFF_UP flag.
    fn up(&self) -> io::Result<()> {
        // SAFETY: a datagram socket used only for SIOCGIFFLAGS and
        // SIOCSIFFLAGS on a zeroed ifreq naming our interface; it is
        // closed before returning.
        unsafe {
            let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
            if s < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut req: libc::ifreq = std::mem::zeroed();
            let name = CString::new(self.name.as_str()).expect("checked: no NUL");
            for (d, &c) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
                *d = c as libc::c_char;
            }
            let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req);
            if r == 0 {
                req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                r = libc::ioctl(s, libc::SIOCSIFFLAGS, &mut req);
            }
            let e = io::Error::last_os_error();
            libc::close(s);
            if r < 0 {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The descriptor to wait on.
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Reads one frame into `buf`; `None` when none waits.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.file.read(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sends one frame (dropped, as a wire would, when the interface
    /// cannot take it now).
    pub fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        match self.file.write(frame) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The device's wire: frames out, frames in.
#[derive(Debug)]
pub enum Wire {
    /// A host TAP interface.
    Tap(Tap),
    /// A datagram socket (the other end is the peer's).
    Socket(std::os::unix::net::UnixDatagram),
}

impl Wire {
    /// One end of a fresh socket pair as a wire, and the other end.
    pub fn socket_pair() -> io::Result<(Wire, std::os::unix::net::UnixDatagram)> {
        let (ours, theirs) = std::os::unix::net::UnixDatagram::pair()?;
        ours.set_nonblocking(true)?;
        Ok((Wire::Socket(ours), theirs))
    }

    /// The descriptor to wait on.
    pub fn fd(&self) -> RawFd {
        match self {
            Wire::Tap(t) => t.fd(),
            Wire::Socket(s) => s.as_raw_fd(),
        }
    }

    /// Reads one frame into `buf`; `None` when none waits.
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self {
            Wire::Tap(t) => t.recv(buf),
            Wire::Socket(s) => match s.recv(buf) {
                Ok(n) => Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
                Err(e) => Err(e),
            },
        }
    }

    /// Sends one frame; `false` when the wire could not take it now (the
    /// frame is dropped, as on a real link).
    pub fn send(&mut self, frame: &[u8]) -> io::Result<bool> {
        match self {
            Wire::Tap(t) => t.send(frame),
            Wire::Socket(s) => match s.send(frame) {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
                Err(e) => Err(e),
            },
        }
    }
}

/// An in-process host on the device's Ethernet segment (seed 001, "The
/// Ethernet Side"): it is offered every frame the guest transmits before
/// the wire sees it, and claims those addressed to it; it sends frames to
/// the guest by queueing them, and the device delivers them after the
/// wire's. Unlike a wire frame, a queued frame that finds no receive
/// buffer posted waits for one, and so do the frames behind it. The S3
/// store's TCP/IP stack is one.
pub trait FrameEndpoint: Send + std::fmt::Debug {
    /// A frame the guest sent: `true` if the endpoint takes it (the wire
    /// never sees it).
    fn claim_tx(&mut self, frame: &[u8]) -> bool;
    /// The next frame for the guest, if one waits; it stays first until
    /// [`pop_rx`](Self::pop_rx).
    fn peek_rx(&mut self) -> Option<&[u8]>;
    /// The frame [`peek_rx`](Self::peek_rx) gave was delivered.
    fn pop_rx(&mut self);
    /// A descriptor that is readable while frames wait for the guest (the
    /// device's thread waits on it with its other descriptors).
    fn fd(&self) -> RawFd;
}
