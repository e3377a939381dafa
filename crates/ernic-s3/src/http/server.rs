//! The host's HTTP server ([`Server`]): a TCP listener whose accept loop
//! runs on its own thread (`s3-accept`) and serves each connection on a
//! thread of its own (`s3-conn`) with [`serve_connection`].
//!
//! Each accepted socket gets `TCP_NODELAY` and [`Limits::idle_timeout`] as
//! its read and write timeouts, so no connection holds its thread past that
//! long without traffic. Past `max_connections` open at once, a new
//! connection is answered `503 Service Unavailable` and closed without being
//! read. [`ServerHandle::shutdown`] stops accepting, shuts down the open
//! connections' sockets and waits a bounded time for their threads.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::conn::serve_connection;
use super::{Handler, Limits};

/// How often the accept loop looks for a shutdown while no connection
/// arrives.
const ACCEPT_POLL: Duration = Duration::from_millis(10);
/// How long [`ServerHandle::shutdown`] waits for connection threads.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);
/// How long a closing connection keeps reading what the client still sends.
const LINGER: Duration = Duration::from_millis(500);
/// How much a closing connection reads and drops at most.
const LINGER_BYTES: usize = 1 << 20;
/// The answer to a connection past `max_connections`.
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// A bound listener, not yet accepting.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    handler: Arc<dyn Handler>,
    limits: Limits,
    max_connections: usize,
}

/// The open connections: a clone of each socket (to shut it down) by id.
type Open = Arc<Mutex<HashMap<u64, TcpStream>>>;

impl Server {
    /// Binds `addr` (port 0 picks one: see [`Server::local_addr`]).
    /// `max_connections` bounds the connections served at once.
    pub fn bind(
        addr: impl ToSocketAddrs,
        handler: Arc<dyn Handler>,
        limits: Limits,
        max_connections: usize,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        Ok(Server {
            listener,
            addr,
            handler,
            limits,
            max_connections,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Starts the accept loop on its own thread.
    pub fn spawn(self) -> io::Result<ServerHandle> {
        self.listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let open: Open = Arc::default();
        let addr = self.addr;
        let thread = {
            let stop = stop.clone();
            let open = open.clone();
            thread::Builder::new()
                .name("s3-accept".into())
                .spawn(move || self.accept_loop(&stop, &open))?
        };
        Ok(ServerHandle {
            addr,
            stop,
            open,
            thread: Some(thread),
        })
    }

    fn accept_loop(self, stop: &AtomicBool, open: &Open) {
        let mut next_id = 0u64;
        while !stop.load(Ordering::Acquire) {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                // WouldBlock: nothing to accept; anything else (out of
                // descriptors, a connection reset before accept) passes.
                Err(_) => {
                    thread::sleep(ACCEPT_POLL);
                    continue;
                }
            };
            let busy =
                open.lock().unwrap_or_else(PoisonError::into_inner).len() >= self.max_connections;
            if busy {
                refuse(stream);
                continue;
            }
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let id = next_id;
            next_id += 1;
            open.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id, clone);
            let handler = self.handler.clone();
            let limits = self.limits.clone();
            let conn_open = open.clone();
            let spawned = thread::Builder::new()
                .name("s3-conn".into())
                .spawn(move || {
                    let _gone = Gone(conn_open, id);
                    serve(stream, &*handler, &limits);
                });
            if spawned.is_err() {
                if let Some(s) = open
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id)
                {
                    refuse(s);
                }
            }
        }
    }
}

/// Serves one accepted socket (errors end the connection; there is no one
/// to report them to).
fn serve(stream: TcpStream, handler: &dyn Handler, limits: &Limits) {
    let timeout = Some(limits.idle_timeout).filter(|t| !t.is_zero());
    let ready = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_nodelay(true))
        .and_then(|()| stream.set_read_timeout(timeout))
        .and_then(|()| stream.set_write_timeout(timeout));
    if ready.is_ok() {
        let _ = serve_connection(&stream, handler, limits);
    }
    linger(&stream);
}

/// Closes a connection gracefully: no more writes, then what the client
/// still sends (a body the server refused, say) is read and dropped for a
/// moment, up to [`LINGER_BYTES`], so that closing with unread bytes does
/// not reset the connection and destroy the last answer before the client
/// reads it.
fn linger(mut stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    let mut total = 0;
    while total < LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// Answers a connection past the limit with 503 and closes it.
fn refuse(mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = stream.write_all(BUSY);
    let _ = stream.shutdown(Shutdown::Write);
}

/// Takes a connection off the open list when its thread ends.
struct Gone(Open, u64);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.1);
    }
}

/// A running server.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    open: Open,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting (the listener closes), shuts down the open
    /// connections' sockets, and waits up to two seconds for their threads
    /// to end.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for s in self
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            let _ = s.shutdown(Shutdown::Both);
        }
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        while Instant::now() < deadline
            && !self
                .open
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_empty()
        {
            thread::sleep(ACCEPT_POLL);
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop_now();
        }
    }
}
