//! The NVMe completion status (`include/linux/nvme.h`'s `NVME_SC_*`,
//! `NVME_SCT_*`, `NVME_STATUS_MORE`/`DNR`): the 15-bit field that sits in
//! bits 1..16 of a completion queue entry's `status` word, and the values the
//! target answers with. Bit 0 of that word is the phase tag, which belongs to
//! the queue's transport (fabrics leave it 0); it is not part of [`Status`].
//!
//! Linux keeps a status as `le16_to_cpu(cqe->status) >> 1`, and its
//! `NVME_SC_*` constants are in that form: the status code (SC) in bits 0..8,
//! the status code type (SCT) in bits 8..11, MORE as `0x2000`, DNR as
//! `0x4000`. [`Status::to_field`] and [`Status::from_field`] use the same
//! form, so `Status::X.to_field()` equals `NVME_SC_X`.

/// A completion status: type, code, and the MORE and DNR flags.
///
/// The Command Retry Delay bits (`NVME_STATUS_CRD`, bits 11..13 of the
/// field) are not kept: the target never asks a host to delay a retry, and
/// [`from_field`](Self::from_field) drops them. The raw word stays readable
/// through the completion entry's view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// Status Code Type, 3 bits (`NVME_SCT_*` >> 8); higher bits are not
    /// written by [`to_field`](Self::to_field).
    pub sct: u8,
    /// Status Code.
    pub sc: u8,
    /// More: further information is in the Error Information log page.
    pub more: bool,
    /// Do Not Retry: the same command would fail again.
    pub dnr: bool,
}

/// `NVME_SCT_GENERIC >> 8`: Generic Command Status.
pub const SCT_GENERIC: u8 = 0;
/// `NVME_SCT_COMMAND_SPECIFIC >> 8`: Command Specific Status (including the
/// Fabrics commands' codes).
pub const SCT_COMMAND_SPECIFIC: u8 = 1;
/// `NVME_SCT_MEDIA_ERROR >> 8`: Media and Data Integrity Errors.
pub const SCT_MEDIA_ERROR: u8 = 2;
/// `NVME_SCT_PATH >> 8`: Path Related Status.
pub const SCT_PATH: u8 = 3;

/// `NVME_SC_MASK`: the status code's bits in the field.
const SC_MASK: u16 = 0x00ff;
/// `NVME_SCT_MASK`: the status code type's bits in the field.
const SCT_MASK: u16 = 0x0700;
const SCT_SHIFT: u32 = 8;
/// `NVME_STATUS_MORE`.
pub const FIELD_MORE: u16 = 0x2000;
/// `NVME_STATUS_DNR`.
pub const FIELD_DNR: u16 = 0x4000;
/// `NVME_STATUS_CRD`: Command Retry Delay, not represented in [`Status`].
pub const FIELD_CRD: u16 = 0x1800;

macro_rules! statuses {
    ($($(#[$m:meta])* $name:ident = ($sct:expr, $sc:literal),)*) => {
        impl Status {
            $(
                $(#[$m])*
                pub const $name: Status = Status::new($sct, $sc);
            )*
        }
    };
}

statuses! {
    /// `NVME_SC_SUCCESS` (0x000).
    SUCCESS = (SCT_GENERIC, 0x00),
    /// `NVME_SC_INVALID_OPCODE` (0x001).
    INVALID_OPCODE = (SCT_GENERIC, 0x01),
    /// `NVME_SC_INVALID_FIELD` (0x002).
    INVALID_FIELD = (SCT_GENERIC, 0x02),
    /// `NVME_SC_CMDID_CONFLICT` (0x003).
    CMDID_CONFLICT = (SCT_GENERIC, 0x03),
    /// `NVME_SC_DATA_XFER_ERROR` (0x004).
    DATA_XFER_ERROR = (SCT_GENERIC, 0x04),
    /// `NVME_SC_INTERNAL` (0x006).
    INTERNAL = (SCT_GENERIC, 0x06),
    /// `NVME_SC_ABORT_REQ` (0x007): aborted by an Abort command.
    ABORT_REQ = (SCT_GENERIC, 0x07),
    /// `NVME_SC_ABORT_QUEUE` (0x008): aborted because its queue went away.
    ABORT_QUEUE = (SCT_GENERIC, 0x08),
    /// `NVME_SC_INVALID_NS` (0x00b): invalid namespace or format.
    INVALID_NS = (SCT_GENERIC, 0x0b),
    /// `NVME_SC_CMD_SEQ_ERROR` (0x00c): command sequence error.
    CMD_SEQ_ERROR = (SCT_GENERIC, 0x0c),
    /// `NVME_SC_SGL_INVALID_LAST` (0x00d): invalid last segment descriptor.
    SGL_INVALID_LAST = (SCT_GENERIC, 0x0d),
    /// `NVME_SC_SGL_INVALID_COUNT` (0x00e): invalid number of descriptors.
    SGL_INVALID_COUNT = (SCT_GENERIC, 0x0e),
    /// `NVME_SC_SGL_INVALID_DATA` (0x00f): data SGL length invalid.
    SGL_INVALID_DATA = (SCT_GENERIC, 0x0f),
    /// `NVME_SC_SGL_INVALID_METADATA` (0x010): metadata SGL length invalid.
    SGL_INVALID_METADATA = (SCT_GENERIC, 0x10),
    /// `NVME_SC_SGL_INVALID_TYPE` (0x011): descriptor type invalid.
    SGL_INVALID_TYPE = (SCT_GENERIC, 0x11),
    /// `NVME_SC_SGL_INVALID_OFFSET` (0x016): SGL offset invalid.
    SGL_INVALID_OFFSET = (SCT_GENERIC, 0x16),
    /// `NVME_SC_KA_TIMEOUT_EXPIRED` (0x019): keep alive timer expired.
    KA_TIMEOUT_EXPIRED = (SCT_GENERIC, 0x19),
    /// `NVME_SC_KA_TIMEOUT_INVALID` (0x01a): keep alive timeout invalid.
    KA_TIMEOUT_INVALID = (SCT_GENERIC, 0x1a),
    /// `NVME_SC_LBA_RANGE` (0x080): LBA out of range.
    LBA_RANGE = (SCT_GENERIC, 0x80),
    /// `NVME_SC_CAP_EXCEEDED` (0x081): capacity exceeded.
    CAP_EXCEEDED = (SCT_GENERIC, 0x81),
    /// `NVME_SC_NS_NOT_READY` (0x082): namespace not ready.
    NS_NOT_READY = (SCT_GENERIC, 0x82),
    /// `NVME_SC_CQ_INVALID` (0x100): completion queue invalid.
    CQ_INVALID = (SCT_COMMAND_SPECIFIC, 0x00),
    /// `NVME_SC_QID_INVALID` (0x101): invalid queue identifier.
    QID_INVALID = (SCT_COMMAND_SPECIFIC, 0x01),
    /// `NVME_SC_QUEUE_SIZE` (0x102): invalid queue size.
    QUEUE_SIZE = (SCT_COMMAND_SPECIFIC, 0x02),
    /// `NVME_SC_ABORT_LIMIT` (0x103): abort command limit exceeded.
    ABORT_LIMIT = (SCT_COMMAND_SPECIFIC, 0x03),
    /// `NVME_SC_ASYNC_LIMIT` (0x105): asynchronous event request limit
    /// exceeded.
    ASYNC_LIMIT = (SCT_COMMAND_SPECIFIC, 0x05),
    /// `NVME_SC_INVALID_LOG_PAGE` (0x109).
    INVALID_LOG_PAGE = (SCT_COMMAND_SPECIFIC, 0x09),
    /// `NVME_SC_FEATURE_NOT_SAVEABLE` (0x10d).
    FEATURE_NOT_SAVEABLE = (SCT_COMMAND_SPECIFIC, 0x0d),
    /// `NVME_SC_FEATURE_NOT_CHANGEABLE` (0x10e).
    FEATURE_NOT_CHANGEABLE = (SCT_COMMAND_SPECIFIC, 0x0e),
    /// `NVME_SC_FEATURE_NOT_PER_NS` (0x10f).
    FEATURE_NOT_PER_NS = (SCT_COMMAND_SPECIFIC, 0x0f),
    /// `NVME_SC_CONNECT_FORMAT` (0x180): Connect's record format is not
    /// supported.
    CONNECT_FORMAT = (SCT_COMMAND_SPECIFIC, 0x80),
    /// `NVME_SC_CONNECT_CTRL_BUSY` (0x181): the controller is busy.
    CONNECT_CTRL_BUSY = (SCT_COMMAND_SPECIFIC, 0x81),
    /// `NVME_SC_CONNECT_INVALID_PARAM` (0x182): a Connect parameter is
    /// invalid; the completion's result says which field.
    CONNECT_INVALID_PARAM = (SCT_COMMAND_SPECIFIC, 0x82),
    /// `NVME_SC_CONNECT_RESTART_DISC` (0x183): restart discovery.
    CONNECT_RESTART_DISC = (SCT_COMMAND_SPECIFIC, 0x83),
    /// `NVME_SC_CONNECT_INVALID_HOST` (0x184): the host may not connect.
    CONNECT_INVALID_HOST = (SCT_COMMAND_SPECIFIC, 0x84),
    /// `NVME_SC_WRITE_FAULT` (0x280).
    WRITE_FAULT = (SCT_MEDIA_ERROR, 0x80),
    /// `NVME_SC_READ_ERROR` (0x281): unrecovered read error.
    READ_ERROR = (SCT_MEDIA_ERROR, 0x81),
}

impl Status {
    /// A status with this type and code, MORE and DNR clear.
    pub const fn new(sct: u8, sc: u8) -> Status {
        Status {
            sct,
            sc,
            more: false,
            dnr: false,
        }
    }

    /// The same status with Do Not Retry set.
    pub const fn with_dnr(self) -> Status {
        Status { dnr: true, ..self }
    }

    /// Whether this is `NVME_SC_SUCCESS` (type 0, code 0; flags ignored).
    pub const fn is_success(self) -> bool {
        self.sct == SCT_GENERIC && self.sc == 0
    }

    /// The 15-bit status field in Linux's form (`NVME_SC_*`): what the CQE's
    /// `status` word holds in bits 1..16, shifted down by one. Only the low
    /// 3 bits of `sct` are written; CRD is 0.
    pub const fn to_field(self) -> u16 {
        let mut v = self.sc as u16 | (((self.sct as u16) << SCT_SHIFT) & SCT_MASK);
        if self.more {
            v |= FIELD_MORE;
        }
        if self.dnr {
            v |= FIELD_DNR;
        }
        v
    }

    /// The status in a 15-bit field of Linux's form. CRD and bit 15 are
    /// ignored; every other bit pattern is a status (unknown codes stay
    /// codes).
    pub const fn from_field(v: u16) -> Status {
        Status {
            sct: ((v & SCT_MASK) >> SCT_SHIFT) as u8,
            sc: (v & SC_MASK) as u8,
            more: v & FIELD_MORE != 0,
            dnr: v & FIELD_DNR != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each constant against its `NVME_SC_*` value in Linux master's
    /// `include/linux/nvme.h` (the anonymous status enum).
    #[test]
    fn constants_are_nvme_h() {
        let table: &[(Status, u16, &str)] = &[
            (Status::SUCCESS, 0x0, "NVME_SC_SUCCESS"),
            (Status::INVALID_OPCODE, 0x1, "NVME_SC_INVALID_OPCODE"),
            (Status::INVALID_FIELD, 0x2, "NVME_SC_INVALID_FIELD"),
            (Status::CMDID_CONFLICT, 0x3, "NVME_SC_CMDID_CONFLICT"),
            (Status::DATA_XFER_ERROR, 0x4, "NVME_SC_DATA_XFER_ERROR"),
            (Status::INTERNAL, 0x6, "NVME_SC_INTERNAL"),
            (Status::ABORT_REQ, 0x7, "NVME_SC_ABORT_REQ"),
            (Status::ABORT_QUEUE, 0x8, "NVME_SC_ABORT_QUEUE"),
            (Status::INVALID_NS, 0xb, "NVME_SC_INVALID_NS"),
            (Status::CMD_SEQ_ERROR, 0xc, "NVME_SC_CMD_SEQ_ERROR"),
            (Status::SGL_INVALID_LAST, 0xd, "NVME_SC_SGL_INVALID_LAST"),
            (Status::SGL_INVALID_COUNT, 0xe, "NVME_SC_SGL_INVALID_COUNT"),
            (Status::SGL_INVALID_DATA, 0xf, "NVME_SC_SGL_INVALID_DATA"),
            (
                Status::SGL_INVALID_METADATA,
                0x10,
                "NVME_SC_SGL_INVALID_METADATA",
            ),
            (Status::SGL_INVALID_TYPE, 0x11, "NVME_SC_SGL_INVALID_TYPE"),
            (
                Status::SGL_INVALID_OFFSET,
                0x16,
                "NVME_SC_SGL_INVALID_OFFSET",
            ),
            (
                Status::KA_TIMEOUT_EXPIRED,
                0x19,
                "NVME_SC_KA_TIMEOUT_EXPIRED",
            ),
            (
                Status::KA_TIMEOUT_INVALID,
                0x1a,
                "NVME_SC_KA_TIMEOUT_INVALID",
            ),
            (Status::LBA_RANGE, 0x80, "NVME_SC_LBA_RANGE"),
            (Status::CAP_EXCEEDED, 0x81, "NVME_SC_CAP_EXCEEDED"),
            (Status::NS_NOT_READY, 0x82, "NVME_SC_NS_NOT_READY"),
            (Status::CQ_INVALID, 0x100, "NVME_SC_CQ_INVALID"),
            (Status::QID_INVALID, 0x101, "NVME_SC_QID_INVALID"),
            (Status::QUEUE_SIZE, 0x102, "NVME_SC_QUEUE_SIZE"),
            (Status::ABORT_LIMIT, 0x103, "NVME_SC_ABORT_LIMIT"),
            (Status::ASYNC_LIMIT, 0x105, "NVME_SC_ASYNC_LIMIT"),
            (Status::INVALID_LOG_PAGE, 0x109, "NVME_SC_INVALID_LOG_PAGE"),
            (
                Status::FEATURE_NOT_SAVEABLE,
                0x10d,
                "NVME_SC_FEATURE_NOT_SAVEABLE",
            ),
            (
                Status::FEATURE_NOT_CHANGEABLE,
                0x10e,
                "NVME_SC_FEATURE_NOT_CHANGEABLE",
            ),
            (
                Status::FEATURE_NOT_PER_NS,
                0x10f,
                "NVME_SC_FEATURE_NOT_PER_NS",
            ),
            (Status::CONNECT_FORMAT, 0x180, "NVME_SC_CONNECT_FORMAT"),
            (
                Status::CONNECT_CTRL_BUSY,
                0x181,
                "NVME_SC_CONNECT_CTRL_BUSY",
            ),
            (
                Status::CONNECT_INVALID_PARAM,
                0x182,
                "NVME_SC_CONNECT_INVALID_PARAM",
            ),
            (
                Status::CONNECT_RESTART_DISC,
                0x183,
                "NVME_SC_CONNECT_RESTART_DISC",
            ),
            (
                Status::CONNECT_INVALID_HOST,
                0x184,
                "NVME_SC_CONNECT_INVALID_HOST",
            ),
            (Status::WRITE_FAULT, 0x280, "NVME_SC_WRITE_FAULT"),
            (Status::READ_ERROR, 0x281, "NVME_SC_READ_ERROR"),
        ];
        for &(status, linux, name) in table {
            assert_eq!(status.to_field(), linux, "{name}");
            assert_eq!(Status::from_field(linux), status, "{name}");
            assert!(!status.more && !status.dnr, "{name}");
        }
    }

    /// `NVME_SCT_*` are the type in bits 8..11 of the field.
    #[test]
    fn types_are_nvme_h() {
        for (sct, linux) in [
            (SCT_GENERIC, 0x000u16),
            (SCT_COMMAND_SPECIFIC, 0x100),
            (SCT_MEDIA_ERROR, 0x200),
            (SCT_PATH, 0x300),
        ] {
            assert_eq!(Status::new(sct, 0).to_field(), linux);
            // `#define NVME_SCT(status) ((status) >> 8 & 7)`
            assert_eq!(Status::from_field(linux).sct, (linux >> 8 & 7) as u8);
        }
    }

    /// Linux's target answers `NVME_SC_CONNECT_INVALID_PARAM |
    /// NVME_STATUS_DNR`, `NVME_SC_INVALID_FIELD | NVME_STATUS_DNR`, ...:
    /// DNR is 0x4000, MORE 0x2000.
    #[test]
    fn dnr_and_more_bits() {
        assert_eq!(Status::CONNECT_INVALID_PARAM.with_dnr().to_field(), 0x4182);
        assert_eq!(Status::INVALID_FIELD.with_dnr().to_field(), 0x4002);
        assert_eq!(
            Status::from_field(0x4000 | 0x011),
            Status {
                sct: 0,
                sc: 0x11,
                more: false,
                dnr: true
            }
        );
        assert_eq!(
            Status::from_field(0x2000 | 0x281),
            Status {
                sct: 2,
                sc: 0x81,
                more: true,
                dnr: false
            }
        );
        assert_eq!(
            Status {
                more: true,
                dnr: true,
                ..Status::INTERNAL
            }
            .to_field(),
            0x6006
        );
    }

    #[test]
    fn crd_and_high_sct_bits_not_kept() {
        // NVME_STATUS_CRD (0x1800) and bit 15 are dropped.
        assert_eq!(
            Status::from_field(0x1800 | 0x8000 | 0x102),
            Status::QUEUE_SIZE
        );
        // An SCT wider than 3 bits cannot spill into CRD/MORE/DNR.
        assert_eq!(Status::new(0xff, 0x01).to_field(), 0x0701);
    }

    #[test]
    fn every_field_round_trips_without_crd() {
        for v in 0..=u16::MAX {
            let kept = v & !(FIELD_CRD | 0x8000);
            assert_eq!(Status::from_field(v).to_field(), kept, "{v:#06x}");
        }
    }

    #[test]
    fn success() {
        assert!(Status::SUCCESS.is_success());
        assert!(Status::SUCCESS.with_dnr().is_success());
        assert!(!Status::CQ_INVALID.is_success());
        assert!(!Status::new(SCT_MEDIA_ERROR, 0).is_success());
    }
}
