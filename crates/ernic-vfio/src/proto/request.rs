//! The client's requests: [`decode`] checks a message's lengths and
//! counts against the header and the negotiated maximum before it reads,
//! and gives a [`Request`] borrowing the message.

use super::{Capabilities, Command, HEADER_LEN, Header, ProtoError};

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

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("checked length"))
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
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
