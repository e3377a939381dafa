//! Byte-exact tests against NooBaa's and hipObject's layouts, hostile
//! tokens, and round-trip / never-panic properties.

use super::*;
use proptest::prelude::*;

/// noobaa-core `src/util/rdma_utils.js`'s `CUOBJ_TOKEN_FMT`, the example
/// token NooBaa measures every field's width against.
const NOOBAA_FMT: &str =
    "0102030405060708:01020304:01020304:0102:010203:1:0102030405060708090a0b0c0d0e0f10";

/// hipObject's docs give no example token; this one is built by hand from
/// `src/rdma/token.cpp`'s layout: transport RC, QPN 0x123456, GID
/// ::ffff:10.0.0.7, rkey 0xdeadbeef, address 0x7f00_1122_3344_5000,
/// length 0x10_0000, port 1, LID 0x0203, each little-endian.
const HIP_BYTES: [u8; 44] = [
    0x01, // transport RC
    0x56, 0x34, 0x12, 0x00, // qpNum
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7, // gid
    0xef, 0xbe, 0xad, 0xde, // rkey
    0x00, 0x50, 0x44, 0x33, 0x22, 0x11, 0x00, 0x7f, // remoteAddr
    0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, // length
    0x01, // portNum
    0x03, 0x02, // lid
];

fn hip_hex() -> String {
    HIP_BYTES.iter().map(|b| format!("{b:02x}")).collect()
}

fn hip_token() -> RdmaToken {
    RdmaToken {
        format: Format::HipObject,
        transport: Transport::Rc,
        addr: 0x7f00_1122_3344_5000,
        len: 0x10_0000,
        rkey: 0xdead_beef,
        qpn: 0x12_3456,
        lid: 0x0203,
        gid: Some([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 7]),
        port: Some(1),
    }
}

#[test]
fn noobaa_example_parses_field_by_field_and_emits_back() {
    assert_eq!(NOOBAA_FMT.len(), cuobj::LEN);
    let t = RdmaToken::parse(NOOBAA_FMT).unwrap();
    assert_eq!(
        t,
        RdmaToken {
            format: Format::CuObject,
            transport: Transport::Dc,
            addr: 0x0102_0304_0506_0708,
            len: 0x0102_0304,
            rkey: 0x0102_0304,
            lid: 0x0102,
            qpn: 0x01_0203,
            gid: Some([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]),
            port: None,
        }
    );
    assert_eq!(t.emit().unwrap(), NOOBAA_FMT);
}

#[test]
fn cuobject_without_gid_is_zero_filled() {
    let s = "00007f0000001000:00001000:0000abcd:0001:000042:0:00000000000000000000000000000000";
    let t = RdmaToken::parse(s).unwrap();
    assert_eq!(t.gid, None);
    assert_eq!(
        (t.addr, t.len, t.rkey, t.lid, t.qpn),
        (0x7f00_0000_1000, 0x1000, 0xabcd, 1, 0x42)
    );
    assert_eq!(t.emit().unwrap(), s);
}

#[test]
fn hip_layout_offsets_match_token_cpp() {
    // 1 + 4 + 16 + 4 + 8 + 8 + 1 + 2, in that order, without gaps.
    assert_eq!(hip::TRANSPORT, 0);
    assert_eq!(hip::QPN, 1..5);
    assert_eq!(hip::GID, 5..21);
    assert_eq!(hip::RKEY, 21..25);
    assert_eq!(hip::ADDR, 25..33);
    assert_eq!(hip::LENGTH, 33..41);
    assert_eq!(hip::PORT, 41);
    assert_eq!(hip::LID, 42..44);
    assert_eq!(hip::LEN, 44);
    assert_eq!(hip::HEX_LEN, 88);
}

#[test]
fn hip_token_parses_and_emits_byte_exact() {
    let hex = hip_hex();
    assert_eq!(RdmaToken::parse(&hex).unwrap(), hip_token());
    assert_eq!(hip_token().to_hip_bytes(), HIP_BYTES);
    assert_eq!(hip_token().emit().unwrap(), hex);
}

#[test]
fn hip_accepts_uppercase_as_hipobject_does_and_emits_lowercase() {
    let upper = hip_hex().to_uppercase();
    let t = RdmaToken::parse(&upper).unwrap();
    assert_eq!(t, hip_token());
    assert_eq!(t.emit().unwrap(), hip_hex());
}

#[test]
fn handshake_reply_round_trips() {
    let s = format!("200:{}", hip_hex());
    let r = RdmaReply::parse(&s).unwrap();
    assert_eq!(r, RdmaReply::Handshake(hip_token()));
    assert_eq!(r.emit().unwrap(), s);
    assert_eq!(RdmaReply::parse("ok").unwrap(), RdmaReply::Ok);
    assert_eq!(RdmaReply::parse("err").unwrap(), RdmaReply::Err);
    assert_eq!(RdmaReply::parse("501").unwrap(), RdmaReply::Status(501));
    assert_eq!(RdmaReply::Status(501).emit().unwrap(), "501");
}

#[test]
fn hostile_replies_are_refused() {
    let hex = hip_hex();
    for bad in [
        String::new(),
        "20".into(),
        "2000".into(),
        "099".into(),
        "600".into(),
        "20a".into(),
        "OK".into(),
        format!("404:{hex}"),
        format!("200:{}", &hex[..86]),
        format!("200:{hex}\r\n"),
        format!("200:{hex}00"),
        format!("200:{NOOBAA_FMT}"),
    ] {
        let e = RdmaReply::parse(&bad).unwrap_err();
        assert_eq!(e.s3_code(), "InvalidRDMAToken", "{bad:?}");
    }
}

#[test]
fn cuobject_uppercase_is_refused_where_it_is() {
    let s = NOOBAA_FMT.replace("0a0b", "0A0b");
    assert_eq!(
        RdmaToken::parse(&s),
        Err(TokenError::NotHex {
            field: "gid",
            byte: b'A',
            at: 49 + 19,
        })
    );
}

#[test]
fn cuobject_wrong_width_missing_field_and_has_gid_are_refused() {
    // rsize one digit short, rkey one long: same total length.
    let s = "0102030405060708:0102030:010203045:0102:010203:1:0102030405060708090a0b0c0d0e0f10";
    assert_eq!(
        RdmaToken::parse(s),
        Err(TokenError::FieldWidth {
            field: "rsize",
            found: 7,
            expected: 8
        })
    );
    let missing = &NOOBAA_FMT[..NOOBAA_FMT.rfind(':').unwrap()];
    assert_eq!(
        RdmaToken::parse(missing),
        Err(TokenError::FieldCount { found: 6 })
    );
    let s = NOOBAA_FMT.replace(":1:", ":2:");
    assert_eq!(RdmaToken::parse(&s), Err(TokenError::HasGid { value: 2 }));
    let s = NOOBAA_FMT.replace(":1:", ":0:");
    assert_eq!(RdmaToken::parse(&s), Err(TokenError::StrayGid));
    let s = NOOBAA_FMT.replace(":1:", ":g:");
    assert!(matches!(
        RdmaToken::parse(&s),
        Err(TokenError::NotHex {
            field: "has_gid",
            byte: b'g',
            ..
        })
    ));
}

#[test]
fn zero_length_and_wrapping_ranges_are_refused() {
    let s = "0102030405060708:00000000:01020304:0102:010203:1:0102030405060708090a0b0c0d0e0f10";
    assert_eq!(RdmaToken::parse(s), Err(TokenError::ZeroLength));
    let s = "fffffffffffff000:00001001:01020304:0102:010203:1:0102030405060708090a0b0c0d0e0f10";
    assert_eq!(
        RdmaToken::parse(s),
        Err(TokenError::Wraps {
            addr: 0xffff_ffff_ffff_f000,
            len: 0x1001
        })
    );
    // Ending exactly at the top of the address space does not wrap.
    let s = "fffffffffffff000:00001000:01020304:0102:010203:1:0102030405060708090a0b0c0d0e0f10";
    assert!(RdmaToken::parse(s).is_ok());
    let mut t = hip_token();
    t.len = 0;
    assert_eq!(t.emit(), Err(TokenError::ZeroLength));
    // [1, 2^64) is the largest range there is; from 2 it wraps.
    t.len = u64::MAX;
    t.addr = 1;
    assert!(t.emit().is_ok());
    t.addr = 2;
    assert_eq!(
        t.emit(),
        Err(TokenError::Wraps {
            addr: 2,
            len: u64::MAX
        })
    );
}

#[test]
fn hip_hostile_fields_are_refused() {
    let mut b = HIP_BYTES;
    b[hip::TRANSPORT] = 2;
    let hex: String = b.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        RdmaToken::parse(&hex),
        Err(TokenError::Transport { value: 2 })
    );
    let mut b = HIP_BYTES;
    b[hip::QPN.end - 1] = 1;
    let hex: String = b.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        RdmaToken::parse(&hex),
        Err(TokenError::Qpn { qpn: 0x0112_3456 })
    );
    let mut hex = hip_hex();
    hex.replace_range(10..11, "z");
    assert_eq!(
        RdmaToken::parse(&hex),
        Err(TokenError::NotHex {
            field: "hipObject token",
            byte: b'z',
            at: 10
        })
    );
}

#[test]
fn wrong_sizes_are_refused_before_parsing() {
    assert_eq!(
        RdmaToken::parse(""),
        Err(TokenError::UnknownFormat { len: 0 })
    );
    assert_eq!(
        RdmaToken::parse(&hip_hex()[..87]),
        Err(TokenError::UnknownFormat { len: 87 })
    );
    let huge = "0".repeat(1 << 20);
    assert_eq!(
        RdmaToken::parse(&huge),
        Err(TokenError::TooLong {
            len: 1 << 20,
            max: 88
        })
    );
    // A multi-byte character is not a hex digit and does not panic a slice.
    let s = format!("é{}", &hip_hex()[2..]);
    assert!(matches!(
        RdmaToken::parse(&s),
        Err(TokenError::UnknownFormat { .. }) | Err(TokenError::NotHex { .. })
    ));
}

#[test]
fn emit_refuses_what_a_format_cannot_carry() {
    let mut t = RdmaToken {
        format: Format::CuObject,
        ..hip_token()
    };
    assert!(matches!(
        t.emit(),
        Err(TokenError::NotRepresentable {
            format: Format::CuObject,
            ..
        })
    ));
    t.transport = Transport::Dc;
    t.port = None;
    t.len = 1 << 32;
    assert!(matches!(t.emit(), Err(TokenError::NotRepresentable { .. })));
    t.len = 1;
    assert!(t.emit().is_ok());
    let e = TokenError::ZeroLength;
    assert_eq!((e.s3_code(), e.http_status()), ("InvalidRDMAToken", 400));
}

fn any_token() -> impl Strategy<Value = RdmaToken> {
    (
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
        1u64..,
        any::<u32>(),
        0..=MAX_QPN,
        any::<u16>(),
        proptest::option::of(any::<[u8; 16]>()),
        any::<u8>(),
    )
        .prop_map(|(cu, rc, addr, len, rkey, qpn, lid, gid, port)| {
            let (len, addr) = if cu {
                let len = len % u64::from(u32::MAX) + 1;
                (len, addr.min(u64::MAX - (len - 1)))
            } else {
                (len, addr.min(u64::MAX - (len - 1)))
            };
            RdmaToken {
                format: if cu {
                    Format::CuObject
                } else {
                    Format::HipObject
                },
                transport: if rc && !cu {
                    Transport::Rc
                } else {
                    Transport::Dc
                },
                addr,
                len,
                rkey,
                qpn,
                lid,
                gid: if cu {
                    gid
                } else {
                    Some(gid.unwrap_or([7; 16]))
                },
                port: (!cu).then_some(port),
            }
        })
}

proptest! {
    #[test]
    fn parse_emit_round_trips(t in any_token()) {
        let s = t.emit().unwrap();
        prop_assert_eq!(s.len(), if t.format == Format::CuObject { 81 } else { 88 });
        prop_assert_eq!(RdmaToken::parse(&s).unwrap(), t);
        if t.format == Format::HipObject {
            let r = RdmaReply::Handshake(t);
            prop_assert_eq!(RdmaReply::parse(&r.emit().unwrap()).unwrap(), r);
        }
    }

    #[test]
    fn parse_never_panics(s in ".{0,100}") {
        let _ = RdmaToken::parse(&s);
        let _ = RdmaReply::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_token_shaped_strings(s in "[0-9a-fA-F:g]{78,92}") {
        if let Ok(t) = RdmaToken::parse(&s) {
            // What parses emits back to its canonical (lowercase) text.
            prop_assert_eq!(t.emit().unwrap(), s.to_lowercase());
        }
        let _ = RdmaReply::parse(&format!("200:{s}"));
    }
}
