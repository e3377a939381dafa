//! Packet capture files, the way the engine takes packets in and hands them
//! out offline: classic libpcap files (microsecond or nanosecond magic, either
//! byte order) and pcapng, Ethernet link type only.
//!
//! In pcapng one Interface Description Block stands for one P4 port: the
//! interface index is the port number, and each Enhanced Packet Block's
//! `interface_id` says which port the packet was seen on. A classic file
//! has no ports ([`Record::port`] is `None`); bmv2 keeps one file per port.
//! Timestamps are nanoseconds since the epoch, converted from each file's
//! resolution (pcapng's `if_tsresol` and `if_tsoffset`).
//!
//! A capture file is untrusted input: every length is checked before it
//! sizes an allocation. A record longer than [`MAX_RECORD`] (256 KiB) and a
//! pcapng block longer than [`MAX_BLOCK`] are refused with the byte offset,
//! as is a file that ends inside a record; nothing here panics on any
//! input. Written by hand, not with the `pcap-file` crate: that crate's
//! reader bounds records only by an 8 MB buffer it allocates per reader
//! (reported as an unexpected EOF) and reaches its buffer through an
//! `unsafe` lifetime transmute; the subset needed here is small.

use std::io::{self, Read, Write};
use std::path::Path;

use thiserror::Error;

/// The longest packet a record may carry.
pub const MAX_RECORD: usize = 256 * 1024;
/// The longest pcapng block (a packet plus room for its options).
pub const MAX_BLOCK: usize = MAX_RECORD + 64 * 1024;

/// LINKTYPE_ETHERNET.
const ETHERNET: u32 = 1;
const PCAP_MICRO: u32 = 0xa1b2_c3d4;
const PCAP_NANO: u32 = 0xa1b2_3c4d;
const SHB: u32 = 0x0a0d_0d0a;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
const IDB: u32 = 1;
const OPB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;

/// One packet of a capture.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Record {
    /// The P4 port (pcapng interface index); `None` in a classic file.
    pub port: Option<u32>,
    /// Nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The captured bytes (the wire length of a truncated capture is not
    /// kept).
    pub data: Vec<u8>,
}

/// Why a capture could not be read or written.
#[derive(Debug, Error)]
pub enum PcapError {
    /// The reader or writer failed.
    #[error("reading or writing the capture")]
    Io(#[source] io::Error),
    /// Neither a pcap nor a pcapng magic number.
    #[error("not a pcap or pcapng file (first word {0:#010x})")]
    BadMagic(u32),
    /// The file ends inside a header, record or block.
    #[error("the file ends inside {what} at byte {offset}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it started.
        offset: u64,
    },
    /// A record or block claims more than the limit.
    #[error("{what} at byte {offset} is {len} bytes long, more than the {max}-byte limit")]
    TooLarge {
        /// "record" or "block".
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// The length it claims.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// A link type other than Ethernet.
    #[error("link type {0} is not Ethernet (1)")]
    NotEthernet(u32),
    /// A malformed pcapng block.
    #[error("block at byte {offset}: {reason}")]
    BadBlock {
        /// Where it starts.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A packet block naming an interface no IDB described.
    #[error("packet at byte {offset} names interface {id}, which no interface block describes")]
    UnknownInterface {
        /// Where the packet block starts.
        offset: u64,
        /// The interface id it names.
        id: u32,
    },
    /// Writing a packet for a port the pcapng writer has no interface for.
    #[error("packet for port {port}, but the file describes {ports} ports")]
    PortOutOfRange {
        /// The record's port.
        port: u32,
        /// How many interfaces were written.
        ports: u32,
    },
    /// A timestamp the format cannot hold, or one that overflows 64-bit
    /// nanoseconds when read.
    #[error("timestamp out of range")]
    TimestampRange,
}

#[derive(Clone, Copy, Debug)]
enum Endian {
    Little,
    Big,
}

impl Endian {
    fn u16(self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }

    fn u32(self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    fn u64(self, b: &[u8]) -> u64 {
        let (hi, lo) = match self {
            Endian::Little => (self.u32(&b[4..]), self.u32(b)),
            Endian::Big => (self.u32(b), self.u32(&b[4..])),
        };
        (u64::from(hi) << 32) | u64::from(lo)
    }
}

/// A pcapng interface: its timestamp units as `ns = ts * mul / div + offset`.
#[derive(Clone, Copy, Debug)]
struct Iface {
    mul: u128,
    div: u128,
    offset_ns: u128,
}

impl Iface {
    fn ns(&self, ts: u64) -> Option<u64> {
        let ns = u128::from(ts).checked_mul(self.mul)? / self.div + self.offset_ns;
        u64::try_from(ns).ok()
    }
}

enum Format {
    Pcap { endian: Endian, nanos: bool },
    PcapNg { endian: Endian, ifaces: Vec<Iface> },
}

/// A streaming reader of either format, detected by the magic number.
pub struct Reader<R: Read> {
    inner: R,
    offset: u64,
    format: Format,
}

/// Reads `buf.len()` bytes; `Ok(false)` if the input ended before the first
/// byte and `allow_eof`; [`PcapError::Truncated`] if it ended later.
fn fill<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    allow_eof: bool,
    what: &'static str,
    offset: u64,
) -> Result<bool, PcapError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 && allow_eof => return Ok(false),
            Ok(0) => return Err(PcapError::Truncated { what, offset }),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(PcapError::Io(e)),
        }
    }
    Ok(true)
}

impl<R: Read> Reader<R> {
    /// Reads the file header (or pcapng's first section header).
    pub fn new(mut inner: R) -> Result<Reader<R>, PcapError> {
        let mut magic = [0u8; 4];
        fill(&mut inner, &mut magic, false, "the file header", 0)?;
        let le = u32::from_le_bytes(magic);
        let be = u32::from_be_bytes(magic);
        let format = match (le, be) {
            (PCAP_MICRO, _) => Format::Pcap {
                endian: Endian::Little,
                nanos: false,
            },
            (PCAP_NANO, _) => Format::Pcap {
                endian: Endian::Little,
                nanos: true,
            },
            (_, PCAP_MICRO) => Format::Pcap {
                endian: Endian::Big,
                nanos: false,
            },
            (_, PCAP_NANO) => Format::Pcap {
                endian: Endian::Big,
                nanos: true,
            },
            (SHB, _) => Format::PcapNg {
                endian: Endian::Little,
                ifaces: Vec::new(),
            },
            _ => return Err(PcapError::BadMagic(be)),
        };
        let mut reader = Reader {
            inner,
            offset: 4,
            format,
        };
        match reader.format {
            Format::Pcap { endian, .. } => {
                let mut h = [0u8; 20];
                fill(&mut reader.inner, &mut h, false, "the file header", 0)?;
                reader.offset = 24;
                let link = endian.u32(&h[16..]) & 0xffff;
                if link != ETHERNET {
                    return Err(PcapError::NotEthernet(link));
                }
            }
            Format::PcapNg { .. } => {
                // A section header never carries a packet.
                reader.block_after_type(SHB, 0)?;
            }
        }
        Ok(reader)
    }

    /// The next packet, `Ok(None)` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record>, PcapError> {
        match self.format {
            Format::Pcap { endian, nanos } => self.next_pcap(endian, nanos),
            Format::PcapNg { .. } => loop {
                let start = self.offset;
                let mut t = [0u8; 4];
                if !fill(&mut self.inner, &mut t, true, "a block", start)? {
                    return Ok(None);
                }
                self.offset += 4;
                // The section's byte order, which a section header changes.
                let endian = match self.format {
                    Format::PcapNg { endian, .. } | Format::Pcap { endian, .. } => endian,
                };
                if let Some(r) = self.block_after_type(endian.u32(&t), start)? {
                    return Ok(Some(r));
                }
            },
        }
    }

    fn next_pcap(&mut self, endian: Endian, nanos: bool) -> Result<Option<Record>, PcapError> {
        let start = self.offset;
        let mut h = [0u8; 16];
        if !fill(&mut self.inner, &mut h, true, "a record header", start)? {
            return Ok(None);
        }
        let (sec, frac, incl) = (endian.u32(&h), endian.u32(&h[4..]), endian.u32(&h[8..]));
        if incl as usize > MAX_RECORD {
            return Err(PcapError::TooLarge {
                what: "record",
                offset: start,
                len: incl.into(),
                max: MAX_RECORD,
            });
        }
        let mut data = vec![0u8; incl as usize];
        fill(&mut self.inner, &mut data, false, "a record", start)?;
        self.offset += 16 + u64::from(incl);
        let frac_ns = if nanos {
            u64::from(frac)
        } else {
            u64::from(frac) * 1000
        };
        Ok(Some(Record {
            port: None,
            ts_ns: u64::from(sec) * 1_000_000_000 + frac_ns,
            data,
        }))
    }

    /// Reads the rest of a pcapng block whose type was just read, returning
    /// its packet if it carries one.
    fn block_after_type(
        &mut self,
        block_type: u32,
        start: u64,
    ) -> Result<Option<Record>, PcapError> {
        let bad = |reason| PcapError::BadBlock {
            offset: start,
            reason,
        };
        let mut word = [0u8; 4];
        fill(&mut self.inner, &mut word, false, "a block", start)?;
        let mut prefix = Vec::new();
        if block_type == SHB {
            // The byte order comes from the section header itself.
            let mut bom = [0u8; 4];
            fill(&mut self.inner, &mut bom, false, "a block", start)?;
            let endian = match (u32::from_le_bytes(bom), u32::from_be_bytes(bom)) {
                (BYTE_ORDER_MAGIC, _) => Endian::Little,
                (_, BYTE_ORDER_MAGIC) => Endian::Big,
                _ => return Err(bad("section header without the byte-order magic")),
            };
            // A new section: its own byte order, its own interfaces.
            self.format = Format::PcapNg {
                endian,
                ifaces: Vec::new(),
            };
            prefix.extend_from_slice(&bom);
        }
        let Format::PcapNg { endian, .. } = self.format else {
            return Err(bad("not a pcapng file"));
        };
        let len = endian.u32(&word) as usize;
        if len > MAX_BLOCK {
            return Err(PcapError::TooLarge {
                what: "block",
                offset: start,
                len: len as u64,
                max: MAX_BLOCK,
            });
        }
        if len < 12 + prefix.len() || len % 4 != 0 {
            return Err(bad("block length is not a multiple of 4 of at least 12"));
        }
        let mut body = prefix;
        let known = body.len();
        body.resize(len - 8, 0);
        fill(&mut self.inner, &mut body[known..], false, "a block", start)?;
        self.offset += len as u64 - 4;
        let (body, trailer) = body.split_at(len - 12);
        if endian.u32(trailer) as usize != len {
            return Err(bad("block length and trailing length differ"));
        }
        let Format::PcapNg { ifaces, .. } = &mut self.format else {
            return Err(bad("not a pcapng file"));
        };
        match block_type {
            SHB if body.len() < 16 => Err(bad("section header too short")),
            IDB => {
                if body.len() < 8 {
                    return Err(bad("interface description too short"));
                }
                let link = u32::from(endian.u16(body));
                if link != ETHERNET {
                    return Err(PcapError::NotEthernet(link));
                }
                ifaces.push(
                    idb_options(endian, &body[8..]).ok_or_else(|| bad("bad interface options"))?,
                );
                Ok(None)
            }
            EPB | OPB => {
                if body.len() < 20 {
                    return Err(bad("packet block too short"));
                }
                let id = if block_type == EPB {
                    endian.u32(body)
                } else {
                    u32::from(endian.u16(body))
                };
                let iface = *ifaces
                    .get(id as usize)
                    .ok_or(PcapError::UnknownInterface { offset: start, id })?;
                let ts =
                    (u64::from(endian.u32(&body[4..])) << 32) | u64::from(endian.u32(&body[8..]));
                let caplen = endian.u32(&body[12..]) as usize;
                if caplen > MAX_RECORD {
                    return Err(PcapError::TooLarge {
                        what: "record",
                        offset: start,
                        len: caplen as u64,
                        max: MAX_RECORD,
                    });
                }
                let data = body
                    .get(20..20 + caplen)
                    .ok_or_else(|| bad("captured length exceeds the block"))?;
                let ts_ns = iface.ns(ts).ok_or(PcapError::TimestampRange)?;
                Ok(Some(Record {
                    port: Some(id),
                    ts_ns,
                    data: data.to_vec(),
                }))
            }
            SPB => {
                if ifaces.is_empty() {
                    return Err(PcapError::UnknownInterface {
                        offset: start,
                        id: 0,
                    });
                }
                if body.len() < 4 {
                    return Err(bad("simple packet block too short"));
                }
                let orig = endian.u32(body) as usize;
                let data = &body[4..];
                Ok(Some(Record {
                    port: Some(0),
                    ts_ns: 0,
                    data: data[..orig.min(data.len())].to_vec(),
                }))
            }
            _ => Ok(None),
        }
    }
}

/// An IDB's options: `if_tsresol` (9) and `if_tsoffset` (14).
fn idb_options(endian: Endian, mut opts: &[u8]) -> Option<Iface> {
    let mut iface = Iface {
        mul: 1_000_000_000,
        div: 1_000_000,
        offset_ns: 0,
    };
    while opts.len() >= 4 {
        let (code, len) = (endian.u16(opts), endian.u16(&opts[2..]) as usize);
        let value = opts.get(4..4 + len)?;
        match code {
            0 => break,
            9 if len == 1 => {
                let v = value[0];
                iface.div = if v & 0x80 == 0 {
                    10u128.checked_pow(u32::from(v))?
                } else {
                    1u128.checked_shl(u32::from(v & 0x7f))?
                };
            }
            14 if len == 8 => iface.offset_ns = u128::from(endian.u64(value)) * 1_000_000_000,
            _ => {}
        }
        opts = opts.get(4 + len.next_multiple_of(4)..).unwrap_or(&[]);
    }
    Some(iface)
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Reads every packet of a pcap or pcapng stream.
pub fn read_packets(r: impl Read) -> Result<Vec<Record>, PcapError> {
    Reader::new(r)?.collect()
}

/// Reads every packet of a pcap or pcapng file.
pub fn read_packets_from_path(path: impl AsRef<Path>) -> Result<Vec<Record>, PcapError> {
    let f = std::fs::File::open(path).map_err(PcapError::Io)?;
    read_packets(io::BufReader::new(f))
}

/// Timestamp resolution of a classic pcap file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TsResolution {
    /// Microseconds (magic `a1b2c3d4`, what libpcap and bmv2 write).
    Micro,
    /// Nanoseconds (magic `a1b23c4d`): timestamps kept exactly.
    Nano,
}

fn check_len(data: &[u8]) -> Result<u32, PcapError> {
    if data.len() > MAX_RECORD {
        return Err(PcapError::TooLarge {
            what: "record",
            offset: 0,
            len: data.len() as u64,
            max: MAX_RECORD,
        });
    }
    Ok(data.len() as u32)
}

/// Writes a classic little-endian pcap file of Ethernet frames.
pub struct PcapWriter<W: Write> {
    inner: W,
    resolution: TsResolution,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header.
    pub fn new(mut inner: W, resolution: TsResolution) -> Result<PcapWriter<W>, PcapError> {
        let magic = if resolution == TsResolution::Nano {
            PCAP_NANO
        } else {
            PCAP_MICRO
        };
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&magic.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&[0; 8]); // thiszone, sigfigs
        h.extend_from_slice(&(MAX_RECORD as u32).to_le_bytes());
        h.extend_from_slice(&ETHERNET.to_le_bytes());
        inner.write_all(&h).map_err(PcapError::Io)?;
        Ok(PcapWriter { inner, resolution })
    }

    /// Appends one record (its port is not recorded in this format).
    pub fn write(&mut self, r: &Record) -> Result<(), PcapError> {
        let len = check_len(&r.data)?;
        let sec = u32::try_from(r.ts_ns / 1_000_000_000).map_err(|_| PcapError::TimestampRange)?;
        let ns = (r.ts_ns % 1_000_000_000) as u32;
        let frac = if self.resolution == TsResolution::Nano {
            ns
        } else {
            ns / 1000
        };
        let mut h = [0u8; 16];
        for (i, v) in [sec, frac, len, len].into_iter().enumerate() {
            h[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        self.inner
            .write_all(&h)
            .and_then(|_| self.inner.write_all(&r.data))
            .map_err(PcapError::Io)
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> Result<W, PcapError> {
        self.inner.flush().map_err(PcapError::Io)?;
        Ok(self.inner)
    }
}

/// Writes a little-endian pcapng file: one section, one Ethernet interface
/// per port (index = port number, nanosecond timestamps).
pub struct PcapNgWriter<W: Write> {
    inner: W,
    ports: u32,
}

fn block(block_type: u32, body: &[u8]) -> Vec<u8> {
    let len = (12 + body.len()).next_multiple_of(4) as u32;
    let mut b = Vec::with_capacity(len as usize);
    b.extend_from_slice(&block_type.to_le_bytes());
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(body);
    b.resize(len as usize - 4, 0);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

impl<W: Write> PcapNgWriter<W> {
    /// Writes the section header and `ports` interface blocks.
    pub fn new(mut inner: W, ports: u32) -> Result<PcapNgWriter<W>, PcapError> {
        let mut shb = Vec::new();
        shb.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        let mut out = block(SHB, &shb);
        // linktype, reserved, snaplen 0 (none); if_tsresol = 9; end of options.
        let mut idb = Vec::new();
        idb.extend_from_slice(&(ETHERNET as u16).to_le_bytes());
        idb.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
        for _ in 0..ports {
            out.extend_from_slice(&block(IDB, &idb));
        }
        inner.write_all(&out).map_err(PcapError::Io)?;
        Ok(PcapNgWriter { inner, ports })
    }

    /// Appends one Enhanced Packet Block on the record's port (port 0 when
    /// it has none).
    pub fn write(&mut self, r: &Record) -> Result<(), PcapError> {
        let len = check_len(&r.data)?;
        let port = r.port.unwrap_or(0);
        if port >= self.ports {
            return Err(PcapError::PortOutOfRange {
                port,
                ports: self.ports,
            });
        }
        let mut body = Vec::with_capacity(20 + r.data.len() + 3);
        for v in [port, (r.ts_ns >> 32) as u32, r.ts_ns as u32, len, len] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&r.data);
        self.inner
            .write_all(&block(EPB, &body))
            .map_err(PcapError::Io)
    }

    /// Flushes and returns the inner writer.
    pub fn finish(mut self) -> Result<W, PcapError> {
        self.inner.flush().map_err(PcapError::Io)?;
        Ok(self.inner)
    }
}

#[cfg(test)]
#[path = "pcap_tests.rs"]
mod tests;
