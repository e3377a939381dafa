//! The controller properties a fabrics host reads and writes with Property
//! Get/Set: their offsets (`NVME_REG_*`), the bits of CC (Controller
//! Configuration) and CSTS (Controller Status), and the fields of CAP
//! (Controller Capabilities), with small functions to build and read them.
//! Values are `include/linux/nvme.h`'s, except CAP.CQR (bit 16), which that
//! header does not name; its position is the NVMe base specification's (as
//! QEMU's `include/block/nvme.h` has it, `CAP_CQR_SHIFT`).

/// `NVME_REG_CAP`: Controller Capabilities, 8 bytes.
pub const REG_CAP: u32 = 0x00;
/// `NVME_REG_VS`: Version, 4 bytes.
pub const REG_VS: u32 = 0x08;
/// `NVME_REG_CC`: Controller Configuration, 4 bytes.
pub const REG_CC: u32 = 0x14;
/// `NVME_REG_CSTS`: Controller Status, 4 bytes.
pub const REG_CSTS: u32 = 0x1c;
/// `NVME_REG_NSSR`: NVM Subsystem Reset, 4 bytes.
pub const REG_NSSR: u32 = 0x20;
/// `NVME_REG_CRTO`: Controller Ready Timeouts, 4 bytes.
pub const REG_CRTO: u32 = 0x68;

/// `NVME_SUBSYS_RESET`: the value written to NSSR to reset ("NVMe").
pub const NSSR_RESET: u32 = 0x4e56_4d65;

/// `NVME_VS(major, minor, tertiary)`: a VS value.
pub const fn vs(major: u16, minor: u8, tertiary: u8) -> u32 {
    (major as u32) << 16 | (minor as u32) << 8 | tertiary as u32
}

/// `NVME_CC_ENABLE`: CC.EN.
pub const CC_ENABLE: u32 = 1 << 0;
/// `NVME_CC_CSS_SHIFT`.
pub const CC_CSS_SHIFT: u32 = 4;
/// `NVME_CC_CSS_MASK`: CC.CSS, bits 4..7.
pub const CC_CSS_MASK: u32 = 7 << CC_CSS_SHIFT;
/// `NVME_CC_CSS_NVM`: the NVM command set.
pub const CC_CSS_NVM: u32 = 0;
/// `NVME_CC_MPS_SHIFT`: CC.MPS, the host page size as 2^(12 + MPS).
pub const CC_MPS_SHIFT: u32 = 7;
/// `NVME_CC_MPS_MASK`.
pub const CC_MPS_MASK: u32 = 0xf << CC_MPS_SHIFT;
/// `NVME_CC_AMS_SHIFT`: CC.AMS, the arbitration mechanism.
pub const CC_AMS_SHIFT: u32 = 11;
/// `NVME_CC_AMS_MASK`.
pub const CC_AMS_MASK: u32 = 7 << CC_AMS_SHIFT;
/// `NVME_CC_SHN_SHIFT`.
pub const CC_SHN_SHIFT: u32 = 14;
/// `NVME_CC_SHN_MASK`: CC.SHN, the shutdown notification, bits 14..16.
pub const CC_SHN_MASK: u32 = 3 << CC_SHN_SHIFT;
/// `NVME_CC_SHN_NONE`.
pub const CC_SHN_NONE: u32 = 0;
/// `NVME_CC_SHN_NORMAL`.
pub const CC_SHN_NORMAL: u32 = 1 << CC_SHN_SHIFT;
/// `NVME_CC_SHN_ABRUPT`.
pub const CC_SHN_ABRUPT: u32 = 2 << CC_SHN_SHIFT;
/// `NVME_CC_IOSQES_SHIFT`: CC.IOSQES, the I/O SQ entry size as 2^n.
pub const CC_IOSQES_SHIFT: u32 = 16;
/// `NVME_CC_IOSQES_MASK`.
pub const CC_IOSQES_MASK: u32 = 0xf << CC_IOSQES_SHIFT;
/// `NVME_CC_IOCQES_SHIFT`: CC.IOCQES, the I/O CQ entry size as 2^n.
pub const CC_IOCQES_SHIFT: u32 = 20;
/// `NVME_CC_IOCQES_MASK`.
pub const CC_IOCQES_MASK: u32 = 0xf << CC_IOCQES_SHIFT;
/// `NVME_NVM_IOSQES`: 64-byte SQ entries (2^6).
pub const NVM_IOSQES: u8 = 6;
/// `NVME_NVM_IOCQES`: 16-byte CQ entries (2^4).
pub const NVM_IOCQES: u8 = 4;

/// CC.EN.
pub const fn cc_en(cc: u32) -> bool {
    cc & CC_ENABLE != 0
}
/// CC.CSS, 3 bits.
pub const fn cc_css(cc: u32) -> u8 {
    ((cc & CC_CSS_MASK) >> CC_CSS_SHIFT) as u8
}
/// CC.MPS, 4 bits.
pub const fn cc_mps(cc: u32) -> u8 {
    ((cc & CC_MPS_MASK) >> CC_MPS_SHIFT) as u8
}
/// CC.AMS, 3 bits.
pub const fn cc_ams(cc: u32) -> u8 {
    ((cc & CC_AMS_MASK) >> CC_AMS_SHIFT) as u8
}
/// CC.SHN, 2 bits (0 none, 1 normal, 2 abrupt).
pub const fn cc_shn(cc: u32) -> u8 {
    ((cc & CC_SHN_MASK) >> CC_SHN_SHIFT) as u8
}
/// CC.IOSQES, 4 bits.
pub const fn cc_iosqes(cc: u32) -> u8 {
    ((cc & CC_IOSQES_MASK) >> CC_IOSQES_SHIFT) as u8
}
/// CC.IOCQES, 4 bits.
pub const fn cc_iocqes(cc: u32) -> u8 {
    ((cc & CC_IOCQES_MASK) >> CC_IOCQES_SHIFT) as u8
}

/// `NVME_CSTS_RDY`: CSTS.RDY.
pub const CSTS_RDY: u32 = 1 << 0;
/// `NVME_CSTS_CFS`: CSTS.CFS, controller fatal status.
pub const CSTS_CFS: u32 = 1 << 1;
/// `NVME_CSTS_SHST_MASK`: CSTS.SHST, bits 2..4.
pub const CSTS_SHST_MASK: u32 = 3 << 2;
/// `NVME_CSTS_SHST_NORMAL`: no shutdown under way.
pub const CSTS_SHST_NORMAL: u32 = 0;
/// `NVME_CSTS_SHST_OCCUR`: shutdown under way.
pub const CSTS_SHST_OCCUR: u32 = 1 << 2;
/// `NVME_CSTS_SHST_CMPLT`: shutdown complete.
pub const CSTS_SHST_CMPLT: u32 = 2 << 2;

/// `NVME_CAP_CSS_NVM`: CAP.CSS's bit for the NVM command set.
pub const CAP_CSS_NVM: u8 = 1 << 0;
/// `NVME_CAP_CSS_CSI`: CAP.CSS's bit for I/O command sets (CSI).
pub const CAP_CSS_CSI: u8 = 1 << 6;

/// The CAP fields a fabrics target reports. Fields not listed (AMS, DSTRD,
/// NSSRS, BPS, CMBS, ...) are 0 in [`to_bits`](Self::to_bits) and dropped by
/// [`from_bits`](Self::from_bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    /// MQES, bits 0..16: maximum queue entries, 0's based.
    pub mqes: u16,
    /// CQR, bit 16: contiguous queues required.
    pub cqr: bool,
    /// TO, bits 24..32: worst-case time to ready, in 500 ms units.
    pub to: u8,
    /// CSS, bits 37..45: command sets supported ([`CAP_CSS_NVM`], ...).
    pub css: u8,
    /// MPSMIN, bits 48..52: smallest page size as 2^(12 + MPSMIN).
    pub mpsmin: u8,
    /// MPSMAX, bits 52..56: largest page size as 2^(12 + MPSMAX).
    pub mpsmax: u8,
}

const CAP_CQR: u64 = 1 << 16;
const CAP_TO_SHIFT: u32 = 24;
const CAP_CSS_SHIFT: u32 = 37;
const CAP_MPSMIN_SHIFT: u32 = 48;
const CAP_MPSMAX_SHIFT: u32 = 52;

impl Cap {
    /// The 64-bit CAP value. Only the low 4 bits of `mpsmin`/`mpsmax` are
    /// written.
    pub const fn to_bits(self) -> u64 {
        let mut v = self.mqes as u64;
        if self.cqr {
            v |= CAP_CQR;
        }
        v |= (self.to as u64) << CAP_TO_SHIFT;
        v |= (self.css as u64) << CAP_CSS_SHIFT;
        v |= ((self.mpsmin & 0xf) as u64) << CAP_MPSMIN_SHIFT;
        v |= ((self.mpsmax & 0xf) as u64) << CAP_MPSMAX_SHIFT;
        v
    }

    /// Reads a CAP value (`NVME_CAP_MQES`, `NVME_CAP_TIMEOUT`,
    /// `NVME_CAP_CSS`, `NVME_CAP_MPSMIN`, `NVME_CAP_MPSMAX`, and CQR).
    pub const fn from_bits(cap: u64) -> Cap {
        Cap {
            mqes: cap as u16,
            cqr: cap & CAP_CQR != 0,
            to: (cap >> CAP_TO_SHIFT) as u8,
            css: (cap >> CAP_CSS_SHIFT) as u8,
            mpsmin: ((cap >> CAP_MPSMIN_SHIFT) & 0xf) as u8,
            mpsmax: ((cap >> CAP_MPSMAX_SHIFT) & 0xf) as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NVME_REG_*` in include/linux/nvme.h.
    #[test]
    fn offsets() {
        assert_eq!(
            [REG_CAP, REG_VS, REG_CC, REG_CSTS, REG_NSSR, REG_CRTO],
            [0x00, 0x08, 0x14, 0x1c, 0x20, 0x68]
        );
        // "NVMe" in ASCII, as nvme.h's NVME_SUBSYS_RESET.
        assert_eq!(NSSR_RESET.to_be_bytes(), *b"NVMe");
    }

    /// `NVME_VS(major, minor, tertiary)`: major in bits 16.., minor 8..16,
    /// tertiary 0..8.
    #[test]
    fn version() {
        assert_eq!(vs(1, 3, 0), 0x0001_0300);
        assert_eq!(vs(2, 1, 0), 0x0002_0100);
    }

    /// The CC a Linux host builds to enable a controller whose CAP.CSS has
    /// only the NVM bit (`nvme_enable_ctrl`): CSS NVM, MPS 0 (4 KiB),
    /// AMS round robin, SHN none, `NVME_CC_IOSQES | NVME_CC_IOCQES`, then
    /// `NVME_CC_ENABLE`: 0x00460001. Then a normal shutdown's SHN.
    #[test]
    fn cc_fields() {
        let cc = CC_CSS_NVM
            | CC_SHN_NONE
            | u32::from(NVM_IOSQES) << CC_IOSQES_SHIFT
            | u32::from(NVM_IOCQES) << CC_IOCQES_SHIFT
            | CC_ENABLE;
        assert_eq!(cc, 0x0046_0001);
        assert!(cc_en(cc));
        assert_eq!(
            (cc_css(cc), cc_mps(cc), cc_ams(cc), cc_shn(cc)),
            (0, 0, 0, 0)
        );
        assert_eq!((cc_iosqes(cc), cc_iocqes(cc)), (6, 4));
        let shut = (cc & !CC_SHN_MASK) | CC_SHN_NORMAL;
        assert_eq!(shut, 0x0046_4001);
        assert_eq!(cc_shn(shut), 1);
        assert_eq!(cc_shn(CC_SHN_ABRUPT), 2);
        assert_eq!(cc_mps(2 << CC_MPS_SHIFT), 2);
        assert_eq!(cc_ams(7 << CC_AMS_SHIFT), 7);
        assert_eq!(cc_css(6 << CC_CSS_SHIFT), 6);
        assert!(!cc_en(0x0046_0000));
    }

    /// `NVME_CSTS_*` values.
    #[test]
    fn csts_bits() {
        assert_eq!((CSTS_RDY, CSTS_CFS), (0x1, 0x2));
        assert_eq!(
            (
                CSTS_SHST_NORMAL,
                CSTS_SHST_OCCUR,
                CSTS_SHST_CMPLT,
                CSTS_SHST_MASK
            ),
            (0x0, 0x4, 0x8, 0xc)
        );
    }

    /// Linux's target: `cap = 1 << 37 | 1 << 43 | 15 << 24 | (queue size -
    /// 1)` (nvmet_init_cap), here with a queue size of 1024: CSS NVM and
    /// CSI, TO 15, MQES 1023.
    #[test]
    fn cap_like_nvmet() {
        let bits = 1u64 << 37 | 1u64 << 43 | 15u64 << 24 | 1023;
        let cap = Cap::from_bits(bits);
        assert_eq!(
            cap,
            Cap {
                mqes: 1023,
                cqr: false,
                to: 15,
                css: CAP_CSS_NVM | CAP_CSS_CSI,
                mpsmin: 0,
                mpsmax: 0
            }
        );
        assert_eq!(cap.to_bits(), bits);
    }

    #[test]
    fn cap_every_field_in_place() {
        let cap = Cap {
            mqes: 0xabcd,
            cqr: true,
            to: 0x5a,
            css: 0xff,
            mpsmin: 0x3,
            mpsmax: 0xc,
        };
        let bits = cap.to_bits();
        assert_eq!(bits & 0xffff, 0xabcd); // NVME_CAP_MQES
        assert_eq!(bits >> 16 & 1, 1); // CQR
        assert_eq!(bits >> 24 & 0xff, 0x5a); // NVME_CAP_TIMEOUT
        assert_eq!(bits >> 37 & 0xff, 0xff); // NVME_CAP_CSS
        assert_eq!(bits >> 48 & 0xf, 0x3); // NVME_CAP_MPSMIN
        assert_eq!(bits >> 52 & 0xf, 0xc); // NVME_CAP_MPSMAX
        assert_eq!(Cap::from_bits(bits), cap);
        // Fields Cap does not carry are dropped: DSTRD (32..36), NSSRC (36).
        assert_eq!(Cap::from_bits(bits | 0xf << 32 | 1 << 36), cap);
    }
}
