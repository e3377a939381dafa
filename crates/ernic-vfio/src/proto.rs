//! vfio-user messages as QEMU's `docs/interop/vfio-user.rst` lays them
//! out: the 16-byte header, the client's requests, and the server's
//! replies. Everything arrives from an untrusted client, so decoding
//! checks every length (the header's size, each `argsz`, each `count`)
//! before it reads, and answers a [`ProtoError`] that carries the errno
//! the reply reports.
//!
//! All numbers are little-endian (the host's order on the machines this
//! runs on; the spec says "host endianness").

use std::fmt;

/// Bytes in every message's header.
pub const HEADER_LEN: usize = 16;

/// Header flag bits 0-3: the message type.
pub const FLAG_TYPE_MASK: u32 = 0xf;
/// Type: a reply.
pub const FLAG_REPLY: u32 = 0x1;
/// Bit 4: the sender wants no reply.
pub const FLAG_NO_REPLY: u32 = 1 << 4;
/// Bit 5: the reply reports an error (in the header's error field).
pub const FLAG_ERROR: u32 = 1 << 5;

/// The `VFIO_USER_*` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
#[allow(missing_docs)]
pub enum Command {
    Version = 1,
    DmaMap = 2,
    DmaUnmap = 3,
    DeviceGetInfo = 4,
    DeviceGetRegionInfo = 5,
    DeviceGetRegionIoFds = 6,
    DeviceGetIrqInfo = 7,
    DeviceSetIrqs = 8,
    RegionRead = 9,
    RegionWrite = 10,
    DmaRead = 11,
    DmaWrite = 12,
    DeviceReset = 13,
    RegionWriteMulti = 15,
    DeviceFeature = 16,
    MigDataRead = 17,
    MigDataWrite = 18,
}

impl Command {
    /// The command numbered `n`, if there is one.
    pub fn from_u16(n: u16) -> Option<Command> {
        use Command::*;
        Some(match n {
            1 => Version,
            2 => DmaMap,
            3 => DmaUnmap,
            4 => DeviceGetInfo,
            5 => DeviceGetRegionInfo,
            6 => DeviceGetRegionIoFds,
            7 => DeviceGetIrqInfo,
            8 => DeviceSetIrqs,
            9 => RegionRead,
            10 => RegionWrite,
            11 => DmaRead,
            12 => DmaWrite,
            13 => DeviceReset,
            15 => RegionWriteMulti,
            16 => DeviceFeature,
            17 => MigDataRead,
            18 => MigDataWrite,
            _ => return None,
        })
    }
}

/// A message's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// The sender's message id, echoed in the reply.
    pub id: u16,
    /// The command number.
    pub command: u16,
    /// The whole message's size, header included.
    pub size: u32,
    /// Type, no-reply and error bits.
    pub flags: u32,
    /// An errno, in an error reply.
    pub error: u32,
}

impl Header {
    /// Reads a header.
    pub fn parse(b: &[u8; HEADER_LEN]) -> Header {
        Header {
            id: u16::from_le_bytes([b[0], b[1]]),
            command: u16::from_le_bytes([b[2], b[3]]),
            size: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
            flags: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            error: u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")),
        }
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&self.id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&self.size.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.error.to_le_bytes());
        b
    }

    /// Whether this is a command (not a reply).
    pub fn is_command(&self) -> bool {
        self.flags & FLAG_TYPE_MASK == 0
    }

    /// Whether the sender asked for no reply.
    pub fn no_reply(&self) -> bool {
        self.flags & FLAG_NO_REPLY != 0
    }

    /// The header of the reply to this command, with `body` bytes after it.
    pub fn reply(&self, body: usize) -> Header {
        Header {
            id: self.id,
            command: self.command,
            size: (HEADER_LEN + body) as u32,
            flags: FLAG_REPLY,
            error: 0,
        }
    }

    /// The header of an error reply to this command (no body, as the spec
    /// requires).
    pub fn error_reply(&self, errno: i32) -> Header {
        Header {
            id: self.id,
            command: self.command,
            size: HEADER_LEN as u32,
            flags: FLAG_REPLY | FLAG_ERROR,
            error: errno as u32,
        }
    }
}

/// What a client sent that cannot be served, with the errno its reply
/// carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// The header's size is below the header or above what we accept.
    #[error("message size {size} is outside {min}..={max}")]
    BadSize {
        /// The size claimed.
        size: u32,
        /// The smallest allowed.
        min: usize,
        /// The largest allowed.
        max: usize,
    },
    /// A reply (or anything but a command) where a command belongs.
    #[error("flags {0:#x}: not a command")]
    NotCommand(u32),
    /// No such command.
    #[error("unknown command {0}")]
    UnknownCommand(u16),
    /// A command this server does not implement.
    #[error("command {0:?} is not supported")]
    Unsupported(Command),
    /// The body is shorter than the command's fixed part.
    #[error("{what}: {got} bytes where {need} are needed")]
    Truncated {
        /// The command.
        what: &'static str,
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        got: usize,
    },
    /// A field with a value the spec does not allow.
    #[error("{what}: {why}")]
    Invalid {
        /// The command and field.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A transfer larger than `max_data_xfer_size`.
    #[error("{what}: {count} bytes exceed the {max}-byte transfer limit")]
    TooLarge {
        /// The command.
        what: &'static str,
        /// Bytes asked for.
        count: u64,
        /// The limit.
        max: u32,
    },
}

impl ProtoError {
    /// The errno an error reply reports for this.
    pub fn errno(&self) -> i32 {
        match self {
            ProtoError::UnknownCommand(_) | ProtoError::Unsupported(_) => libc_enotsup(),
            ProtoError::TooLarge { .. } => 7, // E2BIG
            _ => 22,                          // EINVAL
        }
    }
}

/// ENOTSUP on Linux (= EOPNOTSUPP).
const fn libc_enotsup() -> i32 {
    95
}

/// Capabilities exchanged in `VFIO_USER_VERSION`, with the spec's defaults
/// for those a peer leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// File descriptors the sender can receive in one message.
    pub max_msg_fds: u32,
    /// Largest `count` of one read or write message.
    pub max_data_xfer_size: u32,
    /// DMA windows the sender can hold at once.
    pub max_dma_maps: u32,
    /// Page sizes of DMA maps, or'ed.
    pub pgsizes: u64,
    /// Whether `VFIO_USER_REGION_WRITE_MULTI` is understood.
    pub write_multiple: bool,
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities {
            max_msg_fds: 1,
            max_data_xfer_size: 1 << 20,
            max_dma_maps: 65_535,
            pgsizes: 4096,
            write_multiple: false,
        }
    }
}

impl Capabilities {
    /// Reads the optional JSON version data (`{"capabilities": {...}}`,
    /// NUL-terminated or not); absent fields keep their defaults, unknown
    /// ones are ignored, wrong types are refused.
    pub fn parse(data: &[u8]) -> Result<Capabilities, ProtoError> {
        let mut c = Capabilities::default();
        let text = data.strip_suffix(&[0]).unwrap_or(data);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(c);
        }
        let bad = |why: String| ProtoError::Invalid {
            what: "VFIO_USER_VERSION data",
            why,
        };
        let v: serde_json::Value =
            serde_json::from_slice(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(caps) = v.get("capabilities") else {
            return Ok(c);
        };
        let caps = caps
            .as_object()
            .ok_or_else(|| bad("capabilities is not an object".into()))?;
        let num = |k: &str, max: u64| -> Result<Option<u64>, ProtoError> {
            match caps.get(k) {
                None => Ok(None),
                Some(x) => match x.as_u64() {
                    Some(n) if n <= max => Ok(Some(n)),
                    _ => Err(bad(format!("{k} must be a number up to {max}"))),
                },
            }
        };
        if let Some(n) = num("max_msg_fds", u32::MAX.into())? {
            c.max_msg_fds = n as u32;
        }
        if let Some(n) = num("max_data_xfer_size", u32::MAX.into())? {
            c.max_data_xfer_size = n as u32;
        }
        if let Some(n) = num("max_dma_maps", u32::MAX.into())? {
            c.max_dma_maps = n as u32;
        }
        if let Some(n) = num("pgsizes", u64::MAX)? {
            c.pgsizes = n;
        }
        if let Some(w) = caps.get("write_multiple") {
            c.write_multiple = w
                .as_bool()
                .ok_or_else(|| bad("write_multiple must be true or false".into()))?;
        }
        Ok(c)
    }

    /// The JSON version data that states these capabilities (NUL-ended).
    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::json!({
            "capabilities": {
                "max_msg_fds": self.max_msg_fds,
                "max_data_xfer_size": self.max_data_xfer_size,
                "max_dma_maps": self.max_dma_maps,
                "pgsizes": self.pgsizes,
            }
        })
        .to_string()
        .into_bytes();
        v.push(0);
        v
    }
}

/// `VFIO_USER_DMA_MAP` flag: the window may be read.
pub const DMA_READ: u32 = 1 << 0;
/// `VFIO_USER_DMA_MAP` flag: the window may be written.
pub const DMA_WRITE: u32 = 1 << 1;

/// `VFIO_IRQ_SET_DATA_NONE`.
pub const IRQ_DATA_NONE: u32 = 1 << 0;
/// `VFIO_IRQ_SET_DATA_BOOL`.
pub const IRQ_DATA_BOOL: u32 = 1 << 1;
/// `VFIO_IRQ_SET_DATA_EVENTFD`.
pub const IRQ_DATA_EVENTFD: u32 = 1 << 2;
/// `VFIO_IRQ_SET_ACTION_MASK`.
pub const IRQ_ACTION_MASK: u32 = 1 << 3;
/// `VFIO_IRQ_SET_ACTION_UNMASK`.
pub const IRQ_ACTION_UNMASK: u32 = 1 << 4;
/// `VFIO_IRQ_SET_ACTION_TRIGGER`.
pub const IRQ_ACTION_TRIGGER: u32 = 1 << 5;

/// A decoded client request. Borrowed data points into the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    /// Protocol version and capabilities.
    Version {
        /// Major version proposed.
        major: u16,
        /// Minor version proposed.
        minor: u16,
        /// The client's capabilities.
        caps: Capabilities,
    },
    /// A DMA window (its fd, if mappable, comes with the message).
    DmaMap {
        /// `DMA_READ` / `DMA_WRITE`.
        flags: u32,
        /// Offset of the window in the fd.
        offset: u64,
        /// Guest DMA address.
        address: u64,
        /// Bytes.
        size: u64,
    },
    /// A DMA window withdrawn.
    DmaUnmap {
        /// Largest reply payload.
        argsz: u32,
        /// Guest DMA address (must match a map).
        address: u64,
        /// Bytes (must match a map).
        size: u64,
    },
    /// Device flags and counts.
    DeviceGetInfo {
        /// Largest reply payload.
        argsz: u32,
    },
    /// One region's description.
    DeviceGetRegionInfo {
        /// Largest reply payload.
        argsz: u32,
        /// Region index.
        index: u32,
    },
    /// One interrupt type's description.
    DeviceGetIrqInfo {
        /// Largest reply payload.
        argsz: u32,
        /// Interrupt type index.
        index: u32,
    },
    /// Interrupt actions (eventfds come with the message).
    DeviceSetIrqs {
        /// One `IRQ_DATA_*` and one `IRQ_ACTION_*`.
        flags: u32,
        /// Interrupt type index.
        index: u32,
        /// First sub-index.
        start: u32,
        /// Sub-indexes.
        count: u32,
        /// With `IRQ_DATA_BOOL`: a byte per sub-index.
        data: &'a [u8],
    },
    /// A read from a region.
    RegionRead {
        /// Offset in the region.
        offset: u64,
        /// Region index.
        region: u32,
        /// Bytes.
        count: u32,
    },
    /// A write to a region.
    RegionWrite {
        /// Offset in the region.
        offset: u64,
        /// Region index.
        region: u32,
        /// The bytes.
        data: &'a [u8],
    },
    /// Reset the device.
    DeviceReset,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("checked length"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("checked length"))
}

fn need(what: &'static str, body: &[u8], n: usize) -> Result<(), ProtoError> {
    if body.len() < n {
        return Err(ProtoError::Truncated {
            what,
            need: n,
            got: body.len(),
        });
    }
    Ok(())
}

/// A transfer's byte count, refused above `max`.
fn at_most(what: &'static str, count: u32, max: u32) -> Result<u32, ProtoError> {
    if count > max {
        return Err(ProtoError::TooLarge {
            what,
            count: count.into(),
            max,
        });
    }
    Ok(count)
}

fn exact(what: &'static str, body: &[u8], n: usize) -> Result<(), ProtoError> {
    need(what, body, n)?;
    if body.len() != n {
        return Err(ProtoError::Invalid {
            what,
            why: format!("{} bytes where the message has {n}", body.len()),
        });
    }
    Ok(())
}

/// A query's fixed `len`-byte body, whose `argsz` (the room for the
/// reply, which has the same fixed part) must be at least `len`.
fn query(what: &'static str, body: &[u8], len: usize) -> Result<u32, ProtoError> {
    exact(what, body, len)?;
    let argsz = u32_at(body, 0);
    if (argsz as usize) < len {
        return Err(ProtoError::Invalid {
            what,
            why: format!("argsz {argsz} is below the {len}-byte reply"),
        });
    }
    Ok(argsz)
}

/// The largest message this side accepts, given its transfer limit: a
/// region write of `max_xfer` bytes and its header.
pub fn max_message(max_xfer: u32) -> usize {
    HEADER_LEN + 16 + max_xfer as usize
}

/// Checks a header before its body is read: a command, of a size this
/// side accepts.
pub fn check_header(h: &Header, max_xfer: u32) -> Result<(), ProtoError> {
    let max = max_message(max_xfer);
    if (h.size as usize) < HEADER_LEN || h.size as usize > max {
        return Err(ProtoError::BadSize {
            size: h.size,
            min: HEADER_LEN,
            max,
        });
    }
    if !h.is_command() {
        return Err(ProtoError::NotCommand(h.flags));
    }
    Ok(())
}

/// Decodes the body of command `h` (the `h.size - 16` bytes after the
/// header), with `max_xfer` as this side's `max_data_xfer_size`.
pub fn decode<'a>(h: &Header, body: &'a [u8], max_xfer: u32) -> Result<Request<'a>, ProtoError> {
    let cmd = Command::from_u16(h.command).ok_or(ProtoError::UnknownCommand(h.command))?;
    let argsz_is = |what: &'static str, argsz: u32, want: usize| {
        if argsz as usize == want {
            Ok(())
        } else {
            Err(ProtoError::Invalid {
                what,
                why: format!("argsz {argsz}, the request has {want} bytes"),
            })
        }
    };
    match cmd {
        Command::Version => {
            const W: &str = "VFIO_USER_VERSION";
            need(W, body, 4)?;
            Ok(Request::Version {
                major: u16::from_le_bytes([body[0], body[1]]),
                minor: u16::from_le_bytes([body[2], body[3]]),
                caps: Capabilities::parse(&body[4..])?,
            })
        }
        Command::DmaMap => {
            const W: &str = "VFIO_USER_DMA_MAP";
            exact(W, body, 32)?;
            argsz_is(W, u32_at(body, 0), 32)?;
            let flags = u32_at(body, 4);
            if flags & !(DMA_READ | DMA_WRITE) != 0 {
                return Err(ProtoError::Invalid {
                    what: W,
                    why: format!("unknown flags {flags:#x}"),
                });
            }
            let (offset, address, size) = (u64_at(body, 8), u64_at(body, 16), u64_at(body, 24));
            if size == 0
                || address.checked_add(size).is_none()
                || offset.checked_add(size).is_none()
            {
                return Err(ProtoError::Invalid {
                    what: W,
                    why: format!("{size} bytes at {address:#x} (offset {offset:#x})"),
                });
            }
            Ok(Request::DmaMap {
                flags,
                offset,
                address,
                size,
            })
        }
        Command::DmaUnmap => {
            const W: &str = "VFIO_USER_DMA_UNMAP";
            let argsz = query(W, body, 24)?;
            if u32_at(body, 4) != 0 {
                return Err(ProtoError::Invalid {
                    what: W,
                    why: "flags must be 0".into(),
                });
            }
            Ok(Request::DmaUnmap {
                argsz,
                address: u64_at(body, 8),
                size: u64_at(body, 16),
            })
        }
        Command::DeviceGetInfo => {
            let argsz = query("VFIO_USER_DEVICE_GET_INFO", body, 16)?;
            Ok(Request::DeviceGetInfo { argsz })
        }
        Command::DeviceGetRegionInfo => Ok(Request::DeviceGetRegionInfo {
            argsz: query("VFIO_USER_DEVICE_GET_REGION_INFO", body, 32)?,
            index: u32_at(body, 8),
        }),
        Command::DeviceGetIrqInfo => Ok(Request::DeviceGetIrqInfo {
            argsz: query("VFIO_USER_DEVICE_GET_IRQ_INFO", body, 16)?,
            index: u32_at(body, 8),
        }),
        Command::DeviceSetIrqs => {
            const W: &str = "VFIO_USER_DEVICE_SET_IRQS";
            need(W, body, 20)?;
            argsz_is(W, u32_at(body, 0), body.len())?;
            let flags = u32_at(body, 4);
            let data_bits = flags & (IRQ_DATA_NONE | IRQ_DATA_BOOL | IRQ_DATA_EVENTFD);
            let action_bits = flags & (IRQ_ACTION_MASK | IRQ_ACTION_UNMASK | IRQ_ACTION_TRIGGER);
            if data_bits.count_ones() != 1
                || action_bits.count_ones() != 1
                || flags & !(data_bits | action_bits) != 0
            {
                return Err(ProtoError::Invalid {
                    what: W,
                    why: format!("flags {flags:#x}: one data and one action flag"),
                });
            }
            let (index, start, count) = (u32_at(body, 8), u32_at(body, 12), u32_at(body, 16));
            let data = &body[20..];
            let want = if data_bits == IRQ_DATA_BOOL {
                count as usize
            } else {
                0
            };
            if data.len() != want {
                return Err(ProtoError::Invalid {
                    what: W,
                    why: format!("{} data bytes for {count} sub-indexes", data.len()),
                });
            }
            Ok(Request::DeviceSetIrqs {
                flags,
                index,
                start,
                count,
                data,
            })
        }
        Command::RegionRead => {
            const W: &str = "VFIO_USER_REGION_READ";
            exact(W, body, 16)?;
            let count = at_most(W, u32_at(body, 12), max_xfer)?;
            Ok(Request::RegionRead {
                offset: u64_at(body, 0),
                region: u32_at(body, 8),
                count,
            })
        }
        Command::RegionWrite => {
            const W: &str = "VFIO_USER_REGION_WRITE";
            need(W, body, 16)?;
            let count = at_most(W, u32_at(body, 12), max_xfer)?;
            exact(W, body, 16 + count as usize)?;
            Ok(Request::RegionWrite {
                offset: u64_at(body, 0),
                region: u32_at(body, 8),
                data: &body[16..],
            })
        }
        Command::DeviceReset => {
            exact("VFIO_USER_DEVICE_RESET", body, 0)?;
            Ok(Request::DeviceReset)
        }
        other => Err(ProtoError::Unsupported(other)),
    }
}

/// `VFIO_DEVICE_FLAGS_RESET`.
pub const DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_PCI`.
pub const DEVICE_FLAGS_PCI: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_READ`.
pub const REGION_READ: u32 = 1 << 0;
/// `VFIO_REGION_INFO_FLAG_WRITE`.
pub const REGION_WRITE: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_MMAP`.
pub const REGION_MMAP: u32 = 1 << 2;
/// `VFIO_REGION_INFO_FLAG_CAPS`.
pub const REGION_CAPS: u32 = 1 << 3;
/// `VFIO_REGION_INFO_CAP_SPARSE_MMAP` (linux/vfio.h).
pub const CAP_SPARSE_MMAP: u16 = 1;

/// The `VFIO_USER_DEVICE_GET_INFO` reply body.
pub fn device_info(flags: u32, num_regions: u32, num_irqs: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&16u32.to_le_bytes());
    b[4..8].copy_from_slice(&flags.to_le_bytes());
    b[8..12].copy_from_slice(&num_regions.to_le_bytes());
    b[12..16].copy_from_slice(&num_irqs.to_le_bytes());
    b
}

/// A region as `VFIO_USER_DEVICE_GET_REGION_INFO` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegionInfo {
    /// `REGION_*` flags (`REGION_CAPS` is added when `sparse` is set).
    pub flags: u32,
    /// Region index.
    pub index: u32,
    /// Bytes.
    pub size: u64,
    /// The mmap offset of the region's fd.
    pub offset: u64,
    /// Mappable (offset, size) areas, for the sparse-mmap capability.
    pub sparse: Vec<(u64, u64)>,
}

impl fmt::Display for RegionInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region {} ({} bytes)", self.index, self.size)
    }
}

impl RegionInfo {
    /// Reads a `VFIO_USER_DEVICE_GET_REGION_INFO` reply body (what a
    /// client does), the sparse-mmap capability included when present.
    pub fn parse(b: &[u8]) -> Result<RegionInfo, ProtoError> {
        let short = |need: usize| ProtoError::Truncated {
            what: "region info",
            need,
            got: b.len(),
        };
        if b.len() < 32 {
            return Err(short(32));
        }
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let flags = u32_at(4);
        let mut info = RegionInfo {
            flags: flags & !REGION_CAPS,
            index: u32_at(8),
            size: u64_at(16),
            offset: u64_at(24),
            sparse: Vec::new(),
        };
        let mut at = u32_at(12) as usize;
        // Each capability names the next; at most a few, never backwards.
        let mut hops = 0;
        while flags & REGION_CAPS != 0 && at != 0 && hops < 8 {
            hops += 1;
            if at < 32 || at.checked_add(8).is_none_or(|e| e > b.len()) {
                return Err(short(at.saturating_add(8)));
            }
            let id = u16::from_le_bytes([b[at], b[at + 1]]);
            let next = u32_at(at + 4) as usize;
            if id == CAP_SPARSE_MMAP {
                if at + 16 > b.len() {
                    return Err(short(at + 16));
                }
                let n = u32_at(at + 8) as usize;
                let end = n
                    .checked_mul(16)
                    .and_then(|l| l.checked_add(at + 16))
                    .filter(|&e| e <= b.len())
                    .ok_or_else(|| short(at + 16 + n.saturating_mul(16)))?;
                info.sparse = b[at + 16..end]
                    .chunks_exact(16)
                    .map(|c| {
                        (
                            u64::from_le_bytes(c[..8].try_into().unwrap()),
                            u64::from_le_bytes(c[8..].try_into().unwrap()),
                        )
                    })
                    .collect();
            }
            if next != 0 && next <= at {
                break;
            }
            at = next;
        }
        Ok(info)
    }

    /// The reply body for a request whose `argsz` is `argsz`. As with
    /// VFIO's ioctl, a reply that does not fit gives only the fixed part
    /// with `argsz` set to the size needed (and no capability), so the
    /// client can ask again with room.
    pub fn reply(&self, argsz: u32) -> Vec<u8> {
        let cap_len = if self.sparse.is_empty() {
            0
        } else {
            8 + 8 + 16 * self.sparse.len()
        };
        let need = 32 + cap_len;
        let fits = argsz as usize >= need;
        let mut flags = self.flags;
        if cap_len > 0 && fits {
            flags |= REGION_CAPS;
        }
        let mut b = Vec::with_capacity(if fits { need } else { 32 });
        b.extend_from_slice(&(need as u32).to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&self.index.to_le_bytes());
        let cap_offset: u32 = if cap_len > 0 && fits { 32 } else { 0 };
        b.extend_from_slice(&cap_offset.to_le_bytes());
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.offset.to_le_bytes());
        if cap_len > 0 && fits {
            b.extend_from_slice(&CAP_SPARSE_MMAP.to_le_bytes());
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // next: none
            b.extend_from_slice(&(self.sparse.len() as u32).to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes()); // reserved
            for &(o, s) in &self.sparse {
                b.extend_from_slice(&o.to_le_bytes());
                b.extend_from_slice(&s.to_le_bytes());
            }
        }
        b
    }
}

/// The `VFIO_USER_DEVICE_GET_IRQ_INFO` reply body.
pub fn irq_info(flags: u32, index: u32, count: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&16u32.to_le_bytes());
    b[4..8].copy_from_slice(&flags.to_le_bytes());
    b[8..12].copy_from_slice(&index.to_le_bytes());
    b[12..16].copy_from_slice(&count.to_le_bytes());
    b
}

/// The first 16 bytes of a region read or write reply: offset, region,
/// count (a read's data follows).
pub fn region_io_reply(offset: u64, region: u32, count: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&offset.to_le_bytes());
    b[8..12].copy_from_slice(&region.to_le_bytes());
    b[12..16].copy_from_slice(&count.to_le_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(id: u16, command: u16, body: usize) -> Header {
        Header {
            id,
            command,
            size: (HEADER_LEN + body) as u32,
            flags: 0,
            error: 0,
        }
    }

    // The header as the spec's table places it: id at 0 (2 bytes),
    // command at 2 (2), size at 4 (4), flags at 8 (4), error at 12 (4).
    #[test]
    fn header_fields_sit_where_the_spec_puts_them() {
        let b = [
            0x34, 0x12, 0x05, 0x00, 0x30, 0x00, 0x00, 0x00, 0x21, 0x00, 0x00, 0x00, 0x16, 0x00,
            0x00, 0x00,
        ];
        let h = Header::parse(&b);
        assert_eq!(
            h,
            Header {
                id: 0x1234,
                command: 5,
                size: 0x30,
                flags: FLAG_REPLY | FLAG_ERROR,
                error: 22
            }
        );
        assert_eq!(h.to_bytes(), b);
        assert!(!h.is_command());
        let e = hdr(7, 9, 16).error_reply(22);
        assert_eq!(
            (e.id, e.command, e.size, e.flags, e.error),
            (7, 9, 16, 0x21, 22)
        );
        assert_eq!(hdr(7, 9, 16).reply(40).size, 56);
    }

    #[test]
    fn command_numbers_follow_the_table() {
        assert_eq!(Command::from_u16(1), Some(Command::Version));
        assert_eq!(Command::from_u16(13), Some(Command::DeviceReset));
        assert_eq!(Command::from_u16(14), None, "14 is not assigned");
        assert_eq!(Command::from_u16(15), Some(Command::RegionWriteMulti));
        assert_eq!(Command::from_u16(18), Some(Command::MigDataWrite));
        assert_eq!(Command::from_u16(0), None);
    }

    #[test]
    fn version_reads_its_capabilities_and_defaults() {
        let mut body = vec![0, 0, 1, 0];
        body.extend_from_slice(
            br#"{"capabilities":{"max_msg_fds":8,"max_data_xfer_size":65536,"pgsizes":4096,"migration":{}}}"#,
        );
        body.push(0);
        let r = decode(&hdr(1, 1, body.len()), &body, 1 << 20).unwrap();
        assert_eq!(
            r,
            Request::Version {
                major: 0,
                minor: 1,
                caps: Capabilities {
                    max_msg_fds: 8,
                    max_data_xfer_size: 65536,
                    ..Capabilities::default()
                }
            }
        );
        // No data: the spec's defaults.
        let r = decode(&hdr(1, 1, 4), &[0, 0, 1, 0], 1 << 20).unwrap();
        assert!(matches!(r, Request::Version { caps, .. } if caps == Capabilities::default()));
        // Wrong types are refused with EINVAL.
        let mut bad = vec![0, 0, 1, 0];
        bad.extend_from_slice(br#"{"capabilities":{"max_msg_fds":"many"}}"#);
        let e = decode(&hdr(1, 1, bad.len()), &bad, 1 << 20).unwrap_err();
        assert_eq!(e.errno(), 22);
        let caps = Capabilities::parse(&Capabilities::default().to_json()).unwrap();
        assert_eq!(caps, Capabilities::default());
    }

    // DMA_MAP: argsz 0, flags 4, offset 8, address 16, size 24; 32 bytes.
    #[test]
    fn dma_map_layout_and_checks() {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&32u32.to_le_bytes());
        b[4..8].copy_from_slice(&3u32.to_le_bytes());
        b[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
        b[16..24].copy_from_slice(&0x8000_0000u64.to_le_bytes());
        b[24..32].copy_from_slice(&0x20_0000u64.to_le_bytes());
        assert_eq!(
            decode(&hdr(2, 2, 32), &b, 1 << 20).unwrap(),
            Request::DmaMap {
                flags: DMA_READ | DMA_WRITE,
                offset: 0x1000,
                address: 0x8000_0000,
                size: 0x20_0000
            }
        );
        let mut wrapping = b;
        wrapping[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&hdr(2, 2, 32), &wrapping, 1 << 20).is_err());
        let mut argsz = b;
        argsz[0..4].copy_from_slice(&40u32.to_le_bytes());
        assert!(decode(&hdr(2, 2, 32), &argsz, 1 << 20).is_err());
        assert!(matches!(
            decode(&hdr(2, 2, 31), &b[..31], 1 << 20),
            Err(ProtoError::Truncated {
                need: 32,
                got: 31,
                ..
            })
        ));
    }

    // SET_IRQS: argsz 0, flags 4, index 8, start 12, count 16, data 20.
    #[test]
    fn set_irqs_layout_and_flag_rules() {
        let mut b = vec![0u8; 20];
        b[0..4].copy_from_slice(&20u32.to_le_bytes());
        b[4..8].copy_from_slice(&(IRQ_DATA_EVENTFD | IRQ_ACTION_TRIGGER).to_le_bytes());
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        b[12..16].copy_from_slice(&0u32.to_le_bytes());
        b[16..20].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(
            decode(&hdr(3, 8, 20), &b, 1 << 20).unwrap(),
            Request::DeviceSetIrqs {
                flags: 0x24,
                index: 2,
                start: 0,
                count: 4,
                data: &[]
            }
        );
        // DATA_BOOL carries a byte per sub-index.
        let mut bools = b.clone();
        bools[0..4].copy_from_slice(&24u32.to_le_bytes());
        bools[4..8].copy_from_slice(&(IRQ_DATA_BOOL | IRQ_ACTION_MASK).to_le_bytes());
        bools.extend_from_slice(&[1, 0, 1, 1]);
        assert!(matches!(
            decode(&hdr(3, 8, 24), &bools, 1 << 20).unwrap(),
            Request::DeviceSetIrqs {
                data: [1, 0, 1, 1],
                ..
            }
        ));
        // Two data flags, or none, are refused.
        let mut two = b.clone();
        two[4..8].copy_from_slice(&(IRQ_DATA_NONE | IRQ_DATA_BOOL | IRQ_ACTION_MASK).to_le_bytes());
        assert!(decode(&hdr(3, 8, 20), &two, 1 << 20).is_err());
        let mut none = b;
        none[4..8].copy_from_slice(&IRQ_ACTION_MASK.to_le_bytes());
        assert!(decode(&hdr(3, 8, 20), &none, 1 << 20).is_err());
    }

    // REGION_READ/WRITE: offset 0, region 8, count 12, data 16.
    #[test]
    fn region_io_layout_and_limits() {
        let mut b = vec![0u8; 16];
        b[0..8].copy_from_slice(&0x2000u64.to_le_bytes());
        b[8..12].copy_from_slice(&0u32.to_le_bytes());
        b[12..16].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(
            decode(&hdr(4, 9, 16), &b, 4096).unwrap(),
            Request::RegionRead {
                offset: 0x2000,
                region: 0,
                count: 4
            }
        );
        let mut w = b.clone();
        w.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            decode(&hdr(4, 10, 20), &w, 4096).unwrap(),
            Request::RegionWrite {
                offset: 0x2000,
                region: 0,
                data: &[1, 2, 3, 4]
            }
        );
        // A count that disagrees with the data, or passes the limit.
        assert!(decode(&hdr(4, 10, 19), &w[..19], 4096).is_err());
        let mut big = b;
        big[12..16].copy_from_slice(&8192u32.to_le_bytes());
        assert_eq!(decode(&hdr(4, 9, 16), &big, 4096).unwrap_err().errno(), 7);
        assert_eq!(
            region_io_reply(0x2000, 0, 4),
            w[..16],
            "the reply starts as the request"
        );
    }

    // region info: argsz 0, flags 4, index 8, cap_offset 12, size 16,
    // offset 24; the sparse cap: id 0, version 2, next 4, nr_areas 8,
    // reserved 12, areas (offset, size) from 16.
    #[test]
    fn region_info_with_a_sparse_mmap_capability() {
        let r = RegionInfo {
            flags: REGION_READ | REGION_WRITE | REGION_MMAP,
            index: 2,
            size: 4 << 20,
            offset: 0x4000_0000,
            sparse: vec![(0, 4 << 20)],
        };
        let b = r.reply(256);
        assert_eq!(b.len(), 32 + 16 + 16);
        assert_eq!(u32_at(&b, 0), 64);
        assert_eq!(u32_at(&b, 4), 0xf);
        assert_eq!(u32_at(&b, 8), 2);
        assert_eq!(u32_at(&b, 12), 32);
        assert_eq!(u64_at(&b, 16), 4 << 20);
        assert_eq!(u64_at(&b, 24), 0x4000_0000);
        assert_eq!(&b[32..36], &[1, 0, 1, 0]);
        assert_eq!(u32_at(&b, 36), 0);
        assert_eq!(u32_at(&b, 40), 1);
        assert_eq!((u64_at(&b, 48), u64_at(&b, 56)), (0, 4 << 20));
        // Too small an argsz: the fixed part, saying how much is needed.
        let short = r.reply(32);
        assert_eq!(short.len(), 32);
        assert_eq!(u32_at(&short, 0), 64);
        assert_eq!(u32_at(&short, 4) & REGION_CAPS, 0);
        assert_eq!(u32_at(&short, 12), 0);
        // What a client reads back.
        assert_eq!(RegionInfo::parse(&b).unwrap(), r);
        let plain = RegionInfo::parse(&short).unwrap();
        assert!(plain.sparse.is_empty() && plain.size == 4 << 20);
        // A capability said to lie past the body, or with more areas than
        // sent, is refused; a loop of capabilities ends.
        let mut lying = b.clone();
        lying[12..16].copy_from_slice(&60u32.to_le_bytes());
        assert!(RegionInfo::parse(&lying).is_err());
        let mut many = b.clone();
        many[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(RegionInfo::parse(&many).is_err());
        let mut cyclic = b.clone();
        cyclic[36..40].copy_from_slice(&32u32.to_le_bytes());
        assert_eq!(RegionInfo::parse(&cyclic).unwrap().sparse, r.sparse);
        assert!(RegionInfo::parse(&b[..31]).is_err());
    }

    #[test]
    fn headers_outside_the_limits_are_refused() {
        let mut h = hdr(1, 9, 16);
        assert!(check_header(&h, 4096).is_ok());
        h.size = 8;
        assert!(check_header(&h, 4096).is_err());
        h.size = (max_message(4096) + 1) as u32;
        assert!(check_header(&h, 4096).is_err());
        h.size = 32;
        h.flags = FLAG_REPLY;
        assert_eq!(check_header(&h, 4096), Err(ProtoError::NotCommand(1)));
        assert_eq!(
            decode(&hdr(1, 99, 0), &[], 4096),
            Err(ProtoError::UnknownCommand(99))
        );
        assert_eq!(
            decode(&hdr(1, 11, 0), &[], 4096).unwrap_err().errno(),
            95,
            "DMA_READ goes the other way: not served"
        );
    }

    proptest::proptest! {
        // Whatever a client sends, decoding answers; it never panics or
        // reads past the body.
        #[test]
        fn any_bytes_decode_without_panicking(
            command in 0u16..24,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..96),
        ) {
            let h = hdr(9, command, body.len());
            let _ = decode(&h, &body, 64);
        }

        // A region write's data is exactly the bytes after its 16-byte
        // prefix, for any count that fits.
        #[test]
        fn region_writes_round_trip(
            offset in proptest::num::u64::ANY,
            region in 0u32..9,
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        ) {
            let mut b = region_io_reply(offset, region, data.len() as u32).to_vec();
            b.extend_from_slice(&data);
            let h = hdr(1, 10, b.len());
            let r = decode(&h, &b, 64).unwrap();
            proptest::prop_assert_eq!(r, Request::RegionWrite { offset, region, data: &data });
        }
    }
}
