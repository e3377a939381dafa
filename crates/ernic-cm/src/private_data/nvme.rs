//! NVMe/RDMA's connect records (`include/linux/nvme-rdma.h`; NVMe over
//! Fabrics 1.1, RDMA transport binding): the host's [`req`] (which queue,
//! how deep) after the rdma_cm header of a REQ's private data, the
//! controller's [`rep`] at the start of a REP's, and [`rej`] at the start
//! of a REJ's (reason `IB_CM_REJ_CONSUMER_DEFINED`). Unlike the CM fields
//! these are little-endian (`__le16`). After `Packet::new_checked` no
//! accessor panics.

use crate::Error;
use crate::bits::get_le16;

/// `NVME_RDMA_CM_FMT_1_0`: the only record format.
pub const RECFMT_1_0: u16 = 0x0;
/// `NVME_RDMA_IP_PORT`: the well-known port.
pub const IP_PORT: u16 = 4420;

fn check_recfmt(got: u16) -> Result<(), Error> {
    if got != RECFMT_1_0 {
        return Err(Error::NvmeRecfmt { got });
    }
    Ok(())
}

/// `struct nvme_rdma_cm_req`: 32 bytes.
pub mod req {
    use super::*;
    use crate::bits::{Field, set_bytes, view};

    /// Bytes of the record.
    pub const LEN: usize = 32;

    /// The fields, as byte ranges (little-endian).
    pub mod field {
        use super::Field;
        /// `recfmt`.
        pub const RECFMT: Field = 0..2;
        /// `qid`: 0 for the admin queue.
        pub const QID: Field = 2..4;
        /// `hrqsize`: the host's receive queue size.
        pub const HRQSIZE: Field = 4..6;
        /// `hsqsize`: the host's send queue size (0's based, as the
        /// Connect command's SQSIZE).
        pub const HSQSIZE: Field = 6..8;
        /// `rsvd`.
        pub const RSVD: Field = 8..32;
    }

    view!("NVMe/RDMA CM request", LEN);

    impl<T: AsRef<[u8]>> Packet<T> {
        /// `recfmt`.
        pub fn recfmt(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::RECFMT)
        }
        /// `qid`.
        pub fn qid(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::QID)
        }
        /// `hrqsize`.
        pub fn hrqsize(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::HRQSIZE)
        }
        /// `hsqsize`.
        pub fn hsqsize(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::HSQSIZE)
        }
    }

    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        /// Sets `recfmt`.
        pub fn set_recfmt(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::RECFMT, &v.to_le_bytes());
        }
        /// Sets `qid`.
        pub fn set_qid(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::QID, &v.to_le_bytes());
        }
        /// Sets `hrqsize`.
        pub fn set_hrqsize(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::HRQSIZE, &v.to_le_bytes());
        }
        /// Sets `hsqsize`.
        pub fn set_hsqsize(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::HSQSIZE, &v.to_le_bytes());
        }
    }

    /// A connect request of record format 1.0. `rsvd` is emitted as 0.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Repr {
        /// Queue id (0: admin).
        pub qid: u16,
        /// Host receive queue size.
        pub hrqsize: u16,
        /// Host send queue size.
        pub hsqsize: u16,
    }

    impl Repr {
        /// Reads a request; another record format is an error.
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
            p.check_len()?;
            check_recfmt(p.recfmt())?;
            Ok(Repr {
                qid: p.qid(),
                hrqsize: p.hrqsize(),
                hsqsize: p.hsqsize(),
            })
        }

        /// Bytes [`emit`](Self::emit) writes.
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the record into a checked view.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.buffer.as_mut()[..LEN].fill(0);
            p.set_recfmt(RECFMT_1_0);
            p.set_qid(self.qid);
            p.set_hrqsize(self.hrqsize);
            p.set_hsqsize(self.hsqsize);
        }
    }
}

/// `struct nvme_rdma_cm_rep`: 32 bytes.
pub mod rep {
    use super::*;
    use crate::bits::{Field, set_bytes, view};

    /// Bytes of the record.
    pub const LEN: usize = 32;

    /// The fields, as byte ranges (little-endian).
    pub mod field {
        use super::Field;
        /// `recfmt`.
        pub const RECFMT: Field = 0..2;
        /// `crqsize`: the controller's receive queue size.
        pub const CRQSIZE: Field = 2..4;
        /// `rsvd`.
        pub const RSVD: Field = 4..32;
    }

    view!("NVMe/RDMA CM reply", LEN);

    impl<T: AsRef<[u8]>> Packet<T> {
        /// `recfmt`.
        pub fn recfmt(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::RECFMT)
        }
        /// `crqsize`.
        pub fn crqsize(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::CRQSIZE)
        }
    }

    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        /// Sets `recfmt`.
        pub fn set_recfmt(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::RECFMT, &v.to_le_bytes());
        }
        /// Sets `crqsize`.
        pub fn set_crqsize(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::CRQSIZE, &v.to_le_bytes());
        }
    }

    /// A connect reply of record format 1.0. `rsvd` is emitted as 0.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Repr {
        /// Controller receive queue size.
        pub crqsize: u16,
    }

    impl Repr {
        /// Reads a reply; another record format is an error.
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
            p.check_len()?;
            check_recfmt(p.recfmt())?;
            Ok(Repr {
                crqsize: p.crqsize(),
            })
        }

        /// Bytes [`emit`](Self::emit) writes.
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the record into a checked view.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.buffer.as_mut()[..LEN].fill(0);
            p.set_recfmt(RECFMT_1_0);
            p.set_crqsize(self.crqsize);
        }
    }
}

/// `struct nvme_rdma_cm_rej`: 4 bytes.
pub mod rej {
    use super::*;
    use crate::bits::{Field, set_bytes, view};

    /// Bytes of the record.
    pub const LEN: usize = 4;

    /// The fields, as byte ranges (little-endian).
    pub mod field {
        use super::Field;
        /// `recfmt`.
        pub const RECFMT: Field = 0..2;
        /// `sts`: an [`enum nvme_rdma_cm_status`](super::Status).
        pub const STS: Field = 2..4;
    }

    /// `enum nvme_rdma_cm_status`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Status {
        /// `NVME_RDMA_CM_INVALID_LEN` (0x01).
        InvalidLen,
        /// `NVME_RDMA_CM_INVALID_RECFMT` (0x02).
        InvalidRecfmt,
        /// `NVME_RDMA_CM_INVALID_QID` (0x03).
        InvalidQid,
        /// `NVME_RDMA_CM_INVALID_HSQSIZE` (0x04).
        InvalidHsqsize,
        /// `NVME_RDMA_CM_INVALID_HRQSIZE` (0x05).
        InvalidHrqsize,
        /// `NVME_RDMA_CM_NO_RSC` (0x06).
        NoResources,
        /// `NVME_RDMA_CM_INVALID_IRD` (0x07).
        InvalidIrd,
        /// `NVME_RDMA_CM_INVALID_ORD` (0x08).
        InvalidOrd,
        /// A status this crate does not name.
        Unknown(u16),
    }

    impl From<u16> for Status {
        fn from(v: u16) -> Status {
            match v {
                0x01 => Status::InvalidLen,
                0x02 => Status::InvalidRecfmt,
                0x03 => Status::InvalidQid,
                0x04 => Status::InvalidHsqsize,
                0x05 => Status::InvalidHrqsize,
                0x06 => Status::NoResources,
                0x07 => Status::InvalidIrd,
                0x08 => Status::InvalidOrd,
                v => Status::Unknown(v),
            }
        }
    }

    impl From<Status> for u16 {
        fn from(s: Status) -> u16 {
            match s {
                Status::InvalidLen => 0x01,
                Status::InvalidRecfmt => 0x02,
                Status::InvalidQid => 0x03,
                Status::InvalidHsqsize => 0x04,
                Status::InvalidHrqsize => 0x05,
                Status::NoResources => 0x06,
                Status::InvalidIrd => 0x07,
                Status::InvalidOrd => 0x08,
                Status::Unknown(v) => v,
            }
        }
    }

    view!("NVMe/RDMA CM reject", LEN);

    impl<T: AsRef<[u8]>> Packet<T> {
        /// `recfmt`.
        pub fn recfmt(&self) -> u16 {
            get_le16(self.buffer.as_ref(), field::RECFMT)
        }
        /// `sts`.
        pub fn sts(&self) -> Status {
            get_le16(self.buffer.as_ref(), field::STS).into()
        }
    }

    impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
        /// Sets `recfmt`.
        pub fn set_recfmt(&mut self, v: u16) {
            set_bytes(self.buffer.as_mut(), field::RECFMT, &v.to_le_bytes());
        }
        /// Sets `sts`.
        pub fn set_sts(&mut self, v: Status) {
            set_bytes(
                self.buffer.as_mut(),
                field::STS,
                &u16::from(v).to_le_bytes(),
            );
        }
    }

    /// A connect rejection of record format 1.0.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Repr {
        /// Why.
        pub sts: Status,
    }

    impl Repr {
        /// Reads a rejection; another record format is an error.
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, Error> {
            p.check_len()?;
            check_recfmt(p.recfmt())?;
            Ok(Repr { sts: p.sts() })
        }

        /// Bytes [`emit`](Self::emit) writes.
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the record into a checked view.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
            p.set_recfmt(RECFMT_1_0);
            p.set_sts(self.sts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `struct nvme_rdma_cm_req` by hand: recfmt 0, qid 3, hrqsize 128,
    /// hsqsize 127, all little-endian.
    static REQ: [u8; req::LEN] = [
        0x00, 0x00, 0x03, 0x00, 0x80, 0x00, 0x7f, 0x00, // recfmt, qid, hrqsize, hsqsize
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // rsvd
    ];

    #[test]
    fn the_connect_request_is_little_endian_as_nvme_rdma_h_says() {
        let p = req::Packet::new_checked(&REQ[..]).unwrap();
        let r = req::Repr::parse(&p).unwrap();
        assert_eq!(
            r,
            req::Repr {
                qid: 3,
                hrqsize: 128,
                hsqsize: 127
            }
        );
        let mut out = [0xffu8; req::LEN];
        r.emit(&mut req::Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, REQ);
        assert!(req::Packet::new_checked(&REQ[..31]).is_err());
    }

    #[test]
    fn the_connect_reply_and_reject_are_little_endian() {
        let mut rep = [0u8; rep::LEN];
        rep[2] = 0x40; // crqsize 64
        let r = rep::Repr::parse(&rep::Packet::new_checked(&rep[..]).unwrap()).unwrap();
        assert_eq!(r, rep::Repr { crqsize: 64 });
        let mut out = [0xffu8; rep::LEN];
        r.emit(&mut rep::Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, rep);

        let rej = [0x00, 0x00, 0x03, 0x00]; // recfmt 0, INVALID_QID
        let r = rej::Repr::parse(&rej::Packet::new_checked(&rej[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            rej::Repr {
                sts: rej::Status::InvalidQid
            }
        );
        let mut out = [0xffu8; rej::LEN];
        r.emit(&mut rej::Packet::new_checked(&mut out[..]).unwrap());
        assert_eq!(out, rej);
        assert_eq!(
            rej::Packet::new_checked(&rej[..3]).unwrap_err(),
            Error::Truncated {
                format: "NVMe/RDMA CM reject",
                need: 4,
                len: 3
            }
        );
    }

    #[test]
    fn another_record_format_is_refused() {
        let mut b = REQ;
        b[0] = 1;
        assert_eq!(
            req::Repr::parse(&req::Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::NvmeRecfmt { got: 1 }
        );
        let b = [0u8, 1, 0, 0]; // recfmt 0x0100, little-endian
        assert_eq!(
            rej::Repr::parse(&rej::Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::NvmeRecfmt { got: 0x0100 }
        );
    }

    #[test]
    fn statuses_convert_both_ways() {
        for v in 0..=16u16 {
            assert_eq!(u16::from(rej::Status::from(v)), v);
        }
        assert_eq!(rej::Status::from(6), rej::Status::NoResources);
    }
}
