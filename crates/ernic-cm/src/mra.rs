//! MRA, message receipt acknowledgement (IBTA vol. 1 Table 107 "MRA
//! Message Contents"): "I have your REQ (or REP, or LAP) and will answer
//! within the service timeout"; 222 bytes of private data.
//!
//! Offsets are `CM_MRA_*` of Linux's `include/rdma/ibta_vol1_c12.h`
//! (torvalds/linux b7e1a1e9); the message is a whole 256-byte MAD, header
//! included. After [`Packet::new_checked`] no accessor panics.

use crate::Error;
use crate::bits::{Bits, Field, array, bit_fields, cm_bytes, cm8, cm32, view};
use crate::mad::{self, AttrId, MAD_LEN};
use crate::msg::{MsgResponse, emit_header, parse_header};

/// `IB_CM_MRA_PRIVATE_DATA_SIZE`.
pub const PRIVATE_DATA_LEN: usize = 222;

/// The fields, as `ibta_vol1_c12.h` places them (offsets from the start
/// of the MAD).
pub mod field {
    use super::*;
    /// `CM_MRA_LOCAL_COMM_ID`.
    pub const LOCAL_COMM_ID: Bits = cm32(0, 32);
    /// `CM_MRA_REMOTE_COMM_ID`.
    pub const REMOTE_COMM_ID: Bits = cm32(4, 32);
    /// `CM_MRA_MESSAGE_MRAED`.
    pub const MESSAGE_MRAED: Bits = cm8(8, 2);
    /// `CM_MRA_SERVICE_TIMEOUT`.
    pub const SERVICE_TIMEOUT: Bits = cm8(9, 5);
    /// `CM_MRA_PRIVATE_DATA`.
    pub const PRIVATE_DATA: Field = cm_bytes(10, 232);
}

view!("CM MRA", MAD_LEN);

bit_fields! {
    /// `CM_MRA_LOCAL_COMM_ID`.
    local_comm_id / set_local_comm_id: u32 = field::LOCAL_COMM_ID;
    /// `CM_MRA_REMOTE_COMM_ID`.
    remote_comm_id / set_remote_comm_id: u32 = field::REMOTE_COMM_ID;
    /// `CM_MRA_MESSAGE_MRAED` (2 bits; see [`MsgResponse`]).
    message_mraed / set_message_mraed: u8 = field::MESSAGE_MRAED;
    /// `CM_MRA_SERVICE_TIMEOUT` (5 bits, 4.096 us * 2^n).
    service_timeout / set_service_timeout: u8 = field::SERVICE_TIMEOUT;
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// `CM_MRA_PRIVATE_DATA`.
    pub fn private_data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PRIVATE_DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// `CM_MRA_PRIVATE_DATA`, to write.
    pub fn private_data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PRIVATE_DATA]
    }
}

/// An MRA. Reserved bits and the MAD's `attr_mod` are emitted as 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// The MAD's transaction id.
    pub tid: u64,
    /// Local communication id.
    pub local_comm_id: u32,
    /// Remote communication id.
    pub remote_comm_id: u32,
    /// The message acknowledged.
    pub message_mraed: MsgResponse,
    /// Service timeout (5 bits; truncated by `emit`).
    pub service_timeout: u8,
    /// The private data.
    pub private_data: [u8; PRIVATE_DATA_LEN],
}

impl Repr {
    /// Reads an MRA: a CM MAD with the MRA attribute, whose "message
    /// MRAed" is not the reserved 3.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
        p.check_len()?;
        let hdr = parse_header(p.buffer.as_ref(), "CM MRA", AttrId::Mra)?;
        Ok(Repr {
            tid: hdr.tid,
            local_comm_id: p.local_comm_id(),
            remote_comm_id: p.remote_comm_id(),
            message_mraed: MsgResponse::from_bits("MRA message MRAed", p.message_mraed())?,
            service_timeout: p.service_timeout(),
            private_data: array(p.buffer.as_ref(), field::PRIVATE_DATA),
        })
    }

    /// Bytes [`emit`](Self::emit) writes: a whole MAD.
    pub const fn buffer_len(&self) -> usize {
        MAD_LEN
    }

    /// Writes the whole MAD into a checked view, header and reserved bytes
    /// included.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let b = p.buffer.as_mut();
        b[..MAD_LEN].fill(0);
        emit_header(b, mad::Repr::cm(AttrId::Mra, self.tid, 0));
        p.set_local_comm_id(self.local_comm_id);
        p.set_remote_comm_id(self.remote_comm_id);
        p.set_message_mraed(self.message_mraed.bits());
        p.set_service_timeout(self.service_timeout);
        p.private_data_mut().copy_from_slice(&self.private_data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::testing::{TID, header, refuses_what_any_cm_message_refuses};

    /// An MRA written by hand from Table 107 as `ibta_vol1_c12.h` lays it
    /// out (offsets from the end of the MAD header).
    fn bytes() -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..24].copy_from_slice(&header(0x0011, 0));
        let m = &mut b[24..];
        m[0..4].copy_from_slice(&[0xc0, 0xc1, 0xc2, 0xc3]); // local comm id
        m[4..8].copy_from_slice(&[0xd0, 0xd1, 0xd2, 0xd3]); // remote comm id
        m[8] = 1 << 6; // message MRAed: REP
        m[9] = 0x17 << 3; // service timeout
        for i in 0..PRIVATE_DATA_LEN {
            m[10 + i] = i as u8 ^ 0x77;
        }
        b
    }

    fn repr() -> Repr {
        Repr {
            tid: TID,
            local_comm_id: 0xc0c1_c2c3,
            remote_comm_id: 0xd0d1_d2d3,
            message_mraed: MsgResponse::Rep,
            service_timeout: 0x17,
            private_data: core::array::from_fn(|i| i as u8 ^ 0x77),
        }
    }

    #[test]
    fn an_mra_reads_and_writes_as_table_107_lays_it_out() {
        let b = bytes();
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap(),
            repr()
        );
        let mut out = [0xffu8; MAD_LEN];
        repr().emit(&mut Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, b);
    }

    #[test]
    fn an_mra_is_refused_like_any_cm_message() {
        refuses_what_any_cm_message_refuses(&bytes(), "CM MRA", 0x0011, |b| {
            Repr::parse(&Packet::new_checked(b)?).map(drop)
        });
    }

    #[test]
    fn an_mra_of_the_reserved_message_kind_is_refused() {
        let mut b = bytes();
        b[24 + 8] = 3 << 6;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::ReservedMessage {
                field: "MRA message MRAed",
                value: 3
            }
        );
    }
}
