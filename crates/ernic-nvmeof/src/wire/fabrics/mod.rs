//! The NVMe over Fabrics commands: SQEs with opcode 0x7f
//! (`nvme_fabrics_command`) whose byte 4, `fctype`, names the command
//! (`struct nvmf_common_command`). This module holds the common view and
//! [`FabricsType`]; the submodules hold the commands the target serves, the
//! Connect command's data, and the controller properties that Property
//! Get/Set address. Layouts are those of `include/linux/nvme.h`.
//!
//! The typed decoders (`Repr::parse`) check the opcode and `fctype` and
//! answer [`Error::NotFabrics`] or [`Error::FabricsType`] for another
//! command;
//! none panics.

use super::bits::{Field, get_le16, set_bytes, view};
use crate::Error;

pub mod connect;
pub mod connect_data;
pub mod property;
pub mod registers;

/// `nvme_fabrics_command`: the opcode of every Fabrics command, admin or
/// I/O queue.
pub const OPCODE: u8 = 0x7f;

/// A Fabrics command is an SQE: 64 bytes.
pub const LEN: usize = 64;

/// The fields of `struct nvmf_common_command`, as byte ranges.
pub mod field {
    use super::Field;
    /// `opcode` (0x7f).
    pub const OPCODE: usize = 0;
    /// `resv1`: where other SQEs hold `flags` (a host still sets PSDT here).
    pub const RESV1: usize = 1;
    /// `command_id`.
    pub const COMMAND_ID: Field = 2..4;
    /// `fctype`.
    pub const FCTYPE: usize = 4;
    /// `ts[24]`: the type-specific bytes 40..64.
    pub const TS: Field = 40..64;
}

/// `enum nvmf_capsule_command`: the Fabrics command types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FabricsType {
    /// `nvme_fabrics_type_property_set`.
    PropertySet,
    /// `nvme_fabrics_type_connect`.
    Connect,
    /// `nvme_fabrics_type_property_get`.
    PropertyGet,
    /// `nvme_fabrics_type_auth_send`.
    AuthSend,
    /// `nvme_fabrics_type_auth_receive`.
    AuthReceive,
    /// Disconnect (0x08): not in the kernel's enum; libnvme's
    /// `enum nvme_fctype` names it `nvme_fabrics_type_disconnect`.
    Disconnect,
    /// Any other value, kept.
    Unknown(u8),
}

impl From<u8> for FabricsType {
    fn from(v: u8) -> Self {
        match v {
            0x00 => FabricsType::PropertySet,
            0x01 => FabricsType::Connect,
            0x04 => FabricsType::PropertyGet,
            0x05 => FabricsType::AuthSend,
            0x06 => FabricsType::AuthReceive,
            0x08 => FabricsType::Disconnect,
            other => FabricsType::Unknown(other),
        }
    }
}

impl From<FabricsType> for u8 {
    fn from(v: FabricsType) -> u8 {
        match v {
            FabricsType::PropertySet => 0x00,
            FabricsType::Connect => 0x01,
            FabricsType::PropertyGet => 0x04,
            FabricsType::AuthSend => 0x05,
            FabricsType::AuthReceive => 0x06,
            FabricsType::Disconnect => 0x08,
            FabricsType::Unknown(other) => other,
        }
    }
}

view!("NVMe Fabrics command", LEN);

impl<T: AsRef<[u8]>> Packet<T> {
    /// `opcode`.
    pub fn opcode(&self) -> u8 {
        self.buffer.as_ref()[field::OPCODE]
    }
    /// `resv1` (the SQE's `flags` byte).
    pub fn resv1(&self) -> u8 {
        self.buffer.as_ref()[field::RESV1]
    }
    /// `command_id`.
    pub fn command_id(&self) -> u16 {
        get_le16(self.buffer.as_ref(), field::COMMAND_ID)
    }
    /// `fctype`, raw.
    pub fn fctype_raw(&self) -> u8 {
        self.buffer.as_ref()[field::FCTYPE]
    }
    /// `fctype`.
    pub fn fctype(&self) -> FabricsType {
        FabricsType::from(self.fctype_raw())
    }
    /// Whether this is a Fabrics command at all (opcode 0x7f).
    pub fn is_fabrics(&self) -> bool {
        self.opcode() == OPCODE
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets `opcode`.
    pub fn set_opcode(&mut self, v: u8) {
        self.buffer.as_mut()[field::OPCODE] = v;
    }
    /// Sets `resv1`.
    pub fn set_resv1(&mut self, v: u8) {
        self.buffer.as_mut()[field::RESV1] = v;
    }
    /// Sets `command_id`.
    pub fn set_command_id(&mut self, v: u16) {
        set_bytes(self.buffer.as_mut(), field::COMMAND_ID, &v.to_le_bytes());
    }
    /// Sets `fctype`.
    pub fn set_fctype(&mut self, v: FabricsType) {
        self.buffer.as_mut()[field::FCTYPE] = u8::from(v);
    }
}

/// Checks length, opcode and `fctype` for a typed decoder.
pub(crate) fn check<T: AsRef<[u8]>>(buffer: T, expected: FabricsType) -> Result<(), Error> {
    let p = Packet::new_checked(buffer)?;
    if !p.is_fabrics() {
        return Err(Error::NotFabrics { opcode: p.opcode() });
    }
    if p.fctype() != expected {
        return Err(Error::FabricsType {
            expected: u8::from(expected),
            found: p.fctype_raw(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `enum nvmf_capsule_command` (include/linux/nvme.h), and 0x08 from
    /// libnvme's `enum nvme_fctype`.
    #[test]
    fn fctype_values() {
        for (v, t) in [
            (0x00, FabricsType::PropertySet),
            (0x01, FabricsType::Connect),
            (0x04, FabricsType::PropertyGet),
            (0x05, FabricsType::AuthSend),
            (0x06, FabricsType::AuthReceive),
            (0x08, FabricsType::Disconnect),
            (0x02, FabricsType::Unknown(0x02)),
            (0xff, FabricsType::Unknown(0xff)),
        ] {
            assert_eq!(FabricsType::from(v), t);
        }
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(FabricsType::from(v)), v);
        }
    }

    /// `struct nvmf_common_command`: opcode 0, command_id 2..4, fctype 4,
    /// resv2[35] 5..40, ts[24] 40..64.
    #[test]
    fn common_layout() {
        let mut b = [0u8; 64];
        b[0] = 0x7f;
        b[1] = 0x40;
        b[2] = 0x0a;
        b[3] = 0x00;
        b[4] = 0x04;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert!(p.is_fabrics());
        assert_eq!(p.resv1(), 0x40);
        assert_eq!(p.command_id(), 10);
        assert_eq!(p.fctype(), FabricsType::PropertyGet);
        assert_eq!(field::TS.len(), 24);
        let mut out = [0u8; 64];
        let mut q = Packet::new_unchecked(&mut out[..]);
        q.set_opcode(OPCODE);
        q.set_resv1(0x40);
        q.set_command_id(10);
        q.set_fctype(FabricsType::PropertyGet);
        assert_eq!(out, b);
    }

    #[test]
    fn check_opcode_and_type() {
        let mut b = [0u8; 64];
        b[0] = 0x06;
        assert_eq!(
            check(&b[..], FabricsType::Connect),
            Err(Error::NotFabrics { opcode: 0x06 })
        );
        b[0] = 0x7f;
        b[4] = 0x04;
        assert_eq!(
            check(&b[..], FabricsType::Connect),
            Err(Error::FabricsType {
                expected: 0x01,
                found: 0x04
            })
        );
        assert_eq!(check(&b[..], FabricsType::PropertyGet), Ok(()));
        assert!(matches!(
            check(&b[..40], FabricsType::PropertyGet),
            Err(Error::Truncated {
                need: 64,
                len: 40,
                ..
            })
        ));
    }
}
