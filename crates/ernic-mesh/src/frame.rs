//! The mesh's own framing: every message between servers is a 16-byte frame
//! header and a body. The header carries a magic number and a version, which
//! every frame is checked against (registration and handshake included); a
//! connection that sends anything else is closed (one of another version
//! hears why first: see the `auth` module).
//!
//! Bodies of control frames are small, fixed layouts read with
//! [`Reader`]; a body that is short or has trailing bytes is refused. DATA
//! bodies belong to the data path and are not looked into.

use ernic_core::{Gid, NodeId};

/// "ERNM".
pub const MAGIC: u32 = 0x4552_4e4d;
/// Protocol version (2: the same-host offer and by-reference payloads; 3
/// was a withdrawn change; 4: every connection opens with the keyed
/// handshake of the `auth` module). A header of any other version is refused,
/// and the refusal is framed in the peer's version so that it can say why.
pub const VERSION: u16 = 4;
/// Length of the frame header.
pub const HEADER_LEN: usize = 16;
/// Largest body: a data message with a full payload.
pub const MAX_BODY: usize = ernic_core::wire::HEADER_LEN + ernic_core::wire::MAX_PAYLOAD;
/// Node id meaning "none" / "the receiver".
pub const NO_NODE: u16 = 0xffff;

/// Frame kinds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// Worker to manager, after [`Kind::Auth`]: its proof, then boot id,
    /// wanted id, listen port, GIDs.
    Register,
    /// Manager to worker: the id it has.
    Welcome,
    /// Refusal with a reason; the connection closes after it.
    Refuse,
    /// Worker to worker, from the connecting side, after [`Kind::Auth`]:
    /// its proof, id and boot id.
    Hello,
    /// Answer to a hello.
    HelloAck,
    /// Manager to workers: the node table.
    Topology,
    /// A node's GIDs (to the manager: its own; from it: any node's).
    Gids,
    /// Liveness probe.
    Heartbeat,
    /// Answer to a heartbeat.
    HeartbeatAck,
    /// A data path message.
    Data,
    /// Either side of a new connection: a token and the name of this node's
    /// same-host socket (see `same_host`).
    SameHost,
    /// The first frame of every connection, each way: a nonce and whether
    /// the sender has a mesh key (the answer adds its proof; see `auth`).
    Auth,
    /// The last data-carrying frame a sender puts on the connection's TCP
    /// stream: its later data frames come through the shared-memory ring
    /// it handed over (see `same_host`). No body.
    Ring,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for Kind {
    fn from(v: u8) -> Kind {
        match v {
            1 => Kind::Register,
            2 => Kind::Welcome,
            3 => Kind::Refuse,
            4 => Kind::Hello,
            5 => Kind::HelloAck,
            6 => Kind::Topology,
            7 => Kind::Gids,
            8 => Kind::Heartbeat,
            9 => Kind::HeartbeatAck,
            10 => Kind::Data,
            11 => Kind::SameHost,
            12 => Kind::Auth,
            13 => Kind::Ring,
            v => Kind::Unknown(v),
        }
    }
}

impl From<Kind> for u8 {
    fn from(k: Kind) -> u8 {
        match k {
            Kind::Register => 1,
            Kind::Welcome => 2,
            Kind::Refuse => 3,
            Kind::Hello => 4,
            Kind::HelloAck => 5,
            Kind::Topology => 6,
            Kind::Gids => 7,
            Kind::Heartbeat => 8,
            Kind::HeartbeatAck => 9,
            Kind::Data => 10,
            Kind::SameHost => 11,
            Kind::Auth => 12,
            Kind::Ring => 13,
            Kind::Unknown(v) => v,
        }
    }
}

/// A frame header that could not be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Not this protocol.
    #[error("bad magic {0:#010x}: the peer does not speak the ernic mesh protocol")]
    Magic(u32),
    /// Another version of it.
    #[error("protocol version {0}, this node speaks {VERSION}")]
    Version(u16),
    /// A body longer than any frame may have.
    #[error("frame body of {0} bytes exceeds the {MAX_BODY}-byte limit")]
    TooLong(u32),
    /// An unknown kind.
    #[error("unknown frame kind {0}")]
    Kind(u8),
    /// A control body of the wrong shape.
    #[error("malformed {0:?} body")]
    Body(Kind),
    /// The peer's shared-memory ring does not add up, or holds something
    /// that is not a whole frame.
    #[error("the peer's shared-memory ring is inconsistent")]
    Ring,
}

/// A checked frame header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// Body length.
    pub len: u32,
    /// Sending node ([`NO_NODE`] before it has an id).
    pub src: u16,
    /// Destination node, for frames the manager relays ([`NO_NODE`]: the receiver).
    pub dst: u16,
}

impl Header {
    /// Reads and checks a frame header.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Result<Header, FrameError> {
        let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        if magic != MAGIC {
            return Err(FrameError::Magic(magic));
        }
        let version = u16::from_be_bytes([b[4], b[5]]);
        if version != VERSION {
            return Err(FrameError::Version(version));
        }
        let kind = Kind::from(b[6]);
        if let Kind::Unknown(k) = kind {
            return Err(FrameError::Kind(k));
        }
        let len = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
        if len as usize > MAX_BODY {
            return Err(FrameError::TooLong(len));
        }
        Ok(Header {
            kind,
            len,
            src: u16::from_be_bytes([b[12], b[13]]),
            dst: u16::from_be_bytes([b[14], b[15]]),
        })
    }

    /// Writes the header.
    pub fn emit(&self, b: &mut [u8]) {
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&VERSION.to_be_bytes());
        b[6] = self.kind.into();
        b[7] = 0;
        b[8..12].copy_from_slice(&self.len.to_be_bytes());
        b[12..14].copy_from_slice(&self.src.to_be_bytes());
        b[14..16].copy_from_slice(&self.dst.to_be_bytes());
    }
}

/// Builds a whole frame (header and body) in a new buffer.
pub fn frame(kind: Kind, src: u16, dst: u16, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; HEADER_LEN + body.len()];
    Header {
        kind,
        len: body.len() as u32,
        src,
        dst,
    }
    .emit(&mut v);
    v[HEADER_LEN..].copy_from_slice(body);
    v
}

/// Reads a control body field by field; every read checks the length.
pub struct Reader<'a> {
    b: &'a [u8],
    kind: Kind,
}

impl<'a> Reader<'a> {
    /// A reader over the body of a `kind` frame.
    pub fn new(kind: Kind, b: &'a [u8]) -> Reader<'a> {
        Reader { b, kind }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.b.len() < n {
            return Err(FrameError::Body(self.kind));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }

    /// A byte.
    pub fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }

    /// A big-endian u16.
    pub fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A big-endian u64.
    pub fn u64(&mut self) -> Result<u64, FrameError> {
        let mut v = [0u8; 8];
        v.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(v))
    }

    /// `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        self.take(n)
    }

    /// 16 bytes: a GID or an IPv6 (or v4-mapped) address.
    pub fn gid(&mut self) -> Result<Gid, FrameError> {
        Ok(Gid::from_slice(self.take(16)?).expect("take gives 16 bytes"))
    }

    /// The rest, as text (lossy).
    pub fn text(&mut self) -> String {
        let s = String::from_utf8_lossy(self.b).into_owned();
        self.b = &[];
        s
    }

    /// Checks nothing is left over.
    pub fn end(self) -> Result<(), FrameError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Body(self.kind))
        }
    }
}

/// Appends fields to a control body.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// A byte.
    pub fn u8(mut self, v: u8) -> Writer {
        self.0.push(v);
        self
    }

    /// A big-endian u16.
    pub fn u16(mut self, v: u16) -> Writer {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A big-endian u64.
    pub fn u64(mut self, v: u64) -> Writer {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// Raw bytes.
    pub fn bytes(mut self, b: &[u8]) -> Writer {
        self.0.extend_from_slice(b);
        self
    }

    /// 16 bytes.
    pub fn gid(mut self, g: Gid) -> Writer {
        self.0.extend_from_slice(&g.0);
        self
    }

    /// Text.
    pub fn text(mut self, s: &str) -> Writer {
        self.0.extend_from_slice(s.as_bytes());
        self
    }
}

/// A node id as frames carry it.
pub fn node(id: Option<NodeId>) -> u16 {
    id.map_or(NO_NODE, |n| n.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_header_bytes_parse_or_fail_cleanly(b in prop::array::uniform16(any::<u8>())) {
            if let Ok(h) = Header::parse(&b) {
                prop_assert!(h.len as usize <= MAX_BODY);
                let mut back = [0u8; HEADER_LEN];
                h.emit(&mut back);
                prop_assert_eq!(Header::parse(&back), Ok(h));
            }
        }

        #[test]
        fn any_body_reads_or_fails_cleanly(b in prop::collection::vec(any::<u8>(), 0..64)) {
            let mut r = Reader::new(Kind::Gids, &b);
            let _ = (r.u16(), r.u8(), r.u64(), r.gid(), r.text());
        }
    }

    static HELLO: [u8; 16] = [
        0x45, 0x52, 0x4e, 0x4d, 0, 4, 4, 0, 0, 0, 0, 10, 0, 3, 0xff, 0xff,
    ];

    #[test]
    fn header_is_byte_exact() {
        let h = Header {
            kind: Kind::Hello,
            len: 10,
            src: 3,
            dst: NO_NODE,
        };
        let mut b = [0u8; 16];
        h.emit(&mut b);
        assert_eq!(b, HELLO);
        assert_eq!(Header::parse(&HELLO), Ok(h));
    }

    #[test]
    fn foreign_frames_are_refused() {
        let mut b = HELLO;
        b[0] = b'G'; // an HTTP client, say
        assert!(matches!(Header::parse(&b), Err(FrameError::Magic(_))));
        let mut b = HELLO;
        b[5] = 1;
        assert_eq!(Header::parse(&b), Err(FrameError::Version(1)));
        let mut b = HELLO;
        b[6] = 77;
        assert_eq!(Header::parse(&b), Err(FrameError::Kind(77)));
        let mut b = HELLO;
        b[8] = 0x7f;
        assert!(matches!(Header::parse(&b), Err(FrameError::TooLong(_))));
    }

    #[test]
    fn bodies_are_length_checked() {
        let body = Writer::default().u16(7).u64(9).0;
        let mut r = Reader::new(Kind::Hello, &body);
        assert_eq!((r.u16(), r.u64()), (Ok(7), Ok(9)));
        assert!(r.end().is_ok());
        let mut r = Reader::new(Kind::Hello, &body[..5]);
        assert_eq!(r.u16(), Ok(7));
        assert_eq!(r.u64(), Err(FrameError::Body(Kind::Hello)));
        let r = Reader::new(Kind::Welcome, &body);
        assert!(r.end().is_err(), "trailing bytes are refused");
    }
}
