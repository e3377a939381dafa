//! The handshake every new connection begins with: a worker registering
//! with the manager, a worker connecting to a peer, and a process proving
//! itself on a node's same-host socket. Nothing about the connecting side
//! is believed, and no id is given out, until it is done.
//!
//! ```text
//! initiator                                   responder
//!   Auth { nonce_i, keyed }            ->
//!                                      <-     Auth { nonce_r, keyed, mac_r }   (or Refuse)
//!   KIND { mac_i, payload }            ->     (Register, Hello or SameHost)
//!
//! mac_r = HMAC-SHA256(key, "ernic-mesh 4 responder" | nonce_i | nonce_r)
//! mac_i = HMAC-SHA256(key, "ernic-mesh 4 initiator" | nonce_i | nonce_r | KIND | payload)
//! ```
//!
//! Both sides prove the key (a node never joins a mesh it cannot tell from
//! an impostor's), each over a nonce the other chose, so a recorded
//! handshake replays to nothing; the labels keep one side's proof from
//! serving as the other's. MACs are compared in constant time (`hmac`'s
//! `verify_slice`). Without a key the MAC fields are zeros and unchecked; a
//! keyed node and a keyless one refuse each other, each saying why.
//!
//! The whole handshake has one deadline (not one per read): a peer that
//! drips a byte at a time is cut when it passes. A header of another
//! protocol version is answered with a refusal in *that* version's framing,
//! which every version's parser reads (magic, version, kind 3 = Refuse and
//! its body have never changed), so an old node says why it was refused.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::frame::{self, FrameError, HEADER_LEN, Header, Kind, MAGIC, NO_NODE, Reader, Writer};
use crate::key::MeshKey;
use crate::node::AdmitError;
use crate::sys;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of a nonce.
pub(crate) const NONCE: usize = 16;
/// Bytes of a MAC.
pub(crate) const MAC: usize = 32;
/// Reasons a refusal is logged under ([`HandshakeError::reason`]).
pub(crate) const REASONS: usize = 6;
/// Longest refusal read in a handshake.
const MAX_REFUSAL: usize = 1024;

/// Refusal codes (the first field of a [`Kind::Refuse`] body).
pub(crate) mod code {
    /// The table is full, or no id is free.
    pub const FULL: u16 = 1;
    /// A frame the handshake did not expect.
    pub const UNEXPECTED: u16 = 2;
    /// Another protocol version.
    pub const VERSION: u16 = 3;
    /// The receiver requires a key the sender does not have.
    pub const NO_KEY: u16 = 4;
    /// The sender's proof of the key failed.
    pub const WRONG_KEY: u16 = 5;
    /// Too many connections are in their handshake.
    pub const BUSY: u16 = 6;
    /// The sender has a key, the receiver none.
    pub const KEYLESS: u16 = 7;
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The socket failed.
    #[error("the connection failed during the handshake")]
    Io(#[source] io::Error),
    /// The deadline passed.
    #[error("the handshake was not done within {0:?}")]
    Deadline(Duration),
    /// The peer closed the connection.
    #[error(
        "the peer closed the connection during the handshake (it may run another ernic version, or have refused this node's mesh key: see its log)"
    )]
    Closed,
    /// A header that is not this protocol.
    #[error(transparent)]
    Frame(FrameError),
    /// A header of another version of this protocol.
    #[error(
        "the peer speaks mesh protocol version {theirs}, this node version {}: run the same ernic on every node",
        frame::VERSION
    )]
    Version {
        /// The peer's version.
        theirs: u16,
    },
    /// A frame the handshake did not expect here.
    #[error("the peer sent a {0:?} frame where the handshake expected another")]
    Unexpected(Kind),
    /// The peer has no key, this node has one.
    #[error(
        "the peer has no mesh key and this node requires one: give every node the same ERNIC_MESH_KEY_FILE"
    )]
    PeerKeyless,
    /// This node has no key, the peer requires one.
    #[error(
        "the peer requires a mesh key and this node has none: set ERNIC_MESH_KEY_FILE (or ERNIC_MESH_KEY) to the mesh's key"
    )]
    NoKey,
    /// The peer's proof of the key failed.
    #[error("the peer holds a different mesh key: give every node the same ERNIC_MESH_KEY_FILE")]
    WrongKey,
    /// The peer refused, and said why (its words, off the wire).
    #[error("refused by the peer: {0}")]
    Refused(String),
    /// The manager's host name resolves to no address.
    #[error("{host} resolves to no address")]
    Unresolved {
        /// The name, as the spec gives it.
        host: String,
    },
    /// This worker has no id yet, so it cannot say hello to a peer.
    #[error("this node is not registered yet")]
    NotRegistered,
    /// The topology gives the peer no address to connect to.
    #[error("node {peer} has no address to connect to")]
    NoAddress {
        /// The peer's id.
        peer: u16,
    },
    /// This node refused: more connections are in their handshake than it
    /// takes at once.
    #[error("{max_handshakes} connections are in their handshake here already; retry")]
    Busy {
        /// The cap ([`MeshConfig::max_handshakes`](crate::MeshConfig::max_handshakes)).
        max_handshakes: usize,
    },
    /// The manager's table refused the registration.
    #[error(transparent)]
    NotAdmitted(#[from] AdmitError),
}

impl HandshakeError {
    /// The refusal to send the peer for this failure, if it is one the peer
    /// should hear about; worded as the peer will read it ("refused by the
    /// peer: ...").
    fn refusal(&self) -> Option<(u16, &'static str)> {
        Some(match self {
            HandshakeError::PeerKeyless => (
                code::NO_KEY,
                "the peer requires a mesh key and this node has none: set ERNIC_MESH_KEY_FILE (or ERNIC_MESH_KEY) to the mesh's key",
            ),
            HandshakeError::NoKey => (
                code::KEYLESS,
                "the peer has no mesh key and this node has one: give every node the same ERNIC_MESH_KEY_FILE",
            ),
            HandshakeError::WrongKey => (
                code::WRONG_KEY,
                "the peer holds a different mesh key: give every node the same ERNIC_MESH_KEY_FILE",
            ),
            HandshakeError::Unexpected(_) => (
                code::UNEXPECTED,
                "the peer did not expect that frame in the handshake",
            ),
            _ => return None,
        })
    }

    /// Which of [`REASONS`] reasons a refusal gives, for the log's rate
    /// limit (each is said once a second at most).
    pub(crate) fn reason(&self) -> usize {
        match self {
            HandshakeError::PeerKeyless => 1,
            HandshakeError::NoKey => 2,
            HandshakeError::WrongKey => 3,
            HandshakeError::Version { .. } => 4,
            HandshakeError::Refused(_)
            | HandshakeError::Busy { .. }
            | HandshakeError::NotAdmitted(_) => 5,
            _ => 0,
        }
    }

    /// Whether it is about the key or the version (worth a line on a
    /// default log), not a stray connection's noise.
    pub fn about_the_key(&self) -> bool {
        matches!(
            self,
            HandshakeError::PeerKeyless
                | HandshakeError::NoKey
                | HandshakeError::WrongKey
                | HandshakeError::Version { .. }
                | HandshakeError::Refused(_)
                | HandshakeError::Busy { .. }
                | HandshakeError::NotAdmitted(_)
        )
    }
}

/// A stream the handshake runs on: TCP or a Unix socket.
pub(crate) trait Stream: Read + Write {
    fn read_timeout(&self, t: Duration) -> io::Result<()>;
    fn write_timeout(&self, t: Duration) -> io::Result<()>;
}

impl Stream for TcpStream {
    fn read_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))
    }
    fn write_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(t))
    }
}

impl Stream for UnixStream {
    fn read_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(t))
    }
    fn write_timeout(&self, t: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(t))
    }
}

/// The one deadline of a handshake.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    end: Instant,
    limit: Duration,
}

impl Deadline {
    pub fn after(limit: Duration) -> Deadline {
        Deadline {
            end: Instant::now() + limit,
            limit,
        }
    }

    /// Time left (at least a millisecond: a zero timeout means "none" to
    /// the socket), or the deadline's error.
    /// What is left of it (at least a millisecond, as a socket timeout
    /// may not be zero).
    pub fn remaining(&self) -> Duration {
        self.end
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    }

    fn left(&self) -> Result<Duration, HandshakeError> {
        let left = self.end.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(1) {
            return Err(HandshakeError::Deadline(self.limit));
        }
        Ok(left)
    }
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Fills `buf`, each read bounded by what is left of the deadline.
pub(crate) fn read_exact(
    s: &mut impl Stream,
    buf: &mut [u8],
    d: Deadline,
) -> Result<(), HandshakeError> {
    let mut got = 0;
    while got < buf.len() {
        s.read_timeout(d.left()?).map_err(HandshakeError::Io)?;
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(HandshakeError::Closed),
            Ok(n) => got += n,
            Err(e) if timed_out(&e) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                return Err(HandshakeError::Closed);
            }
            Err(e) => return Err(HandshakeError::Io(e)),
        }
    }
    Ok(())
}

/// Writes `buf` whole within the deadline.
pub(crate) fn write_all(
    s: &mut impl Stream,
    buf: &[u8],
    d: Deadline,
) -> Result<(), HandshakeError> {
    let mut sent = 0;
    while sent < buf.len() {
        s.write_timeout(d.left()?).map_err(HandshakeError::Io)?;
        match s.write(&buf[sent..]) {
            Ok(0) => return Err(HandshakeError::Closed),
            Ok(n) => sent += n,
            Err(e) if timed_out(&e) => {}
            Err(e) => return Err(HandshakeError::Io(e)),
        }
    }
    Ok(())
}

/// Reads one frame whose body is at most `max` bytes. A header of another
/// version is answered with a refusal that version reads.
pub(crate) fn read_frame(
    s: &mut impl Stream,
    max: usize,
    d: Deadline,
) -> Result<(Header, Vec<u8>), HandshakeError> {
    let mut h = [0u8; HEADER_LEN];
    read_exact(s, &mut h, d)?;
    let hdr = match Header::parse(&h) {
        Ok(hdr) => hdr,
        Err(FrameError::Version(theirs)) => {
            let e = HandshakeError::Version { theirs };
            let _ = write_all(s, &refusal_in(theirs, code::VERSION, &e.to_string()), d);
            return Err(e);
        }
        Err(e) => return Err(HandshakeError::Frame(e)),
    };
    // A refusal may always say why, in a line.
    let max = if hdr.kind == Kind::Refuse {
        max.max(MAX_REFUSAL)
    } else {
        max
    };
    if hdr.len as usize > max {
        return Err(HandshakeError::Frame(FrameError::TooLong(hdr.len)));
    }
    let mut body = vec![0u8; hdr.len as usize];
    read_exact(s, &mut body, d)?;
    if hdr.kind == Kind::Refuse {
        let mut r = Reader::new(Kind::Refuse, &body);
        r.u16().map_err(HandshakeError::Frame)?;
        return Err(HandshakeError::Refused(r.text()));
    }
    Ok((hdr, body))
}

/// A refusal framed in protocol version `version`.
fn refusal_in(version: u16, code: u16, why: &str) -> Vec<u8> {
    let body = Writer::default().u16(code).text(why).0;
    let mut f = vec![0u8; HEADER_LEN];
    f[0..4].copy_from_slice(&MAGIC.to_be_bytes());
    f[4..6].copy_from_slice(&version.to_be_bytes());
    f[6] = Kind::Refuse.into();
    f[8..12].copy_from_slice(&(body.len() as u32).to_be_bytes());
    f[12..14].copy_from_slice(&NO_NODE.to_be_bytes());
    f[14..16].copy_from_slice(&NO_NODE.to_be_bytes());
    f.extend_from_slice(&body);
    f
}

/// A refusal in this node's version.
pub(crate) fn refusal(src: u16, code: u16, why: &str) -> Vec<u8> {
    frame::frame(
        Kind::Refuse,
        src,
        NO_NODE,
        &Writer::default().u16(code).text(why).0,
    )
}

/// Tells the peer why, when the failure is one it should hear about
/// (best effort: the connection is closing anyway).
pub(crate) fn tell(s: &mut impl Stream, e: &HandshakeError, src: u16, d: Deadline) {
    if let Some((c, why)) = e.refusal() {
        let _ = write_all(s, &refusal(src, c, why), d);
    }
}

/// Both sides' nonces, once the first exchange is done.
pub(crate) struct Session<'k> {
    key: Option<&'k MeshKey>,
    nonce_i: [u8; NONCE],
    nonce_r: [u8; NONCE],
}

fn hmac(key: &MeshKey) -> HmacSha256 {
    HmacSha256::new_from_slice(key.bytes()).expect("HMAC takes a key of any length")
}

const LABEL_R: &[u8] = b"ernic-mesh 4 responder";
const LABEL_I: &[u8] = b"ernic-mesh 4 initiator";

impl Session<'_> {
    fn responder_mac(&self) -> HmacSha256 {
        let mut m = hmac(self.key.expect("keyed"));
        m.update(LABEL_R);
        m.update(&self.nonce_i);
        m.update(&self.nonce_r);
        m
    }

    fn initiator_mac(&self, kind: Kind, payload: &[u8]) -> HmacSha256 {
        let mut m = hmac(self.key.expect("keyed"));
        m.update(LABEL_I);
        m.update(&self.nonce_i);
        m.update(&self.nonce_r);
        m.update(&[u8::from(kind)]);
        m.update(payload);
        m
    }

    /// The initiator's last frame: `kind` with its proof and `payload`.
    pub fn finish(&self, kind: Kind, src: u16, dst: u16, payload: &[u8]) -> Vec<u8> {
        let mac: [u8; MAC] = match self.key {
            Some(_) => self
                .initiator_mac(kind, payload)
                .finalize()
                .into_bytes()
                .into(),
            None => [0; MAC],
        };
        frame::frame(
            kind,
            src,
            dst,
            &Writer::default().bytes(&mac).bytes(payload).0,
        )
    }

    /// The responder checks the initiator's last frame; returns its payload.
    pub fn check<'b>(&self, hdr: &Header, body: &'b [u8]) -> Result<&'b [u8], HandshakeError> {
        if body.len() < MAC {
            return Err(HandshakeError::Frame(FrameError::Body(hdr.kind)));
        }
        let (mac, payload) = body.split_at(MAC);
        if self.key.is_some()
            && self
                .initiator_mac(hdr.kind, payload)
                .verify_slice(mac)
                .is_err()
        {
            return Err(HandshakeError::WrongKey);
        }
        Ok(payload)
    }
}

fn nonce() -> Result<[u8; NONCE], HandshakeError> {
    sys::random16().map_err(HandshakeError::Io)
}

/// The initiator's first exchange: sends its nonce, checks the responder's
/// proof. On a failure the peer is told why where it should be.
pub(crate) fn initiate<'k>(
    s: &mut impl Stream,
    key: Option<&'k MeshKey>,
    src: u16,
    d: Deadline,
) -> Result<Session<'k>, HandshakeError> {
    let nonce_i = nonce()?;
    let hello = Writer::default()
        .bytes(&nonce_i)
        .u8(u8::from(key.is_some()))
        .0;
    write_all(s, &frame::frame(Kind::Auth, src, NO_NODE, &hello), d)?;
    let (hdr, body) = read_frame(s, NONCE + 1 + MAC, d)?;
    if hdr.kind != Kind::Auth {
        let e = HandshakeError::Unexpected(hdr.kind);
        tell(s, &e, src, d);
        return Err(e);
    }
    let mut r = Reader::new(Kind::Auth, &body);
    let mut nonce_r = [0u8; NONCE];
    nonce_r.copy_from_slice(r.bytes(NONCE).map_err(HandshakeError::Frame)?);
    let keyed = r.u8().map_err(HandshakeError::Frame)? != 0;
    let mac = r.bytes(MAC).map_err(HandshakeError::Frame)?;
    r.end().map_err(HandshakeError::Frame)?;
    let session = Session {
        key,
        nonce_i,
        nonce_r,
    };
    let verdict = match (key.is_some(), keyed) {
        (true, false) => Err(HandshakeError::PeerKeyless),
        (false, true) => Err(HandshakeError::NoKey),
        (false, false) => Ok(()),
        (true, true) => session
            .responder_mac()
            .verify_slice(mac)
            .map_err(|_| HandshakeError::WrongKey),
    };
    if let Err(e) = verdict {
        tell(s, &e, src, d);
        return Err(e);
    }
    Ok(session)
}

/// The responder's first exchange: reads the initiator's nonce, answers
/// with its own and its proof (or refuses a keyless initiator).
pub(crate) fn respond<'k>(
    s: &mut impl Stream,
    key: Option<&'k MeshKey>,
    src: u16,
    d: Deadline,
) -> Result<Session<'k>, HandshakeError> {
    let (hdr, body) = read_frame(s, NONCE + 1, d)?;
    if hdr.kind != Kind::Auth {
        let e = HandshakeError::Unexpected(hdr.kind);
        tell(s, &e, src, d);
        return Err(e);
    }
    let mut r = Reader::new(Kind::Auth, &body);
    let mut nonce_i = [0u8; NONCE];
    nonce_i.copy_from_slice(r.bytes(NONCE).map_err(HandshakeError::Frame)?);
    let keyed = r.u8().map_err(HandshakeError::Frame)? != 0;
    r.end().map_err(HandshakeError::Frame)?;
    if key.is_some() && !keyed {
        let e = HandshakeError::PeerKeyless;
        tell(s, &e, src, d);
        return Err(e);
    }
    // A keyed initiator at a keyless node hears "no key" from this answer
    // and says so; this side then reads its refusal.
    let session = Session {
        key,
        nonce_i,
        nonce_r: nonce()?,
    };
    let mac: [u8; MAC] = match key {
        Some(_) => session.responder_mac().finalize().into_bytes().into(),
        None => [0; MAC],
    };
    let answer = Writer::default()
        .bytes(&session.nonce_r)
        .u8(u8::from(key.is_some()))
        .bytes(&mac)
        .0;
    write_all(s, &frame::frame(Kind::Auth, src, NO_NODE, &answer), d)?;
    Ok(session)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &[u8]) -> MeshKey {
        MeshKey::new(k, "test").unwrap()
    }

    /// Runs both sides over a socket pair; returns what each concluded.
    fn run(
        ki: Option<MeshKey>,
        kr: Option<MeshKey>,
    ) -> (Result<(), HandshakeError>, Result<Vec<u8>, HandshakeError>) {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let d = Deadline::after(Duration::from_secs(5));
        let t = std::thread::spawn(move || {
            let s = respond(&mut b, kr.as_ref(), 0, d)?;
            let (h, body) = read_frame(&mut b, 4096, d)?;
            match s.check(&h, &body) {
                Ok(p) => Ok(p.to_vec()),
                Err(e) => {
                    tell(&mut b, &e, 0, d);
                    Err(e)
                }
            }
        });
        let i = initiate(&mut a, ki.as_ref(), NO_NODE, d).map(|s| {
            let _ = write_all(&mut a, &s.finish(Kind::Hello, 1, 2, b"payload"), d);
        });
        (i, t.join().unwrap())
    }

    #[test]
    fn the_same_key_or_none_passes_and_every_mismatch_fails_on_both_sides() {
        let (i, r) = run(
            Some(key(b"0123456789abcdef")),
            Some(key(b"0123456789abcdef")),
        );
        assert!(i.is_ok());
        assert_eq!(r.unwrap(), b"payload");
        let (i, r) = run(None, None);
        assert!(i.is_ok());
        assert_eq!(r.unwrap(), b"payload");
        let (i, r) = run(
            Some(key(b"0123456789abcdef")),
            Some(key(b"0123456789abcdeX")),
        );
        assert!(matches!(i, Err(HandshakeError::WrongKey)), "{i:?}");
        assert!(
            matches!(r, Err(HandshakeError::Refused(ref t)) if t.contains("different mesh key")),
            "{r:?}"
        );
        let (i, r) = run(None, Some(key(b"0123456789abcdef")));
        assert!(
            matches!(i, Err(HandshakeError::Refused(ref t)) if t.contains("requires a mesh key")),
            "{i:?}"
        );
        assert!(matches!(r, Err(HandshakeError::PeerKeyless)));
        let (i, r) = run(Some(key(b"0123456789abcdef")), None);
        assert!(matches!(i, Err(HandshakeError::PeerKeyless)), "{i:?}");
        assert!(
            matches!(r, Err(HandshakeError::Refused(ref t)) if t.contains("requires a mesh key")),
            "{r:?}"
        );
    }

    #[test]
    fn a_proof_is_bound_to_both_nonces_and_the_payload() {
        let k = key(b"0123456789abcdef");
        let s = Session {
            key: Some(&k),
            nonce_i: [1; NONCE],
            nonce_r: [2; NONCE],
        };
        let f = s.finish(Kind::Register, 1, 0, b"body");
        let h = Header::parse(f[..HEADER_LEN].try_into().unwrap()).unwrap();
        assert_eq!(s.check(&h, &f[HEADER_LEN..]).unwrap(), b"body");
        // Replayed against another responder nonce, or with another payload.
        let other = Session {
            nonce_r: [3; NONCE],
            ..Session { key: Some(&k), ..s }
        };
        assert!(matches!(
            other.check(&h, &f[HEADER_LEN..]),
            Err(HandshakeError::WrongKey)
        ));
        let mut tampered = f.clone();
        *tampered.last_mut().unwrap() ^= 1;
        let s = Session {
            key: Some(&k),
            nonce_i: [1; NONCE],
            nonce_r: [2; NONCE],
        };
        assert!(matches!(
            s.check(&h, &tampered[HEADER_LEN..]),
            Err(HandshakeError::WrongKey)
        ));
    }

    #[test]
    fn an_old_version_is_refused_in_its_own_framing() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let mut old = frame::frame(Kind::Register, NO_NODE, 0, &[0; 14]);
        old[5] = 2;
        a.write_all(&old).unwrap();
        let d = Deadline::after(Duration::from_secs(5));
        let e = read_frame(&mut b, 4096, d).unwrap_err();
        assert!(matches!(e, HandshakeError::Version { theirs: 2 }));
        let mut back = [0u8; HEADER_LEN];
        a.read_exact(&mut back).unwrap();
        assert_eq!(&back[4..6], &2u16.to_be_bytes(), "in version 2's framing");
        assert_eq!(back[6], 3, "a refusal");
        let len = u32::from_be_bytes(back[8..12].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len];
        a.read_exact(&mut body).unwrap();
        let text = String::from_utf8_lossy(&body[2..]).into_owned();
        assert!(
            text.contains("version 2") && text.contains("version 4"),
            "{text}"
        );
    }
}
