//! vfio-user messages as QEMU's `docs/interop/vfio-user.rst` lays them
//! out: the 16-byte header, the client's requests, and the server's
//! replies. Everything arrives from an untrusted client, so decoding
//! checks every length (the header's size, each `argsz`, each `count`)
//! before it reads, and answers a [`ProtoError`] that carries the errno
//! the reply reports.
//!
//! All numbers are little-endian (the host's order on the machines this
//! runs on; the spec says "host endianness").
//!
//! One file a part: `header` (the header and the command numbers),
//! `error` (what cannot be served, and its errno), `caps` (the
//! version capabilities), `request` (the client's requests, decoded),
//! `reply` (the bodies of the server's replies).

mod caps;
mod error;
mod header;
mod reply;
mod request;

pub use caps::*;
pub use error::*;
pub use header::*;
pub use reply::*;
pub use request::*;

#[cfg(test)]
mod tests {
    use super::request::{u32_at, u64_at};
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
