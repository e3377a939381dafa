//! The control messages, the bodies a control rail carries (little
//! endian, kind in byte 0): CONN (a sender asks a listener for a
//! connection, naming its rails), CONN_RESP (the listener's side answers
//! with its own), CTRL (a receive was posted: where, and its key on each
//! data rail) and SIZE (a message shorter than its receive: the bytes
//! sent). [`decode_control`] bounds every length and count from the peer
//! before anything acts on it; after it succeeds nothing can index out of
//! bounds.

use super::{HANDLE_LEN, MAX_CONTROL_RAILS, MAX_SEGMENTS, SEQ_BITS};

use crate::config::MAX_RAILS;

pub(super) const CONN: u8 = 1;
pub(super) const CONN_RESP: u8 = 2;
pub(super) const CTRL: u8 = 3;
pub(super) const SIZE: u8 = 4;

/// Why bytes from a peer (a listen handle, a control message) were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A handle of the wrong size.
    #[error("a handle of {0} bytes: a listen handle has {HANDLE_LEN}")]
    HandleLen(usize),
    /// The handle's endpoint name is empty or runs past the handle.
    #[error("the handle's endpoint name of {0} bytes does not fit a handle")]
    HandleName(usize),
    /// An empty control message.
    #[error("an empty control message")]
    Empty,
    /// A kind this protocol does not have.
    #[error("control message kind {0} is none of CONN, CONN_RESP, CTRL, SIZE")]
    Kind(u8),
    /// A message shorter than its kind needs.
    #[error("a {kind} message of {got} bytes is cut short")]
    Short {
        /// The message's kind.
        kind: &'static str,
        /// Its length.
        got: usize,
    },
    /// More rails than an endpoint can have.
    #[error("{data} data and {control} control rails: at most {MAX_RAILS} and {MAX_CONTROL_RAILS}")]
    Rails {
        /// Data rails named.
        data: usize,
        /// Control rails named.
        control: usize,
    },
    /// A rail name that runs past the end of the message.
    #[error("rail name {index} runs past the end of the message")]
    Name {
        /// Which name.
        index: usize,
    },
    /// More keys than rails.
    #[error("{0} keys: at most {MAX_RAILS}")]
    Keys(usize),
    /// A sequence number wider than the protocol's 10 bits.
    #[error("sequence number {0} does not fit 10 bits")]
    Seq(u32),
    /// More segments than a message can have.
    #[error("{0} segments: at most {MAX_SEGMENTS}")]
    Segments(u32),
}

/// The rail names a CONN or CONN_RESP carries, borrowed from it (no
/// allocation): at most [`MAX_CONTROL_RAILS`] and [`MAX_RAILS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RailNames<'a> {
    pub(super) ctl: [&'a [u8]; MAX_CONTROL_RAILS],
    pub(super) nctl: usize,
    pub(super) data: [&'a [u8]; MAX_RAILS],
    pub(super) ndata: usize,
}

impl<'a> RailNames<'a> {
    /// The control rails' names.
    pub fn control(&self) -> &[&'a [u8]] {
        &self.ctl[..self.nctl]
    }
    /// The data rails' names.
    pub fn data(&self) -> &[&'a [u8]] {
        &self.data[..self.ndata]
    }
}

/// A CTRL: where the receiver's buffer is, and its key on each data rail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtrlMsg {
    /// The sender's comm id.
    pub comm: u32,
    /// The message's sequence number (10 bits).
    pub seq: u16,
    /// The buffer's address (or offset into its registration).
    pub addr: u64,
    /// The buffer's length.
    pub len: u64,
    /// Keys given (at most [`MAX_RAILS`]).
    pub nkeys: u8,
    /// One key per data rail; the first `nkeys` count.
    pub keys: [u64; MAX_RAILS],
}

/// A control message, decoded and bounded; see [`decode_control`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control<'a> {
    /// A sender asks a listener for a connection.
    Conn {
        /// The listen comm it names.
        listen: u32,
        /// The sender's comm id.
        sender: u32,
        /// The sender's rails.
        names: RailNames<'a>,
    },
    /// The listener's side answers.
    ConnResp {
        /// The sender's comm id.
        sender: u32,
        /// The receiver's comm id.
        receiver: u32,
        /// The receiver's rails.
        names: RailNames<'a>,
    },
    /// A receive was posted.
    Ctrl(CtrlMsg),
    /// A message shorter than its receive: its size, as one more segment.
    Size {
        /// The receiver's comm id.
        comm: u32,
        /// The message's sequence number.
        seq: u16,
        /// Its segments, this one included.
        nseg: u8,
        /// The bytes sent.
        size: u64,
    },
}

pub(super) fn names_of<'a>(kind: &'static str, m: &'a [u8]) -> Result<RailNames<'a>, DecodeError> {
    let short = || DecodeError::Short { kind, got: m.len() };
    let (&nd, rest) = m.split_first().ok_or_else(short)?;
    let (&nc, mut rest) = rest.split_first().ok_or_else(short)?;
    let (nd, nc) = (usize::from(nd), usize::from(nc));
    if nd > MAX_RAILS || nc > MAX_CONTROL_RAILS {
        return Err(DecodeError::Rails {
            data: nd,
            control: nc,
        });
    }
    let mut names = RailNames {
        ctl: [&[]; MAX_CONTROL_RAILS],
        nctl: nc,
        data: [&[]; MAX_RAILS],
        ndata: nd,
    };
    for index in 0..nc + nd {
        let (&len, r) = rest.split_first().ok_or(DecodeError::Name { index })?;
        let name = r
            .get(..usize::from(len))
            .ok_or(DecodeError::Name { index })?;
        if index < nc {
            names.ctl[index] = name;
        } else {
            names.data[index - nc] = name;
        }
        rest = &r[usize::from(len)..];
    }
    Ok(names)
}

/// Decodes a control message from a peer (untrusted: every length and
/// count is checked against the message and the protocol's limits; after
/// this succeeds nothing in it can index out of bounds).
pub fn decode_control(m: &[u8]) -> Result<Control<'_>, DecodeError> {
    let short = |kind| DecodeError::Short { kind, got: m.len() };
    let seq = |v: u32| {
        u16::try_from(v)
            .ok()
            .filter(|s| *s < 1 << SEQ_BITS)
            .ok_or(DecodeError::Seq(v))
    };
    match *m.first().ok_or(DecodeError::Empty)? {
        CONN => Ok(Control::Conn {
            listen: u32_at(m, 4).ok_or_else(|| short("CONN"))?,
            sender: u32_at(m, 8).ok_or_else(|| short("CONN"))?,
            names: names_of("CONN", m.get(12..).ok_or_else(|| short("CONN"))?)?,
        }),
        CONN_RESP => Ok(Control::ConnResp {
            sender: u32_at(m, 4).ok_or_else(|| short("CONN_RESP"))?,
            receiver: u32_at(m, 8).ok_or_else(|| short("CONN_RESP"))?,
            names: names_of("CONN_RESP", m.get(12..).ok_or_else(|| short("CONN_RESP"))?)?,
        }),
        CTRL => {
            let comm = u32_at(m, 4).ok_or_else(|| short("CTRL"))?;
            let sq = seq(u32_at(m, 8).ok_or_else(|| short("CTRL"))?)?;
            let addr = u64_at(m, 12).ok_or_else(|| short("CTRL"))?;
            let len = u64_at(m, 20).ok_or_else(|| short("CTRL"))?;
            let nkeys = usize::from(*m.get(28).ok_or_else(|| short("CTRL"))?);
            if nkeys > MAX_RAILS {
                return Err(DecodeError::Keys(nkeys));
            }
            let mut keys = [0u64; MAX_RAILS];
            for (i, k) in keys.iter_mut().enumerate().take(nkeys) {
                *k = u64_at(m, 32 + 8 * i).ok_or_else(|| short("CTRL"))?;
            }
            Ok(Control::Ctrl(CtrlMsg {
                comm,
                seq: sq,
                addr,
                len,
                nkeys: nkeys as u8,
                keys,
            }))
        }
        SIZE => {
            let comm = u32_at(m, 4).ok_or_else(|| short("SIZE"))?;
            let sq = seq(u32_at(m, 8).ok_or_else(|| short("SIZE"))?)?;
            let nseg = u32_at(m, 12).ok_or_else(|| short("SIZE"))?;
            if nseg as usize > MAX_SEGMENTS {
                return Err(DecodeError::Segments(nseg));
            }
            let size = u64_at(m, 16).ok_or_else(|| short("SIZE"))?;
            Ok(Control::Size {
                comm,
                seq: sq,
                nseg: nseg as u8,
                size,
            })
        }
        k => Err(DecodeError::Kind(k)),
    }
}

/// Bytes of the longest CTRL (a key for each of [`MAX_RAILS`] rails).
pub(super) const CTRL_MAX_LEN: usize = 32 + 8 * MAX_RAILS;
/// Bytes of a SIZE.
pub(super) const SIZE_LEN: usize = 24;

/// The rail-names part of a CONN or CONN_RESP, as [`RailNames`] decodes
/// it: the data and control rail counts, then each name after its length
/// byte, control rails first. Names are the provider's (at most 56 bytes).
pub(super) fn encode_rail_names(
    control: impl ExactSizeIterator<Item = Vec<u8>>,
    data: impl ExactSizeIterator<Item = Vec<u8>>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * (control.len() + data.len()));
    out.push(data.len() as u8);
    out.push(control.len() as u8);
    for n in control.chain(data) {
        out.push(n.len() as u8);
        out.extend_from_slice(&n);
    }
    out
}

/// A CONN from our comm `sender` to the listen comm `listen`, with our
/// rails' `names` (from [`encode_rail_names`]). Made once a connection:
/// not on a data path.
pub(super) fn encode_conn(listen: u32, sender: u32, names: &[u8]) -> Vec<u8> {
    let mut m = vec![CONN, 0, 0, 0];
    m.extend_from_slice(&listen.to_le_bytes());
    m.extend_from_slice(&sender.to_le_bytes());
    m.extend_from_slice(names);
    m
}

/// A CONN_RESP to the peer's comm `sender` from our comm `receiver`, with
/// our rails' `names`.
pub(super) fn encode_conn_resp(sender: u32, receiver: u32, names: &[u8]) -> Vec<u8> {
    let mut m = vec![CONN_RESP, 0, 0, 0];
    m.extend_from_slice(&sender.to_le_bytes());
    m.extend_from_slice(&receiver.to_le_bytes());
    m.extend_from_slice(names);
    m
}

/// Writes `c` as a CTRL into `m` (on the caller's stack: one per receive,
/// no allocation); answers the bytes used, `32 + 8 * c.nkeys`.
pub(super) fn encode_ctrl(c: &CtrlMsg, m: &mut [u8; CTRL_MAX_LEN]) -> usize {
    let nkeys = usize::from(c.nkeys).min(MAX_RAILS);
    m[0] = CTRL;
    m[4..8].copy_from_slice(&c.comm.to_le_bytes());
    m[8..12].copy_from_slice(&u32::from(c.seq).to_le_bytes());
    m[12..20].copy_from_slice(&c.addr.to_le_bytes());
    m[20..28].copy_from_slice(&c.len.to_le_bytes());
    m[28] = nkeys as u8;
    for (rail, key) in c.keys.iter().enumerate().take(nkeys) {
        m[32 + 8 * rail..40 + 8 * rail].copy_from_slice(&key.to_le_bytes());
    }
    32 + 8 * nkeys
}

/// A SIZE for the peer's comm `comm`: message `seq` of `nseg` segments
/// (this one included) carried `size` bytes.
pub(super) fn encode_size(comm: u32, seq: u16, nseg: u8, size: u64) -> [u8; SIZE_LEN] {
    let mut m = [0u8; SIZE_LEN];
    m[0] = SIZE;
    m[4..8].copy_from_slice(&comm.to_le_bytes());
    m[8..12].copy_from_slice(&u32::from(seq).to_le_bytes());
    m[12..16].copy_from_slice(&u32::from(nseg).to_le_bytes());
    m[16..24].copy_from_slice(&size.to_le_bytes());
    m
}

pub(super) fn u32_at(m: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(m.get(at..at + 4)?.try_into().ok()?))
}

pub(super) fn u64_at(m: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(m.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn_bytes(kind: u8, names: &[&[u8]], nd: u8, nc: u8) -> Vec<u8> {
        let mut m = vec![kind, 0, 0, 0];
        m.extend_from_slice(&7u32.to_le_bytes());
        m.extend_from_slice(&9u32.to_le_bytes());
        m.extend_from_slice(&[nd, nc]);
        for n in names {
            m.push(n.len() as u8);
            m.extend_from_slice(n);
        }
        m
    }

    #[test]
    fn control_messages_decode_with_their_bounds() {
        let m = conn_bytes(CONN, &[b"c0", b"d0", b"d1"], 2, 1);
        let Ok(Control::Conn {
            listen,
            sender,
            names,
        }) = decode_control(&m)
        else {
            panic!("{:?}", decode_control(&m));
        };
        assert_eq!((listen, sender), (7, 9));
        assert_eq!(names.control(), [b"c0"]);
        assert_eq!(names.data(), [&b"d0"[..], b"d1"]);
        // Every cut is refused, none panics.
        for n in 0..m.len() {
            assert!(decode_control(&m[..n]).is_err(), "cut at {n}");
        }
        let m = conn_bytes(CONN_RESP, &[], 16, 1);
        assert_eq!(
            decode_control(&m),
            Err(DecodeError::Rails {
                data: 16,
                control: 1
            })
        );
        let m = conn_bytes(CONN, &[b"x"], 0, 5);
        assert!(matches!(decode_control(&m), Err(DecodeError::Rails { .. })));
        let m = conn_bytes(CONN, &[b"long name"], 0, 1);
        assert_eq!(
            decode_control(&m[..m.len() - 1]),
            Err(DecodeError::Name { index: 0 })
        );

        let mut ctrl = [0u8; 32 + 8];
        ctrl[0] = CTRL;
        ctrl[4..8].copy_from_slice(&5u32.to_le_bytes());
        ctrl[8..12].copy_from_slice(&1023u32.to_le_bytes());
        ctrl[12..20].copy_from_slice(&0x1000u64.to_le_bytes());
        ctrl[20..28].copy_from_slice(&64u64.to_le_bytes());
        ctrl[28] = 1;
        ctrl[32..40].copy_from_slice(&0xabcdu64.to_le_bytes());
        let Ok(Control::Ctrl(c)) = decode_control(&ctrl) else {
            panic!("CTRL");
        };
        assert_eq!((c.comm, c.seq, c.addr, c.len), (5, 1023, 0x1000, 64));
        assert_eq!((c.nkeys, c.keys[0]), (1, 0xabcd));
        assert_eq!(
            decode_control(&ctrl[..39]),
            Err(DecodeError::Short {
                kind: "CTRL",
                got: 39
            })
        );
        ctrl[28] = 16;
        assert_eq!(decode_control(&ctrl), Err(DecodeError::Keys(16)));
        ctrl[28] = 1;
        ctrl[8..12].copy_from_slice(&1024u32.to_le_bytes());
        assert_eq!(decode_control(&ctrl), Err(DecodeError::Seq(1024)));

        let mut size = [0u8; 24];
        size[0] = SIZE;
        size[12..16].copy_from_slice(&17u32.to_le_bytes());
        assert_eq!(decode_control(&size), Err(DecodeError::Segments(17)));
        size[12..16].copy_from_slice(&2u32.to_le_bytes());
        size[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            decode_control(&size),
            Ok(Control::Size {
                comm: 0,
                seq: 0,
                nseg: 2,
                size: u64::MAX
            })
        );
        assert_eq!(decode_control(&[]), Err(DecodeError::Empty));
        assert_eq!(decode_control(&[9]), Err(DecodeError::Kind(9)));
    }

    #[test]
    fn encoded_messages_are_the_bytes_the_decoder_reads() {
        let names = encode_rail_names(
            [b"c0".to_vec()].into_iter(),
            [b"d0".to_vec(), b"d1".to_vec()].into_iter(),
        );
        assert_eq!(
            encode_conn(7, 9, &names),
            conn_bytes(CONN, &[b"c0", b"d0", b"d1"], 2, 1)
        );
        assert_eq!(
            encode_conn_resp(7, 9, &names),
            conn_bytes(CONN_RESP, &[b"c0", b"d0", b"d1"], 2, 1)
        );

        let mut keys = [0u64; MAX_RAILS];
        keys[..2].copy_from_slice(&[0xabcd, 0x1234]);
        let c = CtrlMsg {
            comm: 5,
            seq: 1023,
            addr: 0x1000,
            len: 64,
            nkeys: 2,
            keys,
        };
        let mut m = [0u8; CTRL_MAX_LEN];
        let n = encode_ctrl(&c, &mut m);
        assert_eq!(n, 48);
        assert_eq!(m[..12], [CTRL, 0, 0, 0, 5, 0, 0, 0, 0xff, 3, 0, 0]);
        assert_eq!(m[28], 2);
        assert_eq!(m[40..48], 0x1234u64.to_le_bytes());
        assert_eq!(decode_control(&m[..n]), Ok(Control::Ctrl(c)));

        let s = encode_size(3, 17, 2, 1 << 40);
        assert_eq!(
            s,
            [
                SIZE, 0, 0, 0, 3, 0, 0, 0, 17, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0
            ]
        );
        assert_eq!(
            decode_control(&s),
            Ok(Control::Size {
                comm: 3,
                seq: 17,
                nseg: 2,
                size: 1 << 40
            })
        );
    }
}
