//! The 16-byte header every vfio-user message starts with, its flag
//! bits, and the command numbers.

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
