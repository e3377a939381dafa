//! The 64-byte NVMe submission queue entry in its common layout
//! (`struct nvme_common_command`), and the admin and I/O opcodes the target
//! serves. The view is lossless: every byte is reachable, unknown opcodes
//! stay `Unknown(u8)`. After [`Packet::new_checked`] no accessor panics.

use super::bits::{Field, array, get_le16, get_le32, get_le64, set_bytes, view};

/// `sizeof(struct nvme_command)`: 64 bytes (`NVME_SQE` size).
pub const LEN: usize = 64;

/// The fields of `struct nvme_common_command`, as byte ranges.
pub mod field {
    use super::Field;
    /// `opcode`.
    pub const OPCODE: usize = 0;
    /// `flags`: FUSE bits 0-1, PSDT bits 6-7.
    pub const FLAGS: usize = 1;
    /// `command_id` (`__u16`, host order on the wire: little-endian).
    pub const COMMAND_ID: Field = 2..4;
    /// `nsid` (le32).
    pub const NSID: Field = 4..8;
    /// `cdw2[2]` (le32 each).
    pub const CDW2: Field = 8..16;
    /// `metadata` (le64).
    pub const METADATA: Field = 16..24;
    /// `dptr`: PRP1/PRP2 or one SGL descriptor.
    pub const DPTR: Field = 24..40;
    /// `cdw10`..`cdw15` (le32 each).
    pub const CDW10: Field = 40..64;
}

/// `NVME_CMD_FUSE_FIRST`/`SECOND` live in bits 0-1 of `flags`.
pub const FLAGS_FUSE_MASK: u8 = 0x03;
/// PSDT, bits 6-7 of `flags`.
pub const FLAGS_PSDT_MASK: u8 = 0xc0;
/// `NVME_CMD_SGL_METABUF` (PSDT 01b): SGL, metadata in one buffer.
pub const FLAGS_SGL_METABUF: u8 = 1 << 6;
/// `NVME_CMD_SGL_METASEG` (PSDT 10b): SGL, metadata as a segment.
pub const FLAGS_SGL_METASEG: u8 = 1 << 7;

view!("NVMe submission queue entry", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `opcode`, raw (admin or I/O depends on the queue: see
    /// [`AdminOpcode`], [`IoOpcode`]).
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }
    /// `flags`, raw.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// FUSE (bits 0-1 of `flags`).
    pub fn fuse(&self) -> u8 {
        self.flags() & FLAGS_FUSE_MASK
    }
    /// PSDT (bits 6-7 of `flags`): 0 PRP, 1 or 2 SGL, 3 reserved.
    pub fn psdt(&self) -> u8 {
        self.flags() >> 6
    }
    /// Whether PSDT says the data pointer is an SGL (01b or 10b).
    pub fn is_sgl(&self) -> bool {
        matches!(self.psdt(), 1 | 2)
    }
    /// `command_id`.
    pub fn command_id(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::COMMAND_ID)
    }
    /// `nsid`.
    pub fn nsid(&self) -> u32 {
        get_le32(self.buffer.as_ref(), field::NSID)
    }
    /// `cdw2[i]`, `i` in 0..2; `None` outside.
    pub fn cdw2(&self, i: usize) -> Option<u32> {
        (i < 2).then(|| {
            let s = field::CDW2.start + 4 * i;
            get_le32(self.buffer.as_ref(), s..s + 4)
        })
    }
    /// `metadata`.
    pub fn metadata(&self) -> u64 {
        get_le64(self.buffer.as_ref(), field::METADATA)
    }
    /// `dptr`, the 16 bytes (decode them with
    /// [`sgl::Descriptor::from_dptr`](super::sgl::Descriptor::from_dptr) when
    /// [`is_sgl`](Self::is_sgl)).
    pub fn dptr(&self) -> [u8; 16] {
        array(self.buffer.as_ref(), field::DPTR)
    }
    /// `cdw{n}`, `n` in 10..=15; `None` outside.
    pub fn cdw(&self, n: usize) -> Option<u32> {
        cdw_field(n).map(|f| get_le32(self.buffer.as_ref(), f))
    }
}

fn cdw_field(n: usize) -> Option<Field> {
    (10..=15).contains(&n).then(|| {
        let s = field::CDW10.start + 4 * (n - 10);
        s..s + 4
    })
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `opcode`.
    pub fn set_opcode(&mut self, v: u8) {
        self.buffer.as_mut()[field::OPCODE] = v;
    }
    /// Sets `flags`.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }
    /// Sets `command_id`.
    pub fn set_command_id(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::COMMAND_ID, &v.to_le_bytes());
    }
    /// Sets `nsid`.
    pub fn set_nsid(&mut self, v: u32) {
        set_bytes(self.buffer.as_mut(), field::NSID, &v.to_le_bytes());
    }
    /// Sets `cdw2[i]`; does nothing for `i` outside 0..2.
    pub fn set_cdw2(&mut self, i: usize, v: u32) {
        if i < 2 {
            let s = field::CDW2.start + 4 * i;
            set_bytes(self.buffer.as_mut(), s..s + 4, &v.to_le_bytes());
        }
    }
    /// Sets `metadata`.
    pub fn set_metadata(&mut self, v: u64) {
        set_bytes(self.buffer.as_mut(), field::METADATA, &v.to_le_bytes());
    }
    /// Sets `dptr`.
    pub fn set_dptr(&mut self, v: &[u8; 16]) {
        set_bytes(self.buffer.as_mut(), field::DPTR, v);
    }
    /// Sets `cdw{n}`; does nothing for `n` outside 10..=15.
    pub fn set_cdw(&mut self, n: usize, v: u32) {
        if let Some(f) = cdw_field(n) {
            set_bytes(self.buffer.as_mut(), f, &v.to_le_bytes());
        }
    }
}

macro_rules! opcodes {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $n:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vm])* $v,)*
            /// Any other value, kept.
            Unknown(u8),
        }
        impl From<u8> for $name {
            fn from(v: u8) -> Self {
                match v {
                    $($n => $name::$v,)*
                    other => $name::Unknown(other),
                }
            }
        }
        impl From<$name> for u8 {
            fn from(v: $name) -> u8 {
                match v {
                    $($name::$v => $n,)*
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}

opcodes! {
    /// `enum nvme_admin_opcode`: the admin commands the target serves.
    AdminOpcode {
        /// `nvme_admin_get_log_page`.
        GetLogPage = 0x02,
        /// `nvme_admin_identify`.
        Identify = 0x06,
        /// `nvme_admin_abort_cmd`.
        Abort = 0x08,
        /// `nvme_admin_set_features`.
        SetFeatures = 0x09,
        /// `nvme_admin_get_features`.
        GetFeatures = 0x0a,
        /// `nvme_admin_async_event`.
        AsyncEvent = 0x0c,
        /// `nvme_admin_keep_alive`.
        KeepAlive = 0x18,
        /// `nvme_fabrics_command`: see the Fabrics formats.
        Fabrics = 0x7f,
    }
}

opcodes! {
    /// `enum nvme_opcode`: the I/O commands the target serves.
    IoOpcode {
        /// `nvme_cmd_flush`.
        Flush = 0x00,
        /// `nvme_cmd_write`.
        Write = 0x01,
        /// `nvme_cmd_read`.
        Read = 0x02,
        /// `nvme_cmd_write_zeroes`.
        WriteZeroes = 0x08,
        /// `nvme_cmd_dsm`.
        DatasetManagement = 0x09,
        /// `nvme_fabrics_command` (also 0x7f on I/O queues).
        Fabrics = 0x7f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// A read (0x02), PSDT 01b, fuse 0b01, every field distinct, written
    /// from `struct nvme_common_command`'s layout.
    static SQE_BYTES: [u8; 64] = [
        0x02, 0x41, 0x34, 0x12, // opcode, flags, command_id 0x1234
        0x78, 0x56, 0x34, 0x12, // nsid 0x12345678
        0x01, 0x02, 0x03, 0x04, // cdw2[0] 0x04030201
        0x05, 0x06, 0x07, 0x08, // cdw2[1] 0x08070605
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // metadata
        0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, // dptr 0..8
        0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, // dptr 8..16
        0xa0, 0xa1, 0xa2, 0xa3, // cdw10
        0xb0, 0xb1, 0xb2, 0xb3, // cdw11
        0xc0, 0xc1, 0xc2, 0xc3, // cdw12
        0xd0, 0xd1, 0xd2, 0xd3, // cdw13
        0xe0, 0xe1, 0xe2, 0xe3, // cdw14
        0xf0, 0xf1, 0xf2, 0xf3, // cdw15
    ];

    #[test]
    fn len_is_nvme_h() {
        assert_eq!(LEN, 64);
        assert_eq!(field::CDW10.end, LEN);
        assert_eq!(field::DPTR.len(), 16);
    }

    #[test]
    fn parse_fields() {
        let p = Packet::new_checked(&SQE_BYTES[..]).unwrap();
        assert_eq!(p.opcode(), 0x02);
        assert_eq!(IoOpcode::from(p.opcode()), IoOpcode::Read);
        assert_eq!(AdminOpcode::from(p.opcode()), AdminOpcode::GetLogPage);
        assert_eq!(p.flags(), 0x41);
        assert_eq!(p.fuse(), 1);
        assert_eq!(p.psdt(), 1);
        assert!(p.is_sgl());
        assert_eq!(p.command_id(), 0x1234);
        assert_eq!(p.nsid(), 0x1234_5678);
        assert_eq!(p.cdw2(0), Some(0x0403_0201));
        assert_eq!(p.cdw2(1), Some(0x0807_0605));
        assert_eq!(p.cdw2(2), None);
        assert_eq!(p.metadata(), 0x1817_1615_1413_1211);
        assert_eq!(p.dptr(), <[u8; 16]>::try_from(&SQE_BYTES[24..40]).unwrap());
        let cdws = [
            0xa3a2_a1a0,
            0xb3b2_b1b0,
            0xc3c2_c1c0,
            0xd3d2_d1d0,
            0xe3e2_e1e0,
            0xf3f2_f1f0,
        ];
        for (i, want) in cdws.iter().enumerate() {
            assert_eq!(p.cdw(10 + i), Some(*want), "cdw{}", 10 + i);
        }
        assert_eq!(p.cdw(9), None);
        assert_eq!(p.cdw(16), None);
    }

    #[test]
    fn emit_same_bytes() {
        let src = Packet::new_checked(&SQE_BYTES[..]).unwrap();
        let mut buf = [0u8; 64];
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_opcode(u8::from(IoOpcode::Read));
        p.set_flags(FLAGS_SGL_METABUF | 1);
        p.set_command_id(src.command_id());
        p.set_nsid(src.nsid());
        p.set_cdw2(0, src.cdw2(0).unwrap());
        p.set_cdw2(1, src.cdw2(1).unwrap());
        p.set_cdw2(2, 0xdead_beef); // ignored
        p.set_metadata(src.metadata());
        p.set_dptr(&src.dptr());
        for n in 10..=15 {
            p.set_cdw(n, src.cdw(n).unwrap());
        }
        p.set_cdw(16, 0xdead_beef); // ignored
        assert_eq!(buf, SQE_BYTES);
    }

    #[test]
    fn psdt_values() {
        let mut buf = [0u8; 64];
        for (flags, psdt, sgl) in [
            (0x00, 0, false),
            (0x40, 1, true),
            (0x80, 2, true),
            (0xc0, 3, false),
        ] {
            Packet::new_unchecked(&mut buf[..]).set_flags(flags);
            let p = Packet::new_checked(&buf[..]).unwrap();
            assert_eq!((p.psdt(), p.is_sgl()), (psdt, sgl), "flags {flags:#x}");
        }
    }

    #[test]
    fn opcodes_round_trip() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(AdminOpcode::from(v)), v);
            assert_eq!(u8::from(IoOpcode::from(v)), v);
        }
        assert_eq!(AdminOpcode::from(0x06), AdminOpcode::Identify);
        assert_eq!(AdminOpcode::from(0x18), AdminOpcode::KeepAlive);
        assert_eq!(AdminOpcode::from(0x7f), AdminOpcode::Fabrics);
        assert_eq!(AdminOpcode::from(0x01), AdminOpcode::Unknown(0x01));
        assert_eq!(IoOpcode::from(0x08), IoOpcode::WriteZeroes);
        assert_eq!(IoOpcode::from(0x09), IoOpcode::DatasetManagement);
        assert_eq!(IoOpcode::from(0x05), IoOpcode::Unknown(0x05));
    }

    #[test]
    fn short_buffer() {
        assert_eq!(
            Packet::new_checked(&SQE_BYTES[..63]).unwrap_err(),
            Error::Truncated {
                format: "NVMe submission queue entry",
                need: 64,
                len: 63
            }
        );
    }
}
