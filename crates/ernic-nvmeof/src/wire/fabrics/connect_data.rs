//! The 1024 bytes of data a Connect command carries
//! (`struct nvmf_connect_data`): the host identifier, the controller ID
//! asked for, and the subsystem's and the host's NVMe Qualified Names.
//!
//! An NQN sits NUL-padded in a 256-byte field (`NVMF_NQN_FIELD_LEN`) and may
//! be at most 223 bytes long (`NVMF_NQN_SIZE`). The view hands out the bytes
//! up to the first NUL, whatever they are; [`Repr::parse`] accepts only a
//! terminated, short enough, UTF-8 name and keeps it as an [`Nqn`], which
//! owns its bytes in a fixed array (no allocation).

use core::fmt;

use super::super::bits::{Field, array, get_le16, set_bytes, view};
use crate::Error;

/// `sizeof(struct nvmf_connect_data)`.
pub const LEN: usize = 1024;

/// `NVMF_NQN_FIELD_LEN`: an NQN field's size.
pub const NQN_FIELD_LEN: usize = 256;

/// `NVMF_NQN_SIZE`: the longest NQN, in bytes, without its NUL.
pub const NQN_MAX: usize = 223;

/// The fields of `struct nvmf_connect_data`, as byte ranges.
pub mod field {
    use super::Field;
    /// `hostid` (`uuid_t`, 16 bytes).
    pub const HOSTID: Field = 0..16;
    /// `cntlid` (le16): 0xffff for any (admin queue), else the controller
    /// the I/O queue joins.
    pub const CNTLID: Field = 16..18;
    /// `resv4[238]`.
    pub const RESV4: Field = 18..256;
    /// `subsysnqn[256]`.
    pub const SUBSYSNQN: Field = 256..512;
    /// `hostnqn[256]`.
    pub const HOSTNQN: Field = 512..768;
    /// `resv5[256]`.
    pub const RESV5: Field = 768..1024;
}

view!("NVMe Fabrics Connect data", LEN);

/// The bytes of a NUL-padded field up to its first NUL (all of it if none).
fn up_to_nul(f: &[u8]) -> &[u8] {
    let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    &f[..end]
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// `hostid`.
    pub fn hostid(&self) -> [u8; 16] {
        array(self.buffer.as_ref(), field::HOSTID)
    }
    /// `cntlid`.
    pub fn cntlid(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::CNTLID)
    }
    /// `subsysnqn`, all 256 bytes.
    pub fn subsysnqn_field(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SUBSYSNQN]
    }
    /// `hostnqn`, all 256 bytes.
    pub fn hostnqn_field(&self) -> &[u8] {
        &self.buffer.as_ref()[field::HOSTNQN]
    }
    /// `subsysnqn` up to its first NUL (the whole field if it has none).
    pub fn subsysnqn(&self) -> &[u8] {
        up_to_nul(self.subsysnqn_field())
    }
    /// `hostnqn` up to its first NUL (the whole field if it has none).
    pub fn hostnqn(&self) -> &[u8] {
        up_to_nul(self.hostnqn_field())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `hostid`.
    pub fn set_hostid(&mut self, v: &[u8; 16]) {
        set_bytes(self.buffer.as_mut(), field::HOSTID, v);
    }
    /// Sets `cntlid`.
    pub fn set_cntlid(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::CNTLID, &v.to_le_bytes());
    }
    /// Sets `subsysnqn`, all 256 bytes, raw.
    pub fn set_subsysnqn_field(&mut self, v: &[u8; NQN_FIELD_LEN]) {
        set_bytes(self.buffer.as_mut(), field::SUBSYSNQN, v);
    }
    /// Sets `hostnqn`, all 256 bytes, raw.
    pub fn set_hostnqn_field(&mut self, v: &[u8; NQN_FIELD_LEN]) {
        set_bytes(self.buffer.as_mut(), field::HOSTNQN, v);
    }
}

/// An NVMe Qualified Name: UTF-8, no NUL, at most [`NQN_MAX`] bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Nqn {
    /// The name, then zeros (always zeros, so derived equality is the
    /// name's).
    bytes: [u8; NQN_MAX],
    /// Its length, at most `NQN_MAX`.
    len: u8,
}

impl Nqn {
    /// An NQN from text; fails on a NUL inside or more than [`NQN_MAX`]
    /// bytes.
    pub fn new(name: &str) -> Result<Nqn, Error> {
        if let Some(at) = name.bytes().position(|b| b == 0) {
            return Err(Error::NqnInteriorNul { field: "NQN", at });
        }
        Nqn::from_name("NQN", name.as_bytes())
    }

    /// An NQN from the 256 bytes of a Connect data field.
    fn from_field(field: &'static str, raw: &[u8]) -> Result<Nqn, Error> {
        let Some(len) = raw.iter().position(|&b| b == 0) else {
            return Err(Error::NqnUnterminated {
                field,
                len: raw.len(),
            });
        };
        Nqn::from_name(field, &raw[..len])
    }

    /// `name` holds no NUL.
    fn from_name(field: &'static str, name: &[u8]) -> Result<Nqn, Error> {
        if name.len() > NQN_MAX {
            return Err(Error::NqnTooLong {
                field,
                len: name.len(),
                max: NQN_MAX,
            });
        }
        if let Err(e) = core::str::from_utf8(name) {
            return Err(Error::NqnNotUtf8 {
                field,
                valid_up_to: e.valid_up_to(),
            });
        }
        let mut bytes = [0u8; NQN_MAX];
        bytes[..name.len()].copy_from_slice(name);
        Ok(Nqn {
            bytes,
            // At most NQN_MAX (223), checked above.
            len: name.len() as u8,
        })
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        // Only `from_name` builds an Nqn, after checking these bytes are
        // UTF-8; the empty fallback is never taken.
        core::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether the name is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The 256-byte field: the name, NUL-padded.
    pub fn to_field(&self) -> [u8; NQN_FIELD_LEN] {
        let mut f = [0u8; NQN_FIELD_LEN];
        f[..self.len()].copy_from_slice(self.as_bytes());
        f
    }
}

impl fmt::Debug for Nqn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Nqn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Connect data, validated: both NQNs well formed. Reserved bytes are not
/// kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// `hostid`.
    pub hostid: [u8; 16],
    /// `cntlid`.
    pub cntlid: u16,
    /// `subsysnqn`.
    pub subsysnqn: Nqn,
    /// `hostnqn`.
    pub hostnqn: Nqn,
}

impl Repr {
    /// Reads Connect data; fails on a short buffer or an NQN that is not
    /// NUL-terminated in its field, longer than [`NQN_MAX`], or not UTF-8.
    /// Bytes after an NQN's NUL are ignored.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        Ok(Repr {
            hostid: packet.hostid(),
            cntlid: packet.cntlid(),
            subsysnqn: Nqn::from_field("subsysnqn", packet.subsysnqn_field())?,
            hostnqn: Nqn::from_field("hostnqn", packet.hostnqn_field())?,
        })
    }

    /// The bytes [`emit`](Self::emit) writes: [`LEN`].
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Writes all 1024 bytes, NQNs NUL-padded, reserved bytes 0.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) -> Result<(), Error> {
        packet.check_len()?;
        packet.buffer.as_mut()[..LEN].fill(0);
        packet.set_hostid(&self.hostid);
        packet.set_cntlid(self.cntlid);
        packet.set_subsysnqn_field(&self.subsysnqn.to_field());
        packet.set_hostnqn_field(&self.hostnqn.to_field());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISC: &str = "nqn.2014-08.org.nvmexpress.discovery";
    const HOST: &str = "nqn.2014-08.org.nvmexpress:uuid:0c7c5e3c-2a1d-4d4e-9c8e-2f3a4b5c6d7e";
    const HOSTID: [u8; 16] = [
        0x0c, 0x7c, 0x5e, 0x3c, 0x2a, 0x1d, 0x4d, 0x4e, 0x9c, 0x8e, 0x2f, 0x3a, 0x4b, 0x5c, 0x6d,
        0x7e,
    ];

    /// Connect data as Linux's `nvmf_connect_data_prep` fills it for an
    /// admin queue: hostid, cntlid 0xffff, subsysnqn at 256, hostnqn at 512
    /// (offsets of `struct nvmf_connect_data`), the rest zero.
    fn linux_admin_data() -> [u8; 1024] {
        let mut b = [0u8; 1024];
        b[0..16].copy_from_slice(&HOSTID);
        b[16] = 0xff;
        b[17] = 0xff;
        b[256..256 + DISC.len()].copy_from_slice(DISC.as_bytes());
        b[512..512 + HOST.len()].copy_from_slice(HOST.as_bytes());
        b
    }

    #[test]
    fn layout_is_nvme_h() {
        assert_eq!(field::RESV4.len(), 238);
        assert_eq!(field::SUBSYSNQN.len(), NQN_FIELD_LEN);
        assert_eq!(field::HOSTNQN.start, 512);
        assert_eq!(field::RESV5.end, LEN);
    }

    #[test]
    fn parse_and_emit() {
        let bytes = linux_admin_data();
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.hostid(), HOSTID);
        assert_eq!(p.cntlid(), 0xffff);
        assert_eq!(p.subsysnqn(), DISC.as_bytes());
        assert_eq!(p.hostnqn(), HOST.as_bytes());
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.subsysnqn.as_str(), DISC);
        assert_eq!(r.hostnqn.as_str(), HOST);
        assert_eq!(r.hostnqn, Nqn::new(HOST).unwrap());
        assert_eq!((r.hostid, r.cntlid), (HOSTID, 0xffff));
        let mut out = [0x77u8; 1024];
        r.emit(&mut Packet::new_unchecked(&mut out[..])).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn bytes_after_the_nul_are_ignored() {
        let mut bytes = linux_admin_data();
        bytes[256 + DISC.len() + 1] = b'x';
        let r = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.subsysnqn.as_str(), DISC);
    }

    #[test]
    fn unterminated_nqn() {
        let mut bytes = linux_admin_data();
        bytes[512..768].fill(b'a');
        let p = Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(p.hostnqn().len(), 256);
        assert_eq!(
            Repr::parse(&p),
            Err(Error::NqnUnterminated {
                field: "hostnqn",
                len: 256
            })
        );
    }

    #[test]
    fn nqn_length_limit() {
        let mut bytes = linux_admin_data();
        bytes[256..512].fill(0);
        bytes[256..256 + NQN_MAX].fill(b'n');
        let r = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(r.subsysnqn.len(), 223);
        bytes[256 + NQN_MAX] = b'n';
        assert_eq!(
            Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
            Err(Error::NqnTooLong {
                field: "subsysnqn",
                len: 224,
                max: 223
            })
        );
        assert!(Nqn::new(&"n".repeat(224)).is_err());
        assert_eq!(Nqn::new(&"n".repeat(223)).unwrap().len(), 223);
    }

    #[test]
    fn nqn_not_utf8() {
        let mut bytes = linux_admin_data();
        bytes[512 + 4] = 0xff;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
            Err(Error::NqnNotUtf8 {
                field: "hostnqn",
                valid_up_to: 4
            })
        );
    }

    #[test]
    fn nqn_from_text() {
        let n = Nqn::new("nqn.2026-01.io.ernic:target").unwrap();
        assert_eq!(n.as_bytes(), b"nqn.2026-01.io.ernic:target");
        assert_eq!(format!("{n}"), "nqn.2026-01.io.ernic:target");
        assert_eq!(format!("{n:?}"), "\"nqn.2026-01.io.ernic:target\"");
        let f = n.to_field();
        assert_eq!(&f[..27], n.as_bytes());
        assert!(f[27..].iter().all(|&b| b == 0));
        assert_eq!(
            Nqn::new("nqn.a\0b"),
            Err(Error::NqnInteriorNul {
                field: "NQN",
                at: 5
            })
        );
        let empty = Nqn::new("").unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.as_str(), "");
    }

    #[test]
    fn short_buffer() {
        let bytes = linux_admin_data();
        assert_eq!(
            Packet::new_checked(&bytes[..1023]).unwrap_err(),
            Error::Truncated {
                format: "NVMe Fabrics Connect data",
                need: 1024,
                len: 1023
            }
        );
        let r = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        let mut small = [0u8; 512];
        assert!(r.emit(&mut Packet::new_unchecked(&mut small[..])).is_err());
    }
}
