//! The server's socket I/O: a message is read as its bytes come, replies
//! the client does not take at once are queued, and the loop waits in
//! ppoll(2) with the device's next timer as the timeout. Nothing here
//! blocks on the client.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use super::{COLD_WAIT, Device, HOT, Input, Io, Server};
use crate::proto::{self, HEADER_LEN, Header};
use crate::sock;

impl<D: Device> Server<D> {
    /// Bytes of replies the client has not taken.
    pub(super) fn queued(&self) -> usize {
        self.out.len() - self.out_head
    }

    /// Reads what has come of the current message, up to its end.
    pub(super) fn read_some(&mut self, fd: RawFd) -> io::Result<Input> {
        loop {
            if self.have < HEADER_LEN {
                let n = match sock::recv_some(fd, &mut self.head[self.have..], &mut self.in_fds) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Input::Pending),
                    Err(e) => return Err(e),
                };
                if n == 0 {
                    if self.have == 0 {
                        return Ok(Input::Closed);
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("the client left after {} bytes of a header", self.have),
                    ));
                }
                if self.have == 0 {
                    self.in_since = Some(Instant::now());
                }
                self.have += n;
                if self.have < HEADER_LEN {
                    continue;
                }
                let h = Header::parse(&self.head);
                if let Err(e) = proto::check_header(&h, self.ours.max_data_xfer_size) {
                    // The size cannot be trusted: answer, then stop reading.
                    let _ = self.send_reply(fd, h.error_reply(e.errno()).to_bytes(), &[], None);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
                }
                // check_header bounds the size by max_message.
                self.buf.resize(h.size as usize - HEADER_LEN, 0);
            }
            let want = self.buf.len();
            let got = self.have - HEADER_LEN;
            if got == want {
                self.have = 0;
                self.in_since = None;
                return Ok(Input::Message(Header::parse(&self.head)));
            }
            let n = match sock::recv_some(fd, &mut self.buf[got..], &mut self.in_fds) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Input::Pending),
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the client left after {got} of a message's {want} body bytes"),
                ));
            }
            self.have += n;
        }
    }

    /// Sends a reply, or what the socket does not take of it now into the
    /// queue; `give` goes with its first byte.
    pub(super) fn send_reply(
        &mut self,
        fd: RawFd,
        head: [u8; HEADER_LEN],
        body: &[u8],
        give: Option<RawFd>,
    ) -> io::Result<()> {
        // SAFETY: a descriptor the device keeps open for its life
        // (Device::region_fd), borrowed for this call.
        let give = give.map(|g| unsafe { BorrowedFd::borrow_raw(g) });
        let mut sent = 0;
        if self.queued() == 0 {
            let fds: &[&dyn AsRawFd] = match &give {
                Some(g) => &[g],
                None => &[],
            };
            sent = match sock::send_some(fd, &[&head, body], 0, fds) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(e) => return Err(e),
            };
            if sent == HEADER_LEN + body.len() {
                return Ok(());
            }
            self.out.clear();
            self.out_head = 0;
            self.out_since = Instant::now();
        }
        if sent == 0 {
            if let Some(g) = give {
                self.out_fds
                    .push_back((self.out.len(), g.try_clone_to_owned()?));
            }
        }
        let at = sent.min(HEADER_LEN);
        self.out.extend_from_slice(&head[at..]);
        self.out
            .extend_from_slice(&body[sent.saturating_sub(HEADER_LEN)..]);
        Ok(())
    }

    /// Writes what the socket takes of the queue now.
    pub(super) fn flush(&mut self, fd: RawFd) -> io::Result<()> {
        while self.out_head < self.out.len() {
            // Up to the next message that carries descriptors, which must
            // go with its first byte.
            let (end, give) = match self.out_fds.front() {
                Some((at, f)) if *at == self.out_head => (
                    self.out_fds
                        .get(1)
                        .map_or(self.out.len(), |(next, _)| *next),
                    Some(f),
                ),
                Some((at, _)) => (*at, None),
                None => (self.out.len(), None),
            };
            let fds: &[&dyn AsRawFd] = match &give {
                Some(g) => &[*g],
                None => &[],
            };
            let n = match sock::send_some(fd, &[&self.out[self.out_head..end]], 0, fds) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            if give.is_some() {
                self.out_fds.pop_front();
            }
            self.out_head += n;
            self.out_since = Instant::now();
        }
        if self.out_head == self.out.len() {
            self.out.clear();
            self.out_head = 0;
        } else if self.out_head >= self.out.len() / 2 {
            // Keep the queue's buffer from growing: drop what was sent.
            self.out.drain(..self.out_head);
            for (at, _) in &mut self.out_fds {
                *at -= self.out_head;
            }
            self.out_head = 0;
        }
        Ok(())
    }

    /// Logs each guarded window whose memory vanished since the last look.
    pub(super) fn report_vanished(&mut self) {
        let f = crate::guard::faults();
        if f == self.faults_seen {
            return;
        }
        self.faults_seen = f;
        while let Some((address, size)) = self.dma.take_vanished() {
            tracing::warn!(
                address,
                size,
                "the memory behind DMA window {address:#x} ({size} bytes) vanished: the client \
                 shrank its file; DMA there fails from now on"
            );
        }
    }

    /// Waits until the client's socket has one of `events` (or a hangup
    /// or error), serving the device's own descriptors, timers and polled
    /// memory meanwhile (an idle device sleeps; see the module's note on
    /// polled devices); answers the socket's events, or 0 at `deadline`.
    pub(super) fn wait(
        &mut self,
        sock: RawFd,
        events: i16,
        deadline: Option<Instant>,
    ) -> io::Result<i16> {
        loop {
            let now = Instant::now();
            if deadline.is_some_and(|d| d <= now) {
                return Ok(0);
            }
            let polled = self.device.polled();
            if polled {
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                if self.device.poll(&mut io) {
                    self.busy = Instant::now();
                }
            }
            self.fds.clear();
            self.device.wait_fds(&mut self.fds);
            let tick = self.device.next_tick();
            if tick == Some(Duration::ZERO) {
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.tick(&mut io);
                continue;
            }
            // Busy: look again at once (a wakeup from poll costs tens of
            // microseconds on a small machine). Idle: sleep until something
            // comes, or, with polled memory, for growing naps.
            let idle = self.busy.elapsed();
            let nap = if idle < HOT {
                Some(Duration::ZERO)
            } else if polled {
                Some((idle / 4).min(COLD_WAIT))
            } else {
                None
            };
            let until = deadline.map(|d| d.saturating_duration_since(now));
            let timeout = [tick, nap, until].into_iter().flatten().min();
            self.polls.clear();
            self.polls.push(libc::pollfd {
                fd: sock,
                events,
                revents: 0,
            });
            self.polls.extend(self.fds.iter().map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            }));
            // Microseconds matter for a polled device, so ppoll's timespec.
            let ts = timeout.map(|t| {
                let t = t.min(Duration::from_secs(60));
                libc::timespec {
                    tv_sec: t.as_secs() as libc::time_t,
                    tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
                }
            });
            // SAFETY: ppoll over a live array of pollfd of the given length,
            // with a live timespec or none, and no signal mask change.
            let n = unsafe {
                libc::ppoll(
                    self.polls.as_mut_ptr(),
                    self.polls.len() as libc::nfds_t,
                    ts.as_ref().map_or(std::ptr::null(), |t| t as *const _),
                    std::ptr::null(),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.polls[1..].iter().any(|p| p.revents != 0) {
                let mut io = Io {
                    dma: &mut self.dma,
                    irqs: &mut self.irqs,
                };
                self.device.ready(&mut io);
                self.busy = Instant::now();
            }
            if self.polls[0].revents != 0 {
                self.busy = Instant::now();
                return Ok(self.polls[0].revents);
            }
        }
    }
}
