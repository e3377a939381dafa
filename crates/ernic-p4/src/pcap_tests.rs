use proptest::prelude::*;

use super::*;

fn rec(port: Option<u32>, ts_ns: u64, data: &[u8]) -> Record {
    Record {
        port,
        ts_ns,
        data: data.to_vec(),
    }
}

/// A classic file as libpcap lays it out: 24-byte header, 16-byte record
/// header, data.
const PCAP_BYTES: [u8; 44] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, // magic, 2.4, zone, sigfigs
    0x00, 0x00, 0x04, 0x00, 1, 0, 0, 0, // snaplen 262144, Ethernet
    10, 0, 0, 0, 0x40, 0xe2, 0x01, 0, 4, 0, 0, 0, 4, 0, 0, 0, // 10 s, 123456 us, 4, 4
    0xde, 0xad, 0xbe, 0xef,
];

#[test]
fn classic_pcap_bytes_are_libpcaps_layout() {
    let mut w = PcapWriter::new(Vec::new(), TsResolution::Micro).unwrap();
    w.write(&rec(None, 10_123_456_789, &[0xde, 0xad, 0xbe, 0xef]))
        .unwrap();
    let bytes = w.finish().unwrap();
    assert_eq!(bytes, PCAP_BYTES);
    let back = read_packets(&bytes[..]).unwrap();
    // Microseconds: the last 789 ns are not in the file.
    assert_eq!(back, [rec(None, 10_123_456_000, &[0xde, 0xad, 0xbe, 0xef])]);
}

#[test]
fn classic_nanosecond_files_keep_timestamps_exactly() {
    let records = [
        rec(None, 1_700_000_000_123_456_789, &[1, 2, 3]),
        rec(None, 5, &[]),
        rec(None, 6, &[0; 1514]),
    ];
    let mut w = PcapWriter::new(Vec::new(), TsResolution::Nano).unwrap();
    for r in &records {
        w.write(r).unwrap();
    }
    let bytes = w.finish().unwrap();
    assert_eq!(bytes[..4], [0x4d, 0x3c, 0xb2, 0xa1]);
    assert_eq!(read_packets(&bytes[..]).unwrap(), records);
}

#[test]
fn big_endian_classic_files_are_read() {
    let mut b = vec![
        0xa1, 0xb2, 0xc3, 0xd4, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 1,
    ];
    b.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0xab, 0xcd]);
    assert_eq!(
        read_packets(&b[..]).unwrap(),
        [rec(None, 1_000_002_000, &[0xab, 0xcd])]
    );
}

#[test]
fn pcapng_interfaces_are_ports() {
    let records = [
        rec(Some(2), 1_700_000_000_000_000_001, &[1, 2, 3, 4, 5]),
        rec(Some(0), 7, &[9]),
        rec(Some(1), 8, &[]),
    ];
    let mut w = PcapNgWriter::new(Vec::new(), 3).unwrap();
    for r in &records {
        w.write(r).unwrap();
    }
    let bytes = w.finish().unwrap();
    // SHB (28 bytes) then three IDBs of 32 bytes, then the first EPB.
    assert_eq!(
        bytes[..12],
        [0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a]
    );
    let epb = &bytes[28 + 3 * 32..];
    assert_eq!(epb[..8], [6, 0, 0, 0, 40, 0, 0, 0]); // 12 + 20 + 5 padded to 8
    assert_eq!(epb[8..12], 2u32.to_le_bytes()); // interface = port 2
    assert_eq!(epb[20..28], [5, 0, 0, 0, 5, 0, 0, 0]);
    assert_eq!(epb[28..36], [1, 2, 3, 4, 5, 0, 0, 0]);
    assert_eq!(epb[36..40], 40u32.to_le_bytes());
    assert_eq!(read_packets(&bytes[..]).unwrap(), records);
    let mut w = PcapNgWriter::new(Vec::new(), 2).unwrap();
    assert!(matches!(
        w.write(&records[0]),
        Err(PcapError::PortOutOfRange { port: 2, ports: 2 })
    ));
}

/// A hand-made pcapng file: `idb_options` are the IDB's options.
fn pcapng(idb_options: &[u8], epb_ts: u64, caplen: u32, data: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0,
    ];
    f.extend_from_slice(&[0xff; 8]);
    f.extend_from_slice(&28u32.to_le_bytes());
    let idb_len = (20 + idb_options.len()) as u32;
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&idb_len.to_le_bytes());
    f.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(idb_options);
    f.extend_from_slice(&idb_len.to_le_bytes());
    let epb_len = (32 + data.len().next_multiple_of(4)) as u32;
    f.extend_from_slice(&6u32.to_le_bytes());
    f.extend_from_slice(&epb_len.to_le_bytes());
    for v in [0, (epb_ts >> 32) as u32, epb_ts as u32, caplen, caplen] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.extend_from_slice(data);
    f.resize(f.len() + data.len().next_multiple_of(4) - data.len(), 0);
    f.extend_from_slice(&epb_len.to_le_bytes());
    f
}

#[test]
fn pcapng_timestamp_resolutions() {
    // No if_tsresol: microseconds.
    assert_eq!(
        read_packets(&pcapng(&[], 3, 1, &[7])[..]).unwrap(),
        [rec(Some(0), 3000, &[7])]
    );
    // if_tsresol = 2^-10.
    let opts = [9, 0, 1, 0, 0x8a, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        read_packets(&pcapng(&opts, 1024, 1, &[7])[..]).unwrap()[0].ts_ns,
        1_000_000_000
    );
    // if_tsoffset = 2 s on top of nanoseconds.
    let opts = [
        9, 0, 1, 0, 9, 0, 0, 0, 14, 0, 8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    assert_eq!(
        read_packets(&pcapng(&opts, 5, 1, &[7])[..]).unwrap()[0].ts_ns,
        2_000_000_005
    );
}

#[test]
fn truncated_and_oversized_records_are_refused() {
    // The file ends 2 bytes into the record's data.
    let short = &PCAP_BYTES[..42];
    let e = read_packets(short).unwrap_err();
    assert!(
        matches!(
            e,
            PcapError::Truncated {
                what: "a record",
                offset: 24
            }
        ),
        "{e}"
    );
    assert!(matches!(
        read_packets(&PCAP_BYTES[..30]),
        Err(PcapError::Truncated { offset: 24, .. })
    ));
    assert!(matches!(
        read_packets(&PCAP_BYTES[..10]),
        Err(PcapError::Truncated { .. })
    ));
    // A record claiming 256 KiB + 1 is refused before anything is allocated.
    let mut big = PCAP_BYTES[..24].to_vec();
    big.extend_from_slice(&[0; 8]);
    big.extend_from_slice(&(MAX_RECORD as u32 + 1).to_le_bytes());
    big.extend_from_slice(&[0; 4]);
    let e = read_packets(&big[..]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "record at byte 24 is 262145 bytes long, more than the 262144-byte limit"
    );
    // The same in pcapng: a captured length over the limit, and a block too.
    let e = read_packets(&pcapng(&[], 0, MAX_RECORD as u32 + 1, &[0; 4])[..]).unwrap_err();
    assert!(
        matches!(
            e,
            PcapError::TooLarge {
                what: "record",
                offset: 48,
                ..
            }
        ),
        "{e}"
    );
    let mut f = pcapng(&[], 0, 1, &[0]);
    f[52..56].copy_from_slice(&0xffff_fffcu32.to_le_bytes());
    assert!(matches!(
        read_packets(&f[..]),
        Err(PcapError::TooLarge {
            what: "block",
            offset: 48,
            ..
        })
    ));
    // A captured length past the block's end.
    let e = read_packets(&pcapng(&[], 0, 9, &[0; 4])[..]).unwrap_err();
    assert!(matches!(
        e,
        PcapError::BadBlock {
            offset: 48,
            reason: "captured length exceeds the block"
        }
    ));
    // The file ends inside the EPB.
    let f = pcapng(&[], 0, 4, &[0; 4]);
    assert!(matches!(
        read_packets(&f[..f.len() - 1]),
        Err(PcapError::Truncated {
            what: "a block",
            offset: 48
        })
    ));
}

#[test]
fn other_malformed_files_are_refused() {
    assert!(matches!(
        read_packets(&b"GIF89a.........................."[..]),
        Err(PcapError::BadMagic(0x4749_4638))
    ));
    assert!(matches!(
        read_packets(&[][..]),
        Err(PcapError::Truncated { .. })
    ));
    let mut raw_ip = PCAP_BYTES.to_vec();
    raw_ip[20] = 101;
    assert!(matches!(
        read_packets(&raw_ip[..]),
        Err(PcapError::NotEthernet(101))
    ));
    let mut f = pcapng(&[], 0, 1, &[0]);
    f[56] = 3; // the EPB names interface 3
    assert!(matches!(
        read_packets(&f[..]),
        Err(PcapError::UnknownInterface { offset: 48, id: 3 })
    ));
    let mut f = pcapng(&[], 0, 1, &[0]);
    f[44] = 0; // the IDB's trailing length
    assert!(matches!(
        read_packets(&f[..]),
        Err(PcapError::BadBlock { offset: 28, .. })
    ));
    let mut f = pcapng(&[], 0, 1, &[0]);
    f[8] = 0; // byte-order magic
    assert!(matches!(
        read_packets(&f[..]),
        Err(PcapError::BadBlock { offset: 0, .. })
    ));
}

proptest! {
    #[test]
    fn readers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), ng in any::<bool>()) {
        let mut f = if ng { pcapng(&[], 0, 1, &[0]) } else { PCAP_BYTES.to_vec() };
        f.truncate(24);
        f.extend_from_slice(&bytes);
        let _ = read_packets(&f[..]);
        let _ = read_packets(&bytes[..]);
    }

    #[test]
    fn pcapng_round_trips(records in prop::collection::vec(
        (0u32..4, any::<u64>(), prop::collection::vec(any::<u8>(), 0..70)), 0..8)
    ) {
        let records: Vec<Record> = records.into_iter().map(|(p, t, d)| Record { port: Some(p), ts_ns: t, data: d }).collect();
        let mut w = PcapNgWriter::new(Vec::new(), 4).unwrap();
        for r in &records {
            w.write(r).unwrap();
        }
        prop_assert_eq!(read_packets(&w.finish().unwrap()[..]).unwrap(), records);
    }
}
